/* SPDX-License-Identifier: MIT */
/* The firmware heap's set-up and figures (malloc and friends are in <stdlib.h>). */
#ifndef PCCX_BM_HEAP_H
#define PCCX_BM_HEAP_H

#include <stddef.h>

struct pccx_bm_heap_stats {
	size_t total;          /* bytes of the region */
	size_t used, peak;     /* bytes in blocks handed out, headers included */
	size_t failed;         /* allocations refused */
};

/* Hand the heap its region (16-byte aligned inside [base, base+len)); once, at boot. */
void pccx__bm_heap_init(void *base, size_t len);
void pccx__bm_heap_get_stats(struct pccx_bm_heap_stats *st);
/* Called for a pointer free/realloc cannot own: reports it and stops (board code). */
__attribute__((noreturn)) void pccx__bm_heap_corrupt(void *p);

#endif
