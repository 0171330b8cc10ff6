// SPDX-License-Identifier: MIT
/*
 * stdio of the firmware's C library: stdout and stderr both write to the console
 * (pccx__bm_console_write, the UART); there are no files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"

struct pccx_bm_file {
	int error;
};

static struct pccx_bm_file con_out, con_err;
FILE *const stdout = &con_out;
FILE *const stderr = &con_err;

static int console_put(FILE *f, const char *s, size_t n)
{
	if (f != stdout && f != stderr) {
		errno = EINVAL;
		return EOF;
	}
	pccx__bm_console_write(s, n);
	return 0;
}

int vfprintf(FILE *f, const char *restrict fmt, va_list ap)
{
	char small[256];
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);
	if ((size_t)n < sizeof(small))
		return console_put(f, small, (size_t)n) ? EOF : n;
	{
		/* a long line: formatted again into a heap buffer of its size (when there is
		 * none, the first 255 bytes are what can be shown) */
		char *big = malloc((size_t)n + 1);
		int rc;

		if (!big)
			return console_put(f, small, sizeof(small) - 1) ? EOF : n;
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		rc = console_put(f, big, (size_t)n);
		free(big);
		return rc ? EOF : n;
	}
}

int fprintf(FILE *f, const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(f, fmt, ap);
	va_end(ap);
	return n;
}

int printf(const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(stdout, fmt, ap);
	va_end(ap);
	return n;
}

int fputs(const char *s, FILE *f)
{
	return console_put(f, s, strlen(s));
}

int fputc(int c, FILE *f)
{
	char ch = (char)c;

	return console_put(f, &ch, 1) ? EOF : (unsigned char)c;
}

int putchar(int c)
{
	return fputc(c, stdout);
}

int puts(const char *s)
{
	if (fputs(s, stdout))
		return EOF;
	return fputc('\n', stdout) == EOF ? EOF : 0;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	if (!size || !n)
		return 0;
	if (n > (size_t)-1 / size)
		return 0;
	return console_put(f, p, size * n) ? 0 : n;
}

int fflush(FILE *f)
{
	(void)f;
	return 0;                /* the console writes through */
}

FILE *fopen(const char *path, const char *mode)
{
	(void)path;
	(void)mode;
	errno = ENOENT;          /* no file system on the board image */
	return NULL;
}

int fclose(FILE *f)
{
	(void)f;
	return 0;
}

int ferror(FILE *f)
{
	return f->error;
}
