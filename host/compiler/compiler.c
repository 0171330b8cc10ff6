// SPDX-License-Identifier: MIT
#include <string.h>

#include "compiler.h"
#include "diag.h"

static int cfail(struct pccx_compiler *c, int status, const char *what)
{
	return pccx__fail(&c->err, status, "compiler: %s", what);
}

void pccx__compiler_init(struct pccx_compiler *c, pccx_compiler_bind_fn bind, void *user)
{
	memset(c, 0, sizeof(*c));
	pccx__job_builder_init(&c->jb);
	c->bind = bind;
	c->bind_user = user;
}

void pccx__compiler_on_end(struct pccx_compiler *c, pccx_compiler_end_fn fn, void *user)
{
	c->on_end = fn;
	c->end_user = user;
}

void pccx__compiler_free(struct pccx_compiler *c)
{
	pccx__job_builder_free(&c->jb);
}

static int op_bind(void *ctx, uint32_t buf, void *base, uint64_t size, bool dev_write)
{
	struct pccx_compiler *c = ctx;
	int rc;

	if (buf >= PCCX_NPU_NBUF)
		return pccx__fail(&c->err, PCCX_ERR_INVALID, "compiler: bind of unknown buffer %u",
				  buf);
	if (!c->bind)
		return cfail(c, PCCX_ERR_INVALID, "no backend to bind buffers");
	rc = c->bind(c->bind_user, buf, base, size, dev_write, &c->handle[buf]);
	if (rc)
		return pccx__fail(&c->err, rc, "compiler: the backend refused buffer %u (%llu bytes)",
				  buf, (unsigned long long)size);
	c->size[buf] = size;
	c->bound[buf] = true;
	return PCCX_OK;
}

static int op_begin(void *ctx, uint32_t pos)
{
	struct pccx_compiler *c = ctx;

	pccx__job_builder_reset(&c->jb);
	c->pos = pos;
	c->in_step = true;
	return PCCX_OK;
}

/* The sticky builder status, with its message copied to the compiler's. */
static int jb_status(struct pccx_compiler *c)
{
	if (c->jb.status)
		c->err = c->jb.diag;
	return c->jb.status;
}

static int op_end(void *ctx)
{
	struct pccx_compiler *c = ctx;
	int rc;

	c->in_step = false;
	rc = jb_status(c);
	if (!rc && c->on_end)
		rc = c->on_end(c->end_user, c);
	return rc;
}

static int need_buf(struct pccx_compiler *c, uint32_t buf)
{
	if (buf >= PCCX_NPU_NBUF || !c->bound[buf])
		return cfail(c, PCCX_ERR_INVALID, "op names an unbound host buffer");
	return PCCX_OK;
}

static int op_matmul(void *ctx, const struct pccx_npu_matmul *mm)
{
	struct pccx_compiler *c = ctx;
	struct pccx_job_builder_weights w;
	int rc = need_buf(c, mm->w.buf);

	if (rc)
		return rc;
	w.handle = c->handle[mm->w.buf];
	w.offset = mm->w.offset;
	w.n = mm->n;
	w.k = mm->k;
	w.fmt = mm->fmt;
	/* device-layout Q4 and Q4C always carry their scales */
	w.w_scale = mm->fmt == PCCX_WFMT_Q4 || mm->fmt == PCCX_WFMT_Q4C;
	w.rowmask = mm->rowmask;
	pccx__job_builder_matmul(&c->jb, mm->m > 1 ? PCCX_OP_GEMM : PCCX_OP_GEMV, mm->dst, mm->src, mm->m,
				 &w, mm->accm, mm->findemax);
	return jb_status(c);
}

static int op_cvo(void *ctx, const struct pccx_npu_cvo *op)
{
	struct pccx_compiler *c = ctx;

	pccx__job_builder_cvo(&c->jb, op->func, op->src, op->dst, op->len, op->flags);
	return jb_status(c);
}

static int op_copy(void *ctx, uint32_t dst, uint32_t src, uint32_t words)
{
	struct pccx_compiler *c = ctx;

	pccx__job_builder_copy(&c->jb, dst, src, words * PCCX_L2_ELEMS_PER_WORD);
	return jb_status(c);
}

static int op_load(void *ctx, uint32_t dst, uint32_t buf, uint64_t offset, uint32_t n_elems)
{
	struct pccx_compiler *c = ctx;
	int rc = need_buf(c, buf);

	if (rc)
		return rc;
	pccx__job_builder_load(&c->jb, dst, c->handle[buf], offset, n_elems);
	return jb_status(c);
}

static int op_store(void *ctx, uint32_t buf, uint64_t offset, uint32_t src, uint32_t n_elems)
{
	struct pccx_compiler *c = ctx;
	int rc = need_buf(c, buf);

	if (rc)
		return rc;
	pccx__job_builder_store(&c->jb, src, c->handle[buf], offset, n_elems);
	return jb_status(c);
}

static int op_stage(void *ctx, const char *name, uint32_t addr, uint32_t rows, uint32_t cols)
{
	struct pccx_compiler *c = ctx;

	pccx__job_builder_stage(&c->jb, name, addr, rows, cols);
	return jb_status(c);
}

static const char *op_error(void *ctx)
{
	struct pccx_compiler *c = ctx;

	return c->err.msg;
}

static const struct pccx_npu_ops compiler_ops = {
	.name = "compiler",
	.bind = op_bind,
	.begin = op_begin,
	.end = op_end,
	.matmul = op_matmul,
	.cvo = op_cvo,
	.copy = op_copy,
	.load = op_load,
	.store = op_store,
	.stage = op_stage,
	.error = op_error,
};

const struct pccx_npu_ops *pccx__compiler_ops(void)
{
	return &compiler_ops;
}

int pccx__compiler_job(struct pccx_compiler *c, struct pccx_job_view *job, pccx_diag *d)
{
	if (c->in_step)
		return pccx__fail(d, PCCX_ERR_INVALID, "compiler: the step has not ended");
	return pccx__job_builder_finish(&c->jb, job, d);
}
