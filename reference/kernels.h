/* SPDX-License-Identifier: MIT */
/*
 * Host kernels for the heavy matmuls of the reference: Q4 (W4A8) rows dotted with quantised
 * activations, for the 16384 x 2048 FFN matrices and the 262,400-row LM head.
 *
 * GEMV (one activation row), y[r] = dot of weight row r with the activation:
 *   _ref     the definition: y[r] = pccx__q4_row_dot(row r) from isa/num, row by row;
 *   _avx2    8 rows at a time, one row per vector lane ("vertical"): the int32 block dots with
 *            AVX2 integer ops (exact, so any order), reduced and transposed so that a vector
 *            holds one block of the 8 rows, then per block t = d * sx, c = (float)dot * t and
 *            acc = acc + c as vector lanes: every lane is one row's scalar IEEE operation, in
 *            the contract's block order;
 *   _avxvnni the same with the int32 dots from AVX-VNNI (vpdpbusd on 256-bit vectors);
 *   _avx512  the same on 16 rows, int32 dots from AVX-512 VNNI.
 * GEMM (m activation rows), y[i][r] = dot of weight row r with activation row i, the bits of m
 * GEMVs: each (i, r) keeps its own in-order FP32 chain; the vectorised kernels read each
 * weight block once for all m rows.
 * Every variant gives the bits of _ref for every input (tests compare them with memcmp). Rows
 * are independent, so splitting them across threads cannot change a result either.
 *
 * Also here, with isa/num's bits likewise: the F32 matmuls (attention scores and context), the
 * activation quantiser and layout, the SFU's element-wise functions and the matmul output
 * stage, vectorised where the CPU allows (kernels_f32.c, kernels_quant.c, kernels_sfu.c,
 * kernels_transc.c).
 */
#ifndef PCCX_GEMMA_KERNELS_H
#define PCCX_GEMMA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx_num.h"
#include "pool.h"

enum pccx_kern_impl {
	PCCX_KERN_AUTO,	/* the widest the CPU runs: AVX-512 VNNI, else AVX2, else _ref */
	PCCX_KERN_REF,
	PCCX_KERN_AVX2,	/* the 256-bit kernels: _avxvnni where the CPU has AVX-VNNI, else _avx2 */
	PCCX_KERN_AVX512,
	PCCX_KERN_NIMPL	/* not a kernel: the count */
};

/* A quantised activation vector, with the vector kernels' extra layout. */
struct pccx_kern_act {
	uint32_t k;		/* elements, a multiple of 32 */
	const int8_t *q8;	/* (k) INT8 activations */
	const float *sx;	/* (k/32) their block scales */
	int8_t *xp;		/* (k) per group of four blocks: the 16 even elements of each,
				 * then the 16 odd ones of each (blocks past the last whole group:
				 * unused) */
	int32_t *xsum;		/* (k/32) sum of each block's activations */
};

/* Fill a->xp and a->xsum from a->q8 (needed by the vector kernels); AVX2 where it runs. */
void pccx__kern_act_prepare(struct pccx_kern_act *a);
/* The same in plain C, byte by byte (the definition of the layout). */
void pccx__kern_act_prepare_ref(struct pccx_kern_act *a);
/* The last j (1-3) blocks from b of a row whose block count is not a multiple of four, laid
 * out as xp lays out a whole group of four, with zeros for the missing blocks (128 bytes). */
void pccx__kern_act_tail(const struct pccx_kern_act *a, uint32_t b, uint32_t j, int8_t xq[128]);

/* Bytes of the FP16 scale beats at the start of a stored Q4 row of k elements. */
uint64_t pccx__kern_scale_bytes(uint32_t k);

/*
 * y[i] = dot of stored row r0 + i (records of row_bytes at w, device Q4 layout: FP16
 * scale beats then nibble beats) with the activation, for i in [0, n).
 */
void pccx__kern_q4_rows_ref(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			    const struct pccx_kern_act *a, float *y);
void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y);
void pccx__kern_q4_rows_avxvnni(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				const struct pccx_kern_act *a, float *y);
void pccx__kern_q4_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			       const struct pccx_kern_act *a, float *y);

/*
 * GEMM: y[i * ldy + j] = dot of stored row j with activation a[i], for i in [0, m) and
 * j in [0, n); every a[i] has the same k. The bits of m calls of the rows kernel.
 */
void pccx__kern_q4_gemm_rows_ref(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				 const struct pccx_kern_act *a, uint32_t m, float *y, size_t ldy);
void pccx__kern_q4_gemm_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				  const struct pccx_kern_act *a, uint32_t m, float *y,
				  size_t ldy);
void pccx__kern_q4_gemm_rows_avxvnni(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				     const struct pccx_kern_act *a, uint32_t m, float *y,
				     size_t ldy);
void pccx__kern_q4_gemm_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				    const struct pccx_kern_act *a, uint32_t m, float *y,
				    size_t ldy);

/* The row and GEMM kernels of one implementation (reference/kernels.c's pool jobs and the
 * simulator's rows use these; every implementation gives the same bits). */
typedef void (*pccx_kern_q4_rows_fn)(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				     const struct pccx_kern_act *a, float *y);
typedef void (*pccx_kern_q4_gemm_fn)(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				     const struct pccx_kern_act *a, uint32_t m, float *y,
				     size_t ldy);
struct pccx_kern_q4 {
	pccx_kern_q4_rows_fn rows;	/* one activation row */
	pccx_kern_q4_gemm_fn gemm;	/* several, each row's bits the row kernel's */
};
struct pccx_kern_q4 pccx__kern_q4_of(enum pccx_kern_impl impl);

/* n rows at w against activation rows a[0 .. m): y[j * ldy + i]. One activation row takes the
 * row kernel, which needs no transposed weights; several share each weight row's read. */
static inline void pccx__kern_q4_apply(const struct pccx_kern_q4 *k, const uint8_t *w,
				       uint64_t row_bytes, uint32_t n,
				       const struct pccx_kern_act *a, uint32_t m, float *y,
				       size_t ldy)
{
	if (m == 1)
		k->rows(w, row_bytes, n, a, y);
	else
		k->gemm(w, row_bytes, n, a, m, y, ldy);
}

/*
 * Blocks [b, k/32) of one stored row (scales at rec, nibbles at rec + sb) against a, one at a
 * time, continuing acc exactly as pccx__q4_row_dot does; the canonical result.
 */
float pccx__kern_q4_row_finish(const uint8_t *rec, uint64_t sb, const struct pccx_kern_act *a,
			       uint32_t b, float acc);

/*
 * Software prefetch of the next row group while one is read: a group's rows are read side by
 * side, which hardware prefetchers follow poorly, but they lie in one contiguous range, which
 * pccx__kern_pf_step fetches in order, `step` bytes (whole lines) per call. Into L1 only while
 * the group being read and the next fit in it side by side; larger groups go to L2, since
 * lines fetched into L1 a whole group ahead are evicted before they are read (on an AMD EPYC
 * with 32 KiB of L1 the AVX-512 GEMV of 2048-wide rows, 18 KiB a group, read 9 GB/s from
 * memory with L1 prefetches and 18 GB/s with L2 ones; 16384-wide rows 10 and 23).
 */
#define PCCX_KERN_PF_L1_BYTES (12u * 1024u)

struct pccx_kern_pf {
	const char *at, *end;
	uint64_t step;
	bool l1;
};

static inline void pccx__kern_pf_step(struct pccx_kern_pf *f)
{
	const char *e = f->at + f->step < f->end ? f->at + f->step : f->end;

	if (f->l1)
		for (; f->at < e; f->at += 64)
			__builtin_prefetch(f->at, 0, 3);
	else
		for (; f->at < e; f->at += 64)
			__builtin_prefetch(f->at, 0, 2);
}

/* Prefetch of rows [r0 + g, r0 + 2g) of n, for a group of g rows read in `steps` calls. */
static inline struct pccx_kern_pf pccx__kern_pf_group(const uint8_t *w, uint64_t row_bytes,
						      uint32_t n, uint32_t r0, uint32_t g,
						      uint32_t steps)
{
	struct pccx_kern_pf f;
	uint64_t gb = (uint64_t)g * row_bytes;

	f.at = (const char *)w + (uint64_t)(r0 + g < n ? r0 + g : n) * row_bytes;
	f.end = (const char *)w + (uint64_t)n * row_bytes;
	f.step = (gb / (steps ? steps : 1) + 63) / 64 * 64;
	f.l1 = gb <= PCCX_KERN_PF_L1_BYTES;
	return f;
}

/*
 * F32 matmuls, m rows of x (xs floats apart), y[i * ldy + j]; rows of W row_bytes apart (a
 * multiple of 16).
 * F32: y[i][j] = pccx__f32_row_dot(W row j, x row i, k), for j < n;
 * F32T: y[i][j] = pccx__f32_colsum's sum over W's k rows of x[i][kk] * W[kk][j], for j < n.
 * _ref calls isa/num; _avx512 puts one output per vector lane (the bits of _ref).
 */
void pccx__kern_f32_rows_ref(const float *w, uint64_t row_bytes, uint32_t n, uint32_t k,
			     const float *x, size_t xs, uint32_t m, float *y, size_t ldy);
void pccx__kern_f32_rows_avx512(const float *w, uint64_t row_bytes, uint32_t n, uint32_t k,
				const float *x, size_t xs, uint32_t m, float *y, size_t ldy);
void pccx__kern_f32t_cols_ref(const float *w, uint64_t row_bytes, uint32_t k, uint32_t n,
			      const float *x, size_t xs, uint32_t m, float *y, size_t ldy);
void pccx__kern_f32t_cols_avx512(const float *w, uint64_t row_bytes, uint32_t k, uint32_t n,
				 const float *x, size_t xs, uint32_t m, float *y, size_t ldy);
/* One thread: the AVX-512 kernel when impl resolves to it, else _ref (the simulator's). */
void pccx__kern_f32_rows(enum pccx_kern_impl impl, const float *w, uint64_t row_bytes,
			 uint32_t n, uint32_t k, const float *x, size_t xs, uint32_t m, float *y,
			 size_t ldy);
void pccx__kern_f32t_cols(enum pccx_kern_impl impl, const float *w, uint64_t row_bytes,
			  uint32_t k, uint32_t n, const float *x, size_t xs, uint32_t m, float *y,
			  size_t ldy);
/* The same split across the pool's threads by outputs; the AVX-512 kernels when impl is. */
void pccx__kern_f32_gemm(struct pccx_pool *pool, enum pccx_kern_impl impl, const float *w,
			 uint64_t row_bytes, uint32_t n, uint32_t k, const float *x, size_t xs,
			 uint32_t m, float *y, size_t ldy);
void pccx__kern_f32t_gemm(struct pccx_pool *pool, enum pccx_kern_impl impl, const float *w,
			  uint64_t row_bytes, uint32_t k, uint32_t n, const float *x, size_t xs,
			  uint32_t m, float *y, size_t ldy);

/* pccx__q8_quantize's bits, with AVX2 where the CPU has it. */
void pccx__kern_q8_quantize(const float *x, size_t k, int8_t *q, float *sx);

/*
 * The SFU's element-wise functions over n elements: the bits of pccx__sfu_vector; MUL, ADD and
 * SCALE (pccx__kern_sfu_cheap) vectorised, GELU and tanh too with AVX-512, the others passed
 * to it.
 */
void pccx__kern_sfu_vector(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n);
bool pccx__kern_sfu_cheap(enum pccx_sfu_fn fn);
/* The same without AVX-512: MUL, ADD and SCALE in vectorised blocks, the others scalar. */
void pccx__kern_sfu_blocks(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n);
/*
 * MUL, ADD, SCALE, GELU and tanh on AVX-512, the bits of pccx__sfu_vector; false (nothing
 * done) for other functions or CPUs.
 */
bool pccx__kern_sfu_avx512(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
			   float *dst, size_t n);

/*
 * A GEMV on q4c weights: pccx__q4c_column and pccx__q4c_block_end on the vectors of `impl`
 * (resolved as for the Q4 kernels: AVX-512, AVX2 with F16C, or isa/num's scalar steps); the
 * same INT32 sums, and accumulators that store as the same bits (kernels_q4c.c).
 */
void pccx__kern_q4c_column(enum pccx_kern_impl impl, const uint8_t *col, size_t rows, int32_t x,
			   int32_t *sum);
void pccx__kern_q4c_block_end(enum pccx_kern_impl impl, const uint8_t *scales, size_t rows,
			      float sx, int32_t *sum, float *acc);

/* out[i] = pccx__out_store(y[i], accm, out[i]) for i < n (the GEMV/GEMM output stage). */
void pccx__kern_out_store(const float *y, float *out, size_t n, bool accm);
/* The same on AVX-512; false (nothing done) on other CPUs. */
bool pccx__kern_out_avx512(const float *y, float *out, size_t n, bool accm);

/* True when the CPU runs the AVX2 kernel (AVX2 and F16C). Cached after the first call. */
bool pccx__kern_have_avx2(void);
/* True when the CPU runs the _avxvnni kernels (AVX2, F16C and AVX-VNNI). */
bool pccx__kern_have_avxvnni(void);
/* True when the CPU runs the AVX-512 kernel (AVX-512 F, BW, VL and VNNI, and F16C). */
bool pccx__kern_have_avx512(void);
/* True when this CPU runs `impl` (AUTO and REF always; false for values out of range). */
bool pccx__kern_supported(enum pccx_kern_impl impl);
/* AUTO resolved to what will run. */
enum pccx_kern_impl pccx__kern_resolve(enum pccx_kern_impl impl);
/* The kernel's name, "?" for values out of range. */
const char *pccx__kern_name(enum pccx_kern_impl impl);

/*
 * Work sharing: the threads take rows [*lo, *hi) in turn from *next until n. With nparts > 0 a
 * take gets a share of the rows left, (n - *next) / (2 nparts) rounded down to a multiple of 16,
 * but at least `chunk` (guided: few takes while much is left, and the threads finish within a
 * small chunk of each other); with nparts = 0 every take gets `chunk`. pccx__kern_chunk is the
 * least rows a take of nparts threads gets (UINT32_MAX, all at once, for one thread).
 */
#define PCCX_KERN_CHUNK_MIN 32u
uint32_t pccx__kern_chunk(unsigned nparts);
bool pccx__kern_take(uint32_t *next, uint32_t chunk, unsigned nparts, uint32_t n, uint32_t *lo,
		     uint32_t *hi);

/* All n rows, split across the pool's threads (pool may be NULL). */
void pccx__kern_q4_gemv(struct pccx_pool *pool, enum pccx_kern_impl impl, const uint8_t *w,
			uint64_t row_bytes, uint32_t n, const struct pccx_kern_act *a, float *y);
/* The GEMM of m activation rows, output rows split across the pool's threads. */
void pccx__kern_q4_gemm(struct pccx_pool *pool, enum pccx_kern_impl impl, const uint8_t *w,
			uint64_t row_bytes, uint32_t n, const struct pccx_kern_act *a, uint32_t m,
			float *y, size_t ldy);

/*
 * pccx__kern_q4_gemm in two halves on a pool of two or more threads (pccx__pool_start and
 * _join): the workers start on the rows at once, and the caller, free until it joins, takes
 * what is left of them then. *j is the caller's to keep until the join returns; a, w and y
 * must stay as they are until then. The same bits as pccx__kern_q4_gemm.
 */
struct pccx_kern_q4_job {
	enum pccx_kern_impl impl;
	const uint8_t *w;
	uint64_t row_bytes;
	uint32_t n, m;
	const struct pccx_kern_act *a;
	float *y;
	size_t ldy;
	uint32_t chunk;
	uint32_t next;		/* atomic: the first row not taken yet */
};

void pccx__kern_q4_gemm_start(struct pccx_pool *pool, struct pccx_kern_q4_job *j,
			      enum pccx_kern_impl impl, const uint8_t *w, uint64_t row_bytes,
			      uint32_t n, const struct pccx_kern_act *a, uint32_t m, float *y,
			      size_t ldy);
void pccx__kern_q4_gemm_join(struct pccx_pool *pool);

/*
 * Rows idx[0 .. n) of w (any order, each at most once): y[idx[i]] = that row against a[0],
 * split across the pool's threads, each row's bits those of pccx__kern_q4_gemv. scratch holds
 * pccx__kern_gather_bytes(pool, row_bytes) bytes (PCCX_KERN_GATHER_ROWS rows per thread).
 */
#define PCCX_KERN_GATHER_ROWS 16
size_t pccx__kern_gather_bytes(const struct pccx_pool *pool, uint64_t row_bytes);
void pccx__kern_q4_gemv_gather(struct pccx_pool *pool, enum pccx_kern_impl impl,
			       const uint8_t *w, uint64_t row_bytes, const uint32_t *idx,
			       uint32_t n, const struct pccx_kern_act *a, float *y, uint8_t *scratch);

#endif /* PCCX_GEMMA_KERNELS_H */
