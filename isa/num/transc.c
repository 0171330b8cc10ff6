// SPDX-License-Identifier: MIT
/*
 * FP32 elementary functions of the SFU: exp, tanh, GELU (tanh form), sin, cos, sqrt, rsqrt, 1/x.
 *
 * Only IEEE binary32 + - * / and integer arithmetic are used, so every result is the same on
 * every IEEE-754 platform with FLT_EVAL_METHOD == 0 (no FMA contraction: -ffp-contract=off).
 * Algorithms, constants and measured errors: docs/numerics.md. The constants are derived, not
 * copied: `pccx numerics --derive` recomputes each of them.
 */
#include <float.h>

#include "pccx_num.h"
#include "pccx_num_consts.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "pccx numerics needs FLT_EVAL_METHOD == 0 (every float operation rounded to binary32)"
#endif

#define QNAN_BITS 0x7FC00000u

static float qnan(void)
{
	return pccx_f32_from_bits(QNAN_BITS);
}

static bool is_nan(float x)
{
	return (pccx_f32_bits(x) & 0x7FFFFFFFu) > 0x7F800000u;
}

/* 2^k for -126 <= k <= 127, built from bits (exact). */
static float pow2i(int k)
{
	return pccx_f32_from_bits((uint32_t)(k + 127) << 23);
}

/* ------------------------------------------------------------------------------------- */
/* Error-free transformations (Dekker/Knuth; valid without FMA and without overflow).     */

/* Split a into hi + lo, each with at most 12 significant bits (Veltkamp, 4097 = 2^12 + 1). */
static void split(float a, float *hi, float *lo)
{
	float t = 4097.0f * a;

	*hi = t - (t - a);
	*lo = a - *hi;
}

/* p + e == a * b exactly (barring underflow of e). */
static void two_prod(float a, float b, float *p, float *e)
{
	float ah, al, bh, bl;

	*p = a * b;
	split(a, &ah, &al);
	split(b, &bh, &bl);
	*e = ((ah * bh - *p) + ah * bl + al * bh) + al * bl;
}

/* s + e == a + b exactly, for any ordering of |a|, |b|. */
static void two_sum(float a, float b, float *s, float *e)
{
	float bb;

	*s = a + b;
	bb = *s - a;
	*e = (a - (*s - bb)) + (b - bb);
}

/* s + e == a + b exactly, requires |a| >= |b| or a == 0. */
static void fast_two_sum(float a, float b, float *s, float *e)
{
	*s = a + b;
	*e = b - (*s - a);
}

/* ------------------------------------------------------------------------------------- */
/* exp                                                                                    */

/*
 * exp(xh + xl) = 2^k * (hi + *lo), k in *k. |xh| <= 150, |xl| <= 2^-10 * |xh| + tiny.
 * k = rne(xh / ln 2); r = rh + rl with rh = xh - k*LN2_HI (exact: LN2_HI has 15 significant
 * bits and |k| < 2^9) and rl = xl - k*LN2_LO; |r| <= 0.3466 + tiny. The Taylor polynomial of
 * degree 8 leaves a remainder below 2^-31 relative.
 * e^r = 1 + r + r^2 Q(r), with 1 + rh split exactly (two-sum) so that the only full-weight
 * rounding is the last addition: its result is returned, its exact error in *lo.
 */
static float exp_reduce2(float xh, float xl, int *k, float *lo)
{
	float kf = (xh * PCCX_NUM_INV_LN2 + PCCX_NUM_RNE_MAGIC) - PCCX_NUM_RNE_MAGIC;
	float rh = xh - kf * PCCX_NUM_LN2_HI;
	float rl = xl - kf * PCCX_NUM_LN2_LO;
	float r = rh + rl, s, e, hi;
	float q = PCCX_NUM_EXP_C7 + r * PCCX_NUM_EXP_C8;

	q = PCCX_NUM_EXP_C6 + r * q;
	q = PCCX_NUM_EXP_C5 + r * q;
	q = PCCX_NUM_EXP_C4 + r * q;
	q = PCCX_NUM_EXP_C3 + r * q;
	q = PCCX_NUM_EXP_C2 + r * q;
	*k = (int)kf;
	fast_two_sum(1.0f, rh, &s, &e);
	fast_two_sum(s, e + (rl + (r * r) * q), &hi, lo);
	return hi;
}

/* exp(xh + xl) = 2^k * p, p in [0.7, 1.42], one rounding. */
static float exp_reduce(float xh, float xl, int *k)
{
	float lo;

	return exp_reduce2(xh, xl, k, &lo);
}

/* p * 2^k with exactly one rounding (p in [0.5, 2], -280 < k < 256). */
static float scale2(float p, int k)
{
	if (k > 127)
		return (p * pow2i(k - 127)) * pow2i(127);
	if (k < -125)
		return (p * pow2i(k + 125)) * pow2i(-125);	/* first product exact and normal */
	return p * pow2i(k);
}

float pccx__f32_exp(float x)
{
	int k = 0;
	float p;

	if (is_nan(x))
		return qnan();
	if (x > 100.0f)
		return pccx_f32_from_bits(0x7F800000u);	/* also +Inf; exp(88.73) already overflows */
	if (x < -120.0f)
		return 0.0f;	/* also -Inf; exp(-103.98) already rounds to 0 */
	p = exp_reduce(x, 0.0f, &k);
	return scale2(p, k);
}

/* ------------------------------------------------------------------------------------- */
/* tanh                                                                                   */

/*
 * tanh(x) = x + x * s * T(s), s = x^2, 0 <= s <= 1: T interpolates (tanh(x)/x - 1)/s at the
 * 9 Chebyshev nodes of [0, 1] (degree 8), coefficients rounded to nearest float.
 */

float pccx__f32_tanh(float x)
{
	uint32_t u = pccx_f32_bits(x);
	uint32_t sign = u & 0x80000000u;
	float a = pccx_f32_from_bits(u & 0x7FFFFFFFu);
	float s, q, t, e;
	int k = 0;

	if (is_nan(x))
		return qnan();
	if (a <= 1.0f) {
		s = a * a;
		q = PCCX_NUM_TANH_T7 + s * PCCX_NUM_TANH_T8;
		q = PCCX_NUM_TANH_T6 + s * q;
		q = PCCX_NUM_TANH_T5 + s * q;
		q = PCCX_NUM_TANH_T4 + s * q;
		q = PCCX_NUM_TANH_T3 + s * q;
		q = PCCX_NUM_TANH_T2 + s * q;
		q = PCCX_NUM_TANH_T1 + s * q;
		q = PCCX_NUM_TANH_T0 + s * q;
		t = a + a * (s * q);
	} else if (a < 9.5f) {
		/* tanh(a) = 1 - 2 / (e^{2a} + 1); here 2/(e^{2a}+1) <= 0.24, so its error is damped. */
		e = exp_reduce(2.0f * a, 0.0f, &k);
		e = scale2(e, k);
		t = 1.0f - 2.0f / (e + 1.0f);
	} else {
		t = 1.0f;	/* 1 - tanh(a) < 2^-25 for a > 9.011 */
	}
	return pccx_f32_from_bits(pccx_f32_bits(t) | sign);
}

/* ------------------------------------------------------------------------------------- */
/* GELU, tanh form                                                                        */

/*
 * GELU(x) = 0.5 x (1 + tanh(v)), v = C x (1 + A x^2), C = sqrt(2/pi), A = 0.044715, evaluated as
 * the algebraically identical x / (1 + e^{-2v}), which has no cancellation for negative x.
 * v is carried as a float-float pair so that its rounding error (amplified by |2v| in the
 * result) stays below 2^-40 relative. C and A are exact reals split as HI + LO.
 */

float pccx__f32_gelu(float x)
{
	float sh, sl, th, tl, uh, ul, mh, ml, vh, vl, wh, wl, t, p, dh, dl, y, ph, pl;
	int k = 0;

	if (is_nan(x))
		return qnan();
	if (x >= 10.0f)
		return x;	/* e^{-2v} < 2^-125: x / (1 + e^{-2v}) rounds to x; also +Inf */
	if (x <= -11.0f)
		return -0.0f;	/* |GELU(x)| < 2^-151: rounds to -0; also -Inf */
	if ((pccx_f32_bits(x) & 0x7FFFFFFFu) < 0x21800000u)
		return 0.5f * x;	/* |x| < 2^-60: GELU(x) = x/2 (1 + 0.8 x + ...) rounds to RN(x/2) */

	two_prod(x, x, &sh, &sl);			/* x^2 */
	two_prod(PCCX_NUM_GELU_A_HI, sh, &th, &tl);		/* A x^2 */
	tl = tl + (PCCX_NUM_GELU_A_HI * sl + PCCX_NUM_GELU_A_LO * sh);
	two_sum(1.0f, th, &uh, &ul);			/* 1 + A x^2 */
	ul = ul + tl;
	two_prod(x, uh, &mh, &ml);			/* x (1 + A x^2) */
	ml = ml + x * ul;
	two_prod(PCCX_NUM_GELU_C_HI, mh, &vh, &vl);		/* v */
	vl = vl + (PCCX_NUM_GELU_C_HI * ml + PCCX_NUM_GELU_C_LO * mh);
	fast_two_sum(-2.0f * vh, -2.0f * vl, &wh, &wl);	/* w = -2v */

	if (wh <= 80.0f) {
		/*
		 * x / (dh + dl) with dh + dl = 1 + e^w to ~2^-40; y0 = x / dh is refined by the
		 * remainder x - y0 (dh + dl) so that only the last addition rounds at full weight.
		 */
		p = exp_reduce2(wh, wl, &k, &t);
		two_sum(1.0f, scale2(p, k), &dh, &dl);
		dl = dl + scale2(t, k);
		y = x / dh;
		two_prod(y, dh, &ph, &pl);
		t = ((x - ph) - pl) - y * dl;
		return y + t / dh;
	}
	/*
	 * x < -9.9: e^{-2v} > 5e34, so GELU = x e^{2v} to within 2^-115 relative; the product stays
	 * normal until the final scaling, which is the only rounding into the subnormal range.
	 */
	p = exp_reduce2(-wh, -wl, &k, &t);
	two_prod(x, p, &ph, &pl);
	return scale2(ph + (pl + x * t), k);
}

/* ------------------------------------------------------------------------------------- */
/* sin, cos                                                                               */

static const uint32_t two_over_pi[PCCX_NUM_TWO_OVER_PI_WORDS] = { PCCX_NUM_TWO_OVER_PI };

/*
 * Payne-Hanek reduction of a finite a > pi/4 (a = m 2^E): a = (4n + q) pi/2 + r, |r| <= pi/4,
 * r returned as rh + rl. Integer arithmetic only: the 96 bits of 2/pi that can affect
 * (a * 2/pi) mod 4 and its first 64 fraction bits are multiplied by the 24-bit m exactly.
 */
static unsigned reduce_pio2(float a, float *rh, float *rl)
{
	uint32_t u = pccx_f32_bits(a);
	uint64_t m = (u & 0x7FFFFFu) | 0x800000u;
	int e = (int)(u >> 23) - 150;	/* a = m * 2^e, e in [-24, 104] */
	int i0 = e - 1 > 1 ? e - 1 : 1;	/* first 2/pi bit whose product has weight < 4 */
	int o = i0 - 1, w = o / 32, b = o % 32;
	uint32_t win[3];
	uint64_t p0, p1, p2, c, hi, lo, f, mag;
	unsigned q, t, sh, lz, neg;
	float fh, fl, ph, pe;
	int j;

	for (j = 0; j < 3; j++)
		win[j] = b ? (two_over_pi[w + j] << b) | (two_over_pi[w + j + 1] >> (32 - b))
			   : two_over_pi[w + j];
	/* P = m * win (120 bits) as hi:lo. */
	p2 = m * win[2];
	p1 = m * win[1];
	p0 = m * win[0];
	lo = p2 & 0xFFFFFFFFu;
	c = (p2 >> 32) + (p1 & 0xFFFFFFFFu);
	lo |= c << 32;
	c = (c >> 32) + (p1 >> 32) + (p0 & 0xFFFFFFFFu);
	hi = c & 0xFFFFFFFFu;
	c = (c >> 32) + (p0 >> 32);
	hi |= c << 32;
	/* a * 2/pi = P * 2^-sh (mod 4), sh in [94, 120]. */
	sh = (unsigned)(i0 + 95 - e);
	q = (unsigned)(hi >> (sh - 64)) & 3u;
	t = 128u - sh;	/* 8..34 */
	f = (hi << t) | (lo >> (64u - t));	/* fraction, 64 bits */
	/* Fractions >= 1/2 belong to the next quadrant with a negative remainder. */
	neg = (unsigned)(f >> 63);
	q = (q + neg) & 3u;
	mag = neg ? (uint64_t)0 - f : f;
	if (mag == 0) {
		*rh = 0.0f;
		*rl = 0.0f;
		return q;
	}
	lz = (unsigned)__builtin_clzll(mag);
	mag <<= lz;
	/* mag * 2^(-64-lz) = fh + fl, 48 significant bits. */
	fh = (float)(uint32_t)(mag >> 40) * pow2i(-24 - (int)lz);
	fl = (float)(uint32_t)((mag >> 16) & 0xFFFFFFu) * pow2i(-48 - (int)lz);
	two_prod(fh, PCCX_NUM_PIO2_HI, &ph, &pe);
	pe = pe + (fh * PCCX_NUM_PIO2_LO + fl * PCCX_NUM_PIO2_HI);
	fast_two_sum(ph, pe, rh, rl);
	if (neg) {
		*rh = -*rh;
		*rl = -*rl;
	}
	return q;
}

/* sin(rh + rl), |rh| <= pi/4, |rl| <= 2^-24 |rh|. */
static float sin_kernel(float rh, float rl)
{
	float s = rh * rh;
	float p = PCCX_NUM_SIN_S3 + s * PCCX_NUM_SIN_S4;

	p = PCCX_NUM_SIN_S2 + s * p;
	p = PCCX_NUM_SIN_S1 + s * p;
	/* sin(rh + rl) = sin rh + rl cos rh, cos rh ~ 1 - s/2. */
	return rh + (rh * (s * p) + (rl - rl * (0.5f * s)));
}

/* cos(rh + rl), |rh| <= pi/4. */
static float cos_kernel(float rh, float rl)
{
	float sh, sl, hz, w, tail, p;

	two_prod(rh, rh, &sh, &sl);
	hz = 0.5f * sh;
	w = 1.0f - hz;
	tail = (1.0f - w) - hz;	/* exact rounding error of w */
	p = PCCX_NUM_COS_C4 + sh * PCCX_NUM_COS_C5;
	p = PCCX_NUM_COS_C3 + sh * p;
	p = PCCX_NUM_COS_C2 + sh * p;
	/* cos(rh + rl) = cos rh - rl sin rh. */
	tail = tail + ((sh * sh) * p - (0.5f * sl + rh * rl));
	return w + tail;
}

static float sincos_eval(float x, bool want_cos)
{
	uint32_t u = pccx_f32_bits(x);
	uint32_t sign = u & 0x80000000u;
	uint32_t au = u & 0x7FFFFFFFu;
	float a = pccx_f32_from_bits(au), rh, rl, y;
	unsigned q = 0;

	if (au >= 0x7F800000u)
		return qnan();	/* NaN, +-Inf */
	if (au <= PCCX_NUM_PIO4_BITS) {
		rh = a;
		rl = 0.0f;
	} else {
		q = reduce_pio2(a, &rh, &rl);
	}
	/* sin(a + q pi/2) cycles sin, cos, -sin, -cos; cos(a) = sin(a + pi/2). */
	if (want_cos)
		q = (q + 1u) & 3u;
	y = (q & 1u) ? cos_kernel(rh, rl) : sin_kernel(rh, rl);
	if (q & 2u)
		y = -y;
	if (!want_cos)
		y = pccx_f32_from_bits(pccx_f32_bits(y) ^ sign);
	return y;
}

float pccx__f32_sin(float x)
{
	return sincos_eval(x, false);
}

float pccx__f32_cos(float x)
{
	return sincos_eval(x, true);
}

/* ------------------------------------------------------------------------------------- */
/* sqrt, rsqrt, reciprocal                                                                */

/*
 * Decompose a positive finite x as R * 2^(2h) with R an integer in [2^46, 2^48) (exactly,
 * subnormals included); returns R, stores h.
 */
static uint64_t sqrt_decompose(uint32_t u, int *h)
{
	int e = (int)(u >> 23);
	uint64_t m = u & 0x7FFFFFu;
	int ex;

	if (e == 0) {
		e = 1;
		while (!(m & 0x800000u)) {
			m <<= 1;
			e--;
		}
	} else {
		m |= 0x800000u;
	}
	ex = e - 150;	/* x = m * 2^ex */
	if (ex & 1) {
		*h = (ex - 23) / 2;
		return m << 23;
	}
	*h = (ex - 24) / 2;
	return m << 24;
}

/* floor(sqrt(v)) and the remainder v - root^2, bit by bit. */
static uint64_t isqrt64(uint64_t v, uint64_t *rem)
{
	uint64_t res = 0, bit = (uint64_t)1 << 62;

	while (bit > v)
		bit >>= 2;
	while (bit) {
		if (v >= res + bit) {
			v -= res + bit;
			res = (res >> 1) + bit;
		} else {
			res >>= 1;
		}
		bit >>= 2;
	}
	*rem = v;
	return res;
}

/* (hi, lo) = a * b, full 128-bit product. */
static void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
	uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);

	*lo = (mid << 32) | (p00 & 0xFFFFFFFFu);
	*hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* a * b <= 2^n, n in [64, 127]. */
static bool mul_le_pow2(uint64_t a, uint64_t b, unsigned n)
{
	uint64_t hi, lo, lim = (uint64_t)1 << (n - 64);

	mul64(a, b, &hi, &lo);
	return hi < lim || (hi == lim && lo == 0);
}

float pccx__f32_sqrt(float x)
{
	uint32_t u = pccx_f32_bits(x);
	uint64_t r, root, rem;
	int h;

	if ((u & 0x7FFFFFFFu) == 0)
		return x;			/* +-0 */
	if (u > 0x7F800000u)
		return qnan();			/* NaN (either sign) and negative numbers */
	if (u == 0x7F800000u)
		return x;
	r = sqrt_decompose(u, &h);
	root = isqrt64(r, &rem);		/* in [2^23, 2^24) */
	/* (root + 1/2)^2 = root^2 + root + 1/4 is never an integer: no ties. */
	if (rem > root)
		root++;
	/* sqrt(x) = root * 2^h, exponent 23 + h; adding root (hidden bit included) carries into it. */
	return pccx_f32_from_bits((uint32_t)((h + 23 + 127 - 1) << 23) + (uint32_t)root);
}

float pccx__f32_rsqrt(float x)
{
	uint32_t u = pccx_f32_bits(x);
	uint64_t r, root, rem, y;
	int h;

	if ((u & 0x7FFFFFFFu) == 0)
		return pccx_f32_from_bits((u & 0x80000000u) | 0x7F800000u);	/* +-0 -> +-Inf */
	if (u > 0x7F800000u)
		return qnan();
	if (u == 0x7F800000u)
		return 0.0f;
	r = sqrt_decompose(u, &h);
	/* rsqrt(x) = Y * 2^(-47 - h), Y = 2^47 / sqrt(r) in (2^23, 2^24]. */
	root = isqrt64(r, &rem);
	y = ((uint64_t)1 << 47) / root;		/* >= floor(Y), within 2 */
	while (!mul_le_pow2(y * y, r, 94))
		y--;
	while (mul_le_pow2((y + 1) * (y + 1), r, 94))
		y++;
	/* y = floor(Y); round up iff Y > y + 1/2 <=> (2y+1)^2 r < 2^96 (equality is impossible). */
	if (mul_le_pow2((2 * y + 1) * (2 * y + 1), r, 96))
		y++;
	return pccx_f32_from_bits((uint32_t)((23 - 47 - h + 127 - 1) << 23) + (uint32_t)y);
}

float pccx__f32_recip(float x)
{
	float y = 1.0f / x;

	return is_nan(y) ? qnan() : y;
}
