/* SPDX-License-Identifier: MIT */
/*
 * Gemma text-decoder configurations of every family (family.h): the real shapes (Gemma 3n
 * E4B and E2B, Gemma 1 2B, Gemma 2 2B, Gemma 3 1B and 4B) and small test shapes with each
 * family's structure. Fields a family does not use are 0 (the Gemma 3n-only PLE, LAuReL,
 * KV sharing and sparsity in the others).
 *
 * The configuration is what model files and presets give; the layers it describes are read
 * from the per-layer table built from it once (layers.h), never from these fields.
 */
#ifndef PCCX_GEMMA_CONFIG_H
#define PCCX_GEMMA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "family.h"
#include "pccx/status.h"

#define PCCX_GEMMA_ALTUP_STREAMS 4u	/* AltUp streams; the graph is written for exactly 4 */
#define PCCX_GEMMA_MAX_LAYERS 64u
#define PCCX_GEMMA_MAX_EXPERTS 256u	/* of a mixture-of-experts layer */
#define PCCX_GEMMA_MAX_EXPERTS_USED 16u	/* chosen per token */

struct pccx_gemma_config {
	char name[16];
	enum pccx_family family;
	uint32_t n_layers;	/* 35 */
	uint32_t d_model;	/* D = 2048 */
	uint32_t d_ffn;		/* 16384 */
	uint32_t n_heads;	/* 8 query heads */
	uint32_t n_kv_heads;	/* 2 (GQA: query head h reads kv head h / (n_heads / n_kv_heads)) */
	uint32_t head_dim;	/* 256 */
	/* Gemma 4's global layers: their own head size and KV heads (0: as the local ones) */
	uint32_t head_dim_global;
	uint32_t n_kv_heads_global;
	uint32_t vocab;		/* 262400 = tied LM head rows */
	uint32_t ple_vocab;	/* 262144 PLE table rows; ids >= ple_vocab use row 0 (3n only) */
	uint32_t d_ple;		/* 256 per-layer input width (3n only) */
	uint32_t window;	/* 512: a local query at p sees keys p-511 .. p */
	uint32_t global_period;	/* 5: layer i is global iff (i + 1) % period == 0 (1: all) */
	uint32_t n_kv_shared;	/* 15 */
	uint32_t laurel_rank;	/* 64 */
	uint32_t n_sparse;	/* 10 */
	float sparse_z;		/* 1.6448533535 = float32 Normal.icdf(0.95) */
	float softcap;		/* 30: final logit soft-cap (0: none) */
	float attn_softcap;	/* attention-score soft-cap (Gemma 2: 50; 0: none) */
	/* q is scaled by query_pre_attn_scalar^-1/2 (0: by 1, Gemma 3n's q/k norms carry it) */
	float query_pre_attn_scalar;
	float eps;		/* 1e-6 */
	float theta_local;	/* 1e4 */
	float theta_global;	/* 1e6 */
	float rope_factor_global; /* linear RoPE scaling of global layers (0 or 1: none) */
	/*
	 * Gemma 4's proportional RoPE of global layers: the first partial * head_dim / 2
	 * frequencies rotate, the others are 0 (0 or 1: every frequency rotates)
	 */
	float rope_partial_global;
	bool k_eq_v;		/* Gemma 4: a global layer's v is its k projection (no W_v) */
	bool double_wide_mlp;	/* Gemma 4: KV-sharing layers have an FFN of 2 d_ffn */
	/*
	 * Gemma 4's mixture of experts (the 26B-A4B layout; 0 experts: dense): every layer
	 * runs, beside its dense FFN, n_experts_used of n_experts experts of width d_expert
	 * chosen by a router
	 */
	uint32_t n_experts;
	uint32_t n_experts_used;
	uint32_t d_expert;
	uint32_t max_ctx;	/* positions the KV cache of global layers holds (a run limit) */
};

/*
 * Fill `cfg` with a named configuration (pccx__gemma_config_at lists them).
 * PCCX_ERR_NOT_FOUND (with the list of names in the diag) for other names.
 */
PCCX_MUST_CHECK int pccx__gemma_config_preset(const char *name, struct pccx_gemma_config *cfg,
						pccx_diag *d);
/*
 * Whether the model has per-layer embeddings: its family may (family.h) and d_ple is set
 * (Gemma 3n always, Gemma 4's E2B/E4B but not its 26B-A4B).
 */
static inline bool pccx__gemma_config_ple(const struct pccx_gemma_config *c)
{
	return pccx__family(c->family)->ple && c->d_ple > 0;
}

/* Comma-separated preset names, for help texts. */
const char *pccx__gemma_config_names(void);
/* The i-th preset (NULL past the last), for listings. */
const struct pccx_gemma_config *pccx__gemma_config_at(unsigned i);

/*
 * Check the structural constraints the graph and the ISA impose (multiples of 32 for Q4 K,
 * word-aligned head halves, the 16-bit shape fields, ...) and that the per-layer table can be
 * built (pccx__layers_build). PCCX_ERR_INVALID naming the field.
 */
PCCX_MUST_CHECK int pccx__gemma_config_check(const struct pccx_gemma_config *cfg, pccx_diag *d);

#endif /* PCCX_GEMMA_CONFIG_H */
