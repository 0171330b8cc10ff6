// SPDX-License-Identifier: MIT
/* Weight-buffer pieces that no decode-step read crosses (gemma_pieces.h). */
#include <stdlib.h>

#include "diag.h"
#include "gemma_graph.h"
#include "gemma_pieces.h"
#include "npu_ops.h"

struct range {
	uint64_t lo, hi;
};

struct recorder {
	const struct pccx_gemma_model *m;
	struct range *r;
	size_t n, cap;
	int rc;
};

static void note(struct recorder *rec, uint64_t lo, uint64_t bytes)
{
	if (rec->rc || !bytes)
		return;
	if (rec->n == rec->cap) {
		size_t cap = rec->cap ? 2 * rec->cap : 256;
		struct range *nr = realloc(rec->r, cap * sizeof(*nr));

		if (!nr) {
			rec->rc = PCCX_ERR_NOMEM;
			return;
		}
		rec->r = nr;
		rec->cap = cap;
	}
	rec->r[rec->n++] = (struct range){ lo, lo + bytes };
}

static int rec_matmul(void *ctx, const struct pccx_npu_matmul *mm)
{
	struct recorder *rec = ctx;
	struct pccx_wshape ws = { mm->n, mm->k, mm->fmt,
				  mm->fmt == PCCX_WFMT_Q4 || mm->fmt == PCCX_WFMT_Q4C };

	/* the bytes its four ports' shares cover (a q4c copy is not a row of its tensor) */
	if (mm->w.buf == PCCX_NPU_BUF_WEIGHTS && mm->w.tensor >= 0)
		note(rec, mm->w.offset, pccx__wstream_port_offset(&ws, PCCX_WSTREAM_PORTS));
	return rec->rc;
}

static int rec_load(void *ctx, uint32_t dst, uint32_t buf, uint64_t offset, uint32_t n_elems)
{
	struct recorder *rec = ctx;

	(void)dst;
	if (buf == PCCX_NPU_BUF_WEIGHTS)
		note(rec, offset, (uint64_t)pccx_words_for(n_elems) * 16);
	return rec->rc;
}

static int rec_cvo(void *ctx, const struct pccx_npu_cvo *op)
{
	(void)ctx;
	(void)op;
	return 0;
}

static int rec_copy(void *ctx, uint32_t dst, uint32_t src, uint32_t words)
{
	(void)ctx;
	(void)dst;
	(void)src;
	(void)words;
	return 0;
}

static int rec_store(void *ctx, uint32_t buf, uint64_t offset, uint32_t src, uint32_t n_elems)
{
	(void)ctx;
	(void)buf;
	(void)offset;
	(void)src;
	(void)n_elems;
	return 0;
}

static const struct pccx_npu_ops recorder_ops = {
	.name = "weight-range recorder",
	.matmul = rec_matmul,
	.cvo = rec_cvo,
	.copy = rec_copy,
	.load = rec_load,
	.store = rec_store,
};

static int by_start(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int pccx__gemma_weight_pieces(const struct pccx_gemma_model *m, uint64_t limit,
				struct pccx_gemma_piece **out, size_t *n, pccx_diag *d)
{
	struct recorder rec = { .m = m };
	struct pccx_gemma_plan plan;
	struct pccx_gemma_piece *pc = NULL;
	size_t i, k = 0, np = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = pccx__gemma_plan_build(m, &plan, d);
	if (rc)
		return rc;
	/*
	 * Without host buffers the step names every expert of a mixture-of-experts layer. Twice:
	 * as a device without extensions runs it and with the sparse layers' q4c W_down, so that a
	 * session may take either.
	 */
	rc = pccx__gemma_step(m, &plan, &recorder_ops, &rec, 0, true, NULL);
	plan.rowmask = plan.colskip = true;
	if (!rc)
		rc = pccx__gemma_step(m, &plan, &recorder_ops, &rec, 0, true, NULL);
	if (rc) {
		free(rec.r);
		return pccx__fail(d, rc, "weight pieces: recording a decode step failed");
	}
	qsort(rec.r, rec.n, sizeof(*rec.r), by_start);
	/* ranges that overlap must share a piece: merge them */
	for (i = 0; i < rec.n; i++) {
		if (k && rec.r[i].lo < rec.r[k - 1].hi) {
			if (rec.r[i].hi > rec.r[k - 1].hi)
				rec.r[k - 1].hi = rec.r[i].hi;
		} else {
			rec.r[k++] = rec.r[i];
		}
	}
	pc = calloc(k ? k : 1, sizeof(*pc));
	if (!pc) {
		free(rec.r);
		return pccx__fail(d, PCCX_ERR_NOMEM, "weight pieces: out of memory");
	}
	/* greedy: a piece takes whole ranges while it stays within the limit */
	for (i = 0; i < k; i++) {
		uint64_t lo = rec.r[i].lo, hi = rec.r[i].hi;

		if (hi - lo > limit) {
			rc = pccx__fail(d, PCCX_ERR_RANGE,
					"weights: bytes 0x%llx..0x%llx are read by one instruction "
					"(%llu bytes), more than the device's largest buffer (%llu "
					"bytes)", (unsigned long long)lo, (unsigned long long)hi,
					(unsigned long long)(hi - lo), (unsigned long long)limit);
			free(pc);
			free(rec.r);
			return rc;
		}
		if (np && hi - pc[np - 1].offset <= limit)
			pc[np - 1].bytes = hi - pc[np - 1].offset;
		else
			pc[np++] = (struct pccx_gemma_piece){ lo, hi - lo };
	}
	free(rec.r);
	*out = pc;
	*n = np;
	return PCCX_OK;
}

int pccx__gemma_kv_pieces(const struct pccx_gemma_model *m, const struct pccx_gemma_plan *p,
			    uint64_t limit, struct pccx_gemma_piece **out, size_t *n,
			    pccx_diag *d)
{
	struct pccx_gemma_piece *pc = NULL;
	size_t np = 0, cap = 0;
	uint32_t l, h;
	unsigned v;

	*out = NULL;
	*n = 0;
	/* the blocks lie in layer, then K/V, then head order, back to back */
	for (l = 0; l < m->cfg.n_layers; l++) {
		if (!m->layers[l].kv_write)
			continue;
		for (v = 0; v < 2; v++) {
			for (h = 0; h < m->layers[l].n_kv_heads; h++) {
				uint64_t bytes, off = pccx__gemma_kv_block(m, p, l, h, v, &bytes);

				if (bytes > limit) {
					free(pc);
					return pccx__fail(d, PCCX_ERR_RANGE,
							  "KV cache: the %s rows of layer %u, kv head %u "
							  "(%llu bytes), more than the device's largest "
							  "buffer (%llu bytes)", v ? "V" : "K", l, h,
							  (unsigned long long)bytes,
							  (unsigned long long)limit);
				}
				if (np && pc[np - 1].offset + pc[np - 1].bytes == off &&
				    pc[np - 1].bytes + bytes <= limit) {
					pc[np - 1].bytes += bytes;
					continue;
				}
				if (np == cap) {
					size_t nc = cap ? 2 * cap : 16;
					void *q = realloc(pc, nc * sizeof(*pc));

					if (!q) {
						free(pc);
						return pccx__fail(d, PCCX_ERR_NOMEM,
								  "KV cache pieces: out of memory");
					}
					pc = q;
					cap = nc;
				}
				pc[np].offset = off;
				pc[np].bytes = bytes;
				np++;
			}
		}
	}
	*out = pc;
	*n = np;
	return PCCX_OK;
}
