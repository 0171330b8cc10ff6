// SPDX-License-Identifier: MIT
/* The option parser of the pccx sub-commands (options.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#define MAX_OPTS	64	/* entries of both tables together */
#define HELP_COL	24	/* widest option column before the help moves to its own line */

/* The entries of both tables in one index space: k < n_main is opts[k]. */
struct opt_ref {
	const struct pccx_opt *o;
	size_t base;		/* offset the entry's `at` is relative to */
	int k;
};

static int count(const struct pccx_opt *t)
{
	int n = 0;

	while (t && t[n].kind != PCCX_OPT_END)
		n++;
	return n;
}

static bool entry(const struct pccx_opt_cmd *c, int k, struct opt_ref *r)
{
	int n_main = count(c->opts);

	r->k = k;
	if (k < n_main) {
		r->o = &c->opts[k];
		r->base = 0;
		return true;
	}
	if (k - n_main < count(c->more)) {
		r->o = &c->more[k - n_main];
		r->base = c->more_at;
		return true;
	}
	return false;
}

static bool is_positional(const struct pccx_opt *o)
{
	return !o->name && !o->short_name;
}

/* The option named by a ("--name", "--name=...", "-c..."), or false. */
static bool find(const struct pccx_opt_cmd *c, const char *a, struct opt_ref *r)
{
	int k;

	for (k = 0; entry(c, k, r); k++) {
		const struct pccx_opt *o = r->o;

		if (a[1] == '-' && o->name) {
			size_t len = strcspn(a + 2, "=");

			if (strlen(o->name) == len && !strncmp(a + 2, o->name, len))
				return true;
		} else if (a[1] != '-' && o->short_name && o->short_name == a[1]) {
			return true;
		}
	}
	return false;
}

/* The first positional entry after index k (-1: the first one). */
static bool next_positional(const struct pccx_opt_cmd *c, int k, struct opt_ref *r)
{
	for (k++; entry(c, k, r); k++)
		if (is_positional(r->o))
			return true;
	return false;
}

static void print_name(FILE *f, const struct pccx_opt *o)
{
	if (o->name)
		fprintf(f, "--%s", o->name);
	else if (o->short_name)
		fprintf(f, "-%c", o->short_name);
	else
		fprintf(f, "%s", o->arg);
}

static void usage_lines(const struct pccx_opt_cmd *c, FILE *f)
{
	const char *p = c->usage;
	bool first = true;

	do {
		size_t len = strcspn(p, "\n");

		fprintf(f, "%s pccx %s%s%.*s\n", first ? "usage:" : "      ", c->name,
			len ? " " : "", (int)len, p);
		first = false;
		p += len;
	} while (*p++);
}

static int vfail(const struct pccx_opt_cmd *c, const char *fmt, va_list ap)
{
	fprintf(stderr, "pccx %s: ", c->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	usage_lines(c, stderr);
	return 2;
}

int pccx_opt_fail(const struct pccx_opt_cmd *c, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(c, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- values ---------------------------------------------------------------------------- */

/* A whole number: decimal, or hex after 0x; *end is what follows it. No sign, no blanks. */
static int parse_u64(const char *s, uint64_t *v, char **end)
{
	const char *digits = "0123456789";
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
		digits = "0123456789abcdefABCDEF";
	}
	/* what strtoull would also take: a sign, blanks, a second 0x */
	if (!*s || !strchr(digits, *s) || (base == 16 && (s[1] == 'x' || s[1] == 'X')))
		return -1;
	errno = 0;
	*v = strtoull(s, end, base);
	return errno ? -1 : 0;
}

static int parse_uint(const char *s, bool bytes, uint64_t *v)
{
	static const char units[] = "KMGT";
	const char *u;
	unsigned shift = 0;
	char *end;

	if (parse_u64(s, v, &end))
		return -1;
	if (bytes && *end && (u = strchr(units, *end)) != NULL) {
		shift = 10 * (unsigned)(u - units + 1);
		end++;
	}
	if (*end || *v > UINT64_MAX >> shift)
		return -1;
	*v <<= shift;
	return 0;
}

static int parse_int(const char *s, int32_t *v)
{
	char *end;
	long long x;

	if (!*s || !strchr("-0123456789", *s))
		return -1;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end || end == s || x < INT32_MIN || x > INT32_MAX)
		return -1;
	*v = (int32_t)x;
	return 0;
}

static int parse_float(const char *s, float *v)
{
	char *end;

	if (!*s || strchr(" \t\n", *s))
		return -1;
	errno = 0;
	*v = strtof(s, &end);
	return errno || *end ? -1 : 0;
}

static int store(const struct opt_ref *r, void *args, const char *v)
{
	const struct pccx_opt *o = r->o;
	void *dst = (char *)args + r->base + o->at;
	uint64_t u;

	switch (o->kind) {
	case PCCX_OPT_FLAG:
		*(bool *)dst = true;
		return 0;
	case PCCX_OPT_UINT:
	case PCCX_OPT_BYTES:
		if (parse_uint(v, o->kind == PCCX_OPT_BYTES, &u) || u < o->min ||
		    (o->max && u > o->max))
			return -1;
		*(uint64_t *)dst = u;
		return 0;
	case PCCX_OPT_INT:
		return parse_int(v, dst);
	case PCCX_OPT_FLOAT:
		return parse_float(v, dst);
	case PCCX_OPT_PATH:
		if (!*v)
			return -1;
		/* fall through */
	case PCCX_OPT_STR:
		*(const char **)dst = v;
		return 0;
	case PCCX_OPT_CUSTOM:
		return o->parse(v, dst);
	case PCCX_OPT_REST:
	case PCCX_OPT_END:
		break;
	}
	return -1;
}

static void print_range(FILE *f, const struct pccx_opt *o)
{
	if (o->max)
		fprintf(f, " from %llu to %llu", (unsigned long long)o->min,
			(unsigned long long)o->max);
	else if (o->min)
		fprintf(f, " of at least %llu", (unsigned long long)o->min);
}

static int bad_value(const struct pccx_opt_cmd *c, const struct pccx_opt *o, const char *v)
{
	fprintf(stderr, "pccx %s: bad ", c->name);
	print_name(stderr, o);
	fprintf(stderr, " '%s': expected ", v);
	switch (o->kind) {
	case PCCX_OPT_UINT:
		fprintf(stderr, "a whole number");
		print_range(stderr, o);
		break;
	case PCCX_OPT_BYTES:
		fprintf(stderr, "a byte count");
		print_range(stderr, o);
		fprintf(stderr, " (suffixes K, M, G, T are powers of 1024)");
		break;
	case PCCX_OPT_INT:
		fprintf(stderr, "a whole number");
		break;
	case PCCX_OPT_FLOAT:
		fprintf(stderr, "a number");
		break;
	case PCCX_OPT_PATH:
		fprintf(stderr, "a file name");
		break;
	default:
		if (o->values)
			fprintf(stderr, "one of %s", o->values());
		else
			fprintf(stderr, "%s", o->arg);
		break;
	}
	fputc('\n', stderr);
	usage_lines(c, stderr);
	return 2;
}

/* ---- parsing --------------------------------------------------------------------------- */

static void mark_seen(const struct opt_ref *r, void *args, bool *seen)
{
	seen[r->k] = true;
	if (r->o->seen_at)
		*(bool *)((char *)args + r->base + r->o->seen_at - 1) = true;
}

/* argv[*i] is an option: store it (and its value, taking argv[*i + 1] when it has none). */
static int option(const struct pccx_opt_cmd *c, int argc, char **argv, int *i, void *args,
		  bool *seen)
{
	const char *a = argv[*i], *v;
	struct opt_ref r;

	if (!find(c, a, &r) || is_positional(r.o))
		return pccx_opt_fail(c, "unknown option '%.*s'", (int)strcspn(a, "="), a);
	if (a[1] == '-')
		v = strchr(a, '=') ? strchr(a, '=') + 1 : NULL;
	else
		v = a[2] ? a + 2 : NULL;
	if (r.o->kind == PCCX_OPT_FLAG) {
		if (v)
			return pccx_opt_fail(c, "%.*s takes no value", a[1] == '-' ?
					     (int)strcspn(a, "=") : 2, a);
	} else if (!v) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "pccx %s: ", c->name);
			print_name(stderr, r.o);
			fprintf(stderr, " needs a value (%s)\n", r.o->arg);
			usage_lines(c, stderr);
			return 2;
		}
		v = argv[++*i];
	}
	if (store(&r, args, v))
		return bad_value(c, r.o, v);
	mark_seen(&r, args, seen);
	return PCCX_OPT_RUN;
}

/*
 * Whether argument a is an option. Before free text (a REST positional comes next), only what
 * names an option is one: "-x" that is no short option starts the text.
 */
static bool is_option(const struct pccx_opt_cmd *c, const char *a, const struct opt_ref *pos)
{
	struct opt_ref r;

	if (a[0] != '-' || !a[1])
		return false;
	if (pos && pos->o->kind == PCCX_OPT_REST && a[1] != '-')
		return find(c, a, &r);
	return true;
}

/* A REST positional took the rest of the command line. */
#define REST_TAKEN (-2)

/* Positional argument argv[i] goes to *pos, which moves on to the next positional entry. */
static int positional(const struct pccx_opt_cmd *c, int argc, char **argv, int i, void *args,
		      struct opt_ref *pos, bool *have_pos, bool *seen)
{
	if (!*have_pos)
		return pccx_opt_fail(c, "unexpected argument '%s'", argv[i]);
	mark_seen(pos, args, seen);
	if (pos->o->kind == PCCX_OPT_REST) {
		struct pccx_opt_rest *rest = (void *)((char *)args + pos->o->at);

		rest->v = argv + i;
		rest->n = argc - i;
		return REST_TAKEN;
	}
	if (store(pos, args, argv[i]))
		return bad_value(c, pos->o, argv[i]);
	*have_pos = next_positional(c, pos->k, pos);
	return PCCX_OPT_RUN;
}

static int check_required(const struct pccx_opt_cmd *c, const bool *seen)
{
	struct opt_ref r;
	int k;

	for (k = 0; entry(c, k, &r); k++) {
		if (!(r.o->flags & PCCX_OPT_REQUIRED) || seen[k])
			continue;
		if (is_positional(r.o))
			return pccx_opt_fail(c, "missing %s", r.o->arg);
		fprintf(stderr, "pccx %s: ", c->name);
		print_name(stderr, r.o);
		fprintf(stderr, " %s is required\n", r.o->arg);
		usage_lines(c, stderr);
		return 2;
	}
	return PCCX_OPT_RUN;
}

int pccx_opt_parse(const struct pccx_opt_cmd *c, int argc, char **argv, void *args)
{
	bool seen[MAX_OPTS] = { false }, have_pos, only_pos = false;
	struct opt_ref pos;
	int i, rc;

	if (count(c->opts) + count(c->more) > MAX_OPTS)
		return pccx_opt_fail(c, "internal error: more than %d options", MAX_OPTS);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			pccx_opt_help(c, stdout);
			return 0;
		}
	}
	have_pos = next_positional(c, -1, &pos);
	for (i = 1; i < argc; i++) {
		if (!only_pos && !strcmp(argv[i], "--")) {
			only_pos = true;
			continue;
		}
		if (only_pos || !is_option(c, argv[i], have_pos ? &pos : NULL))
			rc = positional(c, argc, argv, i, args, &pos, &have_pos, seen);
		else
			rc = option(c, argc, argv, &i, args, seen);
		if (rc == REST_TAKEN)
			break;
		if (rc != PCCX_OPT_RUN)
			return rc;
	}
	return check_required(c, seen);
}

/* ---- help ------------------------------------------------------------------------------ */

/* The left column of an entry: "-o, --out FILE". */
static int left(const struct pccx_opt *o, char *buf, size_t size)
{
	const char *arg = o->kind == PCCX_OPT_FLAG ? NULL : o->arg;

	if (is_positional(o))
		return snprintf(buf, size, "%s", o->arg);
	if (o->short_name && o->name)
		return snprintf(buf, size, "-%c, --%s%s%s", o->short_name, o->name,
				arg ? " " : "", arg ? arg : "");
	if (o->short_name)
		return snprintf(buf, size, "-%c%s%s", o->short_name, arg ? " " : "",
				arg ? arg : "");
	return snprintf(buf, size, "--%s%s%s", o->name, arg ? " " : "", arg ? arg : "");
}

static void help_line(FILE *f, const char *l, int width, const struct pccx_opt *o)
{
	const char *h = o ? o->help : "this help";
	int n = fprintf(f, "  %s", l);

	if (n > width + 2) {
		fputc('\n', f);
		n = 0;
	}
	fprintf(f, "%*s", width + 4 - n, "");
	for (; *h; h++) {
		fputc(*h, f);
		if (*h == '\n')
			fprintf(f, "%*s", width + 4, "");
	}
	if (o && o->values)
		fprintf(f, ": %s", o->values());
	if (o && (o->flags & PCCX_OPT_REQUIRED) && !is_positional(o))
		fprintf(f, " (required)");
	fputc('\n', f);
}

static void help_table(FILE *f, const struct pccx_opt *t, bool positionals, int width)
{
	char l[128];

	for (; t && t->kind != PCCX_OPT_END; t++) {
		if (is_positional(t) != positionals || !t->help)
			continue;
		left(t, l, sizeof(l));
		help_line(f, l, width, t);
	}
}

void pccx_opt_help(const struct pccx_opt_cmd *c, FILE *f)
{
	struct opt_ref r;
	bool any_pos = false;
	int k, width = 10;
	char l[128];

	for (k = 0; entry(c, k, &r); k++) {
		int n = left(r.o, l, sizeof(l));

		if (n <= HELP_COL && n > width)
			width = n;
		any_pos |= is_positional(r.o) && r.o->help;
	}
	usage_lines(c, f);
	if (c->about)
		fprintf(f, "\n%s", c->about);
	if (any_pos) {
		fprintf(f, "\narguments:\n");
		help_table(f, c->opts, true, width);
	}
	fprintf(f, "\noptions:\n");
	help_table(f, c->opts, false, width);
	help_line(f, "-h, --help", width, NULL);
	if (c->more) {
		fprintf(f, "\n%s:\n", c->more_title);
		help_table(f, c->more, false, width);
	}
}
