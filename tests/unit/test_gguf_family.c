// SPDX-License-Identifier: MIT
/*
 * GGUF files of every family: what pccx writes for tiny-gemma, tiny-gemma2, tiny-gemma3 and
 * the Gemma 3n tiny reads back identically (every config field, every tensor byte) and decodes
 * to the logits of the model synthesised in memory; the gemma, gemma2 and gemma3 files have
 * the tensors and keys llama.cpp's loaders of those architectures create and read (written
 * out below from llama.cpp's src/models/gemma{,2,3}.cpp, not from pccx's tensor table); files
 * as llama.cpp's converter writes them load; bad files are refused naming the key or tensor.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_ref.h"
#include "gemma_gguf.h"
#include "gemma_model.h"
#include "pccx/modelfile.h"
#include "session.h"

static char dir[64];

static void path_of(char *out, size_t size, const char *name)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/pccx-family-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(dir));
	}
	snprintf(out, size, "%s/%s", dir, name);
}

static void cleanup(void)
{
	static const char *const names[] = { "a.gguf", "x.gguf" };
	char p[128];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
	dir[0] = 0;
}

static struct pccx_gemma_model *synth(const char *config)
{
	struct pccx_gemma_model *m;
	struct pccx_gemma_config cfg;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__gemma_config_preset(config, &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(m, 7, 1, &d) == 0, "%s", d.msg);
	return m;
}

static struct pccx_gemma_model *save_synth(const char *config, const char *path)
{
	struct pccx_gemma_model *m = synth(config);
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__gemma_save_gguf(m, NULL, path, &d) == 0, "%s", d.msg);
	return m;
}

/* The loaded model is `m`: the configuration but for its name, and every byte. */
static void same_model(const struct pccx_gemma_model *m, const struct pccx_gemma_model *l)
{
	struct pccx_gemma_config want = m->cfg;
	uint32_t t;

	memcpy(want.name, l->cfg.name, sizeof(want.name));
	ck_assert_int_eq(l->cfg.family, m->cfg.family);
	ck_assert_float_eq(l->cfg.query_pre_attn_scalar, m->cfg.query_pre_attn_scalar);
	ck_assert_uint_eq(l->cfg.global_period, m->cfg.global_period);
	ck_assert_uint_eq(l->cfg.window, m->cfg.window);
	ck_assert_int_eq(memcmp(&want, &l->cfg, sizeof(want)), 0);
	ck_assert_uint_eq(l->n_t, m->n_t);
	for (t = 0; t < m->n_t; t++)
		ck_assert_str_eq(l->t[t].name, m->t[t].name);
	ck_assert_uint_eq(l->size, m->size);
	ck_assert(!memcmp(l->data, m->data, m->size));
}

static void refused(const char *path, int rc, const char *const *want)
{
	struct pccx_gemma_model *m = NULL;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__gemma_load_gguf(&m, path, 0, NULL, NULL, &d), rc);
	ck_assert_ptr_null(m);
	for (; *want; want++)
		ck_assert_msg(strstr(d.msg, *want) != NULL, "'%s' not in: %s", *want, d.msg);
}

/* ---- llama.cpp's layout ------------------------------------------------------------------- */

/*
 * The tensors llama.cpp's gemma / gemma2 / gemma3 loaders create (ne as llama.cpp writes it;
 * the LM head is token_embd, duplicated): `post` for gemma2 and gemma3, `qk` for gemma3.
 */
static void check_tensors(const pccx_gguf *g, const struct pccx_gemma_config *c, bool post,
			  bool qk)
{
	const uint64_t D = c->d_model, F = c->d_ffn, Q = (uint64_t)c->n_heads * c->head_dim;
	const uint64_t KV = (uint64_t)c->n_kv_heads * c->head_dim, Dh = c->head_dim;
	const struct {
		const char *name;
		uint64_t ne0, ne1;	/* ne1 0: a vector (F32) */
		bool want;
	} list[] = {
		{ "blk.%u.attn_norm.weight", D, 0, true },
		{ "blk.%u.attn_q.weight", D, Q, true },
		{ "blk.%u.attn_k.weight", D, KV, true },
		{ "blk.%u.attn_v.weight", D, KV, true },
		{ "blk.%u.attn_output.weight", Q, D, true },
		{ "blk.%u.post_attention_norm.weight", D, 0, post },
		{ "blk.%u.attn_q_norm.weight", Dh, 0, qk },
		{ "blk.%u.attn_k_norm.weight", Dh, 0, qk },
		{ "blk.%u.ffn_norm.weight", D, 0, true },
		{ "blk.%u.ffn_gate.weight", D, F, true },
		{ "blk.%u.ffn_up.weight", D, F, true },
		{ "blk.%u.ffn_down.weight", F, D, true },
		{ "blk.%u.post_ffw_norm.weight", D, 0, post },
	};
	uint64_t n = 2;	/* token_embd, output_norm */
	const pccx_gguf_tensor *t;
	char name[96];
	uint32_t l;
	size_t i;

	t = pccx_gguf_find_tensor(g, "token_embd.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert(t->n_dims == 2 && t->ne[0] == D && t->ne[1] == c->vocab &&
		  t->type == PCCX_GGML_Q4_0);
	t = pccx_gguf_find_tensor(g, "output_norm.weight");
	ck_assert(t && t->n_dims == 1 && t->ne[0] == D && t->type == PCCX_GGML_F32);
	ck_assert_ptr_null(pccx_gguf_find_tensor(g, "output.weight"));
	for (l = 0; l < c->n_layers; l++) {
		for (i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
			snprintf(name, sizeof(name), list[i].name, l);
			t = pccx_gguf_find_tensor(g, name);
			if (!list[i].want) {
				ck_assert_msg(t == NULL, "'%s' is not a tensor of the family", name);
				continue;
			}
			n++;
			ck_assert_msg(t != NULL, "tensor '%s' missing", name);
			ck_assert_uint_eq(t->n_dims, list[i].ne1 ? 2 : 1);
			ck_assert_uint_eq(t->ne[0], list[i].ne0);
			if (list[i].ne1)
				ck_assert_uint_eq(t->ne[1], list[i].ne1);
			ck_assert_uint_eq(t->type, list[i].ne1 ? PCCX_GGML_Q4_0 : PCCX_GGML_F32);
		}
	}
	ck_assert_uint_eq(pccx_gguf_n_tensors(g), n);
}

static void key_u32(const pccx_gguf *g, const char *key, uint32_t want)
{
	uint32_t v;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_gguf_get_u32(g, key, &v, &d) == 0, "%s", d.msg);
	ck_assert_msg(v == want, "%s: %u, expected %u", key, v, want);
}

static void key_f32(const pccx_gguf *g, const char *key, float want)
{
	float v;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_gguf_get_f32(g, key, &v, &d) == 0, "%s", d.msg);
	ck_assert_msg(v == want, "%s: %g, expected %g", key, (double)v, (double)want);
}

static void key_str(const pccx_gguf *g, const char *key, const char *want)
{
	const char *v;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_gguf_get_str(g, key, &v, NULL, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(v, want);
}

/*
 * The keys of the three files, with the values of the presets (docs/reference.md) as
 * llama.cpp reads them.
 */
static void check_keys(const pccx_gguf *g, const char *arch)
{
	char k[96];

#define K(s) (snprintf(k, sizeof(k), "%s.%s", arch, s), k)
	key_str(g, "general.architecture", arch);
	key_u32(g, K("embedding_length"), 128);
	key_u32(g, K("attention.key_length"), 32);
	key_u32(g, K("attention.value_length"), 32);
	key_f32(g, K("attention.layer_norm_rms_epsilon"), 1e-6f);
	key_u32(g, K("vocab_size"), 512);
	key_str(g, "tokenizer.ggml.model", "no_vocab");
	if (!strcmp(arch, "gemma")) {
		key_u32(g, K("block_count"), 4);
		key_u32(g, K("attention.head_count_kv"), 4);
		key_u32(g, K("context_length"), 1024);	/* the window of all-global Gemma 1 */
		ck_assert_ptr_null(pccx_gguf_find(g, K("attention.sliding_window")));
		ck_assert_ptr_null(pccx_gguf_find(g, K("final_logit_softcapping")));
	} else if (!strcmp(arch, "gemma2")) {
		key_u32(g, K("block_count"), 6);
		key_u32(g, K("feed_forward_length"), 384);
		key_u32(g, K("attention.sliding_window"), 16);
		key_f32(g, K("attn_logit_softcapping"), 50.0f);
		key_f32(g, K("final_logit_softcapping"), 30.0f);
		/* llama.cpp's defaults hold: period 2, local base = global base */
		ck_assert_ptr_null(pccx_gguf_find(g, K("attention.sliding_window_pattern")));
		ck_assert_ptr_null(pccx_gguf_find(g, K("rope.freq_base_swa")));
	} else {
		key_u32(g, K("block_count"), 8);
		key_u32(g, K("attention.head_count_kv"), 1);
		key_u32(g, K("attention.sliding_window"), 16);
		key_f32(g, K("rope.freq_base"), 1e6f);
		key_str(g, K("rope.scaling.type"), "linear");
		key_f32(g, K("rope.scaling.factor"), 8.0f);
		/* llama.cpp's defaults hold: period 6, local base 10000, no soft-caps */
		ck_assert_ptr_null(pccx_gguf_find(g, K("attention.sliding_window_pattern")));
		ck_assert_ptr_null(pccx_gguf_find(g, K("rope.freq_base_swa")));
		ck_assert_ptr_null(pccx_gguf_find(g, K("final_logit_softcapping")));
		ck_assert_ptr_null(pccx_gguf_find(g, K("attn_logit_softcapping")));
	}
#undef K
}

/* ---- rewriting a file --------------------------------------------------------------------- */

struct edit {
	const char *drop, *set;
	pccx_gguf_value v;
	const char *cut;	/* tensor cut to its first `rows` rows */
	uint64_t rows;
	const char *add;	/* a copy of token_embd.weight under this name */
	const char *drop_t;	/* a tensor left out */
	const char *repl;	/* a tensor whose bytes are replaced by repl_data */
	const void *repl_data;
	const char *split;	/* a ffn_gate_up_exps written as ffn_gate_exps, ffn_up_exps */
	const char *f32;	/* a tensor written as F32 (its values decoded) */
	const pccx_gguf_tensor *ne_of;	/* with repl: the type and ne of repl_data */
};

/*
 * llama.cpp's other form of a layer's experts: ffn_gate_exps and ffn_up_exps of ne {D, I, E},
 * expert e's rows of each the first and second halves of its block in ffn_gate_up_exps.
 */
static void add_split(pccx_gguf_writer *w, const pccx_gguf_tensor *t, void **keep)
{
	uint64_t ne[3] = { t->ne[0], t->ne[1] / 2, t->ne[2] };
	uint64_t half = t->nbytes / t->ne[2] / 2, e;
	pccx_diag d = { 0 };
	char name[96];
	int k;

	for (k = 0; k < 2; k++) {
		uint8_t *buf = malloc(half * t->ne[2]);

		ck_assert_ptr_nonnull(buf);
		for (e = 0; e < t->ne[2]; e++)
			memcpy(buf + e * half, t->data + (2 * e + (uint64_t)k) * half, half);
		snprintf(name, sizeof(name), "%.*s%s_exps.weight",
			 (int)(strstr(t->name, "gate_up") - t->name), t->name, k ? "up" : "gate");
		ck_assert_msg(pccx_gguf_writer_add_tensor(w, name, t->type, 3, ne, buf,
							  half * t->ne[2], &d) == 0, "%s", d.msg);
		keep[k] = buf;
	}
}

/* Tensor t's values as F32 (the caller frees them). */
static float *as_f32(const pccx_gguf *g, const pccx_gguf_tensor *t)
{
	float *f = malloc(sizeof(float) * t->n_elems);
	pccx_diag d = { 0 };

	ck_assert_ptr_nonnull(f);
	ck_assert_msg(pccx_gguf_decode_rows(g, t, 0, t->n_elems / t->ne[0], f, &d) == 0, "%s",
		      d.msg);
	return f;
}

static void rewrite(const char *src, const char *dst, const struct edit *e)
{
	pccx_gguf *g;
	pccx_gguf_writer *w;
	pccx_diag d = { 0 };
	bool set_done = false;
	void *keep[3] = { NULL, NULL, NULL };
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

		const void *data = e->repl && !strcmp(t->name, e->repl) ? e->repl_data : t->data;

		if (e->drop_t && !strcmp(t->name, e->drop_t))
			continue;
		if (e->split && !strcmp(t->name, e->split)) {
			add_split(w, t, keep);
			continue;
		}
		memcpy(ne, t->ne, sizeof(ne));
		if (e->f32 && !strcmp(t->name, e->f32)) {
			keep[2] = as_f32(g, t);
			ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, t->name, PCCX_GGML_F32,
								     t->n_dims, ne, keep[2],
								     4 * t->n_elems, &d), 0);
			continue;
		}
		if (data == e->repl_data && e->ne_of) {
			memcpy(ne, e->ne_of->ne, sizeof(ne));
			ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, t->name, e->ne_of->type,
								     e->ne_of->n_dims, ne, data,
								     e->ne_of->nbytes, &d), 0);
			continue;
		}
		if (e->cut && !strcmp(t->name, e->cut)) {
			nbytes = t->nbytes / t->ne[1] * e->rows;
			ne[1] = e->rows;
		}
		ck_assert_msg(pccx_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne,
							  data, nbytes, &d) == 0, "%s", d.msg);
		if (e->add && !strcmp(t->name, "token_embd.weight"))
			ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, e->add, t->type, t->n_dims,
								     ne, t->data, nbytes, &d), 0);
	}
	ck_assert_msg(pccx_gguf_writer_write(w, dst, &d) == 0, "%s", d.msg);
	pccx_gguf_writer_free(w);
	pccx_gguf_close(g);
	for (i = 0; i < 3; i++)
		free(keep[i]);
}

#define U32V(x) { .type = PCCX_GGUF_UINT32, .v.u = (x) }
#define F32V(x) { .type = PCCX_GGUF_FLOAT32, .v.f = (x) }

/* ---- decoding ----------------------------------------------------------------------------- */

static void decode(struct pccx_gemma_model *m, const uint32_t *toks, uint32_t n, float *logits)
{
	struct pccx_ref_exec *x;
	struct pccx_gemma_session *s;
	pccx_diag d = { 0 };
	uint32_t i;

	ck_assert_msg(pccx__ref_exec_create(&x, 1, PCCX_KERN_AUTO, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_session_create(&s, m, pccx__ref_exec_ops(), x, &d) == 0, "%s",
		      d.msg);
	for (i = 0; i < n; i++)
		ck_assert_msg(pccx__gemma_session_step(s, toks[i], logits + (size_t)i * m->cfg.vocab,
						       &d) == 0, "%s", d.msg);
	pccx__gemma_session_free(s);
	pccx__ref_exec_free(x);
}

/* ---- tests -------------------------------------------------------------------------------- */

static const char *const tiny_families[] = { "tiny-gemma", "tiny-gemma2", "tiny-gemma3", "tiny",
					     "tiny-gemma4", "tiny-gemma4-moe" };

/*
 * Every family's tiny model: saved, loaded back identically, and (past the window of the
 * local layers, 20 tokens) decoding to exactly the logits of the model synthesised in memory.
 */
START_TEST(round_trip_and_decode)
{
	const char *config = tiny_families[_i];
	struct pccx_gemma_model *m, *l;
	static const uint32_t toks[20] = { 2, 17, 300, 5, 511, 42, 42, 7, 100, 200,
					   3, 9, 81, 400, 12, 13, 14, 15, 16, 99 };
	pccx_diag d = { 0 };
	float *a, *b;
	char p[128];

	path_of(p, sizeof(p), "a.gguf");
	m = save_synth(config, p);
	ck_assert_msg(pccx__gemma_load_gguf(&l, p, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	a = malloc(sizeof(float) * 20 * m->cfg.vocab);
	b = malloc(sizeof(float) * 20 * m->cfg.vocab);
	ck_assert(a && b);
	decode(m, toks, 20, a);
	decode(l, toks, 20, b);
	ck_assert(!memcmp(a, b, sizeof(float) * 20 * m->cfg.vocab));
	ck_assert(isfinite(a[0]) && a[0] != a[1]);
	free(a);
	free(b);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

START_TEST(llama_cpp_layout)
{
	static const char *const arch[] = { "gemma", "gemma2", "gemma3" };
	struct pccx_gemma_model *m;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	char p[128];

	path_of(p, sizeof(p), "a.gguf");
	m = save_synth(tiny_families[_i], p);
	ck_assert_msg(pccx_gguf_open(&g, p, &d) == 0, "%s", d.msg);
	check_keys(g, arch[_i]);
	check_tensors(g, &m->cfg, _i >= 1, _i == 2);
	pccx_gguf_close(g);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/* Norm vectors are written as stored: the effective multiplier, as llama.cpp's converter. */
START_TEST(norms_as_stored)
{
	struct pccx_gemma_model *m;
	const pccx_gguf_tensor *t;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	float row[128];
	char p[128];

	path_of(p, sizeof(p), "a.gguf");
	m = save_synth("tiny-gemma3", p);
	ck_assert_msg(pccx_gguf_open(&g, p, &d) == 0, "%s", d.msg);
	t = pccx_gguf_find_tensor(g, "blk.2.post_ffw_norm.weight");
	ck_assert_ptr_nonnull(t);
	pccx__gemma_row_f32(m, m->w.layer[2].vec[PCCX_GEMMA_LV_POST_FFN_NORM], 0, row);
	ck_assert(!memcmp(t->data, row, sizeof(float) * 128));
	/* near 1 (the multiplier), not near 0 (Hugging Face's w) */
	ck_assert(row[0] > 0.5f && row[5] > 0.5f);
	pccx_gguf_close(g);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/* The forms llama.cpp's converter writes, and llama.cpp's defaults for absent keys. */
START_TEST(converter_forms_load)
{
	struct pccx_gemma_model *m, *l;
	pccx_diag d = { 0 };
	char p[128], x[128];
	struct edit e;

	path_of(p, sizeof(p), "a.gguf");
	path_of(x, sizeof(x), "x.gguf");
	/* Gemma 2 without the soft-cap keys: llama.cpp's 50 and 30 */
	m = save_synth("tiny-gemma2", p);
	e = (struct edit){ .drop = "gemma2.attn_logit_softcapping" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	pccx__gemma_model_free(l);
	/* an explicit period of 2 as the default */
	e = (struct edit){ .set = "gemma2.attention.sliding_window_pattern", .v = U32V(2) };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	pccx__gemma_model_free(l);
	/* a period of 3 is honoured */
	e = (struct edit){ .set = "gemma2.attention.sliding_window_pattern", .v = U32V(3) };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	ck_assert_uint_eq(l->cfg.global_period, 3);
	ck_assert_int_eq(l->layers[2].kind, PCCX_ATTN_GLOBAL);
	ck_assert_int_eq(l->layers[1].kind, PCCX_ATTN_LOCAL);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);

	/* Gemma 3 without a sliding window: every layer global, the window is the context */
	m = save_synth("tiny-gemma3", p);
	e = (struct edit){ .drop = "gemma3.attention.sliding_window" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(l->cfg.global_period, 1);
	ck_assert_uint_eq(l->cfg.window, 1024);
	ck_assert_int_eq(l->layers[0].kind, PCCX_ATTN_GLOBAL);
	pccx__gemma_model_free(l);
	/* the old key of the linear factor */
	e = (struct edit){ .drop = "gemma3.rope.scaling.factor" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert_float_eq(l->cfg.rope_factor_global, 0.0f);
	pccx__gemma_model_free(l);
	/* a local base other than llama.cpp's 10000 */
	e = (struct edit){ .set = "gemma3.rope.freq_base_swa", .v = F32V(20000.0f) };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert_float_eq(l->cfg.theta_local, 20000.0f);
	ck_assert_float_eq(l->layers[0].theta, 20000.0f);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/* query_pre_attn_scalar as llama.cpp derives it; the 27B values are the published configs'. */
START_TEST(q_scalar_derivation)
{
	struct pccx_gemma_config c = { .family = PCCX_FAMILY_GEMMA2, .n_layers = 46,
				       .d_model = 4608, .n_heads = 32, .head_dim = 128 };

	ck_assert_float_eq(pccx__gemma_gguf_q_scalar(&c), 144.0f);	/* gemma-2-27b */
	c.n_layers = 42;	/* gemma-2-9b: head_dim 256 */
	c.d_model = 3584;
	c.n_heads = 16;
	c.head_dim = 256;
	ck_assert_float_eq(pccx__gemma_gguf_q_scalar(&c), 256.0f);
	c = (struct pccx_gemma_config){ .family = PCCX_FAMILY_GEMMA3, .n_layers = 62,
					.d_model = 5376, .n_heads = 32, .head_dim = 128 };
	ck_assert_float_eq(pccx__gemma_gguf_q_scalar(&c), 168.0f);	/* gemma-3-27b */
	c.family = PCCX_FAMILY_GEMMA;	/* Gemma 1 never: 1/sqrt(head_dim) */
	ck_assert_float_eq(pccx__gemma_gguf_q_scalar(&c), 128.0f);
}
END_TEST

START_TEST(refusals)
{
	struct pccx_gemma_model *m;
	char p[128], x[128];
	struct edit e;
	pccx_gguf_value arr = { .type = PCCX_GGUF_ARRAY };
	static const bool pattern[6] = { true, false, true, false, true, false };

	path_of(p, sizeof(p), "a.gguf");
	path_of(x, sizeof(x), "x.gguf");
	m = save_synth("tiny-gemma2", p);
	pccx__gemma_model_free(m);
	/* an architecture of another model */
	e = (struct edit){ .set = "general.architecture",
			   .v = { .type = PCCX_GGUF_STRING, .v.str = { "llama", 5 } } };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "general.architecture 'llama'",
			"not supported", NULL });
	/* a key llama.cpp requires */
	e = (struct edit){ .drop = "gemma2.attention.head_count" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "x.gguf",
			"'gemma2.attention.head_count' is missing", NULL });
	e = (struct edit){ .drop = "gemma2.attention.layer_norm_rms_epsilon" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){
			"'gemma2.attention.layer_norm_rms_epsilon' is missing", NULL });
	/* inconsistent heads: 4 query heads do not share 3 KV heads */
	e = (struct edit){ .set = "gemma2.attention.head_count_kv", .v = U32V(3) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_INVALID, (const char *const[]){ "x.gguf", "n_heads", NULL });
	e = (struct edit){ .set = "gemma2.attention.value_length", .v = U32V(64) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'gemma2.attention.value_length' "
			"is 64, key_length 32", NULL });
	/* a tensor of the wrong shape */
	e = (struct edit){ .cut = "blk.1.ffn_up.weight", .rows = 64 };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.1.ffn_up.weight'",
			"ne {128, 64}", "expected ne {128, 384}", NULL });
	/* an untied LM head */
	e = (struct edit){ .add = "output.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'output.weight'", NULL });
	/* RoPE scaling other than linear; linear scaling of Gemma 2's local layers */
	e = (struct edit){ .set = "gemma2.rope.scaling.type",
			   .v = { .type = PCCX_GGUF_STRING, .v.str = { "yarn", 4 } } };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'gemma2.rope.scaling.type' is "
			"\"yarn\"", NULL });
	e = (struct edit){ .set = "gemma2.rope.scaling.factor", .v = F32V(4.0f) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'gemma2.rope.scaling.factor' is "
			"4", NULL });
	/* a soft-cap of 0 that llama.cpp would divide by */
	e = (struct edit){ .set = "gemma2.final_logit_softcapping", .v = F32V(0.0f) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "soft-caps 50", NULL });
	/* Gemma 3n's per-layer pattern form */
	arr.v.arr.elem_type = PCCX_GGUF_BOOL;
	arr.v.arr.n = 6;
	arr.v.arr.data = pattern;
	e = (struct edit){ .set = "gemma2.attention.sliding_window_pattern", .v = arr };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){
			"'gemma2.attention.sliding_window_pattern' is an array", NULL });
	/* a layer count the device cannot run */
	e = (struct edit){ .set = "gemma2.block_count", .v = U32V(65) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_INVALID, (const char *const[]){ "n_layers", NULL });
	cleanup();
}
END_TEST

/* A configuration llama.cpp would run differently is not written. */
START_TEST(save_refusals)
{
	struct pccx_gemma_model *m = synth("tiny-gemma2");
	pccx_diag d = { 0 };
	char p[128];

	path_of(p, sizeof(p), "a.gguf");
	m->cfg.query_pre_attn_scalar = 64.0f;
	ck_assert_int_eq(pccx__gemma_save_gguf(m, NULL, p, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(d.msg, "query_pre_attn_scalar 64, llama.cpp derives 32") != NULL,
		      "%s", d.msg);
	m->cfg.query_pre_attn_scalar = 32.0f;
	m->cfg.attn_softcap = 0.0f;
	ck_assert_int_eq(pccx__gemma_save_gguf(m, NULL, p, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(d.msg, "soft-caps") != NULL, "%s", d.msg);
	ck_assert_int_ne(access(p, F_OK), 0);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/* ---- Gemma 4 ------------------------------------------------------------------------------ */

/*
 * tiny-gemma4 as llama.cpp's gemma4 loader creates its tensors (src/models/gemma4.cpp, ne as
 * there; written out from the preset's description in docs/reference.md, not from pccx's
 * tensor table): layers 3 and 7 global (heads of 64, one KV head, no attn_v: V = K), the
 * others sliding (heads of 32, two KV heads), layers 5-7 sharing KV (no attn_k, attn_k_norm,
 * attn_v) with a double-wide FFN (512), per-layer inputs of 32, one rope_freqs.
 */
static void check_tensors_4(const pccx_gguf *g)
{
	static const struct {
		const char *name;
		uint64_t ne0, ne1;	/* ne1 0: a vector (F32) */
	} glob[] = {
		{ "token_embd.weight", 128, 512 },
		{ "per_layer_token_embd.weight", 8 * 32, 512 },
		{ "per_layer_model_proj.weight", 128, 8 * 32 },
		{ "per_layer_proj_norm.weight", 32, 0 },
		{ "output_norm.weight", 128, 0 },
		{ "rope_freqs.weight", 32, 0 },
	};
	const pccx_gguf_tensor *t;
	uint64_t n = 0;
	uint32_t l;
	size_t i;
	char name[96];

	for (i = 0; i < sizeof(glob) / sizeof(glob[0]); i++, n++) {
		t = pccx_gguf_find_tensor(g, glob[i].name);
		ck_assert_msg(t != NULL, "tensor '%s' missing", glob[i].name);
		ck_assert_uint_eq(t->n_dims, glob[i].ne1 ? 2 : 1);
		ck_assert_uint_eq(t->ne[0], glob[i].ne0);
		if (glob[i].ne1)
			ck_assert_uint_eq(t->ne[1], glob[i].ne1);
		ck_assert_uint_eq(t->type, glob[i].ne1 ? PCCX_GGML_Q4_0 : PCCX_GGML_F32);
	}
	ck_assert_ptr_null(pccx_gguf_find_tensor(g, "output.weight"));
	for (l = 0; l < 8; l++) {
		bool global = l == 3 || l == 7, kv = l < 4;
		uint64_t hd = global ? 64 : 32, nkv = global ? 1 : 2, F = l < 4 ? 256 : 512;
		const struct {
			const char *name;
			uint64_t ne0, ne1;
			bool want;
		} list[] = {
			{ "attn_norm", 128, 0, true },
			{ "attn_q", 128, 4 * hd, true },
			{ "attn_k", 128, nkv * hd, kv },
			{ "attn_v", 128, nkv * hd, kv && !global },
			{ "attn_output", 4 * hd, 128, true },
			{ "attn_q_norm", hd, 0, true },
			{ "attn_k_norm", hd, 0, kv },
			{ "post_attention_norm", 128, 0, true },
			{ "layer_output_scale", 1, 0, true },
			{ "ffn_norm", 128, 0, true },
			{ "ffn_gate", 128, F, true },
			{ "ffn_up", 128, F, true },
			{ "ffn_down", F, 128, true },
			{ "post_ffw_norm", 128, 0, true },
			{ "inp_gate", 128, 32, true },
			{ "proj", 32, 128, true },
			{ "post_norm", 128, 0, true },
		};

		for (i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
			snprintf(name, sizeof(name), "blk.%u.%s.weight", l, list[i].name);
			t = pccx_gguf_find_tensor(g, name);
			if (!list[i].want) {
				ck_assert_msg(t == NULL, "'%s' is not a tensor of the layer", name);
				continue;
			}
			n++;
			ck_assert_msg(t != NULL, "tensor '%s' missing", name);
			ck_assert_uint_eq(t->n_dims, list[i].ne1 ? 2 : 1);
			ck_assert_uint_eq(t->ne[0], list[i].ne0);
			if (list[i].ne1)
				ck_assert_uint_eq(t->ne[1], list[i].ne1);
			ck_assert_uint_eq(t->type, list[i].ne1 ? PCCX_GGML_Q4_0 : PCCX_GGML_F32);
		}
	}
	ck_assert_uint_eq(pccx_gguf_n_tensors(g), n);
	ck_assert_uint_eq(n, 129);
}

/* An integer array key of `n` entries equal to want[]. */
static void key_ints(const pccx_gguf *g, const char *key, const int64_t *want, uint32_t n)
{
	const pccx_gguf_array *a;
	pccx_diag d = { 0 };
	uint32_t i;

	ck_assert_msg(pccx_gguf_get_array(g, key, PCCX_GGUF_TYPE_COUNT, &a, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(a->n, n);
	for (i = 0; i < n; i++) {
		int64_t v;

		ck_assert_int_eq(pccx_gguf_array_i64(a, i, &v), 0);
		ck_assert_msg(v == want[i], "%s[%u]: %lld, expected %lld", key, i, (long long)v,
			      (long long)want[i]);
	}
}

/*
 * tiny-gemma4's keys as llama.cpp's converter writes them (conversion/gemma.py Gemma4Model):
 * key_length the global head, key_length_swa the local one, rope.dimension_count the whole
 * global head (rope_freqs turns off 3/4 of its frequencies), per-layer arrays for the pattern,
 * the KV heads and the FFN widths, no expert count.
 */
static void check_keys_4(const pccx_gguf *g)
{
	static const int64_t swa[8] = { 1, 1, 1, 0, 1, 1, 1, 0 };
	static const int64_t kv[8] = { 2, 2, 2, 1, 2, 2, 2, 1 };
	static const int64_t ffn[8] = { 256, 256, 256, 256, 512, 512, 512, 512 };
	const pccx_gguf_tensor *t;
	const float *f;
	pccx_diag d = { 0 };
	const pccx_gguf_array *a;
	uint32_t i;

	key_str(g, "general.architecture", "gemma4");
	key_u32(g, "gemma4.block_count", 8);
	key_u32(g, "gemma4.embedding_length", 128);
	key_u32(g, "gemma4.attention.head_count", 4);
	key_u32(g, "gemma4.attention.key_length", 64);
	key_u32(g, "gemma4.attention.value_length", 64);
	key_u32(g, "gemma4.attention.key_length_swa", 32);
	key_u32(g, "gemma4.attention.value_length_swa", 32);
	key_u32(g, "gemma4.rope.dimension_count", 64);
	key_u32(g, "gemma4.rope.dimension_count_swa", 32);
	key_u32(g, "gemma4.attention.sliding_window", 16);
	key_u32(g, "gemma4.attention.shared_kv_layers", 4);
	key_u32(g, "gemma4.embedding_length_per_layer_input", 32);
	key_f32(g, "gemma4.rope.freq_base", 1e6f);
	key_f32(g, "gemma4.rope.freq_base_swa", 1e4f);
	key_f32(g, "gemma4.final_logit_softcapping", 30.0f);
	key_f32(g, "gemma4.attention.layer_norm_rms_epsilon", 1e-6f);
	key_u32(g, "gemma4.vocab_size", 512);
	ck_assert_msg(pccx_gguf_get_array(g, "gemma4.attention.sliding_window_pattern",
					  PCCX_GGUF_BOOL, &a, &d) == 0, "%s", d.msg);
	key_ints(g, "gemma4.attention.sliding_window_pattern", swa, 8);
	key_ints(g, "gemma4.attention.head_count_kv", kv, 8);
	key_ints(g, "gemma4.feed_forward_length", ffn, 8);
	ck_assert_ptr_null(pccx_gguf_find(g, "gemma4.expert_count"));
	/* proportional RoPE over a quarter: 8 of 32 frequencies rotate */
	t = pccx_gguf_find_tensor(g, "rope_freqs.weight");
	ck_assert_ptr_nonnull(t);
	f = (const float *)(const void *)t->data;
	for (i = 0; i < 32; i++)
		ck_assert_float_eq(f[i], i < 8 ? 1.0f : 1e30f);
}

START_TEST(gemma4_layout)
{
	struct pccx_gemma_model *m;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	float row[128];
	char p[128];

	path_of(p, sizeof(p), "a.gguf");
	m = save_synth("tiny-gemma4", p);
	ck_assert_msg(pccx_gguf_open(&g, p, &d) == 0, "%s", d.msg);
	check_keys_4(g);
	check_tensors_4(g);
	/* norms as stored: Gemma 4's RMSNorm multiplies by w, the converter adds nothing */
	pccx__gemma_row_f32(m, m->w.layer[2].vec[PCCX_GEMMA_LV_POST_FFN_NORM], 0, row);
	ck_assert(!memcmp(pccx_gguf_find_tensor(g, "blk.2.post_ffw_norm.weight")->data, row,
			  sizeof(float) * 128));
	pccx__gemma_row_f32(m, m->w.layer[6].vec[PCCX_GEMMA_LV_OUT_SCALE], 0, row);
	ck_assert(!memcmp(pccx_gguf_find_tensor(g, "blk.6.layer_output_scale.weight")->data, row,
			  sizeof(float)));
	pccx_gguf_close(g);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/* Forms the loader accepts besides its own: llama.cpp's defaults, TensorSharp's keys. */
START_TEST(gemma4_forms_load)
{
	struct pccx_gemma_model *m, *l;
	pccx_diag d = { 0 };
	char p[128], x[128];
	struct edit e;
	float one;

	path_of(p, sizeof(p), "a.gguf");
	path_of(x, sizeof(x), "x.gguf");
	m = save_synth("tiny-gemma4", p);
	/* without layer_output_scale llama.cpp does not scale the layer: 1 */
	e = (struct edit){ .drop_t = "blk.2.layer_output_scale.weight" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	pccx__gemma_row_f32(l, l->w.layer[2].vec[PCCX_GEMMA_LV_OUT_SCALE], 0, &one);
	ck_assert_float_eq(one, 1.0f);
	pccx__gemma_row_f32(m, m->w.layer[2].vec[PCCX_GEMMA_LV_OUT_SCALE], 0, &one);
	ck_assert_float_ne(one, 1.0f);	/* the synthetic scalar is not 1 */
	pccx__gemma_model_free(l);
	/* TensorSharp's keys, agreeing */
	e = (struct edit){ .set = "gemma4.attention.global_head_count_kv", .v = U32V(1) };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	pccx__gemma_model_free(l);
	e = (struct edit){ .set = "gemma4.rope.partial_rotary_factor", .v = F32V(0.25f) };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	pccx__gemma_model_free(l);
	/* no final_logit_softcapping: llama.cpp's 30 */
	e = (struct edit){ .drop = "gemma4.final_logit_softcapping" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, NULL, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

START_TEST(gemma4_refusals)
{
	static const bool odd[8] = { true, false, true, true, true, true, true, false };
	static const int32_t kv[8] = { 2, 2, 1, 1, 2, 2, 2, 1 };
	static const int32_t ffn[8] = { 256, 256, 256, 256, 512, 512, 256, 512 };
	struct pccx_gemma_model *m;
	pccx_gguf_value arr = { .type = PCCX_GGUF_ARRAY };
	float freqs[32];
	char p[128], x[128];
	struct edit e;
	uint32_t i;

	path_of(p, sizeof(p), "a.gguf");
	path_of(x, sizeof(x), "x.gguf");
	m = save_synth("tiny-gemma4", p);
	pccx__gemma_model_free(m);
	/* a layer pattern no period gives */
	arr.v.arr.elem_type = PCCX_GGUF_BOOL;
	arr.v.arr.n = 8;
	arr.v.arr.data = odd;
	e = (struct edit){ .set = "gemma4.attention.sliding_window_pattern", .v = arr };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){
			"'gemma4.attention.sliding_window_pattern': layer 3 is sliding",
			"global_period 2", NULL });
	/* experts said by the key but not by the tensors, and the other way round */
	e = (struct edit){ .set = "gemma4.expert_count", .v = U32V(128) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'blk.0.ffn_gate_inp.weight' is "
			"missing", "'gemma4.expert_count' is 128", NULL });
	e = (struct edit){ .add = "blk.4.ffn_gate_inp.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.4.ffn_gate_inp.weight' is "
			"present", "'gemma4.expert_count' is missing", NULL });
	/* KV heads that differ between sliding layers */
	arr.v.arr.elem_type = PCCX_GGUF_INT32;
	arr.v.arr.data = kv;
	e = (struct edit){ .set = "gemma4.attention.head_count_kv", .v = arr };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){
			"'gemma4.attention.head_count_kv': layer 2 (sliding) has 1", NULL });
	/* an FFN width only some KV-sharing layers double */
	arr.v.arr.data = ffn;
	e = (struct edit){ .set = "gemma4.feed_forward_length", .v = arr };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){
			"'gemma4.feed_forward_length': layer 6 has 256, expected 512", NULL });
	/* TensorSharp's global KV count disagreeing with llama.cpp's per-layer one */
	e = (struct edit){ .set = "gemma4.attention.global_head_count_kv", .v = U32V(2) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){
			"'gemma4.attention.global_head_count_kv' is 2", NULL });
	/* RoPE over part of the head by rope.dimension_count (llama.cpp would pair differently) */
	e = (struct edit){ .set = "gemma4.rope.dimension_count", .v = U32V(16) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){
			"'gemma4.rope.dimension_count' is 16, expected 64", NULL });
	e = (struct edit){ .drop = "gemma4.attention.value_length_swa" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){
			"'gemma4.attention.value_length_swa' is missing", NULL });
	/* rope_freqs: scaled frequencies; disagreeing with partial_rotary_factor; missing */
	for (i = 0; i < 32; i++)
		freqs[i] = i < 8 ? 1.0f : 1e30f;
	freqs[3] = 2.0f;
	e = (struct edit){ .repl = "rope_freqs.weight", .repl_data = freqs };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'rope_freqs.weight': element 3 "
			"is 2", NULL });
	e = (struct edit){ .set = "gemma4.rope.partial_rotary_factor", .v = F32V(0.5f) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'gemma4.rope.partial_rotary_factor' "
			"is 0.5", "rotates 8 of 32", NULL });
	e = (struct edit){ .drop_t = "rope_freqs.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "rope_freqs.weight", NULL });
	/* V = K in a sliding layer */
	e = (struct edit){ .drop_t = "blk.1.attn_v.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'blk.1.attn_v.weight' is "
			"missing", "sliding layer", NULL });
	/* an untied LM head */
	e = (struct edit){ .add = "output.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'output.weight'", NULL });
	cleanup();
}
END_TEST

/* What llama.cpp's gemma4 cannot be told is not written. */
START_TEST(gemma4_save_refusals)
{
	struct pccx_gemma_model *m = synth("tiny-gemma4");
	pccx_diag d = { 0 };
	char p[128];

	path_of(p, sizeof(p), "a.gguf");
	m->cfg.ple_vocab = 256;
	ck_assert_int_eq(pccx__gemma_save_gguf(m, NULL, p, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(d.msg, "ple_vocab differs from vocab") != NULL, "%s", d.msg);
	m->cfg.ple_vocab = 512;
	m->cfg.query_pre_attn_scalar = 32.0f;
	ck_assert_int_eq(pccx__gemma_save_gguf(m, NULL, p, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(d.msg, "scales q by 1") != NULL, "%s", d.msg);
	ck_assert_int_ne(access(p, F_OK), 0);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/* ---- Gemma 4 with experts ----------------------------------------------------------------- */

/*
 * tiny-gemma4-moe as llama.cpp's gemma4 loader creates its tensors (src/models/gemma4.cpp, ne
 * as there; written out from the preset's description in docs/reference.md): 6 layers, 2 and
 * 5 global (heads of 64, one KV head, no attn_v), the others sliding (heads of 32, two KV
 * heads), no KV sharing, no per-layer inputs; in every layer the router ffn_gate_inp {D,
 * n_expert} with its scale {D}, the norms pre_ffw_norm_2, post_ffw_norm_1, post_ffw_norm_2,
 * the 8 experts of width 64 as ffn_gate_up_exps {D, 2 * 64, 8} (the converter's form of
 * gate_up_proj) and ffn_down_exps {64, D, 8} with the per-expert scale {8} (the converter's
 * router.per_expert_scale).
 */
static void check_tensors_moe(const pccx_gguf *g)
{
	static const struct {
		const char *name;
		uint64_t ne0, ne1;	/* ne1 0: a vector (F32) */
	} glob[] = {
		{ "token_embd.weight", 128, 512 },
		{ "output_norm.weight", 128, 0 },
		{ "rope_freqs.weight", 32, 0 },
	};
	const pccx_gguf_tensor *t;
	uint64_t n = 0;
	uint32_t l;
	size_t i;
	char name[96];

	for (i = 0; i < sizeof(glob) / sizeof(glob[0]); i++, n++) {
		t = pccx_gguf_find_tensor(g, glob[i].name);
		ck_assert_msg(t != NULL, "tensor '%s' missing", glob[i].name);
		ck_assert_uint_eq(t->n_dims, glob[i].ne1 ? 2 : 1);
		ck_assert_uint_eq(t->ne[0], glob[i].ne0);
	}
	ck_assert_ptr_null(pccx_gguf_find_tensor(g, "per_layer_token_embd.weight"));
	for (l = 0; l < 6; l++) {
		bool global = l == 2 || l == 5;
		uint64_t hd = global ? 64 : 32, nkv = global ? 1 : 2;
		const struct {
			const char *name;
			uint64_t ne0, ne1, ne2;	/* ne1 0: a vector */
			uint32_t type;
			bool want;
		} list[] = {
			{ "attn_norm.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "attn_q.weight", 128, 4 * hd, 0, PCCX_GGML_Q4_0, true },
			{ "attn_k.weight", 128, nkv * hd, 0, PCCX_GGML_Q4_0, true },
			{ "attn_v.weight", 128, nkv * hd, 0, PCCX_GGML_Q4_0, !global },
			{ "attn_output.weight", 4 * hd, 128, 0, PCCX_GGML_Q4_0, true },
			{ "attn_q_norm.weight", hd, 0, 0, PCCX_GGML_F32, true },
			{ "attn_k_norm.weight", hd, 0, 0, PCCX_GGML_F32, true },
			{ "post_attention_norm.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "layer_output_scale.weight", 1, 0, 0, PCCX_GGML_F32, true },
			{ "ffn_norm.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "ffn_gate.weight", 128, 128, 0, PCCX_GGML_Q4_0, true },
			{ "ffn_up.weight", 128, 128, 0, PCCX_GGML_Q4_0, true },
			{ "ffn_down.weight", 128, 128, 0, PCCX_GGML_Q4_0, true },
			{ "post_ffw_norm.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "ffn_gate_inp.weight", 128, 8, 0, PCCX_GGML_F32, true },
			{ "ffn_gate_inp.scale", 128, 0, 0, PCCX_GGML_F32, true },
			{ "pre_ffw_norm_2.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "post_ffw_norm_1.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "post_ffw_norm_2.weight", 128, 0, 0, PCCX_GGML_F32, true },
			{ "ffn_gate_up_exps.weight", 128, 128, 8, PCCX_GGML_Q4_0, true },
			{ "ffn_down_exps.weight", 64, 128, 8, PCCX_GGML_Q4_0, true },
			{ "ffn_down_exps.scale", 8, 0, 0, PCCX_GGML_F32, true },
			{ "ffn_gate_exps.weight", 0, 0, 0, 0, false },
			{ "ffn_up_exps.weight", 0, 0, 0, 0, false },
		};

		for (i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
			snprintf(name, sizeof(name), "blk.%u.%s", l, list[i].name);
			t = pccx_gguf_find_tensor(g, name);
			if (!list[i].want) {
				ck_assert_msg(t == NULL, "'%s' is not a tensor of the layer", name);
				continue;
			}
			n++;
			ck_assert_msg(t != NULL, "tensor '%s' missing", name);
			ck_assert_uint_eq(t->n_dims, list[i].ne2 ? 3 : list[i].ne1 ? 2 : 1);
			ck_assert_uint_eq(t->ne[0], list[i].ne0);
			if (list[i].ne1)
				ck_assert_uint_eq(t->ne[1], list[i].ne1);
			if (list[i].ne2)
				ck_assert_uint_eq(t->ne[2], list[i].ne2);
			ck_assert_msg(t->type == list[i].type, "%s: type %u", name, t->type);
		}
	}
	ck_assert_uint_eq(pccx_gguf_n_tensors(g), n);
	ck_assert_uint_eq(n, 133);
}

/* tiny-gemma4-moe's keys as the converter writes them (conversion/base.py, gemma.py). */
static void check_keys_moe(const pccx_gguf *g)
{
	static const int64_t swa[6] = { 1, 1, 0, 1, 1, 0 };
	static const int64_t kv[6] = { 2, 2, 1, 2, 2, 1 };

	key_str(g, "general.architecture", "gemma4");
	key_u32(g, "gemma4.block_count", 6);
	key_u32(g, "gemma4.expert_count", 8);
	key_u32(g, "gemma4.expert_used_count", 2);
	key_u32(g, "gemma4.expert_feed_forward_length", 64);
	key_u32(g, "gemma4.feed_forward_length", 128);
	key_u32(g, "gemma4.embedding_length_per_layer_input", 0);
	key_u32(g, "gemma4.attention.shared_kv_layers", 0);
	key_u32(g, "gemma4.attention.key_length", 64);
	key_u32(g, "gemma4.attention.key_length_swa", 32);
	key_ints(g, "gemma4.attention.sliding_window_pattern", swa, 6);
	key_ints(g, "gemma4.attention.head_count_kv", kv, 6);
}

START_TEST(moe_layout)
{
	struct pccx_gemma_model *m;
	const struct pccx_gemma_layer_w *lw;
	const pccx_gguf_tensor *t;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	float row[128];
	char p[128];
	uint64_t rb;

	path_of(p, sizeof(p), "a.gguf");
	m = save_synth("tiny-gemma4-moe", p);
	ck_assert_msg(pccx_gguf_open(&g, p, &d) == 0, "%s", d.msg);
	check_keys_moe(g);
	check_tensors_moe(g);
	lw = &m->w.layer[4];
	/* the scales as they are: the router's and expert 0..7's */
	pccx__gemma_row_f32(m, lw->vec[PCCX_GEMMA_LV_ROUTER_SCALE], 0, row);
	ck_assert(!memcmp(pccx_gguf_find_tensor(g, "blk.4.ffn_gate_inp.scale")->data, row,
			  sizeof(float) * 128));
	pccx__gemma_row_f32(m, lw->vec[PCCX_GEMMA_LV_EXPERT_SCALE], 0, row);
	ck_assert(!memcmp(pccx_gguf_find_tensor(g, "blk.4.ffn_down_exps.scale")->data, row,
			  sizeof(float) * 8));
	/* router row 5 is expert 5's logit weights */
	pccx__gemma_row_f32(m, lw->moe_router, 5, row);
	t = pccx_gguf_find_tensor(g, "blk.4.ffn_gate_inp.weight");
	ck_assert(!memcmp(t->data + 5 * 128 * 4, row, sizeof(float) * 128));
	/* expert 3's up: rows 64..127 of its block of 128 in gate_up; its down: block 3 */
	t = pccx_gguf_find_tensor(g, "blk.4.ffn_gate_up_exps.weight");
	rb = 128 / 32 * 18;
	{
		float want[128], got[128];

		pccx__gemma_row_f32(m, lw->experts + 3 * 3 + 1, 10, want);
		ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 3 * 128 + 64 + 10, 1, got, &d), 0);
		ck_assert(!memcmp(want, got, sizeof(want)));
		pccx__gemma_row_f32(m, lw->experts + 3 * 3, 10, want);
		ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 3 * 128 + 10, 1, got, &d), 0);
		ck_assert(!memcmp(want, got, sizeof(want)));
		t = pccx_gguf_find_tensor(g, "blk.4.ffn_down_exps.weight");
		pccx__gemma_row_f32(m, lw->experts + 3 * 3 + 2, 100, want);
		ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 3 * 128 + 100, 1, got, &d), 0);
		ck_assert(!memcmp(want, got, sizeof(float) * 64));
	}
	ck_assert_uint_eq(t->nbytes, 8ull * 128 * (64 / 32 * 18));
	ck_assert_uint_eq(pccx_gguf_find_tensor(g, "blk.4.ffn_gate_up_exps.weight")->nbytes,
			  8ull * 128 * rb);
	pccx_gguf_close(g);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

/*
 * llama.cpp's other forms: gate and up in tensors of their own; no per-expert scale (1);
 * experts in another type (requantised, the error reported).
 */
START_TEST(moe_forms_load)
{
	struct pccx_gemma_model *m, *l;
	struct pccx_gemma_load_info info;
	pccx_diag d = { 0 };
	char p[128], x[128];
	struct edit e;
	float s[8];
	uint32_t i;

	path_of(p, sizeof(p), "a.gguf");
	path_of(x, sizeof(x), "x.gguf");
	m = save_synth("tiny-gemma4-moe", p);
	e = (struct edit){ .split = "blk.1.ffn_gate_up_exps.weight" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, &info, NULL, &d) == 0, "%s",
		      d.msg);
	same_model(m, l);
	ck_assert(info.q4.lossless);
	pccx__gemma_model_free(l);
	e = (struct edit){ .drop_t = "blk.3.ffn_down_exps.scale" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	pccx__gemma_row_f32(l, l->w.layer[3].vec[PCCX_GEMMA_LV_EXPERT_SCALE], 0, s);
	for (i = 0; i < 8; i++)
		ck_assert_float_eq(s[i], 1.0f);
	pccx__gemma_row_f32(m, m->w.layer[3].vec[PCCX_GEMMA_LV_EXPERT_SCALE], 0, s);
	ck_assert_float_ne(s[0], 1.0f);	/* the synthetic scale is not 1 */
	pccx__gemma_model_free(l);
	e = (struct edit){ .f32 = "blk.2.ffn_down_exps.weight" };
	rewrite(p, x, &e);
	ck_assert_msg(pccx__gemma_load_gguf(&l, x, m->cfg.max_ctx, &info, NULL, &d) == 0, "%s",
		      d.msg);
	ck_assert(!info.q4.lossless);
	ck_assert_double_lt(pccx_q4_error_rel_rms(&info.q4), 0.15);
	ck_assert_double_gt(info.q4.sum_sq_err, 0.0);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	cleanup();
}
END_TEST

START_TEST(moe_refusals)
{
	struct pccx_gemma_model *m;
	pccx_gguf *g;
	pccx_gguf_tensor wrong;
	pccx_diag d = { 0 };
	char p[128], x[128];
	struct edit e;

	path_of(p, sizeof(p), "a.gguf");
	path_of(x, sizeof(x), "x.gguf");
	m = save_synth("tiny-gemma4-moe", p);
	pccx__gemma_model_free(m);
	e = (struct edit){ .set = "gemma4.expert_used_count", .v = U32V(9) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'gemma4.expert_used_count' is 9, "
			"more than key 'gemma4.expert_count' (8)", NULL });
	e = (struct edit){ .drop = "gemma4.expert_used_count" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "'gemma4.expert_used_count' is "
			"missing", NULL });
	e = (struct edit){ .drop = "gemma4.expert_feed_forward_length" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){
			"'gemma4.expert_feed_forward_length' is missing", NULL });
	e = (struct edit){ .set = "gemma4.expert_count", .v = U32V(512) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'gemma4.expert_count' is 512",
			NULL });
	e = (struct edit){ .set = "gemma4.expert_count", .v = U32V(0) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.0.ffn_gate_inp.weight' is "
			"present", "'gemma4.expert_count' is 0", NULL });
	/* a width the experts' tensors do not have */
	e = (struct edit){ .set = "gemma4.expert_feed_forward_length", .v = U32V(32) };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.0.ffn_gate_up_exps.weight' has "
			"shape ne {128, 128, 8}, expected ne {128, 64, 8}", NULL });
	/* the down experts with gate_up's shape */
	ck_assert_msg(pccx_gguf_open(&g, p, &d) == 0, "%s", d.msg);
	wrong = *pccx_gguf_find_tensor(g, "blk.1.ffn_gate_up_exps.weight");
	e = (struct edit){ .repl = "blk.1.ffn_down_exps.weight", .repl_data = wrong.data,
			   .ne_of = &wrong };
	rewrite(p, x, &e);
	pccx_gguf_close(g);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.1.ffn_down_exps.weight' has "
			"shape ne {128, 128, 8}, expected ne {64, 128, 8}", NULL });
	/* a required tensor missing: the router's scale, an expert tensor, a norm */
	e = (struct edit){ .drop_t = "blk.2.ffn_gate_inp.scale" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "blk.2.ffn_gate_inp.scale", NULL });
	e = (struct edit){ .drop_t = "blk.5.ffn_down_exps.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "blk.5.ffn_down_exps.weight",
			NULL });
	e = (struct edit){ .drop_t = "blk.0.ffn_gate_up_exps.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "blk.0.ffn_gate_exps.weight",
			NULL });
	e = (struct edit){ .drop_t = "blk.3.post_ffw_norm_1.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_NOT_FOUND, (const char *const[]){ "blk.3.post_ffw_norm_1.weight",
			NULL });
	/* one layer without experts */
	e = (struct edit){ .drop_t = "blk.4.ffn_gate_inp.weight" };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_UNSUPPORTED, (const char *const[]){ "'blk.4.ffn_gate_inp.weight' is "
			"missing", "a layer without experts", NULL });
	/* the router with the wrong expert count */
	e = (struct edit){ .cut = "blk.1.ffn_gate_inp.weight", .rows = 4 };
	rewrite(p, x, &e);
	refused(x, PCCX_ERR_FORMAT, (const char *const[]){ "'blk.1.ffn_gate_inp.weight' has "
			"shape ne {128, 4}, expected ne {128, 8}", NULL });
	cleanup();
}
END_TEST

static Suite *family_suite(void)
{
	Suite *s = suite_create("gguf_family");
	TCase *tc = tcase_create("families");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, round_trip_and_decode, 0, 6);
	tcase_add_loop_test(tc, llama_cpp_layout, 0, 3);
	tcase_add_test(tc, norms_as_stored);
	tcase_add_test(tc, converter_forms_load);
	tcase_add_test(tc, q_scalar_derivation);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, save_refusals);
	tcase_add_test(tc, gemma4_layout);
	tcase_add_test(tc, gemma4_forms_load);
	tcase_add_test(tc, gemma4_refusals);
	tcase_add_test(tc, gemma4_save_refusals);
	tcase_add_test(tc, moe_layout);
	tcase_add_test(tc, moe_forms_load);
	tcase_add_test(tc, moe_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(family_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
