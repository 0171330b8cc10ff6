// SPDX-License-Identifier: MIT
/*
 * The six AXI DataMover channels behind their command/status helper pages (docs/registers.md):
 * channels 0-3 read weight streams into the four weight FIFOs (MM2S), 4 reads host data into
 * the fmap FIFO (MM2S), 5 writes the result FIFO to host memory (S2MM).
 *
 * A command (PG022 layout) is parsed when pushed; the channel runs one command at a time in
 * AXI clock cycles: reads are split into bursts of at most 16 beats that do not cross 4 KiB,
 * at most dm_outstanding in flight and only while the destination FIFO has room for them;
 * each burst is booked on the DDR model, its data reaches the port after the read latency and
 * moves one beat per AXI cycle (the 128-bit port). Writes collect a burst from the result FIFO
 * then book it. When all bytes have moved the status byte (tag, OKAY) is pushed; a channel
 * starts a command only while its status FIFO has room.
 *
 * Errors: BTT of 0, not a multiple of 16, TYPE = FIXED or an unaligned address end the command
 * with INTERR; an address beyond DMA_ADDR_BITS with DECERR; an address range outside every
 * window the host opened (the shadow IOMMU) with DECERR and the device error DMA_WINDOW. Each
 * sets the channel's sticky error bit, which stops the channel until ERR_W1C or RESET, and
 * the device's ERROR register (the device halts).
 */
#include <string.h>

#include "sim_int.h"

#define STICKY_INTERR   0x1u
#define STICKY_DECERR   0x2u
#define STICKY_SLVERR   0x4u
#define STICKY_OVERFLOW 0x8u

static const char *const dm_track[PCCX_DM_CHANNELS] = { "dm0 hp0", "dm1 hp1", "dm2 hp2",
							 "dm3 hp3", "dm4 fmap", "dm5 result" };

void pccx__sim_dm_reset(struct pccx_sim *s, struct sim_dm *dm)
{
	unsigned ch = dm->ch;
	struct sim_beatq *q = dm->q;
	bool write = dm->write;

	(void)s;
	memset(dm, 0, sizeof(*dm));
	dm->ch = ch;
	dm->q = q;
	dm->write = write;
}

void pccx__sim_dm_init(struct pccx_sim *s)
{
	unsigned ch;

	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++) {
		struct sim_dm *dm = &s->dm[ch];

		dm->ch = ch;
		dm->write = ch == PCCX_DM_RESULT;
		dm->q = ch < PCCX_WSTREAM_PORTS ? &s->wq[ch] :
			ch == PCCX_DM_FMAP ? &s->fmapq : &s->resq;
		pccx__sim_dm_reset(s, dm);
	}
}

bool pccx__sim_dm_busy(const struct pccx_sim *s)
{
	unsigned ch;

	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++) {
		const struct sim_dm *dm = &s->dm[ch];

		if (dm->active || (dm->cmd_level && !(dm->sticky & 7u)))
			return true;
	}
	return false;
}

bool pccx__sim_dm_outstanding(const struct pccx_sim *s)
{
	unsigned ch;

	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++)
		if (s->dm[ch].active || s->dm[ch].cmd_level)
			return true;
	return false;
}

/* ---- registers --------------------------------------------------------------------------- */

static void push_cmd(struct pccx_sim *s, struct sim_dm *dm)
{
	struct sim_dm_cmd *c;

	if (dm->cmd_level >= s->cfg.dm_fifo_depth) {
		dm->sticky |= STICKY_OVERFLOW;
		return;
	}
	c = &dm->cmd[(dm->cmd_head + dm->cmd_level) % 256u];
	c->btt = dm->cmd_lo & PCCX_DM_BTT_MAX;
	c->type_incr = (dm->cmd_lo & PCCX_DM_CMD_TYPE_INCR) != 0;
	c->addr = dm->cmd_hi;
	if (s->cfg.dma_address_bits > 32)
		c->addr |= (uint64_t)dm->addr_hi << 32;
	c->tag = (uint8_t)(dm->cmd_ext & PCCX_DM_EXT_TAG_MASK);
	c->window = (s->cfg.rowmask || s->cfg.colskip) && (dm->cmd_ext & PCCX_DM_EXT_WINDOW);
	dm->addr_hi = 0;     /* applies to the next pushed command only */
	dm->cmd_level++;
}

uint32_t pccx__sim_dm_read(struct pccx_sim *s, unsigned ch, uint32_t reg)
{
	struct sim_dm *dm;
	uint32_t v;

	if (ch >= PCCX_DM_CHANNELS)
		return 0;
	dm = &s->dm[ch];
	switch (reg) {
	case PCCX_DM_CMD_LO:
		return dm->cmd_lo;
	case PCCX_DM_CMD_HI:
		return dm->cmd_hi;
	case PCCX_DM_CMD_EXT:
		return dm->cmd_ext;
	case PCCX_DM_STS_POP:
		if (!dm->sts_level)
			return 0;
		v = dm->sts[dm->sts_head];
		dm->sts_head = (dm->sts_head + 1) % 256u;
		dm->sts_level--;
		return v;
	case PCCX_DM_FLAGS:
		v = (uint32_t)dm->sticky << PCCX_DM_FLAG_ERR_SHIFT;
		if (!dm->cmd_level)
			v |= PCCX_DM_FLAG_CMD_EMPTY;
		if (dm->cmd_level >= s->cfg.dm_fifo_depth)
			v |= PCCX_DM_FLAG_CMD_FULL;
		if (!dm->sts_level)
			v |= PCCX_DM_FLAG_STS_EMPTY;
		if (dm->sts_level >= s->cfg.dm_fifo_depth)
			v |= PCCX_DM_FLAG_STS_FULL;
		return v;
	case PCCX_DM_CMD_LVL:
		return dm->cmd_level;
	case PCCX_DM_STS_LVL:
		return dm->sts_level;
	case PCCX_DM_CMD_ADDR_HI:
		return dm->addr_hi;
	}
	return 0;
}

void pccx__sim_dm_write(struct pccx_sim *s, unsigned ch, uint32_t reg, uint32_t v)
{
	struct sim_dm *dm;

	if (ch >= PCCX_DM_CHANNELS)
		return;
	dm = &s->dm[ch];
	switch (reg) {
	case PCCX_DM_CMD_LO:
		dm->cmd_lo = v;
		break;
	case PCCX_DM_CMD_HI:
		dm->cmd_hi = v;
		break;
	case PCCX_DM_CMD_EXT:
		dm->cmd_ext = v & 0xffffu;
		break;
	case PCCX_DM_CMD_PUSH:
		push_cmd(s, dm);
		break;
	case PCCX_DM_ERR_W1C:
		/* either the nibble's own position or FLAGS' [7:4] clears */
		dm->sticky &= (uint8_t)~((v | (v >> PCCX_DM_FLAG_ERR_SHIFT)) & 0xfu);
		break;
	case PCCX_DM_CMD_ADDR_HI:
		if (s->cfg.dma_address_bits > 32)
			dm->addr_hi = v;
		break;
	}
}

/* ---- execution ---------------------------------------------------------------------------- */

static void post_status(struct pccx_sim *s, struct sim_dm *dm, uint8_t sts)
{
	dm->sts[(dm->sts_head + dm->sts_level) % 256u] = sts;
	dm->sts_level++;
	s->irq_status |= PCCX_IRQ_DM;
	pccx__sim_trace_event(s, dm_track[dm->ch], (sts & PCCX_DM_STS_OKAY) ? "cmd" : "cmd error",
			      dm->start_ps, s->now_ps + s->axi_ps, dm->cur.btt);
}

static void fail_cmd(struct pccx_sim *s, struct sim_dm *dm, uint8_t sts_bit, uint32_t cause,
		     uint64_t addr)
{
	uint8_t sticky = sts_bit == PCCX_DM_STS_INTERR ? STICKY_INTERR :
			 sts_bit == PCCX_DM_STS_DECERR ? STICKY_DECERR : STICKY_SLVERR;

	dm->sticky |= sticky;
	dm->active = false;
	s->st.dm_errors++;
	post_status(s, dm, (uint8_t)(dm->cur.tag | sts_bit));
	pccx__sim_set_error(s, cause, 0, s->issued_job, addr);
}

/* The shadow IOMMU: the whole range must lie in one window that allows the access. */
static uint8_t *translate(struct pccx_sim *s, uint64_t addr, uint64_t len, bool write,
			  uint64_t *fault)
{
	struct sim_window *w = pccx__sim_window_find(s, addr);
	uint32_t need = write ? PCCX_SIM_WIN_WRITE : PCCX_SIM_WIN_READ;

	if (!w || !(w->access & need)) {
		*fault = addr;
		return NULL;
	}
	if (len > w->len - (addr - w->base)) {
		*fault = w->base + w->len;
		return NULL;
	}
	return w->host + (addr - w->base);
}

/* The window's reads have all delivered (or it has none): its one status. */
static void window_end(struct pccx_sim *s, struct sim_dm *dm)
{
	dm->win = false;
	dm->active = false;
	dm->cur = dm->win_cmd;
	post_status(s, dm, (uint8_t)(dm->win_cmd.tag | PCCX_DM_STS_OKAY));
}

/* A window starts: its first read, or its status when it has none. */
static void window_start(struct pccx_sim *s, struct sim_dm *dm)
{
	dm->issued = dm->delivered = 0;
	dm->b_head = dm->b_level = 0;
	dm->win_last = false;
	dm->win_got = 0;
	if (!pccx__sim_win_next(s, dm)) {
		window_end(s, dm);
		return;
	}
	dm->active = true;
}

void pccx__sim_dm_win_advance(struct pccx_sim *s, struct sim_dm *dm)
{
	s->st.dm_bytes[dm->ch] += dm->cur.btt;
	if (pccx__sim_win_next(s, dm))
		dm->issued = 0;
	else
		dm->win_last = true;
}

static void start_cmd(struct pccx_sim *s, struct sim_dm *dm)
{
	struct sim_dm_cmd *c;
	uint64_t fault = 0;

	if (dm->active || !dm->cmd_level || (dm->sticky & 7u) ||
	    dm->sts_level >= s->cfg.dm_fifo_depth || !pccx__sim_win_ready(s, dm))
		return;
	c = &dm->cmd[dm->cmd_head];
	dm->cur = *c;
	dm->cmd_head = (dm->cmd_head + 1) % 256u;
	dm->cmd_level--;
	dm->start_ps = s->now_ps;
	s->st.dm_cmds[dm->ch]++;
	if (!c->btt || c->btt % SIM_BEAT || !c->type_incr || c->addr % SIM_BEAT ||
	    (c->window && dm->ch >= PCCX_WSTREAM_PORTS)) {
		fail_cmd(s, dm, PCCX_DM_STS_INTERR, PCCX_CAUSE_DMA_INTERR, c->addr);
		return;
	}
	if (s->cfg.dma_address_bits < 64 &&
	    (c->addr + c->btt - 1) >> s->cfg.dma_address_bits) {
		fail_cmd(s, dm, PCCX_DM_STS_DECERR, PCCX_CAUSE_DMA_DECERR, c->addr);
		return;
	}
	dm->host = translate(s, c->addr, c->btt, dm->write, &fault);
	if (!dm->host) {
		s->st.window_faults++;
		fail_cmd(s, dm, PCCX_DM_STS_DECERR, PCCX_CAUSE_DMA_WINDOW, fault);
		return;
	}
	if (c->window) {
		if (!pccx__sim_win_open(s, dm, dm->host)) {
			fail_cmd(s, dm, PCCX_DM_STS_INTERR, PCCX_CAUSE_DMA_INTERR, c->addr);
			return;
		}
		window_start(s, dm);
		return;
	}
	dm->active = true;
	dm->issued = dm->delivered = 0;
	dm->b_head = dm->b_level = 0;
	dm->wr_fill = 0;
}

/* Bytes of the next burst at offset `done` of the command. */
static uint32_t burst_bytes(const struct pccx_sim *s, const struct sim_dm *dm, uint64_t done)
{
	uint64_t addr = dm->cur.addr + done;
	uint64_t n = s->cfg.ddr_burst_bytes, left = dm->cur.btt - done;
	uint64_t to4k = 4096 - (addr & 4095);

	if (n > left)
		n = left;
	if (n > to4k)
		n = to4k;
	return (uint32_t)n;
}

static void finish_cmd(struct pccx_sim *s, struct sim_dm *dm)
{
	dm->active = false;
	s->st.dm_bytes[dm->ch] += dm->cur.btt;
	post_status(s, dm, (uint8_t)(dm->cur.tag | PCCX_DM_STS_OKAY));
}

static void mm2s_tick(struct pccx_sim *s, struct sim_dm *dm)
{
	struct sim_beatq *q = dm->q;

	/* deliver: one beat per AXI cycle from the oldest burst whose data has arrived */
	if (dm->b_level) {
		struct sim_burst *b = &dm->burst[dm->b_head];

		if (b->ready_ps <= s->now_ps) {
			const uint8_t *src = b->host + (size_t)b->done * SIM_BEAT;

			q->reserved--;
			if (q->span_cap)
				pccx__sim_wq_push(q, src, 1);
			else
				sim_beatq_push(q, src);
			dm->delivered += SIM_BEAT;
			dm->win_got += SIM_BEAT;
			if (++b->done == b->beats) {
				dm->b_head = (dm->b_head + 1) % SIM_MAX_BURSTS;
				dm->b_level--;
			}
		}
	}
	/* issue: one burst address per AXI cycle, only with room for its data */
	if (dm->issued < dm->cur.btt && dm->b_level < s->cfg.dm_outstanding) {
		uint32_t bytes = burst_bytes(s, dm, dm->issued), beats = bytes / SIM_BEAT;

		if (sim_beatq_room(q) >= beats) {
			uint32_t slot = (dm->b_head + dm->b_level) % SIM_MAX_BURSTS;
			struct sim_burst *b = &dm->burst[slot];

			b->addr = dm->cur.addr + dm->issued;
			b->host = dm->host + dm->issued;
			b->beats = beats;
			b->done = 0;
			b->ready_ps = pccx__sim_ddr_access(s, s->now_ps, b->addr, bytes, 0) +
				      s->cfg.ddr_read_latency_ps;
			dm->b_level++;
			q->reserved += beats;
			dm->issued += bytes;
		} else if (!dm->b_level) {
			s->dm_full_ps[dm->ch] += s->axi_ps;
		}
	}
	if (dm->win) {
		/* the next read's bursts follow the last of this one's (window.c) */
		if (!dm->win_last && dm->issued == dm->cur.btt)
			pccx__sim_dm_win_advance(s, dm);
		if (dm->win_last && !dm->b_level)
			window_end(s, dm);
	} else if (dm->delivered == dm->cur.btt) {
		finish_cmd(s, dm);
	}
}

static void s2mm_tick(struct pccx_sim *s, struct sim_dm *dm)
{
	struct sim_beatq *q = dm->q;
	uint64_t collected = dm->issued + (uint64_t)dm->wr_fill * SIM_BEAT;

	/* retire write responses */
	while (dm->b_level && dm->burst[dm->b_head].ready_ps <= s->now_ps) {
		dm->b_head = (dm->b_head + 1) % SIM_MAX_BURSTS;
		dm->b_level--;
	}
	/* collect one beat per AXI cycle into the next burst; the host memory gets it now */
	if (collected < dm->cur.btt && q->level && dm->b_level < s->cfg.dm_outstanding) {
		uint32_t bytes = burst_bytes(s, dm, dm->issued);

		/* what the weight streams delivered is read before the device writes memory */
		pccx__sim_wq_settle(s, dm->host + collected, SIM_BEAT);
		sim_beatq_pop(q, dm->host + collected);
		dm->wr_fill++;
		if ((uint64_t)dm->wr_fill * SIM_BEAT == bytes) {
			uint32_t slot = (dm->b_head + dm->b_level) % SIM_MAX_BURSTS;
			struct sim_burst *b = &dm->burst[slot];

			b->addr = dm->cur.addr + dm->issued;
			b->beats = dm->wr_fill;
			b->ready_ps = pccx__sim_ddr_access(s, s->now_ps, b->addr, bytes, 1) +
				      s->cfg.ddr_write_resp_ps;
			dm->b_level++;
			dm->issued += bytes;
			dm->wr_fill = 0;
		}
	}
	if (dm->issued == dm->cur.btt && !dm->b_level)
		finish_cmd(s, dm);
}

void pccx__sim_dm_axi_tick(struct pccx_sim *s)
{
	unsigned i, rr = (unsigned)(s->axi_cycle % PCCX_DM_CHANNELS);

	/* Round robin: a different channel books the DDR first each cycle (derived from the
	 * cycle count, so skipping quiet cycles changes nothing). */
	for (i = 0; i < PCCX_DM_CHANNELS; i++) {
		struct sim_dm *dm = &s->dm[(rr + i) % PCCX_DM_CHANNELS];

		if (!dm->active) {
			if (!dm->cmd_level)
				continue;
			start_cmd(s, dm);
			if (!dm->active)
				continue;
		}
		s->dm_busy_ps[dm->ch] += s->axi_ps;
		if (dm->write)
			s2mm_tick(s, dm);
		else
			mm2s_tick(s, dm);
	}
}
