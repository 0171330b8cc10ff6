// SPDX-License-Identifier: MIT
/*
 * pccx bench --config NAME: simulated decode of a Gemma 3n shape with synthetic weights on the
 * cycle simulator. Prints simulated tok/s, the bandwidth reached against the DDR ceiling, the
 * stage breakdown and how long the host took per simulated token. Figures only: nothing passes
 * or fails.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "diag.h"
#include "gemma_config.h"
#include "pccx/pccx.h"
#include "pccx_isa.h"
#include "pccx_regs.h"

struct bench_args {
	struct pccx_device_opts dopt;
	struct pccx_model_opts mopt;
	uint64_t tokens, prompt;
	bool no_rowmask;
};

#define A(f, type) PCCX_AT(struct bench_args, f, type)
static const struct pccx_opt bench_opts[] = {
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(mopt.synth_config, const char *), "NAME",
		 "model shape (default e4b)", .values = pccx__gemma_config_names),
	PCCX_OPT("tokens", 0, PCCX_OPT_UINT, A(tokens, uint64_t), "N",
		 "tokens decoded (default 2)", .min = 1, .max = 100000),
	PCCX_OPT("prompt", 0, PCCX_OPT_UINT, A(prompt, uint64_t), "N",
		 "prompt tokens before decoding (default 1); their prefill is timed too",
		 .min = 1, .max = 65535),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(mopt.synth_seed, uint64_t), "S",
		 "seed of the synthetic weights (default 1)"),
	PCCX_OPT("dtb", 0, PCCX_OPT_PATH, A(dopt.dtb, const char *), "FILE",
		 "device parameters"),
	PCCX_OPT("trace", 0, PCCX_OPT_PATH, A(dopt.trace_path, const char *), "F.json",
		 "write a Chrome/Perfetto trace"),
	PCCX_OPT("no-rowmask", 0, PCCX_OPT_FLAG, A(no_rowmask, bool), NULL,
		 "stream the sparse FFN layers' W_up and W_down whole although the\n"
		 "device has FEATURES.ROWMASK / COLSKIP (the dense figures, for comparison)"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd bench_cmd = {
	.name = "bench",
	.usage = "[--sim] --config NAME [--tokens N] [--prompt N] [--seed S] [--dtb F]\n"
		 "             [--trace F.json] [--no-rowmask]",
	.about = "Simulate a prompt and greedy decode of N tokens of a synthetic model of the named\n"
		 "shape on the cycle simulator and print simulated prefill and decode tok/s, the\n"
		 "time to the first token, DDR bandwidth against the ceiling, the stage breakdown\n"
		 "and host seconds per simulated token.\n",
	.opts = bench_opts,
};

static void progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
	(void)user;
	if (done >= total)
		fprintf(stderr, "%s: done\n", stage);
}

/* What the figures are made of. */
struct bench_run {
	double t_load, t_pre, t_gen;
	struct pccx_stats st;
	struct pccx_device_info info;
	struct pccx_stage_time *prof;
	size_t n_prof;
};

/* The prompt: BOS, then ids spread over the vocabulary (the figures do not depend on them). */
static int32_t *prompt_ids(uint64_t n, uint32_t vocab)
{
	int32_t *ids = malloc(n * sizeof(*ids));
	uint64_t i;

	if (!ids)
		return NULL;
	ids[0] = 2;
	for (i = 1; i < n; i++)
		ids[i] = (int32_t)(3 + (i * 7919) % (vocab - 3));
	return ids;
}

/* Load, prefill the prompt, decode `tokens` greedy tokens, collect the figures. */
static int bench(struct bench_args *a, struct bench_run *r, pccx_diag *d)
{
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = false,
					  .no_rowmask = a->no_rowmask };
	struct pccx_cli_session cs;
	pccx_sampler_config scfg;
	int32_t *ids = NULL;
	double t0;
	int rc;

	pccx_sampler_config_default(&scfg);
	scfg.temperature = 0;          /* greedy: the figures do not depend on sampling */
	scfg.repetition_penalty = 1;

	t0 = pccx_cli_now();
	rc = pccx_cli_session_open(&a->dopt, &a->mopt, &sopt, &cs, d);
	r->t_load = pccx_cli_now() - t0;
	if (!rc) {
		struct pccx_gemma_config cfg;

		rc = pccx__gemma_config_preset(a->mopt.synth_config, &cfg, d);
		ids = rc ? NULL : prompt_ids(a->prompt, cfg.vocab);
		if (!rc && !ids)
			rc = pccx__fail(d, PCCX_ERR_NOMEM, "bench: out of memory");
	}
	t0 = pccx_cli_now();
	if (!rc)
		rc = pccx_session_prefill(cs.s, ids, a->prompt, d);
	r->t_pre = pccx_cli_now() - t0;
	free(ids);
	t0 = pccx_cli_now();
	if (!rc)
		rc = pccx_session_generate(cs.s, &scfg, a->tokens, NULL, NULL, d);
	r->t_gen = pccx_cli_now() - t0;
	if (!rc)
		rc = pccx_device_flush(cs.dev, d);
	if (!rc)
		rc = pccx_session_stats(cs.s, &r->st);
	if (!rc)
		rc = pccx_device_info(cs.dev, &r->info);
	if (!rc)
		rc = pccx_session_stage_profile(cs.s, &r->prof, &r->n_prof);
	pccx_cli_session_close(&cs);
	return rc;
}

static double port_bound(const struct pccx_device_info *info)
{
	return (double)PCCX_WSTREAM_PORTS * PCCX_BEAT_BYTES * (double)info->axi_hz;
}

static void print_figures(const char *config, const struct bench_run *r, bool no_rowmask)
{
	const struct pccx_stats *st = &r->st;
	double dec_s = (double)st->decode_cycles / (double)r->info.core_hz;
	double per_tok_bytes = st->decode_steps ?
		(double)st->decode_weight_bytes / (double)st->decode_steps : 0;
	double bw = dec_s > 0 ? per_tok_bytes * (double)st->decode_steps / dec_s : 0;

	printf("config %s: %llu decode steps simulated (setup %.1f s)\n", config,
	       (unsigned long long)st->decode_steps, r->t_load);
	printf("sparse FFN streaming: W_up (GEMV rowmask) %s, W_down (q4c columns) %s\n",
	       !(r->info.features & PCCX_FEAT_ROWMASK) ? "off (the device lacks FEATURES.ROWMASK)" :
	       no_rowmask ? "off (--no-rowmask)" : "on",
	       !(r->info.features & PCCX_FEAT_COLSKIP) ? "off (the device lacks FEATURES.COLSKIP)" :
	       no_rowmask ? "off (--no-rowmask)" : "on");
	printf("simulated decode: %.3f tok/s (%.2f ms per token at %.0f MHz)\n",
	       pccx_cli_decode_tok_s(st, &r->info),
	       st->decode_steps ? 1e3 * dec_s / (double)st->decode_steps : 0.0,
	       (double)r->info.core_hz / 1e6);
	printf("weight bytes per token: %.3f GB; achieved %.2f GB/s = %.1f%% of the %.1f GB/s "
	       "DDR ceiling\n", per_tok_bytes / 1e9, bw / 1e9,
	       100.0 * bw / (double)r->info.ddr_bytes_per_s,
	       (double)r->info.ddr_bytes_per_s / 1e9);
	/* the weight ports' bound: each port one beat per AXI cycle */
	printf("weight ports: %.2f GB/s = %.1f%% of the %u ports' %.1f GB/s at %.0f MHz AXI\n",
	       bw / 1e9, 100.0 * bw / port_bound(&r->info), PCCX_WSTREAM_PORTS,
	       port_bound(&r->info) / 1e9, (double)r->info.axi_hz / 1e6);
	printf("host: %.3f s per simulated token\n",
	       st->decode_steps ? r->t_gen / (double)st->decode_steps : 0.0);
	if (st->prompt_tokens)
		printf("simulated prefill: %.3f tok/s (%llu prompt tokens, first token after %.2f ms; "
		       "host %.2f s)\n", pccx_cli_prompt_tok_s(st, &r->info),
		       (unsigned long long)st->prompt_tokens,
		       1e3 * pccx_cli_first_token_s(st, &r->info), r->t_pre);
}

static void print_profile(const struct pccx_stage_time *prof, size_t n)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < n; i++)
		total += prof[i].cycles;
	printf("stage breakdown (decode steps, summed over layers):\n");
	for (i = 0; i < n; i++)
		printf("  %-28s %14llu cycles %6.2f%%  (x%llu)\n", prof[i].name,
		       (unsigned long long)prof[i].cycles,
		       total ? 100.0 * (double)prof[i].cycles / (double)total : 0.0,
		       (unsigned long long)prof[i].count);
}

int pccx_cmd_bench_sim(int argc, char **argv)
{
	struct bench_args a = {
		.dopt = { sizeof(a.dopt), NULL, NULL, NULL, NULL },
		.mopt = { sizeof(a.mopt), NULL, "e4b", 1, NULL, progress, NULL },
		.tokens = 2,
		.prompt = 1,
	};
	struct bench_run r = { 0 };
	pccx_diag d = { 0 };
	int rc;

	rc = pccx_opt_parse(&bench_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = bench(&a, &r, &d);
	if (rc) {
		pccx_cli_fail(rc, &d);
	} else {
		print_figures(a.mopt.synth_config, &r, a.no_rowmask);
		print_profile(r.prof, r.n_prof);
	}
	free(r.prof);
	return rc ? 1 : 0;
}
