// SPDX-License-Identifier: MIT
/* Gemma 3n models to and from GGUF (llama.cpp "gemma3n" names and metadata). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "gemma3n_gguf.h"
#include "ggml_types.h"
#include "gemma3n_st.h"
#include "pccx_num.h"

#define ARCH "gemma3n"
#define Q4_0_BLOCK_BYTES 18u

/* ------------------------------------------------------------------------------------- */
/* Names: ours are llama.cpp's, except the stacked AltUp projections, which we split.    */

/* GGUF name of tensor `name` and the part (slice of the outermost dimension) it is. */
static void gguf_name(const char *name, char *out, size_t size, uint32_t *part)
{
	static const char *const stacked[] = { "altup_proj.", "altup_unembd_proj." };
	size_t i;

	*part = 0;
	for (i = 0; i < 2; i++) {
		size_t n = strlen(stacked[i]);

		if (!strncmp(name, stacked[i], n) && name[n] >= '0' && name[n] <= '9') {
			snprintf(out, size, "%.*sweight", (int)n, name);
			*part = (uint32_t)(name[n] - '0');
			return;
		}
	}
	snprintf(out, size, "%s", name);
}

/* Raw 4-bit field i of a packed nibble array. */
static unsigned nib_raw(const uint8_t *p, unsigned i)
{
	return (p[i / 2] >> (4 * (i & 1))) & 0xFu;
}

/*
 * One device Q4 row record -> ggml Q4_0 blocks: the FP16 scale copied, element e < 16 in the
 * low nibble of qs[e], e >= 16 in the high nibble of qs[e - 16], each as u = q + 8 = raw ^ 8.
 * The exact inverse of pccx__q4_from_ggml_q4_0.
 */
static void row_to_q4_0(const uint8_t *rec, uint32_t cols, uint8_t *out)
{
	const uint8_t *nib = pccx_gemma3n_q4_nibbles(rec, cols);
	uint32_t b, j;

	for (b = 0; b < cols / 32; b++) {
		uint8_t *blk = out + Q4_0_BLOCK_BYTES * b;
		const uint8_t *nb = nib + 16 * b;

		blk[0] = rec[2 * b];
		blk[1] = rec[2 * b + 1];
		for (j = 0; j < 16; j++)
			blk[2 + j] =
				(uint8_t)((nib_raw(nb, j) ^ 8u) | (nib_raw(nb, j + 16) ^ 8u) << 4);
	}
}

/* ------------------------------------------------------------------------------------- */
/* Save.                                                                                  */

struct save {
	pccx_gguf_writer *w;
	void **bufs;
	size_t nbufs;
};

static void *save_buf(struct save *s, size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	if (!p)
		return NULL;
	s->bufs[s->nbufs++] = p;
	return p;
}

/* The GGUF tensor holding my tensor t (and, if stacked, its sibling parts). */
static int save_tensor(struct save *s, const struct pccx_gemma3n_model *m, uint32_t t, pccx_diag *d)
{
	const struct pccx_gemma3n_tensor *T = &m->t[t];
	char name[PCCX_GEMMA3N_NAME_MAX];
	uint32_t part, parts = 1, p, r, i;
	uint64_t ne[3], row_out, nbytes;
	uint8_t *buf;
	bool q4 = T->fmt == PCCX_WFMT_Q4;

	gguf_name(T->name, name, sizeof(name), &part);
	if (part)
		return PCCX_OK;	/* written with part 0 */
	if (strcmp(name, T->name))
		parts = 3;
	row_out = q4 ? (uint64_t)T->cols / 32 * Q4_0_BLOCK_BYTES : (uint64_t)T->cols * 4;
	nbytes = row_out * T->rows * parts;
	buf = save_buf(s, nbytes);
	if (!buf)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: tensor '%s': out of memory",
				  name);
	for (p = 0; p < parts; p++) {
		uint32_t tp = t + p;	/* the parts are consecutive in the tensor table */

		for (r = 0; r < T->rows; r++) {
			const uint8_t *rec = pccx_gemma3n_row(m, (int32_t)tp, r);
			uint8_t *o = buf + ((uint64_t)p * T->rows + r) * row_out;

			if (q4) {
				row_to_q4_0(rec, T->cols, o);
			} else {
				for (i = 0; i < T->cols; i++) {
					uint32_t b = (uint32_t)(rec[2 * i] | rec[2 * i + 1] << 8)
						     << 16;

					memcpy(o + 4 * i, &b, 4);	/* BF16 -> F32: exact */
				}
			}
		}
	}
	ne[0] = T->cols;
	ne[1] = T->rows;
	ne[2] = parts;
	return pccx_gguf_writer_add_tensor(s->w, name, q4 ? PCCX_GGML_Q4_0 : PCCX_GGML_F32,
					   parts > 1 ? 3 : (T->rows == 1 ? 1 : 2), ne, buf, nbytes,
					   d);
}

static int save_metadata(pccx_gguf_writer *w, const struct pccx_gemma3n_config *c, pccx_diag *d)
{
	struct pccx_attn_desc attn[PCCX_ATTN_KINDS];
	struct pccx_layer_desc layers[PCCX_GEMMA3N_MAX_LAYERS];
	bool swa[PCCX_GEMMA3N_MAX_LAYERS];
	float sparsity[PCCX_GEMMA3N_MAX_LAYERS];
	char name[64];
	uint32_t l;
	int rc;

	/* the per-layer keys: the layer table of the model's (checked) config */
	rc = pccx__layers_build(c, attn, layers, d);
	if (rc)
		return rc;
	for (l = 0; l < c->n_layers; l++) {
		swa[l] = layers[l].kind == PCCX_ATTN_LOCAL;
		sparsity[l] = layers[l].sparse ? layers[l].sparse_z : 0.0f;
	}
	snprintf(name, sizeof(name), "pccx synthetic gemma3n %s", c->name);
	rc = pccx_gguf_writer_set_str(w, "general.architecture", ARCH, d);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "general.name", name, d);
#define U32(k, v) if (!rc) rc = pccx_gguf_writer_set_u32(w, ARCH "." k, (v), d)
#define F32(k, v) if (!rc) rc = pccx_gguf_writer_set_f32(w, ARCH "." k, (v), d)
	U32("context_length", 32768);
	U32("block_count", c->n_layers);
	U32("embedding_length", c->d_model);
	U32("feed_forward_length", c->d_ffn);
	U32("attention.head_count", c->n_heads);
	U32("attention.head_count_kv", c->n_kv_heads);
	U32("attention.key_length", c->head_dim);
	U32("attention.value_length", c->head_dim);
	F32("attention.layer_norm_rms_epsilon", c->eps);
	F32("rope.freq_base", c->theta_global);
	F32("rope.freq_base_swa", c->theta_local);
	U32("attention.sliding_window", c->window);
	U32("attention.shared_kv_layers", c->n_kv_shared);
	U32("altup.active_idx", 0);
	U32("altup.num_inputs", PCCX_GEMMA3N_STREAMS);
	U32("embedding_length_per_layer_input", c->d_ple);
	F32("final_logit_softcapping", c->softcap);
#undef U32
#undef F32
	if (!rc)
		rc = pccx_gguf_writer_set_array(w, ARCH ".attention.sliding_window_pattern",
						PCCX_GGUF_BOOL, swa, c->n_layers, d);
	if (!rc)
		rc = pccx_gguf_writer_set_array(w, ARCH ".activation_sparsity_scale",
						PCCX_GGUF_FLOAT32, sparsity, c->n_layers, d);
	return rc;
}

int pccx__gemma3n_save_gguf(const struct pccx_gemma3n_model *m, const struct pccx_gguf_keys *keys,
			    const char *path, pccx_diag *d)
{
	struct save s = { 0 };
	uint32_t t;
	int rc;

	s.bufs = calloc(m->n_t, sizeof(*s.bufs));
	if (!s.bufs)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: out of memory");
	rc = pccx_gguf_writer_new(&s.w, d);
	if (!rc)
		rc = save_metadata(s.w, &m->cfg, d);
	if (!rc && keys && keys->add)
		rc = keys->add(s.w, keys->arg, d);
	for (t = 0; !rc && t < m->n_t; t++)
		rc = save_tensor(&s, m, t, d);
	if (!rc)
		rc = pccx_gguf_writer_write(s.w, path, d);
	pccx_gguf_writer_free(s.w);
	while (s.nbufs)
		free(s.bufs[--s.nbufs]);
	free(s.bufs);
	return rc;
}

/* ------------------------------------------------------------------------------------- */
/* Load.                                                                                  */

static int key_u32(const pccx_gguf *g, const char *key, uint32_t def, uint32_t *out,
		   pccx_diag *d)
{
	if (!pccx_gguf_find(g, key)) {
		*out = def;
		return PCCX_OK;
	}
	return pccx_gguf_get_u32(g, key, out, d);
}

static int key_f32(const pccx_gguf *g, const char *key, float def, float *out, pccx_diag *d)
{
	if (!pccx_gguf_find(g, key)) {
		*out = def;
		return PCCX_OK;
	}
	return pccx_gguf_get_f32(g, key, out, d);
}

/* The configuration from the gemma3n.* metadata and the tensor shapes. */
static int load_config(const pccx_gguf *g, uint32_t max_ctx, struct pccx_gemma3n_config *c,
		       pccx_diag *d)
{
	const char *name = pccx_gguf_name(g), *arch;
	const pccx_gguf_tensor *te, *tp, *tl;
	const pccx_gguf_array *a;
	uint32_t l;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "gguf");
	rc = pccx_gguf_get_str(g, "general.architecture", &arch, NULL, d);
	if (rc)
		return rc;
	if (strcmp(arch, ARCH))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: architecture '%s', expected '" ARCH "'", name, arch);
	rc = pccx_gguf_get_u32(g, ARCH ".block_count", &c->n_layers, d);
	if (!rc)
		rc = pccx_gguf_get_u32(g, ARCH ".embedding_length", &c->d_model, d);
	if (!rc && pccx_gguf_get_u32(g, ARCH ".feed_forward_length", &c->d_ffn, NULL)) {
		/* llama.cpp also accepts one value per layer: all must agree here */
		rc = pccx_gguf_get_array(g, ARCH ".feed_forward_length", PCCX_GGUF_TYPE_COUNT, &a,
					 d);
		for (l = 0; !rc && l < a->n; l++) {
			int64_t v;

			rc = pccx_gguf_array_i64(a, l, &v);
			if (!rc && (l ? v != (int64_t)c->d_ffn : v <= 0 || v > 65535))
				rc = pccx__fail(d, PCCX_ERR_UNSUPPORTED,
						"%s: feed_forward_length differs "
						"between layers",
						name);
			c->d_ffn = (uint32_t)v;
		}
	}
	if (!rc)
		rc = pccx_gguf_get_u32(g, ARCH ".attention.head_count", &c->n_heads, d);
	if (!rc)
		rc = pccx_gguf_get_u32(g, ARCH ".attention.head_count_kv", &c->n_kv_heads, d);
	if (!rc)
		rc = key_u32(g, ARCH ".attention.key_length",
			     c->n_heads ? c->d_model / c->n_heads : 0, &c->head_dim, d);
	if (!rc)
		rc = key_u32(g, ARCH ".embedding_length_per_layer_input", 256, &c->d_ple, d);
	if (!rc)
		rc = key_u32(g, ARCH ".attention.sliding_window", 512, &c->window, d);
	if (!rc)
		rc = key_u32(g, ARCH ".attention.shared_kv_layers", 15, &c->n_kv_shared, d);
	if (!rc)
		rc = key_f32(g, ARCH ".attention.layer_norm_rms_epsilon", 1e-6f, &c->eps, d);
	if (!rc)
		rc = key_f32(g, ARCH ".rope.freq_base", 1e6f, &c->theta_global, d);
	if (!rc)
		rc = key_f32(g, ARCH ".rope.freq_base_swa", 1e4f, &c->theta_local, d);
	if (!rc)
		rc = key_f32(g, ARCH ".final_logit_softcapping", 30.0f, &c->softcap, d);
	if (rc)
		return rc;

	/* layer pattern: global iff (i + 1) % period == 0 is the only one the graph runs */
	c->global_period = 5;
	if (pccx_gguf_find(g, ARCH ".attention.sliding_window_pattern")) {
		rc = pccx_gguf_get_array(g, ARCH ".attention.sliding_window_pattern",
					 PCCX_GGUF_BOOL, &a, d);
		if (rc)
			return rc;
		if (a->n != c->n_layers)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: sliding_window_pattern has %llu "
					  "entries for %u layers", name, (unsigned long long)a->n,
					  c->n_layers);
		c->global_period = pccx__layers_global_period(a->data, c->n_layers, &l);
		if (l < c->n_layers)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
					  "%s: sliding_window_pattern is not periodic (layer %u)",
					  name, l);
	}
	/* sparsity: a leading run of layers with the same non-zero z (llama.cpp: 10 x icdf(0.95))
	 */
	c->n_sparse = c->n_layers < 10 ? c->n_layers : 10;
	c->sparse_z = 1.6448533535f;
	if (pccx_gguf_find(g, ARCH ".activation_sparsity_scale")) {
		const float *z;
		uint64_t n;

		rc = pccx_gguf_get_f32_array(g, ARCH ".activation_sparsity_scale", &z, &n, d);
		if (rc)
			return rc;
		for (l = 0; l < n && z[l] != 0.0f && z[l] == z[0]; l++)
			;
		c->n_sparse = l;
		c->sparse_z = l ? z[0] : 0.0f;
		for (; l < n; l++)
			if (z[l] != 0.0f)
				return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
						  "%s: activation_sparsity_scale "
						  "is not a leading run (layer %u)",
						  name, l);
	}
	/* sizes the metadata does not carry */
	te = pccx_gguf_find_tensor(g, "token_embd.weight");
	tp = pccx_gguf_find_tensor(g, "per_layer_token_embd.weight");
	tl = pccx_gguf_find_tensor(g, "blk.0.laurel_l.weight");
	if (!te || !tp || !tl)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: token_embd, per_layer_token_embd or "
				  "blk.0.laurel_l missing", name);
	if (te->n_dims != 2 || tp->n_dims != 2 || tl->n_dims != 2 || te->ne[1] > (1u << 24) ||
	    tp->ne[1] > te->ne[1] || tl->ne[1] > 65535)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: unexpected embedding / LAuReL shapes",
				  name);
	c->vocab = (uint32_t)te->ne[1];
	c->ple_vocab = (uint32_t)tp->ne[1];
	c->laurel_rank = (uint32_t)tl->ne[1];
	c->max_ctx = max_ctx ? max_ctx : 4096;
	rc = pccx__gemma3n_config_check(c, d);
	if (rc && d) {
		char why[sizeof(d->msg)];

		snprintf(why, sizeof(why), "%s", d->msg);
		return pccx__fail(d, rc, "%s: %s", name, why);
	}
	return rc;
}

static int gguf_row(const void *src, const void *tensor, uint64_t row, float *dst, pccx_diag *d)
{
	return pccx_gguf_decode_rows(src, tensor, row, 1, dst, d);
}

/* Fill tensor t of the model from its GGUF tensor. */
static int load_tensor(const pccx_gguf *g, struct pccx_gemma3n_model *m, uint32_t t, float *row,
		       pccx_q4_error *err, uint64_t *clipped, pccx_diag *d)
{
	const struct pccx_gemma3n_tensor *T = &m->t[t];
	const pccx_gguf_tensor *gt;
	char name[PCCX_GEMMA3N_NAME_MAX];
	uint32_t part, r, b;
	uint64_t base;
	bool shape_ok;
	int rc;

	gguf_name(T->name, name, sizeof(name), &part);
	rc = pccx_gguf_get_tensor(g, name, &gt, d);
	if (rc)
		return rc;
	if (strcmp(name, T->name))
		shape_ok = gt->n_dims == 3 && gt->ne[0] == T->cols && gt->ne[1] == T->rows &&
			   gt->ne[2] > part;
	else
		shape_ok = gt->ne[0] == T->cols && gt->n_elems == (uint64_t)T->rows * T->cols;
	if (!shape_ok)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: tensor '%s': shape does not match (%u, %u)",
				  pccx_gguf_name(g), name, T->rows, T->cols);
	base = (uint64_t)part * T->rows;
	if (T->fmt != PCCX_WFMT_Q4 || gt->type != PCCX_GGML_Q4_0)
		return pccx__gemma3n_place_rows(m, t, gguf_row, g, gt, base, row, err, clipped, name,
						d);
	for (r = 0; r < T->rows; r++) {
		uint8_t *rec = m->data + T->offset + (uint64_t)r * T->row_bytes;
		const uint8_t *src = gt->data + (base + r) * (T->cols / 32) * Q4_0_BLOCK_BYTES;
		uint8_t *nib = rec + pccx_gemma3n_q4_scale_bytes(T->cols);

		for (b = 0; b < T->cols / 32; b++) {
			uint16_t h;

			pccx__q4_from_ggml_q4_0(src + Q4_0_BLOCK_BYTES * b, &h, nib + 16 * b);
			if (!pccx_q4_0_scale_finite(h)) {
				char what[sizeof(d->msg)];

				snprintf(what, sizeof(what), "%s: tensor '%s'", pccx_gguf_name(g),
					 name);
				return pccx__q4_0_refuse(d, what, (int64_t)(base + r), b, h);
			}
			rec[2 * b] = (uint8_t)h;
			rec[2 * b + 1] = (uint8_t)(h >> 8);
		}
		if (err)
			err->n += T->cols;
	}
	return PCCX_OK;
}

int pccx__gemma3n_load_gguf(struct pccx_gemma3n_model **out, const char *path, uint32_t max_ctx,
			    struct pccx_gemma3n_load_info *info, pccx_gguf **file, pccx_diag *d)
{
	struct pccx_gemma3n_load_info local;
	struct pccx_gemma3n_config cfg;
	struct pccx_gemma3n_model *m = NULL;
	pccx_gguf *g = NULL;
	float *row = NULL;
	uint32_t t, maxc = 0;
	int rc;

	*out = NULL;
	if (file)
		*file = NULL;
	if (!info)
		info = &local;
	pccx_q4_error_init(&info->q4);
	info->clipped = 0;
	rc = pccx_gguf_open(&g, path, d);
	if (!rc)
		rc = load_config(g, max_ctx, &cfg, d);
	if (!rc)
		rc = pccx__gemma3n_model_create(&m, &cfg, d);
	if (rc)
		goto out;
	for (t = 0; t < m->n_t; t++)
		maxc = m->t[t].cols > maxc ? m->t[t].cols : maxc;
	row = malloc(sizeof(float) * maxc);
	if (!row) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	for (t = 0; !rc && t < m->n_t; t++)
		rc = load_tensor(g, m, t, row, &info->q4, &info->clipped, d);
out:
	free(row);
	if (!rc && file)
		*file = g;	/* the caller reads its own keys from it (e.g. the tokenizer) */
	else
		pccx_gguf_close(g);
	if (rc) {
		pccx__gemma3n_model_free(m);
		return rc;
	}
	*out = m;
	return PCCX_OK;
}
