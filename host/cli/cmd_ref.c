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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "compare.h"
#include "diag.h"
#include "exec_ref.h"
#include "gemma3n.h"
#include "gemma3n_gguf.h"
#include "oracle.h"
#include "pccx/sampler.h"
#include "pccx/tokenizer.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pccx ref (--config NAME | -m MODEL) [options]\n"
		"\n"
		"Decode with the bit-exact reference of the Gemma 3n NPU pipeline and stream\n"
		"the generated text to stdout.\n"
		"\n"
		"options:\n"
		"  --config NAME      model shape: %s\n"
		"  -m MODEL           a Gemma 3n GGUF (llama.cpp layout; Q4_0 loads losslessly,\n"
		"                     other types are requantised and the error reported)\n"
		"  --save-gguf FILE   write the model (and the tokenizer if given) as GGUF\n"
		"  --seed S           seed of the synthetic weights and the sampler (default 1)\n"
		"  --weights-seed S   seed of the synthetic weights only\n"
		"  -p TEXT            prompt (default \"Hello\")\n"
		"  -n N               tokens to generate (default 16)\n"
		"  --tokenizer FILE   Hugging Face tokenizer.json (needs a model with its\n"
		"                     vocabulary, e.g. tiny-vocab); else bytes are ids 3..258\n"
		"  --temp T --top-p P --top-k K --rep-penalty R   sampler (docs/sampling.md)\n"
		"  --ignore-eos       keep going after the end-of-sequence id\n"
		"  --max-ctx N        KV-cache positions of global layers (default: the config's)\n"
		"  --oracle           also run the FP64 oracle; report per-stage cosine / errors,\n"
		"                     top-1 agreement and KL divergence of the logits\n"
		"  --dump-stages DIR  write every stage tensor (raw BF16 LE) and DIR/index.tsv\n"
		"  --threads N        host threads (default: all CPUs)\n"
		"  --kernel K         Q4 host kernel: auto, ref, avx2\n"
		"  -q                 no timing line on stderr\n"
		"  -h, --help         this help\n",
		pccx_g3n_config_names());
}

struct opts {
	const char *config, *model, *prompt, *tokenizer, *dump, *save;
	uint64_t seed, wseed;
	bool have_wseed, oracle, ignore_eos, quiet;
	uint32_t n, max_ctx, threads;
	enum pccx_kern_impl kernel;
	pccx_sampler_config sc;
};

/* What the stage callback needs. */
struct run {
	const struct opts *o;
	struct pccx_cmp *cmp;
	FILE *index;
	uint32_t pos;
	int err;
};

struct agg {
	char kind[48];
	uint32_t count;
	double min_cos, max_rel, max_abs;
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || !*s || *end || *s == '-';
}

static int parse_f(const char *s, float *v)
{
	char *end;

	errno = 0;
	*v = strtof(s, &end);
	return errno || !*s || *end;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->prompt = "Hello";
	o->n = 16;
	pccx_sampler_config_default(&o->sc);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t u;
		float f;

#define NEED()                                                                                     \
	do {                                                                                       \
		if (!v) {                                                                          \
			fprintf(stderr, "pccx: ref: %s needs a value\n", a);                       \
			return 2;                                                                  \
		}                                                                                  \
		i++;                                                                               \
	} while (0)
#define BADV() do { fprintf(stderr, "pccx: ref: %s: bad value '%s'\n", a, v); return 2; } while (0)
		if (!strcmp(a, "--config")) {
			NEED();
			o->config = v;
		} else if (!strcmp(a, "-m")) {
			NEED();
			o->model = v;
		} else if (!strcmp(a, "--seed")) {
			NEED();
			if (parse_u64(v, &o->seed))
				BADV();
		} else if (!strcmp(a, "--weights-seed")) {
			NEED();
			if (parse_u64(v, &o->wseed))
				BADV();
			o->have_wseed = true;
		} else if (!strcmp(a, "-p")) {
			NEED();
			o->prompt = v;
		} else if (!strcmp(a, "-n")) {
			NEED();
			if (parse_u64(v, &u) || u > 1000000)
				BADV();
			o->n = (uint32_t)u;
		} else if (!strcmp(a, "--tokenizer")) {
			NEED();
			o->tokenizer = v;
		} else if (!strcmp(a, "--temp")) {
			NEED();
			if (parse_f(v, &o->sc.temperature))
				BADV();
		} else if (!strcmp(a, "--top-p")) {
			NEED();
			if (parse_f(v, &o->sc.top_p))
				BADV();
		} else if (!strcmp(a, "--top-k")) {
			NEED();
			if (parse_u64(v, &u) || u > 0x7FFFFFFF)
				BADV();
			o->sc.top_k = (int32_t)u;
		} else if (!strcmp(a, "--rep-penalty")) {
			NEED();
			if (parse_f(v, &f))
				BADV();
			o->sc.repetition_penalty = f;
		} else if (!strcmp(a, "--ignore-eos")) {
			o->ignore_eos = true;
		} else if (!strcmp(a, "--max-ctx")) {
			NEED();
			if (parse_u64(v, &u) || u == 0 || u > 65535)
				BADV();
			o->max_ctx = (uint32_t)u;
		} else if (!strcmp(a, "--oracle")) {
			o->oracle = true;
		} else if (!strcmp(a, "--save-gguf")) {
			NEED();
			o->save = v;
		} else if (!strcmp(a, "--dump-stages")) {
			NEED();
			o->dump = v;
		} else if (!strcmp(a, "--threads")) {
			NEED();
			if (parse_u64(v, &u) || u == 0 || u > 256)
				BADV();
			o->threads = (uint32_t)u;
		} else if (!strcmp(a, "--kernel")) {
			NEED();
			if (!strcmp(v, "auto"))
				o->kernel = PCCX_KERN_AUTO;
			else if (!strcmp(v, "ref"))
				o->kernel = PCCX_KERN_REF;
			else if (!strcmp(v, "avx2"))
				o->kernel = PCCX_KERN_AVX2;
			else
				BADV();
		} else if (!strcmp(a, "-q")) {
			o->quiet = true;
		} else {
			fprintf(stderr, "pccx: ref: unknown option '%s'\n", a);
			return 2;
		}
#undef NEED
#undef BADV
	}
	if (!o->have_wseed)
		o->wseed = o->seed;
	o->sc.seed = o->seed;
	if (!o->config == !o->model) {
		fprintf(stderr, "pccx: ref: give either --config NAME or -m MODEL\n");
		return 2;
	}
	return 0;
}

/* Stage callback of the reference: dump to files and/or keep for the oracle comparison. */
static int on_stage(void *user, const char *name, const uint16_t *data, uint32_t rows,
		    uint32_t cols, uint32_t stride)
{
	struct run *r = user;
	uint32_t i, j;

	if (r->o->dump) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/p%05u.%s.bf16", r->o->dump, r->pos, name);
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
		return pccx_cmp_ref_stage(r->cmp, name, data, rows, cols, stride);
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

static void aggregate(struct agg *a, size_t *na, const struct pccx_stage_stat *s, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		const char *kind = kind_of(s[i].name);

		for (k = 0; k < *na; k++)
			if (!strcmp(a[k].kind, kind))
				break;
		if (k == *na) {
			if (*na == 64)
				continue;
			snprintf(a[k].kind, sizeof(a[k].kind), "%s", kind);
			a[k].count = 0;
			a[k].min_cos = 1.0;
			a[k].max_rel = a[k].max_abs = 0.0;
			(*na)++;
		}
		a[k].count++;
		a[k].min_cos = s[i].cos < a[k].min_cos ? s[i].cos : a[k].min_cos;
		a[k].max_rel = s[i].rel_rms > a[k].max_rel ? s[i].rel_rms : a[k].max_rel;
		a[k].max_abs = s[i].max_abs > a[k].max_abs ? s[i].max_abs : a[k].max_abs;
	}
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int pccx_cmd_ref(int argc, char **argv)
{
	struct opts o;
	struct run run = { 0 };
	pccx_diag d = { 0 };
	struct pccx_g3n_config cfg;
	struct pccx_g3n_model *m = NULL;
	struct pccx_ref_exec *x = NULL;
	struct pccx_g3n_session *s = NULL;
	struct pccx_oracle *orc = NULL;
	pccx_tokenizer *tk = NULL;
	pccx_sampler *smp = NULL;
	int32_t *ids = NULL, *hist = NULL, eos = 1, next;
	size_t n_ids = 0, n_hist = 0, printed = 0, i, na = 0;
	float *logits = NULL;
	double *ologits = NULL, kl_sum = 0, kl_max = 0, t0, t_ref = 0;
	uint32_t top1_same = 0, compared = 0, steps = 0;
	struct agg agg[64];
	int rc, ret = 1;

	if (pccx_cli_wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	rc = parse_args(argc, argv, &o);
	if (rc) {
		if (rc == 2)
			usage(stderr);
		return rc;
	}
	/* the model: a GGUF, or synthetic weights of a named shape */
	t0 = now_s();
	if (o.model) {
		struct pccx_g3n_load_info li;
		char buf[160];

		rc = pccx_g3n_load_gguf(&m, o.model, o.max_ctx, &li, o.tokenizer ? NULL : &tk, &d);
		if (rc)
			return pccx_cli_fail(rc, &d);
		cfg = m->cfg;
		if (!o.quiet)
			fprintf(stderr,
				"pccx ref: %s: %u layers, D %u, vocab %u, %.1f MB in device "
				"layout in %.2f s; Q4 conversion %s; %llu AltUp coefficients "
				"clamped\n",
				o.model, cfg.n_layers, cfg.d_model, cfg.vocab,
				(double)m->size / 1e6, now_s() - t0,
				pccx_q4_error_format(&li.q4, buf, sizeof(buf)),
				(unsigned long long)li.clipped);
	} else {
		rc = pccx_g3n_config_preset(o.config, &cfg, &d);
		if (rc)
			return pccx_cli_fail(rc, &d);
		if (o.max_ctx)
			cfg.max_ctx = o.max_ctx;
		rc = pccx_g3n_model_create(&m, &cfg, &d);
		if (!rc)
			rc = pccx_g3n_synth(m, o.wseed, o.threads, &d);
		if (rc) {
			pccx_cli_fail(rc, &d);
			goto out;
		}
		if (!o.quiet)
			fprintf(stderr,
				"pccx ref: config %s, %.1f MB of synthetic weights (seed %llu) "
				"in %.2f s\n",
				cfg.name, (double)m->size / 1e6, (unsigned long long)o.wseed,
				now_s() - t0);
	}

	/* the tokenizer: --tokenizer, else one embedded in the GGUF, else bytes as ids */
	if (o.tokenizer) {
		rc = pccx_tokenizer_load_json(o.tokenizer, &tk, &d);
		if (rc) {
			pccx_cli_fail(rc, &d);
			goto out;
		}
	}
	if (tk) {
		if (pccx_tokenizer_n_vocab(tk) > cfg.vocab) {
			fprintf(stderr,
				"pccx: ref: the tokenizer has %zu ids, the model only %u "
				"(use tiny-vocab, e2b or e4b)\n",
				pccx_tokenizer_n_vocab(tk), cfg.vocab);
			goto out;
		}
		rc = pccx_tokenizer_encode(tk, o.prompt, strlen(o.prompt), PCCX_TOK_ADD_BOS, &ids,
					   &n_ids, &d);
		if (rc) {
			pccx_cli_fail(rc, &d);
			goto out;
		}
		eos = pccx_tokenizer_eos(tk);
	} else {
		size_t len = strlen(o.prompt);

		if (cfg.vocab < 259) {
			fprintf(stderr,
				"pccx: ref: a vocabulary of %u ids is too small for the byte "
				"tokenizer\n",
				cfg.vocab);
			goto out;
		}
		ids = malloc(sizeof(*ids) * (len + 1));
		if (!ids)
			goto nomem;
		ids[n_ids++] = 2;	/* <bos> */
		for (i = 0; i < len; i++)
			ids[n_ids++] = (int32_t)(unsigned char)o.prompt[i] + 3;
	}
	if (n_ids == 0 || n_ids + o.n > cfg.max_ctx) {
		fprintf(stderr, "pccx: ref: %zu prompt + %u new tokens exceed the context (%u)\n",
			n_ids, o.n, cfg.max_ctx);
		goto out;
	}
	if (o.save) {
		t0 = now_s();
		rc = pccx_g3n_save_gguf(m, tk, o.save, &d);
		if (rc) {
			pccx_cli_fail(rc, &d);
			goto out;
		}
		if (!o.quiet)
			fprintf(stderr, "pccx ref: wrote %s in %.2f s\n", o.save, now_s() - t0);
	}

	rc = pccx_ref_exec_create(&x, o.threads, o.kernel, &d);
	if (!rc)
		rc = pccx_g3n_session_create(&s, m, pccx_ref_exec_ops(), x, &d);
	if (!rc)
		rc = pccx_sampler_create(&smp, &o.sc, cfg.vocab, &d);
	if (!rc && o.oracle)
		rc = pccx_oracle_create(&orc, m, o.threads, &d);
	if (rc) {
		pccx_cli_fail(rc, &d);
		goto out;
	}
	if (!o.quiet)
		fprintf(stderr, "pccx ref: kernel %s, %u threads\n",
			pccx_kern_name(pccx_ref_exec_kernel(x)), pccx_ref_exec_threads(x));

	logits = malloc(sizeof(float) * cfg.vocab);
	hist = malloc(sizeof(int32_t) * (n_ids + o.n + 1));
	if (!logits || !hist)
		goto nomem;
	if (o.oracle) {
		ologits = malloc(sizeof(double) * cfg.vocab);
		if (!ologits || pccx_cmp_create(&run.cmp))
			goto nomem;
		pccx_oracle_on_stage(orc, pccx_cmp_oracle_stage, run.cmp);
	}
	if (o.dump) {
		char path[4096];

		if (mkdir(o.dump, 0777) && errno != EEXIST) {
			fprintf(stderr, "pccx: ref: %s: %s\n", o.dump, strerror(errno));
			goto out;
		}
		snprintf(path, sizeof(path), "%s/index.tsv", o.dump);
		run.index = fopen(path, "w");
		if (!run.index) {
			fprintf(stderr, "pccx: ref: %s: %s\n", path, strerror(errno));
			goto out;
		}
		fprintf(run.index, "pos\tname\trows\tcols\tfile\n");
	}
	run.o = &o;
	if (o.dump || o.oracle)
		pccx_ref_exec_on_stage(x, on_stage, &run);

	/* Prompt then generation, one decode step per token. */
	memcpy(hist, ids, sizeof(*ids) * n_ids);
	n_hist = n_ids;
	/* every prompt token, then each generated token but the last (nothing follows it) */
	for (i = 0; i < n_ids + (o.n ? o.n - 1 : 0); i++) {
		bool last_prompt = i + 1 >= n_ids;
		bool want = last_prompt || o.oracle;
		int32_t tok = (int32_t)hist[i];
		double ts = now_s();

		run.pos = (uint32_t)i;
		if (run.cmp)
			pccx_cmp_clear(run.cmp);
		rc = pccx_g3n_session_step(s, (uint32_t)tok, want ? logits : NULL, &d);
		t_ref += now_s() - ts;
		steps++;
		if (rc) {
			pccx_cli_fail(rc, &d);
			goto out;
		}
		if (o.oracle) {
			const struct pccx_stage_stat *st;
			size_t nst;
			bool same;
			double kl;

			rc = pccx_oracle_step(orc, (uint32_t)tok, ologits, &d);
			if (rc) {
				pccx_cli_fail(rc, &d);
				goto out;
			}
			st = pccx_cmp_results(run.cmp, &nst);
			aggregate(agg, &na, st, nst);
			pccx_logit_agreement(logits, ologits, cfg.vocab, &same, &kl);
			top1_same += same;
			compared++;
			kl_sum += kl;
			kl_max = kl > kl_max ? kl : kl_max;
		}
		if (!last_prompt || o.n == 0)
			continue;
		/* sample the next token from this step's logits */
		rc = pccx_sampler_sample(smp, logits, cfg.vocab, hist, n_hist, &next, &d);
		if (rc) {
			pccx_cli_fail(rc, &d);
			goto out;
		}
		hist[n_hist++] = next;
		{
			char *text;
			size_t len;

			rc = decode_text(tk, hist + n_ids, n_hist - n_ids, &text, &len, &d);
			if (rc) {
				pccx_cli_fail(rc, &d);
				goto out;
			}
			if (len > printed)
				fwrite(text + printed, 1, len - printed, stdout);
			printed = len > printed ? len : printed;
			free(text);
			fflush(stdout);
		}
		if (next == eos && !o.ignore_eos)
			break;
	}
	printf("\n");
	if (!o.quiet)
		fprintf(stderr, "pccx ref: %u steps in %.2f s (%.2f tok/s)\n", steps, t_ref,
			steps / (t_ref > 0 ? t_ref : 1));
	if (o.oracle) {
		fprintf(stderr,
			"\noracle comparison over %u positions (reference vs FP64 oracle):\n"
			"  %-18s %7s %10s %10s %10s\n",
			compared, "stage", "count", "min cos", "max relRMS", "max |err|");
		for (i = 0; i < na; i++)
			fprintf(stderr, "  %-18s %7u %10.6f %10.4f %10.4g\n", agg[i].kind,
				agg[i].count, agg[i].min_cos, agg[i].max_rel, agg[i].max_abs);
		fprintf(stderr,
			"  next-token top-1 agreement %u/%u, KL(oracle||ref) mean %.3g max %.3g"
			" nats\n",
			top1_same, compared, kl_sum / (compared ? compared : 1), kl_max);
	}
	ret = 0;
	goto out;
nomem:
	fprintf(stderr, "pccx: ref: out of memory\n");
out:
	if (run.index)
		fclose(run.index);
	pccx_cmp_free(run.cmp);
	pccx_oracle_free(orc);
	pccx_sampler_destroy(smp);
	pccx_g3n_session_free(s);
	pccx_ref_exec_free(x);
	pccx_g3n_model_free(m);
	pccx_tokenizer_free(tk);
	free(ids);
	free(hist);
	free(logits);
	free(ologits);
	return ret;
}

/*
 * pccx synth: write the synthetic model of a named shape as a gemma3n GGUF.
 *
 *   pccx synth --config tiny-vocab --seed 1 [--tokenizer tokenizer.json] -o model.gguf
 */
static void synth_usage(FILE *f)
{
	fprintf(f,
		"usage: pccx synth --config NAME [--seed S] [--tokenizer FILE] -o FILE\n"
		"\n"
		"Write seeded synthetic weights of a Gemma 3n shape (%s) as a GGUF in\n"
		"llama.cpp's gemma3n layout (Q4_0 projections, F32 norms, gemma3n.* metadata),\n"
		"with the tokenizer embedded when --tokenizer is given. 'pccx ref -m FILE' runs\n"
		"it.\n",
		pccx_g3n_config_names());
}

int pccx_cmd_synth(int argc, char **argv)
{
	const char *config = NULL, *out = NULL, *tokenizer = NULL;
	unsigned long long seed = 1;
	struct pccx_g3n_config cfg;
	struct pccx_g3n_model *m = NULL;
	pccx_tokenizer *tk = NULL;
	pccx_diag d = { 0 };
	double t0 = now_s();
	int i, rc;

	if (pccx_cli_wants_help(argc, argv)) {
		synth_usage(stdout);
		return 0;
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t u;

		if (!v) {
			fprintf(stderr, "pccx: synth: '%s' needs a value\n", a);
			synth_usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--config")) {
			config = v;
		} else if (!strcmp(a, "-o")) {
			out = v;
		} else if (!strcmp(a, "--tokenizer")) {
			tokenizer = v;
		} else if (!strcmp(a, "--seed") && !parse_u64(v, &u)) {
			seed = u;
		} else {
			fprintf(stderr, "pccx: synth: bad option '%s %s'\n", a, v);
			synth_usage(stderr);
			return 2;
		}
	}
	if (!config || !out) {
		synth_usage(stderr);
		return 2;
	}
	rc = pccx_g3n_config_preset(config, &cfg, &d);
	if (!rc && tokenizer)
		rc = pccx_tokenizer_load_json(tokenizer, &tk, &d);
	if (!rc && tk && pccx_tokenizer_n_vocab(tk) > cfg.vocab)
		rc = pccx_fail(&d, PCCX_ERR_INVALID,
			       "the tokenizer has %zu ids, config '%s' only %u",
			       pccx_tokenizer_n_vocab(tk), cfg.name, cfg.vocab);
	if (!rc)
		rc = pccx_g3n_model_create(&m, &cfg, &d);
	if (!rc)
		rc = pccx_g3n_synth(m, seed, 0, &d);
	if (!rc)
		rc = pccx_g3n_save_gguf(m, tk, out, &d);
	if (!rc)
		fprintf(stderr, "pccx synth: %s: config %s, seed %llu, %.2f s\n", out, cfg.name,
			seed, now_s() - t0);
	pccx_g3n_model_free(m);
	pccx_tokenizer_free(tk);
	return rc ? pccx_cli_fail(rc, &d) : 0;
}
