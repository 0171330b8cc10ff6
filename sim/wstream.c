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

int pccx__sim_beatq_init(struct sim_beatq *q, uint32_t depth, uint32_t cap, uint32_t spans)
{
	q->data = calloc(cap, SIM_BEAT);
	q->span = spans ? calloc(spans, sizeof(*q->span)) : NULL;
	if (!q->data || (spans && !q->span))
		return PCCX_ERR_NOMEM;
	q->depth = depth;
	q->cap = cap;
	q->span_cap = spans;
	q->n_ref = 0;
	pccx__sim_beatq_clear(q);
	return 0;
}

void pccx__sim_beatq_free(struct sim_beatq *q)
{
	free(q->data);
	free(q->span);
	q->data = NULL;
	q->span = NULL;
}

void pccx__sim_wq_ref(struct sim_beatq *q, const uint8_t *host, uint64_t bytes)
{
	uintptr_t lo = (uintptr_t)host, hi = lo + bytes, gap, best = UINTPTR_MAX;
	uint32_t i, at = 0;

	/* the newest range first: a stream mostly continues where it was */
	for (i = q->n_ref; i-- > 0;) {
		struct sim_ref *r = &q->ref[i];

		if (lo <= r->hi && hi >= r->lo) {
			r->lo = lo < r->lo ? lo : r->lo;
			r->hi = hi > r->hi ? hi : r->hi;
			return;
		}
	}
	if (q->n_ref < SIM_WQ_REFS) {
		q->ref[q->n_ref++] = (struct sim_ref){ lo, hi };
		return;
	}
	/* no range left: the closest one grows over the gap (it only ever covers more) */
	for (i = 0; i < q->n_ref; i++) {
		gap = hi < q->ref[i].lo ? q->ref[i].lo - hi : lo - q->ref[i].hi;
		if (gap < best) {
			best = gap;
			at = i;
		}
	}
	q->ref[at].lo = lo < q->ref[at].lo ? lo : q->ref[at].lo;
	q->ref[at].hi = hi > q->ref[at].hi ? hi : q->ref[at].hi;
}

/* May the weight path read any of [host, host + bytes)? */
static bool wq_refers(const struct pccx_sim *s, const uint8_t *host, uint64_t bytes)
{
	uintptr_t lo = (uintptr_t)host, hi = lo + bytes;
	unsigned p;
	uint32_t i;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		for (i = 0; i < s->wq[p].n_ref; i++)
			if (lo < s->wq[p].ref[i].hi && hi > s->wq[p].ref[i].lo)
				return true;
	return false;
}

void pccx__sim_beatq_clear(struct sim_beatq *q)
{
	q->head = q->level = q->reserved = 0;
	q->pushed = q->taken = 0;
	q->span_head = q->span_n = 0;
}

/* Storage slot of beat `b` (taken or not: a taken beat stays until cap - depth more are). */
static uint32_t slot_of(const struct sim_beatq *q, uint64_t b)
{
	if (b >= q->taken)
		return (uint32_t)((q->head + (b - q->taken)) % q->cap);
	return (uint32_t)((q->head + q->cap - (q->taken - b) % q->cap) % q->cap);
}

static struct sim_span *span_at(const struct sim_beatq *q, uint32_t i)
{
	uint32_t at = q->span_head + i;    /* i < span_cap: one wrap at most, no division */

	return &q->span[at >= q->span_cap ? at - q->span_cap : at];
}

/* Copy beats [first, first + n) of the storage out (wrapping). */
static void store_get(const struct sim_beatq *q, uint64_t first, uint32_t n, uint8_t *dst)
{
	uint32_t slot = slot_of(q, first), run = q->cap - slot < n ? q->cap - slot : n;

	memcpy(dst, q->data + (size_t)slot * SIM_BEAT, (size_t)run * SIM_BEAT);
	memcpy(dst + (size_t)run * SIM_BEAT, q->data, (size_t)(n - run) * SIM_BEAT);
}

static void store_put(struct sim_beatq *q, uint64_t first, uint32_t n, const uint8_t *src)
{
	uint32_t slot = slot_of(q, first), run = q->cap - slot < n ? q->cap - slot : n;

	memcpy(q->data + (size_t)slot * SIM_BEAT, src, (size_t)run * SIM_BEAT);
	memcpy(q->data, src + (size_t)run * SIM_BEAT, (size_t)(n - run) * SIM_BEAT);
}

void pccx__sim_wq_push(struct sim_beatq *q, const uint8_t *host, uint32_t n)
{
	uint64_t first = q->pushed;

	q->pushed += n;
	q->level += n;
	if (q->span_n) {
		struct sim_span *sp = span_at(q, q->span_n - 1);

		if (sp->first + sp->n == first && sp->host + (size_t)sp->n * SIM_BEAT == host) {
			sp->n += n;
			pccx__sim_wq_ref(q, host, (uint64_t)n * SIM_BEAT);
			return;
		}
	}
	if (q->span_n == q->span_cap) {
		/* no span left: these beats are copied in now */
		store_put(q, first, n, host);
		return;
	}
	*span_at(q, q->span_n++) = (struct sim_span){ first, host, n };
	pccx__sim_wq_ref(q, host, (uint64_t)n * SIM_BEAT);
}

void pccx__sim_wq_fetch(const struct sim_beatq *q, uint64_t first, uint32_t n, uint8_t *dst)
{
	uint32_t i = 0;

	while (n) {
		const struct sim_span *sp = NULL;
		uint32_t run;

		while (i < q->span_n && span_at(q, i)->first + span_at(q, i)->n <= first)
			i++;
		if (i < q->span_n)
			sp = span_at(q, i);
		if (sp && sp->first <= first) {
			uint64_t end = sp->first + sp->n;

			run = end - first < n ? (uint32_t)(end - first) : n;
			memcpy(dst, sp->host + (size_t)(first - sp->first) * SIM_BEAT,
			       (size_t)run * SIM_BEAT);
		} else {
			/* before the next span (or after the last): in the storage */
			run = sp && sp->first - first < n ? (uint32_t)(sp->first - first) : n;
			store_get(q, first, run, dst);
		}
		first += run;
		n -= run;
		dst += (size_t)run * SIM_BEAT;
	}
}

const uint8_t *pccx__sim_wq_host(const struct sim_beatq *q, uint64_t first, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < q->span_n; i++) {
		const struct sim_span *sp = span_at(q, i);

		if (sp->first + sp->n <= first)
			continue;
		if (sp->first > first || first + n > sp->first + sp->n)
			return NULL;
		return sp->host + (size_t)(first - sp->first) * SIM_BEAT;
	}
	return NULL;
}

void pccx__sim_wq_trim(struct sim_beatq *q, uint64_t keep)
{
	while (q->span_n && q->span[q->span_head].first + q->span[q->span_head].n <= keep) {
		q->span_head = (q->span_head + 1) % q->span_cap;
		q->span_n--;
	}
}

/*
 * Before the device writes host memory the weight path may read (or a window closes): the
 * lanes' rows computed, those computed ahead of their beats given up (eng_gemv.c), and the
 * spans copied into the storage, as much as it holds. A write anywhere else (results, KV
 * rows) changes nothing the streams read and costs nothing here.
 */
void pccx__sim_wq_settle(struct pccx_sim *s, const uint8_t *host, uint64_t bytes)
{
	unsigned p;

	if (host && !wq_refers(s, host, bytes))
		return;
	pccx__sim_matmul_flush(s, &s->gemv);
	pccx__sim_matmul_flush(s, &s->gemm);
	pccx__sim_matmul_no_ahead(&s->gemv);
	pccx__sim_matmul_no_ahead(&s->gemm);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		struct sim_beatq *q = &s->wq[p];
		/* the storage holds the last cap beats; a span of a long stream holds more */
		uint64_t keep = q->pushed > q->cap ? q->pushed - q->cap : 0;

		q->n_ref = 0;      /* nothing is read in host memory for these beats any more */

		while (q->span_n) {
			struct sim_span *sp = &q->span[q->span_head];
			uint64_t from = sp->first > keep ? sp->first : keep;

			if (from < sp->first + sp->n)
				store_put(q, from, (uint32_t)(sp->first + sp->n - from),
					  sp->host + (size_t)(from - sp->first) * SIM_BEAT);
			q->span_head = (q->span_head + 1) % q->span_cap;
			q->span_n--;
		}
	}
}
