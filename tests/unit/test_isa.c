/* SPDX-License-Identifier: MIT */
/*
 * The v002 instruction table, encoder, decoder, disassembler and assembler.
 *
 * The table is checked for self-consistency, every field is driven to its
 * extremes, a million random legal words go through decode->encode and
 * disasm->asm unchanged, every class of illegal word is refused with its own
 * error, and every assembler error is reported at its column.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pccx_asm.h"
#include "pccx_isa.h"

/*
 * Random words pushed through decode->encode and disasm->asm: the full million
 * legal ones in every build (about 3 s plain, 12 s of CPU under ASan+UBSan).
 */
#define N_LEGAL 1000000u
#define N_UNIFORM 200000u

#define BODY_MASK ((1ull << 60) - 1)

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned fwidth(int fid)
{
	return (unsigned)(pccx__fields[fid].msb - pccx__fields[fid].lsb + 1);
}

static uint32_t fmax_of(int fid)
{
	return (uint32_t)((1ull << fwidth(fid)) - 1);
}

/* Replace field fid of w by v. */
static uint64_t put(uint64_t w, int fid, uint64_t v)
{
	const struct pccx_field_desc *fd = &pccx__fields[fid];
	uint64_t m = pccx_field_mask(fd->msb, fd->lsb);

	return (w & ~m) | ((v << fd->lsb) & m);
}

static uint64_t op_word(unsigned op)
{
	return (uint64_t)op << 60;
}

/* Assemble one line that must be legal. */
static uint64_t asmf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static uint64_t asmf(const char *fmt, ...)
{
	char line[256];
	struct pccx_asm_error e;
	uint64_t w = 0;
	bool has = false;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	rc = pccx__asm_line(line, strlen(line), &w, &has, &e);
	ck_assert_msg(rc == PCCX_ASM_E_OK, "'%s': assembler error %d (%s) at column %zu", line, rc,
		      pccx__asm_strerror(rc), e.column);
	ck_assert_msg(has, "'%s': no word", line);
	return w;
}

/* Decode w and require error err at field fid. */
static void expect_fault(uint64_t w, int err, int fid)
{
	struct pccx_insn in;
	struct pccx_isa_fault f = { -7, -7 };
	int rc = pccx__decode(w, &in, &f);

	ck_assert_msg(rc == err && f.err == err && f.field == fid,
		      "word 0x%016llx: expected %s field %d, got %s/%s field %d",
		      (unsigned long long)w, pccx__isa_errname(err), fid, pccx__isa_errname(rc),
		      pccx__isa_errname(f.err), f.field);
}

static void expect_legal(uint64_t w)
{
	expect_fault(w, PCCX_ISA_E_OK, -1);
}

/* A legal CVO word of function func in the given form, with extra flag bits. */
static uint64_t cvo_word(unsigned func, bool sform, uint32_t flags)
{
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(func);
	uint64_t w = op_word(PCCX_OP_CVO) | PCCX_PUT(D, func, func) | PCCX_PUT(D, dst, 0x20);

	if (!(sform && cd->cls == PCCX_CVOC_UNARY))
		w |= PCCX_PUT(D, src, 0x10);
	if (cd->cls == PCCX_CVOC_LOAD)
		w |= PCCX_PUT(D, len, 3);
	else if (!sform)
		w |= PCCX_PUT(D, len, 16);
	if (sform)
		w |= PCCX_CVOF_SREG;
	return w | flags;
}

/* ---- the table -------------------------------------------------------------- */

START_TEST(table_bits_covered_once)
{
	unsigned l;
	int i;

	for (l = PCCX_LAYOUT_A; l <= PCCX_LAYOUT_D; l++) {
		uint64_t cover = 0;
		int n = 0;

		for (i = 0; i < PCCX_NFIELDS; i++) {
			const struct pccx_field_desc *fd = &pccx__fields[i];
			uint64_t m;

			if ((unsigned)fd->layout != l)
				continue;
			n++;
			ck_assert_msg(fd->msb >= fd->lsb, "field %s: msb %u < lsb %u", fd->name,
				      fd->msb, fd->lsb);
			ck_assert_msg(fd->msb <= 59, "field %s reaches the opcode (bit %u)",
				      fd->name, fd->msb);
			m = pccx_field_mask(fd->msb, fd->lsb);
			ck_assert_msg((cover & m) == 0, "layout %c: field %s overlaps another",
				      'A' + l, fd->name);
			cover |= m;
		}
		ck_assert_msg(n > 0, "layout %c has no fields", 'A' + l);
		ck_assert_msg(cover == BODY_MASK, "layout %c covers 0x%015llx, not bits [59:0]",
			      'A' + l, (unsigned long long)cover);
	}
}
END_TEST

START_TEST(table_names_unique)
{
	int i, j;

	for (i = 0; i < PCCX_NFIELDS; i++) {
		const char *n = pccx__fields[i].name;
		size_t k;

		ck_assert_msg(n && n[0], "field %d has no name", i);
		for (k = 0; n[k]; k++)
			ck_assert_msg((n[k] >= 'a' && n[k] <= 'z') || n[k] == '_' ||
				      (n[k] >= '0' && n[k] <= '9'), "field name '%s'", n);
		ck_assert(pccx__fields[i].upstream && pccx__fields[i].upstream[0]);
		ck_assert(pccx__fields[i].desc && pccx__fields[i].desc[0]);
		for (j = 0; j < i; j++) {
			if (pccx__fields[j].layout != pccx__fields[i].layout)
				continue;
			ck_assert_msg(strcmp(pccx__fields[j].name, n) != 0,
				      "layout %c: field name '%s' twice",
				      'A' + pccx__fields[i].layout, n);
			ck_assert_msg(strcmp(pccx__fields[j].upstream, pccx__fields[i].upstream) != 0,
				      "layout %c: upstream name '%s' twice",
				      'A' + pccx__fields[i].layout, pccx__fields[i].upstream);
		}
	}
}
END_TEST

/* The generated ids and bit constants name the descriptor they claim to. */
START_TEST(table_ids_and_constants)
{
	int n = 0;

#define CHECK_FIELD(l_, nm_, up_, hi_, lo_, kd_, ds_)                             \
	do {                                                                         \
		const struct pccx_field_desc *fd = &pccx__fields[PCCX_FID_##l_##_##nm_]; \
		ck_assert_str_eq(fd->name, #nm_);                                    \
		ck_assert_str_eq(fd->upstream, #up_);                                \
		ck_assert_str_eq(fd->desc, ds_);                                     \
		ck_assert_int_eq(fd->layout, PCCX_LAYOUT_##l_);                      \
		ck_assert_int_eq(fd->kind, PCCX_FK_##kd_);                           \
		ck_assert_uint_eq(fd->msb, hi_);                                     \
		ck_assert_uint_eq(fd->lsb, lo_);                                     \
		ck_assert_int_eq(PCCX_##l_##_##nm_##_MSB, hi_);                      \
		ck_assert_int_eq(PCCX_##l_##_##nm_##_LSB, lo_);                      \
		ck_assert_int_eq(PCCX_FID_##l_##_##nm_, n);                          \
		n++;                                                                 \
	} while (0);
	PCCX_FIELD_LIST(CHECK_FIELD)
#undef CHECK_FIELD
	ck_assert_int_eq(n, PCCX_NFIELDS);
}
END_TEST

START_TEST(table_field_kinds)
{
	int i;

	for (i = 0; i < PCCX_NFIELDS; i++) {
		const struct pccx_field_desc *fd = &pccx__fields[i];

		switch (fd->kind) {
		case PCCX_FK_FLAG:
			ck_assert_msg(fwidth(i) == 1, "flag %s is %u bits", fd->name, fwidth(i));
			break;
		case PCCX_FK_ENTRY:
			ck_assert_msg((1u << fwidth(i)) == PCCX_SHAPE_ENTRIES, "entry field %s",
				      fd->name);
			break;
		case PCCX_FK_L2:
			/* every legal L2 word is nameable, and the field is no wider than needed */
			ck_assert_msg(fmax_of(i) >= PCCX_L2_WORDS - 1 &&
				      fmax_of(i) / 2 < PCCX_L2_WORDS, "L2 field %s", fd->name);
			break;
		default:
			break;
		}
	}
	/* The CVO flag masks are the D-layout flag bits. */
	ck_assert_uint_eq(PCCX_CVOF_SUB, 1u << PCCX_D_sub_emax_LSB);
	ck_assert_uint_eq(PCCX_CVOF_RECIP, 1u << PCCX_D_recip_scale_LSB);
	ck_assert_uint_eq(PCCX_CVOF_ACCM, 1u << PCCX_D_accm_LSB);
	ck_assert_uint_eq(PCCX_CVOF_SREG, 1u << PCCX_D_sreg_LSB);
	ck_assert_uint_eq(PCCX_CVOF_RELU, 1u << PCCX_D_relu_LSB);
	/* The MEMCPY desc field indexes every descriptor a job may have. */
	ck_assert_uint_eq((uint64_t)fmax_of(PCCX_FID_B_desc) + 1, 1u << 17);
	/* ENUM fields are exactly the two with names. */
	ck_assert_int_eq(pccx__fields[PCCX_FID_C_cache].kind, PCCX_FK_ENUM);
	ck_assert_int_eq(pccx__fields[PCCX_FID_D_func].kind, PCCX_FK_ENUM);
}
END_TEST

START_TEST(table_opcodes_once)
{
	unsigned seen = 0, op, n = 0, layouts = 0;

#define CHECK_OP(nm_, val_, mn_, lay_)                                           \
	do {                                                                     \
		const struct pccx_opcode_desc *od = pccx__opcode_desc(val_);      \
		ck_assert_msg(!(seen & (1u << (val_))), "opcode %u twice", val_); \
		seen |= 1u << (val_);                                            \
		ck_assert_ptr_nonnull(od);                                       \
		ck_assert_uint_eq(od->value, val_);                              \
		ck_assert_str_eq(od->mnemonic, mn_);                             \
		ck_assert_int_eq(od->layout, PCCX_LAYOUT_##lay_);                \
		ck_assert_uint_eq(PCCX_OP_##nm_, val_);                          \
		layouts |= 1u << PCCX_LAYOUT_##lay_;                             \
		n++;                                                             \
	} while (0);
	PCCX_OPCODE_LIST(CHECK_OP)
#undef CHECK_OP
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(seen, 0x1f);
	ck_assert_uint_eq(layouts, 0xf);
	for (op = 0; op < 16; op++) {
		const struct pccx_opcode_desc *od = pccx__opcode_desc(op);
		unsigned o2;

		ck_assert_msg((od != NULL) == (op < 5), "opcode 0x%x", op);
		for (o2 = 0; od && o2 < op; o2++)
			if (pccx__opcode_desc(o2))
				ck_assert_str_ne(pccx__opcode_desc(o2)->mnemonic, od->mnemonic);
	}
	ck_assert_ptr_null(pccx__opcode_desc(16));
	ck_assert_ptr_null(pccx__opcode_desc(~0u));
}
END_TEST

START_TEST(table_cvo_functions_once)
{
	const uint32_t defined = PCCX_CVOF_SUB | PCCX_CVOF_RECIP | PCCX_CVOF_ACCM | PCCX_CVOF_RELU;
	unsigned seen = 0, n = 0, fn, f2;

#define CHECK_CVO(nm_, code_, mn_, cls_, vf_, sf_, up_, st_)                        \
	do {                                                                         \
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(code_);               \
		ck_assert_msg(!(seen & (1u << (code_))), "CVO function %u twice", code_); \
		seen |= 1u << (code_);                                               \
		ck_assert_ptr_nonnull(cd);                                           \
		ck_assert_uint_eq(cd->code, code_);                                  \
		ck_assert_str_eq(cd->name, mn_);                                     \
		ck_assert_int_eq(cd->cls, PCCX_CVOC_##cls_);                         \
		ck_assert_uint_eq(cd->vec_flags, vf_);                               \
		ck_assert_uint_eq(cd->s_flags, sf_);                                 \
		ck_assert_str_eq(cd->upstream, up_);                                 \
		ck_assert_str_eq(cd->stage, st_);                                    \
		ck_assert_uint_eq(PCCX_CVO_##nm_, code_);                            \
		n++;                                                                 \
	} while (0);
	PCCX_CVO_FUNC_LIST(CHECK_CVO)
#undef CHECK_CVO
	/* every code is a function: 0xF is the extension smul (FEATURES.SMUL) */
	ck_assert_uint_eq(n, 16);
	ck_assert_uint_eq(seen, 0xffff);
	for (fn = 0; fn < 16; fn++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);

		ck_assert_msg(cd != NULL, "CVO function 0x%x", fn);
		ck_assert_msg(!(cd->vec_flags & ~defined), "%s: vector flags 0x%x", cd->name,
			      cd->vec_flags);
		ck_assert_msg(cd->s_flags == PCCX_CVO_NO_SFORM || !(cd->s_flags & ~defined),
			      "%s: scalar flags 0x%x", cd->name, cd->s_flags);
		/* exactly sum, sumsq (reductions), lds (a load) and smul (S is its operand)
		 * lack a scalar form */
		ck_assert_msg((cd->s_flags == PCCX_CVO_NO_SFORM) ==
			      (fn == PCCX_CVO_SUM || fn == PCCX_CVO_SUMSQ || fn == PCCX_CVO_LDS ||
			       fn == PCCX_CVO_SMUL),
			      "%s: scalar flags 0x%x", cd->name, cd->s_flags);
		if (cd->s_flags == PCCX_CVO_NO_SFORM)
			ck_assert(cd->cls == PCCX_CVOC_REDUCE || cd->cls == PCCX_CVOC_LOAD ||
				  fn == PCCX_CVO_SMUL);
		for (f2 = 0; f2 < fn; f2++)
			ck_assert_str_ne(pccx__cvo_desc(f2)->name, cd->name);
	}
	ck_assert_ptr_null(pccx__cvo_desc(16));
}
END_TEST

START_TEST(table_enum_names)
{
	ck_assert_str_eq(pccx__cache_name(PCCX_CACHE_FMAP), "fmap");
	ck_assert_str_eq(pccx__cache_name(PCCX_CACHE_WEIGHT), "weight");
	ck_assert_ptr_null(pccx__cache_name(2));
	ck_assert_ptr_null(pccx__cache_name(3));
	ck_assert_str_eq(pccx__wfmt_name(PCCX_WFMT_Q4), "q4");
	ck_assert_str_eq(pccx__wfmt_name(PCCX_WFMT_F32), "f32");
	ck_assert_str_eq(pccx__wfmt_name(PCCX_WFMT_F32T), "f32t");
	ck_assert_str_eq(pccx__wfmt_name(PCCX_WFMT_Q4C), "q4c");
	ck_assert_ptr_null(pccx__wfmt_name(4));
	ck_assert_ptr_null(pccx__wfmt_name(0xffff));
	ck_assert_ptr_nonnull(pccx__wfmt_desc(PCCX_WFMT_F32T));
	ck_assert_ptr_null(pccx__wfmt_desc(4));
}
END_TEST

START_TEST(table_error_names)
{
	int i, j;

	ck_assert_str_eq(pccx__isa_errname(PCCX_ISA_E_OK), "OK");
	ck_assert_str_eq(pccx__isa_errname(PCCX_ISA_E_STREAM_MISMATCH), "STREAM_MISMATCH");
	for (i = 0; i < PCCX_ISA_E_COUNT; i++) {
		ck_assert(strlen(pccx__isa_strerror(i)) > 0);
		for (j = 0; j < i; j++) {
			ck_assert_str_ne(pccx__isa_errname(i), pccx__isa_errname(j));
			ck_assert_str_ne(pccx__isa_strerror(i), pccx__isa_strerror(j));
		}
	}
	ck_assert_str_eq(pccx__isa_errname(PCCX_ISA_E_COUNT), "UNKNOWN");
	ck_assert_str_eq(pccx__isa_errname(-1), "UNKNOWN");
	ck_assert_str_eq(pccx__isa_strerror(PCCX_ISA_E_COUNT), "unknown ISA error");
	for (i = 0; i < PCCX_ASM_E_COUNT; i++)
		for (j = 0; j < i; j++)
			ck_assert_str_ne(pccx__asm_strerror(i), pccx__asm_strerror(j));
	ck_assert_str_eq(pccx__asm_strerror(PCCX_ASM_E_COUNT), "unknown assembler error");
	ck_assert_str_eq(pccx__asm_strerror(-3), "unknown assembler error");
}
END_TEST

START_TEST(field_find)
{
	int i;

	for (i = 0; i < PCCX_NFIELDS; i++) {
		const char *n = pccx__fields[i].name;
		size_t len = strlen(n);
		char longer[64];

		ck_assert_int_eq(pccx__field_find(pccx__fields[i].layout, n, len), i);
		/* a prefix or an extension of the name is another name */
		ck_assert_int_ne(pccx__field_find(pccx__fields[i].layout, n, len - 1), i);
		snprintf(longer, sizeof(longer), "%sx", n);
		ck_assert_int_eq(pccx__field_find(pccx__fields[i].layout, longer, len + 1), -1);
	}
	/* not NUL-terminated: only len bytes count */
	ck_assert_int_eq(pccx__field_find(PCCX_LAYOUT_D, "lenXYZ", 3), PCCX_FID_D_len);
	ck_assert_int_eq(pccx__field_find(PCCX_LAYOUT_A, "func", 4), -1);
	ck_assert_int_eq(pccx__field_find(PCCX_LAYOUT_D, "dest", 4), -1);
	ck_assert_int_eq(pccx__field_find(PCCX_LAYOUT_B, "", 0), -1);
}
END_TEST

/* ---- encoder and decoder at the extremes ---------------------------------------- */

static void check_decoded_fields(uint64_t w, const struct pccx_insn *want)
{
	struct pccx_insn got;
	struct pccx_isa_fault f;
	int i;

	(void)pccx__decode(w, &got, &f);
	ck_assert_uint_eq(got.opcode, want->opcode);
	for (i = 0; i < PCCX_NFIELDS; i++)
		ck_assert_msg(got.f[i] == want->f[i],
			      "word 0x%016llx: field %s decodes as %u, not %u",
			      (unsigned long long)w, pccx__fields[i].name, got.f[i], want->f[i]);
}

START_TEST(encode_each_field_extremes)
{
	unsigned op;
	int i, k;

	for (op = 0; op < 5; op++) {
		enum pccx_layout l = pccx__opcode_desc(op)->layout;

		for (i = 0; i < PCCX_NFIELDS; i++) {
			const uint32_t vals[3] = { 0, 1, fmax_of(i) };

			if (pccx__fields[i].layout != l)
				continue;
			for (k = 0; k < 3; k++) {
				struct pccx_insn in;
				struct pccx_isa_fault f;
				uint64_t w = 0;

				memset(&in, 0, sizeof(in));
				in.opcode = op;
				in.f[i] = vals[k];
				ck_assert_int_eq(pccx__encode(&in, &w, &f), PCCX_ISA_E_OK);
				ck_assert_int_eq(f.err, PCCX_ISA_E_OK);
				ck_assert_int_eq(f.field, -1);
				ck_assert_msg(w == (op_word(op) | ((uint64_t)vals[k] <<
								   pccx__fields[i].lsb)),
					      "%s=%u encodes as 0x%016llx", pccx__fields[i].name,
					      vals[k], (unsigned long long)w);
				ck_assert_uint_eq(pccx_bits(w, pccx__fields[i].msb,
							    pccx__fields[i].lsb), vals[k]);
				check_decoded_fields(w, &in);
			}
		}
	}
}
END_TEST

START_TEST(encode_all_fields_max)
{
	unsigned op;
	int i;

	for (op = 0; op < 5; op++) {
		struct pccx_insn in;
		struct pccx_isa_fault f;
		uint64_t w = 0;

		memset(&in, 0, sizeof(in));
		in.opcode = op;
		for (i = 0; i < PCCX_NFIELDS; i++)
			if (pccx__fields[i].layout == pccx__opcode_desc(op)->layout)
				in.f[i] = fmax_of(i);
		ck_assert_int_eq(pccx__encode(&in, &w, &f), PCCX_ISA_E_OK);
		ck_assert_uint_eq(w, op_word(op) | BODY_MASK);
		check_decoded_fields(w, &in);
	}
}
END_TEST

START_TEST(encode_refuses_one_past_max)
{
	unsigned op;
	int i;

	for (op = 0; op < 5; op++) {
		for (i = 0; i < PCCX_NFIELDS; i++) {
			const uint32_t bad[2] = { fmax_of(i) + 1, 0xffffffffu };
			int k;

			if (pccx__fields[i].layout != pccx__opcode_desc(op)->layout)
				continue;
			for (k = 0; k < 2; k++) {
				struct pccx_insn in;
				struct pccx_isa_fault f = { 0, -1 };
				uint64_t w = 0;

				memset(&in, 0, sizeof(in));
				in.opcode = op;
				in.f[i] = bad[k];
				ck_assert_msg(pccx__encode(&in, &w, &f) == PCCX_ISA_E_FIELD_VALUE,
					      "%s %s=%u encoded", pccx__opcode_desc(op)->mnemonic,
					      pccx__fields[i].name, bad[k]);
				ck_assert_int_eq(f.err, PCCX_ISA_E_FIELD_VALUE);
				ck_assert_msg(f.field == i, "%s=%u: fault names field %d",
					      pccx__fields[i].name, bad[k], f.field);
			}
		}
	}
}
END_TEST

START_TEST(encode_refuses_undefined_opcode)
{
	unsigned op;

	for (op = 5; op < 16; op++) {
		struct pccx_insn in;
		struct pccx_isa_fault f = { 0, 0 };
		uint64_t w = 0;

		memset(&in, 0, sizeof(in));
		in.opcode = op;
		ck_assert_int_eq(pccx__encode(&in, &w, &f), PCCX_ISA_E_OPCODE);
		ck_assert_int_eq(f.err, PCCX_ISA_E_OPCODE);
		ck_assert_int_eq(f.field, -1);
	}
}
END_TEST

/* ---- random words ----------------------------------------------------------- */

/*
 * An independent statement of the word-level rules (pccx_isa_table.h and
 * docs/isa.md "Illegal encodings"), used as an oracle for random words: it
 * lists every fault of a word, and the decoder must report one of them (which
 * one it reports first is the decoder's business).
 */
struct faults {
	int n;
	int err[16];
	int field[16];
};

static void add_fault(struct faults *s, int err, int field)
{
	if (s->n < 16) {
		s->err[s->n] = err;
		s->field[s->n] = field;
		s->n++;
	}
}

static void model_faults(uint64_t w, struct faults *s)
{
	const struct pccx_opcode_desc *od = pccx__opcode_desc(pccx_opcode_of(w));
	int i;

	s->n = 0;
	if (!od) {
		add_fault(s, PCCX_ISA_E_OPCODE, -1);
		return;
	}
	for (i = 0; i < PCCX_NFIELDS; i++) {
		const struct pccx_field_desc *fd = &pccx__fields[i];
		uint64_t v = pccx_bits(w, fd->msb, fd->lsb);

		if (fd->layout != od->layout || !v)
			continue;
		if (fd->kind == PCCX_FK_MBZ)
			add_fault(s, PCCX_ISA_E_RESERVED, i);
		if (fd->kind == PCCX_FK_ZERO)
			add_fault(s, PCCX_ISA_E_FIELD_VALUE, i);
	}
	switch (od->layout) {
	case PCCX_LAYOUT_A:
		if (PCCX_GET(w, A, rowmask) && (pccx_opcode_of(w) != PCCX_OP_GEMV ||
						PCCX_GET(w, A, accm) || PCCX_GET(w, A, findemax)))
			add_fault(s, PCCX_ISA_E_FLAGS, PCCX_FID_A_rowmask);
		break;
	case PCCX_LAYOUT_B: {
		bool fh = PCCX_GET(w, B, from_host), th = PCCX_GET(w, B, to_host);

		if (fh && th)
			add_fault(s, PCCX_ISA_E_ROUTE, PCCX_FID_B_to_host);
		if (fh && PCCX_GET(w, B, src))
			add_fault(s, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_src);
		if (th && PCCX_GET(w, B, dest))
			add_fault(s, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_dest);
		if (!fh && !th && PCCX_GET(w, B, desc))
			add_fault(s, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_desc);
		break;
	}
	case PCCX_LAYOUT_C:
		if (PCCX_GET(w, C, cache) > 1)
			add_fault(s, PCCX_ISA_E_FIELD_VALUE, PCCX_FID_C_cache);
		break;
	case PCCX_LAYOUT_D: {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(PCCX_GET(w, D, func));
		static const int flag_fid[4] = { PCCX_FID_D_sub_emax, PCCX_FID_D_recip_scale,
						 PCCX_FID_D_accm, PCCX_FID_D_relu };
		static const uint32_t flag_bit[4] = { PCCX_CVOF_SUB, PCCX_CVOF_RECIP,
						      PCCX_CVOF_ACCM, PCCX_CVOF_RELU };
		bool sform = PCCX_GET(w, D, sreg);
		uint32_t allowed;

		if (!cd) {
			add_fault(s, PCCX_ISA_E_CVO_FUNC, PCCX_FID_D_func);
			break;
		}
		if (sform && cd->s_flags == PCCX_CVO_NO_SFORM) {
			add_fault(s, PCCX_ISA_E_FLAGS, PCCX_FID_D_sreg);
			break;
		}
		allowed = sform ? cd->s_flags : cd->vec_flags;
		for (i = 0; i < 4; i++)
			if ((w & flag_bit[i]) && !(allowed & flag_bit[i]))
				add_fault(s, PCCX_ISA_E_FLAGS, flag_fid[i]);
		if (cd->cls == PCCX_CVOC_LOAD)
			break;
		if (!sform && !PCCX_GET(w, D, len))
			add_fault(s, PCCX_ISA_E_LENGTH, PCCX_FID_D_len);
		if (sform && PCCX_GET(w, D, len))
			add_fault(s, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_len);
		if (sform && cd->cls == PCCX_CVOC_UNARY && PCCX_GET(w, D, src))
			add_fault(s, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_src);
		break;
	}
	}
}

/*
 * Check's ck_assert records a "last checkpoint" through a pipe on every call in
 * fork mode; in the million-word loops that system call would dominate, so
 * they test plainly and only call into Check on failure.
 */
#define REQUIRE(cond, ...)                              \
	do {                                            \
		if (!(cond))                            \
			ck_abort_msg(__VA_ARGS__);      \
	} while (0)

/* Field values biased towards the edges, where the bugs live. */
static uint32_t rand_value(uint64_t *s, int fid)
{
	uint64_t r = splitmix64(s);
	uint32_t max = fmax_of(fid);

	switch (r & 7) {
	case 0:
	case 1:
		return 0;
	case 2:
		return 1 & max;
	case 3:
		return max;
	default:
		return (uint32_t)(r >> 16) & max;
	}
}

/* A word built field by field from the table: mostly legal, sometimes not. */
static uint64_t gen_fields(uint64_t *s)
{
	unsigned op = (unsigned)(splitmix64(s) % 5);
	enum pccx_layout l = pccx__opcode_desc(op)->layout;
	uint64_t w = op_word(op);
	int i;

	for (i = 0; i < PCCX_NFIELDS; i++) {
		const struct pccx_field_desc *fd = &pccx__fields[i];
		uint64_t v;

		if (fd->layout != l)
			continue;
		if (fd->kind == PCCX_FK_MBZ || fd->kind == PCCX_FK_ZERO)
			v = (splitmix64(s) % 64) == 0 ? rand_value(s, i) : 0;
		else if (fd->kind == PCCX_FK_FLAG)
			v = splitmix64(s) & 1;
		else
			v = rand_value(s, i);
		w = put(w, i, v);
	}
	return w;
}

/*
 * The rare forms, constructed: a MEMCPY of a random route with its unused
 * field cleared, or a CVO of a random function and form with a random subset
 * of the flags the table allows there. Still checked by the decoder: the
 * construction only makes legal words likely, it does not define them.
 */
static uint64_t gen_form(uint64_t *s)
{
	uint64_t w = gen_fields(s);

	switch (pccx_opcode_of(w)) {
	case PCCX_OP_MEMCPY:
		switch (splitmix64(s) % 3) {
		case 0:
			w = put(put(put(w, PCCX_FID_B_from_host, 1), PCCX_FID_B_to_host, 0),
				PCCX_FID_B_src, 0);
			break;
		case 1:
			w = put(put(put(w, PCCX_FID_B_from_host, 0), PCCX_FID_B_to_host, 1),
				PCCX_FID_B_dest, 0);
			break;
		default:
			w = put(put(put(w, PCCX_FID_B_from_host, 0), PCCX_FID_B_to_host, 0),
				PCCX_FID_B_desc, 0);
			break;
		}
		break;
	case PCCX_OP_CVO: {
		unsigned fn = (unsigned)(splitmix64(s) % 15);
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);
		bool sform = (splitmix64(s) & 1) && cd->s_flags != PCCX_CVO_NO_SFORM;
		uint32_t allowed = sform ? cd->s_flags : cd->vec_flags;

		w = put(w, PCCX_FID_D_func, fn);
		w &= ~(uint64_t)(PCCX_CVOF_SUB | PCCX_CVOF_RECIP | PCCX_CVOF_ACCM | PCCX_CVOF_SREG |
				 PCCX_CVOF_RELU);
		w |= splitmix64(s) & allowed;
		if (sform) {
			w |= PCCX_CVOF_SREG;
			if (cd->cls != PCCX_CVOC_LOAD)
				w = put(w, PCCX_FID_D_len, 0);
			if (cd->cls == PCCX_CVOC_UNARY)
				w = put(w, PCCX_FID_D_src, 0);
		}
		break;
	}
	default:
		break;
	}
	return w;
}

static uint64_t gen_word(uint64_t *s)
{
	return (splitmix64(s) & 1) ? gen_form(s) : gen_fields(s);
}

struct rt_stats {
	uint64_t legal, illegal;
	uint64_t per_op[5];
	uint64_t cvo[16][2];          /* function x form */
	uint64_t route[3];            /* from_host, to_host, L2->L2 */
	uint64_t cache[2];
	uint64_t errs[PCCX_ISA_E_COUNT];
};

static void check_model(uint64_t w, int rc, const struct pccx_isa_fault *f)
{
	struct faults s;
	int i;
	bool found = false;

	model_faults(w, &s);
	if (s.n == 0) {
		REQUIRE(rc == 0, "word 0x%016llx: decoder says %s (field %d), rules say legal",
			(unsigned long long)w, pccx__isa_errname(rc), f->field);
		return;
	}
	REQUIRE(rc != 0, "word 0x%016llx: decoder accepts it, rules say %s (field %s)",
		(unsigned long long)w, pccx__isa_errname(s.err[0]),
		s.field[0] >= 0 ? pccx__fields[s.field[0]].name : "-");
	for (i = 0; i < s.n; i++)
		if (s.err[i] == rc && s.field[i] == f->field)
			found = true;
	REQUIRE(found, "word 0x%016llx: decoder says %s field %d, not one of the %d faults the "
		"rules find (first %s field %d)", (unsigned long long)w, pccx__isa_errname(rc),
		f->field, s.n, pccx__isa_errname(s.err[0]), s.field[0]);
}

/* One word through every path: decoder vs rules, encode(decode), asm(disasm). */
static void round_trip(uint64_t w, struct rt_stats *st)
{
	struct pccx_insn in;
	struct pccx_isa_fault f;
	struct pccx_asm_error e;
	char buf[200];
	uint64_t back = ~w;
	bool has = false;
	int rc, n, i;

	rc = pccx__decode(w, &in, &f);
	REQUIRE(rc == f.err, "decode returned %d, fault says %d", rc, f.err);
	check_model(w, rc, &f);
	n = pccx__disasm(w, buf, sizeof(buf));
	REQUIRE(n > 0 && (size_t)n == strlen(buf), "disasm of 0x%016llx returned %d",
		(unsigned long long)w, n);
	if (rc == PCCX_ISA_E_OK) {
		const struct pccx_opcode_desc *od = pccx__opcode_desc(in.opcode);

		st->legal++;
		REQUIRE(n < 96, "legal word prints in %d bytes: %s", n, buf);
		REQUIRE(pccx__encode(&in, &back, &f) == PCCX_ISA_E_OK, "encode refused '%s'", buf);
		REQUIRE(back == w, "encode(decode(0x%016llx)) = 0x%016llx", (unsigned long long)w,
			(unsigned long long)back);
		for (i = 0; i < PCCX_NFIELDS; i++)
			REQUIRE(pccx__fields[i].layout == od->layout || in.f[i] == 0,
				"0x%016llx: field %s of another layout is %u",
				(unsigned long long)w, pccx__fields[i].name, in.f[i]);
		st->per_op[in.opcode]++;
		if (in.opcode == PCCX_OP_CVO)
			st->cvo[in.f[PCCX_FID_D_func]][in.f[PCCX_FID_D_sreg]]++;
		if (in.opcode == PCCX_OP_MEMCPY)
			st->route[in.f[PCCX_FID_B_from_host] ? 0 :
				  in.f[PCCX_FID_B_to_host] ? 1 : 2]++;
		if (in.opcode == PCCX_OP_MEMSET)
			st->cache[in.f[PCCX_FID_C_cache]]++;
	} else {
		char head[32];
		size_t hl;

		st->illegal++;
		st->errs[rc]++;
		hl = (size_t)snprintf(head, sizeof(head), ".word 0x%016llx  # ",
				      (unsigned long long)w);
		REQUIRE(strncmp(buf, head, hl) == 0, "illegal word prints as '%s'", buf);
		REQUIRE(strncmp(buf + hl, pccx__isa_errname(rc), strlen(pccx__isa_errname(rc))) == 0,
			"'%s' lacks %s", buf, pccx__isa_errname(rc));
		REQUIRE(n < 200, "illegal word prints in %d bytes", n);
	}
	rc = pccx__asm_line(buf, (size_t)n, &back, &has, &e);
	REQUIRE(rc == PCCX_ASM_E_OK && has, "asm('%s') failed: %s at %zu", buf,
		pccx__asm_strerror(rc), e.column);
	REQUIRE(back == w, "asm(dis(0x%016llx)) = 0x%016llx ('%s')", (unsigned long long)w,
		(unsigned long long)back, buf);
}

START_TEST(random_legal_round_trip)
{
	static struct rt_stats st;
	uint64_t seed = 0x5eed0001d1ceull;
	unsigned fn;
	int k;

	memset(&st, 0, sizeof(st));
	while (st.legal < N_LEGAL)
		round_trip(gen_word(&seed), &st);
	ck_assert_uint_ge(st.legal, N_LEGAL);
	ck_assert_uint_gt(st.illegal, 10000);
	/* the generator reaches every form */
	for (k = 0; k < 5; k++)
		ck_assert_msg(st.per_op[k] > 1000, "opcode %d: %llu legal words", k,
			      (unsigned long long)st.per_op[k]);
	for (fn = 0; fn < 16; fn++) {
		ck_assert_msg(st.cvo[fn][0] > 100, "cvo %s vector form: %llu words",
			      pccx__cvo_desc(fn)->name, (unsigned long long)st.cvo[fn][0]);
		if (pccx__cvo_desc(fn)->s_flags != PCCX_CVO_NO_SFORM)
			ck_assert_msg(st.cvo[fn][1] > 100, "cvo %s scalar form: %llu words",
				      pccx__cvo_desc(fn)->name, (unsigned long long)st.cvo[fn][1]);
		else
			ck_assert_uint_eq(st.cvo[fn][1], 0);
	}
	for (k = 0; k < 3; k++)
		ck_assert_uint_gt(st.route[k], 1000);
	ck_assert_uint_gt(st.cache[0], 1000);
	ck_assert_uint_gt(st.cache[1], 1000);
	/* and every word-level error class among the illegal ones (CVO_FUNC is not one: every
	 * function code is defined; a device without FEATURES.SMUL refuses smul with it) */
	for (k = PCCX_ISA_E_CVO_FUNC + 1; k <= PCCX_ISA_E_UNUSED_FIELD; k++)
		ck_assert_msg(st.errs[k] > 100, "%s: %llu words", pccx__isa_errname(k),
			      (unsigned long long)st.errs[k]);
	ck_assert_uint_gt(st.errs[PCCX_ISA_E_LENGTH], 100);
}
END_TEST

/* Uniform 64-bit words: mostly illegal (opcodes 5-15 included); all must round-trip. */
START_TEST(random_uniform_round_trip)
{
	static struct rt_stats st;
	uint64_t seed = 0xfeedfacecafebeefull;
	uint32_t i;

	memset(&st, 0, sizeof(st));
	for (i = 0; i < N_UNIFORM; i++)
		round_trip(splitmix64(&seed), &st);
	/* and the words that differ from legal ones in a single bit */
	seed = 42;
	for (i = 0; i < N_UNIFORM / 64; i++) {
		uint64_t w;
		unsigned b;

		do
			w = gen_word(&seed);
		while (pccx__decode(w, &(struct pccx_insn){ 0 }, NULL) != 0);
		for (b = 0; b < 64; b++)
			round_trip(w ^ (1ull << b), &st);
	}
	ck_assert_uint_gt(st.errs[PCCX_ISA_E_OPCODE], N_UNIFORM / 2);
	ck_assert_uint_gt(st.legal, 1000);
}
END_TEST

START_TEST(decode_fills_fields_of_illegal_words)
{
	struct pccx_insn in;
	struct pccx_isa_fault f;
	uint64_t w = op_word(PCCX_OP_GEMV) | PCCX_PUT(A, dest, 0x1234) | PCCX_PUT(A, rsv, 5);
	int i;

	ck_assert_int_eq(pccx__decode(w, &in, &f), PCCX_ISA_E_RESERVED);
	ck_assert_uint_eq(in.opcode, PCCX_OP_GEMV);
	ck_assert_uint_eq(in.f[PCCX_FID_A_dest], 0x1234);
	ck_assert_uint_eq(in.f[PCCX_FID_A_rsv], 5);
	/* an undefined opcode has no layout: every field reads 0 */
	memset(&in, 0xa5, sizeof(in));
	ck_assert_int_eq(pccx__decode(0x9fffffffffffffffull, &in, &f), PCCX_ISA_E_OPCODE);
	ck_assert_uint_eq(in.opcode, 9);
	for (i = 0; i < PCCX_NFIELDS; i++)
		ck_assert_uint_eq(in.f[i], 0);
	/* a NULL fault pointer is allowed */
	ck_assert_int_eq(pccx__decode(0xf000000000000000ull, &in, NULL), PCCX_ISA_E_OPCODE);
}
END_TEST

/* ---- each class of illegal word, with its own error ------------------------------ */

START_TEST(illegal_opcodes)
{
	uint64_t seed = 7;
	unsigned op;
	int k;

	for (op = 5; op < 16; op++) {
		expect_fault(op_word(op), PCCX_ISA_E_OPCODE, -1);
		expect_fault(op_word(op) | BODY_MASK, PCCX_ISA_E_OPCODE, -1);
		for (k = 0; k < 100; k++)
			expect_fault(op_word(op) | (splitmix64(&seed) & BODY_MASK),
				     PCCX_ISA_E_OPCODE, -1);
	}
	/* the upstream KICK word is an opcode-8 word like any other */
	expect_fault(0x8000000000000000ull, PCCX_ISA_E_OPCODE, -1);
}
END_TEST

/* Function 0xF is smul: a binary vector form, no flags, no scalar form. */
START_TEST(cvo_func_smul_forms)
{
	struct pccx_insn in;
	struct pccx_isa_fault f;

	ck_assert_int_eq(pccx__decode(put(cvo_word(PCCX_CVO_EXP, false, 0), PCCX_FID_D_func, 0xf),
				      &in, &f), PCCX_ISA_E_OK);
	ck_assert_uint_eq(in.f[PCCX_FID_D_func], PCCX_CVO_SMUL);
	expect_fault(put(cvo_word(PCCX_CVO_SMUL, false, 0), PCCX_FID_D_len, 0), PCCX_ISA_E_LENGTH,
		     PCCX_FID_D_len);
	expect_fault(cvo_word(PCCX_CVO_SMUL, false, PCCX_CVOF_ACCM), PCCX_ISA_E_FLAGS,
		     PCCX_FID_D_accm);
	expect_fault(cvo_word(PCCX_CVO_SMUL, true, 0), PCCX_ISA_E_FLAGS, PCCX_FID_D_sreg);
}
END_TEST

START_TEST(illegal_reserved_fields)
{
	const uint64_t legal[] = {
		asmf("gemv dest=0x00100 src=0x00000 wshape=1 fshape=2 +w_scale"),
		asmf("gemm dest=0x1ffff src=0x1ffff wshape=63 fshape=63 +accm +findemax"),
		asmf("memset cache=weight entry=63 a=65535 b=65535 c=65535"),
		asmf("memset cache=fmap entry=0 a=0 b=0 c=0"),
	};
	unsigned k, nres = 0;
	int i;

	for (k = 0; k < sizeof(legal) / sizeof(legal[0]); k++) {
		enum pccx_layout l = pccx__opcode_desc(pccx_opcode_of(legal[k]))->layout;

		expect_legal(legal[k]);
		for (i = 0; i < PCCX_NFIELDS; i++) {
			uint64_t v;

			if (pccx__fields[i].layout != l || pccx__fields[i].kind != PCCX_FK_MBZ)
				continue;
			nres++;
			for (v = 1; v <= fmax_of(i); v++)
				expect_fault(put(legal[k], i, v), PCCX_ISA_E_RESERVED, i);
		}
	}
	ck_assert_uint_eq(nres, 2 + 2 + 1 + 1);   /* A: rsv_flags, rsv; C: rsv */
}
END_TEST

START_TEST(rowmask_flag)
{
	uint64_t w = asmf("gemv dest=0x00100 src=0x00000 wshape=1 fshape=2 +w_scale +rowmask");
	struct pccx_insn in;
	struct pccx_isa_fault f;
	char txt[160];

	expect_legal(w);
	ck_assert_uint_eq(pccx_bits(w, 22, 22), 1);
	ck_assert_int_eq(pccx__decode(w, &in, &f), 0);
	ck_assert_uint_eq(in.f[PCCX_FID_A_rowmask], 1);
	pccx__disasm(w, txt, sizeof(txt));
	ck_assert_msg(strstr(txt, "+rowmask") != NULL, "%s", txt);
	ck_assert_uint_eq(asmf("%s", txt), w);
	/* GEMV only, and neither accm (both read the old dest) nor findemax */
	expect_fault((w & ~(0xfull << 60)) | (uint64_t)PCCX_OP_GEMM << 60, PCCX_ISA_E_FLAGS,
		     PCCX_FID_A_rowmask);
	expect_fault(put(w, PCCX_FID_A_accm, 1), PCCX_ISA_E_FLAGS, PCCX_FID_A_rowmask);
	expect_fault(put(w, PCCX_FID_A_findemax, 1), PCCX_ISA_E_FLAGS, PCCX_FID_A_rowmask);
	/* bits 21:20 stay reserved */
	expect_fault(w | 1ull << 21, PCCX_ISA_E_RESERVED, PCCX_FID_A_rsv_flags);
	expect_fault(w | 1ull << 20, PCCX_ISA_E_RESERVED, PCCX_FID_A_rsv_flags);
}
END_TEST

START_TEST(illegal_lanes_and_cache)
{
	uint64_t gemv = asmf("gemv dest=0x00100 src=0x00000 wshape=1 fshape=2");
	uint64_t gemm = asmf("gemm dest=0x00100 src=0x00000 wshape=1 fshape=2");
	uint64_t ms = asmf("memset cache=weight entry=3 a=16 b=32 c=0");
	uint32_t v;

	for (v = 1; v <= fmax_of(PCCX_FID_A_lanes); v++) {
		expect_fault(put(gemv, PCCX_FID_A_lanes, v), PCCX_ISA_E_FIELD_VALUE,
			     PCCX_FID_A_lanes);
		expect_fault(put(gemm, PCCX_FID_A_lanes, v), PCCX_ISA_E_FIELD_VALUE,
			     PCCX_FID_A_lanes);
	}
	expect_legal(put(ms, PCCX_FID_C_cache, 0));
	expect_legal(put(ms, PCCX_FID_C_cache, 1));
	expect_fault(put(ms, PCCX_FID_C_cache, 2), PCCX_ISA_E_FIELD_VALUE, PCCX_FID_C_cache);
	expect_fault(put(ms, PCCX_FID_C_cache, 3), PCCX_ISA_E_FIELD_VALUE, PCCX_FID_C_cache);
}
END_TEST

/* Each flag, alone, in each form of each function: allowed or FLAGS at that flag. */
START_TEST(illegal_cvo_flags)
{
	static const int fid[4] = { PCCX_FID_D_sub_emax, PCCX_FID_D_recip_scale, PCCX_FID_D_accm,
				    PCCX_FID_D_relu };
	static const uint32_t bit[4] = { PCCX_CVOF_SUB, PCCX_CVOF_RECIP, PCCX_CVOF_ACCM,
					 PCCX_CVOF_RELU };
	unsigned fn, refused = 0;
	int form, k;

	for (fn = 0; fn < 15; fn++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);

		for (form = 0; form < 2; form++) {
			uint32_t allowed = form ? cd->s_flags : cd->vec_flags;

			if (form && allowed == PCCX_CVO_NO_SFORM) {
				expect_fault(cvo_word(fn, true, 0), PCCX_ISA_E_FLAGS,
					     PCCX_FID_D_sreg);
				refused++;
				continue;
			}
			expect_legal(cvo_word(fn, form, 0));
			expect_legal(cvo_word(fn, form, allowed));
			expect_legal(cvo_word(fn, form, allowed | PCCX_PUT(D, async, 1)));
			for (k = 0; k < 4; k++) {
				uint64_t w = cvo_word(fn, form, bit[k]);

				if (allowed & bit[k]) {
					expect_legal(w);
				} else {
					expect_fault(w, PCCX_ISA_E_FLAGS, fid[k]);
					/* also when every allowed flag is set too */
					expect_fault(w | allowed, PCCX_ISA_E_FLAGS, fid[k]);
					refused++;
				}
			}
		}
	}
	/* mul and add take no flag in either form, lds none in its vector form; sum, sumsq and
	 * lds have no scalar form */
	ck_assert_uint_ge(refused, 2 * 8 + 4 + 3);
}
END_TEST

START_TEST(illegal_memcpy_route_and_unused)
{
	uint64_t in = asmf("memcpy dest=0x00010 src=0 desc=5 fshape=1 +from_host");
	uint64_t out = asmf("memcpy dest=0 src=0x00010 desc=5 fshape=1 +to_host +async");
	uint64_t cp = asmf("memcpy dest=0x00100 src=0x00010 desc=0 fshape=1");

	expect_fault(in | PCCX_PUT(B, to_host, 1), PCCX_ISA_E_ROUTE, PCCX_FID_B_to_host);
	expect_fault(op_word(PCCX_OP_MEMCPY) | PCCX_PUT(B, from_host, 1) | PCCX_PUT(B, to_host, 1),
		     PCCX_ISA_E_ROUTE, PCCX_FID_B_to_host);
	expect_fault(put(in, PCCX_FID_B_src, 1), PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_src);
	expect_fault(put(in, PCCX_FID_B_src, 0x1ffff), PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_src);
	expect_fault(put(out, PCCX_FID_B_dest, 1), PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_dest);
	expect_fault(put(cp, PCCX_FID_B_desc, 1), PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_desc);
	expect_fault(put(cp, PCCX_FID_B_desc, 0x1ffff), PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_desc);
}
END_TEST

START_TEST(illegal_cvo_unused_and_length)
{
	unsigned fn;

	for (fn = 0; fn < 15; fn++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);
		uint64_t vec = cvo_word(fn, false, 0);

		if (cd->cls == PCCX_CVOC_LOAD) {
			/* len is the element index: 0 and 0xffff are fine indices */
			expect_legal(put(vec, PCCX_FID_D_len, 0));
			expect_legal(put(vec, PCCX_FID_D_len, 0xffff));
			/* and there is no scalar form, whatever the index */
			expect_fault(put(cvo_word(fn, true, 0), PCCX_FID_D_len, 0),
				     PCCX_ISA_E_FLAGS, PCCX_FID_D_sreg);
			expect_fault(put(cvo_word(fn, true, 0), PCCX_FID_D_len, 0xffff),
				     PCCX_ISA_E_FLAGS, PCCX_FID_D_sreg);
			continue;
		}
		expect_fault(put(vec, PCCX_FID_D_len, 0), PCCX_ISA_E_LENGTH, PCCX_FID_D_len);
		expect_legal(put(vec, PCCX_FID_D_len, 1));
		expect_legal(put(vec, PCCX_FID_D_len, 0xffff));
		if (cd->s_flags == PCCX_CVO_NO_SFORM)
			continue;
		expect_fault(put(cvo_word(fn, true, 0), PCCX_FID_D_len, 1),
			     PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_len);
		if (cd->cls == PCCX_CVOC_UNARY)
			expect_fault(put(cvo_word(fn, true, 0), PCCX_FID_D_src, 1),
				     PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_src);
		else
			expect_legal(put(cvo_word(fn, true, 0), PCCX_FID_D_src, 0x1ffff));
	}
}
END_TEST

/* ---- disassembler ------------------------------------------------------------ */

START_TEST(disasm_documented_examples)
{
	static const char *const lines[] = {
		"gemv dest=0x00400 src=0x00000 wshape=1 fshape=0 +w_scale",
		"memcpy dest=0x00000 src=0x00000 desc=3 fshape=0 +from_host +async",
		"memset cache=weight entry=1 a=2048 b=2048 c=0",
		"cvo func=exp src=0x00100 dst=0x00100 len=2048 +sub_emax",
		"gemm dest=0x1ffff src=0x00001 wshape=63 fshape=0 +findemax +accm +w_scale",
		"memcpy dest=0x00000 src=0x1bfff desc=131071 fshape=63 +to_host",
		"memset cache=fmap entry=0 a=0 b=65535 c=1",
		"cvo func=rsqrt src=0x00000 dst=0x00007 len=0 +sreg +relu +async",
		"cvo func=lds src=0x00009 dst=0x00008 len=65535",
	};
	unsigned k;

	for (k = 0; k < sizeof(lines) / sizeof(lines[0]); k++) {
		char buf[96];
		uint64_t w = asmf("%s", lines[k]);

		ck_assert_int_eq(pccx__disasm(w, buf, sizeof(buf)), (int)strlen(lines[k]));
		ck_assert_str_eq(buf, lines[k]);
	}
	ck_assert_uint_eq(asmf("%s", lines[0]),
			  op_word(0) | PCCX_PUT(A, dest, 0x400) | PCCX_PUT(A, wshape, 1) |
			  PCCX_PUT(A, w_scale, 1));
}
END_TEST

START_TEST(disasm_illegal_word_text)
{
	char buf[200];

	ck_assert_int_gt(pccx__disasm(0x8000000000000000ull, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, ".word 0x8000000000000000  # OPCODE: opcode is not defined "
			      "(0x5-0xF are illegal)");
	pccx__disasm(op_word(PCCX_OP_GEMV) | PCCX_PUT(A, lanes, 3), buf, sizeof(buf));
	ck_assert_str_eq(buf, ".word 0x0000000000000018  # FIELD_VALUE: field holds a value that "
			      "is not defined (field lanes)");
}
END_TEST

START_TEST(disasm_buffer_size)
{
	const uint64_t words[] = {
		asmf("gemm dest=0x1ffff src=0x1ffff wshape=63 fshape=63 +findemax +accm +w_scale"),
		0x4f00000000000000ull,
		op_word(PCCX_OP_CVO) | PCCX_PUT(D, func, PCCX_CVO_MUL) | PCCX_CVOF_RECIP,
	};
	unsigned k;

	for (k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		char full[200], *buf;
		int n = pccx__disasm(words[k], full, sizeof(full));

		ck_assert_int_gt(n, 0);
		/* exactly the bytes needed: in a heap block of that size, so ASan sees overruns */
		buf = malloc((size_t)n + 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(pccx__disasm(words[k], buf, (size_t)n + 1), n);
		ck_assert_str_eq(buf, full);
		free(buf);
		/* one byte short: -1, truncated, still terminated */
		buf = malloc((size_t)n);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(pccx__disasm(words[k], buf, (size_t)n), -1);
		ck_assert_uint_eq(strlen(buf), (size_t)n - 1);
		ck_assert(memcmp(buf, full, (size_t)n - 1) == 0);
		free(buf);
		/* size 0 writes nothing */
		ck_assert_int_eq(pccx__disasm(words[k], NULL, 0), -1);
	}
}
END_TEST

/* The longest legal instruction of each shape fits the documented 96 bytes. */
START_TEST(disasm_longest_fits_96)
{
	unsigned fn;
	char buf[200];
	int n;

	for (fn = 0; fn < 15; fn++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);
		int form;

		for (form = 0; form < 2; form++) {
			uint32_t fl = form ? cd->s_flags : cd->vec_flags;
			uint64_t w;

			if (fl == PCCX_CVO_NO_SFORM)
				continue;
			w = cvo_word(fn, form, fl | PCCX_PUT(D, async, 1));
			w = put(w, PCCX_FID_D_dst, 0x1ffff);
			if (!(form && cd->cls == PCCX_CVOC_UNARY))
				w = put(w, PCCX_FID_D_src, 0x1ffff);
			if (!form || cd->cls == PCCX_CVOC_LOAD)
				w = put(w, PCCX_FID_D_len, 65535);
			expect_legal(w);
			n = pccx__disasm(w, buf, sizeof(buf));
			ck_assert_msg(n > 0 && n < 96, "%d bytes: %s", n, buf);
		}
	}
	n = pccx__disasm(asmf("memcpy dest=0x1ffff src=0 desc=131071 fshape=63 +from_host +async"),
			 buf, sizeof(buf));
	ck_assert(n > 0 && n < 96);
}
END_TEST

/* ---- assembler ---------------------------------------------------------------- */

static void asm_err(const char *line, int err, size_t column, int field)
{
	struct pccx_asm_error e;
	uint64_t w = 0x1234;
	bool has = true;
	int rc = pccx__asm_line(line, strlen(line), &w, &has, &e);

	ck_assert_msg(rc == err && e.err == err, "'%s': expected %s, got '%s'", line,
		      pccx__asm_strerror(err), pccx__asm_strerror(rc));
	ck_assert_msg(e.column == column, "'%s': %s at column %zu, expected %zu", line,
		      pccx__asm_strerror(err), e.column, column);
	ck_assert_msg(e.field == field, "'%s': field %d, expected %d", line, e.field, field);
	ck_assert_msg(!has, "'%s': error but has_word", line);
}

static void asm_blank(const char *line)
{
	struct pccx_asm_error e;
	uint64_t w;
	bool has = true;

	ck_assert_int_eq(pccx__asm_line(line, strlen(line), &w, &has, &e), PCCX_ASM_E_OK);
	ck_assert_msg(!has, "'%s' produced a word", line);
}

START_TEST(asm_mnemonic)
{
	asm_err("gmev dest=0 src=0 wshape=0 fshape=0", PCCX_ASM_E_MNEMONIC, 0, -1);
	asm_err("  \tGEMV dest=0 src=0 wshape=0 fshape=0", PCCX_ASM_E_MNEMONIC, 3, -1);
	asm_err("lbl: gem dest=0", PCCX_ASM_E_MNEMONIC, 5, -1);
	asm_err("word 1", PCCX_ASM_E_MNEMONIC, 0, -1);
	asm_err("gemvv", PCCX_ASM_E_MNEMONIC, 0, -1);
}
END_TEST

START_TEST(asm_field)
{
	/* unknown, from another layout, reserved, and must-be-zero fields are not writable */
	asm_err("gemv dest=0 bogus=1 src=0 wshape=0 fshape=0", PCCX_ASM_E_FIELD, 12, -1);
	asm_err("gemv func=exp", PCCX_ASM_E_FIELD, 5, -1);
	asm_err("gemv dest=0 src=0 wshape=0 fshape=0 rsv=0", PCCX_ASM_E_FIELD, 36, -1);
	asm_err("gemv dest=0 src=0 wshape=0 fshape=0 lanes=0", PCCX_ASM_E_FIELD, 36, -1);
	asm_err("memset cache=fmap entry=0 a=1 b=1 c=1 +rsv", PCCX_ASM_E_FIELD, 39, -1);
	asm_err("cvo func=exp src=0 dst=0 len=8 +w_scale", PCCX_ASM_E_FIELD, 32, -1);
}
END_TEST

START_TEST(asm_duplicate)
{
	asm_err("cvo func=exp src=0 dst=0 len=8 src=1", PCCX_ASM_E_DUPLICATE, 31,
		PCCX_FID_D_src);
	asm_err("cvo func=exp src=0 dst=0 len=8 +relu +relu", PCCX_ASM_E_DUPLICATE, 38,
		PCCX_FID_D_relu);
	asm_err("memset cache=fmap cache=weight", PCCX_ASM_E_DUPLICATE, 18, PCCX_FID_C_cache);
}
END_TEST

START_TEST(asm_missing)
{
	asm_err("gemv dest=0 src=0 wshape=0", PCCX_ASM_E_MISSING, 26, PCCX_FID_A_fshape);
	asm_err("gemv src=0 wshape=0 fshape=0   # comment", PCCX_ASM_E_MISSING, 31,
		PCCX_FID_A_dest);
	asm_err("memcpy dest=0 src=0 fshape=0 +from_host", PCCX_ASM_E_MISSING, 39,
		PCCX_FID_B_desc);
	asm_err("memset", PCCX_ASM_E_MISSING, 6, PCCX_FID_C_cache);
	asm_err("cvo src=0 dst=0 len=1", PCCX_ASM_E_MISSING, 21, PCCX_FID_D_func);
}
END_TEST

START_TEST(asm_number)
{
	asm_err("cvo func=exp src=0 dst=0 len=12a", PCCX_ASM_E_NUMBER, 29, PCCX_FID_D_len);
	asm_err("cvo func=exp src=0 dst=0 len=", PCCX_ASM_E_NUMBER, 29, PCCX_FID_D_len);
	asm_err("cvo func=exp src=0x dst=0 len=1", PCCX_ASM_E_NUMBER, 17, PCCX_FID_D_src);
	asm_err("cvo func=exp src=0xg dst=0 len=1", PCCX_ASM_E_NUMBER, 17, PCCX_FID_D_src);
	asm_err("cvo func=exp src=-1 dst=0 len=1", PCCX_ASM_E_NUMBER, 17, PCCX_FID_D_src);
	asm_err("cvo func=exp src=+1 dst=0 len=1", PCCX_ASM_E_NUMBER, 17, PCCX_FID_D_src);
	asm_err("cvo func=exp src=1e3 dst=0 len=1", PCCX_ASM_E_NUMBER, 17, PCCX_FID_D_src);
	asm_err(".word", PCCX_ASM_E_NUMBER, 5, -1);
	asm_err(".word zz", PCCX_ASM_E_NUMBER, 6, -1);
	asm_err(".word 12,", PCCX_ASM_E_NUMBER, 6, -1);
	/* 64-bit overflow is not a number (in a field too: NUMBER, not WIDTH) */
	asm_err(".word 18446744073709551616", PCCX_ASM_E_NUMBER, 6, -1);
	asm_err(".word 99999999999999999999", PCCX_ASM_E_NUMBER, 6, -1);
	asm_err(".word 0x10000000000000000", PCCX_ASM_E_NUMBER, 6, -1);
	asm_err("cvo func=exp src=0 dst=0 len=18446744073709551616", PCCX_ASM_E_NUMBER, 29,
		PCCX_FID_D_len);
}
END_TEST

/* A number must have at least one digit. */
START_TEST(asm_number_needs_a_digit)
{
	asm_err(".word _", PCCX_ASM_E_NUMBER, 6, -1);
	asm_err(".word 0x_", PCCX_ASM_E_NUMBER, 6, -1);
	asm_err("cvo func=exp src=0 dst=0 len=__", PCCX_ASM_E_NUMBER, 29, PCCX_FID_D_len);
}
END_TEST

START_TEST(asm_width)
{
	struct pccx_asm_error e;
	uint64_t w;
	bool has;
	const char *l = "cvo func=exp src=0 dst=0 len=65536";

	asm_err(l, PCCX_ASM_E_WIDTH, 29, PCCX_FID_D_len);
	ck_assert_int_eq(pccx__asm_line(l, strlen(l), &w, &has, &e), PCCX_ASM_E_WIDTH);
	ck_assert_uint_eq(e.value, 65536);
	asm_err("cvo func=exp src=0x20000 dst=0 len=1", PCCX_ASM_E_WIDTH, 17, PCCX_FID_D_src);
	asm_err("memset cache=fmap entry=64 a=0 b=0 c=0", PCCX_ASM_E_WIDTH, 24, PCCX_FID_C_entry);
	asm_err("memcpy dest=0 src=0 desc=131072 fshape=0 +to_host", PCCX_ASM_E_WIDTH, 25,
		PCCX_FID_B_desc);
	asm_err("cvo func=exp src=0 dst=0 len=18446744073709551615", PCCX_ASM_E_WIDTH, 29,
		PCCX_FID_D_len);
	/* the largest values that fit are fine */
	ck_assert_uint_eq(PCCX_GET(asmf("cvo func=exp src=0x1ffff dst=0 len=65535"), D, len),
			  65535);
	ck_assert_uint_eq(PCCX_GET(asmf("memset cache=fmap entry=63 a=0 b=0 c=0"), C, entry), 63);
}
END_TEST

START_TEST(asm_enum)
{
	asm_err("cvo func=bogus src=0 dst=0 len=1", PCCX_ASM_E_ENUM, 9, PCCX_FID_D_func);
	asm_err("cvo func=14 src=0 dst=0 len=1", PCCX_ASM_E_ENUM, 9, PCCX_FID_D_func);
	asm_err("cvo func=EXP src=0 dst=0 len=1", PCCX_ASM_E_ENUM, 9, PCCX_FID_D_func);
	asm_err("cvo func= src=0 dst=0 len=1", PCCX_ASM_E_ENUM, 9, PCCX_FID_D_func);
	asm_err("memset cache=2 entry=0 a=0 b=0 c=0", PCCX_ASM_E_ENUM, 13, PCCX_FID_C_cache);
	asm_err("memset cache=fma entry=0 a=0 b=0 c=0", PCCX_ASM_E_ENUM, 13, PCCX_FID_C_cache);
	asm_err("memset cache=fmapx entry=0 a=0 b=0 c=0", PCCX_ASM_E_ENUM, 13, PCCX_FID_C_cache);
}
END_TEST

/*
 * A value is everything up to the next blank, NUL bytes included (a line is a
 * length, not a C string): comparing it with a name must stop at the name's
 * end. Under ASan the over-read past "fmap" is reported by itself.
 */
START_TEST(asm_enum_with_nul_bytes)
{
	static const char line[] = "memset cache=fmap\0\0\0\0\0\0\0\0 entry=0 a=0 b=0 c=0";
	static const char func[] = "cvo func=exp\0\0\0\0\0\0\0\0\0\0\0\0 src=0 dst=0 len=1";
	struct pccx_asm_error e;
	uint64_t w;
	bool has;

	ck_assert_int_eq(pccx__asm_line(line, sizeof(line) - 1, &w, &has, &e), PCCX_ASM_E_ENUM);
	ck_assert_uint_eq(e.column, 13);
	ck_assert_int_eq(e.field, PCCX_FID_C_cache);
	ck_assert_int_eq(pccx__asm_line(func, sizeof(func) - 1, &w, &has, &e), PCCX_ASM_E_ENUM);
	ck_assert_uint_eq(e.column, 9);
}
END_TEST

START_TEST(asm_flag)
{
	/* a value field written as a flag, and a flag written with a value */
	asm_err("gemv +dest src=0 wshape=0 fshape=0", PCCX_ASM_E_FLAG, 6, PCCX_FID_A_dest);
	asm_err("cvo func=exp src=0 dst=0 len=8 relu=1", PCCX_ASM_E_FLAG, 31, PCCX_FID_D_relu);
	asm_err("memcpy from_host=1 dest=0 src=0 desc=0 fshape=0", PCCX_ASM_E_FLAG, 7,
		PCCX_FID_B_from_host);
}
END_TEST

START_TEST(asm_syntax)
{
	asm_err("gemv dest 5 src=0 wshape=0 fshape=0", PCCX_ASM_E_SYNTAX, 9, PCCX_FID_A_dest);
	asm_err("cvo func=exp src=0 dst=0 len=8 +relu=1", PCCX_ASM_E_SYNTAX, 36, PCCX_FID_D_relu);
	asm_err("gemv =1", PCCX_ASM_E_SYNTAX, 5, -1);
	asm_err("cvo func=exp src=0 dst=0 len=8 +", PCCX_ASM_E_SYNTAX, 32, -1);
	asm_err("cvo func=exp src=0 dst=0 len=8 + relu", PCCX_ASM_E_SYNTAX, 32, -1);
	asm_err("!gemv", PCCX_ASM_E_SYNTAX, 0, -1);
	asm_err("  :", PCCX_ASM_E_SYNTAX, 2, -1);
	asm_err(".word 1 2", PCCX_ASM_E_SYNTAX, 8, -1);
	asm_err("lbl: : gemv", PCCX_ASM_E_SYNTAX, 5, -1);
}
END_TEST

START_TEST(asm_illegal)
{
	const char *l = "  memcpy dest=0 src=0 desc=0 fshape=0 +from_host +to_host";
	struct pccx_asm_error e;
	uint64_t w;
	bool has;

	asm_err(l, PCCX_ASM_E_ILLEGAL, 2, PCCX_FID_B_to_host);
	ck_assert_int_eq(pccx__asm_line(l, strlen(l), &w, &has, &e), PCCX_ASM_E_ILLEGAL);
	ck_assert_int_eq(e.isa_err, PCCX_ISA_E_ROUTE);
	ck_assert_uint_eq(e.value, op_word(PCCX_OP_MEMCPY) | PCCX_PUT(B, from_host, 1) |
				   PCCX_PUT(B, to_host, 1));

	l = "cvo func=exp src=0 dst=0 len=0";
	asm_err(l, PCCX_ASM_E_ILLEGAL, 0, PCCX_FID_D_len);
	ck_assert_int_eq(pccx__asm_line(l, strlen(l), &w, &has, &e), PCCX_ASM_E_ILLEGAL);
	ck_assert_int_eq(e.isa_err, PCCX_ISA_E_LENGTH);

	l = "cvo func=sum src=0 dst=0 len=0 +sreg";
	asm_err(l, PCCX_ASM_E_ILLEGAL, 0, PCCX_FID_D_sreg);
	ck_assert_int_eq(pccx__asm_line(l, strlen(l), &w, &has, &e), PCCX_ASM_E_ILLEGAL);
	ck_assert_int_eq(e.isa_err, PCCX_ISA_E_FLAGS);

	l = "x: cvo func=exp src=1 dst=0 len=0 +sreg";
	asm_err(l, PCCX_ASM_E_ILLEGAL, 3, PCCX_FID_D_src);
	ck_assert_int_eq(pccx__asm_line(l, strlen(l), &w, &has, &e), PCCX_ASM_E_ILLEGAL);
	ck_assert_int_eq(e.isa_err, PCCX_ISA_E_UNUSED_FIELD);

	/* an error leaves isa_err 0 when the word was never built */
	l = "gemv";
	ck_assert_int_eq(pccx__asm_line(l, strlen(l), &w, &has, &e), PCCX_ASM_E_MISSING);
	ck_assert_int_eq(e.isa_err, 0);
}
END_TEST

START_TEST(asm_comments_labels_blank)
{
	uint64_t ref = asmf("gemv dest=0x00400 src=0x00000 wshape=1 fshape=0");

	asm_blank("");
	asm_blank("   \t  ");
	asm_blank("# a comment: gemv dest=0");
	asm_blank("; another comment");
	asm_blank("   # indented");
	asm_blank("loop:");
	asm_blank("  loop_2.x:   ; label and comment");
	asm_blank("\r");
	asm_blank("\n");
	ck_assert_uint_eq(asmf("start: gemv dest=0x00400 src=0x00000 wshape=1 fshape=0"), ref);
	ck_assert_uint_eq(asmf("start:gemv dest=0x00400 src=0x00000 wshape=1 fshape=0"), ref);
	ck_assert_uint_eq(asmf("gemv dest=0x00400 src=0x00000 wshape=1 fshape=0 # +w_scale"), ref);
	ck_assert_uint_eq(asmf("gemv dest=0x00400 src=0x00000 wshape=1 fshape=0;+accm"), ref);
	ck_assert_uint_eq(asmf("\tgemv\tdest=0x00400   src=0x00000\twshape=1 fshape=0 \r"), ref);
	/* any field order */
	ck_assert_uint_eq(asmf("gemv fshape=0 wshape=1 src=0 dest=0x400"), ref);
	/* the line ends at its length, and at a newline */
	{
		const char *two = "gemv dest=0x00400 src=0x00000 wshape=1 fshape=0\nrubbish";
		struct pccx_asm_error e;
		uint64_t w = 0;
		bool has = false;

		ck_assert_int_eq(pccx__asm_line(two, strlen(two), &w, &has, &e), PCCX_ASM_E_OK);
		ck_assert(has);
		ck_assert_uint_eq(w, ref);
		ck_assert_int_eq(pccx__asm_line(two, 48, &w, &has, &e), PCCX_ASM_E_OK);
		ck_assert_uint_eq(w, ref);
		ck_assert_int_eq(pccx__asm_line(two, 47, &w, &has, &e), PCCX_ASM_E_OK);
		ck_assert_uint_eq(w, ref);
		ck_assert_int_eq(pccx__asm_line(two, 46, &w, &has, &e), PCCX_ASM_E_NUMBER);
		ck_assert_int_eq(pccx__asm_line(two, 0, &w, &has, &e), PCCX_ASM_E_OK);
		ck_assert(!has);
	}
	ck_assert_uint_eq(asmf("lbl: .word 0x0000000000000001  # GEMV? no"), 1);
}
END_TEST

START_TEST(asm_numbers)
{
	ck_assert_uint_eq(asmf(".word 0"), 0);
	ck_assert_uint_eq(asmf(".word 18446744073709551615"), ~0ull);
	ck_assert_uint_eq(asmf(".word 0xffffffffffffffff"), ~0ull);
	ck_assert_uint_eq(asmf(".word 0XFFFFFFFFFFFFFFFF"), ~0ull);
	ck_assert_uint_eq(asmf(".word 0x00000000000000000000000000000001"), 1);
	ck_assert_uint_eq(asmf(".word 000000000000000000000000000000042"), 42);
	ck_assert_uint_eq(asmf(".word 0xAbCdEf0123456789"), 0xabcdef0123456789ull);
	ck_assert_uint_eq(asmf(".word 9223372036854775808"), 1ull << 63);
	/* decimal and hex name the same field values */
	ck_assert_uint_eq(asmf("cvo func=exp src=0x10 dst=0X20 len=0x800"),
			  asmf("cvo func=exp src=16 dst=32 len=2048"));
	ck_assert_uint_eq(PCCX_GET(asmf("cvo func=exp src=0x1FfFf dst=0 len=1"), D, src), 0x1ffff);
	/* leading zeros do not make a number octal */
	ck_assert_uint_eq(PCCX_GET(asmf("cvo func=exp src=010 dst=0 len=1"), D, src), 10);
}
END_TEST

/* Every opcode and CVO function by name, both forms, round-trip through the text. */
START_TEST(asm_every_mnemonic)
{
	unsigned fn;
	char buf[128];

	for (fn = 0; fn < 15; fn++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(fn);
		uint64_t w = asmf("cvo func=%s src=0x10 dst=0x20 len=%u", cd->name,
				  cd->cls == PCCX_CVOC_LOAD ? 3 : 16);

		ck_assert_uint_eq(w, cvo_word(fn, false, 0));
		pccx__disasm(w, buf, sizeof(buf));
		ck_assert_uint_eq(asmf("%s", buf), w);
	}
	ck_assert_uint_eq(pccx_opcode_of(asmf("gemv dest=0 src=0 wshape=0 fshape=0")), 0);
	ck_assert_uint_eq(pccx_opcode_of(asmf("gemm dest=0 src=0 wshape=0 fshape=0")), 1);
	ck_assert_uint_eq(pccx_opcode_of(asmf("memcpy dest=0 src=0 desc=0 fshape=0")), 2);
	ck_assert_uint_eq(pccx_opcode_of(asmf("memset cache=fmap entry=0 a=0 b=0 c=0")), 3);
	ck_assert_uint_eq(pccx_opcode_of(asmf("cvo func=lds src=0 dst=0 len=0")), 4);
}
END_TEST

static Suite *isa_suite(void)
{
	Suite *s = suite_create("isa");
	TCase *tc;

	tc = tcase_create("table");
	tcase_add_test(tc, table_bits_covered_once);
	tcase_add_test(tc, table_names_unique);
	tcase_add_test(tc, table_ids_and_constants);
	tcase_add_test(tc, table_field_kinds);
	tcase_add_test(tc, table_opcodes_once);
	tcase_add_test(tc, table_cvo_functions_once);
	tcase_add_test(tc, table_enum_names);
	tcase_add_test(tc, table_error_names);
	tcase_add_test(tc, field_find);
	suite_add_tcase(s, tc);

	tc = tcase_create("codec");
	tcase_add_test(tc, encode_each_field_extremes);
	tcase_add_test(tc, encode_all_fields_max);
	tcase_add_test(tc, encode_refuses_one_past_max);
	tcase_add_test(tc, encode_refuses_undefined_opcode);
	tcase_add_test(tc, decode_fills_fields_of_illegal_words);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, random_legal_round_trip);
	tcase_add_test(tc, random_uniform_round_trip);
	suite_add_tcase(s, tc);

	tc = tcase_create("illegal");
	tcase_add_test(tc, illegal_opcodes);
	tcase_add_test(tc, cvo_func_smul_forms);
	tcase_add_test(tc, illegal_reserved_fields);
	tcase_add_test(tc, illegal_lanes_and_cache);
	tcase_add_test(tc, rowmask_flag);
	tcase_add_test(tc, illegal_cvo_flags);
	tcase_add_test(tc, illegal_memcpy_route_and_unused);
	tcase_add_test(tc, illegal_cvo_unused_and_length);
	suite_add_tcase(s, tc);

	tc = tcase_create("disasm");
	tcase_add_test(tc, disasm_documented_examples);
	tcase_add_test(tc, disasm_illegal_word_text);
	tcase_add_test(tc, disasm_buffer_size);
	tcase_add_test(tc, disasm_longest_fits_96);
	suite_add_tcase(s, tc);

	tc = tcase_create("asm");
	tcase_add_test(tc, asm_mnemonic);
	tcase_add_test(tc, asm_field);
	tcase_add_test(tc, asm_duplicate);
	tcase_add_test(tc, asm_missing);
	tcase_add_test(tc, asm_number);
	tcase_add_test(tc, asm_number_needs_a_digit);
	tcase_add_test(tc, asm_width);
	tcase_add_test(tc, asm_enum);
	tcase_add_test(tc, asm_enum_with_nul_bytes);
	tcase_add_test(tc, asm_flag);
	tcase_add_test(tc, asm_syntax);
	tcase_add_test(tc, asm_illegal);
	tcase_add_test(tc, asm_comments_labels_blank);
	tcase_add_test(tc, asm_numbers);
	tcase_add_test(tc, asm_every_mnemonic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(isa_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
