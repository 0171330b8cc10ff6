// SPDX-License-Identifier: MIT
/*
 * Bulk advance: the edges between two events done at once, with exactly the effect the edge
 * by edge model (timing.c) has on every register, FIFO, counter and byte.
 *
 * Between events, a core edge only adds to counters (busy units, the front end's stall cause)
 * and the AXI edges only move weight-stream beats: each lane of a streaming GEMV takes a beat
 * when its FIFO holds one, each weight DataMover delivers a beat when its oldest burst has
 * arrived and books the next burst when the FIFO has room for it. Per channel these are runs
 * whose length is known in closed form (until a burst arrives or is fully delivered, the FIFO
 * runs dry, or the room for the next burst frees up); the channels only meet on the DDR bus,
 * so each channel is run to its next booking and the bookings are made in the order the edge
 * model makes them (by cycle, then in that cycle's round-robin order).
 *
 * The lanes are those of the GEMV, or of a GEMM whose array keeps up with its stream
 * (pccx__sim_gemm_keeps_up(): a prompt chunk of up to 16 rows), whose beats then move exactly
 * as a GEMV's do. A GEMM the array limits (more rows) takes its beats as the array's MAC
 * budget lets it: sched_plan() works out which beats each lane takes in the window before the
 * channels run, and ends the window before a FIFO could run dry where that is not known.
 *
 * A MEMCPY from the host (eng_dma.c) drains the fmap FIFO at the core clock, one word per
 * edge. With the core clock at least as fast as the AXI clock, every AXI cycle holds a core
 * edge, so a beat delivered in AXI cycle c is in L2 before cycle c + 1 and the FIFO is empty
 * at every AXI edge: for the fmap DataMover that is a lane taking, in each cycle, the beat of
 * the cycle before. The last cycle's beat is taken in the window if its core edge is.
 *
 * An event is anything else: an instruction that can issue, an engine reaching the end of a
 * phase, a lane's last beat, a DataMover command starting or delivering its last beat, the
 * beat that completes a MEMCPY from the host, a MEMCPY to the host, the result channel at
 * work (one that waits for a MEMCPY to the host with nothing to write only counts its busy
 * cycles), a GEMM streaming beside a GEMV, a reset, the IDLE interrupt or the overrun
 * watchdog. The edge of an event, and every edge when pccx__sim_set_every_edge() asks for it,
 * runs through timing.c; so does a window with nothing to gain.
 */
#include <string.h>
#include <stdlib.h>
#include <stdio.h>

#include "sim_int.h"

/* The channels a window runs: the four weight streams and the fmap channel (the MEMCPY engine
 * that takes its beats is idle in a window). */
#define BULK_CH (PCCX_DM_FMAP + 1)

struct bulk_ch {
	struct sim_dm *dm;
	struct sim_beatq *q;
	struct sim_lane *lane;   /* the lane taking this port's beats, or NULL */
	uint64_t c;              /* the next AXI cycle to run */
	uint64_t rc;             /* the AXI cycle the oldest burst's data is at the port */
	uint32_t level, reserved;    /* the FIFO's, as the window runs */
	uint32_t got, taken;     /* beats delivered into / taken from the FIFO in the window */
	uint64_t full;           /* cycles stalled: no room for a burst, none in flight */
	bool issue;              /* stopped at cycle c with a burst to book */
	const uint8_t *push_host;    /* beats delivered, not yet in the FIFO (ch_push) */
	uint32_t push_n;
	uint64_t key;            /* c when issue, else ~0 */
	bool drain;              /* the fmap channel, drained by a MEMCPY into L2 */
	uint8_t *l2;             /* drain: the L2 word its next beat goes to */
};

struct bulk {
	uint64_t a, e;           /* AXI cycles [a, e) */
	struct sim_matmul *mm;   /* the instruction whose lanes stream (or the idle GEMV) */
	struct bulk_ch ch[BULK_CH];
	bool starve_all;         /* a lane waits every cycle (its port is another's) */
	/* a GEMM the array limits: each lane takes the beats of s->bulk_takes (sched_plan()) */
	bool sched;
	uint64_t budget_end;     /* sched: the array's MAC budget after the window */
	uint64_t kend;           /* the first core edge past the window */
	uint32_t fmap_pops;      /* words the MEMCPY took from the fmap FIFO in the window */
	uint64_t starve[SIM_BULK_AXI / 64];  /* bit i: a lane waited in cycle a + i */
};

static uint64_t min64(uint64_t x, uint64_t y)
{
	return x < y ? x : y;
}

static uint64_t ceil_div(uint64_t x, uint64_t y)
{
	return (x + y - 1) / y;
}

/* A channel that would start a command at its next edge. */
static bool dm_startable(const struct pccx_sim *s, const struct sim_dm *dm)
{
	return !dm->active && dm->cmd_level && !(dm->sticky & 7u) &&
	       dm->sts_level < s->cfg.dm_fifo_depth && pccx__sim_win_ready(s, dm);
}

static uint64_t ready_cycle(const struct pccx_sim *s, const struct sim_dm *dm)
{
	return ceil_div(dm->burst[dm->b_head].ready_ps, s->axi_ps);
}

/* Has the oldest burst's data reached the port by cycle bc->c? (Caches the answer.) */
static bool ready_by(const struct pccx_sim *s, const struct sim_dm *dm, struct bulk_ch *bc)
{
	if (dm->burst[dm->b_head].ready_ps > bc->c * s->axi_ps)
		return false;
	bc->rc = bc->c;
	return true;
}

/* ---- the core side ------------------------------------------------------------------------ */

/* The first core edge (cycle number) with an event, or 0 when bulk advance cannot apply. */
static uint64_t core_event(const struct pccx_sim *s)
{
	uint64_t next = s->core_cycle + 1, ev = ~0ull;
	bool idle;

	if (s->core_cycle < s->reset_until || s->dma_out.busy)
		return 0;
	if (s->dma_in.busy && (s->core_cycle + 1 < s->dma_in.start_after || s->fmapq.level ||
			       s->core_ps > s->axi_ps))
		return 0;     /* not (yet) a drain as stream_setup() sets up */
	if (s->gemm.busy && s->gemm.phase == 1 && s->gemv.busy && s->gemv.phase == 1)
		return 0;     /* two streams count their stalls */
	if (s->overrun_since)
		return 0;
	idle = s->fifo_level == 0 && pccx__sim_engines_idle(s) && !pccx__sim_dm_outstanding(s) &&
	       !pccx__sim_input_pending(s) && !s->resq.level;
	if (idle != s->was_idle)
		return 0;
	if (!s->halted && s->fifo_level == 0 && pccx__sim_engines_idle(s) &&
	    !pccx__sim_dm_outstanding(s) && pccx__sim_input_pending(s))
		return 0;     /* the overrun watchdog counts */
	if (!s->halted && s->fifo_level) {
		if (!s->head_decoded || s->blk_epoch != s->epoch + 1 || s->blk == SB_NONE)
			return 0;
		if (s->inject_armed && s->issued_job == s->inject_index)
			return 0;
	}
	if (s->gemv.busy && s->gemv.phase != 1)
		ev = s->gemv.phase_end > next ? s->gemv.phase_end : next;
	if (s->gemm.busy && s->gemm.phase != 1)
		ev = min64(ev, s->gemm.phase_end > next ? s->gemm.phase_end : next);
	if (s->sfu.busy)
		ev = min64(ev, s->sfu.end > next ? s->sfu.end : next);
	if (s->l2copy.busy)
		ev = min64(ev, s->l2copy.end > next ? s->l2copy.end : next);
	return ev;
}

/* What k core edges without an event add up to (core_tick, frontend_tick, device_core_tick). */
static void core_bulk(struct pccx_sim *s, const struct bulk *b, uint64_t k)
{
	uint64_t ps = k * s->core_ps;

	if (!s->halted) {
		if (!s->fifo_level) {
			if (s->host_backlog)
				s->st.stall_mmio += k;
			if (!pccx__sim_engines_idle(s) || pccx__sim_dm_busy(s))
				s->st.stall_fifo_empty += k;
		} else if (s->blk == SB_FENCE) {
			s->st.stall_fence += k;
		} else if (s->blk == SB_INTERLOCK) {
			s->st.stall_interlock += k;
		} else {
			s->st.stall_engine += k;
		}
	}
	if (s->gemv.busy)
		s->busy_ps[PCCX_SIM_U_GEMV] += ps;
	if (s->gemm.busy) {
		s->busy_ps[PCCX_SIM_U_GEMM] += ps;
		/* its core edges add mac_rate each, up to the cap: kept up with (for a GEMM the
		 * array limits, sched_plan() has the budget after the window) */
		if (s->gemm.phase == 1 && !b->sched)
			s->gemm.mac_budget = pccx__sim_gemm_mac_cap(&s->gemm);
	}
	if (s->dma_in.busy) {
		s->busy_ps[PCCX_SIM_U_DMA_IN] += ps;
		s->st.stall_fmap += k - b->fmap_pops;
		s->dma_in.done += b->fmap_pops;
	}
	if (s->l2copy.busy)
		s->busy_ps[PCCX_SIM_U_L2COPY] += ps;
	if (s->sfu.busy)
		s->busy_ps[PCCX_SIM_U_SFU] += ps;
	s->core_cycle += k;
}

/* ---- the weight streams ------------------------------------------------------------------ */

/*
 * Set up the window's channels; returns the first AXI cycle with a stream event (a in the
 * worst case) or 0 when the streams are in a state bulk advance does not cover.
 */
static uint64_t stream_setup(struct pccx_sim *s, struct bulk *b)
{
	struct sim_matmul *mm = s->gemm.busy && s->gemm.phase == 1 ? &s->gemm : &s->gemv;
	const struct sim_dm *res = &s->dm[PCCX_DM_RESULT];
	bool streaming = mm->busy && mm->phase == 1, any = false;
	uint64_t stop = ~0ull, a = b->a;
	unsigned p;

	b->starve_all = false;
	b->fmap_pops = 0;
	b->mm = mm;
	/* the result channel takes part only while it waits for a MEMCPY to the host: nothing
	 * in its FIFO (only such a MEMCPY, an event, fills it) and no write in flight */
	if (dm_startable(s, res) || (res->active && (s->resq.level || res->b_level)))
		return 0;
	for (p = 0; p < BULK_CH; p++) {
		struct bulk_ch *bc = &b->ch[p];
		struct sim_dm *dm = &s->dm[p];
		struct sim_lane *l = &mm->lane[p < PCCX_WSTREAM_PORTS ? p : 0];

		memset(bc, 0, sizeof(*bc));
		bc->dm = dm;
		bc->q = dm->q;
		bc->c = a;
		bc->level = bc->q->level;
		bc->reserved = bc->q->reserved;
		bc->rc = ~0ull;
		bc->key = ~0ull;
		if (dm_startable(s, dm))
			return 0;
		if (dm->active)    /* its (window's) last beat is delivered at the earliest then */
			stop = min64(stop, a + (dm->win ? dm->win_bytes - dm->win_got :
						      dm->cur.btt - dm->delivered) / SIM_BEAT - 1);
		if (p == PCCX_DM_FMAP && s->dma_in.busy) {
			const struct sim_xfer *x = &s->dma_in;

			/* the beat that completes the MEMCPY is delivered at the earliest then */
			bc->drain = true;
			bc->l2 = pccx__sim_l2_word(s, x->op->in.f[PCCX_FID_B_dest] + x->done);
			stop = min64(stop, a + (x->words - x->done) - 1);
		}
		if (p >= PCCX_WSTREAM_PORTS || !streaming || !l->bytes_left)
			continue;
		any = true;
		if (s->port_seq[p] != mm->seq) {
			b->starve_all = true;    /* an earlier stream still owns the port */
			continue;
		}
		bc->lane = l;
		stop = min64(stop, a + l->bytes_left / PCCX_BEAT_BYTES - 1);
	}
	if (streaming && !any)
		return 0;          /* every lane done: the GEMV enters its tail now */
	return stop;
}

/* Bytes of the next burst (datamover.c's burst_bytes). */
static uint32_t next_burst(const struct pccx_sim *s, const struct sim_dm *dm)
{
	uint64_t addr = dm->cur.addr + dm->issued;
	uint64_t n = s->cfg.ddr_burst_bytes, left = dm->cur.btt - dm->issued;
	uint64_t to4k = 4096 - (addr & 4095);

	return (uint32_t)min64(min64(n, left), to4k);
}

/* The beats held back by ch_push into the FIFO (a weight FIFO notes where they lie; the fmap
 * FIFO holds copies). */
static void ch_flush(struct bulk_ch *bc)
{
	uint32_t i;

	if (!bc->push_n)
		return;
	if (bc->drain) {
		/* all but the window's last beat are in L2 by its end (ch_data) */
		memcpy(bc->l2, bc->push_host, (size_t)bc->push_n * SIM_BEAT);
		bc->l2 += (size_t)bc->push_n * SIM_BEAT;
	} else if (bc->q->span_cap)
		pccx__sim_wq_push(bc->q, bc->push_host, bc->push_n);
	else
		for (i = 0; i < bc->push_n; i++)
			sim_beatq_push(bc->q, bc->push_host + (size_t)i * SIM_BEAT);
	bc->push_n = 0;
}

/* n beats of burst bu delivered, in the order they arrive; beats that follow each other in
 * host memory go into the FIFO together. The lane takes its beats after (ch_data). */
static void ch_push(struct bulk_ch *bc, const struct sim_burst *bu, uint32_t n)
{
	const uint8_t *src = bu->host + (size_t)bu->done * SIM_BEAT;

	if (bc->push_n && bc->push_host + (size_t)bc->push_n * SIM_BEAT != src)
		ch_flush(bc);
	if (!bc->push_n)
		bc->push_host = src;
	bc->push_n += n;
}

/* The first j < n with T[i + j + 1] - T[i] >= want (the takes of cycles i .. i + j), or n. */
static uint64_t takes_reach(const uint16_t *T, uint64_t i, uint64_t n, uint64_t want)
{
	uint64_t lo = 0, hi = n;

	if (!want)
		return 0;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if ((uint64_t)(T[i + mid + 1] - T[i]) >= want)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * Run a channel from bc->c until it has a burst to book (bc->issue; bc->c the cycle, its lane
 * and delivery steps done) or until the window's end. Only the counts move here; the bytes
 * follow in ch_data(). Each pass covers a run of cycles in which every step repeats alike:
 * the lane takes a beat each cycle or none (or the plan's beats), the oldest burst delivers
 * one each cycle (up to its last) or none; in the run's last cycle the burst may end, or the
 * room for the next burst be there.
 */
static void ch_run(struct pccx_sim *s, struct bulk *b, struct bulk_ch *bc)
{
	struct sim_dm *dm = bc->dm;
	uint32_t out = s->cfg.dm_outstanding, depth = bc->q->depth;
	/* the lane of a GEMM the array limits takes the beats of the window's plan, which
	 * ends the window before its FIFO could run dry (sched_plan()): T[i] counts its takes
	 * in the window's first i cycles */
	const uint16_t *T = b->sched && bc->lane ? s->bulk_takes[dm->ch] : NULL;

	while (bc->c < b->e) {
		uint64_t n = b->e - bc->c, j = ~0ull, room, need = 0, i = bc->c - b->a;
		uint32_t nb = dm->b_level;
		bool pop = (bc->lane || bc->drain) && !T, dlv = false, ends = false, elig;

		if (nb) {
			if (bc->rc <= bc->c || ready_by(s, dm, bc)) {
				uint32_t left = dm->burst[dm->b_head].beats -
						dm->burst[dm->b_head].done;

				dlv = true;
				if (left <= n) {
					n = left;
					ends = true;
				}
			} else {
				bc->rc = ready_cycle(s, dm);
				n = min64(n, bc->rc - bc->c);
			}
		}
		if (pop && !bc->level && bc->drain && !dlv) {
			pop = false;       /* the MEMCPY waits until a beat comes */
		} else if (pop && !bc->level) {
			/* the lane waits this cycle; a delivery makes a beat for the next */
			if (!bc->drain)
				b->starve[(bc->c - b->a) / 64] |= 1ull << ((bc->c - b->a) % 64);
			pop = false;
			n = 1;
			ends = dlv && dm->burst[dm->b_head].beats - dm->burst[dm->b_head].done == 1;
		} else if (pop && !dlv && bc->level < n) {
			n = bc->level;
			ends = false;
		}
		room = depth - bc->level - bc->reserved;
		elig = dm->active && dm->issued < dm->cur.btt;
		if (elig) {
			need = next_burst(s, dm) / SIM_BEAT;
			/* the first cycle j of the run with a burst slot and room for it; the room
			 * after the lane's step of cycle j is room + (j + 1) * pop, or room and the
			 * plan's takes of cycles i .. i + j */
			if (nb < out) {
				if (T)
					j = takes_reach(T, i, n, need > room ? need - room : 0);
				else if (pop)
					j = need > room + 1 ? need - room - 1 : 0;
				else if (room >= need)
					j = 0;
			} else if (ends && nb - 1 < out &&
				   room + (T ? (uint64_t)(T[i + n] - T[i]) : pop ? n : 0) >= need) {
				j = n - 1;
			}
			if (j < n) {
				n = j + 1;
				if (ends && dm->burst[dm->b_head].beats -
					    dm->burst[dm->b_head].done != n)
					ends = false;
			}
			/* stalled with no burst in flight: the cycles before the issue */
			if (!nb)
				bc->full += j < n ? n - 1 : n;
			else if (nb == 1 && ends && j >= n)
				bc->full++;
		}
		if (pop || T) {
			uint32_t took = T ? (uint32_t)(T[i + n] - T[i]) : (uint32_t)n;

			bc->level -= took;
			bc->taken += took;
		}
		if (dlv) {
			ch_push(bc, &dm->burst[dm->b_head], (uint32_t)n);
			bc->level += (uint32_t)n;
			bc->reserved -= (uint32_t)n;
			bc->got += (uint32_t)n;
			dm->burst[dm->b_head].done += (uint32_t)n;
			if (ends) {
				dm->b_head = (dm->b_head + 1) % SIM_MAX_BURSTS;
				dm->b_level--;
				bc->rc = ~0ull;    /* the next head's: found when needed */
			}
		}
		if (elig && j == n - 1) {
			bc->c += n - 1;
			bc->issue = true;
			bc->key = bc->c;
			return;
		}
		bc->c += n;
	}
}

/* Book the burst of mm2s_tick's issue step in cycle bc->c. */
static void ch_book(struct pccx_sim *s, struct bulk_ch *bc)
{
	struct sim_dm *dm = bc->dm;
	uint32_t bytes = next_burst(s, dm), beats = bytes / SIM_BEAT;
	uint32_t slot = (dm->b_head + dm->b_level) % SIM_MAX_BURSTS;
	struct sim_burst *bu = &dm->burst[slot];

	bu->addr = dm->cur.addr + dm->issued;
	bu->host = dm->host + dm->issued;
	bu->beats = beats;
	bu->done = 0;
	bu->ready_ps = pccx__sim_ddr_access(s, bc->c * s->axi_ps, bu->addr, bytes, 0) +
		       s->cfg.ddr_read_latency_ps;
	if (!dm->b_level++)
		bc->rc = ~0ull;
	bc->reserved += beats;
	dm->issued += bytes;
	/* mm2s_tick's step after the issue: a window's next read follows this one's last burst */
	if (dm->win && !dm->win_last && dm->issued == dm->cur.btt)
		pccx__sim_dm_win_advance(s, dm);
	bc->issue = false;
	bc->key = ~0ull;
	bc->c++;
}

/*
 * ch_run() after a booking, in the case that makes most of a decode step's bookings: every
 * burst slot is taken (the booking took the last), the lane takes a beat in every cycle, and
 * the oldest burst has arrived. Then the oldest burst delivers its remaining beats, one a
 * cycle while the lane takes one (the FIFO's level stays), and the channel books again in
 * the cycle of its last beat, when the room the lane made fits the next burst. Returns false,
 * with nothing changed, when any of that does not hold (ch_run() takes the general way).
 */
static bool ch_steady(struct pccx_sim *s, struct bulk *b, struct bulk_ch *bc)
{
	struct sim_dm *dm = bc->dm;
	struct sim_burst *bu = &dm->burst[dm->b_head];
	uint32_t left = bu->beats - bu->done, room;
	uint64_t end = bc->c + left - 1;     /* the cycle of the burst's last beat */

	if (!bc->lane || !bc->level || dm->b_level != s->cfg.dm_outstanding ||
	    end >= b->e || bu->ready_ps > bc->c * s->axi_ps || dm->issued >= dm->cur.btt)
		return false;
	room = bc->q->depth - bc->level - bc->reserved;
	if (room + left < next_burst(s, dm) / SIM_BEAT)
		return false;
	ch_push(bc, bu, left);
	bc->taken += left;
	bc->got += left;
	bc->reserved -= left;
	bu->done += left;
	dm->b_head = (dm->b_head + 1) % SIM_MAX_BURSTS;
	dm->b_level--;
	bc->rc = ~0ull;
	bc->c = end;
	bc->issue = true;
	bc->key = end;
	return true;
}

/* The window's beats, delivered (ch_push) and counted, then those taken given to the lane. */
static void ch_data(struct pccx_sim *s, struct bulk *b, struct bulk_ch *bc)
{
	struct sim_dm *dm = bc->dm;
	struct sim_beatq *q = bc->q;
	bool keep = false;
	uint32_t run;

	if (bc->drain && bc->got > bc->taken) {
		/* the beat of the window's last cycle: taken in it if the core edge after its
		 * AXI edge is; if not, it waits in the FIFO */
		if (ceil_div((b->e - 1) * s->axi_ps, s->core_ps) < b->kend) {
			bc->taken++;
		} else {
			keep = true;
			bc->push_n--;
		}
	}
	run = bc->push_n;
	ch_flush(bc);
	if (bc->drain) {
		if (keep)
			sim_beatq_push(q, bc->push_host + (size_t)run * SIM_BEAT);
		b->fmap_pops = bc->taken;
		bc->taken = 0;
	}
	dm->delivered += (uint64_t)bc->got * SIM_BEAT;
	dm->win_got += (uint64_t)bc->got * SIM_BEAT;
	q->reserved = bc->reserved;
	if (bc->taken)
		pccx__sim_lane_take(s, b->mm, dm->ch, bc->taken);
}

/*
 * The channel whose burst the edge model books next: the earliest cycle, and within a cycle
 * the round robin's order (channel (c % 6 + i) % 6 goes i-th). NULL: none left.
 */
static struct bulk_ch *next_booking(struct bulk *b)
{
	uint64_t k0 = b->ch[0].key, k1 = b->ch[1].key, k2 = b->ch[2].key, k3 = b->ch[3].key;
	uint64_t k4 = b->ch[4].key;
	uint64_t a = k0 < k1 ? k0 : k1, c = k2 < k3 ? k2 : k3, m = a < c ? a : c;
	unsigned p, r, best = PCCX_DM_CHANNELS;
	struct bulk_ch *first = NULL;

	m = m < k4 ? m : k4;
	if (m == ~0ull)
		return NULL;
	/* written to compile without branches: which channel goes next is not predictable */
	if ((k0 == m) + (k1 == m) + (k2 == m) + (k3 == m) + (k4 == m) == 1)
		return &b->ch[k0 == m ? 0 : k1 == m ? 1 : k2 == m ? 2 : k3 == m ? 3 : 4];
	for (p = 0; p < BULK_CH; p++) {
		if (b->ch[p].key != m)
			continue;
		r = (p + PCCX_DM_CHANNELS - (unsigned)(m % PCCX_DM_CHANNELS)) % PCCX_DM_CHANNELS;
		if (r < best) {
			best = r;
			first = &b->ch[p];
		}
	}
	return first;
}

/* A channel in steady_rounds(): what its bookings change, kept apart until they end. */
struct steady {
	struct bulk_ch *bc;
	struct sim_dm *dm;
	uint64_t issued, last;   /* dm->issued; full bursts are booked while issued < last */
	uint64_t key;            /* the cycle of its next booking */
	uint32_t head, steps;    /* dm->b_head; bookings made with their ch_steady() step */
	uint64_t ready[SIM_MAX_BURSTS];    /* dm->burst[].ready_ps */
};

/*
 * Back into the channels and the DDR model: the state ch_book() and ch_steady() leave after
 * each channel's steps, and `extra` (NULL or one channel) with one booking more. The bursts
 * booked here and still in flight get their records; every step delivered a whole burst
 * that followed the last in host memory, so the beats delivered extend the channel's run.
 */
static void steady_sync(struct pccx_sim *s, struct steady *st, unsigned n, const struct steady *extra,
			const struct sim_ddr *d, const struct sim_ddr_tally *t)
{
	const uint32_t bytes = s->cfg.ddr_burst_bytes, beats = bytes / SIM_BEAT;
	unsigned i;

	for (i = 0; i < n; i++) {
		struct steady *x = &st[i];
		struct bulk_ch *bc = x->bc;
		struct sim_dm *dm = x->dm;
		uint32_t booked = x->steps + (x == extra), fly = s->cfg.dm_outstanding - 1u + (x == extra);
		uint32_t k;

		/* the newest bookings, those still in flight */
		for (k = 0; k < booked && k < fly; k++) {
			uint32_t slot = (x->head + fly - 1 - k) % SIM_MAX_BURSTS;
			uint64_t off = x->issued - (uint64_t)(k + 1) * bytes;
			struct sim_burst *bu = &dm->burst[slot];

			bu->addr = dm->cur.addr + off;
			bu->host = dm->host + off;
			bu->beats = beats;
			bu->done = 0;
			bu->ready_ps = x->ready[slot];
		}
		dm->issued = x->issued;
		dm->b_head = x->head;
		if (!x->steps)
			continue;
		bc->taken += x->steps * beats;
		bc->got += x->steps * beats;
		bc->push_n += x->steps * beats;
		bc->rc = ~0ull;
		bc->c = x->key;
		bc->key = x->key;
	}
	s->ddr = *d;
	pccx__sim_ddr_add_tally(s, t);
}
/*
 * The bookings while every channel that books keeps a steady period: each a full burst,
 * followed by ch_steady()'s step with the oldest burst, whole, to deliver, so the channel books
 * again exactly a period (a burst's beats) later. Channels advancing alike keep their order,
 * and the round robin's order within a cycle repeats every PCCX_DM_CHANNELS cycles, so the
 * edge model's order of the bookings repeats after a few rounds (three of 16 cycles) and is
 * worked out once here, not per booking. Each step is then a booking on the DDR model and a
 * look at the burst it must wait for, with the model's state and the channels' counts in
 * registers: most of a decode step's bookings run here. Returns at the first booking that is
 * not such a step, with every channel as the loop in stream_run() would leave it.
 */
static void steady_rounds(struct pccx_sim *s, struct bulk *b)
{
	const struct pccx_sim_config *cfg = &s->cfg;
	const uint32_t bytes = cfg->ddr_burst_bytes, period = bytes / SIM_BEAT;
	const uint32_t out = cfg->dm_outstanding;
	const uint64_t axi = s->axi_ps, lat = cfg->ddr_read_latency_ps, e = b->e;
	struct steady st[BULK_CH], *seq[PCCX_DM_CHANNELS * BULK_CH], *x;
	uint64_t cyc[PCCX_DM_CHANNELS * BULK_CH], key[BULK_CH], rounds = 1, r, c, m;
	struct sim_ddr_tally t = { 0 };
	struct sim_ddr d;
	unsigned p, n = 0, len, j;
	uint32_t i;

	/* a burst may end at a 4 KiB boundary (next_burst()); with one burst slot, none is in
	 * flight between two steps, a case not worth its own care here */
	if (4096 % bytes || out < 2)
		return;
	for (p = 0; p < BULK_CH; p++) {
		struct bulk_ch *bc = &b->ch[p];
		struct sim_dm *dm = bc->dm;
		const struct sim_burst *h;

		if (bc->key == ~0ull)
			continue;
		/* as ch_steady() left it: its lane takes a beat a cycle, one burst slot free, the
		 * bursts in flight whole, one run of host memory with the beats delivered before
		 * them and the next burst, which starts a full one in its 4 KiB page */
		if (!bc->issue || !bc->lane || !bc->level || dm->b_level + 1 != out ||
		    (dm->cur.addr + dm->issued) % bytes)
			return;
		h = &dm->burst[dm->b_head];
		if (bc->push_n && bc->push_host + (size_t)bc->push_n * SIM_BEAT != h->host)
			return;
		for (i = 0; i < out - 1; i++) {
			const struct sim_burst *bu = &dm->burst[(dm->b_head + i) % SIM_MAX_BURSTS];

			if (bu->beats != period || bu->done || bu->host != h->host + (size_t)i * bytes)
				return;
		}
		if (h->host + (size_t)(out - 1) * bytes != dm->host + dm->issued)
			return;
		x = &st[n++];
		x->bc = bc;
		x->dm = dm;
		x->issued = dm->issued;
		x->last = dm->cur.btt > bytes ? dm->cur.btt - bytes : 0;
		x->key = bc->key;
		x->head = dm->b_head;
		x->steps = 0;
		for (i = 0; i < SIM_MAX_BURSTS; i++)
			x->ready[i] = dm->burst[i].ready_ps;
		key[n - 1] = bc->key;
	}
	if (!n)
		return;
	for (i = 0; i < n; i++)
		if (!st[i].bc->push_n)
			st[i].bc->push_host = st[i].dm->burst[st[i].head].host;
	while (period * rounds % PCCX_DM_CHANNELS)
		rounds++;
	/* each channel's bookings from one period after the earliest on, back to that period:
	 * the order below then holds every channel's bookings of each span of rounds, and a
	 * channel skips those before its key */
	m = ~0ull;
	for (p = 0; p < n; p++)
		m = key[p] < m ? key[p] : m;
	for (p = 0; p < n; p++)
		key[p] -= (key[p] - m) / period * period;
	len = (unsigned)rounds * n;
	for (j = 0; j < len; j++) {
		unsigned best = PCCX_DM_CHANNELS, pick = 0;

		m = ~0ull;
		for (p = 0; p < n; p++)
			m = key[p] < m ? key[p] : m;
		for (p = 0; p < n; p++) {
			unsigned ch = (unsigned)(st[p].bc - b->ch);
			unsigned rr = (ch + PCCX_DM_CHANNELS - (unsigned)(m % PCCX_DM_CHANNELS)) %
				      PCCX_DM_CHANNELS;

			if (key[p] == m && rr < best) {
				best = rr;
				pick = p;
			}
		}
		seq[j] = &st[pick];
		cyc[j] = m;
		key[pick] += period;
	}
	d = s->ddr;
	for (r = 0;; r += rounds * period) {
		for (j = 0; j < len; j++) {
			x = seq[j];
			c = cyc[j] + r;
			if (c < x->key)
				continue;
			if (x->issued >= x->last)
				goto general;    /* not a full burst with more after it */
			/* ch_book(): the burst's record is written by steady_sync() */
			x->ready[(x->head + out - 1) % SIM_MAX_BURSTS] =
				sim_ddr_book(&d, cfg, &t, c * axi, x->dm->cur.addr + x->issued, bytes,
					     0) + lat;
			x->issued += bytes;
			/* ch_steady(): the oldest burst, arrived, delivered to its end */
			if (x->ready[x->head] > (c + 1) * axi || c + period >= e)
				goto booked;
			x->head = (x->head + 1) % SIM_MAX_BURSTS;
			x->key = c + period;
			x->steps++;
		}
	}
general:
	steady_sync(s, st, n, NULL, &d, &t);
	return;
booked:
	/* the rest of ch_book() for this booking, then ch_run() as ch_steady() does not apply */
	steady_sync(s, st, n, x, &d, &t);
	if (!x->dm->b_level++)
		x->bc->rc = ~0ull;
	x->bc->reserved += period;
	x->bc->issue = false;
	x->bc->key = ~0ull;
	x->bc->c = c + 1;
	ch_run(s, b, x->bc);
}

/* The channels run to the window's end, the bookings made in the edge model's order. */
static void stream_run(struct pccx_sim *s, struct bulk *b)
{
	uint64_t n = b->e - b->a, waited = 0, w;
	unsigned p, alike = 0;

	if (!b->sched)    /* sched_plan() marked the lanes' waits */
		memset(b->starve, 0, (size_t)(n + 63) / 64 * sizeof(b->starve[0]));
	for (p = 0; p < BULK_CH; p++)
		ch_run(s, b, &b->ch[p]);
	for (;;) {
		struct bulk_ch *first = next_booking(b);
		uint64_t c;

		if (!first)
			break;
		c = first->key;
		ch_book(s, first);
		if (b->sched || !ch_steady(s, b, first)) {
			ch_run(s, b, first);
			alike = 0;
		} else if (first->key != c + s->cfg.ddr_burst_bytes / SIM_BEAT) {
			alike = 0;
		} else if (++alike == 2 * BULK_CH) {
			/* every channel that books has kept the period for a while */
			steady_rounds(s, b);
			alike = 0;
		}
	}
	for (p = 0; p < BULK_CH; p++) {
		struct bulk_ch *bc = &b->ch[p];

		ch_data(s, b, bc);
		if (bc->dm->active)
			s->dm_busy_ps[p] += (b->e - b->a) * s->axi_ps;
		s->dm_full_ps[p] += bc->full * s->axi_ps;
	}
	if (s->dm[PCCX_DM_RESULT].active)    /* waiting, as stream_setup() found it */
		s->dm_busy_ps[PCCX_DM_RESULT] += (b->e - b->a) * s->axi_ps;
	for (w = 0; w < (n + 63) / 64 && !b->starve_all; w++)
		waited += (uint64_t)__builtin_popcountll(b->starve[w]);
	s->stall_weights_ps += (b->starve_all ? n : waited) * s->axi_ps;
	s->axi_cycle = b->e - 1;
}

/*
 * A GEMM the array limits (pccx__sim_gemm_keeps_up() false): which beats its lanes take in
 * the window, as matmul_axi_tick() and matmul_core_tick() decide them edge by edge (the core
 * edges add mac_rate to the budget up to its cap, an AXI edge before a core edge of the same
 * time; at an AXI edge each lane in port order with a beat in its FIFO takes it if the budget
 * holds its MACs, and one without waits). A FIFO's beats are its level, less the takes, plus
 * what the bursts in flight at the window's start deliver: exactly, until the first cycle in
 * which a burst booked in the window could have arrived (the read latency after the start),
 * and a lower bound after it, so the window ends before a later cycle in which a FIFO could
 * be empty (the edge model runs it). No lane takes its last beat in the window: it ends
 * before the cycle a lane's last beat would take at one beat a cycle (stream_setup()). A
 * GEMM's lanes take whole rows (records are GEMV only). Fills s->bulk_takes and the window's
 * waits, may move its end *h earlier and sets the budget after it.
 */
static void sched_plan(struct pccx_sim *s, struct bulk *b, uint64_t *h)
{
	struct sim_matmul *mm = b->mm;
	uint64_t e = ceil_div(*h, s->axi_ps), budget = mm->mac_budget, k = s->core_cycle + 1, c;
	const uint64_t exact = b->a + s->cfg.ddr_read_latency_ps / s->axi_ps + 1;
	uint64_t got[PCCX_WSTREAM_PORTS] = { 0 };
	/* the beats a FIFO holds before each edge: its level, less the takes, plus what the
	 * bursts in flight at the start deliver (one beat a cycle each, in order, from when it
	 * has arrived; a beat delivered in a cycle is there for the next) */
	uint64_t have[PCCX_WSTREAM_PORTS] = { 0 }, d_at[PCCX_WSTREAM_PORTS] = { 0 };
	uint32_t t[PCCX_WSTREAM_PORTS] = { 0 }, d_left[PCCX_WSTREAM_PORTS] = { 0 };
	uint32_t d_burst[PCCX_WSTREAM_PORTS] = { 0 };
	unsigned p;

	if (e > b->a)
		memset(b->starve, 0, (size_t)(e - b->a + 63) / 64 * sizeof(b->starve[0]));
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		const struct sim_lane *l = b->ch[p].lane;
		const struct sim_dm *dm = b->ch[p].dm;

		s->bulk_takes[p][0] = 0;
		if (!l)
			continue;
		got[p] = l->got;
		have[p] = b->ch[p].level;
		if (dm->b_level) {
			const struct sim_burst *bu = &dm->burst[dm->b_head];

			d_at[p] = ceil_div(bu->ready_ps, s->axi_ps);
			d_at[p] = d_at[p] > b->a ? d_at[p] : b->a;
			d_left[p] = bu->beats - bu->done;
		}
	}
	for (c = b->a; c < e; c++) {
		for (; k * s->core_ps < c * s->axi_ps; k++)
			budget = pccx__sim_gemm_mac_add(mm, budget);
		for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
			if (b->ch[p].lane && !have[p] && c >= exact)
				break;
		if (p < PCCX_WSTREAM_PORTS)
			break;
		for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
			const struct sim_dm *dm = b->ch[p].dm;

			if (b->ch[p].lane) {
				uint64_t cost = (uint64_t)pccx__sim_gemm_beat_macs(mm, got[p]) * mm->m;

				if (!have[p]) {
					b->starve[(c - b->a) / 64] |= 1ull << ((c - b->a) % 64);
				} else if (budget >= cost) {
					budget -= cost;
					t[p]++;
					have[p]--;
					got[p] += PCCX_BEAT_BYTES;
					if (got[p] == b->ch[p].lane->row_bytes)
						got[p] = 0;
				}
				if (d_left[p] && d_at[p] <= c) {
					have[p]++;
					if (!--d_left[p] && ++d_burst[p] < dm->b_level) {
						const struct sim_burst *bu = &dm->burst[(dm->b_head +
							d_burst[p]) % SIM_MAX_BURSTS];

						d_at[p] = ceil_div(bu->ready_ps, s->axi_ps);
						d_at[p] = d_at[p] > c + 1 ? d_at[p] : c + 1;
						d_left[p] = bu->beats;
					}
				}
			}
			s->bulk_takes[p][c - b->a + 1] = (uint16_t)t[p];
		}
	}
	if (c < e)
		*h = c * s->axi_ps;
	for (; k * s->core_ps < *h; k++)
		budget = pccx__sim_gemm_mac_add(mm, budget);
	b->budget_end = budget;
}

/* ---- the window ---------------------------------------------------------------------------- */

/*
 * Advance through the edges before the next event (and at most to t_ps) at once. Returns
 * SIM_BULK_NONE when there is nothing to skip (the caller runs the next edge itself),
 * SIM_BULK_DONE when edges were run, SIM_BULK_DEFERRED when no event comes up to t_ps and
 * may_defer allowed leaving those edges for pccx__sim_sync() (time is at t_ps).
 */
int pccx__sim_bulk(struct pccx_sim *s, uint64_t t_ps, bool may_defer)
{
	struct bulk b;
	uint64_t kev, sev, hev = ~0ull, h, kend, last;

	if (s->every_edge)
		return SIM_BULK_NONE;
	kev = core_event(s);
	if (!kev)
		return SIM_BULK_NONE;
	b.a = s->axi_cycle + 1;
	sev = stream_setup(s, &b);
	if (!sev)
		return SIM_BULK_NONE;
	/* the first edge with an event; edges strictly before it run here */
	if (kev != ~0ull)
		hev = kev * s->core_ps;
	if (sev != ~0ull)
		hev = min64(hev, sev * s->axi_ps);
	if (may_defer && hev > t_ps) {
		s->defer_ps = s->now_ps;
		s->defer_h = hev;
		s->now_ps = t_ps;
		return SIM_BULK_DEFERRED;
	}
	h = min64(min64(t_ps + 1, (b.a + SIM_BULK_AXI) * s->axi_ps), hev);
	b.sched = b.mm == &s->gemm && s->gemm.busy && s->gemm.phase == 1 &&
		  !pccx__sim_gemm_keeps_up(s, &s->gemm);
	if (b.sched)
		sched_plan(s, &b, &h);
	b.e = ceil_div(h, s->axi_ps);
	kend = ceil_div(h, s->core_ps);
	if (b.e <= b.a && kend <= s->core_cycle + 1)
		return SIM_BULK_NONE;
	b.kend = kend;
	if (b.e > b.a)
		stream_run(s, &b);
	if (b.sched)      /* the window's takes and core edges, the latter possibly none */
		s->gemm.mac_budget = b.budget_end;
	if (kend > s->core_cycle + 1)
		core_bulk(s, &b, kend - 1 - s->core_cycle);
	last = s->axi_cycle * s->axi_ps;
	if (s->core_cycle * s->core_ps > last)
		last = s->core_cycle * s->core_ps;
	if (last > s->now_ps)
		s->now_ps = last;
	return SIM_BULK_DONE;
}
