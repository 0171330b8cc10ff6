// SPDX-License-Identifier: MIT
/*
 * Block quantisation: Q4 weight blocks (import from llama.cpp Q4_0, requantisation of float
 * weights) and the W4A8 INT8 activation quantiser at GEMV input.
 */
#include "pccx_num.h"

void pccx__q4_from_ggml_q4_0(const uint8_t blk18[18], uint16_t *d, uint8_t nib16[16])
{
	const uint8_t *qs = blk18 + 2;
	unsigned j, u0, u1;

	*d = (uint16_t)(blk18[0] | (blk18[1] << 8));
	/* Q4_0 nibble u stands for u - 8; as a 4-bit two's complement value that is u ^ 8. */
	for (j = 0; j < 16; j++) {
		u0 = (j < 8) ? (qs[2 * j] & 0xFu) : (qs[2 * j - 16] >> 4);
		u1 = (j < 8) ? (qs[2 * j + 1] & 0xFu) : (qs[2 * j + 1 - 16] >> 4);
		nib16[j] = (uint8_t)((u0 ^ 8u) | ((u1 ^ 8u) << 4));
	}
}

int pccx__q4_quantize_block(const float x[32], uint16_t *d, uint8_t nib16[16])
{
	float m = 0.0f, amax = 0.0f, a, dq;
	uint16_t h;
	unsigned i;

	for (i = 0; i < 16; i++)
		nib16[i] = 0;
	for (i = 0; i < 32; i++) {
		uint32_t ab = pccx_f32_bits(x[i]) & 0x7FFFFFFFu;

		if (ab >= 0x7F800000u) {
			*d = 0x7E00u;
			return -1;
		}
		a = pccx_f32_from_bits(ab);
		if (a > amax) {
			amax = a;
			m = x[i];
		}
	}
	h = pccx__f32_to_fp16(m / -8.0f);
	if ((h & 0x7FFFu) == 0x7C00u)
		h = (uint16_t)((h & 0x8000u) | 0x7BFFu);	/* saturate to +-65504 */
	*d = h;
	dq = pccx__fp16_to_f32(h);
	if (dq == 0.0f)
		return 0;
	for (i = 0; i < 32; i++)
		pccx__int4_set(nib16, i, (int)pccx__f32_rne_clamp(x[i] / dq, -8, 7));
	return 0;
}

float pccx__q4_weight(const uint8_t *nibbles, const uint16_t *scales, size_t k)
{
	float d = scales ? pccx__fp16_to_f32(scales[k / PCCX_QBLK]) : 1.0f;

	return pccx_f32_canon(d * (float)pccx__int4_get(nibbles, k));
}

void pccx__q8_quantize_block(const float x[32], int8_t q[32], float *sx)
{
	float amax = 0.0f, inv;
	bool finite = true;
	unsigned i;

	for (i = 0; i < 32; i++) {
		uint32_t ab = pccx_f32_bits(x[i]) & 0x7FFFFFFFu;
		float a = pccx_f32_from_bits(ab);

		if (ab >= 0x7F800000u)
			finite = false;
		else if (a > amax)
			amax = a;
	}
	if (!finite || amax == 0.0f) {
		for (i = 0; i < 32; i++)
			q[i] = 0;
		*sx = finite ? 0.0f : pccx_f32_from_bits(PCCX_F32_QNAN_BITS);
		return;
	}
	inv = 127.0f / amax;
	for (i = 0; i < 32; i++)
		q[i] = (int8_t)pccx__f32_rne_clamp(x[i] * inv, -127, 127);
	*sx = amax / 127.0f;
}

void pccx__q8_quantize(const float *x, size_t K, int8_t *q, float *sx)
{
	size_t b;

	for (b = 0; b < K / PCCX_QBLK; b++)
		pccx__q8_quantize_block(x + b * PCCX_QBLK, q + b * PCCX_QBLK, sx + b);
}
