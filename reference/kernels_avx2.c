// SPDX-License-Identifier: MIT
/*
 * x86 Q4 rows kernels, AVX2 and AVX-512 VNNI, which differ only in how they get the int32 block
 * sums. Each row is read sequentially (interleaving several rows' streams
 * halves the memory bandwidth on the machines measured). Eight blocks at a time: their int32
 * dots (exact, computed as (q + 8) * x with vpmaddubsw, minus 8 * sum(x)), two blocks per
 * 256-bit load of nibbles, t = d * sx and c = (float)dot * t as vector lanes (each lane one
 * IEEE operation, exactly the scalar ones), then acc = acc + c block by block in order, as
 * pccx__q4_row_dot does. Two rows are done together so that their dependent add chains
 * overlap.
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,f16c")))
#ifndef PF_AHEAD
#define PF_AHEAD 2048	/* bytes of software prefetch distance */
#endif

/*
 * Partial sums of two consecutive blocks A, B of one row: their 32 nibble bytes and their
 * activations as pccx__kern_act_prepare lays them out (xe: [A even | B even], xo: [A odd |
 * B odd]). Lanes 0-3 sum to block A's (q + 8) * x, lanes 4-7 to block B's.
 */
TARGET static __m256i pair_part(const uint8_t *nib, const int8_t *xe_p, const int8_t *xo_p)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
	/* two's complement nibble q stored as q & 15; (q & 15) ^ 8 = q + 8, in both nibbles */
	__m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)nib),
				     _mm256_set1_epi8((char)0x88));
	__m256i lo = _mm256_and_si256(v, m4);
	__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
	__m256i xe = _mm256_loadu_si256((const __m256i *)(const void *)xe_p);
	__m256i xo = _mm256_loadu_si256((const __m256i *)(const void *)xo_p);
	/* int16 lanes: two products each, |sum of four| <= 4 * 15 * 127: no saturation */
	__m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xe), _mm256_maddubs_epi16(hi, xo));

	return _mm256_madd_epi16(s, ones);
}

/*
 * The eight block sums of partial-sum vectors p0..p3, each holding two consecutive blocks
 * (lanes 0-3 the first, 4-7 the second), in block order.
 */
TARGET static __m256i sums8(__m256i p0, __m256i p1, __m256i p2, __m256i p3)
{
	/* within 128-bit lanes: low = blocks 0 2 4 6, high = blocks 1 3 5 7 */
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));

	return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* The (q + 8) * x sums of blocks b .. b+7 of one row, AVX2. */
TARGET static __m256i dots8_avx2(const uint8_t *nib, const int8_t *xp)
{
	/* xp: two groups of four blocks, each their evens then their odds */
	return sums8(pair_part(nib, xp, xp + 64), pair_part(nib + 32, xp + 32, xp + 96),
		     pair_part(nib + 64, xp + 128, xp + 192), pair_part(nib + 96, xp + 160, xp + 224));
}

/* c_b = (float)dot_b * (fp16(d_b) * sx_b) for blocks b .. b+7 of one row, from raw sums. */
TARGET static void finish8(const uint8_t *rec, const struct pccx_kern_act *a, uint32_t b,
			   __m256i dot, float c[8])
{
	__m256i xs = _mm256_loadu_si256((const __m256i *)(const void *)(a->xsum + b));
	__m128i hs = _mm_loadu_si128((const __m128i *)(const void *)(rec + 2 * b));
	__m256 d = _mm256_cvtph_ps(hs);					/* exact */
	__m256 t = _mm256_mul_ps(d, _mm256_loadu_ps(a->sx + b));	/* t = d * sx */

	dot = _mm256_sub_epi32(dot, _mm256_slli_epi32(xs, 3));
	/* (float)dot is exact: |dot| <= 32 * 8 * 127 */
	_mm256_storeu_ps(c, _mm256_mul_ps(_mm256_cvtepi32_ps(dot), t));
}

/* Blocks [b, nb) of one row one at a time, continuing acc, exactly as pccx__q4_row_dot. */
static float tail(const uint8_t *rec, uint64_t sb, const struct pccx_kern_act *a, uint32_t b,
		  float acc)
{
	const uint16_t *sc = (const uint16_t *)(const void *)rec;
	uint32_t j;

	for (; b < a->k / 32; b++) {
		const uint8_t *nib = rec + sb + 16 * b;
		const int8_t *x = a->q8 + 32 * b;
		int32_t dot = 0;
		float t;

		for (j = 0; j < 16; j++)
			dot += (((nib[j] & 15) ^ 8) - 8) * x[2 * j] +
			       (((nib[j] >> 4) ^ 8) - 8) * x[2 * j + 1];
		t = pccx__fp16_to_f32(sc[b]) * a->sx[b];
		acc = acc + (float)dot * t;
	}
	return acc;
}

#define NR 2	/* rows done together, so that their dependent add chains overlap */

/*
 * NR rows of the kernel whose block sums come from DOTS8, under target TGT: eight blocks of
 * each row per step, then acc = acc + c block by block in order, per row.
 */
#define ROWS_FN(name, TGT, DOTS8)                                                              \
	TGT static void name(const uint8_t *w, uint64_t rb, uint64_t sb,                      \
			     const struct pccx_kern_act *a, float *y)                         \
	{                                                                                    \
		uint32_t nb = a->k / 32, b, i, r;                                            \
		float acc[NR] = { 0.0f }, c[NR][8];                                          \
                                                                                             \
		for (b = 0; b + 8 <= nb; b += 8) {                                           \
			for (r = 0; r < NR; r++) {                                           \
				const uint8_t *rec = w + r * rb;                             \
                                                                                             \
				/* a few blocks ahead in each row (and on into the next) */  \
				_mm_prefetch((const char *)rec + sb + 16 * b + PF_AHEAD,     \
					     _MM_HINT_T0);                                   \
				_mm_prefetch((const char *)rec + sb + 16 * b + PF_AHEAD + 64, \
					     _MM_HINT_T0);                                   \
				finish8(rec, a, b, DOTS8(rec + sb + 16 * b, a->xp + 32 * b),  \
					c[r]);                                               \
			}                                                                    \
			for (i = 0; i < 8; i++)                                              \
				for (r = 0; r < NR; r++)                                     \
					acc[r] = acc[r] + c[r][i];                           \
		}                                                                            \
		for (r = 0; r < NR; r++)                                                     \
			y[r] = pccx_f32_canon(tail(w + r * rb, sb, a, b, acc[r]));           \
	}

ROWS_FN(rows_avx2, TARGET, dots8_avx2)

/* All n rows: NR at a time, the rest with _ref (the same bits). */
static void rows_all(void (*rows)(const uint8_t *, uint64_t, uint64_t,
				  const struct pccx_kern_act *, float *),
		     const uint8_t *w, uint64_t row_bytes, uint32_t n,
		     const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = (uint64_t)((a->k / 32 + 7) / 8) * 16;
	uint32_t r = 0;

	for (; r + NR <= n; r += NR)
		rows(w + r * row_bytes, row_bytes, sb, a, y + r);
	if (r < n)
		pccx__kern_q4_rows_ref(w + r * row_bytes, row_bytes, n - r, a, y + r);
}

void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y)
{
	rows_all(rows_avx2, w, row_bytes, n, a, y);
}

/* ---- AVX-512 VNNI: vpdpbusd takes four blocks' 128 unsigned nibbles times activations ---- */

#define TARGET512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")))

/* Sums of four consecutive blocks, int32 lanes 4i .. 4i+3 for block i. */
TARGET512 static __m512i quad_part(const uint8_t *nib, const int8_t *xq)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F);
	__m512i v = _mm512_xor_si512(_mm512_loadu_si512((const void *)nib),
				     _mm512_set1_epi8((char)0x88));	/* q + 8 in both nibbles */
	__m512i lo = _mm512_and_si512(v, m4);
	__m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
	__m512i acc = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo,
					  _mm512_loadu_si512((const void *)xq));

	return _mm512_dpbusd_epi32(acc, hi, _mm512_loadu_si512((const void *)(xq + 64)));
}

/* The (q + 8) * x sums of blocks b .. b+7 of one row, AVX-512 VNNI. */
TARGET512 static __m256i dots8_avx512(const uint8_t *nib, const int8_t *xp)
{
	__m512i q0 = quad_part(nib, xp), q1 = quad_part(nib + 64, xp + 128);

	return sums8(_mm512_castsi512_si256(q0), _mm512_extracti64x4_epi64(q0, 1),
		     _mm512_castsi512_si256(q1), _mm512_extracti64x4_epi64(q1, 1));
}

ROWS_FN(rows_avx512, TARGET512, dots8_avx512)

void pccx__kern_q4_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			       const struct pccx_kern_act *a, float *y)
{
	rows_all(rows_avx512, w, row_bytes, n, a, y);
}

#else

void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y)
{
	pccx__kern_q4_rows_ref(w, row_bytes, n, a, y);
}

void pccx__kern_q4_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			       const struct pccx_kern_act *a, float *y)
{
	pccx__kern_q4_rows_ref(w, row_bytes, n, a, y);
}

#endif
