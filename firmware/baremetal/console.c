// SPDX-License-Identifier: MIT
/*
 * The console behind the C library's stdout and stderr: the device tree's UART once it is
 * known; before that (and when the device tree cannot be read) the build's early UART
 * (PCCX_BM_EARLY_UART, QEMU virt's PL011), so even a broken blob gets its message out.
 */
#include "board.h"
#include "console.h"

#ifndef PCCX_BM_EARLY_UART
#define PCCX_BM_EARLY_UART 0
#endif

static uintptr_t con_base = PCCX_BM_EARLY_UART;

void pccx__bm_console_set(uintptr_t uart_base)
{
	con_base = uart_base;
}

void pccx__bm_console_write(const char *s, size_t n)
{
	size_t start = 0;

	if (!con_base)
		return;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\n')
			continue;
		pccx__bm_uart_write(con_base, s + start, i - start);
		pccx__bm_uart_write(con_base, "\r\n", 2);     /* terminals want CR LF */
		start = i + 1;
	}
	pccx__bm_uart_write(con_base, s + start, n - start);
}
