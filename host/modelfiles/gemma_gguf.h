/* SPDX-License-Identifier: MIT */
/*
 * Gemma 3n models as GGUF files (llama.cpp's "gemma3n" layout, research note §1.6).
 *
 * Save: device Q4 tensors become Q4_0 (lossless: same FP16 scale bits, nibble u = q + 8),
 * BF16 tensors F32 (exact), the AltUp projections one stacked tensor each; the gemma3n.*
 * metadata describe the configuration; other modules' keys (the tokenizer's tokenizer.ggml.*)
 * are added through a hook. Load: the configuration from the metadata and the tensor shapes, Q4_0
 * tensors imported losslessly, other types decoded and requantised per block of 32 (the error
 * is reported), vectors rounded to BF16; the open file is handed to the caller when it wants
 * to read other keys (the tokenizer's). A file this module wrote loads back bit for bit.
 *
 * Both ways the file has llama.cpp's shapes: token count == token_embd rows ==
 * per_layer_token_embd rows (padded), checked on load as llama.cpp checks them.
 */
#ifndef PCCX_GEMMA_GGUF_H
#define PCCX_GEMMA_GGUF_H

#include "gemma_model.h"
#include "pccx/modelfile.h"

/*
 * The tokenizer's keys, written by another module into the same file after the gemma3n.*
 * metadata: add(w, arg, n_tokens) (host/text/tokenizer_gguf.h). This module does not interpret
 * them, but llama.cpp sizes the embeddings by the token count, so the hook must write token
 * arrays of exactly n_tokens entries (the rows of token_embd, the model's vocab).
 */
struct pccx_gguf_keys {
	int (*add)(pccx_gguf_writer *w, const void *arg, uint32_t n_tokens, pccx_diag *d);
	const void *arg;
};

/*
 * Write `m` (and the keys of `keys` when not NULL) to `path` (atomically: temporary file, then
 * rename) in llama.cpp's gemma3n layout (docs/model-files.md, "The llama.cpp layout"): the
 * per-layer embedding padded with zero rows to the vocab, and without `keys` the tokenizer
 * key llama.cpp requires set to "no_vocab" with gemma3n.vocab_size.
 */
PCCX_MUST_CHECK int pccx__gemma_save_gguf(const struct pccx_gemma_model *m,
					    const struct pccx_gguf_keys *keys, const char *path,
					    pccx_diag *d);

/* What a load changed on the way into the device format. */
struct pccx_gemma_load_info {
	pccx_q4_error q4;	/* requantisation error of the Q4 tensors (lossless for Q4_0) */
	uint64_t clipped;	/* AltUp correction coefficients clamped to +-120 (as HF does) */
};

/*
 * Load a gemma3n GGUF into a new model in device layout. max_ctx: KV positions of global
 * layers (0 = 4096). info (may be NULL) receives what the conversion changed. *file (when file
 * != NULL) receives the open GGUF on success, for the caller to read other keys from (the
 * tokenizer's: pccx__tokenizer_load_gguf); close it with pccx_gguf_close(). On failure it is
 * NULL.
 */
PCCX_MUST_CHECK int pccx__gemma_load_gguf(struct pccx_gemma_model **out, const char *path,
					    uint32_t max_ctx, struct pccx_gemma_load_info *info,
					    pccx_gguf **file, pccx_diag *d);

#endif /* PCCX_GEMMA_GGUF_H */
