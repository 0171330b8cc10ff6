/* SPDX-License-Identifier: MIT */
/*
 * Gemma 3n text-decoder configurations: the real E4B and E2B shapes and small test shapes
 * with the same structure (KV-owner and KV-shared layers, a global layer every 5th, sparse
 * FFN layers, 4 AltUp streams, per-layer embeddings, LAuReL).
 *
 * The configuration is what model files and presets give; the layers it describes are read
 * from the per-layer table built from it once (layers.h), never from these fields.
 */
#ifndef PCCX_GEMMA_CONFIG_H
#define PCCX_GEMMA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "pccx/status.h"

#define PCCX_GEMMA_ALTUP_STREAMS 4u	/* AltUp streams; the graph is written for exactly 4 */
#define PCCX_GEMMA_MAX_LAYERS 64u

struct pccx_gemma_config {
	char name[16];
	uint32_t n_layers;	/* 35 */
	uint32_t d_model;	/* D = 2048 */
	uint32_t d_ffn;		/* 16384 */
	uint32_t n_heads;	/* 8 query heads */
	uint32_t n_kv_heads;	/* 2 (GQA: query head h reads kv head h / (n_heads / n_kv_heads)) */
	uint32_t head_dim;	/* 256 */
	uint32_t vocab;		/* 262400 = tied LM head rows */
	uint32_t ple_vocab;	/* 262144 PLE table rows; ids >= ple_vocab use row 0 */
	uint32_t d_ple;		/* 256 per-layer input width */
	uint32_t window;	/* 512: a local query at p sees keys p-511 .. p */
	uint32_t global_period;	/* 5 */
	uint32_t n_kv_shared;	/* 15 */
	uint32_t laurel_rank;	/* 64 */
	uint32_t n_sparse;	/* 10 */
	float sparse_z;		/* 1.6448533535 = float32 Normal.icdf(0.95) */
	float softcap;		/* 30 */
	float eps;		/* 1e-6 */
	float theta_local;	/* 1e4 */
	float theta_global;	/* 1e6 */
	uint32_t max_ctx;	/* positions the KV cache of global layers holds (a run limit) */
};

/*
 * Fill `cfg` with a named configuration: "e4b", "e2b", "tiny", "tiny-vocab".
 * PCCX_ERR_NOT_FOUND (with the list of names in the diag) for other names.
 */
PCCX_MUST_CHECK int pccx__gemma_config_preset(const char *name, struct pccx_gemma_config *cfg,
						pccx_diag *d);
/* Comma-separated preset names, for help texts. */
const char *pccx__gemma_config_names(void);

/*
 * Check the structural constraints the graph and the ISA impose (multiples of 32 for Q4 K,
 * word-aligned head halves, the 16-bit shape fields, ...) and that the per-layer table can be
 * built (pccx__layers_build). PCCX_ERR_INVALID naming the field.
 */
PCCX_MUST_CHECK int pccx__gemma_config_check(const struct pccx_gemma_config *cfg, pccx_diag *d);

#endif /* PCCX_GEMMA_CONFIG_H */
