// SPDX-License-Identifier: MIT
/* pccx asm / dis / validate / isa-table */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "fileio.h"
#include "isa_doc.h"
#include "jobfile.h"
#include "pccx_asm.h"

#define MAX_SOURCE_BYTES (256u << 20)
#define MAX_BINARY_BYTES (64u << 20)

struct file_args {
	const char *in, *out;
};

#define A(f) PCCX_AT(struct file_args, f, const char *)
static const struct pccx_opt asm_opts[] = {
	PCCX_OPT(NULL, 0, PCCX_OPT_PATH, A(in), "FILE.s", "v002 assembly",
		 .flags = PCCX_OPT_REQUIRED),
	PCCX_OPT(NULL, 'o', PCCX_OPT_PATH, A(out), "FILE.bin", "the program's words",
		 .flags = PCCX_OPT_REQUIRED),
	{ 0 }
};

static const struct pccx_opt_cmd asm_cmd = {
	.name = "asm",
	.usage = "FILE.s -o FILE.bin",
	.about = "Assemble v002 assembly (the syntax 'pccx dis' prints; see docs/isa.md)\n"
		 "into little-endian 64-bit words.\n",
	.opts = asm_opts,
};

/* The first job file argument of dis and validate. */
static const struct pccx_opt job_opts[] = {
	PCCX_OPT(NULL, 0, PCCX_OPT_PATH, A(in), "FILE", "a program (.bin) or job file",
		 .flags = PCCX_OPT_REQUIRED),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd dis_cmd = {
	.name = "dis",
	.usage = "FILE",
	.about = "Print each word of a program (.bin) or job file as one line of assembly;\n"
		 "illegal words print as '.word 0x...' with the reason. For a job file the\n"
		 "descriptors and buffers are printed first as comments.\n",
	.opts = job_opts,
};

static const struct pccx_opt_cmd validate_cmd = {
	.name = "validate",
	.usage = "FILE",
	.about = "Run the job validator (the one the kernel driver runs) on a job file, or on\n"
		 "a bare program file (instructions only: descriptor pairing is not checked).\n"
		 "Prints the first problem with the index of the word or descriptor.\n",
	.opts = job_opts,
};

static const struct pccx_opt_cmd isa_table_cmd = {
	.name = "isa-table",
	.usage = "",
	.about = "Print the ISA reference tables generated from the instruction table.\n",
};

/* "FILE:LINE:COLUMN: field 'f': reason" */
static void print_asm_error(const char *path, unsigned line_no, const struct pccx_asm_error *e)
{
	fprintf(stderr, "%s:%u:%zu: ", path, line_no, e->column + 1);
	if (e->field >= 0)
		fprintf(stderr, "field '%s': ", pccx__fields[e->field].name);
	fprintf(stderr, "%s", pccx__asm_strerror(e->err));
	if (e->err == PCCX_ASM_E_WIDTH)
		fprintf(stderr, " (%" PRIu64 " > %u bits)", e->value,
			e->field >= 0 ? pccx__fields[e->field].msb - pccx__fields[e->field].lsb + 1 :
					64);
	if (e->err == PCCX_ASM_E_ILLEGAL)
		fprintf(stderr, ": %s: %s", pccx__isa_errname(e->isa_err),
			pccx__isa_strerror(e->isa_err));
	fputc('\n', stderr);
}

/* Append word w little-endian to the growing *bin of *nwords words. */
static int append_word(uint8_t **bin, size_t *nwords, size_t *cap, uint64_t w)
{
	int i;

	if (*nwords == *cap) {
		size_t ncap = *cap ? 2 * *cap : 1024;
		uint8_t *nb = realloc(*bin, ncap * 8);

		if (!nb)
			return -1;
		*bin = nb;
		*cap = ncap;
	}
	for (i = 0; i < 8; i++)
		(*bin)[*nwords * 8 + (size_t)i] = (uint8_t)(w >> (8 * i));
	(*nwords)++;
	return 0;
}

/* Assemble src line by line into *bin; the first error is printed and ends it (-1). */
static int assemble(const char *path, const uint8_t *src, size_t len, uint8_t **bin,
		    size_t *nwords)
{
	size_t pos = 0, cap = 0;
	unsigned line_no = 0;

	*bin = NULL;
	*nwords = 0;
	while (pos < len) {
		size_t end = pos;
		struct pccx_asm_error e;
		uint64_t w;
		bool has;

		while (end < len && src[end] != '\n')
			end++;
		line_no++;
		if (pccx__asm_line((const char *)src + pos, end - pos, &w, &has, &e)) {
			print_asm_error(path, line_no, &e);
			return -1;
		}
		if (has && append_word(bin, nwords, &cap, w)) {
			fprintf(stderr, "pccx asm: out of memory\n");
			return -1;
		}
		pos = end + 1;
	}
	if (!*nwords) {
		fprintf(stderr, "%s: no instructions\n", path);
		return -1;
	}
	return 0;
}

int pccx_cmd_asm(int argc, char **argv)
{
	struct file_args a = { 0 };
	uint8_t *src, *bin = NULL;
	size_t len, nwords;
	pccx_diag d = { 0 };
	int rc, st;

	rc = pccx_opt_parse(&asm_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	st = pccx__read_file(a.in, MAX_SOURCE_BYTES, &src, &len, &d);
	if (st)
		return pccx_cli_fail(st, &d);
	rc = 1;
	if (!assemble(a.in, src, len, &bin, &nwords)) {
		st = pccx__write_file_atomic(a.out, bin, nwords * 8, &d);
		rc = st ? pccx_cli_fail(st, &d) : 0;
	}
	free(src);
	free(bin);
	return rc;
}

static int load_job(const char *path, struct pccx_jobfile *jf, pccx_diag *d)
{
	uint8_t *data;
	size_t len;
	int st = pccx__read_file(path, MAX_BINARY_BYTES, &data, &len, d);

	if (st)
		return st;
	st = pccx__jobfile_parse(data, len, path, jf, d);
	free(data);
	return st;
}

/* A job file's buffers and descriptors, as comments. */
static void print_job_tables(const struct pccx_jobfile *jf)
{
	uint32_t i;

	for (i = 0; i < jf->n_buf; i++)
		printf("# buffer handle=%u size=%" PRIu64 " access=%s%s\n", jf->buf[i].handle,
		       jf->buf[i].size, jf->buf[i].access & PCCX_BUF_DEV_READ ? "r" : "",
		       jf->buf[i].access & PCCX_BUF_DEV_WRITE ? "w" : "");
	for (i = 0; i < jf->n_dma; i++)
		printf("# dma %u: handle=%u %s offset=%" PRIu64 " length=%" PRIu64 "\n", i,
		       jf->dma[i].handle,
		       jf->dma[i].flags == PCCX_DMA_TO_DEVICE ? "to-device" :
		       jf->dma[i].flags == PCCX_DMA_FROM_DEVICE ? "from-device" : "bad-flags",
		       jf->dma[i].offset, jf->dma[i].length);
	for (i = 0; i < jf->n_stream; i++)
		printf("# stream %u: port=%u handle=%u offset=%" PRIu64 " length=%" PRIu64 "\n", i,
		       jf->stream[i].port, jf->stream[i].handle, jf->stream[i].offset,
		       jf->stream[i].length);
}

int pccx_cmd_dis(int argc, char **argv)
{
	struct file_args a = { 0 };
	struct pccx_jobfile jf;
	pccx_diag d = { 0 };
	uint32_t i;
	int rc;

	rc = pccx_opt_parse(&dis_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = load_job(a.in, &jf, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	print_job_tables(&jf);
	for (i = 0; i < jf.n_insn; i++) {
		char line[256];

		pccx__disasm(jf.insn[i], line, sizeof(line));
		puts(line);
	}
	pccx__jobfile_free(&jf);
	return 0;
}

int pccx_cmd_validate(int argc, char **argv)
{
	struct file_args a = { 0 };
	struct pccx_jobfile jf;
	struct pccx_vresult res;
	pccx_diag d = { 0 };
	int rc;

	rc = pccx_opt_parse(&validate_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = load_job(a.in, &jf, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	rc = pccx__jobfile_validate(&jf, a.in, &res, &d);
	if (rc) {
		pccx__jobfile_free(&jf);
		return pccx_cli_fail(rc, &d);
	}
	printf("%s: ok: %u instructions, %u host DMA descriptors, %u stream descriptors%s\n",
	       a.in, jf.n_insn, jf.n_dma, jf.n_stream,
	       jf.is_program ? " (program file: descriptor pairing not checked)" : "");
	if (!jf.is_program)
		printf("  stream bytes per port: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		       "; host DMA in %" PRIu64 ", out %" PRIu64 "\n",
		       res.port_bytes[0], res.port_bytes[1], res.port_bytes[2], res.port_bytes[3],
		       res.dma_bytes_in, res.dma_bytes_out);
	pccx__jobfile_free(&jf);
	return 0;
}

int pccx_cmd_isa_table(int argc, char **argv)
{
	int rc = pccx_opt_parse(&isa_table_cmd, argc, argv, NULL);

	if (rc != PCCX_OPT_RUN)
		return rc;
	pccx_isa_doc_write(stdout);
	return 0;
}
