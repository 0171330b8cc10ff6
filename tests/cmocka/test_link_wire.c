// SPDX-License-Identifier: MIT
/*
 * The link's receiver (firmware/core/link_wire.c) against malformed byte streams: noise,
 * damaged headers and payloads, foreign versions and flags, lengths beyond max_payload,
 * frames that stop, and a random storm; every good frame after the damage is delivered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "pccx_link.h"

#define MAXP 4096u

struct rxt {
	struct pccx_link_rx rx;
	uint8_t buf[PCCX_LINK_OVERHEAD + MAXP];
	struct pccx_link_rx_event ev[64];
	uint8_t payload[64][64];
	unsigned n;
};

static void rxt_init(struct rxt *t, bool replies)
{
	memset(t, 0, sizeof(*t));
	pccx__link_rx_init(&t->rx, t->buf, MAXP, replies);
}

/* Feed every byte (in pieces of `step`), recording each event with its payload. */
static void feed(struct rxt *t, const uint8_t *p, size_t n, size_t step)
{
	size_t at = 0;

	while (at < n) {
		size_t k = n - at < step ? n - at : step;
		size_t off = 0;

		while (off < k) {
			struct pccx_link_rx_event ev;

			off += pccx__link_rx_feed(&t->rx, p + at + off, k - off, &ev);
			if (ev.kind == PCCX_LINK_RX_NONE)
				continue;
			if (t->n < 64) {   /* a storm makes more: they are counted */
				t->ev[t->n] = ev;
				if (ev.kind == PCCX_LINK_RX_FRAME && ev.hdr.len <= 64)
					memcpy(t->payload[t->n], ev.payload, ev.hdr.len);
			}
			t->n++;
		}
		at += k;
	}
}

static size_t mk(uint8_t *f, uint8_t type, uint16_t flags, uint32_t seq, const char *s)
{
	size_t len = strlen(s);

	memcpy(f + PCCX_LINK_HDR, s, len);
	return pccx__link_seal(f, type, flags, seq, (uint32_t)len);
}

static void crc_of_the_check_string(void **state)
{
	(void)state;
	/* the IEEE CRC-32 check value of "123456789" */
	assert_int_equal(pccx__link_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(pccx__link_crc32(0, "", 0), 0);
	assert_int_equal(pccx__link_crc32(pccx__link_crc32(0, "1234", 4), "56789", 5),
			 0xcbf43926u);
}

static void seal_writes_the_documented_layout(void **state)
{
	uint8_t f[64];
	size_t n = mk(f, PCCX_LINK_PING, 0, 0x01020304u, "abc");

	(void)state;
	assert_int_equal(n, PCCX_LINK_OVERHEAD + 3);
	assert_memory_equal(f, "PCXL", 4);
	assert_int_equal(f[4], 1);
	assert_int_equal(f[5], PCCX_LINK_PING);
	assert_int_equal(pccx__le16_get(f + 6), 0);
	assert_int_equal(pccx__le32_get(f + 8), 0x01020304u);
	assert_int_equal(pccx__le32_get(f + 12), 3);
	assert_int_equal(pccx__le32_get(f + 16), pccx__link_crc32(0, f, 16));
	assert_int_equal(pccx__le32_get(f + 23), pccx__link_crc32(0, "abc", 3));
}

static void frames_between_noise_byte_by_byte(void **state)
{
	static struct rxt t;
	uint8_t s[512];
	size_t n = 0;
	int i;

	(void)state;
	rxt_init(&t, false);
	for (i = 0; i < 3; i++) {
		memcpy(s + n, "PCX#PPC\x00xyz", 11);   /* noise, with broken starts of a magic */
		n += 11;
		n += mk(s + n, PCCX_LINK_PING, 0, 10 + (uint32_t)i, i == 1 ? "" : "hello");
	}
	feed(&t, s, n, 1);
	assert_int_equal(t.n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(t.ev[i].kind, PCCX_LINK_RX_FRAME);
		assert_int_equal(t.ev[i].hdr.seq, 10 + i);
		assert_int_equal(t.ev[i].hdr.len, i == 1 ? 0 : 5);
	}
	assert_memory_equal(t.payload[2], "hello", 5);
	assert_int_equal(t.rx.st.hunted, 33);
	assert_int_equal(t.rx.st.frames, 3);
}

static void damaged_header_rescans_its_own_bytes(void **state)
{
	static struct rxt t;
	uint8_t s[256];
	size_t n;

	(void)state;
	rxt_init(&t, false);
	/* a magic, then at once a whole frame: the header read is damaged, the frame is in it */
	memcpy(s, "PCXL", 4);
	n = 4 + mk(s + 4, PCCX_LINK_INFO, 0, 7, "");
	n += mk(s + n, PCCX_LINK_PING, 0, 8, "z");
	feed(&t, s, n, 1000);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.ev[0].kind, PCCX_LINK_RX_BAD);
	assert_int_equal(t.ev[0].err, PCCX_LINK_E_HEADER_CRC);
	assert_false(t.ev[0].have_hdr);
	assert_int_equal(t.ev[1].kind, PCCX_LINK_RX_FRAME);
	assert_int_equal(t.ev[1].hdr.seq, 7);
	assert_int_equal(t.ev[2].hdr.seq, 8);
}

static void damaged_payload_names_its_seq(void **state)
{
	static struct rxt t;
	uint8_t s[256];
	size_t n = mk(s, PCCX_LINK_PING, 0, 21, "payload");

	(void)state;
	rxt_init(&t, false);
	s[PCCX_LINK_HDR + 3] ^= 0x10;
	n += mk(s + n, PCCX_LINK_PING, 0, 22, "next");
	feed(&t, s, n, 5);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.ev[0].err, PCCX_LINK_E_PAYLOAD_CRC);
	assert_true(t.ev[0].have_hdr);
	assert_int_equal(t.ev[0].hdr.seq, 21);
	assert_int_equal(t.ev[1].kind, PCCX_LINK_RX_FRAME);
	assert_int_equal(t.ev[1].hdr.seq, 22);
}

/* Rewrite a sealed header's field and its CRC (the sender meant it). */
static void reseal_header(uint8_t *f)
{
	pccx__le32_put(f + 16, pccx__link_crc32(0, f, 16));
}

static void refused_headers_skip_their_frame(void **state)
{
	static struct rxt t;
	uint8_t s[512], inner[64];
	size_t n, k;

	(void)state;
	rxt_init(&t, false);
	/* version 2 whose payload holds a whole valid frame: skipped, never parsed */
	k = mk(inner, PCCX_LINK_PING, 0, 99, "inner");
	memcpy(s + PCCX_LINK_HDR, inner, k);
	n = pccx__link_seal(s, PCCX_LINK_PING, 0, 31, (uint32_t)k);
	s[4] = 2;
	reseal_header(s);
	/* the REPLY flag on a request */
	n += mk(s + n, PCCX_LINK_INFO, PCCX_LINK_F_REPLY, 32, "");
	/* longer than max_payload: header only, then the bytes it announced */
	k = n;
	n += mk(s + n, PCCX_LINK_PING, 0, 33, "");
	pccx__le32_put(s + k + 12, MAXP + 1);
	reseal_header(s + k);
	feed(&t, s, n, 7);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.ev[0].err, PCCX_LINK_E_VERSION);
	assert_int_equal(t.ev[0].hdr.seq, 31);
	assert_int_equal(t.ev[1].err, PCCX_LINK_E_FLAGS);
	assert_int_equal(t.ev[1].hdr.flags, PCCX_LINK_F_REPLY);
	assert_int_equal(t.ev[2].err, PCCX_LINK_E_TOO_LONG);
	assert_int_equal(t.ev[2].hdr.len, MAXP + 1);
	assert_int_equal(t.rx.st.skipped, 3);
	/* still skipping MAXP + 5 bytes: a frame sent now is swallowed ... */
	n = mk(s, PCCX_LINK_PING, 0, 34, "lost");
	feed(&t, s, n, 64);
	assert_int_equal(t.n, 3);
	/* ... until the link is idle: then the skip ends without an event, and frames flow */
	assert_true(pccx__link_rx_partial(&t.rx));
	assert_false(pccx__link_rx_idle(&t.rx, &t.ev[t.n]));
	n = mk(s, PCCX_LINK_PING, 0, 35, "ok");
	feed(&t, s, n, 64);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.ev[3].hdr.seq, 35);
}

static void the_host_receiver_wants_replies(void **state)
{
	static struct rxt t;
	uint8_t s[128];
	size_t n;

	(void)state;
	rxt_init(&t, true);
	n = mk(s, PCCX_LINK_PING, 0, 1, "");
	n += mk(s + n, PCCX_LINK_PING, PCCX_LINK_F_REPLY, 2, "r");
	feed(&t, s, n, 3);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.ev[0].err, PCCX_LINK_E_FLAGS);
	assert_int_equal(t.ev[1].kind, PCCX_LINK_RX_FRAME);
}

static void idle_drops_a_frame_that_stopped(void **state)
{
	static struct rxt t;
	uint8_t s[128];
	size_t n = mk(s, PCCX_LINK_PING, 0, 41, "0123456789");
	struct pccx_link_rx_event ev;

	(void)state;
	rxt_init(&t, false);
	feed(&t, s, 10, 10);                     /* in the header */
	assert_true(pccx__link_rx_idle(&t.rx, &ev));
	assert_int_equal(ev.err, PCCX_LINK_E_TRUNCATED);
	assert_false(ev.have_hdr);
	feed(&t, s, n - 3, 64);                  /* in the payload */
	assert_true(pccx__link_rx_idle(&t.rx, &ev));
	assert_int_equal(ev.err, PCCX_LINK_E_TRUNCATED);
	assert_true(ev.have_hdr);
	assert_int_equal(ev.hdr.seq, 41);
	feed(&t, (const uint8_t *)"PC", 2, 2);   /* half a magic is noise, not a frame */
	assert_false(pccx__link_rx_idle(&t.rx, &ev));
	feed(&t, s, n, 64);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.ev[0].hdr.seq, 41);
	assert_int_equal(t.rx.st.truncated, 2);
}

/* Random bytes with frames between them: after each storm and an idle, a frame gets through. */
static void random_storm_never_wedges_the_receiver(void **state)
{
	static struct rxt t;
	static uint8_t s[1 << 16];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int round;

	(void)state;
	rxt_init(&t, false);
	for (round = 0; round < 200; round++) {
		size_t n = 0, i, len = 1 + (x >> 20) % 30000;
		struct pccx_link_rx_event ev;

		for (i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			s[n++] = (uint8_t)(x >> 32);
			/* now and then a magic, a header, a frame */
			if ((x & 0xff) == 3)
				n += mk(s + n, (uint8_t)(x >> 40), (uint16_t)(x >> 8 & 1), 1,
					"storm");
			if (n > sizeof(s) - 64)
				break;
		}
		t.n = 0;
		feed(&t, s, n, 1 + (x >> 50) % 4000);
		(void)pccx__link_rx_idle(&t.rx, &ev);
		t.n = 0;
		n = mk(s, PCCX_LINK_PING, 0, 1000u + (uint32_t)round, "after");
		feed(&t, s, n, 1 + (x >> 33) % 16);
		assert_int_equal(t.n, 1);
		assert_int_equal(t.ev[0].kind, PCCX_LINK_RX_FRAME);
		assert_int_equal(t.ev[0].hdr.seq, 1000u + (uint32_t)round);
		assert_memory_equal(t.payload[0], "after", 5);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc_of_the_check_string),
		cmocka_unit_test(seal_writes_the_documented_layout),
		cmocka_unit_test(frames_between_noise_byte_by_byte),
		cmocka_unit_test(damaged_header_rescans_its_own_bytes),
		cmocka_unit_test(damaged_payload_names_its_seq),
		cmocka_unit_test(refused_headers_skip_their_frame),
		cmocka_unit_test(the_host_receiver_wants_replies),
		cmocka_unit_test(idle_drops_a_frame_that_stopped),
		cmocka_unit_test(random_storm_never_wedges_the_receiver),
	};

	return cmocka_run_group_tests_name("link_wire", tests, NULL, NULL);
}
