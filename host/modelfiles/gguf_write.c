/* SPDX-License-Identifier: MIT */
/*
 * GGUF writer. Metadata is serialised as it is added; tensors are referenced and streamed
 * at write time, each at an offset that is a multiple of the alignment. The writer
 * refuses everything the reader would refuse, so what it writes always reads back.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "gguf.h"
#include "modelfile_util.h"

_Static_assert(sizeof(bool) == 1, "bool arrays are written byte by byte");

struct wkv {
	char *key;
	size_t val_off;		/* offset of the value bytes in meta */
	uint32_t type;
};

struct wtensor {
	char *name;
	uint32_t type;
	uint32_t n_dims;
	uint64_t ne[PCCX_GGUF_MAX_DIMS];
	const void *data;
	uint64_t nbytes;
	uint64_t offset;
};

struct pccx_gguf_writer {
	uint32_t version;
	uint32_t alignment;
	pccx_modelfile_sink meta;	/* serialised key/value records */
	struct wkv *kv;
	size_t n_kv, cap_kv;
	struct wtensor *t;
	size_t n_t, cap_t;
};

int pccx_gguf_writer_new(pccx_gguf_writer **out, pccx_diag *d)
{
	pccx_gguf_writer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: out of memory");
	w->version = 3;
	w->alignment = PCCX_GGUF_DEFAULT_ALIGNMENT;
	pccx__modelfile_sink_mem(&w->meta);
	*out = w;
	return PCCX_OK;
}

void pccx_gguf_writer_free(pccx_gguf_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_kv; i++)
		free(w->kv[i].key);
	for (size_t i = 0; i < w->n_t; i++)
		free(w->t[i].name);
	free(w->kv);
	free(w->t);
	pccx__modelfile_sink_free(&w->meta);
	free(w);
}

int pccx_gguf_writer_set_version(pccx_gguf_writer *w, uint32_t version, pccx_diag *d)
{
	if (version != 2 && version != 3)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "GGUF writer: version %" PRIu32 " (2 or 3 only)",
				  version);
	w->version = version;
	return PCCX_OK;
}

static struct wkv *find_kv(pccx_gguf_writer *w, const char *key)
{
	for (size_t i = 0; i < w->n_kv; i++)
		if (strcmp(w->kv[i].key, key) == 0)
			return &w->kv[i];
	return NULL;
}

static void put_u32(pccx_modelfile_sink *s, uint32_t v)
{
	uint8_t b[4];

	pccx_modelfile_put32(b, v);
	pccx__modelfile_sink_write(s, b, 4);
}

static void put_u64(pccx_modelfile_sink *s, uint64_t v)
{
	uint8_t b[8];

	pccx_modelfile_put64(b, v);
	pccx__modelfile_sink_write(s, b, 8);
}

static void put_str(pccx_modelfile_sink *s, const char *p, uint64_t len)
{
	put_u64(s, len);
	pccx__modelfile_sink_write(s, p, (size_t)len);
}

/* One scalar from a native C value pointer `p` of GGUF type `type`. */
static void put_scalar(pccx_modelfile_sink *s, uint32_t type, const void *p)
{
	uint8_t b[8];
	uint32_t u32;
	uint64_t u64;

	switch (type) {
	case PCCX_GGUF_UINT8:
	case PCCX_GGUF_INT8:
		b[0] = *(const uint8_t *)p;
		pccx__modelfile_sink_write(s, b, 1);
		break;
	case PCCX_GGUF_BOOL:
		b[0] = *(const uint8_t *)p != 0;
		pccx__modelfile_sink_write(s, b, 1);
		break;
	case PCCX_GGUF_UINT16:
	case PCCX_GGUF_INT16:
		pccx_modelfile_put16(b, *(const uint16_t *)p);
		pccx__modelfile_sink_write(s, b, 2);
		break;
	case PCCX_GGUF_UINT32:
	case PCCX_GGUF_INT32:
	case PCCX_GGUF_FLOAT32:
		memcpy(&u32, p, 4);
		put_u32(s, u32);
		break;
	case PCCX_GGUF_UINT64:
	case PCCX_GGUF_INT64:
	case PCCX_GGUF_FLOAT64:
		memcpy(&u64, p, 8);
		put_u64(s, u64);
		break;
	}
}

static int check_value(const char *key, const pccx_gguf_value *v, unsigned depth, pccx_diag *d)
{
	const pccx_gguf_array *a;

	if (v->type >= PCCX_GGUF_TYPE_COUNT)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: key '%s': unknown value type %" PRIu32,
				  key, v->type);
	if (v->type == PCCX_GGUF_STRING && !v->v.str.s && v->v.str.len)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%s': NULL string", key);
	if (v->type != PCCX_GGUF_ARRAY)
		return PCCX_OK;
	a = &v->v.arr;
	if (depth + 1 > PCCX_GGUF_MAX_DEPTH)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "GGUF writer: key '%s': arrays nested deeper than %u levels",
				  key, PCCX_GGUF_MAX_DEPTH);
	if (a->elem_type >= PCCX_GGUF_TYPE_COUNT)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: key '%s': unknown array element type %" PRIu32,
				  key, a->elem_type);
	if (a->n == 0)
		return PCCX_OK;
	if (a->elem_type == PCCX_GGUF_STRING) {
		if (!a->strs)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: key '%s': NULL string array", key);
		for (uint64_t i = 0; i < a->n; i++)
			if (!a->strs[i].s && a->strs[i].len)
				return pccx__fail(d, PCCX_ERR_INVALID,
						  "GGUF writer: key '%s': element %" PRIu64 " is "
						  "NULL",
						  key, i);
		return PCCX_OK;
	}
	if (a->elem_type == PCCX_GGUF_ARRAY) {
		if (!a->items)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: key '%s': NULL nested array", key);
		for (uint64_t i = 0; i < a->n; i++) {
			int rc;

			if (a->items[i].type != PCCX_GGUF_ARRAY)
				return pccx__fail(d, PCCX_ERR_INVALID,
						  "GGUF writer: key '%s': element %" PRIu64 " of an "
						  "array of arrays has type %s",
						  key, i, pccx_gguf_type_name(a->items[i].type) ?
						  pccx_gguf_type_name(a->items[i].type) : "unknown");
			rc = check_value(key, &a->items[i], depth + 1, d);
			if (rc)
				return rc;
		}
		return PCCX_OK;
	}
	if (!a->data)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%s': NULL array data",
				  key);
	return PCCX_OK;
}

static void put_value(pccx_modelfile_sink *s, const pccx_gguf_value *v)
{
	const pccx_gguf_array *a = &v->v.arr;
	uint32_t sz;
	uint8_t b;
	float f;

	switch (v->type) {
	case PCCX_GGUF_STRING:
		put_str(s, v->v.str.s, v->v.str.len);
		return;
	case PCCX_GGUF_BOOL:
		b = v->v.b;
		put_scalar(s, v->type, &b);
		return;
	case PCCX_GGUF_FLOAT32:
		f = (float)v->v.f;
		put_scalar(s, v->type, &f);
		return;
	case PCCX_GGUF_FLOAT64:
		put_scalar(s, v->type, &v->v.f);
		return;
	case PCCX_GGUF_ARRAY:
		break;
	default:
		/* Integers: the low bytes of the 64-bit two's complement value. */
		{
			uint8_t le[8];

			pccx_modelfile_put64(le, v->v.u);
			pccx__modelfile_sink_write(s, le, pccx__gguf_scalar_size(v->type));
		}
		return;
	}
	put_u32(s, a->elem_type);
	put_u64(s, a->n);
	if (a->elem_type == PCCX_GGUF_STRING) {
		for (uint64_t i = 0; i < a->n; i++)
			put_str(s, a->strs[i].s, a->strs[i].len);
		return;
	}
	if (a->elem_type == PCCX_GGUF_ARRAY) {
		for (uint64_t i = 0; i < a->n; i++)
			put_value(s, &a->items[i]);
		return;
	}
	sz = pccx__gguf_scalar_size(a->elem_type);
	for (uint64_t i = 0; i < a->n; i++)
		put_scalar(s, a->elem_type, (const uint8_t *)a->data + i * sz);
}

static int add_kv(pccx_gguf_writer *w, const char *key, const pccx_gguf_value *v, pccx_diag *d)
{
	const char *prob;
	struct wkv *kv;
	size_t klen;
	int rc;

	if (!key)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: NULL key");
	klen = strlen(key);
	prob = pccx__gguf_name_problem(key, klen, PCCX_GGUF_MAX_KEY);
	if (prob)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%.100s' %s", key, prob);
	if (find_kv(w, key))
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%s': set twice", key);
	rc = check_value(key, v, 0, d);
	if (rc)
		return rc;
	if (strcmp(key, "general.alignment") == 0) {
		if (v->type != PCCX_GGUF_UINT32)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: key 'general.alignment': type %s, must be "
					  "uint32",
					  pccx_gguf_type_name(v->type));
		if (!pccx_modelfile_is_pow2(v->v.u))
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: key 'general.alignment': %" PRIu64 " is not "
					  "a power of two",
					  v->v.u);
		w->alignment = (uint32_t)v->v.u;
	}
	if (w->n_kv == w->cap_kv) {
		size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
		struct wkv *nk = realloc(w->kv, cap * sizeof(*nk));

		if (!nk)
			return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: out of memory");
		w->kv = nk;
		w->cap_kv = cap;
	}
	kv = &w->kv[w->n_kv];
	kv->key = strdup(key);
	if (!kv->key)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: out of memory");
	kv->type = v->type;
	put_str(&w->meta, key, klen);
	put_u32(&w->meta, v->type);
	kv->val_off = w->meta.len;
	put_value(&w->meta, v);
	if (w->meta.status) {
		free(kv->key);
		return pccx__fail(d, w->meta.status, "GGUF writer: key '%s': out of memory", key);
	}
	w->n_kv++;
	return PCCX_OK;
}

int pccx_gguf_writer_set_alignment(pccx_gguf_writer *w, uint32_t alignment, pccx_diag *d)
{
	struct wkv *kv = find_kv(w, "general.alignment");
	pccx_gguf_value v = { .type = PCCX_GGUF_UINT32, .v.u = alignment };

	if (!pccx_modelfile_is_pow2(alignment))
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: alignment %" PRIu32 " is not a power of two",
				  alignment);
	if (kv) {
		pccx_modelfile_put32(w->meta.buf + kv->val_off, alignment);
		w->alignment = alignment;
		return PCCX_OK;
	}
	return add_kv(w, "general.alignment", &v, d);
}

#define SETTER(fn, ctype, gtype, field)                                                   \
	int pccx_gguf_writer_set_##fn(pccx_gguf_writer *w, const char *key, ctype x,      \
				      pccx_diag *d)                                       \
	{                                                                                 \
		pccx_gguf_value v;                                                        \
										          \
		memset(&v, 0, sizeof(v));                                                 \
		v.type = gtype;                                                           \
		v.v.field = x;                                                            \
		return add_kv(w, key, &v, d);                                             \
	}

SETTER(u8, uint8_t, PCCX_GGUF_UINT8, u)
SETTER(i8, int8_t, PCCX_GGUF_INT8, i)
SETTER(u16, uint16_t, PCCX_GGUF_UINT16, u)
SETTER(i16, int16_t, PCCX_GGUF_INT16, i)
SETTER(u32, uint32_t, PCCX_GGUF_UINT32, u)
SETTER(i32, int32_t, PCCX_GGUF_INT32, i)
SETTER(u64, uint64_t, PCCX_GGUF_UINT64, u)
SETTER(i64, int64_t, PCCX_GGUF_INT64, i)
SETTER(f32, float, PCCX_GGUF_FLOAT32, f)
SETTER(f64, double, PCCX_GGUF_FLOAT64, f)
SETTER(bool, bool, PCCX_GGUF_BOOL, b)

int pccx_gguf_writer_set_str(pccx_gguf_writer *w, const char *key, const char *s, pccx_diag *d)
{
	pccx_gguf_value v = { .type = PCCX_GGUF_STRING };

	if (!s)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%s': NULL string",
				  key ? key : "");
	v.v.str.s = s;
	v.v.str.len = strlen(s);
	return add_kv(w, key, &v, d);
}

int pccx_gguf_writer_set_array(pccx_gguf_writer *w, const char *key, uint32_t elem_type,
			       const void *data, uint64_t n, pccx_diag *d)
{
	pccx_gguf_value v = { .type = PCCX_GGUF_ARRAY };

	if (pccx__gguf_scalar_size(elem_type) == 0)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: key '%s': set_array takes numeric or bool elements, "
				  "not %s",
				  key ? key : "", pccx_gguf_type_name(elem_type) ?
				  pccx_gguf_type_name(elem_type) : "an unknown type");
	v.v.arr.elem_type = elem_type;
	v.v.arr.n = n;
	v.v.arr.data = data;
	return add_kv(w, key, &v, d);
}

int pccx_gguf_writer_set_str_array(pccx_gguf_writer *w, const char *key, const char *const *strs,
				   uint64_t n, pccx_diag *d)
{
	pccx_gguf_value v = { .type = PCCX_GGUF_ARRAY };
	pccx_gguf_str *items = NULL;
	int rc;

	if (n && !strs)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%s': NULL string array",
				  key ? key : "");
	if (n) {
		if (n > SIZE_MAX / sizeof(*items))
			return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: key '%s': out of memory",
					  key);
		items = malloc((size_t)n * sizeof(*items));
		if (!items)
			return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: key '%s': out of memory",
					  key);
		for (uint64_t i = 0; i < n; i++) {
			if (!strs[i]) {
				free(items);
				return pccx__fail(d, PCCX_ERR_INVALID,
						  "GGUF writer: key '%s': element %" PRIu64 " is "
						  "NULL", key, i);
			}
			items[i].s = strs[i];
			items[i].len = strlen(strs[i]);
		}
	}
	v.v.arr.elem_type = PCCX_GGUF_STRING;
	v.v.arr.n = n;
	v.v.arr.strs = items;
	rc = add_kv(w, key, &v, d);
	free(items);
	return rc;
}

int pccx_gguf_writer_set_value(pccx_gguf_writer *w, const char *key, const pccx_gguf_value *v,
			       pccx_diag *d)
{
	if (!v)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: key '%s': NULL value",
				  key ? key : "");
	return add_kv(w, key, v, d);
}

int pccx_gguf_writer_add_tensor(pccx_gguf_writer *w, const char *name, uint32_t type,
				uint32_t n_dims, const uint64_t *ne, const void *data,
				uint64_t nbytes, pccx_diag *d)
{
	struct wtensor *t;
	const char *prob;
	uint64_t n = 1, want;
	int rc;

	if (!name)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: NULL tensor name");
	prob = pccx__gguf_name_problem(name, strlen(name), PCCX_GGUF_MAX_NAME);
	if (prob)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: tensor name '%.100s' %s%s",
				  name, prob,
				  strlen(name) > PCCX_GGUF_MAX_NAME ? " (64 bytes at most)" : "");
	for (size_t i = 0; i < w->n_t; i++)
		if (strcmp(w->t[i].name, name) == 0)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: tensor '%s': added twice", name);
	if (!pccx_ggml_type_known(type))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "GGUF writer: tensor '%s': unknown ggml type %" PRIu32,
				  name, type);
	if (n_dims == 0 || n_dims > PCCX_GGUF_MAX_DIMS || !ne)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: tensor '%s': n_dims %" PRIu32 " is not in 1..%u",
				  name, n_dims, PCCX_GGUF_MAX_DIMS);
	for (uint32_t k = 0; k < n_dims; k++) {
		if (ne[k] == 0)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: tensor '%s': dimension %" PRIu32 " is 0",
					  name, k);
		if (pccx_modelfile_mul_ovf(n, ne[k], &n) || n > (uint64_t)INT64_MAX)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "GGUF writer: tensor '%s': element count overflows",
					  name);
	}
	rc = pccx_ggml_nbytes(type, ne[0], &want);
	if (rc)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: tensor '%s': row length %" PRIu64 " is not a "
				  "multiple of the %s block of %" PRIu32,
				  name, ne[0], pccx_ggml_type_name(type),
				  pccx_ggml_block_elems(type));
	rc = pccx_ggml_nbytes(type, n, &want);
	if (rc || want != nbytes)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "GGUF writer: tensor '%s': %" PRIu64 " bytes given, %s of this "
				  "shape take %" PRIu64,
				  name, nbytes, pccx_ggml_type_name(type), want);
	if (!data)
		return pccx__fail(d, PCCX_ERR_INVALID, "GGUF writer: tensor '%s': NULL data", name);
	if (w->n_t == w->cap_t) {
		size_t cap = w->cap_t ? 2 * w->cap_t : 64;
		struct wtensor *nt = realloc(w->t, cap * sizeof(*nt));

		if (!nt)
			return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: out of memory");
		w->t = nt;
		w->cap_t = cap;
	}
	t = &w->t[w->n_t];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	if (!t->name)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF writer: out of memory");
	t->type = type;
	t->n_dims = n_dims;
	for (uint32_t k = 0; k < PCCX_GGUF_MAX_DIMS; k++)
		t->ne[k] = k < n_dims ? ne[k] : 1;
	t->data = data;
	t->nbytes = nbytes;
	w->n_t++;
	return PCCX_OK;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static int emit(void *ctx, pccx_modelfile_sink *s, pccx_diag *d)
{
	pccx_gguf_writer *w = ctx;
	uint64_t off = 0, pos;

	for (size_t i = 0; i < w->n_t; i++) {
		w->t[i].offset = off;
		if (pccx_modelfile_add_ovf(off, w->t[i].nbytes, &off) || off > UINT64_MAX - w->alignment)
			return pccx__fail(d, PCCX_ERR_RANGE,
					  "GGUF writer: tensor data exceeds 2^64 bytes");
		off = align_up(off, w->alignment);
	}
	pccx__modelfile_sink_write(s, PCCX_GGUF_MAGIC, 4);
	put_u32(s, w->version);
	put_u64(s, w->n_t);
	put_u64(s, w->n_kv);
	pccx__modelfile_sink_write(s, w->meta.buf, w->meta.len);
	for (size_t i = 0; i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];

		put_str(s, t->name, strlen(t->name));
		put_u32(s, t->n_dims);
		for (uint32_t k = 0; k < t->n_dims; k++)
			put_u64(s, t->ne[k]);
		put_u32(s, t->type);
		put_u64(s, t->offset);
	}
	pos = s->written;
	pccx__modelfile_sink_zeros(s, (size_t)(align_up(pos, w->alignment) - pos));
	for (size_t i = 0; i < w->n_t && s->status == PCCX_OK; i++) {
		const struct wtensor *t = &w->t[i];
		const uint8_t *p = t->data;
		uint64_t rem = t->nbytes;

		while (rem && s->status == PCCX_OK) {
			size_t k = rem > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)rem;

			pccx__modelfile_sink_write(s, p, k);
			p += k;
			rem -= k;
		}
		pccx__modelfile_sink_zeros(s, (size_t)(align_up(t->nbytes, w->alignment) - t->nbytes));
	}
	return s->status;
}

int pccx_gguf_writer_write(pccx_gguf_writer *w, const char *path, pccx_diag *d)
{
	return pccx__modelfile_write_atomic(path, emit, w, d);
}

int pccx_gguf_writer_write_mem(pccx_gguf_writer *w, uint8_t **buf, size_t *len, pccx_diag *d)
{
	pccx_modelfile_sink s;
	int rc;

	*buf = NULL;
	*len = 0;
	pccx__modelfile_sink_mem(&s);
	rc = emit(w, &s, d);
	if (rc) {
		if (s.status)
			pccx__fail(d, rc, "GGUF writer: %s while writing to memory",
				   pccx_strerror(rc));
		pccx__modelfile_sink_free(&s);
		return rc;
	}
	*buf = s.buf;
	*len = s.len;
	return PCCX_OK;
}
