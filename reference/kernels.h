/* SPDX-License-Identifier: MIT */
/*
 * Host kernels for the heavy matmuls of the reference: Q4 (W4A8) rows dotted with one
 * quantised activation, for the 16384 x 2048 FFN matrices and the 262,400-row LM head.
 *
 *   _ref   the definition: y[r] = pccx__q4_row_dot(row r) from isa/num, row by row;
 *   _avx2  2 rows at a time, 8 blocks of a row per step: the int32 block dots with AVX2
 *          integer ops (exact, so any order), the block products t = d * sx and
 *          c = (float)dot * t as vector lanes (each lane the scalar IEEE operation), then per
 *          row acc = acc + c block by block in order, the same FP32 operations as _ref.
 *   _avx512  the same with the int32 block dots from AVX-512 VNNI (vpdpbusd on four blocks
 *          at once).
 * Both give the same bits for every input (tests compare them with memcmp). Rows are
 * independent, so splitting them across threads cannot change a result either.
 */
#ifndef PCCX_GEMMA_KERNELS_H
#define PCCX_GEMMA_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "pool.h"

enum pccx_kern_impl {
	PCCX_KERN_AUTO,	/* the widest the CPU runs: AVX-512 VNNI, else AVX2, else _ref */
	PCCX_KERN_REF,
	PCCX_KERN_AVX2,
	PCCX_KERN_AVX512,
};

/* A quantised activation vector, with the AVX2 kernel's extra layout. */
struct pccx_kern_act {
	uint32_t k;		/* elements, a multiple of 32 */
	const int8_t *q8;	/* (k) INT8 activations */
	const float *sx;	/* (k/32) their block scales */
	int8_t *xp;		/* (k) per group of four blocks: the 16 even elements of each,
				 * then the 16 odd ones of each (blocks past the last whole group:
				 * unused) */
	int32_t *xsum;		/* (k/32) sum of each block's activations */
};

/* Fill a->xp and a->xsum from a->q8 (needed by the AVX2 kernel only). */
void pccx__kern_act_prepare(struct pccx_kern_act *a);

/*
 * y[i] = dot of stored row r0 + i (records of row_bytes at w, device Q4 layout: FP16
 * scale beats then nibble beats) with the activation, for i in [0, n).
 */
void pccx__kern_q4_rows_ref(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			    const struct pccx_kern_act *a, float *y);
void pccx__kern_q4_rows_avx2(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			     const struct pccx_kern_act *a, float *y);
void pccx__kern_q4_rows_avx512(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			       const struct pccx_kern_act *a, float *y);

/* True when the CPU runs the AVX2 kernel (AVX2 and F16C). */
bool pccx__kern_have_avx2(void);
/* True when the CPU runs the AVX-512 kernel (AVX-512 F, BW, VL and VNNI, and F16C). */
bool pccx__kern_have_avx512(void);
/* True when this CPU runs `impl` (AUTO and REF always). */
bool pccx__kern_supported(enum pccx_kern_impl impl);
/* AUTO resolved to what will run. */
enum pccx_kern_impl pccx__kern_resolve(enum pccx_kern_impl impl);
const char *pccx__kern_name(enum pccx_kern_impl impl);

/* All n rows, split across the pool's threads (pool may be NULL). */
void pccx__kern_q4_gemv(struct pccx_pool *pool, enum pccx_kern_impl impl, const uint8_t *w,
			uint64_t row_bytes, uint32_t n, const struct pccx_kern_act *a, float *y);

#endif /* PCCX_GEMMA_KERNELS_H */
