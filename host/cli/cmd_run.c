// SPDX-License-Identifier: MIT
/*
 * pccx run: generate text with a Gemma model on the NPU (the simulated device by default); a
 * Gemma 4 model's reasoning and tool calls are printed as events (gen_show.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gen_run.h"
#include "pccx/pccx.h"
#include "pccx/tokenizer.h"

struct run_args {
	struct pccx_cli_gen_args g;
	const char *prompt;
	uint64_t n;
	bool chat;
};

#define A(f, type) PCCX_AT(struct run_args, f, type)
static const struct pccx_opt run_opts[] = {
	PCCX_CLI_GEN_OPTS(struct run_args, g),
	PCCX_CLI_SHOW_OPTS(struct run_args, g),
	PCCX_OPT(NULL, 'p', PCCX_OPT_STR, A(prompt, const char *), "PROMPT", "the prompt",
		 .flags = PCCX_OPT_REQUIRED),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N",
		 "tokens to generate (default 32)", .max = 1000000),
	PCCX_OPT("chat", 0, PCCX_OPT_FLAG, A(chat, bool), NULL,
		 "wrap the prompt in the model family's chat format (with a tokenizer)"),
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
	.more_at = offsetof(struct run_args, g.sc),
};

/* A display failure (out of memory in the parser) stops the generation, its diag kept. */
struct shown {
	struct pccx_cli_show sh;
	pccx_diag d;
	int rc;
};

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	struct shown *o = user;

	o->rc = pccx_cli_show_piece(&o->sh, token, piece, len, &o->d);
	return o->rc;
}

static void print_stats(const struct pccx_cli_session *cs, bool verified)
{
	struct pccx_device_info info;
	struct pccx_stats st;

	if (pccx_session_stats(cs->s, &st) || pccx_device_info(cs->dev, &info))
		return;
	pccx_cli_gen_print_stats(&st, &info, verified);
}

int pccx_cmd_run(int argc, char **argv)
{
	struct run_args a = { .n = 32 };
	struct pccx_cli_session cs;
	pccx_diag d = { 0 };
	struct shown o = { 0 };
	int32_t *ids = NULL;
	size_t n_ids = 0;
	bool has_tok;
	int rc, end;

	pccx_cli_gen_defaults(&a.g);
	rc = pccx_opt_parse(&run_cmd, argc, argv, &a);
	if (rc == PCCX_OPT_RUN)
		rc = pccx_cli_gen_check(&run_cmd, &a.g);
	if (rc != PCCX_OPT_RUN)
		return rc;

	rc = pccx_cli_gen_open(&a.g, &cs, &d);
	if (!rc)
		rc = pccx_cli_gen_ids(cs.s, a.prompt, a.chat, a.g.think, &ids, &n_ids, &d);
	if (rc || !n_ids) {
		/* no tokens is reported, but has always ended the command with 0 */
		if (!rc)
			fprintf(stderr, "pccx run: the prompt gives no tokens\n");
		goto out;
	}
	has_tok = pccx_session_tokenizer(cs.s) != NULL;
	fprintf(stderr, "prompt: %zu tokens%s%s\n", n_ids,
		a.chat && !has_tok ? " (no tokenizer: one per byte, without the chat format)" : "",
		a.g.sopt.verify ? " (verifying every stage)" : "");
	rc = pccx_cli_gen_show(&a.g, cs.s, "pccx run", &o.sh, &d);
	if (!rc)
		rc = pccx_session_prefill(cs.s, ids, n_ids, &d);
	if (!rc)
		rc = pccx_session_generate(cs.s, &a.g.sc, a.n, on_token, &o, &d);
	/* the display's failure stopped the generation */
	if (!rc && o.rc) {
		rc = o.rc;
		d = o.d;
	}
	end = pccx_cli_show_end(&o.sh, rc ? &o.d : &d);
	if (!rc)
		rc = end;
	putchar('\n');
	fflush(stdout);
	if (!rc)
		rc = pccx_device_flush(cs.dev, &d);
	print_stats(&cs, a.g.sopt.verify && !rc);
out:
	pccx_cli_show_free(&o.sh);
	free(ids);
	pccx_cli_session_close(&cs);
	return rc ? pccx_cli_fail(rc, &d) : 0;
}
