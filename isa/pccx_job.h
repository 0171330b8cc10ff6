/* SPDX-License-Identifier: MIT */
/*
 * A pccx job and its validator (freestanding; shared by the kernel module,
 * the firmware, the simulator's command engine and userspace).
 *
 * A job is: instruction words + host DMA descriptors (named by MEMCPY's desc
 * field) + weight-stream descriptors (consumed in order, per port, by GEMV and
 * GEMM). Memory is named only as (buffer handle, offset, length); the
 * validator checks everything against the sizes of the buffers named. See
 * docs/job.md.
 */
#ifndef PCCX_JOB_H
#define PCCX_JOB_H

#include "pccx_isa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pccx_dma_desc.flags: exactly one direction bit. */
#define PCCX_DMA_TO_DEVICE   0x1u  /* host buffer read by the device: MEMCPY host -> L2 */
#define PCCX_DMA_FROM_DEVICE 0x2u  /* host buffer written by the device: MEMCPY L2 -> host */

/* Host DMA descriptor (24 bytes; the same layout crosses the UAPI). */
struct pccx_dma_desc {
	uint32_t handle;
	uint32_t flags;
	uint64_t offset;   /* bytes, multiple of 16 */
	uint64_t length;   /* bytes, multiple of 16, equal to the MEMCPY's transfer */
};

/* Weight-stream descriptor (24 bytes). */
struct pccx_stream_desc {
	uint32_t handle;
	uint32_t port;     /* 0..3 (HP0..HP3) */
	uint64_t offset;   /* bytes, multiple of 16 */
	uint64_t length;   /* bytes, multiple of 16 */
};

struct pccx_job_view {
	const uint64_t *insn;
	uint32_t n_insn;
	const struct pccx_dma_desc *dma;
	uint32_t n_dma;
	const struct pccx_stream_desc *stream;
	uint32_t n_stream;
};

/* Access a buffer grants to the device. */
#define PCCX_BUF_DEV_READ  0x1u
#define PCCX_BUF_DEV_WRITE 0x2u

/*
 * Look a buffer handle up: return 0 and fill *size (bytes) and *access
 * (PCCX_BUF_DEV_*), or non-zero if the handle is not one the job may name.
 */
typedef int (*pccx_buf_lookup_fn)(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access);

struct pccx_vlimits {
	uint32_t l2_words;        /* 114,688 on v002 */
	uint32_t max_insn;
	uint32_t max_dma;         /* at most 2^17: the desc field is 17 bits */
	uint32_t max_stream;
	uint64_t max_desc_bytes;
	/*
	 * The device's FEATURES bits (isa/pccx_regs.h): a word that needs an extension the
	 * device lacks (the CVO smul without SMUL, a GEMV rowmask without ROWMASK, a GEMV on
	 * q4c weights without COLSKIP, a sum or sumsq with accm without RACC) is refused
	 * here rather than faulting on the device. The default is every extension: a program
	 * checked without a device.
	 */
	uint64_t features;
	/* Check the instructions alone (a bare program file): the pairing of
	 * MEMCPY with host DMA descriptors and of GEMV/GEMM with weight streams is
	 * skipped, everything else is checked. */
	bool program_only;
};

void pccx__vlimits_default(struct pccx_vlimits *lim);

enum pccx_vwhere { PCCX_VW_JOB, PCCX_VW_INSN, PCCX_VW_DMA, PCCX_VW_STREAM, PCCX_VW_PORT };

struct pccx_vresult {
	int err;                  /* enum pccx_isa_err; 0 = accepted */
	enum pccx_vwhere where;   /* what `index` counts */
	uint32_t index;           /* offending word / descriptor / port */
	int field;                /* enum pccx_field_id for instruction faults, else -1 */
	uint64_t expected;        /* detail: e.g. bytes the instructions consume */
	uint64_t actual;          /* detail: e.g. bytes the descriptors provide */
	/* Summary of an accepted job. */
	uint64_t port_bytes[PCCX_WSTREAM_PORTS];
	uint64_t dma_bytes_in, dma_bytes_out;
};

/* ------------------------------------------------------------------------ */
/* Per-instruction effects: one definition of what an instruction reads, writes
 * and consumes, used by the validator, the simulator's hazard model and the
 * command engine. */

struct pccx_shape_state {
	uint64_t set[2];               /* bit e set: entry e of cache (fmap, weight) written */
	uint16_t v[2][PCCX_SHAPE_ENTRIES][3];
};

struct pccx_l2_range {
	uint32_t base;
	uint32_t words;                /* 0 = no access */
};

enum pccx_engine { PCCX_ENG_GEMV, PCCX_ENG_GEMM, PCCX_ENG_DMA_IN, PCCX_ENG_DMA_OUT,
		   PCCX_ENG_L2COPY, PCCX_ENG_SHAPE, PCCX_ENG_SFU, PCCX_ENG_COUNT };

struct pccx_effects {
	enum pccx_engine engine;
	struct pccx_l2_range rd[2];    /* L2 words read */
	struct pccx_l2_range wr;       /* L2 words written */
	bool reads_s, writes_s;        /* the SFU scalar register S */
	int dma;                       /* host DMA descriptor index, or -1 */
	uint32_t dma_flags;            /* PCCX_DMA_* direction the MEMCPY needs */
	uint64_t xfer_bytes;           /* MEMCPY bytes */
	uint64_t port_bytes[PCCX_WSTREAM_PORTS];
	/* GEMV/GEMM geometry */
	struct pccx_wshape ws;
	uint32_t m;                    /* activation rows */
	bool rowmask;                  /* GEMV rowmask (the old dest is its mask) */
	/* GEMV rowmask or on q4c: port_bytes is what it may read; what it does read depends
	 * on the data (window commands, docs/isa.md) */
	bool window;
	/* MEMSET */
	int shape_cache, shape_entry;
};

void pccx__shape_reset(struct pccx_shape_state *st);
/* Apply a (legal) MEMSET to the shape state. */
void pccx__shape_apply(struct pccx_shape_state *st, const struct pccx_insn *in);

/*
 * Compute the effects of a decoded, word-legal instruction given the shape
 * state before it. Returns 0 or a PCCX_ISA_E_* code with fault->field naming
 * the field at fault.
 */
int pccx__insn_effects(const struct pccx_insn *in, const struct pccx_shape_state *st,
		       uint32_t l2_words, struct pccx_effects *fx, struct pccx_isa_fault *fault);

/*
 * Validate a whole job. Reads exactly n_insn words and n_dma / n_stream
 * descriptors, never more. `used` is caller scratch of at least
 * PCCX_DMA_BITMAP_BYTES(n_dma) bytes (the validator is freestanding and does
 * not allocate); it lets the check "every descriptor is used" run in linear
 * time. Returns 0 (accepted; res holds a summary) or the first problem as a
 * PCCX_ISA_E_* code with res->where/index/field saying where it is.
 */
#define PCCX_DMA_BITMAP_BYTES(n) (((size_t)(n) + 7) / 8 + 1)
int pccx__validate(const struct pccx_job_view *job, pccx_buf_lookup_fn lookup, void *ctx,
		   const struct pccx_vlimits *lim, uint8_t *used, struct pccx_vresult *res);

#ifdef __cplusplus
}
#endif
#endif /* PCCX_JOB_H */
