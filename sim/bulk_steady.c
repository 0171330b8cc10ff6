// SPDX-License-Identifier: MIT
/*
 * The weight streams in their steady state: a bulk window's bursts booked in one pass, each
 * with a few closed-form steps instead of runs of cycles between events (bulk.c's ch_run).
 *
 * While a GEMV streams, each lane takes a beat every AXI cycle, and its DataMover books a
 * burst in the first cycle in which (after that cycle's pop and delivery) the FIFO has room
 * for it and fewer than dm_outstanding bursts are in flight, one per cycle at most. The room
 * only depends on the pops and the bursts booked (a delivery moves a beat from reserved to
 * held). The bursts in flight only depend on when earlier bursts delivered their last beat:
 * one beat per cycle from the oldest burst whose data has arrived, so burst j starts in
 * max(its arrival, the cycle after burst j - 1's last beat). So while every lane takes a beat
 * in every cycle, the cycle of a channel's next booking follows from its earlier bookings
 * alone, and the channels' bookings are made on the DDR model in the edge model's order (by
 * cycle, then in that cycle's round-robin order) by always booking the earliest next one.
 *
 * That rests on two assumptions, checked as the window runs: the lane's FIFO holds a beat at
 * every pop, and the channel never waits for room with no burst in flight while its command
 * has bursts to book (the edge model counts those cycles as "FIFO full"). When one fails,
 * the DDR model is put back as it was and the window runs through bulk.c's general path,
 * which covers every case. Both give the edge model's cycles, statistics and bytes;
 * test_sim_bulk compares them with it.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* Bursts booked per channel in one window at most (256 in the steady state). */
#define STEADY_MAX 1024u
/* Banks of the DDR model the saved state covers. */
#define STEADY_BANKS 64u
#define NO_KEY (~0ull)

struct steady_ch {
	bool on;                       /* its lane takes a beat every cycle */
	uint64_t key;                  /* next booking: cycle * 8 + round-robin rank, or NO_KEY */
	uint64_t c;                    /* ... its cycle */
	uint32_t bytes;                /* ... its bytes */
	uint64_t room0;                /* room in the FIFO before the window */
	uint64_t booked;               /* beats booked in the window */
	uint64_t iss;                  /* bytes of the command booked */
	uint64_t from;                 /* the first cycle the next burst can deliver in */
	uint64_t got;                  /* beats delivered in the window */
	uint32_t nb0, n;               /* bursts in flight before the window; booked in it */
	uint32_t ndone, part;          /* bursts whose last beat came in the window; beats of
					* the next one that did */
	bool tail;                     /* a beat delivered in the window's last cycle */
	uint64_t done[SIM_MAX_BURSTS + STEADY_MAX];  /* burst j's last beat's cycle (j counts
						       * from the oldest in flight) */
	uint64_t ready[STEADY_MAX];    /* the window's bursts: ready_ps, address, bytes */
	uint64_t addr[STEADY_MAX];
	uint32_t nbytes[STEADY_MAX];
};

struct steady {
	struct steady_ch ch[PCCX_WSTREAM_PORTS];
};

/* What pccx__sim_ddr_access() changes, to put back when an assumption fails. */
struct ddr_saved {
	struct sim_ddr d;
	uint64_t open_row[STEADY_BANKS];
	uint64_t refreshes, misses, turnarounds, bursts, rd, wr, busy;
};

static void ddr_save(const struct pccx_sim *s, struct ddr_saved *v)
{
	v->d = s->ddr;
	memcpy(v->open_row, s->ddr.open_row, s->cfg.ddr_banks * sizeof(v->open_row[0]));
	v->refreshes = s->st.ddr_refreshes;
	v->misses = s->st.ddr_row_misses;
	v->turnarounds = s->st.ddr_turnarounds;
	v->bursts = s->st.ddr_bursts;
	v->rd = s->st.ddr_read_bytes;
	v->wr = s->st.ddr_write_bytes;
	v->busy = s->ddr_busy_ps;
}

static void ddr_restore(struct pccx_sim *s, const struct ddr_saved *v)
{
	uint64_t *rows = s->ddr.open_row;

	s->ddr = v->d;
	s->ddr.open_row = rows;
	memcpy(rows, v->open_row, s->cfg.ddr_banks * sizeof(v->open_row[0]));
	s->st.ddr_refreshes = v->refreshes;
	s->st.ddr_row_misses = v->misses;
	s->st.ddr_turnarounds = v->turnarounds;
	s->st.ddr_bursts = v->bursts;
	s->st.ddr_read_bytes = v->rd;
	s->st.ddr_write_bytes = v->wr;
	s->ddr_busy_ps = v->busy;
}

/* Bytes of the burst at offset `done` of the channel's command (datamover.c's burst_bytes). */
static uint32_t burst_at(const struct pccx_sim *s, const struct sim_dm *dm, uint64_t done)
{
	uint64_t addr = dm->cur.addr + done, n = s->cfg.ddr_burst_bytes, left = dm->cur.btt - done;
	uint64_t to4k = 4096 - (addr & 4095);

	if (n > left)
		n = left;
	if (n > to4k)
		n = to4k;
	return (uint32_t)n;
}

/*
 * Burst j (`left` beats, data at the port from ready_ps) follows the one before: returns false
 * when the lane would find its FIFO empty in the cycle the burst starts to deliver (before
 * it, the level only falls; while it delivers, the level holds).
 */
static bool deliver(const struct pccx_sim *s, struct steady_ch *sc, uint64_t a, uint64_t e,
		    uint64_t lvl, uint32_t j, uint64_t ready_ps, uint32_t left)
{
	uint64_t d = sc->from;

	/* the data's cycle, when it comes after the burst before (no division otherwise) */
	if (ready_ps > d * s->axi_ps)
		d = (ready_ps + s->axi_ps - 1) / s->axi_ps;
	sc->from = d + left;
	sc->done[j] = d + left - 1;
	if (d >= e)
		return true;
	/* the lane's pop in cycle d comes before the delivery: the FIFO held a beat */
	if (lvl + sc->got < d - a + 1)
		return false;
	if (d + left >= e)
		sc->tail = true;     /* it delivers in the window's last cycle */
	if (d + left > e) {
		sc->part = (uint32_t)(e - d);
		sc->got += e - d;
	} else {
		sc->ndone++;
		sc->got += left;
	}
	return true;
}

/*
 * The cycle of channel p's next booking, or NO_KEY when it has none before e (or its
 * command none left). Returns false when the channel would wait for room with no burst in
 * flight before it.
 */
static bool next(const struct pccx_sim *s, unsigned p, struct steady_ch *sc, uint64_t a,
		 uint64_t e)
{
	const struct sim_dm *dm = &s->dm[p];
	uint32_t j = sc->nb0 + sc->n, out = s->cfg.dm_outstanding;
	uint64_t c = sc->n ? sc->c + 1 : a, need, idle;

	sc->key = NO_KEY;
	if (sc->iss >= dm->cur.btt)
		return true;
	sc->bytes = burst_at(s, dm, sc->iss);
	need = sc->booked + sc->bytes / SIM_BEAT;
	/* room after cycle c's pop: room0 + (c - a + 1) - booked */
	if (need > sc->room0 + 1 && a + need - sc->room0 - 1 > c)
		c = a + need - sc->room0 - 1;
	/* fewer than dm_outstanding in flight: burst j - out delivered its last beat */
	if (j >= out && sc->done[j - out] > c)
		c = sc->done[j - out];
	/* none in flight from `idle` on: the edge model counts "FIFO full" until c */
	idle = j ? sc->done[j - 1] : a;
	if (idle < e && idle < c)
		return false;
	if (c >= e)
		return true;
	sc->c = c;
	sc->key = c * 8 + (p + PCCX_DM_CHANNELS - c % PCCX_DM_CHANNELS) % PCCX_DM_CHANNELS;
	return true;
}

/* Channel p before the window: its bursts in flight placed, its first booking found. */
static bool start(const struct pccx_sim *s, unsigned p, struct steady_ch *sc, uint64_t a,
		  uint64_t e)
{
	const struct sim_dm *dm = &s->dm[p];
	const struct sim_beatq *q = dm->q;
	uint32_t j;

	sc->room0 = q->depth - q->level - q->reserved;
	sc->booked = sc->got = 0;
	sc->iss = dm->issued;
	sc->from = a;
	sc->nb0 = dm->b_level;
	sc->n = sc->ndone = sc->part = 0;
	sc->tail = false;
	sc->key = NO_KEY;
	for (j = 0; j < sc->nb0; j++) {
		const struct sim_burst *bu = &dm->burst[(dm->b_head + j) % SIM_MAX_BURSTS];

		if (!deliver(s, sc, a, e, q->level, j, bu->ready_ps, bu->beats - bu->done))
			return false;
	}
	if (!dm->active)
		return true;
	return next(s, p, sc, a, e);
}

/* Book channel p's next burst and find the one after. */
static bool book(struct pccx_sim *s, unsigned p, struct steady_ch *sc, uint64_t a, uint64_t e)
{
	const struct sim_dm *dm = &s->dm[p];
	uint32_t k = sc->n;
	uint64_t addr = dm->cur.addr + sc->iss;

	if (k == STEADY_MAX)
		return false;
	sc->ready[k] = pccx__sim_ddr_access(s, sc->c * s->axi_ps, addr, sc->bytes, 0) +
		       s->cfg.ddr_read_latency_ps;
	sc->addr[k] = addr;
	sc->nbytes[k] = sc->bytes;
	sc->n++;
	sc->booked += sc->bytes / SIM_BEAT;
	sc->iss += sc->bytes;
	if (!deliver(s, sc, a, e, dm->q->level, sc->nb0 + k, sc->ready[k],
		     sc->bytes / SIM_BEAT))
		return false;
	return next(s, p, sc, a, e);
}

/* In a gap at the window's end, the lane's last pop (cycle e - 1) found a beat. */
static bool end_ok(const struct pccx_sim *s, unsigned p, const struct steady_ch *sc,
		   uint64_t a, uint64_t e)
{
	return sc->tail || s->dm[p].q->level + sc->got >= e - a;
}

/* Channel p's DataMover as the edge model leaves it after the window. */
static void commit(struct pccx_sim *s, unsigned p, const struct steady_ch *sc)
{
	struct sim_dm *dm = &s->dm[p];
	uint32_t nb0 = dm->b_level, j, k;

	j = sc->ndone < nb0 ? sc->ndone : nb0;
	dm->b_head = (dm->b_head + j) % SIM_MAX_BURSTS;
	dm->b_level -= j;
	if (sc->ndone < nb0)
		dm->burst[dm->b_head].done += sc->part;
	for (k = sc->ndone > nb0 ? sc->ndone - nb0 : 0; k < sc->n; k++) {
		struct sim_burst *bu = &dm->burst[(dm->b_head + dm->b_level++) % SIM_MAX_BURSTS];

		bu->ready_ps = sc->ready[k];
		bu->addr = sc->addr[k];
		bu->beats = sc->nbytes[k] / SIM_BEAT;
		bu->done = nb0 + k == sc->ndone ? sc->part : 0;
	}
	dm->issued = sc->iss;
}

/* Every channel's bookings, the earliest first. */
static bool run(struct pccx_sim *s, struct steady *st, uint64_t a, uint64_t e)
{
	struct steady_ch *c0 = &st->ch[0], *c1 = &st->ch[1], *c2 = &st->ch[2], *c3 = &st->ch[3];

	for (;;) {
		uint64_t k0 = c0->key, k1 = c1->key, k2 = c2->key, k3 = c3->key;
		uint64_t m01 = k0 < k1 ? k0 : k1, m23 = k2 < k3 ? k2 : k3;
		uint64_t m = m01 < m23 ? m01 : m23;
		unsigned p;

		if (m == NO_KEY)
			return true;
		/* keys differ (a channel books once per cycle, the ranks of a cycle differ); no
		 * branch: which channel goes next is not predictable */
		p = (unsigned)(k1 == m) | (unsigned)(k2 == m) << 1 | (unsigned)(k3 == m) * 3u;
		if (!book(s, p, &st->ch[p], a, e))
			return false;
	}
}

bool pccx__sim_steady(struct pccx_sim *s, uint64_t a, uint64_t e, unsigned lanes,
		      uint32_t got[PCCX_WSTREAM_PORTS], uint32_t booked[PCCX_WSTREAM_PORTS])
{
	struct steady *st = s->steady;
	struct ddr_saved saved;
	unsigned p;

	if (s->dm[PCCX_DM_FMAP].active || s->cfg.ddr_banks > STEADY_BANKS)
		return false;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		if (!(lanes >> p & 1) && s->dm[p].active)
			return false;   /* filling ahead of its lane: bulk.c's general path */
	if (!st && !(st = s->steady = malloc(sizeof(*st))))
		return false;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct steady_ch *sc = &st->ch[p];

		sc->on = lanes >> p & 1;
		sc->key = NO_KEY;
		if (sc->on && !start(s, p, sc, a, e))
			goto missed;
	}
	ddr_save(s, &saved);
	if (!run(s, st, a, e)) {
		ddr_restore(s, &saved);
		goto missed;
	}
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		if (st->ch[p].on && !end_ok(s, p, &st->ch[p], a, e)) {
			ddr_restore(s, &saved);
			goto missed;
		}
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct steady_ch *sc = &st->ch[p];

		got[p] = sc->on ? (uint32_t)sc->got : 0;
		booked[p] = sc->on ? (uint32_t)sc->booked : 0;
		if (sc->on)
			commit(s, p, sc);
	}
	s->steady_windows++;
	return true;
missed:
	s->steady_missed++;
	return false;
}
