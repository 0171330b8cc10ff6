// SPDX-License-Identifier: MIT
/*
 * Dot products of the GEMV/GEMM units and the output stage. The order of the FP32 operations
 * is the contract (docs/numerics.md): a vectorised version must reproduce it exactly, which
 * means the block loop stays sequential; only the int32 block dot may be reordered.
 */
#include "pccx_num.h"

float pccx__out_store(float r, bool accm, float old)
{
	if (accm)
		r = r + old;
	return pccx_f32_store(r);
}

/* Exact int32 dot of 32 INT4 weights (16 bytes, low nibble first) with 32 INT8 activations. */
static int32_t block_dot(const uint8_t *nib, const int8_t *q8)
{
	int32_t dot = 0;
	unsigned j;

	for (j = 0; j < 16; j++) {
		/* (n ^ 8) - 8 sign-extends a 4-bit two's complement nibble. */
		int32_t lo = (int32_t)((nib[j] & 0xFu) ^ 8u) - 8;
		int32_t hi = (int32_t)((nib[j] >> 4) ^ 8u) - 8;

		dot += lo * q8[2 * j] + hi * q8[2 * j + 1];
	}
	return dot;
}

float pccx__q4_row_dot(const uint8_t *nibbles, const uint16_t *scales, const int8_t *q8,
		       const float *sx, size_t K)
{
	size_t nb = K / PCCX_QBLK, b;
	float acc = 0.0f, t, d;

	for (b = 0; b < nb; b++) {
		int32_t dot = block_dot(nibbles + b * (PCCX_QBLK / 2), q8 + b * PCCX_QBLK);

		d = scales ? pccx__fp16_to_f32(scales[b]) : 1.0f;
		t = d * sx[b];
		acc = acc + (float)dot * t;
	}
	return pccx_f32_canon(acc);
}

bool pccx__q4c_block_read(const int8_t *q8, float sx)
{
	size_t i;

	if ((pccx_f32_bits(sx) & 0x7F800000u) == 0x7F800000u)
		return true;       /* 0 * Inf or NaN: the dense sum becomes NaN */
	for (i = 0; i < PCCX_QBLK; i++)
		if (q8[i])
			return true;
	return false;
}

void pccx__q4c_column(const uint8_t *col, size_t rows, int32_t x, int32_t *sum)
{
	size_t i;

	/* two's complement nibbles, as in block_dot */
	for (i = 0; i + 1 < rows; i += 2) {
		sum[i] += ((int32_t)((col[i / 2] & 0xFu) ^ 8u) - 8) * x;
		sum[i + 1] += ((int32_t)((col[i / 2] >> 4) ^ 8u) - 8) * x;
	}
	if (i < rows)
		sum[i] += ((int32_t)((col[i / 2] & 0xFu) ^ 8u) - 8) * x;
}

void pccx__q4c_block_end(const uint8_t *scales, size_t rows, float sx, int32_t *sum,
			 float *acc)
{
	size_t i;

	for (i = 0; i < rows; i++) {
		float t = pccx__fp16_to_f32((uint16_t)(scales[2 * i] | scales[2 * i + 1] << 8)) * sx;

		acc[i] = acc[i] + (float)sum[i] * t;
		sum[i] = 0;
	}
}

float pccx__f32_row_dot(const float *w, const float *x, size_t K)
{
	float acc = 0.0f;
	size_t k;

	for (k = 0; k < K; k++)
		acc = acc + w[k] * x[k];
	return pccx_f32_canon(acc);
}

void pccx__f32_colsum(const float *W, const float *x, size_t K, size_t N, float *y)
{
	size_t k, n;

	for (n = 0; n < N; n++)
		y[n] = 0.0f;
	/* Row by row: each y[n] still sees its terms in ascending k, one rounding per add. */
	for (k = 0; k < K; k++) {
		float xk = x[k];
		const float *row = W + k * N;

		for (n = 0; n < N; n++)
			y[n] = y[n] + xk * row[n];
	}
	for (n = 0; n < N; n++)
		y[n] = pccx_f32_canon(y[n]);
}
