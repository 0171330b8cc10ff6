// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "fileio.h"

static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "directory";
	if (S_ISFIFO(mode))
		return "fifo";
	if (S_ISCHR(mode))
		return "character device";
	if (S_ISBLK(mode))
		return "block device";
	if (S_ISSOCK(mode))
		return "socket";
	return "unknown file type";
}

int pccx__open_regular(const char *path, int missing_status, int *fd, struct stat *st,
		       pccx_diag *d)
{
	int f, e, flags;

	*fd = -1;
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. */
	f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f < 0) {
		e = errno;
		/* a socket cannot be opened at all (ENXIO): name what it is */
		if (stat(path, st) == 0 && !S_ISREG(st->st_mode))
			return pccx__fail(d, PCCX_ERR_IO, "%s: not a regular file (%s)", path,
					  file_kind(st->st_mode));
		return pccx__fail(d, e == ENOENT ? missing_status : PCCX_ERR_IO,
				  "%s: cannot open: %s", path, strerror(e));
	}
	if (fstat(f, st) != 0) {
		e = errno;
		close(f);
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(f);
		return pccx__fail(d, PCCX_ERR_IO, "%s: not a regular file (%s)", path,
				  file_kind(st->st_mode));
	}
	flags = fcntl(f, F_GETFL);
	if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		e = errno;
		close(f);
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot clear O_NONBLOCK: %s", path,
				  strerror(e));
	}
	*fd = f;
	return PCCX_OK;
}

int pccx__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *len, pccx_diag *d)
{
	struct stat sb;
	uint8_t *buf;
	size_t got = 0;
	int fd, rc;

	*data = NULL;
	*len = 0;
	rc = pccx__open_regular(path, PCCX_ERR_IO, &fd, &sb, d);
	if (rc)
		return rc;
	if ((uint64_t)sb.st_size > max_bytes) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: %lld bytes, more than the limit of %zu",
				  path, (long long)sb.st_size, max_bytes);
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: cannot allocate %lld bytes", path,
				  (long long)sb.st_size);
	}
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = errno;

			free(buf);
			close(fd);
			return pccx__fail(d, PCCX_ERR_IO, "%s: read failed after %zu bytes: %s",
					  path, got, r < 0 ? strerror(e) : "unexpected end of file");
		}
		got += (size_t)r;
	}
	close(fd);
	buf[got] = 0;
	*data = buf;
	*len = got;
	return PCCX_OK;
}

int pccx__write_file_atomic(const char *path, const void *data, size_t len, pccx_diag *d)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	const uint8_t *p = data;
	size_t done = 0;
	int fd, e;

	if (!tmp)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	if (pccx__output_dest_check(path, d)) {
		free(tmp);
		return PCCX_ERR_IO;
	}
	snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		e = errno;
		free(tmp);
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot create a temporary file: %s", path,
				  strerror(e));
	}
	while (done < len) {
		ssize_t w = write(fd, p + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : ENOSPC;
			goto fail;
		}
		done += (size_t)w;
	}
	if (fsync(fd)) {
		e = errno;
		goto fail;
	}
	if (close(fd)) {
		e = errno;
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path)) {
		e = errno;
		goto fail;
	}
	free(tmp);
	return PCCX_OK;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return pccx__fail(d, PCCX_ERR_IO, "%s: write failed after %zu of %zu bytes: %s", path, done,
			  len, strerror(e));
}

int pccx__output_dest_check(const char *path, pccx_diag *d)
{
	struct stat st;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return pccx__fail(d, PCCX_ERR_IO, "%s: not a regular file (%s)", path,
				  file_kind(st.st_mode));
	return PCCX_OK;
}

int pccx__output_open(const char *path, FILE **f, pccx_diag *d)
{
	struct stat st;
	int fd, e;

	*f = NULL;
	/* O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of blocking */
	fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
	if (fd < 0) {
		e = errno;
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return pccx__fail(d, PCCX_ERR_IO, "%s: not a regular file (%s)", path,
					  file_kind(st.st_mode));
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot create: %s", path, strerror(e));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		e = errno;
		close(fd);
		if (!S_ISREG(st.st_mode))
			return pccx__fail(d, PCCX_ERR_IO, "%s: not a regular file (%s)", path,
					  file_kind(st.st_mode));
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
	}
	/* only now that it is known to be a regular file is it emptied */
	if (ftruncate(fd, 0) != 0 || fcntl(fd, F_SETFL, O_WRONLY) != 0 ||
	    !(*f = fdopen(fd, "w"))) {
		e = errno;
		close(fd);
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot open for writing: %s", path,
				  strerror(e));
	}
	return PCCX_OK;
}

int pccx__output_close(FILE *f, const char *path, bool discard, pccx_diag *d)
{
	int e = 0;

	errno = 0;
	if (fflush(f) != 0 || ferror(f))
		e = errno ? errno : EIO;
	if (fclose(f) != 0 && !e)
		e = errno ? errno : EIO;
	if (e || discard)
		unlink(path);
	if (e)
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot write: %s", path, strerror(e));
	return PCCX_OK;
}

int pccx__fd_write_all(int fd, bool sock, const void *buf, size_t n, int timeout_ms)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = sock ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			int k = poll(&pf, 1, timeout_ms);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				if (!k)
					errno = ETIMEDOUT;
				return -1;
			}
			continue;
		}
		if (w == 0)
			errno = EIO;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}
