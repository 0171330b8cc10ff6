// SPDX-License-Identifier: MIT
/*
 * The QEMU test image's device: QEMU's virt machine has no pccx device, so this image carries
 * the cycle simulator (sim/, isa/, isa/num/ and reference/'s portable Q4 kernels compiled for
 * AArch64) behind the register executor, through firmware/hosted/sim_regs.c's accessor: the
 * simulator's MMIO entry points instead of loads at the node's address. Everything else is the
 * board's: the node and its pccx,* parameters (read by the simulator's own device-tree
 * reader), the DMA pool in RAM, which the simulator reaches through one window at the pool's
 * physical address (the MMU is off: CPU and device addresses are the same).
 */
#include <stdio.h>

#include "diag.h"
#include "pccx_sim.h"
#include "sim_regs.h"
#include "simio.h"

int pccx__bm_simio_cfg(const struct pccx_bm_dt *dt, const struct pccx_bm_range *dma,
		       struct pccx_fw_span *spans, uint32_t max_spans,
		       struct pccx_fw_regs_cfg *cfg, char *err, size_t errlen)
{
	struct pccx_sim_config sc;
	pccx_sim *sim = NULL;
	pccx_diag d = { 0 };
	int rc;

	pccx__sim_config_default(&sc);
	rc = pccx__sim_config_from_dtb(&sc, dt->fdt, dt->fdt_size, &d);
	if (!rc)
		rc = pccx__sim_create(&sc, &sim, &d);
	if (!rc) {
		rc = pccx__fw_sim_regs_cfg(sim, (uint8_t *)(uintptr_t)dma->base, dma->base,
					   dma->size, spans, max_spans, cfg);
		if (rc)
			pccx__fail(&d, rc, "the DMA pool 0x%llx+0x%llx as its window",
				   (unsigned long long)dma->base, (unsigned long long)dma->size);
	}
	if (rc) {
		snprintf(err, errlen, "simulator: %s", d.msg[0] ? d.msg : pccx_strerror(rc));
		if (sim)
			pccx__sim_destroy(sim);
		return -1;
	}
	return 0;
}
