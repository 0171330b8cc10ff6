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

int pccx_cmd_asm(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	uint8_t *src = NULL, *bin = NULL;
	size_t len, pos = 0, nwords = 0, cap = 0;
	unsigned line_no = 0;
	pccx_diag d = { 0 };
	int i, rc = 1, st;

	if (pccx_cli_wants_help(argc, argv)) {
		printf("usage: pccx asm FILE.s -o FILE.bin\n\n"
		       "Assemble v002 assembly (the syntax 'pccx dis' prints; see docs/isa.md)\n"
		       "into little-endian 64-bit words.\n");
		return 0;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] == '-') {
			fprintf(stderr, "pccx asm: unknown option '%s'\n", argv[i]);
			return 2;
		} else if (!in)
			in = argv[i];
		else {
			fprintf(stderr, "pccx asm: more than one input file\n");
			return 2;
		}
	}
	if (!in || !out) {
		fprintf(stderr, "usage: pccx asm FILE.s -o FILE.bin\n");
		return 2;
	}
	st = pccx_read_file(in, MAX_SOURCE_BYTES, &src, &len, &d);
	if (st)
		return pccx_cli_fail(st, &d);
	while (pos < len) {
		size_t end = pos;
		struct pccx_asm_error e;
		uint64_t w;
		bool has;

		while (end < len && src[end] != '\n')
			end++;
		line_no++;
		if (pccx_asm_line((const char *)src + pos, end - pos, &w, &has, &e)) {
			fprintf(stderr, "%s:%u:%zu: ", in, line_no, e.column + 1);
			if (e.field >= 0)
				fprintf(stderr, "field '%s': ", pccx_fields[e.field].name);
			fprintf(stderr, "%s", pccx_asm_strerror(e.err));
			if (e.err == PCCX_ASM_E_WIDTH)
				fprintf(stderr, " (%" PRIu64 " > %u bits)", e.value,
					e.field >= 0 ? pccx_fields[e.field].msb -
						       pccx_fields[e.field].lsb + 1 : 64);
			if (e.err == PCCX_ASM_E_ILLEGAL)
				fprintf(stderr, ": %s: %s", pccx_isa_errname(e.isa_err),
					pccx_isa_strerror(e.isa_err));
			fputc('\n', stderr);
			goto out;
		}
		if (has) {
			if (nwords == cap) {
				size_t ncap = cap ? 2 * cap : 1024;
				uint8_t *nb = realloc(bin, ncap * 8);

				if (!nb) {
					fprintf(stderr, "pccx asm: out of memory\n");
					goto out;
				}
				bin = nb;
				cap = ncap;
			}
			for (i = 0; i < 8; i++)
				bin[nwords * 8 + (size_t)i] = (uint8_t)(w >> (8 * i));
			nwords++;
		}
		pos = end + 1;
	}
	if (!nwords) {
		fprintf(stderr, "%s: no instructions\n", in);
		goto out;
	}
	st = pccx_write_file_atomic(out, bin, nwords * 8, &d);
	if (st) {
		pccx_cli_fail(st, &d);
		goto out;
	}
	rc = 0;
out:
	free(src);
	free(bin);
	return rc;
}

static int load_job(const char *path, struct pccx_jobfile *jf, pccx_diag *d)
{
	uint8_t *data;
	size_t len;
	int st = pccx_read_file(path, MAX_BINARY_BYTES, &data, &len, d);

	if (st)
		return st;
	st = pccx_jobfile_parse(data, len, path, jf, d);
	free(data);
	return st;
}

int pccx_cmd_dis(int argc, char **argv)
{
	struct pccx_jobfile jf;
	pccx_diag d = { 0 };
	uint32_t i;
	int st;

	if (pccx_cli_wants_help(argc, argv) || argc != 2) {
		printf("usage: pccx dis FILE\n\n"
		       "Print each word of a program (.bin) or job file as one line of assembly;\n"
		       "illegal words print as '.word 0x...' with the reason. For a job file the\n"
		       "descriptors and buffers are printed first as comments.\n");
		return argc == 2 ? 0 : 2;
	}
	st = load_job(argv[1], &jf, &d);
	if (st)
		return pccx_cli_fail(st, &d);
	for (i = 0; i < jf.n_buf; i++)
		printf("# buffer handle=%u size=%" PRIu64 " access=%s%s\n", jf.buf[i].handle,
		       jf.buf[i].size, jf.buf[i].access & PCCX_BUF_DEV_READ ? "r" : "",
		       jf.buf[i].access & PCCX_BUF_DEV_WRITE ? "w" : "");
	for (i = 0; i < jf.n_dma; i++)
		printf("# dma %u: handle=%u %s offset=%" PRIu64 " length=%" PRIu64 "\n", i,
		       jf.dma[i].handle,
		       jf.dma[i].flags == PCCX_DMA_TO_DEVICE ? "to-device" :
		       jf.dma[i].flags == PCCX_DMA_FROM_DEVICE ? "from-device" : "bad-flags",
		       jf.dma[i].offset, jf.dma[i].length);
	for (i = 0; i < jf.n_stream; i++)
		printf("# stream %u: port=%u handle=%u offset=%" PRIu64 " length=%" PRIu64 "\n", i,
		       jf.stream[i].port, jf.stream[i].handle, jf.stream[i].offset,
		       jf.stream[i].length);
	for (i = 0; i < jf.n_insn; i++) {
		char line[256];

		pccx_disasm(jf.insn[i], line, sizeof(line));
		puts(line);
	}
	pccx_jobfile_free(&jf);
	return 0;
}

int pccx_cmd_validate(int argc, char **argv)
{
	struct pccx_jobfile jf;
	struct pccx_vresult res;
	pccx_diag d = { 0 };
	int st;

	if (pccx_cli_wants_help(argc, argv) || argc != 2) {
		printf("usage: pccx validate FILE\n\n"
		       "Run the job validator (the one the kernel driver runs) on a job file, or on\n"
		       "a bare program file (instructions only: descriptor pairing is not checked).\n"
		       "Prints the first problem with the index of the word or descriptor.\n");
		return argc == 2 ? 0 : 2;
	}
	st = load_job(argv[1], &jf, &d);
	if (st)
		return pccx_cli_fail(st, &d);
	st = pccx_jobfile_validate(&jf, argv[1], &res, &d);
	if (st) {
		pccx_jobfile_free(&jf);
		return pccx_cli_fail(st, &d);
	}
	printf("%s: ok: %u instructions, %u host DMA descriptors, %u stream descriptors%s\n",
	       argv[1], jf.n_insn, jf.n_dma, jf.n_stream,
	       jf.is_program ? " (program file: descriptor pairing not checked)" : "");
	if (!jf.is_program)
		printf("  stream bytes per port: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		       "; host DMA in %" PRIu64 ", out %" PRIu64 "\n",
		       res.port_bytes[0], res.port_bytes[1], res.port_bytes[2], res.port_bytes[3],
		       res.dma_bytes_in, res.dma_bytes_out);
	pccx_jobfile_free(&jf);
	return 0;
}

int pccx_cmd_isa_table(int argc, char **argv)
{
	if (pccx_cli_wants_help(argc, argv)) {
		printf("usage: pccx isa-table\n\nPrint the ISA reference tables generated from the "
		       "instruction table.\n");
		return 0;
	}
	pccx_isa_doc_write(stdout);
	return 0;
}
