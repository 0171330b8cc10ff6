// SPDX-License-Identifier: MIT
/*
 * pccx synth: write the synthetic model of a named shape as a GGUF in llama.cpp's layout of
 * its family (gemma, gemma2, gemma3, gemma3n or gemma4), or list the shapes.
 *
 *   pccx synth --config tiny-vocab --seed 1 [--tokenizer tokenizer.json] -o model.gguf
 *   pccx synth --list
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "session.h"
#include "pccx/tokenizer.h"

struct synth_args {
	const char *config, *out, *tokenizer;
	uint64_t seed;
	bool list;
};

#define A(f, type) PCCX_AT(struct synth_args, f, type)
static const struct pccx_opt synth_opts[] = {
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(config, const char *), "NAME",
		 "model shape (required unless --list)", .values = pccx__gemma_config_names),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S",
		 "seed of the synthetic weights (default 1)"),
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, A(tokenizer, const char *), "FILE",
		 "Hugging Face tokenizer.json to embed"),
	PCCX_OPT(NULL, 'o', PCCX_OPT_PATH, A(out, const char *), "FILE",
		 "the GGUF to write (required unless --list)"),
	PCCX_OPT("list", 0, PCCX_OPT_FLAG, A(list, bool), NULL,
		 "print every shape with its family, one per line, and exit"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd synth_cmd = {
	.name = "synth",
	.usage = "--config NAME [--seed S] [--tokenizer FILE] -o FILE\n--list",
	.about = "Write seeded synthetic weights of a model shape of any family (Gemma 1, 2, 3,\n"
		 "3n or 4) as a GGUF in llama.cpp's layout of the family (architecture gemma,\n"
		 "gemma2, gemma3, gemma3n or gemma4: Q4_0 projections, F32 norms, <arch>.*\n"
		 "metadata), with the tokenizer embedded when --tokenizer is given.\n"
		 "'pccx ref -m FILE' runs it. --list prints the shapes.\n",
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

/* "2nd", "6th": the period of the global layers in the listing */
static const char *ordinal(uint32_t n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* One line per preset: name, architecture, then the shape. */
static void list_configs(FILE *f)
{
	const struct pccx_gemma_config *c;
	unsigned i;
	int w = 0;

	for (i = 0; (c = pccx__gemma_config_at(i)); i++)	/* the name column's width */
		w = (int)strlen(c->name) > w ? (int)strlen(c->name) : w;
	for (i = 0; (c = pccx__gemma_config_at(i)); i++) {
		const struct pccx_family_desc *fd = pccx__family(c->family);

		fprintf(f, "%-*s %-8s %s, %u layers, D %u, FFN %u, %u q / %u kv heads of %u, "
			"vocab %u, ", w, c->name, fd->arch, fd->title, c->n_layers, c->d_model,
			c->d_ffn, c->n_heads, c->n_kv_heads, c->head_dim, c->vocab);
		if (c->global_period == 1)
			fprintf(f, "every layer global\n");
		else
			fprintf(f, "window %u, every %u%s layer global\n", c->window,
				c->global_period, ordinal(c->global_period));
	}
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
	if (a.list && (a.config || a.out || a.tokenizer))
		return pccx_opt_fail(&synth_cmd, "--list takes no other option");
	if (a.list) {
		list_configs(stdout);
		return 0;
	}
	if (!a.config || !a.out)
		return pccx_opt_fail(&synth_cmd, "%s is required", a.config ? "-o FILE" :
				     "--config NAME");
	rc = synth(&a, &cfg, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	fprintf(stderr, "pccx synth: %s: config %s, seed %llu, %.2f s\n", a.out, cfg.name,
		(unsigned long long)a.seed, pccx_cli_now() - t0);
	return 0;
}
