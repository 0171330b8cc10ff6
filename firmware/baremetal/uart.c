// SPDX-License-Identifier: MIT
/*
 * PL011 UART, polled (the image runs with interrupts masked). The baud rate is the boot
 * loader's: the firmware only makes sure the UART is on, 8N1 with FIFOs, and never reprograms
 * a running one (a board console keeps its settings).
 */
#include "board.h"

#define UART_DR    0x00
#define UART_FR    0x18
#define UART_LCRH  0x2c
#define UART_CR    0x30
#define UART_IMSC  0x38

#define FR_RXFE    (1u << 4)
#define FR_TXFF    (1u << 5)
#define LCRH_FEN   (1u << 4)
#define LCRH_WLEN8 (3u << 5)
#define CR_UARTEN  (1u << 0)
#define CR_TXE     (1u << 8)
#define CR_RXE     (1u << 9)

static inline uint32_t rd(uintptr_t base, uint32_t off)
{
	return *(volatile uint32_t *)(base + off);
}

static inline void wr(uintptr_t base, uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(base + off) = v;
}

void pccx__bm_uart_init(uintptr_t base)
{
	uint32_t on = CR_UARTEN | CR_TXE | CR_RXE;

	if ((rd(base, UART_CR) & on) == on)
		return;
	wr(base, UART_CR, 0);
	wr(base, UART_IMSC, 0);
	wr(base, UART_LCRH, LCRH_WLEN8 | LCRH_FEN);
	wr(base, UART_CR, on);
}

void pccx__bm_uart_write(uintptr_t base, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < n; i++) {
		while (rd(base, UART_FR) & FR_TXFF)
			;
		wr(base, UART_DR, p[i]);
	}
}

size_t pccx__bm_uart_read(uintptr_t base, void *buf, size_t n)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < n && !(rd(base, UART_FR) & FR_RXFE))
		p[got++] = (uint8_t)rd(base, UART_DR);   /* error bits [11:8]: the CRCs catch it */
	return got;
}
