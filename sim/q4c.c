// SPDX-License-Identifier: MIT
/*
 * GEMV on q4c weights (FEATURES.COLSKIP, docs/isa.md): column records, block by block.
 *
 * The quantiser has the activation's INT8 values and block scales when the stream starts; the
 * lanes list, per 32-block of K that pccx__q4c_block_read keeps, the column records of the
 * inputs whose INT8 value is not 0 and then the block's scale record. Each column record adds
 * to the rows' INT32 sums, each scale record ends the block for the rows (isa/num: the bits of
 * the dense GEMV when the weights' scales are finite).
 *
 * Timing is the GEMV lane's (one beat per AXI cycle): a column beat is 32 INT4 MACs into 32
 * rows' sums, a scale beat ends 8 rows' blocks (docs/isa.md states that hardware).
 *
 * A lane's records are computed a batch at a time where they lie in host memory, on the row
 * thread (rowq.c) as ordered jobs: each record continues the sums the one before left, so
 * they run in the order the lane took them, and the results are only read at completion.
 */
#include <stdlib.h>

#include "kernels.h"
#include "pccx_num.h"
#include "sim_int.h"

int pccx__sim_q4c_start(struct sim_matmul *mm)
{
	uint32_t nb = mm->k / PCCX_Q4_BLOCK, b, c;
	unsigned p;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct sim_lane *l = &mm->lane[p];
		uint64_t cb = pccx__wstream_q4c_col_bytes(l->row_count);
		uint64_t sb = pccx__wstream_q4c_scale_bytes(l->row_count);
		uint64_t bb = pccx__wstream_q4c_block_bytes(l->row_count);

		l->win_range = l->row_count ? (uint64_t)nb * bb : 0;
		l->win_left = l->win_range;
		l->bytes_left = 0;
		if (!l->row_count)
			continue;
		free(l->row);
		l->row = malloc(sb);
		l->isum = calloc(l->row_count, sizeof(*l->isum));
		if (!l->row || !l->isum || pccx__sim_win_records(l, nb * (PCCX_Q4_BLOCK + 1)))
			return PCCX_ERR_NOMEM;
		l->inplace = true;         /* records are read where they lie (pccx__sim_q4c_record) */
		for (b = 0; b < nb; b++) {
			const int8_t *q = mm->q8 + (size_t)b * PCCX_Q4_BLOCK;

			if (!pccx__q4c_block_read(q, mm->sx[b]))
				continue;
			for (c = 0; c < PCCX_Q4_BLOCK; c++)
				if (q[c])
					pccx__sim_win_add(l, b * bb + c * cb, (uint32_t)cb,
							  b * (PCCX_Q4_BLOCK + 1) + c);
			pccx__sim_win_add(l, b * bb + PCCX_Q4_BLOCK * cb, (uint32_t)sb,
					  b * (PCCX_Q4_BLOCK + 1) + PCCX_Q4_BLOCK);
		}
	}
	return 0;
}

/* Records a batch holds at most: enough that a job's cost is the records', not the
 * hand-over's (a column record of 512 rows is about 0.1 us of AVX2). */
#define Q4C_BATCH 128u

/* One record: a column of a block (the input's INT8 value x) or the block's scales (its
 * activation scale sx, end set). */
struct q4c_op {
	const uint8_t *rec;
	int32_t x;
	float sx;
	bool end;
};

struct sim_q4c_batch {
	uint32_t n, rows;
	int32_t *isum;
	float *acc;
	struct q4c_op op[Q4C_BATCH];
};

static void q4c_op_run(const struct q4c_op *o, uint32_t rows, int32_t *isum, float *acc)
{
	if (!o->end)
		pccx__kern_q4c_column(PCCX_KERN_AUTO, o->rec, rows, o->x, isum);
	else
		pccx__kern_q4c_block_end(PCCX_KERN_AUTO, o->rec, rows, o->sx, isum, acc);
}

static void q4c_batch_run(void *arg)
{
	struct sim_q4c_batch *bt = arg;
	uint32_t i;

	for (i = 0; i < bt->n; i++)
		q4c_op_run(&bt->op[i], bt->rows, bt->isum, bt->acc);
	free(bt);
}

void pccx__sim_q4c_flush(struct pccx_sim *s, struct sim_lane *l)
{
	struct sim_q4c_batch *bt = l->q4c;

	l->q4c = NULL;
	if (bt && bt->n)
		pccx__sim_rowq_post_ordered(s, q4c_batch_run, bt);
	else
		free(bt);
}

void pccx__sim_q4c_record(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t id)
{
	struct sim_lane *l = &mm->lane[p];
	uint32_t b = id / (PCCX_Q4_BLOCK + 1), c = id % (PCCX_Q4_BLOCK + 1);
	uint32_t beats = l->rec[l->rows_done].bytes / SIM_BEAT;
	const uint8_t *rec = pccx__sim_wq_host(&s->wq[p], l->row_beat, beats);
	struct q4c_op o = { rec, 0, 0.0f, c == PCCX_Q4_BLOCK };

	if (!o.end)
		o.x = mm->q8[(size_t)b * PCCX_Q4_BLOCK + c];
	else
		o.sx = mm->sx[b];
	if (rec && !l->q4c && (l->q4c = malloc(sizeof(*l->q4c)))) {
		l->q4c->n = 0;
		l->q4c->rows = l->row_count;
		l->q4c->isum = l->isum;
		l->q4c->acc = mm->y + l->row_first;
	}
	if (rec && l->q4c) {
		l->q4c->op[l->q4c->n++] = o;
		if (l->q4c->n == Q4C_BATCH || l->rows_done + 1 == l->n_rec)
			pccx__sim_q4c_flush(s, l);
		return;
	}
	/* not in host memory in one piece (or no memory for a batch): copied out of the FIFO's
	 * storage and spans, and computed here after the records before it */
	pccx__sim_q4c_flush(s, l);
	pccx__sim_rowq_wait(s);
	if (!rec) {
		pccx__sim_wq_fetch(&s->wq[p], l->row_beat, beats, l->row);
		o.rec = l->row;
	}
	q4c_op_run(&o, l->row_count, l->isum, mm->y + l->row_first);
}
