/* SPDX-License-Identifier: MIT */
/*
 * Stage-by-stage verification: the reference executor's stage tensors of a step are captured,
 * then the device job of the same step runs with an observer on every retiring instruction;
 * when an instruction that ends a stage retires, the stage's L2 range is compared bit for bit
 * with the reference. The first difference names the stage, the token, the instruction index
 * and the element.
 */
#ifndef PCCX_VERIFY_H
#define PCCX_VERIFY_H

#include "backend_sim.h"
#include "compiler.h"
#include "exec_ref.h"

struct pccx_verify;

PCCX_MUST_CHECK int pccx__verify_create(struct pccx_verify **out, struct pccx_ref_exec *rx,
					pccx_diag *d);
void pccx__verify_free(struct pccx_verify *v);
/* A step of (token, pos) begins: forget the previous step's reference stages. */
void pccx__verify_begin_step(struct pccx_verify *v, uint32_t token, uint32_t pos);
/*
 * Run one of the step's jobs (compiled by c) on the simulator backend and compare each stage
 * as it completes with the reference's next ones (a step of a mixture-of-experts model is
 * several jobs). PCCX_ERR_MISMATCH with the first difference in d; otherwise the submit's
 * status.
 */
PCCX_MUST_CHECK int pccx__verify_device_job(struct pccx_verify *v, struct pccx_sim_backend *b,
					    const struct pccx_job_view *job,
					    const struct pccx_compiler *c,
					    const struct pccx_sim_backend_opts *opts,
					    struct pccx_sim_backend_result *res, pccx_diag *d);
/* The step's jobs are done: PCCX_ERR_MISMATCH unless they covered every reference stage. */
PCCX_MUST_CHECK int pccx__verify_end_step(struct pccx_verify *v, pccx_diag *d);

#endif
