// SPDX-License-Identifier: MIT
/*
 * Prompts on the host in batches (batch_prefill.h): record each row's decode step, replay the
 * rows in lockstep, run each Q4 weight matmul once for the whole batch.
 *
 * Why recording works: a step's ops depend only on the model, the plan and the position,
 * never on values (models with experts, whose steps do, are refused), so recording a row's
 * program and running it later runs the same ops. Why lockstep gives token-by-token's bits:
 * rows share only the KV cache (each has its own L2, scalar register and inputs), and the
 * segments between two weight matmuls run row 0 first, so when row r reads layer l's keys,
 * rows before it have stored theirs, and no later row has. A batched matmul gives every row
 * what its own GEMV gives (kernels.h: outputs are independent, each its own FP32 chain).
 */
#include <stdlib.h>
#include <string.h>

#include "batch_prefill.h"
#include "diag.h"
#include "exec_ref.h"
#include "op_record.h"
#include "pccx_num.h"
#include "pool.h"

/* A token of the batch: its own executor, inputs, program and matmul scratch. */
struct row {
	struct pccx_ref_exec *x;
	uint8_t *in;			/* (plan.in_bytes) the row's BUF_IN */
	uint8_t *out;			/* (plan.out_bytes) the row's BUF_OUT (no logits: scratch) */
	size_t at;			/* replay cursor */
	int8_t *q8, *xp;		/* (max_k) the quantised matmul input, kernels.h */
	float *sx;			/* (max_k / 32) */
	int32_t *xsum;			/* (max_k / 32) */
	int rc;				/* of the row's last segment */
	pccx_diag err;
};

struct pccx_batch_prefill {
	struct pccx_gemma_session *s;
	uint32_t max_rows;
	uint32_t max_k, max_n;		/* the largest Q4 weight tensor's cols and rows */
	struct pccx_pool *pool;
	enum pccx_kern_impl impl;
	struct pccx_batch_prefill_stats st;
	struct row *row;		/* (max_rows) */
	struct pccx_rec *rec;		/* (max_rows) the rows' programs */
	struct pccx_kern_act *act;	/* (max_rows) the rows' matmul inputs, over their q8 .. */
	float *y;			/* (max_rows, max_n) the rows' matmul results */
	uint32_t rows;			/* of the batch being run */
	/* the session's plan as the rows' programs are recorded with (pccx__gemma_plan_for_rows) */
	struct pccx_gemma_plan plan;
};

/* ------------------------------------------------------------------------------------- */
/* Replay.                                                                                */

/* Run row r's ops up to its next batched matmul (left at its cursor) or its end. */
static void run_segment(struct pccx_batch_prefill *b, uint32_t r)
{
	const struct pccx_rec *rec = &b->rec[r];
	struct row *w = &b->row[r];

	w->rc = PCCX_OK;
	while (w->at < rec->n && !pccx__rec_is_weight_matmul(&rec->op[w->at])) {
		w->rc = pccx__rec_replay(&rec->op[w->at], pccx__ref_exec_ops(), w->x);
		if (w->rc) {
			pccx__fail(&w->err, w->rc, "batched prefill, row %u, op %zu: %s", r, w->at,
				   pccx__ref_exec_error(w->x));
			return;
		}
		w->at++;
	}
}

static void segment_part(void *ctx, unsigned part, unsigned nparts)
{
	struct pccx_batch_prefill *b = ctx;
	uint32_t r;

	for (r = part; r < b->rows; r += nparts)
		run_segment(b, r);
}

/* Whether the segment at row 0's cursor reads or writes the KV cache. */
static bool segment_uses_kv(const struct pccx_batch_prefill *b)
{
	const struct pccx_rec *rec = &b->rec[0];
	size_t i;

	for (i = b->row[0].at; i < rec->n && !pccx__rec_is_weight_matmul(&rec->op[i]); i++) {
		const struct pccx_rec_op *op = &rec->op[i];

		if ((op->kind == PCCX_REC_LOAD || op->kind == PCCX_REC_STORE) &&
		    op->u.mem.buf == PCCX_NPU_BUF_KV)
			return true;
		if (op->kind == PCCX_REC_MATMUL && op->u.mm.w.buf == PCCX_NPU_BUF_KV)
			return true;
	}
	return false;
}

/*
 * Every row's next segment. Rows share nothing but the KV cache, so segments that do not
 * touch it run on the pool's threads; one that does runs row after row, row 0 first, which
 * is the order token-by-token prefill writes and reads the cache in.
 */
static int run_segments(struct pccx_batch_prefill *b, pccx_diag *d)
{
	uint32_t r;

	if (segment_uses_kv(b)) {
		for (r = 0; r < b->rows; r++)
			run_segment(b, r);
	} else {
		pccx__pool_run(b->pool, segment_part, b);
	}
	for (r = 0; r < b->rows; r++)
		if (b->row[r].rc) {
			*d = b->row[r].err;
			return b->row[r].rc;
		}
	return PCCX_OK;
}

/* What exec_ref checks of a matmul before it reads memory, for the batched one. */
static int check_matmul(struct pccx_batch_prefill *b, const struct pccx_npu_matmul *mm,
			uint64_t rb, pccx_diag *d)
{
	const struct pccx_gemma_model *m = b->s->m;

	if (!mm->n || !mm->k || mm->k % PCCX_Q4_BLOCK || mm->k > b->max_k || mm->n > b->max_n ||
	    (uint64_t)mm->src + pccx_words_for(mm->k) > PCCX_L2_WORDS ||
	    (uint64_t)mm->dst + pccx_words_for(mm->n) > PCCX_L2_WORDS ||
	    mm->w.offset > m->device_size || (uint64_t)mm->n * rb > m->device_size - mm->w.offset)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "batched prefill: matmul (n %u, k %u, src %u, dst %u, weights at "
				  "%llu) outside L2, the weights or the kernel's sizes", mm->n, mm->k,
				  mm->src, mm->dst, (unsigned long long)mm->w.offset);
	return PCCX_OK;
}

/* The batched matmul: the weights once, every row its own input and output. */
/* The batched matmul's rows, split across the pool's parts (rows are independent). */
struct batch_rows {
	struct pccx_batch_prefill *b;
	const struct pccx_npu_matmul *mm;
	uint32_t rows;
};

static void quantize_part(void *ctx, unsigned part, unsigned nparts)
{
	const struct batch_rows *j = ctx;
	struct pccx_batch_prefill *b = j->b;
	uint32_t r;

	for (r = part; r < j->rows; r += nparts) {
		struct row *rw = &b->row[r];
		const float *xin = pccx__ref_exec_l2(rw->x) + (size_t)j->mm->src * 4;

		b->act[r] = (struct pccx_kern_act){ j->mm->k, rw->q8, rw->sx, rw->xp, rw->xsum };
		pccx__kern_q8_quantize(xin, j->mm->k, rw->q8, rw->sx);
		pccx__kern_act_prepare(&b->act[r]);
	}
}

static void store_part(void *ctx, unsigned part, unsigned nparts)
{
	const struct batch_rows *j = ctx;
	struct pccx_batch_prefill *b = j->b;
	uint32_t r;

	for (r = part; r < j->rows; r += nparts)
		pccx__kern_out_store(b->y + (size_t)r * b->max_n,
				     pccx__ref_exec_l2(b->row[r].x) + (size_t)j->mm->dst * 4,
				     j->mm->n, j->mm->accm);
}

/* The batched matmul: the weights once, every row its own input and output. */
static int run_batched(struct pccx_batch_prefill *b, const struct pccx_npu_matmul *mm,
		       uint32_t rows, pccx_diag *d)
{
	struct pccx_wshape ws = { mm->n, mm->k, mm->fmt, true };
	uint64_t rb = pccx__wstream_row_bytes(&ws);
	struct batch_rows j = { b, mm, rows };
	uint32_t r;
	int rc;

	rc = check_matmul(b, mm, rb, d);
	if (rc)
		return rc;
	pccx__pool_run(b->pool, quantize_part, &j);
	pccx__kern_q4_gemm(b->pool, b->impl, b->s->m->data + mm->w.offset, rb, mm->n, b->act, rows,
			   b->y, b->max_n);
	pccx__pool_run(b->pool, store_part, &j);
	for (r = 0; r < rows; r++)
		b->row[r].at++;
	b->st.weight_bytes += (uint64_t)mm->n * rb;
	b->st.batched_matmuls++;
	return PCCX_OK;
}

static int replay(struct pccx_batch_prefill *b, uint32_t rows, pccx_diag *d)
{
	uint32_t r;
	int rc;

	b->rows = rows;
	for (r = 0; r < rows; r++)
		b->row[r].at = 0;
	for (;;) {
		rc = run_segments(b, d);
		if (rc)
			return rc;
		if (b->row[0].at == b->rec[0].n)
			return PCCX_OK;
		rc = run_batched(b, &b->rec[0].op[b->row[0].at].u.mm, rows, d);
		if (rc)
			return rc;
	}
}

/* One batch: tokens at positions pos .. pos + rows - 1. */
static int run_batch(struct pccx_batch_prefill *b, const uint32_t *tokens, uint32_t rows,
		     uint32_t pos, pccx_diag *d)
{
	struct pccx_gemma_session *s = b->s;
	uint32_t r;
	int rc;

	b->plan = s->plan;
	pccx__gemma_plan_for_rows(&b->plan);
	for (r = 0; r < rows; r++) {
		rc = pccx__gemma_host_inputs(s->m, &b->plan, tokens[r], pos + r, b->row[r].in, d);
		if (rc)
			return rc;
		pccx__rec_clear(&b->rec[r]);
		rc = pccx__gemma_step(s->m, &b->plan, pccx__rec_ops(), &b->rec[r], pos + r, false,
				      NULL);
		if (rc)
			return pccx__fail(d, rc, "batched prefill: recording position %u: %s",
					  pos + r, pccx_strerror(rc));
	}
	rc = pccx__rec_check_lockstep(b->rec, rows, d);
	return rc ? rc : replay(b, rows, d);
}

int pccx__batch_prefill_run(struct pccx_batch_prefill *b, const uint32_t *tokens, uint32_t n,
			    pccx_diag *d)
{
	struct pccx_gemma_session *s = b->s;
	uint32_t done, rows;
	int rc;

	if (n > s->m->cfg.max_ctx - s->pos)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "context full: %u positions (max_ctx), %u used, %u to prefill",
				  s->m->cfg.max_ctx, s->pos, n);
	for (done = 0; done < n; done += rows) {
		rows = n - done < b->max_rows ? n - done : b->max_rows;
		rc = run_batch(b, tokens + done, rows, s->pos + done, d);
		if (rc)
			return rc;
	}
	s->pos += n;
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Set-up.                                                                                */

/* The largest Q4 weight tensor (cols, rows): what a batched matmul may need. */
static void q4_extent(const struct pccx_gemma_model *m, uint32_t *k, uint32_t *n)
{
	uint32_t t;

	*k = *n = 0;
	for (t = 0; t < m->n_t; t++) {
		if (m->t[t].fmt != PCCX_WFMT_Q4)
			continue;
		*k = *k > m->t[t].cols ? *k : m->t[t].cols;
		*n = *n > m->t[t].rows ? *n : m->t[t].rows;
	}
}

static bool has_experts(const struct pccx_gemma_model *m)
{
	uint32_t l;

	for (l = 0; l < m->cfg.n_layers; l++)
		if (m->layers[l].n_experts)
			return true;
	return false;
}

static int alloc_row(struct pccx_batch_prefill *b, uint32_t r, pccx_diag *d)
{
	struct pccx_gemma_session *s = b->s;
	const struct pccx_npu_ops *o = pccx__ref_exec_ops();
	struct row *w = &b->row[r];
	int rc;

	rc = pccx__ref_exec_create(&w->x, 1, b->impl, d);
	if (rc)
		return rc;
	w->in = calloc(1, s->plan.in_bytes);
	w->out = calloc(1, s->plan.out_bytes);
	w->q8 = malloc(b->max_k);
	w->xp = malloc(b->max_k);
	w->sx = malloc((size_t)b->max_k / PCCX_Q4_BLOCK * sizeof(float));
	w->xsum = malloc((size_t)b->max_k / PCCX_Q4_BLOCK * sizeof(int32_t));
	if (!w->in || !w->out || !w->q8 || !w->xp || !w->sx || !w->xsum)
		return pccx__fail(d, PCCX_ERR_NOMEM, "batched prefill: out of memory (row %u)", r);
	rc = o->bind(w->x, PCCX_NPU_BUF_WEIGHTS, s->m->data, s->m->device_size, false);
	if (!rc)
		rc = o->bind(w->x, PCCX_NPU_BUF_KV, s->kv, s->plan.kv_bytes, true);
	if (!rc)
		rc = o->bind(w->x, PCCX_NPU_BUF_IN, w->in, s->plan.in_bytes, false);
	if (!rc)
		rc = o->bind(w->x, PCCX_NPU_BUF_OUT, w->out, s->plan.out_bytes, true);
	if (rc)
		return pccx__fail(d, rc, "batched prefill: binding row %u: %s", r,
				  pccx__ref_exec_error(w->x));
	return PCCX_OK;
}

int pccx__batch_prefill_create(struct pccx_batch_prefill **out, struct pccx_gemma_session *s,
			       uint32_t max_rows, unsigned n_threads, enum pccx_kern_impl impl,
			       pccx_diag *d)
{
	struct pccx_batch_prefill *b;
	uint32_t r;
	int rc;

	*out = NULL;
	if (!max_rows || max_rows > PCCX_BATCH_MAX_ROWS)
		return pccx__fail(d, PCCX_ERR_INVALID, "batched prefill: %u rows per batch (1..%u)",
				  max_rows, PCCX_BATCH_MAX_ROWS);
	if (has_experts(s->m))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "batched prefill: config '%s' has experts, chosen between the "
				  "jobs of a step (prefill it token by token)", s->m->cfg.name);
	if (!pccx__kern_supported(impl))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "batched prefill: kernel '%s' does not "
				  "run on this CPU", pccx__kern_name(impl));
	b = calloc(1, sizeof(*b));
	if (!b)
		return pccx__fail(d, PCCX_ERR_NOMEM, "batched prefill: out of memory");
	b->s = s;
	b->max_rows = max_rows;
	b->impl = impl;
	q4_extent(s->m, &b->max_k, &b->max_n);
	/* a matmul's n is a 16-bit field: the LM head is issued in pieces */
	b->max_n = b->max_n < UINT16_MAX ? b->max_n : UINT16_MAX;
	b->row = calloc(max_rows, sizeof(*b->row));
	b->rec = calloc(max_rows, sizeof(*b->rec));
	b->act = calloc(max_rows, sizeof(*b->act));
	b->y = malloc((size_t)max_rows * b->max_n * sizeof(float));
	if (!b->row || !b->rec || !b->act || !b->y) {
		pccx__batch_prefill_free(b);
		return pccx__fail(d, PCCX_ERR_NOMEM, "batched prefill: out of memory");
	}
	rc = pccx__pool_create(&b->pool, n_threads ? n_threads : pccx__pool_ncpu(), d);
	for (r = 0; !rc && r < max_rows; r++)
		rc = alloc_row(b, r, d);
	if (rc) {
		pccx__batch_prefill_free(b);
		return rc;
	}
	*out = b;
	return PCCX_OK;
}

void pccx__batch_prefill_free(struct pccx_batch_prefill *b)
{
	uint32_t r;

	if (!b)
		return;
	for (r = 0; b->row && b->rec && r < b->max_rows; r++) {
		struct row *w = &b->row[r];

		pccx__ref_exec_free(w->x);
		free(w->in);
		free(w->out);
		pccx__rec_free(&b->rec[r]);
		free(w->q8);
		free(w->xp);
		free(w->sx);
		free(w->xsum);
	}
	free(b->row);
	free(b->rec);
	free(b->act);
	free(b->y);
	pccx__pool_destroy(b->pool);
	free(b);
}

void pccx__batch_prefill_stats(const struct pccx_batch_prefill *b,
			       struct pccx_batch_prefill_stats *st)
{
	*st = b->st;
}
