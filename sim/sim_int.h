/* SPDX-License-Identifier: MIT */
/*
 * Internals of the simulator, shared by its units (one file each). Time is kept in
 * picoseconds so the core clock and the AXI clock both land on exact edges; every report
 * converts to core cycles.
 */
#ifndef PCCX_SIM_INT_H
#define PCCX_SIM_INT_H

#include "kernels.h"
#include "pccx_sim.h"
#include "pccx_job.h"
#include "pccx_regs.h"

#define SIM_MAX_FIFO      15u      /* STATUS.FIFO_LEVEL is 4 bits */
#define SIM_MAX_INFLIGHT  16u
#define SIM_MAX_BURSTS    16u
#define SIM_BEAT          16u

/* Frontend issue-blocking causes, for the statistics. */
enum sim_block { SB_NONE, SB_INTERLOCK, SB_ENGINE, SB_FENCE };

struct sim_window {
	uint64_t base, len;
	uint8_t *host;
	uint32_t access;
};

/* Beats of a weight FIFO that came from host memory and are read there when taken. */
struct sim_span {
	uint64_t first;                /* beat number (counted from the FIFO's reset) */
	const uint8_t *host;
	uint32_t n;
};

/*
 * A FIFO of 16-byte beats with room reserved for data already requested. Its storage holds
 * `cap` >= depth beats, so a beat taken stays in place until cap - depth more have been
 * taken (a row record a lane is still receiving).
 *
 * The weight FIFOs (span_cap > 0) hold where their beats came from instead of copies: beats
 * [taken, pushed) are either in the storage or in one of the spans, whose bytes are read from
 * host memory when a lane takes them. pccx__sim_wq_settle() copies every span into the
 * storage before the device writes host memory they may read or a window closes, so what a
 * stream delivered never changes (wstream.c).
 */
/* Host memory that may still be read for a weight FIFO's beats: [lo, hi) as addresses. */
struct sim_ref {
	uintptr_t lo, hi;
};

#define SIM_WQ_REFS 8u

struct sim_beatq {
	uint8_t *data;
	uint32_t depth, cap, head, level, reserved;
	uint64_t pushed, taken;        /* beats ever pushed / taken */
	struct sim_span *span;         /* ring of span_n spans from span_head */
	uint32_t span_cap, span_head, span_n;
	/* every range of host memory its spans, the rows computed from them and the rows
	 * computed ahead of it (eng_gemv.c) may read, since the last full settle: a few
	 * ranges, the closest merged when there would be more */
	struct sim_ref ref[SIM_WQ_REFS];
	uint32_t n_ref;
};

/* Beats a weight FIFO's storage holds beyond its depth: a row record in reception
 * (SIM_ROW_BEATS at most; larger rows are copied out beat by beat) plus one bulk window. */
#define SIM_ROW_BEATS     4096u
#define SIM_BULK_AXI      4096u
#define SIM_WQ_SLACK      (SIM_ROW_BEATS + SIM_BULK_AXI)
#define SIM_WQ_SPANS      1024u    /* beyond that, beats are copied in as they arrive */

struct sim_burst {
	uint64_t ready_ps;             /* data at the port (reads) / response (writes) */
	uint64_t addr;
	const uint8_t *host;           /* reads: where its bytes lie in host memory */
	uint32_t beats, done;
};

struct sim_dm_cmd {
	uint64_t addr;
	uint32_t btt;
	uint8_t tag;
	bool type_incr;
	bool window;                   /* PCCX_DM_EXT_WINDOW: a rowmask GEMV's range (rowmask.c) */
};

struct sim_dm {
	/* hot: the command in progress */
	bool active;
	bool write;                    /* S2MM (result) */
	unsigned ch;
	uint32_t b_head, b_level;
	uint32_t wr_fill;              /* S2MM: beats collected for the next write burst */
	uint8_t *host;                 /* host memory of cur.addr */
	uint64_t issued, delivered;    /* bytes requested from / delivered to DDR */
	struct sim_beatq *q;           /* destination (MM2S) or source (S2MM) FIFO */
	struct sim_dm_cmd cur;
	/* a window being read as the reads of its records (window.c): cur is the read whose
	 * bursts are being issued; the next read's follow as soon as its last is */
	bool win;
	bool win_last;                 /* no read left to issue: the window ends when its bursts
					* have delivered */
	struct sim_dm_cmd win_cmd;
	uint8_t *win_host;             /* host memory of win_cmd.addr */
	uint64_t win_base, win_pos;    /* the window's first byte in the lane's range; done */
	uint64_t win_bytes, win_got;   /* bytes its reads take; delivered so far */
	uint64_t start_ps;
	struct sim_burst burst[SIM_MAX_BURSTS];
	uint32_t cmd_head, cmd_level;
	uint32_t sts_head, sts_level;
	uint8_t sticky;                /* FLAGS[7:4]: INTERR, DECERR, SLVERR, overflow */
	/* staged registers */
	uint32_t cmd_lo, cmd_hi, cmd_ext, addr_hi;
	/* command and status FIFOs */
	struct sim_dm_cmd cmd[256];
	uint8_t sts[256];
};

struct sim_ddr {
	uint64_t free_ps;
	uint64_t next_refresh_ps;
	int last_dir;
	uint64_t rem;                  /* fractional picoseconds carried between bursts */
	uint64_t *open_row;            /* per bank; ~0 = closed */
	uint32_t bank_shift, bank_mask, row_shift;
	uint64_t burst_q, burst_r;     /* a full burst's bytes * 10^6 / MB/s: quotient, remainder */
};

/* What bookings on the DDR model add to the statistics (struct pccx_sim_stats, ddr_busy_ps). */
struct sim_ddr_tally {
	uint64_t bursts, row_misses, turnarounds, refreshes, read_bytes, write_bytes, busy_ps;
};

/*
 * Book one burst on the DDR bus, requested at now_ps. Returns the time its transfer ends on
 * the bus (the caller adds the read latency or the write response time). The one definition
 * of the DDR model's timing (docs/sim.md), inline so that a run of bookings (sim/bulk.c) keeps
 * the model's state in registers.
 */
static inline uint64_t sim_ddr_book(struct sim_ddr *d, const struct pccx_sim_config *c,
				    struct sim_ddr_tally *t, uint64_t now_ps, uint64_t addr,
				    uint32_t bytes, int write)
{
	uint64_t start = now_ps > d->free_ps ? now_ps : d->free_ps, dur, num, end;
	/* Bank bits XOR the low row bits, as memory controllers hash them, so streams whose
	 * addresses differ by a large power of two do not all fight over one bank. */
	uint32_t bank = (uint32_t)((addr >> d->bank_shift) ^ (addr >> d->row_shift)) & d->bank_mask;
	uint64_t row = addr >> d->row_shift;
	uint32_t i;

	if (start >= d->next_refresh_ps) {
		/* Refreshes missed while the bus was idle cost nothing; the due one blocks it. */
		uint64_t k = (start - d->next_refresh_ps) / c->ddr_refi_ps;

		t->refreshes += k + 1;
		d->next_refresh_ps += k * c->ddr_refi_ps;
		if (start < d->next_refresh_ps + c->ddr_refresh_ps)
			start = d->next_refresh_ps + c->ddr_refresh_ps;
		d->next_refresh_ps += c->ddr_refi_ps;
		for (i = 0; i < c->ddr_banks; i++)
			d->open_row[i] = ~0ull;
	}
	if (bytes == c->ddr_burst_bytes) {
		/* the same quotient and remainder without a division (rem < ddr_mbps) */
		num = d->rem + d->burst_r;
		dur = d->burst_q + (num >= c->ddr_mbps);
		d->rem = num >= c->ddr_mbps ? num - c->ddr_mbps : num;
	} else {
		num = (uint64_t)bytes * 1000000u + d->rem;
		dur = num / c->ddr_mbps;
		d->rem = num % c->ddr_mbps;
	}
	dur += c->ddr_burst_ps;
	if (d->open_row[bank] != row) {
		dur += c->ddr_row_miss_ps;
		d->open_row[bank] = row;
		t->row_misses++;
	}
	if (write != d->last_dir) {
		dur += c->ddr_turnaround_ps;
		d->last_dir = write;
		t->turnarounds++;
	}
	end = start + dur;
	d->free_ps = end;
	t->busy_ps += dur;
	t->bursts++;
	if (write)
		t->write_bytes += bytes;
	else
		t->read_bytes += bytes;
	return end;
}

/* The tally of bookings made outside pccx__sim_ddr_access(), added to the statistics. */
void pccx__sim_ddr_add_tally(struct pccx_sim *s, const struct sim_ddr_tally *t);

/* One instruction between issue and completion. */
struct sim_op {
	bool used;
	uint32_t index;                /* job-relative index */
	uint64_t word;
	struct pccx_insn in;
	struct pccx_effects fx;
	int unit;                      /* enum pccx_sim_unit */
	bool sync;
	uint64_t issue_cycle;
};

/* A record a windowed lane takes: where it lies in the port's range, and what it is
 * (rowmask: the stored row; q4c: block * 33 + column, or + 32 for the block's scales). */
struct sim_rec {
	uint64_t off;
	uint32_t bytes, id;
};

struct sim_q4c_batch;

/* A GEMV/GEMM lane: the rows of one weight port. */
struct sim_lane {
	uint32_t row_first, row_count, rows_done;
	uint64_t row_bytes, got;       /* bytes of the current row received */
	uint64_t bytes_left;           /* for the whole instruction */
	uint8_t *row;                  /* the current row record, when copied out of the FIFO */
	bool inplace;                  /* q4 rows are computed where they lie in host memory */
	uint64_t row_beat;             /* FIFO beat number of the current row's first beat */
	uint32_t batch;                /* in place: rows computed together */
	uint32_t pend, pend_row;       /* in place: complete rows not computed yet, the first */
	const uint8_t *pend_host;      /* ... and where they lie */
	/* in place, on the second thread: rows [ahead_row, ahead_end) posted before their
	 * beats came, read at ahead_host onwards; rows up to ahead_lim lie in the same window */
	const uint8_t *ahead_host;     /* NULL: none ahead */
	uint32_t ahead_row, ahead_end, ahead_lim;
	bool ahead_off;                /* the rows did not follow each other: none ahead */
	/* rowmask and q4c: the records this lane takes, ascending in the port's range */
	struct sim_rec *rec;
	uint32_t n_rec;
	uint32_t win_rec;              /* the first record the window reads have not passed */
	uint64_t win_range;            /* bytes of the port's range */
	uint64_t win_left;             /* ... its windows still cover */
	int32_t *isum;                 /* q4c: the rows' INT32 sums of the current block */
	struct sim_q4c_batch *q4c;     /* q4c: records taken and not computed yet (q4c.c) */
};

struct sim_matmul {
	struct sim_op *op;
	bool busy;
	int phase;                     /* 0 pre (load x), 1 streaming, 2 tail */
	uint64_t phase_end;            /* core cycle ending pre/tail */
	uint32_t seq;                  /* stream sequence number */
	struct pccx_wshape ws;
	uint32_t m, n, k;
	bool accm, findemax;
	bool rowmask;                  /* GEMV rowmask: lanes take their kept rows only */
	bool window;                   /* rowmask or q4c: lanes take their listed records */
	uint64_t mac_budget;           /* GEMM: MACs available */
	uint32_t mac_rate;
	struct sim_lane lane[PCCX_WSTREAM_PORTS];
	float *x;                      /* (m, k) FP32 inputs */
	int8_t *q8;                    /* (m, k) quantised */
	float *sx;                     /* (m, k/32) block scales */
	int8_t *xp;                    /* (m, k) q8 in the host kernels' layout */
	int32_t *xsum;                 /* (m, k/32) block sums of q8 */
	struct pccx_kern_act *act;     /* (m) the kernels' view of the above */
	float *y;                      /* (m, n) FP32 results */
	float *out;                    /* (m, n) results as stored */
	float *tmp;                    /* one f32 row record */
	uint16_t *sc;                  /* q4: one row record's FP16 block scales */
	float *wt;                     /* f32t: (k, n) whole matrix; f32: (n, k), or NULL when
					* too large (each row computed as it arrives) */
	uint32_t wt_stride;            /* floats between two rows of wt (a multiple of 16) */
};

struct sim_timed {                 /* SFU, L2 copy, MEMSET: a fixed duration */
	struct sim_op *op;
	bool busy;
	uint64_t end;                  /* core cycle */
};

struct sim_xfer {                  /* MEMCPY to/from the host */
	struct sim_op *op;
	bool busy;
	uint64_t start_after;          /* core cycle (L2 latency) */
	uint32_t words, done;
};

struct sim_trace;
struct pccx_kern_act;

struct pccx_sim {
	struct pccx_sim_config cfg;
	/* the widest of the reference's single-thread q4 kernels this CPU runs: one activation
	 * row, and several (a prompt chunk's GEMM); the same bits */
	struct pccx_kern_q4 q4;
	struct sim_rowq *rowq;         /* the thread computing q4 row batches (rowq.c) */
	int rowq_mode;                 /* 1 always, -1 never, 0 when a CPU is spare for it */
	bool rowq_tried;               /* rowq_mode applied: rowq is what it gave */
	uint64_t rowq_retry_ns;        /* no CPU was spare: when to look again (rowq.c) */
	bool every_edge;               /* pccx__sim_set_every_edge(): no bulk advance */
	/*
	 * Deferred edges: when no event comes before defer_h (ps), time runs on without the
	 * device's state, which stays that of defer_ps; no register the host can read changes in
	 * between. pccx__sim_sync() runs those edges before anything that changes or counts.
	 */
	uint64_t defer_ps, defer_h;
	/* bulk.c: in a window of a GEMM the array limits, the beats each lane takes in the
	 * window's first i AXI cycles */
	uint16_t bulk_takes[PCCX_WSTREAM_PORTS][SIM_BULK_AXI + 1];
	uint64_t core_ps, axi_ps;
	uint64_t now_ps;
	uint64_t core_cycle, axi_cycle;  /* edges passed */

	/* registers */
	uint64_t fifo[SIM_MAX_FIFO];
	uint32_t fifo_head, fifo_level;
	uint64_t retired;
	pccx_sim_retire_fn on_retire;  /* observer of each completed instruction (verify) */
	void *retire_user;
	uint32_t issued_job;           /* words issued since RETIRED was reset */
	bool inject_armed;             /* pccx__sim_inject_error(): raise inject_cause at */
	uint32_t inject_index;         /* ... the issue of this job index */
	uint32_t inject_cause;
	bool flip_armed;               /* pccx__sim_inject_flip(): corrupt the first GEMV result */
	uint32_t flip_index;           /* ... retired at or after this job index */
	uint64_t error, error_info;
	uint64_t irq_status, irq_enable;
	bool done_bit, halted, was_idle;
	uint64_t reset_until;          /* core cycle; RESET reads 1 before it */
	uint64_t overrun_since;        /* core cycle the idle-with-bytes state began, or 0 */

	/* state */
	uint8_t *l2;
	struct pccx_shape_state shape;
	uint32_t s_bits;

	/* front end */
	struct sim_op ops[SIM_MAX_INFLIGHT];
	uint32_t n_inflight;           /* ops[] entries in use */
	uint64_t epoch, blk_epoch;     /* issue/retire count; the epoch blk was computed at */
	int blk;                       /* enum sim_block of the head, cached */
	bool fence;                    /* a sync instruction is in flight */
	bool head_decoded;
	struct sim_op head;            /* decoded FIFO head */
	uint32_t stream_seq;           /* next stream sequence number */
	uint32_t port_seq[PCCX_WSTREAM_PORTS]; /* sequence whose bytes port p delivers next */

	/* units */
	struct sim_matmul gemv, gemm;
	struct sim_timed sfu, l2copy;
	struct sim_xfer dma_in, dma_out;
	struct sim_beatq wq[PCCX_WSTREAM_PORTS];
	struct sim_beatq fmapq, resq;
	struct sim_dm dm[PCCX_DM_CHANNELS];
	struct sim_ddr ddr;

	struct sim_window *win;
	size_t n_win, cap_win;

	/* per-instruction times of the current job */
	struct pccx_sim_insn_time *times;
	uint32_t n_times, cap_times;

	/* statistics in picoseconds or counts (report converts) */
	struct pccx_sim_stats st;
	uint64_t st_base_ps;
	uint64_t busy_ps[PCCX_SIM_U_COUNT];
	uint64_t dm_busy_ps[PCCX_DM_CHANNELS], dm_full_ps[PCCX_DM_CHANNELS];
	uint64_t ddr_busy_ps, mmio_ps, mmio_full_ps, stall_weights_ps;
	bool host_backlog;             /* the host has words it has not pushed yet */

	struct sim_trace *trace;
};

/* l2.c */
uint8_t *pccx__sim_l2_word(struct pccx_sim *s, uint32_t w);
void pccx__sim_l2_get(struct pccx_sim *s, uint32_t word, float *e, uint64_t n);
void pccx__sim_l2_put(struct pccx_sim *s, uint32_t word, const float *e, uint64_t n);
void pccx__sim_l2_put_f32(struct pccx_sim *s, uint32_t word, uint32_t bits);
void pccx__sim_l2_clear(struct pccx_sim *s);

/* device.c */
void pccx__sim_set_error(struct pccx_sim *s, uint32_t cause, uint32_t isa_err, uint64_t index,
			 uint64_t info);
bool pccx__sim_engines_idle(const struct pccx_sim *s);
bool pccx__sim_input_pending(const struct pccx_sim *s);
void pccx__sim_device_core_tick(struct pccx_sim *s);
struct sim_window *pccx__sim_window_find(struct pccx_sim *s, uint64_t addr);

/* frontend.c */
void pccx__sim_frontend_tick(struct pccx_sim *s);
void pccx__sim_retire(struct pccx_sim *s, struct sim_op *op);
void pccx__sim_frontend_flush(struct pccx_sim *s);

/* wstream.c: the weight-stream and fmap/result FIFOs */
int pccx__sim_beatq_init(struct sim_beatq *q, uint32_t depth, uint32_t cap, uint32_t spans);
void pccx__sim_beatq_free(struct sim_beatq *q);
void pccx__sim_beatq_clear(struct sim_beatq *q);
/* Weight FIFOs: push n beats of host memory; copy beats out; where a run of beats lies in
 * host memory (NULL: not in one span); forget spans before beat `keep`; note host memory
 * read for the FIFO's beats; before the device writes `bytes` at `host` (NULL: a window
 * closes), copy every span in if the weight path may read there. */
void pccx__sim_wq_push(struct sim_beatq *q, const uint8_t *host, uint32_t n);
void pccx__sim_wq_fetch(const struct sim_beatq *q, uint64_t first, uint32_t n, uint8_t *dst);
const uint8_t *pccx__sim_wq_host(const struct sim_beatq *q, uint64_t first, uint32_t n);
void pccx__sim_wq_trim(struct sim_beatq *q, uint64_t keep);
void pccx__sim_wq_ref(struct sim_beatq *q, const uint8_t *host, uint64_t bytes);
void pccx__sim_wq_settle(struct pccx_sim *s, const uint8_t *host, uint64_t bytes);

/* Beats that may still be requested. */
static inline uint32_t sim_beatq_room(const struct sim_beatq *q)
{
	return q->depth - q->level - q->reserved;
}

/* Push one beat whose room was reserved (or, for the result FIFO, checked). */
static inline void sim_beatq_push(struct sim_beatq *q, const uint8_t *beat)
{
	uint32_t tail = q->head + q->level;

	if (tail >= q->cap)
		tail -= q->cap;
	__builtin_memcpy(q->data + (size_t)tail * 16u, beat, 16u);
	q->level++;
}

static inline void sim_beatq_pop(struct sim_beatq *q, uint8_t *beat)
{
	if (beat)
		__builtin_memcpy(beat, q->data + (size_t)q->head * 16u, 16u);
	if (++q->head == q->cap)
		q->head = 0;
	q->level--;
}

/* n FP32 values from / to little-endian bytes (L2 words, stream records): a little-endian
 * host holds them as they are, so the bytes move in one copy; elsewhere value by value. */
static inline void sim_f32s_from_le(float *dst, const uint8_t *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	__builtin_memcpy(dst, src, n * 4);
#else
	size_t i;

	for (i = 0; i < n; i++, src += 4)
		dst[i] = pccx_f32_from_bits((uint32_t)src[0] | (uint32_t)src[1] << 8 |
					    (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24);
#endif
}

static inline void sim_f32s_to_le(uint8_t *dst, const float *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	__builtin_memcpy(dst, src, n * 4);
#else
	size_t i;

	for (i = 0; i < n; i++, dst += 4) {
		uint32_t b = pccx_f32_bits(src[i]);

		dst[0] = (uint8_t)b;
		dst[1] = (uint8_t)(b >> 8);
		dst[2] = (uint8_t)(b >> 16);
		dst[3] = (uint8_t)(b >> 24);
	}
#endif
}

/* datamover.c */
void pccx__sim_dm_init(struct pccx_sim *s);
void pccx__sim_dm_reset(struct pccx_sim *s, struct sim_dm *dm);
uint32_t pccx__sim_dm_read(struct pccx_sim *s, unsigned ch, uint32_t reg);
void pccx__sim_dm_write(struct pccx_sim *s, unsigned ch, uint32_t reg, uint32_t v);
void pccx__sim_dm_axi_tick(struct pccx_sim *s);
bool pccx__sim_dm_busy(const struct pccx_sim *s);          /* can still make progress */
bool pccx__sim_dm_outstanding(const struct pccx_sim *s);   /* a command queued or running */
/* window.c: a windowed GEMV's records; a window command read as its records' reads */
bool pccx__sim_win_ready(const struct pccx_sim *s, const struct sim_dm *dm);
bool pccx__sim_win_open(struct pccx_sim *s, struct sim_dm *dm, uint8_t *host);
/* datamover.c: a window's read has all its bursts issued: the next read, or none left */
void pccx__sim_dm_win_advance(struct pccx_sim *s, struct sim_dm *dm);
bool pccx__sim_win_next(struct pccx_sim *s, struct sim_dm *dm);
int pccx__sim_win_records(struct sim_lane *l, uint32_t max);
void pccx__sim_win_add(struct sim_lane *l, uint64_t off, uint32_t bytes, uint32_t id);
/* rowmask.c: the kept rows of a rowmask GEMV */
int pccx__sim_rowmask_start(struct pccx_sim *s, struct sim_matmul *mm);
/* q4c.c: the records of a GEMV on q4c weights, and what each one computes */
int pccx__sim_q4c_start(struct sim_matmul *mm);
void pccx__sim_q4c_record(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t id);
/* The records lane p holds go to be computed (rowq.c), in order. */
void pccx__sim_q4c_flush(struct pccx_sim *s, struct sim_lane *l);

/* eng_dma.c: MEMCPY engines */
void pccx__sim_dma_start(struct pccx_sim *s, struct sim_op *op);
void pccx__sim_dma_core_tick(struct pccx_sim *s);
void pccx__sim_dma_abort(struct pccx_sim *s);

/* eng_gemv.c / eng_gemm.c: the matmul units share the lane code in eng_gemv.c */
int pccx__sim_matmul_start(struct pccx_sim *s, struct sim_matmul *mm, struct sim_op *op);
void pccx__sim_matmul_core_tick(struct pccx_sim *s, struct sim_matmul *mm);
void pccx__sim_matmul_axi_tick(struct pccx_sim *s, struct sim_matmul *mm);
void pccx__sim_matmul_abort(struct pccx_sim *s, struct sim_matmul *mm);
uint32_t pccx__sim_gemm_beat_macs(const struct sim_matmul *mm, uint64_t byte_in_row);
uint32_t pccx__sim_gemm_beat_macs_max(const struct sim_matmul *mm);
uint64_t pccx__sim_gemm_mac_cap(const struct sim_matmul *mm);
/* The budget after one core edge of the streaming phase: mac_rate more, up to the cap. */
uint64_t pccx__sim_gemm_mac_add(const struct sim_matmul *mm, uint64_t budget);
bool pccx__sim_gemm_keeps_up(const struct pccx_sim *s, const struct sim_matmul *mm);

/* eng_sfu.c: CVO and the L2 copy (fixed-duration units) */
void pccx__sim_timed_start(struct pccx_sim *s, struct sim_op *op);
void pccx__sim_timed_core_tick(struct pccx_sim *s);
void pccx__sim_timed_abort(struct pccx_sim *s);

/* eng_gemv.c: take n beats from port p's FIFO into lane p (rows computed as they complete) */
void pccx__sim_lane_take(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t n);
/* Compute the rows a lane holds (before host memory changes under them); after that, give up
 * the rows computed ahead of their beats (they are computed again when their beats come). */
void pccx__sim_matmul_flush(struct pccx_sim *s, struct sim_matmul *mm);
void pccx__sim_matmul_no_ahead(struct sim_matmul *mm);

/* rowq.c: q4 row batches computed on a second thread. Post: y[r * ystride + i] = row i of w
 * against act[r], for r < m, i < n. Wait: every batch posted is computed. Stop: the thread
 * ends (after a wait). */
void pccx__sim_rowq_post(struct pccx_sim *s, const uint8_t *w, uint64_t row_bytes, uint32_t n,
			 const struct pccx_kern_act *act, uint32_t m, float *y, size_t ystride);
void pccx__sim_rowq_wait(struct pccx_sim *s);
/* fn(arg) after every ordered job posted before it (wait: it has run). */
void pccx__sim_rowq_post_ordered(struct pccx_sim *s, void (*fn)(void *arg), void *arg);
/* Whether batches go to the second thread (started if it is to be). */
bool pccx__sim_rowq_active(struct pccx_sim *s);
void pccx__sim_rowq_stop(struct pccx_sim *s);

/* bulk.c: advance through edges whose effect is known in closed form */
enum { SIM_BULK_NONE, SIM_BULK_DONE, SIM_BULK_DEFERRED };
int pccx__sim_bulk(struct pccx_sim *s, uint64_t t_ps, bool may_defer);
/* Run the edges deferred by bulk advance (see struct pccx_sim's defer_h). */
void pccx__sim_sync(struct pccx_sim *s);

/* timing.c: the clocks and the DDR model */
void pccx__sim_run_to(struct pccx_sim *s, uint64_t t_ps);
uint64_t pccx__sim_ddr_access(struct pccx_sim *s, uint64_t now_ps, uint64_t addr, uint32_t bytes,
			      int write);
int pccx__sim_ddr_init(struct pccx_sim *s);

/* trace.c */
void pccx__sim_trace_event(struct pccx_sim *s, const char *track, const char *name,
			   uint64_t start_ps, uint64_t end_ps, uint64_t arg);
void pccx__sim_trace_free(struct pccx_sim *s);

/* report.c */
const char *pccx__sim_unit_name(int unit);

#endif /* PCCX_SIM_INT_H */
