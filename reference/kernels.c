// SPDX-License-Identifier: MIT
/* Q4 GEMV/GEMM host kernels: the reference kernels, CPU features, dispatch and threading. */
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "kernels.h"
#include "pccx_num.h"

uint64_t pccx__kern_scale_bytes(uint32_t k)
{
	return (uint64_t)((k / 32 + 7) / 8) * 16;
}

void pccx__kern_act_prepare_ref(struct pccx_kern_act *a)
{
	uint32_t nb = a->k / 32, b, j;

	for (b = 0; b < nb; b++) {
		const int8_t *x = a->q8 + 32 * b;
		int32_t s = 0;

		for (j = 0; j < 32; j++)
			s += x[j];
		a->xsum[b] = s;
	}
	/* groups of four blocks b .. b+3: their 16 even elements each, then their 16 odd ones */
	for (b = 0; b + 3 < nb; b += 4) {
		int8_t *o = a->xp + 32 * b;
		uint32_t i;

		for (i = 0; i < 4; i++)
			for (j = 0; j < 16; j++) {
				o[16 * i + j] = a->q8[32 * (b + i) + 2 * j];
				o[64 + 16 * i + j] = a->q8[32 * (b + i) + 2 * j + 1];
			}
	}
}

void pccx__kern_act_tail(const struct pccx_kern_act *a, uint32_t b, uint32_t j, int8_t xq[128])
{
	uint32_t i, t;

	__builtin_memset(xq, 0, 128);
	for (i = 0; i < j; i++)
		for (t = 0; t < 16; t++) {
			xq[16 * i + t] = a->q8[32 * (b + i) + 2 * t];
			xq[64 + 16 * i + t] = a->q8[32 * (b + i) + 2 * t + 1];
		}
}

void pccx__kern_q4_rows_ref(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			    const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = pccx__kern_scale_bytes(a->k);
	uint32_t r;

	for (r = 0; r < n; r++) {
		const uint8_t *rec = w + r * row_bytes;

		y[r] = pccx__q4_row_dot(rec + sb, (const uint16_t *)(const void *)rec, a->q8, a->sx,
					a->k);
	}
}

void pccx__kern_q4_gemm_rows_ref(const uint8_t *w, uint64_t row_bytes, uint32_t n,
				 const struct pccx_kern_act *a, uint32_t m, float *y, size_t ldy)
{
	uint32_t i;

	for (i = 0; i < m; i++)
		pccx__kern_q4_rows_ref(w, row_bytes, n, &a[i], y + i * ldy);
}

float pccx__kern_q4_row_finish(const uint8_t *rec, uint64_t sb, const struct pccx_kern_act *a,
			       uint32_t b, float acc)
{
	const uint16_t *sc = (const uint16_t *)(const void *)rec;
	uint32_t j;

	for (; b < a->k / 32; b++) {
		const uint8_t *nib = rec + sb + 16 * b;
		const int8_t *x = a->q8 + 32 * b;
		int32_t dot = 0;
		float t;

		for (j = 0; j < 16; j++)
			dot += (((nib[j] & 15) ^ 8) - 8) * x[2 * j] +
			       (((nib[j] >> 4) ^ 8) - 8) * x[2 * j + 1];
		t = pccx__fp16_to_f32(sc[b]) * a->sx[b];
		acc = acc + (float)dot * t;
	}
	return pccx_f32_canon(acc);
}

/* ---- CPU features, read once (the answer cannot change; a race only repeats the work) ---- */

enum { FEAT_AVX2 = 1, FEAT_AVXVNNI = 2, FEAT_AVX512 = 4, FEAT_KNOWN = 8 };

static unsigned detect(void)
{
	unsigned f = 0;
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, dx;

	/* F16C is CPUID.1:ECX[29]; read it directly (clang 14 does not accept "f16c" in
	 * __builtin_cpu_supports); AVX-VNNI is CPUID.(7,1):EAX[4] (gcc 12 has no name for it) */
	__builtin_cpu_init();
	if (!__get_cpuid(1, &a, &b, &c, &dx) || !(c & (1u << 29)) ||
	    !__builtin_cpu_supports("avx2"))
		return 0;
	f |= FEAT_AVX2;
	if (__get_cpuid_count(7, 1, &a, &b, &c, &dx) && (a & (1u << 4)))
		f |= FEAT_AVXVNNI;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
		f |= FEAT_AVX512;
#endif
	return f;
}

static unsigned features(void)
{
	static unsigned cached;
	unsigned f = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (!f) {
		f = detect() | FEAT_KNOWN;
		__atomic_store_n(&cached, f, __ATOMIC_RELAXED);
	}
	return f;
}

bool pccx__kern_have_avx2(void)
{
	return features() & FEAT_AVX2;
}

bool pccx__kern_have_avxvnni(void)
{
	return features() & FEAT_AVXVNNI;
}

bool pccx__kern_have_avx512(void)
{
	return features() & FEAT_AVX512;
}

bool pccx__kern_supported(enum pccx_kern_impl impl)
{
	switch (impl) {
	case PCCX_KERN_AUTO:
	case PCCX_KERN_REF:
		return true;
	case PCCX_KERN_AVX2:
		return pccx__kern_have_avx2();
	case PCCX_KERN_AVX512:
		return pccx__kern_have_avx512();
	default:
		return false;
	}
}

enum pccx_kern_impl pccx__kern_resolve(enum pccx_kern_impl impl)
{
	if (impl == PCCX_KERN_AUTO || !pccx__kern_supported(impl))
		return pccx__kern_have_avx512() ? PCCX_KERN_AVX512
		       : pccx__kern_have_avx2() ? PCCX_KERN_AVX2 : PCCX_KERN_REF;
	return impl;
}

const char *pccx__kern_name(enum pccx_kern_impl impl)
{
	switch (impl) {
	case PCCX_KERN_AUTO:
		return "auto";
	case PCCX_KERN_REF:
		return "ref";
	case PCCX_KERN_AVX2:
		return "avx2";
	case PCCX_KERN_AVX512:
		return "avx512vnni";
	default:
		return "?";
	}
}

/*
 * ---- threading: chunks of rows (multiples of 16, the widest kernel's group) taken in turn
 * by the threads from a shared counter, so that a thread the system holds back takes fewer;
 * each output is computed whole by one thread, so the bits do not depend on who takes what ----
 */


struct pccx_kern_q4 pccx__kern_q4_of(enum pccx_kern_impl impl)
{
	struct pccx_kern_q4 k = { pccx__kern_q4_rows_ref, pccx__kern_q4_gemm_rows_ref };

	if (impl == PCCX_KERN_AVX512) {
		k.rows = pccx__kern_q4_rows_avx512;
		k.gemm = pccx__kern_q4_gemm_rows_avx512;
	} else if (impl == PCCX_KERN_AVX2 && pccx__kern_have_avxvnni()) {
		k.rows = pccx__kern_q4_rows_avxvnni;
		k.gemm = pccx__kern_q4_gemm_rows_avxvnni;
	} else if (impl == PCCX_KERN_AVX2) {
		k.rows = pccx__kern_q4_rows_avx2;
		k.gemm = pccx__kern_q4_gemm_rows_avx2;
	}
	return k;
}

uint32_t pccx__kern_chunk(unsigned nparts)
{
	return nparts > 1 ? PCCX_KERN_CHUNK_MIN : UINT32_MAX;
}

bool pccx__kern_take(uint32_t *next, uint32_t chunk, unsigned nparts, uint32_t n, uint32_t *lo,
		     uint32_t *hi)
{
	uint32_t at = __atomic_load_n(next, __ATOMIC_RELAXED), c;

	/* a compare-and-swap loop, so that the counter never passes n (no wrap-around) */
	do {
		if (at >= n)
			return false;
		c = nparts ? (n - at) / (2 * nparts) / 16 * 16 : 0;
		c = c > chunk ? c : chunk;
		*lo = at;
		*hi = n - at < c ? n : at + c;
	} while (!__atomic_compare_exchange_n(next, &at, *hi, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return true;
}

static void job_part(void *ctx, unsigned part, unsigned nparts)
{
	struct pccx_kern_q4_job *j = ctx;
	struct pccx_kern_q4 k = pccx__kern_q4_of(j->impl);
	uint32_t lo, hi;

	(void)part;
	while (pccx__kern_take(&j->next, j->chunk, nparts, j->n, &lo, &hi))
		pccx__kern_q4_apply(&k, j->w + lo * j->row_bytes, j->row_bytes, hi - lo, j->a,
				    j->m, j->y + lo, j->ldy);
}

/* Below this many weight-activation products a second thread costs more than it saves. */
#define MT_MIN_MACS (1u << 18)

static void run(struct pccx_pool *pool, struct pccx_kern_q4_job *j)
{
	if ((uint64_t)j->n * j->a->k * j->m < MT_MIN_MACS)
		pool = NULL;
	j->chunk = pccx__kern_chunk(pccx__pool_threads(pool));
	j->next = 0;
	pccx__pool_run(pool, job_part, j);
}

void pccx__kern_q4_gemv(struct pccx_pool *pool, enum pccx_kern_impl impl, const uint8_t *w,
			uint64_t row_bytes, uint32_t n, const struct pccx_kern_act *a, float *y)
{
	struct pccx_kern_q4_job j = { pccx__kern_resolve(impl), w, row_bytes, n, 1, a, y, 0, 0, 0 };

	run(pool, &j);
}

/*
 * ---- scattered rows: each thread copies its next PCCX_KERN_GATHER_ROWS rows into its own
 * scratch (a few KiB, in L1) and runs the row kernel there; a row's result does not depend on
 * where its bytes lie or which rows share its group ----
 */

struct gather_job {
	struct pccx_kern_q4 k;
	const uint8_t *w;
	uint64_t row_bytes;
	const uint32_t *idx;
	uint32_t n;
	const struct pccx_kern_act *a;
	float *y;
	uint8_t *scratch;
	uint32_t chunk;
	uint32_t next;		/* atomic: the first index not taken yet */
};

size_t pccx__kern_gather_bytes(const struct pccx_pool *pool, uint64_t row_bytes)
{
	return (size_t)pccx__pool_threads(pool) * PCCX_KERN_GATHER_ROWS * row_bytes;
}

static void gather_part(void *ctx, unsigned part, unsigned nparts)
{
	struct gather_job *j = ctx;
	const uint64_t rb = j->row_bytes;
	uint8_t *rows = j->scratch + (size_t)part * PCCX_KERN_GATHER_ROWS * rb;
	float out[PCCX_KERN_GATHER_ROWS];
	uint32_t lo, hi, i, g, r;
	uint64_t off;

	while (pccx__kern_take(&j->next, j->chunk, nparts, j->n, &lo, &hi))
		for (i = lo; i < hi; i += g) {
			g = hi - i < PCCX_KERN_GATHER_ROWS ? hi - i : PCCX_KERN_GATHER_ROWS;
			/* the next group's rows on their way while this one is copied */
			for (r = i + g; r < i + 2 * g && r < hi; r++)
				for (off = 0; off < rb; off += 64)
					__builtin_prefetch(j->w + (size_t)j->idx[r] * rb + off);
			for (r = 0; r < g; r++)
				memcpy(rows + (size_t)r * rb, j->w + (size_t)j->idx[i + r] * rb, rb);
			j->k.rows(rows, rb, g, j->a, out);
			for (r = 0; r < g; r++)
				j->y[j->idx[i + r]] = out[r];
		}
}

void pccx__kern_q4_gemv_gather(struct pccx_pool *pool, enum pccx_kern_impl impl,
			       const uint8_t *w, uint64_t row_bytes, const uint32_t *idx,
			       uint32_t n, const struct pccx_kern_act *a, float *y, uint8_t *scratch)
{
	struct gather_job j = { pccx__kern_q4_of(pccx__kern_resolve(impl)), w, row_bytes, idx, n,
				a, y, scratch, 0, 0 };

	if ((uint64_t)n * a->k < MT_MIN_MACS)
		pool = NULL;
	j.chunk = pccx__kern_chunk(pccx__pool_threads(pool));
	pccx__pool_run(pool, gather_part, &j);
}

void pccx__kern_q4_gemm(struct pccx_pool *pool, enum pccx_kern_impl impl, const uint8_t *w,
			uint64_t row_bytes, uint32_t n, const struct pccx_kern_act *a, uint32_t m,
			float *y, size_t ldy)
{
	struct pccx_kern_q4_job j = { pccx__kern_resolve(impl), w, row_bytes, n, m, a, y, ldy, 0, 0 };

	if (m)
		run(pool, &j);
}

void pccx__kern_q4_gemm_start(struct pccx_pool *pool, struct pccx_kern_q4_job *j,
			      enum pccx_kern_impl impl, const uint8_t *w, uint64_t row_bytes,
			      uint32_t n, const struct pccx_kern_act *a, uint32_t m, float *y,
			      size_t ldy)
{
	*j = (struct pccx_kern_q4_job){ pccx__kern_resolve(impl), w, row_bytes, n, m, a, y, ldy,
					pccx__kern_chunk(pccx__pool_threads(pool)), 0 };
	pccx__pool_start(pool, job_part, j);
}

void pccx__kern_q4_gemm_join(struct pccx_pool *pool)
{
	pccx__pool_join(pool);
}
