/* SPDX-License-Identifier: MIT */
/*
 * pccx numerics: the one definition of every arithmetic operation of the pccx v002 NPU.
 *
 * The reference model, the cycle simulator and the host all call these functions, so
 * bit-exactness between them reduces to dataflow. Freestanding C11: no libm, no libc
 * calls, no allocation; only IEEE-754 binary32 basic operations (+ - * / sqrt, each
 * correctly rounded), integer operations and bit manipulation. The results are identical
 * on every platform with FLT_EVAL_METHOD == 0 when built with -ffp-contract=off.
 *
 * The contract (formats, rounding, operation order, algorithms, measured errors) is
 * written down in docs/numerics.md.
 */
#ifndef PCCX_NUM_H
#define PCCX_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------- */
/* Bit access (memcpy-based: no aliasing undefined behaviour, no libc call).              */

static inline uint32_t pccx_f32_bits(float f)
{
	uint32_t u;

	__builtin_memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float pccx_f32_from_bits(uint32_t u)
{
	float f;

	__builtin_memcpy(&f, &u, sizeof(f));
	return f;
}

/* ------------------------------------------------------------------------------------- */
/* Format conversions (convert.c).                                                        */

/* BF16 -> FP32: exact (BF16 is the top half of an FP32). */
float pccx__bf16_to_f32(uint16_t h);
/*
 * FP32 -> BF16: round to nearest, ties to even. NaN -> 0x7FC0 | sign (quiet, payload
 * dropped); values that round past the largest finite BF16 give Inf; subnormals are kept.
 */
uint16_t pccx__f32_to_bf16(float f);
/* IEEE binary16 -> FP32: exact, subnormals included. */
float pccx__fp16_to_f32(uint16_t h);
/*
 * FP32 -> IEEE binary16: round to nearest, ties to even, gradual underflow to binary16
 * subnormals, overflow (|x| >= 65520) -> Inf, NaN -> 0x7E00 | sign.
 */
uint16_t pccx__f32_to_fp16(float f);

/*
 * Round an FP32 value to the nearest integer, ties to even, and saturate to [lo, hi].
 * NaN gives 0. Exact for every input (no FP arithmetic is done on the value).
 */
int32_t pccx__f32_rne_clamp(float f, int32_t lo, int32_t hi);

/* ------------------------------------------------------------------------------------- */
/* INT4 packing: two's complement nibbles, element 2j = low nibble of byte j,            */
/* element 2j+1 = high nibble of byte j.                                                  */

/* Element i of a packed INT4 array, sign-extended (-8..7). */
int pccx__int4_get(const uint8_t *packed, size_t i);
/* Store v (-8..7; only its low 4 bits are used) as element i; the byte's other nibble is kept. */
void pccx__int4_set(uint8_t *packed, size_t i, int v);

/* ------------------------------------------------------------------------------------- */
/* NaN policy. IEEE 754 leaves the sign and payload of a NaN produced by an operation     */
/* unspecified (x86 makes the default NaN negative, AArch64 positive), so every FP32 NaN  */
/* result of this module is the canonical quiet NaN, which every unit store writes to L2.   */
/* Only the pure conversions pccx__f32_to_bf16/fp16 keep the sign of a NaN input.          */

#define PCCX_F32_QNAN_BITS  0x7FC00000u

static inline bool pccx_f32_is_nan(float f)
{
	return (pccx_f32_bits(f) & 0x7FFFFFFFu) > 0x7F800000u;
}

/* NaN -> canonical quiet NaN; anything else unchanged. */
static inline float pccx_f32_canon(float f)
{
	return pccx_f32_is_nan(f) ? pccx_f32_from_bits(PCCX_F32_QNAN_BITS) : f;
}

/*
 * The store of every unit: L2 holds FP32, so a result is stored as computed, except that
 * every NaN becomes the canonical 0x7FC00000.
 */
static inline float pccx_f32_store(float f)
{
	return pccx_f32_canon(f);
}

/*
 * GEMV/GEMM output stage: r (FP32), plus the old destination element when accm is set
 * (r = r + old, one RNE add), stored with pccx_f32_store.
 */
float pccx__out_store(float r, bool accm, float old);

/* ------------------------------------------------------------------------------------- */
/* Block quantisation (quant.c).                                                          */

#define PCCX_QBLK 32	/* elements per weight block and per activation block */

/*
 * Q4 weight block: 32 INT4 weights (16 bytes, pccx_int4 order) and one FP16 scale d;
 * weight i = fp16_to_f32(d) * q_i.
 *
 * Import one llama.cpp Q4_0 block (18 bytes: FP16 d little-endian, then qs[16]; element j is
 * the low nibble of qs[j], element j+16 the high nibble, value d * (nibble - 8)). Lossless:
 * d is copied bit for bit, q = nibble - 8.
 */
void pccx__q4_from_ggml_q4_0(const uint8_t blk18[18], uint16_t *d, uint8_t nib16[16]);

/*
 * Quantise 32 FP32 weights to a Q4 block (rule in docs/numerics.md): m = the element of
 * largest magnitude (first one on ties); d = f32_to_fp16(m / -8) (saturated to +-65504);
 * q_i = clamp(rne(x_i / fp16_to_f32(d)), -8, 7); d == 0 gives all q_i = 0.
 * Returns 0, or -1 if an input is Inf or NaN (then d = 0x7E00, all q_i = 0).
 */
__attribute__((warn_unused_result))
int pccx__q4_quantize_block(const float x[32], uint16_t *d, uint8_t nib16[16]);

/* Dequantised weight k of a Q4 row (scales == NULL: unit scale 1.0). */
float pccx__q4_weight(const uint8_t *nibbles, const uint16_t *scales, size_t k);

/*
 * W4A8 activation quantisation of one 32-block of FP32 values (docs/numerics.md):
 * amax = max |x_i|; amax == 0: sx = 0, q = 0; amax not finite: sx = NaN, q = 0;
 * else inv = 127 / amax, q_i = clamp(rne(x_i * inv), -127, 127), sx = amax / 127.
 */
void pccx__q8_quantize_block(const float x[32], int8_t q[32], float *sx);
/* The same over K elements (K a multiple of 32): K/32 blocks, sx[b] for block b. */
void pccx__q8_quantize(const float *x, size_t K, int8_t *q, float *sx);

/* ------------------------------------------------------------------------------------- */
/* Dot products (dot.c). K must be a multiple of 32 for the Q4 form.                      */

/*
 * One output of a W4A8 GEMV/GEMM. For block b = 0 .. K/32-1 in order:
 *   dot_b = sum q8 * q4 (int32, exact); t_b = fp16_to_f32(d_b) * sx_b; c_b = (float)dot_b * t_b;
 *   acc = acc + c_b, acc starting at +0.0f. scales == NULL: unit scale (t_b = 1.0f * sx_b).
 */
float pccx__q4_row_dot(const uint8_t *nibbles, const uint16_t *scales, const int8_t *q8,
		       const float *sx, size_t K);

/*
 * The same outputs from Q4C column records (FEATURES.COLSKIP, docs/isa.md), `rows` outputs
 * at once. Per block b in ascending order that pccx__q4c_block_read() keeps: the column
 * record of each input k of the block with q8_k != 0 adds q4 * q8_k to the rows' INT32 sums
 * (pccx__q4c_column; exact, so in any order), then the block's scale record does
 * acc = acc + (float)sum * (fp16_to_f32(d) * sx_b) per row and clears the sums
 * (pccx__q4c_block_end). A block it skips would add (float)0 * t_b = +-0, which leaves acc
 * unchanged when t_b is finite (acc starts at +0 and never becomes -0), so with finite
 * weight scales the results are pccx__q4_row_dot's bits. Column record: row i's INT4 (two's
 * complement, as in row records) at byte i/2, the low nibble for even i; scale record: row
 * i's FP16 at bytes 2i, 2i + 1.
 */
bool pccx__q4c_block_read(const int8_t *q8, float sx);
void pccx__q4c_column(const uint8_t *col, size_t rows, int32_t x, int32_t *sum);
void pccx__q4c_block_end(const uint8_t *scales, size_t rows, float sx, int32_t *sum,
			 float *acc);

/* acc = +0; for k ascending: acc = acc + w_k * x_k (the product rounded, then the add). */
float pccx__f32_row_dot(const float *w, const float *x, size_t K);

/* y[n] = the same sum over k ascending of x_k * W[k][n], W (K, N) row-major. */
void pccx__f32_colsum(const float *W, const float *x, size_t K, size_t N, float *y);

/* ------------------------------------------------------------------------------------- */
/* Elementary functions (transc.c). FP32 in, FP32 out; NaN in -> canonical NaN out.       */

float pccx__f32_exp(float x);	/* <= 1 ulp measured; overflow -> +Inf, gradual underflow */
float pccx__f32_tanh(float x);
float pccx__f32_gelu(float x);	/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
float pccx__f32_sin(float x);	/* full-range Payne-Hanek reduction */
float pccx__f32_cos(float x);
float pccx__f32_sqrt(float x);	/* correctly rounded; sqrt(-0) = -0; x < 0 -> NaN */
float pccx__f32_rsqrt(float x);	/* correctly rounded 1/sqrt(x); +-0 -> +-Inf; x < 0 -> NaN */
float pccx__f32_recip(float x);	/* 1.0f / x (IEEE division) */

/* ------------------------------------------------------------------------------------- */
/* SFU ("CVO") (sfu.c).                                                                   */

/*
 * The SFU operations. The numeric values of 0..7 equal upstream's CVO function codes for
 * readability only: the ISA layer owns the encoding and maps instruction fields onto these.
 */
enum pccx_sfu_fn {
	PCCX_SFU_EXP	= 0,
	PCCX_SFU_SQRT	= 1,
	PCCX_SFU_GELU	= 2,
	PCCX_SFU_SIN	= 3,
	PCCX_SFU_COS	= 4,
	PCCX_SFU_SUM	= 5,	/* reduction */
	PCCX_SFU_SCALE	= 6,	/* y = x * S, or x / S with PCCX_SFU_F_RECIP */
	PCCX_SFU_RECIP	= 7,
	PCCX_SFU_MUL	= 8,	/* binary: y = d * s, or (d * S) * s with PCCX_SFU_F_SCALE */
	PCCX_SFU_ADD	= 9,	/* binary: y = d + s */
	PCCX_SFU_TANH	= 10,
	PCCX_SFU_MAX	= 11,	/* reduction */
	PCCX_SFU_SUMSQ	= 12,	/* reduction */
	PCCX_SFU_RSQRT	= 13,
	PCCX_SFU_NFN
};

/* Flag bits. */
#define PCCX_SFU_F_SUB		(1u << 0)	/* input stage: x = x - S */
#define PCCX_SFU_F_RELU		(1u << 1)	/* input stage: x = x > 0 ? x : +0 (NaN stays NaN) */
#define PCCX_SFU_F_ACCM		(1u << 2)	/* output stage: y = y + old dst element; SUM,
						 * SUMSQ: the sum starts from S, not +0 */
#define PCCX_SFU_F_RECIP	(1u << 3)	/* SCALE: divide by S instead of multiplying */
#define PCCX_SFU_F_SCALE	(1u << 4)	/* MUL: scale d by S first (the CVO smul) */
#define PCCX_SFU_F_MEAN		(1u << 5)	/* SUM, SUMSQ: divide the result by (float)n */
#define PCCX_SFU_F_ALL		0x3Fu

/* true for SUM, SUMSQ, MAX. */
bool pccx__sfu_is_reduction(enum pccx_sfu_fn fn);
/* true for MUL, ADD (they read the old destination element as the first operand). */
bool pccx__sfu_is_binary(enum pccx_sfu_fn fn);

/*
 * f(x) for the element-wise functions: EXP SQRT GELU SIN COS RECIP TANH RSQRT, and SCALE
 * (x * S, or x / S with PCCX_SFU_F_RECIP). Reductions and binary functions give NaN here.
 */
float pccx__sfu_unary(enum pccx_sfu_fn fn, unsigned flags, float S, float x);

/*
 * The whole per-element pipeline in FP32, before the store: x = s; SUB: x = x - S;
 * RELU: x = x > 0 ? x : +0; y = f(x) (binary functions: f(d, x)); ACCM: y = y + d.
 * s is the source element, d the old destination element.
 */
float pccx__sfu_elem(enum pccx_sfu_fn fn, unsigned flags, float S, float s, float d);

/*
 * Element-wise over n FP32 elements: dst[i] = f32_store(elem(fn, flags, S, src[i], dst[i])).
 * src may equal dst. Reductions are not element-wise: dst is left untouched for them.
 */
void pccx__sfu_vector(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src,
		      float *dst, size_t n);

/*
 * Reductions over n FP32 elements, FP32, strictly in index order, after the input stage
 * (SUB, RELU): SUM acc = +0 (with ACCM acc = S: the sum continues one over an earlier part
 * of the vector), acc = acc + x_i; SUMSQ likewise with acc = acc + x_i * x_i (product rounded,
 * then the add); MEAN: acc / (float)n, n this call's. MAX: NaN if any x_i is NaN, else the
 * largest, max(+0, -0) = +0, -Inf for n == 0; ACCM does not apply to it. The caller stores the
 * result.
 */
float pccx__sfu_reduce(enum pccx_sfu_fn fn, unsigned flags, float S, const float *src, size_t n);

/*
 * Scalar forms on the S register (FP32): element-wise functions give
 * S' = f(S) (SCALE: S * v, or S / v with PCCX_SFU_F_RECIP); MUL S' = S * v; ADD S' = S + v;
 * MAX S' = max(S, v) with the MAX rules; SUM S' = S + v; SUMSQ S' = S + v * v (one
 * reduction step with the accumulator in S). Other flags are ignored.
 */
float pccx__sfu_scalar(enum pccx_sfu_fn fn, unsigned flags, float S, float v);

#ifdef __cplusplus
}
#endif

#endif /* PCCX_NUM_H */
