// SPDX-License-Identifier: MIT
/*
 * pccx bench --ref: host decode speed and memory of the bit-exact reference on a full model
 * shape with synthetic weights (E4B by default). Figures only; nothing passes or fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli.h"
#include "exec_ref.h"
#include "gemma3n.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pccx bench --ref [--config NAME] [-n TOKENS] [options]\n"
		"\n"
		"Decode TOKENS tokens (greedy) with the reference on synthetic weights and print "
		"the\n"
		"host decode rate, the weight bytes streamed per token and the peak RSS.\n"
		"\n"
		"options:\n"
		"  --config NAME   %s (default e4b)\n"
		"  -n TOKENS       decode steps timed (default 8), after one warm-up step\n"
		"  --prefill N     also time N steps without the LM head (default 0)\n"
		"  --seed S        weights seed (default 1)\n"
		"  --threads N     host threads (default: all CPUs)\n"
		"  --kernel K      auto, ref, avx2\n"
		"  --max-ctx N     KV positions of global layers\n",
		pccx_g3n_config_names());
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int num(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || !*s || *end || *s == '-' || *v > max;
}

int pccx_cmd_bench_ref(int argc, char **argv)
{
	const char *config = "e4b";
	unsigned long long n = 8, prefill = 0, seed = 1, threads = 0, max_ctx = 0, v;
	enum pccx_kern_impl kernel = PCCX_KERN_AUTO;
	struct pccx_g3n_config cfg;
	struct pccx_g3n_model *m = NULL;
	struct pccx_ref_exec *x = NULL;
	struct pccx_g3n_session *s = NULL;
	const struct pccx_ref_counters *cnt;
	pccx_diag d = { 0 };
	struct rusage ru;
	float *logits = NULL;
	double t0, t_synth, t_dec = 0, t_pre = 0;
	uint64_t ops0, ops1;
	uint32_t tok = 2, i, k;
	int a, rc, ret = 1;

	if (pccx_cli_wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	for (a = 1; a < argc; a++) {
		const char *o = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;

		if (!strcmp(o, "--ref"))
			continue;
		if (!val) {
			fprintf(stderr, "pccx: bench --ref: unknown option or missing value '%s'\n",
				o);
			usage(stderr);
			return 2;
		}
		a++;
		if (!strcmp(o, "--config"))
			config = val;
		else if (!strcmp(o, "-n") && !num(val, 100000, &v))
			n = v;
		else if (!strcmp(o, "--prefill") && !num(val, 100000, &v))
			prefill = v;
		else if (!strcmp(o, "--seed") && !num(val, ~0ull, &v))
			seed = v;
		else if (!strcmp(o, "--threads") && !num(val, 256, &v))
			threads = v;
		else if (!strcmp(o, "--max-ctx") && !num(val, 65535, &v) && v)
			max_ctx = v;
		else if (!strcmp(o, "--kernel") && !strcmp(val, "ref"))
			kernel = PCCX_KERN_REF;
		else if (!strcmp(o, "--kernel") && !strcmp(val, "avx2"))
			kernel = PCCX_KERN_AVX2;
		else if (!strcmp(o, "--kernel") && !strcmp(val, "auto"))
			kernel = PCCX_KERN_AUTO;
		else {
			fprintf(stderr, "pccx: bench --ref: bad option '%s %s'\n", o, val);
			usage(stderr);
			return 2;
		}
	}
	rc = pccx_g3n_config_preset(config, &cfg, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	if (max_ctx)
		cfg.max_ctx = (uint32_t)max_ctx;
	if (n + prefill + 1 > cfg.max_ctx) {
		fprintf(stderr, "pccx: bench --ref: %llu steps exceed the context %u\n",
			n + prefill + 1, cfg.max_ctx);
		return 2;
	}

	t0 = now_s();
	rc = pccx_g3n_model_create(&m, &cfg, &d);
	if (!rc)
		rc = pccx_g3n_synth(m, seed, (unsigned)threads, &d);
	t_synth = now_s() - t0;
	if (!rc)
		rc = pccx_ref_exec_create(&x, (unsigned)threads, kernel, &d);
	if (!rc)
		rc = pccx_g3n_session_create(&s, m, pccx_ref_exec_ops(), x, &d);
	if (rc) {
		pccx_cli_fail(rc, &d);
		goto out;
	}
	logits = malloc(sizeof(float) * cfg.vocab);
	if (!logits) {
		fprintf(stderr, "pccx: bench --ref: out of memory\n");
		goto out;
	}

	/* warm-up (first touch of the KV pages and of the scratch) */
	rc = pccx_g3n_session_step(s, tok, logits, &d);
	for (i = 0; !rc && i < prefill; i++) {
		t0 = now_s();
		rc = pccx_g3n_session_step(s, tok, NULL, &d);
		t_pre += now_s() - t0;
	}
	pccx_ref_exec_reset_counters(x);
	cnt = pccx_ref_exec_counters(x);
	for (i = 0; !rc && i < n; i++) {
		t0 = now_s();
		rc = pccx_g3n_session_step(s, tok, logits, &d);
		t_dec += now_s() - t0;
		for (tok = 0, k = 1; k < cfg.vocab; k++)
			if (logits[k] > logits[tok])
				tok = k;
	}
	if (rc) {
		pccx_cli_fail(rc, &d);
		goto out;
	}
	getrusage(RUSAGE_SELF, &ru);
	for (ops0 = 0, ops1 = 0, k = 0; k < 5; k++)
		ops0 += cnt->ops[k];
	ops1 = cnt->stream_bytes;
	printf("reference decode, config %s (%u layers, D %u, FFN %u, vocab %u), synthetic "
	       "weights\n",
	       cfg.name, cfg.n_layers, cfg.d_model, cfg.d_ffn, cfg.vocab);
	printf("  weights in device layout  %10.1f MB  (synthesised in %.1f s)\n",
	       (double)m->size / 1e6, t_synth);
	printf("  streamed per token        %10.1f MB  weights + KV rows\n",
	       (double)ops1 / n / 1e6);
	printf("  NPU ops per token         %10.0f\n", (double)ops0 / n);
	printf("  host kernel               %10s  x %u threads\n",
	       pccx_kern_name(pccx_ref_exec_kernel(x)), pccx_ref_exec_threads(x));
	printf("  decode                    %10.3f tok/s  (%.1f ms/token, %.2f GB/s streamed, %llu "
	       "tokens)\n",
	       n / t_dec, 1e3 * t_dec / n, (double)ops1 / t_dec / 1e9, n);
	if (prefill)
		printf("  prefill (no LM head)      %10.3f tok/s  (%llu tokens)\n", prefill / t_pre,
		       prefill);
	printf("  peak RSS                  %10.1f MB\n", ru.ru_maxrss / 1024.0);
	ret = 0;
out:
	free(logits);
	pccx_g3n_session_free(s);
	pccx_ref_exec_free(x);
	pccx_g3n_model_free(m);
	return ret;
}
