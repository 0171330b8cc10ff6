// SPDX-License-Identifier: MIT
/*
 * The register executor (pccx_fw.h): the command engine (isa/engine.c) drives the device
 * through the port's register accessor; buffers are spans of the port's DMA region, so a
 * handle translates to one contiguous device range. The job's timeout counts time without
 * progress, as the kernel driver's does; a fault, a hang or an abort ends with the soft reset
 * of docs/driver.md, so the next job starts on an idle device.
 */
#include "pccx_fw.h"

static uint64_t rd64(struct pccx_fw_regs *x, uint32_t off)
{
	return x->cfg.ops->rd64(x->cfg.io, off);
}

static void wr64(struct pccx_fw_regs *x, uint32_t off, uint64_t v)
{
	x->cfg.ops->wr64(x->cfg.io, off, v);
}

static uint64_t now(struct pccx_fw_regs *x)
{
	return x->cfg.now_ns ? x->cfg.now_ns(x->cfg.clk) : 0;
}

int pccx__fw_regs_reset(struct pccx_fw_regs *x)
{
	uint32_t i, polls = x->cfg.reset_polls ? x->cfg.reset_polls : 1000000u;

	x->running = false;
	x->resets++;
	wr64(x, PCCX_REG_RESET, 1);
	for (i = 0; i < polls && (rd64(x, PCCX_REG_RESET) & 1); i++)
		if (x->cfg.idle)
			x->cfg.idle(x->cfg.io);
	if (i == polls)
		return -1;
	wr64(x, PCCX_REG_ERROR, PCCX_ERROR_VALID);
	wr64(x, PCCX_REG_IRQ_STATUS, PCCX_IRQ_IDLE | PCCX_IRQ_ERROR | PCCX_IRQ_DM);
	for (i = 0; i < PCCX_DM_CHANNELS; i++)
		x->cfg.ops->wr32(x->cfg.io, PCCX_DM_PAGE(i) + PCCX_DM_ERR_W1C, 0xf);
	wr64(x, PCCX_REG_RETIRED, 0);
	/* completion is polled: the core has no interrupt handler */
	wr64(x, PCCX_REG_IRQ_ENABLE, 0);
	return 0;
}

int pccx__fw_regs_init(struct pccx_fw_regs *x, const struct pccx_fw_regs_cfg *cfg)
{
	uint64_t id;

	__builtin_memset(x, 0, sizeof(*x));
	x->cfg = *cfg;
	pccx__fw_region_init(&x->region, cfg->region_cpu, cfg->region_dev, cfg->region_size,
			     cfg->spans, cfg->max_spans);
	id = rd64(x, PCCX_REG_ID);
	if ((id >> 32) != PCCX_ID_MAGIC || ((id >> 24) & 0xff) != PCCX_ID_MAJOR ||
	    !(rd64(x, PCCX_REG_FEATURES) & PCCX_FEAT_SOFT_RESET))
		return PCCX_EF_NODEV;
	if (pccx__fw_regs_reset(x))
		return PCCX_EF_BUSY;
	x->resets = 0;
	return 0;
}

static int regs_info(void *ctx, struct pccx_fw_dev_info *out)
{
	struct pccx_fw_regs *x = ctx;
	uint64_t largest;

	out->hw_id = rd64(x, PCCX_REG_ID);
	out->features = rd64(x, PCCX_REG_FEATURES);
	out->caps = rd64(x, PCCX_REG_CAPS);
	out->clocks = rd64(x, PCCX_REG_CLOCKS);
	out->dma_addr_bits = (uint32_t)rd64(x, PCCX_REG_DMA_ADDR_BITS);
	out->l2_words = (uint32_t)out->caps;
	out->memory_total = x->region.size;
	out->memory_free = pccx__fw_region_free_bytes(&x->region, &largest);
	out->max_buf_size = x->region.size;
	out->flags = x->cfg.flags;
	out->resets = x->resets;
	return (out->hw_id >> 32) == PCCX_ID_MAGIC ? 0 : -1;
}

static int regs_alloc(void *ctx, uint64_t size, uint32_t access, uint32_t *handle,
		      uint8_t **mem, uint64_t *largest)
{
	struct pccx_fw_regs *x = ctx;
	uint64_t off;
	int rc;

	(void)access;   /* the whole region is the device's: access is checked by the validator */
	rc = pccx__fw_region_alloc(&x->region, size, handle, &off, largest);
	if (rc)
		return rc;
	*mem = x->region.cpu + off;
	return 0;
}

static void regs_free(void *ctx, uint32_t handle)
{
	struct pccx_fw_regs *x = ctx;

	(void)pccx__fw_region_free(&x->region, handle);
}

/* Handle and range to device address: a span is contiguous, so all of it at once. */
static int xlate(void *ctx, uint32_t handle, uint64_t offset, uint64_t len, uint64_t *dev_addr,
		 uint64_t *contig)
{
	struct pccx_fw_regs *x = ctx;
	const struct pccx_fw_span *sp = pccx__fw_region_find(&x->region, handle);

	if (!sp || offset > sp->size || len > sp->size - offset || !len)
		return -1;
	*dev_addr = x->region.dev + sp->off + offset;
	*contig = len;
	return 0;
}

static uint64_t cycles(struct pccx_fw_regs *x)
{
	return rd64(x, PCCX_REG_FEATURES) & PCCX_FEAT_PERF ? rd64(x, PCCX_REG_CYCLES) : 0;
}

/* The outcome of an engine that stopped with an error, as the kernel driver reports it. */
static void engine_fault(const struct pccx_engine_ctx *e, struct pccx_fw_outcome *out)
{
	const struct pccx_engine_error *er = &e->err;

	out->status = PCCX_LINK_JOB_FAULT;
	out->fault_index = er->insn;
	out->error_info = er->info;
	if (er->kind == PCCX_EF_DEVICE) {
		out->hw_error = ((uint32_t)er->error & 0x00ffffffu) |
				(PCCX_LINK_FAULT_DEVICE << PCCX_LINK_FAULT_SHIFT);
		out->fault_index = (uint32_t)(er->error >> PCCX_ERROR_INDEX_SHIFT);
	} else {
		out->hw_error = ((uint32_t)er->kind << PCCX_LINK_FAULT_SHIFT) |
				((er->channel & 0xffu) << 8) |
				(er->kind == PCCX_EF_DM_STATUS || er->kind == PCCX_EF_DM_TAG ?
				 (uint32_t)er->info & 0xffu : 0);
	}
}

static void finish(struct pccx_fw_regs *x, struct pccx_fw_outcome *out)
{
	out->end_ns = now(x);
	out->retired = x->e.retired;
	out->mmio = x->e.mmio;
	out->cycles = cycles(x) - x->start_cycles;
	x->running = false;
}

static int regs_start(void *ctx, const struct pccx_job_view *job, uint32_t timeout_ms,
		      struct pccx_fw_outcome *out)
{
	struct pccx_fw_regs *x = ctx;

	out->start_ns = now(x);
	x->start_cycles = cycles(x);
	x->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
	if (pccx__engine_start(&x->e, job, x->cfg.ops, x->cfg.io, xlate, x) ==
	    PCCX_ENGINE_RUNNING) {
		x->running = true;
		x->last_progress = x->e.progress;
		x->last_change_ns = out->start_ns;
		x->last_retired = 0;
		return 0;
	}
	/* not idle, halted, or no longer a pccx device: the kernel's BUSY fault */
	engine_fault(&x->e, out);
	out->hw_error = PCCX_LINK_FAULT_BUSY << PCCX_LINK_FAULT_SHIFT;
	finish(x, out);
	(void)pccx__fw_regs_reset(x);
	return -1;
}

static uint32_t regs_poll(void *ctx, struct pccx_fw_outcome *out)
{
	struct pccx_fw_regs *x = ctx;
	int st;
	uint64_t t;

	if (!x->running)
		return out->status ? out->status : PCCX_LINK_JOB_ABORTED;
	st = pccx__engine_step(&x->e);
	if (st == PCCX_ENGINE_DONE) {
		finish(x, out);
		return PCCX_LINK_JOB_DONE;
	}
	if (st == PCCX_ENGINE_ERROR) {
		engine_fault(&x->e, out);
		finish(x, out);
		(void)pccx__fw_regs_reset(x);
		return PCCX_LINK_JOB_FAULT;
	}
	t = now(x);
	if (x->e.progress != x->last_progress) {
		x->last_progress = x->e.progress;
		x->last_change_ns = t;
		return PCCX_LINK_JOB_RUNNING;
	}
	if (t - x->last_change_ns > x->timeout_ns) {
		/* a long instruction that retired meanwhile restarts the clock (as the driver) */
		uint64_t retired = rd64(x, PCCX_REG_RETIRED);

		if (retired != x->last_retired) {
			x->last_retired = retired;
			x->last_change_ns = t;
			return PCCX_LINK_JOB_RUNNING;
		}
		out->hw_error = PCCX_LINK_FAULT_HUNG << PCCX_LINK_FAULT_SHIFT;
		out->fault_index = pccx__engine_words_pushed(&x->e);
		out->error_info = retired;
		finish(x, out);
		(void)pccx__fw_regs_reset(x);
		return PCCX_LINK_JOB_TIMEOUT;
	}
	if (x->cfg.idle)
		x->cfg.idle(x->cfg.io);
	return PCCX_LINK_JOB_RUNNING;
}

static int regs_reset(void *ctx)
{
	return pccx__fw_regs_reset(ctx);
}

const struct pccx_fw_exec_ops pccx__fw_regs_exec = {
	.info = regs_info,
	.buf_alloc = regs_alloc,
	.buf_free = regs_free,
	.start = regs_start,
	.poll = regs_poll,
	.reset = regs_reset,
};
