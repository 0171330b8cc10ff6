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
#include "chunk_share.h"
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
	/* in one chunk of 36 every weight matmul is a GEMM (attention regions per kind and FFN
	 * regions per width, the embedding copied out of the image) */
	if (!chunk_rows[_i % NROWS])
		ck_assert_uint_eq(ck->st.gemv_bytes, 0);
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

/* ---- what a chunk's tokens share (chunk_share.h), on hand-made programs ---------------- */

static struct pccx_rec_op op_copy(uint32_t dst, uint32_t src, uint32_t words)
{
	struct pccx_rec_op o = { .kind = PCCX_REC_COPY };

	o.u.copy.dst = dst;
	o.u.copy.src = src;
	o.u.copy.words = words;
	return o;
}

static struct pccx_rec_op op_load(uint32_t l2, uint32_t buf, uint64_t off, uint32_t n)
{
	struct pccx_rec_op o = { .kind = PCCX_REC_LOAD };

	o.u.mem.l2 = l2;
	o.u.mem.buf = buf;
	o.u.mem.off = off;
	o.u.mem.n = n;
	return o;
}

/* A weight matmul: the boundary of two segments. */
static struct pccx_rec_op op_gemv(uint32_t dst, uint32_t src)
{
	struct pccx_rec_op o = { .kind = PCCX_REC_MATMUL };

	o.u.mm.dst = dst;
	o.u.mm.src = src;
	o.u.mm.n = 8;
	o.u.mm.k = 32;
	o.u.mm.m = 1;
	o.u.mm.fmt = PCCX_WFMT_Q4;
	o.u.mm.w.buf = PCCX_NPU_BUF_WEIGHTS;
	return o;
}

/* A plan of n regions of 8 words, at L2 words 0, 8, 16, ... */
static void regions_of_8(struct pccx_gemma_plan *p, uint32_t n)
{
	uint32_t i;

	p->n_regions = n;
	for (i = 0; i < n; i++) {
		p->region[i] = 8 * i;
		p->region_words[i] = 8;
	}
}

START_TEST(test_share_classes)
{
	/* regions of 8 words at 0, 8, ... 56: 0 weights loaded alike (same), 1 and 2 matmul
	 * rows, 3 read in a later segment, 4 written and read in one segment, 5 read before
	 * it is written, 6 a weight block loaded again after a read in the same segment,
	 * 7 a weight block a copy writes */
	static uint32_t seen[2 * PCCX_L2_WORDS];
	struct pccx_gemma_plan p = { 0 };
	struct pccx_chunk_share sh;
	struct pccx_rec_op ops[16];
	struct pccx_rec rec = { ops, 0, 16 };

	regions_of_8(&p, 8);
	p.region_same = 1u << 0 | 1u << 6 | 1u << 7;
	ops[rec.n++] = op_load(0, PCCX_NPU_BUF_WEIGHTS, 4096, 32);
	ops[rec.n++] = op_load(48, PCCX_NPU_BUF_WEIGHTS, 8192, 32);
	ops[rec.n++] = op_copy(24, 0, 8);		/* region 3 <- the weights */
	ops[rec.n++] = op_copy(8, 0, 8);		/* the matmul's input row */
	ops[rec.n++] = op_copy(8, 40, 8);		/* region 5 read before its write */
	ops[rec.n++] = op_copy(40, 0, 8);
	ops[rec.n++] = op_gemv(16, 8);
	ops[rec.n++] = op_copy(32, 24, 8);		/* 3 read in the next segment, 4 written */
	ops[rec.n++] = op_copy(40, 32, 8);		/* 4 read in the segment that wrote it */
	ops[rec.n++] = op_copy(40, 48, 8);		/* 6 read ... */
	ops[rec.n++] = op_load(48, PCCX_NPU_BUF_WEIGHTS, 8192, 32);	/* ... then loaded */
	ops[rec.n++] = op_copy(56, 16, 8);		/* 7 written by a copy */
	ck_assert_int_eq(pccx__chunk_share_classify(&p, &rec, seen, &sh), 0);
	ck_assert_int_eq(sh.bad_op, -1);
	ck_assert_uint_eq(sh.same, 1u << 0);
	ck_assert_uint_eq(sh.scratch, 1u << 4);

	/* an op naming L2 across two regions */
	ops[rec.n++] = op_copy(4, 20, 8);
	ck_assert_int_eq(pccx__chunk_share_classify(&p, &rec, seen, &sh), PCCX_ERR_INTERNAL);
	ck_assert_int_eq(sh.bad_op, (int)rec.n - 1);
}
END_TEST

/* Which regions hold values at the same op (pccx__chunk_share_conflicts). */
START_TEST(test_share_conflicts)
{
	/* regions of 8 words at 0, 8, ... 48; the op of each value's write and last read */
	static uint32_t seen[2 * PCCX_L2_WORDS];
	struct pccx_gemma_plan p = { 0 };
	uint64_t c[PCCX_GEMMA_PLAN_REGIONS];
	struct pccx_rec_op ops[16];
	struct pccx_rec rec = { ops, 0, 16 };

	regions_of_8(&p, 7);
	ops[rec.n++] = op_load(8, PCCX_NPU_BUF_IN, 0, 32);	/* 0: 1 written */
	ops[rec.n++] = op_load(24, PCCX_NPU_BUF_IN, 0, 32);	/* 1: 3 written */
	ops[rec.n++] = op_copy(48, 8, 8);	/* 2: 1 read (last), 6 written (never read) */
	ops[rec.n++] = op_copy(16, 32, 8);	/* 3: 4 read before any write, 2 written */
	ops[rec.n++] = op_copy(40, 16, 8);	/* 4: 2 read (last), 5 written */
	ops[rec.n++] = op_copy(48, 24, 8);	/* 5: 3 read (last), 6 written again */
	ops[rec.n++] = op_copy(0, 40, 8);	/* 6: 5 read (last), 0 written (never read) */
	/* 1: [0, 2]; 2: [3, 4]; 3: [1, 5]; 4: [0, 3]; 5: [4, 6]; 6: [2, 2] and [5, 5]; 0: [6] */
	ck_assert_int_eq(pccx__chunk_share_conflicts(&p, &rec, 0x7f, seen, c), 0);
	ck_assert_uint_eq(c[1], 1u << 1 | 1u << 3 | 1u << 4 | 1u << 6);
	ck_assert_uint_eq(c[2], 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5);
	ck_assert_uint_eq(c[3], 0x7eu);
	ck_assert_uint_eq(c[4], 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4 | 1u << 6);
	ck_assert_uint_eq(c[5], 1u << 0 | 1u << 2 | 1u << 3 | 1u << 5 | 1u << 6);
	ck_assert_uint_eq(c[6], 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6);
	ck_assert_uint_eq(c[0], 1u << 0 | 1u << 5);
	/* regions outside the mask take no part */
	ck_assert_int_eq(pccx__chunk_share_conflicts(&p, &rec, 0x7f & ~(1u << 3), seen, c), 0);
	ck_assert_uint_eq(c[3], 0);
	ck_assert_uint_eq(c[2], 1u << 2 | 1u << 4 | 1u << 5);
	/* an op naming L2 across two regions */
	ops[rec.n++] = op_copy(4, 20, 8);
	ck_assert_int_eq(pccx__chunk_share_conflicts(&p, &rec, 0x7f, seen, c), PCCX_ERR_INTERNAL);
}
END_TEST

/* The layouts of the real shapes: one copy of the vector blocks and the scratch for all. */
START_TEST(test_share_real_shapes)
{
	static const char *const shapes[] = { "e4b", "gemma-2-2b", "gemma-3-1b", "gemma-4-e4b" };
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	struct pccx_gemma_plan p;
	struct pccx_gemma_chunk *ck;
	pccx_diag d = { 0 };
	uint64_t all = 0, token, per_region, sharing = 0;
	uint32_t i, j, rows, placed = 0;

	ck_assert_int_eq(pccx__gemma_config_preset(shapes[_i], &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_plan_build(m, &p, &d) == 0, "%s", d.msg);
	for (i = 0; i < p.n_regions; i++)
		all += p.region_words[i];
	rows = pccx__gemma_chunk_rows_max(m, &p);
	ck_assert_uint_ge(rows, 2);
	ck_assert_msg(pccx__gemma_chunk_create(&ck, m, &p, rows, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(ck->same, p.region_same);
	ck_assert_uint_ne(ck->scratch, 0);
	/* more tokens than a copy of every region per token would allow */
	ck_assert_uint_gt(rows, PCCX_L2_WORDS / all);
	ck_assert_uint_le(ck->words, PCCX_L2_WORDS);
	/* a token's regions share places: fewer words per token than the regions, no two of a
	 * place holding values at once, a GEMM's rows one row apart */
	token = 0;
	for (i = 0; i < p.n_regions; i++) {
		if (ck->place_of[i] < 0)
			continue;
		if (!(sharing >> ck->place_of[i] & 1))
			token += ck->stride[i];
		sharing |= 1ull << ck->place_of[i];
		ck_assert_uint_ge(ck->stride[i], ck->rp.region_words[i]);
		if (ck->lo.rows_of >> i & 1)
			ck_assert_uint_eq(ck->stride[i], ck->rp.region_words[i]);
		for (j = 0; j < p.n_regions; j++)
			if (j != i && ck->place_of[j] == ck->place_of[i]) {
				ck_assert_uint_eq(ck->lo.conflict[i] >> j & 1, 0);
				ck_assert_uint_eq(ck->base[j], ck->base[i]);
				placed++;
			}
	}
	ck_assert_uint_gt(placed, 0);
	per_region = 0;
	for (i = 0; i < p.n_regions; i++)
		if (ck->place_of[i] >= 0)
			per_region += ck->rp.region_words[i];
	ck_assert_uint_lt(token, per_region);
	pccx__gemma_chunk_free(ck);
	pccx__gemma_model_free(m);
}
END_TEST

/* A layout that puts two regions whose values live at once in one place is refused. */
START_TEST(test_place_conflict_refused)
{
	struct pccx_gemma_chunk *ck = NULL;
	uint32_t toks[2] = { 5, 6 }, i, j;
	pccx_diag d = { 0 };
	struct ref_pair p;
	bool found = false;

	ref_pair_open(&p, "tiny", 9);
	ck_assert_msg(pccx__gemma_chunk_create(&ck, p.m, &p.s[1]->plan, 2, &d) == 0, "%s", d.msg);
	for (i = 0; i < ck->rp.n_regions && !found; i++)
		for (j = 0; j < ck->rp.n_regions && !found; j++)
			if (i != j && ck->place_of[i] >= 0 && ck->place_of[j] >= 0 &&
			    ck->place_of[i] != ck->place_of[j] && (ck->lo.conflict[i] >> j & 1)) {
				ck->place_of[j] = ck->place_of[i];
				ck->base[j] = ck->base[i];
				ck->stride[j] = ck->stride[i];
				found = true;
			}
	ck_assert(found);
	ck_assert_int_eq(pccx__gemma_session_chunk(p.s[1], ck, toks, 2, &d), PCCX_ERR_INTERNAL);
	ck_assert_msg(strstr(d.msg, "share a place") != NULL, "%s", d.msg);
	ck_assert_uint_eq(p.s[1]->pos, 0);
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
	tcase_add_test(tc, test_share_classes);
	tcase_add_test(tc, test_share_conflicts);
	tcase_add_test(tc, test_place_conflict_refused);
	tcase_add_loop_test(tc, test_share_real_shapes, 0, 4);
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
