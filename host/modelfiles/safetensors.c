/* SPDX-License-Identifier: MIT */
/*
 * safetensors reader: the JSON header is parsed with the project's strict JSON parser and
 * every entry is checked (dtype, shape, offsets, size = elements x dtype size); the data
 * must be covered exactly by the tensors. Tensor data stays in the mapping. Sharded
 * checkpoints are opened through model.safetensors.index.json.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag.h"
#include "json.h"
#include "modelfile_util.h"
#include "safetensors.h"

struct shard {
	char *path;
	pccx_modelfile_map map;
	pccx_st_tensor *t;
	size_t n;
	const char **meta_key;
	const char **meta_val;
	size_t n_meta;
};

struct pccx_safetensors {
	char *name;
	struct shard *sh;
	size_t n_sh;
	const pccx_st_tensor **all;
	size_t n_all;
	pccx_modelfile_index index;
	pccx_modelfile_arena arena;
};

struct dtype_info {
	const char *name;
	uint32_t size;
	uint32_t type;
};

/* Every dtype of the safetensors format; only the first three are readable here. */
static const struct dtype_info dtypes[] = {
	{ "F32", 4, PCCX_GGML_F32 },
	{ "F16", 2, PCCX_GGML_F16 },
	{ "BF16", 2, PCCX_GGML_BF16 },
	{ "F64", 8, PCCX_ST_UNSUPPORTED },
	{ "I64", 8, PCCX_ST_UNSUPPORTED },
	{ "U64", 8, PCCX_ST_UNSUPPORTED },
	{ "I32", 4, PCCX_ST_UNSUPPORTED },
	{ "U32", 4, PCCX_ST_UNSUPPORTED },
	{ "I16", 2, PCCX_ST_UNSUPPORTED },
	{ "U16", 2, PCCX_ST_UNSUPPORTED },
	{ "I8", 1, PCCX_ST_UNSUPPORTED },
	{ "U8", 1, PCCX_ST_UNSUPPORTED },
	{ "BOOL", 1, PCCX_ST_UNSUPPORTED },
	{ "F8_E4M3", 1, PCCX_ST_UNSUPPORTED },
	{ "F8_E5M2", 1, PCCX_ST_UNSUPPORTED },
	{ "F8_E8M0", 1, PCCX_ST_UNSUPPORTED },
};

static const struct dtype_info *find_dtype(const char *s)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (strcmp(dtypes[i].name, s) == 0)
			return &dtypes[i];
	return NULL;
}

/* Non-empty, no control characters (keeps diagnostics on one line), no embedded NUL. */
static const char *name_problem(const char *s, size_t len)
{
	if (len == 0)
		return "is empty";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "contains a control character";
	return NULL;
}

static void fmt_shape(const uint64_t *shape, uint32_t n, char *buf, size_t size)
{
	size_t o = 0;

	o += (size_t)snprintf(buf, size, "[");
	for (uint32_t i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%" PRIu64, i ? ", " : "", shape[i]);
	if (o < size)
		snprintf(buf + o, size - o, "]");
}

/* A JSON value that must be a non-negative integer. */
static bool get_u64(const pccx_json *v, uint64_t *out)
{
	if (!pccx__json_is_int(v) || pccx__json_int(v) < 0)
		return false;
	*out = (uint64_t)pccx__json_int(v);
	return true;
}

static int parse_tensor(pccx_safetensors *st, struct shard *sh, const char *name,
			const pccx_json *v, uint64_t data_size, pccx_st_tensor *t, pccx_diag *d)
{
	const char *f = sh->path, *dt;
	const pccx_json *shape, *offs, *m;
	const struct dtype_info *di;
	uint64_t begin, end, n = 1;
	char sbuf[200];
	size_t len;

	memset(t, 0, sizeof(*t));
	if (pccx__json_type_of(v) != PCCX_JSON_OBJECT)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': entry is %s, not an object",
				  f, name, pccx__json_type_name(pccx__json_type_of(v)));
	m = pccx__json_get(v, "dtype");
	dt = pccx__json_str(m, &len);
	if (!dt)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': \"dtype\" %s", f, name,
				  m ? "is not a string" : "is missing");
	di = find_dtype(dt);
	if (!di || strlen(dt) != len)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%.40s'",
				  f, name, dt);
	shape = pccx__json_get(v, "shape");
	if (pccx__json_type_of(shape) != PCCX_JSON_ARRAY)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': \"shape\" %s", f, name,
				  shape ? "is not an array" : "is missing");
	if (pccx__json_count(shape) > PCCX_ST_MAX_DIMS)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: tensor '%s': %zu dimensions (at most %u)",
				  f, name, pccx__json_count(shape), PCCX_ST_MAX_DIMS);
	t->n_dims = (uint32_t)pccx__json_count(shape);
	for (uint32_t i = 0; i < t->n_dims; i++) {
		if (!get_u64(pccx__json_at(shape, i), &t->shape[i]))
			return pccx__fail(d, PCCX_ERR_FORMAT,
					  "%s: tensor '%s': shape[%" PRIu32 "] is not a "
					  "non-negative integer",
					  f, name, i);
		if (pccx_modelfile_mul_ovf(n, t->shape[i], &n) || n > (uint64_t)INT64_MAX)
			return pccx__fail(d, PCCX_ERR_FORMAT,
					  "%s: tensor '%s': element count overflows 2^63 - 1 at "
					  "dimension %" PRIu32,
					  f, name, i);
	}
	offs = pccx__json_get(v, "data_offsets");
	if (pccx__json_type_of(offs) != PCCX_JSON_ARRAY || pccx__json_count(offs) != 2 ||
	    !get_u64(pccx__json_at(offs, 0), &begin) || !get_u64(pccx__json_at(offs, 1), &end))
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: tensor '%s': \"data_offsets\" %s", f, name,
				  offs ? "is not [begin, end] with non-negative integers" : "is "
				  "missing");
	if (begin > end)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") end "
				  "before they begin",
				  f, name, begin, end);
	if (pccx_modelfile_mul_ovf(n, di->size, &t->nbytes))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor '%s': byte size overflows 64 bits",
				  f, name);
	if (t->nbytes != end - begin) {
		fmt_shape(t->shape, t->n_dims, sbuf, sizeof(sbuf));
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
				  ") hold %" PRIu64 " bytes, shape %s of %s needs %" PRIu64,
				  f, name, begin, end, end - begin, sbuf, di->name, t->nbytes);
	}
	if (end > data_size)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") extend "
				  "beyond the end of the file (the data holds %" PRIu64 " bytes)",
				  f, name, begin, end, data_size);
	t->name = pccx__modelfile_arena_strndup(&st->arena, name, strlen(name));
	t->dtype = di->name;
	t->type = di->type;
	t->n_elems = n;
	t->offset = begin;
	t->file = sh->path;
	if (!t->name)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", f);
	return PCCX_OK;
}

static int parse_metadata(pccx_safetensors *st, struct shard *sh, const pccx_json *v,
			  pccx_diag *d)
{
	size_t n = pccx__json_count(v);

	if (pccx__json_type_of(v) != PCCX_JSON_OBJECT)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: \"__metadata__\" is %s, not an object",
				  sh->path, pccx__json_type_name(pccx__json_type_of(v)));
	sh->meta_key = pccx__modelfile_arena_alloc(&st->arena, (n ? n : 1) * sizeof(char *));
	sh->meta_val = pccx__modelfile_arena_alloc(&st->arena, (n ? n : 1) * sizeof(char *));
	if (!sh->meta_key || !sh->meta_val)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", sh->path);
	for (size_t i = 0; i < n; i++) {
		const pccx_json *m = pccx__json_at(v, i);
		size_t klen, vlen;
		const char *k = pccx__json_key(m, &klen), *s = pccx__json_str(m, &vlen);

		if (!s)
			return pccx__fail(d, PCCX_ERR_FORMAT,
					  "%s: \"__metadata__\" entry '%.100s' is %s, not a string",
					  sh->path, k, pccx__json_type_name(pccx__json_type_of(m)));
		sh->meta_key[i] = pccx__modelfile_arena_strndup(&st->arena, k, klen);
		sh->meta_val[i] = pccx__modelfile_arena_strndup(&st->arena, s, vlen);
		if (!sh->meta_key[i] || !sh->meta_val[i])
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", sh->path);
	}
	sh->n_meta = n;
	return PCCX_OK;
}

static int cmp_extent(const void *a, const void *b)
{
	const pccx_st_tensor *x = *(const pccx_st_tensor *const *)a;
	const pccx_st_tensor *y = *(const pccx_st_tensor *const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->nbytes != y->nbytes)
		return x->nbytes < y->nbytes ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The tensors must tile the data exactly: no overlap, no hole, nothing after the last. */
static int check_coverage(struct shard *sh, uint64_t data_size, pccx_diag *d)
{
	const pccx_st_tensor **order;
	const pccx_st_tensor *prev = NULL;
	uint64_t at = 0;
	int rc = PCCX_OK;

	if (sh->n == 0) {
		if (data_size)
			return pccx__fail(d, PCCX_ERR_FORMAT,
					  "%s: %" PRIu64 " bytes of data but no tensors",
					  sh->path, data_size);
		return PCCX_OK;
	}
	order = malloc(sh->n * sizeof(*order));
	if (!order)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", sh->path);
	for (size_t i = 0; i < sh->n; i++)
		order[i] = &sh->t[i];
	qsort(order, sh->n, sizeof(*order), cmp_extent);
	for (size_t i = 0; i < sh->n; i++) {
		const pccx_st_tensor *t = order[i];

		if (t->offset < at) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT,
					"%s: tensor '%s': data [%" PRIu64 ", %" PRIu64 ") overlaps "
					"tensor '%s' [%" PRIu64 ", %" PRIu64 ")",
					sh->path, t->name, t->offset, t->offset + t->nbytes,
					prev->name,
					prev->offset, prev->offset + prev->nbytes);
			break;
		}
		if (t->offset > at) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT,
					"%s: data bytes [%" PRIu64 ", %" PRIu64 ") belong to no "
					"tensor (hole before '%s')",
					sh->path, at, t->offset, t->name);
			break;
		}
		at = t->offset + t->nbytes;
		prev = t;
	}
	if (!rc && at != data_size)
		rc = pccx__fail(d, PCCX_ERR_FORMAT,
				"%s: data bytes [%" PRIu64 ", %" PRIu64 ") after the last tensor "
				"belong to no tensor",
				sh->path, at, data_size);
	free(order);
	return rc;
}

static int parse_shard(pccx_safetensors *st, struct shard *sh, pccx_diag *d)
{
	const uint8_t *p = sh->map.data;
	size_t size = sh->map.size;
	const char *f = sh->path;
	pccx_json_limits lim = { 0 };
	pccx_json_doc *doc = NULL;
	const pccx_json *root;
	uint64_t hlen, data_size;
	char dname[600];
	size_t n, k = 0;
	int rc;

	if (size < 8)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: truncated: %zu bytes, a safetensors file starts with an "
				  "8-byte header length",
				  f, size);
	hlen = pccx_modelfile_le64(p);
	if (hlen > size - 8)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: header length %" PRIu64 " exceeds the %zu bytes after it",
				  f, hlen, size - 8);
	if (hlen > PCCX_ST_MAX_HEADER)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: header length %" PRIu64 " exceeds the limit of %" PRIu64
				  " bytes", f,
				  hlen, PCCX_ST_MAX_HEADER);
	data_size = size - 8 - hlen;
	snprintf(dname, sizeof(dname), "%s: header", f);
	lim.max_size = (size_t)hlen + 1;
	rc = pccx__json_parse(p + 8, (size_t)hlen, dname, &lim, &doc, d);
	if (rc)
		return rc;
	root = pccx__json_root(doc);
	if (pccx__json_type_of(root) != PCCX_JSON_OBJECT) {
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: header is %s, not an object", f,
				pccx__json_type_name(pccx__json_type_of(root)));
		goto out;
	}
	n = pccx__json_count(root);
	sh->t = calloc(n ? n : 1, sizeof(*sh->t));
	if (!sh->t) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", f);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const pccx_json *m = pccx__json_at(root, i);
		size_t klen;
		const char *key = pccx__json_key(m, &klen), *prob;

		if (strcmp(key, "__metadata__") == 0 && klen == 12) {
			rc = parse_metadata(st, sh, m, d);
			if (rc)
				goto out;
			continue;
		}
		prob = name_problem(key, klen);
		if (!prob && strlen(key) != klen)
			prob = "contains a NUL character";
		if (prob) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: tensor #%zu: name %s", f, i, prob);
			goto out;
		}
		rc = parse_tensor(st, sh, key, m, data_size, &sh->t[k], d);
		if (rc)
			goto out;
		sh->t[k].data = p + 8 + hlen + sh->t[k].offset;
		k++;
	}
	sh->n = k;
	rc = check_coverage(sh, data_size, d);
out:
	pccx__json_free(doc);
	return rc;
}

/* ------------------------------------------------------------------------------------- */
/* Index                                                                                  */

void pccx__st_index_free(struct pccx_st_index *ix)
{
	for (size_t i = 0; i < ix->n_shards; i++)
		free(ix->shards[i]);
	for (size_t i = 0; i < ix->n_tensors; i++)
		free(ix->tensors[i]);
	free(ix->shards);
	free(ix->tensors);
	free(ix->shard_of);
	memset(ix, 0, sizeof(*ix));
}

static bool plain_file_name(const char *s, size_t len)
{
	if (len == 0 || strlen(s) != len || strchr(s, '/') || strcmp(s, ".") == 0 ||
	    strcmp(s, "..") == 0)
		return false;
	return name_problem(s, len) == NULL;
}

int pccx__st_index_parse(const void *json, size_t len, const char *name, struct pccx_st_index *ix,
			 pccx_diag *d)
{
	pccx_json_doc *doc = NULL;
	const pccx_json *root, *wm;
	pccx_modelfile_index names = { 0 };
	size_t n, max_shards;
	int rc;

	memset(ix, 0, sizeof(*ix));
	rc = pccx__json_parse(json, len, name, NULL, &doc, d);
	if (rc)
		return rc;
	root = pccx__json_root(doc);
	if (pccx__json_type_of(root) != PCCX_JSON_OBJECT) {
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: index is %s, not an object", name,
				pccx__json_type_name(pccx__json_type_of(root)));
		goto out;
	}
	wm = pccx__json_get(root, "weight_map");
	if (pccx__json_type_of(wm) != PCCX_JSON_OBJECT) {
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: \"weight_map\" %s", name,
				wm ? "is not an object" : "is missing");
		goto out;
	}
	n = pccx__json_count(wm);
	if (n == 0) {
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: \"weight_map\" is empty", name);
		goto out;
	}
	ix->tensors = calloc(n, sizeof(*ix->tensors));
	ix->shard_of = calloc(n, sizeof(*ix->shard_of));
	/* At most one shard per tensor, and at most PCCX_ST_MAX_SHARDS. */
	max_shards = n < PCCX_ST_MAX_SHARDS ? n : PCCX_ST_MAX_SHARDS;
	ix->shards = calloc(max_shards, sizeof(*ix->shards));
	rc = pccx__modelfile_index_init(&names, max_shards);
	if (!ix->tensors || !ix->shard_of || !ix->shards || rc) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const pccx_json *m = pccx__json_at(wm, i);
		size_t klen, slen;
		const char *key = pccx__json_key(m, &klen), *shard = pccx__json_str(m, &slen);
		const char *prob = name_problem(key, klen);
		int64_t si;

		if (!prob && strlen(key) != klen)
			prob = "contains a NUL character";
		if (prob) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT,
					"%s: weight_map entry #%zu: tensor name %s",
					name, i, prob);
			goto out;
		}
		if (!shard || !plain_file_name(shard, slen)) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT,
					"%s: weight_map['%s']: %s", name, key,
					shard ? "shard is not a plain file name in the index's "
					"directory"
					     : "shard is not a string");
			goto out;
		}
		si = pccx__modelfile_index_find(&names, shard);
		if (si < 0) {
			if (ix->n_shards == max_shards) {
				rc = pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: more than %u shards",
						name, PCCX_ST_MAX_SHARDS);
				goto out;
			}
			ix->shards[ix->n_shards] = strdup(shard);
			if (!ix->shards[ix->n_shards]) {
				rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
				goto out;
			}
			si = (int64_t)ix->n_shards;
			pccx__modelfile_index_add(&names, ix->shards[ix->n_shards], (uint32_t)si, NULL);
			ix->n_shards++;
		}
		ix->tensors[i] = strdup(key);
		if (!ix->tensors[i]) {
			rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
			goto out;
		}
		ix->shard_of[i] = (uint32_t)si;
		ix->n_tensors = i + 1;
	}
	rc = PCCX_OK;
out:
	pccx__modelfile_index_free(&names);
	pccx__json_free(doc);
	if (rc)
		pccx__st_index_free(ix);
	return rc;
}

/* ------------------------------------------------------------------------------------- */
/* Opening                                                                                */

void pccx_st_close(pccx_safetensors *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_sh; i++) {
		pccx__modelfile_unmap(&st->sh[i].map);
		free(st->sh[i].t);
		free(st->sh[i].path);
	}
	free(st->sh);
	free(st->all);
	pccx__modelfile_index_free(&st->index);
	pccx__modelfile_arena_free(&st->arena);
	free(st->name);
	free(st);
}

static pccx_safetensors *new_st(const char *name, size_t n_shards)
{
	pccx_safetensors *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->name = strdup(name);
	st->sh = calloc(n_shards, sizeof(*st->sh));
	if (!st->name || !st->sh) {
		pccx_st_close(st);
		return NULL;
	}
	return st;
}

/* Index every tensor of every shard by name; a name in two shards is refused. */
static int build_index(pccx_safetensors *st, pccx_diag *d)
{
	size_t total = 0, k = 0;

	for (size_t i = 0; i < st->n_sh; i++)
		total += st->sh[i].n;
	st->all = malloc((total ? total : 1) * sizeof(*st->all));
	if (!st->all || pccx__modelfile_index_init(&st->index, total))
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", st->name);
	for (size_t i = 0; i < st->n_sh; i++) {
		for (size_t j = 0; j < st->sh[i].n; j++) {
			uint32_t dup;

			st->all[k] = &st->sh[i].t[j];
			if (!pccx__modelfile_index_add(&st->index, st->all[k]->name, (uint32_t)k, &dup))
				return pccx__fail(d, PCCX_ERR_FORMAT,
						  "%s: tensor '%s' is in both %s and %s",
						  st->name, st->all[k]->name, st->all[dup]->file,
						  st->all[k]->file);
			k++;
		}
	}
	st->n_all = k;
	return PCCX_OK;
}

static int open_shard(pccx_safetensors *st, struct shard *sh, const char *path, pccx_diag *d)
{
	int rc;

	sh->path = strdup(path);
	if (!sh->path)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	rc = pccx__modelfile_map_file(path, &sh->map, d);
	if (rc)
		return rc;
	return parse_shard(st, sh, d);
}

static int open_single(pccx_safetensors **out, const char *path, pccx_diag *d)
{
	pccx_safetensors *st = new_st(path, 1);
	int rc;

	if (!st)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	st->n_sh = 1;
	rc = open_shard(st, &st->sh[0], path, d);
	if (!rc)
		rc = build_index(st, d);
	if (rc) {
		pccx_st_close(st);
		return rc;
	}
	*out = st;
	return PCCX_OK;
}

static int read_small_file(const char *path, size_t max, char **buf, size_t *len, pccx_diag *d)
{
	pccx_modelfile_map m;
	int rc = pccx__modelfile_map_file(path, &m, d);

	if (rc)
		return rc;
	if (m.size > max) {
		pccx__modelfile_unmap(&m);
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: %zu bytes exceeds the limit of %zu", path,
				  m.size, max);
	}
	*buf = malloc(m.size ? m.size : 1);
	if (!*buf) {
		pccx__modelfile_unmap(&m);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	if (m.size)
		memcpy(*buf, m.data, m.size);
	*len = m.size;
	pccx__modelfile_unmap(&m);
	return PCCX_OK;
}

static int open_index(pccx_safetensors **out, const char *path, pccx_diag *d)
{
	struct pccx_st_index ix;
	pccx_safetensors *st = NULL;
	char *text = NULL, *dir = NULL, *slash, *shard_path = NULL;
	size_t len = 0;
	int rc;

	rc = read_small_file(path, PCCX_ST_MAX_HEADER, &text, &len, d);
	if (rc)
		return rc;
	rc = pccx__st_index_parse(text, len, path, &ix, d);
	free(text);
	if (rc)
		return rc;
	dir = strdup(path);
	shard_path = malloc(strlen(path) + 4096 + 2);
	st = new_st(path, ix.n_shards);
	if (!dir || !shard_path || !st) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash)
		slash[1] = '\0';
	else
		dir[0] = '\0';
	for (size_t i = 0; i < ix.n_shards; i++) {
		if (strlen(ix.shards[i]) > 4096) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: shard name too long", path);
			goto out;
		}
		sprintf(shard_path, "%s%s", dir, ix.shards[i]);
		st->n_sh = i + 1;
		rc = open_shard(st, &st->sh[i], shard_path, d);
		if (rc)
			goto out;
	}
	rc = build_index(st, d);
	if (rc)
		goto out;
	for (size_t i = 0; i < ix.n_tensors; i++) {
		int64_t k = pccx__modelfile_index_find(&st->index, ix.tensors[i]);
		const char *want = st->sh[ix.shard_of[i]].path;

		if (k < 0 || strcmp(st->all[k]->file, want) != 0) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT,
					"%s: tensor '%s' is assigned to %s, which does not hold it",
					path, ix.tensors[i], want);
			goto out;
		}
	}
out:
	pccx__st_index_free(&ix);
	free(dir);
	free(shard_path);
	if (rc) {
		pccx_st_close(st);
		return rc;
	}
	*out = st;
	return PCCX_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int pccx_st_open(pccx_safetensors **out, const char *path, pccx_diag *d)
{
	struct stat sb;

	if (!out || !path)
		return pccx__fail(d, PCCX_ERR_INVALID, "pccx_st_open: NULL argument");
	*out = NULL;
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		size_t n = strlen(path) + sizeof(PCCX_ST_INDEX_NAME) + 2;
		char *p = malloc(n);
		int rc;

		if (!p)
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
		snprintf(p, n, "%s/%s", path, PCCX_ST_INDEX_NAME);
		if (stat(p, &sb) == 0) {
			rc = open_index(out, p, d);
		} else {
			snprintf(p, n, "%s/%s", path, PCCX_ST_SINGLE_NAME);
			if (stat(p, &sb) == 0)
				rc = open_single(out, p, d);
			else
				rc = pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: holds neither %s nor %s",
						path, PCCX_ST_INDEX_NAME, PCCX_ST_SINGLE_NAME);
		}
		free(p);
		return rc;
	}
	if (ends_with(path, ".json"))
		return open_index(out, path, d);
	return open_single(out, path, d);
}

int pccx_st_open_mem(pccx_safetensors **out, const void *buf, size_t len, const char *name,
		     pccx_diag *d)
{
	pccx_safetensors *st;
	int rc;

	if (!out || (!buf && len))
		return pccx__fail(d, PCCX_ERR_INVALID, "pccx_st_open_mem: NULL argument");
	*out = NULL;
	if (!name)
		name = "(memory)";
	st = new_st(name, 1);
	if (!st)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	st->n_sh = 1;
	st->sh[0].path = strdup(name);
	st->sh[0].map.data = buf;
	st->sh[0].map.size = len;
	rc = st->sh[0].path ? parse_shard(st, &st->sh[0], d) :
			      pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	if (!rc)
		rc = build_index(st, d);
	if (rc) {
		pccx_st_close(st);
		return rc;
	}
	*out = st;
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Accessors                                                                              */

uint64_t pccx_st_n_tensors(const pccx_safetensors *st)
{
	return st->n_all;
}

const char *pccx_st_name(const pccx_safetensors *st)
{
	return st->name;
}

uint64_t pccx_st_n_files(const pccx_safetensors *st)
{
	return st->n_sh;
}

const pccx_st_tensor *pccx_st_tensor_at(const pccx_safetensors *st, uint64_t i)
{
	return i < st->n_all ? st->all[i] : NULL;
}

const pccx_st_tensor *pccx_st_find(const pccx_safetensors *st, const char *name)
{
	int64_t i = pccx__modelfile_index_find(&st->index, name);

	return i < 0 ? NULL : st->all[i];
}

int pccx_st_get_tensor(const pccx_safetensors *st, const char *name, const pccx_st_tensor **out,
		       pccx_diag *d)
{
	const pccx_st_tensor *t = pccx_st_find(st, name);

	*out = t;
	if (!t)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: tensor '%s': not in the checkpoint",
				  st->name, name);
	if (t->type == PCCX_ST_UNSUPPORTED)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: tensor '%s': dtype %s is not supported (F32, F16 and BF16 "
				  "are)",
				  t->file, name, t->dtype);
	return PCCX_OK;
}

const char *pccx_st_metadata(const pccx_safetensors *st, const char *key)
{
	for (size_t i = 0; i < st->n_sh; i++)
		for (size_t j = 0; j < st->sh[i].n_meta; j++)
			if (strcmp(st->sh[i].meta_key[j], key) == 0)
				return st->sh[i].meta_val[j];
	return NULL;
}

int pccx_st_decode_rows(const pccx_safetensors *st, const pccx_st_tensor *t, uint64_t row,
			uint64_t n_rows, float *dst, pccx_diag *d)
{
	uint64_t rl = t->n_dims ? t->shape[t->n_dims - 1] : 1;
	uint64_t rows = rl ? t->n_elems / rl : 0, esize;
	char what[512];

	(void)st;
	if (t->type == PCCX_ST_UNSUPPORTED)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: tensor '%s': dtype %s is not supported (F32, F16 and BF16 "
				  "are)",
				  t->file, t->name, t->dtype);
	if (row > rows || n_rows > rows - row)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: tensor '%s': rows [%" PRIu64 ", %" PRIu64
				  ") out of range (%" PRIu64 " rows)",
				  t->file, t->name, row, row + n_rows, rows);
	esize = pccx_ggml_block_bytes(t->type);
	snprintf(what, sizeof(what), "%s: tensor '%s'", t->file, t->name);
	return pccx_ggml_decode(t->type, t->data + row * rl * esize, (size_t)(n_rows * rl * esize),
				dst, n_rows * rl, what, d);
}

void pccx__st_release(const pccx_safetensors *st, const pccx_st_tensor *t)
{
	size_t i;

	for (i = 0; st && t && i < st->n_sh; i++) {
		const pccx_modelfile_map *m = &st->sh[i].map;

		if (m->data && t->data >= (const uint8_t *)m->data &&
		    t->data < (const uint8_t *)m->data + m->size) {
			pccx__modelfile_release(m, t->data, t->nbytes);
			return;
		}
	}
}
