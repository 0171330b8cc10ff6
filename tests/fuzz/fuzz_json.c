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
	size_t i, n = pccx__json_count(v), len;
	const char *s;
	char path[128];

	if (depth > 300)
		return;
	s = pccx__json_str(v, &len);
	if (s && len && s[len] != '\0')
		__builtin_trap();
	if (depth < 4)
		pccx__json_path(doc, v, path, sizeof(path));
	for (i = 0; i < n; i++) {
		const pccx_json *k = pccx__json_at(v, i);
		const char *key = pccx__json_key(k, &len);

		if (key && pccx__json_getn(v, key, len) == NULL)
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

	if (pccx__json_parse(data, size, "fuzz.json", &lim, &doc, &d) == 0) {
		const pccx_json *r = pccx__json_root(doc);

		walk(doc, r, 0);
		(void)pccx__json_get_i64(doc, r, "a", 0, 100, &i, &d);
		(void)pccx__json_get_i64(doc, pccx__json_at(r, 0), "a", 0, 100, &i, &d);
		pccx__json_free(doc);
	} else if (d.msg[0] == '\0' || strncmp(d.msg, "fuzz.json: ", 11) != 0) {
		__builtin_trap();
	}
	return 0;
}
