/* SPDX-License-Identifier: MIT */
/*
 * Internals of the host sampler shared with its tests and benchmark: the deterministic
 * exponential and the literal, full-sort statement of the sampling definition that the
 * fast path (partial selection) must match bit for bit.
 */
#ifndef PCCX_LIB_SAMPLER_H
#define PCCX_LIB_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "pccx/sampler.h"

/*
 * e^x from IEEE-754 double +, -, * only, so it is the same on every machine (libm's exp is
 * not: implementations differ in the last bit). Returns 0 for x < -700 (and for -inf and
 * NaN), +inf for x > 700, exactly 1 for x == 0. Relative error below 2^-52.
 *
 * Method: k = 32 x / ln 2 rounded half away from zero, j = k mod 32, e = (k - j) / 32;
 * r = (x - k*c_hi) - k*c_lo with ln2/32 = c_hi + c_lo split so that k*c_hi is exact
 * (|r| <= ln2/64); q = e^r - 1 by its Taylor series to r^6 in Horner form (truncation
 * < 4e-18); result (T_j + T_j*q) * 2^e with T_j = 2^(j/32) correctly rounded and 2^e exact.
 */
double pccx__sampler_exp(double x);

/* The repetition-penalty rule on one logit: x > 0 -> x / rho, otherwise x * rho (float). */
float pccx__sampler_penalise(float x, float rho);

/*
 * Reference implementation: copies and sorts all n logits, then applies each step as written
 * in docs/sampling.md. O(n log n) per call, allocates; for tests. On success *out owns its
 * arrays (free with pccx__sampler_naive_free) and out->dist describes them.
 */
typedef struct pccx_sampler_naive {
	pccx_sampler_dist dist;
	int32_t *ids;
	double *weights;
	double *probs;
} pccx_sampler_naive;

PCCX_MUST_CHECK int pccx__sampler_naive_distribution(const pccx_sampler_config *cfg,
						     const float *logits, size_t n,
						     const int32_t *history, size_t n_history,
						     pccx_sampler_naive *out, pccx_diag *d);
void pccx__sampler_naive_free(pccx_sampler_naive *nv);

/* Candidates the fast path examined in its last call (top-k / adaptive bound), for tests. */
size_t pccx__sampler_last_bound(const pccx_sampler *s);

#endif /* PCCX_LIB_SAMPLER_H */
