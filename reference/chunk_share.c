// SPDX-License-Identifier: MIT
/* Which plan regions a prompt chunk's tokens can share (chunk_share.h). */
#include <stdlib.h>
#include <string.h>

#include "chunk_share.h"
#include "pccx_job.h"

#define W(n) pccx_words_for(n)

int pccx__plan_region_of(const struct pccx_gemma_plan *p, uint32_t a, uint64_t words)
{
	uint32_t lo = 0, hi = p->n_regions;

	while (lo < hi) {	/* the last region starting at or before a */
		uint32_t mid = (lo + hi) / 2;

		if (p->region[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a + words > (uint64_t)p->region[lo - 1] + p->region_words[lo - 1])
		return -1;
	return (int)lo - 1;
}

/* An op's L2 reads (at most three ranges) and write (at most one). */
struct access {
	struct pccx_l2_range rd[3], wr;
	unsigned n_rd;
};

static void add_read(struct access *a, uint32_t base, uint64_t words)
{
	if (words)
		a->rd[a->n_rd++] = (struct pccx_l2_range){ base, (uint32_t)words };
}

static bool accesses(const struct pccx_rec_op *op, struct access *a)
{
	struct pccx_effects fx;

	memset(a, 0, sizeof(*a));
	switch (op->kind) {
	case PCCX_REC_MATMUL:
		add_read(a, op->u.mm.src, (uint64_t)op->u.mm.m * W(op->u.mm.k));
		if (op->u.mm.accm)
			add_read(a, op->u.mm.dst, (uint64_t)op->u.mm.m * W(op->u.mm.n));
		a->wr = (struct pccx_l2_range){ op->u.mm.dst,
						(uint32_t)((uint64_t)op->u.mm.m * W(op->u.mm.n)) };
		return true;
	case PCCX_REC_CVO:
		if (!pccx__rec_cvo_effects(&op->u.cvo, &fx))
			return false;
		add_read(a, fx.rd[0].base, fx.rd[0].words);
		add_read(a, fx.rd[1].base, fx.rd[1].words);
		a->wr = fx.wr;
		return true;
	case PCCX_REC_COPY:
		add_read(a, op->u.copy.src, op->u.copy.words);
		a->wr = (struct pccx_l2_range){ op->u.copy.dst, op->u.copy.words };
		return true;
	case PCCX_REC_LOAD:
		a->wr = (struct pccx_l2_range){ op->u.mem.l2, W(op->u.mem.n) };
		return true;
	case PCCX_REC_STORE:
		add_read(a, op->u.mem.l2, W(op->u.mem.n));
		return true;
	case PCCX_REC_STAGE:
		add_read(a, op->u.stage.addr, (uint64_t)op->u.stage.rows * W(op->u.stage.cols));
		return true;
	default:
		return true;
	}
}

static uint64_t bit(int i)
{
	return 1ull << i;
}

int pccx__chunk_share_classify(const struct pccx_gemma_plan *p, const struct pccx_rec *rec,
			       uint32_t *seen, struct pccx_chunk_share *sh)
{
	/* per word, the segment (epoch) that last wrote it and the one that last read it */
	uint32_t *wr = seen, *rd = seen + PCCX_L2_WORDS, epoch = 1, w, k;
	uint64_t nonlocal = 0, notsame = 0, all = p->n_regions >= 64 ? ~0ull :
						     bit((int)p->n_regions) - 1;
	size_t o;

	memset(seen, 0, 2 * sizeof(uint32_t) * PCCX_L2_WORDS);
	sh->bad_op = -1;
	for (o = 0; o < rec->n; o++) {
		const struct pccx_rec_op *op = &rec->op[o];
		struct access a;
		int i;

		if (pccx__rec_is_weight_matmul(op)) {
			/* its rows are the tokens' own: a GEMM reads and writes one per token */
			int si = pccx__plan_region_of(p, op->u.mm.src, W(op->u.mm.k));
			int di = pccx__plan_region_of(p, op->u.mm.dst, W(op->u.mm.n));

			if (si < 0 || di < 0)
				goto bad;
			nonlocal |= bit(si) | bit(di);
			notsame |= bit(si) | bit(di);
			epoch++;
			continue;
		}
		if (!accesses(op, &a))
			goto bad;
		for (k = 0; k < a.n_rd; k++) {
			i = pccx__plan_region_of(p, a.rd[k].base, a.rd[k].words);
			if (i < 0)
				goto bad;
			for (w = a.rd[k].base; w < a.rd[k].base + a.rd[k].words; w++) {
				if (wr[w] != epoch)
					nonlocal |= bit(i);
				rd[w] = epoch;
			}
		}
		if (!a.wr.words)
			continue;
		i = pccx__plan_region_of(p, a.wr.base, a.wr.words);
		if (i < 0)
			goto bad;
		for (w = a.wr.base; w < a.wr.base + a.wr.words; w++) {
			/* a block of weights: written by loads of the model only, never after a
			 * read of the same segment (a later token would read the new bytes) */
			if ((p->region_same & bit(i)) &&
			    (op->kind != PCCX_REC_LOAD || op->u.mem.buf != PCCX_NPU_BUF_WEIGHTS ||
			     rd[w] == epoch))
				notsame |= bit(i);
			wr[w] = epoch;
		}
	}
	sh->same = p->region_same & ~notsame & all;
	sh->scratch = all & ~nonlocal & ~p->region_same;
	return PCCX_OK;
bad:
	sh->bad_op = (int)o;
	sh->same = sh->scratch = 0;
	return PCCX_ERR_INTERNAL;
}

/* Mark ops [s, e] in a bitmap. */
static void mark(uint64_t *live, size_t s, size_t e)
{
	size_t a = s / 64, b = e / 64, k;
	uint64_t lo = ~0ull << (s % 64), hi = ~0ull >> (63 - e % 64);

	if (a == b) {
		live[a] |= lo & hi;
		return;
	}
	live[a] |= lo;
	for (k = a + 1; k < b; k++)
		live[k] = ~0ull;
	live[b] |= hi;
}

int pccx__chunk_share_conflicts(const struct pccx_gemma_plan *p, const struct pccx_rec *rec,
				uint64_t mask, uint32_t *seen,
				uint64_t conflict[PCCX_GEMMA_PLAN_REGIONS])
{
	/* per word: 1 + the op that wrote the value it holds, 1 + the last op that read it */
	uint32_t *def = seen, *use = seen + PCCX_L2_WORDS, w, k, i, j, pd, pu;
	size_t nw = (rec->n + 63) / 64, o;
	uint64_t *live = calloc((size_t)p->n_regions * nw + 1, sizeof(*live));
	int ri;

	if (!live)
		return PCCX_ERR_NOMEM;
	memset(seen, 0, 2 * sizeof(uint32_t) * PCCX_L2_WORDS);
	for (o = 0; o < rec->n; o++) {
		struct access a;

		if (!accesses(&rec->op[o], &a))
			goto bad;
		for (k = 0; k < a.n_rd; k++) {
			ri = pccx__plan_region_of(p, a.rd[k].base, a.rd[k].words);
			if (ri < 0)
				goto bad;
			if (!(mask >> ri & 1))
				continue;
			for (w = a.rd[k].base; w < a.rd[k].base + a.rd[k].words; w++) {
				if (!def[w])
					def[w] = 1;	/* a value from before the step */
				use[w] = (uint32_t)o + 1;
			}
		}
		if (!a.wr.words)
			continue;
		ri = pccx__plan_region_of(p, a.wr.base, a.wr.words);
		if (ri < 0)
			goto bad;
		if (!(mask >> ri & 1))
			continue;
		for (w = a.wr.base, pd = pu = 0; w < a.wr.base + a.wr.words; w++) {
			/* the value it held was in L2 from its write to its last read (a vector's
			 * words mostly share both: marked once) */
			if (def[w] && (def[w] != pd || use[w] != pu)) {
				mark(live + (size_t)ri * nw, def[w] - 1,
				     use[w] > def[w] ? use[w] - 1 : def[w] - 1);
				pd = def[w];
				pu = use[w];
			}
			def[w] = (uint32_t)o + 1;
			use[w] = 0;
		}
	}
	for (i = 0; i < p->n_regions; i++) {
		if (!(mask >> i & 1))
			continue;
		for (w = p->region[i], pd = pu = 0; w < p->region[i] + p->region_words[i]; w++)
			if (def[w] && (def[w] != pd || use[w] != pu)) {
				mark(live + (size_t)i * nw, def[w] - 1,
				     use[w] > def[w] ? use[w] - 1 : def[w] - 1);
				pd = def[w];
				pu = use[w];
			}
	}
	for (i = 0; i < p->n_regions; i++) {
		conflict[i] = 0;
		for (j = 0; j < p->n_regions; j++) {
			size_t x;

			if (!(mask >> i & 1) || !(mask >> j & 1))
				continue;
			for (x = 0; x < nw; x++)
				if (live[(size_t)i * nw + x] & live[(size_t)j * nw + x]) {
					conflict[i] |= bit((int)j);
					break;
				}
		}
	}
	free(live);
	return PCCX_OK;
bad:
	free(live);
	return PCCX_ERR_INTERNAL;
}
