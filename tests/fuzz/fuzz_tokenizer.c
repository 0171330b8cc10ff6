/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the tokenizer encode path: any input is either refused (invalid UTF-8)
 * or encoded; the ids must be in range and decode back to the input (the tokenizer used here
 * is lossless: byte fallback covers every byte and nothing is stripped), and the merges and
 * scores loading routes must agree with the tokenizer.json route.
 *
 * Uses the tokenizer.json named by PCCX_TOKENIZER_JSON when set (e.g. the real Gemma one),
 * otherwise a small built-in vocabulary. The first input byte selects the encode flags.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pccx_tokenizer *tk_json, *tk_merges, *tk_scores;

static char *small_json(void)
{
	static const char *const pieces[] = {
		"a", "b", "c", "ab", "bc", "abc", "aa", "\xe2\x96\x81", "\xe2\x96\x81" "a",
		"\xe2\x96\x81\xe2\x96\x81", "<", "\xc3\xa9", "\xc3\xa9" "a",
	};
	size_t cap = 1 << 16, n = 0, i;
	char *s = malloc(cap);

	if (!s)
		abort();
	n += (size_t)snprintf(s + n, cap - n, "{\"added_tokens\": ["
		"{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
		"{\"id\": 1, \"content\": \"<bos>\", \"special\": true},"
		"{\"id\": 2, \"content\": \"<start_of_turn>\", \"special\": true},"
		"{\"id\": 3, \"content\": \"<s>\", \"special\": false},"
		"{\"id\": 4, \"content\": \"<s>x\", \"special\": false}],"
		"\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"},"
		" \"content\": \"\\u2581\"},"
		"\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"},"
		" \"behavior\": \"MergedWithPrevious\", \"invert\": false},"
		"\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
		"{\"SpecialToken\": {\"id\": \"<bos>\", \"type_id\": 0}},"
		"{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]},"
		"\"decoder\": {\"type\": \"Sequence\", \"decoders\": ["
		"{\"type\": \"Replace\", \"pattern\": {\"String\": \"\\u2581\"},"
		" \"content\": \" \"},"
		"{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},"
		"\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true,"
		" \"vocab\": {\"<unk>\": 0, \"<bos>\": 1, \"<start_of_turn>\": 2, \"<s>\": 3,"
		" \"<s>x\": 4");
	for (i = 0; i < 256; i++)
		n += (size_t)snprintf(s + n, cap - n, ", \"<0x%02X>\": %zu", (unsigned)i, 5 + i);
	for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
		n += (size_t)snprintf(s + n, cap - n, ", \"%s\": %zu", pieces[i], 261 + i);
	snprintf(s + n, cap - n, "}, \"merges\": [[\"b\", \"c\"], [\"a\", \"b\"], [\"a\", \"bc\"],"
		 " [\"ab\", \"c\"], [\"\\u2581\", \"a\"], [\"a\", \"a\"],"
		 " [\"\\u2581\", \"\\u2581\"],"
		 " [\"\\u00e9\", \"a\"]]}}");
	return s;
}

static void init(void)
{
	const char *path = getenv("PCCX_TOKENIZER_JSON");
	pccx_tokenizer_vocab v;
	pccx_diag d;
	size_t nm;
	int rc;

	if (path && *path) {
		rc = pccx_tokenizer_load_json(path, &tk_json, &d);
	} else {
		char *json = small_json();

		rc = pccx_tokenizer_from_json(json, strlen(json), "fuzz.json", &tk_json, &d);
		free(json);
	}
	if (rc || pccx_tokenizer_export_vocab(tk_json, &v, &d) ||
	    pccx_tokenizer_from_vocab(&v, "fuzz-merges", &tk_merges, &d)) {
		fprintf(stderr, "fuzz_tokenizer: setup failed: %s\n", d.msg);
		abort();
	}
	nm = v.n_merges;
	v.n_merges = 0;
	if (pccx_tokenizer_from_vocab(&v, "fuzz-scores", &tk_scores, &d)) {
		fprintf(stderr, "fuzz_tokenizer: setup failed: %s\n", d.msg);
		abort();
	}
	v.n_merges = nm;
	pccx_tokenizer_vocab_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	int32_t *ids = NULL, *ids2 = NULL, *ids3 = NULL;
	size_t n = 0, n2 = 0, n3 = 0, len = size ? size - 1 : 0, i;
	unsigned flags;
	pccx_diag d;
	char *back = NULL;
	size_t blen;

	if (!tk_json)
		init();
	if (!size)
		return 0;
	flags = data[0] & (PCCX_TOK_ADD_BOS | PCCX_TOK_NO_SPECIAL);
	if (pccx_tokenizer_encode(tk_json, text, len, flags, &ids, &n, &d)) {
		if (d.status != PCCX_ERR_INVALID)
			__builtin_trap();
		return 0;
	}
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || (size_t)ids[i] >= pccx_tokenizer_n_vocab(tk_json))
			__builtin_trap();
	if (pccx_tokenizer_encode(tk_merges, text, len, flags, &ids2, &n2, &d) ||
	    pccx_tokenizer_encode(tk_scores, text, len, flags, &ids3, &n3, &d))
		__builtin_trap();
	if (n2 != n || (n && memcmp(ids, ids2, n * sizeof(*ids))))
		__builtin_trap();
	/* The score route is exact for vocabularies whose merges come from SentencePiece
	 * (checked on the corpus); the small built-in one is such a vocabulary. */
	if (n3 != n || (n && memcmp(ids, ids3, n * sizeof(*ids))))
		__builtin_trap();
	if (pccx_tokenizer_decode(tk_json, ids, n, 0, &back, &blen, &d))
		__builtin_trap();
	/* Lossless unless the input spells U+2581 (decoded as a space) or special-token text
	 * that was encoded literally and ... decodes to the same text anyway. */
	if (!memmem(text, len, "\xe2\x96\x81", 3)) {
		size_t skip = (flags & PCCX_TOK_ADD_BOS) ? 5 : 0;	/* "<bos>" */

		if (blen != len + skip || memcmp(back + skip, text, len))
			__builtin_trap();
	}
	free(back);
	free(ids);
	free(ids2);
	free(ids3);
	return 0;
}
