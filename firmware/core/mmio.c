// SPDX-License-Identifier: MIT
/*
 * The MMIO register accessor (pccx_fw.h): the device's registers at io + off. Writes are
 * preceded by a barrier so that the CPU's stores to DMA memory (an uploaded buffer, a job's
 * inputs) are visible before the device is told to read them; reads are followed by one so
 * that data a status announces is read after the status. On AArch64 these are DSB/DMB, as
 * Linux's writeq()/readq(); elsewhere (host builds, tests) a compiler barrier.
 */
#include "pccx_fw.h"

#if defined(__aarch64__)
#define BARRIER_WR() __asm__ __volatile__("dsb st" ::: "memory")
#define BARRIER_RD() __asm__ __volatile__("dmb ld" ::: "memory")
#else
#define BARRIER_WR() __asm__ __volatile__("" ::: "memory")
#define BARRIER_RD() __asm__ __volatile__("" ::: "memory")
#endif

static uint32_t mmio_rd32(void *io, uint32_t off)
{
	uint32_t v = *(volatile uint32_t *)((uint8_t *)io + off);

	BARRIER_RD();
	return v;
}

static void mmio_wr32(void *io, uint32_t off, uint32_t v)
{
	BARRIER_WR();
	*(volatile uint32_t *)((uint8_t *)io + off) = v;
}

/* The control page has 64-bit data: one 64-bit access, never two halves (INSTR pushes on
 * a write of the whole word). */
static uint64_t mmio_rd64(void *io, uint32_t off)
{
	uint64_t v = *(volatile uint64_t *)((uint8_t *)io + off);

	BARRIER_RD();
	return v;
}

static void mmio_wr64(void *io, uint32_t off, uint64_t v)
{
	BARRIER_WR();
	*(volatile uint64_t *)((uint8_t *)io + off) = v;
}

const struct pccx_engine_ops pccx__fw_mmio_ops = {
	.rd32 = mmio_rd32,
	.wr32 = mmio_wr32,
	.rd64 = mmio_rd64,
	.wr64 = mmio_wr64,
};
