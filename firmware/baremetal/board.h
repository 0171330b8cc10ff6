/* SPDX-License-Identifier: MIT */
/*
 * The bare-metal port's board layer: exit, time, the PL011, the console and the memory map.
 * One definition each; docs/firmware.md describes them.
 */
#ifndef PCCX_BM_BOARD_H
#define PCCX_BM_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "discover.h"

/* Exit statuses (QEMU's, with semihosting; PSCI SYSTEM_OFF makes QEMU exit 0 whatever). */
#define PCCX_BM_EXIT_OK        0
#define PCCX_BM_EXIT_CONFIG    1     /* the device tree cannot be used: no node, bad node or blob */
#define PCCX_BM_EXIT_DEVICE    2     /* no pccx device answers at the node's address */
#define PCCX_BM_EXIT_SELFTEST  3     /* the boot self-test job gave wrong bytes */
#define PCCX_BM_EXIT_TRAP      4     /* an exception: reported, then this */
#define PCCX_BM_EXIT_MEMORY    5     /* no room for the heap or the DMA pool */

/* ---- exit (exit.c, entry.S) ---- */
/* Use semihosting's SYS_EXIT (QEMU -semihosting) rather than PSCI alone. */
void pccx__bm_exit_config(bool semihosting, int psci);
__attribute__((noreturn)) void pccx__bm_exit(int status);
/* The trap handler's way out when the semihosting call itself was undefined. */
__attribute__((noreturn)) void pccx__bm_exit_psci(void);
extern const char pccx__bm_semihost_insn[];
long pccx__bm_semihost(long op, void *arg);
long pccx__bm_psci_hvc(uint64_t fn);
long pccx__bm_psci_smc(uint64_t fn);

/* ---- time (the generic timer's virtual counter) ---- */
uint64_t pccx__bm_now_ns(void);

/* ---- PL011 UART ---- */
void pccx__bm_uart_init(uintptr_t base);
void pccx__bm_uart_write(uintptr_t base, const void *buf, size_t n);
/* Bytes waiting, at most n, without blocking. */
size_t pccx__bm_uart_read(uintptr_t base, void *buf, size_t n);

/* ---- console (stdout/stderr of the C library) ---- */
void pccx__bm_console_set(uintptr_t uart_base);

/* ---- memory map ---- */
struct pccx_bm_memmap {
	struct pccx_bm_range heap;       /* the C library's heap */
	struct pccx_bm_range dma;        /* the DMA pool (the node's memory-region or carved) */
	bool dma_carved;                 /* no memory-region: carved from free RAM */
};

/*
 * Place the heap and the DMA pool in RAM around what is in use (`busy`: the image, the device
 * tree). Returns 0, or -1 with a message in err.
 */
int pccx__bm_memmap(const struct pccx_bm_dt *dt, const struct pccx_bm_range *busy, int n_busy,
		    uint64_t min_heap, struct pccx_bm_memmap *mm, char *err, size_t errlen);

/* The board clock for the register executor's configuration (clk unused). */
uint64_t pccx__bm_clock_ns(void *clk);

#endif
