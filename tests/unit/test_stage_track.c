/* SPDX-License-Identifier: MIT */
/*
 * When verify compares a device job's stages (host/runtime/stage_track.c): each stage exactly
 * once, at the first retire after which its last writer and every earlier writer of its range
 * have completed, the retiring instruction counting as completed; the stages of one retire in
 * stage order. Checked by hand on out-of-order retires and against a brute-force definition on
 * random jobs and retire orders.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pccx_isa.h"
#include "stage_track.h"

#define MAX_INSN 64
#define MAX_STAGES 48

static bool done_of(void *user, uint32_t j)
{
	return ((const bool *)user)[j];
}

static struct pccx_job_builder_stage stage(uint32_t insn, uint32_t word, uint32_t words)
{
	struct pccx_job_builder_stage s = { insn, word, 1, 4 * words, "s" };

	return s;
}

/* Two writers of one stage, the last writer retiring first: the stage waits for the other
 * and is ready at its retire (whose own done flag is not set yet). */
START_TEST(last_writer_first)
{
	static const struct pccx_l2_range wr[2] = { { 0, 1 }, { 1, 1 } };
	struct pccx_job_builder_stage st[1] = { stage(1, 0, 2) };
	struct pccx_stage_track t = { 0 };
	bool done[2] = { false, false };
	const uint32_t *ready;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__stage_track_begin(&t, st, 1, wr, &d), 0);
	ck_assert_uint_eq(pccx__stage_track_retire(&t, 1, done_of, done, &ready), 0);
	ck_assert_uint_eq(pccx__stage_track_waiting(&t), 1);
	done[1] = true;
	ck_assert_uint_eq(pccx__stage_track_retire(&t, 0, done_of, done, &ready), 1);
	ck_assert_uint_eq(ready[0], 0);
	ck_assert_uint_eq(pccx__stage_track_waiting(&t), 0);
	pccx__stage_track_free(&t);
}
END_TEST

/* A writer of another range, and a write after the stage's last writer, do not hold it. */
START_TEST(only_earlier_writers_of_the_range)
{
	static const struct pccx_l2_range wr[4] = { { 8, 4 }, { 0, 2 }, { 2, 2 }, { 0, 4 } };
	struct pccx_job_builder_stage st[2] = { stage(2, 0, 4), stage(1, 0, 2) };
	struct pccx_stage_track t = { 0 };
	bool done[4] = { false, false, false, false };
	const uint32_t *ready;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__stage_track_begin(&t, st, 2, wr, &d), 0);
	/* 2 retires: stage 0 waits for 1 (not for 0: another range; not for 3: after it) */
	ck_assert_uint_eq(pccx__stage_track_retire(&t, 2, done_of, done, &ready), 0);
	done[2] = true;
	/* 1 retires: both stages ready, in stage order */
	ck_assert_uint_eq(pccx__stage_track_retire(&t, 1, done_of, done, &ready), 2);
	ck_assert_uint_eq(ready[0], 0);
	ck_assert_uint_eq(ready[1], 1);
	done[1] = true;
	ck_assert_uint_eq(pccx__stage_track_retire(&t, 0, done_of, done, &ready), 0);
	ck_assert_uint_eq(pccx__stage_track_retire(&t, 3, done_of, done, &ready), 0);
	pccx__stage_track_free(&t);
}
END_TEST

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33) % n;
}

static bool overlaps(const struct pccx_l2_range *r, uint64_t lo, uint64_t hi)
{
	return r->words && r->base < hi && lo < (uint64_t)r->base + r->words;
}

/* The definition: after instruction `now` retires (done[] with now set), is stage k ready? */
static bool ready_by_definition(const struct pccx_job_builder_stage *s,
				const struct pccx_l2_range *wr, const bool *done)
{
	uint64_t lo = s->word, hi = lo + (uint64_t)s->rows * pccx_words_for(s->cols);
	uint32_t j;

	if (!done[s->insn])
		return false;
	for (j = 0; j < s->insn; j++)
		if (overlaps(&wr[j], lo, hi) && !done[j])
			return false;
	return true;
}

/* Random jobs (one tracker reused, so its arrays grow and shrink) and random retire orders. */
START_TEST(random_jobs_against_the_definition)
{
	struct pccx_stage_track t = { 0 };
	uint64_t seed = 12345;
	int job;

	for (job = 0; job < 800; job++) {
		struct pccx_l2_range wr[MAX_INSN];
		struct pccx_job_builder_stage st[MAX_STAGES];
		uint32_t order[MAX_INSN], n_insn = 1 + rnd(&seed, MAX_INSN);
		uint32_t n_st = rnd(&seed, MAX_STAGES + 1), i, k, got, seen_total = 0;
		int32_t at[MAX_STAGES];
		bool done[MAX_INSN] = { false }, was_ready[MAX_STAGES] = { false };
		const uint32_t *ready;
		pccx_diag d = { 0 };

		for (i = 0; i < n_insn; i++) {
			wr[i].base = rnd(&seed, 24);
			wr[i].words = rnd(&seed, 4) ? 1 + rnd(&seed, 6) : 0;
			order[i] = i;
		}
		for (k = 0; k < n_st; k++) {
			st[k] = stage(rnd(&seed, n_insn), rnd(&seed, 24), 1 + rnd(&seed, 8));
			at[k] = -1;
		}
		/* mostly in order with local swaps (as units overlap), sometimes any order */
		for (i = 0; i + 1 < n_insn; i++) {
			uint32_t span = job % 4 ? 4 : n_insn - i, o = i + rnd(&seed, span < n_insn - i ?
								       span : n_insn - i);
			uint32_t tmp = order[i];

			order[i] = order[o];
			order[o] = tmp;
		}
		ck_assert_int_eq(pccx__stage_track_begin(&t, st, n_st, wr, &d), 0);
		for (i = 0; i < n_insn; i++) {
			uint32_t now = order[i];

			got = pccx__stage_track_retire(&t, now, done_of, done, &ready);
			done[now] = true;
			for (k = 0; k < got; k++) {
				ck_assert_msg(at[ready[k]] < 0, "job %d: stage %u twice", job, ready[k]);
				ck_assert(k == 0 || ready[k] > ready[k - 1]);
				at[ready[k]] = (int32_t)i;
			}
			seen_total += got;
			/* exactly the stages that became ready at this retire */
			for (k = 0; k < n_st; k++) {
				bool r = ready_by_definition(&st[k], wr, done);

				ck_assert_msg(r == (at[k] >= 0), "job %d retire %u (insn %u): stage %u "
					      "ready %d, reported %d", job, i, now, k, r, at[k] >= 0);
				if (r && !was_ready[k])
					ck_assert_int_eq(at[k], (int32_t)i);
				was_ready[k] = r;
			}
		}
		ck_assert_uint_eq(seen_total, n_st);
		ck_assert_uint_eq(pccx__stage_track_waiting(&t), 0);
	}
	pccx__stage_track_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stage_track");
	TCase *tc = tcase_create("stage_track");
	SRunner *sr;
	int failed;

	/* CPU-bound and deterministic: about 3 s under the sanitizers on an idle core */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, last_writer_first);
	tcase_add_test(tc, only_earlier_writers_of_the_range);
	tcase_add_test(tc, random_jobs_against_the_definition);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
