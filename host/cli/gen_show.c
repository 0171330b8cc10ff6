// SPDX-License-Identifier: MIT
/* What pccx run and pccx chat print of the generated text (gen_show.h). */
#include <string.h>

#include "diag.h"
#include "gen_show.h"

#define SGR_FAINT "\033[2m"
#define SGR_NORMAL "\033[22m"	/* normal intensity: ends faint and nothing else */

static void put(struct pccx_cli_show *sh, const char *s, size_t len)
{
	if (!len)
		return;
	fwrite(s, 1, len, sh->out);
	sh->mid_line = s[len - 1] != '\n';
}

static void dim(struct pccx_cli_show *sh, bool on)
{
	if (sh->dim == on)
		return;
	fputs(on ? SGR_FAINT : SGR_NORMAL, sh->out);
	sh->dim = on;
}

/* A JSON string: quotes, backslashes and control bytes escaped, other bytes as they are. */
static void put_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A tool call: one line of its own. */
static void put_tool_call(struct pccx_cli_show *sh, const pccx_output_event *ev)
{
	dim(sh, false);
	if (sh->mid_line)
		fputc('\n', sh->out);
	fputs("{\"tool_call\":{\"name\":", sh->out);
	put_json_string(sh->out, ev->name ? ev->name : "");
	fputs(",\"arguments\":", sh->out);
	fwrite(ev->text, 1, ev->len, sh->out);
	fputs("}}\n", sh->out);
	sh->mid_line = false;
}

static int on_event(void *user, const pccx_output_event *ev)
{
	struct pccx_cli_show *sh = user;

	switch (ev->kind) {
	case PCCX_OUTPUT_TEXT:
		dim(sh, false);
		put(sh, ev->text, ev->len);
		break;
	case PCCX_OUTPUT_THINKING:
		if (sh->hide_thinking)
			break;
		if (sh->faint)
			dim(sh, true);
		put(sh, ev->text, ev->len);
		break;
	case PCCX_OUTPUT_TOOL_CALL:
		put_tool_call(sh, ev);
		break;
	case PCCX_OUTPUT_BAD_TOOL_CALL:
		/* what is on out so far goes first, so the message follows it on a terminal */
		fflush(sh->out);
		fprintf(sh->err, "%s: a tool call that does not parse (%s): ", sh->who,
			ev->error ? ev->error : "no reason given");
		fwrite(ev->text, 1, ev->len, sh->err);
		fputc('\n', sh->err);
		break;
	}
	return 0;
}

int pccx_cli_show_init(struct pccx_cli_show *sh, const struct pccx_cli_show_opts *o, FILE *out,
		       FILE *err, const char *who, pccx_diag *d)
{
	memset(sh, 0, sizeof(*sh));
	sh->out = out;
	sh->err = err;
	sh->who = who;
	sh->ids = o->ids;
	sh->hide_thinking = o->hide_thinking;
	sh->faint = o->faint;
	/* without a tokenizer there is no text to parse */
	if (!o->events || o->ids)
		return 0;
	if (o->n_stops > PCCX_CLI_SHOW_MAX_STOPS)
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: %zu stop tokens, at most %u", who,
				  o->n_stops, PCCX_CLI_SHOW_MAX_STOPS);
	sh->tk = o->tk;
	if (o->n_stops)
		memcpy(sh->stops, o->stops, o->n_stops * sizeof(*o->stops));
	sh->n_stops = o->n_stops;
	return pccx_output_parser_create(&sh->parser, on_event, sh, d);
}

const char *pccx_cli_marker(const pccx_tokenizer *tk, const int32_t *stops, size_t n_stops,
			    int32_t token, size_t *len)
{
	int type = pccx_tokenizer_type(tk, token);
	size_t i;

	if (type != PCCX_TOKEN_CONTROL && type != PCCX_TOKEN_USER_DEFINED)
		return NULL;
	for (i = 0; i < n_stops; i++)
		if (stops[i] == token)
			return NULL;
	return pccx_tokenizer_piece(tk, token, len);
}

static const char *marker(const struct pccx_cli_show *sh, int32_t token, size_t *len)
{
	return pccx_cli_marker(sh->tk, sh->stops, sh->n_stops, token, len);
}

int pccx_cli_show_piece(struct pccx_cli_show *sh, int32_t token, const char *piece, size_t len,
			pccx_diag *d)
{
	int rc = 0;

	if (sh->parser && sh->tk && !len) {
		size_t mlen = 0;
		const char *m = marker(sh, token, &mlen);

		if (m) {
			piece = m;
			len = mlen;
		}
	}
	if (sh->ids)
		fprintf(sh->out, "[%d]", token);
	else if (!sh->parser)
		fwrite(piece, 1, len, sh->out);
	else
		rc = pccx_output_parser_feed(sh->parser, piece, len, d);
	fflush(sh->out);
	return rc;
}

int pccx_cli_show_end(struct pccx_cli_show *sh, pccx_diag *d)
{
	int rc = 0;

	if (sh->parser)
		rc = pccx_output_parser_finish(sh->parser, d);
	dim(sh, false);
	sh->mid_line = false;
	fflush(sh->out);
	return rc;
}

void pccx_cli_show_free(struct pccx_cli_show *sh)
{
	pccx_output_parser_free(sh->parser);
	sh->parser = NULL;
}
