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
	case PCCX_WFMT_Q4C:
		return 0;         /* no row is stored in one piece (pccx__wstream_q4c_*) */
	}
	return 0;
}

/*
 * Q4C: a port's output rows are stored as column records, block by block (docs/isa.md):
 * per 32-block of K, the 32 columns' nibbles (the port's rows in order, two a byte, the even
 * row in the low nibble), then the rows' FP16 scales of that block; each record in whole beats.
 */
uint64_t pccx__wstream_q4c_col_bytes(uint32_t rows)
{
	return beats(((uint64_t)rows + 1) / 2) * PCCX_BEAT_BYTES;
}

uint64_t pccx__wstream_q4c_scale_bytes(uint32_t rows)
{
	return beats((uint64_t)rows * 2) * PCCX_BEAT_BYTES;
}

uint64_t pccx__wstream_q4c_block_bytes(uint32_t rows)
{
	return PCCX_Q4_BLOCK * pccx__wstream_q4c_col_bytes(rows) +
	       pccx__wstream_q4c_scale_bytes(rows);
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
	if (ws->fmt == PCCX_WFMT_Q4C)
		return count ? (uint64_t)(ws->k / PCCX_Q4_BLOCK) *
				       pccx__wstream_q4c_block_bytes(count) : 0;
	return (uint64_t)count * pccx__wstream_row_bytes(ws);
}

uint64_t pccx__wstream_port_offset(const struct pccx_wshape *ws, unsigned port)
{
	uint64_t off = 0;
	unsigned p;

	for (p = 0; p < port && p < PCCX_WSTREAM_PORTS; p++)
		off += pccx__wstream_port_bytes(ws, p);
	return off;
}
