// SPDX-License-Identifier: MIT
/*
 * pccx ref: run the bit-exact reference of the Gemma 3n decoder on the host.
 *
 *   pccx ref --config tiny --seed 1 -p "Hello" -n 32 [--oracle] [--dump-stages DIR]
 *
 * The decode step is the NPU op program of reference/gemma3n_graph.c executed by the
 * reference NPU (reference/exec_ref.c); with --oracle the FP64 oracle decodes the same token
 * sequence and every stage is compared.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "compare.h"
#include "diag.h"
#include "exec_ref.h"
#include "gemma3n.h"
#include "gemma3n_gguf.h"
#include "oracle.h"
#include "pccx/sampler.h"
#include "pccx/tokenizer.h"
#include "tokenizer_gguf.h"

struct ref_args {
	const char *config, *model, *prompt, *tokenizer, *dump, *save;
	uint64_t seed, wseed, n, max_ctx, threads;
	bool have_wseed, oracle, ignore_eos, quiet;
	enum pccx_kern_impl kernel;
	pccx_sampler_config sc;
};

#define A(f, type) PCCX_AT(struct ref_args, f, type)
static const struct pccx_opt ref_opts[] = {
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(config, const char *), "NAME", "model shape",
		 .values = pccx__gemma3n_config_names),
	PCCX_OPT(NULL, 'm', PCCX_OPT_PATH, A(model, const char *), "MODEL",
		 "a Gemma 3n GGUF (llama.cpp layout; Q4_0 loads losslessly,\n"
		 "other types are requantised and the error reported)"),
	PCCX_OPT("save-gguf", 0, PCCX_OPT_PATH, A(save, const char *), "FILE",
		 "write the model (and the tokenizer if given) as GGUF"),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S",
		 "seed of the synthetic weights and the sampler (default 1)"),
	PCCX_OPT("weights-seed", 0, PCCX_OPT_UINT, A(wseed, uint64_t), "S",
		 "seed of the synthetic weights only", .seen_at = A(have_wseed, bool) + 1),
	PCCX_OPT(NULL, 'p', PCCX_OPT_STR, A(prompt, const char *), "TEXT",
		 "prompt (default \"Hello\")"),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N", "tokens to generate (default 16)",
		 .max = 1000000),
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, A(tokenizer, const char *), "FILE",
		 "Hugging Face tokenizer.json (needs a model with its\n"
		 "vocabulary, e.g. tiny-vocab); else bytes are ids 3..258"),
	PCCX_OPT("ignore-eos", 0, PCCX_OPT_FLAG, A(ignore_eos, bool), NULL,
		 "keep going after the end-of-sequence id"),
	PCCX_OPT("max-ctx", 0, PCCX_OPT_UINT, A(max_ctx, uint64_t), "N",
		 "KV-cache positions of global layers (default: the config's)", .min = 1,
		 .max = 65535),
	PCCX_OPT("oracle", 0, PCCX_OPT_FLAG, A(oracle, bool), NULL,
		 "also run the FP64 oracle; report per-stage cosine / errors,\n"
		 "top-1 agreement and KL divergence of the logits"),
	PCCX_OPT("dump-stages", 0, PCCX_OPT_PATH, A(dump, const char *), "DIR",
		 "write every stage tensor (raw BF16 LE) and DIR/index.tsv"),
	PCCX_OPT("threads", 0, PCCX_OPT_UINT, A(threads, uint64_t), "N",
		 "host threads (default: all CPUs)", .min = 1, .max = 256),
	PCCX_OPT("kernel", 0, PCCX_OPT_CUSTOM, A(kernel, enum pccx_kern_impl), "K",
		 "Q4 host kernel", .parse = pccx_cli_parse_kernel,
		 .values = pccx_cli_kernel_names),
	PCCX_OPT(NULL, 'q', PCCX_OPT_FLAG, A(quiet, bool), NULL, "no timing line on stderr"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd ref_cmd = {
	.name = "ref",
	.usage = "(--config NAME | -m MODEL) [options]",
	.about = "Decode with the bit-exact reference of the Gemma 3n NPU pipeline and stream\n"
		 "the generated text to stdout.\n",
	.opts = ref_opts,
	.more_title = "sampler (docs/sampling.md; seeded by --seed)",
	.more = pccx_cli_sampler_opts,
	.more_at = offsetof(struct ref_args, sc),
};

/* The oracle comparison of one stage kind, over layers and positions. */
struct agg {
	char kind[48];
	uint32_t count;
	double min_cos, max_rel, max_abs;
};

/* What --oracle reports. */
struct summary {
	struct agg agg[64];
	size_t na;
	uint32_t top1_same, compared;
	double kl_sum, kl_max;
};

/* A decode run: what it holds, and what the stage callback needs. */
struct ref_run {
	const struct ref_args *a;
	struct pccx_gemma3n_config cfg;
	struct pccx_gemma3n_model *m;
	pccx_tokenizer *tk;
	struct pccx_ref_exec *x;
	struct pccx_gemma3n_session *s;
	struct pccx_oracle *orc;
	pccx_sampler *smp;
	struct pccx_cmp *cmp;
	FILE *index;
	uint32_t pos;
	int32_t *ids, *hist, eos;
	size_t n_ids, n_hist, printed;
	float *logits;
	double *ologits;
	struct summary sum;
};

/* The tokenizer's keys in the GGUF pccx__gemma3n_save_gguf writes. */
static int tokenizer_keys(pccx_gguf_writer *w, const void *tk, pccx_diag *d)
{
	return pccx__tokenizer_save_gguf(w, tk, d);
}

/* Shared with pccx synth (cli.h). */
int pccx_cli_save_gguf(const struct pccx_gemma3n_model *m, const pccx_tokenizer *tk,
		       const char *path, pccx_diag *d)
{
	const struct pccx_gguf_keys keys = { tokenizer_keys, tk };

	return pccx__gemma3n_save_gguf(m, tk ? &keys : NULL, path, d);
}

/* Stage callback of the reference: dump to files and/or keep for the oracle comparison. */
static int on_stage(void *user, const char *name, const uint16_t *data, uint32_t rows,
		    uint32_t cols, uint32_t stride)
{
	struct ref_run *r = user;
	uint32_t i, j;

	if (r->a->dump) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/p%05u.%s.bf16", r->a->dump, r->pos, name);
		f = fopen(path, "wb");
		if (!f) {
			fprintf(stderr, "pccx: ref: %s: %s\n", path, strerror(errno));
			return PCCX_ERR_IO;
		}
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				uint16_t h = data[(size_t)i * stride + j];

				fputc(h & 0xFF, f);
				fputc(h >> 8, f);
			}
		}
		if (fclose(f)) {
			fprintf(stderr, "pccx: ref: %s: write failed\n", path);
			return PCCX_ERR_IO;
		}
		fprintf(r->index, "%u\t%s\t%u\t%u\tp%05u.%s.bf16\n", r->pos, name, rows, cols,
			r->pos, name);
	}
	if (r->cmp)
		return pccx__cmp_ref_stage(r->cmp, name, data, rows, cols, stride);
	return PCCX_OK;
}

/* Stage kind: the name without its "L<n>." layer prefix. */
static const char *kind_of(const char *name)
{
	if (name[0] == 'L' && name[1] >= '0' && name[1] <= '9') {
		const char *dot = strchr(name, '.');

		if (dot)
			return dot + 1;
	}
	return name;
}

static void aggregate(struct summary *sum, const struct pccx_stage_stat *s, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		const char *kind = kind_of(s[i].name);
		struct agg *a;

		for (k = 0; k < sum->na; k++)
			if (!strcmp(sum->agg[k].kind, kind))
				break;
		a = &sum->agg[k];
		if (k == sum->na) {
			if (sum->na == 64)
				continue;
			snprintf(a->kind, sizeof(a->kind), "%s", kind);
			a->count = 0;
			a->min_cos = 1.0;
			a->max_rel = a->max_abs = 0.0;
			sum->na++;
		}
		a->count++;
		a->min_cos = s[i].cos < a->min_cos ? s[i].cos : a->min_cos;
		a->max_rel = s[i].rel_rms > a->max_rel ? s[i].rel_rms : a->max_rel;
		a->max_abs = s[i].max_abs > a->max_abs ? s[i].max_abs : a->max_abs;
	}
}

static void print_summary(const struct summary *sum)
{
	size_t i;

	fprintf(stderr,
		"\noracle comparison over %u positions (reference vs FP64 oracle):\n"
		"  %-18s %7s %10s %10s %10s\n",
		sum->compared, "stage", "count", "min cos", "max relRMS", "max |err|");
	for (i = 0; i < sum->na; i++)
		fprintf(stderr, "  %-18s %7u %10.6f %10.4f %10.4g\n", sum->agg[i].kind,
			sum->agg[i].count, sum->agg[i].min_cos, sum->agg[i].max_rel,
			sum->agg[i].max_abs);
	fprintf(stderr,
		"  next-token top-1 agreement %u/%u, KL(oracle||ref) mean %.3g max %.3g"
		" nats\n",
		sum->top1_same, sum->compared,
		sum->kl_sum / (sum->compared ? sum->compared : 1), sum->kl_max);
}

/* The model: a GGUF (with its tokenizer unless --tokenizer), or synthetic weights. */
static int load_model(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	double t0 = pccx_cli_now();
	int rc;

	if (a->model) {
		struct pccx_gemma3n_load_info li;
		pccx_gguf *g = NULL;
		char buf[160];

		rc = pccx__gemma3n_load_gguf(&r->m, a->model, (uint32_t)a->max_ctx, &li,
					     a->tokenizer ? NULL : &g, d);
		if (!rc && g)
			rc = pccx__tokenizer_load_gguf(g, &r->tk, d);
		pccx_gguf_close(g);
		if (rc)
			return rc;
		r->cfg = r->m->cfg;
		if (!a->quiet)
			fprintf(stderr,
				"pccx ref: %s: %u layers, D %u, vocab %u, %.1f MB in device "
				"layout in %.2f s; Q4 conversion %s; %llu AltUp coefficients "
				"clamped\n",
				a->model, r->cfg.n_layers, r->cfg.d_model, r->cfg.vocab,
				(double)r->m->size / 1e6, pccx_cli_now() - t0,
				pccx_q4_error_format(&li.q4, buf, sizeof(buf)),
				(unsigned long long)li.clipped);
		return PCCX_OK;
	}
	rc = pccx_cli_config(a->config, a->max_ctx, &r->cfg, d);
	if (!rc)
		rc = pccx_cli_synth(&r->cfg, a->wseed, (unsigned)a->threads, &r->m, d);
	if (!rc && !a->quiet)
		fprintf(stderr,
			"pccx ref: config %s, %.1f MB of synthetic weights (seed %llu) in %.2f s\n",
			r->cfg.name, (double)r->m->size / 1e6, (unsigned long long)a->wseed,
			pccx_cli_now() - t0);
	return rc;
}

/* The prompt's ids: the tokenizer (--tokenizer, else the GGUF's), else bytes as ids 3..258. */
static int encode_prompt(struct ref_run *r, pccx_diag *d)
{
	const char *prompt = r->a->prompt;
	size_t len = strlen(prompt), i;
	int rc;

	if (r->a->tokenizer) {
		rc = pccx_tokenizer_load_json(r->a->tokenizer, &r->tk, d);
		if (rc)
			return rc;
	}
	if (r->tk) {
		if (pccx_tokenizer_n_vocab(r->tk) > r->cfg.vocab)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "ref: the tokenizer has %zu ids, the model only %u "
					  "(use tiny-vocab, e2b or e4b)",
					  pccx_tokenizer_n_vocab(r->tk), r->cfg.vocab);
		r->eos = pccx_tokenizer_eos(r->tk);
		return pccx_tokenizer_encode(r->tk, prompt, len, PCCX_TOK_ADD_BOS, &r->ids,
					     &r->n_ids, d);
	}
	if (r->cfg.vocab < 259)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "ref: a vocabulary of %u ids is too small for the byte tokenizer",
				  r->cfg.vocab);
	r->ids = malloc(sizeof(*r->ids) * (len + 1));
	if (!r->ids)
		return pccx__fail(d, PCCX_ERR_NOMEM, "ref: out of memory");
	r->ids[r->n_ids++] = 2;	/* <bos> */
	for (i = 0; i < len; i++)
		r->ids[r->n_ids++] = (int32_t)(unsigned char)prompt[i] + 3;
	return PCCX_OK;
}

/* --dump-stages: the directory and its index. */
static int open_dump(struct ref_run *r, pccx_diag *d)
{
	const char *dir = r->a->dump;
	char path[4096];

	if (mkdir(dir, 0777) && errno != EEXIST)
		return pccx__fail(d, PCCX_ERR_IO, "ref: %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	r->index = fopen(path, "w");
	if (!r->index)
		return pccx__fail(d, PCCX_ERR_IO, "ref: %s: %s", path, strerror(errno));
	fprintf(r->index, "pos\tname\trows\tcols\tfile\n");
	return PCCX_OK;
}

/* The executor, session, sampler, oracle and buffers of the decode. */
static int start(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	int rc;

	rc = pccx__ref_exec_create(&r->x, (unsigned)a->threads, a->kernel, d);
	if (!rc)
		rc = pccx__gemma3n_session_create(&r->s, r->m, pccx__ref_exec_ops(), r->x, d);
	if (!rc)
		rc = pccx_sampler_create(&r->smp, &a->sc, r->cfg.vocab, d);
	if (!rc && a->oracle)
		rc = pccx__oracle_create(&r->orc, r->m, (unsigned)a->threads, d);
	if (rc)
		return rc;
	if (!a->quiet)
		fprintf(stderr, "pccx ref: kernel %s, %u threads\n",
			pccx__kern_name(pccx__ref_exec_kernel(r->x)), pccx__ref_exec_threads(r->x));
	r->logits = malloc(sizeof(float) * r->cfg.vocab);
	r->hist = malloc(sizeof(int32_t) * (r->n_ids + a->n + 1));
	if (!r->logits || !r->hist)
		return pccx__fail(d, PCCX_ERR_NOMEM, "ref: out of memory");
	if (a->oracle) {
		r->ologits = malloc(sizeof(double) * r->cfg.vocab);
		if (!r->ologits || pccx__cmp_create(&r->cmp))
			return pccx__fail(d, PCCX_ERR_NOMEM, "ref: out of memory");
		pccx__oracle_on_stage(r->orc, pccx__cmp_oracle_stage, r->cmp);
	}
	if (a->dump && (rc = open_dump(r, d)))
		return rc;
	if (a->dump || a->oracle)
		pccx__ref_exec_on_stage(r->x, on_stage, r);
	memcpy(r->hist, r->ids, sizeof(*r->ids) * r->n_ids);
	r->n_hist = r->n_ids;
	return PCCX_OK;
}

/* The oracle's step on the same token, compared stage by stage and on the logits. */
static int oracle_step(struct ref_run *r, int32_t tok, pccx_diag *d)
{
	const struct pccx_stage_stat *st;
	size_t nst;
	bool same;
	double kl;
	int rc;

	rc = pccx__oracle_step(r->orc, (uint32_t)tok, r->ologits, d);
	if (rc)
		return rc;
	st = pccx__cmp_results(r->cmp, &nst);
	aggregate(&r->sum, st, nst);
	pccx__logit_agreement(r->logits, r->ologits, r->cfg.vocab, &same, &kl);
	r->sum.top1_same += same;
	r->sum.compared++;
	r->sum.kl_sum += kl;
	r->sum.kl_max = kl > r->sum.kl_max ? kl : r->sum.kl_max;
	return PCCX_OK;
}

/* Text of generated ids: the real tokenizer, or bytes as ids 3..258. */
static int decode_text(const pccx_tokenizer *tk, const int32_t *ids, size_t n, char **text,
		       size_t *len, pccx_diag *d)
{
	size_t i, k = 0;
	char *t;

	if (tk)
		return pccx_tokenizer_decode(tk, ids, n, PCCX_TOK_SKIP_SPECIAL, text, len, d);
	t = malloc(n + 1);
	if (!t)
		return PCCX_ERR_NOMEM;
	for (i = 0; i < n; i++)
		if (ids[i] >= 3 && ids[i] < 259)
			t[k++] = (char)(ids[i] - 3);
	t[k] = '\0';
	*text = t;
	*len = k;
	return PCCX_OK;
}

/* Sample the next token from this step's logits and print the text it adds. */
static int sample_next(struct ref_run *r, int32_t *next, pccx_diag *d)
{
	char *text;
	size_t len;
	int rc;

	rc = pccx_sampler_sample(r->smp, r->logits, r->cfg.vocab, r->hist, r->n_hist, next, d);
	if (rc)
		return rc;
	r->hist[r->n_hist++] = *next;
	rc = decode_text(r->tk, r->hist + r->n_ids, r->n_hist - r->n_ids, &text, &len, d);
	if (rc)
		return rc;
	if (len > r->printed)
		fwrite(text + r->printed, 1, len - r->printed, stdout);
	r->printed = len > r->printed ? len : r->printed;
	free(text);
	fflush(stdout);
	return PCCX_OK;
}

/* Every prompt token, then each generated token but the last (nothing follows it). */
static int decode(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	double t_ref = 0;
	uint32_t steps = 0;
	size_t i;
	int rc = PCCX_OK;

	for (i = 0; i < r->n_ids + (a->n ? a->n - 1 : 0); i++) {
		bool last_prompt = i + 1 >= r->n_ids;
		int32_t tok = r->hist[i], next;
		double ts = pccx_cli_now();

		r->pos = (uint32_t)i;
		if (r->cmp)
			pccx__cmp_clear(r->cmp);
		rc = pccx__gemma3n_session_step(r->s, (uint32_t)tok,
						last_prompt || a->oracle ? r->logits : NULL, d);
		t_ref += pccx_cli_now() - ts;
		steps++;
		if (!rc && a->oracle)
			rc = oracle_step(r, tok, d);
		if (rc)
			return rc;
		if (!last_prompt || a->n == 0)
			continue;
		rc = sample_next(r, &next, d);
		if (rc)
			return rc;
		if (next == r->eos && !a->ignore_eos)
			break;
	}
	printf("\n");
	if (!a->quiet)
		fprintf(stderr, "pccx ref: %u steps in %.2f s (%.2f tok/s)\n", steps, t_ref,
			steps / (t_ref > 0 ? t_ref : 1));
	return PCCX_OK;
}

static int ref(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	double t0;
	int rc;

	rc = load_model(r, d);
	if (!rc)
		rc = encode_prompt(r, d);
	if (rc)
		return rc;
	if (r->n_ids == 0 || r->n_ids + a->n > r->cfg.max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "ref: %zu prompt + %u new tokens exceed the context (%u)",
				  r->n_ids, (uint32_t)a->n, r->cfg.max_ctx);
	if (a->save) {
		t0 = pccx_cli_now();
		rc = pccx_cli_save_gguf(r->m, r->tk, a->save, d);
		if (rc)
			return rc;
		if (!a->quiet)
			fprintf(stderr, "pccx ref: wrote %s in %.2f s\n", a->save,
				pccx_cli_now() - t0);
	}
	rc = start(r, d);
	if (!rc)
		rc = decode(r, d);
	if (!rc && a->oracle)
		print_summary(&r->sum);
	return rc;
}

static void ref_free(struct ref_run *r)
{
	if (r->index)
		fclose(r->index);
	pccx__cmp_free(r->cmp);
	pccx__oracle_free(r->orc);
	pccx_sampler_destroy(r->smp);
	pccx__gemma3n_session_free(r->s);
	pccx__ref_exec_free(r->x);
	pccx__gemma3n_model_free(r->m);
	pccx_tokenizer_free(r->tk);
	free(r->ids);
	free(r->hist);
	free(r->logits);
	free(r->ologits);
}

int pccx_cmd_ref(int argc, char **argv)
{
	struct ref_args a = { .prompt = "Hello", .seed = 1, .n = 16 };
	struct ref_run r = { .a = &a, .eos = 1 };
	pccx_diag d = { 0 };
	int rc;

	pccx_sampler_config_default(&a.sc);
	rc = pccx_opt_parse(&ref_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (!a.config == !a.model)
		return pccx_opt_fail(&ref_cmd, "give either --config NAME or -m MODEL");
	if (!a.have_wseed)
		a.wseed = a.seed;
	a.sc.seed = a.seed;
	/* before the model is made: the sampler's values are the sampler's to judge */
	if (pccx_sampler_config_check(&a.sc, &d))
		return pccx_opt_fail(&ref_cmd, "%s", d.msg);
	rc = ref(&r, &d);
	if (rc)
		pccx_cli_fail(rc, &d);
	ref_free(&r);
	return rc ? 1 : 0;
}
