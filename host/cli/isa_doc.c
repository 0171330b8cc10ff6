// SPDX-License-Identifier: MIT
#include "isa_doc.h"
#include "pccx_isa.h"

static const char *kind_name(enum pccx_field_kind k)
{
	switch (k) {
	case PCCX_FK_L2: return "L2 word address";
	case PCCX_FK_ENTRY: return "shape entry 0-63";
	case PCCX_FK_UINT: return "unsigned";
	case PCCX_FK_ENUM: return "enumeration";
	case PCCX_FK_FLAG: return "flag";
	case PCCX_FK_ZERO: return "must be 0";
	case PCCX_FK_MBZ: return "reserved, must be 0";
	}
	return "?";
}

static void flag_list(FILE *f, unsigned mask)
{
	static const struct { unsigned bit; const char *name; } fl[] = {
		{ PCCX_CVOF_SUB, "sub_emax" }, { PCCX_CVOF_RECIP, "recip_scale" },
		{ PCCX_CVOF_ACCM, "accm" }, { PCCX_CVOF_RELU, "relu" },
	};
	unsigned i, n = 0;

	if (mask == PCCX_CVO_NO_SFORM) {
		fputs("(no scalar form)", f);
		return;
	}
	for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
		if (mask & fl[i].bit)
			fprintf(f, "%s%s", n++ ? ", " : "", fl[i].name);
	if (!n)
		fputs("none", f);
}

static const char *class_name(enum pccx_cvo_class c)
{
	switch (c) {
	case PCCX_CVOC_UNARY: return "unary";
	case PCCX_CVOC_SCALE: return "scale";
	case PCCX_CVOC_BINARY: return "binary";
	case PCCX_CVOC_REDUCE: return "reduce";
	case PCCX_CVOC_LOAD: return "load";
	}
	return "?";
}

void pccx_isa_doc_write(FILE *f)
{
	static const char layouts[] = "ABCD";
	unsigned op, l, fn;
	int i;

	fputs("| Opcode [63:60] | Mnemonic | Layout |\n|---|---|---|\n", f);
	for (op = 0; op < 16; op++) {
		const struct pccx_opcode_desc *od = pccx__opcode_desc(op);

		if (od)
			fprintf(f, "| 0x%X | `%s` | %c |\n", op, od->mnemonic, layouts[od->layout]);
	}
	fputs("| 0x5-0xF | — | illegal |\n\n", f);

	for (l = 0; l < 4; l++) {
		fprintf(f, "Layout %c:\n\n| Bits | Field (asm) | Upstream name | Kind | Meaning |\n"
			   "|---|---|---|---|---|\n", layouts[l]);
		for (i = 0; i < PCCX_NFIELDS; i++) {
			const struct pccx_field_desc *fd = &pccx__fields[i];

			if ((unsigned)fd->layout != l)
				continue;
			if (fd->msb == fd->lsb)
				fprintf(f, "| [%u] ", fd->msb);
			else
				fprintf(f, "| [%u:%u] ", fd->msb, fd->lsb);
			fprintf(f, "| `%s` | %s | %s | %s |\n", fd->name, fd->upstream,
				kind_name(fd->kind), fd->desc);
		}
		fputc('\n', f);
	}

	fputs("CVO functions:\n\n| Code | Name | Class | Vector-form flags | Scalar-form flags "
	      "| Status | Needed by |\n|---|---|---|---|---|---|---|\n", f);
	for (fn = 0; fn < 16; fn++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);

		if (!cd) {
			fprintf(f, "| 0x%X | — | illegal | | | | |\n", fn);
			continue;
		}
		fprintf(f, "| 0x%X | `%s` | %s | ", fn, cd->name, class_name(cd->cls));
		flag_list(f, cd->vec_flags);
		fputs(" | ", f);
		flag_list(f, cd->s_flags);
		fprintf(f, " | %s | %s |\n", cd->upstream, cd->stage);
	}
	fputs("\nWeight formats (weight-shape entry, value `c`):\n\n| Value | Name | Meaning |\n"
	      "|---|---|---|\n", f);
	for (fn = 0; fn < 16; fn++)
		if (pccx__wfmt_name(fn))
			fprintf(f, "| %u | `%s` | %s |\n", fn, pccx__wfmt_name(fn), pccx__wfmt_desc(fn));
	fputs("\nMEMSET caches (`cache`):\n\n| Value | Name |\n|---|---|\n", f);
	for (fn = 0; fn < 4; fn++)
		fprintf(f, "| %u | %s |\n", fn, pccx__cache_name(fn) ? pccx__cache_name(fn) : "illegal");
	fputs("\nErrors reported by the decoder and the validator:\n\n| Code | Name | Meaning |\n"
	      "|---|---|---|\n", f);
	for (i = 1; i < PCCX_ISA_E_COUNT; i++)
		fprintf(f, "| %d | `%s` | %s |\n", i, pccx__isa_errname(i), pccx__isa_strerror(i));
}
