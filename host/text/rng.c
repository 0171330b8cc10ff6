/* SPDX-License-Identifier: MIT */
#include "rng.h"

/* The 64-bit LCG multiplier of PCG32 (Knuth's MMIX constant). */
#define PCG32_MULT 6364136223846793005ULL

uint32_t pccx__rng_next_u32(pccx_rng *rng)
{
	uint64_t old = rng->state;
	uint32_t xorshifted, rot;

	rng->state = old * PCG32_MULT + rng->inc;
	/* Output permutation works on the old state so the LCG step and the output overlap. */
	xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
	rot = (uint32_t)(old >> 59);
	/* (-rot & 31) keeps the left shift defined when rot == 0. */
	return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
}

void pccx__rng_seed(pccx_rng *rng, uint64_t initstate, uint64_t initseq)
{
	rng->state = 0;
	rng->inc = (initseq << 1) | 1u;
	pccx__rng_next_u32(rng);
	rng->state += initstate;
	pccx__rng_next_u32(rng);
}

double pccx__rng_u53_to_double(uint32_t first, uint32_t second)
{
	uint64_t bits = (((uint64_t)first << 32) | second) >> 11;

	/* bits < 2^53 converts exactly; scaling by a power of two is exact. */
	return (double)bits * 0x1.0p-53;
}

float pccx__rng_u24_to_float(uint32_t x)
{
	return (float)(x >> 8) * 0x1.0p-24f;
}

double pccx__rng_uniform(pccx_rng *rng)
{
	/* Two statements: the order of the two draws must not be left to the compiler. */
	uint32_t first = pccx__rng_next_u32(rng);
	uint32_t second = pccx__rng_next_u32(rng);

	return pccx__rng_u53_to_double(first, second);
}

float pccx__rng_uniform_float(pccx_rng *rng)
{
	return pccx__rng_u24_to_float(pccx__rng_next_u32(rng));
}
