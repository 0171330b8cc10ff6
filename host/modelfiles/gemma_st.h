/* SPDX-License-Identifier: MIT */
/*
 * Gemma models of every family from Hugging Face safetensors checkpoints and their config.json
 * (docs/model-files.md §5, §6a): Gemma 3n through its tensor map (model.language_model.*),
 * Gemma 1, 2, 3 and 4 under model.* (or a multimodal model's language model prefix).
 *
 * The configuration comes from config.json (model_type selects the family; the text_config
 * of a multimodal config), the tensors by name; F32/F16/BF16 values are requantised per block
 * of 32 into the device Q4 format (the error is reported) or kept in FP32, norm weights of
 * Gemma 1, 2 and 3 as 1 + w (Hugging Face's RMSNorm multiplier; Gemma 4's multiplies by w),
 * the AltUp correction coefficients clamped to +-120 as in the GGUF loader; Gemma 4's experts
 * cut per expert out of experts.gate_up_proj and experts.down_proj. The row placement is
 * shared with it (pccx__gemma_place_rows).
 */
#ifndef PCCX_GEMMA_ST_H
#define PCCX_GEMMA_ST_H

#include "gemma_model.h"
#include "pccx/modelfile.h"

/* Decode row `row` (of the source tensor `tensor` in file `src`) into `dst` (cols floats). */
typedef int (*pccx_gemma_row_src_fn)(const void *src, const void *tensor, uint64_t row,
				       float *dst, pccx_diag *d);

/*
 * Fill every row r of model tensor t from source row base + r: Q4 tensors requantised
 * (err accumulates, may be NULL), F32 tensors kept; *clipped counts the AltUp
 * correction coefficients clamped to +-120. `row` is scratch of t's cols floats; `what`
 * names the source tensor in diagnostics.
 */
PCCX_MUST_CHECK int pccx__gemma_place_rows(struct pccx_gemma_model *m, uint32_t t,
					     pccx_gemma_row_src_fn fn, const void *src,
					     const void *tensor, uint64_t base, float *row,
					     pccx_q4_error *err, uint64_t *clipped, const char *what,
					     pccx_diag *d);

/*
 * Load a checkpoint: `path` is a directory (holding config.json and the weights), a
 * model.safetensors.index.json or a .safetensors file (config.json next to it). max_ctx:
 * KV positions of global layers (0 = 4096). err (may be NULL) receives the requantisation
 * error. Unsupported shapes are refused with a message naming the config field; missing or
 * misshapen tensors with one naming the tensor. The K/V projections and K norm of KV-sharing
 * layers (never read) may be absent: they are left zero (Gemma 4's model has none; they are
 * not read). The vision tower of a multimodal Gemma 3 and the vision and audio towers of a
 * Gemma 4 are not read: on success d (when not NULL) then holds a notice (status PCCX_OK).
 */
PCCX_MUST_CHECK int pccx__gemma_load_safetensors(struct pccx_gemma_model **out,
						   const char *path,
						   uint32_t max_ctx, pccx_q4_error *err,
						   pccx_diag *d);

#endif /* PCCX_GEMMA_ST_H */
