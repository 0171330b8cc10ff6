/* SPDX-License-Identifier: MIT */
/*
 * pccx numerics: measure the isa/num elementary functions against the platform's libm in
 * double precision (their FP64 counterparts, reference/num_f64.c), and re-derive every
 * constant the functions use.
 *
 *   pccx numerics                       every 997th float of every range (seconds)
 *   pccx numerics --exhaustive -j 2     every float of every range (docs/numerics.md)
 *   pccx numerics --fn sin,cos --stride 7
 *   pccx numerics --derive              recompute the constants and compare with the compiled ones
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "num_f64.h"
#include "pccx_num.h"
#include "pccx_num_consts.h"

/*
 * The FP64 counterparts (reference/num_f64.c) are accurate to well under a double ulp (2^-29 of
 * a float ulp), so the measured float errors are exact to about 1e-8 ulp.
 */
struct sweep {
	const char *name;
	float (*fn)(float);
	double (*ref)(float);
	float lo, hi;
	const char *range;
};

static const struct sweep sweeps[] = {
	{ "exp",   pccx__f32_exp,   pccx__f64_exp,   -104.0f, 89.0f, "[-104, 89]" },
	/* beyond |x| = 20, tanh is +-1 and GELU x or -0 by explicit branches (tested in test_num_sfu) */
	{ "tanh",  pccx__f32_tanh,  pccx__f64_tanh,  -20.0f, 20.0f, "[-20, 20]" },
	{ "gelu",  pccx__f32_gelu,  pccx__f64_gelu,  -20.0f, 20.0f, "[-20, 20]" },
	{ "sin",   pccx__f32_sin,   pccx__f64_sin,   -65536.0f, 65536.0f, "[-65536, 65536]" },
	{ "sin",   pccx__f32_sin,   pccx__f64_sin,   -FLT_MAX, FLT_MAX, "all finite" },
	{ "cos",   pccx__f32_cos,   pccx__f64_cos,   -65536.0f, 65536.0f, "[-65536, 65536]" },
	{ "cos",   pccx__f32_cos,   pccx__f64_cos,   -FLT_MAX, FLT_MAX, "all finite" },
	{ "sqrt",  pccx__f32_sqrt,  pccx__f64_sqrt,  0.0f, FLT_MAX, "[0, max]" },
	{ "rsqrt", pccx__f32_rsqrt, pccx__f64_rsqrt, 0.0f, FLT_MAX, "[0, max]" },
};

#define NSWEEPS (sizeof(sweeps) / sizeof(sweeps[0]))

/* ------------------------------------------------------------------------------------- */
/* Measurement                                                                            */

struct result {
	double max_ulp, max_rel;
	float worst_x;
	uint64_t samples, specials, bad_specials, not_rn;
};

static void measure_one(const struct sweep *s, float x, struct result *res)
{
	double r = s->ref(x), err, rel;
	float y = s->fn(x);

	res->samples++;
	if (isnan(r) || fabs(r) >= 0x1.ffffffp127) {
		/* NaN expected, or a value that rounds to Inf */
		res->specials++;
		if (isnan(r) ? !isnan(y) : !(isinf(y) && (y > 0) == (r > 0)))
			res->bad_specials++;
		return;
	}
	if (isinf(y) || isnan(y)) {
		res->bad_specials++;
		return;
	}
	err = pccx__f64_ulps(y, r, &rel);
	/* the reference is within ~2^-29 ulp of the exact value */
	if (err > 0.5 + 0x1p-20)
		res->not_rn++;
	if (err > res->max_ulp) {
		res->max_ulp = err;
		res->worst_x = x;
	}
	if (rel > res->max_rel)
		res->max_rel = rel;
}

struct job {
	const struct sweep *s;
	uint32_t k0, k1, stride;
	struct result res;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	uint64_t k;

	memset(&j->res, 0, sizeof(j->res));
	for (k = j->k0; k <= j->k1; k += j->stride)
		measure_one(j->s, pccx__f64_sweep_float((uint32_t)k), &j->res);
	return NULL;
}

static void measure(const struct sweep *s, uint32_t stride, unsigned threads, struct result *out)
{
	uint32_t k0 = pccx__f64_sweep_key(s->lo), k1 = pccx__f64_sweep_key(s->hi);
	uint64_t n = ((uint64_t)k1 - k0) / stride + 1, per = (n + threads - 1) / threads;
	struct job jobs[64];
	pthread_t tid[64];
	unsigned t, started = 0;

	memset(out, 0, sizeof(*out));
	for (t = 0; t < threads; t++) {
		uint64_t a = (uint64_t)t * per, b = a + per - 1;

		if (a >= n)
			break;
		if (b >= n)
			b = n - 1;
		jobs[t].s = s;
		jobs[t].k0 = (uint32_t)(k0 + a * stride);
		jobs[t].k1 = (uint32_t)(k0 + b * stride);
		jobs[t].stride = stride;
		if (threads == 1 || pthread_create(&tid[t], NULL, run_job, &jobs[t]) != 0) {
			run_job(&jobs[t]);
			tid[t] = 0;
		}
		started++;
	}
	for (t = 0; t < started; t++) {
		if (tid[t])
			pthread_join(tid[t], NULL);
		out->samples += jobs[t].res.samples;
		out->specials += jobs[t].res.specials;
		out->bad_specials += jobs[t].res.bad_specials;
		out->not_rn += jobs[t].res.not_rn;
		if (jobs[t].res.max_ulp > out->max_ulp) {
			out->max_ulp = jobs[t].res.max_ulp;
			out->worst_x = jobs[t].res.worst_x;
		}
		if (jobs[t].res.max_rel > out->max_rel)
			out->max_rel = jobs[t].res.max_rel;
	}
}

/* ------------------------------------------------------------------------------------- */
/* Derivation of the constants                                                            */

/* Fixed-point big numbers: w[0] is the integer part, w[1..] the fraction, big-endian words. */
#define BN 12

static void bn_div_small(const uint32_t *a, uint32_t d, uint32_t *q)
{
	uint64_t rem = 0;
	int i;

	for (i = 0; i < BN; i++) {
		uint64_t cur = (rem << 32) | a[i];

		q[i] = (uint32_t)(cur / d);
		rem = cur % d;
	}
}

static void bn_add(uint32_t *a, const uint32_t *b)
{
	uint64_t c = 0;
	int i;

	for (i = BN - 1; i >= 0; i--) {
		c += (uint64_t)a[i] + b[i];
		a[i] = (uint32_t)c;
		c >>= 32;
	}
}

static void bn_sub(uint32_t *a, const uint32_t *b)
{
	int64_t c = 0;
	int i;

	for (i = BN - 1; i >= 0; i--) {
		c += (int64_t)a[i] - b[i];
		a[i] = (uint32_t)c;
		c = c < 0 ? -1 : 0;
	}
}

static bool bn_is_zero(const uint32_t *a)
{
	int i;

	for (i = 0; i < BN; i++)
		if (a[i])
			return false;
	return true;
}

/* sum += m * atan(1/k) by its alternating series. */
static void bn_add_atan_inv(uint32_t *sum, uint32_t k, uint32_t m, bool negate)
{
	uint32_t p[BN] = { 0 }, t[BN], acc[BN] = { 0 }, neg[BN] = { 0 };
	uint32_t n;

	p[0] = m;
	bn_div_small(p, k, p);			/* p = m / k^(2n+1) */
	for (n = 0; !bn_is_zero(p); n++) {
		bn_div_small(p, 2 * n + 1, t);
		if (n & 1)
			bn_add(neg, t);
		else
			bn_add(acc, t);
		bn_div_small(p, k * k, p);
	}
	bn_sub(acc, neg);
	if (negate)
		bn_sub(sum, acc);
	else
		bn_add(sum, acc);
}

/* The first nwords * 32 bits of 2/pi, from pi = 16 atan(1/5) - 4 atan(1/239) (Machin). */
static void derive_two_over_pi(uint32_t *words, int nwords)
{
	uint32_t pi[BN] = { 0 }, r[BN] = { 0 };
	int i, j;

	bn_add_atan_inv(pi, 5, 16, false);
	bn_add_atan_inv(pi, 239, 4, true);
	r[0] = 2;
	for (i = 0; i < nwords * 32; i++) {
		/* r = 2r; the bit is 1 iff r >= pi */
		bool ge = true;

		for (j = 0; j < BN; j++)
			r[j] = (r[j] << 1) | (j + 1 < BN ? r[j + 1] >> 31 : 0);
		for (j = 0; j < BN; j++) {
			if (r[j] != pi[j]) {
				ge = r[j] > pi[j];
				break;
			}
		}
		if (ge)
			bn_sub(r, pi);
		if (i % 32 == 0)
			words[i / 32] = 0;
		words[i / 32] |= (uint32_t)ge << (31 - i % 32);
	}
}

/* Chebyshev interpolation of (tanh(x)/x - 1)/s, s = x^2, on [0, 1], degree n (n <= 15). */
static void derive_tanh(float *c, int n)
{
	long double A[16][17], s, x;
	int N = n + 1, i, j, k, piv;

	for (i = 0; i < N; i++) {
		s = 0.5L + 0.5L * cosl(M_PIl * (2 * i + 1) / (2 * N));
		x = sqrtl(s);
		for (j = 0; j < N; j++)
			A[i][j] = powl(s, j);
		A[i][N] = (tanhl(x) / x - 1.0L) / s;
	}
	for (k = 0; k < N; k++) {
		piv = k;
		for (i = k + 1; i < N; i++)
			if (fabsl(A[i][k]) > fabsl(A[piv][k]))
				piv = i;
		for (j = 0; j <= N; j++) {
			long double t = A[k][j];

			A[k][j] = A[piv][j];
			A[piv][j] = t;
		}
		for (i = k + 1; i < N; i++) {
			long double f = A[i][k] / A[k][k];

			for (j = k; j <= N; j++)
				A[i][j] -= f * A[k][j];
		}
	}
	for (k = N - 1; k >= 0; k--) {
		long double v = A[k][N];

		for (j = k + 1; j < N; j++)
			v -= A[k][j] * A[j][N];
		A[k][N] = v / A[k][k];
		c[k] = (float)A[k][N];
	}
}

static int check_const(const char *name, float derived, float compiled)
{
	bool ok = pccx_f32_bits(derived) == pccx_f32_bits(compiled);

	printf("  %-12s %-16a %-16a %s\n", name, (double)derived, (double)compiled,
	       ok ? "ok" : "DIFFERS");
	return ok ? 0 : 1;
}

static long double inv_factorial(int n)
{
	long double f = 1.0L;
	int i;

	for (i = 2; i <= n; i++)
		f *= i;
	return 1.0L / f;
}

static int derive(void)
{
	static const uint32_t compiled_2pi[PCCX_NUM_TWO_OVER_PI_WORDS] = { PCCX_NUM_TWO_OVER_PI };
	static const float exp_c[] = { PCCX_NUM_EXP_C2, PCCX_NUM_EXP_C3, PCCX_NUM_EXP_C4,
				       PCCX_NUM_EXP_C5, PCCX_NUM_EXP_C6, PCCX_NUM_EXP_C7,
				       PCCX_NUM_EXP_C8 };
	static const float sin_c[] = { PCCX_NUM_SIN_S1, PCCX_NUM_SIN_S2, PCCX_NUM_SIN_S3,
				       PCCX_NUM_SIN_S4 };
	static const float cos_c[] = { PCCX_NUM_COS_C2, PCCX_NUM_COS_C3, PCCX_NUM_COS_C4,
				       PCCX_NUM_COS_C5 };
	static const float tanh_c[] = { PCCX_NUM_TANH_T0, PCCX_NUM_TANH_T1, PCCX_NUM_TANH_T2,
					PCCX_NUM_TANH_T3, PCCX_NUM_TANH_T4, PCCX_NUM_TANH_T5,
					PCCX_NUM_TANH_T6, PCCX_NUM_TANH_T7, PCCX_NUM_TANH_T8 };
	long double ln2 = logl(2.0L), c = sqrtl(2.0L / M_PIl), a = strtold("0.044715", NULL);
	float hi, t[9];
	uint32_t w[PCCX_NUM_TWO_OVER_PI_WORDS];
	char name[32];
	int bad = 0, i;

	printf("constant     derived          compiled\n");
	hi = (float)(floorl(ln2 * 65536.0L) / 65536.0L);
	bad += check_const("ln2_hi", hi, PCCX_NUM_LN2_HI);
	bad += check_const("ln2_lo", (float)(ln2 - hi), PCCX_NUM_LN2_LO);
	bad += check_const("1/ln2", (float)(1.0L / ln2), PCCX_NUM_INV_LN2);
	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "exp 1/%d!", i + 2);
		bad += check_const(name, (float)inv_factorial(i + 2), exp_c[i]);
	}
	derive_tanh(t, 8);
	for (i = 0; i < 9; i++) {
		snprintf(name, sizeof(name), "tanh T%d", i);
		bad += check_const(name, t[i], tanh_c[i]);
	}
	hi = (float)c;
	bad += check_const("gelu C_hi", hi, PCCX_NUM_GELU_C_HI);
	bad += check_const("gelu C_lo", (float)(c - hi), PCCX_NUM_GELU_C_LO);
	hi = strtof("0.044715", NULL);
	bad += check_const("gelu A_hi", hi, PCCX_NUM_GELU_A_HI);
	bad += check_const("gelu A_lo", (float)(a - hi), PCCX_NUM_GELU_A_LO);
	hi = (float)(M_PIl / 2);
	bad += check_const("pi/2 hi", hi, PCCX_NUM_PIO2_HI);
	bad += check_const("pi/2 lo", (float)(M_PIl / 2 - hi), PCCX_NUM_PIO2_LO);
	bad += check_const("pi/4", (float)(M_PIl / 4), pccx_f32_from_bits(PCCX_NUM_PIO4_BITS));
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "sin %s1/%d!", i & 1 ? "" : "-", 2 * i + 3);
		bad += check_const(name, (float)((i & 1 ? 1 : -1) * inv_factorial(2 * i + 3)), sin_c[i]);
		snprintf(name, sizeof(name), "cos %s1/%d!", i & 1 ? "-" : "", 2 * i + 4);
		bad += check_const(name, (float)((i & 1 ? -1 : 1) * inv_factorial(2 * i + 4)), cos_c[i]);
	}
	derive_two_over_pi(w, PCCX_NUM_TWO_OVER_PI_WORDS);
	for (i = 0; i < PCCX_NUM_TWO_OVER_PI_WORDS; i++) {
		bool ok = w[i] == compiled_2pi[i];

		printf("  2/pi w%-5d 0x%08X       0x%08X       %s\n", i, w[i], compiled_2pi[i],
		       ok ? "ok" : "DIFFERS");
		bad += !ok;
	}
	printf("%d constant(s) differ\n", bad);
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------------------------------- */

static bool selected(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	if (!list)
		return true;
	while ((p = strstr(p, name)) != NULL) {
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

/* The names --fn knows: those of the sweeps, once each. */
static const char *fn_names(void)
{
	static char names[128];
	size_t i, len = 0;

	for (i = 0; i < NSWEEPS; i++)
		if (!i || strcmp(sweeps[i].name, sweeps[i - 1].name))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						len ? ", " : "", sweeps[i].name);
	return names;
}

static int sweep_all(const char *fns, uint32_t stride, unsigned threads)
{
	unsigned i;
	int bad = 0;

	printf("%-6s %-16s %6s %12s %9s %10s %8s %8s  %s\n", "fn", "range", "stride", "samples",
	       "max ulp", "max rel", "not RN", "special", "worst x");
	for (i = 0; i < NSWEEPS; i++) {
		struct result r;
		double t0;

		if (!selected(fns, sweeps[i].name))
			continue;
		t0 = pccx_cli_now();
		measure(&sweeps[i], stride, threads, &r);
		printf("%-6s %-16s %6lu %12llu %9.4f %10.3e %8llu %8s  %a  (%.1f s)\n",
		       sweeps[i].name, sweeps[i].range, (unsigned long)stride,
		       (unsigned long long)r.samples, r.max_ulp, r.max_rel,
		       (unsigned long long)r.not_rn, r.bad_specials ? "WRONG" : "ok",
		       (double)r.worst_x, pccx_cli_now() - t0);
		fflush(stdout);
		bad += r.bad_specials != 0;
	}
	return bad ? 1 : 0;
}

struct num_args {
	bool exhaustive, derive;
	uint64_t stride, threads;
	const char *fns;
};

#define A(f, type) PCCX_AT(struct num_args, f, type)
static const struct pccx_opt num_opts[] = {
	PCCX_OPT("exhaustive", 0, PCCX_OPT_FLAG, A(exhaustive, bool), NULL,
		 "every float of every range (minutes; use -j)"),
	PCCX_OPT("stride", 0, PCCX_OPT_UINT, A(stride, uint64_t), "N",
		 "every N-th float in bit order (default 997)", .min = 1, .max = 0xFFFFFFFFu),
	PCCX_OPT("fn", 0, PCCX_OPT_STR, A(fns, const char *), "LIST",
		 "only these functions (comma separated)", .values = fn_names),
	PCCX_OPT(NULL, 'j', PCCX_OPT_UINT, A(threads, uint64_t), "N", "threads (default 1)",
		 .min = 1, .max = 64),
	PCCX_OPT("derive", 0, PCCX_OPT_FLAG, A(derive, bool), NULL,
		 "recompute every constant of the functions and compare"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd num_cmd = {
	.name = "numerics",
	.usage = "[--exhaustive | --stride N] [--fn NAME[,NAME...]] [-j N]\n--derive",
	.about = "Measure the isa/num elementary functions (FP32) against libm in double "
		 "precision:\nmax error in ulps of the exact result's binade\n(2^-149 below the "
		 "normal range), max relative error over normal results, and the\nnumber of "
		 "results that are not correctly rounded (error > 0.5 ulp).\n",
	.opts = num_opts,
};

int pccx_cmd_numerics(int argc, char **argv)
{
	struct num_args a = { .stride = 997, .threads = 1 };
	int rc = pccx_opt_parse(&num_cmd, argc, argv, &a);

	/* numerics has always ended a bad argument with 1 */
	if (rc != PCCX_OPT_RUN)
		return rc == 2 ? 1 : rc;
	if (a.derive)
		return derive();
	return sweep_all(a.fns, a.exhaustive ? 1 : (uint32_t)a.stride, (unsigned)a.threads);
}
