/* SPDX-License-Identifier: MIT */
/*
 * The QEMU guest test programs' harness (pccx-tests.c, usb-link.c): named tests, each failing
 * at its first failed CHECK (later ones are listed under it), a "PCCX-TEST ok NAME" line per
 * passing test that scripts/qemu/run.sh counts, and the program's "N passed, N failed" line.
 */
#ifndef PCCX_GUEST_CHECK_H
#define PCCX_GUEST_CHECK_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pccx/status.h"

static int n_pass, n_fail;
static const char *cur;
static int cur_failed;

#define CHECK(c) check((c), __LINE__, #c)
#define CHECK_RET(expr, want) check_ret((expr), (want), __LINE__, #expr)

static inline void check(int ok, int line, const char *what)
{
	if (ok)
		return;
	if (!cur_failed)
		printf("PCCX-TEST FAIL %s: line %d: %s\n", cur, line, what);
	else
		printf("  (also line %d: %s)\n", line, what);
	fflush(stdout);
	cur_failed = 1;
}

static inline void check_ret(int got, int want, int line, const char *what)
{
	char buf[300];

	if (got == want)
		return;
	/* small negative values are both errnos and pccx status codes: name both */
	snprintf(buf, sizeof(buf), "%s returned %d (%s / %s), expected %d (%s / %s)", what, got,
		 got < 0 ? strerror(-got) : "-", pccx_strerror(got), want,
		 want < 0 ? strerror(-want) : "-", pccx_strerror(want));
	check(0, line, buf);
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run one named test and count it. */
static inline void guest_run(const char *name, void (*fn)(void))
{
	double t0 = now_s();

	cur = name;
	cur_failed = 0;
	fn();
	if (cur_failed) {
		n_fail++;
		printf("  (%s took %.1f s)\n", cur, now_s() - t0);
	} else {
		n_pass++;
		printf("PCCX-TEST ok %s (%.1f s)\n", cur, now_s() - t0);
	}
}

/* The program's closing line; its exit status. */
static inline int guest_summary(const char *prog)
{
	printf("%s: %d passed, %d failed\n", prog, n_pass, n_fail);
	return n_fail ? 1 : 0;
}

#endif
