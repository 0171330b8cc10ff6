/* SPDX-License-Identifier: MIT */
/*
 * The in-process backend: a simulator instance, host buffers it owns (anonymous mappings,
 * opened to the device as DMA windows at device addresses it assigns, with an unmapped guard
 * page between buffers) and the command engine that feeds a job to it. Internal API until
 * libpccx's backend interface exists.
 */
#ifndef PCCX_BACKEND_SIM_H
#define PCCX_BACKEND_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "pccx/status.h"
#include "pccx_engine.h"
#include "pccx_job.h"
#include "pccx_sim.h"

struct pccx_sim_backend;

struct pccx_sim_backend_opts {
	uint64_t timeout_cycles;   /* no progress for this many core cycles: timeout (0: 2^27) */
	uint64_t poll_cycles;      /* device time between polls when a step changed nothing (64) */
	bool no_validate;          /* feed the job without pccx__validate (tests of device errors) */
	bool keep_stats;           /* do not reset the simulator's statistics at submit */
	/*
	 * A slow host: after register access number n of the job (counted from 0) with
	 * n % stall_every == stall_phase, the device runs alone for stall_cycles core cycles, as
	 * when the feeding thread is preempted there. 0: never. The results must not change.
	 */
	uint64_t stall_every, stall_phase, stall_cycles;
};

struct pccx_sim_backend_result {
	int state;                 /* enum pccx_engine_state at the end */
	struct pccx_engine_error err;
	bool timed_out;
	uint64_t cycles;           /* simulated core cycles from submit to completion */
	uint64_t steps, mmio;      /* engine steps and register accesses */
	double host_seconds;       /* wall-clock time of the submit */
	double cpu_seconds;        /* CPU time of the calling thread during it */
	struct pccx_sim_stats stats;
};

/* cfg NULL: the KV260 defaults. */
PCCX_MUST_CHECK int pccx__sim_backend_create(const struct pccx_sim_config *cfg,
					     struct pccx_sim_backend **out,
					     pccx_diag *d);
void pccx__sim_backend_destroy(struct pccx_sim_backend *b);
pccx_sim *pccx__sim_backend_sim(struct pccx_sim_backend *b);

/*
 * A zero-filled buffer; access is PCCX_BUF_DEV_READ and/or PCCX_BUF_DEV_WRITE. Its pages take
 * memory only once touched (by the device, or through pccx__sim_backend_buf_map).
 */
PCCX_MUST_CHECK int pccx__sim_backend_buf_alloc(struct pccx_sim_backend *b, uint64_t size,
						uint32_t access,
						uint32_t *handle, pccx_diag *d);
/*
 * Open caller memory (size bytes, kept alive by the caller until freed here) to the device as
 * a buffer: the device reads and writes it in place, nothing is copied.
 */
PCCX_MUST_CHECK int pccx__sim_backend_buf_import(struct pccx_sim_backend *b, void *host,
						 uint64_t size,
						 uint32_t access, uint32_t *handle, pccx_diag *d);
PCCX_MUST_CHECK int pccx__sim_backend_buf_free(struct pccx_sim_backend *b, uint32_t handle);
/* Host pointer and size of a buffer; NULL for an unknown handle. */
void *pccx__sim_backend_buf_map(struct pccx_sim_backend *b, uint32_t handle, uint64_t *size);
/* Device address of a buffer (0 for an unknown handle). */
uint64_t pccx__sim_backend_buf_devaddr(const struct pccx_sim_backend *b, uint32_t handle);

/*
 * Validate the job (unless opts->no_validate), feed it through the command engine to the
 * simulator and run until it completes, fails or stops making progress. On a device error or
 * a timeout the device is reset (RESET) so the next job starts clean. Returns 0,
 * PCCX_ERR_VALIDATE, PCCX_ERR_DEVICE (device or DataMover error; diag names the cause and
 * instruction), PCCX_ERR_TIMEOUT; res (may be NULL) receives the figures either way.
 */
PCCX_MUST_CHECK int pccx__sim_backend_submit_wait(struct pccx_sim_backend *b,
						  const struct pccx_job_view *job,
						  const struct pccx_sim_backend_opts *opts,
						  struct pccx_sim_backend_result *res, pccx_diag *d);

/* Soft-reset the device and wait for the reset to finish. */
void pccx__sim_backend_reset(struct pccx_sim_backend *b);

#endif /* PCCX_BACKEND_SIM_H */
