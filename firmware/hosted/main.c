// SPDX-License-Identifier: MIT
/*
 * pccx-board: the hosted board (board.h) serving the link protocol on a Unix socket, for
 * libpccx's `serial` backend on a machine without a board:
 *
 *   pccx-board --listen PATH [--once] [--region-mib N] [--max-payload BYTES]
 *              [--corrupt-job N]
 *
 * Connections are served one at a time; the board (its buffers, its device) outlives them,
 * as a real board outlives its host's processes. --once: exit when the first one closes.
 * --corrupt-job N (tests): job N's results are made wrong (board.h), to show they are noticed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "board.h"

static volatile int stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: pccx-board --listen PATH [--once] [--region-mib N] "
		"[--max-payload BYTES] [--corrupt-job N]\n");
	return 2;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "pccx-board: %s: socket path too long\n", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		fprintf(stderr, "pccx-board: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int parse_u64(const char *s, const char *opt, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "pccx-board: %s '%s': not a number\n", opt, s);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pccx_hosted_board_opts o = { 0 };
	struct pccx_hosted_board *b;
	struct sigaction sa = { .sa_handler = on_signal };
	const char *path = NULL;
	pccx_diag d = { 0 };
	bool once = false;
	int i, lfd, rc = 0;

	for (i = 1; i < argc; i++) {
		unsigned long long v;

		if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(argv[i], "--once")) {
			once = true;
		} else if (!strcmp(argv[i], "--region-mib") && i + 1 < argc) {
			if (parse_u64(argv[++i], "--region-mib", &v) || !v || v > 65536)
				return usage();
			o.region_bytes = v << 20;
		} else if (!strcmp(argv[i], "--corrupt-job") && i + 1 < argc) {
			if (parse_u64(argv[++i], "--corrupt-job", &v))
				return usage();
			o.corrupt_job = v;
		} else if (!strcmp(argv[i], "--max-payload") && i + 1 < argc) {
			if (parse_u64(argv[++i], "--max-payload", &v) || v > UINT32_MAX)
				return usage();
			o.max_payload = (uint32_t)v;
		} else {
			return usage();
		}
	}
	if (!path)
		return usage();
	if (pccx__hosted_board_create(&o, &b, &d)) {
		fprintf(stderr, "pccx-board: %s\n", d.msg);
		return 1;
	}
	lfd = listen_on(path);
	if (lfd < 0) {
		pccx__hosted_board_destroy(b);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fprintf(stderr, "pccx-board: listening on %s\n", path);
	while (!stop) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "pccx-board: accept: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		if (pccx__hosted_board_serve(b, fd, &stop))
			fprintf(stderr, "pccx-board: reading the connection: %s\n", strerror(errno));
		close(fd);
		if (once)
			break;
	}
	close(lfd);
	unlink(path);
	pccx__hosted_board_destroy(b);
	return rc;
}
