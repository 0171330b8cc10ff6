// SPDX-License-Identifier: MIT
/*
 * F32 matmuls of the reference (attention scores: rows of K dotted with rows of q; context:
 * columns of V summed with the scores as weights): the definitions (isa/num's
 * pccx__f32_row_dot and pccx__f32_colsum, for m rows of x and rows of W any multiple of 16
 * bytes apart), dispatch to the AVX-512 kernels, and threading over the outputs (chunks taken in
 * turn, as for the Q4 kernels).
 */
#include "kernels.h"
#include "pccx_num.h"

static const float *frow(const float *w, uint64_t row_bytes, uint32_t r)
{
	return (const float *)(const void *)((const uint8_t *)w + (uint64_t)r * row_bytes);
}

void pccx__kern_f32_rows_ref(const float *w, uint64_t row_bytes, uint32_t n, uint32_t k,
			     const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	uint32_t j, r;

	for (j = 0; j < m; j++)
		for (r = 0; r < n; r++)
			y[j * ldy + r] = pccx__f32_row_dot(frow(w, row_bytes, r), x + j * xs, k);
}

void pccx__kern_f32t_cols_ref(const float *w, uint64_t row_bytes, uint32_t k, uint32_t n,
			      const float *x, size_t xs, uint32_t m, float *y, size_t ldy)
{
	uint32_t j, kk, c;

	for (j = 0; j < m; j++) {
		const float *xj = x + j * xs;
		float *yj = y + j * ldy;

		if (row_bytes == (uint64_t)n * sizeof(float)) {
			pccx__f32_colsum(w, xj, k, n, yj);
			continue;
		}
		/* rows padded: pccx__f32_colsum's operations on the strided rows */
		for (c = 0; c < n; c++)
			yj[c] = 0.0f;
		for (kk = 0; kk < k; kk++) {
			const float *row = frow(w, row_bytes, kk);

			for (c = 0; c < n; c++)
				yj[c] = yj[c] + xj[kk] * row[c];
		}
		for (c = 0; c < n; c++)
			yj[c] = pccx_f32_canon(yj[c]);
	}
}

struct f32_job {
	bool t;			/* F32T */
	enum pccx_kern_impl impl;	/* resolved */
	const float *w;
	uint64_t row_bytes;
	uint32_t n, k, m;
	const float *x;
	size_t xs;
	float *y;
	size_t ldy;
	uint32_t chunk;
	uint32_t next;		/* atomic: the first output not taken yet */
};

void pccx__kern_f32_rows(enum pccx_kern_impl impl, const float *w, uint64_t row_bytes,
			 uint32_t n, uint32_t k, const float *x, size_t xs, uint32_t m, float *y,
			 size_t ldy)
{
	if (pccx__kern_resolve(impl) == PCCX_KERN_AVX512)
		pccx__kern_f32_rows_avx512(w, row_bytes, n, k, x, xs, m, y, ldy);
	else
		pccx__kern_f32_rows_ref(w, row_bytes, n, k, x, xs, m, y, ldy);
}

void pccx__kern_f32t_cols(enum pccx_kern_impl impl, const float *w, uint64_t row_bytes,
			  uint32_t k, uint32_t n, const float *x, size_t xs, uint32_t m, float *y,
			  size_t ldy)
{
	if (pccx__kern_resolve(impl) == PCCX_KERN_AVX512)
		pccx__kern_f32t_cols_avx512(w, row_bytes, k, n, x, xs, m, y, ldy);
	else
		pccx__kern_f32t_cols_ref(w, row_bytes, k, n, x, xs, m, y, ldy);
}

/* Chunks of outputs of every row of x, rows of W (F32) or columns (F32T), taken in turn. */
static void f32_part(void *ctx, unsigned part, unsigned nparts)
{
	struct f32_job *j = ctx;
	uint32_t lo, hi, cnt;

	(void)part;
	while (pccx__kern_take(&j->next, j->chunk, nparts, j->n, &lo, &hi)) {
		cnt = hi - lo;
		if (j->t)
			pccx__kern_f32t_cols(j->impl, j->w + lo, j->row_bytes, j->k, cnt, j->x, j->xs,
					     j->m, j->y + lo, j->ldy);
		else
			pccx__kern_f32_rows(j->impl, frow(j->w, j->row_bytes, lo), j->row_bytes,
					    cnt, j->k, j->x, j->xs, j->m, j->y + lo, j->ldy);
	}
}

/* Below this many products a second thread costs more than it saves. */
#define MT_MIN_MACS (1u << 18)

static void f32_run(struct pccx_pool *pool, struct f32_job *j)
{
	if ((uint64_t)j->n * j->k * j->m < MT_MIN_MACS)
		pool = NULL;
	j->chunk = pccx__kern_chunk(pccx__pool_threads(pool));
	j->next = 0;
	pccx__pool_run(pool, f32_part, j);
}

void pccx__kern_f32_gemm(struct pccx_pool *pool, enum pccx_kern_impl impl, const float *w,
			 uint64_t row_bytes, uint32_t n, uint32_t k, const float *x, size_t xs,
			 uint32_t m, float *y, size_t ldy)
{
	struct f32_job j = { false, pccx__kern_resolve(impl), w, row_bytes, n, k, m, x, xs, y,
			     ldy, 0, 0 };

	f32_run(pool, &j);
}

void pccx__kern_f32t_gemm(struct pccx_pool *pool, enum pccx_kern_impl impl, const float *w,
			  uint64_t row_bytes, uint32_t k, uint32_t n, const float *x, size_t xs,
			  uint32_t m, float *y, size_t ldy)
{
	struct f32_job j = { true, pccx__kern_resolve(impl), w, row_bytes, n, k, m, x, xs, y,
			     ldy, 0, 0 };

	f32_run(pool, &j);
}
