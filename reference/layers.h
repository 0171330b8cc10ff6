/* SPDX-License-Identifier: MIT */
/*
 * The model's layers as one table, computed once from the configuration: everything that may
 * differ from one decoder layer to the next (attention kind and window, head counts and sizes,
 * whose KV cache a layer reads, RoPE, FFN width and gate, norms) is a field of layer i's row.
 * Nothing outside layers.c derives a layer's properties from its index; a model family with
 * another layer pattern is another way of filling the rows (docs/reference.md, "Layers").
 *
 * Every family (Hugging Face's layer_types of Gemma 2, 3 and 3n; Gemma 1 is all global):
 *   layer i is global (full attention, theta_global scaled by rope_factor_global) iff
 *   (i + 1) % global_period == 0, else local (a window of `window` keys, theta_local);
 *   a local layer keeps min(window, max_ctx) KV rows as a ring, a global one max_ctx;
 *   q is scaled by query_pre_attn_scalar^-1/2 and the scores soft-capped by attn_softcap;
 *   the norms are the family's (family.h).
 * Gemma 3n (Gemma3nTextConfig) and Gemma 4 (Gemma4TextConfig) besides:
 *   layers [n_layers - n_kv_shared, n_layers) compute no k/v and read the cache of the last
 *   layer of their own kind before them (kv_shared_layer_index);
 *   Gemma 3n's layers [0, n_sparse) apply the Gaussian top-k gate with sparse_z;
 *   Gemma 4's global layers have head_dim_global and n_kv_heads_global (when set), RoPE on
 *   the first rope_partial_global of their frequencies, v = k's projection (k_eq_v), and
 *   its KV-sharing layers an FFN of 2 d_ffn (double_wide_mlp).
 */
#ifndef PCCX_LAYERS_H
#define PCCX_LAYERS_H

#include <stdbool.h>
#include <stdint.h>

#include "gemma_config.h"

enum pccx_attn_kind {
	PCCX_ATTN_LOCAL,	/* sliding window: a query at p sees keys p - window + 1 .. p */
	PCCX_ATTN_GLOBAL,	/* full causal attention */
	PCCX_ATTN_KINDS
};

/*
 * What every layer of one attention kind shares. The host prepares one RoPE table per kind
 * (both kinds, whether or not a layer uses one), and the L2 plan is sized for the kinds.
 */
struct pccx_attn_desc {
	uint32_t window;	/* keys a query sees (0: all, full attention) */
	uint32_t n_heads;	/* query heads */
	uint32_t n_kv_heads;	/* key/value heads; query head h reads h / (n_heads / n_kv_heads) */
	uint32_t head_dim;	/* size of each q, k and v head */
	uint32_t kv_rows;	/* KV cache rows: window (a ring, row pos mod window), max_ctx */
	float theta;		/* RoPE base */
	/*
	 * RoPE pairs dimension i with i + head_dim/2; the first rope_dims/2 pairs rotate,
	 * the others have frequency 0 (head_dim: all rotate; Gemma 4's proportional RoPE)
	 */
	uint32_t rope_dims;
	float rope_factor;	/* linear scaling: positions divided by it (1: none) */
};

/* The norms a layer applies (pccx_layer_desc.norms); the attention input norm is always there. */
#define PCCX_NORM_Q		(1u << 0)	/* q_norm: RMSNorm with weight, per query head */
#define PCCX_NORM_K		(1u << 1)	/* k_norm: RMSNorm with weight, per key head */
#define PCCX_NORM_V		(1u << 2)	/* v_norm: RMSNorm without weight, per value head */
#define PCCX_NORM_POST_ATTN	(1u << 3)	/* post_attention_layernorm of attention output */
#define PCCX_NORM_PRE_FFN	(1u << 4)	/* pre_feedforward_layernorm of the FFN input */
#define PCCX_NORM_POST_FFN	(1u << 5)	/* post_feedforward_layernorm of the FFN output */

struct pccx_layer_desc {
	/* attention: the values of its kind (pccx_attn_desc), so a layer reads only its row */
	enum pccx_attn_kind kind;
	uint32_t window;	/* keys a query sees (0: all) */
	uint32_t n_heads;	/* query heads */
	uint32_t n_kv_heads;	/* key/value heads */
	uint32_t head_dim;	/* q, k and v head size */
	uint32_t q_dim;		/* n_heads * head_dim: width of q and of the attention context */
	uint32_t kv_dim;	/* n_kv_heads * head_dim: width of k and of v */
	/* KV cache */
	bool kv_write;		/* computes k and v and appends them to its own cache */
	bool k_eq_v;		/* v is k's projection before its norm and RoPE (no W_v) */
	uint32_t kv_src;	/* the layer whose cache it reads: itself when kv_write */
	uint32_t kv_rows;	/* rows that cache keeps: window (a ring) or max_ctx */
	/* RoPE of q and k */
	float theta;		/* base */
	uint32_t rope_dims;	/* 2 x the pairs of dimensions that rotate (head_dim: all) */
	float q_scale;		/* q is multiplied by it after RoPE (1: not at all) */
	float attn_softcap;	/* scores = cap tanh(scores / cap) before the softmax (0: none) */
	/* FFN */
	uint32_t d_ffn;		/* width of gate and up */
	bool sparse;		/* the Gaussian top-k gate (mean + sparse_z std) before GELU */
	float sparse_z;		/* its multiplier; 0 for dense layers */
	uint32_t norms;		/* PCCX_NORM_* */
	/* the family's residual pieces (family.h), per layer so a layer reads only its row */
	bool ple;		/* adds the gated projection of its per-layer input (Gemma 4) */
	bool out_scale;		/* multiplies its output by its learned scalar (Gemma 4) */
	/* Gemma 4's mixture of experts beside the dense FFN (0 experts: none) */
	uint32_t n_experts;
	uint32_t n_experts_used;	/* chosen per token by the router */
	uint32_t d_expert;		/* width of an expert's gate and up */
};

/*
 * Fill the attention kinds and the rows of layers 0 .. n_layers - 1 from a configuration
 * whose scalar fields pccx__gemma_config_check accepts (it calls this for the structure).
 * PCCX_ERR_INVALID, naming the field, when a KV-sharing layer has no layer to read from.
 */
PCCX_MUST_CHECK int pccx__layers_build(const struct pccx_gemma_config *c,
				       struct pccx_attn_desc attn[PCCX_ATTN_KINDS],
				       struct pccx_layer_desc *layers, pccx_diag *d);

/*
 * The per-layer facts the table is built from, for loaders that check a model file's own
 * per-layer description before a configuration exists:
 * - pccx__layers_pattern: Gemma 3n's attention pattern, local[l] for every layer but each
 *   period-th (Hugging Face's default layer_types);
 * - pccx__layers_kv_sources: from a pattern, the layer whose KV cache each layer reads:
 *   layers [0, n - n_shared) write their own (src[l] = l), each later one reads the last
 *   writer of its own kind. Returns n, or the first layer without such a writer.
 */
void pccx__layers_pattern(uint32_t period, uint32_t n, bool *local);
uint32_t pccx__layers_kv_sources(const bool *local, uint32_t n, uint32_t n_shared, uint32_t *src);

/*
 * Gemma 3n's global_period from a per-layer pattern as model files give it (sliding[l] != 0:
 * layer l is local): the period whose first global layer is the first non-sliding entry.
 * *bad receives the first layer whose entry that period contradicts (n when none), for
 * loaders to refuse patterns the configuration cannot express.
 */
uint32_t pccx__layers_global_period(const unsigned char *sliding, uint32_t n, uint32_t *bad);

#endif /* PCCX_LAYERS_H */
