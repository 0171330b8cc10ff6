// SPDX-License-Identifier: MIT
/*
 * Loading a GGUF fast and without a second copy of the weights: the whole-row Q4_0 import
 * (every variant the machine has) gives the bytes of the block-by-block lossless import
 * (pccx__q4_from_ggml_q4_0) and finds the first block whose scale is Inf or NaN. The loader
 * reads tensor data with pread through bounded windows, never through the file's mapping (the
 * mapping's resident pages after a load are the header's), splits Q4_0 rows between threads
 * with every byte as written and the first bad row in row order refused, decodes other types
 * a row at a time across windows, and a file that shrinks under it is an error naming it.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gemma_gguf.h"
#include "gemma_model.h"
#include "gguf.h"
#include "pccx/modelfile.h"
#include "pccx_num.h"
#include "q4_0_rows.h"

typedef uint32_t (*row_fn)(const uint8_t *src, uint32_t cols, uint8_t *rec);

static const struct {
	const char *name;
	row_fn fn;
} variants[] = {
	{ "dispatch", pccx__q4_0_row_import },
	{ "words", pccx__q4_0_row_import_words },
#ifdef __SSE2__
	{ "sse2", pccx__q4_0_row_import_sse2 },
#endif
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

/* A small xorshift, so every run checks the same bytes. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random Q4_0 blocks with finite scales (the exponent never all ones). */
static void fill_row(uint8_t *src, uint32_t cols, uint64_t *s)
{
	uint32_t i;

	for (i = 0; i < cols / 32 * 18; i++)
		src[i] = (uint8_t)rnd(s);
	for (i = 0; i < cols / 32; i++)
		src[18 * i + 1] &= 0xBF;	/* bit 14 clear: exponent < 0x1F */
}

/* The record pccx__q4_from_ggml_q4_0 makes, block by block, in the device row layout. */
static void expected_record(const uint8_t *src, uint32_t cols, uint8_t *rec, size_t size)
{
	uint32_t sb = ((cols / 32 + 7) / 8) * 16, b;

	memset(rec, 0xA5, size);
	for (b = 0; b < cols / 32; b++) {
		uint16_t h;

		pccx__q4_from_ggml_q4_0(src + 18 * b, &h, rec + sb + 16 * b);
		rec[2 * b] = (uint8_t)h;
		rec[2 * b + 1] = (uint8_t)(h >> 8);
	}
}

START_TEST(row_import_matches_block_import)
{
	static const uint32_t widths[] = { 32, 64, 96, 224, 256, 288, 2048, 2080, 16384 };
	uint64_t s = 0x9E3779B97F4A7C15ull;
	size_t w, v, rep;

	for (w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
		uint32_t cols = widths[w];
		size_t rec_size = ((cols / 32 + 7) / 8) * 16 + cols / 2;
		uint8_t *src = malloc(cols / 32 * 18), *want = malloc(rec_size);
		uint8_t *got = malloc(rec_size);

		ck_assert(src && want && got);
		for (rep = 0; rep < 8; rep++) {
			fill_row(src, cols, &s);
			expected_record(src, cols, want, rec_size);
			for (v = 0; v < N_VARIANTS; v++) {
				/* the scale padding is not the import's: compare it as written */
				memcpy(got, want, rec_size);
				memset(got, 0, cols / 16);
				memset(got + ((cols / 32 + 7) / 8) * 16, 0, cols / 2);
				ck_assert_uint_eq(variants[v].fn(src, cols, got), cols / 32);
				ck_assert_msg(!memcmp(got, want, rec_size), "%s: cols %u differ",
					      variants[v].name, cols);
			}
		}
		free(src);
		free(want);
		free(got);
	}
}
END_TEST

/* Every nibble value in every position: a block whose 16 bytes run through all of them. */
START_TEST(row_import_every_nibble)
{
	uint8_t src[18 * 16], want[16 * 2 + 16 * 16], got[sizeof(want)];
	uint32_t cols = 16 * 32, i;
	size_t v;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 17 + i / 18);
	for (i = 0; i < 16; i++) {
		src[18 * i] = (uint8_t)i;
		src[18 * i + 1] = 0x3C;
	}
	expected_record(src, cols, want, sizeof(want));
	for (v = 0; v < N_VARIANTS; v++) {
		memset(got, 0xA5, sizeof(got));
		ck_assert_uint_eq(variants[v].fn(src, cols, got), cols / 32);
		ck_assert_msg(!memcmp(got, want, sizeof(want)), "%s differs", variants[v].name);
	}
}
END_TEST

/* The first block whose scale is Inf or NaN is the one reported, wherever it is. */
START_TEST(row_import_first_nonfinite)
{
	static const uint16_t bad[] = { 0x7C00, 0xFC00, 0x7E00, 0xFD55, 0x7FFF };
	uint32_t cols = 2048, nb = cols / 32, b, k;
	uint8_t src[2048 / 32 * 18], rec[(2048 / 32 + 7) / 8 * 16 + 2048 / 2];
	uint64_t s = 7;
	size_t v;

	for (b = 0; b < nb; b += 13) {
		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			fill_row(src, cols, &s);
			src[18 * b] = (uint8_t)bad[k];
			src[18 * b + 1] = (uint8_t)(bad[k] >> 8);
			if (b + 5 < nb) {	/* a later bad block does not hide the first */
				src[18 * (b + 5)] = 0x00;
				src[18 * (b + 5) + 1] = 0x7C;
			}
			for (v = 0; v < N_VARIANTS; v++)
				ck_assert_msg(variants[v].fn(src, cols, rec) == b,
					      "%s: block %u, scale 0x%04x", variants[v].name, b,
					      bad[k]);
		}
	}
	/* the largest finite scales are finite */
	fill_row(src, cols, &s);
	src[0] = 0xFF;
	src[1] = 0x7B;
	src[18] = 0xFF;
	src[19] = 0xFB;
	for (v = 0; v < N_VARIANTS; v++)
		ck_assert_uint_eq(variants[v].fn(src, cols, rec), nb);
}
END_TEST

/* ---- the loader ---------------------------------------------------------------------------- */

/* tiny-vocab: token_embd (262400 rows, 18.9 MB) is split between threads, many windows each */
static struct pccx_gemma_model *save_model(char *path)
{
	struct pccx_gemma_model *m;
	struct pccx_gemma_config cfg;
	pccx_diag d = { 0 };
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(pccx__gemma_config_preset("tiny-vocab", &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(m, 3, 1, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_save_gguf(m, NULL, path, &d) == 0, "%s", d.msg);
	return m;
}

/* Overwrite `len` bytes at `off` of the file; the old bytes into `old` (may be NULL). */
static void poke(const char *path, uint64_t off, const void *now, void *old, size_t len)
{
	FILE *f = fopen(path, "r+b");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, (long)off, SEEK_SET), 0);
	if (old)
		ck_assert_uint_eq(fread(old, 1, len, f), len);
	ck_assert_int_eq(fseek(f, (long)off, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(now, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* File offset of the scale of block `block` of row `row` of Q4_0 tensor `name`. */
static uint64_t scale_offset(const char *path, const char *name, uint64_t row, uint64_t block)
{
	const pccx_gguf_tensor *t;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	uint64_t off;

	ck_assert_msg(pccx_gguf_open(&g, path, &d) == 0, "%s", d.msg);
	t = pccx_gguf_find_tensor(g, name);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->type, PCCX_GGML_Q4_0);
	ck_assert_uint_lt(row, t->n_elems / t->ne[0]);
	off = pccx_gguf_data_offset(g) + t->offset + (row * (t->ne[0] / 32) + block) * 18;
	pccx_gguf_close(g);
	return off;
}

/* Resident bytes of the mapping holding address p (/proc/self/smaps), or -1. */
static long long mapping_rss(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi, a = (unsigned long)p;
	long long kb, rss = -1;
	bool in = false;
	char line[512];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		/* a mapping's line starts "lo-hi perms"; its fields ("Rss:  8 kB") follow */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = a >= lo && a < hi;
		else if (in && sscanf(line, "Rss: %lld kB", &kb) == 1)
			rss = kb * 1024;
	}
	fclose(f);
	return rss;
}

/*
 * Every byte of the model as written, through the threads' windows; the file's mapping (kept
 * open for the caller's keys) holds no more resident pages than the header and the kernel's
 * fault-around of it, where reading the tensors through it makes them all resident.
 */
START_TEST(load_reads_through_windows)
{
	char path[] = "/tmp/pccx-loadmem-XXXXXX";
	struct pccx_gemma_model *m = save_model(path), *l = NULL;
	const pccx_gguf_tensor *t;
	pccx_gguf *g = NULL;
	pccx_diag d = { 0 };
	long long before, after;
	uint64_t i, sum = 0;

	ck_assert_msg(pccx__gemma_load_gguf(&l, path, m->cfg.max_ctx, NULL, &g, &d) == 0, "%s",
		      d.msg);
	ck_assert_uint_eq(l->size, m->size);
	ck_assert(!memcmp(l->data, m->data, m->size));
	t = pccx_gguf_find_tensor(g, "token_embd.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_gt(t->nbytes, 16u << 20);
	before = mapping_rss(t->data);
	ck_assert_int_ge(before, 0);
	ck_assert_int_lt(before, (long long)pccx_gguf_data_offset(g) + (1 << 20));
	for (i = 0; i < t->nbytes; i += 4096)
		sum += t->data[i];
	after = mapping_rss(t->data);
	ck_assert_msg(after >= before + (long long)t->nbytes - (1 << 20), "%lld -> %lld (%llu)",
		      before, after, (unsigned long long)sum);
	pccx_gguf_close(g);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	unlink(path);
}
END_TEST

/* VmRSS or VmHWM of /proc/self/status, in bytes. */
static long long status_bytes(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	long long kb = -1;
	char line[256];
	size_t n = strlen(key);

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			ck_assert_int_eq(sscanf(line + n + 1, "%lld", &kb), 1);
	fclose(f);
	ck_assert_int_ge(kb, 0);
	return kb * 1024;
}

/*
 * The peak of a load is the device-layout model and a few MiB, not the model and a tensor of
 * the file (per_layer_token_embd: 47 MB of the 68 MB file) nor the model and the file. The
 * peak is reset first (clear_refs 5), so what the test did before does not count.
 */
START_TEST(load_peak_is_the_model)
{
	char path[] = "/tmp/pccx-loadmem-XXXXXX";
	struct pccx_gemma_model *m = save_model(path), *l = NULL;
	uint64_t size = m->size;
	long long rss0, peak;
	pccx_diag d = { 0 };
	FILE *f;

	pccx__gemma_model_free(m);
	f = fopen("/proc/self/clear_refs", "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs("5", f), 0);
	ck_assert_int_eq(fclose(f), 0);
	rss0 = status_bytes("VmRSS");
	ck_assert_int_le(status_bytes("VmHWM"), rss0 + (1 << 20));
	ck_assert_msg(pccx__gemma_load_gguf(&l, path, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	peak = status_bytes("VmHWM") - rss0;
	ck_assert_msg(peak >= (long long)size * 9 / 10 && peak <= (long long)size + (8 << 20),
		      "peak %lld bytes over the %llu of the model", peak,
		      (unsigned long long)size);
	pccx__gemma_model_free(l);
	unlink(path);
}
END_TEST

/*
 * Bad scales in both threads' shares of token_embd: the first row in row order is refused,
 * as a load on one thread would; alone, the later one is.
 */
START_TEST(load_refuses_first_bad_row)
{
	char path[] = "/tmp/pccx-loadmem-XXXXXX";
	struct pccx_gemma_model *m = save_model(path), *l = NULL;
	const uint8_t nan[2] = { 0x00, 0x7E }, inf[2] = { 0x00, 0x7C };
	uint64_t early = scale_offset(path, "token_embd.weight", 1000, 2);
	uint64_t late = scale_offset(path, "token_embd.weight", 250000, 3);
	uint8_t was_early[2], was_late[2];
	pccx_diag d = { 0 };
	char want[512];

	poke(path, late, inf, was_late, 2);
	poke(path, early, nan, was_early, 2);
	ck_assert_int_eq(pccx__gemma_load_gguf(&l, path, 0, NULL, NULL, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_null(l);
	snprintf(want, sizeof(want), "%s: tensor 'token_embd.weight': row 1000, block 2 (elements "
		 "64..95 of the row) holds Inf or NaN, its FP16 scale is 0x7e00", path);
	ck_assert_str_eq(d.msg, want);
	poke(path, early, was_early, NULL, 2);
	ck_assert_int_eq(pccx__gemma_load_gguf(&l, path, 0, NULL, NULL, &d), PCCX_ERR_RANGE);
	snprintf(want, sizeof(want), "%s: tensor 'token_embd.weight': row 250000, block 3 "
		 "(elements 96..127 of the row) holds Inf or NaN, its FP16 scale is 0x7c00", path);
	ck_assert_str_eq(d.msg, want);
	poke(path, late, was_late, NULL, 2);
	ck_assert_msg(pccx__gemma_load_gguf(&l, path, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert(!memcmp(l->data, m->data, m->size));
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(m);
	unlink(path);
}
END_TEST

/*
 * A file that shrinks after it was opened: its tensor data past the new end is an error naming
 * the file and the offset (through the mapping it would be SIGBUS). From memory, no copy.
 */
START_TEST(read_of_shrunk_file)
{
	char path[] = "/tmp/pccx-loadmem-XXXXXX";
	struct pccx_gemma_model *m = save_model(path);
	const pccx_gguf_tensor *t, *tm;
	const uint8_t *p, *base;
	uint8_t buf[4096];
	pccx_gguf *g, *gm;
	struct stat st;
	pccx_diag d = { 0 };
	uint64_t off;
	char want[512];

	ck_assert_msg(pccx_gguf_open(&g, path, &d) == 0, "%s", d.msg);
	t = pccx_gguf_find_tensor(g, "token_embd.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(pccx__gguf_read(g, t->data + 4096, sizeof(buf), buf, &p, &d), 0);
	ck_assert_ptr_eq(p, buf);
	ck_assert(!memcmp(buf, t->data + 4096, sizeof(buf)));
	/* the same file from memory (its mapping): the bytes where they are */
	base = t->data - pccx_gguf_data_offset(g) - t->offset;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg(pccx_gguf_open_mem(&gm, base, (size_t)st.st_size, "mem", &d) == 0, "%s",
		      d.msg);
	tm = pccx_gguf_find_tensor(gm, "token_embd.weight");
	ck_assert_ptr_nonnull(tm);
	ck_assert_int_eq(pccx__gguf_read(gm, tm->data + 4096, sizeof(buf), buf, &p, &d), 0);
	ck_assert_ptr_eq(p, tm->data + 4096);
	pccx_gguf_close(gm);
	off = pccx_gguf_data_offset(g) + t->offset;
	ck_assert_int_eq(truncate(path, (off_t)(off + 8192)), 0);
	ck_assert_int_eq(pccx__gguf_read(g, t->data + 6144, sizeof(buf), buf, &p, &d),
			 PCCX_ERR_IO);
	snprintf(want, sizeof(want), "%s: cannot read 2048 bytes at offset %llu: the file ends "
		 "there (it shrank since it was opened)", path, (unsigned long long)(off + 8192));
	ck_assert_str_eq(d.msg, want);
	pccx_gguf_close(g);
	pccx__gemma_model_free(m);
	unlink(path);
}
END_TEST

/* The GGUF at src written to dst with tensor `name` as F32 (its values decoded). */
static void f32_copy(const char *src, const char *dst, const char *name)
{
	pccx_gguf_writer *w;
	pccx_gguf *g;
	pccx_diag d = { 0 };
	float *x = NULL;
	uint64_t i;

	ck_assert_msg(pccx_gguf_open(&g, src, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_gguf_writer_new(&w, &d), 0);
	for (i = 0; i < pccx_gguf_n_kv(g); i++)
		ck_assert_int_eq(pccx_gguf_writer_set_value(w, pccx_gguf_kv_key(g, i),
							    pccx_gguf_kv_value(g, i), &d), 0);
	for (i = 0; i < pccx_gguf_n_tensors(g); i++) {
		const pccx_gguf_tensor *t = pccx_gguf_tensor_at(g, i);
		uint64_t ne[4];

		memcpy(ne, t->ne, sizeof(ne));
		if (strcmp(t->name, name)) {
			ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, t->name, t->type,
								     t->n_dims, ne, t->data,
								     t->nbytes, &d), 0);
			continue;
		}
		x = malloc(4 * t->n_elems);
		ck_assert_ptr_nonnull(x);
		ck_assert_int_eq(pccx_gguf_decode_rows(g, t, 0, t->n_elems / t->ne[0], x, &d), 0);
		ck_assert_int_eq(pccx_gguf_writer_add_tensor(w, t->name, PCCX_GGML_F32, t->n_dims,
							     ne, x, 4 * t->n_elems, &d), 0);
	}
	ck_assert_msg(pccx_gguf_writer_write(w, dst, &d) == 0, "%s", d.msg);
	pccx_gguf_writer_free(w);
	pccx_gguf_close(g);
	free(x);
}

/*
 * A tensor of another type is decoded a row at a time through a window it spans several of
 * (tiny's per-layer table as F32: 512 rows of 1280 bytes, 204 to a window): every row is
 * requantised from its own values, as pccx_q4_quantize makes it from the Q4_0 file's.
 */
START_TEST(decoded_rows_across_windows)
{
	char path[] = "/tmp/pccx-loadmem-XXXXXX", f32[64];
	struct pccx_gemma_model *m, *q = NULL, *l = NULL;
	const struct pccx_gemma_tensor *T;
	struct pccx_gemma_config cfg;
	pccx_diag d = { 0 };
	uint8_t *want;
	float *x;
	uint32_t r;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(f32, sizeof(f32), "%s.f32", path);
	ck_assert_int_eq(pccx__gemma_config_preset("tiny", &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(m, 9, 1, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_save_gguf(m, NULL, path, &d) == 0, "%s", d.msg);
	f32_copy(path, f32, "per_layer_token_embd.weight");
	ck_assert_msg(pccx__gemma_load_gguf(&q, path, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_load_gguf(&l, f32, 0, NULL, NULL, &d) == 0, "%s", d.msg);
	T = &l->t[l->w.ple_table];
	ck_assert_uint_gt((uint64_t)T->rows * T->cols * 4, 2u * (256u << 10));
	want = calloc(1, T->row_bytes);
	x = malloc(sizeof(float) * T->cols);
	ck_assert(want && x);
	for (r = 0; r < T->rows; r++) {
		pccx__gemma_row_f32(q, l->w.ple_table, r, x);
		ck_assert_int_eq(pccx_q4_quantize(x, T->cols, want +
						  pccx_gemma_q4_scale_bytes(T->cols),
						  (uint16_t *)(void *)want, NULL, "row", &d), 0);
		ck_assert_msg(!memcmp(pccx_gemma_row(l, l->w.ple_table, r), want, T->row_bytes),
			      "row %u", r);
	}
	free(want);
	free(x);
	pccx__gemma_model_free(l);
	pccx__gemma_model_free(q);
	pccx__gemma_model_free(m);
	unlink(f32);
	unlink(path);
}
END_TEST

static Suite *load_mem_suite(void)
{
	Suite *s = suite_create("gguf_load_mem");
	TCase *tc = tcase_create("q4_0_rows");

	tcase_add_test(tc, row_import_matches_block_import);
	tcase_add_test(tc, row_import_every_nibble);
	tcase_add_test(tc, row_import_first_nonfinite);
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, load_reads_through_windows);
	tcase_add_test(tc, load_peak_is_the_model);
	tcase_add_test(tc, load_refuses_first_bad_row);
	tcase_add_test(tc, read_of_shrunk_file);
	tcase_add_test(tc, decoded_rows_across_windows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(load_mem_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
