// SPDX-License-Identifier: MIT
/*
 * A prompt on the NPU in chunks (gemma_chunk.h): the tokens' recorded steps, each moved to its
 * own copy of the plan's regions, interleaved between the weight matmuls they share, which run
 * once as GEMMs.
 */
#include <stdlib.h>
#include <string.h>

#include "chunk_share.h"
#include "diag.h"
#include "gemma_chunk.h"
#include "pccx_job.h"

#define W(n) pccx_words_for(n)

/* Whether the chunk keeps one copy of region i for all its tokens. */
static bool shared(const struct pccx_gemma_chunk *ck, uint32_t i)
{
	return ((ck->scratch | ck->same) >> i) & 1;
}

/*
 * The plan the tokens' steps are recorded with and laid out by: the chunk layout
 * (pccx__gemma_plan_build_chunk: W_up in pieces through two piece buffers, each piece one
 * region wide; the RoPE tables rebuilt in each RoPE's segment), the device's smul as in the
 * decode plan. Its host buffers are the decode plan's.
 */
static int record_plan(const struct pccx_gemma_model *m, const struct pccx_gemma_plan *p,
		       struct pccx_gemma_plan *rp, pccx_diag *d)
{
	int rc = pccx__gemma_plan_build_chunk(m, rp, d);

	if (rc)
		return rc;
	if (rp->in_bytes != p->in_bytes || rp->out_bytes != p->out_bytes ||
	    rp->kv_bytes != p->kv_bytes)
		return pccx__fail(d, PCCX_ERR_INTERNAL,
				  "prompt chunks: the chunk plan's host buffers differ from the step's");
	rp->smul = p->smul;
	pccx__gemma_plan_for_rows(rp);	/* a chunk's matmuls are GEMMs */
	return PCCX_OK;
}

/* The region that is exactly [a, a + words) (a matmul row, as a GEMM over the tokens wants
 * it), or -1. */
static int row_region(const struct pccx_gemma_plan *rp, uint32_t a, uint64_t words)
{
	int i = pccx__plan_region_of(rp, a, words);

	return i >= 0 && rp->region_words[i] == words ? i : -1;
}

/*
 * Which regions the tokens share (chunk_share.h): what the steps at the first and the last
 * position both leave shareable (a local layer's ring is full at the last); every chunk
 * checks its own tokens' steps against it (check_layout). Then, of the regions each token
 * has a copy of, which hold values at the same op at either position (they cannot share a
 * place), and which a weight matmul reads or writes whole rows of (a GEMM wants the tokens'
 * rows one row apart, so those keep a place of their own width). `seen` is the classifier's
 * scratch.
 */
static int classify(const struct pccx_gemma_model *m, const struct pccx_gemma_plan *rp,
		    uint32_t *seen, struct pccx_chunk_share *sh, struct pccx_chunk_layout *lo,
		    pccx_diag *d)
{
	uint32_t pos[2] = { 0, m->cfg.max_ctx - 1 }, k, i;
	struct pccx_chunk_share one;
	struct pccx_rec rec[2] = { { 0 }, { 0 } };
	uint64_t conflict[PCCX_GEMMA_PLAN_REGIONS];
	int rc = PCCX_OK;
	size_t o;

	sh->scratch = sh->same = ~0ull;
	memset(lo, 0, sizeof(*lo));
	for (k = 0; k < 2 && !rc; k++) {
		rc = pccx__gemma_step(m, rp, pccx__rec_ops(), &rec[k], pos[k], false, NULL);
		if (rc)
			rc = pccx__fail(d, rc, "prompt chunks: recording the step at position %u: %s",
					pos[k], pccx_strerror(rc));
		else if (pccx__chunk_share_classify(rp, &rec[k], seen, &one))
			rc = pccx__fail(d, PCCX_ERR_INTERNAL,
					"prompt chunks: op %d of the step at position %u names L2 "
					"outside one plan region", one.bad_op, pos[k]);
		if (!rc) {
			sh->scratch &= one.scratch;
			sh->same &= one.same;
		}
	}
	lo->shared = sh->scratch | sh->same;
	for (k = 0; k < 2 && !rc; k++) {
		rc = pccx__chunk_share_conflicts(rp, &rec[k], ~lo->shared, seen, conflict);
		if (rc) {
			rc = pccx__fail(d, rc, "prompt chunks: the live values of the step at position "
					"%u: %s", pos[k], pccx_strerror(rc));
			break;
		}
		for (i = 0; i < rp->n_regions; i++)
			lo->conflict[i] |= conflict[i];
		for (o = 0; o < rec[k].n; o++) {
			const struct pccx_npu_matmul *mm = &rec[k].op[o].u.mm;
			int si, di;

			if (!pccx__rec_is_weight_matmul(&rec[k].op[o]))
				continue;
			si = row_region(rp, mm->src, W(mm->k));
			di = row_region(rp, mm->dst, W(mm->n));
			if (si >= 0)
				lo->rows_of |= 1ull << si;
			if (di >= 0)
				lo->rows_of |= 1ull << di;
		}
	}
	pccx__rec_free(&rec[0]);
	pccx__rec_free(&rec[1]);
	return rc;
}

/* Where a token's regions go (place()). */
struct places {
	int place_of[PCCX_GEMMA_PLAN_REGIONS];	/* region i's place, -1: one copy for all */
	uint32_t width[PCCX_GEMMA_PLAN_REGIONS];	/* each place's words */
	uint32_t n;
	uint64_t token, once;			/* L2 words per token, and shared by all */
};

/*
 * The places of a token's regions: widest first, each in the first place as wide as it whose
 * regions never hold values at the same op as it (a region a GEMM reads or writes rows of
 * only in one of its own width), else in a place of its own.
 */
static void place(const struct pccx_gemma_plan *rp, const struct pccx_chunk_layout *lo,
		  struct places *pl)
{
	uint64_t members[PCCX_GEMMA_PLAN_REGIONS], left = 0;
	uint32_t i, s;

	pl->n = 0;
	pl->token = pl->once = 0;
	for (i = 0; i < rp->n_regions; i++) {
		pl->place_of[i] = -1;
		if (!(lo->shared >> i & 1))
			left |= 1ull << i;
		else
			pl->once += rp->region_words[i];
	}
	while (left) {
		uint32_t best = 0;
		bool any = false;

		for (i = 0; i < rp->n_regions; i++)
			if ((left >> i & 1) && (!any || rp->region_words[i] > rp->region_words[best])) {
				best = i;
				any = true;
			}
		left &= ~(1ull << best);
		for (s = 0; s < pl->n; s++)
			if (pl->width[s] >= rp->region_words[best] &&
			    !(lo->conflict[best] & members[s]) &&
			    (!(lo->rows_of >> best & 1) || pl->width[s] == rp->region_words[best]))
				break;
		if (s == pl->n) {
			pl->width[pl->n] = rp->region_words[best];
			pl->token += rp->region_words[best];
			members[pl->n++] = 0;
		}
		members[s] |= 1ull << best;
		pl->place_of[best] = (int)s;
	}
}

static uint32_t rows_fit(uint64_t token, uint64_t once)
{
	uint64_t rows = token && once < PCCX_L2_WORDS ? (PCCX_L2_WORDS - once) / token : 0;

	return rows < PCCX_GEMMA_CHUNK_MAX_ROWS ? (uint32_t)rows : PCCX_GEMMA_CHUNK_MAX_ROWS;
}

uint32_t pccx__gemma_chunk_rows_max(const struct pccx_gemma_model *m,
				    const struct pccx_gemma_plan *p)
{
	struct pccx_chunk_share sh;
	struct pccx_chunk_layout lo;
	struct pccx_gemma_plan rp;
	struct places pl;
	uint32_t *seen, rows;
	pccx_diag d = { 0 };

	if (record_plan(m, p, &rp, &d))
		return 0;	/* experts, or an L2 too small for the chunk layout */
	seen = malloc(2 * sizeof(uint32_t) * PCCX_L2_WORDS);
	if (!seen || classify(m, &rp, seen, &sh, &lo, &d)) {
		free(seen);
		return 0;
	}
	free(seen);
	place(&rp, &lo, &pl);
	rows = rows_fit(pl.token, pl.once);
	return rows < 2 ? 0 : rows;
}

int pccx__gemma_chunk_create(struct pccx_gemma_chunk **out, const struct pccx_gemma_model *m,
			     const struct pccx_gemma_plan *p, uint32_t rows, pccx_diag *d)
{
	struct pccx_gemma_plan rp;
	struct pccx_gemma_chunk *ck;
	struct pccx_chunk_share sh;
	uint64_t next = 0;
	struct places pl;
	uint32_t at[PCCX_GEMMA_PLAN_REGIONS], i, s;
	int rc;

	*out = NULL;
	rc = record_plan(m, p, &rp, d);	/* refuses a model with experts */
	if (rc)
		return rc;
	if (!rows || rows > PCCX_GEMMA_CHUNK_MAX_ROWS)
		return pccx__fail(d, PCCX_ERR_INVALID, "prompt chunks: %u tokens per chunk (1..%u)",
				  rows, PCCX_GEMMA_CHUNK_MAX_ROWS);
	ck = calloc(1, sizeof(*ck));
	if (!ck)
		return pccx__fail(d, PCCX_ERR_NOMEM, "prompt chunks: out of memory");
	ck->m = m;
	ck->p = p;
	ck->rp = rp;
	ck->rows = rows;
	ck->seen = malloc(2 * sizeof(uint32_t) * PCCX_L2_WORDS);
	ck->rec = calloc(rows, sizeof(*ck->rec));
	ck->at = calloc(rows, sizeof(*ck->at));
	if (!ck->seen || !ck->rec || !ck->at) {
		pccx__gemma_chunk_free(ck);
		return pccx__fail(d, PCCX_ERR_NOMEM, "prompt chunks: out of memory");
	}
	rc = classify(m, &ck->rp, ck->seen, &sh, &ck->lo, d);
	if (rc) {
		pccx__gemma_chunk_free(ck);
		return rc;
	}
	ck->scratch = sh.scratch;
	ck->same = sh.same;
	place(&ck->rp, &ck->lo, &pl);
	if ((uint64_t)rows * pl.token + pl.once > PCCX_L2_WORDS) {
		pccx__gemma_chunk_free(ck);
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "prompt chunks: %u tokens of config '%s' need %llu L2 words, L2 has "
				  "%u (at most %u tokens)", rows, m->cfg.name,
				  (unsigned long long)(rows * pl.token + pl.once), PCCX_L2_WORDS,
				  rows_fit(pl.token, pl.once));
	}
	for (s = 0; s < pl.n; s++) {
		at[s] = (uint32_t)next;
		next += (uint64_t)rows * pl.width[s];
	}
	for (i = 0; i < ck->rp.n_regions; i++) {
		if (pl.place_of[i] >= 0) {
			ck->base[i] = at[pl.place_of[i]];
			ck->stride[i] = pl.width[pl.place_of[i]];
			ck->place_of[i] = pl.place_of[i];
			continue;
		}
		ck->base[i] = (uint32_t)next;
		ck->stride[i] = 0;
		ck->place_of[i] = -1;
		next += ck->rp.region_words[i];
	}
	ck->words = (uint32_t)next;
	*out = ck;
	return PCCX_OK;
}

void pccx__gemma_chunk_free(struct pccx_gemma_chunk *ck)
{
	uint32_t r;

	if (!ck)
		return;
	for (r = 0; ck->rec && r < ck->rows; r++)
		pccx__rec_free(&ck->rec[r]);
	free(ck->rec);
	free(ck->at);
	free(ck->seen);
	free(ck);
}

int pccx__gemma_chunk_inputs(const struct pccx_gemma_chunk *ck, const uint32_t *tokens,
			     uint32_t rows, uint32_t pos0, uint8_t *in, pccx_diag *d)
{
	uint32_t r;
	int rc;

	for (r = 0; r < rows; r++) {
		rc = pccx__gemma_host_inputs(ck->m, ck->p, tokens[r], pos0 + r,
					     in + (size_t)r * ck->p->in_bytes, d);
		if (rc)
			return rc;
	}
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Moving a token's op to its copy of the regions.                                        */

struct emitter {
	struct pccx_gemma_chunk *ck;
	const struct pccx_npu_ops *ops;
	void *ctx;
	pccx_diag *d;
	bool said;		/* d already names the failure (else the op implementation does) */
};

/* Token r's address of [a, a + words) in the chunk; false if it is not in one region. */
static bool move(const struct pccx_gemma_chunk *ck, uint32_t r, uint32_t *a, uint64_t words)
{
	int i = pccx__plan_region_of(&ck->rp, *a, words ? words : 1);

	if (i < 0)
		return false;
	*a = ck->base[i] + r * ck->stride[i] + (*a - ck->rp.region[i]);
	return true;
}

/* Token r's host offset: its inputs are the r-th image in BUF_IN. */
static uint64_t host_off(const struct pccx_gemma_chunk *ck, uint32_t r, uint32_t buf,
			 uint64_t off)
{
	return buf == PCCX_NPU_BUF_IN ? off + (uint64_t)r * ck->p->in_bytes : off;
}

static int moved_matmul(const struct pccx_gemma_chunk *ck, uint32_t r,
			struct pccx_npu_matmul *mm)
{
	if (!move(ck, r, &mm->src, (uint64_t)mm->m * W(mm->k)) ||
	    !move(ck, r, &mm->dst, (uint64_t)mm->m * W(mm->n)))
		return PCCX_ERR_INTERNAL;
	mm->w.offset = host_off(ck, r, mm->w.buf, mm->w.offset);
	return PCCX_OK;
}

static bool moved_cvo(const struct pccx_gemma_chunk *ck, uint32_t r, struct pccx_npu_cvo *op)
{
	struct pccx_effects fx;

	if (!pccx__rec_cvo_effects(op, &fx))
		return false;
	/* src: the words from it to the end of what is read (LDS reads one element of it) */
	if (fx.rd[0].words &&
	    !move(ck, r, &op->src, (uint64_t)fx.rd[0].base + fx.rd[0].words - op->src))
		return false;
	return move(ck, r, &op->dst, fx.wr.words);
}

/* Token r's op at its copy of the regions, emitted; begin and end are the chunk's. */
static int emit_moved(struct emitter *em, uint32_t r, const struct pccx_rec_op *op)
{
	const struct pccx_gemma_chunk *ck = em->ck;
	struct pccx_rec_op o = *op;
	bool ok = true;

	switch (o.kind) {
	case PCCX_REC_BEGIN:
	case PCCX_REC_END:
		return PCCX_OK;
	case PCCX_REC_MATMUL:
		if (moved_matmul(ck, r, &o.u.mm))
			ok = false;
		break;
	case PCCX_REC_CVO:
		ok = moved_cvo(ck, r, &o.u.cvo);
		break;
	case PCCX_REC_COPY:
		ok = move(ck, r, &o.u.copy.dst, o.u.copy.words) &&
		     move(ck, r, &o.u.copy.src, o.u.copy.words);
		break;
	case PCCX_REC_LOAD:
	case PCCX_REC_STORE:
		/* a chunk has no logits: nothing of it goes to BUF_OUT */
		ok = o.u.mem.buf != PCCX_NPU_BUF_OUT && move(ck, r, &o.u.mem.l2, W(o.u.mem.n));
		o.u.mem.off = host_off(ck, r, o.u.mem.buf, o.u.mem.off);
		break;
	case PCCX_REC_STAGE:
		ok = move(ck, r, &o.u.stage.addr, (uint64_t)o.u.stage.rows * W(o.u.stage.cols));
		break;
	}
	if (!ok) {
		em->said = true;
		return pccx__fail(em->d, PCCX_ERR_INTERNAL,
				  "prompt chunks: op %d of token %u names L2 outside one plan region "
				  "(or BUF_OUT)", (int)o.kind, r);
	}
	return pccx__rec_replay(&o, em->ops, em->ctx);
}

/*
 * Whether op reads the scalar register before this segment of its token wrote it. The
 * tokens share S, and the other tokens' segments run between two of a token's, so a value
 * in S cannot outlive the segment that made it.
 */
static bool reads_s_from_before(const struct pccx_rec_op *op, bool *written)
{
	struct pccx_effects fx;

	if (op->kind == PCCX_REC_MATMUL) {
		*written = *written || op->u.mm.findemax;
		return false;
	}
	if (op->kind != PCCX_REC_CVO || !pccx__rec_cvo_effects(&op->u.cvo, &fx))
		return false;
	if (fx.reads_s && !*written)
		return true;
	*written = *written || fx.writes_s;
	return false;
}

/* A load of the model's bytes into a block the tokens share (chunk_share.h). */
static bool loads_shared_weights(const struct pccx_gemma_chunk *ck, const struct pccx_rec_op *op)
{
	int i;

	if (op->kind != PCCX_REC_LOAD)
		return false;
	i = pccx__plan_region_of(&ck->rp, op->u.mem.l2, W(op->u.mem.n));
	return i >= 0 && ((ck->same >> i) & 1);
}

/* Whether a token's step holds values of two regions that share a place at the same op. */
static int check_places(const struct pccx_gemma_chunk *ck, const struct pccx_rec *rec,
			pccx_diag *d)
{
	uint64_t conflict[PCCX_GEMMA_PLAN_REGIONS];
	uint32_t i, j;
	int rc = pccx__chunk_share_conflicts(&ck->rp, rec, ~ck->lo.shared, ck->seen, conflict);

	if (rc)
		return pccx__fail(d, rc, "prompt chunks: the live values of position %u: %s",
				  rec->op[0].u.pos, pccx_strerror(rc));
	for (i = 0; i < ck->rp.n_regions; i++)
		for (j = 0; j < ck->rp.n_regions; j++)
			if (i != j && ck->place_of[i] >= 0 && ck->place_of[i] == ck->place_of[j] &&
			    (conflict[i] >> j & 1))
				return pccx__fail(d, PCCX_ERR_INTERNAL,
						  "prompt chunks: position %u holds values of L2 "
						  "regions %u and %u at once, which share a place",
						  rec->op[0].u.pos, i, j);
	return PCCX_OK;
}

/*
 * Whether the tokens' recorded steps keep to the layout: each token's step leaves to its
 * segments what the layout shares (chunk_share.h), never holds values of two regions that
 * share a place at the same op, and every load into a shared block of
 * weights is the one token 0 makes at the same point of its program (later tokens' are left
 * out: token 0's has put the same bytes there, in the same segment, before they run it).
 */
static int check_layout(struct pccx_gemma_chunk *ck, uint32_t rows, pccx_diag *d)
{
	struct pccx_chunk_share sh;
	uint64_t miss;
	uint32_t r;
	size_t o;
	int rc;

	for (r = 0; r < rows; r++) {
		const struct pccx_rec *rec = &ck->rec[r], *rec0 = &ck->rec[0];

		if (pccx__chunk_share_classify(&ck->rp, rec, ck->seen, &sh))
			return pccx__fail(d, PCCX_ERR_INTERNAL,
					  "prompt chunks: op %d of position %u names L2 outside one "
					  "plan region", sh.bad_op, rec->op[0].u.pos);
		miss = (ck->scratch & ~sh.scratch) | (ck->same & ~sh.same);
		if (miss)
			return pccx__fail(d, PCCX_ERR_INTERNAL,
					  "prompt chunks: position %u keeps values in L2 region %d "
					  "that the chunk's tokens share", rec->op[0].u.pos,
					  __builtin_ctzll(miss));
		rc = check_places(ck, rec, d);
		if (rc)
			return rc;
		for (o = 0; r && o < rec->n; o++) {
			const struct pccx_rec_op *a = &rec->op[o], *b = &rec0->op[o < rec0->n ? o : 0];

			if (loads_shared_weights(ck, a) &&
			    (o >= rec0->n || b->kind != PCCX_REC_LOAD || b->u.mem.l2 != a->u.mem.l2 ||
			     b->u.mem.buf != a->u.mem.buf || b->u.mem.off != a->u.mem.off ||
			     b->u.mem.n != a->u.mem.n))
				return pccx__fail(d, PCCX_ERR_INTERNAL,
						  "prompt chunks: op %zu of position %u loads a shared "
						  "block other than position %u does", o,
						  rec->op[0].u.pos, rec0->op[0].u.pos);
		}
	}
	return PCCX_OK;
}

/* Every token's ops up to its next weight matmul (or its end). */
static int emit_segments(struct emitter *em, uint32_t rows)
{
	struct pccx_gemma_chunk *ck = em->ck;
	uint32_t r;
	int rc;

	for (r = 0; r < rows; r++) {
		const struct pccx_rec *rec = &ck->rec[r];
		size_t end = pccx__rec_next_weight_matmul(rec, ck->at[r]);
		bool s_written = false;

		for (; ck->at[r] < end; ck->at[r]++) {
			if (rows > 1 && reads_s_from_before(&rec->op[ck->at[r]], &s_written)) {
				em->said = true;
				return pccx__fail(em->d, PCCX_ERR_INTERNAL,
						  "prompt chunks: op %zu of position %u reads the "
						  "scalar register set before a weight matmul",
						  ck->at[r], rec->op[0].u.pos);
			}
			if (r && loads_shared_weights(ck, &rec->op[ck->at[r]]))
				continue;	/* token 0's load serves (check_layout) */
			rc = emit_moved(em, r, &rec->op[ck->at[r]]);
			if (rc)
				return rc;
		}
	}
	return PCCX_OK;
}

/*
 * The weight matmul every token is at: one GEMM when the tokens' input rows and output rows
 * fall one row apart (their regions are one row wide), else one GEMV per token.
 */
static int emit_weight_matmul(struct emitter *em, uint32_t rows)
{
	struct pccx_gemma_chunk *ck = em->ck;
	const struct pccx_npu_matmul *mm = &ck->rec[0].op[ck->at[0]].u.mm;
	struct pccx_wshape ws = { mm->n, mm->k, mm->fmt, true };
	uint64_t bytes = (uint64_t)mm->n * pccx__wstream_row_bytes(&ws);
	int si = row_region(&ck->rp, mm->src, W(mm->k));
	int di = row_region(&ck->rp, mm->dst, W(mm->n));
	uint32_t r;
	int rc;

	if (rows > 1 && si >= 0 && di >= 0 && !shared(ck, (uint32_t)si) &&
	    !shared(ck, (uint32_t)di) && ck->stride[si] == W(mm->k) &&
	    ck->stride[di] == W(mm->n)) {
		struct pccx_npu_matmul g = *mm;

		rc = moved_matmul(ck, 0, &g);
		if (rc) {
			em->said = true;
			return pccx__fail(em->d, rc, "prompt chunks: a weight matmul outside L2");
		}
		g.m = rows;
		rc = em->ops->matmul(em->ctx, &g);
		ck->st.gemm_bytes += bytes;
		ck->st.gemms++;
	} else {
		for (r = 0, rc = PCCX_OK; r < rows && !rc; r++)
			rc = emit_moved(em, r, &ck->rec[r].op[ck->at[r]]);
		ck->st.gemv_bytes += bytes * rows;
	}
	for (r = 0; r < rows; r++)
		ck->at[r]++;
	return rc;
}

int pccx__gemma_chunk_step(struct pccx_gemma_chunk *ck, const struct pccx_npu_ops *ops,
			   void *ctx, uint32_t pos0, uint32_t rows, pccx_diag *d)
{
	struct emitter em = { ck, ops, ctx, d, false };
	uint32_t r;
	int rc;

	if (!rows || rows > ck->rows || pos0 + rows > ck->m->cfg.max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "prompt chunk: %u tokens at position %u (chunk of %u, max_ctx %u)",
				  rows, pos0, ck->rows, ck->m->cfg.max_ctx);
	for (r = 0; r < rows; r++) {
		pccx__rec_clear(&ck->rec[r]);
		ck->at[r] = 0;
		rc = pccx__gemma_step(ck->m, &ck->rp, pccx__rec_ops(), &ck->rec[r], pos0 + r, false,
				      NULL);
		if (rc)
			return pccx__fail(d, rc, "prompt chunk: recording position %u: %s", pos0 + r,
					  pccx_strerror(rc));
	}
	rc = pccx__rec_check_lockstep(ck->rec, rows, d);
	if (!rc)
		rc = check_layout(ck, rows, d);
	if (rc)
		return rc;
	rc = ops->begin(ctx, pos0);
	while (!rc) {
		rc = emit_segments(&em, rows);
		if (rc || ck->at[0] == ck->rec[0].n)
			break;
		rc = emit_weight_matmul(&em, rows);
	}
	if (!rc)
		rc = ops->end(ctx);
	if (rc && !em.said)
		pccx__fail(d, rc, "prompt chunk at position %u: %s", pos0,
			   ops->error ? ops->error(ctx) : pccx_strerror(rc));
	return rc;
}
