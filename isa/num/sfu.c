// SPDX-License-Identifier: MIT
/*
 * The SFU ("CVO") unit: FP32 inside and in L2. Per element: input stage (SUB, RELU), function,
 * output stage (ACCM), store (NaN made canonical). Reductions run strictly in index order.
 */
#include "pccx_num.h"

static float qnan(void)
{
	return pccx_f32_from_bits(PCCX_F32_QNAN_BITS);
}

bool pccx__sfu_is_reduction(enum pccx_sfu_fn fn)
{
	return fn == PCCX_SFU_SUM || fn == PCCX_SFU_SUMSQ || fn == PCCX_SFU_MAX;
}

bool pccx__sfu_is_binary(enum pccx_sfu_fn fn)
{
	return fn == PCCX_SFU_MUL || fn == PCCX_SFU_ADD;
}

/* max(a, b): NaN if either is NaN, max(+0, -0) = +0. */
static float max2(float a, float b)
{
	if (pccx_f32_is_nan(a) || pccx_f32_is_nan(b))
		return qnan();
	if (a == b)	/* only +0/-0 can differ here: prefer the positive one */
		return (pccx_f32_bits(a) >> 31) ? b : a;
	return a > b ? a : b;
}

float pccx__sfu_unary(enum pccx_sfu_fn fn, unsigned flags, float S, float x)
{
	switch (fn) {
	case PCCX_SFU_EXP:
		return pccx__f32_exp(x);
	case PCCX_SFU_SQRT:
		return pccx__f32_sqrt(x);
	case PCCX_SFU_GELU:
		return pccx__f32_gelu(x);
	case PCCX_SFU_SIN:
		return pccx__f32_sin(x);
	case PCCX_SFU_COS:
		return pccx__f32_cos(x);
	case PCCX_SFU_RECIP:
		return pccx__f32_recip(x);
	case PCCX_SFU_TANH:
		return pccx__f32_tanh(x);
	case PCCX_SFU_RSQRT:
		return pccx__f32_rsqrt(x);
	case PCCX_SFU_SCALE:
		return pccx_f32_canon((flags & PCCX_SFU_F_RECIP) ? x / S : x * S);
	default:
		return qnan();
	}
}

/* Input stage shared by the element-wise and the reduction paths. */
static float input_stage(unsigned flags, float S, float x)
{
	if (flags & PCCX_SFU_F_SUB)
		x = x - S;
	/* NaN > 0 is false but NaN must stay NaN, so test for it explicitly. */
	if ((flags & PCCX_SFU_F_RELU) && !(x > 0.0f) && !pccx_f32_is_nan(x))
		x = 0.0f;
	return x;
}

float pccx__sfu_elem(enum pccx_sfu_fn fn, unsigned flags, float S, float s, float d)
{
	float x = input_stage(flags, S, s), y;

	switch (fn) {
	case PCCX_SFU_MUL:
		/*
		 * smul: (d * S) * x, rounded after each multiply: exactly a SCALE of d by S
		 * stored (a NaN there is made canonical, but a NaN stays a NaN through the
		 * second multiply and is made canonical at the store anyway), then a MUL by x.
		 */
		y = (flags & PCCX_SFU_F_SCALE) ? (d * S) * x : d * x;
		break;
	case PCCX_SFU_ADD:
		y = d + x;
		break;
	default:
		if (pccx__sfu_is_reduction(fn) || (unsigned)fn >= PCCX_SFU_NFN)
			return qnan();
		y = pccx__sfu_unary(fn, flags, S, x);
		break;
	}
	if (flags & PCCX_SFU_F_ACCM)
		y = y + d;
	return pccx_f32_canon(y);
}

void pccx__sfu_vector(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
		      float *dst, size_t n)
{
	size_t i;

	if (pccx__sfu_is_reduction(fn))
		return;
	for (i = 0; i < n; i++)
		dst[i] = pccx_f32_store(pccx__sfu_elem(fn, flags, S, src[i], dst[i]));
}

float pccx__sfu_reduce(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src, size_t n)
{
	float acc, x;
	bool nan = false;
	size_t i;

	switch (fn) {
	case PCCX_SFU_SUM:
	case PCCX_SFU_SUMSQ:
		/* with accm the sum continues one over an earlier part of the vector: the same
		 * additions in the same order as one reduction over the whole */
		acc = (flags & PCCX_SFU_F_ACCM) ? S : 0.0f;
		for (i = 0; i < n; i++) {
			x = input_stage(flags, S, src[i]);
			if (fn == PCCX_SFU_SUMSQ)
				x = x * x;
			acc = acc + x;
		}
		if (flags & PCCX_SFU_F_MEAN)
			acc = acc / (float)n;
		return pccx_f32_canon(acc);
	case PCCX_SFU_MAX:
		acc = pccx_f32_from_bits(0xFF800000u);	/* -Inf */
		for (i = 0; i < n; i++) {
			x = input_stage(flags, S, src[i]);
			if (pccx_f32_is_nan(x))
				nan = true;
			else
				acc = max2(acc, x);
		}
		return nan ? qnan() : acc;
	default:
		return qnan();
	}
}

float pccx__sfu_scalar(enum pccx_sfu_fn fn, unsigned flags, float S, float v)
{
	switch (fn) {
	case PCCX_SFU_SCALE:
		return pccx_f32_canon((flags & PCCX_SFU_F_RECIP) ? S / v : S * v);
	case PCCX_SFU_MUL:
		return pccx_f32_canon(S * v);
	case PCCX_SFU_ADD:
	case PCCX_SFU_SUM:
		return pccx_f32_canon(S + v);
	case PCCX_SFU_SUMSQ:
		return pccx_f32_canon(S + v * v);
	case PCCX_SFU_MAX:
		return max2(S, v);
	default:
		return pccx__sfu_unary(fn, flags, S, S);
	}
}
