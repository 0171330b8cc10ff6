/* SPDX-License-Identifier: MIT */
/*
 * When a device job's stages can be compared (verify.c): a stage is ready at the retire of its
 * last writer, or later, once every earlier instruction that writes its range has completed.
 * Instructions retire out of order across units (a GEMV may retire after the CVOs issued behind
 * it), so a stage whose last writer retired first waits for the others. The instruction that
 * is retiring counts as completed: its results are in L2 and nothing later that touches its
 * ranges has started (the interlocks wait for the retire).
 */
#ifndef PCCX_STAGE_TRACK_H
#define PCCX_STAGE_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "jobbuild.h"

/* Has instruction j of the running job completed? (Asked only for issued instructions.) */
typedef bool (*pccx_stage_done_fn)(void *user, uint32_t j);

struct pccx_stage_track {
	const struct pccx_job_builder_stage *st;
	const struct pccx_l2_range *wr;     /* per instruction: the L2 words it writes */
	uint32_t n;                         /* stages */
	uint32_t *by_insn;                  /* stages by last writer, then by stage */
	uint32_t *wait, n_wait;             /* last writer retired, an earlier one not (ascending) */
	uint32_t *merged;                   /* one retire's stages, then the ready ones */
	uint32_t low;                       /* every instruction before it has completed */
	uint32_t cap;
};

/* A job of n stages (st, last writers' indices into wr) starts. */
PCCX_MUST_CHECK int pccx__stage_track_begin(struct pccx_stage_track *t,
					    const struct pccx_job_builder_stage *st, uint32_t n,
					    const struct pccx_l2_range *wr, pccx_diag *d);
/*
 * Instruction `index` retires (done(user, index) may still say no). *ready points at the stages
 * that became ready, in ascending stage order, until the next call; returns how many. Each
 * stage is returned once, at the first retire at which it is ready.
 */
uint32_t pccx__stage_track_retire(struct pccx_stage_track *t, uint32_t index,
				  pccx_stage_done_fn done, void *user, const uint32_t **ready);
/* Stages whose last writer retired and that still wait. */
uint32_t pccx__stage_track_waiting(const struct pccx_stage_track *t);
void pccx__stage_track_free(struct pccx_stage_track *t);

#endif
