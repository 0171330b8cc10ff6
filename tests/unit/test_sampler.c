/* SPDX-License-Identifier: MIT */
/*
 * Host sampler and PCG32: published generator vectors, exact uniform conversions, the
 * llama.cpp-style probability vectors, the top-p boundary, greedy ties, min-p, NaN/+inf
 * handling, refused configs, fast path == full-sort reference (bit for bit), and recorded
 * token sequences that pin the behaviour.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/sampler.h"
#include "rng.h"
#include "sampler.h"

#define GEMMA_VOCAB 262400u

static pccx_sampler_config mkcfg(float t, int32_t k, float p, float minp, float rho,
				 int32_t last_n)
{
	pccx_sampler_config c;

	pccx_sampler_config_default(&c);
	c.temperature = t;
	c.top_k = k;
	c.top_p = p;
	c.min_p = minp;
	c.repetition_penalty = rho;
	c.penalty_last_n = last_n;
	return c;
}

/* Plain sampling, no filter, no penalty. */
static pccx_sampler_config plain_cfg(void)
{
	return mkcfg(1.0f, 0, 1.0f, 0.0f, 1.0f, 0);
}

static pccx_sampler *mk(const pccx_sampler_config *c, size_t n)
{
	pccx_sampler *s = NULL;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_sampler_create(&s, c, n, &d) == PCCX_OK, "%s", d.msg);
	return s;
}

static void dist_of(pccx_sampler *s, const float *l, size_t n, const int32_t *h, size_t nh,
		    pccx_sampler_dist *dist)
{
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_sampler_distribution(s, l, n, h, nh, dist, &d) == PCCX_OK, "%s",
		      d.msg);
}

/* Probability of `id` in the kept set, 0 when not kept. */
static double prob_of(const pccx_sampler_dist *dist, int32_t id)
{
	size_t r;

	for (r = 0; r < dist->n; r++)
		if (dist->ids[r] == id)
			return dist->probs[r];
	return 0.0;
}

static void logits_from_probs(float *l, const double *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		l[i] = (float)log(p[i]);
}

/* ------------------------------------------------------------------------------------------ */
/* PCG32 */

START_TEST(test_pcg32_published_vectors)
{
	static const uint32_t want[6] = {
		0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e,
	};
	pccx_rng r;
	int i;

	pccx__rng_seed(&r, 42, 54);
	for (i = 0; i < 6; i++)
		ck_assert_uint_eq(pccx__rng_next_u32(&r), want[i]);
}
END_TEST

START_TEST(test_uniform_conversions_exact)
{
	pccx_rng r;

	ck_assert(pccx__rng_u53_to_double(0, 0) == 0.0);
	ck_assert(pccx__rng_u53_to_double(0xffffffffu, 0xffffffffu) == 1.0 - 0x1p-53);
	ck_assert(pccx__rng_u53_to_double(0x80000000u, 0) == 0.5);
	/* The low 11 bits of the second output are discarded. */
	ck_assert(pccx__rng_u53_to_double(0, 0x7ffu) == 0.0);
	ck_assert(pccx__rng_u53_to_double(0, 0x800u) == 0x1p-53);
	/* (0xa15c02b77b47f409 >> 11) = 0x142b8056ef68fe = 5677329748551934, times 2^-53. */
	ck_assert(pccx__rng_u53_to_double(0xa15c02b7u, 0x7b47f409u) == 5677329748551934.0 * 0x1p-53);

	ck_assert(pccx__rng_u24_to_float(0) == 0.0f);
	ck_assert(pccx__rng_u24_to_float(0xffu) == 0.0f);
	ck_assert(pccx__rng_u24_to_float(0x100u) == 0x1p-24f);
	ck_assert(pccx__rng_u24_to_float(0xffffffffu) == 1.0f - 0x1p-24f);

	/* pccx__rng_uniform takes the first two outputs, first one as the high word. */
	pccx__rng_seed(&r, 42, 54);
	ck_assert(pccx__rng_uniform(&r) == 5677329748551934.0 * 0x1p-53);
	ck_assert_uint_eq(pccx__rng_next_u32(&r), 0xba1d3330u);
	ck_assert(pccx__rng_uniform_float(&r) == (float)(0x83d2f293u >> 8) * 0x1p-24f);
	ck_assert_uint_eq(pccx__rng_next_u32(&r), 0xbfa4784bu);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Deterministic exp */

START_TEST(test_exp_exact_points_and_bound)
{
	double x, maxrel = 0.0;

	ck_assert(pccx__sampler_exp(0.0) == 1.0);
	ck_assert(pccx__sampler_exp(-700.5) == 0.0);
	ck_assert(pccx__sampler_exp(-INFINITY) == 0.0);
	ck_assert(pccx__sampler_exp(NAN) == 0.0);
	ck_assert(pccx__sampler_exp(701.0) == INFINITY);
	/*
	 * Pins the implementation: values as this function rounds them. The contract is this
	 * function, not the true value: the first two are correctly rounded, the third is one
	 * ulp above the correctly rounded 0x1.e3b40ebefcd7ep-2.
	 */
	ck_assert(pccx__sampler_exp(-1.0) == 0x1.78b56362cef38p-2);
	ck_assert(pccx__sampler_exp(-10.0) == 0x1.7cd79b5647c9bp-15);
	ck_assert(pccx__sampler_exp(-0.75) == 0x1.e3b40ebefcd7fp-2);
	/* Documented bound: relative error <= 2^-52 against the C library's exp. */
	for (x = -700.0; x <= 0.0; x += 0.0137) {
		double a = pccx__sampler_exp(x), b = exp(x), e = fabs(a - b) / b;

		if (e > maxrel)
			maxrel = e;
	}
	ck_assert_msg(maxrel <= 0x1p-52, "max relative error %g", maxrel);
}
END_TEST

START_TEST(test_penalise_rule)
{
	ck_assert(pccx__sampler_penalise(2.0f, 2.0f) == 1.0f);
	ck_assert(pccx__sampler_penalise(-2.0f, 2.0f) == -4.0f);
	ck_assert(pccx__sampler_penalise(0.0f, 2.0f) == 0.0f);
	ck_assert(pccx__sampler_penalise(-INFINITY, 1.15f) == -INFINITY);
	ck_assert(pccx__sampler_penalise(3.0f, 1.15f) == 3.0f / 1.15f);
	ck_assert(pccx__sampler_penalise(-3.0f, 1.15f) == -3.0f * 1.15f);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* llama.cpp-style probability vectors (tests/test-sampling.cpp); 1e-6 is the precision at
 * which those expectations are written, not a property of this sampler. */

static void expect_probs(pccx_sampler_config c, const double *in, size_t n,
			 const int32_t *h, size_t nh, const double *want)
{
	float l[8];
	pccx_sampler *s = mk(&c, n);
	pccx_sampler_dist dist;
	size_t i;

	logits_from_probs(l, in, n);
	dist_of(s, l, n, h, nh, &dist);
	for (i = 0; i < n; i++)
		ck_assert_msg(fabs(prob_of(&dist, (int32_t)i) - want[i]) < 1e-6,
			      "token %zu: %.9f, want %.9f", i, prob_of(&dist, (int32_t)i), want[i]);
	pccx_sampler_destroy(s);
}

static const double P4[4] = { 0.1, 0.2, 0.3, 0.4 };

START_TEST(test_llama_top_k)
{
	pccx_sampler_config c = plain_cfg();
	static const double k1[4] = { 0, 0, 0, 1 };
	static const double k3[4] = { 0, 0.222222222, 0.333333333, 0.444444444 };
	pccx_sampler *s;
	pccx_sampler_dist dist;
	float l[4];

	c.top_k = 1;
	expect_probs(c, P4, 4, NULL, 0, k1);
	c.top_k = 3;
	expect_probs(c, P4, 4, NULL, 0, k3);
	c.top_k = 4;
	expect_probs(c, P4, 4, NULL, 0, P4);
	c.top_k = 0;
	expect_probs(c, P4, 4, NULL, 0, P4);

	/* k = 4 keeps all four, in rank order. */
	c.top_k = 4;
	s = mk(&c, 4);
	logits_from_probs(l, P4, 4);
	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 4);
	ck_assert_int_eq(dist.ids[0], 3);
	ck_assert_int_eq(dist.ids[1], 2);
	ck_assert_int_eq(dist.ids[2], 1);
	ck_assert_int_eq(dist.ids[3], 0);
	ck_assert(dist.weights[0] == 1.0);
	pccx_sampler_destroy(s);
}
END_TEST

START_TEST(test_llama_top_p)
{
	pccx_sampler_config c = plain_cfg();
	static const double p07[4] = { 0, 0, 0.428571429, 0.571428571 };
	static const double p08[4] = { 0, 0.222222222, 0.333333333, 0.444444444 };
	static const double p0[4] = { 0, 0, 0, 1 };

	/*
	 * 0.4 + 0.3 reaches 0.7: the mass ranked before 0.2 is 0.7, not < 0.7, so 0.2 is
	 * dropped and the token that reached 0.7 (0.3) is kept, as in llama.cpp. In floating
	 * point the computed mass before 0.2 is 0.700000002 of S and 0.7f is 0.699999988, so
	 * the outcome at this exact-arithmetic boundary rests on a 1.4e-8 margin; the boundary
	 * rule itself is checked with exact sums in test_top_p_exact_boundary.
	 */
	c.top_p = 0.7f;
	expect_probs(c, P4, 4, NULL, 0, p07);
	c.top_p = 0.8f;
	expect_probs(c, P4, 4, NULL, 0, p08);
	/* p = 0 is refused; the smallest positive p keeps exactly one token. */
	c.top_p = 1e-7f;
	expect_probs(c, P4, 4, NULL, 0, p0);
	c.top_p = 1.0f;
	expect_probs(c, P4, 4, NULL, 0, P4);
}
END_TEST

START_TEST(test_hf_top_p_examples)
{
	static const double a[4] = { 0.3, 0.1, 0.1, 0.5 }, b[4] = { 0.15, 0.3, 0.3, 0.25 };
	pccx_sampler_config c = plain_cfg();
	pccx_sampler *s;
	pccx_sampler_dist dist;
	float l[4];

	c.top_p = 0.8f;
	s = mk(&c, 4);
	/* Same as HF: mass before 0.25 is 0.6 (kept), before 0.15 it is 0.85 (dropped). */
	logits_from_probs(l, b, 4);
	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 3);
	ck_assert_int_eq(dist.ids[0], 1);
	ck_assert_int_eq(dist.ids[1], 2);
	ck_assert_int_eq(dist.ids[2], 3);
	/*
	 * Documented difference: HF keeps {0.5, 0.3} because their mass is exactly 0.8. Here
	 * the mass before the first 0.1 computes to 0.800000004 of S, below 0.8f = 0.800000012,
	 * so that 0.1 (the lower id, 1) is kept too.
	 */
	logits_from_probs(l, a, 4);
	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 3);
	ck_assert_int_eq(dist.ids[0], 3);
	ck_assert_int_eq(dist.ids[1], 0);
	ck_assert_int_eq(dist.ids[2], 1);
	pccx_sampler_destroy(s);
}
END_TEST

START_TEST(test_top_p_exact_boundary)
{
	/* Four equal logits: weights 1, 1, 1, 1, S = 4, all sums exact. */
	const float l[4] = { 0.5f, 0.5f, 0.5f, 0.5f };
	pccx_sampler_config c = plain_cfg();
	pccx_sampler *s;
	pccx_sampler_dist dist;

	/* p * S = 2: ranks 0 (before: 0) and 1 (before: 1) kept, rank 2 (before: 2) not. */
	c.top_p = 0.5f;
	s = mk(&c, 4);
	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 2);
	/* Equal probabilities rank by lower id. */
	ck_assert_int_eq(dist.ids[0], 0);
	ck_assert_int_eq(dist.ids[1], 1);
	ck_assert(dist.probs[0] == 0.5 && dist.probs[1] == 0.5);

	c.top_p = 0.25f;	/* p * S = 1: only rank 0 */
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 1);
	ck_assert_int_eq(dist.ids[0], 0);

	c.top_p = 0.5f + 0x1p-24f;	/* just above 2: rank 2 starts below p and is kept */
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 3);
	pccx_sampler_destroy(s);
}
END_TEST

START_TEST(test_llama_penalties)
{
	static const double flat[5] = { 0.2, 0.2, 0.2, 0.2, 0.2 };
	static const double w0[5] = { 0, 0.25, 0.25, 0.25, 0.25 };
	static const double w012[5] = { 0, 0, 0, 0.5, 0.5 };
	static const int32_t h0[] = { 0 }, h012[] = { 0, 1, 2 }, h01200[] = { 0, 1, 2, 0, 0 };
	pccx_sampler_config c = mkcfg(1.0f, 0, 1.0f, 0.0f, 50.0f, PCCX_SAMPLER_PENALTY_ALL);
	pccx_sampler *s1, *s2;
	pccx_sampler_dist a, b;
	float l[5];

	expect_probs(c, flat, 5, h0, 1, w0);
	expect_probs(c, flat, 5, h012, 3, w012);
	expect_probs(c, flat, 5, h01200, 5, w012);

	/* Repeats do not compound: {0,1,2,0,0} is bit-identical to {0,1,2}. */
	logits_from_probs(l, flat, 5);
	s1 = mk(&c, 5);
	s2 = mk(&c, 5);
	dist_of(s1, l, 5, h012, 3, &a);
	dist_of(s2, l, 5, h01200, 5, &b);
	ck_assert_uint_eq(a.n, b.n);
	ck_assert(memcmp(a.ids, b.ids, a.n * sizeof(*a.ids)) == 0);
	ck_assert(memcmp(a.probs, b.probs, a.n * sizeof(*a.probs)) == 0);
	pccx_sampler_destroy(s1);
	pccx_sampler_destroy(s2);
}
END_TEST

START_TEST(test_penalty_sign_and_window)
{
	pccx_sampler_config c = mkcfg(0.0f, 0, 1.0f, 0.0f, 1.15f, 64);
	const float pos[2] = { 3.0f, 2.9f };	/* 3 / 1.15 = 2.61 < 2.9 */
	const float neg[2] = { -1.0f, -1.1f };	/* -1 * 1.15 = -1.15 < -1.1 */
	const float three[3] = { 5.0f, 4.8f, 4.7f };
	static const int32_t h0[] = { 0 }, h01[] = { 0, 1 }, h012[] = { 0, 1, 2 };
	pccx_sampler *s = mk(&c, 2), *s3;
	int32_t t;

	ck_assert_int_eq(pccx_sampler_sample(s, pos, 2, NULL, 0, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 0);
	ck_assert_int_eq(pccx_sampler_sample(s, pos, 2, h0, 1, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 1);
	ck_assert_int_eq(pccx_sampler_sample(s, neg, 2, h0, 1, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 1);
	/* Both penalised: 3/1.15 > 2.9/1.15 again. */
	ck_assert_int_eq(pccx_sampler_sample(s, pos, 2, h01, 2, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 0);
	pccx_sampler_destroy(s);

	/* Window of the last 2: token 0 (oldest) is not penalised and wins. */
	c.penalty_last_n = 2;
	s3 = mk(&c, 3);
	ck_assert_int_eq(pccx_sampler_sample(s3, three, 3, h012, 3, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 0);
	/* Whole history {0, 1}: 5 / 1.15 = 4.35 and 4.8 / 1.15 = 4.17 lose to the free 4.7. */
	c.penalty_last_n = PCCX_SAMPLER_PENALTY_ALL;
	ck_assert_int_eq(pccx_sampler_set_config(s3, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s3, three, 3, h01, 2, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 2);
	/* penalty_last_n = 0: no penalty at all. */
	c.penalty_last_n = 0;
	ck_assert_int_eq(pccx_sampler_set_config(s3, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s3, three, 3, h01, 2, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 0);
	pccx_sampler_destroy(s3);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Greedy, min-p, draw, RNG alignment */

START_TEST(test_greedy_ties_lowest_id)
{
	pccx_sampler_config c = mkcfg(0.0f, 0, 1.0f, 0.0f, 1.0f, 0);
	const float a[5] = { 1.0f, 5.0f, 2.0f, 5.0f, 5.0f };
	const float b[4] = { NAN, 7.0f, NAN, 7.0f };
	const float e[3] = { -2.0f, -2.0f, -2.0f };
	pccx_sampler *s = mk(&c, 5), *s4 = mk(&c, 4), *s3 = mk(&c, 3);
	pccx_sampler_dist dist;
	int32_t t;
	int i;

	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(pccx_sampler_sample(s, a, 5, NULL, 0, &t, NULL), PCCX_OK);
		ck_assert_int_eq(t, 1);
	}
	ck_assert_int_eq(pccx_sampler_sample(s4, b, 4, NULL, 0, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 1);
	ck_assert_int_eq(pccx_sampler_sample(s3, e, 3, NULL, 0, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 0);
	dist_of(s, a, 5, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 1);
	ck_assert(dist.probs[0] == 1.0);

	/* top_k = 1 with T > 0 is greedy too and breaks the tie the same way. */
	c = mkcfg(1.0f, 1, 1.0f, 0.0f, 1.0f, 0);
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s, a, 5, NULL, 0, &t, NULL), PCCX_OK);
	ck_assert_int_eq(t, 1);
	pccx_sampler_destroy(s);
	pccx_sampler_destroy(s4);
	pccx_sampler_destroy(s3);
}
END_TEST

START_TEST(test_min_p)
{
	pccx_sampler_config c = plain_cfg();
	static const double m049[4] = { 0, 0.222222222, 0.333333333, 0.444444444 };
	static const double m074[4] = { 0, 0, 0.428571429, 0.571428571 };
	static const double m076[4] = { 0, 0, 0, 1 };

	/* Relative to the best (0.4): 0.2 / 0.4 = 0.5, 0.3 / 0.4 = 0.75. */
	c.min_p = 0.49f;
	expect_probs(c, P4, 4, NULL, 0, m049);
	c.min_p = 0.74f;
	expect_probs(c, P4, 4, NULL, 0, m074);
	c.min_p = 0.76f;
	expect_probs(c, P4, 4, NULL, 0, m076);
	c.min_p = 1.0f;
	expect_probs(c, P4, 4, NULL, 0, m076);
}
END_TEST

START_TEST(test_draw_inverse_cdf)
{
	static const int32_t ids[4] = { 7, 3, 9, 1 };
	static const double w[4] = { 1.0, 1.0, 2.0, 0.0 };
	static const double p[4] = { 0.25, 0.25, 0.5, 0.0 };
	pccx_sampler_dist dist = { 4, ids, w, p, 4.0 };

	ck_assert_int_eq(pccx_sampler_draw(&dist, 0.0), 7);
	ck_assert_int_eq(pccx_sampler_draw(&dist, 0.25 - 0x1p-53), 7);
	/* t = 1 exactly: the first running sum that exceeds t is 2 (rank 1). */
	ck_assert_int_eq(pccx_sampler_draw(&dist, 0.25), 3);
	ck_assert_int_eq(pccx_sampler_draw(&dist, 0.5), 9);
	ck_assert_int_eq(pccx_sampler_draw(&dist, 1.0 - 0x1p-53), 9);
	/* Out of range u: falls back to the last rank with a non-zero weight. */
	ck_assert_int_eq(pccx_sampler_draw(&dist, 1.0), 9);
	dist.n = 0;
	ck_assert_int_eq(pccx_sampler_draw(&dist, 0.5), -1);
}
END_TEST

START_TEST(test_one_uniform_per_step)
{
	/*
	 * Step 1 greedy, step 2 sampled must use the second uniform of the stream; a failed
	 * call must consume nothing.
	 */
	const float l[6] = { 0.1f, 0.4f, -0.3f, 0.2f, 0.0f, 0.35f };
	pccx_sampler_config g = mkcfg(0.0f, 0, 1.0f, 0.0f, 1.0f, 0), c = plain_cfg();
	pccx_sampler *s, *ref;
	pccx_sampler_dist dist;
	pccx_rng r;
	uint64_t seed;
	int32_t t;

	for (seed = 0; seed < 200; seed++) {
		double u1, u2;

		g.seed = seed;
		s = mk(&g, 6);
		ref = mk(&c, 6);
		pccx__rng_seed(&r, seed, PCCX_SAMPLER_RNG_STREAM);
		u1 = pccx__rng_uniform(&r);
		u2 = pccx__rng_uniform(&r);
		(void)u1;
		ck_assert_int_eq(pccx_sampler_sample(s, l, 5, NULL, 0, &t, NULL),
				 PCCX_ERR_INVALID);
		ck_assert_int_eq(pccx_sampler_sample(s, l, 6, NULL, 0, &t, NULL), PCCX_OK);
		ck_assert_int_eq(t, 1);
		ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
		ck_assert_int_eq(pccx_sampler_sample(s, l, 6, NULL, 0, &t, NULL), PCCX_OK);
		dist_of(ref, l, 6, NULL, 0, &dist);
		ck_assert_int_eq(t, pccx_sampler_draw(&dist, u2));
		pccx_sampler_destroy(s);
		pccx_sampler_destroy(ref);
	}
}
END_TEST

START_TEST(test_reseed_restarts_stream)
{
	const float l[4] = { 0.0f, 0.1f, 0.2f, 0.3f };
	pccx_sampler_config c = plain_cfg();
	pccx_sampler *s;
	int32_t a[32], b[32];
	int i;

	c.seed = 99;
	s = mk(&c, 4);
	for (i = 0; i < 32; i++)
		ck_assert_int_eq(pccx_sampler_sample(s, l, 4, NULL, 0, &a[i], NULL), PCCX_OK);
	pccx_sampler_reseed(s, 99);
	for (i = 0; i < 32; i++)
		ck_assert_int_eq(pccx_sampler_sample(s, l, 4, NULL, 0, &b[i], NULL), PCCX_OK);
	ck_assert(memcmp(a, b, sizeof(a)) == 0);
	pccx_sampler_destroy(s);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Input handling and refused configs */

START_TEST(test_nan_is_minus_inf_and_inf_refused)
{
	const float l[4] = { NAN, 1.0f, NAN, 0.5f };
	const float allnan[3] = { NAN, -INFINITY, NAN };
	const float pinf[4] = { 0.0f, 1.0f, INFINITY, 0.5f };
	pccx_sampler_config c = plain_cfg();
	pccx_sampler *s = mk(&c, 4), *s3 = mk(&c, 3);
	pccx_sampler_dist dist;
	pccx_diag d = { 0 };
	int32_t t;
	static const int32_t h2[] = { 2 };

	dist_of(s, l, 4, NULL, 0, &dist);
	ck_assert_uint_eq(dist.n, 2);
	ck_assert_int_eq(dist.ids[0], 1);
	ck_assert_int_eq(dist.ids[1], 3);
	ck_assert(dist.weights[1] == pccx__sampler_exp(-0.5));

	ck_assert_int_eq(pccx_sampler_sample(s3, allnan, 3, NULL, 0, &t, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "-inf or NaN"));
	c.temperature = 0.0f;
	ck_assert_int_eq(pccx_sampler_set_config(s3, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s3, allnan, 3, NULL, 0, &t, &d), PCCX_ERR_INVALID);

	ck_assert_int_eq(pccx_sampler_sample(s, pinf, 4, NULL, 0, &t, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "logits[2]"));
	c = plain_cfg();
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s, pinf, 4, NULL, 0, &t, &d), PCCX_ERR_RANGE);
	/* Also when the +inf token is one being penalised. */
	c.repetition_penalty = 1.15f;
	c.penalty_last_n = 64;
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s, pinf, 4, h2, 1, &t, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "logits[2]"));
	pccx_sampler_destroy(s);
	pccx_sampler_destroy(s3);
}
END_TEST

static void expect_refused(pccx_sampler_config c, const char *field)
{
	pccx_sampler *s = NULL;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_sampler_config_check(&c, &d), PCCX_ERR_INVALID);
	ck_assert_msg(strstr(d.msg, field) != NULL, "'%s' not named in '%s'", field, d.msg);
	ck_assert_int_eq(pccx_sampler_create(&s, &c, 16, NULL), PCCX_ERR_INVALID);
	ck_assert_ptr_null(s);
}

/*
 * A penalty below 1 divides a positive logit by it: one past FLT_MAX * rho would be +inf, and
 * both paths refuse it as they refuse an input +inf, naming the token.
 */
START_TEST(test_penalised_overflow_refused)
{
	static const float l[4] = { 1.0f, 3e38f, 2.0f, 3.0f };
	static const int32_t h[1] = { 1 };
	pccx_sampler_config c;
	pccx_sampler_naive nv;
	pccx_sampler_dist dist;
	pccx_sampler *s;
	pccx_diag d = { 0 };
	unsigned k;

	pccx_sampler_config_default(&c);
	c.repetition_penalty = 0.5f;
	for (k = 0; k < 3; k++) {
		c.temperature = k == 0 ? 0.0f : 1.0f;   /* greedy, top-k, every token */
		c.top_k = k == 2 ? 0 : 2;
		c.top_p = 1.0f;
		s = mk(&c, 4);
		ck_assert_int_eq(pccx_sampler_distribution(s, l, 4, h, 1, &dist, &d),
				 PCCX_ERR_RANGE);
		ck_assert_msg(strstr(d.msg, "logits[1]") && strstr(d.msg, "penalty"), "%s", d.msg);
		ck_assert_int_eq(pccx__sampler_naive_distribution(&c, l, 4, h, 1, &nv, &d),
				 PCCX_ERR_RANGE);
		ck_assert_msg(strstr(d.msg, "logits[1]") && strstr(d.msg, "penalty"), "%s", d.msg);
		/* a penalty of 1.5 on the same logits is fine */
		c.repetition_penalty = 1.5f;
		ck_assert_int_eq(pccx_sampler_set_config(s, &c, &d), PCCX_OK);
		dist_of(s, l, 4, h, 1, &dist);
		c.repetition_penalty = 0.5f;
		pccx_sampler_destroy(s);
	}
}
END_TEST

START_TEST(test_invalid_configs_refused)
{
	pccx_sampler_config c, ok;
	pccx_sampler *s;
	pccx_diag d = { 0 };

	pccx_sampler_config_default(&ok);
	ck_assert_int_eq(pccx_sampler_config_check(&ok, NULL), PCCX_OK);

	c = ok; c.temperature = -0.5f; expect_refused(c, "temperature");
	c = ok; c.temperature = NAN; expect_refused(c, "temperature");
	c = ok; c.temperature = INFINITY; expect_refused(c, "temperature");
	c = ok; c.top_k = -1; expect_refused(c, "top_k");
	c = ok; c.top_p = 0.0f; expect_refused(c, "top_p");
	c = ok; c.top_p = -0.1f; expect_refused(c, "top_p");
	c = ok; c.top_p = 1.0001f; expect_refused(c, "top_p");
	c = ok; c.top_p = NAN; expect_refused(c, "top_p");
	c = ok; c.min_p = -0.01f; expect_refused(c, "min_p");
	c = ok; c.min_p = 1.5f; expect_refused(c, "min_p");
	c = ok; c.min_p = NAN; expect_refused(c, "min_p");
	c = ok; c.repetition_penalty = 0.0f; expect_refused(c, "repetition_penalty");
	c = ok; c.repetition_penalty = -1.15f; expect_refused(c, "repetition_penalty");
	c = ok; c.repetition_penalty = NAN; expect_refused(c, "repetition_penalty");
	c = ok; c.repetition_penalty = INFINITY; expect_refused(c, "repetition_penalty");
	c = ok; c.penalty_last_n = -2; expect_refused(c, "penalty_last_n");

	/* set_config refuses and keeps the old config. */
	s = mk(&ok, 16);
	c = ok;
	c.top_p = 2.0f;
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "top_p"));
	pccx_sampler_destroy(s);

	ck_assert_int_eq(pccx_sampler_create(&s, &ok, 0, &d), PCCX_ERR_RANGE);
	ck_assert_int_eq(pccx_sampler_create(&s, &ok, PCCX_SAMPLER_MAX_VOCAB + 1u, &d),
			 PCCX_ERR_RANGE);
}
END_TEST

START_TEST(test_bad_call_arguments)
{
	const float l[4] = { 0.0f, 1.0f, 2.0f, 3.0f };
	static const int32_t bad[] = { 1, 4, 2 }, neg[] = { -1 };
	pccx_sampler_config c;
	pccx_sampler *s;
	pccx_diag d = { 0 };
	int32_t t;

	pccx_sampler_config_default(&c);
	s = mk(&c, 4);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 3, NULL, 0, &t, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "3 logits"));
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, bad, 3, &t, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "history[1] = 4"));
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, neg, 1, &t, &d), PCCX_ERR_RANGE);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, NULL, 2, &t, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_sampler_sample(s, NULL, 4, NULL, 0, &t, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, NULL, 0, NULL, &d), PCCX_ERR_INVALID);
	/* Outside the window, an invalid id is not read. */
	c.penalty_last_n = 1;
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, bad, 3, &t, &d), PCCX_OK);
	/* Bitmap is left clean after a refused history: the same ids penalise normally. */
	c.penalty_last_n = 64;
	c.temperature = 0.0f;
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, bad, 3, &t, &d), PCCX_ERR_RANGE);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 4, NULL, 0, &t, &d), PCCX_OK);
	ck_assert_int_eq(t, 3);
	pccx_sampler_destroy(s);
}
END_TEST

START_TEST(test_logits_not_modified)
{
	float l[64], copy[64];
	int32_t h[10];
	pccx_sampler_config c;
	pccx_sampler *s;
	pccx_rng r;
	int32_t t;
	int i;

	pccx__rng_seed(&r, 5, 6);
	for (i = 0; i < 64; i++)
		l[i] = pccx__rng_uniform_float(&r) * 8.0f - 4.0f;
	for (i = 0; i < 10; i++)
		h[i] = i * 3;
	memcpy(copy, l, sizeof(l));
	pccx_sampler_config_default(&c);
	s = mk(&c, 64);
	ck_assert_int_eq(pccx_sampler_sample(s, l, 64, h, 10, &t, NULL), PCCX_OK);
	ck_assert(memcmp(l, copy, sizeof(l)) == 0);
	pccx_sampler_destroy(s);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Fast path == full-sort reference */

static void fill_random_logits(pccx_rng *r, float *l, size_t n)
{
	uint32_t kind = pccx__rng_next_u32(r) % 7;
	float scale = 0.05f + pccx__rng_uniform_float(r) * 40.0f;
	size_t i;

	for (i = 0; i < n; i++) {
		float x = (pccx__rng_uniform_float(r) - 0.5f) * scale;

		switch (kind) {
		case 1:		/* quantised: many exact ties */
			x = (float)(int)(x * 2.0f) * 0.5f;
			break;
		case 2:		/* all equal */
			x = 1.25f;
			break;
		case 3:		/* NaN / -inf sprinkled */
			if (pccx__rng_next_u32(r) % 50 == 0)
				x = (pccx__rng_next_u32(r) & 1) ? NAN : -INFINITY;
			break;
		case 4:		/* soft-capped range with a steep tail */
			x = x * x * x / (scale * scale) * 4.0f;
			break;
		case 6: {	/* zeros of both signs (equal, so tied) and subnormals */
			static const float tiny[6] = { 0.0f, -0.0f, 0x1p-149f, -0x1p-149f,
						       0x1p-130f, -0x1p-130f };

			if (pccx__rng_next_u32(r) % 4)
				x = tiny[pccx__rng_next_u32(r) % 6];
			break;
		}
		default:
			break;
		}
		l[i] = x;
	}
	if (kind == 0 || kind == 5) {
		/* A few dominant tokens, as in real decoder logits. */
		uint32_t peaks = pccx__rng_next_u32(r) % 12;

		for (i = 0; i < peaks; i++)
			l[pccx__rng_next_u32(r) % n] = scale * (0.5f + pccx__rng_uniform_float(r));
	}
}

static pccx_sampler_config random_cfg(pccx_rng *r, size_t n)
{
	static const float temps[] = { 0.0f, 0.05f, 0.5f, 0.8f, 1.0f, 1.0f, 1.5f, 7.0f };
	static const float tps[] = { 1.0f, 1.0f, 0.9f, 0.95f, 0.5f, 0.1f, 1e-7f, 0.999f };
	static const float mps[] = { 0.0f, 0.0f, 0.0f, 0.05f, 0.2f, 1.0f };
	static const float rhos[] = { 1.0f, 1.15f, 1.15f, 0.7f, 50.0f };
	static const int32_t lastn[] = { 0, 64, 64, -1, 3 };
	int32_t ks[9] = { 0, 0, 0, 1, 2, 40, 64, 1000, 0 };
	pccx_sampler_config c;

	ks[8] = (int32_t)n + (int32_t)(pccx__rng_next_u32(r) % 3);
	pccx_sampler_config_default(&c);
	c.temperature = temps[pccx__rng_next_u32(r) % 8];
	c.top_k = ks[pccx__rng_next_u32(r) % 9];
	c.top_p = tps[pccx__rng_next_u32(r) % 8];
	c.min_p = mps[pccx__rng_next_u32(r) % 6];
	c.repetition_penalty = rhos[pccx__rng_next_u32(r) % 5];
	c.penalty_last_n = lastn[pccx__rng_next_u32(r) % 5];
	c.seed = pccx__rng_next_u32(r);
	return c;
}

static void compare_paths(pccx_rng *r, size_t n, int iters)
{
	float *l = malloc(n * sizeof(*l));
	int32_t h[300];
	pccx_sampler *s = NULL;
	int it;

	ck_assert_ptr_nonnull(l);
	for (it = 0; it < iters; it++) {
		pccx_sampler_config c = random_cfg(r, n);
		pccx_sampler_naive nv;
		pccx_sampler_dist fast;
		pccx_diag d = { 0 };
		size_t nh = pccx__rng_next_u32(r) % 300, i;
		uint32_t span = pccx__rng_next_u32(r) & 1 ? 20 : (uint32_t)n;
		int rc;

		for (i = 0; i < nh; i++)
			h[i] = (int32_t)(pccx__rng_next_u32(r) % (span < n ? span : n));
		fill_random_logits(r, l, n);
		if (!s)
			s = mk(&c, n);
		ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
		rc = pccx__sampler_naive_distribution(&c, l, n, h, nh, &nv, &d);
		if (rc) {
			/* Only all -inf/NaN vectors are refused; the fast path must agree. */
			ck_assert_int_eq(rc, PCCX_ERR_INVALID);
			ck_assert_int_eq(pccx_sampler_distribution(s, l, n, h, nh, &fast, NULL),
					 rc);
			continue;
		}
		dist_of(s, l, n, h, nh, &fast);
		ck_assert_msg(fast.n == nv.dist.n, "it %d n %zu: %zu kept vs %zu (T %g k %d p %g)",
			      it, n, fast.n, nv.dist.n, (double)c.temperature, (int)c.top_k,
			      (double)c.top_p);
		ck_assert(memcmp(fast.ids, nv.dist.ids, fast.n * sizeof(*fast.ids)) == 0);
		ck_assert(memcmp(fast.weights, nv.dist.weights, fast.n * sizeof(double)) == 0);
		ck_assert(memcmp(fast.probs, nv.dist.probs, fast.n * sizeof(double)) == 0);
		ck_assert(memcmp(&fast.total, &nv.dist.total, sizeof(double)) == 0);
		for (i = 0; i < 4; i++) {
			double u = i == 0 ? 0.0 : i == 1 ? 1.0 - 0x1p-53 : pccx__rng_uniform(r);

			ck_assert_int_eq(pccx_sampler_draw(&fast, u),
					 pccx_sampler_draw(&nv.dist, u));
		}
		pccx__sampler_naive_free(&nv);
	}
	pccx_sampler_destroy(s);
	free(l);
}

START_TEST(test_fast_equals_full_sort_small)
{
	pccx_rng r;
	int i;

	pccx__rng_seed(&r, 2024, 1);
	for (i = 0; i < 3000; i++)
		compare_paths(&r, 1 + pccx__rng_next_u32(&r) % 700, 1);
	for (i = 0; i < 20; i++)
		compare_paths(&r, 1000 + pccx__rng_next_u32(&r) % 20000, 10);
}
END_TEST

START_TEST(test_fast_equals_full_sort_gemma_vocab)
{
	pccx_rng r;

	pccx__rng_seed(&r, 262400, 2);
	compare_paths(&r, GEMMA_VOCAB, 1000);
}
END_TEST

START_TEST(test_top_k_at_vocab_equals_off)
{
	pccx_sampler_config a = plain_cfg(), b;
	pccx_sampler *sa, *sb;
	pccx_sampler_dist da, db;
	float l[500];
	pccx_rng r;

	pccx__rng_seed(&r, 11, 12);
	fill_random_logits(&r, l, 500);
	a.top_p = 0.9f;
	b = a;
	b.top_k = 500;
	sa = mk(&a, 500);
	sb = mk(&b, 500);
	dist_of(sa, l, 500, NULL, 0, &da);
	dist_of(sb, l, 500, NULL, 0, &db);
	ck_assert_uint_eq(da.n, db.n);
	ck_assert(memcmp(da.probs, db.probs, da.n * sizeof(double)) == 0);
	pccx_sampler_destroy(sa);
	pccx_sampler_destroy(sb);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Recorded behaviour */

/*
 * Logits for step `step`: a uniform floor in [-10, 6) plus 24 peaks in [4, 14), all made from
 * PCG32(1000 + step, 7) with float arithmetic only (no libm), so the input is the same on
 * every machine.
 */
static void recorded_logits(float *l, size_t n, unsigned step)
{
	pccx_rng r;
	size_t i;

	pccx__rng_seed(&r, 1000u + step, 7);
	for (i = 0; i < n; i++)
		l[i] = pccx__rng_uniform_float(&r) * 16.0f - 10.0f;
	for (i = 0; i < 24; i++) {
		uint32_t id = pccx__rng_next_u32(&r) % (uint32_t)n;

		l[id] = 4.0f + pccx__rng_uniform_float(&r) * 10.0f;
	}
}

/*
 * Runs `steps` sampling steps on the recorded logits; each step is also checked against the
 * full-sort reference drawn with the stream's n-th uniform. *max_bound receives the largest
 * candidate bound the fast path used.
 */
static void run_recorded(const pccx_sampler_config *c, int32_t *out, unsigned steps,
			 size_t *max_bound)
{
	float *l = malloc(GEMMA_VOCAB * sizeof(*l));
	int32_t h[64];
	pccx_sampler *s = mk(c, GEMMA_VOCAB);
	pccx_rng r;
	unsigned t;

	ck_assert_ptr_nonnull(l);
	pccx__rng_seed(&r, c->seed, PCCX_SAMPLER_RNG_STREAM);
	*max_bound = 0;
	/* A fixed "prompt" of 8 tokens, then each sampled token is appended. */
	for (t = 0; t < 8; t++)
		h[t] = (int32_t)(t * 32771u % GEMMA_VOCAB);
	for (t = 0; t < steps; t++) {
		pccx_sampler_naive nv;

		recorded_logits(l, GEMMA_VOCAB, t);
		ck_assert_int_eq(pccx_sampler_sample(s, l, GEMMA_VOCAB, h, 8 + t, &out[t], NULL),
				 PCCX_OK);
		if (pccx__sampler_last_bound(s) > *max_bound)
			*max_bound = pccx__sampler_last_bound(s);
		ck_assert_int_eq(pccx__sampler_naive_distribution(c, l, GEMMA_VOCAB, h, 8 + t, &nv,
								  NULL), PCCX_OK);
		ck_assert_int_eq(out[t], pccx_sampler_draw(&nv.dist, pccx__rng_uniform(&r)));
		pccx__sampler_naive_free(&nv);
		h[8 + t] = out[t];
	}
	pccx_sampler_destroy(s);
	free(l);
}

/*
 * The expected tokens were produced once by this implementation (and agree with the
 * full-sort reference, which the comparison tests hold equal to it) and recorded here.
 * They are not derived from another program: the point is that any change in the order of
 * operations, the rounding, the RNG or its consumption changes them and fails the test.
 */
static const int32_t recorded_default[16] = {
	134284, 91736, 189932, 5023, 107384, 172843, 119027, 186050,
	37053, 211048, 225021, 1640, 134501, 239568, 13332, 42305,
};
static const int32_t recorded_adaptive[16] = {
	254003, 30077, 220180, 29140, 229204, 80535, 119027, 136027,
	35839, 71471, 207980, 111818, 154461, 76665, 100213, 48721,
};

START_TEST(test_recorded_sequence_defaults)
{
	pccx_sampler_config c;
	int32_t got[16];
	size_t bound;
	int i;

	pccx_sampler_config_default(&c);
	c.seed = 20240601;
	run_recorded(&c, got, 16, &bound);
	for (i = 0; i < 16; i++)
		ck_assert_msg(got[i] == recorded_default[i], "step %d: token %d, recorded %d", i,
			      (int)got[i], (int)recorded_default[i]);
	ck_assert_uint_eq(bound, PCCX_SAMPLER_DEFAULT_TOP_K);
}
END_TEST

START_TEST(test_recorded_sequence_adaptive)
{
	/* top-k off, top-p 0.9, min-p 0.02: the adaptive candidate bound is exercised. */
	pccx_sampler_config c = mkcfg(0.8f, 0, 0.9f, 0.02f, 1.15f, 64);
	int32_t got[16];
	size_t bound;
	int i;

	c.seed = 7;
	run_recorded(&c, got, 16, &bound);
	for (i = 0; i < 16; i++)
		ck_assert_msg(got[i] == recorded_adaptive[i], "step %d: token %d, recorded %d", i,
			      (int)got[i], (int)recorded_adaptive[i]);
	/* The cut was found without sorting the vocabulary. */
	ck_assert_uint_lt(bound, GEMMA_VOCAB);
}
END_TEST

/*
 * The first step's distribution, bit for bit (recorded like the tokens above): catches
 * changes in rounding that are too small to move a token.
 */
START_TEST(test_recorded_distribution_bits)
{
	float *l = malloc(GEMMA_VOCAB * sizeof(*l));
	int32_t h[8];
	pccx_sampler_config c;
	pccx_sampler *s;
	pccx_sampler_dist dist;
	unsigned t;

	ck_assert_ptr_nonnull(l);
	for (t = 0; t < 8; t++)
		h[t] = (int32_t)(t * 32771u % GEMMA_VOCAB);
	recorded_logits(l, GEMMA_VOCAB, 0);
	pccx_sampler_config_default(&c);
	s = mk(&c, GEMMA_VOCAB);
	dist_of(s, l, GEMMA_VOCAB, h, 8, &dist);
	ck_assert_uint_eq(dist.n, 6);
	ck_assert_int_eq(dist.ids[0], 134284);
	ck_assert(dist.total == 0x1.957a394942479p+1);
	ck_assert(dist.probs[0] == 0x1.4340e5492eb24p-2);
	ck_assert(dist.probs[5] == 0x1.556eef82958b8p-5);

	/* top-k off, T 0.8, top-p 0.9: the kept set needs the candidate bound to grow. */
	c.top_k = 0;
	c.temperature = 0.8f;
	ck_assert_int_eq(pccx_sampler_set_config(s, &c, NULL), PCCX_OK);
	dist_of(s, l, GEMMA_VOCAB, h, 8, &dist);
	ck_assert_uint_eq(dist.n, 12427);
	ck_assert(dist.total == 0x1.cc847ae129a1fp+1);
	ck_assert_uint_eq(pccx__sampler_last_bound(s), 16384);
	pccx_sampler_destroy(s);
	free(l);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

static Suite *sampler_suite(void)
{
	Suite *s = suite_create("sampler");
	TCase *rng = tcase_create("rng");
	TCase *rules = tcase_create("rules");
	TCase *input = tcase_create("input");
	TCase *equiv = tcase_create("fast_vs_full_sort");
	TCase *rec = tcase_create("recorded");

	tcase_add_test(rng, test_pcg32_published_vectors);
	tcase_add_test(rng, test_uniform_conversions_exact);
	tcase_add_test(rng, test_exp_exact_points_and_bound);
	suite_add_tcase(s, rng);

	tcase_add_test(rules, test_penalise_rule);
	tcase_add_test(rules, test_llama_top_k);
	tcase_add_test(rules, test_llama_top_p);
	tcase_add_test(rules, test_hf_top_p_examples);
	tcase_add_test(rules, test_top_p_exact_boundary);
	tcase_add_test(rules, test_llama_penalties);
	tcase_add_test(rules, test_penalty_sign_and_window);
	tcase_add_test(rules, test_greedy_ties_lowest_id);
	tcase_add_test(rules, test_min_p);
	tcase_add_test(rules, test_draw_inverse_cdf);
	tcase_add_test(rules, test_one_uniform_per_step);
	tcase_add_test(rules, test_reseed_restarts_stream);
	suite_add_tcase(s, rules);

	tcase_add_test(input, test_nan_is_minus_inf_and_inf_refused);
	tcase_add_test(input, test_invalid_configs_refused);
	tcase_add_test(input, test_bad_call_arguments);
	tcase_add_test(input, test_logits_not_modified);
	suite_add_tcase(s, input);

	/* Thousands of full sorts of 262 400 entries: minutes under the sanitizers. */
	tcase_set_timeout(equiv, 1800);
	tcase_add_test(equiv, test_fast_equals_full_sort_small);
	tcase_add_test(equiv, test_fast_equals_full_sort_gemma_vocab);
	tcase_add_test(equiv, test_top_k_at_vocab_equals_off);
	tcase_add_test(equiv, test_penalised_overflow_refused);
	suite_add_tcase(s, equiv);

	tcase_set_timeout(rec, 120);
	tcase_add_test(rec, test_recorded_sequence_defaults);
	tcase_add_test(rec, test_recorded_sequence_adaptive);
	tcase_add_test(rec, test_recorded_distribution_bits);
	suite_add_tcase(s, rec);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sampler_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
