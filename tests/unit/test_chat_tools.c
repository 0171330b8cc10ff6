/* SPDX-License-Identifier: MIT */
/*
 * Tool declarations in Gemma 4's system turn (host/text/chat_tools.c, docs/chat.md "Tools"):
 * tools in OpenAI's form rendered and compared with the text written out here by hand from
 * the format_function_declaration and format_parameters macros of Gemma 4's chat_template
 * (properties in dictsort order, case folded; types upper-cased; <|"|> around strings; the
 * commas of its add_comma logic; the names description/type/properties/required/nullable
 * passed over as property names; every key of an items schema written), with thinking and a
 * system content around them; and the refusals: a format without tools, what the template
 * would write malformed or the Python way. An agent's exchange in OpenAI's messages (the model's
 * tool calls, the results sent back, its answer) compared with the text written out by hand
 * from the template's message loop and format_tool_response_block, and its refusals.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "family.h"
#include "json.h"
#include "pccx/tokenizer.h"

#define Q "<|\"|>"

static const pccx_chat_turn user[] = { { "user", "Weather in Paris?" } };

/* Render `turns` with the tools of `json`; returns the status, *out the text. */
static int render(enum pccx_family fam, const pccx_chat_turn *turns, size_t n, bool thinking,
		  const char *json, char **out, pccx_diag *d)
{
	pccx_json_doc *doc = NULL;
	struct pccx_chat_opts o = { .add_generation_prompt = true, .thinking = thinking };
	int rc;

	ck_assert_msg(pccx__json_parse(json, strlen(json), "tools", NULL, &doc, d) == 0, "%s",
		      d->msg);
	o.tools_doc = doc;
	o.tools = pccx__json_root(doc);
	rc = pccx__chat_render_opts(pccx__chat_format_of(fam), turns, n, &o, out, NULL, d);
	pccx__json_free(doc);
	return rc;
}

static void expect(const pccx_chat_turn *turns, size_t n, bool thinking, const char *json,
		   const char *want)
{
	pccx_diag d = { 0 };
	char *s = NULL;

	ck_assert_msg(render(PCCX_FAMILY_GEMMA4, turns, n, thinking, json, &s, &d) == 0, "%s",
		      d.msg);
	ck_assert_msg(!strcmp(s, want), "rendered\n%s\nwant\n%s", s, want);
	free(s);
}

static void refused(enum pccx_family fam, const char *json, int status, const char *msg)
{
	pccx_diag d = { 0 };
	char *s = NULL;

	ck_assert_int_eq(render(fam, user, 1, false, json, &s, &d), status);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(d.msg, msg), "message \"%s\" lacks \"%s\"", d.msg, msg);
}

static const char weather[] =
	"[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
	"\"description\":\"Get the weather\",\"parameters\":{\"type\":\"object\","
	"\"properties\":{\"location\":{\"type\":\"string\",\"description\":\"City\"},"
	"\"unit\":{\"type\":\"string\",\"enum\":[\"c\",\"f\"]},"
	"\"days\":{\"type\":\"integer\",\"description\":\"Days ahead\"}},"
	"\"required\":[\"location\"]}}}]";

static const char weather_decl[] =
	"<|tool>declaration:get_weather{description:" Q "Get the weather" Q ",parameters:{"
	"properties:{days:{description:" Q "Days ahead" Q ",type:" Q "INTEGER" Q "},"
	"location:{description:" Q "City" Q ",type:" Q "STRING" Q "},"
	"unit:{enum:[" Q "c" Q "," Q "f" Q "],type:" Q "STRING" Q "}},"
	"required:[" Q "location" Q "],type:" Q "OBJECT" Q "}}<tool|>";

/* A system turn of the tools alone; with thinking and system content around them. */
START_TEST(declarations_in_the_system_turn)
{
	static const pccx_chat_turn sys[] = { { "system", " Be brief. " },
					      { "user", "Weather in Paris?" } };
	char want[2048];

	snprintf(want, sizeof(want), "<bos><|turn>system\n%s<turn|>\n"
		 "<|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n", weather_decl);
	expect(user, 1, false, weather, want);
	snprintf(want, sizeof(want), "<bos><|turn>system\n<|think|>\nBe brief.%s<turn|>\n"
		 "<|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n", weather_decl);
	expect(sys, 2, true, weather, want);
	/* the template tests `tools` for truth: [] writes no system turn */
	expect(user, 1, false, "[]", "<bos><|turn>user\nWeather in Paris?<turn|>\n"
	       "<|turn>model\n");
}
END_TEST

/*
 * Nested schemas: an array of objects (every key of items written, null ones passed over),
 * an object's properties and required, nullable, keys sorted case folded, a property named
 * "type" passed over, a function without description, parameters {} left out.
 */
START_TEST(nested_schemas)
{
	static const char tools[] =
		"[{\"type\":\"function\",\"function\":{\"name\":\"add_items\",\"parameters\":{"
		"\"type\":\"object\",\"properties\":{"
		"\"Zeta\":{\"type\":\"boolean\",\"nullable\":true},"
		"\"alpha\":{\"type\":\"array\",\"description\":\"List\",\"items\":{"
		"\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},"
		"\"required\":[\"n\"],\"minimum\":0,\"format\":null}},"
		"\"opts\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}},"
		"\"required\":[\"k\"]},"
		"\"type\":{\"type\":\"string\"}}}}},"
		"{\"type\":\"function\",\"function\":{\"name\":\"ping\",\"description\":\"Ping\","
		"\"parameters\":{}}}]";

	expect(user, 1, false, tools,
	       "<bos><|turn>system\n"
	       "<|tool>declaration:add_items{description:" Q Q ",parameters:{properties:{"
	       "alpha:{description:" Q "List" Q ",items:{minimum:0,properties:{n:{type:" Q
	       "INTEGER" Q "}},required:[" Q "n" Q "],type:" Q "OBJECT" Q "},type:" Q "ARRAY" Q
	       "},"
	       "opts:{properties:{k:{type:" Q "STRING" Q "}},required:[" Q "k" Q "],type:" Q
	       "OBJECT" Q "},"
	       "Zeta:{nullable:true,type:" Q "BOOLEAN" Q "}},type:" Q "OBJECT" Q "}}<tool|>"
	       "<|tool>declaration:ping{description:" Q "Ping" Q "}<tool|>"
	       "<turn|>\n<|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n");
	/* items with a list of types and a nested enum: strings and keys quoted */
	expect(user, 1, false,
	       "[{\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":{\"type\":"
	       "\"object\",\"properties\":{\"xs\":{\"type\":\"array\",\"items\":{\"type\":"
	       "[\"string\",\"null\"],\"enum\":[\"a\",1,true,null],\"x\":{\"B\":1,\"a\":[]}}}}}}}]",
	       "<bos><|turn>system\n<|tool>declaration:f{description:" Q "d" Q ",parameters:{"
	       "properties:{xs:{items:{enum:[" Q "a" Q ",1,true,None],type:[" Q "STRING" Q ","
	       Q "NULL" Q "],x:{" Q "a" Q ":[]," Q "B" Q ":1}},type:" Q "ARRAY" Q "}},type:" Q
	       "OBJECT" Q "}}<tool|><turn|>\n<|turn>user\nWeather in Paris?<turn|>\n"
	       "<|turn>model\n");
}
END_TEST

/* What is refused, and the path or reason the message names. */
START_TEST(refusals)
{
	refused(PCCX_FAMILY_GEMMA3, weather, PCCX_ERR_UNSUPPORTED,
		"the gemma format has no place for tool declarations");
	refused(PCCX_FAMILY_GEMMA4, "{}", PCCX_ERR_INVALID, "expected an array of tools");
	refused(PCCX_FAMILY_GEMMA4, "[{\"type\":\"retrieval\",\"function\":{\"name\":\"f\"}}]",
		PCCX_ERR_INVALID, "[0].type: the only tool type is \"function\"");
	refused(PCCX_FAMILY_GEMMA4, "[{\"type\":\"function\",\"function\":{}}]",
		PCCX_ERR_INVALID, "a function needs a \"name\"");
	refused(PCCX_FAMILY_GEMMA4, "[{\"function\":{\"name\":\"f\",\"parameters\":"
		"{\"properties\":{\"a\":{\"type\":\"string\"}}}}}]", PCCX_ERR_INVALID,
		"parameters need a \"type\"");
	refused(PCCX_FAMILY_GEMMA4, "[{\"function\":{\"name\":\"f\",\"parameters\":{\"type\":"
		"\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"maximum\":"
		"1.5}}}}}}]", PCCX_ERR_INVALID, "not an integer");
	refused(PCCX_FAMILY_GEMMA4, "[{\"function\":{\"name\":\"f\",\"parameters\":{\"type\":"
		"\"object\",\"properties\":{\"a\":{\"type\":\"object\",\"additionalProperties\":"
		"false}}}}}]", PCCX_ERR_INVALID, "additionalProperties: an object schema without");
	refused(PCCX_FAMILY_GEMMA4, "[{\"function\":{\"name\":\"f\",\"parameters\":{\"type\":"
		"\"object\",\"properties\":{\"a\":{\"type\":[\"string\",\"null\"]}}}}}]",
		PCCX_ERR_INVALID, "a list of types is written only in items");
}
END_TEST


/*
 * Render the "messages" of the request `json` (with its "tools", if any) as pccx serve does:
 * role and content (null: "") per turn, each message handed over for its tool fields.
 */
static int render_msgs(enum pccx_family fam, const char *json, char **out, pccx_diag *d)
{
	pccx_json_doc *doc = NULL;
	struct pccx_chat_opts o = { .add_generation_prompt = true };
	const pccx_json *msgs, *m, *c;
	const pccx_json *ptr[16];
	pccx_chat_turn turns[16];
	size_t i, n;
	int rc;

	ck_assert_msg(pccx__json_parse(json, strlen(json), "request", NULL, &doc, d) == 0, "%s",
		      d->msg);
	msgs = pccx__json_get(pccx__json_root(doc), "messages");
	n = pccx__json_count(msgs);
	ck_assert_uint_le(n, 16);
	for (i = 0; i < n; i++) {
		m = pccx__json_at(msgs, i);
		c = pccx__json_get(m, "content");
		turns[i].role = pccx__json_str(pccx__json_get(m, "role"), NULL);
		turns[i].content = c && pccx__json_type_of(c) == PCCX_JSON_STRING ?
				   pccx__json_str(c, NULL) : "";
		ptr[i] = m;
	}
	o.tools_doc = o.msgs_doc = doc;
	o.tools = pccx__json_get(pccx__json_root(doc), "tools");
	o.msgs = ptr;
	rc = pccx__chat_render_opts(pccx__chat_format_of(fam), turns, n, &o, out, NULL, d);
	pccx__json_free(doc);
	return rc;
}

static void expect_msgs(const char *json, const char *want)
{
	pccx_diag d = { 0 };
	char *s = NULL;

	ck_assert_msg(render_msgs(PCCX_FAMILY_GEMMA4, json, &s, &d) == 0, "%s", d.msg);
	ck_assert_msg(!strcmp(s, want), "rendered\n%s\nwant\n%s", s, want);
	free(s);
}

static void refused_msgs(enum pccx_family fam, const char *json, const char *msg)
{
	pccx_diag d = { 0 };
	char *s = NULL;

	ck_assert_int_eq(render_msgs(fam, json, &s, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(d.msg, msg), "message \"%s\" lacks \"%s\"", d.msg, msg);
}

#define SYS_USER "{\"role\":\"system\",\"content\":\"Be brief.\"}," \
		 "{\"role\":\"user\",\"content\":\"Weather in Paris?\"}"
#define CALL "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"Look it up.\"," \
	     "\"tool_calls\":[{\"id\":\"call_7_0\",\"type\":\"function\",\"function\":{\"name\":" \
	     "\"get_weather\",\"arguments\":\"{\\\"location\\\":\\\"Paris\\\",\\\"days\\\":2}\"}}]}"
#define RESULT "{\"role\":\"tool\",\"tool_call_id\":\"call_7_0\",\"content\":\"15 C, sunny\"}"

/* The same exchange as the template writes it, up to the tool's result */
#define HEAD "<bos><|turn>system\nBe brief.%s<turn|>\n<|turn>user\nWeather in Paris?<turn|>\n" \
	     "<|turn>model\n"
#define CALLED "<|tool_call>call:get_weather{days:2,location:" Q "Paris" Q "}<tool_call|>" \
	       "<|tool_response>response:get_weather{value:" Q "15 C, sunny" Q "}<tool_response|>"

/*
 * An agent's exchange: system and tools, the user, the model's call (arguments as a JSON
 * string), the result sent back: the model's turn stays open after the result, without a
 * generation prompt (the model answers in it), its reasoning written as it answers the last
 * user turn. With its answer and a new user turn: the answer closes that turn, the reasoning
 * of a turn before the last user turn is left out, and the generation prompt follows.
 */
START_TEST(agent_exchange)
{
	char json[2048], want[4096];

	snprintf(json, sizeof(json), "{\"tools\":%s,\"messages\":[" SYS_USER "," CALL ","
		 RESULT "]}", weather);
	snprintf(want, sizeof(want), HEAD "<|channel>thought\nLook it up.\n<channel|>" CALLED,
		 weather_decl);
	expect_msgs(json, want);
	snprintf(json, sizeof(json), "{\"tools\":%s,\"messages\":[" SYS_USER "," CALL ","
		 RESULT ",{\"role\":\"assistant\",\"content\":\"It is 15 C and sunny.\"},"
		 "{\"role\":\"user\",\"content\":\"Thanks\"}]}", weather);
	snprintf(want, sizeof(want), HEAD CALLED "It is 15 C and sunny.<turn|>\n"
		 "<|turn>user\nThanks<turn|>\n<|turn>model\n", weather_decl);
	expect_msgs(json, want);
}
END_TEST

/*
 * Two calls in one turn, their arguments objects (keys bare, sorted case folded, values as
 * format_argument writes them: nested objects, lists, true, None), results matched to their
 * calls by id (not by order) or by name; a second round of calls in the same turn; content
 * besides the calls written after the results and closing the turn before a user turn.
 */
START_TEST(calls_and_results)
{
	expect_msgs("{\"messages\":[{\"role\":\"user\",\"content\":\"Go\"},"
		    "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
		    "{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":{\"x\":null,"
		    "\"opts\":{\"Units\":\"c\",\"b\":true},\"l\":[1,\"s\"],\"location\":\"P\"}}},"
		    "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"g\","
		    "\"arguments\":{}}}]},"
		    "{\"role\":\"tool\",\"tool_call_id\":\"b\",\"content\":\" noon \"},"
		    "{\"role\":\"tool\",\"name\":\"f\",\"content\":\"rain\"},"
		    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":"
		    "{\"name\":\"h\"}}]},"
		    "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"ok\"}]}",
		    "<bos><|turn>user\nGo<turn|>\n<|turn>model\n"
		    "<|tool_call>call:f{l:[1," Q "s" Q "],location:" Q "P" Q ",opts:{b:true,"
		    "Units:" Q "c" Q "},x:None}<tool_call|><|tool_call>call:g{}<tool_call|>"
		    "<|tool_response>response:g{value:" Q " noon " Q "}<tool_response|>"
		    "<|tool_response>response:f{value:" Q "rain" Q "}<tool_response|>"
		    "<|tool_call>call:h{}<tool_call|>"
		    "<|tool_response>response:h{value:" Q "ok" Q "}<tool_response|>");
	expect_msgs("{\"messages\":[{\"role\":\"user\",\"content\":\"Go\"},"
		    "{\"role\":\"assistant\",\"content\":\"Checking.\",\"tool_calls\":["
		    "{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
		    "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"done\"},"
		    "{\"role\":\"user\",\"content\":\"And?\"}]}",
		    "<bos><|turn>user\nGo<turn|>\n<|turn>model\n<|tool_call>call:f{}<tool_call|>"
		    "<|tool_response>response:f{value:" Q "done" Q "}<tool_response|>Checking."
		    "<turn|>\n<|turn>user\nAnd?<turn|>\n<|turn>model\n");
}
END_TEST

#define U "{\"role\":\"user\",\"content\":\"Go\"}"
#define TC(args) "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\",\"function\":" \
		 "{\"name\":\"f\",\"arguments\":" args "}}]}"
#define TR "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"r\"}"

/* What the template would drop or leave malformed, and arguments it cannot write. */
START_TEST(call_refusals)
{
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TR "]}",
		     "messages[1]: a tool result follows the assistant message");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TC("{}") "]}",
		     "messages[1]: tool calls need their results");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TC("{}") "," TR "," U "]}",
		     "leaves the model's turn open after the tool results");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U ",{\"role\":\"assistant\","
		     "\"content\":\"x\",\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":"
		     "\"f\"}}]}," TR "]}", "opens no other");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TC("{}") ",{\"role\":"
		     "\"tool\",\"tool_call_id\":\"zz\",\"content\":\"r\"}]}",
		     "messages[2]: a tool result names its call");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TC("\"{x:1}\"") "," TR "]}",
		     "messages[1].tool_calls[0].function.arguments");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TC("\"[1]\"") "," TR "]}",
		     "arguments: the arguments are a JSON object");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U "," TC("{\"t\":21.5}") "," TR "]}",
		     "arguments.t: a number that is not an integer");
	refused_msgs(PCCX_FAMILY_GEMMA4, "{\"messages\":[" U ",{\"role\":\"assistant\","
		     "\"tool_calls\":[{\"id\":\"a\",\"function\":{}}]}," TR "]}",
		     "tool_calls[0].function: a function needs a \"name\"");
	refused_msgs(PCCX_FAMILY_GEMMA3, "{\"messages\":[" U "," TC("{}") "," TR "]}",
		     "messages[1]: this format has no place for tool calls");
	refused_msgs(PCCX_FAMILY_GEMMA3, "{\"messages\":[" U ",{\"role\":\"tool\","
		     "\"content\":\"r\"}]}", "the format has no place for tool results");
}
END_TEST

static Suite *chat_tools_suite(void)
{
	Suite *s = suite_create("chat_tools");
	TCase *tc = tcase_create("gemma4");

	tcase_add_test(tc, declarations_in_the_system_turn);
	tcase_add_test(tc, nested_schemas);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, agent_exchange);
	tcase_add_test(tc, calls_and_results);
	tcase_add_test(tc, call_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(chat_tools_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
