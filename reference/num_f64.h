/* SPDX-License-Identifier: MIT */
/*
 * The FP64 counterparts of the isa/num elementary functions: the value each FP32 function
 * approximates, from libm in double precision, whose own error is below 2^-29 of a binary32
 * ulp. The numerics error measurement (`pccx numerics`, tests/unit/test_num_sfu.c) compares
 * against these, in the units defined here, so both measure the same thing the same way.
 */
#ifndef PCCX_NUM_F64_H
#define PCCX_NUM_F64_H

#include <stdint.h>

double pccx__f64_exp(float x);
double pccx__f64_tanh(float x);
/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
double pccx__f64_gelu(float x);
double pccx__f64_sin(float x);
double pccx__f64_cos(float x);
/* Rounded to float, the correctly rounded square root (53 >= 2 * 24 + 2). */
double pccx__f64_sqrt(float x);
double pccx__f64_rsqrt(float x);

/*
 * Error of the binary32 result y against the exact value r: in ulps of the binary32 binade of
 * r (2^-149 below the normal range, so subnormal results count subnormal ulps), and in *rel
 * (may be NULL) relative to r for r in the normal range, else 0. r and y finite.
 */
double pccx__f64_ulps(float y, double r, double *rel);

/*
 * Sweeps in float order: a monotonic integer key of a float (-max .. +max in order, -0 just
 * below +0) and the float of a key.
 */
uint32_t pccx__f64_sweep_key(float f);
float pccx__f64_sweep_float(uint32_t key);

#endif /* PCCX_NUM_F64_H */
