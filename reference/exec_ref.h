/* SPDX-License-Identifier: MIT */
/*
 * The bit-exact reference implementation of the NPU op interface: every op runs at once on
 * a host array standing in for the 114,688-word L2, with the isa/num primitives (the
 * arithmetic contract of docs/numerics.md). Before it runs, each op is encoded as the v002
 * instruction(s) it stands for and checked with the ISA layer (encode, decode, effects), so
 * the graph can only use what the device can execute.
 */
#ifndef PCCX_EXEC_REF_H
#define PCCX_EXEC_REF_H

#include "kernels.h"
#include "npu_ops.h"
#include "pccx_regs.h"

struct pccx_ref_exec;

/*
 * Called by every stage op. data points at row 0 in L2; row r starts at data + r * stride
 * (elements). Return non-zero to stop the step with that status.
 */
typedef int (*pccx_ref_stage_fn)(void *user, const char *name, const float *data,
				 uint32_t rows, uint32_t cols, uint32_t stride);

struct pccx_ref_counters {
	uint64_t ops[8];	/* matmul, cvo, copy, load, store, stage, begin, end */
	uint64_t stream_bytes;	/* weight-stream bytes the matmuls read */
	uint64_t load_bytes;	/* host -> L2 */
	uint64_t store_bytes;	/* L2 -> host */
};

/*
 * The v002 extensions the reference executes (docs/isa.md), each giving the bits of the ops
 * it replaces: what a reference run on its own plans with (pccx__gemma_plan_use_features), so
 * that it runs the graph a device reporting them runs and reads only the sparse layers' kept
 * W_up rows and W_down columns.
 */
#define PCCX_REF_EXEC_FEATURES \
	(PCCX_FEAT_SMUL | PCCX_FEAT_ROWMASK | PCCX_FEAT_COLSKIP | PCCX_FEAT_RACC)

/* n_threads 0 = every online CPU. */
PCCX_MUST_CHECK int pccx__ref_exec_create(struct pccx_ref_exec **out, unsigned n_threads,
					  enum pccx_kern_impl impl, pccx_diag *d);
void pccx__ref_exec_free(struct pccx_ref_exec *x);

/* The op table; the ctx argument of every op is the pccx_ref_exec. */
const struct pccx_npu_ops *pccx__ref_exec_ops(void);

void pccx__ref_exec_on_stage(struct pccx_ref_exec *x, pccx_ref_stage_fn fn, void *user);
/* The message of the last failed op ("" if none). */
const char *pccx__ref_exec_error(const struct pccx_ref_exec *x);
const struct pccx_ref_counters *pccx__ref_exec_counters(const struct pccx_ref_exec *x);
void pccx__ref_exec_reset_counters(struct pccx_ref_exec *x);
/*
 * Direct access to L2 (PCCX_L2_WORDS * 4 FP32) and the scalar register, once every op issued
 * so far is done: with two or more threads a Q4 matmul may still be running when its op
 * returns (docs/reference.md §9), and these wait for it. What the pointer shows after a later
 * op is only sure once it is asked for again.
 */
float *pccx__ref_exec_l2(struct pccx_ref_exec *x);
float pccx__ref_exec_sreg(struct pccx_ref_exec *x);
unsigned pccx__ref_exec_threads(const struct pccx_ref_exec *x);
enum pccx_kern_impl pccx__ref_exec_kernel(const struct pccx_ref_exec *x);

#endif /* PCCX_EXEC_REF_H */
