// SPDX-License-Identifier: MIT
/* pccx chat: the conversation and its file (chat_file.h; the format is in docs/chat.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_file.h"
#include "diag.h"
#include "fileio.h"
#include "json.h"

#define FORMAT_NAME "pccx-chat"
#define FORMAT_VERSION 1

int pccx_cli_chat_add(struct pccx_cli_chat_conv *c, const char *role, const char *text,
		      const int32_t *ids, size_t n_ids)
{
	struct pccx_cli_chat_turn *t;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct pccx_cli_chat_turn *nt = realloc(c->turns, cap * sizeof(*nt));

		if (!nt)
			return PCCX_ERR_NOMEM;
		c->turns = nt;
		c->cap = cap;
	}
	t = &c->turns[c->n];
	memset(t, 0, sizeof(*t));
	t->role = strdup(role);
	t->text = strdup(text);
	if (ids) {
		t->ids = malloc((n_ids ? n_ids : 1) * sizeof(*ids));
		if (t->ids && n_ids)
			memcpy(t->ids, ids, n_ids * sizeof(*ids));
		t->n_ids = n_ids;
	}
	if (!t->role || !t->text || (ids && !t->ids)) {
		free(t->role);
		free(t->text);
		free(t->ids);
		return PCCX_ERR_NOMEM;
	}
	c->n++;
	return PCCX_OK;
}

void pccx_cli_chat_clear(struct pccx_cli_chat_conv *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->turns[i].role);
		free(c->turns[i].text);
		free(c->turns[i].ids);
	}
	free(c->turns);
	memset(c, 0, sizeof(*c));
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07u;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* s as a JSON string; a byte that is not part of valid UTF-8 is written as U+FFFD. */
static void put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	fputc('"', f);
	while (n) {
		size_t len = utf8_len(p, n);

		if (!len) {
			fputs("\\ufffd", f);
			len = 1;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p == '\n') {
			fputs("\\n", f);
		} else if (*p == '\t') {
			fputs("\\t", f);
		} else if (*p == '\r') {
			fputs("\\r", f);
		} else if (*p < 0x20) {
			fprintf(f, "\\u%04x", *p);
		} else {
			fwrite(p, 1, len, f);
		}
		p += len;
		n -= len;
	}
	fputc('"', f);
}

int pccx_cli_chat_save(const char *path, const char *model_id, const pccx_sampler_config *sc,
		       const struct pccx_cli_chat_conv *c, pccx_diag *d)
{
	char *buf = NULL;
	size_t len = 0, i, k;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"model\": ", FORMAT_NAME,
		FORMAT_VERSION);
	put_string(f, model_id);
	fprintf(f, ",\n  \"sampler\": {\"temperature\": %.9g, \"top_k\": %" PRId32 ", "
		"\"top_p\": %.9g, \"min_p\": %.9g, \"repetition_penalty\": %.9g, "
		"\"penalty_last_n\": %" PRId32 ", \"seed\": \"%" PRIu64 "\"},\n  \"turns\": [",
		(double)sc->temperature, sc->top_k, (double)sc->top_p, (double)sc->min_p,
		(double)sc->repetition_penalty, sc->penalty_last_n, sc->seed);
	for (i = 0; i < c->n; i++) {
		const struct pccx_cli_chat_turn *t = &c->turns[i];

		fprintf(f, "%s\n    {\"role\": ", i ? "," : "");
		put_string(f, t->role);
		fputs(", \"content\": ", f);
		put_string(f, t->text);
		if (t->ids) {
			fputs(",\n     \"tokens\": [", f);
			for (k = 0; k < t->n_ids; k++)
				fprintf(f, "%s%" PRId32, k ? ", " : "", t->ids[k]);
			fputc(']', f);
		}
		fputc('}', f);
	}
	fputs(c->n ? "\n  ]\n}\n" : "]\n}\n", f);
	if (fclose(f)) {
		free(buf);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	rc = pccx__write_file_atomic(path, buf, len, d);
	free(buf);
	return rc;
}

static int get_float(const pccx_json_doc *doc, const pccx_json *obj, const char *key, float *out,
		     pccx_diag *d)
{
	double v;
	int rc = pccx__json_get_double(doc, obj, key, &v, d);

	if (!rc)
		*out = (float)v;
	return rc;
}

static int read_sampler(const pccx_json_doc *doc, const pccx_json *root, pccx_sampler_config *sc,
			pccx_diag *d)
{
	pccx_diag why = { 0 };
	const pccx_json *o;
	const char *seed;
	int64_t k, last_n;
	char *end;
	int rc;

	pccx_sampler_config_default(sc);
	rc = pccx__json_get_member(doc, root, "sampler", PCCX_JSON_OBJECT, &o, d);
	if (!rc)
		rc = get_float(doc, o, "temperature", &sc->temperature, d);
	if (!rc)
		rc = pccx__json_get_i64(doc, o, "top_k", 0, INT32_MAX, &k, d);
	if (!rc)
		sc->top_k = (int32_t)k;
	if (!rc)
		rc = get_float(doc, o, "top_p", &sc->top_p, d);
	if (!rc)
		rc = get_float(doc, o, "min_p", &sc->min_p, d);
	if (!rc)
		rc = get_float(doc, o, "repetition_penalty", &sc->repetition_penalty, d);
	if (!rc)
		rc = pccx__json_get_i64(doc, o, "penalty_last_n", -1, INT32_MAX, &last_n, d);
	if (!rc)
		sc->penalty_last_n = (int32_t)last_n;
	if (!rc)
		rc = pccx__json_get_string(doc, o, "seed", &seed, NULL, d);
	if (rc)
		return rc;
	errno = 0;
	sc->seed = strtoull(seed, &end, 10);
	if (!*seed || *end || errno || *seed == '-' || *seed == '+' || *seed == ' ')
		return pccx__json_fail(doc, pccx__json_get(o, "seed"), d, PCCX_ERR_FORMAT,
				       "expected a decimal 64-bit seed, got \"%s\"", seed);
	if (pccx_sampler_config_check(sc, &why))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: sampler: %s", pccx__json_doc_name(doc),
				  why.msg);
	return PCCX_OK;
}

static int read_turn(const pccx_json_doc *doc, const pccx_json *t, size_t i,
		     struct pccx_cli_chat_conv *c, pccx_diag *d)
{
	const char *want = i % 2 ? "model" : "user", *role, *text;
	const pccx_json *tokens = NULL;
	int32_t *ids = NULL;
	size_t n = 0, k, tlen;
	int rc;

	rc = pccx__json_expect(doc, t, PCCX_JSON_OBJECT, d);
	if (!rc)
		rc = pccx__json_get_string(doc, t, "role", &role, NULL, d);
	if (!rc)
		rc = pccx__json_get_string(doc, t, "content", &text, &tlen, d);
	if (rc)
		return rc;
	if (strcmp(role, want))
		return pccx__json_fail(doc, t, d, PCCX_ERR_FORMAT,
				       "role \"%s\" where a \"%s\" turn goes (turns alternate user, "
				       "model, starting with user)", role, want);
	if (strlen(text) != tlen)
		return pccx__json_fail(doc, t, d, PCCX_ERR_FORMAT, "the content holds a NUL");
	if (pccx__json_get(t, "tokens") &&
	    pccx__json_type_of(pccx__json_get(t, "tokens")) != PCCX_JSON_NULL) {
		rc = pccx__json_get_member(doc, t, "tokens", PCCX_JSON_ARRAY, &tokens, d);
		if (rc)
			return rc;
		n = pccx__json_count(tokens);
		if (!n)
			return pccx__json_fail(doc, tokens, d, PCCX_ERR_FORMAT,
					       "a turn puts at least one token into the context");
		ids = malloc(n * sizeof(*ids));
		if (!ids)
			return pccx__fail(d, PCCX_ERR_NOMEM, "out of memory");
		for (k = 0; k < n; k++) {
			const pccx_json *v = pccx__json_at(tokens, k);

			if (!pccx__json_is_int(v) || pccx__json_int(v) < 0 ||
			    pccx__json_int(v) > INT32_MAX) {
				free(ids);
				return pccx__json_fail(doc, v, d, PCCX_ERR_FORMAT,
						       "expected a token id (an integer >= 0)");
			}
			ids[k] = (int32_t)pccx__json_int(v);
		}
	}
	/* a turn without tokens keeps ids NULL: its text is tokenized when it is loaded */
	rc = pccx_cli_chat_add(c, role, text, ids, n);
	free(ids);
	return rc ? pccx__fail(d, rc, "out of memory") : PCCX_OK;
}

int pccx_cli_chat_read(const char *path, const char *model_id, struct pccx_cli_chat_conv *out,
		       pccx_sampler_config *sc, pccx_diag *d)
{
	struct pccx_cli_chat_conv c = { 0 };
	pccx_sampler_config s;
	const pccx_json *root, *turns;
	const char *format, *model;
	pccx_json_doc *doc = NULL;
	int64_t version;
	size_t i;
	int rc;

	rc = pccx__json_parse_file(path, NULL, &doc, d);
	if (rc)
		return rc;
	root = pccx__json_root(doc);
	rc = pccx__json_expect(doc, root, PCCX_JSON_OBJECT, d);
	if (!rc)
		rc = pccx__json_get_string(doc, root, "format", &format, NULL, d);
	if (!rc && strcmp(format, FORMAT_NAME))
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: not a pccx chat file (format \"%s\", "
				"expected \"%s\")", path, format, FORMAT_NAME);
	if (!rc)
		rc = pccx__json_get_i64(doc, root, "version", 0, INT32_MAX, &version, d);
	if (!rc && version != FORMAT_VERSION)
		rc = pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: version %" PRId64 " of the chat file "
				"format; this pccx reads version %d", path, version,
				FORMAT_VERSION);
	if (!rc)
		rc = pccx__json_get_string(doc, root, "model", &model, NULL, d);
	if (!rc && strcmp(model, model_id))
		rc = pccx__fail(d, PCCX_ERR_INVALID, "%s: saved with another model (%s); this is "
				"%s", path, model, model_id);
	if (!rc)
		rc = read_sampler(doc, root, &s, d);
	if (!rc)
		rc = pccx__json_get_member(doc, root, "turns", PCCX_JSON_ARRAY, &turns, d);
	for (i = 0; !rc && i < pccx__json_count(turns); i++)
		rc = read_turn(doc, pccx__json_at(turns, i), i, &c, d);
	if (!rc && c.n % 2)
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: the last turn is the user's: a saved "
				"conversation ends with the model's reply", path);
	pccx__json_free(doc);
	if (rc) {
		pccx_cli_chat_clear(&c);
		return rc;
	}
	*out = c;
	*sc = s;
	return PCCX_OK;
}
