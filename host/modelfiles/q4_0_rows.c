/* SPDX-License-Identifier: MIT */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "gemma_model.h"
#include "ggml_types.h"
#include "modelfile_util.h"
#include "q4_0_rows.h"

#define Q4_0_BLOCK 18u

/* Little-endian 64-bit words of unaligned bytes, as one load or store each. */
static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static void st64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

/*
 * Four device bytes from eight Q4_0 bytes' low nibbles (x = bytes & 0x0F..): byte k is
 * nibble 2k (low) and nibble 2k + 1 (high), as pccx_int4 packs elements.
 */
static uint32_t pack_pairs(uint64_t x)
{
	x = (x | x >> 4) & 0x00FF00FF00FF00FFull;
	x = (x | x >> 8) & 0x0000FFFF0000FFFFull;
	return (uint32_t)(x | x >> 16);
}

/*
 * One block's 16 device bytes: elements 0..15 are the low nibbles of qs[0..15], 16..31 the
 * high ones; a Q4_0 nibble u is the weight u - 8, whose 4-bit two's complement is u ^ 8.
 */
static void block_nibbles(const uint8_t *qs, uint8_t *out)
{
	const uint64_t lo = 0x0F0F0F0F0F0F0F0Full, flip = 0x8888888888888888ull;
	uint64_t a = ld64(qs), b = ld64(qs + 8), w0, w1;

	w0 = (uint64_t)pack_pairs(a & lo) | (uint64_t)pack_pairs(b & lo) << 32;
	w1 = (uint64_t)pack_pairs(a >> 4 & lo) | (uint64_t)pack_pairs(b >> 4 & lo) << 32;
	st64(out, w0 ^ flip);
	st64(out + 8, w1 ^ flip);
}

/* The first block of the row whose scale is Inf or NaN, else cols / 32. */
static uint32_t first_nonfinite(const uint8_t *rec, uint32_t nb, uint32_t bad)
{
	uint32_t b;

	if (!bad)
		return nb;
	for (b = 0; b < nb; b++)
		if (!pccx_q4_0_scale_finite(pccx_modelfile_le16(rec + 2 * b)))
			break;
	return b;
}

uint32_t pccx__q4_0_row_import_words(const uint8_t *src, uint32_t cols, uint8_t *rec)
{
	uint8_t *nib = rec + pccx_gemma_q4_scale_bytes(cols);
	uint32_t nb = cols / 32, b, bad = 0;

	for (b = 0; b < nb; b++, src += Q4_0_BLOCK) {
		uint16_t h = pccx_modelfile_le16(src);

		/* the exponent all ones: Inf or NaN (pccx_q4_0_scale_finite), located below */
		bad |= (h & 0x7C00u) == 0x7C00u;
		pccx_modelfile_put16(rec + 2 * b, h);
		block_nibbles(src + 2, nib + 16 * b);
	}
	return first_nonfinite(rec, nb, bad);
}

#ifdef __SSE2__
/*
 * The same with SSE2 (every x86-64 CPU): a block's 16 bytes as 8 pairs, both nibbles of a
 * pair's bytes joined in its low byte by a 16-bit shift, low nibbles' pairs then high
 * nibbles' pairs packed into the 16 device bytes at once.
 */
uint32_t pccx__q4_0_row_import_sse2(const uint8_t *src, uint32_t cols, uint8_t *rec)
{
	const __m128i lo = _mm_set1_epi8(0x0F), byte = _mm_set1_epi16(0xFF);
	const __m128i flip = _mm_set1_epi8((char)0x88);
	uint8_t *nib = rec + pccx_gemma_q4_scale_bytes(cols);
	uint32_t nb = cols / 32, b, bad = 0;

	for (b = 0; b < nb; b++, src += Q4_0_BLOCK) {
		uint16_t h = pccx_modelfile_le16(src);
		__m128i q = _mm_loadu_si128((const __m128i *)(const void *)(src + 2));
		__m128i l = _mm_and_si128(q, lo), u = _mm_and_si128(_mm_srli_epi16(q, 4), lo);

		bad |= (h & 0x7C00u) == 0x7C00u;
		pccx_modelfile_put16(rec + 2 * b, h);
		l = _mm_and_si128(_mm_or_si128(l, _mm_srli_epi16(l, 4)), byte);
		u = _mm_and_si128(_mm_or_si128(u, _mm_srli_epi16(u, 4)), byte);
		_mm_storeu_si128((__m128i *)(void *)(nib + 16 * b),
				 _mm_xor_si128(_mm_packus_epi16(l, u), flip));
	}
	return first_nonfinite(rec, nb, bad);
}
#endif

uint32_t pccx__q4_0_row_import(const uint8_t *src, uint32_t cols, uint8_t *rec)
{
#ifdef __SSE2__
	return pccx__q4_0_row_import_sse2(src, cols, rec);
#else
	return pccx__q4_0_row_import_words(src, cols, rec);
#endif
}
