/* SPDX-License-Identifier: MIT */
/*
 * Decoding: the ids' pieces go through the decoder chain of the source (Gemma: Replace(U+2581
 * -> " "), ByteFallback, Fuse). Runs of <0xNN> pieces are reassembled into bytes, each maximal
 * invalid UTF-8 subsequence becoming U+FFFD.
 */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tokenizer_int.h"

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
		size_t k = pccx__tok_utf8_len(s + i, n - i);

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

/* A step that acts on each piece on its own (Replace, Strip: tokenizer_steps.c). */
static int dec_each(struct slist *in, struct slist *out, const struct tok_step *st)
{
	size_t i, start;

	for (i = 0; i < in->n; i++) {
		if (slist_add(out, "", 0))
			return -1;
		start = out->b.n;
		if (pccx__tok_step_apply(st, in->b.p + in->off[i], in->len[i], &out->b))
			return -1;
		out->len[out->n - 1] = out->b.n - start;
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
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenizer decode: invalid arguments");
	*text = NULL;
	if (len)
		*len = 0;
	for (i = 0; i < n; i++) {
		int32_t id = ids[i];

		if (id < 0 || (uint32_t)id >= tk->n) {
			slist_free(&a);
			return pccx__fail(d, PCCX_ERR_RANGE, "%s: token id %d at position %zu is "
					  "outside the vocabulary (%u tokens)", tk->name, id, i,
					  tk->n);
		}
		if ((flags & PCCX_TOK_SKIP_SPECIAL) && (tk->flags[id] & TKF_SPECIAL))
			continue;
		if (slist_add(&a, tk->blob + tk->off[id], tk->len[id]))
			goto nomem;
	}
	for (i = 0; i < tk->n_dec; i++) {
		const struct tok_step *st = &tk->dec[i];
		struct slist tmp;
		int rc = 0;

		b.n = 0;
		b.b.n = 0;
		switch (st->kind) {
		case STEP_BYTE_FALLBACK:
			rc = dec_bytes(&a, &b);
			break;
		case STEP_FUSE:
			rc = slist_add(&b, a.b.p ? a.b.p : "", a.b.n);
			break;
		default:
			rc = dec_each(&a, &b, st);
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
	return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory while decoding", tk->name);
}
