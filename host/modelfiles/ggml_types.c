/* SPDX-License-Identifier: MIT */
/*
 * ggml tensor types: block layouts (public facts of the GGUF format) and decoders to
 * float. Every decoder reads bytes explicitly (little-endian, any alignment); the
 * arithmetic follows the format's definition element by element in FP32, so the
 * results do not depend on the host.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "ggml_types.h"
#include "modelfile_util.h"
#include "pccx_num.h"

struct type_info {
	const char *name;
	uint32_t blck;		/* elements per block */
	uint32_t bytes;		/* bytes per block */
	bool decode;
};

#define QK_K 256u

static const struct type_info types[PCCX_GGML_TYPE_LIMIT] = {
	[PCCX_GGML_F32] = { "F32", 1, 4, true },
	[PCCX_GGML_F16] = { "F16", 1, 2, true },
	[PCCX_GGML_Q4_0] = { "Q4_0", 32, 18, true },
	[PCCX_GGML_Q4_1] = { "Q4_1", 32, 20, true },
	[PCCX_GGML_Q5_0] = { "Q5_0", 32, 22, true },
	[PCCX_GGML_Q5_1] = { "Q5_1", 32, 24, true },
	[PCCX_GGML_Q8_0] = { "Q8_0", 32, 34, true },
	[PCCX_GGML_Q8_1] = { "Q8_1", 32, 36, false },
	[PCCX_GGML_Q2_K] = { "Q2_K", QK_K, 84, true },
	[PCCX_GGML_Q3_K] = { "Q3_K", QK_K, 110, true },
	[PCCX_GGML_Q4_K] = { "Q4_K", QK_K, 144, true },
	[PCCX_GGML_Q5_K] = { "Q5_K", QK_K, 176, true },
	[PCCX_GGML_Q6_K] = { "Q6_K", QK_K, 210, true },
	[PCCX_GGML_Q8_K] = { "Q8_K", QK_K, 292, true },
	[PCCX_GGML_IQ2_XXS] = { "IQ2_XXS", QK_K, 66, false },
	[PCCX_GGML_IQ2_XS] = { "IQ2_XS", QK_K, 74, false },
	[PCCX_GGML_IQ3_XXS] = { "IQ3_XXS", QK_K, 98, false },
	[PCCX_GGML_IQ1_S] = { "IQ1_S", QK_K, 50, false },
	[PCCX_GGML_IQ4_NL] = { "IQ4_NL", 32, 18, false },
	[PCCX_GGML_IQ3_S] = { "IQ3_S", QK_K, 110, false },
	[PCCX_GGML_IQ2_S] = { "IQ2_S", QK_K, 82, false },
	[PCCX_GGML_IQ4_XS] = { "IQ4_XS", QK_K, 136, false },
	[PCCX_GGML_I8] = { "I8", 1, 1, true },
	[PCCX_GGML_I16] = { "I16", 1, 2, true },
	[PCCX_GGML_I32] = { "I32", 1, 4, true },
	[PCCX_GGML_I64] = { "I64", 1, 8, false },
	[PCCX_GGML_F64] = { "F64", 1, 8, true },
	[PCCX_GGML_IQ1_M] = { "IQ1_M", QK_K, 56, false },
	[PCCX_GGML_BF16] = { "BF16", 1, 2, true },
	[PCCX_GGML_TQ1_0] = { "TQ1_0", QK_K, 54, false },
	[PCCX_GGML_TQ2_0] = { "TQ2_0", QK_K, 66, false },
	[PCCX_GGML_MXFP4] = { "MXFP4", 32, 17, false },
};

static const struct type_info *info(uint32_t type)
{
	if (type >= PCCX_GGML_TYPE_LIMIT || !types[type].name)
		return NULL;
	return &types[type];
}

const char *pccx_ggml_type_name(uint32_t type)
{
	const struct type_info *ti = info(type);

	return ti ? ti->name : NULL;
}

bool pccx_ggml_type_known(uint32_t type)
{
	return info(type) != NULL;
}

uint32_t pccx_ggml_block_elems(uint32_t type)
{
	const struct type_info *ti = info(type);

	return ti ? ti->blck : 0;
}

uint32_t pccx_ggml_block_bytes(uint32_t type)
{
	const struct type_info *ti = info(type);

	return ti ? ti->bytes : 0;
}

bool pccx_ggml_can_decode(uint32_t type)
{
	const struct type_info *ti = info(type);

	return ti && ti->decode;
}

int pccx_ggml_nbytes(uint32_t type, uint64_t n, uint64_t *bytes)
{
	const struct type_info *ti = info(type);

	if (!ti)
		return PCCX_ERR_UNSUPPORTED;
	if (n % ti->blck)
		return PCCX_ERR_INVALID;
	if (pccx_modelfile_mul_ovf(n / ti->blck, ti->bytes, bytes))
		return PCCX_ERR_RANGE;
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Block decoders: one block from `b` into `y`.                                           */

static float h2f(const uint8_t *p)
{
	return pccx__fp16_to_f32(pccx_modelfile_le16(p));
}

/* Q4_0: d, 16 bytes; element j is the low nibble of byte j, element j+16 the high one. */
static void dec_q4_0(const uint8_t *b, float *y)
{
	float d = h2f(b);

	for (int j = 0; j < 16; j++) {
		y[j] = (float)((b[2 + j] & 0xF) - 8) * d;
		y[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
	}
}

static void dec_q4_1(const uint8_t *b, float *y)
{
	float d = h2f(b), m = h2f(b + 2);

	for (int j = 0; j < 16; j++) {
		y[j] = (float)(b[4 + j] & 0xF) * d + m;
		y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
	}
}

/* Q5_0: d, 32 high bits (bit j belongs to element j), 16 bytes of low nibbles. */
static void dec_q5_0(const uint8_t *b, float *y)
{
	float d = h2f(b);
	uint32_t qh = pccx_modelfile_le32(b + 2);

	for (int j = 0; j < 16; j++) {
		int lo = (b[6 + j] & 0xF) | (int)(((qh >> j) & 1) << 4);
		int hi = (b[6 + j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);

		y[j] = (float)(lo - 16) * d;
		y[j + 16] = (float)(hi - 16) * d;
	}
}

static void dec_q5_1(const uint8_t *b, float *y)
{
	float d = h2f(b), m = h2f(b + 2);
	uint32_t qh = pccx_modelfile_le32(b + 4);

	for (int j = 0; j < 16; j++) {
		int lo = (b[8 + j] & 0xF) | (int)(((qh >> j) & 1) << 4);
		int hi = (b[8 + j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);

		y[j] = (float)lo * d + m;
		y[j + 16] = (float)hi * d + m;
	}
}

static void dec_q8_0(const uint8_t *b, float *y)
{
	float d = h2f(b);

	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin. */
static void dec_q2_k(const uint8_t *b, float *y)
{
	const uint8_t *sc = b, *q = b + 16;
	float d = h2f(b + 80), dmin = h2f(b + 82);
	int is = 0;

	for (int n = 0; n < 256; n += 128) {
		for (int shift = 0; shift < 8; shift += 2) {
			for (int half = 0; half < 2; half++) {
				float dl = d * (float)(sc[is] & 0xF);
				float ml = dmin * (float)(sc[is] >> 4);

				is++;
				for (int l = 0; l < 16; l++)
					*y++ = dl * (float)((q[l + 16 * half] >> shift) & 3) - ml;
			}
		}
		q += 32;
	}
}

/* 6-bit scale j (0..15) of a Q3_K block, already offset by -32. */
static int q3k_scale(const uint8_t *s, int j)
{
	int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
	int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;

	return (lo | hi << 4) - 32;
}

/* Q3_K: hmask[32], qs[64], scales[12], d. */
static void dec_q3_k(const uint8_t *b, float *y)
{
	const uint8_t *hm = b, *q = b + 32, *sc = b + 96;
	float d = h2f(b + 108);
	uint8_t m = 1;
	int is = 0;

	for (int n = 0; n < 256; n += 128) {
		for (int shift = 0; shift < 8; shift += 2) {
			for (int half = 0; half < 2; half++) {
				float dl = d * (float)q3k_scale(sc, is++);

				for (int l = 16 * half; l < 16 * half + 16; l++) {
					int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);

					*y++ = dl * (float)v;
				}
			}
			m = (uint8_t)(m << 1);
		}
		q += 32;
	}
}

/* 6-bit scale and min j (0..7) of the 12-byte Q4_K/Q5_K scale field. */
static void k4_scale_min(const uint8_t *s, int j, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*mn = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
		*mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

/* Q4_K: d, dmin, scales[12], qs[128]; 64-element groups use the low then the high nibbles. */
static void dec_q4_k(const uint8_t *b, float *y)
{
	float d = h2f(b), dmin = h2f(b + 2);
	const uint8_t *s = b + 4, *q = b + 16;

	for (int g = 0; g < 4; g++) {
		int sc, mn;
		float d1, m1, d2, m2;

		k4_scale_min(s, 2 * g, &sc, &mn);
		d1 = d * (float)sc;
		m1 = dmin * (float)mn;
		k4_scale_min(s, 2 * g + 1, &sc, &mn);
		d2 = d * (float)sc;
		m2 = dmin * (float)mn;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)(q[l] & 0xF) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)(q[l] >> 4) - m2;
		q += 32;
	}
}

/* Q5_K: d, dmin, scales[12], qh[32], qs[128]. */
static void dec_q5_k(const uint8_t *b, float *y)
{
	float d = h2f(b), dmin = h2f(b + 2);
	const uint8_t *s = b + 4, *qh = b + 16, *q = b + 48;

	for (int g = 0; g < 4; g++) {
		uint8_t u1 = (uint8_t)(1u << (2 * g)), u2 = (uint8_t)(2u << (2 * g));
		int sc, mn;
		float d1, m1, d2, m2;

		k4_scale_min(s, 2 * g, &sc, &mn);
		d1 = d * (float)sc;
		m1 = dmin * (float)mn;
		k4_scale_min(s, 2 * g + 1, &sc, &mn);
		d2 = d * (float)sc;
		m2 = dmin * (float)mn;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)((q[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)((q[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
		q += 32;
	}
}

/* Q6_K: ql[128], qh[64], scales[16] (int8), d. */
static void dec_q6_k(const uint8_t *b, float *y)
{
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	float d = h2f(b + 208);

	for (int n = 0; n < 2; n++) {
		for (int l = 0; l < 32; l++) {
			int is = l / 16;
			int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
			int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
			int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
			int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;

			y[l] = d * (float)sc[is + 0] * (float)q1;
			y[l + 32] = d * (float)sc[is + 2] * (float)q2;
			y[l + 64] = d * (float)sc[is + 4] * (float)q3;
			y[l + 96] = d * (float)sc[is + 6] * (float)q4;
		}
		y += 128;
		ql += 64;
		qh += 32;
		sc += 8;
	}
}

/* Q8_K: d as FP32, qs[256] int8, bsums[16] (unused for decoding). */
static void dec_q8_k(const uint8_t *b, float *y)
{
	float d = pccx_f32_from_bits(pccx_modelfile_le32(b));

	for (int j = 0; j < 256; j++)
		y[j] = d * (float)(int8_t)b[4 + j];
}

static void dec_scalar(uint32_t type, const uint8_t *p, float *y)
{
	uint64_t u;
	double f;

	switch (type) {
	case PCCX_GGML_F32:
		*y = pccx_f32_from_bits(pccx_modelfile_le32(p));
		break;
	case PCCX_GGML_F16:
		*y = pccx__fp16_to_f32(pccx_modelfile_le16(p));
		break;
	case PCCX_GGML_BF16:
		*y = pccx__bf16_to_f32(pccx_modelfile_le16(p));
		break;
	case PCCX_GGML_F64:
		u = pccx_modelfile_le64(p);
		memcpy(&f, &u, 8);
		*y = (float)f;
		break;
	case PCCX_GGML_I8:
		*y = (float)(int8_t)p[0];
		break;
	case PCCX_GGML_I16:
		*y = (float)(int16_t)pccx_modelfile_le16(p);
		break;
	case PCCX_GGML_I32:
		*y = (float)(int32_t)pccx_modelfile_le32(p);
		break;
	}
}

int pccx_ggml_decode(uint32_t type, const void *src, size_t src_len, float *dst, uint64_t n,
		     const char *what, pccx_diag *d)
{
	const struct type_info *ti = info(type);
	const uint8_t *p = src;
	void (*blk)(const uint8_t *, float *) = NULL;
	uint64_t bytes, nb;

	if (!what)
		what = "tensor";
	if (!ti)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: unknown ggml type %" PRIu32, what,
				  type);
	if (!ti->decode)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
				  "%s: decoding ggml type %s is not supported",
				  what, ti->name);
	if (n % ti->blck)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "%s: %" PRIu64 " elements is not a multiple of the %s block of %"
				  PRIu32,
				  what, n, ti->name, ti->blck);
	nb = n / ti->blck;
	if (pccx_modelfile_mul_ovf(nb, ti->bytes, &bytes) || bytes > src_len)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: %" PRIu64 " %s elements need more than the %zu bytes given",
				  what, n, ti->name, src_len);
	switch (type) {
	case PCCX_GGML_Q4_0:
		blk = dec_q4_0;
		break;
	case PCCX_GGML_Q4_1:
		blk = dec_q4_1;
		break;
	case PCCX_GGML_Q5_0:
		blk = dec_q5_0;
		break;
	case PCCX_GGML_Q5_1:
		blk = dec_q5_1;
		break;
	case PCCX_GGML_Q8_0:
		blk = dec_q8_0;
		break;
	case PCCX_GGML_Q2_K:
		blk = dec_q2_k;
		break;
	case PCCX_GGML_Q3_K:
		blk = dec_q3_k;
		break;
	case PCCX_GGML_Q4_K:
		blk = dec_q4_k;
		break;
	case PCCX_GGML_Q5_K:
		blk = dec_q5_k;
		break;
	case PCCX_GGML_Q6_K:
		blk = dec_q6_k;
		break;
	case PCCX_GGML_Q8_K:
		blk = dec_q8_k;
		break;
	default:
		for (uint64_t i = 0; i < n; i++)
			dec_scalar(type, p + i * ti->bytes, dst + i);
		return PCCX_OK;
	}
	for (uint64_t i = 0; i < nb; i++)
		blk(p + i * ti->bytes, dst + i * ti->blck);
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Q4 import and requantisation                                                           */

void pccx_q4_error_init(pccx_q4_error *e)
{
	memset(e, 0, sizeof(*e));
	e->lossless = true;
}

double pccx_q4_error_rms(const pccx_q4_error *e)
{
	return e->n ? sqrt(e->sum_sq_err / (double)e->n) : 0.0;
}

double pccx_q4_error_rel_rms(const pccx_q4_error *e)
{
	return e->sum_sq_ref > 0.0 ? sqrt(e->sum_sq_err / e->sum_sq_ref) : 0.0;
}

const char *pccx_q4_error_format(const pccx_q4_error *e, char *buf, size_t size)
{
	if (e->lossless && e->sum_sq_err == 0.0)
		snprintf(buf, size, "lossless (n %" PRIu64 ")", e->n);
	else
		snprintf(buf, size, "rms %.3e, max %.3e, relative rms %.3e (n %" PRIu64 ")",
			 pccx_q4_error_rms(e), e->max_abs_err, pccx_q4_error_rel_rms(e), e->n);
	return buf;
}

/* Compare one Q4 block (dequantised) with its source values. */
static void err_block(pccx_q4_error *e, const float *x, const uint8_t *nib, const uint16_t *d)
{
	if (!e)
		return;
	for (unsigned i = 0; i < PCCX_QBLK; i++) {
		double ref = x[i];
		double diff = (double)pccx__q4_weight(nib, d, i) - ref;

		e->sum_sq_err += diff * diff;
		e->sum_sq_ref += ref * ref;
		if (fabs(diff) > e->max_abs_err || diff != diff)
			e->max_abs_err = fabs(diff);
	}
	e->n += PCCX_QBLK;
}

int pccx__q4_refuse_nonfinite(pccx_diag *d, const char *what, int64_t row, uint64_t block,
			      const char *how)
{
	uint64_t e0 = block * PCCX_QBLK, e1 = e0 + PCCX_QBLK - 1;

	if (row < 0)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: block %" PRIu64 " (elements %" PRIu64 "..%" PRIu64
				  ") holds Inf or NaN, %s",
				  what, block, e0, e1, how);
	return pccx__fail(d, PCCX_ERR_RANGE,
			  "%s: row %" PRId64 ", block %" PRIu64 " (elements %" PRIu64 "..%" PRIu64
			  " of the row) holds Inf or NaN, %s",
			  what, row, block, e0, e1, how);
}

int pccx__q4_0_refuse(pccx_diag *d, const char *what, int64_t row, uint64_t block,
		      uint16_t scale)
{
	char how[48];

	snprintf(how, sizeof(how), "its FP16 scale is 0x%04x", scale);
	return pccx__q4_refuse_nonfinite(d, what, row, block, how);
}

int pccx_q4_quantize(const float *x, uint64_t n, uint8_t *nibbles, uint16_t *scales,
		     pccx_q4_error *err, const char *what, pccx_diag *d)
{
	if (!what)
		what = "tensor";
	if (n % PCCX_QBLK)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "%s: %" PRIu64 " elements is not a multiple of 32",
				  what, n);
	for (uint64_t b = 0; b < n / PCCX_QBLK; b++) {
		if (pccx__q4_quantize_block(x + b * PCCX_QBLK, &scales[b], nibbles + b * 16) != 0)
			return pccx__q4_refuse_nonfinite(d, what, -1, b, "cannot quantise");
		err_block(err, x + b * PCCX_QBLK, nibbles + b * 16, &scales[b]);
		if (err)
			err->lossless = false;
	}
	return PCCX_OK;
}

/* Elements decoded per step when requantising: a multiple of every block size. */
#define Q4_CHUNK 8192u

int pccx_q4_import(uint32_t type, const void *src, size_t src_len, uint64_t n, uint8_t *nibbles,
		   uint16_t *scales, pccx_q4_error *err, const char *what, pccx_diag *d)
{
	const struct type_info *ti = info(type);
	const uint8_t *p = src;
	float x[Q4_CHUNK];
	uint64_t bytes;
	int rc;

	if (!what)
		what = "tensor";
	if (!ti)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: unknown ggml type %" PRIu32, what,
				  type);
	if (n % PCCX_QBLK || n % ti->blck)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "%s: %" PRIu64 " elements is not a multiple of 32 and of the %s "
				  "block",
				  what, n, ti->name);
	if (pccx_modelfile_mul_ovf(n / ti->blck, ti->bytes, &bytes) || bytes > src_len)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: %" PRIu64 " %s elements need more than the %zu bytes given",
				  what, n, ti->name, src_len);
	if (type == PCCX_GGML_Q4_0) {
		for (uint64_t b = 0; b < n / PCCX_QBLK; b++) {
			pccx__q4_from_ggml_q4_0(p + b * 18, &scales[b], nibbles + b * 16);
			if (!pccx_q4_0_scale_finite(scales[b]))
				return pccx__q4_0_refuse(d, what, -1, b, scales[b]);
			if (err) {
				dec_q4_0(p + b * 18, x);
				err_block(err, x, nibbles + b * 16, &scales[b]);
			}
		}
		return PCCX_OK;
	}
	for (uint64_t done = 0; done < n;) {
		uint64_t k = n - done < Q4_CHUNK ? n - done : Q4_CHUNK;
		uint64_t off = done / ti->blck * ti->bytes;

		rc = pccx_ggml_decode(type, p + off, (size_t)(bytes - off), x, k, what, d);
		if (rc)
			return rc;
		for (uint64_t b = 0; b < k / PCCX_QBLK; b++) {
			uint64_t gb = done / PCCX_QBLK + b;
			const float *xb = x + b * PCCX_QBLK;

			if (pccx__q4_quantize_block(xb, &scales[gb], nibbles + gb * 16) != 0)
				return pccx__q4_refuse_nonfinite(d, what, -1, gb, "cannot quantise");
			err_block(err, xb, nibbles + gb * 16, &scales[gb]);
		}
		if (err)
			err->lossless = false;
		done += k;
	}
	return PCCX_OK;
}
