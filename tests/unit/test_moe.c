/* SPDX-License-Identifier: MIT */
/*
 * Gemma 4's mixture of experts: the host router on hand-worked cases (softmax, the k largest
 * with ties to the lower index, renormalisation, the expert's scale), and the step's job
 * structure: with host buffers a job ends at every router and the chosen experts alone are
 * streamed; without them the step is one job naming every expert (what the kernel backend's
 * weight pieces are cut from).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemma_graph.h"
#include "pccx_num.h"

START_TEST(route_hand_worked)
{
	static const float one[4] = { 1, 1, 1, 1 }, two[4] = { 1, 1, 2, 1 };
	uint32_t idx[4];
	float w[4];

	/* e, e beat 1 and 1/e; equal probabilities renormalise to 1/2 each, then the scale */
	pccx__gemma_route((const float[]){ 0, 1, 1, -1 }, two, 4, 2, idx, w);
	ck_assert_uint_eq(idx[0], 1);
	ck_assert_uint_eq(idx[1], 2);
	ck_assert(w[0] == 0.5f && w[1] == 1.0f);
	/* a three-way tie: the lowest index */
	pccx__gemma_route((const float[]){ 2, 2, 2, -5 }, one, 4, 1, idx, w);
	ck_assert_uint_eq(idx[0], 0);
	ck_assert(w[0] == 1.0f);
	/* the chosen experts come in ascending order whatever their ranks */
	pccx__gemma_route((const float[]){ 3, 1, 3.5f, 2 }, one, 4, 3, idx, w);
	ck_assert_uint_eq(idx[0], 0);
	ck_assert_uint_eq(idx[1], 2);
	ck_assert_uint_eq(idx[2], 3);
	/* weights are p / (p0 + p2 + p3): the largest logit the largest weight, sum 1 */
	ck_assert(w[1] > w[0] && w[0] > w[2]);
	ck_assert_float_eq_tol(w[0] + w[1] + w[2], 1.0f, 1e-6f);
	ck_assert_float_eq_tol(w[1] / w[0], (float)exp(0.5), 1e-5f);
}
END_TEST

/* Ops that count jobs and the expert GEMVs of each layer, executing nothing. */
struct count {
	const struct pccx_gemma_model *m;
	uint8_t *out;
	unsigned begins, ends, expert_gemvs[PCCX_GEMMA_MAX_LAYERS];
	bool in_job;
};

static int c_begin(void *ctx, uint32_t pos)
{
	struct count *c = ctx;

	(void)pos;
	ck_assert(!c->in_job);
	c->in_job = true;
	c->begins++;
	return 0;
}

static int c_end(void *ctx)
{
	struct count *c = ctx;

	ck_assert(c->in_job);
	c->in_job = false;
	c->ends++;
	return 0;
}

static int c_matmul(void *ctx, const struct pccx_npu_matmul *mm)
{
	struct count *c = ctx;
	uint32_t l;

	ck_assert(c->in_job);
	for (l = 0; l < c->m->cfg.n_layers; l++) {
		int32_t e0 = c->m->w.layer[l].experts;

		if (e0 >= 0 && mm->w.tensor >= e0 &&
		    mm->w.tensor < e0 + 3 * (int32_t)c->m->layers[l].n_experts)
			c->expert_gemvs[l]++;
	}
	return 0;
}

static int c_cvo(void *ctx, const struct pccx_npu_cvo *op)
{
	(void)ctx;
	(void)op;
	return 0;
}

static int c_copy(void *ctx, uint32_t dst, uint32_t src, uint32_t words)
{
	(void)ctx;
	(void)dst;
	(void)src;
	(void)words;
	return 0;
}

static int c_load(void *ctx, uint32_t dst, uint32_t buf, uint64_t off, uint32_t n)
{
	(void)ctx;
	(void)dst;
	(void)buf;
	(void)off;
	(void)n;
	return 0;
}

static int c_store(void *ctx, uint32_t buf, uint64_t off, uint32_t src, uint32_t n)
{
	(void)ctx;
	(void)buf;
	(void)off;
	(void)src;
	(void)n;
	return 0;
}

static const struct pccx_npu_ops count_ops = {
	.name = "count", .begin = c_begin, .end = c_end, .matmul = c_matmul, .cvo = c_cvo,
	.copy = c_copy, .load = c_load, .store = c_store,
};

START_TEST(jobs_end_at_every_router)
{
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	struct pccx_gemma_plan p;
	struct count c = { 0 };
	uint8_t *in, *out;
	pccx_diag d = { 0 };
	uint32_t l;

	ck_assert_int_eq(pccx__gemma_config_preset("tiny-gemma4-moe", &cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&m, &cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_plan_build(m, &p, &d) == 0, "%s", d.msg);
	in = calloc(1, p.in_bytes);
	out = calloc(1, p.out_bytes);	/* router logits all 0: a tie, experts 0 and 1 */
	ck_assert(in && out);
	c.m = m;
	ck_assert_int_eq(pccx__gemma_step(m, &p, &count_ops, &c, 0, true,
					  &(struct pccx_gemma_host){ in, out }), 0);
	ck_assert_uint_eq(c.begins, 1 + cfg.n_layers);
	ck_assert_uint_eq(c.ends, 1 + cfg.n_layers);
	for (l = 0; l < cfg.n_layers; l++)
		ck_assert_uint_eq(c.expert_gemvs[l], 3 * cfg.n_experts_used);

	/* without host buffers: one job, every expert of every layer */
	memset(&c, 0, sizeof(c));
	c.m = m;
	ck_assert_int_eq(pccx__gemma_step(m, &p, &count_ops, &c, 0, true, NULL), 0);
	ck_assert_uint_eq(c.begins, 1);
	ck_assert_uint_eq(c.ends, 1);
	for (l = 0; l < cfg.n_layers; l++)
		ck_assert_uint_eq(c.expert_gemvs[l], 3 * cfg.n_experts);
	free(in);
	free(out);
	pccx__gemma_model_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("moe");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, route_hand_worked);
	tcase_add_test(tc, jobs_end_at_every_router);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
