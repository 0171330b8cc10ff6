/* SPDX-License-Identifier: MIT */
/*
 * What pccx run and pccx chat print of a generated stream (host/cli/gen_show.c, linked in
 * by the Makefile: the command line's objects are not in the libraries). Scripted streams
 * of pieces, with the markers split across pieces, against the output written out by hand:
 * text as it comes, reasoning dimmed with SGR 2 ... SGR 22, plain, or left out, a tool call as
 * one JSON line, a call that does not parse on the error stream with its reason; without
 * events the pieces verbatim; without a tokenizer "[id]"; with a tokenizer the markers the
 * session decodes as "" (special tokens) read as their text, the stop token not.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_show.h"

#define Q "<|\"|>"
#define FAINT "\033[2m"
#define NORMAL "\033[22m"

struct shown {
	char *out, *err;
	size_t out_len, err_len;
};

/* Feed `pieces` (NULL-terminated, token i + 100 each) and end the reply; collect both streams. */
static void show(const struct pccx_cli_show_opts *o, const char *const *pieces,
		 const int32_t *tokens, struct shown *r)
{
	FILE *out = open_memstream(&r->out, &r->out_len);
	FILE *err = open_memstream(&r->err, &r->err_len);
	struct pccx_cli_show sh;
	pccx_diag d = { 0 };
	size_t i;

	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(pccx_cli_show_init(&sh, o, out, err, "pccx run", &d) == 0, "%s", d.msg);
	for (i = 0; pieces[i]; i++)
		ck_assert_msg(pccx_cli_show_piece(&sh, tokens ? tokens[i] : (int32_t)(100 + i),
						  pieces[i], strlen(pieces[i]), &d) == 0, "%s",
			      d.msg);
	ck_assert_msg(pccx_cli_show_end(&sh, &d) == 0, "%s", d.msg);
	pccx_cli_show_free(&sh);
	fclose(out);
	fclose(err);
}

static void expect(const struct pccx_cli_show_opts *o, const char *const *pieces,
		   const char *want_out, const char *want_err)
{
	struct shown r = { 0 };

	show(o, pieces, NULL, &r);
	ck_assert_msg(r.out_len == strlen(want_out) && !memcmp(r.out, want_out, r.out_len),
		      "stdout\n%s\nwant\n%s", r.out, want_out);
	ck_assert_msg(!strcmp(r.err, want_err), "stderr\n%s\nwant\n%s", r.err, want_err);
	free(r.out);
	free(r.err);
}

/* reasoning then the answer, every marker cut inside */
static const char *const thinking[] = {
	"<|chan", "nel>thou", "ght\nLet me", " think<", "channel", "|>The ans", "wer.", NULL
};

START_TEST(thinking_dimmed_plain_or_hidden)
{
	struct pccx_cli_show_opts o = { .events = true, .faint = true };

	expect(&o, thinking, FAINT "Let me think" NORMAL "The answer.", "");
	o.faint = false;
	expect(&o, thinking, "Let me thinkThe answer.", "");
	o.hide_thinking = true;
	expect(&o, thinking, "The answer.", "");
	o.faint = true;
	expect(&o, thinking, "The answer.", "");
}
END_TEST

/* a reply that ends while reasoning: the dimming ends with it */
START_TEST(thinking_to_the_end)
{
	static const char *const cut[] = { "<|channel>thought\nhalf", " a tho", NULL };
	struct pccx_cli_show_opts o = { .events = true, .faint = true };

	expect(&o, cut, FAINT "half a tho" NORMAL, "");
}
END_TEST

START_TEST(tool_calls_one_json_line_each)
{
	static const char *const calls[] = {
		"Let me check.<|tool", "_call>call:get_wea", "ther{location:" Q "Par", "is, FR",
		Q ",days:3}<tool_", "call|><|tool_call>call:b{}<tool_call|>Done.", NULL
	};
	static const char *const after_thought[] = {
		"<|channel>thought\nneed data<|tool_call>call:g{k:1}<tool_call|>ok", NULL
	};
	struct pccx_cli_show_opts o = { .events = true, .faint = true };

	expect(&o, calls, "Let me check.\n"
	       "{\"tool_call\":{\"name\":\"get_weather\",\"arguments\":"
	       "{\"location\":\"Paris, FR\",\"days\":3}}}\n"
	       "{\"tool_call\":{\"name\":\"b\",\"arguments\":{}}}\n"
	       "Done.", "");
	/* the call ends the dimmed reasoning; it starts on a line of its own */
	expect(&o, after_thought, FAINT "need data" NORMAL "\n"
	       "{\"tool_call\":{\"name\":\"g\",\"arguments\":{\"k\":1}}}\nok", "");
}
END_TEST

START_TEST(bad_calls_on_stderr_with_the_reason)
{
	static const char *const bad[] = {
		"a<|tool_call>h{k:1}<tool", "_call|>b<|tool_call>call:h{k:", NULL
	};
	struct pccx_cli_show_opts o = { .events = true };

	expect(&o, bad, "ab",
	       "pccx run: a tool call that does not parse (no 'call:' at the start): h{k:1}\n"
	       "pccx run: a tool call that does not parse (the stream ended inside the call "
	       "(no <tool_call|>)): call:h{k:\n");
}
END_TEST

/* other families: the pieces as they come, markers and all; no tokenizer: the ids */
START_TEST(without_events_verbatim)
{
	static const char *const ids[] = { "a", "b", "c", NULL };
	struct pccx_cli_show_opts o = { .faint = true, .hide_thinking = true };

	expect(&o, thinking, "<|channel>thought\nLet me think<channel|>The answer.", "");
	o.ids = true;
	o.events = true;
	expect(&o, ids, "[100][101][102]", "");
}
END_TEST

/* A tokenizer whose Gemma 4 markers and end of turn are special tokens. */
static pccx_tokenizer *marker_tokenizer(void)
{
	static const char json[] =
		"{\"version\": \"1.0\", \"added_tokens\": ["
		"{\"id\": 0, \"content\": \"<pad>\", \"special\": true},"
		"{\"id\": 1, \"content\": \"<eos>\", \"special\": true},"
		"{\"id\": 2, \"content\": \"<bos>\", \"special\": true},"
		"{\"id\": 3, \"content\": \"<unk>\", \"special\": true},"
		"{\"id\": 4, \"content\": \"<|channel>\", \"special\": true},"
		"{\"id\": 5, \"content\": \"<channel|>\", \"special\": true},"
		"{\"id\": 6, \"content\": \"<turn|>\", \"special\": true}],"
		"\"normalizer\": null, \"pre_tokenizer\": null, \"post_processor\": null,"
		"\"decoder\": {\"type\": \"Fuse\"}, \"model\": {\"type\": \"BPE\", \"dropout\": null,"
		" \"unk_token\": \"<unk>\", \"byte_fallback\": false, \"fuse_unk\": true,"
		" \"vocab\": {\"<pad>\": 0, \"<eos>\": 1, \"<bos>\": 2, \"<unk>\": 3,"
		" \"<|channel>\": 4, \"<channel|>\": 5, \"<turn|>\": 6, \"a\": 7},"
		" \"merges\": []}}";
	pccx_tokenizer *tk = NULL;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_tokenizer_from_json(json, strlen(json), "markers.json", &tk, &d) == 0,
		      "%s", d.msg);
	return tk;
}

/*
 * The session gives special tokens as "": their text is what the parser reads, but for the
 * stop tokens. Without the tokenizer the same ids are not read as markers.
 */
START_TEST(special_tokens_read_as_markers)
{
	static const char *const pieces[] = { "", "thought\nhm", "", "a", "", NULL };
	static const int32_t tokens[] = { 4, 7, 5, 7, 6 };
	static const int32_t stops[] = { 1, 6 };
	pccx_tokenizer *tk = marker_tokenizer();
	struct pccx_cli_show_opts o = { .events = true, .faint = true, .tk = tk, .stops = stops,
					.n_stops = 2 };
	struct shown r = { 0 };

	show(&o, pieces, tokens, &r);
	ck_assert_str_eq(r.out, FAINT "hm" NORMAL "a");
	ck_assert_str_eq(r.err, "");
	free(r.out);
	free(r.err);
	o.tk = NULL;
	show(&o, pieces, tokens, &r);
	ck_assert_str_eq(r.out, "thought\nhma");
	free(r.out);
	free(r.err);
	pccx_tokenizer_free(tk);
}
END_TEST

static Suite *gen_show_suite(void)
{
	Suite *s = suite_create("gen_show");
	TCase *tc = tcase_create("events");

	tcase_add_test(tc, thinking_dimmed_plain_or_hidden);
	tcase_add_test(tc, thinking_to_the_end);
	tcase_add_test(tc, tool_calls_one_json_line_each);
	tcase_add_test(tc, bad_calls_on_stderr_with_the_reason);
	tcase_add_test(tc, without_events_verbatim);
	tcase_add_test(tc, special_tokens_read_as_markers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gen_show_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
