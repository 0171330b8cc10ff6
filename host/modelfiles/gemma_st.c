// SPDX-License-Identifier: MIT
/* Gemma models of every family from Hugging Face safetensors checkpoints + config.json. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag.h"
#include "gemma_st.h"
#include "hf_config.h"
#include "safetensors.h"
#include "pccx_num.h"

#define ALTUP_COEF_CLIP 120.0f	/* altup_coef_clip of the Gemma 3n config */
#define CORRECT_COEF ".altup_correct_coef.weight"

/* ------------------------------------------------------------------------------------- */
/* Shared with the GGUF loader: source rows -> device layout.                             */

int pccx__gemma_place_rows(struct pccx_gemma_model *m, uint32_t t, pccx_gemma_row_src_fn fn,
			     const void *src, const void *tensor, uint64_t base, float *row,
			     pccx_q4_error *err, uint64_t *clipped, const char *what, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	size_t nl = strlen(T->name), ns = strlen(CORRECT_COEF);
	bool clip = nl > ns && !strcmp(T->name + nl - ns, CORRECT_COEF);
	uint32_t r, i;
	int rc;

	for (r = 0; r < T->rows; r++) {
		uint8_t *rec = m->data + T->offset + (uint64_t)r * T->row_bytes;

		rc = fn(src, tensor, base + r, row, d);
		if (rc)
			return rc;
		if (T->fmt == PCCX_WFMT_Q4) {
			rc = pccx_q4_quantize(row, T->cols,
					      rec + pccx_gemma_q4_scale_bytes(T->cols),
					      (uint16_t *)(void *)rec, err, what, d);
			if (rc)
				return rc;
			continue;
		}
		for (i = 0; i < T->cols; i++) {
			uint32_t u;

			/* Hugging Face clamps the correction coefficients at inference */
			if (clip && (row[i] > ALTUP_COEF_CLIP || row[i] < -ALTUP_COEF_CLIP)) {
				row[i] = row[i] > 0 ? ALTUP_COEF_CLIP : -ALTUP_COEF_CLIP;
				if (clipped)
					(*clipped)++;
			}
			u = pccx_f32_bits(row[i]);
			if ((u & 0x7F800000u) == 0x7F800000u)
				return pccx__fail(d, PCCX_ERR_RANGE,
						  "%s: row %llu, element %u is %g, not a finite FP32 "
						  "weight", what, (unsigned long long)(base + r), i,
						  (double)row[i]);
			rec[4 * i] = (uint8_t)u;
			rec[4 * i + 1] = (uint8_t)(u >> 8);
			rec[4 * i + 2] = (uint8_t)(u >> 16);
			rec[4 * i + 3] = (uint8_t)(u >> 24);
		}
	}
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* config.json -> pccx_gemma_config                                                          */

/* float32 Normal(0, 1).icdf(p), as torch computes it for the sparsity gate. */
static float normal_icdf(float p)
{
	double z = 0.0;
	int i;

	if (p == 0.95f)
		return 1.6448533535f;	/* torch's float32 value (the published configs) */
	for (i = 0; i < 200; i++) {
		double f = 0.5 * erfc(-z / M_SQRT2) - (double)p;
		double step = f / (exp(-0.5 * z * z) / sqrt(2.0 * M_PI));

		z -= step;
		if (fabs(step) < 1e-14)
			break;
	}
	return (float)z;
}

/*
 * Gemma 1, 2 and 3: the fields every family has; the layer pattern as a period (refused,
 * naming the layer, when layer_types has none); Gemma 1's window is its context (every layer
 * global). Gemma 2 scales every layer's RoPE, the device only the global ones.
 */
static int map_plain(const pccx_hf_config *h, const struct pccx_hf_family *x, const char *file,
		     struct pccx_gemma_config *c, pccx_diag *d)
{
	uint32_t l, n = h->num_hidden_layers;
	unsigned char sliding[PCCX_HF_MAX_LAYERS] = { 0 };

	c->family = x->family;
	c->n_layers = n;
	c->d_model = h->hidden_size;
	c->d_ffn = h->intermediate_size[0];
	c->n_heads = h->num_attention_heads;
	c->n_kv_heads = h->num_key_value_heads;
	c->head_dim = h->head_dim;
	c->vocab = h->vocab_size;
	c->window = h->sliding_window < 65535 ? h->sliding_window : 65535;
	c->eps = (float)h->rms_norm_eps;
	c->theta_global = (float)h->rope_theta;
	c->theta_local = (float)h->rope_local_base_freq;
	c->softcap = (float)h->final_logit_softcapping;
	c->attn_softcap = (float)x->attn_logit_softcapping;
	c->query_pre_attn_scalar = (float)x->query_pre_attn_scalar;
	c->rope_factor_global = (float)x->rope_factor;
	for (l = 0; l < n; l++)
		sliding[l] = h->layer_is_sliding[l];
	c->global_period = pccx__layers_global_period(sliding, n, &l);
	if (l < n)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: layer_types: layer %u is %s, which "
				  "no period of global layers gives (global_period %u)", file, l,
				  sliding[l] ? "sliding_attention" : "full_attention",
				  c->global_period);
	if (c->family == PCCX_FAMILY_GEMMA2 && c->rope_factor_global > 0.0f &&
	    c->global_period != 1)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: rope_scaling: factor %g: Gemma 2 "
				  "scales the local layers' RoPE too, which is not supported",
				  file, (double)c->rope_factor_global);
	return PCCX_OK;
}

/*
 * Gemma 4: the fields of Gemma 1-3 (map_plain, q scale 1 and no score cap there being 0), the
 * per-layer inputs, KV sharing and the global layers' own heads, RoPE and k = v.
 */
static int map_gemma4(const pccx_hf_config *h, const struct pccx_hf_family *x, const char *file,
		      struct pccx_gemma_config *c, pccx_diag *d)
{
	int rc = map_plain(h, x, file, c, d);

	if (rc)
		return rc;
	c->ple_vocab = h->vocab_size_per_layer_input;
	c->d_ple = h->hidden_size_per_layer_input;
	c->n_kv_shared = h->num_kv_shared_layers;
	c->head_dim_global = x->head_dim_global;
	c->n_kv_heads_global = x->n_kv_heads_global;
	c->rope_partial_global = (float)x->rope_partial_global;
	c->k_eq_v = x->k_eq_v;
	c->double_wide_mlp = x->double_wide_mlp;
	c->n_experts = x->n_experts;
	c->n_experts_used = x->n_experts_used;
	c->d_expert = x->d_expert;
	if (!c->d_ple)	/* no per-layer inputs (the 26B A4B): no table either */
		c->ple_vocab = 0;
	return PCCX_OK;
}

static int map_config(const pccx_hf_config *h, const struct pccx_hf_family *x,
		      const char *file, uint32_t max_ctx, struct pccx_gemma_config *c,
		      pccx_diag *d)
{
	uint32_t l, n = h->num_hidden_layers;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "safetensors");
	if (n == 0 || n > PCCX_GEMMA_MAX_LAYERS)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: num_hidden_layers: %u, supported 1..%u", file, n,
				  PCCX_GEMMA_MAX_LAYERS);
	for (l = 1; l < n; l++)
		if (h->intermediate_size[l] != h->intermediate_size[0])
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
					  "%s: intermediate_size: differs between layers "
					  "(layer %u: %u, layer 0: %u)",
					  file, l, h->intermediate_size[l], h->intermediate_size[0]);
	if (x->family != PCCX_FAMILY_GEMMA3N) {
		rc = x->family == PCCX_FAMILY_GEMMA4 ? map_gemma4(h, x, file, c, d) :
						       map_plain(h, x, file, c, d);
		if (rc)
			return rc;
		goto check;
	}
	if (h->altup_num_inputs != PCCX_GEMMA_ALTUP_STREAMS)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: altup_num_inputs: %u, supported %u",
				  file, h->altup_num_inputs, PCCX_GEMMA_ALTUP_STREAMS);
	if (h->altup_active_idx != 0)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: altup_active_idx: %u, supported 0",
				  file, h->altup_active_idx);
	c->n_layers = n;
	c->d_model = h->hidden_size;
	c->d_ffn = h->intermediate_size[0];
	c->n_heads = h->num_attention_heads;
	c->n_kv_heads = h->num_key_value_heads;
	c->head_dim = h->head_dim;
	c->vocab = h->vocab_size;
	c->ple_vocab = h->vocab_size_per_layer_input;
	c->d_ple = h->hidden_size_per_layer_input;
	c->window = h->sliding_window;
	c->n_kv_shared = h->num_kv_shared_layers;
	c->laurel_rank = h->laurel_rank;
	c->eps = (float)h->rms_norm_eps;
	c->theta_global = (float)h->rope_theta;
	c->theta_local = (float)h->rope_local_base_freq;
	c->softcap = (float)h->final_logit_softcapping;
	/* layer pattern: global iff (i + 1) % period == 0 is the only one the graph runs */
	c->global_period =
		pccx__layers_global_period((const unsigned char *)h->layer_is_sliding, n, &l);
	if (l < n)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: layer_types: not periodic (layer %u)", file, l);
	/* sparsity: a leading run of layers with the same non-zero target */
	for (l = 0; l < n && h->activation_sparsity[l] != 0.0f &&
		    h->activation_sparsity[l] == h->activation_sparsity[0]; l++)
		;
	c->n_sparse = l;
	c->sparse_z = l ? normal_icdf(h->activation_sparsity[0]) : 0.0f;
	for (; l < n; l++)
		if (h->activation_sparsity[l] != 0.0f)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
					  "%s: activation_sparsity_pattern: not a leading run of "
					  "equal values (layer %u)",
					  file, l);
check:
	c->max_ctx = max_ctx ? max_ctx : 4096;
	rc = pccx__gemma_config_check(c, d);
	if (rc && d) {
		char why[sizeof(d->msg)];

		snprintf(why, sizeof(why), "%s", d->msg);
		return pccx__fail(d, rc, "%s: %s", file, why);
	}
	return rc;
}

/* ------------------------------------------------------------------------------------- */
/* Tensors                                                                                */

/* Tensor-map id, layer and part of a model tensor name ("blk.3.attn_q.weight", ...). */
static int locate(const char *name, int *id, uint32_t *layer, uint32_t *part)
{
	char key[PCCX_GEMMA_NAME_MAX];
	const char *s = name;
	size_t n;

	*layer = *part = 0;
	if (!strncmp(s, "blk.", 4)) {
		char *e;
		unsigned long l = strtoul(s + 4, &e, 10);

		if (*e != '.' || l >= PCCX_GEMMA_MAX_LAYERS)
			return -1;
		*layer = (uint32_t)l;
		s = e + 1;
	}
	n = strlen(s);
	if (n < 8 || strcmp(s + n - 7, ".weight"))
		return -1;
	n -= 7;
	if (n > 2 && s[n - 2] == '.' && isdigit((unsigned char)s[n - 1])) {
		*part = (uint32_t)(s[n - 1] - '0');
		n -= 2;
	}
	snprintf(key, sizeof(key), "%.*s", (int)n, s);
	*id = pccx_tensor_map_by_key(key);
	return *id < 0 ? -1 : 0;
}

static int st_row(const void *src, const void *tensor, uint64_t row, float *dst, pccx_diag *d)
{
	return pccx_st_decode_rows(src, tensor, row, 1, dst, d);
}

/* Never-read tensors a checkpoint may leave out: W_k, W_v, k_norm of layers not writing KV */
static bool optional(const struct pccx_gemma_model *m, int id, uint32_t layer)
{
	return !m->layers[layer].kv_write &&
	       (id == PCCX_TENSOR_MAP_ATTN_K || id == PCCX_TENSOR_MAP_ATTN_V ||
		id == PCCX_TENSOR_MAP_ATTN_K_NORM);
}

static int load_tensors(const pccx_safetensors *st, const pccx_hf_config *h,
			struct pccx_gemma_model *m, pccx_q4_error *err, pccx_diag *d)
{
	uint64_t clipped = 0;
	uint32_t t, maxc = 0;
	float *row;
	int rc = PCCX_OK;

	for (t = 0; t < m->n_t; t++)
		maxc = m->t[t].cols > maxc ? m->t[t].cols : maxc;
	row = malloc(sizeof(float) * (maxc ? maxc : 1));
	if (!row)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx_st_name(st));
	for (t = 0; !rc && t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];
		const pccx_st_tensor *s;
		uint32_t layer, part;
		int id;

		if (locate(T->name, &id, &layer, &part)) {
			rc = pccx__fail(d, PCCX_ERR_INVALID, "%s: no tensor-map entry for '%s'",
					pccx_st_name(st), T->name);
			break;
		}
		rc = pccx_tensor_map_find_st(st, h, id, layer, part, &s, d);
		if (rc == PCCX_ERR_NOT_FOUND && optional(m, id, layer)) {
			rc = PCCX_OK;
			continue;
		}
		if (rc)
			break;
		if (!s->n_dims || s->shape[s->n_dims - 1] != T->cols ||
		    s->n_elems != (uint64_t)T->rows * T->cols) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT,
					"%s: tensor '%s': shape does not match (%u, %u)", s->file,
					s->name, T->rows, T->cols);
			break;
		}
		rc = pccx__gemma_place_rows(m, t, st_row, st, s, 0, row, err, &clipped, s->name,
					      d);
		/* converted: the mapped checkpoint need not stay resident beside the model */
		if (!rc)
			pccx__st_release(st, s);
	}
	free(row);
	return rc;
}

/* ---- Gemma 1, 2 and 3 ------------------------------------------------------------------ */

#define ST_3N_PREFIX "model.language_model."

/*
 * Where the language model's tensors are: "model." in a text-only checkpoint, or in a
 * multimodal Gemma 3 "model.language_model." (newer transformers) or "language_model.model."
 * (older), found by its embedding.
 */
static const char *plain_prefix(const pccx_safetensors *st, bool vision)
{
	static const char *const prefixes[] = { ST_3N_PREFIX, "language_model.model.", "model." };
	char name[96];
	size_t i;

	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%sembed_tokens.weight", prefixes[i]);
		if (pccx_st_find(st, name))
			return prefixes[i];
	}
	return vision ? prefixes[0] : prefixes[2];
}

/*
 * The checkpoint's name of model tensor `T` (the Gemma 3n map's name under another prefix);
 * Gemma 1's pre-FFN norm is its post_attention_layernorm (it has no post-attention norm).
 */
static int plain_name(const struct pccx_gemma_model *m, const char *prefix, const char *tname,
		      char *buf, size_t size)
{
	char hf[160];
	uint32_t layer, part;
	int id;

	/* Gemma 4's layer scalar is a buffer, not a parameter: no ".weight" */
	if (sscanf(tname, "blk.%u.layer_output_scale.weigh%c", &layer, hf) == 2) {
		snprintf(buf, size, "%slayers.%u.layer_scalar", prefix, layer);
		return 0;
	}
	if (locate(tname, &id, &layer, &part) ||
	    pccx_tensor_map_st_name(id, layer, 0, hf, sizeof(hf)) ||
	    strncmp(hf, ST_3N_PREFIX, strlen(ST_3N_PREFIX)))
		return -1;
	if (m->cfg.family == PCCX_FAMILY_GEMMA && id == PCCX_TENSOR_MAP_FFN_NORM)
		snprintf(hf, sizeof(hf), ST_3N_PREFIX "layers.%u.post_attention_layernorm.weight",
			 layer);
	snprintf(buf, size, "%s%s", prefix, hf + strlen(ST_3N_PREFIX));
	return 0;
}

/* A Hugging Face norm weight w, as the multiplier 1 + w its RMSNorm applies (in FP32). */
static int st_row_plus_one(const void *src, const void *tensor, uint64_t row, float *dst,
			   pccx_diag *d)
{
	const pccx_st_tensor *t = tensor;
	uint64_t i, n = t->shape[t->n_dims - 1];
	int rc = pccx_st_decode_rows(src, tensor, row, 1, dst, d);

	for (i = 0; !rc && i < n; i++)
		dst[i] += 1.0f;
	return rc;
}

static bool is_norm(const char *name)
{
	size_t n = strlen(name);

	return n >= 11 && !strcmp(name + n - 11, "norm.weight");
}

/*
 * Where model tensor t is in a Gemma 4 checkpoint with experts (Gemma4TextRouter,
 * Gemma4TextExperts): the tensor's name, its shape and the first row of t in it. Expert e's
 * gate and up are rows 2·I·e and 2·I·e + I of experts.gate_up_proj (E, 2I, D) (the first half
 * is the gate, as MixtralExperts splits it), its down rows D·e of experts.down_proj (E, D, I);
 * the router's proj, scale (D) and per_expert_scale (E), and the three norms of the experts'
 * branch are tensors of their own. *last: no later model tensor reads this tensor.
 */
struct moe_src {
	char name[192];
	uint32_t nd;
	uint64_t shape[3];
	uint64_t base;
	bool last;
};

static bool moe_src(const struct pccx_gemma_model *m, const char *prefix, uint32_t t,
		    struct moe_src *o)
{
	static const struct {
		enum pccx_gemma_lvec v;
		const char *hf;
	} vecs[] = {
		{ PCCX_GEMMA_LV_ROUTER_SCALE, "router.scale" },
		{ PCCX_GEMMA_LV_EXPERT_SCALE, "router.per_expert_scale" },
		{ PCCX_GEMMA_LV_POST_FFN_NORM_1, "post_feedforward_layernorm_1.weight" },
		{ PCCX_GEMMA_LV_PRE_FFN_NORM_2, "pre_feedforward_layernorm_2.weight" },
		{ PCCX_GEMMA_LV_POST_FFN_NORM_2, "post_feedforward_layernorm_2.weight" },
	};
	uint32_t l, i;

	for (l = 0; l < m->cfg.n_layers; l++) {
		const struct pccx_gemma_layer_w *lw = &m->w.layer[l];
		uint64_t E = m->layers[l].n_experts, I = m->layers[l].d_expert, D = m->cfg.d_model;
		int64_t k = (int64_t)t - lw->experts;
		const char *hf = NULL;

		if (lw->experts < 0)
			continue;
		o->base = 0;
		o->last = true;
		if (k >= 0 && k < 3 * (int64_t)E) {
			uint64_t e = (uint64_t)k / 3, part = (uint64_t)k % 3;

			o->nd = 3;
			o->shape[0] = E;
			o->shape[1] = part < 2 ? 2 * I : D;
			o->shape[2] = part < 2 ? D : I;
			o->base = part < 2 ? e * 2 * I + part * I : e * D;
			o->last = e == E - 1 && part != 0;
			snprintf(o->name, sizeof(o->name), "%slayers.%u.experts.%s", prefix, l,
				 part < 2 ? "gate_up_proj" : "down_proj");
			return true;
		}
		if ((int32_t)t == lw->moe_router) {
			o->nd = 2;
			o->shape[0] = E;
			o->shape[1] = D;
			hf = "router.proj.weight";
		}
		for (i = 0; !hf && i < sizeof(vecs) / sizeof(vecs[0]); i++) {
			if (lw->vec[vecs[i].v] != (int32_t)t)
				continue;
			o->nd = 1;
			o->shape[0] = vecs[i].v == PCCX_GEMMA_LV_EXPERT_SCALE ? E : D;
			hf = vecs[i].hf;
		}
		if (hf) {
			snprintf(o->name, sizeof(o->name), "%slayers.%u.%s", prefix, l, hf);
			return true;
		}
	}
	return false;
}

/* One tensor (or one expert's part of one) of a Gemma 4 checkpoint's experts into t. */
static int load_moe_tensor(const pccx_safetensors *st, struct pccx_gemma_model *m, uint32_t t,
			   const struct moe_src *o, float *row, pccx_q4_error *err, pccx_diag *d)
{
	const pccx_st_tensor *s;
	bool ok;
	uint32_t i;
	int rc = pccx_st_get_tensor(st, o->name, &s, d);

	if (rc == PCCX_ERR_NOT_FOUND)
		return pccx__fail(d, rc, "%s: tensor '%s' (%s): missing", pccx_st_name(st), o->name,
				  m->t[t].name);
	if (rc)
		return rc;
	ok = s->n_dims == o->nd;
	for (i = 0; ok && i < o->nd; i++)
		ok = s->shape[i] == o->shape[i];
	if (!ok) {
		char got[64], want[64];
		size_t a = 0, b = 0;

		for (i = 0; i < s->n_dims && a < sizeof(got); i++)
			a += (size_t)snprintf(got + a, sizeof(got) - a, "%s%llu", i ? ", " : "",
					      (unsigned long long)s->shape[i]);
		for (i = 0; i < o->nd && b < sizeof(want); i++)
			b += (size_t)snprintf(want + b, sizeof(want) - b, "%s%llu", i ? ", " : "",
					      (unsigned long long)o->shape[i]);
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': shape [%s], expected [%s]",
				  s->file, o->name, got, want);
	}
	/* a fused tensor's rows are placed per expert: as one (E * rows, cols) matrix */
	rc = pccx__gemma_place_rows(m, t, st_row, st, s, o->base, row, err, NULL, o->name, d);
	if (!rc && o->last)
		pccx__st_release(st, s);
	return rc;
}

/* One tensor of a Gemma 1, 2 or 3 checkpoint into model tensor t. */
static int load_plain_tensor(const pccx_safetensors *st, const char *prefix,
			     struct pccx_gemma_model *m, uint32_t t, float *row,
			     pccx_q4_error *err, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	bool vec = T->rows == 1, plus_one;
	const pccx_st_tensor *s;
	char name[192];
	int rc;

	if (plain_name(m, prefix, T->name, name, sizeof(name)))
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: no tensor-map entry for '%s'",
				  pccx_st_name(st), T->name);
	rc = pccx_st_get_tensor(st, name, &s, d);
	if (rc == PCCX_ERR_NOT_FOUND)
		return pccx__fail(d, rc, "%s: tensor '%s' (%s): missing", pccx_st_name(st), name,
				  T->name);
	if (rc)
		return rc;
	if (s->n_dims != (vec ? 1u : 2u) || s->shape[s->n_dims - 1] != T->cols ||
	    (!vec && s->shape[0] != T->rows)) {
		if (vec)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': shape [%llu%s], "
					  "expected [%u]", s->file, name,
					  (unsigned long long)s->shape[0],
					  s->n_dims > 1 ? ", ..." : "", T->cols);
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': shape [%llu%s%llu], "
				  "expected [%u, %u]", s->file, name,
				  (unsigned long long)s->shape[0], s->n_dims > 1 ? ", " : "",
				  (unsigned long long)(s->n_dims > 1 ? s->shape[1] : 0), T->rows,
				  T->cols);
	}
	plus_one = pccx__family(m->cfg.family)->norm_plus_one && T->fmt == PCCX_WFMT_F32 &&
		   is_norm(T->name);
	rc = pccx__gemma_place_rows(m, t, plus_one ? st_row_plus_one : st_row, st, s, 0, row,
				    err, NULL, name, d);
	if (!rc)
		pccx__st_release(st, s);
	return rc;
}

/*
 * Every tensor of a Gemma 1, 2 or 3 model from the checkpoint; the vision tower of a
 * multimodal Gemma 3 is not read (*skipped counts the tensors outside the language model).
 */
static int load_plain(const pccx_safetensors *st, bool vision, struct pccx_gemma_model *m,
		      pccx_q4_error *err, uint64_t *skipped, pccx_diag *d)
{
	const char *prefix = plain_prefix(st, vision);
	uint32_t t, maxc = 0;
	uint64_t i;
	float *row;
	int rc = PCCX_OK;

	*skipped = 0;
	for (i = 0; i < pccx_st_n_tensors(st); i++)
		*skipped += strncmp(pccx_st_tensor_at(st, i)->name, prefix, strlen(prefix)) &&
			    strcmp(pccx_st_tensor_at(st, i)->name, "lm_head.weight");
	for (t = 0; t < m->n_t; t++)
		maxc = m->t[t].cols > maxc ? m->t[t].cols : maxc;
	row = malloc(sizeof(float) * (maxc ? maxc : 1));
	if (!row)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx_st_name(st));
	for (t = 0; !rc && t < m->n_t; t++) {
		struct moe_src o;

		if (moe_src(m, prefix, t, &o))
			rc = load_moe_tensor(st, m, t, &o, row, err, d);
		else
			rc = load_plain_tensor(st, prefix, m, t, row, err, d);
	}
	free(row);
	return rc;
}

/* ------------------------------------------------------------------------------------- */

/* config.json in the directory `path`, or next to the file `path`. */
static int config_path(const char *path, char *buf, size_t size, pccx_diag *d)
{
	const char *slash = strrchr(path, '/');
	struct stat sb;
	int n;

	if (stat(path, &sb))
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: no such file or directory", path);
	if (S_ISDIR(sb.st_mode))
		n = snprintf(buf, size, "%s/config.json", path);
	else if (slash)
		n = snprintf(buf, size, "%.*s/config.json", (int)(slash - path), path);
	else
		n = snprintf(buf, size, "config.json");
	if (n < 0 || (size_t)n >= size)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: path too long", path);
	return PCCX_OK;
}

int pccx__gemma_load_safetensors(struct pccx_gemma_model **out, const char *path,
				   uint32_t max_ctx,
				   pccx_q4_error *err, pccx_diag *d)
{
	struct pccx_gemma_model *m = NULL;
	struct pccx_gemma_config cfg;
	struct pccx_hf_family x;
	pccx_safetensors *st = NULL;
	pccx_q4_error local;
	pccx_hf_config *h;
	uint64_t skipped = 0;
	char cpath[4096];
	int rc;

	*out = NULL;
	if (!err)
		err = &local;
	pccx_q4_error_init(err);
	h = malloc(sizeof(*h));
	if (!h)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	rc = config_path(path, cpath, sizeof(cpath), d);
	if (!rc)
		rc = pccx__hf_config_read(cpath, h, &x, d);
	if (!rc)
		rc = map_config(h, &x, cpath, max_ctx, &cfg, d);
	if (!rc)
		rc = pccx_st_open(&st, path, d);
	if (!rc)
		rc = pccx__gemma_model_create(&m, &cfg, d);
	if (!rc && x.family == PCCX_FAMILY_GEMMA3N)
		rc = load_tensors(st, h, m, err, d);
	else if (!rc)
		rc = load_plain(st, x.vision, m, err, &skipped, d);
	pccx_st_close(st);
	free(h);
	if (rc) {
		pccx__gemma_model_free(m);
		return rc;
	}
	pccx__gemma_model_q4c(m);
	/* a notice, not a failure: the caller may show it */
	if (x.vision && skipped && d) {
		d->status = PCCX_OK;
		snprintf(d->msg, sizeof(d->msg), "%s: the %s (%llu tensors) are not loaded, only "
			 "the language model", path, x.family == PCCX_FAMILY_GEMMA4 ?
			 "vision and audio towers and their projections" :
			 "vision tower and projector", (unsigned long long)skipped);
	}
	*out = m;
	return PCCX_OK;
}
