/* SPDX-License-Identifier: MIT */
/* Internal side of ggml_types.c; the public API is in pccx/modelfile.h. */
#ifndef PCCX_GGML_TYPES_H
#define PCCX_GGML_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "pccx/modelfile.h"

/*
 * A Q4 block holding Inf or NaN is refused wherever device Q4 weights are made: when decoded
 * values are requantised (pccx__q4_quantize_block says so) and when ggml Q4_0 is imported
 * without loss (pccx_q4_0_scale_finite). This is that refusal, one message for every path:
 * "WHAT: block B (elements E0..E1) holds Inf or NaN, HOW", or with row >= 0
 * "WHAT: row R, block B (elements E0..E1 of the row) holds Inf or NaN, HOW".
 * Returns PCCX_ERR_RANGE.
 */
int pccx__q4_refuse_nonfinite(pccx_diag *d, const char *what, int64_t row, uint64_t block,
			      const char *how);

/* A Q4_0 block's weights d * (u - 8) are all finite exactly when its FP16 scale d is. */
static inline bool pccx_q4_0_scale_finite(uint16_t d)
{
	return (d & 0x7C00u) != 0x7C00u;
}

/* pccx__q4_refuse_nonfinite for a Q4_0 block whose FP16 scale is Inf or NaN, naming it. */
int pccx__q4_0_refuse(pccx_diag *d, const char *what, int64_t row, uint64_t block,
		      uint16_t scale);

#endif /* PCCX_GGML_TYPES_H */
