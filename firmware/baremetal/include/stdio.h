/* SPDX-License-Identifier: MIT */
/*
 * The firmware's own C library: formatted output. stdout and stderr are the console (the
 * UART found in the device tree); there is no file system, so fopen() fails with ENOENT and
 * anything that would read or write a file reports that error.
 */
#ifndef FW_STDIO_H
#define FW_STDIO_H

#include <stdarg.h>
#include <stddef.h>

typedef struct pccx_bm_file FILE;

extern FILE *const stdout;
extern FILE *const stderr;

#define EOF (-1)

int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
	__attribute__((format(printf, 3, 4)));
int vfprintf(FILE *f, const char *restrict fmt, va_list ap) __attribute__((format(printf, 2, 0)));
int fprintf(FILE *f, const char *restrict fmt, ...) __attribute__((format(printf, 2, 3)));
int printf(const char *restrict fmt, ...) __attribute__((format(printf, 1, 2)));
int fputs(const char *s, FILE *f);
int fputc(int c, FILE *f);
int putchar(int c);
int puts(const char *s);
size_t fwrite(const void *p, size_t size, size_t n, FILE *f);
int fflush(FILE *f);
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *f);
int ferror(FILE *f);

#endif
