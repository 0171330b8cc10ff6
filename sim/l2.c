// SPDX-License-Identifier: MIT
/* L2: l2_words x 128 bits; element i of a word (FP32) in bits [32i+31:32i] (little-endian). */
#include <string.h>

#include "pccx_num.h"
#include "sim_int.h"

uint8_t *pccx__sim_l2_word(struct pccx_sim *s, uint32_t w)
{
	return s->l2 + (size_t)w * SIM_BEAT;
}

/* n FP32 elements starting at element 0 of `word`. */
void pccx__sim_l2_get(struct pccx_sim *s, uint32_t word, float *e, uint64_t n)
{
	sim_f32s_from_le(e, pccx__sim_l2_word(s, word), (size_t)n);
}

/* Writers leave the lanes past the end of a vector in its last word unchanged. */
void pccx__sim_l2_put(struct pccx_sim *s, uint32_t word, const float *e, uint64_t n)
{
	sim_f32s_to_le(pccx__sim_l2_word(s, word), e, (size_t)n);
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
