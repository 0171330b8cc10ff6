// SPDX-License-Identifier: MIT
/*
 * Configuration: the KV260 defaults, the checks, and the pccx,npu-v002 device-tree node
 * (docs/registers.md "Device-tree binding") read with libfdt.
 */
#include <libfdt.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "fileio.h"
#include "sim_int.h"

#define MAX_DTB_BYTES (1u << 20)

void pccx__sim_config_default(struct pccx_sim_config *c)
{
	memset(c, 0, sizeof(*c));
	c->core_hz = 400000000;
	c->axi_hz = 250000000;
	c->l2_words = PCCX_L2_WORDS;
	c->instr_fifo_depth = 8;
	c->wstream_fifo_depth = 4096;
	c->weight_ports = PCCX_WSTREAM_PORTS;
	c->dm_fifo_depth = 8;
	c->dma_address_bits = 32;
	c->ddr_mbps = 19200;
	c->reg_base = 0xa0000000ull;
	c->rowmask = 1;
	c->smul = 1;
	c->colskip = 1;
	c->racc = 1;
	c->sfu_lanes = 1;

	c->mmio_write_axi = 8;
	c->mmio_read_axi = 40;
	c->ddr_burst_bytes = 256;
	c->ddr_burst_ps = 500;
	c->ddr_row_miss_ps = 10000;
	c->ddr_turnaround_ps = 7500;
	c->ddr_refresh_ps = 350000;
	c->ddr_refi_ps = 7800000;
	c->ddr_read_latency_ps = 120000;
	c->ddr_write_resp_ps = 80000;
	c->ddr_banks = 16;
	c->ddr_row_bytes = 8192;
	c->dm_outstanding = 8;
	c->fmap_fifo_depth = 64;
	c->result_fifo_depth = 64;
	c->l2_latency = 3;
	c->gemv_tail = 10;
	c->gemm_tail = 66;
	c->gemm_q4_macs = 2048;
	c->gemm_f32_macs = 512;	/* an FP32 multiply-add takes two DSP48E2 slices */
	c->quant_latency = 4;
	c->overrun_grace = 8192;
	c->mmio_stall_limit = 1ull << 24;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int pccx__sim_config_check(const struct pccx_sim_config *c, pccx_diag *d)
{
	if (c->core_hz < 1000000 || c->core_hz > 2000000000)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "pccx,core-clock-hz: %llu outside 1 MHz .. 2 GHz",
				  (unsigned long long)c->core_hz);
	if (c->axi_hz < 1000000 || c->axi_hz > 2000000000)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "pccx,axi-clock-hz: %llu outside 1 MHz .. 2 GHz",
				  (unsigned long long)c->axi_hz);
	if (c->l2_words < 1024 || c->l2_words > PCCX_L2_WORDS)
		return pccx__fail(d, PCCX_ERR_RANGE, "pccx,l2-words: %u outside 1024 .. %u",
				  c->l2_words, PCCX_L2_WORDS);
	if (c->instr_fifo_depth < 1 || c->instr_fifo_depth > SIM_MAX_FIFO)
		return pccx__fail(d, PCCX_ERR_RANGE, "pccx,instr-fifo-depth: %u outside 1 .. %u",
				  c->instr_fifo_depth, SIM_MAX_FIFO);
	if (c->wstream_fifo_depth < 64 || c->wstream_fifo_depth > (1u << 20))
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "pccx,wstream-fifo-depth: %u outside 64 .. 2^20",
				  c->wstream_fifo_depth);
	if (c->weight_ports != PCCX_WSTREAM_PORTS)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "pccx,weight-ports: %u (the v002 ISA deals rows over exactly %u)",
				  c->weight_ports, PCCX_WSTREAM_PORTS);
	if (c->dm_fifo_depth < 1 || c->dm_fifo_depth > 255)
		return pccx__fail(d, PCCX_ERR_RANGE, "pccx,dm-fifo-depth: %u outside 1 .. 255",
				  c->dm_fifo_depth);
	if (c->dma_address_bits < 32 || c->dma_address_bits > 48)
		return pccx__fail(d, PCCX_ERR_RANGE, "pccx,dma-address-bits: %u outside 32 .. 48",
				  c->dma_address_bits);
	if (c->ddr_mbps < 100 || c->ddr_mbps > 1000000)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "pccx,ddr-bandwidth-mbps: %llu outside 100 .. 1,000,000",
				  (unsigned long long)c->ddr_mbps);
	if (!pow2(c->ddr_banks) || !pow2(c->ddr_row_bytes) || c->ddr_row_bytes < 256 ||
	    c->ddr_banks > 1024 || !c->ddr_refi_ps || c->ddr_refresh_ps >= c->ddr_refi_ps)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: DDR geometry or refresh invalid");
	if (c->ddr_burst_bytes < SIM_BEAT || c->ddr_burst_bytes > 4096 ||
	    c->ddr_burst_bytes % SIM_BEAT || c->ddr_burst_bytes / SIM_BEAT > c->fmap_fifo_depth ||
	    c->ddr_burst_bytes / SIM_BEAT > c->wstream_fifo_depth)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: burst of %u bytes invalid",
				  c->ddr_burst_bytes);
	if (!c->dm_outstanding || c->dm_outstanding > SIM_MAX_BURSTS)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: dm_outstanding %u outside 1 .. %u",
				  c->dm_outstanding, SIM_MAX_BURSTS);
	if (c->result_fifo_depth < 1 || c->result_fifo_depth > 65536 ||
	    c->fmap_fifo_depth > 65536)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: stream FIFO depth invalid");
	if (c->rowmask > 1)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: rowmask %u is not 0 or 1",
				  c->rowmask);
	if (c->smul > 1)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: smul %u is not 0 or 1", c->smul);
	if (c->colskip > 1)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: colskip %u is not 0 or 1",
				  c->colskip);
	if (c->racc > 1)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: racc %u is not 0 or 1", c->racc);
	if (c->sfu_lanes != 1 && c->sfu_lanes != 2 && c->sfu_lanes != 4)
		return pccx__fail(d, PCCX_ERR_RANGE, "pccx,sfu-lanes: %u is not 1, 2 or 4",
				  c->sfu_lanes);
	if (!c->gemm_q4_macs || !c->gemm_f32_macs || !c->mmio_read_axi || !c->mmio_write_axi)
		return pccx__fail(d, PCCX_ERR_RANGE, "simulator: zero rate or MMIO cost");
	return 0;
}

/* ---- device tree ------------------------------------------------------------------------ */

static int prop_u64(const void *fdt, int node, const char *name, uint64_t *out, pccx_diag *d)
{
	int len;
	const fdt32_t *p = fdt_getprop(fdt, node, name, &len);

	if (!p)
		return 0;       /* absent: keep the default */
	if (len == 4)
		*out = fdt32_to_cpu(p[0]);
	else if (len == 8)
		*out = ((uint64_t)fdt32_to_cpu(p[0]) << 32) | fdt32_to_cpu(p[1]);
	else
		return pccx__fail(d, PCCX_ERR_FORMAT, "device tree: %s: %d bytes, expected one cell",
				  name, len);
	return 0;
}

static int prop_u32(const void *fdt, int node, const char *name, uint32_t *out, pccx_diag *d)
{
	uint64_t v = *out;
	int rc = prop_u64(fdt, node, name, &v, d);

	if (rc)
		return rc;
	if (v > 0xffffffffull)
		return pccx__fail(d, PCCX_ERR_RANGE, "device tree: %s: value too large", name);
	*out = (uint32_t)v;
	return 0;
}

int pccx__sim_config_from_dtb(struct pccx_sim_config *c, const void *blob, size_t len,
			      pccx_diag *d)
{
	int node, rc, rlen;
	const fdt32_t *reg;

	if (len < sizeof(struct fdt_header) || fdt_check_header(blob) ||
	    fdt_totalsize(blob) > len)
		return pccx__fail(d, PCCX_ERR_FORMAT, "device tree: not a valid flattened tree");
	node = fdt_node_offset_by_compatible(blob, -1, "pccx,npu-v002");
	if (node < 0)
		return pccx__fail(d, PCCX_ERR_FORMAT,
				  "device tree: no node compatible with \"pccx,npu-v002\"");
	reg = fdt_getprop(blob, node, "reg", &rlen);
	if (reg && rlen >= 8)
		c->reg_base = rlen >= 16 ? ((uint64_t)fdt32_to_cpu(reg[0]) << 32) |
						   fdt32_to_cpu(reg[1])
					 : fdt32_to_cpu(reg[0]);
	rc = prop_u64(blob, node, "pccx,core-clock-hz", &c->core_hz, d);
	if (!rc)
		rc = prop_u64(blob, node, "pccx,axi-clock-hz", &c->axi_hz, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,l2-words", &c->l2_words, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,instr-fifo-depth", &c->instr_fifo_depth, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,wstream-fifo-depth", &c->wstream_fifo_depth, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,weight-ports", &c->weight_ports, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,dm-fifo-depth", &c->dm_fifo_depth, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,dma-address-bits", &c->dma_address_bits, d);
	if (!rc)
		rc = prop_u64(blob, node, "pccx,ddr-bandwidth-mbps", &c->ddr_mbps, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,rowmask", &c->rowmask, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,smul", &c->smul, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,colskip", &c->colskip, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,racc", &c->racc, d);
	if (!rc)
		rc = prop_u32(blob, node, "pccx,sfu-lanes", &c->sfu_lanes, d);
	if (!rc)
		rc = pccx__sim_config_check(c, d);
	return rc;
}

int pccx__sim_config_from_dtb_file(struct pccx_sim_config *c, const char *path, pccx_diag *d)
{
	uint8_t *data;
	size_t len;
	int rc = pccx__read_file(path, MAX_DTB_BYTES, &data, &len, d);

	if (rc)
		return rc;
	rc = pccx__sim_config_from_dtb(c, data, len, d);
	if (rc && d && !strstr(d->msg, path)) {
		char msg[sizeof(d->msg)];

		snprintf(msg, sizeof(msg), "%s", d->msg);
		pccx__fail(d, rc, "%s: %s", path, msg);
	}
	free(data);
	return rc;
}
