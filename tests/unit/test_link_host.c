// SPDX-License-Identifier: MIT
/*
 * libpccx's link backend against a board that misbehaves (a scripted board on a socketpair):
 * replies of the wrong type or size, silence, a closed link, noise and stale replies before
 * the real one, a foreign protocol version, error text with control bytes. Each is a clear
 * error naming the request (or is read through), never a hang, and after a timeout the link
 * is resynchronised and works again.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend_link.h"
#include "fileio.h"
#include "pccx_link.h"

enum misbehave { FINE, WRONG_TYPE, SHORT, SILENT_ONCE, CLOSE, NOISE, VERSION2, ERRTEXT };

struct fake {
	pthread_t th;
	int fd;
	enum misbehave mode;
	volatile int stop;
	int creates;
	uint8_t rxb[PCCX_LINK_OVERHEAD + 8192], tx[PCCX_LINK_OVERHEAD + 8192];
};

static void reply(struct fake *f, uint8_t type, uint32_t seq, uint32_t len)
{
	size_t n = pccx__link_seal(f->tx, type, PCCX_LINK_F_REPLY, seq, len);

	(void)!write(f->fd, f->tx, n);
}

static void answer(struct fake *f, const struct pccx_link_hdr *h, const uint8_t *p)
{
	uint8_t *q = f->tx + PCCX_LINK_HDR;

	switch (h->type) {
	case PCCX_LINK_PING:
		memcpy(q, p, h->len);
		reply(f, PCCX_LINK_PING, h->seq, h->len);
		return;
	case PCCX_LINK_INFO:
		memset(q, 0, PCCX_LINK_INFO_BYTES);
		pccx__le16_put(q, f->mode == VERSION2 ? 2 : 1);
		pccx__le16_put(q + 2, f->mode == VERSION2 ? 2 : 1);
		pccx__le32_put(q + 4, 8192);
		memcpy(q + 96, "fake", 4);
		reply(f, PCCX_LINK_INFO, h->seq, PCCX_LINK_INFO_BYTES);
		return;
	case PCCX_LINK_RESET:
		memset(q, 0, 8);
		reply(f, PCCX_LINK_RESET, h->seq, 8);
		return;
	case PCCX_LINK_BUF_CREATE:
		break;
	default:
		memset(q, 0, PCCX_LINK_ERR_BYTES);
		pccx__le32_put(q, PCCX_LINK_E_TYPE);
		reply(f, PCCX_LINK_ERROR, h->seq, PCCX_LINK_ERR_BYTES);
		return;
	}
	f->creates++;
	memset(q, 0, 16);
	pccx__le32_put(q, 7);
	memcpy(q + 8, p, 8);
	switch (f->mode) {
	case WRONG_TYPE:
		reply(f, PCCX_LINK_PING, h->seq, 16);
		return;
	case SHORT:
		reply(f, PCCX_LINK_BUF_CREATE, h->seq, 4);
		return;
	case SILENT_ONCE:
		if (f->creates == 1)
			return;
		break;
	case CLOSE:
		close(f->fd);
		f->fd = -1;
		f->stop = 1;
		return;
	case NOISE:
		(void)!write(f->fd, "PCXL garbage PCX\0\0\0", 19);
		reply(f, PCCX_LINK_BUF_CREATE, h->seq - 1, 16);    /* stale */
		memset(q, 0, 16);
		pccx__le32_put(q, 7);
		memcpy(q + 8, p, 8);
		break;
	case ERRTEXT:
		memset(q, 0, PCCX_LINK_ERR_BYTES);
		pccx__le32_put(q, PCCX_LINK_E_NOSPACE);
		pccx__le64_put(q + 24, 123);
		memcpy(q + PCCX_LINK_ERR_BYTES, "no\x1b[2Jroom\n", 11);
		reply(f, PCCX_LINK_ERROR, h->seq, PCCX_LINK_ERR_BYTES + 11);
		return;
	default:
		break;
	}
	reply(f, PCCX_LINK_BUF_CREATE, h->seq, 16);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	struct pccx_link_rx rx;
	uint8_t in[4096];

	pccx__link_rx_init(&rx, f->rxb, 8192, false);
	while (!f->stop) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		ssize_t n;
		size_t off = 0;

		if (poll(&p, 1, 20) <= 0)
			continue;
		n = read(f->fd, in, sizeof(in));
		if (n <= 0)
			break;
		while (off < (size_t)n && !f->stop) {
			struct pccx_link_rx_event ev;

			off += pccx__link_rx_feed(&rx, in + off, (size_t)n - off, &ev);
			if (ev.kind == PCCX_LINK_RX_FRAME)
				answer(f, &ev.hdr, ev.payload);
		}
	}
	return NULL;
}

/* A fake board in `mode` and a backend talking to it (NULL when create failed: *rc). */
static struct pccx_link_backend *start(struct fake *f, enum misbehave mode, int *rc,
				       pccx_diag *d)
{
	struct pccx_link_transport t;
	struct pccx_link_backend *b = NULL;
	int sv[2];

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f->fd = sv[1];
	f->mode = mode;
	ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
	pccx__fd_transport(sv[0], &t);
	*rc = pccx__link_backend_create(&t, "fake-board", &b, d);
	if (b)
		pccx__link_backend_set_timeout(b, 500);
	return b;
}

static void stop(struct fake *f, struct pccx_link_backend *b)
{
	pccx__link_backend_destroy(b);
	f->stop = 1;
	pthread_join(f->th, NULL);
	if (f->fd >= 0)
		close(f->fd);
}

START_TEST(a_reply_of_the_wrong_type_or_size_is_an_error)
{
	struct fake f;
	pccx_diag d = { 0 };
	uint32_t h;
	int rc;
	struct pccx_link_backend *b = start(&f, WRONG_TYPE, &rc, &d);

	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d), PCCX_ERR_IO);
	ck_assert_str_eq(d.msg, "fake-board: a PING reply to BUF_CREATE");
	stop(&f, b);
	b = start(&f, SHORT, &rc, &d);
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d), PCCX_ERR_IO);
	ck_assert_str_eq(d.msg, "fake-board: a BUF_CREATE reply of 4 bytes (16 expected)");
	stop(&f, b);
}
END_TEST

START_TEST(silence_times_out_and_the_link_recovers)
{
	struct fake f;
	pccx_diag d = { 0 };
	uint32_t h;
	int rc;
	struct pccx_link_backend *b = start(&f, SILENT_ONCE, &rc, &d);

	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d), PCCX_ERR_TIMEOUT);
	ck_assert_ptr_nonnull(strstr(d.msg, "fake-board: no reply to BUF_CREATE"));
	/* the next request resynchronises (quiet, PING) and goes through */
	ck_assert_msg(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(h, 7);
	ck_assert_int_eq(f.creates, 2);
	stop(&f, b);
}
END_TEST

START_TEST(a_closed_link_is_an_error_and_stays_one)
{
	struct fake f;
	pccx_diag d = { 0 };
	uint32_t h;
	int rc;
	struct pccx_link_backend *b = start(&f, CLOSE, &rc, &d);

	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d), PCCX_ERR_IO);
	ck_assert_ptr_nonnull(strstr(d.msg, "the link failed"));
	ck_assert_int_eq(pccx__link_backend_ping(b, 4, &d), PCCX_ERR_IO);
	ck_assert_ptr_nonnull(strstr(d.msg, "the link is closed"));
	stop(&f, b);
}
END_TEST

START_TEST(noise_and_stale_replies_are_read_through)
{
	struct fake f;
	pccx_diag d = { 0 };
	uint32_t h = 0;
	uint64_t size = 0;
	int rc;
	struct pccx_link_backend *b = start(&f, NOISE, &rc, &d);

	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_msg(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(h, 7);
	ck_assert_ptr_nonnull(pccx__link_backend_buf_map(b, 7, &size));
	ck_assert_uint_eq(size, 64);
	ck_assert_int_eq(pccx__link_backend_ping(b, 100, &d), 0);
	stop(&f, b);
}
END_TEST

START_TEST(a_foreign_version_and_a_refusal_are_named)
{
	struct fake f;
	pccx_diag d = { 0 };
	uint32_t h;
	int rc;
	struct pccx_link_backend *b = start(&f, VERSION2, &rc, &d);

	ck_assert_ptr_null(b);
	ck_assert_int_eq(rc, PCCX_ERR_UNSUPPORTED);
	ck_assert_str_eq(d.msg, "fake-board: the board speaks protocol versions 2..2, this "
			 "library 1");
	stop(&f, NULL);
	b = start(&f, ERRTEXT, &rc, &d);
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 64, 1, &h, &d), PCCX_ERR_NOMEM);
	/* the board's text reaches the message with its control bytes made visible */
	ck_assert_str_eq(d.msg, "fake-board: the board refused BUF_CREATE: NOSPACE (no?[2Jroom?; "
			 "values 123, 0)");
	stop(&f, b);
}
END_TEST

/*
 * The byte writer both ends of a link use (pccx__fd_write_all): everything arrives while the
 * peer reads; a peer that stops reading fails the write after the timeout (it does not hang
 * the writer); a peer that went away fails it at once, without SIGPIPE.
 */
START_TEST(a_stalled_or_closed_peer_fails_the_write)
{
	static uint8_t big[4u << 20];
	uint8_t got[64];
	int sv[2];
	ssize_t r;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	memset(big, 0x5a, sizeof(big));
	ck_assert_int_eq(pccx__fd_write_all(sv[0], true, big, sizeof(got), 1000), 0);
	r = read(sv[1], got, sizeof(got));
	ck_assert_int_eq(r, (ssize_t)sizeof(got));
	ck_assert_int_eq(got[0], 0x5a);
	ck_assert_int_eq(got[sizeof(got) - 1], 0x5a);
	/* 4 MiB into a socket nobody reads: more than its buffer holds */
	errno = 0;
	ck_assert_int_eq(pccx__fd_write_all(sv[0], true, big, sizeof(big), 50), -1);
	ck_assert_int_eq(errno, ETIMEDOUT);
	close(sv[1]);
	errno = 0;
	ck_assert_int_eq(pccx__fd_write_all(sv[0], true, big, 16, 50), -1);
	ck_assert(errno == EPIPE || errno == ECONNRESET);
	close(sv[0]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("link_host");
	TCase *tc = tcase_create("hostile board");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_reply_of_the_wrong_type_or_size_is_an_error);
	tcase_add_test(tc, silence_times_out_and_the_link_recovers);
	tcase_add_test(tc, a_closed_link_is_an_error_and_stays_one);
	tcase_add_test(tc, noise_and_stale_replies_are_read_through);
	tcase_add_test(tc, a_foreign_version_and_a_refusal_are_named);
	tcase_add_test(tc, a_stalled_or_closed_peer_fails_the_write);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
