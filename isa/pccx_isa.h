/* SPDX-License-Identifier: MIT */
/*
 * pccx v002 ISA: instruction words, their fields, encoder and decoder.
 *
 * Freestanding: compiled into the kernel module, the firmware and userspace.
 * All facts come from pccx_isa_table.h.
 */
#ifndef PCCX_ISA_H
#define PCCX_ISA_H

#include "pccx_env.h"
#include "pccx_isa_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device constants of v002 that the encoding depends on. */
#define PCCX_L2_WORDS        114688u   /* 128-bit words = 1.75 MiB */
#define PCCX_L2_ELEMS_PER_WORD 4u      /* FP32 elements per L2 word */
#define PCCX_SHAPE_ENTRIES   64u
#define PCCX_WSTREAM_PORTS   4u        /* HP0..HP3 weight-stream FIFOs */
#define PCCX_BEAT_BYTES      16u       /* one 128-bit stream beat / L2 word */
#define PCCX_Q4_BLOCK        32u       /* weights per FP16 scale */

enum pccx_opcode {
#define PCCX_OP_ENUM(name, val, mnem, layout) PCCX_OP_##name = val,
	PCCX_OPCODE_LIST(PCCX_OP_ENUM)
#undef PCCX_OP_ENUM
};

enum pccx_layout { PCCX_LAYOUT_A, PCCX_LAYOUT_B, PCCX_LAYOUT_C, PCCX_LAYOUT_D };

enum pccx_field_kind {
	PCCX_FK_L2, PCCX_FK_ENTRY, PCCX_FK_UINT, PCCX_FK_ENUM, PCCX_FK_FLAG, PCCX_FK_ZERO, PCCX_FK_MBZ
};

/* Global field ids: PCCX_FID_<layout>_<name>, e.g. PCCX_FID_D_len. */
enum pccx_field_id {
#define PCCX_FID_ENUM(l, name, up, msb, lsb, kind, desc) PCCX_FID_##l##_##name,
	PCCX_FIELD_LIST(PCCX_FID_ENUM)
#undef PCCX_FID_ENUM
	PCCX_NFIELDS
};

/* Bit positions as compile-time constants: PCCX_<layout>_<name>_MSB / _LSB. */
enum {
#define PCCX_FPOS_ENUM(l, name, up, msb, lsb, kind, desc) \
	PCCX_##l##_##name##_MSB = msb, PCCX_##l##_##name##_LSB = lsb,
	PCCX_FIELD_LIST(PCCX_FPOS_ENUM)
#undef PCCX_FPOS_ENUM
};

static inline uint64_t pccx_bits(uint64_t w, unsigned msb, unsigned lsb)
{
	unsigned width = msb - lsb + 1;

	return (w >> lsb) & ((width >= 64) ? ~0ull : ((1ull << width) - 1));
}

static inline uint64_t pccx_field_mask(unsigned msb, unsigned lsb)
{
	unsigned width = msb - lsb + 1;

	return ((width >= 64) ? ~0ull : ((1ull << width) - 1)) << lsb;
}

/* PCCX_GET(w, D, len) reads field `len` of layout D from word w. */
#define PCCX_GET(w, l, f) ((uint32_t)pccx_bits((w), PCCX_##l##_##f##_MSB, PCCX_##l##_##f##_LSB))
/* PCCX_PUT(D, len, v) places v (which must fit) at the field's position. */
#define PCCX_PUT(l, f, v) \
	(((uint64_t)(v) << PCCX_##l##_##f##_LSB) &                                          \
	 pccx_field_mask(PCCX_##l##_##f##_MSB, PCCX_##l##_##f##_LSB))

static inline unsigned pccx_opcode_of(uint64_t w)
{
	return (unsigned)(w >> 60);
}

enum pccx_cvo_class { PCCX_CVOC_UNARY, PCCX_CVOC_SCALE, PCCX_CVOC_BINARY, PCCX_CVOC_REDUCE, PCCX_CVOC_LOAD };

enum pccx_cvo_func {
#define PCCX_CVO_ENUM(name, code, mnem, cls, vf, sf, up, stage) PCCX_CVO_##name = code,
	PCCX_CVO_FUNC_LIST(PCCX_CVO_ENUM)
#undef PCCX_CVO_ENUM
};

enum pccx_cache {
#define PCCX_CACHE_ENUM(name, val, str) PCCX_CACHE_##name = val,
	PCCX_CACHE_LIST(PCCX_CACHE_ENUM)
#undef PCCX_CACHE_ENUM
};

enum pccx_wfmt {
#define PCCX_WFMT_ENUM(name, val, str, desc) PCCX_WFMT_##name = val,
	PCCX_WFMT_LIST(PCCX_WFMT_ENUM)
#undef PCCX_WFMT_ENUM
};

struct pccx_field_desc {
	enum pccx_layout layout;
	const char *name;      /* assembly name */
	const char *upstream;  /* name in the upstream ISA documents */
	uint8_t msb, lsb;
	enum pccx_field_kind kind;
	const char *desc;
};

struct pccx_opcode_desc {
	unsigned value;
	const char *mnemonic;
	enum pccx_layout layout;
};

struct pccx_cvo_desc {
	unsigned code;
	const char *name;
	enum pccx_cvo_class cls;
	uint32_t vec_flags;   /* PCCX_CVOF_* allowed in vector form */
	uint32_t s_flags;     /* allowed with sreg, or PCCX_CVO_NO_SFORM */
	const char *upstream;
	const char *stage;
};

extern const struct pccx_field_desc pccx__fields[PCCX_NFIELDS];
/* NULL for opcodes that are not defined. */
const struct pccx_opcode_desc *pccx__opcode_desc(unsigned opcode);
/* NULL for functions that are not defined. */
const struct pccx_cvo_desc *pccx__cvo_desc(unsigned func);
const char *pccx__cache_name(unsigned v);   /* NULL if not defined */
const char *pccx__wfmt_name(unsigned v);    /* NULL if not defined */
const char *pccx__wfmt_desc(unsigned v);

/* ------------------------------------------------------------------------ */
/* Errors of the ISA layer and of the job validator (one list). */

#define PCCX_ISA_ERR_LIST(X)                                                                  \
	X(OK,              "no error")                                                        \
	X(OPCODE,          "opcode is not defined (0x5-0xF are illegal)")                     \
	X(CVO_FUNC,        "CVO function is not defined")                                     \
	X(RESERVED,        "reserved bits are set")                                           \
	X(FIELD_VALUE,     "field holds a value that is not defined")                         \
	X(FLAGS,           "flag not allowed for this function or form")                      \
	X(ROUTE,           "host-to-host MEMCPY is illegal")                                  \
	X(UNUSED_FIELD,    "field not used by this form must be zero")                        \
	X(SHAPE_UNSET,     "shape entry used before it is set in this job")                   \
	X(SHAPE,           "shape entry values are invalid for this instruction")             \
	X(L2_RANGE,        "L2 range outside the 114,688-word L2")                            \
	X(OVERLAP,         "source and destination ranges overlap")                           \
	X(LENGTH,          "length is invalid for this function or form")                     \
	X(DMA_INDEX,       "host DMA descriptor index out of range")                          \
	X(DMA_LENGTH,      "host DMA descriptor length differs from the transfer length")     \
	X(DMA_DIR,         "host DMA descriptor direction does not match the MEMCPY")         \
	X(DMA_UNUSED,      "host DMA descriptor is not used by any MEMCPY")                   \
	X(BUF_HANDLE,      "unknown buffer handle")                                           \
	X(BUF_RANGE,       "offset + length outside the buffer (or overflows)")               \
	X(BUF_ACCESS,      "buffer does not allow this direction of access")                  \
	X(ALIGN,           "offset or length is not a multiple of 16 bytes")                  \
	X(DESC_FLAGS,      "descriptor has undefined flags or non-zero reserved fields")      \
	X(STREAM_PORT,     "weight-stream port out of range")                                 \
	X(STREAM_MISMATCH, "weight-stream bytes differ from what the instructions consume")   \
	X(JOB_LIMIT,       "job exceeds a size limit")                                        \
	X(JOB_EMPTY,       "job has no instructions")

enum pccx_isa_err {
#define PCCX_ISA_ERR_ENUM(name, text) PCCX_ISA_E_##name,
	PCCX_ISA_ERR_LIST(PCCX_ISA_ERR_ENUM)
#undef PCCX_ISA_ERR_ENUM
	PCCX_ISA_E_COUNT
};

const char *pccx__isa_strerror(int err);
const char *pccx__isa_errname(int err);   /* e.g. "OPCODE" */

/* ------------------------------------------------------------------------ */
/* Decoded instruction. Values of fields outside the opcode's layout are 0. */

struct pccx_insn {
	unsigned opcode;
	uint32_t f[PCCX_NFIELDS];
};

/*
 * Whether a decoded instruction is a SUM or SUMSQ whose sum starts from S (accm): the
 * extension FEATURES.RACC, which the validator and the device refuse without the bit.
 */
static inline bool pccx__insn_racc(const struct pccx_insn *in)
{
	return in->opcode == PCCX_OP_CVO && in->f[PCCX_FID_D_accm] && !in->f[PCCX_FID_D_sreg] &&
	       (in->f[PCCX_FID_D_func] == PCCX_CVO_SUM || in->f[PCCX_FID_D_func] == PCCX_CVO_SUMSQ);
}

/* Where a word-level fault is: the field id (or -1 for the whole word). */
struct pccx_isa_fault {
	int err;        /* enum pccx_isa_err */
	int field;      /* enum pccx_field_id, or -1 */
};

/*
 * Decode one word and check everything that can be checked from the word
 * alone (opcode, CVO function, reserved bits, enumerations, flag legality,
 * MEMCPY route, unused fields). Fills *out even for illegal words as far as
 * the layout is known. Returns 0 or a PCCX_ISA_E_* code (also in *fault).
 */
int pccx__decode(uint64_t w, struct pccx_insn *out, struct pccx_isa_fault *fault);

/*
 * Encode. Returns PCCX_ISA_E_OK and the word, or PCCX_ISA_E_FIELD_VALUE with
 * fault->field naming the field whose value does not fit its width. Does not
 * check legality: encode then decode to do that.
 */
int pccx__encode(const struct pccx_insn *in, uint64_t *w, struct pccx_isa_fault *fault);

/*
 * The CVO instruction (async clear) of a vector/scalar SFU op: func, L2 src/dst words, len
 * and the PCCX_CVOF_* flags (pccx_isa_table.h) as its fields.
 */
void pccx__cvo_insn(struct pccx_insn *in, unsigned func, uint32_t src, uint32_t dst,
		    uint32_t len, uint32_t flags);

/* Field-id lookup by layout and assembly name; -1 when none. */
int pccx__field_find(enum pccx_layout layout, const char *name, size_t len);

/* ------------------------------------------------------------------------ */
/* Weight-stream geometry (shared by validator, compiler, command engine and simulator). */

/*
 * A GEMV/GEMM instruction's weights arrive on the four weight-stream ports:
 * the R stored rows are dealt in contiguous quarters, port p carrying rows
 * [p*Q, min(R,(p+1)*Q)) with Q = ceil(R/4). For Q4 and F32 the stored rows
 * are the N output rows; for F32T they are the K input rows.
 */
struct pccx_wshape {
	uint32_t n;      /* output elements */
	uint32_t k;      /* input elements */
	uint32_t fmt;    /* enum pccx_wfmt */
	bool w_scale;    /* Q4 and Q4C: the stream carries FP16 scales (Q4C always does) */
};

/* Bytes of one stored row in the stream (a multiple of 16). */
uint64_t pccx__wstream_row_bytes(const struct pccx_wshape *ws);
/* Stored rows of the weight matrix (N, or K for F32T). */
uint32_t pccx__wstream_rows(const struct pccx_wshape *ws);
/* First row and row count carried by port p. */
void pccx__wstream_port_rows(const struct pccx_wshape *ws, unsigned port,
			     uint32_t *first, uint32_t *count);
/* Bytes port p carries for one instruction. */
uint64_t pccx__wstream_port_bytes(const struct pccx_wshape *ws, unsigned port);
/* Where port p's bytes start in the tensor's image: the bytes of the ports before it. */
uint64_t pccx__wstream_port_offset(const struct pccx_wshape *ws, unsigned port);
/*
 * Q4C (FEATURES.COLSKIP): a port carrying `rows` output rows stores, per 32-block of K, 32
 * column records then one scale record; these are their sizes (multiples of 16).
 */
uint64_t pccx__wstream_q4c_col_bytes(uint32_t rows);
uint64_t pccx__wstream_q4c_scale_bytes(uint32_t rows);
uint64_t pccx__wstream_q4c_block_bytes(uint32_t rows);

/* Number of L2 words a vector of n FP32 elements occupies. */
static inline uint32_t pccx_words_for(uint64_t n)
{
	return (uint32_t)((n + PCCX_L2_ELEMS_PER_WORD - 1) / PCCX_L2_ELEMS_PER_WORD);
}

#ifdef __cplusplus
}
#endif
#endif /* PCCX_ISA_H */
