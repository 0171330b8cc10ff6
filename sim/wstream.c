// SPDX-License-Identifier: MIT
/*
 * The stream FIFOs of 16-byte beats: the four weight-stream FIFOs (HP0-HP3, 4096 deep), the
 * fmap FIFO (DataMover 4 -> MEMCPY engine) and the result FIFO (MEMCPY engine -> DataMover 5).
 * A producer that has requested data reserves room first, so a DataMover never has more
 * bytes in flight than the FIFO can take: weights are fetched ahead of consumption up to the
 * FIFO's depth and no further.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

int pccx__sim_beatq_init(struct sim_beatq *q, uint32_t depth)
{
	q->data = calloc(depth, SIM_BEAT);
	if (!q->data)
		return PCCX_ERR_NOMEM;
	q->depth = depth;
	q->head = q->level = q->reserved = 0;
	return 0;
}

void pccx__sim_beatq_free(struct sim_beatq *q)
{
	free(q->data);
	q->data = NULL;
}

void pccx__sim_beatq_clear(struct sim_beatq *q)
{
	q->head = q->level = q->reserved = 0;
}
