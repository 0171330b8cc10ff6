// SPDX-License-Identifier: MIT
/*
 * The memory map at boot (docs/firmware.md "Memory map"): RAM from the device tree, minus what
 * is busy (the image with its stack, the device tree, the DMA pool), leaves free ranges; the
 * heap takes the largest. Without a memory-region in the node the DMA pool is carved first:
 * the upper half of the largest free range below the device's DMA limit.
 */
#include <stdio.h>
#include <string.h>

#include "board.h"

#define MAX_FREE 16
#define PAGE     0x1000ull

struct ranges {
	struct pccx_bm_range r[MAX_FREE];
	int n;
};

/* Remove [b, b+size) from every free range (a range may split in two). */
static void subtract(struct ranges *f, const struct pccx_bm_range *b)
{
	struct ranges out = { .n = 0 };

	for (int i = 0; i < f->n; i++) {
		uint64_t lo = f->r[i].base, hi = lo + f->r[i].size;
		uint64_t blo = b->base, bhi = b->base + b->size;

		if (bhi <= lo || blo >= hi) {
			out.r[out.n++] = f->r[i];
			continue;
		}
		if (blo > lo && out.n < MAX_FREE)
			out.r[out.n++] = (struct pccx_bm_range){ lo, blo - lo };
		if (bhi < hi && out.n < MAX_FREE)
			out.r[out.n++] = (struct pccx_bm_range){ bhi, hi - bhi };
	}
	*f = out;
}

/* The largest free range, page-aligned inward, ending at or below `limit`. */
static struct pccx_bm_range largest(const struct ranges *f, uint64_t limit)
{
	struct pccx_bm_range best = { 0, 0 };

	for (int i = 0; i < f->n; i++) {
		uint64_t lo = (f->r[i].base + PAGE - 1) & ~(PAGE - 1);
		uint64_t hi = (f->r[i].base + f->r[i].size) & ~(PAGE - 1);

		if (hi > limit)
			hi = limit & ~(PAGE - 1);
		if (hi > lo && hi - lo > best.size)
			best = (struct pccx_bm_range){ lo, hi - lo };
	}
	return best;
}

static bool overlaps(const struct pccx_bm_range *a, const struct pccx_bm_range *b)
{
	return a->base < b->base + b->size && b->base < a->base + a->size;
}

int pccx__bm_memmap(const struct pccx_bm_dt *dt, const struct pccx_bm_range *busy, int n_busy,
		    uint64_t min_heap, struct pccx_bm_memmap *mm, char *err, size_t errlen)
{
	struct ranges f = { .r = { dt->ram }, .n = 1 };

	memset(mm, 0, sizeof(*mm));
	for (int i = 0; i < n_busy; i++) {
		if (dt->have_dma && overlaps(&dt->dma, &busy[i])) {
			snprintf(err, errlen, "%s: memory-region %s (0x%llx+0x%llx) overlaps the "
				 "image or the device tree (0x%llx+0x%llx)", dt->npu_name,
				 dt->dma_name, (unsigned long long)dt->dma.base,
				 (unsigned long long)dt->dma.size, (unsigned long long)busy[i].base,
				 (unsigned long long)busy[i].size);
			return -1;
		}
		subtract(&f, &busy[i]);
	}
	if (dt->have_dma) {
		mm->dma = dt->dma;
	} else {
		uint64_t limit = dt->dma_bits >= 64 ? ~0ull : 1ull << dt->dma_bits;
		struct pccx_bm_range g = largest(&f, limit);

		mm->dma.size = (g.size / 2) & ~(PAGE - 1);
		mm->dma.base = g.base + g.size - mm->dma.size;
		mm->dma_carved = true;
		if (!mm->dma.size) {
			snprintf(err, errlen, "no free RAM below the %u-bit DMA limit for a DMA "
				 "pool", dt->dma_bits);
			return -1;
		}
	}
	subtract(&f, &mm->dma);
	mm->heap = largest(&f, ~0ull);
	if (mm->heap.size < min_heap) {
		snprintf(err, errlen, "the largest free RAM range (0x%llx bytes) is below the "
			 "0x%llx the heap needs", (unsigned long long)mm->heap.size,
			 (unsigned long long)min_heap);
		return -1;
	}
	return 0;
}
