// SPDX-License-Identifier: MIT
/* pccx command-line tool: what several commands share (cli.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "session.h"
#include "kernels.h"
#include "pccx/sampler.h"

bool pccx_cli_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

int pccx_cli_fail(int status, const pccx_diag *d)
{
	if (d && d->msg[0])
		fprintf(stderr, "pccx: %s\n", d->msg);
	else
		fprintf(stderr, "pccx: %s\n", pccx_strerror(status));
	return 1;
}

double pccx_cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The value domains are pccx_sampler_config_check's, which every user of the config runs. */
#define SC(f, type) PCCX_AT(pccx_sampler_config, f, type)
const struct pccx_opt pccx_cli_sampler_opts[] = {
	PCCX_OPT("temp", 0, PCCX_OPT_FLOAT, SC(temperature, float), "T",
		 "temperature; 0 = greedy"),
	PCCX_OPT("top-k", 0, PCCX_OPT_INT, SC(top_k, int32_t), "K",
		 "keep the K highest logits; 0 = off"),
	PCCX_OPT("top-p", 0, PCCX_OPT_FLOAT, SC(top_p, float), "P",
		 "nucleus: keep mass < P; 1 = off"),
	PCCX_OPT("min-p", 0, PCCX_OPT_FLOAT, SC(min_p, float), "P",
	  "keep p >= P * p_max; 0 = off"),
	PCCX_OPT("rep-penalty", 0, PCCX_OPT_FLOAT, SC(repetition_penalty, float), "R",
		 "repetition penalty; 1 = off"),
	{ 0 }
};

int pccx_cli_parse_kernel(const char *value, void *dst)
{
	int k;

	for (k = PCCX_KERN_AUTO; strcmp(pccx__kern_name((enum pccx_kern_impl)k), "?"); k++) {
		if (!strcmp(value, pccx__kern_name((enum pccx_kern_impl)k))) {
			*(enum pccx_kern_impl *)dst = (enum pccx_kern_impl)k;
			return 0;
		}
	}
	return -1;
}

const char *pccx_cli_kernel_names(void)
{
	static char names[64];
	size_t len = 0;
	int k;

	for (k = PCCX_KERN_AUTO; strcmp(pccx__kern_name((enum pccx_kern_impl)k), "?"); k++)
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
					pccx__kern_name((enum pccx_kern_impl)k));
	return names;
}

int pccx_cli_session_open(const struct pccx_device_opts *dopt, const struct pccx_model_opts *mopt,
			  const struct pccx_session_opts *sopt, struct pccx_cli_session *cs,
			  pccx_diag *d)
{
	int rc;

	memset(cs, 0, sizeof(*cs));
	rc = pccx_device_open(dopt, &cs->dev, d);
	if (!rc)
		rc = pccx_model_load(cs->dev, mopt, &cs->model, d);
	if (!rc)
		rc = pccx_session_create(cs->model, sopt, &cs->s, d);
	return rc;
}

void pccx_cli_session_close(struct pccx_cli_session *cs)
{
	pccx_session_free(cs->s);
	pccx_model_free(cs->model);
	pccx_device_close(cs->dev);
	memset(cs, 0, sizeof(*cs));
}

double pccx_cli_decode_tok_s(const struct pccx_stats *st, const struct pccx_device_info *info)
{
	if (!st->decode_cycles)
		return 0.0;
	return (double)st->decode_steps * (double)info->core_hz / (double)st->decode_cycles;
}

/* Device time of the jobs that were not generation steps: the prompt, its last step included. */
double pccx_cli_first_token_s(const struct pccx_stats *st, const struct pccx_device_info *info)
{
	if (!info->core_hz || st->device_cycles < st->decode_cycles)
		return 0.0;
	return (double)(st->device_cycles - st->decode_cycles) / (double)info->core_hz;
}

double pccx_cli_prompt_tok_s(const struct pccx_stats *st, const struct pccx_device_info *info)
{
	double s = pccx_cli_first_token_s(st, info);

	return s > 0 ? (double)st->prompt_tokens / s : 0.0;
}

int pccx_cli_config(const char *name, uint64_t max_ctx, struct pccx_gemma_config *cfg,
		    pccx_diag *d)
{
	int rc = pccx__gemma_config_preset(name, cfg, d);

	if (!rc && max_ctx)
		cfg->max_ctx = (uint32_t)max_ctx;
	return rc;
}

int pccx_cli_synth(const struct pccx_gemma_config *cfg, uint64_t seed, unsigned n_threads,
		   struct pccx_gemma_model **m, pccx_diag *d)
{
	int rc = pccx__gemma_model_create(m, cfg, d);

	if (!rc)
		rc = pccx__gemma_synth(*m, seed, n_threads, d);
	if (rc) {
		pccx__gemma_model_free(*m);
		*m = NULL;
	}
	return rc;
}
