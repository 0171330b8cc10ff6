/* SPDX-License-Identifier: MIT */
/*
 * What pccx run and pccx chat share: the options that open a device, load a model and make a
 * session on it (PCCX_CLI_GEN_OPTS), the sampler's, the progress bar, the prompt's ids, the
 * streamed tokens and the statistics line.
 */
#ifndef PCCX_CLI_GEN_RUN_H
#define PCCX_CLI_GEN_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "gemma_config.h"
#include "gen_show.h"
#include "pccx/pccx.h"

/* The device, model, session and sampler settings of both commands. */
struct pccx_cli_gen_args {
	struct pccx_device_opts dopt;
	struct pccx_model_opts mopt;
	struct pccx_session_opts sopt;
	uint64_t max_ctx;
	bool hide_thinking;
	bool think;			/* --think: ask the model to reason (Gemma 4) */
	pccx_sampler_config sc;
};

/* The option table entries of the struct pccx_cli_gen_args at field f of the command's T. */
#define PCCX_CLI_GEN_OPTS(T, f)                                                                 \
	PCCX_OPT(NULL, 'm', PCCX_OPT_PATH, PCCX_AT(T, f.mopt.path, const char *), "MODEL",       \
		 "a gemma3n GGUF, or a Hugging Face checkpoint (directory, *.safetensors,\n"      \
		 "*.json index)"),                                                               \
	PCCX_OPT("config", 0, PCCX_OPT_STR, PCCX_AT(T, f.mopt.synth_config, const char *),       \
		 "NAME", "synthesise a model of this shape instead",                             \
		 .values = pccx__gemma_config_names),                                          \
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, PCCX_AT(T, f.mopt.synth_seed, uint64_t), "S",         \
		 "seed of the synthetic weights (default 1)"),                                   \
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, PCCX_AT(T, f.mopt.tokenizer, const char *),      \
		 "FILE", "tokenizer.json (default: the model's own); pccx run without any\n"     \
		 "tokenizer takes the prompt's bytes as ids and prints ids"),                    \
	PCCX_OPT("backend", 0, PCCX_OPT_STR, PCCX_AT(T, f.dopt.backend, const char *), "NAME",   \
		 "sim (default), kernel, serial or usb"),                                        \
	PCCX_OPT("path", 0, PCCX_OPT_STR, PCCX_AT(T, f.dopt.path, const char *), "WHERE",        \
		 "kernel: the device node (default /dev/pccx); serial: a tty or a\n"            \
		 "Unix socket; usb: VID:PID (docs/usb.md)"),                                     \
	PCCX_OPT("dtb", 0, PCCX_OPT_PATH, PCCX_AT(T, f.dopt.dtb, const char *), "FILE",          \
		 "sim: device parameters"),                                                      \
	PCCX_OPT("verify", 0, PCCX_OPT_FLAG, PCCX_AT(T, f.sopt.verify, bool), NULL,              \
		 "run the bit-exact reference alongside; stop at the first stage whose\n"        \
		 "bits differ"),                                                                 \
	PCCX_OPT("trace", 0, PCCX_OPT_PATH, PCCX_AT(T, f.dopt.trace_path, const char *),         \
		 "F.json", "sim: write a Chrome/Perfetto trace"),                                \
	PCCX_OPT("sample-seed", 0, PCCX_OPT_UINT, PCCX_AT(T, f.sc.seed, uint64_t), "S",          \
		 "seed of the sampler"),                                                         \
	PCCX_OPT("max-ctx", 0, PCCX_OPT_UINT, PCCX_AT(T, f.max_ctx, uint64_t), "N",              \
		 "positions the context may hold (default: all of the model's KV cache)",       \
		 .min = 1, .max = 65535)

/* The option of the commands that print the model's output (run, chat): gen_show.h. */
#define PCCX_CLI_SHOW_OPTS(T, f)                                                                \
	PCCX_OPT("hide-thinking", 0, PCCX_OPT_FLAG, PCCX_AT(T, f.hide_thinking, bool), NULL,     \
		 "leave the model's reasoning out (Gemma 4); it is printed dimmed at a\n"       \
		 "terminal, plain otherwise"),                                                   \
	PCCX_OPT("think", 0, PCCX_OPT_FLAG, PCCX_AT(T, f.think, bool), NULL,                     \
		 "ask the model to reason before it answers: <|think|> in the system turn\n"     \
		 "(Gemma 4; other families refuse it)")

/* The defaults: struct sizes, weight seed 1, the progress bar, the sampler's defaults. */
void pccx_cli_gen_defaults(struct pccx_cli_gen_args *g);
/*
 * After parsing: a model is named, the sampler's values hold. Returns PCCX_OPT_RUN, or the exit
 * status after reporting the problem.
 */
int pccx_cli_gen_check(const struct pccx_opt_cmd *c, struct pccx_cli_gen_args *g);
/*
 * Open the device, load the model, make the session. With --think the model needs a tokenizer
 * and a chat format with a thinking switch.
 */
PCCX_MUST_CHECK int pccx_cli_gen_open(const struct pccx_cli_gen_args *g,
				      struct pccx_cli_session *cs, pccx_diag *d);

/*
 * The text's ids: the model's tokenizer (chat: the chat template, with the thinking switch
 * when `think`), else one id per byte.
 */
PCCX_MUST_CHECK int pccx_cli_gen_ids(pccx_session *s, const char *text, bool chat, bool think,
				     int32_t **ids, size_t *n, pccx_diag *d);
/*
 * A user turn of pccx chat in the chat format with its generation prompt: the first (the BOS,
 * and the system turn with the thinking switch when `think`) or a later one.
 */
PCCX_MUST_CHECK int pccx_cli_gen_user_turn(pccx_session *s, const char *text, bool first,
					   bool think, int32_t **ids, size_t *n, pccx_diag *d);
/*
 * How the session's output is printed to stdout (gen_show.h): as events when its model's chat
 * format frames reasoning and tool calls, the reasoning dimmed when stdout is a terminal; as
 * "[id]" without a tokenizer; else piece by piece. Messages name `who`.
 */
PCCX_MUST_CHECK int pccx_cli_gen_show(const struct pccx_cli_gen_args *g, pccx_session *s,
				      const char *who, struct pccx_cli_show *sh, pccx_diag *d);
/*
 * The statistics line on stderr ("stats: N tokens generated, N prompt tokens, host ...") for
 * the figures in st (a session's, or the difference of two, see pccx_cli_gen_stats_since).
 */
void pccx_cli_gen_print_stats(const struct pccx_stats *st, const struct pccx_device_info *info,
			      bool verified);
/* What a session did since the figures `before` were taken: now minus before. */
void pccx_cli_gen_stats_since(const struct pccx_stats *now, const struct pccx_stats *before,
			      const struct pccx_device_info *info, struct pccx_stats *out);

#endif /* PCCX_CLI_GEN_RUN_H */
