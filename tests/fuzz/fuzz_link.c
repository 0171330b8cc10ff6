/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the board's link server (firmware/core) against a hostile host. The input
 * is a script of what the host sends: raw noise, well-framed requests (sealed with their CRCs,
 * so the handlers are reached, not only the receiver), job images near a valid one, SUBMITs,
 * WAITs and buffer creations, with the board's clock advancing between them.
 *
 * The executor behind the server is a mock whose buffers are heap blocks of exactly the size
 * asked for, and which, for every job the server starts, touches every byte that each DMA and
 * weight-stream descriptor names: a gap in the server's checks or in the validator becomes an
 * AddressSanitizer report instead of a silent overrun. Every byte the board sends must parse
 * as a reply frame on the host's receiver, and at the end a RESET with FREE_ALL must be
 * answered as a RESET and leave no buffer allocated.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../cmocka/fw_test_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BUFS 8
#define MAX_BUF_SIZE 65536u
#define FRAME (PCCX_LINK_OVERHEAD + PCCX_LINK_MIN_PAYLOAD)

/* ---- the mock executor ------------------------------------------------------------------ */

struct mock {
	uint8_t *mem[MAX_BUFS];
	uint64_t size[MAX_BUFS];
	unsigned live;
	bool running;
	uint64_t retired;
	volatile uint8_t sink;
};

static struct mock *mock_of(void *ctx)
{
	return ctx;
}

static int m_info(void *ctx, struct pccx_fw_dev_info *out)
{
	(void)ctx;
	memset(out, 0, sizeof(*out));
	out->hw_id = 0x5043435802000001ull;
	out->l2_words = PCCX_L2_WORDS;
	out->max_buf_size = MAX_BUF_SIZE;
	out->memory_total = (uint64_t)MAX_BUFS * MAX_BUF_SIZE;
	out->flags = PCCX_LINK_INFO_SIMULATED;
	return 0;
}

static int m_alloc(void *ctx, uint64_t size, uint32_t access, uint32_t *handle, uint8_t **mem,
		   uint64_t *largest)
{
	struct mock *m = mock_of(ctx);
	unsigned i;

	(void)access;
	*largest = MAX_BUF_SIZE;
	if (!size)
		__builtin_trap();	/* the server refuses size 0 */
	if (size > MAX_BUF_SIZE)
		return PCCX_LINK_E_NOSPACE;
	for (i = 0; i < MAX_BUFS; i++)
		if (!m->mem[i]) {
			/* exact size: ASan's redzone starts at the first byte past it */
			m->mem[i] = aligned_alloc(16, (size + 15) & ~(uint64_t)15);
			if (!m->mem[i])
				break;
			memset(m->mem[i], 0, size);
			m->size[i] = size;
			m->live++;
			*handle = i + 1;
			*mem = m->mem[i];
			return 0;
		}
	*largest = 0;
	return PCCX_LINK_E_NOSPACE;
}

static void m_free(void *ctx, uint32_t handle)
{
	struct mock *m = mock_of(ctx);

	if (!handle || handle > MAX_BUFS || !m->mem[handle - 1])
		__builtin_trap();	/* a handle the executor never gave, or freed twice */
	free(m->mem[handle - 1]);
	m->mem[handle - 1] = NULL;
	m->live--;
}

/* Every byte of [off, off + len) of buffer `handle`, read (and written when `write`). */
static void touch(struct mock *m, uint32_t handle, uint64_t off, uint64_t len, bool write)
{
	uint8_t *p;
	uint64_t i;

	if (!handle || handle > MAX_BUFS || !m->mem[handle - 1])
		__builtin_trap();	/* the validator let an unknown handle through */
	p = m->mem[handle - 1];
	for (i = 0; i < len; i++) {
		m->sink ^= p[off + i];
		if (write)
			p[off + i] = (uint8_t)i;
	}
}

static int m_start(void *ctx, const struct pccx_job_view *job, uint32_t timeout_ms,
		   struct pccx_fw_outcome *out)
{
	struct mock *m = mock_of(ctx);
	uint32_t i;

	(void)timeout_ms;
	if (m->running)
		__builtin_trap();	/* one job at a time */
	for (i = 0; i < job->n_insn; i++)
		m->sink ^= (uint8_t)job->insn[i];
	for (i = 0; i < job->n_dma; i++)
		touch(m, job->dma[i].handle, job->dma[i].offset, job->dma[i].length,
		      job->dma[i].flags & PCCX_DMA_FROM_DEVICE);
	for (i = 0; i < job->n_stream; i++)
		touch(m, job->stream[i].handle, job->stream[i].offset, job->stream[i].length,
		      false);
	memset(out, 0, sizeof(*out));
	m->running = true;
	m->retired = job->n_insn;
	return 0;
}

static uint32_t m_poll(void *ctx, struct pccx_fw_outcome *out)
{
	struct mock *m = mock_of(ctx);

	if (!m->running)
		__builtin_trap();	/* polled with no job */
	m->running = false;
	out->status = PCCX_LINK_JOB_DONE;
	out->retired = m->retired;
	return PCCX_LINK_JOB_DONE;
}

static int m_reset(void *ctx)
{
	mock_of(ctx)->running = false;
	return 0;
}

static const struct pccx_fw_exec_ops mock_ops = {
	.info = m_info, .buf_alloc = m_alloc, .buf_free = m_free,
	.start = m_start, .poll = m_poll, .reset = m_reset,
};

/* ---- the host's side ---------------------------------------------------------------------- */

struct host {
	struct pccx_fw_server srv;
	struct pccx_fw_buf bufs[MAX_BUFS];
	uint8_t rx[FRAME], tx[FRAME];
	struct pccx_link_rx hrx;		/* the host's receiver of the replies */
	uint8_t hbuf[FRAME];
	uint8_t req[FRAME];
	struct pccx_link_hdr last;
	uint32_t last_job, seq;
	uint64_t now;
	struct mock m;
};

/* Everything the board writes must be reply frames. */
static int on_write(void *ctx, const void *buf, size_t n)
{
	struct host *h = ctx;
	const uint8_t *p = buf;
	size_t off = 0;

	while (off < n) {
		struct pccx_link_rx_event ev;

		off += pccx__link_rx_feed(&h->hrx, p + off, n - off, &ev);
		if (ev.kind == PCCX_LINK_RX_BAD)
			__builtin_trap();
		if (ev.kind == PCCX_LINK_RX_FRAME) {
			h->last = ev.hdr;
			if (ev.hdr.type == PCCX_LINK_SUBMIT && ev.hdr.len >= 4)
				h->last_job = pccx__le32_get(ev.payload);
		}
	}
	return 0;
}

/* The script's bytes, read past its end as zeros. */
struct script {
	const uint8_t *p;
	size_t n, at;
};

static uint8_t u8(struct script *s)
{
	return s->at < s->n ? s->p[s->at++] : 0;
}

static uint32_t u16(struct script *s)
{
	uint32_t lo = u8(s);

	return lo | (uint32_t)u8(s) << 8;
}

static void send(struct host *h, uint8_t type, uint32_t len)
{
	size_t n = pccx__link_seal(h->req, type, 0, ++h->seq, len);

	pccx__fw_server_feed(&h->srv, h->req, n, h->now);
}

static uint8_t *payload(struct host *h)
{
	return h->req + PCCX_LINK_HDR;
}

static void step(struct host *h, struct script *s)
{
	uint8_t op = u8(s), img[128], *p = payload(h);
	uint32_t n, i, k;

	switch (op & 7) {
	case 0:	/* noise, straight onto the link */
		n = u8(s);
		if (n > s->n - s->at)
			n = (uint32_t)(s->n - s->at);
		pccx__fw_server_feed(&h->srv, s->p + s->at, n, h->now);
		s->at += n;
		break;
	case 1:
	case 2:	/* a well-framed request: a known type (or any byte), a payload from the script */
		k = u8(s);
		n = u16(s) % 600;
		for (i = 0; i < n; i++)
			p[i] = u8(s);
		send(h, (uint8_t)(k & 0x80 ? k : k % PCCX_LINK_STATS + 1), n);
		break;
	case 3:	/* time passes: jobs advance, WAITs fall due, a stopped frame is dropped */
		h->now += (uint64_t)u8(s) * 20;
		pccx__fw_server_poll(&h->srv, h->now);
		break;
	case 4:	/* UPLOAD of the valid copy job, one byte changed, to a buffer */
		k = u8(s);
		i = u8(s);
		n = t_copy_image(img, i, u8(s));
		i = u16(s);
		img[i % n] ^= u8(s);
		memset(p, 0, PCCX_LINK_UPLOAD_HDR);
		pccx__le32_put(p, k);
		pccx__le64_put(p + 8, u8(s) & 0xf8);
		memcpy(p + PCCX_LINK_UPLOAD_HDR, img, n);
		send(h, PCCX_LINK_UPLOAD, PCCX_LINK_UPLOAD_HDR + n);
		break;
	case 5:	/* SUBMIT of the image in a buffer */
		memset(p, 0, PCCX_LINK_SUBMIT_REQ);
		pccx__le32_put(p, u8(s));
		pccx__le32_put(p + 4, u8(s));
		pccx__le64_put(p + 8, u8(s) & 0xf8);
		pccx__le64_put(p + 16, t_copy_image(img, 0, 0) + (u8(s) & 0x18) - 8);
		send(h, PCCX_LINK_SUBMIT, PCCX_LINK_SUBMIT_REQ);
		break;
	case 6:	/* WAIT for the job the board gave last (or another), at once or later */
		k = u8(s);
		pccx__le32_put(p, k & 1 ? h->last_job : k);
		pccx__le32_put(p + 4, k & 2 ? u8(s) : 0);
		send(h, PCCX_LINK_WAIT, PCCX_LINK_WAIT_REQ);
		break;
	default:	/* BUF_CREATE: a size near the limits, an access (host-only included) */
		memset(p, 0, PCCX_LINK_CREATE_REQ);
		k = u8(s);
		pccx__le64_put(p, k & 0x80 ? (uint64_t)u16(s) << (k & 15) : u16(s) % 512 + 1);
		pccx__le32_put(p + 8, k & 3);
		send(h, PCCX_LINK_BUF_CREATE, PCCX_LINK_CREATE_REQ);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct host h;
	struct pccx_fw_server_cfg c = { 0 };
	struct script s = { data, size, 0 };
	unsigned steps = 0;

	memset(&h, 0, sizeof(h));
	c.exec = &mock_ops;
	c.exec_ctx = &h.m;
	c.write = on_write;
	c.write_ctx = &h;
	c.rx = h.rx;
	c.tx = h.tx;
	c.buf_size = FRAME;
	c.bufs = h.bufs;
	c.max_bufs = MAX_BUFS;
	c.name = "fuzz-board";
	pccx__link_rx_init(&h.hrx, h.hbuf, PCCX_LINK_MIN_PAYLOAD, true);
	if (pccx__fw_server_init(&h.srv, &c))
		__builtin_trap();
	while (s.at < s.n && steps++ < 4096)
		step(&h, &s);

	/* a new owner: everything is freed and the board answers */
	h.now += PCCX_LINK_IDLE_MS + 1;
	pccx__fw_server_poll(&h.srv, h.now);
	memset(payload(&h), 0, PCCX_LINK_RESET_REQ);
	pccx__le32_put(payload(&h), PCCX_LINK_RESET_FREE_ALL);
	send(&h, PCCX_LINK_RESET, PCCX_LINK_RESET_REQ);
	if (h.last.type != PCCX_LINK_RESET || h.last.seq != h.seq || h.m.live)
		__builtin_trap();
	return 0;
}
