/* SPDX-License-Identifier: MIT */
/*
 * Strict JSON (RFC 8259) parser producing a read-only DOM.
 *
 * Accepted: exactly one JSON value surrounded by optional whitespace (space, tab, CR, LF).
 * Refused, with a diag naming the document, line, column and byte offset:
 *   - invalid UTF-8 anywhere (overlong forms, UTF-16 surrogates encoded as UTF-8, > U+10FFFF,
 *     truncated sequences), a byte order mark, non-ASCII bytes outside strings;
 *   - unescaped control characters (< 0x20) in strings, unknown escapes, lone or mis-ordered
 *     UTF-16 surrogates in \u escapes (\u0000 is accepted: string lengths are explicit);
 *   - numbers outside the RFC grammar (leading zeros, "+1", ".5", "1.", hex, NaN, Infinity) and
 *     numbers whose magnitude overflows a double (underflow rounds towards zero);
 *   - duplicate keys in one object, trailing commas, comments, trailing garbage;
 *   - nesting deeper than limits.max_depth, input larger than limits.max_size.
 *
 * Memory: the document keeps one private copy of the input (strings are unescaped in place and
 * NUL-terminated, so string pointers stay valid until pccx__json_free) plus 32 bytes per value.
 * Every pointer returned by the accessors belongs to the document.
 *
 * Accessors never fail: given NULL or a value of the wrong type they return NULL / 0 / false, so
 * lookups can be chained (pccx__json_get(pccx__json_get(root, "model"), "vocab")). The typed
 * getters pccx_json_get_*() are the checked variant: on failure they fill the diag with the
 * document name and the full key path, e.g.
 *   "tokenizer.json: model.vocab: expected object, got array".
 */
#ifndef PCCX_JSON_H
#define PCCX_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"

typedef struct pccx_json_doc pccx_json_doc;
typedef struct pccx_json pccx_json;

typedef enum pccx_json_type {
	PCCX_JSON_INVALID = 0,	/* only returned for a NULL value */
	PCCX_JSON_NULL,
	PCCX_JSON_BOOL,
	PCCX_JSON_NUMBER,
	PCCX_JSON_STRING,
	PCCX_JSON_ARRAY,
	PCCX_JSON_OBJECT,
} pccx_json_type;

/* Limits applied while parsing; a zero field means "use the default". */
typedef struct pccx_json_limits {
	size_t max_size;	/* bytes of input; default PCCX_JSON_DEFAULT_MAX_SIZE */
	unsigned max_depth;	/* array/object nesting; default PCCX_JSON_DEFAULT_MAX_DEPTH */
} pccx_json_limits;

#define PCCX_JSON_DEFAULT_MAX_SIZE	((size_t)1 << 30)	/* 1 GiB */
#define PCCX_JSON_DEFAULT_MAX_DEPTH	256u
#define PCCX_JSON_HARD_MAX_SIZE		((size_t)0xfffffff0u)	/* offsets are 32-bit */

/*
 * Parse `len` bytes at `buf` (need not be NUL-terminated; the buffer is copied and may be freed
 * afterwards). `name` (e.g. the file path) prefixes every diag message; NULL means "<json>".
 * `lim` may be NULL. On success *out owns the document; free it with pccx__json_free().
 * Returns PCCX_ERR_FORMAT for malformed input, PCCX_ERR_RANGE for a limit exceeded,
 * PCCX_ERR_NOMEM, PCCX_ERR_INVALID for bad arguments.
 */
PCCX_MUST_CHECK int pccx__json_parse(const void *buf, size_t len, const char *name,
				     const pccx_json_limits *lim, pccx_json_doc **out,
				     pccx_diag *d);
/* Read and parse a file; the diag names the path (PCCX_ERR_IO when it cannot be read). */
PCCX_MUST_CHECK int pccx__json_parse_file(const char *path, const pccx_json_limits *lim,
					  pccx_json_doc **out, pccx_diag *d);
void pccx__json_free(pccx_json_doc *doc);

const pccx_json *pccx__json_root(const pccx_json_doc *doc);
/* The name given at parse time. */
const char *pccx__json_doc_name(const pccx_json_doc *doc);

pccx_json_type pccx__json_type_of(const pccx_json *v);
/* "null", "boolean", "number", "string", "array", "object" ("missing" for NULL). */
const char *pccx__json_type_name(pccx_json_type t);

/* Array elements or object members; 0 for other types. */
size_t pccx__json_count(const pccx_json *v);
/* i-th element of an array, or value of the i-th member of an object (in document order). */
const pccx_json *pccx__json_at(const pccx_json *v, size_t i);
/* Key of a value that is an object member (NUL-terminated, *len may be NULL), else NULL. */
const char *pccx__json_key(const pccx_json *v, size_t *len);
/* Member `key` of an object (linear search, exact byte comparison), NULL when absent. */
const pccx_json *pccx__json_get(const pccx_json *obj, const char *key);
const pccx_json *pccx__json_getn(const pccx_json *obj, const char *key, size_t key_len);

/* String bytes (valid UTF-8, NUL-terminated, may contain NUL when escaped as \u0000). */
const char *pccx__json_str(const pccx_json *v, size_t *len);
/* true only for the literal true. */
bool pccx__json_bool(const pccx_json *v);
/* Number as a double (0 for non-numbers). */
double pccx__json_num(const pccx_json *v);
/* True when v is a number written as an integer literal that fits int64 (no '.', no exponent). */
bool pccx__json_is_int(const pccx_json *v);
int64_t pccx__json_int(const pccx_json *v);

/*
 * Checked getters on object members. `obj` must belong to `doc` (used for the diag text).
 * Missing key, wrong type or value out of range fail with PCCX_ERR_FORMAT / PCCX_ERR_RANGE
 * and a diag such as "config.json: text_config.hidden_size: expected integer, got string".
 * _opt variants leave *out untouched and succeed when the key is absent or null.
 */
PCCX_MUST_CHECK int pccx__json_get_member(const pccx_json_doc *doc, const pccx_json *obj,
					  const char *key, pccx_json_type type,
					  const pccx_json **out, pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_get_string(const pccx_json_doc *doc, const pccx_json *obj,
					  const char *key, const char **out, size_t *len,
					  pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_get_i64(const pccx_json_doc *doc, const pccx_json *obj,
				       const char *key, int64_t min, int64_t max, int64_t *out,
				       pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_get_double(const pccx_json_doc *doc, const pccx_json *obj,
					  const char *key, double *out, pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_get_bool(const pccx_json_doc *doc, const pccx_json *obj,
					const char *key, bool *out, pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_opt_string(const pccx_json_doc *doc, const pccx_json *obj,
					  const char *key, const char **out, size_t *len,
					  pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_opt_i64(const pccx_json_doc *doc, const pccx_json *obj,
				       const char *key, int64_t min, int64_t max, int64_t *out,
				       pccx_diag *d);
PCCX_MUST_CHECK int pccx__json_opt_bool(const pccx_json_doc *doc, const pccx_json *obj,
					const char *key, bool *out, pccx_diag *d);

/*
 * Check that `v` has type `type`, else fail with "<name>: <path>: expected <type>, got <type>".
 * Useful for array elements: pccx__json_expect(doc, pccx__json_at(arr, i), PCCX_JSON_STRING, d).
 */
PCCX_MUST_CHECK int pccx__json_expect(const pccx_json_doc *doc, const pccx_json *v,
				      pccx_json_type type, pccx_diag *d);

/*
 * Write the path of `v` inside `doc` ("model.vocab", "added_tokens[3].id", "$" for the root;
 * keys that are not identifiers are quoted: ["blk.0.weight"]) into buf. Cost is linear in the
 * document size: meant for error messages. Returns buf.
 */
const char *pccx__json_path(const pccx_json_doc *doc, const pccx_json *v, char *buf,
			    size_t size);

/*
 * Fail with "<doc name>: <path of v>: <message>" — for callers that detect a semantic error in
 * a value (e.g. an id out of range) and want the same message shape.
 */
int pccx__json_fail(const pccx_json_doc *doc, const pccx_json *v, pccx_diag *d, int status,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif /* PCCX_JSON_H */
