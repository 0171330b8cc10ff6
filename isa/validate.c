// SPDX-License-Identifier: MIT
/*
 * The job validator. Everything a job names is checked before any of it
 * reaches a device: each word, each descriptor, and how they fit together.
 */
#include "pccx_job.h"
#include "pccx_regs.h"

#define DESC_ALIGN PCCX_BEAT_BYTES

void pccx__vlimits_default(struct pccx_vlimits *lim)
{
	lim->l2_words = PCCX_L2_WORDS;
	lim->max_insn = 1u << 20;
	lim->max_dma = 1u << 17;
	lim->max_stream = 1u << 16;
	lim->max_desc_bytes = (1ull << 32) - DESC_ALIGN;
	lim->features = ~0ull;
	lim->program_only = false;
}

static int reject(struct pccx_vresult *res, int err, enum pccx_vwhere where, uint32_t index,
		  int field, uint64_t expected, uint64_t actual)
{
	res->err = err;
	res->where = where;
	res->index = index;
	res->field = field;
	res->expected = expected;
	res->actual = actual;
	return err;
}

/* Common checks of a (handle, offset, length) triple. */
static int check_span(pccx_buf_lookup_fn lookup, void *ctx, const struct pccx_vlimits *lim,
		      uint32_t handle, uint64_t offset, uint64_t length, uint32_t need,
		      uint64_t *bufsize)
{
	uint64_t size = 0;
	uint32_t access = 0;

	*bufsize = 0;
	if (!lookup || lookup(ctx, handle, &size, &access))
		return PCCX_ISA_E_BUF_HANDLE;
	*bufsize = size;
	if (offset % DESC_ALIGN || length % DESC_ALIGN || length == 0)
		return PCCX_ISA_E_ALIGN;
	if (length > lim->max_desc_bytes) {
		*bufsize = lim->max_desc_bytes;   /* the detail reported is (limit, length) */
		return PCCX_ISA_E_JOB_LIMIT;
	}
	/* offset + length <= size, without computing a sum that could wrap */
	if (offset > size || length > size - offset)
		return PCCX_ISA_E_BUF_RANGE;
	if ((access & need) != need)
		return PCCX_ISA_E_BUF_ACCESS;
	return PCCX_ISA_E_OK;
}

int pccx__validate(const struct pccx_job_view *job, pccx_buf_lookup_fn lookup, void *ctx,
		   const struct pccx_vlimits *lim, uint8_t *used, struct pccx_vresult *res)
{
	struct pccx_vlimits deflim;
	struct pccx_shape_state st;
	uint64_t provided[PCCX_WSTREAM_PORTS] = { 0 };
	uint64_t consumed[PCCX_WSTREAM_PORTS] = { 0 };
	uint32_t i;
	unsigned p;
	int err;

	if (!lim) {
		pccx__vlimits_default(&deflim);
		lim = &deflim;
	}
	res->err = 0;
	res->where = PCCX_VW_JOB;
	res->index = 0;
	res->field = -1;
	res->expected = res->actual = 0;
	res->dma_bytes_in = res->dma_bytes_out = 0;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		res->port_bytes[p] = 0;

	if (!job->n_insn || !job->insn)
		return reject(res, PCCX_ISA_E_JOB_EMPTY, PCCX_VW_JOB, 0, -1, 0, 0);
	if (job->n_insn > lim->max_insn)
		return reject(res, PCCX_ISA_E_JOB_LIMIT, PCCX_VW_JOB, 0, -1, lim->max_insn,
			      job->n_insn);
	if (job->n_dma > lim->max_dma || job->n_dma > (1u << 17) || (job->n_dma && !job->dma))
		return reject(res, PCCX_ISA_E_JOB_LIMIT, PCCX_VW_DMA, 0, -1, lim->max_dma,
			      job->n_dma);
	if (job->n_stream > lim->max_stream || (job->n_stream && !job->stream))
		return reject(res, PCCX_ISA_E_JOB_LIMIT, PCCX_VW_STREAM, 0, -1, lim->max_stream,
			      job->n_stream);
	if (job->n_dma && !used && !lim->program_only)
		return reject(res, PCCX_ISA_E_JOB_LIMIT, PCCX_VW_DMA, 0, -1, 0, job->n_dma);
	for (i = 0; used && i < PCCX_DMA_BITMAP_BYTES(job->n_dma); i++)
		used[i] = 0;

	for (i = 0; i < job->n_dma; i++) {
		const struct pccx_dma_desc *d = &job->dma[i];
		uint32_t need;
		uint64_t size;

		if (d->flags != PCCX_DMA_TO_DEVICE && d->flags != PCCX_DMA_FROM_DEVICE)
			return reject(res, PCCX_ISA_E_DESC_FLAGS, PCCX_VW_DMA, i, -1, 0, d->flags);
		need = d->flags == PCCX_DMA_TO_DEVICE ? PCCX_BUF_DEV_READ : PCCX_BUF_DEV_WRITE;
		err = check_span(lookup, ctx, lim, d->handle, d->offset, d->length, need, &size);
		if (err)
			return reject(res, err, PCCX_VW_DMA, i, -1, size,
				      err == PCCX_ISA_E_JOB_LIMIT ? d->length : d->offset);
	}
	for (i = 0; i < job->n_stream; i++) {
		const struct pccx_stream_desc *s = &job->stream[i];
		uint64_t size;

		if (s->port >= PCCX_WSTREAM_PORTS)
			return reject(res, PCCX_ISA_E_STREAM_PORT, PCCX_VW_STREAM, i, -1,
				      PCCX_WSTREAM_PORTS, s->port);
		err = check_span(lookup, ctx, lim, s->handle, s->offset, s->length,
				 PCCX_BUF_DEV_READ, &size);
		if (err)
			return reject(res, err, PCCX_VW_STREAM, i, -1, size,
				      err == PCCX_ISA_E_JOB_LIMIT ? s->length : s->offset);
		provided[s->port] += s->length;   /* <= 2^16 * 2^32: no overflow */
	}

	pccx__shape_reset(&st);
	for (i = 0; i < job->n_insn; i++) {
		struct pccx_insn in;
		struct pccx_isa_fault f;
		struct pccx_effects fx;

		err = pccx__decode(job->insn[i], &in, &f);
		if (err)
			return reject(res, err, PCCX_VW_INSN, i, f.field, 0, job->insn[i]);
		/* extensions the device does not report are what upstream's would make of them */
		if (in.opcode == PCCX_OP_CVO && in.f[PCCX_FID_D_func] == PCCX_CVO_SMUL &&
		    !(lim->features & PCCX_FEAT_SMUL))
			return reject(res, PCCX_ISA_E_CVO_FUNC, PCCX_VW_INSN, i, PCCX_FID_D_func,
				      PCCX_FEAT_SMUL, lim->features);
		if (pccx__insn_racc(&in) && !(lim->features & PCCX_FEAT_RACC))
			return reject(res, PCCX_ISA_E_FLAGS, PCCX_VW_INSN, i, PCCX_FID_D_accm,
				      PCCX_FEAT_RACC, lim->features);
		if (in.opcode == PCCX_OP_GEMV && in.f[PCCX_FID_A_rowmask] &&
		    !(lim->features & PCCX_FEAT_ROWMASK))
			return reject(res, PCCX_ISA_E_FLAGS, PCCX_VW_INSN, i, PCCX_FID_A_rowmask,
				      PCCX_FEAT_ROWMASK, lim->features);
		err = pccx__insn_effects(&in, &st, lim->l2_words, &fx, &f);
		if (err)
			return reject(res, err, PCCX_VW_INSN, i, f.field, 0, job->insn[i]);
		if (fx.engine == PCCX_ENG_GEMV && fx.ws.fmt == PCCX_WFMT_Q4C &&
		    !(lim->features & PCCX_FEAT_COLSKIP))
			return reject(res, PCCX_ISA_E_SHAPE, PCCX_VW_INSN, i, PCCX_FID_A_wshape,
				      PCCX_FEAT_COLSKIP, lim->features);
		if (in.opcode == PCCX_OP_MEMSET)
			pccx__shape_apply(&st, &in);
		for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
			consumed[p] += fx.port_bytes[p];
		if (fx.dma >= 0 && !lim->program_only) {
			const struct pccx_dma_desc *d;

			if ((uint32_t)fx.dma >= job->n_dma)
				return reject(res, PCCX_ISA_E_DMA_INDEX, PCCX_VW_INSN, i,
					      PCCX_FID_B_desc, job->n_dma, (uint64_t)fx.dma);
			d = &job->dma[fx.dma];
			if (d->flags != fx.dma_flags)
				return reject(res, PCCX_ISA_E_DMA_DIR, PCCX_VW_INSN, i,
					      PCCX_FID_B_desc, fx.dma_flags, d->flags);
			if (d->length != fx.xfer_bytes)
				return reject(res, PCCX_ISA_E_DMA_LENGTH, PCCX_VW_INSN, i,
					      PCCX_FID_B_desc, fx.xfer_bytes, d->length);
			used[fx.dma / 8] |= (uint8_t)(1u << (fx.dma % 8));
			if (fx.dma_flags == PCCX_DMA_TO_DEVICE)
				res->dma_bytes_in += fx.xfer_bytes;
			else
				res->dma_bytes_out += fx.xfer_bytes;
		}
	}

	if (lim->program_only)
		return PCCX_ISA_E_OK;
	/* Every descriptor must be named by some MEMCPY: a stray one is a bug upstream. */
	for (i = 0; i < job->n_dma; i++)
		if (!(used[i / 8] & (1u << (i % 8))))
			return reject(res, PCCX_ISA_E_DMA_UNUSED, PCCX_VW_DMA, i, -1, 0, 0);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		if (provided[p] != consumed[p])
			return reject(res, PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, p, -1,
				      consumed[p], provided[p]);
		res->port_bytes[p] = consumed[p];
	}
	return PCCX_ISA_E_OK;
}
