// SPDX-License-Identifier: MIT
/*
 * The SFU's element-wise MUL, ADD, SCALE, GELU and tanh, and the matmul output stage, on 16
 * lanes (AVX-512). GELU and tanh
 * are isa/num's algorithms (transc.c) operation for operation, each IEEE operation of a lane
 * exactly the scalar one (no FMA: the build has -ffp-contract=off and every product and sum is
 * its own instruction). Branches become masks: a path is computed for all lanes when any lane
 * takes it, and each lane keeps the value of the path the scalar code takes for it (the others
 * may see Inf or NaN; no exception traps); a path no lane takes is not computed (GELU's large
 * negative branch, tanh's exponential above 1, scale2's out-of-range exponents, all rare).
 * Through the SFU's input stage, accumulate and canonical NaN, the bits are those of
 * pccx__sfu_vector.
 */
#include "kernels.h"
#include "pccx_num.h"
#include "pccx_num_consts.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")))

typedef __m512 V;
typedef __m512i VI;

#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define C(x) _mm512_set1_ps(x)

/* 2^k per lane from its exponent bits (valid for -126 <= k <= 127, as the scalar pow2i). */
T512 static V pow2i(VI k)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)),
						     23));
}

T512 static void split(V a, V *hi, V *lo)
{
	V t = MUL(C(4097.0f), a);

	*hi = SUB(t, SUB(t, a));
	*lo = SUB(a, *hi);
}

T512 static void two_prod(V a, V b, V *p, V *e)
{
	V ah, al, bh, bl;

	*p = MUL(a, b);
	split(a, &ah, &al);
	split(b, &bh, &bl);
	*e = ADD(ADD(ADD(SUB(MUL(ah, bh), *p), MUL(ah, bl)), MUL(al, bh)), MUL(al, bl));
}

T512 static void two_sum(V a, V b, V *s, V *e)
{
	V bb;

	*s = ADD(a, b);
	bb = SUB(*s, a);
	*e = ADD(SUB(a, SUB(*s, bb)), SUB(b, bb));
}

T512 static void fast_two_sum(V a, V b, V *s, V *e)
{
	*s = ADD(a, b);
	*e = SUB(b, SUB(*s, a));
}

T512 static V exp_reduce2(V xh, V xl, VI *k, V *lo)
{
	V kf = SUB(ADD(MUL(xh, C(PCCX_NUM_INV_LN2)), C(PCCX_NUM_RNE_MAGIC)),
		   C(PCCX_NUM_RNE_MAGIC));
	V rh = SUB(xh, MUL(kf, C(PCCX_NUM_LN2_HI)));
	V rl = SUB(xl, MUL(kf, C(PCCX_NUM_LN2_LO)));
	V r = ADD(rh, rl), s, e, hi;
	V q = ADD(C(PCCX_NUM_EXP_C7), MUL(r, C(PCCX_NUM_EXP_C8)));

	q = ADD(C(PCCX_NUM_EXP_C6), MUL(r, q));
	q = ADD(C(PCCX_NUM_EXP_C5), MUL(r, q));
	q = ADD(C(PCCX_NUM_EXP_C4), MUL(r, q));
	q = ADD(C(PCCX_NUM_EXP_C3), MUL(r, q));
	q = ADD(C(PCCX_NUM_EXP_C2), MUL(r, q));
	*k = _mm512_cvttps_epi32(kf);	/* kf is a whole number */
	fast_two_sum(C(1.0f), rh, &s, &e);
	fast_two_sum(s, ADD(e, ADD(rl, MUL(MUL(r, r), q))), &hi, lo);
	return hi;
}

/* p * 2^k with one rounding, the scalar scale2's three cases per lane. */
T512 static V scale2(V p, VI k)
{
	const VI c127 = _mm512_set1_epi32(127), c125 = _mm512_set1_epi32(125);
	__mmask16 hi = _mm512_cmpgt_epi32_mask(k, c127);
	__mmask16 lo = _mm512_cmplt_epi32_mask(k, _mm512_set1_epi32(-125));
	V mid = MUL(p, pow2i(k));

	if (hi)
		mid = _mm512_mask_mov_ps(mid, hi, MUL(MUL(p, pow2i(_mm512_sub_epi32(k, c127))),
						      pow2i(c127)));
	if (lo)
		mid = _mm512_mask_mov_ps(mid, lo, MUL(MUL(p, pow2i(_mm512_add_epi32(k, c125))),
						      pow2i(_mm512_set1_epi32(-125))));
	return mid;
}

T512 static V qnan16(void)
{
	return _mm512_castsi512_ps(_mm512_set1_epi32((int)PCCX_F32_QNAN_BITS));
}

/* pccx__f32_gelu per lane. */
T512 static V gelu16(V x)
{
	V sh, sl, th, tl, uh, ul, mh, ml, vh, vl, wh, wl, t, p, dh, dl, y, ph, pl, ra, rb;
	VI k, ax = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
	__mmask16 path_a;

	two_prod(x, x, &sh, &sl);
	two_prod(C(PCCX_NUM_GELU_A_HI), sh, &th, &tl);
	tl = ADD(tl, ADD(MUL(C(PCCX_NUM_GELU_A_HI), sl), MUL(C(PCCX_NUM_GELU_A_LO), sh)));
	two_sum(C(1.0f), th, &uh, &ul);
	ul = ADD(ul, tl);
	two_prod(x, uh, &mh, &ml);
	ml = ADD(ml, MUL(x, ul));
	two_prod(C(PCCX_NUM_GELU_C_HI), mh, &vh, &vl);
	vl = ADD(vl, ADD(MUL(C(PCCX_NUM_GELU_C_HI), ml), MUL(C(PCCX_NUM_GELU_C_LO), mh)));
	fast_two_sum(MUL(C(-2.0f), vh), MUL(C(-2.0f), vl), &wh, &wl);
	path_a = _mm512_cmp_ps_mask(wh, C(80.0f), _CMP_LE_OQ);

	/* wh <= 80: x / (1 + e^w) refined by its remainder */
	p = exp_reduce2(wh, wl, &k, &t);
	two_sum(C(1.0f), scale2(p, k), &dh, &dl);
	dl = ADD(dl, scale2(t, k));
	y = _mm512_div_ps(x, dh);
	two_prod(y, dh, &ph, &pl);
	t = SUB(SUB(SUB(x, ph), pl), MUL(y, dl));
	ra = ADD(y, _mm512_div_ps(t, dh));

	/* else: x e^{2v} */
	y = ra;
	if (path_a != (__mmask16)0xFFFF) {
		p = exp_reduce2(_mm512_sub_ps(_mm512_setzero_ps(), wh),
				_mm512_sub_ps(_mm512_setzero_ps(), wl), &k, &t);
		two_prod(x, p, &ph, &pl);
		rb = scale2(ADD(ph, ADD(pl, MUL(x, t))), k);
		y = _mm512_mask_mov_ps(rb, path_a, ra);
	}
	/* the scalar code's early returns, the first one taken winning */
	y = _mm512_mask_mov_ps(y, _mm512_cmplt_epi32_mask(ax, _mm512_set1_epi32(0x21800000)),
			       MUL(C(0.5f), x));
	y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, C(-11.0f), _CMP_LE_OQ), C(-0.0f));
	y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, C(10.0f), _CMP_GE_OQ), x);
	return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), qnan16());
}

/* pccx__f32_tanh per lane. */
T512 static V tanh16(V x)
{
	const VI sign = _mm512_and_si512(_mm512_castps_si512(x),
					 _mm512_set1_epi32((int)0x80000000u));
	V a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x),
						   _mm512_set1_epi32(0x7FFFFFFF)));
	V s = MUL(a, a), q, t, e, lo;
	__mmask16 small;
	VI k;

	q = ADD(C(PCCX_NUM_TANH_T7), MUL(s, C(PCCX_NUM_TANH_T8)));
	q = ADD(C(PCCX_NUM_TANH_T6), MUL(s, q));
	q = ADD(C(PCCX_NUM_TANH_T5), MUL(s, q));
	q = ADD(C(PCCX_NUM_TANH_T4), MUL(s, q));
	q = ADD(C(PCCX_NUM_TANH_T3), MUL(s, q));
	q = ADD(C(PCCX_NUM_TANH_T2), MUL(s, q));
	q = ADD(C(PCCX_NUM_TANH_T1), MUL(s, q));
	q = ADD(C(PCCX_NUM_TANH_T0), MUL(s, q));
	t = ADD(a, MUL(a, MUL(s, q)));				/* a <= 1 */
	small = _mm512_cmp_ps_mask(a, C(1.0f), _CMP_LE_OQ);
	if (small != (__mmask16)0xFFFF) {
		e = exp_reduce2(MUL(C(2.0f), a), C(0.0f), &k, &lo);
		e = scale2(e, k);
		e = SUB(C(1.0f), _mm512_div_ps(C(2.0f), ADD(e, C(1.0f))));	/* 1 < a < 9.5 */
		e = _mm512_mask_mov_ps(C(1.0f), _mm512_cmp_ps_mask(a, C(9.5f), _CMP_LT_OQ), e);
		t = _mm512_mask_mov_ps(e, small, t);
	}
	t = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
	return _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), qnan16());
}

/* f(x) for the functions handled here; d is the old destination element. */
T512 static V fn16(enum pccx_sfu_fn fn, unsigned flags, float S, V x, V d)
{
	V y;

	switch (fn) {
	case PCCX_SFU_MUL:
		return MUL((flags & PCCX_SFU_F_SCALE) ? MUL(d, C(S)) : d, x);
	case PCCX_SFU_ADD:
		return ADD(d, x);
	case PCCX_SFU_SCALE:	/* canonical, as pccx__sfu_unary's */
		y = (flags & PCCX_SFU_F_RECIP) ? _mm512_div_ps(x, C(S)) : MUL(x, C(S));
		return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), qnan16());
	case PCCX_SFU_GELU:
		return gelu16(x);
	default:
		return tanh16(x);
	}
}

/*
 * dst[i] = canon(f(x) [+ d]) with x = src[i] after SUB and RELU and d the old dst[i]:
 * pccx__sfu_elem's pipeline. The last lanes of a short tail are masked.
 */
T512 static void sfu_avx512(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			    float *dst, size_t n)
{
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 mk = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
		V x = _mm512_maskz_loadu_ps(mk, src + i), d = _mm512_maskz_loadu_ps(mk, dst + i), y;

		if (flags & PCCX_SFU_F_SUB)
			x = SUB(x, C(S));
		if (flags & PCCX_SFU_F_RELU)	/* x > 0 ? x : +0, NaN stays */
			x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, C(0.0f), _CMP_NLE_UQ), x);
		y = fn16(fn, flags, S, x, d);
		if (flags & PCCX_SFU_F_ACCM)
			y = ADD(y, d);
		y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), qnan16());
		_mm512_mask_storeu_ps(dst + i, mk, y);
	}
}

bool pccx__kern_sfu_avx512(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n)
{
	if ((fn != PCCX_SFU_GELU && fn != PCCX_SFU_TANH && !pccx__kern_sfu_cheap(fn)) ||
	    !pccx__kern_have_avx512())
		return false;
	sfu_avx512(fn, flags, S, src, dst, n);
	return true;
}

/* out[i] = pccx__out_store(y[i], accm, out[i]) 16 lanes at a time. */
T512 static void out_avx512(const float *y, float *out, size_t n, bool accm)
{
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 mk = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
		V r = _mm512_maskz_loadu_ps(mk, y + i);

		if (accm)
			r = ADD(r, _mm512_maskz_loadu_ps(mk, out + i));
		r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), qnan16());
		_mm512_mask_storeu_ps(out + i, mk, r);
	}
}

bool pccx__kern_out_avx512(const float *y, float *out, size_t n, bool accm)
{
	if (!pccx__kern_have_avx512())
		return false;
	out_avx512(y, out, n, accm);
	return true;
}

#else

bool pccx__kern_out_avx512(const float *y, float *out, size_t n, bool accm)
{
	(void)y;
	(void)out;
	(void)n;
	(void)accm;
	return false;
}

bool pccx__kern_sfu_avx512(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n)
{
	(void)fn;
	(void)flags;
	(void)S;
	(void)src;
	(void)dst;
	(void)n;
	return false;
}

#endif
