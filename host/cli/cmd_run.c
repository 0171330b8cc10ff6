// SPDX-License-Identifier: MIT
/* pccx run: generate text with Gemma 3n on the NPU (the simulated device by default). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gemma3n_config.h"
#include "pccx/pccx.h"
#include "pccx/tokenizer.h"

struct run_args {
	struct pccx_device_opts dopt;
	struct pccx_model_opts mopt;
	struct pccx_session_opts sopt;
	const char *prompt;
	uint64_t n, max_ctx;
	bool chat;
	pccx_sampler_config sc;
};

#define A(f, type) PCCX_AT(struct run_args, f, type)
static const struct pccx_opt run_opts[] = {
	PCCX_OPT(NULL, 'm', PCCX_OPT_PATH, A(mopt.path, const char *), "MODEL",
		 "a gemma3n GGUF, or a Hugging Face checkpoint (directory, *.safetensors,\n"
		 "*.json index)"),
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(mopt.synth_config, const char *), "NAME",
		 "synthesise a model of this shape instead", .values = pccx__gemma3n_config_names),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(mopt.synth_seed, uint64_t), "S",
		 "seed of the synthetic weights (default 1)"),
	PCCX_OPT(NULL, 'p', PCCX_OPT_STR, A(prompt, const char *), "PROMPT", "the prompt",
		 .flags = PCCX_OPT_REQUIRED),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N",
		 "tokens to generate (default 32)", .max = 1000000),
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, A(mopt.tokenizer, const char *), "FILE",
		 "tokenizer.json (default: the model's own); without any tokenizer the\n"
		 "prompt's bytes are the token ids and ids are printed"),
	PCCX_OPT("chat", 0, PCCX_OPT_FLAG, A(chat, bool), NULL,
		 "wrap the prompt in the Gemma chat template"),
	PCCX_OPT("backend", 0, PCCX_OPT_STR, A(dopt.backend, const char *), "NAME",
		 "sim (default) or kernel"),
	PCCX_OPT("dtb", 0, PCCX_OPT_PATH, A(dopt.dtb, const char *), "FILE",
		 "sim: device parameters"),
	PCCX_OPT("verify", 0, PCCX_OPT_FLAG, A(sopt.verify, bool), NULL,
		 "run the bit-exact reference alongside; stop at the first stage whose\n"
		 "bits differ"),
	PCCX_OPT("trace", 0, PCCX_OPT_PATH, A(dopt.trace_path, const char *), "F.json",
		 "sim: write a Chrome/Perfetto trace"),
	PCCX_OPT("sample-seed", 0, PCCX_OPT_UINT, A(sc.seed, uint64_t), "S",
		 "seed of the sampler"),
	PCCX_OPT("max-ctx", 0, PCCX_OPT_UINT, A(max_ctx, uint64_t), "N",
		 "KV-cache positions (default: the model's)", .min = 1, .max = 65535),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd run_cmd = {
	.name = "run",
	.usage = "(-m MODEL.gguf | --config NAME [--seed S]) -p PROMPT [-n N] [options]",
	.about = "Tokenizes PROMPT, runs every decode step as a v002 job on the device, samples "
		 "each\ntoken on the host and streams the text. Ends with a statistics line.\n",
	.opts = run_opts,
	.more_title = "sampler (docs/sampling.md)",
	.more = pccx_cli_sampler_opts,
	.more_at = offsetof(struct run_args, sc),
};

static void progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
	int width = 30, fill = total ? (int)(done * (uint64_t)width / total) : width;

	(void)user;
	fprintf(stderr, "\r%-14s [%.*s%*s] %3d%%", stage, fill,
		"##############################", width - fill, "",
		total ? (int)(done * 100 / total) : 100);
	if (done >= total)
		fputc('\n', stderr);
}

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	bool has_tok = *(bool *)user;

	if (has_tok)
		fwrite(piece, 1, len, stdout);
	else
		printf("[%d]", token);
	fflush(stdout);
	return 0;
}

/* The prompt's ids: the model's tokenizer, else one id per byte. */
static int prompt_ids(pccx_session *s, const char *prompt, bool chat, int32_t **ids, size_t *n,
		      pccx_diag *d)
{
	size_t i;

	if (pccx_session_tokenizer(s))
		return pccx_session_tokenize(s, prompt, chat, ids, n, d);
	*n = strlen(prompt);
	*ids = malloc((*n ? *n : 1) * sizeof(**ids));
	if (!*ids)
		return PCCX_ERR_NOMEM;
	for (i = 0; i < *n; i++)
		(*ids)[i] = (unsigned char)prompt[i];
	return PCCX_OK;
}

static void print_stats(const struct pccx_cli_session *cs, bool verified)
{
	struct pccx_device_info info;
	struct pccx_stats st;

	if (pccx_session_stats(cs->s, &st) || pccx_device_info(cs->dev, &info))
		return;
	fprintf(stderr,
		"stats: %llu tokens generated, %llu prompt tokens, host %.2f tok/s, %llu "
		"simulated cycles (%.3f ms at the modelled clock), simulated decode %.2f "
		"tok/s, DDR %.1f%% of the bandwidth ceiling%s\n",
		(unsigned long long)st.tokens, (unsigned long long)st.prompt_tokens,
		st.host_seconds > 0 ? (double)(st.tokens + st.prompt_tokens) / st.host_seconds :
		0.0,
		(unsigned long long)st.device_cycles, st.device_seconds * 1e3,
		pccx_cli_decode_tok_s(&st, &info), 100.0 * st.ddr_utilisation,
		verified ? ", verified: 0 differing bits" : "");
}

int pccx_cmd_run(int argc, char **argv)
{
	struct run_args a = {
		.dopt = { sizeof(a.dopt), NULL, NULL, NULL, NULL },
		.mopt = { sizeof(a.mopt), NULL, NULL, 1, NULL, progress, NULL },
		.sopt = { sizeof(a.sopt), 0, false },
		.n = 32,
	};
	struct pccx_cli_session cs;
	pccx_diag d = { 0 };
	int32_t *ids = NULL;
	size_t n_ids = 0;
	bool has_tok;
	int rc;

	pccx_sampler_config_default(&a.sc);
	rc = pccx_opt_parse(&run_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (!a.mopt.path && !a.mopt.synth_config)
		return pccx_opt_fail(&run_cmd, "give -m MODEL or --config NAME");
	a.sopt.max_context = (uint32_t)a.max_ctx;
	if (pccx_sampler_config_check(&a.sc, &d))
		return pccx_cli_fail(PCCX_ERR_INVALID, &d);

	rc = pccx_cli_session_open(&a.dopt, &a.mopt, &a.sopt, &cs, &d);
	if (!rc)
		rc = prompt_ids(cs.s, a.prompt, a.chat, &ids, &n_ids, &d);
	if (rc || !n_ids) {
		/* no tokens is reported, but has always ended the command with 0 */
		if (!rc)
			fprintf(stderr, "pccx run: the prompt gives no tokens\n");
		goto out;
	}
	fprintf(stderr, "prompt: %zu tokens%s\n", n_ids,
		a.sopt.verify ? " (verifying every stage)" : "");
	has_tok = pccx_session_tokenizer(cs.s) != NULL;
	rc = pccx_session_prefill(cs.s, ids, n_ids, &d);
	if (!rc)
		rc = pccx_session_generate(cs.s, &a.sc, a.n, on_token, &has_tok, &d);
	putchar('\n');
	fflush(stdout);
	if (!rc)
		rc = pccx_device_flush(cs.dev, &d);
	print_stats(&cs, a.sopt.verify && !rc);
out:
	free(ids);
	pccx_cli_session_close(&cs);
	return rc ? pccx_cli_fail(rc, &d) : 0;
}
