/* SPDX-License-Identifier: MIT */
/*
 * What the board-side cmocka tests share: a server whose replies are captured and parsed by
 * the host's receiver, requests built as the host builds them, and a small valid job (a
 * 32-byte copy host -> L2 -> host) written as instruction words.
 */
#ifndef PCCX_FW_TEST_UTIL_H
#define PCCX_FW_TEST_UTIL_H

#include <string.h>

#include "fw_internal.h"
#include "pccx_isa.h"
#include "pccx_job.h"

#define T_PAYLOAD 8192u

struct t_link {
	struct pccx_fw_server srv;
	uint8_t rxb[PCCX_LINK_OVERHEAD + T_PAYLOAD], txb[PCCX_LINK_OVERHEAD + T_PAYLOAD];
	struct pccx_fw_buf bufs[4];
	/* replies as the host reads them */
	struct pccx_link_rx hrx;
	uint8_t hbuf[PCCX_LINK_OVERHEAD + T_PAYLOAD];
	unsigned n_replies;
	struct pccx_link_hdr hdr;       /* the last reply */
	uint8_t payload[T_PAYLOAD];
	uint8_t req[PCCX_LINK_OVERHEAD + T_PAYLOAD];
	uint32_t seq;
	uint64_t now;
};

static inline int t_capture(void *ctx, const void *buf, size_t n)
{
	struct t_link *l = ctx;
	const uint8_t *p = buf;
	size_t off = 0;

	while (off < n) {
		struct pccx_link_rx_event ev;

		off += pccx__link_rx_feed(&l->hrx, p + off, n - off, &ev);
		if (ev.kind == PCCX_LINK_RX_FRAME) {
			l->n_replies++;
			l->hdr = ev.hdr;
			memcpy(l->payload, ev.payload, ev.hdr.len);
		}
	}
	return 0;
}

static inline void t_link_init(struct t_link *l, const struct pccx_fw_exec_ops *ops, void *ctx,
			       uint32_t max_bufs)
{
	struct pccx_fw_server_cfg c = { 0 };

	memset(l, 0, sizeof(*l));
	c.exec = ops;
	c.exec_ctx = ctx;
	c.write = t_capture;
	c.write_ctx = l;
	c.rx = l->rxb;
	c.tx = l->txb;
	c.buf_size = sizeof(l->rxb);
	c.bufs = l->bufs;
	c.max_bufs = max_bufs;
	c.name = "test-board";
	pccx__link_rx_init(&l->hrx, l->hbuf, T_PAYLOAD, true);
	if (pccx__fw_server_init(&l->srv, &c))
		memset(&l->srv, 0xff, 1);   /* makes every later check fail loudly */
}

/* Send a request with `len` payload bytes (already at t_req(l)); returns its seq. */
static inline uint8_t *t_req(struct t_link *l)
{
	return l->req + PCCX_LINK_HDR;
}

static inline uint32_t t_send(struct t_link *l, uint8_t type, uint32_t len)
{
	size_t n = pccx__link_seal(l->req, type, 0, ++l->seq, len);

	pccx__fw_server_feed(&l->srv, l->req, n, l->now);
	return l->seq;
}

/* The error code of the last reply (0 when it was not an error). */
static inline uint32_t t_err(const struct t_link *l)
{
	return l->hdr.type == PCCX_LINK_ERROR ? pccx__le32_get(l->payload) : 0;
}

/* ---- a small valid job --------------------------------------------------------------------- */

static inline uint64_t t_w_memset(unsigned cache, unsigned entry, unsigned a, unsigned b,
				  unsigned c)
{
	return ((uint64_t)PCCX_OP_MEMSET << 60) | PCCX_PUT(C, cache, cache) |
	       PCCX_PUT(C, entry, entry) | PCCX_PUT(C, a, a) | PCCX_PUT(C, b, b) |
	       PCCX_PUT(C, c, c);
}

static inline uint64_t t_w_memcpy(bool from_host, bool to_host, uint32_t dest, uint32_t src,
				  uint32_t desc)
{
	return ((uint64_t)PCCX_OP_MEMCPY << 60) | PCCX_PUT(B, from_host, from_host) |
	       PCCX_PUT(B, to_host, to_host) | PCCX_PUT(B, dest, dest) | PCCX_PUT(B, src, src) |
	       PCCX_PUT(B, desc, desc) | PCCX_PUT(B, fshape, 0);
}

/*
 * The job image of a copy: 32 bytes of buffer `in` to L2 word 10, then to buffer `out`
 * (8 FP32 = two 16-byte L2 words). Returns its length (at most 32 + 3*8 + 2*24 bytes).
 */
static inline uint32_t t_copy_image(uint8_t *img, uint32_t in, uint32_t out)
{
	uint64_t w[3] = { t_w_memset(0, 0, 8, 1, 1), t_w_memcpy(true, false, 10, 0, 0),
			  t_w_memcpy(false, true, 0, 10, 1) };
	uint8_t *p = img + PCCX_LINK_JOB_HDR;
	int i;

	memset(img, 0, PCCX_LINK_JOB_HDR);
	memcpy(img, "PCCXJOB", 8);
	pccx__le32_put(img + 8, 1);
	pccx__le32_put(img + 12, 3);
	pccx__le32_put(img + 16, 2);
	for (i = 0; i < 3; i++, p += 8)
		pccx__le64_put(p, w[i]);
	pccx__le32_put(p, in);
	pccx__le32_put(p + 4, PCCX_DMA_TO_DEVICE);
	pccx__le64_put(p + 8, 0);
	pccx__le64_put(p + 16, 32);
	p += 24;
	pccx__le32_put(p, out);
	pccx__le32_put(p + 4, PCCX_DMA_FROM_DEVICE);
	pccx__le64_put(p + 8, 0);
	pccx__le64_put(p + 16, 32);
	return PCCX_LINK_JOB_HDR + 3 * 8 + 2 * 24;
}

#endif /* PCCX_FW_TEST_UTIL_H */
