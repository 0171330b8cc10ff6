/* SPDX-License-Identifier: MIT */
/*
 * Tool declarations in Gemma 4's system turn (host/text/chat_tools.c, docs/chat.md "Tools"):
 * tools in OpenAI's form rendered and compared with the text written out here by hand from
 * the format_function_declaration and format_parameters macros of Gemma 4's chat_template
 * (properties in dictsort order, case folded; types upper-cased; <|"|> around strings; the
 * commas of its add_comma logic; the names description/type/properties/required/nullable
 * passed over as property names; every key of an items schema written), with thinking and a
 * system content around them; and the refusals: a format without tools, what the template
 * would write malformed or the Python way.
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

static Suite *chat_tools_suite(void)
{
	Suite *s = suite_create("chat_tools");
	TCase *tc = tcase_create("gemma4");

	tcase_add_test(tc, declarations_in_the_system_turn);
	tcase_add_test(tc, nested_schemas);
	tcase_add_test(tc, refusals);
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
