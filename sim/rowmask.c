// SPDX-License-Identifier: MIT
/*
 * GEMV rowmask (FEATURES.ROWMASK, docs/isa.md): the weight fetch unit of the GEMV lanes.
 *
 * When a rowmask GEMV starts, the lanes read its mask (the old destination, N elements = N/4
 * L2 words, after the activation row) and note the kept rows of each port's quarter. The
 * command engine has pushed the instruction's stream commands marked as windows: a weight
 * DataMover reaching a window waits until the GEMV that consumes it has read its mask, then
 * reads the window as a sequence of ordinary read commands, one per run of consecutive kept
 * rows inside it (each split into bursts and booked on the DDR model like any command), and
 * posts the window's one status after the last (datamover.c). The lane takes the kept rows'
 * records in order; the dropped rows' results are +0.
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

		l->win_left = (uint64_t)l->row_count * l->row_bytes;
		l->inplace = false;
		l->batch = 0;
		l->n_kept = 0;
		l->kept = malloc(((size_t)l->row_count + 1) * sizeof(*l->kept));
		if (!l->kept) {
			free(mask);
			return PCCX_ERR_NOMEM;
		}
		for (j = l->row_first; j < l->row_first + l->row_count; j++)
			if (kept(mask[j]))
				l->kept[l->n_kept++] = j;
		l->bytes_left = (uint64_t)l->n_kept * l->row_bytes;
	}
	free(mask);
	/* the mask is read after the activation row, one word per cycle */
	mm->phase_end += pccx_words_for(mm->n);
	return 0;
}

bool pccx__sim_win_ready(const struct pccx_sim *s, const struct sim_dm *dm)
{
	const struct sim_matmul *mm = &s->gemv;

	if (!dm->cmd_level || !dm->cmd[dm->cmd_head].window || dm->ch >= PCCX_WSTREAM_PORTS)
		return true;
	return mm->busy && mm->rowmask && mm->phase >= 1 && mm->lane[dm->ch].win_left;
}

bool pccx__sim_win_open(struct pccx_sim *s, struct sim_dm *dm, uint8_t *host)
{
	struct sim_lane *l = &s->gemv.lane[dm->ch];
	uint64_t range = (uint64_t)l->row_count * l->row_bytes;

	if (dm->cur.btt > l->win_left)
		return false;      /* more than the GEMV may read: INTERR */
	dm->win = true;
	dm->win_cmd = dm->cur;
	dm->win_host = host;
	dm->win_base = range - l->win_left;
	dm->win_pos = 0;
	l->win_left -= dm->cur.btt;
	return true;
}

bool pccx__sim_win_next(struct pccx_sim *s, struct sim_dm *dm)
{
	const struct sim_lane *l = &s->gemv.lane[dm->ch];
	uint64_t lo = dm->win_base + dm->win_pos, end = dm->win_base + dm->win_cmd.btt, hi;
	uint32_t i, j;

	if (lo >= end)
		return false;
	/* the first kept row whose record ends after lo */
	for (i = 0; i < l->n_kept; i++)
		if ((uint64_t)(l->kept[i] - l->row_first + 1) * l->row_bytes > lo)
			break;
	if (i == l->n_kept || (uint64_t)(l->kept[i] - l->row_first) * l->row_bytes >= end) {
		dm->win_pos = dm->win_cmd.btt;
		return false;
	}
	/* the run of consecutive kept rows from there */
	for (j = i + 1; j < l->n_kept && l->kept[j] == l->kept[j - 1] + 1; j++)
		;
	if ((uint64_t)(l->kept[i] - l->row_first) * l->row_bytes > lo)
		lo = (uint64_t)(l->kept[i] - l->row_first) * l->row_bytes;
	hi = (uint64_t)(l->kept[j - 1] - l->row_first + 1) * l->row_bytes;
	if (hi > end)
		hi = end;
	dm->cur = dm->win_cmd;
	dm->cur.window = false;
	dm->cur.addr = dm->win_cmd.addr + (lo - dm->win_base);
	dm->cur.btt = (uint32_t)(hi - lo);
	dm->host = dm->win_host + (lo - dm->win_base);
	dm->win_pos = hi - dm->win_base;
	return true;
}
