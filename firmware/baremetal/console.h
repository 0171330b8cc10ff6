/* SPDX-License-Identifier: MIT */
/* Where the C library's stdout and stderr go: the board's console (board/console.c). */
#ifndef FW_CONSOLE_H
#define FW_CONSOLE_H

#include <stddef.h>

void pccx__bm_console_write(const char *s, size_t n);

#endif
