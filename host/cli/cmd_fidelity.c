// SPDX-License-Identifier: MIT
/*
 * pccx fidelity: how far the bit-exact reference is from the FP64 oracle, stage by stage.
 *
 *   pccx fidelity (--config NAME | -m MODEL) [-n 14] [-p TEXT | --tokens ID,...] [--at POS]
 *                 [--tsv FILE]
 *
 * Teacher-forced: at every position the reference and the oracle decode the same token (the
 * prompt's or the list's, then the reference's greedy choice), so their errors compare
 * position by position. docs/reference.md, "The fidelity report".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "diag.h"
#include "fileio.h"
#include "ref_run.h"

#define FID_MAX_TOKENS 4096

struct fid_tokens {
	uint32_t n;
	int32_t id[FID_MAX_TOKENS];
};

struct fid_args {
	struct pccx_cli_ref_args m;
	struct fid_tokens tokens;
	const char *tsv;
	uint64_t seed, n, at;
	bool have_tokens;
};

/* --tokens: comma-separated decimal ids. */
static int parse_tokens(const char *value, void *dst)
{
	struct fid_tokens *t = dst;
	const char *p = value;

	t->n = 0;
	for (;;) {
		long long v = 0;

		if (*p < '0' || *p > '9' || t->n == FID_MAX_TOKENS)
			return -1;
		while (*p >= '0' && *p <= '9' && v <= INT32_MAX)
			v = 10 * v + (*p++ - '0');
		if (v > INT32_MAX)
			return -1;
		t->id[t->n++] = (int32_t)v;
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -1;
	}
}

#define A(f, type) PCCX_AT(struct fid_args, f, type)
static const struct pccx_opt fid_opts[] = {
	PCCX_CLI_REF_OPTS(struct fid_args, m),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S",
		 "seed of the synthetic weights (default 1)"),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N", "positions (default 14)",
		 .min = 1, .max = 65535),
	PCCX_OPT("tokens", 0, PCCX_OPT_CUSTOM, A(tokens, struct fid_tokens), "ID[,ID...]",
		 "the tokens of the first positions instead of the prompt's\n"
		 "(at most 4096 ids)", .parse = parse_tokens, .seen_at = A(have_tokens, bool) + 1),
	PCCX_OPT("at", 0, PCCX_OPT_UINT, A(at, uint64_t), "POS",
		 "the position whose every stage is listed (default 0)", .max = 65535),
	PCCX_OPT("tsv", 0, PCCX_OPT_PATH, A(tsv, const char *), "FILE",
		 "write one row per stage and position (docs/reference.md)"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd fid_cmd = {
	.name = "fidelity",
	.usage = "(--config NAME | -m MODEL) [-n N] [-p TEXT | --tokens IDS] [options]",
	.about = "Run the bit-exact reference and the FP64 oracle on the same tokens (the prompt's\n"
		 "or the list's, then the reference's greedy ones) and report the error of every\n"
		 "stage against the oracle: per stage kind over layers and positions, every stage\n"
		 "at one position, and the next-token agreement of the logits.\n",
	.opts = fid_opts,
};

/* One position: the token both decoded, where it came from, and the logits compared. */
struct fid_pos {
	int32_t tok;
	bool forced;
	struct pccx_logit_cmp lc;
};

struct fid_run {
	const struct fid_args *a;
	struct pccx_cli_ref r;
	const int32_t *forced;		/* the tokens of the first n_forced positions */
	size_t n_forced;
	struct fid_pos *pos;
	struct pccx_stage_stat *at;	/* the stages of position a->at */
	size_t n_at;
	struct pccx_cmp_summary sum;
	FILE *tsv;
};

static void tsv_rows(struct fid_run *f, uint32_t p, const struct pccx_stage_stat *st, size_t n)
{
	const struct fid_pos *q = &f->pos[p];
	size_t i;
	int layer;

	for (i = 0; i < n; i++) {
		const char *kind = pccx__cmp_stage_kind(st[i].name, &layer);

		fprintf(f->tsv, "%u\t%d\t%s\t%s\t%d\t%u\t%.9g\t%.9g\t%.9g\t%u\t%u\t%.9g\n", p, q->tok,
			st[i].name, kind, layer, st[i].n, st[i].rel_rms, st[i].cos, st[i].max_abs,
			q->lc.ref_top1, q->lc.oracle_top1, q->lc.kl);
	}
}

/* Position by position: the token, both steps, the stages and logits compared. */
static int run(struct fid_run *f, pccx_diag *d)
{
	const struct fid_args *a = f->a;
	const struct pccx_stage_stat *st;
	uint32_t p;
	size_t n;
	int rc;

	for (p = 0; p < a->n; p++) {
		struct fid_pos *q = &f->pos[p];

		q->forced = p < f->n_forced;
		q->tok = q->forced ? f->forced[p] : (int32_t)f->pos[p - 1].lc.ref_top1;
		rc = pccx_cli_ref_step(&f->r, q->tok, true, d);
		if (rc)
			return rc;
		q->lc = f->r.lc;
		st = pccx__cmp_results(f->r.cmp, &n);
		pccx__cmp_summary_add(&f->sum, st, n, &q->lc);
		if (f->tsv)
			tsv_rows(f, p, st, n);
		if (p == a->at) {
			f->at = malloc(sizeof(*st) * (n ? n : 1));
			if (!f->at)
				return pccx__fail(d, PCCX_ERR_NOMEM, "fidelity: out of memory");
			memcpy(f->at, st, sizeof(*st) * n);
			f->n_at = n;
		}
	}
	if (f->tsv && fflush(f->tsv))
		return pccx__fail(d, PCCX_ERR_IO, "fidelity: %s: %s", a->tsv, strerror(errno));
	return PCCX_OK;
}

static void print_report(const struct fid_run *f)
{
	const struct fid_args *a = f->a;
	const struct pccx_cmp_summary *s = &f->sum;
	const struct pccx_gemma_config *cfg = &f->r.cfg;
	uint32_t p, forced = (uint32_t)(f->n_forced < a->n ? f->n_forced : a->n);
	size_t i;

	printf("fidelity of the reference against the FP64 oracle: %s (%u layers, D %u, vocab %u)\n"
	       "%u positions, teacher-forced: %u %s tokens, then %u of the reference's greedy "
	       "tokens\n",
	       a->m.model ? a->m.model : cfg->name, cfg->n_layers, cfg->d_model, cfg->vocab,
	       (uint32_t)a->n, forced, a->have_tokens ? "listed" : "prompt",
	       (uint32_t)a->n - forced);

	printf("\nper position (the token both decoded; the next token each predicts):\n"
	       "  %5s %8s %-6s %8s %8s %10s %10s %10s\n",
	       "pos", "token", "from", "ref", "oracle", "logit cos", "relRMS", "KL nats");
	for (p = 0; p < a->n; p++) {
		const struct fid_pos *q = &f->pos[p];

		printf("  %5u %8d %-6s %8u %8u %10.6f %10.4f %10.3g%s\n", p, q->tok,
		       q->forced ? (a->have_tokens ? "list" : "prompt") : "greedy", q->lc.ref_top1,
		       q->lc.oracle_top1, q->lc.cos, q->lc.rel_rms, q->lc.kl,
		       q->lc.ref_top1 == q->lc.oracle_top1 ? "" : "  top-1 differs");
	}

	printf("\nper stage kind, over layers and positions:\n"
	       "  %-16s %6s %11s %11s %10s %10s %10s\n",
	       "stage", "count", "mean relRMS", "max relRMS", "min cos", "mean cos", "max |err|");
	for (i = 0; i < s->n_kinds; i++) {
		const struct pccx_cmp_kind *k = &s->kinds[i];

		printf("  %-16s %6u %11.4f %11.4f %10.6f %10.6f %10.4g\n", k->kind, k->count,
		       k->sum_rel / k->count, k->max_rel, k->min_cos, k->sum_cos / k->count,
		       k->max_abs);
	}

	printf("\nevery stage at position %u (token %d):\n  %-22s %8s %10s %10s %10s\n",
	       (uint32_t)a->at, f->pos[a->at].tok, "stage", "elements", "relRMS", "cos",
	       "max |err|");
	for (i = 0; i < f->n_at; i++)
		printf("  %-22s %8u %10.4f %10.6f %10.4g\n", f->at[i].name, f->at[i].n,
		       f->at[i].rel_rms, f->at[i].cos, f->at[i].max_abs);

	printf("\nsummary: top-1 agreement %u/%u; logits cosine mean %.6f (min %.6f); "
	       "KL(oracle||ref) mean %.3g, max %.3g nats\n",
	       s->top1_same, s->positions, s->logit_cos_sum / s->positions, s->logit_cos_min,
	       s->kl_sum / s->positions, s->kl_max);
}

/* The tokens of the first positions: --tokens (each checked against the vocabulary), else
 * the prompt's. */
static int forced_tokens(struct fid_run *f, pccx_diag *d)
{
	const struct fid_tokens *t = &f->a->tokens;
	uint32_t i;
	int rc;

	if (!f->a->have_tokens) {
		rc = pccx_cli_ref_encode(&f->r, d);
		f->forced = f->r.ids;
		f->n_forced = f->r.n_ids;
		return rc;
	}
	for (i = 0; i < t->n; i++)
		if ((uint32_t)t->id[i] >= f->r.cfg.vocab)
			return pccx__fail(d, PCCX_ERR_RANGE,
					  "fidelity: --tokens: id %d (position %u) is past the "
					  "vocabulary (%u ids)",
					  t->id[i], i, f->r.cfg.vocab);
	f->forced = t->id;
	f->n_forced = t->n;
	return PCCX_OK;
}

static int fidelity(struct fid_run *f, pccx_diag *d)
{
	const struct fid_args *a = f->a;
	double t0;
	int rc;

	if (a->tsv) {
		rc = pccx__output_open(a->tsv, &f->tsv, d);
		if (rc)
			return rc;
		fprintf(f->tsv, "pos\ttoken\tstage\tkind\tlayer\telements\trel_rms\tcos\tmax_abs"
				"\tref_top1\toracle_top1\tkl\n");
	}
	rc = pccx_cli_ref_load(&f->r, d);
	if (rc)
		return rc;
	if (a->n > f->r.cfg.max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "fidelity: %u positions exceed the context (%u; see --max-ctx)",
				  (uint32_t)a->n, f->r.cfg.max_ctx);
	rc = forced_tokens(f, d);
	if (!rc)
		rc = pccx_cli_ref_start(&f->r, true, d);
	if (rc)
		return rc;
	f->pos = calloc(a->n, sizeof(*f->pos));
	if (!f->pos)
		return pccx__fail(d, PCCX_ERR_NOMEM, "fidelity: out of memory");
	pccx__cmp_summary_init(&f->sum);
	t0 = pccx_cli_now();
	rc = run(f, d);
	if (rc)
		return rc;
	if (!a->m.quiet)
		fprintf(stderr,
			"pccx fidelity: %u positions in %.2f s (reference %.2f s, oracle %.2f s)\n",
			(uint32_t)a->n, pccx_cli_now() - t0, f->r.t_ref, f->r.t_oracle);
	print_report(f);
	return PCCX_OK;
}

int pccx_cmd_fidelity(int argc, char **argv)
{
	struct fid_args a = { .m.prompt = "Hello", .seed = 1, .n = 14 };
	struct fid_run f = { .a = &a, .r = { .cmd = "fidelity", .a = &a.m } };
	pccx_diag d = { 0 };
	int rc;

	rc = pccx_opt_parse(&fid_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (!a.m.config == !a.m.model)
		return pccx_opt_fail(&fid_cmd, "give either --config NAME or -m MODEL");
	if (a.have_tokens && a.m.have_prompt)
		return pccx_opt_fail(&fid_cmd, "give -p TEXT or --tokens IDS, not both");
	if (a.at >= a.n)
		return pccx_opt_fail(&fid_cmd, "--at %llu is past the last position (%llu)",
				     (unsigned long long)a.at, (unsigned long long)a.n - 1);
	a.m.wseed = a.seed;
	rc = fidelity(&f, &d);
	if (f.tsv) {
		int wrc = pccx__output_close(f.tsv, a.tsv, false, rc ? NULL : &d);

		rc = rc ? rc : wrc;
	}
	if (rc)
		pccx_cli_fail(rc, &d);
	pccx_cli_ref_free(&f.r);
	free(f.pos);
	free(f.at);
	return rc ? 1 : 0;
}
