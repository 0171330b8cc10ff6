// SPDX-License-Identifier: MIT
/*
 * The register accessor of the real device: volatile loads and stores at the node's base, 64
 * bits wide on the control page and 32 bits on the DataMover pages (docs/registers.md), with
 * the ordering Linux's readq/writeq give: a store barrier before each write (a command that
 * makes the device read memory must follow the CPU's writes of that memory) and a load
 * barrier after each read (the CPU reads what a completion says was written only after it).
 * An access outside the aperture or misaligned is not made: it is counted, and the board
 * reports it (a bus error on a real AXI port would be an SError the image cannot attribute).
 */
#include "board.h"
#include "pccx_engine.h"

#if defined(__aarch64__)
#define WMB() __asm__ volatile("dmb oshst" ::: "memory")
#define RMB() __asm__ volatile("dmb oshld" ::: "memory")
#else   /* the host's unit tests run this file over plain memory */
#define WMB() __atomic_thread_fence(__ATOMIC_RELEASE)
#define RMB() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

static bool ok(struct pccx_bm_mmio *m, uint32_t off, uint32_t width)
{
	if ((off & (width - 1)) == 0 && off < m->size && m->size - off >= width)
		return true;
	if (!m->refused++)
		m->first_refused = off;
	return false;
}

static uint32_t rd32(void *io, uint32_t off)
{
	struct pccx_bm_mmio *m = io;
	uint32_t v;

	if (!ok(m, off, 4))
		return ~0u;
	v = *(volatile uint32_t *)(m->base + off);
	RMB();
	return v;
}

static void wr32(void *io, uint32_t off, uint32_t v)
{
	struct pccx_bm_mmio *m = io;

	if (!ok(m, off, 4))
		return;
	WMB();
	*(volatile uint32_t *)(m->base + off) = v;
}

static uint64_t rd64(void *io, uint32_t off)
{
	struct pccx_bm_mmio *m = io;
	uint64_t v;

	if (!ok(m, off, 8))
		return ~0ull;
	v = *(volatile uint64_t *)(m->base + off);
	RMB();
	return v;
}

static void wr64(void *io, uint32_t off, uint64_t v)
{
	struct pccx_bm_mmio *m = io;

	if (!ok(m, off, 8))
		return;
	WMB();
	*(volatile uint64_t *)(m->base + off) = v;
}

const struct pccx_engine_ops pccx__bm_mmio_ops = { rd32, wr32, rd64, wr64 };

void pccx__bm_mmio_init(struct pccx_bm_mmio *m, uintptr_t base, uint32_t size)
{
	m->base = (volatile uint8_t *)base;
	m->size = size;
	m->refused = 0;
	m->first_refused = 0;
}
