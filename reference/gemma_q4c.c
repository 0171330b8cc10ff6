// SPDX-License-Identifier: MIT
/*
 * The sparse layers' W_down in q4c layout (docs/model-files.md, docs/isa.md): per weight port,
 * its quarter of the output rows as column records, block by block, so that a device with
 * FEATURES.COLSKIP reads only the columns of the hidden units that are not 0.
 */
#include <string.h>

#include "gemma_model.h"
#include "pccx_num.h"

/* Every FP16 block scale of the rows finite: skipping a block is then exact (isa/num). */
static bool scales_finite(const struct pccx_gemma_model *m, int32_t t)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	uint32_t nb = T->cols / PCCX_Q4_BLOCK, r, b;

	for (r = 0; r < T->rows; r++) {
		const uint16_t *sc = pccx_gemma_q4_scales(pccx_gemma_row(m, t, r));

		for (b = 0; b < nb; b++)
			if ((sc[b] & 0x7C00u) == 0x7C00u)
				return false;
	}
	return true;
}

/* Rows [first, first + rows) of the Q4 row records at `w` into one port's q4c records. */
static void port_records(const uint8_t *w, uint64_t rb, uint32_t k, uint32_t first, uint32_t rows,
			 uint8_t *dst)
{
	uint32_t nb = k / PCCX_Q4_BLOCK, b, i, c;
	uint64_t cb = pccx__wstream_q4c_col_bytes(rows), bb = pccx__wstream_q4c_block_bytes(rows);
	uint64_t sbytes = pccx_gemma_q4_scale_bytes(k);

	for (b = 0; b < nb; b++) {
		uint8_t *blk = dst + b * bb;

		memset(blk, 0, bb);
		for (i = 0; i < rows; i++) {
			const uint8_t *rec = w + (uint64_t)(first + i) * rb;
			const uint8_t *nib = rec + sbytes + (size_t)b * (PCCX_Q4_BLOCK / 2);
			unsigned shift = 4 * (i & 1);

			/* column c of the block is nibble c of its 16 bytes, low nibble first */
			for (c = 0; c < PCCX_Q4_BLOCK; c++)
				blk[c * cb + i / 2] |=
					(uint8_t)(((nib[c / 2] >> (4 * (c & 1))) & 0xF) << shift);
			blk[PCCX_Q4_BLOCK * cb + 2 * i] = rec[2 * b];
			blk[PCCX_Q4_BLOCK * cb + 2 * i + 1] = rec[2 * b + 1];
		}
	}
}

void pccx__q4c_pack(const uint8_t *w, uint32_t n, uint32_t k, uint8_t *dst)
{
	struct pccx_wshape q4 = { n, k, PCCX_WFMT_Q4, true }, q4c = { n, k, PCCX_WFMT_Q4C, true };
	uint64_t rb = pccx__wstream_row_bytes(&q4);
	uint32_t first, rows;
	unsigned p;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		pccx__wstream_port_rows(&q4c, p, &first, &rows);
		if (rows)
			port_records(w, rb, k, first, rows, dst + pccx__wstream_port_offset(&q4c, p));
	}
}

void pccx__gemma_model_q4c(struct pccx_gemma_model *m)
{
	uint32_t l;

	for (l = 0; l < m->cfg.n_layers; l++) {
		struct pccx_gemma_layer_w *lw = &m->w.layer[l];
		int32_t t = lw->ffn_down;

		lw->down_q4c_ok = false;
		if (!lw->down_q4c)
			continue;
		if (!scales_finite(m, t))
			continue;  /* the graph streams this layer's W_down whole */
		pccx__q4c_pack(pccx_gemma_row(m, t, 0), m->t[t].rows, m->t[t].cols,
			       m->data + lw->down_q4c);
		lw->down_q4c_ok = true;
	}
}
