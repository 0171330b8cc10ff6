// SPDX-License-Identifier: MIT
/*
 * Batched prefill on the host (reference/batch_prefill.h) against token-by-token prefill:
 * the same KV cache, byte for byte, and the same logits at the next step, for every family,
 * batch sizes that do and do not divide the prompt, prompts longer than the sliding window,
 * and prefill continued from a position other than 0. Then the refusals.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "batch_prefill.h"
#include "exec_ref.h"
#include "session.h"
#include "support/ref_pair.h"

static uint32_t tok_at(const struct pccx_gemma_config *c, uint32_t i)
{
	return (13u * i + 5u) % c->vocab;
}

static const char *const presets[] = {
	"tiny", "tiny-gemma", "tiny-gemma2", "tiny-gemma3", "tiny-gemma4",
};
#define NPRESETS (sizeof(presets) / sizeof(presets[0]))
/* rows per batch: one (the lockstep machinery with nothing to share), uneven, wide */
static const uint32_t batch_rows[] = { 1, 4, 16, 64 };
#define NROWS (sizeof(batch_rows) / sizeof(batch_rows[0]))

/* n tokens token by token on s[0], batched (first split at `split`) on s[1]. */
static void prefill_both(struct ref_pair *p, struct pccx_batch_prefill *b, uint32_t n,
			 uint32_t split)
{
	uint32_t *toks = malloc(sizeof(*toks) * n), i;
	pccx_diag d = { 0 };

	ck_assert_ptr_nonnull(toks);
	for (i = 0; i < n; i++) {
		toks[i] = tok_at(&p->cfg, i);
		ck_assert_msg(pccx__gemma_session_step(p->s[0], toks[i], NULL, &d) == 0, "%s",
			      d.msg);
	}
	ck_assert_msg(pccx__batch_prefill_run(b, toks, split, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__batch_prefill_run(b, toks + split, n - split, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(p->s[1]->pos, n);
	ck_assert_uint_eq(p->s[0]->pos, n);
	free(toks);
}

START_TEST(test_same_bits)
{
	const char *preset = presets[_i / NROWS];
	uint32_t rows = batch_rows[_i % NROWS], n = 37, i;
	struct pccx_batch_prefill_stats st;
	struct pccx_batch_prefill *b;
	pccx_diag d = { 0 };
	struct ref_pair p;

	ref_pair_open(&p, preset, 5);
	ck_assert_msg(pccx__batch_prefill_create(&b, p.s[1], rows, 2, PCCX_KERN_AUTO, &d) == 0,
		      "%s", d.msg);
	prefill_both(&p, b, n, 10);
	ck_assert_msg(memcmp(p.s[0]->kv, p.s[1]->kv, p.s[0]->plan.kv_bytes) == 0,
		      "%s, %u rows per batch: the KV caches differ", preset, rows);
	/* and the next step, with logits, from each cache */
	for (i = 0; i < 2; i++)
		ck_assert_msg(pccx__gemma_session_step(p.s[i], tok_at(&p.cfg, n), p.logits[i],
						       &d) == 0, "%s", d.msg);
	ck_assert_msg(memcmp(p.logits[0], p.logits[1], sizeof(float) * p.cfg.vocab) == 0,
		      "%s, %u rows per batch: the logits differ", preset, rows);
	/* the weights were read once per batch: ceil(10 / rows) + ceil(27 / rows) passes */
	pccx__batch_prefill_stats(b, &st);
	ck_assert_uint_gt(st.batched_matmuls, 0);
	ck_assert_uint_eq(st.batched_matmuls % ((10 + rows - 1) / rows + (27 + rows - 1) / rows),
			  0);
	pccx__batch_prefill_free(b);
	ref_pair_close(&p);
}
END_TEST

/*
 * On a session planned with the reference's own extensions (PCCX_REF_EXEC_FEATURES: the
 * sparse FFN, as pccx ref and pccx bench --ref run): the batched prefill gives the KV cache and
 * next logits of token-by-token prefill on that plan, and shares every weight GEMV among the
 * rows as on the dense plan (the same weight passes and bytes: no rowmask GEMV taken for a
 * batchable one, no q4c W_down replayed row by row).
 */
START_TEST(test_sparse_plan)
{
	struct pccx_batch_prefill_stats st[2];
	uint32_t n = 37, i, k;
	pccx_diag d = { 0 };

	for (k = 0; k < 2; k++) {
		struct pccx_batch_prefill *b;
		struct ref_pair p;

		ref_pair_open(&p, "tiny", 5);
		for (i = 0; k && i < 2; i++)
			pccx__gemma_plan_use_features(&p.s[i]->plan, p.m, PCCX_REF_EXEC_FEATURES,
						      false);
		ck_assert(p.s[1]->plan.rowmask == (k == 1));
		ck_assert_msg(pccx__batch_prefill_create(&b, p.s[1], 16, 2, PCCX_KERN_AUTO, &d) ==
			      0, "%s", d.msg);
		prefill_both(&p, b, n, 10);
		ck_assert_msg(memcmp(p.s[0]->kv, p.s[1]->kv, p.s[0]->plan.kv_bytes) == 0,
			      "plan %u: the KV caches differ", k);
		for (i = 0; i < 2; i++)
			ck_assert_msg(pccx__gemma_session_step(p.s[i], tok_at(&p.cfg, n),
							       p.logits[i], &d) == 0, "%s", d.msg);
		ck_assert(!memcmp(p.logits[0], p.logits[1], sizeof(float) * p.cfg.vocab));
		pccx__batch_prefill_stats(b, &st[k]);
		pccx__batch_prefill_free(b);
		ref_pair_close(&p);
	}
	ck_assert_uint_gt(st[0].batched_matmuls, 0);
	ck_assert_uint_eq(st[1].batched_matmuls, st[0].batched_matmuls);
	ck_assert_uint_eq(st[1].weight_bytes, st[0].weight_bytes);
}
END_TEST

START_TEST(test_refusals)
{
	struct pccx_batch_prefill *b = NULL;
	uint32_t toks[3] = { 1, 2, 3 };
	pccx_diag d = { 0 };
	struct ref_pair p;

	ref_pair_open(&p, "tiny-gemma4-moe", 5);
	ck_assert_int_eq(pccx__batch_prefill_create(&b, p.s[1], 4, 1, PCCX_KERN_AUTO, &d),
			 PCCX_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(d.msg, "experts"));
	ck_assert_ptr_null(b);
	ref_pair_close(&p);

	ref_pair_open(&p, "tiny", 5);
	ck_assert_int_eq(pccx__batch_prefill_create(&b, p.s[1], 0, 1, PCCX_KERN_AUTO, &d),
			 PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx__batch_prefill_create(&b, p.s[1], PCCX_BATCH_MAX_ROWS + 1, 1,
						    PCCX_KERN_AUTO, &d), PCCX_ERR_INVALID);
	ck_assert_msg(pccx__batch_prefill_create(&b, p.s[1], 2, 1, PCCX_KERN_AUTO, &d) == 0, "%s",
		      d.msg);
	/* a token outside the vocabulary: refused, the position unchanged */
	toks[1] = p.cfg.vocab;
	ck_assert_int_eq(pccx__batch_prefill_run(b, toks, 3, &d), PCCX_ERR_RANGE);
	ck_assert_uint_eq(p.s[1]->pos, 0);
	/* more tokens than the context holds */
	toks[1] = 2;
	p.s[1]->pos = p.cfg.max_ctx - 2;
	ck_assert_int_eq(pccx__batch_prefill_run(b, toks, 3, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "max_ctx"));
	ck_assert_uint_eq(p.s[1]->pos, p.cfg.max_ctx - 2);
	pccx__batch_prefill_free(b);
	ref_pair_close(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("batch_prefill");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_same_bits, 0, NPRESETS * NROWS);
	tcase_add_test(tc, test_sparse_plan);
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
