/* SPDX-License-Identifier: MIT */
/*
 * GGUF vocabularies: a tokenizer from the arrays of the tokenizer.ggml.* keys (SentencePiece,
 * "llama"), the export of one for a GGUF writer, and the keys themselves in a GGUF file being
 * written or read. The model's own keys and tensors are host/modelfiles' business; a model
 * file carries the tokenizer beside them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tokenizer_gguf.h"
#include "tokenizer_int.h"

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
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: invalid arguments", name);
	*out = NULL;
	if (v->model && strcmp(v->model, "llama"))
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model \"%s\" is not "
				  "supported (llama)", name, v->model);
	if (!v->n_tokens || !v->tokens)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.tokens is empty", name);
	if (v->n_tokens > PCCX_TOK_MAX_VOCAB)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: %zu tokens exceed the limit of %zu", name,
				  v->n_tokens, PCCX_TOK_MAX_VOCAB);
	if (!v->scores && !(v->merges && v->n_merges))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.scores or "
				  "tokenizer.ggml.merges is required", name);
	if (v->n_merges && !v->merges)
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: merges array missing", name);
	for (i = 0; i < v->n_tokens; i++) {
		size_t n;

		if (!v->tokens[i])
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%zu] is "
					  "missing", name, i);
		n = v->token_lens ? v->token_lens[i] : strlen(v->tokens[i]);
		if (n > 65536)
			return pccx__fail(d, PCCX_ERR_RANGE, "%s: tokenizer.ggml.tokens[%zu] is "
					  "%zu bytes long", name, i, n);
		if (!pccx__tok_utf8_valid(v->tokens[i], n, NULL))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%zu] is "
					  "not valid UTF-8", name, i);
		if (v->types && (v->types[i] < PCCX_TOKEN_NORMAL ||
				 v->types[i] > PCCX_TOKEN_BYTE))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.token_type[%zu] = "
					  "%d is not a token type (1..6)", name, i, v->types[i]);
		if (v->scores && isnan(v->scores[i]))
			return pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.scores[%zu] is "
					  "NaN", name, i);
		total += n;
	}
	{
		const int32_t ids[4] = { v->bos_id, v->eos_id, v->unk_id, v->pad_id };
		static const char *const keys[4] = { "bos_token_id", "eos_token_id",
						     "unknown_token_id", "padding_token_id" };

		for (i = 0; i < 4; i++)
			if (ids[i] < -1 || ids[i] >= (int64_t)v->n_tokens)
				return pccx__fail(d, PCCX_ERR_RANGE, "%s: tokenizer.ggml.%s = %d is "
						  "outside the vocabulary (%zu tokens)", name,
						  keys[i], ids[i], v->n_tokens);
	}
	tk = pccx__tok_alloc(name, (uint32_t)v->n_tokens);
	if (!tk)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
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
	if (pccx__tok_build_vocab_index(tk))
		goto nomem;
	if (!v->types) {
		pccx__tok_build_byte_ids(tk, false);
		for (i = 0; i < 256; i++)
			if (tk->byte_id[i] >= 0)
				tk->type[tk->byte_id[i]] = PCCX_TOKEN_BYTE;
	}
	pccx__tok_build_byte_ids(tk, true);
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
			rc = pccx__fail(d, PCCX_ERR_RANGE, "%s: %zu merges exceed the limit", name,
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
					rc = pccx__fail(d, PCCX_ERR_FORMAT,
							"%s: tokenizer.ggml.merges[%zu] is not "
							"\"left right\"", name, i + k);
					goto fail;
				}
				rq[k] = (struct mreq){ m, sp + 1, (size_t)(sp - m),
						       ml - (size_t)(sp - m) - 1 };
			}
			rc = pccx__tok_resolve_merges(tk, rq, nb, (uint32_t)i, &cat, &failk, &what);
			if (rc == PCCX_ERR_NOMEM)
				goto nomem;
			if (rc) {
				const struct mreq *q = &rq[failk];

				rc = pccx__fail(d, PCCX_ERR_FORMAT, "%s: tokenizer.ggml.merges[%zu] "
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
		if (pccx__tok_build_merge_index(tk))
			goto nomem;
	}
	if (pccx__tok_build_added_trie(tk) || pccx__tok_build_cp_index(tk))
		goto nomem;
	if (pccx__tok_sentencepiece_steps(tk))
		goto nomem;
	*out = tk;
	return 0;
nomem:
	rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
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
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenizer export: invalid arguments");
	memset(out, 0, sizeof(*out));
	n = tk->n;
	for (i = 0; i < tk->n_merges; i++) {
		const int32_t lr[2] = { tk->m_left[i], tk->m_right[i] };
		int k;

		for (k = 0; k < 2; k++)
			if (memchr(tk->blob + tk->off[lr[k]], ' ', tk->len[lr[k]]))
				return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "%s: merge %zu has a "
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
			const unsigned char *p = (const unsigned char *)tk->blob + tk->off[i];
			size_t cl = tk->len[i] ? tok_cp_len(p[0]) : 0;

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
	return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", tk->name);
}

/* ---- the tokenizer.ggml.* keys ------------------------------------------------------- */

/* Strings with explicit lengths: a piece may hold any byte, even NUL. */
static int set_str_array(pccx_gguf_writer *w, const char *key, const char *const *s,
			 const uint32_t *lens, size_t n, pccx_diag *d)
{
	pccx_gguf_str *strs = calloc(n ? n : 1, sizeof(*strs));
	pccx_gguf_value v = { .type = PCCX_GGUF_ARRAY };
	size_t i;
	int rc;

	if (!strs)
		return pccx__fail(d, PCCX_ERR_NOMEM, "GGUF export: %s: out of memory", key);
	for (i = 0; i < n; i++) {
		strs[i].s = s[i];
		strs[i].len = lens ? lens[i] : strlen(s[i]);
	}
	v.v.arr.elem_type = PCCX_GGUF_STRING;
	v.v.arr.n = n;
	v.v.arr.strs = strs;
	rc = pccx_gguf_writer_set_value(w, key, &v, d);
	free(strs);
	return rc;
}

/*
 * The token arrays of v grown to n entries: ids from v->n_tokens up get the converter's padding.
 * tokens/lens/scores/types point at new arrays (one allocation each, the pieces in *blob).
 */
struct padded {
	const char **tokens;
	uint32_t *lens;
	float *scores;
	int32_t *types;
	char *blob;
};

static void padded_free(struct padded *p)
{
	free((void *)p->tokens);
	free(p->lens);
	free(p->scores);
	free(p->types);
	free(p->blob);
	memset(p, 0, sizeof(*p));
}

static int pad_vocab(const pccx_tokenizer_vocab *v, size_t n, struct padded *p, const char *name,
		     pccx_diag *d)
{
	size_t i, pos = 0, extra = n - v->n_tokens;

	memset(p, 0, sizeof(*p));
	p->tokens = malloc(n * sizeof(*p->tokens));
	p->lens = malloc(n * sizeof(*p->lens));
	p->scores = malloc(n * sizeof(*p->scores));
	p->types = malloc(n * sizeof(*p->types));
	p->blob = malloc(extra * 32 + 1);	/* "[PAD" + at most 20 digits + "]" + NUL */
	if (!p->tokens || !p->lens || !p->scores || !p->types || !p->blob) {
		padded_free(p);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", name);
	}
	for (i = 0; i < n; i++) {
		if (i < v->n_tokens) {
			p->tokens[i] = v->tokens[i];
			p->lens[i] = v->token_lens[i];
			p->scores[i] = v->scores[i];
			p->types[i] = v->types[i];
			continue;
		}
		p->tokens[i] = p->blob + pos;
		p->lens[i] = (uint32_t)snprintf(p->blob + pos, 32, PCCX_TOKENIZER_PAD_FMT, i);
		pos += p->lens[i] + 1;
		p->scores[i] = PCCX_TOKENIZER_PAD_SCORE;
		p->types[i] = PCCX_TOKEN_UNUSED;
	}
	return PCCX_OK;
}

int pccx__tokenizer_save_gguf(pccx_gguf_writer *w, const pccx_tokenizer *tk, size_t n_tokens,
			      pccx_diag *d)
{
	pccx_tokenizer_vocab v;
	struct padded p;
	size_t n;
	int rc;

	rc = pccx_tokenizer_export_vocab(tk, &v, d);
	if (rc)
		return rc;
	n = n_tokens ? n_tokens : v.n_tokens;
	if (n < v.n_tokens) {
		rc = pccx__fail(d, PCCX_ERR_INVALID, "%s: the tokenizer has %zu ids, more than the "
				"%zu rows of the model's embeddings", tk->name, v.n_tokens, n);
		pccx_tokenizer_vocab_free(&v);
		return rc;
	}
	rc = pad_vocab(&v, n, &p, tk->name, d);
	if (!rc)
		rc = pccx_gguf_writer_set_str(w, "tokenizer.ggml.model",
					      v.model ? v.model : "llama", d);
	if (!rc)
		rc = set_str_array(w, "tokenizer.ggml.tokens", p.tokens, p.lens, n, d);
	if (!rc)
		rc = pccx_gguf_writer_set_array(w, "tokenizer.ggml.scores", PCCX_GGUF_FLOAT32,
						p.scores, n, d);
	if (!rc)
		rc = pccx_gguf_writer_set_array(w, "tokenizer.ggml.token_type", PCCX_GGUF_INT32,
						p.types, n, d);
	if (!rc && v.n_merges)
		rc = set_str_array(w, "tokenizer.ggml.merges", v.merges, v.merge_lens, v.n_merges,
				   d);
	if (!rc && v.bos_id >= 0)
		rc = pccx_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v.bos_id,
					      d);
	if (!rc && v.eos_id >= 0)
		rc = pccx_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v.eos_id,
					      d);
	if (!rc && v.unk_id >= 0)
		rc = pccx_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id",
					      (uint32_t)v.unk_id, d);
	if (!rc && v.pad_id >= 0)
		rc = pccx_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id",
					      (uint32_t)v.pad_id, d);
	if (!rc && v.add_bos >= 0)
		rc = pccx_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", v.add_bos != 0,
					       d);
	if (!rc && v.add_space_prefix >= 0)
		rc = pccx_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix",
					       v.add_space_prefix != 0, d);
	padded_free(&p);
	pccx_tokenizer_vocab_free(&v);
	return rc;
}

int pccx__tokenizer_load_gguf(const pccx_gguf *g, pccx_tokenizer **tk, pccx_diag *d)
{
	pccx_tokenizer_vocab v = { 0 };
	const pccx_gguf_str *tok, *mer = NULL;
	const char **tokens = NULL, **merges = NULL;
	uint32_t *tlen = NULL, *mlen = NULL;
	uint64_t n, nm = 0, i;
	const int32_t *types = NULL;
	const float *scores = NULL;
	uint64_t n2;
	bool b;
	int rc;

	*tk = NULL;
	if (!pccx_gguf_find(g, "tokenizer.ggml.tokens"))
		return PCCX_OK;
	rc = pccx_gguf_get_str(g, "tokenizer.ggml.model", &v.model, NULL, d);
	if (!rc)
		rc = pccx_gguf_get_str_array(g, "tokenizer.ggml.tokens", &tok, &n, d);
	if (!rc && pccx_gguf_find(g, "tokenizer.ggml.scores"))
		rc = pccx_gguf_get_f32_array(g, "tokenizer.ggml.scores", &scores, &n2, d);
	if (!rc && pccx_gguf_find(g, "tokenizer.ggml.token_type"))
		rc = pccx_gguf_get_i32_array(g, "tokenizer.ggml.token_type", &types, &n2, d);
	if (!rc && pccx_gguf_find(g, "tokenizer.ggml.merges"))
		rc = pccx_gguf_get_str_array(g, "tokenizer.ggml.merges", &mer, &nm, d);
	if (rc)
		return rc;
	tokens = calloc(n + 1, sizeof(*tokens));
	tlen = calloc(n + 1, sizeof(*tlen));
	merges = calloc(nm + 1, sizeof(*merges));
	mlen = calloc(nm + 1, sizeof(*mlen));
	if (!tokens || !tlen || !merges || !mlen) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: tokenizer: out of memory",
				pccx_gguf_name(g));
		goto out;
	}
	for (i = 0; i < n; i++) {
		tokens[i] = tok[i].s;
		tlen[i] = (uint32_t)tok[i].len;
	}
	for (i = 0; i < nm; i++) {
		merges[i] = mer[i].s;
		mlen[i] = (uint32_t)mer[i].len;
	}
	v.n_tokens = n;
	v.tokens = tokens;
	v.token_lens = tlen;
	v.scores = scores;
	v.types = types;
	v.n_merges = nm;
	v.merges = merges;
	v.merge_lens = mlen;
	v.bos_id = v.eos_id = v.unk_id = v.pad_id = -1;
	v.add_bos = v.add_space_prefix = -1;
#define ID(key, field)                                                                             \
	do {                                                                                       \
		uint32_t u;                                                                        \
		if (pccx_gguf_find(g, key) && !pccx_gguf_get_u32(g, key, &u, NULL) && u < n)       \
			field = (int32_t)u;                                                        \
	} while (0)
	ID("tokenizer.ggml.bos_token_id", v.bos_id);
	ID("tokenizer.ggml.eos_token_id", v.eos_id);
	ID("tokenizer.ggml.unknown_token_id", v.unk_id);
	ID("tokenizer.ggml.padding_token_id", v.pad_id);
#undef ID
	if (pccx_gguf_find(g, "tokenizer.ggml.add_bos_token") &&
	    !pccx_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b, NULL))
		v.add_bos = b;
	if (pccx_gguf_find(g, "tokenizer.ggml.add_space_prefix") &&
	    !pccx_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b, NULL))
		v.add_space_prefix = b;
	rc = pccx_tokenizer_from_vocab(&v, pccx_gguf_name(g), tk, d);
out:
	free(tokens);
	free(tlen);
	free(merges);
	free(mlen);
	return rc;
}
