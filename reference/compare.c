// SPDX-License-Identifier: MIT
/* Reference-vs-oracle statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "pccx_num.h"

struct kept {
	char name[64];
	uint32_t n;
	float *v;
};

struct pccx_cmp {
	struct kept *k;
	size_t nk, capk;
	struct pccx_stage_stat *r;
	size_t nr, capr;
	size_t cursor;		/* stages usually come in the same order: search from here */
};

int pccx__cmp_create(struct pccx_cmp **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? PCCX_OK : PCCX_ERR_NOMEM;
}

void pccx__cmp_clear(struct pccx_cmp *c)
{
	size_t i;

	for (i = 0; i < c->nk; i++)
		free(c->k[i].v);
	c->nk = c->nr = c->cursor = 0;
}

void pccx__cmp_free(struct pccx_cmp *c)
{
	if (!c)
		return;
	pccx__cmp_clear(c);
	free(c->k);
	free(c->r);
	free(c);
}

int pccx__cmp_ref_stage(void *user, const char *name, const float *data, uint32_t rows,
			uint32_t cols, uint32_t stride)
{
	struct pccx_cmp *c = user;
	struct kept *k;
	uint32_t r, i;

	if (c->nk == c->capk) {
		size_t cap = c->capk ? 2 * c->capk : 256;
		void *p = realloc(c->k, cap * sizeof(*c->k));

		if (!p)
			return PCCX_ERR_NOMEM;
		c->k = p;
		c->capk = cap;
	}
	k = &c->k[c->nk];
	k->v = malloc(sizeof(float) * (size_t)rows * cols);
	if (!k->v)
		return PCCX_ERR_NOMEM;
	strncpy(k->name, name, sizeof(k->name) - 1);
	k->name[sizeof(k->name) - 1] = '\0';
	k->n = rows * cols;
	for (r = 0; r < rows; r++)
		for (i = 0; i < cols; i++)
			k->v[(size_t)r * cols + i] = data[(size_t)r * stride + i];
	c->nk++;
	return PCCX_OK;
}

static const struct kept *find(const struct pccx_cmp *c, const char *name, size_t from)
{
	size_t i;

	for (i = from; i < c->nk; i++)
		if (!strcmp(c->k[i].name, name))
			return &c->k[i];
	for (i = 0; i < from && i < c->nk; i++)
		if (!strcmp(c->k[i].name, name))
			return &c->k[i];
	return NULL;
}

/* Cosine, max |a - b|, rms(b) and rms(a - b) / rms(b) of n values (s->name untouched). */
static void stat_of(const float *a, const double *b, uint32_t n, struct pccx_stage_stat *s)
{
	double dot = 0, na = 0, nb = 0, se = 0, mx = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		double e = a[i] - b[i];

		dot += a[i] * b[i];
		na += (double)a[i] * a[i];
		nb += b[i] * b[i];
		se += e * e;
		mx = fabs(e) > mx ? fabs(e) : mx;
	}
	s->n = n;
	s->cos = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / sqrt(na * nb);
	/* rounding can take it an ulp past +-1 */
	s->cos = s->cos > 1.0 ? 1.0 : s->cos < -1.0 ? -1.0 : s->cos;
	s->max_abs = mx;
	s->oracle_rms = n ? sqrt(nb / n) : 0.0;
	s->rel_rms = nb > 0 ? sqrt(se / nb) : n ? sqrt(se / n) : 0.0;
}

int pccx__cmp_oracle_stage(void *user, const char *name, const double *x, uint32_t rows,
			   uint32_t cols)
{
	struct pccx_cmp *c = user;
	const struct kept *k = find(c, name, c->cursor);
	struct pccx_stage_stat *s;

	if (!k || k->n != rows * cols)
		return PCCX_ERR_MISMATCH;
	c->cursor = (size_t)(k - c->k) + 1;
	if (c->nr == c->capr) {
		size_t cap = c->capr ? 2 * c->capr : 256;
		void *p = realloc(c->r, cap * sizeof(*c->r));

		if (!p)
			return PCCX_ERR_NOMEM;
		c->r = p;
		c->capr = cap;
	}
	s = &c->r[c->nr++];
	memcpy(s->name, k->name, sizeof(s->name));
	stat_of(k->v, x, k->n, s);
	return PCCX_OK;
}

const struct pccx_stage_stat *pccx__cmp_results(const struct pccx_cmp *c, size_t *n)
{
	*n = c->nr;
	return c->r;
}

void pccx__logit_compare(const float *ref, const double *oracle, uint32_t n,
			 struct pccx_logit_cmp *out)
{
	double mr, mo, zr = 0, zo = 0, acc = 0;
	struct pccx_stage_stat st;
	uint32_t i, ar = 0, ao = 0;

	for (i = 0; i < n; i++) {
		if (ref[i] > ref[ar])
			ar = i;
		if (oracle[i] > oracle[ao])
			ao = i;
	}
	mr = ref[ar];
	mo = oracle[ao];
	for (i = 0; i < n; i++) {
		zr += exp(ref[i] - mr);
		zo += exp(oracle[i] - mo);
	}
	/* KL(P_o || P_r) = sum p_o (log p_o - log p_r) */
	for (i = 0; i < n; i++) {
		double lo = oracle[i] - mo - log(zo), lr = ref[i] - mr - log(zr);

		acc += exp(lo) * (lo - lr);
	}
	stat_of(ref, oracle, n, &st);
	out->ref_top1 = ar;
	out->oracle_top1 = ao;
	out->kl = acc;
	out->cos = st.cos;
	out->rel_rms = st.rel_rms;
}

void pccx__logit_agreement(const float *ref, const double *oracle, uint32_t n, bool *same_top1,
			   double *kl)
{
	struct pccx_logit_cmp lc;

	pccx__logit_compare(ref, oracle, n, &lc);
	*same_top1 = lc.ref_top1 == lc.oracle_top1;
	*kl = lc.kl;
}

const char *pccx__cmp_stage_kind(const char *name, int *layer)
{
	const char *p = name + 1;
	int l = 0;

	if (name[0] == 'L' && *p >= '0' && *p <= '9') {
		while (*p >= '0' && *p <= '9' && l < 100000)
			l = 10 * l + (*p++ - '0');
		if (*p == '.') {
			*layer = l;
			return p + 1;
		}
	}
	*layer = -1;
	return name;
}

void pccx__cmp_summary_init(struct pccx_cmp_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->logit_cos_min = 1.0;
}

void pccx__cmp_summary_add(struct pccx_cmp_summary *s, const struct pccx_stage_stat *st, size_t n,
			   const struct pccx_logit_cmp *lc)
{
	size_t i, k;
	int layer;

	for (i = 0; i < n; i++) {
		const char *kind = pccx__cmp_stage_kind(st[i].name, &layer);
		struct pccx_cmp_kind *a;

		for (k = 0; k < s->n_kinds; k++)
			if (!strcmp(s->kinds[k].kind, kind))
				break;
		if (k == PCCX_CMP_MAX_KINDS)
			continue;
		a = &s->kinds[k];
		if (k == s->n_kinds) {
			memset(a, 0, sizeof(*a));
			snprintf(a->kind, sizeof(a->kind), "%s", kind);
			a->min_cos = 1.0;
			s->n_kinds++;
		}
		a->count++;
		a->sum_cos += st[i].cos;
		a->sum_rel += st[i].rel_rms;
		a->min_cos = st[i].cos < a->min_cos ? st[i].cos : a->min_cos;
		a->max_rel = st[i].rel_rms > a->max_rel ? st[i].rel_rms : a->max_rel;
		a->max_abs = st[i].max_abs > a->max_abs ? st[i].max_abs : a->max_abs;
	}
	s->positions++;
	s->top1_same += lc->ref_top1 == lc->oracle_top1;
	s->kl_sum += lc->kl;
	s->kl_max = lc->kl > s->kl_max ? lc->kl : s->kl_max;
	s->logit_cos_sum += lc->cos;
	s->logit_cos_min = lc->cos < s->logit_cos_min ? lc->cos : s->logit_cos_min;
}
