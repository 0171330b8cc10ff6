/* SPDX-License-Identifier: MIT */
/* The boot self-test job (selftest.c). */
#ifndef PCCX_BM_SELFTEST_H
#define PCCX_BM_SELFTEST_H

#include "pccx_engine.h"

#define PCCX_BM_SELFTEST_STILL 1000000u  /* engine steps without progress: the device is hung */

struct pccx_bm_selftest {
	int state;                       /* enum pccx_engine_state at the end */
	uint64_t mmio, retired;
	char msg[160];                   /* why it failed */
};

struct pccx_fw_regs_cfg;

/*
 * Copy a pattern host -> L2 -> host through the engine over the register executor's accessor,
 * using the first 512 bytes of its DMA region. Returns 0, or -1 with r->msg.
 */
int pccx__bm_selftest(const struct pccx_fw_regs_cfg *cfg, struct pccx_bm_selftest *r);

#endif
