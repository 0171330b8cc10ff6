// SPDX-License-Identifier: MIT
/*
 * Guest tests of the USB path (run by tests/qemu/init.c after pccx-tests, with the gadget
 * modules, pccx.ko and pccx-simd loaded; dummy_hcd connects the gadget to this same guest's
 * USB host side, so libusb finds the board here):
 *
 *   usb-bytes   the transport alone: this program is the device too (firmware/linux/ffs.c
 *               echoing), libusb the host: sizes around the max packet size both ways, a
 *               read timeout, an unbind during a read (a clear error, at once), a rebind
 *   usb-gemma   pccx-boardd on the gadget; the tiny Gemma through the `usb` backend, logits
 *               and KV verified every step, tokens and byte counts as in-process
 *   usb-storm   malformed frames of every kind straight onto the bulk endpoint: the board
 *               answers what it must, stays in step, and the tiny Gemma still runs
 *   usb-unbind  the gadget unbound while a job runs: the host gets a clear error, never a
 *               hang; after the rebind the daemon serves a new host the same tokens
 *   usb-bench   the same tiny Gemma step's latency in process, through /dev/pccx and through
 *               usb; the link's PING round trip and throughput (PCCX-BENCH lines)
 *   usb-daemon-exit  SIGTERM: the daemon removes its gadget and exits 0
 *   usb-ffs-only  the daemon on a gadget the board made (--ffs): a host reaches it; at exit
 *               the daemon leaves that gadget alone
 *
 * Prints "PCCX-TEST ok|FAIL NAME" lines like pccx-tests; exits 1 if any failed.
 *   usb-link [list]     runs every test when list is empty or names "usb"; usb-bench (and
 *                       the daemon's exit) when it names "bench"
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "pccx/pccx.h"
#include "guest_check.h"
#include "backend_link.h"
#include "ffs.h"
#include "gadget.h"
#include "pccx_link.h"
#include "transport_usb.h"

#define SYSFS           "/sys/class/misc/pccx/"
#define DBGFS           "/sys/kernel/debug/pccx"
#define GADGET          "pccx"
#define GADGET_UDC      PCCX_GADGET_CONFIGFS "/" GADGET "/UDC"
#define BOARDD_READY    "/run/boardd.ready"
#define ECHO_GADGET     "pccxecho"
#define ECHO_PIECE      (64 * 1024)     /* what the echo reads at once, at most */

static long read_long(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] ? strtol(buf, NULL, 0) : -1;
}

static int write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int r;

	if (!f)
		return -1;
	r = fputs(s, f) < 0;
	return fclose(f) || r ? -1 : 0;
}

/* debugfs file `name` of the (only) pccx device. */
static const char *dbgfs(const char *name)
{
	static char path[512];
	struct dirent *de;
	DIR *d = opendir(DBGFS);

	snprintf(path, sizeof(path), DBGFS "/?/%s", name);
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), DBGFS "/%s/%s", de->d_name, name);
			break;
		}
	if (d)
		closedir(d);
	return path;
}

/* Open the board's interface, waiting up to ms for it to enumerate. */
static int usb_open_wait(const char *spec, int ms, struct pccx_usb_link **u, pccx_diag *d)
{
	int rc;

	for (;;) {
		rc = pccx__usb_open(spec, u, d);
		if (rc != PCCX_ERR_NOT_FOUND || ms <= 0)
			return rc;
		usleep(50000);
		ms -= 50;
	}
}

/* ---- usb-bytes: the transport over an echoing function of this process -------------------- */

static volatile int echo_stop;

static void on_usr1(int sig)
{
	(void)sig;
}

static void *echo(void *arg)
{
	static uint8_t buf[PCCX_FFS_READ_MAX];
	struct pccx_ffs *f = arg;

	while (!echo_stop) {
		ssize_t n = pccx__ffs_read(f, buf, sizeof(buf));

		if (n > 0)
			(void)pccx__ffs_write(f, buf, (size_t)n);
		else if (n < 0 && n != -EINTR)
			usleep(5000);   /* disabled: wait for the host to come back */
	}
	return NULL;
}

/* Wait for ep0 to report ev (draining others), up to ms. */
static int wait_event(struct pccx_ffs *f, int ev, int ms)
{
	double end = now_s() + ms / 1000.0;

	while (now_s() < end) {
		int e = pccx__ffs_event(f, 50);

		if (e == ev)
			return 0;
		if (e == PCCX_FFS_ENABLE)
			pccx__ffs_update_maxpacket(f);
	}
	return -1;
}

/* n bytes out, the same n back (in whatever pieces the transport gives them). */
static int echo_roundtrip(struct pccx_usb_link *u, size_t n, uint32_t seed)
{
	uint8_t *out = calloc(1, n), *in = calloc(1, n);
	pccx_diag d = { 0 };
	size_t i, have = 0, got;
	int rc = 0;

	if (!out || !in) {
		free(out);
		free(in);
		return PCCX_ERR_NOMEM;
	}
	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		out[i] = (uint8_t)(seed >> 16);
	}
	/* a piece at a time: the echo sends each back before it reads the next */
	for (i = 0; !rc && i < n; i += ECHO_PIECE) {
		size_t m = n - i < ECHO_PIECE ? n - i : ECHO_PIECE;

		rc = pccx__usb_write(u, out + i, m, 5000, &d);
		while (!rc && have < i + m) {
			rc = pccx__usb_read(u, in + have, i + m - have, 5000, &got, &d);
			have += got;
		}
	}
	if (rc)
		printf("  %zu bytes: %s (%zu back)\n", n, d.msg, have);
	else if (memcmp(in, out, n))
		rc = PCCX_ERR_MISMATCH;
	free(out);
	free(in);
	return rc;
}

struct unbinder {
	struct pccx_gadget *g;
	int delay_ms;
};

static void *unbind_later(void *arg)
{
	struct unbinder *ub = arg;

	usleep((useconds_t)ub->delay_ms * 1000);
	(void)pccx__gadget_unbind(ub->g);
	return NULL;
}

static void bytes_unbind(struct pccx_gadget *g, struct pccx_ffs *f, struct pccx_usb_link *u)
{
	struct unbinder ub = { g, 300 };
	pccx_diag d = { 0 };
	pthread_t th;
	uint8_t b[16];
	size_t got;
	double t0;

	/* a read waiting for bytes that never come, and the gadget goes away under it */
	CHECK(!pthread_create(&th, NULL, unbind_later, &ub));
	t0 = now_s();
	CHECK_RET(pccx__usb_read(u, b, sizeof(b), 20000, &got, &d), PCCX_ERR_IO);
	CHECK(now_s() - t0 < 5);
	CHECK(strstr(d.msg, "went away") != NULL);
	pthread_join(th, NULL);
	/* every later call fails at once with the same message */
	t0 = now_s();
	CHECK_RET(pccx__usb_write(u, b, sizeof(b), 20000, &d), PCCX_ERR_IO);
	CHECK(strstr(d.msg, "went away") != NULL);
	CHECK(now_s() - t0 < 1);
	CHECK(!wait_event(f, PCCX_FFS_UNBIND, 3000));
}

static void test_bytes(void)
{
	static const size_t sizes[] = { 1, 63, 64, 65, 511, 512, 513, 1024, 4096, 65535, 65536,
					65537, 300000, 1 << 20 };
	struct pccx_gadget g = { .name = ECHO_GADGET, .ffs_dir = "/dev/ffs-" ECHO_GADGET,
				 .vid = PCCX_USB_VID, .pid = PCCX_USB_PID, .serial = "echo" };
	struct pccx_ffs f = { -1, -1, -1, 512 };
	struct pccx_usb_link *u = NULL;
	pccx_diag d = { 0 };
	char msg[512];
	pthread_t th;
	uint8_t b[8];
	size_t i, got;
	double t0;

	if (pccx__gadget_make(&g, msg, sizeof(msg)) || pccx__ffs_open(&f, g.ffs_dir, msg,
								      sizeof(msg)) ||
	    pccx__gadget_bind(&g, NULL, msg, sizeof(msg))) {
		printf("  %s\n", msg);
		CHECK(0);
		goto out;
	}
	CHECK(!wait_event(&f, PCCX_FFS_BIND, 3000));
	CHECK_RET(usb_open_wait(NULL, 5000, &u, &d), 0);
	if (!u) {
		printf("  %s\n", d.msg);
		goto out;
	}
	CHECK(!wait_event(&f, PCCX_FFS_ENABLE, 3000));
	CHECK(f.in_maxpacket == 512);   /* dummy_hcd is high speed */
	echo_stop = 0;
	CHECK(!pthread_create(&th, NULL, echo, &f));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		CHECK_RET(echo_roundtrip(u, sizes[i], (uint32_t)i), 0);
	/* nothing to read: a timeout within its time, and the link still works after it */
	t0 = now_s();
	CHECK_RET(pccx__usb_read(u, b, sizeof(b), 300, &got, &d), PCCX_ERR_TIMEOUT);
	CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 3);
	CHECK_RET(echo_roundtrip(u, 777, 99), 0);
	bytes_unbind(&g, &f, u);
	pccx__usb_close(u);
	u = NULL;
	/* bound again: a new host handle, the same function serving */
	CHECK(!pccx__gadget_bind(&g, NULL, msg, sizeof(msg)));
	CHECK_RET(usb_open_wait(NULL, 5000, &u, &d), 0);
	if (u)
		CHECK_RET(echo_roundtrip(u, 70000, 7), 0);
	echo_stop = 1;
	while (pthread_tryjoin_np(th, NULL) == EBUSY) {
		pthread_kill(th, SIGUSR1);
		usleep(10000);
	}
out:
	pccx__usb_close(u);
	pccx__ffs_close(&f);
	pccx__gadget_remove(&g);
}


/* ---- the board daemon ------------------------------------------------------------------- */

static pid_t boardd = -1;

/* pccx-boardd with `opt` `val` (--gadget NAME: its own gadget); 0 once it says it is ready. */
static int boardd_start_with(const char *opt, const char *val)
{
	unlink(BOARDD_READY);
	boardd = fork();
	if (boardd == 0) {
		execl("/bin/pccx-boardd", "pccx-boardd", opt, val, "--serial", "qemu", "--ready",
		      BOARDD_READY, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (!access(BOARDD_READY, F_OK))
			return 0;
		if (waitpid(boardd, NULL, WNOHANG) == boardd) {
			boardd = -1;
			return -1;
		}
		usleep(10000);
	}
	return -1;
}

/* pccx-boardd making its own gadget on dummy_hcd. */
static int boardd_start(void)
{
	return boardd_start_with("--gadget", GADGET);
}

static bool boardd_alive(void)
{
	return boardd > 0 && waitpid(boardd, NULL, WNOHANG) == 0;
}

/* ---- the tiny Gemma on a backend ---------------------------------------------------------- */

#define GEMMA_TOKENS 16         /* with the prompt's step: 17 jobs */

struct gemma_run {
	int32_t ids[GEMMA_TOKENS];
	size_t n;
	struct pccx_stats st;
	double seconds;                 /* open, load, prefill, generate, close */
	double step_seconds;            /* prefill and generate: the jobs */
};

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	struct gemma_run *r = user;

	(void)piece;
	(void)len;
	if (r->n < GEMMA_TOKENS)
		r->ids[r->n++] = token;
	return 0;
}

/*
 * "tiny" (synthetic weights, fixed seed): a 1-token prompt and n greedy tokens on a backend.
 * With verify, the logits and the KV rows every step wrote are compared bit for bit with the
 * reference (a difference fails the step with PCCX_ERR_MISMATCH naming the element).
 */
static int gemma_run(const char *backend, size_t n, bool verify, struct gemma_run *r,
		     pccx_diag *d)
{
	struct pccx_device_opts dopt = { .struct_size = sizeof(dopt), .backend = backend };
	struct pccx_model_opts mopt = { .struct_size = sizeof(mopt), .synth_config = "tiny",
					.synth_seed = 7 };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = verify };
	struct pccx_sampler_config scfg;
	static const int32_t prompt[1] = { 2 };
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	double t0 = now_s(), t1;
	int rc;

	memset(r, 0, sizeof(*r));
	pccx_sampler_config_default(&scfg);
	scfg.temperature = 0;
	rc = pccx_device_open(&dopt, &dev, d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, d);
	t1 = now_s();
	if (!rc)
		rc = pccx_session_prefill(s, prompt, 1, d);
	if (!rc)
		rc = pccx_session_generate(s, &scfg, n, on_token, r, d);
	r->step_seconds = now_s() - t1;
	if (!rc)
		rc = pccx_session_stats(s, &r->st);
	r->seconds = now_s() - t0;
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc;
}

static struct gemma_run inproc;         /* the in-process backend's run: what usb must give */

/* gemma_run on backend usb, waiting up to 10 s for the board to enumerate. */
static int gemma_usb(size_t n, bool verify, struct gemma_run *u, pccx_diag *d)
{
	int rc, i;

	for (i = 0; i < 200; i++) {
		rc = gemma_run("usb", n, verify, u, d);
		if (rc != PCCX_ERR_NOT_FOUND)
			break;
		usleep(50000);
	}
	return rc;
}

/* n tokens through usb with verify, against in-process. */
static void gemma_check(size_t n, struct gemma_run *u)
{
	pccx_diag d = { 0 };
	int rc = gemma_usb(n, true, u, &d);

	if (rc)
		printf("  usb: %s\n", d.msg);
	CHECK_RET(rc, 0);
	CHECK(u->n == n);
	CHECK(u->st.jobs == 1 + n);
	CHECK(!memcmp(u->ids, inproc.ids, n * sizeof(u->ids[0])));
}

static void test_gemma(void)
{
	pccx_diag d = { 0 };
	struct gemma_run u;
	size_t i;

	CHECK_RET(gemma_run("sim", GEMMA_TOKENS, false, &inproc, &d), 0);
	if (boardd_start()) {
		CHECK(!"pccx-boardd started and ready");
		return;
	}
	gemma_check(GEMMA_TOKENS, &u);
	/* the link counts the bytes the jobs' streams name, the simulator those it reads: fewer
	 * in the tiny Gemma 3n's sparse layers (GEMV rowmask, q4c W_down) */
	CHECK(u.st.weight_bytes > inproc.st.weight_bytes);
	CHECK(u.st.dma_bytes == inproc.st.dma_bytes);
	if (!cur_failed) {
		printf("PCCX-BENCH gemma tiny, 1+%zu tokens: usb with verify %.2f s, in-process "
		       "%.2f s; tokens", u.n, u.seconds, inproc.seconds);
		for (i = 0; i < u.n; i++)
			printf(" %d", u.ids[i]);
		printf("\n");
	}
}

/* ---- usb-storm: malformed frames straight onto the endpoint -------------------------------- */

struct storm {
	struct pccx_usb_link *u;
	struct pccx_link_rx rx;
	uint8_t rxbuf[PCCX_LINK_OVERHEAD + 65536];
	uint8_t f[PCCX_LINK_OVERHEAD + 8192];
	uint32_t seq;
};

static int storm_send(struct storm *s, const void *b, size_t n)
{
	pccx_diag d = { 0 };

	return pccx__usb_write(s->u, b, n, 5000, &d);
}

/* A frame of type with n payload bytes of value v; returns its size. */
static size_t storm_frame(struct storm *s, uint8_t type, uint32_t n, uint8_t v, uint32_t seq)
{
	memset(s->f + PCCX_LINK_HDR, v, n);
	return pccx__link_seal(s->f, type, 0, seq, n);
}

/* The next whole frame the board sends, within ms; its header and payload. */
static int storm_reply(struct storm *s, int ms, struct pccx_link_rx_event *ev)
{
	static uint8_t in[4096];
	static size_t have, off;
	double end = now_s() + ms / 1000.0;
	pccx_diag d = { 0 };

	for (;;) {
		while (off < have) {
			off += pccx__link_rx_feed(&s->rx, in + off, have - off, ev);
			if (ev->kind == PCCX_LINK_RX_FRAME)
				return 0;
		}
		if (now_s() >= end)
			return PCCX_ERR_TIMEOUT;
		off = have = 0;
		if (pccx__usb_read(s->u, in, sizeof(in), ms < 100 ? (unsigned int)ms + 1 : 100, &have,
				   &d) == PCCX_ERR_IO)
			return PCCX_ERR_IO;
	}
}

/* The reply must be the error `code` for seq. */
static void storm_expect(struct storm *s, int code, uint32_t seq, int line)
{
	struct pccx_link_rx_event ev;
	char what[160];

	snprintf(what, sizeof(what), "an error reply %s with seq %u", pccx__link_err_name(code),
		 seq);
	if (storm_reply(s, 2000, &ev)) {
		check(0, line, what);
		return;
	}
	check(ev.hdr.type == PCCX_LINK_ERROR && ev.hdr.seq == seq && ev.hdr.len >= 4 &&
	      (int)pccx__le32_get(ev.payload) == code, line, what);
}

static void storm_frames(struct storm *s)
{
	static uint8_t junk[8192];
	size_t n, i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 3);         /* never the magic's first byte 'P' */
	/* noise: hunted through silently */
	CHECK_RET(storm_send(s, junk, sizeof(junk)), 0);
	/* a damaged header: HEADER_CRC with seq 0 */
	n = storm_frame(s, PCCX_LINK_PING, 16, 1, 11);
	s->f[16] ^= 0x40;
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_HEADER_CRC, 0, __LINE__);
	/* a damaged payload */
	n = storm_frame(s, PCCX_LINK_PING, 16, 2, 12);
	s->f[PCCX_LINK_HDR + 3] ^= 1;
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_PAYLOAD_CRC, 12, __LINE__);
	/* a version the board does not speak, then the REPLY flag on a request */
	n = storm_frame(s, PCCX_LINK_PING, 8, 3, 13);
	s->f[4] = 9;
	pccx__le32_put(s->f + 16, pccx__link_crc32(0, s->f, 16));
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_VERSION, 13, __LINE__);
	n = pccx__link_seal(s->f, PCCX_LINK_PING, PCCX_LINK_F_REPLY, 14, 0);
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_FLAGS, 14, __LINE__);
	/* longer than max_payload: refused, its bytes skipped by the length */
	pccx__link_seal(s->f, PCCX_LINK_PING, 0, 15, 0);
	pccx__le32_put(s->f + 12, 1u << 30);
	pccx__le32_put(s->f + 16, pccx__link_crc32(0, s->f, 16));
	CHECK_RET(storm_send(s, s->f, PCCX_LINK_HDR), 0);
	storm_expect(s, PCCX_LINK_E_TOO_LONG, 15, __LINE__);
	usleep((PCCX_LINK_IDLE_MS + 150) * 1000);      /* the skip ends when the link is quiet */
	/* an unknown type, a wrong length, a handle the board never gave */
	n = storm_frame(s, 0x55, 0, 0, 16);
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_TYPE, 16, __LINE__);
	n = storm_frame(s, PCCX_LINK_INFO, 3, 0, 17);
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_LENGTH, 17, __LINE__);
	n = storm_frame(s, PCCX_LINK_BUF_FREE, PCCX_LINK_FREE_REQ, 0, 18);
	pccx__le32_put(s->f + PCCX_LINK_HDR, 12345);
	pccx__le32_put(s->f + PCCX_LINK_HDR + PCCX_LINK_FREE_REQ,
		       pccx__link_crc32(0, s->f + PCCX_LINK_HDR, PCCX_LINK_FREE_REQ));
	CHECK_RET(storm_send(s, s->f, n), 0);
	storm_expect(s, PCCX_LINK_E_HANDLE, 18, __LINE__);
	/* a frame that stops half way: dropped after the idle timeout */
	n = storm_frame(s, PCCX_LINK_PING, 4000, 4, 19);
	CHECK_RET(storm_send(s, s->f, n / 2), 0);
	storm_expect(s, PCCX_LINK_E_TRUNCATED, 19, __LINE__);
}

/*
 * 300 valid frames with one byte flipped each, back to back, whatever the board answers. The
 * replies are read as they come: a board writes on USB only as fast as the host reads.
 */
static void storm_flips(struct storm *s)
{
	struct pccx_link_rx_event ev;
	uint32_t rng = 1;
	size_t n;
	int i;

	for (i = 0; i < 300; i++) {
		rng = rng * 1103515245u + 12345u;
		n = storm_frame(s, (uint8_t)(1 + (rng >> 8) % 10), (rng >> 12) % 64, (uint8_t)i,
				100 + (uint32_t)i);
		s->f[(rng >> 20) % n] ^= (uint8_t)(1 + (rng >> 4) % 255);
		CHECK_RET(storm_send(s, s->f, n), 0);
		while (!storm_reply(s, 1, &ev))
			;
	}
	/* drain until the link is quiet past the idle timeout */
	while (!storm_reply(s, PCCX_LINK_IDLE_MS + 300, &ev))
		;
}

static void test_storm(void)
{
	static struct storm s;
	struct pccx_link_rx_event ev;
	struct gemma_run u;
	pccx_diag d = { 0 };
	size_t n;

	if (!boardd_alive()) {
		CHECK(!"pccx-boardd is running");
		return;
	}
	CHECK_RET(usb_open_wait(NULL, 10000, &s.u, &d), 0);
	if (!s.u)
		return;
	pccx__link_rx_init(&s.rx, s.rxbuf, sizeof(s.rxbuf) - PCCX_LINK_OVERHEAD, true);
	storm_frames(&s);
	storm_flips(&s);
	/* in step again: a PING comes back with its seq and bytes */
	n = storm_frame(&s, PCCX_LINK_PING, 1000, 0x5a, 777);
	CHECK_RET(storm_send(&s, s.f, n), 0);
	CHECK_RET(storm_reply(&s, 2000, &ev), 0);
	CHECK(ev.hdr.type == PCCX_LINK_PING && ev.hdr.seq == 777 && ev.hdr.len == 1000);
	CHECK(ev.hdr.len == 1000 && ev.payload[0] == 0x5a && ev.payload[999] == 0x5a);
	pccx__usb_close(s.u);
	/* and the whole path still gives the in-process tokens */
	CHECK(boardd_alive());
	gemma_check(4, &u);
}

/* ---- usb-unbind: the gadget goes away while a job runs ------------------------------------ */

struct bg_run {
	struct gemma_run r;
	pccx_diag d;
	int rc;
	double end;
};

static void *bg_gemma(void *arg)
{
	struct bg_run *b = arg;

	b->rc = gemma_run("usb", GEMMA_TOKENS, true, &b->r, &b->d);
	b->end = now_s();
	return NULL;
}

/* Wait until path reads a value `cmp` want (1: >=, 0: ==), up to ms. */
static int wait_value(const char *path, long want, int ge, int ms)
{
	for (; ms > 0; ms -= 10) {
		long v = read_long(path);

		if (ge ? v >= want : v == want)
			return 0;
		usleep(10000);
	}
	return -1;
}

static void test_unbind(void)
{
	long done0 = read_long(SYSFS "jobs_done");
	struct bg_run b = { .rc = 1 };
	struct gemma_run u;
	pthread_t th;
	double t_unbind;

	if (!boardd_alive()) {
		CHECK(!"pccx-boardd is running");
		return;
	}
	CHECK(!pthread_create(&th, NULL, bg_gemma, &b));
	/* a few steps through the board, then the next job hangs on the device */
	CHECK(!wait_value(SYSFS "jobs_done", done0 + 3, 1, 60000));
	CHECK(!write_text(dbgfs("hang_jobs"), "1"));
	CHECK(!wait_value(dbgfs("hang_jobs"), 0, 0, 30000));
	t_unbind = now_s();
	CHECK(!write_text(GADGET_UDC, "\n"));
	pthread_join(th, NULL);
	/* a clear error at once: the link failed, not a timeout of the job */
	CHECK_RET(b.rc, PCCX_ERR_IO);
	CHECK(b.end - t_unbind < 5);
	CHECK(strstr(b.d.msg, "usb 1209:0001") != NULL);
	printf("  unbound during a job: %s (%.2f s after the unbind)\n", b.d.msg,
	       b.end - t_unbind);
	CHECK(b.r.n < GEMMA_TOKENS);
	/* the daemon dropped that host's buffers and job, and serves the next one */
	CHECK(boardd_alive());
	usleep(200000);
	CHECK(!write_text(GADGET_UDC, "dummy_udc.0"));
	gemma_check(4, &u);
	CHECK(boardd_alive());
}


/* ---- usb-bench: the same job on every path in this guest, and the link itself ------------ */

#define BENCH_TOKENS    4

/* Round trips of PINGs of n bytes through the link backend; seconds per round trip. */
static double ping_seconds(struct pccx_link_backend *lb, uint32_t n, int times)
{
	pccx_diag d = { 0 };
	double t0 = now_s();
	int i;

	for (i = 0; i < times; i++)
		if (pccx__link_backend_ping(lb, n, &d)) {
			printf("  PING of %u bytes: %s\n", n, d.msg);
			return -1;
		}
	return (now_s() - t0) / times;
}

static void bench_link(void)
{
	struct pccx_link_transport t;
	struct pccx_link_backend *lb = NULL;
	pccx_diag d = { 0 };
	double small, big;
	char name[64];

	CHECK_RET(pccx__usb_transport_open(NULL, &t, name, sizeof(name), &d), 0);
	if (cur_failed)
		return;
	CHECK_RET(pccx__link_backend_create(&t, name, &lb, &d), 0);
	if (cur_failed)
		return;
	small = ping_seconds(lb, 0, 200);
	big = ping_seconds(lb, 65536, 20);
	CHECK(small > 0 && big > 0);
	if (!cur_failed)
		printf("PCCX-BENCH usb link (dummy_hcd): empty PING %.0f us round trip; 64 KiB PING "
		       "%.0f us, %.1f MB/s each way\n", small * 1e6, big * 1e6, 65536 / big / 1e6);
	pccx__link_backend_destroy(lb);
}

static void test_bench(void)
{
	static const char *const name[] = { "in-process", "/dev/pccx", "usb" };
	struct gemma_run r[3];
	pccx_diag d = { 0 };
	double ms[3];
	int i;

	if (!boardd_alive() && boardd_start()) {
		CHECK(!"pccx-boardd started and ready");
		return;
	}
	CHECK_RET(gemma_run("sim", BENCH_TOKENS, false, &r[0], &d), 0);
	CHECK_RET(gemma_run("kernel", BENCH_TOKENS, false, &r[1], &d), 0);
	CHECK_RET(gemma_usb(BENCH_TOKENS, false, &r[2], &d), 0);
	if (cur_failed) {
		printf("  %s\n", d.msg);
		return;
	}
	for (i = 0; i < 3; i++) {
		CHECK(r[i].st.jobs == 1 + BENCH_TOKENS);
		CHECK(r[i].n == BENCH_TOKENS && !memcmp(r[i].ids, r[0].ids, sizeof(r[0].ids)));
		ms[i] = r[i].step_seconds / (double)r[i].st.jobs * 1e3;
	}
	if (!cur_failed)
		printf("PCCX-BENCH tiny decode step (the same job, %d runs each), per job: %s %.1f ms, "
		       "%s %.1f ms, %s %.1f ms\n", 1 + BENCH_TOKENS, name[0], ms[0], name[1], ms[1],
		       name[2], ms[2]);
	bench_link();
}

/* SIGTERM: the daemon unbinds, removes its gadget and exits 0. */
static void test_daemon_exit(void)
{
	int st = -1;

	if (!boardd_alive()) {
		CHECK(!"pccx-boardd is running");
		return;
	}
	kill(boardd, SIGTERM);
	CHECK(waitpid(boardd, &st, 0) == boardd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(access(PCCX_GADGET_CONFIGFS "/" GADGET, F_OK) != 0);
	boardd = -1;
}

/*
 * A board whose own set-up makes and binds the gadget: the daemon only takes the mounted
 * FunctionFS (--ffs), a host reaches it, and at exit the daemon leaves the gadget alone.
 */
static void test_ffs_only(void)
{
	struct pccx_gadget g = { .name = "pccxown", .ffs_dir = "/dev/ffs-pccxown",
				 .vid = PCCX_USB_VID, .pid = PCCX_USB_PID, .serial = "own" };
	struct pccx_device_opts dopt = { .struct_size = sizeof(dopt), .backend = "usb" };
	struct pccx_device_info info;
	pccx_device *dev = NULL;
	pccx_diag d = { 0 };
	char msg[512];
	int st = -1, rc = PCCX_ERR_NOT_FOUND, i;

	if (pccx__gadget_make(&g, msg, sizeof(msg))) {
		printf("  %s\n", msg);
		CHECK(0);
		goto out;
	}
	CHECK(!boardd_start_with("--ffs", g.ffs_dir));
	CHECK(!pccx__gadget_bind(&g, NULL, msg, sizeof(msg)));
	for (i = 0; i < 200 && rc == PCCX_ERR_NOT_FOUND; i++) {
		rc = pccx_device_open(&dopt, &dev, &d);
		if (rc == PCCX_ERR_NOT_FOUND)
			usleep(50000);
	}
	CHECK_RET(rc, 0);
	if (!rc) {
		CHECK_RET(pccx_device_info(dev, &info), 0);
		CHECK(!strcmp(info.backend, "usb") && info.l2_words > 0);
		pccx_device_close(dev);
	}
	if (boardd > 0) {
		kill(boardd, SIGTERM);
		CHECK(waitpid(boardd, &st, 0) == boardd);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		boardd = -1;
	}
	CHECK(access(PCCX_GADGET_CONFIGFS "/pccxown/UDC", F_OK) == 0);
out:
	pccx__gadget_remove(&g);
}

/* ---- the tests ---------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
	bool bench;                     /* also runs for a list naming "bench" (scripts/bench.sh) */
} tests[] = {
	{ "usb-bytes", test_bytes, false },
	{ "usb-gemma", test_gemma, false },
	{ "usb-storm", test_storm, false },
	{ "usb-unbind", test_unbind, false },
	{ "usb-bench", test_bench, true },
	{ "usb-daemon-exit", test_daemon_exit, true },
	{ "usb-ffs-only", test_ffs_only, false },
};

int main(int argc, char **argv)
{
	const char *only = argc > 1 && argv[1][0] ? argv[1] : NULL;
	struct sigaction sa;
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;        /* no SA_RESTART: it ends a blocked endpoint read */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (only && !strstr(only, "usb") && !(tests[i].bench && strstr(only, "bench")))
			continue;
		guest_run(tests[i].name, tests[i].fn);
	}
	if (boardd > 0) {
		kill(boardd, SIGKILL);
		waitpid(boardd, NULL, 0);
	}
	return guest_summary("usb-link");
}
