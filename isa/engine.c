// SPDX-License-Identifier: MIT
/*
 * The command engine (docs/registers.md, "How the command engine drives a job").
 *
 * For each instruction in order, while the instruction FIFO has room: the instruction word,
 * then the DataMover commands it needs (its MEMCPY host descriptor on channel 4 or 5; its
 * per-port weight-stream bytes on channels 0-3, taken in order from the job's stream
 * descriptors of each port), each split at PCCX_ENGINE_CHUNK bytes and where the translation
 * is not contiguous, pushed while the channel has room. The word goes first so that bytes a
 * DataMover delivers always have a queued or running instruction to consume them: a host that
 * stalls anywhere in this sequence (preempted, interrupted, slow link) makes the device wait,
 * never fault. What an instruction needs comes from
 * pccx__insn_effects() over a shape state the engine keeps as the words go by, the same
 * function the validator and the device's interlocks use. After the last word, stream bytes
 * the descriptors still hold are pushed too, so a job that provides more than it consumes is
 * caught by the device (STREAM_OVERRUN) instead of being silently cut.
 *
 * DataMover statuses are popped when IRQ_STATUS.DM says some arrived (the bit is cleared
 * first, so none is missed); each must carry the next expected tag of its channel and OKAY.
 * The job is done when every word and command is pushed, every status checked, STATUS.IDLE
 * is set and RETIRED equals the job's length.
 */
#include "pccx_engine.h"

#define DM_REG(ch, r) (PCCX_DM_PAGE(ch) + (r))

static uint64_t rd64(struct pccx_engine_ctx *e, uint32_t off)
{
	e->mmio++;
	return e->ops->rd64(e->io, off);
}

static void wr64(struct pccx_engine_ctx *e, uint32_t off, uint64_t v)
{
	e->mmio++;
	e->ops->wr64(e->io, off, v);
}

static uint32_t rd32(struct pccx_engine_ctx *e, uint32_t off)
{
	e->mmio++;
	return e->ops->rd32(e->io, off);
}

static void wr32(struct pccx_engine_ctx *e, uint32_t off, uint32_t v)
{
	e->mmio++;
	e->ops->wr32(e->io, off, v);
}

static int fail(struct pccx_engine_ctx *e, int kind, uint64_t error, uint64_t info, uint32_t ch)
{
	e->err.kind = kind;
	e->err.error = error;
	e->err.info = info;
	e->err.channel = ch;
	e->err.insn = e->next;
	e->state = PCCX_ENGINE_ERROR;
	return e->state;
}

const char *pccx__engine_fail_name(int kind)
{
	switch (kind) {
	case PCCX_EF_NONE:
		return "NONE";
	case PCCX_EF_NODEV:
		return "NODEV";
	case PCCX_EF_BUSY:
		return "BUSY";
	case PCCX_EF_DEVICE:
		return "DEVICE";
	case PCCX_EF_DM_STATUS:
		return "DM_STATUS";
	case PCCX_EF_DM_TAG:
		return "DM_TAG";
	case PCCX_EF_XLATE:
		return "XLATE";
	case PCCX_EF_ADDR:
		return "ADDR";
	case PCCX_EF_RETIRED:
		return "RETIRED";
	case PCCX_EF_JOB:
		return "JOB";
	}
	return "?";
}

/* Next stream descriptor of `port` after index i (n_stream if none). */
static uint32_t next_sdesc(const struct pccx_engine_ctx *e, unsigned port, uint32_t i)
{
	for (; i < e->job.n_stream; i++)
		if (e->job.stream[i].port == port)
			return i;
	return e->job.n_stream;
}

int pccx__engine_start(struct pccx_engine_ctx *e, const struct pccx_job_view *job,
		       const struct pccx_engine_ops *ops, void *io, pccx_engine_xlate_fn xlate,
		       void *xctx)
{
	uint64_t id, caps, st;
	unsigned i, j;

	e->ops = ops;
	e->io = io;
	e->xlate = xlate;
	e->xctx = xctx;
	e->job = *job;
	e->next = 0;
	e->prepared = false;
	e->word_pushed = false;
	e->tail = false;
	e->dma = 0;
	e->dma_done = 0;
	e->n_wpend = 0;
	e->n_rpend = 0;
	e->n_whandle = 0;
	for (i = 0; i < job->n_dma && e->n_whandle <= PCCX_ENGINE_WHANDLES; i++) {
		if (job->dma[i].flags != PCCX_DMA_FROM_DEVICE)
			continue;
		for (j = 0; j < e->n_whandle && e->whandle[j] != job->dma[i].handle; j++)
			;
		if (j == e->n_whandle) {
			if (e->n_whandle < PCCX_ENGINE_WHANDLES)
				e->whandle[e->n_whandle] = job->dma[i].handle;
			e->n_whandle++;
		}
	}
	e->retired = 0;
	e->progress = 0;
	e->mmio = 0;
	e->state = PCCX_ENGINE_RUNNING;
	e->err.kind = PCCX_EF_NONE;
	e->err.error = e->err.info = 0;
	e->err.channel = e->err.insn = 0;
	pccx__shape_reset(&e->shape);
	for (i = 0; i < PCCX_DM_CHANNELS; i++) {
		e->ch[i].pushed = e->ch[i].popped = 0;
		e->ch[i].need = 0;
		e->ch[i].window = false;
		for (j = 0; j < 16; j++)
			e->ch[i].tag[j] = 0;
	}
	for (i = 0; i < PCCX_WSTREAM_PORTS; i++) {
		e->sidx[i] = next_sdesc(e, i, 0);
		e->soff[i] = 0;
	}

	id = rd64(e, PCCX_REG_ID);
	if ((id >> 32) != PCCX_ID_MAGIC || ((id >> 24) & 0xff) != PCCX_ID_MAJOR)
		return fail(e, PCCX_EF_NODEV, 0, id, 0);
	caps = rd64(e, PCCX_REG_CAPS);
	e->fifo_depth = (uint32_t)((caps >> 32) & 0xff);
	e->dm_depth = (uint32_t)((caps >> 56) & 0xff);
	e->l2_words = (uint32_t)caps;
	if (!e->fifo_depth || !e->dm_depth)
		return fail(e, PCCX_EF_NODEV, 0, caps, 0);
	e->wide = (rd64(e, PCCX_REG_FEATURES) & PCCX_FEAT_WIDE_DMA) != 0;
	e->addr_bits = (uint32_t)rd64(e, PCCX_REG_DMA_ADDR_BITS);
	if (e->addr_bits < 32 || e->addr_bits > 64 || (!e->wide && e->addr_bits > 32))
		e->addr_bits = 32;
	st = rd64(e, PCCX_REG_STATUS);
	if (!(st & PCCX_STATUS_IDLE) || (st & (PCCX_STATUS_ERROR | PCCX_STATUS_HALTED)))
		return fail(e, PCCX_EF_BUSY, 0, st, 0);
	wr64(e, PCCX_REG_RETIRED, 0);
	wr64(e, PCCX_REG_IRQ_STATUS, PCCX_IRQ_IDLE | PCCX_IRQ_ERROR | PCCX_IRQ_DM);
	return e->state;
}

/* ---- DataMover commands --------------------------------------------------------------- */

static bool chan_room(struct pccx_engine_ctx *e, unsigned ch)
{
	struct pccx_engine_chan *c = &e->ch[ch];
	uint32_t out = c->pushed - c->popped;

	if (out >= PCCX_ENGINE_MAX_OUT)
		return false;
	if (out < e->dm_depth)
		return true;    /* the command FIFO holds at most what is outstanding */
	return rd32(e, DM_REG(ch, PCCX_DM_CMD_LVL)) < e->dm_depth;
}

static int push_cmd(struct pccx_engine_ctx *e, unsigned ch, uint64_t addr, uint32_t btt)
{
	struct pccx_engine_chan *c = &e->ch[ch];
	uint8_t tag = (uint8_t)(c->pushed & PCCX_DM_EXT_TAG_MASK);

	if (addr + btt - 1 < addr || (e->addr_bits < 64 && ((addr + btt - 1) >> e->addr_bits)))
		return fail(e, PCCX_EF_ADDR, 0, addr, ch);
	if (e->wide)
		wr32(e, DM_REG(ch, PCCX_DM_CMD_ADDR_HI), (uint32_t)(addr >> 32));
	wr32(e, DM_REG(ch, PCCX_DM_CMD_LO), btt | PCCX_DM_CMD_TYPE_INCR | PCCX_DM_CMD_EOF);
	wr32(e, DM_REG(ch, PCCX_DM_CMD_HI), (uint32_t)addr);
	wr32(e, DM_REG(ch, PCCX_DM_CMD_EXT), tag | (c->window ? PCCX_DM_EXT_WINDOW : 0u));
	wr32(e, DM_REG(ch, PCCX_DM_CMD_PUSH), 1);
	c->tag[c->pushed % 16] = tag;
	c->pushed++;
	e->progress++;
	return PCCX_ENGINE_RUNNING;
}

/* Translate and push one chunk of (handle, offset, len); *done = bytes commanded (0: no room). */
static int feed_chunk(struct pccx_engine_ctx *e, unsigned ch, uint32_t handle, uint64_t offset,
		      uint64_t len, uint64_t *done)
{
	uint64_t addr = 0, contig = 0;

	*done = 0;
	if (len > PCCX_ENGINE_CHUNK)
		len = PCCX_ENGINE_CHUNK;
	if (!chan_room(e, ch))
		return PCCX_ENGINE_RUNNING;
	if (!e->xlate || e->xlate(e->xctx, handle, offset, len, &addr, &contig) || contig < 16 ||
	    contig % 16)
		return fail(e, PCCX_EF_XLATE, 0, offset, ch);
	if (contig < len)
		len = contig;
	if (push_cmd(e, ch, addr, (uint32_t)len))
		return e->state;
	*done = len;
	return PCCX_ENGINE_RUNNING;
}

/* Drop tracked device writes whose DataMover statuses have been popped. */
static void retire_writes(struct pccx_engine_ctx *e)
{
	uint32_t i = 0;

	while (i < e->n_wpend) {
		if (e->ch[PCCX_DM_RESULT].popped >= e->wpend[i].done_at)
			e->wpend[i] = e->wpend[--e->n_wpend];
		else
			i++;
	}
}

/*
 * Sequential semantics through host memory: a weight stream must not read bytes an earlier
 * MEMCPY of the job writes to the host (e.g. the KV row stored this step) before that write
 * has landed. True when [offset, offset+len) of `handle` overlaps an unconfirmed write.
 */
static bool stream_must_wait(struct pccx_engine_ctx *e, uint32_t handle, uint64_t offset,
			     uint64_t len)
{
	uint32_t i;

	retire_writes(e);
	for (i = 0; i < e->n_wpend; i++)
		if (e->wpend[i].handle == handle && offset < e->wpend[i].hi &&
		    e->wpend[i].lo < offset + len)
			return true;
	return false;
}

/* Whether the job's MEMCPYs write buffer `handle` (its stream reads are then tracked). */
static bool job_writes(const struct pccx_engine_ctx *e, uint32_t handle)
{
	uint32_t i;

	if (e->n_whandle > PCCX_ENGINE_WHANDLES)
		return true;
	for (i = 0; i < e->n_whandle; i++)
		if (e->whandle[i] == handle)
			return true;
	return false;
}

/* Drop tracked stream reads whose DataMover statuses have been popped. */
static void retire_reads(struct pccx_engine_ctx *e)
{
	uint32_t i = 0;

	while (i < e->n_rpend) {
		if (e->ch[e->rpend[i].ch].popped >= e->rpend[i].done_at)
			e->rpend[i] = e->rpend[--e->n_rpend];
		else
			i++;
	}
}

/*
 * The entry to track a stream command of channel ch reading [offset, ...) of `handle` in: one
 * whose read it continues (it is extended), else a free one once older reads are confirmed;
 * -1 when every entry is still taken.
 */
static int read_slot(struct pccx_engine_ctx *e, unsigned ch, uint32_t handle, uint64_t offset)
{
	uint32_t i;

	for (i = 0; i < e->n_rpend; i++)
		if (e->rpend[i].ch == ch && e->rpend[i].handle == handle &&
		    e->rpend[i].hi == offset)
			return (int)i;
	retire_reads(e);
	return e->n_rpend < PCCX_ENGINE_RPEND ? (int)e->n_rpend : -1;
}

/* Command [offset, offset + len) of channel ch pushed, tracked in entry i (read_slot). */
static void track_read(struct pccx_engine_ctx *e, uint32_t i, unsigned ch, uint32_t handle,
		       uint64_t offset, uint64_t len)
{
	if (i == e->n_rpend) {
		e->rpend[i].ch = ch;
		e->rpend[i].handle = handle;
		e->rpend[i].lo = offset;
		e->n_rpend++;
	}
	e->rpend[i].hi = offset + len;
	e->rpend[i].done_at = e->ch[ch].pushed;
}

/*
 * Sequential semantics the other way: a MEMCPY must not overwrite host bytes a weight stream
 * of an earlier instruction has yet to read (a prompt chunk's next token stores its KV row in
 * the ring slot the previous token's attention still streams). True when [lo, hi) of
 * `handle` overlaps a stream read not yet confirmed.
 */
static bool write_must_wait(struct pccx_engine_ctx *e, uint32_t handle, uint64_t lo, uint64_t hi)
{
	uint32_t i;

	retire_reads(e);
	for (i = 0; i < e->n_rpend; i++)
		if (e->rpend[i].handle == handle && lo < e->rpend[i].hi && e->rpend[i].lo < hi)
			return true;
	return false;
}

/* Push what channel `ch` still needs for the current instruction; true when all is pushed. */
static bool feed_channel(struct pccx_engine_ctx *e, unsigned ch)
{
	struct pccx_engine_chan *c = &e->ch[ch];
	uint64_t done;

	while (c->need && e->state == PCCX_ENGINE_RUNNING) {
		if (ch < PCCX_WSTREAM_PORTS) {
			const struct pccx_stream_desc *d;
			uint64_t avail;
			int slot;	/* read_slot's entry; -2: a buffer no MEMCPY writes */

			if (e->sidx[ch] >= e->job.n_stream) {
				/* The descriptors ran out: the device will wait for the
				 * rest and the caller's timeout reports it. */
				c->need = 0;
				break;
			}
			d = &e->job.stream[e->sidx[ch]];
			avail = d->length - e->soff[ch];
			if (!avail) {
				e->sidx[ch] = next_sdesc(e, ch, e->sidx[ch] + 1);
				e->soff[ch] = 0;
				continue;
			}
			if (stream_must_wait(e, d->handle, d->offset + e->soff[ch],
					     c->need < avail ? c->need : avail))
				return false;
			slot = job_writes(e, d->handle) ?
				       read_slot(e, ch, d->handle, d->offset + e->soff[ch]) : -2;
			if (slot == -1)
				return false;	/* every tracked read still unconfirmed */
			if (feed_chunk(e, ch, d->handle, d->offset + e->soff[ch],
				       c->need < avail ? c->need : avail, &done))
				return false;
			if (!done)
				return false;
			if (slot >= 0)
				track_read(e, (uint32_t)slot, ch, d->handle, d->offset + e->soff[ch],
					   done);
			e->soff[ch] += done;
			if (c->need != ~0ull)
				c->need -= done;
		} else {
			if (feed_chunk(e, ch, e->dma->handle, e->dma->offset + e->dma_done, c->need,
				       &done) || !done)
				return false;
			e->dma_done += done;
			c->need -= done;
		}
	}
	return c->need == 0;
}

/* Work out what the next word needs. Words the device will refuse need nothing. */
static int prepare(struct pccx_engine_ctx *e)
{
	struct pccx_insn in;
	struct pccx_effects fx;
	struct pccx_isa_fault f;
	unsigned p;

	e->prepared = true;
	if (pccx__decode(e->job.insn[e->next], &in, &f) ||
	    pccx__insn_effects(&in, &e->shape, e->l2_words, &fx, &f))
		return PCCX_ENGINE_RUNNING;
	if (in.opcode == PCCX_OP_MEMSET)
		pccx__shape_apply(&e->shape, &in);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		e->ch[p].need = fx.port_bytes[p];
		e->ch[p].window = fx.window;
	}
	if (fx.dma >= 0) {
		if ((uint32_t)fx.dma >= e->job.n_dma)
			return fail(e, PCCX_EF_JOB, 0, (uint64_t)fx.dma, 0);
		e->dma = &e->job.dma[fx.dma];
		e->dma_done = 0;
		e->ch[fx.dma_flags == PCCX_DMA_TO_DEVICE ? PCCX_DM_FMAP : PCCX_DM_RESULT].need =
			e->dma->length;
	}
	return PCCX_ENGINE_RUNNING;
}

static bool feed_all(struct pccx_engine_ctx *e)
{
	bool all = true;
	unsigned ch;

	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++)
		if (e->ch[ch].need && !feed_channel(e, ch))
			all = false;
	return all && e->state == PCCX_ENGINE_RUNNING;
}

/* ---- statuses --------------------------------------------------------------------------- */

static int pop_statuses(struct pccx_engine_ctx *e)
{
	unsigned ch;

	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++) {
		struct pccx_engine_chan *c = &e->ch[ch];

		while (c->popped != c->pushed) {
			uint32_t sts = rd32(e, DM_REG(ch, PCCX_DM_STS_POP)) & 0xffu;

			if (!sts)
				break;          /* none (a real status has OKAY or an error bit) */
			if (!(sts & PCCX_DM_STS_OKAY) ||
			    (sts & (PCCX_DM_STS_INTERR | PCCX_DM_STS_DECERR | PCCX_DM_STS_SLVERR)))
				return fail(e, PCCX_EF_DM_STATUS, 0, sts, ch);
			if ((sts & PCCX_DM_STS_TAG_MASK) != c->tag[c->popped % 16])
				return fail(e, PCCX_EF_DM_TAG, 0, sts, ch);
			c->popped++;
			e->progress++;
		}
	}
	return PCCX_ENGINE_RUNNING;
}

static bool all_popped(const struct pccx_engine_ctx *e)
{
	unsigned ch;

	for (ch = 0; ch < PCCX_DM_CHANNELS; ch++)
		if (e->ch[ch].popped != e->ch[ch].pushed)
			return false;
	return true;
}

/* ---- the step ------------------------------------------------------------------------------ */

int pccx__engine_step(struct pccx_engine_ctx *e)
{
	uint64_t st, irq;
	uint32_t room, level;

	if (e->state != PCCX_ENGINE_RUNNING)
		return e->state;
	st = rd64(e, PCCX_REG_STATUS);
	if (st & PCCX_STATUS_ERROR) {
		uint64_t err = rd64(e, PCCX_REG_ERROR);

		return fail(e, PCCX_EF_DEVICE, err, rd64(e, PCCX_REG_ERROR_INFO), 0);
	}
	irq = rd64(e, PCCX_REG_IRQ_STATUS);
	if (irq & PCCX_IRQ_DM) {
		wr64(e, PCCX_REG_IRQ_STATUS, PCCX_IRQ_DM);
		if (pop_statuses(e))
			return e->state;
	}

	level = (uint32_t)((st & PCCX_STATUS_FIFO_MASK) >> PCCX_STATUS_FIFO_SHIFT);
	room = level < e->fifo_depth ? e->fifo_depth - level : 0;
	while (e->next < e->job.n_insn) {
		if (!e->word_pushed) {
			if (!room)
				break;
			if (!e->prepared && prepare(e))
				return e->state;
			/* a write to the host is tracked until its statuses confirm it
			 * (stream_must_wait): wait for older ones to land if the table is full */
			if (e->dma && e->dma->flags == PCCX_DMA_FROM_DEVICE) {
				retire_writes(e);
				if (e->n_wpend == PCCX_ENGINE_WPEND)
					return e->state;
				/* nor overwrite what an earlier stream has yet to read */
				if (write_must_wait(e, e->dma->handle, e->dma->offset,
						    e->dma->offset + e->dma->length))
					return e->state;
			}
			/* The word before its DataMover commands: stream bytes then never wait
			 * in the device without the instruction that consumes them, however
			 * long the host takes between two accesses. */
			wr64(e, PCCX_REG_INSTR, e->job.insn[e->next]);
			e->word_pushed = true;
			e->progress++;
			room--;
		}
		if (!feed_all(e))
			return e->state;
		if (e->dma && e->dma->flags == PCCX_DMA_FROM_DEVICE) {
			e->wpend[e->n_wpend].handle = e->dma->handle;
			e->wpend[e->n_wpend].lo = e->dma->offset;
			e->wpend[e->n_wpend].hi = e->dma->offset + e->dma->length;
			e->wpend[e->n_wpend].done_at = e->ch[PCCX_DM_RESULT].pushed;
			e->n_wpend++;
		}
		e->dma = NULL;
		e->next++;
		e->prepared = false;
		e->word_pushed = false;
	}
	if (e->next == e->job.n_insn && !e->tail) {
		unsigned p;

		for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
			if (e->sidx[p] < e->job.n_stream) {
				e->ch[p].need = ~0ull;
				e->ch[p].window = false;
			}
		if (!feed_all(e))
			return e->state;
		e->tail = true;
	}
	if (e->tail && all_popped(e)) {
		uint64_t r;

		/* STATUS first: RETIRED read after IDLE is final. */
		st = rd64(e, PCCX_REG_STATUS);
		r = rd64(e, PCCX_REG_RETIRED);
		if (r != e->retired) {
			e->retired = r;
			e->progress++;
		}
		if (st & PCCX_STATUS_ERROR)
			return PCCX_ENGINE_RUNNING;     /* reported by the next step */
		if ((st & PCCX_STATUS_IDLE) && all_popped(e)) {
			if (r != e->job.n_insn)
				return fail(e, PCCX_EF_RETIRED, 0, r, 0);
			e->state = PCCX_ENGINE_DONE;
		}
	}
	return e->state;
}
