/* SPDX-License-Identifier: MIT */
/*
 * Stage-by-stage comparison of the bit-exact reference with the float oracle. The reference
 * step runs first and its stages are kept; then the oracle step runs and each of its stages
 * is compared with the reference stage of the same name.
 */
#ifndef PCCX_GEMMA3N_COMPARE_H
#define PCCX_GEMMA3N_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"

struct pccx_stage_stat {
	char name[64];
	uint32_t n;		/* elements */
	double cos;		/* cosine similarity (1 when both are zero) */
	double max_abs;		/* max |ref - oracle| */
	double rel_rms;		/* rms(ref - oracle) / rms(oracle) */
	double oracle_rms;
};

struct pccx_cmp;

PCCX_MUST_CHECK int pccx__cmp_create(struct pccx_cmp **out);
void pccx__cmp_free(struct pccx_cmp *c);
/* Forget the kept reference stages and the results (start of a step). */
void pccx__cmp_clear(struct pccx_cmp *c);

/* Keep a reference stage (the signature of pccx_ref_stage_fn; user = the pccx_cmp). */
int pccx__cmp_ref_stage(void *user, const char *name, const uint16_t *data, uint32_t rows,
			uint32_t cols, uint32_t stride);
/* Compare an oracle stage (pccx_oracle_stage_fn). A missing or differently shaped reference
 * stage fails with PCCX_ERR_MISMATCH. */
int pccx__cmp_oracle_stage(void *user, const char *name, const double *x, uint32_t rows,
			   uint32_t cols);

const struct pccx_stage_stat *pccx__cmp_results(const struct pccx_cmp *c, size_t *n);

/*
 * Next-token agreement of two logit vectors: *same_top1 when their argmax (lowest id on ties)
 * agree; *kl = KL(softmax(oracle) || softmax(ref)) in nats.
 */
void pccx__logit_agreement(const float *ref, const double *oracle, uint32_t n, bool *same_top1,
			   double *kl);

#endif /* PCCX_GEMMA3N_COMPARE_H */
