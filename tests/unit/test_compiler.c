// SPDX-License-Identifier: MIT
/*
 * The compiler against the validator: every job the Gemma 3n step compiles to must be
 * accepted by the one validator the kernel runs, for every position of a tiny model. And
 * the weight-buffer pieces for size-limited devices hold every weight range those jobs read.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "gemma_graph.h"
#include "gemma_pieces.h"
#include "pccx_job.h"

struct bufs {
	uint64_t size[PCCX_NPU_NBUF];
	bool dev_write[PCCX_NPU_NBUF];
	int binds;
};

static int bind_cb(void *user, uint32_t buf, void *base, uint64_t size, bool dev_write,
		   uint32_t *handle)
{
	struct bufs *b = user;

	(void)base;
	b->size[buf] = size;
	b->dev_write[buf] = dev_write;
	b->binds++;
	*handle = 100 + buf;
	return 0;
}

static int lookup(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access)
{
	struct bufs *b = ctx;

	if (handle < 100 || handle >= 100 + PCCX_NPU_NBUF)
		return -1;
	*size = b->size[handle - 100];
	*access = PCCX_BUF_DEV_READ | (b->dev_write[handle - 100] ? PCCX_BUF_DEV_WRITE : 0);
	return 0;
}

struct fixture {
	struct pccx_gemma_model *m;
	struct pccx_gemma_plan plan;
	struct pccx_compiler c;
	struct bufs b;
	uint8_t *kv, *in, *out;
};

static void setup(struct fixture *f, const char *config)
{
	struct pccx_gemma_config cfg;
	const struct pccx_npu_ops *ops = pccx__compiler_ops();
	pccx_diag d = { 0 };

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(pccx__gemma_config_preset(config, &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&f->m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(f->m, 1, 1, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_plan_build(f->m, &f->plan, &d) == 0, "%s", d.msg);
	f->kv = calloc(1, f->plan.kv_bytes);
	f->in = calloc(1, f->plan.in_bytes);
	f->out = calloc(1, f->plan.out_bytes);
	ck_assert(f->kv && f->in && f->out);
	pccx__compiler_init(&f->c, bind_cb, &f->b);
	ck_assert_int_eq(ops->bind(&f->c, PCCX_NPU_BUF_WEIGHTS, f->m->data, f->m->size, false), 0);
	ck_assert_int_eq(ops->bind(&f->c, PCCX_NPU_BUF_KV, f->kv, f->plan.kv_bytes, true), 0);
	ck_assert_int_eq(ops->bind(&f->c, PCCX_NPU_BUF_IN, f->in, f->plan.in_bytes, false), 0);
	ck_assert_int_eq(ops->bind(&f->c, PCCX_NPU_BUF_OUT, f->out, f->plan.out_bytes, true), 0);
}

static void teardown(struct fixture *f)
{
	pccx__compiler_free(&f->c);
	pccx__gemma_model_free(f->m);
	free(f->kv);
	free(f->in);
	free(f->out);
}

static void check_steps(const char *config, uint32_t n_pos)
{
	struct fixture f;
	uint32_t pos;

	setup(&f, config);
	for (pos = 0; pos < n_pos; pos++) {
		struct pccx_job_view job;
		struct pccx_vresult res;
		pccx_diag d = { 0 };
		uint8_t *used;
		int rc;

		rc = pccx__gemma_step(f.m, &f.plan, pccx__compiler_ops(), &f.c, pos, true, NULL);
		ck_assert_msg(rc == 0, "pos %u: %s", pos, f.c.err.msg);
		ck_assert_msg(pccx__compiler_job(&f.c, &job, &d) == 0, "%s", d.msg);
		ck_assert_uint_gt(job.n_insn, 0);
		used = calloc(PCCX_DMA_BITMAP_BYTES(job.n_dma), 1);
		ck_assert_ptr_nonnull(used);
		rc = pccx__validate(&job, lookup, &f.b, NULL, used, &res);
		free(used);
		ck_assert_msg(rc == 0, "%s pos %u: validator %s at %u index %u field %d (%llu vs %llu)",
			      config, pos, pccx__isa_errname(rc), res.where, res.index, res.field,
			      (unsigned long long)res.expected, (unsigned long long)res.actual);
		/* the stream carries every streamed weight byte the step needs, at least */
		ck_assert_uint_gt(res.port_bytes[0], 0);
		ck_assert_uint_gt(f.c.jb.n_stages, 0);
	}
	teardown(&f);
}

START_TEST(tiny_steps_validate)
{
	check_steps("tiny", 6);
}
END_TEST

/* The opcodes of a job's instructions other than MEMSET (shape-RAM writes), in order. */
static uint32_t work_opcodes(const struct pccx_job_view *j, uint8_t *ops)
{
	uint32_t i, n = 0;

	for (i = 0; i < j->n_insn; i++)
		if (pccx_opcode_of(j->insn[i]) != PCCX_OP_MEMSET)
			ops[n++] = (uint8_t)pccx_opcode_of(j->insn[i]);
	return n;
}

static uint64_t stream_bytes(const struct pccx_job_view *j)
{
	uint64_t b = 0;
	uint32_t i;

	for (i = 0; i < j->n_stream; i++)
		b += j->stream[i].length;
	return b;
}

START_TEST(job_is_position_dependent)
{
	struct fixture f;
	struct pccx_job_view j0, j1;
	pccx_diag d = { 0 };
	uint8_t *ops0, *ops1;
	uint32_t n0, n1;
	uint64_t s0;

	setup(&f, "tiny");
	ck_assert_int_eq(pccx__gemma_step(f.m, &f.plan, pccx__compiler_ops(), &f.c, 0, true, NULL), 0);
	ck_assert_int_eq(pccx__compiler_job(&f.c, &j0, &d), 0);
	ops0 = malloc(j0.n_insn);
	ck_assert_ptr_nonnull(ops0);
	n0 = work_opcodes(&j0, ops0);
	s0 = stream_bytes(&j0);
	ck_assert_int_eq(pccx__gemma_step(f.m, &f.plan, pccx__compiler_ops(), &f.c, 3, true, NULL), 0);
	ck_assert_int_eq(pccx__compiler_job(&f.c, &j1, &d), 0);
	ops1 = malloc(j1.n_insn);
	ck_assert_ptr_nonnull(ops1);
	n1 = work_opcodes(&j1, ops1);
	/*
	 * Same program shape: the same instructions in the same order. Only the number of
	 * shape-RAM writes may differ, as the builder reuses an entry already holding a shape
	 * (at position 3 the context GEMM's fmap (4, 4, 1) is the entry of the 4-word copies).
	 */
	ck_assert_uint_gt(n0, 0);
	ck_assert_uint_eq(n1, n0);
	ck_assert_int_eq(memcmp(ops0, ops1, n0), 0);
	/* but attention streams more KV rows at a later position */
	ck_assert_uint_gt(stream_bytes(&j1), s0);
	free(ops0);
	free(ops1);
	teardown(&f);
}
END_TEST

/* The piece holding [off, off + len), or -1. */
static int piece_holding(const struct pccx_gemma_piece *pc, size_t n, uint64_t off, uint64_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (off >= pc[i].offset && off + len <= pc[i].offset + pc[i].bytes)
			return (int)i;
	return -1;
}

/* Every descriptor naming buffer `buf` in the jobs compiled at positions 0, step, ... < end
 * lies inside one piece. */
static void assert_in_pieces(struct fixture *f, const struct pccx_gemma_piece *pc, size_t n,
			     uint32_t buf, uint32_t end, uint32_t step)
{
	pccx_diag d = { 0 };
	uint32_t pos, i;

	for (pos = 0; pos < end; pos += step) {
		struct pccx_job_view job;

		ck_assert_int_eq(pccx__gemma_step(f->m, &f->plan, pccx__compiler_ops(), &f->c, pos,
						    true, NULL), 0);
		ck_assert_int_eq(pccx__compiler_job(&f->c, &job, &d), 0);
		for (i = 0; i < job.n_stream; i++)
			if (job.stream[i].handle == 100 + buf)
				ck_assert_msg(piece_holding(pc, n, job.stream[i].offset,
							    job.stream[i].length) >= 0,
					      "buffer %u, position %u: stream %u at 0x%llx+%llu in "
					      "no piece", buf, pos, i,
					      (unsigned long long)job.stream[i].offset,
					      (unsigned long long)job.stream[i].length);
		for (i = 0; i < job.n_dma; i++)
			if (job.dma[i].handle == 100 + buf)
				ck_assert_int_ge(piece_holding(pc, n, job.dma[i].offset,
							       job.dma[i].length), 0);
	}
}

/*
 * Pieces under several limits: in order, disjoint, 16-byte aligned, each within the limit,
 * and every weight descriptor of the compiled jobs (several positions, with and without the
 * sparse extensions) inside one piece.
 */
START_TEST(weight_pieces_hold_every_read)
{
	static const uint64_t limits[] = { 48 << 10, 200 << 10, 512 << 10, UINT64_MAX };
	struct fixture f;
	unsigned li;

	setup(&f, "tiny");
	for (li = 0; li < sizeof(limits) / sizeof(limits[0]); li++) {
		struct pccx_gemma_piece *pc;
		pccx_diag d = { 0 };
		size_t n, k;

		ck_assert_msg(pccx__gemma_weight_pieces(f.m, limits[li], &pc, &n, &d) == 0, "%s",
			      d.msg);
		ck_assert_uint_gt(n, 0);
		for (k = 0; k < n; k++) {
			ck_assert_uint_le(pc[k].bytes, limits[li]);
			ck_assert_uint_eq(pc[k].offset % 16, 0);
			ck_assert_uint_le(pc[k].offset + pc[k].bytes, f.m->size);
			if (k)
				ck_assert_uint_ge(pc[k].offset, pc[k - 1].offset + pc[k - 1].bytes);
		}
		if (limits[li] == UINT64_MAX)
			ck_assert_uint_eq(n, 1);
		assert_in_pieces(&f, pc, n, PCCX_NPU_BUF_WEIGHTS, 3, 1);
		/* ... and those of a device with the sparse extensions (the q4c W_down) */
		f.plan.rowmask = f.plan.colskip = true;
		assert_in_pieces(&f, pc, n, PCCX_NPU_BUF_WEIGHTS, 3, 1);
		f.plan.rowmask = f.plan.colskip = false;
		free(pc);
	}
	teardown(&f);
}
END_TEST

/* A piece function refused a 4 KiB limit: no pieces, and a message with `what` and both sizes. */
static void assert_refused_4k(int rc, const struct pccx_gemma_piece *pc, size_t n,
			      const pccx_diag *d, const char *what)
{
	ck_assert_int_eq(rc, PCCX_ERR_RANGE);
	ck_assert_ptr_null(pc);
	ck_assert_uint_eq(n, 0);
	ck_assert_msg(strstr(d->msg, "more than the device's largest buffer (4096 bytes)") &&
		      strstr(d->msg, what), "%s", d->msg);
}

/* A limit below one instruction's read is refused, naming the range and both sizes. */
START_TEST(weight_pieces_limit_too_small)
{
	struct pccx_gemma_piece *pc = (void *)1;
	struct fixture f;
	pccx_diag d = { 0 };
	size_t n = 7;
	int rc;

	setup(&f, "tiny");
	rc = pccx__gemma_weight_pieces(f.m, 4096, &pc, &n, &d);
	assert_refused_4k(rc, pc, n, &d, "are read by one instruction");
	teardown(&f);
}
END_TEST

/*
 * KV pieces under several limits: they tile the KV buffer in order, each within the limit,
 * and every KV descriptor of the compiled jobs (positions past the local window too) lies
 * inside one piece.
 */
START_TEST(kv_pieces_hold_every_access)
{
	static const uint64_t limits[] = { 128 << 10, 300 << 10, 512 << 10, UINT64_MAX };
	struct fixture f;
	unsigned li;

	setup(&f, "tiny");
	for (li = 0; li < sizeof(limits) / sizeof(limits[0]); li++) {
		struct pccx_gemma_piece *pc;
		pccx_diag d = { 0 };
		uint64_t at = 0;
		size_t n, k;

		ck_assert_msg(pccx__gemma_kv_pieces(f.m, &f.plan, limits[li], &pc, &n, &d) == 0,
			      "%s", d.msg);
		for (k = 0; k < n; k++) {
			ck_assert_uint_eq(pc[k].offset, at);	/* back to back, from 0 */
			ck_assert_uint_le(pc[k].bytes, limits[li]);
			at += pc[k].bytes;
		}
		ck_assert_uint_eq(at, f.plan.kv_bytes);
		if (limits[li] == UINT64_MAX)
			ck_assert_uint_eq(n, 1);
		else
			ck_assert_uint_gt(n, 1);
		assert_in_pieces(&f, pc, n, PCCX_NPU_BUF_KV, 40, 13);
		free(pc);
	}
	teardown(&f);
}
END_TEST

/* A limit below one head's K or V rows of one layer is refused, naming them and both sizes. */
START_TEST(kv_pieces_limit_too_small)
{
	struct pccx_gemma_piece *pc = (void *)1;
	struct fixture f;
	pccx_diag d = { 0 };
	size_t n = 7;
	int rc;

	setup(&f, "tiny");
	rc = pccx__gemma_kv_pieces(f.m, &f.plan, 4096, &pc, &n, &d);
	assert_refused_4k(rc, pc, n, &d, "KV cache: the K rows of layer 0, kv head 0");
	teardown(&f);
}
END_TEST

/* E4B: the PLE table is never read by the device, so the pieces leave it out. */
START_TEST(weight_pieces_e4b_skip_unread)
{
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	struct pccx_gemma_piece *pc;
	pccx_diag d = { 0 };
	uint64_t total = 0;
	size_t n, k;

	ck_assert_int_eq(pccx__gemma_config_preset("e4b", &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_weight_pieces(m, 64ull << 20, &pc, &n, &d) == 0, "%s", d.msg);
	for (k = 0; k < n; k++)
		total += pc[k].bytes;
	/* what a step streams plus the vector blocks it loads, and no more than 1 % besides */
	ck_assert_uint_ge(total, pccx__gemma_streamed_bytes(m));
	ck_assert_uint_le(total, pccx__gemma_streamed_bytes(m) + pccx__gemma_streamed_bytes(m) / 100);
	ck_assert_uint_lt(total, m->size);
	free(pc);
	pccx__gemma_model_free(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("compiler");
	TCase *tc = tcase_create("jobs");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, tiny_steps_validate);
	tcase_add_test(tc, job_is_position_dependent);
	tcase_add_test(tc, weight_pieces_hold_every_read);
	tcase_add_test(tc, weight_pieces_limit_too_small);
	tcase_add_test(tc, kv_pieces_hold_every_access);
	tcase_add_test(tc, kv_pieces_limit_too_small);
	tcase_add_test(tc, weight_pieces_e4b_skip_unread);
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
