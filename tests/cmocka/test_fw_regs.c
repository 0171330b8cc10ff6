// SPDX-License-Identifier: MIT
/*
 * The board's register side: the MMIO accessor's accesses, the register executor's probe and
 * reset sequences against a scripted register file, the DMA region allocator, and real jobs
 * through the register executor over the cycle simulator (a copy that completes, a device
 * fault, a hang), each fault followed by a reset that leaves the device ready for the next.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "fw_test_util.h"
#include "pccx_regs.h"
#include "sim_regs.h"

/* ---- the MMIO accessor ------------------------------------------------------------------ */

static void mmio_accesses_are_whole_and_in_place(void **state)
{
	static uint64_t regs[PCCX_MMIO_SIZE / 8];
	uint8_t *io = (uint8_t *)regs;

	(void)state;
	memset(regs, 0, sizeof(regs));
	pccx__fw_mmio_ops.wr64(io, PCCX_REG_INSTR, 0x1122334455667788ull);
	assert_int_equal(regs[0], 0x1122334455667788ull);
	pccx__fw_mmio_ops.wr32(io, PCCX_DM_PAGE(5) + PCCX_DM_CMD_PUSH, 0xa5a5a5a5u);
	assert_int_equal(*(uint32_t *)(io + PCCX_DM_PAGE(5) + PCCX_DM_CMD_PUSH), 0xa5a5a5a5u);
	assert_int_equal(*(uint32_t *)(io + PCCX_DM_PAGE(5) + PCCX_DM_CMD_PUSH + 4), 0);
	regs[PCCX_REG_STATUS / 8] = 0x0000000800000308ull;
	assert_int_equal(pccx__fw_mmio_ops.rd64(io, PCCX_REG_STATUS), 0x0000000800000308ull);
	*(uint32_t *)(io + PCCX_DM_PAGE(2) + PCCX_DM_FLAGS) = 0x15u;
	assert_int_equal(pccx__fw_mmio_ops.rd32(io, PCCX_DM_PAGE(2) + PCCX_DM_FLAGS), 0x15u);
}

/* ---- a scripted register file that logs every access ------------------------------------ */

struct acc {
	char op;                        /* 'r' or 'w', '4' or '8' in width */
	int width;
	uint32_t off;
	uint64_t v;
};

struct fake {
	struct acc log[64];
	unsigned n;
	uint64_t id, features;
	unsigned reset_busy_reads;      /* RESET reads 1 this many times, then 0 */
};

static void logit(struct fake *f, char op, int width, uint32_t off, uint64_t v)
{
	if (f->n < 64)
		f->log[f->n] = (struct acc){ op, width, off, v };
	f->n++;
}

static uint64_t f_read(struct fake *f, uint32_t off)
{
	if (off == PCCX_REG_ID)
		return f->id;
	if (off == PCCX_REG_FEATURES)
		return f->features;
	if (off == PCCX_REG_RESET) {
		if (f->reset_busy_reads) {
			f->reset_busy_reads--;
			return 1;
		}
		return 0;
	}
	return 0;
}

static uint32_t f_rd32(void *io, uint32_t off)
{
	uint64_t v = f_read(io, off);

	logit(io, 'r', 4, off, v);
	return (uint32_t)v;
}

static void f_wr32(void *io, uint32_t off, uint32_t v)
{
	logit(io, 'w', 4, off, v);
}

static uint64_t f_rd64(void *io, uint32_t off)
{
	uint64_t v = f_read(io, off);

	logit(io, 'r', 8, off, v);
	return v;
}

static void f_wr64(void *io, uint32_t off, uint64_t v)
{
	logit(io, 'w', 8, off, v);
}

static const struct pccx_engine_ops fake_ops = { f_rd32, f_wr32, f_rd64, f_wr64 };

static void fake_cfg(struct fake *f, struct pccx_fw_regs_cfg *c, uint8_t *region,
		     struct pccx_fw_span *spans)
{
	memset(c, 0, sizeof(*c));
	c->ops = &fake_ops;
	c->io = f;
	c->region_cpu = region;
	c->region_dev = 0x80000000ull;
	c->region_size = 4096;
	c->spans = spans;
	c->max_spans = 4;
	c->reset_polls = 10;
}

static void expect_log(const struct fake *f, const struct acc *want, unsigned n)
{
	unsigned i;

	assert_int_equal(f->n, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(f->log[i].op, want[i].op);
		assert_int_equal(f->log[i].width, want[i].width);
		assert_int_equal(f->log[i].off, want[i].off);
		if (want[i].op == 'w')
			assert_int_equal(f->log[i].v, want[i].v);
	}
}

/* The probe, then the soft reset of docs/driver.md: RESET, wait for 0, clear what is sticky. */
static void probe_and_reset_sequence(void **state)
{
	static uint8_t region[4096];
	struct pccx_fw_span spans[4];
	struct pccx_fw_regs_cfg c;
	struct pccx_fw_regs x;
	struct fake f = { .id = 0x5043435802000001ull, .features = PCCX_FEAT_SOFT_RESET,
			  .reset_busy_reads = 2 };
	const struct acc want[] = {
		{ 'r', 8, PCCX_REG_ID, 0 },
		{ 'r', 8, PCCX_REG_FEATURES, 0 },
		{ 'w', 8, PCCX_REG_RESET, 1 },
		{ 'r', 8, PCCX_REG_RESET, 0 },
		{ 'r', 8, PCCX_REG_RESET, 0 },
		{ 'r', 8, PCCX_REG_RESET, 0 },
		{ 'w', 8, PCCX_REG_ERROR, PCCX_ERROR_VALID },
		{ 'w', 8, PCCX_REG_IRQ_STATUS, PCCX_IRQ_IDLE | PCCX_IRQ_ERROR | PCCX_IRQ_DM },
		{ 'w', 4, PCCX_DM_PAGE(0) + PCCX_DM_ERR_W1C, 0xf },
		{ 'w', 4, PCCX_DM_PAGE(1) + PCCX_DM_ERR_W1C, 0xf },
		{ 'w', 4, PCCX_DM_PAGE(2) + PCCX_DM_ERR_W1C, 0xf },
		{ 'w', 4, PCCX_DM_PAGE(3) + PCCX_DM_ERR_W1C, 0xf },
		{ 'w', 4, PCCX_DM_PAGE(4) + PCCX_DM_ERR_W1C, 0xf },
		{ 'w', 4, PCCX_DM_PAGE(5) + PCCX_DM_ERR_W1C, 0xf },
		{ 'w', 8, PCCX_REG_RETIRED, 0 },
		{ 'w', 8, PCCX_REG_IRQ_ENABLE, 0 },
	};

	(void)state;
	fake_cfg(&f, &c, region, spans);
	assert_int_equal(pccx__fw_regs_init(&x, &c), 0);
	expect_log(&f, want, sizeof(want) / sizeof(want[0]));
}

static void probe_refuses_what_is_not_a_v002_with_reset(void **state)
{
	static uint8_t region[4096];
	struct pccx_fw_span spans[4];
	struct pccx_fw_regs_cfg c;
	struct pccx_fw_regs x;
	struct fake f = { .id = 0x0000000002000001ull, .features = PCCX_FEAT_SOFT_RESET };

	(void)state;
	fake_cfg(&f, &c, region, spans);
	assert_int_equal(pccx__fw_regs_init(&x, &c), PCCX_EF_NODEV);
	f.id = 0x5043435803000001ull;              /* another major version */
	assert_int_equal(pccx__fw_regs_init(&x, &c), PCCX_EF_NODEV);
	f.id = 0x5043435802000001ull;
	f.features = 0;                              /* no soft reset: no recovery */
	assert_int_equal(pccx__fw_regs_init(&x, &c), PCCX_EF_NODEV);
	/* not one write to a device that was refused */
	for (unsigned i = 0; i < f.n; i++)
		assert_int_equal(f.log[i].op, 'r');
	/* a reset that never completes: BUSY after reset_polls reads */
	f.features = PCCX_FEAT_SOFT_RESET;
	f.reset_busy_reads = 1000;
	f.n = 0;
	assert_int_equal(pccx__fw_regs_init(&x, &c), PCCX_EF_BUSY);
	assert_int_equal(f.n, 2 + 1 + 10);
}

/* ---- the region allocator ---------------------------------------------------------------- */

static void region_first_fit_aligned_and_bounded(void **state)
{
	static uint8_t mem[4096 + 64] __attribute__((aligned(64)));
	struct pccx_fw_span spans[3];
	struct pccx_fw_region r;
	uint32_t h[4];
	uint64_t off, largest;

	(void)state;
	/* a device address 16 bytes past a 64-byte boundary: the region starts 48 bytes in */
	pccx__fw_region_init(&r, mem, 0x1010, 4096 + 64, spans, 3);
	assert_ptr_equal(r.cpu, mem + 48);
	assert_int_equal(r.dev, 0x1040);
	assert_int_equal(r.size, 4096);
	memset(mem, 0xee, sizeof(mem));
	assert_int_equal(pccx__fw_region_alloc(&r, 100, &h[0], &off, &largest), 0);
	assert_int_equal(off, 0);
	assert_int_equal(r.cpu[99], 0);              /* zeroed */
	assert_int_equal(pccx__fw_region_alloc(&r, 1, &h[1], &off, &largest), 0);
	assert_int_equal(off, 128);
	assert_int_equal(pccx__fw_region_alloc(&r, 4096, &h[2], &off, &largest),
			 PCCX_LINK_E_NOSPACE);
	assert_int_equal(largest, 4096 - 192);
	assert_int_equal(pccx__fw_region_alloc(&r, 3000, &h[2], &off, &largest), 0);
	assert_int_equal(off, 192);
	/* the span table is full: NOSPACE even with bytes free */
	assert_int_equal(pccx__fw_region_alloc(&r, 16, &h[3], &off, &largest),
			 PCCX_LINK_E_NOSPACE);
	/* a freed hole is reused, and its handle is not given out again at once */
	assert_int_equal(pccx__fw_region_free(&r, h[0]), 0);
	assert_int_equal(pccx__fw_region_free(&r, h[0]), -1);
	assert_int_equal(pccx__fw_region_alloc(&r, 64, &h[3], &off, &largest), 0);
	assert_int_equal(off, 0);
	assert_int_not_equal(h[3], h[0]);
	assert_int_equal(pccx__fw_region_free_bytes(&r, &largest), 4096 - 64 - 64 - 3008);
	assert_int_equal(pccx__fw_region_alloc(&r, 0, &h[3], &off, &largest), PCCX_LINK_E_NOSPACE);
	assert_int_equal(pccx__fw_region_alloc(&r, UINT64_MAX, &h[3], &off, &largest),
			 PCCX_LINK_E_NOSPACE);
}

/* ---- jobs through the register executor over the simulator ------------------------------ */

struct simboard {
	pccx_sim *sim;
	uint8_t *region;
	struct pccx_fw_span spans[8];
	struct pccx_fw_regs x;
};

static int sim_setup(void **state)
{
	struct simboard *b = calloc(1, sizeof(*b));
	struct pccx_fw_regs_cfg c;

	assert_non_null(b);
	b->region = aligned_alloc(4096, 1 << 20);
	assert_non_null(b->region);
	assert_int_equal(pccx__sim_create(NULL, &b->sim, NULL), 0);
	assert_int_equal(pccx__fw_sim_regs_cfg(b->sim, b->region, 0x40000000ull, 1 << 20, b->spans,
					       8, &c), 0);
	assert_int_equal(pccx__fw_regs_init(&b->x, &c), 0);
	*state = b;
	return 0;
}

static int sim_teardown(void **state)
{
	struct simboard *b = *state;

	pccx__sim_destroy(b->sim);
	free(b->region);
	free(b);
	return 0;
}

/* Run a job to a final status (bounded), the way the server's poll does. */
static uint32_t run(struct simboard *b, const struct pccx_job_view *job, uint32_t timeout_ms,
		    struct pccx_fw_outcome *o)
{
	uint32_t st = PCCX_LINK_JOB_RUNNING;
	long i;

	memset(o, 0, sizeof(*o));
	if (pccx__fw_regs_exec.start(&b->x, job, timeout_ms, o))
		return o->status ? o->status : PCCX_LINK_JOB_FAULT;
	for (i = 0; i < 50000000 && st == PCCX_LINK_JOB_RUNNING; i++)
		st = pccx__fw_regs_exec.poll(&b->x, o);
	return st;
}

/* The copy job of fw_test_util.h as a view, with its two buffers allocated. */
struct copyjob {
	uint8_t img[256] __attribute__((aligned(8)));
	struct pccx_job_view v;
	uint32_t in, out;
	uint8_t *in_mem, *out_mem;
};

static void copy_job(struct simboard *b, struct copyjob *j)
{
	uint64_t largest;

	memset(j, 0, sizeof(*j));
	assert_int_equal(pccx__fw_regs_exec.buf_alloc(&b->x, 32, PCCX_BUF_DEV_READ, &j->in,
						      &j->in_mem, &largest), 0);
	assert_int_equal(pccx__fw_regs_exec.buf_alloc(&b->x, 32, PCCX_BUF_DEV_WRITE, &j->out,
						      &j->out_mem, &largest), 0);
	t_copy_image(j->img, j->in, j->out);
	j->v.insn = (const uint64_t *)(const void *)(j->img + PCCX_LINK_JOB_HDR);
	j->v.n_insn = 3;
	j->v.dma = (const struct pccx_dma_desc *)(const void *)(j->img + PCCX_LINK_JOB_HDR + 24);
	j->v.n_dma = 2;
	for (int i = 0; i < 32; i++)
		j->in_mem[i] = (uint8_t)(0x30 + i * 5);
}

static void a_copy_completes_with_its_bytes(void **state)
{
	struct simboard *b = *state;
	struct copyjob j;
	struct pccx_fw_outcome o;
	struct pccx_fw_dev_info di = { 0 };

	copy_job(b, &j);
	assert_int_equal(run(b, &j.v, 1000, &o), PCCX_LINK_JOB_DONE);
	assert_memory_equal(j.out_mem, j.in_mem, 32);
	assert_int_equal(o.retired, 3);
	assert_true(o.end_ns > o.start_ns);
	assert_true(o.mmio > 0);
	assert_true(o.cycles > 0);
	assert_int_equal(pccx__fw_regs_exec.info(&b->x, &di), 0);
	assert_int_equal(di.hw_id >> 32, PCCX_ID_MAGIC);
	assert_int_equal(di.flags, PCCX_LINK_INFO_SIMULATED);
	assert_int_equal(di.memory_total, 1 << 20);
	assert_int_equal(di.memory_free, (1 << 20) - 128);
	assert_int_equal(di.resets, 0);
}

static void a_device_fault_then_the_next_job_runs(void **state)
{
	struct simboard *b = *state;
	struct copyjob j;
	struct pccx_fw_outcome o;

	copy_job(b, &j);
	pccx__sim_inject_error(b->sim, 2, PCCX_CAUSE_DMA_SLVERR);
	assert_int_equal(run(b, &j.v, 1000, &o), PCCX_LINK_JOB_FAULT);
	assert_int_equal(o.hw_error >> 24, PCCX_LINK_FAULT_DEVICE);
	assert_int_equal(o.hw_error & PCCX_ERROR_CAUSE_MASK, PCCX_CAUSE_DMA_SLVERR);
	assert_int_equal(o.fault_index, 2);
	assert_int_equal(b->x.resets, 1);
	memset(j.out_mem, 0, 32);
	assert_int_equal(run(b, &j.v, 1000, &o), PCCX_LINK_JOB_DONE);
	assert_memory_equal(j.out_mem, j.in_mem, 32);
}

static void a_hang_times_out_resets_and_recovers(void **state)
{
	struct simboard *b = *state;
	struct copyjob j;
	struct pccx_fw_outcome o;
	struct pccx_job_view starved;

	copy_job(b, &j);
	/* the first MEMCPY's descriptor says 16 bytes where the word moves 32: the rest never
	 * comes, the device waits without progress (the validator would refuse this job; the
	 * executor is given it directly) */
	starved = j.v;
	((struct pccx_dma_desc *)(uintptr_t)j.v.dma)[0].length = 16;
	assert_int_equal(run(b, &starved, 1, &o), PCCX_LINK_JOB_TIMEOUT);
	assert_int_equal(o.hw_error >> 24, PCCX_LINK_FAULT_HUNG);
	assert_true(o.end_ns - o.start_ns >= 1000000);
	assert_int_equal(b->x.resets, 1);
	((struct pccx_dma_desc *)(uintptr_t)j.v.dma)[0].length = 32;
	assert_int_equal(run(b, &j.v, 1000, &o), PCCX_LINK_JOB_DONE);
	assert_memory_equal(j.out_mem, j.in_mem, 32);
}

/* ---- a hostile host against the whole board ------------------------------------------------ */

static uint64_t xs(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

/* BUF_CREATE through the server; the handle. */
static uint32_t s_create(struct t_link *l, uint64_t size, uint32_t access)
{
	pccx__le64_put(t_req(l), size);
	pccx__le32_put(t_req(l) + 8, access);
	pccx__le32_put(t_req(l) + 12, 0);
	t_send(l, PCCX_LINK_BUF_CREATE, 16);
	assert_int_equal(l->hdr.type, PCCX_LINK_BUF_CREATE);
	return pccx__le32_get(l->payload);
}

/*
 * Well-framed requests with random types and fields (handles and the job image often the
 * board's own, so the checks past the first are reached): each is answered exactly once, and
 * afterwards the board runs a job with the right bytes.
 */
static void random_requests_leave_the_board_working(void **state)
{
	struct simboard *b = *state;
	static struct t_link l;
	uint64_t st = 0x2545f4914f6cdd1dull, sent = 0;
	uint32_t h[3], len, i, jobs = 0, done = 0, refusals = 0;
	uint8_t img[256];

	t_link_init(&l, &pccx__fw_regs_exec, &b->x, 4);
	h[0] = s_create(&l, 32, PCCX_BUF_DEV_READ);
	h[1] = s_create(&l, 32, PCCX_BUF_DEV_WRITE);
	h[2] = s_create(&l, 256, 0);
	len = t_copy_image(img, h[0], h[1]);
	memcpy(t_req(&l), (uint8_t[16]){ 0 }, 16);
	pccx__le32_put(t_req(&l), h[2]);
	memcpy(t_req(&l) + 16, img, len);
	t_send(&l, PCCX_LINK_UPLOAD, 16 + len);
	sent = l.n_replies;
	for (i = 0; i < 20000; i++) {
		uint64_t r = xs(&st);
		uint8_t type = (uint8_t)(r % 12 ? r % 12 : PCCX_LINK_ERROR);
		uint32_t n = (uint32_t)(xs(&st) % 48), k;
		uint8_t *p = t_req(&l);

		if (r >> 60 == 0)
			type = (uint8_t)(r >> 8);               /* any type at all */
		for (k = 0; k < n; k++)
			p[k] = (uint8_t)xs(&st);
		if (n >= 4 && (r >> 20) % 2)
			pccx__le32_put(p, h[(r >> 24) % 3]);    /* a real handle */
		if (n >= 8 && (r >> 28) % 4 == 0)
			pccx__le32_put(p + 4, 0);               /* pad (or a timeout) zero */
		if (n >= 24 && (r >> 32) % 3 == 0) {            /* small offsets and lengths */
			pccx__le64_put(p + 8, xs(&st) % 64);
			pccx__le64_put(p + 16, xs(&st) % 300);
		}
		if (type == PCCX_LINK_SUBMIT && (r >> 36) % 4 == 0) {
			n = 24;                                  /* the real job, often */
			pccx__le32_put(p, h[2]);
			pccx__le32_put(p + 4, 1000);
			pccx__le64_put(p + 8, 0);
			pccx__le64_put(p + 16, len);
		}
		if (type == PCCX_LINK_WAIT && n >= 4 && (r >> 40) % 2)
			pccx__le32_put(p, l.srv.job_id);        /* the job it has */
		if (type == PCCX_LINK_RESET)
			pccx__le32_put(p, 0);                   /* FREE_ALL would end the game */
		if (type == PCCX_LINK_BUF_FREE)
			continue;                               /* and so would a free */
		t_send(&l, type, n);
		sent++;
		l.now += xs(&st) % 3000;
		pccx__fw_server_poll(&l.srv, l.now);
		/* every request answered once; a WAIT may still wait for the next one */
		assert_int_equal(l.n_replies + (l.srv.wait_pending ? 1 : 0), sent);
		jobs += l.hdr.type == PCCX_LINK_SUBMIT;
		done += l.hdr.type == PCCX_LINK_WAIT &&
			pccx__le32_get(l.payload + 4) == PCCX_LINK_JOB_DONE;
		refusals += l.hdr.type == PCCX_LINK_ERROR;
	}
	/* the game reached the deep paths: jobs ran to the end, most requests were refused */
	assert_true(jobs >= 10);
	assert_true(done >= 5);
	assert_true(refusals >= 10000);
	/* the board still works: reap what is there, then the copy runs with its bytes */
	pccx__le32_put(t_req(&l), PCCX_LINK_RESET_FREE_ALL);
	pccx__le32_put(t_req(&l) + 4, 0);
	t_send(&l, PCCX_LINK_RESET, 8);
	assert_int_equal(l.hdr.type, PCCX_LINK_RESET);
	assert_int_equal(pccx__le32_get(l.payload), 0);
	h[0] = s_create(&l, 32, PCCX_BUF_DEV_READ);
	h[1] = s_create(&l, 32, PCCX_BUF_DEV_WRITE);
	h[2] = s_create(&l, 256, 0);
	len = t_copy_image(img, h[0], h[1]);
	memset(t_req(&l), 0, 16);
	pccx__le32_put(t_req(&l), h[2]);
	memcpy(t_req(&l) + 16, img, len);
	t_send(&l, PCCX_LINK_UPLOAD, 16 + len);
	memset(t_req(&l), 0, 16);
	pccx__le32_put(t_req(&l), h[0]);
	memcpy(t_req(&l) + 16, "0123456789abcdefghijklmnopqrstuv", 32);
	t_send(&l, PCCX_LINK_UPLOAD, 48);
	pccx__le32_put(t_req(&l), h[2]);
	pccx__le32_put(t_req(&l) + 4, 0);
	pccx__le64_put(t_req(&l) + 8, 0);
	pccx__le64_put(t_req(&l) + 16, len);
	t_send(&l, PCCX_LINK_SUBMIT, 24);
	assert_int_equal(l.hdr.type, PCCX_LINK_SUBMIT);
	pccx__le32_put(t_req(&l) + 4, 60000);
	pccx__le32_put(t_req(&l), pccx__le32_get(l.payload));
	t_send(&l, PCCX_LINK_WAIT, 8);
	for (i = 0; i < 100000 && l.srv.wait_pending; i++)
		pccx__fw_server_poll(&l.srv, l.now);
	assert_int_equal(l.hdr.type, PCCX_LINK_WAIT);
	assert_int_equal(pccx__le32_get(l.payload + 4), PCCX_LINK_JOB_DONE);
	assert_memory_equal(pccx__fw_buf_find(&l.srv, h[1])->mem,
			    "0123456789abcdefghijklmnopqrstuv", 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mmio_accesses_are_whole_and_in_place),
		cmocka_unit_test(probe_and_reset_sequence),
		cmocka_unit_test(probe_refuses_what_is_not_a_v002_with_reset),
		cmocka_unit_test(region_first_fit_aligned_and_bounded),
		cmocka_unit_test_setup_teardown(a_copy_completes_with_its_bytes, sim_setup,
						sim_teardown),
		cmocka_unit_test_setup_teardown(a_device_fault_then_the_next_job_runs, sim_setup,
						sim_teardown),
		cmocka_unit_test_setup_teardown(a_hang_times_out_resets_and_recovers, sim_setup,
						sim_teardown),
		cmocka_unit_test_setup_teardown(random_requests_leave_the_board_working, sim_setup,
						sim_teardown),
	};

	return cmocka_run_group_tests_name("fw_regs", tests, NULL, NULL);
}
