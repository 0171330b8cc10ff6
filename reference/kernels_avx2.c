// SPDX-License-Identifier: MIT
/*
 * x86 Q4 GEMV and GEMM kernels on 256-bit vectors, AVX2 and AVX-VNNI, which differ only in how
 * they get the int32 block sums (the GEMM's section below says how it works).
 *
 * The GEMV: 8 rows at a time, one row per vector lane. Per pair of blocks, each
 * row's sums ((q + 8) * x: vpmaddubsw + vpmaddwd, or vpdpbusd; minus 8 * sum(x): exact), four
 * partial sums per block, are reduced and transposed so that one vector holds one block of the
 * 8 rows; the rows' FP16 scales are transposed alike (converted exactly with F16C). Then per
 * block, in order: t = d * sx, c = (float)dot * t, acc = acc + c, each lane exactly the
 * scalar IEEE operations of pccx__q4_row_dot.
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,f16c")))
#define TVNNI __attribute__((target("avx2,f16c,avxvnni")))
#define G 8	/* rows per group: the lanes of a vector */

/* The nibbles of two blocks, in both nibbles q + 8 (stored q & 15; (q & 15) ^ 8 = q + 8). */
T256 static void nibbles(const uint8_t *nib, __m256i *lo, __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	__m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)nib),
				     _mm256_set1_epi8((char)0x88));

	*lo = _mm256_and_si256(v, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
}

/*
 * Partial sums of two consecutive blocks A, B of one row against activations laid out by
 * pccx__kern_act_prepare (xe: [A even | B even], xo: [A odd | B odd]): lanes 0-3 sum to
 * block A's (q + 8) * x, lanes 4-7 to block B's.
 */
T256 static __m256i pair_avx2(const uint8_t *nib, __m256i xe, __m256i xo)
{
	__m256i lo, hi, s;

	nibbles(nib, &lo, &hi);
	/* int16 lanes: two products each, |sum of four| <= 4 * 15 * 127: no saturation */
	s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xe), _mm256_maddubs_epi16(hi, xo));
	return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

TVNNI static __m256i pair_vnni(const uint8_t *nib, __m256i xe, __m256i xo)
{
	__m256i lo, hi;

	nibbles(nib, &lo, &hi);
	return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), lo, xe),
				       hi, xo);
}

/*
 * p[r] = the pair sums of row r (r < 8) -> d[0] lane r = block A's sum of row r, d[1] block
 * B's: pairs of rows interleaved and added, then pairs of pairs, then the 128-bit halves
 * exchanged. Integer adds: exact.
 */
T256 static void reduce8(const __m256i p[G], __m256i d[2])
{
	__m256i a[4], q0, q1;
	unsigned i;

	#pragma GCC unroll 16
	for (i = 0; i < 4; i++)
		a[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2 * i], p[2 * i + 1]),
					_mm256_unpackhi_epi32(p[2 * i], p[2 * i + 1]));
	q0 = _mm256_add_epi32(_mm256_unpacklo_epi64(a[0], a[1]), _mm256_unpackhi_epi64(a[0], a[1]));
	q1 = _mm256_add_epi32(_mm256_unpacklo_epi64(a[2], a[3]), _mm256_unpackhi_epi64(a[2], a[3]));
	d[0] = _mm256_permute2x128_si256(q0, q1, 0x20);
	d[1] = _mm256_permute2x128_si256(q0, q1, 0x31);
}

/*
 * The FP16 scales of blocks b .. b+7 of 8 rows as eight vectors, d[i] lane r = row r's scale
 * of block b + i in FP32 (exact): an 8 x 8 transpose of 16-bit words.
 */
T256 static void scales8x8(const uint8_t *const rec[G], uint32_t b, __m256 d[8])
{
	__m128i x[8], t[8], u[8];
	unsigned i;

	#pragma GCC unroll 16
	for (i = 0; i < 8; i++)
		x[i] = _mm_loadu_si128((const __m128i *)(const void *)(rec[i] + 2 * b));
	#pragma GCC unroll 16
	for (i = 0; i < 4; i++) {
		t[2 * i] = _mm_unpacklo_epi16(x[2 * i], x[2 * i + 1]);
		t[2 * i + 1] = _mm_unpackhi_epi16(x[2 * i], x[2 * i + 1]);
	}
	/* u[4h + j]: rows 4h .. 4h+3, blocks 2j, 2j+1 */
	#pragma GCC unroll 16
	for (i = 0; i < 2; i++) {
		u[4 * i] = _mm_unpacklo_epi32(t[4 * i], t[4 * i + 2]);
		u[4 * i + 1] = _mm_unpackhi_epi32(t[4 * i], t[4 * i + 2]);
		u[4 * i + 2] = _mm_unpacklo_epi32(t[4 * i + 1], t[4 * i + 3]);
		u[4 * i + 3] = _mm_unpackhi_epi32(t[4 * i + 1], t[4 * i + 3]);
	}
	#pragma GCC unroll 16
	for (i = 0; i < 4; i++) {
		d[2 * i] = _mm256_cvtph_ps(_mm_unpacklo_epi64(u[i], u[4 + i]));
		d[2 * i + 1] = _mm256_cvtph_ps(_mm_unpackhi_epi64(u[i], u[4 + i]));
	}
}

/* acc = acc + c_b for blocks b, b+1 in order, c_b = (float)(dot_b - 8 sum x_b) * (d_b * sx_b). */
T256 static __m256 accumulate2(__m256 acc, const __m256i dot[2], const __m256 d[2],
			       const struct pccx_kern_act *a, uint32_t b)
{
	unsigned i;

	#pragma GCC unroll 16
	for (i = 0; i < 2; i++) {
		__m256i s = _mm256_sub_epi32(dot[i], _mm256_set1_epi32(8 * a->xsum[b + i]));
		__m256 t = _mm256_mul_ps(d[i], _mm256_set1_ps(a->sx[b + i]));

		/* (float)s is exact: |s| <= 32 * 8 * 127 */
		acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), t));
	}
	return acc;
}

/*
 * Rows rec[0 .. nr) (nr <= 8; lanes past nr repeat a row and are not stored) with the pair
 * sums of PAIR: blocks in steps of eight (scales) and pairs (sums), the rest one at a time.
 */
#define GROUP_FN(name, TGT, PAIR)                                                             \
	TGT static void name(const uint8_t *const rec[G], uint32_t nr, uint64_t sb,          \
			     const struct pccx_kern_act *a, struct pccx_kern_pf *f, float *y) \
	{                                                                                   \
		uint32_t nb = a->k / 32, b, h, r;                                             \
		__m256 acc = _mm256_setzero_ps(), d[8];                                     \
		__m256i p[G], dot[2];                                                       \
		float v[G];                                                                 \
                                                                                            \
		for (b = 0; b + 4 <= nb; b += 4) {                                          \
			/* scale beats are whole: eight scales can be read at b % 8 == 0 */ \
			if (b % 8 == 0)                                                     \
				scales8x8(rec, b, d);                                       \
			pccx__kern_pf_step(f);                                              \
			for (h = 0; h < 4; h += 2) {                                        \
				const int8_t *xq = a->xp + 32 * b + 16 * h;                  \
				__m256i xe = _mm256_loadu_si256(                            \
					(const __m256i *)(const void *)xq);                 \
				__m256i xo = _mm256_loadu_si256(                            \
					(const __m256i *)(const void *)(xq + 64));          \
                                                                                            \
				_Pragma("GCC unroll 8")                                     \
				for (r = 0; r < G; r++) {                                   \
					const uint8_t *nib = rec[r] + sb + 16 * (b + h);    \
                                                                                            \
					p[r] = PAIR(nib, xe, xo);                           \
				}                                                           \
				reduce8(p, dot);                                            \
				acc = accumulate2(acc, dot, d + (b + h) % 8, a, b + h);     \
			}                                                                   \
		}                                                                           \
		_mm256_storeu_ps(v, acc);                                                   \
		for (r = 0; r < nr; r++)                                                    \
			y[r] = pccx__kern_q4_row_finish(rec[r], sb, a, b, v[r]);            \
	}

GROUP_FN(group_avx2, T256, pair_avx2)
GROUP_FN(group_vnni, TVNNI, pair_vnni)

typedef void (*group_fn)(const uint8_t *const rec[G], uint32_t nr, uint64_t sb,
			 const struct pccx_kern_act *a, struct pccx_kern_pf *f, float *y);

/* All n rows, G at a time (the last group's missing rows repeat its last row). */
static void rows_all(group_fn group, const uint8_t *w, uint64_t row_bytes, uint32_t n,
		     const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = pccx__kern_scale_bytes(a->k);
	const uint8_t *rec[G];
	uint32_t r0, r, nr;

	for (r0 = 0; r0 < n; r0 += G) {
		/* one share of the next group per step of four blocks */
		struct pccx_kern_pf f = pccx__kern_pf_group(w, row_bytes, n, r0, G, a->k / 128);

		nr = n - r0 < G ? n - r0 : G;
		for (r = 0; r < G; r++)
			rec[r] = w + (uint64_t)(r0 + (r < nr ? r : nr - 1)) * row_bytes;
		group(rec, nr, sb, a, &f, y + r0);
	}
}

void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y)
{
	rows_all(group_avx2, w, row_bytes, n, a, y);
}

void pccx__kern_q4_rows_avxvnni(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				const struct pccx_kern_act *a, float *y)
{
	rows_all(group_vnni, w, row_bytes, n, a, y);
}

/* ---- GEMM: the weights of a row group transposed once, used by every activation row ---- */

#define MB 64	/* activation rows per pass over a row group */

/*
 * Blocks b .. b+3 of 8 rows, transposed: wt[8 i + g] lane r = the q + 8 values of the low
 * nibbles of bytes 4g .. 4g+3 of row r's block b + i (its even elements 8g .. 8g+6),
 * wt[8 i + 4 + g] those of the high nibbles (the odd elements): per pair of blocks an 8 x 8
 * transpose of the rows' 32-bit words. Only the nibbles of the nblk (1-4) blocks from b are
 * loaded; those of the others read as 0 and are not used.
 */
T256 static void weights8x4(const uint8_t *const rec[G], uint64_t sb, uint32_t b, uint32_t nblk,
			    __m256i wt[32])
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), x88 = _mm256_set1_epi8((char)0x88);
	const __m256i first = _mm256_setr_epi32(-1, -1, -1, -1, 0, 0, 0, 0);
	__m256i v[G], a[G], q[G];
	unsigned h, r, g;

	for (h = 0; h < 2; h++) {
		/* blocks b + 2h, b + 2h + 1: both, the first alone (a masked load), or neither */
		uint32_t nh = nblk > 2 * h ? nblk - 2 * h : 0;

#pragma GCC unroll 8
		for (r = 0; r < G; r++) {
			const uint8_t *nib = rec[r] + sb + 16 * (b + 2 * h);

			if (nh >= 2)
				v[r] = _mm256_loadu_si256((const __m256i *)(const void *)nib);
			else if (nh == 1)
				v[r] = _mm256_maskload_epi32((const int *)(const void *)nib, first);
			else
				v[r] = _mm256_setzero_si256();
		}
#pragma GCC unroll 8
		for (r = 0; r < G; r += 2) {
			a[r] = _mm256_unpacklo_epi32(v[r], v[r + 1]);
			a[r + 1] = _mm256_unpackhi_epi32(v[r], v[r + 1]);
		}
		/* q[4k + g]: word g of rows 4k .. 4k+3, per block */
#pragma GCC unroll 8
		for (r = 0; r < G; r += 4) {
			q[r] = _mm256_unpacklo_epi64(a[r], a[r + 2]);
			q[r + 1] = _mm256_unpackhi_epi64(a[r], a[r + 2]);
			q[r + 2] = _mm256_unpacklo_epi64(a[r + 1], a[r + 3]);
			q[r + 3] = _mm256_unpackhi_epi64(a[r + 1], a[r + 3]);
		}
#pragma GCC unroll 4
		for (g = 0; g < 4; g++) {
			__m256i lo = _mm256_permute2x128_si256(q[g], q[4 + g], 0x20);
			__m256i hi = _mm256_permute2x128_si256(q[g], q[4 + g], 0x31);
			__m256i *w0 = wt + 16 * h, *w1 = wt + 16 * h + 8;

			lo = _mm256_xor_si256(lo, x88);	/* q + 8 in both nibbles */
			hi = _mm256_xor_si256(hi, x88);
			w0[g] = _mm256_and_si256(lo, m4);
			w0[4 + g] = _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
			w1[g] = _mm256_and_si256(hi, m4);
			w1[4 + g] = _mm256_and_si256(_mm256_srli_epi16(hi, 4), m4);
		}
	}
}

/* Four activation bytes broadcast to every 32-bit lane. */
T256 static __m256i bcast4(const int8_t *p)
{
	int32_t v;

	__builtin_memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/*
 * One block's (q + 8) * x sum per row lane, AVX2: vpmaddubsw gives two products per int16
 * lane (|.| <= 2 * 15 * 127); the eight of a block add up to at most 30,480 in magnitude, so the
 * int16 sums are exact; vpmaddwd then adds each row's two int16 lanes.
 */
T256 static __m256i gdot_avx2(const __m256i w[8], const int8_t *xe, const int8_t *xo)
{
	__m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast4(xe)),
				      _mm256_maddubs_epi16(w[4], bcast4(xo)));
	__m256i s1 = _mm256_add_epi16(_mm256_maddubs_epi16(w[1], bcast4(xe + 4)),
				      _mm256_maddubs_epi16(w[5], bcast4(xo + 4)));
	__m256i s2 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast4(xe + 8)),
				      _mm256_maddubs_epi16(w[6], bcast4(xo + 8)));
	__m256i s3 = _mm256_add_epi16(_mm256_maddubs_epi16(w[3], bcast4(xe + 12)),
				      _mm256_maddubs_epi16(w[7], bcast4(xo + 12)));

	return _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(s0, s1),
						  _mm256_add_epi16(s2, s3)),
				 _mm256_set1_epi16(1));
}

TVNNI static __m256i gdot_vnni(const __m256i w[8], const int8_t *xe, const int8_t *xo)
{
	__m256i s0 = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w[0], bcast4(xe));
	__m256i s1 = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w[4], bcast4(xo));

	s0 = _mm256_dpbusd_avx_epi32(s0, w[1], bcast4(xe + 4));
	s1 = _mm256_dpbusd_avx_epi32(s1, w[5], bcast4(xo + 4));
	s0 = _mm256_dpbusd_avx_epi32(s0, w[2], bcast4(xe + 8));
	s1 = _mm256_dpbusd_avx_epi32(s1, w[6], bcast4(xo + 8));
	s0 = _mm256_dpbusd_avx_epi32(s0, w[3], bcast4(xe + 12));
	s1 = _mm256_dpbusd_avx_epi32(s1, w[7], bcast4(xo + 12));
	return _mm256_add_epi32(s0, s1);
}

/*
 * Rows rec[0 .. nr) against activation rows a[0 .. m), m <= MB, y[j * ldy + r], with the
 * block dots of GDOT: per block and activation row, c = (float)(dot - 8 sum x) * (d * sx)
 * and acc = acc + c in the row's own vector of 8 chains.
 */
#define GEMM_FN(name, TGT, GDOT)                                                             \
	TGT static void name(const uint8_t *const rec[G], uint32_t nr, uint64_t sb,          \
			     const struct pccx_kern_act *a, uint32_t m, const int8_t *xt,    \
			     struct pccx_kern_pf *f, float *y, size_t ldy)                   \
	{                                                                                   \
		uint32_t nb = a->k / 32, b, i, j, r, nblk;                                  \
		__m256 acc[MB], d[8];                                                       \
		__m256i wt[32];                                                             \
		float v[G];                                                                 \
                                                                                            \
		for (j = 0; j < m; j++)                                                     \
			acc[j] = _mm256_setzero_ps();                                       \
		for (b = 0; b < nb; b += 4) {                                               \
			nblk = nb - b < 4 ? nb - b : 4;                                     \
			/* scale beats are whole: eight scales can be read at b % 8 == 0 */ \
			if (b % 8 == 0)                                                     \
				scales8x8(rec, b, d);                                       \
			pccx__kern_pf_step(f);                                              \
			weights8x4(rec, sb, b, nblk, wt);                                   \
			for (i = 0; i < nblk; i++) {                                        \
				const uint32_t off = 32 * b + 16 * i, bi = b + i;           \
				const __m256 db = d[bi % 8];                                \
                                                                                            \
				for (j = 0; j < m; j++) {                                   \
					/* the last 1-3 blocks: from xt's layouts */        \
					const int8_t *xe = nblk < 4 ? xt + 128 * j + 16 * i \
								 : a[j].xp + off;           \
					__m256i s = GDOT(wt + 8 * i, xe, xe + 64);          \
					__m256 t = _mm256_mul_ps(db,                        \
						_mm256_set1_ps(a[j].sx[bi]));               \
                                                                                            \
					s = _mm256_sub_epi32(s,                             \
						_mm256_set1_epi32(8 * a[j].xsum[bi]));      \
					acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(       \
						_mm256_cvtepi32_ps(s), t));                 \
				}                                                           \
			}                                                                   \
		}                                                                           \
		/* every block is summed: only NaNs become the canonical one */            \
		for (j = 0; j < m; j++) {                                                   \
			_mm256_storeu_ps(v, acc[j]);                                        \
			for (r = 0; r < nr; r++)                                            \
				y[j * ldy + r] = pccx_f32_canon(v[r]);                      \
		}                                                                           \
	}

GEMM_FN(gemm_group_avx2, T256, gdot_avx2)
GEMM_FN(gemm_group_vnni, TVNNI, gdot_vnni)

typedef void (*gemm_group_fn)(const uint8_t *const rec[G], uint32_t nr, uint64_t sb,
			      const struct pccx_kern_act *a, uint32_t m, const int8_t *xt,
			      struct pccx_kern_pf *f, float *y, size_t ldy);

/* All n rows, G at a time, against the m activation rows, MB at a time. When k is not a
 * multiple of 128, each activation row's last 1-3 blocks are laid out once per pass (xt). */
static void gemm_all(gemm_group_fn group, const uint8_t *w, uint64_t row_bytes, uint32_t n,
		     const struct pccx_kern_act *a, uint32_t m, float *y, size_t ldy)
{
	uint64_t sb = pccx__kern_scale_bytes(a->k);
	const uint8_t *rec[G];
	uint32_t r0, r, nr, j0, mb, nb = a->k / 32, xt_j0 = UINT32_MAX;
	int8_t xt[MB * 128];

	for (r0 = 0; r0 < n; r0 += G) {
		nr = n - r0 < G ? n - r0 : G;
		for (r = 0; r < G; r++)
			rec[r] = w + (uint64_t)(r0 + (r < nr ? r : nr - 1)) * row_bytes;
		for (j0 = 0; j0 < m; j0 += MB) {
			/* one share of the next group per step of four blocks */
			struct pccx_kern_pf f = pccx__kern_pf_group(w, row_bytes, n, r0, G,
								    (a->k + 127) / 128);

			mb = m - j0 < MB ? m - j0 : MB;
			if (nb % 4 && xt_j0 != j0) {
				for (r = 0; r < mb; r++)
					pccx__kern_act_tail(&a[j0 + r], nb / 4 * 4, nb % 4,
							    xt + 128 * r);
				xt_j0 = j0;
			}
			group(rec, nr, sb, a + j0, mb, xt, &f, y + j0 * ldy + r0, ldy);
		}
	}
}

void pccx__kern_q4_gemm_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				  const struct pccx_kern_act *a, uint32_t m, float *y,
				  size_t ldy)
{
	gemm_all(gemm_group_avx2, w, row_bytes, n, a, m, y, ldy);
}

void pccx__kern_q4_gemm_rows_avxvnni(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				     const struct pccx_kern_act *a, uint32_t m, float *y,
				     size_t ldy)
{
	gemm_all(gemm_group_vnni, w, row_bytes, n, a, m, y, ldy);
}

#else

void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y)
{
	pccx__kern_q4_rows_ref(w, row_bytes, n, a, y);
}

void pccx__kern_q4_rows_avxvnni(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				const struct pccx_kern_act *a, float *y)
{
	pccx__kern_q4_rows_ref(w, row_bytes, n, a, y);
}

void pccx__kern_q4_gemm_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				  const struct pccx_kern_act *a, uint32_t m, float *y,
				  size_t ldy)
{
	pccx__kern_q4_gemm_rows_ref(w, row_bytes, n, a, m, y, ldy);
}

void pccx__kern_q4_gemm_rows_avxvnni(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				     const struct pccx_kern_act *a, uint32_t m, float *y,
				     size_t ldy)
{
	pccx__kern_q4_gemm_rows_ref(w, row_bytes, n, a, m, y, ldy);
}

#endif
