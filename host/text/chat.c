/* SPDX-License-Identifier: MIT */
/*
 * Chat formats by model family, and the renderer that writes a conversation in one. The Gemma
 * format is what the chat_template of Gemma 3's tokenizer_config.json renders (implemented from
 * its Jinja source: the JavaScript package's template engine cannot render it). Gemma 1's and
 * Gemma 2's templates write the same turns; they refuse a system turn, which pccx folds into
 * the first user turn as Gemma 3's does (docs/chat.md, "Formats of the model families").
 * The Gemma 4 format is what Gemma 4's chat_template renders for text turns: a system role of
 * its own, the thinking switch, reasoning removed from earlier model turns, earlier tool calls
 * and their results in the model's turn.
 */
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "diag.h"
#include "json.h"
#include "tokenizer_int.h"

static const struct pccx_chat_format formats[PCCX_CHAT_FAMILIES] = {
	[PCCX_CHAT_GEMMA] = {
		.family = "gemma",
		.bos = "<bos>",
		.turn_start = "<start_of_turn>",
		.role_end = "\n",
		.turn_end = "<end_of_turn>\n",
		.model_role = "model",
		.system_sep = "\n\n",
		.stops = { "<end_of_turn>" },
	},
	/*
	 * Gemma 4: <|turn>system\n[<|think|>\n]SYSTEM<turn|>\n, then the turns; the template
	 * strips <|channel>...<channel|> from model turns; tool declarations follow the system
	 * content; earlier tool calls and their results stay in the model's turn (docs/chat.md).
	 */
	[PCCX_CHAT_GEMMA4] = {
		.family = "gemma4",
		.bos = "<bos>",
		.turn_start = "<|turn>",
		.role_end = "\n",
		.turn_end = "<turn|>\n",
		.model_role = "model",
		.system_role = "system",
		.think = "<|think|>\n",
		.thought_open = "<|channel>",
		.thought_close = "<channel|>",
		.tool_open = "<|tool>",
		.tool_close = "<tool|>",
		.quote = "<|\"|>",
		.call_open = "<|tool_call>",
		.call_close = "<tool_call|>",
		.response_open = "<|tool_response>",
		.response_close = "<tool_response|>",
		/* after a call the template hands over at <|tool_response>: the client's result */
		.stops = { "<turn|>", "<|tool_response>" },
		.output_events = true,
	},
};

const struct pccx_chat_format *pccx__chat_format(enum pccx_chat_family family)
{
	if ((unsigned)family >= PCCX_CHAT_FAMILIES || !formats[family].turn_start)
		return NULL;
	return &formats[family];
}

/*
 * The format each model family converses in. `set` keeps a family added to enum pccx_family
 * without an entry here from taking format 0 silently: it has no format (refused) instead.
 */
static const struct {
	bool set;
	enum pccx_chat_family chat;
} family_chat[PCCX_FAMILIES] = {
	[PCCX_FAMILY_GEMMA3N] = { true, PCCX_CHAT_GEMMA },
	/* Gemma 1 and 2: Gemma 3's turns; their templates raise on a system turn */
	[PCCX_FAMILY_GEMMA] = { true, PCCX_CHAT_GEMMA },
	[PCCX_FAMILY_GEMMA2] = { true, PCCX_CHAT_GEMMA },
	[PCCX_FAMILY_GEMMA3] = { true, PCCX_CHAT_GEMMA },
	[PCCX_FAMILY_GEMMA4] = { true, PCCX_CHAT_GEMMA4 },
};

const struct pccx_chat_format *pccx__chat_format_of(enum pccx_family family)
{
	if ((unsigned)family >= PCCX_FAMILIES || !family_chat[family].set)
		return NULL;
	return pccx__chat_format(family_chat[family].chat);
}

size_t pccx__chat_stop_ids(const struct pccx_chat_format *fmt, const pccx_tokenizer *tk,
			   int32_t ids[PCCX_CHAT_MAX_STOPS + 1])
{
	size_t n = 0, i, k;

	if (!tk)
		return 0;
	if (pccx_tokenizer_eos(tk) >= 0)
		ids[n++] = pccx_tokenizer_eos(tk);
	for (i = 0; fmt && i < PCCX_CHAT_MAX_STOPS && fmt->stops[i]; i++) {
		int32_t id = pccx_tokenizer_find(tk, fmt->stops[i], strlen(fmt->stops[i]));

		for (k = 0; k < n && ids[k] != id; k++)
			;
		if (id >= 0 && k == n)
			ids[n++] = id;
	}
	return n;
}

/* Python str.isspace(), which Jinja's trim filter uses. */
static bool py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202f || c == 0x205f || c == 0x3000;
}

static void py_trim(const char *s, size_t n, size_t *off, size_t *len)
{
	size_t i = 0, end = n, k;

	while (i < n && py_space(tok_decode_cp((const unsigned char *)s + i, &k)))
		i += k;
	while (end > i) {
		size_t st = end - 1;

		while (st > i && ((unsigned char)s[st] & 0xc0) == 0x80)
			st--;
		if (!py_space(tok_decode_cp((const unsigned char *)s + st, &k)))
			break;
		end = st;
	}
	*off = i;
	*len = end - i;
}

/* turn_start ROLE role_end */
static int open_turn(struct sbuf *b, const struct pccx_chat_format *fmt, const char *role)
{
	return sbuf_adds(b, fmt->turn_start) || sbuf_adds(b, role) || sbuf_adds(b, fmt->role_end);
}

/* Hand the rendered text over, or free it when something could not be added. */
static int finish(struct sbuf *b, bool nomem, char **out, size_t *len, pccx_diag *d)
{
	if (nomem) {
		free(b->p);
		return pccx__fail(d, PCCX_ERR_NOMEM, "chat template: out of memory");
	}
	*out = b->p;
	if (len)
		*len = b->n;
	return 0;
}

static bool is_model_role(const struct pccx_chat_format *fmt, const char *role)
{
	return !strcmp(role, "assistant") || !strcmp(role, fmt->model_role);
}

/*
 * A turn's content, trimmed; for a model turn in a format with thought markers, without its
 * reasoning first: of each piece ending at thought_close (or at the end of the content) only
 * what comes before thought_open is kept, as the Gemma 4 template's strip_thinking does.
 */
static int add_content(struct sbuf *b, const struct pccx_chat_format *fmt, bool model,
		       const char *content)
{
	struct sbuf kept = { 0 };
	const char *p = content;
	size_t off, len;
	int rc;

	if (!model || !fmt->thought_open) {
		py_trim(content, strlen(content), &off, &len);
		return sbuf_add(b, content + off, len);
	}
	for (;;) {
		const char *close = strstr(p, fmt->thought_close);
		size_t part = close ? (size_t)(close - p) : strlen(p);
		const char *open = memmem(p, part, fmt->thought_open, strlen(fmt->thought_open));

		if (sbuf_add(&kept, p, open ? (size_t)(open - p) : part))
			goto nomem;
		if (!close)
			break;
		p = close + strlen(fmt->thought_close);
	}
	py_trim(kept.p ? kept.p : "", kept.n, &off, &len);
	rc = sbuf_add(b, kept.p + off, len);
	free(kept.p);
	return rc;
nomem:
	free(kept.p);
	return -1;
}

static bool is_tool(const struct pccx_chat_format *fmt, const pccx_chat_turn *t)
{
	return fmt->call_open && !strcmp(t->role, "tool");
}

/* The message of turn i as the client sent it, or NULL. */
static const pccx_json *turn_msg(const struct pccx_chat_opts *o, size_t i)
{
	return o->msgs ? o->msgs[i] : NULL;
}

/* The tool calls of turn i: a non-empty array (the template tests them for truth), or NULL. */
static const pccx_json *turn_calls(const struct pccx_chat_opts *o, size_t i)
{
	const pccx_json *m = turn_msg(o, i), *c = m ? pccx__json_get(m, "tool_calls") : NULL;

	if (!c || pccx__json_type_of(c) == PCCX_JSON_NULL)
		return NULL;
	if (pccx__json_type_of(c) == PCCX_JSON_ARRAY && !pccx__json_count(c))
		return NULL;
	return c;
}

/* Fail naming turn i's message (its JSON path when it has one). */
static int turn_fail(const struct pccx_chat_opts *o, size_t i, pccx_diag *d, const char *why)
{
	if (turn_msg(o, i))
		return pccx__json_fail(o->msgs_doc, turn_msg(o, i), d, PCCX_ERR_INVALID, "%s", why);
	return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu: %s", i, why);
}

/*
 * Tool calls and results where the template writes them well: a model turn's calls are
 * followed by their results (tool turns), and those by the model's answer; with content besides
 * the calls the template closes the turn after the results, and then a user turn must follow.
 * A tool turn anywhere else the template would drop.
 */
static int check_tool_turns(const struct pccx_chat_format *fmt, const pccx_chat_turn *turns,
			    size_t n, size_t first, const struct pccx_chat_opts *o, pccx_diag *d)
{
	size_t i, j;

	for (i = first; i < n; i++) {
		bool model = is_model_role(fmt, turns[i].role), said = turns[i].content[0];

		if (!fmt->call_open && o->msgs && !strcmp(turns[i].role, "tool"))
			return turn_fail(o, i, d, "the format has no place for tool results");
		if (is_tool(fmt, &turns[i]) && !o->msgs)
			return turn_fail(o, i, d, "a tool result needs its message (the call it "
					 "answers names the tool)");
		if (is_tool(fmt, &turns[i]) && (i == first || !(is_tool(fmt, &turns[i - 1]) ||
							     turn_calls(o, i - 1))))
			return turn_fail(o, i, d, "a tool result follows the assistant message "
					 "whose tool_calls it answers (the template writes it "
					 "nowhere else)");
		if (is_tool(fmt, &turns[i]) || !turn_calls(o, i))
			continue;
		if (!model || !fmt->call_open)
			return turn_fail(o, i, d, !model ? "tool_calls are the assistant's" :
					 "this format has no place for tool calls");
		for (j = i + 1; j < n && is_tool(fmt, &turns[j]); j++)
			;
		if (j == i + 1)
			return turn_fail(o, i, d, "tool calls need their results: tool messages "
					 "after them (the template leaves <|tool_response> open)");
		if (said && j < n && strcmp(turns[j].role, "user"))
			return turn_fail(o, i, d, "with content besides its tool calls the "
					 "template closes the model's turn after the results: a "
					 "user message follows them, not the model's");
		if (said && j == n)
			return turn_fail(o, i, d, "with content besides its tool calls the "
					 "template closes the model's turn after the results and "
					 "opens no other: send the content in a later assistant "
					 "message");
		if (!said && j < n && !is_model_role(fmt, turns[j].role))
			return turn_fail(o, i, d, "the template leaves the model's turn open "
					 "after the tool results: the model's answer (an "
					 "assistant message) follows them, not a user message");
	}
	return 0;
}

/*
 * Every turn has a role and valid UTF-8 content; the roles alternate from `first` on (tool
 * turns aside; the model's answer after tool results continues the turn that called).
 */
static int check_turns(const struct pccx_chat_format *fmt, const pccx_chat_turn *turns,
		       size_t n, size_t first, const struct pccx_chat_opts *o, pccx_diag *d)
{
	bool want_user = true;
	size_t i, bad;
	int rc;

	for (i = 0; i < n; i++) {
		if (!turns[i].role || !turns[i].content)
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu has no %s",
					  i, turns[i].role ? "content" : "role");
		if (!pccx__tok_utf8_valid(turns[i].content, strlen(turns[i].content), &bad))
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu content is "
					  "not valid UTF-8 at byte %zu", i, bad);
	}
	rc = check_tool_turns(fmt, turns, n, first, o, d);
	if (rc)
		return rc;
	for (i = first; i < n; i++) {
		bool is_user = !strcmp(turns[i].role, "user");

		if (is_tool(fmt, &turns[i]) ||
		    (i > first && !is_user && is_tool(fmt, &turns[i - 1])))
			continue;
		if (is_user != want_user)
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu (\"%s\"): "
					  "conversation roles must alternate "
					  "user/assistant/user/assistant/...", i, turns[i].role);
		want_user = !is_user;
	}
	return 0;
}

/*
 * The system turn of a format with a system role: the think piece, the trimmed content, the
 * tool declarations. 1: out of memory; else 0 or a status.
 */
static int add_system_turn(struct sbuf *b, const struct pccx_chat_format *fmt,
			   const char *content, const struct pccx_chat_opts *o, pccx_diag *d)
{
	int rc;

	if (open_turn(b, fmt, fmt->system_role) || (o->thinking && sbuf_adds(b, fmt->think)) ||
	    (content && add_content(b, fmt, false, content)))
		return 1;
	if (o->tools) {
		rc = pccx__chat_put_tools(b, fmt, o->tools_doc, o->tools, d);
		if (rc)
			return rc;
	}
	return sbuf_adds(b, fmt->turn_end) ? 1 : 0;
}

/*
 * The name of the function tool turn t answers: that of the call of `calls` whose id is its
 * tool_call_id (the last such, as the template's loop leaves it), else its own "name".
 */
static int result_name(const struct pccx_chat_opts *o, size_t t, const pccx_json *calls,
		       const char **name, size_t *len, pccx_diag *d)
{
	const pccx_json *m = turn_msg(o, t), *id = pccx__json_get(m, "tool_call_id");
	const pccx_json *nm = pccx__json_get(m, "name");
	const char *want = NULL, *s;
	size_t i, n, wn = 0;

	*name = NULL;
	if (id && pccx__json_type_of(id) == PCCX_JSON_STRING)
		want = pccx__json_str(id, &wn);
	for (i = 0; want && i < pccx__json_count(calls); i++) {
		const pccx_json *c = pccx__json_at(calls, i), *cid = pccx__json_get(c, "id");

		if (!cid || pccx__json_type_of(cid) != PCCX_JSON_STRING)
			continue;
		s = pccx__json_str(cid, &n);
		if (n == wn && !memcmp(s, want, n))	/* put_calls checked the call's name */
			*name = pccx__json_str(pccx__json_get(pccx__json_get(c, "function"),
							      "name"), len);
	}
	if (*name)
		return 0;
	if (nm && pccx__json_type_of(nm) == PCCX_JSON_STRING && *pccx__json_str(nm, len)) {
		*name = pccx__json_str(nm, len);
		return 0;
	}
	return turn_fail(o, t, d, "a tool result names its call: a tool_call_id that is the id "
			 "of one of the calls before it, or the function's name");
}

/*
 * A model turn's reasoning (when it answers the last user turn), its calls and the results of
 * the tool turns after it, as the template writes them. 1: out of memory; else 0 or a status.
 */
static int add_calls(struct sbuf *b, const struct pccx_chat_format *fmt,
		     const pccx_chat_turn *turns, size_t n, size_t i, size_t last_user,
		     const struct pccx_chat_opts *o, pccx_diag *d)
{
	const pccx_json *calls = turn_calls(o, i), *m = turn_msg(o, i);
	const pccx_json *r = pccx__json_get(m, "reasoning");
	const char *name;
	size_t j, len;
	int rc;

	/* message.get('reasoning') or message.get('reasoning_content') */
	if (!r || pccx__json_type_of(r) != PCCX_JSON_STRING || !*pccx__json_str(r, NULL))
		r = pccx__json_get(m, "reasoning_content");
	if (r && pccx__json_type_of(r) == PCCX_JSON_STRING && *pccx__json_str(r, &len) &&
	    i > last_user) {
		if (sbuf_adds(b, fmt->thought_open) || sbuf_adds(b, "thought\n") ||
		    sbuf_add(b, pccx__json_str(r, NULL), len) || sbuf_adds(b, "\n") ||
		    sbuf_adds(b, fmt->thought_close))
			return 1;
	}
	rc = pccx__chat_put_calls(b, fmt, o->msgs_doc, calls, d);
	if (rc)
		return rc;
	for (j = i + 1; j < n && is_tool(fmt, &turns[j]); j++) {
		rc = result_name(o, j, calls, &name, &len, d);
		if (rc)
			return rc;
		if (pccx__chat_put_response(b, fmt, name, len, turns[j].content))
			return 1;
	}
	return 0;
}

int pccx__chat_render_opts(const struct pccx_chat_format *fmt, const pccx_chat_turn *turns,
			   size_t n, const struct pccx_chat_opts *o, char **out, size_t *len,
			   pccx_diag *d)
{
	static const struct pccx_chat_opts none = { 0 };
	struct pccx_chat_opts oo;
	struct sbuf b = { 0 };
	const char *system = NULL;
	size_t i, first = 0, last_user = 0;
	bool open = false;	/* the last model turn left open after tool results */
	int rc;

	if (!out || (!turns && n))
		return pccx__fail(d, PCCX_ERR_INVALID, "chat template: invalid arguments");
	*out = NULL;
	if (!o)
		o = &none;
	if (!fmt)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "chat template: the model family's format is not available");
	if (o->thinking && !fmt->think)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "chat template: the %s format has no "
				  "thinking switch", fmt->family);
	/* the template tests `tools` for truth: an empty list is no tools */
	if (o->tools && pccx__json_type_of(o->tools) == PCCX_JSON_ARRAY &&
	    !pccx__json_count(o->tools)) {
		oo = *o;
		oo.tools = NULL;
		o = &oo;
	}
	if (o->tools && !fmt->tool_open)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "chat template: the %s format has no "
				  "place for tool declarations", fmt->family);
	if (n && turns[0].role && !strcmp(turns[0].role, "system")) {
		system = turns[0].content;
		first = 1;
	}
	rc = check_turns(fmt, turns, n, first, o, d);
	if (rc)
		return rc;
	for (i = first; i < n; i++)
		if (!strcmp(turns[i].role, "user"))
			last_user = i;
	if (sbuf_adds(&b, fmt->bos))
		goto nomem;
	if (fmt->system_role && (system || o->thinking || o->tools)) {
		rc = add_system_turn(&b, fmt, system, o, d);
		if (rc == 1)
			goto nomem;
		if (rc) {
			free(b.p);
			return rc;
		}
	}
	for (i = first; i < n; i++) {
		bool model = is_model_role(fmt, turns[i].role);
		bool calls = model && turn_calls(o, i);

		if (is_tool(fmt, &turns[i]))
			continue;	/* written with the calls it answers */
		/* the answer after tool results goes on in the turn that called */
		if (!open && open_turn(&b, fmt, model ? fmt->model_role : turns[i].role))
			goto nomem;
		/* a format without a system role: the content goes in front of the first turn */
		if (i == first && system && !fmt->system_role &&
		    (sbuf_adds(&b, system) || sbuf_adds(&b, fmt->system_sep)))
			goto nomem;
		if (calls) {
			rc = add_calls(&b, fmt, turns, n, i, last_user, o, d);
			if (rc == 1)
				goto nomem;
			if (rc) {
				free(b.p);
				return rc;
			}
		}
		if (add_content(&b, fmt, model, turns[i].content))
			goto nomem;
		/* after results without content the template leaves the turn open */
		open = calls && !turns[i].content[0];
		if (!open && sbuf_adds(&b, fmt->turn_end))
			goto nomem;
	}
	/* after tool results the model answers in its open turn: no generation prompt */
	if (o->add_generation_prompt && !open && open_turn(&b, fmt, fmt->model_role))
		goto nomem;
	return finish(&b, false, out, len, d);
nomem:
	return finish(&b, true, out, len, d);
}

int pccx__chat_render(const struct pccx_chat_format *fmt, const pccx_chat_turn *turns, size_t n,
		      bool add_generation_prompt, char **out, size_t *len, pccx_diag *d)
{
	struct pccx_chat_opts o = { .add_generation_prompt = add_generation_prompt };

	return pccx__chat_render_opts(fmt, turns, n, &o, out, len, d);
}

int pccx__chat_render_turn(const struct pccx_chat_format *fmt, const char *role,
			   const char *content, bool first, char **out, size_t *len, pccx_diag *d)
{
	struct sbuf b = { 0 };
	bool user, model, nomem;
	size_t bad;

	if (!out || !role || !content)
		return pccx__fail(d, PCCX_ERR_INVALID, "chat turn: invalid arguments");
	*out = NULL;
	if (!fmt)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "chat template: the model family's format is not available");
	user = !strcmp(role, "user");
	model = !strcmp(role, "model") || !strcmp(role, "assistant");
	if (!user && !model)
		return pccx__fail(d, PCCX_ERR_INVALID, "chat turn: role \"%s\": a turn is \"user\" "
				  "or \"model\" (\"assistant\")", role);
	if (!pccx__tok_utf8_valid(content, strlen(content), &bad))
		return pccx__fail(d, PCCX_ERR_INVALID, "chat turn: the content is not valid UTF-8 "
				  "at byte %zu", bad);
	nomem = (user && ((first && sbuf_adds(&b, fmt->bos)) || open_turn(&b, fmt, "user"))) ||
		add_content(&b, fmt, model, content) || sbuf_adds(&b, fmt->turn_end) ||
		(user && open_turn(&b, fmt, fmt->model_role));
	return finish(&b, nomem, out, len, d);
}

int pccx_chat_render_gemma(const pccx_chat_turn *turns, size_t n, bool add_generation_prompt,
			   char **out, size_t *len, pccx_diag *d)
{
	return pccx__chat_render(pccx__chat_format(PCCX_CHAT_GEMMA), turns, n,
				 add_generation_prompt, out, len, d);
}
