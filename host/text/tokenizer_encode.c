/* SPDX-License-Identifier: MIT */
/*
 * Encoding (tokenizer.json semantics, as the Hugging Face JS/Rust tokenizers run it):
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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tokenizer_int.h"

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

/* Longest added token starting at s[0..n); returns its id and length, or -1. */
static int32_t match_added(const pccx_tokenizer *tk, const unsigned char *s, size_t n,
			   size_t *mlen)
{
	uint32_t node = 0;
	int32_t best = -1;
	size_t k;

	for (k = 0; k < n; k++) {
		node = tok_trie_step(tk, node, s[k]);
		if (node == NONE)
			break;
		if (tk->trie_tok[node] >= 0) {
			best = tk->trie_tok[node];
			*mlen = k + 1;
		}
	}
	return best;
}

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
		m = tok_merge_lookup(tk, e->id[l], e->id[r]);
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
		size_t k = tok_cp_len(u[pos]);

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

			e->id[nsym] = tok_cp_lookup(tk, tok_decode_cp(u + pos, &kk));
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
static int normalize(struct enc *e, const char *s, size_t n, const char **out, size_t *out_len)
{
	const pccx_tokenizer *tk = e->tk;
	const char *cur = s;
	size_t cur_len = n, i;
	int which = 0;

	for (i = 0; i < tk->n_norm; i++) {
		struct sbuf *b = &e->nb[which];

		b->n = 0;
		if (pccx__tok_step_apply(&tk->norm[i], cur, cur_len, b))
			return PCCX_ERR_NOMEM;
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

static int encode_section(struct enc *e, const char *s, size_t n)
{
	const pccx_tokenizer *tk = e->tk;
	const char *t;
	size_t tl, i, ns = 1;
	struct span *spans;
	int rc;

	e->section_start = e->out->n;
	rc = normalize(e, s, n, &t, &tl);
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

	while (i < n && js_space(tok_decode_cp((const unsigned char *)s + i, &k)))
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
		if (!js_space(tok_decode_cp((const unsigned char *)s + st, &k)))
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
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenizer encode: invalid arguments");
	*ids = NULL;
	*n_ids = 0;
	if (len > PCCX_TOK_MAX_TEXT)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: text of %zu bytes exceeds the encode "
				  "limit of %zu bytes", tk->name, len, PCCX_TOK_MAX_TEXT);
	if (!pccx__tok_utf8_valid(text, len, &bad))
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: input text is not valid UTF-8 at byte "
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
		rc = encode_section(&e, text + pcs[i].off, pcs[i].len);
	}
	if (rc == PCCX_ERR_NOMEM)
		goto nomem;
	if (rc) {
		rc = pccx__fail(d, rc, "%s: a character is outside the vocabulary and there is no "
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
	rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory while encoding", tk->name);
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
