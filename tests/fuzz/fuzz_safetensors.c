/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the safetensors side. The first byte selects what the rest is:
 *   0 (and anything else): a safetensors image, opened from memory and walked;
 *   1: a config.json of any family (model_type gemma, gemma2, gemma3(_text), gemma3n,
 *      gemma4(_text)), read as the loader reads it;
 *   2: a model.safetensors.index.json, parsed (no shard is opened).
 * Every input must be accepted or refused with a message naming the input, never crash
 * or read outside it; accepted files must satisfy the documented invariants.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hf_config.h"
#include "pccx/modelfile.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(const pccx_diag *d, const char *name)
{
	if (d->msg[0] == '\0' || strncmp(d->msg, name, strlen(name)) != 0)
		__builtin_trap();
}

static void fuzz_image(const uint8_t *p, size_t n)
{
	pccx_safetensors *st;
	pccx_diag d;
	uint64_t covered = 0;

	if (pccx_st_open_mem(&st, p, n, "fuzz.st", &d) != 0) {
		check_msg(&d, "fuzz.st");
		return;
	}
	for (uint64_t i = 0; i < pccx_st_n_tensors(st); i++) {
		const pccx_st_tensor *t = pccx_st_tensor_at(st, i), *u;
		uint64_t rl = t->n_dims ? t->shape[t->n_dims - 1] : 1;

		if (pccx_st_find(st, t->name) != t)
			__builtin_trap();
		if (t->data < p || t->data + t->nbytes > p + n)
			__builtin_trap();
		covered += t->nbytes;
		if (pccx_st_get_tensor(st, t->name, &u, &d) != 0) {
			if (t->type != PCCX_ST_UNSUPPORTED)
				__builtin_trap();
			continue;
		}
		if (rl && rl <= (1u << 16) && t->n_elems >= rl) {
			float *row = malloc((size_t)rl * sizeof(float));

			if (row && pccx_st_decode_rows(st, t, 0, 1, row, &d) != 0)
				__builtin_trap();
			free(row);
		}
	}
	/* The tensors tile the data exactly. */
	if (pccx_st_n_tensors(st) && covered > n)
		__builtin_trap();
	pccx_st_close(st);
}

static void fuzz_config(const uint8_t *p, size_t n)
{
	pccx_hf_config c;
	struct pccx_hf_family x;
	pccx_diag d;

	if (pccx__hf_config_parse(p, n, "fuzz.json", &c, &x, &d) != 0) {
		check_msg(&d, "fuzz.json");
		return;
	}
	if ((unsigned)x.family >= PCCX_FAMILIES)
		__builtin_trap();
	if (x.family != PCCX_FAMILY_GEMMA3N) {
		/* the other families' values, as the loader goes on to use them */
		if (c.num_hidden_layers == 0 || c.num_hidden_layers > PCCX_HF_MAX_LAYERS ||
		    (x.n_experts && (x.n_experts_used == 0 || x.n_experts_used > x.n_experts)) ||
		    (x.n_kv_heads_global && c.num_attention_heads % x.n_kv_heads_global))
			__builtin_trap();
		return;
	}
	if (c.num_hidden_layers == 0 || c.num_hidden_layers > PCCX_HF_MAX_LAYERS ||
	    c.num_kv_shared_layers >= c.num_hidden_layers ||
	    c.altup_active_idx >= c.altup_num_inputs ||
	    c.num_attention_heads % c.num_key_value_heads)
		__builtin_trap();
	for (int id = 0; id < PCCX_TENSOR_MAP_COUNT; id++) {
		uint64_t s[4];
		uint32_t nd, last = c.num_hidden_layers - 1;

		if (pccx_tensor_map_expected_shape(&c, id, last, true, &nd, s, &d) != 0)
			__builtin_trap();
	}
}

static void fuzz_index(const uint8_t *p, size_t n)
{
	struct pccx_st_index ix;
	pccx_diag d;

	if (pccx__st_index_parse(p, n, "fuzz.index", &ix, &d) != 0) {
		check_msg(&d, "fuzz.index");
		return;
	}
	for (size_t i = 0; i < ix.n_tensors; i++)
		if (ix.shard_of[i] >= ix.n_shards || strchr(ix.shards[ix.shard_of[i]], '/'))
			__builtin_trap();
	pccx__st_index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	if (size == 0)
		return 0;
	/* An exact-size copy, so any read past the end is caught. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	switch (data[0]) {
	case 1:
		fuzz_config(copy, size - 1);
		break;
	case 2:
		fuzz_index(copy, size - 1);
		break;
	default:
		fuzz_image(copy, size - 1);
		break;
	}
	free(copy);
	return 0;
}
