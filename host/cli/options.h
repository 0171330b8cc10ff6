/* SPDX-License-Identifier: MIT */
/*
 * The option parser of the pccx sub-commands. A command declares its options and positional
 * arguments in a static table (struct pccx_opt: name, kind, where the value goes, help line)
 * and calls pccx_opt_parse(), which fills the command's argument struct from argv, reports
 * every usage error in one format ("pccx CMD: bad --opt 'x': expected ...", followed by the
 * usage lines) and prints --help from the table.
 *
 * Accepted forms: --opt VALUE, --opt=VALUE, -o VALUE, -oVALUE, flags --flag and -f; "--" ends
 * the options. -h or --help anywhere prints the help. An option given twice keeps the last
 * value.
 */
#ifndef PCCX_CLI_OPTIONS_H
#define PCCX_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum pccx_opt_kind {
	PCCX_OPT_END,		/* ends a table: { 0 } */
	PCCX_OPT_FLAG,		/* bool, set to true */
	PCCX_OPT_UINT,		/* uint64_t in [min, max]: decimal, or hex with 0x */
	PCCX_OPT_BYTES,		/* uint64_t: UINT with an optional K, M, G, T (powers of 1024) */
	PCCX_OPT_INT,		/* int32_t, decimal */
	PCCX_OPT_FLOAT,		/* float */
	PCCX_OPT_STR,		/* const char * */
	PCCX_OPT_PATH,		/* const char *: a file name, not empty */
	PCCX_OPT_CUSTOM,	/* parse(value, destination) */
	/*
	 * struct pccx_opt_rest: as a positional argument, the first positional argument and
	 * everything after it, whatever it looks like (free text: the command's own syntax). An
	 * argument with a single '-' that is no declared short option starts it too ("-x").
	 */
	PCCX_OPT_REST,
};

struct pccx_opt_rest {
	char **v;
	int n;
};

#define PCCX_OPT_REQUIRED	(1u << 0)

struct pccx_opt {
	const char *name;	/* long name without "--"; NULL for a positional argument */
	char short_name;	/* 0: none */
	enum pccx_opt_kind kind;
	size_t at;		/* where the value goes: PCCX_AT() in the argument struct */
	const char *arg;	/* the value in the help: "FILE", "N"; a positional's name */
	const char *help;	/* '\n' starts a continuation line */
	/* optional: */
	uint64_t min, max;	/* UINT, BYTES: the accepted range (max 0: no upper limit) */
	unsigned flags;		/* PCCX_OPT_REQUIRED */
	/* CUSTOM: store the value at dst; 0 or -1 (a bad value) */
	int (*parse)(const char *value, void *dst);
	/* The accepted values, listed after the help and in a bad-value message. */
	const char *(*values)(void);
	size_t seen_at;		/* PCCX_AT(T, f, bool) + 1: set when given; 0: none */
};

/* One sub-command: the options of opts and of more (a shared group), the help text. */
struct pccx_opt_cmd {
	const char *name;	/* "sim", "bench --ref": messages say "pccx NAME: ..." */
	const char *usage;	/* after "usage: pccx NAME "; '\n' separates alternatives */
	const char *about;	/* the paragraph under the usage */
	const struct pccx_opt *opts;
	/* Another table (e.g. the sampler's), its offsets relative to more_at in the struct. */
	const char *more_title;
	const struct pccx_opt *more;
	size_t more_at;
};

/*
 * One table entry: long name, short name, kind, PCCX_AT(...), the value's name, the help, then
 * any of .min, .max, .flags, .parse, .values, .seen_at. A table ends with { 0 }.
 */
#define PCCX_OPT(long_name, short_opt, opt_kind, offset, arg_name, help_text, ...)             \
	{ .name = (long_name), .short_name = (short_opt), .kind = (opt_kind), .at = (offset),   \
	  .arg = (arg_name), .help = (help_text), __VA_ARGS__ }

/* Offset of field f of type `type` in struct T; a wrong type does not compile. */
#define PCCX_AT(T, f, type) (offsetof(T, f) + 0 * sizeof(&((T *)0)->f == (type *)0))

/* pccx_opt_parse(): the arguments are parsed, run the command. */
#define PCCX_OPT_RUN (-1)

/*
 * Parse argv[1..argc-1] into the struct args (fields not named keep their values: set the
 * defaults first). Returns PCCX_OPT_RUN, or the exit status to end the command with: 0 after
 * printing the help to stdout, 2 after reporting a usage error on stderr.
 */
int pccx_opt_parse(const struct pccx_opt_cmd *c, int argc, char **argv, void *args);

/* Report a usage error the table cannot express as "pccx NAME: <fmt>" and the usage; 2. */
int pccx_opt_fail(const struct pccx_opt_cmd *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print the help generated from the tables. */
void pccx_opt_help(const struct pccx_opt_cmd *c, FILE *f);

#endif /* PCCX_CLI_OPTIONS_H */
