/* SPDX-License-Identifier: MIT */
/*
 * THE pccx v002 instruction table.
 *
 * Every fact about the instruction encoding lives here and only here: the
 * encoder, decoder, disassembler, assembler, validator, the simulator's decode
 * and the tables of docs/isa.md are all derived from these lists (a test checks
 * that the document matches `pccx isa-table`).
 *
 * Bit positions are upstream's (pccx v002 isa_pkg.sv / ISA guidebook); units,
 * legal ranges and the extensions are ours and are argued in docs/isa.md.
 */
#ifndef PCCX_ISA_TABLE_H
#define PCCX_ISA_TABLE_H

/* X(ENUM, value, mnemonic, layout) — opcodes in word bits [63:60]; 0x5–0xF are illegal. */
#define PCCX_OPCODE_LIST(X)                       \
	X(GEMV,   0x0, "gemv",   A)             \
	X(GEMM,   0x1, "gemm",   A)             \
	X(MEMCPY, 0x2, "memcpy", B)             \
	X(MEMSET, 0x3, "memset", C)             \
	X(CVO,    0x4, "cvo",    D)

/*
 * Field kinds:
 *   L2    17-bit address of a 128-bit L2 word (4 FP32 elements); legal < L2 size (114,688)
 *   ENTRY 6-bit index of a shape-RAM entry (0–63)
 *   UINT  unsigned count or index, whole width legal at the encoding level
 *   ENUM  enumerated value, printed by name
 *   FLAG  one bit, printed as +name when set
 *   ZERO  a defined field whose only legal value is 0 (kept for upstream compatibility)
 *   MBZ   reserved, must be zero
 *
 * F(layout, name, upstream-name, msb, lsb, kind, description)
 * Every bit of [59:0] of each layout is covered exactly once (checked by a test).
 */
#define PCCX_FIELD_LIST(F)                                                                   \
	/* Layout A: GEMV (0x0) and GEMM (0x1) */                                            \
	F(A, dest,        dest_reg,       59, 43, L2,    "L2 word of output row 0")       \
	F(A, src,         src_addr,       42, 26, L2,    "L2 word of input row 0")        \
	F(A, findemax,    findemax,       25, 25, FLAG,  "S <- max of the outputs")       \
	F(A, accm,        accm,           24, 24, FLAG,  "add the old dest values")       \
	F(A, w_scale,     w_scale,        23, 23, FLAG,  "stream carries FP16 block scales") \
	F(A, rowmask,     flags_2,        22, 22, FLAG,  "rows whose old dest value is 0 are skipped") \
	F(A, rsv_flags,   flags_1_0,      21, 20, MBZ,   "reserved")                      \
	F(A, wshape,      size_ptr_addr,  19, 14, ENTRY, "weight-shape entry (N, K, format)") \
	F(A, fshape,      shape_ptr_addr, 13,  8, ENTRY, "fmap-shape entry (K, M, 1)")    \
	F(A, lanes,       parallel_lane,   7,  3, ZERO,  "lane selection; 0 = all")       \
	F(A, rsv,         reserved,        2,  0, MBZ,   "reserved")                      \
	/* Layout B: MEMCPY (0x2) */                                                         \
	F(B, from_host,   from_device,    59, 59, FLAG,  "source is host memory")         \
	F(B, to_host,     to_device,      58, 58, FLAG,  "destination is host memory")    \
	F(B, dest,        dest_addr,      57, 41, L2,    "L2 word written (L2 destination)") \
	F(B, src,         src_addr,       40, 24, L2,    "L2 word read (L2 source)")      \
	F(B, desc,        aux_addr,       23,  7, UINT,  "index of the job's host DMA descriptor") \
	F(B, fshape,      shape_ptr_addr,  6,  1, ENTRY, "fmap-shape entry giving the length") \
	F(B, async,       async,           0,  0, FLAG,  "later instructions may overlap") \
	/* Layout C: MEMSET (0x3) */                                                         \
	F(C, cache,       dest_cache,     59, 58, ENUM,  "shape RAM: fmap or weight")     \
	F(C, entry,       dest_addr,      57, 52, ENTRY, "entry written")                 \
	F(C, a,           a_value,        51, 36, UINT,  "fmap: K; weight: N rows")       \
	F(C, b,           b_value,        35, 20, UINT,  "fmap: M rows; weight: K")       \
	F(C, c,           c_value,        19,  4, UINT,  "fmap: 1; weight: format")       \
	F(C, rsv,         reserved,        3,  0, MBZ,   "reserved")                      \
	/* Layout D: CVO (0x4) */                                                            \
	F(D, func,        cvo_func,       59, 56, ENUM,  "SFU function")                  \
	F(D, src,         src_addr,       55, 39, L2,    "L2 word of the source vector")  \
	F(D, dst,         dst_addr,       38, 22, L2,    "L2 word of the destination")    \
	F(D, len,         length,         21,  6, UINT,  "elements (LDS: element index)") \
	F(D, sub_emax,    sub_emax,        5,  5, FLAG,  "subtract S from each input")    \
	F(D, recip_scale, recip_scale,     4,  4, FLAG,  "SCALE: divide by S; reductions: mean") \
	F(D, accm,        accm,            3,  3, FLAG,  "add the old dst values")        \
	F(D, sreg,        flags_1,         2,  2, FLAG,  "scalar form: operate on S")     \
	F(D, relu,        flags_0,         1,  1, FLAG,  "clamp inputs at zero")          \
	F(D, async,       async,           0,  0, FLAG,  "later instructions may overlap")

/* MEMSET dest_cache values. X(ENUM, value, name) */
#define PCCX_CACHE_LIST(X)      \
	X(FMAP,   0, "fmap")    \
	X(WEIGHT, 1, "weight")

/* Weight formats (weight-shape entry, value c). X(ENUM, value, name, description) */
#define PCCX_WFMT_LIST(X)                                                                   \
	X(Q4,    0, "q4",    "INT4 + FP16 scale per 32 along K; y = W x")                       \
	X(F32,   1, "f32",   "FP32 rows of K; y = W x (attention scores over the KV cache)")   \
	X(F32T,  2, "f32t",  "FP32 rows of N, K rows; y = W^T x (attention context over V)") \
	X(Q4C,   3, "q4c",   "q4 as column records (COLSKIP); GEMV reads non-zero inputs' columns")

/* CVO flag bits (word bit masks). */
#define PCCX_CVOF_SUB   (1u << 5)
#define PCCX_CVOF_RECIP (1u << 4)
#define PCCX_CVOF_ACCM  (1u << 3)
#define PCCX_CVOF_SREG  (1u << 2)
#define PCCX_CVOF_RELU  (1u << 1)
#define PCCX_CVOF_NONE  0u
#define PCCX_CVO_NO_SFORM 0xffu /* the function has no scalar form: sreg is illegal */

/*
 * CVO functions, word bits [59:56].
 * X(ENUM, code, name, class, flags allowed in vector form, flags allowed in scalar form (sreg),
 *   upstream status, the Gemma 3n stage that needs it)
 * Classes: UNARY  dst[i] = f(pre(src[i]))            scalar form: S = f(pre(S))
 *          SCALE  dst[i] = pre(src[i]) * S (or / S)   scalar form: S = S * v (or / v)
 *          BINARY dst[i] = dst[i] op src[i]           scalar form: S = S op v
 *                 (SMUL: dst[i] = (dst[i] * S) * src[i], vector form only)
 *          REDUCE S = reduce(pre(src[0..len)))        scalar form (MAX only): S = max(S, v)
 *                 (SUM, SUMSQ with accm, FEATURES.RACC: the sum starts from S, not +0)
 *          LOAD   S = element len of src
 * where v is element 0 of word src. Every instruction that produces a scalar also writes
 * it to element 0 of word dst.
 */
#define PCCX_CVO_FUNC_LIST(X)                                                                     \
	X(EXP,    0x0, "exp",    UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "upstream", "softmax numerator")                                                        \
	X(SQRT,   0x1, "sqrt",   UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "upstream", "AltUp magnitude matching (rms)")                                          \
	X(GELU,   0x2, "gelu",   UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "upstream (tanh form chosen)", "FFN GELU-tanh; with sub_emax+relu the Gaussian top-k gate") \
	X(SIN,    0x3, "sin",    UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "upstream (range reduction added)", "RoPE tables (the host normally supplies them)")    \
	X(COS,    0x4, "cos",    UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "upstream (range reduction added)", "RoPE tables (the host normally supplies them)")    \
	X(SUM,    0x5, "sum",    REDUCE, PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_RECIP | PCCX_CVOF_ACCM, \
	  PCCX_CVO_NO_SFORM, "upstream REDUCE_SUM (FP32); accm: extension (FEATURES.RACC)",       \
	  "softmax denominator, Gaussian top-k mean (with accm: piece by piece)")                 \
	X(SCALE,  0x6, "scale",  SCALE,  PCCX_CVOF_RELU | PCCX_CVOF_RECIP | PCCX_CVOF_ACCM, PCCX_CVOF_RECIP, \
	  "upstream (scalar from S)", "normalisation by 1/rms, softmax 1/sum, AltUp coefficients (with accm)") \
	X(RECIP,  0x7, "recip",  UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "upstream (IEEE division)", "magnitude ratios")                                        \
	X(MUL,    0x8, "mul",    BINARY, PCCX_CVOF_NONE, PCCX_CVOF_NONE,                            \
	  "extension", "RMSNorm weights, GELU(gate)*up, PLE gate*u, RoPE, correct_output_scale")  \
	X(ADD,    0x9, "add",    BINARY, PCCX_CVOF_NONE, PCCX_CVOF_NONE,                            \
	  "extension", "residuals, RoPE, PLE mix, AltUp mean, eps and cutoffs (scalar form)")     \
	X(TANH,   0xA, "tanh",   UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "extension", "AltUp router, final logit soft-cap")                                     \
	X(MAX,    0xB, "max",    REDUCE, PCCX_CVOF_RELU, PCCX_CVOF_NONE,                            \
	  "extension", "softmax maximum; scalar form clamps (max(mean sq, 1e-5))")               \
	X(SUMSQ,  0xC, "sumsq",  REDUCE, PCCX_CVOF_SUB | PCCX_CVOF_RECIP | PCCX_CVOF_ACCM,         \
	  PCCX_CVO_NO_SFORM, "extension; accm: FEATURES.RACC",                                    \
	  "RMSNorm mean square, Gaussian top-k variance, AltUp magnitudes")                       \
	X(LDS,    0xD, "lds",    LOAD,   PCCX_CVOF_NONE, PCCX_CVO_NO_SFORM,                          \
	  "extension", "load AltUp coefficients and constants into S")                            \
	X(RSQRT,  0xE, "rsqrt",  UNARY,  PCCX_CVOF_SUB | PCCX_CVOF_RELU | PCCX_CVOF_ACCM, PCCX_CVOF_RELU,  \
	  "extension", "RMSNorm 1/sqrt(mean sq + eps)")                                          \
	X(SMUL,   0xF, "smul",   BINARY, PCCX_CVOF_NONE, PCCX_CVO_NO_SFORM,                          \
	  "extension (FEATURES.SMUL)", "RMSNorm's x * (1/rms) * w in one pass")

#endif /* PCCX_ISA_TABLE_H */
