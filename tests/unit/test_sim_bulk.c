/* SPDX-License-Identifier: MIT */
/*
 * The simulator's bulk advance (sim/bulk.c) against its edge-by-edge model: a decode-like job
 * run both ways (the q4 rows computed on the caller's thread edge by edge, on a second thread
 * in bulk) gives the same cycles, statistics, per-instruction times, trace, L2, S and host
 * bytes, under configurations that put the weight streams in every regime (port-bound,
 * DDR-bound with lanes waiting, FIFOs of 64 beats with two bursts in flight, an AXI clock that
 * rarely meets the core clock, a host that stalls). And the weight FIFOs, which read their
 * bytes from host memory when a lane takes them: a device write to host memory after a stream
 * delivered its bytes never changes what it delivered.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "pool.h"
#include "test_sim_util.h"
#include "support/thread_signals.h"

/* L2 word addresses of the job */
#define X_W   0x100u      /* inputs: 1024 elements (4 rows of 256 for the GEMM) */
#define Y_W   0x1000u     /* outputs, one region per matmul */
#define OUT_WORDS 0x2400u /* Y_W .. Y_W + OUT_WORDS go back to the host */
#define EXP_SRC 0x8000u
#define EXP_DST 0xA000u
#define XG_W  0x10000u    /* gemm_job(): the prompt rows, 32 rows of 1024 elements */
#define X_BYTES (32u * 4096u)   /* the host's input buffer */

struct wmat {
	struct pccx_wshape ws;
	uint64_t off;         /* in the weight buffer */
};

/* The weight shapes of the job (entry i of the weight cache is wm[i]). */
static const struct pccx_wshape shapes[] = {
	{ 1000, 1024, PCCX_WFMT_Q4, true },
	{ 203, 512, PCCX_WFMT_Q4, true },
	{ 50, 256, PCCX_WFMT_F32, false },
	{ 64, 256, PCCX_WFMT_Q4, true },      /* the GEMM's */
	{ 100, 256, PCCX_WFMT_Q4, false },
	{ 37, 256, PCCX_WFMT_F32T, false },
	{ 4096, 256, PCCX_WFMT_Q4, true },
	{ 4096, 1024, PCCX_WFMT_Q4, true },   /* the long GEMV of stream_job() */
};
#define LONG_SHAPE 7u
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

struct run {
	struct pccx_sim_backend_result res;
	struct pccx_sim_insn_time t[64];
	uint32_t n_t;
	uint8_t *l2, *out;
	uint32_t s_bits;
	char *trace;
	size_t trace_len;
};

/* Which job a comparison runs, and where its weights start in their buffer. */
enum job_kind { JOB_DECODE, JOB_STREAM, JOB_GEMM, JOB_MEMCPY, JOB_GEMM_MEMCPY, JOB_KINDS };

struct jobspec {
	enum job_kind kind;   /* decode_job(), stream_job(), gemm_job(), memcpy_job() or
			       * gemm_memcpy_job() */
	uint64_t base;        /* bytes before the first matrix (not a multiple of 256: bursts
			       * split at 4 KiB boundaries) */
	bool any_config;      /* a configuration the job was not shaped for: only compared */
};

static uint64_t wm_layout(struct wmat *wm, uint64_t base)
{
	uint64_t off = base;
	unsigned i;

	for (i = 0; i < N_SHAPES; i++) {
		wm[i].ws = shapes[i];
		wm[i].off = off;
		off += pccx__wstream_row_bytes(&shapes[i]) * pccx__wstream_rows(&shapes[i]);
		off = (off + 4095) & ~4095ull;
	}
	return off;
}

static void matmul(struct tjob *j, const struct wmat *wm, unsigned e, unsigned op, uint32_t y,
		   unsigned fshape, unsigned fl, uint32_t hw)
{
	tj_add(j, t_matmul(op, y, X_W, 8 + e, fshape, fl | (wm[e].ws.w_scale ? TF_WSCALE : 0)));
	tj_streams(j, &wm[e].ws, hw, wm[e].off);
}

/*
 * Inputs in, GEMVs of every format with CVOs between them (one a sync CVO behind which the
 * next weights and inputs stream ahead), a GEMM, a device write to the host while a GEMV
 * streams, an accumulating GEMV behind it, everything back to the host.
 */
static void decode_job(struct tjob *j, const struct wmat *wm, uint32_t hx, uint32_t hw,
		       uint32_t hy)
{
	unsigned i;

	tj_add(j, t_memset(0, 0, 1024, 1, 1));
	tj_add(j, t_memset(0, 1, 512, 1, 1));
	tj_add(j, t_memset(0, 2, 256, 1, 1));
	tj_add(j, t_memset(0, 3, 256, 4, 1));
	tj_add(j, t_memset(0, 4, PCCX_L2_ELEMS_PER_WORD, 256, 1));
	tj_add(j, t_memset(0, 5, PCCX_L2_ELEMS_PER_WORD, 250, 1));
	tj_add(j, t_memset(0, 6, PCCX_L2_ELEMS_PER_WORD, OUT_WORDS, 1));
	for (i = 0; i < N_SHAPES; i++)
		tj_add(j, t_memset(1, 8 + i, shapes[i].n, shapes[i].k, shapes[i].fmt));
	tj_add(j, t_memcpy(true, false, X_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, 4096), 4,
			   true));
	matmul(j, wm, 0, PCCX_OP_GEMV, Y_W, 0, 0, hw);
	tj_add(j, t_cvo(PCCX_CVO_GELU, Y_W, 0x3000, 1000, 1));
	matmul(j, wm, 1, PCCX_OP_GEMV, Y_W + 0x200, 1, TF_FINDEMAX, hw);
	tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST, 20000, 0));
	/* behind the sync CVO the fmap channel fills its FIFO and waits (dm_stall_full) */
	tj_add(j, t_memcpy(true, false, 0x7000, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, 4096), 4,
			   true));
	matmul(j, wm, 2, PCCX_OP_GEMV, Y_W + 0x300, 2, 0, hw);
	matmul(j, wm, 3, PCCX_OP_GEMM, Y_W + 0x400, 3, 0, hw);
	matmul(j, wm, 4, PCCX_OP_GEMV, Y_W + 0x500, 2, 0, hw);
	matmul(j, wm, 5, PCCX_OP_GEMV, Y_W + 0x600, 2, 0, hw);
	matmul(j, wm, 6, PCCX_OP_GEMV, Y_W + 0x1000, 2, 0, hw);
	tj_add(j, t_memcpy(false, true, 0, Y_W, tj_dma(j, hy, PCCX_DMA_FROM_DEVICE, 0, 250 * 16),
			   5, true));
	matmul(j, wm, 0, PCCX_OP_GEMV, Y_W, 0, TF_ACCM, hw);
	tj_add(j, t_memcpy(false, true, 0, Y_W, tj_dma(j, hy, PCCX_DMA_FROM_DEVICE, 4096,
						       (uint64_t)OUT_WORDS * 16), 6, false));
}

/*
 * One long GEMV whose weights fill the FIFOs behind a sync CVO and then stream for about a
 * hundred thousand cycles in bulk windows, with CVOs on the SFU while they do.
 */
static void stream_job(struct tjob *j, const struct wmat *wm, uint32_t hx, uint32_t hw,
		       uint32_t hy)
{
	unsigned i;

	tj_add(j, t_memset(0, 0, 1024, 1, 1));
	tj_add(j, t_memset(0, 4, PCCX_L2_ELEMS_PER_WORD, 256, 1));
	tj_add(j, t_memset(0, 6, PCCX_L2_ELEMS_PER_WORD, OUT_WORDS, 1));
	tj_add(j, t_memset(1, 8 + LONG_SHAPE, shapes[LONG_SHAPE].n, shapes[LONG_SHAPE].k,
			   shapes[LONG_SHAPE].fmt));
	tj_add(j, t_memcpy(true, false, X_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, 4096), 4,
			   true));
	tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST, 20000, 0));
	matmul(j, wm, LONG_SHAPE, PCCX_OP_GEMV, Y_W, 0, 0, hw);
	for (i = 0; i < 8; i++)
		tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST + i * 0x100, 3000 + 1000 * i, 1));
	/* the results stay in L2 (compared there); decode_job() has a result channel waiting
	 * while GEMVs stream */
	(void)hy;
}

/*
 * Prompt chunks: GEMMs of 4 and 16 rows (the array keeps up with the stream, so their lanes
 * take a beat a cycle), an f32 GEMM of 16 rows, and one of 32 rows the array cannot keep up
 * with (its windows planned from the MAC budget), with CVOs on the SFU while they stream.
 */
static void gemm_job(struct tjob *j, const struct wmat *wm, uint32_t hx, uint32_t hw)
{
	tj_add(j, t_memset(0, 0, 1024, 4, 1));
	tj_add(j, t_memset(0, 1, 1024, 16, 1));
	tj_add(j, t_memset(0, 2, 1024, 32, 1));
	tj_add(j, t_memset(0, 3, 256, 16, 1));
	tj_add(j, t_memset(0, 4, PCCX_L2_ELEMS_PER_WORD, X_BYTES / 16, 1));
	tj_add(j, t_memset(1, 8 + 0, shapes[0].n, shapes[0].k, shapes[0].fmt));
	tj_add(j, t_memset(1, 8 + 2, shapes[2].n, shapes[2].k, shapes[2].fmt));
	tj_add(j, t_memset(1, 8 + LONG_SHAPE, shapes[LONG_SHAPE].n, shapes[LONG_SHAPE].k,
			   shapes[LONG_SHAPE].fmt));
	tj_add(j, t_memcpy(true, false, XG_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, X_BYTES), 4,
			   false));
	tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST, 20000, 0));
	tj_add(j, t_matmul(PCCX_OP_GEMM, Y_W, XG_W, 8 + LONG_SHAPE, 0, TF_WSCALE));
	tj_streams(j, &wm[LONG_SHAPE].ws, hw, wm[LONG_SHAPE].off);
	tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST + 0x100, 3000, 1));
	tj_add(j, t_matmul(PCCX_OP_GEMM, 0x2000, XG_W, 8 + LONG_SHAPE, 1, TF_WSCALE));
	tj_streams(j, &wm[LONG_SHAPE].ws, hw, wm[LONG_SHAPE].off);
	tj_add(j, t_matmul(PCCX_OP_GEMM, 0x6000, XG_W, 8 + 2, 3, 0));
	tj_streams(j, &wm[2].ws, hw, wm[2].off);
	tj_add(j, t_matmul(PCCX_OP_GEMM, 0xC000, XG_W, 8 + 0, 2, TF_WSCALE));
	tj_streams(j, &wm[0].ws, hw, wm[0].off);
	tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST + 0x200, 5000, 1));
}

/*
 * A long MEMCPY from the host while a long GEMV streams: the fmap channel's bursts wait for
 * the DDR behind the weights', so the MEMCPY drains its FIFO in bulk windows between them,
 * and CVOs of many lengths end on core edges in between (a window that ends just after the
 * AXI edge of a beat leaves it in the FIFO for the next edge).
 */
static void memcpy_job(struct tjob *j, const struct wmat *wm, uint32_t hx, uint32_t hw)
{
	unsigned i;

	tj_add(j, t_memset(0, 0, 1024, 1, 1));
	tj_add(j, t_memset(0, 4, PCCX_L2_ELEMS_PER_WORD, X_BYTES / 16, 1));
	tj_add(j, t_memset(0, 5, PCCX_L2_ELEMS_PER_WORD, 256, 1));
	tj_add(j, t_memset(1, 8 + LONG_SHAPE, shapes[LONG_SHAPE].n, shapes[LONG_SHAPE].k,
			   shapes[LONG_SHAPE].fmt));
	tj_add(j, t_memcpy(true, false, X_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, 4096), 5,
			   false));
	matmul(j, wm, LONG_SHAPE, PCCX_OP_GEMV, Y_W, 0, 0, hw);
	tj_add(j, t_memcpy(true, false, XG_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, X_BYTES), 4,
			   true));
	for (i = 0; i < 24; i++)
		tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST + i * 0x40, 97 + 61 * i, 1));
}

/*
 * A GEMM of 32 rows the array cannot keep up with beside MEMCPYs from the host that do not
 * depend on it: its planned windows with the fmap channel draining in them.
 */
static void gemm_memcpy_job(struct tjob *j, const struct wmat *wm, uint32_t hx, uint32_t hw)
{
	unsigned i;

	tj_add(j, t_memset(0, 2, 1024, 32, 1));
	tj_add(j, t_memset(0, 3, 256, 32, 1));
	tj_add(j, t_memset(0, 4, PCCX_L2_ELEMS_PER_WORD, X_BYTES / 16, 1));
	tj_add(j, t_memset(0, 5, PCCX_L2_ELEMS_PER_WORD, X_BYTES / 64, 1));
	tj_add(j, t_memset(1, 8 + LONG_SHAPE, shapes[LONG_SHAPE].n, shapes[LONG_SHAPE].k,
			   shapes[LONG_SHAPE].fmt));
	tj_add(j, t_memset(1, 8 + 2, shapes[2].n, shapes[2].k, shapes[2].fmt));
	tj_add(j, t_memcpy(true, false, XG_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, X_BYTES), 4,
			   false));
	tj_add(j, t_matmul(PCCX_OP_GEMM, Y_W, XG_W, 8 + LONG_SHAPE, 2, TF_WSCALE));
	tj_streams(j, &wm[LONG_SHAPE].ws, hw, wm[LONG_SHAPE].off);
	tj_add(j, t_memcpy(true, false, 0x14000, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, X_BYTES),
			   4, true));
	for (i = 0; i < 12; i++)
		tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST + i * 0x40, 97 + 61 * i, 1));
	tj_add(j, t_memcpy(true, false, 0x18000, 0,
			   tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, X_BYTES / 4), 5, true));
	tj_add(j, t_matmul(PCCX_OP_GEMM, 0x6000, XG_W, 8 + 2, 3, 0));
	tj_streams(j, &wm[2].ws, hw, wm[2].off);
	tj_add(j, t_memcpy(true, false, 0x19000, 0,
			   tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, X_BYTES / 4), 5, true));
	tj_add(j, t_matmul(PCCX_OP_GEMM, 0x2000, XG_W, 8 + LONG_SHAPE, 2, TF_WSCALE));
	tj_streams(j, &wm[LONG_SHAPE].ws, hw, wm[LONG_SHAPE].off);
	for (i = 0; i < 12; i++)
		tj_add(j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST + i * 0x40, 131 + 37 * i, 1));
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void fill(uint8_t *p, uint64_t n, uint64_t *rng)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)t_rand(rng);
}

/* Inputs: finite FP32 values (random bits would make NaNs of most results). */
static void fill_f32(uint8_t *p, uint64_t n, uint64_t *rng)
{
	uint64_t i;

	for (i = 0; i + 4 <= n; i += 4)
		put_f32(p + i, t_f32(rng, 2.0f));
}

/* Random weights with FP16 scales of moderate size in the q4 records. */
static void fill_weights(uint8_t *w, const struct wmat *wm)
{
	uint64_t rng = 7;
	unsigned i;

	for (i = 0; i < N_SHAPES; i++) {
		const struct pccx_wshape *ws = &wm[i].ws;
		uint64_t rb = pccx__wstream_row_bytes(ws), rows = pccx__wstream_rows(ws), r, b;
		uint8_t *m = w + wm[i].off;

		if (ws->fmt != PCCX_WFMT_Q4) {
			fill_f32(m, rb * rows, &rng);
			continue;
		}
		fill(m, rb * rows, &rng);
		for (r = 0; r < rows && ws->w_scale; r++)
			for (b = 0; b < ws->k / 32; b++)
				put16(m + r * rb + 2 * b,
				      pccx__f32_to_fp16(t_f32(&rng, 0.0625f)));
	}
}

static void run_job(const struct pccx_sim_config *cfg, bool every_edge, bool slow_host,
		    const struct jobspec *js, struct run *r)
{
	struct pccx_sim_backend *b = NULL;
	struct pccx_sim_backend_opts opts = { 0 };
	struct wmat wm[N_SHAPES];
	uint64_t wbytes = wm_layout(wm, js->base), rng = 3;
	uint32_t hx, hw, hy, i;
	char path[] = "/tmp/pccx_bulk_XXXXXX";
	int fd = mkstemp(path);
	struct pccx_job_view v;
	struct tjob j = { 0 };
	pccx_diag d = { 0 };
	pccx_sim *sim;

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_msg(pccx__sim_backend_create(cfg, &b, &d) == 0, "%s", d.msg);
	sim = pccx__sim_backend_sim(b);
	pccx__sim_set_every_edge(sim, every_edge);
	/* edge by edge, the q4 rows are computed on this thread; in bulk, on the second one */
	pccx__sim_set_row_thread(sim, !every_edge);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, X_BYTES, PCCX_BUF_DEV_READ, &hx, &d), 0);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, wbytes, PCCX_BUF_DEV_READ, &hw, &d), 0);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, 4096 + (uint64_t)OUT_WORDS * 16,
						     PCCX_BUF_DEV_WRITE, &hy, &d), 0);
	fill_f32(pccx__sim_backend_buf_map(b, hx, NULL), X_BYTES, &rng);
	fill_weights(pccx__sim_backend_buf_map(b, hw, NULL), wm);
	if (js->kind == JOB_STREAM)
		stream_job(&j, wm, hx, hw, hy);
	else if (js->kind == JOB_GEMM)
		gemm_job(&j, wm, hx, hw);
	else if (js->kind == JOB_MEMCPY)
		memcpy_job(&j, wm, hx, hw);
	else if (js->kind == JOB_GEMM_MEMCPY)
		gemm_memcpy_job(&j, wm, hx, hw);
	else
		decode_job(&j, wm, hx, hw, hy);
	ck_assert_int_eq(pccx__sim_trace_open(sim, path, &d), 0);
	if (slow_host) {
		opts.stall_every = 5;
		opts.stall_phase = 2;
		opts.stall_cycles = 3000;
	}
	v = tj_view(&j);
	ck_assert_msg(pccx__sim_backend_submit_wait(b, &v, &opts, &r->res, &d) == 0, "%s", d.msg);
	if (!every_edge) {
		/* the second thread ran, and takes none of the application's signals */
		int unblocked, others = other_threads(SIGINT, &unblocked);

		ck_assert_int_ge(others, pccx__pool_ncpu() >= 2 ? 1 : 0);
		ck_assert_int_eq(unblocked, 0);
	}
	ck_assert_int_eq(pccx__sim_trace_close(sim, &d), 0);
	r->trace = slurp(path, &r->trace_len);
	unlink(path);
	for (i = 0; i < 64 && pccx__sim_insn_time(sim, i); i++)
		r->t[i] = *pccx__sim_insn_time(sim, i);
	r->n_t = i;
	ck_assert_uint_eq(r->n_t, j.n_insn);
	r->l2 = malloc((size_t)cfg->l2_words * 16);
	r->out = malloc(4096 + (size_t)OUT_WORDS * 16);
	ck_assert_ptr_nonnull(r->l2);
	ck_assert_ptr_nonnull(r->out);
	memcpy(r->l2, pccx__sim_l2(sim), (size_t)cfg->l2_words * 16);
	memcpy(r->out, pccx__sim_backend_buf_map(b, hy, NULL), 4096 + (size_t)OUT_WORDS * 16);
	r->s_bits = pccx__sim_s_bits(sim);
	pccx__sim_backend_destroy(b);
}

static void run_free(struct run *r)
{
	free(r->l2);
	free(r->out);
	free(r->trace);
}

static void same_both_ways(const struct pccx_sim_config *cfg, bool slow_host,
			   const struct jobspec *js)
{
	struct run e = { 0 }, k = { 0 };
	const struct pccx_sim_stats *a = &e.res.stats, *b = &k.res.stats;
	uint32_t i;

	run_job(cfg, true, slow_host, js, &e);
	run_job(cfg, false, slow_host, js, &k);
	ck_assert_uint_eq(e.res.cycles, k.res.cycles);
	ck_assert_uint_eq(a->stall_weights, b->stall_weights);
	ck_assert_uint_eq(a->ddr_row_misses, b->ddr_row_misses);
	for (i = 0; i < PCCX_SIM_DM_CHANNELS; i++) {
		ck_assert_uint_eq(a->dm_busy[i], b->dm_busy[i]);
		ck_assert_uint_eq(a->dm_stall_full[i], b->dm_stall_full[i]);
	}
	for (i = 0; i < PCCX_SIM_U_COUNT; i++)
		ck_assert_uint_eq(a->unit_busy[i], b->unit_busy[i]);
	ck_assert_int_eq(memcmp(a, b, sizeof(*a)), 0);
	for (i = 0; i < e.n_t; i++) {
		ck_assert_msg(e.t[i].issue == k.t[i].issue && e.t[i].done == k.t[i].done,
			      "instruction %u: issue %llu/%llu done %llu/%llu", i,
			      (unsigned long long)e.t[i].issue, (unsigned long long)k.t[i].issue,
			      (unsigned long long)e.t[i].done, (unsigned long long)k.t[i].done);
	}
	ck_assert_uint_eq(e.trace_len, k.trace_len);
	ck_assert_int_eq(memcmp(e.trace, k.trace, e.trace_len), 0);
	ck_assert_int_eq(memcmp(e.l2, k.l2, (size_t)cfg->l2_words * 16), 0);
	ck_assert_int_eq(memcmp(e.out, k.out, 4096 + (size_t)OUT_WORDS * 16), 0);
	ck_assert_uint_eq(e.s_bits, k.s_bits);
	if (js->any_config)
		goto done;
	/* the job did what it is for: many bursts, the fmap channel stalled on its full FIFO */
	ck_assert_uint_gt(a->ddr_bursts, 1000);
	if (js->kind == JOB_GEMM)
		ck_assert_uint_eq(a->unit_insns[PCCX_SIM_U_GEMM], 4);
	if (js->kind == JOB_MEMCPY) {
		/* the MEMCPY waited for its beats while the GEMV streamed */
		ck_assert_uint_gt(a->stall_fmap, 1000);
		ck_assert_uint_gt(a->stall_weights + a->dm_busy[0], 0);
	}
	if (js->kind == JOB_DECODE) {
		ck_assert_uint_gt(a->dm_stall_full[PCCX_DM_FMAP], 0);
		ck_assert_uint_gt(a->unit_insns[PCCX_SIM_U_GEMV], 6);
	}
	if (js->kind == JOB_GEMM_MEMCPY) {
		ck_assert_uint_eq(a->unit_insns[PCCX_SIM_U_GEMM], 3);
		ck_assert_uint_gt(a->stall_fmap, 0);
	}
done:
	run_free(&e);
	run_free(&k);
}

/* The configurations the equivalence tests run in (config()). */
#define CONFIGS 8

static void config(struct pccx_sim_config *cfg, int which)
{
	pccx__sim_config_default(cfg);
	switch (which) {
	case 1:            /* DDR-bound: the lanes run dry and wait */
		cfg->ddr_mbps = 6000;
		break;
	case 2:            /* FIFOs of 64 beats, two bursts in flight */
		cfg->wstream_fifo_depth = 64;
		cfg->dm_outstanding = 2;
		break;
	case 3:            /* an AXI clock whose edges rarely meet the core's */
		cfg->axi_hz = 333000000;
		cfg->ddr_read_latency_ps = 250000;
		break;
	case 4:            /* bursts of 4 beats (the round robin's order repeats in 3 periods), 5 in flight */
		cfg->ddr_burst_bytes = 64;
		cfg->dm_outstanding = 5;
		break;
	case 5:            /* bursts of 1 beat (in 6 periods), 3 in flight */
		cfg->ddr_burst_bytes = 16;
		cfg->dm_outstanding = 3;
		break;
	case 6:            /* a core clock slower than the AXI clock */
		cfg->core_hz = 200000000;
		break;
	case 7:            /* bursts of 3 beats, which 4 KiB pages do not hold whole */
		cfg->ddr_burst_bytes = 48;
		break;
	}
}

START_TEST(bulk_equals_every_edge)
{
	struct pccx_sim_config cfg;

	struct jobspec js = { JOB_DECODE, 0, false };

	config(&cfg, _i);
	same_both_ways(&cfg, false, &js);
}
END_TEST

START_TEST(bulk_equals_every_edge_slow_host)
{
	struct pccx_sim_config cfg;

	struct jobspec js = { JOB_DECODE, 0, false };

	config(&cfg, 0);
	same_both_ways(&cfg, true, &js);
}
END_TEST

/* Loop case i of a job: configuration i % CONFIGS, its weights on (i < CONFIGS) or off burst
 * boundaries. */
static void looped_both_ways(enum job_kind kind, int i)
{
	struct pccx_sim_config cfg;
	struct jobspec js = { kind, i >= CONFIGS ? 4096 + 48 : 0, false };

	config(&cfg, i % CONFIGS);
	same_both_ways(&cfg, false, &js);
}

/*
 * A long GEMV in the eight configurations, its weights on and off burst boundaries (bursts
 * that stop at 4 KiB boundaries): bulk advance agrees with the edge model over long runs of
 * stream windows.
 */
START_TEST(long_stream_equals_every_edge)
{
	looped_both_ways(JOB_STREAM, _i);
}
END_TEST

/* Prompt chunks through the GEMM array, in the eight configurations, on and off bursts. */
START_TEST(gemm_equals_every_edge)
{
	looped_both_ways(JOB_GEMM, _i);
}
END_TEST

/* A MEMCPY from the host behind a streaming GEMV, in the eight configurations, on and off
 * bursts: the windows in which it drains the fmap FIFO agree with the edge model. */
START_TEST(memcpy_in_equals_every_edge)
{
	looped_both_ways(JOB_MEMCPY, _i);
}
END_TEST

/* A GEMM the array limits beside MEMCPYs from the host, in the configurations, on and off
 * bursts. */
START_TEST(gemm_beside_memcpy_equals_every_edge)
{
	looped_both_ways(JOB_GEMM_MEMCPY, _i);
}
END_TEST

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Configurations drawn at random (the same ones every run: the seed is the loop index) with
 * a random job: either clock the faster, bursts that do and do not divide 4 KiB, shallow and
 * deep FIFOs, 1 to 16 bursts in flight, slow and fast DDR, short and long read latencies,
 * small and large arrays, weights on and off burst boundaries, a third with a slow host.
 */
START_TEST(random_configs_equal_every_edge)
{
	static const uint64_t hz[] = { 100000000, 150000000, 200000000, 250000000, 300000000,
				       333000000, 400000000, 500000000, 533000000 };
	static const uint32_t burst[] = { 16, 32, 64, 128, 256, 512, 1024, 48, 80, 96, 112, 144,
					  160, 240, 400, 272 };
	static const uint32_t depth[] = { 64, 80, 96, 128, 200, 256, 1024, 4096 };
	uint64_t x = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(_i + 1) * 0x100000001b3ull);
	struct pccx_sim_config cfg;
	struct jobspec js = { JOB_DECODE, 0, true };
	unsigned r;

	for (r = 0; r < 4; r++)
		xorshift(&x);
	pccx__sim_config_default(&cfg);
	cfg.core_hz = hz[xorshift(&x) % 9];
	cfg.axi_hz = hz[xorshift(&x) % 9];
	cfg.ddr_burst_bytes = burst[xorshift(&x) % 16];
	cfg.wstream_fifo_depth = depth[xorshift(&x) % 8];
	if (cfg.ddr_burst_bytes / PCCX_BEAT_BYTES > cfg.wstream_fifo_depth ||
	    cfg.ddr_burst_bytes / PCCX_BEAT_BYTES > cfg.fmap_fifo_depth)
		cfg.ddr_burst_bytes = PCCX_BEAT_BYTES;
	cfg.dm_outstanding = 1 + (uint32_t)(xorshift(&x) % 16);
	cfg.ddr_mbps = xorshift(&x) % 2 ? 19200 : 2000 + xorshift(&x) % 40000;
	cfg.ddr_read_latency_ps = 4000 * (uint32_t)(xorshift(&x) % 60) +
				  1234 * (uint32_t)(xorshift(&x) % 3);
	cfg.gemm_q4_macs = 256u << (xorshift(&x) % 5);
	cfg.gemm_f32_macs = 64u << (xorshift(&x) % 5);
	js.kind = (enum job_kind)(xorshift(&x) % JOB_KINDS);
	js.base = xorshift(&x) % 2 ? 4096 + 48 : 0;
	same_both_ways(&cfg, _i % 3 == 1, &js);
}
END_TEST

/* What the device writes to host memory while write_over_stream()'s GEMV streams. */
enum write_kind {
	OVER_START,	/* 4 KiB of every port's quarter, at its start, once it streamed */
	OVER_END,	/* the same at the end of the quarters, still to be read */
	ELSEWHERE_MID,	/* 4 KiB of another buffer, 90 % into the stream */
};

/* Random q4 rows with FP16 scales in [-1/16, 1/16). */
static void fill_q4_rows(uint8_t *w, uint32_t rows, uint64_t rb, uint64_t *rng)
{
	uint32_t i, k;

	fill(w, (uint64_t)rows * rb, rng);
	for (i = 0; i < rows; i++)
		for (k = 0; k < 8; k++)
			put16(w + i * rb + 2 * k, pccx__f32_to_fp16(t_f32(rng, 0.0625f)));
}

/* The shapes of a GEMV of `rows` q4 rows of 256 (shape 1), its input (256 elements from the
 * host buffer hx) at X_W and its output's (shape 3). */
static void gemv_prologue(struct tjob *j, uint32_t rows, uint32_t hx)
{
	tj_add(j, t_memset(0, 0, 256, 1, 1));
	tj_add(j, t_memset(1, 1, rows, 256, PCCX_WFMT_Q4));
	tj_add(j, t_memset(0, 2, PCCX_L2_ELEMS_PER_WORD, 256, 1));
	tj_add(j, t_memset(0, 3, PCCX_L2_ELEMS_PER_WORD, rows / PCCX_L2_ELEMS_PER_WORD, 1));
	tj_add(j, t_memcpy(true, false, X_W, 0, tj_dma(j, hx, PCCX_DMA_TO_DEVICE, 0, 4096), 2,
			   true));
}

/* The GEMV's outputs at y8 are those of x (256 elements) against the q4 rows at w. */
static void check_q4_rows(const uint8_t *y8, const float *x, const uint8_t *w, uint32_t rows,
			  uint64_t rb)
{
	int8_t q8[256];
	float sx[8];
	uint32_t i, k;

	pccx__q8_quantize(x, 256, q8, sx);
	for (i = 0; i < rows; i++) {
		uint16_t sc[8];
		float y;

		for (k = 0; k < 8; k++)
			sc[k] = get16(w + i * rb + 2 * k);
		y = pccx__out_store(pccx__q4_row_dot(w + i * rb + 16, sc, q8, sx, 256), false,
				    0.0f);
		ck_assert_msg(get32(y8 + 4 * i) == pccx_f32_bits(y),
			      "row %u: got 0x%08x expected 0x%08x", i, get32(y8 + 4 * i),
			      pccx_f32_bits(y));
	}
}

/*
 * A GEMV of `rows` rows streams its weights, and MEMCPYs after it write host memory: 4 KiB of
 * every port's quarter of the weights (at its start or at its end), or another buffer well
 * into the stream. The GEMV computes with the bytes from before the writes (sequential
 * semantics), and the writes land.
 */
static void write_over_stream(uint32_t rows, enum write_kind kind)
{
	bool sync_first = kind == OVER_START, at_end = kind == OVER_END;
	struct pccx_wshape ws = { rows, 256, PCCX_WFMT_Q4, true };
	uint64_t rb = pccx__wstream_row_bytes(&ws), wbytes = rb * rows, rng = 5, at;
	struct pccx_sim_backend *b = NULL;
	struct pccx_sim_backend_result res;
	struct pccx_sim_backend_opts opts = { 0 };
	uint32_t hx, hw, hy, hz = 0, i, q = rows / PCCX_WSTREAM_PORTS;
	uint8_t *x8, *w8, *y8, *old;
	float x[256];
	struct pccx_job_view v;
	struct tjob j = { 0 };
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__sim_backend_create(NULL, &b, &d) == 0, "%s", d.msg);
	/* the rows on the second thread, ahead of the stream where they can be */
	pccx__sim_set_row_thread(pccx__sim_backend_sim(b), true);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, 4096, PCCX_BUF_DEV_READ, &hx, &d), 0);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, wbytes, PCCX_BUF_DEV_READ |
						     PCCX_BUF_DEV_WRITE, &hw, &d), 0);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, (uint64_t)rows * 4, PCCX_BUF_DEV_WRITE,
						     &hy, &d), 0);
	if (kind == ELSEWHERE_MID) {
		ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, 4096, PCCX_BUF_DEV_WRITE, &hz, &d),
				 0);
	}
	x8 = pccx__sim_backend_buf_map(b, hx, NULL);
	w8 = pccx__sim_backend_buf_map(b, hw, NULL);
	y8 = pccx__sim_backend_buf_map(b, hy, NULL);
	fill_f32(x8, 4096, &rng);
	for (i = 0; i < 256; i++)
		x[i] = get_f32(x8 + 4 * i);
	fill_q4_rows(w8, rows, rb, &rng);
	old = malloc(wbytes);
	ck_assert_ptr_nonnull(old);
	memcpy(old, w8, wbytes);

	gemv_prologue(&j, rows, hx);
	if (sync_first)
		tj_add(&j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_DST, 30000, 0));
	tj_add(&j, t_matmul(PCCX_OP_GEMV, Y_W, X_W, 1, 0, TF_WSCALE));
	tj_streams(&j, &ws, hw, 0);
	if (kind == ELSEWHERE_MID) {
		/* a CVO of 90 % of the stream's time (a port's beats, one an AXI cycle, in core
		 * cycles at 400/250 MHz), then its output to the host */
		tj_add(&j, t_cvo(PCCX_CVO_EXP, EXP_SRC, EXP_SRC,
				 (uint32_t)(rows * rb / 64 * 36 / 25), 0));
		tj_add(&j, t_memcpy(false, true, 0, EXP_SRC,
				    tj_dma(&j, hz, PCCX_DMA_FROM_DEVICE, 0, 4096), 2, true));
	}
	/* the inputs over the first (or the last) 4 KiB of every port's quarter */
	for (i = 0; kind != ELSEWHERE_MID && i < PCCX_WSTREAM_PORTS; i++) {
		at = (i + (at_end ? 1 : 0)) * q * rb - (at_end ? 4096 : 0);
		tj_add(&j, t_memcpy(false, true, 0, X_W,
				    tj_dma(&j, hw, PCCX_DMA_FROM_DEVICE, at, 4096), 2, true));
	}
	tj_add(&j, t_memcpy(false, true, 0, Y_W,
			    tj_dma(&j, hy, PCCX_DMA_FROM_DEVICE, 0, (uint64_t)rows * 4), 3, false));
	v = tj_view(&j);
	ck_assert_msg(pccx__sim_backend_submit_wait(b, &v, &opts, &res, &d) == 0, "%s", d.msg);
	for (i = 0; kind != ELSEWHERE_MID && i < PCCX_WSTREAM_PORTS; i++) {
		at = (i + (at_end ? 1 : 0)) * q * rb - (at_end ? 4096 : 0);
		ck_assert_int_eq(memcmp(w8 + at, x8, 4096), 0);     /* the writes landed */
	}
	check_q4_rows(y8, x, old, rows, rb);
	free(old);
	pccx__sim_backend_destroy(b);
}

/*
 * A long GEMV whose ports each read the first `first` rows of their range from one place and
 * the rest from another: further on in the same buffer, past a gap (same_buf), or from a
 * second buffer. The second thread computes a port's rows ahead of the stream once two of
 * them follow each other in host memory (sim/eng_gemv.c); the first row from elsewhere must
 * give those up, and every output be that of the bytes its row was streamed from.
 */
static void split_stream(uint32_t rows, uint32_t first, bool same_buf)
{
	struct pccx_wshape ws = { rows, 256, PCCX_WFMT_Q4, true };
	uint64_t rb = pccx__wstream_row_bytes(&ws), wbytes = rb * rows, rng = 9, moved;
	struct pccx_sim_backend *b = NULL;
	struct pccx_sim_backend_result res;
	struct pccx_sim_backend_opts opts = { 0 };
	uint32_t hx, hw, hw2, hy, i, r0, n;
	uint8_t *x8, *w8, *w2, *y8, *streamed;
	float x[256];
	struct pccx_job_view v;
	struct tjob j = { 0 };
	pccx_diag d = { 0 };
	unsigned p;

	/* same_buf: the moved rows lie one matrix and 4 KiB further on in the weight buffer */
	moved = same_buf ? wbytes + 4096 : 0;
	ck_assert_msg(pccx__sim_backend_create(NULL, &b, &d) == 0, "%s", d.msg);
	pccx__sim_set_row_thread(pccx__sim_backend_sim(b), true);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, 4096, PCCX_BUF_DEV_READ, &hx, &d), 0);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, same_buf ? moved + wbytes : wbytes,
						     PCCX_BUF_DEV_READ, &hw, &d), 0);
	hw2 = hw;
	if (!same_buf)
		ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, wbytes, PCCX_BUF_DEV_READ, &hw2,
							     &d), 0);
	ck_assert_int_eq(pccx__sim_backend_buf_alloc(b, (uint64_t)rows * 4, PCCX_BUF_DEV_WRITE,
						     &hy, &d), 0);
	x8 = pccx__sim_backend_buf_map(b, hx, NULL);
	w8 = pccx__sim_backend_buf_map(b, hw, NULL);
	w2 = (uint8_t *)pccx__sim_backend_buf_map(b, hw2, NULL) + moved;
	y8 = pccx__sim_backend_buf_map(b, hy, NULL);
	fill_f32(x8, 4096, &rng);
	for (i = 0; i < 256; i++)
		x[i] = get_f32(x8 + 4 * i);
	fill_q4_rows(w8, rows, rb, &rng);
	fill_q4_rows(w2, rows, rb, &rng);
	streamed = malloc(wbytes);
	ck_assert_ptr_nonnull(streamed);

	gemv_prologue(&j, rows, hx);
	tj_add(&j, t_matmul(PCCX_OP_GEMV, Y_W, X_W, 1, 0, TF_WSCALE));
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		pccx__wstream_port_rows(&ws, p, &r0, &n);
		ck_assert_uint_gt(n, first);
		j.stream[j.n_stream++] = (struct pccx_stream_desc){
			.handle = hw, .port = p, .offset = (uint64_t)r0 * rb,
			.length = (uint64_t)first * rb };
		j.stream[j.n_stream++] = (struct pccx_stream_desc){
			.handle = hw2, .port = p, .offset = moved + (uint64_t)(r0 + first) * rb,
			.length = (uint64_t)(n - first) * rb };
		memcpy(streamed + (uint64_t)r0 * rb, w8 + (uint64_t)r0 * rb, first * rb);
		memcpy(streamed + (uint64_t)(r0 + first) * rb, w2 + (uint64_t)(r0 + first) * rb,
		       (n - first) * rb);
	}
	tj_add(&j, t_memcpy(false, true, 0, Y_W,
			    tj_dma(&j, hy, PCCX_DMA_FROM_DEVICE, 0, (uint64_t)rows * 4), 3, false));
	v = tj_view(&j);
	ck_assert_msg(pccx__sim_backend_submit_wait(b, &v, &opts, &res, &d) == 0, "%s", d.msg);
	check_q4_rows(y8, x, streamed, rows, rb);
	free(streamed);
	pccx__sim_backend_destroy(b);
}

/* The ports' rows from two buffers, and from two places of one buffer, switching early in
 * the ports' ranges (the rows ahead of the stream not yet computed) and late (computed). */
START_TEST(rows_ahead_follow_the_stream)
{
	static const uint32_t first[] = { 2, 40, 3000 };

	split_stream(16384, first[_i % 3], _i >= 3);
}
END_TEST

/*
 * The weights are in the FIFOs (they streamed behind a sync CVO) when the writes come, while
 * the GEMV takes them: the FIFOs keep what their stream delivered.
 */
START_TEST(device_write_after_delivery)
{
	write_over_stream(256, OVER_START);
}
END_TEST

/*
 * The writes come while the stream has yet to read those bytes from host memory (the end of
 * a long GEMV's quarters): the command engine holds them back until the stream's DataMover
 * statuses confirm the reads (isa/engine.c, write_must_wait).
 */
START_TEST(device_write_waits_for_stream_reads)
{
	write_over_stream(4096, OVER_END);
}
END_TEST

/*
 * A device write to host memory late in a stream whose rows are computed a batch at a time
 * where they lie in host memory: the FIFOs then still point at some 33,000 beats a port
 * (16384 rows of 144 bytes, 36,864 beats a port), more than twice their storage (12,288).
 * Before the write they copy in what can still be read, the last storage's worth; copying
 * all of it overran the storage (sim/wstream.c).
 */
START_TEST(device_write_during_long_stream)
{
	write_over_stream(16384, ELSEWHERE_MID);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_bulk");
	TCase *t = tcase_create("core");

	tcase_set_timeout(t, 300);
	tcase_add_loop_test(t, bulk_equals_every_edge, 0, CONFIGS);
	tcase_add_test(t, bulk_equals_every_edge_slow_host);
	tcase_add_loop_test(t, long_stream_equals_every_edge, 0, 2 * CONFIGS);
	tcase_add_loop_test(t, gemm_equals_every_edge, 0, 2 * CONFIGS);
	tcase_add_loop_test(t, memcpy_in_equals_every_edge, 0, 2 * CONFIGS);
	tcase_add_loop_test(t, gemm_beside_memcpy_equals_every_edge, 0, 2 * CONFIGS);
	tcase_add_loop_test(t, random_configs_equal_every_edge, 0, 32);
	tcase_add_test(t, device_write_after_delivery);
	tcase_add_test(t, device_write_waits_for_stream_reads);
	tcase_add_test(t, device_write_during_long_stream);
	tcase_add_loop_test(t, rows_ahead_follow_the_stream, 0, 6);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
