// SPDX-License-Identifier: MIT
/*
 * The boot self-test: one small job through the whole chain the protocol's jobs take (the
 * validator, the command engine, the register accessor, the DataMovers, host memory in the DMA
 * pool), run before the server owns the pool: a pattern copied host -> L2 -> host must come
 * back bit for bit. It catches a wrong base, a pool the device cannot reach or a dead device
 * before the host is told the board is ready.
 */
#include <stdio.h>
#include <string.h>

#include "pccx_engine.h"
#include "pccx_fw.h"
#include "selftest.h"

#define ELEMS   64u                     /* FP32 elements: 256 bytes, 16 L2 words */
#define BYTES   (ELEMS * 4u)
#define L2_AT   16u

struct st_ctx {
	uint64_t pool;                  /* device address of the pool */
	uint64_t pool_size;
};

static uint64_t word_memset(unsigned n)
{
	return ((uint64_t)PCCX_OP_MEMSET << 60) | PCCX_PUT(C, cache, 0) | PCCX_PUT(C, entry, 0) |
	       PCCX_PUT(C, a, n) | PCCX_PUT(C, b, 1) | PCCX_PUT(C, c, 1);
}

static uint64_t word_memcpy(bool from_host, uint32_t dest, uint32_t src, uint32_t desc)
{
	return ((uint64_t)PCCX_OP_MEMCPY << 60) | PCCX_PUT(B, from_host, from_host) |
	       PCCX_PUT(B, to_host, !from_host) | PCCX_PUT(B, dest, dest) | PCCX_PUT(B, src, src) |
	       PCCX_PUT(B, desc, desc) | PCCX_PUT(B, fshape, 0) | PCCX_PUT(B, async, 0);
}

/* Handles 1 (source) and 2 (destination): BYTES each at the start of the pool. */
static int lookup(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access)
{
	(void)ctx;
	if (handle != 1 && handle != 2)
		return -1;
	*size = BYTES;
	*access = handle == 1 ? PCCX_BUF_DEV_READ : PCCX_BUF_DEV_WRITE;
	return 0;
}

static int xlate(void *ctx, uint32_t handle, uint64_t offset, uint64_t len, uint64_t *dev_addr,
		 uint64_t *contig)
{
	struct st_ctx *c = ctx;

	if ((handle != 1 && handle != 2) || offset > BYTES || len > BYTES - offset)
		return -1;
	*dev_addr = c->pool + (handle - 1) * BYTES + offset;
	*contig = len;
	return 0;
}

int pccx__bm_selftest(const struct pccx_fw_regs_cfg *cfg, struct pccx_bm_selftest *r)
{
	uint8_t *pool_cpu = cfg->region_cpu;
	const uint64_t insn[3] = { word_memset(ELEMS), word_memcpy(true, L2_AT, 0, 0),
				   word_memcpy(false, 0, L2_AT, 1) };
	const struct pccx_dma_desc dma[2] = {
		{ .handle = 1, .flags = PCCX_DMA_TO_DEVICE, .offset = 0, .length = BYTES },
		{ .handle = 2, .flags = PCCX_DMA_FROM_DEVICE, .offset = 0, .length = BYTES },
	};
	const struct pccx_job_view job = { insn, 3, dma, 2, NULL, 0 };
	struct pccx_vlimits lim;
	struct pccx_vresult vr;
	struct pccx_engine_ctx e;
	struct st_ctx c = { cfg->region_dev, cfg->region_size };
	uint8_t used[PCCX_DMA_BITMAP_BYTES(2)];
	uint64_t last = 0, still = 0;

	memset(r, 0, sizeof(*r));
	if (cfg->region_size < 2 * BYTES) {
		snprintf(r->msg, sizeof(r->msg), "DMA pool of %llu bytes is too small",
			 (unsigned long long)cfg->region_size);
		return -1;
	}
	pccx__vlimits_default(&lim);
	if (pccx__validate(&job, lookup, NULL, &lim, used, &vr)) {
		snprintf(r->msg, sizeof(r->msg), "validator refused the job: %s at %u",
			 pccx__isa_strerror(vr.err), vr.index);
		return -1;
	}
	for (uint32_t i = 0; i < BYTES; i++) {
		pool_cpu[i] = (uint8_t)(i * 37u + 11u);
		pool_cpu[BYTES + i] = 0xee;
	}
	r->state = pccx__engine_start(&e, &job, cfg->ops, cfg->io, xlate, &c);
	while (r->state == PCCX_ENGINE_RUNNING && still < PCCX_BM_SELFTEST_STILL) {
		r->state = pccx__engine_step(&e);
		still = e.progress == last ? still + 1 : 0;
		last = e.progress;
		if (still && cfg->idle)
			cfg->idle(cfg->io);     /* a simulated device runs only when told */
	}
	r->mmio = e.mmio;
	r->retired = e.retired;
	if (r->state == PCCX_ENGINE_ERROR) {
		snprintf(r->msg, sizeof(r->msg), "engine error %s (error 0x%llx, info 0x%llx, "
			 "channel %u, insn %u)", pccx__engine_fail_name(e.err.kind),
			 (unsigned long long)e.err.error, (unsigned long long)e.err.info,
			 e.err.channel, e.err.insn);
		return -1;
	}
	if (r->state != PCCX_ENGINE_DONE) {
		snprintf(r->msg, sizeof(r->msg), "no progress for %u engine steps (%u of 3 words "
			 "pushed)", PCCX_BM_SELFTEST_STILL, pccx__engine_words_pushed(&e));
		return -1;
	}
	for (uint32_t i = 0; i < BYTES; i++) {
		if (pool_cpu[BYTES + i] != pool_cpu[i]) {
			snprintf(r->msg, sizeof(r->msg), "byte %u came back 0x%02x, sent 0x%02x", i,
				 pool_cpu[BYTES + i], pool_cpu[i]);
			return -1;
		}
	}
	return 0;
}
