/* SPDX-License-Identifier: MIT */
/*
 * The output parser: a model's generated text as a stream of events. Gemma 4 frames its
 * reasoning and its function calls with markers (docs/chat.md, "Output events"):
 *
 *   <|channel>thought\n ...reasoning... <channel|>         thinking (the label is dropped)
 *   <|tool_call>call:NAME{key:<|"|>text<|"|>,n:42}<tool_call|>   a tool call
 *
 * Everything else is text. Feed the decoded pieces as they come: a marker split across
 * pieces, at any byte, is recognised, and bytes that may start a marker are held back until
 * the next piece decides. Tool-call arguments are written as a JSON object (strings
 * delimited by <|"|>, bare keys, numbers, true/false/null, nested objects and arrays).
 * A <|tool_call> also ends a reasoning channel that has not been closed. Nothing is lost:
 * a call that does not parse is reported with its bytes and the reason; a frame still open
 * when the stream ends is flushed by pccx_output_parser_finish.
 */
#ifndef PCCX_OUTPUT_H
#define PCCX_OUTPUT_H

#include <stddef.h>

#include "pccx/status.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* what follows is exported by libpccx.so */

/* The longest tool call (bytes between its markers) the parser holds. */
#define PCCX_OUTPUT_MAX_CALL (64u * 1024u)

typedef enum pccx_output_kind {
	PCCX_OUTPUT_TEXT,		/* text: bytes of the answer */
	PCCX_OUTPUT_THINKING,		/* text: bytes of reasoning; name: the channel's label */
	PCCX_OUTPUT_TOOL_CALL,		/* name: function; text: its arguments as a JSON object */
	PCCX_OUTPUT_BAD_TOOL_CALL,	/* text: the call's bytes as generated; error: why */
} pccx_output_kind;

typedef struct pccx_output_event {
	pccx_output_kind kind;
	const char *text;	/* len bytes; NUL-terminated for TOOL_CALL and BAD_TOOL_CALL */
	size_t len;
	const char *name;	/* NUL-terminated, or NULL */
	const char *error;	/* NUL-terminated, or NULL */
} pccx_output_event;

/* Called for each event, valid during the call only; return non-zero to stop the parser. */
typedef int (*pccx_output_fn)(void *user, const pccx_output_event *ev);

typedef struct pccx_output_parser pccx_output_parser;

PCCX_MUST_CHECK int pccx_output_parser_create(pccx_output_parser **out, pccx_output_fn fn,
					      void *user, pccx_diag *d);
/*
 * Parse the next len bytes. A callback's non-zero return is returned (and every later call
 * returns it too); PCCX_ERR_NOMEM if memory runs out.
 */
PCCX_MUST_CHECK int pccx_output_parser_feed(pccx_output_parser *p, const char *bytes,
					    size_t len, pccx_diag *d);
/* The stream ended: emit what is held back, then start again in text. */
PCCX_MUST_CHECK int pccx_output_parser_finish(pccx_output_parser *p, pccx_diag *d);
void pccx_output_parser_free(pccx_output_parser *p);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif /* PCCX_OUTPUT_H */
