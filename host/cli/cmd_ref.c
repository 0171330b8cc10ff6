// SPDX-License-Identifier: MIT
/*
 * pccx ref: run the bit-exact reference of a Gemma decoder (any family) on the host.
 *
 *   pccx ref --config tiny --seed 1 -p "Hello" -n 32 [--oracle] [--dump-stages DIR]
 *
 * The decode step is the NPU op program of reference/gemma_graph.c executed by the
 * reference NPU (reference/exec_ref.c); with --oracle the FP64 oracle decodes the same token
 * sequence and every stage is compared.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch_prefill.h"
#include "cli.h"
#include "compare.h"
#include "diag.h"
#include "exec_ref.h"
#include "fileio.h"
#include "gemma_gguf.h"
#include "pccx_num.h"
#include "pccx/sampler.h"
#include "pccx/tokenizer.h"
#include "ref_run.h"
#include "tokenizer_gguf.h"

struct ref_args {
	struct pccx_cli_ref_args m;
	const char *dump, *save;
	uint64_t seed, n, batch;
	bool have_wseed, oracle, ignore_eos;
	pccx_sampler_config sc;
};

#define A(f, type) PCCX_AT(struct ref_args, f, type)
static const struct pccx_opt ref_opts[] = {
	PCCX_CLI_REF_OPTS(struct ref_args, m),
	PCCX_OPT("save-gguf", 0, PCCX_OPT_PATH, A(save, const char *), "FILE",
		 "write the model (and the tokenizer if given) as GGUF"),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S",
		 "seed of the synthetic weights and the sampler (default 1)"),
	PCCX_OPT("weights-seed", 0, PCCX_OPT_UINT, A(m.wseed, uint64_t), "S",
		 "seed of the synthetic weights only", .seen_at = A(have_wseed, bool) + 1),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N", "tokens to generate (default 16)",
		 .max = 1000000),
	PCCX_OPT("batch", 0, PCCX_OPT_UINT, A(batch, uint64_t), "ROWS",
		 "prompt tokens per batch (default 64; 0: token by token); the\n"
		 "weights are read once per batch, with the bits of token by token", .max = 256),
	PCCX_OPT("ignore-eos", 0, PCCX_OPT_FLAG, A(ignore_eos, bool), NULL,
		 "keep going after the end-of-sequence id"),
	PCCX_OPT("oracle", 0, PCCX_OPT_FLAG, A(oracle, bool), NULL,
		 "also run the FP64 oracle; report per-stage cosine / errors,\n"
		 "top-1 agreement and KL divergence of the logits (pccx fidelity\n"
		 "reports more)"),
	PCCX_OPT("dump-stages", 0, PCCX_OPT_PATH, A(dump, const char *), "DIR",
		 "write every stage tensor (raw FP32 LE) and DIR/index.tsv"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd ref_cmd = {
	.name = "ref",
	.usage = "(--config NAME | -m MODEL) [options]",
	.about = "Decode with the bit-exact reference of the NPU pipeline (any Gemma family:\n"
		 "a preset, or -m with any family's GGUF or Hugging Face checkpoint) and\n"
		 "stream the generated text to stdout.\n",
	.opts = ref_opts,
	.more_title = "sampler (docs/sampling.md; seeded by --seed)",
	.more = pccx_cli_sampler_opts,
	.more_at = offsetof(struct ref_args, sc),
};

/* A decode run: the shared part, and what the stage callback and the sampler need. */
struct ref_run {
	const struct ref_args *a;
	struct pccx_cli_ref r;
	pccx_sampler *smp;
	FILE *index;		/* --dump-stages: index.tsv */
	char *index_path;
	pccx_diag dump_err;	/* why writing a stage file failed */
	uint32_t pos;
	int32_t *hist;
	size_t n_hist, printed;
	struct pccx_cmp_summary sum;
};

/* The tokenizer's keys in the GGUF pccx__gemma_save_gguf writes, padded to its vocab. */
static int tokenizer_keys(pccx_gguf_writer *w, const void *tk, uint32_t n_tokens, pccx_diag *d)
{
	return pccx__tokenizer_save_gguf(w, tk, n_tokens, d);
}

/* Shared with pccx synth (cli.h). */
int pccx_cli_save_gguf(const struct pccx_gemma_model *m, const pccx_tokenizer *tk,
		       const char *path, pccx_diag *d)
{
	const struct pccx_gguf_keys keys = { tokenizer_keys, tk };

	return pccx__gemma_save_gguf(m, tk ? &keys : NULL, path, d);
}

/* Stage callback of the reference: dump to files and/or keep for the oracle comparison. */
static int on_stage(void *user, const char *name, const float *data, uint32_t rows,
		    uint32_t cols, uint32_t stride)
{
	struct ref_run *r = user;
	uint32_t i, j;
	int rc;

	if (r->a->dump) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/p%05u.%s.f32", r->a->dump, r->pos, name);
		rc = pccx__output_open(path, &f, &r->dump_err);
		if (rc)
			return rc;
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				uint32_t u = pccx_f32_bits(data[(size_t)i * stride + j]);

				fputc((int)(u & 0xFF), f);
				fputc((int)((u >> 8) & 0xFF), f);
				fputc((int)((u >> 16) & 0xFF), f);
				fputc((int)(u >> 24), f);
			}
		}
		rc = pccx__output_close(f, path, false, &r->dump_err);
		if (rc)
			return rc;
		fprintf(r->index, "%u\t%s\t%u\t%u\tp%05u.%s.f32\n", r->pos, name, rows, cols,
			r->pos, name);
	}
	if (r->r.cmp)
		return pccx__cmp_ref_stage(r->r.cmp, name, data, rows, cols, stride);
	return PCCX_OK;
}

static void print_summary(const struct pccx_cmp_summary *sum)
{
	size_t i;

	fprintf(stderr,
		"\noracle comparison over %u positions (reference vs FP64 oracle):\n"
		"  %-18s %7s %10s %10s %10s\n",
		sum->positions, "stage", "count", "min cos", "max relRMS", "max |err|");
	for (i = 0; i < sum->n_kinds; i++)
		fprintf(stderr, "  %-18s %7u %10.6f %10.4f %10.4g\n", sum->kinds[i].kind,
			sum->kinds[i].count, sum->kinds[i].min_cos, sum->kinds[i].max_rel,
			sum->kinds[i].max_abs);
	fprintf(stderr,
		"  next-token top-1 agreement %u/%u, KL(oracle||ref) mean %.3g max %.3g"
		" nats\n",
		sum->top1_same, sum->positions,
		sum->kl_sum / (sum->positions ? sum->positions : 1), sum->kl_max);
}

/* --dump-stages: the directory and its index. */
static int open_dump(struct ref_run *r, pccx_diag *d)
{
	const char *dir = r->a->dump;
	char path[4096];
	int rc;

	if (mkdir(dir, 0777) && errno != EEXIST)
		return pccx__fail(d, PCCX_ERR_IO, "ref: %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	r->index_path = strdup(path);
	if (!r->index_path)
		return pccx__fail(d, PCCX_ERR_NOMEM, "ref: out of memory");
	rc = pccx__output_open(path, &r->index, d);
	if (rc)
		return rc;
	fprintf(r->index, "pos\tname\trows\tcols\tfile\n");
	return PCCX_OK;
}

/* The executor, session, oracle (shared), the sampler and the token history. */
static int start(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	int rc;

	rc = pccx_cli_ref_start(&r->r, a->oracle, d);
	/*
	 * Only the kept W_up rows and W_down columns of the sparse layers are read (the same
	 * logits and KV rows); the oracle and the stage dumps compare every stage, whose
	 * ffn.up is +0 where the activation is, so they see the dense FFN.
	 */
	if (!rc && !a->oracle && !a->dump)
		pccx__gemma_plan_use_features(&r->r.s->plan, r->r.m, PCCX_REF_EXEC_FEATURES, false);
	if (!rc)
		rc = pccx_sampler_create(&r->smp, &a->sc, r->r.cfg.vocab, d);
	if (rc)
		return rc;
	r->hist = malloc(sizeof(int32_t) * (r->r.n_ids + a->n + 1));
	if (!r->hist)
		return pccx__fail(d, PCCX_ERR_NOMEM, "ref: out of memory");
	if (a->dump) {
		rc = open_dump(r, d);
		if (rc)
			return rc;
		pccx__ref_exec_on_stage(r->r.x, on_stage, r);
	}
	memcpy(r->hist, r->r.ids, sizeof(*r->r.ids) * r->r.n_ids);
	r->n_hist = r->r.n_ids;
	pccx__cmp_summary_init(&r->sum);
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
	size_t n_ids = r->r.n_ids;
	char *text;
	size_t len;
	int rc;

	rc = pccx_sampler_sample(r->smp, r->r.logits, r->r.cfg.vocab, r->hist, r->n_hist, next,
				 d);
	if (rc)
		return rc;
	r->hist[r->n_hist++] = *next;
	rc = decode_text(r->r.tk, r->hist + n_ids, r->n_hist - n_ids, &text, &len, d);
	if (rc)
		return rc;
	if (len > r->printed)
		fwrite(text + r->printed, 1, len - r->printed, stdout);
	r->printed = len > r->printed ? len : r->printed;
	free(text);
	fflush(stdout);
	return PCCX_OK;
}

/*
 * The prompt but its last token in batches (batch_prefill.h), when nothing needs the stages
 * of each step (--oracle, --dump-stages). Returns the tokens prefilled; a model the batcher
 * refuses is prefilled token by token, with a notice.
 */
static int prefill(struct ref_run *r, size_t *done, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	struct pccx_batch_prefill *b;
	uint32_t n = (uint32_t)r->r.n_ids - 1, i, *toks;
	double t0 = pccx_cli_now();
	int rc;

	*done = 0;
	if (!a->batch || a->oracle || a->dump || n == 0)
		return PCCX_OK;
	rc = pccx__batch_prefill_create(&b, r->r.s, (uint32_t)a->batch, (unsigned)a->m.threads,
					a->m.kernel, d);
	if (rc == PCCX_ERR_UNSUPPORTED) {
		if (!a->m.quiet)
			fprintf(stderr, "pccx ref: prompt token by token: %s\n", d->msg);
		return PCCX_OK;
	}
	if (rc)
		return rc;
	toks = malloc(sizeof(*toks) * n);
	if (!toks) {
		pccx__batch_prefill_free(b);
		return pccx__fail(d, PCCX_ERR_NOMEM, "ref: out of memory");
	}
	for (i = 0; i < n; i++)
		toks[i] = (uint32_t)r->hist[i];
	rc = pccx__batch_prefill_run(b, toks, n, d);
	free(toks);
	pccx__batch_prefill_free(b);
	if (rc)
		return rc;
	t0 = pccx_cli_now() - t0;
	if (!a->m.quiet)
		fprintf(stderr, "pccx ref: prompt: %u tokens in %.2f s (%.2f tok/s, %u per batch)\n",
			n, t0, n / (t0 > 0 ? t0 : 1), (unsigned)a->batch);
	*done = n;
	return PCCX_OK;
}

/* Every prompt token, then each generated token but the last (nothing follows it). */
static int decode(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	uint32_t steps = 0;
	size_t i;
	int rc;

	rc = prefill(r, &i, d);
	if (rc)
		return rc;
	for (; i < r->r.n_ids + (a->n ? a->n - 1 : 0); i++) {
		bool last_prompt = i + 1 >= r->r.n_ids;
		int32_t next;

		r->pos = (uint32_t)i;
		rc = pccx_cli_ref_step(&r->r, r->hist[i], last_prompt, d);
		steps++;
		if (rc && r->dump_err.status && d)
			*d = r->dump_err;
		if (rc)
			return rc;
		if (a->oracle) {
			size_t nst;
			const struct pccx_stage_stat *st = pccx__cmp_results(r->r.cmp, &nst);

			pccx__cmp_summary_add(&r->sum, st, nst, &r->r.lc);
		}
		if (!last_prompt || a->n == 0)
			continue;
		rc = sample_next(r, &next, d);
		if (rc)
			return rc;
		if (next == r->r.eos && !a->ignore_eos)
			break;
	}
	printf("\n");
	if (!a->m.quiet)
		fprintf(stderr, "pccx ref: %u steps in %.2f s (%.2f tok/s)\n", steps, r->r.t_ref,
			steps / (r->r.t_ref > 0 ? r->r.t_ref : 1));
	return PCCX_OK;
}

static int ref(struct ref_run *r, pccx_diag *d)
{
	const struct ref_args *a = r->a;
	double t0;
	int rc;

	rc = pccx_cli_ref_load(&r->r, d);
	if (!rc)
		rc = pccx_cli_ref_encode(&r->r, d);
	if (rc)
		return rc;
	if (r->r.n_ids == 0 || r->r.n_ids + a->n > r->r.cfg.max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "ref: %zu prompt + %u new tokens exceed the context (%u)",
				  r->r.n_ids, (uint32_t)a->n, r->r.cfg.max_ctx);
	if (a->save) {
		t0 = pccx_cli_now();
		rc = pccx_cli_save_gguf(r->r.m, r->r.tk, a->save, d);
		if (rc)
			return rc;
		if (!a->m.quiet)
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
	if (r->index && pccx__output_close(r->index, r->index_path, false, NULL))
		fprintf(stderr, "pccx: ref: %s: cannot write\n", r->index_path);
	free(r->index_path);
	pccx_sampler_destroy(r->smp);
	pccx_cli_ref_free(&r->r);
	free(r->hist);
}

int pccx_cmd_ref(int argc, char **argv)
{
	struct ref_args a = { .m.prompt = "Hello", .seed = 1, .n = 16, .batch = 64 };
	struct ref_run r = { .a = &a, .r = { .cmd = "ref", .a = &a.m } };
	pccx_diag d = { 0 };
	int rc;

	pccx_sampler_config_default(&a.sc);
	rc = pccx_opt_parse(&ref_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (!a.m.config == !a.m.model)
		return pccx_opt_fail(&ref_cmd, "give either --config NAME or -m MODEL");
	if (!a.have_wseed)
		a.m.wseed = a.seed;
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
