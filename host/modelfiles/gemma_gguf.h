/* SPDX-License-Identifier: MIT */
/*
 * Gemma models as GGUF files in llama.cpp's layout of their family: "gemma3n" (research note
 * §1.6), "gemma", "gemma2" and "gemma3" (docs/model-files.md, "Gemma 1, 2 and 3 in GGUF") and
 * "gemma4" ("Gemma 4 in GGUF": the global layers' partial RoPE as rope_freqs.weight; the
 * experts of a mixture-of-experts model as llama.cpp's 3-D tensors, cut per expert on load).
 *
 * Save: device Q4 tensors become Q4_0 (lossless: same FP16 scale bits, nibble u = q + 8),
 * F32 vectors F32 (exact; the norms as the effective multiplier, as llama.cpp's converter
 * writes 1 + w for Gemma 1-3), Gemma 3n's AltUp projections one stacked tensor each; the
 * <arch>.* metadata describe the configuration; other modules' keys (the tokenizer's
 * tokenizer.ggml.*) are added through a hook. Load: the configuration from the metadata and
 * the tensor shapes, Q4_0 tensors imported losslessly, other types decoded and requantised per
 * block of 32 (the error is reported); the open file is handed to the caller when it wants
 * to read other keys (the tokenizer's). A file this module wrote loads back bit for bit.
 *
 * Both ways the file has llama.cpp's shapes: token count == token_embd rows (== Gemma 3n's
 * per_layer_token_embd rows, padded), checked on load as llama.cpp checks them.
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
 * rename) in llama.cpp's layout of its family (docs/model-files.md, "The llama.cpp layout"):
 * Gemma 3n's per-layer embedding padded with zero rows to the vocab, and without `keys` the
 * tokenizer key llama.cpp requires set to "no_vocab" with <arch>.vocab_size. A configuration
 * llama.cpp's loader of the family would run differently (a query_pre_attn_scalar it does not
 * derive, Gemma 2 without soft-caps, ...) is refused with PCCX_ERR_UNSUPPORTED. Gemma 4's KV
 * donors are Hugging Face's; llama.cpp, whose shortcut finds other layers for some patterns
 * (tiny-gemma4's), then stops building the file's KV cache rather than run it differently.
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
 * The query_pre_attn_scalar llama.cpp derives for a Gemma 1, 2 or 3 configuration (GGUF has
 * no key for it): key_length, or n_embd / n_head (integer division) for the 27B models (Gemma
 * 2 with 46 layers, Gemma 3 with 62).
 */
float pccx__gemma_gguf_q_scalar(const struct pccx_gemma_config *c);

/*
 * Load a gemma3n, gemma, gemma2, gemma3 or gemma4 GGUF into a new model in device layout.
 * max_ctx: KV positions of global layers (0 = 4096). info (may be NULL) receives what the
 * conversion changed. *file (when file != NULL) receives the open GGUF on success, for the
 * caller to read other keys from (the tokenizer's: pccx__tokenizer_load_gguf); close it with
 * pccx_gguf_close(). On failure it is NULL. An unsupported architecture, a missing key
 * llama.cpp requires, hyper-parameters the device cannot run or a tensor of the wrong shape
 * are refused naming the key or tensor and the value.
 */
PCCX_MUST_CHECK int pccx__gemma_load_gguf(struct pccx_gemma_model **out, const char *path,
					    uint32_t max_ctx, struct pccx_gemma_load_info *info,
					    pccx_gguf **file, pccx_diag *d);

#endif /* PCCX_GEMMA_GGUF_H */
