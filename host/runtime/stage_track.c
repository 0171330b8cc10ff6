// SPDX-License-Identifier: MIT
#include <stdlib.h>

#include "stage_track.h"

static int cmp_stage_insn(const void *pa, const void *pb, void *user)
{
	const struct pccx_job_builder_stage *st = user;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	if (st[a].insn != st[b].insn)
		return st[a].insn < st[b].insn ? -1 : 1;
	return (a > b) - (a < b);
}

int pccx__stage_track_begin(struct pccx_stage_track *t, const struct pccx_job_builder_stage *st,
			    uint32_t n, const struct pccx_l2_range *wr, pccx_diag *d)
{
	uint32_t k;

	if (t->cap < n) {
		uint32_t **a[] = { &t->by_insn, &t->wait, &t->merged };
		size_t i;

		for (i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
			uint32_t *na = realloc(*a[i], n * sizeof(uint32_t));

			if (!na)
				return pccx__fail(d, PCCX_ERR_NOMEM, "verify: out of memory");
			*a[i] = na;
		}
		t->cap = n;
	}
	t->st = st;
	t->wr = wr;
	t->n = n;
	for (k = 0; k < n; k++)
		t->by_insn[k] = k;
	if (n)
		qsort_r(t->by_insn, n, sizeof(*t->by_insn), cmp_stage_insn, (void *)st);
	t->n_wait = 0;
	t->low = 0;
	return PCCX_OK;
}

/* Have all instructions before stage k's last writer that write its range completed? */
static bool writers_done(struct pccx_stage_track *t, uint32_t k, uint32_t index,
			 pccx_stage_done_fn done, void *user)
{
	const struct pccx_job_builder_stage *ds = &t->st[k];
	uint64_t lo = ds->word, hi = lo + (uint64_t)ds->rows * pccx_words_for(ds->cols);
	uint32_t j;

	/* instructions complete for good: only those from the first one still running on can be
	 * outstanding (a few units' worth), so the scans start there */
	while (t->low < ds->insn && (t->low == index || done(user, t->low)))
		t->low++;
	for (j = t->low; j < ds->insn; j++) {
		const struct pccx_l2_range *r = &t->wr[j];

		if (!r->words || r->base >= hi || lo >= (uint64_t)r->base + r->words)
			continue;
		if (j != index && !done(user, j))
			return false;
	}
	return true;
}

uint32_t pccx__stage_track_retire(struct pccx_stage_track *t, uint32_t index,
				  pccx_stage_done_fn done, void *user, const uint32_t **ready)
{
	const struct pccx_job_builder_stage *st = t->st;
	uint32_t n = 0, i = 0, w, kept = 0, out = 0, lo = 0, hi = t->n;

	/* the stages whose last writer this is, found by bisection, merged in stage order with
	 * those still waiting */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (st[t->by_insn[mid]].insn < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (i < t->n_wait || (lo < t->n && st[t->by_insn[lo]].insn == index)) {
		bool from_wait = i < t->n_wait;

		if (from_wait && lo < t->n && st[t->by_insn[lo]].insn == index &&
		    t->by_insn[lo] < t->wait[i])
			from_wait = false;
		t->merged[n++] = from_wait ? t->wait[i++] : t->by_insn[lo++];
	}
	/* the ready ones stay in merged[], in order (out <= w) */
	for (w = 0; w < n; w++) {
		uint32_t k = t->merged[w];

		if (writers_done(t, k, index, done, user))
			t->merged[out++] = k;
		else
			t->wait[kept++] = k;
	}
	t->n_wait = kept;
	*ready = t->merged;
	return out;
}

uint32_t pccx__stage_track_waiting(const struct pccx_stage_track *t)
{
	return t->n_wait;
}

void pccx__stage_track_free(struct pccx_stage_track *t)
{
	free(t->by_insn);
	free(t->wait);
	free(t->merged);
	t->by_insn = t->wait = t->merged = NULL;
	t->cap = 0;
}
