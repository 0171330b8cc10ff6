/* SPDX-License-Identifier: MIT */
/*
 * The pccx v002 device at its register interface: a cycle simulator.
 *
 * What a driver sees (docs/registers.md): the 64-bit AXI-Lite control page and the six
 * 32-bit DataMover pages, reached with pccx_sim_mmio_*(). Behind them: the instruction FIFO
 * and front end with its interlocks, L2, the shape RAMs, the register S, the four weight-stream
 * FIFOs, the GEMV lanes, the GEMM array, the SFU, the MEMCPY engines and a DDR model. Host
 * memory is reached only through DataMover commands whose device addresses fall inside the
 * windows registered with pccx__sim_dma_window_add() (the "shadow IOMMU"); anything else is a
 * DMA_WINDOW error, counted in the statistics.
 *
 * Time only moves when the caller lets it: every MMIO access costs AXI-Lite cycles and the
 * device runs during them; pccx__sim_advance() runs it for a given number of core cycles. The
 * model, its constants and its reports are described in docs/sim.md.
 */
#ifndef PCCX_SIM_H
#define PCCX_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pccx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pccx_sim pccx_sim;

/* Hardware parameters (device tree, docs/registers.md) and model constants (docs/sim.md). */
struct pccx_sim_config {
	/* pccx,* device-tree properties */
	uint64_t core_hz;             /* pccx,core-clock-hz (400 MHz) */
	uint64_t axi_hz;              /* pccx,axi-clock-hz (250 MHz) */
	uint32_t l2_words;            /* pccx,l2-words (114,688) */
	uint32_t instr_fifo_depth;    /* pccx,instr-fifo-depth (8; 1..15) */
	uint32_t wstream_fifo_depth;  /* pccx,wstream-fifo-depth in 16-byte beats (4096) */
	uint32_t weight_ports;        /* pccx,weight-ports (4; the ISA deals rows over 4) */
	uint32_t dm_fifo_depth;       /* pccx,dm-fifo-depth (8) */
	uint32_t dma_address_bits;    /* pccx,dma-address-bits (32; up to 48) */
	uint64_t ddr_mbps;            /* pccx,ddr-bandwidth-mbps: DDR peak in MB/s (19,200) */
	uint32_t rowmask;             /* pccx,rowmask: FEATURES.ROWMASK, GEMV rowmask (1; 0 or 1) */
	uint32_t smul;                /* pccx,smul: FEATURES.SMUL, the CVO smul (1; 0 or 1) */
	uint32_t colskip;             /* pccx,colskip: FEATURES.COLSKIP, GEMV on q4c (1; 0 or 1) */
	uint32_t racc;                /* pccx,racc: FEATURES.RACC, SUM/SUMSQ from S (1; 0 or 1) */
	uint32_t sfu_lanes;           /* pccx,sfu-lanes: elements per cycle of the SFU's
				       * element-wise forms (1, as v002; 1, 2 or 4) */
	uint64_t reg_base;            /* first cell pair of reg (0xA000_0000) */

	/* Model constants (docs/sim.md gives each one's source). */
	uint32_t mmio_write_axi;      /* AXI cycles a posted MMIO write costs the host */
	uint32_t mmio_read_axi;       /* AXI cycles of an MMIO read round trip */
	uint32_t ddr_burst_bytes;     /* DataMover burst (16 beats) */
	uint32_t ddr_burst_ps;        /* command overhead per burst on the DDR data bus */
	uint32_t ddr_row_miss_ps;     /* exposed cost of a row miss (precharge + activate) */
	uint32_t ddr_turnaround_ps;   /* read <-> write bus turnaround */
	uint32_t ddr_refresh_ps;      /* tRFC */
	uint32_t ddr_refi_ps;         /* tREFI */
	uint32_t ddr_read_latency_ps; /* from the end of a burst on the bus to data at the port */
	uint32_t ddr_write_resp_ps;   /* from the end of a write burst to its response */
	uint32_t ddr_banks;           /* power of two */
	uint32_t ddr_row_bytes;       /* bytes of one row across the bus (power of two) */
	uint32_t dm_outstanding;      /* read bursts a DataMover channel keeps in flight */
	uint32_t fmap_fifo_depth;     /* beats between the fmap DataMover and the MEMCPY engine */
	uint32_t result_fifo_depth;   /* beats between the MEMCPY engine and the result DataMover */
	uint32_t l2_latency;          /* core cycles of an L2 read */
	uint32_t gemv_tail;           /* core cycles from the last weight beat to the last write */
	uint32_t gemm_tail;           /* systolic drain + normalise + store */
	uint32_t gemm_q4_macs;        /* INT4 MACs per core cycle of the array (dual packing) */
	uint32_t gemm_f32_macs;       /* FP32 MACs per core cycle of the array */
	uint32_t quant_latency;       /* activation quantiser pipeline (q4 only) */
	uint32_t overrun_grace;       /* core cycles idle with unconsumed stream bytes -> error */
	uint64_t mmio_stall_limit;    /* core cycles an INSTR write may stall, then dropped */
};

void pccx__sim_config_default(struct pccx_sim_config *cfg);
/*
 * Read the pccx,npu-v002 node of a flattened device tree (libfdt). Properties that are absent
 * keep their defaults. Returns PCCX_ERR_FORMAT (bad blob, no node, malformed property) or
 * PCCX_ERR_RANGE (a value the model does not support), with a diag naming the property.
 */
PCCX_MUST_CHECK int pccx__sim_config_from_dtb(struct pccx_sim_config *cfg, const void *blob,
					      size_t len, pccx_diag *d);
/* The same from a .dtb file. */
PCCX_MUST_CHECK int pccx__sim_config_from_dtb_file(struct pccx_sim_config *cfg, const char *path,
						   pccx_diag *d);
/* Check a configuration (called by create). */
PCCX_MUST_CHECK int pccx__sim_config_check(const struct pccx_sim_config *cfg, pccx_diag *d);

PCCX_MUST_CHECK int pccx__sim_create(const struct pccx_sim_config *cfg, pccx_sim **out,
				     pccx_diag *d);
void pccx__sim_destroy(pccx_sim *sim);
const struct pccx_sim_config *pccx__sim_get_config(const pccx_sim *sim);
/* What the FEATURES register reads, without a register access (no simulated time). */
uint64_t pccx__sim_features(const pccx_sim *sim);

/*
 * MMIO at an offset from the device base (0 .. PCCX_MMIO_SIZE). The control page has 64-bit
 * registers (a 32-bit access reads or writes one half; a 32-bit write to INSTR pushes the value
 * zero-extended, as the RTL ignores the strobes), the DataMover pages 32-bit ones (a 64-bit
 * access is two 32-bit ones). Every access costs the host AXI-Lite cycles during which the
 * device runs. Returns 0, or PCCX_ERR_RANGE for an offset outside the aperture or misaligned
 * (the access is then not performed, like a bus error).
 */
PCCX_MUST_CHECK int pccx__sim_mmio_read64(pccx_sim *sim, uint32_t off, uint64_t *v);
PCCX_MUST_CHECK int pccx__sim_mmio_write64(pccx_sim *sim, uint32_t off, uint64_t v);
PCCX_MUST_CHECK int pccx__sim_mmio_read32(pccx_sim *sim, uint32_t off, uint32_t *v);
PCCX_MUST_CHECK int pccx__sim_mmio_write32(pccx_sim *sim, uint32_t off, uint32_t v);

/* Run the device for `cycles` core cycles. */
void pccx__sim_advance(pccx_sim *sim, uint64_t cycles);
/* Run until STATUS.IDLE or HALTED, at most max_cycles; returns true when reached. */
bool pccx__sim_run_until_idle(pccx_sim *sim, uint64_t max_cycles);
/* Core cycles since creation (the CYCLES register). */
uint64_t pccx__sim_cycles(const pccx_sim *sim);
/* The interrupt line: IRQ_STATUS & IRQ_ENABLE != 0. */
bool pccx__sim_irq(const pccx_sim *sim);
/*
 * The host tells the model whether it still has instruction words to push (the backend sets
 * it around each engine step); cycles with an empty FIFO and a backlog count as MMIO-bound.
 */
void pccx__sim_set_host_backlog(pccx_sim *sim, bool pending);

/* ---- the shadow IOMMU --------------------------------------------------------------- */

#define PCCX_SIM_WIN_READ  0x1u   /* the device may read (MM2S channels) */
#define PCCX_SIM_WIN_WRITE 0x2u   /* the device may write (S2MM channel) */

/*
 * Open [base, base+len) of device address space onto host memory at host_ptr. Windows may not
 * overlap; len > 0. Returns 0, PCCX_ERR_INVALID (overlap, empty, wraps) or PCCX_ERR_NOMEM.
 */
PCCX_MUST_CHECK int pccx__sim_dma_window_add(pccx_sim *sim, uint64_t base, uint64_t len,
					     void *host_ptr, uint32_t access);
/* Close the window starting at base; PCCX_ERR_NOT_FOUND if there is none. */
PCCX_MUST_CHECK int pccx__sim_dma_window_remove(pccx_sim *sim, uint64_t base);

/* ---- statistics, stage markers, reports, trace --------------------------------------- */

enum pccx_sim_unit {
	PCCX_SIM_U_GEMV, PCCX_SIM_U_GEMM, PCCX_SIM_U_DMA_IN, PCCX_SIM_U_DMA_OUT,
	PCCX_SIM_U_L2COPY, PCCX_SIM_U_SHAPE, PCCX_SIM_U_SFU, PCCX_SIM_U_COUNT
};

#define PCCX_SIM_DM_CHANNELS 6

/* All times in core cycles. Counters cover the time since creation or pccx__sim_stats_reset. */
struct pccx_sim_stats {
	uint64_t cycles;                         /* core cycles of the measured interval */
	uint64_t issued, retired;
	uint64_t unit_busy[PCCX_SIM_U_COUNT];    /* cycles with an instruction in the unit */
	uint64_t unit_insns[PCCX_SIM_U_COUNT];
	/* front end: why the head of the instruction FIFO did not issue (cycles) */
	uint64_t stall_interlock;                /* RAW/WAR/WAW hazard on L2, S or a shape entry */
	uint64_t stall_engine;                   /* its engine was still busy */
	uint64_t stall_fence;                    /* behind a sync (async = 0) instruction */
	uint64_t stall_fifo_empty;               /* FIFO empty while a unit or DataMover works */
	uint64_t stall_mmio;                     /* FIFO empty, the host still had words: MMIO-bound */
	/* engines */
	uint64_t stall_weights;                  /* a GEMV/GEMM lane waited for weight beats */
	uint64_t stall_fmap;                     /* MEMCPY from the host waited for data */
	uint64_t stall_result;                   /* MEMCPY to the host waited for FIFO room */
	/* DataMovers */
	uint64_t dm_bytes[PCCX_SIM_DM_CHANNELS];
	uint64_t dm_cmds[PCCX_SIM_DM_CHANNELS];
	uint64_t dm_busy[PCCX_SIM_DM_CHANNELS];  /* cycles with a command in progress */
	uint64_t dm_stall_full[PCCX_SIM_DM_CHANNELS]; /* destination FIFO full (cycles) */
	uint64_t dm_errors;
	/* DDR */
	uint64_t ddr_read_bytes, ddr_write_bytes;
	uint64_t ddr_busy;                       /* cycles the data bus was occupied */
	uint64_t ddr_row_misses, ddr_turnarounds, ddr_refreshes, ddr_bursts;
	/* host side */
	uint64_t mmio_reads, mmio_writes;
	uint64_t mmio_cycles;                    /* host time spent in MMIO */
	uint64_t mmio_fifo_full;                 /* cycles an INSTR write stalled on a full FIFO */
	uint64_t mmio_dropped;                   /* dropped writes (halted, reset, stall limit) */
	uint64_t window_faults;                  /* DataMover addresses outside every window */
	uint64_t errors;                         /* ERROR register settings */
};

void pccx__sim_get_stats(const pccx_sim *sim, struct pccx_sim_stats *st);
void pccx__sim_stats_reset(pccx_sim *sim);

/* Times of one instruction of the current job (index counted from the last RETIRED reset). */
struct pccx_sim_insn_time {
	uint64_t issue, done;                    /* core cycles; done = 0 if not completed */
	uint8_t unit;                            /* enum pccx_sim_unit */
};
/* NULL when index is beyond what the current job issued. */
const struct pccx_sim_insn_time *pccx__sim_insn_time(const pccx_sim *sim, uint32_t index);

/* Stage marker: the stage `name` ends with instruction `insn` (the job builder's convention). */
struct pccx_sim_stage {
	uint32_t insn;
	const char *name;
};

/*
 * Print the report: totals, per-unit busy %, bytes and achieved bandwidth per port, DDR
 * efficiency, stalls by cause, and, when stages are given (sorted by insn), one line per stage
 * with its cycles. Counters are those since the last pccx__sim_stats_reset.
 */
void pccx__sim_report(const pccx_sim *sim, FILE *f, const struct pccx_sim_stage *stages,
		      size_t n_stages);

/* Stage markers read from a file, for the report. */
struct pccx_sim_stages {
	struct pccx_sim_stage *v;
	size_t n;
	char *text;		/* the names point into it */
};

/*
 * Read stage markers from `path`: one "INDEX NAME" per line, INDEX increasing (the stage NAME
 * ends with instruction INDEX); blank lines and lines starting with '#' are skipped.
 * PCCX_ERR_FORMAT names the line of a malformed one. Free with pccx__sim_stages_free.
 */
PCCX_MUST_CHECK int pccx__sim_stages_read(const char *path, struct pccx_sim_stages *s,
					  pccx_diag *d);
void pccx__sim_stages_free(struct pccx_sim_stages *s);

/*
 * Write a Chrome/Perfetto trace ("traceEvents" JSON) to `path` from now on: one track per
 * engine, per DataMover channel, the front end and the host's MMIO. Closed (and the JSON
 * completed) by pccx__sim_trace_close or destroy. Returns PCCX_ERR_IO when it cannot open.
 */
PCCX_MUST_CHECK int pccx__sim_trace_open(pccx_sim *sim, const char *path, pccx_diag *d);
PCCX_MUST_CHECK int pccx__sim_trace_close(pccx_sim *sim, pccx_diag *d);

/* ---- test access (not part of the device interface) ---------------------------------- */

/*
 * Observe each instruction of the current job as it completes (index counted from the last
 * RETIRED reset), when its results are in L2 and before any later instruction that conflicts
 * with its ranges has started. Used by verification to compare stage tensors. NULL: none.
 */
typedef void (*pccx_sim_retire_fn)(void *user, uint32_t index);
void pccx__sim_on_retire(pccx_sim *sim, pccx_sim_retire_fn fn, void *user);

/*
 * Fault injection: when the instruction of job index `index` (counted from the last RETIRED
 * reset) reaches the issue stage, the device raises ERROR with `cause` (a PCCX_CAUSE_*) and
 * that word in ERROR_INFO, as if the unit had failed, and halts. One shot; it stays armed
 * across resets until an instruction with that index issues.
 * For tests of every path a device fault takes through a driver and a library.
 */
void pccx__sim_inject_error(pccx_sim *sim, uint32_t index, uint32_t cause);

/*
 * Silent corruption, for tests of what checks results: the first GEMV of job index `index` or
 * later to retire has the lowest bit of its first output element flipped in L2 as it retires,
 * with no error raised. One shot, armed across resets like pccx__sim_inject_error.
 */
void pccx__sim_inject_flip(pccx_sim *sim, uint32_t index);

/*
 * Run every clock edge through the edge-by-edge model instead of advancing through the edges
 * between events at once (docs/sim.md, "Host cost"). Both give the same cycles, statistics,
 * trace and bits; tests compare them.
 */
void pccx__sim_set_every_edge(pccx_sim *sim, bool every_edge);
/* Compute the q4 row batches on a second thread or on the caller's (default: a second thread
 * when the load average leaves a CPU spare for it). Both give the same bits; tests compare
 * them. */
void pccx__sim_set_row_thread(pccx_sim *sim, bool on);

/* Raw L2 (l2_words x 16 bytes) and the S register (FP32 bits). */
uint8_t *pccx__sim_l2(pccx_sim *sim);
uint32_t pccx__sim_s_bits(const pccx_sim *sim);

#ifdef __cplusplus
}
#endif
#endif /* PCCX_SIM_H */
