// SPDX-License-Identifier: MIT
/*
 * GEMV rowmask (FEATURES.ROWMASK, docs/isa.md): which rows the lanes take.
 *
 * The lanes read the mask (the old destination, N elements = N/4 L2 words, after the
 * activation row) and list the kept rows of each port's quarter; the window commands read
 * only those (window.c). The dropped rows' results are +0.
 */
#include <stdlib.h>

#include "pccx_num.h"
#include "sim_int.h"

/* A mask element keeps its row unless it is +-0 (a NaN keeps it). */
static bool kept(float v)
{
	return (pccx_f32_bits(v) & 0x7fffffffu) != 0;
}

int pccx__sim_rowmask_start(struct pccx_sim *s, struct sim_matmul *mm)
{
	uint32_t dest = mm->op->in.f[PCCX_FID_A_dest], j;
	float *mask = malloc((size_t)mm->n * sizeof(*mask));
	unsigned p;

	if (!mask)
		return PCCX_ERR_NOMEM;
	pccx__sim_l2_get(s, dest, mask, mm->n);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct sim_lane *l = &mm->lane[p];

		l->win_range = (uint64_t)l->row_count * l->row_bytes;
		l->win_left = l->win_range;
		l->bytes_left = 0;
		if (pccx__sim_win_records(l, l->row_count)) {
			free(mask);
			return PCCX_ERR_NOMEM;
		}
		for (j = l->row_first; j < l->row_first + l->row_count; j++)
			if (kept(mask[j]))
				pccx__sim_win_add(l, (uint64_t)(j - l->row_first) * l->row_bytes,
						  (uint32_t)l->row_bytes, j);
	}
	free(mask);
	/* the mask is read after the activation row, one word per cycle */
	mm->phase_end += pccx_words_for(mm->n);
	return 0;
}
