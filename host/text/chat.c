/* SPDX-License-Identifier: MIT */
/*
 * Chat formats by model family, and the renderer that writes a conversation in one. The Gemma
 * format is what the chat_template of Gemma 3's tokenizer_config.json renders (implemented from
 * its Jinja source: the JavaScript package's template engine cannot render it). Gemma 1's and
 * Gemma 2's templates write the same turns; they refuse a system turn, which pccx folds into
 * the first user turn as Gemma 3's does (docs/chat.md, "Formats of the model families").
 */
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "diag.h"
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
	 * Gemma 4 writes its turns with <|turn> markers. The change that adds the family fills in
	 * the pieces from its chat template; until then the format is absent (pccx__chat_format()
	 * returns NULL) and rendering with it is refused.
	 */
	[PCCX_CHAT_GEMMA4] = {
		.family = "gemma4",
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

int pccx__chat_render(const struct pccx_chat_format *fmt, const pccx_chat_turn *turns, size_t n,
		      bool add_generation_prompt, char **out, size_t *len, pccx_diag *d)
{
	struct sbuf b = { 0 };
	const char *prefix = NULL;
	size_t i, first = 0;

	if (!out || (!turns && n))
		return pccx__fail(d, PCCX_ERR_INVALID, "chat template: invalid arguments");
	*out = NULL;
	if (!fmt)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "chat template: the model family's format is not available");
	for (i = 0; i < n; i++) {
		size_t bad;

		if (!turns[i].role || !turns[i].content)
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu has no %s",
					  i, turns[i].role ? "content" : "role");
		if (!pccx__tok_utf8_valid(turns[i].content, strlen(turns[i].content), &bad))
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu content is "
					  "not valid UTF-8 at byte %zu", i, bad);
	}
	if (n && !strcmp(turns[0].role, "system")) {
		prefix = turns[0].content;
		first = 1;
	}
	for (i = first; i < n; i++) {
		bool is_user = !strcmp(turns[i].role, "user");

		if (is_user != ((i - first) % 2 == 0))
			return pccx__fail(d, PCCX_ERR_INVALID, "chat template: turn %zu (\"%s\"): "
					  "conversation roles must alternate "
					  "user/assistant/user/assistant/...", i, turns[i].role);
	}
	if (sbuf_adds(&b, fmt->bos))
		goto nomem;
	for (i = first; i < n; i++) {
		const char *role = !strcmp(turns[i].role, "assistant") ? fmt->model_role :
					turns[i].role;
		size_t off, tl;

		py_trim(turns[i].content, strlen(turns[i].content), &off, &tl);
		if (open_turn(&b, fmt, role))
			goto nomem;
		if (i == first && prefix &&
		    (sbuf_adds(&b, prefix) || sbuf_adds(&b, fmt->system_sep)))
			goto nomem;
		if (sbuf_add(&b, turns[i].content + off, tl) || sbuf_adds(&b, fmt->turn_end))
			goto nomem;
	}
	if (add_generation_prompt && open_turn(&b, fmt, fmt->model_role))
		goto nomem;
	return finish(&b, false, out, len, d);
nomem:
	return finish(&b, true, out, len, d);
}

int pccx__chat_render_turn(const struct pccx_chat_format *fmt, const char *role,
			   const char *content, bool first, char **out, size_t *len, pccx_diag *d)
{
	struct sbuf b = { 0 };
	bool user, model, nomem;
	size_t off, tl, bad;

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
	py_trim(content, strlen(content), &off, &tl);
	nomem = (user && ((first && sbuf_adds(&b, fmt->bos)) || open_turn(&b, fmt, "user"))) ||
		sbuf_add(&b, content + off, tl) || sbuf_adds(&b, fmt->turn_end) ||
		(user && open_turn(&b, fmt, fmt->model_role));
	return finish(&b, nomem, out, len, d);
}

int pccx_chat_render_gemma(const pccx_chat_turn *turns, size_t n, bool add_generation_prompt,
			   char **out, size_t *len, pccx_diag *d)
{
	return pccx__chat_render(pccx__chat_format(PCCX_CHAT_GEMMA), turns, n,
				 add_generation_prompt, out, len, d);
}
