/* SPDX-License-Identifier: MIT */
/*
 * GGUF reader and writer: round trips of every value type and tensor layout, refusal of
 * each class of malformed file (made by corrupting a valid image) with its own message,
 * ggml block decoding, and Q4 import / requantisation.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "pccx/modelfile.h"
#include "pccx_num.h"

/* ------------------------------------------------------------------------------------- */
/* A valid sample file holding every value type and a few tensor types.                   */

static float t_f32[2 * 8];
static uint16_t t_f16[3 * 4 * 2];
static uint8_t t_q4[2 * 18 * 2];
static uint8_t t_q8[34 * 3];

static const uint8_t a_u8[] = { 0, 1, 255 };
static const int8_t a_i8[] = { -128, 0, 127 };
static const uint16_t a_u16[] = { 0, 65535 };
static const int16_t a_i16[] = { -32768, 32767, -1 };
static const uint32_t a_u32[] = { 0, 4000000000u };
static const int32_t a_i32[] = { INT32_MIN, -1, 0, 7, INT32_MAX };
static const uint64_t a_u64[] = { UINT64_MAX, 1 };
static const int64_t a_i64[] = { INT64_MIN, INT64_MAX };
static const float a_f32[] = { -0.0f, 1.5f, 3.25e-20f, INFINITY };
static const double a_f64[] = { 1e300, -2.5 };
static const bool a_bool[] = { true, false, true };
static const char *const a_str[] = { "<pad>", "", "h\xc3\xa9llo", "▁the" };

static void fill_tensors(void)
{
	for (int i = 0; i < 16; i++)
		t_f32[i] = (float)i * 0.5f - 3.0f;
	for (int i = 0; i < 24; i++)
		t_f16[i] = (uint16_t)(0x3c00 + i);
	for (size_t i = 0; i < sizeof(t_q4); i++)
		t_q4[i] = (uint8_t)(i * 37 + 11);
	for (size_t i = 0; i < sizeof(t_q8); i++)
		t_q8[i] = (uint8_t)(i * 91 + 5);
	/* Q4_0 / Q8_0 scales: 1.0, 0.5 ... (FP16 bits) */
	t_q4[0] = 0x00, t_q4[1] = 0x3c, t_q4[18] = 0x00, t_q4[19] = 0x38;
	t_q4[36] = 0x00, t_q4[37] = 0x40, t_q4[54] = 0x00, t_q4[55] = 0xbc;
	for (int b = 0; b < 3; b++)
		t_q8[34 * b] = 0x00, t_q8[34 * b + 1] = (uint8_t)(0x34 + b);
}

#define OK(expr) do { pccx_diag d_ = { 0 }; int rc_ = (expr); \
	ck_assert_msg(rc_ == 0, "%s failed: %d %s", #expr, rc_, d_.msg); } while (0)
/* For macros that use `&d_` inside expr. */
#define D (&d_)

static pccx_gguf_writer *sample_writer(uint32_t version, uint32_t alignment)
{
	pccx_gguf_writer *w;
	pccx_diag d = { 0 };
	pccx_gguf_value nested, inner[3];
	pccx_gguf_str istr[2] = { { "x", 1 }, { "yz", 2 } };
	static const int32_t i1[] = { 1, 2, 3 };

	fill_tensors();
	ck_assert_int_eq(pccx_gguf_writer_new(&w, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_version(w, version, &d), 0);
	if (alignment)
		ck_assert_int_eq(pccx_gguf_writer_set_alignment(w, alignment, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_str(w, "general.architecture", "gemma3n", &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_u8(w, "t.u8", 200, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_i8(w, "t.i8", -100, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_u16(w, "t.u16", 60000, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_i16(w, "t.i16", -30000, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_u32(w, "t.u32", 4000000000u, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_i32(w, "t.i32", -2000000000, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_u64(w, "t.u64", 0xfedcba9876543210ull, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_i64(w, "t.i64", -0x123456789abcdefll, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_f32(w, "t.f32", 1.6448533535f, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_f64(w, "t.f64", 1e-300, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_bool(w, "t.bool", true, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_str(w, "t.str.empty", "", &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.u8", PCCX_GGUF_UINT8, a_u8, 3, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.i8", PCCX_GGUF_INT8, a_i8, 3, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.u16", PCCX_GGUF_UINT16, a_u16, 2, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.i16", PCCX_GGUF_INT16, a_i16, 3, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.u32", PCCX_GGUF_UINT32, a_u32, 2, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.i32", PCCX_GGUF_INT32, a_i32, 5, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.u64", PCCX_GGUF_UINT64, a_u64, 2, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.i64", PCCX_GGUF_INT64, a_i64, 2, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.f32",
						    PCCX_GGUF_FLOAT32, a_f32, 4, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.f64",
						    PCCX_GGUF_FLOAT64, a_f64, 2, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.bool", PCCX_GGUF_BOOL, a_bool, 3, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_array(w, "a.empty", PCCX_GGUF_INT32, NULL, 0, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens",
							a_str, 4, &d), 0);
	/* [[1,2,3], ["x","yz"], []] */
	memset(inner, 0, sizeof(inner));
	inner[0].type = PCCX_GGUF_ARRAY;
	inner[0].v.arr = (pccx_gguf_array){ .elem_type = PCCX_GGUF_INT32, .n = 3, .data = i1 };
	inner[1].type = PCCX_GGUF_ARRAY;
	inner[1].v.arr = (pccx_gguf_array){ .elem_type = PCCX_GGUF_STRING, .n = 2, .strs = istr };
	inner[2].type = PCCX_GGUF_ARRAY;
	inner[2].v.arr = (pccx_gguf_array){ .elem_type = PCCX_GGUF_FLOAT32, .n = 0 };
	memset(&nested, 0, sizeof(nested));
	nested.type = PCCX_GGUF_ARRAY;
	nested.v.arr = (pccx_gguf_array){ .elem_type = PCCX_GGUF_ARRAY, .n = 3, .items = inner };
	ck_assert_int_eq(pccx_gguf_writer_set_value(w, "a.nested", &nested, &d), 0);

	{
		uint64_t ne1[] = { 8, 2 }, ne2[] = { 2, 4, 3 }, ne3[] = { 64, 1, 1, 2 };
		uint64_t ne4[] = { 96 };

		ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "t.f32",
							     PCCX_GGML_F32, 2, ne1, t_f32,
							     sizeof(t_f32), &d), 0);
		ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "t.f16",
							     PCCX_GGML_F16, 3, ne2, t_f16,
							     sizeof(t_f16), &d), 0);
		ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "t.q4",
							     PCCX_GGML_Q4_0, 4, ne3, t_q4,
							     sizeof(t_q4), &d), 0);
		ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "t.q8",
							     PCCX_GGML_Q8_0, 1, ne4, t_q8,
							     sizeof(t_q8), &d), 0);
	}
	return w;
}

static void sample_image(uint32_t version, uint32_t alignment, uint8_t **buf, size_t *len)
{
	pccx_gguf_writer *w = sample_writer(version, alignment);
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_gguf_writer_write_mem(w, buf, len, &d), 0);
	pccx_gguf_writer_free(w);
}

static pccx_gguf *open_ok(const uint8_t *buf, size_t len)
{
	pccx_gguf *g = NULL;
	pccx_diag d = { 0 };
	int rc = pccx_gguf_open_mem(&g, buf, len, "s.gguf", &d);

	ck_assert_msg(rc == 0, "open failed: %s", d.msg);
	return g;
}

static void check_sample(const pccx_gguf *g, uint32_t version, uint32_t alignment)
{
	const pccx_gguf_value *v;
	const pccx_gguf_array *a;
	const pccx_gguf_tensor *t;
	const pccx_gguf_str *strs;
	pccx_diag d = { 0 };
	const char *s;
	uint64_t n, len;

	ck_assert_uint_eq(pccx_gguf_version(g), version);
	ck_assert_uint_eq(pccx_gguf_alignment(g), alignment ? alignment : 32);
	ck_assert_uint_eq(pccx_gguf_data_offset(g) % pccx_gguf_alignment(g), 0);
	ck_assert_uint_eq(pccx_gguf_n_kv(g), 27 + (alignment ? 1 : 0));

	ck_assert_int_eq(pccx_gguf_get_str(g, "general.architecture", &s, &len, &d), 0);
	ck_assert_str_eq(s, "gemma3n");
	ck_assert_uint_eq(len, 7);
#define SCALAR(key, gt, field, val) \
	v = pccx_gguf_find(g, key); \
	ck_assert_ptr_nonnull(v); \
	ck_assert_uint_eq(v->type, gt); \
	ck_assert(v->v.field == (val));
	SCALAR("t.u8", PCCX_GGUF_UINT8, u, 200);
	SCALAR("t.i8", PCCX_GGUF_INT8, i, -100);
	SCALAR("t.u16", PCCX_GGUF_UINT16, u, 60000);
	SCALAR("t.i16", PCCX_GGUF_INT16, i, -30000);
	SCALAR("t.u32", PCCX_GGUF_UINT32, u, 4000000000u);
	SCALAR("t.i32", PCCX_GGUF_INT32, i, -2000000000);
	SCALAR("t.u64", PCCX_GGUF_UINT64, u, 0xfedcba9876543210ull);
	SCALAR("t.i64", PCCX_GGUF_INT64, i, -0x123456789abcdefll);
	SCALAR("t.f32", PCCX_GGUF_FLOAT32, f, (double)1.6448533535f);
	SCALAR("t.f64", PCCX_GGUF_FLOAT64, f, 1e-300);
	SCALAR("t.bool", PCCX_GGUF_BOOL, b, true);
	SCALAR("t.str.empty", PCCX_GGUF_STRING, str.len, 0);
#undef SCALAR
	ck_assert_str_eq(pccx_gguf_find(g, "t.str.empty")->v.str.s, "");

#define ARR(key, et, ctype, ref) \
	ck_assert_int_eq(pccx_gguf_get_array(g, key, et, &a, &d), 0); \
	ck_assert_uint_eq(a->n, sizeof(ref) / sizeof(ref[0])); \
	ck_assert_int_eq(memcmp(a->data, ref, sizeof(ref)), 0);
	ARR("a.u8", PCCX_GGUF_UINT8, uint8_t, a_u8);
	ARR("a.i8", PCCX_GGUF_INT8, int8_t, a_i8);
	ARR("a.u16", PCCX_GGUF_UINT16, uint16_t, a_u16);
	ARR("a.i16", PCCX_GGUF_INT16, int16_t, a_i16);
	ARR("a.u32", PCCX_GGUF_UINT32, uint32_t, a_u32);
	ARR("a.i32", PCCX_GGUF_INT32, int32_t, a_i32);
	ARR("a.u64", PCCX_GGUF_UINT64, uint64_t, a_u64);
	ARR("a.i64", PCCX_GGUF_INT64, int64_t, a_i64);
	ARR("a.f32", PCCX_GGUF_FLOAT32, float, a_f32);
	ARR("a.f64", PCCX_GGUF_FLOAT64, double, a_f64);
	ARR("a.bool", PCCX_GGUF_BOOL, bool, a_bool);
#undef ARR
	ck_assert_int_eq(pccx_gguf_get_array(g, "a.empty", PCCX_GGUF_INT32, &a, &d), 0);
	ck_assert_uint_eq(a->n, 0);

	ck_assert_int_eq(pccx_gguf_get_str_array(g, "tokenizer.ggml.tokens", &strs, &n, &d), 0);
	ck_assert_uint_eq(n, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_str_eq(strs[i].s, a_str[i]);
		ck_assert_uint_eq(strs[i].len, strlen(a_str[i]));
	}

	ck_assert_int_eq(pccx_gguf_get_array(g, "a.nested", PCCX_GGUF_ARRAY, &a, &d), 0);
	ck_assert_uint_eq(a->n, 3);
	ck_assert_uint_eq(a->items[0].v.arr.elem_type, PCCX_GGUF_INT32);
	ck_assert_int_eq(((const int32_t *)a->items[0].v.arr.data)[2], 3);
	ck_assert_uint_eq(a->items[1].v.arr.elem_type, PCCX_GGUF_STRING);
	ck_assert_str_eq(a->items[1].v.arr.strs[1].s, "yz");
	ck_assert_uint_eq(a->items[2].v.arr.elem_type, PCCX_GGUF_FLOAT32);
	ck_assert_uint_eq(a->items[2].v.arr.n, 0);

	/* Key order is file order. */
	ck_assert_str_eq(pccx_gguf_kv_key(g, alignment ? 1 : 0), "general.architecture");
	ck_assert_ptr_null(pccx_gguf_kv_key(g, 1000));

	ck_assert_uint_eq(pccx_gguf_n_tensors(g), 4);
	t = pccx_gguf_find_tensor(g, "t.f32");
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->type, PCCX_GGML_F32);
	ck_assert_uint_eq(t->n_dims, 2);
	ck_assert_uint_eq(t->ne[0], 8);
	ck_assert_uint_eq(t->ne[1], 2);
	ck_assert_uint_eq(t->ne[2], 1);
	ck_assert_uint_eq(t->nbytes, sizeof(t_f32));
	ck_assert_int_eq(memcmp(t->data, t_f32, sizeof(t_f32)), 0);
	t = pccx_gguf_find_tensor(g, "t.f16");
	ck_assert_uint_eq(t->n_dims, 3);
	ck_assert_uint_eq(t->ne[2], 3);
	ck_assert_int_eq(memcmp(t->data, t_f16, sizeof(t_f16)), 0);
	t = pccx_gguf_find_tensor(g, "t.q4");
	ck_assert_uint_eq(t->n_dims, 4);
	ck_assert_uint_eq(t->ne[3], 2);
	ck_assert_uint_eq(t->n_elems, 128);
	ck_assert_int_eq(memcmp(t->data, t_q4, sizeof(t_q4)), 0);
	t = pccx_gguf_find_tensor(g, "t.q8");
	ck_assert_uint_eq(t->nbytes, 102);
	ck_assert_int_eq(memcmp(t->data, t_q8, sizeof(t_q8)), 0);
	for (uint64_t i = 0; i < 4; i++)
		ck_assert_uint_eq(pccx_gguf_tensor_at(g, i)->offset % pccx_gguf_alignment(g), 0);
	ck_assert_str_eq(pccx_gguf_tensor_at(g, 0)->name, "t.f32");
	ck_assert_str_eq(pccx_gguf_tensor_at(g, 3)->name, "t.q8");
	ck_assert_ptr_null(pccx_gguf_find_tensor(g, "nope"));
}

START_TEST(roundtrip_mem)
{
	uint8_t *buf;
	size_t len;
	pccx_gguf *g;

	sample_image(3, 0, &buf, &len);
	g = open_ok(buf, len);
	check_sample(g, 3, 0);
	pccx_gguf_close(g);
	free(buf);
}
END_TEST

START_TEST(roundtrip_v2_align64)
{
	uint8_t *buf;
	size_t len;
	pccx_gguf *g;

	sample_image(2, 64, &buf, &len);
	g = open_ok(buf, len);
	check_sample(g, 2, 64);
	ck_assert_uint_eq(pccx_gguf_data_offset(g) % 64, 0);
	ck_assert_uint_eq(pccx_gguf_tensor_at(g, 1)->offset, 64);
	pccx_gguf_close(g);
	free(buf);
}
END_TEST

static char tmpdir[256];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pccx-gguf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int count_dir_entries(const char *dir)
{
	DIR *dd = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(dd);
	while ((e = readdir(dd)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(dd);
	return n;
}

static void rm_tmpdir(void)
{
	DIR *dd = opendir(tmpdir);
	struct dirent *e;
	char p[512];

	while (dd && (e = readdir(dd))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
		unlink(p);
	}
	if (dd)
		closedir(dd);
	rmdir(tmpdir);
}

/* write -> mmap read -> copy every key and tensor into a new writer -> identical bytes. */
START_TEST(roundtrip_file_and_rewrite)
{
	pccx_gguf_writer *w = sample_writer(3, 0), *w2;
	pccx_diag d = { 0 };
	char path[300];
	pccx_gguf *g;
	uint8_t *ref, *again;
	size_t ref_len, again_len;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/m.gguf", tmpdir);
	ck_assert_int_eq(pccx_gguf_writer_write(w, path, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_write_mem(w, &ref, &ref_len, &d), 0);
	pccx_gguf_writer_free(w);
	ck_assert_int_eq(count_dir_entries(tmpdir), 1);

	ck_assert_int_eq(pccx_gguf_open(&g, path, &d), 0);
	ck_assert_str_eq(pccx_gguf_name(g), path);
	check_sample(g, 3, 0);

	ck_assert_int_eq(pccx_gguf_writer_new(&w2, &d), 0);
	for (uint64_t i = 0; i < pccx_gguf_n_kv(g); i++)
		ck_assert_int_eq(pccx_gguf_writer_set_value(w2, pccx_gguf_kv_key(g, i),
							    pccx_gguf_kv_value(g, i), &d), 0);
	for (uint64_t i = 0; i < pccx_gguf_n_tensors(g); i++) {
		const pccx_gguf_tensor *t = pccx_gguf_tensor_at(g, i);

		ck_assert_int_eq(pccx_gguf_writer_add_tensor(w2, t->name, t->type, t->n_dims, t->ne,
							     t->data, t->nbytes, &d), 0);
	}
	ck_assert_int_eq(pccx_gguf_writer_write_mem(w2, &again, &again_len, &d), 0);
	ck_assert_uint_eq(again_len, ref_len);
	ck_assert_int_eq(memcmp(again, ref, ref_len), 0);
	pccx_gguf_writer_free(w2);
	pccx_gguf_close(g);
	free(ref);
	free(again);
	rm_tmpdir();
}
END_TEST

START_TEST(typed_getters)
{
	uint8_t *buf;
	size_t len;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint32_t u32;
	int32_t i32;
	uint64_t u64, n;
	int64_t i64;
	float f;
	double f64;
	bool b;
	const char *s;
	const float *fa;
	const int32_t *ia;
	const pccx_gguf_array *a;

	sample_image(3, 0, &buf, &len);
	g = open_ok(buf, len);
	ck_assert_int_eq(pccx_gguf_get_u32(g, "t.u8", &u32, &d), 0);
	ck_assert_uint_eq(u32, 200);
	ck_assert_int_eq(pccx_gguf_get_i32(g, "t.i16", &i32, &d), 0);
	ck_assert_int_eq(i32, -30000);
	ck_assert_int_eq(pccx_gguf_get_u64(g, "t.u64", &u64, &d), 0);
	ck_assert(u64 == 0xfedcba9876543210ull);
	ck_assert_int_eq(pccx_gguf_get_i64(g, "t.i64", &i64, &d), 0);
	ck_assert(i64 == -0x123456789abcdefll);
	ck_assert_int_eq(pccx_gguf_get_f32(g, "t.f32", &f, &d), 0);
	ck_assert(f == 1.6448533535f);
	ck_assert_int_eq(pccx_gguf_get_f64(g, "t.f64", &f64, &d), 0);
	ck_assert(f64 == 1e-300);
	ck_assert_int_eq(pccx_gguf_get_bool(g, "t.bool", &b, &d), 0);
	ck_assert(b);

	/* Range: negative into unsigned, too large for 32 bits. */
	ck_assert_int_eq(pccx_gguf_get_u32(g, "t.i8", &u32, &d), PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "s.gguf: key 't.i8': value -100 is out of range [0, 4294967295]");
	ck_assert_int_eq(pccx_gguf_get_i32(g, "t.u32", &i32, &d), PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "s.gguf: key 't.u32': value 4000000000 exceeds 2147483647");
	ck_assert_int_eq(pccx_gguf_get_i64(g, "t.u64", &i64, &d), PCCX_ERR_RANGE);
	/* Type mismatch names the key and both types. */
	ck_assert_int_eq(pccx_gguf_get_str(g, "t.u32", &s, NULL, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "s.gguf: key 't.u32': type uint32, expected string");
	ck_assert_int_eq(pccx_gguf_get_u32(g, "t.f32", &u32, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "s.gguf: key 't.f32': type float32, expected an integer");
	ck_assert_int_eq(pccx_gguf_get_f32(g, "t.bool", &f, &d), PCCX_ERR_FORMAT);
	ck_assert_int_eq(pccx_gguf_get_bool(g, "t.u8", &b, &d), PCCX_ERR_FORMAT);
	ck_assert_int_eq(pccx_gguf_get_f32_array(g, "a.i32", &fa, &n, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "s.gguf: key 'a.i32': array of int32, expected array of float32");
	ck_assert_int_eq(pccx_gguf_get_array(g, "t.u8", PCCX_GGUF_TYPE_COUNT, &a, &d),
			 PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "s.gguf: key 't.u8': type uint8, expected array");
	/* Missing key. */
	ck_assert_int_eq(pccx_gguf_get_u32(g, "gemma3n.block_count", &u32, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_str_eq(d.msg, "s.gguf: key 'gemma3n.block_count': not in the file");
	/* Tokenizer-style arrays. */
	ck_assert_int_eq(pccx_gguf_get_f32_array(g, "a.f32", &fa, &n, &d), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert(fa[1] == 1.5f);
	ck_assert_int_eq(pccx_gguf_get_i32_array(g, "a.i32", &ia, &n, &d), 0);
	ck_assert_int_eq(ia[0], INT32_MIN);
	ck_assert_int_eq(pccx_gguf_get_array(g, "a.i16", PCCX_GGUF_TYPE_COUNT, &a, &d), 0);
	ck_assert_int_eq(pccx_gguf_array_i64(a, 0, &i64), 0);
	ck_assert_int_eq(i64, -32768);
	ck_assert_int_eq(pccx_gguf_array_i64(a, 3, &i64), PCCX_ERR_RANGE);
	ck_assert_int_eq(pccx_gguf_get_array(g, "a.u64", PCCX_GGUF_TYPE_COUNT, &a, &d), 0);
	ck_assert_int_eq(pccx_gguf_array_i64(a, 0, &i64), PCCX_ERR_RANGE);
	{
		const pccx_gguf_tensor *t;

		ck_assert_int_eq(pccx_gguf_get_tensor(g, "blk.3.ffn_up.weight", &t, &d),
				 PCCX_ERR_NOT_FOUND);
		ck_assert_str_eq(d.msg, "s.gguf: tensor 'blk.3.ffn_up.weight': not in the file");
	}
	pccx_gguf_close(g);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Writer refusals and atomic writes                                                      */

START_TEST(writer_refusals)
{
	pccx_gguf_writer *w;
	pccx_diag d = { 0 };
	uint64_t ne[2] = { 31, 2 }, ne_ok[1] = { 32 };
	float data[64] = { 0 };
	char longname[80];

	ck_assert_int_eq(pccx_gguf_writer_new(&w, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_u32(w, "k", 1, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_set_u32(w, "k", 2, &d), PCCX_ERR_INVALID);
	ck_assert_str_eq(d.msg, "GGUF writer: key 'k': set twice");
	ck_assert_int_eq(pccx_gguf_writer_set_u32(w, "", 2, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_gguf_writer_set_u32(w, "a\nb", 2, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_gguf_writer_set_alignment(w, 24, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_gguf_writer_set_i32(w, "general.alignment",
						  64, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_gguf_writer_set_u32(w, "general.alignment",
						  48, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_gguf_writer_set_version(w, 1, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "q", PCCX_GGML_Q4_0, 2, ne, data, 36, &d),
			 PCCX_ERR_INVALID);
	ck_assert_str_eq(d.msg,
			 "GGUF writer: tensor 'q': row length 31 is not a multiple of the Q4_0 "
			 "block of 32");
	ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "f",
						     PCCX_GGML_F32, 1, ne_ok, data, 100, &d),
			 PCCX_ERR_INVALID);
	ck_assert_str_eq(d.msg,
			 "GGUF writer: tensor 'f': 100 bytes given, F32 of this shape take 128");
	ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "f", 4, 1, ne_ok, data, 128, &d),
			 PCCX_ERR_UNSUPPORTED);
	memset(longname, 'x', 65);
	longname[65] = '\0';
	ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, longname, PCCX_GGML_F32, 1, ne_ok, data,
						     128, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "f",
						     PCCX_GGML_F32, 1, ne_ok, data, 128, &d), 0);
	ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, "f",
						     PCCX_GGML_F32, 1, ne_ok, data, 128, &d),
			 PCCX_ERR_INVALID);
	ck_assert_str_eq(d.msg, "GGUF writer: tensor 'f': added twice");
	pccx_gguf_writer_free(w);
}
END_TEST

/* A write that fails midway (file size limit = what a full disk does to write()) leaves
 * neither the destination nor a temporary file, and keeps an existing file intact. */
START_TEST(write_failure_leaves_nothing)
{
	pccx_gguf_writer *w = sample_writer(3, 0);
	pccx_diag d = { 0 }, d2 = { 0 };
	struct rlimit old, lim;
	char path[300], old_path[300];
	struct stat st;
	FILE *f;
	int rc, rc2;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/new.gguf", tmpdir);
	snprintf(old_path, sizeof(old_path), "%s/old.gguf", tmpdir);
	f = fopen(old_path, "w");
	fputs("previous", f);
	fclose(f);

	/* No ck_assert while the limit holds: Check reports through a temporary file. */
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 300;
	if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
		ck_abort_msg("setrlimit failed");
	rc = pccx_gguf_writer_write(w, path, &d);
	rc2 = pccx_gguf_writer_write(w, old_path, &d2);
	if (setrlimit(RLIMIT_FSIZE, &old) != 0)
		_exit(3);
	signal(SIGXFSZ, SIG_DFL);
	ck_assert_int_eq(rc, PCCX_ERR_IO);
	ck_assert_msg(strstr(d.msg, path) == d.msg, "message '%s' does not start with the path",
		      d.msg);
	ck_assert_msg(strstr(d.msg, "write failed after 300 bytes: File too large"), "%s", d.msg);
	ck_assert_int_eq(rc2, PCCX_ERR_IO);

	ck_assert_int_eq(stat(path, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(stat(old_path, &st), 0);
	ck_assert_int_eq(st.st_size, 8);
	ck_assert_int_eq(count_dir_entries(tmpdir), 1);

	/* Unwritable destination directory. */
	snprintf(path, sizeof(path), "%s/no/such/dir.gguf", tmpdir);
	ck_assert_int_eq(pccx_gguf_writer_write(w, path, &d), PCCX_ERR_IO);
	ck_assert_msg(strstr(d.msg, "cannot create temporary file"), "%s", d.msg);
	pccx_gguf_writer_free(w);
	rm_tmpdir();
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Malformed files                                                                        */

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img base_image(void)
{
	struct img im;

	sample_image(3, 0, &im.buf, &im.len);
	return im;
}

/* Offset of the first occurrence of the length-prefixed string `s` (its length field). */
static size_t find_str(const struct img *im, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i + 8 + n <= im->len; i++) {
		uint64_t l = 0;

		for (int k = 0; k < 8; k++)
			l |= (uint64_t)im->buf[i + k] << (8 * k);
		if (l == n && memcmp(im->buf + i + 8, s, n) == 0)
			return i;
	}
	ck_abort_msg("'%s' not in the image", s);
	return 0;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int k = 0; k < bytes; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

static void expect_refused(const struct img *im, size_t len, int status, const char *msg)
{
	pccx_gguf *g = (pccx_gguf *)1;
	pccx_diag d = { 0 };
	int rc = pccx_gguf_open_mem(&g, im->buf, len, "bad.gguf", &d);

	ck_assert_msg(rc == status, "expected %d, got %d (%s)", status, rc, d.msg);
	ck_assert_ptr_null(g);
	ck_assert_msg(strcmp(d.msg, msg) == 0, "message\n  '%s'\nexpected\n  '%s'", d.msg, msg);
}

/* Offset of a key's type field. */
static size_t key_type_off(const struct img *im, const char *key)
{
	return find_str(im, key) + 8 + strlen(key);
}

/* Offsets inside a tensor info. */
static size_t tinfo_off(const struct img *im, const char *name)
{
	return find_str(im, name) + 8 + strlen(name);	/* n_dims */
}

START_TEST(bad_empty_and_magic)
{
	struct img im = base_image();

	expect_refused(&im, 0, PCCX_ERR_FORMAT, "bad.gguf: truncated: 0 bytes, not a GGUF file");
	expect_refused(&im, 3, PCCX_ERR_FORMAT, "bad.gguf: truncated: 3 bytes, not a GGUF file");
	im.buf[0] = 'g';
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: bad magic 67 47 55 46 (expected \"GGUF\"), not a GGUF file");
	free(im.buf);
}
END_TEST

START_TEST(bad_header_truncated)
{
	struct img im = base_image();

	expect_refused(&im, 6, PCCX_ERR_FORMAT,
		       "bad.gguf: truncated: version needs 4 bytes at offset 4, only 2 left");
	expect_refused(&im, 20, PCCX_ERR_FORMAT,
		       "bad.gguf: truncated: metadata count needs 8 bytes at offset 16, only 4 "
		       "left");
	free(im.buf);
}
END_TEST

START_TEST(bad_version)
{
	struct img im = base_image();

	put_le(im.buf + 4, 1, 4);
	expect_refused(&im, im.len, PCCX_ERR_UNSUPPORTED,
		       "bad.gguf: unsupported GGUF version 1 (2 and 3 are read)");
	put_le(im.buf + 4, 4, 4);
	expect_refused(&im, im.len, PCCX_ERR_UNSUPPORTED,
		       "bad.gguf: unsupported GGUF version 4 (2 and 3 are read)");
	put_le(im.buf + 4, 0x03000000, 4);
	expect_refused(&im, im.len, PCCX_ERR_UNSUPPORTED,
		       "bad.gguf: big-endian GGUF (version word 0x03000000) is not supported");
	free(im.buf);
}
END_TEST

START_TEST(bad_counts)
{
	struct img im = base_image();
	char msg[200];

	put_le(im.buf + 16, UINT64_MAX, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: metadata count 18446744073709551615 cannot fit in the %zu bytes after "
		 "the header",
		 im.len - 24);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	put_le(im.buf + 16, 27, 8);
	put_le(im.buf + 8, 1ull << 40, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: tensor count 1099511627776 cannot fit in the %zu bytes after the "
		 "header",
		 im.len - 24);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	/* Each count fits alone, not together. */
	put_le(im.buf + 8, (im.len - 24) / 33, 8);
	put_le(im.buf + 16, 27, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: 27 keys and %zu tensors cannot fit in the %zu bytes after the header",
		 (im.len - 24) / 33, im.len - 24);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	/* More keys than there are: the tensor infos get read as keys and fail somewhere. */
	put_le(im.buf + 8, 4, 8);
	put_le(im.buf + 16, 28, 8);
	{
		pccx_gguf *g;
		pccx_diag d = { 0 };

		ck_assert_int_eq(pccx_gguf_open_mem(&g, im.buf, im.len, "bad.gguf", &d),
				 PCCX_ERR_FORMAT);
		ck_assert_msg(strncmp(d.msg, "bad.gguf: key", 13) == 0, "%s", d.msg);
	}
	free(im.buf);
}
END_TEST

/* Every strict prefix of a valid file is refused (and never crashes). */
/* Every prefix of a valid file that cuts into its metadata or tensor data is refused (and
 * never crashes); cutting only the padding after the last tensor is fine. */
START_TEST(bad_every_truncation)
{
	struct img im = base_image();
	pccx_gguf *g = open_ok(im.buf, im.len);
	const pccx_gguf_tensor *last = pccx_gguf_tensor_at(g, 3);
	size_t end = (size_t)(pccx_gguf_data_offset(g) + last->offset + last->nbytes);

	pccx_gguf_close(g);
	ck_assert_uint_lt(end, im.len);
	for (size_t n = 0; n <= im.len; n++) {
		pccx_diag d = { 0 };
		/* A copy of exactly n bytes so ASan sees any read past the end. */
		uint8_t *cut = malloc(n ? n : 1);
		int rc;

		g = (pccx_gguf *)1;
		memcpy(cut, im.buf, n);
		rc = pccx_gguf_open_mem(&g, cut, n, "cut.gguf", &d);
		if (n >= end) {
			ck_assert_msg(rc == 0, "prefix of %zu bytes: %s", n, d.msg);
			pccx_gguf_close(g);
			free(cut);
			continue;
		}
		ck_assert_msg(rc == PCCX_ERR_FORMAT, "prefix of %zu bytes: rc %d", n, rc);
		ck_assert_ptr_null(g);
		ck_assert_msg(strncmp(d.msg, "cut.gguf: ", 10) == 0, "%s", d.msg);
		ck_assert_msg(strstr(d.msg, "truncated") || strstr(d.msg, "exceeds") ||
			      strstr(d.msg, "cannot fit") || strstr(d.msg, "beyond the end"),
			      "prefix %zu: %s", n, d.msg);
		free(cut);
	}
	free(im.buf);
}
END_TEST

START_TEST(bad_key_length)
{
	struct img im = base_image();
	size_t o = find_str(&im, "t.u8");
	char msg[200];

	put_le(im.buf + o, im.len, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key #1: key length %zu at offset %zu exceeds the %zu bytes left",
		 im.len, o, im.len - o - 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	put_le(im.buf + o, 0, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, "bad.gguf: key #1: key is empty");
	put_le(im.buf + o, 4, 8);
	im.buf[o + 9] = '\t';
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: key #1: key contains a control character");
	free(im.buf);
}
END_TEST

START_TEST(bad_string_length)
{
	struct img im = base_image();
	size_t o = key_type_off(&im, "general.architecture") + 4;
	char msg[200];

	put_le(im.buf + o, 1ull << 62, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key 'general.architecture': string value length 4611686018427387904 at "
		 "offset %zu exceeds the %zu bytes left",
		 o, im.len - o - 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	free(im.buf);
}
END_TEST

START_TEST(bad_array_count)
{
	struct img im = base_image();
	size_t o = key_type_off(&im, "a.u64") + 8;	/* type, elem type, then n */
	char msg[200];

	put_le(im.buf + o, (im.len - o - 8) / 8 + 1, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key 'a.u64': array of %zu uint64 elements cannot fit in the %zu bytes "
		 "left",
		 (im.len - o - 8) / 8 + 1, im.len - o - 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	put_le(im.buf + o, UINT64_MAX, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key 'a.u64': array of 18446744073709551615 uint64 elements cannot fit "
		 "in the %zu bytes left",
		 im.len - o - 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	free(im.buf);
}
END_TEST

START_TEST(bad_string_array_element)
{
	struct img im = base_image();
	size_t o = find_str(&im, "<pad>");
	char msg[200];

	put_le(im.buf + o, im.len, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key 'tokenizer.ggml.tokens': string element length %zu at offset %zu "
		 "exceeds the %zu bytes left",
		 im.len, o, im.len - o - 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	free(im.buf);
}
END_TEST

START_TEST(bad_value_types)
{
	struct img im = base_image();
	size_t o = key_type_off(&im, "t.u32");
	char msg[200];

	put_le(im.buf + o, 13, 4);
	snprintf(msg, sizeof(msg), "bad.gguf: key 't.u32': unknown value type 13 at offset %zu", o);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	put_le(im.buf + o, PCCX_GGUF_UINT32, 4);
	o = key_type_off(&im, "a.i32");
	put_le(im.buf + o + 4, 0x100, 4);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key 'a.i32': unknown array element type 256 at offset %zu",
		 o + 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	put_le(im.buf + o + 4, PCCX_GGUF_INT32, 4);
	/* bool that is neither 0 nor 1 */
	o = key_type_off(&im, "t.bool");
	im.buf[o + 4] = 2;
	snprintf(msg, sizeof(msg), "bad.gguf: key 't.bool': bool 0 at offset %zu is 2, not 0 or 1",
		 o + 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	im.buf[o + 4] = 1;
	o = key_type_off(&im, "a.bool");
	im.buf[o + 16 + 2] = 7;
	snprintf(msg, sizeof(msg),
		 "bad.gguf: key 'a.bool': bool element 2 at offset %zu is 7, not 0 or 1", o + 18);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	free(im.buf);
}
END_TEST

START_TEST(bad_nesting_depth)
{
	/* A file whose only key is an array nested 9 deep, built by hand. */
	uint8_t buf[24 + 8 + 1 + 4 + 9 * 12];
	struct img im = { buf, sizeof(buf) };
	size_t o = 0;

	memcpy(buf, "GGUF", 4);
	put_le(buf + 4, 3, 4);
	put_le(buf + 8, 0, 8);
	put_le(buf + 16, 1, 8);
	o = 24;
	put_le(buf + o, 1, 8);
	buf[o + 8] = 'k';
	put_le(buf + o + 9, PCCX_GGUF_ARRAY, 4);
	o += 13;
	for (int i = 0; i < 9; i++, o += 12) {
		put_le(buf + o, i < 8 ? PCCX_GGUF_ARRAY : PCCX_GGUF_UINT8, 4);
		put_le(buf + o + 4, i < 8 ? 1 : 0, 8);
	}
	expect_refused(&im, im.len, PCCX_ERR_UNSUPPORTED,
		       "bad.gguf: key 'k': arrays nested deeper than 8 levels");
	/* Depth 8 is accepted. */
	{
		pccx_gguf *g;
		pccx_diag d = { 0 };

		put_le(buf + 13 + 6 * 12, PCCX_GGUF_UINT8, 4);
		put_le(buf + 13 + 6 * 12 + 4, 0, 8);
		ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, 13 + 7 * 12, "ok.gguf", &d), 0);
		pccx_gguf_close(g);
	}
}
END_TEST

START_TEST(bad_duplicate_key)
{
	struct img im = base_image();
	size_t o = find_str(&im, "t.i8");

	im.buf[o + 8 + 2] = 'u';	/* "t.i8" -> "t.u8" */
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: key 't.u8': duplicate key (entries #1 and #2)");
	free(im.buf);
}
END_TEST

START_TEST(bad_duplicate_tensor)
{
	struct img im = base_image();
	size_t o = find_str(&im, "t.q8");

	im.buf[o + 8 + 3] = '4';	/* "t.q8" -> "t.q4" */
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': duplicate tensor name (entries #2 and #3)");
	free(im.buf);
}
END_TEST

START_TEST(bad_tensor_name)
{
	struct img im = base_image();
	size_t o = find_str(&im, "t.q8");

	put_le(im.buf + o, 65, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor #3: name of 65 bytes exceeds the limit of 64");
	put_le(im.buf + o, 0, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, "bad.gguf: tensor #3: name is empty");
	free(im.buf);
}
END_TEST

START_TEST(bad_tensor_type)
{
	struct img im = base_image();
	size_t o = tinfo_off(&im, "t.q8") + 4 + 8;	/* 1 dim */

	put_le(im.buf + o, 4, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q8': unknown ggml type 4");
	put_le(im.buf + o, 40, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q8': unknown ggml type 40");
	put_le(im.buf + o, PCCX_GGML_Q4_K, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q8': row length 96 is not a multiple of the Q4_K block "
		       "of 256");
	free(im.buf);
}
END_TEST

START_TEST(bad_dims)
{
	struct img im = base_image();
	size_t o = tinfo_off(&im, "t.q4");

	put_le(im.buf + o, 0, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': n_dims 0 is not in 1..4");
	put_le(im.buf + o, 5, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': n_dims 5 is not in 1..4");
	put_le(im.buf + o, 4, 4);
	put_le(im.buf + o + 4 + 8, 0, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, "bad.gguf: tensor 't.q4': dimension 1 is 0");
	/* 2^32 * 2^32 overflows 64 bits */
	put_le(im.buf + o + 4, 1ull << 32, 8);
	put_le(im.buf + o + 4 + 8, 1ull << 32, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': element count overflows 2^63 - 1 at dimension 1 "
		       "(4294967296)");
	/* 2^62 * 2 = 2^63 does not overflow uint64 but exceeds 2^63 - 1 */
	put_le(im.buf + o + 4, 1ull << 62, 8);
	put_le(im.buf + o + 4 + 8, 2, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': element count overflows 2^63 - 1 at dimension 1 "
		       "(2)");
	put_le(im.buf + o + 4, 1ull << 63, 8);
	put_le(im.buf + o + 4 + 8, 1, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': element count overflows 2^63 - 1 at dimension 0 "
		       "(9223372036854775808)");
	free(im.buf);
}
END_TEST

START_TEST(bad_tensor_huge)
{
	struct img im = base_image();
	size_t o = tinfo_off(&im, "t.q8");
	pccx_gguf *g;
	pccx_diag d = { 0 };

	/* 2^62 elements of Q8_0 = 2^57 blocks * 34 bytes: fits 64 bits, far beyond the file. */
	put_le(im.buf + o + 4, 1ull << 62, 8);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, im.buf, im.len, "bad.gguf", &d), PCCX_ERR_FORMAT);
	ck_assert_msg(strstr(d.msg, "bad.gguf: tensor 't.q8': data [224, +4899916394579099648) "
			     "extends beyond the end of the file") == d.msg, "%s", d.msg);
	free(im.buf);
}
END_TEST

START_TEST(bad_tensor_offsets)
{
	struct img im = base_image();
	size_t o = tinfo_off(&im, "t.q8") + 4 + 8 + 4;	/* offset field */
	size_t o2 = tinfo_off(&im, "t.q4") + 4 + 4 * 8 + 4;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint64_t q8off, q4off;
	char msg[300];

	g = open_ok(im.buf, im.len);
	q8off = pccx_gguf_find_tensor(g, "t.q8")->offset;
	q4off = pccx_gguf_find_tensor(g, "t.q4")->offset;
	pccx_gguf_close(g);
	ck_assert_uint_eq(q8off, 224);
	ck_assert_uint_eq(q4off, 128);

	put_le(im.buf + o, q8off + 4, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q8': data offset 228 is not a multiple of the "
		       "alignment 32");
	put_le(im.buf + o, q8off + 32, 8);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: tensor 't.q8': data [256, +102) extends beyond the end of the file "
		 "(data section holds %zu bytes)",
		 (size_t)352);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT, msg);
	put_le(im.buf + o, UINT64_MAX - 31, 8);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, im.buf, im.len, "bad.gguf", &d), PCCX_ERR_FORMAT);
	ck_assert_msg(strstr(d.msg, "extends beyond the end of the file"), "%s", d.msg);
	/* q8 placed on top of q4 */
	put_le(im.buf + o, q4off, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q8': data at offset 128 overlaps tensor 't.q4' [128, "
		       "200)");
	/* partially: q4 [128,200) and q8 moved to 160 */
	put_le(im.buf + o, 160, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q8': data at offset 160 overlaps tensor 't.q4' [128, "
		       "200)");
	put_le(im.buf + o, q8off, 8);
	/* q4 moved back onto f16 */
	put_le(im.buf + o2, 64, 8);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.q4': data at offset 64 overlaps tensor 't.f16' [64, "
		       "112)");
	free(im.buf);
}
END_TEST

START_TEST(bad_data_section_truncated)
{
	struct img im = base_image();
	pccx_gguf *g = open_ok(im.buf, im.len);
	uint64_t doff = pccx_gguf_data_offset(g);
	char msg[300];

	pccx_gguf_close(g);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: truncated: data section starts at offset %" PRIu64 " beyond the end of "
		 "the file (%" PRIu64 " bytes)",
		 doff, doff - 1);
	expect_refused(&im, (size_t)doff - 1, PCCX_ERR_FORMAT, msg);
	snprintf(msg, sizeof(msg),
		 "bad.gguf: tensor 't.q8': data [224, +102) extends beyond the end of the file "
		 "(data section holds 293 bytes)");
	expect_refused(&im, (size_t)doff + 293, PCCX_ERR_FORMAT, msg);
	free(im.buf);
}
END_TEST

START_TEST(bad_alignment)
{
	struct img im;
	size_t o;

	sample_image(3, 64, &im.buf, &im.len);
	o = key_type_off(&im, "general.alignment");
	put_le(im.buf + o + 4, 48, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: key 'general.alignment': alignment 48 is not a power of two");
	put_le(im.buf + o + 4, 0, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: key 'general.alignment': alignment 0 is not a power of two");
	put_le(im.buf + o + 4, 64, 4);
	put_le(im.buf + o, PCCX_GGUF_INT32, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: key 'general.alignment': type int32, expected uint32");
	put_le(im.buf + o, PCCX_GGUF_UINT32, 4);
	/* 128: the tensor at offset 64 is no longer aligned */
	put_le(im.buf + o + 4, 128, 4);
	expect_refused(&im, im.len, PCCX_ERR_FORMAT,
		       "bad.gguf: tensor 't.f16': data offset 64 is not a multiple of the "
		       "alignment 128");
	free(im.buf);
}
END_TEST

START_TEST(open_missing_file)
{
	pccx_gguf *g;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_gguf_open(&g, "/nonexistent/x.gguf", &d), PCCX_ERR_NOT_FOUND);
	ck_assert_str_eq(d.msg, "/nonexistent/x.gguf: cannot open: No such file or directory");
	ck_assert_int_eq(pccx_gguf_open(&g, "/tmp", &d), PCCX_ERR_IO);
	ck_assert_str_eq(d.msg, "/tmp: not a regular file (directory)");
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* ggml block decoding                                                                    */

static void decode_ok(uint32_t type, const void *src, size_t len, float *dst, uint64_t n)
{
	pccx_diag d = { 0 };
	int rc = pccx_ggml_decode(type, src, len, dst, n, "t", &d);

	ck_assert_msg(rc == 0, "decode: %s", d.msg);
}

START_TEST(decode_float_types)
{
	uint8_t f32[8], f16[4] = { 0x00, 0x3c, 0x01, 0x80 }, bf16[4] = { 0x80, 0x3f, 0xc0, 0xff };
	uint8_t f64[8], i8[2] = { 0x80, 0x7f }, i16[2] = { 0x00, 0x80 };
	uint8_t i32[4] = { 0xff, 0xff, 0xff, 0xff };
	float y[2];
	double dv = -0.375;
	uint32_t u = 0x40490fdb;

	put_le(f32, u, 4);
	put_le(f32 + 4, 0x80000001u, 4);
	decode_ok(PCCX_GGML_F32, f32, 8, y, 2);
	ck_assert_uint_eq(pccx_f32_bits(y[0]), 0x40490fdb);
	ck_assert_uint_eq(pccx_f32_bits(y[1]), 0x80000001u);
	decode_ok(PCCX_GGML_F16, f16, 4, y, 2);
	ck_assert(y[0] == 1.0f);
	ck_assert(y[1] == -0x1p-24f);	/* smallest FP16 subnormal */
	decode_ok(PCCX_GGML_BF16, bf16, 4, y, 2);
	ck_assert(y[0] == 1.0f);
	ck_assert(isnan(y[1]));
	memcpy(f64, &dv, 8);
	decode_ok(PCCX_GGML_F64, f64, 8, y, 1);
	ck_assert(y[0] == -0.375f);
	decode_ok(PCCX_GGML_I8, i8, 2, y, 2);
	ck_assert(y[0] == -128.0f && y[1] == 127.0f);
	decode_ok(PCCX_GGML_I16, i16, 2, y, 1);
	ck_assert(y[0] == -32768.0f);
	decode_ok(PCCX_GGML_I32, i32, 4, y, 1);
	ck_assert(y[0] == -1.0f);
}
END_TEST

START_TEST(decode_q4_0_q4_1_q8_0)
{
	uint8_t b[20];
	float y[32];

	/* Q4_0, d = 0.5: element j = low nibble of byte j, element j+16 = high nibble. */
	put_le(b, 0x3800, 2);
	for (int j = 0; j < 16; j++)
		b[2 + j] = (uint8_t)(j | (15 - j) << 4);
	decode_ok(PCCX_GGML_Q4_0, b, 18, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == (float)(j - 8) * 0.5f);
		ck_assert(y[j + 16] == (float)(7 - j) * 0.5f);
	}
	/* Q4_1: d = 2, m = -1 */
	put_le(b, 0x4000, 2);
	put_le(b + 2, 0xbc00, 2);
	for (int j = 0; j < 16; j++)
		b[4 + j] = (uint8_t)(j | (15 - j) << 4);
	decode_ok(PCCX_GGML_Q4_1, b, 20, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == (float)j * 2.0f - 1.0f);
		ck_assert(y[j + 16] == (float)(15 - j) * 2.0f - 1.0f);
	}
	{
		uint8_t q8[34];

		put_le(q8, 0x3400, 2);	/* 0.25 */
		for (int j = 0; j < 32; j++)
			q8[2 + j] = (uint8_t)(int8_t)(j * 8 - 128);
		decode_ok(PCCX_GGML_Q8_0, q8, 34, y, 32);
		for (int j = 0; j < 32; j++)
			ck_assert(y[j] == (float)(j * 8 - 128) * 0.25f);
	}
}
END_TEST

START_TEST(decode_q5)
{
	uint8_t b[24];
	float y[32];
	uint32_t qh = 0x80000001u;	/* element 0 and element 31 get bit 4 */

	put_le(b, 0x3c00, 2);
	put_le(b + 2, qh, 4);
	for (int j = 0; j < 16; j++)
		b[6 + j] = (uint8_t)(j | j << 4);
	decode_ok(PCCX_GGML_Q5_0, b, 22, y, 32);
	ck_assert(y[0] == 0.0f);		/* (0 | 16) - 16 */
	ck_assert(y[1] == -15.0f);		/* 1 - 16 */
	ck_assert(y[16] == -16.0f);		/* high nibble 0, no bit */
	ck_assert(y[31] == 15.0f);		/* (15 | 16) - 16 */
	/* Q5_1: d = 1, m = 0.5 */
	put_le(b, 0x3c00, 2);
	put_le(b + 2, 0x3800, 2);
	put_le(b + 4, qh, 4);
	for (int j = 0; j < 16; j++)
		b[8 + j] = (uint8_t)(j | j << 4);
	decode_ok(PCCX_GGML_Q5_1, b, 24, y, 32);
	ck_assert(y[0] == 16.5f);
	ck_assert(y[1] == 1.5f);
	ck_assert(y[31] == 31.5f);
}
END_TEST

START_TEST(decode_k_quants)
{
	uint8_t b[292];
	float y[256];

	/* Q4_K: d = 1, dmin = 1; sub-block 0 scale 1 min 0, sub-block 5 scale 33 min 2. */
	memset(b, 0, sizeof(b));
	put_le(b, 0x3c00, 2);
	put_le(b + 2, 0x3c00, 2);
	b[4 + 0] = 1;			/* scale 0 */
	b[4 + 9] = 0x21;		/* scale 5 low 4 bits = 1, min 5 low 4 bits = 2 */
	b[4 + 1] = 0x80;		/* scale 5 high 2 bits = 2 -> 33 */
	b[4 + 5] = 0x00;
	for (int l = 0; l < 128; l++)
		b[16 + l] = (uint8_t)((l & 15) | 0x30);
	decode_ok(PCCX_GGML_Q4_K, b, 144, y, 256);
	ck_assert(y[0] == 0.0f);
	ck_assert(y[7] == 7.0f);	/* sub-block 0: low nibbles of q[0..31] */
	ck_assert(y[32] == 0.0f);	/* sub-block 1: scale 0 */
	/* sub-block 5 = high nibbles (3) of group 2: 33 * 3 - 2 */
	ck_assert(y[5 * 32 + 4] == 97.0f);

	/* Q6_K: d = 1, all scales 1: q = (low 4 | high 2 << 4) - 32. */
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 16; i++)
		b[192 + i] = 1;
	put_le(b + 208, 0x3c00, 2);
	b[0] = 0x21;		/* ql[0]: element 0 low = 1, element 64 high = 2 */
	b[128] = 0xe4;		/* qh[0] = 11 10 01 00: elements 0, 32, 64, 96 high bits 0,1,2,3 */
	b[32] = 0x05;		/* ql[32]: element 32 low = 5 */
	decode_ok(PCCX_GGML_Q6_K, b, 210, y, 256);
	ck_assert(y[0] == 1.0f - 32.0f);
	ck_assert(y[32] == (float)(5 | 16) - 32.0f);
	ck_assert(y[64] == (float)(2 | 32) - 32.0f);
	ck_assert(y[96] == (float)(0 | 48) - 32.0f);
	ck_assert(y[128] == -32.0f);

	/* Q5_K: d = 1, dmin = 0, scale 0 = 1; qh bit 0 of byte 0 adds 16 to element 0. */
	memset(b, 0, sizeof(b));
	put_le(b, 0x3c00, 2);
	b[4] = 1;
	b[4 + 1] = 1;
	b[16] = 0x03;		/* qh[0]: element 0 (u1) and element 32 (u2) */
	b[48] = 0x97;		/* qs[0]: element 0 = 7, element 32 = 9 */
	decode_ok(PCCX_GGML_Q5_K, b, 176, y, 256);
	ck_assert(y[0] == 23.0f);
	ck_assert(y[32] == 25.0f);
	ck_assert(y[1] == 0.0f);

	/* Q8_K: d = 0.5 (FP32) */
	memset(b, 0, sizeof(b));
	put_le(b, 0x3f000000, 4);
	b[4] = 0xfe;
	b[4 + 255] = 100;
	decode_ok(PCCX_GGML_Q8_K, b, 292, y, 256);
	ck_assert(y[0] == -1.0f);
	ck_assert(y[255] == 50.0f);

	/* Q2_K: d = 1, dmin = 1; scales[0] = 0x12 (scale 2, min 1); q[0] = 0b11100100 */
	memset(b, 0, sizeof(b));
	b[0] = 0x12;
	b[16] = 0xe4;
	put_le(b + 80, 0x3c00, 2);
	put_le(b + 82, 0x3c00, 2);
	decode_ok(PCCX_GGML_Q2_K, b, 84, y, 256);
	ck_assert(y[0] == 2.0f * 0 - 1.0f);
	ck_assert(y[16] == 0.0f);		/* scales[1] = 0 */
	ck_assert(y[32] == 0.0f);		/* scales[2] = 0 */
	/* Q3_K: d = 1; scale 0 = (low 4 of byte 0) | (bits 0-1 of byte 8) << 4, minus 32 */
	memset(b, 0, sizeof(b));
	b[96 + 0] = 0x05;	/* scale 0 low = 5, scale 8 low = 0 */
	b[96 + 8] = 0x02;	/* scale 0 high = 2 -> 37 - 32 = 5 */
	b[32] = 0x03;		/* q[0] low 2 bits = 3 */
	b[0] = 0x01;		/* hmask[0] bit 0 set: no -4 */
	put_le(b + 108, 0x3c00, 2);
	decode_ok(PCCX_GGML_Q3_K, b, 110, y, 256);
	ck_assert(y[0] == 15.0f);
	ck_assert(y[1] == 5.0f * -4.0f);
}
END_TEST

START_TEST(decode_refusals)
{
	uint8_t b[64] = { 0 };
	float y[64];
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_ggml_decode(PCCX_GGML_IQ2_XXS, b, 64, y, 256, "w", &d),
			 PCCX_ERR_UNSUPPORTED);
	ck_assert_str_eq(d.msg, "w: decoding ggml type IQ2_XXS is not supported");
	ck_assert_int_eq(pccx_ggml_decode(5, b, 64, y, 32, "w", &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_str_eq(d.msg, "w: unknown ggml type 5");
	ck_assert_int_eq(pccx_ggml_decode(PCCX_GGML_Q4_0, b, 64, y, 33, "w", &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_ggml_decode(PCCX_GGML_Q4_0, b, 35, y, 64, "w", &d), PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "w: 64 Q4_0 elements need more than the 35 bytes given");
}
END_TEST

START_TEST(decode_rows)
{
	uint8_t *buf;
	size_t len;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	float y[2 * 96];
	const pccx_gguf_tensor *t;

	sample_image(3, 0, &buf, &len);
	g = open_ok(buf, len);
	t = pccx_gguf_find_tensor(g, "t.f32");
	ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 1, 1, y, &d), 0);
	ck_assert_int_eq(memcmp(y, t_f32 + 8, 8 * sizeof(float)), 0);
	ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 1, 2, y, &d), PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "s.gguf: tensor 't.f32': rows [1, 3) out of range (2 rows)");
	t = pccx_gguf_find_tensor(g, "t.q4");
	ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 1, 1, y, &d), 0);
	/* row 1 of (64) Q4_0 = blocks 2,3; block 2 scale 2.0 */
	ck_assert(y[0] == (float)((t_q4[38] & 15) - 8) * 2.0f);
	ck_assert(y[16] == (float)((t_q4[38] >> 4) - 8) * 2.0f);
	pccx_gguf_close(g);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Q4 import and requantisation                                                           */

static uint32_t lcg(uint32_t *st)
{
	*st = *st * 1664525u + 1013904223u;
	return *st >> 8;
}

/* Q4_0 -> Q4 is lossless: same scale bits, q = nibble - 8 in element order, and every
 * dequantised weight equals the ggml value bit for bit. */
START_TEST(q4_0_import_bit_exact)
{
	enum { NB = 64 };
	uint8_t src[NB * 18], nib[NB * 16];
	uint16_t sc[NB];
	float ref[NB * 32];
	pccx_q4_error e;
	pccx_diag d = { 0 };
	uint32_t st = 12345;
	char line[128];

	for (int b = 0; b < NB; b++) {
		/* finite FP16 scales of both signs, including subnormal and zero */
		uint16_t h = (uint16_t)(lcg(&st) & 0xfbff);

		if (b == 0)
			h = 0;
		if (b == 1)
			h = 0x0001;
		put_le(src + 18 * b, h, 2);
		for (int j = 0; j < 16; j++)
			src[18 * b + 2 + j] = (uint8_t)lcg(&st);
	}
	decode_ok(PCCX_GGML_Q4_0, src, sizeof(src), ref, NB * 32);
	pccx_q4_error_init(&e);
	ck_assert_int_eq(pccx_q4_import(PCCX_GGML_Q4_0, src, sizeof(src), NB * 32, nib, sc, &e, "w",
					&d), 0);
	for (int b = 0; b < NB; b++) {
		ck_assert_uint_eq(sc[b], (uint16_t)(src[18 * b] | src[18 * b + 1] << 8));
		for (int j = 0; j < 16; j++) {
			ck_assert_int_eq(pccx__int4_get(nib, (size_t)(32 * b + j)),
					 (src[18 * b + 2 + j] & 15) - 8);
			ck_assert_int_eq(pccx__int4_get(nib, (size_t)(32 * b + 16 + j)),
					 (src[18 * b + 2 + j] >> 4) - 8);
		}
	}
	for (size_t k = 0; k < NB * 32; k++)
		ck_assert_uint_eq(pccx_f32_bits(pccx__q4_weight(nib, sc, k)), pccx_f32_bits(ref[k]));
	ck_assert(e.lossless);
	ck_assert_uint_eq(e.n, NB * 32);
	ck_assert(e.sum_sq_err == 0.0 && e.max_abs_err == 0.0);
	ck_assert(pccx_q4_error_rms(&e) == 0.0);
	ck_assert_str_eq(pccx_q4_error_format(&e, line, sizeof(line)), "lossless (n 2048)");
}
END_TEST

/* Requantising F32 is exactly pccx__q4_quantize_block per block, and the error report
 * matches an independent computation. */
START_TEST(requant_f32_and_error_report)
{
	enum { N = 8192 + 96 };
	static float x[N];
	static uint8_t src[N * 4], nib[N / 2], nib2[16];
	static uint16_t sc[N / 32];
	double se = 0, sr = 0, mx = 0, maxd = 0;
	pccx_q4_error e;
	pccx_diag d = { 0 };
	uint32_t st = 777;
	char line[160], want[160];

	for (int i = 0; i < N; i++) {
		x[i] = ((float)(int)(lcg(&st) % 20001) - 10000.0f) * 1e-4f;
		put_le(src + 4 * i, pccx_f32_bits(x[i]), 4);
	}
	pccx_q4_error_init(&e);
	ck_assert_int_eq(pccx_q4_import(PCCX_GGML_F32, src, sizeof(src), N, nib, sc, &e, "w",
					&d), 0);
	for (int b = 0; b < N / 32; b++) {
		uint16_t h;

		ck_assert_int_eq(pccx__q4_quantize_block(x + 32 * b, &h, nib2), 0);
		ck_assert_uint_eq(h, sc[b]);
		ck_assert_int_eq(memcmp(nib2, nib + 16 * b, 16), 0);
		if (fabs((double)pccx__fp16_to_f32(h)) > maxd)
			maxd = fabs((double)pccx__fp16_to_f32(h));
	}
	for (int i = 0; i < N; i++) {
		double diff = (double)pccx__q4_weight(nib, sc, (size_t)i) - x[i];

		se += diff * diff;
		sr += (double)x[i] * x[i];
		if (fabs(diff) > mx)
			mx = fabs(diff);
	}
	ck_assert(!e.lossless);
	ck_assert_uint_eq(e.n, N);
	ck_assert(e.sum_sq_err == se);
	ck_assert(e.max_abs_err == mx);
	ck_assert(pccx_q4_error_rms(&e) == sqrt(se / N));
	ck_assert(pccx_q4_error_rel_rms(&e) == sqrt(se / sr));
	/* Contract of the rounding rule: no weight moves by more than one step |d|. */
	ck_assert(e.max_abs_err > 0 && e.max_abs_err <= maxd);
	snprintf(want, sizeof(want), "rms %.3e, max %.3e, relative rms %.3e (n %d)", sqrt(se / N),
		 mx, sqrt(se / sr), N);
	ck_assert_str_eq(pccx_q4_error_format(&e, line, sizeof(line)), want);
}
END_TEST

/* Q8_0 and Q4_K go through the decoder then the quantiser; an exactly representable
 * source (values d * q with q in -8..7 and the largest magnitude -8 d) comes back exact. */
START_TEST(requant_other_types)
{
	uint8_t q8[34 * 2], nib[32];
	uint16_t sc[2];
	float ref[64];
	pccx_q4_error e;
	pccx_diag d = { 0 };

	put_le(q8, 0x3c00, 2);	/* 1.0 */
	for (int j = 0; j < 32; j++)
		q8[2 + j] = (uint8_t)(int8_t)(j % 16 - 8);
	put_le(q8 + 34, 0x3800, 2);	/* 0.5, values up to 127 -> lossy */
	for (int j = 0; j < 32; j++)
		q8[36 + j] = (uint8_t)(int8_t)(j * 8 - 127);
	decode_ok(PCCX_GGML_Q8_0, q8, sizeof(q8), ref, 64);
	pccx_q4_error_init(&e);
	ck_assert_int_eq(pccx_q4_import(PCCX_GGML_Q8_0, q8, sizeof(q8), 64, nib, sc, &e, "w",
					&d), 0);
	ck_assert(!e.lossless);
	for (int k = 0; k < 32; k++)
		ck_assert(pccx__q4_weight(nib, sc, (size_t)k) == ref[k]);
	ck_assert(e.max_abs_err > 0);

	/* Q4_K block: d = 1, every scale 1, min 0 -> values 0..15 (a multiple of 256 elements). */
	{
		uint8_t k4[144], n4[128];
		uint16_t s4[8];

		memset(k4, 0, sizeof(k4));
		put_le(k4, 0x3c00, 2);
		for (int j = 0; j < 4; j++)
			k4[4 + j] = 1;
		for (int j = 8; j < 12; j++)
			k4[4 + j] = 0x01;
		for (int l = 0; l < 128; l++)
			k4[16 + l] = (uint8_t)(l % 16 | (15 - l % 16) << 4);
		pccx_q4_error_init(&e);
		ck_assert_int_eq(pccx_q4_import(PCCX_GGML_Q4_K, k4, 144, 256, n4, s4, &e, "w",
						&d), 0);
		ck_assert_uint_eq(e.n, 256);
		ck_assert(!e.lossless);
		ck_assert(e.max_abs_err > 0);
	}
}
END_TEST

START_TEST(requant_refusals)
{
	float x[64];
	uint8_t nib[32], b[64] = { 0 };
	uint16_t sc[2];
	pccx_diag d = { 0 };

	for (int i = 0; i < 64; i++)
		x[i] = 1.0f;
	x[40] = NAN;
	ck_assert_int_eq(pccx_q4_quantize(x, 64, nib, sc, NULL, "blk.0.ffn_up.weight", &d),
			 PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg,
			 "blk.0.ffn_up.weight: block 1 (elements 32..63) holds Inf or NaN, cannot "
			 "quantise");
	ck_assert_int_eq(pccx_q4_quantize(x, 48, nib, sc, NULL, "w", &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_q4_import(PCCX_GGML_IQ4_NL, b, 64, 32, nib, sc, NULL, "w", &d),
			 PCCX_ERR_UNSUPPORTED);
	ck_assert_str_eq(d.msg, "w: decoding ggml type IQ4_NL is not supported");
	ck_assert_int_eq(pccx_q4_import(PCCX_GGML_Q4_0, b, 35, 64, nib, sc, NULL, "w", &d),
			 PCCX_ERR_RANGE);
}
END_TEST

/*
 * The lossless Q4_0 import refuses a block whose FP16 scale is Inf or NaN (its weights all are)
 * as requantising refuses a block holding Inf or NaN; the largest finite scales import.
 */
START_TEST(q4_0_import_refuses_nonfinite_scales)
{
	static const uint16_t bad[] = { 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xffff };
	static const uint16_t good[] = { 0x7bff, 0xfbff, 0x8000, 0x0001 };
	uint8_t src[4 * 18], nib[64];
	uint16_t sc[4];
	pccx_diag d = { 0 };
	char want[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(src, 0x5a, sizeof(src));
		for (int b = 0; b < 4; b++)
			put_le(src + 18 * b, 0x3c00, 2);
		put_le(src + 18 * 2, bad[i], 2);
		ck_assert_int_eq(pccx_q4_import(PCCX_GGML_Q4_0, src, sizeof(src), 128, nib, sc,
						NULL, "m.gguf: tensor 'w'", &d), PCCX_ERR_RANGE);
		snprintf(want, sizeof(want), "m.gguf: tensor 'w': block 2 (elements 64..95) holds "
			 "Inf or NaN, its FP16 scale is 0x%04x", bad[i]);
		ck_assert_str_eq(d.msg, want);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		pccx_q4_error e;

		put_le(src + 18 * 2, good[i], 2);
		pccx_q4_error_init(&e);
		ck_assert_int_eq(pccx_q4_import(PCCX_GGML_Q4_0, src, sizeof(src), 128, nib, sc, &e,
						"w", &d), 0);
		ck_assert_uint_eq(sc[2], good[i]);
		ck_assert(e.lossless && e.sum_sq_err == 0.0);
	}
}
END_TEST

#define T(name) pccx_gguf_find_tensor(g, name)

START_TEST(tensor_to_q4)
{
	uint8_t *buf;
	size_t len;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint8_t nib[64];
	uint16_t sc[4];
	pccx_q4_error e;

	sample_image(3, 0, &buf, &len);
	g = open_ok(buf, len);
	pccx_q4_error_init(&e);
	ck_assert_int_eq(pccx_gguf_tensor_to_q4(g, T("t.q4"), nib, sc, &e, &d), 0);
	ck_assert(e.lossless);
	ck_assert_uint_eq(sc[2], 0x4000);
	ck_assert_int_eq(pccx_gguf_tensor_to_q4(g, T("t.f32"), nib, sc, &e, &d),
			 PCCX_ERR_UNSUPPORTED);
	ck_assert_str_eq(d.msg,
			 "s.gguf: tensor 't.f32': row length 8 is not a multiple of the Q4 block "
			 "of 32");
	pccx_q4_error_init(&e);
	ck_assert_int_eq(pccx_gguf_tensor_to_q4(g, T("t.q8"), nib, sc, &e, &d), 0);
	ck_assert(!e.lossless);
	ck_assert_uint_eq(e.n, 96);
	pccx_gguf_close(g);
	free(buf);
}
END_TEST
#undef T

static Suite *gguf_suite(void)
{
	Suite *s = suite_create("gguf");
	TCase *tc = tcase_create("roundtrip");

	tcase_add_test(tc, roundtrip_mem);
	tcase_add_test(tc, roundtrip_v2_align64);
	tcase_add_test(tc, roundtrip_file_and_rewrite);
	tcase_add_test(tc, typed_getters);
	tcase_add_test(tc, writer_refusals);
	tcase_add_test(tc, write_failure_leaves_nothing);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_empty_and_magic);
	tcase_add_test(tc, bad_header_truncated);
	tcase_add_test(tc, bad_version);
	tcase_add_test(tc, bad_counts);
	tcase_add_test(tc, bad_every_truncation);
	tcase_add_test(tc, bad_key_length);
	tcase_add_test(tc, bad_string_length);
	tcase_add_test(tc, bad_array_count);
	tcase_add_test(tc, bad_string_array_element);
	tcase_add_test(tc, bad_value_types);
	tcase_add_test(tc, bad_nesting_depth);
	tcase_add_test(tc, bad_duplicate_key);
	tcase_add_test(tc, bad_duplicate_tensor);
	tcase_add_test(tc, bad_tensor_name);
	tcase_add_test(tc, bad_tensor_type);
	tcase_add_test(tc, bad_dims);
	tcase_add_test(tc, bad_tensor_huge);
	tcase_add_test(tc, bad_tensor_offsets);
	tcase_add_test(tc, bad_data_section_truncated);
	tcase_add_test(tc, bad_alignment);
	tcase_add_test(tc, open_missing_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("decode");
	tcase_add_test(tc, decode_float_types);
	tcase_add_test(tc, decode_q4_0_q4_1_q8_0);
	tcase_add_test(tc, decode_q5);
	tcase_add_test(tc, decode_k_quants);
	tcase_add_test(tc, decode_refusals);
	tcase_add_test(tc, decode_rows);
	suite_add_tcase(s, tc);

	tc = tcase_create("q4");
	tcase_add_test(tc, q4_0_import_bit_exact);
	tcase_add_test(tc, requant_f32_and_error_report);
	tcase_add_test(tc, requant_other_types);
	tcase_add_test(tc, requant_refusals);
	tcase_add_test(tc, tensor_to_q4);
	tcase_add_test(tc, q4_0_import_refuses_nonfinite_scales);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gguf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
