/* SPDX-License-Identifier: MIT */
/*
 * How pccx run and pccx chat print what the model generates. A model whose chat format frames
 * reasoning and tool calls in its output (struct pccx_chat_format.output_events: Gemma 4) has
 * its pieces read by the output parser (pccx/output.h), and the events printed: the answer's
 * text as it comes, the reasoning dimmed (ANSI faint) or plain, or left out, each tool call as
 * one JSON line {"tool_call":{"name":...,"arguments":{...}}}, a call that does not parse on
 * the error stream with the reason. The session decodes pieces without special tokens, and
 * Gemma 4's markers are special tokens: with the tokenizer given, a special token that is not
 * a stop token is read as its text. Other models' pieces are printed as they come; without a
 * tokenizer each token is printed as "[id]".
 */
#ifndef PCCX_CLI_GEN_SHOW_H
#define PCCX_CLI_GEN_SHOW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pccx/output.h"
#include "pccx/tokenizer.h"

#define PCCX_CLI_SHOW_MAX_STOPS 8

struct pccx_cli_show {
	FILE *out, *err;
	const char *who;		/* the command, for messages */
	bool ids;			/* no tokenizer: "[id]" per token */
	bool hide_thinking;
	bool faint;			/* dim the reasoning (SGR 2) */
	pccx_output_parser *parser;	/* NULL: pieces printed as they come */
	const pccx_tokenizer *tk;	/* NULL: pieces parsed as given */
	int32_t stops[PCCX_CLI_SHOW_MAX_STOPS];
	size_t n_stops;
	bool dim;			/* SGR 2 is in effect on out */
	bool mid_line;			/* the last byte written to out was not a newline */
};

struct pccx_cli_show_opts {
	bool events;		/* parse the output into events */
	bool ids;
	bool hide_thinking;
	bool faint;
	const pccx_tokenizer *tk;	/* read special tokens as their text (events only) */
	const int32_t *stops;		/* ...but for these, which end the reply */
	size_t n_stops;			/* at most PCCX_CLI_SHOW_MAX_STOPS */
};

/* Print to out and err, messages naming `who`. */
/*
 * The text the output parser reads for `token`: a special token (a marker: <|channel>,
 * <|tool_call>, <|"|> ...) that is not one of the stops is its own piece, which the session's
 * decoding without special tokens leaves out; NULL for any other token (its decoded piece
 * stands). Shared by pccx run/chat and pccx serve.
 */
const char *pccx_cli_marker(const pccx_tokenizer *tk, const int32_t *stops, size_t n_stops,
			    int32_t token, size_t *len);

PCCX_MUST_CHECK int pccx_cli_show_init(struct pccx_cli_show *sh,
				       const struct pccx_cli_show_opts *o, FILE *out, FILE *err,
				       const char *who, pccx_diag *d);
/* One generated token and its decoded piece. */
PCCX_MUST_CHECK int pccx_cli_show_piece(struct pccx_cli_show *sh, int32_t token,
					const char *piece, size_t len, pccx_diag *d);
/*
 * The reply ended (or was stopped): print what the parser holds back, end the dimming. The
 * next piece starts a new reply.
 */
PCCX_MUST_CHECK int pccx_cli_show_end(struct pccx_cli_show *sh, pccx_diag *d);
void pccx_cli_show_free(struct pccx_cli_show *sh);

#endif /* PCCX_CLI_GEN_SHOW_H */
