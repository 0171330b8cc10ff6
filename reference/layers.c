// SPDX-License-Identifier: MIT
/* The per-layer table (layers.h): the only place a layer's properties follow from its index. */
#include <math.h>

#include "diag.h"
#include "layers.h"

/* Gemma 3n: every global_period-th layer attends globally. */
static bool gemma3n_global(uint32_t period, uint32_t layer)
{
	return (layer + 1) % period == 0;
}

/* Hugging Face's scaling of q: query_pre_attn_scalar^-1/2, or none (0: Gemma 3n). */
static float q_scale(const struct pccx_gemma_config *c)
{
	return c->query_pre_attn_scalar > 0.0f ? (float)(1.0 / sqrt(c->query_pre_attn_scalar))
					       : 1.0f;
}

int pccx__layers_build(const struct pccx_gemma_config *c,
		       struct pccx_attn_desc attn[PCCX_ATTN_KINDS], struct pccx_layer_desc *layers,
		       pccx_diag *d)
{
	const struct pccx_family_desc *fam = pccx__family(c->family);
	uint32_t l, k, kv_src[PCCX_GEMMA_MAX_LAYERS];
	bool local[PCCX_GEMMA_MAX_LAYERS] = { false };

	if (c->n_layers == 0 || c->n_layers > PCCX_GEMMA_MAX_LAYERS || c->global_period == 0 ||
	    c->n_kv_shared >= c->n_layers)
		return pccx__fail(d, PCCX_ERR_INVALID, "config '%s': n_layers, global_period or "
				  "n_kv_shared out of range", c->name);
	for (k = 0; k < PCCX_ATTN_KINDS; k++) {
		bool global = k == PCCX_ATTN_GLOBAL;
		float factor = global && c->rope_factor_global > 0.0f ? c->rope_factor_global : 1.0f;
		uint32_t hd = global && c->head_dim_global ? c->head_dim_global : c->head_dim;
		uint32_t nkv = global && c->n_kv_heads_global ? c->n_kv_heads_global : c->n_kv_heads;
		uint32_t rope_dims = hd;

		/* Hugging Face's "proportional" RoPE: int(partial * hd / 2) rotating pairs */
		if (global && c->rope_partial_global > 0.0f && c->rope_partial_global < 1.0f)
			rope_dims = 2 * (uint32_t)((double)c->rope_partial_global * hd / 2);
		attn[k] = (struct pccx_attn_desc){
			.window = global ? 0 : c->window,
			.n_heads = c->n_heads,
			.n_kv_heads = nkv,
			.head_dim = hd,
			/* a window longer than the context never wraps: keep max_ctx rows */
			.kv_rows = global || c->window > c->max_ctx ? c->max_ctx : c->window,
			.theta = global ? c->theta_global : c->theta_local,
			.rope_dims = rope_dims,
			.rope_factor = factor,
		};
	}

	/* the last n_kv_shared layers read the cache of an earlier layer */
	pccx__layers_pattern(c->global_period, c->n_layers, local);
	if (pccx__layers_kv_sources(local, c->n_layers, c->n_kv_shared, kv_src) != c->n_layers)
		return pccx__fail(d, PCCX_ERR_INVALID, "config '%s': n_kv_shared leaves "
				  "a shared layer without an owner of its type", c->name);
	for (l = 0; l < c->n_layers; l++) {
		struct pccx_layer_desc *L = &layers[l];
		enum pccx_attn_kind kind = local[l] ? PCCX_ATTN_LOCAL : PCCX_ATTN_GLOBAL;
		const struct pccx_attn_desc *A = &attn[kind];
		bool sparse = l < c->n_sparse;
		bool shared = kv_src[l] != l;

		*L = (struct pccx_layer_desc){
			.kind = kind,
			.window = A->window,
			.n_heads = A->n_heads,
			.n_kv_heads = A->n_kv_heads,
			.head_dim = A->head_dim,
			.q_dim = A->n_heads * A->head_dim,
			.kv_dim = A->n_kv_heads * A->head_dim,
			.kv_write = !shared,
			.k_eq_v = c->k_eq_v && kind == PCCX_ATTN_GLOBAL,
			.kv_src = kv_src[l],
			.kv_rows = A->kv_rows,
			.theta = A->theta,
			.rope_dims = A->rope_dims,
			.q_scale = q_scale(c),
			.attn_softcap = c->attn_softcap,
			.d_ffn = c->double_wide_mlp && shared ? 2 * c->d_ffn : c->d_ffn,
			.sparse = sparse,
			.sparse_z = sparse ? c->sparse_z : 0.0f,
			.norms = fam->norms,
			.ple = pccx__gemma_config_ple(c) && !fam->altup,
			.out_scale = fam->layer_scale,
			.n_experts = c->n_experts,
			.n_experts_used = c->n_experts_used,
			.d_expert = c->d_expert,
		};
	}
	return PCCX_OK;
}

void pccx__layers_pattern(uint32_t period, uint32_t n, bool *local)
{
	uint32_t l;

	for (l = 0; l < n; l++)
		local[l] = !gemma3n_global(period, l);
}

uint32_t pccx__layers_kv_sources(const bool *local, uint32_t n, uint32_t n_shared, uint32_t *src)
{
	uint32_t first = n_shared < n ? n - n_shared : 0, l, s;

	for (l = 0; l < n; l++)
		src[l] = l;   /* also where a layer without a writer stops the search */
	for (l = first; l < n; l++) {
		/* the last layer of its own kind that writes a cache (kv_shared_layer_index) */
		for (s = first; s-- > 0;)
			if (local[s] == local[l])
				break;
		if (s == UINT32_MAX)
			return l;
		src[l] = s;
	}
	return n;
}

uint32_t pccx__layers_global_period(const unsigned char *sliding, uint32_t n, uint32_t *bad)
{
	uint32_t l, period;

	for (l = 0; l < n && sliding[l]; l++)
		;
	period = l + 1;
	for (l = 0; l < n; l++)
		if ((sliding[l] != 0) == gemma3n_global(period, l))
			break;
	*bad = l;
	return period;
}
