// SPDX-License-Identifier: MIT
/* Descriptors of a buffer held in pieces, pointed at the pieces (wpieces.h). */
#include <stdlib.h>

#include "diag.h"
#include "wpieces.h"

/* The piece holding byte `off`, or n. */
static size_t piece_at(const struct pccx_wpiece *pc, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (pc[mid].offset <= off)
			lo = mid;
		else
			hi = mid;
	}
	return n && off >= pc[lo].offset && off - pc[lo].offset < pc[lo].bytes ? lo : n;
}

static int room(struct pccx_wpieces_out *o, uint32_t n_stream, pccx_diag *d)
{
	uint32_t cap;
	void *p;

	if (n_stream <= o->cap_stream)
		return PCCX_OK;
	cap = n_stream > 2 * o->cap_stream ? n_stream : 2 * o->cap_stream;
	p = realloc(o->stream, (size_t)cap * sizeof(*o->stream));
	if (!p)
		return pccx__fail(d, PCCX_ERR_NOMEM, "weight pieces: out of memory");
	o->stream = p;
	o->cap_stream = cap;
	return PCCX_OK;
}

static int dma_outside(pccx_diag *d, uint32_t i, const struct pccx_dma_desc *dd)
{
	return pccx__fail(d, PCCX_ERR_INVALID,
			  "DMA descriptor %u: bytes 0x%llx..0x%llx of the split weights are not in "
			  "one piece", i, (unsigned long long)dd->offset,
			  (unsigned long long)(dd->offset + dd->length));
}

static int stream_outside(pccx_diag *d, uint32_t i, const struct pccx_stream_desc *sd,
			  uint64_t at)
{
	return pccx__fail(d, PCCX_ERR_INVALID,
			  "stream descriptor %u: bytes 0x%llx..0x%llx of the split weights: byte "
			  "0x%llx is in no piece", i, (unsigned long long)sd->offset,
			  (unsigned long long)(sd->offset + sd->length), (unsigned long long)at);
}

int pccx__wpieces_rewrite(const struct pccx_wpiece *pc, size_t n, uint32_t whole,
			  const struct pccx_job_view *job, struct pccx_wpieces_out *o,
			  struct pccx_job_view *out, pccx_diag *d)
{
	uint32_t i, ns = 0;
	size_t k;
	int rc;

	if (job->n_dma > o->cap_dma) {
		void *p = realloc(o->dma, (size_t)job->n_dma * sizeof(*o->dma));

		if (!p)
			return pccx__fail(d, PCCX_ERR_NOMEM, "weight pieces: out of memory");
		o->dma = p;
		o->cap_dma = job->n_dma;
	}
	rc = room(o, job->n_stream, d);
	if (rc)
		return rc;
	for (i = 0; i < job->n_dma; i++) {
		const struct pccx_dma_desc *dd = &job->dma[i];

		o->dma[i] = *dd;
		if (dd->handle != whole)
			continue;
		k = piece_at(pc, n, dd->offset);
		if (k == n || dd->length > pc[k].bytes - (dd->offset - pc[k].offset))
			return dma_outside(d, i, dd);
		o->dma[i].handle = pc[k].handle;
		o->dma[i].offset = dd->offset - pc[k].offset;
	}
	for (i = 0; i < job->n_stream; i++) {
		struct pccx_stream_desc sd = job->stream[i];

		if (sd.handle != whole) {
			rc = room(o, ns + 1, d);
			if (rc)
				return rc;
			o->stream[ns++] = sd;
			continue;
		}
		while (sd.length) {
			uint64_t len;

			k = piece_at(pc, n, sd.offset);
			if (k == n)
				return stream_outside(d, i, &job->stream[i], sd.offset);
			len = pc[k].bytes - (sd.offset - pc[k].offset);
			if (len > sd.length)
				len = sd.length;
			rc = room(o, ns + 1, d);
			if (rc)
				return rc;
			o->stream[ns] = (struct pccx_stream_desc){ pc[k].handle, sd.port,
								   sd.offset - pc[k].offset, len };
			ns++;
			sd.offset += len;
			sd.length -= len;
		}
	}
	*out = *job;
	out->dma = o->dma;
	out->stream = o->stream;
	out->n_stream = ns;
	return PCCX_OK;
}

void pccx__wpieces_out_free(struct pccx_wpieces_out *o)
{
	free(o->dma);
	free(o->stream);
	o->dma = NULL;
	o->stream = NULL;
	o->cap_dma = o->cap_stream = 0;
}
