/* SPDX-License-Identifier: MIT */
/*
 * Strict RFC 8259 JSON parser: iterative (no recursion on input nesting), strings unescaped in
 * place inside a private copy of the input, values stored in chunked arrays so that the
 * members of each array/object are contiguous and addressable by index.
 */
#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "diag.h"
#include "fileio.h"
#include "json.h"

enum { F_INT = 1 };

struct pccx_json {
	const char *key;	/* member name when the value sits in an object */
	uint32_t key_len;
	uint8_t type;
	uint8_t flags;
	uint16_t reserved;
	union {
		struct {
			const char *ptr;
			uint32_t len;
		} s;
		struct {
			const struct pccx_json *kids;
			uint32_t n;
		} c;
		double d;
		int64_t i;
		int b;
	} u;
};

struct chunk {
	struct chunk *next;
	size_t cap, used;
	pccx_json nodes[];
};

struct pccx_json_doc {
	char *name;
	char *buf;		/* private copy of the input, NUL-terminated */
	size_t len;
	struct chunk *chunks;
	pccx_json root;
	unsigned max_depth;
};

#define CHUNK_NODES 262143u	/* 8 MiB chunks */

struct frame {
	size_t start;		/* index in the pending stack of the first member */
	const char *key;	/* key under which this container itself is stored */
	uint32_t key_len;
	uint8_t type;
	size_t open_off;
};

struct parser {
	pccx_json_doc *doc;
	const char *p, *end, *base;
	size_t line, line_start;
	pccx_json *pend;
	size_t npend, cappend;
	struct frame *frames;
	size_t nframes;
	pccx_diag *d;
	locale_t cloc;
};

static int perr(struct parser *ps, const char *at, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(struct parser *ps, const char *at, int status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	size_t off = (size_t)(at - ps->base);

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Line numbers are counted while skipping whitespace (the only place raw newlines may
	 * appear); a position before the current line is reported by byte offset alone. */
	if (off < ps->line_start)
		return pccx__fail(ps->d, status, "%s: byte %zu: %s", ps->doc->name, off, msg);
	return pccx__fail(ps->d, status, "%s: line %zu, column %zu (byte %zu): %s",
			  ps->doc->name, ps->line, off - ps->line_start + 1, off, msg);
}

static const char *describe(const char *p, const char *end, char *buf, size_t size)
{
	unsigned char c;

	if (p >= end)
		return "end of input";
	c = (unsigned char)*p;
	if (c >= 0x21 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

static inline void skip_ws(struct parser *ps)
{
	const char *p = ps->p, *end = ps->end;

	while (p < end) {
		char c = *p;

		if (c == ' ' || c == '\t' || c == '\r') {
			p++;
		} else if (c == '\n') {
			p++;
			ps->line++;
			ps->line_start = (size_t)(p - ps->base);
		} else {
			break;
		}
	}
	ps->p = p;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629), 0 when invalid or truncated. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n = (size_t)(end - p);

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = 0x80, hi = 0xbf;

		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		if (n < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = 0x80, hi = 0xbf;

		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (n < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

static int hex4(const char *p, const char *end, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *put_utf8(char *w, unsigned cp)
{
	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xc0 | (cp >> 6));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xe0 | (cp >> 12));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*w++ = (char)(0xf0 | (cp >> 18));
		*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	}
	return w;
}

/*
 * ps->p points at the opening quote. Unescape in place (the decoded form is never longer than
 * the escaped one), NUL-terminate, and return the bytes through out and len.
 */
static int parse_string(struct parser *ps, const char **out, uint32_t *len)
{
	char *start = (char *)ps->p + 1;
	char *r = start, *w = start;
	const char *end = ps->end;
	bool copying = false;

	for (;;) {
		unsigned char c;

		/* Fast path: plain ASCII. */
		while (r < end) {
			c = (unsigned char)*r;
			if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
				break;
			if (copying)
				*w = (char)c;
			r++;
			w++;
		}
		if (r >= end)
			return perr(ps, ps->p, PCCX_ERR_FORMAT, "unterminated string");
		c = (unsigned char)*r;
		if (c == '"') {
			*w = '\0';
			*out = start;
			*len = (uint32_t)(w - start);
			ps->p = r + 1;
			return 0;
		}
		if (c < 0x20)
			return perr(ps, r, PCCX_ERR_FORMAT,
				    "unescaped control character 0x%02x in string", c);
		if (c >= 0x80) {
			size_t n = utf8_seq((const unsigned char *)r, (const unsigned char *)end);

			if (!n)
				return perr(ps, r, PCCX_ERR_FORMAT,
					    "invalid UTF-8 sequence in string (byte 0x%02x)", c);
			if (copying)
				memmove(w, r, n);
			r += n;
			w += n;
			continue;
		}
		/* Backslash escape. */
		if (r + 1 >= end)
			return perr(ps, ps->p, PCCX_ERR_FORMAT, "unterminated string");
		copying = true;
		switch (r[1]) {
		case '"':  *w++ = '"';  r += 2; break;
		case '\\': *w++ = '\\'; r += 2; break;
		case '/':  *w++ = '/';  r += 2; break;
		case 'b':  *w++ = '\b'; r += 2; break;
		case 'f':  *w++ = '\f'; r += 2; break;
		case 'n':  *w++ = '\n'; r += 2; break;
		case 'r':  *w++ = '\r'; r += 2; break;
		case 't':  *w++ = '\t'; r += 2; break;
		case 'u': {
			unsigned cp, lo;

			if (hex4(r + 2, end, &cp))
				return perr(ps, r, PCCX_ERR_FORMAT,
					    "\\u escape needs four hex digits");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return perr(ps, r, PCCX_ERR_FORMAT,
					    "lone low surrogate \\u%04X in string", cp);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (end - r < 12 || r[6] != '\\' || r[7] != 'u' ||
				    hex4(r + 8, end, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return perr(ps, r, PCCX_ERR_FORMAT,
						    "high surrogate \\u%04X not followed by a low "
						    "surrogate escape", cp);
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				r += 12;
			} else {
				r += 6;
			}
			w = put_utf8(w, cp);
			break;
		}
		default: {
			char what[16];

			return perr(ps, r, PCCX_ERR_FORMAT, "invalid escape '\\%s' in string",
				    describe(r + 1, end, what, sizeof(what)));
		}
		}
	}
}

static int parse_number(struct parser *ps, pccx_json *v)
{
	const char *p = ps->p, *start = p, *end = ps->end;
	bool neg = false, is_int = true;
	uint64_t acc = 0;
	bool overflow = false;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return perr(ps, start, PCCX_ERR_FORMAT, "'-' must be followed by a digit");
	if (*p == '0') {
		p++;
		if (p < end && *p >= '0' && *p <= '9')
			return perr(ps, start, PCCX_ERR_FORMAT,
				    "leading zeros are not allowed in numbers");
	} else {
		while (p < end && *p >= '0' && *p <= '9') {
			unsigned dgt = (unsigned)(*p - '0');

			if (acc > (UINT64_MAX - dgt) / 10)
				overflow = true;
			else
				acc = acc * 10 + dgt;
			p++;
		}
	}
	if (p < end && *p == '.') {
		is_int = false;
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return perr(ps, p, PCCX_ERR_FORMAT,
				    "a digit must follow the decimal point");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		is_int = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return perr(ps, p, PCCX_ERR_FORMAT, "a digit must follow the exponent");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	v->type = PCCX_JSON_NUMBER;
	if (is_int && !overflow &&
	    (neg ? acc <= (uint64_t)INT64_MAX + 1 : acc <= (uint64_t)INT64_MAX)) {
		v->flags |= F_INT;
		v->u.i = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	} else {
		char small[128], *tmp = small, *endp;
		size_t n = (size_t)(p - start);
		double x;

		if (n >= sizeof(small)) {
			tmp = malloc(n + 1);
			if (!tmp)
				return pccx__fail(ps->d, PCCX_ERR_NOMEM, "%s: out of memory",
						  ps->doc->name);
		}
		memcpy(tmp, start, n);
		tmp[n] = '\0';
		errno = 0;
		x = strtod_l(tmp, &endp, ps->cloc);
		if (tmp != small)
			free(tmp);
		if (errno == ERANGE && (x > 1.0 || x < -1.0))
			return perr(ps, start, PCCX_ERR_FORMAT,
				    "number overflows a double");
		v->u.d = x;
	}
	ps->p = p;
	return 0;
}

static int push_pending(struct parser *ps, const pccx_json *v)
{
	if (ps->npend == ps->cappend) {
		size_t cap = ps->cappend ? ps->cappend * 2 : 1024;
		pccx_json *n = realloc(ps->pend, cap * sizeof(*n));

		if (!n)
			return pccx__fail(ps->d, PCCX_ERR_NOMEM, "%s: out of memory",
					  ps->doc->name);
		ps->pend = n;
		ps->cappend = cap;
	}
	ps->pend[ps->npend++] = *v;
	return 0;
}

/* Large blocks are 2 MiB aligned and marked for transparent huge pages (fewer page faults). */
static void *big_alloc(size_t size)
{
	void *p = NULL;

	if (size < ((size_t)2 << 20))
		return malloc(size ? size : 1);
	size = (size + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
	if (posix_memalign(&p, (size_t)2 << 20, size))
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, size, MADV_HUGEPAGE);
#endif
	return p;
}

static pccx_json *alloc_nodes(pccx_json_doc *doc, size_t n)
{
	struct chunk *c = doc->chunks;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK_NODES ? n : CHUNK_NODES;

		c = big_alloc(sizeof(*c) + cap * sizeof(pccx_json));
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = doc->chunks;
		doc->chunks = c;
	}
	c->used += n;
	return c->nodes + c->used - n;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static int check_duplicates(struct parser *ps, const pccx_json *m, size_t n)
{
	size_t i, j, cap, mask;
	uint32_t *tab;

	if (n <= 16) {
		for (i = 1; i < n; i++)
			for (j = 0; j < i; j++)
				if (m[i].key_len == m[j].key_len &&
				    !memcmp(m[i].key, m[j].key, m[i].key_len))
					goto dup;
		return 0;
	}
	for (cap = 64; cap < 2 * n; cap *= 2)
		;
	mask = cap - 1;
	tab = malloc(cap * sizeof(*tab));
	if (!tab)
		return pccx__fail(ps->d, PCCX_ERR_NOMEM, "%s: out of memory", ps->doc->name);
	memset(tab, 0xff, cap * sizeof(*tab));
	for (i = 0; i < n; i++) {
		size_t h = (size_t)hash_bytes(m[i].key, m[i].key_len) & mask;

		while (tab[h] != UINT32_MAX) {
			j = tab[h];
			if (m[j].key_len == m[i].key_len &&
			    !memcmp(m[j].key, m[i].key, m[i].key_len)) {
				free(tab);
				goto dup;
			}
			h = (h + 1) & mask;
		}
		tab[h] = (uint32_t)i;
	}
	free(tab);
	return 0;
dup:
	/* The key text starts one byte after its opening quote in the input. */
	return perr(ps, m[i].key - 1, PCCX_ERR_FORMAT, "duplicate key \"%.*s\" in object",
		    m[i].key_len > 64 ? 64 : (int)m[i].key_len, m[i].key);
}

/* Close the innermost container: move its members to permanent storage. */
static int close_container(struct parser *ps, pccx_json *out)
{
	struct frame *f = &ps->frames[ps->nframes - 1];
	size_t n = ps->npend - f->start;
	pccx_json v;
	int rc;

	memset(&v, 0, sizeof(v));
	v.type = f->type;
	v.key = f->key;
	v.key_len = f->key_len;
	if (n) {
		pccx_json *kids;

		if (f->type == PCCX_JSON_OBJECT) {
			rc = check_duplicates(ps, ps->pend + f->start, n);
			if (rc)
				return rc;
		}
		kids = alloc_nodes(ps->doc, n);
		if (!kids)
			return pccx__fail(ps->d, PCCX_ERR_NOMEM, "%s: out of memory",
					  ps->doc->name);
		memcpy(kids, ps->pend + f->start, n * sizeof(*kids));
		v.u.c.kids = kids;
		v.u.c.n = (uint32_t)n;
	}
	ps->npend = f->start;
	ps->nframes--;
	*out = v;
	return 0;
}

static int parse_key(struct parser *ps, const char **key, uint32_t *key_len)
{
	char what[16];
	int rc;

	skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != '"')
		return perr(ps, ps->p, PCCX_ERR_FORMAT, "expected a string key, got %s",
			    describe(ps->p, ps->end, what, sizeof(what)));
	rc = parse_string(ps, key, key_len);
	if (rc)
		return rc;
	skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != ':')
		return perr(ps, ps->p, PCCX_ERR_FORMAT, "expected ':' after key, got %s",
			    describe(ps->p, ps->end, what, sizeof(what)));
	ps->p++;
	return 0;
}

static int run(struct parser *ps, unsigned max_depth, pccx_json *root)
{
	const char *key = NULL;
	uint32_t key_len = 0;
	char what[16];
	pccx_json v;
	int rc;

value:
	skip_ws(ps);
	memset(&v, 0, sizeof(v));
	v.key = key;
	v.key_len = key_len;
	if (ps->p >= ps->end)
		return perr(ps, ps->p, PCCX_ERR_FORMAT, "expected a value, got end of input");
	switch (*ps->p) {
	case '{':
	case '[': {
		struct frame *f;

		if (ps->nframes >= max_depth)
			return perr(ps, ps->p, PCCX_ERR_RANGE,
				    "nesting deeper than %u levels", max_depth);
		f = &ps->frames[ps->nframes++];
		f->start = ps->npend;
		f->key = key;
		f->key_len = key_len;
		f->type = *ps->p == '{' ? PCCX_JSON_OBJECT : PCCX_JSON_ARRAY;
		f->open_off = (size_t)(ps->p - ps->base);
		ps->p++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == (f->type == PCCX_JSON_OBJECT ? '}' : ']')) {
			ps->p++;
			rc = close_container(ps, &v);
			if (rc)
				return rc;
			goto done;
		}
		if (f->type == PCCX_JSON_OBJECT) {
			rc = parse_key(ps, &key, &key_len);
			if (rc)
				return rc;
		} else {
			key = NULL;
			key_len = 0;
		}
		goto value;
	}
	case '"':
		rc = parse_string(ps, &v.u.s.ptr, &v.u.s.len);
		if (rc)
			return rc;
		v.type = PCCX_JSON_STRING;
		break;
	case 't':
		if (ps->end - ps->p < 4 || memcmp(ps->p, "true", 4))
			goto bad_literal;
		v.type = PCCX_JSON_BOOL;
		v.u.b = 1;
		ps->p += 4;
		break;
	case 'f':
		if (ps->end - ps->p < 5 || memcmp(ps->p, "false", 5))
			goto bad_literal;
		v.type = PCCX_JSON_BOOL;
		ps->p += 5;
		break;
	case 'n':
		if (ps->end - ps->p < 4 || memcmp(ps->p, "null", 4))
			goto bad_literal;
		v.type = PCCX_JSON_NULL;
		ps->p += 4;
		break;
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		rc = parse_number(ps, &v);
		if (rc)
			return rc;
		break;
	default:
		if ((unsigned char)*ps->p >= 0x80)
			return perr(ps, ps->p, PCCX_ERR_FORMAT,
				    "unexpected non-ASCII byte 0x%02x outside a string",
				    (unsigned char)*ps->p);
		return perr(ps, ps->p, PCCX_ERR_FORMAT, "expected a value, got %s",
			    describe(ps->p, ps->end, what, sizeof(what)));
	}
done:
	/* v is a complete value. */
	if (!ps->nframes) {
		*root = v;
		skip_ws(ps);
		if (ps->p != ps->end)
			return perr(ps, ps->p, PCCX_ERR_FORMAT,
				    "unexpected %s after the top-level value",
				    describe(ps->p, ps->end, what, sizeof(what)));
		return 0;
	}
	rc = push_pending(ps, &v);
	if (rc)
		return rc;
	skip_ws(ps);
	if (ps->frames[ps->nframes - 1].type == PCCX_JSON_ARRAY) {
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			key = NULL;
			key_len = 0;
			skip_ws(ps);
			if (ps->p < ps->end && *ps->p == ']')
				return perr(ps, ps->p, PCCX_ERR_FORMAT,
					    "trailing comma before ']'");
			goto value;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			rc = close_container(ps, &v);
			if (rc)
				return rc;
			goto done;
		}
		return perr(ps, ps->p, PCCX_ERR_FORMAT,
			    "expected ',' or ']' in array opened at byte %zu, got %s",
			    ps->frames[ps->nframes - 1].open_off,
			    describe(ps->p, ps->end, what, sizeof(what)));
	}
	if (ps->p < ps->end && *ps->p == ',') {
		ps->p++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == '}')
			return perr(ps, ps->p, PCCX_ERR_FORMAT, "trailing comma before '}'");
		rc = parse_key(ps, &key, &key_len);
		if (rc)
			return rc;
		goto value;
	}
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		rc = close_container(ps, &v);
		if (rc)
			return rc;
		goto done;
	}
	return perr(ps, ps->p, PCCX_ERR_FORMAT,
		    "expected ',' or '}' in object opened at byte %zu, got %s",
		    ps->frames[ps->nframes - 1].open_off,
		    describe(ps->p, ps->end, what, sizeof(what)));
bad_literal:
	return perr(ps, ps->p, PCCX_ERR_FORMAT,
		    "invalid literal (expected true, false or null)");
}

void pccx__json_free(pccx_json_doc *doc)
{
	struct chunk *c, *n;

	if (!doc)
		return;
	for (c = doc->chunks; c; c = n) {
		n = c->next;
		free(c);
	}
	free(doc->buf);
	free(doc->name);
	free(doc);
}

int pccx__json_parse(const void *buf, size_t len, const char *name, const pccx_json_limits *lim,
		     pccx_json_doc **out, pccx_diag *d)
{
	size_t max_size = lim && lim->max_size ? lim->max_size : PCCX_JSON_DEFAULT_MAX_SIZE;
	unsigned max_depth = lim && lim->max_depth ? lim->max_depth : PCCX_JSON_DEFAULT_MAX_DEPTH;
	struct parser ps;
	pccx_json_doc *doc;
	int rc;

	if (!name)
		name = "<json>";
	if (!out || (!buf && len))
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: invalid arguments to json parse", name);
	*out = NULL;
	if (max_size > PCCX_JSON_HARD_MAX_SIZE)
		max_size = PCCX_JSON_HARD_MAX_SIZE;
	if (max_depth > 4096)
		max_depth = 4096;
	if (len > max_size)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: %zu bytes exceeds the JSON size limit "
				  "of %zu bytes", name, len, max_size);
	doc = calloc(1, sizeof(*doc));
	if (!doc)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	doc->name = strdup(name);
	doc->buf = big_alloc(len + 1);
	if (!doc->name || !doc->buf) {
		pccx__json_free(doc);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	}
	if (len)
		memcpy(doc->buf, buf, len);
	doc->buf[len] = '\0';
	doc->len = len;
	doc->max_depth = max_depth;

	memset(&ps, 0, sizeof(ps));
	ps.doc = doc;
	ps.base = ps.p = doc->buf;
	ps.end = doc->buf + len;
	ps.line = 1;
	ps.d = d;
	ps.frames = malloc(max_depth * sizeof(*ps.frames));
	ps.cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (!ps.frames || !ps.cloc) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	} else if (len >= 3 && !memcmp(doc->buf, "\xef\xbb\xbf", 3)) {
		rc = perr(&ps, ps.p, PCCX_ERR_FORMAT, "byte order mark is not allowed");
	} else {
		rc = run(&ps, max_depth, &doc->root);
	}
	free(ps.frames);
	free(ps.pend);
	if (ps.cloc)
		freelocale(ps.cloc);
	if (rc) {
		pccx__json_free(doc);
		return rc;
	}
	*out = doc;
	return 0;
}

int pccx__json_parse_file(const char *path, const pccx_json_limits *lim, pccx_json_doc **out,
			  pccx_diag *d)
{
	size_t max_size = lim && lim->max_size ? lim->max_size : PCCX_JSON_DEFAULT_MAX_SIZE;
	uint8_t *buf;
	size_t n;
	int rc;

	if (!path || !out)
		return pccx__fail(d, PCCX_ERR_INVALID, "json: no path given");
	*out = NULL;
	if (max_size > PCCX_JSON_HARD_MAX_SIZE)
		max_size = PCCX_JSON_HARD_MAX_SIZE;
	rc = pccx__read_file(path, max_size, &buf, &n, d);
	if (rc)
		return rc;
	rc = pccx__json_parse(buf, n, path, lim, out, d);
	free(buf);
	return rc;
}

const pccx_json *pccx__json_root(const pccx_json_doc *doc)
{
	return doc ? &doc->root : NULL;
}

const char *pccx__json_doc_name(const pccx_json_doc *doc)
{
	return doc ? doc->name : "<json>";
}

pccx_json_type pccx__json_type_of(const pccx_json *v)
{
	return v ? (pccx_json_type)v->type : PCCX_JSON_INVALID;
}

const char *pccx__json_type_name(pccx_json_type t)
{
	switch (t) {
	case PCCX_JSON_NULL:	return "null";
	case PCCX_JSON_BOOL:	return "boolean";
	case PCCX_JSON_NUMBER:	return "number";
	case PCCX_JSON_STRING:	return "string";
	case PCCX_JSON_ARRAY:	return "array";
	case PCCX_JSON_OBJECT:	return "object";
	default:		return "missing";
	}
}

size_t pccx__json_count(const pccx_json *v)
{
	if (!v || (v->type != PCCX_JSON_ARRAY && v->type != PCCX_JSON_OBJECT))
		return 0;
	return v->u.c.n;
}

const pccx_json *pccx__json_at(const pccx_json *v, size_t i)
{
	if (i >= pccx__json_count(v))
		return NULL;
	return &v->u.c.kids[i];
}

const char *pccx__json_key(const pccx_json *v, size_t *len)
{
	if (!v || !v->key)
		return NULL;
	if (len)
		*len = v->key_len;
	return v->key;
}

const pccx_json *pccx__json_getn(const pccx_json *obj, const char *key, size_t key_len)
{
	uint32_t i;

	if (!obj || obj->type != PCCX_JSON_OBJECT || !key)
		return NULL;
	for (i = 0; i < obj->u.c.n; i++) {
		const pccx_json *m = &obj->u.c.kids[i];

		if (m->key_len == key_len && !memcmp(m->key, key, key_len))
			return m;
	}
	return NULL;
}

const pccx_json *pccx__json_get(const pccx_json *obj, const char *key)
{
	return key ? pccx__json_getn(obj, key, strlen(key)) : NULL;
}

const char *pccx__json_str(const pccx_json *v, size_t *len)
{
	if (!v || v->type != PCCX_JSON_STRING)
		return NULL;
	if (len)
		*len = v->u.s.len;
	return v->u.s.ptr;
}

bool pccx__json_bool(const pccx_json *v)
{
	return v && v->type == PCCX_JSON_BOOL && v->u.b;
}

double pccx__json_num(const pccx_json *v)
{
	if (!v || v->type != PCCX_JSON_NUMBER)
		return 0.0;
	return (v->flags & F_INT) ? (double)v->u.i : v->u.d;
}

bool pccx__json_is_int(const pccx_json *v)
{
	return v && v->type == PCCX_JSON_NUMBER && (v->flags & F_INT);
}

int64_t pccx__json_int(const pccx_json *v)
{
	return pccx__json_is_int(v) ? v->u.i : 0;
}

/* ---- paths and checked getters ------------------------------------------------------- */

static bool find_chain(const pccx_json *cur, const pccx_json *target, const pccx_json **chain,
		       size_t depth, size_t max, size_t *out_depth)
{
	uint32_t i;

	chain[depth] = cur;
	if (cur == target) {
		*out_depth = depth + 1;
		return true;
	}
	if (depth + 1 >= max || (cur->type != PCCX_JSON_ARRAY && cur->type != PCCX_JSON_OBJECT))
		return false;
	for (i = 0; i < cur->u.c.n; i++) {
		const pccx_json *k = &cur->u.c.kids[i];

		/* Members are contiguous: skip subtrees that cannot hold the target cheaply. */
		if (k == target || k->type == PCCX_JSON_ARRAY || k->type == PCCX_JSON_OBJECT)
			if (find_chain(k, target, chain, depth + 1, max, out_depth))
				return true;
	}
	return false;
}

static bool is_ident(const char *s, size_t n)
{
	size_t i;

	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

static void appendf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void appendf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos += (size_t)n;
	if (*pos >= size)
		*pos = size - 1;
}

static void append_key(char *buf, size_t size, size_t *pos, const char *k, size_t n, bool first)
{
	size_t i;

	if (is_ident(k, n)) {
		appendf(buf, size, pos, "%s%.*s", first ? "" : ".", (int)n, k);
		return;
	}
	appendf(buf, size, pos, "[\"");
	for (i = 0; i < n && i < 80; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c == '"' || c == '\\')
			appendf(buf, size, pos, "\\%c", c);
		else if (c < 0x20)
			appendf(buf, size, pos, "\\u%04x", c);
		else
			appendf(buf, size, pos, "%c", c);
	}
	appendf(buf, size, pos, "%s\"]", n > 80 ? "..." : "");
}

const char *pccx__json_path(const pccx_json_doc *doc, const pccx_json *v, char *buf, size_t size)
{
	const pccx_json **chain;
	size_t depth = 0, i, pos = 0;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (!doc || !v) {
		snprintf(buf, size, "?");
		return buf;
	}
	if (v == &doc->root) {
		snprintf(buf, size, "$");
		return buf;
	}
	chain = malloc(((size_t)doc->max_depth + 2) * sizeof(*chain));
	if (!chain || !find_chain(&doc->root, v, chain, 0, (size_t)doc->max_depth + 2, &depth)) {
		free(chain);
		snprintf(buf, size, "?");
		return buf;
	}
	for (i = 1; i < depth; i++) {
		const pccx_json *parent = chain[i - 1], *cur = chain[i];

		if (parent->type == PCCX_JSON_OBJECT)
			append_key(buf, size, &pos, cur->key, cur->key_len, i == 1);
		else
			appendf(buf, size, &pos, "[%zu]", (size_t)(cur - parent->u.c.kids));
	}
	free(chain);
	return buf;
}

static int vfail_at(const pccx_json_doc *doc, const pccx_json *v, const char *key, pccx_diag *d,
		    int status, const char *fmt, va_list ap)
{
	char path[256], msg[256];
	size_t pos;

	if (!v) {
		vsnprintf(msg, sizeof(msg), fmt, ap);
		return pccx__fail(d, status, "%s: %s", pccx__json_doc_name(doc), msg);
	}
	pccx__json_path(doc, v, path, sizeof(path));
	if (key) {
		pos = strcmp(path, "$") ? strlen(path) : 0;
		if (!pos)
			path[0] = '\0';
		append_key(path, sizeof(path), &pos, key, strlen(key), pos == 0);
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	return pccx__fail(d, status, "%s: %s: %s", pccx__json_doc_name(doc), path, msg);
}

static int fail_at(const pccx_json_doc *doc, const pccx_json *v, const char *key, pccx_diag *d,
		   int status, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int fail_at(const pccx_json_doc *doc, const pccx_json *v, const char *key, pccx_diag *d,
		   int status, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_at(doc, v, key, d, status, fmt, ap);
	va_end(ap);
	return rc;
}

int pccx__json_fail(const pccx_json_doc *doc, const pccx_json *v, pccx_diag *d, int status,
		    const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_at(doc, v, NULL, d, status, fmt, ap);
	va_end(ap);
	return rc;
}

int pccx__json_expect(const pccx_json_doc *doc, const pccx_json *v, pccx_json_type type,
		      pccx_diag *d)
{
	if (!v)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: expected %s, value missing",
				  pccx__json_doc_name(doc), pccx__json_type_name(type));
	if (v->type != type)
		return fail_at(doc, v, NULL, d, PCCX_ERR_FORMAT, "expected %s, got %s",
			       pccx__json_type_name(type),
			       pccx__json_type_name((pccx_json_type)v->type));
	return 0;
}

int pccx__json_get_member(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
			  pccx_json_type type, const pccx_json **out, pccx_diag *d)
{
	const pccx_json *m;

	if (!obj || obj->type != PCCX_JSON_OBJECT)
		return fail_at(doc, obj, NULL, d, PCCX_ERR_FORMAT,
			       "expected object with key \"%s\", got %s", key,
			       pccx__json_type_name(pccx__json_type_of(obj)));
	m = pccx__json_get(obj, key);
	if (!m)
		return fail_at(doc, obj, key, d, PCCX_ERR_FORMAT, "missing");
	if (type != PCCX_JSON_INVALID && m->type != type)
		return fail_at(doc, m, NULL, d, PCCX_ERR_FORMAT, "expected %s, got %s",
			       pccx__json_type_name(type),
			       pccx__json_type_name((pccx_json_type)m->type));
	*out = m;
	return 0;
}

int pccx__json_get_string(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
			  const char **out, size_t *len, pccx_diag *d)
{
	const pccx_json *m;
	int rc = pccx__json_get_member(doc, obj, key, PCCX_JSON_STRING, &m, d);

	if (rc)
		return rc;
	*out = pccx__json_str(m, len);
	return 0;
}

static int check_i64(const pccx_json_doc *doc, const pccx_json *m, int64_t min, int64_t max,
		     int64_t *out, pccx_diag *d)
{
	if (m->type != PCCX_JSON_NUMBER)
		return fail_at(doc, m, NULL, d, PCCX_ERR_FORMAT, "expected integer, got %s",
			       pccx__json_type_name((pccx_json_type)m->type));
	if (!(m->flags & F_INT))
		return fail_at(doc, m, NULL, d, PCCX_ERR_FORMAT,
			       "expected an integer literal, got %.17g", m->u.d);
	if (m->u.i < min || m->u.i > max)
		return fail_at(doc, m, NULL, d, PCCX_ERR_RANGE,
			       "%lld is outside [%lld, %lld]", (long long)m->u.i,
			       (long long)min, (long long)max);
	*out = m->u.i;
	return 0;
}

int pccx__json_get_i64(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
		       int64_t min, int64_t max, int64_t *out, pccx_diag *d)
{
	const pccx_json *m;
	int rc = pccx__json_get_member(doc, obj, key, PCCX_JSON_INVALID, &m, d);

	return rc ? rc : check_i64(doc, m, min, max, out, d);
}

int pccx__json_get_double(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
			  double *out, pccx_diag *d)
{
	const pccx_json *m;
	int rc = pccx__json_get_member(doc, obj, key, PCCX_JSON_NUMBER, &m, d);

	if (rc)
		return rc;
	*out = pccx__json_num(m);
	return 0;
}

int pccx__json_get_bool(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
			bool *out, pccx_diag *d)
{
	const pccx_json *m;
	int rc = pccx__json_get_member(doc, obj, key, PCCX_JSON_BOOL, &m, d);

	if (rc)
		return rc;
	*out = m->u.b != 0;
	return 0;
}

/* Optional member: absent or null -> *m = NULL and success. */
static int opt_member(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
		      const pccx_json **m, pccx_diag *d)
{
	if (!obj || obj->type != PCCX_JSON_OBJECT)
		return fail_at(doc, obj, NULL, d, PCCX_ERR_FORMAT,
			       "expected object with key \"%s\", got %s", key,
			       pccx__json_type_name(pccx__json_type_of(obj)));
	*m = pccx__json_get(obj, key);
	if (*m && (*m)->type == PCCX_JSON_NULL)
		*m = NULL;
	return 0;
}

int pccx__json_opt_string(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
			  const char **out, size_t *len, pccx_diag *d)
{
	const pccx_json *m;
	int rc = opt_member(doc, obj, key, &m, d);

	if (rc || !m)
		return rc;
	if (m->type != PCCX_JSON_STRING)
		return fail_at(doc, m, NULL, d, PCCX_ERR_FORMAT, "expected string, got %s",
			       pccx__json_type_name((pccx_json_type)m->type));
	*out = pccx__json_str(m, len);
	return 0;
}

int pccx__json_opt_i64(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
		       int64_t min, int64_t max, int64_t *out, pccx_diag *d)
{
	const pccx_json *m;
	int rc = opt_member(doc, obj, key, &m, d);

	if (rc || !m)
		return rc;
	return check_i64(doc, m, min, max, out, d);
}

int pccx__json_opt_bool(const pccx_json_doc *doc, const pccx_json *obj, const char *key,
			bool *out, pccx_diag *d)
{
	const pccx_json *m;
	int rc = opt_member(doc, obj, key, &m, d);

	if (rc || !m)
		return rc;
	if (m->type != PCCX_JSON_BOOL)
		return fail_at(doc, m, NULL, d, PCCX_ERR_FORMAT, "expected boolean, got %s",
			       pccx__json_type_name((pccx_json_type)m->type));
	*out = m->u.b != 0;
	return 0;
}
