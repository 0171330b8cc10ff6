/* SPDX-License-Identifier: MIT */
/*
 * Constants of the isa/num elementary functions (transc.c). Internal to the numerics module;
 * kept in a header so that `pccx numerics --derive` can re-derive every one of them and
 * compare it with the value compiled in. Each is RN(exact value) unless noted.
 */
#ifndef PCCX_NUM_CONSTS_H
#define PCCX_NUM_CONSTS_H

/* exp: ln 2 = LN2_HI + LN2_LO, LN2_HI = floor(ln 2 * 2^16) / 2^16 (15 significant bits, so
 * k * LN2_HI is exact for |k| < 2^9). */
#define PCCX_NUM_LN2_HI		0x1.62e4p-1f		/* 0.693145751953125 */
#define PCCX_NUM_LN2_LO		0x1.7f7d1cp-20f		/* RN(ln 2 - LN2_HI) */
#define PCCX_NUM_INV_LN2	0x1.715476p+0f		/* RN(1 / ln 2) */
#define PCCX_NUM_RNE_MAGIC	0x1.8p23f		/* 1.5 * 2^23 */

/* exp: Taylor coefficients RN(1/n!), n = 2..8. */
#define PCCX_NUM_EXP_C2		0x1p-1f
#define PCCX_NUM_EXP_C3		0x1.555556p-3f
#define PCCX_NUM_EXP_C4		0x1.555556p-5f
#define PCCX_NUM_EXP_C5		0x1.111112p-7f
#define PCCX_NUM_EXP_C6		0x1.6c16c2p-10f
#define PCCX_NUM_EXP_C7		0x1.a01a02p-13f
#define PCCX_NUM_EXP_C8		0x1.a01a02p-16f

/* tanh, |x| <= 1: T(s) interpolates (tanh(x)/x - 1)/s, s = x^2, at the 9 Chebyshev nodes of
 * [0, 1]; coefficients of s^0 .. s^8 rounded to nearest. */
#define PCCX_NUM_TANH_T0	(-0x1.555556p-2f)
#define PCCX_NUM_TANH_T1	0x1.11110ep-3f
#define PCCX_NUM_TANH_T2	(-0x1.ba1a40p-5f)
#define PCCX_NUM_TANH_T3	0x1.66324ap-6f
#define PCCX_NUM_TANH_T4	(-0x1.2137f4p-7f)
#define PCCX_NUM_TANH_T5	0x1.c7eb48p-9f
#define PCCX_NUM_TANH_T6	(-0x1.459fc8p-10f)
#define PCCX_NUM_TANH_T7	0x1.6217ecp-12f
#define PCCX_NUM_TANH_T8	(-0x1.969254p-15f)

/* GELU: C = sqrt(2/pi) and A = 0.044715 as float-float pairs HI + LO. */
#define PCCX_NUM_GELU_C_HI	0x1.988454p-1f
#define PCCX_NUM_GELU_C_LO	(-0x1.857936p-26f)	/* RN(C - C_HI) */
#define PCCX_NUM_GELU_A_HI	0x1.6e4e26p-5f
#define PCCX_NUM_GELU_A_LO	0x1.a9003ep-30f		/* RN(A - A_HI) */

/* sin/cos: pi/2 = PIO2_HI + PIO2_LO; pi/4 as float bits (no reduction at or below it). */
#define PCCX_NUM_PIO2_HI	0x1.921fb6p+0f
#define PCCX_NUM_PIO2_LO	(-0x1.777a5cp-25f)	/* RN(pi/2 - PIO2_HI) */
#define PCCX_NUM_PIO4_BITS	0x3F490FDBu

/* sin/cos: Taylor coefficients RN(-1/3!), RN(1/5!), RN(-1/7!), RN(1/9!) and
 * RN(1/4!), RN(-1/6!), RN(1/8!), RN(-1/10!). */
#define PCCX_NUM_SIN_S1		(-0x1.555556p-3f)
#define PCCX_NUM_SIN_S2		0x1.111112p-7f
#define PCCX_NUM_SIN_S3		(-0x1.a01a02p-13f)
#define PCCX_NUM_SIN_S4		0x1.71de3ap-19f
#define PCCX_NUM_COS_C2		0x1.555556p-5f
#define PCCX_NUM_COS_C3		(-0x1.6c16c2p-10f)
#define PCCX_NUM_COS_C4		0x1.a01a02p-16f
#define PCCX_NUM_COS_C5		(-0x1.27e4fcp-22f)

/* The first 256 bits of 2/pi; bit i (weight 2^-i, i >= 1) is bit 31 - (i-1)%32 of word (i-1)/32. */
#define PCCX_NUM_TWO_OVER_PI_WORDS 8
#define PCCX_NUM_TWO_OVER_PI \
	0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, \
	0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u

#endif /* PCCX_NUM_CONSTS_H */
