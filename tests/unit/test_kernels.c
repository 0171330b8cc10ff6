// SPDX-License-Identifier: MIT
/*
 * The reference's Q4 host kernels: _ref is isa/num's row dot; every vector variant the CPU
 * runs gives _ref's bytes (GEMV on random shapes, partial row groups and blocks left over,
 * NaN/Inf scales; GEMM against m GEMVs); thread counts do not change a byte; the reference
 * NPU's Q4 GEMM (m > 1) gives the bits of m rows of isa/num dots through the output stage;
 * the vectorised element-wise SFU functions give pccx__sfu_vector's bits, the F32 matmuls
 * those of isa/num's row dots and column sums.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_ref.h"
#include "kernels.h"
#include "pccx_num.h"
#include "support/thread_signals.h"

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* ---- a weight matrix and m quantised activation rows ---- */

struct kcase {
	uint32_t n, k, m;
	uint64_t rb;
	uint8_t *w;
	int8_t *q8, *xp;
	float *sx;
	int32_t *xsum;
	struct pccx_kern_act *a;	/* (m) */
};

/*
 * wild: raw bytes as weight scales (NaN, Inf, subnormals) and some activation blocks with a
 * NaN or infinite scale.
 */
static void kcase_make(struct kcase *c, uint32_t n, uint32_t k, uint32_t m, uint64_t *s,
		       bool wild)
{
	uint32_t nb = k / 32;
	uint64_t i;
	uint32_t b, r;

	c->n = n;
	c->k = k;
	c->m = m;
	c->rb = pccx__kern_scale_bytes(k) + k / 2;
	c->w = malloc(c->rb * n);
	c->q8 = malloc((size_t)k * m);
	c->xp = malloc((size_t)k * m);
	c->sx = malloc(sizeof(float) * nb * m);
	c->xsum = malloc(sizeof(int32_t) * nb * m);
	c->a = malloc(sizeof(*c->a) * m);
	ck_assert(c->w && c->q8 && c->xp && c->sx && c->xsum && c->a);
	for (i = 0; i < c->rb * n; i++)
		c->w[i] = (uint8_t)lcg(s);
	if (!wild) {
		/* finite scales in a realistic range */
		for (r = 0; r < n; r++)
			for (b = 0; b < nb; b++) {
				uint16_t h = pccx__f32_to_fp16((float)(lcg(s) % 1000) / 30000.0f);

				memcpy(c->w + r * c->rb + 2 * b, &h, 2);
			}
	}
	for (i = 0; i < (uint64_t)k * m; i++)
		c->q8[i] = (int8_t)((int)(lcg(s) % 255) - 127);
	for (i = 0; i < (uint64_t)nb * m; i++) {
		c->sx[i] = (float)(lcg(s) % 100000) / 1e6f;
		if (wild && lcg(s) % 17 == 0)
			c->sx[i] = lcg(s) % 2 ? NAN : -INFINITY;
	}
	for (r = 0; r < m; r++) {
		c->a[r] = (struct pccx_kern_act){ k, c->q8 + (size_t)k * r, c->sx + (size_t)nb * r,
						  c->xp + (size_t)k * r, c->xsum + (size_t)nb * r };
		pccx__kern_act_prepare(&c->a[r]);
	}
}

static void kcase_free(struct kcase *c)
{
	free(c->w);
	free(c->q8);
	free(c->xp);
	free(c->sx);
	free(c->xsum);
	free(c->a);
}

typedef void (*rows_fn)(const uint8_t *, uint64_t, uint32_t, const struct pccx_kern_act *,
			float *);
typedef void (*gemm_fn)(const uint8_t *, uint64_t, uint32_t, const struct pccx_kern_act *,
			uint32_t, float *, size_t);

/* The vector variants: the _avx2 and _avxvnni kernels both serve PCCX_KERN_AVX2. */
static const struct variant {
	const char *name;
	bool (*have)(void);
	rows_fn rows;
	gemm_fn gemm;
} vec[] = {
	{ "avx2", pccx__kern_have_avx2, pccx__kern_q4_rows_avx2, pccx__kern_q4_gemm_rows_avx2 },
	{ "avxvnni", pccx__kern_have_avxvnni, pccx__kern_q4_rows_avxvnni,
	  pccx__kern_q4_gemm_rows_avxvnni },
	{ "avx512vnni", pccx__kern_have_avx512, pccx__kern_q4_rows_avx512,
	  pccx__kern_q4_gemm_rows_avx512 },
	{ "ref", NULL, pccx__kern_q4_rows_ref, pccx__kern_q4_gemm_rows_ref },
};
#define NVEC (sizeof(vec) / sizeof(vec[0]))

static bool runs(const struct variant *v)
{
	return !v->have || v->have();
}

START_TEST(test_ref_is_the_numerics_row_dot)
{
	uint64_t s = 7;
	struct kcase c;
	uint32_t r;
	float *y;

	kcase_make(&c, 9, 2048, 1, &s, false);
	y = malloc(sizeof(float) * c.n);
	pccx__kern_q4_rows_ref(c.w, c.rb, c.n, c.a, y);
	for (r = 0; r < c.n; r++) {
		const uint8_t *rec = c.w + r * c.rb;
		float e = pccx__q4_row_dot(rec + 128, (const uint16_t *)(const void *)rec, c.q8,
					   c.sx, c.k);

		ck_assert_uint_eq(pccx_f32_bits(y[r]), pccx_f32_bits(e));
	}
	free(y);
	kcase_free(&c);
}
END_TEST

/* Every vector GEMV the CPU runs against _ref, byte for byte. */
START_TEST(test_rows_bit_identical)
{
	uint64_t s = 12345;
	unsigned it, v, tested = 0;

	for (it = 0; it < 400; it++) {
		/* k: any number of blocks (groups of four and eight and what is left of them);
		 * n: partial row groups of every size */
		uint32_t k = 32 * (1 + (uint32_t)(lcg(&s) % 96)), n = 1 + (uint32_t)(lcg(&s) % 37);
		struct kcase c;
		float *y1, *y2;

		if (it % 50 == 0)
			k = 2048, n = 257;
		if (it % 100 == 1)
			k = 16384, n = 19;
		kcase_make(&c, n, k, 1, &s, it % 3 == 0);
		y1 = malloc(sizeof(float) * n);
		y2 = malloc(sizeof(float) * n);
		pccx__kern_q4_rows_ref(c.w, c.rb, n, c.a, y1);
		for (v = 0; v + 1 < NVEC; v++) {
			if (!runs(&vec[v]))
				continue;
			memset(y2, 0xA5, sizeof(float) * n);
			vec[v].rows(c.w, c.rb, n, c.a, y2);
			ck_assert_msg(!memcmp(y1, y2, sizeof(float) * n), "%s: k %u n %u differ",
				      vec[v].name, k, n);
			tested++;
		}
		free(y1);
		free(y2);
		kcase_free(&c);
	}
	if (!tested)
		fprintf(stderr, "test_kernels: this CPU runs no vector kernel; _ref only\n");
}
END_TEST

/* GEMM of m rows: the bytes of m GEMVs with _ref, for every variant the CPU runs. */
START_TEST(test_gemm_is_m_gemvs)
{
	static const uint32_t ms[] = { 1, 2, 3, 16, 64, 70 };	/* 70: two passes of 64 */
	static const uint32_t ks[] = { 32, 96, 160, 2048, 16384 };
	static const uint32_t ns[] = { 1, 37, 45 };
	uint64_t s = 4242;
	unsigned mi, ki, v, case_no = 0;

	for (mi = 0; mi < sizeof(ms) / sizeof(ms[0]); mi++)
		for (ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
			uint32_t m = ms[mi], k = ks[ki], i;
			/* odd n; few rows at k 16384, m >= 64 for _ref's time */
			uint32_t n = k == 16384 && m >= 64 ? 17 : ns[case_no % 3];
			size_t ldy = n + 3;	/* rows of y apart */
			struct kcase c;
			float *e, *y;

			kcase_make(&c, n, k, m, &s, case_no++ % 2 == 1);
			e = malloc(sizeof(float) * ldy * m);
			y = malloc(sizeof(float) * ldy * m);
			memset(e, 0x5A, sizeof(float) * ldy * m);
			for (i = 0; i < m; i++)
				pccx__kern_q4_rows_ref(c.w, c.rb, n, &c.a[i], e + i * ldy);
			for (v = 0; v < NVEC; v++) {
				if (!runs(&vec[v]))
					continue;
				memset(y, 0x5A, sizeof(float) * ldy * m);
				vec[v].gemm(c.w, c.rb, n, c.a, m, y, ldy);
				ck_assert_msg(!memcmp(e, y, sizeof(float) * ldy * m),
					      "%s: m %u k %u n %u differ", vec[v].name, m, k, n);
			}
			free(e);
			free(y);
			kcase_free(&c);
		}
}
END_TEST

/*
 * The pool's workers block every signal, so Ctrl-C goes to the application's own thread (pccx
 * chat waits for it at the prompt; a worker taking it would leave the prompt asleep).
 */
static void count_part(void *ctx, unsigned part, unsigned nparts)
{
	(void)nparts;
	__atomic_fetch_or((unsigned *)ctx, 1u << part, __ATOMIC_RELAXED);
}

START_TEST(test_pool_threads_block_signals)
{
	unsigned parts = 0;
	struct pccx_pool *p;
	pccx_diag d;
	int before, unblocked0, term0, unblocked;

	/* threads already there (none in a forked test) are counted out */
	before = other_threads(SIGINT, &unblocked0);
	ck_assert_int_ge(before, 0);
	ck_assert_int_eq(other_threads(SIGTERM, &term0), before);
	ck_assert_int_eq(pccx__pool_create(&p, 3, &d), 0);
	/* every worker has run (past its start-up, where glibc blocks signals for a while) */
	pccx__pool_run(p, count_part, &parts);
	ck_assert_uint_eq(parts, 7);
	ck_assert_int_eq(other_threads(SIGINT, &unblocked), before + 2);
	ck_assert_int_eq(unblocked, unblocked0);
	ck_assert_int_eq(other_threads(SIGTERM, &unblocked), before + 2);
	ck_assert_int_eq(unblocked, term0);
	pccx__pool_destroy(p);
}
END_TEST

/*
 * pccx__pool_start and _join run every part once, the caller's part 0 at the join; and the
 * count of runnable threads the pool's spin follows counts at least the caller (it is
 * running) where the kernel reports it.
 */
START_TEST(test_pool_start_join_and_runnable)
{
	unsigned parts = 0;
	struct pccx_pool *p;
	pccx_diag d;
	FILE *f = fopen("/proc/loadavg", "r");

	ck_assert_int_eq(pccx__pool_create(&p, 3, &d), 0);
	pccx__pool_start(p, count_part, &parts);
	pccx__pool_join(p);
	ck_assert_uint_eq(parts, 7);
	pccx__pool_destroy(p);
	if (f) {
		fclose(f);
		ck_assert_uint_ge(pccx__pool_runnable(), 1);
	}
}
END_TEST

/* Splitting rows across threads changes no byte, for the GEMV and the GEMM. */
START_TEST(test_threads_bit_identical)
{
	static const unsigned threads[] = { 1, 2, 3, 5 };
	uint64_t s = 99;
	struct kcase c;
	float *y0, *y;
	unsigned t, impl;
	uint32_t i;

	/* rows not a multiple of 16 or of the threads */
	kcase_make(&c, 4099, 512, 3, &s, false);
	y0 = malloc(sizeof(float) * c.n * c.m);
	y = malloc(sizeof(float) * c.n * c.m);
	for (i = 0; i < c.m; i++)
		pccx__kern_q4_rows_ref(c.w, c.rb, c.n, &c.a[i], y0 + (size_t)i * c.n);
	for (impl = PCCX_KERN_AUTO; impl < PCCX_KERN_NIMPL; impl++) {
		if (!pccx__kern_supported((enum pccx_kern_impl)impl))
			continue;
		for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
			struct pccx_pool *p;
			pccx_diag d;

			ck_assert_int_eq(pccx__pool_create(&p, threads[t], &d), 0);
			memset(y, 0, sizeof(float) * c.n * c.m);
			pccx__kern_q4_gemv(p, (enum pccx_kern_impl)impl, c.w, c.rb, c.n, c.a, y);
			ck_assert_msg(!memcmp(y0, y, sizeof(float) * c.n), "gemv %s, %u threads",
				      pccx__kern_name(impl), threads[t]);
			memset(y, 0, sizeof(float) * c.n * c.m);
			pccx__kern_q4_gemm(p, (enum pccx_kern_impl)impl, c.w, c.rb, c.n, c.a, c.m,
					   y, c.n);
			ck_assert_msg(!memcmp(y0, y, sizeof(float) * c.n * c.m),
				      "gemm %s, %u threads", pccx__kern_name(impl), threads[t]);
			pccx__pool_destroy(p);
		}
	}
	free(y0);
	free(y);
	kcase_free(&c);
}
END_TEST

START_TEST(test_names_and_support)
{
	unsigned impl;

	ck_assert(pccx__kern_supported(PCCX_KERN_AUTO) && pccx__kern_supported(PCCX_KERN_REF));
	ck_assert(!pccx__kern_supported(PCCX_KERN_NIMPL));
	ck_assert_str_eq(pccx__kern_name(PCCX_KERN_NIMPL), "?");
	for (impl = PCCX_KERN_AUTO; impl < PCCX_KERN_NIMPL; impl++) {
		enum pccx_kern_impl r = pccx__kern_resolve((enum pccx_kern_impl)impl);

		ck_assert_str_ne(pccx__kern_name((enum pccx_kern_impl)impl), "?");
		ck_assert(r != PCCX_KERN_AUTO && pccx__kern_supported(r));
	}
	/* AVX-512 VNNI and AVX-VNNI imply AVX2 */
	ck_assert(!pccx__kern_have_avx512() || pccx__kern_have_avx2());
	ck_assert(!pccx__kern_have_avxvnni() || pccx__kern_have_avx2());
}
END_TEST

/* ---- element-wise SFU functions ---- */

/* Random floats with a share of NaNs (any payload and sign), infinities, zeros, subnormals. */
static float wild_float(uint64_t *s)
{
	static const uint32_t special[] = { 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFA12345u,
					    0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,
					    0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0x3F800000u };
	uint32_t u = (uint32_t)lcg(s);

	if (u % 5 == 0)
		return pccx_f32_from_bits(special[(u / 5) % 12]);
	return (float)((int)(lcg(s) % 20001) - 10000) / (float)(1 + lcg(s) % 997);
}

/* One function, flag set, S and length on random data, apart and in place. */
static void sfu_case(unsigned fn, unsigned flags, float S, size_t n, uint64_t *s)
{
	float src[200], d0[200], e[200], y[200];
	size_t i;

	for (i = 0; i < 200; i++) {
		src[i] = wild_float(s);
		d0[i] = wild_float(s);
	}
	unsigned v;

	for (v = 0; v < 2; v++) {
		/* the dispatch (AVX-512 where the CPU has it), then the portable blocks */
		void (*f)(enum pccx_sfu_fn, unsigned, float, const float *, float *, size_t) =
			v ? pccx__kern_sfu_blocks : pccx__kern_sfu_vector;

		memcpy(e, d0, sizeof(e));
		memcpy(y, d0, sizeof(y));
		pccx__sfu_vector(fn, flags, S, src, e, n);
		f(fn, flags, S, src, y, n);
		ck_assert_msg(!memcmp(e, y, sizeof(e)), "%u: fn %u flags %#x n %zu", v, fn, flags,
			      n);
		memcpy(e, d0, sizeof(e));
		memcpy(y, d0, sizeof(y));
		pccx__sfu_vector(fn, flags, S, e, e, n);
		f(fn, flags, S, y, y, n);
		ck_assert_msg(!memcmp(e, y, sizeof(e)), "%u in place: fn %u flags %#x n %zu", v,
			      fn, flags, n);
	}
}

/* pccx__kern_sfu_vector gives pccx__sfu_vector's bytes: every function and flag set. */
START_TEST(test_sfu_vector_bit_identical)
{
	static const size_t lens[] = { 0, 1, 63, 64, 65, 200 };
	uint64_t s = 77;
	unsigned fn, flags, li, it;

	for (fn = 0; fn < PCCX_SFU_NFN; fn++)
		for (flags = 0; flags <= PCCX_SFU_F_ALL; flags++)
			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
				for (it = 0; it < 2; it++)
					sfu_case(fn, flags, it ? wild_float(&s) : 1.5f, lens[li],
						 &s);
}
END_TEST

/*
 * GELU and tanh over the float line: every 65,537th bit pattern (all exponents, NaNs and
 * infinities) and a dense sweep of [-12, 12] (every branch of the algorithms), against
 * pccx__sfu_vector, in runs of odd length (masked tails).
 */
START_TEST(test_sfu_transcendental_bit_identical)
{
	enum { N = 65536 + 240000 };
	static float x[N], e[N], y[N];
	static const enum pccx_sfu_fn fns[] = { PCCX_SFU_GELU, PCCX_SFU_TANH };
	size_t i, f;

	for (i = 0; i < 65536; i++)
		x[i] = pccx_f32_from_bits((uint32_t)(i * 65537u + 12345u));
	for (i = 0; i < 240000; i++)
		x[65536 + i] = -12.0f + 24.0f * (float)i / 240000.0f;
	for (f = 0; f < 2; f++) {
		memset(e, 0, sizeof(e));
		memset(y, 0, sizeof(y));
		for (i = 0; i < N; i += 997) {
			size_t n = N - i < 997 ? N - i : 997;

			pccx__sfu_vector(fns[f], 0, 0.0f, x + i, e + i, n);
			pccx__kern_sfu_vector(fns[f], 0, 0.0f, x + i, y + i, n);
		}
		for (i = 0; i < N; i++)
			ck_assert_msg(pccx_f32_bits(e[i]) == pccx_f32_bits(y[i]),
				      "fn %d x %a (%08x): %08x, want %08x", (int)fns[f],
				      (double)x[i], pccx_f32_bits(x[i]), pccx_f32_bits(y[i]),
				      pccx_f32_bits(e[i]));
	}
}
END_TEST

/* pccx__kern_act_prepare gives pccx__kern_act_prepare_ref's layout and sums. */
START_TEST(test_act_prepare_identical)
{
	enum { K = 32 * 23 };	/* five whole groups of four blocks and three blocks more */
	static int8_t q[K], xp0[K], xp1[K];
	int32_t s0[K / 32], s1[K / 32];
	uint64_t s = 3;
	unsigned it, i;

	for (it = 0; it < 50; it++) {
		struct pccx_kern_act a0 = { K, q, NULL, xp0, s0 }, a1 = { K, q, NULL, xp1, s1 };

		for (i = 0; i < K; i++)	/* the whole int8 range, -128 included */
			q[i] = (int8_t)(it < 2 ? (it ? 127 : -128) : (int)(lcg(&s) % 256) - 128);
		memset(xp0, 0x11, sizeof(xp0));
		memset(xp1, 0x11, sizeof(xp1));
		pccx__kern_act_prepare_ref(&a0);
		pccx__kern_act_prepare(&a1);
		ck_assert(!memcmp(xp0, xp1, sizeof(xp0)));
		ck_assert(!memcmp(s0, s1, sizeof(s0)));
	}
}
END_TEST

/* pccx__kern_out_store gives pccx__out_store's bytes. */
START_TEST(test_out_store_bit_identical)
{
	float y[100], old[100], e[100], o[100];
	uint64_t s = 8;
	unsigned n, accm, i;

	for (n = 0; n <= 100; n += 11)
		for (accm = 0; accm < 2; accm++) {
			for (i = 0; i < 100; i++) {
				y[i] = wild_float(&s);
				old[i] = wild_float(&s);
			}
			memcpy(e, old, sizeof(e));
			memcpy(o, old, sizeof(o));
			for (i = 0; i < n; i++)
				e[i] = pccx__out_store(y[i], accm, e[i]);
			pccx__kern_out_store(y, o, n, accm);
			ck_assert_msg(!memcmp(e, o, sizeof(e)), "n %u accm %u", n, accm);
		}
}
END_TEST

/*
 * The q4c GEMV's kernels give isa/num's INT32 sums and, once stored (NaN canonical), its
 * accumulators, on every kernel this CPU runs: every row count up to 100 (vector bodies of 32
 * and 16 rows, scalar tails, odd counts), all INT8 inputs, random scale bits (NaN, Inf,
 * subnormal FP16) and wild activation scales.
 */
START_TEST(test_q4c_bit_identical)
{
	uint8_t col[64], sc[200];
	int32_t s0[100], s1[100];
	float a0[100], a1[100];
	uint64_t s = 12;
	unsigned rows, it, i, impl;

	for (impl = PCCX_KERN_REF; impl < PCCX_KERN_NIMPL; impl++) {
		const enum pccx_kern_impl k = (enum pccx_kern_impl)impl;

		if (!pccx__kern_supported(k))
			continue;
		for (rows = 0; rows <= 100; rows++)
			for (it = 0; it < 20; it++) {
				int32_t x = (int32_t)(lcg(&s) % 255) - 127;
				float sx = it % 4 ? (float)(lcg(&s) % 1000) / 997.0f
						  : wild_float(&s);

				for (i = 0; i < sizeof(col); i++)
					col[i] = (uint8_t)lcg(&s);
				for (i = 0; i < sizeof(sc); i++)
					sc[i] = (uint8_t)lcg(&s);
				for (i = 0; i < 100; i++) {
					s0[i] = s1[i] = (int32_t)(lcg(&s) % 2001) - 1000;
					a0[i] = a1[i] = wild_float(&s);
				}
				pccx__q4c_column(col, rows, x, s0);
				pccx__kern_q4c_column(k, col, rows, x, s1);
				ck_assert_msg(!memcmp(s0, s1, sizeof(s0)), "%s column: rows %u",
					      pccx__kern_name(k), rows);
				pccx__q4c_block_end(sc, rows, sx, s0, a0);
				pccx__kern_q4c_block_end(k, sc, rows, sx, s1, a1);
				ck_assert_msg(!memcmp(s0, s1, sizeof(s0)), "%s block end sums: rows %u",
					      pccx__kern_name(k), rows);
				for (i = 0; i < 100; i++)
					ck_assert_msg(pccx_f32_bits(pccx_f32_store(a0[i])) ==
						      pccx_f32_bits(pccx_f32_store(a1[i])),
						      "%s rows %u row %u: 0x%08x vs 0x%08x",
						      pccx__kern_name(k), rows, i,
						      pccx_f32_bits(a0[i]), pccx_f32_bits(a1[i]));
			}
	}
}
END_TEST

/* pccx__kern_q8_quantize gives pccx__q8_quantize's bytes. */
START_TEST(test_q8_quantize_bit_identical)
{
	enum { K = 32 * 64 };
	static float x[K];
	static int8_t q0[K], q1[K];
	float s0[K / 32], s1[K / 32];
	uint64_t s = 31;
	unsigned it, b, i;

	for (it = 0; it < 200; it++) {
		for (b = 0; b < K / 32; b++) {
			/* per block: plain values of one magnitude, or wild ones, or zeros */
			unsigned kind = (unsigned)(lcg(&s) % 8);
			float scale = (float)(1 + lcg(&s) % 1000) / (float)(1 + lcg(&s) % 100000);

			for (i = 0; i < 32; i++) {
				float v = (float)((int)(lcg(&s) % 20001) - 10000) * scale;

				x[32 * b + i] = kind == 0 ? wild_float(&s)
					      : kind == 1 ? (lcg(&s) % 2 ? 0.0f : -0.0f)
					      : kind == 2 ? v * 1e-40f	/* subnormal products */
					      : v;
			}
		}
		memset(q1, 0x55, sizeof(q1));
		memset(s1, 0x55, sizeof(s1));
		pccx__q8_quantize(x, K, q0, s0);
		pccx__kern_q8_quantize(x, K, q1, s1);
		ck_assert(!memcmp(q0, q1, sizeof(q0)));
		ck_assert(!memcmp(s0, s1, sizeof(s0)));
	}
}
END_TEST

/* ---- F32 matmuls ---- */

/*
 * W (rows of rb bytes, rb a multiple of 16 at least cols * 4) and x (m rows of xs floats)
 * with wild values; every variant and thread count against isa/num's definitions.
 */
static void f32_case(uint32_t n, uint32_t k, uint32_t m, uint64_t *s)
{
	static const unsigned threads[] = { 1, 2, 3 };
	/* F32: W is (n, k); F32T: W is (k, n), so rows hold k or n floats */
	uint32_t fcols = k, tcols = n, j, r, c, t, impl;
	uint64_t frb = ((uint64_t)fcols * 4 + 15 + 16 * (lcg(s) % 2)) / 16 * 16;
	uint64_t trb = ((uint64_t)tcols * 4 + 15 + 16 * (lcg(s) % 2)) / 16 * 16;
	size_t xs = k + (size_t)(lcg(s) % 5), i;
	uint8_t *fw = aligned_alloc(16, frb * n), *tw = aligned_alloc(16, trb * k);
	float *x = malloc(sizeof(float) * xs * m), *packed = malloc(sizeof(float) * k * n);
	float *e = malloc(sizeof(float) * n * m), *et = malloc(sizeof(float) * n * m);
	float *y = malloc(sizeof(float) * n * m);

	ck_assert(fw && tw && x && packed && e && et && y);
	for (i = 0; i < frb * n / 4; i++)
		((float *)(void *)fw)[i] = wild_float(s);
	for (i = 0; i < trb * k / 4; i++)
		((float *)(void *)tw)[i] = wild_float(s);
	for (i = 0; i < xs * m; i++)
		x[i] = wild_float(s);
	for (r = 0; r < k; r++)
		for (c = 0; c < n; c++)
			packed[r * n + c] = ((const float *)(const void *)(tw + r * trb))[c];
	for (j = 0; j < m; j++) {
		for (r = 0; r < n; r++) {
			const float *wr = (const float *)(const void *)(fw + r * frb);

			e[j * n + r] = pccx__f32_row_dot(wr, x + j * xs, k);
		}
		pccx__f32_colsum(packed, x + j * xs, k, n, et + j * n);
	}
	for (impl = PCCX_KERN_REF; impl < PCCX_KERN_NIMPL; impl++) {
		if (!pccx__kern_supported((enum pccx_kern_impl)impl))
			continue;
		for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
			struct pccx_pool *p;
			pccx_diag d;

			ck_assert_int_eq(pccx__pool_create(&p, threads[t], &d), 0);
			memset(y, 0x3C, sizeof(float) * n * m);
			pccx__kern_f32_gemm(p, (enum pccx_kern_impl)impl,
					    (const float *)(const void *)fw, frb, n, k, x, xs, m, y,
					    n);
			ck_assert_msg(!memcmp(e, y, sizeof(float) * n * m),
				      "f32 %s: n %u k %u m %u", pccx__kern_name(impl), n, k, m);
			memset(y, 0x3C, sizeof(float) * n * m);
			pccx__kern_f32t_gemm(p, (enum pccx_kern_impl)impl,
					     (const float *)(const void *)tw, trb, k, n, x, xs, m,
					     y, n);
			ck_assert_msg(!memcmp(et, y, sizeof(float) * n * m),
				      "f32t %s: n %u k %u m %u", pccx__kern_name(impl), n, k, m);
			pccx__pool_destroy(p);
		}
	}
	free(fw);
	free(tw);
	free(x);
	free(packed);
	free(e);
	free(et);
	free(y);
}

START_TEST(test_f32_bit_identical)
{
	static const uint32_t ns[] = { 1, 15, 16, 33, 600 };
	static const uint32_t ks[] = { 1, 15, 17, 256, 300 };
	static const uint32_t ms[] = { 1, 3, 70 };
	unsigned a, b, c;
	uint64_t s = 555;

	for (a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
		for (b = 0; b < sizeof(ks) / sizeof(ks[0]); b++)
			for (c = 0; c < sizeof(ms) / sizeof(ms[0]); c++)
				f32_case(ns[a], ks[b], ms[c], &s);
}
END_TEST

/* ---- the reference NPU's Q4 GEMM: op_matmul with m > 1 ---- */

#define EL(l2, w, i) ((l2)[(size_t)PCCX_L2_ELEMS_PER_WORD * (w) + (i)])

/* m rows of x at word src (k each), n outputs per row at word dst, accm / findemax as given. */
static void exec_gemm_case(enum pccx_kern_impl impl, unsigned threads, uint32_t m, uint32_t n,
			   uint32_t k, uint64_t seed)
{
	uint64_t rb = pccx__kern_scale_bytes(k) + k / 2, s = seed, i;
	uint32_t src = 16, xs = pccx_words_for(k), ys = pccx_words_for(n);
	uint32_t dst = src + m * xs + 8, r, j, pass;
	const struct pccx_npu_ops *ops = pccx__ref_exec_ops();
	struct pccx_npu_matmul mm = { .dst = dst, .src = src, .n = n, .k = k, .m = m,
				      .fmt = PCCX_WFMT_Q4,
				      .w = { PCCX_NPU_BUF_WEIGHTS, 0, -1, 0 } };
	struct pccx_ref_exec *x;
	uint8_t *w = aligned_alloc(16, (rb * n + 15) / 16 * 16);
	int8_t *q8 = malloc(k);
	float *sx = malloc(sizeof(float) * (k / 32)), *old = malloc(sizeof(float) * n * m), *l2;
	float smax = -INFINITY;
	pccx_diag d;

	ck_assert(w && q8 && sx && old);
	ck_assert_int_eq(pccx__ref_exec_create(&x, threads, impl, &d), 0);
	l2 = pccx__ref_exec_l2(x);
	for (i = 0; i < rb * n; i++)
		w[i] = (uint8_t)lcg(&s);
	for (r = 0; r < n; r++)
		for (j = 0; j < k / 32; j++) {
			uint16_t h = pccx__f32_to_fp16((float)(lcg(&s) % 2000) / 40000.0f - 0.025f);

			memcpy(w + r * rb + 2 * j, &h, 2);
		}
	ck_assert_int_eq(ops->bind(x, PCCX_NPU_BUF_WEIGHTS, w, rb * n, false), 0);
	for (r = 0; r < m; r++)
		for (j = 0; j < k; j++)
			EL(l2, src + r * xs, j) = (float)((int)(lcg(&s) % 2001) - 1000) / 97.0f;
	for (pass = 0; pass < 2; pass++) {
		/* pass 1: accm and findemax over the outputs of pass 0 */
		mm.accm = mm.findemax = pass == 1;
		for (r = 0; r < m; r++)
			memcpy(old + r * n, &EL(l2, dst + r * ys, 0), sizeof(float) * n);
		ck_assert_int_eq(ops->matmul(x, &mm), 0);
		l2 = pccx__ref_exec_l2(x);	/* waits for a matmul still running */
		for (r = 0; r < m; r++) {
			pccx__q8_quantize(&EL(l2, src + r * xs, 0), k, q8, sx);
			for (j = 0; j < n; j++) {
				const uint8_t *rec = w + j * rb;
				const uint16_t *sc = (const uint16_t *)(const void *)rec;
				float e = pccx__out_store(
					pccx__q4_row_dot(rec + pccx__kern_scale_bytes(k), sc, q8,
							 sx, k),
					mm.accm, old[r * n + j]);

				ck_assert_msg(pccx_f32_bits(EL(l2, dst + r * ys, j)) ==
						      pccx_f32_bits(e),
					      "%s m %u n %u k %u: row %u out %u",
					      pccx__kern_name(impl), m, n, k, r, j);
				smax = e > smax ? e : smax;
			}
		}
	}
	ck_assert_float_eq(pccx__ref_exec_sreg(x), smax);
	pccx__ref_exec_free(x);
	free(w);
	free(q8);
	free(sx);
	free(old);
}

START_TEST(test_exec_q4_gemm)
{
	unsigned impl;

	for (impl = PCCX_KERN_AUTO; impl < PCCX_KERN_NIMPL; impl++) {
		if (!pccx__kern_supported((enum pccx_kern_impl)impl))
			continue;
		exec_gemm_case((enum pccx_kern_impl)impl, 1, 3, 37, 256, 11 + impl);
		exec_gemm_case((enum pccx_kern_impl)impl, 2, 16, 70, 2048, 23 + impl);
	}
	exec_gemm_case(PCCX_KERN_AUTO, 2, 64, 33, 512, 5);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("q4");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ref_is_the_numerics_row_dot);
	tcase_add_test(tc, test_rows_bit_identical);
	tcase_add_test(tc, test_gemm_is_m_gemvs);
	tcase_add_test(tc, test_threads_bit_identical);
	tcase_add_test(tc, test_pool_threads_block_signals);
	tcase_add_test(tc, test_pool_start_join_and_runnable);
	tcase_add_test(tc, test_names_and_support);
	tcase_add_test(tc, test_exec_q4_gemm);
	tcase_add_test(tc, test_sfu_vector_bit_identical);
	tcase_add_test(tc, test_sfu_transcendental_bit_identical);
	tcase_add_test(tc, test_q8_quantize_bit_identical);
	tcase_add_test(tc, test_out_store_bit_identical);
	tcase_add_test(tc, test_q4c_bit_identical);
	tcase_add_test(tc, test_act_prepare_identical);
	tcase_add_test(tc, test_f32_bit_identical);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
