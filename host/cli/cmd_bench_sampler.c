/* SPDX-License-Identifier: MIT */
/*
 * pccx bench sampler: nanoseconds per next-token sample on Gemma 3n sized logits
 * (262 400 soft-capped values) for a few typical settings, plus the full-sort reference for
 * scale. Figures only; nothing passes or fails.
 *
 *   pccx bench --sampler [--iters N] [--vocab N] [--seed S]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "pccx/sampler.h"
#include "rng.h"
#include "sampler.h"

#define BENCH_SETS	4	/* distinct logit vectors, cycled so caches see new data */
#define BENCH_HISTORY	64

/* Decoder-like logits: a broad bell of low values, a few dominant tokens, softcap 30. */
static void make_logits(float *l, size_t n, pccx_rng *r)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float g = pccx__rng_uniform_float(r) + pccx__rng_uniform_float(r) +
			  pccx__rng_uniform_float(r) + pccx__rng_uniform_float(r) - 2.0f;

		l[i] = g * 4.0f - 3.0f;
	}
	for (i = 0; i < 32; i++)
		l[pccx__rng_next_u32(r) % n] = 8.0f + pccx__rng_uniform_float(r) * 14.0f;
	for (i = 0; i < n; i++)
		l[i] = 30.0f * tanhf(l[i] / 30.0f);
}

/* A sampler setting: these four fields, the rest the defaults. */
struct bench_case {
	const char *name;
	float temperature;
	int32_t top_k;
	float top_p, min_p;
	unsigned iters_div;	/* slow cases run iters / iters_div times */
};

#define T_DEF	PCCX_SAMPLER_DEFAULT_TEMPERATURE
#define K_DEF	PCCX_SAMPLER_DEFAULT_TOP_K
#define P_DEF	PCCX_SAMPLER_DEFAULT_TOP_P
#define MIN_DEF	PCCX_SAMPLER_DEFAULT_MIN_P
static const struct bench_case cases[] = {
	{ "defaults (T 1, k 64, p 0.9, rho 1.15/64)", T_DEF, K_DEF, P_DEF, MIN_DEF, 1 },
	{ "greedy (T 0, rho 1.15/64)", 0.0f, K_DEF, P_DEF, MIN_DEF, 1 },
	{ "top-k off, top-p 0.9", T_DEF, 0, P_DEF, MIN_DEF, 1 },
	{ "top-k off, top-p 0.95, min-p 0.05, T 0.7", 0.7f, 0, 0.95f, 0.05f, 1 },
	{ "top-k 40, top-p 0.95, T 0.8 (llama.cpp-like)", 0.8f, 40, 0.95f, MIN_DEF, 1 },
	{ "no filter (k off, p 1): full sort", T_DEF, 0, 1.0f, MIN_DEF, 10 },
};
#undef T_DEF
#undef K_DEF
#undef P_DEF
#undef MIN_DEF

static void case_config(const struct bench_case *bc, uint64_t seed, pccx_sampler_config *cfg)
{
	pccx_sampler_config_default(cfg);
	cfg->temperature = bc->temperature;
	cfg->top_k = bc->top_k;
	cfg->top_p = bc->top_p;
	cfg->min_p = bc->min_p;
	cfg->seed = seed;
}

static int run_case(const struct bench_case *bc, uint64_t seed, float *const *sets, size_t n,
		    unsigned long long iters)
{
	pccx_sampler_config cfg;
	pccx_sampler *s = NULL;
	pccx_diag d = { 0 };
	int32_t hist[BENCH_HISTORY], tok = 0;
	size_t bound_max = 0;
	unsigned long long it, runs = iters / bc->iters_div ? iters / bc->iters_div : 1;
	double t0, t1;
	unsigned i;

	case_config(bc, seed, &cfg);
	if (pccx_sampler_create(&s, &cfg, n, &d)) {
		fprintf(stderr, "bench sampler: %s\n", d.msg);
		return -1;
	}
	for (i = 0; i < BENCH_HISTORY; i++)
		hist[i] = (int32_t)((i * 7919u) % n);
	t0 = pccx_cli_now();
	for (it = 0; it < runs; it++) {
		if (pccx_sampler_sample(s, sets[it % BENCH_SETS], n, hist, BENCH_HISTORY, &tok,
					&d)) {
			fprintf(stderr, "bench sampler: %s\n", d.msg);
			pccx_sampler_destroy(s);
			return -1;
		}
		if (pccx__sampler_last_bound(s) > bound_max)
			bound_max = pccx__sampler_last_bound(s);
		/* A sliding history, as in generation. */
		hist[it % BENCH_HISTORY] = tok;
	}
	t1 = pccx_cli_now();
	printf("  %-44s %12.0f ns/sample  (%llu runs, candidates <= %zu)\n", bc->name,
	       (t1 - t0) * 1e9 / (double)runs, runs, bound_max);
	pccx_sampler_destroy(s);
	return 0;
}

static int run_reference(const struct bench_case *bc, uint64_t seed, float *const *sets,
			 size_t n, unsigned long long runs)
{
	pccx_sampler_config cfg;
	int32_t hist[BENCH_HISTORY];
	unsigned long long it;
	double t0, t1;
	unsigned i;

	case_config(bc, seed, &cfg);
	for (i = 0; i < BENCH_HISTORY; i++)
		hist[i] = (int32_t)((i * 7919u) % n);
	t0 = pccx_cli_now();
	for (it = 0; it < runs; it++) {
		pccx_sampler_naive nv;
		pccx_diag d = { 0 };

		if (pccx__sampler_naive_distribution(&cfg, sets[it % BENCH_SETS], n, hist,
						     BENCH_HISTORY, &nv, &d)) {
			fprintf(stderr, "bench sampler: %s\n", d.msg);
			return -1;
		}
		pccx__sampler_naive_free(&nv);
	}
	t1 = pccx_cli_now();
	printf("  %-44s %12.0f ns/sample  (%llu runs)\n", "full-sort reference, defaults",
	       (t1 - t0) * 1e9 / (double)runs, runs);
	return 0;
}

struct bench_args {
	uint64_t iters, vocab, seed;
};

#define A(f) PCCX_AT(struct bench_args, f, uint64_t)
static const struct pccx_opt bench_opts[] = {
	PCCX_OPT("iters", 0, PCCX_OPT_UINT, A(iters), "N", "iterations (default 200)",
		 .min = 1, .max = 100000000),
	PCCX_OPT("vocab", 0, PCCX_OPT_UINT, A(vocab), "N", "vocabulary (default 262400)",
		 .min = 1, .max = PCCX_SAMPLER_MAX_VOCAB),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed), "S", "seed of the logits and the sampler "
		 "(default 1)"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd bench_cmd = {
	.name = "bench --sampler",
	.usage = "[--iters N] [--vocab N] [--seed S]",
	.about = "ns per next-token sample on random decoder-like logits.\n",
	.opts = bench_opts,
};

int pccx_cmd_bench_sampler(int argc, char **argv)
{
	struct bench_args a = { .iters = 200, .vocab = 262400, .seed = 1 };
	float *sets[BENCH_SETS] = { NULL };
	size_t n;
	pccx_rng r;
	unsigned i;
	int rc;

	rc = pccx_opt_parse(&bench_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	n = (size_t)a.vocab;
	pccx__rng_seed(&r, a.seed, 1);
	for (i = 0; i < BENCH_SETS; i++) {
		sets[i] = malloc(n * sizeof(float));
		if (!sets[i]) {
			fprintf(stderr, "bench sampler: out of memory\n");
			rc = 1;
			goto out;
		}
		make_logits(sets[i], n, &r);
	}
	printf("sampler bench: vocabulary %llu, %llu iterations, seed %llu\n",
	       (unsigned long long)a.vocab, (unsigned long long)a.iters,
	       (unsigned long long)a.seed);
	rc = 0;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !rc; i++)
		rc = run_case(&cases[i], a.seed, sets, n, a.iters) ? 1 : 0;
	if (!rc)
		rc = run_reference(&cases[0], a.seed, sets, n, a.iters / 10 ? a.iters / 10 : 1) ?
			1 : 0;
out:
	for (i = 0; i < BENCH_SETS; i++)
		free(sets[i]);
	return rc;
}
