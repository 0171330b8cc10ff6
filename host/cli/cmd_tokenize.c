/* SPDX-License-Identifier: MIT */
/*
 * pccx tokenize: text to Gemma token ids and back.
 *
 *   pccx tokenize --tokenizer tokenizer.json [--no-bos] [--no-special] "text"
 *   pccx tokenize --tokenizer tokenizer.json --decode [--skip-special] 2 9259 236764
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pccx/tokenizer.h"

struct tok_args {
	const char *tokenizer, *file;
	bool no_bos, decode, skip_special, no_special, timing;
	struct pccx_opt_rest args;
};

#define A(f, type) PCCX_AT(struct tok_args, f, type)
static const struct pccx_opt tok_opts[] = {
	PCCX_OPT(NULL, 0, PCCX_OPT_REST, A(args, struct pccx_opt_rest), "TEXT | ID...",
		 "the text (one argument), or with --decode the ids"),
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, A(tokenizer, const char *), "FILE",
		 "Hugging Face tokenizer.json", .flags = PCCX_OPT_REQUIRED),
	PCCX_OPT("no-bos", 0, PCCX_OPT_FLAG, A(no_bos, bool), NULL, "do not prepend <bos>"),
	PCCX_OPT("no-special", 0, PCCX_OPT_FLAG, A(no_special, bool), NULL,
		 "treat special-token text such as \"<bos>\" as plain text"),
	PCCX_OPT("decode", 0, PCCX_OPT_FLAG, A(decode, bool), NULL,
		 "arguments are ids (one per argument, or space separated)"),
	PCCX_OPT("skip-special", 0, PCCX_OPT_FLAG, A(skip_special, bool), NULL,
		 "with --decode: leave out special tokens"),
	PCCX_OPT("file", 0, PCCX_OPT_PATH, A(file, const char *), "PATH",
		 "read the text (or the ids) from PATH, '-' for stdin"),
	PCCX_OPT("time", 0, PCCX_OPT_FLAG, A(timing, bool), NULL,
		 "print load and encode/decode times to stderr"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd tok_cmd = {
	.name = "tokenize",
	.usage = "--tokenizer FILE [options] TEXT\n--tokenizer FILE --decode [options] ID...",
	.about = "Encode TEXT with the Gemma tokenizer and print the ids separated by spaces,\n"
		 "or with --decode turn ids back into text.\n",
	.opts = tok_opts,
};

static int read_all(const char *path, char **out, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t n = 0, cap = 1 << 16;
	char *buf;

	if (!f) {
		fprintf(stderr, "pccx: tokenize: %s: cannot open: %s\n", path, strerror(errno));
		return 1;
	}
	buf = malloc(cap + 1);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap)
			break;
		cap *= 2;
		{
			char *nb = realloc(buf, cap + 1);

			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
	}
	if (!buf || ferror(f)) {
		fprintf(stderr, "pccx: tokenize: %s: %s\n", path, buf ? "read error" :
			"out of memory");
		free(buf);
		if (f != stdin)
			fclose(f);
		return 1;
	}
	if (f != stdin)
		fclose(f);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Parse ids separated by spaces/newlines/commas from s into a growing array. */
static int parse_ids(const char *s, int32_t **ids, size_t *n, size_t *cap)
{
	const char *p = s;

	for (;;) {
		char *end;
		long v;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
			p++;
		if (!*p)
			return 0;
		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v < 0 || v > INT32_MAX ||
		    (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' &&
		     *end != ',')) {
			fprintf(stderr, "pccx: tokenize: '%.20s' is not a token id\n", p);
			return 2;
		}
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			int32_t *ni = realloc(*ids, nc * sizeof(*ni));

			if (!ni) {
				fprintf(stderr, "pccx: tokenize: out of memory\n");
				return 1;
			}
			*ids = ni;
			*cap = nc;
		}
		(*ids)[(*n)++] = (int32_t)v;
		p = end;
	}
}

/* Print the text of the ids in text (from --file) or in the arguments. */
static int decode(const struct tok_args *a, const pccx_tokenizer *tk, const char *text)
{
	int32_t *ids = NULL;
	size_t n_ids = 0, cap_ids = 0, len;
	pccx_diag d = { 0 };
	char *s = NULL;
	double t0;
	int i, rc = 0;

	if (text)
		rc = parse_ids(text, &ids, &n_ids, &cap_ids);
	for (i = 0; !text && i < a->args.n && !rc; i++)
		rc = parse_ids(a->args.v[i], &ids, &n_ids, &cap_ids);
	if (rc)
		goto out;
	t0 = pccx_cli_now();
	if (pccx_tokenizer_decode(tk, ids, n_ids, a->skip_special ? PCCX_TOK_SKIP_SPECIAL : 0,
				  &s, &len, &d)) {
		rc = pccx_cli_fail(d.status, &d);
		goto out;
	}
	t0 = pccx_cli_now() - t0;
	fwrite(s, 1, len, stdout);
	fputc('\n', stdout);
	free(s);
	if (a->timing)
		fprintf(stderr, "tokenize: decoded %zu ids in %.1f ms\n", n_ids, t0 * 1e3);
out:
	free(ids);
	return rc;
}

/* Print the ids of src (len bytes). */
static int encode(const struct tok_args *a, const pccx_tokenizer *tk, const char *src, size_t len)
{
	unsigned flags = (a->no_bos ? 0 : PCCX_TOK_ADD_BOS) |
			 (a->no_special ? PCCX_TOK_NO_SPECIAL : 0);
	int32_t *ids = NULL;
	pccx_diag d = { 0 };
	size_t n_ids, k;
	double t0;

	t0 = pccx_cli_now();
	if (pccx_tokenizer_encode(tk, src, len, flags, &ids, &n_ids, &d))
		return pccx_cli_fail(d.status, &d);
	t0 = pccx_cli_now() - t0;
	for (k = 0; k < n_ids; k++)
		printf(k ? " %d" : "%d", ids[k]);
	putchar('\n');
	free(ids);
	if (a->timing)
		fprintf(stderr, "tokenize: encoded %zu bytes into %zu ids in %.1f ms\n", len,
			n_ids, t0 * 1e3);
	return 0;
}

int pccx_cmd_tokenize(int argc, char **argv)
{
	struct tok_args a = { 0 };
	pccx_tokenizer *tk = NULL;
	pccx_diag d = { 0 };
	char *text = NULL;
	size_t text_len = 0;
	double t0;
	int rc;

	rc = pccx_opt_parse(&tok_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (a.file && a.args.n)
		return pccx_opt_fail(&tok_cmd, "give either --file or arguments, not both");
	if (!a.file && !a.args.n)
		return pccx_opt_fail(&tok_cmd, "nothing to %s (give %s or --file)",
				     a.decode ? "decode" : "encode", a.decode ? "ids" : "the text");
	if (!a.decode && !a.file && a.args.n > 1)
		return pccx_opt_fail(&tok_cmd, "give the text as one argument (quote it)");

	if (a.file && read_all(a.file, &text, &text_len))
		return 1;
	t0 = pccx_cli_now();
	if (pccx_tokenizer_load_json(a.tokenizer, &tk, &d)) {
		rc = pccx_cli_fail(d.status, &d);
		goto out;
	}
	if (a.timing)
		fprintf(stderr, "tokenize: loaded %s (%zu tokens) in %.1f ms\n", a.tokenizer,
			pccx_tokenizer_n_vocab(tk), (pccx_cli_now() - t0) * 1e3);
	if (a.decode)
		rc = decode(&a, tk, text);
	else if (text)
		rc = encode(&a, tk, text, text_len);
	else
		rc = encode(&a, tk, a.args.v[0], strlen(a.args.v[0]));
	if (!rc && fflush(stdout)) {
		fprintf(stderr, "pccx: tokenize: write error: %s\n", strerror(errno));
		rc = 1;
	}
out:
	free(text);
	pccx_tokenizer_free(tk);
	return rc;
}
