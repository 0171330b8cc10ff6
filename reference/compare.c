// SPDX-License-Identifier: MIT
/* Reference-vs-oracle statistics. */
#include <math.h>
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

int pccx__cmp_ref_stage(void *user, const char *name, const uint16_t *data, uint32_t rows,
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
			k->v[(size_t)r * cols + i] = pccx__bf16_to_f32(data[(size_t)r * stride + i]);
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

int pccx__cmp_oracle_stage(void *user, const char *name, const double *x, uint32_t rows,
			   uint32_t cols)
{
	struct pccx_cmp *c = user;
	const struct kept *k = find(c, name, c->cursor);
	struct pccx_stage_stat *s;
	double dot = 0, na = 0, nb = 0, se = 0, mx = 0;
	uint32_t i;

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
	for (i = 0; i < k->n; i++) {
		double a = k->v[i], b = x[i], e = a - b;

		dot += a * b;
		na += a * a;
		nb += b * b;
		se += e * e;
		mx = fabs(e) > mx ? fabs(e) : mx;
	}
	s = &c->r[c->nr++];
	memcpy(s->name, k->name, sizeof(s->name));
	s->n = k->n;
	s->cos = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / sqrt(na * nb);
	s->max_abs = mx;
	s->oracle_rms = sqrt(nb / k->n);
	s->rel_rms = nb > 0 ? sqrt(se / nb) : sqrt(se / k->n);
	return PCCX_OK;
}

const struct pccx_stage_stat *pccx__cmp_results(const struct pccx_cmp *c, size_t *n)
{
	*n = c->nr;
	return c->r;
}

void pccx__logit_agreement(const float *ref, const double *oracle, uint32_t n, bool *same_top1,
			   double *kl)
{
	double mr = -INFINITY, mo = -INFINITY, zr = 0, zo = 0, acc = 0;
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
	*same_top1 = ar == ao;
	*kl = acc;
}
