// SPDX-License-Identifier: MIT
/* Gemma 4's tool-call arguments as JSON (tool_args.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tool_args.h"

#define STR_DELIM "<|\"|>"	/* Gemma 4's string delimiter, one token */
#define STR_DELIM_LEN (sizeof(STR_DELIM) - 1)

struct cursor {
	const char *s;
	size_t n, i;
	struct pccx_json_out *out;
};

static void skip_ws(struct cursor *c)
{
	while (c->i < c->n && strchr(" \t\r\n", c->s[c->i]) && c->s[c->i])
		c->i++;
}

static bool at_delim(const struct cursor *c)
{
	return c->n - c->i >= STR_DELIM_LEN && !memcmp(c->s + c->i, STR_DELIM, STR_DELIM_LEN);
}

/* A <|"|>-delimited string (the cursor on its opening delimiter) as a JSON string. */
static const char *string(struct cursor *c)
{
	const char *start = c->s + c->i + STR_DELIM_LEN, *end;
	size_t left = c->n - c->i - STR_DELIM_LEN;

	end = memmem(start, left, STR_DELIM, STR_DELIM_LEN);
	if (!end)
		return "a string without its closing <|\"|>";
	pccx__json_out_str(c->out, start, (size_t)(end - start));
	c->i = (size_t)(end - c->s) + STR_DELIM_LEN;
	return NULL;
}

/* JSON's number syntax: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return false;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	return i == n;
}

/* Length of the bare word at the cursor: up to a structural character or a delimiter. */
static size_t bare_len(const struct cursor *c, const char *stops)
{
	size_t k = c->i;

	while (k < c->n && !strchr(stops, c->s[k]) &&
	       !(c->n - k >= STR_DELIM_LEN && !memcmp(c->s + k, STR_DELIM, STR_DELIM_LEN)))
		k++;
	while (k > c->i && strchr(" \t\r\n", c->s[k - 1]))
		k--;
	return k - c->i;
}

/*
 * A bare value: a JSON number, true, false or null as it is; any other word as a string
 * (the model wrote a value without delimiters; its bytes are kept).
 */
static const char *bare(struct cursor *c)
{
	size_t len = bare_len(c, ",}]");
	const char *w = c->s + c->i;

	if (!len)
		return "a missing value";
	if (json_number(w, len) || (len == 4 && !memcmp(w, "true", 4)) ||
	    (len == 5 && !memcmp(w, "false", 5)) || (len == 4 && !memcmp(w, "null", 4)))
		pccx__json_out_raw(c->out, w, len);
	else
		pccx__json_out_str(c->out, w, len);
	c->i += len;
	return NULL;
}

static const char *value(struct cursor *c, unsigned depth);

/* An object's key: a delimited string or a bare word before ':'. */
static const char *key(struct cursor *c)
{
	size_t len;

	if (at_delim(c))
		return string(c);
	len = bare_len(c, ":,{}[]");
	if (!len)
		return "a missing key";
	pccx__json_out_str(c->out, c->s + c->i, len);
	c->i += len;
	return NULL;
}

/* '{' [key ':' value (',' key ':' value)*] '}' or '[' [value (',' value)*] ']' */
static const char *container(struct cursor *c, unsigned depth)
{
	bool object = c->s[c->i] == '{';
	char close = object ? '}' : ']';
	const char *why;
	bool first = true;

	if (depth >= PCCX_TOOL_ARGS_MAX_DEPTH)
		return "arguments nested too deeply";
	pccx__json_out_raw(c->out, object ? "{" : "[", 1);
	c->i++;
	skip_ws(c);
	if (c->i < c->n && c->s[c->i] == close)
		goto done;
	for (;;) {
		if (!first)
			pccx__json_out_raw(c->out, ",", 1);
		first = false;
		skip_ws(c);
		if (object) {
			why = key(c);
			if (why)
				return why;
			skip_ws(c);
			if (c->i >= c->n || c->s[c->i] != ':')
				return "a key without ':'";
			pccx__json_out_raw(c->out, ":", 1);
			c->i++;
		}
		why = value(c, depth + 1);
		if (why)
			return why;
		skip_ws(c);
		if (c->i < c->n && c->s[c->i] == ',') {
			c->i++;
			continue;
		}
		if (c->i < c->n && c->s[c->i] == close)
			break;
		return object ? "an object without its closing '}'" :
				"an array without its closing ']'";
	}
done:
	pccx__json_out_raw(c->out, object ? "}" : "]", 1);
	c->i++;
	return NULL;
}

static const char *value(struct cursor *c, unsigned depth)
{
	skip_ws(c);
	if (c->i >= c->n)
		return "a missing value";
	if (at_delim(c))
		return string(c);
	if (c->s[c->i] == '{' || c->s[c->i] == '[')
		return container(c, depth);
	return bare(c);
}

const char *pccx__tool_call_parse(const char *s, size_t n, char **name,
				  struct pccx_json_out *json)
{
	struct cursor c = { .s = s, .n = n, .out = json };
	size_t start, len;
	const char *why;

	*name = NULL;
	skip_ws(&c);
	if (c.n - c.i < 5 || memcmp(c.s + c.i, "call:", 5))
		return "no 'call:' at the start";
	c.i += 5;
	start = c.i;
	while (c.i < c.n && c.s[c.i] != '{' && !strchr(" \t\r\n", c.s[c.i]))
		c.i++;
	len = c.i - start;
	if (!len || memchr(s + start, '\0', len))
		return "no function name";
	skip_ws(&c);
	if (c.i >= c.n || c.s[c.i] != '{')
		return "no '{' after the function name";
	why = container(&c, 0);
	if (why)
		return why;
	skip_ws(&c);
	if (c.i != c.n)
		return "bytes after the arguments' closing '}'";
	*name = strndup(s + start, len);
	return *name ? NULL : "out of memory";
}
