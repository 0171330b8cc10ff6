/* SPDX-License-Identifier: MIT */
/*
 * The board runtime's core (docs/link.md "The board"): the link server, the executor
 * interface, the register executor (isa/engine.c through a register accessor), its DMA
 * region allocator and the MMIO register accessor. Freestanding: pccx_env.h, isa/, and
 * __builtin_memcpy/__builtin_memset (a port provides memcpy/memset); no allocation - every
 * table and buffer is the port's memory, handed over at init.
 *
 * How a port uses it, in order:
 *
 *  1. An executor. Either the register executor:
 *       static struct pccx_fw_span spans[64];
 *       static struct pccx_fw_regs regs;
 *       struct pccx_fw_regs_cfg rc = {
 *               .ops = &pccx__fw_mmio_ops, .io = (void *)npu_base,  (or a simulator's ops)
 *               .region_cpu = dma_cpu, .region_dev = dma_bus, .region_size = dma_size,
 *               .spans = spans, .max_spans = 64,
 *               .now_ns = board_clock_ns, .clk = NULL,   (monotonic: job timeouts, WAIT times)
 *               .idle = NULL,                            (or: wait a little / advance a sim)
 *       };
 *       if (pccx__fw_regs_init(&regs, &rc)) ... the device is not a pccx v002: say so, stop
 *     then exec = &pccx__fw_regs_exec, exec_ctx = &regs;
 *     or its own struct pccx_fw_exec_ops (the /dev/pccx daemon), with the contract below.
 *  2. The server, over storage the port owns:
 *       static uint8_t rxbuf[PCCX_LINK_OVERHEAD + 65536], txbuf[PCCX_LINK_OVERHEAD + 65536];
 *       static struct pccx_fw_buf bufs[64];
 *       static struct pccx_fw_server srv;
 *       struct pccx_fw_server_cfg sc = {
 *               .exec = exec, .exec_ctx = exec_ctx,
 *               .write = uart_write_all, .write_ctx = NULL,
 *               .rx = rxbuf, .tx = txbuf, .buf_size = sizeof(rxbuf),
 *               .bufs = bufs, .max_bufs = 64, .name = "aarch64-virt",
 *       };
 *       if (pccx__fw_server_init(&srv, &sc)) ... a configuration error (sizes): stop
 *  3. The loop, forever:
 *       n = port_read(bytes, sizeof(bytes), pccx__fw_server_read_timeout(&srv));
 *       if (n > 0) pccx__fw_server_feed(&srv, bytes, n, now_ms());
 *       if (n < 0) ... the stream is gone (USB unbind): wait for it, then go on
 *       pccx__fw_server_poll(&srv, now_ms());
 *     Replies are written through cfg.write from inside feed and poll. A write that fails is
 *     counted and the reply lost; the server carries on (the host times out and resends).
 */
#ifndef PCCX_FW_H
#define PCCX_FW_H

#include "pccx_engine.h"
#include "pccx_job.h"
#include "pccx_link.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the executor interface ---------------------------------------------------------------- */

struct pccx_fw_dev_info {
	uint64_t hw_id, features, caps, clocks;
	uint32_t dma_addr_bits, l2_words;
	uint64_t max_buf_size;          /* largest buffer one BUF_CREATE may ask for */
	uint64_t memory_total, memory_free;
	uint32_t flags;                 /* PCCX_LINK_INFO_SIMULATED, PCCX_LINK_INFO_WEDGED */
	uint64_t resets;                /* soft resets after faults, hangs, aborts */
};

/* A job's outcome: the WAIT reply's fields (docs/link.md). */
struct pccx_fw_outcome {
	uint32_t status;                /* PCCX_LINK_JOB_* */
	uint32_t hw_error;              /* [31:24] PCCX_LINK_FAULT_*, DEVICE: [23:0] ERROR */
	uint32_t fault_index;
	uint64_t error_info;
	uint64_t retired;
	uint64_t start_ns, end_ns;      /* the executor's clock */
	uint64_t mmio, cycles;
};

/*
 * What runs jobs and owns the buffers' memory. The core calls these only from feed and poll,
 * never concurrently; a job is only ever started after pccx__validate() accepted it over the
 * core's buffer table (the handles, sizes and access the executor gave), and its memory (the
 * image and every buffer it names) is neither written by UPLOAD nor freed until it is reaped.
 */
struct pccx_fw_exec_ops {
	/* Fill *out; 0, or non-zero when the device cannot be read (DEVICE error reply). */
	int (*info)(void *ctx, struct pccx_fw_dev_info *out);
	/*
	 * Zeroed memory for a buffer of size bytes (at least 1, as the host asked: a size
	 * over max_buf_size is the executor's to refuse), access PCCX_BUF_DEV_* bits or 0
	 * (host-only: a job image, never named by a descriptor). Returns 0 with *handle
	 * (non-zero, not in use) and *mem (CPU address of the bytes, 16-byte aligned);
	 * otherwise PCCX_LINK_E_NOSPACE with *largest the largest size it could have given.
	 */
	int (*buf_alloc)(void *ctx, uint64_t size, uint32_t access, uint32_t *handle,
			 uint8_t **mem, uint64_t *largest);
	void (*buf_free)(void *ctx, uint32_t handle);
	/*
	 * Start a validated job (one at a time). timeout_ms: no progress for this long is a hang.
	 * Returns 0, or non-zero with *out a final outcome (e.g. FAULT/BUSY: the device would not
	 * start); the job is then over.
	 */
	int (*start)(void *ctx, const struct pccx_job_view *job, uint32_t timeout_ms,
		     struct pccx_fw_outcome *out);
	/*
	 * Advance the running job without blocking for long. Returns PCCX_LINK_JOB_RUNNING, or a
	 * final status with *out filled (the executor has reset the device after a fault or hang).
	 */
	uint32_t (*poll)(void *ctx, struct pccx_fw_outcome *out);
	/* Stop the running job if any and soft-reset the device: 0 when the device is idle. */
	int (*reset)(void *ctx);
};

/* ---- the server ------------------------------------------------------------------------------ */

/* One entry of the buffer table (the port's storage; the core fills it). */
struct pccx_fw_buf {
	uint32_t handle;                /* 0: free entry */
	uint32_t access;
	uint64_t size;
	uint8_t *mem;
};

struct pccx_fw_server_cfg {
	const struct pccx_fw_exec_ops *exec;
	void *exec_ctx;
	/* write all n bytes of a reply: 0, or negative when they could not be written */
	int (*write)(void *ctx, const void *buf, size_t n);
	void *write_ctx;
	/* two frame buffers of buf_size bytes each: max_payload = buf_size - PCCX_LINK_OVERHEAD,
	 * between PCCX_LINK_MIN_PAYLOAD and PCCX_LINK_MAX_PAYLOAD */
	uint8_t *rx, *tx;
	uint32_t buf_size;
	struct pccx_fw_buf *bufs;
	uint32_t max_bufs;
	const char *name;               /* INFO's board name (at most 31 bytes used) */
	uint32_t idle_ms;               /* 0: PCCX_LINK_IDLE_MS */
	uint32_t job_timeout_ms;        /* 0: PCCX_LINK_JOB_TIMEOUT_MS */
};

struct pccx_fw_stats {
	uint64_t handled;               /* requests handled (error replies included) */
	uint64_t errors;                /* error replies sent */
	uint32_t last_err, last_type;
	uint64_t write_failures;
	uint64_t jobs_done, busy_ns;
};

/* The server's state: the port allocates it (statically); its fields are the core's. */
struct pccx_fw_server {
	struct pccx_fw_server_cfg cfg;
	struct pccx_link_rx rx;
	uint32_t max_payload;
	uint64_t last_byte_ms;          /* when the last byte came (the idle rule) */
	/* the active job */
	bool job_active;                /* submitted and not yet reaped */
	bool job_final;                 /* it reached a final state: outcome holds it */
	uint32_t job_id, next_job_id;
	uint32_t job_buf;               /* handle of the buffer holding its image */
	struct pccx_fw_outcome outcome;
	/* a WAIT that is not answered yet */
	bool wait_pending;
	uint32_t wait_seq;
	uint64_t wait_deadline_ms;
	bool wedged;                    /* a reset failed: jobs refused until a RESET works */
	uint64_t features;              /* the device's FEATURES, read with l2_words: the
					 * extensions the validator lets a job use */
	uint32_t l2_words;              /* the device's, read at the first SUBMIT: the validator's
					 * L2 bound */
	/* the validator's bitmap is the tx buffer: a job names at most 8 * (buf_size - 1) host
	 * DMA descriptors (JOB error otherwise) */
	struct pccx_fw_stats st;
};

/* 0, or -1 when the configuration is unusable (a NULL table, sizes out of range). */
int pccx__fw_server_init(struct pccx_fw_server *s, const struct pccx_fw_server_cfg *cfg);
/* Consume received bytes; answers every whole request among them. */
void pccx__fw_server_feed(struct pccx_fw_server *s, const uint8_t *in, size_t n, uint64_t now_ms);
/* Run the active job, answer a WAIT that is due, drop a frame stopped past the idle timeout. */
void pccx__fw_server_poll(struct pccx_fw_server *s, uint64_t now_ms);
/*
 * The stream was re-established (a socket reconnected, a USB gadget bound again): drop a
 * partial frame and a pending WAIT, whose asker is gone. Buffers and the job stay until the
 * next owner's RESET (docs/link.md).
 */
void pccx__fw_server_reconnected(struct pccx_fw_server *s);
/* How long the port may block in its read: 0 while a job runs, else a few ms. */
uint32_t pccx__fw_server_read_timeout(const struct pccx_fw_server *s);

/* ---- the register executor ----------------------------------------------------------------- */

/* One allocation of the DMA region (the port's storage; the allocator fills it). */
struct pccx_fw_span {
	uint32_t handle;                /* 0: free entry */
	uint64_t off, size;             /* off: from the region's start */
};

struct pccx_fw_region {
	uint8_t *cpu;                   /* the region as the CPU addresses it (uncached, or the
					 * port keeps caches coherent) */
	uint64_t dev;                   /* the same bytes as the device addresses them */
	uint64_t size;
	struct pccx_fw_span *spans;
	uint32_t max_spans;
	uint32_t next_handle;
};

/* Region allocator: first fit, 64-byte aligned offsets; handles never 0, not reused at once. */
void pccx__fw_region_init(struct pccx_fw_region *r, uint8_t *cpu, uint64_t dev, uint64_t size,
			  struct pccx_fw_span *spans, uint32_t max_spans);
/* 0 or PCCX_LINK_E_NOSPACE (*largest: the largest free run). The bytes are zeroed. */
int pccx__fw_region_alloc(struct pccx_fw_region *r, uint64_t size, uint32_t *handle,
			  uint64_t *off, uint64_t *largest);
/* 0, or -1 for an unknown handle. */
int pccx__fw_region_free(struct pccx_fw_region *r, uint32_t handle);
const struct pccx_fw_span *pccx__fw_region_find(const struct pccx_fw_region *r, uint32_t handle);
uint64_t pccx__fw_region_free_bytes(const struct pccx_fw_region *r, uint64_t *largest);

struct pccx_fw_regs_cfg {
	const struct pccx_engine_ops *ops;  /* register accessor */
	void *io;                       /* its first argument: the mapped base for MMIO */
	uint8_t *region_cpu;
	uint64_t region_dev, region_size;
	struct pccx_fw_span *spans;
	uint32_t max_spans;
	/* monotonic clock in ns (for a simulated device: its simulated time) */
	uint64_t (*now_ns)(void *clk);
	void *clk;
	/* called when an engine step changed nothing (may be NULL): a short wait, or advancing a
	 * simulated device */
	void (*idle)(void *io);
	uint32_t flags;                 /* PCCX_LINK_INFO_SIMULATED when the accessor is a sim */
	uint32_t reset_polls;           /* RESET reads before giving up (0: 1,000,000) */
};

struct pccx_fw_regs {
	struct pccx_fw_regs_cfg cfg;
	struct pccx_fw_region region;
	struct pccx_engine_ctx e;
	bool running;
	uint64_t timeout_ns, last_progress, last_change_ns;
	uint64_t last_retired;          /* RETIRED at the last timeout check */
	uint64_t start_cycles;
	uint64_t resets;
};

/*
 * Check the device (ID magic and major, FEATURES.SOFT_RESET), reset it once so it starts
 * clean. Returns 0, or the reason as a PCCX_EF_* value (NODEV: not a pccx v002 with the
 * extensions; BUSY: it did not come out of reset).
 */
int pccx__fw_regs_init(struct pccx_fw_regs *x, const struct pccx_fw_regs_cfg *cfg);
/* Soft reset (RESET, wait for 0, clear ERROR, IRQ_STATUS, DataMover errors, RETIRED): 0 ok. */
int pccx__fw_regs_reset(struct pccx_fw_regs *x);
extern const struct pccx_fw_exec_ops pccx__fw_regs_exec;

/* ---- the MMIO register accessor ------------------------------------------------------------ */

/*
 * Volatile accesses at io + off: 64-bit on the control page, 32-bit on the DataMover pages,
 * with a barrier before each write (the CPU's writes to DMA memory reach it before the device
 * is told to read them) and after each read (a status read before the data it announces).
 */
extern const struct pccx_engine_ops pccx__fw_mmio_ops;

#ifdef __cplusplus
}
#endif
#endif /* PCCX_FW_H */
