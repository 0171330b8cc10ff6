// SPDX-License-Identifier: MIT
/*
 * The register accessor of the QEMU test image: QEMU's virt machine has no pccx device, so
 * this image carries the cycle simulator (sim/, isa/, isa/num/ compiled for AArch64) and its
 * accessor calls the simulator's MMIO entry points instead of loading from the node's
 * address. Everything else is the board's: the node, its parameters (pccx,* properties, read
 * by the simulator's own device-tree reader), the DMA pool in RAM, which the simulator reaches
 * through one window at the pool's physical address (the MMU is off: CPU and device
 * addresses are the same).
 */
#include <stdio.h>

#include "board.h"
#include "pccx_engine.h"
#include "pccx_sim.h"
#include "simio.h"

#define PCCX_BM_SIM_POLL_CYCLES 64

static uint32_t rd32(void *io, uint32_t off)
{
	struct pccx_bm_simio *s = io;
	uint32_t v = ~0u;

	if (pccx__sim_mmio_read32(s->sim, off, &v) && !s->refused++)
		s->first_refused = off;
	return v;
}

static void wr32(void *io, uint32_t off, uint32_t v)
{
	struct pccx_bm_simio *s = io;

	if (pccx__sim_mmio_write32(s->sim, off, v) && !s->refused++)
		s->first_refused = off;
}

static uint64_t rd64(void *io, uint32_t off)
{
	struct pccx_bm_simio *s = io;
	uint64_t v = ~0ull;

	if (pccx__sim_mmio_read64(s->sim, off, &v) && !s->refused++)
		s->first_refused = off;
	/* A CPU polling a busy device lets the device's clock run; the simulator's runs only
	 * when told, so each such poll gives it the in-process backend's poll interval. */
	if (off == PCCX_REG_STATUS && !(v & (PCCX_STATUS_IDLE | PCCX_STATUS_ERROR)))
		pccx__sim_advance(s->sim, PCCX_BM_SIM_POLL_CYCLES);
	return v;
}

static void wr64(void *io, uint32_t off, uint64_t v)
{
	struct pccx_bm_simio *s = io;

	if (pccx__sim_mmio_write64(s->sim, off, v) && !s->refused++)
		s->first_refused = off;
}

const struct pccx_engine_ops pccx__bm_simio_ops = { rd32, wr32, rd64, wr64 };

int pccx__bm_simio_init(struct pccx_bm_simio *s, const struct pccx_bm_dt *dt,
			const struct pccx_bm_range *dma, char *err, size_t errlen)
{
	struct pccx_sim_config cfg;
	pccx_diag d = { 0 };
	int rc;

	s->sim = NULL;
	s->refused = 0;
	pccx__sim_config_default(&cfg);
	rc = pccx__sim_config_from_dtb(&cfg, dt->fdt, dt->fdt_size, &d);
	if (!rc)
		rc = pccx__sim_create(&cfg, &s->sim, &d);
	if (!rc)
		rc = pccx__sim_dma_window_add(s->sim, dma->base, dma->size,
					      (void *)(uintptr_t)dma->base,
					      PCCX_SIM_WIN_READ | PCCX_SIM_WIN_WRITE);
	if (rc) {
		snprintf(err, errlen, "simulator: %s", d.msg[0] ? d.msg : pccx_strerror(rc));
		if (s->sim)
			pccx__sim_destroy(s->sim);
		s->sim = NULL;
		return -1;
	}
	return 0;
}
