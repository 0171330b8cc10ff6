/* SPDX-License-Identifier: MIT */
/*
 * A JSON text built in memory (what pccx serve answers): raw pieces, formatted numbers and
 * strings written with every escape JSON needs. Bytes that are not UTF-8 are written as
 * U+FFFD, so the result is valid JSON whatever a string holds. Out of memory is remembered
 * (oom) and later writes do nothing: check it once at the end.
 */
#ifndef PCCX_CLI_JSON_OUT_H
#define PCCX_CLI_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>

struct pccx_cli_json {
	char *p;	/* NUL-terminated while not oom */
	size_t n, cap;
	bool oom;
};

void pccx_cli_json_raw(struct pccx_cli_json *j, const char *s, size_t n);
/* A string literal, raw. */
#define PCCX_CLI_JSON_LIT(j, lit) pccx_cli_json_raw((j), "" lit, sizeof(lit) - 1)
void pccx_cli_json_printf(struct pccx_cli_json *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* s[0..n) as a quoted JSON string. */
void pccx_cli_json_str(struct pccx_cli_json *j, const char *s, size_t n);
/* How many leading bytes of s[0..n) end on a UTF-8 character boundary (n when none is cut). */
size_t pccx_cli_utf8_whole(const char *s, size_t n);
void pccx_cli_json_free(struct pccx_cli_json *j);

#endif /* PCCX_CLI_JSON_OUT_H */
