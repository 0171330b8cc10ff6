/* SPDX-License-Identifier: MIT */
/*
 * Which L2 regions of the decode plan the tokens of a prompt chunk can share (gemma_chunk.h),
 * read from a recorded step. A chunk runs its tokens' segments (the ops between two weight
 * matmuls) one token after the other, so one copy of a region serves them all when either
 *
 *   - every word of it an op reads was written earlier in the same segment by the same
 *     token, and no weight matmul reads or writes it (the rotate-half scratch, the attention
 *     scores): no value in it outlives the segment that made it; or
 *   - it is one of the plan's blocks of weight bytes (plan.region_same) that only loads from
 *     the model write, and in no segment is a word of it read before a load writes it again:
 *     every token loads the same bytes at the same point of its program, so the first
 *     token's load serves the others, and none reads a block a token before it replaced.
 */
#ifndef PCCX_CHUNK_SHARE_H
#define PCCX_CHUNK_SHARE_H

#include <stdint.h>

#include "gemma_graph.h"
#include "op_record.h"

struct pccx_chunk_share {
	uint64_t scratch;	/* bit i: region i is segment-local */
	uint64_t same;		/* bit i: region i holds the same weight bytes for every token */
	int bad_op;		/* the first op that names L2 outside one region, or -1 */
};

/*
 * Classify plan p's regions by the recorded step rec. `seen` is scratch of PCCX_L2_WORDS
 * uint32_t the caller owns (its contents do not matter). PCCX_ERR_INTERNAL when an op names
 * L2 outside one region (sh->bad_op says which).
 */
PCCX_MUST_CHECK int pccx__chunk_share_classify(const struct pccx_gemma_plan *p,
					       const struct pccx_rec *rec, uint32_t *seen,
					       struct pccx_chunk_share *sh);

/*
 * Which of the regions in `mask` hold values at the same op of the recorded step rec:
 * conflict[i] has bit j when a value of region i (in L2 from the op that writes it to the
 * last op that reads it, both included; a value read before any write of the step, from the
 * step's first op) and a value of region j are both in L2 at some op. A token's regions that
 * do not conflict can share one place. `seen` as for pccx__chunk_share_classify.
 * PCCX_ERR_INTERNAL when an op names L2 outside one region, PCCX_ERR_NOMEM.
 */
PCCX_MUST_CHECK int pccx__chunk_share_conflicts(const struct pccx_gemma_plan *p,
						const struct pccx_rec *rec, uint64_t mask,
						uint32_t *seen,
						uint64_t conflict[PCCX_GEMMA_PLAN_REGIONS]);

/* The region holding [a, a + words), or -1. */
int pccx__plan_region_of(const struct pccx_gemma_plan *p, uint32_t a, uint64_t words);

#endif /* PCCX_CHUNK_SHARE_H */
