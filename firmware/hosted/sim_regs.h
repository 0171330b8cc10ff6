/* SPDX-License-Identifier: MIT */
/*
 * The cycle simulator as a board's register accessor: the register executor's ops, clock and
 * idle hook over a pccx_sim, for boards without a pccx device (the hosted test board, and
 * QEMU's aarch64 `virt`, which has no pccx device). The register executor cannot tell it
 * from MMIO; time is the simulator's (job timeouts in simulated nanoseconds).
 */
#ifndef PCCX_FW_SIM_REGS_H
#define PCCX_FW_SIM_REGS_H

#include "pccx_fw.h"
#include "pccx_sim.h"

/* io for the ops is the pccx_sim itself. */
extern const struct pccx_engine_ops pccx__fw_sim_ops;
/* The simulator's time in ns (its core cycles at its core clock); clk is the pccx_sim. */
uint64_t pccx__fw_sim_now_ns(void *clk);
/* A step that changed nothing: let the device run 64 core cycles. */
void pccx__fw_sim_idle(void *io);

/*
 * Fill *cfg for the register executor over `sim`, with the DMA region [dev, dev + size) at
 * `cpu` opened to the simulator as one window. Returns 0 or the simulator's status.
 */
int pccx__fw_sim_regs_cfg(pccx_sim *sim, uint8_t *cpu, uint64_t dev, uint64_t size,
			  struct pccx_fw_span *spans, uint32_t max_spans,
			  struct pccx_fw_regs_cfg *cfg);

#endif /* PCCX_FW_SIM_REGS_H */
