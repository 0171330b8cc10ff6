/* SPDX-License-Identifier: MIT */
/*
 * Portable, fully specified random numbers for the host: PCG32 (O'Neill 2014, the
 * "XSH RR 64/32" member of the PCG family) and exact conversions to uniform floats.
 *
 * Nothing here depends on the C library's rand() or on the platform: the same seed gives
 * the same stream on every machine, which the sampler's determinism contract relies on.
 *
 * Generator (64-bit state s, 64-bit odd increment c, multiplier A = 6364136223846793005):
 *   next():  old = s;  s = old * A + c  (mod 2^64)
 *            x   = (uint32_t)(((old >> 18) ^ old) >> 27)
 *            rot = old >> 59
 *            return x rotated right by rot bits
 *   seed(initstate, initseq):  s = 0;  c = (initseq << 1) | 1;  next();  s += initstate;  next()
 *
 * Check value: seed(42, 54) gives 0xa15c02b7 0x7b47f409 0xba1d3330 0x83d2f293 0xbfa4784b
 * 0xcbed606e ...
 */
#ifndef PCCX_RNG_H
#define PCCX_RNG_H

#include <stdint.h>

typedef struct pccx_rng {
	uint64_t state;
	uint64_t inc;		/* always odd */
} pccx_rng;

/* The standard PCG32 seeding procedure; initseq selects one of 2^63 streams. */
void pccx__rng_seed(pccx_rng *rng, uint64_t initstate, uint64_t initseq);

/* Next 32-bit output. */
uint32_t pccx__rng_next_u32(pccx_rng *rng);

/*
 * Uniform double in [0, 1) from exactly two outputs: a (first) and b (second),
 *   u = ((((uint64_t)a << 32) | b) >> 11) * 2^-53
 * i.e. the top 53 bits of the 64-bit word whose high half is the first output. Every value
 * is a multiple of 2^-53; the largest is 1 - 2^-53. The conversion is exact (no rounding).
 */
double pccx__rng_uniform(pccx_rng *rng);

/*
 * Uniform float in [0, 1) from exactly one output x: (x >> 8) * 2^-24 (exact; largest value
 * 1 - 2^-24).
 */
float pccx__rng_uniform_float(pccx_rng *rng);

/* The conversions on their own, for callers that hold raw outputs (and for tests). */
double pccx__rng_u53_to_double(uint32_t first, uint32_t second);
float pccx__rng_u24_to_float(uint32_t x);

#endif /* PCCX_RNG_H */
