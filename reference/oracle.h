/* SPDX-License-Identifier: MIT */
/*
 * The float oracle: Hugging Face's text decoder of the model's family (Gemma 1, 2, 3, 3n and
 * 4, dense or with experts; family.h, docs/reference.md "Families"; for Gemma 3n the research
 * note model-sim-anchors §1.3) in FP64 on the dequantised weights, with none of the NPU's
 * numerics: no activation quantisation, no BF16 rounding (but the BF16 embedding scales the
 * checkpoints have), libm transcendentals, an explicit sliding-window mask over a
 * full-length KV cache, the scores scaled as Hugging Face scales them, the experts chosen by
 * its own FP64 router (where two nearly tie, not always the device's choice). It emits the same stage
 * names and shapes as the NPU graph, so the two can be compared stage by stage (compare.h).
 */
#ifndef PCCX_ORACLE_H
#define PCCX_ORACLE_H

#include "gemma_model.h"

struct pccx_oracle;

typedef int (*pccx_oracle_stage_fn)(void *user, const char *name, const double *x, uint32_t rows,
				    uint32_t cols);

/*
 * An oracle for model m holding up to m->cfg.max_ctx positions, its matrix-vector products
 * split across n_threads threads (0: one per CPU; the results do not depend on the count).
 */
PCCX_MUST_CHECK int pccx__oracle_create(struct pccx_oracle **out,
					const struct pccx_gemma_model *m,
					unsigned n_threads, pccx_diag *d);
void pccx__oracle_free(struct pccx_oracle *o);
void pccx__oracle_on_stage(struct pccx_oracle *o, pccx_oracle_stage_fn fn, void *user);

/* Decode `token` at the next position; logits (vocab values, soft-capped if the model is)
 * when non-NULL. */
PCCX_MUST_CHECK int pccx__oracle_step(struct pccx_oracle *o, uint32_t token, double *logits,
				      pccx_diag *d);

#endif /* PCCX_ORACLE_H */
