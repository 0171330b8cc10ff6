/* SPDX-License-Identifier: MIT */
/*
 * A prompt on the NPU in chunks: the decode steps of `rows` consecutive prompt tokens as one
 * program in which every Q4 weight matmul the tokens share runs once, as a GEMM of `rows`
 * rows (docs/isa.md A14: each GEMM row gives the bits of a GEMV), so the weights stream once
 * per chunk instead of once per token. The KV rows, and every value of every stage, are those
 * token-by-token prefill gives.
 *
 * How: each token's step is recorded (op_record.h) with the chunk plan (the decode plan's
 * host buffers, with W_up through two piece buffers and the RoPE tables rebuilt per use,
 * pccx__gemma_plan_build_chunk), then the programs are interleaved. L2 holds one copy of the
 * plan regions (gemma_graph.h) the tokens can share (chunk_share.h) and, per token, a place
 * for each of the others; regions whose values are never in L2 at the same op of a step share
 * a place (chunk_share.h, pccx__chunk_share_conflicts). Token r's copy of a region is at
 * base + r * stride, the stride its place's width, so a region that is exactly one matmul
 * row wide (it keeps a place of that width) puts the tokens' rows where a GEMM wants them.
 * Between two weight matmuls, token 0's ops run, then token 1's, and so on; then the GEMM.
 * Token r therefore finds the KV rows of tokens 0..r-1 of the same layer stored, as in
 * token-by-token prefill. A weight matmul whose rows are not one region wide runs as one
 * GEMV per token at its place.
 *
 * The chunk uses no logits: the prompt's last token runs as a decode step. Models with
 * experts are refused (their steps choose experts from values computed mid-step).
 */
#ifndef PCCX_GEMMA_CHUNK_H
#define PCCX_GEMMA_CHUNK_H

#include "gemma_graph.h"
#include "op_record.h"

/* The most tokens a chunk takes, whatever L2 would hold. */
#define PCCX_GEMMA_CHUNK_MAX_ROWS 64u

struct pccx_gemma_chunk_stats {
	uint64_t gemm_bytes;	/* weight bytes the GEMMs streamed (once per chunk) */
	uint64_t gemv_bytes;	/* weight bytes of weight matmuls run per token */
	uint64_t gemms;
};

/* How a chunk lays out the regions its tokens each have a copy of (gemma_chunk.c). */
struct pccx_chunk_layout {
	uint64_t shared;			/* regions of one copy for all tokens */
	uint64_t conflict[PCCX_GEMMA_PLAN_REGIONS];	/* bit j of [i]: regions i and j hold
							 * values at the same op */
	uint64_t rows_of;			/* regions a weight matmul reads or writes
						 * whole rows of */
};

struct pccx_gemma_chunk {
	const struct pccx_gemma_model *m;
	const struct pccx_gemma_plan *p;	/* the decode plan: regions, host buffers */
	struct pccx_gemma_plan rp;		/* the chunk layout the tokens' steps are
						 * recorded with (pccx__gemma_plan_build_chunk) */
	uint32_t rows;				/* tokens the layout holds */
	uint32_t words;				/* L2 words it uses */
	uint32_t base[PCCX_GEMMA_PLAN_REGIONS];	/* L2 word of region i for token 0 */
	uint32_t stride[PCCX_GEMMA_PLAN_REGIONS];	/* ... from one token's to the next
							 * (0: one copy for all) */
	int place_of[PCCX_GEMMA_PLAN_REGIONS];	/* the place region i shares, -1: one copy */
	struct pccx_chunk_layout lo;
	/* regions of one copy for all tokens (chunk_share.h), bit i for region i */
	uint64_t scratch;			/* segment-local */
	uint64_t same;				/* the model's weight bytes, loaded alike */
	uint32_t *seen;				/* the classifier's scratch (2 * L2 words) */
	struct pccx_rec *rec;			/* (rows) the tokens' recorded steps */
	size_t *at;				/* (rows) replay cursors */
	struct pccx_gemma_chunk_stats st;
};

/*
 * Tokens per chunk L2 holds for plan p (at most PCCX_GEMMA_CHUNK_MAX_ROWS); 0 when the model
 * cannot run in chunks (experts) or L2 holds one token only.
 */
uint32_t pccx__gemma_chunk_rows_max(const struct pccx_gemma_model *m,
				    const struct pccx_gemma_plan *p);

/* A chunk layout for up to `rows` tokens. PCCX_ERR_RANGE when L2 is too small for them. */
PCCX_MUST_CHECK int pccx__gemma_chunk_create(struct pccx_gemma_chunk **out,
					     const struct pccx_gemma_model *m,
					     const struct pccx_gemma_plan *p, uint32_t rows,
					     pccx_diag *d);
void pccx__gemma_chunk_free(struct pccx_gemma_chunk *ck);

/*
 * The per-step inputs of tokens[0..rows) at positions pos0.. into `in`, token r's at
 * r * p->in_bytes (BUF_IN holds rows * p->in_bytes). PCCX_ERR_RANGE for a token outside the
 * vocabulary.
 */
PCCX_MUST_CHECK int pccx__gemma_chunk_inputs(const struct pccx_gemma_chunk *ck,
					     const uint32_t *tokens, uint32_t rows, uint32_t pos0,
					     uint8_t *in, pccx_diag *d);

/*
 * Emit the chunk of `rows` tokens at positions pos0.. (1 <= rows <= ck->rows; inputs already
 * in BUF_IN) as one job through ops/ctx. pos0 + rows <= max_ctx.
 */
PCCX_MUST_CHECK int pccx__gemma_chunk_step(struct pccx_gemma_chunk *ck,
					   const struct pccx_npu_ops *ops, void *ctx,
					   uint32_t pos0, uint32_t rows, pccx_diag *d);

#endif /* PCCX_GEMMA_CHUNK_H */
