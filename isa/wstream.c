// SPDX-License-Identifier: MIT
/*
 * Weight-stream geometry: how many bytes each of the four weight-stream ports
 * carries for one GEMV/GEMM instruction. One definition for the validator,
 * the compiler, the command engine and the simulator.
 */
#include "pccx_isa.h"

static uint64_t beats(uint64_t bytes)
{
	return (bytes + PCCX_BEAT_BYTES - 1) / PCCX_BEAT_BYTES;
}

uint64_t pccx__wstream_row_bytes(const struct pccx_wshape *ws)
{
	switch (ws->fmt) {
	case PCCX_WFMT_Q4: {
		/* Scale beats (8 FP16 per beat, last one zero-padded), then one beat of
		 * 32 nibbles per block: a beat is exactly one block's weights. */
		uint64_t blocks = ws->k / PCCX_Q4_BLOCK;
		uint64_t scale_beats = ws->w_scale ? beats(blocks * 2) : 0;

		return (scale_beats + blocks) * PCCX_BEAT_BYTES;
	}
	case PCCX_WFMT_F32:
		return beats((uint64_t)ws->k * 4) * PCCX_BEAT_BYTES;
	case PCCX_WFMT_F32T:
		return beats((uint64_t)ws->n * 4) * PCCX_BEAT_BYTES;
	}
	return 0;
}

uint32_t pccx__wstream_rows(const struct pccx_wshape *ws)
{
	return ws->fmt == PCCX_WFMT_F32T ? ws->k : ws->n;
}

void pccx__wstream_port_rows(const struct pccx_wshape *ws, unsigned port, uint32_t *first,
			     uint32_t *count)
{
	uint32_t rows = pccx__wstream_rows(ws);
	uint32_t q = (rows + PCCX_WSTREAM_PORTS - 1) / PCCX_WSTREAM_PORTS;
	uint64_t lo = (uint64_t)q * port, hi = lo + q;

	if (lo > rows)
		lo = rows;
	if (hi > rows)
		hi = rows;
	*first = (uint32_t)lo;
	*count = (uint32_t)(hi - lo);
}

uint64_t pccx__wstream_port_bytes(const struct pccx_wshape *ws, unsigned port)
{
	uint32_t first, count;

	if (port >= PCCX_WSTREAM_PORTS)
		return 0;
	pccx__wstream_port_rows(ws, port, &first, &count);
	return (uint64_t)count * pccx__wstream_row_bytes(ws);
}
