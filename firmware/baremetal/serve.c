// SPDX-License-Identifier: MIT
/*
 * The host link on the UART: the port's side of firmware/core (pccx_fw.h). The port owns the
 * tables and frame buffers (static here), hands them to the core once, and loops: read what
 * the UART has (waiting at most the server's read timeout), feed it, poll. Replies go out
 * through the same UART, polled. The console falls silent while serving: the host's
 * receiver would skip text between frames, but a quiet line keeps the link's timing its own.
 */
#include <stdio.h>

#include "board.h"
#include "pccx_fw.h"
#include "serve.h"

/*
 * max_payload: small enough that a whole frame crosses the UART well inside the host's 10 s per
 * request (docs/link.md) on a slow line: 16 KiB is 1.4 s at 115,200 baud, under 1 s through
 * QEMU's PL011 (about 20 KB/s), and its round trip costs about 2 % of the transfer there.
 */
#define PAYLOAD   (16u << 10)
#define MAX_BUFS  256u

static uint8_t rxbuf[PCCX_LINK_OVERHEAD + PAYLOAD], txbuf[PCCX_LINK_OVERHEAD + PAYLOAD];
static struct pccx_fw_buf bufs[MAX_BUFS];
static struct pccx_fw_server srv;

static int uart_write_all(void *ctx, const void *buf, size_t n)
{
	pccx__bm_uart_write((uintptr_t)ctx, buf, n);   /* polled: it cannot fail, only wait */
	return 0;
}

static uint64_t now_ms(void)
{
	return pccx__bm_now_ns() / 1000000u;
}

/*
 * Bytes the UART has, waiting up to timeout_ms for the first one. An empty UART is polled
 * again only after POLL_GAP_NS spent on the timer, not on the UART: in QEMU every UART access
 * takes the lock the emulator's I/O thread needs to refill the receive FIFO, so back-to-back
 * polling would slow the very bytes it waits for.
 */
#define POLL_GAP_NS 20000u

static size_t uart_read_wait(uintptr_t base, uint8_t *buf, size_t n, uint32_t timeout_ms)
{
	uint64_t t = pccx__bm_now_ns(), end = t + (uint64_t)timeout_ms * 1000000u;
	size_t got;

	while (!(got = pccx__bm_uart_read(base, buf, n)) && t < end) {
		uint64_t gap = t + POLL_GAP_NS;

		while ((t = pccx__bm_now_ns()) < gap)
			;
	}
	return got;
}

int pccx__bm_serve(struct pccx_fw_regs *regs, const struct pccx_bm_dt *dt, const char *name)
{
	struct pccx_fw_server_cfg sc = {
		.exec = &pccx__fw_regs_exec, .exec_ctx = regs,
		.write = uart_write_all, .write_ctx = (void *)(uintptr_t)dt->uart.base,
		.rx = rxbuf, .tx = txbuf, .buf_size = sizeof(rxbuf),
		.bufs = bufs, .max_bufs = MAX_BUFS, .name = name,
	};
	uintptr_t uart = (uintptr_t)dt->uart.base;
	uint8_t in[256];

	if (pccx__fw_server_init(&srv, &sc)) {
		printf("pccx-fw: error: the link server refused its configuration\n");
		return PCCX_BM_EXIT_CONFIG;
	}
	printf("pccx-fw: serving the host link on %s (protocol %u, max payload %u, %u buffers)\n",
	       dt->uart_name, PCCX_LINK_VERSION, PAYLOAD, MAX_BUFS);
	for (;;) {
		size_t n = uart_read_wait(uart, in, sizeof(in), pccx__fw_server_read_timeout(&srv));

		if (n)
			pccx__fw_server_feed(&srv, in, n, now_ms());
		pccx__fw_server_poll(&srv, now_ms());
	}
}
