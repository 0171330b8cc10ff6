// SPDX-License-Identifier: MIT
/*
 * The front end: decode of the FIFO head, the device-side legality checks, in-order issue of
 * at most one instruction per core cycle, the interlocks and retirement.
 *
 * An instruction issues when its engine is free and no instruction in flight conflicts with it:
 * read-after-write, write-after-read and write-after-write on the L2 ranges pccx__insn_effects()
 * computes, on S, and on shape entries. A sync MEMCPY/CVO (async = 0) stops issue until it
 * completes. Everything an instruction reads is therefore stable from its issue to its
 * completion, so an engine may read its operands at issue and write its results at completion.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

void pccx__sim_frontend_flush(struct pccx_sim *s)
{
	s->fifo_level = 0;
	s->head_decoded = false;
}

static bool overlap(struct pccx_l2_range a, struct pccx_l2_range b)
{
	return a.words && b.words && (uint64_t)a.base < (uint64_t)b.base + b.words &&
	       (uint64_t)b.base < (uint64_t)a.base + a.words;
}

/* Does op use shape entry `e` of `cache`? */
static bool uses_entry(const struct sim_op *op, int cache, int e)
{
	const struct pccx_insn *in = &op->in;

	switch (in->opcode) {
	case PCCX_OP_GEMV:
	case PCCX_OP_GEMM:
		return (cache == PCCX_CACHE_FMAP && (int)in->f[PCCX_FID_A_fshape] == e) ||
		       (cache == PCCX_CACHE_WEIGHT && (int)in->f[PCCX_FID_A_wshape] == e);
	case PCCX_OP_MEMCPY:
		return cache == PCCX_CACHE_FMAP && (int)in->f[PCCX_FID_B_fshape] == e;
	}
	return false;
}

static bool conflicts(const struct sim_op *h, const struct sim_op *o)
{
	const struct pccx_effects *a = &h->fx, *b = &o->fx;

	if (overlap(a->rd[0], b->wr) || overlap(a->rd[1], b->wr))
		return true;                       /* RAW */
	if (overlap(a->wr, b->rd[0]) || overlap(a->wr, b->rd[1]))
		return true;                       /* WAR */
	if (overlap(a->wr, b->wr))
		return true;                       /* WAW */
	if ((a->reads_s && b->writes_s) || (a->writes_s && (b->reads_s || b->writes_s)))
		return true;                       /* on S */
	if (h->in.opcode == PCCX_OP_MEMSET && uses_entry(o, a->shape_cache, a->shape_entry))
		return true;                       /* on a shape entry */
	return false;
}

static bool unit_busy(const struct pccx_sim *s, int unit)
{
	switch (unit) {
	case PCCX_SIM_U_GEMV:
		return s->gemv.busy;
	case PCCX_SIM_U_GEMM:
		return s->gemm.busy;
	case PCCX_SIM_U_DMA_IN:
		return s->dma_in.busy;
	case PCCX_SIM_U_DMA_OUT:
		return s->dma_out.busy;
	case PCCX_SIM_U_L2COPY:
		return s->l2copy.busy;
	case PCCX_SIM_U_SFU:
		return s->sfu.busy;
	}
	return false;
}

static enum sim_block blocked(const struct pccx_sim *s, const struct sim_op *h)
{
	unsigned i;

	if (s->fence)
		return SB_FENCE;
	for (i = 0; i < SIM_MAX_INFLIGHT; i++)
		if (s->ops[i].used && conflicts(h, &s->ops[i]))
			return SB_INTERLOCK;
	if (unit_busy(s, h->unit))
		return SB_ENGINE;
	return SB_NONE;
}

static struct sim_op *alloc_op(struct pccx_sim *s)
{
	unsigned i;

	for (i = 0; i < SIM_MAX_INFLIGHT; i++)
		if (!s->ops[i].used)
			return &s->ops[i];
	return NULL;
}

static void record_issue(struct pccx_sim *s, const struct sim_op *op)
{
	if (op->index >= s->cap_times) {
		uint32_t cap = s->cap_times ? 2 * s->cap_times : 1024;
		struct pccx_sim_insn_time *t;

		if (cap > (1u << 22))
			return;       /* past what a job may hold: stop recording */
		t = realloc(s->times, (size_t)cap * sizeof(*t));
		if (!t)
			return;
		s->times = t;
		s->cap_times = cap;
	}
	if (op->index >= s->n_times)
		s->n_times = op->index + 1;
	s->times[op->index].issue = op->issue_cycle;
	s->times[op->index].done = 0;
	s->times[op->index].unit = (uint8_t)op->unit;
}

static const char *mnemonic(const struct sim_op *op)
{
	const struct pccx_opcode_desc *od = pccx__opcode_desc(op->in.opcode);
	const struct pccx_cvo_desc *cd;

	if (op->in.opcode != PCCX_OP_CVO)
		return od ? od->mnemonic : "?";
	/* the trace names a CVO by its function, from the one instruction table */
	cd = pccx__cvo_desc(op->in.f[PCCX_FID_D_func]);
	return cd ? cd->name : "cvo";
}

void pccx__sim_retire(struct pccx_sim *s, struct sim_op *op)
{
	/* before anything later can run: the op's results are in L2 and nothing after it
	 * that conflicts with its ranges has started (the interlocks wait for this retire) */
	if (s->flip_armed && op->index >= s->flip_index && op->in.opcode == PCCX_OP_GEMV &&
	    op->fx.wr.words) {
		s->flip_armed = false;
		pccx__sim_l2_word(s, op->fx.wr.base)[0] ^= 1;
	}
	if (s->on_retire)
		s->on_retire(s->retire_user, op->index);
	s->retired++;
	s->st.retired++;
	s->st.unit_insns[op->unit]++;
	if (op->index < s->n_times && op->index < s->cap_times)
		s->times[op->index].done = s->core_cycle;
	if (op->in.opcode != PCCX_OP_MEMCPY)
		s->done_bit = true;
	if (op->sync)
		s->fence = false;
	pccx__sim_trace_event(s, pccx__sim_unit_name(op->unit), mnemonic(op), op->issue_cycle * s->core_ps,
			      (s->core_cycle + 1) * s->core_ps, op->index);
	op->used = false;
	s->n_inflight--;
	s->epoch++;
}

static int decode_head(struct pccx_sim *s)
{
	struct sim_op *h = &s->head;
	struct pccx_isa_fault f;
	uint64_t w = s->fifo[s->fifo_head];
	int err;

	memset(h, 0, sizeof(*h));
	h->word = w;
	err = pccx__decode(w, &h->in, &f);
	/* GEMV rowmask needs FEATURES.ROWMASK (pccx,rowmask) */
	if (!err && !s->cfg.rowmask && h->in.opcode == PCCX_OP_GEMV &&
	    h->in.f[PCCX_FID_A_rowmask])
		err = PCCX_ISA_E_FLAGS;
	/* the CVO smul needs FEATURES.SMUL (pccx,smul) */
	if (!err && !s->cfg.smul && h->in.opcode == PCCX_OP_CVO &&
	    h->in.f[PCCX_FID_D_func] == PCCX_CVO_SMUL)
		err = PCCX_ISA_E_CVO_FUNC;
	/* a SUM or SUMSQ from S needs FEATURES.RACC (pccx,racc) */
	if (!err && !s->cfg.racc && pccx__insn_racc(&h->in))
		err = PCCX_ISA_E_FLAGS;
	if (err) {
		pccx__sim_set_error(s, PCCX_CAUSE_ILLEGAL_INSN, (uint32_t)err, s->issued_job, w);
		return err;
	}
	err = pccx__insn_effects(&h->in, &s->shape, s->cfg.l2_words, &h->fx, &f);
	if (err) {
		pccx__sim_set_error(s, PCCX_CAUSE_BAD_OPERANDS, (uint32_t)err, s->issued_job, w);
		return err;
	}
	/* a GEMV on q4c weights needs FEATURES.COLSKIP (pccx,colskip): without it the format
	 * is one v002 does not have */
	if (!s->cfg.colskip && h->fx.engine == PCCX_ENG_GEMV && h->fx.ws.fmt == PCCX_WFMT_Q4C) {
		err = PCCX_ISA_E_SHAPE;
		pccx__sim_set_error(s, PCCX_CAUSE_ILLEGAL_INSN, (uint32_t)err, s->issued_job, w);
		return err;
	}
	h->unit = (int)h->fx.engine;    /* enum pccx_engine and enum pccx_sim_unit agree */
	if (h->in.opcode == PCCX_OP_MEMCPY)
		h->sync = !h->in.f[PCCX_FID_B_async];
	else if (h->in.opcode == PCCX_OP_CVO)
		h->sync = !h->in.f[PCCX_FID_D_async];
	s->head_decoded = true;
	return 0;
}

void pccx__sim_frontend_tick(struct pccx_sim *s)
{
	struct sim_op *op = NULL;
	enum sim_block b;

	if (s->halted)
		return;
	if (!s->fifo_level) {
		if (s->host_backlog)
			s->st.stall_mmio++;
		if (!pccx__sim_engines_idle(s) || pccx__sim_dm_busy(s))
			s->st.stall_fifo_empty++;
		return;
	}
	if (!s->head_decoded) {
		if (decode_head(s))
			return;
		s->epoch++;
	}
	if (s->inject_armed && s->issued_job == s->inject_index) {
		s->inject_armed = false;
		pccx__sim_set_error(s, s->inject_cause, 0, s->issued_job, s->head.word);
		return;
	}
	/* The answer changes only when something issues or retires. */
	if (s->blk_epoch != s->epoch + 1) {
		s->blk = blocked(s, &s->head);
		s->blk_epoch = s->epoch + 1;
	}
	b = (enum sim_block)s->blk;
	if (b == SB_NONE && !(op = alloc_op(s)))
		b = SB_ENGINE;
	switch (b) {
	case SB_FENCE:
		s->st.stall_fence++;
		return;
	case SB_INTERLOCK:
		s->st.stall_interlock++;
		return;
	case SB_ENGINE:
		s->st.stall_engine++;
		return;
	case SB_NONE:
		break;
	}

	*op = s->head;
	op->used = true;
	s->n_inflight++;
	s->epoch++;
	op->index = s->issued_job++;
	op->issue_cycle = s->core_cycle;
	s->fifo_head = (s->fifo_head + 1) % SIM_MAX_FIFO;
	s->fifo_level--;
	s->head_decoded = false;
	s->done_bit = false;
	s->st.issued++;
	record_issue(s, op);
	if (op->sync)
		s->fence = true;

	switch (op->unit) {
	case PCCX_SIM_U_GEMV:
		if (pccx__sim_matmul_start(s, &s->gemv, op))
			goto nomem;
		break;
	case PCCX_SIM_U_GEMM:
		if (pccx__sim_matmul_start(s, &s->gemm, op))
			goto nomem;
		break;
	case PCCX_SIM_U_DMA_IN:
	case PCCX_SIM_U_DMA_OUT:
		pccx__sim_dma_start(s, op);
		break;
	case PCCX_SIM_U_L2COPY:
	case PCCX_SIM_U_SFU:
		pccx__sim_timed_start(s, op);
		break;
	case PCCX_SIM_U_SHAPE:
		/* The shape RAM is written in the issue stage. */
		pccx__shape_apply(&s->shape, &op->in);
		pccx__sim_retire(s, op);
		break;
	}
	return;
nomem:
	/* The model could not allocate its buffers: report it as the device would a fault. */
	op->used = false;
	s->n_inflight--;
	s->epoch++;
	s->fence = false;
	pccx__sim_set_error(s, PCCX_CAUSE_BAD_OPERANDS, PCCX_ISA_E_JOB_LIMIT, op->index, op->word);
}

void pccx__sim_inject_error(pccx_sim *sim, uint32_t index, uint32_t cause)
{
	pccx__sim_sync(sim);
	sim->inject_armed = true;
	sim->inject_index = index;
	sim->inject_cause = cause;
}

void pccx__sim_inject_flip(pccx_sim *sim, uint32_t index)
{
	pccx__sim_sync(sim);
	sim->flip_armed = true;
	sim->flip_index = index;
}

void pccx__sim_on_retire(pccx_sim *sim, pccx_sim_retire_fn fn, void *user)
{
	pccx__sim_sync(sim);
	sim->on_retire = fn;
	sim->retire_user = user;
}
