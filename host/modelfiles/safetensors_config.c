/* SPDX-License-Identifier: MIT */
/*
 * Hugging Face config.json of Gemma 3n: the text-decoder fields, with the defaults of the
 * Hugging Face configuration class for the optional ones, and consistency checks.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "json.h"
#include "layers.h"
#include "modelfile_util.h"
#include "pccx/modelfile.h"

/* Bits of pccx_hf_config.defaulted, in the order documented in docs/model-files.md. */
enum {
	DEF_VOCAB_PLI, DEF_HIDDEN_PLI,
	DEF_SLIDING_WINDOW, DEF_LAYER_TYPES,
	DEF_ROPE_THETA, DEF_ROPE_LOCAL,
	DEF_RMS_EPS, DEF_ALTUP_NUM,
	DEF_ALTUP_ACTIVE, DEF_LAUREL_RANK,
	DEF_KV_SHARED, DEF_SPARSITY,
	DEF_SOFTCAP,
};

void pccx_hf_config_e4b(pccx_hf_config *c)
{
	memset(c, 0, sizeof(*c));
	c->hidden_size = 2048;
	c->num_hidden_layers = 35;
	pccx__layers_pattern(5, 35, c->layer_is_sliding);
	for (uint32_t i = 0; i < 35; i++) {
		c->intermediate_size[i] = 16384;
		c->activation_sparsity[i] = i < 10 ? 0.95f : 0.0f;
	}
	c->num_attention_heads = 8;
	c->num_key_value_heads = 2;
	c->head_dim = 256;
	c->vocab_size = 262400;
	c->vocab_size_per_layer_input = 262144;
	c->hidden_size_per_layer_input = 256;
	c->sliding_window = 512;
	c->rope_theta = 1000000.0;
	c->rope_local_base_freq = 10000.0;
	c->rms_norm_eps = 1e-6;
	c->altup_num_inputs = 4;
	c->altup_active_idx = 0;
	c->laurel_rank = 64;
	c->num_kv_shared_layers = 15;
	c->final_logit_softcapping = 30.0;
}

struct ctx {
	const pccx_json_doc *doc;
	const pccx_json *obj;
	pccx_hf_config *c;
	pccx_diag *d;
};

static int req_u32(struct ctx *x, const char *key, int64_t min, int64_t max, uint32_t *out)
{
	int64_t v;
	int rc = pccx__json_get_i64(x->doc, x->obj, key, min, max, &v, x->d);

	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

/* Absent or null: keep *out (the default) and set the `bit` of defaulted. */
static int opt_u32(struct ctx *x, const char *key, int64_t min, int64_t max, uint32_t *out,
		   int bit)
{
	const pccx_json *m = pccx__json_get(x->obj, key);
	int64_t v;
	int rc;

	if (!m || pccx__json_type_of(m) == PCCX_JSON_NULL) {
		x->c->defaulted |= 1u << bit;
		return PCCX_OK;
	}
	rc = pccx__json_get_i64(x->doc, x->obj, key, min, max, &v, x->d);
	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

/* A finite number in [lo, hi] (hi_open: hi excluded). */
static int num_in(struct ctx *x, const pccx_json *m, double lo, double hi, bool hi_open,
		  double *out)
{
	double v;
	int rc = pccx__json_expect(x->doc, m, PCCX_JSON_NUMBER, x->d);

	if (rc)
		return rc;
	v = pccx__json_num(m);
	if (!isfinite(v) || v < lo || v > hi || (hi_open && v == hi))
		return pccx__json_fail(x->doc, m, x->d, PCCX_ERR_RANGE, "%g is outside [%g, %g%s", v,
				       lo, hi, hi_open ? ")" : "]");
	*out = v;
	return PCCX_OK;
}

static int opt_num(struct ctx *x, const char *key, double lo, double hi, bool hi_open,
		   double *out, int bit)
{
	const pccx_json *m = pccx__json_get(x->obj, key);

	if (!m || pccx__json_type_of(m) == PCCX_JSON_NULL) {
		x->c->defaulted |= 1u << bit;
		return PCCX_OK;
	}
	return num_in(x, m, lo, hi, hi_open, out);
}

static int read_intermediate(struct ctx *x)
{
	const pccx_json *m;
	uint32_t L = x->c->num_hidden_layers;
	int rc = pccx__json_get_member(x->doc, x->obj, "intermediate_size", PCCX_JSON_INVALID, &m,
				       x->d);

	if (rc)
		return rc;
	if (pccx__json_type_of(m) == PCCX_JSON_ARRAY) {
		if (pccx__json_count(m) != L)
			return pccx__json_fail(x->doc, m, x->d, PCCX_ERR_FORMAT,
					       "%zu entries, num_hidden_layers is %" PRIu32,
					       pccx__json_count(m), L);
		for (uint32_t i = 0; i < L; i++) {
			const pccx_json *e = pccx__json_at(m, i);

			if (!pccx__json_is_int(e) || pccx__json_int(e) < 1 ||
			    pccx__json_int(e) > (1 << 24))
				return pccx__json_fail(x->doc, e, x->d, PCCX_ERR_RANGE,
						       "expected an integer in [1, 16777216]");
			x->c->intermediate_size[i] = (uint32_t)pccx__json_int(e);
		}
		return PCCX_OK;
	}
	if (!pccx__json_is_int(m) || pccx__json_int(m) < 1 || pccx__json_int(m) > (1 << 24))
		return pccx__json_fail(x->doc, m, x->d, PCCX_ERR_RANGE,
				       "expected an integer in [1, 16777216] or one per layer");
	for (uint32_t i = 0; i < L; i++)
		x->c->intermediate_size[i] = (uint32_t)pccx__json_int(m);
	return PCCX_OK;
}

static int read_layer_types(struct ctx *x)
{
	const pccx_json *m = pccx__json_get(x->obj, "layer_types");
	uint32_t L = x->c->num_hidden_layers;

	if (!m || pccx__json_type_of(m) == PCCX_JSON_NULL) {
		x->c->defaulted |= 1u << DEF_LAYER_TYPES;
		/* Hugging Face's default: every 5th layer full attention */
		pccx__layers_pattern(5, L, x->c->layer_is_sliding);
		return PCCX_OK;
	}
	if (pccx__json_type_of(m) != PCCX_JSON_ARRAY)
		return pccx__json_expect(x->doc, m, PCCX_JSON_ARRAY, x->d);
	if (pccx__json_count(m) != L)
		return pccx__json_fail(x->doc, m, x->d, PCCX_ERR_FORMAT,
				       "%zu entries, num_hidden_layers is %" PRIu32,
				       pccx__json_count(m),
				       L);
	for (uint32_t i = 0; i < L; i++) {
		const pccx_json *e = pccx__json_at(m, i);
		const char *s = pccx__json_str(e, NULL);

		if (!s)
			return pccx__json_expect(x->doc, e, PCCX_JSON_STRING, x->d);
		if (strcmp(s, "sliding_attention") == 0)
			x->c->layer_is_sliding[i] = true;
		else if (strcmp(s, "full_attention") == 0)
			x->c->layer_is_sliding[i] = false;
		else
			return pccx__json_fail(x->doc, e, x->d, PCCX_ERR_UNSUPPORTED,
					       "'%.40s' is neither \"full_attention\" nor "
					       "\"sliding_attention\"",
					       s);
	}
	return PCCX_OK;
}

static int read_sparsity(struct ctx *x)
{
	const pccx_json *m = pccx__json_get(x->obj, "activation_sparsity_pattern");
	uint32_t L = x->c->num_hidden_layers;

	if (!m) {
		/* The Hugging Face default has 35 entries: 0.95 for 10 layers, then 0. */
		if (L != 35)
			return pccx__fail(x->d, PCCX_ERR_FORMAT,
					  "%s: activation_sparsity_pattern is absent and its "
					  "default has 35 entries, num_hidden_layers is %" PRIu32,
					  pccx__json_doc_name(x->doc), L);
		x->c->defaulted |= 1u << DEF_SPARSITY;
		for (uint32_t i = 0; i < L; i++)
			x->c->activation_sparsity[i] = i < 10 ? 0.95f : 0.0f;
		return PCCX_OK;
	}
	if (pccx__json_type_of(m) == PCCX_JSON_NULL) {
		for (uint32_t i = 0; i < L; i++)
			x->c->activation_sparsity[i] = 0.0f;
		return PCCX_OK;
	}
	if (pccx__json_type_of(m) != PCCX_JSON_ARRAY)
		return pccx__json_expect(x->doc, m, PCCX_JSON_ARRAY, x->d);
	if (pccx__json_count(m) != L)
		return pccx__json_fail(x->doc, m, x->d, PCCX_ERR_FORMAT,
				       "%zu entries, num_hidden_layers is %" PRIu32,
				       pccx__json_count(m),
				       L);
	for (uint32_t i = 0; i < L; i++) {
		double v;
		int rc = num_in(x, pccx__json_at(m, i), 0.0, 1.0, true, &v);

		if (rc)
			return rc;
		x->c->activation_sparsity[i] = (float)v;
	}
	return PCCX_OK;
}

/* rope_theta / rope_local_base_freq, or the newer "rope_parameters" per layer type. */
static int read_rope(struct ctx *x)
{
	const pccx_json *rp = pccx__json_get(x->obj, "rope_parameters");
	const pccx_json *rs = pccx__json_get(x->obj, "rope_scaling");
	int rc;

	if (rs && pccx__json_type_of(rs) != PCCX_JSON_NULL) {
		const char *t = pccx__json_str(pccx__json_get(rs, "rope_type"), NULL);

		if (!t)
			t = pccx__json_str(pccx__json_get(rs, "type"), NULL);
		if (!t || strcmp(t, "default") != 0)
			return pccx__json_fail(x->doc, rs, x->d, PCCX_ERR_UNSUPPORTED,
					       "RoPE scaling is not supported");
	}
	rc = opt_num(x, "rope_theta", 1.0, 1e12, false, &x->c->rope_theta, DEF_ROPE_THETA);
	if (!rc)
		rc = opt_num(x, "rope_local_base_freq",
			     1.0, 1e12, false, &x->c->rope_local_base_freq,
			     DEF_ROPE_LOCAL);
	if (rc || !rp || pccx__json_type_of(rp) == PCCX_JSON_NULL)
		return rc;
	if (pccx__json_type_of(rp) != PCCX_JSON_OBJECT)
		return pccx__json_expect(x->doc, rp, PCCX_JSON_OBJECT, x->d);
	{
		static const char *const kinds[2] = { "full_attention", "sliding_attention" };
		double *dst[2] = { &x->c->rope_theta, &x->c->rope_local_base_freq };
		int bits[2] = { DEF_ROPE_THETA, DEF_ROPE_LOCAL };

		for (int k = 0; k < 2; k++) {
			const pccx_json *p = pccx__json_get(rp, kinds[k]), *th;
			const char *t;

			if (!p)
				continue;
			if (pccx__json_type_of(p) != PCCX_JSON_OBJECT)
				return pccx__json_expect(x->doc, p, PCCX_JSON_OBJECT, x->d);
			t = pccx__json_str(pccx__json_get(p, "rope_type"), NULL);
			if (t && strcmp(t, "default") != 0)
				return pccx__json_fail(x->doc, p, x->d, PCCX_ERR_UNSUPPORTED,
						       "rope_type '%.40s' is not supported", t);
			th = pccx__json_get(p, "rope_theta");
			if (!th)
				continue;
			/* A value given both ways must agree. */
			if (!(x->c->defaulted & (1u << bits[k]))) {
				double v;

				rc = num_in(x, th, 1.0, 1e12, false, &v);
				if (rc)
					return rc;
				if (v != *dst[k])
					return pccx__json_fail(x->doc, th, x->d, PCCX_ERR_FORMAT,
							       "%g disagrees with %s = %g", v,
							       k ? "rope_local_base_freq" :
							       "rope_theta",
							      *dst[k]);
				continue;
			}
			rc = num_in(x, th, 1.0, 1e12, false, dst[k]);
			if (rc)
				return rc;
			x->c->defaulted &= ~(1u << bits[k]);
		}
	}
	return PCCX_OK;
}

static int check_consistency(struct ctx *x)
{
	pccx_hf_config *c = x->c;
	const char *n = pccx__json_doc_name(x->doc);
	uint32_t src[PCCX_HF_MAX_LAYERS], bad;

	if (c->num_attention_heads % c->num_key_value_heads)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: num_attention_heads %" PRIu32 " is not a multiple of "
				  "num_key_value_heads %" PRIu32,
				  n, c->num_attention_heads, c->num_key_value_heads);
	if (c->head_dim % 2)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: head_dim %" PRIu32 " is odd (RoPE rotates pairs)",
				  n, c->head_dim);
	if (c->vocab_size_per_layer_input > c->vocab_size)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: vocab_size_per_layer_input %" PRIu32 " exceeds vocab_size %"
				  PRIu32,
				  n,
				  c->vocab_size_per_layer_input, c->vocab_size);
	if (c->altup_active_idx >= c->altup_num_inputs)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: altup_active_idx %" PRIu32 " is not below altup_num_inputs %"
				  PRIu32,
				  n,
				  c->altup_active_idx, c->altup_num_inputs);
	if (c->num_kv_shared_layers >= c->num_hidden_layers)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: num_kv_shared_layers %" PRIu32 " leaves no layer computing "
				  "K/V (num_hidden_layers %" PRIu32 ")",
				  n, c->num_kv_shared_layers, c->num_hidden_layers);
	/* A KV-sharing layer reuses the last earlier layer of its own attention type. */
	bad = pccx__layers_kv_sources(c->layer_is_sliding, c->num_hidden_layers,
				      c->num_kv_shared_layers, src);
	if (bad < c->num_hidden_layers)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: layer %" PRIu32 " (%s) shares K/V but no layer "
				  "before %" PRIu32 " has that attention type",
				  n, bad, c->layer_is_sliding[bad] ? "sliding_attention" :
				  "full_attention",
				  c->num_hidden_layers - c->num_kv_shared_layers);
	return PCCX_OK;
}

static int parse_doc(const pccx_json_doc *doc, pccx_hf_config *cfg, pccx_diag *d)
{
	const pccx_json *root = pccx__json_root(doc), *tc;
	struct ctx x = { doc, root, cfg, d };
	const pccx_json *sc;
	int rc;

	pccx_hf_config_e4b(cfg);
	cfg->defaulted = 0;
	rc = pccx__json_expect(doc, root, PCCX_JSON_OBJECT, d);
	if (rc)
		return rc;
	tc = pccx__json_get(root, "text_config");
	if (tc) {
		rc = pccx__json_expect(doc, tc, PCCX_JSON_OBJECT, d);
		if (rc)
			return rc;
		x.obj = tc;
	}
	rc = req_u32(&x, "num_hidden_layers", 1, PCCX_HF_MAX_LAYERS, &cfg->num_hidden_layers);
	if (!rc)
		rc = req_u32(&x, "hidden_size", 1, 1 << 16, &cfg->hidden_size);
	if (!rc)
		rc = read_intermediate(&x);
	if (!rc)
		rc = req_u32(&x, "num_attention_heads", 1, 1024, &cfg->num_attention_heads);
	if (!rc)
		rc = req_u32(&x, "num_key_value_heads", 1, 1024, &cfg->num_key_value_heads);
	if (!rc)
		rc = req_u32(&x, "head_dim", 1, 4096, &cfg->head_dim);
	if (!rc)
		rc = req_u32(&x, "vocab_size", 1, INT32_MAX, &cfg->vocab_size);
	if (!rc)
		rc = opt_u32(&x, "vocab_size_per_layer_input", 1, INT32_MAX,
			     &cfg->vocab_size_per_layer_input, DEF_VOCAB_PLI);
	if (!rc)
		rc = opt_u32(&x, "hidden_size_per_layer_input", 1, 1 << 16,
			     &cfg->hidden_size_per_layer_input, DEF_HIDDEN_PLI);
	if (!rc)
		rc = opt_u32(&x, "sliding_window", 1, INT32_MAX, &cfg->sliding_window,
			     DEF_SLIDING_WINDOW);
	if (!rc)
		rc = read_layer_types(&x);
	if (!rc)
		rc = read_rope(&x);
	if (!rc)
		rc = opt_num(&x, "rms_norm_eps", 0.0, 1.0, true, &cfg->rms_norm_eps, DEF_RMS_EPS);
	if (!rc && cfg->rms_norm_eps <= 0.0)
		rc = pccx__json_fail(doc, pccx__json_get(x.obj, "rms_norm_eps"), d, PCCX_ERR_RANGE,
				     "must be positive");
	if (!rc)
		rc = opt_u32(&x, "altup_num_inputs", 2, 16, &cfg->altup_num_inputs, DEF_ALTUP_NUM);
	if (!rc)
		rc = opt_u32(&x, "altup_active_idx",
			     0, 15, &cfg->altup_active_idx, DEF_ALTUP_ACTIVE);
	if (!rc)
		rc = opt_u32(&x, "laurel_rank", 1, 1 << 16, &cfg->laurel_rank, DEF_LAUREL_RANK);
	if (!rc)
		rc = opt_u32(&x, "num_kv_shared_layers", 0, PCCX_HF_MAX_LAYERS,
			     &cfg->num_kv_shared_layers, DEF_KV_SHARED);
	if (!rc)
		rc = read_sparsity(&x);
	if (rc)
		return rc;
	sc = pccx__json_get(x.obj, "final_logit_softcapping");
	if (!sc)
		cfg->defaulted |= 1u << DEF_SOFTCAP;
	else if (pccx__json_type_of(sc) == PCCX_JSON_NULL)
		cfg->final_logit_softcapping = 0.0;
	else if ((rc = num_in(&x, sc, 0.0, 1e9, false, &cfg->final_logit_softcapping)))
		return rc;
	/* Layers beyond num_hidden_layers keep nothing from the E4B defaults. */
	for (uint32_t i = cfg->num_hidden_layers; i < PCCX_HF_MAX_LAYERS; i++) {
		cfg->intermediate_size[i] = 0;
		cfg->layer_is_sliding[i] = false;
		cfg->activation_sparsity[i] = 0.0f;
	}
	return check_consistency(&x);
}

int pccx_hf_config_parse(const void *json, size_t len, const char *name, pccx_hf_config *cfg,
			  pccx_diag *d)
{
	pccx_json_limits lim = { .max_size = (size_t)16 << 20, .max_depth = 64 };
	pccx_json_doc *doc;
	int rc = pccx__json_parse(json, len, name ? name : "config.json", &lim, &doc, d);

	if (rc)
		return rc;
	rc = parse_doc(doc, cfg, d);
	pccx__json_free(doc);
	return rc;
}

int pccx_hf_config_read(const char *path, pccx_hf_config *cfg, pccx_diag *d)
{
	pccx_json_limits lim = { .max_size = (size_t)16 << 20, .max_depth = 64 };
	pccx_json_doc *doc;
	int rc = pccx__json_parse_file(path, &lim, &doc, d);

	if (rc)
		return rc;
	rc = parse_doc(doc, cfg, d);
	pccx__json_free(doc);
	return rc;
}
