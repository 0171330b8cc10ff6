// SPDX-License-Identifier: MIT
/* A job file on the in-process backend (simjob.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "simjob.h"

/* The backend's handle of the buffer the file calls `handle`, or 0. */
static uint32_t translate(const struct pccx_simjob *j, uint32_t handle)
{
	uint32_t k;

	for (k = 0; k < j->jf->n_buf; k++)
		if (j->jf->buf[k].handle == handle)
			return j->handle[k];
	return 0;
}

int pccx__simjob_load(struct pccx_simjob *j, struct pccx_sim_backend *b,
		      const struct pccx_jobfile *jf,
		      const char *name, pccx_diag *d)
{
	uint32_t i;
	int rc;

	memset(j, 0, sizeof(*j));
	j->b = b;
	j->jf = jf;
	j->handle = calloc(jf->n_buf + 1, sizeof(*j->handle));
	j->stream = calloc(jf->n_stream + 1, sizeof(*j->stream));
	j->dma = calloc(jf->n_dma + 1, sizeof(*j->dma));
	if (!j->handle || !j->stream || !j->dma)
		return pccx__fail(d, PCCX_ERR_NOMEM, "out of memory");
	for (i = 0; i < jf->n_buf; i++) {
		rc = pccx__sim_backend_buf_alloc(b, jf->buf[i].size, jf->buf[i].access,
						 &j->handle[i], d);
		if (rc) {
			char why[sizeof(d->msg)];

			snprintf(why, sizeof(why), "%s", d ? d->msg : "");
			return pccx__fail(d, rc, "%s: buffer %u (handle %u): %s", name, i,
					  jf->buf[i].handle, why);
		}
	}
	for (i = 0; i < jf->n_stream; i++) {
		j->stream[i] = jf->stream[i];
		j->stream[i].handle = translate(j, jf->stream[i].handle);
	}
	for (i = 0; i < jf->n_dma; i++) {
		j->dma[i] = jf->dma[i];
		j->dma[i].handle = translate(j, jf->dma[i].handle);
	}
	j->view.insn = jf->insn;
	j->view.n_insn = jf->n_insn;
	j->view.dma = j->dma;
	j->view.n_dma = jf->n_dma;
	j->view.stream = j->stream;
	j->view.n_stream = jf->n_stream;
	return PCCX_OK;
}

uint8_t *pccx__simjob_buf(const struct pccx_simjob *j, uint32_t handle, uint64_t *size)
{
	uint32_t k;

	for (k = 0; k < j->jf->n_buf; k++)
		if (j->jf->buf[k].handle == handle)
			return pccx__sim_backend_buf_map(j->b, j->handle[k], size);
	return NULL;
}

void pccx__simjob_free(struct pccx_simjob *j)
{
	free(j->handle);
	free(j->stream);
	free(j->dma);
	memset(j, 0, sizeof(*j));
}
