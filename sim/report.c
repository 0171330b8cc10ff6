// SPDX-License-Identifier: MIT
/* Statistics, per-instruction times, stage breakdown and the printed report. */
#include <string.h>

#include "sim_int.h"

const char *pccx__sim_unit_name(int unit)
{
	static const char *const names[PCCX_SIM_U_COUNT] = { "gemv", "gemm", "dma_in", "dma_out",
							     "l2copy", "shape", "sfu" };

	return unit >= 0 && unit < PCCX_SIM_U_COUNT ? names[unit] : "?";
}

/* The counters include the deferred edges: they are run first. The device's state reads the
 * same before and after (no event comes in them), so this is a const operation to callers. */
static void sync_const(const pccx_sim *s)
{
	pccx__sim_sync((pccx_sim *)(uintptr_t)s);
}

void pccx__sim_get_stats(const pccx_sim *s, struct pccx_sim_stats *st)
{
	unsigned i;

	sync_const(s);
	*st = s->st;
	st->cycles = (s->now_ps - s->st_base_ps) / s->core_ps;
	for (i = 0; i < PCCX_SIM_U_COUNT; i++)
		st->unit_busy[i] = s->busy_ps[i] / s->core_ps;
	for (i = 0; i < PCCX_DM_CHANNELS; i++) {
		st->dm_busy[i] = s->dm_busy_ps[i] / s->core_ps;
		st->dm_stall_full[i] = s->dm_full_ps[i] / s->core_ps;
	}
	st->stall_weights = s->stall_weights_ps / s->core_ps;
	st->ddr_busy = s->ddr_busy_ps / s->core_ps;
	st->mmio_cycles = s->mmio_ps / s->core_ps;
	st->mmio_fifo_full = s->mmio_full_ps / s->core_ps;
}

void pccx__sim_stats_reset(pccx_sim *s)
{
	pccx__sim_sync(s);
	memset(&s->st, 0, sizeof(s->st));
	memset(s->busy_ps, 0, sizeof(s->busy_ps));
	memset(s->dm_busy_ps, 0, sizeof(s->dm_busy_ps));
	memset(s->dm_full_ps, 0, sizeof(s->dm_full_ps));
	s->ddr_busy_ps = s->mmio_ps = s->mmio_full_ps = s->stall_weights_ps = 0;
	s->st_base_ps = s->now_ps;
}

const struct pccx_sim_insn_time *pccx__sim_insn_time(const pccx_sim *s, uint32_t index)
{
	return index < s->n_times ? &s->times[index] : NULL;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static double mbps(const pccx_sim *s, uint64_t bytes, uint64_t cycles)
{
	/* bytes / (cycles / core_hz) in MB/s */
	return cycles ? (double)bytes * (double)s->cfg.core_hz / (double)cycles / 1e6 : 0.0;
}

static void report_stages(const pccx_sim *s, FILE *f, const struct pccx_sim_stage *stages,
			  size_t n)
{
	uint64_t prev_end = 0;
	uint32_t first = 0;
	size_t i;

	fprintf(f, "stages (instruction ranges; 'own' = cycles from the previous stage's end):\n");
	fprintf(f, "  %-28s %9s %12s %12s %12s %12s\n", "stage", "insns", "start", "end", "span",
		"own");
	if (s->n_times)
		prev_end = s->times[0].issue;
	for (i = 0; i < n; i++) {
		uint32_t last = stages[i].insn, j;
		uint64_t start = ~0ull, end = 0;

		if (last >= s->n_times)
			last = s->n_times ? s->n_times - 1 : 0;
		for (j = first; j <= last && j < s->n_times; j++) {
			if (s->times[j].issue < start)
				start = s->times[j].issue;
			if (s->times[j].done > end)
				end = s->times[j].done;
		}
		if (start == ~0ull)
			start = end = prev_end;
		fprintf(f, "  %-28.28s %9u %12llu %12llu %12llu %12llu\n",
			stages[i].name ? stages[i].name : "?", last >= first ? last - first + 1 : 0,
			(unsigned long long)start, (unsigned long long)end,
			(unsigned long long)(end - start),
			(unsigned long long)(end > prev_end ? end - prev_end : 0));
		if (end > prev_end)
			prev_end = end;
		first = stages[i].insn + 1;
	}
}

void pccx__sim_report(const pccx_sim *s, FILE *f, const struct pccx_sim_stage *stages,
		      size_t n_stages)
{
	static const char *const ch_name[PCCX_SIM_DM_CHANNELS] = { "hp0", "hp1", "hp2", "hp3",
								    "fmap", "result" };
	struct pccx_sim_stats st;
	uint64_t wbytes = 0;
	unsigned i;

	pccx__sim_get_stats(s, &st);
	fprintf(f, "pccx sim: %llu core cycles (%.3f us at %.0f MHz core, %.0f MHz AXI), "
		   "%llu instructions issued, %llu retired, %llu errors\n",
		(unsigned long long)st.cycles, (double)st.cycles * 1e6 / (double)s->cfg.core_hz,
		(double)s->cfg.core_hz / 1e6, (double)s->cfg.axi_hz / 1e6,
		(unsigned long long)st.issued, (unsigned long long)st.retired,
		(unsigned long long)st.errors);
	fprintf(f, "units:\n  %-8s %14s %8s %10s\n", "unit", "busy cycles", "busy %", "insns");
	for (i = 0; i < PCCX_SIM_U_COUNT; i++)
		fprintf(f, "  %-8s %14llu %7.2f%% %10llu\n", pccx__sim_unit_name((int)i),
			(unsigned long long)st.unit_busy[i], pct(st.unit_busy[i], st.cycles),
			(unsigned long long)st.unit_insns[i]);
	fprintf(f, "ports (DataMover channels):\n  %-8s %14s %6s %8s %11s %12s\n", "port", "bytes",
		"cmds", "busy %", "MB/s", "FIFO full");
	for (i = 0; i < PCCX_SIM_DM_CHANNELS; i++) {
		fprintf(f, "  %-8s %14llu %6llu %7.2f%% %11.1f %12llu\n", ch_name[i],
			(unsigned long long)st.dm_bytes[i], (unsigned long long)st.dm_cmds[i],
			pct(st.dm_busy[i], st.cycles), mbps(s, st.dm_bytes[i], st.cycles),
			(unsigned long long)st.dm_stall_full[i]);
		if (i < PCCX_WSTREAM_PORTS)
			wbytes += st.dm_bytes[i];
	}
	fprintf(f, "DDR: read %llu B, written %llu B; %.1f MB/s = %.2f%% of the %llu MB/s peak; "
		   "bus occupied %.2f%%; %llu bursts, %llu row misses, %llu turnarounds, "
		   "%llu refreshes\n",
		(unsigned long long)st.ddr_read_bytes, (unsigned long long)st.ddr_write_bytes,
		mbps(s, st.ddr_read_bytes + st.ddr_write_bytes, st.cycles),
		pct((uint64_t)mbps(s, st.ddr_read_bytes + st.ddr_write_bytes, st.cycles),
		    s->cfg.ddr_mbps),
		(unsigned long long)s->cfg.ddr_mbps, pct(st.ddr_busy, st.cycles),
		(unsigned long long)st.ddr_bursts, (unsigned long long)st.ddr_row_misses,
		(unsigned long long)st.ddr_turnarounds, (unsigned long long)st.ddr_refreshes);
	fprintf(f, "weights: %llu B streamed, %.1f MB/s\n", (unsigned long long)wbytes,
		mbps(s, wbytes, st.cycles));
	fprintf(f, "stalls (core cycles): weights %llu, interlock %llu, engine busy %llu, "
		   "fence %llu, FIFO empty while busy %llu, MMIO-bound %llu, fmap wait %llu, "
		   "result full %llu, host INSTR FIFO full %llu\n",
		(unsigned long long)st.stall_weights, (unsigned long long)st.stall_interlock,
		(unsigned long long)st.stall_engine, (unsigned long long)st.stall_fence,
		(unsigned long long)st.stall_fifo_empty, (unsigned long long)st.stall_mmio,
		(unsigned long long)st.stall_fmap,
		(unsigned long long)st.stall_result, (unsigned long long)st.mmio_fifo_full);
	fprintf(f, "host MMIO: %llu reads, %llu writes, %llu cycles (%.2f%%), %llu dropped; "
		   "DMA window faults %llu\n",
		(unsigned long long)st.mmio_reads, (unsigned long long)st.mmio_writes,
		(unsigned long long)st.mmio_cycles, pct(st.mmio_cycles, st.cycles),
		(unsigned long long)st.mmio_dropped, (unsigned long long)st.window_faults);
	if (n_stages)
		report_stages(s, f, stages, n_stages);
}
