/* SPDX-License-Identifier: MIT */
/*
 * A JSON text built in memory (pccx serve's answers, tool-call arguments): raw pieces,
 * formatted numbers and strings written with every escape JSON needs. Bytes that are not UTF-8 are written as
 * U+FFFD, so the result is valid JSON whatever a string holds. Out of memory is remembered
 * (oom) and later writes do nothing: check it once at the end.
 */
#ifndef PCCX_JSON_OUT_H
#define PCCX_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>

struct pccx_json_out {
	char *p;	/* NUL-terminated while not oom */
	size_t n, cap;
	bool oom;
};

void pccx__json_out_raw(struct pccx_json_out *j, const char *s, size_t n);
/* A string literal, raw. */
#define PCCX_JSON_OUT_LIT(j, lit) pccx__json_out_raw((j), "" lit, sizeof(lit) - 1)
void pccx__json_out_printf(struct pccx_json_out *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* s[0..n) as a quoted JSON string. */
void pccx__json_out_str(struct pccx_json_out *j, const char *s, size_t n);
/* How many leading bytes of s[0..n) end on a UTF-8 character boundary (n when none is cut). */
size_t pccx__utf8_whole(const char *s, size_t n);
void pccx__json_out_free(struct pccx_json_out *j);

#endif /* PCCX_JSON_OUT_H */
