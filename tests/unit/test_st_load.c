// SPDX-License-Identifier: MIT
/*
 * Loading a Hugging Face safetensors checkpoint into the reference model: a synthetic tiny
 * model is written as BF16 (as Hugging Face ships Gemma 3n) or F32 tensors with HF names plus
 * a config.json, loaded back with pccx__gemma_load_safetensors and compared (config,
 * requantisation error, the FP32 tensors bit for bit, logits of a step). The same for the
 * tiny Gemma 1, 2 and 3 presets in each config.json form (text-only, layer_types or
 * sliding_window_pattern, multimodal Gemma 3 with either prefix of its language model), their
 * norms stored as Hugging Face stores them (w, the model computing 1 + w); tiny-gemma4 from a
 * gemma4_text or multimodal gemma4 config (norms as w, its towers skipped); tiny-gemma4-moe
 * with its experts as Hugging Face fuses them; and the refusals.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_ref.h"
#include "session.h"
#include "gemma_st.h"
#include "hf_config.h"
#include "pccx_num.h"

static char tmpdir[128];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pccx-stload-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	DIR *dd = opendir(tmpdir);
	struct dirent *e;
	char p[512];

	if (!dd)
		return;
	while ((e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
		unlink(p);
	}
	closedir(dd);
	rmdir(tmpdir);
}

/* HF name of a model tensor ("blk.3.attn_q.weight" -> model.language_model.layers.3...). */
static void hf_name(const char *name, char *buf, size_t size)
{
	char key[PCCX_GEMMA_NAME_MAX];
	const char *s = name;
	uint32_t layer = 0, part = 0;
	size_t n;

	if (!strncmp(s, "blk.", 4)) {
		char *e;

		layer = (uint32_t)strtoul(s + 4, &e, 10);
		s = e + 1;
	}
	n = strlen(s) - strlen(".weight");
	if (s[n - 2] == '.') {
		part = (uint32_t)(s[n - 1] - '0');
		n -= 2;
	}
	snprintf(key, sizeof(key), "%.*s", (int)n, s);
	ck_assert_int_ge(pccx_tensor_map_by_key(key), 0);
	ck_assert_int_eq(pccx_tensor_map_st_name(pccx_tensor_map_by_key(key), layer, part, buf,
						 size), 0);
}

static void write_config(const struct pccx_gemma_model *m)
{
	const struct pccx_gemma_config *c = &m->cfg;
	char p[256];
	FILE *f;
	uint32_t l;

	snprintf(p, sizeof(p), "%s/config.json", tmpdir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"architectures\": [\"Gemma3nForConditionalGeneration\"],\n"
		   " \"text_config\": {\"model_type\": \"gemma3n_text\",\n"
		   "  \"hidden_size\": %u, \"num_hidden_layers\": %u, \"intermediate_size\": %u,\n"
		   "  \"num_attention_heads\": %u, \"num_key_value_heads\": %u, \"head_dim\": %u,\n"
		   "  \"vocab_size\": %u, \"vocab_size_per_layer_input\": %u,\n"
		   "  \"hidden_size_per_layer_input\": %u, \"sliding_window\": %u,\n"
		   "  \"rope_theta\": %.9g, \"rope_local_base_freq\": %.9g, \"rms_norm_eps\": %.9g,\n"
		   "  \"altup_num_inputs\": 4, \"altup_active_idx\": 0, \"laurel_rank\": %u,\n"
		   "  \"num_kv_shared_layers\": %u, \"final_logit_softcapping\": %.9g,\n"
		   "  \"layer_types\": [",
		c->d_model, c->n_layers, c->d_ffn, c->n_heads, c->n_kv_heads, c->head_dim,
		c->vocab, c->ple_vocab, c->d_ple, c->window, (double)c->theta_global,
		(double)c->theta_local, (double)c->eps, c->laurel_rank, c->n_kv_shared,
		(double)c->softcap);
	for (l = 0; l < c->n_layers; l++)
		fprintf(f, "%s\"%s\"", l ? ", " : "",
			m->layers[l].kind == PCCX_ATTN_GLOBAL ? "full_attention"
							       : "sliding_attention");
	fprintf(f, "],\n  \"activation_sparsity_pattern\": [");
	for (l = 0; l < c->n_layers; l++)
		fprintf(f, "%s%s", l ? ", " : "", m->layers[l].sparse ? "0.95" : "0.0");
	fprintf(f, "]}}\n");
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Every tensor of m (dequantised; as BF16, or F32 when f32) into model.safetensors, except
 * `skip` (HF name).
 */
static void write_checkpoint(const struct pccx_gemma_model *m, const char *skip, bool f32)
{
	size_t hcap = 1 << 20, hlen = 0;
	char *hdr = malloc(hcap), name[128], p[256];
	const char *dtype = f32 ? "F32" : "BF16";
	unsigned esize = f32 ? 4 : 2;
	uint64_t off = 0, n8;
	float *row = malloc(sizeof(float) * 65536);
	uint16_t *h = malloc(sizeof(uint16_t) * 65536);
	uint32_t t, r, i;
	FILE *f;

	ck_assert_ptr_nonnull(hdr);
	ck_assert_ptr_nonnull(row);
	ck_assert_ptr_nonnull(h);
	hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (t = 0; t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];
		uint64_t bytes = (uint64_t)T->rows * T->cols * esize;

		hf_name(T->name, name, sizeof(name));
		if (skip && !strcmp(name, skip))
			continue;
		if (T->rows == 1)
			hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, ",\"%s\":{\"dtype\":"
						 "\"%s\",\"shape\":[%u],", name, dtype, T->cols);
		else
			hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, ",\"%s\":{\"dtype\":"
						 "\"%s\",\"shape\":[%u,%u],", name, dtype,
						 T->rows, T->cols);
		hlen += (size_t)snprintf(hdr + hlen, hcap - hlen,
					 "\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
					 (unsigned long long)(off + bytes));
		off += bytes;
		ck_assert_uint_lt(hlen, hcap - 256);
	}
	hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "}");
	while (hlen % 8)
		hdr[hlen++] = ' ';
	snprintf(p, sizeof(p), "%s/model.safetensors", tmpdir);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	n8 = hlen;	/* little-endian host */
	ck_assert_int_eq(fwrite(&n8, 8, 1, f), 1);
	ck_assert_int_eq(fwrite(hdr, 1, hlen, f), hlen);
	for (t = 0; t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];

		hf_name(T->name, name, sizeof(name));
		if (skip && !strcmp(name, skip))
			continue;
		ck_assert_uint_le(T->cols, 65536);
		for (r = 0; r < T->rows; r++) {
			pccx__gemma_row_f32(m, (int32_t)t, r, row);
			if (f32) {	/* little-endian host */
				ck_assert_int_eq(fwrite(row, 4, T->cols, f), T->cols);
				continue;
			}
			for (i = 0; i < T->cols; i++)
				h[i] = pccx__f32_to_bf16(row[i]);
			ck_assert_int_eq(fwrite(h, 2, T->cols, f), T->cols);
		}
	}
	ck_assert_int_eq(fclose(f), 0);
	free(hdr);
	free(row);
	free(h);
}

static struct pccx_gemma_model *tiny(void)
{
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__gemma_config_preset("tiny", &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(m, 7, 1, &d) == 0, "%s", d.msg);
	return m;
}

static void step_logits(struct pccx_gemma_model *m, uint32_t tok, float *logits)
{
	struct pccx_ref_exec *x;
	struct pccx_gemma_session *s;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__ref_exec_create(&x, 1, PCCX_KERN_AUTO, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_session_create(&s, m, pccx__ref_exec_ops(), x, &d) == 0, "%s",
		      d.msg);
	ck_assert_msg(pccx__gemma_session_step(s, tok, logits, &d) == 0, "%s", d.msg);
	pccx__gemma_session_free(s);
	pccx__ref_exec_free(x);
}

static double cosine(const float *a, const float *b, uint32_t n)
{
	double dot = 0, na = 0, nb = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		dot += (double)a[i] * b[i];
		na += (double)a[i] * a[i];
		nb += (double)b[i] * b[i];
	}
	return dot / sqrt(na * nb);
}

/* Cosine between the logits two models give for one decode step of the same token. */
static double step_cosine(struct pccx_gemma_model *m, struct pccx_gemma_model *l)
{
	float *a = malloc(sizeof(float) * m->cfg.vocab), *b = malloc(sizeof(float) * m->cfg.vocab);
	double cos;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	step_logits(m, 17, a);
	step_logits(l, 17, b);
	cos = cosine(a, b, m->cfg.vocab);
	free(a);
	free(b);
	return cos;
}

START_TEST(round_trip)
{
	struct pccx_gemma_model *m = tiny(), *l = NULL;
	struct pccx_gemma_config want;
	pccx_q4_error err;
	pccx_diag d = { 0 };
	char buf[160];
	float *ra, *rb;
	struct pccx_gemma_model *l2 = NULL;
	double cos;
	uint32_t t, r, i;
	uint64_t n_f32 = 0, n_inexact = 0;

	make_tmpdir();
	write_config(m);
	write_checkpoint(m, NULL, false);
	ck_assert_msg(pccx__gemma_load_safetensors(&l, tmpdir, m->cfg.max_ctx, &err, &d) == 0,
		      "%s",
		      d.msg);
	/* the configuration, but for the name */
	want = m->cfg;
	memcpy(want.name, l->cfg.name, sizeof(want.name));
	ck_assert_int_eq(memcmp(&want, &l->cfg, sizeof(want)), 0);
	ck_assert_int_eq(l->n_t, m->n_t);
	ck_assert_uint_eq(l->size, m->size);

	/* the requantisation error: reported, small, and per tensor */
	ck_assert(!err.lossless);
	ck_assert_uint_gt(err.n, 0);
	ck_assert_msg(pccx_q4_error_rel_rms(&err) < 0.12, "%s",
		      pccx_q4_error_format(&err, buf, sizeof(buf)));
	ra = malloc(sizeof(float) * 4096);
	rb = malloc(sizeof(float) * 4096);
	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(rb);
	for (t = 0; t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];
		double se = 0, sr = 0;

		ck_assert_str_eq(T->name, l->t[t].name);
		ck_assert_uint_le(T->cols, 4096);
		for (r = 0; r < T->rows; r++) {
			pccx__gemma_row_f32(m, (int32_t)t, r, ra);
			pccx__gemma_row_f32(l, (int32_t)t, r, rb);
			for (i = 0; i < T->cols; i++) {
				float bf = pccx__bf16_to_f32(pccx__f32_to_bf16(ra[i]));

				se += ((double)ra[i] - rb[i]) * ((double)ra[i] - rb[i]);
				sr += (double)ra[i] * ra[i];
				if (T->fmt == PCCX_WFMT_Q4)
					continue;
				/* FP32 tensors hold exactly the checkpoint's BF16 value */
				ck_assert_msg(pccx_f32_bits(rb[i]) == pccx_f32_bits(bf),
					      "%s row %u col %u: 0x%08x, checkpoint 0x%08x",
					      T->name, r, i, pccx_f32_bits(rb[i]),
					      pccx_f32_bits(bf));
				n_f32++;
				n_inexact += pccx_f32_bits(bf) != pccx_f32_bits(ra[i]);
			}
		}
		if (T->fmt == PCCX_WFMT_Q4)
			ck_assert_msg(se <= 0.15 * 0.15 * sr, "%s: relative rms %g", T->name,
				      sqrt(se / (sr ? sr : 1)));
	}
	/* the synthetic FP32 weights use their full mantissa: BF16 rounds most of them */
	ck_assert_uint_gt(n_f32, 0);
	ck_assert_uint_gt(n_inexact * 2, n_f32);
	free(ra);
	free(rb);

	/* one decode step: logits close */
	cos = step_cosine(m, l);
	fprintf(stderr, "synthetic -> BF16 -> Q4: %s, logit cosine %.4f\n",
		pccx_q4_error_format(&err, buf, sizeof(buf)), cos);
	/* an ~8 % weight perturbation through 10 layers: only loosely similar logits */
	ck_assert_msg(cos > 0.5, "logit cosine %g", cos);

	/* the loaded model, saved and loaded again: its Q4 grid survives BF16 */
	rm_tmpdir();
	make_tmpdir();
	write_config(l);
	write_checkpoint(l, NULL, false);
	ck_assert_msg(pccx__gemma_load_safetensors(&l2, tmpdir, m->cfg.max_ctx, &err, &d) == 0,
		      "%s", d.msg);
	cos = step_cosine(l2, l);
	fprintf(stderr, "second round trip: %s, logit cosine %.6f\n",
		pccx_q4_error_format(&err, buf, sizeof(buf)), cos);
	ck_assert_msg(cos > 0.99, "logit cosine %g", cos);
	pccx__gemma_model_free(l2);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

/* An F32 checkpoint: the FP32 tensors arrive bit for bit, the Q4 ones are requantised. */
START_TEST(round_trip_f32)
{
	struct pccx_gemma_model *m = tiny(), *l = NULL;
	pccx_q4_error err;
	pccx_diag d = { 0 };
	char buf[160];
	float *ra, *rb;
	uint32_t t, r;
	double cos;

	make_tmpdir();
	write_config(m);
	write_checkpoint(m, NULL, true);
	ck_assert_msg(pccx__gemma_load_safetensors(&l, tmpdir, m->cfg.max_ctx, &err, &d) == 0,
		      "%s", d.msg);
	ck_assert_int_eq(l->n_t, m->n_t);
	ck_assert_uint_eq(l->size, m->size);
	fprintf(stderr, "synthetic -> F32 -> Q4: %s\n",
		pccx_q4_error_format(&err, buf, sizeof(buf)));
	ra = malloc(sizeof(float) * 4096);
	rb = malloc(sizeof(float) * 4096);
	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(rb);
	for (t = 0; t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];
		double se = 0, sr = 0;
		uint32_t i;

		ck_assert_uint_le(T->cols, 4096);
		for (r = 0; r < T->rows; r++) {
			pccx__gemma_row_f32(m, (int32_t)t, r, ra);
			pccx__gemma_row_f32(l, (int32_t)t, r, rb);
			if (T->fmt != PCCX_WFMT_Q4) {
				ck_assert_msg(memcmp(ra, rb, sizeof(float) * T->cols) == 0,
					      "%s row %u differs", T->name, r);
				continue;
			}
			for (i = 0; i < T->cols; i++) {
				se += ((double)ra[i] - rb[i]) * ((double)ra[i] - rb[i]);
				sr += (double)ra[i] * ra[i];
			}
		}
		if (T->fmt == PCCX_WFMT_Q4)
			ck_assert_msg(se <= 0.15 * 0.15 * sr, "%s: relative rms %g", T->name,
				      sqrt(se / (sr ? sr : 1)));
	}
	free(ra);
	free(rb);
	/* the sparse layers' q4c copies of W_down are made from the loaded rows */
	for (r = 0; r < l->cfg.n_layers; r++) {
		const struct pccx_gemma_layer_w *lw = &l->w.layer[r];
		const struct pccx_gemma_tensor *T;
		struct pccx_wshape qc;
		uint64_t bytes;
		uint8_t *want;

		ck_assert(lw->down_q4c_ok == l->layers[r].sparse);
		if (!lw->down_q4c_ok)
			continue;
		T = &l->t[lw->ffn_down];
		qc = (struct pccx_wshape){ T->rows, T->cols, PCCX_WFMT_Q4C, true };
		bytes = pccx__wstream_port_offset(&qc, PCCX_WSTREAM_PORTS);
		want = malloc(bytes);
		ck_assert_ptr_nonnull(want);
		pccx__q4c_pack(l->data + T->offset, T->rows, T->cols, want);
		ck_assert(!memcmp(want, l->data + lw->down_q4c, bytes));
		free(want);
	}
	cos = step_cosine(m, l);
	fprintf(stderr, "F32 round trip: logit cosine %.6f\n", cos);
	ck_assert_msg(cos > 0.5, "logit cosine %g", cos);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

START_TEST(missing_tensor)
{
	static const char gone[] = "model.language_model.layers.2.mlp.up_proj.weight";
	struct pccx_gemma_model *m = tiny(), *l = NULL;
	pccx_diag d = { 0 };
	char p[256];

	make_tmpdir();
	write_config(m);
	write_checkpoint(m, gone, false);
	snprintf(p, sizeof(p), "%s/model.safetensors", tmpdir);
	ck_assert_int_eq(pccx__gemma_load_safetensors(&l, p, 0, NULL, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_ptr_null(l);
	ck_assert_msg(strstr(d.msg, gone) != NULL, "%s", d.msg);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

START_TEST(unsupported_config)
{
	struct pccx_gemma_model *m = tiny(), *l = NULL;
	pccx_diag d = { 0 };
	char p[256];
	FILE *f;

	make_tmpdir();
	write_checkpoint(m, NULL, false);
	snprintf(p, sizeof(p), "%s/config.json", tmpdir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"hidden_size\": 128, \"num_hidden_layers\": 2, \"intermediate_size\": "
		   "[512, 256], \"num_attention_heads\": 8, \"num_key_value_heads\": 2, "
		   "\"head_dim\": 32, \"vocab_size\": 512, \"vocab_size_per_layer_input\": 480, \"num_kv_shared_layers\": 0, "
		   "\"activation_sparsity_pattern\": null, \"layer_types\": "
		   "[\"sliding_attention\", \"full_attention\"]}\n");
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_ne(pccx__gemma_load_safetensors(&l, tmpdir, 0, NULL, &d), 0);
	ck_assert_ptr_null(l);
	ck_assert_msg(strstr(d.msg, "intermediate_size") != NULL, "%s", d.msg);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

/* ---- Gemma 1, 2 and 3 checkpoints --------------------------------------------------------- */

/*
 * Hugging Face's name of a model tensor of Gemma 1, 2 or 3 (modeling_gemma*.py), written out
 * here rather than taken from the loader's map; Gemma 1's pre-FFN norm is its
 * post_attention_layernorm.
 */
static void hf_plain_name(const char *name, enum pccx_family f, const char *prefix, char *buf,
			  size_t size)
{
	static const struct {
		const char *ours, *hf;
	} map[] = {
		{ "attn_norm", "input_layernorm" },
		{ "attn_q", "self_attn.q_proj" }, { "attn_k", "self_attn.k_proj" },
		{ "attn_v", "self_attn.v_proj" }, { "attn_output", "self_attn.o_proj" },
		{ "attn_q_norm", "self_attn.q_norm" }, { "attn_k_norm", "self_attn.k_norm" },
		{ "post_attention_norm", "post_attention_layernorm" },
		{ "ffn_norm", "pre_feedforward_layernorm" },
		{ "post_ffw_norm", "post_feedforward_layernorm" },
		{ "ffn_gate", "mlp.gate_proj" }, { "ffn_up", "mlp.up_proj" },
		{ "ffn_down", "mlp.down_proj" },
		/* Gemma 4 (modeling_gemma4.py) */
		{ "inp_gate", "per_layer_input_gate" }, { "proj", "per_layer_projection" },
		{ "post_norm", "post_per_layer_input_norm" },
		/* Gemma 4's experts (Gemma4TextDecoderLayer, Gemma4TextRouter) */
		{ "ffn_gate_inp", "router.proj" },
		{ "post_ffw_norm_1", "post_feedforward_layernorm_1" },
		{ "pre_ffw_norm_2", "pre_feedforward_layernorm_2" },
		{ "post_ffw_norm_2", "post_feedforward_layernorm_2" },
	};
	static const struct {
		const char *ours, *hf;
	} glob[] = {
		{ "token_embd.weight", "embed_tokens.weight" },
		{ "output_norm.weight", "norm.weight" },
		{ "per_layer_token_embd.weight", "embed_tokens_per_layer.weight" },
		{ "per_layer_model_proj.weight", "per_layer_model_projection.weight" },
		{ "per_layer_proj_norm.weight", "per_layer_projection_norm.weight" },
	};
	char key[64];
	unsigned layer;
	size_t i;

	for (i = 0; i < sizeof(glob) / sizeof(glob[0]); i++) {
		if (!strcmp(name, glob[i].ours)) {
			snprintf(buf, size, "%s%s", prefix, glob[i].hf);
			return;
		}
	}
	ck_assert_int_eq(sscanf(name, "blk.%u.%63[a-z_0-9].weight", &layer, key), 2);
	if (!strcmp(key, "layer_output_scale")) {	/* a buffer: no ".weight" */
		snprintf(buf, size, "%slayers.%u.layer_scalar", prefix, layer);
		return;
	}
	/* the router's parameters of its own: no ".weight" */
	if (!strcmp(key, "ffn_gate_inp_scale") || !strcmp(key, "ffn_exp_scale")) {
		snprintf(buf, size, "%slayers.%u.router.%s", prefix, layer,
			 key[4] == 'g' ? "scale" : "per_expert_scale");
		return;
	}
	for (i = 0; i < sizeof(map) / sizeof(map[0]) && strcmp(map[i].ours, key); i++)
		;
	ck_assert_uint_lt(i, sizeof(map) / sizeof(map[0]));
	snprintf(buf, size, "%slayers.%u.%s.weight", prefix, layer,
		 f == PCCX_FAMILY_GEMMA && !strcmp(key, "ffn_norm") ? "post_attention_layernorm"
								     : map[i].hf);
}

/* A tensor of the checkpoint that the loader must not read (a vision tower's). */
struct extra {
	const char *name;
	uint32_t n;
};

/* One tensor of a checkpoint: rows of model tensors, in order. */
struct hf_out {
	char name[160];
	uint32_t nd;
	uint64_t shape[3];
	int32_t src[2 * 256];	/* model tensors whose rows it holds, in order */
	uint32_t n_src;
	bool norm;		/* stored as w with the model computing 1 + w */
};

/* The model tensor named `name` (written out from the model's naming, blk.N.<what>.weight). */
static int32_t tensor_named(const struct pccx_gemma_model *m, const char *name)
{
	uint32_t t;

	for (t = 0; t < m->n_t; t++)
		if (!strcmp(m->t[t].name, name))
			return (int32_t)t;
	return -1;
}

/*
 * Gemma 4's experts as Hugging Face's Gemma4TextExperts holds them (modeling_gemma4.py):
 * experts.gate_up_proj (E, 2I, D), each expert's gate rows then its up rows, and
 * experts.down_proj (E, D, I); written when `name` is a layer's first expert gate.
 */
static uint32_t hf_experts(const struct pccx_gemma_model *m, const char *name, const char *prefix,
			   struct hf_out *o)
{
	unsigned layer, e;
	char k[96];
	int32_t t;

	if (sscanf(name, "blk.%u.ffn_%31[a-z_].%u.weight", &layer, k, &e) != 3 ||
	    (strcmp(k, "gate_exps") && strcmp(k, "up_exps") && strcmp(k, "down_exps")))
		return 0;
	if (strcmp(k, "gate_exps") || e)
		return UINT32_MAX;	/* another expert tensor: in the first's */
	for (e = 0; e < 2; e++) {
		memset(&o[e], 0, sizeof(o[e]));
		snprintf(o[e].name, sizeof(o[e].name), "%slayers.%u.experts.%s", prefix, layer,
			 e ? "down_proj" : "gate_up_proj");
	}
	for (e = 0;; e++) {
		snprintf(k, sizeof(k), "blk.%u.ffn_gate_exps.%u.weight", layer, e);
		t = tensor_named(m, k);
		if (t < 0)
			break;
		o[0].src[o[0].n_src++] = t;
		snprintf(k, sizeof(k), "blk.%u.ffn_up_exps.%u.weight", layer, e);
		o[0].src[o[0].n_src++] = tensor_named(m, k);
		snprintf(k, sizeof(k), "blk.%u.ffn_down_exps.%u.weight", layer, e);
		o[1].src[o[1].n_src++] = tensor_named(m, k);
	}
	ck_assert_uint_gt(e, 0);
	o[0].nd = o[1].nd = 3;
	o[0].shape[0] = o[1].shape[0] = e;
	o[0].shape[1] = 2 * m->t[o[0].src[0]].rows;
	o[0].shape[2] = m->t[o[0].src[0]].cols;
	o[1].shape[1] = m->t[o[1].src[0]].rows;
	o[1].shape[2] = m->t[o[1].src[0]].cols;
	return 2;
}

/*
 * The checkpoint's tensors for m: each under Hugging Face's name, one model tensor each
 * (a vector [cols], a matrix [rows, cols]) but Gemma 4's experts (hf_experts).
 */
static uint32_t hf_outs(const struct pccx_gemma_model *m, const char *prefix, struct hf_out *o)
{
	uint32_t t, n = 0, k;

	for (t = 0; t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];

		k = hf_experts(m, T->name, prefix, o + n);
		if (k == UINT32_MAX)
			continue;
		if (k) {
			n += k;
			continue;
		}
		memset(&o[n], 0, sizeof(o[n]));
		hf_plain_name(T->name, m->cfg.family, prefix, o[n].name, sizeof(o[n].name));
		o[n].nd = T->rows == 1 ? 1 : 2;
		o[n].shape[0] = T->rows == 1 ? T->cols : T->rows;
		o[n].shape[1] = T->cols;
		o[n].src[o[n].n_src++] = (int32_t)t;
		/* Gemma 4's RMSNorm multiplies by w: its norms are stored as they are */
		o[n].norm = strstr(T->name, "norm.weight") != NULL &&
			    m->cfg.family != PCCX_FAMILY_GEMMA4;
		n++;
	}
	return n;
}

/*
 * Every tensor of m as F32 under Hugging Face's names, the norms as Hugging Face stores them
 * (w with the model computing 1 + w: the multiplier minus 1, exact for multipliers in
 * [0.5, 2]), except `skip`, `cut_rows` rows cut from `cut`; then the extra tensors.
 */
static void write_plain_checkpoint(const struct pccx_gemma_model *m, const char *prefix,
				   const char *skip, const char *cut, const struct extra *extra,
				   size_t n_extra)
{
	size_t hcap = 1 << 20, hlen = 0;
	char *hdr = malloc(hcap), p[256];
	uint64_t off = 0, n8, elems, cut_n;
	float *row = malloc(sizeof(float) * 65536);
	struct hf_out *o = malloc(sizeof(*o) * m->n_t);
	uint32_t n, k, j, r, i, d;
	FILE *f;

	ck_assert(hdr && row && o);
	n = hf_outs(m, prefix, o);
	hlen += (size_t)snprintf(hdr, hcap, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (k = 0; k < n; k++) {
		if (skip && !strcmp(o[k].name, skip))
			continue;
		if (cut && !strcmp(o[k].name, cut))
			o[k].shape[0] -= 32;
		hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, ",\"%s\":{\"dtype\":\"F32\","
					 "\"shape\":[", o[k].name);
		for (elems = 1, d = 0; d < o[k].nd; d++) {
			elems *= o[k].shape[d];
			hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "%s%llu", d ? "," : "",
						 (unsigned long long)o[k].shape[d]);
		}
		hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "],\"data_offsets\":[%llu,%llu]}",
					 (unsigned long long)off,
					 (unsigned long long)(off + 4 * elems));
		off += 4 * elems;
	}
	for (i = 0; i < n_extra; i++) {
		hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, ",\"%s\":{\"dtype\":\"F32\","
					 "\"shape\":[%u],\"data_offsets\":[%llu,%llu]}",
					 extra[i].name, extra[i].n, (unsigned long long)off,
					 (unsigned long long)(off + 4ull * extra[i].n));
		off += 4ull * extra[i].n;
	}
	hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "}");
	while (hlen % 8)
		hdr[hlen++] = ' ';
	snprintf(p, sizeof(p), "%s/model.safetensors", tmpdir);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	n8 = hlen;	/* little-endian host */
	ck_assert_int_eq(fwrite(&n8, 8, 1, f), 1);
	ck_assert_int_eq(fwrite(hdr, 1, hlen, f), hlen);
	for (k = 0; k < n; k++) {
		if (skip && !strcmp(o[k].name, skip))
			continue;
		cut_n = cut && !strcmp(o[k].name, cut) ? 32 : 0;
		for (j = 0; j < o[k].n_src; j++) {
			const struct pccx_gemma_tensor *T = &m->t[o[k].src[j]];

			for (r = 0; r < T->rows - cut_n; r++) {
				pccx__gemma_row_f32(m, o[k].src[j], r, row);
				for (i = 0; o[k].norm && i < T->cols; i++) {
					ck_assert(row[i] >= 0.5f && row[i] <= 2.0f);
					row[i] -= 1.0f;
				}
				ck_assert_int_eq(fwrite(row, 4, T->cols, f), T->cols);
			}
		}
	}
	memset(row, 0, sizeof(float) * 65536);
	for (i = 0; i < n_extra; i++)
		ck_assert_int_eq(fwrite(row, 4, extra[i].n, f), extra[i].n);
	ck_assert_int_eq(fclose(f), 0);
	free(hdr);
	free(row);
	free(o);
}

/* How the config.json of a test is written. */
struct plain_cfg {
	const char *model_type;	/* "gemma3" nests the text model in text_config */
	const char *extra;	/* more text-model keys ("" or starting with ", ") */
	bool layer_types;	/* write layer_types from the model's layers */
	bool pattern;		/* write Gemma 3's sliding_window_pattern */
	bool vision;		/* a vision_config beside text_config */
};

/* num_key_value_heads to write instead of the model's (0: the model's) */
static uint32_t kv_heads_written;

static void write_plain_config(const struct pccx_gemma_model *m, const struct plain_cfg *pc)
{
	const struct pccx_gemma_config *c = &m->cfg;
	bool nest = !strcmp(pc->model_type, "gemma3");
	char p[256];
	FILE *f;
	uint32_t l;

	snprintf(p, sizeof(p), "%s/config.json", tmpdir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"model_type\": \"%s\",\n", pc->model_type);
	if (nest)
		fprintf(f, " %s\"text_config\": {\"model_type\": \"gemma3_text\",\n",
			pc->vision ? "\"vision_config\": {\"model_type\": \"siglip_vision_model\", "
				     "\"hidden_size\": 64},\n " : "");
	fprintf(f, "  \"hidden_size\": %u, \"num_hidden_layers\": %u, \"intermediate_size\": %u,\n"
		   "  \"num_attention_heads\": %u, \"num_key_value_heads\": %u, \"head_dim\": %u,\n"
		   "  \"vocab_size\": %u, \"rms_norm_eps\": %.9g, \"rope_theta\": %.9g",
		c->d_model, c->n_layers, c->d_ffn, c->n_heads,
		kv_heads_written ? kv_heads_written : c->n_kv_heads, c->head_dim, c->vocab,
		(double)c->eps, (double)c->theta_global);
	if (c->family == PCCX_FAMILY_GEMMA)
		fprintf(f, ",\n  \"max_position_embeddings\": %u, \"hidden_act\": \"gelu\"",
			c->window);
	else
		fprintf(f, ",\n  \"max_position_embeddings\": 8192, \"sliding_window\": %u,\n"
			   "  \"query_pre_attn_scalar\": %.9g, \"hidden_activation\": "
			   "\"gelu_pytorch_tanh\"", c->window, (double)c->query_pre_attn_scalar);
	if (c->family == PCCX_FAMILY_GEMMA2)
		fprintf(f, ",\n  \"final_logit_softcapping\": %.9g, \"attn_logit_softcapping\": %.9g",
			(double)c->softcap, (double)c->attn_softcap);
	if (c->family == PCCX_FAMILY_GEMMA3)
		fprintf(f, ",\n  \"rope_local_base_freq\": %.9g, \"final_logit_softcapping\": null,"
			   " \"attn_logit_softcapping\": null,\n  \"rope_scaling\": %s",
			(double)c->theta_local, c->rope_factor_global > 0 ?
			"{\"rope_type\": \"linear\", \"factor\": 8.0}" : "null");
	if (pc->pattern) {
		unsigned period = c->global_period;

		fprintf(f, ",\n  \"sliding_window_pattern\": %u", period);
	}
	if (pc->layer_types) {
		fprintf(f, ",\n  \"layer_types\": [");
		for (l = 0; l < c->n_layers; l++)
			fprintf(f, "%s\"%s\"", l ? ", " : "",
				m->layers[l].kind == PCCX_ATTN_GLOBAL ? "full_attention"
								       : "sliding_attention");
		fprintf(f, "]");
	}
	fprintf(f, "%s}%s\n", pc->extra ? pc->extra : "", nest ? "}" : "");
	ck_assert_int_eq(fclose(f), 0);
}

static struct pccx_gemma_model *preset(const char *name)
{
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__gemma_config_preset(name, &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(m, 7, 1, &d) == 0, "%s", d.msg);
	return m;
}

/*
 * The loaded model against the preset: the same configuration (but for the name), the FP32
 * tensors bit for bit (so the norms came back as 1 + w), the Q4 tensors requantised from
 * their exact FP32 values within the usual error, and close logits.
 */
static void same_as_preset(struct pccx_gemma_model *m, struct pccx_gemma_model *l)
{
	struct pccx_gemma_config want = m->cfg;
	float *ra = malloc(sizeof(float) * 4096), *rb = malloc(sizeof(float) * 4096);
	uint32_t t, r, i, n_norms = 0;

	ck_assert(ra && rb);
	memcpy(want.name, l->cfg.name, sizeof(want.name));
	ck_assert_int_eq(l->cfg.family, m->cfg.family);
	ck_assert_uint_eq(l->cfg.global_period, m->cfg.global_period);
	ck_assert_float_eq(l->cfg.query_pre_attn_scalar, m->cfg.query_pre_attn_scalar);
	ck_assert_float_eq(l->cfg.rope_factor_global, m->cfg.rope_factor_global);
	ck_assert_int_eq(memcmp(&want, &l->cfg, sizeof(want)), 0);
	ck_assert_uint_eq(l->n_t, m->n_t);
	ck_assert_uint_eq(l->size, m->size);
	for (t = 0; t < m->n_t; t++) {
		const struct pccx_gemma_tensor *T = &m->t[t];
		double se = 0, sr = 0;

		ck_assert_str_eq(T->name, l->t[t].name);
		for (r = 0; r < T->rows; r++) {
			pccx__gemma_row_f32(m, (int32_t)t, r, ra);
			pccx__gemma_row_f32(l, (int32_t)t, r, rb);
			if (T->fmt != PCCX_WFMT_Q4) {
				ck_assert_msg(!memcmp(ra, rb, sizeof(float) * T->cols),
					      "%s row %u differs", T->name, r);
				n_norms += strstr(T->name, "norm") != NULL;
				continue;
			}
			for (i = 0; i < T->cols; i++) {
				se += ((double)ra[i] - rb[i]) * ((double)ra[i] - rb[i]);
				sr += (double)ra[i] * ra[i];
			}
		}
		if (T->fmt == PCCX_WFMT_Q4)
			ck_assert_msg(se <= 0.15 * 0.15 * sr, "%s: relative rms %g", T->name,
				      sqrt(se / (sr ? sr : 1)));
	}
	ck_assert_uint_gt(n_norms, m->cfg.n_layers);
	free(ra);
	free(rb);
	ck_assert_msg(step_cosine(m, l) > 0.5, "logit cosine");
}

static struct pccx_gemma_model *load_ok(const struct pccx_gemma_model *m, pccx_diag *d)
{
	struct pccx_gemma_model *l = NULL;

	memset(d, 0, sizeof(*d));
	ck_assert_msg(pccx__gemma_load_safetensors(&l, tmpdir, m->cfg.max_ctx, NULL, d) == 0,
		      "%s", d->msg);
	return l;
}

START_TEST(family_checkpoints)
{
	static const struct {
		const char *preset;
		struct plain_cfg c;
		const char *prefix;
	} cases[] = {
		{ "tiny-gemma", { "gemma", NULL, false, false, false }, "model." },
		{ "tiny-gemma2", { "gemma2", NULL, false, false, false }, "model." },
		{ "tiny-gemma2", { "gemma2", NULL, true, false, false }, "model." },
		{ "tiny-gemma3", { "gemma3_text", NULL, false, true, false }, "model." },
		{ "tiny-gemma3", { "gemma3_text", NULL, true, false, false }, "model." },
		{ "tiny-gemma3", { "gemma3", NULL, true, true, false }, "language_model.model." },
		{ "tiny-gemma3", { "gemma3", NULL, false, false, false }, "model.language_model." },
	};
	struct pccx_gemma_model *m = preset(cases[_i].preset), *l;
	pccx_diag d;

	make_tmpdir();
	write_plain_config(m, &cases[_i].c);
	write_plain_checkpoint(m, cases[_i].prefix, NULL, NULL, NULL, 0);
	l = load_ok(m, &d);
	same_as_preset(m, l);
	ck_assert_str_eq(d.msg, "");	/* no vision tower: no notice */
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

/* A multimodal Gemma 3: the language model loads, the vision tower is skipped with a notice. */
START_TEST(gemma3_vision_skipped)
{
	static const struct extra tower[] = {
		{ "vision_tower.vision_model.embeddings.patch_embedding.weight", 64 },
		{ "multi_modal_projector.mm_soft_emb_norm.weight", 64 },
	};
	static const struct plain_cfg pc = { "gemma3", NULL, false, false, true };
	struct pccx_gemma_model *m = preset("tiny-gemma3"), *l;
	pccx_diag d;

	make_tmpdir();
	write_plain_config(m, &pc);
	write_plain_checkpoint(m, "model.language_model.", NULL, NULL, tower, 2);
	l = load_ok(m, &d);
	same_as_preset(m, l);
	ck_assert_msg(strstr(d.msg, "vision tower and projector (2 tensors) are not loaded") !=
		      NULL, "%s", d.msg);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

static void plain_refused(const char *preset_name, const struct plain_cfg *pc, const char *skip,
			  const char *cut, int rc, const char *const *want)
{
	struct pccx_gemma_model *m = preset(preset_name), *l = NULL;
	pccx_diag d = { 0 };

	make_tmpdir();
	write_plain_config(m, pc);
	write_plain_checkpoint(m, "model.", skip, cut, NULL, 0);
	ck_assert_int_eq(pccx__gemma_load_safetensors(&l, tmpdir, 0, NULL, &d), rc);
	ck_assert_ptr_null(l);
	for (; *want; want++)
		ck_assert_msg(strstr(d.msg, *want) != NULL, "'%s' not in: %s", *want, d.msg);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}

START_TEST(family_refusals)
{
	/* a model type of another architecture */
	plain_refused("tiny-gemma2", &(struct plain_cfg){ "llama", NULL, false, false, false },
		      NULL, NULL, PCCX_ERR_UNSUPPORTED,
		      (const char *const[]){ "model_type", "'llama' is not supported", NULL });
	/* heads that do not group */
	kv_heads_written = 3;
	plain_refused("tiny-gemma2", &(struct plain_cfg){ "gemma2", NULL, false, false, false },
		      NULL, NULL, PCCX_ERR_FORMAT, (const char *const[]){
		      "num_attention_heads 4 is not a multiple of num_key_value_heads 3", NULL });
	kv_heads_written = 0;
	/* an activation the device does not compute */
	plain_refused("tiny-gemma", &(struct plain_cfg){ "gemma", ", \"hidden_activation\": "
							 "\"silu\"", false, false, false },
		      NULL, NULL, PCCX_ERR_UNSUPPORTED,
		      (const char *const[]){ "hidden_activation", "'silu'", NULL });
	/* RoPE scaling other than linear, and linear scaling of Gemma 2's local layers */
	plain_refused("tiny-gemma2", &(struct plain_cfg){ "gemma2", ", \"rope_scaling\": "
							  "{\"rope_type\": \"yarn\", \"factor\": 4}",
							  false, false, false },
		      NULL, NULL, PCCX_ERR_UNSUPPORTED,
		      (const char *const[]){ "rope_scaling", "'yarn'", NULL });
	plain_refused("tiny-gemma2", &(struct plain_cfg){ "gemma2", ", \"rope_scaling\": "
							  "{\"type\": \"linear\", \"factor\": 4}",
							  false, false, false },
		      NULL, NULL, PCCX_ERR_UNSUPPORTED,
		      (const char *const[]){ "rope_scaling: factor 4", NULL });
	/* layer_types that disagree with sliding_window_pattern name the layer */
	plain_refused("tiny-gemma3", &(struct plain_cfg){ "gemma3_text", ", "
							  "\"sliding_window_pattern\": 3", true,
							  false, false },
		      NULL, NULL, PCCX_ERR_FORMAT, (const char *const[]){ "layer_types[2]",
		      "layer 2 is sliding_attention, sliding_window_pattern 3 says full_attention",
		      NULL });
	/* a missing tensor, a tensor of the wrong shape */
	plain_refused("tiny-gemma", &(struct plain_cfg){ "gemma", NULL, false, false, false },
		      "model.layers.1.post_attention_layernorm.weight", NULL, PCCX_ERR_NOT_FOUND,
		      (const char *const[]){ "'model.layers.1.post_attention_layernorm.weight' "
		      "(blk.1.ffn_norm.weight): missing", NULL });
	plain_refused("tiny-gemma3", &(struct plain_cfg){ "gemma3_text", NULL, false, false,
							  false },
		      NULL, "model.layers.2.mlp.up_proj.weight", PCCX_ERR_FORMAT,
		      (const char *const[]){ "'model.layers.2.mlp.up_proj.weight': shape "
		      "[480, 128], expected [512, 128]", NULL });
}
END_TEST

/* config.json refusals that name the key (the text model of each family). */
START_TEST(family_config_refusals)
{
	static const struct {
		const char *json, *want[3];
		int rc;
	} cases[] = {
		{ "{\"model_type\": \"gemma2\", \"hidden_size\": 128, \"num_hidden_layers\": 2, "
		  "\"intermediate_size\": 256, \"num_attention_heads\": 4, "
		  "\"num_key_value_heads\": 2, \"vocab_size\": 512}",
		  { "head_dim", NULL }, PCCX_ERR_FORMAT },
		{ "{\"model_type\": \"gemma3\", \"vision_config\": {}}",
		  { "model_type", "without a text_config", NULL }, PCCX_ERR_FORMAT },
		{ "{\"model_type\": \"gemma\", \"hidden_size\": 128, \"num_hidden_layers\": 2, "
		  "\"intermediate_size\": 256, \"num_attention_heads\": 4, "
		  "\"num_key_value_heads\": 2, \"head_dim\": 32, \"vocab_size\": 512, "
		  "\"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
		  { "layer_types[1]", "layer 1: Gemma 1 has no sliding-window layers", NULL },
		  PCCX_ERR_UNSUPPORTED },
		{ "{\"model_type\": \"gemma2\", \"hidden_size\": 128, \"num_hidden_layers\": 4, "
		  "\"intermediate_size\": 256, \"num_attention_heads\": 4, "
		  "\"num_key_value_heads\": 2, \"head_dim\": 32, \"vocab_size\": 512, "
		  "\"rms_norm_eps\": 0}",
		  { "rms_norm_eps", NULL }, PCCX_ERR_RANGE },
	};
	pccx_hf_config c;
	struct pccx_hf_family x;
	pccx_diag d = { 0 };
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(pccx__hf_config_parse(cases[i].json, strlen(cases[i].json),
						       "config.json", &c, &x, &d), cases[i].rc);
		for (k = 0; cases[i].want[k]; k++)
			ck_assert_msg(strstr(d.msg, cases[i].want[k]) != NULL, "'%s' not in: %s",
				      cases[i].want[k], d.msg);
	}
}
END_TEST

/* A layer pattern no period gives: refused naming the layer when the model is built. */
START_TEST(family_pattern_refused)
{
	struct pccx_gemma_model *m = preset("tiny-gemma2"), *l = NULL;
	pccx_diag d = { 0 };
	char p[256];
	FILE *f;

	make_tmpdir();
	write_plain_checkpoint(m, "model.", NULL, NULL, NULL, 0);
	snprintf(p, sizeof(p), "%s/config.json", tmpdir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"model_type\": \"gemma2\", \"hidden_size\": 128, \"num_hidden_layers\": 6, "
		   "\"intermediate_size\": 384, \"num_attention_heads\": 4, "
		   "\"num_key_value_heads\": 2, \"head_dim\": 32, \"vocab_size\": 512, "
		   "\"sliding_window\": 16, \"query_pre_attn_scalar\": 32, \"layer_types\": "
		   "[\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
		   "\"sliding_attention\", \"sliding_attention\", \"full_attention\"]}\n");
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(pccx__gemma_load_safetensors(&l, tmpdir, 0, NULL, &d),
			 PCCX_ERR_UNSUPPORTED);
	ck_assert_ptr_null(l);
	ck_assert_msg(strstr(d.msg, "layer_types: layer 3 is sliding_attention") != NULL, "%s",
		      d.msg);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

/* ---- Gemma 4 ------------------------------------------------------------------------------ */

/*
 * tiny-gemma4's config.json as Hugging Face writes a Gemma4TextConfig (model_type
 * "gemma4_text"), or nested in a Gemma4Config ("gemma4") with vision and audio configs;
 * `extra` adds text-model keys, `types` replaces layer_types (NULL: the model's).
 */
static void write_g4_config(const struct pccx_gemma_model *m, bool nest, const char *extra,
			    const char *types)
{
	const struct pccx_gemma_config *c = &m->cfg;
	char p[256], moe[160];
	FILE *f;
	uint32_t l;

	/* the experts as Gemma4TextConfig says them (the 26B A4B's keys) */
	if (c->n_experts)
		snprintf(moe, sizeof(moe), ", \"enable_moe_block\": true, \"num_experts\": %u,\n"
			 "  \"top_k_experts\": %u, \"moe_intermediate_size\": %u", c->n_experts,
			 c->n_experts_used, c->d_expert);
	else if (extra && strstr(extra, "enable_moe_block"))
		moe[0] = 0;
	else
		snprintf(moe, sizeof(moe), ", \"enable_moe_block\": false");
	snprintf(p, sizeof(p), "%s/config.json", tmpdir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	if (nest)
		fprintf(f, "{\"model_type\": \"gemma4\", \"vision_config\": {\"hidden_size\": 64},\n"
			   " \"audio_config\": {\"hidden_size\": 64},\n"
			   " \"text_config\": {\"model_type\": \"gemma4_text\",\n");
	else
		fprintf(f, "{\"model_type\": \"gemma4_text\",\n");
	fprintf(f, "  \"hidden_size\": %u, \"num_hidden_layers\": %u, \"intermediate_size\": %u,\n"
		   "  \"num_attention_heads\": %u, \"num_key_value_heads\": %u,\n"
		   "  \"num_global_key_value_heads\": %u, \"head_dim\": %u, \"global_head_dim\": %u,\n"
		   "  \"vocab_size\": %u, \"vocab_size_per_layer_input\": %u,\n"
		   "  \"hidden_size_per_layer_input\": %u, \"sliding_window\": %u,\n"
		   "  \"num_kv_shared_layers\": %u, \"use_double_wide_mlp\": %s,\n"
		   "  \"attention_k_eq_v\": %s%s,\n"
		   "  \"final_logit_softcapping\": %.9g, \"rms_norm_eps\": %.9g,\n"
		   "  \"hidden_activation\": \"gelu_pytorch_tanh\", \"max_position_embeddings\": 131072,\n"
		   "  \"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"default\", "
		   "\"rope_theta\": %.9g},\n    \"full_attention\": {\"rope_type\": \"proportional\", "
		   "\"partial_rotary_factor\": %.9g, \"rope_theta\": %.9g}}%s,\n  \"layer_types\": ",
		c->d_model, c->n_layers, c->d_ffn, c->n_heads, c->n_kv_heads, c->n_kv_heads_global,
		c->head_dim, c->head_dim_global, c->vocab, c->d_ple ? c->ple_vocab : c->vocab,
		c->d_ple, c->window, c->n_kv_shared, c->double_wide_mlp ? "true" : "false",
		c->k_eq_v ? "true" : "false", moe,
		(double)c->softcap, (double)c->eps,
		(double)c->theta_local, (double)c->rope_partial_global, (double)c->theta_global,
		extra ? extra : "");
	if (types) {
		fprintf(f, "%s", types);
	} else {
		fprintf(f, "[");
		for (l = 0; l < c->n_layers; l++)
			fprintf(f, "%s\"%s\"", l ? ", " : "",
				m->layers[l].kind == PCCX_ATTN_GLOBAL ? "full_attention"
								       : "sliding_attention");
		fprintf(f, "]");
	}
	fprintf(f, "}%s\n", nest ? "}" : "");
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * tiny-gemma4 from a Hugging Face checkpoint: its config.json (root or nested) and tensors
 * under model. or model.language_model.; the norms stored as w; the vision and audio towers
 * of the multimodal form skipped with a notice, and the k/v projections Hugging Face may keep
 * in KV-sharing layers ignored.
 */
START_TEST(gemma4_checkpoint)
{
	static const struct extra towers[] = {
		{ "model.vision_tower.encoder.layers.0.mlp.up_proj.weight", 64 },
		{ "model.audio_tower.layers.0.feed_forward.weight", 64 },
		{ "model.language_model.layers.6.self_attn.k_proj.weight", 64 },
	};
	struct pccx_gemma_model *m = preset("tiny-gemma4"), *l;
	bool nest = _i == 1;
	pccx_diag d;

	make_tmpdir();
	write_g4_config(m, nest, NULL, NULL);
	write_plain_checkpoint(m, nest ? "model.language_model." : "model.", NULL, NULL,
			       nest ? towers : NULL, nest ? 3 : 0);
	l = load_ok(m, &d);
	same_as_preset(m, l);
	if (nest)
		ck_assert_msg(strstr(d.msg, "vision and audio towers and their projections (2 "
				     "tensors) are not loaded") != NULL, "%s", d.msg);
	else
		ck_assert_str_eq(d.msg, "");
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

static void g4_refused(const char *extra, const char *types, const char *skip, int rc,
		       const char *const *want)
{
	struct pccx_gemma_model *m = preset("tiny-gemma4"), *l = NULL;
	pccx_diag d = { 0 };

	make_tmpdir();
	write_g4_config(m, false, extra, types);
	write_plain_checkpoint(m, "model.", skip, NULL, NULL, 0);
	ck_assert_int_eq(pccx__gemma_load_safetensors(&l, tmpdir, 0, NULL, &d), rc);
	ck_assert_ptr_null(l);
	for (; *want; want++)
		ck_assert_msg(strstr(d.msg, *want) != NULL, "'%s' not in: %s", *want, d.msg);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}

START_TEST(gemma4_refusals)
{
	/* experts without their count */
	g4_refused(", \"enable_moe_block\": true", NULL, NULL, PCCX_ERR_FORMAT,
		   (const char *const[]){ "num_experts", NULL });
	/* no layer pattern; one no period gives */
	g4_refused(NULL, "null", NULL, PCCX_ERR_FORMAT,
		   (const char *const[]){ "layer_types: missing", NULL });
	g4_refused(NULL, "[\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
		   "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
		   "\"sliding_attention\", \"full_attention\"]", NULL, PCCX_ERR_UNSUPPORTED,
		   (const char *const[]){ "layer_types: layer 3 is sliding_attention", NULL });
	/* the layer scalar is required */
	g4_refused(NULL, NULL, "model.layers.4.layer_scalar", PCCX_ERR_NOT_FOUND,
		   (const char *const[]){ "'model.layers.4.layer_scalar' "
		   "(blk.4.layer_output_scale.weight): missing", NULL });
}
END_TEST

/*
 * tiny-gemma4-moe from a Hugging Face checkpoint (enable_moe_block, no per-layer inputs): the
 * preset's configuration, every FP32 tensor (router, its scales, the norms) bit for bit, the
 * experts cut from gate_up_proj and down_proj requantised within the usual error; a
 * per-layer input width of null reads as 0 too.
 */
START_TEST(gemma4_moe_checkpoint)
{
	struct pccx_gemma_model *m = preset("tiny-gemma4-moe"), *l;
	pccx_diag d;

	ck_assert_uint_eq(m->cfg.n_experts, 8);
	ck_assert_uint_eq(m->cfg.d_ple, 0);
	make_tmpdir();
	write_g4_config(m, _i == 1, NULL, NULL);
	write_plain_checkpoint(m, _i == 1 ? "model.language_model." : "model.", NULL, NULL,
			       NULL, 0);
	l = load_ok(m, &d);
	same_as_preset(m, l);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}
END_TEST

/*
 * A tiny-gemma4-moe checkpoint refused: its config.json saying num_experts, top_k_experts,
 * moe_intermediate_size (`ov`, 0: the preset's) over the preset's tensors but `skip`.
 */
static void moe_refused(const uint32_t ov[3], const char *skip, int rc, const char *const *want)
{
	struct pccx_gemma_model *m = preset("tiny-gemma4-moe"), *l = NULL;
	pccx_diag d = { 0 };

	make_tmpdir();
	write_plain_checkpoint(m, "model.", skip, NULL, NULL, 0);
	m->cfg.n_experts = ov[0] ? ov[0] : m->cfg.n_experts;
	m->cfg.n_experts_used = ov[1] ? ov[1] : m->cfg.n_experts_used;
	m->cfg.d_expert = ov[2] ? ov[2] : m->cfg.d_expert;
	write_g4_config(m, false, NULL, NULL);
	ck_assert_int_eq(pccx__gemma_load_safetensors(&l, tmpdir, 0, NULL, &d), rc);
	ck_assert_ptr_null(l);
	for (; *want; want++)
		ck_assert_msg(strstr(d.msg, *want) != NULL, "'%s' not in: %s", *want, d.msg);
	pccx__gemma_model_free(m);
	rm_tmpdir();
}

START_TEST(gemma4_moe_refusals)
{
	static const uint32_t keep[3] = { 0, 0, 0 };

	moe_refused((const uint32_t[3]){ 0, 9, 0 }, NULL, PCCX_ERR_FORMAT,
		    (const char *const[]){ "top_k_experts", "9: more than num_experts 8", NULL });
	moe_refused((const uint32_t[3]){ 0, 0, 48 }, NULL, PCCX_ERR_UNSUPPORTED,
		    (const char *const[]){ "moe_intermediate_size", "48: a multiple of 32", NULL });
	moe_refused((const uint32_t[3]){ 300, 0, 0 }, NULL, PCCX_ERR_RANGE,
		    (const char *const[]){ "num_experts", NULL });
	/* the experts narrower than the tensors: gate_up_proj is named with both shapes */
	moe_refused((const uint32_t[3]){ 0, 0, 32 }, NULL, PCCX_ERR_FORMAT,
		    (const char *const[]){ "'model.layers.0.experts.gate_up_proj': shape "
		    "[8, 128, 128], expected [8, 64, 128]", NULL });
	/* fewer experts than the checkpoint has: its first tensor with experts is named */
	moe_refused((const uint32_t[3]){ 4, 0, 0 }, NULL, PCCX_ERR_FORMAT,
		    (const char *const[]){ "'model.layers.0.router.per_expert_scale': shape [8], "
		    "expected [4]", NULL });
	moe_refused(keep, "model.layers.3.router.scale", PCCX_ERR_NOT_FOUND,
		    (const char *const[]){ "'model.layers.3.router.scale' "
		    "(blk.3.ffn_gate_inp_scale.weight): missing", NULL });
	moe_refused(keep, "model.layers.1.experts.down_proj", PCCX_ERR_NOT_FOUND,
		    (const char *const[]){ "'model.layers.1.experts.down_proj'", "missing", NULL });
	moe_refused(keep, "model.layers.0.post_feedforward_layernorm_2.weight", PCCX_ERR_NOT_FOUND,
		    (const char *const[]){ "'model.layers.0.post_feedforward_layernorm_2.weight'",
		    NULL });
	moe_refused(keep, "model.layers.5.router.per_expert_scale", PCCX_ERR_NOT_FOUND,
		    (const char *const[]){ "'model.layers.5.router.per_expert_scale'", NULL });
}
END_TEST

/* Gemma 4 config.json refusals that name the key. */
START_TEST(gemma4_config_refusals)
{
	static const char *const base =
		"\"hidden_size\": 128, \"num_hidden_layers\": 2, \"intermediate_size\": 256, "
		"\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 32, "
		"\"vocab_size\": 512, \"hidden_size_per_layer_input\": 32, "
		"\"layer_types\": [\"sliding_attention\", \"full_attention\"]";
	static const struct {
		const char *pre, *post, *want[3];
		int rc;
	} cases[] = {
		{ "{\"model_type\": \"gemma4\", \"vision_config\": {}}", "",
		  { "'gemma4' without a text_config", NULL }, PCCX_ERR_FORMAT },
		{ "{\"model_type\": \"gemma4_text\", ", ", \"rope_parameters\": "
		  "{\"full_attention\": {\"rope_type\": \"yarn\"}}}",
		  { "rope_parameters.full_attention.rope_type", "'yarn' is not supported", NULL },
		  PCCX_ERR_UNSUPPORTED },
		{ "{\"model_type\": \"gemma4_text\", ", ", \"rope_parameters\": "
		  "{\"sliding_attention\": {\"partial_rotary_factor\": 0.5}}}",
		  { "partial_rotary_factor", "only the global layers", NULL },
		  PCCX_ERR_UNSUPPORTED },
		{ "{\"model_type\": \"gemma4_text\", ", ", \"num_global_key_value_heads\": 3}",
		  { "not a multiple of num_key_value_heads 2 (global: 3)", NULL },
		  PCCX_ERR_FORMAT },
		{ "{\"model_type\": \"gemma4_text\", ", ", \"use_double_wide_mlp\": 1}",
		  { "use_double_wide_mlp", NULL }, PCCX_ERR_FORMAT },
		{ "{\"model_type\": \"gemma4_text\", \"hidden_size\": 128}", "",
		  { "num_hidden_layers", NULL }, PCCX_ERR_FORMAT },
	};
	pccx_hf_config c;
	struct pccx_hf_family x;
	pccx_diag d = { 0 };
	char json[1024];
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].post[0])
			snprintf(json, sizeof(json), "%s%s%s", cases[i].pre, base, cases[i].post);
		else
			snprintf(json, sizeof(json), "%s", cases[i].pre);
		memset(&d, 0, sizeof(d));
		ck_assert_int_eq(pccx__hf_config_parse(json, strlen(json), "config.json", &c, &x,
						       &d), cases[i].rc);
		for (k = 0; cases[i].want[k]; k++)
			ck_assert_msg(strstr(d.msg, cases[i].want[k]) != NULL, "'%s' not in: %s",
				      cases[i].want[k], d.msg);
	}
}
END_TEST

static Suite *st_load_suite(void)
{
	Suite *s = suite_create("st_load");
	TCase *tc = tcase_create("load");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, round_trip_f32);
	tcase_add_test(tc, missing_tensor);
	tcase_add_test(tc, unsupported_config);
	tcase_add_loop_test(tc, family_checkpoints, 0, 7);
	tcase_add_test(tc, gemma3_vision_skipped);
	tcase_add_test(tc, family_refusals);
	tcase_add_test(tc, family_config_refusals);
	tcase_add_test(tc, family_pattern_refused);
	tcase_add_loop_test(tc, gemma4_checkpoint, 0, 2);
	tcase_add_test(tc, gemma4_refusals);
	tcase_add_loop_test(tc, gemma4_moe_checkpoint, 0, 2);
	tcase_add_test(tc, gemma4_moe_refusals);
	tcase_add_test(tc, gemma4_config_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(st_load_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
