// SPDX-License-Identifier: MIT
/*
 * The clocks and the DDR model.
 *
 * Two clocks: the core (400 MHz) drives the front end and the engines, the AXI clock
 * (250 MHz) drives the DataMovers, the stream ports and the AXI-Lite interface. Time is kept
 * in picoseconds and the device steps edge by edge; when nothing inside the device can change
 * without an MMIO access (instruction FIFO empty or halted, every unit and DataMover idle),
 * time jumps straight to the target.
 *
 * DDR: one shared data bus at the peak rate (pccx,ddr-bandwidth-mbps). Each DataMover burst
 * occupies it for bytes/peak plus a per-burst command overhead, plus a row-miss penalty when
 * its bank holds another row, plus a turnaround when the direction changes; every tREFI the
 * bus is blocked for tRFC and all rows close. Banks are XOR-hashed with the row.
 * Constants and sources: docs/sim.md.
 */
#include <stdlib.h>

#include "sim_int.h"

/* An idle bus, no open row, the next refresh one interval away. */
static void sim_ddr_reset(struct pccx_sim *s)
{
	struct sim_ddr *d = &s->ddr;
	uint32_t i;

	d->free_ps = s->now_ps;
	d->next_refresh_ps = s->now_ps + s->cfg.ddr_refi_ps;
	d->last_dir = 0;
	d->rem = 0;
	for (i = 0; i < s->cfg.ddr_banks; i++)
		d->open_row[i] = ~0ull;
}

int pccx__sim_ddr_init(struct pccx_sim *s)
{
	struct sim_ddr *d = &s->ddr;
	uint32_t b;

	d->open_row = calloc(s->cfg.ddr_banks, sizeof(*d->open_row));
	if (!d->open_row)
		return PCCX_ERR_NOMEM;
	for (b = 0; b < 32 && (1u << b) < s->cfg.ddr_row_bytes; b++)
		;
	d->bank_shift = b;
	d->bank_mask = s->cfg.ddr_banks - 1;
	for (b = 0; b < 32 && (1u << b) < s->cfg.ddr_banks; b++)
		;
	d->row_shift = d->bank_shift + b;
	d->burst_q = (uint64_t)s->cfg.ddr_burst_bytes * 1000000u / s->cfg.ddr_mbps;
	d->burst_r = (uint64_t)s->cfg.ddr_burst_bytes * 1000000u % s->cfg.ddr_mbps;
	sim_ddr_reset(s);
	return 0;
}

void pccx__sim_ddr_add_tally(struct pccx_sim *s, const struct sim_ddr_tally *t)
{
	s->st.ddr_bursts += t->bursts;
	s->st.ddr_row_misses += t->row_misses;
	s->st.ddr_turnarounds += t->turnarounds;
	s->st.ddr_refreshes += t->refreshes;
	s->st.ddr_read_bytes += t->read_bytes;
	s->st.ddr_write_bytes += t->write_bytes;
	s->ddr_busy_ps += t->busy_ps;
}

/* One burst on the DDR model (sim_ddr_book()), counted in the statistics at once. */
uint64_t pccx__sim_ddr_access(struct pccx_sim *s, uint64_t now_ps, uint64_t addr, uint32_t bytes,
			      int write)
{
	struct sim_ddr_tally t = { 0 };
	uint64_t end = sim_ddr_book(&s->ddr, &s->cfg, &t, now_ps, addr, bytes, write);

	pccx__sim_ddr_add_tally(s, &t);
	return end;
}

/* Nothing inside the device can change before the next MMIO access (a reset in progress
 * only has to run out: the edges it skips do nothing). */
static bool quiescent(const struct pccx_sim *s)
{
	if (s->fifo_level && !s->halted && s->core_cycle >= s->reset_until)
		return false;
	if (s->host_backlog && !s->halted)
		return false;     /* the MMIO-bound count runs */
	if (s->overrun_since || (!s->halted && pccx__sim_input_pending(s)))
		return false;     /* consumed, or counted towards STREAM_OVERRUN */
	return pccx__sim_engines_idle(s) && !pccx__sim_dm_busy(s);
}

static void core_tick(struct pccx_sim *s)
{
	if (s->core_cycle < s->reset_until)
		return;
	pccx__sim_frontend_tick(s);
	pccx__sim_matmul_core_tick(s, &s->gemv);
	pccx__sim_matmul_core_tick(s, &s->gemm);
	pccx__sim_timed_core_tick(s);
	pccx__sim_dma_core_tick(s);
	if (s->gemv.busy)
		s->busy_ps[PCCX_SIM_U_GEMV] += s->core_ps;
	if (s->gemm.busy)
		s->busy_ps[PCCX_SIM_U_GEMM] += s->core_ps;
	if (s->dma_in.busy)
		s->busy_ps[PCCX_SIM_U_DMA_IN] += s->core_ps;
	if (s->dma_out.busy)
		s->busy_ps[PCCX_SIM_U_DMA_OUT] += s->core_ps;
	if (s->l2copy.busy)
		s->busy_ps[PCCX_SIM_U_L2COPY] += s->core_ps;
	if (s->sfu.busy)
		s->busy_ps[PCCX_SIM_U_SFU] += s->core_ps;
	pccx__sim_device_core_tick(s);
}

static void axi_tick(struct pccx_sim *s)
{
	if (s->core_cycle < s->reset_until)
		return;
	pccx__sim_matmul_axi_tick(s, &s->gemv);
	pccx__sim_matmul_axi_tick(s, &s->gemm);
	pccx__sim_dm_axi_tick(s);
}

static void run(struct pccx_sim *s, uint64_t t, bool may_defer)
{
	for (;;) {
		uint64_t tc = (s->core_cycle + 1) * s->core_ps;
		uint64_t ta = (s->axi_cycle + 1) * s->axi_ps;
		uint64_t e = tc < ta ? tc : ta;
		int b;

		if (e > t)
			break;
		if (quiescent(s)) {
			s->core_cycle = t / s->core_ps;
			s->axi_cycle = t / s->axi_ps;
			break;
		}
		b = pccx__sim_bulk(s, t, may_defer);
		if (b == SIM_BULK_DEFERRED)
			return;
		if (b == SIM_BULK_DONE)
			continue;
		s->now_ps = e;
		if (ta == e) {
			s->axi_cycle++;
			axi_tick(s);
		}
		if (tc == e) {
			s->core_cycle++;
			core_tick(s);
		}
	}
	s->now_ps = t;
}

void pccx__sim_run_to(struct pccx_sim *s, uint64_t t)
{
	if (t <= s->now_ps)
		return;
	if (s->defer_h) {
		if (t < s->defer_h) {
			s->now_ps = t;     /* still no event: the edges stay deferred */
			return;
		}
		pccx__sim_sync(s);
	}
	run(s, t, true);
}

void pccx__sim_sync(struct pccx_sim *s)
{
	uint64_t t = s->now_ps;

	if (!s->defer_h)
		return;
	s->now_ps = s->defer_ps;
	s->defer_h = 0;
	run(s, t, false);
}
