// SPDX-License-Identifier: MIT
/*
 * The firmware's heap: first fit over one region handed over at boot (pccx__bm_heap_init), blocks
 * of 16-byte granules with a header, free neighbours merged on free. The image allocates the
 * simulator's state and the protocol's buffers here: a few hundred blocks, so a linear free
 * list is enough and keeps the code small enough to check by reading.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"

#define GRAIN 16u

/* Every block starts with this header; `size` counts the whole block, header included. */
struct blk {
	size_t size;
	size_t free;           /* 1 when free; a word, so the payload stays 16-byte aligned */
};

static uint8_t *heap_lo, *heap_hi;
static struct pccx_bm_heap_stats stats;

void pccx__bm_heap_init(void *base, size_t len)
{
	uintptr_t lo = ((uintptr_t)base + GRAIN - 1) & ~(uintptr_t)(GRAIN - 1);
	uintptr_t hi = ((uintptr_t)base + len) & ~(uintptr_t)(GRAIN - 1);
	struct blk *b;

	heap_lo = heap_hi = NULL;
	memset(&stats, 0, sizeof(stats));
	if (hi <= lo || hi - lo < 2 * GRAIN)
		return;
	heap_lo = (uint8_t *)lo;
	heap_hi = (uint8_t *)hi;
	b = (struct blk *)heap_lo;
	b->size = hi - lo;
	b->free = 1;
	stats.total = b->size;
}

static struct blk *next_blk(struct blk *b)
{
	uint8_t *n = (uint8_t *)b + b->size;

	return n < heap_hi ? (struct blk *)n : NULL;
}

void *malloc(size_t n)
{
	size_t need;

	if (!heap_lo || n > (size_t)(heap_hi - heap_lo))
		return NULL;
	need = sizeof(struct blk) + ((n + GRAIN - 1) & ~(size_t)(GRAIN - 1));
	if (need < 2 * GRAIN)
		need = 2 * GRAIN;
	for (struct blk *b = (struct blk *)heap_lo; b; b = next_blk(b)) {
		if (!b->free || b->size < need)
			continue;
		if (b->size - need >= 2 * GRAIN) {       /* split: the rest stays free */
			struct blk *r = (struct blk *)((uint8_t *)b + need);

			r->size = b->size - need;
			r->free = 1;
			b->size = need;
		}
		b->free = 0;
		stats.used += b->size;
		if (stats.used > stats.peak)
			stats.peak = stats.used;
		return b + 1;
	}
	stats.failed++;
	return NULL;
}

void *calloc(size_t count, size_t size)
{
	void *p;

	if (size && count > (size_t)-1 / size)
		return NULL;
	p = malloc(count * size);
	if (p)
		memset(p, 0, count * size);
	return p;
}

/* The block before `b` (linear: free and realloc of a few hundred blocks). */
static struct blk *prev_blk(struct blk *b)
{
	struct blk *p = NULL;

	for (struct blk *c = (struct blk *)heap_lo; c && c != b; c = next_blk(c))
		p = c;
	return p;
}

static struct blk *owner(void *p)
{
	struct blk *b = (struct blk *)p - 1;

	if ((uint8_t *)b < heap_lo || (uint8_t *)p >= heap_hi || ((uintptr_t)p & (GRAIN - 1)) ||
	    b->free)
		pccx__bm_heap_corrupt(p);
	return b;
}

void free(void *p)
{
	struct blk *b, *n, *pr;

	if (!p)
		return;
	b = owner(p);
	b->free = 1;
	stats.used -= b->size;
	n = next_blk(b);
	if (n && n->free)
		b->size += n->size;
	pr = prev_blk(b);
	if (pr && pr->free)
		pr->size += b->size;
}

void *realloc(void *p, size_t n)
{
	struct blk *b;
	size_t have;
	void *q;

	if (!p)
		return malloc(n);
	if (!n) {
		free(p);
		return NULL;
	}
	b = owner(p);
	have = b->size - sizeof(*b);
	if (n <= have)
		return p;
	q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, have);
	free(p);
	return q;
}

void pccx__bm_heap_get_stats(struct pccx_bm_heap_stats *st)
{
	*st = stats;
}
