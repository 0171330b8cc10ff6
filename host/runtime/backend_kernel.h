/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend: /dev/pccx (pccx.ko). The same interface as the in-process backend
 * (backend_sim.h): buffers by handle (here the driver's handles, memory mapped into this
 * process), a job validated and run to completion. The driver copies and validates the job
 * itself; a refusal comes back as PCCX_ERR_VALIDATE with the validator's report. Internal API
 * until libpccx's backend interface exists.
 */
#ifndef PCCX_BACKEND_KERNEL_H
#define PCCX_BACKEND_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "pccx/status.h"
#include "pccx_job.h"
#include "kernel_dev.h"

struct pccx_kernel_backend;

struct pccx_kernel_backend_opts {
	uint64_t timeout_ns;       /* no progress for this long: the driver kills the job (0: its limit) */
	uint64_t wait_ns;          /* give up waiting after this long (0: 10 minutes) */
};

struct pccx_kernel_backend_result {
	uint32_t status;           /* PCCX_JOB_* */
	struct pccx_submit submit; /* job id, or the validator's report */
	struct pccx_wait wait;     /* outcome, hardware error, timestamps */
	double host_seconds;       /* submit to completion, as this process saw it */
};

/* path NULL: /dev/pccx. PCCX_ERR_NOT_FOUND when the node is missing. */
PCCX_MUST_CHECK int pccx__kernel_backend_create(const char *path, struct pccx_kernel_backend **out,
						pccx_diag *d);
void pccx__kernel_backend_destroy(struct pccx_kernel_backend *b);
PCCX_MUST_CHECK int pccx__kernel_backend_info(struct pccx_kernel_backend *b,
					      struct pccx_info *info);

/* A zero-filled buffer; access is PCCX_BUF_DEV_READ and/or PCCX_BUF_DEV_WRITE. */
PCCX_MUST_CHECK int pccx__kernel_backend_buf_alloc(struct pccx_kernel_backend *b, uint64_t size,
						   uint32_t access,
						   uint32_t *handle, pccx_diag *d);
PCCX_MUST_CHECK int pccx__kernel_backend_buf_free(struct pccx_kernel_backend *b, uint32_t handle);
/* Host mapping and size of a buffer; NULL for an unknown handle. */
void *pccx__kernel_backend_buf_map(struct pccx_kernel_backend *b, uint32_t handle, uint64_t *size);

/*
 * Submit the job and wait for it. Returns 0, PCCX_ERR_VALIDATE (refused; diag names the
 * validator's error and where), PCCX_ERR_DEVICE (device or DataMover fault), PCCX_ERR_TIMEOUT
 * (the job hung and the driver reset the device), PCCX_ERR_BUSY (aborted by a reset, or too
 * many jobs), PCCX_ERR_NOMEM, PCCX_ERR_IO (anything else, with the errno in diag).
 */
PCCX_MUST_CHECK int pccx__kernel_backend_submit_wait(struct pccx_kernel_backend *b,
						     const struct pccx_job_view *job,
						     const struct pccx_kernel_backend_opts *opts,
						     struct pccx_kernel_backend_result *res, pccx_diag *d);


#endif /* PCCX_BACKEND_KERNEL_H */
