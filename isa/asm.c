// SPDX-License-Identifier: MIT
/* Disassembler and assembler, both driven by the field table. */
#include "pccx_asm.h"

/* ---- tiny freestanding formatter ---------------------------------------- */

struct out {
	char *buf;
	size_t size, len;
	bool overflow;
};

static void put_c(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	else
		o->overflow = true;
	o->len++;
}

static void put_s(struct out *o, const char *s)
{
	while (*s)
		put_c(o, *s++);
}

static void put_u(struct out *o, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		put_c(o, tmp[--n]);
}

static void put_hex(struct out *o, uint64_t v, int digits)
{
	static const char hex[] = "0123456789abcdef";
	int i;

	put_s(o, "0x");
	for (i = digits - 1; i >= 0; i--)
		put_c(o, hex[(v >> (4 * i)) & 0xf]);
}

static int finish(struct out *o)
{
	if (o->size)
		o->buf[o->len < o->size ? o->len : o->size - 1] = '\0';
	return o->overflow ? -1 : (int)o->len;
}

static const char *enum_name(int fid, uint32_t v)
{
	if (fid == PCCX_FID_C_cache)
		return pccx__cache_name(v);
	if (fid == PCCX_FID_D_func) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(v);

		return cd ? cd->name : NULL;
	}
	return NULL;
}

int pccx__disasm(uint64_t w, char *buf, size_t size)
{
	struct out o = { buf, size, 0, false };
	struct pccx_insn in;
	struct pccx_isa_fault f;
	const struct pccx_opcode_desc *od;
	int i;

	if (pccx__decode(w, &in, &f) != PCCX_ISA_E_OK) {
		put_s(&o, ".word ");
		put_hex(&o, w, 16);
		put_s(&o, "  # ");
		put_s(&o, pccx__isa_errname(f.err));
		put_s(&o, ": ");
		put_s(&o, pccx__isa_strerror(f.err));
		if (f.field >= 0) {
			put_s(&o, " (field ");
			put_s(&o, pccx__fields[f.field].name);
			put_c(&o, ')');
		}
		return finish(&o);
	}
	od = pccx__opcode_desc(in.opcode);
	put_s(&o, od->mnemonic);
	for (i = 0; i < PCCX_NFIELDS; i++) {
		const struct pccx_field_desc *fd = &pccx__fields[i];

		if (fd->layout != od->layout || fd->kind == PCCX_FK_FLAG ||
		    fd->kind == PCCX_FK_MBZ || fd->kind == PCCX_FK_ZERO)
			continue;
		put_c(&o, ' ');
		put_s(&o, fd->name);
		put_c(&o, '=');
		switch (fd->kind) {
		case PCCX_FK_L2:
			put_hex(&o, in.f[i], 5);
			break;
		case PCCX_FK_ENUM:
			put_s(&o, enum_name(i, in.f[i]));
			break;
		default:
			put_u(&o, in.f[i]);
			break;
		}
	}
	for (i = 0; i < PCCX_NFIELDS; i++) {
		const struct pccx_field_desc *fd = &pccx__fields[i];

		if (fd->layout == od->layout && fd->kind == PCCX_FK_FLAG && in.f[i]) {
			put_s(&o, " +");
			put_s(&o, fd->name);
		}
	}
	return finish(&o);
}

/* ---- assembler ------------------------------------------------------------ */

static const char *const asm_errtext[PCCX_ASM_E_COUNT] = {
#define PCCX_ASM_ERR_TEXT(name, text) [PCCX_ASM_E_##name] = text,
	PCCX_ASM_ERR_LIST(PCCX_ASM_ERR_TEXT)
#undef PCCX_ASM_ERR_TEXT
};

const char *pccx__asm_strerror(int err)
{
	if (err < 0 || err >= PCCX_ASM_E_COUNT)
		return "unknown assembler error";
	return asm_errtext[err];
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.';
}

static bool same_word(const char *a, size_t alen, const char *b)
{
	size_t i;

	/* b is NUL-terminated, a is not and may hold anything (even NUL bytes) */
	for (i = 0; i < alen; i++)
		if (b[i] == '\0' || b[i] != a[i])
			return false;
	return b[alen] == '\0';
}

static int aerr(struct pccx_asm_error *e, int err, size_t col, int field, uint64_t value)
{
	if (e) {
		e->err = err;
		e->column = col;
		e->field = field;
		e->value = value;
	}
	return err;
}

/* Parse a decimal or 0x-hex number that fits in 64 bits. */
static bool parse_num(const char *s, size_t n, uint64_t *v)
{
	uint64_t acc = 0;
	size_t i = 0, digits = 0;
	unsigned base = 10;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == n)
		return false;
	for (; i < n; i++) {
		unsigned d;
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else if (c == '_')
			continue;
		else
			return false;
		if (acc > (~0ull - d) / base)
			return false;
		acc = acc * base + d;
		digits++;
	}
	if (!digits)
		return false;
	*v = acc;
	return true;
}

static bool parse_enum(int fid, const char *s, size_t n, uint32_t *v)
{
	uint32_t i;

	for (i = 0; i < 16; i++) {
		const char *name = enum_name(fid, i);

		if (name && same_word(s, n, name)) {
			*v = i;
			return true;
		}
	}
	return false;
}

int pccx__asm_line(const char *line, size_t len, uint64_t *w, bool *has_word,
		   struct pccx_asm_error *e)
{
	const struct pccx_opcode_desc *od = NULL;
	struct pccx_insn in;
	bool given[PCCX_NFIELDS];
	size_t i = 0, end = len, tok;
	unsigned op;
	int k;

	*has_word = false;
	aerr(e, PCCX_ASM_E_OK, 0, -1, 0);
	if (e)
		e->isa_err = 0;
	for (k = 0; (size_t)k < len; k++)
		if (line[k] == '#' || line[k] == ';' || line[k] == '\n') {
			end = (size_t)k;
			break;
		}
	while (i < end && is_space(line[i]))
		i++;
	/* optional label */
	tok = i;
	while (i < end && is_ident(line[i]))
		i++;
	if (i < end && line[i] == ':' && i > tok) {
		i++;
		while (i < end && is_space(line[i]))
			i++;
		tok = i;
		while (i < end && is_ident(line[i]))
			i++;
	}
	if (i == tok) {
		while (i < end && is_space(line[i]))
			i++;
		return i == end ? PCCX_ASM_E_OK : aerr(e, PCCX_ASM_E_SYNTAX, i, -1, 0);
	}

	if (same_word(line + tok, i - tok, ".word")) {
		size_t s;
		uint64_t v;

		while (i < end && is_space(line[i]))
			i++;
		s = i;
		while (i < end && !is_space(line[i]))
			i++;
		if (!parse_num(line + s, i - s, &v))
			return aerr(e, PCCX_ASM_E_NUMBER, s, -1, 0);
		while (i < end && is_space(line[i]))
			i++;
		if (i != end)
			return aerr(e, PCCX_ASM_E_SYNTAX, i, -1, 0);
		*w = v;
		*has_word = true;
		return PCCX_ASM_E_OK;
	}

	for (op = 0; op < 16 && !od; op++) {
		const struct pccx_opcode_desc *d = pccx__opcode_desc(op);

		if (d && same_word(line + tok, i - tok, d->mnemonic))
			od = d;
	}
	if (!od)
		return aerr(e, PCCX_ASM_E_MNEMONIC, tok, -1, 0);

	for (k = 0; k < PCCX_NFIELDS; k++) {
		in.f[k] = 0;
		given[k] = false;
	}
	in.opcode = od->value;

	for (;;) {
		size_t name, name_end;
		bool flag = false;
		int fid;

		while (i < end && is_space(line[i]))
			i++;
		if (i == end)
			break;
		if (line[i] == '+') {
			flag = true;
			i++;
		}
		name = i;
		while (i < end && is_ident(line[i]))
			i++;
		name_end = i;
		if (name_end == name)
			return aerr(e, PCCX_ASM_E_SYNTAX, name, -1, 0);
		fid = pccx__field_find(od->layout, line + name, name_end - name);
		if (fid < 0 || pccx__fields[fid].kind == PCCX_FK_MBZ ||
		    pccx__fields[fid].kind == PCCX_FK_ZERO)
			return aerr(e, PCCX_ASM_E_FIELD, name, -1, 0);
		if (given[fid])
			return aerr(e, PCCX_ASM_E_DUPLICATE, name, fid, 0);
		given[fid] = true;
		if (flag) {
			if (pccx__fields[fid].kind != PCCX_FK_FLAG)
				return aerr(e, PCCX_ASM_E_FLAG, name, fid, 0);
			if (i < end && !is_space(line[i]))
				return aerr(e, PCCX_ASM_E_SYNTAX, i, fid, 0);
			in.f[fid] = 1;
			continue;
		}
		if (pccx__fields[fid].kind == PCCX_FK_FLAG)
			return aerr(e, PCCX_ASM_E_FLAG, name, fid, 0);
		if (i >= end || line[i] != '=')
			return aerr(e, PCCX_ASM_E_SYNTAX, i, fid, 0);
		i++;
		{
			size_t v0 = i;
			uint64_t v;
			uint32_t ev;
			const struct pccx_field_desc *fd = &pccx__fields[fid];
			uint64_t maxv = pccx_field_mask(fd->msb, fd->lsb) >> fd->lsb;

			while (i < end && !is_space(line[i]))
				i++;
			if (fd->kind == PCCX_FK_ENUM) {
				if (!parse_enum(fid, line + v0, i - v0, &ev))
					return aerr(e, PCCX_ASM_E_ENUM, v0, fid, 0);
				in.f[fid] = ev;
				continue;
			}
			if (!parse_num(line + v0, i - v0, &v))
				return aerr(e, PCCX_ASM_E_NUMBER, v0, fid, 0);
			if (v > maxv)
				return aerr(e, PCCX_ASM_E_WIDTH, v0, fid, v);
			in.f[fid] = (uint32_t)v;
		}
	}
	for (k = 0; k < PCCX_NFIELDS; k++) {
		const struct pccx_field_desc *fd = &pccx__fields[k];

		if (fd->layout == od->layout && !given[k] && fd->kind != PCCX_FK_FLAG &&
		    fd->kind != PCCX_FK_MBZ && fd->kind != PCCX_FK_ZERO)
			return aerr(e, PCCX_ASM_E_MISSING, end, k, 0);
	}
	{
		struct pccx_isa_fault f;
		struct pccx_insn chk;
		uint64_t word;

		if (pccx__encode(&in, &word, &f))
			return aerr(e, PCCX_ASM_E_WIDTH, tok, f.field, 0);
		if (pccx__decode(word, &chk, &f)) {
			if (e)
				e->isa_err = f.err;
			return aerr(e, PCCX_ASM_E_ILLEGAL, tok, f.field, word);
		}
		*w = word;
		*has_word = true;
	}
	return PCCX_ASM_E_OK;
}
