// SPDX-License-Identifier: MIT
/*
 * pccx bench --ref: host decode speed and memory of the bit-exact reference on a full model
 * shape with synthetic weights (E4B by default), or on a GGUF file (-m: then the peak RSS is
 * that of loading it). Figures only; nothing passes or fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "cli.h"
#include "diag.h"
#include "batch_prefill.h"
#include "exec_ref.h"
#include "session.h"
#include "gemma_gguf.h"

struct bench_args {
	const char *config, *model;
	uint64_t n, prefill, batch, seed, threads, max_ctx;
	enum pccx_kern_impl kernel;
	bool no_rowmask, vs_dense;
};

#define A(f, type) PCCX_AT(struct bench_args, f, type)
static const struct pccx_opt bench_opts[] = {
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(config, const char *), "NAME",
		 "model shape (default e4b)", .values = pccx__gemma_config_names),
	PCCX_OPT(NULL, 'm', PCCX_OPT_PATH, A(model, const char *), "MODEL",
		 "a gemma3n GGUF instead of synthetic weights"),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "TOKENS",
		 "decode steps timed (default 8), after one warm-up step", .max = 100000),
	PCCX_OPT("prefill", 0, PCCX_OPT_UINT, A(prefill, uint64_t), "N",
		 "also time N prompt tokens, token by token and batched (default 0)",
		 .max = 100000),
	PCCX_OPT("batch", 0, PCCX_OPT_UINT, A(batch, uint64_t), "ROWS",
		 "prompt tokens per batch of the batched prefill (default 64)", .min = 1,
		 .max = PCCX_BATCH_MAX_ROWS),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S", "weights seed (default 1)"),
	PCCX_OPT("threads", 0, PCCX_OPT_UINT, A(threads, uint64_t), "N",
		 "host threads (default 0: all CPUs)", .max = 256),
	PCCX_OPT("kernel", 0, PCCX_OPT_CUSTOM, A(kernel, enum pccx_kern_impl), "K",
		 "Q4 host kernel", .parse = pccx_cli_parse_kernel,
		 .values = pccx_cli_kernel_names),
	PCCX_OPT("max-ctx", 0, PCCX_OPT_UINT, A(max_ctx, uint64_t), "N",
		 "KV positions of global layers", .min = 1, .max = 65535),
	PCCX_OPT("no-rowmask", 0, PCCX_OPT_FLAG, A(no_rowmask, bool), NULL,
		 "dense FFN: read every W_up row and W_down column of the sparse\n"
		 "layers (the same bits, more bytes)"),
	PCCX_OPT("vs-dense", 0, PCCX_OPT_FLAG, A(vs_dense, bool), NULL,
		 "every other timed step with the dense FFN, and both times printed\n"
		 "(the two share the machine's load of the moment)"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd bench_cmd = {
	.name = "bench --ref",
	.usage = "[--config NAME | -m MODEL] [-n TOKENS] [options]",
	.about = "Decode TOKENS tokens (greedy) with the reference on synthetic weights (or a GGUF)\n"
		 "and print the host decode rate, the weight bytes streamed per token and the\n"
		 "peak RSS.\n",
	.opts = bench_opts,
};

/* What the figures are made of. */
struct bench_run {
	struct pccx_gemma_model *m;
	struct pccx_ref_exec *x;
	struct pccx_gemma_session *s;
	double t_synth, t_dec, t_pre, t_batch;
	double t_dense;			/* --vs-dense: the dense steps' time ... */
	uint64_t dense_bytes, dense_ops;	/* ... weight bytes and ops */
	struct pccx_batch_prefill_stats bst;	/* of the batched prefill */
	bool batched;				/* the model allows it (no experts) */
	uint64_t ops, stream_bytes;	/* of the timed decode steps */
};

/*
 * The same `prefill` prompt tokens again, batched, at the next positions. A model with
 * experts is prefilled token by token only (batch_prefill.h says why).
 */
static int prefill_batched(const struct bench_args *a, struct bench_run *r, uint32_t tok,
			   pccx_diag *d)
{
	struct pccx_batch_prefill *b;
	uint32_t *toks, i;
	double t0;
	int rc;

	rc = pccx__batch_prefill_create(&b, r->s, (uint32_t)a->batch, (unsigned)a->threads,
					a->kernel, d);
	if (rc == PCCX_ERR_UNSUPPORTED)
		return PCCX_OK;
	if (rc)
		return rc;
	toks = malloc(sizeof(*toks) * a->prefill);
	if (!toks) {
		pccx__batch_prefill_free(b);
		return pccx__fail(d, PCCX_ERR_NOMEM, "bench --ref: out of memory");
	}
	for (i = 0; i < a->prefill; i++)
		toks[i] = tok;
	t0 = pccx_cli_now();
	rc = pccx__batch_prefill_run(b, toks, (uint32_t)a->prefill, d);
	r->t_batch = pccx_cli_now() - t0;
	pccx__batch_prefill_stats(b, &r->bst);
	r->batched = true;
	free(toks);
	pccx__batch_prefill_free(b);
	return rc;
}

/* The NPU ops counted so far (matmul, CVO, copy, load, store). */
static uint64_t ops_done(const struct pccx_ref_counters *cnt)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k < 5; k++)
		n += cnt->ops[k];
	return n;
}

/*
 * One warm-up step (with --vs-dense, one on each plan), `prefill` steps without logits, the
 * same prompt batched, n timed greedy decode steps (with --vs-dense, n on each plan in turn).
 */
static int decode(const struct bench_args *a, struct bench_run *r, pccx_diag *d)
{
	const struct pccx_ref_counters *cnt;
	uint32_t vocab = r->m->cfg.vocab, tok = 2, i, k;
	float *logits = malloc(sizeof(float) * vocab);
	double t0;
	int rc;

	if (!logits)
		return pccx__fail(d, PCCX_ERR_NOMEM, "bench --ref: out of memory");
	/* warm-up (first touch of the KV pages and of the scratch) */
	rc = pccx__gemma_session_step(r->s, tok, logits, d);
	if (!rc && a->vs_dense) {
		pccx__gemma_plan_use_features(&r->s->plan, r->m, PCCX_REF_EXEC_FEATURES, true);
		rc = pccx__gemma_session_step(r->s, tok, logits, d);
		pccx__gemma_plan_use_features(&r->s->plan, r->m, PCCX_REF_EXEC_FEATURES, false);
	}
	for (i = 0; !rc && i < a->prefill; i++) {
		t0 = pccx_cli_now();
		rc = pccx__gemma_session_step(r->s, tok, NULL, d);
		r->t_pre += pccx_cli_now() - t0;
	}
	if (!rc && a->prefill)
		rc = prefill_batched(a, r, tok, d);
	pccx__ref_exec_reset_counters(r->x);
	cnt = pccx__ref_exec_counters(r->x);
	for (i = 0; !rc && i < (a->vs_dense ? 2 * a->n : a->n); i++) {
		bool dense = a->vs_dense && (i & 1);
		uint64_t b0 = cnt->stream_bytes, o0;

		if (a->vs_dense)
			pccx__gemma_plan_use_features(&r->s->plan, r->m, PCCX_REF_EXEC_FEATURES,
						      dense);
		o0 = ops_done(cnt);
		t0 = pccx_cli_now();
		rc = pccx__gemma_session_step(r->s, tok, logits, d);
		if (dense) {
			r->t_dense += pccx_cli_now() - t0;
			r->dense_bytes += cnt->stream_bytes - b0;
			r->dense_ops += ops_done(cnt) - o0;
		} else {
			r->t_dec += pccx_cli_now() - t0;
		}
		for (tok = 0, k = 1; k < vocab; k++)
			if (logits[k] > logits[tok])
				tok = k;
	}
	r->ops = ops_done(cnt) - r->dense_ops;
	r->stream_bytes = cnt->stream_bytes - r->dense_bytes;
	free(logits);
	return rc;
}

static void print_figures(const struct bench_args *a, const struct bench_run *r)
{
	const struct pccx_gemma_config *cfg = &r->m->cfg;
	unsigned long long n = a->n, prefill = a->prefill;
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("reference decode, config %s (%u layers, D %u, FFN %u, vocab %u), %s\n",
	       cfg->name, cfg->n_layers, cfg->d_model, cfg->d_ffn, cfg->vocab,
	       a->model ? a->model : "synthetic weights");
	printf("  weights in device layout  %10.1f MB  (%s in %.1f s)\n",
	       (double)r->m->size / 1e6, a->model ? "loaded" : "synthesised", r->t_synth);
	printf("  streamed per token        %10.1f MB  weights + KV rows\n",
	       (double)r->stream_bytes / n / 1e6);
	printf("  NPU ops per token         %10.0f\n", (double)r->ops / n);
	printf("  host kernel               %10s  x %u threads\n",
	       pccx__kern_name(pccx__ref_exec_kernel(r->x)), pccx__ref_exec_threads(r->x));
	if (pccx__gemma_sparse_ffn(r->m))
		printf("  sparse layers' FFN        %10s  %s\n", a->no_rowmask ? "dense" : "sparse",
		       a->no_rowmask ? "(every W_up row and W_down column read)"
				     : "(only kept W_up rows and W_down columns read)");
	printf("  decode                    %10.3f tok/s  (%.1f ms/token, %.2f GB/s streamed, %llu "
	       "tokens)\n",
	       n / r->t_dec, 1e3 * r->t_dec / n, (double)r->stream_bytes / r->t_dec / 1e9, n);
	if (a->vs_dense)
		printf("  decode, dense FFN         %10.3f tok/s  (%.1f ms/token, %.2f GB/s streamed, %llu "
		       "tokens, alternated)\n",
		       n / r->t_dense, 1e3 * r->t_dense / n, (double)r->dense_bytes / r->t_dense / 1e9,
		       n);
	if (prefill)
		printf("  prefill (no LM head)      %10.3f tok/s  (%llu tokens, token by token)\n",
		       prefill / r->t_pre, prefill);
	if (prefill && r->batched)
		printf("  prefill batched           %10.3f tok/s  (%llu tokens, %llu per batch, "
		       "%.1f MB of weights read per token)\n", prefill / r->t_batch, prefill,
		       (unsigned long long)a->batch, (double)r->bst.weight_bytes / prefill / 1e6);
	printf("  peak RSS                  %10.1f MB\n", ru.ru_maxrss / 1024.0);
}

int pccx_cmd_bench_ref(int argc, char **argv)
{
	struct bench_args a = { .config = "e4b", .n = 8, .batch = 64, .seed = 1 };
	struct bench_run r = { 0 };
	struct pccx_gemma_config cfg;
	pccx_diag d = { 0 };
	double t0;
	int rc;

	rc = pccx_opt_parse(&bench_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (a.vs_dense && a.no_rowmask) {
		fprintf(stderr, "pccx: bench --ref: --vs-dense compares with --no-rowmask; give one\n");
		return 2;
	}
	if (a.model) {
		/* the figures of a load: the model file and the device-layout copy */
		t0 = pccx_cli_now();
		rc = pccx__gemma_load_gguf(&r.m, a.model, (uint32_t)a.max_ctx, NULL, NULL, &d);
		r.t_synth = pccx_cli_now() - t0;
		if (rc)
			return pccx_cli_fail(rc, &d);
		cfg = r.m->cfg;
	} else {
		rc = pccx_cli_config(a.config, a.max_ctx, &cfg, &d);
		if (rc)
			return pccx_cli_fail(rc, &d);
	}
	if ((a.vs_dense ? 2 : 1) * (a.n + 1) + 2 * a.prefill > cfg.max_ctx) {
		fprintf(stderr, "pccx: bench --ref: %llu steps exceed the context %u\n",
			(unsigned long long)((a.vs_dense ? 2 : 1) * (a.n + 1) + 2 * a.prefill),
			cfg.max_ctx);
		pccx__gemma_model_free(r.m);
		return 2;
	}
	if (!r.m) {
		t0 = pccx_cli_now();
		rc = pccx_cli_synth(&cfg, a.seed, (unsigned)a.threads, &r.m, &d);
		r.t_synth = pccx_cli_now() - t0;
	}
	if (!rc)
		rc = pccx__ref_exec_create(&r.x, (unsigned)a.threads, a.kernel, &d);
	if (!rc)
		rc = pccx__gemma_session_create(&r.s, r.m, pccx__ref_exec_ops(), r.x, &d);
	if (!rc)
		pccx__gemma_plan_use_features(&r.s->plan, r.m, PCCX_REF_EXEC_FEATURES,
					      a.no_rowmask);
	if (!rc)
		rc = decode(&a, &r, &d);
	if (rc)
		pccx_cli_fail(rc, &d);
	else
		print_figures(&a, &r);
	pccx__gemma_session_free(r.s);
	pccx__ref_exec_free(r.x);
	pccx__gemma_model_free(r.m);
	return rc ? 1 : 0;
}
