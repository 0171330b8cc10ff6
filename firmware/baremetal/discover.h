/* SPDX-License-Identifier: MIT */
/*
 * What the firmware learns from the device tree (docs/firmware.md "Discovery"): RAM, the
 * console/link UART, the pccx,npu-v002 node (registers, interrupt, DMA memory region), the
 * PSCI conduit and the boot arguments. Plain C over libfdt, no board access: the same code is
 * built into the image and into the host's unit tests, which feed it broken blobs.
 */
#ifndef PCCX_BM_DISCOVER_H
#define PCCX_BM_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCCX_BM_NPU_COMPAT  "pccx,npu-v002"

struct pccx_bm_range {
	uint64_t base, size;
};

enum pccx_bm_psci { PCCX_BM_PSCI_NONE, PCCX_BM_PSCI_HVC, PCCX_BM_PSCI_SMC };

struct pccx_bm_dt {
	const void *fdt;
	size_t fdt_size;                 /* the header's totalsize, checked */
	struct pccx_bm_range ram;        /* the first memory node's first range */
	struct pccx_bm_range uart;       /* an arm,pl011 (stdout-path's when it is one) */
	bool have_uart;
	char uart_name[48];
	int psci;                        /* enum pccx_bm_psci */
	const char *bootargs;            /* points into the blob; "" when absent */

	/* the NPU */
	char npu_name[48];               /* node name, e.g. "npu@a0000000" */
	struct pccx_bm_range regs;       /* CPU physical address of the register aperture */
	bool have_irq;
	uint32_t irq_type, irq_num, irq_flags;   /* GIC cells: 0 SPI / 1 PPI, number, trigger */
	uint32_t irq_intid;              /* GIC interrupt ID: SPI n = 32 + n, PPI n = 16 + n */
	bool have_dma;
	struct pccx_bm_range dma;        /* the memory-region's range */
	char dma_name[48];
	uint32_t dma_bits;               /* pccx,dma-address-bits (32 when absent) */
};

/*
 * Check the blob at `fdt` (at most `limit` bytes may be read; 0: trust the header's size) in
 * full and fill `dt`. Returns 0, or -1 with one line in err[0..errlen) naming the node and
 * property at fault: no valid blob, no pccx,npu-v002 node, a reg, interrupts or memory-region
 * that is malformed, too small, misaligned or not translatable to a CPU address.
 */
int pccx__bm_discover(const void *fdt, size_t limit, struct pccx_bm_dt *dt, char *err,
		      size_t errlen);

/* The value of KEY=VALUE among whitespace-separated boot arguments, or NULL; *len its length. */
const char *pccx__bm_bootarg(const char *args, const char *key, size_t *len);
/* Whether the bare word FLAG is among the boot arguments. */
bool pccx__bm_bootflag(const char *args, const char *flag);

#endif
