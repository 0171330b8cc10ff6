/* SPDX-License-Identifier: MIT */
/*
 * Disassembler and assembler of pccx v002 words (freestanding).
 *
 * Syntax, one instruction per line, fields in table order when printed and in
 * any order when read:
 *     gemv dest=0x00400 src=0x00000 wshape=1 fshape=0 +w_scale
 *     memcpy dest=0x00000 src=0x00000 desc=3 fshape=0 +from_host +async
 *     memset cache=weight entry=1 a=2048 b=2048 c=0
 *     cvo func=exp src=0x00100 dst=0x00100 len=2048 +sub_emax
 *     .word 0x8000000000000000      # any 64-bit word, legal or not
 * `#` and `;` start comments; `name:` at the start of a line is a label
 * (accepted and ignored: the ISA has no branches). Every value field must be
 * given exactly once; flags are optional. Numbers are decimal or 0x-hex.
 */
#ifndef PCCX_ASM_H
#define PCCX_ASM_H

#include "pccx_isa.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Print one word. Legal words print as an instruction; illegal ones as
 * ".word 0x...  # ERRNAME: text". Returns the length written (excluding the
 * NUL), or -1 if buf is too small (96 bytes always suffice for instructions,
 * 200 for illegal words).
 */
int pccx__disasm(uint64_t w, char *buf, size_t size);

#define PCCX_ASM_ERR_LIST(X)                                          \
	X(OK,          "no error")                                    \
	X(MNEMONIC,    "unknown mnemonic")                            \
	X(FIELD,       "unknown field for this instruction")          \
	X(DUPLICATE,   "field given twice")                           \
	X(MISSING,     "required field missing")                      \
	X(NUMBER,      "not a number")                                \
	X(WIDTH,       "value does not fit the field")                \
	X(ENUM,        "unknown name for this field")                 \
	X(FLAG,        "flag written with a value, or value field written as a flag") \
	X(SYNTAX,      "syntax error")                                \
	X(ILLEGAL,     "the instruction is illegal")

enum pccx_asm_err {
#define PCCX_ASM_ERR_ENUM(name, text) PCCX_ASM_E_##name,
	PCCX_ASM_ERR_LIST(PCCX_ASM_ERR_ENUM)
#undef PCCX_ASM_ERR_ENUM
	PCCX_ASM_E_COUNT
};

struct pccx_asm_error {
	int err;          /* enum pccx_asm_err */
	size_t column;    /* 0-based offset in the line */
	int field;        /* enum pccx_field_id involved, or -1 */
	int isa_err;      /* for ILLEGAL: the decoder's PCCX_ISA_E_* */
	uint64_t value;   /* the offending value, where there is one */
};

const char *pccx__asm_strerror(int err);

/*
 * Assemble one line (not NUL-terminated; len bytes). On success returns 0 and
 * sets *has_word (false for blank/comment/label-only lines).
 */
int pccx__asm_line(const char *line, size_t len, uint64_t *w, bool *has_word,
		   struct pccx_asm_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PCCX_ASM_H */
