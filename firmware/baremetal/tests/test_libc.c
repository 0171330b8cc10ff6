// SPDX-License-Identifier: MIT
/*
 * The firmware's C library on the host: its vsnprintf (libc/format.c, built here under the
 * name bm_vsnprintf) against the host C library's for the conversions the image uses, and
 * the heap (libc/heap.c: bm_malloc and friends) over a local arena.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"

int bm_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *bm_malloc(size_t n);
void *bm_calloc(size_t count, size_t size);
void *bm_realloc(void *p, size_t n);
void bm_free(void *p);

/* Both libraries format the same arguments; the host's is the oracle. */
#define SAME(...) do {                                                  \
		char want[256], got[256];                               \
		int nw = snprintf(want, sizeof(want), __VA_ARGS__);     \
		int ng = bm_snprintf(got, sizeof(got), __VA_ARGS__);    \
		assert_string_equal(got, want);                         \
		assert_int_equal(ng, nw);                               \
	} while (0)

static void format_integers_and_strings(void **state)
{
	(void)state;
	SAME("%d %i %u", -42, 0, 4000000000u);
	SAME("%lld %llu %llx", -9223372036854775807ll - 1, 18446744073709551615ull, 0xabcull);
	SAME("%zu %ld %lu", (size_t)12345, -7l, 7ul);
	SAME("%5d|%-5d|%05d|%+d|% d", 42, 42, -42, 42, 42);
	SAME("%x %X %#x %#X %#o %o", 255u, 255u, 255u, 0u, 8u, 0u);
	SAME("%08llx %.3d %.0d|%-8.3x|", 0x1234ull, 7, 0, 10u);
	SAME("%hhu %hu %hhd", 300u, 70000u, 200);
	SAME("%s|%10s|%-10s|%.2s|%-28.28s|", "abc", "abc", "abc", "abc",
	     "a long stage name that is cut");
	SAME("%c%c %% %*d %-*d|%.*s", 'o', 'k', 6, 42, 6, 42, 3, "abcdef");
	SAME("%p", (void *)0x1234);
}

static void format_floats(void **state)
{
	(void)state;
	SAME("%.0f %.1f %.2f %.3f", 2.5, 0.05, 99.999, 1234.5678);
	SAME("%7.2f|%11.1f|%-8.2f|%+.1f|%f", 3.14159, -2.25, 1.5, 0.0, 123.456789);
	SAME("%.2f %.2f", -0.001, 1e9);
	SAME("%.0f", 1.8e19 - 4096.0);
}

static void format_truncates(void **state)
{
	char b[8];

	(void)state;
	memset(b, 'x', sizeof(b));
	assert_int_equal(bm_snprintf(b, 5, "%s", "abcdefgh"), 8);
	assert_string_equal(b, "abcd");
	assert_int_equal(b[5], 'x');
	assert_int_equal(bm_snprintf(NULL, 0, "%d", 12345), 5);
}

static _Alignas(16) uint8_t arena[1 << 16];

static void heap_allocates_merges_and_refuses(void **state)
{
	struct pccx_bm_heap_stats st;
	void *a, *b, *c, *big;

	(void)state;
	pccx__bm_heap_init(arena + 3, sizeof(arena) - 3);   /* aligned inward */
	pccx__bm_heap_get_stats(&st);
	assert_int_equal(st.total, sizeof(arena) - 16);
	a = bm_malloc(100);
	b = bm_calloc(10, 10);
	c = bm_malloc(1);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_int_equal((uintptr_t)a % 16, 0);
	assert_int_equal((uintptr_t)b % 16, 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(((uint8_t *)b)[i], 0);
	memset(a, 0xaa, 100);
	memset(b, 0xbb, 100);
	assert_null(bm_malloc(sizeof(arena)));               /* larger than the heap */
	assert_null(bm_calloc((size_t)1 << 62, 8));           /* count * size overflows */
	/* free a and b: merged, a block of both fits where they were */
	bm_free(a);
	bm_free(b);
	big = bm_malloc(200);
	assert_ptr_equal(big, a);
	/* realloc keeps the bytes */
	memset(big, 0x5c, 200);
	big = bm_realloc(big, 4000);
	assert_non_null(big);
	for (int i = 0; i < 200; i++)
		assert_int_equal(((uint8_t *)big)[i], 0x5c);
	bm_free(big);
	bm_free(c);
	pccx__bm_heap_get_stats(&st);
	assert_int_equal(st.used, 0);
	/* everything merged back: the whole heap in one block */
	big = bm_malloc(sizeof(arena) - 64);
	assert_non_null(big);
	bm_free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(format_integers_and_strings),
		cmocka_unit_test(format_floats),
		cmocka_unit_test(format_truncates),
		cmocka_unit_test(heap_allocates_merges_and_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The heap reports a pointer it did not hand out and stops the board; here, the test fails. */
void pccx__bm_heap_corrupt(void *p)
{
	fail_msg("heap: %p was not handed out", p);
	abort();
}
