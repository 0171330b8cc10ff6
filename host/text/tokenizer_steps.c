/* SPDX-License-Identifier: MIT */
/*
 * Normalizer and decoder steps. One table says which kinds exist, what tokenizer.json calls
 * them and in which chain each may stand; one function says what a kind does to a text. The
 * tokenizer.json loader, the SentencePiece (GGUF) vocabularies, the encoder and the decoder all
 * go through these, so a kind is added here and nowhere else (besides reading its parameters
 * from tokenizer.json).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_int.h"

static const struct {
	const char *name;	/* the "type" of tokenizer.json */
	unsigned chains;	/* enum tok_chain bits */
} kinds[STEP_KINDS] = {
	[STEP_REPLACE] = { "Replace", TOK_NORMALIZER | TOK_DECODER },
	[STEP_PREPEND] = { "Prepend", TOK_NORMALIZER },
	[STEP_BYTE_FALLBACK] = { "ByteFallback", TOK_DECODER },
	[STEP_FUSE] = { "Fuse", TOK_DECODER },
	[STEP_STRIP] = { "Strip", TOK_DECODER },
};

int pccx__tok_step_kind(enum tok_chain chain, const char *name)
{
	int k;

	for (k = 0; k < STEP_KINDS; k++)
		if ((kinds[k].chains & chain) && !strcmp(kinds[k].name, name))
			return k;
	return -1;
}

void pccx__tok_step_names(enum tok_chain chain, char *buf, size_t size)
{
	size_t n = 0;
	int k;

	buf[0] = '\0';
	for (k = 0; k < STEP_KINDS && n < size; k++)
		if (kinds[k].chains & chain)
			n += (size_t)snprintf(buf + n, size - n, "%s, ", kinds[k].name);
	/* Sequence is the list of steps itself, accepted in both chains */
	if (n < size)
		snprintf(buf + n, size - n, "Sequence");
}

int pccx__tok_add_step(pccx_tokenizer *tk, enum tok_chain chain, const struct tok_step *st)
{
	struct tok_step **list = chain == TOK_NORMALIZER ? &tk->norm : &tk->dec;
	size_t *n = chain == TOK_NORMALIZER ? &tk->n_norm : &tk->n_dec;
	struct tok_step *nl = realloc(*list, (*n + 1) * sizeof(*nl));
	char *from, *to;

	if (!nl)
		return -1;
	*list = nl;
	from = pccx__tok_memdup0(st->from ? st->from : "", st->from_len);
	to = pccx__tok_memdup0(st->to ? st->to : "", st->to_len);
	if (!from || !to) {
		free(from);
		free(to);
		return -1;
	}
	nl[*n] = *st;
	nl[*n].from = from;
	nl[*n].to = to;
	(*n)++;
	return 0;
}

#define LOWER_ONE_EIGHTH_BLOCK "\xe2\x96\x81"	/* U+2581, SentencePiece's space */

/*
 * What Hugging Face's converter writes into the tokenizer.json of a SentencePiece model (and
 * what Gemma's file holds): spaces are U+2581 and byte pieces are reassembled; with
 * add_space_prefix one U+2581 goes in front of each section and is stripped when decoding.
 */
int pccx__tok_sentencepiece_steps(pccx_tokenizer *tk)
{
	static const struct tok_step prefix = {
		.kind = STEP_PREPEND, .to = LOWER_ONE_EIGHTH_BLOCK, .to_len = 3,
	};
	static const struct tok_step norm = {
		.kind = STEP_REPLACE, .from = " ", .from_len = 1,
		.to = LOWER_ONE_EIGHTH_BLOCK, .to_len = 3,
	};
	static const struct tok_step dec[] = {
		{ .kind = STEP_REPLACE, .from = LOWER_ONE_EIGHTH_BLOCK, .from_len = 3,
		  .to = " ", .to_len = 1 },
		{ .kind = STEP_BYTE_FALLBACK },
		{ .kind = STEP_FUSE },
	};
	static const struct tok_step strip = {
		.kind = STEP_STRIP, .from = " ", .from_len = 1, .start = 1,
	};
	size_t i;

	if (tk->space_prefix && pccx__tok_add_step(tk, TOK_NORMALIZER, &prefix))
		return -1;
	if (pccx__tok_add_step(tk, TOK_NORMALIZER, &norm))
		return -1;
	for (i = 0; i < sizeof(dec) / sizeof(dec[0]); i++)
		if (pccx__tok_add_step(tk, TOK_DECODER, &dec[i]))
			return -1;
	if (tk->space_prefix && pccx__tok_add_step(tk, TOK_DECODER, &strip))
		return -1;
	return 0;
}

/* Every `from` in s[0..n) replaced by `to`. */
static int replace(const struct tok_step *st, const char *s, size_t n, struct sbuf *b)
{
	size_t k = 0;

	if (st->from_len == 1) {
		/* the common case (" " -> U+2581 on every section): a byte loop */
		char c = st->from[0];

		if (sbuf_reserve(b, n))
			return -1;
		for (k = 0; k < n; k++) {
			if (s[k] == c) {
				if (sbuf_add(b, st->to, st->to_len))
					return -1;
			} else {
				if (b->n + 1 >= b->cap && sbuf_reserve(b, 1))
					return -1;
				b->p[b->n++] = s[k];
			}
		}
		if (sbuf_reserve(b, 0))
			return -1;
		b->p[b->n] = '\0';
		return 0;
	}
	while (k < n) {
		const char *hit = n - k >= st->from_len ? memmem(s + k, n - k, st->from,
								 st->from_len) : NULL;
		size_t upto = hit ? (size_t)(hit - s) : n;

		if (sbuf_add(b, s + k, upto - k))
			return -1;
		if (!hit)
			break;
		if (sbuf_add(b, st->to, st->to_len))
			return -1;
		k = upto + st->from_len;
	}
	if (sbuf_reserve(b, 0))
		return -1;
	b->p[b->n] = '\0';
	return 0;
}

int pccx__tok_step_apply(const struct tok_step *st, const char *s, size_t n, struct sbuf *out)
{
	size_t k;

	switch (st->kind) {
	case STEP_REPLACE:
		return replace(st, s, n, out);
	case STEP_PREPEND:
		/* a Prepend never makes text out of nothing */
		if (n && sbuf_add(out, st->to, st->to_len))
			return -1;
		return sbuf_add(out, s, n);
	case STEP_STRIP:
		for (k = 0; k < st->start && n >= st->from_len &&
			    !memcmp(s, st->from, st->from_len); k++) {
			s += st->from_len;
			n -= st->from_len;
		}
		for (k = 0; k < st->stop && n >= st->from_len &&
			    !memcmp(s + n - st->from_len, st->from, st->from_len); k++)
			n -= st->from_len;
		return sbuf_add(out, s, n);
	default:
		/* list steps (ByteFallback, Fuse) leave a single text as it is */
		return sbuf_add(out, s, n);
	}
}
