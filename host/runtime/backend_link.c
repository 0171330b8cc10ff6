// SPDX-License-Identifier: MIT
/*
 * The link backend's requests and buffers (backend_link.h, docs/link.md). One request is in
 * flight at a time; a reply is matched by its seq, so a stale reply (to a request that timed
 * out) is read and dropped. After a timeout the link is resynchronised before the next
 * request: wait until the board has been quiet for longer than its idle timeout (it drops a
 * frame we left half sent), then PING until one comes back with its seq.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_link_int.h"
#include "diag.h"
#include "pccx_regs.h"

#define REQ_TIMEOUT_MS 10000u
#define RESYNC_TRIES   3

static int reset_request(struct pccx_link_backend *b, uint32_t flags, pccx_diag *d);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int link_gone(struct pccx_link_backend *b, const char *doing, pccx_diag *d)
{
	b->dead = true;
	return pccx__fail(d, PCCX_ERR_IO, "%s: the link failed %s (board gone, cable unplugged or "
			  "the other end closed)", b->what, doing);
}

/* The board's refusal as a status and a message naming the request. */
static int refused(struct pccx_link_backend *b, uint8_t type, const uint8_t *p, uint32_t len,
		   pccx_diag *d)
{
	static const int status[PCCX_LINK_E_COUNT] = {
		[PCCX_LINK_E_HANDLE] = PCCX_ERR_NOT_FOUND, [PCCX_LINK_E_NOJOB] = PCCX_ERR_NOT_FOUND,
		[PCCX_LINK_E_RANGE] = PCCX_ERR_RANGE, [PCCX_LINK_E_NOSPACE] = PCCX_ERR_NOMEM,
		[PCCX_LINK_E_BUSY] = PCCX_ERR_BUSY, [PCCX_LINK_E_DEVICE] = PCCX_ERR_DEVICE,
		[PCCX_LINK_E_VALIDATE] = PCCX_ERR_VALIDATE,
	};
	char text[PCCX_LINK_ERR_MSG + 1];
	uint32_t code, n;
	int rc;

	if (len < PCCX_LINK_ERR_BYTES)
		return pccx__fail(d, PCCX_ERR_IO, "%s: an error reply to %s of %u bytes (at least %u)",
				  b->what, pccx__link_type_name(type), len, PCCX_LINK_ERR_BYTES);
	code = pccx__le32_get(p);
	n = len - PCCX_LINK_ERR_BYTES;
	if (n > PCCX_LINK_ERR_MSG)
		n = PCCX_LINK_ERR_MSG;
	memcpy(text, p + PCCX_LINK_ERR_BYTES, n);
	text[n] = 0;
	for (uint32_t i = 0; i < n; i++)
		if (text[i] < 0x20 || text[i] > 0x7e)
			text[i] = '?';
	rc = code < PCCX_LINK_E_COUNT && status[code] ? status[code] : PCCX_ERR_INVALID;
	if (code >= PCCX_LINK_E_HEADER_CRC && code <= PCCX_LINK_E_TRUNCATED)
		rc = PCCX_ERR_IO;
	return pccx__fail(d, rc, "%s: the board refused %s: %s (%s; values %llu, %llu)", b->what,
			  pccx__link_type_name(type), pccx__link_err_name((int)code), text,
			  (unsigned long long)pccx__le64_get(p + 24),
			  (unsigned long long)pccx__le64_get(p + 32));
}

/* Read until the reply with `seq` arrives; stale replies and noise are dropped. */
static int read_reply(struct pccx_link_backend *b, uint8_t type, uint32_t seq, uint64_t deadline,
		      struct link_reply *rep, pccx_diag *d)
{
	uint8_t in[4096];
	struct pccx_link_rx_event ev;

	for (;;) {
		uint64_t t = now_ms();
		size_t off = 0;
		int k;

		if (t >= deadline) {
			b->resync = true;
			return pccx__fail(d, PCCX_ERR_TIMEOUT, "%s: no reply to %s (seq %u) in time",
					  b->what, pccx__link_type_name(type), seq);
		}
		k = b->t.read(b->t.ctx, in, sizeof(in), (uint32_t)(deadline - t));
		if (k < 0)
			return link_gone(b, "while waiting for a reply", d);
		while (off < (size_t)k) {
			off += pccx__link_rx_feed(&b->rx, in + off, (size_t)k - off, &ev);
			if (ev.kind != PCCX_LINK_RX_FRAME || ev.hdr.seq != seq)
				continue;
			/* a reply ends the exchange: the board sends nothing unasked */
			if (ev.hdr.type == PCCX_LINK_ERROR) {
				rep->p = ev.payload;
				rep->len = ev.hdr.len;
				return 1;
			}
			if (ev.hdr.type != type)
				return pccx__fail(d, PCCX_ERR_IO, "%s: a %s reply to %s", b->what,
						  pccx__link_type_name(ev.hdr.type),
						  pccx__link_type_name(type));
			rep->p = ev.payload;
			rep->len = ev.hdr.len;
			return 0;
		}
	}
}

/* Quiet, then a PING that comes back: the board and this side agree on frame boundaries. */
static int resync(struct pccx_link_backend *b, pccx_diag *d)
{
	uint8_t in[4096], ping[PCCX_LINK_OVERHEAD];
	int i, k;

	/* the PING is framed apart: b->tx may hold the payload of the request to send next */
	for (i = 0; i < RESYNC_TRIES; i++) {
		struct link_reply rep;
		uint32_t seq;
		uint64_t deadline;
		size_t n;
		int rc;

		do
			k = b->t.read(b->t.ctx, in, sizeof(in), PCCX_LINK_IDLE_MS + 100);
		while (k > 0);
		if (k < 0)
			return link_gone(b, "while resynchronising", d);
		pccx__link_rx_init(&b->rx, b->rxbuf, b->max_payload, true);
		seq = ++b->seq ? b->seq : ++b->seq;
		n = pccx__link_seal(ping, PCCX_LINK_PING, 0, seq, 0);
		if (b->t.write(b->t.ctx, ping, n) < 0)
			return link_gone(b, "sending a PING", d);
		deadline = now_ms() + 2000;
		rc = read_reply(b, PCCX_LINK_PING, seq, deadline, &rep, NULL);
		if (b->dead)
			return link_gone(b, "while resynchronising", d);
		if (!rc) {
			b->resync = false;
			return 0;
		}
	}
	return pccx__fail(d, PCCX_ERR_TIMEOUT, "%s: the board does not answer (%d PINGs after "
			  "a quiet link went unanswered)", b->what, RESYNC_TRIES);
}

int pccx__link_request(struct pccx_link_backend *b, uint8_t type, uint32_t len, uint32_t want,
		       uint32_t timeout_ms, struct link_reply *rep, pccx_diag *d)
{
	int tries, rc = 0;

	if (b->dead)
		return pccx__fail(d, PCCX_ERR_IO, "%s: the link is closed (it failed earlier)",
				  b->what);
	/* a request the board saw damaged was not carried out: sending it again is safe */
	for (tries = 0; tries < 3; tries++) {
		uint32_t seq;
		size_t n;

		if (b->resync && (rc = resync(b, d)))
			return rc;
		seq = ++b->seq ? b->seq : ++b->seq;
		n = pccx__link_seal(b->tx, type, 0, seq, len);
		if (b->t.write(b->t.ctx, b->tx, n) < 0)
			return link_gone(b, "sending a request", d);
		if (!timeout_ms)
			timeout_ms = b->timeout_ms ? b->timeout_ms : REQ_TIMEOUT_MS;
		rc = read_reply(b, type, seq, now_ms() + timeout_ms, rep, d);
		if (rc <= 0)
			break;
		rc = refused(b, type, rep->p, rep->len, d);
		if (rc != PCCX_ERR_IO)
			return rc;
	}
	if (!rc && rep->len < want)
		return pccx__fail(d, PCCX_ERR_IO, "%s: a %s reply of %u bytes (%u expected)", b->what,
				  pccx__link_type_name(type), rep->len, want);
	return rc;
}

struct link_buf *pccx__link_buf(struct pccx_link_backend *b, uint32_t handle)
{
	uint32_t i;

	for (i = 0; i < b->n_buf; i++)
		if (b->buf[i].handle == handle)
			return &b->buf[i];
	return NULL;
}

static void read_board(struct pccx_link_board *bd, const uint8_t *p)
{
	bd->version_min = pccx__le16_get(p);
	bd->version_max = pccx__le16_get(p + 2);
	bd->max_payload = pccx__le32_get(p + 4);
	bd->max_buffers = pccx__le32_get(p + 8);
	bd->flags = pccx__le32_get(p + 12);
	bd->job_timeout_ms = pccx__le32_get(p + 92);
	memcpy(bd->name, p + 96, PCCX_LINK_NAME_BYTES);
	bd->name[PCCX_LINK_NAME_BYTES - 1] = 0;
}

static int info_request(struct pccx_link_backend *b, struct link_reply *rep, pccx_diag *d)
{
	return pccx__link_request(b, PCCX_LINK_INFO, 0, PCCX_LINK_INFO_BYTES, 0, rep, d);
}

int pccx__link_backend_create(const struct pccx_link_transport *t, const char *what,
			      struct pccx_link_backend **out, pccx_diag *d)
{
	struct pccx_link_backend *b = calloc(1, sizeof(*b));
	struct link_reply rep;
	int rc;

	*out = NULL;
	if (!b) {
		if (t->close)
			t->close(t->ctx);
		return pccx__fail(d, PCCX_ERR_NOMEM, "link backend: out of memory");
	}
	b->t = *t;
	snprintf(b->what, sizeof(b->what), "%s", what ? what : "link");
	b->tx = malloc(PCCX_LINK_OVERHEAD + PCCX_LINK_MAX_PAYLOAD);
	b->rxbuf = malloc(PCCX_LINK_OVERHEAD + PCCX_LINK_MAX_PAYLOAD);
	if (!b->tx || !b->rxbuf) {
		pccx__link_backend_destroy(b);
		return pccx__fail(d, PCCX_ERR_NOMEM, "link backend: out of memory");
	}
	b->max_payload = PCCX_LINK_MAX_PAYLOAD;
	pccx__link_rx_init(&b->rx, b->rxbuf, b->max_payload, true);
	/* whatever a previous user left half sent is dropped by the board's idle rule */
	b->resync = true;
	rc = info_request(b, &rep, d);
	if (!rc) {
		read_board(&b->board, rep.p);
		if (b->board.version_min > PCCX_LINK_VERSION ||
		    b->board.version_max < PCCX_LINK_VERSION)
			rc = pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: the board speaks protocol "
					"versions %u..%u, this library %u", b->what,
					b->board.version_min, b->board.version_max,
					PCCX_LINK_VERSION);
		else if (b->board.max_payload < PCCX_LINK_MIN_PAYLOAD ||
			 b->board.max_payload > PCCX_LINK_MAX_PAYLOAD)
			rc = pccx__fail(d, PCCX_ERR_IO, "%s: the board's max_payload %u is outside "
					"%u..%u", b->what, b->board.max_payload,
					PCCX_LINK_MIN_PAYLOAD, PCCX_LINK_MAX_PAYLOAD);
		else
			b->max_payload = b->board.max_payload;
	}
	/* the board's new owner: what an earlier host left there goes */
	if (!rc)
		rc = reset_request(b, PCCX_LINK_RESET_FREE_ALL, d);
	if (rc) {
		pccx__link_backend_destroy(b);
		return rc;
	}
	*out = b;
	return 0;
}

void pccx__link_backend_destroy(struct pccx_link_backend *b)
{
	uint32_t i;

	if (!b)
		return;
	/* the board's buffers are freed while the link works (the next owner's RESET frees
	 * them otherwise) */
	if (!b->dead && !b->resync && b->tx) {
		int rc = 0;

		for (i = 0; i < b->n_buf && !rc; i++)
			rc = pccx__link_free_handle(b, b->buf[i].handle, NULL);
		if (b->img_handle && !rc)
			(void)pccx__link_free_handle(b, b->img_handle, NULL);
	}
	for (i = 0; i < b->n_buf; i++) {
		free(b->buf[i].host);
		free(b->buf[i].sum);
	}
	if (b->t.close)
		b->t.close(b->t.ctx);
	free(b->buf);
	free(b->img);
	free(b->tx);
	free(b->rxbuf);
	free(b);
}

void pccx__link_backend_set_timeout(struct pccx_link_backend *b, uint32_t ms)
{
	b->timeout_ms = ms;
}

const struct pccx_link_board *pccx__link_backend_board(const struct pccx_link_backend *b)
{
	return &b->board;
}

int pccx__link_backend_info(struct pccx_link_backend *b, struct pccx_info *info)
{
	struct link_reply rep;
	const uint8_t *p;

	memset(info, 0, sizeof(*info));
	if (info_request(b, &rep, NULL))
		return PCCX_ERR_IO;
	p = rep.p;
	read_board(&b->board, p);
	info->hw_id = pccx__le64_get(p + 40);
	info->flags = (info->hw_id >> 32 == PCCX_ID_MAGIC ? PCCX_INFO_EXTENDED : 0) |
		      (b->board.flags & PCCX_LINK_INFO_SIMULATED ? PCCX_INFO_SIMULATED : 0) |
		      (b->board.flags & PCCX_LINK_INFO_WEDGED ? PCCX_INFO_WEDGED : 0);
	info->features = pccx__le64_get(p + 48);
	info->caps = pccx__le64_get(p + 56);
	info->clocks = pccx__le64_get(p + 64);
	info->dma_addr_bits = pccx__le32_get(p + 72);
	info->l2_words = pccx__le32_get(p + 76);
	info->max_insn = pccx__le32_get(p + 80);
	info->max_dma = pccx__le32_get(p + 84);
	info->max_stream = pccx__le32_get(p + 88);
	info->max_jobs = 1;
	info->max_bo_size = pccx__le64_get(p + 16);
	info->fd_quota = info->global_quota = pccx__le64_get(p + 24);
	info->global_used = info->global_quota - pccx__le64_get(p + 32);
	info->job_timeout_ns = (uint64_t)b->board.job_timeout_ms * 1000000u;
	info->jobs_done = pccx__le64_get(p + 128);
	info->resets = pccx__le64_get(p + 136);
	info->busy_ns = pccx__le64_get(p + 144);
	return 0;
}

int pccx__link_backend_stats(struct pccx_link_backend *b, struct pccx_link_stats *st,
			     pccx_diag *d)
{
	struct link_reply rep;
	int rc = pccx__link_request(b, PCCX_LINK_STATS, 0, PCCX_LINK_STATS_BYTES, 0, &rep, d);

	if (rc)
		return rc;
	st->handled = pccx__le64_get(rep.p);
	st->hunted = pccx__le64_get(rep.p + 8);
	st->header_crc = pccx__le64_get(rep.p + 16);
	st->payload_crc = pccx__le64_get(rep.p + 24);
	st->skipped = pccx__le64_get(rep.p + 32);
	st->truncated = pccx__le64_get(rep.p + 40);
	st->errors = pccx__le64_get(rep.p + 48);
	st->last_err = (uint32_t)pccx__le64_get(rep.p + 56);
	st->last_type = (uint32_t)(pccx__le64_get(rep.p + 56) >> 32);
	return 0;
}

int pccx__link_backend_ping(struct pccx_link_backend *b, uint32_t n, pccx_diag *d)
{
	struct link_reply rep;
	uint8_t *p = b->tx + PCCX_LINK_HDR;
	uint32_t i;
	int rc;

	if (n > b->max_payload)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: a PING of %u bytes (max_payload %u)",
				  b->what, n, b->max_payload);
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131u + 7u);
	rc = pccx__link_request(b, PCCX_LINK_PING, n, n, 0, &rep, d);
	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		if (rep.p[i] != (uint8_t)(i * 131u + 7u))
			return pccx__fail(d, PCCX_ERR_IO, "%s: PING came back changed at byte %u",
					  b->what, i);
	return rep.len == n ? 0 : pccx__fail(d, PCCX_ERR_IO, "%s: PING of %u bytes came back "
					      "with %u", b->what, n, rep.len);
}

static int reset_request(struct pccx_link_backend *b, uint32_t flags, pccx_diag *d)
{
	struct link_reply rep;
	int rc;

	memset(b->tx + PCCX_LINK_HDR, 0, PCCX_LINK_RESET_REQ);
	pccx__le32_put(b->tx + PCCX_LINK_HDR, flags);
	rc = pccx__link_request(b, PCCX_LINK_RESET, PCCX_LINK_RESET_REQ, PCCX_LINK_RESET_REP, 0,
				&rep, d);
	if (!rc && pccx__le32_get(rep.p))
		rc = pccx__fail(d, PCCX_ERR_DEVICE, "%s: the board's device did not come out of "
				"reset", b->what);
	return rc;
}

int pccx__link_backend_reset(struct pccx_link_backend *b, pccx_diag *d)
{
	return reset_request(b, 0, d);
}
