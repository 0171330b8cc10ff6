/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the GGUF reader must accept or refuse any input without crashing or
 * reading outside it. Every accepted file is walked (keys, typed getters, tensors, first
 * row decoded, Q4 import of small tensors) and written back: the copy must read back
 * with the same keys and tensors.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/modelfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_value(const pccx_gguf_value *v)
{
	const pccx_gguf_array *a;
	volatile uint64_t sink = 0;

	if (v->type == PCCX_GGUF_STRING) {
		if (v->v.str.s[v->v.str.len] != '\0')
			__builtin_trap();
		return;
	}
	if (v->type != PCCX_GGUF_ARRAY)
		return;
	a = &v->v.arr;
	for (uint64_t i = 0; i < a->n; i++) {
		int64_t x;

		if (a->elem_type == PCCX_GGUF_STRING) {
			if (a->strs[i].s[a->strs[i].len] != '\0')
				__builtin_trap();
		} else if (a->elem_type == PCCX_GGUF_ARRAY) {
			walk_value(&a->items[i]);
		} else if (pccx_gguf_array_i64(a, i, &x) == 0) {
			sink += (uint64_t)x;
		}
	}
	(void)sink;
}

static void walk(const pccx_gguf *g)
{
	pccx_diag d;
	uint32_t u32;
	float f;
	const char *s;
	const pccx_gguf_str *strs;
	const float *fa;
	uint64_t n;

	for (uint64_t i = 0; i < pccx_gguf_n_kv(g); i++) {
		const char *key = pccx_gguf_kv_key(g, i);

		if (pccx_gguf_find(g, key) != pccx_gguf_kv_value(g, i))
			__builtin_trap();
		walk_value(pccx_gguf_kv_value(g, i));
		(void)!pccx_gguf_get_u32(g, key, &u32, &d);
		(void)!pccx_gguf_get_f32(g, key, &f, &d);
		(void)!pccx_gguf_get_str(g, key, &s, NULL, &d);
		(void)!pccx_gguf_get_str_array(g, key, &strs, &n, &d);
		(void)!pccx_gguf_get_f32_array(g, key, &fa, &n, &d);
	}
	for (uint64_t i = 0; i < pccx_gguf_n_tensors(g); i++) {
		const pccx_gguf_tensor *t = pccx_gguf_tensor_at(g, i);
		float *row;

		if (pccx_gguf_find_tensor(g, t->name) != t)
			__builtin_trap();
		if (t->offset % pccx_gguf_alignment(g))
			__builtin_trap();
		if (t->ne[0] > (1u << 20) || !pccx_ggml_can_decode(t->type))
			continue;
		row = malloc((size_t)t->ne[0] * sizeof(float));
		if (row && pccx_gguf_decode_rows(g, t, 0, 1, row, &d) != 0)
			__builtin_trap();
		free(row);
		if (t->n_elems <= 4096 && t->ne[0] % 32 == 0) {
			uint8_t *nib = malloc((size_t)t->n_elems / 2);
			uint16_t *sc = malloc((size_t)t->n_elems / 32 * sizeof(uint16_t));
			pccx_q4_error e;

			pccx_q4_error_init(&e);
			if (nib && sc)
				(void)!pccx_gguf_tensor_to_q4(g, t, nib, sc, &e, &d);
			free(nib);
			free(sc);
		}
	}
}

/* Write the accepted file back; the copy must be accepted and hold the same things. */
static void rewrite(const pccx_gguf *g)
{
	pccx_gguf_writer *w;
	pccx_gguf *g2;
	pccx_diag d;
	uint8_t *buf;
	size_t len;

	if (pccx_gguf_writer_new(&w, &d))
		return;
	if (pccx_gguf_writer_set_version(w, pccx_gguf_version(g), &d))
		__builtin_trap();
	for (uint64_t i = 0; i < pccx_gguf_n_kv(g); i++)
		if (pccx_gguf_writer_set_value(w, pccx_gguf_kv_key(g, i), pccx_gguf_kv_value(g, i),
					       &d))
			__builtin_trap();
	for (uint64_t i = 0; i < pccx_gguf_n_tensors(g); i++) {
		const pccx_gguf_tensor *t = pccx_gguf_tensor_at(g, i);

		if (pccx_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data,
						t->nbytes, &d))
			__builtin_trap();
	}
	if (pccx_gguf_writer_write_mem(w, &buf, &len, &d) == 0) {
		if (pccx_gguf_open_mem(&g2, buf, len, "copy", &d) != 0)
			__builtin_trap();
		if (pccx_gguf_n_kv(g2) != pccx_gguf_n_kv(g) ||
		    pccx_gguf_n_tensors(g2) != pccx_gguf_n_tensors(g) ||
		    pccx_gguf_alignment(g2) != pccx_gguf_alignment(g))
			__builtin_trap();
		for (uint64_t i = 0; i < pccx_gguf_n_tensors(g); i++) {
			const pccx_gguf_tensor *a = pccx_gguf_tensor_at(g, i);
			const pccx_gguf_tensor *b = pccx_gguf_tensor_at(g2, i);

			if (strcmp(a->name, b->name) || a->nbytes != b->nbytes ||
			    memcmp(a->data, b->data, (size_t)a->nbytes))
				__builtin_trap();
		}
		pccx_gguf_close(g2);
		free(buf);
	}
	pccx_gguf_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pccx_gguf *g;
	pccx_diag d;
	uint8_t *copy = malloc(size ? size : 1);

	/* An exact-size copy, so any read past the end is caught. */
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (pccx_gguf_open_mem(&g, copy, size, "fuzz.gguf", &d) == 0) {
		walk(g);
		rewrite(g);
		pccx_gguf_close(g);
	} else if (d.msg[0] == '\0' || strncmp(d.msg, "fuzz.gguf: ", 11) != 0) {
		__builtin_trap();
	}
	free(copy);
	return 0;
}
