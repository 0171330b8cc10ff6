/* SPDX-License-Identifier: MIT */
/*
 * GGUF reader. The whole file is validated at open: every count and length is checked
 * against the bytes that remain before anything is allocated for it, arrays are walked
 * once to prove their elements exist before their index is built, and tensor extents
 * are checked against the file and against each other. Tensor data stays in the mapping.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "gguf.h"
#include "modelfile_util.h"

struct gguf_kv {
	const char *key;
	pccx_gguf_value val;
};

struct pccx_gguf {
	char *name;
	pccx_modelfile_map map;
	uint32_t version;
	uint64_t alignment;
	uint64_t data_offset;
	uint64_t n_kv;
	struct gguf_kv *kv;
	uint64_t n_tensors;
	pccx_gguf_tensor *tensors;
	pccx_modelfile_index kv_index;
	pccx_modelfile_index tensor_index;
	pccx_modelfile_arena arena;
};

/* Smallest encodings, used to bound counts before trusting them. */
#define MIN_KV_BYTES 14u	/* key length 8 + 1 key byte + type 4 + 1 value byte */
#define MIN_TENSOR_BYTES 33u	/* name length 8 + 1 + n_dims 4 + one dim 8 + type 4 + offset 8 */
#define MIN_ARRAY_BYTES 12u	/* element type 4 + count 8 */

struct parser {
	pccx_gguf *g;
	pccx_diag *d;
	const uint8_t *p;
	size_t size;
	size_t pos;
	char ctx[160];		/* "key #3", "key 'general.name'", "tensor 'x'" ... */
};

static int perr(struct parser *ps, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct parser *ps, int status, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->ctx[0])
		return pccx__fail(ps->d, status, "%s: %s: %s", ps->g->name, ps->ctx, msg);
	return pccx__fail(ps->d, status, "%s: %s", ps->g->name, msg);
}

static void set_ctx(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_ctx(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->ctx, sizeof(ps->ctx), fmt, ap);
	va_end(ap);
}

static size_t left(const struct parser *ps)
{
	return ps->size - ps->pos;
}

static int need(struct parser *ps, size_t n, const char *what)
{
	if (left(ps) < n)
		return perr(ps, PCCX_ERR_FORMAT,
			    "truncated: %s needs %zu bytes at offset %zu, only %zu left", what, n,
			    ps->pos, left(ps));
	return PCCX_OK;
}

static int rd_u32(struct parser *ps, uint32_t *v, const char *what)
{
	int rc = need(ps, 4, what);

	if (rc)
		return rc;
	*v = pccx_modelfile_le32(ps->p + ps->pos);
	ps->pos += 4;
	return PCCX_OK;
}

static int rd_u64(struct parser *ps, uint64_t *v, const char *what)
{
	int rc = need(ps, 8, what);

	if (rc)
		return rc;
	*v = pccx_modelfile_le64(ps->p + ps->pos);
	ps->pos += 8;
	return PCCX_OK;
}

/* A length-prefixed string; the bytes stay in the input. */
static int rd_str(struct parser *ps, const uint8_t **s, uint64_t *len, const char *what)
{
	int rc = rd_u64(ps, len, what);

	if (rc)
		return rc;
	if (*len > left(ps))
		return perr(ps, PCCX_ERR_FORMAT,
			    "%s length %" PRIu64 " at offset %zu exceeds the %zu bytes left", what,
			    *len, ps->pos - 8, left(ps));
	*s = ps->p + ps->pos;
	ps->pos += (size_t)*len;
	return PCCX_OK;
}

uint32_t pccx__gguf_scalar_size(uint32_t type)
{
	switch (type) {
	case PCCX_GGUF_UINT8:
	case PCCX_GGUF_INT8:
	case PCCX_GGUF_BOOL:
		return 1;
	case PCCX_GGUF_UINT16:
	case PCCX_GGUF_INT16:
		return 2;
	case PCCX_GGUF_UINT32:
	case PCCX_GGUF_INT32:
	case PCCX_GGUF_FLOAT32:
		return 4;
	case PCCX_GGUF_UINT64:
	case PCCX_GGUF_INT64:
	case PCCX_GGUF_FLOAT64:
		return 8;
	}
	return 0;
}

const char *pccx_gguf_type_name(uint32_t type)
{
	static const char *const names[PCCX_GGUF_TYPE_COUNT] = {
		"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
		"bool", "string", "array", "uint64", "int64", "float64",
	};

	return type < PCCX_GGUF_TYPE_COUNT ? names[type] : NULL;
}

const char *pccx__gguf_name_problem(const char *s, uint64_t len, uint64_t max)
{
	if (len == 0)
		return "is empty";
	if (len > max)
		return "is too long";
	for (uint64_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "contains a control character";
	return NULL;
}

/* Decode one little-endian scalar of a known fixed-size type at p into a value. */
static void scalar_from(uint32_t type, const uint8_t *p, pccx_gguf_value *v)
{
	uint32_t u32;
	uint64_t u64;
	float f;
	double f64;

	v->type = type;
	switch (type) {
	case PCCX_GGUF_UINT8:
		v->v.u = p[0];
		break;
	case PCCX_GGUF_INT8:
		v->v.i = (int8_t)p[0];
		break;
	case PCCX_GGUF_BOOL:
		v->v.b = p[0] != 0;
		break;
	case PCCX_GGUF_UINT16:
		v->v.u = pccx_modelfile_le16(p);
		break;
	case PCCX_GGUF_INT16:
		v->v.i = (int16_t)pccx_modelfile_le16(p);
		break;
	case PCCX_GGUF_UINT32:
		v->v.u = pccx_modelfile_le32(p);
		break;
	case PCCX_GGUF_INT32:
		v->v.i = (int32_t)pccx_modelfile_le32(p);
		break;
	case PCCX_GGUF_FLOAT32:
		u32 = pccx_modelfile_le32(p);
		memcpy(&f, &u32, 4);
		v->v.f = f;
		break;
	case PCCX_GGUF_UINT64:
		v->v.u = pccx_modelfile_le64(p);
		break;
	case PCCX_GGUF_INT64:
		v->v.i = (int64_t)pccx_modelfile_le64(p);
		break;
	case PCCX_GGUF_FLOAT64:
		u64 = pccx_modelfile_le64(p);
		memcpy(&f64, &u64, 8);
		v->v.f = f64;
		break;
	}
}

static int check_bools(struct parser *ps, const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] > 1)
			return perr(ps, PCCX_ERR_FORMAT,
				    "bool %s%" PRIu64 " at offset %zu is %u, not 0 or 1",
				    n > 1 ? "element " : "", n > 1 ? i : 0,
				    (size_t)(p + i - ps->p), p[i]);
	return PCCX_OK;
}

/* Validate (and step over) an array body whose header has been read. */
static int skip_array(struct parser *ps, uint32_t et, uint64_t n, unsigned depth);

static int check_elem_type(struct parser *ps, uint32_t et, unsigned depth)
{
	if (et >= PCCX_GGUF_TYPE_COUNT)
		return perr(ps, PCCX_ERR_FORMAT,
			    "unknown array element type %" PRIu32 " at offset %zu",
			    et, ps->pos - 12);
	if (et == PCCX_GGUF_ARRAY && depth + 1 >= PCCX_GGUF_MAX_DEPTH)
		return perr(ps, PCCX_ERR_UNSUPPORTED, "arrays nested deeper than %u levels",
			    PCCX_GGUF_MAX_DEPTH);
	return PCCX_OK;
}

static int array_header(struct parser *ps, unsigned depth, uint32_t *et, uint64_t *n)
{
	uint64_t min;
	int rc;

	rc = rd_u32(ps, et, "array element type");
	if (!rc)
		rc = rd_u64(ps, n, "array length");
	if (!rc)
		rc = check_elem_type(ps, *et, depth);
	if (rc)
		return rc;
	switch (*et) {
	case PCCX_GGUF_STRING:
		min = 8;
		break;
	case PCCX_GGUF_ARRAY:
		min = MIN_ARRAY_BYTES;
		break;
	default:
		min = pccx__gguf_scalar_size(*et);
	}
	if (*n > left(ps) / min)
		return perr(ps, PCCX_ERR_FORMAT,
			    "array of %" PRIu64 " %s elements cannot fit in the %zu bytes left", *n,
			    pccx_gguf_type_name(*et), left(ps));
	return PCCX_OK;
}

static int skip_array(struct parser *ps, uint32_t et, uint64_t n, unsigned depth)
{
	const uint8_t *s;
	uint64_t len, i;
	int rc;

	if (et == PCCX_GGUF_STRING) {
		for (i = 0; i < n; i++) {
			rc = rd_str(ps, &s, &len, "string element");
			if (rc)
				return rc;
		}
		return PCCX_OK;
	}
	if (et == PCCX_GGUF_ARRAY) {
		for (i = 0; i < n; i++) {
			uint32_t et2;
			uint64_t n2;

			rc = array_header(ps, depth + 1, &et2, &n2);
			if (!rc)
				rc = skip_array(ps, et2, n2, depth + 1);
			if (rc)
				return rc;
		}
		return PCCX_OK;
	}
	/* array_header() proved n * size fits in what is left. */
	len = n * pccx__gguf_scalar_size(et);
	if (et == PCCX_GGUF_BOOL) {
		rc = check_bools(ps, ps->p + ps->pos, n);
		if (rc)
			return rc;
	}
	ps->pos += (size_t)len;
	return PCCX_OK;
}

static void *arena(struct parser *ps, uint64_t n, uint64_t size)
{
	uint64_t bytes;

	if (pccx_modelfile_mul_ovf(n, size, &bytes) || bytes > SIZE_MAX)
		return NULL;
	return pccx__modelfile_arena_alloc(&ps->g->arena, (size_t)(bytes ? bytes : 1));
}

static int nomem(struct parser *ps)
{
	return perr(ps, PCCX_ERR_NOMEM, "out of memory");
}

static int build_value(struct parser *ps, uint32_t type, unsigned depth, pccx_gguf_value *v);

/* Build an array value; the cursor is just after the array header. */
static int build_array(struct parser *ps, uint32_t et, uint64_t n, unsigned depth,
		       pccx_gguf_value *v)
{
	pccx_gguf_array *a = &v->v.arr;
	size_t start = ps->pos;
	uint32_t sz;
	int rc;

	/* Walk the whole array first, so nothing is allocated for elements that do not exist. */
	rc = skip_array(ps, et, n, depth);
	if (rc)
		return rc;
	ps->pos = start;
	v->type = PCCX_GGUF_ARRAY;
	memset(a, 0, sizeof(*a));
	a->elem_type = et;
	a->n = n;
	if (n == 0)
		return PCCX_OK;
	if (et == PCCX_GGUF_STRING) {
		pccx_gguf_str *strs = arena(ps, n, sizeof(*strs));

		if (!strs)
			return nomem(ps);
		for (uint64_t i = 0; i < n; i++) {
			const uint8_t *s;
			uint64_t len;

			rc = rd_str(ps, &s, &len, "string element");
			if (rc)
				return rc;
			strs[i].s = pccx__modelfile_arena_strndup(&ps->g->arena, (const char *)s,
							      (size_t)len);
			strs[i].len = len;
			if (!strs[i].s)
				return nomem(ps);
		}
		a->strs = strs;
		return PCCX_OK;
	}
	if (et == PCCX_GGUF_ARRAY) {
		pccx_gguf_value *items = arena(ps, n, sizeof(*items));

		if (!items)
			return nomem(ps);
		for (uint64_t i = 0; i < n; i++) {
			rc = build_value(ps, PCCX_GGUF_ARRAY, depth + 1, &items[i]);
			if (rc)
				return rc;
		}
		a->items = items;
		return PCCX_OK;
	}
	sz = pccx__gguf_scalar_size(et);
	{
		void *data = arena(ps, n, sz);
		const uint8_t *p = ps->p + ps->pos;

		if (!data)
			return nomem(ps);
		for (uint64_t i = 0; i < n; i++, p += sz) {
			pccx_gguf_value e;

			scalar_from(et, p, &e);
			switch (et) {
			case PCCX_GGUF_UINT8:
			case PCCX_GGUF_BOOL:
				((uint8_t *)data)[i] = p[0];
				break;
			case PCCX_GGUF_INT8:
				((int8_t *)data)[i] = (int8_t)e.v.i;
				break;
			case PCCX_GGUF_UINT16:
				((uint16_t *)data)[i] = (uint16_t)e.v.u;
				break;
			case PCCX_GGUF_INT16:
				((int16_t *)data)[i] = (int16_t)e.v.i;
				break;
			case PCCX_GGUF_UINT32:
				((uint32_t *)data)[i] = (uint32_t)e.v.u;
				break;
			case PCCX_GGUF_INT32:
				((int32_t *)data)[i] = (int32_t)e.v.i;
				break;
			case PCCX_GGUF_FLOAT32:
				((float *)data)[i] = (float)e.v.f;
				break;
			case PCCX_GGUF_UINT64:
				((uint64_t *)data)[i] = e.v.u;
				break;
			case PCCX_GGUF_INT64:
				((int64_t *)data)[i] = e.v.i;
				break;
			case PCCX_GGUF_FLOAT64:
				((double *)data)[i] = e.v.f;
				break;
			}
		}
		ps->pos += (size_t)(n * sz);
		a->data = data;
	}
	return PCCX_OK;
}

static int build_value(struct parser *ps, uint32_t type, unsigned depth, pccx_gguf_value *v)
{
	const uint8_t *s;
	uint64_t len, n;
	uint32_t sz, et;
	int rc;

	memset(v, 0, sizeof(*v));
	v->type = type;
	if (type == PCCX_GGUF_STRING) {
		rc = rd_str(ps, &s, &len, "string value");
		if (rc)
			return rc;
		v->v.str.s = pccx__modelfile_arena_strndup(&ps->g->arena, (const char *)s, (size_t)len);
		v->v.str.len = len;
		return v->v.str.s ? PCCX_OK : nomem(ps);
	}
	if (type == PCCX_GGUF_ARRAY) {
		rc = array_header(ps, depth, &et, &n);
		if (rc)
			return rc;
		return build_array(ps, et, n, depth, v);
	}
	sz = pccx__gguf_scalar_size(type);
	if (sz == 0)
		return perr(ps, PCCX_ERR_FORMAT, "unknown value type %" PRIu32 " at offset %zu",
			    type, ps->pos - 4);
	rc = need(ps, sz, pccx_gguf_type_name(type));
	if (rc)
		return rc;
	if (type == PCCX_GGUF_BOOL) {
		rc = check_bools(ps, ps->p + ps->pos, 1);
		if (rc)
			return rc;
	}
	scalar_from(type, ps->p + ps->pos, v);
	ps->pos += sz;
	return PCCX_OK;
}

/* Grow an array of `*cap` elements of `size` bytes to hold at least `want`. */
static int grow(void **arr, uint64_t *cap, uint64_t want, size_t size)
{
	uint64_t ncap = *cap ? *cap : 16;
	void *p;

	if (want <= *cap)
		return PCCX_OK;
	while (ncap < want)
		ncap *= 2;
	if (ncap > SIZE_MAX / size)
		return PCCX_ERR_NOMEM;
	p = realloc(*arr, (size_t)ncap * size);
	if (!p)
		return PCCX_ERR_NOMEM;
	*arr = p;
	*cap = ncap;
	return PCCX_OK;
}

static int parse_kvs(struct parser *ps, uint64_t n_kv)
{
	pccx_gguf *g = ps->g;
	uint64_t cap = 0;
	int rc;

	for (uint64_t i = 0; i < n_kv; i++) {
		struct gguf_kv *kv;
		const uint8_t *s;
		const char *prob;
		uint64_t len;
		uint32_t type;

		set_ctx(ps, "key #%" PRIu64, i);
		rc = rd_str(ps, &s, &len, "key");
		if (rc)
			return rc;
		prob = pccx__gguf_name_problem((const char *)s, len, PCCX_GGUF_MAX_KEY);
		if (prob) {
			if (len > PCCX_GGUF_MAX_KEY)
				return perr(ps, PCCX_ERR_FORMAT,
					    "key of %" PRIu64 " bytes exceeds %u",
					    len, PCCX_GGUF_MAX_KEY);
			return perr(ps, PCCX_ERR_FORMAT, "key %s", prob);
		}
		if (grow((void **)&g->kv, &cap, i + 1, sizeof(*g->kv)))
			return nomem(ps);
		kv = &g->kv[i];
		kv->key = pccx__modelfile_arena_strndup(&g->arena, (const char *)s, (size_t)len);
		if (!kv->key)
			return nomem(ps);
		g->n_kv = i + 1;
		memset(&kv->val, 0, sizeof(kv->val));
		set_ctx(ps, "key '%.100s%s'", kv->key, len > 100 ? "..." : "");
		rc = rd_u32(ps, &type, "value type");
		if (rc)
			return rc;
		if (type >= PCCX_GGUF_TYPE_COUNT)
			return perr(ps, PCCX_ERR_FORMAT,
				    "unknown value type %" PRIu32 " at offset %zu",
				    type, ps->pos - 4);
		rc = build_value(ps, type, 0, &kv->val);
		if (rc)
			return rc;
	}
	ps->ctx[0] = '\0';
	rc = pccx__modelfile_index_init(&g->kv_index, (size_t)g->n_kv);
	if (rc)
		return nomem(ps);
	for (uint64_t i = 0; i < g->n_kv; i++) {
		uint32_t dup;

		if (!pccx__modelfile_index_add(&g->kv_index, g->kv[i].key, (uint32_t)i, &dup)) {
			set_ctx(ps, "key '%.100s'", g->kv[i].key);
			return perr(ps, PCCX_ERR_FORMAT,
				    "duplicate key (entries #%" PRIu32 " and #%" PRIu64 ")",
				    dup, i);
		}
	}
	return PCCX_OK;
}

static int parse_alignment(struct parser *ps)
{
	pccx_gguf *g = ps->g;
	const pccx_gguf_value *v = pccx_gguf_find(g, "general.alignment");

	g->alignment = PCCX_GGUF_DEFAULT_ALIGNMENT;
	if (!v)
		return PCCX_OK;
	set_ctx(ps, "key 'general.alignment'");
	if (v->type != PCCX_GGUF_UINT32)
		return perr(ps, PCCX_ERR_FORMAT, "type %s, expected uint32",
			    pccx_gguf_type_name(v->type));
	if (!pccx_modelfile_is_pow2(v->v.u))
		return perr(ps, PCCX_ERR_FORMAT, "alignment %" PRIu64 " is not a power of two",
			    v->v.u);
	g->alignment = v->v.u;
	ps->ctx[0] = '\0';
	return PCCX_OK;
}

static int parse_tensor(struct parser *ps, uint64_t i, pccx_gguf_tensor *t)
{
	pccx_gguf *g = ps->g;
	const uint8_t *s;
	const char *prob, *tname;
	uint64_t len, n_elems = 1, nblocks;
	uint32_t blk;
	int rc;

	memset(t, 0, sizeof(*t));
	set_ctx(ps, "tensor #%" PRIu64, i);
	rc = rd_str(ps, &s, &len, "tensor name");
	if (rc)
		return rc;
	prob = pccx__gguf_name_problem((const char *)s, len, PCCX_GGUF_MAX_NAME);
	if (prob) {
		if (len > PCCX_GGUF_MAX_NAME)
			return perr(ps, PCCX_ERR_FORMAT,
				    "name of %" PRIu64 " bytes exceeds the limit of %u",
				    len, PCCX_GGUF_MAX_NAME);
		return perr(ps, PCCX_ERR_FORMAT, "name %s", prob);
	}
	t->name = pccx__modelfile_arena_strndup(&g->arena, (const char *)s, (size_t)len);
	if (!t->name)
		return nomem(ps);
	set_ctx(ps, "tensor '%s'", t->name);
	rc = rd_u32(ps, &t->n_dims, "n_dims");
	if (rc)
		return rc;
	if (t->n_dims == 0 || t->n_dims > PCCX_GGUF_MAX_DIMS)
		return perr(ps, PCCX_ERR_FORMAT, "n_dims %" PRIu32 " is not in 1..%u", t->n_dims,
			    PCCX_GGUF_MAX_DIMS);
	for (uint32_t k = 0; k < PCCX_GGUF_MAX_DIMS; k++)
		t->ne[k] = 1;
	for (uint32_t k = 0; k < t->n_dims; k++) {
		rc = rd_u64(ps, &t->ne[k], "dimension");
		if (rc)
			return rc;
		if (t->ne[k] == 0)
			return perr(ps, PCCX_ERR_FORMAT, "dimension %" PRIu32 " is 0", k);
		if (pccx_modelfile_mul_ovf(n_elems, t->ne[k], &n_elems) || n_elems > (uint64_t)INT64_MAX)
			return perr(ps, PCCX_ERR_FORMAT,
				    "element count overflows 2^63 - 1 at dimension %" PRIu32
				    " (%" PRIu64 ")", k, t->ne[k]);
	}
	t->n_elems = n_elems;
	rc = rd_u32(ps, &t->type, "ggml type");
	if (rc)
		return rc;
	tname = pccx_ggml_type_name(t->type);
	if (!tname)
		return perr(ps, PCCX_ERR_FORMAT, "unknown ggml type %" PRIu32, t->type);
	blk = pccx_ggml_block_elems(t->type);
	if (t->ne[0] % blk)
		return perr(ps, PCCX_ERR_FORMAT,
			    "row length %" PRIu64 " is not a multiple of the %s block of %" PRIu32,
			    t->ne[0], tname, blk);
	nblocks = n_elems / blk;
	if (pccx_modelfile_mul_ovf(nblocks, pccx_ggml_block_bytes(t->type), &t->nbytes))
		return perr(ps, PCCX_ERR_FORMAT, "byte size overflows 64 bits");
	rc = rd_u64(ps, &t->offset, "offset");
	if (rc)
		return rc;
	if (t->offset % g->alignment)
		return perr(ps, PCCX_ERR_FORMAT,
			    "data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
			    t->offset, g->alignment);
	return PCCX_OK;
}

static int cmp_by_offset(const void *a, const void *b)
{
	const pccx_gguf_tensor *x = *(const pccx_gguf_tensor *const *)a;
	const pccx_gguf_tensor *y = *(const pccx_gguf_tensor *const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int place_tensors(struct parser *ps)
{
	pccx_gguf *g = ps->g;
	const pccx_gguf_tensor **order;
	uint64_t data_size;
	int rc = PCCX_OK;

	ps->ctx[0] = '\0';
	/* The data section starts at the next multiple of the alignment after the infos. */
	if (pccx_modelfile_add_ovf(ps->pos, g->alignment - 1, &g->data_offset))
		return perr(ps, PCCX_ERR_FORMAT, "alignment %" PRIu64 " overflows the data offset",
			    g->alignment);
	g->data_offset &= ~(g->alignment - 1);
	if (g->n_tensors == 0)
		return PCCX_OK;
	if (g->data_offset > ps->size)
		return perr(ps, PCCX_ERR_FORMAT,
			    "truncated: data section starts at offset %" PRIu64 " beyond the end "
			    "of the file (%zu bytes)",
			    g->data_offset, ps->size);
	data_size = ps->size - g->data_offset;
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		pccx_gguf_tensor *t = &g->tensors[i];
		uint64_t end;

		if (pccx_modelfile_add_ovf(t->offset, t->nbytes, &end) || end > data_size) {
			set_ctx(ps, "tensor '%s'", t->name);
			return perr(ps, PCCX_ERR_FORMAT,
				    "data [%" PRIu64 ", +%" PRIu64 ") extends beyond the end of "
				    "the file (data section holds %" PRIu64 " bytes)",
				    t->offset, t->nbytes, data_size);
		}
		t->data = ps->p + g->data_offset + t->offset;
	}
	order = malloc((size_t)g->n_tensors * sizeof(*order));
	if (!order)
		return nomem(ps);
	for (uint64_t i = 0; i < g->n_tensors; i++)
		order[i] = &g->tensors[i];
	qsort(order, (size_t)g->n_tensors, sizeof(*order), cmp_by_offset);
	for (uint64_t i = 1; i < g->n_tensors; i++) {
		const pccx_gguf_tensor *a = order[i - 1], *b = order[i];

		if (a->offset + a->nbytes > b->offset) {
			set_ctx(ps, "tensor '%s'", b->name);
			rc = perr(ps, PCCX_ERR_FORMAT,
				  "data at offset %" PRIu64 " overlaps tensor '%s' [%" PRIu64
				  ", %" PRIu64 ")",
				  b->offset, a->name, a->offset, a->offset + a->nbytes);
			break;
		}
	}
	free(order);
	return rc;
}

static int parse_tensors(struct parser *ps, uint64_t n_tensors)
{
	pccx_gguf *g = ps->g;
	uint64_t cap = 0;
	int rc;

	for (uint64_t i = 0; i < n_tensors; i++) {
		if (grow((void **)&g->tensors, &cap, i + 1, sizeof(*g->tensors)))
			return nomem(ps);
		rc = parse_tensor(ps, i, &g->tensors[i]);
		if (rc)
			return rc;
		g->n_tensors = i + 1;
	}
	ps->ctx[0] = '\0';
	rc = pccx__modelfile_index_init(&g->tensor_index, (size_t)g->n_tensors);
	if (rc)
		return nomem(ps);
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		uint32_t dup;

		if (!pccx__modelfile_index_add(&g->tensor_index, g->tensors[i].name, (uint32_t)i, &dup)) {
			set_ctx(ps, "tensor '%s'", g->tensors[i].name);
			return perr(ps, PCCX_ERR_FORMAT,
				    "duplicate tensor name (entries #%" PRIu32 " and #%" PRIu64 ")",
				    dup, i);
		}
	}
	return place_tensors(ps);
}

static int parse(struct parser *ps)
{
	pccx_gguf *g = ps->g;
	uint64_t n_tensors, n_kv, rest, need_min;
	uint32_t version;
	int rc;

	if (ps->size < 4 || memcmp(ps->p, PCCX_GGUF_MAGIC, 4) != 0) {
		if (ps->size < 4)
			return perr(ps, PCCX_ERR_FORMAT, "truncated: %zu bytes, not a GGUF file",
				    ps->size);
		return perr(ps, PCCX_ERR_FORMAT,
			    "bad magic %02x %02x %02x %02x (expected \"GGUF\"), not a GGUF file",
			    ps->p[0], ps->p[1], ps->p[2], ps->p[3]);
	}
	ps->pos = 4;
	rc = rd_u32(ps, &version, "version");
	if (rc)
		return rc;
	if (version != 2 && version != 3) {
		uint32_t sw = __builtin_bswap32(version);

		if (sw == 2 || sw == 3)
			return perr(ps, PCCX_ERR_UNSUPPORTED,
				    "big-endian GGUF (version word 0x%08" PRIx32 ") is not "
				    "supported", version);
		return perr(ps, PCCX_ERR_UNSUPPORTED,
			    "unsupported GGUF version %" PRIu32 " (2 and 3 are read)",
			    version);
	}
	g->version = version;
	rc = rd_u64(ps, &n_tensors, "tensor count");
	if (!rc)
		rc = rd_u64(ps, &n_kv, "metadata count");
	if (rc)
		return rc;
	rest = left(ps);
	if (n_kv > rest / MIN_KV_BYTES)
		return perr(ps, PCCX_ERR_FORMAT,
			    "metadata count %" PRIu64 " cannot fit in the %" PRIu64 " bytes after "
			    "the header",
			    n_kv, rest);
	if (n_tensors > rest / MIN_TENSOR_BYTES)
		return perr(ps, PCCX_ERR_FORMAT,
			    "tensor count %" PRIu64 " cannot fit in the %" PRIu64 " bytes after "
			    "the header",
			    n_tensors, rest);
	need_min = n_kv * MIN_KV_BYTES + n_tensors * MIN_TENSOR_BYTES;
	if (need_min > rest || n_kv > UINT32_MAX - 1 || n_tensors > UINT32_MAX - 1)
		return perr(ps, PCCX_ERR_FORMAT,
			    "%" PRIu64 " keys and %" PRIu64 " tensors cannot fit in the %" PRIu64
			    " bytes after the header",
			    n_kv, n_tensors, rest);
	rc = parse_kvs(ps, n_kv);
	if (!rc)
		rc = parse_alignment(ps);
	if (!rc)
		rc = parse_tensors(ps, n_tensors);
	return rc;
}

static int open_common(pccx_gguf **out, pccx_gguf *g, pccx_diag *d)
{
	struct parser ps;
	int rc;

	memset(&ps, 0, sizeof(ps));
	ps.g = g;
	ps.d = d;
	ps.p = g->map.data;
	ps.size = g->map.size;
	rc = parse(&ps);
	if (rc) {
		pccx_gguf_close(g);
		return rc;
	}
	*out = g;
	return PCCX_OK;
}

static pccx_gguf *new_gguf(const char *name)
{
	pccx_gguf *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->name = strdup(name ? name : "(memory)");
	if (!g->name) {
		free(g);
		return NULL;
	}
	g->alignment = PCCX_GGUF_DEFAULT_ALIGNMENT;
	return g;
}

int pccx_gguf_open(pccx_gguf **out, const char *path, pccx_diag *d)
{
	pccx_gguf *g;
	int rc;

	if (!out || !path)
		return pccx__fail(d, PCCX_ERR_INVALID, "pccx_gguf_open: NULL argument");
	*out = NULL;
	g = new_gguf(path);
	if (!g)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	rc = pccx__modelfile_map_file(path, &g->map, d);
	if (rc) {
		pccx_gguf_close(g);
		return rc;
	}
	return open_common(out, g, d);
}

int pccx_gguf_open_mem(pccx_gguf **out, const void *buf, size_t len, const char *name,
		       pccx_diag *d)
{
	pccx_gguf *g;

	if (!out || (!buf && len))
		return pccx__fail(d, PCCX_ERR_INVALID, "pccx_gguf_open_mem: NULL argument");
	*out = NULL;
	g = new_gguf(name);
	if (!g)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name ? name : "(memory)");
	g->map.data = buf;
	g->map.size = len;
	return open_common(out, g, d);
}

void pccx_gguf_close(pccx_gguf *g)
{
	if (!g)
		return;
	pccx__modelfile_unmap(&g->map);
	pccx__modelfile_index_free(&g->kv_index);
	pccx__modelfile_index_free(&g->tensor_index);
	pccx__modelfile_arena_free(&g->arena);
	free(g->kv);
	free(g->tensors);
	free(g->name);
	free(g);
}

/* ------------------------------------------------------------------------------------- */
/* Accessors                                                                              */

const char *pccx_gguf_name(const pccx_gguf *g)
{
	return g->name;
}

uint32_t pccx_gguf_version(const pccx_gguf *g)
{
	return g->version;
}

uint64_t pccx_gguf_alignment(const pccx_gguf *g)
{
	return g->alignment;
}

uint64_t pccx_gguf_data_offset(const pccx_gguf *g)
{
	return g->data_offset;
}

uint64_t pccx_gguf_n_kv(const pccx_gguf *g)
{
	return g->n_kv;
}

const char *pccx_gguf_kv_key(const pccx_gguf *g, uint64_t i)
{
	return i < g->n_kv ? g->kv[i].key : NULL;
}

const pccx_gguf_value *pccx_gguf_kv_value(const pccx_gguf *g, uint64_t i)
{
	return i < g->n_kv ? &g->kv[i].val : NULL;
}

const pccx_gguf_value *pccx_gguf_find(const pccx_gguf *g, const char *key)
{
	int64_t i = pccx__modelfile_index_find(&g->kv_index, key);

	return i < 0 ? NULL : &g->kv[i].val;
}

uint64_t pccx_gguf_n_tensors(const pccx_gguf *g)
{
	return g->n_tensors;
}

const pccx_gguf_tensor *pccx_gguf_tensor_at(const pccx_gguf *g, uint64_t i)
{
	return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const pccx_gguf_tensor *pccx_gguf_find_tensor(const pccx_gguf *g, const char *name)
{
	int64_t i = pccx__modelfile_index_find(&g->tensor_index, name);

	return i < 0 ? NULL : &g->tensors[i];
}

int pccx_gguf_get_tensor(const pccx_gguf *g, const char *name, const pccx_gguf_tensor **out,
			 pccx_diag *d)
{
	const pccx_gguf_tensor *t = pccx_gguf_find_tensor(g, name);

	*out = t;
	if (!t)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: tensor '%s': not in the file", g->name,
				  name);
	return PCCX_OK;
}

static int lookup(const pccx_gguf *g, const char *key, const pccx_gguf_value **v, pccx_diag *d)
{
	*v = pccx_gguf_find(g, key);
	if (!*v)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "%s: key '%s': not in the file",
				  g->name, key);
	return PCCX_OK;
}

static bool is_unsigned(uint32_t t)
{
	return t == PCCX_GGUF_UINT8 || t == PCCX_GGUF_UINT16 || t == PCCX_GGUF_UINT32 ||
	       t == PCCX_GGUF_UINT64;
}

static bool is_signed(uint32_t t)
{
	return t == PCCX_GGUF_INT8 || t == PCCX_GGUF_INT16 || t == PCCX_GGUF_INT32 ||
	       t == PCCX_GGUF_INT64;
}

static int type_error(const pccx_gguf *g, const char *key, uint32_t have, const char *want,
		      pccx_diag *d)
{
	return pccx__fail(d, PCCX_ERR_FORMAT, "%s: key '%s': type %s, expected %s", g->name, key,
			  pccx_gguf_type_name(have), want);
}

/* Any integer value as a sign flag + magnitude-free pair: unsigned in *u, or signed in *s. */
static int get_integer(const pccx_gguf *g, const char *key, int64_t lo, uint64_t hi,
		       uint64_t *u, int64_t *s, pccx_diag *d)
{
	const pccx_gguf_value *v;
	int rc = lookup(g, key, &v, d);

	if (rc)
		return rc;
	if (is_unsigned(v->type)) {
		if (v->v.u > hi)
			return pccx__fail(d, PCCX_ERR_RANGE,
					  "%s: key '%s': value %" PRIu64 " exceeds %" PRIu64,
					  g->name, key, v->v.u, hi);
		*u = v->v.u;
		*s = (int64_t)(v->v.u > (uint64_t)INT64_MAX ? INT64_MAX : v->v.u);
		return PCCX_OK;
	}
	if (is_signed(v->type)) {
		if (v->v.i < lo || (v->v.i > 0 && (uint64_t)v->v.i > hi))
			return pccx__fail(d, PCCX_ERR_RANGE,
					  "%s: key '%s': value %" PRId64 " is out of range [%" PRId64
					  ", %" PRIu64 "]",
					  g->name, key, v->v.i, lo, hi);
		*s = v->v.i;
		*u = (uint64_t)v->v.i;
		return PCCX_OK;
	}
	return type_error(g, key, v->type, "an integer", d);
}

int pccx_gguf_get_u32(const pccx_gguf *g, const char *key, uint32_t *out, pccx_diag *d)
{
	uint64_t u;
	int64_t s;
	int rc = get_integer(g, key, 0, UINT32_MAX, &u, &s, d);

	if (!rc)
		*out = (uint32_t)u;
	return rc;
}

int pccx_gguf_get_i32(const pccx_gguf *g, const char *key, int32_t *out, pccx_diag *d)
{
	uint64_t u;
	int64_t s;
	int rc = get_integer(g, key, INT32_MIN, INT32_MAX, &u, &s, d);

	if (!rc)
		*out = (int32_t)s;
	return rc;
}

int pccx_gguf_get_u64(const pccx_gguf *g, const char *key, uint64_t *out, pccx_diag *d)
{
	uint64_t u;
	int64_t s;
	int rc = get_integer(g, key, 0, UINT64_MAX, &u, &s, d);

	if (!rc)
		*out = u;
	return rc;
}

int pccx_gguf_get_i64(const pccx_gguf *g, const char *key, int64_t *out, pccx_diag *d)
{
	uint64_t u;
	int64_t s;
	int rc = get_integer(g, key, INT64_MIN, INT64_MAX, &u, &s, d);

	if (!rc)
		*out = s;
	return rc;
}

int pccx_gguf_get_f64(const pccx_gguf *g, const char *key, double *out, pccx_diag *d)
{
	const pccx_gguf_value *v;
	int rc = lookup(g, key, &v, d);

	if (rc)
		return rc;
	if (v->type != PCCX_GGUF_FLOAT32 && v->type != PCCX_GGUF_FLOAT64)
		return type_error(g, key, v->type, "float32 or float64", d);
	*out = v->v.f;
	return PCCX_OK;
}

int pccx_gguf_get_f32(const pccx_gguf *g, const char *key, float *out, pccx_diag *d)
{
	double f;
	int rc = pccx_gguf_get_f64(g, key, &f, d);

	if (!rc)
		*out = (float)f;
	return rc;
}

int pccx_gguf_get_bool(const pccx_gguf *g, const char *key, bool *out, pccx_diag *d)
{
	const pccx_gguf_value *v;
	int rc = lookup(g, key, &v, d);

	if (rc)
		return rc;
	if (v->type != PCCX_GGUF_BOOL)
		return type_error(g, key, v->type, "bool", d);
	*out = v->v.b;
	return PCCX_OK;
}

int pccx_gguf_get_str(const pccx_gguf *g, const char *key, const char **out, uint64_t *len,
		      pccx_diag *d)
{
	const pccx_gguf_value *v;
	int rc = lookup(g, key, &v, d);

	if (rc)
		return rc;
	if (v->type != PCCX_GGUF_STRING)
		return type_error(g, key, v->type, "string", d);
	*out = v->v.str.s;
	if (len)
		*len = v->v.str.len;
	return PCCX_OK;
}

int pccx_gguf_get_array(const pccx_gguf *g, const char *key, uint32_t elem_type,
			const pccx_gguf_array **out, pccx_diag *d)
{
	const pccx_gguf_value *v;
	int rc = lookup(g, key, &v, d);

	if (rc)
		return rc;
	if (v->type != PCCX_GGUF_ARRAY) {
		char want[40];

		if (elem_type < PCCX_GGUF_TYPE_COUNT)
			snprintf(want, sizeof(want), "array of %s", pccx_gguf_type_name(elem_type));
		else
			snprintf(want, sizeof(want), "array");
		return type_error(g, key, v->type, want, d);
	}
	if (elem_type < PCCX_GGUF_TYPE_COUNT && v->v.arr.elem_type != elem_type)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "%s: key '%s': array of %s, expected array of %s",
				  g->name, key, pccx_gguf_type_name(v->v.arr.elem_type),
				  pccx_gguf_type_name(elem_type));
	*out = &v->v.arr;
	return PCCX_OK;
}

int pccx_gguf_get_str_array(const pccx_gguf *g, const char *key, const pccx_gguf_str **items,
			    uint64_t *n, pccx_diag *d)
{
	const pccx_gguf_array *a;
	int rc = pccx_gguf_get_array(g, key, PCCX_GGUF_STRING, &a, d);

	if (rc)
		return rc;
	*items = a->strs;
	*n = a->n;
	return PCCX_OK;
}

int pccx_gguf_get_f32_array(const pccx_gguf *g, const char *key, const float **items,
			    uint64_t *n, pccx_diag *d)
{
	const pccx_gguf_array *a;
	int rc = pccx_gguf_get_array(g, key, PCCX_GGUF_FLOAT32, &a, d);

	if (rc)
		return rc;
	*items = a->data;
	*n = a->n;
	return PCCX_OK;
}

int pccx_gguf_get_i32_array(const pccx_gguf *g, const char *key, const int32_t **items,
			    uint64_t *n, pccx_diag *d)
{
	const pccx_gguf_array *a;
	int rc = pccx_gguf_get_array(g, key, PCCX_GGUF_INT32, &a, d);

	if (rc)
		return rc;
	*items = a->data;
	*n = a->n;
	return PCCX_OK;
}

int pccx_gguf_array_i64(const pccx_gguf_array *a, uint64_t i, int64_t *out)
{
	if (!a || i >= a->n)
		return PCCX_ERR_RANGE;
	switch (a->elem_type) {
	case PCCX_GGUF_UINT8:
	case PCCX_GGUF_BOOL:
		*out = ((const uint8_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_INT8:
		*out = ((const int8_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_UINT16:
		*out = ((const uint16_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_INT16:
		*out = ((const int16_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_UINT32:
		*out = ((const uint32_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_INT32:
		*out = ((const int32_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_INT64:
		*out = ((const int64_t *)a->data)[i];
		return PCCX_OK;
	case PCCX_GGUF_UINT64:
		if (((const uint64_t *)a->data)[i] > (uint64_t)INT64_MAX)
			return PCCX_ERR_RANGE;
		*out = (int64_t)((const uint64_t *)a->data)[i];
		return PCCX_OK;
	}
	return PCCX_ERR_FORMAT;
}

int pccx_gguf_decode_rows(const pccx_gguf *g, const pccx_gguf_tensor *t, uint64_t row,
			  uint64_t n_rows, float *dst, pccx_diag *d)
{
	uint64_t rows = t->n_elems / t->ne[0], row_bytes, n;
	char what[PCCX_GGUF_MAX_NAME + 64];
	int rc;

	if (row > rows || n_rows > rows - row)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: tensor '%s': rows [%" PRIu64 ", %" PRIu64
				  ") out of range (%" PRIu64 " rows)",
				  g->name, t->name, row, row + n_rows, rows);
	rc = pccx_ggml_nbytes(t->type, t->ne[0], &row_bytes);
	if (rc)
		return pccx__fail(d, rc, "%s: tensor '%s': bad row size", g->name, t->name);
	n = n_rows * t->ne[0];
	snprintf(what, sizeof(what), "%s: tensor '%s'", g->name, t->name);
	return pccx_ggml_decode(t->type, t->data + row * row_bytes, (size_t)(n_rows * row_bytes),
				dst, n, what, d);
}

int pccx_gguf_tensor_to_q4(const pccx_gguf *g, const pccx_gguf_tensor *t, uint8_t *nibbles,
			   uint16_t *scales, pccx_q4_error *err, pccx_diag *d)
{
	char what[PCCX_GGUF_MAX_NAME + 64];

	snprintf(what, sizeof(what), "%s: tensor '%s'", g->name, t->name);
	if (t->ne[0] % 32)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: row length %" PRIu64 " is not a multiple of the Q4 block of "
				  "32",
				  what, t->ne[0]);
	return pccx_q4_import(t->type, t->data, (size_t)t->nbytes, t->n_elems, nibbles, scales, err,
			      what, d);
}

int pccx__gguf_read(const pccx_gguf *g, const uint8_t *p, size_t len, uint8_t *buf,
		    const uint8_t **out, pccx_diag *d)
{
	return pccx__modelfile_read(&g->map, g->name, p, len, buf, out, d);
}

void pccx__gguf_will_read(const pccx_gguf *g, const uint8_t *p, uint64_t len)
{
	pccx__modelfile_will_read(&g->map, p, len);
}
