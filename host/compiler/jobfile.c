// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "jobfile.h"
#include "pccx_asm.h"

#define HDR_BYTES 32u
#define DESC_BYTES 24u
#define BUF_BYTES 16u

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

void pccx__jobfile_free(struct pccx_jobfile *jf)
{
	free(jf->insn);
	free(jf->dma);
	free(jf->stream);
	free(jf->buf);
	memset(jf, 0, sizeof(*jf));
}

int pccx__buf_decl_check(uint64_t size, uint32_t access, char *why, size_t why_size)
{
	const uint32_t defined = PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE;

	if (access & ~defined) {
		snprintf(why, why_size,
			 "access 0x%" PRIx32 " has undefined bits 0x%" PRIx32
			 " (defined: 0x1 device-read, 0x2 device-write)", access, access & ~defined);
		return PCCX_ERR_FORMAT;
	}
	if (!access) {
		snprintf(why, why_size, "access 0 grants the device neither read nor write");
		return PCCX_ERR_FORMAT;
	}
	if (!size) {
		snprintf(why, why_size, "size 0");
		return PCCX_ERR_FORMAT;
	}
	if (size > PCCX_BUF_MAX_BYTES) {
		snprintf(why, why_size, "size %" PRIu64 " is more than the limit of %llu bytes",
			 size, PCCX_BUF_MAX_BYTES);
		return PCCX_ERR_RANGE;
	}
	return PCCX_OK;
}

static void *alloc_n(size_t n, size_t each)
{
	return calloc(n ? n : 1, each);
}

int pccx__jobfile_parse(const uint8_t *data, size_t len, const char *name, struct pccx_jobfile *jf,
			pccx_diag *d)
{
	struct pccx_vlimits lim;
	uint64_t need;
	const uint8_t *p;
	uint32_t i, version;

	memset(jf, 0, sizeof(*jf));
	pccx__vlimits_default(&lim);
	if (len < 8 || memcmp(data, PCCX_JOBFILE_MAGIC, 8) != 0) {
		/* bare program: little-endian 64-bit words */
		if (len == 0)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: empty program", name);
		if (len % 8)
			return pccx__fail(d, PCCX_ERR_FORMAT,
					  "%s: %zu bytes is not a whole number of 64-bit words",
					  name, len);
		if (len / 8 > lim.max_insn)
			return pccx__fail(d, PCCX_ERR_RANGE, "%s: %zu words, more than %u", name,
					  len / 8, lim.max_insn);
		jf->n_insn = (uint32_t)(len / 8);
		jf->insn = alloc_n(jf->n_insn, sizeof(uint64_t));
		if (!jf->insn)
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
		for (i = 0; i < jf->n_insn; i++)
			jf->insn[i] = rd64(data + 8 * (size_t)i);
		jf->is_program = 1;
		return PCCX_OK;
	}
	if (len < HDR_BYTES)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: truncated job header (%zu bytes)", name,
				  len);
	version = rd32(data + 8);
	if (version != PCCX_JOBFILE_VERSION)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: job file version %u (expected %u)",
				  name, version, PCCX_JOBFILE_VERSION);
	jf->n_insn = rd32(data + 12);
	jf->n_dma = rd32(data + 16);
	jf->n_stream = rd32(data + 20);
	jf->n_buf = rd32(data + 24);
	if (rd32(data + 28))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: reserved header word is not zero", name);
	if (jf->n_insn > lim.max_insn || jf->n_dma > lim.max_dma ||
	    jf->n_stream > lim.max_stream || jf->n_buf > PCCX_JOBFILE_MAX_BUFS)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: counts too large (insn %u, dma %u, stream %u, buffers %u)",
				  name, jf->n_insn, jf->n_dma, jf->n_stream, jf->n_buf);
	need = HDR_BYTES + 8ull * jf->n_insn + (uint64_t)DESC_BYTES * (jf->n_dma + jf->n_stream) +
	       (uint64_t)BUF_BYTES * jf->n_buf;
	if (need != len)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: %zu bytes but the header's counts need %" PRIu64, name, len,
				  need);
	jf->insn = alloc_n(jf->n_insn, sizeof(*jf->insn));
	jf->dma = alloc_n(jf->n_dma, sizeof(*jf->dma));
	jf->stream = alloc_n(jf->n_stream, sizeof(*jf->stream));
	jf->buf = alloc_n(jf->n_buf, sizeof(*jf->buf));
	if (!jf->insn || !jf->dma || !jf->stream || !jf->buf) {
		pccx__jobfile_free(jf);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	}
	p = data + HDR_BYTES;
	for (i = 0; i < jf->n_insn; i++, p += 8)
		jf->insn[i] = rd64(p);
	for (i = 0; i < jf->n_dma; i++, p += DESC_BYTES) {
		jf->dma[i].handle = rd32(p);
		jf->dma[i].flags = rd32(p + 4);
		jf->dma[i].offset = rd64(p + 8);
		jf->dma[i].length = rd64(p + 16);
	}
	for (i = 0; i < jf->n_stream; i++, p += DESC_BYTES) {
		jf->stream[i].handle = rd32(p);
		jf->stream[i].port = rd32(p + 4);
		jf->stream[i].offset = rd64(p + 8);
		jf->stream[i].length = rd64(p + 16);
	}
	for (i = 0; i < jf->n_buf; i++, p += BUF_BYTES) {
		char why[160];
		uint32_t j;
		int rc;

		jf->buf[i].handle = rd32(p);
		jf->buf[i].access = rd32(p + 4);
		jf->buf[i].size = rd64(p + 8);
		rc = pccx__buf_decl_check(jf->buf[i].size, jf->buf[i].access, why, sizeof(why));
		if (rc) {
			uint32_t h = jf->buf[i].handle;

			pccx__jobfile_free(jf);
			return pccx__fail(d, rc, "%s: buffer %u (handle %u): %s", name, i, h, why);
		}
		for (j = 0; j < i; j++)
			if (jf->buf[j].handle == jf->buf[i].handle) {
				uint32_t h = jf->buf[i].handle;

				pccx__jobfile_free(jf);
				return pccx__fail(d, PCCX_ERR_FORMAT,
						  "%s: buffer handle %u listed twice", name, h);
			}
	}
	return PCCX_OK;
}

int pccx__jobfile_serialize(const struct pccx_jobfile *jf, uint8_t **out, size_t *len, pccx_diag *d)
{
	size_t n = HDR_BYTES + 8u * (size_t)jf->n_insn +
		   DESC_BYTES * ((size_t)jf->n_dma + jf->n_stream) + BUF_BYTES * (size_t)jf->n_buf;
	uint8_t *b = calloc(1, n), *p;
	uint32_t i;

	if (!b)
		return pccx__fail(d, PCCX_ERR_NOMEM, "job file: out of memory (%zu bytes)", n);
	memcpy(b, PCCX_JOBFILE_MAGIC, 8);
	wr32(b + 8, PCCX_JOBFILE_VERSION);
	wr32(b + 12, jf->n_insn);
	wr32(b + 16, jf->n_dma);
	wr32(b + 20, jf->n_stream);
	wr32(b + 24, jf->n_buf);
	p = b + HDR_BYTES;
	for (i = 0; i < jf->n_insn; i++, p += 8)
		wr64(p, jf->insn[i]);
	for (i = 0; i < jf->n_dma; i++, p += DESC_BYTES) {
		wr32(p, jf->dma[i].handle);
		wr32(p + 4, jf->dma[i].flags);
		wr64(p + 8, jf->dma[i].offset);
		wr64(p + 16, jf->dma[i].length);
	}
	for (i = 0; i < jf->n_stream; i++, p += DESC_BYTES) {
		wr32(p, jf->stream[i].handle);
		wr32(p + 4, jf->stream[i].port);
		wr64(p + 8, jf->stream[i].offset);
		wr64(p + 16, jf->stream[i].length);
	}
	for (i = 0; i < jf->n_buf; i++, p += BUF_BYTES) {
		wr32(p, jf->buf[i].handle);
		wr32(p + 4, jf->buf[i].access);
		wr64(p + 8, jf->buf[i].size);
	}
	*out = b;
	*len = n;
	return PCCX_OK;
}

int pccx__jobfile_lookup(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access)
{
	const struct pccx_jobfile *jf = ctx;
	uint32_t i;

	for (i = 0; i < jf->n_buf; i++)
		if (jf->buf[i].handle == handle) {
			*size = jf->buf[i].size;
			*access = jf->buf[i].access;
			return 0;
		}
	return -1;
}

void pccx__vresult_describe(const struct pccx_vresult *res, const uint64_t *insn, uint32_t n_insn,
			    char *buf, size_t size)
{
	char where[160] = "";
	char field[48] = "";
	char detail[96] = "";

	switch (res->where) {
	case PCCX_VW_JOB:
		snprintf(where, sizeof(where), "job");
		break;
	case PCCX_VW_INSN: {
		char dis[200];
		struct pccx_insn tmp;

		if (insn && res->index < n_insn && pccx__decode(insn[res->index], &tmp, NULL) == 0)
			pccx__disasm(insn[res->index], dis, sizeof(dis));
		else if (insn && res->index < n_insn)
			snprintf(dis, sizeof(dis), "word 0x%016" PRIx64, insn[res->index]);
		else
			snprintf(dis, sizeof(dis), "?");
		snprintf(where, sizeof(where), "instruction %u (%.120s)", res->index, dis);
		break;
	}
	case PCCX_VW_DMA:
		snprintf(where, sizeof(where), "host DMA descriptor %u", res->index);
		break;
	case PCCX_VW_STREAM:
		snprintf(where, sizeof(where), "weight-stream descriptor %u", res->index);
		break;
	case PCCX_VW_PORT:
		snprintf(where, sizeof(where), "weight-stream port %u", res->index);
		break;
	}
	if (res->field >= 0 && res->field < PCCX_NFIELDS)
		snprintf(field, sizeof(field), ": field %s", pccx__fields[res->field].name);
	switch (res->err) {
	case PCCX_ISA_E_STREAM_MISMATCH:
		snprintf(detail, sizeof(detail),
			 " (instructions consume %" PRIu64 " bytes, descriptors provide %" PRIu64 ")",
			 res->expected, res->actual);
		break;
	case PCCX_ISA_E_DMA_LENGTH:
		snprintf(detail, sizeof(detail),
			 " (transfer is %" PRIu64 " bytes, descriptor says %" PRIu64 ")",
			 res->expected, res->actual);
		break;
	case PCCX_ISA_E_BUF_RANGE:
		snprintf(detail, sizeof(detail), " (buffer is %" PRIu64 " bytes)", res->expected);
		break;
	case PCCX_ISA_E_JOB_LIMIT:
		snprintf(detail, sizeof(detail), " (limit %" PRIu64 ", got %" PRIu64 ")",
			 res->expected, res->actual);
		break;
	default:
		break;
	}
	snprintf(buf, size, "%s%s: %s: %s%s", where, field, pccx__isa_errname(res->err),
		 pccx__isa_strerror(res->err), detail);
}

int pccx__jobfile_validate(const struct pccx_jobfile *jf, const char *name,
			   struct pccx_vresult *res, pccx_diag *d)
{
	struct pccx_vlimits lim;
	uint8_t *used;
	char msg[400];
	int err;

	pccx__vlimits_default(&lim);
	lim.program_only = jf->is_program;
	used = calloc(PCCX_DMA_BITMAP_BYTES(jf->n_dma), 1);
	if (!used)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	{
		struct pccx_job_view v = { jf->insn, jf->n_insn, jf->dma, jf->n_dma,
					   jf->stream, jf->n_stream };

		err = pccx__validate(&v, pccx__jobfile_lookup, (void *)jf, &lim, used, res);
	}
	free(used);
	if (!err)
		return PCCX_OK;
	pccx__vresult_describe(res, jf->insn, jf->n_insn, msg, sizeof(msg));
	return pccx__fail(d, PCCX_ERR_VALIDATE, "%s: %s", name, msg);
}
