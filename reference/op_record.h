/* SPDX-License-Identifier: MIT */
/*
 * A step's program, kept: an implementation of the NPU op interface (npu_ops.h) that records
 * every op instead of running it, and replays one op into any other implementation.
 *
 * A step of a model without experts emits the same ops whatever the values are (they depend
 * on the model, the plan and the position only), so its recording, replayed later, is the
 * step. Prompts in batches use it: each token's step is recorded, then the tokens' programs
 * are replayed side by side (batch_prefill.h on the host, gemma_chunk.h on the NPU).
 */
#ifndef PCCX_OP_RECORD_H
#define PCCX_OP_RECORD_H

#include <stddef.h>

#include "npu_ops.h"
#include "pccx_job.h"
#include "pccx/status.h"

enum pccx_rec_kind { PCCX_REC_BEGIN, PCCX_REC_END, PCCX_REC_MATMUL, PCCX_REC_CVO, PCCX_REC_COPY,
		     PCCX_REC_LOAD, PCCX_REC_STORE, PCCX_REC_STAGE };

/* Stage names the recorder keeps, with their terminating NUL (longer ones fail the step). */
#define PCCX_REC_NAME_MAX 40

struct pccx_rec_op {
	enum pccx_rec_kind kind;
	union {
		uint32_t pos;					/* begin */
		struct pccx_npu_matmul mm;
		struct pccx_npu_cvo cvo;
		struct { uint32_t dst, src, words; } copy;
		struct { uint32_t l2, buf, n; uint64_t off; } mem;	/* load, store */
		struct { uint32_t addr, rows, cols; char name[PCCX_REC_NAME_MAX]; } stage;
	} u;
};

/* A recording; zero-initialised is empty. Recording fails only for memory or a long name. */
struct pccx_rec {
	struct pccx_rec_op *op;
	size_t n, cap;
};

/* The op table; the ctx of every op is the struct pccx_rec. bind records nothing. */
const struct pccx_npu_ops *pccx__rec_ops(void);
void pccx__rec_clear(struct pccx_rec *r);
void pccx__rec_free(struct pccx_rec *r);

/* Run one recorded op through ops/ctx; its status. */
PCCX_MUST_CHECK int pccx__rec_replay(const struct pccx_rec_op *op, const struct pccx_npu_ops *ops,
				     void *ctx);

/*
 * A matmul whose weights one pass can serve to every token of a batch: Q4 rows of the model
 * (PCCX_NPU_BUF_WEIGHTS) against one activation row, no S <- max (which each token keeps in
 * its own scalar register), no rowmask (each token keeps its own rows).
 */
bool pccx__rec_is_weight_matmul(const struct pccx_rec_op *op);
/* Whether two such matmuls are the same instruction (fields; tensor and row0 are names). */
bool pccx__rec_same_matmul(const struct pccx_npu_matmul *a, const struct pccx_npu_matmul *b);

/*
 * Whether rec[1..rows) each have rec[0]'s weight matmuls, the same in the same order (what
 * replaying them side by side needs). PCCX_ERR_INTERNAL with the row and op otherwise.
 */
PCCX_MUST_CHECK int pccx__rec_check_lockstep(const struct pccx_rec *rec, uint32_t rows,
					     pccx_diag *d);

/* The L2 words a recorded CVO reads and writes, and its use of S (isa/effects.c); false for
 * an illegal one. */
bool pccx__rec_cvo_effects(const struct pccx_npu_cvo *op, struct pccx_effects *fx);

/* The index of the first weight matmul at or after op i of r (r->n if none). */
size_t pccx__rec_next_weight_matmul(const struct pccx_rec *r, size_t i);

#endif /* PCCX_OP_RECORD_H */
