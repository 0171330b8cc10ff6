/* SPDX-License-Identifier: MIT */
/*
 * Job builder: emits v002 instructions and their descriptors, allocating shape entries,
 * splitting weight streams over the four ports, and recording stage markers. Used by the
 * compiler and by tests. Errors are sticky: after the first failure every emit is a no-op
 * and pccx__job_builder_finish() reports it, so a sequence of emits is checked once.
 */
#ifndef PCCX_JOBBUILD_H
#define PCCX_JOBBUILD_H

#include <stddef.h>
#include <stdint.h>
#include "pccx/status.h"
#include "pccx_job.h"

struct pccx_job_builder_stage {
	uint32_t insn;        /* index of the last instruction writing the stage's range */
	uint32_t word;        /* L2 word of row 0 */
	uint32_t rows, cols;  /* rows of cols FP32 elements, ceil(cols/4) words apart */
	char name[48];
};

/* A weight tensor as stored in a device buffer: row records in row order. */
struct pccx_job_builder_weights {
	uint32_t handle;
	uint64_t offset;      /* byte offset of row 0's record */
	uint32_t n, k;        /* output and input elements */
	uint32_t fmt;         /* enum pccx_wfmt */
	bool w_scale;
	bool rowmask;         /* GEMV rowmask: the old dest is the row mask (docs/isa.md) */
};

struct pccx_job_builder {
	uint64_t *insn;
	struct pccx_l2_range *wr;   /* (n_insn) the L2 words each instruction writes */
	uint32_t n_insn, cap_insn;
	struct pccx_dma_desc *dma;
	uint32_t n_dma, cap_dma;
	struct pccx_stream_desc *stream;
	uint32_t n_stream, cap_stream;
	struct pccx_job_builder_stage *stages;
	uint32_t n_stages, cap_stages;
	/* shape RAM contents as the job leaves them so far */
	uint64_t valid[2];
	uint16_t v[2][PCCX_SHAPE_ENTRIES][3];
	uint32_t next_victim[2];
	bool async;           /* mark MEMCPY/CVO async (default true) */
	int status;           /* sticky pccx_status */
	pccx_diag diag;
};

void pccx__job_builder_init(struct pccx_job_builder *jb);
void pccx__job_builder_free(struct pccx_job_builder *jb);
/* Forget the instructions and descriptors but keep the allocations (next token's job). */
void pccx__job_builder_reset(struct pccx_job_builder *jb);


/* y (M rows of N at word dest) = x (M rows of K at word src) . W^T; op GEMV (M=1) or GEMM. */
void pccx__job_builder_matmul(struct pccx_job_builder *jb, unsigned opcode, uint32_t dest,
			      uint32_t src, uint32_t m,
			      const struct pccx_job_builder_weights *w, bool accm, bool findemax);
/* One CVO word; flags are PCCX_CVOF_* (sreg included). */
void pccx__job_builder_cvo(struct pccx_job_builder *jb, unsigned func, uint32_t src, uint32_t dst,
			   uint32_t len,
			   uint32_t flags);
/* host buffer (handle, byte offset) -> L2 words at dst, n FP32 elements (whole words move). */
void pccx__job_builder_load(struct pccx_job_builder *jb, uint32_t dst, uint32_t handle,
			    uint64_t offset, uint32_t n);
/* L2 words at src -> host buffer (handle, byte offset). */
void pccx__job_builder_store(struct pccx_job_builder *jb, uint32_t src, uint32_t handle,
			     uint64_t offset, uint32_t n);
/* L2 -> L2 copy of n elements (whole words). */
void pccx__job_builder_copy(struct pccx_job_builder *jb, uint32_t dst, uint32_t src, uint32_t n);
/*
 * Name the tensor at word (rows x cols), complete now: the marker is attached to the last
 * instruction emitted so far that writes any of its words.
 */
void pccx__job_builder_stage(struct pccx_job_builder *jb, const char *name, uint32_t word,
			     uint32_t rows,
			     uint32_t cols);

/* The job so far; returns the sticky status (with jb->diag) if any emit failed. */
PCCX_MUST_CHECK int pccx__job_builder_finish(struct pccx_job_builder *jb,
					     struct pccx_job_view *view, pccx_diag *d);

#endif
