// SPDX-License-Identifier: MIT
/*
 * Window commands: the weight reads of a GEMV whose bytes depend on its data (docs/isa.md:
 * GEMV rowmask, FEATURES.ROWMASK, and GEMV on q4c weights, FEATURES.COLSKIP).
 *
 * When such a GEMV starts, each lane lists the records of its port's range it will take, in
 * order (rowmask.c: the kept rows; q4c.c: the columns of non-zero inputs and their blocks'
 * scales). The command engine has pushed the instruction's stream commands marked as
 * windows: a weight DataMover reaching a window waits until the GEMV that consumes it has its
 * list, then reads the window as a sequence of reads, one per run of consecutive listed
 * records inside it, each split into bursts and booked on the DDR model like any command's;
 * a read's bursts follow the previous read's last one at once (the fetch unit knows the whole
 * list, so it needs no data back before it issues the next address), within the same limit
 * of bursts in flight and FIFO room. The window's one status is posted when its last burst
 * has delivered (datamover.c).
 */
#include <stdlib.h>

#include "sim_int.h"

bool pccx__sim_win_ready(const struct pccx_sim *s, const struct sim_dm *dm)
{
	const struct sim_matmul *mm = &s->gemv;

	if (!dm->cmd_level || !dm->cmd[dm->cmd_head].window || dm->ch >= PCCX_WSTREAM_PORTS)
		return true;
	return mm->busy && mm->window && mm->phase >= 1 && mm->lane[dm->ch].win_left;
}

bool pccx__sim_win_open(struct pccx_sim *s, struct sim_dm *dm, uint8_t *host)
{
	struct sim_lane *l = &s->gemv.lane[dm->ch];
	uint64_t lo, hi;
	uint32_t i;

	if (dm->cur.btt > l->win_left)
		return false;      /* more than the GEMV may read: INTERR */
	dm->win = true;
	dm->win_cmd = dm->cur;
	dm->win_host = host;
	dm->win_base = l->win_range - l->win_left;
	dm->win_pos = 0;
	l->win_left -= dm->cur.btt;
	/* the bytes its reads take: the parts of the records inside it */
	dm->win_bytes = 0;
	for (i = l->win_rec; i < l->n_rec && l->rec[i].off < dm->win_base + dm->cur.btt; i++) {
		lo = l->rec[i].off > dm->win_base ? l->rec[i].off : dm->win_base;
		hi = l->rec[i].off + l->rec[i].bytes;
		if (hi > dm->win_base + dm->cur.btt)
			hi = dm->win_base + dm->cur.btt;
		if (hi > lo)
			dm->win_bytes += hi - lo;
	}
	return true;
}

bool pccx__sim_win_next(struct pccx_sim *s, struct sim_dm *dm)
{
	const struct sim_lane *l = &s->gemv.lane[dm->ch];
	uint64_t lo = dm->win_base + dm->win_pos, end = dm->win_base + dm->win_cmd.btt, hi;
	uint32_t i, j;

	if (lo >= end)
		return false;
	/* the first record that ends after lo: the records ascend, so search from the last
	 * read's (records before it end at or before lo) */
	for (i = l->win_rec; i < l->n_rec; i++)
		if (l->rec[i].off + l->rec[i].bytes > lo)
			break;
	if (i == l->n_rec || l->rec[i].off >= end) {
		dm->win_pos = dm->win_cmd.btt;
		return false;
	}
	/* the run of records from there that follow each other in the range */
	for (j = i + 1; j < l->n_rec && l->rec[j].off == l->rec[j - 1].off + l->rec[j - 1].bytes;
	     j++)
		;
	if (l->rec[i].off > lo)
		lo = l->rec[i].off;
	hi = l->rec[j - 1].off + l->rec[j - 1].bytes;
	if (hi > end)
		hi = end;
	/* the next read starts at the first record this one does not cover to its end */
	while (i < j && l->rec[i].off + l->rec[i].bytes <= hi)
		i++;
	s->gemv.lane[dm->ch].win_rec = i;
	dm->cur = dm->win_cmd;
	dm->cur.window = false;
	dm->cur.addr = dm->win_cmd.addr + (lo - dm->win_base);
	dm->cur.btt = (uint32_t)(hi - lo);
	dm->host = dm->win_host + (lo - dm->win_base);
	dm->win_pos = hi - dm->win_base;
	return true;
}

int pccx__sim_win_records(struct sim_lane *l, uint32_t max)
{
	l->rec = malloc(((size_t)max + 1) * sizeof(*l->rec));
	l->n_rec = 0;
	l->win_rec = 0;
	l->inplace = false;
	l->batch = 0;
	return l->rec ? 0 : PCCX_ERR_NOMEM;
}

void pccx__sim_win_add(struct sim_lane *l, uint64_t off, uint32_t bytes, uint32_t id)
{
	l->rec[l->n_rec++] = (struct sim_rec){ off, bytes, id };
	l->bytes_left += bytes;
}
