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
 *
 * The three token arrays get n_tokens entries (0: the tokenizer's own count), because llama.cpp
 * sizes a model's embeddings by the token count: ids from the tokenizer's count up are padded
 * as llama.cpp's converter pads a SentencePiece vocabulary, piece "[PAD<id>]", score -10000,
 * type UNUSED (docs/model-files.md, "The llama.cpp layout"). A tokenizer with more than
 * n_tokens ids is refused (PCCX_ERR_INVALID).
 */
PCCX_MUST_CHECK int pccx__tokenizer_save_gguf(pccx_gguf_writer *w, const pccx_tokenizer *tk,
					      size_t n_tokens, pccx_diag *d);

/* The piece, score and type llama.cpp's converter gives an unused id (the padding above). */
#define PCCX_TOKENIZER_PAD_FMT "[PAD%zu]"
#define PCCX_TOKENIZER_PAD_SCORE (-10000.0f)

/*
 * The tokenizer of an open GGUF; *tk is NULL (and PCCX_OK returned) when the file has no
 * tokenizer.ggml.tokens. Messages are prefixed with the file's name.
 */
PCCX_MUST_CHECK int pccx__tokenizer_load_gguf(const pccx_gguf *g, pccx_tokenizer **tk,
					      pccx_diag *d);

#endif /* PCCX_TOKENIZER_GGUF_H */
