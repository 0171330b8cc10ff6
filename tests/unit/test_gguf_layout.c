// SPDX-License-Identifier: MIT
/*
 * The gemma3n GGUF that pccx writes has llama.cpp's layout, and the loader checks it as
 * llama.cpp does. The expectations below are written out from llama.cpp's gemma3n loader
 * (every tensor and its ne as a function of the hyper-parameters, the keys it reads with the
 * types it demands, token count == token_embd rows == per_layer_token_embd rows), not taken
 * from pccx's own tensor table. Files of the tiny and tiny-vocab shapes, with and without a
 * tokenizer, are checked against them; then copies with one thing changed (a token count that
 * does not match, the old unpadded table, a llama.cpp-converted file without pccx's key) are
 * loaded and refused or accepted with the expected message.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemma_gguf.h"
#include "gemma_model.h"
#include "pccx/modelfile.h"
#include "pccx/tokenizer.h"
#include "tokenizer_gguf.h"

/* ---- llama.cpp's expectations for gemma3n ------------------------------------------------- */

/* The hyper-parameters llama.cpp's shapes are written in. */
struct hp {
	uint64_t D;	/* n_embd */
	uint64_t F;	/* n_ff */
	uint64_t V;	/* n_vocab: the token count */
	uint64_t L;	/* n_layer */
	uint64_t Hq, Hkv, Dh;	/* n_head, n_head_kv, n_embd_head_k */
	uint64_t P;	/* n_embd_altup (embedding_length_per_layer_input) */
	uint64_t R;	/* laurel_rank */
	uint64_t A;	/* n_altup */
};

/* One tensor llama.cpp creates: name (a %u for the layer), ne as llama.cpp writes it. */
struct want {
	const char *name;
	int per_layer;
	uint64_t ne[3];
	int n;	/* dimensions given */
	int vector;	/* a norm or scale: F32 in pccx's files, else Q4_0 (AltUp coefficients F32) */
};

static int expected(const struct hp *h, struct want *w)
{
	const uint64_t D = h->D, F = h->F, V = h->V, L = h->L, P = h->P, R = h->R, A = h->A;
	const uint64_t Q = h->Dh * h->Hq, KV = h->Dh * h->Hkv;
	const struct want list[] = {
		{ "token_embd.weight", 0, { D, V }, 2, 0 },
		{ "altup_proj.weight", 0, { D, D, A - 1 }, 3, 0 },
		{ "altup_unembd_proj.weight", 0, { D, D, A - 1 }, 3, 0 },
		{ "per_layer_token_embd.weight", 0, { P * L, V }, 2, 0 },
		{ "per_layer_model_proj.weight", 0, { D, P * L }, 2, 0 },
		{ "per_layer_proj_norm.weight", 0, { P }, 1, 1 },
		{ "output_norm.weight", 0, { D }, 1, 1 },
		{ "blk.%u.attn_norm.weight", 1, { D }, 1, 1 },
		{ "blk.%u.attn_q.weight", 1, { D, Q }, 2, 0 },
		{ "blk.%u.attn_k.weight", 1, { D, KV }, 2, 0 },
		{ "blk.%u.attn_v.weight", 1, { D, KV }, 2, 0 },
		{ "blk.%u.attn_output.weight", 1, { Q, D }, 2, 0 },
		{ "blk.%u.attn_q_norm.weight", 1, { h->Dh }, 1, 1 },
		{ "blk.%u.attn_k_norm.weight", 1, { h->Dh }, 1, 1 },
		{ "blk.%u.post_attention_norm.weight", 1, { D }, 1, 1 },
		{ "blk.%u.ffn_norm.weight", 1, { D }, 1, 1 },
		{ "blk.%u.ffn_gate.weight", 1, { D, F }, 2, 0 },
		{ "blk.%u.ffn_up.weight", 1, { D, F }, 2, 0 },
		{ "blk.%u.ffn_down.weight", 1, { F, D }, 2, 0 },
		{ "blk.%u.post_ffw_norm.weight", 1, { D }, 1, 1 },
		{ "blk.%u.inp_gate.weight", 1, { D, P }, 2, 0 },
		{ "blk.%u.proj.weight", 1, { P, D }, 2, 0 },
		{ "blk.%u.post_norm.weight", 1, { D }, 1, 1 },
		{ "blk.%u.altup_correct_coef.weight", 1, { A, A }, 2, 1 },
		{ "blk.%u.altup_correct_scale.weight", 1, { D }, 1, 1 },
		{ "blk.%u.altup_predict_coef.weight", 1, { A, A * A }, 2, 1 },
		{ "blk.%u.altup_router.weight", 1, { D, A }, 2, 1 },
		{ "blk.%u.altup_router_norm.weight", 1, { D }, 1, 1 },
		{ "blk.%u.laurel_l.weight", 1, { D, R }, 2, 0 },
		{ "blk.%u.laurel_r.weight", 1, { R, D }, 2, 0 },
		{ "blk.%u.laurel_post_norm.weight", 1, { D }, 1, 1 },
	};
	int n = (int)(sizeof(list) / sizeof(list[0]));

	memcpy(w, list, sizeof(list));
	return n;
}

static struct hp hp_of(const struct pccx_gemma_config *c)
{
	struct hp h = {
		.D = c->d_model, .F = c->d_ffn, .V = c->vocab, .L = c->n_layers,
		.Hq = c->n_heads, .Hkv = c->n_kv_heads, .Dh = c->head_dim,
		.P = c->d_ple, .R = c->laurel_rank, .A = 4,
	};

	return h;
}

/* llama.cpp compares all four ne, the ones past n_dims being 1. */
static void check_tensor(const pccx_gguf *g, const char *name, const struct want *w)
{
	const pccx_gguf_tensor *t = pccx_gguf_find_tensor(g, name);
	uint64_t want[4] = { 1, 1, 1, 1 }, have[4] = { 1, 1, 1, 1 };
	uint32_t i;

	ck_assert_msg(t != NULL, "tensor '%s' missing", name);
	for (i = 0; i < (uint32_t)w->n; i++)
		want[i] = w->ne[i];
	for (i = 0; i < t->n_dims; i++)
		have[i] = t->ne[i];
	for (i = 0; i < 4; i++)
		ck_assert_msg(want[i] == have[i],
			      "tensor '%s': ne[%u] is %llu, llama.cpp expects %llu", name, i,
			      (unsigned long long)have[i], (unsigned long long)want[i]);
	ck_assert_msg(t->type == (w->vector ? PCCX_GGML_F32 : PCCX_GGML_Q4_0),
		      "tensor '%s': type %u", name, t->type);
}

static const pccx_gguf_value *key_of(const pccx_gguf *g, const char *key, uint32_t type)
{
	const pccx_gguf_value *v = pccx_gguf_find(g, key);

	ck_assert_msg(v != NULL, "key '%s' missing", key);
	ck_assert_msg(v->type == type, "key '%s': type %u, llama.cpp reads %u", key, v->type, type);
	return v;
}

static void check_u32(const pccx_gguf *g, const char *key, uint64_t want)
{
	const pccx_gguf_value *v = key_of(g, key, PCCX_GGUF_UINT32);

	ck_assert_msg(v->v.u == want, "key '%s' is %llu, expected %llu", key,
		      (unsigned long long)v->v.u, (unsigned long long)want);
}

static const pccx_gguf_array *check_array(const pccx_gguf *g, const char *key, uint32_t elem,
					  uint64_t n)
{
	const pccx_gguf_value *v = key_of(g, key, PCCX_GGUF_ARRAY);

	ck_assert_msg(v->v.arr.elem_type == elem, "key '%s': elements of type %u, expected %u",
		      key, v->v.arr.elem_type, elem);
	ck_assert_msg(v->v.arr.n == n, "key '%s' has %llu entries, expected %llu", key,
		      (unsigned long long)v->v.arr.n, (unsigned long long)n);
	return &v->v.arr;
}

/*
 * The whole file against llama.cpp's expectations: every tensor it creates (and no other: its
 * loader counts them), the gemma3n keys it reads, and a token count equal to the rows.
 */
static void check_layout(const char *path, const struct pccx_gemma_model *m)
{
	const struct pccx_gemma_config *c = &m->cfg;
	struct want w[40];
	struct hp h = hp_of(c);
	pccx_gguf *g;
	pccx_diag d = { 0 };
	const pccx_gguf_value *model;
	const pccx_gguf_array *a;
	char name[64];
	uint64_t count = 0;
	uint32_t l;
	int n = expected(&h, w), i;
	static const char *const f32_keys[] = {
		"gemma3n.attention.layer_norm_rms_epsilon", "gemma3n.rope.freq_base",
		"gemma3n.rope.freq_base_swa", "gemma3n.final_logit_softcapping",
	};

	ck_assert_msg(pccx_gguf_open(&g, path, &d) == 0, "%s", d.msg);
	for (i = 0; i < n; i++) {
		for (l = 0; l < (w[i].per_layer ? c->n_layers : 1); l++) {
			snprintf(name, sizeof(name), w[i].name, l);
			check_tensor(g, name, &w[i]);
			count++;
		}
	}
	ck_assert_uint_eq(pccx_gguf_n_tensors(g), count);
	ck_assert_ptr_null(pccx_gguf_find_tensor(g, "output.weight"));	/* tied LM head */

	model = key_of(g, "general.architecture", PCCX_GGUF_STRING);
	ck_assert_str_eq(model->v.str.s, "gemma3n");
	key_of(g, "gemma3n.context_length", PCCX_GGUF_UINT32);
	check_u32(g, "gemma3n.embedding_length", h.D);
	check_u32(g, "gemma3n.block_count", h.L);
	check_u32(g, "gemma3n.feed_forward_length", h.F);
	check_u32(g, "gemma3n.attention.head_count", h.Hq);
	check_u32(g, "gemma3n.attention.head_count_kv", h.Hkv);
	check_u32(g, "gemma3n.attention.key_length", h.Dh);
	check_u32(g, "gemma3n.attention.value_length", h.Dh);
	check_u32(g, "gemma3n.attention.sliding_window", c->window);
	check_u32(g, "gemma3n.embedding_length_per_layer_input", h.P);
	check_u32(g, "gemma3n.altup.num_inputs", h.A);
	check_u32(g, "gemma3n.altup.active_idx", 0);
	check_u32(g, "gemma3n.attention.shared_kv_layers", c->n_kv_shared);
	for (i = 0; i < 4; i++)
		key_of(g, f32_keys[i], PCCX_GGUF_FLOAT32);
	check_array(g, "gemma3n.attention.sliding_window_pattern", PCCX_GGUF_BOOL, h.L);
	/* the converter's Normal.icdf(p) per layer: z on the sparse layers, icdf(0) = -inf after */
	a = check_array(g, "gemma3n.activation_sparsity_scale", PCCX_GGUF_FLOAT32, h.L);
	for (l = 0; l < h.L; l++)
		ck_assert_float_eq(((const float *)a->data)[l],
				   m->layers[l].sparse ? c->sparse_z : -INFINITY);

	/* the vocabulary: llama.cpp cannot load a file without tokenizer.ggml.model */
	model = key_of(g, "tokenizer.ggml.model", PCCX_GGUF_STRING);
	if (!strcmp(model->v.str.s, "no_vocab")) {
		check_u32(g, "gemma3n.vocab_size", h.V);	/* the dummy tokens' count */
		ck_assert_ptr_null(pccx_gguf_find(g, "tokenizer.ggml.tokens"));
	} else {
		const pccx_gguf_array *ty;
		static const char *const ids[] = {
			"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
			"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
		};
		uint64_t k;

		ck_assert_str_eq(model->v.str.s, "llama");
		check_array(g, "tokenizer.ggml.tokens", PCCX_GGUF_STRING, h.V);
		check_array(g, "tokenizer.ggml.scores", PCCX_GGUF_FLOAT32, h.V);
		ty = check_array(g, "tokenizer.ggml.token_type", PCCX_GGUF_INT32, h.V);
		for (k = 0; k < h.V; k++)
			ck_assert(((const int32_t *)ty->data)[k] >= 1 &&
				  ((const int32_t *)ty->data)[k] <= 6);
		for (i = 0; i < 4; i++)
			if (pccx_gguf_find(g, ids[i]))
				ck_assert_uint_lt(key_of(g, ids[i], PCCX_GGUF_UINT32)->v.u, h.V);
	}
	pccx_gguf_close(g);
}

/* ---- files -------------------------------------------------------------------------------- */

static char dir[64];
static int n_files;

static void path_of(char *out, size_t size, const char *name)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/pccx-layout-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(dir));
	}
	snprintf(out, size, "%s/%s", dir, name);
	n_files++;
}

static void cleanup(const char *const *names, int n)
{
	char p[128];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
	dir[0] = 0;
}

/*
 * A small SentencePiece vocabulary: <pad> <eos> <bos> <unk>, the 256 byte tokens, then a few
 * pieces; 266 ids, fewer than any model's vocab, so the file pads it.
 */
#define TK_N 266
static pccx_tokenizer *small_tokenizer(void)
{
	static char bytes[256][8];
	const char *tokens[TK_N];
	float scores[TK_N];
	int32_t types[TK_N];
	static const char *const words[] = { "\xe2\x96\x81", "a", "b", "ab", "\xe2\x96\x81" "a",
					     "ba" };
	pccx_tokenizer_vocab v = { 0 };
	pccx_tokenizer *tk;
	pccx_diag d = { 0 };
	int i;

	tokens[0] = "<pad>", tokens[1] = "<eos>", tokens[2] = "<bos>", tokens[3] = "<unk>";
	for (i = 0; i < 4; i++)
		types[i] = i == 3 ? PCCX_TOKEN_UNKNOWN : PCCX_TOKEN_CONTROL, scores[i] = 0;
	for (i = 0; i < 256; i++) {
		snprintf(bytes[i], sizeof(bytes[i]), "<0x%02X>", i);
		tokens[4 + i] = bytes[i], types[4 + i] = PCCX_TOKEN_BYTE, scores[4 + i] = 0;
	}
	for (i = 0; i < 6; i++)
		tokens[260 + i] = words[i], types[260 + i] = PCCX_TOKEN_NORMAL,
			   scores[260 + i] = -(float)i;
	v.model = "llama";
	v.n_tokens = TK_N;
	v.tokens = tokens;
	v.scores = scores;
	v.types = types;
	v.pad_id = 0, v.eos_id = 1, v.bos_id = 2, v.unk_id = 3;
	v.add_bos = 1;
	v.add_space_prefix = 0;
	ck_assert_msg(pccx_tokenizer_from_vocab(&v, "small", &tk, &d) == 0, "%s", d.msg);
	return tk;
}

static int tokenizer_keys(pccx_gguf_writer *w, const void *tk, uint32_t n_tokens, pccx_diag *d)
{
	return pccx__tokenizer_save_gguf(w, tk, n_tokens, d);
}

/* Synthetic weights of shape `config` saved at `path`; the model is returned. */
static struct pccx_gemma_model *save_model(const char *config, const pccx_tokenizer *tk,
					     const char *path)
{
	const struct pccx_gguf_keys keys = { tokenizer_keys, tk };
	struct pccx_gemma_model *m;
	struct pccx_gemma_config cfg;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__gemma_config_preset(config, &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(m, 7, 1, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_save_gguf(m, tk ? &keys : NULL, path, &d) == 0, "%s", d.msg);
	return m;
}

/* Load `path` and check it is `m` again, bit for bit; the tokenizer is returned (or NULL). */
static pccx_tokenizer *load_same(const char *path, const struct pccx_gemma_model *m)
{
	struct pccx_gemma_model *m2;
	pccx_tokenizer *tk = NULL;
	pccx_gguf *g;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__gemma_load_gguf(&m2, path, m->cfg.max_ctx, NULL, &g, &d) == 0, "%s",
		      d.msg);
	ck_assert_msg(pccx__tokenizer_load_gguf(g, &tk, &d) == 0, "%s", d.msg);
	pccx_gguf_close(g);
	ck_assert_uint_eq(m2->cfg.vocab, m->cfg.vocab);
	ck_assert_uint_eq(m2->cfg.ple_vocab, m->cfg.ple_vocab);
	ck_assert_uint_eq(m2->size, m->size);
	ck_assert(!memcmp(m2->data, m->data, m->size));
	pccx__gemma_model_free(m2);
	return tk;
}

/* Rows past ple_vocab of the per-layer table are zero (Q4_0 blocks of scale 0), as llama.cpp's
 * converter pads it. */
static void check_ple_padding(const char *path, const struct pccx_gemma_config *c)
{
	const pccx_gguf_tensor *t;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint64_t row = (uint64_t)c->n_layers * c->d_ple / 32 * 18, r, i;

	ck_assert_msg(pccx_gguf_open(&g, path, &d) == 0, "%s", d.msg);
	t = pccx_gguf_find_tensor(g, "per_layer_token_embd.weight");
	ck_assert_ptr_nonnull(t);
	for (r = c->ple_vocab; r < c->vocab; r++)
		for (i = 0; i < row; i += 18)
			ck_assert_msg(t->data[r * row + i] == 0 && t->data[r * row + i + 1] == 0,
				      "row %llu, block %llu has a non-zero scale",
				      (unsigned long long)r, (unsigned long long)(i / 18));
	/* and the rows before are not all zero */
	for (i = 0; i < row && !t->data[(c->ple_vocab - 1) * row + i]; i++)
		;
	ck_assert_uint_lt(i, row);
	pccx_gguf_close(g);
}

/* The token arrays: the tokenizer's own ids, then llama.cpp's converter's padding. */
static void check_tokens(const char *path, const pccx_tokenizer *tk, uint64_t V)
{
	const pccx_gguf_str *tok;
	const float *sc;
	const int32_t *ty;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint64_t n, i;
	char pad[32];

	ck_assert_msg(pccx_gguf_open(&g, path, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_gguf_get_str_array(g, "tokenizer.ggml.tokens", &tok, &n, &d), 0);
	ck_assert_uint_eq(n, V);
	ck_assert_int_eq(pccx_gguf_get_f32_array(g, "tokenizer.ggml.scores", &sc, &n, &d), 0);
	ck_assert_int_eq(pccx_gguf_get_i32_array(g, "tokenizer.ggml.token_type", &ty, &n, &d), 0);
	for (i = 0; i < V; i++) {
		if (i < TK_N) {
			size_t len;
			const char *p = pccx_tokenizer_piece(tk, (int32_t)i, &len);

			ck_assert_uint_eq(tok[i].len, len);
			ck_assert(!memcmp(tok[i].s, p, len));
			ck_assert_int_eq(ty[i], pccx_tokenizer_type(tk, (int32_t)i));
			continue;
		}
		snprintf(pad, sizeof(pad), "[PAD%llu]", (unsigned long long)i);
		ck_assert_str_eq(tok[i].s, pad);
		ck_assert_float_eq(sc[i], -10000.0f);
		ck_assert_int_eq(ty[i], PCCX_TOKEN_UNUSED);
	}
	pccx_gguf_close(g);
}

/* The same ids from two tokenizers for a few strings. */
static void same_ids(const pccx_tokenizer *a, const pccx_tokenizer *b)
{
	static const char *const texts[] = { "ab ba", "a\xc3\xa9" "b", "<bos>abab", "" };
	int32_t *x, *y;
	size_t nx, ny, i;
	pccx_diag d = { 0 };

	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(pccx_tokenizer_encode(a, texts[i], strlen(texts[i]),
						       PCCX_TOK_ADD_BOS, &x, &nx, &d), 0);
		ck_assert_int_eq(pccx_tokenizer_encode(b, texts[i], strlen(texts[i]),
						       PCCX_TOK_ADD_BOS, &y, &ny, &d), 0);
		ck_assert_uint_eq(nx, ny);
		ck_assert(!memcmp(x, y, nx * sizeof(*x)));
		free(x);
		free(y);
	}
}

/*
 * A copy of `src` at `dst` with one change: key `drop` left out, key `set` given value `v`
 * (replacing it, or added at the end), tensor `cut` cut to its first `rows` rows.
 */
struct edit {
	const char *drop, *set;
	pccx_gguf_value v;
	const char *cut;
	uint64_t rows;
};

static void rewrite(const char *src, const char *dst, const struct edit *e)
{
	pccx_gguf *g;
	pccx_gguf_writer *w;
	pccx_diag d = { 0 };
	bool set_done = false;
	uint64_t i;

	ck_assert_msg(pccx_gguf_open(&g, src, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_gguf_writer_new(&w, &d), 0);
	for (i = 0; i < pccx_gguf_n_kv(g); i++) {
		const char *k = pccx_gguf_kv_key(g, i);
		const pccx_gguf_value *v = pccx_gguf_kv_value(g, i);

		if (e->drop && !strcmp(k, e->drop))
			continue;
		if (e->set && !strcmp(k, e->set)) {
			v = &e->v;
			set_done = true;
		}
		ck_assert_msg(pccx_gguf_writer_set_value(w, k, v, &d) == 0, "%s", d.msg);
	}
	if (e->set && !set_done)
		ck_assert_msg(pccx_gguf_writer_set_value(w, e->set, &e->v, &d) == 0, "%s", d.msg);
	for (i = 0; i < pccx_gguf_n_tensors(g); i++) {
		const pccx_gguf_tensor *t = pccx_gguf_tensor_at(g, i);
		uint64_t ne[4], nbytes = t->nbytes;

		memcpy(ne, t->ne, sizeof(ne));
		if (e->cut && !strcmp(t->name, e->cut)) {
			nbytes = t->nbytes / t->ne[1] * e->rows;
			ne[1] = e->rows;
		}
		ck_assert_msg(pccx_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne,
							  t->data, nbytes, &d) == 0, "%s", d.msg);
	}
	ck_assert_msg(pccx_gguf_writer_write(w, dst, &d) == 0, "%s", d.msg);
	pccx_gguf_writer_free(w);
	pccx_gguf_close(g);
}

/* The loader refuses `path` with status `rc` and a message holding every string of `want`. */
static void refused(const char *path, int rc, const char *const *want)
{
	struct pccx_gemma_model *m = NULL;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__gemma_load_gguf(&m, path, 0, NULL, NULL, &d), rc);
	ck_assert_ptr_null(m);
	for (; *want; want++)
		ck_assert_msg(strstr(d.msg, *want) != NULL, "'%s' not in: %s", *want, d.msg);
}

/* ---- tests -------------------------------------------------------------------------------- */

START_TEST(tiny_without_tokenizer)
{
	static const char *const files[] = { "t.gguf" };
	struct pccx_gemma_model *m;
	char p[128];

	path_of(p, sizeof(p), files[0]);
	m = save_model("tiny", NULL, p);
	check_layout(p, m);	/* "no_vocab" with gemma3n.vocab_size 512 */
	check_ple_padding(p, &m->cfg);
	ck_assert_ptr_null(load_same(p, m));	/* no tokenizer: ids stay bytes */
	pccx__gemma_model_free(m);
	cleanup(files, 1);
}
END_TEST

START_TEST(tiny_with_tokenizer)
{
	static const char *const files[] = { "t.gguf" };
	struct pccx_gemma_model *m;
	pccx_tokenizer *tk = small_tokenizer(), *tk2;
	char p[128];

	path_of(p, sizeof(p), files[0]);
	m = save_model("tiny", tk, p);
	check_layout(p, m);
	check_tokens(p, tk, m->cfg.vocab);	/* 266 ids padded to 512 */
	check_ple_padding(p, &m->cfg);		/* 480 rows padded to 512 */
	tk2 = load_same(p, m);			/* ple_vocab 480 again */
	ck_assert_ptr_nonnull(tk2);
	ck_assert_uint_eq(pccx_tokenizer_n_vocab(tk2), m->cfg.vocab);
	same_ids(tk, tk2);
	pccx_tokenizer_free(tk2);
	pccx_tokenizer_free(tk);
	pccx__gemma_model_free(m);
	cleanup(files, 1);
}
END_TEST

START_TEST(tiny_vocab_with_tokenizer)
{
	static const char *const files[] = { "t.gguf", "l.gguf" };
	struct pccx_gemma_model *m, *m2;
	pccx_tokenizer *tk = small_tokenizer(), *tk2;
	pccx_diag d = { 0 };
	char p[128], q[128];
	struct edit e = { .drop = "gemma3n.vocab_size_per_layer_input" };

	path_of(p, sizeof(p), files[0]);
	path_of(q, sizeof(q), files[1]);
	m = save_model("tiny-vocab", tk, p);
	ck_assert_uint_eq(m->cfg.vocab, 262400);
	check_layout(p, m);
	check_tokens(p, tk, 262400);
	check_ple_padding(p, &m->cfg);		/* 262144 rows padded to 262400 */
	tk2 = load_same(p, m);
	same_ids(tk, tk2);
	pccx_tokenizer_free(tk2);
	/*
	 * What llama.cpp's converter writes: the same layout without pccx's key. The table's
	 * rows past Gemma 3n's 262144 are padding, so the model uses 262144 of them again.
	 */
	rewrite(p, q, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&m2, q, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(m2->cfg.vocab, 262400);
	ck_assert_uint_eq(m2->cfg.ple_vocab, 262144);
	ck_assert_uint_eq(m2->size, m->size);
	ck_assert(!memcmp(m2->data, m->data, m->size));
	pccx__gemma_model_free(m2);
	pccx_tokenizer_free(tk);
	pccx__gemma_model_free(m);
	cleanup(files, 2);
}
END_TEST

/* The forms llama.cpp's converter gives some keys load as pccx's own do. */
START_TEST(converter_key_forms_load)
{
	static const char *const files[] = { "t.gguf", "x.gguf" };
	struct pccx_gemma_model *m, *m2;
	pccx_diag d = { 0 };
	char p[128], x[128];
	uint32_t ffn[10];
	float z[10];
	int i, k;
	struct edit e[3] = {
		/* a float count, as in published files (gguf-py once wrote it so) */
		{ .set = "gemma3n.attention.shared_kv_layers",
		  .v = { .type = PCCX_GGUF_FLOAT32, .v.f = 5.0 } },
		/* one feed-forward length per layer (E2B's config has a list) */
		{ .set = "gemma3n.feed_forward_length",
		  .v = { .type = PCCX_GGUF_ARRAY,
			 .v.arr = { .elem_type = PCCX_GGUF_UINT32, .n = 10, .data = ffn } } },
		/* 0 rather than -inf on the dense layers (what pccx wrote before) */
		{ .set = "gemma3n.activation_sparsity_scale",
		  .v = { .type = PCCX_GGUF_ARRAY,
			 .v.arr = { .elem_type = PCCX_GGUF_FLOAT32, .n = 10, .data = z } } },
	};

	path_of(p, sizeof(p), files[0]);
	path_of(x, sizeof(x), files[1]);
	m = save_model("tiny", NULL, p);
	ck_assert_uint_eq(m->cfg.n_layers, 10);
	for (i = 0; i < 10; i++) {
		ffn[i] = m->cfg.d_ffn;
		z[i] = m->layers[i].sparse ? m->cfg.sparse_z : 0.0f;
	}
	for (k = 0; k < 3; k++) {
		rewrite(p, x, &e[k]);
		ck_assert_msg(pccx__gemma_load_gguf(&m2, x, 0, NULL, NULL, &d) == 0, "%s", d.msg);
		ck_assert_uint_eq(m2->cfg.n_kv_shared, m->cfg.n_kv_shared);
		ck_assert_uint_eq(m2->cfg.d_ffn, m->cfg.d_ffn);
		ck_assert_uint_eq(m2->cfg.n_sparse, m->cfg.n_sparse);
		ck_assert_float_eq(m2->cfg.sparse_z, m->cfg.sparse_z);
		ck_assert(!memcmp(m2->data, m->data, m->size));
		pccx__gemma_model_free(m2);
	}
	pccx__gemma_model_free(m);
	cleanup(files, 2);
}
END_TEST

START_TEST(inconsistent_token_count_refused)
{
	static const char *const files[] = { "t.gguf", "x.gguf", "n.gguf" };
	struct pccx_gemma_model *m;
	pccx_tokenizer *tk = small_tokenizer();
	pccx_gguf *g;
	pccx_diag d = { 0 };
	char p[128], x[128], n[128];
	const pccx_gguf_value *tokens;
	struct edit e;

	path_of(p, sizeof(p), files[0]);
	path_of(x, sizeof(x), files[1]);
	path_of(n, sizeof(n), files[2]);
	m = save_model("tiny", tk, p);
	pccx__gemma_model_free(m);
	ck_assert_msg(pccx_gguf_open(&g, p, &d) == 0, "%s", d.msg);
	tokens = pccx_gguf_find(g, "tokenizer.ggml.tokens");
	ck_assert_ptr_nonnull(tokens);
	ck_assert_uint_eq(tokens->v.arr.n, 512);

	/* a token list one short of token_embd's 512 rows */
	e = (struct edit){ .set = "tokenizer.ggml.tokens", .v = *tokens };
	e.v.v.arr.n = 511;
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "x.gguf", "'token_embd.weight'",
			"512 rows", "ne {128, 512}", "tokenizer.ggml.tokens counts 511", NULL });
	/* scores or types one short of the tokens (llama.cpp: "Index out of array bounds") */
	e = (struct edit){ .set = "tokenizer.ggml.scores",
			   .v = *pccx_gguf_find(g, "tokenizer.ggml.scores") };
	e.v.v.arr.n = 511;
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'tokenizer.ggml.scores' has 511 "
			"entries, fewer than the 512 of tokenizer.ggml.tokens", NULL });
	e = (struct edit){ .set = "tokenizer.ggml.token_type",
			   .v = *pccx_gguf_find(g, "tokenizer.ggml.token_type") };
	e.v.v.arr.n = 100;
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'tokenizer.ggml.token_type' has 100 "
			"entries", NULL });
	/* types as float32: llama.cpp's "invalid gguf type" */
	e = (struct edit){ .set = "tokenizer.ggml.token_type",
			   .v = *pccx_gguf_find(g, "tokenizer.ggml.scores") };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'tokenizer.ggml.token_type': not an "
			"array of int32", NULL });
	/* the table as pccx wrote it before: 480 rows for 512 tokens */
	e = (struct edit){ .cut = "per_layer_token_embd.weight", .rows = 480 };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'per_layer_token_embd.weight'",
			"480 rows", "ne {320, 480}", "expected 512", NULL });
	/* token_embd one row short: llama.cpp's "wrong shape" on token_embd */
	e = (struct edit){ .cut = "token_embd.weight", .rows = 511 };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'token_embd.weight' has 511 rows",
			"tokenizer.ggml.tokens counts 512", NULL });
	/* gemma3n.vocab_size saying another count */
	e = (struct edit){ .set = "gemma3n.vocab_size",
			   .v = { .type = PCCX_GGUF_UINT32, .v.u = 513 } };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'gemma3n.vocab_size' is 513",
			"512 rows", NULL });
	/* pccx's per-layer key past the table */
	e = (struct edit){ .set = "gemma3n.vocab_size_per_layer_input",
			   .v = { .type = PCCX_GGUF_UINT32, .v.u = 600 } };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){
			"'gemma3n.vocab_size_per_layer_input' is 600", "1..512", NULL });
	pccx_gguf_close(g);

	/* no tokenizer: "no_vocab" needs gemma3n.vocab_size, which must match */
	m = save_model("tiny", NULL, n);
	pccx__gemma_model_free(m);
	e = (struct edit){ .drop = "gemma3n.vocab_size" };
	rewrite(n, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "\"no_vocab\"",
			"'gemma3n.vocab_size' is absent", NULL });
	e = (struct edit){ .set = "gemma3n.vocab_size",
			   .v = { .type = PCCX_GGUF_UINT32, .v.u = 262144 } };
	rewrite(n, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "512 rows", "gemma3n.vocab_size",
			"262144", NULL });
	/* a layer tensor of the wrong shape is named with both shapes */
	e = (struct edit){ .cut = "blk.3.ffn_down.weight", .rows = 64 };
	rewrite(n, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.3.ffn_down.weight'",
			"ne {512, 64}", "expected ne {512, 128}", NULL });
	pccx_tokenizer_free(tk);
	cleanup(files, 3);
}
END_TEST

START_TEST(tokenizer_larger_than_vocab_refused)
{
	pccx_tokenizer *tk = small_tokenizer();
	pccx_gguf_writer *w;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_gguf_writer_new(&w, &d), 0);
	ck_assert_int_eq(pccx__tokenizer_save_gguf(w, tk, TK_N - 1, &d), PCCX_ERR_INVALID);
	ck_assert_msg(strstr(d.msg, "266 ids, more than the 265 rows") != NULL, "%s", d.msg);
	/* exactly its own count, and 0 meaning its own count, are fine */
	ck_assert_int_eq(pccx__tokenizer_save_gguf(w, tk, 0, &d), 0);
	pccx_gguf_writer_free(w);
	pccx_tokenizer_free(tk);
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create("gguf_layout");
	TCase *tc = tcase_create("llama.cpp");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, tiny_without_tokenizer);
	tcase_add_test(tc, tiny_with_tokenizer);
	tcase_add_test(tc, tiny_vocab_with_tokenizer);
	tcase_add_test(tc, converter_key_forms_load);
	tcase_add_test(tc, inconsistent_token_count_refused);
	tcase_add_test(tc, tokenizer_larger_than_vocab_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(layout_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
