/* SPDX-License-Identifier: MIT */
/*
 * The output parser (pccx/output.h): a table of generated streams and the events each must
 * give, written by hand from Gemma 4's framing. Every stream is fed whole, byte by byte, and
 * cut at every pair of positions (so every marker is split at every byte); the events must be
 * the same each time (text and thinking pieces are joined before comparing).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/output.h"

#define MAXEV 16

struct ev {
	pccx_output_kind kind;
	const char *text;	/* TEXT/THINKING bytes, TOOL_CALL JSON, BAD raw bytes */
	const char *name;	/* TOOL_CALL function, THINKING label */
};

struct got {
	pccx_output_kind kind[MAXEV];
	char *text[MAXEV];
	char *name[MAXEV];
	char *error[MAXEV];
	int n;
	int stop_after;		/* return non-zero from this event on (0: never) */
};

static char *dup_n(const char *s, size_t n)
{
	char *r = malloc(n + 1);

	ck_assert_ptr_nonnull(r);
	memcpy(r, s, n);
	r[n] = '\0';
	return r;
}

/* Collect events, joining consecutive text or thinking pieces of the same label. */
static int on_event(void *user, const pccx_output_event *ev)
{
	struct got *g = user;
	int last = g->n - 1;

	ck_assert_uint_gt(ev->len + (ev->kind >= PCCX_OUTPUT_TOOL_CALL), 0);
	if (ev->kind <= PCCX_OUTPUT_THINKING && last >= 0 && g->kind[last] == ev->kind &&
	    !strcmp(g->name[last] ? g->name[last] : "", ev->name ? ev->name : "")) {
		size_t old = strlen(g->text[last]);

		g->text[last] = realloc(g->text[last], old + ev->len + 1);
		ck_assert_ptr_nonnull(g->text[last]);
		memcpy(g->text[last] + old, ev->text, ev->len);
		g->text[last][old + ev->len] = '\0';
	} else {
		ck_assert_int_lt(g->n, MAXEV);
		g->kind[g->n] = ev->kind;
		g->text[g->n] = dup_n(ev->text ? ev->text : "", ev->len);
		g->name[g->n] = ev->name ? dup_n(ev->name, strlen(ev->name)) : NULL;
		g->error[g->n] = ev->error ? dup_n(ev->error, strlen(ev->error)) : NULL;
		if (ev->kind >= PCCX_OUTPUT_TOOL_CALL)
			ck_assert_int_eq(ev->text[ev->len], '\0');
		g->n++;
	}
	return g->stop_after && g->n >= g->stop_after ? 7 : 0;
}

static void got_free(struct got *g)
{
	int i;

	for (i = 0; i < g->n; i++) {
		free(g->text[i]);
		free(g->name[i]);
		free(g->error[i]);
	}
	memset(g, 0, sizeof(*g));
}

/* Feed s in pieces cut at a and b (a <= b <= n), then finish. */
static void run_cut(const char *s, size_t a, size_t b, struct got *g)
{
	pccx_output_parser *p;
	size_t n = strlen(s);

	ck_assert_int_eq(pccx_output_parser_create(&p, on_event, g, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s, a, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s + a, b - a, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s + b, n - b, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_finish(p, NULL), 0);
	pccx_output_parser_free(p);
}

static void expect(const struct got *g, const struct ev *want, const char *s, size_t a,
		   size_t b)
{
	int i, n = 0;

	while (n < MAXEV && want[n].text)
		n++;
	ck_assert_msg(g->n == n, "'%s' cut at %zu, %zu: %d events, want %d", s, a, b, g->n, n);
	for (i = 0; i < n; i++) {
		ck_assert_msg(g->kind[i] == want[i].kind && !strcmp(g->text[i], want[i].text),
			      "'%s' cut at %zu, %zu: event %d is (%d, '%s'), want (%d, '%s')", s,
			      a, b, i, g->kind[i], g->text[i], want[i].kind, want[i].text);
		if (want[i].name)
			ck_assert_str_eq(g->name[i], want[i].name);
		if (g->kind[i] == PCCX_OUTPUT_BAD_TOOL_CALL)
			ck_assert_ptr_nonnull(g->error[i]);
	}
}

#define T PCCX_OUTPUT_TEXT
#define K PCCX_OUTPUT_THINKING
#define C PCCX_OUTPUT_TOOL_CALL
#define B PCCX_OUTPUT_BAD_TOOL_CALL
#define Q "<|\"|>"

static const struct {
	const char *stream;
	struct ev want[6];
} table[] = {
	{ "plain text, no markers < | > <| |>", { { T, "plain text, no markers < | > <| |>", NULL } } },
	{ "<|channel>thought\nstep 1, step 2<channel|>The answer is 4.",
	  { { K, "step 1, step 2", "thought" }, { T, "The answer is 4.", NULL } } },
	{ "Let me check.<|tool_call>call:get_weather{location:" Q "Paris, FR" Q
	  ",days:3}<tool_call|>",
	  { { T, "Let me check.", NULL }, { C, "{\"location\":\"Paris, FR\",\"days\":3}", "get_weather" } } },
	/* two calls back to back, nested values, every scalar kind, quotes and escapes */
	{ "<|tool_call>call:a{x:{y:[1,-2.5e3," Q "q\"b\\" Q "]},t:true,f:false,z:null}<tool_call|>"
	  "<|tool_call>call:b{}<tool_call|>",
	  { { C, "{\"x\":{\"y\":[1,-2.5e3,\"q\\\"b\\\\\"]},\"t\":true,\"f\":false,\"z\":null}", "a" },
	    { C, "{}", "b" } } },
	/* a bare word that is not a number becomes a string; a string holds a marker's text */
	{ "<|tool_call>call:f{mode:fast, s:" Q "<channel|>" Q "}<tool_call|>done",
	  { { C, "{\"mode\":\"fast\",\"s\":\"<channel|>\"}", "f" }, { T, "done", NULL } } },
	/* a call ends a channel left open */
	{ "<|channel>thought\nneed data<|tool_call>call:g{k:1}<tool_call|>ok",
	  { { K, "need data", "thought" }, { C, "{\"k\":1}", "g" }, { T, "ok", NULL } } },
	/* malformed calls are reported with their bytes */
	{ "a<|tool_call>call:h{k:" Q "open}<tool_call|>b",
	  { { T, "a", NULL }, { B, "call:h{k:" Q "open}", NULL }, { T, "b", NULL } } },
	{ "<|tool_call>call:{k:1}<tool_call|>", { { B, "call:{k:1}", NULL } } },
	{ "<|tool_call>call:h{k:1}} <tool_call|>", { { B, "call:h{k:1}} ", NULL } } },
	{ "<|tool_call>h{k:1}<tool_call|>", { { B, "h{k:1}", NULL } } },
	/* streams that end inside a frame lose nothing */
	{ "x<|tool_call>call:h{k:", { { T, "x", NULL }, { B, "call:h{k:", NULL } } },
	{ "<|channel>thought\nhalf a tho", { { K, "half a tho", "thought" } } },
	{ "tail <|chan", { { T, "tail <|chan", NULL } } },
	/* a channel without a label line, and one closed before its newline */
	{ "<|channel>no newline for a long while here<channel|>t",
	  { { K, "no newline for a long while here", "" }, { T, "t", NULL } } },
	{ "<|channel>thought<channel|>t", { { T, "t", NULL } } },
};

START_TEST(every_cut_gives_the_same_events)
{
	const char *s = table[_i].stream;
	size_t n = strlen(s), a, b;
	struct got g = { 0 };

	for (a = 0; a <= n; a++) {
		for (b = a; b <= n; b++) {
			run_cut(s, a, b, &g);
			expect(&g, table[_i].want, s, a, b);
			got_free(&g);
		}
	}
}
END_TEST

START_TEST(byte_by_byte)
{
	const char *s = table[_i].stream;
	size_t n = strlen(s), i;
	struct got g = { 0 };
	pccx_output_parser *p;

	ck_assert_int_eq(pccx_output_parser_create(&p, on_event, &g, NULL), 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(pccx_output_parser_feed(p, s + i, 1, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_finish(p, NULL), 0);
	expect(&g, table[_i].want, s, 1, 1);
	got_free(&g);
	/* the parser starts again in text after finish */
	ck_assert_int_eq(pccx_output_parser_feed(p, "again", 5, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_finish(p, NULL), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.text[0], "again");
	got_free(&g);
	pccx_output_parser_free(p);
}
END_TEST

/* Nesting past the limit and an endless call are reported, not followed. */
START_TEST(hostile_calls_are_bounded)
{
	struct got g = { 0 };
	pccx_output_parser *p;
	char *s;
	size_t i, n = 2 * PCCX_OUTPUT_MAX_CALL;

	ck_assert_int_eq(pccx_output_parser_create(&p, on_event, &g, NULL), 0);
	s = malloc(n);
	ck_assert_ptr_nonnull(s);
	memcpy(s, "call:deep{k:", 12);
	for (i = 12; i < 200; i++)
		s[i] = '[';
	ck_assert_int_eq(pccx_output_parser_feed(p, "<|tool_call>", 12, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s, 200, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, "<tool_call|>", 12, NULL), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.kind[0], B);
	ck_assert_ptr_nonnull(strstr(g.error[0], "deeply"));
	got_free(&g);

	/* a call that never closes: reported at the limit, the rest is text */
	memset(s, 'x', n);
	ck_assert_int_eq(pccx_output_parser_feed(p, "<|tool_call>", 12, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s, n, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_finish(p, NULL), 0);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.kind[0], B);
	ck_assert_uint_eq(strlen(g.text[0]), PCCX_OUTPUT_MAX_CALL);
	ck_assert_int_eq(g.kind[1], T);
	ck_assert_uint_eq(strlen(g.text[1]), n - PCCX_OUTPUT_MAX_CALL);
	got_free(&g);
	free(s);
	pccx_output_parser_free(p);
}
END_TEST

/* A call that does not parse keeps every byte, NULs included, and a NUL after them. */
START_TEST(bad_call_keeps_nul_bytes)
{
	struct got g = { 0 };
	pccx_output_parser *p;
	static const char s[] = "<|tool_call>a\0b";

	ck_assert_int_eq(pccx_output_parser_create(&p, on_event, &g, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s, sizeof(s) - 1, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_finish(p, NULL), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.kind[0], B);
	ck_assert(!memcmp(g.text[0], "a\0b", 4));
	got_free(&g);
	pccx_output_parser_free(p);
}
END_TEST

/* A callback's non-zero return stops the parser and is returned from then on. */
START_TEST(callback_stops_the_parser)
{
	struct got g = { .stop_after = 1 };
	pccx_output_parser *p;
	static const char s[] = "text<|tool_call>call:a{}<tool_call|>more";

	ck_assert_int_eq(pccx_output_parser_create(&p, on_event, &g, NULL), 0);
	ck_assert_int_eq(pccx_output_parser_feed(p, s, sizeof(s) - 1, NULL), 7);
	ck_assert_int_eq(pccx_output_parser_feed(p, "x", 1, NULL), 7);
	ck_assert_int_eq(pccx_output_parser_finish(p, NULL), 7);
	ck_assert_int_eq(g.n, 1);
	got_free(&g);
	pccx_output_parser_free(p);
	ck_assert_int_eq(pccx_output_parser_create(&p, NULL, NULL, NULL), PCCX_ERR_INVALID);
	ck_assert_ptr_null(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("output_parser");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;
	int n = (int)(sizeof(table) / sizeof(table[0]));

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_cut_gives_the_same_events, 0, n);
	tcase_add_loop_test(tc, byte_by_byte, 0, n);
	tcase_add_test(tc, hostile_calls_are_bounded);
	tcase_add_test(tc, callback_stops_the_parser);
	tcase_add_test(tc, bad_call_keeps_nul_bytes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
