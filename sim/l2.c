// SPDX-License-Identifier: MIT
/* L2: l2_words x 128 bits; element i of a word in bits [16i+15:16i] (little-endian). */
#include <string.h>

#include "sim_int.h"

uint8_t *pccx__sim_l2_word(struct pccx_sim *s, uint32_t w)
{
	return s->l2 + (size_t)w * SIM_BEAT;
}

/* n BF16 elements starting at element 0 of `word`. */
void pccx__sim_l2_get(struct pccx_sim *s, uint32_t word, uint16_t *e, uint64_t n)
{
	const uint8_t *p = pccx__sim_l2_word(s, word);
	uint64_t i;

	for (i = 0; i < n; i++)
		e[i] = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
}

/* Writers leave the lanes past the end of a vector in its last word unchanged. */
void pccx__sim_l2_put(struct pccx_sim *s, uint32_t word, const uint16_t *e, uint64_t n)
{
	uint8_t *p = pccx__sim_l2_word(s, word);
	uint64_t i;

	for (i = 0; i < n; i++) {
		p[2 * i] = (uint8_t)e[i];
		p[2 * i + 1] = (uint8_t)(e[i] >> 8);
	}
}

/* FP32 slot 0 of a word: low half in element 0, high half in element 1. */
void pccx__sim_l2_put_f32(struct pccx_sim *s, uint32_t word, uint32_t bits)
{
	uint16_t e[2] = { (uint16_t)bits, (uint16_t)(bits >> 16) };

	pccx__sim_l2_put(s, word, e, 2);
}

void pccx__sim_l2_clear(struct pccx_sim *s)
{
	memset(s->l2, 0, (size_t)s->cfg.l2_words * SIM_BEAT);
}
