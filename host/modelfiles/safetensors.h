/* SPDX-License-Identifier: MIT */
/* Internal side of the safetensors reader: the sharded-checkpoint index. */
#ifndef PCCX_SAFETENSORS_H
#define PCCX_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "pccx/modelfile.h"

#define PCCX_ST_INDEX_NAME "model.safetensors.index.json"
#define PCCX_ST_SINGLE_NAME "model.safetensors"
/* More shards than this is refused (each is a mapping). */
#define PCCX_ST_MAX_SHARDS 4096u

/* model.safetensors.index.json: "weight_map" {tensor name: shard file name}. */
struct pccx_st_index {
	char **shards;		/* distinct shard file names, in first-use order */
	size_t n_shards;
	char **tensors;		/* weight_map keys */
	uint32_t *shard_of;	/* weight_map values as indices into shards */
	size_t n_tensors;
};

/*
 * Parse an index document. Shard names must be plain file names (no '/', not "." or
 * ".."), so a checkpoint cannot reach outside its directory. `name` prefixes the diag.
 */
PCCX_MUST_CHECK int pccx__st_index_parse(const void *json, size_t len, const char *name,
					 struct pccx_st_index *ix, pccx_diag *d);
void pccx__st_index_free(struct pccx_st_index *ix);

/*
 * A loader is done with tensor t: the pages of its data leave the resident set
 * (pccx__modelfile_release); reading them again still works.
 */
void pccx__st_release(const pccx_safetensors *st, const pccx_st_tensor *t);

#endif /* PCCX_SAFETENSORS_H */
