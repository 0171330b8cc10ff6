/* SPDX-License-Identifier: MIT */
/*
 * Host next-token sampler. The definition (docs/sampling.md) is stated over a full sort of
 * the vocabulary; the fast path below never sorts the vocabulary. It finds the K' best
 * tokens with one O(V) pass and a K'-entry heap (K' = top_k, or a bound grown until the
 * top-p / min-p cut is inside the candidates) and reproduces the definition's result bit for
 * bit: every sum is accumulated in the order the definition prescribes, the rank order is
 * a total order (logit descending, id ascending), and the weights come from one exp that
 * does not depend on libm.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/sampler.h"
#include "diag.h"
#include "rng.h"
#include "sampler.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the sampler's determinism contract needs FLT_EVAL_METHOD == 0 (no excess precision)"
#endif

/* First bound of the adaptive candidate search when top-k is off; grown 4x per retry. */
#define SMP_FIRST_BOUND 256u

struct smp_cand {
	float l;		/* penalised logit; NaN already turned into -inf */
	int32_t id;
};

struct smp_idw {
	int32_t id;
	double w;
};

struct pccx_sampler {
	pccx_sampler_config cfg;
	pccx_rng rng;
	size_t n_vocab;
	uint8_t *seen;		/* n_vocab bits; all clear between calls */
	int32_t *pen_id;	/* distinct penalised ids of this call, ascending */
	float *pen_l;		/* their penalised logits */
	size_t pen_cap;
	struct smp_cand *cand;	/* heap during selection, then rank order */
	struct smp_idw *byid;	/* top-k set re-sorted by id for the normaliser */
	int32_t *ids;
	double *w;
	double *p;
	size_t cap;		/* entries in cand, byid, ids, w, p */
	size_t last_bound;
};

/* ------------------------------------------------------------------------------------------ */
/* Numerics shared by both paths */

/* ln 2 / 32 split so that k * LN2_32_HI is exact for |k| < 2^21. */
#define LN2_32_HI	0x1.62e42feep-6
#define LN2_32_LO	0x1.a39ef35793c76p-38
#define INV_LN2_32	0x1.71547652b82fep+5	/* 32 / ln 2 */

/* 2^(j/32), j = 0..31, each correctly rounded to double. */
static const double exp2_32nds[32] = {
	0x1.0000000000000p+0, 0x1.059b0d3158574p+0,
	0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
	0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0,
	0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
	0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
	0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
	0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0,
	0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
	0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0,
	0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
	0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0,
	0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
	0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0,
	0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
	0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
	0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};

double pccx__sampler_exp(double x)
{
	double t, r, q, tj, scale;
	uint64_t bits;
	unsigned j;
	int k, e;

	if (!(x >= -700.0))
		return 0.0;
	if (x > 700.0)
		return INFINITY;
	t = x * INV_LN2_32;
	/* Conversion truncates toward zero, so +-0.5 rounds half away from zero. */
	k = (int)(t < 0.0 ? t - 0.5 : t + 0.5);
	j = (unsigned)k & 31u;
	e = (k - (int)j) / 32;
	r = (x - (double)k * LN2_32_HI) - (double)k * LN2_32_LO;
	/* e^r - 1 for |r| <= ln2/64 (truncation after r^6 < 4e-18). */
	q = 1.0 / 720.0;
	q = 1.0 / 120.0 + r * q;
	q = 1.0 / 24.0 + r * q;
	q = 1.0 / 6.0 + r * q;
	q = 0.5 + r * q;
	q = 1.0 + r * q;
	q = r * q;
	tj = exp2_32nds[j];
	/* |e| <= 1011: 2^e is a normal double and the final product is exact. */
	bits = (uint64_t)(e + 1023) << 52;
	memcpy(&scale, &bits, sizeof(scale));
	return (tj + tj * q) * scale;
}

float pccx__sampler_penalise(float x, float rho)
{
	return x > 0.0f ? x / rho : x * rho;
}

/*
 * A full sort's key: the logit descending, then the id ascending (the rank order), as one
 * unsigned number. Equal logits (+0 and -0 among them) give equal high halves.
 */
static uint64_t rank_key(float l, int32_t id)
{
	uint32_t b;

	if (l == 0.0f)
		l = 0.0f;
	memcpy(&b, &l, sizeof(b));
	b = b & 0x80000000u ? ~b : b | 0x80000000u;	/* ascending with the float */
	return (uint64_t)~b << 32 | (uint32_t)id;
}

static int32_t rank_id(uint64_t key)
{
	return (int32_t)(uint32_t)key;
}

/*
 * Keys ascending: a stable sort by the high half, a byte at a time from the lowest (LSD radix).
 * Keys given in id order keep equal logits in ascending id order. A comparison sort of 262,400
 * entries took about 30-40 ms; this one about 3.
 */
static void rank_sort(uint64_t *key, uint64_t *tmp, size_t n)
{
	uint64_t *src = key, *dst = tmp, *t;
	size_t count[256], i, sum, c;
	unsigned shift;

	for (shift = 32; shift < 64; shift += 8) {
		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xff]++;
		for (i = 0, sum = 0; i < 256; i++) {
			c = count[i];
			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	/* four passes: the sorted keys are back in key[] */
}

/* ------------------------------------------------------------------------------------------ */
/* Config */

void pccx_sampler_config_default(pccx_sampler_config *cfg)
{
	cfg->temperature = PCCX_SAMPLER_DEFAULT_TEMPERATURE;
	cfg->top_k = PCCX_SAMPLER_DEFAULT_TOP_K;
	cfg->top_p = PCCX_SAMPLER_DEFAULT_TOP_P;
	cfg->min_p = PCCX_SAMPLER_DEFAULT_MIN_P;
	cfg->repetition_penalty = PCCX_SAMPLER_DEFAULT_REP_PENALTY;
	cfg->penalty_last_n = PCCX_SAMPLER_DEFAULT_PENALTY_LAST_N;
	cfg->seed = PCCX_SAMPLER_DEFAULT_SEED;
}

int pccx_sampler_config_check(const pccx_sampler_config *cfg, pccx_diag *d)
{
	if (!cfg)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler config: NULL");
	if (!isfinite(cfg->temperature) || cfg->temperature < 0.0f)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler config: temperature = %g "
				  "(must be finite and >= 0; 0 = greedy)", (double)cfg->temperature);
	if (cfg->top_k < 0)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler config: top_k = %d "
				  "(must be >= 0; 0 = off)", (int)cfg->top_k);
	if (!(cfg->top_p > 0.0f && cfg->top_p <= 1.0f))
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "sampler config: top_p = %g (must be in (0, 1]; 1 = off)",
				  (double)cfg->top_p);
	if (!(cfg->min_p >= 0.0f && cfg->min_p <= 1.0f))
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "sampler config: min_p = %g (must be in [0, 1]; 0 = off)",
				  (double)cfg->min_p);
	if (!isfinite(cfg->repetition_penalty) || !(cfg->repetition_penalty > 0.0f))
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler config: repetition_penalty = %g "
				  "(must be finite and > 0; 1 = off)",
				  (double)cfg->repetition_penalty);
	if (cfg->penalty_last_n < PCCX_SAMPLER_PENALTY_ALL)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler config: penalty_last_n = %d "
				  "(must be >= -1; -1 = whole history, 0 = none)",
				  (int)cfg->penalty_last_n);
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Life cycle */

int pccx_sampler_create(pccx_sampler **out, const pccx_sampler_config *cfg, size_t n_vocab,
			pccx_diag *d)
{
	pccx_sampler *s;
	int rc;

	if (!out)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler: NULL output pointer");
	*out = NULL;
	rc = pccx_sampler_config_check(cfg, d);
	if (rc)
		return rc;
	if (n_vocab == 0 || n_vocab > PCCX_SAMPLER_MAX_VOCAB)
		return pccx__fail(d, PCCX_ERR_RANGE, "sampler: vocabulary size %zu (must be 1..%u)",
				  n_vocab, PCCX_SAMPLER_MAX_VOCAB);
	s = calloc(1, sizeof(*s));
	if (!s)
		return pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory");
	s->seen = calloc((n_vocab + 7) / 8, 1);
	if (!s->seen) {
		free(s);
		return pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory (%zu-token bitmap)",
				  n_vocab);
	}
	s->n_vocab = n_vocab;
	s->cfg = *cfg;
	pccx__rng_seed(&s->rng, cfg->seed, PCCX_SAMPLER_RNG_STREAM);
	*out = s;
	return PCCX_OK;
}

void pccx_sampler_destroy(pccx_sampler *s)
{
	if (!s)
		return;
	free(s->seen);
	free(s->pen_id);
	free(s->pen_l);
	free(s->cand);
	free(s->byid);
	free(s->ids);
	free(s->w);
	free(s->p);
	free(s);
}

int pccx_sampler_set_config(pccx_sampler *s, const pccx_sampler_config *cfg, pccx_diag *d)
{
	int rc;

	if (!s)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler: NULL sampler");
	rc = pccx_sampler_config_check(cfg, d);
	if (rc)
		return rc;
	s->cfg = *cfg;
	return PCCX_OK;
}

void pccx_sampler_reseed(pccx_sampler *s, uint64_t seed)
{
	s->cfg.seed = seed;
	pccx__rng_seed(&s->rng, seed, PCCX_SAMPLER_RNG_STREAM);
}

size_t pccx__sampler_last_bound(const pccx_sampler *s)
{
	return s->last_bound;
}

/* n <= n_vocab, so the workspace is bounded by the vocabulary fixed at create time. */
static int reserve(pccx_sampler *s, size_t n, pccx_diag *d)
{
	void *a, *b, *c, *e, *f;

	if (n <= s->cap)
		return PCCX_OK;
	a = realloc(s->cand, n * sizeof(*s->cand));
	if (a)
		s->cand = a;
	b = realloc(s->byid, n * sizeof(*s->byid));
	if (b)
		s->byid = b;
	c = realloc(s->ids, n * sizeof(*s->ids));
	if (c)
		s->ids = c;
	e = realloc(s->w, n * sizeof(*s->w));
	if (e)
		s->w = e;
	f = realloc(s->p, n * sizeof(*s->p));
	if (f)
		s->p = f;
	if (!a || !b || !c || !e || !f)
		return pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory (%zu candidates)", n);
	s->cap = n;
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Fast path */

/* Rank order: higher logit first, equal logits by lower id. A total order (ids are unique). */
static inline bool cand_better(float la, int32_t ia, float lb, int32_t ib)
{
	return la > lb || (la == lb && ia < ib);
}

static int cand_rank_cmp(const void *pa, const void *pb)
{
	const struct smp_cand *a = pa, *b = pb;

	if (cand_better(a->l, a->id, b->l, b->id))
		return -1;
	return cand_better(b->l, b->id, a->l, a->id) ? 1 : 0;
}

static int idw_cmp(const void *pa, const void *pb)
{
	const struct smp_idw *a = pa, *b = pb;

	return (a->id > b->id) - (a->id < b->id);
}

static int i32_cmp(const void *pa, const void *pb)
{
	int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;

	return (a > b) - (a < b);
}

/* Offer (l, id) to a heap whose root is its worst entry; keeps the k best seen. */
static void heap_offer(struct smp_cand *h, size_t *fill, size_t k, float l, int32_t id)
{
	size_t i, n = *fill;

	if (n < k) {
		for (i = n; i > 0; ) {
			size_t parent = (i - 1) / 2;

			if (!cand_better(h[parent].l, h[parent].id, l, id))
				break;
			h[i] = h[parent];
			i = parent;
		}
		h[i].l = l;
		h[i].id = id;
		*fill = n + 1;
		return;
	}
	if (!cand_better(l, id, h[0].l, h[0].id))
		return;
	for (i = 0; ; ) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		/* Descend towards the worse child. */
		if (c + 1 < n && cand_better(h[c].l, h[c].id, h[c + 1].l, h[c + 1].id))
			c++;
		if (!cand_better(l, id, h[c].l, h[c].id))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i].l = l;
	h[i].id = id;
}

static int fail_inf(pccx_diag *d, size_t i)
{
	return pccx__fail(d, PCCX_ERR_RANGE, "sampler: logits[%zu] is +inf", i);
}

/* A penalty below 1 divides a positive logit by it: past FLT_MAX * rho that is +inf, which
 * no distribution can hold (an input +inf is refused the same way). */
static int fail_penalised_inf(pccx_diag *d, size_t i, float x, float rho)
{
	return pccx__fail(d, PCCX_ERR_RANGE, "sampler: logits[%zu] = %g divided by the repetition "
			  "penalty %g is +inf", i, (double)x, (double)rho);
}

static int fail_no_finite(pccx_diag *d, size_t n)
{
	return pccx__fail(d, PCCX_ERR_INVALID,
			  "sampler: logits: all %zu values are -inf or NaN", n);
}

/*
 * Distinct tokens of the penalty window, ascending, with their penalised logits. Also
 * refuses a +inf logit of a penalised token (the scans skip those positions).
 */
static int collect_penalties(pccx_sampler *s, const float *logits, const int32_t *history,
			     size_t n_history, size_t *npen, pccx_diag *d)
{
	const pccx_sampler_config *cfg = &s->cfg;
	size_t win, start, i, n = 0;
	int rc = PCCX_OK;

	*npen = 0;
	if (cfg->repetition_penalty == 1.0f || cfg->penalty_last_n == 0 || n_history == 0)
		return PCCX_OK;
	if (!history)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "sampler: history is NULL but n_history = %zu", n_history);
	win = n_history;
	if (cfg->penalty_last_n > 0 && (size_t)cfg->penalty_last_n < n_history)
		win = (size_t)cfg->penalty_last_n;
	start = n_history - win;
	if (win > s->n_vocab)
		win = s->n_vocab;	/* no more distinct ids than the vocabulary */
	if (win > s->pen_cap) {
		int32_t *a = realloc(s->pen_id, win * sizeof(*a));
		float *b;

		if (!a)
			return pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory (penalties)");
		s->pen_id = a;
		b = realloc(s->pen_l, win * sizeof(*b));
		if (!b)
			return pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory (penalties)");
		s->pen_l = b;
		s->pen_cap = win;
	}
	for (i = start; i < n_history; i++) {
		int32_t t = history[i];

		if (t < 0 || (size_t)t >= s->n_vocab) {
			rc = pccx__fail(d, PCCX_ERR_RANGE,
					"sampler: history[%zu] = %d is outside the vocabulary "
					"[0, %zu)", i, (int)t, s->n_vocab);
			break;
		}
		if (s->seen[t >> 3] & (1u << (t & 7)))
			continue;
		s->seen[t >> 3] |= (uint8_t)(1u << (t & 7));
		s->pen_id[n++] = t;
	}
	for (i = 0; i < n; i++)
		s->seen[s->pen_id[i] >> 3] = 0;
	if (rc)
		return rc;
	qsort(s->pen_id, n, sizeof(*s->pen_id), i32_cmp);
	for (i = 0; i < n; i++) {
		float x = logits[s->pen_id[i]];

		if (isnan(x))
			x = -INFINITY;
		else if (x == INFINITY)
			return fail_inf(d, (size_t)s->pen_id[i]);
		s->pen_l[i] = pccx__sampler_penalise(x, cfg->repetition_penalty);
		if (s->pen_l[i] == INFINITY)
			return fail_penalised_inf(d, (size_t)s->pen_id[i], x,
						  cfg->repetition_penalty);
	}
	*npen = n;
	return PCCX_OK;
}

/* Greedy: the best token in rank order, i.e. the highest logit, ties to the lowest id. */
static int select_argmax(pccx_sampler *s, const float *logits, size_t npen, int32_t *best,
			 pccx_diag *d)
{
	size_t V = s->n_vocab, i = 0, j = 0;
	float bl = -INFINITY;
	int32_t bi = -1;

	while (i < V) {
		size_t end = j < npen ? (size_t)s->pen_id[j] : V;

		for (; i < end; i++) {
			float x = logits[i];

			/* Strict >: the first (lowest id) maximum wins; NaN never compares. */
			if (x > bl) {
				if (x == INFINITY)
					return fail_inf(d, i);
				bl = x;
				bi = (int32_t)i;
			}
		}
		if (j < npen) {
			if (s->pen_l[j] > bl) {
				bl = s->pen_l[j];
				bi = s->pen_id[j];
			}
			i++;
			j++;
		}
	}
	if (bi < 0)
		return fail_no_finite(d, V);
	*best = bi;
	return PCCX_OK;
}

/*
 * Every one of the V candidates in s->cand into rank order, by keys. The weight and probability
 * arrays (cap >= V entries of 8 bytes, filled only after the selection) hold the keys and the
 * sort's second buffer meanwhile.
 */
_Static_assert(sizeof(struct smp_cand) == sizeof(uint64_t) && sizeof(double) == sizeof(uint64_t),
	       "rank_all keeps keys and candidates in the weight arrays");

static void rank_all(pccx_sampler *s, size_t V)
{
	uint64_t *key = (uint64_t *)(void *)s->w, *tmp = (uint64_t *)(void *)s->p;
	struct smp_cand *h = s->cand, *was = (struct smp_cand *)(void *)tmp;
	size_t i;

	for (i = 0; i < V; i++)
		key[i] = rank_key(h[i].l, h[i].id);
	rank_sort(key, tmp, V);
	memcpy(was, h, V * sizeof(*h));	/* rank_sort left the keys in key[], tmp is free */
	for (i = 0; i < V; i++)
		h[i] = was[rank_id(key[i])];
}

/* The k best tokens in rank order in s->cand[0..k). */
static int select_top(pccx_sampler *s, const float *logits, size_t npen, size_t k, pccx_diag *d)
{
	struct smp_cand *h = s->cand;
	size_t V = s->n_vocab, i = 0, j = 0, fill = 0;
	float thr = -INFINITY;

	if (k >= V) {
		/* Every token is a candidate: no heap, one sort. */
		for (; i < V; i++) {
			float x = logits[i];

			if (j < npen && i == (size_t)s->pen_id[j]) {
				x = s->pen_l[j++];
			} else if (isnan(x)) {
				x = -INFINITY;
			} else if (x == INFINITY) {
				return fail_inf(d, i);
			}
			h[i].l = x;
			h[i].id = (int32_t)i;
		}
		rank_all(s, V);
		return PCCX_OK;
	}
	while (i < V) {
		size_t end = j < npen ? (size_t)s->pen_id[j] : V;

		for (; i < end; i++) {
			float x = logits[i];

			/* Common case: below the current k-th best. NaN and +inf fall through. */
			if (fill == k && x < thr)
				continue;
			if (isnan(x))
				x = -INFINITY;
			else if (x == INFINITY)
				return fail_inf(d, i);
			heap_offer(h, &fill, k, x, (int32_t)i);
			thr = h[0].l;
		}
		if (j < npen) {
			heap_offer(h, &fill, k, s->pen_l[j], s->pen_id[j]);
			thr = h[0].l;
			i++;
			j++;
		}
	}
	qsort(h, fill, sizeof(*h), cand_rank_cmp);
	return PCCX_OK;
}

/* Normaliser over the whole vocabulary: sum of weights in ascending id order. */
static double sum_all(const pccx_sampler *s, const float *logits, size_t npen, double tau,
		      double m)
{
	size_t V = s->n_vocab, i = 0, j = 0;
	double sum = 0.0;

	while (i < V) {
		size_t end = j < npen ? (size_t)s->pen_id[j] : V;

		/* NaN logits give a NaN argument and pccx__sampler_exp(NaN) == 0, as for -inf. */
		for (; i < end; i++)
			sum += pccx__sampler_exp((double)logits[i] * tau - m);
		if (j < npen) {
			sum += pccx__sampler_exp((double)s->pen_l[j] * tau - m);
			i++;
			j++;
		}
	}
	return sum;
}

/* Normaliser over the top-k set: the same sum, restricted to the k candidates. */
static double sum_by_id(pccx_sampler *s, size_t k)
{
	double sum = 0.0;
	size_t r;

	for (r = 0; r < k; r++) {
		s->byid[r].id = s->cand[r].id;
		s->byid[r].w = s->w[r];
	}
	qsort(s->byid, k, sizeof(*s->byid), idw_cmp);
	for (r = 0; r < k; r++)
		sum += s->byid[r].w;
	return sum;
}

int pccx_sampler_distribution(pccx_sampler *s, const float *logits, size_t n_logits,
			      const int32_t *history, size_t n_history, pccx_sampler_dist *dist,
			      pccx_diag *d)
{
	const pccx_sampler_config *cfg;
	size_t V, npen, k, n, r;
	double tau, m, S = 0.0, total;
	bool have_S = false;
	int rc;

	if (!s || !logits || !dist)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler: NULL %s",
				  !s ? "sampler" : !logits ? "logits" : "output");
	cfg = &s->cfg;
	V = s->n_vocab;
	if (n_logits != V)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "sampler: %zu logits for a vocabulary of %zu", n_logits, V);
	rc = collect_penalties(s, logits, history, n_history, &npen, d);
	if (rc)
		return rc;

	if (cfg->temperature == 0.0f) {
		rc = reserve(s, 1, d);
		if (rc)
			return rc;
		rc = select_argmax(s, logits, npen, &s->ids[0], d);
		if (rc)
			return rc;
		s->w[0] = 1.0;
		s->p[0] = 1.0;
		s->last_bound = 1;
		dist->n = 1;
		dist->ids = s->ids;
		dist->weights = s->w;
		dist->probs = s->p;
		dist->total = 1.0;
		return PCCX_OK;
	}

	tau = 1.0 / (double)cfg->temperature;
	if (cfg->top_k > 0)
		k = (size_t)cfg->top_k < V ? (size_t)cfg->top_k : V;
	else if (cfg->top_p >= 1.0f && cfg->min_p <= 0.0f)
		k = V;		/* nothing to cut: every token is a candidate */
	else
		k = SMP_FIRST_BOUND < V ? SMP_FIRST_BOUND : V;

	for (;;) {
		bool cut = false;

		rc = reserve(s, k, d);
		if (rc)
			return rc;
		rc = select_top(s, logits, npen, k, d);
		if (rc)
			return rc;
		if (s->cand[0].l == -INFINITY)
			return fail_no_finite(d, V);
		m = (double)s->cand[0].l * tau;
		for (r = 0; r < k; r++)
			s->w[r] = pccx__sampler_exp((double)s->cand[r].l * tau - m);
		if (cfg->top_k > 0 || k == V)
			break;
		/*
		 * top-k off: the kept prefix is decided inside these k candidates once min-p cuts
		 * in them, or once their mass reaches top_p * S (then no later rank can be kept).
		 */
		/* Zero weights form a suffix of the rank order and are always dropped. */
		cut = s->w[k - 1] == 0.0;
		if (!cut && cfg->min_p > 0.0f) {
			for (r = 0; r < k && !cut; r++)
				cut = s->w[r] < (double)cfg->min_p;
		}
		if (!cut && cfg->top_p < 1.0f) {
			double c = 0.0;

			if (!have_S) {
				S = sum_all(s, logits, npen, tau, m);
				have_S = true;
			}
			for (r = 0; r < k; r++)
				c += s->w[r];
			cut = c >= (double)cfg->top_p * S;
		}
		if (cut)
			break;
		k = k > V / 4 ? V : 4 * k;
	}
	s->last_bound = k;

	n = k;
	if (cfg->top_p < 1.0f) {
		double lim, c = 0.0;

		if (!have_S)
			S = (cfg->top_k > 0 && k < V) ? sum_by_id(s, k) :
			    sum_all(s, logits, npen, tau, m);
		lim = (double)cfg->top_p * S;
		for (r = 0; r < n; r++) {
			if (!(c < lim))
				break;
			c += s->w[r];
		}
		n = r;
	}
	if (cfg->min_p > 0.0f) {
		for (r = 0; r < n; r++)
			if (s->w[r] < (double)cfg->min_p)
				break;
		n = r;
	}
	/* Weights that underflowed to zero (a suffix) are not candidates; w_0 == 1 stays. */
	while (n > 1 && s->w[n - 1] == 0.0)
		n--;
	total = 0.0;
	for (r = 0; r < n; r++) {
		total += s->w[r];
		s->ids[r] = s->cand[r].id;
	}
	for (r = 0; r < n; r++)
		s->p[r] = s->w[r] / total;
	dist->n = n;
	dist->ids = s->ids;
	dist->weights = s->w;
	dist->probs = s->p;
	dist->total = total;
	return PCCX_OK;
}

int32_t pccx_sampler_draw(const pccx_sampler_dist *dist, double u)
{
	double t = u * dist->total, c = 0.0;
	size_t r, last = 0;

	if (dist->n == 0)
		return -1;
	for (r = 0; r < dist->n; r++) {
		c += dist->weights[r];
		if (dist->weights[r] > 0.0)
			last = r;
		if (c > t)
			return dist->ids[r];
	}
	return dist->ids[last];
}

int pccx_sampler_sample(pccx_sampler *s, const float *logits, size_t n_logits,
			const int32_t *history, size_t n_history, int32_t *token, pccx_diag *d)
{
	pccx_sampler_dist dist;
	int rc;

	if (!token)
		return pccx__fail(d, PCCX_ERR_INVALID, "sampler: NULL token pointer");
	rc = pccx_sampler_distribution(s, logits, n_logits, history, n_history, &dist, d);
	if (rc)
		return rc;
	*token = pccx_sampler_draw(&dist, pccx__rng_uniform(&s->rng));
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Reference path: the definition, step by step, over a full sort */

void pccx__sampler_naive_free(pccx_sampler_naive *nv)
{
	if (!nv)
		return;
	free(nv->ids);
	free(nv->weights);
	free(nv->probs);
	memset(nv, 0, sizeof(*nv));
}

int pccx__sampler_naive_distribution(const pccx_sampler_config *cfg, const float *logits,
				     size_t n, const int32_t *history, size_t n_history,
				     pccx_sampler_naive *out, pccx_diag *d)
{
	uint64_t *e = NULL, *etmp = NULL;
	float *l = NULL;
	int32_t *win = NULL;
	ptrdiff_t *rank = NULL;
	size_t i, r, k, kept, nwin = 0;
	double tau, m, S, total;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = pccx_sampler_config_check(cfg, d);
	if (rc)
		return rc;
	if (n == 0 || n > PCCX_SAMPLER_MAX_VOCAB)
		return pccx__fail(d, PCCX_ERR_RANGE, "sampler: vocabulary size %zu", n);
	l = malloc(n * sizeof(*l));
	e = malloc(n * sizeof(*e));
	etmp = malloc(n * sizeof(*etmp));
	rank = malloc(n * sizeof(*rank));
	out->ids = malloc(n * sizeof(*out->ids));
	out->weights = malloc(n * sizeof(*out->weights));
	out->probs = malloc(n * sizeof(*out->probs));
	if (!l || !e || !etmp || !rank || !out->ids || !out->weights || !out->probs) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory");
		goto fail;
	}

	/* 1. NaN -> -inf, +inf refused. */
	for (i = 0; i < n; i++) {
		if (logits[i] == INFINITY) {
			rc = pccx__fail(d, PCCX_ERR_RANGE, "sampler: logits[%zu] is +inf", i);
			goto fail;
		}
		l[i] = isnan(logits[i]) ? -INFINITY : logits[i];
	}

	/* 2. Repetition penalty, once per distinct token of the last penalty_last_n entries. */
	if (cfg->repetition_penalty != 1.0f && cfg->penalty_last_n != 0 && n_history > 0) {
		size_t start = 0;

		if (!history) {
			rc = pccx__fail(d, PCCX_ERR_INVALID,
					"sampler: history is NULL but n_history = %zu", n_history);
			goto fail;
		}

		if (cfg->penalty_last_n > 0 && (size_t)cfg->penalty_last_n < n_history)
			start = n_history - (size_t)cfg->penalty_last_n;
		win = malloc((n_history - start) * sizeof(*win));
		if (!win) {
			rc = pccx__fail(d, PCCX_ERR_NOMEM, "sampler: out of memory");
			goto fail;
		}
		for (i = start; i < n_history; i++) {
			if (history[i] < 0 || (size_t)history[i] >= n) {
				rc = pccx__fail(d, PCCX_ERR_RANGE, "sampler: history[%zu] = %d is "
						"outside the vocabulary [0, %zu)", i,
						(int)history[i], n);
				goto fail;
			}
			win[nwin++] = history[i];
		}
		qsort(win, nwin, sizeof(*win), i32_cmp);
		for (i = 0; i < nwin; i++) {
			float x = l[win[i]];

			if (i && win[i] == win[i - 1])
				continue;
			l[win[i]] = pccx__sampler_penalise(x, cfg->repetition_penalty);
			if (l[win[i]] == INFINITY) {
				rc = fail_penalised_inf(d, (size_t)win[i], x,
							cfg->repetition_penalty);
				goto fail;
			}
		}
	}

	/* 3. Rank order over the whole vocabulary. */
	for (i = 0; i < n; i++)
		e[i] = rank_key(l[i], (int32_t)i);
	rank_sort(e, etmp, n);
	if (l[rank_id(e[0])] == -INFINITY) {
		rc = fail_no_finite(d, n);
		goto fail;
	}

	/* T == 0: the first entry of the rank order. */
	if (cfg->temperature == 0.0f) {
		out->ids[0] = rank_id(e[0]);
		out->weights[0] = 1.0;
		out->probs[0] = 1.0;
		out->dist.n = 1;
		out->dist.total = 1.0;
		goto done;
	}

	/* 4. top-k. */
	k = n;
	if (cfg->top_k > 0 && (size_t)cfg->top_k < n)
		k = (size_t)cfg->top_k;

	/* 5. Tempered weights relative to the best, normaliser S in ascending id order. */
	tau = 1.0 / (double)cfg->temperature;
	m = (double)l[rank_id(e[0])] * tau;
	for (r = 0; r < k; r++)
		out->weights[r] = pccx__sampler_exp((double)l[rank_id(e[r])] * tau - m);
	for (i = 0; i < n; i++)
		rank[i] = -1;
	for (r = 0; r < k; r++)
		rank[rank_id(e[r])] = (ptrdiff_t)r;
	S = 0.0;
	for (i = 0; i < n; i++)
		if (rank[i] >= 0)
			S += out->weights[rank[i]];

	/* 6. top-p: keep rank r while the mass ranked before it is below top_p * S. */
	kept = k;
	if (cfg->top_p < 1.0f) {
		double before = 0.0;

		for (r = 0; r < k; r++) {
			if (!(before < (double)cfg->top_p * S))
				break;
			before += out->weights[r];
		}
		kept = r;
	}

	/* 7. min-p: keep rank r while w_r >= min_p (w_0 == 1 is the best token's weight). */
	if (cfg->min_p > 0.0f) {
		for (r = 0; r < kept; r++)
			if (!(out->weights[r] >= (double)cfg->min_p))
				break;
		kept = r;
	}

	/* 8. Drop zero weights (-inf, NaN, or exp underflow below -700). */
	while (kept > 1 && out->weights[kept - 1] == 0.0)
		kept--;

	/* 9. Renormalise over the kept ranks, summed in rank order. */
	total = 0.0;
	for (r = 0; r < kept; r++)
		total += out->weights[r];
	for (r = 0; r < kept; r++) {
		out->ids[r] = rank_id(e[r]);
		out->probs[r] = out->weights[r] / total;
	}
	out->dist.n = kept;
	out->dist.total = total;
done:
	out->dist.ids = out->ids;
	out->dist.weights = out->weights;
	out->dist.probs = out->probs;
	free(l);
	free(e);
	free(etmp);
	free(rank);
	free(win);
	return PCCX_OK;
fail:
	free(l);
	free(e);
	free(etmp);
	free(rank);
	free(win);
	pccx__sampler_naive_free(out);
	return rc;
}
