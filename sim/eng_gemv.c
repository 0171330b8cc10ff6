// SPDX-License-Identifier: MIT
/*
 * The GEMV lanes, and the lane machinery the GEMM array shares.
 *
 * Timing of one instruction: (1) the activation rows are read from L2 (one word per cycle
 * after the L2 latency) and, for q4, quantised per 32-block; (2) each lane p takes the rows of
 * weight port p, at most one 16-byte beat per AXI cycle (the port width), as the weight FIFO
 * supplies them — GEMV computes a q4 beat (32 INT4 MACs) or an f32 beat (4 FP32 MACs) per core
 * cycle per lane, faster than a port delivers, so it is bound by the stream; (3) a fixed tail
 * for the reduction, output conversion and the last L2 write.
 *
 * Function: each row record is computed when its last beat arrives, with the numerics module
 * (pccx__f32_row_dot; f32t collects the whole matrix for pccx__f32_colsum) and the results are
 * stored (pccx__out_store, accm reading the old values) at completion. Q4 rows with scales
 * are computed with the reference's single-thread row kernels (the same bits as
 * pccx__q4_row_dot, reference/kernels.h), a batch of rows at a time where they lie in host
 * memory (the weight FIFOs hold where their beats came from, wstream.c), on a second thread
 * (rowq.c): the results are only read at completion, so holding complete rows changes nothing
 * but the host's time.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "pccx_num.h"
#include "sim_int.h"

#define SIM_MAX_F32T_BYTES (1ull << 28)
/* Rows computed together at most: long enough runs for the kernel's prefetch of the next
 * group of rows to pay (rows are read in host memory, so only the results wait); with a
 * second thread (rowq.c), short enough that it keeps close behind the stream. */
#define SIM_Q4_BATCH_BYTES (1u << 20)
#define SIM_Q4_BATCH_BYTES_RQ (1u << 18)
/* With a second thread, a lane's rows are posted this far ahead of the beats that deliver
 * them, in batches of SIM_Q4_AHEAD_BATCH bytes (below). */
#define SIM_Q4_AHEAD_BYTES (4u << 20)
#define SIM_Q4_AHEAD_BATCH (1u << 19)

void pccx__sim_matmul_abort(struct pccx_sim *s, struct sim_matmul *mm)
{
	unsigned p;

	pccx__sim_rowq_wait(s);        /* batches in progress read the activations */
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		free(mm->lane[p].q4c);     /* records not computed: no one reads their sums */
		mm->lane[p].q4c = NULL;
		free(mm->lane[p].row);
		mm->lane[p].row = NULL;
		free(mm->lane[p].rec);
		mm->lane[p].rec = NULL;
		free(mm->lane[p].isum);
		mm->lane[p].isum = NULL;
	}
	free(mm->x);
	free(mm->q8);
	free(mm->sx);
	free(mm->xp);
	free(mm->xsum);
	free(mm->act);
	mm->xp = NULL;
	mm->xsum = NULL;
	mm->act = NULL;
	free(mm->y);
	free(mm->out);
	free(mm->tmp);
	free(mm->sc);
	free(mm->wt);
	mm->x = NULL;
	mm->q8 = NULL;
	mm->sx = NULL;
	mm->y = NULL;
	mm->out = NULL;
	mm->tmp = NULL;
	mm->sc = NULL;
	mm->wt = NULL;
	mm->busy = false;
	mm->op = NULL;
}

/*
 * The stream instruction whose bytes port p delivers next has changed: skip those with none
 * there, and those already complete. A GEMM with no rows on this port can complete while a
 * GEMV issued before it still streams here (the two engines run side by side); when that GEMV's
 * lane ends, the port must pass the GEMM by too, or every later stream instruction would wait
 * for this port forever. Sequence numbers not yet given out stop the walk.
 */
static void advance_port(struct pccx_sim *s, unsigned p)
{
	while (s->port_seq[p] != s->stream_seq) {
		struct sim_matmul *m = NULL;

		if (s->gemv.busy && s->gemv.seq == s->port_seq[p])
			m = &s->gemv;
		else if (s->gemm.busy && s->gemm.seq == s->port_seq[p])
			m = &s->gemm;
		if (m && m->lane[p].bytes_left)
			return;
		s->port_seq[p]++;
	}
}

/* The host kernels' view of the quantised activations (q4 with scales). */
static int q4_kernel_prepare(struct sim_matmul *mm)
{
	uint32_t nb = mm->k / PCCX_Q4_BLOCK, r;

	mm->xp = malloc((size_t)mm->m * mm->k + 1);
	mm->xsum = malloc(((size_t)mm->m * nb + 1) * sizeof(*mm->xsum));
	mm->act = malloc((size_t)mm->m * sizeof(*mm->act));
	if (!mm->xp || !mm->xsum || !mm->act)
		return PCCX_ERR_NOMEM;
	for (r = 0; r < mm->m; r++) {
		struct pccx_kern_act *a = &mm->act[r];

		a->k = mm->k;
		a->q8 = mm->q8 + (size_t)r * mm->k;
		a->sx = mm->sx + (size_t)r * nb;
		a->xp = mm->xp + (size_t)r * mm->k;
		a->xsum = mm->xsum + (size_t)r * nb;
		pccx__kern_act_prepare(a);
	}
	return 0;
}

/* Rows of a lane computed together in place (0: the rows are copied out beat by beat). */
static uint32_t lane_batch(struct pccx_sim *s, uint64_t row_bytes)
{
	if (row_bytes > (uint64_t)SIM_ROW_BEATS * SIM_BEAT)
		return 0;
	return (uint32_t)((pccx__sim_rowq_active(s) ? SIM_Q4_BATCH_BYTES_RQ : SIM_Q4_BATCH_BYTES) /
			  row_bytes);
}

int pccx__sim_matmul_start(struct pccx_sim *s, struct sim_matmul *mm, struct sim_op *op)
{
	const struct pccx_effects *fx = &op->fx;
	uint32_t src = op->in.f[PCCX_FID_A_src];
	uint32_t r, kw, rowmax;
	uint64_t row_bytes;
	unsigned p;

	memset(mm, 0, sizeof(*mm));
	mm->op = op;
	mm->ws = fx->ws;
	mm->m = fx->m;
	mm->n = fx->ws.n;
	mm->k = fx->ws.k;
	mm->accm = op->in.f[PCCX_FID_A_accm] != 0;
	mm->findemax = op->in.f[PCCX_FID_A_findemax] != 0;
	mm->rowmask = op->in.f[PCCX_FID_A_rowmask] != 0;
	mm->window = fx->window;
	kw = pccx_words_for(mm->k);
	row_bytes = pccx__wstream_row_bytes(&mm->ws);
	rowmax = (mm->k > mm->n ? mm->k : mm->n) + 8;

	mm->x = malloc((size_t)mm->m * mm->k * sizeof(*mm->x));
	mm->y = calloc((size_t)mm->m * mm->n, sizeof(*mm->y));
	mm->out = malloc((size_t)mm->m * mm->n * sizeof(*mm->out));
	mm->tmp = malloc((size_t)rowmax * sizeof(*mm->tmp));
	mm->sc = malloc((size_t)(mm->k / PCCX_Q4_BLOCK + 1) * sizeof(*mm->sc));
	if (!mm->x || !mm->y || !mm->out || !mm->tmp || !mm->sc)
		goto fail;
	for (r = 0; r < mm->m; r++)
		pccx__sim_l2_get(s, src + r * kw, mm->x + (size_t)r * mm->k, mm->k);
	if (mm->ws.fmt == PCCX_WFMT_Q4 || mm->ws.fmt == PCCX_WFMT_Q4C) {
		mm->q8 = malloc((size_t)mm->m * mm->k);
		mm->sx = malloc((size_t)mm->m * (mm->k / PCCX_Q4_BLOCK) * sizeof(float) + 1);
		if (!mm->q8 || !mm->sx)
			goto fail;
		for (r = 0; r < mm->m; r++)
			pccx__kern_q8_quantize(mm->x + (size_t)r * mm->k, mm->k,
					       mm->q8 + (size_t)r * mm->k,
					       mm->sx + (size_t)r * (mm->k / PCCX_Q4_BLOCK));
		if (mm->ws.fmt == PCCX_WFMT_Q4 && mm->ws.w_scale && q4_kernel_prepare(mm))
			goto fail;
	} else if (mm->ws.fmt == PCCX_WFMT_F32T || mm->ws.fmt == PCCX_WFMT_F32) {
		/* the whole matrix, for the reference's F32 kernels at completion: rows padded
		 * to whole vectors (their padding is never an output) */
		bool t = mm->ws.fmt == PCCX_WFMT_F32T;
		uint32_t rows = t ? mm->k : mm->n, width = t ? mm->n : mm->k;
		uint64_t bytes;

		mm->wt_stride = (width + 15) & ~15u;
		bytes = (uint64_t)rows * width * sizeof(*mm->wt);
		if (bytes <= SIM_MAX_F32T_BYTES)
			mm->wt = calloc(rows, (size_t)mm->wt_stride * sizeof(*mm->wt));
		if (t && !mm->wt)
			goto fail;       /* f32t has no row-by-row form */
	}
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct sim_lane *l = &mm->lane[p];

		pccx__wstream_port_rows(&mm->ws, p, &l->row_first, &l->row_count);
		l->row_bytes = row_bytes;
		l->bytes_left = (uint64_t)l->row_count * row_bytes;
		l->batch = mm->act ? lane_batch(s, row_bytes) : 0;
		l->inplace = l->batch != 0;
		/* in place, a row wrapping around the FIFO's storage is copied out */
		if (l->row_count && !(l->row = malloc(row_bytes ? row_bytes : PCCX_BEAT_BYTES)))
			goto fail;
	}
	mm->phase = 0;
	mm->phase_end = s->core_cycle + s->cfg.l2_latency + (uint64_t)mm->m * kw +
			(mm->ws.fmt == PCCX_WFMT_F32 || mm->ws.fmt == PCCX_WFMT_F32T ? 0 :
			 s->cfg.quant_latency);
	if (mm->rowmask && pccx__sim_rowmask_start(s, mm))
		goto fail;
	if (mm->ws.fmt == PCCX_WFMT_Q4C && pccx__sim_q4c_start(mm))
		goto fail;
	if (op->unit == PCCX_SIM_U_GEMM)
		mm->mac_rate = mm->ws.fmt == PCCX_WFMT_Q4 ? s->cfg.gemm_q4_macs
							   : s->cfg.gemm_f32_macs;
	mm->seq = s->stream_seq++;
	mm->busy = true;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		advance_port(s, p);
	return 0;
fail:
	pccx__sim_matmul_abort(s, mm);
	return PCCX_ERR_NOMEM;
}

/* y[i] of row r0 + i of every input row for the n q4 row records at w. */
static void q4_rows(const struct pccx_sim *s, const struct sim_matmul *mm, const uint8_t *w,
		    uint32_t n, uint32_t r0)
{
	pccx__kern_q4_apply(&s->q4, w, mm->lane[0].row_bytes, n, mm->act, mm->m, mm->y + r0,
			    mm->n);
}

static void lane_flush(struct pccx_sim *s, struct sim_matmul *mm, unsigned p)
{
	struct sim_lane *l = &mm->lane[p];

	pccx__sim_q4c_flush(s, l);
	/* on the second thread: the rows lie in host memory and the results wait for complete() */
	if (l->pend)
		pccx__sim_rowq_post(s, l->pend_host, l->row_bytes, l->pend, mm->act, mm->m,
				    mm->y + l->pend_row, mm->n);
	l->pend = 0;
}

void pccx__sim_matmul_flush(struct pccx_sim *s, struct sim_matmul *mm)
{
	unsigned p;

	if (mm->busy)
		for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
			lane_flush(s, mm, p);
	pccx__sim_rowq_wait(s);
}

void pccx__sim_matmul_no_ahead(struct sim_matmul *mm)
{
	unsigned p;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		mm->lane[p].ahead_host = NULL;
}

/* Post lane p's rows ahead, up to SIM_Q4_AHEAD_BYTES past row `row` (whose beats just came). */
static void ahead_post(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t row)
{
	struct sim_lane *l = &mm->lane[p];
	uint32_t per = (uint32_t)(SIM_Q4_AHEAD_BATCH / l->row_bytes), n;
	const uint8_t *w;

	if (!per)
		per = 1;
	while (l->ahead_end < l->ahead_lim &&
	       (uint64_t)(l->ahead_end - row) * l->row_bytes < SIM_Q4_AHEAD_BYTES) {
		n = l->ahead_lim - l->ahead_end < per ? l->ahead_lim - l->ahead_end : per;
		w = l->ahead_host + (size_t)(l->ahead_end - l->ahead_row) * l->row_bytes;
		/* a device write there gives these rows up (pccx__sim_wq_settle) */
		pccx__sim_wq_ref(&s->wq[p], w, (uint64_t)n * l->row_bytes);
		pccx__sim_rowq_post(s, w, l->row_bytes, n, mm->act, mm->m, mm->y + l->ahead_end,
				    mm->n);
		l->ahead_end += n;
	}
}

/*
 * The rows after `row` (whose beats just came, at w) will most likely follow it in host
 * memory, as the row before did: the second thread computes them ahead of their beats, up to
 * the end of the lane or of the DMA window holding w (nothing past it may be read). Each row
 * is checked when its beats come; rows that come from anywhere else end it (ahead_check()).
 */
static void ahead_start(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t row,
			const uint8_t *w)
{
	struct sim_lane *l = &mm->lane[p];
	uintptr_t at = (uintptr_t)w;
	uint64_t fit = 0;
	size_t i;

	for (i = 0; i < s->n_win; i++) {
		uintptr_t h = (uintptr_t)s->win[i].host;

		if (at >= h && at - h < s->win[i].len) {
			fit = (s->win[i].len - (at - h)) / l->row_bytes;
			break;
		}
	}
	if (fit < 2)
		return;
	l->ahead_host = w;
	l->ahead_row = row;
	l->ahead_end = row;
	l->ahead_lim = l->row_first + l->row_count - row < fit ? l->row_first + l->row_count
								 : row + (uint32_t)fit;
	ahead_post(s, mm, p, row);
}

/*
 * Lane p's row `row` came, at w: true when it was computed ahead from those very bytes. Rows
 * past those ahead go the usual way; a row from elsewhere gives the lane's rows ahead up (the
 * second thread done with them first, so that the usual way's results are the last written).
 */
static bool ahead_check(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t row,
			const uint8_t *w)
{
	struct sim_lane *l = &mm->lane[p];

	if (row < l->ahead_end &&
	    w == l->ahead_host + (size_t)(row - l->ahead_row) * l->row_bytes) {
		ahead_post(s, mm, p, row);
		return true;
	}
	if (row < l->ahead_lim)
		pccx__sim_rowq_wait(s);
	l->ahead_host = NULL;
	l->ahead_off = true;
	return false;
}

/*
 * Row `row` of lane p is complete: when it lies in host memory in one piece it is held with
 * the rows before it (if it follows them there) and the batch is computed when full or at the
 * last row; otherwise it is copied out and computed alone. With a second thread, once two
 * rows have followed each other in host memory the rest are computed ahead.
 */
static void lane_row_inplace(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t row)
{
	struct sim_lane *l = &mm->lane[p];
	uint32_t beats = (uint32_t)(l->row_bytes / SIM_BEAT);
	const uint8_t *w = pccx__sim_wq_host(&s->wq[p], l->row_beat, beats);
	uint32_t left;

	if (l->ahead_host && ahead_check(s, mm, p, row, w))
		return;
	if (w && !l->ahead_off && !l->ahead_host && l->pend == 1 && !mm->window &&
	    l->pend_row + 1 == row && l->pend_host + l->row_bytes == w &&
	    pccx__sim_rowq_active(s)) {
		lane_flush(s, mm, p);
		ahead_start(s, mm, p, row, w);
		if (l->ahead_host)
			return;
	}
	if (w) {
		if (l->pend && l->pend_host + (size_t)l->pend * l->row_bytes != w)
			lane_flush(s, mm, p);
		if (!l->pend) {
			l->pend_host = w;
			l->pend_row = row;
		}
		l->pend++;
		/* towards the lane's last row the batches halve (down to a group of the kernel's
		 * 16 rows), so that little is left to compute when the instruction completes */
		left = l->row_first + l->row_count - row - 1;
		if (l->pend == l->batch || !left || (l->pend >= left && l->pend >= 16))
			lane_flush(s, mm, p);
		return;
	}
	lane_flush(s, mm, p);
	pccx__sim_wq_fetch(&s->wq[p], l->row_beat, beats, l->row);
	q4_rows(s, mm, l->row, 1, row);
}

/* The last beat of stored row `row` arrived in lane p: compute what depends on it. */
static void sim_matmul_row_done(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t row)
{
	const uint8_t *rec = mm->lane[p].row;
	uint32_t r, i;

	switch (mm->ws.fmt) {
	case PCCX_WFMT_Q4: {
		uint32_t nb = mm->k / PCCX_Q4_BLOCK;

		if (mm->lane[p].inplace) {
			lane_row_inplace(s, mm, p, row);
			return;
		}
		if (mm->act) {
			q4_rows(s, mm, rec, 1, row);
			return;
		}
		uint32_t sbeats = mm->ws.w_scale ?
				  (nb * 2 + PCCX_BEAT_BYTES - 1) / PCCX_BEAT_BYTES : 0;
		const uint16_t *scales = NULL;

		if (mm->ws.w_scale) {
			for (i = 0; i < nb; i++)
				mm->sc[i] = (uint16_t)(rec[2 * i] | (rec[2 * i + 1] << 8));
			scales = mm->sc;
		}
		for (r = 0; r < mm->m; r++)
			mm->y[(size_t)r * mm->n + row] =
				pccx__q4_row_dot(rec + (size_t)sbeats * PCCX_BEAT_BYTES, scales,
						 mm->q8 + (size_t)r * mm->k,
						 mm->sx + (size_t)r * nb, mm->k);
		return;
	}
	case PCCX_WFMT_F32:
		if (mm->wt) {
			sim_f32s_from_le(mm->wt + (size_t)row * mm->wt_stride, rec, mm->k);
			return;
		}
		sim_f32s_from_le(mm->tmp, rec, mm->k);
		for (r = 0; r < mm->m; r++)
			mm->y[(size_t)r * mm->n + row] =
				pccx__f32_row_dot(mm->tmp, mm->x + (size_t)r * mm->k, mm->k);
		return;
	case PCCX_WFMT_F32T:
		sim_f32s_from_le(mm->wt + (size_t)row * mm->wt_stride, rec, mm->n);
		return;
	case PCCX_WFMT_Q4C:
		pccx__sim_q4c_record(s, mm, p, row);
		return;
	}
}

static void complete(struct pccx_sim *s, struct sim_matmul *mm)
{
	struct sim_op *op = mm->op;
	uint32_t dest = op->in.f[PCCX_FID_A_dest], nw = pccx_words_for(mm->n);
	uint32_t r, i;

	pccx__sim_rowq_wait(s);        /* the rows computed on the second thread */
	/* the reference's single-thread F32 kernels: pccx__f32_colsum / pccx__f32_row_dot per
	 * output, vectorised across outputs (the same bits) */
	if (mm->ws.fmt == PCCX_WFMT_F32T)
		pccx__kern_f32t_cols(PCCX_KERN_AUTO, mm->wt,
				     (uint64_t)mm->wt_stride * sizeof(*mm->wt), mm->k, mm->n, mm->x,
				     mm->k, mm->m, mm->y, mm->n);
	else if (mm->ws.fmt == PCCX_WFMT_F32 && mm->wt)
		pccx__kern_f32_rows(PCCX_KERN_AUTO, mm->wt,
				    (uint64_t)mm->wt_stride * sizeof(*mm->wt), mm->n, mm->k, mm->x,
				    mm->k, mm->m, mm->y, mm->n);
	for (r = 0; r < mm->m; r++) {
		float *y = mm->y + (size_t)r * mm->n;
		float *out = mm->out + (size_t)r * mm->n;

		pccx__sim_l2_get(s, dest + r * nw, out, mm->n);
		for (i = 0; i < mm->n; i++)
			out[i] = pccx__out_store(y[i], mm->accm, out[i]);
		pccx__sim_l2_put(s, dest + r * nw, out, mm->n);
	}
	if (mm->findemax)
		s->s_bits = pccx_f32_bits(pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0.0f, mm->out,
							   (size_t)mm->m * mm->n));
	pccx__sim_matmul_abort(s, mm);
	pccx__sim_retire(s, op);
}

void pccx__sim_matmul_core_tick(struct pccx_sim *s, struct sim_matmul *mm)
{
	if (!mm->busy)
		return;
	if (mm->phase == 0 && s->core_cycle >= mm->phase_end) {
		mm->phase = 1;
	} else if (mm->phase == 1 && mm->mac_rate) {
		mm->mac_budget = pccx__sim_gemm_mac_add(mm, mm->mac_budget);
	} else if (mm->phase == 2 && s->core_cycle >= mm->phase_end) {
		complete(s, mm);
	}
}

/*
 * Whole rows at the head of lane p's n beats that were computed ahead from where their beats
 * came (one check for the run: the beats lie in one span, where the rows were read): taken
 * at once, the FIFO advanced past them. Returns the beats taken (0: the rows go one by one).
 */
static uint32_t ahead_run(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t n)
{
	struct sim_lane *l = &mm->lane[p];
	struct sim_beatq *q = &s->wq[p];
	uint32_t row = l->row_first + l->rows_done, bpr = (uint32_t)(l->row_bytes / SIM_BEAT);
	uint32_t k = n / bpr, beats;
	const uint8_t *w;

	ahead_post(s, mm, p, row);
	if (row + k > l->ahead_end)
		k = row < l->ahead_end ? l->ahead_end - row : 0;
	/* the last row is left to the usual way, which checks it and moves the rows ahead on */
	if (k < 2)
		return 0;
	k--;
	beats = k * bpr;
	w = pccx__sim_wq_host(q, q->taken, beats);
	if (w != l->ahead_host + (size_t)(row - l->ahead_row) * l->row_bytes)
		return 0;
	q->taken += beats;
	q->level -= beats;
	q->head += beats;
	if (q->head >= q->cap)
		q->head -= q->cap;
	l->rows_done += k;
	return beats;
}

void pccx__sim_lane_take(struct pccx_sim *s, struct sim_matmul *mm, unsigned p, uint32_t n)
{
	struct sim_lane *l = &mm->lane[p];
	struct sim_beatq *q = &s->wq[p];

	l->bytes_left -= (uint64_t)n * PCCX_BEAT_BYTES;
	while (n) {
		uint64_t rb = l->rec ? l->rec[l->rows_done].bytes : l->row_bytes;

		if (l->ahead_host && !l->got && n >= rb / PCCX_BEAT_BYTES) {
			uint32_t done = ahead_run(s, mm, p, n);

			n -= done;
			if (done)
				continue;
		}
		uint64_t want = (rb - l->got) / PCCX_BEAT_BYTES;
		uint32_t run = n < want ? n : (uint32_t)want;

		if (!l->got)
			l->row_beat = q->taken;
		if (!l->inplace)
			pccx__sim_wq_fetch(q, q->taken, run, l->row + l->got);
		q->taken += run;
		q->level -= run;
		q->head += run;
		if (q->head >= q->cap)
			q->head -= q->cap;
		n -= run;
		l->got += (uint64_t)run * PCCX_BEAT_BYTES;
		if (l->got == rb) {
			sim_matmul_row_done(s, mm, p, l->rec ? l->rec[l->rows_done].id
							     : l->row_first + l->rows_done);
			l->rows_done++;
			l->got = 0;
		}
	}
	/* spans stay while the row in reception needs them */
	pccx__sim_wq_trim(q, l->inplace && l->got ? l->row_beat : q->taken);
	if (!l->bytes_left)
		advance_port(s, p);
}

void pccx__sim_matmul_axi_tick(struct pccx_sim *s, struct sim_matmul *mm)
{
	bool starved = false, left = false;
	unsigned p;

	if (!mm->busy || mm->phase != 1)
		return;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct sim_lane *l = &mm->lane[p];

		if (!l->bytes_left)
			continue;
		left = true;
		if (s->port_seq[p] != mm->seq || !s->wq[p].level) {
			starved = true;
			continue;
		}
		if (mm->mac_rate) {
			uint64_t cost = (uint64_t)pccx__sim_gemm_beat_macs(mm, l->got) * mm->m;

			if (mm->mac_budget < cost)
				continue;      /* compute-bound: the array is busy */
			mm->mac_budget -= cost;
		}
		pccx__sim_lane_take(s, mm, p, 1);
	}
	if (starved)
		s->stall_weights_ps += s->axi_ps;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		if (mm->lane[p].bytes_left || mm->lane[p].win_left ||
		    (mm->window && s->dm[p].win))
			return;
	(void)left;
	mm->phase = 2;
	mm->phase_end = s->core_cycle + (mm->mac_rate ? s->cfg.gemm_tail : s->cfg.gemv_tail);
}
