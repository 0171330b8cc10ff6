// SPDX-License-Identifier: MIT
/*
 * The MEMCPY engines to and from the host. The host side of each transfer is a DataMover
 * command the host pushes (channel 4 reads host memory into the fmap FIFO, channel 5 writes
 * the result FIFO to host memory); the instruction moves the L2 side, one word per core cycle:
 * host -> L2 pops the fmap FIFO into L2 (waiting for data), L2 -> host reads L2 into the
 * result FIFO (waiting for room). The instruction completes when its last word has moved;
 * the DataMover's status says when the bytes have reached host memory.
 */
#include "sim_int.h"

void pccx__sim_dma_start(struct pccx_sim *s, struct sim_op *op)
{
	struct sim_xfer *x = op->unit == PCCX_SIM_U_DMA_IN ? &s->dma_in : &s->dma_out;

	x->op = op;
	x->busy = true;
	x->words = (uint32_t)(op->fx.xfer_bytes / PCCX_BEAT_BYTES);
	x->done = 0;
	x->start_after = s->core_cycle + (op->unit == PCCX_SIM_U_DMA_OUT ? s->cfg.l2_latency : 1);
}

void pccx__sim_dma_core_tick(struct pccx_sim *s)
{
	struct sim_xfer *x = &s->dma_in;

	if (x->busy && s->core_cycle >= x->start_after) {
		if (s->fmapq.level) {
			sim_beatq_pop(&s->fmapq,
				      pccx__sim_l2_word(s, x->op->in.f[PCCX_FID_B_dest] + x->done));
			x->done++;
		} else {
			s->st.stall_fmap++;
		}
		if (x->done == x->words) {
			x->busy = false;
			pccx__sim_retire(s, x->op);
		}
	}
	x = &s->dma_out;
	if (x->busy && s->core_cycle >= x->start_after) {
		if (s->resq.level < s->resq.depth) {
			sim_beatq_push(&s->resq,
				       pccx__sim_l2_word(s, x->op->in.f[PCCX_FID_B_src] + x->done));
			x->done++;
		} else {
			s->st.stall_result++;
		}
		if (x->done == x->words) {
			x->busy = false;
			pccx__sim_retire(s, x->op);
		}
	}
}

void pccx__sim_dma_abort(struct pccx_sim *s)
{
	s->dma_in.busy = false;
	s->dma_out.busy = false;
}
