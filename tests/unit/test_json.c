/* SPDX-License-Identifier: MIT */
/* Strict JSON parser: accepted documents, DOM access, checked getters, refused input. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"

static pccx_json_doc *parse_ok(const char *text)
{
	pccx_json_doc *doc = NULL;
	pccx_diag d = { 0 };
	int rc = pccx__json_parse(text, strlen(text), "t.json", NULL, &doc, &d);

	ck_assert_msg(rc == 0, "parse of '%s' failed: %s", text, d.msg);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

/* Parse must fail with `status` and a message containing `needle`. */
static void parse_bad_n(const char *text, size_t len, int status, const char *needle)
{
	pccx_json_doc *doc = (pccx_json_doc *)1;
	pccx_diag d = { 0 };
	int rc = pccx__json_parse(text, len, "t.json", NULL, &doc, &d);

	ck_assert_msg(rc == status, "'%s': expected %d, got %d (%s)", text, status, rc, d.msg);
	ck_assert_ptr_null(doc);
	ck_assert_msg(strstr(d.msg, needle) != NULL, "'%s': message '%s' lacks '%s'", text, d.msg,
		      needle);
	ck_assert_msg(strncmp(d.msg, "t.json: ", 8) == 0, "message '%s' does not name the file",
		      d.msg);
}

static void parse_bad(const char *text, const char *needle)
{
	parse_bad_n(text, strlen(text), PCCX_ERR_FORMAT, needle);
}

START_TEST(scalars)
{
	pccx_json_doc *doc;
	const pccx_json *r;

	doc = parse_ok(" true ");
	ck_assert_int_eq(pccx__json_type_of(pccx__json_root(doc)), PCCX_JSON_BOOL);
	ck_assert(pccx__json_bool(pccx__json_root(doc)));
	pccx__json_free(doc);

	doc = parse_ok("null");
	ck_assert_int_eq(pccx__json_type_of(pccx__json_root(doc)), PCCX_JSON_NULL);
	pccx__json_free(doc);

	doc = parse_ok("\n\t-0.5e+2\r\n");
	r = pccx__json_root(doc);
	ck_assert_int_eq(pccx__json_type_of(r), PCCX_JSON_NUMBER);
	ck_assert(!pccx__json_is_int(r));
	ck_assert(pccx__json_num(r) == -50.0);
	pccx__json_free(doc);
}
END_TEST

START_TEST(integers_exact)
{
	pccx_json_doc *doc = parse_ok("[9223372036854775807, -9223372036854775808, "
				      "9223372036854775808, 0, -0, 12345678901234567]");
	const pccx_json *a = pccx__json_root(doc);

	ck_assert_uint_eq(pccx__json_count(a), 6);
	ck_assert(pccx__json_is_int(pccx__json_at(a, 0)));
	ck_assert(pccx__json_int(pccx__json_at(a, 0)) == INT64_MAX);
	ck_assert(pccx__json_int(pccx__json_at(a, 1)) == INT64_MIN);
	/* One past INT64_MAX is still a valid number, but only as a double. */
	ck_assert(!pccx__json_is_int(pccx__json_at(a, 2)));
	ck_assert(pccx__json_num(pccx__json_at(a, 2)) == 9223372036854775808.0);
	ck_assert(pccx__json_int(pccx__json_at(a, 3)) == 0);
	ck_assert(pccx__json_is_int(pccx__json_at(a, 4)));
	ck_assert(pccx__json_int(pccx__json_at(a, 5)) == 12345678901234567LL);
	pccx__json_free(doc);
}
END_TEST

START_TEST(doubles_round_correctly)
{
	pccx_json_doc *doc = parse_ok("[0.1, 1e-400, 2.2250738585072014e-308,"
				      " 1.7976931348623157e308, 5e-324,"
				      " 123456789012345678901234567890]");
	const pccx_json *a = pccx__json_root(doc);

	ck_assert(pccx__json_num(pccx__json_at(a, 0)) == 0.1);
	ck_assert(pccx__json_num(pccx__json_at(a, 1)) == 0.0);
	ck_assert(pccx__json_num(pccx__json_at(a, 2)) == 2.2250738585072014e-308);
	ck_assert(pccx__json_num(pccx__json_at(a, 3)) == 1.7976931348623157e308);
	ck_assert(pccx__json_num(pccx__json_at(a, 4)) == 5e-324);
	ck_assert(pccx__json_num(pccx__json_at(a, 5)) == 1.2345678901234568e29);
	pccx__json_free(doc);
}
END_TEST

START_TEST(string_escapes)
{
	pccx_json_doc *doc = parse_ok("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\","
				      " \"\\ud83d\\ude00\", \"x\\u0000y\", \"\","
				      " \"\xc3\xa9\xf0\x9f\x98\x80\"]");
	const pccx_json *a = pccx__json_root(doc);
	size_t n;
	const char *s;

	s = pccx__json_str(pccx__json_at(a, 0), &n);
	ck_assert_uint_eq(n, 12);
	ck_assert_mem_eq(s, "a\"b\\c/d\b\f\n\r\t", 12);
	s = pccx__json_str(pccx__json_at(a, 1), &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(s, "\xc3\xa9\xe2\x82\xac");
	s = pccx__json_str(pccx__json_at(a, 2), &n);
	ck_assert_str_eq(s, "\xf0\x9f\x98\x80");
	s = pccx__json_str(pccx__json_at(a, 3), &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_mem_eq(s, "x\0y", 4);
	s = pccx__json_str(pccx__json_at(a, 4), &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_str_eq(s, "");
	ck_assert_str_eq(pccx__json_str(pccx__json_at(a, 5), NULL), "\xc3\xa9\xf0\x9f\x98\x80");
	pccx__json_free(doc);
}
END_TEST

START_TEST(objects_and_lookup)
{
	pccx_json_doc *doc = parse_ok("{\"model\": {\"type\": \"BPE\","
				      " \"vocab\": {\"a\": 0, \"b\": 1},"
				      " \"list\": [[], {}, [1, [2]]]}, \"k\\u0065y\": 3}");
	const pccx_json *root = pccx__json_root(doc), *model, *vocab, *list;
	size_t kl;

	ck_assert_uint_eq(pccx__json_count(root), 2);
	model = pccx__json_get(root, "model");
	ck_assert_int_eq(pccx__json_type_of(model), PCCX_JSON_OBJECT);
	ck_assert_str_eq(pccx__json_str(pccx__json_get(model, "type"), NULL), "BPE");
	vocab = pccx__json_get(model, "vocab");
	ck_assert_uint_eq(pccx__json_count(vocab), 2);
	ck_assert_str_eq(pccx__json_key(pccx__json_at(vocab, 1), &kl), "b");
	ck_assert_uint_eq(kl, 1);
	ck_assert(pccx__json_int(pccx__json_at(vocab, 1)) == 1);
	list = pccx__json_get(model, "list");
	ck_assert_uint_eq(pccx__json_count(pccx__json_at(list, 0)), 0);
	ck_assert_int_eq(pccx__json_type_of(pccx__json_at(list, 1)), PCCX_JSON_OBJECT);
	ck_assert(pccx__json_int(pccx__json_at(pccx__json_at(pccx__json_at(list, 2), 1), 0)) == 2);
	/* Escaped key is compared in its decoded form. */
	ck_assert(pccx__json_int(pccx__json_get(root, "key")) == 3);
	/* Chained lookups through missing members are NULL, never a crash. */
	ck_assert_ptr_null(pccx__json_get(pccx__json_get(root, "nope"), "x"));
	ck_assert_ptr_null(pccx__json_at(list, 3));
	ck_assert_ptr_null(pccx__json_key(root, NULL));
	pccx__json_free(doc);
}
END_TEST

START_TEST(checked_getters_name_the_path)
{
	pccx_json_doc *doc = parse_ok("{\"cfg\": {\"n\": 7, \"f\": 1.5, \"s\": \"x\", \"b\": true,"
				      " \"big\": 99, \"z\": null}, \"arr\": [{\"id\": \"oops\"}],"
				      " \"blk.0.w\": {\"dtype\": 3}}");
	const pccx_json *root = pccx__json_root(doc), *cfg = pccx__json_get(root, "cfg");
	pccx_diag d = { 0 };
	int64_t i = 0;
	double f = 0;
	const char *s = NULL;
	bool b = false;

	ck_assert_int_eq(pccx__json_get_i64(doc, cfg, "n", 0, 10, &i, &d), 0);
	ck_assert(i == 7);
	ck_assert_int_eq(pccx__json_get_double(doc, cfg, "f", &f, &d), 0);
	ck_assert(f == 1.5);
	ck_assert_int_eq(pccx__json_get_string(doc, cfg, "s", &s, NULL, &d), 0);
	ck_assert_str_eq(s, "x");
	ck_assert_int_eq(pccx__json_get_bool(doc, cfg, "b", &b, &d), 0);
	ck_assert(b);

	ck_assert_int_eq(pccx__json_get_i64(doc, cfg, "big", 0, 10, &i, &d), PCCX_ERR_RANGE);
	ck_assert_str_eq(d.msg, "t.json: cfg.big: 99 is outside [0, 10]");
	ck_assert_int_eq(pccx__json_get_i64(doc, cfg, "f", 0, 10, &i, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "t.json: cfg.f: expected an integer literal, got 1.5");
	ck_assert_int_eq(pccx__json_get_string(doc, cfg, "missing", &s, NULL, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "t.json: cfg.missing: missing");
	ck_assert_int_eq(pccx__json_get_i64(doc, pccx__json_at(pccx__json_get(root, "arr"), 0), "id",
					    0, 10, &i, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "t.json: arr[0].id: expected integer, got string");
	ck_assert_int_eq(pccx__json_get_string(doc, pccx__json_get(root, "blk.0.w"), "dtype", &s,
					       NULL, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "t.json: [\"blk.0.w\"].dtype: expected string, got number");
	ck_assert_int_eq(pccx__json_expect(doc, cfg, PCCX_JSON_ARRAY, &d), PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "t.json: cfg: expected array, got object");

	/* Optional getters: absent and null leave the output alone. */
	i = 42;
	ck_assert_int_eq(pccx__json_opt_i64(doc, cfg, "absent", 0, 100, &i, &d), 0);
	ck_assert_int_eq(pccx__json_opt_i64(doc, cfg, "z", 0, 100, &i, &d), 0);
	ck_assert(i == 42);
	ck_assert_int_eq(pccx__json_opt_i64(doc, cfg, "n", 0, 100, &i, &d), 0);
	ck_assert(i == 7);
	ck_assert_int_eq(pccx__json_opt_bool(doc, cfg, "s", &b, &d), PCCX_ERR_FORMAT);
	pccx__json_free(doc);
}
END_TEST

START_TEST(refuses_malformed)
{
	parse_bad("", "expected a value, got end of input");
	parse_bad("   ", "end of input");
	parse_bad("[1,2,]", "trailing comma before ']'");
	parse_bad("{\"a\":1,}", "trailing comma before '}'");
	parse_bad("{\"a\":1 \"b\":2}", "expected ',' or '}' in object opened at byte 0");
	parse_bad("[1 2]", "expected ',' or ']'");
	parse_bad("{\"a\" 1}", "expected ':' after key");
	parse_bad("{1:2}", "expected a string key");
	parse_bad("{\"a\":1,\"a\":2}", "duplicate key \"a\"");
	parse_bad("01", "leading zeros");
	parse_bad("-", "'-' must be followed by a digit");
	parse_bad("+1", "expected a value, got '+'");
	parse_bad(".5", "expected a value, got '.'");
	parse_bad("1.", "a digit must follow the decimal point");
	parse_bad("1e", "a digit must follow the exponent");
	parse_bad("1e+", "a digit must follow the exponent");
	parse_bad("0x10", "unexpected 'x' after the top-level value");
	parse_bad("NaN", "expected a value, got 'N'");
	parse_bad("[Infinity]", "expected a value, got 'I'");
	parse_bad("[1e400]", "number overflows a double");
	parse_bad("[-1e400]", "number overflows a double");
	parse_bad("tru", "invalid literal");
	parse_bad("nul", "invalid literal");
	parse_bad("[true false]", "expected ',' or ']'");
	parse_bad("{} {}", "after the top-level value");
	parse_bad("\"abc", "unterminated string");
	parse_bad("\"abc\\", "unterminated string");
	parse_bad("\"a\tb\"", "unescaped control character 0x09");
	parse_bad("\"\\x\"", "invalid escape");
	parse_bad("\"\\u12\"", "four hex digits");
	parse_bad("\"\\ud800\"", "high surrogate \\uD800 not followed by a low surrogate");
	parse_bad("\"\\ud800\\u0041\"", "not followed by a low surrogate");
	parse_bad("\"\\udc00\"", "lone low surrogate \\uDC00");
	parse_bad("/* c */ 1", "expected a value, got '/'");
	parse_bad("[1] // c", "after the top-level value");
	parse_bad("'a'", "expected a value, got '''");
}
END_TEST

START_TEST(refuses_bad_utf8)
{
	parse_bad("\"\xff\"", "invalid UTF-8");
	parse_bad("\"\xc0\xaf\"", "invalid UTF-8");		/* overlong '/' */
	parse_bad("\"\xe0\x80\xaf\"", "invalid UTF-8");		/* overlong */
	parse_bad("\"\xed\xa0\x80\"", "invalid UTF-8");		/* UTF-16 surrogate */
	parse_bad("\"\xf4\x90\x80\x80\"", "invalid UTF-8");	/* > U+10FFFF */
	parse_bad("\"\xe2\x82\"", "invalid UTF-8");		/* truncated */
	parse_bad("\"\x80\"", "invalid UTF-8");			/* lone continuation */
	parse_bad("\xef\xbb\xbf{}", "byte order mark");
	parse_bad("[\xc3\xa9]", "non-ASCII byte 0xc3 outside a string");
	parse_bad_n("\"a\0b\"", 5, PCCX_ERR_FORMAT, "control character 0x00");
}
END_TEST

START_TEST(error_position_line_column)
{
	pccx_json_doc *doc = NULL;
	pccx_diag d = { 0 };
	const char *text = "{\n  \"a\": [1,\n        2,,\n  ]\n}";

	ck_assert_int_eq(pccx__json_parse(text, strlen(text), "cfg.json", NULL, &doc, &d),
			 PCCX_ERR_FORMAT);
	ck_assert_str_eq(d.msg, "cfg.json: line 3, column 11 (byte 23): expected a value, got ','");
}
END_TEST

START_TEST(depth_and_size_limits)
{
	pccx_json_limits lim = { .max_size = 0, .max_depth = 8 };
	pccx_json_doc *doc = NULL;
	pccx_diag d = { 0 };
	char deep[64];

	memset(deep, '[', 9);
	memset(deep + 9, ']', 9);
	deep[18] = '\0';
	ck_assert_int_eq(pccx__json_parse(deep, 18, "t.json", &lim, &doc, &d), PCCX_ERR_RANGE);
	ck_assert_msg(strstr(d.msg, "nesting deeper than 8 levels") != NULL, "%s", d.msg);
	ck_assert_int_eq(pccx__json_parse(deep + 1, 16, "t.json", &lim, &doc, &d), 0);
	pccx__json_free(doc);

	lim.max_depth = 0;
	lim.max_size = 4;
	ck_assert_int_eq(pccx__json_parse("[1,2]", 5, "t.json", &lim, &doc, &d), PCCX_ERR_RANGE);
	ck_assert_msg(strstr(d.msg, "exceeds the JSON size limit") != NULL, "%s", d.msg);
}
END_TEST

START_TEST(deep_default_limit_no_recursion)
{
	/* 100k nesting levels must be refused cleanly (no stack overflow). */
	size_t n = 100000;
	char *s = malloc(2 * n);
	pccx_json_doc *doc = NULL;
	pccx_diag d = { 0 };

	ck_assert_ptr_nonnull(s);
	memset(s, '[', n);
	memset(s + n, ']', n);
	ck_assert_int_eq(pccx__json_parse(s, 2 * n, "t.json", NULL, &doc, &d), PCCX_ERR_RANGE);
	free(s);
}
END_TEST

START_TEST(large_object_members_in_order)
{
	/* Objects with many members use the hashed duplicate check; order is preserved. */
	size_t n = 5000, i, cap = n * 24 + 16, pos = 0;
	char *s = malloc(cap);
	pccx_json_doc *doc = NULL;
	pccx_diag d = { 0 };
	const pccx_json *r;

	ck_assert_ptr_nonnull(s);
	s[pos++] = '{';
	for (i = 0; i < n; i++)
		pos += (size_t)snprintf(s + pos, cap - pos, "%s\"k%zu\":%zu", i ? "," : "", i, i);
	s[pos++] = '}';
	ck_assert_int_eq(pccx__json_parse(s, pos, "t.json", NULL, &doc, &d), 0);
	r = pccx__json_root(doc);
	ck_assert_uint_eq(pccx__json_count(r), n);
	for (i = 0; i < n; i += 997) {
		char k[16];

		snprintf(k, sizeof(k), "k%zu", i);
		ck_assert_str_eq(pccx__json_key(pccx__json_at(r, i), NULL), k);
		ck_assert(pccx__json_int(pccx__json_get(r, k)) == (int64_t)i);
	}
	pccx__json_free(doc);

	/* Same document with the last key repeated. */
	pos--;
	pos += (size_t)snprintf(s + pos, cap - pos, ",\"k17\":1}");
	ck_assert_int_eq(pccx__json_parse(s, pos, "t.json", NULL, &doc, &d), PCCX_ERR_FORMAT);
	ck_assert_msg(strstr(d.msg, "duplicate key \"k17\"") != NULL, "%s", d.msg);
	free(s);
}
END_TEST

START_TEST(parse_file_errors_name_the_path)
{
	pccx_json_doc *doc = NULL;
	pccx_diag d = { 0 };
	char path[] = "/tmp/pccx_json_XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"a\": [1, 2, 3]}\n", f);
	fclose(f);
	ck_assert_int_eq(pccx__json_parse_file(path, NULL, &doc, &d), 0);
	ck_assert_str_eq(pccx__json_doc_name(doc), path);
	ck_assert_uint_eq(pccx__json_count(pccx__json_get(pccx__json_root(doc), "a")), 3);
	pccx__json_free(doc);
	unlink(path);
	ck_assert_int_eq(pccx__json_parse_file(path, NULL, &doc, &d), PCCX_ERR_IO);
	ck_assert_msg(strstr(d.msg, path) != NULL && strstr(d.msg, "cannot open"), "%s", d.msg);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, scalars);
	tcase_add_test(tc, integers_exact);
	tcase_add_test(tc, doubles_round_correctly);
	tcase_add_test(tc, string_escapes);
	tcase_add_test(tc, objects_and_lookup);
	tcase_add_test(tc, checked_getters_name_the_path);
	tcase_add_test(tc, refuses_malformed);
	tcase_add_test(tc, refuses_bad_utf8);
	tcase_add_test(tc, error_position_line_column);
	tcase_add_test(tc, depth_and_size_limits);
	tcase_add_test(tc, deep_default_limit_no_recursion);
	tcase_add_test(tc, large_object_members_in_order);
	tcase_add_test(tc, parse_file_errors_name_the_path);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(json_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
