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

int sim_beatq_init(struct sim_beatq *q, uint32_t depth)
{
	q->data = calloc(depth, SIM_BEAT);
	if (!q->data)
		return PCCX_ERR_NOMEM;
	q->depth = depth;
	q->head = q->level = q->reserved = 0;
	return 0;
}

void sim_beatq_free(struct sim_beatq *q)
{
	free(q->data);
	q->data = NULL;
}

void sim_beatq_clear(struct sim_beatq *q)
{
	q->head = q->level = q->reserved = 0;
}

/* Beats that may still be requested. */
uint32_t sim_beatq_room(const struct sim_beatq *q)
{
	return q->depth - q->level - q->reserved;
}

/* Push one beat whose room was reserved (or, for the result FIFO, checked). */
void sim_beatq_push(struct sim_beatq *q, const uint8_t *beat)
{
	uint32_t tail = q->head + q->level;

	if (tail >= q->depth)
		tail -= q->depth;

	memcpy(q->data + (size_t)tail * SIM_BEAT, beat, SIM_BEAT);
	q->level++;
}

void sim_beatq_pop(struct sim_beatq *q, uint8_t *beat)
{
	if (beat)
		memcpy(beat, q->data + (size_t)q->head * SIM_BEAT, SIM_BEAT);
	if (++q->head == q->depth)
		q->head = 0;
	q->level--;
}
