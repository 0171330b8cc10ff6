/* SPDX-License-Identifier: MIT */
/*
 * pccx bench sampler: nanoseconds per next-token sample on Gemma 3n sized logits
 * (262 400 soft-capped values) for a few typical settings, plus the full-sort reference for
 * scale. Figures only; nothing passes or fails.
 *
 *   usage: sampler [--iters N] [--vocab N] [--seed S]
 */
#include <errno.h>
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

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Decoder-like logits: a broad bell of low values, a few dominant tokens, softcap 30. */
static void make_logits(float *l, size_t n, pccx_rng *r)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float g = pccx_rng_uniform_float(r) + pccx_rng_uniform_float(r) +
			  pccx_rng_uniform_float(r) + pccx_rng_uniform_float(r) - 2.0f;

		l[i] = g * 4.0f - 3.0f;
	}
	for (i = 0; i < 32; i++)
		l[pccx_rng_next_u32(r) % n] = 8.0f + pccx_rng_uniform_float(r) * 14.0f;
	for (i = 0; i < n; i++)
		l[i] = 30.0f * tanhf(l[i] / 30.0f);
}

static int parse_num(const char *opt, const char *s, unsigned long long max,
		     unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s ? s : "", &end, 0);
	if (!s || errno || end == s || *end || *out > max) {
		fprintf(stderr, "bench sampler: %s needs a number (at most %llu)\n", opt, max);
		return -1;
	}
	return 0;
}

struct bench_case {
	const char *name;
	pccx_sampler_config cfg;
	unsigned iters_div;	/* slow cases run iters / iters_div times */
};

static int run_case(const struct bench_case *bc, float *const *sets, size_t n,
		    unsigned long long iters)
{
	pccx_sampler *s = NULL;
	pccx_diag d = { 0 };
	int32_t hist[BENCH_HISTORY], tok = 0;
	size_t bound_max = 0;
	unsigned long long it, runs = iters / bc->iters_div ? iters / bc->iters_div : 1;
	double t0, t1;
	unsigned i;

	if (pccx_sampler_create(&s, &bc->cfg, n, &d)) {
		fprintf(stderr, "bench sampler: %s\n", d.msg);
		return -1;
	}
	for (i = 0; i < BENCH_HISTORY; i++)
		hist[i] = (int32_t)((i * 7919u) % n);
	t0 = now_ns();
	for (it = 0; it < runs; it++) {
		if (pccx_sampler_sample(s, sets[it % BENCH_SETS], n, hist, BENCH_HISTORY, &tok,
					&d)) {
			fprintf(stderr, "bench sampler: %s\n", d.msg);
			pccx_sampler_destroy(s);
			return -1;
		}
		if (pccx_sampler_last_bound(s) > bound_max)
			bound_max = pccx_sampler_last_bound(s);
		/* A sliding history, as in generation. */
		hist[it % BENCH_HISTORY] = tok;
	}
	t1 = now_ns();
	printf("  %-44s %12.0f ns/sample  (%llu runs, candidates <= %zu)\n", bc->name,
	       (t1 - t0) / (double)runs, runs, bound_max);
	pccx_sampler_destroy(s);
	return 0;
}

static int run_reference(const pccx_sampler_config *cfg, float *const *sets, size_t n,
			 unsigned long long runs)
{
	int32_t hist[BENCH_HISTORY];
	unsigned long long it;
	double t0, t1;
	unsigned i;

	for (i = 0; i < BENCH_HISTORY; i++)
		hist[i] = (int32_t)((i * 7919u) % n);
	t0 = now_ns();
	for (it = 0; it < runs; it++) {
		pccx_sampler_naive nv;
		pccx_diag d = { 0 };

		if (pccx_sampler_naive_distribution(cfg, sets[it % BENCH_SETS], n, hist,
						    BENCH_HISTORY, &nv, &d)) {
			fprintf(stderr, "bench sampler: %s\n", d.msg);
			return -1;
		}
		pccx_sampler_naive_free(&nv);
	}
	t1 = now_ns();
	printf("  %-44s %12.0f ns/sample  (%llu runs)\n", "full-sort reference, defaults",
	       (t1 - t0) / (double)runs, runs);
	return 0;
}

int pccx_cmd_bench_sampler(int argc, char **argv)
{
	unsigned long long iters = 200, vocab = 262400, seed = 1;
	float *sets[BENCH_SETS] = { NULL };
	struct bench_case cases[6];
	pccx_rng r;
	int i, rc = 0;

	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [--iters N] [--vocab N] [--seed S]\n"
			       "  ns per next-token sample on random decoder-like logits\n"
			       "  (default: 200 iterations, vocabulary 262400, seed 1)\n", argv[0]);
			return 0;
		}
		if (!strcmp(argv[i], "--iters")) {
			if (parse_num("--iters", v, 100000000ull, &iters) || iters == 0)
				return 2;
		} else if (!strcmp(argv[i], "--vocab")) {
			if (parse_num("--vocab", v, PCCX_SAMPLER_MAX_VOCAB, &vocab) || vocab == 0)
				return 2;
		} else if (!strcmp(argv[i], "--seed")) {
			if (parse_num("--seed", v, ~0ull, &seed))
				return 2;
		} else {
			fprintf(stderr, "usage: %s [--iters N] [--vocab N] [--seed S]\n",
				argc > 0 ? argv[0] : "sampler");
			return 2;
		}
		i++;
	}

	pccx_rng_seed(&r, seed, 1);
	for (i = 0; i < BENCH_SETS; i++) {
		sets[i] = malloc((size_t)vocab * sizeof(float));
		if (!sets[i]) {
			fprintf(stderr, "bench sampler: out of memory\n");
			rc = 1;
			goto out;
		}
		make_logits(sets[i], (size_t)vocab, &r);
	}

	for (i = 0; i < 6; i++) {
		pccx_sampler_config_default(&cases[i].cfg);
		cases[i].cfg.seed = seed;
		cases[i].iters_div = 1;
	}
	cases[0].name = "defaults (T 1, k 64, p 0.9, rho 1.15/64)";
	cases[1].name = "greedy (T 0, rho 1.15/64)";
	cases[1].cfg.temperature = 0.0f;
	cases[2].name = "top-k off, top-p 0.9";
	cases[2].cfg.top_k = 0;
	cases[3].name = "top-k off, top-p 0.95, min-p 0.05, T 0.7";
	cases[3].cfg.top_k = 0;
	cases[3].cfg.top_p = 0.95f;
	cases[3].cfg.min_p = 0.05f;
	cases[3].cfg.temperature = 0.7f;
	cases[4].name = "top-k 40, top-p 0.95, T 0.8 (llama.cpp-like)";
	cases[4].cfg.top_k = 40;
	cases[4].cfg.top_p = 0.95f;
	cases[4].cfg.temperature = 0.8f;
	cases[5].name = "no filter (k off, p 1): full sort";
	cases[5].cfg.top_k = 0;
	cases[5].cfg.top_p = 1.0f;
	cases[5].iters_div = 10;

	printf("sampler bench: vocabulary %llu, %llu iterations, seed %llu\n", vocab, iters,
	       seed);
	for (i = 0; i < 6 && !rc; i++)
		rc = run_case(&cases[i], sets, (size_t)vocab, iters) ? 1 : 0;
	if (!rc)
		rc = run_reference(&cases[0].cfg, sets, (size_t)vocab,
				   iters / 10 ? iters / 10 : 1) ? 1 : 0;
out:
	for (i = 0; i < BENCH_SETS; i++)
		free(sets[i]);
	return rc;
}
