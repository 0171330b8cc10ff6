/* SPDX-License-Identifier: MIT */
/*
 * Chat formats, one per model family: how a conversation is written for the model and which
 * pieces end the model's turn. One table (chat.c) holds them; the renderer
 * (pccx__chat_render, and pccx_chat_render_gemma of the public API) and the runtime's stop test
 * (the ids pccx__chat_stop_ids resolves once, when a model is loaded) both read it.
 */
#ifndef PCCX_CHAT_H
#define PCCX_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "family.h"
#include "pccx/tokenizer.h"

struct pccx_session;
struct pccx_json_doc;
struct pccx_json;
struct sbuf;

enum pccx_chat_family {
	PCCX_CHAT_GEMMA,	/* Gemma 1, 2, 3 and 3n: <start_of_turn>ROLE\n...<end_of_turn>\n */
	PCCX_CHAT_GEMMA4,	/* Gemma 4: <|turn>ROLE\n...<turn|>\n, a system role of its own */
	PCCX_CHAT_FAMILIES
};

#define PCCX_CHAT_MAX_STOPS 4

/*
 * A conversation is written as
 *   bos, then per turn: turn_start ROLE role_end CONTENT turn_end,
 * then with a generation prompt: turn_start model_role role_end.
 * CONTENT is trimmed of surrounding whitespace; the role "assistant" is written model_role.
 * A leading "system" turn: with a system_role, a turn of its own in that role, its content
 * trimmed (and the think piece in front of it when thinking is asked for, the tool
 * declarations after it when tools are given; a system turn is then written even without
 * system content); without one, not a turn of its own: its content,
 * untrimmed, and system_sep go in front of the first remaining turn's content.
 * With thought markers, a model turn's content loses its reasoning channels before it is
 * trimmed: of each piece ending at thought_close (or at the end), what follows thought_open.
 * With call pieces, a model turn's tool calls (struct pccx_chat_opts.msgs) are written after
 * turn_start and before its content, then the results of the "tool" turns after it; without
 * content the turn is left open after them (no turn_end, no generation prompt) and the next
 * model turn goes on in it (docs/chat.md, "Tool calls and results").
 */
struct pccx_chat_format {
	const char *family;		/* for messages */
	/*
	 * BOS as text at the start of the conversation, matched as a special token when the
	 * result is encoded (so encode it without PCCX_TOK_ADD_BOS); "" for none.
	 */
	const char *bos;
	const char *turn_start, *role_end, *turn_end;
	const char *model_role;
	const char *system_sep;		/* without a system_role */
	const char *system_role;	/* NULL: the system turn is folded into the first user turn */
	const char *think;		/* NULL: no thinking switch */
	const char *thought_open, *thought_close;	/* NULL: model turns are kept whole */
	/*
	 * Tool declarations in the system turn, after its content (Gemma 4's grammar,
	 * chat_tools.c): tool_open declaration:NAME{...} tool_close per tool, strings between
	 * quote pieces. NULL: the format has no place for tools.
	 */
	const char *tool_open, *tool_close, *quote;
	/*
	 * Earlier tool calls and their results in a model turn (chat_tools.c):
	 * call_open call:NAME{ARGS} call_close per call, then per result
	 * response_open response:NAME{value:quote RESULT quote} response_close.
	 * NULL: the format has no place for them.
	 */
	const char *call_open, *call_close, *response_open, *response_close;
	/* Pieces that end the model's turn besides the tokenizer's EOS; NULL after the last. */
	const char *stops[PCCX_CHAT_MAX_STOPS];
	/*
	 * The model frames reasoning and tool calls in the text it generates: its output is
	 * read as events (pccx/output.h) rather than as plain text.
	 */
	bool output_events;
};

/* How pccx__chat_render_opts writes a conversation. */
struct pccx_chat_opts {
	bool add_generation_prompt;	/* open the model's turn at the end */
	bool thinking;			/* ask for reasoning (formats with a think piece only) */
	/*
	 * NULL, or a JSON array of tools in OpenAI's form ({"type": "function", "function":
	 * {"name", "description", "parameters"}}) to declare (formats with tool pieces only);
	 * tools_doc is the document it belongs to, which names it in messages.
	 */
	const struct pccx_json_doc *tools_doc;
	const struct pccx_json *tools;
	/*
	 * NULL, or one entry per turn: the turn's message as an OpenAI-style client sent it (an
	 * object, or NULL), of the document msgs_doc, which names it in messages. The renderer
	 * reads a model turn's "tool_calls" ([{"id", "type": "function", "function": {"name",
	 * "arguments": an object or a JSON string of one}}]) and "reasoning_content" (or
	 * "reasoning"), and a "tool" turn's "tool_call_id" and "name", from it; the turns'
	 * contents stay in the turns. Formats with call pieces only.
	 */
	const struct pccx_json_doc *msgs_doc;
	const struct pccx_json *const *msgs;
};

/* The format of `family`; NULL when that family's format is not filled in yet. */
const struct pccx_chat_format *pccx__chat_format(enum pccx_chat_family family);

/*
 * The chat format of the model family `family` (enum pccx_family, reference/family.h): the one
 * place that says which format a family's models converse in. NULL for a family without one.
 */
const struct pccx_chat_format *pccx__chat_format_of(enum pccx_family family);

/*
 * The chat format of the session's model, which pccx_model_load took from the model's family
 * (defined by the runtime, host/runtime/pccx.c); NULL for a NULL session.
 */
const struct pccx_chat_format *pccx__session_chat_format(const struct pccx_session *s);

/*
 * Render `turns` in `fmt` (the rules of pccx_chat_render_gemma, pccx/tokenizer.h); *out is
 * malloc'ed and NUL-terminated. PCCX_ERR_UNSUPPORTED when fmt is NULL.
 */
PCCX_MUST_CHECK int pccx__chat_render(const struct pccx_chat_format *fmt,
				      const pccx_chat_turn *turns, size_t n,
				      bool add_generation_prompt, char **out, size_t *len,
				      pccx_diag *d);
/*
 * The same with options (NULL: no generation prompt, no thinking). Thinking asked of a format
 * without a think piece is PCCX_ERR_UNSUPPORTED.
 */
PCCX_MUST_CHECK int pccx__chat_render_opts(const struct pccx_chat_format *fmt,
					   const pccx_chat_turn *turns, size_t n,
					   const struct pccx_chat_opts *o, char **out, size_t *len,
					   pccx_diag *d);

/*
 * Append the declarations of `tools` (see struct pccx_chat_opts) in fmt's grammar to b.
 * PCCX_ERR_INVALID naming the JSON path of what the template would not write well.
 */
PCCX_MUST_CHECK int pccx__chat_put_tools(struct sbuf *b, const struct pccx_chat_format *fmt,
					 const struct pccx_json_doc *doc,
					 const struct pccx_json *tools, pccx_diag *d);

/*
 * Append the calls of `calls` (a model turn's tool_calls, see struct pccx_chat_opts) in fmt's
 * grammar to b: call_open call:NAME{key:VALUE,...} call_close each, keys bare and in dictsort
 * order, values as the declarations' values are written. PCCX_ERR_INVALID naming the JSON path.
 */
PCCX_MUST_CHECK int pccx__chat_put_calls(struct sbuf *b, const struct pccx_chat_format *fmt,
					 const struct pccx_json_doc *doc,
					 const struct pccx_json *calls, pccx_diag *d);

/* Append one tool result: response_open response:NAME{value:quote RESULT quote} response_close */
int pccx__chat_put_response(struct sbuf *b, const struct pccx_chat_format *fmt,
			    const char *name, size_t name_len, const char *result);

/*
 * One turn of a conversation written turn by turn, so that the pieces put together are what
 * pccx__chat_render writes for the whole conversation with a generation prompt:
 *   role "user":  [bos when `first`] turn_start "user" role_end CONTENT turn_end, then the
 *                 generation prompt turn_start model_role role_end that opens the reply;
 *   role "model" (or "assistant"): the rest of the reply the user turn opened, CONTENT turn_end
 *                 (CONTENT "" closes a reply whose tokens the model generated).
 * CONTENT is trimmed as pccx__chat_render trims it. Other roles are refused (a "system" turn has
 * no place of its own: the renderer puts it in front of the first user turn's content).
 */
PCCX_MUST_CHECK int pccx__chat_render_turn(const struct pccx_chat_format *fmt, const char *role,
					   const char *content, bool first, char **out,
					   size_t *len, pccx_diag *d);

/*
 * The ids that end the model's turn with `tk`: its EOS and each stop piece of `fmt` it has,
 * without repeats. Writes at most PCCX_CHAT_MAX_STOPS + 1 ids; returns how many. fmt and tk may
 * be NULL (no format: the EOS only; no tokenizer: none).
 */
size_t pccx__chat_stop_ids(const struct pccx_chat_format *fmt, const pccx_tokenizer *tk,
			   int32_t ids[PCCX_CHAT_MAX_STOPS + 1]);

#endif /* PCCX_CHAT_H */
