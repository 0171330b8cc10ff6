// SPDX-License-Identifier: MIT
/*
 * The wire format's code (pccx_link.h): CRC-32, sealing a frame, and the receiver's state
 * machine with the resynchronisation rule of docs/link.md. Shared by the board and the host.
 */
#include "pccx_link.h"

/* CRC-32 four bits at a time: a 16-entry table keeps the code small for the board. */
static const uint32_t crc_nibble[16] = {
	0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu, 0x76dc4190u, 0x6b6b51f4u,
	0x4db26158u, 0x5005713cu, 0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
	0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
};

uint32_t pccx__link_crc32(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;

	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ crc_nibble[crc & 15];
		crc = (crc >> 4) ^ crc_nibble[crc & 15];
	}
	return ~crc;
}

size_t pccx__link_seal(uint8_t *frame, uint8_t type, uint16_t flags, uint32_t seq, uint32_t len)
{
	pccx__le32_put(frame, PCCX_LINK_MAGIC);
	frame[4] = PCCX_LINK_VERSION;
	frame[5] = type;
	pccx__le16_put(frame + 6, flags);
	pccx__le32_put(frame + 8, seq);
	pccx__le32_put(frame + 12, len);
	pccx__le32_put(frame + 16, pccx__link_crc32(0, frame, 16));
	pccx__le32_put(frame + PCCX_LINK_HDR + len,
		       pccx__link_crc32(0, frame + PCCX_LINK_HDR, len));
	return PCCX_LINK_OVERHEAD + (size_t)len;
}

static const uint8_t magic[4] = { 'P', 'C', 'X', 'L' };

void pccx__link_rx_init(struct pccx_link_rx *rx, uint8_t *buf, uint32_t max_payload,
			bool accept_replies)
{
	__builtin_memset(rx, 0, sizeof(*rx));
	rx->buf = buf;
	rx->max_payload = max_payload;
	rx->accept_replies = accept_replies;
	rx->state = PCCX_LINK_RX_HUNT;
}

bool pccx__link_rx_partial(const struct pccx_link_rx *rx)
{
	return rx->state == PCCX_LINK_RX_HEADER || rx->state == PCCX_LINK_RX_PAYLOAD ||
	       rx->state == PCCX_LINK_RX_SKIP;
}

static void hunt_again(struct pccx_link_rx *rx)
{
	rx->state = PCCX_LINK_RX_HUNT;
	rx->have = 0;
}

/*
 * A header with a bad CRC: look for a magic in its bytes after the first one, so a frame that
 * starts inside the rejected bytes is not lost. Bytes before it count as hunted.
 */
static void rescan_header(struct pccx_link_rx *rx)
{
	uint32_t k, m;

	for (k = 1; k < rx->have; k++) {
		for (m = 0; m < 4 && k + m < rx->have && rx->buf[k + m] == magic[m]; m++)
			;
		if (m == 4 || k + m == rx->have)
			break;
	}
	rx->st.hunted += k;
	rx->have -= k;
	__builtin_memmove(rx->buf, rx->buf + k, rx->have);
	rx->state = rx->have >= 4 ? PCCX_LINK_RX_HEADER : PCCX_LINK_RX_HUNT;
}

static void bad(struct pccx_link_rx_event *ev, int err, bool have_hdr)
{
	ev->kind = PCCX_LINK_RX_BAD;
	ev->err = err;
	ev->have_hdr = have_hdr;
}

/* The header is complete: check it and choose the next state. */
static void header_done(struct pccx_link_rx *rx, struct pccx_link_rx_event *ev)
{
	const uint8_t *b = rx->buf;
	struct pccx_link_hdr *h = &rx->hdr;
	uint16_t want = rx->accept_replies ? PCCX_LINK_F_REPLY : 0;

	if (pccx__le32_get(b + 16) != pccx__link_crc32(0, b, 16)) {
		rx->st.header_crc++;
		bad(ev, PCCX_LINK_E_HEADER_CRC, false);
		rescan_header(rx);
		return;
	}
	h->version = b[4];
	h->type = b[5];
	h->flags = pccx__le16_get(b + 6);
	h->seq = pccx__le32_get(b + 8);
	h->len = pccx__le32_get(b + 12);
	ev->hdr = *h;
	if (h->version < PCCX_LINK_VERSION_MIN || h->version > PCCX_LINK_VERSION_MAX)
		bad(ev, PCCX_LINK_E_VERSION, true);
	else if (h->flags != want)
		bad(ev, PCCX_LINK_E_FLAGS, true);
	else if (h->len > rx->max_payload)
		bad(ev, PCCX_LINK_E_TOO_LONG, true);
	else {
		rx->state = PCCX_LINK_RX_PAYLOAD;
		return;
	}
	/* the header is intact: its length is the sender's, so the frame is skipped whole */
	rx->st.skipped++;
	rx->state = PCCX_LINK_RX_SKIP;
	rx->skip = (uint64_t)h->len + 4;
	rx->have = 0;
}

static void payload_done(struct pccx_link_rx *rx, struct pccx_link_rx_event *ev)
{
	uint32_t len = rx->hdr.len;
	const uint8_t *p = rx->buf + PCCX_LINK_HDR;

	ev->hdr = rx->hdr;
	hunt_again(rx);
	if (pccx__le32_get(p + len) != pccx__link_crc32(0, p, len)) {
		rx->st.payload_crc++;
		bad(ev, PCCX_LINK_E_PAYLOAD_CRC, true);
		return;
	}
	rx->st.frames++;
	ev->kind = PCCX_LINK_RX_FRAME;
	ev->have_hdr = true;
	ev->payload = p;
}

static size_t take(struct pccx_link_rx *rx, const uint8_t *in, size_t n, uint32_t want)
{
	size_t k = want - rx->have;

	if (k > n)
		k = n;
	__builtin_memcpy(rx->buf + rx->have, in, k);
	rx->have += (uint32_t)k;
	return k;
}

/* One byte while hunting; the magic has no proper prefix that is also a suffix but "P". */
static void hunt_byte(struct pccx_link_rx *rx, uint8_t c)
{
	if (c == magic[rx->have]) {
		rx->buf[rx->have++] = c;
		if (rx->have == 4)
			rx->state = PCCX_LINK_RX_HEADER;
		return;
	}
	rx->st.hunted += rx->have;
	rx->have = 0;
	if (c == magic[0])
		rx->buf[rx->have++] = c;
	else
		rx->st.hunted++;
}

size_t pccx__link_rx_feed(struct pccx_link_rx *rx, const uint8_t *in, size_t n,
			  struct pccx_link_rx_event *ev)
{
	size_t i = 0;

	__builtin_memset(ev, 0, sizeof(*ev));
	while (ev->kind == PCCX_LINK_RX_NONE) {
		/* a header completed by a rescan is checked before more bytes are taken */
		if (rx->state == PCCX_LINK_RX_HEADER && rx->have == PCCX_LINK_HDR) {
			header_done(rx, ev);
			continue;
		}
		if (i == n)
			break;
		switch (rx->state) {
		case PCCX_LINK_RX_HUNT:
			hunt_byte(rx, in[i++]);
			break;
		case PCCX_LINK_RX_HEADER:
			i += take(rx, in + i, n - i, PCCX_LINK_HDR);
			break;
		case PCCX_LINK_RX_PAYLOAD:
			i += take(rx, in + i, n - i, PCCX_LINK_OVERHEAD + rx->hdr.len);
			if (rx->have == PCCX_LINK_OVERHEAD + rx->hdr.len)
				payload_done(rx, ev);
			break;
		default: {
			uint64_t k = rx->skip < n - i ? rx->skip : n - i;

			i += (size_t)k;
			rx->skip -= k;
			if (!rx->skip)
				hunt_again(rx);
			break;
		}
		}
	}
	return i;
}

bool pccx__link_rx_idle(struct pccx_link_rx *rx, struct pccx_link_rx_event *ev)
{
	int state = rx->state;

	__builtin_memset(ev, 0, sizeof(*ev));
	hunt_again(rx);
	if (state != PCCX_LINK_RX_HEADER && state != PCCX_LINK_RX_PAYLOAD)
		return false;   /* a skipped frame was answered already; a magic's prefix is noise */
	rx->st.truncated++;
	bad(ev, PCCX_LINK_E_TRUNCATED, state == PCCX_LINK_RX_PAYLOAD);
	ev->hdr = rx->hdr;
	return true;
}

const char *pccx__link_err_name(int err)
{
	static const char *const names[PCCX_LINK_E_COUNT] = {
		"NONE", "HEADER_CRC", "PAYLOAD_CRC", "VERSION", "FLAGS", "TOO_LONG", "TRUNCATED",
		"TYPE", "LENGTH", "INVALID", "HANDLE", "RANGE", "NOSPACE", "BUSY", "JOB",
		"VALIDATE", "NOJOB", "DEVICE",
	};

	return err >= 0 && err < PCCX_LINK_E_COUNT ? names[err] : "?";
}

const char *pccx__link_type_name(int type)
{
	static const char *const names[] = {
		"?", "INFO", "PING", "BUF_CREATE", "BUF_FREE", "UPLOAD", "DOWNLOAD", "SUBMIT",
		"WAIT", "RESET", "STATS",
	};

	if (type == PCCX_LINK_ERROR)
		return "ERROR";
	return type > 0 && type < (int)(sizeof(names) / sizeof(names[0])) ? names[type] : "?";
}
