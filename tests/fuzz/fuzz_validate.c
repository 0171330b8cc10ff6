/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the input as a job file (or bare program) through
 * pccx__jobfile_parse and pccx__jobfile_validate. Neither may crash or read out
 * of bounds; a refusal must name the file and point inside the job; an
 * accepted job's summary must agree with its descriptors; and a parsed job
 * file must serialise back to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.job"

static void check_result(const struct pccx_jobfile *jf, const struct pccx_vresult *res)
{
	uint32_t limit = 1;

	switch (res->where) {
	case PCCX_VW_JOB:
		limit = 1;
		break;
	case PCCX_VW_INSN:
		limit = jf->n_insn;
		break;
	case PCCX_VW_DMA:
		limit = jf->n_dma ? jf->n_dma : 1;
		break;
	case PCCX_VW_STREAM:
		limit = jf->n_stream ? jf->n_stream : 1;
		break;
	case PCCX_VW_PORT:
		limit = PCCX_WSTREAM_PORTS;
		break;
	default:
		__builtin_trap();
	}
	if (res->err <= 0 || res->err >= PCCX_ISA_E_COUNT || res->index >= limit ||
	    res->field < -1 || res->field >= PCCX_NFIELDS)
		__builtin_trap();
}

static void check_summary(const struct pccx_jobfile *jf, const struct pccx_vresult *res)
{
	uint64_t streamed = 0, ported = 0, in = 0, out = 0;
	uint32_t i;

	if (jf->is_program)
		return;
	for (i = 0; i < jf->n_stream; i++)
		streamed += jf->stream[i].length;
	for (i = 0; i < PCCX_WSTREAM_PORTS; i++)
		ported += res->port_bytes[i];
	if (streamed != ported)
		__builtin_trap();
	/* every descriptor is used at least once, and only MEMCPYs of its length use it */
	for (i = 0; i < jf->n_dma; i++) {
		if (jf->dma[i].flags == PCCX_DMA_TO_DEVICE)
			in += jf->dma[i].length;
		else
			out += jf->dma[i].length;
	}
	if (res->dma_bytes_in < in || res->dma_bytes_out < out ||
	    (res->dma_bytes_in == 0) != (in == 0) || (res->dma_bytes_out == 0) != (out == 0))
		__builtin_trap();
}

static void check_serialise(const struct pccx_jobfile *jf, const uint8_t *data, size_t size)
{
	pccx_diag d;
	uint8_t *out = NULL;
	size_t len = 0;
	uint32_t i;

	if (pccx__jobfile_serialize(jf, &out, &len, &d) != PCCX_OK)
		return;
	if (!jf->is_program) {
		if (len != size || memcmp(out, data, size))
			__builtin_trap();
	} else {
		for (i = 0; i < jf->n_insn; i++) {
			uint64_t w = 0;
			unsigned b;

			for (b = 0; b < 8; b++)
				w |= (uint64_t)data[8 * (size_t)i + b] << (8 * b);
			if (w != jf->insn[i])
				__builtin_trap();
		}
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pccx_jobfile jf;
	struct pccx_vresult res;
	pccx_diag d = { 0 };
	int rc;

	rc = pccx__jobfile_parse(data, size, NAME, &jf, &d);
	if (rc != PCCX_OK) {
		if (rc > 0 || strncmp(d.msg, NAME ": ", sizeof(NAME ": ") - 1))
			__builtin_trap();
		pccx__jobfile_free(&jf);
		return 0;
	}
	check_serialise(&jf, data, size);
	memset(&d, 0, sizeof(d));
	rc = pccx__jobfile_validate(&jf, NAME, &res, &d);
	if (rc == PCCX_OK) {
		if (res.err)
			__builtin_trap();
		check_summary(&jf, &res);
	} else {
		if (rc != PCCX_ERR_VALIDATE || strncmp(d.msg, NAME ": ", sizeof(NAME ": ") - 1))
			__builtin_trap();
		check_result(&jf, &res);
	}
	pccx__jobfile_free(&jf);
	return 0;
}
