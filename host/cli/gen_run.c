// SPDX-License-Identifier: MIT
/* What pccx run and pccx chat share (gen_run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat.h"
#include "diag.h"
#include "gen_run.h"

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

void pccx_cli_gen_defaults(struct pccx_cli_gen_args *g)
{
	memset(g, 0, sizeof(*g));
	g->dopt.struct_size = sizeof(g->dopt);
	g->mopt.struct_size = sizeof(g->mopt);
	g->mopt.synth_seed = 1;
	g->mopt.progress = progress;
	g->sopt.struct_size = sizeof(g->sopt);
	pccx_sampler_config_default(&g->sc);
}

int pccx_cli_gen_check(const struct pccx_opt_cmd *c, struct pccx_cli_gen_args *g)
{
	pccx_diag d = { 0 };

	if (!g->mopt.path && !g->mopt.synth_config)
		return pccx_opt_fail(c, "give -m MODEL or --config NAME");
	g->sopt.max_context = (uint32_t)g->max_ctx;
	if (pccx_sampler_config_check(&g->sc, &d))
		return pccx_cli_fail(PCCX_ERR_INVALID, &d);
	return PCCX_OPT_RUN;
}

int pccx_cli_gen_open(const struct pccx_cli_gen_args *g, struct pccx_cli_session *cs,
		      pccx_diag *d)
{
	const struct pccx_chat_format *fmt;
	int rc;

	rc = pccx_cli_session_open(&g->dopt, &g->mopt, &g->sopt, cs, d);
	if (rc || !g->think)
		return rc;
	fmt = pccx__session_chat_format(cs->s);
	if (!pccx_session_tokenizer(cs->s))
		rc = pccx__fail(d, PCCX_ERR_INVALID, "--think: the model has no tokenizer to write "
				"the thinking switch with (give --tokenizer FILE)");
	else if (!fmt || !fmt->think)
		rc = pccx__fail(d, PCCX_ERR_UNSUPPORTED, "--think: the %s chat format has no "
				"thinking switch (Gemma 4's has)", fmt ? fmt->family : "model's");
	if (rc)
		pccx_cli_session_close(cs);
	return rc;
}

/* One user turn that opens the conversation, with the thinking switch. */
static int think_turn(pccx_session *s, const char *text, int32_t **ids, size_t *n,
		      pccx_diag *d)
{
	pccx_chat_turn turn = { "user", text };
	struct pccx_chat_options o = { .struct_size = sizeof(o), .thinking = true };

	return pccx_session_tokenize_chat(s, &turn, 1, &o, ids, n, d);
}

int pccx_cli_gen_user_turn(pccx_session *s, const char *text, bool first, bool think,
			   int32_t **ids, size_t *n, pccx_diag *d)
{
	if (first && think)
		return think_turn(s, text, ids, n, d);
	return pccx_session_tokenize_turn(s, "user", text, first, ids, n, d);
}

int pccx_cli_gen_ids(pccx_session *s, const char *text, bool chat, bool think, int32_t **ids,
		     size_t *n, pccx_diag *d)
{
	size_t i;

	if (think)
		return chat ? think_turn(s, text, ids, n, d) :
		       pccx__fail(d, PCCX_ERR_INVALID, "--think asks for the chat format: give "
				  "--chat too");
	if (pccx_session_tokenizer(s))
		return pccx_session_tokenize(s, text, chat, ids, n, d);
	*n = strlen(text);
	*ids = malloc((*n ? *n : 1) * sizeof(**ids));
	if (!*ids)
		return PCCX_ERR_NOMEM;
	for (i = 0; i < *n; i++)
		(*ids)[i] = (unsigned char)text[i];
	return PCCX_OK;
}

int pccx_cli_gen_show(const struct pccx_cli_gen_args *g, pccx_session *s, const char *who,
		      struct pccx_cli_show *sh, pccx_diag *d)
{
	const struct pccx_chat_format *fmt = pccx__session_chat_format(s);
	const pccx_tokenizer *tk = pccx_session_tokenizer(s);
	int32_t stops[PCCX_CHAT_MAX_STOPS + 1];
	struct pccx_cli_show_opts o = {
		.events = fmt && fmt->output_events,
		.ids = !tk,
		.hide_thinking = g->hide_thinking,
		.faint = isatty(STDOUT_FILENO),
		.tk = tk,
		.stops = stops,
		.n_stops = pccx__chat_stop_ids(fmt, tk, stops),
	};

	return pccx_cli_show_init(sh, &o, stdout, stderr, who, d);
}

void pccx_cli_gen_print_stats(const struct pccx_stats *st, const struct pccx_device_info *info,
			      bool verified)
{
	char prompt[96] = "";

	/* the simulated prompt figures need cycles: only the sim backend counts them */
	if (st->device_cycles && st->prompt_tokens)
		snprintf(prompt, sizeof(prompt),
			 ", simulated prompt %.2f tok/s (first token after %.3f ms)",
			 pccx_cli_prompt_tok_s(st, info), 1e3 * pccx_cli_first_token_s(st, info));
	fprintf(stderr,
		"stats: %llu tokens generated, %llu prompt tokens, host %.2f tok/s, %llu "
		"simulated cycles (%.3f ms at the modelled clock)%s, simulated decode %.2f tok/s, "
		"DDR %.1f%% of the bandwidth ceiling%s\n",
		(unsigned long long)st->tokens, (unsigned long long)st->prompt_tokens,
		st->host_seconds > 0 ? (double)(st->tokens + st->prompt_tokens) / st->host_seconds :
		0.0,
		(unsigned long long)st->device_cycles, st->device_seconds * 1e3, prompt,
		pccx_cli_decode_tok_s(st, info), 100.0 * st->ddr_utilisation,
		verified ? ", verified: 0 differing bits" : "");
}

void pccx_cli_gen_stats_since(const struct pccx_stats *now, const struct pccx_stats *before,
			      const struct pccx_device_info *info, struct pccx_stats *out)
{
	double ceiling;

	out->tokens = now->tokens - before->tokens;
	out->prompt_tokens = now->prompt_tokens - before->prompt_tokens;
	out->host_seconds = now->host_seconds - before->host_seconds;
	out->device_cycles = now->device_cycles - before->device_cycles;
	out->decode_cycles = now->decode_cycles - before->decode_cycles;
	out->decode_steps = now->decode_steps - before->decode_steps;
	out->decode_weight_bytes = now->decode_weight_bytes - before->decode_weight_bytes;
	out->device_seconds = now->device_seconds - before->device_seconds;
	out->weight_bytes = now->weight_bytes - before->weight_bytes;
	out->dma_bytes = now->dma_bytes - before->dma_bytes;
	out->jobs = now->jobs - before->jobs;
	ceiling = (double)info->ddr_bytes_per_s * out->device_seconds;
	out->ddr_utilisation = ceiling > 0 ?
		(double)(out->weight_bytes + out->dma_bytes) / ceiling : 0.0;
}
