/* SPDX-License-Identifier: MIT */
/*
 * A job file on the in-process backend: its buffers created there, its descriptors' handles
 * (the file's names for its buffers) translated to the backend's, so that the job can be
 * submitted as it is. What `pccx sim` runs.
 */
#ifndef PCCX_SIMJOB_H
#define PCCX_SIMJOB_H

#include <stdint.h>

#include "backend_sim.h"
#include "jobfile.h"

struct pccx_simjob {
	struct pccx_sim_backend *b;
	const struct pccx_jobfile *jf;
	uint32_t *handle;		/* (jf->n_buf) the backend's handle of each buffer */
	struct pccx_dma_desc *dma;	/* (jf->n_dma) with the backend's handles */
	struct pccx_stream_desc *stream; /* (jf->n_stream) with the backend's handles */
	struct pccx_job_view view;	/* the job to submit */
};

/*
 * Create jf's buffers on b (zero-filled) and the translated job; `name` (the file) starts a
 * refusal's message: "NAME: buffer 2 (handle 12): ...". jf must outlive j. A handle the
 * file does not declare becomes 0, which the validator refuses.
 */
PCCX_MUST_CHECK int pccx__simjob_load(struct pccx_simjob *j, struct pccx_sim_backend *b,
				      const struct pccx_jobfile *jf, const char *name,
				      pccx_diag *d);
/* Host memory and size of the buffer the file calls `handle`; NULL when it declares none. */
uint8_t *pccx__simjob_buf(const struct pccx_simjob *j, uint32_t handle, uint64_t *size);
/* Free what load allocated; the buffers stay on the backend until it is destroyed. */
void pccx__simjob_free(struct pccx_simjob *j);

#endif /* PCCX_SIMJOB_H */
