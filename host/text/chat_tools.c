/* SPDX-License-Identifier: MIT */
/*
 * Tool declarations in Gemma 4's system turn, as the format_function_declaration and
 * format_parameters macros of its chat_template write them (docs/chat.md, "Tools"):
 *   <|tool>declaration:NAME{description:<|"|>D<|"|>,parameters:{properties:{...},
 *   required:[<|"|>a<|"|>],type:<|"|>OBJECT<|"|>}}<tool|>
 * from the tools an OpenAI-style client sends ([{"type":"function","function":{name,
 * description, parameters}}]). Keys are written in the order of Jinja's dictsort (case folded),
 * JSON-schema types upper-cased, strings between the format's quote pieces. What the template
 * would write malformed (parameters without a type, an object schema whose extra keys it takes
 * for properties) or writes the Python way (floats) is refused rather than guessed.
 * Earlier tool calls of a model turn and the results sent back are written here too, by the
 * same value writer (format_argument), with bare keys as the template writes arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "chat.h"
#include "diag.h"
#include "json.h"
#include "tokenizer_int.h"

struct tw {
	struct sbuf *b;
	const struct pccx_chat_format *fmt;
	const pccx_json_doc *doc;
	pccx_diag *d;
	bool nomem;
	bool bare_keys;		/* format_argument's escape_keys=False: a call's arguments */
};

static void put(struct tw *w, const char *s, size_t n)
{
	if (!w->nomem && sbuf_add(w->b, s, n))
		w->nomem = true;
}

static void puts_(struct tw *w, const char *s)
{
	put(w, s, strlen(s));
}

/* quote S quote */
static void put_quoted(struct tw *w, const char *s, size_t n)
{
	puts_(w, w->fmt->quote);
	put(w, s, n);
	puts_(w, w->fmt->quote);
}

/* Jinja's `upper` of an ASCII type name, between quotes */
static void put_type(struct tw *w, const char *s, size_t n)
{
	size_t i;

	puts_(w, w->fmt->quote);
	for (i = 0; i < n; i++) {
		char c = s[i] >= 'a' && s[i] <= 'z' ? (char)(s[i] - 'a' + 'A') : s[i];

		put(w, &c, 1);
	}
	puts_(w, w->fmt->quote);
}

static int bad(struct tw *w, const pccx_json *v, const char *what)
{
	return pccx__json_fail(w->doc, v, w->d, PCCX_ERR_INVALID, "%s", what);
}

/* dictsort: keys compared case folded (ASCII), ties in document order */
static int key_cmp(const void *a, const void *b)
{
	const pccx_json *x = *(const pccx_json *const *)a, *y = *(const pccx_json *const *)b;
	size_t nx, ny, i;
	const unsigned char *p = (const unsigned char *)pccx__json_key(x, &nx);
	const unsigned char *q = (const unsigned char *)pccx__json_key(y, &ny);

	for (i = 0; i < nx && i < ny; i++) {
		int c = p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i];
		int e = q[i] >= 'A' && q[i] <= 'Z' ? q[i] + 32 : q[i];

		if (c != e)
			return c - e;
	}
	if (nx != ny)
		return nx < ny ? -1 : 1;
	return x < y ? -1 : x > y;	/* members are stored in document order */
}

/* The members of `obj` in dictsort order (the JSON parser refuses a key given twice). */
static int sorted(struct tw *w, const pccx_json *obj, const pccx_json ***out)
{
	size_t n = pccx__json_count(obj), i;
	const pccx_json **m;

	*out = NULL;
	m = malloc((n ? n : 1) * sizeof(*m));
	if (!m)
		return pccx__fail(w->d, PCCX_ERR_NOMEM, "tool declarations: out of memory");
	for (i = 0; i < n; i++)
		m[i] = pccx__json_at(obj, i);
	qsort(m, n, sizeof(*m), key_cmp);
	*out = m;
	return 0;
}

static int put_arg(struct tw *w, const pccx_json *v, int depth);

/*
 * The template's format_argument(v): strings quoted, keys quoted (escape_keys, declarations)
 * or bare (a call's arguments), `None`.
 */
static int put_arg(struct tw *w, const pccx_json *v, int depth)
{
	const pccx_json **m;
	size_t i, n;
	const char *s;
	char num[32];
	int rc;

	if (depth > 32)
		return bad(w, v, "nested deeper than 32");
	switch (pccx__json_type_of(v)) {
	case PCCX_JSON_STRING:
		s = pccx__json_str(v, &n);
		put_quoted(w, s, n);
		return 0;
	case PCCX_JSON_BOOL:
		puts_(w, pccx__json_bool(v) ? "true" : "false");
		return 0;
	case PCCX_JSON_NULL:
		puts_(w, "None");	/* Python's str(None) */
		return 0;
	case PCCX_JSON_NUMBER:
		if (!pccx__json_is_int(v))
			return bad(w, v, "a number that is not an integer of 64 bits (the template "
				   "writes it as Python does, which is not reproduced)");
		snprintf(num, sizeof(num), "%lld", (long long)pccx__json_int(v));
		puts_(w, num);
		return 0;
	case PCCX_JSON_ARRAY:
		puts_(w, "[");
		for (i = 0; i < pccx__json_count(v); i++) {
			if (i)
				puts_(w, ",");
			rc = put_arg(w, pccx__json_at(v, i), depth + 1);
			if (rc)
				return rc;
		}
		puts_(w, "]");
		return 0;
	default:
		break;
	}
	rc = sorted(w, v, &m);
	if (rc)
		return rc;
	puts_(w, "{");
	for (i = 0; !rc && i < pccx__json_count(v); i++) {
		s = pccx__json_key(m[i], &n);
		if (i)
			puts_(w, ",");
		if (w->bare_keys)
			put(w, s, n);
		else
			put_quoted(w, s, n);
		puts_(w, ":");
		rc = put_arg(w, m[i], depth + 1);
	}
	puts_(w, "}");
	free(m);
	return rc;
}

/* required:[<|"|>a<|"|>,...] */
static int put_required(struct tw *w, const pccx_json *req)
{
	size_t i, n;

	puts_(w, "required:[");
	for (i = 0; i < pccx__json_count(req); i++) {
		const pccx_json *e = pccx__json_at(req, i);
		const char *s;

		if (pccx__json_type_of(e) != PCCX_JSON_STRING)
			return bad(w, e, "a required name is a string");
		s = pccx__json_str(e, &n);
		if (i)
			puts_(w, ",");
		put_quoted(w, s, n);
	}
	puts_(w, "]");
	return 0;
}

/* Jinja truthiness of the JSON values a schema holds */
static bool truthy(const pccx_json *v)
{
	size_t n;

	switch (pccx__json_type_of(v)) {
	case PCCX_JSON_BOOL:
		return pccx__json_bool(v);
	case PCCX_JSON_NUMBER:
		return pccx__json_num(v) != 0;
	case PCCX_JSON_STRING:
		pccx__json_str(v, &n);
		return n > 0;
	case PCCX_JSON_ARRAY:
	case PCCX_JSON_OBJECT:
		return pccx__json_count(v) > 0;
	default:
		return false;
	}
}

static bool key_is(const pccx_json *m, const char *k)
{
	size_t n;
	const char *s = pccx__json_key(m, &n);

	return n == strlen(k) && !memcmp(s, k, n);
}

/* The keys format_parameters passes over as names of properties. */
static bool standard_key(const pccx_json *m)
{
	return key_is(m, "description") || key_is(m, "type") || key_is(m, "properties") ||
	       key_is(m, "required") || key_is(m, "nullable");
}

static int put_properties(struct tw *w, const pccx_json *props, int depth);

/* One item schema's members: every key written, properties/required/type as the template. */
static int put_items(struct tw *w, const pccx_json *items, int depth)
{
	const pccx_json **m;
	size_t i, k, n;
	bool first = true;
	int rc;

	rc = sorted(w, items, &m);
	for (i = 0; !rc && i < pccx__json_count(items); i++) {
		const pccx_json *v = m[i];
		const char *key = pccx__json_key(v, &n);

		if (pccx__json_type_of(v) == PCCX_JSON_NULL)
			continue;
		if (!first)
			puts_(w, ",");
		first = false;
		if (key_is(v, "properties")) {
			puts_(w, "properties:{");
			if (pccx__json_type_of(v) == PCCX_JSON_OBJECT)
				rc = put_properties(w, v, depth + 1);
			puts_(w, "}");
		} else if (key_is(v, "required")) {
			rc = pccx__json_type_of(v) == PCCX_JSON_ARRAY ? put_required(w, v) :
			     bad(w, v, "expected an array of names");
		} else if (key_is(v, "type") && pccx__json_type_of(v) == PCCX_JSON_STRING) {
			const char *s = pccx__json_str(v, &n);

			puts_(w, "type:");
			put_type(w, s, n);
		} else if (key_is(v, "type") && pccx__json_type_of(v) == PCCX_JSON_ARRAY) {
			puts_(w, "type:[");
			for (k = 0; !rc && k < pccx__json_count(v); k++) {
				const pccx_json *t = pccx__json_at(v, k);
				const char *s = pccx__json_str(t, &n);

				if (pccx__json_type_of(t) != PCCX_JSON_STRING)
					rc = bad(w, t, "a type name is a string");
				else if (k)
					puts_(w, ",");
				if (!rc)
					put_type(w, s, n);
			}
			puts_(w, "]");
		} else if (key_is(v, "type")) {
			rc = bad(w, v, "expected a type name or an array of them");
		} else {
			put(w, key, n);
			puts_(w, ":");
			rc = put_arg(w, v, depth + 1);
		}
	}
	free(m);
	return rc;
}

/* A property's schema after its description: format_parameters' body for one key. */
static int put_schema(struct tw *w, const pccx_json *v, int depth)
{
	const pccx_json *desc = pccx__json_get(v, "description"), *type = pccx__json_get(v, "type");
	const pccx_json *props = pccx__json_get(v, "properties");
	const pccx_json *req = pccx__json_get(v, "required");
	const pccx_json *nullable = pccx__json_get(v, "nullable");
	const char *t = "", *s;
	size_t tn = 0, n, i;
	bool comma = false;
	int rc = 0;

	if (desc && pccx__json_type_of(desc) != PCCX_JSON_STRING)
		return bad(w, desc, "expected a string");
	if (type && pccx__json_type_of(type) != PCCX_JSON_STRING)
		return bad(w, type, "expected a type name (a string: a list of types is written "
			   "only in items)");
	if (nullable && pccx__json_type_of(nullable) != PCCX_JSON_BOOL)
		return bad(w, nullable, "expected true or false");
	if (req && pccx__json_type_of(req) != PCCX_JSON_ARRAY)
		return bad(w, req, "expected an array of names");
	if (type)
		t = pccx__json_str(type, &tn);
	if (desc && truthy(desc)) {
		s = pccx__json_str(desc, &n);
		puts_(w, "description:");
		put_quoted(w, s, n);
		comma = true;
	}
	if (tn == 6 && !strncasecmp(t, "string", 6)) {
		const pccx_json *e = pccx__json_get(v, "enum");

		if (e && truthy(e)) {
			puts_(w, comma ? ",enum:" : "enum:");
			comma = true;
			rc = put_arg(w, e, depth + 1);
		}
	} else if (tn == 5 && !strncasecmp(t, "array", 5)) {
		const pccx_json *it = pccx__json_get(v, "items");

		if (it && pccx__json_type_of(it) == PCCX_JSON_OBJECT && truthy(it)) {
			puts_(w, comma ? ",items:{" : "items:{");
			comma = true;
			rc = put_items(w, it, depth + 1);
			puts_(w, "}");
		}
	}
	if (!rc && nullable && pccx__json_bool(nullable)) {
		puts_(w, comma ? ",nullable:true" : "nullable:true");
		comma = true;
	}
	if (!rc && tn == 6 && !strncasecmp(t, "object", 6)) {
		if (props && pccx__json_type_of(props) != PCCX_JSON_OBJECT)
			return bad(w, props, "expected an object");
		/* without properties the template reads the schema's own other keys as them */
		for (i = 0; !props && i < pccx__json_count(v); i++)
			if (!standard_key(pccx__json_at(v, i)))
				return bad(w, pccx__json_at(v, i), "an object schema without "
					   "\"properties\" has only description, type, required "
					   "and nullable here (the template would write this key "
					   "as a property)");
		puts_(w, comma ? ",properties:{" : "properties:{");
		comma = true;
		if (props)
			rc = put_properties(w, props, depth + 1);
		puts_(w, "}");
		if (!rc && req && truthy(req)) {
			puts_(w, ",");
			rc = put_required(w, req);
		}
	}
	if (rc)
		return rc;
	puts_(w, comma ? ",type:" : "type:");
	put_type(w, t, tn);
	return 0;
}

/* format_parameters: NAME:{...} per property, in dictsort order, standard names passed over */
static int put_properties(struct tw *w, const pccx_json *props, int depth)
{
	const pccx_json **m;
	size_t i, n;
	bool first = true;
	int rc;

	if (depth > 32)
		return bad(w, props, "nested deeper than 32");
	rc = sorted(w, props, &m);
	for (i = 0; !rc && i < pccx__json_count(props); i++) {
		const char *key = pccx__json_key(m[i], &n);

		if (standard_key(m[i]))
			continue;
		if (pccx__json_type_of(m[i]) != PCCX_JSON_OBJECT) {
			rc = bad(w, m[i], "a property's schema is an object");
			break;
		}
		if (!first)
			puts_(w, ",");
		first = false;
		put(w, key, n);
		puts_(w, ":{");
		rc = put_schema(w, m[i], depth);
		puts_(w, "}");
	}
	free(m);
	return rc;
}

/* ,parameters:{properties:{...},required:[...],type:<|"|>OBJECT<|"|>} */
static int put_parameters(struct tw *w, const pccx_json *p)
{
	const pccx_json *props = pccx__json_get(p, "properties");
	const pccx_json *req = pccx__json_get(p, "required");
	const pccx_json *type = pccx__json_get(p, "type");
	const char *t;
	size_t n;
	int rc = 0;

	if (pccx__json_type_of(p) != PCCX_JSON_OBJECT)
		return bad(w, p, "expected a JSON schema object");
	if (!truthy(p))
		return 0;	/* {}: the template writes no parameters */
	if (props && pccx__json_type_of(props) != PCCX_JSON_OBJECT)
		return bad(w, props, "expected an object");
	if (req && pccx__json_type_of(req) != PCCX_JSON_ARRAY)
		return bad(w, req, "expected an array of names");
	if (!type || pccx__json_type_of(type) != PCCX_JSON_STRING || !truthy(type))
		return bad(w, type ? type : p, "parameters need a \"type\" (\"object\"): without "
			   "one the template leaves the declaration unclosed");
	puts_(w, ",parameters:{");
	if (props && truthy(props)) {
		puts_(w, "properties:{");
		rc = put_properties(w, props, 0);
		puts_(w, "},");
	}
	if (!rc && req && truthy(req)) {
		rc = put_required(w, req);
		puts_(w, ",");
	}
	if (rc)
		return rc;
	t = pccx__json_str(type, &n);
	puts_(w, "type:");
	put_type(w, t, n);
	puts_(w, "}");
	return 0;
}

static int put_tool(struct tw *w, const pccx_json *tool)
{
	const pccx_json *type, *fn, *name, *desc, *params;
	const char *s;
	size_t n;
	int rc;

	if (pccx__json_type_of(tool) != PCCX_JSON_OBJECT)
		return bad(w, tool, "a tool is an object {\"type\": \"function\", \"function\": "
			   "{...}}");
	type = pccx__json_get(tool, "type");
	if (type && (pccx__json_type_of(type) != PCCX_JSON_STRING ||
		     strcmp(pccx__json_str(type, NULL), "function")))
		return bad(w, type, "the only tool type is \"function\"");
	fn = pccx__json_get(tool, "function");
	if (!fn || pccx__json_type_of(fn) != PCCX_JSON_OBJECT)
		return bad(w, fn ? fn : tool, "a tool needs \"function\": an object with name, "
			   "description and parameters");
	name = pccx__json_get(fn, "name");
	desc = pccx__json_get(fn, "description");
	params = pccx__json_get(fn, "parameters");
	if (!name || pccx__json_type_of(name) != PCCX_JSON_STRING || !truthy(name))
		return bad(w, name ? name : fn, "a function needs a \"name\" (a non-empty string)");
	if (desc && pccx__json_type_of(desc) != PCCX_JSON_STRING)
		return bad(w, desc, "expected a string");
	if (pccx__json_get(fn, "response"))
		return bad(w, pccx__json_get(fn, "response"), "a response declaration is not "
			   "written by pccx");
	puts_(w, w->fmt->tool_open);
	puts_(w, "declaration:");
	s = pccx__json_str(name, &n);
	put(w, s, n);
	puts_(w, "{description:");
	s = desc ? pccx__json_str(desc, &n) : "";
	put_quoted(w, s, desc ? n : 0);
	rc = params ? put_parameters(w, params) : 0;
	puts_(w, "}");
	puts_(w, w->fmt->tool_close);
	return rc;
}

int pccx__chat_put_tools(struct sbuf *b, const struct pccx_chat_format *fmt,
			 const pccx_json_doc *doc, const pccx_json *tools, pccx_diag *d)
{
	struct tw w = { b, fmt, doc, d, false, false };
	size_t i;
	int rc = 0;

	if (pccx__json_type_of(tools) != PCCX_JSON_ARRAY)
		return bad(&w, tools, "tools: expected an array of tools");
	for (i = 0; !rc && i < pccx__json_count(tools); i++)
		rc = put_tool(&w, pccx__json_at(tools, i));
	if (!rc && w.nomem)
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "tool declarations: out of memory");
	return rc;
}

/*
 * A call's arguments as the template writes a mapping: key:format_argument(value,
 * escape_keys=False) in dictsort order, comma-separated, inside the call's braces.
 */
static int put_call_args(struct tw *w, const pccx_json *args)
{
	const pccx_json **m;
	size_t i, n;
	int rc;

	rc = sorted(w, args, &m);
	for (i = 0; !rc && i < pccx__json_count(args); i++) {
		const char *key = pccx__json_key(m[i], &n);

		if (i)
			puts_(w, ",");
		put(w, key, n);
		puts_(w, ":");
		rc = put_arg(w, m[i], 1);
	}
	free(m);
	return rc;
}

/*
 * Arguments sent as a JSON string (OpenAI's form): the object it holds, written as the
 * template writes a mapping. The template would write the string itself between the call's
 * braces (JSON where Gemma 4's grammar is expected), so it is parsed, as servers do before
 * they render; a string that is not a JSON object is refused.
 */
static int put_call_args_text(struct tw *w, const pccx_json *v)
{
	char path[192], name[256];
	struct tw sub = *w;
	pccx_json_doc *doc;
	const char *s;
	size_t n;
	int rc;

	s = pccx__json_str(v, &n);
	snprintf(name, sizeof(name), "%s: %s", pccx__json_doc_name(w->doc),
		 pccx__json_path(w->doc, v, path, sizeof(path)));
	rc = pccx__json_parse(s, n, name, NULL, &doc, w->d);
	if (rc)
		return PCCX_ERR_INVALID;
	sub.doc = doc;
	if (pccx__json_type_of(pccx__json_root(doc)) != PCCX_JSON_OBJECT)
		rc = bad(w, v, "the arguments are a JSON object (or a string holding one)");
	else
		rc = put_call_args(&sub, pccx__json_root(doc));
	w->nomem |= sub.nomem;
	pccx__json_free(doc);
	return rc;
}

/* call_open call:NAME{ARGS} call_close */
static int put_call(struct tw *w, const pccx_json *call)
{
	const pccx_json *type, *fn, *name, *args;
	const char *s;
	size_t n;
	int rc = 0;

	if (pccx__json_type_of(call) != PCCX_JSON_OBJECT)
		return bad(w, call, "a tool call is an object {\"id\", \"type\": \"function\", "
			   "\"function\": {\"name\", \"arguments\"}}");
	type = pccx__json_get(call, "type");
	if (type && (pccx__json_type_of(type) != PCCX_JSON_STRING ||
		     strcmp(pccx__json_str(type, NULL), "function")))
		return bad(w, type, "the only tool call type is \"function\"");
	fn = pccx__json_get(call, "function");
	if (!fn || pccx__json_type_of(fn) != PCCX_JSON_OBJECT)
		return bad(w, fn ? fn : call, "a tool call needs \"function\": an object with name "
			   "and arguments");
	name = pccx__json_get(fn, "name");
	if (!name || pccx__json_type_of(name) != PCCX_JSON_STRING || !truthy(name))
		return bad(w, name ? name : fn, "a function needs a \"name\" (a non-empty string)");
	args = pccx__json_get(fn, "arguments");
	puts_(w, w->fmt->call_open);
	puts_(w, "call:");
	s = pccx__json_str(name, &n);
	put(w, s, n);
	puts_(w, "{");
	switch (args ? pccx__json_type_of(args) : PCCX_JSON_NULL) {
	case PCCX_JSON_NULL:
		break;		/* the template writes no arguments: call:NAME{} */
	case PCCX_JSON_OBJECT:
		rc = put_call_args(w, args);
		break;
	case PCCX_JSON_STRING:
		rc = put_call_args_text(w, args);
		break;
	default:
		return bad(w, args, "the arguments are a JSON object (or a string holding one)");
	}
	puts_(w, "}");
	puts_(w, w->fmt->call_close);
	return rc;
}

int pccx__chat_put_calls(struct sbuf *b, const struct pccx_chat_format *fmt,
			 const pccx_json_doc *doc, const pccx_json *calls, pccx_diag *d)
{
	struct tw w = { b, fmt, doc, d, false, true };
	size_t i;
	int rc = 0;

	if (pccx__json_type_of(calls) != PCCX_JSON_ARRAY)
		return bad(&w, calls, "expected an array of tool calls");
	for (i = 0; !rc && i < pccx__json_count(calls); i++)
		rc = put_call(&w, pccx__json_at(calls, i));
	if (!rc && w.nomem)
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "tool calls: out of memory");
	return rc;
}

/*
 * format_tool_response_block(name, result) for a result that is a string (the content of an
 * OpenAI tool message): written as the template writes a value that is not a mapping, untrimmed.
 */
int pccx__chat_put_response(struct sbuf *b, const struct pccx_chat_format *fmt,
			    const char *name, size_t name_len, const char *result)
{
	return sbuf_adds(b, fmt->response_open) || sbuf_adds(b, "response:") ||
	       sbuf_add(b, name, name_len) || sbuf_adds(b, "{value:") ||
	       sbuf_adds(b, fmt->quote) || sbuf_adds(b, result) || sbuf_adds(b, fmt->quote) ||
	       sbuf_adds(b, "}") || sbuf_adds(b, fmt->response_close);
}
