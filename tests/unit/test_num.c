// SPDX-License-Identifier: MIT
/*
 * isa/num, exact part: format conversions, INT4 packing, Q4/Q8 block quantisation, dot
 * products and the output stage. Everything here is bit-exact by contract, so every check
 * compares bits against an independent reference computed a different way (double arithmetic,
 * ldexp, nearbyint) and never uses a tolerance.
 */
#include <check.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pccx_num.h"

/* ------------------------------------------------------------------------------------- */
/* Independent references.                                                                */

/* Passing assertions are not free in Check (each records its location); loops use this. */
#define EXPECT(cond, ...)                          \
	do {                                       \
		if (!(cond))                       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd32(void)
{
	/* xorshift64*: deterministic, no libc state */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

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

/* binary16 decoded with ldexp, not bit surgery. */
static double ref_fp16_value(uint16_t h)
{
	int e = (h >> 10) & 0x1F, m = h & 0x3FF;
	double v;

	if (e == 0x1F)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)m, -24);
	else
		v = ldexp(1.0 + m / 1024.0, e - 15);
	return (h & 0x8000) ? -v : v;
}

/* Round |a| to the grid of step q (power of two) by comparing distances; tie -> even multiple. */
static double round_grid(double a, double q)
{
	double n = floor(a / q), lo = n * q, hi = (n + 1) * q;

	if (a - lo < hi - a)
		return lo;
	if (hi - a < a - lo)
		return hi;
	return fmod(n, 2.0) == 0.0 ? lo : hi;
}

/* Expected binary16 value of RNE(x) as a double (+-INFINITY on overflow). */
static double ref_fp16_round(float x)
{
	double a = fabs((double)x), q, r;
	int e;

	if (a < 0x1p-14) {
		q = 0x1p-24;
	} else {
		frexp(a, &e);	/* a = f * 2^e, f in [0.5, 1) */
		q = ldexp(1.0, e - 11);
	}
	r = round_grid(a, q);
	if (r > 65504.0)
		r = INFINITY;
	return signbit(x) ? -r : r;
}

/* Expected BF16 bits of RNE(x) for finite x (distance comparison in double). */
static uint16_t ref_bf16_round(float x)
{
	uint32_t u = bits(x), lo_b = u & 0x7FFF0000u;
	double a = fabs((double)x), lo = fabs((double)f32(lo_b));
	double hi = (lo_b + 0x10000u == 0x7F800000u) ? 0x1p128 : fabs((double)f32(lo_b + 0x10000u));
	uint32_t r;

	if (a - lo < hi - a)
		r = lo_b;
	else if (hi - a < a - lo)
		r = lo_b + 0x10000u;
	else
		r = (lo_b & 0x10000u) ? lo_b + 0x10000u : lo_b;
	return (uint16_t)(((u >> 16) & 0x8000u) | (r >> 16));
}

/* ------------------------------------------------------------------------------------- */
/* BF16                                                                                   */

START_TEST(bf16_to_f32_all)
{
	unsigned h;

	for (h = 0; h < 65536; h++)
		EXPECT(bits(pccx__bf16_to_f32((uint16_t)h)) == (uint32_t)h << 16, "bf16 0x%04x", h);
}
END_TEST

START_TEST(bf16_roundtrip_all)
{
	unsigned h;

	for (h = 0; h < 65536; h++) {
		uint16_t back = pccx__f32_to_bf16(pccx__bf16_to_f32((uint16_t)h));
		bool nan = (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu);

		EXPECT(back == (nan ? ((h & 0x8000u) | 0x7FC0u) : h), "bf16 0x%04x -> 0x%04x", h, back);
	}
}
END_TEST

static void check_bf16(uint32_t u)
{
	float x = f32(u);
	uint16_t got = pccx__f32_to_bf16(x);

	uint16_t want = isnan(x) ? (uint16_t)(((u >> 16) & 0x8000u) | 0x7FC0u) : ref_bf16_round(x);

	EXPECT(got == want, "f32_to_bf16(0x%08x) = 0x%04x, want 0x%04x", u, got, want);
}

START_TEST(f32_to_bf16_sweep)
{
	uint64_t u;

	for (u = 0; u < (1ull << 32); u += 251)
		check_bf16((uint32_t)u);
}
END_TEST

START_TEST(f32_to_bf16_ties_all_exponents)
{
	uint32_t hi;

	/* For every BF16 value: just below, exactly at and just above the midpoint to the next. */
	for (hi = 0; hi < 65536; hi++) {
		check_bf16((hi << 16) | 0x7FFFu);
		check_bf16((hi << 16) | 0x8000u);
		check_bf16((hi << 16) | 0x8001u);
		check_bf16((hi << 16) | 0x0001u);
		check_bf16((hi << 16) | 0xFFFFu);
	}
}
END_TEST

START_TEST(f32_to_bf16_specials)
{
	ck_assert_uint_eq(pccx__f32_to_bf16(1.0f), 0x3F80);
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x3F808000u)), 0x3F80);	/* tie, even stays */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x3F818000u)), 0x3F82);	/* tie, odd rounds up */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x7F7F7FFFu)), 0x7F7F);	/* below the overflow tie */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x7F7F8000u)), 0x7F80);	/* tie to even -> Inf */
	ck_assert_uint_eq(pccx__f32_to_bf16(FLT_MAX), 0x7F80);
	ck_assert_uint_eq(pccx__f32_to_bf16(-FLT_MAX), 0xFF80);
	ck_assert_uint_eq(pccx__f32_to_bf16(INFINITY), 0x7F80);
	ck_assert_uint_eq(pccx__f32_to_bf16(-INFINITY), 0xFF80);
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x00000001u)), 0x0000);	/* subnormal, rounds to 0 */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x00008000u)), 0x0000);	/* subnormal tie, even */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x00018000u)), 0x0002);	/* subnormal tie, odd */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x00010000u)), 0x0001);	/* kept, not flushed */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x007FFFFFu)), 0x0080);	/* rounds up to normal */
	ck_assert_uint_eq(pccx__f32_to_bf16(-0.0f), 0x8000);
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x7F800001u)), 0x7FC0);	/* sNaN -> quiet */
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0xFFFFFFFFu)), 0xFFC0);
	ck_assert_uint_eq(pccx__f32_to_bf16(f32(0x7FC12345u)), 0x7FC0);	/* payload dropped */
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* FP16                                                                                   */

START_TEST(fp16_to_f32_all)
{
	unsigned h;

	for (h = 0; h < 65536; h++) {
		float f = pccx__fp16_to_f32((uint16_t)h);
		double want = ref_fp16_value((uint16_t)h);

		if (isnan(want))	/* payload kept in the top mantissa bits, sign kept */
			EXPECT(bits(f) == (((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x3FFu) << 13)),
			       "fp16 0x%04x -> 0x%08x", h, bits(f));
		else
			EXPECT((double)f == want && !signbit(f) == !signbit(want),
			       "fp16 0x%04x -> %a, want %a", h, f, want);
	}
}
END_TEST

START_TEST(fp16_roundtrip_all)
{
	unsigned h;

	for (h = 0; h < 65536; h++) {
		uint16_t back = pccx__f32_to_fp16(pccx__fp16_to_f32((uint16_t)h));
		bool nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu);

		EXPECT(back == (nan ? ((h & 0x8000u) | 0x7E00u) : h), "fp16 0x%04x -> 0x%04x", h, back);
	}
}
END_TEST

static void check_fp16(uint32_t u)
{
	float x = f32(u);
	uint16_t got = pccx__f32_to_fp16(x);
	double want, val;

	if (isnan(x)) {
		EXPECT(got == (((u >> 16) & 0x8000u) | 0x7E00u), "f32_to_fp16(0x%08x)", u);
		return;
	}
	want = ref_fp16_round(x);
	val = ref_fp16_value(got);
	EXPECT(val == want && !signbit(val) == !signbit(want),
	       "f32_to_fp16(0x%08x) = 0x%04x (%a), want %a", u, got, val, want);
}

START_TEST(f32_to_fp16_sweep)
{
	uint64_t u;

	for (u = 0; u < (1ull << 32); u += 251)
		check_fp16((uint32_t)u);
}
END_TEST

START_TEST(f32_to_fp16_ties_all_exponents)
{
	uint32_t e, m, sh, mid;

	/* Every float exponent that lands in the binary16 normal, subnormal or overflow range. */
	for (e = 95; e <= 145; e++) {
		/* bits dropped: 13 for normals, more in the subnormal range */
		sh = e >= 113 ? 13 : 13 + (113 - e);
		if (sh > 24)
			sh = 24;
		mid = 1u << (sh - 1);
		for (m = 0; m < 0x800000u; m += 0x800000u >> 11) {
			uint32_t base = (e << 23) | (m & ~((1u << sh) - 1u) & 0x7FFFFFu);

			check_fp16(base | (mid - 1u));
			check_fp16(base | mid);
			check_fp16(base | (mid + 1u));
			check_fp16((base | mid) ^ 0x80000000u);
		}
	}
}
END_TEST

START_TEST(f32_to_fp16_specials)
{
	ck_assert_uint_eq(pccx__f32_to_fp16(1.0f), 0x3C00);
	ck_assert_uint_eq(pccx__f32_to_fp16(65504.0f), 0x7BFF);
	ck_assert_uint_eq(pccx__f32_to_fp16(65519.99f), 0x7BFF);
	ck_assert_uint_eq(pccx__f32_to_fp16(65520.0f), 0x7C00);	/* tie to even -> Inf */
	ck_assert_uint_eq(pccx__f32_to_fp16(-1e9f), 0xFC00);
	ck_assert_uint_eq(pccx__f32_to_fp16(0x1p-24f), 0x0001);	/* smallest subnormal */
	ck_assert_uint_eq(pccx__f32_to_fp16(0x1p-25f), 0x0000);	/* tie to even -> 0 */
	ck_assert_uint_eq(pccx__f32_to_fp16(f32(0x33000001u)), 0x0001);	/* just above the tie */
	ck_assert_uint_eq(pccx__f32_to_fp16(0x1.8p-24f), 0x0002);	/* tie, odd rounds up */
	ck_assert_uint_eq(pccx__f32_to_fp16(0x1.ff8p-15f), 0x03FF);	/* largest subnormal */
	ck_assert_uint_eq(pccx__f32_to_fp16(0x1.ffcp-15f), 0x0400);	/* tie: up into the normals */
	ck_assert_uint_eq(pccx__f32_to_fp16(-0.0f), 0x8000);
	ck_assert_uint_eq(pccx__f32_to_fp16(INFINITY), 0x7C00);
	ck_assert_uint_eq(pccx__f32_to_fp16(f32(0xFF800001u)), 0xFE00);
	ck_assert_uint_eq(pccx__f32_to_fp16(f32(0x7FC00000u)), 0x7E00);
	ck_assert_uint_eq(pccx__f32_to_fp16(1e-30f), 0x0000);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* FP32 -> integer                                                                        */

START_TEST(rne_clamp_sweep)
{
	uint64_t u;

	fesetround(FE_TONEAREST);
	for (u = 0; u < (1ull << 32); u += 997) {
		float x = f32((uint32_t)u);
		int32_t got = pccx__f32_rne_clamp(x, -127, 127), want;
		double r;

		if (isnan(x)) {
			EXPECT(got == 0, "rne_clamp(NaN) = %d", got);
			continue;
		}
		r = nearbyint((double)x);
		want = r < -127 ? -127 : r > 127 ? 127 : (int32_t)r;
		EXPECT(got == want, "rne_clamp(%a) = %d, want %d", x, got, want);
		got = pccx__f32_rne_clamp(x, INT32_MIN, INT32_MAX);
		want = r < -2147483648.0 ? INT32_MIN : r > 2147483647.0 ? INT32_MAX : (int32_t)r;
		EXPECT(got == want, "rne_clamp(%a, int32) = %d, want %d", x, got, want);
	}
}
END_TEST

START_TEST(rne_clamp_ties)
{
	ck_assert_int_eq(pccx__f32_rne_clamp(0.5f, -127, 127), 0);
	ck_assert_int_eq(pccx__f32_rne_clamp(1.5f, -127, 127), 2);
	ck_assert_int_eq(pccx__f32_rne_clamp(2.5f, -127, 127), 2);
	ck_assert_int_eq(pccx__f32_rne_clamp(-2.5f, -127, 127), -2);
	ck_assert_int_eq(pccx__f32_rne_clamp(-3.5f, -127, 127), -4);
	ck_assert_int_eq(pccx__f32_rne_clamp(126.5f, -127, 127), 126);
	ck_assert_int_eq(pccx__f32_rne_clamp(0x1.fffffep-2f, -127, 127), 0);
	ck_assert_int_eq(pccx__f32_rne_clamp(0x1.000002p-1f, -127, 127), 1);
	ck_assert_int_eq(pccx__f32_rne_clamp(-0.0f, -127, 127), 0);
	ck_assert_int_eq(pccx__f32_rne_clamp(INFINITY, -127, 127), 127);
	ck_assert_int_eq(pccx__f32_rne_clamp(-INFINITY, -8, 7), -8);
	ck_assert_int_eq(pccx__f32_rne_clamp(NAN, -8, 7), 0);
	ck_assert_int_eq(pccx__f32_rne_clamp(8388609.0f, 0, INT32_MAX), 8388609);
	ck_assert_int_eq(pccx__f32_rne_clamp(3e9f, INT32_MIN, INT32_MAX), INT32_MAX);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* INT4                                                                                   */

START_TEST(int4_layout)
{
	/* element 2j = low nibble of byte j, element 2j+1 = high nibble */
	const uint8_t p[2] = { 0x8F, 0x71 };

	ck_assert_int_eq(pccx__int4_get(p, 0), -1);
	ck_assert_int_eq(pccx__int4_get(p, 1), -8);
	ck_assert_int_eq(pccx__int4_get(p, 2), 1);
	ck_assert_int_eq(pccx__int4_get(p, 3), 7);
}
END_TEST

START_TEST(int4_set_get_all)
{
	uint8_t p[3];
	int v, w, i;

	for (i = 0; i < 2; i++) {
		for (v = -8; v <= 7; v++) {
			for (w = -8; w <= 7; w++) {
				memset(p, 0xA5, sizeof(p));
				pccx__int4_set(p, 2 + (size_t)i, w);	/* byte 1 */
				pccx__int4_set(p, 2 + (size_t)(1 - i), v);
				ck_assert_int_eq(pccx__int4_get(p, 2 + (size_t)i), w);
				ck_assert_int_eq(pccx__int4_get(p, 2 + (size_t)(1 - i)), v);
				ck_assert_uint_eq(p[0], 0xA5);	/* neighbours untouched */
				ck_assert_uint_eq(p[2], 0xA5);
				ck_assert_uint_eq(p[1], (uint8_t)(i == 0 ? ((w & 0xF) | (v & 0xF) << 4)
									 : ((v & 0xF) | (w & 0xF) << 4)));
			}
		}
	}
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Q4 blocks                                                                              */

START_TEST(q4_from_ggml_layout)
{
	uint8_t blk[18], nib[16];
	uint16_t d;
	int i;

	blk[0] = 0x00;
	blk[1] = 0x3C;	/* d = 1.0 (0x3C00, little-endian) */
	for (i = 0; i < 16; i++)	/* element i: u = i & 15; element i+16: u = 15 - i */
		blk[2 + i] = (uint8_t)((i & 15) | ((15 - i) << 4));
	pccx__q4_from_ggml_q4_0(blk, &d, nib);
	ck_assert_uint_eq(d, 0x3C00);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(pccx__int4_get(nib, (size_t)i), i - 8);
		ck_assert_int_eq(pccx__int4_get(nib, (size_t)i + 16), 7 - i);
	}
	ck_assert_uint_eq(nib[0], 0x98);	/* elements 0 (-8) and 1 (-7) */
}
END_TEST

START_TEST(q4_from_ggml_lossless_random)
{
	uint8_t blk[18], nib[16];
	uint16_t d;
	int n, i;

	for (n = 0; n < 20000; n++) {
		for (i = 0; i < 18; i++)
			blk[i] = (uint8_t)rnd32();
		pccx__q4_from_ggml_q4_0(blk, &d, nib);
		EXPECT(d == (uint16_t)(blk[0] | blk[1] << 8), "d 0x%04x", d);
		for (i = 0; i < 32; i++) {
			int u = i < 16 ? (blk[2 + i] & 15) : (blk[2 + i - 16] >> 4);
			double ggml = ref_fp16_value(d) * (u - 8);
			double ours = (double)pccx__fp16_to_f32(d) * pccx__int4_get(nib, (size_t)i);

			EXPECT(pccx__int4_get(nib, (size_t)i) == u - 8, "block %d element %d", n, i);
			EXPECT(isnan(ggml) || ggml == ours, "block %d element %d: %a vs %a", n, i,
			       ggml, ours);
		}
	}
}
END_TEST

START_TEST(q4_quantize_rule)
{
	float x[32];
	uint16_t d;
	uint8_t nib[16];
	int i;

	/* m = -2.0 (largest magnitude, negative): d = 0.25, -2 -> -8 */
	for (i = 0; i < 32; i++)
		x[i] = 0.0625f * (float)(i - 16);	/* -1.0 .. 0.9375 */
	x[5] = -2.0f;
	x[6] = 0.375f;	/* 1.5 d: tie -> 2 */
	x[7] = 0.625f;	/* 2.5 d: tie -> 2 */
	x[8] = -0.125f;	/* -0.5 d: tie -> 0 */
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, 0x3400);	/* +0.25 */
	ck_assert_int_eq(pccx__int4_get(nib, 5), -8);
	ck_assert_int_eq(pccx__int4_get(nib, 6), 2);
	ck_assert_int_eq(pccx__int4_get(nib, 7), 2);
	ck_assert_int_eq(pccx__int4_get(nib, 8), 0);
	ck_assert_int_eq(pccx__int4_get(nib, 0), -4);	/* -1.0 */
	ck_assert_int_eq(pccx__int4_get(nib, 31), 4);	/* 0.9375 / 0.25 = 3.75 */

	/* m = +2.0: d = -0.25, +2 -> -8 and -1.0 -> +4 */
	x[5] = 2.0f;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, 0xB400);
	ck_assert_int_eq(pccx__int4_get(nib, 5), -8);
	ck_assert_int_eq(pccx__int4_get(nib, 0), 4);

	/* first element wins a magnitude tie: -3 before +3 -> d = +0.375 */
	memset(x, 0, sizeof(x));
	x[3] = -3.0f;
	x[9] = 3.0f;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, pccx__f32_to_fp16(0.375f));
	ck_assert_int_eq(pccx__int4_get(nib, 3), -8);
	ck_assert_int_eq(pccx__int4_get(nib, 9), 7);	/* +8 clamps to 7 */
}
END_TEST

START_TEST(q4_quantize_edges)
{
	float x[32];
	uint16_t d;
	uint8_t nib[16];
	int i;

	memset(x, 0, sizeof(x));
	x[0] = -0.0f;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, 0x8000);	/* m = 0: d = 0 / -8 = -0 */
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(nib[i], 0);

	/* |m| / 8 beyond FP16: d saturates to 65504 */
	x[0] = -1e7f;
	x[1] = 1e6f;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, 0x7BFF);
	ck_assert_int_eq(pccx__int4_get(nib, 0), -8);
	ck_assert_int_eq(pccx__int4_get(nib, 1), 7);	/* 15.3 -> clamp */

	/* tiny: d becomes an FP16 subnormal, then underflows to 0 */
	memset(x, 0, sizeof(x));
	x[4] = 8e-7f;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, 0x8002);	/* RN(-1e-7) = -2 * 2^-24, a subnormal scale, kept */
	ck_assert_int_eq(pccx__int4_get(nib, 4), -7);	/* 8e-7 / -1.19e-7 = -6.7 */
	x[4] = 1e-9f;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), 0);
	ck_assert_uint_eq(d, 0x8000);
	ck_assert_int_eq(pccx__int4_get(nib, 4), 0);

	x[7] = NAN;
	memset(nib, 0x55, sizeof(nib));
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), -1);
	ck_assert_uint_eq(d, 0x7E00);
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(nib[i], 0);
	x[7] = -INFINITY;
	ck_assert_int_eq(pccx__q4_quantize_block(x, &d, nib), -1);
}
END_TEST

START_TEST(q4_quantize_error_bound)
{
	float x[32];
	uint16_t d;
	uint8_t nib[16];
	int n, i;

	/* Every element is within d/2 of its reconstruction, except the +8 d clamp to 7 d. */
	for (n = 0; n < 20000; n++) {
		float scale = ldexpf(1.0f, (int)(rnd32() % 20) - 8), dq;

		for (i = 0; i < 32; i++)
			x[i] = scale * ((float)(int32_t)rnd32() / 2147483648.0f);
		EXPECT(pccx__q4_quantize_block(x, &d, nib) == 0, "block %d", n);
		dq = pccx__fp16_to_f32(d);
		for (i = 0; i < 32; i++) {
			double err = fabs((double)x[i] - (double)dq * pccx__int4_get(nib, (size_t)i));
			double lim = fabs((double)dq) * 0.5000001;

			if (fabs((double)x[i] / dq) > 7.5)
				lim = fabs((double)dq) * 1.0000001 + fabs(x[i]) * 1e-3;
			EXPECT(err <= lim, "block %d elem %d: x=%a d=%a q=%d", n, i, x[i], dq,
			       pccx__int4_get(nib, (size_t)i));
		}
	}
}
END_TEST

START_TEST(q4_weight_dequant)
{
	uint8_t nib[32];
	uint16_t sc[2] = { 0x3800, 0xC000 };	/* 0.5, -2.0 */

	memset(nib, 0, sizeof(nib));
	pccx__int4_set(nib, 3, -5);
	pccx__int4_set(nib, 40, 7);
	ck_assert(pccx__q4_weight(nib, sc, 3) == -2.5f);
	ck_assert(pccx__q4_weight(nib, sc, 40) == -14.0f);
	ck_assert(pccx__q4_weight(nib, NULL, 40) == 7.0f);
	ck_assert_uint_eq(bits(pccx__q4_weight(nib, sc, 0)), 0);	/* 0.5 * 0 = +0 */
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Q8 activations                                                                         */

/* The contract, re-implemented with nearbyintf. */
static void ref_q8(const float *xb, int8_t *q, float *sx)
{
	float amax = 0.0f, inv, x;
	int i, finite = 1;

	for (i = 0; i < 32; i++) {
		x = xb[i];
		if (!isfinite(x))
			finite = 0;
		else if (fabsf(x) > amax)
			amax = fabsf(x);
	}
	if (!finite || amax == 0.0f) {
		memset(q, 0, 32);
		*sx = finite ? 0.0f : NAN;
		return;
	}
	inv = 127.0f / amax;
	for (i = 0; i < 32; i++) {
		float r = nearbyintf(xb[i] * inv);

		q[i] = (int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r);
	}
	*sx = amax / 127.0f;
}

START_TEST(q8_quantize_random)
{
	float xb[32];
	int8_t q[32], rq[32];
	float sx, rsx;
	int n, i;

	fesetround(FE_TONEAREST);
	for (n = 0; n < 200000; n++) {
		uint32_t ebase = 0x30000000u + (rnd32() % 0x1F000000u);

		for (i = 0; i < 32; i++) {
			/* mostly similar magnitudes, full 24-bit significands, sometimes any finite */
			uint32_t r = rnd32(), m = rnd32() & 0x7FFFFFu;

			xb[i] = f32((r & 0x80000000u) |
				    ((ebase + ((r >> 8) % 0x3000000u)) & 0x7F800000u) | m);
			if ((r & 0xFF) == 0)
				xb[i] = f32(rnd32() & 0x7F7FFFFFu);
		}
		pccx__q8_quantize_block(xb, q, &sx);
		ref_q8(xb, rq, &rsx);
		EXPECT(memcmp(q, rq, 32) == 0, "block %d: q differs", n);
		EXPECT(bits(sx) == bits(rsx), "block %d: sx %a, want %a", n, sx, rsx);
	}
}
END_TEST

START_TEST(q8_quantize_edges)
{
	float xb[32];
	int8_t q[32];
	float sx;
	int i;

	/* zero block (with a -0): sx = +0, q = 0 */
	memset(xb, 0, sizeof(xb));
	xb[3] = -0.0f;
	memset(q, 0x55, sizeof(q));
	pccx__q8_quantize_block(xb, q, &sx);
	ck_assert_uint_eq(bits(sx), 0);
	for (i = 0; i < 32; i++)
		ck_assert_int_eq(q[i], 0);

	/* amax = 127: inv = 1 exactly, ties to even */
	xb[8] = 0x1.fffffep-1f;	/* just below 1: rounds to 1 with a full significand */
	xb[0] = 127.0f;
	xb[1] = 2.5f;
	xb[2] = 3.5f;
	xb[3] = -2.5f;
	xb[4] = -0.5f;
	xb[5] = -127.0f;
	xb[6] = 126.5f;
	pccx__q8_quantize_block(xb, q, &sx);
	ck_assert(sx == 1.0f);
	ck_assert_int_eq(q[0], 127);
	ck_assert_int_eq(q[1], 2);
	ck_assert_int_eq(q[2], 4);
	ck_assert_int_eq(q[3], -2);
	ck_assert_int_eq(q[4], 0);
	ck_assert_int_eq(q[5], -127);	/* symmetric: -128 is never produced */
	ck_assert_int_eq(q[6], 126);
	ck_assert_int_eq(q[8], 1);

	/* Inf or NaN anywhere: sx = NaN (canonical), all q = 0 */
	xb[9] = -INFINITY;
	pccx__q8_quantize_block(xb, q, &sx);
	ck_assert_uint_eq(bits(sx), PCCX_F32_QNAN_BITS);
	for (i = 0; i < 32; i++)
		ck_assert_int_eq(q[i], 0);
	xb[9] = f32(0x7FC00001u);
	pccx__q8_quantize_block(xb, q, &sx);
	ck_assert_uint_eq(bits(sx), PCCX_F32_QNAN_BITS);

	/* subnormal elements are quantised, not flushed */
	memset(xb, 0, sizeof(xb));
	xb[0] = 0x1p-120f;	/* = amax */
	xb[1] = -0x1p-127f;	/* -127/128 -> -1 */
	xb[2] = 15 * 0x1p-130f;	/* 1.86 -> 2 */
	pccx__q8_quantize_block(xb, q, &sx);
	ck_assert_int_eq(q[0], 127);
	ck_assert_int_eq(q[1], -1);
	ck_assert_int_eq(q[2], 2);
	ck_assert(sx == 0x1p-120f / 127.0f);

	/* amax < 127 / FLT_MAX: inv overflows to +Inf, as the contract's arithmetic says */
	xb[0] = 0x1p-149f;	/* the smallest subnormal */
	xb[1] = 0.0f;
	pccx__q8_quantize_block(xb, q, &sx);
	ck_assert_int_eq(q[0], 127);
	ck_assert_int_eq(q[1], 0);	/* 0 * Inf = NaN -> 0 */
}
END_TEST

START_TEST(q8_quantize_vector)
{
	float xb[96];
	int8_t q[96], qb[32];
	float sx[3], sb;
	int i, b;

	for (i = 0; i < 96; i++)
		xb[i] = f32((0x3C000000u + (rnd32() % 0x8000000u)) | (rnd32() & 0x80000000u));
	pccx__q8_quantize(xb, 96, q, sx);
	for (b = 0; b < 3; b++) {
		pccx__q8_quantize_block(xb + 32 * b, qb, &sb);
		ck_assert_mem_eq(q + 32 * b, qb, 32);
		ck_assert_uint_eq(bits(sx[b]), bits(sb));
	}
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Dot products and the output stage                                                      */

/* The documented order, written out plainly. */
static float ref_q4_row_dot(const uint8_t *nib, const uint16_t *sc, const int8_t *q8,
			    const float *sx, size_t K)
{
	float acc = 0.0f;
	size_t b, i;

	for (b = 0; b < K / 32; b++) {
		int32_t dot = 0;
		float d = sc ? (float)ref_fp16_value(sc[b]) : 1.0f, t, c;

		for (i = 0; i < 32; i++)
			dot += (int32_t)q8[32 * b + i] * pccx__int4_get(nib, 32 * b + i);
		t = d * sx[b];
		c = (float)dot * t;
		acc = acc + c;
	}
	return acc;
}

START_TEST(q4_row_dot_matches_reference)
{
	enum { K = 2048 };
	static uint8_t nib[K / 2];
	static int8_t q8[K];
	static uint16_t sc[K / 32];
	static float sx[K / 32];
	int n, i;

	for (n = 0; n < 300; n++) {
		for (i = 0; i < K / 2; i++)
			nib[i] = (uint8_t)rnd32();
		for (i = 0; i < K; i++)
			q8[i] = (int8_t)((int)(rnd32() % 255) - 127);
		for (i = 0; i < K / 32; i++) {
			sc[i] = pccx__f32_to_fp16(ldexpf((float)(rnd32() % 1000) + 1.0f, -14)) |
				(uint16_t)(rnd32() & 0x8000u);
			sx[i] = ldexpf((float)(rnd32() % 100000) + 1.0f, -20 - (int)(rnd32() % 8));
		}
		ck_assert_uint_eq(bits(pccx__q4_row_dot(nib, sc, q8, sx, K)),
				  bits(ref_q4_row_dot(nib, sc, q8, sx, K)));
		ck_assert_uint_eq(bits(pccx__q4_row_dot(nib, NULL, q8, sx, K)),
				  bits(ref_q4_row_dot(nib, NULL, q8, sx, K)));
	}
}
END_TEST

START_TEST(q4_row_dot_order_is_sequential)
{
	/*
	 * Blocks contribute +2^24, +1, +1, -2^24: sequential accumulation loses both +1 (ties to
	 * even), a pairwise tree would keep them. Detects any reordering of the block sum.
	 */
	uint8_t nib[64];
	int8_t q8[128];
	float sx[4] = { 0x1p24f, 1.0f, 1.0f, -0x1p24f };
	int i;

	memset(nib, 0, sizeof(nib));
	memset(q8, 0, sizeof(q8));
	for (i = 0; i < 4; i++) {
		pccx__int4_set(nib, 32 * (size_t)i, 1);
		q8[32 * i] = 1;
	}
	ck_assert(pccx__q4_row_dot(nib, NULL, q8, sx, 128) == 0.0f);
	ck_assert(ref_q4_row_dot(nib, NULL, q8, sx, 128) == 0.0f);
}
END_TEST

START_TEST(q4_row_dot_exact_cases)
{
	uint8_t nib[32];
	int8_t q8[64];
	uint16_t sc[2] = { 0x3C00, 0x4000 };	/* 1, 2 */
	float sx[2] = { 0.5f, 0.25f };
	int i;

	for (i = 0; i < 64; i++) {
		pccx__int4_set(nib, (size_t)i, i < 32 ? -8 : 7);
		q8[i] = i < 32 ? -127 : 127;
	}
	/* block 0: 32 * 1016 * 0.5 = 16256; block 1: 32 * 889 * 0.5 = 14224 */
	ck_assert(pccx__q4_row_dot(nib, sc, q8, sx, 64) == 30480.0f);
	/* a NaN scale poisons the row; the result is the canonical NaN */
	sx[1] = -NAN;
	ck_assert_uint_eq(bits(pccx__q4_row_dot(nib, sc, q8, sx, 64)), PCCX_F32_QNAN_BITS);
	/* K = 0: +0 */
	ck_assert_uint_eq(bits(pccx__q4_row_dot(nib, sc, q8, sx, 0)), 0);
}
END_TEST

START_TEST(f32_dots_match_reference)
{
	enum { K = 96, N = 40 };
	static float W[K * N], Wt[N * K], x[K];
	float y[N];
	int n, k, rep;

	for (rep = 0; rep < 200; rep++) {
		for (k = 0; k < K; k++)
			x[k] = f32((0x30000000u + rnd32() % 0x18000000u) | (rnd32() & 0x80000000u));
		for (k = 0; k < K * N; k++)
			W[k] = f32((0x30000000u + rnd32() % 0x18000000u) | (rnd32() & 0x80000000u));
		for (k = 0; k < K; k++)
			for (n = 0; n < N; n++)
				Wt[n * K + k] = W[k * N + n];
		pccx__f32_colsum(W, x, K, N, y);
		for (n = 0; n < N; n++) {
			float acc = 0.0f;

			for (k = 0; k < K; k++) {
				/* the product rounded on its own: no fused multiply-add */
				volatile float prod = Wt[n * K + k] * x[k];

				acc = acc + prod;
			}
			EXPECT(bits(pccx__f32_row_dot(Wt + n * K, x, K)) == bits(acc), "row %d", n);
			EXPECT(bits(y[n]) == bits(acc), "column %d", n);
		}
	}
}
END_TEST

START_TEST(f32_dot_edges)
{
	float w[4] = { 1.0f, 0x1p24f, 1.0f, -0x1p24f };
	float x[4] = { 1.0f, 1.0f, 1.0f, 1.0f };
	float y[2];

	/* 1 + 2^24 = 2^24 (tie to even), + 1 -> 2^24, - 2^24 -> 0 */
	ck_assert(pccx__f32_row_dot(w, x, 4) == 0.0f);
	ck_assert_uint_eq(bits(pccx__f32_row_dot(w, x, 0)), 0);
	/* the product is rounded before the add: (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46 -> 1 + 2^-22 */
	w[0] = x[0] = 1.0f + 0x1p-23f;
	ck_assert_uint_eq(bits(pccx__f32_row_dot(w, x, 1)), bits(1.0f + 0x1p-22f));
	x[0] = 1.0f;
	w[1] = INFINITY;
	w[3] = -INFINITY;	/* Inf - Inf = NaN, canonical */
	ck_assert_uint_eq(bits(pccx__f32_row_dot(w, x, 4)), PCCX_F32_QNAN_BITS);
	/* -0 * 1 + ... : acc starts at +0, so +0 + -0 = +0 */
	w[0] = -0.0f;
	ck_assert_uint_eq(bits(pccx__f32_row_dot(w, x, 1)), 0);
	pccx__f32_colsum(w, x, 2, 2, y);	/* W = [[-0, Inf], [1, -Inf]] */
	ck_assert(y[0] == 1.0f);
	ck_assert_uint_eq(bits(y[1]), PCCX_F32_QNAN_BITS);
}
END_TEST

START_TEST(out_store_stage)
{
	ck_assert_uint_eq(bits(pccx__out_store(1.0f, false, 2.0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__out_store(1.0f, true, 2.0f)), bits(3.0f));
	/* one RNE add, kept in FP32: 1 + 2^-24 is a tie -> 1; 1 + 3 * 2^-24 -> 1 + 2^-22 */
	ck_assert_uint_eq(bits(pccx__out_store(0x1p-24f, true, 1.0f)), bits(1.0f));
	ck_assert_uint_eq(bits(pccx__out_store(0x1.8p-23f, true, 1.0f)), bits(1.0f + 0x1p-22f));
	/* nothing narrows: a full 24-bit significand is stored as it is */
	ck_assert_uint_eq(bits(pccx__out_store(f32(0x3F8ABCDEu), false, 0.0f)), 0x3F8ABCDEu);
	ck_assert_uint_eq(bits(pccx__out_store(-NAN, false, 0.0f)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__out_store(INFINITY, true, -INFINITY)), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx__out_store(-0.0f, false, 0.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__out_store(-0.0f, true, -0.0f)), 0x80000000u);
	ck_assert_uint_eq(bits(pccx__out_store(FLT_MAX, false, 0.0f)), bits(FLT_MAX));
	ck_assert_uint_eq(bits(pccx__out_store(FLT_MAX, true, FLT_MAX)), 0x7F800000u);
	ck_assert_uint_eq(bits(pccx_f32_store(f32(0xFFC00001u))), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx_f32_canon(f32(0xFF812345u))), PCCX_F32_QNAN_BITS);
	ck_assert_uint_eq(bits(pccx_f32_canon(-INFINITY)), 0xFF800000u);
}
END_TEST

static Suite *num_suite(void)
{
	Suite *s = suite_create("num");
	TCase *tc = tcase_create("exact");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, bf16_to_f32_all);
	tcase_add_test(tc, bf16_roundtrip_all);
	tcase_add_test(tc, f32_to_bf16_sweep);
	tcase_add_test(tc, f32_to_bf16_ties_all_exponents);
	tcase_add_test(tc, f32_to_bf16_specials);
	tcase_add_test(tc, fp16_to_f32_all);
	tcase_add_test(tc, fp16_roundtrip_all);
	tcase_add_test(tc, f32_to_fp16_sweep);
	tcase_add_test(tc, f32_to_fp16_ties_all_exponents);
	tcase_add_test(tc, f32_to_fp16_specials);
	tcase_add_test(tc, rne_clamp_sweep);
	tcase_add_test(tc, rne_clamp_ties);
	tcase_add_test(tc, int4_layout);
	tcase_add_test(tc, int4_set_get_all);
	tcase_add_test(tc, q4_from_ggml_layout);
	tcase_add_test(tc, q4_from_ggml_lossless_random);
	tcase_add_test(tc, q4_quantize_rule);
	tcase_add_test(tc, q4_quantize_edges);
	tcase_add_test(tc, q4_quantize_error_bound);
	tcase_add_test(tc, q4_weight_dequant);
	tcase_add_test(tc, q8_quantize_random);
	tcase_add_test(tc, q8_quantize_edges);
	tcase_add_test(tc, q8_quantize_vector);
	tcase_add_test(tc, q4_row_dot_matches_reference);
	tcase_add_test(tc, q4_row_dot_order_is_sequential);
	tcase_add_test(tc, q4_row_dot_exact_cases);
	tcase_add_test(tc, f32_dots_match_reference);
	tcase_add_test(tc, f32_dot_edges);
	tcase_add_test(tc, out_store_stage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(num_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
