/* SPDX-License-Identifier: MIT */
/* Whole-file reads with a size limit, atomic whole-file writes, and writes to a stream. */
#ifndef PCCX_FILEIO_H
#define PCCX_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include "pccx/status.h"

/*
 * Open `path` for reading, refusing at once anything but a regular file: the open does not
 * block (a FIFO without a writer, a device waiting for carrier), and a FIFO, directory,
 * device or socket is refused as "PATH: not a regular file (fifo)". On success *fd is the
 * descriptor (close-on-exec, blocking again) and *st its fstat. A missing file fails with
 * `missing_status`, any other problem with PCCX_ERR_IO. Every input file goes through here.
 */
PCCX_MUST_CHECK int pccx__open_regular(const char *path, int missing_status, int *fd,
				       struct stat *st, pccx_diag *d);

/* Read all of `path` (at most max_bytes) into a malloc'd buffer the caller frees. */
PCCX_MUST_CHECK int pccx__read_file(const char *path, size_t max_bytes, uint8_t **data,
				    size_t *len, pccx_diag *d);

/*
 * Write `len` bytes to `path` through a temporary file in the same directory,
 * fsync'd and renamed over the destination, so a failure (full disk, I/O
 * error) leaves any previous file untouched and no partial file behind. A destination that
 * exists and is not a regular file (a FIFO, directory, device or socket) is refused as
 * "PATH: not a regular file (fifo)": the rename would replace it, not write to it.
 */
PCCX_MUST_CHECK int pccx__write_file_atomic(const char *path, const void *data, size_t len,
					    pccx_diag *d);

/*
 * Refuse an existing destination that is not a regular file, as "PATH: not a regular file
 * (fifo)": renaming a finished temporary file over it would replace it (as root, /dev/null
 * itself). Every writer that renames into place checks here first.
 */
PCCX_MUST_CHECK int pccx__output_dest_check(const char *path, pccx_diag *d);

/*
 * Create (or truncate) `path` for an output written as it is produced (a trace, a table, stage
 * dumps), refusing at once a destination that is not a regular file: a FIFO would block the
 * run until someone reads it, a device would take the bytes. "PATH: not a regular file
 * (fifo)". *f is the stream (close-on-exec); finish it with pccx__output_close.
 */
PCCX_MUST_CHECK int pccx__output_open(const char *path, FILE **f, pccx_diag *d);

/*
 * Flush and close an output of pccx__output_open. When writing failed (a full disk, an I/O
 * error) or `discard` is set (the run failed), the partial file is removed, so no truncated
 * output is left looking complete; a write failure is reported as "PATH: cannot write: WHY".
 */
PCCX_MUST_CHECK int pccx__output_close(FILE *f, const char *path, bool discard, pccx_diag *d);

/*
 * Write all n bytes to a non-blocking descriptor: a tty or pipe (write) or a stream socket
 * (send without SIGPIPE when `sock`). When the other end takes no byte for `timeout_ms` the
 * write fails, so a peer that stopped reading cannot hang the writer. Returns 0, or -1 with
 * errno set (ETIMEDOUT for the timeout; EPIPE, ECONNRESET, ... when the peer went away).
 */
PCCX_MUST_CHECK int pccx__fd_write_all(int fd, bool sock, const void *buf, size_t n,
				       int timeout_ms);

#endif
