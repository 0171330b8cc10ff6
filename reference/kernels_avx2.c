// SPDX-License-Identifier: MIT
/*
 * AVX2 Q4 rows kernel. Each row is read sequentially (interleaving several rows' streams
 * halves the memory bandwidth on the machines measured). Eight blocks at a time: their int32
 * dots (exact, computed as (q + 8) * x with vpmaddubsw, minus 8 * sum(x)), t = d * sx and
 * c = (float)dot * t as vector lanes (each lane one IEEE operation, exactly the scalar ones),
 * then acc = acc + c block by block in order, as pccx__q4_row_dot does. Two rows are done
 * together so that their dependent add chains overlap.
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,f16c")))
#ifndef PF_AHEAD
#define PF_AHEAD 2048	/* bytes of software prefetch distance */
#endif

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

/* Partial sums (q + 8) * x of one block, 8 int32 lanes; xp is the block's [even | odd]. */
TARGET static __m256i block_part(const uint8_t *nib, const int8_t *xp)
{
	const __m128i m4 = _mm_set1_epi8(0x0F);
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)nib);
	__m128i lo = _mm_and_si128(v, m4);
	__m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
	__m256i u = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
	__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)xp);

	/* two's complement nibble q stored as q & 15; (q & 15) ^ 8 = q + 8 */
	u = _mm256_xor_si256(u, _mm256_set1_epi8(8));
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
}

/* c_b = (float)dot_b * (fp16(d_b) * sx_b) for blocks b .. b+7 of one row. */
TARGET static void block8(const uint8_t *rec, uint64_t sb, const struct pccx_kern_act *a,
			  uint32_t b, float c[8])
{
	const uint8_t *nib = rec + sb + 16 * b;
	const int8_t *xp = a->xp + 32 * b;
	__m256i dot = hsum8(block_part(nib, xp), block_part(nib + 16, xp + 32),
			    block_part(nib + 32, xp + 64), block_part(nib + 48, xp + 96),
			    block_part(nib + 64, xp + 128), block_part(nib + 80, xp + 160),
			    block_part(nib + 96, xp + 192), block_part(nib + 112, xp + 224));
	__m256i xs = _mm256_loadu_si256((const __m256i *)(const void *)(a->xsum + b));
	__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(rec + 2 * b));
	__m256 d = _mm256_cvtph_ps(h);					/* exact */
	__m256 t = _mm256_mul_ps(d, _mm256_loadu_ps(a->sx + b));	/* t = d * sx */

	dot = _mm256_sub_epi32(dot, _mm256_slli_epi32(xs, 3));
	/* (float)dot is exact: |dot| <= 32 * 8 * 127 */
	_mm256_storeu_ps(c, _mm256_mul_ps(_mm256_cvtepi32_ps(dot), t));
}

/* The exact int32 dot of one block. */
TARGET static int32_t block_dot(const uint8_t *nib, const int8_t *xp, int32_t xsum)
{
	__m256i v = block_part(nib, xp);
	__m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	t = _mm_hadd_epi32(t, t);
	t = _mm_hadd_epi32(t, t);
	return _mm_cvtsi128_si32(t) - 8 * xsum;
}

/* Blocks [b, nb) of one row one at a time, continuing acc, exactly as pccx__q4_row_dot. */
TARGET static float tail(const uint8_t *rec, uint64_t sb, const struct pccx_kern_act *a,
			 uint32_t b, float acc)
{
	const uint16_t *sc = (const uint16_t *)(const void *)rec;

	for (; b < a->k / 32; b++) {
		int32_t dot = block_dot(rec + sb + 16 * b, a->xp + 32 * b, a->xsum[b]);
		float t = pccx__fp16_to_f32(sc[b]) * a->sx[b];

		acc = acc + (float)dot * t;
	}
	return acc;
}

TARGET static void rows2(const uint8_t *w, uint64_t rb, uint64_t sb,
			 const struct pccx_kern_act *a, float *y)
{
	uint32_t nb = a->k / 32, b, i;
	float acc0 = 0.0f, acc1 = 0.0f, c0[8], c1[8];

	for (b = 0; b + 8 <= nb; b += 8) {
		/* a few blocks ahead in both rows (and on into the next rows, which follow) */
		_mm_prefetch((const char *)w + sb + 16 * b + PF_AHEAD, _MM_HINT_T0);
		_mm_prefetch((const char *)w + sb + 16 * b + PF_AHEAD + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)w + rb + sb + 16 * b + PF_AHEAD, _MM_HINT_T0);
		_mm_prefetch((const char *)w + rb + sb + 16 * b + PF_AHEAD + 64, _MM_HINT_T0);
		block8(w, sb, a, b, c0);
		block8(w + rb, sb, a, b, c1);
		for (i = 0; i < 8; i++) {
			acc0 = acc0 + c0[i];
			acc1 = acc1 + c1[i];
		}
	}
	y[0] = pccx_f32_canon(tail(w, sb, a, b, acc0));
	y[1] = pccx_f32_canon(tail(w + rb, sb, a, b, acc1));
}

void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = (uint64_t)((a->k / 32 + 7) / 8) * 16;
	uint32_t r = 0;

	for (; r + 2 <= n; r += 2)
		rows2(w + r * row_bytes, row_bytes, sb, a, y + r);
	if (r < n)
		pccx__kern_q4_rows_ref(w + r * row_bytes, row_bytes, n - r, a, y + r);
}

#else

void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y)
{
	pccx__kern_q4_rows_ref(w, row_bytes, n, a, y);
}

#endif
