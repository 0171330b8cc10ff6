/* SPDX-License-Identifier: MIT */
/*
 * The job validator (isa/validate.c, isa/effects.c) and the weight-stream
 * geometry (isa/wstream.c): one refusal path per test, with where it points;
 * the exact L2 boundaries; descriptor arithmetic near 2^64; accepted jobs and
 * their summaries; and that nothing past the declared counts is ever read.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pccx_asm.h"
#include "pccx_job.h"
#include "pccx_regs.h"

#define L2 PCCX_L2_WORDS

/* ---- a job under construction ------------------------------------------------- */

struct tbuf {
	uint32_t handle;
	uint32_t access;
	uint64_t size;
};

struct tjob {
	uint64_t insn[64];
	uint32_t n_insn;
	struct pccx_dma_desc dma[16];
	uint32_t n_dma;
	struct pccx_stream_desc stream[16];
	uint32_t n_stream;
	struct tbuf buf[8];
	uint32_t n_buf;
	struct pccx_vlimits lim;
	uint8_t used[PCCX_DMA_BITMAP_BYTES(16)];
	struct pccx_vresult res;
};

static struct tjob J;

static void job_reset(void)
{
	memset(&J, 0, sizeof(J));
	pccx__vlimits_default(&J.lim);
}

static void word(uint64_t w)
{
	ck_assert_uint_lt(J.n_insn, 64);
	J.insn[J.n_insn++] = w;
}

/* Append one line of assembly (which must assemble). */
static void I(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void I(const char *fmt, ...)
{
	char line[200];
	struct pccx_asm_error e;
	uint64_t w = 0;
	bool has = false;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	rc = pccx__asm_line(line, strlen(line), &w, &has, &e);
	ck_assert_msg(rc == 0 && has, "'%s': %s at column %zu", line, pccx__asm_strerror(rc),
		      e.column);
	word(w);
}

static uint32_t dma(uint32_t handle, uint32_t flags, uint64_t offset, uint64_t length)
{
	ck_assert_uint_lt(J.n_dma, 16);
	J.dma[J.n_dma] = (struct pccx_dma_desc){ handle, flags, offset, length };
	return J.n_dma++;
}

static uint32_t stream(uint32_t handle, uint32_t port, uint64_t offset, uint64_t length)
{
	ck_assert_uint_lt(J.n_stream, 16);
	J.stream[J.n_stream] = (struct pccx_stream_desc){ handle, port, offset, length };
	return J.n_stream++;
}

static void buf(uint32_t handle, uint64_t size, uint32_t access)
{
	ck_assert_uint_lt(J.n_buf, 8);
	J.buf[J.n_buf++] = (struct tbuf){ handle, access, size };
}

static int lookup(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access)
{
	const struct tjob *j = ctx;
	uint32_t i;

	for (i = 0; i < j->n_buf; i++)
		if (j->buf[i].handle == handle) {
			*size = j->buf[i].size;
			*access = j->buf[i].access;
			return 0;
		}
	return 1;
}

static int run(void)
{
	struct pccx_job_view v = { J.insn, J.n_insn, J.dma, J.n_dma, J.stream, J.n_stream };
	int rc;

	memset(&J.res, 0x5a, sizeof(J.res));
	rc = pccx__validate(&v, lookup, &J, &J.lim, J.used, &J.res);
	ck_assert_int_eq(rc, J.res.err);
	return rc;
}

static const char *where_name(int w)
{
	static const char *const n[] = { "JOB", "INSN", "DMA", "STREAM", "PORT" };

	return w >= 0 && w <= PCCX_VW_PORT ? n[w] : "?";
}

/* Validate J and require refusal err at (where, index, field). */
static void expect(int err, enum pccx_vwhere where, uint32_t index, int field)
{
	int rc = run();

	ck_assert_msg(rc == err && J.res.where == where && J.res.index == index &&
		      J.res.field == field,
		      "expected %s at %s %u field %s; got %s at %s %u field %s",
		      pccx__isa_errname(err), where_name(where), index,
		      field >= 0 ? pccx__fields[field].name : "-", pccx__isa_errname(rc),
		      where_name(J.res.where), J.res.index,
		      J.res.field >= 0 && J.res.field < PCCX_NFIELDS ?
		      pccx__fields[J.res.field].name : "-");
}

static void expect_detail(uint64_t expected, uint64_t actual)
{
	ck_assert_msg(J.res.expected == expected && J.res.actual == actual,
		      "%s: expected/actual %llu/%llu, wanted %llu/%llu",
		      pccx__isa_errname(J.res.err), (unsigned long long)J.res.expected, (unsigned long long)J.res.actual,
		      (unsigned long long)expected, (unsigned long long)actual);
}

static void accept(void)
{
	int rc = run();

	ck_assert_msg(rc == 0, "refused: %s at %s %u field %s (expected %llu, actual %llu)",
		      pccx__isa_errname(rc), where_name(J.res.where), J.res.index,
		      J.res.field >= 0 && J.res.field < PCCX_NFIELDS ?
		      pccx__fields[J.res.field].name : "-", (unsigned long long)J.res.expected,
		      (unsigned long long)J.res.actual);
}

/* Instructions alone: the descriptor pairing is not what these tests are about. */
static void program_only(void)
{
	J.lim.program_only = true;
}

/* Replace the last instruction (to try the next address of a boundary). */
static void replace_last(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void replace_last(const char *fmt, ...)
{
	char line[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	J.n_insn--;
	I("%s", line);
}

/* The shapes most tests use: fmap 0 = (64, 1, 1), weight 0 = (32, 64, f32). */
static void std_shapes(void)
{
	I("memset cache=fmap entry=0 a=64 b=1 c=1");
	I("memset cache=weight entry=0 a=32 b=64 c=%u", PCCX_WFMT_F32);
}

/* ---- job-level limits ------------------------------------------------------------ */

START_TEST(job_empty)
{
	job_reset();
	expect(PCCX_ISA_E_JOB_EMPTY, PCCX_VW_JOB, 0, -1);
	/* a count without an array is empty too */
	{
		struct pccx_job_view v = { NULL, 5, NULL, 0, NULL, 0 };

		ck_assert_int_eq(pccx__validate(&v, lookup, &J, NULL, NULL, &J.res),
				 PCCX_ISA_E_JOB_EMPTY);
	}
}
END_TEST

/* Over-limit counts are refused before anything is read: the arrays here hold one element. */
START_TEST(job_limit_counts)
{
	uint64_t one = 0;
	struct pccx_dma_desc d = { 0 };
	struct pccx_stream_desc s = { 0 };
	struct pccx_job_view v = { &one, (1u << 20) + 1, NULL, 0, NULL, 0 };
	struct pccx_vlimits lim;
	struct pccx_vresult res;
	uint8_t used[4];

	pccx__vlimits_default(&lim);
	ck_assert_uint_eq(lim.l2_words, PCCX_L2_WORDS);
	ck_assert_uint_eq(lim.max_insn, 1u << 20);
	ck_assert_uint_eq(lim.max_dma, 1u << 17);
	ck_assert_uint_eq(lim.max_stream, 1u << 16);
	ck_assert(!lim.program_only);

	ck_assert_int_eq(pccx__validate(&v, NULL, NULL, NULL, used, &res), PCCX_ISA_E_JOB_LIMIT);
	ck_assert_int_eq(res.where, PCCX_VW_JOB);
	ck_assert_uint_eq(res.expected, 1u << 20);
	ck_assert_uint_eq(res.actual, (1u << 20) + 1);

	v.n_insn = 1;
	v.dma = &d;
	v.n_dma = (1u << 17) + 1;
	ck_assert_int_eq(pccx__validate(&v, NULL, NULL, &lim, used, &res), PCCX_ISA_E_JOB_LIMIT);
	ck_assert_int_eq(res.where, PCCX_VW_DMA);
	ck_assert_uint_eq(res.actual, (1u << 17) + 1);
	/* 2^17 is the ceiling whatever the caller's limit: the desc field is 17 bits */
	lim.max_dma = 1u << 20;
	ck_assert_int_eq(pccx__validate(&v, NULL, NULL, &lim, used, &res), PCCX_ISA_E_JOB_LIMIT);
	ck_assert_int_eq(res.where, PCCX_VW_DMA);

	v.n_dma = 0;
	v.stream = &s;
	v.n_stream = (1u << 16) + 1;
	ck_assert_int_eq(pccx__validate(&v, NULL, NULL, &lim, used, &res), PCCX_ISA_E_JOB_LIMIT);
	ck_assert_int_eq(res.where, PCCX_VW_STREAM);
	ck_assert_uint_eq(res.expected, 1u << 16);
	ck_assert_uint_eq(res.actual, (1u << 16) + 1);

	/* the caller's own, smaller limits */
	pccx__vlimits_default(&lim);
	lim.max_insn = 2;
	job_reset();
	I("memset cache=fmap entry=0 a=1 b=1 c=1");
	I("memset cache=fmap entry=1 a=1 b=1 c=1");
	J.lim = lim;
	accept();
	I("memset cache=fmap entry=2 a=1 b=1 c=1");
	expect(PCCX_ISA_E_JOB_LIMIT, PCCX_VW_JOB, 0, -1);
	expect_detail(2, 3);
}
END_TEST

START_TEST(job_limit_missing_arrays)
{
	job_reset();
	I("memset cache=fmap entry=0 a=1 b=1 c=1");
	{
		struct pccx_job_view v = { J.insn, 1, NULL, 1, NULL, 0 };

		ck_assert_int_eq(pccx__validate(&v, lookup, &J, NULL, J.used, &J.res),
				 PCCX_ISA_E_JOB_LIMIT);
		ck_assert_int_eq(J.res.where, PCCX_VW_DMA);
		v.n_dma = 0;
		v.n_stream = 1;
		ck_assert_int_eq(pccx__validate(&v, lookup, &J, NULL, J.used, &J.res),
				 PCCX_ISA_E_JOB_LIMIT);
		ck_assert_int_eq(J.res.where, PCCX_VW_STREAM);
		/* descriptors but no scratch bitmap to track their use */
		v.n_stream = 0;
		v.dma = J.dma;
		v.n_dma = 1;
		ck_assert_int_eq(pccx__validate(&v, lookup, &J, NULL, NULL, &J.res),
				 PCCX_ISA_E_JOB_LIMIT);
		ck_assert_int_eq(J.res.where, PCCX_VW_DMA);
	}
}
END_TEST

/* A descriptor longer than max_desc_bytes (2^32 - 16 by default). */
START_TEST(job_limit_descriptor_length)
{
	const uint64_t max = (1ull << 32) - 16;

	job_reset();
	I("memset cache=fmap entry=0 a=1 b=1 c=1");
	buf(1, 1ull << 40, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
	program_only();
	ck_assert_uint_eq(J.lim.max_desc_bytes, max);
	stream(1, 0, 0, max);
	accept();
	stream(1, 1, 0, max + 16);
	expect(PCCX_ISA_E_JOB_LIMIT, PCCX_VW_STREAM, 1, -1);
	/* reported like the count limits: the limit, and what was asked for */
	expect_detail(max, max + 16);

	J.n_stream = 0;
	dma(1, PCCX_DMA_TO_DEVICE, 16, max + 16);
	expect(PCCX_ISA_E_JOB_LIMIT, PCCX_VW_DMA, 0, -1);
	expect_detail(max, max + 16);
}
END_TEST

/* ---- shape entries ---------------------------------------------------------------- */

START_TEST(shape_unset_fmap)
{
	job_reset();
	I("memset cache=weight entry=0 a=32 b=64 c=1");
	I("gemv dest=0x100 src=0 wshape=0 fshape=0");
	expect(PCCX_ISA_E_SHAPE_UNSET, PCCX_VW_INSN, 1, PCCX_FID_A_fshape);
	/* the weight entry of the same number does not count as the fmap entry */
	job_reset();
	I("memset cache=weight entry=7 a=32 b=64 c=1");
	I("gemv dest=0x100 src=0 wshape=7 fshape=7");
	expect(PCCX_ISA_E_SHAPE_UNSET, PCCX_VW_INSN, 1, PCCX_FID_A_fshape);
	/* MEMCPY needs its fmap entry as well */
	job_reset();
	program_only();
	I("memset cache=weight entry=3 a=8 b=1 c=1");
	I("memcpy dest=0x10 src=0 desc=0 fshape=3 +from_host");
	expect(PCCX_ISA_E_SHAPE_UNSET, PCCX_VW_INSN, 1, PCCX_FID_B_fshape);
}
END_TEST

START_TEST(shape_unset_weight)
{
	job_reset();
	I("memset cache=fmap entry=0 a=64 b=1 c=1");
	I("memset cache=fmap entry=1 a=64 b=1 c=1");
	I("gemv dest=0x100 src=0 wshape=1 fshape=0");
	expect(PCCX_ISA_E_SHAPE_UNSET, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
}
END_TEST

/* An entry set after its use, or in an earlier job, does not count. */
START_TEST(shape_unset_order_and_jobs)
{
	job_reset();
	program_only();
	I("memset cache=fmap entry=0 a=64 b=1 c=1");
	I("gemv dest=0x100 src=0 wshape=0 fshape=0");
	I("memset cache=weight entry=0 a=32 b=64 c=1");
	expect(PCCX_ISA_E_SHAPE_UNSET, PCCX_VW_INSN, 1, PCCX_FID_A_wshape);

	/* job 1 sets both entries and is accepted ... */
	job_reset();
	program_only();
	std_shapes();
	I("gemv dest=0x100 src=0 wshape=0 fshape=0");
	accept();
	/* ... job 2 uses them without setting them: the validator starts every job empty */
	J.insn[0] = J.insn[2];
	J.n_insn = 1;
	expect(PCCX_ISA_E_SHAPE_UNSET, PCCX_VW_INSN, 0, PCCX_FID_A_fshape);
}
END_TEST

static void gemv_shapes(unsigned k, unsigned m, unsigned z, unsigned n, unsigned wk, unsigned fmt)
{
	job_reset();
	program_only();
	I("memset cache=fmap entry=2 a=%u b=%u c=%u", k, m, z);
	I("memset cache=weight entry=3 a=%u b=%u c=%u", n, wk, fmt);
}

START_TEST(shape_fmap_values)
{
	gemv_shapes(0, 1, 1, 32, 0, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_fshape);
	gemv_shapes(64, 0, 1, 32, 64, PCCX_WFMT_F32);
	I("gemm dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_fshape);
	gemv_shapes(64, 1, 0, 32, 64, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_fshape);
	gemv_shapes(64, 1, 2, 32, 64, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_fshape);
	/* GEMV is one row; GEMM takes M rows */
	gemv_shapes(64, 2, 1, 32, 64, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_fshape);
	replace_last("gemm dest=0x100 src=0 wshape=3 fshape=2");
	accept();
	/* a MEMCPY of zero elements */
	gemv_shapes(64, 0, 1, 1, 1, 0);
	I("memcpy dest=0 src=0x10 desc=0 fshape=2 +to_host");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_B_fshape);
}
END_TEST

START_TEST(shape_weight_values)
{
	gemv_shapes(64, 1, 1, 0, 64, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
	/* K of the weights must be the fmap's K */
	gemv_shapes(64, 1, 1, 32, 72, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
	/* q4 needs whole 32-blocks along K; f32 does not */
	gemv_shapes(48, 1, 1, 32, 48, PCCX_WFMT_Q4);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
	gemv_shapes(48, 1, 1, 32, 48, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	accept();
	gemv_shapes(64, 1, 1, 32, 64, PCCX_WFMT_Q4);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	accept();
	/* format 4 is not defined */
	gemv_shapes(64, 1, 1, 32, 64, 4);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
	gemv_shapes(64, 1, 1, 32, 64, 0xffff);
	I("gemm dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
}
END_TEST

/* w_scale means "the stream carries q4 scales": on f32/f32t weights it is a flag fault. */
START_TEST(shape_w_scale_needs_q4)
{
	gemv_shapes(64, 1, 1, 32, 64, PCCX_WFMT_F32);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 2, PCCX_FID_A_w_scale);
	gemv_shapes(64, 1, 1, 32, 64, PCCX_WFMT_F32T);
	I("gemm dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 2, PCCX_FID_A_w_scale);
}
END_TEST

/*
 * q4c (FEATURES.COLSKIP): GEMV only, always with its scales, K in whole 32-blocks, never
 * rowmask; a device without COLSKIP refuses it, naming the feature.
 */
START_TEST(shape_q4c)
{
	gemv_shapes(64, 1, 1, 32, 64, PCCX_WFMT_Q4C);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	accept();
	replace_last("gemv dest=0x100 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 2, PCCX_FID_A_w_scale);
	replace_last("gemv dest=0x100 src=0 wshape=3 fshape=2 +w_scale +rowmask");
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 2, PCCX_FID_A_rowmask);
	replace_last("gemv dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	J.lim.features = ~(uint64_t)PCCX_FEAT_COLSKIP;
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
	expect_detail(PCCX_FEAT_COLSKIP, ~(uint64_t)PCCX_FEAT_COLSKIP);
	J.lim.features = PCCX_FEAT_COLSKIP;
	accept();
	gemv_shapes(64, 2, 1, 32, 64, PCCX_WFMT_Q4C);
	I("gemm dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
	gemv_shapes(48, 1, 1, 32, 48, PCCX_WFMT_Q4C);
	I("gemv dest=0x100 src=0 wshape=3 fshape=2 +w_scale");
	expect(PCCX_ISA_E_SHAPE, PCCX_VW_INSN, 2, PCCX_FID_A_wshape);
}
END_TEST

/* ---- L2 ranges at the exact boundary ------------------------------------------------- */

START_TEST(l2_gemv)
{
	/* x: 64 elements = 16 words; y: 32 elements = 8 words (4 FP32 elements per word) */
	job_reset();
	program_only();
	std_shapes();
	I("gemv dest=0 src=%u wshape=0 fshape=0", L2 - 16);
	accept();
	replace_last("gemv dest=0 src=%u wshape=0 fshape=0", L2 - 15);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_src);
	replace_last("gemv dest=%u src=0 wshape=0 fshape=0", L2 - 8);
	accept();
	replace_last("gemv dest=%u src=0 wshape=0 fshape=0", L2 - 7);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	replace_last("gemv dest=0x1ffff src=0 wshape=0 fshape=0");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	/* a partial last word counts whole: K = 65 is 17 words, N = 33 is 9 */
	gemv_shapes(65, 1, 1, 33, 65, PCCX_WFMT_F32);
	I("gemv dest=0 src=%u wshape=3 fshape=2", L2 - 17);
	accept();
	replace_last("gemv dest=0 src=%u wshape=3 fshape=2", L2 - 16);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_src);
	replace_last("gemv dest=%u src=0 wshape=3 fshape=2", L2 - 9);
	accept();
	replace_last("gemv dest=%u src=0 wshape=3 fshape=2", L2 - 8);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	/* K = 66 and N = 34: still 17 and 9 words (two elements of the last word unused) */
	gemv_shapes(66, 1, 1, 34, 66, PCCX_WFMT_F32);
	I("gemv dest=%u src=%u wshape=3 fshape=2", L2 - 9, L2 - 26);
	accept();
}
END_TEST

START_TEST(l2_gemm_rows)
{
	/* M = 3 rows: input 3 x 16 words, output 3 x 8 words */
	gemv_shapes(64, 3, 1, 32, 64, PCCX_WFMT_F32);
	I("gemm dest=0 src=%u wshape=3 fshape=2", L2 - 48);
	accept();
	replace_last("gemm dest=0 src=%u wshape=3 fshape=2", L2 - 47);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_src);
	replace_last("gemm dest=%u src=0 wshape=3 fshape=2", L2 - 24);
	accept();
	replace_last("gemm dest=%u src=0 wshape=3 fshape=2", L2 - 23);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	/* more rows than L2 holds: 65535 x 16 words from word 0 */
	gemv_shapes(64, 65535, 1, 32, 64, PCCX_WFMT_F32);
	I("gemm dest=0 src=0 wshape=3 fshape=2");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_src);
	/* M x 16 words in and out filling L2 exactly: half each */
	gemv_shapes(64, L2 / 32, 1, 64, 64, PCCX_WFMT_F32);
	I("gemm dest=%u src=0 wshape=3 fshape=2", L2 / 2);
	accept();
	replace_last("gemm dest=%u src=0 wshape=3 fshape=2", L2 / 2 + 1);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	replace_last("gemm dest=0 src=%u wshape=3 fshape=2", L2 / 2 + 1);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 2, PCCX_FID_A_src);
}
END_TEST

static void memcpy_shape(unsigned a, unsigned b, unsigned c)
{
	job_reset();
	program_only();
	I("memset cache=fmap entry=9 a=%u b=%u c=%u", a, b, c);
}

START_TEST(l2_memcpy)
{
	/* 10 x 3 x 2 = 60 elements = 15 words */
	memcpy_shape(10, 3, 2);
	I("memcpy dest=%u src=0 desc=0 fshape=9 +from_host", L2 - 15);
	accept();
	replace_last("memcpy dest=%u src=0 desc=0 fshape=9 +from_host", L2 - 14);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	replace_last("memcpy dest=0 src=%u desc=0 fshape=9 +to_host", L2 - 15);
	accept();
	replace_last("memcpy dest=0 src=%u desc=0 fshape=9 +to_host", L2 - 14);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_src);
	replace_last("memcpy dest=0 src=%u desc=0 fshape=9", L2 - 15);
	accept();
	replace_last("memcpy dest=0 src=%u desc=0 fshape=9", L2 - 14);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_src);
	replace_last("memcpy dest=%u src=0 desc=0 fshape=9", L2 - 15);
	accept();
	replace_last("memcpy dest=%u src=0 desc=0 fshape=9", L2 - 14);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	/* a partial last word counts whole: 61 elements = 16 words */
	memcpy_shape(61, 1, 1);
	I("memcpy dest=%u src=0 desc=0 fshape=9 +from_host", L2 - 16);
	accept();
	replace_last("memcpy dest=%u src=0 desc=0 fshape=9 +from_host", L2 - 15);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	/* the whole of L2 in one transfer (4 elements per word), and one element more */
	memcpy_shape(32, L2 / 8, 1);
	I("memcpy dest=0 src=0 desc=0 fshape=9 +from_host");
	accept();
	memcpy_shape(79, 5807, 1);   /* 458,753 = 4 x L2 + 1 elements */
	ck_assert_uint_eq(79u * 5807u, 4u * L2 + 1);
	I("memcpy dest=0 src=0 desc=0 fshape=9 +from_host");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
}
END_TEST

/* a*b*c is a 48-bit product: computed in 32 bits these would wrap to small numbers. */
START_TEST(l2_memcpy_64bit_product)
{
	memcpy_shape(65535, 65535, 65535);
	I("memcpy dest=0 src=0 desc=0 fshape=9 +from_host");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	/* 65534 * 64549 * 16633 = 70,360,154,243,078 = 6 (mod 2^32) */
	memcpy_shape(65534, 64549, 16633);
	I("memcpy dest=0 src=0 desc=0 fshape=9 +from_host");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	/* 32768 * 32768 * 4 = 2^32 = 0 (mod 2^32) */
	memcpy_shape(32768, 32768, 4);
	I("memcpy dest=0 src=0 desc=0 fshape=9 +to_host");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 1, PCCX_FID_B_src);
}
END_TEST

START_TEST(l2_cvo_vector)
{
	/* 21 elements = 6 words (the last one partial) */
	job_reset();
	program_only();
	I("cvo func=exp src=%u dst=0 len=21", L2 - 6);
	accept();
	replace_last("cvo func=exp src=%u dst=0 len=21", L2 - 5);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_src);
	replace_last("cvo func=mul src=0 dst=%u len=21", L2 - 6);
	accept();
	replace_last("cvo func=mul src=0 dst=%u len=21", L2 - 5);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	/* 20 elements are exactly 5 words */
	replace_last("cvo func=mul src=0 dst=%u len=20", L2 - 5);
	accept();
	replace_last("cvo func=scale src=0 dst=%u len=65535 +recip_scale", L2 - 16384);
	accept();
	replace_last("cvo func=scale src=0 dst=%u len=65535 +recip_scale", L2 - 16383);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	/* reductions read len elements and write one word (element 0 of dst) */
	replace_last("cvo func=sum src=%u dst=%u len=21", L2 - 6, L2 - 1);
	accept();
	replace_last("cvo func=sum src=%u dst=0 len=21", L2 - 5);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_src);
	replace_last("cvo func=sumsq src=0 dst=%u len=20", L2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
}
END_TEST

START_TEST(l2_cvo_scalar)
{
	job_reset();
	program_only();
	/* scale/binary/max scalar forms read one word (v is element 0 of src) */
	I("cvo func=add src=%u dst=%u len=0 +sreg", L2 - 1, L2 - 1);
	accept();
	replace_last("cvo func=add src=%u dst=0 len=0 +sreg", L2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_src);
	replace_last("cvo func=max src=0 dst=%u len=0 +sreg", L2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	replace_last("cvo func=scale src=0x1ffff dst=0 len=0 +sreg");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_src);
	/* unary scalar forms have no source; they still write element 0 of dst */
	replace_last("cvo func=rsqrt src=0 dst=%u len=0 +sreg", L2 - 1);
	accept();
	replace_last("cvo func=rsqrt src=0 dst=%u len=0 +sreg", L2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
}
END_TEST

/* LDS reads element len of the vector at src: word src + len / 4. It has no scalar form. */
START_TEST(l2_cvo_lds_index)
{
	job_reset();
	program_only();
	I("cvo func=lds src=%u dst=0 len=3", L2 - 1);
	accept();
	replace_last("cvo func=lds src=%u dst=0 len=4", L2 - 1);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_len);
	replace_last("cvo func=lds src=%u dst=0 len=7", L2 - 2);
	accept();
	replace_last("cvo func=lds src=%u dst=0 len=8", L2 - 2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_len);
	/* far indices from word 0 */
	replace_last("cvo func=lds src=0 dst=0 len=65535");
	accept();
	replace_last("cvo func=lds src=%u dst=0 len=65535", L2 - 16384);
	accept();
	replace_last("cvo func=lds src=%u dst=0 len=65535", L2 - 16383);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_len);
	/* sreg with LDS is a flag fault, whatever the index */
	replace_last("cvo func=lds src=%u dst=0 len=3", L2 - 1);
	accept();
	J.insn[0] |= PCCX_CVOF_SREG;
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 0, PCCX_FID_D_sreg);
	replace_last("cvo func=lds src=0 dst=%u len=0", L2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	replace_last("cvo func=lds src=%u dst=0 len=0", L2);
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_len);
}
END_TEST

/* A smaller device (the limits' l2_words) moves every boundary with it. */
START_TEST(l2_custom_size)
{
	job_reset();
	program_only();
	J.lim.l2_words = 1024;
	I("cvo func=exp src=992 dst=0 len=128");
	accept();
	replace_last("cvo func=exp src=993 dst=0 len=128");
	expect(PCCX_ISA_E_L2_RANGE, PCCX_VW_INSN, 0, PCCX_FID_D_src);
}
END_TEST

/* ---- overlaps ---------------------------------------------------------------------- */

START_TEST(overlap_gemv)
{
	job_reset();
	program_only();
	std_shapes();      /* src 16 words, dest 8 words */
	I("gemv dest=0x10f src=0x100 wshape=0 fshape=0");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	replace_last("gemv dest=0x100 src=0x100 wshape=0 fshape=0");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	replace_last("gemv dest=0x0f9 src=0x100 wshape=0 fshape=0");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
	/* touching is not overlapping */
	replace_last("gemv dest=0x110 src=0x100 wshape=0 fshape=0");
	accept();
	replace_last("gemv dest=0x0f8 src=0x100 wshape=0 fshape=0 +accm");
	accept();
}
END_TEST

START_TEST(overlap_memcpy_l2)
{
	memcpy_shape(64, 1, 1);   /* 16 words */
	I("memcpy dest=0x20f src=0x200 desc=0 fshape=9");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	replace_last("memcpy dest=0x200 src=0x200 desc=0 fshape=9");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	replace_last("memcpy dest=0x1f1 src=0x200 desc=0 fshape=9");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 1, PCCX_FID_B_dest);
	replace_last("memcpy dest=0x210 src=0x200 desc=0 fshape=9");
	accept();
	replace_last("memcpy dest=0x1f0 src=0x200 desc=0 fshape=9");
	accept();
}
END_TEST

START_TEST(overlap_cvo)
{
	job_reset();
	program_only();
	/* 16 elements = 4 words: partial overlap refused, identical (in place) allowed */
	I("cvo func=exp src=0x10 dst=0x13 len=16");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	replace_last("cvo func=mul src=0x13 dst=0x10 len=16");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	replace_last("cvo func=exp src=0x10 dst=0x10 len=16 +sub_emax");
	accept();
	replace_last("cvo func=add src=0x10 dst=0x10 len=16");
	accept();
	replace_last("cvo func=scale src=0x10 dst=0x14 len=16");
	accept();
	/* a 17-element vector occupies 5 words */
	replace_last("cvo func=tanh src=0x10 dst=0x14 len=17");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 0, PCCX_FID_D_dst);
	/* a reduction reads everything before writing its one word */
	replace_last("cvo func=sum src=0x10 dst=0x11 len=16");
	accept();
}
END_TEST

/* ---- host DMA descriptors -------------------------------------------------------------- */

/* fmap 0 = 16 elements: a MEMCPY of 4 words, 64 bytes. */
static void dma_job(void)
{
	job_reset();
	buf(1, 4096, PCCX_BUF_DEV_READ);
	buf(2, 4096, PCCX_BUF_DEV_WRITE);
	I("memset cache=fmap entry=0 a=16 b=1 c=1");
}

START_TEST(dma_index)
{
	dma_job();
	dma(1, PCCX_DMA_TO_DEVICE, 0, 64);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	accept();
	ck_assert_uint_eq(J.res.dma_bytes_in, 64);
	I("memcpy dest=0 src=0x10 desc=1 fshape=0 +to_host");
	expect(PCCX_ISA_E_DMA_INDEX, PCCX_VW_INSN, 2, PCCX_FID_B_desc);
	expect_detail(1, 1);
	replace_last("memcpy dest=0 src=0x10 desc=131071 fshape=0 +to_host");
	expect(PCCX_ISA_E_DMA_INDEX, PCCX_VW_INSN, 2, PCCX_FID_B_desc);
	expect_detail(1, 131071);
	/* no descriptors at all */
	dma_job();
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	expect(PCCX_ISA_E_DMA_INDEX, PCCX_VW_INSN, 1, PCCX_FID_B_desc);
}
END_TEST

START_TEST(dma_dir)
{
	dma_job();
	dma(2, PCCX_DMA_FROM_DEVICE, 0, 64);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	expect(PCCX_ISA_E_DMA_DIR, PCCX_VW_INSN, 1, PCCX_FID_B_desc);
	expect_detail(PCCX_DMA_TO_DEVICE, PCCX_DMA_FROM_DEVICE);
	dma_job();
	dma(1, PCCX_DMA_TO_DEVICE, 0, 64);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +to_host");
	expect(PCCX_ISA_E_DMA_DIR, PCCX_VW_INSN, 1, PCCX_FID_B_desc);
	expect_detail(PCCX_DMA_FROM_DEVICE, PCCX_DMA_TO_DEVICE);
}
END_TEST

START_TEST(dma_length)
{
	dma_job();
	dma(1, PCCX_DMA_TO_DEVICE, 0, 48);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	expect(PCCX_ISA_E_DMA_LENGTH, PCCX_VW_INSN, 1, PCCX_FID_B_desc);
	expect_detail(64, 48);
	J.dma[0].length = 80;
	expect(PCCX_ISA_E_DMA_LENGTH, PCCX_VW_INSN, 1, PCCX_FID_B_desc);
	expect_detail(64, 80);
	/* a partial last word is still moved whole: 17 elements = 5 words = 80 bytes */
	dma_job();
	dma(2, PCCX_DMA_FROM_DEVICE, 0, 80);
	I("memset cache=fmap entry=1 a=17 b=1 c=1");
	I("memcpy dest=0 src=0x10 desc=0 fshape=1 +to_host");
	accept();
	ck_assert_uint_eq(J.res.dma_bytes_out, 80);
}
END_TEST

START_TEST(dma_unused)
{
	dma_job();
	dma(1, PCCX_DMA_TO_DEVICE, 0, 64);
	dma(1, PCCX_DMA_TO_DEVICE, 64, 64);
	dma(2, PCCX_DMA_FROM_DEVICE, 0, 64);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	I("memcpy dest=0 src=0x10 desc=2 fshape=0 +to_host");
	expect(PCCX_ISA_E_DMA_UNUSED, PCCX_VW_DMA, 1, -1);
	/* one descriptor named twice is fine */
	I("memcpy dest=0x20 src=0 desc=1 fshape=0 +from_host");
	I("memcpy dest=0x30 src=0 desc=0 fshape=0 +from_host");
	accept();
	ck_assert_uint_eq(J.res.dma_bytes_in, 3 * 64);
	ck_assert_uint_eq(J.res.dma_bytes_out, 64);
	/* a descriptor past bit 7 of the bitmap */
	dma_job();
	while (J.n_dma < 10)
		dma(1, PCCX_DMA_TO_DEVICE, 0, 64);
	while (J.n_insn < 10)
		I("memcpy dest=0 src=0 desc=%u fshape=0 +from_host", J.n_insn - 1);
	expect(PCCX_ISA_E_DMA_UNUSED, PCCX_VW_DMA, 9, -1);
	I("memcpy dest=0 src=0 desc=9 fshape=0 +from_host");
	accept();
}
END_TEST

/* ---- buffers and descriptor spans ------------------------------------------------------ */

START_TEST(buf_handle)
{
	dma_job();
	dma(7, PCCX_DMA_TO_DEVICE, 0, 64);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	expect(PCCX_ISA_E_BUF_HANDLE, PCCX_VW_DMA, 0, -1);
	J.dma[0].handle = 1;
	stream(1, 0, 0, 16);
	stream(0, 0, 0, 16);
	expect(PCCX_ISA_E_BUF_HANDLE, PCCX_VW_STREAM, 1, -1);
	/* no lookup function: no handle is known */
	{
		struct pccx_job_view v = { J.insn, J.n_insn, J.dma, J.n_dma, NULL, 0 };

		ck_assert_int_eq(pccx__validate(&v, NULL, NULL, &J.lim, J.used, &J.res),
				 PCCX_ISA_E_BUF_HANDLE);
		ck_assert_int_eq(J.res.where, PCCX_VW_DMA);
	}
}
END_TEST

static void __attribute__((noinline)) dirty_stack(void)
{
	volatile uint8_t junk[16384];
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = 0xa5;
}

/*
 * The result crosses into user space from the kernel module: on an unknown
 * handle no detail is known, and the detail fields must not carry whatever
 * was on the stack.
 */
START_TEST(buf_handle_detail_defined)
{
	struct pccx_job_view v;

	dma_job();
	dma(7, PCCX_DMA_TO_DEVICE, 0, 64);
	I("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	v = (struct pccx_job_view){ J.insn, J.n_insn, J.dma, J.n_dma, NULL, 0 };
	dirty_stack();
	ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, J.used, &J.res),
			 PCCX_ISA_E_BUF_HANDLE);
	ck_assert_msg(J.res.expected == 0, "BUF_HANDLE reports expected = 0x%llx",
		      (unsigned long long)J.res.expected);
}
END_TEST

/* Span checks alone: streams in program-only mode are checked but not paired. */
static void span_job(uint64_t size, uint32_t access)
{
	job_reset();
	program_only();
	I("memset cache=fmap entry=0 a=1 b=1 c=1");
	buf(5, size, access);
}

START_TEST(buf_range)
{
	span_job(4096, PCCX_BUF_DEV_READ);
	stream(5, 0, 4096 - 64, 64);
	accept();
	J.stream[0].length = 80;
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	ck_assert_uint_eq(J.res.expected, 4096);
	J.stream[0] = (struct pccx_stream_desc){ 5, 0, 4096, 16 };
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	J.stream[0] = (struct pccx_stream_desc){ 5, 0, 8192, 16 };
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	J.stream[0] = (struct pccx_stream_desc){ 5, 0, 0, 4096 };
	accept();
	/* the same for host DMA descriptors */
	J.n_stream = 0;
	J.lim.program_only = false;
	dma(5, PCCX_DMA_TO_DEVICE, 4096 - 48, 64);
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_DMA, 0, -1);
}
END_TEST

/* offset + length must not be computed where it can wrap. */
START_TEST(buf_range_overflow)
{
	/* offset near 2^64: offset + 32 wraps to 16, which would fit */
	span_job(64, PCCX_BUF_DEV_READ);
	stream(5, 0, ~0ull - 15, 32);
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	/* a buffer of 2^64 - 1 bytes: [2^64 - 32, 2^64 - 16) fits, [2^64 - 16, 2^64) does not */
	span_job(~0ull, PCCX_BUF_DEV_READ);
	stream(5, 0, ~0ull - 15 - 16, 16);
	accept();
	J.stream[0].offset = ~0ull - 15;
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	J.stream[0].offset = ~0ull - 31;
	J.stream[0].length = 32;
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	/* length near 2^64, with a limit that lets it through to the range check */
	span_job(64, PCCX_BUF_DEV_READ);
	J.lim.max_desc_bytes = ~0ull;
	stream(5, 0, 32, ~0ull - 15);        /* 32 + (2^64 - 16) wraps to 16 */
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	J.stream[0].offset = 0;
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 0, -1);
	/* and with the default limit it is a limit violation first */
	pccx__vlimits_default(&J.lim);
	J.lim.program_only = true;
	expect(PCCX_ISA_E_JOB_LIMIT, PCCX_VW_STREAM, 0, -1);
	/* DMA descriptor: offset + length wrapping */
	span_job(4096, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
	J.lim.program_only = false;
	dma(5, PCCX_DMA_FROM_DEVICE, ~0ull - 15, 32);
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_DMA, 0, -1);
}
END_TEST

START_TEST(buf_access)
{
	/* a read-only buffer as the destination of a device write */
	span_job(4096, PCCX_BUF_DEV_READ);
	J.lim.program_only = false;
	dma(5, PCCX_DMA_FROM_DEVICE, 0, 64);
	expect(PCCX_ISA_E_BUF_ACCESS, PCCX_VW_DMA, 0, -1);
	/* a write-only buffer as a weight stream, or as a DMA source */
	span_job(4096, PCCX_BUF_DEV_WRITE);
	stream(5, 0, 0, 64);
	expect(PCCX_ISA_E_BUF_ACCESS, PCCX_VW_STREAM, 0, -1);
	span_job(4096, PCCX_BUF_DEV_WRITE);
	dma(5, PCCX_DMA_TO_DEVICE, 0, 64);
	expect(PCCX_ISA_E_BUF_ACCESS, PCCX_VW_DMA, 0, -1);
	/* no access at all */
	span_job(4096, 0);
	stream(5, 3, 0, 64);
	expect(PCCX_ISA_E_BUF_ACCESS, PCCX_VW_STREAM, 0, -1);
	/* read-write serves both */
	span_job(4096, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
	stream(5, 3, 0, 64);
	dma(5, PCCX_DMA_FROM_DEVICE, 0, 64);
	dma(5, PCCX_DMA_TO_DEVICE, 0, 64);
	accept();
}
END_TEST

START_TEST(align)
{
	span_job(4096, PCCX_BUF_DEV_READ);
	stream(5, 0, 8, 64);
	expect(PCCX_ISA_E_ALIGN, PCCX_VW_STREAM, 0, -1);
	J.stream[0] = (struct pccx_stream_desc){ 5, 0, 16, 24 };
	expect(PCCX_ISA_E_ALIGN, PCCX_VW_STREAM, 0, -1);
	J.stream[0] = (struct pccx_stream_desc){ 5, 0, 16, 0 };
	expect(PCCX_ISA_E_ALIGN, PCCX_VW_STREAM, 0, -1);
	J.stream[0] = (struct pccx_stream_desc){ 5, 0, 16, 16 };
	accept();
	dma(5, PCCX_DMA_TO_DEVICE, 1, 16);
	expect(PCCX_ISA_E_ALIGN, PCCX_VW_DMA, 0, -1);
	J.dma[0] = (struct pccx_dma_desc){ 5, PCCX_DMA_TO_DEVICE, 0, 15 };
	expect(PCCX_ISA_E_ALIGN, PCCX_VW_DMA, 0, -1);
	J.dma[0] = (struct pccx_dma_desc){ 5, PCCX_DMA_TO_DEVICE, 0, 0 };
	expect(PCCX_ISA_E_ALIGN, PCCX_VW_DMA, 0, -1);
}
END_TEST

START_TEST(desc_flags)
{
	static const uint32_t bad[] = { 0, 3, 4, 0x101, 0x80000001u, 0xffffffffu };
	unsigned k;

	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		span_job(4096, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
		dma(5, PCCX_DMA_TO_DEVICE, 0, 64);
		dma(5, bad[k], 0, 64);
		expect(PCCX_ISA_E_DESC_FLAGS, PCCX_VW_DMA, 1, -1);
		ck_assert_uint_eq(J.res.actual, bad[k]);
	}
}
END_TEST

/* ---- weight streams -------------------------------------------------------------------- */

START_TEST(stream_port)
{
	span_job(4096, PCCX_BUF_DEV_READ);
	stream(5, 3, 0, 16);
	stream(5, 4, 0, 16);
	expect(PCCX_ISA_E_STREAM_PORT, PCCX_VW_STREAM, 1, -1);
	expect_detail(4, 4);
	J.stream[1].port = 0xffffffffu;
	expect(PCCX_ISA_E_STREAM_PORT, PCCX_VW_STREAM, 1, -1);
	expect_detail(4, 0xffffffffu);
}
END_TEST

/* f32 (4, 4): one 16-byte row per port. */
static void small_gemv_job(void)
{
	job_reset();
	buf(3, 1 << 20, PCCX_BUF_DEV_READ);
	I("memset cache=fmap entry=0 a=4 b=1 c=1");
	I("memset cache=weight entry=0 a=4 b=4 c=%u", PCCX_WFMT_F32);
	I("gemv dest=0x10 src=0 wshape=0 fshape=0");
}

/* One stream descriptor per port, `each` bytes apiece from offset 0 of buffer h; accepted. */
static void port_quarters(uint32_t h, uint64_t each)
{
	unsigned p;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		stream(h, p, p * each, each);
	accept();
}

/*
 * A rowmask GEMV may read the whole range of a dense GEMV of its shapes: its stream
 * descriptors are counted and bounded like a dense one's, whatever its mask keeps.
 */
START_TEST(rowmask_stream_range)
{
	/* q4 (8, 32) with scales: one 16-byte scale beat + one block beat = 32 bytes a row */
	job_reset();
	buf(3, 256, PCCX_BUF_DEV_READ);
	I("memset cache=fmap entry=0 a=32 b=1 c=1");
	I("memset cache=weight entry=0 a=8 b=32 c=%u", PCCX_WFMT_Q4);
	I("gemv dest=0x10 src=0 wshape=0 fshape=0 +w_scale +rowmask");
	port_quarters(3, 64);
	ck_assert_uint_eq(J.res.port_bytes[3], 64);
	/* fewer bytes than the dense range: refused, even if the mask would keep fewer rows */
	J.stream[3].length = 32;
	expect(PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, 3, -1);
	expect_detail(64, 32);
	/* the range must lie in the buffer like any stream */
	J.stream[3].length = 64;
	J.stream[3].offset = 224;
	expect(PCCX_ISA_E_BUF_RANGE, PCCX_VW_STREAM, 3, -1);
	/* rowmask is q4 only (an f32 weight entry refuses it) */
	job_reset();
	program_only();
	I("memset cache=fmap entry=0 a=4 b=1 c=1");
	I("memset cache=weight entry=0 a=4 b=4 c=%u", PCCX_WFMT_F32);
	I("gemv dest=0x10 src=0 wshape=0 fshape=0 +rowmask");
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 2, PCCX_FID_A_rowmask);
	/* its mask is its destination: an overlap with the input is refused as for any GEMV */
	job_reset();
	program_only();
	I("memset cache=fmap entry=0 a=32 b=1 c=1");
	I("memset cache=weight entry=0 a=8 b=32 c=%u", PCCX_WFMT_Q4);
	I("gemv dest=0x4 src=0 wshape=0 fshape=0 +w_scale +rowmask");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 2, PCCX_FID_A_dest);
}
END_TEST

/*
 * The extensions a device lacks (FEATURES without SMUL, ROWMASK or RACC, as the kernel, the board
 * and the simulator pass it) are refused at their word, as upstream's device would; the
 * default limits, for a program checked without a device, take every extension.
 */
START_TEST(extensions_need_the_feature)
{
	job_reset();
	program_only();
	I("memset cache=fmap entry=0 a=32 b=1 c=1");
	I("memset cache=weight entry=0 a=8 b=32 c=%u", PCCX_WFMT_Q4);
	I("cvo func=smul src=0x20 dst=0x30 len=8");
	I("gemv dest=0x10 src=0 wshape=0 fshape=0 +w_scale +rowmask");
	I("cvo func=sumsq src=0x20 dst=0x40 len=8 +accm");
	ck_assert_int_eq(run(), 0);
	J.lim.features = ~(uint64_t)PCCX_FEAT_SMUL;
	expect(PCCX_ISA_E_CVO_FUNC, PCCX_VW_INSN, 2, PCCX_FID_D_func);
	expect_detail(PCCX_FEAT_SMUL, ~(uint64_t)PCCX_FEAT_SMUL);
	J.lim.features = ~(uint64_t)PCCX_FEAT_ROWMASK;
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 3, PCCX_FID_A_rowmask);
	J.lim.features = ~(uint64_t)PCCX_FEAT_RACC;
	expect(PCCX_ISA_E_FLAGS, PCCX_VW_INSN, 4, PCCX_FID_D_accm);
	expect_detail(PCCX_FEAT_RACC, ~(uint64_t)PCCX_FEAT_RACC);
	J.lim.features = PCCX_FEAT_SMUL | PCCX_FEAT_ROWMASK | PCCX_FEAT_RACC;
	ck_assert_int_eq(run(), 0);
}
END_TEST

START_TEST(stream_mismatch)
{
	small_gemv_job();
	port_quarters(3, 16);
	ck_assert_uint_eq(J.res.port_bytes[2], 16);
	/* too few bytes on one port */
	J.n_stream = 2;
	stream(3, 3, 48, 16);
	expect(PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, 2, -1);
	expect_detail(16, 0);
	/* too many */
	stream(3, 2, 32, 32);
	expect(PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, 2, -1);
	expect_detail(16, 32);
	/* bytes on a port no instruction reads */
	job_reset();
	buf(3, 1 << 20, PCCX_BUF_DEV_READ);
	I("memset cache=fmap entry=0 a=8 b=1 c=1");
	stream(3, 1, 0, 16);
	expect(PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, 1, -1);
	expect_detail(0, 16);
	/* a GEMV without any stream */
	small_gemv_job();
	expect(PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, 0, -1);
	expect_detail(16, 0);
}
END_TEST

/* One row (N = 1) goes to port 0 only; ports 1-3 carry nothing. */
START_TEST(stream_fewer_rows_than_ports)
{
	job_reset();
	buf(3, 1 << 20, PCCX_BUF_DEV_READ);
	I("memset cache=fmap entry=0 a=8 b=1 c=1");
	I("memset cache=weight entry=0 a=1 b=8 c=%u", PCCX_WFMT_F32);
	I("gemv dest=0x10 src=0 wshape=0 fshape=0");
	stream(3, 0, 0, 32);
	accept();
	ck_assert_uint_eq(J.res.port_bytes[0], 32);
	ck_assert_uint_eq(J.res.port_bytes[1], 0);
	ck_assert_uint_eq(J.res.port_bytes[3], 0);
}
END_TEST

/* ---- accepted jobs -------------------------------------------------------------------- */

/*
 * x (2048) -> y = W x with W q4 (1000, 2048) + scales -> softmax(y) -> host.
 * Streams are cut from one weight image, each port's share computed by the
 * geometry functions; port 1's share arrives in two descriptors.
 */
START_TEST(accept_realistic_job)
{
	struct pccx_wshape ws = { 1000, 2048, PCCX_WFMT_Q4, true };
	uint64_t off = 0, part;
	unsigned p;

	job_reset();
	buf(1, 8192, PCCX_BUF_DEV_READ);
	buf(2, 4096, PCCX_BUF_DEV_WRITE);
	buf(3, 4 * 288000, PCCX_BUF_DEV_READ);
	I("memset cache=fmap entry=0 a=2048 b=1 c=1");
	I("memset cache=fmap entry=1 a=1000 b=1 c=1");
	I("memset cache=weight entry=0 a=1000 b=2048 c=%u", PCCX_WFMT_Q4);
	/* x: 512 words at 0; y: 250 words at 0x200; scalars at 0x300.. */
	I("memcpy dest=0x00000 src=0 desc=0 fshape=0 +from_host +async");
	I("gemv dest=0x00200 src=0x00000 wshape=0 fshape=0 +w_scale +findemax");
	I("cvo func=max src=0x00200 dst=0x00300 len=1000");
	I("cvo func=exp src=0x00200 dst=0x00200 len=1000 +sub_emax");
	I("cvo func=sum src=0x00200 dst=0x00301 len=1000");
	I("cvo func=scale src=0x00200 dst=0x00200 len=1000 +recip_scale");
	I("cvo func=lds src=0x00301 dst=0x00302 len=0");
	I("cvo func=rsqrt src=0 dst=0x00302 len=0 +sreg +async");
	I("memcpy dest=0 src=0x00200 desc=1 fshape=1 +to_host");
	dma(1, PCCX_DMA_TO_DEVICE, 0, 8192);
	dma(2, PCCX_DMA_FROM_DEVICE, 0, 4000);
	for (p = 0; p < 4; p++) {
		part = pccx__wstream_port_bytes(&ws, p);
		ck_assert_uint_eq(part, 250 * 1152);
		if (p == 1) {
			stream(3, p, off, 1152 * 100);
			stream(3, p, off + 1152 * 100, part - 1152 * 100);
		} else {
			stream(3, p, off, part);
		}
		off += part;
	}
	accept();
	for (p = 0; p < 4; p++)
		ck_assert_uint_eq(J.res.port_bytes[p], 288000);
	ck_assert_uint_eq(J.res.dma_bytes_in, 8192);
	ck_assert_uint_eq(J.res.dma_bytes_out, 4000);
	ck_assert_int_eq(J.res.err, 0);
	/* the same job, one byte-beat short on the last port */
	J.stream[J.n_stream - 1].length -= 16;
	expect(PCCX_ISA_E_STREAM_MISMATCH, PCCX_VW_PORT, 3, -1);
	expect_detail(288000, 288000 - 16);
}
END_TEST

/* Two instructions' consumption adds up per port; GEMM streams its weights once. */
START_TEST(accept_stream_sum_over_instructions)
{
	struct pccx_wshape q4 = { 10, 64, PCCX_WFMT_Q4, false };
	struct pccx_wshape bt = { 24, 64, PCCX_WFMT_F32T, false };
	unsigned p;

	job_reset();
	program_only();
	buf(3, 1 << 20, PCCX_BUF_DEV_READ);
	I("memset cache=fmap entry=0 a=64 b=5 c=1");
	I("memset cache=weight entry=0 a=10 b=64 c=%u", PCCX_WFMT_Q4);
	I("memset cache=weight entry=1 a=24 b=64 c=%u", PCCX_WFMT_F32T);
	I("gemm dest=0x1000 src=0 wshape=0 fshape=0");
	I("gemm dest=0x2000 src=0 wshape=1 fshape=0 +accm");
	accept();
	J.lim.program_only = false;
	for (p = 0; p < 4; p++) {
		uint64_t want = pccx__wstream_port_bytes(&q4, p) + pccx__wstream_port_bytes(&bt, p);

		stream(3, p, 4096 * p, want);
	}
	accept();
	/* q4 10 rows: 3,3,3,1 x 32 bytes; f32t 64 rows of 96 bytes (24 FP32): 16 per port */
	ck_assert_uint_eq(J.res.port_bytes[0], 3 * 32 + 16 * 96);
	ck_assert_uint_eq(J.res.port_bytes[3], 1 * 32 + 16 * 96);
}
END_TEST

/* program_only: the pairing with descriptors is skipped, everything else is checked. */
START_TEST(program_only_mode)
{
	job_reset();
	I("memset cache=fmap entry=0 a=64 b=1 c=1");
	I("memset cache=weight entry=0 a=32 b=64 c=%u", PCCX_WFMT_Q4);
	I("memcpy dest=0 src=0 desc=77 fshape=0 +from_host");
	I("gemv dest=0x100 src=0 wshape=0 fshape=0 +w_scale");
	I("memcpy dest=0 src=0x100 desc=78 fshape=0 +to_host");
	expect(PCCX_ISA_E_DMA_INDEX, PCCX_VW_INSN, 2, PCCX_FID_B_desc);
	program_only();
	accept();
	ck_assert_uint_eq(J.res.dma_bytes_in, 0);
	ck_assert_uint_eq(J.res.port_bytes[0], 0);
	/* with descriptors present but unused and no scratch: still fine */
	buf(1, 4096, PCCX_BUF_DEV_READ);
	dma(1, PCCX_DMA_TO_DEVICE, 0, 64);
	{
		struct pccx_job_view v = { J.insn, J.n_insn, J.dma, J.n_dma, NULL, 0 };

		ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, NULL, &J.res), 0);
	}
	/* but the descriptors themselves are still checked */
	J.dma[0].flags = 0;
	expect(PCCX_ISA_E_DESC_FLAGS, PCCX_VW_DMA, 0, -1);
	/* as is every instruction */
	J.dma[0].flags = PCCX_DMA_TO_DEVICE;
	I("gemv dest=0x100 src=0x100 wshape=0 fshape=0");
	expect(PCCX_ISA_E_OVERLAP, PCCX_VW_INSN, 5, PCCX_FID_A_dest);
	replace_last(".word 0x5000000000000000");
	expect(PCCX_ISA_E_OPCODE, PCCX_VW_INSN, 5, -1);
}
END_TEST

/* Word-level faults come through the validator with their field. */
START_TEST(word_faults_through_validator)
{
	job_reset();
	program_only();
	I("memset cache=fmap entry=0 a=1 b=1 c=1");
	word(0x0000000000000018ull);        /* gemv with lanes = 3 */
	expect(PCCX_ISA_E_FIELD_VALUE, PCCX_VW_INSN, 1, PCCX_FID_A_lanes);
	expect_detail(0, 0x18);
	J.insn[1] = 0x4f00000000000000ull;   /* smul without a length */
	expect(PCCX_ISA_E_LENGTH, PCCX_VW_INSN, 1, PCCX_FID_D_len);
	J.insn[1] = 0x3000000000000001ull;
	expect(PCCX_ISA_E_RESERVED, PCCX_VW_INSN, 1, PCCX_FID_C_rsv);
}
END_TEST

/* ---- weight-stream geometry ----------------------------------------------------------- */

static void check_quarters(uint32_t rows, const uint32_t first[4], const uint32_t count[4])
{
	struct pccx_wshape ws = { rows, 32, PCCX_WFMT_F32, false };
	uint32_t f, c, next = 0, sum = 0;
	unsigned p;

	ck_assert_uint_eq(pccx__wstream_rows(&ws), rows);
	for (p = 0; p < 4; p++) {
		pccx__wstream_port_rows(&ws, p, &f, &c);
		ck_assert_msg(f == first[p] && c == count[p], "%u rows, port %u: [%u, +%u)", rows,
			      p, f, c);
		/* contiguous and in order */
		ck_assert_uint_eq(f, next);
		next = f + c;
		sum += c;
		ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, p), (uint64_t)c * 128);
	}
	ck_assert_uint_eq(sum, rows);
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 4), 0);
}

START_TEST(wstream_quarters)
{
	check_quarters(1000, (const uint32_t[]){ 0, 250, 500, 750 },
		       (const uint32_t[]){ 250, 250, 250, 250 });
	check_quarters(10, (const uint32_t[]){ 0, 3, 6, 9 }, (const uint32_t[]){ 3, 3, 3, 1 });
	check_quarters(5, (const uint32_t[]){ 0, 2, 4, 5 }, (const uint32_t[]){ 2, 2, 1, 0 });
	check_quarters(1, (const uint32_t[]){ 0, 1, 1, 1 }, (const uint32_t[]){ 1, 0, 0, 0 });
	check_quarters(0, (const uint32_t[]){ 0, 0, 0, 0 }, (const uint32_t[]){ 0, 0, 0, 0 });
	check_quarters(65535, (const uint32_t[]){ 0, 16384, 32768, 49152 },
		       (const uint32_t[]){ 16384, 16384, 16384, 16383 });
}
END_TEST

START_TEST(wstream_q4_row_bytes)
{
	static const struct { uint32_t k; uint64_t plain, scaled; } t[] = {
		{ 32, 16, 16 + 16 },               /* 1 block; 1 scale beat (2 of 16 bytes) */
		{ 64, 32, 32 + 16 },
		{ 2048, 1024, 1024 + 128 },        /* 64 blocks; 8 scale beats: 72 beats */
		{ 16384, 8192, 8192 + 1024 },      /* 512 blocks; 64 scale beats */
		{ 288, 144, 144 + 32 },            /* 9 scales: 18 bytes, padded to 2 beats */
	};
	unsigned k;

	for (k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		struct pccx_wshape ws = { 7, t[k].k, PCCX_WFMT_Q4, false };

		ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), t[k].plain);
		ws.w_scale = true;
		ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), t[k].scaled);
		ck_assert_uint_eq(pccx__wstream_rows(&ws), 7);
		ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 0), 2 * t[k].scaled);
		ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 3), 1 * t[k].scaled);
	}
}
END_TEST

START_TEST(wstream_f32_row_bytes)
{
	struct pccx_wshape ws = { 10, 9, PCCX_WFMT_F32, false };

	/* f32: rows of K FP32 values (4 per beat), padded to whole beats; N rows */
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 48);
	ws.k = 8;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 32);
	ws.k = 4;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 16);
	ws.k = 5;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 32);
	ws.k = 2048;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 8192);
	ws.k = 65535;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 262144);
	ck_assert_uint_eq(pccx__wstream_rows(&ws), 10);
	/* f32t: K stored rows of N */
	ws = (struct pccx_wshape){ 9, 100, PCCX_WFMT_F32T, false };
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 48);
	ck_assert_uint_eq(pccx__wstream_rows(&ws), 100);
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 0), 25 * 48);
	ws.n = 256;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 1024);
	/* q4c: per 32-block, 32 column records of the port's rows' nibbles, then their scales */
	ws = (struct pccx_wshape){ 10, 64, PCCX_WFMT_Q4C, true };
	ck_assert_uint_eq(pccx__wstream_q4c_col_bytes(3), 16);
	ck_assert_uint_eq(pccx__wstream_q4c_scale_bytes(3), 16);
	ck_assert_uint_eq(pccx__wstream_q4c_scale_bytes(9), 32);
	ck_assert_uint_eq(pccx__wstream_q4c_col_bytes(33), 32);
	ck_assert_uint_eq(pccx__wstream_q4c_block_bytes(3), 32 * 16 + 16);
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 0), 2 * 528);
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 3), 2 * 528);
	ck_assert_uint_eq(pccx__wstream_port_offset(&ws, 2), 4 * 528);
	ck_assert_uint_eq(pccx__wstream_port_offset(&ws, 4), 8 * 528);
	ws = (struct pccx_wshape){ 2048, 16384, PCCX_WFMT_Q4C, true };
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 1), 512ull * (32 * 256 + 1024));
	ws.n = 3;                  /* port 3 carries no row, so nothing */
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 3), 0);
	/* an undefined format streams nothing */
	ws.fmt = 4;
	ck_assert_uint_eq(pccx__wstream_row_bytes(&ws), 0);
	ck_assert_uint_eq(pccx__wstream_port_bytes(&ws, 0), 0);
}
END_TEST

/* The effects the validator derives for a GEMV: the same geometry. */
START_TEST(effects_match_geometry)
{
	struct pccx_shape_state st;
	struct pccx_effects fx;
	struct pccx_isa_fault f;
	struct pccx_insn in;
	struct pccx_wshape ws = { 1000, 2048, PCCX_WFMT_Q4, true };
	unsigned p;

	pccx__shape_reset(&st);
	job_reset();
	I("memset cache=fmap entry=0 a=2048 b=1 c=1");
	I("memset cache=weight entry=0 a=1000 b=2048 c=0");
	I("gemv dest=0x200 src=0 wshape=0 fshape=0 +w_scale +findemax");
	for (p = 0; p < 2; p++) {
		ck_assert_int_eq(pccx__decode(J.insn[p], &in, &f), 0);
		pccx__shape_apply(&st, &in);
	}
	ck_assert_int_eq(pccx__decode(J.insn[2], &in, &f), 0);
	ck_assert_int_eq(pccx__insn_effects(&in, &st, L2, &fx, &f), 0);
	ck_assert_int_eq(fx.engine, PCCX_ENG_GEMV);
	ck_assert_uint_eq(fx.rd[0].base, 0);
	ck_assert_uint_eq(fx.rd[0].words, 512);
	ck_assert_uint_eq(fx.wr.base, 0x200);
	ck_assert_uint_eq(fx.wr.words, 250);
	ck_assert(fx.writes_s);
	ck_assert_int_eq(fx.dma, -1);
	for (p = 0; p < 4; p++)
		ck_assert_uint_eq(fx.port_bytes[p], pccx__wstream_port_bytes(&ws, p));
}
END_TEST

/* ---- the validator reads only what it was given ------------------------------------------ */

/*
 * Put `bytes` at the very end of a read-write page followed by an inaccessible
 * page: one byte read past the array faults.
 */
static void *guarded(size_t bytes, void **map, size_t *maplen)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = (bytes + pg - 1) / pg + 1;
	uint8_t *m;

	*maplen = (data_pages + 1) * pg;
	m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(m != MAP_FAILED);
	ck_assert_int_eq(mprotect(m + data_pages * pg, pg, PROT_NONE), 0);
	*map = m;
	return m + data_pages * pg - bytes;
}

START_TEST(reads_stay_within_counts)
{
	void *mi, *md, *ms, *mu;
	size_t li, ld, ls, lu;
	uint64_t *insn;
	struct pccx_dma_desc *d;
	struct pccx_stream_desc *s;
	uint8_t *used;
	struct pccx_job_view v;

	/* a job with every kind of element: 9 DMA descriptors (the bitmap needs 2+1 bytes) */
	small_gemv_job();
	buf(1, 4096, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
	I("memset cache=fmap entry=1 a=16 b=1 c=1");
	while (J.n_dma < 9) {
		dma(1, PCCX_DMA_TO_DEVICE, 0, 64);
		I("memcpy dest=0x40 src=0 desc=%u fshape=1 +from_host", J.n_dma - 1);
	}
	stream(3, 0, 0, 16);
	stream(3, 1, 16, 16);
	stream(3, 2, 32, 16);
	stream(3, 3, 48, 16);
	accept();

	insn = guarded(J.n_insn * sizeof(*insn), &mi, &li);
	d = guarded(J.n_dma * sizeof(*d), &md, &ld);
	s = guarded(J.n_stream * sizeof(*s), &ms, &ls);
	used = guarded(PCCX_DMA_BITMAP_BYTES(J.n_dma), &mu, &lu);
	memcpy(insn, J.insn, J.n_insn * sizeof(*insn));
	memcpy(d, J.dma, J.n_dma * sizeof(*d));
	memcpy(s, J.stream, J.n_stream * sizeof(*s));
	v = (struct pccx_job_view){ insn, J.n_insn, d, J.n_dma, s, J.n_stream };
	ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, used, &J.res), 0);
	ck_assert_uint_eq(J.res.dma_bytes_in, 9 * 64);
	/* refusals found at the last element of each array */
	d[J.n_dma - 1].flags = 0;
	ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, used, &J.res),
			 PCCX_ISA_E_DESC_FLAGS);
	ck_assert_uint_eq(J.res.index, J.n_dma - 1);
	d[J.n_dma - 1].flags = PCCX_DMA_TO_DEVICE;
	s[J.n_stream - 1].port = 9;
	ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, used, &J.res),
			 PCCX_ISA_E_STREAM_PORT);
	s[J.n_stream - 1].port = 3;
	insn[J.n_insn - 1] |= 1ull << 24;        /* src of a from_host MEMCPY */
	ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, used, &J.res),
			 PCCX_ISA_E_UNUSED_FIELD);
	ck_assert_uint_eq(J.res.index, J.n_insn - 1);
	insn[J.n_insn - 1] &= ~(1ull << 24);
	/* shorter views of the same arrays: the last elements are simply not there */
	v.n_dma = J.n_dma - 1;
	ck_assert_int_eq(pccx__validate(&v, lookup, &J, &J.lim, used, &J.res),
			 PCCX_ISA_E_DMA_INDEX);
	munmap(mi, li);
	munmap(md, ld);
	munmap(ms, ls);
	munmap(mu, lu);
}
END_TEST

static Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");
	TCase *tc;

	tc = tcase_create("job");
	tcase_add_test(tc, job_empty);
	tcase_add_test(tc, job_limit_counts);
	tcase_add_test(tc, job_limit_missing_arrays);
	tcase_add_test(tc, job_limit_descriptor_length);
	suite_add_tcase(s, tc);

	tc = tcase_create("shape");
	tcase_add_test(tc, shape_unset_fmap);
	tcase_add_test(tc, shape_unset_weight);
	tcase_add_test(tc, shape_unset_order_and_jobs);
	tcase_add_test(tc, shape_fmap_values);
	tcase_add_test(tc, shape_weight_values);
	tcase_add_test(tc, shape_w_scale_needs_q4);
	tcase_add_test(tc, shape_q4c);
	suite_add_tcase(s, tc);

	tc = tcase_create("l2");
	tcase_add_test(tc, l2_gemv);
	tcase_add_test(tc, l2_gemm_rows);
	tcase_add_test(tc, l2_memcpy);
	tcase_add_test(tc, l2_memcpy_64bit_product);
	tcase_add_test(tc, l2_cvo_vector);
	tcase_add_test(tc, l2_cvo_scalar);
	tcase_add_test(tc, l2_cvo_lds_index);
	tcase_add_test(tc, l2_custom_size);
	tcase_add_test(tc, overlap_gemv);
	tcase_add_test(tc, overlap_memcpy_l2);
	tcase_add_test(tc, overlap_cvo);
	suite_add_tcase(s, tc);

	tc = tcase_create("descriptors");
	tcase_add_test(tc, dma_index);
	tcase_add_test(tc, dma_dir);
	tcase_add_test(tc, dma_length);
	tcase_add_test(tc, dma_unused);
	tcase_add_test(tc, buf_handle);
	tcase_add_test(tc, buf_handle_detail_defined);
	tcase_add_test(tc, buf_range);
	tcase_add_test(tc, buf_range_overflow);
	tcase_add_test(tc, buf_access);
	tcase_add_test(tc, align);
	tcase_add_test(tc, desc_flags);
	tcase_add_test(tc, stream_port);
	tcase_add_test(tc, stream_mismatch);
	tcase_add_test(tc, rowmask_stream_range);
	tcase_add_test(tc, extensions_need_the_feature);
	tcase_add_test(tc, stream_fewer_rows_than_ports);
	suite_add_tcase(s, tc);

	tc = tcase_create("accepted");
	tcase_add_test(tc, accept_realistic_job);
	tcase_add_test(tc, accept_stream_sum_over_instructions);
	tcase_add_test(tc, program_only_mode);
	tcase_add_test(tc, word_faults_through_validator);
	tcase_add_test(tc, reads_stay_within_counts);
	suite_add_tcase(s, tc);

	tc = tcase_create("wstream");
	tcase_add_test(tc, wstream_quarters);
	tcase_add_test(tc, wstream_q4_row_bytes);
	tcase_add_test(tc, wstream_f32_row_bytes);
	tcase_add_test(tc, effects_match_geometry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(validate_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
