/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: decoder, disassembler and assembler on arbitrary bytes.
 *
 * The input is read twice: as little-endian 64-bit words, each of which must
 * survive asm(dis(w)) == w (and encode(decode(w)) == w when legal); and as
 * assembly text, each line of which the assembler must accept or refuse
 * without reading outside it, and every word it produces must round-trip the
 * same way. A crash, a sanitizer report or a trap is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pccx_asm.h"
#include "pccx_isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_word(uint64_t w)
{
	struct pccx_insn in;
	struct pccx_isa_fault f;
	struct pccx_asm_error e;
	char buf[200], *tight;
	uint64_t back = ~w;
	bool has = false;
	int rc, n;

	rc = pccx__decode(w, &in, &f);
	if (rc != f.err || rc < 0 || rc >= PCCX_ISA_E_COUNT || f.field < -1 ||
	    f.field >= PCCX_NFIELDS)
		__builtin_trap();
	if (rc == PCCX_ISA_E_OK) {
		if (pccx__encode(&in, &back, &f) != PCCX_ISA_E_OK || back != w)
			__builtin_trap();
	}
	n = pccx__disasm(w, buf, sizeof(buf));
	if (n <= 0 || (size_t)n >= sizeof(buf) || (rc == PCCX_ISA_E_OK && n >= 96) ||
	    strlen(buf) != (size_t)n)
		__builtin_trap();
	/* exactly the room needed, on the heap, and one byte less */
	tight = malloc((size_t)n + 1);
	if (!tight)
		return;
	if (pccx__disasm(w, tight, (size_t)n + 1) != n || memcmp(tight, buf, (size_t)n + 1))
		__builtin_trap();
	if (pccx__disasm(w, tight, (size_t)n) != -1 || tight[n - 1] != '\0')
		__builtin_trap();
	free(tight);

	back = ~w;
	if (pccx__asm_line(buf, (size_t)n, &back, &has, &e) != PCCX_ASM_E_OK || !has || back != w)
		__builtin_trap();
}

static void check_line(const char *line, size_t len)
{
	struct pccx_asm_error e;
	uint64_t w = 0;
	bool has = false;
	int rc;

	/* a copy of exactly len bytes: the assembler must not look past the line */
	char *copy = malloc(len ? len : 1);

	if (!copy)
		return;
	memcpy(copy, line, len);
	rc = pccx__asm_line(copy, len, &w, &has, &e);
	free(copy);
	if (rc < 0 || rc >= PCCX_ASM_E_COUNT || rc != e.err)
		__builtin_trap();
	if (rc != PCCX_ASM_E_OK) {
		if (has || e.column > len || e.field < -1 || e.field >= PCCX_NFIELDS)
			__builtin_trap();
		return;
	}
	if (has)
		check_word(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i, start;

	for (i = 0; i + 8 <= size; i += 8) {
		uint64_t w = 0;
		unsigned b;

		for (b = 0; b < 8; b++)
			w |= (uint64_t)data[i + b] << (8 * b);
		check_word(w);
	}
	for (start = 0, i = 0; i <= size; i++) {
		if (i == size || data[i] == '\n') {
			check_line((const char *)data + start, i - start);
			start = i + 1;
		}
	}
	return 0;
}
