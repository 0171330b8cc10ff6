// SPDX-License-Identifier: MIT
/*
 * The bare-metal firmware's boot (docs/firmware.md): device tree -> console -> memory map ->
 * register accessor -> self-test job. Every step that
 * can fail says why on the console and ends the image with its own status.
 */
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "heap.h"
#include "pccx_engine.h"
#include "selftest.h"
#ifdef PCCX_BM_SIM
#include "simio.h"
#endif

#define MIN_HEAP (16ull << 20)           /* the simulator's state and the server's tables */

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

/* The accessor of this image: the simulator (QEMU test image) or the node's MMIO. */
static void open_device(struct pccx_bm_device *dev)
{
	uint64_t id;
#ifdef PCCX_BM_SIM
	static struct pccx_bm_simio sio;
	char err[200];

	if (pccx__bm_simio_init(&sio, &dt, &mm.dma, err, sizeof(err)))
		die(PCCX_BM_EXIT_DEVICE, "", err);
	dev->ops = &pccx__bm_simio_ops;
	dev->io = &sio;
	dev->simulated = true;
	printf("pccx-fw: registers: the cycle simulator built into this image (QEMU has no pccx "
	       "device)\n");
#else
	static struct pccx_bm_mmio mio;

	pccx__bm_mmio_init(&mio, (uintptr_t)dt.regs.base, PCCX_MMIO_SIZE);
	dev->ops = &pccx__bm_mmio_ops;
	dev->io = &mio;
	dev->simulated = false;
	printf("pccx-fw: registers: MMIO at 0x%llx\n", (unsigned long long)dt.regs.base);
#endif
	id = dev->ops->rd64(dev->io, PCCX_REG_ID);
	if ((id >> 32) != PCCX_ID_MAGIC)
		die(PCCX_BM_EXIT_DEVICE, dt.npu_name, "ID register does not hold the PCCX magic: "
		    "no extended pccx v002 device at the node's address");
	printf("pccx-fw: device ID 0x%llx, FEATURES 0x%llx, CAPS 0x%llx\n",
	       (unsigned long long)id,
	       (unsigned long long)dev->ops->rd64(dev->io, PCCX_REG_FEATURES),
	       (unsigned long long)dev->ops->rd64(dev->io, PCCX_REG_CAPS));
}

static void selftest(const struct pccx_bm_device *dev)
{
	struct pccx_bm_selftest r;
	uint64_t t0 = pccx__bm_now_ns(), t1;

	if (pccx__bm_selftest(dev->ops, dev->io, (uint8_t *)(uintptr_t)mm.dma.base, mm.dma.base,
			      mm.dma.size, &r))
		die(PCCX_BM_EXIT_SELFTEST, "self-test", r.msg);
	t1 = pccx__bm_now_ns();
	printf("pccx-fw: self-test: host -> L2 -> host copy bit-exact, %llu instructions retired, "
	       "%llu register accesses, %llu us\n", (unsigned long long)r.retired,
	       (unsigned long long)r.mmio, (unsigned long long)((t1 - t0) / 1000));
}

void pccx__bm_main(const void *fdt, uint64_t el)
{
	static struct pccx_bm_device dev;

	printf("\npccx-fw: bare-metal AArch64 firmware, entered at EL%llu, device tree at %p\n",
	       (unsigned long long)el, fdt);
	discover(fdt);
	print_discovery();
	place_memory();
	open_device(&dev);
	dev.dt = &dt;
	dev.mm = &mm;
	selftest(&dev);
	pccx__bm_exit(PCCX_BM_EXIT_OK);
}
