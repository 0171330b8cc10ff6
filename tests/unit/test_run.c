// SPDX-License-Identifier: MIT
/*
 * End to end through libpccx: Gemma 3n decode of the test configurations compiled to v002
 * jobs, run on the cycle simulator through the command engine, with every stage of every
 * step compared bit for bit with the reference executor (verify mode).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pccx/pccx.h"

struct run {
	int32_t toks[128];
	size_t n;
};

static int collect(void *user, int32_t token, const char *piece, size_t len)
{
	struct run *r = user;

	(void)piece;
	(void)len;
	if (r->n < 128)
		r->toks[r->n++] = token;
	return 0;
}

/* Prefill a fixed prompt and generate n tokens; returns the status of the first failure. */
static int generate(const char *config, bool verify, float temp, uint64_t seed, size_t n,
		    struct run *out, struct pccx_stats *st, pccx_diag *d)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, config, 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { sizeof(sopt), 0, verify };
	static const int32_t prompt[] = { 2, 17, 42, 99, 3 };
	pccx_sampler_config scfg;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	int rc;

	pccx_sampler_config_default(&scfg);
	scfg.temperature = temp;
	scfg.seed = seed;
	/* no stop tokens without a tokenizer: exactly n tokens come out */
	memset(out, 0, sizeof(*out));
	rc = pccx_device_open(&dopt, &dev, d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, d);
	if (!rc)
		rc = pccx_session_prefill(s, prompt, sizeof(prompt) / sizeof(prompt[0]), d);
	if (!rc)
		rc = pccx_session_generate(s, &scfg, n, collect, out, d);
	if (!rc && st)
		rc = pccx_session_stats(s, st);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc;
}

static void check_config(const char *config)
{
	struct pccx_stats st;
	struct run r;
	pccx_diag d = { 0 };
	int rc = generate(config, true, 0.8f, 11, 64, &r, &st, &d);

	ck_assert_msg(rc == 0, "%s: %s (%s)", config, d.msg, pccx_strerror(rc));
	ck_assert_uint_eq(r.n, 64);
	ck_assert_uint_eq(st.tokens, 64);
	ck_assert_uint_eq(st.prompt_tokens, 5);
	/* 5 prompt steps + 64 generated steps, each one job on the device */
	ck_assert_uint_eq(st.jobs, 69);
	ck_assert_uint_gt(st.device_cycles, 0);
	ck_assert_uint_gt(st.weight_bytes, 0);
}

START_TEST(tiny_64_tokens_bit_exact)
{
	check_config("tiny");
}
END_TEST

START_TEST(tiny_vocab_64_tokens_bit_exact)
{
	check_config("tiny-vocab");
}
END_TEST

START_TEST(deterministic_and_verify_does_not_change_tokens)
{
	struct run a, b, c;
	pccx_diag d = { 0 };

	ck_assert_msg(generate("tiny", false, 0.9f, 5, 24, &a, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("tiny", false, 0.9f, 5, 24, &b, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("tiny", true, 0.9f, 5, 24, &c, NULL, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(a.n, 24);
	ck_assert_mem_eq(a.toks, b.toks, sizeof(a.toks));
	ck_assert_mem_eq(a.toks, c.toks, sizeof(a.toks));
}
END_TEST

START_TEST(generate_needs_a_prompt)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 1, NULL, NULL, NULL };
	pccx_device *dev;
	pccx_model *model;
	pccx_session *s;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_device_open(&dopt, &dev, &d), 0);
	ck_assert_int_eq(pccx_model_load(dev, &mopt, &model, &d), 0);
	ck_assert_int_eq(pccx_session_create(model, NULL, &s, &d), 0);
	ck_assert_int_eq(pccx_session_generate(s, NULL, 4, NULL, NULL, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "prefill"));
	{
		int32_t bad = 1 << 30;

		ck_assert_int_eq(pccx_session_prefill(s, &bad, 1, &d), PCCX_ERR_RANGE);
		ck_assert_ptr_nonnull(strstr(d.msg, "vocabulary"));
	}
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
}
END_TEST

START_TEST(unknown_backend_refused)
{
	struct pccx_device_opts dopt = { sizeof(dopt), "usb", NULL, NULL, NULL };
	pccx_device *dev = NULL;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_device_open(&dopt, &dev, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_ptr_null(dev);
	ck_assert_ptr_nonnull(strstr(d.msg, "usb"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("run");
	TCase *tc = tcase_create("end-to-end");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, tiny_64_tokens_bit_exact);
	tcase_add_test(tc, tiny_vocab_64_tokens_bit_exact);
	tcase_add_test(tc, deterministic_and_verify_does_not_change_tokens);
	tcase_add_test(tc, generate_needs_a_prompt);
	tcase_add_test(tc, unknown_backend_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
