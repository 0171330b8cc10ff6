// SPDX-License-Identifier: MIT
/*
 * libpccx's serial backend against the hosted board (firmware/core + the cycle simulator)
 * over a Unix socket and a pseudo-terminal: the tiny Gemma through the link gives the tokens
 * of the in-process backend with logits and KV verified every step; a storm of malformed
 * frames gets an error reply each and leaves the link usable; the board going away is a clear
 * error, never a hang.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend_link_int.h"
#include "fw_internal.h"
#include "board.h"
#include "pccx/pccx.h"
#include "pccx_link.h"

/* ---- a board thread serving a socket path or a pty ------------------------------------ */

struct board_thread {
	pthread_t th;
	struct pccx_hosted_board *b;
	char dir[64], path[96];
	int lfd, fd;                /* listening socket, or the pty master (lfd -1) */
	int slave;                  /* kept open: a master whose slave is closed reads EIO */
	volatile int stop;
};

static void *board_main(void *arg)
{
	struct board_thread *t = arg;

	if (t->lfd < 0) {
		(void)pccx__hosted_board_serve(t->b, t->fd, &t->stop);
		return NULL;
	}
	while (!t->stop) {
		struct pollfd p = { .fd = t->lfd, .events = POLLIN };
		int fd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept(t->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		(void)pccx__hosted_board_serve(t->b, fd, &t->stop);
		close(fd);
	}
	return NULL;
}

static void board_start(struct board_thread *t, bool pty)
{
	pccx_diag d = { 0 };

	memset(t, 0, sizeof(*t));
	ck_assert_msg(pccx__hosted_board_create(NULL, &t->b, &d) == 0, "%s", d.msg);
	if (pty) {
		/* the host opens the slave by its name, as a user would */
		ck_assert_int_eq(openpty(&t->fd, &t->slave, t->path, NULL, NULL), 0);
		t->lfd = -1;
	} else {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(t->dir, sizeof(t->dir), "/tmp/pccx-link-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(t->dir));
		snprintf(t->path, sizeof(t->path), "%s/board.sock", t->dir);
		memcpy(sa.sun_path, t->path, strlen(t->path) + 1);
		t->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		ck_assert_int_ge(t->lfd, 0);
		ck_assert_int_eq(bind(t->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_int_eq(listen(t->lfd, 4), 0);
	}
	ck_assert_int_eq(pthread_create(&t->th, NULL, board_main, t), 0);
}

static void board_stop(struct board_thread *t)
{
	t->stop = 1;
	pthread_join(t->th, NULL);
	if (t->lfd >= 0) {
		close(t->lfd);
		unlink(t->path);
		rmdir(t->dir);
	} else {
		close(t->fd);
		close(t->slave);
	}
	pccx__hosted_board_destroy(t->b);
}

/* ---- the tiny Gemma on a backend ------------------------------------------------------- */

struct run {
	int32_t toks[64];
	size_t n;
};

static int collect(void *user, int32_t token, const char *piece, size_t len)
{
	struct run *r = user;

	(void)piece;
	(void)len;
	if (r->n < 64)
		r->toks[r->n++] = token;
	return 0;
}

static int generate(const char *backend, const char *path, bool verify, size_t n,
		    struct run *out, struct pccx_stats *st, pccx_diag *d)
{
	struct pccx_device_opts dopt = { sizeof(dopt), backend, path, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = verify };
	static const int32_t prompt[] = { 2, 17, 42, 99, 3 };
	pccx_sampler_config scfg;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	int rc;

	pccx_sampler_config_default(&scfg);
	scfg.temperature = 0.8f;
	scfg.seed = 11;
	memset(out, 0, sizeof(*out));
	rc = pccx_device_open(&dopt, &dev, d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, d);
	if (!rc)
		rc = pccx_session_prefill(s, prompt, 5, d);
	if (!rc)
		rc = pccx_session_generate(s, &scfg, n, collect, out, d);
	if (!rc && st)
		rc = pccx_session_stats(s, st);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc;
}

static void same_tokens_as_sim(const char *path, size_t n)
{
	struct run sim, link;
	struct pccx_stats st;
	pccx_diag d = { 0 };

	ck_assert_msg(generate("sim", NULL, false, n, &sim, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("serial", path, true, n, &link, &st, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(link.n, n);
	ck_assert_uint_eq(sim.n, n);
	ck_assert_mem_eq(link.toks, sim.toks, n * sizeof(int32_t));
	/* the 5-token prompt: a chunk of four (gemma_chunk.h) and a step */
	ck_assert_uint_eq(st.jobs, 2 + n);
	ck_assert_uint_gt(st.weight_bytes, 0);
}

START_TEST(tiny_gemma_over_a_socket_is_bit_exact)
{
	struct board_thread t;

	board_start(&t, false);
	same_tokens_as_sim(t.path, 17);
	/* a second host process after the first: the board serves it from a clean slate */
	same_tokens_as_sim(t.path, 17);
	board_stop(&t);
}
END_TEST

START_TEST(tiny_gemma_over_a_pty_is_bit_exact)
{
	struct board_thread t;

	board_start(&t, true);
	same_tokens_as_sim(t.path, 17);
	board_stop(&t);
}
END_TEST

/* ---- a hostile host ---------------------------------------------------------------------- */

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memcpy(sa.sun_path, path, strlen(path) + 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void put_all(int fd, const void *p, size_t n)
{
	ck_assert_int_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

struct rawlink {
	int fd;
	struct pccx_link_rx rx;
	uint8_t buf[PCCX_LINK_OVERHEAD + PCCX_LINK_MAX_PAYLOAD];
	uint8_t frame[PCCX_LINK_OVERHEAD + 65536];
	uint8_t pending[65536];
	size_t n_pending, at;
};

/* The next reply frame (within 3 s): its header and payload. */
static void next_reply(struct rawlink *l, struct pccx_link_hdr *h, const uint8_t **p)
{
	struct pccx_link_rx_event ev;

	for (;;) {
		while (l->at < l->n_pending) {
			l->at += pccx__link_rx_feed(&l->rx, l->pending + l->at,
						    l->n_pending - l->at, &ev);
			if (ev.kind == PCCX_LINK_RX_FRAME) {
				*h = ev.hdr;
				*p = ev.payload;
				return;
			}
			ck_assert_msg(ev.kind == PCCX_LINK_RX_NONE, "a malformed reply (%s)",
				      pccx__link_err_name(ev.err));
		}
		struct pollfd pf = { .fd = l->fd, .events = POLLIN };

		ck_assert_msg(poll(&pf, 1, 3000) == 1, "no reply within 3 s");
		l->at = 0;
		l->n_pending = (size_t)read(l->fd, l->pending, sizeof(l->pending));
		ck_assert_int_gt((ssize_t)l->n_pending, 0);
	}
}

/* Expect an error reply with `code` (and seq when the header was good). */
static void expect_error(struct rawlink *l, uint32_t seq, int code)
{
	struct pccx_link_hdr h;
	const uint8_t *p;

	next_reply(l, &h, &p);
	ck_assert_uint_eq(h.type, PCCX_LINK_ERROR);
	ck_assert_uint_eq(h.flags, PCCX_LINK_F_REPLY);
	ck_assert_msg(pccx__le32_get(p) == (uint32_t)code, "error %s, expected %s",
		      pccx__link_err_name((int)pccx__le32_get(p)), pccx__link_err_name(code));
	ck_assert_uint_eq(h.seq, seq);
}

static size_t frame(struct rawlink *l, uint8_t type, uint16_t flags, uint32_t seq,
		    const void *payload, uint32_t len)
{
	memcpy(l->frame + PCCX_LINK_HDR, payload, len);
	return pccx__link_seal(l->frame, type, flags, seq, len);
}

static void ping_ok(struct rawlink *l, uint32_t seq)
{
	struct pccx_link_hdr h;
	const uint8_t *p;

	put_all(l->fd, l->frame, frame(l, PCCX_LINK_PING, 0, seq, "abc", 3));
	next_reply(l, &h, &p);
	ck_assert_uint_eq(h.type, PCCX_LINK_PING);
	ck_assert_uint_eq(h.seq, seq);
	ck_assert_uint_eq(h.len, 3);
	ck_assert_mem_eq(p, "abc", 3);
}

START_TEST(malformed_frame_storm_leaves_the_link_usable)
{
	struct board_thread t;
	struct rawlink *l = calloc(1, sizeof(*l));
	uint8_t pl[64] = { 0 }, noise[4096];
	uint32_t seq = 100, i;
	size_t n;

	ck_assert_ptr_nonnull(l);
	board_start(&t, false);
	l->fd = dial(t.path);
	pccx__link_rx_init(&l->rx, l->buf, PCCX_LINK_MAX_PAYLOAD, true);
	ping_ok(l, seq++);
	/* noise without a magic: dropped silently, then a good frame is answered */
	for (i = 0; i < sizeof(noise); i++)
		noise[i] = (uint8_t)(i * 7 + 1) == 'P' ? 0 : (uint8_t)(i * 7 + 1);
	put_all(l->fd, noise, sizeof(noise));
	ping_ok(l, seq++);
	/* a damaged header: HEADER_CRC with seq 0 (none of its fields can be trusted) */
	n = frame(l, PCCX_LINK_PING, 0, seq, "xy", 2);
	l->frame[9] ^= 0x40;
	put_all(l->fd, l->frame, n);
	expect_error(l, 0, PCCX_LINK_E_HEADER_CRC);
	ping_ok(l, ++seq);
	/* a lone magic, then a whole frame: the frame inside the rejected header is found */
	put_all(l->fd, "PCXL", 4);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_PING, 0, ++seq, "abc", 3));
	expect_error(l, 0, PCCX_LINK_E_HEADER_CRC);
	{
		struct pccx_link_hdr h;
		const uint8_t *p;

		next_reply(l, &h, &p);
		ck_assert_uint_eq(h.type, PCCX_LINK_PING);
		ck_assert_uint_eq(h.seq, seq++);
	}
	/* a damaged payload */
	n = frame(l, PCCX_LINK_PING, 0, seq, "hello", 5);
	l->frame[PCCX_LINK_HDR + 1] ^= 1;
	put_all(l->fd, l->frame, n);
	expect_error(l, seq++, PCCX_LINK_E_PAYLOAD_CRC);
	/* a version the board does not speak: skipped by its length */
	n = frame(l, PCCX_LINK_PING, 0, seq, "PCXLPCXL", 8);
	l->frame[4] = 9;
	pccx__le32_put(l->frame + 16, pccx__link_crc32(0, l->frame, 16));
	put_all(l->fd, l->frame, n);
	expect_error(l, seq++, PCCX_LINK_E_VERSION);
	/* the REPLY flag on a request */
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_INFO, PCCX_LINK_F_REPLY, seq, pl, 0));
	expect_error(l, seq++, PCCX_LINK_E_FLAGS);
	/* longer than max_payload: answered from the header, the bytes that follow skipped */
	n = frame(l, PCCX_LINK_PING, 0, seq, pl, 0);
	pccx__le32_put(l->frame + 12, 1u << 30);
	pccx__le32_put(l->frame + 16, pccx__link_crc32(0, l->frame, 16));
	put_all(l->fd, l->frame, PCCX_LINK_HDR);
	expect_error(l, seq++, PCCX_LINK_E_TOO_LONG);
	/* the board skips the 1 GiB that never comes until the link is idle: wait for that */
	usleep(2 * PCCX_LINK_IDLE_MS * 1000);
	ping_ok(l, seq++);
	/* unknown type, and sizes wrong for their type */
	put_all(l->fd, l->frame, frame(l, 0x55, 0, seq, pl, 0));
	expect_error(l, seq++, PCCX_LINK_E_TYPE);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_ERROR, 0, seq, pl, 40));
	expect_error(l, seq++, PCCX_LINK_E_TYPE);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_BUF_CREATE, 0, seq, pl, 15));
	expect_error(l, seq++, PCCX_LINK_E_LENGTH);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_INFO, 0, seq, pl, 1));
	expect_error(l, seq++, PCCX_LINK_E_LENGTH);
	/* fields: size 0, undefined access bits, unknown handles, a range that would wrap */
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_BUF_CREATE, 0, seq, pl, 16));
	expect_error(l, seq++, PCCX_LINK_E_INVALID);
	pccx__le64_put(pl, 64);
	pccx__le32_put(pl + 8, 4);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_BUF_CREATE, 0, seq, pl, 16));
	expect_error(l, seq++, PCCX_LINK_E_INVALID);
	pccx__le64_put(pl, 1ull << 60);
	pccx__le32_put(pl + 8, 1);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_BUF_CREATE, 0, seq, pl, 16));
	expect_error(l, seq++, PCCX_LINK_E_NOSPACE);
	memset(pl, 0, sizeof(pl));
	pccx__le32_put(pl, 77);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_BUF_FREE, 0, seq, pl, 8));
	expect_error(l, seq++, PCCX_LINK_E_HANDLE);
	pccx__le32_put(pl + 16, 8);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_DOWNLOAD, 0, seq, pl, 24));
	expect_error(l, seq++, PCCX_LINK_E_HANDLE);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_WAIT, 0, seq, pl, 8));
	expect_error(l, seq++, PCCX_LINK_E_NOJOB);
	put_all(l->fd, l->frame, frame(l, PCCX_LINK_SUBMIT, 0, seq, pl, 24));
	expect_error(l, seq++, PCCX_LINK_E_HANDLE);
	/* a frame that stops half way: dropped after the idle timeout, TRUNCATED */
	n = frame(l, PCCX_LINK_PING, 0, seq, "0123456789", 10);
	put_all(l->fd, l->frame, n - 6);
	expect_error(l, seq++, PCCX_LINK_E_TRUNCATED);
	ping_ok(l, seq++);
	close(l->fd);
	free(l);
	/* and the tiny Gemma still runs through it, bit-exact */
	same_tokens_as_sim(t.path, 17);
	board_stop(&t);
}
END_TEST

START_TEST(upload_download_and_refusals_through_the_backend)
{
	struct board_thread t;
	struct pccx_link_transport tr;
	struct pccx_link_backend *b;
	struct pccx_link_stats st;
	uint32_t h, h2;
	uint8_t *host;
	uint64_t size;
	pccx_diag d = { 0 };
	const uint64_t word = 0x0123456789abcdefull;
	struct pccx_dma_desc dma = { 12345, PCCX_DMA_TO_DEVICE, 0, 16 };
	struct pccx_job_view job = { &word, 1, &dma, 1, NULL, 0 };

	board_start(&t, false);
	ck_assert_msg(pccx__serial_transport_open(t.path, &tr, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__link_backend_create(&tr, t.path, &b, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(pccx__link_backend_board(b)->name, "hosted-sim");
	ck_assert_int_eq(pccx__link_backend_ping(b, 60000, &d), 0);
	/* 300 KB: more than one frame each way */
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 300000, PCCX_BUF_DEV_READ, &h, &d), 0);
	ck_assert_int_eq(pccx__link_backend_buf_alloc(b, 300000, PCCX_BUF_DEV_READ, &h2, &d), 0);
	host = pccx__link_backend_buf_map(b, h, &size);
	ck_assert_uint_eq(size, 300000);
	for (uint64_t i = 0; i < size; i++)
		host[i] = (uint8_t)(i * 2654435761u >> 13);
	/* a job the validator refuses (an unknown handle) still uploads first, and says why */
	ck_assert_int_eq(pccx__link_backend_submit_wait(b, &job, NULL, NULL, &d),
			 PCCX_ERR_VALIDATE);
	ck_assert_ptr_nonnull(strstr(d.msg, "BUF_HANDLE"));
	ck_assert_ptr_nonnull(strstr(d.msg, "host DMA descriptor 0"));
	ck_assert_int_eq(pccx__link_backend_stats(b, &st, &d), 0);
	ck_assert_uint_ge(st.errors, 1);
	ck_assert_uint_eq(st.last_err, PCCX_LINK_E_VALIDATE);
	ck_assert_uint_eq(st.last_type, PCCX_LINK_SUBMIT);
	ck_assert_int_eq(pccx__link_backend_buf_free(b, h2), 0);
	ck_assert_int_eq(pccx__link_backend_buf_free(b, h2), PCCX_ERR_NOT_FOUND);
	/* the board holds the bytes (the board thread waits in poll: its table is still) */
	ck_assert_ptr_nonnull(pccx__fw_buf_find(pccx__hosted_board_server(t.b), h));
	ck_assert_mem_eq(pccx__fw_buf_find(pccx__hosted_board_server(t.b), h)->mem, host, size);
	/* and they come back over the link */
	memset(host, 0, size);
	ck_assert_int_eq(pccx__link_download(b, pccx__link_buf(b, h), 0, size, &d), 0);
	for (uint64_t i = 0; i < size; i++)
		ck_assert_uint_eq(host[i], (uint8_t)(i * 2654435761u >> 13));
	pccx__link_backend_destroy(b);
	/* destroy freed every buffer it made */
	ck_assert_ptr_null(pccx__fw_buf_find(pccx__hosted_board_server(t.b), h));
	board_stop(&t);
}
END_TEST

START_TEST(board_gone_is_a_clear_error)
{
	struct board_thread t;
	struct pccx_device_opts dopt = { sizeof(dopt), "serial", NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 7, NULL, NULL, NULL };
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	pccx_diag d = { 0 };
	int32_t tok = 2;
	int rc;

	board_start(&t, false);
	dopt.path = t.path;
	ck_assert_msg(pccx_device_open(&dopt, &dev, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_model_load(dev, &mopt, &model, &d), 0);
	ck_assert_msg(pccx_session_create(model, NULL, &s, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_session_prefill(s, &tok, 1, &d), 0);
	board_stop(&t);
	rc = pccx_session_prefill(s, &tok, 1, &d);
	ck_assert_int_eq(rc, PCCX_ERR_IO);
	ck_assert_msg(strstr(d.msg, "link failed") != NULL, "%s", d.msg);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	/* no board at all: not found, naming the path */
	dopt.path = "/nonexistent/board.sock";
	ck_assert_int_eq(pccx_device_open(&dopt, &dev, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(d.msg, "/nonexistent/board.sock"));
	/* usb (docs/usb.md): a path that is not VID:PID is refused, naming it */
	dopt.backend = "usb";
	ck_assert_int_eq(pccx_device_open(&dopt, &dev, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "/nonexistent/board.sock"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("link");
	TCase *tc = tcase_create("serial");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, tiny_gemma_over_a_socket_is_bit_exact);
	tcase_add_test(tc, tiny_gemma_over_a_pty_is_bit_exact);
	tcase_add_test(tc, malformed_frame_storm_leaves_the_link_usable);
	tcase_add_test(tc, upload_download_and_refusals_through_the_backend);
	tcase_add_test(tc, board_gone_is_a_clear_error);
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
