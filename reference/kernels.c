// SPDX-License-Identifier: MIT
/* Q4 GEMV host kernels: the reference rows kernel, dispatch and threading. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "kernels.h"
#include "pccx_num.h"

static uint64_t scale_bytes(uint32_t k)
{
	return (uint64_t)((k / 32 + 7) / 8) * 16;
}

void pccx__kern_act_prepare(struct pccx_kern_act *a)
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

void pccx__kern_q4_rows_ref(const uint8_t *w, uint64_t row_bytes, uint32_t n,
			    const struct pccx_kern_act *a, float *y)
{
	uint64_t sb = scale_bytes(a->k);
	uint32_t r;

	for (r = 0; r < n; r++) {
		const uint8_t *rec = w + r * row_bytes;

		y[r] = pccx__q4_row_dot(rec + sb, (const uint16_t *)(const void *)rec, a->q8, a->sx,
					a->k);
	}
}

bool pccx__kern_have_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, dx;

	/* F16C is CPUID.1:ECX[29]; read it directly (clang 14 does not accept "f16c" in
	 * __builtin_cpu_supports) */
	__builtin_cpu_init();
	if (!__get_cpuid(1, &a, &b, &c, &dx))
		return false;
	return __builtin_cpu_supports("avx2") && (c & (1u << 29));
#else
	return false;
#endif
}

bool pccx__kern_have_avx512(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	return pccx__kern_have_avx2() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512vnni");
#else
	return false;
#endif
}

bool pccx__kern_supported(enum pccx_kern_impl impl)
{
	switch (impl) {
	case PCCX_KERN_AVX2:
		return pccx__kern_have_avx2();
	case PCCX_KERN_AVX512:
		return pccx__kern_have_avx512();
	default:
		return true;
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
	}
	return "?";
}

struct gemv_job {
	enum pccx_kern_impl impl;
	const uint8_t *w;
	uint64_t row_bytes;
	uint32_t n;
	const struct pccx_kern_act *a;
	float *y;
};

static void gemv_part(void *ctx, unsigned part, unsigned nparts)
{
	struct gemv_job *j = ctx;
	unsigned long long lo, hi;

	pccx__pool_split(j->n, 8, part, nparts, &lo, &hi);
	if (lo >= hi)
		return;
	if (j->impl == PCCX_KERN_AVX512)
		pccx__kern_q4_rows_avx512(j->w + lo * j->row_bytes, j->row_bytes,
					  (uint32_t)(hi - lo), j->a, j->y + lo);
	else if (j->impl == PCCX_KERN_AVX2)
		pccx__kern_q4_rows_avx2(j->w + lo * j->row_bytes, j->row_bytes, (uint32_t)(hi - lo),
					j->a, j->y + lo);
	else
		pccx__kern_q4_rows_ref(j->w + lo * j->row_bytes, j->row_bytes, (uint32_t)(hi - lo),
				       j->a, j->y + lo);
}

/* Below this many weights a second thread costs more than it saves. */
#define MT_MIN_WEIGHTS (1u << 18)

void pccx__kern_q4_gemv(struct pccx_pool *pool, enum pccx_kern_impl impl, const uint8_t *w,
			uint64_t row_bytes, uint32_t n, const struct pccx_kern_act *a, float *y)
{
	struct gemv_job j = { pccx__kern_resolve(impl), w, row_bytes, n, a, y };

	if ((uint64_t)n * a->k < MT_MIN_WEIGHTS)
		pool = NULL;
	pccx__pool_run(pool, gemv_part, &j);
}
