/* SPDX-License-Identifier: MIT */
/*
 * Gemma (SentencePiece-style BPE) tokenizer.
 *
 * Two ways to build one:
 *   - pccx_tokenizer_load_json(): a Hugging Face tokenizer.json with a "BPE" model (the Gemma 3
 *     file: Replace(" " -> U+2581) normalizer, no dummy prefix, merges, byte fallback, 6k added
 *     tokens matched before anything else);
 *   - pccx_tokenizer_from_vocab(): GGUF-style arrays (tokenizer.ggml.tokens / scores /
 *     token_type / merges and the special ids) as a GGUF reader finds them.
 * pccx_tokenizer_export_vocab() goes the other way so a GGUF writer can embed the real
 * vocabulary; both routes then tokenize identically (see docs/tokenizer.md).
 *
 * A tokenizer is immutable once built: encode/decode may run concurrently from several threads.
 * Ids are int32_t in [0, pccx_tokenizer_n_vocab()).
 */
#ifndef PCCX_TOKENIZER_H
#define PCCX_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* what follows is exported by libpccx.so */

typedef struct pccx_tokenizer pccx_tokenizer;

/* Token types, with the values of GGUF's tokenizer.ggml.token_type. */
enum pccx_token_type {
	PCCX_TOKEN_NORMAL = 1,
	PCCX_TOKEN_UNKNOWN = 2,
	PCCX_TOKEN_CONTROL = 3,
	PCCX_TOKEN_USER_DEFINED = 4,
	PCCX_TOKEN_UNUSED = 5,
	PCCX_TOKEN_BYTE = 6,
};

/*
 * GGUF-style vocabulary. Used as input of pccx_tokenizer_from_vocab() (arrays borrowed for the
 * duration of the call) and as output of pccx_tokenizer_export_vocab() (arrays owned, release
 * with pccx_tokenizer_vocab_free()).
 *
 * tokens[i] has token_lens[i] bytes (token_lens may be NULL on input: NUL-terminated strings).
 * scores may be NULL (merges are then required); types may be NULL (all NORMAL, except pieces
 * spelled "<0xNN>" which are BYTE). merges are "left right" strings (one space, as llama.cpp
 * writes them); when present the merge-rank algorithm is used, otherwise the score algorithm.
 * Ids that are absent are -1.
 */
typedef struct pccx_tokenizer_vocab {
	const char *model;		/* tokenizer.ggml.model; only "llama" (SentencePiece) */
	size_t n_tokens;
	const char *const *tokens;
	const uint32_t *token_lens;
	const float *scores;
	const int32_t *types;
	size_t n_merges;
	const char *const *merges;
	const uint32_t *merge_lens;
	int32_t bos_id, eos_id, unk_id, pad_id;
	int add_bos;		/* tokenizer.ggml.add_bos_token: 1, 0, -1 when absent */
	int add_space_prefix;	/* tokenizer.ggml.add_space_prefix: 1, 0, -1 (= 0) */
} pccx_tokenizer_vocab;

/* Load a tokenizer.json file; diag names the path and the offending key. */
PCCX_MUST_CHECK int pccx_tokenizer_load_json(const char *path, pccx_tokenizer **out,
					     pccx_diag *d);
/* Same from a buffer; `name` prefixes messages. */
PCCX_MUST_CHECK int pccx_tokenizer_from_json(const void *buf, size_t len, const char *name,
					     pccx_tokenizer **out, pccx_diag *d);
/* Build from GGUF-style arrays; `name` (e.g. the GGUF path) prefixes messages. */
PCCX_MUST_CHECK int pccx_tokenizer_from_vocab(const pccx_tokenizer_vocab *v, const char *name,
					      pccx_tokenizer **out, pccx_diag *d);
void pccx_tokenizer_free(pccx_tokenizer *tk);

/*
 * Export the vocabulary for a GGUF writer: tokens, types, merges (always, when the tokenizer
 * has them), and scores derived from the merge ranks (score = -rank of the first merge that
 * produces the token; -inf for multi-character tokens no merge produces) so that even a reader
 * that ignores the merges tokenizes identically with the score algorithm.
 * Fails with PCCX_ERR_UNSUPPORTED when a merge piece contains a space (the "left right" form
 * would be ambiguous).
 */
PCCX_MUST_CHECK int pccx_tokenizer_export_vocab(const pccx_tokenizer *tk,
						pccx_tokenizer_vocab *out, pccx_diag *d);
void pccx_tokenizer_vocab_free(pccx_tokenizer_vocab *v);

/* Encode flags. */
#define PCCX_TOK_ADD_BOS	0x1u	/* prepend the BOS id (when the vocabulary has one) */
/* Do not match added/special token text: "<bos>" in the input is plain text. */
#define PCCX_TOK_NO_SPECIAL	0x2u

/*
 * Encode UTF-8 text (`len` bytes, need not be NUL-terminated) into ids: added and special
 * tokens are matched first (leftmost, longest), then each remaining section is normalized,
 * pre-tokenized and BPE-merged, with byte fallback for characters outside the vocabulary.
 * *ids is malloc'ed (free() it); *n_ids is its length. Invalid UTF-8 is refused
 * (PCCX_ERR_INVALID, the diag gives the byte offset).
 */
PCCX_MUST_CHECK int pccx_tokenizer_encode(const pccx_tokenizer *tk, const char *text, size_t len,
					  unsigned flags, int32_t **ids, size_t *n_ids,
					  pccx_diag *d);

/* Decode flags. */
/* Drop special tokens (<bos>, <end_of_turn>, ...). */
#define PCCX_TOK_SKIP_SPECIAL	0x1u

/*
 * Decode ids to UTF-8: U+2581 becomes a space, runs of byte tokens <0xNN> are reassembled into
 * bytes (invalid sequences become U+FFFD), special tokens are printed as their text unless
 * PCCX_TOK_SKIP_SPECIAL. *text is malloc'ed and NUL-terminated; *len excludes the NUL.
 * An id outside the vocabulary fails with PCCX_ERR_RANGE.
 */
PCCX_MUST_CHECK int pccx_tokenizer_decode(const pccx_tokenizer *tk, const int32_t *ids, size_t n,
					  unsigned flags, char **text, size_t *len, pccx_diag *d);

size_t pccx_tokenizer_n_vocab(const pccx_tokenizer *tk);
int32_t pccx_tokenizer_bos(const pccx_tokenizer *tk);	/* -1 when absent */
int32_t pccx_tokenizer_eos(const pccx_tokenizer *tk);
int32_t pccx_tokenizer_pad(const pccx_tokenizer *tk);
int32_t pccx_tokenizer_unk(const pccx_tokenizer *tk);
/* Whether the source asks for a BOS by default (tokenizer.json post-processor, GGUF flag). */
bool pccx_tokenizer_add_bos_default(const pccx_tokenizer *tk);
/* Raw piece of an id (not NUL-terminated; *len set), NULL when out of range. */
const char *pccx_tokenizer_piece(const pccx_tokenizer *tk, int32_t id, size_t *len);
/* Token type (enum pccx_token_type) of an id, 0 when out of range. */
int pccx_tokenizer_type(const pccx_tokenizer *tk, int32_t id);
/* Id of an exact piece, -1 when absent. */
int32_t pccx_tokenizer_find(const pccx_tokenizer *tk, const char *piece, size_t len);
/* True when the merge-rank algorithm is used, false for the score algorithm. */
bool pccx_tokenizer_uses_merges(const pccx_tokenizer *tk);

/*
 * Gemma chat template. Renders turns as Gemma's tokenizer_config.json template does:
 *   "<bos>" then for each turn "<start_of_turn>" ROLE "\n" CONTENT "<end_of_turn>\n", where ROLE
 *   "assistant" is written "model" and CONTENT is trimmed of leading/trailing whitespace; a
 *   leading "system" turn is not rendered on its own: its content (untrimmed) followed by
 *   "\n\n" is prepended to the first remaining turn. Roles after the system turn must alternate
 *   user / non-user starting with user (PCCX_ERR_INVALID otherwise). With
 *   add_generation_prompt, "<start_of_turn>model\n" is appended.
 * Encode the result with pccx_tokenizer_encode(tk, s, len, 0, ...) (no extra BOS: the text
 * already starts with "<bos>"). *out is malloc'ed and NUL-terminated.
 */
typedef struct pccx_chat_turn {
	const char *role;	/* "system", "user", "assistant" or "model" */
	const char *content;	/* UTF-8, NUL-terminated */
} pccx_chat_turn;

PCCX_MUST_CHECK int pccx_chat_render_gemma(const pccx_chat_turn *turns, size_t n,
					   bool add_generation_prompt, char **out, size_t *len,
					   pccx_diag *d);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* PCCX_TOKENIZER_H */
