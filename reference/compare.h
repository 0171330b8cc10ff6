/* SPDX-License-Identifier: MIT */
/*
 * Stage-by-stage comparison of the bit-exact reference with the float oracle. The reference
 * step runs first and its stages are kept; then the oracle step runs and each of its stages
 * is compared with the reference stage of the same name.
 */
#ifndef PCCX_GEMMA_COMPARE_H
#define PCCX_GEMMA_COMPARE_H

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
int pccx__cmp_ref_stage(void *user, const char *name, const float *data, uint32_t rows,
			uint32_t cols, uint32_t stride);
/* Compare an oracle stage (pccx_oracle_stage_fn). A missing or differently shaped reference
 * stage fails with PCCX_ERR_MISMATCH. */
int pccx__cmp_oracle_stage(void *user, const char *name, const double *x, uint32_t rows,
			   uint32_t cols);

const struct pccx_stage_stat *pccx__cmp_results(const struct pccx_cmp *c, size_t *n);

/* What two logit vectors (reference, oracle) say about the next token. */
struct pccx_logit_cmp {
	uint32_t ref_top1, oracle_top1;	/* argmax, lowest id on ties */
	double kl;			/* KL(softmax(oracle) || softmax(ref)), nats */
	double cos, rel_rms;		/* as a stage's */
};

void pccx__logit_compare(const float *ref, const double *oracle, uint32_t n,
			 struct pccx_logit_cmp *out);
/* pccx__logit_compare's *same_top1 = (ref_top1 == oracle_top1) and kl. */
void pccx__logit_agreement(const float *ref, const double *oracle, uint32_t n, bool *same_top1,
			   double *kl);

/* A stage's kind: its name without the "L<n>." layer prefix; *layer = n, or -1 if none. */
const char *pccx__cmp_stage_kind(const char *name, int *layer);

#define PCCX_CMP_MAX_KINDS 64

/* One stage kind over the layers and positions added to a summary. */
struct pccx_cmp_kind {
	char kind[48];
	uint32_t count;
	double min_cos, sum_cos;
	double max_rel, sum_rel;
	double max_abs;
};

/* The comparison of a run, position by position (pccx__cmp_summary_add). */
struct pccx_cmp_summary {
	struct pccx_cmp_kind kinds[PCCX_CMP_MAX_KINDS];	/* in order of first appearance */
	size_t n_kinds;
	uint32_t positions, top1_same;
	double kl_sum, kl_max;
	double logit_cos_sum, logit_cos_min;
};

void pccx__cmp_summary_init(struct pccx_cmp_summary *s);
/* Add one position: the stage results of its step and the comparison of its logits. Kinds past
 * PCCX_CMP_MAX_KINDS are not kept. */
void pccx__cmp_summary_add(struct pccx_cmp_summary *s, const struct pccx_stage_stat *st, size_t n,
			   const struct pccx_logit_cmp *lc);

#endif /* PCCX_GEMMA_COMPARE_H */
