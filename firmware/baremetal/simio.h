/* SPDX-License-Identifier: MIT */
/* The QEMU test image's register accessor, backed by the cycle simulator (simio.c). */
#ifndef PCCX_BM_SIMIO_H
#define PCCX_BM_SIMIO_H

#include "board.h"

typedef struct pccx_sim pccx_sim;

struct pccx_bm_simio {
	pccx_sim *sim;
	uint64_t refused;              /* accesses the simulator refused (outside the aperture) */
	uint32_t first_refused;
};

extern const struct pccx_engine_ops pccx__bm_simio_ops;
/* A simulator configured from the node, with the DMA pool as its one window. */
int pccx__bm_simio_init(struct pccx_bm_simio *s, const struct pccx_bm_dt *dt,
			const struct pccx_bm_range *dma, char *err, size_t errlen);

#endif
