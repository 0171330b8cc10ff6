// SPDX-License-Identifier: MIT
/*
 * Gemma models to and from GGUF: llama.cpp's "gemma3n", "gemma", "gemma2", "gemma3" and
 * "gemma4" names and metadata (docs/model-files.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "gemma_gguf.h"
#include "gemma_gguf_import.h"
#include "gguf.h"
#include "ggml_types.h"
#include "gemma_st.h"
#include "modelfile_util.h"
#include "pccx_num.h"
#include "q4_0_rows.h"

#define ARCH "gemma3n"
/* pccx's key for the rows of the per-layer table that are used (llama.cpp does not read it) */
#define VOCAB_PLE_KEY "vocab_size_per_layer_input"
#define PLE_VOCAB_DEFAULT 262144u	/* Gemma 3n's vocab_size_per_layer_input */
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

/*
 * Gemma 4's experts: llama.cpp keeps a layer's experts in 3-D tensors (ne {D, 2 d_expert, E}
 * blk.N.ffn_gate_up_exps, expert e's gate rows then its up rows, as the converter writes
 * Hugging Face's gate_up_proj; or ffn_gate_exps and ffn_up_exps of ne {D, d_expert, E}; and
 * ffn_down_exps of ne {d_expert, D, E}), the router's scale as blk.N.ffn_gate_inp.scale and
 * the per-expert scale as blk.N.ffn_down_exps.scale; ours are one tensor per expert.
 */
enum moe_part { MOE_NONE, MOE_GATE, MOE_UP, MOE_DOWN, MOE_ROUTER_SCALE, MOE_EXPERT_SCALE };

/* Which part of a layer's experts model tensor t is (*layer, *expert receive where). */
static enum moe_part moe_part(const struct pccx_gemma_model *m, uint32_t t, uint32_t *layer,
			      uint32_t *expert)
{
	uint32_t l;

	for (l = 0; l < m->cfg.n_layers; l++) {
		const struct pccx_gemma_layer_w *lw = &m->w.layer[l];
		int64_t k = (int64_t)t - lw->experts;

		if (lw->experts < 0)
			continue;
		*layer = l;
		*expert = 0;
		if (k >= 0 && k < 3 * (int64_t)m->layers[l].n_experts) {
			*expert = (uint32_t)(k / 3);
			return (enum moe_part)(MOE_GATE + k % 3);
		}
		if (lw->vec[PCCX_GEMMA_LV_ROUTER_SCALE] == (int32_t)t)
			return MOE_ROUTER_SCALE;
		if (lw->vec[PCCX_GEMMA_LV_EXPERT_SCALE] == (int32_t)t)
			return MOE_EXPERT_SCALE;
	}
	return MOE_NONE;
}

/*
 * The GGUF name of tensor t and how many of ours the GGUF tensor stacks (1, or 3 for the AltUp
 * projections); the experts' vectors under llama.cpp's names.
 */
static uint32_t tensor_gguf_name(const struct pccx_gemma_model *m, uint32_t t, char *out,
				 size_t size, uint32_t *part)
{
	uint32_t l, e;

	switch (moe_part(m, t, &l, &e)) {
	case MOE_ROUTER_SCALE:
		*part = 0;
		snprintf(out, size, "blk.%u.ffn_gate_inp.scale", l);
		return 1;
	case MOE_EXPERT_SCALE:
		*part = 0;
		snprintf(out, size, "blk.%u.ffn_down_exps.scale", l);
		return 1;
	default:
		gguf_name(m->t[t].name, out, size, part);
		return strcmp(out, m->t[t].name) ? 3 : 1;
	}
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
	const uint8_t *nib = pccx_gemma_q4_nibbles(rec, cols);
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
static int save_tensor(struct save *s, const struct pccx_gemma_model *m, uint32_t t, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	char name[PCCX_GEMMA_NAME_MAX];
	uint32_t part, parts, p, r;
	uint64_t ne[3], row_out, nbytes;
	uint8_t *buf;
	bool q4 = T->fmt == PCCX_WFMT_Q4;

	parts = tensor_gguf_name(m, t, name, sizeof(name), &part);
	if (part)
		return PCCX_OK;	/* written with part 0 */
	row_out = q4 ? (uint64_t)T->cols / 32 * Q4_0_BLOCK_BYTES : (uint64_t)T->cols * 4;
	nbytes = row_out * T->rows * parts;
	buf = save_buf(s, nbytes);
	if (!buf)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: tensor '%s': out of memory",
				  name);
	for (p = 0; p < parts; p++) {
		uint32_t tp = t + p;	/* the parts are consecutive in the tensor table */

		for (r = 0; r < T->rows; r++) {
			const uint8_t *rec = pccx_gemma_row(m, (int32_t)tp, r);
			uint8_t *o = buf + ((uint64_t)p * T->rows + r) * row_out;

			if (q4) {
				row_to_q4_0(rec, T->cols, o);
			} else {
				/* F32 rows are stored as GGUF stores them: little-endian FP32 */
				memcpy(o, rec, (size_t)T->cols * 4);
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

/*
 * One 3-D tensor of layer l's experts: `name` of ne {cols, per * rows, E}, expert e's block
 * its tensors experts + 3e + k for the `per` k from k0 (gate and up fused, or down), each
 * written as Q4_0 rows.
 */
static int save_exps(struct save *s, const struct pccx_gemma_model *m, uint32_t l,
		     const char *name, uint32_t k0, uint32_t per, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[m->w.layer[l].experts + k0];
	uint32_t E = m->layers[l].n_experts, e, k, r;
	uint64_t ne[3], row_out = (uint64_t)T->cols / 32 * Q4_0_BLOCK_BYTES, nbytes;
	uint8_t *buf, *o;

	nbytes = row_out * T->rows * per * E;
	buf = save_buf(s, nbytes);
	if (!buf)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: tensor '%s': out of memory",
				  name);
	o = buf;
	for (e = 0; e < E; e++) {
		for (k = k0; k < k0 + per; k++) {
			int32_t t = m->w.layer[l].experts + (int32_t)(3 * e + k);

			for (r = 0; r < T->rows; r++, o += row_out)
				row_to_q4_0(pccx_gemma_row(m, t, r), T->cols, o);
		}
	}
	ne[0] = T->cols;
	ne[1] = (uint64_t)T->rows * per;
	ne[2] = E;
	return pccx_gguf_writer_add_tensor(s->w, name, PCCX_GGML_Q4_0, 3, ne, buf, nbytes, d);
}

/* Layer l's experts as the converter writes them: gate and up fused, down. */
static int save_experts(struct save *s, const struct pccx_gemma_model *m, uint32_t l,
			pccx_diag *d)
{
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "blk.%u.ffn_gate_up_exps.weight", l);
	rc = save_exps(s, m, l, name, 0, 2, d);
	snprintf(name, sizeof(name), "blk.%u.ffn_down_exps.weight", l);
	return rc ? rc : save_exps(s, m, l, name, 2, 1, d);
}

/*
 * per_layer_token_embd with llama.cpp's row count: the model's ple_vocab rows, then zero rows up
 * to the vocab (as llama.cpp's converter pads the table; a Q4_0 zero block is scale 0 and
 * nibbles u = 8). The loader reads back only the first ple_vocab rows.
 */
static int save_ple(struct save *s, const struct pccx_gemma_model *m, uint32_t t, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	uint64_t ne[2], row_out = (uint64_t)T->cols / 32 * Q4_0_BLOCK_BYTES, nbytes;
	uint32_t r, b, rows = m->cfg.vocab;
	uint8_t *buf;

	if (T->fmt != PCCX_WFMT_Q4 || T->rows > rows)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "GGUF export: tensor '%s': %u rows of "
				  "format %u, expected Q4 with at most %u rows", T->name, T->rows,
				  T->fmt, rows);
	nbytes = row_out * rows;
	buf = save_buf(s, nbytes);
	if (!buf)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: tensor '%s': out of memory",
				  T->name);
	for (r = 0; r < T->rows; r++)
		row_to_q4_0(pccx_gemma_row(m, (int32_t)t, r), T->cols, buf + r * row_out);
	for (b = 0; b < (rows - T->rows) * (T->cols / 32); b++) {
		uint8_t *blk = buf + T->rows * row_out + (uint64_t)b * Q4_0_BLOCK_BYTES;

		blk[0] = blk[1] = 0;
		memset(blk + 2, 0x88, Q4_0_BLOCK_BYTES - 2);
	}
	ne[0] = T->cols;
	ne[1] = rows;
	return pccx_gguf_writer_add_tensor(s->w, T->name, PCCX_GGML_Q4_0, 2, ne, buf, nbytes, d);
}

static int save_metadata_3n(pccx_gguf_writer *w, const struct pccx_gemma_config *c,
			    pccx_diag *d)
{
	struct pccx_attn_desc attn[PCCX_ATTN_KINDS];
	struct pccx_layer_desc layers[PCCX_GEMMA_MAX_LAYERS];
	bool swa[PCCX_GEMMA_MAX_LAYERS];
	float sparsity[PCCX_GEMMA_MAX_LAYERS];
	char name[64];
	uint32_t l;
	int rc;

	/* the per-layer keys: the layer table of the model's (checked) config */
	rc = pccx__layers_build(c, attn, layers, d);
	if (rc)
		return rc;
	for (l = 0; l < c->n_layers; l++) {
		swa[l] = layers[l].kind == PCCX_ATTN_LOCAL;
		/* the converter's Normal.icdf(p): -inf where p = 0 */
		sparsity[l] = layers[l].sparse ? layers[l].sparse_z : -INFINITY;
	}
	snprintf(name, sizeof(name), "pccx synthetic gemma3n %s", c->name);
	rc = pccx_gguf_writer_set_str(w, "general.architecture", ARCH, d);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "general.name", name, d);
	if (!rc)	/* llama_ftype MOSTLY_Q4_0: the matrices are Q4_0, the vectors F32 */
		rc = pccx_gguf_writer_set_u32(w, "general.file_type", 2, d);
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
	U32("altup.num_inputs", PCCX_GEMMA_ALTUP_STREAMS);
	U32("embedding_length_per_layer_input", c->d_ple);
	F32("final_logit_softcapping", c->softcap);
	/* the token count (llama.cpp reads it for a "no_vocab" tokenizer) and pccx's own key */
	U32("vocab_size", c->vocab);
	U32(VOCAB_PLE_KEY, c->ple_vocab);
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

/*
 * What llama.cpp's gemma, gemma2 and gemma3 loaders cannot be told: a configuration they
 * would run differently is refused rather than written (docs/model-files.md).
 */
static int plain_expressible(const struct pccx_gemma_config *c, pccx_diag *d)
{
	const struct pccx_family_desc *f = pccx__family(c->family);
	float q = pccx__gemma_gguf_q_scalar(c);
	const char *why = NULL;

	if (c->query_pre_attn_scalar != q)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "GGUF export: config '%s': "
				  "query_pre_attn_scalar %g, llama.cpp derives %g for a %s model "
				  "of %u layers (%s has no key for it)", c->name,
				  (double)c->query_pre_attn_scalar, (double)q, f->title,
				  c->n_layers, f->arch);
	if (c->family == PCCX_FAMILY_GEMMA &&
	    (c->global_period != 1 || c->softcap > 0.0f || c->attn_softcap > 0.0f ||
	     c->theta_local != c->theta_global))
		why = "Gemma 1 has no local layers (one RoPE base, global_period 1) and no "
		      "soft-caps";
	else if (c->family == PCCX_FAMILY_GEMMA2 &&
		 !(c->softcap > 0.0f && c->attn_softcap > 0.0f))
		why = "llama.cpp's gemma2 soft-caps scores and logits always";
	else if (c->family == PCCX_FAMILY_GEMMA2 && c->rope_factor_global > 0.0f &&
		 c->rope_factor_global != 1.0f && c->global_period != 1)
		why = "llama.cpp's gemma2 would scale the local layers' RoPE too";
	else if (c->family == PCCX_FAMILY_GEMMA3 && c->attn_softcap > 0.0f)
		why = "llama.cpp's gemma3 does not soft-cap scores";
	if (why)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "GGUF export: config '%s': %s", c->name,
				  why);
	return PCCX_OK;
}

/*
 * The <arch>.* keys llama.cpp's converter writes for Gemma 1, 2 and 3, and those its loader
 * reads where pccx's configuration differs from the loader's default (the local RoPE base,
 * the layer period). Gemma 1's window (unused: every layer is global) is the context length.
 */
static int save_metadata_plain(pccx_gguf_writer *w, const struct pccx_gemma_config *c,
			       pccx_diag *d)
{
	const char *arch = pccx__family(c->family)->arch;
	bool g1 = c->family == PCCX_FAMILY_GEMMA, g2 = c->family == PCCX_FAMILY_GEMMA2;
	char name[64], key[96];
	int rc = plain_expressible(c, d);

	snprintf(name, sizeof(name), "pccx synthetic %s %s", arch, c->name);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "general.architecture", arch, d);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "general.name", name, d);
	if (!rc)	/* llama_ftype MOSTLY_Q4_0: the matrices are Q4_0, the vectors F32 */
		rc = pccx_gguf_writer_set_u32(w, "general.file_type", 2, d);
#define KEY(k) (snprintf(key, sizeof(key), "%s.%s", arch, k), key)
#define U32(k, v) if (!rc) rc = pccx_gguf_writer_set_u32(w, KEY(k), (v), d)
#define F32(k, v) if (!rc) rc = pccx_gguf_writer_set_f32(w, KEY(k), (v), d)
	U32("context_length", g1 ? c->window : c->max_ctx);
	U32("embedding_length", c->d_model);
	U32("block_count", c->n_layers);
	U32("feed_forward_length", c->d_ffn);
	U32("attention.head_count", c->n_heads);
	U32("attention.head_count_kv", c->n_kv_heads);
	U32("attention.key_length", c->head_dim);
	U32("attention.value_length", c->head_dim);
	F32("attention.layer_norm_rms_epsilon", c->eps);
	F32("rope.freq_base", c->theta_global);
	if (!g1) {
		U32("attention.sliding_window", c->window);
		if (c->global_period != (g2 ? 2u : 6u))
			U32("attention.sliding_window_pattern", c->global_period);
		if (c->theta_local != (g2 ? c->theta_global : 10000.0f))
			F32("rope.freq_base_swa", c->theta_local);
	}
	if (g2)
		F32("attn_logit_softcapping", c->attn_softcap);
	if (c->softcap > 0.0f)
		F32("final_logit_softcapping", c->softcap);
	if (c->rope_factor_global > 0.0f && !rc)
		rc = pccx_gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear", d);
	if (c->rope_factor_global > 0.0f)
		F32("rope.scaling.factor", c->rope_factor_global);
	/* the token count llama.cpp reads for a "no_vocab" tokenizer */
	U32("vocab_size", c->vocab);
#undef U32
#undef F32
#undef KEY
	return rc;
}

/* ---- Gemma 4: llama.cpp's gemma4 -------------------------------------------------------- */

#define ROPE_FREQS "rope_freqs.weight"
/* the factor llama.cpp's converter writes for the frequencies that do not rotate */
#define ROPE_FREQ_OFF 1e30f

/* The head size of the global layers (key_length) and their rotating pairs (rope_freqs). */
static uint32_t g4_head_dim_global(const struct pccx_gemma_config *c)
{
	return c->head_dim_global ? c->head_dim_global : c->head_dim;
}

/*
 * What llama.cpp's gemma4 loader cannot be told (docs/model-files.md, "Gemma 4 in GGUF"): it
 * scales q by 1, soft-caps no scores, scales no RoPE linearly and reads a per-layer table row
 * for every token.
 */
static int g4_expressible(const struct pccx_gemma_config *c, pccx_diag *d)
{
	const char *why = NULL;

	if (c->query_pre_attn_scalar != 0.0f)
		why = "query_pre_attn_scalar is set; llama.cpp's gemma4 scales q by 1";
	else if (c->attn_softcap > 0.0f)
		why = "llama.cpp's gemma4 does not soft-cap scores";
	else if (c->rope_factor_global > 0.0f && c->rope_factor_global != 1.0f)
		why = "llama.cpp's gemma4 would scale the local layers' RoPE too";
	else if (c->d_ple && c->ple_vocab != c->vocab)
		why = "ple_vocab differs from vocab; llama.cpp's gemma4 reads a per-layer row for "
		      "every token";
	if (why)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "GGUF export: config '%s': %s", c->name,
				  why);
	return PCCX_OK;
}

/*
 * The per-layer keys of gemma4: the layer pattern (true: sliding), KV heads per layer (an
 * array only when the global layers have their own count, as the converter writes it) and
 * FFN widths (an array only with double-wide KV-sharing layers).
 */
static int g4_save_layer_keys(pccx_gguf_writer *w, const struct pccx_gemma_config *c,
			      pccx_diag *d)
{
	struct pccx_attn_desc attn[PCCX_ATTN_KINDS];
	struct pccx_layer_desc ly[PCCX_GEMMA_MAX_LAYERS];
	bool swa[PCCX_GEMMA_MAX_LAYERS];
	int32_t kv[PCCX_GEMMA_MAX_LAYERS], ffn[PCCX_GEMMA_MAX_LAYERS];
	uint32_t l;
	int rc = pccx__layers_build(c, attn, ly, d);

	if (rc)
		return rc;
	for (l = 0; l < c->n_layers; l++) {
		swa[l] = ly[l].kind == PCCX_ATTN_LOCAL;
		kv[l] = (int32_t)ly[l].n_kv_heads;
		ffn[l] = (int32_t)ly[l].d_ffn;
	}
	rc = pccx_gguf_writer_set_array(w, "gemma4.attention.sliding_window_pattern",
					PCCX_GGUF_BOOL, swa, c->n_layers, d);
	if (!rc && c->n_kv_heads_global)
		rc = pccx_gguf_writer_set_array(w, "gemma4.attention.head_count_kv",
						PCCX_GGUF_INT32, kv, c->n_layers, d);
	else if (!rc)
		rc = pccx_gguf_writer_set_u32(w, "gemma4.attention.head_count_kv", c->n_kv_heads,
					      d);
	if (!rc && c->double_wide_mlp)
		rc = pccx_gguf_writer_set_array(w, "gemma4.feed_forward_length", PCCX_GGUF_INT32,
						ffn, c->n_layers, d);
	else if (!rc)
		rc = pccx_gguf_writer_set_u32(w, "gemma4.feed_forward_length", c->d_ffn, d);
	return rc;
}

/*
 * The gemma4.* keys llama.cpp's converter writes: the global layers' head size as key_length
 * (and rope.dimension_count: their partial rotation is rope_freqs.weight), the local one as
 * key_length_swa.
 */
static int save_metadata_4(pccx_gguf_writer *w, const struct pccx_gemma_config *c, pccx_diag *d)
{
	uint32_t hdg = g4_head_dim_global(c);
	char name[64];
	int rc = g4_expressible(c, d);

	snprintf(name, sizeof(name), "pccx synthetic gemma4 %s", c->name);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "general.architecture", "gemma4", d);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "general.name", name, d);
	if (!rc)	/* llama_ftype MOSTLY_Q4_0: the matrices are Q4_0, the vectors F32 */
		rc = pccx_gguf_writer_set_u32(w, "general.file_type", 2, d);
#define U32(k, v) if (!rc) rc = pccx_gguf_writer_set_u32(w, "gemma4." k, (v), d)
#define F32(k, v) if (!rc) rc = pccx_gguf_writer_set_f32(w, "gemma4." k, (v), d)
	U32("block_count", c->n_layers);
	U32("context_length", c->max_ctx);
	U32("embedding_length", c->d_model);
	U32("attention.head_count", c->n_heads);
	F32("attention.layer_norm_rms_epsilon", c->eps);
	U32("attention.key_length", hdg);
	U32("attention.value_length", hdg);
	U32("attention.key_length_swa", c->head_dim);
	U32("attention.value_length_swa", c->head_dim);
	F32("rope.freq_base", c->theta_global);
	F32("rope.freq_base_swa", c->theta_local);
	U32("rope.dimension_count", hdg);
	U32("rope.dimension_count_swa", c->head_dim);
	U32("attention.sliding_window", c->window);
	U32("attention.shared_kv_layers", c->n_kv_shared);
	U32("embedding_length_per_layer_input", c->d_ple);
	/* llama.cpp's default is 30: a model without a cap says 0 */
	F32("final_logit_softcapping", c->softcap);
	/* the token count llama.cpp reads for a "no_vocab" tokenizer */
	U32("vocab_size", c->vocab);
	if (c->n_experts) {
		U32("expert_count", c->n_experts);
		U32("expert_used_count", c->n_experts_used);
		U32("expert_feed_forward_length", c->d_expert);
	}
#undef U32
#undef F32
	if (!rc)
		rc = g4_save_layer_keys(w, c, d);
	return rc;
}

/*
 * rope_freqs.weight, llama.cpp's form of the proportional RoPE of global layers: a factor
 * per frequency of a global head, 1 for the rope_dims / 2 that rotate, 1e30 (frequency ~0)
 * for the others. Written when the model has a global layer (llama.cpp requires it then).
 */
static int save_rope_freqs(struct save *s, const struct pccx_gemma_model *m, pccx_diag *d)
{
	const struct pccx_attn_desc *a = &m->attn[PCCX_ATTN_GLOBAL];
	uint64_t ne[1] = { a->head_dim / 2 };
	uint32_t i, l;
	float *f;

	for (l = 0; l < m->cfg.n_layers && m->layers[l].kind != PCCX_ATTN_GLOBAL; l++)
		;
	if (l == m->cfg.n_layers)
		return PCCX_OK;
	f = save_buf(s, sizeof(float) * ne[0]);
	if (!f)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: tensor '" ROPE_FREQS "': out of "
				  "memory");
	for (i = 0; i < ne[0]; i++)
		f[i] = i < a->rope_dims / 2 ? 1.0f : ROPE_FREQ_OFF;
	return pccx_gguf_writer_add_tensor(s->w, ROPE_FREQS, PCCX_GGML_F32, 1, ne, f,
					   sizeof(float) * ne[0], d);
}

/* The families this module writes and reads in llama.cpp's layout besides Gemma 3n. */
static bool plain_family(enum pccx_family f)
{
	return f == PCCX_FAMILY_GEMMA || f == PCCX_FAMILY_GEMMA2 || f == PCCX_FAMILY_GEMMA3;
}

static int save_metadata(pccx_gguf_writer *w, const struct pccx_gemma_config *c, pccx_diag *d)
{
	if (c->family == PCCX_FAMILY_GEMMA3N)
		return save_metadata_3n(w, c, d);
	if (plain_family(c->family))
		return save_metadata_plain(w, c, d);
	if (c->family == PCCX_FAMILY_GEMMA4)
		return save_metadata_4(w, c, d);
	return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "GGUF export: config '%s': %s models are not "
			  "written as GGUF (gemma3n, gemma, gemma2, gemma3, gemma4 are)", c->name,
			  pccx__family(c->family)->title);
}

int pccx__gemma_save_gguf(const struct pccx_gemma_model *m, const struct pccx_gguf_keys *keys,
			    const char *path, pccx_diag *d)
{
	struct save s = { 0 };
	uint32_t t;
	int rc;

	s.bufs = calloc(m->n_t + 1, sizeof(*s.bufs));	/* + Gemma 4's rope_freqs */
	if (!s.bufs)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: out of memory");
	rc = pccx_gguf_writer_new(&s.w, d);
	if (!rc)
		rc = save_metadata(s.w, &m->cfg, d);
	if (!rc && keys && keys->add)
		rc = keys->add(s.w, keys->arg, m->cfg.vocab, d);
	else if (!rc)	/* llama.cpp requires the key; "no_vocab" takes the count from vocab_size */
		rc = pccx_gguf_writer_set_str(s.w, "tokenizer.ggml.model", "no_vocab", d);
	if (!rc && m->cfg.family == PCCX_FAMILY_GEMMA4)
		rc = save_rope_freqs(&s, m, d);
	for (t = 0; !rc && t < m->n_t; t++) {
		uint32_t l, e;
		enum moe_part p = moe_part(m, t, &l, &e);

		if (p == MOE_GATE && e == 0)
			rc = save_experts(&s, m, l, d);
		else if (p == MOE_GATE || p == MOE_UP || p == MOE_DOWN)
			continue;	/* written with the layer's first */
		else if ((int32_t)t == m->w.ple_table)
			rc = save_ple(&s, m, t, d);
		else
			rc = save_tensor(&s, m, t, d);
	}
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
	const pccx_gguf_value *v = pccx_gguf_find(g, key);

	if (!v) {
		*out = def;
		return PCCX_OK;
	}
	/* some converter versions wrote counts (shared_kv_layers) as float32: take whole ones */
	if ((v->type == PCCX_GGUF_FLOAT32 || v->type == PCCX_GGUF_FLOAT64) && v->v.f >= 0.0 &&
	    v->v.f <= 4294967295.0 && v->v.f == floor(v->v.f)) {
		*out = (uint32_t)v->v.f;
		return PCCX_OK;
	}
	return pccx_gguf_get_u32(g, key, out, d);
}

/*
 * A layer without activation sparsity: llama.cpp's converter writes Normal.icdf(0) = -inf,
 * pccx used to write 0.
 */
static bool dense_z(float z)
{
	return z == 0.0f || z == -INFINITY;
}

static int key_f32(const pccx_gguf *g, const char *key, float def, float *out, pccx_diag *d)
{
	if (!pccx_gguf_find(g, key)) {
		*out = def;
		return PCCX_OK;
	}
	return pccx_gguf_get_f32(g, key, out, d);
}

/*
 * The token count llama.cpp sizes the embeddings by: the length of tokenizer.ggml.tokens, or
 * for a "no_vocab" tokenizer <arch>.vocab_size. *n = 0 when the file has no tokenizer keys.
 * `what` (size bytes) receives the source of the count, empty when there is none.
 */
static int token_count(const pccx_gguf *g, const char *arch, uint64_t *n, char *what,
		       size_t size, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g), *model = NULL;
	const pccx_gguf_value *v;
	static const struct {
		const char *key, *types;
		uint32_t type, type2;
	} arrays[] = {
		{ "tokenizer.ggml.scores", "float32 or int32", PCCX_GGUF_FLOAT32, PCCX_GGUF_INT32 },
		{ "tokenizer.ggml.token_type", "int32", PCCX_GGUF_INT32, PCCX_GGUF_INT32 },
	};
	char vkey[64];
	size_t i;
	uint32_t u;
	int rc;

	*n = 0;
	what[0] = 0;
	snprintf(vkey, sizeof(vkey), "%s.vocab_size", arch);
	if (pccx_gguf_find(g, "tokenizer.ggml.model")) {
		rc = pccx_gguf_get_str(g, "tokenizer.ggml.model", &model, NULL, d);
		if (rc)
			return rc;
	}
	if (model && (!strcmp(model, "no_vocab") || !strcmp(model, "none"))) {
		snprintf(what, size, "%s (tokenizer.ggml.model \"no_vocab\")", vkey);
		if (!pccx_gguf_find(g, vkey))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.model is \"%s\" "
					  "and key '%s' is absent: llama.cpp would count 0 tokens",
					  name, model, vkey);
		rc = pccx_gguf_get_u32(g, vkey, &u, d);
		*n = u;
		return rc;
	}
	v = pccx_gguf_find(g, "tokenizer.ggml.tokens");
	if (!v) {
		if (model)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.model is \"%s\" "
					  "but key 'tokenizer.ggml.tokens' is absent", name, model);
		return PCCX_OK;
	}
	if (v->type != PCCX_GGUF_ARRAY || v->v.arr.elem_type != PCCX_GGUF_STRING)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens': not an "
				  "array of strings", name);
	*n = v->v.arr.n;
	snprintf(what, size, "tokenizer.ggml.tokens");
	/* llama.cpp reads a score and a type for every token (longer arrays pass) */
	for (i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		v = pccx_gguf_find(g, arrays[i].key);
		if (!v)
			continue;
		if (v->type != PCCX_GGUF_ARRAY || (v->v.arr.elem_type != arrays[i].type &&
						   v->v.arr.elem_type != arrays[i].type2))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s': not an array of %s",
					  name, arrays[i].key, arrays[i].types);
		if (v->v.arr.n < *n)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s' has %llu entries, fewer "
					  "than the %llu of tokenizer.ggml.tokens", name,
					  arrays[i].key, (unsigned long long)v->v.arr.n,
					  (unsigned long long)*n);
	}
	return PCCX_OK;
}

/*
 * The vocabulary from token_embd.weight's rows, {d_model, vocab}: it is also the LM head
 * (llama.cpp may duplicate it as output.weight; a separate one is not run).
 */
static int tied_vocab(const pccx_gguf *g, const char *name, struct pccx_gemma_config *c,
		      pccx_diag *d)
{
	const pccx_gguf_tensor *te;

	if (pccx_gguf_find_tensor(g, "output.weight"))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: tensor 'output.weight': an LM head "
				  "apart from token_embd.weight is not supported", name);
	te = pccx_gguf_find_tensor(g, "token_embd.weight");
	if (!te)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: tensor 'token_embd.weight' is "
				  "missing", name);
	if (te->n_dims != 2 || te->ne[0] != c->d_model || te->ne[1] == 0 ||
	    te->ne[1] > (1u << 24))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor 'token_embd.weight' has shape ne "
				  "{%llu, %llu} (%u dims), expected {%u, vocab}", name,
				  (unsigned long long)te->ne[0],
				  (unsigned long long)(te->n_dims > 1 ? te->ne[1] : 1), te->n_dims,
				  c->d_model);
	c->vocab = (uint32_t)te->ne[1];
	return PCCX_OK;
}

/*
 * The token count against token_embd's `vocab` rows, as llama.cpp checks it: the tokenizer's
 * count and <arch>.vocab_size (when present) say the same.
 */
static int check_token_count(const pccx_gguf *g, const char *arch, uint32_t vocab, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	char what[160], vkey[64];
	uint64_t n;
	uint32_t u;
	int rc;

	rc = token_count(g, arch, &n, what, sizeof(what), d);
	if (rc)
		return rc;
	if (what[0] && n != vocab)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor 'token_embd.weight' has %u rows "
				  "(ne {%llu, %u}) but %s counts %llu tokens; llama.cpp expects "
				  "one row per token", name, vocab,
				  (unsigned long long)pccx_gguf_find_tensor(g, "token_embd.weight")->ne[0],
				  vocab, what, (unsigned long long)n);
	snprintf(vkey, sizeof(vkey), "%s.vocab_size", arch);
	if (pccx_gguf_find(g, vkey)) {
		rc = pccx_gguf_get_u32(g, vkey, &u, d);
		if (rc)
			return rc;
		if (u != vocab)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s' is %u, tensor "
					  "'token_embd.weight' has %u rows", name, vkey, u, vocab);
	}
	return PCCX_OK;
}

/*
 * The per-layer table of Gemma 3n, checked as llama.cpp checks it: per_layer_token_embd has
 * one row per token as token_embd (`vocab` rows). *ple_vocab: the rows of the per-layer table
 * the model uses (ids past them use row 0), pccx's key when present, else Gemma 3n's 262144
 * (llama.cpp pads the table with zero rows beyond).
 */
static int load_vocab(const pccx_gguf *g, uint32_t vocab, uint32_t *ple_vocab, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	const pccx_gguf_tensor *tp = pccx_gguf_find_tensor(g, "per_layer_token_embd.weight");
	int rc;

	rc = check_token_count(g, ARCH, vocab, d);
	if (rc)
		return rc;
	if (tp->ne[1] != vocab)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor 'per_layer_token_embd.weight' has "
				  "%llu rows (ne {%llu, %llu}), expected %u, one per token as "
				  "token_embd.weight (llama.cpp's layout pads the table)", name,
				  (unsigned long long)tp->ne[1], (unsigned long long)tp->ne[0],
				  (unsigned long long)tp->ne[1], vocab);
	*ple_vocab = vocab < PLE_VOCAB_DEFAULT ? vocab : PLE_VOCAB_DEFAULT;
	if (pccx_gguf_find(g, ARCH "." VOCAB_PLE_KEY)) {
		rc = pccx_gguf_get_u32(g, ARCH "." VOCAB_PLE_KEY, ple_vocab, d);
		if (rc)
			return rc;
		if (!*ple_vocab || *ple_vocab > vocab)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '" ARCH "." VOCAB_PLE_KEY
					  "' is %u, not in 1..%u (the rows of "
					  "per_layer_token_embd.weight)", name, *ple_vocab, vocab);
	}
	return PCCX_OK;
}

/* <arch>.feed_forward_length: one value, or one per layer (llama.cpp accepts both) that agree */
static int key_ffn(const pccx_gguf *g, const char *key, uint32_t *d_ffn, pccx_diag *d)
{
	const pccx_gguf_array *a;
	uint32_t l;
	int rc;

	if (!pccx_gguf_get_u32(g, key, d_ffn, NULL))
		return PCCX_OK;
	rc = pccx_gguf_get_array(g, key, PCCX_GGUF_TYPE_COUNT, &a, d);
	for (l = 0; !rc && l < a->n; l++) {
		int64_t v;

		rc = pccx_gguf_array_i64(a, l, &v);
		if (!rc && (l ? v != (int64_t)*d_ffn : v <= 0 || v > 65535))
			rc = pccx__fail(d, PCCX_ERR_UNSUPPORTED,
					"%s: feed_forward_length differs between layers",
					pccx_gguf_name(g));
		*d_ffn = (uint32_t)v;
	}
	return rc;
}

/* The configuration from the gemma3n.* metadata and the tensor shapes. */
static int load_config_3n(const pccx_gguf *g, uint32_t max_ctx, struct pccx_gemma_config *c,
			  pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	const pccx_gguf_tensor *te, *tp, *tl;
	const pccx_gguf_array *a;
	uint32_t l;
	int rc;

	rc = pccx_gguf_get_u32(g, ARCH ".block_count", &c->n_layers, d);
	if (!rc)
		rc = pccx_gguf_get_u32(g, ARCH ".embedding_length", &c->d_model, d);
	if (!rc)
		rc = key_ffn(g, ARCH ".feed_forward_length", &c->d_ffn, d);
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
		for (l = 0; l < n && !dense_z(z[l]) && z[l] == z[0]; l++)
			;
		c->n_sparse = l;
		c->sparse_z = l ? z[0] : 0.0f;
		for (; l < n; l++)
			if (!dense_z(z[l]))
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
	    tl->ne[1] > 65535)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: unexpected embedding / LAuReL shapes",
				  name);
	c->vocab = (uint32_t)te->ne[1];
	rc = load_vocab(g, c->vocab, &c->ple_vocab, d);
	if (rc)
		return rc;
	c->laurel_rank = (uint32_t)tl->ne[1];
	c->max_ctx = max_ctx ? max_ctx : 4096;
	return PCCX_OK;
}

/* ---- Gemma 1, 2 and 3: llama.cpp's gemma, gemma2 and gemma3 ---------------------------- */

/*
 * Key `<arch>.<k>` as llama.cpp reads it: a missing required key is refused naming it, a
 * missing optional one gives `def`.
 */
static int plain_key(const pccx_gguf *g, enum pccx_family f, const char *k, char *key,
		     size_t size, bool required, pccx_diag *d)
{
	snprintf(key, size, "%s.%s", pccx__family(f)->arch, k);
	if (pccx_gguf_find(g, key))
		return 1;
	if (required)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: key '%s' is missing (llama.cpp's %s "
				  "loader requires it)", pccx_gguf_name(g), key,
				  pccx__family(f)->arch);
	return 0;
}

static int plain_u32(const pccx_gguf *g, enum pccx_family f, const char *k, bool required,
		     uint32_t def, uint32_t *out, pccx_diag *d)
{
	char key[96];
	int rc = plain_key(g, f, k, key, sizeof(key), required, d);

	*out = def;
	return rc == 1 ? pccx_gguf_get_u32(g, key, out, d) : rc;
}

static int plain_f32(const pccx_gguf *g, enum pccx_family f, const char *k, bool required,
		     float def, float *out, pccx_diag *d)
{
	char key[96];
	int rc = plain_key(g, f, k, key, sizeof(key), required, d);

	*out = def;
	return rc == 1 ? pccx_gguf_get_f32(g, key, out, d) : rc;
}

/*
 * The q scale llama.cpp applies (it has no key): 1/sqrt(key_length), except for the 27B
 * models of Gemma 2 (46 layers) and Gemma 3 (62 layers), which use 1/sqrt(n_embd / n_head)
 * (integer division) as their query_pre_attn_scalar does.
 */
float pccx__gemma_gguf_q_scalar(const struct pccx_gemma_config *c)
{
	bool big = (c->family == PCCX_FAMILY_GEMMA2 && c->n_layers == 46) ||
		   (c->family == PCCX_FAMILY_GEMMA3 && c->n_layers == 62);

	return big && c->n_heads ? (float)(c->d_model / c->n_heads) : (float)c->head_dim;
}

/*
 * The layer pattern: Gemma 1 has none (every layer global), Gemma 2 alternates (period 2),
 * Gemma 3 has every 6th layer global; <arch>.attention.sliding_window_pattern (a period, as
 * llama.cpp reads it) overrides. Gemma 3 without a sliding window attends globally
 * everywhere. The window of all-global models is the context (not used by any layer).
 */
static int plain_pattern(const pccx_gguf *g, enum pccx_family f, uint32_t ctx,
			 struct pccx_gemma_config *c, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	char key[96];
	uint32_t def = f == PCCX_FAMILY_GEMMA2 ? 4096 : 0;
	int rc;

	c->global_period = 1;
	c->window = ctx < 65535 ? ctx : 65535;
	if (f == PCCX_FAMILY_GEMMA)
		return PCCX_OK;
	rc = plain_u32(g, f, "attention.sliding_window", false, def, &def, d);
	if (rc || !def)
		return rc;
	c->window = def;
	c->global_period = f == PCCX_FAMILY_GEMMA2 ? 2 : 6;
	rc = plain_key(g, f, "attention.sliding_window_pattern", key, sizeof(key), false, d);
	if (rc != 1)
		return rc;
	if (pccx_gguf_find(g, key)->type == PCCX_GGUF_ARRAY)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s' is an array; llama.cpp's "
				  "%s loader reads one period", name, key, pccx__family(f)->arch);
	rc = pccx_gguf_get_u32(g, key, &c->global_period, d);
	if (!rc && !c->global_period)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s' is 0 (every layer "
				  "local): not supported", name, key);
	return rc;
}

/* RoPE: the global base, the local one, the linear scaling of the global layers. */
static int plain_rope(const pccx_gguf *g, enum pccx_family f, struct pccx_gemma_config *c,
		      pccx_diag *d)
{
	const char *name = pccx_gguf_name(g), *type = "linear";
	char key[96];
	float factor = 0.0f;
	int rc;

	rc = plain_f32(g, f, "rope.freq_base", false, 10000.0f, &c->theta_global, d);
	if (!rc)	/* llama.cpp: Gemma 3's local base is 10000, Gemma 2's the global one */
		rc = plain_f32(g, f, "rope.freq_base_swa", false,
			       f == PCCX_FAMILY_GEMMA3 ? 10000.0f : c->theta_global,
			       &c->theta_local, d);
	if (!rc && f == PCCX_FAMILY_GEMMA)
		c->theta_local = c->theta_global;	/* no local layers */
	if (!rc && (rc = plain_key(g, f, "rope.scaling.type", key, sizeof(key), false, d)) == 1)
		rc = pccx_gguf_get_str(g, key, &type, NULL, d);
	if (rc)
		return rc;
	if (strcmp(type, "linear") && strcmp(type, "none"))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s' is \"%s\": only linear "
				  "RoPE scaling is supported", name, key, type);
	rc = plain_key(g, f, "rope.scaling.factor", key, sizeof(key), false, d);
	if (!rc)
		rc = plain_key(g, f, "rope.scale_linear", key, sizeof(key), false, d);
	if (rc == 1)
		rc = pccx_gguf_get_f32(g, key, &factor, d);
	if (rc || !strcmp(type, "none") || factor == 0.0f)
		return rc;
	if (!(factor > 0.0f && factor < 1e30f))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s' is %g, not a positive "
				  "scaling factor", name, key, (double)factor);
	/* llama.cpp scales Gemma 2's local layers too: the device scales only global ones */
	if (f == PCCX_FAMILY_GEMMA2 && factor != 1.0f && c->global_period != 1)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s' is %g: Gemma 2 scales the "
				  "local layers' RoPE too, which is not supported", name, key,
				  (double)factor);
	c->rope_factor_global = factor;
	return PCCX_OK;
}

/* The configuration of a gemma, gemma2 or gemma3 GGUF (llama.cpp's keys and defaults). */
static int load_config_plain(const pccx_gguf *g, enum pccx_family f, uint32_t max_ctx,
			     struct pccx_gemma_config *c, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	char key[96];
	uint32_t ctx = 0, v_len = 0;
	int rc;

	c->family = f;
	rc = plain_u32(g, f, "block_count", true, 0, &c->n_layers, d);
	if (!rc)
		rc = plain_u32(g, f, "context_length", true, 0, &ctx, d);
	if (!rc)
		rc = plain_u32(g, f, "embedding_length", true, 0, &c->d_model, d);
	if (!rc && (rc = plain_key(g, f, "feed_forward_length", key, sizeof(key), true, d)) == 1)
		rc = key_ffn(g, key, &c->d_ffn, d);
	if (!rc)
		rc = plain_u32(g, f, "attention.head_count", true, 0, &c->n_heads, d);
	if (!rc)
		rc = plain_u32(g, f, "attention.head_count_kv", false, c->n_heads, &c->n_kv_heads,
			       d);
	if (!rc)
		rc = plain_u32(g, f, "attention.key_length",
			       false, c->n_heads ? c->d_model / c->n_heads : 0, &c->head_dim, d);
	if (!rc)
		rc = plain_u32(g, f, "attention.value_length", false,
			       c->n_heads ? c->d_model / c->n_heads : 0, &v_len, d);
	if (!rc && v_len != c->head_dim)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s.attention.value_length' "
				  "is %u, key_length %u: different K and V widths are not "
				  "supported", name, pccx__family(f)->arch, v_len, c->head_dim);
	if (!rc)
		rc = plain_f32(g, f, "attention.layer_norm_rms_epsilon", true, 0.0f, &c->eps, d);
	if (!rc)
		rc = plain_pattern(g, f, ctx, c, d);
	if (!rc)
		rc = plain_rope(g, f, c, d);
	/* llama.cpp's defaults: Gemma 2 caps scores at 50 and logits at 30, Gemma 3 neither */
	if (!rc && f == PCCX_FAMILY_GEMMA2)
		rc = plain_f32(g, f, "attn_logit_softcapping", false, 50.0f, &c->attn_softcap, d);
	if (!rc && f != PCCX_FAMILY_GEMMA)
		rc = plain_f32(g, f, "final_logit_softcapping", false,
			       f == PCCX_FAMILY_GEMMA2 ? 30.0f : 0.0f, &c->softcap, d);
	if (rc)
		return rc;
	if (f == PCCX_FAMILY_GEMMA2 && !(c->attn_softcap > 0.0f && c->softcap > 0.0f))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: gemma2 soft-caps %g (scores) and "
				  "%g (logits): llama.cpp divides by them, they must be > 0", name,
				  (double)c->attn_softcap, (double)c->softcap);
	c->query_pre_attn_scalar = pccx__gemma_gguf_q_scalar(c);
	rc = tied_vocab(g, name, c, d);
	if (rc)
		return rc;
	c->max_ctx = max_ctx ? max_ctx : 4096;
	return check_token_count(g, pccx__family(f)->arch, c->vocab, d);
}

/* ---- Gemma 4: llama.cpp's gemma4 -------------------------------------------------------- */

/*
 * A per-layer key as llama.cpp's get_key_or_arr reads it: one value for every layer, or an
 * array of one per layer. Values outside 1..max are refused naming the key and layer.
 */
static int g4_layer_u32s(const pccx_gguf *g, const char *k, uint32_t n, uint32_t max,
			 uint32_t *out, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	const pccx_gguf_array *a;
	char key[96];
	uint32_t l, v;
	int rc = plain_key(g, PCCX_FAMILY_GEMMA4, k, key, sizeof(key), true, d);

	if (rc != 1)
		return rc;
	if (pccx_gguf_find(g, key)->type != PCCX_GGUF_ARRAY) {
		rc = pccx_gguf_get_u32(g, key, &v, d);
		for (l = 0; !rc && l < n; l++)
			out[l] = v;
		if (!rc && (v == 0 || v > max))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s' is %u, not in 1..%u",
					  name, key, v, max);
		return rc;
	}
	rc = pccx_gguf_get_array(g, key, PCCX_GGUF_TYPE_COUNT, &a, d);
	if (rc)
		return rc;
	if (a->n != n)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s' has %llu entries for %u layers",
				  name, key, (unsigned long long)a->n, n);
	for (l = 0; l < n; l++) {
		int64_t x;

		if (pccx_gguf_array_i64(a, l, &x) || x < 1 || x > (int64_t)max)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s': layer %u: not an "
					  "integer in 1..%u", name, key, l, max);
		out[l] = (uint32_t)x;
	}
	return PCCX_OK;
}

/*
 * The layer pattern (gemma4.attention.sliding_window_pattern, one bool per layer, required
 * by llama.cpp) as global_period; *local receives it per layer.
 */
static int g4_pattern(const pccx_gguf *g, struct pccx_gemma_config *c, bool *local,
		      pccx_diag *d)
{
	const char *name = pccx_gguf_name(g), *key = "gemma4.attention.sliding_window_pattern";
	const pccx_gguf_array *a;
	unsigned char sw[PCCX_GEMMA_MAX_LAYERS];
	char k[96];
	uint32_t l;
	int rc = plain_key(g, PCCX_FAMILY_GEMMA4, "attention.sliding_window_pattern", k,
			   sizeof(k), true, d);

	if (rc != 1)
		return rc;
	rc = pccx_gguf_get_array(g, key, PCCX_GGUF_BOOL, &a, d);
	if (rc)
		return rc;
	if (a->n != c->n_layers)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s' has %llu entries for %u layers",
				  name, key, (unsigned long long)a->n, c->n_layers);
	for (l = 0; l < c->n_layers; l++)
		sw[l] = ((const unsigned char *)a->data)[l] != 0;
	c->global_period = pccx__layers_global_period(sw, c->n_layers, &l);
	if (l < c->n_layers)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s': layer %u is %s, which no "
				  "period of global layers gives (global_period %u)", name, key, l,
				  sw[l] ? "sliding" : "global", c->global_period);
	for (l = 0; l < c->n_layers; l++)
		local[l] = sw[l];
	return PCCX_OK;
}

/*
 * One value per attention kind from a per-layer key (head_count_kv): every layer of a kind
 * must have the same, refused naming the key, the layer and the values. kind_v[k] is 0 when
 * no layer has kind k.
 */
static int g4_per_kind(const pccx_gguf *g, const char *key, const uint32_t *v, const bool *local,
		       uint32_t n, uint32_t kind_v[2], pccx_diag *d)
{
	uint32_t l;

	kind_v[0] = kind_v[1] = 0;
	for (l = 0; l < n; l++) {
		uint32_t *k = &kind_v[local[l] ? 0 : 1];

		if (*k && *k != v[l])
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key 'gemma4.%s': layer %u "
					  "(%s) has %u where an earlier %s layer has %u: one count per "
					  "kind of layer is supported", pccx_gguf_name(g), key, l,
					  local[l] ? "sliding" : "global", v[l],
					  local[l] ? "sliding" : "global", *k);
		*k = v[l];
	}
	return PCCX_OK;
}

/*
 * FFN widths: d_ffn in the KV-owning layers, d_ffn or 2 d_ffn (double_wide_mlp) in all the
 * KV-sharing ones (the layers the table builder's pccx__layers_kv_sources has reading another
 * layer's cache).
 */
static int g4_ffn(const pccx_gguf *g, struct pccx_gemma_config *c, const bool *local,
		  pccx_diag *d)
{
	uint32_t f[PCCX_GEMMA_MAX_LAYERS], src[PCCX_GEMMA_MAX_LAYERS], l, wide = 0;
	int rc = g4_layer_u32s(g, "feed_forward_length", c->n_layers, 65535, f, d);

	if (rc)
		return rc;
	if (pccx__layers_kv_sources(local, c->n_layers, c->n_kv_shared, src) != c->n_layers)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key "
				  "'gemma4.attention.shared_kv_layers' is %u: a KV-sharing layer "
				  "has no earlier layer of its kind", pccx_gguf_name(g),
				  c->n_kv_shared);
	c->d_ffn = f[0];
	for (l = 0; l < c->n_layers && !wide; l++)
		wide = src[l] != l ? f[l] : 0;
	c->double_wide_mlp = wide == 2 * f[0];
	for (l = 0; l < c->n_layers; l++) {
		uint32_t want = src[l] != l && c->double_wide_mlp ? 2 * f[0] : f[0];

		if (f[l] != want)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key "
					  "'gemma4.feed_forward_length': layer %u has %u, expected "
					  "%u (layer 0's, doubled in every KV-sharing layer when "
					  "double-wide)", pccx_gguf_name(g), l, f[l], want);
	}
	return PCCX_OK;
}

/*
 * The attention shapes: head counts (KV heads per kind), the local head size key_length_swa
 * and the global one key_length (value lengths equal, RoPE over the whole head as
 * rope.dimension_count says; the partial rotation is rope_freqs.weight).
 */
static int g4_heads(const pccx_gguf *g, struct pccx_gemma_config *c, const bool *local,
		    pccx_diag *d)
{
	static const char *const pairs[3][2] = {
		{ "attention.value_length", "attention.key_length" },
		{ "attention.value_length_swa", "attention.key_length_swa" },
		{ "rope.dimension_count_swa", "attention.key_length_swa" },
	};
	const char *name = pccx_gguf_name(g);
	const pccx_gguf_value *kv;
	uint32_t v[PCCX_GEMMA_MAX_LAYERS], kinds[2], hd_full, x, i;
	int rc = g4_layer_u32s(g, "attention.head_count", c->n_layers, 1024, v, d);

	if (!rc)
		rc = g4_per_kind(g, "attention.head_count", v, local, c->n_layers, kinds, d);
	if (!rc && kinds[0] && kinds[1] && kinds[0] != kinds[1])
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key 'gemma4.attention.head_count': "
				  "%u query heads in sliding layers, %u in global ones: not "
				  "supported", name, kinds[0], kinds[1]);
	c->n_heads = v[0];
	kv = pccx_gguf_find(g, "gemma4.attention.head_count_kv");
	if (!rc && kv)	/* absent: llama.cpp's default, head_count */
		rc = g4_layer_u32s(g, "attention.head_count_kv", c->n_layers, 1024, v, d);
	if (rc)
		return rc;
	rc = g4_per_kind(g, "attention.head_count_kv", v, local, c->n_layers, kinds, d);
	if (rc)
		return rc;
	c->n_kv_heads = kinds[0] ? kinds[0] : kinds[1];
	/* an array (the converter's form for a count of their own) gives the global count */
	if (kv && kv->type == PCCX_GGUF_ARRAY)
		c->n_kv_heads_global = kinds[1];
	/* TensorSharp's key for it, when present, must say the same */
	if (pccx_gguf_find(g, "gemma4.attention.global_head_count_kv")) {
		rc = pccx_gguf_get_u32(g, "gemma4.attention.global_head_count_kv", &x, d);
		if (!rc && kinds[1] && x != kinds[1])
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key "
					  "'gemma4.attention.global_head_count_kv' is %u, "
					  "head_count_kv gives the global layers %u", name, x,
					  kinds[1]);
	}
	if (!rc)
		rc = plain_u32(g, PCCX_FAMILY_GEMMA4, "attention.key_length", false,
			       c->d_model / c->n_heads, &hd_full, d);
	if (!rc)
		rc = plain_u32(g, PCCX_FAMILY_GEMMA4, "attention.key_length_swa", true, 0,
			       &c->head_dim, d);
	for (i = 0; !rc && i < 4; i++) {
		const char *k = i < 3 ? pairs[i][0] : "rope.dimension_count";
		uint32_t want = i == 0 || i == 3 ? hd_full : c->head_dim;
		char key[96];

		rc = plain_key(g, PCCX_FAMILY_GEMMA4, k, key, sizeof(key), i == 1, d);
		if (rc == 1)
			rc = pccx_gguf_get_u32(g, key, &x, d);
		else if (!rc)
			continue;
		if (!rc && x != want)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key '%s' is %u, expected "
					  "%u (key '%s'): not supported", name, key, x, want,
					  i < 3 ? pairs[i][1] : "gemma4.attention.key_length");
	}
	if (!rc && hd_full != c->head_dim)
		c->head_dim_global = hd_full;
	return rc;
}

/*
 * rope_freqs.weight: 1 for the frequencies of a global head that rotate, then >= 1e30 (no
 * rotation) for the others, as llama.cpp's converter writes Hugging Face's proportional RoPE;
 * the count that rotates is rope_partial_global. Any other factor (a frequency scaled) is
 * refused naming the tensor and the element.
 */
static int g4_rope_freqs(const pccx_gguf *g, struct pccx_gemma_config *c, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	const pccx_gguf_tensor *t;
	uint32_t half = g4_head_dim_global(c) / 2, i, k;
	float f[512], p;
	int rc;

	rc = pccx_gguf_get_tensor(g, ROPE_FREQS, &t, d);
	if (rc)
		return rc;
	if (t->n_dims != 1 || t->ne[0] != half || half > 512)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '" ROPE_FREQS "' has %llu "
				  "elements (%u dims), expected %u (half the global head, key "
				  "'gemma4.attention.key_length')", name,
				  (unsigned long long)t->n_elems, t->n_dims, half);
	rc = pccx_gguf_decode_rows(g, t, 0, 1, f, d);
	if (rc)
		return rc;
	for (k = 0; k < half && f[k] == 1.0f; k++)
		;
	for (i = k; i < half; i++)
		if (!(f[i] >= ROPE_FREQ_OFF))
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: tensor '" ROPE_FREQS "': "
					  "element %u is %g: only 1 (rotating) followed by 1e30 "
					  "(not rotating) is supported", name, i, (double)f[i]);
	/* the fraction whose int(p * head_dim / 2) is k, as the layer table computes it */
	p = (float)k / (float)half;
	if ((uint32_t)((double)p * half) != k)
		p = nextafterf(p, 1.0f);
	c->rope_partial_global = p;
	/* TensorSharp's key for it, when present, must say the same */
	if (pccx_gguf_find(g, "gemma4.rope.partial_rotary_factor")) {
		rc = pccx_gguf_get_f32(g, "gemma4.rope.partial_rotary_factor", &p, d);
		if (!rc && (uint32_t)((double)p * half) != k)
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key "
					  "'gemma4.rope.partial_rotary_factor' is %g, tensor '"
					  ROPE_FREQS "' rotates %u of %u frequencies", name,
					  (double)p, k, half);
	}
	return rc;
}

/*
 * k_eq_v from the tensors: the global layers that compute K/V have no attn_v (llama.cpp then
 * uses K as V), or all have one. A sliding layer without attn_v, or global layers that
 * differ, are refused naming the tensor.
 */
static int g4_k_eq_v(const pccx_gguf *g, struct pccx_gemma_config *c, const bool *local,
		     pccx_diag *d)
{
	uint32_t l, first = UINT32_MAX;
	char tn[64];

	for (l = 0; l < c->n_layers - c->n_kv_shared; l++) {
		bool has;

		snprintf(tn, sizeof(tn), "blk.%u.attn_v.weight", l);
		has = pccx_gguf_find_tensor(g, tn) != NULL;
		if (local[l] && !has)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: tensor '%s' is missing: "
					  "a sliding layer with V = K is not supported",
					  pccx_gguf_name(g), tn);
		if (local[l])
			continue;
		if (first == UINT32_MAX) {
			first = l;
			c->k_eq_v = !has;
		} else if (c->k_eq_v == has) {
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, but "
					  "blk.%u.attn_v.weight is %s: the global layers must all "
					  "have V or all use K", pccx_gguf_name(g), tn,
					  has ? "present" : "missing", first,
					  has ? "missing" : "present");
		}
	}
	return PCCX_OK;
}

/* One value for every layer of a per-layer key (llama.cpp's get_key_or_arr), or refused. */
static int g4_uniform(const pccx_gguf *g, const char *k, uint32_t n, uint32_t max,
		      uint32_t *out, pccx_diag *d)
{
	uint32_t v[PCCX_GEMMA_MAX_LAYERS], l;
	int rc = g4_layer_u32s(g, k, n, max, v, d);

	for (l = 1; !rc && l < n; l++)
		if (v[l] != v[0])
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key 'gemma4.%s': layer %u "
					  "has %u, layer 0 %u: one value for every layer is "
					  "supported", pccx_gguf_name(g), k, l, v[l], v[0]);
	*out = v[0];
	return rc;
}

/*
 * Mixture of experts (the 26B-A4B): gemma4.expert_count experts in every layer (a layer has
 * them when it has blk.N.ffn_gate_inp.weight, as llama.cpp decides), expert_used_count of
 * them chosen, each expert_feed_forward_length wide. Refusals name the key or tensor.
 */
static int g4_experts(const pccx_gguf *g, struct pccx_gemma_config *c, pccx_diag *d)
{
	const char *name = pccx_gguf_name(g);
	uint32_t experts = 0, l;
	char tn[64];
	int rc = plain_u32(g, PCCX_FAMILY_GEMMA4, "expert_count", false, 0, &experts, d);

	for (l = 0; !rc && l < c->n_layers; l++) {
		snprintf(tn, sizeof(tn), "blk.%u.ffn_gate_inp.weight", l);
		if (!experts && pccx_gguf_find_tensor(g, tn))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s' is present but key "
					  "'gemma4.expert_count' is %s", name, tn,
					  pccx_gguf_find(g, "gemma4.expert_count") ? "0" :
					  "missing");
		if (experts && !pccx_gguf_find_tensor(g, tn))
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: tensor '%s' is missing: "
					  "key 'gemma4.expert_count' is %u and a layer without "
					  "experts among layers with them is not supported", name,
					  tn, experts);
	}
	if (rc || !experts)
		return rc;
	if (experts > PCCX_GEMMA_MAX_EXPERTS)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key 'gemma4.expert_count' is %u: "
				  "at most %u experts are supported", name, experts,
				  PCCX_GEMMA_MAX_EXPERTS);
	c->n_experts = experts;
	rc = g4_uniform(g, "expert_used_count", c->n_layers, 65535, &c->n_experts_used, d);
	if (!rc && c->n_experts_used > experts)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key 'gemma4.expert_used_count' is %u, "
				  "more than key 'gemma4.expert_count' (%u)", name,
				  c->n_experts_used, experts);
	if (!rc && c->n_experts_used > PCCX_GEMMA_MAX_EXPERTS_USED)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key 'gemma4.expert_used_count' is "
				  "%u: at most %u experts per token are supported", name,
				  c->n_experts_used, PCCX_GEMMA_MAX_EXPERTS_USED);
	if (!rc)
		rc = g4_uniform(g, "expert_feed_forward_length", c->n_layers, 65535,
				&c->d_expert, d);
	if (!rc && c->d_expert % 32)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: key "
				  "'gemma4.expert_feed_forward_length' is %u: a multiple of 32 is "
				  "supported", name, c->d_expert);
	return rc;
}

/* The configuration of a gemma4 GGUF (llama.cpp's keys, defaults and tensors). */
static int load_config_4(const pccx_gguf *g, uint32_t max_ctx, struct pccx_gemma_config *c,
			 pccx_diag *d)
{
	const enum pccx_family f = PCCX_FAMILY_GEMMA4;
	const char *name = pccx_gguf_name(g);
	bool local[PCCX_GEMMA_MAX_LAYERS];
	uint32_t ctx;
	int rc;

	c->family = f;
	rc = plain_u32(g, f, "block_count", true, 0, &c->n_layers, d);
	if (!rc && (c->n_layers == 0 || c->n_layers > PCCX_GEMMA_MAX_LAYERS))
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: key 'gemma4.block_count' is %u: "
				  "n_layers must be 1..%u", name, c->n_layers,
				  PCCX_GEMMA_MAX_LAYERS);
	if (!rc)
		rc = plain_u32(g, f, "context_length", true, 0, &ctx, d);
	if (!rc)
		rc = plain_u32(g, f, "embedding_length", true, 0, &c->d_model, d);
	if (!rc)
		rc = g4_experts(g, c, d);
	if (!rc)
		rc = g4_pattern(g, c, local, d);
	if (!rc)
		rc = plain_u32(g, f, "attention.sliding_window", true, 0, &c->window, d);
	if (!rc)
		rc = plain_u32(g, f, "attention.shared_kv_layers", false, 0, &c->n_kv_shared, d);
	if (!rc && c->n_kv_shared >= c->n_layers)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key 'gemma4.attention.shared_kv_layers' "
				  "is %u of %u layers", name, c->n_kv_shared, c->n_layers);
	if (!rc)
		rc = g4_heads(g, c, local, d);
	if (!rc)
		rc = g4_ffn(g, c, local, d);
	if (!rc)
		rc = plain_u32(g, f, "embedding_length_per_layer_input", true, 0, &c->d_ple, d);
	if (!rc)
		rc = plain_f32(g, f, "attention.layer_norm_rms_epsilon", true, 0.0f, &c->eps, d);
	if (!rc)
		rc = plain_f32(g, f, "rope.freq_base", false, 10000.0f, &c->theta_global, d);
	if (!rc)
		rc = plain_f32(g, f, "rope.freq_base_swa", false, 10000.0f, &c->theta_local, d);
	if (!rc)
		rc = plain_f32(g, f, "final_logit_softcapping", false, 30.0f, &c->softcap, d);
	if (!rc && c->global_period <= c->n_layers)
		rc = g4_rope_freqs(g, c, d);
	if (!rc)
		rc = g4_k_eq_v(g, c, local, d);
	if (rc)
		return rc;
	rc = tied_vocab(g, name, c, d);
	if (rc)
		return rc;
	/* llama.cpp reads a per-layer row for every token (when the model has them) */
	c->ple_vocab = c->d_ple ? c->vocab : 0;
	c->max_ctx = max_ctx ? max_ctx : 4096;
	return check_token_count(g, "gemma4", c->vocab, d);
}

/* The configuration from the <arch>.* metadata and the tensor shapes, checked. */
static int load_config(const pccx_gguf *g, uint32_t max_ctx, struct pccx_gemma_config *c,
		       pccx_diag *d)
{
	const char *name = pccx_gguf_name(g), *arch;
	enum pccx_family f;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "gguf");
	rc = pccx_gguf_get_str(g, "general.architecture", &arch, NULL, d);
	if (rc)
		return rc;
	f = pccx__family_from_arch(arch);
	if (f != PCCX_FAMILY_GEMMA3N && f != PCCX_FAMILY_GEMMA4 && !plain_family(f))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: general.architecture '%s' is not "
				  "supported (gemma3n, gemma, gemma2, gemma3, gemma4)", name, arch);
	if (f == PCCX_FAMILY_GEMMA3N)
		rc = load_config_3n(g, max_ctx, c, d);
	else if (f == PCCX_FAMILY_GEMMA4)
		rc = load_config_4(g, max_ctx, c, d);
	else
		rc = load_config_plain(g, f, max_ctx, c, d);
	if (rc)
		return rc;
	rc = pccx__gemma_config_check(c, d);
	if (rc && d) {	/* the config check names the field, not the file */
		char why[sizeof(d->msg)];

		snprintf(why, sizeof(why), "%s", d->msg);
		return pccx__fail(d, rc, "%s: %s", name, why);
	}
	return rc;
}

/* "{a, b, c}" */
static void fmt_ne(const uint64_t *ne, uint32_t n, char *out, size_t size)
{
	size_t len = 0;
	uint32_t i;

	len += (size_t)snprintf(out, size, "{");
	for (i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%llu", i ? ", " : "",
					(unsigned long long)ne[i]);
	if (len < size)
		snprintf(out + len, size - len, "}");
}

/*
 * Tensors llama.cpp does not require: Gemma 4's blk.N.layer_output_scale and the experts'
 * blk.N.ffn_down_exps.scale.
 */
static bool optional_vec(const struct pccx_gemma_model *m, uint32_t t)
{
	uint32_t l;

	for (l = 0; l < m->cfg.n_layers; l++)
		if (m->w.layer[l].vec[PCCX_GEMMA_LV_OUT_SCALE] == (int32_t)t ||
		    m->w.layer[l].vec[PCCX_GEMMA_LV_EXPERT_SCALE] == (int32_t)t)
			return true;
	return false;
}

/* Without them llama.cpp does not scale the layer's output nor the experts': all 1. */
static int ones(struct pccx_gemma_model *m, uint32_t t)
{
	uint32_t one = pccx_f32_bits(1.0f), i;
	uint8_t *rec = m->data + m->t[t].offset;

	for (i = 0; i < m->t[t].cols; i++, rec += 4) {
		rec[0] = (uint8_t)one;
		rec[1] = (uint8_t)(one >> 8);
		rec[2] = (uint8_t)(one >> 16);
		rec[3] = (uint8_t)(one >> 24);
	}
	return PCCX_OK;
}

/* gt has shape ne want[0..nd), or the failure names the tensor and both shapes. */
static int check_shape(const pccx_gguf *g, const pccx_gguf_tensor *gt, const char *name,
		       const uint64_t *want, uint32_t nd, pccx_diag *d)
{
	uint64_t n = 1;
	bool ok = gt->n_dims == nd || (nd == 1 && gt->n_dims == 2 && gt->ne[1] == 1);
	uint32_t r;

	for (r = 0; r < nd; r++) {
		n *= want[r];
		ok = ok && gt->ne[r] == want[r];
	}
	if (ok && gt->n_elems == n)
		return PCCX_OK;
	{
		char w[64], h[64];

		fmt_ne(want, nd, w, sizeof(w));
		fmt_ne(gt->ne, gt->n_dims, h, sizeof(h));
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s' has shape ne %s, expected "
				  "ne %s", pccx_gguf_name(g), name, h, w);
	}
}

/*
 * Rows [base, base + rows of t) of gt into model tensor t: Q4_0 imported losslessly, other
 * types decoded and requantised, read through the importer's windows (gemma_gguf_import.c).
 */
static int import_rows(struct pccx_gguf_import *im, struct pccx_gemma_model *m, uint32_t t,
		       const pccx_gguf_tensor *gt, uint64_t base, const char *name, float *row,
		       pccx_q4_error *err, uint64_t *clipped, pccx_diag *d)
{
	if (m->t[t].fmt == PCCX_WFMT_Q4 && gt->type == PCCX_GGML_Q4_0)
		return pccx__gguf_import_q4_0(im, m, t, gt, base, name, err, d);
	return pccx__gguf_import_decoded(im, m, t, gt, base, name, row, err, clipped, d);
}

/*
 * Expert e of layer l's gate, up or down (part p) from llama.cpp's 3-D tensors: gate and up
 * from ffn_gate_up_exps when the file has it (expert e's gate rows, then its up rows), else
 * from ffn_gate_exps and ffn_up_exps; down from ffn_down_exps.
 */
static int load_expert(const pccx_gguf *g, struct pccx_gguf_import *im,
		       struct pccx_gemma_model *m, uint32_t t, uint32_t l, uint32_t e,
		       enum moe_part p, float *row, pccx_q4_error *err, uint64_t *clipped,
		       pccx_diag *d)
{
	const struct pccx_layer_desc *ly = &m->layers[l];
	uint64_t D = m->cfg.d_model, I = ly->d_expert, want[3], base;
	const pccx_gguf_tensor *gt;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "blk.%u.ffn_gate_up_exps.weight", l);
	if (p == MOE_DOWN) {
		snprintf(name, sizeof(name), "blk.%u.ffn_down_exps.weight", l);
		want[0] = I;
		want[1] = D;
		base = e * D;
	} else if (pccx_gguf_find_tensor(g, name)) {
		want[0] = D;
		want[1] = 2 * I;
		base = e * 2 * I + (p == MOE_UP ? I : 0);
	} else {
		snprintf(name, sizeof(name), "blk.%u.ffn_%s_exps.weight", l,
			 p == MOE_GATE ? "gate" : "up");
		want[0] = D;
		want[1] = I;
		base = e * I;
	}
	want[2] = ly->n_experts;
	rc = pccx_gguf_get_tensor(g, name, &gt, d);
	if (!rc)
		rc = check_shape(g, gt, name, want, 3, d);
	return rc ? rc : import_rows(im, m, t, gt, base, name, row, err, clipped, d);
}

static int load_tensor(const pccx_gguf *g, struct pccx_gguf_import *im,
		       struct pccx_gemma_model *m, uint32_t t, float *row, pccx_q4_error *err,
		       uint64_t *clipped, pccx_diag *d)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	const pccx_gguf_tensor *gt;
	char name[PCCX_GEMMA_NAME_MAX];
	uint32_t part, parts, nd, l, e;
	uint64_t want[3];
	enum moe_part p = moe_part(m, t, &l, &e);
	int rc;

	if (p == MOE_GATE || p == MOE_UP || p == MOE_DOWN)
		return load_expert(g, im, m, t, l, e, p, row, err, clipped, d);
	parts = tensor_gguf_name(m, t, name, sizeof(name), &part);
	if (!pccx_gguf_find_tensor(g, name) && optional_vec(m, t))
		return ones(m, t);
	rc = pccx_gguf_get_tensor(g, name, &gt, d);
	if (rc)
		return rc;
	/* llama.cpp's shapes: ne {cols, rows}, stacked {cols, rows, 3}, the per-layer table
	 * {cols, vocab} (rows past ple_vocab are padding, not read) */
	want[0] = T->cols;
	want[1] = (int32_t)t == m->w.ple_table ? m->cfg.vocab : T->rows;
	want[2] = 3;
	nd = parts == 3 ? 3 : want[1] == 1 ? 1 : 2;
	rc = check_shape(g, gt, name, want, nd, d);
	return rc ? rc : import_rows(im, m, t, gt, (uint64_t)part * T->rows, name, row, err,
				     clipped, d);
}

int pccx__gemma_load_gguf(struct pccx_gemma_model **out, const char *path, uint32_t max_ctx,
			    struct pccx_gemma_load_info *info, pccx_gguf **file, pccx_diag *d)
{
	struct pccx_gemma_load_info local;
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m = NULL;
	struct pccx_gguf_import *im = NULL;
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
		rc = pccx__gemma_model_create(&m, &cfg, d);
	if (!rc)
		rc = pccx__gguf_import_create(&im, g, d);
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
		rc = load_tensor(g, im, m, t, row, &info->q4, &info->clipped, d);
	if (!rc)
		pccx__gemma_model_q4c(m);
out:
	pccx__gguf_import_free(im);
	free(row);
	if (!rc && file)
		*file = g;	/* the caller reads its own keys from it (e.g. the tokenizer) */
	else
		pccx_gguf_close(g);
	if (rc) {
		pccx__gemma_model_free(m);
		return rc;
	}
	*out = m;
	return PCCX_OK;
}
