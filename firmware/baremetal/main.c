// SPDX-License-Identifier: MIT
/*
 * The bare-metal firmware's boot (docs/firmware.md): device tree -> console -> memory map ->
 * register executor -> self-test job -> the host link on the UART (`pccx.selftest` in the boot
 * arguments: stop after the self-test). Every step that can fail says why on the console and
 * ends the image with its own status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "heap.h"
#include "pccx_fw.h"
#include "selftest.h"
#include "serve.h"
#ifdef PCCX_BM_SIM
#include "simio.h"
#define BOARD_NAME "aarch64-virt"        /* INFO's board name */
#else
#define BOARD_NAME "aarch64"
#endif

#define MIN_HEAP  (16ull << 20)          /* the simulator's state */
#define MAX_SPANS 256u                   /* buffers in the DMA pool at once */

void pccx__bm_main(const void *fdt, uint64_t el);

extern char __image_start[], __image_end[];

static struct pccx_bm_dt dt;
static struct pccx_bm_memmap mm;

__attribute__((noreturn)) static void die(int status, const char *what, const char *msg)
{
	printf("pccx-fw: error: %s%s%s\n", what, *what ? ": " : "", msg);
	pccx__bm_exit(status);
}

/* pccx.fdt=ADDR[,LEN]: a device tree loaded beside the boot loader's replaces it. */
static const void *fdt_override(const char *args, size_t *limit)
{
	size_t len;
	const char *v = pccx__bm_bootarg(args, "pccx.fdt", &len);
	char *end;
	unsigned long long addr, n = 0;

	*limit = 0;
	if (!v)
		return NULL;
	addr = strtoull(v, &end, 0);
	if (end < v + len && *end == ',')
		n = strtoull(end + 1, &end, 0);
	if (end != v + len || !addr)
		die(PCCX_BM_EXIT_CONFIG, "bootargs", "pccx.fdt: expected ADDR or ADDR,LEN");
	*limit = (size_t)n;
	return (const void *)(uintptr_t)addr;
}

static void discover(const void *fdt)
{
	char err[200];
	int rc = pccx__bm_discover(fdt, 0, &dt, err, sizeof(err));
	const void *alt;
	size_t limit;

	/*
	 * The exit path and the override come from the boot loader's tree, whatever its node.
	 * A tree that cannot be read says nothing about semihosting: it is tried anyway, since
	 * without it the HLT is undefined and the trap handler goes on with PSCI.
	 */
	pccx__bm_exit_config(dt.fdt ? pccx__bm_bootflag(dt.bootargs, "semihosting") : true,
			     dt.psci);
	alt = dt.fdt ? fdt_override(dt.bootargs, &limit) : NULL;
	if (alt) {
		printf("pccx-fw: device tree from pccx.fdt at %p\n", alt);
		rc = pccx__bm_discover(alt, limit, &dt, err, sizeof(err));
	}
	if (rc)
		die(PCCX_BM_EXIT_CONFIG, "", err);
	if (!dt.have_uart)
		die(PCCX_BM_EXIT_CONFIG, "", "no arm,pl011 UART in the device tree for the link");
	pccx__bm_uart_init((uintptr_t)dt.uart.base);
	pccx__bm_console_set((uintptr_t)dt.uart.base);
}

static void print_discovery(void)
{
	printf("pccx-fw: RAM 0x%llx+0x%llx, UART %s at 0x%llx\n",
	       (unsigned long long)dt.ram.base, (unsigned long long)dt.ram.size, dt.uart_name,
	       (unsigned long long)dt.uart.base);
	printf("pccx-fw: NPU %s: registers 0x%llx+0x%llx\n", dt.npu_name,
	       (unsigned long long)dt.regs.base, (unsigned long long)dt.regs.size);
	if (dt.have_irq)
		printf("pccx-fw: NPU interrupt: %s %u (GIC INTID %u, flags 0x%x); completion is "
		       "polled\n", dt.irq_type ? "PPI" : "SPI", dt.irq_num, dt.irq_intid,
		       dt.irq_flags);
	else
		printf("pccx-fw: NPU interrupt: none in the node; completion is polled\n");
}

static void place_memory(void)
{
	struct pccx_bm_range busy[2] = {
		{ (uintptr_t)__image_start, (uintptr_t)__image_end - (uintptr_t)__image_start },
		{ (uintptr_t)dt.fdt, dt.fdt_size },
	};
	char err[200];

	if (pccx__bm_memmap(&dt, busy, 2, MIN_HEAP, &mm, err, sizeof(err)))
		die(PCCX_BM_EXIT_MEMORY, "memory", err);
	pccx__bm_heap_init((void *)(uintptr_t)mm.heap.base, mm.heap.size);
	printf("pccx-fw: DMA pool 0x%llx+0x%llx (%s, %u-bit DMA), heap 0x%llx+0x%llx\n",
	       (unsigned long long)mm.dma.base, (unsigned long long)mm.dma.size,
	       mm.dma_carved ? "carved from free RAM: no memory-region" : dt.dma_name,
	       dt.dma_bits, (unsigned long long)mm.heap.base, (unsigned long long)mm.heap.size);
}

/*
 * The register executor over this image's accessor: the simulator (the QEMU test image) or
 * volatile MMIO at the node's address; its init checks the ID register and resets the device.
 */
static void open_device(struct pccx_fw_regs_cfg *cfg, struct pccx_fw_regs *regs)
{
	static struct pccx_fw_span spans[MAX_SPANS];
	int rc;
#ifdef PCCX_BM_SIM
	char err[200];

	if (pccx__bm_simio_cfg(&dt, &mm.dma, spans, MAX_SPANS, cfg, err, sizeof(err)))
		die(PCCX_BM_EXIT_DEVICE, "", err);
	printf("pccx-fw: registers: the cycle simulator built into this image (QEMU has no pccx "
	       "device)\n");
#else
	memset(cfg, 0, sizeof(*cfg));
	cfg->ops = &pccx__fw_mmio_ops;
	cfg->io = (void *)(uintptr_t)dt.regs.base;
	cfg->region_cpu = (uint8_t *)(uintptr_t)mm.dma.base;
	cfg->region_dev = mm.dma.base;
	cfg->region_size = mm.dma.size;
	cfg->spans = spans;
	cfg->max_spans = MAX_SPANS;
	cfg->now_ns = pccx__bm_clock_ns;
	printf("pccx-fw: registers: MMIO at 0x%llx\n", (unsigned long long)dt.regs.base);
#endif
	rc = pccx__fw_regs_init(regs, cfg);
	if (rc == PCCX_EF_NODEV)
		die(PCCX_BM_EXIT_DEVICE, dt.npu_name, "the ID register does not hold PCCX 2 with "
		    "soft reset: no extended pccx v002 device at the node's address");
	if (rc)
		die(PCCX_BM_EXIT_DEVICE, dt.npu_name, "the device did not come out of reset");
	printf("pccx-fw: device ID 0x%llx, FEATURES 0x%llx, CAPS 0x%llx\n",
	       (unsigned long long)cfg->ops->rd64(cfg->io, PCCX_REG_ID),
	       (unsigned long long)cfg->ops->rd64(cfg->io, PCCX_REG_FEATURES),
	       (unsigned long long)cfg->ops->rd64(cfg->io, PCCX_REG_CAPS));
}

static void selftest(const struct pccx_fw_regs_cfg *cfg)
{
	struct pccx_bm_selftest r;
	uint64_t t0 = pccx__bm_now_ns(), t1;

	if (pccx__bm_selftest(cfg, &r))
		die(PCCX_BM_EXIT_SELFTEST, "self-test", r.msg);
	t1 = pccx__bm_now_ns();
	printf("pccx-fw: self-test: host -> L2 -> host copy bit-exact, %llu instructions retired, "
	       "%llu register accesses, %llu us\n", (unsigned long long)r.retired,
	       (unsigned long long)r.mmio, (unsigned long long)((t1 - t0) / 1000));
}

void pccx__bm_main(const void *fdt, uint64_t el)
{
	static struct pccx_fw_regs_cfg cfg;
	static struct pccx_fw_regs regs;

	printf("\npccx-fw: bare-metal AArch64 firmware, entered at EL%llu, device tree at %p\n",
	       (unsigned long long)el, fdt);
	discover(fdt);
	print_discovery();
	place_memory();
	open_device(&cfg, &regs);
	selftest(&cfg);
	if (pccx__bm_bootflag(dt.bootargs, "pccx.selftest"))
		pccx__bm_exit(PCCX_BM_EXIT_OK);
	pccx__bm_exit(pccx__bm_serve(&regs, &dt, BOARD_NAME));
}
