// SPDX-License-Identifier: MIT
/*
 * pccx bench --config NAME: simulated decode of a Gemma 3n shape with synthetic weights on the
 * cycle simulator. Prints simulated tok/s, the bandwidth reached against the DDR ceiling, the
 * stage breakdown and how long the host took per simulated token. Figures only: nothing passes
 * or fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "pccx/pccx.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
	(void)user;
	if (done >= total)
		fprintf(stderr, "%s: done\n", stage);
}

int pccx_cmd_bench_sim(int argc, char **argv)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "e4b", 1, NULL, progress, NULL };
	struct pccx_session_opts sopt = { sizeof(sopt), 0, false };
	pccx_sampler_config scfg;
	struct pccx_stage_time *prof = NULL;
	struct pccx_device_info info;
	struct pccx_stats st;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	pccx_diag d = { 0 };
	size_t n_prof = 0, tokens = 2, i;
	int32_t bos = 2;
	double t0, t_load, t_gen;
	uint64_t total = 0;
	int rc, a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
			printf("usage: pccx bench [--sim] --config NAME [--tokens N] [--seed S] "
			       "[--dtb F] [--trace F.json]\n\n"
			       "Simulate greedy decode of N tokens (default 2) of a synthetic model of\n"
			       "the named shape (default e4b) on the cycle simulator and print simulated\n"
			       "tok/s, DDR bandwidth against the ceiling, the stage breakdown and host\n"
			       "seconds per simulated token.\n");
			return 0;
		}
		if (!strcmp(argv[a], "--sim"))
			continue;
		if (a + 1 >= argc) {
			fprintf(stderr, "pccx bench: '%s' needs a value\n", argv[a]);
			return 2;
		}
		if (!strcmp(argv[a], "--config"))
			mopt.synth_config = argv[++a];
		else if (!strcmp(argv[a], "--tokens"))
			tokens = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--seed"))
			mopt.synth_seed = strtoull(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--dtb"))
			dopt.dtb = argv[++a];
		else if (!strcmp(argv[a], "--trace"))
			dopt.trace_path = argv[++a];
		else {
			fprintf(stderr, "pccx bench: unknown option '%s'\n", argv[a]);
			return 2;
		}
	}
	if (!tokens || tokens > 100000) {
		fprintf(stderr, "pccx bench: --tokens must be 1..100000\n");
		return 2;
	}
	pccx_sampler_config_default(&scfg);
	scfg.temperature = 0;          /* greedy: the figures do not depend on sampling */
	scfg.repetition_penalty = 1;

	t0 = now();
	rc = pccx_device_open(&dopt, &dev, &d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, &d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, &d);
	t_load = now() - t0;
	if (!rc)
		rc = pccx_session_prefill(s, &bos, 1, &d);
	t0 = now();
	if (!rc)
		rc = pccx_session_generate(s, &scfg, tokens, NULL, NULL, &d);
	t_gen = now() - t0;
	if (!rc)
		rc = pccx_device_flush(dev, &d);
	if (!rc)
		rc = pccx_session_stats(s, &st);
	if (!rc)
		rc = pccx_device_info(dev, &info);
	if (!rc)
		rc = pccx_session_stage_profile(s, &prof, &n_prof);
	if (rc) {
		pccx_cli_fail(rc, &d);
		goto out;
	}
	{
		double dec_s = (double)st.decode_cycles / (double)info.core_hz;
		double per_tok_bytes = st.decode_steps ?
			(double)st.decode_weight_bytes / (double)st.decode_steps : 0;
		double bw = dec_s > 0 ? per_tok_bytes * (double)st.decode_steps / dec_s : 0;

		printf("config %s: %llu decode steps simulated (setup %.1f s)\n",
		       mopt.synth_config, (unsigned long long)st.decode_steps, t_load);
		printf("simulated decode: %.3f tok/s (%.2f ms per token at %.0f MHz)\n",
		       dec_s > 0 ? (double)st.decode_steps / dec_s : 0.0,
		       st.decode_steps ? 1e3 * dec_s / (double)st.decode_steps : 0.0,
		       (double)info.core_hz / 1e6);
		printf("weight bytes per token: %.3f GB; achieved %.2f GB/s = %.1f%% of the %.1f GB/s "
		       "DDR ceiling\n", per_tok_bytes / 1e9, bw / 1e9,
		       100.0 * bw / (double)info.ddr_bytes_per_s,
		       (double)info.ddr_bytes_per_s / 1e9);
		printf("host: %.2f s per simulated token\n",
		       st.decode_steps ? t_gen / (double)st.decode_steps : 0.0);
		for (i = 0; i < n_prof; i++)
			total += prof[i].cycles;
		printf("stage breakdown (decode steps, summed over layers):\n");
		for (i = 0; i < n_prof; i++)
			printf("  %-28s %14llu cycles %6.2f%%  (x%llu)\n", prof[i].name,
			       (unsigned long long)prof[i].cycles,
			       total ? 100.0 * (double)prof[i].cycles / (double)total : 0.0,
			       (unsigned long long)prof[i].count);
	}
out:
	free(prof);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc ? 1 : 0;
}
