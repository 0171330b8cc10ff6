/* SPDX-License-Identifier: MIT */
/*
 * The abstract "NPU op" interface the Gemma 3n decode step is written against.
 *
 * Each op is one pccx v002 instruction (or, for matmul, the MEMSETs of its two shape entries
 * plus one GEMV/GEMM) on L2 word addresses, with host memory named as (buffer, byte offset):
 *
 *   matmul  GEMV (m == 1) / GEMM: y[m x n] = x[m x k] . W^T, W streamed from a host buffer
 *   cvo     CVO: one SFU instruction, vector or scalar form, exactly the ISA fields
 *   copy    MEMCPY L2 -> L2
 *   load    MEMCPY host -> L2 (whole words)
 *   store   MEMCPY L2 -> host (whole words)
 *   stage   no instruction: names the tensor at an L2 range once it is complete
 *
 * Two implementations: reference/exec_ref.c executes every op at once on a host array
 * standing in for L2 (the bit-exact reference), and the compiler turns the same sequence into
 * instruction words, DMA descriptors and weight-stream descriptors for the simulator / device.
 * The graph (gemma_graph.c) makes every address decision, so both see identical addresses.
 *
 * Rules both implementations enforce (they are the ISA's): L2 ranges lie inside the 114,688
 * words; a row of len elements occupies ceil(len/4) words and rows are that far apart; matmul
 * source and destination do not overlap; a vector CVO's source and destination are identical
 * or disjoint; counts fit their 16-bit fields; host offsets are multiples of 16 bytes.
 * Ops run in order: an op sees the effects of every op before it (host memory included: a KV
 * row stored by `store` is visible to a later matmul streaming it).
 */
#ifndef PCCX_NPU_OPS_H
#define PCCX_NPU_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "pccx_isa.h"

/* The host buffers a decode step names; the compiler maps each to a buffer handle. */
enum pccx_npu_buf {
	PCCX_NPU_BUF_WEIGHTS,	/* the model in device layout; the device only reads it */
	PCCX_NPU_BUF_KV,	/* the KV cache; read (streams) and written (stores) */
	PCCX_NPU_BUF_IN,	/* per-step inputs and constants the host writes before a step */
	PCCX_NPU_BUF_OUT,	/* logits the host reads after a step */
	PCCX_NPU_NBUF
};

/* Where a matmul's weight rows come from. */
struct pccx_npu_wref {
	uint32_t buf;		/* enum pccx_npu_buf */
	uint64_t offset;	/* bytes: the first stored row this instruction reads */
	int32_t tensor;		/* model tensor id, or -1 for KV-cache rows */
	uint32_t row0;		/* first stored row of that tensor (traces and names only) */
};

struct pccx_npu_matmul {
	uint32_t dst;		/* L2 word of output row 0 */
	uint32_t src;		/* L2 word of input row 0 */
	uint32_t n;		/* outputs per row */
	uint32_t k;		/* inputs per row */
	uint32_t m;		/* rows: 1 = GEMV, more = GEMM */
	uint32_t fmt;		/* PCCX_WFMT_Q4 / F32 / F32T (Q4 always carries FP16 scales) */
	bool accm;		/* y += old destination (FP32) */
	bool findemax;		/* S <- max of the stored outputs */
	/*
	 * GEMV rowmask (FEATURES.ROWMASK, Q4, m == 1, no accm or findemax): the n elements at dst
	 * are the mask; rows whose mask element is +-0 are not read and give +0.
	 */
	bool rowmask;
	struct pccx_npu_wref w;
};

struct pccx_npu_cvo {
	uint32_t func;		/* PCCX_CVO_* */
	uint32_t flags;		/* PCCX_CVOF_* */
	uint32_t src, dst;	/* L2 words */
	uint32_t len;		/* elements; 0 in scalar form; LDS: element index */
};

struct pccx_npu_ops {
	const char *name;
	/* Register host buffer `buf` (size bytes); dev_write: the device may write it. */
	int (*bind)(void *ctx, uint32_t buf, void *base, uint64_t size, bool dev_write);
	/* A decode step at position pos begins (the host has written BUF_IN) / ends. */
	int (*begin)(void *ctx, uint32_t pos);
	int (*end)(void *ctx);
	int (*matmul)(void *ctx, const struct pccx_npu_matmul *mm);
	int (*cvo)(void *ctx, const struct pccx_npu_cvo *op);
	int (*copy)(void *ctx, uint32_t dst, uint32_t src, uint32_t words);
	int (*load)(void *ctx, uint32_t dst, uint32_t buf, uint64_t offset, uint32_t n_elems);
	int (*store)(void *ctx, uint32_t buf, uint64_t offset, uint32_t src, uint32_t n_elems);
	/* `rows` rows of `cols` elements at L2 word addr (row stride ceil(cols/4)) are final. */
	int (*stage)(void *ctx, const char *name, uint32_t addr, uint32_t rows, uint32_t cols);
	/* Optional: one line describing the last failure. */
	const char *(*error)(void *ctx);
};

#endif /* PCCX_NPU_OPS_H */
