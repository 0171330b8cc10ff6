// SPDX-License-Identifier: MIT
/*
 * The board's link server (pccx_fw.h): bytes in, one reply per request out. Frames come from
 * the shared receiver (link_wire.c); each whole one is checked for its exact payload size and
 * handed to its message's handler; every refusal, and every frame the receiver rejects, is an
 * error reply, after which the server is ready for the next frame (docs/link.md).
 */
#include "fw_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the job image is read in place: the board must be little-endian"
#endif

int pccx__fw_server_init(struct pccx_fw_server *s, const struct pccx_fw_server_cfg *cfg)
{
	uint32_t i;

	if (!s || !cfg || !cfg->exec || !cfg->write || !cfg->rx || !cfg->tx || !cfg->bufs ||
	    !cfg->max_bufs || cfg->buf_size < PCCX_LINK_OVERHEAD + PCCX_LINK_MIN_PAYLOAD ||
	    cfg->buf_size > PCCX_LINK_OVERHEAD + PCCX_LINK_MAX_PAYLOAD)
		return -1;
	__builtin_memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (!s->cfg.idle_ms)
		s->cfg.idle_ms = PCCX_LINK_IDLE_MS;
	if (!s->cfg.job_timeout_ms)
		s->cfg.job_timeout_ms = PCCX_LINK_JOB_TIMEOUT_MS;
	s->max_payload = cfg->buf_size - PCCX_LINK_OVERHEAD;
	pccx__link_rx_init(&s->rx, cfg->rx, s->max_payload, false);
	for (i = 0; i < cfg->max_bufs; i++)
		__builtin_memset(&cfg->bufs[i], 0, sizeof(cfg->bufs[i]));
	s->next_job_id = 1;
	return 0;
}

struct pccx_fw_buf *pccx__fw_buf_find(struct pccx_fw_server *s, uint32_t handle)
{
	uint32_t i;

	if (!handle)
		return NULL;
	for (i = 0; i < s->cfg.max_bufs; i++)
		if (s->cfg.bufs[i].handle == handle)
			return &s->cfg.bufs[i];
	return NULL;
}

void pccx__fw_send(struct pccx_fw_server *s, uint8_t type, uint32_t seq, uint32_t len)
{
	size_t n = pccx__link_seal(s->cfg.tx, type, PCCX_LINK_F_REPLY, seq, len);

	if (s->cfg.write(s->cfg.write_ctx, s->cfg.tx, n) < 0)
		s->st.write_failures++;
}

static void send_error(struct pccx_fw_server *s, uint32_t seq, uint32_t type,
		       const struct pccx_fw_refusal *why)
{
	uint8_t *p = pccx__fw_reply_payload(s);
	uint32_t n = 0;

	pccx__le32_put(p, (uint32_t)why->code);
	pccx__le32_put(p + 4, type);
	pccx__le32_put(p + 8, why->a0);
	pccx__le32_put(p + 12, why->a1);
	pccx__le32_put(p + 16, why->a2);
	pccx__le32_put(p + 20, (uint32_t)why->a3);
	pccx__le64_put(p + 24, why->a4);
	pccx__le64_put(p + 32, why->a5);
	if (why->msg)
		while (why->msg[n] && n < PCCX_LINK_ERR_MSG) {
			p[PCCX_LINK_ERR_BYTES + n] = (uint8_t)why->msg[n];
			n++;
		}
	s->st.errors++;
	s->st.last_err = (uint32_t)why->code;
	s->st.last_type = type;
	pccx__fw_send(s, PCCX_LINK_ERROR, seq, PCCX_LINK_ERR_BYTES + n);
}

int pccx__fw_wait_payload(struct pccx_fw_server *s, uint32_t status)
{
	const struct pccx_fw_outcome *o = &s->outcome;
	uint8_t *p = pccx__fw_reply_payload(s);
	bool final = status != PCCX_LINK_JOB_RUNNING;

	pccx__le32_put(p, s->job_id);
	pccx__le32_put(p + 4, status);
	pccx__le32_put(p + 8, final ? o->hw_error : 0);
	pccx__le32_put(p + 12, final ? o->fault_index : 0);
	pccx__le64_put(p + 16, final ? o->error_info : 0);
	pccx__le64_put(p + 24, o->retired);
	pccx__le64_put(p + 32, o->start_ns);
	pccx__le64_put(p + 40, final ? o->end_ns : 0);
	pccx__le64_put(p + 48, o->mmio);
	pccx__le64_put(p + 56, o->cycles);
	return PCCX_LINK_WAIT_REP;
}

/* Answer a pending WAIT now: with the final outcome (and reap the job), or RUNNING. */
static void answer_wait(struct pccx_fw_server *s)
{
	uint32_t status = s->job_final ? s->outcome.status : PCCX_LINK_JOB_RUNNING;

	s->wait_pending = false;
	pccx__fw_send(s, PCCX_LINK_WAIT, s->wait_seq, (uint32_t)pccx__fw_wait_payload(s, status));
	if (s->job_final)
		s->job_active = false;
}

typedef int (*handler_fn)(struct pccx_fw_server *s, const struct pccx_fw_req *r,
			  struct pccx_fw_refusal *why);

/* Each message's handler and payload size: exactly `size` bytes, or at least `size` (PING,
 * UPLOAD: the data follows) when `fixed` is false. */
static const struct {
	handler_fn fn;
	uint32_t size;
	bool fixed;
} handlers[] = {
	[PCCX_LINK_INFO] = { pccx__fw_on_info, 0, true },
	[PCCX_LINK_PING] = { pccx__fw_on_ping, 0, false },
	[PCCX_LINK_BUF_CREATE] = { pccx__fw_on_create, PCCX_LINK_CREATE_REQ, true },
	[PCCX_LINK_BUF_FREE] = { pccx__fw_on_free, PCCX_LINK_FREE_REQ, true },
	[PCCX_LINK_UPLOAD] = { pccx__fw_on_upload, PCCX_LINK_UPLOAD_HDR + 1, false },
	[PCCX_LINK_DOWNLOAD] = { pccx__fw_on_download, PCCX_LINK_DOWNLOAD_REQ, true },
	[PCCX_LINK_SUBMIT] = { pccx__fw_on_submit, PCCX_LINK_SUBMIT_REQ, true },
	[PCCX_LINK_WAIT] = { pccx__fw_on_wait, PCCX_LINK_WAIT_REQ, true },
	[PCCX_LINK_RESET] = { pccx__fw_on_reset, PCCX_LINK_RESET_REQ, true },
	[PCCX_LINK_STATS] = { pccx__fw_on_stats, 0, true },
};

static int dispatch(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		    struct pccx_fw_refusal *why)
{
	uint32_t t = r->hdr->type;

	if (t >= sizeof(handlers) / sizeof(handlers[0]) || !handlers[t].fn)
		return pccx__fw_refuse(why, PCCX_LINK_E_TYPE, t, 0, "unknown message type");
	if (handlers[t].fixed ? r->len != handlers[t].size : r->len < handlers[t].size)
		return pccx__fw_refuse(why, PCCX_LINK_E_LENGTH, r->len, handlers[t].size,
				       handlers[t].fixed ? "payload size wrong for the message" :
				       "payload shorter than the message needs");
	return handlers[t].fn(s, r, why);
}

static void handle_frame(struct pccx_fw_server *s, const struct pccx_link_rx_event *ev,
			 uint64_t now_ms)
{
	struct pccx_fw_req r = { &ev->hdr, ev->payload, ev->hdr.len, now_ms };
	struct pccx_fw_refusal why;
	int n;

	if (s->wait_pending)
		answer_wait(s);
	s->st.handled++;
	n = dispatch(s, &r, &why);
	if (n == PCCX_FW_REFUSED)
		send_error(s, ev->hdr.seq, ev->hdr.type, &why);
	else if (n >= 0)
		pccx__fw_send(s, ev->hdr.type, ev->hdr.seq, (uint32_t)n);
}

/* A frame the receiver refused: the reply names why, with the seq when the header was good. */
static void handle_bad(struct pccx_fw_server *s, const struct pccx_link_rx_event *ev)
{
	struct pccx_fw_refusal why;
	uint64_t a4 = 0, a5 = 0;
	const char *msg = "";

	switch (ev->err) {
	case PCCX_LINK_E_HEADER_CRC:
		msg = "header CRC mismatch";
		break;
	case PCCX_LINK_E_PAYLOAD_CRC:
		msg = "payload CRC mismatch";
		break;
	case PCCX_LINK_E_VERSION:
		a4 = PCCX_LINK_VERSION_MIN;
		a5 = PCCX_LINK_VERSION_MAX;
		msg = "protocol version not spoken";
		break;
	case PCCX_LINK_E_FLAGS:
		a4 = ev->hdr.flags;
		msg = "undefined or REPLY flag on a request";
		break;
	case PCCX_LINK_E_TOO_LONG:
		a4 = ev->hdr.len;
		a5 = s->max_payload;
		msg = "payload longer than max_payload";
		break;
	default:
		msg = "frame stopped for longer than the idle timeout";
		break;
	}
	pccx__fw_refuse(&why, ev->err, a4, a5, msg);
	s->st.handled++;
	send_error(s, ev->have_hdr ? ev->hdr.seq : 0, ev->have_hdr ? ev->hdr.type : 0, &why);
}

void pccx__fw_server_feed(struct pccx_fw_server *s, const uint8_t *in, size_t n, uint64_t now_ms)
{
	struct pccx_link_rx_event ev;

	if (n)
		s->last_byte_ms = now_ms;
	while (n) {
		size_t used = pccx__link_rx_feed(&s->rx, in, n, &ev);

		in += used;
		n -= used;
		if (ev.kind == PCCX_LINK_RX_FRAME)
			handle_frame(s, &ev, now_ms);
		else if (ev.kind == PCCX_LINK_RX_BAD)
			handle_bad(s, &ev);
	}
}

/* Engine rounds per poll: enough to keep a device fed, few enough to read the link often. */
#define POLL_ROUNDS 256

void pccx__fw_server_poll(struct pccx_fw_server *s, uint64_t now_ms)
{
	struct pccx_link_rx_event ev;
	int i;

	for (i = 0; i < POLL_ROUNDS && s->job_active && !s->job_final; i++) {
		uint32_t st = s->cfg.exec->poll(s->cfg.exec_ctx, &s->outcome);

		if (st != PCCX_LINK_JOB_RUNNING) {
			s->outcome.status = st;
			s->job_final = true;
			s->st.jobs_done++;
			if (s->outcome.end_ns > s->outcome.start_ns)
				s->st.busy_ns += s->outcome.end_ns - s->outcome.start_ns;
		}
	}
	if (s->wait_pending && (s->job_final || now_ms >= s->wait_deadline_ms))
		answer_wait(s);
	if (pccx__link_rx_partial(&s->rx) && now_ms - s->last_byte_ms >= s->cfg.idle_ms &&
	    pccx__link_rx_idle(&s->rx, &ev))
		handle_bad(s, &ev);
}

void pccx__fw_server_reconnected(struct pccx_fw_server *s)
{
	pccx__link_rx_init(&s->rx, s->cfg.rx, s->max_payload, false);
	s->wait_pending = false;
}

uint32_t pccx__fw_server_read_timeout(const struct pccx_fw_server *s)
{
	if (s->job_active && !s->job_final)
		return 0;
	return s->wait_pending || pccx__link_rx_partial(&s->rx) ? 5 : 50;
}
