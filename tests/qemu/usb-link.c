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
 *
 * Prints "PCCX-TEST ok|FAIL NAME" lines like pccx-tests; exits 1 if any failed.
 *   usb-link [list]     runs every test when list is empty or names "usb"
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

#include "pccx/pccx.h"
#include "ffs.h"
#include "gadget.h"
#include "transport_usb.h"

#define SYSFS           "/sys/class/misc/pccx/"
#define DBGFS_HANG      "/sys/kernel/debug/pccx/"
#define GADGET          "pccx"
#define ECHO_GADGET     "pccxecho"
#define ECHO_PIECE      (64 * 1024)     /* what the echo reads at once, at most */

static int n_pass, n_fail;
static const char *cur;
static int cur_failed;

#define CHECK(c) check((c), __LINE__, #c)
#define CHECK_RET(expr, want) check_ret((expr), (want), __LINE__, #expr)

static void check(int ok, int line, const char *what)
{
	if (ok)
		return;
	if (!cur_failed)
		printf("PCCX-TEST FAIL %s: line %d: %s\n", cur, line, what);
	else
		printf("  (also line %d: %s)\n", line, what);
	fflush(stdout);
	cur_failed = 1;
}

static void check_ret(int got, int want, int line, const char *what)
{
	char buf[300];

	if (got == want)
		return;
	snprintf(buf, sizeof(buf), "%s returned %d (%s), expected %d (%s)", what, got,
		 pccx_strerror(got), want, pccx_strerror(want));
	check(0, line, buf);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

/* ---- the tests ---------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "usb-bytes", test_bytes },
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
		double t0 = now_s();

		if (only && !strstr(only, "usb"))
			continue;
		cur = tests[i].name;
		cur_failed = 0;
		tests[i].fn();
		if (cur_failed) {
			n_fail++;
			printf("  (%s took %.1f s)\n", cur, now_s() - t0);
		} else {
			n_pass++;
			printf("PCCX-TEST ok %s (%.1f s)\n", cur, now_s() - t0);
		}
	}
	printf("usb-link: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
