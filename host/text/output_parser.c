// SPDX-License-Identifier: MIT
/*
 * The output parser (pccx/output.h): a state machine over bytes. The bytes not yet emitted
 * stay in `buf`; in text and thinking that is at most the longest marker's length (a suffix
 * that may start a marker), in a tool call the call itself (at most PCCX_OUTPUT_MAX_CALL).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "json_out.h"
#include "pccx/output.h"
#include "tool_args.h"

#define CH_OPEN "<|channel>"
#define CH_CLOSE "<channel|>"
#define TC_OPEN "<|tool_call>"
#define TC_CLOSE "<tool_call|>"
#define LABEL_MAX 31u		/* a channel's label ("thought") ends at '\n' within this */

enum state { S_TEXT, S_LABEL, S_THINK, S_TOOL };

struct pccx_output_parser {
	pccx_output_fn fn;
	void *user;
	enum state state;
	char *buf;
	size_t n, cap;
	char label[LABEL_MAX + 1];
	int rc;			/* a callback's non-zero return, sticky */
};

int pccx_output_parser_create(pccx_output_parser **out, pccx_output_fn fn, void *user,
			      pccx_diag *d)
{
	pccx_output_parser *p;

	*out = NULL;
	if (!fn)
		return pccx__fail(d, PCCX_ERR_INVALID, "output parser: no event callback");
	p = calloc(1, sizeof(*p));
	if (!p)
		return pccx__fail(d, PCCX_ERR_NOMEM, "output parser: out of memory");
	p->fn = fn;
	p->user = user;
	*out = p;
	return PCCX_OK;
}

void pccx_output_parser_free(pccx_output_parser *p)
{
	if (!p)
		return;
	free(p->buf);
	free(p);
}

static void event(pccx_output_parser *p, pccx_output_kind kind, const char *text, size_t len,
		  const char *name, const char *error)
{
	pccx_output_event ev = {
		.kind = kind, .text = text, .len = len, .name = name, .error = error,
	};

	if (!p->rc && (len || kind >= PCCX_OUTPUT_TOOL_CALL))
		p->rc = p->fn(p->user, &ev);
}

/* Drop the first k bytes of buf. */
static void consume(pccx_output_parser *p, size_t k)
{
	memmove(p->buf, p->buf + k, p->n - k);
	p->n -= k;
}

/* The first of the markers in buf: its index in marks (*at: its offset), or -1. */
static int find(const pccx_output_parser *p, const char *const *marks, int nmarks, size_t *at)
{
	int best = -1, m;
	const char *hit;

	for (m = 0; m < nmarks; m++) {
		hit = memmem(p->buf, p->n, marks[m], strlen(marks[m]));
		if (hit && (best < 0 || (size_t)(hit - p->buf) < *at)) {
			best = m;
			*at = (size_t)(hit - p->buf);
		}
	}
	return best;
}

/* The longest suffix of buf that is a proper prefix of one of the markers: held back. */
static size_t held(const pccx_output_parser *p, const char *const *marks, int nmarks)
{
	size_t best = 0, k, len;
	int m;

	for (m = 0; m < nmarks; m++) {
		len = strlen(marks[m]);
		for (k = len - 1 < p->n ? len - 1 : p->n; k > best; k--)
			if (!memcmp(p->buf + p->n - k, marks[m], k)) {
				best = k;
				break;
			}
	}
	return best;
}

/* Emit buf as `kind` up to the first marker, or all but what may start one. */
static int stream(pccx_output_parser *p, pccx_output_kind kind, const char *name,
		  const char *const *marks, int nmarks, size_t *at)
{
	int m = find(p, marks, nmarks, at);
	size_t keep;

	if (m >= 0) {
		event(p, kind, p->buf, *at, name, NULL);
		consume(p, *at + strlen(marks[m]));
		return m;
	}
	keep = held(p, marks, nmarks);
	event(p, kind, p->buf, p->n - keep, name, NULL);
	consume(p, p->n - keep);
	return -1;
}

/*
 * The first len bytes of buf as a call that did not parse, and why: copied with a NUL after
 * them (the bytes themselves may hold NULs, so not strndup).
 */
static void bad_call(pccx_output_parser *p, size_t len, const char *why)
{
	char *raw = malloc(len + 1);

	if (!raw) {
		if (!p->rc)
			p->rc = PCCX_ERR_NOMEM;
		return;
	}
	memcpy(raw, p->buf, len);
	raw[len] = '\0';
	event(p, PCCX_OUTPUT_BAD_TOOL_CALL, raw, len, NULL, why);
	free(raw);
}

/* A tool call's bytes: its event, or the bad-call event with the reason. */
static void tool_call(pccx_output_parser *p, size_t len)
{
	struct pccx_json_out json = { 0 };
	char *name = NULL;
	const char *why = pccx__tool_call_parse(p->buf, len, &name, &json);

	if (!why && json.oom)
		why = "out of memory";
	if (!why)
		event(p, PCCX_OUTPUT_TOOL_CALL, json.p, json.n, name, NULL);
	else
		bad_call(p, len, why);
	free(name);
	pccx__json_out_free(&json);
}

/* Run the state machine over buf until it needs more bytes. */
static void step(pccx_output_parser *p)
{
	static const char *const text_marks[] = { CH_OPEN, TC_OPEN };
	static const char *const think_marks[] = { CH_CLOSE, TC_OPEN };
	const char *nl, *close;
	size_t at = 0;

	for (;;) {
		if (p->rc)
			return;
		switch (p->state) {
		case S_TEXT:
			switch (stream(p, PCCX_OUTPUT_TEXT, NULL, text_marks, 2, &at)) {
			case 0:
				p->state = S_LABEL;
				break;
			case 1:
				p->state = S_TOOL;
				break;
			default:
				return;
			}
			break;
		case S_LABEL:
			/* "thought\n": the label, up to its newline (or an early close) */
			nl = memchr(p->buf, '\n', p->n);
			close = memmem(p->buf, p->n, CH_CLOSE, strlen(CH_CLOSE));
			if (close && (!nl || close < nl))
				nl = close;
			if (!nl && p->n <= LABEL_MAX)
				return;
			p->label[0] = '\0';
			if (nl && (size_t)(nl - p->buf) <= LABEL_MAX) {
				memcpy(p->label, p->buf, (size_t)(nl - p->buf));
				p->label[nl - p->buf] = '\0';
				consume(p, (size_t)(nl - p->buf) + (nl == close ? 0 : 1));
			}
			p->state = S_THINK;
			break;
		case S_THINK:
			switch (stream(p, PCCX_OUTPUT_THINKING, p->label, think_marks, 2, &at)) {
			case 0:
				p->state = S_TEXT;
				break;
			case 1:
				p->state = S_TOOL;	/* a call also ends the reasoning */
				break;
			default:
				return;
			}
			break;
		case S_TOOL:
			close = memmem(p->buf, p->n, TC_CLOSE, strlen(TC_CLOSE));
			if (close) {
				tool_call(p, (size_t)(close - p->buf));
				consume(p, (size_t)(close - p->buf) + strlen(TC_CLOSE));
				p->state = S_TEXT;
				break;
			}
			if (p->n <= PCCX_OUTPUT_MAX_CALL + strlen(TC_CLOSE))
				return;
			/* too long to be a call: reported, and the rest is text */
			bad_call(p, PCCX_OUTPUT_MAX_CALL, "longer than PCCX_OUTPUT_MAX_CALL bytes");
			consume(p, PCCX_OUTPUT_MAX_CALL);
			p->state = S_TEXT;
			break;
		}
	}
}

int pccx_output_parser_feed(pccx_output_parser *p, const char *bytes, size_t len, pccx_diag *d)
{
	if (p->rc)
		return p->rc;
	if (!len)
		return PCCX_OK;	/* nothing new: no state changes (and no NULL buffer to copy to) */
	if (len > p->cap - p->n) {
		size_t cap = p->n + len < 256 ? 256 : p->n + len;
		char *nb = realloc(p->buf, cap);

		if (!nb)
			return pccx__fail(d, PCCX_ERR_NOMEM, "output parser: out of memory");
		p->buf = nb;
		p->cap = cap;
	}
	memcpy(p->buf + p->n, bytes, len);
	p->n += len;
	step(p);
	if (p->rc == PCCX_ERR_NOMEM)
		return pccx__fail(d, p->rc, "output parser: out of memory");
	return p->rc;
}

int pccx_output_parser_finish(pccx_output_parser *p, pccx_diag *d)
{
	if (p->rc)
		return p->rc == PCCX_ERR_NOMEM ?
			pccx__fail(d, p->rc, "output parser: out of memory") : p->rc;
	switch (p->state) {
	case S_TEXT:
		event(p, PCCX_OUTPUT_TEXT, p->buf, p->n, NULL, NULL);
		break;
	case S_LABEL:
	case S_THINK:
		event(p, PCCX_OUTPUT_THINKING, p->buf, p->n, p->state == S_THINK ? p->label : "",
		      NULL);
		break;
	case S_TOOL:
		bad_call(p, p->n, "the stream ended inside the call (no " TC_CLOSE ")");
		break;
	}
	p->n = 0;
	p->state = S_TEXT;
	return p->rc;
}
