/* SPDX-License-Identifier: MIT */
/*
 * The cycle simulator: register semantics, DataMover commands, every instruction kind against
 * a direct computation with isa/num (bit-exact), hazards, overlap, error paths, the device-tree
 * configuration and the trace.
 */
#include <check.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_ref.h"
#include "gemma_model.h"
#include "fileio.h"
#include "json.h"
#include "test_sim_util.h"
#include "pccx_regs.h"

static pccx_sim *mksim(void)
{
	pccx_sim *s = NULL;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__sim_create(NULL, &s, &d) == 0, "%s", d.msg);
	return s;
}

static struct pccx_sim_backend *mkb(void)
{
	struct pccx_sim_backend *b = NULL;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__sim_backend_create(NULL, &b, &d) == 0, "%s", d.msg);
	return b;
}

static uint32_t balloc(struct pccx_sim_backend *b, uint64_t size, uint32_t access)
{
	uint32_t h = 0;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__sim_backend_buf_alloc(b, size, access, &h, &d) == 0, "%s", d.msg);
	return h;
}

static uint8_t *bmap(struct pccx_sim_backend *b, uint32_t h)
{
	uint8_t *p = pccx__sim_backend_buf_map(b, h, NULL);

	ck_assert_ptr_nonnull(p);
	return p;
}

static void submit_ok(struct pccx_sim_backend *b, const struct tjob *j,
		      struct pccx_sim_backend_result *res)
{
	struct pccx_job_view v = tj_view(j);
	pccx_diag d = { 0 };
	int rc = pccx__sim_backend_submit_wait(b, &v, NULL, res, &d);

	ck_assert_msg(rc == 0, "submit: %s", d.msg);
}

/* Elements of L2 as FP32 bit patterns (test access; 4 per word, little-endian host) */
static uint32_t *l2e(struct pccx_sim_backend *b, uint32_t word)
{
	return (uint32_t *)(void *)(pccx__sim_l2(pccx__sim_backend_sim(b)) +
				    (size_t)word * 16);
}

/* ---- registers -------------------------------------------------------------------------- */

START_TEST(regs_id_caps)
{
	pccx_sim *s = mksim();
	uint64_t id = t_rd64(s, PCCX_REG_ID), caps = t_rd64(s, PCCX_REG_CAPS), f;

	ck_assert_uint_eq(id >> 32, PCCX_ID_MAGIC);
	ck_assert_uint_eq((id >> 24) & 0xff, PCCX_ID_MAJOR);
	f = t_rd64(s, PCCX_REG_FEATURES);
	ck_assert(f & PCCX_FEAT_STATUS_REGS);
	ck_assert(f & PCCX_FEAT_ERROR_REG);
	ck_assert(f & PCCX_FEAT_IRQ);
	ck_assert(f & PCCX_FEAT_SOFT_RESET);
	ck_assert(f & PCCX_FEAT_RETIRED);
	ck_assert(f & PCCX_FEAT_CVO_EXT);
	ck_assert(f & PCCX_FEAT_WSTREAM4);
	ck_assert(f & PCCX_FEAT_PERF);
	ck_assert(!(f & PCCX_FEAT_WIDE_DMA));
	ck_assert_uint_eq(caps & 0xffffffffu, 114688);
	ck_assert_uint_eq((caps >> 32) & 0xff, 8);
	ck_assert_uint_eq((caps >> 40) & 0xff, 64);
	ck_assert_uint_eq((caps >> 48) & 0xff, 4);
	ck_assert_uint_eq((caps >> 56) & 0xff, 8);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_CLOCKS), 400000ull | (250000ull << 32));
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_WFIFO_DEPTH), 4096);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_DMA_ADDR_BITS), 32);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_STATUS), PCCX_STATUS_IDLE);
	/* a read of 0x000 is STATUS and does not stall */
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_INSTR), PCCX_STATUS_IDLE);
	/* 32-bit reads give halves */
	ck_assert_uint_eq(t_rd32(s, PCCX_REG_ID + 4), PCCX_ID_MAGIC);
	/* every access costs time; the counter runs */
	ck_assert_uint_gt(t_rd64(s, PCCX_REG_CYCLES), 0);
	ck_assert_int_eq(pccx__sim_mmio_read64(s, PCCX_MMIO_SIZE, &id), PCCX_ERR_RANGE);
	ck_assert_int_eq(pccx__sim_mmio_read64(s, 0x104, &id), PCCX_ERR_RANGE);
	pccx__sim_destroy(s);
}
END_TEST

/* A sync CVO of `len` elements keeps the front end fenced. */
START_TEST(regs_fifo_backpressure)
{
	pccx_sim *s = mksim();
	struct pccx_sim_stats st;
	unsigned i;

	t_wr64(s, PCCX_REG_INSTR, t_cvo(PCCX_CVO_EXP, 0, 0x4000, 20000, 0));
	for (i = 0; i < 8; i++)
		t_wr64(s, PCCX_REG_INSTR, t_memset(0, i, 8, 1, 1));
	ck_assert_uint_eq((t_rd64(s, PCCX_REG_STATUS) & PCCX_STATUS_FIFO_MASK) >>
			  PCCX_STATUS_FIFO_SHIFT, 8);
	ck_assert(t_rd64(s, PCCX_REG_STATUS) & PCCX_STATUS_BUSY);
	/* the ninth write stalls until the CVO retires and a slot frees */
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 9, 8, 1, 1));
	pccx__sim_get_stats(s, &st);
	ck_assert_uint_gt(st.mmio_fifo_full, 15000);
	ck_assert(pccx__sim_run_until_idle(s, 100000));
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RETIRED), 10);
	ck_assert(t_rd64(s, PCCX_REG_STATUS) & PCCX_STATUS_DONE);
	t_wr64(s, PCCX_REG_RETIRED, 12345);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RETIRED), 0);
	pccx__sim_destroy(s);
}
END_TEST

START_TEST(regs_irq_w1c)
{
	pccx_sim *s = mksim();

	t_wr64(s, PCCX_REG_IRQ_ENABLE, PCCX_IRQ_IDLE | PCCX_IRQ_ERROR);
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 0, 8, 1, 1));
	ck_assert(pccx__sim_run_until_idle(s, 1000));
	pccx__sim_advance(s, 4);
	ck_assert(t_rd64(s, PCCX_REG_IRQ_STATUS) & PCCX_IRQ_IDLE);
	ck_assert(pccx__sim_irq(s));
	t_wr64(s, PCCX_REG_IRQ_STATUS, PCCX_IRQ_IDLE);
	ck_assert(!(t_rd64(s, PCCX_REG_IRQ_STATUS) & PCCX_IRQ_IDLE));
	ck_assert(!pccx__sim_irq(s));
	/* an illegal word: ERROR, HALTED, the error interrupt, index = words before it */
	t_wr64(s, PCCX_REG_RETIRED, 0);
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 1, 8, 1, 1));
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 2, 8, 1, 1));
	t_wr64(s, PCCX_REG_INSTR, 0x8000000000000000ull);
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 3, 8, 1, 1));
	pccx__sim_advance(s, 100);
	{
		uint64_t e = t_rd64(s, PCCX_REG_ERROR), st = t_rd64(s, PCCX_REG_STATUS);

		ck_assert(e & PCCX_ERROR_VALID);
		ck_assert_uint_eq(e & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_ILLEGAL_INSN);
		ck_assert_uint_eq((e & PCCX_ERROR_ISA_MASK) >> PCCX_ERROR_ISA_SHIFT,
				  PCCX_ISA_E_OPCODE);
		ck_assert_uint_eq(e >> PCCX_ERROR_INDEX_SHIFT, 2);
		ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR_INFO), 0x8000000000000000ull);
		ck_assert(st & PCCX_STATUS_HALTED);
		ck_assert(st & PCCX_STATUS_ERROR);
		ck_assert(pccx__sim_irq(s));
	}
	/* queued words were not executed; writes while halted are dropped */
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RETIRED), 2);
	t_wr64(s, PCCX_REG_ERROR, PCCX_ERROR_VALID);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR), 0);
	ck_assert(!(t_rd64(s, PCCX_REG_STATUS) & PCCX_STATUS_HALTED));
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 4, 8, 1, 1));
	ck_assert(pccx__sim_run_until_idle(s, 1000));
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RETIRED), 3);
	pccx__sim_destroy(s);
}
END_TEST

START_TEST(regs_reset_clears)
{
	pccx_sim *s = mksim();
	uint8_t *l2 = pccx__sim_l2(s);
	uint64_t e;

	/* L2 content, a shape entry and S */
	put32(l2 + 16 * 100, 0x3f800000u);   /* element 0 of word 100 = 1.0 */
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 5, 16, 1, 1));
	t_wr64(s, PCCX_REG_INSTR, t_cvo(PCCX_CVO_LDS, 100, 200, 0, 0));
	ck_assert(pccx__sim_run_until_idle(s, 1000));
	ck_assert_uint_eq(pccx__sim_s_bits(s), 0x3f800000u);
	ck_assert_uint_eq(get32(l2 + 16 * 200), 0x3f800000u);   /* S in element 0 of dst */
	t_wr64(s, PCCX_REG_RESET, 1);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RESET), 1);
	pccx__sim_advance(s, 114688 / 8);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RESET), 0);
	ck_assert_uint_eq(pccx__sim_s_bits(s), 0);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RETIRED), 0);
	ck_assert_uint_eq(get32(l2 + 16 * 100), 0);
	ck_assert_uint_eq(get32(l2 + 16 * 200), 0);
	/* the shape entry is gone: a copy that uses it has bad operands */
	t_wr64(s, PCCX_REG_INSTR, t_memcpy(false, false, 10, 0, 0, 5, true));
	pccx__sim_advance(s, 100);
	e = t_rd64(s, PCCX_REG_ERROR);
	ck_assert_uint_eq(e & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_BAD_OPERANDS);
	ck_assert_uint_eq((e & PCCX_ERROR_ISA_MASK) >> PCCX_ERROR_ISA_SHIFT,
			  PCCX_ISA_E_SHAPE_UNSET);
	t_wr64(s, PCCX_REG_RESET, 1);
	pccx__sim_advance(s, 114688 / 8);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR), 0);
	pccx__sim_destroy(s);
}
END_TEST

/* ---- DataMover pages -------------------------------------------------------------------- */

static void dm_push(pccx_sim *s, unsigned ch, uint64_t addr, uint32_t btt, unsigned tag,
		    bool incr)
{
	uint32_t base = PCCX_DM_PAGE(ch);

	t_wr32(s, base + PCCX_DM_CMD_LO,
	       btt | (incr ? PCCX_DM_CMD_TYPE_INCR : 0) | PCCX_DM_CMD_EOF);
	t_wr32(s, base + PCCX_DM_CMD_HI, (uint32_t)addr);
	t_wr32(s, base + PCCX_DM_CMD_EXT, tag);
	t_wr32(s, base + PCCX_DM_CMD_PUSH, 1);
}

START_TEST(dm_commands_and_statuses)
{
	pccx_sim *s = mksim();
	uint32_t fm = PCCX_DM_PAGE(PCCX_DM_FMAP), res = PCCX_DM_PAGE(PCCX_DM_RESULT);
	uint8_t *host = aligned_alloc(4096, 4096), *l2 = pccx__sim_l2(s);
	unsigned i;

	for (i = 0; i < 4096; i++)
		host[i] = (uint8_t)(i * 7 + 1);
	ck_assert_int_eq(pccx__sim_dma_window_add(s, 0x40000000, 4096, host,
						  PCCX_SIM_WIN_READ | PCCX_SIM_WIN_WRITE), 0);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_FLAGS),
			  PCCX_DM_FLAG_CMD_EMPTY | PCCX_DM_FLAG_STS_EMPTY);
	/* host -> L2: 16 FP32 = 64 bytes = 4 words at L2 word 50 */
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 0, 16, 1, 1));
	dm_push(s, PCCX_DM_FMAP, 0x40000100, 64, 9, true);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_CMD_LO) & PCCX_DM_BTT_MAX, 64);
	t_wr64(s, PCCX_REG_INSTR, t_memcpy(true, false, 50, 0, 0, 0, false));
	ck_assert(pccx__sim_run_until_idle(s, 10000));
	ck_assert_int_eq(memcmp(l2 + 50 * 16, host + 0x100, 64), 0);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_STS_LVL), 1);
	ck_assert(t_rd64(s, PCCX_REG_IRQ_STATUS) & PCCX_IRQ_DM);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_STS_POP), PCCX_DM_STS_OKAY | 9);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_STS_POP), 0);
	/* L2 -> host: 4 words to offset 0x800 */
	dm_push(s, PCCX_DM_RESULT, 0x40000800, 64, 3, true);
	t_wr64(s, PCCX_REG_INSTR, t_memcpy(false, true, 0, 50, 0, 0, true));
	ck_assert(pccx__sim_run_until_idle(s, 10000));
	ck_assert_int_eq(memcmp(host + 0x800, host + 0x100, 64), 0);
	ck_assert_uint_eq(t_rd32(s, res + PCCX_DM_STS_POP), PCCX_DM_STS_OKAY | 3);

	/* BTT of 0: INTERR status, sticky bit, device error DMA_INTERR */
	dm_push(s, PCCX_DM_FMAP, 0x40000000, 0, 5, true);
	pccx__sim_advance(s, 100);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_STS_POP), PCCX_DM_STS_INTERR | 5);
	ck_assert_uint_eq((t_rd32(s, fm + PCCX_DM_FLAGS) >> 4) & 0xf, 1);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR) & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_INTERR);
	t_wr32(s, fm + PCCX_DM_ERR_W1C, 0xf0);
	ck_assert_uint_eq((t_rd32(s, fm + PCCX_DM_FLAGS) >> 4) & 0xf, 0);
	t_wr64(s, PCCX_REG_ERROR, PCCX_ERROR_VALID);
	/* FIXED type is not supported: INTERR */
	dm_push(s, PCCX_DM_FMAP, 0x40000000, 16, 6, false);
	pccx__sim_advance(s, 100);
	ck_assert_uint_eq(t_rd32(s, fm + PCCX_DM_STS_POP), PCCX_DM_STS_INTERR | 6);
	t_wr32(s, fm + PCCX_DM_ERR_W1C, 0xf0);
	t_wr64(s, PCCX_REG_ERROR, PCCX_ERROR_VALID);

	/* overflow of the 8-deep command FIFO (no consumer: they wait) */
	for (i = 0; i < 10; i++)     /* one runs (waiting for data), eight wait, one overflows */
		dm_push(s, PCCX_DM_RESULT, 0x40000000, 16, i, true);
	ck_assert_uint_le(t_rd32(s, res + PCCX_DM_CMD_LVL), 8);
	ck_assert(t_rd32(s, res + PCCX_DM_FLAGS) & (8u << 4));
	t_wr64(s, PCCX_REG_RESET, 1);
	pccx__sim_advance(s, 20000);
	ck_assert_uint_eq(t_rd32(s, res + PCCX_DM_CMD_LVL), 0);
	ck_assert_uint_eq(t_rd32(s, res + PCCX_DM_FLAGS),
			  PCCX_DM_FLAG_CMD_EMPTY | PCCX_DM_FLAG_STS_EMPTY);
	pccx__sim_destroy(s);
	free(host);
}
END_TEST

START_TEST(dm_window_fault)
{
	pccx_sim *s = mksim();
	uint8_t *host = aligned_alloc(4096, 4096);
	struct pccx_sim_stats st;

	memset(host, 0, 4096);
	ck_assert_int_eq(pccx__sim_dma_window_add(s, 0x40000000, 4096, host, PCCX_SIM_WIN_READ), 0);
	/* overlapping windows are refused */
	ck_assert_int_eq(pccx__sim_dma_window_add(s, 0x40000800, 4096, host, PCCX_SIM_WIN_READ),
			 PCCX_ERR_INVALID);
	/* a command that runs past the window's end faults at the end */
	dm_push(s, PCCX_DM_HP(2), 0x40000f00, 512, 1, true);
	pccx__sim_advance(s, 100);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR) & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_WINDOW);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR_INFO), 0x40001000);
	ck_assert_uint_eq(t_rd32(s, PCCX_DM_PAGE(2) + PCCX_DM_STS_POP), PCCX_DM_STS_DECERR | 1);
	pccx__sim_get_stats(s, &st);
	ck_assert_uint_eq(st.window_faults, 1);
	/* a write into a read-only window faults too */
	t_wr64(s, PCCX_REG_RESET, 1);
	pccx__sim_advance(s, 20000);
	dm_push(s, PCCX_DM_RESULT, 0x40000000, 16, 2, true);
	pccx__sim_advance(s, 100);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR) & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_WINDOW);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR_INFO), 0x40000000);
	pccx__sim_get_stats(s, &st);
	ck_assert_uint_eq(st.window_faults, 2);
	pccx__sim_destroy(s);
	free(host);
}
END_TEST

/* ---- GEMV / GEMM -------------------------------------------------------------------------- */

struct mm_case {
	unsigned op;
	uint32_t m, n, k;
	unsigned fmt, fl;
	bool as_gemvs;     /* M GEMVs over the rows instead of one GEMM */
};

/* Fill the weight image (row records) of ws with random data. */
static void fill_weights(uint8_t *w, const struct pccx_wshape *ws, uint64_t *rng)
{
	uint64_t rb = pccx__wstream_row_bytes(ws), rows = pccx__wstream_rows(ws), r, i;

	memset(w, 0, rb * rows);
	for (r = 0; r < rows; r++) {
		uint8_t *rec = w + r * rb;

		if (ws->fmt == PCCX_WFMT_Q4) {
			uint64_t nb = ws->k / 32, sb = ws->w_scale ? (nb * 2 + 15) / 16 * 16 : 0;

			for (i = 0; i < nb && ws->w_scale; i++)
				put16(rec + 2 * i, pccx__f32_to_fp16(t_f32(rng, 0.0625f)));
			for (i = 0; i < nb * 16; i++)
				rec[sb + i] = (uint8_t)t_rand(rng);
		} else {
			uint64_t nv = ws->fmt == PCCX_WFMT_F32 ? ws->k : ws->n;

			for (i = 0; i < nv; i++)
				put_f32(rec + 4 * i, t_f32(rng, 1.0f));
		}
	}
}

/* y (n) of one input row as the contract defines it, computed directly with isa/num. */
static void expect_row(const uint8_t *w, const struct pccx_wshape *ws, const float *x,
		       float *y)
{
	uint64_t rb = pccx__wstream_row_bytes(ws);
	uint32_t i, j, nb = ws->k / 32;

	if (ws->fmt == PCCX_WFMT_Q4) {
		int8_t *q8 = malloc(ws->k);
		float *sx = malloc(nb * sizeof(float));
		uint16_t *sc = malloc(nb * 2 + 2);
		uint64_t sb = ws->w_scale ? (nb * 2 + 15) / 16 * 16 : 0;

		pccx__q8_quantize(x, ws->k, q8, sx);
		for (i = 0; i < ws->n; i++) {
			const uint8_t *rec = w + i * rb;

			for (j = 0; j < nb; j++)
				sc[j] = get16(rec + 2 * j);
			y[i] = pccx__q4_row_dot(rec + sb, ws->w_scale ? sc : NULL, q8, sx, ws->k);
		}
		free(q8);
		free(sx);
		free(sc);
	} else if (ws->fmt == PCCX_WFMT_F32) {
		float *row = malloc(ws->k * sizeof(float));

		for (i = 0; i < ws->n; i++) {
			for (j = 0; j < ws->k; j++)
				row[j] = get_f32(w + i * rb + 4 * j);
			y[i] = pccx__f32_row_dot(row, x, ws->k);
		}
		free(row);
	} else {
		float *W = malloc((size_t)ws->k * ws->n * sizeof(float));

		for (i = 0; i < ws->k; i++)
			for (j = 0; j < ws->n; j++)
				W[(size_t)i * ws->n + j] = get_f32(w + i * rb + 4 * j);
		pccx__f32_colsum(W, x, ws->k, ws->n, y);
		free(W);
	}
}

static void run_matmul(const struct mm_case *c, uint64_t seed,
		       struct pccx_sim_backend_result *res_out)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape ws = { c->n, c->k, c->fmt, !!(c->fl & TF_WSCALE) };
	uint32_t kw = pccx_words_for(c->k), nw = pccx_words_for(c->n), r, i;
	uint64_t rb = pccx__wstream_row_bytes(&ws), rows = pccx__wstream_rows(&ws);
	uint64_t xb = (uint64_t)c->m * kw * 16, yb = (uint64_t)c->m * nw * 16, rng = seed;
	uint32_t hx = balloc(b, xb, PCCX_BUF_DEV_READ);
	uint32_t hw = balloc(b, rb * rows * (c->as_gemvs ? c->m : 1), PCCX_BUF_DEV_READ);
	uint32_t hy = balloc(b, yb, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
	uint8_t *x8 = bmap(b, hx), *w8 = bmap(b, hw), *y8 = bmap(b, hy);
	float *xrow = malloc((size_t)c->k * sizeof(float)), *outs;
	uint8_t *yold = malloc(yb);
	float *y = malloc((size_t)c->n * sizeof(float));
	uint32_t X = 0x100, Y = X + c->m * kw + 64;
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };

	for (r = 0; r < c->m; r++)
		for (i = 0; i < c->k; i++)
			put_f32(x8 + (uint64_t)r * kw * 16 + 4 * i, t_f32(&rng, 2.0f));
	fill_weights(w8, &ws, &rng);
	for (r = 1; c->as_gemvs && r < c->m; r++)
		memcpy(w8 + r * rb * rows, w8, rb * rows);
	for (i = 0; i < yb / 4; i++)
		put32(y8 + 4 * i, (c->fl & TF_ACCM) ? pccx_f32_bits(t_f32(&rng, 4.0f))
						    : 0x12345678u);
	memcpy(yold, y8, yb);

	tj_add(&j, t_memset(0, 0, c->k, c->as_gemvs ? 1 : c->m, 1));
	tj_add(&j, t_memset(1, 1, c->n, c->k, c->fmt));
	tj_add(&j, t_memset(0, 2, PCCX_L2_ELEMS_PER_WORD, c->m * kw, 1));
	tj_add(&j, t_memset(0, 3, PCCX_L2_ELEMS_PER_WORD, c->m * nw, 1));
	tj_add(&j, t_memcpy(true, false, X, 0, tj_dma(&j, hx, PCCX_DMA_TO_DEVICE, 0, xb), 2, true));
	tj_add(&j, t_memcpy(true, false, Y, 0, tj_dma(&j, hy, PCCX_DMA_TO_DEVICE, 0, yb), 3, true));
	if (c->as_gemvs) {
		for (r = 0; r < c->m; r++) {
			tj_add(&j, t_matmul(PCCX_OP_GEMV, Y + r * nw, X + r * kw, 1, 0, c->fl));
			tj_streams(&j, &ws, hw, r * rb * rows);
		}
	} else {
		tj_add(&j, t_matmul(c->op, Y, X, 1, 0, c->fl));
		tj_streams(&j, &ws, hw, 0);
	}
	tj_add(&j, t_memcpy(false, true, 0, Y, tj_dma(&j, hy, PCCX_DMA_FROM_DEVICE, 0, yb), 3,
			    false));
	submit_ok(b, &j, &res);
	if (res_out)
		*res_out = res;

	outs = malloc((size_t)c->m * c->n * sizeof(float));
	for (r = 0; r < c->m; r++) {
		const uint8_t *old = yold + (uint64_t)r * nw * 16;
		const uint8_t *got = y8 + (uint64_t)r * nw * 16;

		for (i = 0; i < c->k; i++)
			xrow[i] = get_f32(x8 + (uint64_t)r * kw * 16 + 4 * i);
		expect_row(w8, &ws, xrow, y);
		for (i = 0; i < c->n; i++) {
			float e = pccx__out_store(y[i], !!(c->fl & TF_ACCM), get_f32(old + 4 * i));

			outs[(size_t)r * c->n + i] = e;
			ck_assert_msg(get32(got + 4 * i) == pccx_f32_bits(e),
				      "row %u elem %u: got 0x%08x expected 0x%08x", r, i,
				      get32(got + 4 * i), pccx_f32_bits(e));
		}
		/* lanes past the end of the vector are unchanged */
		for (i = c->n; i % PCCX_L2_ELEMS_PER_WORD; i++)
			ck_assert_uint_eq(get32(got + 4 * i), get32(old + 4 * i));
	}
	if (c->fl & TF_FINDEMAX) {
		uint32_t want;

		if (c->as_gemvs)   /* S is the last GEMV's maximum */
			want = pccx_f32_bits(pccx__sfu_reduce(
				PCCX_SFU_MAX, 0, 0.0f, outs + (size_t)(c->m - 1) * c->n, c->n));
		else
			want = pccx_f32_bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0.0f, outs,
							      (size_t)c->m * c->n));
		ck_assert_uint_eq(pccx__sim_s_bits(pccx__sim_backend_sim(b)), want);
	}
	ck_assert_uint_eq(res.stats.window_faults, 0);
	free(outs);
	free(xrow);
	free(yold);
	free(y);
	pccx__sim_backend_destroy(b);
}

START_TEST(gemv_q4_scaled)
{
	struct mm_case c = { PCCX_OP_GEMV, 1, 203, 512, PCCX_WFMT_Q4, TF_WSCALE | TF_FINDEMAX, 0 };

	run_matmul(&c, 11, NULL);
}
END_TEST

START_TEST(gemv_q4_unscaled_accm)
{
	struct mm_case c = { PCCX_OP_GEMV, 1, 130, 288, PCCX_WFMT_Q4, TF_ACCM, 0 };

	run_matmul(&c, 12, NULL);
}
END_TEST

START_TEST(gemv_f32)
{
	struct mm_case c = { PCCX_OP_GEMV, 1, 37, 100, PCCX_WFMT_F32, TF_FINDEMAX, 0 };

	run_matmul(&c, 13, NULL);
}
END_TEST

START_TEST(gemv_f32t)
{
	struct mm_case c = { PCCX_OP_GEMV, 1, 21, 45, PCCX_WFMT_F32T, TF_ACCM, 0 };

	run_matmul(&c, 14, NULL);
}
END_TEST

START_TEST(gemm_equals_gemvs)
{
	struct mm_case c = { PCCX_OP_GEMM, 5, 77, 256, PCCX_WFMT_Q4, TF_WSCALE | TF_FINDEMAX, 0 };
	struct mm_case v = c;
	struct mm_case t = { PCCX_OP_GEMM, 3, 19, 40, PCCX_WFMT_F32T, TF_FINDEMAX, 0 };

	/* the same seed gives the same inputs: both compare to the same direct rows */
	run_matmul(&c, 21, NULL);
	v.as_gemvs = true;
	run_matmul(&v, 21, NULL);
	run_matmul(&t, 22, NULL);
	t.fmt = PCCX_WFMT_F32;
	run_matmul(&t, 23, NULL);
}
END_TEST

/* ---- CVO against a sequential model ---------------------------------------------------- */

#define MW 2048u      /* words of the modelled L2 region */
#define EW PCCX_L2_ELEMS_PER_WORD

struct cvo_model {
	float e[MW * EW];
	uint32_t S;
};

/* Element j counted from word w. */
static float m_elem(const struct cvo_model *m, uint32_t w, uint32_t j)
{
	return m->e[w * EW + j];
}

/* A scalar result: S, and element 0 of word dst. */
static void m_scalar(struct cvo_model *m, uint32_t dst, float v)
{
	m->S = pccx_f32_bits(v);
	m->e[dst * EW] = pccx_f32_from_bits(m->S);
}

static int m_fn(unsigned f)
{
	static const int map[16] = { PCCX_SFU_EXP, PCCX_SFU_SQRT, PCCX_SFU_GELU, PCCX_SFU_SIN,
				     PCCX_SFU_COS, PCCX_SFU_SUM, PCCX_SFU_SCALE, PCCX_SFU_RECIP,
				     PCCX_SFU_MUL, PCCX_SFU_ADD, PCCX_SFU_TANH, PCCX_SFU_MAX,
				     PCCX_SFU_SUMSQ, -1, PCCX_SFU_RSQRT, -1 };

	return map[f & 15];
}

/* docs/isa.md CVO semantics, step by step, through isa/num. */
static void m_cvo(struct cvo_model *m, uint64_t w)
{
	unsigned func = PCCX_GET(w, D, func);
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(func);
	uint32_t src = PCCX_GET(w, D, src), dst = PCCX_GET(w, D, dst), n = PCCX_GET(w, D, len);
	bool sform = PCCX_GET(w, D, sreg);
	unsigned fl = 0;
	float S = pccx_f32_from_bits(m->S);
	int fn = m_fn(func);

	if (PCCX_GET(w, D, sub_emax))
		fl |= PCCX_SFU_F_SUB;
	if (PCCX_GET(w, D, relu))
		fl |= PCCX_SFU_F_RELU;
	if (PCCX_GET(w, D, accm))
		fl |= PCCX_SFU_F_ACCM;
	if (PCCX_GET(w, D, recip_scale))
		fl |= cd->cls == PCCX_CVOC_REDUCE ? PCCX_SFU_F_MEAN : PCCX_SFU_F_RECIP;
	if (func == PCCX_CVO_SMUL) {
		/* (dst * S) * src: a SCALE of dst in place, then a MUL by src */
		pccx__sfu_vector(PCCX_SFU_SCALE, 0, S, m->e + dst * EW, m->e + dst * EW, n);
		pccx__sfu_vector(PCCX_SFU_MUL, 0, S, m->e + src * EW, m->e + dst * EW, n);
	} else if (cd->cls == PCCX_CVOC_LOAD) {
		ck_assert(!sform);          /* LDS has no scalar form */
		m_scalar(m, dst, pccx_f32_canon(m_elem(m, src, n)));
	} else if (sform && cd->cls == PCCX_CVOC_UNARY) {
		m_scalar(m, dst, pccx__sfu_elem(fn, fl, S, S, 0.0f));
	} else if (sform) {
		m_scalar(m, dst, pccx__sfu_scalar(fn, fl, S, m_elem(m, src, 0)));
	} else if (cd->cls == PCCX_CVOC_REDUCE) {
		m_scalar(m, dst, pccx__sfu_reduce(fn, fl, S, m->e + src * EW, n));
	} else {
		pccx__sfu_vector(fn, fl, S, m->e + src * EW, m->e + dst * EW, n);
	}
}

static void m_copy(struct cvo_model *m, uint32_t dst, uint32_t src, uint32_t words)
{
	memmove(m->e + dst * EW, m->e + src * EW, (size_t)words * 16);
}

/* Run the job on the simulator (L2 preloaded with the model), apply it to the model one
 * instruction at a time, and compare L2 and S. */
static void check_program(struct cvo_model *m, const struct tjob *j,
			  struct pccx_sim_backend_result *res)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_sim_backend_result r;
	uint32_t i, fm[64] = { 0 };

	memcpy(l2e(b, 0), m->e, sizeof(m->e));
	submit_ok(b, j, &r);
	for (i = 0; i < j->n_insn; i++) {
		uint64_t w = j->insn[i];

		switch (pccx_opcode_of(w)) {
		case PCCX_OP_CVO:
			m_cvo(m, w);
			break;
		case PCCX_OP_MEMSET:
			if (PCCX_GET(w, C, cache) == 0)
				fm[PCCX_GET(w, C, entry)] = PCCX_GET(w, C, a) * PCCX_GET(w, C, b) *
							    PCCX_GET(w, C, c);
			break;
		case PCCX_OP_MEMCPY:
			ck_assert(!PCCX_GET(w, B, from_host) && !PCCX_GET(w, B, to_host));
			m_copy(m, PCCX_GET(w, B, dest), PCCX_GET(w, B, src),
			       pccx_words_for(fm[PCCX_GET(w, B, fshape)]));
			break;
		}
	}
	for (i = 0; i < MW * EW; i++)
		ck_assert_msg(l2e(b, 0)[i] == pccx_f32_bits(m->e[i]),
			      "element %u (word %u): got 0x%08x want 0x%08x", i, i / EW,
			      l2e(b, 0)[i], pccx_f32_bits(m->e[i]));
	ck_assert_uint_eq(pccx__sim_s_bits(pccx__sim_backend_sim(b)), m->S);
	if (res)
		*res = r;
	pccx__sim_backend_destroy(b);
}

static void m_init(struct cvo_model *m, uint64_t seed)
{
	uint64_t rng = seed;
	uint32_t i;

	for (i = 0; i < MW * EW; i++)
		m->e[i] = t_f32(&rng, 4.0f);
	/* constants in element 0 of words 0..3 */
	m->e[0 * EW] = pccx_f32_from_bits(0x3fc00000u);      /* 1.5 */
	m->e[1 * EW] = pccx_f32_from_bits(0xbf400000u);      /* -0.75 */
	m->e[2 * EW] = pccx_f32_from_bits(0x40401235u);      /* ~3.0, every mantissa bit used */
	m->e[3 * EW] = pccx_f32_from_bits(0x00000000u);      /* 0 */
	m->S = 0;
}

/* Every function, vector form with each allowed flag subset, scalar form likewise. */
START_TEST(cvo_every_function_and_flag)
{
	static struct cvo_model m;
	uint64_t prog[256];
	uint32_t np = 0, func, sub;
	struct tjob j = { 0 };
	uint32_t out = 64;

	m_init(&m, 31);
	prog[np++] = t_cvo(PCCX_CVO_LDS, 0, 4, 0, 0);     /* S = 1.5 */
	for (func = 0; func < 16; func++) {
		const struct pccx_cvo_desc *cd = pccx__cvo_desc(func);
		uint32_t vf = cd->vec_flags, sf = cd->s_flags;

		if (cd->cls == PCCX_CVOC_LOAD) {
			/* elements 13 and 15: word 103, lanes 1 and 3 */
			prog[np++] = t_cvo(func, 100, 5, 13, 1);
			prog[np++] = t_cvo(func, 100, 5, 15, 0);
			/* element 4 = word 1, element 0 */
			prog[np++] = t_cvo(func, 0, 6, 4, 0);
			prog[np++] = t_cvo(func, 0, 7, 0, 0);      /* back to 1.5 */
			continue;
		}
		/* vector form: every subset of the allowed flags */
		for (sub = 0; sub < 64; sub++) {
			if ((sub & ~vf) || (sub & PCCX_CVOF_SREG))
				continue;
			if (cd->cls == PCCX_CVOC_BINARY || cd->cls == PCCX_CVOC_REDUCE ||
			    (sub & PCCX_CVOF_ACCM))
				prog[np++] = t_cvo(func, 1550 + func * 3, out, 37, sub | 1);
			else if (sub & PCCX_CVOF_RELU)
				prog[np++] = t_cvo(func, out, out, 37, sub | 1);   /* in place */
			else
				prog[np++] = t_cvo(func, 1600 + func * 3, out, 37, sub);
			out += 10;    /* 37 elements: 10 words */
			/* reductions leave S: put 1.5 back */
			if (cd->cls == PCCX_CVOC_REDUCE)
				prog[np++] = t_cvo(PCCX_CVO_LDS, 0, 8, 0, sub & 1);
		}
		if (sf == PCCX_CVO_NO_SFORM)
			continue;
		for (sub = 0; sub < 64; sub++) {
			if (sub & ~sf & ~PCCX_CVOF_SREG)
				continue;
			if (!(sub & PCCX_CVOF_SREG))
				continue;
			prog[np++] = t_cvo(func, cd->cls == PCCX_CVOC_UNARY ? 0 : 2,
					   9 + (sub & 3), 0, sub);
			prog[np++] = t_cvo(PCCX_CVO_LDS, 0, 8, 4, 0);   /* S = -0.75 (word 1) */
			prog[np++] = t_cvo(func, cd->cls == PCCX_CVOC_UNARY ? 0 : 1, 12, 0, sub);
			prog[np++] = t_cvo(PCCX_CVO_LDS, 0, 8, 0, 0);
		}
		ck_assert_uint_lt(np, 250);
		ck_assert_uint_lt(out, 1540);
	}
	memcpy(j.insn, prog, np * 8);
	j.n_insn = np;
	check_program(&m, &j, NULL);
}
END_TEST

START_TEST(cvo_reductions_long)
{
	static struct cvo_model m;
	uint64_t prog[16];
	struct tjob j = { 0 };
	uint32_t np = 0;

	m_init(&m, 32);
	prog[np++] = t_cvo(PCCX_CVO_MAX, 100, 10, 1000, 0);
	prog[np++] = t_cvo(PCCX_CVO_EXP, 100, 100, 1000, PCCX_CVOF_SUB);
	prog[np++] = t_cvo(PCCX_CVO_SUM, 100, 11, 1000, 1);
	prog[np++] = t_cvo(PCCX_CVO_SCALE, 100, 100, 1000, PCCX_CVOF_RECIP);
	prog[np++] = t_cvo(PCCX_CVO_SUMSQ, 400, 12, 777, PCCX_CVOF_RECIP | 1);
	prog[np++] = t_cvo(PCCX_CVO_ADD, 3, 12, 0, PCCX_CVOF_SREG);
	prog[np++] = t_cvo(PCCX_CVO_RSQRT, 0, 12, 0, PCCX_CVOF_SREG);
	prog[np++] = t_cvo(PCCX_CVO_SCALE, 400, 600, 777, 1);
	prog[np++] = t_cvo(PCCX_CVO_MUL, 800, 600, 777, 0);
	memcpy(j.insn, prog, np * 8);
	j.n_insn = np;
	check_program(&m, &j, NULL);
}
END_TEST

/* ---- MEMCPY routes ------------------------------------------------------------------------- */

START_TEST(memcpy_routes)
{
	struct pccx_sim_backend *b = mkb();
	uint32_t hin = balloc(b, 4096, PCCX_BUF_DEV_READ);
	uint32_t hout = balloc(b, 4096, PCCX_BUF_DEV_WRITE);
	uint8_t *in = bmap(b, hin), *out = bmap(b, hout);
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	uint64_t rng = 5;
	unsigned i;

	for (i = 0; i < 4096; i++)
		in[i] = (uint8_t)t_rand(&rng);
	/* 50 elements = 13 words = 208 bytes; the last word moves whole */
	tj_add(&j, t_memset(0, 7, 50, 1, 1));
	tj_add(&j, t_memcpy(true, false, 1000, 0, tj_dma(&j, hin, PCCX_DMA_TO_DEVICE, 512, 208), 7,
			    true));
	tj_add(&j, t_memcpy(false, false, 3000, 1000, 0, 7, true));
	tj_add(&j, t_memcpy(false, true, 0, 3000, tj_dma(&j, hout, PCCX_DMA_FROM_DEVICE, 1024, 208),
			    7, false));
	submit_ok(b, &j, &res);
	ck_assert_int_eq(memcmp(out + 1024, in + 512, 208), 0);
	ck_assert_int_eq(memcmp(l2e(b, 1000), in + 512, 208), 0);
	ck_assert_int_eq(memcmp(l2e(b, 3000), in + 512, 208), 0);
	for (i = 0; i < 1024; i++)
		ck_assert_uint_eq(out[i], 0);
	ck_assert_uint_eq(res.stats.dm_bytes[PCCX_DM_FMAP], 208);
	ck_assert_uint_eq(res.stats.dm_bytes[PCCX_DM_RESULT], 208);
	ck_assert_uint_eq(res.stats.unit_insns[PCCX_SIM_U_L2COPY], 1);
	pccx__sim_backend_destroy(b);
}
END_TEST

/* ---- a slow host ------------------------------------------------------------------------ */

/*
 * Host -> L2, two GEMVs whose weights stream on all four ports (the second reads the first's
 * result), and L2 -> host: every kind of DataMover traffic a decode step has.
 */
static void slow_host_job(struct pccx_sim_backend *b, struct tjob *j, uint32_t *hout)
{
	static const struct pccx_wshape w1 = { 96, 64, PCCX_WFMT_Q4, true };
	static const struct pccx_wshape w2 = { 64, 96, PCCX_WFMT_Q4, true };
	uint64_t b1 = pccx__wstream_row_bytes(&w1) * w1.n, b2 = pccx__wstream_row_bytes(&w2) * w2.n;
	uint32_t hin = balloc(b, 4096, PCCX_BUF_DEV_READ);
	uint32_t hw = balloc(b, b1 + b2, PCCX_BUF_DEV_READ);
	uint8_t *in = bmap(b, hin), *w = bmap(b, hw);
	uint64_t rng = 77, i;

	*hout = balloc(b, 4096, PCCX_BUF_DEV_WRITE);
	for (i = 0; i < 64; i++)
		put_f32(in + 4 * i, t_f32(&rng, 4.0f));
	for (i = 0; i < b1 + b2; i++)
		w[i] = (uint8_t)t_rand(&rng);
	/* the FP16 scales that open each row record: small and finite */
	for (i = 0; i < w1.n; i++) {
		uint8_t *r = w + i * pccx__wstream_row_bytes(&w1);
		unsigned k;

		for (k = 0; k < w1.k / 32; k++)
			put16(r + 2 * k, 0x2c00);
	}
	for (i = 0; i < w2.n; i++) {
		uint8_t *r = w + b1 + i * pccx__wstream_row_bytes(&w2);
		unsigned k;

		for (k = 0; k < w2.k / 32; k++)
			put16(r + 2 * k, 0x2c00);
	}
	tj_add(j, t_memset(0, 0, 64, 1, 1));
	tj_add(j, t_memset(0, 2, 96, 1, 1));
	tj_add(j, t_memset(1, 1, w1.n, w1.k, w1.fmt));
	tj_add(j, t_memset(1, 3, w2.n, w2.k, w2.fmt));
	/* 64 FP32 = 16 words = 256 bytes in, and out */
	tj_add(j, t_memcpy(true, false, 100, 0, tj_dma(j, hin, PCCX_DMA_TO_DEVICE, 0, 256), 0,
			   true));
	tj_add(j, t_matmul(PCCX_OP_GEMV, 200, 100, 1, 0, TF_WSCALE));
	tj_streams(j, &w1, hw, 0);
	tj_add(j, t_matmul(PCCX_OP_GEMV, 300, 200, 3, 2, TF_WSCALE));
	tj_streams(j, &w2, hw, b1);
	tj_add(j, t_memcpy(false, true, 0, 300, tj_dma(j, *hout, PCCX_DMA_FROM_DEVICE, 0, 256), 0,
			   false));
}

/*
 * A host may stall anywhere, for as long as it likes (preempted, interrupted, a slow link):
 * the device waits, it never faults, and the bits do not change. Stall once after each
 * register access of the job in turn, each time for four times the overrun grace.
 */
START_TEST(slow_host_stalls_at_every_access)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	struct pccx_job_view v;
	uint8_t want[256];
	uint64_t n, stall = 4ull * pccx__sim_get_config(pccx__sim_backend_sim(b))->overrun_grace;
	uint32_t hout;
	pccx_diag d = { 0 };

	slow_host_job(b, &j, &hout);
	v = tj_view(&j);
	submit_ok(b, &j, &res);
	memcpy(want, bmap(b, hout), sizeof(want));
	n = res.mmio;
	ck_assert_uint_gt(n, 40);
	for (uint64_t at = 0; at < n; at++) {
		struct pccx_sim_backend_opts o = { .stall_every = n + 1, .stall_phase = at,
					    .stall_cycles = stall };

		memset(bmap(b, hout), 0, sizeof(want));
		ck_assert_msg(pccx__sim_backend_submit_wait(b, &v, &o, &res, &d) == 0,
			      "stall after access %llu of %llu: %s", (unsigned long long)at,
			      (unsigned long long)n, d.msg);
		ck_assert_msg(!memcmp(bmap(b, hout), want, sizeof(want)),
			      "stall after access %llu: other bits", (unsigned long long)at);
		ck_assert_uint_ge(res.cycles, stall);
	}
	pccx__sim_backend_destroy(b);
}
END_TEST

/* An injected device error ends the job with its cause and index; the next job runs. */
START_TEST(injected_error_then_next_job)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	struct pccx_job_view v;
	uint8_t want[256];
	uint32_t hout;
	pccx_diag d = { 0 };

	slow_host_job(b, &j, &hout);
	v = tj_view(&j);
	submit_ok(b, &j, &res);
	memcpy(want, bmap(b, hout), sizeof(want));
	for (uint32_t at = 0; at < j.n_insn; at++) {
		pccx__sim_inject_error(pccx__sim_backend_sim(b), at, PCCX_CAUSE_DMA_SLVERR);
		ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, NULL, &res, &d),
				 PCCX_ERR_DEVICE);
		ck_assert_uint_eq(res.err.kind, PCCX_EF_DEVICE);
		ck_assert_uint_eq(res.err.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_SLVERR);
		ck_assert_uint_eq(res.err.error >> PCCX_ERROR_INDEX_SHIFT, at);
		ck_assert_uint_eq(res.err.info, j.insn[at]);
		ck_assert_ptr_nonnull(strstr(d.msg, "DMA_SLVERR"));
		memset(bmap(b, hout), 0, sizeof(want));
		submit_ok(b, &j, &res);
		ck_assert_int_eq(memcmp(bmap(b, hout), want, sizeof(want)), 0);
	}
	pccx__sim_backend_destroy(b);
}
END_TEST

/* ---- hazards and overlap --------------------------------------------------------------------- */

/* Chains over overlapping ranges give the sequential result, async or not (the loop index
 * picks: 0 all async, 1 all sync, 2 alternating). */
START_TEST(hazards_sequential_result)
{
	static struct cvo_model m;
	uint64_t prog[64];
	struct tjob j = { 0 };
	uint32_t np = 0, i;

	m_init(&m, 41);
	tj_add(&j, t_memset(0, 0, 40, 1, 1));      /* 10 words */
	prog[np++] = t_cvo(PCCX_CVO_EXP, 100, 200, 200, 1);           /* B = exp(A), 50 words */
	prog[np++] = t_cvo(PCCX_CVO_MUL, 200, 250, 40, 1);            /* RAW on B */
	prog[np++] = t_cvo(PCCX_CVO_TANH, 300, 100, 200, 1);          /* WAR on A (read above) */
	prog[np++] = t_cvo(PCCX_CVO_MAX, 230, 20, 32, 1);             /* S <- */
	prog[np++] = t_cvo(PCCX_CVO_EXP, 230, 230, 32, PCCX_CVOF_SUB | 1);  /* RAW on S */
	prog[np++] = t_cvo(PCCX_CVO_SUM, 230, 21, 32, 1);             /* S <- (WAW on S) */
	prog[np++] = t_cvo(PCCX_CVO_SCALE, 230, 230, 32, PCCX_CVOF_RECIP | 1);
	for (i = 0; i < np; i++)
		tj_add(&j, prog[i]);
	/* a copy over part of what the next CVO writes, then a CVO reading the copy */
	tj_add(&j, t_memcpy(false, false, 1200, 200, 0, 0, true));
	tj_add(&j, t_cvo(PCCX_CVO_ADD, 1200, 1205, 20, 1));           /* 5 words */
	tj_add(&j, t_memcpy(false, false, 1203, 1100, 0, 0, true));  /* WAW/WAR with the add */
	for (i = 0; i < j.n_insn; i++) {
		bool async = _i == 0 || (_i == 2 && i % 2);

		if (pccx_opcode_of(j.insn[i]) == PCCX_OP_CVO ||
		    pccx_opcode_of(j.insn[i]) == PCCX_OP_MEMCPY)
			j.insn[i] = (j.insn[i] & ~1ull) | async;
	}
	check_program(&m, &j, NULL);
}
END_TEST

START_TEST(hazards_gemv_then_cvo)
{
	/* The CVO reads the GEMV's output (RAW through L2) and the max it left in S. */
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape ws = { 64, 128, PCCX_WFMT_Q4, true };
	uint64_t rb = pccx__wstream_row_bytes(&ws), rng = 3;
	uint32_t hw = balloc(b, rb * 64, PCCX_BUF_DEV_READ), i;
	float x[128], yv[64], want[64];
	float y[64];
	struct tjob j = { 0 };
	struct pccx_sim_backend_result res;

	fill_weights(bmap(b, hw), &ws, &rng);
	for (i = 0; i < 128; i++)
		x[i] = t_f32(&rng, 1.0f);
	memcpy(l2e(b, 10), x, sizeof(x));
	tj_add(&j, t_memset(0, 0, 128, 1, 1));
	tj_add(&j, t_memset(1, 1, 64, 128, PCCX_WFMT_Q4));
	tj_add(&j, t_matmul(PCCX_OP_GEMV, 500, 10, 1, 0, TF_WSCALE | TF_FINDEMAX));
	tj_streams(&j, &ws, hw, 0);
	tj_add(&j, t_cvo(PCCX_CVO_EXP, 500, 600, 64, PCCX_CVOF_SUB | 1));
	submit_ok(b, &j, &res);
	expect_row(bmap(b, hw), &ws, x, y);
	for (i = 0; i < 64; i++)
		yv[i] = pccx__out_store(y[i], false, 0.0f);
	memcpy(want, yv, sizeof(want));
	pccx__sfu_vector(PCCX_SFU_EXP, PCCX_SFU_F_SUB,
			 pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0.0f, yv, 64), yv, want, 64);
	ck_assert_int_eq(memcmp(l2e(b, 500), yv, sizeof(yv)), 0);
	ck_assert_int_eq(memcmp(l2e(b, 600), want, sizeof(want)), 0);
	pccx__sim_backend_destroy(b);
}
END_TEST

/* What a matmul row computes from x (expect_row), as stored, is at L2 word `word`. */
static void check_row(struct pccx_sim_backend *b, const uint8_t *w, const struct pccx_wshape *ws,
		      const float *x, uint32_t word)
{
	float *y = malloc(ws->n * sizeof(float));
	uint32_t i;

	ck_assert_ptr_nonnull(y);
	expect_row(w, ws, x, y);
	for (i = 0; i < ws->n; i++)
		y[i] = pccx__out_store(y[i], false, 0.0f);
	ck_assert_int_eq(memcmp(l2e(b, word), y, ws->n * sizeof(float)), 0);
	free(y);
}

/* The inputs of the stream-order tests: a GEMV's 256 at word 0, a GEMM's two rows of 64 at
 * word 100. */
static void gemv_gemm_inputs(struct pccx_sim_backend *b, uint64_t *rng, float x[256],
			     float x2[2][64])
{
	uint32_t i, r;

	for (i = 0; i < 256; i++)
		x[i] = t_f32(rng, 1.0f);
	for (r = 0; r < 2; r++)
		for (i = 0; i < 64; i++)
			x2[r][i] = t_f32(rng, 1.0f);
	memcpy(l2e(b, 0), x, 256 * sizeof(float));
	memcpy(l2e(b, 100), x2, 2 * 64 * sizeof(float));
}

/* A GEMV and a GEMM in flight together share the four ports in program order. */
START_TEST(stream_order_gemv_gemm)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape wa = { 96, 256, PCCX_WFMT_Q4, true };
	struct pccx_wshape wb = { 50, 64, PCCX_WFMT_F32, false };
	uint64_t ra = pccx__wstream_row_bytes(&wa), rbb = pccx__wstream_row_bytes(&wb), rng = 77;
	uint32_t h = balloc(b, ra * 96 + rbb * 50, PCCX_BUF_DEV_READ), r;
	uint8_t *w = bmap(b, h);
	float x[256], x2[2][64];
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };

	fill_weights(w, &wa, &rng);
	fill_weights(w + ra * 96, &wb, &rng);
	gemv_gemm_inputs(b, &rng, x, x2);
	tj_add(&j, t_memset(0, 0, 256, 1, 1));
	tj_add(&j, t_memset(1, 1, 96, 256, PCCX_WFMT_Q4));
	tj_add(&j, t_memset(0, 2, 64, 2, 1));
	tj_add(&j, t_memset(1, 3, 50, 64, PCCX_WFMT_F32));
	tj_add(&j, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, TF_WSCALE));
	tj_streams(&j, &wa, h, 0);
	tj_add(&j, t_matmul(PCCX_OP_GEMM, 2000, 100, 3, 2, 0));
	tj_streams(&j, &wb, h, ra * 96);
	submit_ok(b, &j, &res);
	check_row(b, w, &wa, x, 1000);
	for (r = 0; r < 2; r++)	/* rows of 50 outputs are 13 words apart */
		check_row(b, w + ra * 96, &wb, x2[r], 2000 + r * 13);
	/* they ran at the same time */
	ck_assert_uint_lt(pccx__sim_insn_time(pccx__sim_backend_sim(b), 5)->issue,
			  pccx__sim_insn_time(pccx__sim_backend_sim(b), 4)->done);
	pccx__sim_backend_destroy(b);
}
END_TEST

/*
 * A GEMM with no rows on port 3 completes while the GEMV issued before it still streams there
 * (its port-3 bytes come as many small reads, each waiting for its data): when that lane ends,
 * port 3 must pass the finished GEMM by, so that the next GEMV gets its bytes there (it used to
 * wait for them until the job's timeout).
 */
START_TEST(stream_order_port_passes_finished_gemm)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape wa = { 96, 256, PCCX_WFMT_Q4, true };
	struct pccx_wshape wb = { 3, 64, PCCX_WFMT_F32, false };
	struct pccx_wshape wc = { 8, 256, PCCX_WFMT_Q4, true };
	uint64_t ra = pccx__wstream_row_bytes(&wa), rbb = pccx__wstream_row_bytes(&wb);
	uint64_t offc = ra * 96 + rbb * 3, rng = 78, off3, left3;
	uint32_t h = balloc(b, offc + pccx__wstream_row_bytes(&wc) * 8, PCCX_BUF_DEV_READ), r;
	uint8_t *w = bmap(b, h);
	float x[256], x2[2][64];
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	pccx_sim *sim;

	fill_weights(w, &wa, &rng);
	fill_weights(w + ra * 96, &wb, &rng);
	fill_weights(w + offc, &wc, &rng);
	gemv_gemm_inputs(b, &rng, x, x2);
	tj_add(&j, t_memset(0, 0, 256, 1, 1));
	tj_add(&j, t_memset(1, 1, 96, 256, PCCX_WFMT_Q4));
	tj_add(&j, t_memset(0, 2, 64, 2, 1));
	tj_add(&j, t_memset(1, 3, 3, 64, PCCX_WFMT_F32));
	tj_add(&j, t_memset(1, 4, 8, 256, PCCX_WFMT_Q4));
	tj_add(&j, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, TF_WSCALE));
	tj_streams(&j, &wa, h, 0);
	/* port 3's bytes of the first GEMV as reads of 64 bytes */
	j.n_stream--;
	off3 = j.stream[j.n_stream].offset;
	left3 = j.stream[j.n_stream].length;
	for (; left3; off3 += 64, left3 -= left3 < 64 ? left3 : 64) {
		j.stream[j.n_stream].handle = h;
		j.stream[j.n_stream].port = 3;
		j.stream[j.n_stream].offset = off3;
		j.stream[j.n_stream].length = left3 < 64 ? left3 : 64;
		j.n_stream++;
	}
	tj_add(&j, t_matmul(PCCX_OP_GEMM, 2000, 100, 3, 2, 0));
	tj_streams(&j, &wb, h, ra * 96);
	ck_assert_uint_eq(pccx__wstream_port_bytes(&wb, 3), 0);
	tj_add(&j, t_matmul(PCCX_OP_GEMV, 3000, 0, 4, 0, TF_WSCALE));
	tj_streams(&j, &wc, h, offc);
	submit_ok(b, &j, &res);
	sim = pccx__sim_backend_sim(b);
	/* the GEMM was done before the first GEMV's last byte */
	ck_assert_uint_lt(pccx__sim_insn_time(sim, 6)->done, pccx__sim_insn_time(sim, 5)->done);
	check_row(b, w, &wa, x, 1000);
	for (r = 0; r < 2; r++)
		check_row(b, w + ra * 96, &wb, x2[r], 2000 + r);
	check_row(b, w + offc, &wc, x, 3000);
	pccx__sim_backend_destroy(b);
}
END_TEST

/* Cycles of the job; *last = issue-to-completion cycles of its last instruction. */
static uint64_t run_cycles_cfg(const struct pccx_sim_config *cfg, const struct tjob *j,
			       uint32_t hw_size, uint64_t *last)
{
	struct pccx_sim_backend *b = NULL;
	pccx_diag d = { 0 };
	struct pccx_sim_backend_result res;
	struct tjob jj = *j;
	uint32_t h, i;

	ck_assert_msg(pccx__sim_backend_create(cfg, &b, &d) == 0, "%s", d.msg);
	h = balloc(b, hw_size, PCCX_BUF_DEV_READ);
	for (i = 0; i < jj.n_stream; i++)
		jj.stream[i].handle = h;
	submit_ok(b, &jj, &res);
	if (last) {
		const struct pccx_sim_insn_time *t = pccx__sim_insn_time(pccx__sim_backend_sim(b),
									 jj.n_insn - 1);

		ck_assert_ptr_nonnull(t);
		*last = t->done - t->issue;
	}
	pccx__sim_backend_destroy(b);
	return res.cycles;
}

static uint64_t run_cycles(const struct tjob *j, uint32_t hw_size, uint64_t *last)
{
	return run_cycles_cfg(NULL, j, hw_size, last);
}

START_TEST(overlap_independent_units)
{
	struct pccx_wshape ws = { 2048, 512, PCCX_WFMT_Q4, true };
	uint64_t rb = pccx__wstream_row_bytes(&ws), tg, tc, tb;
	struct tjob g = { 0 }, c = { 0 }, both = { 0 };

	tj_add(&g, t_memset(0, 0, 512, 1, 1));
	tj_add(&g, t_memset(1, 1, 2048, 512, PCCX_WFMT_Q4));
	tj_add(&g, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, TF_WSCALE));
	tj_streams(&g, &ws, 0, 0);
	tj_add(&c, t_cvo(PCCX_CVO_GELU, 20000, 30000, 40000, 1));
	both = g;
	both.n_insn = 2;
	tj_add(&both, t_cvo(PCCX_CVO_GELU, 20000, 30000, 40000, 1));
	tj_add(&both, g.insn[2]);
	tg = run_cycles(&g, rb * 2048, NULL);
	tc = run_cycles(&c, 16, NULL);
	tb = run_cycles(&both, rb * 2048, NULL);
	ck_assert_msg(tb < tg + tc, "together %llu, alone %llu + %llu", (unsigned long long)tb,
		      (unsigned long long)tg, (unsigned long long)tc);
	ck_assert_msg(tb < tc + tg / 4, "together %llu, alone %llu + %llu", (unsigned long long)tb,
		      (unsigned long long)tg, (unsigned long long)tc);
}
END_TEST

/*
 * A sync CVO fences the front end; the next GEMV's weights stream in meanwhile. With a DDR of
 * 8 GB/s the DataMovers deliver half of what the ports can take, so a GEMV that starts on
 * full FIFOs finishes much sooner than one that waits for its weights.
 */
START_TEST(overlap_weight_prefetch)
{
	struct pccx_wshape ws = { 256, 1024, PCCX_WFMT_Q4, true };
	uint64_t rb = pccx__wstream_row_bytes(&ws), tg, tc, tb, sg, sb;
	struct tjob g = { 0 }, c = { 0 }, both = { 0 };
	struct pccx_sim_config cfg;

	pccx__sim_config_default(&cfg);
	cfg.ddr_mbps = 8000;

	tj_add(&g, t_memset(0, 0, 1024, 1, 1));
	tj_add(&g, t_memset(1, 1, 256, 1024, PCCX_WFMT_Q4));
	tj_add(&g, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, TF_WSCALE));
	tj_streams(&g, &ws, 0, 0);
	tj_add(&c, t_cvo(PCCX_CVO_EXP, 20000, 30000, 30000, 0));
	both = g;
	both.n_insn = 2;
	tj_add(&both, t_cvo(PCCX_CVO_EXP, 20000, 30000, 30000, 0));
	tj_add(&both, g.insn[2]);
	tg = run_cycles_cfg(&cfg, &g, rb * 256, &sg);
	tc = run_cycles_cfg(&cfg, &c, 16, NULL);
	tb = run_cycles_cfg(&cfg, &both, rb * 256, &sb);
	/* 144 KiB of weights fit the four FIFOs: they arrive during the CVO */
	ck_assert_msg(tb < tg + tc, "with prefetch %llu, alone %llu + %llu",
		      (unsigned long long)tb, (unsigned long long)tg, (unsigned long long)tc);
	ck_assert_msg(sb * 10 < sg * 7, "GEMV %llu cycles after a CVO, %llu alone",
		      (unsigned long long)sb, (unsigned long long)sg);
	fprintf(stderr, "prefetch: job %llu vs %llu + %llu; gemv %llu vs %llu\n",
		(unsigned long long)tb, (unsigned long long)tg, (unsigned long long)tc,
		(unsigned long long)sb, (unsigned long long)sg);
}
END_TEST

/*
 * pccx,sfu-lanes: the element-wise forms take ceil(len / lanes) cycles, a reduction one cycle
 * an element whatever the lanes (its FP32 sum is sequential).
 */
START_TEST(sfu_lanes)
{
	static const uint32_t lanes[] = { 1, 2, 4 };
	uint64_t ew[3], red[3];
	unsigned i;

	for (i = 0; i < 3; i++) {
		struct pccx_sim_config cfg;
		struct tjob e = { 0 }, r = { 0 };

		pccx__sim_config_default(&cfg);
		cfg.sfu_lanes = lanes[i];
		tj_add(&e, t_cvo(PCCX_CVO_EXP, 20000, 30000, 30001, 0));
		tj_add(&r, t_cvo(PCCX_CVO_SUM, 20000, 30000, 30001, 0));
		run_cycles_cfg(&cfg, &e, 16, &ew[i]);
		run_cycles_cfg(&cfg, &r, 16, &red[i]);
	}
	ck_assert_uint_eq(ew[0] - ew[1], 30001 - 15001);
	ck_assert_uint_eq(ew[0] - ew[2], 30001 - 7501);
	ck_assert_uint_eq(red[0], red[1]);
	ck_assert_uint_eq(red[0], red[2]);
}
END_TEST

/* ---- error paths, each followed by a job that succeeds ---------------------------------- */

static void good_job(struct pccx_sim_backend *b)
{
	struct tjob j = { 0 };
	struct pccx_sim_backend_result res;

	l2e(b, 20)[0] = 0x40000000u;     /* 2.0 */
	tj_add(&j, t_cvo(PCCX_CVO_LDS, 20, 21, 0, 0));
	tj_add(&j, t_cvo(PCCX_CVO_SQRT, 0, 22, 0, PCCX_CVOF_SREG));
	submit_ok(b, &j, &res);
	ck_assert_uint_eq(pccx__sim_s_bits(pccx__sim_backend_sim(b)),
			  pccx_f32_bits(pccx__f32_sqrt(2.0f)));
	ck_assert_uint_eq(res.stats.retired, 2);
}

START_TEST(err_illegal_word)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_sim_backend_opts o = { .no_validate = true, .timeout_cycles = 100000 };
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	struct pccx_job_view v;
	pccx_diag d = { 0 };

	tj_add(&j, t_memset(0, 0, 8, 1, 1));
	tj_add(&j, t_cvo(PCCX_CVO_EXP, 0, 10, 8, 0));
	/* the CVO word with opcode 0xF instead of 0x4 */
	tj_add(&j, t_cvo(PCCX_CVO_EXP, 0, 10, 8, 0) | (0xbull << 60));
	tj_add(&j, t_memset(0, 1, 8, 1, 1));
	v = tj_view(&j);
	ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, &o, &res, &d), PCCX_ERR_DEVICE);
	ck_assert_uint_eq(res.err.kind, PCCX_EF_DEVICE);
	ck_assert_uint_eq(res.err.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_ILLEGAL_INSN);
	ck_assert_uint_eq((res.err.error & PCCX_ERROR_ISA_MASK) >> PCCX_ERROR_ISA_SHIFT,
			  PCCX_ISA_E_OPCODE);
	ck_assert_uint_eq(res.err.error >> PCCX_ERROR_INDEX_SHIFT, 2);
	ck_assert_ptr_nonnull(strstr(d.msg, "ILLEGAL_INSN at instruction 2"));
	good_job(b);
	pccx__sim_backend_destroy(b);
}
END_TEST

/*
 * An extension a device lacks (its pccx,* property 0 in the configuration `off` changes) and
 * the job [ok, word]: the backend's validator refuses the job (naming the ISA code), and the
 * device itself refuses the word at instruction 1 with ILLEGAL_INSN and that code.
 */
static void refused_without(void (*off)(struct pccx_sim_config *), uint64_t feature, uint64_t ok,
			    uint64_t word, int isa_err, const char *name)
{
	struct pccx_sim_backend_opts o = { .no_validate = true, .timeout_cycles = 100000 };
	struct pccx_sim_backend_result res;
	struct pccx_sim_backend *b = NULL;
	struct pccx_sim_config cfg;
	struct tjob j = { 0 };
	struct pccx_job_view v;
	pccx_diag d = { 0 };
	pccx_sim *s = mksim();

	ck_assert(t_rd64(s, PCCX_REG_FEATURES) & feature);
	pccx__sim_destroy(s);
	pccx__sim_config_default(&cfg);
	off(&cfg);
	ck_assert_msg(pccx__sim_backend_create(&cfg, &b, &d) == 0, "%s", d.msg);
	ck_assert(!(t_rd64(pccx__sim_backend_sim(b), PCCX_REG_FEATURES) & feature));
	tj_add(&j, ok);
	tj_add(&j, word);
	v = tj_view(&j);
	/* the backend validates against the device's FEATURES: refused before it runs */
	o.no_validate = false;
	ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, &o, &res, &d), PCCX_ERR_VALIDATE);
	ck_assert_ptr_nonnull(strstr(d.msg, name));
	/* and the device itself refuses the word */
	o.no_validate = true;
	ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, &o, &res, &d), PCCX_ERR_DEVICE);
	ck_assert_uint_eq(res.err.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_ILLEGAL_INSN);
	ck_assert_uint_eq((res.err.error & PCCX_ERROR_ISA_MASK) >> PCCX_ERROR_ISA_SHIFT, isa_err);
	ck_assert_uint_eq(res.err.error >> PCCX_ERROR_INDEX_SHIFT, 1);
	good_job(b);
	pccx__sim_backend_destroy(b);
}

static void smul_off(struct pccx_sim_config *c)
{
	c->smul = 0;
}

static void racc_off(struct pccx_sim_config *c)
{
	c->racc = 0;
}

/* The CVO smul is an extension: a device without FEATURES.SMUL (pccx,smul 0) refuses it. */
START_TEST(err_smul_without_the_feature)
{
	refused_without(smul_off, PCCX_FEAT_SMUL, t_cvo(PCCX_CVO_MUL, 0, 10, 8, 0),
			t_cvo(PCCX_CVO_SMUL, 0, 10, 8, 0), PCCX_ISA_E_CVO_FUNC, "CVO_FUNC");
}
END_TEST

/*
 * So is a sum from S (sum or sumsq with accm): a device without FEATURES.RACC (pccx,racc 0)
 * refuses it (cvo_every_function_and_flag runs it on a device with the bit).
 */
START_TEST(err_racc_without_the_feature)
{
	refused_without(racc_off, PCCX_FEAT_RACC, t_cvo(PCCX_CVO_SUM, 0, 10, 8, 0),
			t_cvo(PCCX_CVO_SUM, 2, 10, 8, PCCX_CVOF_ACCM), PCCX_ISA_E_FLAGS, "FLAGS");
	refused_without(racc_off, PCCX_FEAT_RACC, t_cvo(PCCX_CVO_SUMSQ, 0, 10, 8, 0),
			t_cvo(PCCX_CVO_SUMSQ, 2, 10, 8, PCCX_CVOF_ACCM), PCCX_ISA_E_FLAGS, "FLAGS");
}
END_TEST

/* After an error, clearing ERROR (without a reset) lets the next job run. */
START_TEST(err_clear_then_next_job)
{
	pccx_sim *s = mksim();

	t_wr64(s, PCCX_REG_INSTR, t_matmul(PCCX_OP_GEMV, 0, 100, 1, 0, 0));   /* shapes unset */
	pccx__sim_advance(s, 50);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR) & PCCX_ERROR_CAUSE_MASK,
			  PCCX_CAUSE_BAD_OPERANDS);
	t_wr64(s, PCCX_REG_ERROR, PCCX_ERROR_VALID);
	t_wr64(s, PCCX_REG_RETIRED, 0);
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 0, 8, 1, 1));
	t_wr64(s, PCCX_REG_INSTR, t_memcpy(false, false, 30, 20, 0, 0, false));
	ck_assert(pccx__sim_run_until_idle(s, 1000));
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_RETIRED), 2);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR), 0);
	pccx__sim_destroy(s);
}
END_TEST

static void gemv_job(struct tjob *j, struct pccx_wshape *ws, uint32_t hw)
{
	tj_add(j, t_memset(0, 0, ws->k, 1, 1));
	tj_add(j, t_memset(1, 1, ws->n, ws->k, ws->fmt));
	tj_add(j, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, ws->w_scale ? TF_WSCALE : 0));
	tj_streams(j, ws, hw, 0);
}

START_TEST(err_stream_overrun)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape ws = { 64, 256, PCCX_WFMT_Q4, false };
	struct pccx_sim_backend_opts o = { .no_validate = true };
	uint32_t hw = balloc(b, 65536, PCCX_BUF_DEV_READ);
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	struct pccx_job_view v;
	pccx_diag d = { 0 };

	gemv_job(&j, &ws, hw);
	j.stream[1].length += 64;     /* port 1 gets 4 beats nobody consumes */
	v = tj_view(&j);
	ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, &o, &res, &d), PCCX_ERR_DEVICE);
	ck_assert_uint_eq(res.err.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_STREAM_OVERRUN);
	ck_assert_uint_eq(res.err.info, (1ull << 56) | 64);
	/* the validator refuses the same job */
	ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, NULL, &res, &d), PCCX_ERR_VALIDATE);
	ck_assert_ptr_nonnull(strstr(d.msg, "STREAM_MISMATCH"));
	good_job(b);
	pccx__sim_backend_destroy(b);
}
END_TEST

START_TEST(err_stream_short_timeout)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape ws = { 64, 256, PCCX_WFMT_Q4, false };
	struct pccx_sim_backend_opts o = { .no_validate = true, .timeout_cycles = 200000 };
	uint32_t hw = balloc(b, 65536, PCCX_BUF_DEV_READ);
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	struct pccx_job_view v;
	pccx_diag d = { 0 };

	gemv_job(&j, &ws, hw);
	j.stream[2].length -= 16;     /* port 2 is one beat short */
	v = tj_view(&j);
	ck_assert_int_eq(pccx__sim_backend_submit_wait(b, &v, &o, &res, &d), PCCX_ERR_TIMEOUT);
	ck_assert(res.timed_out);
	ck_assert_uint_ge(res.cycles, 200000);
	good_job(b);
	pccx__sim_backend_destroy(b);
}
END_TEST

/* A translation that points outside the buffers: the shadow IOMMU stops it. */
static uint64_t bad_shift;

START_TEST(err_dma_window)
{
	struct pccx_sim_backend *b = mkb();
	uint32_t h = balloc(b, 4096, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE);
	struct pccx_sim_backend_result res;
	struct tjob j = { 0 };
	pccx_sim *s = pccx__sim_backend_sim(b);
	uint64_t dev = pccx__sim_backend_buf_devaddr(b, h);

	/* the backend's guard page: a command at the buffer's end faults */
	t_wr64(s, PCCX_REG_INSTR, t_memset(0, 0, 4, 1, 1));     /* one word */
	dm_push(s, PCCX_DM_FMAP, dev + 4096, 16, 4, true);
	t_wr64(s, PCCX_REG_INSTR, t_memcpy(true, false, 0, 0, 0, 0, false));
	pccx__sim_advance(s, 200);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR) & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_WINDOW);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_ERROR_INFO), dev + 4096);
	pccx__sim_backend_reset(b);
	(void)bad_shift;
	(void)j;
	(void)res;
	good_job(b);
	pccx__sim_backend_destroy(b);
}
END_TEST

/* Random words, legal or not, never crash the device: each ends in completion or an error. */
START_TEST(random_words_never_crash)
{
	pccx_sim *s = mksim();
	struct pccx_sim_stats st;
	uint64_t rng = 99;
	unsigned i;

	for (i = 0; i < 3000; i++) {
		uint64_t w = t_rand(&rng);

		/* bias towards defined opcodes with small shapes so some get far */
		if (i % 2)
			w = (w & 0x0fffffffffffffffull) | ((uint64_t)(i % 5) << 60);
		if (i % 3 == 0)
			w = t_memset((unsigned)(w >> 8) & 1, (unsigned)(w >> 12) & 63,
				     (unsigned)(w >> 20) & 255, 1 + ((unsigned)(w >> 30) & 3),
				     (unsigned)(w >> 40) & 3);
		t_wr64(s, PCCX_REG_INSTR, w);
		pccx__sim_advance(s, 300);
		if (t_rd64(s, PCCX_REG_STATUS) & PCCX_STATUS_HALTED) {
			t_wr64(s, PCCX_REG_ERROR, PCCX_ERROR_VALID);
		} else if (!(t_rd64(s, PCCX_REG_STATUS) & PCCX_STATUS_IDLE)) {
			/* waiting for weights or data nobody sends: reset */
			t_wr64(s, PCCX_REG_RESET, 1);
			pccx__sim_advance(s, 114688 / 8);
		}
	}
	pccx__sim_get_stats(s, &st);
	ck_assert_uint_gt(st.errors, 100);
	ck_assert_uint_gt(st.retired, 100);
	ck_assert_uint_eq(st.window_faults, 0);
	pccx__sim_destroy(s);
}
END_TEST

/* Random register traffic (any offset, width and value) never crashes the model. */
START_TEST(random_mmio_never_crashes)
{
	pccx_sim *s = mksim();
	uint8_t *host = calloc(1, 65536);
	uint64_t rng = 1234, v64;
	uint32_t v32;
	unsigned i;

	ck_assert_int_eq(pccx__sim_dma_window_add(s, 0x10000, 65536, host,
						  PCCX_SIM_WIN_READ | PCCX_SIM_WIN_WRITE), 0);
	for (i = 0; i < 20000; i++) {
		uint64_t r = t_rand(&rng), val = t_rand(&rng);
		uint32_t off = (uint32_t)(r % (PCCX_MMIO_SIZE + 64)) & ~3u;

		/* keep DataMover addresses near the window half of the time */
		if ((off & 0xfff) == PCCX_DM_CMD_HI && (r & 0x100))
			val = 0x10000 + (val & 0x1fff0);
		if ((off & 0xfff) == PCCX_DM_CMD_LO && (r & 0x200))
			val = (val & 0xff0) | PCCX_DM_CMD_TYPE_INCR;
		switch ((r >> 32) & 3) {
		case 0:
			(void)!pccx__sim_mmio_read32(s, off, &v32);
			break;
		case 1:
			(void)!pccx__sim_mmio_write32(s, off, (uint32_t)val);
			break;
		case 2:
			(void)!pccx__sim_mmio_read64(s, off, &v64);
			break;
		default:
			(void)!pccx__sim_mmio_write64(s, off, val);
			break;
		}
		if (i % 500 == 0)
			pccx__sim_advance(s, 20000);
	}
	pccx__sim_destroy(s);
	free(host);
}
END_TEST

/* ---- the simulator against the reference executor -------------------------------------- */

struct xcheck {
	struct pccx_ref_exec *ref;
	const struct pccx_npu_ops *ops;
	struct tjob j;
	uint32_t hw;
	unsigned next_entry;
};

static void x_matmul(struct xcheck *x, uint32_t dst, uint32_t src, uint32_t m, uint32_t n,
		     uint32_t k, unsigned fmt, bool accm, bool findemax, uint64_t woff)
{
	struct pccx_npu_matmul mm = { dst, src, n, k, m, fmt, accm, findemax, false,
				      { PCCX_NPU_BUF_WEIGHTS, woff, -1, 0 } };
	bool sc = fmt == PCCX_WFMT_Q4 || fmt == PCCX_WFMT_Q4C;
	struct pccx_wshape ws = { n, k, fmt, sc };
	unsigned e = x->next_entry++ % 64;

	ck_assert_msg(x->ops->matmul(x->ref, &mm) == 0, "%s", pccx__ref_exec_error(x->ref));
	tj_add(&x->j, t_memset(0, e, k, m, 1));
	tj_add(&x->j, t_memset(1, e, n, k, fmt));
	tj_add(&x->j, t_matmul(m == 1 ? PCCX_OP_GEMV : PCCX_OP_GEMM, dst, src, e, e,
			       (sc ? TF_WSCALE : 0) | (accm ? TF_ACCM : 0) |
			       (findemax ? TF_FINDEMAX : 0)));
	tj_streams(&x->j, &ws, x->hw, woff);
}

/* The stream descriptors of a GEMV on ws at woff, each port's share in three: [0, a),
 * [a, all - z) and [all - z, all) (a window each, cut wherever a and z fall). */
static void x_streams_cut(struct xcheck *x, const struct pccx_wshape *ws, uint64_t woff,
			  uint64_t a, uint64_t z)
{
	unsigned p, c;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		uint64_t lo = woff + pccx__wstream_port_offset(ws, p);
		uint64_t all = pccx__wstream_port_bytes(ws, p);
		uint64_t cut[4] = { 0, a, all - z, all };

		for (c = 0; c < 3; c++) {
			x->j.stream[x->j.n_stream].handle = x->hw;
			x->j.stream[x->j.n_stream].port = p;
			x->j.stream[x->j.n_stream].offset = lo + cut[c];
			x->j.stream[x->j.n_stream].length = cut[c + 1] - cut[c];
			x->j.n_stream++;
		}
	}
}

static void x_cvo(struct xcheck *x, unsigned func, uint32_t src, uint32_t dst, uint32_t len,
		  uint32_t flags)
{
	struct pccx_npu_cvo op = { func, flags, src, dst, len };

	ck_assert_msg(x->ops->cvo(x->ref, &op) == 0, "%s", pccx__ref_exec_error(x->ref));
	tj_add(&x->j, t_cvo(func, src, dst, len, flags | 1));
}

static void x_copy(struct xcheck *x, uint32_t dst, uint32_t src, uint32_t words)
{
	unsigned e = x->next_entry++ % 64;

	ck_assert_msg(x->ops->copy(x->ref, dst, src, words) == 0, "%s",
		      pccx__ref_exec_error(x->ref));
	tj_add(&x->j, t_memset(0, e, PCCX_L2_ELEMS_PER_WORD, words, 1));
	tj_add(&x->j, t_memcpy(false, false, dst, src, 0, e, true));
}

/*
 * x over backend b: the reference executor and a weight buffer of wsize bytes bound in both;
 * the reference's L2 random (the caller copies it to the simulator once it has set it up).
 * Returns the weight buffer.
 */
static uint8_t *x_open(struct xcheck *x, struct pccx_sim_backend *b, uint64_t wsize,
		       uint64_t *rng)
{
	pccx_diag d = { 0 };
	float *rl2;
	uint8_t *w;
	uint64_t i;

	memset(x, 0, sizeof(*x));
	ck_assert_msg(pccx__ref_exec_create(&x->ref, 1, PCCX_KERN_AUTO, &d) == 0, "%s", d.msg);
	x->ops = pccx__ref_exec_ops();
	x->hw = balloc(b, wsize, PCCX_BUF_DEV_READ);
	w = bmap(b, x->hw);
	ck_assert_int_eq(x->ops->bind(x->ref, PCCX_NPU_BUF_WEIGHTS, w, wsize, false), 0);
	rl2 = pccx__ref_exec_l2(x->ref);
	for (i = 0; i < (uint64_t)PCCX_L2_WORDS * PCCX_L2_ELEMS_PER_WORD; i++)
		rl2[i] = t_f32(rng, 2.0f);
	return w;
}

/* After the job: the simulator's L2 and S are the reference's. */
static void x_same_state(struct xcheck *x, struct pccx_sim_backend *b)
{
	const float *rl2 = pccx__ref_exec_l2(x->ref);
	uint64_t i;

	for (i = 0; i < (uint64_t)PCCX_L2_WORDS * PCCX_L2_ELEMS_PER_WORD; i++)
		ck_assert_msg(l2e(b, 0)[i] == pccx_f32_bits(rl2[i]),
			      "word %llu element %llu: sim 0x%08x ref 0x%08x",
			      (unsigned long long)(i / PCCX_L2_ELEMS_PER_WORD),
			      (unsigned long long)(i % PCCX_L2_ELEMS_PER_WORD), l2e(b, 0)[i],
			      pccx_f32_bits(rl2[i]));
	ck_assert_uint_eq(pccx__sim_s_bits(pccx__sim_backend_sim(b)),
			  pccx_f32_bits(pccx__ref_exec_sreg(x->ref)));
}

/* The same instructions through the reference executor and through the simulator (command
 * engine, DataMovers, interlocks, async overlap) leave the same L2 and the same S. */
START_TEST(sim_matches_reference)
{
	static struct xcheck x;
	struct pccx_sim_backend *b = mkb();
	struct pccx_sim_backend_result res;
	uint64_t rng = 2024, wsize = 4u << 20;
	struct pccx_wshape q = { 200, 512, PCCX_WFMT_Q4, true };
	struct pccx_wshape bf = { 48, 96, PCCX_WFMT_F32, false };
	struct pccx_wshape bt = { 40, 72, PCCX_WFMT_F32T, false };
	uint64_t oq = 0, ob = 1u << 20, ot = 2u << 20;
	uint8_t *w = x_open(&x, b, wsize, &rng);
	float *rl2 = pccx__ref_exec_l2(x.ref);

	fill_weights(w + oq, &q, &rng);
	fill_weights(w + ob, &bf, &rng);
	fill_weights(w + ot, &bt, &rng);
	/* the same L2 in both */
	rl2[0] = 0.75f;           /* element 0 of word 0 */
	memcpy(l2e(b, 0), rl2, (size_t)PCCX_L2_WORDS * 16);

	x_cvo(&x, PCCX_CVO_LDS, 0, 50000, 0, 0);                              /* S = 0.75 */
	x_matmul(&x, 60000, 1000, 1, 200, 512, PCCX_WFMT_Q4, false, true, oq);
	x_cvo(&x, PCCX_CVO_EXP, 60000, 60000, 200, PCCX_CVOF_SUB);             /* softmax num */
	x_cvo(&x, PCCX_CVO_SUM, 60000, 50001, 200, PCCX_CVOF_RECIP);
	x_cvo(&x, PCCX_CVO_SCALE, 60000, 60100, 200, PCCX_CVOF_RECIP);
	x_matmul(&x, 61000, 2000, 3, 200, 512, PCCX_WFMT_Q4, true, false, oq);  /* GEMM accm */
	x_matmul(&x, 62000, 3000, 1, 48, 96, PCCX_WFMT_F32, false, true, ob);
	x_matmul(&x, 62100, 3100, 2, 40, 72, PCCX_WFMT_F32T, true, false, ot);
	x_cvo(&x, PCCX_CVO_SUMSQ, 62100, 50002, 40, PCCX_CVOF_RECIP);
	x_cvo(&x, PCCX_CVO_ADD, 1, 50003, 0, PCCX_CVOF_SREG);
	x_cvo(&x, PCCX_CVO_RSQRT, 0, 50004, 0, PCCX_CVOF_SREG);
	x_cvo(&x, PCCX_CVO_SCALE, 62100, 62200, 40, PCCX_CVOF_RELU);
	x_cvo(&x, PCCX_CVO_GELU, 61000, 61000, 600, PCCX_CVOF_RELU | PCCX_CVOF_SUB);
	x_cvo(&x, PCCX_CVO_MUL, 61100, 61000, 77, 0);
	x_cvo(&x, PCCX_CVO_TANH, 61000, 61200, 600, PCCX_CVOF_ACCM);
	x_cvo(&x, PCCX_CVO_MAX, 61200, 50005, 600, PCCX_CVOF_RELU);
	x_cvo(&x, PCCX_CVO_MAX, 2, 50006, 0, PCCX_CVOF_SREG);
	x_cvo(&x, PCCX_CVO_COS, 0, 50007, 0, PCCX_CVOF_SREG | PCCX_CVOF_RELU);
	x_cvo(&x, PCCX_CVO_LDS, 61200, 50008, 13, 0);
	x_cvo(&x, PCCX_CVO_SIN, 4000, 4100, 333, PCCX_CVOF_SUB);
	x_copy(&x, 70000, 60000, 100);
	x_cvo(&x, PCCX_CVO_RECIP, 70000, 70000, 400, 0);                      /* the 100 words */
	x_matmul(&x, 71000, 70000, 1, 200, 512, PCCX_WFMT_Q4, false, false, oq);
	x_cvo(&x, PCCX_CVO_SQRT, 71000, 71100, 200, PCCX_CVOF_RELU | PCCX_CVOF_ACCM);
	submit_ok(b, &x.j, &res);
	x_same_state(&x, b);
	ck_assert_uint_eq(res.stats.window_faults, 0);
	pccx__ref_exec_free(x.ref);
	pccx__sim_backend_destroy(b);
}
END_TEST

/*
 * GEMV rowmask on the simulator: a dense GEMV, a rowmask GEMV whose mask keeps runs, single
 * rows, NaN/Inf/denormal rows and nothing of port 1's quarter, then a dense GEMV on the same
 * ports; L2 and S as the reference gives them, only the kept rows read from memory, the same
 * cycles edge by edge as in bulk, and fewer cycles than the dense GEMV of the same shapes.
 * A device configured without the feature refuses the word.
 */
struct rm_run {
	uint64_t cycles, dm_bytes, ddr_read;   /* dm_bytes: the four weight channels' */
	int state;
	uint64_t error;
};

/* Submit x's job and note how it ended; it may end in a device error. */
static void x_submit(struct xcheck *x, struct pccx_sim_backend *b,
		     const struct pccx_sim_backend_opts *opts, struct pccx_sim_backend_result *res,
		     struct rm_run *out)
{
	struct pccx_job_view v = tj_view(&x->j);
	pccx_diag d = { 0 };
	int rc;

	memset(res, 0, sizeof(*res));
	rc = pccx__sim_backend_submit_wait(b, &v, opts, res, &d);
	ck_assert_msg(rc == 0 || res->state == PCCX_ENGINE_ERROR, "submit: %s", d.msg);
	out->state = res->state;
	out->error = res->err.error;
	out->cycles = res->cycles;
	out->dm_bytes = res->stats.dm_bytes[0] + res->stats.dm_bytes[1] + res->stats.dm_bytes[2] +
			res->stats.dm_bytes[3];
	out->ddr_read = res->stats.ddr_read_bytes;
}

static void rm_job(const struct pccx_sim_config *cfg, bool every_edge, bool rowmask,
		   bool check_ref, const struct pccx_sim_backend_opts *opts, struct rm_run *out)
{
	static struct xcheck x;
	struct pccx_sim_backend *b = NULL;
	struct pccx_sim_backend_result res;
	struct pccx_wshape q = { 1000, 512, PCCX_WFMT_Q4, true };
	uint64_t rng = 77, wsize = 2u << 20, i, rb = pccx__wstream_row_bytes(&q);
	struct pccx_npu_matmul mm = { .dst = 60000, .src = 1000, .n = 1000, .k = 512, .m = 1,
				      .fmt = PCCX_WFMT_Q4, .rowmask = rowmask,
				      .w = { PCCX_NPU_BUF_WEIGHTS, 0, -1, 0 } };
	pccx_diag d = { 0 };
	float *rl2;
	uint32_t kept = 0;

	ck_assert_msg(pccx__sim_backend_create(cfg, &b, &d) == 0, "%s", d.msg);
	pccx__sim_set_every_edge(pccx__sim_backend_sim(b), every_edge);
	fill_weights(x_open(&x, b, wsize, &rng), &q, &rng);
	rl2 = pccx__ref_exec_l2(x.ref);
	/* the mask at 60000: zero but for runs, single rows and special values; port 1
	 * (rows 250..499) keeps nothing */
	for (i = 0; i < 1000; i++) {
		float *e = &rl2[60000 * 4 + i];

		*e = (i & 1) ? -0.0f : 0.0f;
		if ((i >= 10 && i < 40) || i == 100 || i == 102 || (i >= 600 && i < 700 && i % 7 == 0)
		    || i == 999 || i == 500 || i == 249)
			*e = t_f32(&rng, 1.0f) + 2.5f;
	}
	rl2[60000 * 4 + 120] = NAN;
	rl2[60000 * 4 + 800] = -INFINITY;
	rl2[60000 * 4 + 801] = 1e-42f;
	for (i = 0; i < 1000; i++)
		kept += (pccx_f32_bits(rl2[60000 * 4 + i]) & 0x7fffffffu) != 0;
	memcpy(l2e(b, 0), rl2, (size_t)PCCX_L2_WORDS * 16);

	x_matmul(&x, 70000, 2000, 1, 1000, 512, PCCX_WFMT_Q4, false, true, 0);
	ck_assert_msg(x.ops->matmul(x.ref, &mm) == 0, "%s", pccx__ref_exec_error(x.ref));
	tj_add(&x.j, t_memset(0, 40, 512, 1, 1));
	tj_add(&x.j, t_memset(1, 40, 1000, 512, PCCX_WFMT_Q4));
	tj_add(&x.j, t_matmul(PCCX_OP_GEMV, 60000, 1000, 40, 40, TF_WSCALE) |
			     PCCX_PUT(A, rowmask, rowmask));
	if (opts && opts->stall_every) {
		/* each port's range in three descriptors (so three windows), cut inside rows */
		x_streams_cut(&x, &q, 0, 16 * 400, 250 * rb - 16 * 1805);
	} else {
		tj_streams(&x.j, &q, x.hw, 0);
	}
	x_matmul(&x, 71000, 3000, 1, 1000, 512, PCCX_WFMT_Q4, false, false, 0);
	x_submit(&x, b, opts, &res, out);
	if (check_ref && res.state == PCCX_ENGINE_DONE) {
		x_same_state(&x, b);
		ck_assert_uint_eq(out->dm_bytes, 2 * 1000 * rb + (rowmask ? kept : 1000) * rb);
		ck_assert_uint_eq(kept, 30 + 2 + 14 + 3 + 3);
		ck_assert_uint_eq(res.stats.dm_bytes[1], (rowmask ? 2 : 3) * 250 * rb);
	}
	pccx__ref_exec_free(x.ref);
	pccx__sim_backend_destroy(b);
}

/* The windowed GEMVs' runs: a host that stalls between its register accesses, and jobs the
 * validator does not see first (the device's own refusal). */
static const struct pccx_sim_backend_opts slow = { .stall_every = 7, .stall_phase = 3,
						   .stall_cycles = 5000 };
static const struct pccx_sim_backend_opts raw = { .no_validate = true };

START_TEST(sim_rowmask)
{
	struct pccx_sim_config cfg;
	struct rm_run bulk, edge, dense, off;

	pccx__sim_config_default(&cfg);
	rm_job(&cfg, false, true, true, NULL, &bulk);
	ck_assert_int_eq(bulk.state, PCCX_ENGINE_DONE);
	rm_job(&cfg, true, true, true, NULL, &edge);
	ck_assert_uint_eq(edge.cycles, bulk.cycles);
	ck_assert_uint_eq(edge.ddr_read, bulk.ddr_read);
	/* a host that stalls between its register accesses, and three windows per port cut
	 * inside rows: later, the same results and bytes */
	rm_job(&cfg, false, true, true, &slow, &off);
	ck_assert_int_eq(off.state, PCCX_ENGINE_DONE);
	ck_assert_uint_ge(off.cycles, bulk.cycles);
	ck_assert_uint_eq(off.dm_bytes, bulk.dm_bytes);
	rm_job(&cfg, false, false, true, NULL, &dense);
	ck_assert_int_eq(dense.state, PCCX_ENGINE_DONE);
	ck_assert_uint_lt(bulk.cycles, dense.cycles);
	ck_assert_uint_lt(bulk.ddr_read, dense.ddr_read);
	/* without the feature: no FEATURES bit, the word is an illegal instruction (the
	 * validator, given the device's FEATURES, refuses it first: test_validate) */
	cfg.rowmask = 0;
	rm_job(&cfg, false, true, false, &raw, &off);
	ck_assert_int_eq(off.state, PCCX_ENGINE_ERROR);
	ck_assert_uint_eq(off.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_ILLEGAL_INSN);
	/* ... and the dense job runs as before */
	rm_job(&cfg, false, false, true, NULL, &off);
	ck_assert_uint_eq(off.cycles, dense.cycles);
}
END_TEST

START_TEST(sim_rowmask_feature)
{
	pccx_sim *s = mksim();
	struct pccx_sim_config cfg;
	pccx_diag d = { 0 };

	ck_assert(t_rd64(s, PCCX_REG_FEATURES) & PCCX_FEAT_ROWMASK);
	pccx__sim_destroy(s);
	pccx__sim_config_default(&cfg);
	cfg.rowmask = 0;
	ck_assert_int_eq(pccx__sim_create(&cfg, &s, &d), 0);
	ck_assert(!(t_rd64(s, PCCX_REG_FEATURES) & PCCX_FEAT_ROWMASK));
	pccx__sim_destroy(s);
	cfg.rowmask = 2;
	ck_assert_int_eq(pccx__sim_create(&cfg, &s, &d), PCCX_ERR_RANGE);
}
END_TEST

/*
 * GEMV on q4c weights (FEATURES.COLSKIP) on the simulator: the same matrix as Q4 rows and as
 * q4c, against an input with whole zero blocks, blocks with one non-zero element, values that
 * quantise to 0 beside large ones, and a dense tail. Both GEMVs give the reference's L2, and
 * the q4c outputs are the Q4 outputs' bits; only the records of non-zero inputs and their
 * blocks' scales are read; edge by edge as in bulk; a slow host and three windows per port
 * cut inside records change the cycles only; 5 rows (odd and empty ports) as well. In bulk the
 * records are computed on the row thread (batches in order, and those cut inside a record on
 * the simulator's thread after them), edge by edge on the simulator's. A device without the
 * feature refuses the GEMV.
 */
static void qc_job(const struct pccx_sim_config *cfg, bool every_edge, bool cut,
		   const struct pccx_sim_backend_opts *opts, uint32_t n, struct rm_run *out)
{
	static struct xcheck x;
	struct pccx_sim_backend *b = NULL;
	struct pccx_sim_backend_result res;
	const uint32_t k = 512, nb = k / 32;
	struct pccx_wshape q = { n, k, PCCX_WFMT_Q4, true }, qc = { n, k, PCCX_WFMT_Q4C, true };
	uint64_t rng = 91, wsize = 2u << 20, i, rb = pccx__wstream_row_bytes(&q), qoff = n * rb;
	uint64_t want = 0;
	pccx_diag d = { 0 };
	float *rl2, *xin;
	int8_t q8[512];
	float sx[16];
	uint8_t *w;
	unsigned p, c, blk;

	ck_assert_msg(pccx__sim_backend_create(cfg, &b, &d) == 0, "%s", d.msg);
	pccx__sim_set_every_edge(pccx__sim_backend_sim(b), every_edge);
	pccx__sim_set_row_thread(pccx__sim_backend_sim(b), !every_edge);
	w = x_open(&x, b, wsize, &rng);
	fill_weights(w, &q, &rng);
	pccx__q4c_pack(w, n, k, w + qoff);
	rl2 = pccx__ref_exec_l2(x.ref);
	/* the input at word 1000: blocks 0-3 and 7-9 zero (+-0), 4 and 10 one element, 5 tiny
	 * values beside one large (they quantise to 0), 6 a single denormal, the rest dense */
	xin = &rl2[1000 * 4];
	for (i = 0; i < k; i++) {
		xin[i] = (i & 1) ? -0.0f : 0.0f;
		if (i / 32 >= 11)
			xin[i] = t_f32(&rng, 1.0f);
	}
	xin[4 * 32 + 7] = 0.75f;
	xin[10 * 32 + 31] = -3.0f;
	for (i = 5 * 32; i < 6 * 32; i++)
		xin[i] = 1e-6f;
	xin[5 * 32 + 3] = 100.0f;
	xin[6 * 32 + 1] = 1e-42f;
	/* what the q4c GEMV reads: per port, the records of the non-zero INT8 inputs and the
	 * scale record of every block holding one */
	pccx__q8_quantize(xin, k, q8, sx);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		uint32_t first, rows;

		pccx__wstream_port_rows(&qc, p, &first, &rows);
		for (blk = 0; blk < nb; blk++) {
			uint32_t kept = 0;

			for (c = 0; c < 32; c++)
				kept += q8[blk * 32 + c] != 0;
			if (kept)
				want += kept * pccx__wstream_q4c_col_bytes(rows) +
					pccx__wstream_q4c_scale_bytes(rows);
		}
	}
	memcpy(l2e(b, 0), rl2, (size_t)PCCX_L2_WORDS * 16);

	x_matmul(&x, 60000, 1000, 1, n, k, PCCX_WFMT_Q4, false, false, 0);
	if (cut) {
		struct pccx_npu_matmul mm = { 62000, 1000, n, k, 1, PCCX_WFMT_Q4C, false, false,
					      false, { PCCX_NPU_BUF_WEIGHTS, qoff, -1, 0 } };

		ck_assert_msg(x.ops->matmul(x.ref, &mm) == 0, "%s", pccx__ref_exec_error(x.ref));
		tj_add(&x.j, t_memset(0, 40, k, 1, 1));
		tj_add(&x.j, t_memset(1, 40, n, k, PCCX_WFMT_Q4C));
		tj_add(&x.j, t_matmul(PCCX_OP_GEMV, 62000, 1000, 40, 40, TF_WSCALE));
		/* each port's range in three descriptors (three windows), cut inside records */
		x_streams_cut(&x, &qc, qoff, 16 * 37, 16 * 301);
	} else {
		x_matmul(&x, 62000, 1000, 1, n, k, PCCX_WFMT_Q4C, false, false, qoff);
	}
	x_matmul(&x, 64000, 3000, 1, n, k, PCCX_WFMT_Q4, false, true, 0);
	x_submit(&x, b, opts, &res, out);
	out->dm_bytes -= 2 * n * rb;      /* the q4c GEMV's alone */
	if (res.state == PCCX_ENGINE_DONE) {
		x_same_state(&x, b);
		for (i = 0; i < n; i++)
			ck_assert_msg(l2e(b, 62000)[i] == l2e(b, 60000)[i],
				      "row %llu: q4c 0x%08x q4 0x%08x", (unsigned long long)i,
				      l2e(b, 62000)[i], l2e(b, 60000)[i]);
		ck_assert_uint_eq(out->dm_bytes, want);
		ck_assert_uint_lt(want, pccx__wstream_port_offset(&qc, PCCX_WSTREAM_PORTS) / 2);
	}
	pccx__ref_exec_free(x.ref);
	pccx__sim_backend_destroy(b);
}

START_TEST(sim_q4c)
{
	struct pccx_sim_config cfg;
	struct rm_run bulk, edge, off;
	pccx_sim *s;
	pccx_diag d = { 0 };

	pccx__sim_config_default(&cfg);
	qc_job(&cfg, false, false, NULL, 1000, &bulk);
	ck_assert_int_eq(bulk.state, PCCX_ENGINE_DONE);
	qc_job(&cfg, true, false, NULL, 1000, &edge);
	ck_assert_uint_eq(edge.cycles, bulk.cycles);
	ck_assert_uint_eq(edge.ddr_read, bulk.ddr_read);
	qc_job(&cfg, false, true, &slow, 1000, &off);
	ck_assert_int_eq(off.state, PCCX_ENGINE_DONE);
	ck_assert_uint_ge(off.cycles, bulk.cycles);
	ck_assert_uint_eq(off.dm_bytes, bulk.dm_bytes);
	qc_job(&cfg, true, true, NULL, 1000, &off);
	ck_assert_int_eq(off.state, PCCX_ENGINE_DONE);
	ck_assert_uint_eq(off.dm_bytes, bulk.dm_bytes);
	/* 5 rows: ports of 2, 2, 1 and no rows (a half-filled nibble byte, an idle port) */
	qc_job(&cfg, false, false, NULL, 5, &bulk);
	ck_assert_int_eq(bulk.state, PCCX_ENGINE_DONE);
	qc_job(&cfg, true, false, NULL, 5, &edge);
	ck_assert_uint_eq(edge.cycles, bulk.cycles);
	ck_assert_uint_eq(edge.dm_bytes, bulk.dm_bytes);
	/* without the feature: no FEATURES bit, and the GEMV is an illegal instruction */
	cfg.colskip = 0;
	ck_assert_int_eq(pccx__sim_create(&cfg, &s, &d), 0);
	ck_assert(!(t_rd64(s, PCCX_REG_FEATURES) & PCCX_FEAT_COLSKIP));
	pccx__sim_destroy(s);
	qc_job(&cfg, false, false, &raw, 1000, &off);
	ck_assert_int_eq(off.state, PCCX_ENGINE_ERROR);
	ck_assert_uint_eq(off.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_ILLEGAL_INSN);
	cfg.colskip = 2;
	ck_assert_int_eq(pccx__sim_create(&cfg, &s, &d), PCCX_ERR_RANGE);
}
END_TEST

/* ---- configuration and trace ----------------------------------------------------------- */

static char *dtb_path(void)
{
	static char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 64);
	char *slash;

	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	slash = strrchr(buf, '/');
	ck_assert_ptr_nonnull(slash);
	strcpy(slash, "/../sim/kv260.dtb");
	return buf;
}

START_TEST(config_dtb)
{
	struct pccx_sim_config c, def;
	pccx_diag d = { 0 };
	uint8_t *blob;
	size_t len;
	pccx_sim *s;
	int node;

	pccx__sim_config_default(&def);
	pccx__sim_config_default(&c);
	ck_assert_msg(pccx__sim_config_from_dtb_file(&c, dtb_path(), &d) == 0, "%s", d.msg);
	ck_assert_int_eq(memcmp(&c, &def, sizeof(c)), 0);
	ck_assert_int_eq(pccx__read_file(dtb_path(), 1 << 20, &blob, &len, &d), 0);
	node = fdt_node_offset_by_compatible(blob, -1, "pccx,npu-v002");
	ck_assert_int_ge(node, 0);
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,instr-fifo-depth", 4), 0);
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,dm-fifo-depth", 3), 0);
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,dma-address-bits", 40), 0);
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,core-clock-hz", 300000000), 0);
	pccx__sim_config_default(&c);
	ck_assert_msg(pccx__sim_config_from_dtb(&c, blob, len, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx__sim_create(&c, &s, &d), 0);
	ck_assert_uint_eq((t_rd64(s, PCCX_REG_CAPS) >> 32) & 0xff, 4);
	ck_assert_uint_eq((t_rd64(s, PCCX_REG_CAPS) >> 56) & 0xff, 3);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_DMA_ADDR_BITS), 40);
	ck_assert(t_rd64(s, PCCX_REG_FEATURES) & PCCX_FEAT_WIDE_DMA);
	ck_assert_uint_eq(t_rd64(s, PCCX_REG_CLOCKS) & 0xffffffffu, 300000);
	pccx__sim_destroy(s);
	/* an SFU of two lanes; three is not a size the option has */
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,sfu-lanes", 2), 0);
	pccx__sim_config_default(&c);
	ck_assert_msg(pccx__sim_config_from_dtb(&c, blob, len, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(c.sfu_lanes, 2);
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,sfu-lanes", 3), 0);
	pccx__sim_config_default(&c);
	ck_assert_int_eq(pccx__sim_config_from_dtb(&c, blob, len, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "pccx,sfu-lanes"));
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,sfu-lanes", 1), 0);
	/* an unsupported value is refused with the property named */
	ck_assert_int_eq(fdt_setprop_inplace_u32(blob, node, "pccx,weight-ports", 2), 0);
	pccx__sim_config_default(&c);
	ck_assert_int_eq(pccx__sim_config_from_dtb(&c, blob, len, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "pccx,weight-ports"));
	/* not a tree */
	memset(blob, 0, 64);
	ck_assert_int_eq(pccx__sim_config_from_dtb(&c, blob, len, &d), PCCX_ERR_FORMAT);
	free(blob);
}
END_TEST

START_TEST(trace_json)
{
	struct pccx_sim_backend *b = mkb();
	char path[] = "/tmp/pccx_trace_XXXXXX";
	int fd = mkstemp(path);
	pccx_json_doc *doc = NULL;
	const pccx_json *ev;
	pccx_diag d = { 0 };
	struct mm_case c = { PCCX_OP_GEMV, 1, 64, 256, PCCX_WFMT_Q4, TF_WSCALE, 0 };
	struct pccx_wshape ws = { 64, 256, PCCX_WFMT_Q4, true };
	uint32_t hw = balloc(b, 65536, PCCX_BUF_DEV_READ);
	struct tjob j = { 0 };
	struct pccx_sim_backend_result res;
	size_t i, x = 0;
	bool named_gemv = false, named_tanh = false, named_smul = false, named_memset = false;

	(void)c;
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(pccx__sim_trace_open(pccx__sim_backend_sim(b), path, &d), 0);
	gemv_job(&j, &ws, hw);
	tj_add(&j, t_cvo(PCCX_CVO_TANH, 1000, 1100, 64, 0));
	tj_add(&j, t_cvo(PCCX_CVO_SMUL, 1000, 1100, 64, 0));
	submit_ok(b, &j, &res);
	ck_assert_int_eq(pccx__sim_trace_close(pccx__sim_backend_sim(b), &d), 0);
	ck_assert_msg(pccx__json_parse_file(path, NULL, &doc, &d) == 0, "%s", d.msg);
	ev = pccx__json_get(pccx__json_root(doc), "traceEvents");
	ck_assert_int_eq(pccx__json_type_of(ev), PCCX_JSON_ARRAY);
	for (i = 0; i < pccx__json_count(ev); i++) {
		const pccx_json *e = pccx__json_at(ev, i);
		size_t n;
		const char *ph = pccx__json_str(pccx__json_get(e, "ph"), &n);

		ck_assert_ptr_nonnull(ph);
		if (!strcmp(ph, "X")) {
			x++;
			ck_assert_int_eq(pccx__json_type_of(pccx__json_get(e, "ts")),
					 PCCX_JSON_NUMBER);
			ck_assert(pccx__json_num(pccx__json_get(e, "dur")) >= 0);
			/* instructions are named by the instruction table (a CVO by its function) */
			const char *name = pccx__json_str(pccx__json_get(e, "name"), &n);

			ck_assert_ptr_nonnull(name);
			ck_assert_msg(strcmp(name, "?") && strcmp(name, "cvo"), "unnamed event");
			named_gemv |= !strcmp(name, "gemv");
			named_tanh |= !strcmp(name, "tanh");
			named_smul |= !strcmp(name, "smul");
			named_memset |= !strcmp(name, "memset");
		}
	}
	/* 2 memsets + gemv + 2 cvos, and DataMover commands */
	ck_assert_uint_ge(x, 5 + 4);
	ck_assert(named_gemv && named_tanh && named_smul && named_memset);
	pccx__json_free(doc);
	unlink(path);
	pccx__sim_backend_destroy(b);
}
END_TEST

START_TEST(report_prints)
{
	struct pccx_sim_backend *b = mkb();
	struct pccx_wshape ws = { 64, 256, PCCX_WFMT_Q4, true };
	uint32_t hw = balloc(b, 65536, PCCX_BUF_DEV_READ);
	struct pccx_sim_stage stages[2] = { { 1, "shapes" }, { 2, "gemv" } };
	struct tjob j = { 0 };
	struct pccx_sim_backend_result res;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	gemv_job(&j, &ws, hw);
	submit_ok(b, &j, &res);
	pccx__sim_report(pccx__sim_backend_sim(b), f, stages, 2);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "gemv"));
	ck_assert_ptr_nonnull(strstr(buf, "shapes"));
	ck_assert_ptr_nonnull(strstr(buf, "stalls"));
	ck_assert_uint_eq(res.stats.dm_bytes[0] + res.stats.dm_bytes[1] + res.stats.dm_bytes[2] +
				  res.stats.dm_bytes[3],
			  64 * pccx__wstream_row_bytes(&ws));
	free(buf);
	pccx__sim_backend_destroy(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim");
	TCase *t = tcase_create("sim");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, regs_id_caps);
	tcase_add_test(t, regs_fifo_backpressure);
	tcase_add_test(t, regs_irq_w1c);
	tcase_add_test(t, regs_reset_clears);
	tcase_add_test(t, dm_commands_and_statuses);
	tcase_add_test(t, dm_window_fault);
	tcase_add_test(t, gemv_q4_scaled);
	tcase_add_test(t, gemv_q4_unscaled_accm);
	tcase_add_test(t, gemv_f32);
	tcase_add_test(t, gemv_f32t);
	tcase_add_test(t, gemm_equals_gemvs);
	tcase_add_test(t, cvo_every_function_and_flag);
	tcase_add_test(t, cvo_reductions_long);
	tcase_add_test(t, memcpy_routes);
	tcase_add_loop_test(t, hazards_sequential_result, 0, 3);
	tcase_add_test(t, hazards_gemv_then_cvo);
	tcase_add_test(t, stream_order_gemv_gemm);
	tcase_add_test(t, stream_order_port_passes_finished_gemm);
	tcase_add_test(t, overlap_independent_units);
	tcase_add_test(t, overlap_weight_prefetch);
	tcase_add_test(t, err_illegal_word);
	tcase_add_test(t, err_smul_without_the_feature);
	tcase_add_test(t, err_racc_without_the_feature);
	tcase_add_test(t, err_clear_then_next_job);
	tcase_add_test(t, err_stream_overrun);
	tcase_add_test(t, slow_host_stalls_at_every_access);
	tcase_add_test(t, injected_error_then_next_job);
	tcase_add_test(t, err_stream_short_timeout);
	tcase_add_test(t, err_dma_window);
	tcase_add_test(t, sim_matches_reference);
	tcase_add_test(t, sim_rowmask);
	tcase_add_test(t, sim_rowmask_feature);
	tcase_add_test(t, sim_q4c);
	tcase_add_test(t, random_words_never_crash);
	tcase_add_test(t, random_mmio_never_crashes);
	tcase_add_test(t, config_dtb);
	tcase_add_test(t, sfu_lanes);
	tcase_add_test(t, trace_json);
	tcase_add_test(t, report_prints);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
