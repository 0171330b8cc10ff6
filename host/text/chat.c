/* SPDX-License-Identifier: MIT */
/*
 * Chat formats by model family, and the renderer that writes a conversation in one. The Gemma
 * format is what the chat_template of Gemma 3's tokenizer_config.json renders (implemented from
 * its Jinja source: the JavaScript package's template engine cannot render it). Gemma 1's and
 * Gemma 2's templates write the same turns; they refuse a system turn, which pccx folds into
 * the first user turn as Gemma 3's does (docs/chat.md, "Formats of the model families").
 * The Gemma 4 format is what Gemma 4's chat_template renders for text turns: a system role of
 * its own, the thinking switch, reasoning removed from earlier model turns.
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
	 * content. Tool calls and responses in earlier turns are not written (docs/chat.md).
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
		.stops = { "<turn|>" },
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

/* Every turn has a role and valid UTF-8 content; the roles alternate from `first` on. */
static int check_turns(const pccx_chat_turn *turns, size_t n, size_t first, pccx_diag *d)
{
	size_t i, bad;

	for (i = 0; i < n; i++) {
		if (!turns[i].role || !turns[i].content)
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu has no %s",
					  i, turns[i].role ? "content" : "role");
		if (!pccx__tok_utf8_valid(turns[i].content, strlen(turns[i].content), &bad))
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu content is "
					  "not valid UTF-8 at byte %zu", i, bad);
	}
	for (i = first; i < n; i++) {
		bool is_user = !strcmp(turns[i].role, "user");

		if (is_user != ((i - first) % 2 == 0))
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu (\"%s\"): "
					  "conversation roles must alternate "
					  "user/assistant/user/assistant/...", i, turns[i].role);
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

int pccx__chat_render_opts(const struct pccx_chat_format *fmt, const pccx_chat_turn *turns,
			   size_t n, const struct pccx_chat_opts *o, char **out, size_t *len,
			   pccx_diag *d)
{
	static const struct pccx_chat_opts none = { 0 };
	struct pccx_chat_opts oo;
	struct sbuf b = { 0 };
	const char *system = NULL;
	size_t i, first = 0;
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
	rc = check_turns(turns, n, first, d);
	if (rc)
		return rc;
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

		if (open_turn(&b, fmt, model ? fmt->model_role : turns[i].role))
			goto nomem;
		/* a format without a system role: the content goes in front of the first turn */
		if (i == first && system && !fmt->system_role &&
		    (sbuf_adds(&b, system) || sbuf_adds(&b, fmt->system_sep)))
			goto nomem;
		if (add_content(&b, fmt, model, turns[i].content) || sbuf_adds(&b, fmt->turn_end))
			goto nomem;
	}
	if (o->add_generation_prompt && open_turn(&b, fmt, fmt->model_role))
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
