// SPDX-License-Identifier: MIT
/*
 * Format conversions (BF16, FP16, FP32, integers) and INT4 packing.
 * Integer-only: no floating-point arithmetic is done here, so these are exact by construction
 * and need no assumption about the platform's rounding mode.
 */
#include "pccx_num.h"

float pccx__bf16_to_f32(uint16_t h)
{
	return pccx_f32_from_bits((uint32_t)h << 16);
}

uint16_t pccx__f32_to_bf16(float f)
{
	uint32_t u = pccx_f32_bits(f);

	if ((u & 0x7FFFFFFFu) > 0x7F800000u)
		return (uint16_t)(((u >> 16) & 0x8000u) | 0x7FC0u);
	/*
	 * Adding 0x7FFF plus the lowest kept bit rounds to nearest with ties to even; a carry out
	 * of the mantissa correctly bumps the exponent, and past the largest finite value lands
	 * exactly on Inf (0x7F80).
	 */
	u += 0x7FFFu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float pccx__fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1Fu;
	uint32_t m = h & 0x3FFu;

	if (e == 0x1F)
		return pccx_f32_from_bits(sign | 0x7F800000u | (m << 13));
	if (e != 0)
		return pccx_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
	if (m == 0)
		return pccx_f32_from_bits(sign);
	/* Subnormal m * 2^-24: normalise so the leading one becomes the hidden bit. */
	e = 113;
	while (!(m & 0x400u)) {
		m <<= 1;
		e--;
	}
	return pccx_f32_from_bits(sign | (e << 23) | ((m & 0x3FFu) << 13));
}

uint16_t pccx__f32_to_fp16(float f)
{
	uint32_t u = pccx_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t a = u & 0x7FFFFFFFu;
	uint32_t m, q, rem, half;
	unsigned shift;

	if (a > 0x7F800000u)
		return (uint16_t)(sign | 0x7E00u);
	/* 65520 is the midpoint between 65504 (largest finite) and 65536; the tie goes to even = Inf. */
	if (a >= 0x477FF000u)
		return (uint16_t)(sign | 0x7C00u);
	if (a >= 0x38800000u) {
		/* Normal result: rebias the exponent (127 -> 15) and round 13 mantissa bits away. */
		a -= 112u << 23;
		a += 0xFFFu + ((a >> 13) & 1u);
		return (uint16_t)(sign | (a >> 13));
	}
	/* Below 2^-14: binary16 subnormal in units of 2^-24; 2^-25 and below round to zero. */
	if (a <= 0x33000000u)
		return (uint16_t)sign;
	m = (a & 0x7FFFFFu) | 0x800000u;
	shift = 126u - (a >> 23);	/* 14..24 */
	q = m >> shift;
	rem = m & ((1u << shift) - 1u);
	half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (q & 1u)))
		q++;	/* may carry into 0x400, which is the smallest normal: still correct */
	return (uint16_t)(sign | q);
}

int32_t pccx__f32_rne_clamp(float f, int32_t lo, int32_t hi)
{
	uint32_t u = pccx_f32_bits(f);
	uint32_t a = u & 0x7FFFFFFFu;
	uint32_t e, m, rem, half;
	int64_t v;
	unsigned shift;

	if (a > 0x7F800000u)
		return 0;
	e = a >> 23;
	if (e < 126) {
		v = 0;			/* |f| < 0.5 */
	} else if (e >= 127 + 40) {
		v = (int64_t)1 << 40;	/* far beyond any int32 bound: saturates below */
	} else {
		m = (a & 0x7FFFFFu) | 0x800000u;
		if (e >= 150) {
			v = (int64_t)m << (e - 150);
		} else {
			shift = 150u - e;	/* 1..24 */
			v = m >> shift;
			rem = m & ((1u << shift) - 1u);
			half = 1u << (shift - 1u);
			if (rem > half || (rem == half && (v & 1)))
				v++;
		}
	}
	if (u >> 31)
		v = -v;
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return (int32_t)v;
}

int pccx__int4_get(const uint8_t *packed, size_t i)
{
	unsigned nib = (packed[i >> 1] >> ((i & 1u) * 4u)) & 0xFu;

	return (int)(nib ^ 8u) - 8;
}

void pccx__int4_set(uint8_t *packed, size_t i, int v)
{
	unsigned sh = (unsigned)(i & 1u) * 4u;
	unsigned nib = (unsigned)v & 0xFu;

	packed[i >> 1] = (uint8_t)((packed[i >> 1] & ~(0xFu << sh)) | (nib << sh));
}
