// SPDX-License-Identifier: MIT
/*
 * The serial transport (backend_link.h): a tty set raw, or a Unix stream socket (QEMU's
 * `-serial unix:PATH,server`, the hosted test board). The descriptor is non-blocking: reads
 * wait with poll(); writes loop until every byte is out, failing when the other end takes none
 * for 10 s (a board that stopped reading must not hang the host); a peer that went away is a
 * negative return, never SIGPIPE.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "backend_link.h"
#include "diag.h"
#include "fileio.h"

struct fd_link {
	int fd;
	bool sock;
};

static int fd_read(void *ctx, void *buf, size_t n, uint32_t timeout_ms)
{
	struct fd_link *l = ctx;
	struct pollfd p = { .fd = l->fd, .events = POLLIN };
	ssize_t r;
	int k;

	do
		k = poll(&p, 1, (int)timeout_ms);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -1;
	if (!k)
		return 0;
	do
		r = read(l->fd, buf, n > 65536 ? 65536 : n);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	/* 0 bytes after POLLIN: the peer closed the stream */
	return r > 0 ? (int)r : -1;
}

static int fd_write(void *ctx, const void *buf, size_t n)
{
	struct fd_link *l = ctx;

	return pccx__fd_write_all(l->fd, l->sock, buf, n, 10000);
}

static void fd_close(void *ctx)
{
	struct fd_link *l = ctx;

	close(l->fd);
	free(l);
}

static int wrap(int fd, bool sock, struct pccx_link_transport *t)
{
	struct fd_link *l;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -1;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -1;
	l->fd = fd;
	l->sock = sock;
	t->read = fd_read;
	t->write = fd_write;
	t->close = fd_close;
	t->ctx = l;
	return 0;
}

void pccx__fd_transport(int fd, struct pccx_link_transport *t)
{
	struct stat sb;

	memset(t, 0, sizeof(*t));
	if (wrap(fd, !fstat(fd, &sb) && S_ISSOCK(sb.st_mode), t))
		close(fd);
}

static int open_socket(const char *path, pccx_diag *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: socket path longer than %zu bytes", path,
				  sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pccx__fail(d, PCCX_ERR_IO, "%s: socket: %s", path, strerror(errno));
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		return pccx__fail(d, e == ECONNREFUSED ? PCCX_ERR_NOT_FOUND : PCCX_ERR_IO,
				  "%s: connect: %s (is the board listening?)", path, strerror(e));
	}
	return fd;
}

/* 8N1, no flow control, no line discipline: the link carries binary frames. */
static int open_tty(const char *path, pccx_diag *d)
{
	struct termios tio;
	int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return pccx__fail(d, errno == ENOENT ? PCCX_ERR_NOT_FOUND : PCCX_ERR_IO, "%s: %s",
				  path, strerror(errno));
	if (!isatty(fd)) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: neither a tty nor a Unix socket", path);
	}
	if (tcgetattr(fd, &tio)) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_IO, "%s: tcgetattr: %s", path, strerror(errno));
	}
	cfmakeraw(&tio);
	tio.c_cflag |= CLOCAL | CREAD;
	tio.c_cflag &= ~(tcflag_t)(CSTOPB | CRTSCTS);
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	/* a pseudo-terminal ignores the speed; a UART needs one both ends agree on */
	cfsetispeed(&tio, B115200);
	cfsetospeed(&tio, B115200);
	if (tcsetattr(fd, TCSANOW, &tio)) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_IO, "%s: tcsetattr: %s", path, strerror(errno));
	}
	tcflush(fd, TCIOFLUSH);
	return fd;
}

int pccx__serial_transport_open(const char *path, struct pccx_link_transport *t, pccx_diag *d)
{
	struct stat sb;
	bool sock;
	int fd;

	memset(t, 0, sizeof(*t));
	if (!path || !*path)
		return pccx__fail(d, PCCX_ERR_INVALID, "backend 'serial': no path (a tty or a Unix "
				  "socket the board listens on)");
	if (stat(path, &sb))
		return pccx__fail(d, errno == ENOENT ? PCCX_ERR_NOT_FOUND : PCCX_ERR_IO, "%s: %s",
				  path, strerror(errno));
	sock = S_ISSOCK(sb.st_mode);
	fd = sock ? open_socket(path, d) : open_tty(path, d);
	if (fd < 0)
		return fd;
	if (wrap(fd, sock, t)) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	return 0;
}
