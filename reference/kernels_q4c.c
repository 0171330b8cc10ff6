// SPDX-License-Identifier: MIT
/*
 * The two steps of a GEMV on q4c weights (isa/num: pccx__q4c_column, pccx__q4c_block_end) on
 * 512-bit vectors where the CPU has AVX-512 (16 rows a vector) or on 256-bit ones with AVX2
 * and F16C (8 rows): the same exact INT32 sums, and per row the same IEEE operations in the
 * same order (t = d * sx, c = (float)sum * t, acc = acc + c; F16C converts FP16 exactly). NaNs
 * may carry another payload until they are stored, which makes every NaN the canonical one, so
 * the stored results are the same bits. A sparse layer's W_down reads few columns a block but
 * ends every block it reads for all the port's rows, so the steps are bound by their
 * instructions more than by memory: 16 rows a vector halve them.
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,f16c")))
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

/* 16 rows' INT4 weights (8 bytes, the even row in the low nibble) as INT8, in row order. */
T256 static __m128i nibbles16(const uint8_t *col)
{
	const __m128i m4 = _mm_set1_epi8(0x0F), e8 = _mm_set1_epi8(8);
	__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)col);
	__m128i v = _mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16(b, 4), m4));

	return _mm_sub_epi8(_mm_xor_si128(v, e8), e8);   /* (n ^ 8) - 8 */
}

T256 static size_t column_avx2(const uint8_t *col, size_t rows, int32_t x, int32_t *sum)
{
	const __m256i vx = _mm256_set1_epi32(x);
	size_t i;

	for (i = 0; i + 16 <= rows; i += 16) {
		__m128i w = nibbles16(col + i / 2);
		__m256i *s = (__m256i *)(void *)(sum + i);
		__m256i a = _mm256_loadu_si256(s), b = _mm256_loadu_si256(s + 1);

		a = _mm256_add_epi32(a, _mm256_mullo_epi32(_mm256_cvtepi8_epi32(w), vx));
		b = _mm256_add_epi32(b, _mm256_mullo_epi32(_mm256_cvtepi8_epi32(
							   _mm_srli_si128(w, 8)), vx));
		_mm256_storeu_si256(s, a);
		_mm256_storeu_si256(s + 1, b);
	}
	return i;
}

T256 static size_t block_end_avx2(const uint8_t *scales, size_t rows, float sx, int32_t *sum,
				  float *acc)
{
	const __m256 vsx = _mm256_set1_ps(sx);
	size_t i;

	for (i = 0; i + 8 <= rows; i += 8) {
		__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)
							   (scales + 2 * i)));
		__m256 t = _mm256_mul_ps(d, vsx);
		__m256 c = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(
						 (const __m256i *)(const void *)(sum + i))), t);

		_mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), c));
		_mm256_storeu_si256((__m256i *)(void *)(sum + i), _mm256_setzero_si256());
	}
	return i;
}

/* 32 rows a step: 16 bytes of nibbles, the even rows in the low ones, as INT8 in row order. */
T512 static size_t column_avx512(const uint8_t *col, size_t rows, int32_t x, int32_t *sum)
{
	const __m512i vx = _mm512_set1_epi32(x);
	const __m128i m4 = _mm_set1_epi8(0x0F), e8 = _mm_set1_epi8(8);
	size_t i;

	for (i = 0; i + 32 <= rows; i += 32) {
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(col + i / 2));
		__m128i lo = _mm_and_si128(b, m4), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m4);
		__m128i w0 = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), e8), e8);
		__m128i w1 = _mm_sub_epi8(_mm_xor_si128(_mm_unpackhi_epi8(lo, hi), e8), e8);
		int32_t *s = sum + i;

		_mm512_storeu_si512(s, _mm512_add_epi32(_mm512_loadu_si512(s),
							_mm512_mullo_epi32(_mm512_cvtepi8_epi32(w0),
									   vx)));
		_mm512_storeu_si512(s + 16, _mm512_add_epi32(_mm512_loadu_si512(s + 16),
							     _mm512_mullo_epi32(
								     _mm512_cvtepi8_epi32(w1), vx)));
	}
	return i;
}

T512 static size_t block_end_avx512(const uint8_t *scales, size_t rows, float sx, int32_t *sum,
				    float *acc)
{
	const __m512 vsx = _mm512_set1_ps(sx);
	size_t i;

	for (i = 0; i + 16 <= rows; i += 16) {
		__m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)
							      (scales + 2 * i)));
		__m512 t = _mm512_mul_ps(d, vsx);
		__m512 c = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(sum + i)), t);

		_mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), c));
		_mm512_storeu_si512(sum + i, _mm512_setzero_si512());
	}
	return i;
}
#endif

void pccx__kern_q4c_column(enum pccx_kern_impl impl, const uint8_t *col, size_t rows, int32_t x,
			   int32_t *sum)
{
	size_t i = 0;

#if defined(__x86_64__) || defined(__i386__)
	impl = pccx__kern_resolve(impl);
	if (impl == PCCX_KERN_AVX512)
		i = column_avx512(col, rows, x, sum);
	/* then the AVX2 steps take what is left in 16s, as they take every row without it */
	if (impl != PCCX_KERN_REF)
		i += column_avx2(col + i / 2, rows - i, x, sum + i);
#else
	(void)impl;
#endif
	/* the rest from an even row: its byte is whole */
	if (i < rows)
		pccx__q4c_column(col + i / 2, rows - i, x, sum + i);
}

void pccx__kern_q4c_block_end(enum pccx_kern_impl impl, const uint8_t *scales, size_t rows,
			      float sx, int32_t *sum, float *acc)
{
	size_t i = 0;

#if defined(__x86_64__) || defined(__i386__)
	impl = pccx__kern_resolve(impl);
	if (impl == PCCX_KERN_AVX512)
		i = block_end_avx512(scales, rows, sx, sum, acc);
	if (impl != PCCX_KERN_REF)
		i += block_end_avx2(scales + 2 * i, rows - i, sx, sum + i, acc + i);
#else
	(void)impl;
#endif
	if (i < rows)
		pccx__q4c_block_end(scales + 2 * i, rows - i, sx, sum + i, acc + i);
}
