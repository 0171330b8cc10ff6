// SPDX-License-Identifier: MIT
/*
 * Descriptors of a buffer held in pieces (host/compiler/wpieces.c): every byte a job names goes
 * to the piece holding it, on the same port and in the same order; ranges outside the
 * pieces are refused with a message.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "wpieces.h"

#define WHOLE 1u

/* pieces: [0x100, 0x200) -> 7, [0x200, 0x300) -> 8 (touching), [0x400, 0x500) -> 9 */
static const struct pccx_wpiece pc[] = {
	{ 0x100, 0x100, 7 }, { 0x200, 0x100, 8 }, { 0x400, 0x100, 9 },
};

static uint64_t port_bytes(const struct pccx_job_view *j, uint32_t port)
{
	uint64_t b = 0;
	uint32_t i;

	for (i = 0; i < j->n_stream; i++)
		if (j->stream[i].port == port)
			b += j->stream[i].length;
	return b;
}

START_TEST(rewrite_points_at_pieces)
{
	const uint64_t insn[1] = { 0 };
	const struct pccx_dma_desc dma[] = {
		{ WHOLE, PCCX_DMA_TO_DEVICE, 0x410, 0x20 },	/* inside piece 9 */
		{ 5, PCCX_DMA_FROM_DEVICE, 0x0, 0x40 },		/* another buffer */
	};
	const struct pccx_stream_desc st[] = {
		{ WHOLE, 2, 0x180, 0x100 },	/* runs from piece 7 into piece 8 */
		{ 5, 1, 0x0, 0x30 },		/* another buffer */
		{ WHOLE, 0, 0x120, 0x10 },	/* inside piece 7 */
		{ WHOLE, 3, 0x100, 0x200 },	/* exactly pieces 7 and 8 */
	};
	const struct pccx_job_view job = { insn, 1, dma, 2, st, 4 };
	struct pccx_wpieces_out o = { 0 };
	struct pccx_job_view out;
	pccx_diag d = { 0 };
	uint32_t p;

	ck_assert_msg(pccx__wpieces_rewrite(pc, 3, WHOLE, &job, &o, &out, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(out.n_dma, 2);
	ck_assert_uint_eq(out.dma[0].handle, 9);
	ck_assert_uint_eq(out.dma[0].offset, 0x10);
	ck_assert_uint_eq(out.dma[0].length, 0x20);
	ck_assert_uint_eq(out.dma[1].handle, 5);
	ck_assert_uint_eq(out.dma[1].offset, 0);
	ck_assert_uint_eq(out.n_stream, 6);
	/* the first descriptor split in two, in order, on its port */
	ck_assert_uint_eq(out.stream[0].handle, 7);
	ck_assert_uint_eq(out.stream[0].port, 2);
	ck_assert_uint_eq(out.stream[0].offset, 0x80);
	ck_assert_uint_eq(out.stream[0].length, 0x80);
	ck_assert_uint_eq(out.stream[1].handle, 8);
	ck_assert_uint_eq(out.stream[1].port, 2);
	ck_assert_uint_eq(out.stream[1].offset, 0);
	ck_assert_uint_eq(out.stream[1].length, 0x80);
	ck_assert_uint_eq(out.stream[2].handle, 5);
	ck_assert_uint_eq(out.stream[3].handle, 7);
	ck_assert_uint_eq(out.stream[3].offset, 0x20);
	ck_assert_uint_eq(out.stream[4].handle, 7);
	ck_assert_uint_eq(out.stream[4].length, 0x100);
	ck_assert_uint_eq(out.stream[5].handle, 8);
	ck_assert_uint_eq(out.stream[5].length, 0x100);
	for (p = 0; p < 4; p++)
		ck_assert_uint_eq(port_bytes(&out, p), port_bytes(&job, p));
	/* the caller's arrays are untouched */
	ck_assert_uint_eq(st[0].handle, WHOLE);
	ck_assert_uint_eq(dma[0].offset, 0x410);
	pccx__wpieces_out_free(&o);
}
END_TEST

static void refused(const struct pccx_dma_desc *dma, uint32_t n_dma,
		    const struct pccx_stream_desc *st, uint32_t n_st, const char *want)
{
	const uint64_t insn[1] = { 0 };
	const struct pccx_job_view job = { insn, 1, dma, n_dma, st, n_st };
	struct pccx_wpieces_out o = { 0 };
	struct pccx_job_view out;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__wpieces_rewrite(pc, 3, WHOLE, &job, &o, &out, &d), PCCX_ERR_INVALID);
	ck_assert_msg(strstr(d.msg, want) != NULL, "'%s' lacks '%s'", d.msg, want);
	pccx__wpieces_out_free(&o);
}

START_TEST(rewrite_refuses_bytes_outside)
{
	const struct pccx_stream_desc gap = { WHOLE, 1, 0x280, 0x100 };	/* into the gap */
	const struct pccx_stream_desc before = { WHOLE, 0, 0x0, 0x10 };	/* before piece 7 */
	const struct pccx_stream_desc after = { WHOLE, 0, 0x4f0, 0x20 };	/* past piece 9 */
	const struct pccx_dma_desc across = { WHOLE, PCCX_DMA_TO_DEVICE, 0x1f0, 0x20 };

	refused(NULL, 0, &gap, 1, "stream descriptor 0: bytes 0x280..0x380 of the split "
		"weights: byte 0x300 is in no piece");
	refused(NULL, 0, &before, 1, "bytes 0x0..0x10 of the split weights: byte 0x0 is in no");
	refused(NULL, 0, &after, 1, "bytes 0x4f0..0x510 of the split weights: byte 0x500 is in");
	/* a DMA descriptor is one MEMCPY: it may not be split */
	refused(&across, 1, NULL, 0, "DMA descriptor 0: bytes 0x1f0..0x210 of the split weights "
		"are not in one piece");
}
END_TEST

/* Many descriptors: the output arrays grow and are reused from job to job. */
START_TEST(rewrite_grows_and_reuses)
{
	enum { N = 1000 };
	const uint64_t insn[1] = { 0 };
	struct pccx_stream_desc *st = calloc(N, sizeof(*st));
	struct pccx_wpieces_out o = { 0 };
	struct pccx_job_view out;
	pccx_diag d = { 0 };
	uint32_t i;
	int round;

	ck_assert_ptr_nonnull(st);
	for (i = 0; i < N; i++)
		st[i] = (struct pccx_stream_desc){ WHOLE, i % 4, 0x1f0, 0x20 };
	for (round = 0; round < 2; round++) {
		const struct pccx_job_view job = { insn, 1, NULL, 0, st, N };

		ck_assert_int_eq(pccx__wpieces_rewrite(pc, 3, WHOLE, &job, &o, &out, &d), 0);
		ck_assert_uint_eq(out.n_stream, 2 * N);
		ck_assert_uint_eq(out.stream[2 * N - 1].handle, 8);
		ck_assert_uint_eq(out.stream[2 * N - 1].length, 0x10);
	}
	pccx__wpieces_out_free(&o);
	free(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wpieces");
	TCase *tc = tcase_create("rewrite");

	tcase_add_test(tc, rewrite_points_at_pieces);
	tcase_add_test(tc, rewrite_refuses_bytes_outside);
	tcase_add_test(tc, rewrite_grows_and_reuses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
