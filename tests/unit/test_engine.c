/* SPDX-License-Identifier: MIT */
/*
 * The command engine: device checks at start, splitting of transfers (8 MiB - 16 and
 * non-contiguous translations), tags and statuses, wide addresses, keeping the FIFO full, and
 * errors. Against the simulator and, where a misbehaving device is needed, a mock.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pccx_engine.h"
#include "test_sim_util.h"
#include "pccx_regs.h"

/* ---- a mock device: executes everything at once, answers every command with OKAY ---- */

struct mock {
	uint64_t id, status, retired, irq;
	uint32_t lo[PCCX_DM_CHANNELS], hi[PCCX_DM_CHANNELS], ext[PCCX_DM_CHANNELS];
	uint8_t sts[PCCX_DM_CHANNELS][64];
	unsigned n_sts[PCCX_DM_CHANNELS], pos[PCCX_DM_CHANNELS];
	unsigned cmds, words, corrupt_at;    /* corrupt the tag of command #corrupt_at (1-based) */
	uint32_t btt[64];
};

static uint64_t m_rd64(void *io, uint32_t off)
{
	struct mock *m = io;

	switch (off) {
	case PCCX_REG_ID:
		return m->id;
	case PCCX_REG_CAPS:
		return 114688ull | (8ull << 32) | (64ull << 40) | (4ull << 48) | (8ull << 56);
	case PCCX_REG_STATUS:
		return m->status;
	case PCCX_REG_RETIRED:
		return m->retired;
	case PCCX_REG_IRQ_STATUS:
		return m->irq;
	case PCCX_REG_DMA_ADDR_BITS:
		return 32;
	}
	return 0;
}

static void m_wr64(void *io, uint32_t off, uint64_t v)
{
	struct mock *m = io;

	if (off == PCCX_REG_INSTR) {
		m->words++;
		m->retired++;
	} else if (off == PCCX_REG_RETIRED) {
		m->retired = 0;
	} else if (off == PCCX_REG_IRQ_STATUS) {
		m->irq &= ~v;
	}
}

static uint32_t m_rd32(void *io, uint32_t off)
{
	struct mock *m = io;
	unsigned ch = off / 0x1000 - 1;

	if (off < 0x1000 || ch >= PCCX_DM_CHANNELS)
		return 0;
	if ((off & 0xfff) == PCCX_DM_STS_POP)
		return m->pos[ch] < m->n_sts[ch] ? m->sts[ch][m->pos[ch]++] : 0;
	return 0;
}

static void m_wr32(void *io, uint32_t off, uint32_t v)
{
	struct mock *m = io;
	unsigned ch = off / 0x1000 - 1;

	if (off < 0x1000 || ch >= PCCX_DM_CHANNELS)
		return;
	switch (off & 0xfff) {
	case PCCX_DM_CMD_LO:
		m->lo[ch] = v;
		break;
	case PCCX_DM_CMD_HI:
		m->hi[ch] = v;
		break;
	case PCCX_DM_CMD_EXT:
		m->ext[ch] = v;
		break;
	case PCCX_DM_CMD_PUSH:
		m->cmds++;
		if (m->cmds <= 64)
			m->btt[m->cmds - 1] = m->lo[ch] & PCCX_DM_BTT_MAX;
		m->sts[ch][m->n_sts[ch]++ % 64] = (uint8_t)(PCCX_DM_STS_OKAY |
			((m->ext[ch] ^ (m->cmds == m->corrupt_at)) & 0xf));
		m->irq |= PCCX_IRQ_DM;
		break;
	}
}

static const struct pccx_engine_ops mock_ops = { m_rd32, m_wr32, m_rd64, m_wr64 };

static int flat_xlate(void *ctx, uint32_t handle, uint64_t offset, uint64_t len, uint64_t *addr,
		      uint64_t *contig)
{
	(void)ctx;
	*addr = 0x20000000ull + ((uint64_t)handle << 24) + offset;
	*contig = len;
	return 0;
}

static int run_mock(struct mock *m, const struct tjob *j, struct pccx_engine_ctx *e)
{
	struct pccx_job_view v = tj_view(j);
	int st = pccx__engine_start(e, &v, &mock_ops, m, flat_xlate, NULL), i;

	for (i = 0; i < 10000 && st == PCCX_ENGINE_RUNNING; i++)
		st = pccx__engine_step(e);
	return st;
}

static void mock_init(struct mock *m)
{
	memset(m, 0, sizeof(*m));
	m->id = ((uint64_t)PCCX_ID_MAGIC << 32) | (PCCX_ID_MAJOR << 24);
	m->status = PCCX_STATUS_IDLE;
}

START_TEST(engine_refuses_foreign_device)
{
	struct mock m;
	struct pccx_engine_ctx e;
	struct tjob j = { 0 };

	mock_init(&m);
	m.id = 0x8000;     /* an upstream status word */
	tj_add(&j, t_memset(0, 0, 8, 1, 1));
	ck_assert_int_eq(run_mock(&m, &j, &e), PCCX_ENGINE_ERROR);
	ck_assert_int_eq(e.err.kind, PCCX_EF_NODEV);
	ck_assert_uint_eq(m.words, 0);
	mock_init(&m);
	m.status = PCCX_STATUS_BUSY | (1u << PCCX_STATUS_FIFO_SHIFT);
	ck_assert_int_eq(run_mock(&m, &j, &e), PCCX_ENGINE_ERROR);
	ck_assert_int_eq(e.err.kind, PCCX_EF_BUSY);
	ck_assert_str_eq(pccx__engine_fail_name(e.err.kind), "BUSY");
}
END_TEST

/* One port's bytes above 8 MiB go out as several commands, none above 8 MiB - 16. */
START_TEST(engine_splits_at_8mib)
{
	struct mock m;
	struct pccx_engine_ctx e;
	struct tjob j = { 0 };
	unsigned i;

	mock_init(&m);
	/* f32 rows of 32 bytes (8 values), 16 per port; port 0's share comes from two
	 * descriptors */
	tj_add(&j, t_memset(0, 0, 8, 1, 1));
	tj_add(&j, t_memset(1, 1, 64, 8, PCCX_WFMT_F32));
	tj_add(&j, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, 0));
	j.stream[j.n_stream++] = (struct pccx_stream_desc){ 1, 0, 0, 256 };
	for (i = 1; i < 4; i++)
		j.stream[j.n_stream++] = (struct pccx_stream_desc){ 1, i, 512 * i, 512 };
	j.stream[j.n_stream++] = (struct pccx_stream_desc){ 2, 0, 4096, 256 };
	ck_assert_int_eq(run_mock(&m, &j, &e), PCCX_ENGINE_DONE);
	ck_assert_uint_eq(m.words, 3);
	ck_assert_uint_eq(m.cmds, 5);
	ck_assert_uint_eq(e.ch[0].pushed, 2);
	ck_assert_uint_eq(e.ch[0].popped, 2);
	ck_assert_uint_eq(e.retired, 3);

	/* a single 20 MiB instruction share: three commands on one port */
	mock_init(&m);
	memset(&j, 0, sizeof(j));
	tj_add(&j, t_memset(0, 0, 2048, 1, 1));
	tj_add(&j, t_memset(1, 1, 65520, 2048, PCCX_WFMT_Q4));   /* 16380 rows x 1152 B / port */
	tj_add(&j, t_matmul(PCCX_OP_GEMV, 1000, 0, 1, 0, TF_WSCALE));
	for (i = 0; i < 4; i++)
		j.stream[j.n_stream++] = (struct pccx_stream_desc){ 1, i, 0, 16380ull * 1152 };
	ck_assert_int_eq(run_mock(&m, &j, &e), PCCX_ENGINE_DONE);
	ck_assert_uint_eq(m.cmds, 12);
	ck_assert_uint_eq(m.btt[0], PCCX_ENGINE_CHUNK);
	ck_assert_uint_eq(m.btt[2], 16380ull * 1152 - 2 * PCCX_ENGINE_CHUNK);
	for (i = 0; i < m.cmds; i++)
		ck_assert_uint_le(m.btt[i], PCCX_ENGINE_CHUNK);
}
END_TEST

START_TEST(engine_checks_tags)
{
	struct mock m;
	struct pccx_engine_ctx e;
	struct tjob j = { 0 };

	mock_init(&m);
	m.corrupt_at = 2;
	tj_add(&j, t_memset(0, 0, 8, 1, 1));     /* 8 FP32 = 2 words = 32 bytes */
	tj_add(&j, t_memcpy(true, false, 10, 0, tj_dma(&j, 1, PCCX_DMA_TO_DEVICE, 0, 32), 0, true));
	tj_add(&j, t_memcpy(true, false, 20, 0, tj_dma(&j, 1, PCCX_DMA_TO_DEVICE, 32, 32), 0,
			    true));
	ck_assert_int_eq(run_mock(&m, &j, &e), PCCX_ENGINE_ERROR);
	ck_assert_int_eq(e.err.kind, PCCX_EF_DM_TAG);
	ck_assert_uint_eq(e.err.channel, PCCX_DM_FMAP);
	ck_assert_uint_eq(e.err.info, PCCX_DM_STS_OKAY | 0);   /* tag 1 expected, 0 came */
}
END_TEST

/* ---- against the simulator ---------------------------------------------------------------- */

struct pagectx {
	uint64_t base;      /* device address of the buffer */
	uint64_t page;      /* contiguity the translation reports */
	uint64_t calls;
};

static int page_xlate(void *ctx, uint32_t handle, uint64_t offset, uint64_t len, uint64_t *addr,
		      uint64_t *contig)
{
	struct pagectx *p = ctx;
	uint64_t room = p->page - (offset % p->page);

	(void)handle;
	p->calls++;
	*addr = p->base + offset;
	*contig = len < room ? len : room;
	return 0;
}

static const struct pccx_engine_ops sim_ops = { t_rd32, t_wr32, t_rd64, t_wr64 };

static int drive(pccx_sim *s, const struct tjob *j, pccx_engine_xlate_fn xl, void *ctx,
		 struct pccx_engine_ctx *e)
{
	struct pccx_job_view v = tj_view(j);
	uint64_t last = 0, idle_since = pccx__sim_cycles(s);
	int st = pccx__engine_start(e, &v, &sim_ops, s, xl, ctx);

	while (st == PCCX_ENGINE_RUNNING) {
		st = pccx__engine_step(e);
		if (e->progress != last) {
			ck_assert_uint_gt(e->progress, last);
			last = e->progress;
			idle_since = pccx__sim_cycles(s);
		} else if (pccx__sim_cycles(s) - idle_since > 1000000) {
			break;
		}
	}
	return st;
}

/* A translation that is contiguous only per 4 KiB page: one command per page. */
START_TEST(engine_follows_translation_pages)
{
	pccx_sim *s = NULL;
	pccx_diag d = { 0 };
	uint8_t *host = aligned_alloc(4096, 65536);
	struct pagectx pc = { 0x30000000, 4096, 0 };
	struct pccx_engine_ctx e;
	struct pccx_sim_stats st;
	struct tjob j = { 0 };
	unsigned i;

	ck_assert_int_eq(pccx__sim_create(NULL, &s, &d), 0);
	for (i = 0; i < 65536; i++)
		host[i] = (uint8_t)(i * 13);
	ck_assert_int_eq(pccx__sim_dma_window_add(s, pc.base, 65536, host,
						  PCCX_SIM_WIN_READ | PCCX_SIM_WIN_WRITE), 0);
	/* 20000 bytes (5000 FP32) from offset 0x300 into L2 word 100, then back out at 0x8000 */
	tj_add(&j, t_memset(0, 0, 5000, 1, 1));
	tj_add(&j, t_memcpy(true, false, 100, 0, tj_dma(&j, 1, PCCX_DMA_TO_DEVICE, 0x300, 20000), 0,
			    true));
	tj_add(&j, t_memcpy(false, true, 0, 100,
			    tj_dma(&j, 1, PCCX_DMA_FROM_DEVICE, 0x8000, 20000), 0, true));
	ck_assert_int_eq(drive(s, &j, page_xlate, &pc, &e), PCCX_ENGINE_DONE);
	ck_assert_int_eq(memcmp(host + 0x8000, host + 0x300, 20000), 0);
	pccx__sim_get_stats(s, &st);
	/* 0x300..0x5120 spans 6 pages; 0x8000..0xce20 spans 5 */
	ck_assert_uint_eq(st.dm_cmds[PCCX_DM_FMAP], 6);
	ck_assert_uint_eq(st.dm_cmds[PCCX_DM_RESULT], 5);
	ck_assert_uint_eq(e.retired, 3);
	ck_assert_uint_eq(st.window_faults, 0);
	pccx__sim_destroy(s);
	free(host);
}
END_TEST

/* Addresses above 4 GiB need WIDE_DMA: used when the device has it, refused when not. */
START_TEST(engine_wide_addresses)
{
	struct pccx_sim_config c;
	pccx_sim *s = NULL;
	pccx_diag d = { 0 };
	uint8_t *host = aligned_alloc(4096, 4096);
	struct pagectx pc = { 0x123400000000ull, 1 << 20, 0 };
	struct pccx_engine_ctx e;
	struct tjob j = { 0 };

	memset(host, 0x5a, 4096);
	tj_add(&j, t_memset(0, 0, 32, 1, 1));    /* 32 FP32 = 8 words = 128 bytes */
	tj_add(&j, t_memcpy(true, false, 7, 0, tj_dma(&j, 1, PCCX_DMA_TO_DEVICE, 0, 128), 0,
			    false));
	pccx__sim_config_default(&c);
	c.dma_address_bits = 48;
	ck_assert_int_eq(pccx__sim_create(&c, &s, &d), 0);
	ck_assert_int_eq(pccx__sim_dma_window_add(s, pc.base, 4096, host, PCCX_SIM_WIN_READ), 0);
	ck_assert_int_eq(drive(s, &j, page_xlate, &pc, &e), PCCX_ENGINE_DONE);
	ck_assert_uint_eq(pccx__sim_l2(s)[7 * 16 + 127], 0x5a);
	pccx__sim_destroy(s);

	ck_assert_int_eq(pccx__sim_create(NULL, &s, &d), 0);
	ck_assert_int_eq(drive(s, &j, page_xlate, &pc, &e), PCCX_ENGINE_ERROR);
	ck_assert_int_eq(e.err.kind, PCCX_EF_ADDR);
	ck_assert_uint_eq(e.err.info, pc.base);
	pccx__sim_destroy(s);
	free(host);
}
END_TEST

/* A translation outside every window: the device's DMA_WINDOW error reaches the engine. */
START_TEST(engine_reports_device_errors)
{
	pccx_sim *s = NULL;
	pccx_diag d = { 0 };
	struct pagectx pc = { 0x50000000, 1 << 20, 0 };
	struct pccx_engine_ctx e;
	struct tjob j = { 0 };

	ck_assert_int_eq(pccx__sim_create(NULL, &s, &d), 0);
	tj_add(&j, t_memset(0, 0, 32, 1, 1));    /* 32 FP32 = 8 words = 128 bytes */
	tj_add(&j, t_memcpy(true, false, 7, 0, tj_dma(&j, 1, PCCX_DMA_TO_DEVICE, 0, 128), 0,
			    false));
	ck_assert_int_eq(drive(s, &j, page_xlate, &pc, &e), PCCX_ENGINE_ERROR);
	ck_assert_int_eq(e.err.kind, PCCX_EF_DEVICE);
	ck_assert_uint_eq(e.err.error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_WINDOW);
	ck_assert_uint_eq(e.err.info, 0x50000000);
	/* a started engine refuses a halted device */
	ck_assert_int_eq(drive(s, &j, page_xlate, &pc, &e), PCCX_ENGINE_ERROR);
	ck_assert_int_eq(e.err.kind, PCCX_EF_BUSY);
	pccx__sim_destroy(s);
}
END_TEST

/* The engine keeps the FIFO filled: behind a long chain of SFU work the front end never
 * runs dry before the last word. */
START_TEST(engine_keeps_fifo_full)
{
	struct pccx_sim_backend *b = NULL;
	pccx_diag d = { 0 };
	struct tjob j = { 0 };
	struct pccx_job_view v;
	struct pccx_sim_backend_result res;
	const struct pccx_sim_insn_time *last;
	unsigned i;

	ck_assert_int_eq(pccx__sim_backend_create(NULL, &b, &d), 0);
	for (i = 0; i < 100; i++)
		tj_add(&j, t_cvo(PCCX_CVO_TANH, 1000 + 600 * (i % 10), 10000 + 600 * (i % 10), 2000,
				 1));   /* 2000 FP32: 500 words each, disjoint */
	v = tj_view(&j);
	ck_assert_msg(pccx__sim_backend_submit_wait(b, &v, NULL, &res, &d) == 0, "%s", d.msg);
	last = pccx__sim_insn_time(pccx__sim_backend_sim(b), 99);
	ck_assert_ptr_nonnull(last);
	/* the SFU was busy all along: only the last instruction runs with an empty FIFO */
	ck_assert_uint_le(res.stats.stall_fifo_empty, last->done - last->issue + 64);
	/* and the host was the bottleneck only before its first word (two status reads) */
	ck_assert_uint_le(res.stats.stall_mmio, 256);
	ck_assert_uint_ge(res.stats.unit_busy[PCCX_SIM_U_SFU] * 100, res.cycles * 95);
	ck_assert_uint_eq(res.stats.retired, 100);
	pccx__sim_backend_destroy(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("engine");
	TCase *t = tcase_create("engine");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, engine_refuses_foreign_device);
	tcase_add_test(t, engine_splits_at_8mib);
	tcase_add_test(t, engine_checks_tags);
	tcase_add_test(t, engine_follows_translation_pages);
	tcase_add_test(t, engine_wide_addresses);
	tcase_add_test(t, engine_reports_device_errors);
	tcase_add_test(t, engine_keeps_fifo_full);
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
