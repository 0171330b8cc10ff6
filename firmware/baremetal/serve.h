/* SPDX-License-Identifier: MIT */
/* The host-link server on the UART (serve.c). */
#ifndef PCCX_BM_SERVE_H
#define PCCX_BM_SERVE_H

#include "board.h"
#include "pccx_fw.h"

/* Serve the link on the device tree's UART with the register executor `regs`; returns only
 * when the server cannot start (an exit status). `name` is INFO's board name. */
int pccx__bm_serve(struct pccx_fw_regs *regs, const struct pccx_bm_dt *dt, const char *name);

#endif
