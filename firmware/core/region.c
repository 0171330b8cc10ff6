// SPDX-License-Identifier: MIT
/*
 * The DMA region allocator (pccx_fw.h): first fit over the port's span table, offsets
 * 64-byte aligned (a cache line; the DataMover needs 16). O(spans) per call: a board holds
 * tens of buffers.
 */
#include "pccx_fw.h"

#define ALIGN 64ull

void pccx__fw_region_init(struct pccx_fw_region *r, uint8_t *cpu, uint64_t dev, uint64_t size,
			  struct pccx_fw_span *spans, uint32_t max_spans)
{
	uint32_t i;
	uint64_t skip = (ALIGN - (dev & (ALIGN - 1))) & (ALIGN - 1);

	/* start where the device address is aligned; the CPU view moves with it */
	if (skip > size)
		skip = size;
	r->cpu = cpu + skip;
	r->dev = dev + skip;
	r->size = (size - skip) & ~(ALIGN - 1);
	r->spans = spans;
	r->max_spans = max_spans;
	r->next_handle = 1;
	for (i = 0; i < max_spans; i++)
		spans[i].handle = 0;
}

const struct pccx_fw_span *pccx__fw_region_find(const struct pccx_fw_region *r, uint32_t handle)
{
	uint32_t i;

	for (i = 0; handle && i < r->max_spans; i++)
		if (r->spans[i].handle == handle)
			return &r->spans[i];
	return NULL;
}

/* The first span at or after `off` (the lowest start >= off), or NULL. */
static const struct pccx_fw_span *next_span(const struct pccx_fw_region *r, uint64_t off)
{
	const struct pccx_fw_span *best = NULL;
	uint32_t i;

	for (i = 0; i < r->max_spans; i++)
		if (r->spans[i].handle && r->spans[i].off >= off &&
		    (!best || r->spans[i].off < best->off))
			best = &r->spans[i];
	return best;
}

/* Walk the free runs in address order; the first of at least `want` bytes (0: none wanted). */
static uint64_t scan(const struct pccx_fw_region *r, uint64_t want, uint64_t *at,
		     uint64_t *largest)
{
	uint64_t off = 0, total = 0;

	*largest = 0;
	for (;;) {
		const struct pccx_fw_span *sp = next_span(r, off);
		uint64_t end = sp ? sp->off : r->size, run = end - off;

		total += run;
		if (run > *largest)
			*largest = run;
		if (want && run >= want) {
			*at = off;
			return total;
		}
		if (!sp)
			return total;
		off = (sp->off + sp->size + ALIGN - 1) & ~(ALIGN - 1);
	}
}

uint64_t pccx__fw_region_free_bytes(const struct pccx_fw_region *r, uint64_t *largest)
{
	uint64_t at, big;
	uint64_t total = scan(r, 0, &at, &big);

	if (largest)
		*largest = big;
	return total;
}

int pccx__fw_region_alloc(struct pccx_fw_region *r, uint64_t size, uint32_t *handle,
			  uint64_t *off, uint64_t *largest)
{
	struct pccx_fw_span *slot = NULL;
	uint64_t at = 0, big = 0, need;
	uint32_t i;

	for (i = 0; i < r->max_spans && !slot; i++)
		if (!r->spans[i].handle)
			slot = &r->spans[i];
	if (!size || size > r->size) {
		pccx__fw_region_free_bytes(r, largest);
		return PCCX_LINK_E_NOSPACE;
	}
	need = (size + ALIGN - 1) & ~(ALIGN - 1);
	scan(r, need, &at, &big);
	if (!slot || big < need) {
		*largest = slot ? big : 0;
		return PCCX_LINK_E_NOSPACE;
	}
	/* a handle not in use; they count up so a freed one is not given out again at once */
	do {
		*handle = r->next_handle++;
		if (!r->next_handle)
			r->next_handle = 1;
	} while (!*handle || pccx__fw_region_find(r, *handle));
	slot->handle = *handle;
	slot->off = at;
	slot->size = size;
	__builtin_memset(r->cpu + at, 0, (size_t)size);
	*off = at;
	return 0;
}

int pccx__fw_region_free(struct pccx_fw_region *r, uint32_t handle)
{
	struct pccx_fw_span *sp = (struct pccx_fw_span *)pccx__fw_region_find(r, handle);

	if (!sp)
		return -1;
	sp->handle = 0;
	return 0;
}
