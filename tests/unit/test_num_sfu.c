// SPDX-License-Identifier: MIT
/*
 * isa/num, SFU part: the FP32 elementary functions against their FP64 counterparts
 * (reference/num_f64.h) over strided sweeps with the error bounds docs/numerics.md states, their
 * special values, and the SFU pipeline (flags, vector form, reductions, scalar forms) bit for
 * bit. `pccx numerics --exhaustive` runs the same measurement over every float.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num_f64.h"
#include "pccx_num.h"

/* Passing assertions are not free in Check (each records its location); loops use this. */
#define EXPECT(cond, ...)                          \
	do {                                       \
		if (!(cond))                       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

static float f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float bf(uint16_t h)
{
	return f32((uint32_t)h << 16);
}

/* ------------------------------------------------------------------------------------- */
/* Error measurement                                                                      */

struct err {
	double ulp, rel;
	float worst;
};

/*
 * Max error of fn over every stride-th float of [lo, hi]: in ulps of the exact result's
 * binade (2^-149 below the normal range) and relative over normal results. Results that
 * must be Inf or NaN are checked exactly.
 */
static struct err sweep(float (*fn)(float), double (*ref)(float), float lo, float hi,
			uint32_t stride)
{
	struct err e = { 0, 0, 0 };
	uint64_t k;

	for (k = pccx__f64_sweep_key(lo); k <= pccx__f64_sweep_key(hi); k += stride) {
		float x = pccx__f64_sweep_float((uint32_t)k), y = fn(x);
		double r = ref(x), u, rel;

		if (isnan(r)) {
			EXPECT(bits(y) == PCCX_F32_QNAN_BITS, "f(%a) = %a, want NaN", x, y);
			continue;
		}
		if (fabs(r) >= 0x1.ffffffp127) {
			EXPECT(isinf(y) && (y > 0) == (r > 0), "f(%a) = %a, want Inf", x, y);
			continue;
		}
		EXPECT(isfinite(y), "f(%a) = %a, want %a", x, y, r);
		u = pccx__f64_ulps(y, r, &rel);
		if (rel > e.rel)
			e.rel = rel;
		if (u > e.ulp) {
			e.ulp = u;
			e.worst = x;
		}
	}
	return e;
}

static void check_bound(const char *name, struct err e, double max_ulp)
{
	ck_assert_msg(e.ulp <= max_ulp, "%s: %.4f ulp at x = %a (bound %.2f)", name, e.ulp,
		      (double)e.worst, max_ulp);
}

/*
 * Bounds asserted here are the ones docs/numerics.md states: the maximum over every float
 * of the range (pccx numerics --exhaustive), rounded up.
 */
#define BOUND_EXP	0.77
#define BOUND_TANH	1.14
#define BOUND_GELU	0.82
#define BOUND_SINCOS	0.80

/* ------------------------------------------------------------------------------------- */
/* exp                                                                                    */

START_TEST(exp_error_bound)
{
	check_bound("exp", sweep(pccx__f32_exp, pccx__f64_exp, -104.0f, 89.0f, 4093), BOUND_EXP);
	/* dense around 0 and at the ends */
	check_bound("exp", sweep(pccx__f32_exp, pccx__f64_exp, -1.0f, 1.0f, 4093), BOUND_EXP);
	check_bound("exp", sweep(pccx__f32_exp, pccx__f64_exp, 80.0f, 89.0f, 3), BOUND_EXP);
	check_bound("exp", sweep(pccx__f32_exp, pccx__f64_exp, -104.0f, -87.0f, 3), BOUND_EXP);
}
END_TEST

START_TEST(exp_specials)
{
	ck_assert_uint_eq(bits(pccx__f32_exp(0.0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_exp(-0.0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_exp(INFINITY)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx__f32_exp(-INFINITY)), 0);
	ck_assert_uint_eq(bits(pccx__f32_exp(f32(0xFFC01234u))), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_exp(1000.0f)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx__f32_exp(-1000.0f)), 0);
	/* ln(FLT_MAX) = 88.7228391...: the last float below it is finite, the next is Inf */
	ck_assert(isfinite(pccx__f32_exp(0x1.62e42ep6f)));
	ck_assert(isinf(pccx__f32_exp(0x1.62e430p6f)));
	/* gradual underflow: exp(-103.2789) ~ 2^-149, exp(-104) < 2^-150 rounds to 0 */
	ck_assert_uint_eq(bits(pccx__f32_exp(-103.2789f)), 1);
	ck_assert_uint_eq(bits(pccx__f32_exp(-104.0f)), 0);
	ck_assert(pccx__f32_exp(-100.0f) > 0.0f && pccx__f32_exp(-100.0f) < FLT_MIN);
	/* tiny arguments */
	ck_assert_uint_eq(bits(pccx__f32_exp(0x1p-30f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_exp(-0x1p-30f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_exp(-0x1p-24f)), bits(0x1.fffffep-1f));
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* tanh, GELU                                                                             */

START_TEST(tanh_error_bound)
{
	check_bound("tanh", sweep(pccx__f32_tanh, pccx__f64_tanh, -10.0f, 10.0f, 4093), BOUND_TANH);
	check_bound("tanh", sweep(pccx__f32_tanh, pccx__f64_tanh, 0.75f, 1.25f, 13), BOUND_TANH);
	check_bound("tanh", sweep(pccx__f32_tanh, pccx__f64_tanh, -FLT_MAX, FLT_MAX, 8191), BOUND_TANH);
}
END_TEST

START_TEST(tanh_specials)
{
	uint32_t u;

	ck_assert_uint_eq(bits(pccx__f32_tanh(0.0f)), 0);
	ck_assert_uint_eq(bits(pccx__f32_tanh(-0.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_tanh(INFINITY)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_tanh(-INFINITY)), bits(-1.0f));
	ck_assert_uint_eq(bits(pccx__f32_tanh(f32(0x7F800001u))), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_tanh(f32(1))), 1);	/* subnormal: tanh x = x */
	ck_assert_uint_eq(bits(pccx__f32_tanh(0x1p-20f)), bits(0x1p-20f));
	ck_assert(pccx__f32_tanh(9.5f) == 1.0f);
	ck_assert(pccx__f32_tanh(8.5f) < 1.0f);	/* 1 - tanh 8.5 = 8e-8 > 2^-25 */
	/* odd: bit-exact symmetry */
	for (u = 0; u < 0x7F800000u; u += 65537)
		EXPECT(bits(pccx__f32_tanh(f32(u | 0x80000000u))) == (bits(pccx__f32_tanh(f32(u))) |
								      0x80000000u), "tanh(-%a)", f32(u));
}
END_TEST

START_TEST(gelu_error_bound)
{
	check_bound("gelu", sweep(pccx__f32_gelu, pccx__f64_gelu, -12.0f, 12.0f, 4093), BOUND_GELU);
	check_bound("gelu", sweep(pccx__f32_gelu, pccx__f64_gelu, -11.0f, -9.0f, 31), BOUND_GELU);
	check_bound("gelu", sweep(pccx__f32_gelu, pccx__f64_gelu, -6.0f, -3.0f, 31), BOUND_GELU);
	check_bound("gelu", sweep(pccx__f32_gelu, pccx__f64_gelu, -FLT_MAX, FLT_MAX, 8191), BOUND_GELU);
}
END_TEST

START_TEST(gelu_specials)
{
	ck_assert_uint_eq(bits(pccx__f32_gelu(0.0f)), 0);
	ck_assert_uint_eq(bits(pccx__f32_gelu(-0.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_gelu(INFINITY)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx__f32_gelu(-INFINITY)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_gelu(-NAN)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_gelu(10.0f)), bits(10.0f));
	ck_assert_uint_eq(bits(pccx__f32_gelu(1e30f)), bits(1e30f));
	ck_assert_uint_eq(bits(pccx__f32_gelu(-11.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_gelu(-1e30f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_gelu(f32(0x00000003u))), 2);	/* RN(3/2 * 2^-149), even */
	ck_assert_uint_eq(bits(pccx__f32_gelu(-0x1p-70f)), bits(-0x1p-71f));
	/* the tanh form (GELU(1) = 0.8411920), not upstream RTL's x sigmoid(1.702 x) (0.8457) */
	ck_assert(fabsf(pccx__f32_gelu(1.0f) - 0.841192f) < 1e-6f);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* sin, cos                                                                               */

START_TEST(sincos_error_bound_rope_range)
{
	check_bound("sin", sweep(pccx__f32_sin, pccx__f64_sin, -65536.0f, 65536.0f, 4093), BOUND_SINCOS);
	check_bound("cos", sweep(pccx__f32_cos, pccx__f64_cos, -65536.0f, 65536.0f, 4093), BOUND_SINCOS);
	/* around the reduction switch at pi/4 and near the first zeros */
	check_bound("sin", sweep(pccx__f32_sin, pccx__f64_sin, 0.7f, 0.9f, 13), BOUND_SINCOS);
	check_bound("cos", sweep(pccx__f32_cos, pccx__f64_cos, 0.7f, 0.9f, 13), BOUND_SINCOS);
	check_bound("sin", sweep(pccx__f32_sin, pccx__f64_sin, 3.1f, 3.2f, 3), BOUND_SINCOS);
	check_bound("cos", sweep(pccx__f32_cos, pccx__f64_cos, 1.5f, 1.6f, 3), BOUND_SINCOS);
}
END_TEST

START_TEST(sincos_error_bound_full_range)
{
	check_bound("sin", sweep(pccx__f32_sin, pccx__f64_sin, -FLT_MAX, FLT_MAX, 8191), BOUND_SINCOS);
	check_bound("cos", sweep(pccx__f32_cos, pccx__f64_cos, -FLT_MAX, FLT_MAX, 8191), BOUND_SINCOS);
}
END_TEST

START_TEST(sincos_hard_arguments)
{
	/*
	 * Floats closest to multiples of pi/2 need many bits of 2/pi: the result is tiny and
	 * must still be accurate relative to itself. Find, per binade, the float whose
	 * remainder is smallest and check it.
	 */
	int e;

	for (e = 0; e < 127; e++) {
		float best = 0;
		double bestr = 1e9;
		uint32_t m;

		for (m = 0; m < 0x800000u; m += 4099) {
			float x = f32(((uint32_t)(127 + e) << 23) | m);
			double c = fabs(pccx__f64_cos(x));

			if (c < bestr) {
				bestr = c;
				best = x;
			}
		}
		check_bound("cos", sweep(pccx__f32_cos, pccx__f64_cos, best, best, 1), BOUND_SINCOS);
		check_bound("sin", sweep(pccx__f32_sin, pccx__f64_sin, best, best, 1), BOUND_SINCOS);
	}
}
END_TEST

START_TEST(sincos_specials)
{
	uint32_t u;

	ck_assert_uint_eq(bits(pccx__f32_sin(0.0f)), 0);
	ck_assert_uint_eq(bits(pccx__f32_sin(-0.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_cos(0.0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_cos(-0.0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_sin(f32(1))), 1);
	ck_assert_uint_eq(bits(pccx__f32_sin(INFINITY)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_cos(-INFINITY)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_sin(NAN)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_cos(f32(0xFFC00000u))), PCCX_F32_QNAN_BITS);
	/* sin odd, cos even, bit for bit */
	for (u = 0; u < 0x7F800000u; u += 65537) {
		float x = f32(u), nx = f32(u | 0x80000000u);

		EXPECT(bits(pccx__f32_sin(nx)) == (bits(pccx__f32_sin(x)) ^ 0x80000000u), "sin(-%a)", x);
		EXPECT(bits(pccx__f32_cos(nx)) == bits(pccx__f32_cos(x)), "cos(-%a)", x);
	}
	/* a RoPE phase: position 32767 times inv_freq 1.0 */
	ck_assert(fabs(pccx__f32_sin(32767.0f) - pccx__f64_sin(32767.0f)) < 1e-7);
	ck_assert(fabs(pccx__f32_cos(32767.0f) - pccx__f64_cos(32767.0f)) < 1e-7);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* sqrt, rsqrt, recip: correctly rounded                                                 */

START_TEST(sqrt_correctly_rounded)
{
	uint32_t u;

	/* double sqrt rounded to float is correctly rounded (53 >= 2 * 24 + 2) */
	for (u = 1; u < 0x7F800000u; u += 4099)
		EXPECT(bits(pccx__f32_sqrt(f32(u))) == bits((float)pccx__f64_sqrt(f32(u))),
		       "sqrt(%a)", f32(u));
	for (u = 0x3F800000u; u < 0x40800000u; u += 31)	/* [1, 4): both exponent parities */
		EXPECT(bits(pccx__f32_sqrt(f32(u))) == bits((float)pccx__f64_sqrt(f32(u))),
		       "sqrt(%a)", f32(u));
	ck_assert_uint_eq(bits(pccx__f32_sqrt(0.0f)), 0);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(-0.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(INFINITY)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(-1.0f)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(-INFINITY)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(f32(0x80000001u))), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(NAN)), PCCX_F32_QNAN_BITS);
	ck_assert(pccx__f32_sqrt(4.0f) == 2.0f);
	/* remainder == root: sqrt(1 + 2^-23) = 1 + 2^-24 - 2^-49 rounds down */
	ck_assert_uint_eq(bits(pccx__f32_sqrt(0x1.000002p0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__f32_sqrt(0x1.000002p2f)), bits(2.0f));
	ck_assert_uint_eq(bits(pccx__f32_sqrt(0x1.000004p0f)), bits(0x1.000002p0f));
	ck_assert(pccx__f32_sqrt(2048.0f) == 45.254833f);
	ck_assert_uint_eq(bits(pccx__f32_sqrt(f32(1))), bits(0x1.6a09e6p-75f));
}
END_TEST

START_TEST(rsqrt_correctly_rounded)
{
	uint32_t u;

	/* 1/sqrt in long double (64 bits), rounded once to float */
	for (u = 1; u < 0x7F800000u; u += 4099)
		EXPECT(bits(pccx__f32_rsqrt(f32(u))) == bits((float)(1.0L / sqrtl(f32(u)))),
		       "rsqrt(%a)", f32(u));
	for (u = 0x3F800000u; u < 0x40800000u; u += 31)
		EXPECT(bits(pccx__f32_rsqrt(f32(u))) == bits((float)(1.0L / sqrtl(f32(u)))),
		       "rsqrt(%a)", f32(u));
	ck_assert_uint_eq(bits(pccx__f32_rsqrt(0.0f)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx__f32_rsqrt(-0.0f)), 0xFF800000u);
	ck_assert_uint_eq(bits(pccx__f32_rsqrt(INFINITY)), 0);
	ck_assert_uint_eq(bits(pccx__f32_rsqrt(-2.0f)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__f32_rsqrt(NAN)), PCCX_F32_QNAN_BITS);
	ck_assert(pccx__f32_rsqrt(4.0f) == 0.5f);
	ck_assert(pccx__f32_rsqrt(0x1p-126f) == 0x1p63f);
	ck_assert(pccx__f32_rsqrt(2.0f) == 0x1.6a09e6p-1f);	/* RN(1/sqrt 2) */
	ck_assert(pccx__f32_rsqrt(256.0f) == 0.0625f);
}
END_TEST

START_TEST(recip_is_ieee_division)
{
	uint32_t u;

	for (u = 0; u < 0x7F800000u; u += 4099) {
		EXPECT(bits(pccx__f32_recip(f32(u))) == bits(1.0f / f32(u)), "recip(%a)", f32(u));
		EXPECT(bits(pccx__f32_recip(-f32(u))) == bits(1.0f / -f32(u)), "recip(-%a)", f32(u));
	}
	ck_assert_uint_eq(bits(pccx__f32_recip(-0.0f)), 0xFF800000u);
	ck_assert_uint_eq(bits(pccx__f32_recip(f32(0xFFC00001u))), PCCX_F32_QNAN_BITS);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Golden bits: the algorithms are the contract                                           */

/* FNV-1a over the result bits of fn at every 40009th float (NaN, Inf and subnormals included). */
static uint64_t golden_hash(float (*fn)(float))
{
	uint64_t h = 0xcbf29ce484222325ull, u;

	for (u = 0; u < (1ull << 32); u += 40009) {
		h ^= bits(fn(f32((uint32_t)u)));
		h *= 0x100000001b3ull;
	}
	return h;
}

START_TEST(golden_bits)
{
	/*
	 * The reference model and the simulator must agree bit for bit on every platform, so the
	 * exact results are pinned, not just their error bound. A change here is a change of the
	 * numerics contract: update docs/numerics.md with it.
	 */
	static const struct {
		const char *name;
		float (*f)(float);
		uint64_t hash;
	} g[] = {
		{ "exp", pccx__f32_exp, 0xd342b32ccb67998aull },
		{ "tanh", pccx__f32_tanh, 0x6cbd6ec90bbdb5aeull },
		{ "gelu", pccx__f32_gelu, 0x7669307767a2e236ull },
		{ "sin", pccx__f32_sin, 0x9b153303d56715efull },
		{ "cos", pccx__f32_cos, 0x14a79ab52b020dfaull },
		{ "sqrt", pccx__f32_sqrt, 0xef8a73625c4fea40ull },
		{ "rsqrt", pccx__f32_rsqrt, 0xdfa315392717ba00ull },
		{ "recip", pccx__f32_recip, 0x07c93bf7375cacdcull },
	};
	unsigned i, bad = 0;

	for (i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		uint64_t h = golden_hash(g[i].f);

		if (h != g[i].hash) {
			fprintf(stderr, "golden %s: 0x%016llxull\n", g[i].name, (unsigned long long)h);
			bad++;
		}
	}
	ck_assert_msg(bad == 0, "%u function(s) changed their exact results", bad);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* SFU pipeline                                                                           */

START_TEST(sfu_unary_dispatch)
{
	static const struct {
		enum pccx_sfu_fn fn;
		float (*f)(float);
	} t[] = {
		{ PCCX_SFU_EXP, pccx__f32_exp }, { PCCX_SFU_SQRT, pccx__f32_sqrt },
		{ PCCX_SFU_GELU, pccx__f32_gelu }, { PCCX_SFU_SIN, pccx__f32_sin },
		{ PCCX_SFU_COS, pccx__f32_cos }, { PCCX_SFU_RECIP, pccx__f32_recip },
		{ PCCX_SFU_TANH, pccx__f32_tanh }, { PCCX_SFU_RSQRT, pccx__f32_rsqrt },
	};
	static const float xs[] = { 0.3f, -2.75f, 17.0f, 1e-3f, -0.0f };
	unsigned i, j;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (j = 0; j < sizeof(xs) / sizeof(xs[0]); j++)
			ck_assert_uint_eq(bits(pccx__sfu_unary(t[i].fn, 0, 5.0f, xs[j])),
					  bits(t[i].f(xs[j])));
	ck_assert(pccx__sfu_unary(PCCX_SFU_SCALE, 0, 3.0f, 0.5f) == 1.5f);
	ck_assert(pccx__sfu_unary(PCCX_SFU_SCALE, PCCX_SFU_F_RECIP, 3.0f, 1.0f) == 1.0f / 3.0f);
	/* x / S is one division, not x * RN(1/S) */
	ck_assert_uint_eq(bits(pccx__sfu_unary(PCCX_SFU_SCALE, PCCX_SFU_F_RECIP, 3.0f, 5.0f)),
			  bits(5.0f / 3.0f));
	ck_assert_uint_ne(bits(5.0f / 3.0f), bits(5.0f * (1.0f / 3.0f)));
	ck_assert_uint_eq(bits(pccx__sfu_unary(PCCX_SFU_SUM, 0, 1.0f, 1.0f)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__sfu_unary(PCCX_SFU_MUL, 0, 1.0f, 1.0f)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__sfu_unary((enum pccx_sfu_fn)99, 0, 1.0f, 1.0f)),
			  PCCX_F32_QNAN_BITS);
	ck_assert(pccx__sfu_is_reduction(PCCX_SFU_SUM) && pccx__sfu_is_reduction(PCCX_SFU_SUMSQ) &&
		  pccx__sfu_is_reduction(PCCX_SFU_MAX) && !pccx__sfu_is_reduction(PCCX_SFU_EXP));
	ck_assert(pccx__sfu_is_binary(PCCX_SFU_MUL) && pccx__sfu_is_binary(PCCX_SFU_ADD) &&
		  !pccx__sfu_is_binary(PCCX_SFU_SCALE));
}
END_TEST

START_TEST(sfu_input_stage_flags)
{
	const unsigned SUB = PCCX_SFU_F_SUB, RELU = PCCX_SFU_F_RELU;

	/* SUB: x - S before the function */
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_EXP, SUB, 2.0f, 3.0f, 0)),
			  bits(pccx__f32_exp(1.0f)));
	/* RELU after SUB: 1 - 2 = -1 -> +0 -> exp = 1 */
	ck_assert(pccx__sfu_elem(PCCX_SFU_EXP, SUB | RELU, 2.0f, 1.0f, 0) == 1.0f);
	/* RELU maps -0 to +0 (visible through 1/x), keeps positives, keeps NaN */
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_RECIP, RELU, 0, -0.0f, 0)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_RECIP, 0, 0, -0.0f, 0)), 0xFF800000u);
	ck_assert(pccx__sfu_elem(PCCX_SFU_SCALE, RELU, 1.0f, 5.5f, 0) == 5.5f);
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_SCALE, RELU, 1.0f, -5.5f, 0)), 0);
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_SCALE, RELU, 1.0f, NAN, 0)),
			  PCCX_F32_QNAN_BITS);
	/* SUB is one FP32 subtraction, rounded to nearest: 1 - 0.75 * 2^-24 -> 1 - 2^-24 */
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_ADD, SUB, 0x1.8p-25f, 1.0f, 0.0f)),
			  bits(0x1.fffffep-1f));
	/* SUB by Inf of Inf: NaN (canonical) */
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_SQRT, SUB, INFINITY, INFINITY, 0)),
			  PCCX_F32_QNAN_BITS);
}
END_TEST

START_TEST(sfu_output_stage_and_binary)
{
	const unsigned ACCM = PCCX_SFU_F_ACCM, SCALE = PCCX_SFU_F_SCALE;
	float d = 0x1.000002p0f, s = 0x1.7ffffep0f, S = 0x1.4p-1f;

	/* ACCM: y + d after the function */
	ck_assert(pccx__sfu_elem(PCCX_SFU_SQRT, ACCM, 0, 16.0f, 0.5f) == 4.5f);
	/* MUL: d * s; with SCALE (d * S) * s, rounded twice in that order (the CVO smul: a
	 * SCALE of d, then a MUL by s) */
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_MUL, 0, S, s, d)), bits(d * s));
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_MUL, SCALE, S, s, d)), bits((d * S) * s));
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_MUL, SCALE, S, s, d)),
			  bits(pccx__sfu_elem(PCCX_SFU_MUL, 0, 0, s,
					      pccx__sfu_elem(PCCX_SFU_SCALE, 0, S, d, 0))));
	ck_assert_uint_ne(bits((d * S) * s), bits(d * (s * S)));
	/* ADD: d + s; ACCM on a binary op adds d once more */
	ck_assert(pccx__sfu_elem(PCCX_SFU_ADD, 0, 0, 2.0f, 3.0f) == 5.0f);
	ck_assert(pccx__sfu_elem(PCCX_SFU_ADD, ACCM, 0, 2.0f, 3.0f) == 8.0f);
	ck_assert(pccx__sfu_elem(PCCX_SFU_MUL, PCCX_SFU_F_SUB, 1.0f, 2.0f, 3.0f) == 3.0f);
	/* Inf - Inf inside the pipeline: the canonical NaN, whatever the platform's default NaN */
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_ADD, 0, 0, INFINITY, -INFINITY)),
			  PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_MUL, 0, 0, 0.0f, -INFINITY)),
			  PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__sfu_elem(PCCX_SFU_SUM, 0, 0, 1.0f, 1.0f)), PCCX_F32_QNAN_BITS);
}
END_TEST

START_TEST(sfu_vector_f32)
{
	float src[64], dst[64], old[64];
	int i;

	for (i = 0; i < 64; i++) {
		src[i] = -4.0f + 0.125f * (float)i;
		old[i] = dst[i] = 0.5f * (float)(i % 7);
	}
	pccx__sfu_vector(PCCX_SFU_GELU, PCCX_SFU_F_ACCM, 0, src, dst, 64);
	for (i = 0; i < 64; i++)
		ck_assert_uint_eq(bits(dst[i]), bits(pccx__f32_gelu(src[i]) + old[i]));

	/* in place: src == dst */
	memcpy(dst, src, sizeof(dst));
	pccx__sfu_vector(PCCX_SFU_EXP, PCCX_SFU_F_SUB, 1.0f, dst, dst, 64);
	for (i = 0; i < 64; i++)
		ck_assert_uint_eq(bits(dst[i]), bits(pccx__f32_exp(src[i] - 1.0f)));

	/* the store keeps FP32: exp(0.01) is stored with its full significand */
	src[0] = 0.01f;
	pccx__sfu_vector(PCCX_SFU_EXP, 0, 0, src, dst, 1);
	ck_assert_uint_eq(bits(dst[0]), bits(pccx__f32_exp(0.01f)));
	ck_assert_uint_ne(bits(dst[0]) & 0xFFFFu, 0);

	/* NaN results are stored as the canonical NaN */
	src[0] = bf(0xFF80);	/* -Inf */
	pccx__sfu_vector(PCCX_SFU_SIN, 0, 0, src, dst, 1);
	ck_assert_uint_eq(bits(dst[0]), PCCX_F32_QNAN_BITS);

	/* binary: MUL d * s element-wise */
	for (i = 0; i < 8; i++) {
		src[i] = (float)i;
		dst[i] = 0.5f;
	}
	pccx__sfu_vector(PCCX_SFU_MUL, PCCX_SFU_F_SCALE, 4.0f, src, dst, 8);
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(bits(dst[i]), bits(2.0f * (float)i));

	/* reductions are not element-wise: dst untouched */
	memcpy(old, dst, sizeof(old));
	pccx__sfu_vector(PCCX_SFU_SUM, 0, 0, src, dst, 8);
	ck_assert_mem_eq(dst, old, 8 * sizeof(float));
}
END_TEST

START_TEST(sfu_reduce_sum_sequential)
{
	float v[40];
	int i;

	/* 2^24 then 32 ones: sequential adds lose every one (ties to even), a tree would not */
	v[0] = bf(0x4B80);
	for (i = 1; i < 33; i++)
		v[i] = bf(0x3F80);
	ck_assert(pccx__sfu_reduce(PCCX_SFU_SUM, 0, 0, v, 33) == 0x1p24f);
	/* ones first: exact */
	for (i = 0; i < 32; i++)
		v[i] = bf(0x3F80);
	v[32] = bf(0x4B80);
	ck_assert(pccx__sfu_reduce(PCCX_SFU_SUM, 0, 0, v, 33) == 0x1p24f + 32.0f);
	/* MEAN: one division by (float)n */
	ck_assert(pccx__sfu_reduce(PCCX_SFU_SUM, PCCX_SFU_F_MEAN, 0, v, 33) ==
		  (0x1p24f + 32.0f) / 33.0f);
	/* empty: +0, mean of nothing = NaN */
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUM, 0, 0, v, 0)), 0);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUM, PCCX_SFU_F_MEAN, 0, v, 0)),
			  PCCX_F32_QNAN_BITS);
	/* all -0: acc starts at +0, +0 + -0 = +0 */
	v[0] = v[1] = bf(0x8000);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUM, 0, 0, v, 2)), 0);
	/* Inf + -Inf = NaN, canonical */
	v[0] = bf(0x7F80);
	v[1] = bf(0xFF80);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUM, 0, 0, v, 2)), PCCX_F32_QNAN_BITS);
	/* SUB and RELU apply per element before the sum */
	for (i = 0; i < 4; i++)
		v[i] = (float)i;	/* 0 1 2 3 */
	ck_assert(pccx__sfu_reduce(PCCX_SFU_SUM, PCCX_SFU_F_SUB | PCCX_SFU_F_RELU, 1.5f, v, 4) ==
		  2.0f);	/* 0 + 0 + 0.5 + 1.5 */
}
END_TEST

START_TEST(sfu_reduce_sumsq)
{
	float v[256];
	float S = 0x1.0000a0p0f, acc = 0.0f, x;
	int i;

	for (i = 0; i < 256; i++)
		v[i] = (uint16_t)(0x3F00u + (unsigned)i);	/* 0.5 .. ~1.98 */
	/* with SUB, (x - S)^2 has more than 24 bits: product rounded, then the add */
	for (i = 0; i < 256; i++) {
		x = v[i] - S;
		x = x * x;
		acc = acc + x;
	}
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUMSQ, PCCX_SFU_F_SUB, S, v, 256)), bits(acc));
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUMSQ, PCCX_SFU_F_SUB | PCCX_SFU_F_MEAN, S,
						v, 256)), bits(acc / 256.0f));
	/* without SUB: RMSNorm's mean of squares */
	acc = 0.0f;
	for (i = 0; i < 256; i++)
		acc = acc + v[i] * v[i];
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUMSQ, PCCX_SFU_F_MEAN, 0, v, 256)),
			  bits(acc / 256.0f));
	/* squares of -0 and NaN */
	v[0] = bf(0x8000);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUMSQ, 0, 0, v, 1)), 0);
	v[1] = bf(0xFFC1);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUMSQ, 0, 0, v, 2)), PCCX_F32_QNAN_BITS);
}
END_TEST

/*
 * ACCM on SUM and SUMSQ (FEATURES.RACC) starts the sum from S: pieces in index order, S
 * carried from one to the next, give the bits of one sum over the whole (and -0, cancelling
 * and non-associative sums included).
 */
START_TEST(sfu_reduce_accm_pieces)
{
	static const enum pccx_sfu_fn fns[] = { PCCX_SFU_SUM, PCCX_SFU_SUMSQ };
	static const unsigned flags[] = { 0, PCCX_SFU_F_RELU };
	float v[1000], whole, S;
	uint64_t st = 0x9E3779B97F4A7C15ull;
	unsigned f, k, cut;
	int i;

	for (i = 0; i < 1000; i++) {
		st ^= st << 13;
		st ^= st >> 7;
		st ^= st << 17;
		/* magnitudes over 2^-20 .. 2^20, both signs: the order of the adds matters */
		v[i] = ldexpf((float)(int32_t)(st >> 40) / 8388608.0f, (int)(st % 41) - 20);
	}
	for (k = 0; k < 2; k++)
		for (f = 0; f < 2; f++)
			for (cut = 1; cut < 1000; cut += 333) {
				whole = pccx__sfu_reduce(fns[k], flags[f], 0, v, 1000);
				S = pccx__sfu_reduce(fns[k], flags[f], 0, v, cut);
				S = pccx__sfu_reduce(fns[k], flags[f] | PCCX_SFU_F_ACCM, S, v + cut,
						     1000 - cut);
				ck_assert_uint_eq(bits(S), bits(whole));
				/* the mean of the pieces: one division at the end */
				ck_assert_uint_eq(bits(S / 1000.0f),
						  bits(pccx__sfu_reduce(fns[k], flags[f] |
									PCCX_SFU_F_MEAN, 0,
									v, 1000)));
			}
	/* from S = -0: -0 + -0 stays -0, where a sum from +0 gives +0 */
	v[0] = v[1] = -0.0f;
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUM, PCCX_SFU_F_ACCM, -0.0f, v, 2)),
			  0x80000000u);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_SUM, 0, -0.0f, v, 2)), 0);
	/* with MEAN the division is by this piece's n */
	v[0] = 1.0f;
	v[1] = 2.0f;
	ck_assert(pccx__sfu_reduce(PCCX_SFU_SUM, PCCX_SFU_F_ACCM | PCCX_SFU_F_MEAN, 3.0f, v, 2) ==
		  3.0f);
}
END_TEST

START_TEST(sfu_reduce_max)
{
	float v[8];

	v[0] = bf(0xBF80);	/* -1 */
	v[1] = bf(0x4040);	/* 3 */
	v[2] = bf(0x4000);	/* 2 */
	ck_assert(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 3) == 3.0f);
	/* NaN anywhere wins, even before larger values */
	v[1] = bf(0x7FC0);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 3)), PCCX_F32_QNAN_BITS);
	v[0] = bf(0xFF81);	/* NaN with sign and payload */
	v[1] = bf(0x4040);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 3)), PCCX_F32_QNAN_BITS);
	/* signed zeros: +0 wins in either order; -0 alone stays -0 */
	v[0] = bf(0x8000);
	v[1] = bf(0x0000);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 2)), 0);
	v[0] = bf(0x0000);
	v[1] = bf(0x8000);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 2)), 0);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v + 1, 1)), 0x80000000u);
	/* -Inf elements; empty vector -> -Inf */
	v[0] = v[1] = bf(0xFF80);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 2)), 0xFF800000u);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0, v, 0)), 0xFF800000u);
	/* SUB applies first */
	v[0] = bf(0x4000);
	v[1] = bf(0x4080);	/* 2, 4 */
	ck_assert(pccx__sfu_reduce(PCCX_SFU_MAX, PCCX_SFU_F_SUB, 5.0f, v, 2) == -1.0f);
	ck_assert_uint_eq(bits(pccx__sfu_reduce(PCCX_SFU_EXP, 0, 0, v, 2)), PCCX_F32_QNAN_BITS);
}
END_TEST

START_TEST(sfu_scalar_forms)
{
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_RSQRT, 0, 2.0f, 123.0f)),
			  bits(pccx__f32_rsqrt(2.0f)));
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_EXP, 0, -1.5f, 0)), bits(pccx__f32_exp(-1.5f)));
	ck_assert(pccx__sfu_scalar(PCCX_SFU_SCALE, 0, 3.0f, 0.25f) == 0.75f);
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_SCALE, PCCX_SFU_F_RECIP, 5.0f, 3.0f)),
			  bits(5.0f / 3.0f));
	ck_assert(pccx__sfu_scalar(PCCX_SFU_MUL, 0, 3.0f, -2.0f) == -6.0f);
	ck_assert(pccx__sfu_scalar(PCCX_SFU_ADD, 0, 3.0f, -2.0f) == 1.0f);
	ck_assert(pccx__sfu_scalar(PCCX_SFU_SUM, 0, 3.0f, -2.0f) == 1.0f);
	ck_assert(pccx__sfu_scalar(PCCX_SFU_SUMSQ, 0, 3.0f, -2.0f) == 7.0f);
	ck_assert(pccx__sfu_scalar(PCCX_SFU_MAX, 0, 3.0f, -2.0f) == 3.0f);
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_MAX, 0, -0.0f, 0.0f)), 0);
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_MAX, 0, 0.0f, -0.0f)), 0);
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_MAX, 0, 1.0f, NAN)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_ADD, 0, INFINITY, -INFINITY)),
			  PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__sfu_scalar(PCCX_SFU_SQRT, 0, -4.0f, 0)), PCCX_F32_QNAN_BITS);
}
END_TEST

static Suite *num_sfu_suite(void)
{
	Suite *s = suite_create("num_sfu");
	TCase *acc = tcase_create("accuracy");
	TCase *pipe = tcase_create("pipeline");

	tcase_set_timeout(acc, 300);
	tcase_add_test(acc, exp_error_bound);
	tcase_add_test(acc, exp_specials);
	tcase_add_test(acc, tanh_error_bound);
	tcase_add_test(acc, tanh_specials);
	tcase_add_test(acc, gelu_error_bound);
	tcase_add_test(acc, gelu_specials);
	tcase_add_test(acc, sincos_error_bound_rope_range);
	tcase_add_test(acc, sincos_error_bound_full_range);
	tcase_add_test(acc, sincos_hard_arguments);
	tcase_add_test(acc, sincos_specials);
	tcase_add_test(acc, sqrt_correctly_rounded);
	tcase_add_test(acc, rsqrt_correctly_rounded);
	tcase_add_test(acc, recip_is_ieee_division);
	tcase_add_test(acc, golden_bits);
	suite_add_tcase(s, acc);

	tcase_add_test(pipe, sfu_unary_dispatch);
	tcase_add_test(pipe, sfu_input_stage_flags);
	tcase_add_test(pipe, sfu_output_stage_and_binary);
	tcase_add_test(pipe, sfu_vector_f32);
	tcase_add_test(pipe, sfu_reduce_sum_sequential);
	tcase_add_test(pipe, sfu_reduce_sumsq);
	tcase_add_test(pipe, sfu_reduce_accm_pieces);
	tcase_add_test(pipe, sfu_reduce_max);
	tcase_add_test(pipe, sfu_scalar_forms);
	suite_add_tcase(s, pipe);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(num_sfu_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
