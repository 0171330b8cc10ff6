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
float pccx_bf16_to_f32(uint16_t h);
/*
 * FP32 -> BF16: round to nearest, ties to even. NaN -> 0x7FC0 | sign (quiet, payload
 * dropped); values that round past the largest finite BF16 give Inf; subnormals are kept.
 */
uint16_t pccx_f32_to_bf16(float f);
/* IEEE binary16 -> FP32: exact, subnormals included. */
float pccx_fp16_to_f32(uint16_t h);
/*
 * FP32 -> IEEE binary16: round to nearest, ties to even, gradual underflow to binary16
 * subnormals, overflow (|x| >= 65520) -> Inf, NaN -> 0x7E00 | sign.
 */
uint16_t pccx_f32_to_fp16(float f);

/*
 * Round an FP32 value to the nearest integer, ties to even, and saturate to [lo, hi].
 * NaN gives 0. Exact for every input (no FP arithmetic is done on the value).
 */
int32_t pccx_f32_rne_clamp(float f, int32_t lo, int32_t hi);

/* ------------------------------------------------------------------------------------- */
/* INT4 packing: two's complement nibbles, element 2j = low nibble of byte j,            */
/* element 2j+1 = high nibble of byte j.                                                  */

/* Element i of a packed INT4 array, sign-extended (-8..7). */
int pccx_int4_get(const uint8_t *packed, size_t i);
/* Store v (-8..7; only the low 4 bits of v are used) as element i; the other nibble of the byte is kept. */
void pccx_int4_set(uint8_t *packed, size_t i, int v);

#ifdef __cplusplus
}
#endif

#endif /* PCCX_NUM_H */
