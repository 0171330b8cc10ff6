/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the JSON parser must accept or refuse any input without crashing, and
 * every accepted document must be walkable (paths, getters) without reading out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const pccx_json_doc *doc, const pccx_json *v, unsigned depth)
{
	size_t i, n = pccx_json_count(v), len;
	const char *s;
	char path[128];

	if (depth > 300)
		return;
	s = pccx_json_str(v, &len);
	if (s && len && s[len] != '\0')
		__builtin_trap();
	if (depth < 4)
		pccx_json_path(doc, v, path, sizeof(path));
	for (i = 0; i < n; i++) {
		const pccx_json *k = pccx_json_at(v, i);
		const char *key = pccx_json_key(k, &len);

		if (key && pccx_json_getn(v, key, len) == NULL)
			__builtin_trap();
		walk(doc, k, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pccx_json_limits lim = { .max_size = 1 << 20, .max_depth = 64 };
	pccx_json_doc *doc = NULL;
	pccx_diag d;
	int64_t i;

	if (pccx_json_parse(data, size, "fuzz.json", &lim, &doc, &d) == 0) {
		const pccx_json *r = pccx_json_root(doc);

		walk(doc, r, 0);
		(void)pccx_json_get_i64(doc, r, "a", 0, 100, &i, &d);
		(void)pccx_json_get_i64(doc, pccx_json_at(r, 0), "a", 0, 100, &i, &d);
		pccx_json_free(doc);
	} else if (d.msg[0] == '\0' || strncmp(d.msg, "fuzz.json: ", 11) != 0) {
		__builtin_trap();
	}
	return 0;
}
