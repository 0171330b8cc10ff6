// SPDX-License-Identifier: MIT
/*
 * Prompts in chunks on the NPU's op program (reference/gemma_chunk.h), executed by the
 * reference NPU: the KV cache, byte for byte, and the logits of the next step equal those of
 * token-by-token prefill, for every family, chunk sizes that do and do not divide the prompt,
 * and prompts longer than the sliding window; the weight matmuls run as GEMMs; the refusals.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "exec_ref.h"
#include "gemma_chunk.h"
#include "session.h"
#include "support/ref_pair.h"

static uint32_t tok_at(const struct pccx_gemma_config *c, uint32_t i)
{
	return (11u * i + 3u) % c->vocab;
}

static const char *const presets[] = {
	"tiny", "tiny-gemma", "tiny-gemma2", "tiny-gemma3", "tiny-gemma4",
};
#define NPRESETS (sizeof(presets) / sizeof(presets[0]))
/* tokens per chunk: 2, an uneven 5, and all L2 holds (0 here) */
static const uint32_t chunk_rows[] = { 2, 5, 0 };
#define NROWS (sizeof(chunk_rows) / sizeof(chunk_rows[0]))

START_TEST(test_same_bits)
{
	const char *preset = presets[_i / NROWS];
	uint32_t rows = chunk_rows[_i % NROWS], n = 37, done, i, k;
	struct pccx_gemma_chunk *ck;
	pccx_diag d = { 0 };
	struct ref_pair p;
	uint32_t toks[37];

	ref_pair_open(&p, preset, 9);
	if (!rows)
		rows = pccx__gemma_chunk_rows_max(p.m, &p.s[1]->plan);
	ck_assert_uint_ge(rows, 2);
	ck_assert_uint_ge(p.s[1]->in_rows, rows);
	ck_assert_msg(pccx__gemma_chunk_create(&ck, p.m, &p.s[1]->plan, rows, &d) == 0, "%s",
		      d.msg);
	for (i = 0; i < n; i++) {
		toks[i] = tok_at(&p.cfg, i);
		ck_assert_msg(pccx__gemma_session_step(p.s[0], toks[i], NULL, &d) == 0, "%s",
			      d.msg);
	}
	for (done = 0; done < n; done += k) {
		k = n - done < rows ? n - done : rows;
		ck_assert_msg(pccx__gemma_session_chunk(p.s[1], ck, toks + done, k, &d) == 0,
			      "%s: %s", preset, d.msg);
	}
	ck_assert_uint_eq(p.s[1]->pos, n);
	ck_assert_msg(memcmp(p.s[0]->kv, p.s[1]->kv, p.s[0]->plan.kv_bytes) == 0,
		      "%s, %u tokens per chunk: the KV caches differ", preset, rows);
	for (i = 0; i < 2; i++)
		ck_assert_msg(pccx__gemma_session_step(p.s[i], tok_at(&p.cfg, n), p.logits[i],
						       &d) == 0, "%s", d.msg);
	ck_assert_msg(memcmp(p.logits[0], p.logits[1], sizeof(float) * p.cfg.vocab) == 0,
		      "%s, %u tokens per chunk: the logits differ", preset, rows);
	/*
	 * The shared weights streamed once per chunk, as GEMMs: fewer bytes than token by token
	 * (the reference NPU counts what the matmuls read, the KV rows included, the same on
	 * both sides). Gemma 4's narrower layers, whose rows are not one region wide, still run
	 * per token, so the saving is checked, not its size.
	 */
	ck_assert_uint_gt(ck->st.gemms, 0);
	ck_assert_uint_lt(pccx__ref_exec_counters(p.x[1])->stream_bytes,
			  pccx__ref_exec_counters(p.x[0])->stream_bytes);
	pccx__gemma_chunk_free(ck);
	ref_pair_close(&p);
}
END_TEST

START_TEST(test_refusals)
{
	struct pccx_gemma_chunk *ck = NULL;
	uint32_t toks[4] = { 1, 2, 3, 4 }, max;
	pccx_diag d = { 0 };
	struct ref_pair p;

	ref_pair_open(&p, "tiny-gemma4-moe", 9);
	ck_assert_uint_eq(pccx__gemma_chunk_rows_max(p.m, &p.s[1]->plan), 0);
	ck_assert_uint_eq(p.s[1]->in_rows, 1);
	ck_assert_int_eq(pccx__gemma_chunk_create(&ck, p.m, &p.s[1]->plan, 2, &d),
			 PCCX_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(d.msg, "experts"));
	ck_assert_ptr_null(ck);
	ref_pair_close(&p);

	ref_pair_open(&p, "tiny", 9);
	max = pccx__gemma_chunk_rows_max(p.m, &p.s[1]->plan);
	ck_assert_int_eq(pccx__gemma_chunk_create(&ck, p.m, &p.s[1]->plan, 0, &d),
			 PCCX_ERR_INVALID);
	if (max < PCCX_GEMMA_CHUNK_MAX_ROWS) {
		ck_assert_int_eq(pccx__gemma_chunk_create(&ck, p.m, &p.s[1]->plan, max + 1, &d),
				 PCCX_ERR_RANGE);
		ck_assert_ptr_nonnull(strstr(d.msg, "L2"));
	}
	ck_assert_msg(pccx__gemma_chunk_create(&ck, p.m, &p.s[1]->plan, 2, &d) == 0, "%s", d.msg);
	/* more tokens than the chunk holds; a token outside the vocabulary; a full context */
	ck_assert_int_eq(pccx__gemma_session_chunk(p.s[1], ck, toks, 3, &d), PCCX_ERR_INVALID);
	toks[1] = p.cfg.vocab;
	ck_assert_int_eq(pccx__gemma_session_chunk(p.s[1], ck, toks, 2, &d), PCCX_ERR_RANGE);
	ck_assert_uint_eq(p.s[1]->pos, 0);
	toks[1] = 2;
	p.s[1]->pos = p.cfg.max_ctx - 1;
	ck_assert_int_eq(pccx__gemma_session_chunk(p.s[1], ck, toks, 2, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "max_ctx"));
	ck_assert_uint_eq(p.s[1]->pos, p.cfg.max_ctx - 1);
	pccx__gemma_chunk_free(ck);
	ref_pair_close(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("chunk");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_same_bits, 0, NPRESETS * NROWS);
	tcase_add_test(tc, test_refusals);
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
