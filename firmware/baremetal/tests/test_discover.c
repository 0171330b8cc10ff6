// SPDX-License-Identifier: MIT
/*
 * Device-tree discovery (discover.c) on the host against trees written here with libfdt's
 * sequential writer, one property changed per test: the good tree's values, translation
 * through a bus's ranges, and a clear refusal of each broken blob.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <libfdt.h>
#include <stdio.h>
#include <string.h>

#include "discover.h"

#define BLOB 8192

/* What a test changes in the tree it builds. */
struct knobs {
	int npu_reg_cells;          /* cells of the node's reg (4 correct) */
	uint32_t npu_size;
	uint32_t npu_base;
	bool no_npu, npu_disabled, no_irq, bad_irq_len, no_region, bad_phandle;
	uint32_t region_base, region_size;
	uint32_t dma_bits;          /* 0: property absent */
	bool on_bus;                /* the node under a simple-bus at 0x80000000 with ranges */
	bool bus_no_ranges;
};

static void defaults(struct knobs *k)
{
	memset(k, 0, sizeof(*k));
	k->npu_reg_cells = 4;
	k->npu_size = 0x7000;
	k->npu_base = 0xa0000000;
	k->region_base = 0x70000000;
	k->region_size = 0x10000000;
}

static void prop_cells(void *b, const char *name, const uint32_t *v, int n)
{
	fdt32_t c[8];

	for (int i = 0; i < n; i++)
		c[i] = cpu_to_fdt32(v[i]);
	assert_int_equal(fdt_property(b, name, c, n * 4), 0);
}

static void npu_node(void *b, const struct knobs *k, uint32_t base)
{
	uint32_t reg[4] = { 0, base, 0, k->npu_size };
	uint32_t irq[3] = { 0, 100, 4 };

	assert_int_equal(fdt_begin_node(b, "npu@a0000000"), 0);
	assert_int_equal(fdt_property_string(b, "compatible", "pccx,npu-v002"), 0);
	if (k->npu_disabled)
		assert_int_equal(fdt_property_string(b, "status", "disabled"), 0);
	if (k->npu_reg_cells == 3)
		prop_cells(b, "reg", (uint32_t[]){ 0, base, k->npu_size }, 3);
	else
		prop_cells(b, "reg", reg, 4);
	if (!k->no_irq)
		prop_cells(b, "interrupts", irq, k->bad_irq_len ? 2 : 3);
	if (!k->no_region)
		assert_int_equal(fdt_property_u32(b, "memory-region", k->bad_phandle ? 99 : 2), 0);
	if (k->dma_bits)
		assert_int_equal(fdt_property_u32(b, "pccx,dma-address-bits", k->dma_bits), 0);
	assert_int_equal(fdt_end_node(b), 0);
}

static void build(void *b, const struct knobs *k)
{
	assert_int_equal(fdt_create(b, BLOB), 0);
	assert_int_equal(fdt_finish_reservemap(b), 0);
	assert_int_equal(fdt_begin_node(b, ""), 0);
	assert_int_equal(fdt_property_u32(b, "#address-cells", 2), 0);
	assert_int_equal(fdt_property_u32(b, "#size-cells", 2), 0);
	assert_int_equal(fdt_property_u32(b, "interrupt-parent", 1), 0);

	assert_int_equal(fdt_begin_node(b, "chosen"), 0);
	assert_int_equal(fdt_property_string(b, "bootargs", "semihosting pccx.fdt=0x1000,64"), 0);
	assert_int_equal(fdt_property_string(b, "stdout-path", "/pl011@9040000:115200"), 0);
	assert_int_equal(fdt_end_node(b), 0);

	assert_int_equal(fdt_begin_node(b, "memory@40000000"), 0);
	assert_int_equal(fdt_property_string(b, "device_type", "memory"), 0);
	prop_cells(b, "reg", (uint32_t[]){ 0, 0x40000000, 0, 0x40000000 }, 4);
	assert_int_equal(fdt_end_node(b), 0);

	/* two UARTs: stdout-path names the second */
	assert_int_equal(fdt_begin_node(b, "pl011@9000000"), 0);
	assert_int_equal(fdt_property_string(b, "compatible", "arm,pl011"), 0);
	prop_cells(b, "reg", (uint32_t[]){ 0, 0x9000000, 0, 0x1000 }, 4);
	assert_int_equal(fdt_end_node(b), 0);
	assert_int_equal(fdt_begin_node(b, "pl011@9040000"), 0);
	assert_int_equal(fdt_property_string(b, "compatible", "arm,pl011"), 0);
	prop_cells(b, "reg", (uint32_t[]){ 0, 0x9040000, 0, 0x1000 }, 4);
	assert_int_equal(fdt_end_node(b), 0);

	assert_int_equal(fdt_begin_node(b, "psci"), 0);
	assert_int_equal(fdt_property_string(b, "compatible", "arm,psci-1.0"), 0);
	assert_int_equal(fdt_property_string(b, "method", "smc"), 0);
	assert_int_equal(fdt_end_node(b), 0);

	assert_int_equal(fdt_begin_node(b, "intc@8000000"), 0);
	assert_int_equal(fdt_property_u32(b, "#interrupt-cells", 3), 0);
	assert_int_equal(fdt_property_u32(b, "phandle", 1), 0);
	assert_int_equal(fdt_end_node(b), 0);

	assert_int_equal(fdt_begin_node(b, "reserved-memory"), 0);
	assert_int_equal(fdt_property_u32(b, "#address-cells", 2), 0);
	assert_int_equal(fdt_property_u32(b, "#size-cells", 2), 0);
	assert_int_equal(fdt_property(b, "ranges", NULL, 0), 0);
	assert_int_equal(fdt_begin_node(b, "pool@70000000"), 0);
	prop_cells(b, "reg", (uint32_t[]){ 0, k->region_base, 0, k->region_size }, 4);
	assert_int_equal(fdt_property_u32(b, "phandle", 2), 0);
	assert_int_equal(fdt_end_node(b), 0);
	assert_int_equal(fdt_end_node(b), 0);

	if (k->on_bus) {
		/* child address 0x20000000 is CPU address 0xa0000000 */
		assert_int_equal(fdt_begin_node(b, "bus@80000000"), 0);
		assert_int_equal(fdt_property_string(b, "compatible", "simple-bus"), 0);
		assert_int_equal(fdt_property_u32(b, "#address-cells", 2), 0);
		assert_int_equal(fdt_property_u32(b, "#size-cells", 2), 0);
		if (!k->bus_no_ranges)
			prop_cells(b, "ranges",
				   (uint32_t[]){ 0, 0x0, 0, 0x80000000, 0, 0x40000000 }, 6);
		if (!k->no_npu)
			npu_node(b, k, k->npu_base - 0x80000000u);
		assert_int_equal(fdt_end_node(b), 0);
	} else if (!k->no_npu) {
		npu_node(b, k, k->npu_base);
	}
	assert_int_equal(fdt_end_node(b), 0);
	assert_int_equal(fdt_finish(b), 0);
}

static char blob[BLOB];
static char err[256];
static struct pccx_bm_dt dt;

static int discover_with(const struct knobs *k)
{
	build(blob, k);
	return pccx__bm_discover(blob, sizeof(blob), &dt, err, sizeof(err));
}

static void good_tree(void **state)
{
	struct knobs k;
	size_t len;
	const char *v;

	(void)state;
	defaults(&k);
	assert_int_equal(discover_with(&k), 0);
	assert_string_equal(err, "");
	assert_string_equal(dt.npu_name, "npu@a0000000");
	assert_int_equal(dt.regs.base, 0xa0000000);
	assert_int_equal(dt.regs.size, 0x7000);
	assert_true(dt.have_irq);
	assert_int_equal(dt.irq_num, 100);
	assert_int_equal(dt.irq_intid, 132);
	assert_int_equal(dt.irq_flags, 4);
	assert_true(dt.have_dma);
	assert_int_equal(dt.dma.base, 0x70000000);
	assert_int_equal(dt.dma.size, 0x10000000);
	assert_int_equal(dt.dma_bits, 32);
	assert_int_equal(dt.ram.base, 0x40000000);
	assert_int_equal(dt.ram.size, 0x40000000);
	assert_true(dt.have_uart);
	assert_int_equal(dt.uart.base, 0x9040000);          /* stdout-path's, not the first */
	assert_int_equal(dt.psci, PCCX_BM_PSCI_SMC);
	assert_true(pccx__bm_bootflag(dt.bootargs, "semihosting"));
	assert_false(pccx__bm_bootflag(dt.bootargs, "pccx.fdt"));
	v = pccx__bm_bootarg(dt.bootargs, "pccx.fdt", &len);
	assert_non_null(v);
	assert_int_equal(len, strlen("0x1000,64"));
	assert_memory_equal(v, "0x1000,64", len);
	assert_null(pccx__bm_bootarg(dt.bootargs, "pccx", &len));
}

static void translated_through_bus(void **state)
{
	struct knobs k;

	(void)state;
	defaults(&k);
	k.on_bus = true;
	assert_int_equal(discover_with(&k), 0);
	assert_int_equal(dt.regs.base, 0xa0000000);
	k.bus_no_ranges = true;
	assert_int_equal(discover_with(&k), -1);
	assert_string_equal(err, "npu@a0000000: bus bus@80000000 has no ranges: not a CPU address");
}

/* expect_refusal: the knobs' tree is refused with exactly `msg`. */
static void refused(const struct knobs *k, const char *msg)
{
	assert_int_equal(discover_with(k), -1);
	assert_string_equal(err, msg);
}

static void broken_nodes(void **state)
{
	struct knobs k;

	(void)state;
	defaults(&k);
	k.no_npu = true;
	refused(&k, "no enabled node compatible with \"pccx,npu-v002\" in the device tree");
	defaults(&k);
	k.npu_disabled = true;
	refused(&k, "no enabled node compatible with \"pccx,npu-v002\" in the device tree");
	defaults(&k);
	k.npu_reg_cells = 3;
	refused(&k, "npu@a0000000: reg is 12 bytes, expected a multiple of 16 "
		"(2 address + 2 size cells)");
	defaults(&k);
	k.npu_size = 0x1000;
	refused(&k, "npu@a0000000: reg size 0x1000 is smaller than the 0x7000 bytes of the "
		"registers");
	defaults(&k);
	k.npu_size = 0;
	refused(&k, "npu@a0000000: reg has size 0");
	defaults(&k);
	k.npu_base = 0xa0000800;
	refused(&k, "npu@a0000000: reg base 0xa0000800 is not 4 KiB aligned");
	defaults(&k);
	k.npu_base = 0x50000000;
	refused(&k, "npu@a0000000: reg 0x50000000+0x7000 overlaps RAM");
	defaults(&k);
	k.bad_irq_len = true;
	refused(&k, "npu@a0000000: interrupts is 8 bytes, expected a multiple of 12 (3 cells)");
}

static void broken_regions(void **state)
{
	struct knobs k;

	(void)state;
	defaults(&k);
	k.bad_phandle = true;
	refused(&k, "npu@a0000000: memory-region: phandle 0x63 names no node");
	defaults(&k);
	k.region_base = 0x70000800;
	refused(&k, "npu@a0000000: memory-region pool@70000000: 0x70000800+0x10000000 is not "
		"4 KiB aligned");
	defaults(&k);
	k.region_base = 0x90000000;
	refused(&k, "npu@a0000000: memory-region pool@70000000 (0x90000000+0x10000000) is not "
		"inside RAM");
	defaults(&k);
	k.dma_bits = 20;
	refused(&k, "npu@a0000000: pccx,dma-address-bits: expected one cell of 32 .. 48");
	defaults(&k);
	k.no_region = true;
	k.no_irq = true;
	assert_int_equal(discover_with(&k), 0);
	assert_false(dt.have_dma);
	assert_false(dt.have_irq);
}

static void broken_blobs(void **state)
{
	struct knobs k;
	char copy[BLOB];
	size_t total;

	(void)state;
	defaults(&k);
	build(blob, &k);
	assert_int_equal(fdt_pack(blob), 0);
	total = fdt_totalsize(blob);
	assert_int_equal(pccx__bm_discover(NULL, 0, &dt, err, sizeof(err)), -1);
	assert_string_equal(err, "no device tree (the boot loader passed address 0)");
	assert_int_equal(pccx__bm_discover(blob, 20, &dt, err, sizeof(err)), -1);
	assert_string_equal(err, "device tree: 20 bytes, shorter than its header");
	assert_int_equal(pccx__bm_discover(blob, 256, &dt, err, sizeof(err)), -1);
	snprintf(copy, sizeof(copy), "device tree: truncated: the header says %zu bytes, "
		 "256 are there", total);
	assert_string_equal(err, copy);
	/* cut short in memory: the rest zeros, no length given */
	memset(copy, 0, sizeof(copy));
	memcpy(copy, blob, 256);
	assert_int_equal(pccx__bm_discover(copy, 0, &dt, err, sizeof(err)), -1);
	assert_int_equal(strncmp(err, "device tree: malformed (", 24), 0);
	memcpy(copy, blob, total);
	copy[0] ^= 1;
	assert_int_equal(pccx__bm_discover(copy, 0, &dt, err, sizeof(err)), -1);
	assert_string_equal(err, "device tree: bad magic 0xd10dfeed (expected 0xd00dfeed)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_tree),
		cmocka_unit_test(translated_through_bus),
		cmocka_unit_test(broken_nodes),
		cmocka_unit_test(broken_regions),
		cmocka_unit_test(broken_blobs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
