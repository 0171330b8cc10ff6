// SPDX-License-Identifier: MIT
/*
 * pccx synth: write the synthetic model of a named shape as a gemma3n GGUF.
 *
 *   pccx synth --config tiny-vocab --seed 1 [--tokenizer tokenizer.json] -o model.gguf
 */
#include <stdio.h>

#include "cli.h"
#include "diag.h"
#include "session.h"
#include "pccx/tokenizer.h"

struct synth_args {
	const char *config, *out, *tokenizer;
	uint64_t seed;
};

#define A(f, type) PCCX_AT(struct synth_args, f, type)
static const struct pccx_opt synth_opts[] = {
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(config, const char *), "NAME", "model shape",
		 .flags = PCCX_OPT_REQUIRED, .values = pccx__gemma_config_names),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S",
		 "seed of the synthetic weights (default 1)"),
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, A(tokenizer, const char *), "FILE",
		 "Hugging Face tokenizer.json to embed"),
	PCCX_OPT(NULL, 'o', PCCX_OPT_PATH, A(out, const char *), "FILE", "the GGUF to write",
		 .flags = PCCX_OPT_REQUIRED),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd synth_cmd = {
	.name = "synth",
	.usage = "--config NAME [--seed S] [--tokenizer FILE] -o FILE",
	.about = "Write seeded synthetic weights of a Gemma 3n shape as a GGUF in llama.cpp's\n"
		 "gemma3n layout (Q4_0 projections, F32 norms, gemma3n.* metadata), with the\n"
		 "tokenizer embedded when --tokenizer is given. 'pccx ref -m FILE' runs it.\n",
	.opts = synth_opts,
};

static int synth(const struct synth_args *a, struct pccx_gemma_config *cfg, pccx_diag *d)
{
	struct pccx_gemma_model *m = NULL;
	pccx_tokenizer *tk = NULL;
	int rc;

	rc = pccx_cli_config(a->config, 0, cfg, d);
	if (!rc && a->tokenizer)
		rc = pccx_tokenizer_load_json(a->tokenizer, &tk, d);
	if (!rc && tk && pccx_tokenizer_n_vocab(tk) > cfg->vocab)
		rc = pccx__fail(d, PCCX_ERR_INVALID,
				"the tokenizer has %zu ids, config '%s' only %u",
				pccx_tokenizer_n_vocab(tk), cfg->name, cfg->vocab);
	if (!rc)
		rc = pccx_cli_synth(cfg, a->seed, 0, &m, d);
	if (!rc)
		rc = pccx_cli_save_gguf(m, tk, a->out, d);
	pccx__gemma_model_free(m);
	pccx_tokenizer_free(tk);
	return rc;
}

int pccx_cmd_synth(int argc, char **argv)
{
	struct synth_args a = { .seed = 1 };
	struct pccx_gemma_config cfg;
	pccx_diag d = { 0 };
	double t0 = pccx_cli_now();
	int rc;

	rc = pccx_opt_parse(&synth_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = synth(&a, &cfg, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	fprintf(stderr, "pccx synth: %s: config %s, seed %llu, %.2f s\n", a.out, cfg.name,
		(unsigned long long)a.seed, pccx_cli_now() - t0);
	return 0;
}
