// SPDX-License-Identifier: MIT
/*
 * AVX2 Q4 rows kernel. Eight rows at a time, one row per lane of the FP32 accumulator, so the
 * floating-point sequence of every row is exactly pccx_q4_row_dot's. Only the int32 block dot
 * (exact) is computed differently: nibble u = q + 8 (0..15) times the INT8 activation with
 * vpmaddubsw, minus 8 * sum(x).
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,f16c")))

/* Eight vectors of eight int32 partial sums -> one vector of the eight totals. */
TARGET static __m256i hsum8(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256i v4,
			    __m256i v5, __m256i v6, __m256i v7)
{
	__m256i a = _mm256_hadd_epi32(v0, v1), b = _mm256_hadd_epi32(v2, v3);
	__m256i c = _mm256_hadd_epi32(v4, v5), d = _mm256_hadd_epi32(v6, v7);
	__m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
	__m256i lo = _mm256_permute2x128_si256(ab, cd, 0x20);
	__m256i hi = _mm256_permute2x128_si256(ab, cd, 0x31);

	return _mm256_add_epi32(lo, hi);
}

/* Partial sums (q + 8) * x of one block of one row, 8 int32 lanes. */
TARGET static __m256i block_part(const uint8_t *nib, __m256i xp)
{
	const __m128i m4 = _mm_set1_epi8(0x0F);
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)nib);
	__m128i lo = _mm_and_si128(v, m4);
	__m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
	__m256i u = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);

	/* two's complement nibble q stored as q & 15; (q & 15) ^ 8 = q + 8 */
	u = _mm256_xor_si256(u, _mm256_set1_epi8(8));
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, xp), _mm256_set1_epi16(1));
}

TARGET static void rows8(const uint8_t *w, uint64_t rb, uint64_t sb,
			 const struct pccx_kern_act *a, float *y)
{
	uint32_t nb = a->k / 32, b, i;
	__m256 acc = _mm256_setzero_ps();
	float out[8];

	for (b = 0; b < nb; b++) {
		const __m256i xp = _mm256_loadu_si256((const __m256i *)(const void *)(a->xp + 32 * b));
		const uint8_t *nb0 = w + sb + 16 * b;
		__m256i dot;
		__m128i h;
		__m256 d, t, c;

		dot = hsum8(block_part(nb0, xp), block_part(nb0 + rb, xp),
			    block_part(nb0 + 2 * rb, xp), block_part(nb0 + 3 * rb, xp),
			    block_part(nb0 + 4 * rb, xp), block_part(nb0 + 5 * rb, xp),
			    block_part(nb0 + 6 * rb, xp), block_part(nb0 + 7 * rb, xp));
		dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(8 * a->xsum[b]));

		h = _mm_setzero_si128();
#define SC(r) (*(const uint16_t *)(const void *)(w + (r) * rb + 2 * b))
		h = _mm_insert_epi16(h, SC(0), 0);
		h = _mm_insert_epi16(h, SC(1), 1);
		h = _mm_insert_epi16(h, SC(2), 2);
		h = _mm_insert_epi16(h, SC(3), 3);
		h = _mm_insert_epi16(h, SC(4), 4);
		h = _mm_insert_epi16(h, SC(5), 5);
		h = _mm_insert_epi16(h, SC(6), 6);
		h = _mm_insert_epi16(h, SC(7), 7);
#undef SC
		d = _mm256_cvtph_ps(h);				/* exact */
		t = _mm256_mul_ps(d, _mm256_set1_ps(a->sx[b]));	/* t = d * sx */
		c = _mm256_mul_ps(_mm256_cvtepi32_ps(dot), t);	/* (float)dot * t, exact cvt */
		acc = _mm256_add_ps(acc, c);			/* acc = acc + c */
	}
	_mm256_storeu_ps(out, acc);
	for (i = 0; i < 8; i++)
		y[i] = pccx_f32_canon(out[i]);
}

void pccx_kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			    const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = (uint64_t)((a->k / 32 + 7) / 8) * 16;
	uint32_t r = 0;

	for (; r + 8 <= n; r += 8)
		rows8(w + r * row_bytes, row_bytes, sb, a, y + r);
	if (r < n)
		pccx_kern_q4_rows_ref(w + r * row_bytes, row_bytes, n - r, a, y + r);
}

#else

void pccx_kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			    const struct pccx_kern_act *a, float *y)
{
	pccx_kern_q4_rows_ref(w, row_bytes, n, a, y);
}

#endif
