/* SPDX-License-Identifier: MIT */
/*
 * Gemma SentencePiece-style BPE tokenizer: loading (tokenizer.json or GGUF-style arrays),
 * export for GGUF, encode, decode and the Gemma chat template.
 *
 * Encode pipeline (tokenizer.json semantics, as the Hugging Face JS/Rust tokenizers run it):
 *   1. added tokens (special or not) are matched on the raw text, leftmost then longest, and
 *      split the text into sections;
 *   2. each remaining section goes through the normalizer (Gemma: " " -> U+2581) and the
 *      pre-tokenizer (Gemma: a split on " " that never matches after normalization);
 *   3. each piece is BPE-merged: the adjacent pair with the lowest merge rank first, ties to the
 *      leftmost pair (a binary heap over a linked list of symbols: O(n log n));
 *   4. a symbol that is not in the vocabulary becomes its UTF-8 bytes as <0xNN> tokens.
 * The score algorithm (vocabularies without merges) differs only in step 3: the adjacent pair
 * whose concatenation is a mergeable token with the highest score is merged first.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "diag.h"
#include "json.h"
#include "tokenizer.h"

#define TKF_ADDED	0x01u	/* matched on the raw text before normalization */
#define TKF_SPECIAL	0x02u	/* dropped by PCCX_TOK_SKIP_SPECIAL */
#define TKF_LSTRIP	0x04u
#define TKF_RSTRIP	0x08u

#define NONE UINT32_MAX

enum { NORM_REPLACE, NORM_PREPEND };
enum { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_PREVIOUS, SPLIT_NEXT, SPLIT_CONTIGUOUS };
enum { DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP };

struct norm_step {
	int kind;
	char *from, *to;
	size_t from_len, to_len;
};

struct split_step {
	char *pat;
	size_t pat_len;
	int behavior;
};

struct dec_step {
	int kind;
	char *from, *to;
	size_t from_len, to_len;
	char *strip;		/* UTF-8 of the stripped character */
	size_t strip_len, start, stop;
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

	struct norm_step *norm;
	size_t n_norm;
	struct split_step *split;
	size_t n_split;
	struct dec_step *dec;
	size_t n_dec;
};

/* ---- small helpers --------------------------------------------------------------------- */

size_t pccx_tok_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c;

	if (!n)
		return 0;
	c = p[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return n >= 3 && p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return n >= 4 && p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 &&
		       (p[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

static bool utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t k;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		k = pccx_tok_utf8_len(p + i, n - i);
		if (!k) {
			if (bad)
				*bad = i;
			return false;
		}
		i += k;
	}
	return true;
}

static inline size_t cp_len(unsigned char c)
{
	return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

static uint32_t decode_cp(const unsigned char *p, size_t *len)
{
	size_t n = cp_len(p[0]);

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

static uint64_t hash_str(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	return h ^ (h >> 32);
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint32_t table_size(size_t n)
{
	uint32_t cap = 16;

	while (cap < 2 * n)
		cap <<= 1;
	return cap;
}

/*
 * Zeroed allocation for the large random-access tables: 2 MiB aligned and marked for
 * transparent huge pages, which removes most TLB misses of the hash lookups.
 */
static void *table_alloc(size_t size, int fill)
{
	void *p = NULL;

	if (size >= ((size_t)2 << 20)) {
		size = (size + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
		if (posix_memalign(&p, (size_t)2 << 20, size))
			return NULL;
#ifdef MADV_HUGEPAGE
		madvise(p, size, MADV_HUGEPAGE);
#endif
	} else {
		p = malloc(size ? size : 1);
		if (!p)
			return NULL;
	}
	memset(p, fill, size);
	return p;
}

/* Growable vectors. */
struct ivec {
	int32_t *v;
	size_t n, cap;
};

static int ivec_push(struct ivec *iv, int32_t x)
{
	if (iv->n == iv->cap) {
		size_t cap = iv->cap ? iv->cap * 2 : 256;
		int32_t *nv = realloc(iv->v, cap * sizeof(*nv));

		if (!nv)
			return -1;
		iv->v = nv;
		iv->cap = cap;
	}
	iv->v[iv->n++] = x;
	return 0;
}

struct sbuf {
	char *p;
	size_t n, cap;
};

static int sbuf_reserve(struct sbuf *b, size_t extra)
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

static int sbuf_add(struct sbuf *b, const void *s, size_t n)
{
	if (sbuf_reserve(b, n))
		return -1;
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

static int sbuf_adds(struct sbuf *b, const char *s)
{
	return sbuf_add(b, s, strlen(s));
}

static char *memdup0(const void *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		if (n)
			memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* ---- lookup tables ----------------------------------------------------------------------- */

static inline uint64_t prefix8(const char *s, size_t n)
{
	uint64_t p = 0;

	memcpy(&p, s, n < 8 ? n : 8);
	return p;
}

static int32_t find_h(const pccx_tokenizer *tk, const char *s, size_t n, uint64_t h)
{
	uint64_t pre = prefix8(s, n);
	uint16_t tag = (uint16_t)(h >> 48), len16 = n > 0xffff ? 0xffff : (uint16_t)n;
	uint32_t slot;

	for (slot = (uint32_t)h & tk->vmask;; slot = (slot + 1) & tk->vmask) {
		const struct vent *e = &tk->vtab[slot];

		if (!e->id1)
			return -1;
		if (e->tag != tag || e->len != len16 || e->pre != pre)
			continue;
		if (n <= 8 || (tk->len[e->id1 - 1] == n &&
			       !memcmp(tk->blob + tk->off[e->id1 - 1] + 8, s + 8, n - 8)))
			return (int32_t)(e->id1 - 1);
	}
}

int32_t pccx_tokenizer_find(const pccx_tokenizer *tk, const char *s, size_t n)
{
	if (!tk || !tk->vtab || (!s && n))
		return -1;
	return find_h(tk, s, n, hash_str(s, n));
}

/* One merge to resolve: its two pieces. */
struct mreq {
	const char *l, *r;
	size_t ll, rl;
};

#define MBATCH 64

/*
 * Resolve a batch of merges (ranks first_rank...) to ids. The hash slots of all pieces are
 * prefetched before the lookups so their cache misses overlap. On failure *fail is the index
 * in the batch and *what 0 (left piece), 1 (right piece) or 2 (merged piece).
 */
static int resolve_merges(pccx_tokenizer *tk, const struct mreq *rq, size_t n,
			  uint32_t first_rank, struct sbuf *cat, size_t *fail, int *what)
{
	uint64_t h[3 * MBATCH];
	size_t coff[MBATCH], i;

	cat->n = 0;
	for (i = 0; i < n; i++) {
		coff[i] = cat->n;
		if (sbuf_add(cat, rq[i].l, rq[i].ll) || sbuf_add(cat, rq[i].r, rq[i].rl))
			return PCCX_ERR_NOMEM;
	}
	for (i = 0; i < n; i++) {
		int k;

		h[3 * i] = hash_str(rq[i].l, rq[i].ll);
		h[3 * i + 1] = hash_str(rq[i].r, rq[i].rl);
		h[3 * i + 2] = hash_str(cat->p + coff[i], rq[i].ll + rq[i].rl);
		for (k = 0; k < 3; k++)
			__builtin_prefetch(&tk->vtab[(uint32_t)h[3 * i + k] & tk->vmask]);
	}
	for (i = 0; i < n; i++) {
		int32_t l = find_h(tk, rq[i].l, rq[i].ll, h[3 * i]);
		int32_t r = find_h(tk, rq[i].r, rq[i].rl, h[3 * i + 1]);
		int32_t res = find_h(tk, cat->p + coff[i], rq[i].ll + rq[i].rl, h[3 * i + 2]);

		if (l < 0 || r < 0 || res < 0) {
			*fail = i;
			*what = l < 0 ? 0 : r < 0 ? 1 : 2;
			return PCCX_ERR_FORMAT;
		}
		tk->m_left[first_rank + i] = l;
		tk->m_right[first_rank + i] = r;
		tk->m_result[first_rank + i] = res;
	}
	return 0;
}

/* Index every piece; on duplicates the lowest id wins. Empty pieces are not indexed. */
static int build_vocab_index(pccx_tokenizer *tk)
{
	uint32_t cap = table_size(tk->n), i;

	tk->vtab = table_alloc((size_t)cap * sizeof(*tk->vtab), 0);
	if (!tk->vtab)
		return -1;
	tk->vmask = cap - 1;
	for (i = 0; i < tk->n; i++) {
		const char *s = tk->blob + tk->off[i];
		uint32_t slot, n = tk->len[i];
		uint64_t h;

		if (!n || pccx_tokenizer_find(tk, s, n) >= 0)
			continue;
		h = hash_str(s, n);
		for (slot = (uint32_t)h & tk->vmask; tk->vtab[slot].id1;
		     slot = (slot + 1) & tk->vmask)
			;
		tk->vtab[slot].id1 = i + 1;
		tk->vtab[slot].len = n > 0xffff ? 0xffff : (uint16_t)n;
		tk->vtab[slot].tag = (uint16_t)(h >> 48);
		tk->vtab[slot].pre = prefix8(s, n);
	}
	for (i = 0; i < 128; i++) {
		char c = (char)i;

		tk->ascii[i] = pccx_tokenizer_find(tk, &c, 1);
	}
	return 0;
}

static void build_byte_ids(pccx_tokenizer *tk, bool require_type)
{
	int i;

	for (i = 0; i < 256; i++) {
		char name[8];
		int32_t id;

		snprintf(name, sizeof(name), "<0x%02X>", i);
		id = pccx_tokenizer_find(tk, name, 6);
		if (id >= 0 && require_type && tk->type[id] != PCCX_TOKEN_BYTE)
			id = -1;
		tk->byte_id[i] = id;
	}
}

static const struct ment *merge_lookup(const pccx_tokenizer *tk, int32_t l, int32_t r)
{
	uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
	uint32_t slot;

	for (slot = (uint32_t)hash_u64(key) & tk->mmask;; slot = (slot + 1) & tk->mmask) {
		const struct ment *e = &tk->mtab[slot];

		if (e->key == key)
			return e;
		if (e->key == UINT64_MAX)
			return NULL;
	}
}

/* Index merges by pair; a pair listed twice keeps its later rank (as the reference does). */
static int build_merge_index(pccx_tokenizer *tk)
{
	uint32_t cap = table_size(tk->n_merges), r;

	tk->mtab = table_alloc((size_t)cap * sizeof(*tk->mtab), 0xff);
	if (!tk->mtab)
		return -1;
	tk->mmask = cap - 1;
	for (r = 0; r < tk->n_merges; r++) {
		uint64_t key = ((uint64_t)(uint32_t)tk->m_left[r] << 32) | (uint32_t)tk->m_right[r];
		uint32_t slot;

		for (slot = (uint32_t)hash_u64(key) & tk->mmask;
		     tk->mtab[slot].key != UINT64_MAX && tk->mtab[slot].key != key;
		     slot = (slot + 1) & tk->mmask)
			;
		tk->mtab[slot].key = key;
		tk->mtab[slot].rank = r;
		tk->mtab[slot].result = tk->m_result[r];
	}
	return 0;
}

/* Code point -> id of the single-character pieces, so BPE starts without string hashing. */
static int build_cp_index(pccx_tokenizer *tk)
{
	size_t count = 0, i;
	uint32_t cap;

	for (i = 0; i < tk->n; i++)
		if (tk->len[i] && cp_len((unsigned char)tk->blob[tk->off[i]]) == tk->len[i])
			count++;
	cap = table_size(count);
	tk->cpent = table_alloc((size_t)cap * sizeof(*tk->cpent), 0);
	if (!tk->cpent)
		return -1;
	tk->cpmask = cap - 1;
	for (i = 0; i < tk->n; i++) {
		const unsigned char *s = (const unsigned char *)tk->blob + tk->off[i];
		size_t k;
		uint32_t cp, slot;

		if (!tk->len[i] || cp_len(s[0]) != tk->len[i] ||
		    pccx_tokenizer_find(tk, (const char *)s, tk->len[i]) != (int32_t)i)
			continue;
		cp = decode_cp(s, &k);
		for (slot = (uint32_t)hash_u64(cp) & tk->cpmask; tk->cpent[slot];
		     slot = (slot + 1) & tk->cpmask)
			;
		tk->cpent[slot] = ((uint64_t)cp << 32) | (i + 1);
	}
	return 0;
}

static int32_t cp_lookup(const pccx_tokenizer *tk, uint32_t cp)
{
	uint32_t slot;

	for (slot = (uint32_t)hash_u64(cp) & tk->cpmask;; slot = (slot + 1) & tk->cpmask) {
		uint64_t e = tk->cpent[slot];

		if (!e)
			return -1;
		if ((uint32_t)(e >> 32) == cp)
			return (int32_t)(uint32_t)e - 1;
	}
}

static uint32_t trie_step(const pccx_tokenizer *tk, uint32_t node, unsigned char c)
{
	uint64_t key = ((uint64_t)node << 8) | c;
	uint32_t slot;

	for (slot = (uint32_t)hash_u64(key) & tk->tmask;; slot = (slot + 1) & tk->tmask) {
		if (tk->tkey[slot] == UINT64_MAX)
			return NONE;
		if (tk->tkey[slot] == key)
			return tk->tchild[slot];
	}
}

/* Byte trie over the pieces flagged TKF_ADDED. */
static int build_added_trie(pccx_tokenizer *tk)
{
	size_t total = 1, i;
	uint32_t cap;

	for (i = 0; i < tk->n; i++)
		if ((tk->flags[i] & TKF_ADDED) && tk->len[i])
			total += tk->len[i];
	cap = table_size(total);
	tk->trie_tok = malloc(total * sizeof(*tk->trie_tok));
	tk->tkey = malloc((size_t)cap * sizeof(*tk->tkey));
	tk->tchild = malloc((size_t)cap * sizeof(*tk->tchild));
	if (!tk->trie_tok || !tk->tkey || !tk->tchild)
		return -1;
	memset(tk->tkey, 0xff, (size_t)cap * sizeof(*tk->tkey));
	tk->tmask = cap - 1;
	tk->trie_n = 1;
	tk->trie_tok[0] = -1;
	memset(tk->first_byte, 0, sizeof(tk->first_byte));
	tk->n_added = 0;
	for (i = 0; i < tk->n; i++) {
		const unsigned char *s = (const unsigned char *)tk->blob + tk->off[i];
		uint32_t node = 0, k;

		if (!(tk->flags[i] & TKF_ADDED) || !tk->len[i])
			continue;
		tk->n_added++;
		tk->first_byte[s[0]] = 1;
		for (k = 0; k < tk->len[i]; k++) {
			uint32_t next = trie_step(tk, node, s[k]);

			if (next == NONE) {
				uint64_t key = ((uint64_t)node << 8) | s[k];
				uint32_t slot;

				next = tk->trie_n++;
				tk->trie_tok[next] = -1;
				for (slot = (uint32_t)hash_u64(key) & tk->tmask;
				     tk->tkey[slot] != UINT64_MAX; slot = (slot + 1) & tk->tmask)
					;
				tk->tkey[slot] = key;
				tk->tchild[slot] = next;
			}
			node = next;
		}
		/* Same text twice: the first id is kept. */
		if (tk->trie_tok[node] < 0)
			tk->trie_tok[node] = (int32_t)i;
	}
	return 0;
}

/* Longest added token starting at s[0..n); returns its id and length, or -1. */
static int32_t match_added(const pccx_tokenizer *tk, const unsigned char *s, size_t n,
			   size_t *mlen)
{
	uint32_t node = 0;
	int32_t best = -1;
	size_t k;

	for (k = 0; k < n; k++) {
		node = trie_step(tk, node, s[k]);
		if (node == NONE)
			break;
		if (tk->trie_tok[node] >= 0) {
			best = tk->trie_tok[node];
			*mlen = k + 1;
		}
	}
	return best;
}

void pccx_tokenizer_free(pccx_tokenizer *tk)
{
	size_t i;

	if (!tk)
		return;
	free(tk->name);
	free(tk->blob);
	free(tk->off);
	free(tk->len);
	free(tk->type);
	free(tk->flags);
	free(tk->score);
	free(tk->vtab);
	free(tk->m_left);
	free(tk->m_right);
	free(tk->m_result);
	free(tk->mtab);
	free(tk->cpent);
	free(tk->trie_tok);
	free(tk->tkey);
	free(tk->tchild);
	for (i = 0; i < tk->n_norm; i++) {
		free(tk->norm[i].from);
		free(tk->norm[i].to);
	}
	free(tk->norm);
	for (i = 0; i < tk->n_split; i++)
		free(tk->split[i].pat);
	free(tk->split);
	for (i = 0; i < tk->n_dec; i++) {
		free(tk->dec[i].from);
		free(tk->dec[i].to);
		free(tk->dec[i].strip);
	}
	free(tk->dec);
	free(tk);
}

static pccx_tokenizer *tk_alloc(const char *name, uint32_t n)
{
	pccx_tokenizer *tk = calloc(1, sizeof(*tk));

	if (!tk)
		return NULL;
	tk->name = strdup(name ? name : "<tokenizer>");
	tk->n = n;
	tk->off = calloc(n, sizeof(*tk->off));
	tk->len = calloc(n, sizeof(*tk->len));
	tk->type = calloc(n, sizeof(*tk->type));
	tk->flags = calloc(n, sizeof(*tk->flags));
	tk->bos = tk->eos = tk->unk = tk->pad = -1;
	if (!tk->name || !tk->off || !tk->len || !tk->type || !tk->flags) {
		pccx_tokenizer_free(tk);
		return NULL;
	}
	return tk;
}

static int add_dec(pccx_tokenizer *tk, int kind, const char *from, size_t from_len,
		   const char *to, size_t to_len)
{
	struct dec_step *nd = realloc(tk->dec, (tk->n_dec + 1) * sizeof(*nd));
	struct dec_step *s;

	if (!nd)
		return -1;
	tk->dec = nd;
	s = &tk->dec[tk->n_dec];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	if (from) {
		s->from = memdup0(from, from_len);
		s->to = memdup0(to, to_len);
		if (!s->from || !s->to) {
			free(s->from);
			free(s->to);
			return -1;
		}
		s->from_len = from_len;
		s->to_len = to_len;
	}
	tk->n_dec++;
	return 0;
}

static int add_norm(pccx_tokenizer *tk, int kind, const char *from, size_t from_len,
		    const char *to, size_t to_len)
{
	struct norm_step *nn = realloc(tk->norm, (tk->n_norm + 1) * sizeof(*nn));
	struct norm_step *s;

	if (!nn)
		return -1;
	tk->norm = nn;
	s = &tk->norm[tk->n_norm];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->from = memdup0(from ? from : "", from_len);
	s->to = memdup0(to, to_len);
	if (!s->from || !s->to) {
		free(s->from);
		free(s->to);
		return -1;
	}
	s->from_len = from_len;
	s->to_len = to_len;
	tk->n_norm++;
	return 0;
}

/* ---- tokenizer.json ------------------------------------------------------------------------ */

struct jctx {
	const pccx_json_doc *doc;
	pccx_diag *d;
};

static int jfail(struct jctx *c, const pccx_json *v, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int jfail(struct jctx *c, const pccx_json *v, int status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pccx_json_fail(c->doc, v, c->d, status, "%s", msg);
}

/* pattern: {"String": "..."}; Regex patterns are not supported. */
static int json_pattern(struct jctx *c, const pccx_json *obj, const char **s, size_t *n)
{
	const pccx_json *pat;
	int rc = pccx_json_get_member(c->doc, obj, "pattern", PCCX_JSON_OBJECT, &pat, c->d);

	if (rc)
		return rc;
	if (pccx_json_get(pat, "Regex"))
		return jfail(c, pat, PCCX_ERR_UNSUPPORTED, "Regex patterns are not supported");
	rc = pccx_json_get_string(c->doc, pat, "String", s, n, c->d);
	if (rc)
		return rc;
	if (!*n)
		return jfail(c, pat, PCCX_ERR_FORMAT, "empty pattern");
	return 0;
}

static int json_normalizer(pccx_tokenizer *tk, struct jctx *c, const pccx_json *v)
{
	const char *type, *s, *to;
	size_t n, to_len, i;
	int rc;

	if (!v || pccx_json_type_of(v) == PCCX_JSON_NULL)
		return 0;
	rc = pccx_json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (!strcmp(type, "Sequence")) {
		const pccx_json *list;

		rc = pccx_json_get_member(c->doc, v, "normalizers", PCCX_JSON_ARRAY, &list, c->d);
		for (i = 0; !rc && i < pccx_json_count(list); i++)
			rc = json_normalizer(tk, c, pccx_json_at(list, i));
		return rc;
	}
	if (!strcmp(type, "Replace")) {
		rc = json_pattern(c, v, &s, &n);
		if (!rc)
			rc = pccx_json_get_string(c->doc, v, "content", &to, &to_len, c->d);
		if (rc)
			return rc;
		return add_norm(tk, NORM_REPLACE, s, n, to, to_len) ? PCCX_ERR_NOMEM : 0;
	}
	if (!strcmp(type, "Prepend")) {
		rc = pccx_json_get_string(c->doc, v, "prepend", &to, &to_len, c->d);
		if (rc)
			return rc;
		return add_norm(tk, NORM_PREPEND, NULL, 0, to, to_len) ? PCCX_ERR_NOMEM : 0;
	}
	return jfail(c, pccx_json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
		     "unsupported normalizer \"%s\" (Replace, Prepend, Sequence)", type);
}

static int json_pretokenizer(pccx_tokenizer *tk, struct jctx *c, const pccx_json *v)
{
	static const char *const names[] = {
		[SPLIT_REMOVED] = "Removed", [SPLIT_ISOLATED] = "Isolated",
		[SPLIT_PREVIOUS] = "MergedWithPrevious", [SPLIT_NEXT] = "MergedWithNext",
		[SPLIT_CONTIGUOUS] = "Contiguous",
	};
	const char *type, *beh, *s;
	struct split_step *ns;
	size_t n, i;
	bool invert = false;
	int rc, b = -1;

	if (!v || pccx_json_type_of(v) == PCCX_JSON_NULL)
		return 0;
	rc = pccx_json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (!strcmp(type, "Sequence")) {
		const pccx_json *list;

		rc = pccx_json_get_member(c->doc, v, "pretokenizers", PCCX_JSON_ARRAY, &list,
					  c->d);
		for (i = 0; !rc && i < pccx_json_count(list); i++)
			rc = json_pretokenizer(tk, c, pccx_json_at(list, i));
		return rc;
	}
	if (strcmp(type, "Split"))
		return jfail(c, pccx_json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
			     "unsupported pre-tokenizer \"%s\" (Split, Sequence)", type);
	rc = json_pattern(c, v, &s, &n);
	if (!rc)
		rc = pccx_json_get_string(c->doc, v, "behavior", &beh, NULL, c->d);
	if (!rc)
		rc = pccx_json_opt_bool(c->doc, v, "invert", &invert, c->d);
	if (rc)
		return rc;
	if (invert)
		return jfail(c, pccx_json_get(v, "invert"), PCCX_ERR_UNSUPPORTED,
			     "inverted Split is not supported");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(beh, names[i]))
			b = (int)i;
	if (b < 0)
		return jfail(c, pccx_json_get(v, "behavior"), PCCX_ERR_FORMAT,
			     "unknown split behavior \"%s\"", beh);
	ns = realloc(tk->split, (tk->n_split + 1) * sizeof(*ns));
	if (!ns)
		return PCCX_ERR_NOMEM;
	tk->split = ns;
	ns[tk->n_split].pat = memdup0(s, n);
	if (!ns[tk->n_split].pat)
		return PCCX_ERR_NOMEM;
	ns[tk->n_split].pat_len = n;
	ns[tk->n_split].behavior = b;
	tk->n_split++;
	return 0;
}

static int json_decoder(pccx_tokenizer *tk, struct jctx *c, const pccx_json *v)
{
	const char *type, *s, *to;
	size_t n, to_len, i;
	int rc;

	if (!v || pccx_json_type_of(v) == PCCX_JSON_NULL)
		return jfail(c, v, PCCX_ERR_UNSUPPORTED, "a decoder is required");
	rc = pccx_json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (!strcmp(type, "Sequence")) {
		const pccx_json *list;

		rc = pccx_json_get_member(c->doc, v, "decoders", PCCX_JSON_ARRAY, &list, c->d);
		for (i = 0; !rc && i < pccx_json_count(list); i++)
			rc = json_decoder(tk, c, pccx_json_at(list, i));
		return rc;
	}
	if (!strcmp(type, "Replace")) {
		rc = json_pattern(c, v, &s, &n);
		if (!rc)
			rc = pccx_json_get_string(c->doc, v, "content", &to, &to_len, c->d);
		if (rc)
			return rc;
		return add_dec(tk, DEC_REPLACE, s, n, to, to_len) ? PCCX_ERR_NOMEM : 0;
	}
	if (!strcmp(type, "ByteFallback"))
		return add_dec(tk, DEC_BYTE_FALLBACK, NULL, 0, NULL, 0) ? PCCX_ERR_NOMEM : 0;
	if (!strcmp(type, "Fuse"))
		return add_dec(tk, DEC_FUSE, NULL, 0, NULL, 0) ? PCCX_ERR_NOMEM : 0;
	if (!strcmp(type, "Strip")) {
		int64_t start = 0, stop = 0;
		struct dec_step *st;

		rc = pccx_json_get_string(c->doc, v, "content", &s, &n, c->d);
		if (!rc)
			rc = pccx_json_get_i64(c->doc, v, "start", 0, 1 << 20, &start, c->d);
		if (!rc)
			rc = pccx_json_get_i64(c->doc, v, "stop", 0, 1 << 20, &stop, c->d);
		if (rc)
			return rc;
		if (!n || pccx_tok_utf8_len((const unsigned char *)s, n) != n)
			return jfail(c, pccx_json_get(v, "content"), PCCX_ERR_FORMAT,
				     "Strip content must be one character");
		if (add_dec(tk, DEC_STRIP, NULL, 0, NULL, 0))
			return PCCX_ERR_NOMEM;
		st = &tk->dec[tk->n_dec - 1];
		st->strip = memdup0(s, n);
		if (!st->strip)
			return PCCX_ERR_NOMEM;
		st->strip_len = n;
		st->start = (size_t)start;
		st->stop = (size_t)stop;
		return 0;
	}
	return jfail(c, pccx_json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
		     "unsupported decoder \"%s\" (Replace, ByteFallback, Fuse, Strip, Sequence)",
		     type);
}

/* TemplateProcessing "single": optional leading special token, then sequence A. */
static int json_post(pccx_tokenizer *tk, struct jctx *c, const pccx_json *v)
{
	const pccx_json *single, *item, *sp;
	const char *type, *name;
	size_t i, count, name_len;
	int rc;

	if (!v || pccx_json_type_of(v) == PCCX_JSON_NULL)
		return 0;
	rc = pccx_json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (strcmp(type, "TemplateProcessing"))
		return jfail(c, pccx_json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
			     "unsupported post-processor \"%s\" (TemplateProcessing)", type);
	rc = pccx_json_get_member(c->doc, v, "single", PCCX_JSON_ARRAY, &single, c->d);
	if (rc)
		return rc;
	count = pccx_json_count(single);
	for (i = 0; i < count; i++) {
		item = pccx_json_at(single, i);
		if (pccx_json_get(item, "Sequence")) {
			if (i + 1 != count)
				return jfail(c, pccx_json_at(single, i + 1), PCCX_ERR_UNSUPPORTED,
					     "tokens after the sequence are not supported");
			return 0;
		}
		sp = pccx_json_get(item, "SpecialToken");
		if (!sp || i > 0)
			return jfail(c, item, PCCX_ERR_UNSUPPORTED,
				     "only one leading special token is supported");
		rc = pccx_json_get_string(c->doc, sp, "id", &name, &name_len, c->d);
		if (rc)
			return rc;
		tk->bos = pccx_tokenizer_find(tk, name, name_len);
		if (tk->bos < 0)
			return jfail(c, sp, PCCX_ERR_FORMAT, "special token \"%s\" not in vocab",
				     name);
		tk->add_bos = true;
	}
	return jfail(c, single, PCCX_ERR_UNSUPPORTED, "template has no sequence");
}

static int set_piece_copy(char **blob, size_t *blen, size_t *bcap, pccx_tokenizer *tk,
			  uint32_t id, const char *s, size_t n)
{
	if (*blen + n > *bcap) {
		size_t cap = *bcap ? *bcap : 1 << 20;
		char *nb;

		while (cap < *blen + n)
			cap *= 2;
		nb = realloc(*blob, cap);
		if (!nb)
			return -1;
		*blob = nb;
		*bcap = cap;
	}
	memcpy(*blob + *blen, s, n);
	tk->off[id] = (uint32_t)*blen;
	tk->len[id] = (uint32_t)n;
	*blen += n;
	return 0;
}

static int load_json_doc(const pccx_json_doc *doc, pccx_tokenizer **out, pccx_diag *d)
{
	struct jctx c = { doc, d };
	const pccx_json *root = pccx_json_root(doc), *model, *vocab, *merges, *added = NULL;
	const char *type, *unk = NULL;
	size_t nv, na, nm, i, blen = 0, bcap = 0, unk_len = 0, total;
	int64_t max_id = -1;
	pccx_tokenizer *tk = NULL;
	char *blob = NULL;
	struct sbuf cat = { 0 };
	bool bf = false, im = false, fu = false;
	int rc;

	rc = pccx_json_expect(doc, root, PCCX_JSON_OBJECT, d);
	if (!rc)
		rc = pccx_json_get_member(doc, root, "model", PCCX_JSON_OBJECT, &model, d);
	if (!rc)
		rc = pccx_json_get_string(doc, model, "type", &type, NULL, d);
	if (rc)
		return rc;
	if (strcmp(type, "BPE"))
		return jfail(&c, pccx_json_get(model, "type"), PCCX_ERR_UNSUPPORTED,
			     "model type \"%s\" is not supported (BPE)", type);
	rc = pccx_json_get_member(doc, model, "vocab", PCCX_JSON_OBJECT, &vocab, d);
	if (!rc)
		rc = pccx_json_get_member(doc, model, "merges", PCCX_JSON_ARRAY, &merges, d);
	if (!rc)
		rc = pccx_json_opt_string(doc, model, "unk_token", &unk, &unk_len, d);
	if (!rc)
		rc = pccx_json_opt_bool(doc, model, "byte_fallback", &bf, d);
	if (!rc)
		rc = pccx_json_opt_bool(doc, model, "ignore_merges", &im, d);
	if (!rc)
		rc = pccx_json_opt_bool(doc, model, "fuse_unk", &fu, d);
	if (rc)
		return rc;
	{
		static const char *const unsupported[] = { "dropout", "continuing_subword_prefix",
							   "end_of_word_suffix" };
		for (i = 0; i < 3; i++) {
			const pccx_json *m = pccx_json_get(model, unsupported[i]);
			size_t sl = 0;

			if (m && pccx_json_type_of(m) != PCCX_JSON_NULL &&
			    !(pccx_json_str(m, &sl) && sl == 0))
				return jfail(&c, m, PCCX_ERR_UNSUPPORTED, "not supported");
		}
	}
	added = pccx_json_get(root, "added_tokens");
	if (added && pccx_json_type_of(added) != PCCX_JSON_NULL) {
		rc = pccx_json_expect(doc, added, PCCX_JSON_ARRAY, d);
		if (rc)
			return rc;
	}
	nv = pccx_json_count(vocab);
	na = pccx_json_count(added);
	nm = pccx_json_count(merges);
	if (!nv)
		return jfail(&c, vocab, PCCX_ERR_FORMAT, "empty vocabulary");
	total = nv + na;
	if (total > PCCX_TOK_MAX_VOCAB)
		return jfail(&c, vocab, PCCX_ERR_RANGE, "%zu tokens exceed the limit of %zu",
			     total, PCCX_TOK_MAX_VOCAB);
	/* Ids must be dense enough that the id range is bounded by the number of entries. */
	for (i = 0; i < nv + na; i++) {
		const pccx_json *v = i < nv ? pccx_json_at(vocab, i) :
					      pccx_json_get(pccx_json_at(added, i - nv), "id");
		int64_t id = pccx_json_int(v);

		if (!pccx_json_is_int(v) || id < 0 || id >= (int64_t)(2 * total + 256)) {
			if (i < nv)
				return jfail(&c, v, PCCX_ERR_FORMAT,
					     "token id must be an integer in [0, %zu)",
					     2 * total + 256);
			rc = pccx_json_get_i64(doc, pccx_json_at(added, i - nv), "id", 0,
					       (int64_t)(2 * total + 255), &id, d);
			return rc ? rc : PCCX_ERR_FORMAT;
		}
		if (id > max_id)
			max_id = id;
	}
	tk = tk_alloc(pccx_json_doc_name(doc), (uint32_t)(max_id + 1));
	if (!tk)
		return pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx_json_doc_name(doc));
	tk->byte_fallback = bf;
	tk->ignore_merges = im;
	tk->fuse_unk = fu;
	tk->use_merges = true;
	for (i = 0; i < tk->n; i++)
		tk->type[i] = PCCX_TOKEN_UNUSED;
	for (i = 0; i < nv; i++) {
		const pccx_json *v = pccx_json_at(vocab, i);
		size_t kl;
		const char *k = pccx_json_key(v, &kl);
		uint32_t id = (uint32_t)pccx_json_int(v);

		if (tk->type[id] != PCCX_TOKEN_UNUSED) {
			rc = jfail(&c, v, PCCX_ERR_FORMAT, "id %u is used twice", id);
			goto fail;
		}
		if (set_piece_copy(&blob, &blen, &bcap, tk, id, k, kl))
			goto nomem;
		tk->type[id] = PCCX_TOKEN_NORMAL;
	}
	for (i = 0; i < na; i++) {
		const pccx_json *a = pccx_json_at(added, i);
		const char *content;
		size_t cl;
		bool special = false, lstrip = false, rstrip = false;
		uint32_t id = (uint32_t)pccx_json_int(pccx_json_get(a, "id"));

		rc = pccx_json_get_string(doc, a, "content", &content, &cl, d);
		if (!rc)
			rc = pccx_json_opt_bool(doc, a, "special", &special, d);
		if (!rc)
			rc = pccx_json_opt_bool(doc, a, "lstrip", &lstrip, d);
		if (!rc)
			rc = pccx_json_opt_bool(doc, a, "rstrip", &rstrip, d);
		if (rc)
			goto fail;
		if (!cl) {
			rc = jfail(&c, pccx_json_get(a, "content"), PCCX_ERR_FORMAT,
				   "empty added token");
			goto fail;
		}
		if (tk->type[id] == PCCX_TOKEN_UNUSED) {
			if (set_piece_copy(&blob, &blen, &bcap, tk, id, content, cl))
				goto nomem;
		} else if (tk->len[id] != cl || memcmp(blob + tk->off[id], content, cl)) {
			rc = jfail(&c, a, PCCX_ERR_UNSUPPORTED,
				   "added token \"%.40s\" reuses id %u of another piece",
				   content, id);
			goto fail;
		}
		tk->type[id] = special ? PCCX_TOKEN_CONTROL : PCCX_TOKEN_USER_DEFINED;
		tk->flags[id] |= TKF_ADDED | (special ? TKF_SPECIAL : 0) |
				 (lstrip ? TKF_LSTRIP : 0) | (rstrip ? TKF_RSTRIP : 0);
	}
	tk->blob = blob ? blob : malloc(1);
	blob = NULL;
	if (!tk->blob || build_vocab_index(tk))
		goto nomem;
	build_byte_ids(tk, false);
	for (i = 0; i < 256; i++)
		if (tk->byte_id[i] >= 0 && tk->type[tk->byte_id[i]] == PCCX_TOKEN_NORMAL)
			tk->type[tk->byte_id[i]] = PCCX_TOKEN_BYTE;
	if (unk && unk_len) {
		tk->unk = pccx_tokenizer_find(tk, unk, unk_len);
		if (tk->unk < 0) {
			rc = jfail(&c, pccx_json_get(model, "unk_token"), PCCX_ERR_FORMAT,
				   "unk token \"%.40s\" is not in the vocabulary", unk);
			goto fail;
		}
		tk->type[tk->unk] = PCCX_TOKEN_UNKNOWN;
	}

	/* Merges: [["a", "b"], ...] or the older ["a b", ...]. */
	tk->n_merges = (uint32_t)nm;
	tk->m_left = malloc((nm + 1) * sizeof(int32_t));
	tk->m_right = malloc((nm + 1) * sizeof(int32_t));
	tk->m_result = malloc((nm + 1) * sizeof(int32_t));
	if (!tk->m_left || !tk->m_right || !tk->m_result)
		goto nomem;
	for (i = 0; i < nm; i += MBATCH) {
		struct mreq rq[MBATCH];
		size_t k, nb = nm - i < MBATCH ? nm - i : MBATCH, failk = 0;
		int what = 0;

		for (k = 0; k < nb; k++) {
			const pccx_json *m = pccx_json_at(merges, i + k);
			const char *l, *r, *sp;
			size_t ll, rl;

			if (pccx_json_type_of(m) == PCCX_JSON_ARRAY && pccx_json_count(m) == 2 &&
			    (l = pccx_json_str(pccx_json_at(m, 0), &ll)) &&
			    (r = pccx_json_str(pccx_json_at(m, 1), &rl))) {
				/* [["left", "right"], ...] */
			} else if ((l = pccx_json_str(m, &ll)) && (sp = memchr(l, ' ', ll)) &&
				   !memchr(sp + 1, ' ', ll - (size_t)(sp - l) - 1)) {
				/* the older ["left right", ...] */
				r = sp + 1;
				rl = ll - (size_t)(r - l);
				ll = (size_t)(sp - l);
			} else {
				rc = jfail(&c, m, PCCX_ERR_FORMAT,
					   "merge must be [\"left\", \"right\"] or \"left right\"");
				goto fail;
			}
			rq[k] = (struct mreq){ l, r, ll, rl };
		}
		rc = resolve_merges(tk, rq, nb, (uint32_t)i, &cat, &failk, &what);
		if (rc == PCCX_ERR_NOMEM)
			goto nomem;
		if (rc) {
			const struct mreq *q = &rq[failk];
			const pccx_json *m = pccx_json_at(merges, i + failk);

			if (what < 2)
			{
				size_t pl = what ? q->rl : q->ll;

				rc = jfail(&c, m, PCCX_ERR_FORMAT,
					   "merge piece \"%.*s\" is not in the vocabulary",
					   (int)(pl > 40 ? 40 : pl), what ? q->r : q->l);
			}
			else
				rc = jfail(&c, m, PCCX_ERR_FORMAT,
					   "merge result \"%.*s%.*s\" is not in the vocabulary",
					   (int)(q->ll > 40 ? 40 : q->ll), q->l,
					   (int)(q->rl > 40 ? 40 : q->rl), q->r);
			goto fail;
		}
	}
	free(cat.p);
	cat.p = NULL;
	if (build_merge_index(tk) || build_added_trie(tk) || build_cp_index(tk))
		goto nomem;

	rc = json_normalizer(tk, &c, pccx_json_get(root, "normalizer"));
	if (!rc)
		rc = json_pretokenizer(tk, &c, pccx_json_get(root, "pre_tokenizer"));
	if (!rc)
		rc = json_decoder(tk, &c, pccx_json_get(root, "decoder"));
	if (!rc)
		rc = json_post(tk, &c, pccx_json_get(root, "post_processor"));
	if (rc)
		goto fail;
	if (tk->bos < 0)
		tk->bos = pccx_tokenizer_find(tk, "<bos>", 5);
	tk->eos = pccx_tokenizer_find(tk, "<eos>", 5);
	tk->pad = pccx_tokenizer_find(tk, "<pad>", 5);
	*out = tk;
	return 0;
nomem:
	rc = pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx_json_doc_name(doc));
fail:
	free(blob);
	free(cat.p);
	pccx_tokenizer_free(tk);
	return rc;
}

int pccx_tokenizer_from_json(const void *buf, size_t len, const char *name, pccx_tokenizer **out,
			     pccx_diag *d)
{
	pccx_json_doc *doc;
	int rc;

	if (!out)
		return pccx_fail(d, PCCX_ERR_INVALID, "tokenizer: no output pointer");
	*out = NULL;
	rc = pccx_json_parse(buf, len, name, NULL, &doc, d);
	if (rc)
		return rc;
	rc = load_json_doc(doc, out, d);
	pccx_json_free(doc);
	return rc;
}

int pccx_tokenizer_load_json(const char *path, pccx_tokenizer **out, pccx_diag *d)
{
	pccx_json_doc *doc;
	int rc;

	if (!out)
		return pccx_fail(d, PCCX_ERR_INVALID, "tokenizer: no output pointer");
	*out = NULL;
	rc = pccx_json_parse_file(path, NULL, &doc, d);
	if (rc)
		return rc;
	rc = load_json_doc(doc, out, d);
	pccx_json_free(doc);
	return rc;
}

/* ---- GGUF-style arrays ------------------------------------------------------------------ */

int pccx_tokenizer_from_vocab(const pccx_tokenizer_vocab *v, const char *name,
			      pccx_tokenizer **out, pccx_diag *d)
{
	pccx_tokenizer *tk;
	size_t i, total = 0, pos = 0;
	struct sbuf cat = { 0 };
	int rc;

	if (!name)
		name = "<vocab>";
	if (!out || !v)
		return pccx_fail(d, PCCX_ERR_INVALID, "%s: invalid arguments", name);
	*out = NULL;
	if (v->model && strcmp(v->model, "llama"))
		return pccx_fail(d, PCCX_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model \"%s\" is not "
				 "supported (llama)", name, v->model);
	if (!v->n_tokens || !v->tokens)
		return pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.tokens is empty", name);
	if (v->n_tokens > PCCX_TOK_MAX_VOCAB)
		return pccx_fail(d, PCCX_ERR_RANGE, "%s: %zu tokens exceed the limit of %zu", name,
				 v->n_tokens, PCCX_TOK_MAX_VOCAB);
	if (!v->scores && !(v->merges && v->n_merges))
		return pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.scores or "
				 "tokenizer.ggml.merges is required", name);
	if (v->n_merges && !v->merges)
		return pccx_fail(d, PCCX_ERR_INVALID, "%s: merges array missing", name);
	for (i = 0; i < v->n_tokens; i++) {
		size_t n;

		if (!v->tokens[i])
			return pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%zu] is "
					 "missing", name, i);
		n = v->token_lens ? v->token_lens[i] : strlen(v->tokens[i]);
		if (n > 65536)
			return pccx_fail(d, PCCX_ERR_RANGE, "%s: tokenizer.ggml.tokens[%zu] is "
					 "%zu bytes long", name, i, n);
		if (!utf8_valid(v->tokens[i], n, NULL))
			return pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%zu] is "
					 "not valid UTF-8", name, i);
		if (v->types && (v->types[i] < PCCX_TOKEN_NORMAL ||
				 v->types[i] > PCCX_TOKEN_BYTE))
			return pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.token_type[%zu] = "
					 "%d is not a token type (1..6)", name, i, v->types[i]);
		if (v->scores && isnan(v->scores[i]))
			return pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.scores[%zu] is "
					 "NaN", name, i);
		total += n;
	}
	{
		const int32_t ids[4] = { v->bos_id, v->eos_id, v->unk_id, v->pad_id };
		static const char *const keys[4] = { "bos_token_id", "eos_token_id",
						     "unknown_token_id", "padding_token_id" };

		for (i = 0; i < 4; i++)
			if (ids[i] < -1 || ids[i] >= (int64_t)v->n_tokens)
				return pccx_fail(d, PCCX_ERR_RANGE, "%s: tokenizer.ggml.%s = %d is "
						 "outside the vocabulary (%zu tokens)", name,
						 keys[i], ids[i], v->n_tokens);
	}
	tk = tk_alloc(name, (uint32_t)v->n_tokens);
	if (!tk)
		return pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	tk->blob = malloc(total + 1);
	if (!tk->blob)
		goto nomem;
	for (i = 0; i < v->n_tokens; i++) {
		size_t n = v->token_lens ? v->token_lens[i] : strlen(v->tokens[i]);

		memcpy(tk->blob + pos, v->tokens[i], n);
		tk->off[i] = (uint32_t)pos;
		tk->len[i] = (uint32_t)n;
		pos += n;
		tk->type[i] = v->types ? (uint8_t)v->types[i] : PCCX_TOKEN_NORMAL;
	}
	if (build_vocab_index(tk))
		goto nomem;
	if (!v->types) {
		build_byte_ids(tk, false);
		for (i = 0; i < 256; i++)
			if (tk->byte_id[i] >= 0)
				tk->type[tk->byte_id[i]] = PCCX_TOKEN_BYTE;
	}
	build_byte_ids(tk, true);
	tk->byte_fallback = false;
	for (i = 0; i < 256; i++)
		if (tk->byte_id[i] >= 0)
			tk->byte_fallback = true;
	for (i = 0; i < v->n_tokens; i++) {
		switch (tk->type[i]) {
		case PCCX_TOKEN_CONTROL:
		case PCCX_TOKEN_UNKNOWN:
			tk->flags[i] = TKF_ADDED | TKF_SPECIAL;
			break;
		case PCCX_TOKEN_USER_DEFINED:
			tk->flags[i] = TKF_ADDED;
			break;
		}
	}
	tk->bos = v->bos_id;
	tk->eos = v->eos_id;
	tk->unk = v->unk_id;
	tk->pad = v->pad_id;
	tk->add_bos = v->add_bos == 1 || (v->add_bos < 0 && tk->bos >= 0);
	tk->space_prefix = v->add_space_prefix == 1;
	/* SentencePiece emits one <unk> for a run of unknown characters. */
	tk->fuse_unk = true;
	if (tk->unk < 0) {
		for (i = 0; i < v->n_tokens; i++)
			if (tk->type[i] == PCCX_TOKEN_UNKNOWN) {
				tk->unk = (int32_t)i;
				break;
			}
	}
	if (v->scores) {
		tk->score = malloc(v->n_tokens * sizeof(float));
		if (!tk->score)
			goto nomem;
		memcpy(tk->score, v->scores, v->n_tokens * sizeof(float));
	}
	if (v->n_merges) {
		size_t nm = v->n_merges;

		if (nm > 4 * PCCX_TOK_MAX_VOCAB) {
			rc = pccx_fail(d, PCCX_ERR_RANGE, "%s: %zu merges exceed the limit", name,
				       nm);
			goto fail;
		}
		tk->use_merges = true;
		tk->n_merges = (uint32_t)nm;
		tk->m_left = malloc(nm * sizeof(int32_t));
		tk->m_right = malloc(nm * sizeof(int32_t));
		tk->m_result = malloc(nm * sizeof(int32_t));
		if (!tk->m_left || !tk->m_right || !tk->m_result)
			goto nomem;
		for (i = 0; i < nm; i += MBATCH) {
			struct mreq rq[MBATCH];
			size_t k, nb = nm - i < MBATCH ? nm - i : MBATCH, failk = 0;
			int what = 0;

			for (k = 0; k < nb; k++) {
				const char *m = v->merges[i + k], *sp;
				size_t ml = !m ? 0 : v->merge_lens ? v->merge_lens[i + k] :
					    strlen(m);

				sp = m ? memchr(m, ' ', ml) : NULL;
				if (!sp || sp == m || sp + 1 == m + ml) {
					rc = pccx_fail(d, PCCX_ERR_FORMAT,
						       "%s: tokenizer.ggml.merges[%zu] is not "
						       "\"left right\"", name, i + k);
					goto fail;
				}
				rq[k] = (struct mreq){ m, sp + 1, (size_t)(sp - m),
						       ml - (size_t)(sp - m) - 1 };
			}
			rc = resolve_merges(tk, rq, nb, (uint32_t)i, &cat, &failk, &what);
			if (rc == PCCX_ERR_NOMEM)
				goto nomem;
			if (rc) {
				const struct mreq *q = &rq[failk];

				rc = pccx_fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.merges[%zu] "
					       "\"%.*s %.*s\": %s is not in the vocabulary", name,
					       i + failk, (int)(q->ll > 40 ? 40 : q->ll), q->l,
					       (int)(q->rl > 40 ? 40 : q->rl), q->r,
					       what == 0 ? "left piece" :
					       what == 1 ? "right piece" : "merged piece");
				goto fail;
			}
		}
		free(cat.p);
		cat.p = NULL;
		if (build_merge_index(tk))
			goto nomem;
	}
	if (build_added_trie(tk) || build_cp_index(tk))
		goto nomem;
	/* SentencePiece: spaces are U+2581, optionally one in front of the text. */
	if (add_norm(tk, NORM_REPLACE, " ", 1, "\xe2\x96\x81", 3) ||
	    add_dec(tk, DEC_REPLACE, "\xe2\x96\x81", 3, " ", 1) ||
	    add_dec(tk, DEC_BYTE_FALLBACK, NULL, 0, NULL, 0) ||
	    add_dec(tk, DEC_FUSE, NULL, 0, NULL, 0))
		goto nomem;
	if (tk->space_prefix) {
		if (add_dec(tk, DEC_STRIP, NULL, 0, NULL, 0))
			goto nomem;
		tk->dec[tk->n_dec - 1].strip = memdup0(" ", 1);
		if (!tk->dec[tk->n_dec - 1].strip)
			goto nomem;
		tk->dec[tk->n_dec - 1].strip_len = 1;
		tk->dec[tk->n_dec - 1].start = 1;
	}
	*out = tk;
	return 0;
nomem:
	rc = pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
fail:
	free(cat.p);
	pccx_tokenizer_free(tk);
	return rc;
}

void pccx_tokenizer_vocab_free(pccx_tokenizer_vocab *v)
{
	if (!v)
		return;
	/* tokens[0] / merges[0] point at the start of one allocation each. */
	if (v->tokens)
		free((void *)v->tokens[0]);
	free((void *)v->tokens);
	free((void *)v->token_lens);
	free((void *)v->scores);
	free((void *)v->types);
	if (v->merges && v->n_merges)
		free((void *)v->merges[0]);
	free((void *)v->merges);
	free((void *)v->merge_lens);
	memset(v, 0, sizeof(*v));
}

int pccx_tokenizer_export_vocab(const pccx_tokenizer *tk, pccx_tokenizer_vocab *out,
				pccx_diag *d)
{
	size_t n, i, mtotal = 0, pos = 0;
	const char **tokens = NULL, **merges = NULL;
	uint32_t *tlen = NULL, *mlen = NULL;
	float *scores = NULL;
	int32_t *types = NULL;
	char *tblob = NULL, *mblob = NULL;

	if (!tk || !out)
		return pccx_fail(d, PCCX_ERR_INVALID, "tokenizer export: invalid arguments");
	memset(out, 0, sizeof(*out));
	n = tk->n;
	for (i = 0; i < tk->n_merges; i++) {
		const int32_t lr[2] = { tk->m_left[i], tk->m_right[i] };
		int k;

		for (k = 0; k < 2; k++)
			if (memchr(tk->blob + tk->off[lr[k]], ' ', tk->len[lr[k]]))
				return pccx_fail(d, PCCX_ERR_UNSUPPORTED, "%s: merge %zu has a "
						 "piece containing a space; \"left right\" merges "
						 "would be ambiguous", tk->name, i);
		mtotal += tk->len[lr[0]] + tk->len[lr[1]] + 2;
	}
	tokens = malloc(n * sizeof(*tokens));
	tlen = malloc(n * sizeof(*tlen));
	scores = malloc(n * sizeof(*scores));
	types = malloc(n * sizeof(*types));
	/* Pieces are NUL-terminated copies for readers that want C strings. */
	for (i = 0; i < n; i++)
		pos += tk->len[i] + 1;
	tblob = malloc(pos + 1);
	pos = 0;
	if (!tokens || !tlen || !scores || !types || !tblob)
		goto nomem;
	for (i = 0; i < n; i++) {
		memcpy(tblob + pos, tk->blob + tk->off[i], tk->len[i]);
		tblob[pos + tk->len[i]] = '\0';
		tokens[i] = tblob + pos;
		tlen[i] = tk->len[i];
		pos += tk->len[i] + 1;
		types[i] = tk->type[i];
	}
	if (tk->use_merges) {
		/* Highest score for the earliest merge: -rank of the first merge producing the
		 * token; tokens no merge produces are never merge candidates (-inf), except
		 * single characters, whose score is never consulted. */
		for (i = 0; i < n; i++) {
			size_t cl = tk->len[i] ? cp_len((unsigned char)tk->blob[tk->off[i]]) : 0;

			scores[i] = tk->len[i] && cl == tk->len[i] ? 0.0f : -INFINITY;
		}
		for (i = tk->n_merges; i-- > 0;)
			scores[tk->m_result[i]] = -(float)i;
	} else if (tk->score) {
		memcpy(scores, tk->score, n * sizeof(*scores));
	} else {
		for (i = 0; i < n; i++)
			scores[i] = 0.0f;
	}
	if (tk->n_merges) {
		merges = malloc(tk->n_merges * sizeof(*merges));
		mlen = malloc(tk->n_merges * sizeof(*mlen));
		mblob = malloc(mtotal);
		if (!merges || !mlen || !mblob)
			goto nomem;
		pos = 0;
		for (i = 0; i < tk->n_merges; i++) {
			uint32_t l = (uint32_t)tk->m_left[i], r = (uint32_t)tk->m_right[i];

			merges[i] = mblob + pos;
			memcpy(mblob + pos, tk->blob + tk->off[l], tk->len[l]);
			pos += tk->len[l];
			mblob[pos++] = ' ';
			memcpy(mblob + pos, tk->blob + tk->off[r], tk->len[r]);
			pos += tk->len[r];
			mblob[pos++] = '\0';
			mlen[i] = tk->len[l] + 1 + tk->len[r];
		}
	}
	out->model = "llama";
	out->n_tokens = n;
	out->tokens = tokens;
	out->token_lens = tlen;
	out->scores = scores;
	out->types = types;
	out->n_merges = tk->n_merges;
	out->merges = merges;
	out->merge_lens = mlen;
	out->bos_id = tk->bos;
	out->eos_id = tk->eos;
	out->unk_id = tk->unk;
	out->pad_id = tk->pad;
	out->add_bos = tk->add_bos ? 1 : 0;
	out->add_space_prefix = tk->space_prefix ? 1 : 0;
	return 0;
nomem:
	free(tokens);
	free(tlen);
	free(scores);
	free(types);
	free(tblob);
	free(merges);
	free(mlen);
	free(mblob);
	return pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory", tk->name);
}

/* ---- encode ------------------------------------------------------------------------------ */

struct heap_item {
	uint32_t key;		/* rank, or the order-inverted score */
	uint32_t left, right;
	int32_t lid, rid, res;
};

struct enc {
	const pccx_tokenizer *tk;
	struct ivec *out;
	/* symbols */
	uint32_t *start, *slen, *prev, *next;
	int32_t *id;
	uint8_t *alive;
	size_t cap;
	struct heap_item *heap;
	size_t nheap, capheap;
	struct sbuf nb[2];	/* normalization buffers */
	size_t section_start;	/* first output index of the current section */
};

static bool heap_less(const struct heap_item *a, const struct heap_item *b)
{
	return a->key < b->key || (a->key == b->key && a->left < b->left);
}

static int heap_push(struct enc *e, const struct heap_item *it)
{
	size_t i;

	if (e->nheap == e->capheap) {
		size_t cap = e->capheap ? e->capheap * 2 : 256;
		struct heap_item *nh = realloc(e->heap, cap * sizeof(*nh));

		if (!nh)
			return -1;
		e->heap = nh;
		e->capheap = cap;
	}
	i = e->nheap++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!heap_less(it, &e->heap[p]))
			break;
		e->heap[i] = e->heap[p];
		i = p;
	}
	e->heap[i] = *it;
	return 0;
}

static void heap_pop(struct enc *e, struct heap_item *top)
{
	struct heap_item last;
	size_t i = 0, n;

	*top = e->heap[0];
	last = e->heap[--e->nheap];
	n = e->nheap;
	if (!n)
		return;
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && heap_less(&e->heap[c + 1], &e->heap[c]))
			c++;
		if (!heap_less(&e->heap[c], &last))
			break;
		e->heap[i] = e->heap[c];
		i = c;
	}
	e->heap[i] = last;
}

static uint32_t score_key(float s)
{
	uint32_t b;

	memcpy(&b, &s, sizeof(b));
	b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);	/* ascending with s */
	return ~b;					/* higher score first */
}

/* Queue the pair (l, r) if it can merge. `text` is the normalized piece. */
static int try_pair(struct enc *e, const char *text, uint32_t l, uint32_t r)
{
	const pccx_tokenizer *tk = e->tk;
	struct heap_item it;

	if (l == NONE || r == NONE)
		return 0;
	if (tk->use_merges) {
		const struct ment *m;

		if (e->id[l] < 0 || e->id[r] < 0)
			return 0;
		m = merge_lookup(tk, e->id[l], e->id[r]);
		if (!m)
			return 0;
		it.key = m->rank;
		it.res = m->result;
	} else {
		int32_t res = pccx_tokenizer_find(tk, text + e->start[l], e->slen[l] + e->slen[r]);

		if (res < 0 || !isfinite(tk->score[res]) ||
		    (tk->type[res] != PCCX_TOKEN_NORMAL &&
		     tk->type[res] != PCCX_TOKEN_USER_DEFINED))
			return 0;
		it.key = score_key(tk->score[res]);
		it.res = res;
	}
	it.left = l;
	it.right = r;
	it.lid = e->id[l];
	it.rid = e->id[r];
	return heap_push(e, &it);
}

static int enc_reserve(struct enc *e, size_t n)
{
	if (n <= e->cap)
		return 0;
	free(e->start);
	free(e->slen);
	free(e->prev);
	free(e->next);
	free(e->id);
	free(e->alive);
	e->start = malloc(n * sizeof(uint32_t));
	e->slen = malloc(n * sizeof(uint32_t));
	e->prev = malloc(n * sizeof(uint32_t));
	e->next = malloc(n * sizeof(uint32_t));
	e->id = malloc(n * sizeof(int32_t));
	e->alive = malloc(n);
	e->cap = n;
	if (!e->start || !e->slen || !e->prev || !e->next || !e->id || !e->alive) {
		e->cap = 0;
		return -1;
	}
	return 0;
}

static int emit_unknown(struct enc *e, const unsigned char *s, size_t n)
{
	const pccx_tokenizer *tk = e->tk;
	size_t i;
	bool all = tk->byte_fallback;

	for (i = 0; all && i < n; i++)
		if (tk->byte_id[s[i]] < 0)
			all = false;
	if (all) {
		for (i = 0; i < n; i++)
			if (ivec_push(e->out, tk->byte_id[s[i]]))
				return PCCX_ERR_NOMEM;
		return 0;
	}
	if (tk->unk < 0)
		return PCCX_ERR_NOT_FOUND;
	/* fuse_unk: consecutive unknowns of one section become a single <unk>. */
	if (tk->fuse_unk && e->out->n > e->section_start && e->out->v[e->out->n - 1] == tk->unk)
		return 0;
	return ivec_push(e->out, tk->unk) ? PCCX_ERR_NOMEM : 0;
}

/* BPE over one pre-tokenized piece. */
static int bpe(struct enc *e, const char *text, size_t n)
{
	const pccx_tokenizer *tk = e->tk;
	const unsigned char *u = (const unsigned char *)text;
	uint32_t nsym = 0, i;
	size_t pos = 0;
	struct heap_item top;
	int rc;

	if (!n)
		return 0;
	if (tk->ignore_merges) {
		int32_t id = pccx_tokenizer_find(tk, text, n);

		if (id >= 0)
			return ivec_push(e->out, id) ? PCCX_ERR_NOMEM : 0;
	}
	if (enc_reserve(e, n))
		return PCCX_ERR_NOMEM;
	while (pos < n) {
		size_t k = cp_len(u[pos]);

		e->start[nsym] = (uint32_t)pos;
		e->slen[nsym] = (uint32_t)k;
		e->prev[nsym] = nsym ? nsym - 1 : NONE;
		e->next[nsym] = NONE;
		if (nsym)
			e->next[nsym - 1] = nsym;
		if (k == 1) {
			e->id[nsym] = tk->ascii[u[pos]];
		} else {
			size_t kk;

			e->id[nsym] = cp_lookup(tk, decode_cp(u + pos, &kk));
		}
		e->alive[nsym] = 1;
		nsym++;
		pos += k;
	}
	e->nheap = 0;
	for (i = 0; i + 1 < nsym; i++)
		if (try_pair(e, text, i, i + 1))
			return PCCX_ERR_NOMEM;
	while (e->nheap) {
		uint32_t l, r;

		heap_pop(e, &top);
		l = top.left;
		r = top.right;
		if (!e->alive[l] || !e->alive[r] || e->next[l] != r || e->id[l] != top.lid ||
		    e->id[r] != top.rid)
			continue;
		e->id[l] = top.res;
		e->slen[l] += e->slen[r];
		e->next[l] = e->next[r];
		if (e->next[r] != NONE)
			e->prev[e->next[r]] = l;
		e->alive[r] = 0;
		if (try_pair(e, text, e->prev[l], l) || try_pair(e, text, l, e->next[l]))
			return PCCX_ERR_NOMEM;
	}
	for (i = 0; i != NONE; i = e->next[i]) {
		if (e->id[i] >= 0) {
			if (ivec_push(e->out, e->id[i]))
				return PCCX_ERR_NOMEM;
		} else {
			rc = emit_unknown(e, u + e->start[i], e->slen[i]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Apply the normalizer steps; returns the normalized text (in one of e->nb). */
static int normalize(struct enc *e, const char *s, size_t n, bool prefix, const char **out,
		     size_t *out_len)
{
	const pccx_tokenizer *tk = e->tk;
	const char *cur = s;
	size_t cur_len = n, i;
	int which = 0;

	if (prefix) {
		struct sbuf *b = &e->nb[which];

		b->n = 0;
		if (sbuf_add(b, "\xe2\x96\x81", 3) || sbuf_add(b, cur, cur_len))
			return PCCX_ERR_NOMEM;
		cur = b->p;
		cur_len = b->n;
		which ^= 1;
	}
	for (i = 0; i < tk->n_norm; i++) {
		const struct norm_step *st = &tk->norm[i];
		struct sbuf *b = &e->nb[which];
		size_t k = 0;

		b->n = 0;
		if (st->kind == NORM_PREPEND) {
			if (!cur_len)
				continue;
			if (sbuf_add(b, st->to, st->to_len) || sbuf_add(b, cur, cur_len))
				return PCCX_ERR_NOMEM;
		} else if (st->from_len == 1) {
			char c = st->from[0];

			if (sbuf_reserve(b, cur_len))
				return PCCX_ERR_NOMEM;
			for (k = 0; k < cur_len; k++) {
				if (cur[k] == c) {
					if (sbuf_add(b, st->to, st->to_len))
						return PCCX_ERR_NOMEM;
				} else {
					if (b->n + 1 >= b->cap && sbuf_reserve(b, 1))
						return PCCX_ERR_NOMEM;
					b->p[b->n++] = cur[k];
				}
			}
			if (sbuf_reserve(b, 0))
				return PCCX_ERR_NOMEM;
			b->p[b->n] = '\0';
		} else {
			while (k < cur_len) {
				const char *hit = cur_len - k >= st->from_len ?
						  memmem(cur + k, cur_len - k, st->from,
							 st->from_len) : NULL;
				size_t upto = hit ? (size_t)(hit - cur) : cur_len;

				if (sbuf_add(b, cur + k, upto - k))
					return PCCX_ERR_NOMEM;
				if (!hit)
					break;
				if (sbuf_add(b, st->to, st->to_len))
					return PCCX_ERR_NOMEM;
				k = upto + st->from_len;
			}
			if (sbuf_reserve(b, 0))
				return PCCX_ERR_NOMEM;
			b->p[b->n] = '\0';
		}
		cur = b->p;
		cur_len = b->n;
		which ^= 1;
	}
	*out = cur;
	*out_len = cur_len;
	return 0;
}

struct span {
	size_t off, len;
};

/* Split spans on the literal `pat` with a Hugging Face SplitDelimiterBehavior. */
static int split_spans(const char *text, const struct split_step *st, struct span **spans,
		       size_t *n)
{
	struct span *in = *spans, *outv = NULL;
	size_t nin = *n, nout = 0, cap = 0, i;

#define PUSH(o, l)                                                                          \
	do {                                                                                \
		if (nout == cap) {                                                          \
			struct span *ns_;                                                   \
			cap = cap ? cap * 2 : 16;                                           \
			ns_ = realloc(outv, cap * sizeof(*ns_));                            \
			if (!ns_) {                                                         \
				free(outv);                                                 \
				return PCCX_ERR_NOMEM;                                      \
			}                                                                   \
			outv = ns_;                                                         \
		}                                                                           \
		outv[nout].off = (o);                                                       \
		outv[nout].len = (l);                                                       \
		nout++;                                                                     \
	} while (0)

	for (i = 0; i < nin; i++) {
		size_t s = in[i].off, end = in[i].off + in[i].len, k = s, pend_start = s;
		bool pending_delim_next = false;

		while (k < end) {
			const char *hit = end - k >= st->pat_len ?
					  memmem(text + k, end - k, st->pat, st->pat_len) : NULL;
			size_t h = hit ? (size_t)(hit - text) : end, he;

			if (!hit)
				break;
			he = h + st->pat_len;
			switch (st->behavior) {
			case SPLIT_REMOVED:
				if (h > pend_start)
					PUSH(pend_start, h - pend_start);
				pend_start = he;
				break;
			case SPLIT_ISOLATED:
				if (h > pend_start)
					PUSH(pend_start, h - pend_start);
				PUSH(h, st->pat_len);
				pend_start = he;
				break;
			case SPLIT_CONTIGUOUS:
				if (h > pend_start)
					PUSH(pend_start, h - pend_start);
				if (nout && outv[nout - 1].off + outv[nout - 1].len == h &&
				    pending_delim_next)
					outv[nout - 1].len += st->pat_len;
				else
					PUSH(h, st->pat_len);
				pending_delim_next = true;
				pend_start = he;
				k = he;
				continue;
			case SPLIT_PREVIOUS:
				PUSH(pend_start, he - pend_start);
				pend_start = he;
				break;
			case SPLIT_NEXT:
				if (h > pend_start)
					PUSH(pend_start, h - pend_start);
				pend_start = h;
				break;
			}
			pending_delim_next = false;
			k = he;
		}
		if (end > pend_start)
			PUSH(pend_start, end - pend_start);
	}
#undef PUSH
	free(in);
	*spans = outv;
	*n = nout;
	return 0;
}

static int encode_section(struct enc *e, const char *s, size_t n, bool prefix)
{
	const pccx_tokenizer *tk = e->tk;
	const char *t;
	size_t tl, i, ns = 1;
	struct span *spans;
	int rc;

	e->section_start = e->out->n;
	rc = normalize(e, s, n, prefix, &t, &tl);
	if (rc || !tl)
		return rc;
	if (!tk->n_split)
		return bpe(e, t, tl);
	spans = malloc(sizeof(*spans));
	if (!spans)
		return PCCX_ERR_NOMEM;
	spans[0].off = 0;
	spans[0].len = tl;
	for (i = 0; i < tk->n_split; i++) {
		rc = split_spans(t, &tk->split[i], &spans, &ns);
		if (rc)
			return rc;
	}
	for (i = 0; !rc && i < ns; i++)
		rc = bpe(e, t + spans[i].off, spans[i].len);
	free(spans);
	return rc;
}

/* JavaScript String.prototype.trim whitespace (the reference trims added-token neighbours). */
static bool js_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000 || c == 0xfeff;
}

static size_t trim_start_len(const char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n && js_space(decode_cp((const unsigned char *)s + i, &k)))
		i += k;
	return i;
}

static size_t trim_end_len(const char *s, size_t n)
{
	size_t end = n;

	while (end > 0) {
		size_t st = end - 1, k;

		while (st > 0 && ((unsigned char)s[st] & 0xc0) == 0x80)
			st--;
		if (!js_space(decode_cp((const unsigned char *)s + st, &k)))
			break;
		end = st;
	}
	return n - end;
}

struct piece {
	size_t off, len;
	int32_t tok;	/* added token id, or -1 for text */
};

int pccx_tokenizer_encode(const pccx_tokenizer *tk, const char *text, size_t len,
			  unsigned flags, int32_t **ids, size_t *n_ids, pccx_diag *d)
{
	struct ivec out = { 0 };
	struct enc e;
	struct piece *pcs = NULL;
	size_t npcs = 0, cappcs = 0, i, start = 0, bad;
	bool match = !(flags & PCCX_TOK_NO_SPECIAL) && tk && tk->n_added;
	int rc = 0;

	if (!tk || !ids || !n_ids || (!text && len))
		return pccx_fail(d, PCCX_ERR_INVALID, "tokenizer encode: invalid arguments");
	*ids = NULL;
	*n_ids = 0;
	if (len > PCCX_TOK_MAX_TEXT)
		return pccx_fail(d, PCCX_ERR_RANGE, "%s: text of %zu bytes exceeds the encode "
				 "limit of %zu bytes", tk->name, len, PCCX_TOK_MAX_TEXT);
	if (!utf8_valid(text, len, &bad))
		return pccx_fail(d, PCCX_ERR_INVALID, "%s: input text is not valid UTF-8 at byte "
				 "%zu (0x%02x)", tk->name, bad, (unsigned char)text[bad]);
	memset(&e, 0, sizeof(e));
	e.tk = tk;
	e.out = &out;
	if ((flags & PCCX_TOK_ADD_BOS) && tk->bos >= 0 && ivec_push(&out, tk->bos))
		goto nomem;

	/* 1. Split on added tokens (leftmost, then longest). */
	for (i = 0; i <= len; i++) {
		size_t mlen = 0;
		int32_t tok = -1;

		if (i < len && match && tk->first_byte[(unsigned char)text[i]])
			tok = match_added(tk, (const unsigned char *)text + i, len - i, &mlen);
		if (tok < 0 && i < len)
			continue;
		if (npcs + 2 > cappcs) {
			size_t cap = cappcs ? cappcs * 2 : 16;
			struct piece *np = realloc(pcs, cap * sizeof(*np));

			if (!np)
				goto nomem;
			pcs = np;
			cappcs = cap;
		}
		if (i > start)
			pcs[npcs++] = (struct piece){ start, i - start, -1 };
		if (tok < 0)
			break;
		pcs[npcs++] = (struct piece){ i, mlen, tok };
		i += mlen - 1;
		start = i + 1;
	}
	/* 2. lstrip / rstrip of the neighbours of added tokens. */
	for (i = 0; i < npcs; i++) {
		if (pcs[i].tok < 0)
			continue;
		if ((tk->flags[pcs[i].tok] & TKF_LSTRIP) && i > 0 && pcs[i - 1].tok < 0)
			pcs[i - 1].len -= trim_end_len(text + pcs[i - 1].off, pcs[i - 1].len);
		if ((tk->flags[pcs[i].tok] & TKF_RSTRIP) && i + 1 < npcs && pcs[i + 1].tok < 0) {
			size_t k = trim_start_len(text + pcs[i + 1].off, pcs[i + 1].len);

			pcs[i + 1].off += k;
			pcs[i + 1].len -= k;
		}
	}
	/* 3. Encode. */
	for (i = 0; i < npcs && !rc; i++) {
		if (pcs[i].tok >= 0) {
			if (ivec_push(&out, pcs[i].tok))
				goto nomem;
			continue;
		}
		if (!pcs[i].len)
			continue;
		rc = encode_section(&e, text + pcs[i].off, pcs[i].len,
				    tk->space_prefix && (i == 0 || pcs[i - 1].tok >= 0));
	}
	if (rc == PCCX_ERR_NOMEM)
		goto nomem;
	if (rc) {
		rc = pccx_fail(d, rc, "%s: a character is outside the vocabulary and there is no "
			       "byte fallback or unknown token", tk->name);
		goto out;
	}
	*ids = out.v ? out.v : malloc(sizeof(int32_t));
	if (!*ids)
		goto nomem;
	*n_ids = out.n;
	out.v = NULL;
	goto out;
nomem:
	rc = pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory while encoding", tk->name);
out:
	free(out.v);
	free(pcs);
	free(e.start);
	free(e.slen);
	free(e.prev);
	free(e.next);
	free(e.id);
	free(e.alive);
	free(e.heap);
	free(e.nb[0].p);
	free(e.nb[1].p);
	return rc;
}

/* ---- decode ------------------------------------------------------------------------------ */

/* A list of strings stored back to back in one buffer. */
struct slist {
	struct sbuf b;
	size_t *off, *len;
	size_t n, cap;
};

static int slist_add(struct slist *l, const char *s, size_t n)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		size_t *no = realloc(l->off, cap * sizeof(*no));

		if (!no)
			return -1;
		l->off = no;
		no = realloc(l->len, cap * sizeof(*no));
		if (!no)
			return -1;
		l->len = no;
		l->cap = cap;
	}
	l->off[l->n] = l->b.n;
	l->len[l->n] = n;
	l->n++;
	return sbuf_add(&l->b, s, n);
}

/* Append to the last string of the list. */
static int slist_append(struct slist *l, const char *s, size_t n)
{
	l->len[l->n - 1] += n;
	return sbuf_add(&l->b, s, n);
}

static void slist_free(struct slist *l)
{
	free(l->b.p);
	free(l->off);
	free(l->len);
	memset(l, 0, sizeof(*l));
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Bytes to UTF-8, each maximal invalid subsequence becoming U+FFFD (WHATWG decoder rule). */
static int add_bytes_lossy(struct sbuf *b, const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t k = pccx_tok_utf8_len(s + i, n - i);

		if (k) {
			if (sbuf_add(b, s + i, k))
				return -1;
			i += k;
			continue;
		}
		/* Skip the longest prefix that could still start a valid sequence. */
		{
			unsigned char c = s[i];
			size_t need = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
				      c >= 0xf0 && c <= 0xf4 ? 4 : 1, j = 1;
			unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
			unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;

			if (need > 1 && i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi) {
				j = 2;
				while (j < need && i + j < n && (s[i + j] & 0xc0) == 0x80)
					j++;
			}
			if (sbuf_add(b, "\xef\xbf\xbd", 3))
				return -1;
			i += j;
		}
	}
	return 0;
}

static int dec_replace(struct slist *in, struct slist *out, const struct dec_step *st)
{
	size_t i;

	for (i = 0; i < in->n; i++) {
		const char *s = in->b.p + in->off[i];
		size_t n = in->len[i], k = 0;

		if (slist_add(out, "", 0))
			return -1;
		while (k < n) {
			const char *hit = n - k >= st->from_len ?
					  memmem(s + k, n - k, st->from, st->from_len) : NULL;
			size_t upto = hit ? (size_t)(hit - s) : n;

			if (slist_append(out, s + k, upto - k))
				return -1;
			if (!hit)
				break;
			if (slist_append(out, st->to, st->to_len))
				return -1;
			k = upto + st->from_len;
		}
	}
	return 0;
}

static int dec_bytes(struct slist *in, struct slist *out)
{
	unsigned char *run = NULL;
	size_t nrun = 0, i;
	struct sbuf tmp = { 0 };
	int rc = 0;

	run = malloc(in->n + 1);
	if (!run)
		return -1;
	for (i = 0; i <= in->n && !rc; i++) {
		const char *s = i < in->n ? in->b.p + in->off[i] : NULL;
		size_t n = i < in->n ? in->len[i] : 0;
		int hi, lo;

		if (s && n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' &&
		    (hi = hexval(s[3])) >= 0 && (lo = hexval(s[4])) >= 0) {
			run[nrun++] = (unsigned char)(hi * 16 + lo);
			continue;
		}
		if (nrun) {
			tmp.n = 0;
			rc = add_bytes_lossy(&tmp, run, nrun) ||
			     slist_add(out, tmp.p ? tmp.p : "", tmp.n);
			nrun = 0;
		}
		if (s && !rc)
			rc = slist_add(out, s, n);
	}
	free(tmp.p);
	free(run);
	return rc;
}

static int dec_strip(struct slist *in, struct slist *out, const struct dec_step *st)
{
	size_t i;

	for (i = 0; i < in->n; i++) {
		const char *s = in->b.p + in->off[i];
		size_t n = in->len[i], k;

		for (k = 0; k < st->start && n >= st->strip_len &&
			    !memcmp(s, st->strip, st->strip_len); k++) {
			s += st->strip_len;
			n -= st->strip_len;
		}
		for (k = 0; k < st->stop && n >= st->strip_len &&
			    !memcmp(s + n - st->strip_len, st->strip, st->strip_len); k++)
			n -= st->strip_len;
		if (slist_add(out, s, n))
			return -1;
	}
	return 0;
}

int pccx_tokenizer_decode(const pccx_tokenizer *tk, const int32_t *ids, size_t n,
			  unsigned flags, char **text, size_t *len, pccx_diag *d)
{
	struct slist a = { 0 }, b = { 0 };
	size_t i, total = 0;
	char *res;

	if (!tk || !text || (!ids && n))
		return pccx_fail(d, PCCX_ERR_INVALID, "tokenizer decode: invalid arguments");
	*text = NULL;
	if (len)
		*len = 0;
	for (i = 0; i < n; i++) {
		int32_t id = ids[i];

		if (id < 0 || (uint32_t)id >= tk->n) {
			slist_free(&a);
			return pccx_fail(d, PCCX_ERR_RANGE, "%s: token id %d at position %zu is "
					 "outside the vocabulary (%u tokens)", tk->name, id, i,
					 tk->n);
		}
		if ((flags & PCCX_TOK_SKIP_SPECIAL) && (tk->flags[id] & TKF_SPECIAL))
			continue;
		if (slist_add(&a, tk->blob + tk->off[id], tk->len[id]))
			goto nomem;
	}
	for (i = 0; i < tk->n_dec; i++) {
		const struct dec_step *st = &tk->dec[i];
		struct slist tmp;
		int rc = 0;

		b.n = 0;
		b.b.n = 0;
		switch (st->kind) {
		case DEC_REPLACE:
			rc = dec_replace(&a, &b, st);
			break;
		case DEC_BYTE_FALLBACK:
			rc = dec_bytes(&a, &b);
			break;
		case DEC_STRIP:
			rc = dec_strip(&a, &b, st);
			break;
		case DEC_FUSE:
			rc = slist_add(&b, a.b.p ? a.b.p : "", a.b.n);
			break;
		}
		if (rc)
			goto nomem;
		tmp = a;
		a = b;
		b = tmp;
	}
	for (i = 0; i < a.n; i++)
		total += a.len[i];
	res = malloc(total + 1);
	if (!res)
		goto nomem;
	total = 0;
	for (i = 0; i < a.n; i++) {
		memcpy(res + total, a.b.p + a.off[i], a.len[i]);
		total += a.len[i];
	}
	res[total] = '\0';
	*text = res;
	if (len)
		*len = total;
	slist_free(&a);
	slist_free(&b);
	return 0;
nomem:
	slist_free(&a);
	slist_free(&b);
	return pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory while decoding", tk->name);
}

/* ---- accessors ------------------------------------------------------------------------- */

size_t pccx_tokenizer_n_vocab(const pccx_tokenizer *tk)
{
	return tk ? tk->n : 0;
}

int32_t pccx_tokenizer_bos(const pccx_tokenizer *tk)
{
	return tk ? tk->bos : -1;
}

int32_t pccx_tokenizer_eos(const pccx_tokenizer *tk)
{
	return tk ? tk->eos : -1;
}

int32_t pccx_tokenizer_pad(const pccx_tokenizer *tk)
{
	return tk ? tk->pad : -1;
}

int32_t pccx_tokenizer_unk(const pccx_tokenizer *tk)
{
	return tk ? tk->unk : -1;
}

bool pccx_tokenizer_add_bos_default(const pccx_tokenizer *tk)
{
	return tk && tk->add_bos;
}

bool pccx_tokenizer_uses_merges(const pccx_tokenizer *tk)
{
	return tk && tk->use_merges;
}

const char *pccx_tokenizer_piece(const pccx_tokenizer *tk, int32_t id, size_t *len)
{
	if (!tk || id < 0 || (uint32_t)id >= tk->n)
		return NULL;
	if (len)
		*len = tk->len[id];
	return tk->blob + tk->off[id];
}

int pccx_tokenizer_type(const pccx_tokenizer *tk, int32_t id)
{
	if (!tk || id < 0 || (uint32_t)id >= tk->n)
		return 0;
	return tk->type[id];
}

/* ---- chat template ---------------------------------------------------------------------- */

/* Python str.isspace(), which Jinja's trim filter uses. */
static bool py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202f || c == 0x205f || c == 0x3000;
}

static void py_trim(const char *s, size_t n, size_t *off, size_t *len)
{
	size_t i = 0, end = n, k;

	while (i < n && py_space(decode_cp((const unsigned char *)s + i, &k)))
		i += k;
	while (end > i) {
		size_t st = end - 1;

		while (st > i && ((unsigned char)s[st] & 0xc0) == 0x80)
			st--;
		if (!py_space(decode_cp((const unsigned char *)s + st, &k)))
			break;
		end = st;
	}
	*off = i;
	*len = end - i;
}

int pccx_chat_render_gemma(const pccx_chat_turn *turns, size_t n, bool add_generation_prompt,
			   char **out, size_t *len, pccx_diag *d)
{
	struct sbuf b = { 0 };
	const char *prefix = NULL;
	size_t i, first = 0;

	if (!out || (!turns && n))
		return pccx_fail(d, PCCX_ERR_INVALID, "chat template: invalid arguments");
	*out = NULL;
	for (i = 0; i < n; i++) {
		size_t bad;

		if (!turns[i].role || !turns[i].content)
			return pccx_fail(d, PCCX_ERR_INVALID, "chat template: turn %zu has no %s",
					 i, turns[i].role ? "content" : "role");
		if (!utf8_valid(turns[i].content, strlen(turns[i].content), &bad))
			return pccx_fail(d, PCCX_ERR_INVALID, "chat template: turn %zu content is "
					 "not valid UTF-8 at byte %zu", i, bad);
	}
	if (n && !strcmp(turns[0].role, "system")) {
		prefix = turns[0].content;
		first = 1;
	}
	for (i = first; i < n; i++) {
		bool is_user = !strcmp(turns[i].role, "user");

		if (is_user != ((i - first) % 2 == 0))
			return pccx_fail(d, PCCX_ERR_INVALID, "chat template: turn %zu (\"%s\"): "
					 "conversation roles must alternate "
					 "user/assistant/user/assistant/...", i, turns[i].role);
	}
	if (sbuf_adds(&b, "<bos>"))
		goto nomem;
	for (i = first; i < n; i++) {
		const char *role = !strcmp(turns[i].role, "assistant") ? "model" : turns[i].role;
		size_t off, tl;

		py_trim(turns[i].content, strlen(turns[i].content), &off, &tl);
		if (sbuf_adds(&b, "<start_of_turn>") || sbuf_adds(&b, role) ||
		    sbuf_adds(&b, "\n"))
			goto nomem;
		if (i == first && prefix && (sbuf_adds(&b, prefix) || sbuf_adds(&b, "\n\n")))
			goto nomem;
		if (sbuf_add(&b, turns[i].content + off, tl) || sbuf_adds(&b, "<end_of_turn>\n"))
			goto nomem;
	}
	if (add_generation_prompt && sbuf_adds(&b, "<start_of_turn>model\n"))
		goto nomem;
	*out = b.p;
	if (len)
		*len = b.n;
	return 0;
nomem:
	free(b.p);
	return pccx_fail(d, PCCX_ERR_NOMEM, "chat template: out of memory");
}
