/* SPDX-License-Identifier: MIT */
/*
 * The compiler: the NPU op interface (reference/npu_ops.h) implemented by emitting v002
 * instruction words, host DMA descriptors and weight-stream descriptors. The Gemma 3n step
 * (reference/gemma_graph.c) run against these ops produces the job that the device (the
 * simulator, /dev/pccx) executes; run against reference/exec_ref.c the same op sequence is
 * the bit-exact reference the device's results are compared with, stage by stage.
 */
#ifndef PCCX_COMPILER_H
#define PCCX_COMPILER_H

#include "jobbuild.h"
#include "npu_ops.h"

/*
 * Turns a bind(buf, base, size, dev_write) into a device buffer handle: the backend owns the
 * buffers (the in-process simulator registers host memory, the kernel backend has BOs).
 */
typedef int (*pccx_compiler_bind_fn)(void *user, uint32_t buf, void *base, uint64_t size,
				     bool dev_write, uint32_t *handle);

struct pccx_compiler;
/* Called by end() once a step's job is complete (e.g. to run it); its status is end()'s. */
typedef int (*pccx_compiler_end_fn)(void *user, struct pccx_compiler *c);

struct pccx_compiler {
	struct pccx_job_builder jb;
	pccx_compiler_bind_fn bind;
	void *bind_user;
	pccx_compiler_end_fn on_end;
	void *end_user;
	uint32_t handle[PCCX_NPU_NBUF];
	uint64_t size[PCCX_NPU_NBUF];
	bool bound[PCCX_NPU_NBUF];
	uint32_t pos;
	bool in_step;
	pccx_diag err;
};

void pccx__compiler_init(struct pccx_compiler *c, pccx_compiler_bind_fn bind, void *user);
void pccx__compiler_free(struct pccx_compiler *c);
void pccx__compiler_on_end(struct pccx_compiler *c, pccx_compiler_end_fn fn, void *user);
/* The op table; the ctx of every op is the pccx_compiler. */
const struct pccx_npu_ops *pccx__compiler_ops(void);
/* The job of the last completed step (between end() and the next begin()). */
PCCX_MUST_CHECK int pccx__compiler_job(struct pccx_compiler *c, struct pccx_job_view *job,
				       pccx_diag *d);

#endif
