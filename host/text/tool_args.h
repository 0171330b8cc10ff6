/* SPDX-License-Identifier: MIT */
/*
 * Gemma 4's tool-call body, call:NAME{ARGS}, as a function name and a JSON object
 * (host/include/pccx/output.h describes the grammar).
 */
#ifndef PCCX_TOOL_ARGS_H
#define PCCX_TOOL_ARGS_H

#include <stddef.h>

#include "json_out.h"

/* Nesting of objects and arrays the arguments may have. */
#define PCCX_TOOL_ARGS_MAX_DEPTH 32

/*
 * Parse s[0..n). On success returns NULL, *name receives the function name (malloc'd) and
 * json the arguments; otherwise returns why (a static string) and leaves *name NULL.
 * json->oom is the caller's to check.
 */
const char *pccx__tool_call_parse(const char *s, size_t n, char **name,
				  struct pccx_json_out *json);

#endif /* PCCX_TOOL_ARGS_H */
