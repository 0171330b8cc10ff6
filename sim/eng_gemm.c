// SPDX-License-Identifier: MIT
/*
 * The 32x32 GEMM array. It shares the lanes of eng_gemv.c (all four weight ports, rows dealt
 * in quarters, one beat per port per AXI cycle) and differs in its compute rate: the weights
 * of one pass serve all M activation rows, so a beat holding w weights costs M * w MACs of the
 * array's budget (gemm_q4_macs INT4 MACs per cycle with two MACs packed per DSP, or
 * gemm_f32_macs). Small M is bound by the stream like GEMV; large M by the array.
 */
#include "sim_int.h"

/* The MACs the array can hold ready: four cycles' worth and a row of beats' slack. */
uint64_t pccx__sim_gemm_mac_cap(const struct sim_matmul *mm)
{
	return 4ull * mm->mac_rate + 64ull * mm->m;
}

uint64_t pccx__sim_gemm_mac_add(const struct sim_matmul *mm, uint64_t budget)
{
	uint64_t cap = pccx__sim_gemm_mac_cap(mm);

	return budget + mm->mac_rate < cap ? budget + mm->mac_rate : cap;
}

/* The most MACs one beat of this instruction's rows contributes per activation row. */
uint32_t pccx__sim_gemm_beat_macs_max(const struct sim_matmul *mm)
{
	return mm->ws.fmt == PCCX_WFMT_Q4 ? PCCX_Q4_BLOCK : PCCX_BEAT_BYTES / 4;
}

/*
 * Whether the array keeps up with the stream for the rest of the instruction: every AXI edge
 * takes at most four beats (one per port), i.e. at most `most` MACs, and at least one core
 * edge, adding mac_rate up to a cap of more than that, comes between two AXI edges when the
 * core clock is the faster. So once the budget covers `most` before an AXI edge, it does
 * before every later one: no beat waits for the array, and what the budget holds beyond
 * `most` decides nothing (each GEMM starts from 0).
 */
bool pccx__sim_gemm_keeps_up(const struct pccx_sim *s, const struct sim_matmul *mm)
{
	uint64_t most = (uint64_t)PCCX_WSTREAM_PORTS * pccx__sim_gemm_beat_macs_max(mm) * mm->m;

	return s->core_ps <= s->axi_ps && most <= mm->mac_rate && mm->mac_budget >= most;
}

/* MACs one beat at byte offset `byte_in_row` of a row record contributes per activation row. */
uint32_t pccx__sim_gemm_beat_macs(const struct sim_matmul *mm, uint64_t byte_in_row)
{
	switch (mm->ws.fmt) {
	case PCCX_WFMT_Q4: {
		uint32_t nb = mm->k / PCCX_Q4_BLOCK;
		uint32_t sbeats = mm->ws.w_scale ?
				  (nb * 2 + PCCX_BEAT_BYTES - 1) / PCCX_BEAT_BYTES : 0;

		return byte_in_row < (uint64_t)sbeats * PCCX_BEAT_BYTES ? 0 : PCCX_Q4_BLOCK;
	}
	case PCCX_WFMT_F32:
	case PCCX_WFMT_F32T:
		return PCCX_BEAT_BYTES / 4;
	}
	return 0;
}
