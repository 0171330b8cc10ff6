/* SPDX-License-Identifier: MIT */
/*
 * An SFU instruction's ISA fields as the numerics module's operation and flags: the one
 * mapping the reference executor and the simulator's SFU both use (userspace only: the
 * kernel module and the firmware never compute, so they do not include isa/num).
 */
#ifndef PCCX_CVO_SFU_H
#define PCCX_CVO_SFU_H

#include "pccx_isa.h"
#include "pccx_num.h"

/* The numerics operation of CVO function `func`, or -1 (LDS; a code with no function). */
static inline int pccx__cvo_sfu_fn(uint32_t func)
{
	static const int8_t fn[16] = {
		[PCCX_CVO_EXP] = PCCX_SFU_EXP, [PCCX_CVO_SQRT] = PCCX_SFU_SQRT,
		[PCCX_CVO_GELU] = PCCX_SFU_GELU, [PCCX_CVO_SIN] = PCCX_SFU_SIN,
		[PCCX_CVO_COS] = PCCX_SFU_COS, [PCCX_CVO_SUM] = PCCX_SFU_SUM,
		[PCCX_CVO_SCALE] = PCCX_SFU_SCALE, [PCCX_CVO_RECIP] = PCCX_SFU_RECIP,
		[PCCX_CVO_MUL] = PCCX_SFU_MUL, [PCCX_CVO_ADD] = PCCX_SFU_ADD,
		[PCCX_CVO_TANH] = PCCX_SFU_TANH, [PCCX_CVO_MAX] = PCCX_SFU_MAX,
		[PCCX_CVO_SUMSQ] = PCCX_SFU_SUMSQ, [PCCX_CVO_LDS] = -1,
		[PCCX_CVO_RSQRT] = PCCX_SFU_RSQRT, [PCCX_CVO_SMUL] = PCCX_SFU_MUL,
	};

	return func < 16 ? fn[func] : -1;
}

/*
 * The numerics flags of CVO function `func` with the ISA flag bits `flags` (PCCX_CVOF_*):
 * recip_scale is "mean" for the reductions and "divide" for SCALE; smul is MUL with its
 * destination scaled by S first.
 */
static inline unsigned pccx__cvo_sfu_flags(uint32_t func, uint32_t flags)
{
	unsigned f = 0;

	if (flags & PCCX_CVOF_SUB)
		f |= PCCX_SFU_F_SUB;
	if (flags & PCCX_CVOF_RELU)
		f |= PCCX_SFU_F_RELU;
	if (flags & PCCX_CVOF_ACCM)
		f |= PCCX_SFU_F_ACCM;
	if (flags & PCCX_CVOF_RECIP)
		f |= (func == PCCX_CVO_SUM || func == PCCX_CVO_SUMSQ) ? PCCX_SFU_F_MEAN
								      : PCCX_SFU_F_RECIP;
	if (func == PCCX_CVO_SMUL)
		f |= PCCX_SFU_F_SCALE;
	return f;
}

#endif /* PCCX_CVO_SFU_H */
