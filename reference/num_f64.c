// SPDX-License-Identifier: MIT
/* FP64 counterparts of the isa/num elementary functions (num_f64.h). */
#include <math.h>

#include "num_f64.h"
#include "pccx_num.h"

double pccx__f64_exp(float x)
{
	return exp((double)x);
}

double pccx__f64_tanh(float x)
{
	return tanh((double)x);
}

/*
 * In the cancellation-free form x / (1 + e^{-2v}), v = sqrt(2/pi) (x + 0.044715 x^3): v
 * carries a relative error of ~1e-16, amplified by |2v| < 120 in the result, far below a
 * float ulp. Beyond |x| = 20 the exact value is x or -0 (e^{-2v} < 1e-300).
 */
double pccx__f64_gelu(float x)
{
	double X = x, v = sqrt(2.0 / M_PI) * (X + 0.044715 * X * X * X);

	if (X > 20.0)
		return X;
	if (X < -20.0)
		return -0.0;
	return X / (1.0 + exp(-2.0 * v));
}

double pccx__f64_sin(float x)
{
	return sin((double)x);
}

double pccx__f64_cos(float x)
{
	return cos((double)x);
}

double pccx__f64_sqrt(float x)
{
	return sqrt((double)x);
}

double pccx__f64_rsqrt(float x)
{
	return 1.0 / sqrt((double)x);
}

double pccx__f64_ulps(float y, double r, double *rel)
{
	double d = fabs((double)y - r), ulp = 0x1p-149;
	int e;

	if (rel)
		*rel = 0.0;
	if (fabs(r) >= 0x1p-126) {
		frexp(fabs(r), &e);
		ulp = ldexp(1.0, e - 24);
		if (rel)
			*rel = d / fabs(r);
	}
	return d / ulp;
}

uint32_t pccx__f64_sweep_key(float f)
{
	uint32_t u = pccx_f32_bits(f);

	return (u >> 31) ? 0x7FFFFFFFu - (u & 0x7FFFFFFFu) : u + 0x80000000u;
}

float pccx__f64_sweep_float(uint32_t key)
{
	return pccx_f32_from_bits(key >= 0x80000000u ? key - 0x80000000u :
				  0x80000000u | (0x7FFFFFFFu - key));
}
