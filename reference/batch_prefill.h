/* SPDX-License-Identifier: MIT */
/*
 * Prompts on the host in batches: the reference's prefill of many tokens with one pass over
 * the weights per batch, giving exactly the bits of token-by-token prefill.
 *
 * Each token of a batch ("row") runs the decode step the graph emits for its position
 * (gemma_graph.h), on its own reference executor (exec_ref.h: its own L2 and scalar
 * register, its own per-step inputs) and the session's KV cache. The rows' programs are
 * recorded, then replayed in lockstep: every row runs up to its next Q4 weight matmul, then
 * that matmul runs once for all rows (the weights are read once; each row still gets its own
 * per-row result, the contract's per-output FP32 chain). Because every row of a batch runs up
 * to the same point before the next starts, row r sees the KV rows that rows 0..r-1 stored in
 * the same layer, as token-by-token prefill does; nothing else is shared between rows.
 *
 * Models with experts are refused (PCCX_ERR_UNSUPPORTED): their steps choose experts on the
 * host between jobs, from results the recording has not computed yet.
 */
#ifndef PCCX_BATCH_PREFILL_H
#define PCCX_BATCH_PREFILL_H

#include "kernels.h"
#include "session.h"

struct pccx_batch_prefill;

/*
 * A batcher for up to max_rows tokens per batch (1..PCCX_BATCH_MAX_ROWS) and session s's
 * model and KV cache. n_threads 0 = every online CPU; impl: the Q4 kernel (kernels.h).
 */
#define PCCX_BATCH_MAX_ROWS 256u
PCCX_MUST_CHECK int pccx__batch_prefill_create(struct pccx_batch_prefill **out,
					       struct pccx_gemma_session *s, uint32_t max_rows,
					       unsigned n_threads, enum pccx_kern_impl impl,
					       pccx_diag *d);
void pccx__batch_prefill_free(struct pccx_batch_prefill *b);

/*
 * Prefill tokens[0..n) at the session's next positions without logits, in batches of
 * max_rows: the KV cache ends as n session steps without logits leave it, and s->pos
 * advances by n. On failure s->pos is where it was and the KV rows of those positions are
 * undefined (they are written again before they are read).
 */
PCCX_MUST_CHECK int pccx__batch_prefill_run(struct pccx_batch_prefill *b,
					    const uint32_t *tokens, uint32_t n, pccx_diag *d);

/* Weight bytes read so far (once per batch) and the batched Q4 matmuls that read them. */
struct pccx_batch_prefill_stats {
	uint64_t weight_bytes;
	uint64_t batched_matmuls;
};
void pccx__batch_prefill_stats(const struct pccx_batch_prefill *b,
			       struct pccx_batch_prefill_stats *st);

#endif /* PCCX_BATCH_PREFILL_H */
