/* SPDX-License-Identifier: MIT */
/*
 * Loading a Hugging Face tokenizer.json with a BPE model (Gemma 3's): the vocabulary, the
 * added tokens, the merges, the normalizer, pre-tokenizer, decoder and post-processor. Every
 * refusal names the key path (pccx__json_fail), e.g. "tokenizer.json: normalizer.type: ...".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "json.h"
#include "tokenizer_int.h"

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
	return pccx__json_fail(c->doc, v, c->d, status, "%s", msg);
}

/* pattern: {"String": "..."}; Regex patterns are not supported. */
static int json_pattern(struct jctx *c, const pccx_json *obj, const char **s, size_t *n)
{
	const pccx_json *pat;
	int rc = pccx__json_get_member(c->doc, obj, "pattern", PCCX_JSON_OBJECT, &pat, c->d);

	if (rc)
		return rc;
	if (pccx__json_get(pat, "Regex"))
		return jfail(c, pat, PCCX_ERR_UNSUPPORTED, "Regex patterns are not supported");
	rc = pccx__json_get_string(c->doc, pat, "String", s, n, c->d);
	if (rc)
		return rc;
	if (!*n)
		return jfail(c, pat, PCCX_ERR_FORMAT, "empty pattern");
	return 0;
}

/*
 * A normalizer or a decoder (`chain`): a Sequence of steps, or one step whose kind the table
 * of tokenizer_steps.c knows; the parameters of each kind are read here.
 */
static int json_steps(pccx_tokenizer *tk, struct jctx *c, const pccx_json *v,
		      enum tok_chain chain)
{
	bool norm = chain == TOK_NORMALIZER;
	struct tok_step st = { 0 };
	const char *type;
	char names[128];
	size_t i;
	int rc, kind;

	if (!v || pccx__json_type_of(v) == PCCX_JSON_NULL)
		return norm ? 0 : jfail(c, v, PCCX_ERR_UNSUPPORTED, "a decoder is required");
	rc = pccx__json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (!strcmp(type, "Sequence")) {
		const pccx_json *list;

		rc = pccx__json_get_member(c->doc, v, norm ? "normalizers" : "decoders",
					   PCCX_JSON_ARRAY, &list, c->d);
		for (i = 0; !rc && i < pccx__json_count(list); i++)
			rc = json_steps(tk, c, pccx__json_at(list, i), chain);
		return rc;
	}
	kind = pccx__tok_step_kind(chain, type);
	if (kind < 0) {
		pccx__tok_step_names(chain, names, sizeof(names));
		return jfail(c, pccx__json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
			     "unsupported %s \"%s\" (%s)", norm ? "normalizer" : "decoder", type,
			     names);
	}
	st.kind = kind;
	switch (kind) {
	case STEP_REPLACE:
		rc = json_pattern(c, v, &st.from, &st.from_len);
		if (!rc)
			rc = pccx__json_get_string(c->doc, v, "content", &st.to, &st.to_len, c->d);
		break;
	case STEP_PREPEND:
		rc = pccx__json_get_string(c->doc, v, "prepend", &st.to, &st.to_len, c->d);
		break;
	case STEP_STRIP: {
		int64_t start = 0, stop = 0;

		rc = pccx__json_get_string(c->doc, v, "content", &st.from, &st.from_len, c->d);
		if (!rc)
			rc = pccx__json_get_i64(c->doc, v, "start", 0, 1 << 20, &start, c->d);
		if (!rc)
			rc = pccx__json_get_i64(c->doc, v, "stop", 0, 1 << 20, &stop, c->d);
		if (!rc && (!st.from_len ||
			    pccx__tok_utf8_len((const unsigned char *)st.from, st.from_len) !=
			    st.from_len))
			rc = jfail(c, pccx__json_get(v, "content"), PCCX_ERR_FORMAT,
				   "Strip content must be one character");
		st.start = (size_t)start;
		st.stop = (size_t)stop;
		break;
	}
	}
	if (rc)
		return rc;
	return pccx__tok_add_step(tk, chain, &st) ? PCCX_ERR_NOMEM : 0;
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

	if (!v || pccx__json_type_of(v) == PCCX_JSON_NULL)
		return 0;
	rc = pccx__json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (!strcmp(type, "Sequence")) {
		const pccx_json *list;

		rc = pccx__json_get_member(c->doc, v, "pretokenizers", PCCX_JSON_ARRAY, &list,
					   c->d);
		for (i = 0; !rc && i < pccx__json_count(list); i++)
			rc = json_pretokenizer(tk, c, pccx__json_at(list, i));
		return rc;
	}
	if (strcmp(type, "Split"))
		return jfail(c, pccx__json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
			     "unsupported pre-tokenizer \"%s\" (Split, Sequence)", type);
	rc = json_pattern(c, v, &s, &n);
	if (!rc)
		rc = pccx__json_get_string(c->doc, v, "behavior", &beh, NULL, c->d);
	if (!rc)
		rc = pccx__json_opt_bool(c->doc, v, "invert", &invert, c->d);
	if (rc)
		return rc;
	if (invert)
		return jfail(c, pccx__json_get(v, "invert"), PCCX_ERR_UNSUPPORTED,
			     "inverted Split is not supported");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(beh, names[i]))
			b = (int)i;
	if (b < 0)
		return jfail(c, pccx__json_get(v, "behavior"), PCCX_ERR_FORMAT,
			     "unknown split behavior \"%s\"", beh);
	ns = realloc(tk->split, (tk->n_split + 1) * sizeof(*ns));
	if (!ns)
		return PCCX_ERR_NOMEM;
	tk->split = ns;
	ns[tk->n_split].pat = pccx__tok_memdup0(s, n);
	if (!ns[tk->n_split].pat)
		return PCCX_ERR_NOMEM;
	ns[tk->n_split].pat_len = n;
	ns[tk->n_split].behavior = b;
	tk->n_split++;
	return 0;
}

/* TemplateProcessing "single": optional leading special token, then sequence A. */
static int json_post(pccx_tokenizer *tk, struct jctx *c, const pccx_json *v)
{
	const pccx_json *single, *item, *sp;
	const char *type, *name;
	size_t i, count, name_len;
	int rc;

	if (!v || pccx__json_type_of(v) == PCCX_JSON_NULL)
		return 0;
	rc = pccx__json_get_string(c->doc, v, "type", &type, NULL, c->d);
	if (rc)
		return rc;
	if (strcmp(type, "TemplateProcessing"))
		return jfail(c, pccx__json_get(v, "type"), PCCX_ERR_UNSUPPORTED,
			     "unsupported post-processor \"%s\" (TemplateProcessing)", type);
	rc = pccx__json_get_member(c->doc, v, "single", PCCX_JSON_ARRAY, &single, c->d);
	if (rc)
		return rc;
	count = pccx__json_count(single);
	for (i = 0; i < count; i++) {
		item = pccx__json_at(single, i);
		if (pccx__json_get(item, "Sequence")) {
			if (i + 1 != count)
				return jfail(c, pccx__json_at(single, i + 1), PCCX_ERR_UNSUPPORTED,
					     "tokens after the sequence are not supported");
			return 0;
		}
		sp = pccx__json_get(item, "SpecialToken");
		if (!sp || i > 0)
			return jfail(c, item, PCCX_ERR_UNSUPPORTED,
				     "only one leading special token is supported");
		rc = pccx__json_get_string(c->doc, sp, "id", &name, &name_len, c->d);
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
	const pccx_json *root = pccx__json_root(doc), *model, *vocab, *merges, *added = NULL;
	const char *type, *unk = NULL;
	size_t nv, na, nm, i, blen = 0, bcap = 0, unk_len = 0, total;
	int64_t max_id = -1;
	pccx_tokenizer *tk = NULL;
	char *blob = NULL;
	struct sbuf cat = { 0 };
	bool bf = false, im = false, fu = false;
	int rc;

	rc = pccx__json_expect(doc, root, PCCX_JSON_OBJECT, d);
	if (!rc)
		rc = pccx__json_get_member(doc, root, "model", PCCX_JSON_OBJECT, &model, d);
	if (!rc)
		rc = pccx__json_get_string(doc, model, "type", &type, NULL, d);
	if (rc)
		return rc;
	if (strcmp(type, "BPE"))
		return jfail(&c, pccx__json_get(model, "type"), PCCX_ERR_UNSUPPORTED,
			     "model type \"%s\" is not supported (BPE)", type);
	rc = pccx__json_get_member(doc, model, "vocab", PCCX_JSON_OBJECT, &vocab, d);
	if (!rc)
		rc = pccx__json_get_member(doc, model, "merges", PCCX_JSON_ARRAY, &merges, d);
	if (!rc)
		rc = pccx__json_opt_string(doc, model, "unk_token", &unk, &unk_len, d);
	if (!rc)
		rc = pccx__json_opt_bool(doc, model, "byte_fallback", &bf, d);
	if (!rc)
		rc = pccx__json_opt_bool(doc, model, "ignore_merges", &im, d);
	if (!rc)
		rc = pccx__json_opt_bool(doc, model, "fuse_unk", &fu, d);
	if (rc)
		return rc;
	{
		static const char *const unsupported[] = { "dropout", "continuing_subword_prefix",
							   "end_of_word_suffix" };
		for (i = 0; i < 3; i++) {
			const pccx_json *m = pccx__json_get(model, unsupported[i]);
			size_t sl = 0;

			if (m && pccx__json_type_of(m) != PCCX_JSON_NULL &&
			    !(pccx__json_str(m, &sl) && sl == 0))
				return jfail(&c, m, PCCX_ERR_UNSUPPORTED, "not supported");
		}
	}
	added = pccx__json_get(root, "added_tokens");
	if (added && pccx__json_type_of(added) != PCCX_JSON_NULL) {
		rc = pccx__json_expect(doc, added, PCCX_JSON_ARRAY, d);
		if (rc)
			return rc;
	}
	nv = pccx__json_count(vocab);
	na = pccx__json_count(added);
	nm = pccx__json_count(merges);
	if (!nv)
		return jfail(&c, vocab, PCCX_ERR_FORMAT, "empty vocabulary");
	total = nv + na;
	if (total > PCCX_TOK_MAX_VOCAB)
		return jfail(&c, vocab, PCCX_ERR_RANGE, "%zu tokens exceed the limit of %zu",
			     total, PCCX_TOK_MAX_VOCAB);
	/* Ids must be dense enough that the id range is bounded by the number of entries. */
	for (i = 0; i < nv + na; i++) {
		const pccx_json *v = i < nv ? pccx__json_at(vocab, i) :
					      pccx__json_get(pccx__json_at(added, i - nv), "id");
		int64_t id = pccx__json_int(v);

		if (!pccx__json_is_int(v) || id < 0 || id >= (int64_t)(2 * total + 256)) {
			if (i < nv)
				return jfail(&c, v, PCCX_ERR_FORMAT,
					     "token id must be an integer in [0, %zu)",
					     2 * total + 256);
			rc = pccx__json_get_i64(doc, pccx__json_at(added, i - nv), "id", 0,
						(int64_t)(2 * total + 255), &id, d);
			return rc ? rc : PCCX_ERR_FORMAT;
		}
		if (id > max_id)
			max_id = id;
	}
	tk = pccx__tok_alloc(pccx__json_doc_name(doc), (uint32_t)(max_id + 1));
	if (!tk)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx__json_doc_name(doc));
	tk->byte_fallback = bf;
	tk->ignore_merges = im;
	tk->fuse_unk = fu;
	tk->use_merges = true;
	for (i = 0; i < tk->n; i++)
		tk->type[i] = PCCX_TOKEN_UNUSED;
	for (i = 0; i < nv; i++) {
		const pccx_json *v = pccx__json_at(vocab, i);
		size_t kl;
		const char *k = pccx__json_key(v, &kl);
		uint32_t id = (uint32_t)pccx__json_int(v);

		if (tk->type[id] != PCCX_TOKEN_UNUSED) {
			rc = jfail(&c, v, PCCX_ERR_FORMAT, "id %u is used twice", id);
			goto fail;
		}
		if (set_piece_copy(&blob, &blen, &bcap, tk, id, k, kl))
			goto nomem;
		tk->type[id] = PCCX_TOKEN_NORMAL;
	}
	for (i = 0; i < na; i++) {
		const pccx_json *a = pccx__json_at(added, i);
		const char *content;
		size_t cl;
		bool special = false, lstrip = false, rstrip = false;
		uint32_t id = (uint32_t)pccx__json_int(pccx__json_get(a, "id"));

		rc = pccx__json_get_string(doc, a, "content", &content, &cl, d);
		if (!rc)
			rc = pccx__json_opt_bool(doc, a, "special", &special, d);
		if (!rc)
			rc = pccx__json_opt_bool(doc, a, "lstrip", &lstrip, d);
		if (!rc)
			rc = pccx__json_opt_bool(doc, a, "rstrip", &rstrip, d);
		if (rc)
			goto fail;
		if (!cl) {
			rc = jfail(&c, pccx__json_get(a, "content"), PCCX_ERR_FORMAT,
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
	if (!tk->blob || pccx__tok_build_vocab_index(tk))
		goto nomem;
	pccx__tok_build_byte_ids(tk, false);
	for (i = 0; i < 256; i++)
		if (tk->byte_id[i] >= 0 && tk->type[tk->byte_id[i]] == PCCX_TOKEN_NORMAL)
			tk->type[tk->byte_id[i]] = PCCX_TOKEN_BYTE;
	if (unk && unk_len) {
		tk->unk = pccx_tokenizer_find(tk, unk, unk_len);
		if (tk->unk < 0) {
			rc = jfail(&c, pccx__json_get(model, "unk_token"), PCCX_ERR_FORMAT,
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
			const pccx_json *m = pccx__json_at(merges, i + k);
			const char *l, *r, *sp;
			size_t ll, rl;

			if (pccx__json_type_of(m) == PCCX_JSON_ARRAY && pccx__json_count(m) == 2 &&
			    (l = pccx__json_str(pccx__json_at(m, 0), &ll)) &&
			    (r = pccx__json_str(pccx__json_at(m, 1), &rl))) {
				/* [["left", "right"], ...] */
			} else if ((l = pccx__json_str(m, &ll)) && (sp = memchr(l, ' ', ll)) &&
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
		rc = pccx__tok_resolve_merges(tk, rq, nb, (uint32_t)i, &cat, &failk, &what);
		if (rc == PCCX_ERR_NOMEM)
			goto nomem;
		if (rc) {
			const struct mreq *q = &rq[failk];
			const pccx_json *m = pccx__json_at(merges, i + failk);

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
	if (pccx__tok_build_merge_index(tk) || pccx__tok_build_added_trie(tk) ||
	    pccx__tok_build_cp_index(tk))
		goto nomem;

	rc = json_steps(tk, &c, pccx__json_get(root, "normalizer"), TOK_NORMALIZER);
	if (!rc)
		rc = json_pretokenizer(tk, &c, pccx__json_get(root, "pre_tokenizer"));
	if (!rc)
		rc = json_steps(tk, &c, pccx__json_get(root, "decoder"), TOK_DECODER);
	if (!rc)
		rc = json_post(tk, &c, pccx__json_get(root, "post_processor"));
	if (rc)
		goto fail;
	if (tk->bos < 0)
		tk->bos = pccx_tokenizer_find(tk, "<bos>", 5);
	tk->eos = pccx_tokenizer_find(tk, "<eos>", 5);
	tk->pad = pccx_tokenizer_find(tk, "<pad>", 5);
	*out = tk;
	return 0;
nomem:
	rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", pccx__json_doc_name(doc));
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
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenizer: no output pointer");
	*out = NULL;
	rc = pccx__json_parse(buf, len, name, NULL, &doc, d);
	if (rc)
		return rc;
	rc = load_json_doc(doc, out, d);
	pccx__json_free(doc);
	return rc;
}

int pccx_tokenizer_load_json(const char *path, pccx_tokenizer **out, pccx_diag *d)
{
	pccx_json_doc *doc;
	int rc;

	if (!out)
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenizer: no output pointer");
	*out = NULL;
	rc = pccx__json_parse_file(path, NULL, &doc, d);
	if (rc)
		return rc;
	rc = load_json_doc(doc, out, d);
	pccx__json_free(doc);
	return rc;
}
