/* SPDX-License-Identifier: MIT */
/*
 * safetensors reader (single file, sharded index, malformed headers), Gemma 3n
 * config.json reading and the Gemma 3n tensor map against GGUF and safetensors files.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pccx/modelfile.h"
#include "pccx_num.h"

/* ------------------------------------------------------------------------------------- */
/* Building images                                                                        */

struct img {
	uint8_t *buf;
	size_t len;
};

/* 8-byte length + header + data. */
static struct img mk(const char *header, const void *data, size_t dlen)
{
	size_t hl = strlen(header);
	struct img im = { malloc(8 + hl + dlen + 1), 8 + hl + dlen };

	for (int i = 0; i < 8; i++)
		im.buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
	memcpy(im.buf + 8, header, hl);
	if (dlen)
		memcpy(im.buf + 8 + hl, data, dlen);
	return im;
}

struct spec {
	const char *name, *dtype;
	int nd;
	uint64_t shape[4];
	size_t esize;
};

/* Header for tensors laid out back to back in spec order, padded to a multiple of 8. */
static char *header_for(const struct spec *s, int n, const char *meta, size_t *dlen)
{
	char *h = malloc(1 << 16);
	size_t o = 0, off = 0;

	o += (size_t)sprintf(h + o, "{");
	if (meta)
		o += (size_t)sprintf(h + o, "\"__metadata__\":%s,", meta);
	for (int i = 0; i < n; i++) {
		size_t ne = 1;

		o += (size_t)sprintf(h + o, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "",
				     s[i].name, s[i].dtype);
		for (int k = 0; k < s[i].nd; k++) {
			o += (size_t)sprintf(h + o, "%s%" PRIu64, k ? "," : "", s[i].shape[k]);
			ne *= s[i].shape[k];
		}
		o += (size_t)sprintf(h + o, "],\"data_offsets\":[%zu,%zu]}",
				     off, off + ne * s[i].esize);
		off += ne * s[i].esize;
	}
	o += (size_t)sprintf(h + o, "}");
	while (o % 8)
		h[o++] = ' ';
	h[o] = '\0';
	*dlen = off;
	return h;
}

/* The sample: F32 (2, 3), F16 (4), BF16 (2, 2), a scalar F32, an empty BF16 (0, 4), I64 (2). */
static const struct spec sample_spec[] = {
	{ "a.f32", "F32", 2, { 2, 3 }, 4 },
	{ "b.f16", "F16", 1, { 4 }, 2 },
	{ "c.bf16", "BF16", 2, { 2, 2 }, 2 },
	{ "d.scalar", "F32", 0, { 0 }, 4 },
	{ "e.empty", "BF16", 2, { 0, 4 }, 2 },
	{ "f.i64", "I64", 1, { 2 }, 8 },
};

static uint8_t sample_data[24 + 8 + 8 + 4 + 0 + 16];

static struct img sample(void)
{
	size_t dlen, o = 0;
	char *h = header_for(sample_spec, 6, "{\"format\":\"pt\",\"note\":\"x\"}", &dlen);
	struct img im;
	static const uint16_t f16[4] = { 0x3c00, 0xc000, 0x0001, 0x7c00 };
	static const uint16_t bf16[4] = { 0x3f80, 0x4040, 0xbf00, 0x0000 };
	float f32[6] = { 1.0f, -2.5f, 3.0f, 0.125f, 1e-3f, -7.0f }, sc = 42.0f;
	int64_t i64[2] = { -1, 5 };

	ck_assert_uint_eq(dlen, sizeof(sample_data));
	memcpy(sample_data + o, f32, 24), o += 24;
	memcpy(sample_data + o, f16, 8), o += 8;
	memcpy(sample_data + o, bf16, 8), o += 8;
	memcpy(sample_data + o, &sc, 4), o += 4;
	memcpy(sample_data + o, i64, 16);
	im = mk(h, sample_data, dlen);
	free(h);
	return im;
}

static pccx_safetensors *open_ok(const struct img *im)
{
	pccx_safetensors *st = NULL;
	pccx_diag d = { 0 };
	int rc = pccx_st_open_mem(&st, im->buf, im->len, "s.safetensors", &d);

	ck_assert_msg(rc == 0, "open: %s", d.msg);
	return st;
}

static void expect_refused(const struct img *im, int status, const char *msg)
{
	pccx_safetensors *st = (pccx_safetensors *)1;
	pccx_diag d = { 0 };
	int rc = pccx_st_open_mem(&st, im->buf, im->len, "bad.safetensors", &d);

	ck_assert_msg(rc == status, "expected %d, got %d (%s)", status, rc, d.msg);
	ck_assert_ptr_null(st);
	ck_assert_msg(strcmp(d.msg, msg) == 0, "message\n  '%s'\nexpected\n  '%s'", d.msg, msg);
}

/* A one-tensor file with the given header text and `dlen` zero bytes of data. */
static void refuse_header(const char *header, size_t dlen, int status, const char *msg)
{
	uint8_t *z = calloc(1, dlen + 1);
	struct img im = mk(header, z, dlen);

	expect_refused(&im, status, msg);
	free(im.buf);
	free(z);
}

/* ------------------------------------------------------------------------------------- */

START_TEST(single_file)
{
	struct img im = sample();
	pccx_safetensors *st = open_ok(&im);
	const pccx_st_tensor *t;
	pccx_diag d = { 0 };
	float y[8];

	ck_assert_uint_eq(pccx_st_n_tensors(st), 6);
	ck_assert_uint_eq(pccx_st_n_files(st), 1);
	ck_assert_str_eq(pccx_st_metadata(st, "format"), "pt");
	ck_assert_ptr_null(pccx_st_metadata(st, "nope"));
	ck_assert_int_eq(pccx_st_get_tensor(st, "a.f32", &t, &d), 0);
	ck_assert_str_eq(t->dtype, "F32");
	ck_assert_uint_eq(t->type, PCCX_GGML_F32);
	ck_assert_uint_eq(t->n_dims, 2);
	ck_assert_uint_eq(t->shape[0], 2);
	ck_assert_uint_eq(t->shape[1], 3);
	ck_assert_uint_eq(t->n_elems, 6);
	ck_assert_uint_eq(t->nbytes, 24);
	ck_assert_ptr_eq(t->data, im.buf + im.len - sizeof(sample_data));
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 1, 1, y, &d), 0);
	ck_assert(y[0] == 0.125f && y[1] == 1e-3f && y[2] == -7.0f);
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 1, 2, y, &d), PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "s.safetensors: tensor 'a.f32': rows [1, 3) out of range (2 rows)");

	ck_assert_int_eq(pccx_st_get_tensor(st, "b.f16", &t, &d), 0);
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 0, 1, y, &d), 0);
	ck_assert(y[0] == 1.0f && y[1] == -2.0f && y[2] == 0x1p-24f && y[3] == INFINITY);
	ck_assert_int_eq(pccx_st_get_tensor(st, "c.bf16", &t, &d), 0);
	ck_assert_uint_eq(t->type, PCCX_GGML_BF16);
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 0, 2, y, &d), 0);
	ck_assert(y[0] == 1.0f && y[1] == 3.0f && y[2] == -0.5f && y[3] == 0.0f);
	ck_assert_int_eq(pccx_st_get_tensor(st, "d.scalar", &t, &d), 0);
	ck_assert_uint_eq(t->n_dims, 0);
	ck_assert_uint_eq(t->n_elems, 1);
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 0, 1, y, &d), 0);
	ck_assert(y[0] == 42.0f);
	ck_assert_int_eq(pccx_st_get_tensor(st, "e.empty", &t, &d), 0);
	ck_assert_uint_eq(t->n_elems, 0);
	ck_assert_uint_eq(t->nbytes, 0);

	/* Other dtypes are listed but refused on access. */
	t = pccx_st_find(st, "f.i64");
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->type, PCCX_ST_UNSUPPORTED);
	ck_assert_uint_eq(t->nbytes, 16);
	ck_assert_int_eq(pccx_st_get_tensor(st, "f.i64", &t, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_str_eq(d.msg,
			 "s.safetensors: tensor 'f.i64': dtype I64 is not supported (F32, F16 and "
			 "BF16 are)");
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 0, 1, y, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_int_eq(pccx_st_get_tensor(st, "g", &t, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_str_eq(d.msg, "s.safetensors: tensor 'g': not in the checkpoint");
	pccx_st_close(st);
	free(im.buf);
}
END_TEST

static char tmpdir[128];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pccx-st-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
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

static void write_file(const char *name, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

static void write_text(const char *name, const char *s)
{
	write_file(name, s, strlen(s));
}

START_TEST(file_and_directory)
{
	struct img im = sample();
	pccx_safetensors *st;
	pccx_diag d = { 0 };
	char path[512];

	make_tmpdir();
	write_file("model.safetensors", im.buf, im.len);
	snprintf(path, sizeof(path), "%s/model.safetensors", tmpdir);
	ck_assert_int_eq(pccx_st_open(&st, path, &d), 0);
	ck_assert_uint_eq(pccx_st_n_tensors(st), 6);
	ck_assert_int_eq(memcmp(pccx_st_find(st, "a.f32")->data, sample_data, 24), 0);
	ck_assert_str_eq(pccx_st_find(st, "a.f32")->file, path);
	pccx_st_close(st);
	ck_assert_int_eq(pccx_st_open(&st, tmpdir, &d), 0);
	ck_assert_uint_eq(pccx_st_n_tensors(st), 6);
	pccx_st_close(st);
	unlink(path);
	ck_assert_int_eq(pccx_st_open(&st, tmpdir, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_msg(strstr(d.msg,
			     "holds neither model.safetensors.index.json nor model.safetensors"),
		      "%s", d.msg);
	rm_tmpdir();
	free(im.buf);
}
END_TEST

/* Two shards and an index; the index file and its directory both open the checkpoint. */
static void write_shards(void)
{
	static const struct spec s1[] = { { "x.w", "BF16", 2, { 2, 2 }, 2 },
					   { "x.b", "F32", 1, { 2 }, 4 } };
	static const struct spec s2[] = { { "y.w", "F16", 1, { 3 }, 2 } };
	uint8_t data[16] = { 0x80, 0x3f, 0, 0x40, 0x40, 0x40, 0x80, 0x40 };
	size_t dl;
	char *h;
	struct img im;

	h = header_for(s1, 2, NULL, &dl);
	im = mk(h, data, dl);
	write_file("model-00001-of-00002.safetensors", im.buf, im.len);
	free(h);
	free(im.buf);
	h = header_for(s2, 1, NULL, &dl);
	im = mk(h, data, dl);
	write_file("model-00002-of-00002.safetensors", im.buf, im.len);
	free(h);
	free(im.buf);
}

START_TEST(sharded_index)
{
	pccx_safetensors *st;
	pccx_diag d = { 0 };
	char path[512];
	const pccx_st_tensor *t;
	float y[4];

	make_tmpdir();
	write_shards();
	write_text("model.safetensors.index.json",
		   "{\"metadata\":{\"total_size\":22},\"weight_map\":{"
		   "\"x.w\":\"model-00001-of-00002.safetensors\","
		   "\"y.w\":\"model-00002-of-00002.safetensors\","
		   "\"x.b\":\"model-00001-of-00002.safetensors\"}}");
	snprintf(path, sizeof(path), "%s/model.safetensors.index.json", tmpdir);
	ck_assert_int_eq(pccx_st_open(&st, path, &d), 0);
	ck_assert_uint_eq(pccx_st_n_files(st), 2);
	ck_assert_uint_eq(pccx_st_n_tensors(st), 3);
	ck_assert_int_eq(pccx_st_get_tensor(st, "x.w", &t, &d), 0);
	ck_assert_msg(strstr(t->file, "model-00001-of-00002.safetensors"), "%s", t->file);
	ck_assert_int_eq(pccx_st_decode_rows(st, t, 0, 2, y, &d), 0);
	ck_assert(y[0] == 1.0f && y[1] == 2.0f && y[2] == 3.0f && y[3] == 4.0f);
	ck_assert_int_eq(pccx_st_get_tensor(st, "y.w", &t, &d), 0);
	ck_assert_msg(strstr(t->file, "model-00002-of-00002.safetensors"), "%s", t->file);
	pccx_st_close(st);
	/* The directory prefers the index. */
	ck_assert_int_eq(pccx_st_open(&st, tmpdir, &d), 0);
	ck_assert_uint_eq(pccx_st_n_files(st), 2);
	pccx_st_close(st);
	rm_tmpdir();
}
END_TEST

static void index_refused(const char *index, int status, const char *needle)
{
	pccx_safetensors *st = (pccx_safetensors *)1;
	pccx_diag d = { 0 };
	char path[512];
	int rc;

	write_text("model.safetensors.index.json", index);
	snprintf(path, sizeof(path), "%s/model.safetensors.index.json", tmpdir);
	rc = pccx_st_open(&st, path, &d);
	ck_assert_msg(rc == status, "expected %d, got %d (%s)", status, rc, d.msg);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(d.msg, needle), "message '%s' lacks '%s'", d.msg, needle);
}

START_TEST(sharded_refusals)
{
	make_tmpdir();
	write_shards();
	index_refused("{\"weight_map\":{\"x.w\":\"model-00002-of-00002.safetensors\"}}",
		      PCCX_ERR_FORMAT,
		      "tensor 'x.w' is assigned to ");
	index_refused("{\"weight_map\":{\"x.w\":\"model-00003-of-00003.safetensors\"}}",
		      PCCX_ERR_NOT_FOUND,
		      "model-00003-of-00003.safetensors: cannot open: No such file");
	index_refused("{\"weight_map\":{\"x.w\":\"../model-00001-of-00002.safetensors\"}}",
		      PCCX_ERR_FORMAT,
		      "weight_map['x.w']: shard is not a plain file name in the index's directory");
	index_refused("{\"weight_map\":{\"x.w\":7}}", PCCX_ERR_FORMAT,
		      "weight_map['x.w']: shard is not a string");
	index_refused("{\"metadata\":{}}", PCCX_ERR_FORMAT, "\"weight_map\" is missing");
	index_refused("{\"weight_map\":{}}", PCCX_ERR_FORMAT, "\"weight_map\" is empty");
	index_refused("[1]", PCCX_ERR_FORMAT, "index is array, not an object");
	index_refused("{\"weight_map\":{\"x.w\":\"a\",}}", PCCX_ERR_FORMAT, "line 1");
	/* The same tensor in two shards. */
	{
		static const struct spec s3[] = { { "x.w", "BF16", 2, { 2, 2 }, 2 } };
		uint8_t data[8] = { 0 };
		size_t dl;
		char *h = header_for(s3, 1, NULL, &dl);
		struct img im = mk(h, data, dl);

		write_file("extra.safetensors", im.buf, im.len);
		free(h);
		free(im.buf);
		index_refused("{\"weight_map\":{\"x.w\":\"model-00001-of-00002.safetensors\","
			      "\"z\":\"extra.safetensors\"}}",
			      PCCX_ERR_FORMAT, "tensor 'x.w' is in both ");
	}
	rm_tmpdir();
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Malformed single files                                                                 */

START_TEST(bad_length_and_header)
{
	struct img im = sample();
	char msg[300];

	im.len = 5;
	expect_refused(&im, PCCX_ERR_FORMAT,
		       "bad.safetensors: truncated: 5 bytes, a safetensors file starts with an "
		       "8-byte header length");
	im.len = 8 + 10;
	snprintf(msg, sizeof(msg),
		 "bad.safetensors: header length %u exceeds the 10 bytes after it",
		 im.buf[0] | im.buf[1] << 8);
	expect_refused(&im, PCCX_ERR_FORMAT, msg);
	free(im.buf);

	/* A header longer than 100 MiB is refused before it is parsed. */
	{
		size_t n = ((size_t)100 << 20) + 64;
		uint8_t *big = calloc(1, n);
		struct img b = { big, n };

		/* length 100 MiB + 1 = 0x06400001 */
		big[0] = 0x01;
		big[2] = 0x40;
		big[3] = 0x06;
		expect_refused(&b, PCCX_ERR_RANGE,
			       "bad.safetensors: header length 104857601 exceeds the limit of "
			       "104857600 bytes");
		free(big);
	}
	refuse_header("{\"a\":", 0, PCCX_ERR_FORMAT,
		      "bad.safetensors: header: line 1, column 6 (byte 5): expected a value, got "
		      "end of input");
	refuse_header("[1, 2]", 0, PCCX_ERR_FORMAT,
		      "bad.safetensors: header is array, not an object");
	refuse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: header: line 1, column 55 (byte 54): duplicate key \"a\" "
		      "in object");
}
END_TEST

START_TEST(bad_entries)
{
	refuse_header("{\"w\":[1]}", 0, PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': entry is array, not an object");
	refuse_header("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': \"dtype\" is missing");
	refuse_header("{\"w\":{\"dtype\":3,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT, "bad.safetensors: tensor 'w': \"dtype\" is not a string");
	refuse_header("{\"w\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT, "bad.safetensors: tensor 'w': unknown dtype 'Q4'");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': \"shape\" is missing");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT, "bad.safetensors: tensor 'w': \"shape\" is not an array");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': shape[0] is not a non-negative integer");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': shape[0] is not a non-negative integer");
	refuse_header(
		      "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,"
		      "4]}}",
		      4, PCCX_ERR_UNSUPPORTED,
		      "bad.safetensors: tensor 'w': 9 dimensions (at most 8)");
	refuse_header(
		      "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
		      "\"data_offsets\":[0,4]}}",
		      4, PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': element count overflows 2^63 - 1 at dimension "
		      "1");
	refuse_header(
		      "{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
		      "\"data_offsets\":[0,4]}}",
		      4, PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': byte size overflows 64 bits");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': \"data_offsets\" is missing");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': \"data_offsets\" is not [begin, end] with "
		      "non-negative integers");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': data_offsets [4, 0) end before they begin");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 20,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': data_offsets [0, 20) hold 20 bytes, shape [2, "
		      "3] of F32 needs 24");
	refuse_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'w': data_offsets [0, 8) extend beyond the end of "
		      "the file (the data holds 4 bytes)");
	refuse_header("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT, "bad.safetensors: tensor #0: name is empty");
	refuse_header("{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor #0: name contains a control character");
	refuse_header(
		      "{\"__metadata__\":[],\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
		      "\"data_offsets\":[0,4]}}",
		      4, PCCX_ERR_FORMAT,
		      "bad.safetensors: \"__metadata__\" is array, not an object");
	refuse_header(
		      "{\"__metadata__\":{\"k\":1},\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
		      "\"data_offsets\":[0,4]}}",
		      4, PCCX_ERR_FORMAT,
		      "bad.safetensors: \"__metadata__\" entry 'k' is number, not a string");
}
END_TEST

START_TEST(bad_coverage)
{
	/* overlap */
	refuse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'b': data [4, 8) overlaps tensor 'a' [0, 8)");
	/* hole between tensors */
	refuse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: data bytes [4, 8) belong to no tensor (hole before 'b')");
	/* hole at the start */
	refuse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: data bytes [0, 4) belong to no tensor (hole before 'a')");
	/* bytes after the last tensor */
	refuse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: data bytes [4, 6) after the last tensor belong to no "
		      "tensor");
	refuse_header("{}", 3, PCCX_ERR_FORMAT, "bad.safetensors: 3 bytes of data but no tensors");
	/* the same region twice */
	refuse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		      "\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		      PCCX_ERR_FORMAT,
		      "bad.safetensors: tensor 'b': data [0, 4) overlaps tensor 'a' [0, 4)");
}
END_TEST

/* Every prefix of a valid file is refused without reading past it. */
START_TEST(bad_every_truncation)
{
	struct img im = sample();

	for (size_t n = 0; n < im.len; n++) {
		pccx_safetensors *st = (pccx_safetensors *)1;
		pccx_diag d = { 0 };
		uint8_t *cut = malloc(n ? n : 1);

		memcpy(cut, im.buf, n);
		ck_assert_msg(pccx_st_open_mem(&st, cut, n, "cut", &d) == PCCX_ERR_FORMAT,
			      "prefix %zu accepted", n);
		ck_assert_ptr_null(st);
		ck_assert_msg(strncmp(d.msg, "cut: ", 5) == 0, "%s", d.msg);
		free(cut);
	}
	free(im.buf);
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* config.json                                                                            */

static const char *e4b_text_fields =
	"\"activation_sparsity_pattern\":[0.95,0.95,0.95,0.95,0.95,0.95,0.95,0.95,0.95,0.95,"
	"0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"
	"\"altup_active_idx\":0,\"altup_coef_clip\":120.0,\"altup_correct_scale\":true,"
	"\"altup_lr_multiplier\":1.0,\"altup_num_inputs\":4,\"attention_bias\":false,"
	"\"final_logit_softcapping\":30.0,\"head_dim\":256,"
	"\"hidden_activation\":\"gelu_pytorch_tanh\","
	"\"hidden_size\":2048,\"hidden_size_per_layer_input\":256,\"intermediate_size\":[16384,"
	"16384,"
	"16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,"
	"16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,16384,"
	"16384,16384,16384],\"laurel_rank\":64,\"layer_types\":["
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\","
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\","
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\","
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\","
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\","
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\","
	"\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	"\"full_attention\"],"
	"\"max_position_embeddings\":32768,\"model_type\":\"gemma3n_text\","
	"\"num_attention_heads\":8,"
	"\"num_hidden_layers\":35,\"num_key_value_heads\":2,\"num_kv_shared_layers\":15,"
	"\"query_pre_attn_scalar\":256,\"rms_norm_eps\":1e-06,\"rope_local_base_freq\":10000.0,"
	"\"rope_scaling\":null,\"rope_theta\":1000000.0,\"sliding_window\":512,"
	"\"torch_dtype\":\"bfloat16\",\"use_cache\":true,\"vocab_size\":262400,"
	"\"vocab_size_per_layer_input\":262144";

static int parse_cfg(const char *json, pccx_hf_config *c, pccx_diag *d)
{
	return pccx_hf_config_parse(json, strlen(json), "config.json", c, d);
}

START_TEST(config_multimodal_nested)
{
	char json[8192];
	pccx_hf_config c, ref;
	pccx_diag d = { 0 };

	snprintf(json, sizeof(json),
		 "{\"architectures\":[\"Gemma3nForConditionalGeneration\"],"
		 "\"audio_config\":{\"hidden_size\":1536},"
		 "\"model_type\":\"gemma3n\",\"text_config\":{%s},"
		 "\"vision_config\":{\"hidden_size\":2048}}",
		 e4b_text_fields);
	ck_assert_int_eq(parse_cfg(json, &c, &d), 0);
	pccx_hf_config_e4b(&ref);
	ck_assert_uint_eq(c.defaulted, 0);
	ck_assert_int_eq(memcmp(&c, &ref, sizeof(c)), 0);
	ck_assert_uint_eq(c.hidden_size, 2048);
	ck_assert_uint_eq(c.intermediate_size[34], 16384);
	ck_assert(c.layer_is_sliding[0] && !c.layer_is_sliding[4] && !c.layer_is_sliding[34]);
	ck_assert(c.activation_sparsity[9] == 0.95f && c.activation_sparsity[10] == 0.0f);
	ck_assert(c.rope_theta == 1e6 && c.rope_local_base_freq == 1e4 && c.rms_norm_eps == 1e-6);
	ck_assert(c.final_logit_softcapping == 30.0);
	ck_assert_uint_eq(c.num_kv_shared_layers, 15);
}
END_TEST

START_TEST(config_file_flat_and_defaults)
{
	pccx_hf_config c;
	pccx_diag d = { 0 };
	char path[512];

	/* The text config at the root, a single intermediate size, optional fields absent. */
	ck_assert_int_eq(parse_cfg(
				   "{\"hidden_size\":64,\"num_hidden_layers\":35,"
				   "\"intermediate_size\":96,"
				   "\"num_attention_heads\":4,\"num_key_value_heads\":2,"
				   "\"head_dim\":16,"
				   "\"vocab_size\":300}", &c, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg,
			 "config.json: vocab_size_per_layer_input 262144 exceeds vocab_size 300");
	ck_assert_int_eq(parse_cfg(
				   "{\"hidden_size\":64,\"num_hidden_layers\":35,"
				   "\"intermediate_size\":96,"
				   "\"num_attention_heads\":4,\"num_key_value_heads\":2,"
				   "\"head_dim\":16,"
				   "\"vocab_size\":300,\"vocab_size_per_layer_input\":256}",
				   &c, &d), 0);
	ck_assert_uint_eq(c.hidden_size, 64);
	ck_assert_uint_eq(c.intermediate_size[0], 96);
	ck_assert_uint_eq(c.intermediate_size[34], 96);
	ck_assert_uint_eq(c.intermediate_size[35], 0);
	/* every optional field but vocab_size_per_layer_input */
	ck_assert_uint_eq(c.defaulted, 0x1ffe);
	ck_assert(c.layer_is_sliding[3] && !c.layer_is_sliding[4]);
	ck_assert(c.activation_sparsity[0] == 0.95f);
	ck_assert_uint_eq(c.sliding_window, 512);

	/* null sparsity = dense; rope_parameters instead of rope_theta; null softcap. */
	ck_assert_int_eq(parse_cfg(
				   "{\"hidden_size\":64,\"num_hidden_layers\":3,"
				   "\"intermediate_size\":[8,16,24],"
				   "\"num_attention_heads\":4,\"num_key_value_heads\":2,"
				   "\"head_dim\":16,"
				   "\"vocab_size\":300,\"vocab_size_per_layer_input\":256,"
				   "\"num_kv_shared_layers\":1,"
				   "\"layer_types\":[\"sliding_attention\",\"full_attention\","
				   "\"full_attention\"],"
				   "\"activation_sparsity_pattern\":null,"
				   "\"final_logit_softcapping\":null,"
				   "\"rope_parameters\":{\"full_attention\":"
				   "{\"rope_type\":\"default\","
				   "\"rope_theta\":500000.0},"
				   "\"sliding_attention\":{\"rope_type\":\"default\","
				   "\"rope_theta\":20000.0}}}",
				   &c, &d), 0);
	ck_assert_uint_eq(c.intermediate_size[2], 24);
	ck_assert(c.rope_theta == 500000.0 && c.rope_local_base_freq == 20000.0);
	ck_assert(c.activation_sparsity[0] == 0.0f);
	ck_assert(c.final_logit_softcapping == 0.0);
	ck_assert(!(c.defaulted & (1u << 4)));

	/* From a file. */
	make_tmpdir();
	{
		char json[8192];

		snprintf(json, sizeof(json), "{\"text_config\":{%s}}", e4b_text_fields);
		write_text("config.json", json);
	}
	snprintf(path, sizeof(path), "%s/config.json", tmpdir);
	ck_assert_int_eq(pccx_hf_config_read(path, &c, &d), 0);
	ck_assert_uint_eq(c.vocab_size, 262400);
	rm_tmpdir();
	ck_assert_int_eq(pccx_hf_config_read("/nonexistent/config.json", &c, &d), PCCX_ERR_IO);
}
END_TEST

#define BASE "\"hidden_size\":64,\"intermediate_size\":96,\"num_attention_heads\":4," \
	     "\"num_key_value_heads\":2,\"head_dim\":16,\"vocab_size\":300," \
	     "\"vocab_size_per_layer_input\":256,"

static void cfg_refused(const char *json, int status, const char *msg)
{
	pccx_hf_config c;
	pccx_diag d = { 0 };
	int rc = parse_cfg(json, &c, &d);

	ck_assert_msg(rc == status, "expected %d, got %d (%s)", status, rc, d.msg);
	ck_assert_msg(strcmp(d.msg, msg) == 0, "message\n  '%s'\nexpected\n  '%s'", d.msg, msg);
}

START_TEST(config_refusals)
{
	cfg_refused("{\"num_hidden_layers\":2}", PCCX_ERR_FORMAT,
		    "config.json: hidden_size: missing");
	cfg_refused("{\"text_config\":{\"num_hidden_layers\":2,\"hidden_size\":\"64\"}}",
		    PCCX_ERR_FORMAT,
		    "config.json: text_config.hidden_size: expected integer, got string");
	cfg_refused("{\"text_config\":[]}", PCCX_ERR_FORMAT,
		    "config.json: text_config: expected object, got array");
	cfg_refused("{" BASE "\"num_hidden_layers\":200}", PCCX_ERR_RANGE,
		    "config.json: num_hidden_layers: 200 is outside [1, 128]");
	cfg_refused("{" BASE "\"num_hidden_layers\":2,\"layer_types\":[\"full_attention\"]}",
		    PCCX_ERR_FORMAT, "config.json: layer_types: 1 entries, num_hidden_layers is 2");
	cfg_refused("{" BASE "\"num_hidden_layers\":2,\"num_kv_shared_layers\":0,"
		    "\"layer_types\":[\"full_attention\",\"chunked_attention\"]}",
		    PCCX_ERR_UNSUPPORTED,
		    "config.json: layer_types[1]: 'chunked_attention' is neither "
		    "\"full_attention\" nor \"sliding_attention\"");
	cfg_refused("{\"hidden_size\":64,\"intermediate_size\":[1,2],\"num_attention_heads\":4,"
		    "\"num_key_value_heads\":2,\"head_dim\":16,\"vocab_size\":300,"
		    "\"num_hidden_layers\":3}",
		    PCCX_ERR_FORMAT,
		    "config.json: intermediate_size: 2 entries, num_hidden_layers is 3");
	cfg_refused("{" BASE "\"num_hidden_layers\":2,\"num_kv_shared_layers\":0,"
		    "\"activation_sparsity_pattern\":[0.5,1.0]}",
		    PCCX_ERR_RANGE,
		    "config.json: activation_sparsity_pattern[1]: 1 is outside [0, 1)");
	cfg_refused("{" BASE "\"num_hidden_layers\":2,\"num_kv_shared_layers\":0}",
		    PCCX_ERR_FORMAT,
		    "config.json: activation_sparsity_pattern is absent and its default has 35 "
		    "entries, num_hidden_layers is 2");
	cfg_refused("{\"hidden_size\":64,\"intermediate_size\":96,\"num_attention_heads\":3,"
		    "\"num_key_value_heads\":2,\"head_dim\":16,\"vocab_size\":300,"
		    "\"num_hidden_layers\":35,"
		    "\"vocab_size_per_layer_input\":256}",
		    PCCX_ERR_FORMAT,
		    "config.json: num_attention_heads 3 is not a multiple of num_key_value_heads "
		    "2");
	cfg_refused("{" BASE "\"num_hidden_layers\":35,\"num_kv_shared_layers\":35}",
		    PCCX_ERR_FORMAT,
		    "config.json: num_kv_shared_layers 35 leaves no layer computing K/V "
		    "(num_hidden_layers 35)");
	cfg_refused("{" BASE "\"num_hidden_layers\":2,\"num_kv_shared_layers\":1,"
		    "\"activation_sparsity_pattern\":null,"
		    "\"layer_types\":[\"sliding_attention\",\"full_attention\"]}", PCCX_ERR_FORMAT,
		    "config.json: layer 1 (full_attention) shares K/V but no layer before 1 has "
		    "that attention type");
	cfg_refused("{" BASE "\"num_hidden_layers\":35,\"altup_active_idx\":4}", PCCX_ERR_FORMAT,
		    "config.json: altup_active_idx 4 is not below altup_num_inputs 4");
	cfg_refused("{" BASE "\"num_hidden_layers\":35,\"rms_norm_eps\":0}", PCCX_ERR_RANGE,
		    "config.json: rms_norm_eps: must be positive");
	cfg_refused("{" BASE "\"num_hidden_layers\":35,\"rope_scaling\":{\"rope_type\":\"yarn\"}}",
		    PCCX_ERR_UNSUPPORTED,
		    "config.json: rope_scaling: RoPE scaling is not supported");
	cfg_refused("{" BASE "\"num_hidden_layers\":35,\"rope_theta\":1e6,"
		    "\"rope_parameters\":{\"full_attention\":{\"rope_theta\":2e6}}}",
		    PCCX_ERR_FORMAT,
		    "config.json: rope_parameters.full_attention.rope_theta: 2e+06 disagrees with "
		    "rope_theta = 1e+06");
	cfg_refused("{" BASE "\"num_hidden_layers\":35,\"head_dim\":15}", PCCX_ERR_FORMAT,
		    "config.json: line 1, column 177 (byte 176): duplicate key \"head_dim\" in "
		    "object");
}
END_TEST

/* ------------------------------------------------------------------------------------- */
/* Gemma 3n tensor map                                                                    */

START_TEST(map_names_and_e4b_shapes)
{
	pccx_hf_config c;
	pccx_diag d = { 0 };
	char buf[128];
	uint64_t s[4];
	uint32_t nd;
	int id = pccx_tensor_map_by_key("ffn_up");

	pccx_hf_config_e4b(&c);
	ck_assert_int_eq(id, PCCX_TENSOR_MAP_FFN_UP);
	ck_assert_str_eq(pccx_tensor_map_key(id), "ffn_up");
	ck_assert_int_eq(pccx_tensor_map_by_key("nope"), -1);
	ck_assert_int_eq(pccx_tensor_map_gguf_name(id, 3, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "blk.3.ffn_up.weight");
	ck_assert_int_eq(pccx_tensor_map_st_name(id, 3, 0, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "model.language_model.layers.3.mlp.up_proj.weight");
	ck_assert_int_eq(pccx_tensor_map_expected_shape(&c, id, 3, false, &nd, s, &d), 0);
	ck_assert_uint_eq(nd, 2);
	ck_assert_uint_eq(s[0], 16384);
	ck_assert_uint_eq(s[1], 2048);

	ck_assert_int_eq(pccx_tensor_map_st_name(PCCX_TENSOR_MAP_ALTUP_CORRECT_SCALE, 7, 0, buf,
						 sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, "model.language_model.layers.7.altup.correct_output_scale");
	ck_assert_int_eq(pccx_tensor_map_gguf_name(PCCX_TENSOR_MAP_ALTUP_CORRECT_SCALE, 7, buf,
						   sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, "blk.7.altup_correct_scale.weight");
	ck_assert_int_eq(pccx_tensor_map_gguf_name(PCCX_TENSOR_MAP_TOKEN_EMBD, 0, buf, sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, "token_embd.weight");
	ck_assert_int_eq(pccx_tensor_map_st_name(PCCX_TENSOR_MAP_OUTPUT_NORM, 0, 0, buf,
						 sizeof(buf)), 0);
	ck_assert_str_eq(buf, "model.language_model.norm.weight");
	ck_assert_int_eq(pccx_tensor_map_st_name(PCCX_TENSOR_MAP_ALTUP_UNEMBD_PROJ, 0, 2, buf,
						 sizeof(buf)), 0);
	ck_assert_str_eq(buf, "model.language_model.altup_unembed_projections.2.weight");
	ck_assert_uint_eq(pccx_tensor_map_st_parts(&c, PCCX_TENSOR_MAP_ALTUP_PROJ), 3);
	ck_assert_uint_eq(pccx_tensor_map_st_parts(&c, PCCX_TENSOR_MAP_FFN_UP), 1);

	ck_assert_int_eq(pccx_tensor_map_expected_shape(&c, PCCX_TENSOR_MAP_ALTUP_PROJ, 0, true,
							&nd, s, &d),
			 0);
	ck_assert_uint_eq(nd, 3);
	ck_assert(s[0] == 3 && s[1] == 2048 && s[2] == 2048);
	ck_assert_int_eq(pccx_tensor_map_expected_shape(&c, PCCX_TENSOR_MAP_PER_LAYER_TOKEN_EMBD, 0,
							false,
						 &nd, s, &d), 0);
	ck_assert(s[0] == 262144 && s[1] == 8960);
	ck_assert_int_eq(pccx_tensor_map_expected_shape(&c, PCCX_TENSOR_MAP_ATTN_K, 0, false, &nd,
							s, &d), 0);
	ck_assert(s[0] == 512 && s[1] == 2048);
	ck_assert_int_eq(pccx_tensor_map_expected_shape(&c, PCCX_TENSOR_MAP_ALTUP_PREDICT_COEF, 0,
							false,
						 &nd, s, &d), 0);
	ck_assert(s[0] == 16 && s[1] == 4);
	ck_assert_int_eq(pccx_tensor_map_expected_shape(&c, PCCX_TENSOR_MAP_FFN_DOWN, 35, false,
							&nd, s, &d),
			 PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "gemma3n tensor map: ffn_down: layer 35 out of range (35 layers)");
}
END_TEST

/* A tiny config so every tensor of a synthetic checkpoint can be written. */
static void tiny_config(pccx_hf_config *c)
{
	memset(c, 0, sizeof(*c));
	c->hidden_size = 8;
	c->num_hidden_layers = 3;
	c->intermediate_size[0] = 16;
	c->intermediate_size[1] = 24;
	c->intermediate_size[2] = 16;
	c->num_attention_heads = 2;
	c->num_key_value_heads = 1;
	c->head_dim = 4;
	c->vocab_size = 12;
	c->vocab_size_per_layer_input = 10;
	c->hidden_size_per_layer_input = 2;
	c->altup_num_inputs = 4;
	c->laurel_rank = 2;
	c->num_kv_shared_layers = 1;
	c->layer_is_sliding[0] = true;
}

static float zeros[4096];

/* GGUF with every tensor; `skip` (id, layer) omitted, `bad` (id, layer) gets dim 0 + 1. */
static void tiny_gguf(const pccx_hf_config *c, int skip, uint32_t skip_layer, int bad,
		      uint8_t **buf, size_t *len, bool padded_ple)
{
	pccx_gguf_writer *w;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_gguf_writer_new(&w, &d), 0);
	for (int id = 0; id < PCCX_TENSOR_MAP_COUNT; id++) {
		uint32_t nl = pccx_tensor_map_per_layer(id) ? c->num_hidden_layers : 1;

		for (uint32_t l = 0; l < nl; l++) {
			uint64_t s[4], ne[4], n = 1;
			uint32_t nd;
			char name[96];

			if (id == skip && l == skip_layer)
				continue;
			ck_assert_int_eq(pccx_tensor_map_expected_shape(c, id, l, true, &nd, s, &d),
					 0);
			if (id == PCCX_TENSOR_MAP_PER_LAYER_TOKEN_EMBD && padded_ple)
				s[0] = c->vocab_size;
			if (id == bad && l == 1)
				s[nd - 1] += 1;
			for (uint32_t i = 0; i < nd; i++) {
				ne[i] = s[nd - 1 - i];
				n *= s[i];
			}
			ck_assert_uint_le(n, 4096);
			ck_assert_int_eq(pccx_tensor_map_gguf_name(id, l, name, sizeof(name)), 0);
			ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, name, PCCX_GGML_F32, nd, ne,
								     zeros, n * 4, &d), 0);
		}
	}
	ck_assert_int_eq(pccx_gguf_writer_write_mem(w, buf, len, &d), 0);
	pccx_gguf_writer_free(w);
}

START_TEST(map_check_gguf)
{
	pccx_hf_config c;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint8_t *buf;
	size_t len;
	const pccx_gguf_tensor *t;

	tiny_config(&c);
	tiny_gguf(&c, -1, 0, -1, &buf, &len, false);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, len, "tiny.gguf", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_gguf(g, &c, &d), 0);
	ck_assert_int_eq(pccx_tensor_map_find_gguf(g, &c, PCCX_TENSOR_MAP_FFN_UP, 1, &t, &d), 0);
	ck_assert_str_eq(t->name, "blk.1.ffn_up.weight");
	ck_assert_uint_eq(t->ne[0], 8);
	ck_assert_uint_eq(t->ne[1], 24);
	pccx_gguf_close(g);
	free(buf);

	/* Shared layers may lack K/V; owners may not. */
	tiny_gguf(&c, PCCX_TENSOR_MAP_ATTN_K, 2, -1, &buf, &len, false);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, len, "tiny.gguf", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_gguf(g, &c, &d), 0);
	pccx_gguf_close(g);
	free(buf);
	tiny_gguf(&c, PCCX_TENSOR_MAP_ATTN_K, 1, -1, &buf, &len, false);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, len, "tiny.gguf", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_gguf(g, &c, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_str_eq(d.msg,
			 "tiny.gguf: tensor 'blk.1.attn_k.weight' (layer 1 attn_k): missing");
	pccx_gguf_close(g);
	free(buf);

	tiny_gguf(&c, -1, 0, PCCX_TENSOR_MAP_FFN_DOWN, &buf, &len, false);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, len, "tiny.gguf", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_gguf(g, &c, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "tiny.gguf: tensor 'blk.1.ffn_down.weight' (layer 1 ffn_down): "
			 "expected shape [8, 24] (ne {24, 8}), found [8, 25] (ne {25, 8})");
	pccx_gguf_close(g);
	free(buf);

	tiny_gguf(&c, -1, 0, PCCX_TENSOR_MAP_ALTUP_PROJ, &buf, &len, false);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, len, "tiny.gguf", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_gguf(g, &c, &d),
			 0);	/* global: layer 1 does not exist */
	pccx_gguf_close(g);
	free(buf);

	/* per_layer_token_embd padded to vocab_size rows is accepted. */
	tiny_gguf(&c, -1, 0, -1, &buf, &len, true);
	ck_assert_int_eq(pccx_gguf_open_mem(&g, buf, len, "tiny.gguf", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_find_gguf(g, &c, PCCX_TENSOR_MAP_PER_LAYER_TOKEN_EMBD, 0,
						   &t, &d), 0);
	ck_assert_uint_eq(t->ne[1], 12);
	pccx_gguf_close(g);
	free(buf);
}
END_TEST

/* safetensors with every tensor as BF16 zeros; `skip` omitted, `bad` gets a wrong last dim. */
static struct img tiny_st(const pccx_hf_config *c, int skip, uint32_t skip_layer, int bad)
{
	static struct spec specs[512];
	static char names[512][96];
	static uint8_t data[1 << 16];
	int n = 0;
	size_t dl;
	char *h;
	struct img im;

	for (int id = 0; id < PCCX_TENSOR_MAP_COUNT; id++) {
		uint32_t nl = pccx_tensor_map_per_layer(id) ? c->num_hidden_layers : 1;

		for (uint32_t l = 0; l < nl; l++) {
			for (uint32_t p = 0; p < pccx_tensor_map_st_parts(c, id); p++) {
				uint64_t s[4];
				uint32_t nd;
				pccx_diag d = { 0 };

				if (id == skip && l == skip_layer)
					continue;
				ck_assert_int_eq(pccx_tensor_map_expected_shape(c, id, l, false,
										&nd, s,
										&d), 0);
				if (id == bad && l == 0 && p == 0)
					s[nd - 1] += 1;
				ck_assert_int_eq(pccx_tensor_map_st_name(id, l, p, names[n], 96),
						 0);
				specs[n] = (struct spec){ names[n], "BF16", (int)nd,
							  { s[0], s[1], s[2], s[3] }, 2 };
				n++;
			}
		}
	}
	h = header_for(specs, n, NULL, &dl);
	ck_assert_uint_le(dl, sizeof(data));
	im = mk(h, data, dl);
	free(h);
	return im;
}

START_TEST(map_check_safetensors)
{
	pccx_hf_config c;
	pccx_safetensors *st;
	pccx_diag d = { 0 };
	const pccx_st_tensor *t;
	struct img im;

	tiny_config(&c);
	im = tiny_st(&c, -1, 0, -1);
	ck_assert_int_eq(pccx_st_open_mem(&st, im.buf, im.len, "tiny.safetensors", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_st(st, &c, &d), 0);
	ck_assert_int_eq(pccx_tensor_map_find_st(st, &c, PCCX_TENSOR_MAP_ALTUP_PROJ, 0, 2, &t, &d),
			 0);
	ck_assert_str_eq(t->name, "model.language_model.altup_projections.2.weight");
	ck_assert_int_eq(pccx_tensor_map_find_st(st, &c, PCCX_TENSOR_MAP_ALTUP_PROJ, 0, 3, &t, &d),
			 PCCX_ERR_RANGE);
	ck_assert_int_eq(pccx_tensor_map_find_st(st, &c, PCCX_TENSOR_MAP_FFN_GATE, 1, 0, &t, &d),
			 0);
	ck_assert(t->shape[0] == 24 && t->shape[1] == 8);
	pccx_st_close(st);
	free(im.buf);

	im = tiny_st(&c, PCCX_TENSOR_MAP_LAUREL_R, 2, -1);
	ck_assert_int_eq(pccx_st_open_mem(&st, im.buf, im.len, "tiny.safetensors", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_st(st, &c, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_str_eq(d.msg,
			 "tiny.safetensors: tensor "
			 "'model.language_model.layers.2.laurel.linear_right.weight' "
			 "(layer 2 laurel_r): missing");
	pccx_st_close(st);
	free(im.buf);

	im = tiny_st(&c, -1, 0, PCCX_TENSOR_MAP_ALTUP_PREDICT_COEF);
	ck_assert_int_eq(pccx_st_open_mem(&st, im.buf, im.len, "tiny.safetensors", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_st(st, &c, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg,
			 "tiny.safetensors: tensor "
			 "'model.language_model.layers.0.altup.prediction_coefs.weight' "
			 "(layer 0 altup_predict_coef): expected shape [16, 4], found [16, 5]");
	pccx_st_close(st);
	free(im.buf);

	im = tiny_st(&c, -1, 0, PCCX_TENSOR_MAP_PER_LAYER_PROJ_NORM);
	ck_assert_int_eq(pccx_st_open_mem(&st, im.buf, im.len, "tiny.safetensors", &d), 0);
	ck_assert_int_eq(pccx_tensor_map_check_st(st, &c, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg,
			 "tiny.safetensors: tensor "
			 "'model.language_model.per_layer_projection_norm.weight' "
			 "(per_layer_proj_norm): expected shape [2], found [3]");
	pccx_st_close(st);
	free(im.buf);
}
END_TEST

static Suite *st_suite(void)
{
	Suite *s = suite_create("safetensors");
	TCase *tc = tcase_create("read");

	tcase_add_test(tc, single_file);
	tcase_add_test(tc, file_and_directory);
	tcase_add_test(tc, sharded_index);
	tcase_add_test(tc, sharded_refusals);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_length_and_header);
	tcase_add_test(tc, bad_entries);
	tcase_add_test(tc, bad_coverage);
	tcase_add_test(tc, bad_every_truncation);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_add_test(tc, config_multimodal_nested);
	tcase_add_test(tc, config_file_flat_and_defaults);
	tcase_add_test(tc, config_refusals);
	suite_add_tcase(s, tc);

	tc = tcase_create("tensor_map");
	tcase_add_test(tc, map_names_and_e4b_shapes);
	tcase_add_test(tc, map_check_gguf);
	tcase_add_test(tc, map_check_safetensors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(st_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
