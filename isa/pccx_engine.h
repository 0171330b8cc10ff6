/* SPDX-License-Identifier: MIT */
/*
 * The command engine: feeds one job to a pccx v002 device through its registers, as
 * docs/registers.md "How the command engine drives a job" describes. Freestanding (compiled
 * into the kernel module, the firmware and the in-process backend): no allocation, no libc,
 * no floating point; register access and address translation are the caller's callbacks.
 *
 * Usage: pccx__engine_start(), then call pccx__engine_step() until it returns DONE or ERROR.
 * A step never blocks: it reads STATUS, pops DataMover statuses when the device says some are
 * there, pushes DataMover commands and instruction words while the FIFOs have room, and checks
 * for completion. Timeouts are the caller's: `progress` grows whenever the engine pushed or
 * popped something or RETIRED advanced, so "no progress for T" is the hang test. After an
 * error or a timeout the caller resets the device (RESET register) before the next job.
 */
#ifndef PCCX_ENGINE_H
#define PCCX_ENGINE_H

#include "pccx_job.h"
#include "pccx_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Register access at an offset from the device base. */
struct pccx_engine_ops {
	uint32_t (*rd32)(void *io, uint32_t off);
	void (*wr32)(void *io, uint32_t off, uint32_t v);
	uint64_t (*rd64)(void *io, uint32_t off);
	void (*wr64)(void *io, uint32_t off, uint64_t v);
};

/*
 * Translate `len` bytes at `offset` of buffer `handle` to a device address. Returns 0 and
 * fills *dev_addr and *contig (bytes contiguous in device space from there, 16 <= *contig <=
 * len, a multiple of 16), or non-zero if the range is not the device's to use.
 */
typedef int (*pccx_engine_xlate_fn)(void *ctx, uint32_t handle, uint64_t offset, uint64_t len,
				    uint64_t *dev_addr, uint64_t *contig);

enum pccx_engine_state { PCCX_ENGINE_RUNNING = 0, PCCX_ENGINE_DONE = 1, PCCX_ENGINE_ERROR = 2 };

enum pccx_engine_fail {
	PCCX_EF_NONE,
	PCCX_EF_NODEV,       /* ID does not hold the magic: not an extended pccx device */
	PCCX_EF_BUSY,        /* the device was not idle (or was halted) at start */
	PCCX_EF_DEVICE,      /* the device set ERROR: error/info hold ERROR and ERROR_INFO */
	PCCX_EF_DM_STATUS,   /* a DataMover status without OKAY: channel, info = status byte */
	PCCX_EF_DM_TAG,      /* a DataMover status with an unexpected tag */
	PCCX_EF_XLATE,       /* the translation callback refused a range: insn, channel */
	PCCX_EF_ADDR,        /* a device address wider than the device accepts */
	PCCX_EF_RETIRED,     /* idle, but RETIRED (info) differs from the job length */
	PCCX_EF_JOB,         /* a MEMCPY names a descriptor the job lacks */
};

struct pccx_engine_error {
	int kind;            /* enum pccx_engine_fail */
	uint64_t error;      /* ERROR register for PCCX_EF_DEVICE */
	uint64_t info;       /* ERROR_INFO, status byte, RETIRED or address */
	uint32_t channel;    /* DataMover channel, where one is involved */
	uint32_t insn;       /* the instruction being fed when it happened */
};

#define PCCX_ENGINE_CHUNK   ((1u << 23) - 16u)   /* BTT limit, kept a multiple of 16 */
#define PCCX_ENGINE_MAX_OUT 15u                  /* commands in flight per channel (4-bit tags) */

struct pccx_engine_chan {
	uint32_t pushed, popped;             /* commands pushed, statuses checked */
	uint8_t tag[16];                     /* expected tags, ring indexed by the counters */
	uint64_t need;                       /* bytes still to command for the current insn */
	bool window;                         /* a rowmask or q4c GEMV's: window commands */
};

#define PCCX_ENGINE_WPEND 32          /* device writes to host memory tracked at once */
#define PCCX_ENGINE_RPEND 64          /* stream reads of host memory the job writes, tracked */
#define PCCX_ENGINE_WHANDLES 8        /* buffers a job's MEMCPYs write, known by handle */

struct pccx_engine_ctx {
	/* set by start */
	const struct pccx_engine_ops *ops;
	void *io;
	pccx_engine_xlate_fn xlate;
	void *xctx;
	struct pccx_job_view job;
	uint32_t fifo_depth, dm_depth, addr_bits, l2_words;
	bool wide;
	/* feeding */
	struct pccx_shape_state shape;
	uint32_t next;                       /* next instruction word to push */
	bool prepared;                       /* the commands of `next` are computed */
	bool word_pushed;                    /* `next` is in the device; its commands follow */
	bool tail;                           /* all words pushed; leftover stream bytes pushed */
	const struct pccx_dma_desc *dma;     /* host descriptor of the MEMCPY being fed */
	uint64_t dma_done;
	uint32_t sidx[PCCX_WSTREAM_PORTS];   /* current stream descriptor of each port */
	uint64_t soff[PCCX_WSTREAM_PORTS];   /* bytes of it already commanded */
	struct pccx_engine_chan ch[PCCX_DM_CHANNELS];
	/* host-memory ordering: device writes (MEMCPY to host) not yet confirmed by their
	 * DataMover status; a weight stream reading those bytes waits for them */
	struct {
		uint32_t handle;
		uint64_t lo, hi;
		uint64_t done_at;            /* result-channel statuses that confirm it */
	} wpend[PCCX_ENGINE_WPEND];
	uint32_t n_wpend;
	/* and the other way: weight-stream commands reading a buffer the job writes, not yet
	 * confirmed by their statuses; a MEMCPY overwriting those bytes waits for them */
	struct {
		uint32_t handle;
		uint64_t lo, hi;
		uint32_t ch;
		uint32_t done_at;            /* the channel's statuses that confirm it */
	} rpend[PCCX_ENGINE_RPEND];
	uint32_t n_rpend;
	uint32_t whandle[PCCX_ENGINE_WHANDLES];  /* the buffers the job's MEMCPYs write */
	uint32_t n_whandle;                  /* > PCCX_ENGINE_WHANDLES: every buffer counts */
	/* observation */
	uint64_t retired;
	uint64_t progress;
	uint64_t mmio;                       /* register accesses made */
	int state;
	struct pccx_engine_error err;
};

/*
 * Check the device (ID magic, idle, no error), read its FIFO depths and DMA width, clear
 * RETIRED and stale interrupt bits, and prepare to feed `job` (which the caller has
 * validated; the engine only relies on it being memory-safe to read). Returns
 * PCCX_ENGINE_RUNNING or PCCX_ENGINE_ERROR (e->err says why).
 */
int pccx__engine_start(struct pccx_engine_ctx *e, const struct pccx_job_view *job,
		       const struct pccx_engine_ops *ops, void *io, pccx_engine_xlate_fn xlate,
		       void *xctx);

/* One non-blocking round; returns RUNNING, DONE or ERROR. */
int pccx__engine_step(struct pccx_engine_ctx *e);

/* Instruction words in the device so far (the word of `next` goes in before its commands). */
static inline uint32_t pccx__engine_words_pushed(const struct pccx_engine_ctx *e)
{
	return e->next + (e->word_pushed ? 1u : 0u);
}

/* Short name of a failure kind, e.g. "DM_STATUS". */
const char *pccx__engine_fail_name(int kind);

#ifdef __cplusplus
}
#endif
#endif /* PCCX_ENGINE_H */
