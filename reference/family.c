// SPDX-License-Identifier: MIT
/* The Gemma families (family.h); the table's sources are in docs/reference.md, "Families". */
#include <string.h>

#include "family.h"
#include "layers.h"

#define SANDWICH (PCCX_NORM_POST_ATTN | PCCX_NORM_PRE_FFN | PCCX_NORM_POST_FFN)

static const struct pccx_family_desc families[PCCX_FAMILIES] = {
	[PCCX_FAMILY_GEMMA3N] = {
		.arch = "gemma3n", .title = "Gemma 3n", .altup = true,
		.norms = SANDWICH | PCCX_NORM_Q | PCCX_NORM_K | PCCX_NORM_V, .ple = true,
		.kv_sharing = true, .shared_kv_weights = true,
	},
	[PCCX_FAMILY_GEMMA] = {
		.arch = "gemma", .title = "Gemma 1",
		.norms = PCCX_NORM_PRE_FFN, .norm_plus_one = true, .embed_scale_bf16 = true,
	},
	[PCCX_FAMILY_GEMMA2] = {
		.arch = "gemma2", .title = "Gemma 2",
		.norms = SANDWICH, .norm_plus_one = true, .embed_scale_bf16 = true,
	},
	[PCCX_FAMILY_GEMMA3] = {
		.arch = "gemma3", .title = "Gemma 3",
		.norms = SANDWICH | PCCX_NORM_Q | PCCX_NORM_K, .norm_plus_one = true,
		.embed_scale_bf16 = true,
	},
	[PCCX_FAMILY_GEMMA4] = {
		.arch = "gemma4", .title = "Gemma 4",
		.norms = SANDWICH | PCCX_NORM_Q | PCCX_NORM_K | PCCX_NORM_V,
		.embed_scale_bf16 = true, .ple = true, .layer_scale = true, .kv_sharing = true,
	},
};

const struct pccx_family_desc *pccx__family(enum pccx_family f)
{
	return &families[f < PCCX_FAMILIES ? f : PCCX_FAMILY_GEMMA3N];
}

enum pccx_family pccx__family_from_arch(const char *arch)
{
	unsigned f;

	for (f = 0; f < PCCX_FAMILIES; f++)
		if (!strcmp(arch, families[f].arch))
			return (enum pccx_family)f;
	return PCCX_FAMILIES;
}
