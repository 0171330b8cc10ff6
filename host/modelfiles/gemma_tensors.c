/* SPDX-License-Identifier: MIT */
/*
 * The Gemma 3n text-decoder tensors: GGUF name (llama.cpp converter), safetensors name
 * (Hugging Face checkpoint, prefix model.language_model.) and shape as a function of the
 * config, in PyTorch order (outermost first). A GGUF tensor's ne is that shape reversed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "gemma_tensors.h"
#include "layers.h"

/* Symbolic dimensions. */
enum dim {
	X_D,		/* hidden_size */
	X_F,		/* intermediate_size of the layer */
	X_V,		/* vocab_size */
	X_VPL,		/* vocab_size_per_layer_input */
	X_PLD,		/* hidden_size_per_layer_input */
	X_LPLD,		/* num_hidden_layers * hidden_size_per_layer_input */
	X_Q,		/* num_attention_heads * head_dim */
	X_KV,		/* num_key_value_heads * head_dim */
	X_HD,		/* head_dim */
	X_R,		/* laurel_rank */
	X_A,		/* altup_num_inputs */
	X_AA,		/* altup_num_inputs^2 */
};

struct entry {
	const char *key;
	bool per_layer;
	bool stacked;		/* GGUF stacks altup_num_inputs - 1 safetensors tensors */
	const char *st;		/* after PCCX_TENSOR_MAP_ST_PREFIX; %u = layer or part */
	uint8_t nd;
	uint8_t dim[2];
};

#define PCCX_TENSOR_MAP_ST_PREFIX "model.language_model."

static const struct entry map[PCCX_TENSOR_MAP_COUNT] = {
	[PCCX_TENSOR_MAP_TOKEN_EMBD] = { "token_embd",
	false, false, "embed_tokens.weight", 2, { X_V, X_D } },
	[PCCX_TENSOR_MAP_PER_LAYER_TOKEN_EMBD] = { "per_layer_token_embd", false, false,
					    "embed_tokens_per_layer.weight", 2, { X_VPL, X_LPLD } },
	[PCCX_TENSOR_MAP_PER_LAYER_MODEL_PROJ] = { "per_layer_model_proj", false, false,
					    "per_layer_model_projection.weight",
					    2, { X_LPLD, X_D } },
	[PCCX_TENSOR_MAP_PER_LAYER_PROJ_NORM] = { "per_layer_proj_norm", false, false,
					   "per_layer_projection_norm.weight", 1, { X_PLD } },
	[PCCX_TENSOR_MAP_ALTUP_PROJ] = { "altup_proj", false, true, "altup_projections.%u.weight", 2,
				  { X_D, X_D } },
	[PCCX_TENSOR_MAP_ALTUP_UNEMBD_PROJ] = { "altup_unembd_proj", false, true,
					 "altup_unembed_projections.%u.weight", 2, { X_D, X_D } },
	[PCCX_TENSOR_MAP_OUTPUT_NORM] = { "output_norm", false, false, "norm.weight", 1, { X_D } },
	[PCCX_TENSOR_MAP_ATTN_NORM] = { "attn_norm", true, false, "layers.%u.input_layernorm.weight", 1,
				 { X_D } },
	[PCCX_TENSOR_MAP_ATTN_Q] = { "attn_q", true, false, "layers.%u.self_attn.q_proj.weight", 2,
			      { X_Q, X_D } },
	[PCCX_TENSOR_MAP_ATTN_K] = { "attn_k", true, false, "layers.%u.self_attn.k_proj.weight", 2,
			      { X_KV, X_D } },
	[PCCX_TENSOR_MAP_ATTN_V] = { "attn_v", true, false, "layers.%u.self_attn.v_proj.weight", 2,
			      { X_KV, X_D } },
	[PCCX_TENSOR_MAP_ATTN_OUTPUT] = { "attn_output", true, false, "layers.%u.self_attn.o_proj.weight",
				   2, { X_D, X_Q } },
	[PCCX_TENSOR_MAP_ATTN_Q_NORM] = { "attn_q_norm", true, false, "layers.%u.self_attn.q_norm.weight",
				   1, { X_HD } },
	[PCCX_TENSOR_MAP_ATTN_K_NORM] = { "attn_k_norm", true, false, "layers.%u.self_attn.k_norm.weight",
				   1, { X_HD } },
	[PCCX_TENSOR_MAP_POST_ATTN_NORM] = { "post_attention_norm", true, false,
				      "layers.%u.post_attention_layernorm.weight", 1, { X_D } },
	[PCCX_TENSOR_MAP_FFN_NORM] = { "ffn_norm",
	true, false, "layers.%u.pre_feedforward_layernorm.weight",
				1, { X_D } },
	[PCCX_TENSOR_MAP_FFN_GATE] = { "ffn_gate", true, false, "layers.%u.mlp.gate_proj.weight", 2,
				{ X_F, X_D } },
	[PCCX_TENSOR_MAP_FFN_UP] = { "ffn_up", true, false, "layers.%u.mlp.up_proj.weight", 2,
			      { X_F, X_D } },
	[PCCX_TENSOR_MAP_FFN_DOWN] = { "ffn_down", true, false, "layers.%u.mlp.down_proj.weight", 2,
				{ X_D, X_F } },
	[PCCX_TENSOR_MAP_POST_FFW_NORM] = { "post_ffw_norm", true, false,
				     "layers.%u.post_feedforward_layernorm.weight", 1, { X_D } },
	[PCCX_TENSOR_MAP_LAUREL_L] = { "laurel_l", true, false, "layers.%u.laurel.linear_left.weight", 2,
				{ X_R, X_D } },
	[PCCX_TENSOR_MAP_LAUREL_R] = { "laurel_r", true, false, "layers.%u.laurel.linear_right.weight", 2,
				{ X_D, X_R } },
	[PCCX_TENSOR_MAP_LAUREL_POST_NORM] = { "laurel_post_norm", true, false,
					"layers.%u.laurel.post_laurel_norm.weight", 1, { X_D } },
	[PCCX_TENSOR_MAP_ALTUP_ROUTER] = { "altup_router", true, false,
				    "layers.%u.altup.modality_router.weight", 2, { X_A, X_D } },
	[PCCX_TENSOR_MAP_ALTUP_ROUTER_NORM] = { "altup_router_norm", true, false,
					 "layers.%u.altup.router_norm.weight", 1, { X_D } },
	[PCCX_TENSOR_MAP_ALTUP_PREDICT_COEF] = { "altup_predict_coef", true, false,
					  "layers.%u.altup.prediction_coefs.weight",
					  2, { X_AA, X_A } },
	[PCCX_TENSOR_MAP_ALTUP_CORRECT_COEF] = { "altup_correct_coef", true, false,
					  "layers.%u.altup.correction_coefs.weight",
					  2, { X_A, X_A } },
	/* The checkpoint stores this one without ".weight"; the converter appends it. */
	[PCCX_TENSOR_MAP_ALTUP_CORRECT_SCALE] = { "altup_correct_scale", true, false,
					   "layers.%u.altup.correct_output_scale", 1, { X_D } },
	[PCCX_TENSOR_MAP_INP_GATE] = { "inp_gate",
	true, false, "layers.%u.per_layer_input_gate.weight", 2,
				{ X_PLD, X_D } },
	[PCCX_TENSOR_MAP_PROJ] = { "proj", true, false, "layers.%u.per_layer_projection.weight", 2,
			    { X_D, X_PLD } },
	[PCCX_TENSOR_MAP_POST_NORM] = { "post_norm", true, false,
				 "layers.%u.post_per_layer_input_norm.weight", 1, { X_D } },
};

static bool valid(int id)
{
	return id >= 0 && id < PCCX_TENSOR_MAP_COUNT;
}

const char *pccx_tensor_map_key(int id)
{
	return valid(id) ? map[id].key : NULL;
}

int pccx_tensor_map_by_key(const char *key)
{
	for (int i = 0; key && i < PCCX_TENSOR_MAP_COUNT; i++)
		if (strcmp(map[i].key, key) == 0)
			return i;
	return -1;
}

bool pccx_tensor_map_per_layer(int id)
{
	return valid(id) && map[id].per_layer;
}

uint32_t pccx_tensor_map_st_parts(const pccx_hf_config *cfg, int id)
{
	return valid(id) && map[id].stacked ? cfg->altup_num_inputs - 1 : 1;
}

int pccx_tensor_map_gguf_name(int id, uint32_t layer, char *buf, size_t size)
{
	int n;

	if (!valid(id))
		return PCCX_ERR_INVALID;
	if (map[id].per_layer)
		n = snprintf(buf, size, "blk.%" PRIu32 ".%s.weight", layer, map[id].key);
	else
		n = snprintf(buf, size, "%s.weight", map[id].key);
	return n < 0 || (size_t)n >= size ? PCCX_ERR_RANGE : PCCX_OK;
}

int pccx_tensor_map_st_name(int id, uint32_t layer, uint32_t part, char *buf, size_t size)
{
	char fmt[128];
	int n;

	if (!valid(id))
		return PCCX_ERR_INVALID;
	snprintf(fmt, sizeof(fmt), "%s%s", PCCX_TENSOR_MAP_ST_PREFIX, map[id].st);
	if (map[id].per_layer || map[id].stacked)
		n = snprintf(buf, size, fmt, map[id].per_layer ? layer : part);
	else
		n = snprintf(buf, size, "%s", fmt);
	return n < 0 || (size_t)n >= size ? PCCX_ERR_RANGE : PCCX_OK;
}

static uint64_t dim_value(const pccx_hf_config *c, enum dim x, uint32_t layer)
{
	switch (x) {
	case X_D:
		return c->hidden_size;
	case X_F:
		return c->intermediate_size[layer];
	case X_V:
		return c->vocab_size;
	case X_VPL:
		return c->vocab_size_per_layer_input;
	case X_PLD:
		return c->hidden_size_per_layer_input;
	case X_LPLD:
		return (uint64_t)c->num_hidden_layers * c->hidden_size_per_layer_input;
	case X_Q:
		return (uint64_t)c->num_attention_heads * c->head_dim;
	case X_KV:
		return (uint64_t)c->num_key_value_heads * c->head_dim;
	case X_HD:
		return c->head_dim;
	case X_R:
		return c->laurel_rank;
	case X_A:
		return c->altup_num_inputs;
	case X_AA:
		return (uint64_t)c->altup_num_inputs * c->altup_num_inputs;
	}
	return 0;
}

int pccx_tensor_map_expected_shape(const pccx_hf_config *cfg, int id, uint32_t layer, bool for_gguf,
			    uint32_t *n_dims, uint64_t shape[4], pccx_diag *d)
{
	const struct entry *e;
	uint32_t k = 0;

	if (!valid(id))
		return pccx__fail(d, PCCX_ERR_INVALID, "gemma3n tensor map: no tensor id %d", id);
	e = &map[id];
	if (e->per_layer && layer >= cfg->num_hidden_layers)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "gemma3n tensor map: %s: layer %" PRIu32 " out of range (%" PRIu32
				  " layers)",
				  e->key, layer, cfg->num_hidden_layers);
	if (e->stacked && for_gguf)
		shape[k++] = cfg->altup_num_inputs - 1;
	for (uint32_t i = 0; i < e->nd; i++)
		shape[k++] = dim_value(cfg, (enum dim)e->dim[i], e->per_layer ? layer : 0);
	*n_dims = k;
	for (; k < 4; k++)
		shape[k] = 0;
	return PCCX_OK;
}

static void fmt_dims(const uint64_t *v, uint32_t n, bool braces, char *buf, size_t size)
{
	size_t o = (size_t)snprintf(buf, size, braces ? "{" : "[");

	for (uint32_t i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%" PRIu64, i ? ", " : "", v[i]);
	if (o < size)
		snprintf(buf + o, size - o, braces ? "}" : "]");
}

static void describe(int id, uint32_t layer, char *buf, size_t size)
{
	if (map[id].per_layer)
		snprintf(buf, size, "layer %" PRIu32 " %s", layer, map[id].key);
	else
		snprintf(buf, size, "%s", map[id].key);
}

static bool same(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

int pccx_tensor_map_find_gguf(const pccx_gguf *g, const pccx_hf_config *cfg, int id, uint32_t layer,
		       const pccx_gguf_tensor **out, pccx_diag *d)
{
	uint64_t want[4], have[4], ne[4];
	const pccx_gguf_tensor *t;
	char name[96], what[96], sw[96], sh[96], nw[96], nh[96];
	uint32_t nd;
	int rc;

	*out = NULL;
	rc = pccx_tensor_map_expected_shape(cfg, id, layer, true, &nd, want, d);
	if (rc)
		return rc;
	(void)!pccx_tensor_map_gguf_name(id, layer, name, sizeof(name));
	describe(id, layer, what, sizeof(what));
	t = pccx_gguf_find_tensor(g, name);
	if (!t)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: tensor '%s' (%s): missing",
				  pccx_gguf_name(g), name, what);
	for (uint32_t i = 0; i < t->n_dims; i++)
		have[i] = t->ne[t->n_dims - 1 - i];
	if (same(want, nd, have, t->n_dims)) {
		*out = t;
		return PCCX_OK;
	}
	/* Newer converters pad the per-layer embedding to vocab_size rows. */
	if (id == PCCX_TENSOR_MAP_PER_LAYER_TOKEN_EMBD) {
		uint64_t alt[4] = { cfg->vocab_size, want[1] };

		if (same(alt, nd, have, t->n_dims)) {
			*out = t;
			return PCCX_OK;
		}
	}
	fmt_dims(want, nd, false, sw, sizeof(sw));
	fmt_dims(have, t->n_dims, false, sh, sizeof(sh));
	for (uint32_t i = 0; i < nd; i++)
		ne[i] = want[nd - 1 - i];
	fmt_dims(ne, nd, true, nw, sizeof(nw));
	fmt_dims(t->ne, t->n_dims, true, nh, sizeof(nh));
	return pccx__fail(d, PCCX_ERR_FORMAT,
			  "%s: tensor '%s' (%s): expected shape %s (ne %s), found %s (ne %s)",
			  pccx_gguf_name(g), name, what, sw, nw, sh, nh);
}

int pccx_tensor_map_find_st(const pccx_safetensors *st, const pccx_hf_config *cfg, int id,
		     uint32_t layer, uint32_t part, const pccx_st_tensor **out, pccx_diag *d)
{
	uint64_t want[4];
	const pccx_st_tensor *t;
	char name[128], what[96], sw[96], sh[200];
	uint32_t nd;
	int rc;

	*out = NULL;
	rc = pccx_tensor_map_expected_shape(cfg, id, layer, false, &nd, want, d);
	if (rc)
		return rc;
	if (part >= pccx_tensor_map_st_parts(cfg, id))
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "gemma3n tensor map: %s: part %" PRIu32 " out of range",
				  map[id].key, part);
	(void)!pccx_tensor_map_st_name(id, layer, part, name, sizeof(name));
	describe(id, layer, what, sizeof(what));
	rc = pccx_st_get_tensor(st, name, &t, d);
	if (rc == PCCX_ERR_NOT_FOUND)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: tensor '%s' (%s): missing",
				  pccx_st_name(st), name, what);
	if (rc)
		return rc;
	if (!same(want, nd, t->shape, t->n_dims)) {
		fmt_dims(want, nd, false, sw, sizeof(sw));
		fmt_dims(t->shape, t->n_dims, false, sh, sizeof(sh));
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: tensor '%s' (%s): expected shape %s, found %s",
				  t->file, name, what, sw, sh);
	}
	*out = t;
	return PCCX_OK;
}

/*
 * K/V projections and the K norm of KV-sharing layers (those that read another layer's cache,
 * kv_src[layer] != layer) are in checkpoints but never used: checked when present, not
 * required.
 */
static bool optional_in(const uint32_t *kv_src, int id, uint32_t layer)
{
	return kv_src[layer] != layer &&
	       (id == PCCX_TENSOR_MAP_ATTN_K || id == PCCX_TENSOR_MAP_ATTN_V ||
		id == PCCX_TENSOR_MAP_ATTN_K_NORM);
}

/* Which layer's cache each layer reads, from the file's own layer description. */
static void kv_sources(const pccx_hf_config *cfg, uint32_t *kv_src)
{
	uint32_t n = cfg->num_hidden_layers < PCCX_HF_MAX_LAYERS ? cfg->num_hidden_layers :
		     PCCX_HF_MAX_LAYERS;

	/* a layer without a writer of its kind reads its own (config.json refuses it) */
	(void)pccx__layers_kv_sources(cfg->layer_is_sliding, n, cfg->num_kv_shared_layers, kv_src);
}

int pccx_tensor_map_check_gguf(const pccx_gguf *g, const pccx_hf_config *cfg, pccx_diag *d)
{
	uint32_t kv_src[PCCX_HF_MAX_LAYERS];

	kv_sources(cfg, kv_src);
	for (int id = 0; id < PCCX_TENSOR_MAP_COUNT; id++) {
		uint32_t nl = map[id].per_layer ? cfg->num_hidden_layers : 1;

		for (uint32_t l = 0; l < nl; l++) {
			const pccx_gguf_tensor *t;
			int rc = pccx_tensor_map_find_gguf(g, cfg, id, l, &t, d);

			if (rc == PCCX_ERR_NOT_FOUND && optional_in(kv_src, id, l))
				continue;
			if (rc)
				return rc;
		}
	}
	return PCCX_OK;
}

int pccx_tensor_map_check_st(const pccx_safetensors *st, const pccx_hf_config *cfg, pccx_diag *d)
{
	uint32_t kv_src[PCCX_HF_MAX_LAYERS];

	kv_sources(cfg, kv_src);
	for (int id = 0; id < PCCX_TENSOR_MAP_COUNT; id++) {
		uint32_t nl = map[id].per_layer ? cfg->num_hidden_layers : 1;

		for (uint32_t l = 0; l < nl; l++) {
			for (uint32_t p = 0; p < pccx_tensor_map_st_parts(cfg, id); p++) {
				const pccx_st_tensor *t;
				int rc = pccx_tensor_map_find_st(st, cfg, id, l, p, &t, d);

				if (rc == PCCX_ERR_NOT_FOUND && optional_in(kv_src, id, l))
					continue;
				if (rc)
					return rc;
			}
		}
	}
	return PCCX_OK;
}
