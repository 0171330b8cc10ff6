// SPDX-License-Identifier: MIT
/*
 * host/base/fileio.h for a board without a file system: the simulator's trace and file
 * readers reach these, and each says plainly that there are no files. (Only the close of an
 * output is linked into the QEMU test image: --gc-sections drops the readers and the opens,
 * which nothing in the image calls; an output can never be open, so close has nothing to do.)
 */
#include <stdio.h>

#include "diag.h"
#include "fileio.h"

int pccx__open_regular(const char *path, int missing_status, int *fd, struct stat *st,
		       pccx_diag *d)
{
	(void)missing_status;
	(void)fd;
	(void)st;
	return pccx__fail(d, PCCX_ERR_IO, "%s: the bare-metal firmware has no file system", path);
}

int pccx__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *len,
		    pccx_diag *d)
{
	(void)max_bytes;
	*data = NULL;
	*len = 0;
	return pccx__fail(d, PCCX_ERR_IO, "%s: the bare-metal firmware has no file system", path);
}

int pccx__write_file_atomic(const char *path, const void *data, size_t len, pccx_diag *d)
{
	(void)data;
	(void)len;
	return pccx__fail(d, PCCX_ERR_IO, "%s: the bare-metal firmware has no file system", path);
}

int pccx__output_dest_check(const char *path, pccx_diag *d)
{
	return pccx__fail(d, PCCX_ERR_IO, "%s: the bare-metal firmware has no file system", path);
}

int pccx__output_open(const char *path, FILE **f, pccx_diag *d)
{
	*f = NULL;
	return pccx__fail(d, PCCX_ERR_IO, "%s: the bare-metal firmware has no file system", path);
}

int pccx__output_close(FILE *f, const char *path, bool discard, pccx_diag *d)
{
	(void)discard;
	if (f && fclose(f))
		return pccx__fail(d, PCCX_ERR_IO, "%s: cannot write", path);
	return 0;
}
