/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for what a model and a client hand the Gemma 4 text path, both hostile:
 *   first byte even: the bytes as a model's output, cut into pieces where the next bytes say,
 *     through the output parser (pccx/output.h): every event well formed, nothing read past
 *     its length, the parser usable again after finish;
 *   first byte odd: the bytes as the JSON a client sends: a conversation
 *     {"tools": [...], "messages": [{"role", "content", ...}]} rendered in Gemma 4's chat
 *     format (tool declarations, calls, results): accepted or refused with a message, never a
 *     crash, and an accepted rendering is NUL-terminated at its length.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "json.h"
#include "pccx/output.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *user, const pccx_output_event *ev)
{
	size_t *total = user;

	if ((unsigned)ev->kind > PCCX_OUTPUT_BAD_TOOL_CALL)
		__builtin_trap();
	if (ev->len && !ev->text)
		__builtin_trap();
	if (ev->kind >= PCCX_OUTPUT_TOOL_CALL && (!ev->text || ev->text[ev->len] != '\0'))
		__builtin_trap();
	if (ev->kind == PCCX_OUTPUT_TOOL_CALL && (!ev->name || ev->text[0] != '{'))
		__builtin_trap();
	if (ev->kind == PCCX_OUTPUT_BAD_TOOL_CALL && !ev->error)
		__builtin_trap();
	if (ev->kind != PCCX_OUTPUT_TOOL_CALL)	/* a call's JSON is not the bytes fed */
		*total += ev->len;
	return 0;
}

static void parse_output(const uint8_t *data, size_t size)
{
	pccx_output_parser *p;
	size_t total = 0, i = 0, n;

	if (pccx_output_parser_create(&p, on_event, &total, NULL))
		return;
	while (i < size) {
		n = 1 + data[i] % 7;	/* pieces of 1..7 bytes, as tokens decode */
		if (n > size - i)
			n = size - i;
		if (pccx_output_parser_feed(p, (const char *)data + i, n, NULL))
			__builtin_trap();
		i += n;
	}
	if (pccx_output_parser_finish(p, NULL))
		__builtin_trap();
	/* markers are dropped, never bytes added: text, thinking and bad calls hold at most
	 * what was fed */
	if (total > size)
		__builtin_trap();
	if (pccx_output_parser_feed(p, "x", 1, NULL) || pccx_output_parser_finish(p, NULL))
		__builtin_trap();
	pccx_output_parser_free(p);
}

#define MAX_TURNS 16

static void render_chat(const uint8_t *data, size_t size)
{
	pccx_json_limits lim = { .max_size = 1 << 16, .max_depth = 24 };
	const struct pccx_chat_format *fmt = pccx__chat_format_of(PCCX_FAMILY_GEMMA4);
	const pccx_json *msgs[MAX_TURNS], *root, *list, *m;
	pccx_chat_turn turns[MAX_TURNS];
	struct pccx_chat_opts o = { .add_generation_prompt = true };
	pccx_json_doc *doc = NULL;
	char *out = NULL;
	size_t n = 0, i, len = 0;
	pccx_diag d = { 0 };
	int rc;

	if (pccx__json_parse(data, size, "fuzz.json", &lim, &doc, &d))
		return;
	root = pccx__json_root(doc);
	list = pccx__json_get(root, "messages");
	for (i = 0; list && i < pccx__json_count(list) && n < MAX_TURNS; i++) {
		const char *role, *content;

		m = pccx__json_at(list, i);
		role = pccx__json_str(pccx__json_get(m, "role"), NULL);
		content = pccx__json_str(pccx__json_get(m, "content"), NULL);
		turns[n] = (pccx_chat_turn){ .role = role ? role : "user",
					     .content = content ? content : "" };
		msgs[n++] = m;
	}
	o.tools_doc = o.msgs_doc = doc;
	o.tools = pccx__json_get(root, "tools");
	o.msgs = msgs;
	o.thinking = size % 3 == 0;
	rc = pccx__chat_render_opts(fmt, turns, n, &o, &out, &len, &d);
	if (!rc && (!out || out[len] != '\0'))
		__builtin_trap();
	if (rc && !d.msg[0])
		__builtin_trap();
	free(out);
	pccx__json_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] % 2 == 0)
		parse_output(data + 1, size - 1);
	else
		render_chat(data + 1, size - 1);
	return 0;
}
