/* SPDX-License-Identifier: MIT */
/*
 * The hosted board: firmware/core's server and register executor over the cycle simulator,
 * serving the link protocol on a file descriptor (a socket, a pty). What the tests and
 * `pccx-board` run on the build machine in place of a board.
 */
#ifndef PCCX_HOSTED_BOARD_H
#define PCCX_HOSTED_BOARD_H

#include <stdint.h>

#include "pccx/status.h"
#include "pccx_fw.h"

struct pccx_hosted_board_opts {
	uint64_t region_bytes;          /* DMA region for buffers (0: 64 MiB) */
	uint32_t max_payload;           /* 0: 256 KiB */
	uint32_t max_bufs;              /* 0: 256 */
	const char *name;               /* 0: "hosted-sim" */
	/* a test knob: when job number corrupt_job (from 1) completes, the first FP32 element
	 * of the last range it wrote to host memory (a decode step's logits) becomes FLT_MAX
	 * (0: never) - a board whose results are wrong, for the tests of what notices it */
	uint64_t corrupt_job;
};

struct pccx_hosted_board;

PCCX_MUST_CHECK int pccx__hosted_board_create(const struct pccx_hosted_board_opts *o,
					      struct pccx_hosted_board **out, pccx_diag *d);
void pccx__hosted_board_destroy(struct pccx_hosted_board *b);
/*
 * Serve one connection on fd (not closed here) until the peer closes it (returns 0), reading
 * fails (-1) or *stop (may be NULL) turns non-zero (returns 0).
 */
int pccx__hosted_board_serve(struct pccx_hosted_board *b, int fd, volatile int *stop);
struct pccx_fw_server *pccx__hosted_board_server(struct pccx_hosted_board *b);

#endif /* PCCX_HOSTED_BOARD_H */
