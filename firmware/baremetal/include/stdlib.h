/* SPDX-License-Identifier: MIT */
/*
 * The firmware's own C library: the heap (libc/heap.c, over a region chosen at boot) and
 * number parsing. There is no exit(): the image ends through pccx__bm_exit() (board.h).
 */
#ifndef FW_STDLIB_H
#define FW_STDLIB_H

#include <stddef.h>

void *malloc(size_t n);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);

unsigned long strtoul(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);

#endif
