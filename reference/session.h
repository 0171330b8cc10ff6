/* SPDX-License-Identifier: MIT */
/*
 * A decoding session: the host side of the Gemma 3n decode step. It owns the host buffers
 * (per-step inputs, KV cache, logits), writes the inputs of each token, runs the step through
 * an NPU op implementation and reads the logits back.
 */
#ifndef PCCX_SESSION_H
#define PCCX_SESSION_H

#include "gemma_chunk.h"

struct pccx_gemma_session {
	const struct pccx_gemma_model *m;
	struct pccx_gemma_plan plan;
	const struct pccx_npu_ops *ops;
	void *ctx;
	uint8_t *in;		/* (in_rows * plan.in_bytes) PCCX_NPU_BUF_IN */
	uint32_t in_rows;	/* prompt tokens per chunk BUF_IN holds the inputs of (>= 1) */
	uint8_t *kv;		/* (plan.kv_bytes) PCCX_NPU_BUF_KV */
	uint8_t *out;		/* (plan.out_bytes) PCCX_NPU_BUF_OUT: FP32 logits */
	uint32_t pos;		/* position of the next token */
};

/* Plan the model, allocate the host buffers and bind them to the op implementation. */
PCCX_MUST_CHECK int pccx__gemma_session_create(struct pccx_gemma_session **out,
						 const struct pccx_gemma_model *m,
						 const struct pccx_npu_ops *ops, void *ctx,
						 pccx_diag *d);
void pccx__gemma_session_free(struct pccx_gemma_session *s);
/* Start again at position 0 (the KV rows are overwritten before they are read). */
void pccx__gemma_session_reset(struct pccx_gemma_session *s);

/*
 * Decode `token` at the next position. logits == NULL skips the LM head (prefill);
 * otherwise logits receives the vocab FP32 results.
 */
PCCX_MUST_CHECK int pccx__gemma_session_step(struct pccx_gemma_session *s, uint32_t token,
					       float *logits, pccx_diag *d);

/*
 * Prefill tokens[0..rows) at the next positions as one chunk (gemma_chunk.h, made for this
 * session's model and plan; rows <= in_rows): no logits, the KV rows token-by-token gives.
 */
PCCX_MUST_CHECK int pccx__gemma_session_chunk(struct pccx_gemma_session *s,
					      struct pccx_gemma_chunk *ck,
					      const uint32_t *tokens, uint32_t rows, pccx_diag *d);

#endif /* PCCX_SESSION_H */
