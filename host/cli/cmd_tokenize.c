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
#include <time.h>

#include "cli.h"
#include "pccx/tokenizer.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pccx tokenize --tokenizer FILE [options] TEXT\n"
		"       pccx tokenize --tokenizer FILE --decode [options] ID...\n"
		"\n"
		"Encode TEXT with the Gemma tokenizer and print the ids separated by spaces,\n"
		"or with --decode turn ids back into text.\n"
		"\n"
		"options:\n"
		"  --tokenizer FILE  Hugging Face tokenizer.json (required)\n"
		"  --no-bos          do not prepend <bos>\n"
		"  --no-special      treat special-token text such as \"<bos>\" as plain text\n"
		"  --decode          arguments are ids (one per argument, or space separated)\n"
		"  --skip-special    with --decode: leave out special tokens\n"
		"  --file PATH       read the text (or the ids) from PATH, '-' for stdin\n"
		"  --time            print load and encode/decode times to stderr\n"
		"  -h, --help        this help\n");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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

int pccx_cmd_tokenize(int argc, char **argv)
{
	const char *tok_path = NULL, *file = NULL;
	bool bos = true, decode = false, skip_special = false, no_special = false, timing = false;
	pccx_tokenizer *tk = NULL;
	pccx_diag d = { 0 };
	char *text = NULL;
	size_t text_len = 0;
	int32_t *ids = NULL;
	size_t n_ids = 0, cap_ids = 0;
	int i, first_arg = 0, rc = 0;
	double t0, t1;

	if (pccx_cli_wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			first_arg = i + 1;
			break;
		} else if (!strcmp(a, "--tokenizer") || !strcmp(a, "--file")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "pccx: tokenize: %s needs an argument\n", a);
				return 2;
			}
			if (!strcmp(a, "--file"))
				file = argv[++i];
			else
				tok_path = argv[++i];
		} else if (!strcmp(a, "--no-bos")) {
			bos = false;
		} else if (!strcmp(a, "--decode")) {
			decode = true;
		} else if (!strcmp(a, "--skip-special")) {
			skip_special = true;
		} else if (!strcmp(a, "--no-special")) {
			no_special = true;
		} else if (!strcmp(a, "--time")) {
			timing = true;
		} else if (a[0] == '-' && a[1] == '-') {
			fprintf(stderr, "pccx: tokenize: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else {
			first_arg = i;
			break;
		}
	}
	if (!tok_path) {
		fprintf(stderr, "pccx: tokenize: --tokenizer FILE is required\n");
		usage(stderr);
		return 2;
	}
	if (!first_arg)
		first_arg = argc;
	if (file && first_arg < argc) {
		fprintf(stderr, "pccx: tokenize: give either --file or arguments, not both\n");
		return 2;
	}
	if (!file && first_arg >= argc) {
		fprintf(stderr, "pccx: tokenize: nothing to %s (give %s or --file)\n",
			decode ? "decode" : "encode", decode ? "ids" : "the text");
		return 2;
	}
	if (!decode && !file && argc - first_arg > 1) {
		fprintf(stderr, "pccx: tokenize: give the text as one argument (quote it)\n");
		return 2;
	}

	if (file && read_all(file, &text, &text_len))
		return 1;
	t0 = now_ms();
	if (pccx_tokenizer_load_json(tok_path, &tk, &d)) {
		rc = pccx_cli_fail(d.status, &d);
		goto out;
	}
	t1 = now_ms();
	if (timing)
		fprintf(stderr, "tokenize: loaded %s (%zu tokens) in %.1f ms\n", tok_path,
			pccx_tokenizer_n_vocab(tk), t1 - t0);

	if (decode) {
		char *s = NULL;
		size_t len;

		if (text) {
			rc = parse_ids(text, &ids, &n_ids, &cap_ids);
		} else {
			for (i = first_arg; i < argc && !rc; i++)
				rc = parse_ids(argv[i], &ids, &n_ids, &cap_ids);
		}
		if (rc)
			goto out;
		t0 = now_ms();
		if (pccx_tokenizer_decode(tk, ids, n_ids, skip_special ? PCCX_TOK_SKIP_SPECIAL : 0,
					  &s, &len, &d)) {
			rc = pccx_cli_fail(d.status, &d);
			goto out;
		}
		t1 = now_ms();
		fwrite(s, 1, len, stdout);
		fputc('\n', stdout);
		free(s);
		if (timing)
			fprintf(stderr, "tokenize: decoded %zu ids in %.1f ms\n", n_ids, t1 - t0);
	} else {
		const char *src = text ? text : argv[first_arg];
		size_t len = text ? text_len : strlen(src), k;
		unsigned flags = (bos ? PCCX_TOK_ADD_BOS : 0) |
				 (no_special ? PCCX_TOK_NO_SPECIAL : 0);

		t0 = now_ms();
		if (pccx_tokenizer_encode(tk, src, len, flags, &ids, &n_ids, &d)) {
			rc = pccx_cli_fail(d.status, &d);
			goto out;
		}
		t1 = now_ms();
		for (k = 0; k < n_ids; k++)
			printf(k ? " %d" : "%d", ids[k]);
		putchar('\n');
		if (timing)
			fprintf(stderr, "tokenize: encoded %zu bytes into %zu ids in %.1f ms\n",
				len, n_ids, t1 - t0);
	}
	if (fflush(stdout)) {
		fprintf(stderr, "pccx: tokenize: write error: %s\n", strerror(errno));
		rc = 1;
	}
out:
	free(ids);
	free(text);
	pccx_tokenizer_free(tk);
	return rc;
}
