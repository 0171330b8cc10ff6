/* SPDX-License-Identifier: MIT */
/* Internal tokenizer interface: the public API lives in pccx/tokenizer.h. */
#ifndef PCCX_LIB_TOKENIZER_H
#define PCCX_LIB_TOKENIZER_H

#include "pccx/tokenizer.h"

/* Largest text accepted by one encode call (symbol indices are 32-bit). */
#define PCCX_TOK_MAX_TEXT	((size_t)1 << 30)
/* Largest vocabulary accepted from any source. */
#define PCCX_TOK_MAX_VOCAB	((size_t)1 << 24)

/* Length of the valid UTF-8 sequence at s[0..n), 0 when invalid or truncated. */
size_t pccx_tok_utf8_len(const unsigned char *s, size_t n);

#endif
