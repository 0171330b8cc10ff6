// SPDX-License-Identifier: MIT
/*
 * pccx bench --sparse: the two ways of streaming only the W_up rows a sparse FFN layer keeps
 * (docs/sim.md, "Sparse FFN streaming"), run on the cycle simulator with the same port and
 * DDR model, on one sparse layer of a Gemma 3n shape:
 *
 *   rowmask  the v002 extension (FEATURES.ROWMASK): per piece of W_up, the activation copied
 *            into the output (the mask) and one GEMV rowmask, as the decode step issues it;
 *   host     v002 alone: the activation goes to the host (a MEMCPY, its writes and the job's
 *            end), the host finds the kept rows and issues a second job with, per piece, the
 *            same copy and one GEMV for each run of consecutive output words that hold a kept
 *            row (v002 GEMVs write whole words of 4 rows; the copy leaves the other rows +0);
 *   dense    every row: the piece GEMVs without the mask, for scale.
 *
 * The kept rows are the Gaussian top-k's share (1 - Phi(z), 5 % of d_ffn for Gemma 3n), at
 * random places, as on the synthetic weights; the activation that picks them and the products
 * after W_up cost the same both ways and are left out. The host's scan is timed on this
 * machine, not simulated.
 * Figures only: nothing passes or fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_sim.h"
#include "cli.h"
#include "diag.h"
#include "gemma_config.h"
#include "jobbuild.h"
#include "pccx_isa.h"
#include "rng.h"

/* W_up's pieces in a decode step (reference/gemma_graph.c: UP_PIECES). */
#define SPARSE_PIECES 4u
/* L2 words: the FFN input, the activation, W_up's output */
#define L2_X 0u

struct sparse_args {
	const char *config, *dtb;
	uint64_t seed;
};

#define A(f, type) PCCX_AT(struct sparse_args, f, type)
static const struct pccx_opt sparse_opts[] = {
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(config, const char *), "NAME",
		 "model shape with sparse FFN layers (default e4b)",
		 .values = pccx__gemma_config_names),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(seed, uint64_t), "S",
		 "seed of the kept rows' places (default 1)"),
	PCCX_OPT("dtb", 0, PCCX_OPT_PATH, A(dtb, const char *), "FILE", "device parameters"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd sparse_cmd = {
	.name = "bench --sparse",
	.usage = "[--config NAME] [--seed S] [--dtb FILE]",
	.about = "Run one sparse FFN layer's W_up on the cycle simulator three ways: the GEMV\n"
		 "rowmask extension, the host reading the activation back and issuing GEMVs of\n"
		 "the kept rows' output words, and every row; print the cycles and bytes of each.\n",
	.opts = sparse_opts,
};

/* One sparse layer's W_up and where its vectors lie in L2. */
struct sparse_layer {
	uint32_t d, f, piece;          /* inputs, rows, rows per piece */
	uint32_t act, out;             /* L2 words of the activation and of W_up's output */
	uint64_t row_bytes;
	uint32_t w;                    /* the weights' buffer */
	uint32_t host;                 /* the activation's copy on the host */
	float *mask;                   /* (f) 1 where a row is kept, +0 elsewhere */
	uint32_t kept;
};

struct sparse_run {
	uint64_t cycles, weight_bytes;
	uint32_t gemvs;
	uint64_t rows;                 /* the weight rows it must read */
};

static void add_stats(struct sparse_run *r, const struct pccx_sim_backend_result *res)
{
	unsigned p;

	r->cycles += res->cycles;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		r->weight_bytes += res->stats.dm_bytes[p];
}

static int submit(struct pccx_sim_backend *b, struct pccx_job_builder *jb, struct sparse_run *r,
		  pccx_diag *d)
{
	struct pccx_sim_backend_result res;
	struct pccx_job_view v;
	int rc = pccx__job_builder_finish(jb, &v, d);

	if (!rc)
		rc = pccx__sim_backend_submit_wait(b, &v, NULL, &res, d);
	if (!rc)
		add_stats(r, &res);
	pccx__job_builder_reset(jb);
	return rc;
}

/* The activation and the mask in L2 (what the step's activation leaves there). */
static void put_activation(struct pccx_sim_backend *b, const struct sparse_layer *ly)
{
	uint8_t *l2 = pccx__sim_l2(pccx__sim_backend_sim(b));

	memset(l2 + (size_t)ly->out * PCCX_BEAT_BYTES, 0, (size_t)ly->f * sizeof(float));
	memcpy(l2 + (size_t)ly->act * PCCX_BEAT_BYTES, ly->mask, (size_t)ly->f * sizeof(float));
}

static struct pccx_job_builder_weights rows_of(const struct sparse_layer *ly, uint32_t first,
					       uint32_t n, bool rowmask)
{
	struct pccx_job_builder_weights w = { ly->w, first * ly->row_bytes, n, ly->d, PCCX_WFMT_Q4,
					      true, rowmask };

	return w;
}

/*
 * W_up in its pieces: with rowmask the decode step's order (per piece, the activation copied
 * into the output, then GEMV rowmask); without, every row.
 */
static int run_pieces(struct pccx_sim_backend *b, struct pccx_job_builder *jb,
		      const struct sparse_layer *ly, bool rowmask, struct sparse_run *r,
		      pccx_diag *d)
{
	uint32_t at;

	put_activation(b, ly);
	for (at = 0; at < ly->f; at += ly->piece) {
		struct pccx_job_builder_weights w = rows_of(ly, at, ly->piece, rowmask);

		if (rowmask)
			pccx__job_builder_copy(jb, ly->out + at / 4, ly->act + at / 4, ly->piece);
		pccx__job_builder_matmul(jb, PCCX_OP_GEMV, ly->out + at / 4, L2_X, 1, &w, false,
					 false);
		r->gemvs++;
	}
	r->rows = rowmask ? ly->kept : ly->f;
	return submit(b, jb, r, d);
}

/*
 * v002 alone: the activation to the host (*back: that job), which finds the output words
 * holding a kept row; then, per piece, the copy and a GEMV for each run of such words inside
 * the piece. *scan_ns: the host's scan, timed here.
 */
static int run_host(struct pccx_sim_backend *b, struct pccx_job_builder *jb,
		    const struct sparse_layer *ly, struct sparse_run *back, struct sparse_run *r,
		    double *scan_ns, pccx_diag *d)
{
	const float *act;
	uint8_t *hold;
	uint32_t w, at, end;
	double t0;
	int rc;

	put_activation(b, ly);
	pccx__job_builder_store(jb, ly->act, ly->host, 0, ly->f);
	rc = submit(b, jb, back, d);
	if (rc)
		return rc;
	act = pccx__sim_backend_buf_map(b, ly->host, NULL);
	hold = malloc(ly->f / 4);
	if (!hold)
		return pccx__fail(d, PCCX_ERR_NOMEM, "bench --sparse: out of memory");
	t0 = pccx_cli_now();
	for (w = 0; w < ly->f / 4; w++)
		hold[w] = act[4 * w] != 0.0f || act[4 * w + 1] != 0.0f || act[4 * w + 2] != 0.0f ||
			  act[4 * w + 3] != 0.0f;
	*scan_ns = 1e9 * (pccx_cli_now() - t0);
	for (at = 0; at < ly->f; at += ly->piece) {
		pccx__job_builder_copy(jb, ly->out + at / 4, ly->act + at / 4, ly->piece);
		for (w = at / 4; w < (at + ly->piece) / 4; w = end) {
			struct pccx_job_builder_weights wt;

			for (end = w; end < (at + ly->piece) / 4 && hold[end]; end++)
				;
			if (end == w) {
				end++;
				continue;
			}
			wt = rows_of(ly, 4 * w, 4 * (end - w), false);
			pccx__job_builder_matmul(jb, PCCX_OP_GEMV, ly->out + w, L2_X, 1, &wt, false,
						 false);
			r->gemvs++;
			r->rows += 4 * (end - w);
		}
	}
	free(hold);
	rc = submit(b, jb, r, d);
	back->gemvs = r->gemvs;
	r->cycles += back->cycles;
	r->weight_bytes += back->weight_bytes;
	return rc;
}

/* What a run read is what it must read: its rows, each once. */
static int check_bytes(const char *name, const struct sparse_run *r,
		       const struct sparse_layer *ly, pccx_diag *d)
{
	if (r->weight_bytes == r->rows * ly->row_bytes)
		return PCCX_OK;
	return pccx__fail(d, PCCX_ERR_INTERNAL, "bench --sparse: the %s way read %llu bytes of "
			  "weights, not its %llu rows' %llu", name,
			  (unsigned long long)r->weight_bytes, (unsigned long long)r->rows,
			  (unsigned long long)(r->rows * ly->row_bytes));
}

/* The kept rows: the top-k's share 1 - Phi(z) of the rows (Gemma 3n's z for 0.95 sparsity
 * keeps 5 %), at random places. */
static int make_mask(struct sparse_layer *ly, float z, uint64_t seed, pccx_diag *d)
{
	uint32_t *order = malloc((size_t)ly->f * sizeof(*order)), i;
	pccx_rng rng;

	ly->mask = calloc(ly->f, sizeof(*ly->mask));
	if (!order || !ly->mask) {
		free(order);
		return pccx__fail(d, PCCX_ERR_NOMEM, "bench --sparse: out of memory");
	}
	ly->kept = (uint32_t)(0.5 * erfc((double)z / sqrt(2.0)) * ly->f + 0.5);
	pccx__rng_seed(&rng, seed, 0);
	for (i = 0; i < ly->f; i++)
		order[i] = i;
	for (i = 0; i < ly->kept; i++) {
		uint32_t j = i + pccx__rng_next_u32(&rng) % (ly->f - i), t = order[i];

		order[i] = order[j];
		order[j] = t;
		ly->mask[order[i]] = 1.0f;
	}
	free(order);
	return PCCX_OK;
}

static void print_run(const char *name, const struct sparse_run *r, double core_hz)
{
	printf("  %-8s %10llu cycles %9.1f us  %10llu bytes of weights  %5u GEMVs\n", name,
	       (unsigned long long)r->cycles, 1e6 * (double)r->cycles / core_hz,
	       (unsigned long long)r->weight_bytes, r->gemvs);
}

static int sparse(const struct sparse_args *a, pccx_diag *d)
{
	struct pccx_gemma_config c;
	struct pccx_sim_config cfg;
	struct pccx_sim_backend *b = NULL;
	struct pccx_job_builder jb;
	struct sparse_layer ly = { 0 };
	struct sparse_run rm = { 0 }, back = { 0 }, host = { 0 }, dense = { 0 };
	struct pccx_wshape ws;
	double scan_ns = 0;
	int rc;

	rc = pccx__gemma_config_preset(a->config, &c, d);
	if (rc)
		return rc;
	if (!c.n_sparse)
		return pccx__fail(d, PCCX_ERR_INVALID, "bench --sparse: config '%s' has no sparse "
				  "FFN layers", a->config);
	pccx__sim_config_default(&cfg);
	if (a->dtb && (rc = pccx__sim_config_from_dtb_file(&cfg, a->dtb, d)))
		return rc;
	ly.d = c.d_model;
	ly.f = c.d_ffn;
	ly.piece = ((ly.f + SPARSE_PIECES - 1) / SPARSE_PIECES + 7) & ~7u;
	if (ly.f % ly.piece || ly.d % 32 || ly.f % 4)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "bench --sparse: config '%s': d_ffn %u "
				  "is not %u pieces of whole words", a->config, ly.f,
				  SPARSE_PIECES);
	ly.act = L2_X + ly.d / 4;
	ly.out = ly.act + ly.f / 4;
	if (ly.out + ly.f / 4 > PCCX_L2_WORDS)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "bench --sparse: config '%s': the layer "
				  "does not fit L2", a->config);
	ws = (struct pccx_wshape){ ly.f, ly.d, PCCX_WFMT_Q4, true };
	ly.row_bytes = pccx__wstream_row_bytes(&ws);
	rc = make_mask(&ly, c.sparse_z, a->seed, d);
	if (!rc)
		rc = pccx__sim_backend_create(&cfg, &b, d);
	/* zero weights: the figures do not depend on the values */
	if (!rc)
		rc = pccx__sim_backend_buf_alloc(b, (uint64_t)ly.f * ly.row_bytes,
						 PCCX_BUF_DEV_READ, &ly.w, d);
	if (!rc)
		rc = pccx__sim_backend_buf_alloc(b, (uint64_t)ly.f * sizeof(float),
						 PCCX_BUF_DEV_WRITE, &ly.host, d);
	pccx__job_builder_init(&jb);
	if (!rc)
		rc = run_pieces(b, &jb, &ly, true, &rm, d);
	if (!rc)
		rc = run_host(b, &jb, &ly, &back, &host, &scan_ns, d);
	if (!rc)
		rc = run_pieces(b, &jb, &ly, false, &dense, d);
	pccx__job_builder_free(&jb);
	if (!rc)
		rc = check_bytes("rowmask", &rm, &ly, d);
	if (!rc)
		rc = check_bytes("host", &host, &ly, d);
	if (!rc)
		rc = check_bytes("dense", &dense, &ly, d);
	if (!rc) {
		double hz = (double)cfg.core_hz;

		printf("one sparse FFN layer's W_up, config %s: %u rows of %u inputs in %u pieces, "
		       "%u kept; %.0f MHz core, %.0f MHz AXI\n", a->config, ly.f, ly.d,
		       SPARSE_PIECES, ly.kept, hz / 1e6, (double)cfg.axi_hz / 1e6);
		print_run("rowmask", &rm, hz);
		print_run("host", &host, hz);
		printf("           of which the activation to the host %llu cycles (%.1f us); the "
		       "host's scan, %.1f us on this machine, is not counted\n",
		       (unsigned long long)back.cycles, 1e6 * (double)back.cycles / hz,
		       scan_ns / 1e3);
		print_run("dense", &dense, hz);
	}
	pccx__sim_backend_destroy(b);
	free(ly.mask);
	return rc;
}

int pccx_cmd_bench_sparse(int argc, char **argv)
{
	struct sparse_args a = { "e4b", NULL, 1 };
	pccx_diag d = { 0 };
	int rc = pccx_opt_parse(&sparse_cmd, argc, argv, &a);

	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = sparse(&a, &d);
	if (rc) {
		pccx_cli_fail(rc, &d);
		return 1;
	}
	return 0;
}
