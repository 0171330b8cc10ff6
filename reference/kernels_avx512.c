// SPDX-License-Identifier: MIT
/*
 * x86 kernels on AVX-512 (VNNI): the Q4 GEMV, the Q4 GEMM and the F32 matmuls (each section
 * says how), all one output per vector lane.
 *
 * The Q4 GEMV: 16 rows at a time, one row per vector lane. Per step of
 * eight blocks: each row's int32 block dots (vpdpbusd on q + 8 against the activations,
 * minus 8 * sum(x): exact), four partial sums per block, are reduced and transposed so that
 * one vector holds one block of the 16 rows; the rows' FP16 scales are transposed alike (and
 * converted exactly with F16C). Then per block, in order: t = d * sx, c = (float)dot * t,
 * acc = acc + c, each lane exactly the scalar IEEE operations of pccx__q4_row_dot. No
 * horizontal FP work is done, and the 16 rows' add chains advance in one instruction.
 */
#include "kernels.h"
#include "pccx_num.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")))
#define G 16	/* rows per group: the lanes of a vector */

/* NaN -> the canonical quiet NaN, as pccx_f32_canon does for each lane. */
T512 static __m512 canon16(__m512 v)
{
	return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
				  _mm512_castsi512_ps(_mm512_set1_epi32((int)PCCX_F32_QNAN_BITS)));
}

/* vpermt2w selections of the scale transpose (see scales16x8) */
static const uint16_t idx1[2][32] = {
	{ 0, 8, 16, 24, 32, 40, 48, 56, 1, 9, 17, 25, 33, 41, 49, 57,
	  2, 10, 18, 26, 34, 42, 50, 58, 3, 11, 19, 27, 35, 43, 51, 59 },
	{ 4, 12, 20, 28, 36, 44, 52, 60, 5, 13, 21, 29, 37, 45, 53, 61,
	  6, 14, 22, 30, 38, 46, 54, 62, 7, 15, 23, 31, 39, 47, 55, 63 },
};
static const uint16_t idx2[2][32] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 32, 33, 34, 35, 36, 37, 38, 39,
	  8, 9, 10, 11, 12, 13, 14, 15, 40, 41, 42, 43, 44, 45, 46, 47 },
	{ 16, 17, 18, 19, 20, 21, 22, 23, 48, 49, 50, 51, 52, 53, 54, 55,
	  24, 25, 26, 27, 28, 29, 30, 31, 56, 57, 58, 59, 60, 61, 62, 63 },
};

/*
 * The FP16 scales of blocks b .. b+7 of 16 rows as eight vectors, d[i] lane r = row r's
 * scale of block b + i in FP32 (exact). Four rows per 512-bit vector ([row][block] words),
 * then two rounds of vpermt2w: [block 0-3 | 4-7][row 0-7 | 8-15], then [block][row].
 */
T512 static void scales16x8(const uint8_t *const rec[G], uint32_t b, __m512 d[8])
{
	__m512i z[4], u[4];
	unsigned g, p;

#pragma GCC unroll 16
	for (g = 0; g < 4; g++) {
		const uint8_t *const *r4 = rec + 4 * g;
		__m512i v = _mm512_castsi128_si512(
			_mm_loadu_si128((const __m128i *)(const void *)(r4[0] + 2 * b)));

		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)
							 (r4[1] + 2 * b)), 1);
		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)
							 (r4[2] + 2 * b)), 2);
		z[g] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)
							    (r4[3] + 2 * b)), 3);
	}
#pragma GCC unroll 16
	for (p = 0; p < 2; p++) {
		__m512i ix = _mm512_loadu_si512((const void *)idx1[p]);

		u[p] = _mm512_permutex2var_epi16(z[0], ix, z[1]);	/* rows 0-7 */
		u[2 + p] = _mm512_permutex2var_epi16(z[2], ix, z[3]);	/* rows 8-15 */
	}
#pragma GCC unroll 16
	for (p = 0; p < 4; p++) {
		__m512i o = _mm512_permutex2var_epi16(
			u[p / 2], _mm512_loadu_si512((const void *)idx2[p % 2]), u[2 + p / 2]);

		d[2 * p] = _mm512_cvtph_ps(_mm512_castsi512_si256(o));
		d[2 * p + 1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(o, 1));
	}
}

/*
 * The low nibbles of v as q + 8: the two's complement nibble q is stored as q & 15, and
 * (q & 15) ^ 8 = q + 8; vpternlogd computes (v ^ 0x88) & 0x0F in one instruction (0x28 is the
 * truth table of (A ^ B) & C).
 */
T512 static __m512i lo_q8(__m512i v)
{
	return _mm512_ternarylogic_epi32(v, _mm512_set1_epi8((char)0x88), _mm512_set1_epi8(0x0F),
					 0x28);
}

/* The high nibbles of v as q + 8 (the bits shifted in from the next byte are masked off). */
T512 static __m512i hi_q8(__m512i v)
{
	return lo_q8(_mm512_srli_epi16(v, 4));
}

/* Four blocks of one row: int32 lanes 4i .. 4i+3 sum to block i's (q + 8) * x. */
T512 static __m512i quad(const uint8_t *nib, __m512i xe, __m512i xo)
{
	__m512i v = _mm512_loadu_si512((const void *)nib);

	return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo_q8(v), xe),
				   hi_q8(v), xo);
}

/*
 * p[r] = quad() of row r (r < 16) -> d[i] lane r = block i's sum of row r: pairs of rows
 * interleaved and added (lanes [r.p0+p2, r'.p0+p2, r.p1+p3, r'.p1+p3] per block), then pairs
 * of pairs ([r0 r1 r2 r3] per block), then the 128-bit lanes transposed. Integer adds: exact.
 */
/* d[i] = lane i of q0, q1, q2, q3 (a 4 x 4 transpose of 128-bit lanes). */
T512 static void lanes4x4(__m512i q0, __m512i q1, __m512i q2, __m512i q3, __m512i d[4])
{
	__m512i t0 = _mm512_shuffle_i32x4(q0, q1, 0x44), t1 = _mm512_shuffle_i32x4(q2, q3, 0x44);
	__m512i t2 = _mm512_shuffle_i32x4(q0, q1, 0xEE), t3 = _mm512_shuffle_i32x4(q2, q3, 0xEE);

	d[0] = _mm512_shuffle_i32x4(t0, t1, 0x88);
	d[1] = _mm512_shuffle_i32x4(t0, t1, 0xDD);
	d[2] = _mm512_shuffle_i32x4(t2, t3, 0x88);
	d[3] = _mm512_shuffle_i32x4(t2, t3, 0xDD);
}

T512 static void reduce16(const __m512i p[G], __m512i d[4])
{
	__m512i a[8], q[4];
	unsigned i;

#pragma GCC unroll 16
	for (i = 0; i < 8; i++)
		a[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(p[2 * i], p[2 * i + 1]),
					_mm512_unpackhi_epi32(p[2 * i], p[2 * i + 1]));
#pragma GCC unroll 16
	for (i = 0; i < 4; i++)
		q[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(a[2 * i], a[2 * i + 1]),
					_mm512_unpackhi_epi64(a[2 * i], a[2 * i + 1]));
	lanes4x4(q[0], q[1], q[2], q[3], d);
}

/* The (q + 8) * x sums of blocks b .. b+3 of the 16 rows, d[i] lane r for block b + i. */
T512 static void dots16x4(const uint8_t *const rec[G], uint64_t sb, const int8_t *xp, uint32_t b,
			  __m512i d[4])
{
	__m512i xe = _mm512_loadu_si512((const void *)(xp + 32 * b));
	__m512i xo = _mm512_loadu_si512((const void *)(xp + 32 * b + 64));
	__m512i p[G];
	unsigned r;

#pragma GCC unroll 16
	for (r = 0; r < G; r++)
		p[r] = quad(rec[r] + sb + 16 * b, xe, xo);
	reduce16(p, d);
}

/*
 * acc = acc + c_b for blocks b .. b+cnt-1 in order (cnt <= 4),
 * c_b = (float)(dot_b - 8 sum x_b) * (d_b * sx_b).
 */
T512 static __m512 accumulate(__m512 acc, const __m512i dot[4], const __m512 d[4],
			      const struct pccx_kern_act *a, uint32_t b, unsigned cnt)
{
	unsigned i;

#pragma GCC unroll 4
	for (i = 0; i < cnt; i++) {
		__m512i s = _mm512_sub_epi32(dot[i], _mm512_set1_epi32(8 * a->xsum[b + i]));
		__m512 t = _mm512_mul_ps(d[i], _mm512_set1_ps(a->sx[b + i]));

		/* (float)s is exact: |s| <= 32 * 8 * 127 */
		acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s), t));
	}
	return acc;
}

/*
 * dots16x4 for the j < 4 blocks left from b: only their nibbles are loaded (the others read as
 * 0, and meet zero activations in xq), so lanes of blocks past the row's end sum to 0.
 */
T512 static void dots16_tail(const uint8_t *const rec[G], uint64_t sb, const int8_t *xq,
			     uint32_t b, uint32_t j, __m512i d[4])
{
	const __mmask64 mk = ((__mmask64)1 << (16 * j)) - 1;
	__m512i xe = _mm512_loadu_si512((const void *)xq);
	__m512i xo = _mm512_loadu_si512((const void *)(xq + 64));
	__m512i p[G];
	unsigned r;

#pragma GCC unroll 16
	for (r = 0; r < G; r++) {
		__m512i v = _mm512_maskz_loadu_epi8(mk, rec[r] + sb + 16 * b);

		p[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo_q8(v),
							       xe), hi_q8(v), xo);
	}
	reduce16(p, d);
}

T512 static void group16(const uint8_t *const rec[G], uint32_t nr, uint64_t sb,
			 const struct pccx_kern_act *a, const int8_t *xq, struct pccx_kern_pf *f,
			 float *y)
{
	uint32_t nb = a->k / 32, b, r;
	__m512 acc = _mm512_setzero_ps(), d[8];
	__m512i dot[4];
	float v[G];

	for (b = 0; b + 8 <= nb; b += 8) {
		scales16x8(rec, b, d);
		pccx__kern_pf_step(f);
		dots16x4(rec, sb, a->xp, b, dot);
		acc = accumulate(acc, dot, d, a, b, 4);
		pccx__kern_pf_step(f);
		dots16x4(rec, sb, a->xp, b + 4, dot);
		acc = accumulate(acc, dot, d + 4, a, b + 4, 4);
	}
	if (b + 4 <= nb) {
		/* the scale beats are whole 16-byte beats: eight scales are there to read */
		scales16x8(rec, b, d);
		dots16x4(rec, sb, a->xp, b, dot);
		acc = accumulate(acc, dot, d, a, b, 4);
		b += 4;
	}
	if (b < nb && xq) {
		/* 1-3 blocks left; b % 8 == 4 finds their scales in d[4 ..] already */
		if (b % 8 == 0)
			scales16x8(rec, b, d);
		dots16_tail(rec, sb, xq, b, nb - b, dot);
		acc = accumulate(acc, dot, d + b % 8, a, b, nb - b);
		b = nb;
	}
	if (b == nb) {
		_mm512_mask_storeu_ps(y, (__mmask16)((1u << nr) - 1), canon16(acc));
		return;
	}
	_mm512_storeu_ps(v, acc);
	for (r = 0; r < nr; r++)
		y[r] = pccx__kern_q4_row_finish(rec[r], sb, a, b, v[r]);
}

void pccx__kern_q4_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			       const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = pccx__kern_scale_bytes(a->k);
	uint32_t r0, r, nr, nb = a->k / 32;
	const uint8_t *rec[G];
	int8_t xq[128];

	if (nb % 4)
		pccx__kern_act_tail(a, nb / 4 * 4, nb % 4, xq);
	for (r0 = 0; r0 < n; r0 += G) {
		/* one share of the next group per step of four blocks */
		struct pccx_kern_pf f = pccx__kern_pf_group(w, row_bytes, n, r0, G, a->k / 128);

		nr = n - r0 < G ? n - r0 : G;
		for (r = 0; r < G; r++)
			rec[r] = w + (uint64_t)(r0 + (r < nr ? r : nr - 1)) * row_bytes;
		group16(rec, nr, sb, a, nb % 4 ? xq : NULL, &f, y + r0);
	}
}

/* ---- GEMM: the weights of a row group transposed once, used by every activation row ---- */

#define MB 64	/* activation rows per pass over a row group */

/*
 * t[e] lane r = 32-bit word e of v[r]: pairs of rows interleaved, pairs of pairs, then the
 * 128-bit lanes.
 */
T512 static void transpose16(const __m512i v[G], __m512i t[G])
{
	__m512i a[G], q[G], o[4];
	unsigned r, g, i;

	/* a[2k], a[2k+1]: words 0 1, 2 3 of rows 2k, 2k+1 interleaved (per 128-bit lane) */
#pragma GCC unroll 16
	for (r = 0; r < G; r += 2) {
		a[r] = _mm512_unpacklo_epi32(v[r], v[r + 1]);
		a[r + 1] = _mm512_unpackhi_epi32(v[r], v[r + 1]);
	}
	/* q[4h + g]: word g of rows 4h .. 4h+3 (per 128-bit lane) */
#pragma GCC unroll 16
	for (r = 0; r < G; r += 4) {
		q[r] = _mm512_unpacklo_epi64(a[r], a[r + 2]);
		q[r + 1] = _mm512_unpackhi_epi64(a[r], a[r + 2]);
		q[r + 2] = _mm512_unpacklo_epi64(a[r + 1], a[r + 3]);
		q[r + 3] = _mm512_unpackhi_epi64(a[r + 1], a[r + 3]);
	}
#pragma GCC unroll 4
	for (g = 0; g < 4; g++) {
		lanes4x4(q[g], q[4 + g], q[8 + g], q[12 + g], o);
#pragma GCC unroll 4
		for (i = 0; i < 4; i++)
			t[4 * i + g] = o[i];
	}
}

/*
 * Blocks b .. b+3 of 16 rows, transposed: wt[8 i + g] lane r = the q + 8 values of the low
 * nibbles of bytes 4g .. 4g+3 of row r's block b + i (its even elements 8g, 8g+2, 8g+4, 8g+6),
 * wt[8 i + 4 + g] those of the high nibbles (the odd elements). Only the nibbles of the nblk
 * (1-4) blocks from b are loaded; those of the others read as 0 and are not used.
 */
T512 static void weights16(const uint8_t *const rec[G], uint64_t sb, uint32_t b, uint32_t nblk,
			   __m512i wt[32])
{
	const __mmask64 mk = nblk >= 4 ? ~(__mmask64)0 : ((__mmask64)1 << (16 * nblk)) - 1;
	__m512i v[G], t[G];
	unsigned r, e;

#pragma GCC unroll 16
	for (r = 0; r < G; r++)
		v[r] = _mm512_maskz_loadu_epi8(mk, rec[r] + sb + 16 * b);
	transpose16(v, t);
	/* t[4i + g]: word g of block b + i */
#pragma GCC unroll 16
	for (e = 0; e < G; e++) {
		wt[8 * (e / 4) + e % 4] = lo_q8(t[e]);
		wt[8 * (e / 4) + 4 + e % 4] = hi_q8(t[e]);
	}
}

/* Four activation bytes broadcast to every 32-bit lane. */
T512 static __m512i bcast4(const int8_t *p)
{
	int32_t v;

	__builtin_memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

/*
 * Block b of two groups of 16 rows (weights wa, wb: block b's part of what weights16 gives)
 * for every activation row j < m: acca[j] = acca[j] + c_b of group A, accb[j] likewise, with
 * c_b = (float)(dot_b - 8 sum x_b) * (d_b * sx_b). Each activation broadcast feeds both
 * groups' dots (half the loads per product of one group's), and each dot starts at
 * -8 sum(x) (integers: exact). xt: the row's activations for the last 1-3 blocks of a k that
 * is not a multiple of 128, laid out by pccx__kern_act_tail (128 bytes a row); else from xp.
 */
T512 static inline __attribute__((always_inline)) void
gemm_block2(const __m512i *wa, const __m512i *wb, __m512 da, __m512 db,
	    const struct pccx_kern_act *a, uint32_t m, uint32_t b, const int8_t *xt,
	    __m512 *acca, __m512 *accb)
{
	const uint32_t off = 32 * (b & ~3u) + 16 * (b & 3u);
	__m512i w0[8], w1[8];
	uint32_t j;
	unsigned i;

#pragma GCC unroll 8
	for (i = 0; i < 8; i++) {
		w0[i] = wa[i];
		w1[i] = wb[i];
	}
	for (j = 0; j < m; j++) {
		const int8_t *xe = xt ? xt + 128 * j + 16 * (b & 3u) : a[j].xp + off;
		const int8_t *xo = xe + 64;
		__m512i ea = _mm512_set1_epi32(-8 * a[j].xsum[b]), eb = ea;
		__m512i oa = _mm512_setzero_si512(), ob = oa;
		__m512 sx;

#pragma GCC unroll 4
		for (i = 0; i < 4; i++) {
			__m512i x = bcast4(xe + 4 * i);

			ea = _mm512_dpbusd_epi32(ea, w0[i], x);
			eb = _mm512_dpbusd_epi32(eb, w1[i], x);
		}
#pragma GCC unroll 4
		for (i = 0; i < 4; i++) {
			__m512i x = bcast4(xo + 4 * i);

			oa = _mm512_dpbusd_epi32(oa, w0[4 + i], x);
			ob = _mm512_dpbusd_epi32(ob, w1[4 + i], x);
		}
		sx = _mm512_set1_ps(a[j].sx[b]);
		acca[j] = _mm512_add_ps(acca[j], _mm512_mul_ps(_mm512_cvtepi32_ps(
			_mm512_add_epi32(ea, oa)), _mm512_mul_ps(da, sx)));
		accb[j] = _mm512_add_ps(accb[j], _mm512_mul_ps(_mm512_cvtepi32_ps(
			_mm512_add_epi32(eb, ob)), _mm512_mul_ps(db, sx)));
	}
}

/* Rows y[j * ldy + r], r < nr, of a group of 16 from its accumulators. */
T512 static void gemm_store16(uint32_t nr, uint32_t m, const __m512 *acc, float *y, size_t ldy)
{
	uint32_t j;

	for (j = 0; j < m; j++)
		_mm512_mask_storeu_ps(y + j * ldy, (__mmask16)((1u << nr) - 1), canon16(acc[j]));
}

/*
 * Rows rec[0 .. nra) and rec[16 .. 16 + nrb) (nra 1-16; nrb 0-16, 0 when nra < 16; unused
 * lanes repeat a row and are not stored) against activation rows a[0 .. m), m <= MB:
 * y[j * ldy + r]. xt: pccx__kern_act_tail's layouts of the rows' last blocks when k is not a multiple of
 * 128 (the blocks after the last whole group of four go the same way, their nibbles loaded
 * under a mask).
 */
T512 static void gemm_group32(const uint8_t *const rec[2 * G], uint32_t nra, uint32_t nrb,
			      uint64_t sb, const struct pccx_kern_act *a, uint32_t m,
			      const int8_t *xt, struct pccx_kern_pf *f, float *y, size_t ldy)
{
	uint32_t nb = a->k / 32, b, i, j, t;
	__m512 acca[MB], accb[MB], da[8], db[8];
	__m512i wta[32], wtb[32];

	for (j = 0; j < m; j++) {
		acca[j] = _mm512_setzero_ps();
		accb[j] = _mm512_setzero_ps();
	}
	for (b = 0; b < nb; b += 4) {
		t = nb - b < 4 ? nb - b : 4;
		/* the scale beats are whole 16-byte beats: eight scales are there to read */
		if (b % 8 == 0) {
			scales16x8(rec, b, da);
			scales16x8(rec + G, b, db);
		}
		pccx__kern_pf_step(f);
		weights16(rec, sb, b, t, wta);
		weights16(rec + G, sb, b, t, wtb);
		for (i = 0; i < t; i++)
			gemm_block2(wta + 8 * i, wtb + 8 * i, da[(b + i) % 8], db[(b + i) % 8], a,
				    m, b + i, t < 4 ? xt : NULL, acca, accb);
	}
	gemm_store16(nra, m, acca, y, ldy);
	if (nrb)
		gemm_store16(nrb, m, accb, y + G, ldy);
}

void pccx__kern_q4_gemm_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				    const struct pccx_kern_act *a, uint32_t m, float *y,
				    size_t ldy)
{
	uint64_t sb = pccx__kern_scale_bytes(a->k);
	const uint8_t *rec[2 * G];
	uint32_t r0, r, nr, j0, mb, nb = a->k / 32, xt_j0 = UINT32_MAX;
	int8_t xt[MB * 128];

	for (r0 = 0; r0 < n; r0 += 2 * G) {
		nr = n - r0 < 2 * G ? n - r0 : 2 * G;
		for (r = 0; r < 2 * G; r++)
			rec[r] = w + (uint64_t)(r0 + (r < nr ? r : nr - 1)) * row_bytes;
		for (j0 = 0; j0 < m; j0 += MB) {
			/* one share of the next rows per step of four blocks */
			struct pccx_kern_pf f = pccx__kern_pf_group(w, row_bytes, n, r0, 2 * G,
								    (a->k + 127) / 128);

			mb = m - j0 < MB ? m - j0 : MB;
			if (nb % 4 && xt_j0 != j0) {
				for (r = 0; r < mb; r++)
					pccx__kern_act_tail(&a[j0 + r], nb / 4 * 4, nb % 4,
							    xt + 128 * r);
				xt_j0 = j0;
			}
			gemm_group32(rec, nr < G ? nr : G, nr > G ? nr - G : 0, sb, a + j0, mb,
				     xt, &f, y + j0 * ldy + r0, ldy);
		}
	}
}

/* ---- F32 matmuls: the attention scores (row dots) and context (column sums) ---- */

/*
 * F32 rows row[0 .. nr) (16 lanes; the lanes past nr repeat a row and are not stored) against
 * x rows 0 .. m-1 (m <= MB): 16 elements of each row at a time, transposed so that a vector
 * holds one element of every row, then per element in order acc = acc + w * x, one lane per
 * row: pccx__f32_row_dot's operations.
 */
T512 static void f32_group16(const float *const row[G], uint32_t nr, uint32_t k, const float *x,
			     size_t xs, uint32_t m, float *y, size_t ldy)
{
	__m512 acc[MB];
	__m512i v[G], t[G];
	uint32_t k0, j, e, ne, r;

	for (j = 0; j < m; j++)
		acc[j] = _mm512_setzero_ps();
	for (k0 = 0; k0 < k; k0 += G) {
		__mmask16 mk;

		ne = k - k0 < G ? k - k0 : G;
		mk = (__mmask16)((1u << ne) - 1);
#pragma GCC unroll 16
		for (r = 0; r < G; r++)
			v[r] = _mm512_maskz_loadu_epi32(mk, row[r] + k0);
		transpose16(v, t);
		for (j = 0; j < m; j++) {
			const float *xj = x + j * xs + k0;
			__m512 a = acc[j];

			for (e = 0; e < ne; e++)
				a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_castsi512_ps(t[e]),
								   _mm512_set1_ps(xj[e])));
			acc[j] = a;
		}
	}
	for (j = 0; j < m; j++)
		_mm512_mask_storeu_ps(y + j * ldy, (__mmask16)((1u << nr) - 1), canon16(acc[j]));
}

void pccx__kern_f32_rows_avx512(const float *w, uint64_t row_bytes, uint32_t n, uint32_t k,
				const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	const float *row[G];
	uint32_t r0, r, nr, j0;

	for (r0 = 0; r0 < n; r0 += G) {
		nr = n - r0 < G ? n - r0 : G;
		for (r = 0; r < G; r++)
			row[r] = (const float *)(const void *)((const uint8_t *)w +
				 (uint64_t)(r0 + (r < nr ? r : nr - 1)) * row_bytes);
		for (j0 = 0; j0 < m; j0 += MB)
			f32_group16(row, nr, k, x + j0 * xs, xs, m - j0 < MB ? m - j0 : MB,
				    y + j0 * ldy + r0, ldy);
	}
}

/*
 * F32T columns [j0, j0 + nc) (nc <= 16) of W (k rows of row_bytes) against x rows 0 .. m-1
 * (m <= MB): per row of W in order, acc = acc + x * w, one lane per column:
 * pccx__f32_colsum's operations.
 */
T512 static void f32t_cols16(const float *w, uint64_t row_bytes, uint32_t k, uint32_t nc,
			     const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	const __mmask16 mk = (__mmask16)((1u << nc) - 1);
	__m512 acc[MB];
	uint32_t kk, j;

	for (j = 0; j < m; j++)
		acc[j] = _mm512_setzero_ps();
	for (kk = 0; kk < k; kk++) {
		__m512 wv = _mm512_maskz_loadu_ps(mk, (const uint8_t *)w + kk * row_bytes);

		for (j = 0; j < m; j++)
			acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(_mm512_set1_ps(x[j * xs + kk]),
								     wv));
	}
	for (j = 0; j < m; j++)
		_mm512_mask_storeu_ps(y + j * ldy, mk, canon16(acc[j]));
}

void pccx__kern_f32t_cols_avx512(const float *w, uint64_t row_bytes, uint32_t k, uint32_t n,
				 const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	uint32_t c0, j0;

	for (c0 = 0; c0 < n; c0 += G)
		for (j0 = 0; j0 < m; j0 += MB)
			f32t_cols16(w + c0, row_bytes, k, n - c0 < G ? n - c0 : G, x + j0 * xs,
				    xs, m - j0 < MB ? m - j0 : MB, y + j0 * ldy + c0, ldy);
}

#else

void pccx__kern_q4_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			       const struct pccx_kern_act *a, float *y)
{
	pccx__kern_q4_rows_ref(w, row_bytes, n, a, y);
}

void pccx__kern_q4_gemm_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				    const struct pccx_kern_act *a, uint32_t m, float *y,
				    size_t ldy)
{
	pccx__kern_q4_gemm_rows_ref(w, row_bytes, n, a, m, y, ldy);
}

void pccx__kern_f32_rows_avx512(const float *w, uint64_t row_bytes, uint32_t n, uint32_t k,
				const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	pccx__kern_f32_rows_ref(w, row_bytes, n, k, x, xs, m, y, ldy);
}

void pccx__kern_f32t_cols_avx512(const float *w, uint64_t row_bytes, uint32_t k, uint32_t n,
				 const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	pccx__kern_f32t_cols_ref(w, row_bytes, k, n, x, xs, m, y, ldy);
}

#endif
