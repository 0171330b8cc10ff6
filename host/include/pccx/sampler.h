/* SPDX-License-Identifier: MIT */
/*
 * Host-side next-token sampler. The NPU returns one soft-capped logit per vocabulary entry
 * (262 400 for Gemma 3n); the host turns them into the next token id.
 *
 * Determinism contract (docs/sampling.md has the full definition): for a given
 * (logits, history, config, u) the chosen token, the kept candidate set and every
 * probability are bit-identical on every machine with IEEE-754 binary32/binary64
 * arithmetic and FLT_EVAL_METHOD == 0, where u is the sampler's next uniform: the
 * n-th successful pccx_sampler_sample() call on a sampler seeded with `seed` uses the
 * n-th 53-bit uniform of PCG32(initstate = seed, initseq = PCCX_SAMPLER_RNG_STREAM).
 *
 * Order of operations per call:
 *   NaN -> -inf (+inf refused) -> repetition penalty -> [T == 0: greedy argmax]
 *   -> rank (logit descending, id ascending) -> top-k -> temperature + softmax over the top-k
 *   -> top-p -> min-p -> renormalise -> inverse-CDF draw in rank order.
 */
#ifndef PCCX_SAMPLER_H
#define PCCX_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* what follows is exported by libpccx.so */

/* PCG32 stream selector used by the sampler (the stream of O'Neill's published vectors). */
#define PCCX_SAMPLER_RNG_STREAM 54u
/* Largest vocabulary a sampler accepts (bounds the workspace it allocates). */
#define PCCX_SAMPLER_MAX_VOCAB (1u << 24)
/* penalty_last_n value meaning "the whole history passed in". */
#define PCCX_SAMPLER_PENALTY_ALL (-1)

/* Defaults (pccx_sampler_config_default); docs/sampling.md says where each comes from. */
#define PCCX_SAMPLER_DEFAULT_TEMPERATURE	1.0f
#define PCCX_SAMPLER_DEFAULT_TOP_K		64
#define PCCX_SAMPLER_DEFAULT_TOP_P		0.9f
#define PCCX_SAMPLER_DEFAULT_MIN_P		0.0f
#define PCCX_SAMPLER_DEFAULT_REP_PENALTY	1.15f
#define PCCX_SAMPLER_DEFAULT_PENALTY_LAST_N	64
#define PCCX_SAMPLER_DEFAULT_SEED		0u

typedef struct pccx_sampler_config {
	/* >= 0 and finite; 0 = greedy (argmax, ties to the lowest id). */
	float temperature;
	/* Keep the k highest logits; 0 = off. Values >= the vocabulary size are the same as off. */
	int32_t top_k;
	/* In (0, 1]: keep rank r while the mass ranked before it is < top_p; exactly 1 = off. */
	float top_p;
	/* In [0, 1]: keep rank r while p_r >= min_p * p_max; 0 = off. */
	float min_p;
	/* > 0 and finite; 1 = off. Applied once per distinct token of the window. */
	float repetition_penalty;
	/* Window: the last N entries of the history; 0 = none, PCCX_SAMPLER_PENALTY_ALL = all. */
	int32_t penalty_last_n;
	/* initstate of the PCG32 stream. */
	uint64_t seed;
} pccx_sampler_config;

/*
 * The kept candidates of one step in rank order (probability descending, ties to the lower
 * id). weights[r] = exp(z_r - z_0) (so weights[0] == 1), total = their sum accumulated in
 * rank order, probs[r] = weights[r] / total.
 */
typedef struct pccx_sampler_dist {
	size_t n;		/* >= 1 */
	const int32_t *ids;
	const double *weights;
	const double *probs;
	double total;
} pccx_sampler_dist;

typedef struct pccx_sampler pccx_sampler;

/* Fill `cfg` with the documented defaults. */
void pccx_sampler_config_default(pccx_sampler_config *cfg);

/* PCCX_ERR_INVALID with a message naming the field when a value is out of its domain. */
PCCX_MUST_CHECK int pccx_sampler_config_check(const pccx_sampler_config *cfg, pccx_diag *d);

/*
 * Create a sampler for a vocabulary of n_vocab (1 .. PCCX_SAMPLER_MAX_VOCAB) tokens, with
 * its RNG seeded from cfg->seed. The config is copied.
 */
PCCX_MUST_CHECK int pccx_sampler_create(pccx_sampler **out, const pccx_sampler_config *cfg,
					size_t n_vocab, pccx_diag *d);
void pccx_sampler_destroy(pccx_sampler *s);

/* Replace the config; the RNG stream is left where it is (use pccx_sampler_reseed). */
PCCX_MUST_CHECK int pccx_sampler_set_config(pccx_sampler *s, const pccx_sampler_config *cfg,
					    pccx_diag *d);
/* Restart the RNG stream at `seed` (also stored in the sampler's config). */
void pccx_sampler_reseed(pccx_sampler *s, uint64_t seed);

/*
 * The filtered, renormalised distribution of one step, without touching the RNG.
 * logits: n_logits == n_vocab values, not modified; NaN counts as -inf, +inf is refused
 * (PCCX_ERR_RANGE), all -inf/NaN is refused (PCCX_ERR_INVALID).
 * history: the session's token sequence so far, prompt included, oldest first (may be NULL
 * when n_history == 0); only its last penalty_last_n entries are read, and those must be
 * valid ids (PCCX_ERR_RANGE otherwise).
 * The arrays in *dist belong to the sampler and stay valid until its next call.
 */
PCCX_MUST_CHECK int pccx_sampler_distribution(pccx_sampler *s, const float *logits,
					      size_t n_logits, const int32_t *history,
					      size_t n_history, pccx_sampler_dist *dist,
					      pccx_diag *d);

/*
 * Inverse-CDF draw from a distribution with a uniform u in [0, 1):
 * t = u * total; the first rank r whose running weight sum (rank order) exceeds t;
 * if rounding leaves none, the last rank with a non-zero weight. Returns -1 when dist->n == 0.
 */
int32_t pccx_sampler_draw(const pccx_sampler_dist *dist, double u);

/*
 * One step: pccx_sampler_distribution, then one uniform from the RNG (always exactly one on
 * success, greedy included, so streams stay aligned across settings; none on failure),
 * then pccx_sampler_draw. *token receives the id.
 */
PCCX_MUST_CHECK int pccx_sampler_sample(pccx_sampler *s, const float *logits, size_t n_logits,
					const int32_t *history, size_t n_history, int32_t *token,
					pccx_diag *d);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* PCCX_SAMPLER_H */
