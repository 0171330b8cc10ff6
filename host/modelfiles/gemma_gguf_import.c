// SPDX-License-Identifier: MIT
/*
 * A GGUF's tensors into the device-layout model. The file is read with pread into a small
 * window per thread, never through the mapping, so its tensor data does not stay resident
 * beside the converted copy (peak RSS: the model plus the windows), and a file that cannot be
 * read or shrinks under the loader is an error, not a SIGBUS. Q4_0 rows, almost all of a
 * model, are split between threads: the load is mostly the kernel providing the model's fresh
 * pages at their first touch, work that threads on free cores share.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "gemma_gguf_import.h"
#include "gemma_st.h"
#include "ggml_types.h"
#include "gguf.h"
#include "modelfile_util.h"
#include "pool.h"
#include "q4_0_rows.h"

/* Bytes of the file one thread holds at a time: well within its share of L2. */
#define WINDOW ((size_t)256 << 10)
/* Threads at most: a load is bound by page faults and memory traffic, not by arithmetic. */
#define MAX_THREADS 4u

struct window {
	uint8_t *buf;
	size_t cap;
};

/* The decoded path's rows [first, first + count) of the current tensor, at p. */
struct cursor {
	uint64_t first, count, end, row_bytes;
	const uint8_t *p;
	char what[PCCX_GGUF_MAX_NAME + 64];
};

struct pccx_gguf_import {
	const pccx_gguf *g;
	struct pccx_pool *pool;	/* started for the first tensor worth it */
	unsigned n;		/* threads wanted, then started */
	bool tried;
	struct window w[MAX_THREADS];
	struct cursor cur;
};

int pccx__gguf_import_create(struct pccx_gguf_import **out, const pccx_gguf *g, pccx_diag *d)
{
	struct pccx_gguf_import *im = calloc(1, sizeof(*im));
	unsigned n = pccx__pool_ncpu();

	*out = NULL;
	if (!im)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx_gguf_name(g));
	im->g = g;
	im->n = n < MAX_THREADS ? n : MAX_THREADS;
	*out = im;
	return PCCX_OK;
}

void pccx__gguf_import_free(struct pccx_gguf_import *im)
{
	unsigned i;

	if (!im)
		return;
	pccx__pool_destroy(im->pool);
	for (i = 0; i < MAX_THREADS; i++)
		free(im->w[i].buf);
	free(im);
}

/* Windows 0..n-1 hold at least WINDOW bytes and one row of row_bytes. */
static int fit(struct pccx_gguf_import *im, unsigned n, uint64_t row_bytes, pccx_diag *d)
{
	size_t want = row_bytes > WINDOW ? (size_t)row_bytes : WINDOW;
	unsigned i;

	for (i = 0; i < n; i++) {
		uint8_t *b;

		if (im->w[i].cap >= want)
			continue;
		b = realloc(im->w[i].buf, want);
		if (!b)
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory",
					  pccx_gguf_name(im->g));
		im->w[i].buf = b;
		im->w[i].cap = want;
	}
	return PCCX_OK;
}

/* Bytes of one row of gt; its rows [base, base + rows) exist. */
static int row_span(const struct pccx_gguf_import *im, const pccx_gguf_tensor *gt,
		    uint64_t base, uint64_t rows, uint64_t *row_bytes, pccx_diag *d)
{
	uint64_t have = gt->n_elems / gt->ne[0];

	if (pccx_ggml_nbytes(gt->type, gt->ne[0], row_bytes))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': bad row size",
				  pccx_gguf_name(im->g), gt->name);
	if (base > have || rows > have - base)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: tensor '%s': rows [%llu, %llu) out of "
				  "range (%llu rows)", pccx_gguf_name(im->g), gt->name,
				  (unsigned long long)base, (unsigned long long)(base + rows),
				  (unsigned long long)have);
	return PCCX_OK;
}

/* ---- Q4_0: rows split between the threads ------------------------------------------------ */

struct q4_part {
	int rc;
	bool nonfinite;		/* rc is the refusal of block `block` of row `row` */
	uint64_t row;
	uint32_t block;
	pccx_diag d;		/* else the message of a failed read */
};

struct q4_job {
	struct pccx_gguf_import *im;
	const uint8_t *src;	/* the first row imported, in the file */
	uint8_t *dst;		/* its record */
	uint64_t rows, src_row, dst_row;
	uint32_t cols;
	struct q4_part part[MAX_THREADS];
};

/* The contiguous share of the rows of `part`, a window at a time; stops at a failure. */
static void q4_rows(void *ctx, unsigned part, unsigned nparts)
{
	struct q4_job *j = ctx;
	struct q4_part *res = &j->part[part];
	const struct window *w = &j->im->w[part];
	unsigned long long lo, hi, r, k, i, per = w->cap / j->src_row;
	const uint8_t *p;
	uint32_t b;

	pccx__pool_split(j->rows, 1, part, nparts, &lo, &hi);
	for (r = lo; r < hi; r += k) {
		k = hi - r < per ? hi - r : per;
		res->rc = pccx__gguf_read(j->im->g, j->src + r * j->src_row,
					  (size_t)(k * j->src_row), w->buf, &p, &res->d);
		if (res->rc)
			return;
		for (i = 0; i < k; i++) {
			b = pccx__q4_0_row_import(p + i * j->src_row, j->cols,
						  j->dst + (r + i) * j->dst_row);
			if (b < j->cols / 32) {
				res->rc = PCCX_ERR_RANGE;
				res->nonfinite = true;
				res->row = r + i;
				res->block = b;
				return;
			}
		}
	}
}

int pccx__gguf_import_q4_0(struct pccx_gguf_import *im, struct pccx_gemma_model *m, uint32_t t,
			   const pccx_gguf_tensor *gt, uint64_t base, const char *name,
			   pccx_q4_error *err, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	struct q4_job j = { .im = im, .rows = T->rows, .dst_row = T->row_bytes, .cols = T->cols };
	unsigned k;
	int rc;

	rc = row_span(im, gt, base, T->rows, &j.src_row, d);
	if (rc)
		return rc;
	/* a tensor of one window is not worth the threads (a small model starts none) */
	if (T->rows * j.src_row > WINDOW && !im->tried) {
		im->tried = true;
		/* when none can be started, the same bytes load on this thread */
		if (im->n > 1 && pccx__pool_create(&im->pool, im->n, NULL))
			im->n = 1;
	}
	rc = fit(im, im->n, j.src_row, d);
	if (rc)
		return rc;
	j.src = gt->data + base * j.src_row;
	j.dst = m->data + T->offset;
	pccx__gguf_will_read(im->g, j.src, T->rows * j.src_row);
	if (!im->pool || T->rows * j.src_row <= WINDOW)
		q4_rows(&j, 0, 1);
	else
		pccx__pool_run(im->pool, q4_rows, &j);
	for (k = 0; k < MAX_THREADS && !j.part[k].rc; k++)
		;
	if (k == MAX_THREADS) {
		if (err)
			err->n += (uint64_t)T->rows * T->cols;
		return PCCX_OK;
	}
	if (!j.part[k].nonfinite)
		return pccx__fail(d, j.part[k].rc, "%s", j.part[k].d.msg);
	{
		const uint8_t *rec = j.dst + j.part[k].row * j.dst_row + 2 * j.part[k].block;
		char what[sizeof(d->msg)];

		snprintf(what, sizeof(what), "%s: tensor '%s'", pccx_gguf_name(im->g), name);
		return pccx__q4_0_refuse(d, what, (int64_t)(base + j.part[k].row), j.part[k].block,
					 pccx_modelfile_le16(rec));
	}
}

/* ---- other types: rows decoded one at a time on this thread ------------------------------- */

/* pccx_gemma_row_src_fn: row `row` of `tensor` through window 0. */
static int window_row(const void *src, const void *tensor, uint64_t row, float *dst,
		      pccx_diag *d)
{
	struct pccx_gguf_import *im = *(struct pccx_gguf_import *const *)src;
	const pccx_gguf_tensor *gt = tensor;
	struct cursor *c = &im->cur;
	int rc;

	if (row < c->first || row >= c->first + c->count) {
		c->count = im->w[0].cap / c->row_bytes;
		if (c->count > c->end - row)
			c->count = c->end - row;
		c->first = row;
		rc = pccx__gguf_read(im->g, gt->data + row * c->row_bytes,
				     (size_t)(c->count * c->row_bytes), im->w[0].buf, &c->p, d);
		if (rc) {
			c->count = 0;
			return rc;
		}
	}
	return pccx_ggml_decode(gt->type, c->p + (row - c->first) * c->row_bytes,
				(size_t)c->row_bytes, dst, gt->ne[0], c->what, d);
}

int pccx__gguf_import_decoded(struct pccx_gguf_import *im, struct pccx_gemma_model *m,
			      uint32_t t, const pccx_gguf_tensor *gt, uint64_t base,
			      const char *name, float *row, pccx_q4_error *err,
			      uint64_t *clipped, pccx_diag *d)
{
	struct cursor *c = &im->cur;
	int rc;

	rc = row_span(im, gt, base, m->t[t].rows, &c->row_bytes, d);
	if (!rc)
		rc = fit(im, 1, c->row_bytes, d);
	if (rc)
		return rc;
	c->first = c->count = 0;
	c->end = base + m->t[t].rows;
	pccx__gguf_will_read(im->g, gt->data + base * c->row_bytes, m->t[t].rows * c->row_bytes);
	snprintf(c->what, sizeof(c->what), "%s: tensor '%s'", pccx_gguf_name(im->g), gt->name);
	return pccx__gemma_place_rows(m, t, window_row, &im, gt, base, row, err, clipped, name,
				      d);
}
