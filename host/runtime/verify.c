// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "pccx_num.h"
#include "stage_track.h"
#include "verify.h"

struct ref_stage {
	char name[48];
	uint32_t rows, cols;
	uint32_t *data;       /* rows * cols FP32 bit patterns, compacted */
	size_t cap;
};

struct pccx_verify {
	struct pccx_ref_exec *rx;
	struct ref_stage *st;
	uint32_t n_st, cap_st;
	uint32_t token, pos;
	uint32_t base;		/* reference stages the step's earlier jobs were compared with */
	int capture_status;
	/* during a device job */
	const struct pccx_job_builder *jb;
	pccx_sim *sim;
	uint32_t compared;
	struct pccx_stage_track track;  /* when the running job's stages may be compared */
	bool mismatch;
	char msg[480];
};

static int on_ref_stage(void *user, const char *name, const float *data, uint32_t rows,
			uint32_t cols, uint32_t stride)
{
	struct pccx_verify *v = user;
	struct ref_stage *s;
	size_t need = (size_t)rows * cols;
	uint32_t r;

	if (v->n_st == v->cap_st) {
		uint32_t cap = v->cap_st ? 2 * v->cap_st : 256;
		struct ref_stage *ns = realloc(v->st, cap * sizeof(*ns));

		if (!ns)
			return v->capture_status = PCCX_ERR_NOMEM;
		memset(ns + v->cap_st, 0, (cap - v->cap_st) * sizeof(*ns));
		v->st = ns;
		v->cap_st = cap;
	}
	s = &v->st[v->n_st];
	if (s->cap < need) {
		uint32_t *nd = realloc(s->data, need * sizeof(*nd));

		if (!nd)
			return v->capture_status = PCCX_ERR_NOMEM;
		s->data = nd;
		s->cap = need;
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->rows = rows;
	s->cols = cols;
	for (r = 0; r < rows; r++)
		memcpy(s->data + (size_t)r * cols, data + (size_t)r * stride,
		       cols * sizeof(*s->data));
	v->n_st++;
	return 0;
}

int pccx__verify_create(struct pccx_verify **out, struct pccx_ref_exec *rx, pccx_diag *d)
{
	struct pccx_verify *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (!v)
		return pccx__fail(d, PCCX_ERR_NOMEM, "verify: out of memory");
	v->rx = rx;
	pccx__ref_exec_on_stage(rx, on_ref_stage, v);
	*out = v;
	return PCCX_OK;
}

void pccx__verify_free(struct pccx_verify *v)
{
	uint32_t i;

	if (!v)
		return;
	pccx__ref_exec_on_stage(v->rx, NULL, NULL);
	for (i = 0; i < v->cap_st; i++)
		free(v->st[i].data);
	free(v->st);
	pccx__stage_track_free(&v->track);
	free(v);
}

void pccx__verify_begin_step(struct pccx_verify *v, uint32_t token, uint32_t pos)
{
	v->n_st = 0;
	v->base = 0;
	v->token = token;
	v->pos = pos;
	v->capture_status = 0;
}

static void compare_stage(struct pccx_verify *v, uint32_t k)
{
	const struct pccx_job_builder_stage *ds = &v->jb->stages[k];
	const uint8_t *l2 = pccx__sim_l2(v->sim);
	uint32_t stride = pccx_words_for(ds->cols) * PCCX_L2_ELEMS_PER_WORD;
	const struct ref_stage *rs;
	uint32_t r, c;

	if (v->base + k >= v->n_st) {
		snprintf(v->msg, sizeof(v->msg),
			 "stage %u '%s' (instruction %u) has no reference counterpart", v->base + k,
			 ds->name, ds->insn);
		v->mismatch = true;
		return;
	}
	rs = &v->st[v->base + k];
	if (strcmp(rs->name, ds->name) || rs->rows != ds->rows || rs->cols != ds->cols) {
		snprintf(v->msg, sizeof(v->msg),
			 "stage %u is '%s' (%ux%u) on the device but '%s' (%ux%u) in the reference",
			 k, ds->name, ds->rows, ds->cols, rs->name, rs->rows, rs->cols);
		v->mismatch = true;
		return;
	}
	for (r = 0; r < ds->rows; r++)
		for (c = 0; c < ds->cols; c++) {
			uint64_t e = (uint64_t)ds->word * PCCX_L2_ELEMS_PER_WORD +
				     (uint64_t)r * stride + c;
			const uint8_t *pe = l2 + 4 * e;
			uint32_t dev = (uint32_t)pe[0] | (uint32_t)pe[1] << 8 |
				       (uint32_t)pe[2] << 16 | (uint32_t)pe[3] << 24;
			uint32_t ref = rs->data[(size_t)r * rs->cols + c];

			if (dev != ref) {
				snprintf(v->msg, sizeof(v->msg),
					 "stage '%s' of token %u (position %u), instruction %u: "
					 "element %u (row %u, col %u) differs: device 0x%08x (%g), "
					 "reference 0x%08x (%g)",
					 ds->name, v->token, v->pos, ds->insn, r * ds->cols + c, r, c,
					 dev, (double)pccx_f32_from_bits(dev), ref,
					 (double)pccx_f32_from_bits(ref));
				v->mismatch = true;
				return;
			}
		}
}

static bool insn_done(void *user, uint32_t j)
{
	const struct pccx_sim_insn_time *t = pccx__sim_insn_time(user, j);

	return t && t->done;
}

/*
 * A stage is compared when it is ready (stage_track.h): at its last writer's retire, or at the
 * retire that completes the last earlier writer of its range. The stages one retire makes
 * ready are compared in stage order; the first difference stops the job's comparisons.
 */
static void on_retire(void *user, uint32_t index)
{
	struct pccx_verify *v = user;
	const uint32_t *ready;
	uint32_t n, i;

	if (v->mismatch)
		return;
	n = pccx__stage_track_retire(&v->track, index, insn_done, v->sim, &ready);
	for (i = 0; i < n && !v->mismatch; i++) {
		compare_stage(v, ready[i]);
		v->compared++;
	}
}

int pccx__verify_device_job(struct pccx_verify *v, struct pccx_sim_backend *b,
			    const struct pccx_job_view *job, const struct pccx_compiler *c,
			    const struct pccx_sim_backend_opts *opts, struct pccx_sim_backend_result *res,
			    pccx_diag *d)
{
	int rc;

	if (v->capture_status)
		return pccx__fail(d, v->capture_status, "verify: cannot keep the reference stages");
	v->jb = &c->jb;
	v->sim = pccx__sim_backend_sim(b);
	rc = pccx__stage_track_begin(&v->track, c->jb.stages, c->jb.n_stages, c->jb.wr, d);
	if (rc)
		return rc;
	v->compared = 0;
	v->mismatch = false;
	v->msg[0] = '\0';
	pccx__sim_on_retire(v->sim, on_retire, v);
	rc = pccx__sim_backend_submit_wait(b, job, opts, res, d);
	pccx__sim_on_retire(v->sim, NULL, NULL);
	if (v->mismatch)
		return pccx__fail(d, PCCX_ERR_MISMATCH, "verify: %s", v->msg);
	if (rc)
		return rc;
	if (v->compared != v->jb->n_stages || v->base + v->jb->n_stages > v->n_st)
		return pccx__fail(d, PCCX_ERR_MISMATCH,
				  "verify: token %u: %u of %u device stages compared, the reference "
				  "has %u after the step's %u earlier ones", v->token, v->compared,
				  v->jb->n_stages, v->n_st - v->base, v->base);
	v->base += v->jb->n_stages;
	return PCCX_OK;
}

int pccx__verify_end_step(struct pccx_verify *v, pccx_diag *d)
{
	if (v->base != v->n_st)
		return pccx__fail(d, PCCX_ERR_MISMATCH,
				  "verify: token %u: the device's jobs compared %u stages, the "
				  "reference has %u", v->token, v->base, v->n_st);
	return PCCX_OK;
}
