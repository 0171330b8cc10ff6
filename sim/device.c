// SPDX-License-Identifier: MIT
/*
 * The device at its register interface: creation, the control page (docs/registers.md),
 * errors and HALT, soft reset, IDLE and the interrupt, the shadow IOMMU windows.
 */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "sim_int.h"

#define SIM_ID_MINOR 0u
#define SIM_ID_BUILD 1u

/* ---- state predicates ----------------------------------------------------------------- */

bool pccx__sim_engines_idle(const struct pccx_sim *s)
{
	return s->n_inflight == 0;
}

/* Bytes in a weight-stream or fmap FIFO that no instruction has taken yet. */
bool pccx__sim_input_pending(const struct pccx_sim *s)
{
	unsigned p;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		if (s->wq[p].level || s->wq[p].reserved)
			return true;
	return s->fmapq.level || s->fmapq.reserved;
}

/* ... or in any stream FIFO, the result FIFO (device output for the host) included. */
static bool sim_stream_pending(const struct pccx_sim *s)
{
	return pccx__sim_input_pending(s) || s->resq.level;
}

static bool sim_is_idle(const struct pccx_sim *s)
{
	return s->core_cycle >= s->reset_until && s->fifo_level == 0 && pccx__sim_engines_idle(s) &&
	       !pccx__sim_dm_outstanding(s) && !sim_stream_pending(s);
}

static uint64_t status_value(const struct pccx_sim *s)
{
	uint64_t v = 0;

	if (s->fifo_level || !pccx__sim_engines_idle(s))
		v |= PCCX_STATUS_BUSY;
	if (s->done_bit)
		v |= PCCX_STATUS_DONE;
	if (s->error & PCCX_ERROR_VALID)
		v |= PCCX_STATUS_ERROR;
	if (sim_is_idle(s))
		v |= PCCX_STATUS_IDLE;
	if (s->halted)
		v |= PCCX_STATUS_HALTED;
	v |= (uint64_t)s->fifo_level << PCCX_STATUS_FIFO_SHIFT;
	return v;
}

/* ---- errors, reset, idle ------------------------------------------------------------- */

void pccx__sim_set_error(struct pccx_sim *s, uint32_t cause, uint32_t isa_err, uint64_t index,
			 uint64_t info)
{
	if (!(s->error & PCCX_ERROR_VALID)) {
		s->error = (cause & PCCX_ERROR_CAUSE_MASK) | PCCX_ERROR_VALID |
			   ((uint64_t)(isa_err & 0xffu) << PCCX_ERROR_ISA_SHIFT) |
			   ((index & 0xffffffffull) << PCCX_ERROR_INDEX_SHIFT);
		s->error_info = info;
		s->st.errors++;
		pccx__sim_trace_event(s, "frontend", "ERROR", s->now_ps, s->now_ps + s->core_ps,
				      cause);
	}
	s->halted = true;
	s->irq_status |= PCCX_IRQ_ERROR;
	s->overrun_since = 0;
	pccx__sim_frontend_flush(s);
}

static void sim_reset_state(struct pccx_sim *s)
{
	unsigned p, ch;

	pccx__sim_frontend_flush(s);
	pccx__sim_matmul_abort(s, &s->gemv);
	pccx__sim_matmul_abort(s, &s->gemm);
	pccx__sim_timed_abort(s);
	pccx__sim_dma_abort(s);
	memset(s->ops, 0, sizeof(s->ops));
	s->n_inflight = 0;
	s->epoch++;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		pccx__sim_beatq_clear(&s->wq[p]);
		s->port_seq[p] = 0;
	}
	pccx__sim_beatq_clear(&s->fmapq);
	pccx__sim_beatq_clear(&s->resq);
	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++)
		pccx__sim_dm_reset(s, &s->dm[ch]);
	s->stream_seq = 0;
	s->fence = false;
	s->head_decoded = false;
	s->s_bits = 0;
	pccx__shape_reset(&s->shape);
	s->retired = 0;
	s->issued_job = 0;
	s->n_times = 0;
	s->error = s->error_info = 0;
	s->irq_status = 0;
	s->halted = false;
	s->done_bit = false;
	s->overrun_since = 0;
	s->was_idle = false;
	pccx__sim_l2_clear(s);
	/* The hardware clears L2 eight words per cycle. */
	s->reset_until = s->core_cycle + (s->cfg.l2_words + 7) / 8;
	pccx__sim_trace_event(s, "frontend", "RESET", s->now_ps,
			      s->now_ps + (uint64_t)((s->cfg.l2_words + 7) / 8) * s->core_ps, 0);
}

/* Once per core cycle, after the units: the IDLE interrupt and the stream-overrun watchdog. */
void pccx__sim_device_core_tick(struct pccx_sim *s)
{
	bool idle = sim_is_idle(s);

	if (idle && !s->was_idle)
		s->irq_status |= PCCX_IRQ_IDLE;
	s->was_idle = idle;

	/*
	 * Stream bytes that nothing will consume: no instruction queued or in flight, every
	 * DataMover done, yet a weight-stream or fmap FIFO holds data. A driver pushes an
	 * instruction word before the DataMover commands that feed it (docs/registers.md), so
	 * in a valid job every byte that arrives has its consumer in the device already and this
	 * state is reached only by a job that provides more than it consumes, however slow the
	 * host. The grace only tolerates drivers that push a command first and the word promptly.
	 * Bytes in the result FIFO are the device's output waiting for the host's S2MM command
	 * (a slow host is allowed to be slow): they keep IDLE low but are no error.
	 */
	if (!s->halted && s->fifo_level == 0 && pccx__sim_engines_idle(s) &&
	    !pccx__sim_dm_outstanding(s) && pccx__sim_input_pending(s)) {
		if (!s->overrun_since) {
			s->overrun_since = s->core_cycle;
		} else if (s->core_cycle - s->overrun_since >= s->cfg.overrun_grace) {
			uint64_t info = 0;
			unsigned p;

			for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
				if (s->wq[p].level) {
					info = ((uint64_t)p << 56) |
					       (uint64_t)s->wq[p].level * SIM_BEAT;
					break;
				}
			if (p == PCCX_WSTREAM_PORTS)
				info = ((uint64_t)PCCX_DM_FMAP << 56) |
				       (uint64_t)s->fmapq.level * SIM_BEAT;
			pccx__sim_set_error(s, PCCX_CAUSE_STREAM_OVERRUN, 0, s->issued_job, info);
		}
	} else {
		s->overrun_since = 0;
	}
}

/* ---- the control page ----------------------------------------------------------------- */

uint64_t pccx__sim_features(const pccx_sim *s)
{
	uint64_t f = PCCX_FEAT_STATUS_REGS | PCCX_FEAT_ERROR_REG | PCCX_FEAT_IRQ |
		     PCCX_FEAT_SOFT_RESET | PCCX_FEAT_RETIRED | PCCX_FEAT_CVO_EXT |
		     PCCX_FEAT_WSTREAM4 | PCCX_FEAT_PERF;

	if (s->cfg.dma_address_bits > 32)
		f |= PCCX_FEAT_WIDE_DMA;
	if (s->cfg.rowmask)
		f |= PCCX_FEAT_ROWMASK;
	if (s->cfg.smul)
		f |= PCCX_FEAT_SMUL;
	if (s->cfg.colskip)
		f |= PCCX_FEAT_COLSKIP;
	if (s->cfg.racc)
		f |= PCCX_FEAT_RACC;
	return f;
}

static uint64_t ctrl_read(struct pccx_sim *s, uint32_t reg)
{
	const struct pccx_sim_config *c = &s->cfg;

	switch (reg) {
	case PCCX_REG_INSTR:        /* STATUS_POP: on this device a plain STATUS read */
	case PCCX_REG_STATUS:
		return status_value(s);
	case PCCX_REG_ID:
		return ((uint64_t)PCCX_ID_MAGIC << 32) | (PCCX_ID_MAJOR << 24) |
		       (SIM_ID_MINOR << 16) | SIM_ID_BUILD;
	case PCCX_REG_FEATURES:
		return pccx__sim_features(s);
	case PCCX_REG_RETIRED:
		return s->retired;
	case PCCX_REG_ERROR:
		return s->error;
	case PCCX_REG_ERROR_INFO:
		return s->error_info;
	case PCCX_REG_IRQ_STATUS:
		return s->irq_status;
	case PCCX_REG_IRQ_ENABLE:
		return s->irq_enable;
	case PCCX_REG_RESET:
		return s->core_cycle < s->reset_until ? 1 : 0;
	case PCCX_REG_DMA_ADDR_BITS:
		return c->dma_address_bits;
	case PCCX_REG_CAPS:
		return (uint64_t)c->l2_words | ((uint64_t)c->instr_fifo_depth << 32) |
		       ((uint64_t)PCCX_SHAPE_ENTRIES << 40) | ((uint64_t)c->weight_ports << 48) |
		       ((uint64_t)c->dm_fifo_depth << 56);
	case PCCX_REG_CLOCKS:
		return (c->core_hz / 1000) | ((c->axi_hz / 1000) << 32);
	case PCCX_REG_CYCLES:
		return s->now_ps / s->core_ps;     /* deferred edges included */
	case PCCX_REG_WFIFO_DEPTH:
		return c->wstream_fifo_depth;
	}
	return 0;
}

/* INSTR: the write stalls (AWREADY low) while the FIFO is full. */
static void push_instr(struct pccx_sim *s, uint64_t w)
{
	uint64_t t0 = s->now_ps, limit = s->now_ps + s->cfg.mmio_stall_limit * s->core_ps;

	while (s->fifo_level >= s->cfg.instr_fifo_depth && !s->halted &&
	       s->core_cycle >= s->reset_until && s->now_ps < limit)
		pccx__sim_run_to(s, s->now_ps + s->axi_ps);
	pccx__sim_sync(s);
	s->mmio_full_ps += s->now_ps - t0;
	if (s->halted || s->core_cycle < s->reset_until ||
	    s->fifo_level >= s->cfg.instr_fifo_depth) {
		s->st.mmio_dropped++;
		return;
	}
	s->fifo[(s->fifo_head + s->fifo_level) % SIM_MAX_FIFO] = w;
	s->fifo_level++;
}

static void ctrl_write(struct pccx_sim *s, uint32_t reg, uint64_t v)
{
	pccx__sim_sync(s);
	switch (reg) {
	case PCCX_REG_INSTR:
		push_instr(s, v);
		break;
	case PCCX_REG_RETIRED:
		s->retired = 0;
		s->issued_job = 0;
		s->n_times = 0;
		break;
	case PCCX_REG_ERROR:
		if (v & PCCX_ERROR_VALID) {
			s->error = 0;
			s->error_info = 0;
			s->halted = false;
		}
		break;
	case PCCX_REG_IRQ_STATUS:
		s->irq_status &= ~v;
		break;
	case PCCX_REG_IRQ_ENABLE:
		s->irq_enable = v & (PCCX_IRQ_IDLE | PCCX_IRQ_ERROR | PCCX_IRQ_DM);
		break;
	case PCCX_REG_RESET:
		if (v & 1)
			sim_reset_state(s);
		break;
	default:
		break;      /* KICK and read-only registers: ignored */
	}
}

/* ---- MMIO ------------------------------------------------------------------------------ */

static void mmio_cost(struct pccx_sim *s, uint32_t axi_cycles, bool write, uint32_t off)
{
	uint64_t t = s->now_ps + (uint64_t)axi_cycles * s->axi_ps;

	pccx__sim_trace_event(s, "host mmio", write ? "write" : "read", s->now_ps, t, off);

	s->mmio_ps += t - s->now_ps;
	if (write)
		s->st.mmio_writes++;
	else
		s->st.mmio_reads++;
	pccx__sim_run_to(s, t);
}

static int check_off(uint32_t off, unsigned width)
{
	if (off >= PCCX_MMIO_SIZE || off % width)
		return PCCX_ERR_RANGE;
	return 0;
}

int pccx__sim_mmio_read64(pccx_sim *s, uint32_t off, uint64_t *v)
{
	int rc = check_off(off, 8);

	if (rc)
		return rc;
	if (off < PCCX_DM_PAGE(0)) {
		mmio_cost(s, s->cfg.mmio_read_axi, false, off);
		*v = ctrl_read(s, off);
		return 0;
	} else {
		uint32_t lo, hi;

		rc = pccx__sim_mmio_read32(s, off, &lo);
		if (!rc)
			rc = pccx__sim_mmio_read32(s, off + 4, &hi);
		if (!rc)
			*v = lo | ((uint64_t)hi << 32);
		return rc;
	}
}

int pccx__sim_mmio_write64(pccx_sim *s, uint32_t off, uint64_t v)
{
	int rc = check_off(off, 8);

	if (rc)
		return rc;
	if (off < PCCX_DM_PAGE(0)) {
		mmio_cost(s, s->cfg.mmio_write_axi, true, off);
		ctrl_write(s, off, v);
		return 0;
	}
	rc = pccx__sim_mmio_write32(s, off, (uint32_t)v);
	if (!rc)
		rc = pccx__sim_mmio_write32(s, off + 4, (uint32_t)(v >> 32));
	return rc;
}

int pccx__sim_mmio_read32(pccx_sim *s, uint32_t off, uint32_t *v)
{
	int rc = check_off(off, 4);

	if (rc)
		return rc;
	mmio_cost(s, s->cfg.mmio_read_axi, false, off);
	if (off < PCCX_DM_PAGE(0)) {
		uint64_t r = ctrl_read(s, off & ~7u);

		*v = (off & 4) ? (uint32_t)(r >> 32) : (uint32_t)r;
	} else {
		unsigned ch = off / 0x1000u - 1;

		if ((off & 0xfffu) == PCCX_DM_STS_POP)
			pccx__sim_sync(s);     /* a pop frees a status slot */
		*v = pccx__sim_dm_read(s, ch, off & 0xfffu);
	}
	return 0;
}

int pccx__sim_mmio_write32(pccx_sim *s, uint32_t off, uint32_t v)
{
	int rc = check_off(off, 4);

	if (rc)
		return rc;
	mmio_cost(s, s->cfg.mmio_write_axi, true, off);
	if (off < PCCX_DM_PAGE(0)) {
		/* The upper half of a 64-bit register is not written by a 32-bit access. */
		if (!(off & 4))
			ctrl_write(s, off, v);
	} else {
		unsigned ch = off / 0x1000u - 1, reg = off & 0xfffu;

		/* A staged command register only holds its value until CMD_PUSH reads it:
		 * nothing the deferred edges do depends on it, so they need not run first. */
		if (reg != PCCX_DM_CMD_LO && reg != PCCX_DM_CMD_HI && reg != PCCX_DM_CMD_EXT &&
		    reg != PCCX_DM_CMD_ADDR_HI)
			pccx__sim_sync(s);
		pccx__sim_dm_write(s, ch, reg, v);
	}
	return 0;
}

/* ---- time ----------------------------------------------------------------------------- */

void pccx__sim_advance(pccx_sim *s, uint64_t cycles)
{
	pccx__sim_run_to(s, s->now_ps + cycles * s->core_ps);
}

bool pccx__sim_run_until_idle(pccx_sim *s, uint64_t max_cycles)
{
	uint64_t end = s->now_ps + max_cycles * s->core_ps;

	while (!sim_is_idle(s) && !s->halted) {
		uint64_t step = s->now_ps + 64 * s->core_ps;

		if (s->now_ps >= end)
			return false;
		pccx__sim_run_to(s, step < end ? step : end);
	}
	return true;
}

uint64_t pccx__sim_cycles(const pccx_sim *s)
{
	return s->now_ps / s->core_ps;     /* deferred edges included */
}

bool pccx__sim_irq(const pccx_sim *s)
{
	return (s->irq_status & s->irq_enable) != 0;
}

void pccx__sim_set_host_backlog(pccx_sim *s, bool pending)
{
	if (pending != s->host_backlog)
		pccx__sim_sync(s);     /* the deferred edges counted the old value */
	s->host_backlog = pending;
}

/* ---- windows ---------------------------------------------------------------------------- */

struct sim_window *pccx__sim_window_find(struct pccx_sim *s, uint64_t addr)
{
	size_t i;

	for (i = 0; i < s->n_win; i++)
		if (addr >= s->win[i].base && addr - s->win[i].base < s->win[i].len)
			return &s->win[i];
	return NULL;
}

int pccx__sim_dma_window_add(pccx_sim *s, uint64_t base, uint64_t len, void *host_ptr,
			     uint32_t access)
{
	size_t i;

	if (!len || base + len < base || !host_ptr)
		return PCCX_ERR_INVALID;
	for (i = 0; i < s->n_win; i++)
		if (base < s->win[i].base + s->win[i].len && s->win[i].base < base + len)
			return PCCX_ERR_INVALID;
	if (s->n_win == s->cap_win) {
		size_t cap = s->cap_win ? 2 * s->cap_win : 16;
		struct sim_window *w = realloc(s->win, cap * sizeof(*w));

		if (!w)
			return PCCX_ERR_NOMEM;
		s->win = w;
		s->cap_win = cap;
	}
	s->win[s->n_win].base = base;
	s->win[s->n_win].len = len;
	s->win[s->n_win].host = host_ptr;
	s->win[s->n_win].access = access;
	s->n_win++;
	return 0;
}

int pccx__sim_dma_window_remove(pccx_sim *s, uint64_t base)
{
	size_t i;

	pccx__sim_sync(s);
	pccx__sim_wq_settle(s, NULL, 0); /* stream beats read from this memory are copied in */
	for (i = 0; i < s->n_win; i++)
		if (s->win[i].base == base) {
			s->win[i] = s->win[--s->n_win];
			return 0;
		}
	return PCCX_ERR_NOT_FOUND;
}

/* ---- lifetime -------------------------------------------------------------------------- */

int pccx__sim_create(const struct pccx_sim_config *cfg, pccx_sim **out, pccx_diag *d)
{
	struct pccx_sim_config def;
	struct pccx_sim *s;
	unsigned p;
	int rc;

	*out = NULL;
	if (!cfg) {
		pccx__sim_config_default(&def);
		cfg = &def;
	}
	rc = pccx__sim_config_check(cfg, d);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return pccx__fail(d, PCCX_ERR_NOMEM, "simulator: out of memory");
	s->cfg = *cfg;
	s->q4 = pccx__kern_q4_of(pccx__kern_resolve(PCCX_KERN_AUTO));
	s->core_ps = (1000000000000ull + cfg->core_hz / 2) / cfg->core_hz;
	s->axi_ps = (1000000000000ull + cfg->axi_hz / 2) / cfg->axi_hz;
	s->l2 = calloc(cfg->l2_words, SIM_BEAT);
	rc = s->l2 ? 0 : PCCX_ERR_NOMEM;
	for (p = 0; !rc && p < PCCX_WSTREAM_PORTS; p++)
		rc = pccx__sim_beatq_init(&s->wq[p], cfg->wstream_fifo_depth,
					  cfg->wstream_fifo_depth + SIM_WQ_SLACK, SIM_WQ_SPANS);
	if (!rc)
		rc = pccx__sim_beatq_init(&s->fmapq, cfg->fmap_fifo_depth, cfg->fmap_fifo_depth,
					  0);
	if (!rc)
		rc = pccx__sim_beatq_init(&s->resq, cfg->result_fifo_depth,
					  cfg->result_fifo_depth, 0);
	if (!rc)
		rc = pccx__sim_ddr_init(s);
	if (rc) {
		pccx__sim_destroy(s);
		return pccx__fail(d, PCCX_ERR_NOMEM, "simulator: out of memory");
	}
	pccx__sim_dm_init(s);
	pccx__shape_reset(&s->shape);
	*out = s;
	return 0;
}

void pccx__sim_destroy(pccx_sim *s)
{
	unsigned p;

	if (!s)
		return;
	pccx__sim_trace_free(s);
	pccx__sim_matmul_abort(s, &s->gemv);
	pccx__sim_matmul_abort(s, &s->gemm);
	pccx__sim_rowq_stop(s);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		pccx__sim_beatq_free(&s->wq[p]);
	pccx__sim_beatq_free(&s->fmapq);
	pccx__sim_beatq_free(&s->resq);
	free(s->ddr.open_row);
	free(s->win);
	free(s->times);
	free(s->l2);
	free(s);
}

const struct pccx_sim_config *pccx__sim_get_config(const pccx_sim *s)
{
	return &s->cfg;
}

void pccx__sim_set_every_edge(pccx_sim *s, bool every_edge)
{
	pccx__sim_sync(s);
	s->every_edge = every_edge;
}

uint8_t *pccx__sim_l2(pccx_sim *s)
{
	return s->l2;
}

uint32_t pccx__sim_s_bits(const pccx_sim *s)
{
	return s->s_bits;
}
