// SPDX-License-Identifier: MIT
/*
 * Loading a GGUF fast: the whole-row Q4_0 import (every variant the machine has) gives the
 * bytes of the block-by-block lossless import (pccx__q4_from_ggml_q4_0) and finds the first
 * block whose scale is Inf or NaN.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static Suite *load_mem_suite(void)
{
	Suite *s = suite_create("gguf_load_mem");
	TCase *tc = tcase_create("q4_0_rows");

	tcase_add_test(tc, row_import_matches_block_import);
	tcase_add_test(tc, row_import_every_nibble);
	tcase_add_test(tc, row_import_first_nonfinite);
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
