/* SPDX-License-Identifier: MIT */
/*
 * Hugging Face config.json of every family: the text-decoder fields, with the defaults of the
 * Hugging Face configuration class of the family for the optional ones, and consistency
 * checks. model_type selects the family; Gemma 3n's (or none) is read as it always was.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "hf_config.h"
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

/*
 * The keys every family's text config must give (Gemma 1-4; Gemma 3n reads its own with its
 * defaults): layers, width, FFN width(s), heads, KV heads, head size, vocabulary.
 */
static int read_shape(struct ctx *x)
{
	pccx_hf_config *c = x->c;
	int rc;

	rc = req_u32(x, "num_hidden_layers", 1, PCCX_HF_MAX_LAYERS, &c->num_hidden_layers);
	if (!rc)
		rc = req_u32(x, "hidden_size", 1, 1 << 16, &c->hidden_size);
	if (!rc)
		rc = read_intermediate(x);
	if (!rc)
		rc = req_u32(x, "num_attention_heads", 1, 1024, &c->num_attention_heads);
	if (!rc)
		rc = req_u32(x, "num_key_value_heads", 1, 1024, &c->num_key_value_heads);
	if (!rc)
		rc = req_u32(x, "head_dim", 1, 4096, &c->head_dim);
	if (!rc)
		rc = req_u32(x, "vocab_size", 1, INT32_MAX, &c->vocab_size);
	return rc;
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

/* ---- Gemma 1, 2 and 3 ------------------------------------------------------------------ */

/* Hugging Face's defaults of GemmaConfig, Gemma2Config and Gemma3TextConfig that differ. */
struct plain_defaults {
	double rope_theta, softcap, attn_softcap;
	uint32_t max_pos, period;
};

static const struct plain_defaults *plain_defaults(enum pccx_family f)
{
	static const struct plain_defaults g1 = { 10000.0, 0.0, 0.0, 8192, 1 };
	static const struct plain_defaults g2 = { 10000.0, 30.0, 50.0, 8192, 2 };
	static const struct plain_defaults g3 = { 1000000.0, 0.0, 0.0, 131072, 6 };

	return f == PCCX_FAMILY_GEMMA ? &g1 : f == PCCX_FAMILY_GEMMA2 ? &g2 : &g3;
}

/* A soft-cap: absent gives the default, null none (0). */
static int opt_cap(struct ctx *x, const char *key, double def, double *out)
{
	const pccx_json *m = pccx__json_get(x->obj, key);

	*out = def;
	if (!m)
		return PCCX_OK;
	if (pccx__json_type_of(m) == PCCX_JSON_NULL) {
		*out = 0.0;
		return PCCX_OK;
	}
	return num_in(x, m, 0.0, 1e9, false, out);
}

/* The MLP's activation: GeGLU with the tanh GELU (exact GELU accepted as Hugging Face's
 * Gemma 1 configs name it "gelu" in hidden_act, which the model replaces by the tanh one). */
static int read_activation(struct ctx *x)
{
	static const char *const keys[] = { "hidden_activation", "hidden_act" };

	for (size_t k = 0; k < 2; k++) {
		const pccx_json *m = pccx__json_get(x->obj, keys[k]);
		const char *s;

		if (!m || pccx__json_type_of(m) == PCCX_JSON_NULL)
			continue;
		s = pccx__json_str(m, NULL);
		if (!s)
			return pccx__json_expect(x->doc, m, PCCX_JSON_STRING, x->d);
		if (strcmp(s, "gelu_pytorch_tanh") && strcmp(s, "gelu"))
			return pccx__json_fail(x->doc, m, x->d, PCCX_ERR_UNSUPPORTED,
					       "'%.40s' is not supported (gelu_pytorch_tanh or "
					       "gelu)", s);
		return PCCX_OK;	/* hidden_activation, when given, is the one used */
	}
	return PCCX_OK;
}

/* One RoPE description: rope_type / type "default" or "linear" (with factor), or refused. */
static int rope_kind(struct ctx *x, const pccx_json *p, bool allow_linear, double *factor)
{
	const char *t = pccx__json_str(pccx__json_get(p, "rope_type"), NULL);
	const pccx_json *f;

	if (!t)
		t = pccx__json_str(pccx__json_get(p, "type"), NULL);
	if (!t || !strcmp(t, "default"))
		return PCCX_OK;
	if (strcmp(t, "linear") || !allow_linear)
		return pccx__json_fail(x->doc, p, x->d, PCCX_ERR_UNSUPPORTED,
				       "rope_type '%.40s' is not supported (%s)", t,
				       allow_linear ? "default or linear" : "default");
	f = pccx__json_get(p, "factor");
	if (!f)
		return pccx__json_fail(x->doc, p, x->d, PCCX_ERR_FORMAT,
				       "linear RoPE scaling without a factor");
	return num_in(x, f, 1e-6, 1e6, false, factor);
}

/*
 * rope_theta, rope_local_base_freq (Gemma 3; Gemma 2 has one base), rope_scaling (linear:
 * the global layers' factor), or the newer rope_parameters (flat, or per layer type).
 */
static int read_rope_plain(struct ctx *x, enum pccx_family f, struct pccx_hf_family *h)
{
	pccx_hf_config *c = x->c;
	const pccx_json *rs = pccx__json_get(x->obj, "rope_scaling");
	const pccx_json *rp = pccx__json_get(x->obj, "rope_parameters");
	int rc;

	c->rope_theta = plain_defaults(f)->rope_theta;
	c->rope_local_base_freq = 10000.0;
	rc = opt_num(x, "rope_theta", 1.0, 1e12, false, &c->rope_theta, DEF_ROPE_THETA);
	if (!rc && f == PCCX_FAMILY_GEMMA3)
		rc = opt_num(x, "rope_local_base_freq", 1.0, 1e12, false,
			     &c->rope_local_base_freq, DEF_ROPE_LOCAL);
	if (!rc && rs && pccx__json_type_of(rs) != PCCX_JSON_NULL) {
		if (pccx__json_type_of(rs) != PCCX_JSON_OBJECT)
			return pccx__json_expect(x->doc, rs, PCCX_JSON_OBJECT, x->d);
		rc = rope_kind(x, rs, true, &h->rope_factor);
	}
	if (rc || !rp || pccx__json_type_of(rp) == PCCX_JSON_NULL)
		goto out;
	if (pccx__json_type_of(rp) != PCCX_JSON_OBJECT)
		return pccx__json_expect(x->doc, rp, PCCX_JSON_OBJECT, x->d);
	if (!pccx__json_get(rp, "full_attention") && !pccx__json_get(rp, "sliding_attention")) {
		const pccx_json *th = pccx__json_get(rp, "rope_theta");

		rc = rope_kind(x, rp, true, &h->rope_factor);
		if (!rc && th)
			rc = num_in(x, th, 1.0, 1e12, false, &c->rope_theta);
		goto out;
	}
	for (int k = 0; !rc && k < 2; k++) {
		const pccx_json *p = pccx__json_get(rp, k ? "sliding_attention" : "full_attention");
		const pccx_json *th;

		if (!p)
			continue;
		if (pccx__json_type_of(p) != PCCX_JSON_OBJECT)
			return pccx__json_expect(x->doc, p, PCCX_JSON_OBJECT, x->d);
		rc = rope_kind(x, p, !k, &h->rope_factor);
		th = pccx__json_get(p, "rope_theta");
		if (!rc && th)
			rc = num_in(x, th, 1.0, 1e12, false,
				    k && f == PCCX_FAMILY_GEMMA3 ? &c->rope_local_base_freq :
								  &c->rope_theta);
	}
out:
	if (f != PCCX_FAMILY_GEMMA3)	/* one base for every layer */
		c->rope_local_base_freq = c->rope_theta;
	if (h->rope_factor == 1.0)
		h->rope_factor = 0.0;
	return rc;
}

/*
 * The layers' attention types: Gemma 1 all global; Gemma 2 alternating from a local layer 0;
 * Gemma 3 every sliding_window_pattern-th (6) global. layer_types, when given, is the pattern
 * and must agree with sliding_window_pattern when both are given.
 */
static int read_pattern_plain(struct ctx *x, enum pccx_family f, struct pccx_hf_family *h)
{
	pccx_hf_config *c = x->c;
	const pccx_json *lt = pccx__json_get(x->obj, "layer_types");
	const pccx_json *sp = pccx__json_get(x->obj, "sliding_window_pattern");
	uint32_t period = plain_defaults(f)->period, L = c->num_hidden_layers;
	bool local[PCCX_HF_MAX_LAYERS];
	int rc;

	if (f == PCCX_FAMILY_GEMMA3 && sp && pccx__json_type_of(sp) != PCCX_JSON_NULL) {
		rc = opt_u32(x, "sliding_window_pattern", 1, 1 << 16, &period, DEF_LAYER_TYPES);
		if (rc)
			return rc;
		h->pattern_given = true;
	}
	pccx__layers_pattern(period, L, local);
	for (uint32_t i = 0; i < L; i++)
		c->layer_is_sliding[i] = local[i];
	if (!lt || pccx__json_type_of(lt) == PCCX_JSON_NULL)
		return PCCX_OK;
	rc = read_layer_types(x);
	if (rc)
		return rc;
	h->pattern_given = true;
	for (uint32_t i = 0; i < L; i++) {
		if (f == PCCX_FAMILY_GEMMA && c->layer_is_sliding[i])
			return pccx__json_fail(x->doc, pccx__json_at(lt, i), x->d,
					       PCCX_ERR_UNSUPPORTED, "layer %u: Gemma 1 has no "
					       "sliding-window layers", i);
		if (sp && f == PCCX_FAMILY_GEMMA3 && c->layer_is_sliding[i] != local[i])
			return pccx__json_fail(x->doc, pccx__json_at(lt, i), x->d,
					       PCCX_ERR_FORMAT, "layer %u is %s, "
					       "sliding_window_pattern %u says %s", i,
					       local[i] ? "full_attention" : "sliding_attention",
					       period,
					       local[i] ? "sliding_attention" : "full_attention");
	}
	return PCCX_OK;
}

/* The text model of a Gemma 1, 2 or 3 config (x->obj), into cfg and h. */
static int parse_plain(struct ctx *x, enum pccx_family f, struct pccx_hf_family *h)
{
	pccx_hf_config *c = x->c;
	const struct plain_defaults *def = plain_defaults(f);
	const char *n = pccx__json_doc_name(x->doc);
	double qpas = 256.0;
	uint32_t window = 4096, max_pos = def->max_pos;
	int rc;

	memset(c, 0, sizeof(*c));
	c->rms_norm_eps = 1e-6;
	rc = read_shape(x);
	if (!rc)
		rc = opt_num(x, "rms_norm_eps", 0.0, 1.0, true, &c->rms_norm_eps, DEF_RMS_EPS);
	if (!rc && c->rms_norm_eps <= 0.0)
		rc = pccx__json_fail(x->doc, pccx__json_get(x->obj, "rms_norm_eps"), x->d,
				     PCCX_ERR_RANGE, "must be positive");
	if (!rc)
		rc = opt_u32(x, "max_position_embeddings", 1, INT32_MAX, &max_pos, DEF_SOFTCAP);
	if (!rc)
		rc = read_activation(x);
	if (!rc)
		rc = read_rope_plain(x, f, h);
	if (!rc && f != PCCX_FAMILY_GEMMA)
		rc = opt_u32(x, "sliding_window", 1, INT32_MAX, &window, DEF_SLIDING_WINDOW);
	if (!rc && f != PCCX_FAMILY_GEMMA)
		rc = opt_num(x, "query_pre_attn_scalar", 1e-6, 1e9, false, &qpas, DEF_SOFTCAP);
	if (!rc && f != PCCX_FAMILY_GEMMA)
		rc = opt_cap(x, "final_logit_softcapping", def->softcap,
			     &c->final_logit_softcapping);
	if (!rc && f != PCCX_FAMILY_GEMMA)
		rc = opt_cap(x, "attn_logit_softcapping", def->attn_softcap,
			     &h->attn_logit_softcapping);
	if (!rc)
		rc = read_pattern_plain(x, f, h);
	if (rc)
		return rc;
	c->defaulted = 0;	/* the bits describe Gemma 3n's defaults only */
	/* Gemma 1 scales q by head_dim^-1/2 and attends globally over its whole context */
	h->query_pre_attn_scalar = f == PCCX_FAMILY_GEMMA ? (double)c->head_dim : qpas;
	h->max_position_embeddings = max_pos;
	c->sliding_window = f == PCCX_FAMILY_GEMMA ? max_pos : window;
	if (c->num_attention_heads % c->num_key_value_heads)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: num_attention_heads %" PRIu32 " is not a multiple of "
				  "num_key_value_heads %" PRIu32,
				  n, c->num_attention_heads, c->num_key_value_heads);
	if (c->head_dim % 2)
		return pccx__fail(x->d, PCCX_ERR_FORMAT,
				  "%s: head_dim %" PRIu32 " is odd (RoPE rotates pairs)",
				  n, c->head_dim);
	for (uint32_t i = c->num_hidden_layers; i < PCCX_HF_MAX_LAYERS; i++)
		c->intermediate_size[i] = 0;
	return PCCX_OK;
}

/* ---- Gemma 4 --------------------------------------------------------------------------- */

/* A bool key: absent or null gives `def`. */
static int opt_bool(struct ctx *x, const char *key, bool def, bool *out)
{
	const pccx_json *m = pccx__json_get(x->obj, key);

	*out = def;
	if (!m || pccx__json_type_of(m) == PCCX_JSON_NULL)
		return PCCX_OK;
	if (pccx__json_type_of(m) != PCCX_JSON_BOOL)
		return pccx__json_expect(x->doc, m, PCCX_JSON_BOOL, x->d);
	*out = pccx__json_bool(m);
	return PCCX_OK;
}

/*
 * Gemma 4's rope_parameters: {"sliding_attention": {"rope_theta"}, "full_attention":
 * {"rope_type": "proportional" (or "default"), "partial_rotary_factor", "rope_theta"}}; the
 * sliding layers' type must be "default". Absent parts keep 10000 / 1000000 / factor 1.
 */
static int read_rope_4(struct ctx *x, struct pccx_hf_family *h)
{
	const pccx_json *rp = pccx__json_get(x->obj, "rope_parameters");
	pccx_hf_config *c = x->c;
	int rc = PCCX_OK;

	c->rope_theta = 1000000.0;
	c->rope_local_base_freq = 10000.0;
	h->rope_partial_global = 1.0;
	if (!rp || pccx__json_type_of(rp) == PCCX_JSON_NULL)
		return PCCX_OK;
	if (pccx__json_type_of(rp) != PCCX_JSON_OBJECT)
		return pccx__json_expect(x->doc, rp, PCCX_JSON_OBJECT, x->d);
	for (int k = 0; !rc && k < 2; k++) {
		const pccx_json *p = pccx__json_get(rp, k ? "full_attention" : "sliding_attention");
		const pccx_json *th, *pf;
		const char *t;
		double part = 1.0;

		if (!p)
			continue;
		if (pccx__json_type_of(p) != PCCX_JSON_OBJECT)
			return pccx__json_expect(x->doc, p, PCCX_JSON_OBJECT, x->d);
		t = pccx__json_str(pccx__json_get(p, "rope_type"), NULL);
		if (t && strcmp(t, "default") && (!k || strcmp(t, "proportional")))
			return pccx__json_fail(x->doc, pccx__json_get(p, "rope_type"), x->d,
					       PCCX_ERR_UNSUPPORTED, "'%.40s' is not supported (%s)",
					       t, k ? "default or proportional" : "default");
		th = pccx__json_get(p, "rope_theta");
		if (th)
			rc = num_in(x, th, 1.0, 1e12, false,
				    k ? &c->rope_theta : &c->rope_local_base_freq);
		pf = pccx__json_get(p, "partial_rotary_factor");
		if (!rc && pf && pccx__json_type_of(pf) != PCCX_JSON_NULL)
			rc = num_in(x, pf, 0.0, 1.0, false, &part);
		if (!rc && k)
			h->rope_partial_global = part;
		else if (!rc && part != 1.0)	/* the device turns all of a sliding head */
			return pccx__json_fail(x->doc, pf, x->d, PCCX_ERR_UNSUPPORTED, "%g: only "
					       "the global layers rotate part of the head", part);
	}
	return rc;
}

/* The KV-sharing layers: each has an earlier KV-owning layer of its attention type. */
static int check_sharing(struct ctx *x)
{
	pccx_hf_config *c = x->c;
	uint32_t src[PCCX_HF_MAX_LAYERS], bad;

	if (c->num_kv_shared_layers >= c->num_hidden_layers)
		return pccx__fail(x->d, PCCX_ERR_FORMAT, "%s: num_kv_shared_layers %" PRIu32
				  " leaves no layer computing K/V (num_hidden_layers %" PRIu32 ")",
				  pccx__json_doc_name(x->doc), c->num_kv_shared_layers,
				  c->num_hidden_layers);
	bad = pccx__layers_kv_sources(c->layer_is_sliding, c->num_hidden_layers,
				      c->num_kv_shared_layers, src);
	if (bad < c->num_hidden_layers)
		return pccx__fail(x->d, PCCX_ERR_FORMAT, "%s: layer %" PRIu32 " (%s) shares K/V but "
				  "no layer before %" PRIu32 " has that attention type",
				  pccx__json_doc_name(x->doc), bad,
				  c->layer_is_sliding[bad] ? "sliding_attention" : "full_attention",
				  c->num_hidden_layers - c->num_kv_shared_layers);
	return PCCX_OK;
}

/*
 * enable_moe_block true (the 26B A4B): num_experts experts of width moe_intermediate_size in
 * every layer, top_k_experts of them used, each required and checked against the others.
 */
static int read_experts(struct ctx *x, struct pccx_hf_family *h)
{
	bool moe = false;
	int rc = opt_bool(x, "enable_moe_block", false, &moe);

	h->n_experts = h->n_experts_used = h->d_expert = 0;
	if (rc || !moe)
		return rc;
	rc = req_u32(x, "num_experts", 1, PCCX_GEMMA_MAX_EXPERTS, &h->n_experts);
	if (!rc)
		rc = req_u32(x, "top_k_experts", 1, PCCX_GEMMA_MAX_EXPERTS_USED,
			     &h->n_experts_used);
	if (!rc && h->n_experts_used > h->n_experts)
		return pccx__json_fail(x->doc, pccx__json_get(x->obj, "top_k_experts"), x->d,
				       PCCX_ERR_FORMAT, "%" PRIu32 ": more than num_experts %"
				       PRIu32, h->n_experts_used, h->n_experts);
	if (!rc)
		rc = req_u32(x, "moe_intermediate_size", 1, 65504, &h->d_expert);
	if (!rc && h->d_expert % 32)
		return pccx__json_fail(x->doc, pccx__json_get(x->obj, "moe_intermediate_size"),
				       x->d, PCCX_ERR_UNSUPPORTED, "%" PRIu32 ": a multiple of 32 "
				       "is supported", h->d_expert);
	return rc;
}

/* hidden_size_per_layer_input: required; 0 or null: no per-layer inputs (the 26B A4B). */
static int read_ple_width(struct ctx *x)
{
	const pccx_json *m = pccx__json_get(x->obj, "hidden_size_per_layer_input");

	x->c->hidden_size_per_layer_input = 0;
	if (m && pccx__json_type_of(m) == PCCX_JSON_NULL)
		return PCCX_OK;
	return req_u32(x, "hidden_size_per_layer_input", 0, 1 << 16,
		       &x->c->hidden_size_per_layer_input);
}

/*
 * The text model of a Gemma 4 config (Gemma4TextConfig, x->obj): the fields every family has,
 * the per-layer inputs, KV sharing, the global layers' own heads and RoPE, k = v, the
 * double-wide MLP, the experts.
 */
static int parse_gemma4(struct ctx *x, struct pccx_hf_family *h)
{
	pccx_hf_config *c = x->c;
	const pccx_json *lt;
	int rc;

	memset(c, 0, sizeof(*c));
	c->rms_norm_eps = 1e-6;
	c->sliding_window = 512;
	c->final_logit_softcapping = 30.0;
	rc = read_shape(x);
	if (!rc)
		rc = read_ple_width(x);
	c->vocab_size_per_layer_input = c->vocab_size;
	if (!rc)
		rc = opt_u32(x, "vocab_size_per_layer_input", 1, INT32_MAX,
			     &c->vocab_size_per_layer_input, DEF_VOCAB_PLI);
	if (!rc)
		rc = opt_u32(x, "global_head_dim", 1, 4096, &h->head_dim_global, DEF_SOFTCAP);
	if (!rc)
		rc = opt_u32(x, "num_global_key_value_heads", 1, 1024, &h->n_kv_heads_global,
			     DEF_SOFTCAP);
	if (!rc)
		rc = opt_u32(x, "sliding_window", 1, INT32_MAX, &c->sliding_window,
			     DEF_SLIDING_WINDOW);
	if (!rc)
		rc = opt_u32(x, "num_kv_shared_layers", 0, PCCX_HF_MAX_LAYERS,
			     &c->num_kv_shared_layers, DEF_KV_SHARED);
	if (!rc)
		rc = opt_num(x, "rms_norm_eps", 0.0, 1.0, true, &c->rms_norm_eps, DEF_RMS_EPS);
	if (!rc && c->rms_norm_eps <= 0.0)
		rc = pccx__json_fail(x->doc, pccx__json_get(x->obj, "rms_norm_eps"), x->d,
				     PCCX_ERR_RANGE, "must be positive");
	if (!rc)
		rc = opt_cap(x, "final_logit_softcapping", 30.0, &c->final_logit_softcapping);
	if (!rc)
		rc = opt_bool(x, "use_double_wide_mlp", false, &h->double_wide_mlp);
	if (!rc)
		rc = opt_bool(x, "attention_k_eq_v", false, &h->k_eq_v);
	if (!rc)
		rc = read_experts(x, h);
	if (!rc)
		rc = read_activation(x);
	if (!rc)
		rc = read_rope_4(x, h);
	if (rc)
		return rc;
	/* the pattern has no default worth guessing: the published configs list it */
	lt = pccx__json_get(x->obj, "layer_types");
	if (!lt || pccx__json_type_of(lt) == PCCX_JSON_NULL)
		return pccx__fail(x->d, PCCX_ERR_FORMAT, "%s: layer_types: missing (Gemma 4 "
				  "configs list each layer's attention type)",
				  pccx__json_doc_name(x->doc));
	rc = read_layer_types(x);
	if (rc)
		return rc;
	h->pattern_given = true;
	c->defaulted = 0;	/* the bits describe Gemma 3n's defaults only */
	if (c->num_attention_heads % c->num_key_value_heads ||
	    (h->n_kv_heads_global && c->num_attention_heads % h->n_kv_heads_global))
		return pccx__fail(x->d, PCCX_ERR_FORMAT, "%s: num_attention_heads %" PRIu32 " is "
				  "not a multiple of num_key_value_heads %" PRIu32 " (global: %"
				  PRIu32 ")", pccx__json_doc_name(x->doc), c->num_attention_heads,
				  c->num_key_value_heads, h->n_kv_heads_global);
	if (c->head_dim % 2 || h->head_dim_global % 2)
		return pccx__fail(x->d, PCCX_ERR_FORMAT, "%s: head_dim %" PRIu32 " / global_head_dim"
				  " %" PRIu32 " is odd (RoPE rotates pairs)",
				  pccx__json_doc_name(x->doc), c->head_dim, h->head_dim_global);
	if (c->vocab_size_per_layer_input > c->vocab_size)
		return pccx__fail(x->d, PCCX_ERR_FORMAT, "%s: vocab_size_per_layer_input %" PRIu32
				  " exceeds vocab_size %" PRIu32, pccx__json_doc_name(x->doc),
				  c->vocab_size_per_layer_input, c->vocab_size);
	for (uint32_t i = c->num_hidden_layers; i < PCCX_HF_MAX_LAYERS; i++)
		c->intermediate_size[i] = 0;
	return check_sharing(x);
}

/*
 * The family of a config.json from model_type: the root's, or for a multimodal Gemma 3
 * ("gemma3") its text_config's model. *obj receives the object the text model's keys are in.
 */
static int family_of(const pccx_json_doc *doc, const pccx_json *root, enum pccx_family *f,
		     const pccx_json **obj, bool *vision, pccx_diag *d)
{
	static const struct {
		const char *type;
		enum pccx_family f;
	} types[] = {
		{ "gemma", PCCX_FAMILY_GEMMA }, { "gemma2", PCCX_FAMILY_GEMMA2 },
		{ "gemma3_text", PCCX_FAMILY_GEMMA3 }, { "gemma3", PCCX_FAMILY_GEMMA3 },
		{ "gemma3n", PCCX_FAMILY_GEMMA3N }, { "gemma3n_text", PCCX_FAMILY_GEMMA3N },
		{ "gemma4_text", PCCX_FAMILY_GEMMA4 }, { "gemma4", PCCX_FAMILY_GEMMA4 },
	};
	const pccx_json *mt = pccx__json_get(root, "model_type");
	const pccx_json *tc = pccx__json_get(root, "text_config");
	const char *s;
	size_t i;

	*f = PCCX_FAMILY_GEMMA3N;	/* no model_type: Gemma 3n, as always read */
	*obj = root;
	*vision = false;
	if (tc) {
		int rc = pccx__json_expect(doc, tc, PCCX_JSON_OBJECT, d);

		if (rc)
			return rc;
	}
	if (!mt || pccx__json_type_of(mt) == PCCX_JSON_NULL) {
		*obj = tc ? tc : root;
		return PCCX_OK;
	}
	s = pccx__json_str(mt, NULL);
	if (!s)
		return pccx__json_expect(doc, mt, PCCX_JSON_STRING, d);
	for (i = 0; i < sizeof(types) / sizeof(types[0]) && strcmp(s, types[i].type); i++)
		;
	if (i == sizeof(types) / sizeof(types[0]))
		return pccx__json_fail(doc, mt, d, PCCX_ERR_UNSUPPORTED, "'%.40s' is not supported "
				       "(gemma, gemma2, gemma3_text, gemma3, gemma3n, gemma4_text, "
				       "gemma4)", s);
	*f = types[i].f;
	if (*f == PCCX_FAMILY_GEMMA3N) {
		*obj = tc ? tc : root;
		return PCCX_OK;
	}
	if (strcmp(s, "gemma3") && strcmp(s, "gemma4"))
		return PCCX_OK;
	/* Gemma3/4ForConditionalGeneration: the language model's config is text_config */
	if (!tc)
		return pccx__json_fail(doc, mt, d, PCCX_ERR_FORMAT, "'%s' without a text_config "
				       "(the language model's keys)", s);
	*obj = tc;
	*vision = pccx__json_get(root, "vision_config") != NULL ||
		  pccx__json_get(root, "audio_config") != NULL;
	return PCCX_OK;
}

static int parse_doc(const pccx_json_doc *doc, pccx_hf_config *cfg, struct pccx_hf_family *h,
		     pccx_diag *d)
{
	const pccx_json *root = pccx__json_root(doc);
	struct ctx x = { doc, root, cfg, d };
	struct pccx_hf_family local;
	const pccx_json *sc;
	int rc;

	if (!h)
		h = &local;
	memset(h, 0, sizeof(*h));
	pccx_hf_config_e4b(cfg);
	cfg->defaulted = 0;
	rc = pccx__json_expect(doc, root, PCCX_JSON_OBJECT, d);
	if (!rc)
		rc = family_of(doc, root, &h->family, &x.obj, &h->vision, d);
	if (rc)
		return rc;
	if (h->family == PCCX_FAMILY_GEMMA4)
		return parse_gemma4(&x, h);
	if (h->family != PCCX_FAMILY_GEMMA3N)
		return parse_plain(&x, h->family, h);
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
	return pccx__hf_config_parse(json, len, name, cfg, NULL, d);
}

int pccx_hf_config_read(const char *path, pccx_hf_config *cfg, pccx_diag *d)
{
	return pccx__hf_config_read(path, cfg, NULL, d);
}

int pccx__hf_config_parse(const void *json, size_t len, const char *name, pccx_hf_config *cfg,
			  struct pccx_hf_family *x, pccx_diag *d)
{
	pccx_json_limits lim = { .max_size = (size_t)16 << 20, .max_depth = 64 };
	pccx_json_doc *doc;
	int rc = pccx__json_parse(json, len, name ? name : "config.json", &lim, &doc, d);

	if (rc)
		return rc;
	rc = parse_doc(doc, cfg, x, d);
	pccx__json_free(doc);
	return rc;
}

int pccx__hf_config_read(const char *path, pccx_hf_config *cfg, struct pccx_hf_family *x,
			 pccx_diag *d)
{
	pccx_json_limits lim = { .max_size = (size_t)16 << 20, .max_depth = 64 };
	pccx_json_doc *doc;
	int rc = pccx__json_parse_file(path, &lim, &doc, d);

	if (rc)
		return rc;
	rc = parse_doc(doc, cfg, x, d);
	pccx__json_free(doc);
	return rc;
}
