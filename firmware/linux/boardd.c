// SPDX-License-Identifier: MIT
/*
 * pccx-boardd: the Linux board daemon (docs/usb.md). Serves the host link (docs/link.md) on a
 * USB FunctionFS function and runs the jobs through /dev/pccx.
 *
 *   pccx-boardd [--gadget NAME [--udc UDC] [--vid HEX] [--pid HEX] [--serial S]]
 *               [--ffs DIR] [--device PATH] [--ready FILE]
 *
 * Threads: the main one owns the server, ep0 and the replies; a reader blocks in the bulk OUT
 * endpoint's read (FunctionFS endpoints cannot be polled) and passes each chunk, or the news
 * that the host went away, through a SOCK_SEQPACKET pair, in order. When the host goes away
 * (the function disabled: unplugged, unbound, reconfigured) the daemon drops everything the
 * host made - its buffers, its job - and serves the next host from a clean board.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ffs.h"
#include "gadget.h"
#include "kexec.h"
#include "pccx_fw.h"

#define MAX_BUFS        256
#define FRAME_BYTES     (PCCX_LINK_OVERHEAD + 256 * 1024)

enum { MSG_DATA = 'D', MSG_DROPPED = 'X' };

struct daemon {
	struct pccx_ffs ffs;
	struct pccx_kexec kx;
	struct pccx_fw_server srv;
	struct pccx_fw_server_cfg sc;
	struct pccx_gadget g;
	const char *device, *udc, *ready;
	int sock[2];                    /* [0] the main thread's end, [1] the reader's */
	bool reading;                   /* the reader thread runs */
	uint64_t chunks, drops;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	if (sig != SIGUSR1)
		stop = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("pccx-boardd: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the reader thread ----------------------------------------------------------------- */

static void *reader(void *arg)
{
	struct daemon *dm = arg;
	static uint8_t buf[1 + PCCX_FFS_READ_MAX];
	bool connected = false;

	while (!stop) {
		ssize_t n = pccx__ffs_read(&dm->ffs, buf + 1, PCCX_FFS_READ_MAX);

		if (n > 0) {
			connected = true;
			buf[0] = MSG_DATA;
			if (send(dm->sock[1], buf, (size_t)n + 1, 0) < 0)
				break;
			continue;
		}
		if (n == 0 || n == -EINTR)
			continue;       /* a zero-length packet; the signal that stops us */
		/* disabled (EAGAIN on a non-blocking endpoint file) or torn down mid-read */
		if (connected) {
			buf[0] = MSG_DROPPED;
			if (send(dm->sock[1], buf, 1, 0) < 0)
				break;
			connected = false;
		}
		usleep(n == -EAGAIN || n == -ESHUTDOWN || n == -ECONNRESET ? 10000 : 100000);
	}
	return NULL;
}

/* ---- the server ------------------------------------------------------------------------- */

static int write_reply(void *ctx, const void *buf, size_t n)
{
	struct daemon *dm = ctx;

	return pccx__ffs_write(&dm->ffs, buf, n);
}

static int serve_init(struct daemon *dm, char *msg, size_t n)
{
	static uint8_t rx[FRAME_BYTES], tx[FRAME_BYTES];
	static struct pccx_fw_buf bufs[MAX_BUFS];
	int r = pccx__kexec_open(&dm->kx, dm->device, MAX_BUFS, msg, n);

	if (r)
		return r;
	memset(bufs, 0, sizeof(bufs));
	dm->sc = (struct pccx_fw_server_cfg){
		.exec = &pccx__kexec_ops, .exec_ctx = &dm->kx,
		.write = write_reply, .write_ctx = dm,
		.rx = rx, .tx = tx, .buf_size = FRAME_BYTES,
		.bufs = bufs, .max_bufs = MAX_BUFS, .name = "usb-daemon",
	};
	if (pccx__fw_server_init(&dm->srv, &dm->sc)) {
		pccx__kexec_close(&dm->kx);
		snprintf(msg, n, "the link server refused its configuration");
		return -EINVAL;
	}
	return 0;
}

/* The host went away: its buffers and job go with it; the next host finds a clean board. */
static int host_gone(struct daemon *dm)
{
	char msg[256];
	int r;

	dm->drops++;
	pccx__kexec_close(&dm->kx);
	r = serve_init(dm, msg, sizeof(msg));
	if (r)
		say("%s", msg);
	else
		say("host gone: buffers and job dropped, serving again");
	return r;
}

static void handle_event(struct daemon *dm)
{
	int ev = pccx__ffs_event(&dm->ffs, 0);

	if (ev == PCCX_FFS_NONE || ev == PCCX_FFS_OTHER)
		return;
	if (ev < 0) {
		say("ep0: %s", strerror(-ev));
		usleep(100000);
		return;
	}
	if (ev == PCCX_FFS_ENABLE)
		pccx__ffs_update_maxpacket(&dm->ffs);
	say("%s%s", pccx__ffs_event_name(ev), ev == PCCX_FFS_ENABLE ? " (a host configured us)" :
	    "");
}

/* One chunk from the reader. Returns -1 when the reader is gone. */
static int handle_chunk(struct daemon *dm)
{
	static uint8_t buf[1 + PCCX_FFS_READ_MAX];
	ssize_t n = recv(dm->sock[0], buf, sizeof(buf), 0);

	if (n <= 0)
		return n < 0 && errno == EINTR ? 0 : -1;
	if (buf[0] == MSG_DROPPED)
		return host_gone(dm) ? -1 : 0;
	dm->chunks++;
	pccx__fw_server_feed(&dm->srv, buf + 1, (size_t)n - 1, now_ms());
	return 0;
}

static int serve(struct daemon *dm)
{
	while (!stop) {
		struct pollfd p[2] = { { .fd = dm->sock[0], .events = POLLIN },
				       { .fd = dm->ffs.ep0, .events = POLLIN } };
		int r = poll(p, 2, (int)pccx__fw_server_read_timeout(&dm->srv));

		if (r < 0 && errno != EINTR)
			return -errno;
		/* an error on ep0 is read (and reported) too, never polled again at once */
		if (r > 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP)))
			handle_event(dm);
		if (r > 0 && (p[0].revents & (POLLIN | POLLHUP)) && handle_chunk(dm))
			return -EIO;
		pccx__fw_server_poll(&dm->srv, now_ms());
	}
	return 0;
}

/* ---- start-up ---------------------------------------------------------------------------- */

static void usage(void)
{
	fputs("usage: pccx-boardd [--gadget NAME [--udc UDC] [--vid HEX] [--pid HEX] "
	      "[--serial S]]\n"
	      "                   [--ffs DIR] [--device PATH] [--ready FILE]\n"
	      "Serves the pccx host link (docs/link.md) on a USB FunctionFS function and runs\n"
	      "the jobs through /dev/pccx (docs/usb.md).\n"
	      "  --gadget NAME  make the configfs gadget NAME, mount its FunctionFS, bind it\n"
	      "  --udc UDC      the controller to bind to (default: the first one)\n"
	      "  --vid, --pid   the device's IDs (default 1209:0001)\n"
	      "  --serial S     its serial number string\n"
	      "  --ffs DIR      the FunctionFS mount (default /dev/ffs-NAME, or /dev/ffs-pccx)\n"
	      "  --device PATH  the pccx device node (default /dev/pccx)\n"
	      "  --ready FILE   create FILE once the function is ready for a host\n", stderr);
}

static int parse_id(const char *s, uint16_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 16);

	if (!s[0] || *end || v > 0xffff) {
		say("'%s' is not a 16-bit hexadecimal USB ID", s);
		return -1;
	}
	*out = (uint16_t)v;
	return 0;
}

static int parse_args(struct daemon *dm, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gadget", 1, NULL, 'g' }, { "udc", 1, NULL, 'u' }, { "vid", 1, NULL, 'V' },
		{ "pid", 1, NULL, 'P' }, { "serial", 1, NULL, 's' }, { "ffs", 1, NULL, 'f' },
		{ "device", 1, NULL, 'd' }, { "ready", 1, NULL, 'r' }, { "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	dm->g.vid = PCCX_USB_VID;
	dm->g.pid = PCCX_USB_PID;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'g': snprintf(dm->g.name, sizeof(dm->g.name), "%s", optarg); break;
		case 'u': dm->udc = optarg; break;
		case 'V': if (parse_id(optarg, &dm->g.vid)) return -1; break;
		case 'P': if (parse_id(optarg, &dm->g.pid)) return -1; break;
		case 's': snprintf(dm->g.serial, sizeof(dm->g.serial), "%s", optarg); break;
		case 'f': snprintf(dm->g.ffs_dir, sizeof(dm->g.ffs_dir), "%s", optarg); break;
		case 'd': dm->device = optarg; break;
		case 'r': dm->ready = optarg; break;
		case 'h': usage(); exit(0);
		default: usage(); return -1;
		}
	}
	if (optind < argc) {
		say("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!dm->g.ffs_dir[0])
		snprintf(dm->g.ffs_dir, sizeof(dm->g.ffs_dir), "/dev/ffs-%s",
			 dm->g.name[0] ? dm->g.name : "pccx");
	return 0;
}

static int start(struct daemon *dm, pthread_t *th)
{
	sigset_t stops, old;
	char msg[512];
	int r;

	if (dm->g.name[0] && (r = pccx__gadget_make(&dm->g, msg, sizeof(msg)))) {
		say("gadget: %s", msg);
		return r;
	}
	r = serve_init(dm, msg, sizeof(msg));
	if (!r)
		r = pccx__ffs_open(&dm->ffs, dm->g.ffs_dir, msg, sizeof(msg));
	if (!r && dm->g.name[0])
		r = pccx__gadget_bind(&dm->g, dm->udc, msg, sizeof(msg));
	if (r) {
		say("%s", msg);
		return r;
	}
	/*
	 * SIGTERM and SIGINT must reach the main thread, whose poll they end: the reader would
	 * only stop itself, leaving the main thread asleep. So the reader starts with them
	 * blocked; SIGUSR1, which ends its read at shutdown, stays open.
	 */
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, dm->sock)) {
		say("cannot start the reader: %s", strerror(errno));
		return -errno;
	}
	pthread_sigmask(SIG_BLOCK, &stops, &old);
	r = pthread_create(th, NULL, reader, dm);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		say("cannot start the reader: %s", strerror(r));
		return -r;
	}
	dm->reading = true;
	if (dm->ready) {
		FILE *f = fopen(dm->ready, "w");

		if (f)
			fclose(f);
	}
	say("serving on %s (%04x:%04x) with %s", dm->g.ffs_dir, dm->g.vid, dm->g.pid,
	    dm->kx.path);
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon dm = { .ffs = { -1, -1, -1, 512 }, .sock = { -1, -1 } };
	struct sigaction sa;
	pthread_t th;
	int r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);  /* no SA_RESTART: it ends the reader's read */
	signal(SIGPIPE, SIG_IGN);
	if (parse_args(&dm, argc, argv))
		return 2;
	r = start(&dm, &th);
	if (!r)
		r = serve(&dm);
	if (r)
		say("stopping: %s", strerror(-r));
	if (dm.reading) {
		/* the reader may be blocked in a read of the bulk endpoint: interrupt it */
		stop = 1;
		while (pthread_tryjoin_np(th, NULL) == EBUSY) {
			pthread_kill(th, SIGUSR1);
			usleep(10000);
		}
	}
	pccx__ffs_close(&dm.ffs);
	pccx__gadget_remove(&dm.g);
	pccx__kexec_close(&dm.kx);
	say("%llu chunks served, %llu host(s) gone", (unsigned long long)dm.chunks,
	    (unsigned long long)dm.drops);
	return r ? 1 : 0;
}
