// SPDX-License-Identifier: MIT
/*
 * Device-tree discovery (discover.h). Every property is checked for length and range before it
 * is used, and addresses are translated through the parents' `ranges` to CPU addresses, so a
 * blob that is well formed but wrong (a reg of the wrong size, a region above the DMA limit)
 * stops the boot with a message instead of sending the command engine to the wrong place.
 */
#include <libfdt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "discover.h"
#include "pccx_regs.h"

struct ctx {
	const void *fdt;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static const char *name_of(struct ctx *c, int node)
{
	const char *n = fdt_get_name(c->fdt, node, NULL);

	return n && *n ? n : "/";
}

/* A value of 1 or 2 cells. */
static uint64_t cells(const fdt32_t *p, int n)
{
	return n == 2 ? (uint64_t)fdt32_to_cpu(p[0]) << 32 | fdt32_to_cpu(p[1])
		      : fdt32_to_cpu(p[0]);
}

/* #address-cells / #size-cells of `bus`, limited to what a 64-bit address can hold. */
static int bus_cells(struct ctx *c, int bus, int *ac, int *sc)
{
	*ac = fdt_address_cells(c->fdt, bus);
	*sc = fdt_size_cells(c->fdt, bus);
	if (*ac < 1 || *ac > 2 || *sc < 0 || *sc > 2)
		return fail(c, "%s: #address-cells %d / #size-cells %d: the firmware reads 1 or 2",
			    name_of(c, bus), *ac, *sc);
	return 0;
}

/* Translate a bus address of a child of `bus` up to the root through each `ranges`. */
static int translate(struct ctx *c, const char *who, int bus, struct pccx_bm_range *r)
{
	while (bus > 0) {
		int parent = fdt_parent_offset(c->fdt, bus), len, cac, csc, pac, psc, step;
		const fdt32_t *rg = fdt_getprop(c->fdt, bus, "ranges", &len);
		bool hit = false;

		if (parent < 0)
			return fail(c, "%s: parent of %s not found", who, name_of(c, bus));
		if (!rg)
			return fail(c, "%s: bus %s has no ranges: not a CPU address", who,
				    name_of(c, bus));
		if (bus_cells(c, bus, &cac, &csc) || bus_cells(c, parent, &pac, &psc))
			return -1;
		step = (cac + pac + csc) * 4;
		if (len % step)
			return fail(c, "%s: bus %s: ranges is %d bytes, not a multiple of %d", who,
				    name_of(c, bus), len, step);
		for (int i = 0; i < len / step && !hit; i++) {
			const fdt32_t *e = rg + i * (step / 4);
			uint64_t cb = cells(e, cac), pb = cells(e + cac, pac);
			uint64_t sz = csc ? cells(e + cac + pac, csc) : 0;

			if (r->base >= cb && r->base - cb < sz && r->size <= sz - (r->base - cb)) {
				r->base = pb + (r->base - cb);
				hit = true;
			}
		}
		if (len && !hit)
			return fail(c, "%s: 0x%llx+0x%llx lies in no range of bus %s", who,
				    (unsigned long long)r->base, (unsigned long long)r->size,
				    name_of(c, bus));
		bus = parent;
	}
	return 0;
}

/* The first (address, size) pair of `node`'s reg, as a CPU address. */
static int reg_of(struct ctx *c, int node, struct pccx_bm_range *r)
{
	int parent = fdt_parent_offset(c->fdt, node), len, ac, sc;
	const fdt32_t *p;
	const char *who = name_of(c, node);

	if (parent < 0)
		return fail(c, "%s: no parent node", who);
	if (bus_cells(c, parent, &ac, &sc))
		return -1;
	if (!sc)
		return fail(c, "%s: parent %s has #size-cells 0: reg has no size", who,
			    name_of(c, parent));
	p = fdt_getprop(c->fdt, node, "reg", &len);
	if (!p)
		return fail(c, "%s: no reg property", who);
	if (len <= 0 || len % ((ac + sc) * 4))
		return fail(c, "%s: reg is %d bytes, expected a multiple of %d "
			    "(%d address + %d size cells)", who, len, (ac + sc) * 4, ac, sc);
	r->base = cells(p, ac);
	r->size = cells(p + ac, sc);
	if (!r->size)
		return fail(c, "%s: reg has size 0", who);
	if (r->base + r->size < r->base)
		return fail(c, "%s: reg 0x%llx+0x%llx wraps", who, (unsigned long long)r->base,
			    (unsigned long long)r->size);
	return translate(c, who, parent, r);
}

static bool node_enabled(struct ctx *c, int node)
{
	int len;
	const char *s = fdt_getprop(c->fdt, node, "status", &len);

	return !s || (len >= 4 && (!strncmp(s, "okay", 4) || !strncmp(s, "ok", 2)));
}

static int find_ram(struct ctx *c, struct pccx_bm_dt *dt)
{
	int node = fdt_node_offset_by_prop_value(c->fdt, -1, "device_type", "memory", 7);

	if (node < 0)
		return fail(c, "no memory node (device_type = \"memory\")");
	return reg_of(c, node, &dt->ram);
}

/* The console: stdout-path's node when it is a PL011, else the first enabled PL011. */
static int find_uart(struct ctx *c, struct pccx_bm_dt *dt)
{
	int chosen = fdt_path_offset(c->fdt, "/chosen"), node = -1, len;
	const char *path = chosen >= 0 ? fdt_getprop(c->fdt, chosen, "stdout-path", &len) : NULL;

	if (path && len > 0) {
		const char *colon = memchr(path, ':', (size_t)len);
		int n = colon ? (int)(colon - path) : (int)strnlen(path, (size_t)len);

		node = fdt_path_offset_namelen(c->fdt, path, n);
		if (node >= 0 && fdt_node_check_compatible(c->fdt, node, "arm,pl011"))
			node = -1;
	}
	for (int o = fdt_node_offset_by_compatible(c->fdt, -1, "arm,pl011"); node < 0 && o >= 0;
	     o = fdt_node_offset_by_compatible(c->fdt, o, "arm,pl011"))
		if (node_enabled(c, o))
			node = o;
	if (node < 0)
		return 0;       /* no UART: the caller decides whether that is fatal */
	snprintf(dt->uart_name, sizeof(dt->uart_name), "%s", name_of(c, node));
	if (reg_of(c, node, &dt->uart))
		return -1;
	dt->have_uart = true;
	return 0;
}

static void find_psci_and_args(struct ctx *c, struct pccx_bm_dt *dt)
{
	static const char *const compat[] = { "arm,psci-1.0", "arm,psci-0.2", "arm,psci" };
	int chosen = fdt_path_offset(c->fdt, "/chosen"), len;
	const char *s;

	dt->psci = PCCX_BM_PSCI_NONE;
	for (size_t i = 0; i < sizeof(compat) / sizeof(compat[0]); i++) {
		int node = fdt_node_offset_by_compatible(c->fdt, -1, compat[i]);

		s = node >= 0 ? fdt_getprop(c->fdt, node, "method", &len) : NULL;
		if (s && len >= 4 && !strncmp(s, "hvc", 4))
			dt->psci = PCCX_BM_PSCI_HVC;
		else if (s && len >= 4 && !strncmp(s, "smc", 4))
			dt->psci = PCCX_BM_PSCI_SMC;
		if (dt->psci != PCCX_BM_PSCI_NONE)
			break;
	}
	s = chosen >= 0 ? fdt_getprop(c->fdt, chosen, "bootargs", &len) : NULL;
	dt->bootargs = s && len > 0 && s[len - 1] == '\0' ? s : "";
}

/* The interrupt's controller: interrupt-parent of the node or its nearest ancestor. */
static int irq_parent(struct ctx *c, int node)
{
	for (int n = node; n >= 0; n = fdt_parent_offset(c->fdt, n)) {
		int len;
		const fdt32_t *p = fdt_getprop(c->fdt, n, "interrupt-parent", &len);

		if (p)
			return len == 4 ? fdt_node_offset_by_phandle(c->fdt, fdt32_to_cpu(*p)) : -1;
	}
	return -1;
}

static int find_irq(struct ctx *c, int node, struct pccx_bm_dt *dt)
{
	int len, ic, ncells;
	const fdt32_t *p = fdt_getprop(c->fdt, node, "interrupts", &len), *nc;

	if (!p)
		return 0;       /* optional: the firmware polls either way */
	ic = irq_parent(c, node);
	if (ic < 0)
		return fail(c, "%s: interrupts: no interrupt-parent resolves to a node",
			    dt->npu_name);
	nc = fdt_getprop(c->fdt, ic, "#interrupt-cells", &ncells);
	if (!nc || ncells != 4 || fdt32_to_cpu(*nc) != 3)
		return fail(c, "%s: interrupt controller %s does not have the GIC's 3 "
			    "interrupt cells", dt->npu_name, name_of(c, ic));
	if (len <= 0 || len % 12)
		return fail(c, "%s: interrupts is %d bytes, expected a multiple of 12 (3 cells)",
			    dt->npu_name, len);
	dt->irq_type = fdt32_to_cpu(p[0]);
	dt->irq_num = fdt32_to_cpu(p[1]);
	dt->irq_flags = fdt32_to_cpu(p[2]);
	if (dt->irq_type > 1 || (dt->irq_type == 0 && dt->irq_num > 987) ||
	    (dt->irq_type == 1 && dt->irq_num > 15))
		return fail(c, "%s: interrupts <%u %u %u>: not a GIC SPI (0, 0..987) or "
			    "PPI (1, 0..15)", dt->npu_name, dt->irq_type, dt->irq_num,
			    dt->irq_flags);
	dt->irq_intid = dt->irq_num + (dt->irq_type ? 16u : 32u);
	dt->have_irq = true;
	return 0;
}

static bool overlaps(const struct pccx_bm_range *a, const struct pccx_bm_range *b)
{
	return a->base < b->base + b->size && b->base < a->base + a->size;
}

static int find_dma(struct ctx *c, int node, struct pccx_bm_dt *dt)
{
	int len, rn;
	const fdt32_t *p = fdt_getprop(c->fdt, node, "pccx,dma-address-bits", &len);

	dt->dma_bits = 32;
	if (p) {
		if (len != 4 || fdt32_to_cpu(*p) < 32 || fdt32_to_cpu(*p) > 48)
			return fail(c, "%s: pccx,dma-address-bits: expected one cell of 32 .. 48",
				    dt->npu_name);
		dt->dma_bits = fdt32_to_cpu(*p);
	}
	p = fdt_getprop(c->fdt, node, "memory-region", &len);
	if (!p)
		return 0;       /* the board carves a pool from free RAM */
	if (len <= 0 || len % 4)
		return fail(c, "%s: memory-region is %d bytes, expected phandles", dt->npu_name,
			    len);
	rn = fdt_node_offset_by_phandle(c->fdt, fdt32_to_cpu(*p));
	if (rn < 0)
		return fail(c, "%s: memory-region: phandle 0x%x names no node", dt->npu_name,
			    fdt32_to_cpu(*p));
	snprintf(dt->dma_name, sizeof(dt->dma_name), "%s", name_of(c, rn));
	if (reg_of(c, rn, &dt->dma))
		return -1;
	if ((dt->dma.base | dt->dma.size) & 0xfff)
		return fail(c, "%s: memory-region %s: 0x%llx+0x%llx is not 4 KiB aligned",
			    dt->npu_name, dt->dma_name, (unsigned long long)dt->dma.base,
			    (unsigned long long)dt->dma.size);
	if (dt->dma.base + dt->dma.size > (1ull << dt->dma_bits))
		return fail(c, "%s: memory-region %s ends at 0x%llx, beyond the device's "
			    "%u-bit DMA", dt->npu_name, dt->dma_name,
			    (unsigned long long)(dt->dma.base + dt->dma.size), dt->dma_bits);
	if (dt->dma.base < dt->ram.base ||
	    dt->dma.base + dt->dma.size > dt->ram.base + dt->ram.size)
		return fail(c, "%s: memory-region %s (0x%llx+0x%llx) is not inside RAM",
			    dt->npu_name, dt->dma_name, (unsigned long long)dt->dma.base,
			    (unsigned long long)dt->dma.size);
	dt->have_dma = true;
	return 0;
}

static int find_npu(struct ctx *c, struct pccx_bm_dt *dt)
{
	int node = fdt_node_offset_by_compatible(c->fdt, -1, PCCX_BM_NPU_COMPAT);

	while (node >= 0 && !node_enabled(c, node))
		node = fdt_node_offset_by_compatible(c->fdt, node, PCCX_BM_NPU_COMPAT);
	if (node < 0)
		return fail(c, "no enabled node compatible with \"%s\" in the device tree",
			    PCCX_BM_NPU_COMPAT);
	snprintf(dt->npu_name, sizeof(dt->npu_name), "%s", name_of(c, node));
	if (reg_of(c, node, &dt->regs))
		return -1;
	if (dt->regs.size < PCCX_MMIO_SIZE)
		return fail(c, "%s: reg size 0x%llx is smaller than the 0x%x bytes of the "
			    "registers", dt->npu_name, (unsigned long long)dt->regs.size,
			    PCCX_MMIO_SIZE);
	if (dt->regs.base & 0xfff)
		return fail(c, "%s: reg base 0x%llx is not 4 KiB aligned", dt->npu_name,
			    (unsigned long long)dt->regs.base);
	if (overlaps(&dt->regs, &dt->ram))
		return fail(c, "%s: reg 0x%llx+0x%llx overlaps RAM", dt->npu_name,
			    (unsigned long long)dt->regs.base, (unsigned long long)dt->regs.size);
	if (find_irq(c, node, dt))
		return -1;
	return find_dma(c, node, dt);
}

int pccx__bm_discover(const void *fdt, size_t limit, struct pccx_bm_dt *dt, char *err,
		      size_t errlen)
{
	struct ctx c = { fdt, err, errlen };
	size_t total;
	int rc;

	memset(dt, 0, sizeof(*dt));
	if (errlen)
		err[0] = '\0';
	if (!fdt)
		return fail(&c, "no device tree (the boot loader passed address 0)");
	if (limit && limit < sizeof(struct fdt_header))
		return fail(&c, "device tree: %zu bytes, shorter than its header", limit);
	if (fdt_magic(fdt) != FDT_MAGIC)
		return fail(&c, "device tree: bad magic 0x%08x (expected 0x%08x)", fdt_magic(fdt),
			    FDT_MAGIC);
	total = fdt_totalsize(fdt);
	if (limit && total > limit)
		return fail(&c, "device tree: truncated: the header says %zu bytes, %zu are there",
			    total, limit);
	rc = fdt_check_full(fdt, total);
	if (rc)
		return fail(&c, "device tree: malformed (%s)", fdt_strerror(rc));
	dt->fdt = fdt;
	dt->fdt_size = total;
	find_psci_and_args(&c, dt);
	if (find_ram(&c, dt) || find_uart(&c, dt))
		return -1;
	return find_npu(&c, dt);
}

/* Bytes of the argument starting at p (up to a blank or the end). */
static size_t word_len(const char *p)
{
	size_t n = 0;

	while (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\n')
		n++;
	return n;
}

/* The argument KEY (with_value: KEY=VALUE, *len the value's length), or NULL. */
static const char *each_arg(const char *args, const char *key, bool with_value, size_t *len)
{
	size_t kl = strlen(key);

	for (const char *p = args; p && *p;) {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		n = word_len(p);
		if (n >= kl && !strncmp(p, key, kl)) {
			if (!with_value && n == kl)
				return p;
			if (with_value && n > kl && p[kl] == '=') {
				*len = n - kl - 1;
				return p + kl + 1;
			}
		}
		p += n;
	}
	return NULL;
}

const char *pccx__bm_bootarg(const char *args, const char *key, size_t *len)
{
	return each_arg(args, key, true, len);
}

bool pccx__bm_bootflag(const char *args, const char *flag)
{
	size_t len;

	return each_arg(args, flag, false, &len) != NULL;
}
