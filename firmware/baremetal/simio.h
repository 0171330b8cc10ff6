/* SPDX-License-Identifier: MIT */
/* The QEMU test image's device: the cycle simulator behind the register executor (simio.c). */
#ifndef PCCX_BM_SIMIO_H
#define PCCX_BM_SIMIO_H

#include "board.h"
#include "pccx_fw.h"

/*
 * A simulator configured from the node, with the DMA pool as its one window, as the register
 * executor's configuration (ops, clock and idle hook are the simulator's). 0, or -1 with err.
 */
int pccx__bm_simio_cfg(const struct pccx_bm_dt *dt, const struct pccx_bm_range *dma,
		       struct pccx_fw_span *spans, uint32_t max_spans,
		       struct pccx_fw_regs_cfg *cfg, char *err, size_t errlen);

#endif
