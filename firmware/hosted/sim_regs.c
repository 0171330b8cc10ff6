// SPDX-License-Identifier: MIT
/* The cycle simulator behind the register executor (sim_regs.h). */
#include <string.h>

#include "sim_regs.h"

/* A refused access reads 0 and writes nothing, as a bus error the engine then reports. */
static uint32_t sim_rd32(void *io, uint32_t off)
{
	uint32_t v = 0;

	return pccx__sim_mmio_read32(io, off, &v) ? 0 : v;
}

static void sim_wr32(void *io, uint32_t off, uint32_t v)
{
	if (pccx__sim_mmio_write32(io, off, v))
		return;
}

static uint64_t sim_rd64(void *io, uint32_t off)
{
	uint64_t v = 0;

	return pccx__sim_mmio_read64(io, off, &v) ? 0 : v;
}

static void sim_wr64(void *io, uint32_t off, uint64_t v)
{
	if (pccx__sim_mmio_write64(io, off, v))
		return;
}

const struct pccx_engine_ops pccx__fw_sim_ops = { sim_rd32, sim_wr32, sim_rd64, sim_wr64 };

uint64_t pccx__fw_sim_now_ns(void *clk)
{
	const struct pccx_sim_config *c = pccx__sim_get_config(clk);
	uint64_t cyc = pccx__sim_cycles(clk);

	/* split so that cycles * 1e9 cannot overflow */
	return cyc / c->core_hz * 1000000000ull + cyc % c->core_hz * 1000000000ull / c->core_hz;
}

void pccx__fw_sim_idle(void *io)
{
	pccx__sim_advance(io, 64);
}

int pccx__fw_sim_regs_cfg(pccx_sim *sim, uint8_t *cpu, uint64_t dev, uint64_t size,
			  struct pccx_fw_span *spans, uint32_t max_spans,
			  struct pccx_fw_regs_cfg *cfg)
{
	int rc = pccx__sim_dma_window_add(sim, dev, size, cpu,
					  PCCX_SIM_WIN_READ | PCCX_SIM_WIN_WRITE);

	if (rc)
		return rc;
	memset(cfg, 0, sizeof(*cfg));
	cfg->ops = &pccx__fw_sim_ops;
	cfg->io = sim;
	cfg->region_cpu = cpu;
	cfg->region_dev = dev;
	cfg->region_size = size;
	cfg->spans = spans;
	cfg->max_spans = max_spans;
	cfg->now_ns = pccx__fw_sim_now_ns;
	cfg->clk = sim;
	cfg->idle = pccx__fw_sim_idle;
	cfg->flags = PCCX_LINK_INFO_SIMULATED;
	return 0;
}
