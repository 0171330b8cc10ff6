// SPDX-License-Identifier: MIT
/*
 * The SFU (CVO) and the L2-to-L2 copy: units whose duration is known at issue.
 *
 * SFU timing: the L2 read latency, one element per core cycle (vector and reduction forms),
 * the function's pipeline latency, and one cycle for the last write; scalar forms and LDS
 * touch one word. A device with pccx,sfu-lanes = 2 or 4 (a hardware option; v002 has one
 * lane) does the element-wise forms that many elements a cycle; a reduction stays one a
 * cycle, since its FP32 sum is sequential in the contract (docs/numerics.md). Latencies follow the upstream pipeline depths where the RTL has them
 * (exp 4, sqrt 3, recip 4, scale 3, gelu 12, sin/cos 16 stages) and are estimates for the
 * FP32 extensions (docs/sim.md). L2 copy: one word per cycle after the read latency.
 *
 * Function: the numerics module's SFU entry points, at completion (the interlocks keep the
 * operands stable from issue on).
 */
#include <stdlib.h>
#include <string.h>

#include "cvo_sfu.h"
#include "kernels.h"
#include "pccx_num.h"
#include "sim_int.h"

static const uint8_t cvo_latency[16] = {
	[PCCX_CVO_EXP] = 4, [PCCX_CVO_SQRT] = 3, [PCCX_CVO_GELU] = 12, [PCCX_CVO_SIN] = 16,
	[PCCX_CVO_COS] = 16, [PCCX_CVO_SUM] = 4, [PCCX_CVO_SCALE] = 3, [PCCX_CVO_RECIP] = 4,
	[PCCX_CVO_MUL] = 3, [PCCX_CVO_ADD] = 4, [PCCX_CVO_TANH] = 12, [PCCX_CVO_MAX] = 2,
	[PCCX_CVO_SUMSQ] = 5, [PCCX_CVO_LDS] = 1, [PCCX_CVO_RSQRT] = 6,
	[PCCX_CVO_SMUL] = 6,	/* the SCALE multiplier, then the MUL one */
};

static uint64_t cvo_cycles(const struct pccx_sim *s, const struct pccx_insn *in)
{
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(in->f[PCCX_FID_D_func]);
	uint64_t lat = cvo_latency[in->f[PCCX_FID_D_func] & 15];

	if (!cd || cd->cls == PCCX_CVOC_LOAD)
		return s->cfg.l2_latency + 1;
	if (in->f[PCCX_FID_D_sreg])
		return s->cfg.l2_latency + lat + 1;
	if (cd->cls == PCCX_CVOC_REDUCE)
		return s->cfg.l2_latency + (uint64_t)in->f[PCCX_FID_D_len] + lat + 1;
	return s->cfg.l2_latency + ((uint64_t)in->f[PCCX_FID_D_len] + s->cfg.sfu_lanes - 1) /
	       s->cfg.sfu_lanes + lat + 1;
}

void pccx__sim_timed_start(struct pccx_sim *s, struct sim_op *op)
{
	struct sim_timed *t;
	uint64_t dur;

	if (op->unit == PCCX_SIM_U_SFU) {
		t = &s->sfu;
		dur = cvo_cycles(s, &op->in);
	} else {
		t = &s->l2copy;
		dur = s->cfg.l2_latency + op->fx.xfer_bytes / PCCX_BEAT_BYTES + 1;
	}
	t->op = op;
	t->busy = true;
	t->end = s->core_cycle + dur;
}

static float s_get(const struct pccx_sim *s)
{
	return pccx_f32_from_bits(s->s_bits);
}

/* Element j counted from word w, as bits. */
static uint32_t elem_bits(struct pccx_sim *s, uint32_t w, uint64_t j)
{
	float e[PCCX_L2_ELEMS_PER_WORD];

	pccx__sim_l2_get(s, (uint32_t)(w + j / PCCX_L2_ELEMS_PER_WORD), e, PCCX_L2_ELEMS_PER_WORD);
	return pccx_f32_bits(e[j % PCCX_L2_ELEMS_PER_WORD]);
}

static void sim_cvo_execute(struct pccx_sim *s, const struct pccx_insn *in)
{
	unsigned func = in->f[PCCX_FID_D_func] & 15;
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(func);
	uint32_t src = in->f[PCCX_FID_D_src], dst = in->f[PCCX_FID_D_dst];
	uint32_t n = in->f[PCCX_FID_D_len];
	bool sform = in->f[PCCX_FID_D_sreg] != 0;
	enum pccx_sfu_fn fn = (enum pccx_sfu_fn)pccx__cvo_sfu_fn(func);
	unsigned fl = pccx__cvo_sfu_flags(
		func, (in->f[PCCX_FID_D_sub_emax] ? PCCX_CVOF_SUB : 0) |
		      (in->f[PCCX_FID_D_relu] ? PCCX_CVOF_RELU : 0) |
		      (in->f[PCCX_FID_D_accm] ? PCCX_CVOF_ACCM : 0) |
		      (in->f[PCCX_FID_D_recip_scale] ? PCCX_CVOF_RECIP : 0));
	float S = s_get(s), r;

	if (!cd)
		return;

	if (cd->cls == PCCX_CVOC_LOAD) {
		/* a unit store like any other: a NaN from host data becomes the canonical one */
		s->s_bits = pccx_f32_bits(pccx_f32_canon(pccx_f32_from_bits(elem_bits(s, src, n))));
		pccx__sim_l2_put_f32(s, dst, s->s_bits);
		return;
	}
	if (sform) {
		if (cd->cls == PCCX_CVOC_UNARY)
			/* S = fn(pre(S)): the element pipeline with S as the input, RELU only. */
			r = pccx__sfu_elem(fn, fl & PCCX_SFU_F_RELU, S, S, 0.0f);
		else
			r = pccx__sfu_scalar(fn, fl & PCCX_SFU_F_RECIP, S,
					     pccx_f32_from_bits(elem_bits(s, src, 0)));
		s->s_bits = pccx_f32_bits(r);
		pccx__sim_l2_put_f32(s, dst, s->s_bits);
		return;
	}
	{
		float *a = malloc(((size_t)n + 1) * sizeof(float));
		float *b = malloc(((size_t)n + 1) * sizeof(float));

		if (!a || !b) {
			free(a);
			free(b);
			pccx__sim_set_error(s, PCCX_CAUSE_BAD_OPERANDS, PCCX_ISA_E_JOB_LIMIT,
					    s->issued_job, 0);
			return;
		}
		pccx__sim_l2_get(s, src, a, n);
		if (cd->cls == PCCX_CVOC_REDUCE) {
			s->s_bits = pccx_f32_bits(pccx__sfu_reduce(fn, fl, S, a, n));
			pccx__sim_l2_put_f32(s, dst, s->s_bits);
		} else {
			pccx__sim_l2_get(s, dst, b, n);
			/* the bits of pccx__sfu_vector, vectorised where the CPU allows */
			pccx__kern_sfu_vector(fn, fl, S, a, b, n);
			pccx__sim_l2_put(s, dst, b, n);
		}
		free(a);
		free(b);
	}
}

static void l2_copy(struct pccx_sim *s, const struct sim_op *op)
{
	memmove(pccx__sim_l2_word(s, op->in.f[PCCX_FID_B_dest]), pccx__sim_l2_word(s,
										   op->in.f[PCCX_FID_B_src]),
		(size_t)op->fx.xfer_bytes);
}

void pccx__sim_timed_core_tick(struct pccx_sim *s)
{
	if (s->sfu.busy && s->core_cycle >= s->sfu.end) {
		struct sim_op *op = s->sfu.op;

		s->sfu.busy = false;
		sim_cvo_execute(s, &op->in);
		pccx__sim_retire(s, op);
	}
	if (s->l2copy.busy && s->core_cycle >= s->l2copy.end) {
		struct sim_op *op = s->l2copy.op;

		s->l2copy.busy = false;
		l2_copy(s, op);
		pccx__sim_retire(s, op);
	}
}

void pccx__sim_timed_abort(struct pccx_sim *s)
{
	s->sfu.busy = false;
	s->l2copy.busy = false;
}
