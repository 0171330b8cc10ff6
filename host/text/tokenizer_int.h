/* SPDX-License-Identifier: MIT */
/*
 * Inside the tokenizer: the structure the files of host/text share and the helpers more than
 * one of them uses. The public API is pccx/tokenizer.h.
 *
 *   tokenizer.c         the structure's lifetime, its lookup tables, accessors
 *   tokenizer_steps.c   normalizer and decoder steps: the one table of kinds and their effect
 *   tokenizer_json.c    loading tokenizer.json
 *   tokenizer_gguf.c    GGUF vocabularies: the arrays and the tokenizer.ggml.* keys
 *   tokenizer_encode.c  added tokens, normalizer, pre-tokenizer, BPE, byte fallback
 *   tokenizer_decode.c  the decoder chain
 */
#ifndef PCCX_TOKENIZER_INT_H
#define PCCX_TOKENIZER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/tokenizer.h"

/* Largest text accepted by one encode call (symbol indices are 32-bit). */
#define PCCX_TOK_MAX_TEXT	((size_t)1 << 30)
/* Largest vocabulary accepted from any source. */
#define PCCX_TOK_MAX_VOCAB	((size_t)1 << 24)

#define TKF_ADDED	0x01u	/* matched on the raw text before normalization */
#define TKF_SPECIAL	0x02u	/* dropped by PCCX_TOK_SKIP_SPECIAL */
#define TKF_LSTRIP	0x04u
#define TKF_RSTRIP	0x08u

#define NONE UINT32_MAX

/* ---- normalizer and decoder steps (tokenizer_steps.c) ---------------------------------- */

/* The two chains a step can belong to (a bit mask in the table of kinds). */
enum tok_chain { TOK_NORMALIZER = 1, TOK_DECODER = 2 };

enum tok_step_kind {
	STEP_REPLACE,		/* both chains: every `from` becomes `to` */
	STEP_PREPEND,		/* normalizer: `to` in front of a non-empty text */
	STEP_BYTE_FALLBACK,	/* decoder: runs of <0xNN> pieces become their bytes */
	STEP_FUSE,		/* decoder: all pieces become one */
	STEP_STRIP,		/* decoder: `from` (one character) removed up to `start` times in
				 * front of each piece and up to `stop` times at its end */
	STEP_KINDS
};

struct tok_step {
	int kind;
	const char *from, *to;	/* owned copies once in a chain (NUL-terminated) */
	size_t from_len, to_len, start, stop;
};

/* Kind of the tokenizer.json `type` name in `chain`, -1 when that chain has no such step. */
int pccx__tok_step_kind(enum tok_chain chain, const char *name);
/* The names `chain` accepts, for messages: "Replace, Prepend, Sequence". */
void pccx__tok_step_names(enum tok_chain chain, char *buf, size_t size);
/* Append a copy of `st` to the chain; -1 when out of memory. */
int pccx__tok_add_step(pccx_tokenizer *tk, enum tok_chain chain, const struct tok_step *st);
/* The steps of a SentencePiece vocabulary (GGUF "llama"); -1 when out of memory. */
int pccx__tok_sentencepiece_steps(pccx_tokenizer *tk);

struct sbuf;
/*
 * Append to `out` what step `st` makes of the text s[0..n): a normalizer step on a section,
 * a per-piece decoder step on one piece. -1 when out of memory. BYTE_FALLBACK and FUSE act on
 * the list of pieces and are the decoder's (tokenizer_decode.c).
 */
int pccx__tok_step_apply(const struct tok_step *st, const char *s, size_t n, struct sbuf *out);

/* ---- the tokenizer ----------------------------------------------------------------------- */

enum { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_PREVIOUS, SPLIT_NEXT, SPLIT_CONTIGUOUS };

struct split_step {
	char *pat;
	size_t pat_len;
	int behavior;
};

/* Vocabulary hash entry: pieces of up to 8 bytes are verified without touching the blob. */
struct vent {
	uint32_t id1;		/* id + 1, 0 for an empty slot */
	uint16_t len;		/* min(piece length, 0xffff) */
	uint16_t tag;		/* high hash bits */
	uint64_t pre;		/* first 8 bytes, zero padded */
};

struct ment {
	uint64_t key;		/* left << 32 | right; UINT64_MAX for an empty slot */
	uint32_t rank;
	int32_t result;
};

struct pccx_tokenizer {
	char *name;
	uint32_t n;			/* vocabulary size: ids are [0, n) */
	char *blob;			/* all pieces */
	uint32_t *off, *len;
	uint8_t *type, *flags;
	float *score;			/* score algorithm only */
	int32_t bos, eos, unk, pad;
	bool add_bos, use_merges, byte_fallback, ignore_merges, space_prefix, fuse_unk;

	struct vent *vtab;		/* piece -> id */
	uint32_t vmask;
	int32_t ascii[128];
	int32_t byte_id[256];

	uint32_t n_merges;
	int32_t *m_left, *m_right, *m_result;	/* by rank */
	struct ment *mtab;		/* (left, right) -> rank, result */
	uint32_t mmask;
	uint64_t *cpent;		/* code point << 32 | id + 1 of single-character pieces */
	uint32_t cpmask;

	size_t n_added;
	uint32_t trie_n;		/* trie nodes; node 0 is the root */
	int32_t *trie_tok;
	uint64_t *tkey;			/* (node << 8 | byte) -> child */
	uint32_t *tchild, tmask;
	uint8_t first_byte[256];

	struct tok_step *norm;
	size_t n_norm;
	struct split_step *split;
	size_t n_split;
	struct tok_step *dec;
	size_t n_dec;
};

/* ---- building one (tokenizer.c) --------------------------------------------------------- */

/* A tokenizer of n ids with no pieces yet: all ids -1, all types 0. NULL when out of memory. */
pccx_tokenizer *pccx__tok_alloc(const char *name, uint32_t n);
/* Index every piece; on duplicates the lowest id wins. -1 when out of memory. */
int pccx__tok_build_vocab_index(pccx_tokenizer *tk);
/* byte_id[] from the pieces "<0x00>".."<0xFF>" (of type BYTE only, with require_type). */
void pccx__tok_build_byte_ids(pccx_tokenizer *tk, bool require_type);
/* The (left, right) -> rank index of m_left/m_right/m_result. -1 when out of memory. */
int pccx__tok_build_merge_index(pccx_tokenizer *tk);
/* The byte trie of the pieces flagged TKF_ADDED. -1 when out of memory. */
int pccx__tok_build_added_trie(pccx_tokenizer *tk);
/* Code point -> id of the single-character pieces. -1 when out of memory. */
int pccx__tok_build_cp_index(pccx_tokenizer *tk);

/* One merge to resolve: its two pieces. */
struct mreq {
	const char *l, *r;
	size_t ll, rl;
};

#define MBATCH 64

/*
 * Resolve a batch of merges (ranks first_rank...) to ids in m_left/m_right/m_result. On
 * failure (PCCX_ERR_FORMAT) *fail is the index in the batch and *what 0 (left piece),
 * 1 (right piece) or 2 (merged piece); PCCX_ERR_NOMEM when out of memory.
 */
int pccx__tok_resolve_merges(pccx_tokenizer *tk, const struct mreq *rq, size_t n,
			     uint32_t first_rank, struct sbuf *cat, size_t *fail, int *what);

/* ---- helpers ------------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s[0..n), 0 when invalid or truncated. */
size_t pccx__tok_utf8_len(const unsigned char *s, size_t n);
/* Whether s[0..n) is valid UTF-8; else *bad (when not NULL) is the offset of the first error. */
bool pccx__tok_utf8_valid(const char *s, size_t n, size_t *bad);
/* NUL-terminated copy of n bytes; NULL when out of memory. */
char *pccx__tok_memdup0(const void *s, size_t n);

/* Length of the UTF-8 sequence a valid lead byte starts. */
static inline size_t tok_cp_len(unsigned char c)
{
	return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

/* Code point of the valid UTF-8 sequence at p; *len its length. */
static inline uint32_t tok_decode_cp(const unsigned char *p, size_t *len)
{
	size_t n = tok_cp_len(p[0]);

	*len = n;
	switch (n) {
	case 1: return p[0];
	case 2: return ((uint32_t)(p[0] & 0x1f) << 6) | (p[1] & 0x3f);
	case 3: return ((uint32_t)(p[0] & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) |
		       (p[2] & 0x3f);
	default: return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) |
			((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f);
	}
}

static inline uint64_t tok_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* The lookups of the encoder's inner loops, inline for that reason. */
static inline const struct ment *tok_merge_lookup(const pccx_tokenizer *tk, int32_t l, int32_t r)
{
	uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
	uint32_t slot;

	for (slot = (uint32_t)tok_hash_u64(key) & tk->mmask;; slot = (slot + 1) & tk->mmask) {
		const struct ment *e = &tk->mtab[slot];

		if (e->key == key)
			return e;
		if (e->key == UINT64_MAX)
			return NULL;
	}
}

static inline int32_t tok_cp_lookup(const pccx_tokenizer *tk, uint32_t cp)
{
	uint32_t slot;

	for (slot = (uint32_t)tok_hash_u64(cp) & tk->cpmask;; slot = (slot + 1) & tk->cpmask) {
		uint64_t e = tk->cpent[slot];

		if (!e)
			return -1;
		if ((uint32_t)(e >> 32) == cp)
			return (int32_t)(uint32_t)e - 1;
	}
}

static inline uint32_t tok_trie_step(const pccx_tokenizer *tk, uint32_t node, unsigned char c)
{
	uint64_t key = ((uint64_t)node << 8) | c;
	uint32_t slot;

	for (slot = (uint32_t)tok_hash_u64(key) & tk->tmask;; slot = (slot + 1) & tk->tmask) {
		if (tk->tkey[slot] == UINT64_MAX)
			return NONE;
		if (tk->tkey[slot] == key)
			return tk->tchild[slot];
	}
}

/* A growable NUL-terminated byte string. */
struct sbuf {
	char *p;
	size_t n, cap;
};

static inline int sbuf_reserve(struct sbuf *b, size_t extra)
{
	if (b->n + extra + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap < b->n + extra + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	return 0;
}

static inline int sbuf_add(struct sbuf *b, const void *s, size_t n)
{
	if (sbuf_reserve(b, n))
		return -1;
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

static inline int sbuf_adds(struct sbuf *b, const char *s)
{
	return sbuf_add(b, s, strlen(s));
}

#endif /* PCCX_TOKENIZER_INT_H */
