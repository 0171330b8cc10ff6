// SPDX-License-Identifier: MIT
/* Recording a step's ops and replaying them (op_record.h). */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "op_record.h"

static struct pccx_rec_op *push(void *ctx, enum pccx_rec_kind kind)
{
	struct pccx_rec *r = ctx;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 4096;
		struct pccx_rec_op *op = realloc(r->op, cap * sizeof(*op));

		if (!op)
			return NULL;
		r->op = op;
		r->cap = cap;
	}
	memset(&r->op[r->n], 0, sizeof(r->op[r->n]));
	r->op[r->n].kind = kind;
	return &r->op[r->n++];
}

static int rec_bind(void *ctx, uint32_t buf, void *base, uint64_t size, bool dev_write)
{
	(void)ctx, (void)buf, (void)base, (void)size, (void)dev_write;
	return PCCX_OK;
}

static int rec_begin(void *ctx, uint32_t pos)
{
	struct pccx_rec_op *op = push(ctx, PCCX_REC_BEGIN);

	if (!op)
		return PCCX_ERR_NOMEM;
	op->u.pos = pos;
	return PCCX_OK;
}

static int rec_end(void *ctx)
{
	return push(ctx, PCCX_REC_END) ? PCCX_OK : PCCX_ERR_NOMEM;
}

static int rec_matmul(void *ctx, const struct pccx_npu_matmul *mm)
{
	struct pccx_rec_op *op = push(ctx, PCCX_REC_MATMUL);

	if (!op)
		return PCCX_ERR_NOMEM;
	op->u.mm = *mm;
	return PCCX_OK;
}

static int rec_cvo(void *ctx, const struct pccx_npu_cvo *cvo)
{
	struct pccx_rec_op *op = push(ctx, PCCX_REC_CVO);

	if (!op)
		return PCCX_ERR_NOMEM;
	op->u.cvo = *cvo;
	return PCCX_OK;
}

static int rec_copy(void *ctx, uint32_t dst, uint32_t src, uint32_t words)
{
	struct pccx_rec_op *op = push(ctx, PCCX_REC_COPY);

	if (!op)
		return PCCX_ERR_NOMEM;
	op->u.copy.dst = dst;
	op->u.copy.src = src;
	op->u.copy.words = words;
	return PCCX_OK;
}

static int rec_mem(void *ctx, enum pccx_rec_kind kind, uint32_t l2, uint32_t buf, uint64_t off,
		   uint32_t n)
{
	struct pccx_rec_op *op = push(ctx, kind);

	if (!op)
		return PCCX_ERR_NOMEM;
	op->u.mem.l2 = l2;
	op->u.mem.buf = buf;
	op->u.mem.off = off;
	op->u.mem.n = n;
	return PCCX_OK;
}

static int rec_load(void *ctx, uint32_t dst, uint32_t buf, uint64_t offset, uint32_t n)
{
	return rec_mem(ctx, PCCX_REC_LOAD, dst, buf, offset, n);
}

static int rec_store(void *ctx, uint32_t buf, uint64_t offset, uint32_t src, uint32_t n)
{
	return rec_mem(ctx, PCCX_REC_STORE, src, buf, offset, n);
}

static int rec_stage(void *ctx, const char *name, uint32_t addr, uint32_t rows, uint32_t cols)
{
	struct pccx_rec_op *op;

	if (strlen(name) >= PCCX_REC_NAME_MAX)
		return PCCX_ERR_INTERNAL;
	op = push(ctx, PCCX_REC_STAGE);
	if (!op)
		return PCCX_ERR_NOMEM;
	op->u.stage.addr = addr;
	op->u.stage.rows = rows;
	op->u.stage.cols = cols;
	strcpy(op->u.stage.name, name);
	return PCCX_OK;
}

static const struct pccx_npu_ops rec_ops = {
	.name = "recorder",
	.bind = rec_bind,
	.begin = rec_begin,
	.end = rec_end,
	.matmul = rec_matmul,
	.cvo = rec_cvo,
	.copy = rec_copy,
	.load = rec_load,
	.store = rec_store,
	.stage = rec_stage,
};

const struct pccx_npu_ops *pccx__rec_ops(void)
{
	return &rec_ops;
}

void pccx__rec_clear(struct pccx_rec *r)
{
	r->n = 0;
}

void pccx__rec_free(struct pccx_rec *r)
{
	free(r->op);
	memset(r, 0, sizeof(*r));
}

int pccx__rec_replay(const struct pccx_rec_op *op, const struct pccx_npu_ops *o, void *ctx)
{
	switch (op->kind) {
	case PCCX_REC_BEGIN:
		return o->begin(ctx, op->u.pos);
	case PCCX_REC_END:
		return o->end(ctx);
	case PCCX_REC_MATMUL:
		return o->matmul(ctx, &op->u.mm);
	case PCCX_REC_CVO:
		return o->cvo(ctx, &op->u.cvo);
	case PCCX_REC_COPY:
		return o->copy(ctx, op->u.copy.dst, op->u.copy.src, op->u.copy.words);
	case PCCX_REC_LOAD:
		return o->load(ctx, op->u.mem.l2, op->u.mem.buf, op->u.mem.off, op->u.mem.n);
	case PCCX_REC_STORE:
		return o->store(ctx, op->u.mem.buf, op->u.mem.off, op->u.mem.l2, op->u.mem.n);
	case PCCX_REC_STAGE:
		return o->stage(ctx, op->u.stage.name, op->u.stage.addr, op->u.stage.rows,
				op->u.stage.cols);
	}
	return PCCX_ERR_INTERNAL;
}

bool pccx__rec_is_weight_matmul(const struct pccx_rec_op *op)
{
	return op->kind == PCCX_REC_MATMUL && op->u.mm.w.buf == PCCX_NPU_BUF_WEIGHTS &&
	       op->u.mm.fmt == PCCX_WFMT_Q4 && op->u.mm.m == 1 && !op->u.mm.findemax &&
	       !op->u.mm.rowmask;
}

bool pccx__rec_same_matmul(const struct pccx_npu_matmul *a, const struct pccx_npu_matmul *b)
{
	return a->dst == b->dst && a->src == b->src && a->n == b->n && a->k == b->k &&
	       a->m == b->m && a->fmt == b->fmt && a->accm == b->accm &&
	       a->findemax == b->findemax && a->rowmask == b->rowmask && a->w.buf == b->w.buf &&
	       a->w.offset == b->w.offset;
}

bool pccx__rec_cvo_effects(const struct pccx_npu_cvo *op, struct pccx_effects *fx)
{
	struct pccx_isa_fault f = { 0, -1 };
	struct pccx_shape_state st;
	struct pccx_insn in;

	pccx__shape_reset(&st);
	pccx__cvo_insn(&in, op->func, op->src, op->dst, op->len, op->flags);
	return pccx__insn_effects(&in, &st, PCCX_L2_WORDS, fx, &f) == PCCX_ISA_E_OK;
}

size_t pccx__rec_next_weight_matmul(const struct pccx_rec *r, size_t i)
{
	while (i < r->n && !pccx__rec_is_weight_matmul(&r->op[i]))
		i++;
	return i;
}

int pccx__rec_check_lockstep(const struct pccx_rec *rec, uint32_t rows, pccx_diag *d)
{
	uint32_t r;

	for (r = 1; r < rows; r++) {
		size_t i = pccx__rec_next_weight_matmul(&rec[0], 0);
		size_t j = pccx__rec_next_weight_matmul(&rec[r], 0);

		while (i < rec[0].n && j < rec[r].n &&
		       pccx__rec_same_matmul(&rec[0].op[i].u.mm, &rec[r].op[j].u.mm)) {
			i = pccx__rec_next_weight_matmul(&rec[0], i + 1);
			j = pccx__rec_next_weight_matmul(&rec[r], j + 1);
		}
		if (i != rec[0].n || j != rec[r].n)
			return pccx__fail(d, PCCX_ERR_INTERNAL,
					  "prompt batch: the steps of tokens 0 and %u differ in their "
					  "weight matmuls (op %zu / %zu)", r, i, j);
	}
	return PCCX_OK;
}
