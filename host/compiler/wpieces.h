/* SPDX-License-Identifier: MIT */
/*
 * A host buffer held by the device as several buffers ("pieces"): rewriting a job's
 * descriptors that name the whole buffer so that each names the piece holding its bytes.
 *
 * The kernel backend keeps the model's weights this way when they exceed the driver's
 * max_bo_size (gemma_pieces.h chooses the cuts). The compiler merges a port's consecutive
 * stream regions into one descriptor, which can run from one piece into the next when the
 * two touch: such a descriptor becomes one per piece, in order on the same port, so every
 * port receives the same bytes in the same order.
 */
#ifndef PCCX_WPIECES_H
#define PCCX_WPIECES_H

#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"
#include "pccx_job.h"

struct pccx_wpiece {
	uint64_t offset, bytes;	/* the bytes of the whole buffer this piece holds */
	uint32_t handle;	/* the piece's own buffer */
};

/* The rewritten descriptors (owned; reused from job to job). */
struct pccx_wpieces_out {
	struct pccx_dma_desc *dma;
	struct pccx_stream_desc *stream;
	uint32_t cap_dma, cap_stream;
};

/*
 * *out = job with every descriptor naming `whole` pointed at its piece (pc: n pieces in
 * offset order). PCCX_ERR_INVALID, naming the range, when a DMA descriptor is not inside one
 * piece or a stream descriptor covers bytes of no piece.
 */
PCCX_MUST_CHECK int pccx__wpieces_rewrite(const struct pccx_wpiece *pc, size_t n, uint32_t whole,
					  const struct pccx_job_view *job,
					  struct pccx_wpieces_out *o, struct pccx_job_view *out,
					  pccx_diag *d);
void pccx__wpieces_out_free(struct pccx_wpieces_out *o);

#endif /* PCCX_WPIECES_H */
