// SPDX-License-Identifier: MIT
/*
 * The board code that does not need the board, on the host: the memory map (memmap.c), and
 * the MMIO register accessor the board image uses (firmware/core/mmio.c) over a page of plain
 * memory, directly and through the command engine: every register lands at docs/registers.md's
 * offset with its width.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "board.h"
#include "pccx_fw.h"

static struct pccx_bm_dt dt_with(bool region)
{
	struct pccx_bm_dt dt;

	memset(&dt, 0, sizeof(dt));
	dt.ram = (struct pccx_bm_range){ 0x40000000, 0x40000000 };
	dt.dma_bits = 32;
	dt.have_dma = region;
	dt.dma = (struct pccx_bm_range){ 0x70000000, 0x10000000 };
	strcpy(dt.npu_name, "npu@a0000000");
	strcpy(dt.dma_name, "pool@70000000");
	return dt;
}

static void memmap_places_heap_around_busy(void **state)
{
	struct pccx_bm_dt dt = dt_with(true);
	struct pccx_bm_range busy[2] = { { 0x40080000, 0x100000 }, { 0x48000000, 0x2000 } };
	struct pccx_bm_memmap mm;
	char err[200];

	(void)state;
	assert_int_equal(pccx__bm_memmap(&dt, busy, 2, 1 << 20, &mm, err, sizeof(err)), 0);
	assert_false(mm.dma_carved);
	assert_int_equal(mm.dma.base, 0x70000000);
	/* free: [4000_0000, 4008_0000) [4018_0000, 4800_0000) [4800_2000, 7000_0000)
	 * [8000_0000 is the end]: the largest is the third */
	assert_int_equal(mm.heap.base, 0x48002000);
	assert_int_equal(mm.heap.size, 0x70000000 - 0x48002000);
}

static void memmap_carves_pool_without_region(void **state)
{
	struct pccx_bm_dt dt = dt_with(false);
	struct pccx_bm_range busy[1] = { { 0x40080000, 0x100000 } };
	struct pccx_bm_memmap mm;
	char err[200];

	(void)state;
	assert_int_equal(pccx__bm_memmap(&dt, busy, 1, 1 << 20, &mm, err, sizeof(err)), 0);
	assert_true(mm.dma_carved);
	/* the largest free range [4018_0000, 8000_0000): its upper half */
	assert_int_equal(mm.dma.size, (0x80000000 - 0x40180000) / 2);
	assert_int_equal(mm.dma.base + mm.dma.size, 0x80000000);
	assert_int_equal(mm.heap.base, 0x40180000);
	assert_int_equal(mm.heap.size, mm.dma.base - 0x40180000);
	/* a 31-bit device: the pool must end at 2 GiB... which is RAM's start here: no room */
	dt.dma_bits = 30;
	assert_int_equal(pccx__bm_memmap(&dt, busy, 1, 1 << 20, &mm, err, sizeof(err)), -1);
	assert_string_equal(err, "no free RAM below the 30-bit DMA limit for a DMA pool");
}

static void memmap_refusals(void **state)
{
	struct pccx_bm_dt dt = dt_with(true);
	struct pccx_bm_range busy[1] = { { 0x70000000, 0x2000 } };
	struct pccx_bm_memmap mm;
	char err[200];

	(void)state;
	assert_int_equal(pccx__bm_memmap(&dt, busy, 1, 1 << 20, &mm, err, sizeof(err)), -1);
	assert_string_equal(err, "npu@a0000000: memory-region pool@70000000 "
			    "(0x70000000+0x10000000) overlaps the image or the device tree "
			    "(0x70000000+0x2000)");
	busy[0] = (struct pccx_bm_range){ 0x40080000, 0x100000 };
	assert_int_equal(pccx__bm_memmap(&dt, busy, 1, 1ull << 32, &mm, err, sizeof(err)), -1);
	/* [4018_0000, 7000_0000): 0x2fe80000 bytes */
	assert_string_equal(err, "the largest free RAM range (0x2fe80000 bytes) is below the "
			    "0x100000000 the heap needs");
}

/* A page of memory standing in for the aperture, laid out as registers.md says. */
static uint64_t regs[PCCX_MMIO_SIZE / 8];

static uint64_t reg64(uint32_t off)
{
	return regs[off / 8];
}

static void mmio_widths_and_offsets(void **state)
{
	void *m = regs;
	const struct pccx_engine_ops *o = &pccx__fw_mmio_ops;
	uint8_t *bytes = (uint8_t *)regs;

	(void)state;
	memset(regs, 0, sizeof(regs));
	o->wr64(m, PCCX_REG_IRQ_ENABLE, 0x1122334455667788ull);
	assert_int_equal(reg64(PCCX_REG_IRQ_ENABLE), 0x1122334455667788ull);
	assert_int_equal(o->rd64(m, PCCX_REG_IRQ_ENABLE), 0x1122334455667788ull);
	/* DataMover channel 2's CMD_HI: a 32-bit register at 0x3004 */
	o->wr32(m, PCCX_DM_PAGE(2) + PCCX_DM_CMD_HI, 0xdeadbeef);
	assert_int_equal(bytes[0x3004] | bytes[0x3005] << 8 | bytes[0x3006] << 16 |
			 (uint32_t)bytes[0x3007] << 24, 0xdeadbeef);
	assert_int_equal(bytes[0x3003], 0);
	assert_int_equal(bytes[0x3008], 0);
	assert_int_equal(o->rd32(m, PCCX_DM_PAGE(2) + PCCX_DM_CMD_HI), 0xdeadbeef);
}

static int xlate(void *ctx, uint32_t handle, uint64_t offset, uint64_t len, uint64_t *addr,
		 uint64_t *contig)
{
	(void)ctx;
	(void)handle;
	*addr = 0x70000000 + offset;
	*contig = len;
	return 0;
}

/*
 * The engine through the accessor on memory that answers like an idle device: its start
 * clears RETIRED and IRQ_STATUS, the one word lands in INSTR, and with RETIRED still 0 at
 * IDLE (memory does not execute) the engine reports exactly that.
 */
static void engine_through_mmio(void **state)
{
	struct pccx_engine_ctx e;
	const uint64_t word = ((uint64_t)PCCX_OP_MEMSET << 60) | PCCX_PUT(C, a, 8) |
			      PCCX_PUT(C, b, 1) | PCCX_PUT(C, c, 1);
	const struct pccx_job_view job = { &word, 1, NULL, 0, NULL, 0 };
	int st, i;

	(void)state;
	memset(regs, 0, sizeof(regs));
	regs[PCCX_REG_ID / 8] = (uint64_t)PCCX_ID_MAGIC << 32 | (uint64_t)PCCX_ID_MAJOR << 24;
	regs[PCCX_REG_CAPS / 8] = 114688ull | 8ull << 32 | 64ull << 40 | 4ull << 48 | 8ull << 56;
	regs[PCCX_REG_STATUS / 8] = PCCX_STATUS_IDLE;
	regs[PCCX_REG_RETIRED / 8] = 77;
	regs[PCCX_REG_DMA_ADDR_BITS / 8] = 32;
	st = pccx__engine_start(&e, &job, &pccx__fw_mmio_ops, regs, xlate, NULL);
	assert_int_equal(st, PCCX_ENGINE_RUNNING);
	assert_int_equal(reg64(PCCX_REG_RETIRED), 0);
	for (i = 0; i < 100 && st == PCCX_ENGINE_RUNNING; i++)
		st = pccx__engine_step(&e);
	assert_int_equal(st, PCCX_ENGINE_ERROR);
	assert_int_equal(reg64(PCCX_REG_INSTR), word);
	assert_int_equal(e.err.kind, PCCX_EF_RETIRED);
	assert_int_equal(e.err.info, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memmap_places_heap_around_busy),
		cmocka_unit_test(memmap_carves_pool_without_region),
		cmocka_unit_test(memmap_refusals),
		cmocka_unit_test(mmio_widths_and_offsets),
		cmocka_unit_test(engine_through_mmio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
