// SPDX-License-Identifier: MIT
/*
 * The SFU's cheap element-wise functions (MUL, ADD, SCALE) over a vector, stage by stage over
 * blocks of 64 elements so that the compiler vectorises each stage. Every element goes through
 * exactly the IEEE operations of pccx__sfu_elem in the same order (input stage, function,
 * accumulate, canonical NaN), so the bits are those of pccx__sfu_vector. With AVX-512 these and
 * GELU and tanh go to pccx__kern_sfu_avx512; the other functions to pccx__sfu_vector.
 */
#include <string.h>

#include "kernels.h"
#include "pccx_num.h"

#define BLK 64

static void canon_block(float *y)
{
	const float qnan = pccx_f32_from_bits(PCCX_F32_QNAN_BITS);
	unsigned i;

	for (i = 0; i < BLK; i++)
		y[i] = y[i] != y[i] ? qnan : y[i];
}

/* The input stage of pccx__sfu_elem: SUB x = x - S; RELU x = x > 0 ? x : +0 (NaN stays). */
static void input_block(unsigned flags, float S, float *x)
{
	unsigned i;

	if (flags & PCCX_SFU_F_SUB)
		for (i = 0; i < BLK; i++)
			x[i] = x[i] - S;
	if (flags & PCCX_SFU_F_RELU)
		for (i = 0; i < BLK; i++)
			x[i] = (x[i] > 0.0f || x[i] != x[i]) ? x[i] : 0.0f;
}

/* dst[0 .. n), n <= BLK; src may equal dst (both are read before dst is written). */
static void cheap_block(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			float *dst, size_t n)
{
	float x[BLK], d[BLK], y[BLK];
	unsigned i;

	memcpy(x, src, n * sizeof(float));
	memcpy(d, dst, n * sizeof(float));
	if (n < BLK) {
		/* lanes past n are computed on zeros and not stored */
		memset(x + n, 0, (BLK - n) * sizeof(float));
		memset(d + n, 0, (BLK - n) * sizeof(float));
	}
	input_block(flags, S, x);
	if (fn == PCCX_SFU_MUL && (flags & PCCX_SFU_F_SCALE)) {
		for (i = 0; i < BLK; i++)
			y[i] = (d[i] * S) * x[i];
	} else if (fn == PCCX_SFU_MUL) {
		for (i = 0; i < BLK; i++)
			y[i] = d[i] * x[i];
	} else if (fn == PCCX_SFU_ADD) {
		for (i = 0; i < BLK; i++)
			y[i] = d[i] + x[i];
	} else if (flags & PCCX_SFU_F_RECIP) {	/* SCALE, canonical as pccx__sfu_unary's */
		for (i = 0; i < BLK; i++)
			y[i] = x[i] / S;
		canon_block(y);
	} else {
		for (i = 0; i < BLK; i++)
			y[i] = x[i] * S;
		canon_block(y);
	}
	if (flags & PCCX_SFU_F_ACCM)
		for (i = 0; i < BLK; i++)
			y[i] = y[i] + d[i];
	canon_block(y);
	memcpy(dst, y, n * sizeof(float));
}

bool pccx__kern_sfu_cheap(enum pccx_sfu_fn fn)
{
	return fn == PCCX_SFU_MUL || fn == PCCX_SFU_ADD || fn == PCCX_SFU_SCALE;
}

void pccx__kern_sfu_blocks(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n)
{
	size_t i;

	if (!pccx__kern_sfu_cheap(fn)) {
		pccx__sfu_vector(fn, flags, S, src, dst, n);
		return;
	}
	for (i = 0; i < n; i += BLK)
		cheap_block(fn, flags, S, src + i, dst + i, n - i < BLK ? n - i : BLK);
}

void pccx__kern_sfu_vector(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n)
{
	if (!pccx__kern_sfu_avx512(fn, flags, S, src, dst, n))
		pccx__kern_sfu_blocks(fn, flags, S, src, dst, n);
}

void pccx__kern_out_store(const float *y, float *out, size_t n, bool accm)
{
	size_t i;

	if (pccx__kern_out_avx512(y, out, n, accm))
		return;
	for (i = 0; i < n; i++)
		out[i] = pccx__out_store(y[i], accm, out[i]);
}
