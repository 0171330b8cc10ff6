// SPDX-License-Identifier: MIT
/*
 * Loading a Hugging Face safetensors checkpoint into the reference model: a synthetic tiny
 * model is written as BF16 (as Hugging Face ships Gemma 3n) or F32 tensors with HF names plus
 * a config.json, loaded back with pccx__gemma_load_safetensors and compared (config,
 * requantisation error, the FP32 tensors bit for bit, logits of a step).
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

static Suite *st_load_suite(void)
{
	Suite *s = suite_create("st_load");
	TCase *tc = tcase_create("load");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, round_trip_f32);
	tcase_add_test(tc, missing_tensor);
	tcase_add_test(tc, unsupported_config);
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
