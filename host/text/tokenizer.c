/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer's structure: allocation and release, the lookup tables every source builds
 * (piece -> id, merge pair -> rank, code point -> id, the added-token trie) and the accessors.
 * Where the pieces come from is tokenizer_json.c or tokenizer_gguf.c; what is done with them,
 * tokenizer_encode.c and tokenizer_decode.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pccx/status.h"
#include "tokenizer_int.h"

/* ---- helpers ------------------------------------------------------------------------------ */

size_t pccx__tok_utf8_len(const unsigned char *p, size_t n)
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

bool pccx__tok_utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t k;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		k = pccx__tok_utf8_len(p + i, n - i);
		if (!k) {
			if (bad)
				*bad = i;
			return false;
		}
		i += k;
	}
	return true;
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

char *pccx__tok_memdup0(const void *s, size_t n)
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

/*
 * Resolve a batch of merges (ranks first_rank...) to ids. The hash slots of all pieces are
 * prefetched before the lookups so their cache misses overlap. On failure *fail is the index
 * in the batch and *what 0 (left piece), 1 (right piece) or 2 (merged piece).
 */
int pccx__tok_resolve_merges(pccx_tokenizer *tk, const struct mreq *rq, size_t n,
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
int pccx__tok_build_vocab_index(pccx_tokenizer *tk)
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

void pccx__tok_build_byte_ids(pccx_tokenizer *tk, bool require_type)
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

/* Index merges by pair; a pair listed twice keeps its later rank (as the reference does). */
int pccx__tok_build_merge_index(pccx_tokenizer *tk)
{
	uint32_t cap = table_size(tk->n_merges), r;

	tk->mtab = table_alloc((size_t)cap * sizeof(*tk->mtab), 0xff);
	if (!tk->mtab)
		return -1;
	tk->mmask = cap - 1;
	for (r = 0; r < tk->n_merges; r++) {
		uint64_t key = ((uint64_t)(uint32_t)tk->m_left[r] << 32) | (uint32_t)tk->m_right[r];
		uint32_t slot;

		for (slot = (uint32_t)tok_hash_u64(key) & tk->mmask;
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
int pccx__tok_build_cp_index(pccx_tokenizer *tk)
{
	size_t count = 0, i;
	uint32_t cap;

	for (i = 0; i < tk->n; i++)
		if (tk->len[i] && tok_cp_len((unsigned char)tk->blob[tk->off[i]]) == tk->len[i])
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

		if (!tk->len[i] || tok_cp_len(s[0]) != tk->len[i] ||
		    pccx_tokenizer_find(tk, (const char *)s, tk->len[i]) != (int32_t)i)
			continue;
		cp = tok_decode_cp(s, &k);
		for (slot = (uint32_t)tok_hash_u64(cp) & tk->cpmask; tk->cpent[slot];
		     slot = (slot + 1) & tk->cpmask)
			;
		tk->cpent[slot] = ((uint64_t)cp << 32) | (i + 1);
	}
	return 0;
}

/* Byte trie over the pieces flagged TKF_ADDED. */
int pccx__tok_build_added_trie(pccx_tokenizer *tk)
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
			uint32_t next = tok_trie_step(tk, node, s[k]);

			if (next == NONE) {
				uint64_t key = ((uint64_t)node << 8) | s[k];
				uint32_t slot;

				next = tk->trie_n++;
				tk->trie_tok[next] = -1;
				for (slot = (uint32_t)tok_hash_u64(key) & tk->tmask;
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

/* ---- lifetime ----------------------------------------------------------------------------- */

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
		free((void *)tk->norm[i].from);
		free((void *)tk->norm[i].to);
	}
	free(tk->norm);
	for (i = 0; i < tk->n_split; i++)
		free(tk->split[i].pat);
	free(tk->split);
	for (i = 0; i < tk->n_dec; i++) {
		free((void *)tk->dec[i].from);
		free((void *)tk->dec[i].to);
	}
	free(tk->dec);
	free(tk);
}

pccx_tokenizer *pccx__tok_alloc(const char *name, uint32_t n)
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
