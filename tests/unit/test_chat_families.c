/* SPDX-License-Identifier: MIT */
/*
 * Chat formats of the model families (host/text/chat.c, docs/chat.md): a conversation with a
 * system turn rendered in each family's format against the text written out here from that
 * family's chat_template (Hugging Face tokenizer_config.json: Gemma 3 and 3n fold the system
 * content and a blank line into the first user turn; Gemma 1 and 2 raise on a system turn,
 * and pccx folds it as Gemma 3 does; Gemma 4 writes a system turn of its own, with <|think|>
 * at its top when thinking is asked for, and drops reasoning from earlier model turns), the
 * stop ids each format gives, and the format a loaded model of each family tokenizes its
 * turns in.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat.h"
#include "family.h"
#include "gemma_config.h"
#include "json.h"
#include "pccx/pccx.h"
#include "pccx/tokenizer.h"

/* A conversation with a system turn, and what each family's template makes of it. */
static const pccx_chat_turn conv[] = {
	{ "system", " Answer in one word. " },
	{ "user", "  What is red?\n" },
	{ "assistant", "\tA colour. " },
	{ "user", "And blue?" },
};

static const struct {
	enum pccx_family family;
	const char *with_system;	/* conv rendered with the generation prompt */
	const char *without_system;	/* conv[1..3] rendered without it */
	const char *gen_prompt;		/* the generation prompt */
	const char *hi_turn;		/* "  hi\n" as the first user turn, with the generation prompt */
	const char *ok_turn;		/* " ok " as the model's turn */
	const char *stop;		/* the end of turn */
} want[] = {
	{
		/* Gemma 3n's template is Gemma 3's: the system content, untrimmed, then "\n\n" */
		PCCX_FAMILY_GEMMA3N,
		"<bos><start_of_turn>user\n Answer in one word. \n\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n<start_of_turn>model\n",
		"<bos><start_of_turn>user\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n",
		"<start_of_turn>model\n",
		"<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
		"ok<end_of_turn>\n",
		"<end_of_turn>",
	},
	{
		/* Gemma 1: its template raises on the system turn; pccx folds it as Gemma 3 does */
		PCCX_FAMILY_GEMMA,
		"<bos><start_of_turn>user\n Answer in one word. \n\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n<start_of_turn>model\n",
		"<bos><start_of_turn>user\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n",
		"<start_of_turn>model\n",
		"<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
		"ok<end_of_turn>\n",
		"<end_of_turn>",
	},
	{
		/* Gemma 2: the template of Gemma 1 */
		PCCX_FAMILY_GEMMA2,
		"<bos><start_of_turn>user\n Answer in one word. \n\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n<start_of_turn>model\n",
		"<bos><start_of_turn>user\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n",
		"<start_of_turn>model\n",
		"<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
		"ok<end_of_turn>\n",
		"<end_of_turn>",
	},
	{
		PCCX_FAMILY_GEMMA3,
		"<bos><start_of_turn>user\n Answer in one word. \n\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n<start_of_turn>model\n",
		"<bos><start_of_turn>user\nWhat is red?<end_of_turn>\n"
		"<start_of_turn>model\nA colour.<end_of_turn>\n"
		"<start_of_turn>user\nAnd blue?<end_of_turn>\n",
		"<start_of_turn>model\n",
		"<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
		"ok<end_of_turn>\n",
		"<end_of_turn>",
	},
	{
		/*
		 * Gemma 4: the system turn is its own, its content trimmed; the model's turns are
		 * trimmed, reasoning channels removed (the check below)
		 */
		PCCX_FAMILY_GEMMA4,
		"<bos><|turn>system\nAnswer in one word.<turn|>\n"
		"<|turn>user\nWhat is red?<turn|>\n"
		"<|turn>model\nA colour.<turn|>\n"
		"<|turn>user\nAnd blue?<turn|>\n<|turn>model\n",
		"<bos><|turn>user\nWhat is red?<turn|>\n"
		"<|turn>model\nA colour.<turn|>\n"
		"<|turn>user\nAnd blue?<turn|>\n",
		"<|turn>model\n",
		"<bos><|turn>user\nhi<turn|>\n<|turn>model\n",
		"ok<turn|>\n",
		"<turn|>",
	},
};

#define NWANT (sizeof(want) / sizeof(want[0]))

static const __typeof__(want[0]) *want_of(enum pccx_family family)
{
	size_t i;

	for (i = 0; i < NWANT && want[i].family != family; i++)
		;
	ck_assert_msg(i < NWANT, "%s: no expected rendering", pccx__family(family)->title);
	return &want[i];
}

/*
 * The families above have a format; a family with a format has its expected rendering above
 * (a family whose format is not filled in yet has none, and rendering in it is refused).
 */
START_TEST(families_with_a_format_are_checked)
{
	size_t i;
	int f;

	for (i = 0; i < NWANT; i++)
		ck_assert_msg(pccx__chat_format_of(want[i].family) != NULL, "%s: no chat format",
			      pccx__family(want[i].family)->title);
	for (f = 0; f < PCCX_FAMILIES; f++) {
		for (i = 0; i < NWANT && want[i].family != (enum pccx_family)f; i++)
			;
		ck_assert_msg(i < NWANT || !pccx__chat_format_of(f),
			      "%s: a chat format without an expected rendering here",
			      pccx__family(f)->title);
	}
	ck_assert_ptr_null(pccx__chat_format_of(PCCX_FAMILIES));
}
END_TEST

START_TEST(system_turn_per_family)
{
	size_t i;

	for (i = 0; i < NWANT; i++) {
		const struct pccx_chat_format *fmt = pccx__chat_format_of(want[i].family);
		const char *title = pccx__family(want[i].family)->title;
		char *s = NULL;
		size_t len = 0;
		pccx_diag d = { 0 };

		ck_assert_msg(pccx__chat_render(fmt, conv, 4, true, &s, &len, &d) == 0, "%s: %s",
			      title, d.msg);
		ck_assert_msg(!strcmp(s, want[i].with_system), "%s: rendered\n%s", title, s);
		ck_assert_uint_eq(len, strlen(want[i].with_system));
		free(s);
		ck_assert_msg(pccx__chat_render(fmt, conv + 1, 3, false, &s, &len, &d) == 0,
			      "%s: %s", title, d.msg);
		ck_assert_msg(!strcmp(s, want[i].without_system), "%s: rendered\n%s", title, s);
		free(s);
	}
}
END_TEST

/* Turn by turn, the pieces put together are the whole conversation (no system turn). */
START_TEST(turns_put_together_per_family)
{
	size_t i, k;

	for (i = 0; i < NWANT; i++) {
		const struct pccx_chat_format *fmt = pccx__chat_format_of(want[i].family);
		char all[512] = "";
		pccx_diag d = { 0 };

		for (k = 1; k < 4; k++) {
			char *s = NULL;
			size_t len = 0;

			ck_assert_msg(pccx__chat_render_turn(fmt, conv[k].role, conv[k].content,
							     k == 1, &s, &len, &d) == 0, "%s",
				      d.msg);
			ck_assert_uint_lt(strlen(all) + len, sizeof(all));
			strcat(all, s);
			free(s);
		}
		/* the last user turn opened the model's reply: the generation prompt */
		ck_assert_msg(!strncmp(all, want[i].without_system,
				       strlen(want[i].without_system)), "%s",
			      pccx__family(want[i].family)->title);
		ck_assert_str_eq(all + strlen(want[i].without_system), want[i].gen_prompt);
		/* and the rendering with a system turn ends so too */
		ck_assert_str_eq(want[i].with_system + strlen(want[i].with_system) -
				 strlen(want[i].gen_prompt), want[i].gen_prompt);
	}
}
END_TEST

/* render `turns` in Gemma 4's format and compare with `expect` */
static void expect_gemma4(const pccx_chat_turn *turns, size_t n, bool thinking,
			  const char *expect)
{
	struct pccx_chat_opts o = { .add_generation_prompt = true, .thinking = thinking };
	char *s = NULL;
	size_t len = 0;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx__chat_render_opts(pccx__chat_format_of(PCCX_FAMILY_GEMMA4), turns, n,
					     &o, &s, &len, &d) == 0, "%s", d.msg);
	ck_assert_msg(!strcmp(s, expect), "rendered\n%s\nwant\n%s", s, expect);
	ck_assert_uint_eq(len, strlen(expect));
	free(s);
}

/*
 * Gemma 4's thinking switch: <|think|> and a newline at the top of the system turn, which is
 * then written without system content too; a format without the switch refuses it.
 */
START_TEST(gemma4_thinking)
{
	struct pccx_chat_opts o = { .add_generation_prompt = true, .thinking = true };
	char *s = NULL;
	pccx_diag d = { 0 };

	expect_gemma4(conv, 4, true,
		      "<bos><|turn>system\n<|think|>\nAnswer in one word.<turn|>\n"
		      "<|turn>user\nWhat is red?<turn|>\n<|turn>model\nA colour.<turn|>\n"
		      "<|turn>user\nAnd blue?<turn|>\n<|turn>model\n");
	expect_gemma4(conv + 1, 1, true,
		      "<bos><|turn>system\n<|think|>\n<turn|>\n"
		      "<|turn>user\nWhat is red?<turn|>\n<|turn>model\n");
	expect_gemma4(conv + 1, 1, false, "<bos><|turn>user\nWhat is red?<turn|>\n<|turn>model\n");
	/* an empty system content still makes the turn, as the template writes it */
	expect_gemma4((const pccx_chat_turn[]){ { "system", " " }, { "user", "x" } }, 2, false,
		      "<bos><|turn>system\n<turn|>\n<|turn>user\nx<turn|>\n<|turn>model\n");
	ck_assert_int_eq(pccx__chat_render_opts(pccx__chat_format_of(PCCX_FAMILY_GEMMA3), conv, 4,
						&o, &s, NULL, &d), PCCX_ERR_UNSUPPORTED);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(d.msg, "gemma format has no thinking switch"), "%s", d.msg);
}
END_TEST

/*
 * Earlier model turns lose their reasoning as the template's strip_thinking has it: of each
 * piece up to <channel|>, what precedes <|channel>; then the content is trimmed. Gemma 3's
 * format keeps the bytes.
 */
START_TEST(gemma4_strips_reasoning)
{
	static const char *const model[][2] = {
		{ " <|channel>thought\nred is a colour<channel|>Red.<|channel>x<channel|> Yes ",
		  "Red. Yes" },
		{ "A<|channel>thought\nnever closed", "A" },
		{ "B<channel|>C", "BC" },
		{ "<|channel>thought\nonly reasoning<channel|>", "" },
	};
	size_t i;

	for (i = 0; i < sizeof(model) / sizeof(model[0]); i++) {
		const pccx_chat_turn turns[] = { { "user", "Q" }, { "assistant", model[i][0] },
						 { "user", "R" } };
		char expect[256], *s = NULL;
		size_t len = 0;
		pccx_diag d = { 0 };

		snprintf(expect, sizeof(expect), "<bos><|turn>user\nQ<turn|>\n<|turn>model\n%s"
			 "<turn|>\n<|turn>user\nR<turn|>\n<|turn>model\n", model[i][1]);
		expect_gemma4(turns, 3, false, expect);
		/* turn by turn, a model turn's content is written the same way */
		ck_assert_int_eq(pccx__chat_render_turn(pccx__chat_format_of(PCCX_FAMILY_GEMMA4),
							"model", model[i][0], false, &s, &len,
							&d), 0);
		snprintf(expect, sizeof(expect), "%s<turn|>\n", model[i][1]);
		ck_assert_str_eq(s, expect);
		free(s);
	}
	{
		const pccx_chat_turn turns[] = { { "user", "Q" }, { "assistant", model[0][0] } };
		char *s = NULL;
		pccx_diag d = { 0 };

		ck_assert_int_eq(pccx__chat_render(pccx__chat_format_of(PCCX_FAMILY_GEMMA3), turns, 2,
						   false, &s, NULL, &d), 0);
		ck_assert_str_eq(s, "<bos><start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n"
				 "<|channel>thought\nred is a colour<channel|>Red.<|channel>x"
				 "<channel|> Yes<end_of_turn>\n");
		free(s);
	}
}
END_TEST

/* ---- with a tokenizer: stop ids, and the turns of a loaded model --------------------------- */

enum { T_EOS = 1, T_BOS = 2, T_BYTE0 = 4, T_SP = 260, T_SOT, T_EOT, T_SOT4, T_EOT4, T_TR4, T_N };

/* A byte-fallback tokenizer.json with Gemma's and Gemma 4's turn tokens at ids of its own. */
static char *tiny_tokenizer_json(void)
{
	size_t cap = 16384, n = 0, i;
	char *p = malloc(cap);

	ck_assert_ptr_nonnull(p);
	n += (size_t)snprintf(p + n, cap - n, "{\"version\": \"1.0\", \"added_tokens\": ["
		"{\"id\": 0, \"content\": \"<pad>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<eos>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<bos>\", \"special\": true},"
		"{\"id\": 3, \"content\": \"<unk>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<start_of_turn>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<end_of_turn>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<|turn>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<turn|>\", \"special\": true},"
		"{\"id\": %d, \"content\": \"<|tool_response>\", \"special\": true}],"
		"\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"},"
		" \"content\": \"\\u2581\"},"
		"\"pre_tokenizer\": null, \"post_processor\": null,"
		"\"decoder\": {\"type\": \"Sequence\", \"decoders\": ["
		"{\"type\": \"Replace\", \"pattern\": {\"String\": \"\\u2581\"},"
		" \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},"
		"\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\","
		" \"byte_fallback\": true, \"fuse_unk\": true, \"vocab\": {\"<pad>\": 0,"
		" \"<eos>\": %d, \"<bos>\": %d, \"<unk>\": 3", T_EOS, T_BOS, T_SOT, T_EOT, T_SOT4,
		T_EOT4, T_TR4, T_EOS, T_BOS);
	for (i = 0; i < 256; i++)
		n += (size_t)snprintf(p + n, cap - n, ", \"<0x%02X>\": %zu", (unsigned)i,
				      T_BYTE0 + i);
	n += (size_t)snprintf(p + n, cap - n, ", \"\\u2581\": %d, \"<start_of_turn>\": %d,"
			      " \"<end_of_turn>\": %d, \"<|turn>\": %d, \"<turn|>\": %d,"
			      " \"<|tool_response>\": %d}, \"merges\": []}}", T_SP, T_SOT, T_EOT,
			      T_SOT4, T_EOT4, T_TR4);
	ck_assert_uint_lt(n, cap);
	return p;
}

START_TEST(stop_ids_per_family)
{
	char *json = tiny_tokenizer_json();
	pccx_tokenizer *tk = NULL;
	pccx_diag d = { 0 };
	int32_t ids[PCCX_CHAT_MAX_STOPS + 1];
	size_t i;

	ck_assert_msg(pccx_tokenizer_from_json(json, strlen(json), "tiny.json", &tk, &d) == 0,
		      "%s", d.msg);
	for (i = 0; i < NWANT; i++) {
		const struct pccx_chat_format *fmt = pccx__chat_format_of(want[i].family);

		bool g4 = !strcmp(want[i].stop, "<turn|>");

		/*
		 * the tokenizer's EOS and the format's end of turn; Gemma 4's turn also ends at
		 * <|tool_response>, where the template hands a call over to its result
		 */
		ck_assert_uint_eq(pccx__chat_stop_ids(fmt, tk, ids), g4 ? 3 : 2);
		ck_assert_int_eq(ids[0], T_EOS);
		ck_assert_int_eq(ids[1], g4 ? T_EOT4 : T_EOT);
		if (g4)
			ck_assert_int_eq(ids[2], T_TR4);
	}
	pccx_tokenizer_free(tk);
	free(json);
}
END_TEST

static void expect_ids(const pccx_tokenizer *tk, const int32_t *got, size_t n, const char *text,
		       const char *what)
{
	int32_t *ids = NULL;
	size_t n_ids = 0;
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_tokenizer_encode(tk, text, strlen(text), 0, &ids, &n_ids, &d) == 0,
		      "%s", d.msg);
	ck_assert_msg(n == n_ids && !memcmp(got, ids, n * sizeof(*ids)), "%s: %zu ids, want %zu",
		      what, n, n_ids);
	free(ids);
}

/*
 * A synthetic model of each family with a format (its tiny preset) and the tokenizer above:
 * its session's format is the family's, and its chat prompt and turns are tokenized in it.
 */
START_TEST(loaded_model_per_family)
{
	char path[] = "/tmp/pccx-chat-families-XXXXXX";
	char *json = tiny_tokenizer_json();
	bool seen[PCCX_FAMILIES] = { false };
	const struct pccx_gemma_config *cfg;
	int fd = mkstemp(path);
	unsigned i;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	for (i = 0; (cfg = pccx__gemma_config_at(i)); i++) {
		struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
		struct pccx_model_opts mopt = { sizeof(mopt), NULL, cfg->name, 1, path, NULL,
						NULL };
		struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = false };
		pccx_device *dev = NULL;
		pccx_model *model = NULL;
		pccx_session *s = NULL;
		pccx_diag d = { 0 };
		int32_t *ids = NULL;
		size_t n = 0;

		if (strncmp(cfg->name, "tiny", 4) || cfg->vocab > 1024 || seen[cfg->family] ||
		    !pccx__chat_format_of(cfg->family))
			continue;
		seen[cfg->family] = true;
		ck_assert_msg(pccx_device_open(&dopt, &dev, &d) == 0 &&
			      pccx_model_load(dev, &mopt, &model, &d) == 0 &&
			      pccx_session_create(model, &sopt, &s, &d) == 0, "%s: %s", cfg->name,
			      d.msg);
		ck_assert_ptr_eq(pccx__session_chat_format(s), pccx__chat_format_of(cfg->family));
		ck_assert_int_eq(pccx_session_tokenize(s, "  hi\n", true, &ids, &n, &d), 0);
		expect_ids(pccx_session_tokenizer(s), ids, n, want_of(cfg->family)->hi_turn,
			   cfg->name);
		free(ids);
		ck_assert_int_eq(pccx_session_tokenize_turn(s, "model", " ok ", false, &ids, &n, &d),
				 0);
		expect_ids(pccx_session_tokenizer(s), ids, n, want_of(cfg->family)->ok_turn,
			   cfg->name);
		free(ids);
		pccx_session_free(s);
		pccx_model_free(model);
		pccx_device_close(dev);
	}
	unlink(path);
	free(json);
	for (i = 0; i < NWANT; i++)
		ck_assert_msg(seen[want[i].family], "%s: no tiny preset",
			      pccx__family(want[i].family)->title);
}
END_TEST

/*
 * Gemma 4's agent loop through the public API: a call in a model turn and its result as the
 * last turn, their tool fields passed as messages (pccx_chat_options.messages), tokenize as
 * the renderer writes them (test_chat_tools checks that text against the template); without
 * messages a last tool turn is refused, and so are messages that do not match the turns.
 */
START_TEST(gemma4_agent_loop_through_the_api)
{
	char path[] = "/tmp/pccx-chat-families-XXXXXX";
	char *json = tiny_tokenizer_json(), *text = NULL;
	static const char msgs[] = "[{\"role\": \"user\"}, {\"role\": \"assistant\", "
		"\"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", "
		"\"function\": {\"name\": \"get_weather\", \"arguments\": "
		"\"{\\\"city\\\": \\\"Paris\\\"}\"}}]}, {\"role\": \"tool\", "
		"\"tool_call_id\": \"c1\", \"content\": \"sunny\"}]";
	const pccx_chat_turn turns[] = {
		{ "user", "Weather in Paris?" }, { "assistant", "" }, { "tool", "sunny" },
	};
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny-gemma4", 1, path, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = false };
	struct pccx_chat_options o = { .struct_size = sizeof(o), .messages = msgs };
	struct pccx_chat_opts ro = { .add_generation_prompt = true };
	const pccx_json *m[3];
	pccx_json_doc *doc = NULL;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	pccx_diag d = { 0 };
	int32_t *ids = NULL;
	size_t n = 0, len, i;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	ck_assert_msg(pccx_device_open(&dopt, &dev, &d) == 0 &&
		      pccx_model_load(dev, &mopt, &model, &d) == 0 &&
		      pccx_session_create(model, &sopt, &s, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_tokenize_chat(s, turns, 3, &o, &ids, &n, &d) == 0, "%s",
		      d.msg);
	/* the same text the renderer writes from the same messages */
	ck_assert_int_eq(pccx__json_parse(msgs, strlen(msgs), "m", NULL, &doc, &d), 0);
	for (i = 0; i < 3; i++)
		m[i] = pccx__json_at(pccx__json_root(doc), i);
	ro.msgs_doc = doc;
	ro.msgs = m;
	ck_assert_msg(pccx__chat_render_opts(pccx__chat_format_of(PCCX_FAMILY_GEMMA4), turns, 3,
					     &ro, &text, &len, &d) == 0, "%s", d.msg);
	ck_assert_ptr_nonnull(strstr(text, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}"
				     "<tool_call|><|tool_response>response:get_weather{value:"
				     "<|\"|>sunny<|\"|>}<tool_response|>"));
	expect_ids(pccx_session_tokenizer(s), ids, n, text, "agent loop");
	free(ids);
	free(text);
	pccx__json_free(doc);
	/* refusals */
	o.messages = NULL;
	ck_assert_int_eq(pccx_session_tokenize_chat(s, turns, 3, &o, &ids, &n, &d),
			 PCCX_ERR_INVALID);
	o.messages = "[{}, {}]";
	ck_assert_int_eq(pccx_session_tokenize_chat(s, turns, 3, &o, &ids, &n, &d),
			 PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "one entry per turn"));
	o.messages = "[{";
	ck_assert_int_eq(pccx_session_tokenize_chat(s, turns, 3, &o, &ids, &n, &d),
			 PCCX_ERR_INVALID);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	unlink(path);
	free(json);
}
END_TEST

static Suite *chat_families_suite(void)
{
	Suite *s = suite_create("chat_families");
	TCase *tc = tcase_create("formats");

	tcase_add_test(tc, families_with_a_format_are_checked);
	tcase_add_test(tc, system_turn_per_family);
	tcase_add_test(tc, turns_put_together_per_family);
	tcase_add_test(tc, gemma4_thinking);
	tcase_add_test(tc, gemma4_strips_reasoning);
	tcase_add_test(tc, stop_ids_per_family);
	tcase_add_test(tc, loaded_model_per_family);
	tcase_add_test(tc, gemma4_agent_loop_through_the_api);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(chat_families_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
