// SPDX-License-Identifier: MIT
/*
 * The activations of the Q4 kernels: quantisation, and the vector kernels' layout.
 *
 * W4A8 activation quantisation (pccx__q8_quantize_block's rule) with AVX2 for the blocks that
 * take the common path: amax = max |x| is exact in any order; inv = 127 / amax and sx =
 * amax / 127 are the same scalar divisions; q = x * inv as vector lanes (each lane the scalar
 * IEEE product), rounded to nearest even by an explicit rounding (not the MXCSR mode) and
 * clamped to [-127, 127]. Blocks with an infinite or NaN element, all zeros, or an amax so small
 * that 127 / amax overflows are passed to pccx__q8_quantize_block.
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,f16c")))

/* One block; false when it is not on the common path (then nothing is written). */
T256 static bool block_avx2(const float *x, int8_t *q, float *sx)
{
	const __m256i absm = _mm256_set1_epi32(0x7FFFFFFF), big = _mm256_set1_epi32(0x7F7FFFFF);
	__m256 v[4], inv, m;
	__m256i bits, nonfin = _mm256_setzero_si256(), r[4], p;
	__m128 h;
	float amax, s;
	unsigned i;

	for (i = 0; i < 4; i++) {
		v[i] = _mm256_loadu_ps(x + 8 * i);
		bits = _mm256_and_si256(_mm256_castps_si256(v[i]), absm);
		/* |x| bits above the largest finite float: Inf or NaN */
		nonfin = _mm256_or_si256(nonfin, _mm256_cmpgt_epi32(bits, big));
		m = _mm256_castsi256_ps(bits);
		r[i] = _mm256_castps_si256(i ? _mm256_max_ps(_mm256_castsi256_ps(r[i - 1]), m) : m);
	}
	if (!_mm256_testz_si256(nonfin, nonfin))
		return false;
	h = _mm_max_ps(_mm256_castps256_ps128(_mm256_castsi256_ps(r[3])),
		       _mm256_extractf128_ps(_mm256_castsi256_ps(r[3]), 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	h = _mm_max_ps(h, _mm_shuffle_ps(h, h, 1));
	amax = _mm_cvtss_f32(h);
	s = 127.0f / amax;
	/* zeros, and amax so small that 127 / amax overflows (x * inv may then be NaN or Inf,
	 * which rne_clamp maps to 0 or +-127): the scalar path */
	if (amax == 0.0f || !(s <= 3.40282347e+38f))
		return false;
	inv = _mm256_set1_ps(s);
	for (i = 0; i < 4; i++)
		r[i] = _mm256_cvttps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], inv),
							   _MM_FROUND_TO_NEAREST_INT |
							   _MM_FROUND_NO_EXC));
	/* int32 -> int8 with saturation (packs work within 128-bit halves: restore the order) */
	p = _mm256_packs_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
	p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	p = _mm256_max_epi8(p, _mm256_set1_epi8(-127));
	_mm256_storeu_si256((__m256i *)(void *)q, p);
	*sx = amax / 127.0f;
	return true;
}

T256 static void quantize_avx2(const float *x, size_t k, int8_t *q, float *sx)
{
	size_t b;

	for (b = 0; b < k / 32; b++)
		if (!block_avx2(x + 32 * b, q + 32 * b, sx + b))
			pccx__q8_quantize_block(x + 32 * b, q + 32 * b, sx + b);
}

void pccx__kern_q8_quantize(const float *x, size_t k, int8_t *q, float *sx)
{
	if (pccx__kern_have_avx2())
		quantize_avx2(x, k, q, sx);
	else
		pccx__q8_quantize(x, k, q, sx);
}

/* The sum of the 32 activations of a block: (x + 128) summed as unsigned bytes, minus 4096. */
T256 static int32_t block_sum(__m256i v)
{
	__m256i s = _mm256_sad_epu8(_mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)),
				    _mm256_setzero_si256());
	__m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));

	h = _mm_add_epi64(h, _mm_unpackhi_epi64(h, h));
	return (int32_t)_mm_cvtsi128_si64(h) - 4096;
}

T256 static void prepare_avx2(struct pccx_kern_act *a)
{
	/* per 128-bit lane: the 8 even bytes, then the 8 odd ones */
	const __m256i eo = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
					    0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
	uint32_t nb = a->k / 32, b;

	for (b = 0; b < nb; b++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(a->q8 + 32 * b));

		a->xsum[b] = block_sum(v);
		if (b / 4 * 4 + 3 < nb) {
			/* [lane 0 evens, lane 1 evens, lane 0 odds, lane 1 odds] */
			__m256i t = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, eo), 0xD8);
			int8_t *o = a->xp + 32 * (b / 4 * 4) + 16 * (b % 4);

			_mm_storeu_si128((__m128i *)(void *)o, _mm256_castsi256_si128(t));
			_mm_storeu_si128((__m128i *)(void *)(o + 64),
					 _mm256_extracti128_si256(t, 1));
		}
	}
}

void pccx__kern_act_prepare(struct pccx_kern_act *a)
{
	if (pccx__kern_have_avx2())
		prepare_avx2(a);
	else
		pccx__kern_act_prepare_ref(a);
}

#else

void pccx__kern_act_prepare(struct pccx_kern_act *a)
{
	pccx__kern_act_prepare_ref(a);
}

void pccx__kern_q8_quantize(const float *x, size_t k, int8_t *q, float *sx)
{
	pccx__q8_quantize(x, k, q, sx);
}

#endif
