// SPDX-License-Identifier: MIT
/* L2: l2_words x 128 bits; element i of a word (FP32) in bits [32i+31:32i] (little-endian). */
#include <string.h>

#include "pccx_num.h"
#include "sim_int.h"

uint8_t *pccx__sim_l2_word(struct pccx_sim *s, uint32_t w)
{
	return s->l2 + (size_t)w * SIM_BEAT;
}

/* A little-endian host holds an FP32 element as L2 does: the bytes move as they are. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define L2_HOST_ORDER 1
#else
#define L2_HOST_ORDER 0
#endif

/* n FP32 elements starting at element 0 of `word`. */
void pccx__sim_l2_get(struct pccx_sim *s, uint32_t word, float *e, uint64_t n)
{
	const uint8_t *p = pccx__sim_l2_word(s, word);
	uint64_t i;

	if (L2_HOST_ORDER) {
		memcpy(e, p, (size_t)n * 4);
		return;
	}
	for (i = 0; i < n; i++, p += 4)
		e[i] = pccx_f32_from_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 |
					  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Writers leave the lanes past the end of a vector in its last word unchanged. */
void pccx__sim_l2_put(struct pccx_sim *s, uint32_t word, const float *e, uint64_t n)
{
	uint8_t *p = pccx__sim_l2_word(s, word);
	uint64_t i;

	if (L2_HOST_ORDER) {
		memcpy(p, e, (size_t)n * 4);
		return;
	}
	for (i = 0; i < n; i++, p += 4) {
		uint32_t b = pccx_f32_bits(e[i]);

		p[0] = (uint8_t)b;
		p[1] = (uint8_t)(b >> 8);
		p[2] = (uint8_t)(b >> 16);
		p[3] = (uint8_t)(b >> 24);
	}
}

/* A scalar result: element 0 of a word. */
void pccx__sim_l2_put_f32(struct pccx_sim *s, uint32_t word, uint32_t bits)
{
	float e = pccx_f32_from_bits(bits);

	pccx__sim_l2_put(s, word, &e, 1);
}

void pccx__sim_l2_clear(struct pccx_sim *s)
{
	memset(s->l2, 0, (size_t)s->cfg.l2_words * SIM_BEAT);
}
