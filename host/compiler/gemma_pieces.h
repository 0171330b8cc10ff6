/* SPDX-License-Identifier: MIT */
/*
 * Splitting the weight buffer into pieces for a device that limits the size of one buffer
 * (the kernel driver's max_bo_size).
 *
 * Every weight-stream descriptor and every host->L2 load of a decode step must lie inside
 * one piece. The ranges are not predicted: a decode step (position 0, with the LM head) is
 * run through a recording op table, so the pieces follow whatever the graph streams.
 * Bytes no step reads (the PLE table) are in no piece.
 */
#ifndef PCCX_GEMMA_PIECES_H
#define PCCX_GEMMA_PIECES_H

#include "gemma_graph.h"
#include "gemma_model.h"

struct pccx_gemma_piece {
	uint64_t offset;	/* in the weight buffer, multiple of 16 */
	uint64_t bytes;		/* at most the limit */
};

/*
 * The pieces, in offset order, for buffers of at most `limit` bytes (*out is malloc'd).
 * PCCX_ERR_RANGE when one range a step reads as a whole is larger than the limit.
 */
PCCX_MUST_CHECK int pccx__gemma_weight_pieces(const struct pccx_gemma_model *m, uint64_t limit,
						struct pccx_gemma_piece **out, size_t *n,
						pccx_diag *d);

/*
 * The KV buffer of a plan in pieces of at most `limit` bytes, cut between KV blocks (one
 * head's K or V rows of one layer, pccx__gemma_kv_block), which no step's read or write
 * crosses. PCCX_ERR_RANGE, naming the block, when one block is larger than the limit.
 */
PCCX_MUST_CHECK int pccx__gemma_kv_pieces(const struct pccx_gemma_model *m,
					    const struct pccx_gemma_plan *p, uint64_t limit,
					    struct pccx_gemma_piece **out, size_t *n,
					    pccx_diag *d);

#endif /* PCCX_GEMMA_PIECES_H */
