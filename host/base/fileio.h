/* SPDX-License-Identifier: MIT */
/* Whole-file reads with a size limit, and atomic whole-file writes. */
#ifndef PCCX_FILEIO_H
#define PCCX_FILEIO_H

#include <stddef.h>
#include <stdint.h>
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

#endif
