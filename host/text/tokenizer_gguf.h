/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer in a GGUF file: the tokenizer.ggml.* keys (docs/tokenizer.md). A model file
 * holds them beside the model's own keys; the model's reader and writer (host/modelfiles) do
 * not look at them, the caller reads and writes them here on the same open file.
 */
#ifndef PCCX_TOKENIZER_GGUF_H
#define PCCX_TOKENIZER_GGUF_H

#include "pccx/modelfile.h"
#include "pccx/tokenizer.h"

/*
 * Add the keys of `tk` to a GGUF being written: everything pccx_tokenizer_export_vocab()
 * returns (model "llama", tokens, scores, token types, merges, the special ids and flags).
 */
PCCX_MUST_CHECK int pccx__tokenizer_save_gguf(pccx_gguf_writer *w, const pccx_tokenizer *tk,
					      pccx_diag *d);

/*
 * The tokenizer of an open GGUF; *tk is NULL (and PCCX_OK returned) when the file has no
 * tokenizer.ggml.tokens. Messages are prefixed with the file's name.
 */
PCCX_MUST_CHECK int pccx__tokenizer_load_gguf(const pccx_gguf *g, pccx_tokenizer **tk,
					      pccx_diag *d);

#endif /* PCCX_TOKENIZER_GGUF_H */
