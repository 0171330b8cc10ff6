// SPDX-License-Identifier: MIT
/*
 * The Gemma decode step as NPU ops, written once, top to bottom in the order of the model
 * (Hugging Face Gemma3nTextModel / Gemma3nTextDecoderLayer; research note model-sim-anchors
 * §1.3; Gemma, Gemma2 and Gemma3's text models for the other families). Every op is one v002
 * instruction on L2 word addresses from the plan; the host only supplies the per-step inputs
 * (embedding row, PLE row, RoPE tables, constants). What differs between layers comes from
 * the model's layer table (m->layers[l], layers.h), never from l; what differs between
 * families is the layer table and, for Gemma 3n's AltUp streams, LAuReL and per-layer
 * embeddings, the ops of those pieces (family.h).
 *
 * Issue order. The device issues in order, and SFU work issued behind a GEMV it does not
 * depend on runs while that GEMV's weights stream (docs/sim.md, the E4B decode step). So
 * the order of the ops is tuned for the weight stream and differs from the model's in a few
 * places, each marked the same way, on the line after the GEMV it is about:
 *
 *	gemv(e, lw->attn_q, ...);
 *	behind(e, lw->attn_q);	// model: <where the model puts what follows>
 *
 * which says that the ops from there up to the next matmul run behind the GEMV of that tensor,
 * and the comment names those of them the model places elsewhere, and where. behind() checks
 * that the named GEMV is the last one issued (a step whose marks went stale fails with
 * PCCX_ERR_INTERNAL). Nothing else is reordered: the ops between marks follow the model, so
 * moving each marked run back to its stated place gives the model's order. The ops swapped
 * do not depend on each other, and both executors run the same order, so every value is the
 * one the model's order gives.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "gemma_graph.h"
#include "pccx_num.h"
#include "pccx_regs.h"

#define W(n) pccx_words_for(n)
#define EPW PCCX_L2_ELEMS_PER_WORD
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define NSTREAM PCCX_GEMMA_ALTUP_STREAMS

/* Largest matmul n / CVO len that keeps the next row word-aligned (16-bit fields). */
#define CHUNK 65528u
/*
 * Rows per GEMV of large tensors (the LM head). A GEMV streams its rows in four contiguous
 * quarters, one per port; with 16384 rows of a 2048-wide Q4 tensor the quarters start
 * 4.5 MiB apart and the four streams fall in different DDR banks, where 65528-row pieces
 * made them collide (row misses cost the LM head 38 % of its time in the simulator).
 */
#define GEMV_CHUNK 16384u
/* Rows of the LM head's last GEMV (lm_piece_rows). */
#define LM_TAIL 4096u
/* W_q's last heads, a GEMV each, in a layer that writes no KV (forward_q_heads). */
#define Q_TAIL_HEADS 2u
/* W_gate of a sparse layer is issued in this many GEMVs with FEATURES.RACC (gate_pieces). */
#define GATE_PIECES 4u
/* W_up is issued in this many GEMVs (forward_ffn), unless the plan says otherwise. */
#define UP_PIECES 4u
/* ... in a prompt chunk, into two piece buffers (plan.up_ring) */
#define CHUNK_UP_PIECES 8u

/* ===================================================================================== */
/* The L2 plan and the host buffers.                                                     */

/* Note a region of the plan (gemma_graph.h); more than the array holds fails the plan. */
static void add_region(struct pccx_gemma_plan *p, uint64_t base, uint64_t words)
{
	if (!words)
		return;
	if (p->n_regions < PCCX_GEMMA_PLAN_REGIONS) {
		p->region[p->n_regions] = (uint32_t)base;
		p->region_words[p->n_regions] = (uint32_t)words;
	}
	p->n_regions++;
}

static uint32_t take(struct pccx_gemma_plan *p, uint64_t *next, uint64_t words)
{
	uint32_t a = (uint32_t)*next;

	add_region(p, *next, words);
	*next += words;
	return a;
}

/* take() for a block of weight bytes every position loads alike (plan.region_same). */
static uint32_t take_same(struct pccx_gemma_plan *p, uint64_t *next, uint64_t words)
{
	if (words && p->n_regions < PCCX_GEMMA_PLAN_REGIONS)
		p->region_same |= 1ull << p->n_regions;
	return take(p, next, words);
}

/*
 * What the plan must hold for every layer: the largest attention shapes of the kinds (every
 * layer's are its kind's), the widest FFN and the largest layer vector block, in L2 words.
 */
struct plan_sizes {
	uint32_t max_keys;	/* keys a query may see: the most KV rows */
	uint64_t q;		/* n_heads * W(head_dim): q, the rotate-half scratch, the context */
	uint64_t kv;		/* n_kv_heads * W(head_dim): k, v */
	uint64_t scores;	/* (n_heads / n_kv_heads, max_keys) */
	uint64_t ffn;		/* W(d_ffn): gate, up */
	uint32_t ffn_narrow;	/* the narrowest d_ffn of a layer without experts */
	uint64_t lvec;		/* the layer vector block */
	uint32_t experts;	/* the most experts of a layer (0: no mixture of experts) */
	uint32_t experts_used;	/* the most a layer chooses */
};

/* The sizes, or PCCX_ERR_UNSUPPORTED for layers the graph does not run. */
static int plan_sizes(const struct pccx_gemma_model *m, struct plan_sizes *sz, pccx_diag *d)
{
	const struct pccx_gemma_config *c = &m->cfg;
	uint32_t group = 0, t, l;

	memset(sz, 0, sizeof(*sz));
	for (t = 0; t < PCCX_ATTN_KINDS; t++) {
		const struct pccx_attn_desc *a = &m->attn[t];

		sz->max_keys = MAX(sz->max_keys, a->kv_rows);
		sz->q = MAX(sz->q, (uint64_t)a->n_heads * W(a->head_dim));
		sz->kv = MAX(sz->kv, (uint64_t)a->n_kv_heads * W(a->head_dim));
		group = MAX(group, a->n_heads / a->n_kv_heads);
	}
	sz->scores = (uint64_t)group * W(sz->max_keys);
	for (l = 0; l < c->n_layers; l++) {
		const struct pccx_layer_desc *ly = &m->layers[l];

		/* one FP32 constant holds each of these: layers cannot have their own (yet) */
		if ((ly->sparse && ly->sparse_z != c->sparse_z) ||
		    ly->q_scale != m->layers[0].q_scale ||
		    ly->attn_softcap != m->layers[0].attn_softcap)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
					  "config '%s': layer %u: a sparse_z, q scale or score "
					  "soft-cap of its own", c->name, l);
		sz->ffn = MAX(sz->ffn, W(MAX(ly->d_ffn, ly->d_expert)));
		if (!ly->n_experts && (!sz->ffn_narrow || ly->d_ffn < sz->ffn_narrow))
			sz->ffn_narrow = ly->d_ffn;
		sz->experts = MAX(sz->experts, ly->n_experts);
		sz->experts_used = MAX(sz->experts_used, ly->n_experts_used);
		sz->lvec = MAX(sz->lvec, m->w.layer[l].vec_bytes / 16);
	}
	return PCCX_OK;
}

/* Rows per piece of an FFN matrix of F rows (W_up, W_gate): a multiple of 8 (whole words, and
 * whole bytes of a rowmask). */
static uint32_t ffn_piece_rows(uint32_t F, uint32_t pieces)
{
	return ((F + pieces - 1) / pieces + 7) & ~7u;
}

/*
 * q, k, v and the context per attention kind (plan.q_of ...): the largest regions for all in
 * a decode step; in a chunk's plan each kind whose shape is not the largest gets regions of
 * its own shape after them (a kind of the same shape as an earlier one shares its regions).
 */
static void attn_regions(const struct pccx_gemma_model *m, struct pccx_gemma_plan *p,
			 uint64_t *next, bool chunk, const struct plan_sizes *sz)
{
	uint32_t t, u;

	for (t = 0; t < PCCX_ATTN_KINDS; t++) {
		const struct pccx_attn_desc *a = &m->attn[t];
		uint64_t q = (uint64_t)a->n_heads * W(a->head_dim);
		uint64_t kv = (uint64_t)a->n_kv_heads * W(a->head_dim);

		p->q_of[t] = p->q;
		p->k_of[t] = p->k;
		p->v_of[t] = p->v;
		p->ctx_of[t] = p->ctx;
		if (!chunk || (q == sz->q && kv == sz->kv))
			continue;
		for (u = 0; u < t; u++) {
			const struct pccx_attn_desc *b = &m->attn[u];

			if ((uint64_t)b->n_heads * W(b->head_dim) == q &&
			    (uint64_t)b->n_kv_heads * W(b->head_dim) == kv)
				break;
		}
		if (u < t) {
			p->q_of[t] = p->q_of[u];
			p->k_of[t] = p->k_of[u];
			p->v_of[t] = p->v_of[u];
			p->ctx_of[t] = p->ctx_of[u];
			continue;
		}
		p->q_of[t] = take(p, next, q);
		p->k_of[t] = take(p, next, kv);
		p->v_of[t] = take(p, next, kv);
		p->ctx_of[t] = take(p, next, q);
	}
}

/* The fewest rows of W_q among the layers that write no KV (0 if every layer writes KV). */
static uint32_t q_rows_kv_free(const struct pccx_gemma_model *m)
{
	uint32_t l, rows, fewest = 0;

	for (l = 0; l < m->cfg.n_layers; l++) {
		rows = m->layers[l].n_heads * m->layers[l].head_dim;
		if (!m->layers[l].kv_write && (!fewest || rows < fewest))
			fewest = rows;
	}
	return fewest;
}

static int plan_build(const struct pccx_gemma_model *m, struct pccx_gemma_plan *p,
		      bool ple_at_start, bool chunk, pccx_diag *d)
{
	const struct pccx_gemma_config *c = &m->cfg;
	uint32_t D = c->d_model, L = c->n_layers, P = c->d_ple, t, l;
	uint64_t next = 0, kv = 0, scratch;
	struct plan_sizes sz;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = plan_sizes(m, &sz, d);
	if (rc)
		return rc;
	p->max_keys = sz.max_keys;

	/* The image of BUF_IN, in the order the host writes it. */
	p->in = take(p, &next, 0);
	p->consts = take(p, &next, PCCX_GEMMA_NCONST);
	p->ones = take(p, &next, 1);
	for (t = 0; t < PCCX_ATTN_KINDS; t++) {
		p->rope_cos[t] = take(p, &next, W(m->attn[t].head_dim));
		p->rope_sin[t] = take(p, &next, W(m->attn[t].head_dim));
	}
	p->embed = take(p, &next, W(D));
	/* with per-layer input slices each layer loads its PLE row's slice: the row follows the
	 * image in BUF_IN, and L2 holds one slice */
	p->ple_slices = pccx__gemma_config_ple(c) && !sz.experts && !ple_at_start;
	if (!p->ple_slices)
		p->ple_in = take(p, &next, W((uint64_t)L * P));
	p->moe_w = take(p, &next, W(sz.experts_used));
	p->in_words = (uint32_t)next - p->in;
	p->ple_in_word = p->ple_slices ? p->in_words : p->ple_in - p->in;
	/* one region: a single load brings the whole image in */
	p->n_regions = 0;
	add_region(p, p->in, p->in_words);
	if (p->ple_slices)
		p->ple_in = take(p, &next, W(P));

	for (t = 0; t < PCCX_ATTN_KINDS; t++) {
		uint64_t words = (uint64_t)m->attn[t].n_heads * W(m->attn[t].head_dim);

		p->rep_cos[t] = take(p, &next, words);
		p->rep_sin[t] = take(p, &next, words);
	}
	p->gvec = take_same(p, &next, m->w.gvec_bytes / 16);
	p->lvec = take_same(p, &next, sz.lvec);
	p->lvec_odd = L > 1 ? take_same(p, &next, sz.lvec) : p->lvec;
	p->xs[0] = take(p, &next, NSTREAM * W(D));
	p->xs[1] = take(p, &next, NSTREAM * W(D));
	/* the projections of the embedding read it inside the image, unless it is copied out */
	p->embed_mm = chunk && (pccx__gemma_config_ple(c) || pccx__family(c->family)->altup) ?
			      take(p, &next, W(D)) : p->embed;
	/* the per-layer inputs: all of them, or the one slice of the layer being run */
	p->u = take(p, &next, p->ple_slices ? W(P) : W((uint64_t)L * P));
	p->h = take(p, &next, W(D));
	p->lr = take(p, &next, W(D));
	p->rm = take(p, &next, 1);
	p->coefs = take(p, &next, W(NSTREAM * NSTREAM));
	p->corr = take(p, &next, 1);
	p->scal = take(p, &next, PCCX_GEMMA_NSCAL);
	/*
	 * The working set of a layer. The LM head runs after the last layer and reads only h, so
	 * its logits reuse these words: L2 holds the larger of the two, not their sum.
	 */
	scratch = next;
	p->lrank = take(p, &next, W(c->laurel_rank));
	p->q = take(p, &next, sz.q);
	p->k = take(p, &next, sz.kv);
	p->v = take(p, &next, sz.kv);
	p->swap = take(p, &next, sz.q);
	p->scores = take(p, &next, sz.scores);
	p->ctx = take(p, &next, sz.q);
	attn_regions(m, p, &next, chunk, &sz);
	p->o = take(p, &next, W(D));
	p->al = take(p, &next, W(D));
	p->t = take(p, &next, W(D));
	p->gate = take(p, &next, sz.ffn);
	if (chunk) {
		uint32_t piece = ffn_piece_rows(sz.ffn * EPW, CHUNK_UP_PIECES);

		p->up = take(p, &next, W(piece));
		p->up2 = take(p, &next, W(piece));
		if (sz.ffn_narrow && W(sz.ffn_narrow) < sz.ffn) {
			piece = ffn_piece_rows(sz.ffn_narrow, CHUNK_UP_PIECES);
			p->ffn_narrow = sz.ffn_narrow;
			p->gate_n = take(p, &next, W(sz.ffn_narrow));
			p->up_n = take(p, &next, W(piece));
			p->up2_n = take(p, &next, W(piece));
		}
	} else {
		p->up = take(p, &next, sz.ffn);
	}
	p->f = take(p, &next, W(D));
	p->innov = take(p, &next, W(D));
	p->tmp = take(p, &next, W(D));
	p->hsum = take(p, &next, W(D));
	p->pleg = take(p, &next, W(P));
	p->rlog = take(p, &next, W(sz.experts));
	p->t2 = take(p, &next, sz.experts ? W(D) : 0);
	p->acc = take(p, &next, sz.experts ? W(D) : 0);
	p->logits = (uint32_t)scratch;
	next = MAX(next, scratch + W(c->vocab));
	if (p->n_regions > PCCX_GEMMA_PLAN_REGIONS)
		return pccx__fail(d, PCCX_ERR_INTERNAL, "plan: %u regions, room for %u",
				  p->n_regions, PCCX_GEMMA_PLAN_REGIONS);
	p->up_pieces = chunk ? CHUNK_UP_PIECES : UP_PIECES;
	p->up_ring = chunk;
	p->q_pieces = !chunk && q_rows_kv_free(m) >= PCCX_GEMMA_Q_PIECES_MIN_ROWS;
	p->rowmask = false;
	p->colskip = false;
	p->smul = false;
	p->racc = false;
	p->rope_per_use = chunk;
	if (next > PCCX_L2_WORDS)
		return pccx__fail(
			d, PCCX_ERR_RANGE,
			"config '%s': the L2 plan needs %llu words, L2 has %u (lower max_ctx)",
			c->name, (unsigned long long)next, PCCX_L2_WORDS);
	p->words = (uint32_t)next;

	p->in_bytes = (uint64_t)p->in_words * 16;
	if (p->ple_slices)
		p->in_bytes += (uint64_t)W((uint64_t)L * P) * 16;	/* the PLE row */
	p->out_bytes = (uint64_t)W(c->vocab) * 16;
	if (sz.experts) {
		p->out_rlog = p->out_bytes;
		p->out_spill_al = p->out_rlog + (uint64_t)W(sz.experts) * 16;
		p->out_spill_f = p->out_spill_al + (uint64_t)W(D) * 16;
		p->out_spill_u = p->out_spill_f + (uint64_t)W(D) * 16;
		p->out_bytes = p->out_spill_u + (uint64_t)W((uint64_t)L * P) * 16;
	}
	for (l = 0; l < L; l++) {
		const struct pccx_layer_desc *ly = &m->layers[l];

		if (!ly->kv_write)
			continue;
		p->kv_off[l] = kv;
		kv += 2ull * ly->n_kv_heads * ly->kv_rows * W(ly->head_dim) * 16;
	}
	p->kv_bytes = kv;
	return PCCX_OK;
}

int pccx__gemma_plan_build(const struct pccx_gemma_model *m, struct pccx_gemma_plan *p,
			     pccx_diag *d)
{
	return plan_build(m, p, false, false, d);
}

void pccx__gemma_plan_use_features(struct pccx_gemma_plan *p, const struct pccx_gemma_model *m,
				   uint64_t features, bool no_sparse)
{
	/* RMSNorm's scale and weight in one SFU pass */
	p->smul = (features & PCCX_FEAT_SMUL) != 0;
	/* the Gaussian top-k's mean summed piece by piece behind W_gate's pieces, where the
	 * sparse layers are wide enough for that to pay */
	p->racc = (features & PCCX_FEAT_RACC) &&
		  pccx__gemma_sparse_ffn(m) >= PCCX_GEMMA_RACC_MIN_FFN;
	/* sparse layers read only the kept rows of W_up ... */
	p->rowmask = (features & PCCX_FEAT_ROWMASK) && !no_sparse;
	/* ... and only the columns of W_down whose hidden units are not 0 */
	p->colskip = (features & PCCX_FEAT_COLSKIP) && !no_sparse;
}

void pccx__gemma_plan_for_rows(struct pccx_gemma_plan *p)
{
	p->rowmask = false;
	p->colskip = false;
	p->racc = false;
}

int pccx__gemma_plan_build_chunk(const struct pccx_gemma_model *m, struct pccx_gemma_plan *p,
				   pccx_diag *d)
{
	uint32_t l;

	for (l = 0; l < m->cfg.n_layers; l++)
		if (m->layers[l].n_experts)
			return pccx__fail(d, PCCX_ERR_UNSUPPORTED,
					  "prompt chunks: config '%s' has experts, chosen between "
					  "the jobs of a step", m->cfg.name);
	return plan_build(m, p, false, true, d);
}

int pccx__gemma_plan_build_ple_at_start(const struct pccx_gemma_model *m,
					struct pccx_gemma_plan *p, pccx_diag *d)
{
	return plan_build(m, p, true, false, d);
}

uint64_t pccx__gemma_kv_block(const struct pccx_gemma_model *m,
				const struct pccx_gemma_plan *p, uint32_t layer, uint32_t head,
				unsigned v, uint64_t *bytes)
{
	const struct pccx_layer_desc *ly = &m->layers[layer];
	uint64_t row_bytes = (uint64_t)W(ly->head_dim) * 16;

	if (bytes)
		*bytes = (uint64_t)ly->kv_rows * row_bytes;
	return p->kv_off[layer] + ((uint64_t)v * ly->n_kv_heads + head) * ly->kv_rows * row_bytes;
}

/* Byte offset in the KV buffer of row `row` of (KV-writing layer, kv head, 0 = K / 1 = V). */
static uint64_t kv_row_offset(const struct pccx_gemma_model *m, const struct pccx_gemma_plan *p,
				uint32_t layer, uint32_t head, unsigned v, uint32_t row)
{
	return pccx__gemma_kv_block(m, p, layer, head, v, NULL) +
	       (uint64_t)row * W(m->layers[layer].head_dim) * 16;
}

uint32_t pccx__gemma_n_keys(const struct pccx_layer_desc *ly, uint32_t pos)
{
	return ly->window && pos + 1 > ly->window ? ly->window : pos + 1;
}

/* ===================================================================================== */
/* Per-step inputs computed by the host.                                                 */

/* Element i of the vector at `word` of the input image (little-endian FP32). */
static void put_f32(uint8_t *in, uint32_t word, uint32_t i, float v)
{
	uint32_t b = pccx_f32_bits(v);
	uint8_t *o = in + 16ull * word + 4ull * i;

	o[0] = (uint8_t)b;
	o[1] = (uint8_t)(b >> 8);
	o[2] = (uint8_t)(b >> 16);
	o[3] = (uint8_t)(b >> 24);
}

/*
 * ln x for x > 1 in FP32 by Halley's iteration on exp: y <- y + 2 (x - e^y) / (x + e^y),
 * starting from (unbiased exponent) * ln 2. Only isa/num operations, so every host agrees.
 */
static float ln_f32(float x)
{
	int e = (int)((pccx_f32_bits(x) >> 23) & 0xFF) - 127;
	float y = (float)e * 0.693147182f, ey;
	int i;

	for (i = 0; i < 8; i++) {
		ey = pccx__f32_exp(y);
		y = y + 2.0f * (x - ey) / (x + ey);
	}
	return y;
}

int pccx__gemma_host_inputs(const struct pccx_gemma_model *m, const struct pccx_gemma_plan *p,
			      uint32_t token, uint32_t pos, uint8_t *in, pccx_diag *d)
{
	const struct pccx_gemma_config *c = &m->cfg;
	const struct pccx_gemma_weights *w = &m->w;
	uint32_t D = c->d_model, i, t;
	float consts[PCCX_GEMMA_NCONST], scale;
	uint32_t base = p->in;
	const uint8_t *rec;

	if (token >= c->vocab)
		return pccx__fail(d, PCCX_ERR_RANGE, "token %u outside the vocabulary (%u)", token,
				  c->vocab);
	if (pos >= c->max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE, "position %u beyond the context (%u)", pos,
				  c->max_ctx);
	memset(in, 0, p->in_bytes);

	consts[PCCX_GEMMA_C_EPS] = c->eps;
	consts[PCCX_GEMMA_C_INV_D] = 1.0f / (float)D;
	consts[PCCX_GEMMA_C_INV_SQRT_D] = pccx__f32_rsqrt((float)D);
	consts[PCCX_GEMMA_C_INV_SQRT2] = pccx__f32_rsqrt(2.0f);
	consts[PCCX_GEMMA_C_MAG_EPS] = 1e-5f;
	consts[PCCX_GEMMA_C_QUARTER] = 0.25f;
	consts[PCCX_GEMMA_C_SPARSE_Z] = c->sparse_z;
	consts[PCCX_GEMMA_C_NEG_ONE] = -1.0f;
	consts[PCCX_GEMMA_C_SOFTCAP] = c->softcap;
	consts[PCCX_GEMMA_C_Q_SCALE] = m->layers[0].q_scale;
	consts[PCCX_GEMMA_C_ATTN_SOFTCAP] = m->layers[0].attn_softcap;
	consts[PCCX_GEMMA_C_SPARSE_F] = (float)pccx__gemma_sparse_ffn(m);
	for (i = 0; i < PCCX_GEMMA_NCONST; i++)
		put_f32(in, p->consts - base + i, 0, consts[i]);
	for (i = 0; i < EPW; i++)
		put_f32(in, p->ones - base, i, 1.0f);

	/*
	 * RoPE of each attention kind, rotate-half pairing i <-> i + hd/2:
	 * phase_i = pos * theta^(-2i/hd) in FP32, the inverse frequency divided by the linear
	 * scaling factor where the kind has one (Hugging Face's "linear" rope_type).
	 */
	for (t = 0; t < PCCX_ATTN_KINDS; t++) {
		uint32_t hd = m->attn[t].head_dim, half = hd / 2;
		float ln_theta = ln_f32(m->attn[t].theta), factor = m->attn[t].rope_factor;

		for (i = 0; i < half; i++) {
			float frac = (float)(2 * i) / (float)hd;
			float inv_freq = pccx__f32_exp(-(frac * ln_theta));
			float ph, cs, sn;

			if (factor != 1.0f)
				inv_freq = inv_freq / factor;
			if (i >= m->attn[t].rope_dims / 2)
				inv_freq = 0.0f;	/* a pair that does not rotate */
			ph = (float)pos * inv_freq;
			cs = pccx__f32_cos(ph);
			sn = pccx__f32_sin(ph);

			put_f32(in, p->rope_cos[t] - base, i, cs);
			put_f32(in, p->rope_cos[t] - base, i + half, cs);
			put_f32(in, p->rope_sin[t] - base, i, -sn);
			put_f32(in, p->rope_sin[t] - base, i + half, sn);
		}
	}

	/* Embedding row, dequantised, times sqrt(D) (FP32, one rounding; family.h). */
	scale = pccx__f32_sqrt((float)D);
	if (pccx__family(c->family)->embed_scale_bf16)
		scale = pccx__bf16_to_f32(pccx__f32_to_bf16(scale));
	rec = pccx_gemma_row(m, w->embed, token);
	for (i = 0; i < D; i++) {
		float x = pccx__q4_weight(pccx_gemma_q4_nibbles(rec, D),
					  pccx_gemma_q4_scales(rec), i);

		put_f32(in, p->embed - base, i, x * scale);
	}

	if (!pccx__gemma_config_ple(c))
		return PCCX_OK;
	/* PLE row times sqrt(d_ple); ids beyond the PLE table use row 0 (Hugging Face). */
	scale = pccx__f32_sqrt((float)c->d_ple);
	if (pccx__family(c->family)->embed_scale_bf16)
		scale = pccx__bf16_to_f32(pccx__f32_to_bf16(scale));
	rec = pccx_gemma_row(m, w->ple_table, token < c->ple_vocab ? token : 0);
	for (i = 0; i < c->n_layers * c->d_ple; i++) {
		uint32_t cols = c->n_layers * c->d_ple;
		float x =
			pccx__q4_weight(pccx_gemma_q4_nibbles(rec, cols),
					pccx_gemma_q4_scales(rec), i);

		put_f32(in, p->ple_in_word, i, x * scale);
	}
	return PCCX_OK;
}

/* ===================================================================================== */
/* The op emitter: ops are issued in order; the first failure sticks and ends the step.  */

struct emit {
	const struct pccx_npu_ops *ops;
	void *ctx;
	const struct pccx_gemma_model *m;
	const struct pccx_gemma_config *c;
	const struct pccx_gemma_plan *p;
	const struct pccx_gemma_host *hb;	/* NULL: trace every weight (pccx__gemma_step) */
	uint32_t pos;
	bool altup;		/* Gemma 3n's AltUp streams, LAuReL and PLE (family.h) */
	int32_t last_w;		/* weight tensor of the last matmul issued (-1: KV rows) */
	bool rowmask;		/* the matmuls issued now are rowmask GEMVs (forward_ffn_sparse) */
	uint32_t coefs_of;	/* the layer whose AltUp coefficients were issued ahead, or ~0 */
	uint32_t vecs_of;	/* the layer whose vector block was loaded ahead, or ~0 */
	int rc;
};

static void matmul(struct emit *e, uint32_t fmt, struct pccx_npu_wref w, uint32_t n, uint32_t k,
		   uint32_t rows, uint32_t src, uint32_t dst, bool accm)
{
	struct pccx_npu_matmul mm = {
		.dst = dst, .src = src, .n = n, .k = k, .m = rows, .fmt = fmt, .accm = accm,
		.rowmask = e->rowmask, .w = w,
	};

	e->last_w = w.tensor;
	if (!e->rc)
		e->rc = e->ops->matmul(e->ctx, &mm);
}

/*
 * The schedule mark (see the top of the file): the ops that follow, up to the next matmul,
 * are issued behind the GEMV of tensor t for the weight stream, not all at their place in the
 * model. t must be the tensor of the last matmul issued.
 */
static void behind(struct emit *e, int32_t t)
{
	if (!e->rc && e->last_w != t)
		e->rc = PCCX_ERR_INTERNAL;
}

/*
 * y = W x over rows [r0, r0 + rows) of weight tensor `t` into dst (the output of row r0),
 * as GEMVs of at most GEMV_CHUNK rows.
 */
static void gemv_rows(struct emit *e, int32_t t, uint32_t r0, uint32_t rows, uint32_t src,
		      uint32_t dst, bool accm)
{
	const struct pccx_gemma_tensor *T = &e->m->t[t];
	uint32_t r, n;

	for (r = 0; r < rows; r += n) {
		struct pccx_npu_wref w = {
			.buf = PCCX_NPU_BUF_WEIGHTS,
			.offset = T->offset + (uint64_t)(r0 + r) * T->row_bytes,
			.tensor = t,
			.row0 = r0 + r,
		};

		n = rows - r < GEMV_CHUNK ? rows - r : GEMV_CHUNK;
		matmul(e, T->fmt, w, n, T->cols, 1, src, dst + r / EPW, accm);
	}
}

/* y = W x over all rows of weight tensor `t`. */
static void gemv(struct emit *e, int32_t t, uint32_t src, uint32_t dst, bool accm)
{
	gemv_rows(e, t, 0, e->m->t[t].rows, src, dst, accm);
}

/*
 * y = W x from the q4c copy of tensor `t` at byte `offset` (gemma_model.h: down_q4c), one GEMV
 * that reads only the columns of the inputs whose INT8 value is not 0: the bits of gemv() on
 * `t` (its scales are finite, pccx__gemma_model_q4c checked them).
 */
static void gemv_q4c(struct emit *e, int32_t t, uint64_t offset, uint32_t src, uint32_t dst)
{
	const struct pccx_gemma_tensor *T = &e->m->t[t];
	struct pccx_npu_wref w = {
		.buf = PCCX_NPU_BUF_WEIGHTS, .offset = offset, .tensor = t, .row0 = 0,
	};

	matmul(e, PCCX_WFMT_Q4C, w, T->rows, T->cols, 1, src, dst, false);
}

static void cvo(struct emit *e, uint32_t func, uint32_t flags, uint32_t src, uint32_t dst,
		uint32_t len)
{
	struct pccx_npu_cvo op = {
		.func = func, .flags = flags, .src = src, .dst = dst, .len = len
	};

	if (!e->rc)
		e->rc = e->ops->cvo(e->ctx, &op);
}

/* The vector form over any length (chunks of at most 65528 elements). */
static void cvo_vec(struct emit *e, uint32_t func, uint32_t flags, uint32_t src, uint32_t dst,
		    uint32_t len)
{
	uint32_t i, n;

	for (i = 0; i < len; i += n) {
		n = len - i < CHUNK ? len - i : CHUNK;
		cvo(e, func, flags, src + i / EPW, dst + i / EPW, n);
	}
}

/* S <- constant c. */
static void s_const(struct emit *e, enum pccx_gemma_const c)
{
	cvo(e, PCCX_CVO_LDS, 0, e->p->consts + c, e->p->scal + PCCX_GEMMA_S_DUMP, 0);
}

/* S <- S op v, v = element 0 of word `v`; the result also lands in scratch word `keep`. */
static void s_op(struct emit *e, uint32_t func, uint32_t v, enum pccx_gemma_scal keep)
{
	cvo(e, func, PCCX_CVOF_SREG, v, e->p->scal + keep, 0);
}

/* S <- f(S) (no vector operand: src is 0). */
static void s_fn(struct emit *e, uint32_t func, enum pccx_gemma_scal keep)
{
	cvo(e, func, PCCX_CVOF_SREG, 0, e->p->scal + keep, 0);
}

static void copy(struct emit *e, uint32_t dst, uint32_t src, uint32_t words)
{
	if (!e->rc)
		e->rc = e->ops->copy(e->ctx, dst, src, words);
}

static void load(struct emit *e, uint32_t dst, uint32_t buf, uint64_t off, uint32_t n)
{
	if (!e->rc)
		e->rc = e->ops->load(e->ctx, dst, buf, off, n);
}

static void store(struct emit *e, uint32_t buf, uint64_t off, uint32_t src, uint32_t n)
{
	if (!e->rc)
		e->rc = e->ops->store(e->ctx, buf, off, src, n);
}

static void stage(struct emit *e, uint32_t addr, uint32_t rows, uint32_t cols, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void stage(struct emit *e, uint32_t addr, uint32_t rows, uint32_t cols, const char *fmt, ...)
{
	char name[64];
	va_list ap;

	if (e->rc || !e->ops->stage)
		return;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	e->rc = e->ops->stage(e->ctx, name, addr, rows, cols);
}

/* L2 word of layer `layer`'s vector block (even and odd layers alternate between two). */
static uint32_t lvec_block(const struct pccx_gemma_plan *p, uint32_t layer)
{
	return layer % 2 ? p->lvec_odd : p->lvec;
}

/*
 * Load layer `layer`'s vector block, unless it was loaded ahead (forward_ffn loads layer
 * l+1's behind layer l's W_gate: its block is layer l-1's, which nothing reads any more, and
 * loaded at the layer's start it held up the layer's first norm by the load's time).
 */
static void load_layer_vectors(struct emit *e, uint32_t layer)
{
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[layer];

	if (e->vecs_of == layer)
		return;
	e->vecs_of = layer;
	load(e, lvec_block(e->p, layer), PCCX_NPU_BUF_WEIGHTS, lw->vec_offset,
	     (uint32_t)(lw->vec_bytes / sizeof(float)));
}

/* L2 word of layer vector k (inside the layer's vector block). */
static uint32_t lvec(struct emit *e, uint32_t layer, enum pccx_gemma_lvec k)
{
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[layer];

	return lvec_block(e->p, layer) +
	       (uint32_t)((e->m->t[lw->vec[k]].offset - lw->vec_offset) / 16);
}

static uint32_t gvec(struct emit *e, int32_t t)
{
	return e->p->gvec + (uint32_t)((e->m->t[t].offset - e->m->w.gvec_offset) / 16);
}

#define NO_WEIGHT UINT32_MAX

/*
 * RMSNorm: dst = src / sqrt(mean(src^2) + eps) * w  (w stored as is, no 1 + w; Gemma 3n).
 *   S = mean(x^2); S = S + eps; S = rsqrt(S); dst = x * S; dst = dst * w
 */
static void rmsnorm(struct emit *e, uint32_t src, uint32_t dst, uint32_t n, uint32_t w)
{
	/*
	 * With smul, x * (1/rms) * w is one pass over the vector instead of two, on the
	 * dependent chain between two GEMVs. smul works in place, so x is first copied to dst
	 * by the L2 copy engine while the SFU sums its squares (whole words: only where the
	 * row ends on a word, so that dst's other elements stay as the two-pass form leaves
	 * them).
	 */
	bool fused = e->p->smul && w != NO_WEIGHT && (src == dst || n % EPW == 0);

	if (fused && src != dst)
		copy(e, dst, src, W(n));
	cvo(e, PCCX_CVO_SUMSQ, PCCX_CVOF_RECIP, src, e->p->scal + PCCX_GEMMA_S_DUMP, n);
	s_op(e, PCCX_CVO_ADD, e->p->consts + PCCX_GEMMA_C_EPS, PCCX_GEMMA_S_DUMP);
	s_fn(e, PCCX_CVO_RSQRT, PCCX_GEMMA_S_DUMP);
	if (fused) {
		cvo(e, PCCX_CVO_SMUL, 0, w, dst, n);
		return;
	}
	cvo(e, PCCX_CVO_SCALE, 0, src, dst, n);
	if (w != NO_WEIGHT)
		cvo(e, PCCX_CVO_MUL, 0, w, dst, n);
}

/* The same norm on each of `rows` rows of n elements (per head, per PLE slice). */
static void rmsnorm_rows(struct emit *e, uint32_t src, uint32_t dst, uint32_t rows, uint32_t n,
			 uint32_t w)
{
	uint32_t r;

	for (r = 0; r < rows; r++)
		rmsnorm(e, src + r * W(n), dst + r * W(n), n, w);
}

/*
 * RoPE on heads [h0, h0 + heads) of the rows of head_dim at x, with the tables of the layer's
 * attention kind (rotate-half): x' = x * cos + swap(x) * [-sin | +sin],
 * swap(x) = [x_hi | x_lo]. Pairs that do not rotate (rope_dims < head_dim) have cos 1 and
 * sin 0 in the tables. Element-wise: the heads may be rotated in any split.
 */
static void rope(struct emit *e, const struct pccx_layer_desc *ly, uint32_t x, uint32_t h0,
		 uint32_t heads)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t hw = W(ly->head_dim), half = hw / 2, n = heads * ly->head_dim, h;
	uint32_t cos = p->rep_cos[ly->kind] + h0 * hw, sin = p->rep_sin[ly->kind] + h0 * hw;
	uint32_t swap = p->swap + h0 * hw;

	x += h0 * hw;
	for (h = 0; h < heads && p->rope_per_use; h++) {
		copy(e, cos + h * hw, p->rope_cos[ly->kind], hw);
		copy(e, sin + h * hw, p->rope_sin[ly->kind], hw);
	}
	for (h = 0; h < heads; h++) {
		copy(e, swap + h * hw, x + h * hw + half, half);
		copy(e, swap + h * hw + half, x + h * hw, half);
	}
	cvo(e, PCCX_CVO_MUL, 0, sin, swap, n);
	cvo(e, PCCX_CVO_MUL, 0, cos, x, n);
	cvo(e, PCCX_CVO_ADD, 0, swap, x, n);
}

/*
 * AltUp magnitude matching of y to the target rms in scratch word TMAG (S2 and S4):
 *   y = y * rms(x0) / sqrt(max(mean(y^2), 1e-5))
 */
static void match_magnitude(struct emit *e, uint32_t y)
{
	uint32_t D = e->c->d_model;

	cvo(e, PCCX_CVO_SUMSQ, PCCX_CVOF_RECIP, y, e->p->scal + PCCX_GEMMA_S_DUMP, D);
	s_op(e, PCCX_CVO_MAX, e->p->consts + PCCX_GEMMA_C_MAG_EPS, PCCX_GEMMA_S_DUMP);
	s_fn(e, PCCX_CVO_RSQRT, PCCX_GEMMA_S_DUMP);
	s_op(e, PCCX_CVO_MUL, e->p->scal + PCCX_GEMMA_S_TMAG, PCCX_GEMMA_S_DUMP);
	cvo(e, PCCX_CVO_SCALE, 0, y, y, D);
}

/* Scratch word TMAG <- rms(x) = sqrt(mean(x^2)). */
static void target_magnitude(struct emit *e, uint32_t x)
{
	cvo(e, PCCX_CVO_SUMSQ, PCCX_CVOF_RECIP, x, e->p->scal + PCCX_GEMMA_S_DUMP, e->c->d_model);
	s_fn(e, PCCX_CVO_SQRT, PCCX_GEMMA_S_TMAG);
}

/*
 * Router modalities m = tanh(W_r (RMSNorm_{g_r}(x) / D)) into plan.rm (4 values), up to the
 * GEMV: the caller issues the tanh (router_tanh), after whatever SFU work does not depend on
 * the router and can run while its GEMV does.
 */
static void router_gemv(struct emit *e, uint32_t layer, uint32_t x)
{
	/* h (the attention's input) is free from the attention to the next input norm; tmp
	 * would not do: the next layer's router runs while tmp holds the PLE mix */
	uint32_t tmp = e->p->h, D = e->c->d_model;

	rmsnorm(e, x, tmp, D, lvec(e, layer, PCCX_GEMMA_LV_ROUTER_NORM));
	s_const(e, PCCX_GEMMA_C_INV_D);
	cvo(e, PCCX_CVO_SCALE, 0, tmp, tmp, D);
	gemv(e, e->m->w.layer[layer].router, tmp, e->p->rm, false);
}

static void router_tanh(struct emit *e)
{
	cvo(e, PCCX_CVO_TANH, 0, e->p->rm, e->p->rm, NSTREAM);
}

/* Address of stream k of a stream set. */
static uint32_t stream(struct emit *e, uint32_t set, uint32_t k)
{
	return e->p->xs[set] + k * W(e->c->d_model);
}

/* ===================================================================================== */
/* The stages, in the order of the model.                                                */

/* What every job of a step loads first: its inputs, the RoPE tables for every head, the
 * global vectors. */
static void load_step_inputs(struct emit *e)
{
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_weights *w = &e->m->w;
	uint32_t k, i;

	load(e, p->in, PCCX_NPU_BUF_IN, 0, p->in_words * EPW);
	for (k = 0; k < PCCX_ATTN_KINDS && !p->rope_per_use; k++) {
		uint32_t hw = W(e->m->attn[k].head_dim);

		for (i = 0; i < e->m->attn[k].n_heads; i++) {
			copy(e, p->rep_cos[k] + i * hw, p->rope_cos[k], hw);
			copy(e, p->rep_sin[k] + i * hw, p->rope_sin[k], hw);
		}
	}
	load(e, p->gvec, PCCX_NPU_BUF_WEIGHTS, w->gvec_offset, (uint32_t)(w->gvec_bytes / sizeof(float)));
}

/*
 * Layer l's slice of the per-layer inputs when the plan makes them per layer (plan.ple_slices):
 * u_l = (RMSNorm_{g_pl}(W_plmp[rows of l] e / sqrt D) + p_l) / sqrt 2, the same ops on the same
 * elements as the step's setup in forward_inputs. The GEMV is issued after the layer's W_o,
 * ahead of the SFU chain up to W_gate, whose weights could only fill the FIFOs; the rest
 * behind W_gate.
 */
static void ple_slice_proj(struct emit *e, uint32_t l)
{
	uint32_t P = e->c->d_ple;

	if (e->p->ple_slices)
		gemv_rows(e, e->m->w.ple_model_proj, l * P, P, e->p->embed_mm, e->p->u, false);
}

static void ple_slice_finish(struct emit *e, uint32_t l)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t P = e->c->d_ple, u = p->u;

	if (!p->ple_slices)
		return;
	load(e, p->ple_in, PCCX_NPU_BUF_IN, (uint64_t)p->ple_in_word * 16 + (uint64_t)l * P * 4, P);
	stage(e, p->ple_in, 1, P, "L%u.ple.inputs", l);
	s_const(e, PCCX_GEMMA_C_INV_SQRT_D);
	cvo(e, PCCX_CVO_SCALE, 0, u, u, P);
	rmsnorm(e, u, u, P, gvec(e, e->m->w.ple_proj_norm));
	stage(e, u, 1, P, "L%u.ple.proj", l);
	cvo(e, PCCX_CVO_ADD, 0, p->ple_in, u, P);
	s_const(e, PCCX_GEMMA_C_INV_SQRT2);
	cvo(e, PCCX_CVO_SCALE, 0, u, u, P);
	stage(e, u, 1, P, "L%u.ple.u", l);
}

/* S0-S2: embedding, per-layer inputs, AltUp expansion into stream set 0. */
static void forward_inputs(struct emit *e)
{
	const struct pccx_gemma_config *c = e->c;
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_weights *w = &e->m->w;
	uint32_t D = c->d_model, LP = c->n_layers * c->d_ple, k, l;

	load_step_inputs(e);
	stage(e, p->embed, 1, D, "embed");
	if (p->embed_mm != p->embed)
		copy(e, p->embed_mm, p->embed, W(D));
	if (!pccx__gemma_config_ple(c))
		return;		/* one residual stream: layer 0 reads the embedding */
	if (!p->ple_slices) {
		for (l = 0; l < c->n_layers; l++)
			stage(e, p->ple_in + l * W(c->d_ple), 1, c->d_ple, "L%u.ple.inputs", l);
		/* PLE setup: u = (RMSNorm_{g_pl}(W_plmp e / sqrt D) per slice + p) / sqrt 2 */
		gemv(e, w->ple_model_proj, p->embed_mm, p->u, false);
		s_const(e, PCCX_GEMMA_C_INV_SQRT_D);
		cvo_vec(e, PCCX_CVO_SCALE, 0, p->u, p->u, LP);
		rmsnorm_rows(e, p->u, p->u, c->n_layers, c->d_ple, gvec(e, w->ple_proj_norm));
		for (l = 0; l < c->n_layers; l++)
			stage(e, p->u + l * W(c->d_ple), 1, c->d_ple, "L%u.ple.proj", l);
		cvo_vec(e, PCCX_CVO_ADD, 0, p->ple_in, p->u, LP);
		s_const(e, PCCX_GEMMA_C_INV_SQRT2);
		cvo_vec(e, PCCX_CVO_SCALE, 0, p->u, p->u, LP);
		for (l = 0; l < c->n_layers; l++)
			stage(e, p->u + l * W(c->d_ple), 1, c->d_ple, "L%u.ple.u", l);
	}
	if (!e->altup)
		return;

	/* AltUp: x0 = e; x_k = W_ap[k] e matched to rms(e) */
	copy(e, stream(e, 0, 0), p->embed, W(D));
	target_magnitude(e, p->embed);
	for (k = 1; k < NSTREAM; k++) {
		if (p->embed_mm != p->embed) {
			/* a chunk's plan: the projection's rows one region wide (a GEMM), then
			 * into the stream */
			gemv(e, w->altup_proj[k - 1], p->embed_mm, p->tmp, false);
			copy(e, stream(e, 0, k), p->tmp, W(D));
		} else {
			gemv(e, w->altup_proj[k - 1], p->embed_mm, stream(e, 0, k), false);
		}
		match_magnitude(e, stream(e, 0, k));
	}
	stage(e, p->xs[0], NSTREAM, D, "altup.streams");
}

/* S3.1: AltUp router and prediction coefficients: m = router(x0); c = W_pred m. */
static void forward_altup_router(struct emit *e, uint32_t l, uint32_t X)
{
	e->coefs_of = l;
	load_layer_vectors(e, l);
	router_gemv(e, l, stream(e, X, 0));
}

/* The rest of S3.1 after forward_altup_router (and what runs behind its GEMV). */
static void forward_altup_pred_coefs(struct emit *e, uint32_t l)
{
	router_tanh(e);
	stage(e, e->p->rm, 1, NSTREAM, "L%u.altup.router", l);
	gemv(e, e->m->w.layer[l].pred_coef, e->p->rm, e->p->coefs, false);
}

static void forward_altup_coefs(struct emit *e, uint32_t l, uint32_t X)
{
	if (e->coefs_of == l)
		return;		/* issued ahead, behind layer l-1's W_ple_proj (ple_finish) */
	forward_altup_router(e, l, X);
	forward_altup_pred_coefs(e, l);
}

/* S3.2: AltUp predict of streams k0..k1-1: pred_k = sum_j c[4k+j] x_j + x_k. */
static void forward_altup_predict(struct emit *e, uint32_t X, uint32_t P, uint32_t k0,
				  uint32_t k1)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t D = e->c->d_model, k, j;

	for (k = k0; k < k1; k++) {
		for (j = 0; j < NSTREAM; j++) {
			cvo(e, PCCX_CVO_LDS, 0, p->coefs, p->scal + PCCX_GEMMA_S_DUMP,
			    NSTREAM * k + j);
			cvo(e, PCCX_CVO_SCALE, j ? PCCX_CVOF_ACCM : 0, stream(e, X, j),
			    stream(e, P, k), D);
		}
		cvo(e, PCCX_CVO_ADD, 0, stream(e, X, k), stream(e, P, k), D);
	}
}

/* S3.4: LAuReL: lr = h + RMSNorm_laurel(W_R W_L h); the two GEMVs, the rest behind W_q. */
static void forward_laurel_project(struct emit *e, uint32_t l)
{
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];

	gemv(e, lw->laurel_l, p->h, p->lrank, false);
	gemv(e, lw->laurel_r, p->lrank, p->lr, false);
}

static void forward_laurel_finish(struct emit *e, uint32_t l)
{
	const struct pccx_gemma_plan *p = e->p;

	rmsnorm(e, p->lr, p->lr, e->c->d_model, lvec(e, l, PCCX_GEMMA_LV_LAUREL_NORM));
	cvo(e, PCCX_CVO_ADD, 0, p->h, p->lr, e->c->d_model);
	stage(e, p->lr, 1, e->c->d_model, "L%u.laurel", l);
}

/* x = RoPE(RMSNorm_w(x)) on heads [h0, h0 + heads) of layer l (q or k); the norm if the layer
 * has it. Per head: any split of the heads gives the same bits. */
static void norm_rope(struct emit *e, uint32_t l, uint32_t x, uint32_t h0, uint32_t heads,
		      uint32_t norm, enum pccx_gemma_lvec w)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	uint32_t hw = W(ly->head_dim);

	if (ly->norms & norm)
		rmsnorm_rows(e, x + h0 * hw, x + h0 * hw, heads, ly->head_dim, lvec(e, l, w));
	rope(e, ly, x, h0, heads);
}

/* S3.5, layers that write KV: k = RoPE(RMSNorm_{g_k}(W_k h)), v = RMSNorm(W_v h) at row pos. */
static void forward_kv_append(struct emit *e, uint32_t l, uint32_t pos)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	uint32_t hd = ly->head_dim, hw = W(hd), nkv = ly->n_kv_heads, row = pos % ly->kv_rows, g;
	uint32_t k = p->k_of[ly->kind], v = p->v_of[ly->kind];

	norm_rope(e, l, k, 0, nkv, PCCX_NORM_K, PCCX_GEMMA_LV_K_NORM);
	stage(e, k, nkv, hd, "L%u.attn.k_rope", l);
	if (ly->norms & PCCX_NORM_V)
		rmsnorm_rows(e, v, v, nkv, hd, NO_WEIGHT);
	stage(e, v, nkv, hd, "L%u.attn.v", l);
	for (g = 0; g < nkv; g++) {
		store(e, PCCX_NPU_BUF_KV, kv_row_offset(e->m, p, l, g, 0, row), k + g * hw, hd);
		store(e, PCCX_NPU_BUF_KV, kv_row_offset(e->m, p, l, g, 1, row), v + g * hw, hd);
	}
}

/* S3.5: ctx = softmax(q K^T) V over the keys of the cache layer l reads (kv_src). */
static void forward_attend(struct emit *e, uint32_t l, uint32_t pos)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	uint32_t hd = ly->head_dim, hw = W(hd), group = ly->n_heads / ly->n_kv_heads;
	uint32_t keys = pccx__gemma_n_keys(ly, pos), sw = W(keys), g, r;

	/* per kv head: the `group` query heads that share it, as one GEMM over its rows */
	for (g = 0; g < ly->n_kv_heads; g++) {
		struct pccx_npu_wref kr = {
			.buf = PCCX_NPU_BUF_KV,
			.offset = kv_row_offset(e->m, p, ly->kv_src, g, 0, 0),
			.tensor = -1,
		};
		struct pccx_npu_wref vr = {
			.buf = PCCX_NPU_BUF_KV,
			.offset = kv_row_offset(e->m, p, ly->kv_src, g, 1, 0),
			.tensor = -1,
		};

		/* scores = q K^T (scale 1.0); rows of the ring buffer in slot order */
		matmul(e, PCCX_WFMT_F32, kr, keys, hd, group, p->q_of[ly->kind] + g * group * hw,
		       p->scores, false);
		/* softmax per query head: S = max; e = exp(s - S); S = sum; p = e / S */
		for (r = 0; r < group; r++) {
			uint32_t s = p->scores + r * sw;

			if (ly->attn_softcap > 0.0f) {
				/* s = cap tanh(s / cap) */
				s_const(e, PCCX_GEMMA_C_ATTN_SOFTCAP);
				cvo(e, PCCX_CVO_SCALE, PCCX_CVOF_RECIP, s, s, keys);
				cvo(e, PCCX_CVO_TANH, 0, s, s, keys);
				cvo(e, PCCX_CVO_SCALE, 0, s, s, keys);
			}
			cvo(e, PCCX_CVO_MAX, 0, s, p->scal + PCCX_GEMMA_S_DUMP, keys);
			cvo(e, PCCX_CVO_EXP, PCCX_CVOF_SUB, s, s, keys);
			cvo(e, PCCX_CVO_SUM, 0, s, p->scal + PCCX_GEMMA_S_DUMP, keys);
			cvo(e, PCCX_CVO_SCALE, PCCX_CVOF_RECIP, s, s, keys);
		}
		/* ctx = P V: V rows of the window as a transposed weight */
		matmul(e, PCCX_WFMT_F32T, vr, hd, keys, group, p->scores,
		       p->ctx_of[ly->kind] + g * group * hw, false);
	}
	stage(e, p->ctx_of[ly->kind], ly->n_heads, hd, "L%u.attn.ctx", l);
}

/*
 * S3.5, a layer that writes no KV: q = RoPE(RMSNorm_{g_q}(W_q h)) with W_q as one GEMV for
 * all heads but the last Q_TAIL_HEADS and one GEMV for each of those. Nothing but q's norm and
 * RoPE lies between W_q and the attention here, so each piece's heads are normed and rotated
 * behind the next piece's GEMV, and only the last head waits for the last weight. Rows and
 * heads are independent: the bits of one GEMV and one pass.
 */
static void forward_q_heads(struct emit *e, uint32_t l)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	uint32_t q = p->q_of[ly->kind], hd = ly->head_dim, H = ly->n_heads, h, n, h_prev = 0;

	for (h = 0; h < H; h += n) {
		n = H - h > Q_TAIL_HEADS ? H - Q_TAIL_HEADS - h : 1;
		gemv_rows(e, lw->attn_q, h * hd, n * hd, p->h, q + h * W(hd), false);
		/* model: LAuReL ends before the attention, q's norm and RoPE follow W_q */
		behind(e, lw->attn_q);
		if (!h && e->altup)
			forward_laurel_finish(e, l);
		if (h)
			norm_rope(e, l, q, h_prev, h - h_prev, PCCX_NORM_Q, PCCX_GEMMA_LV_Q_NORM);
		h_prev = h;
	}
	norm_rope(e, l, q, h_prev, H - h_prev, PCCX_NORM_Q, PCCX_GEMMA_LV_Q_NORM);
}

/* S3.5: attention on h: q (and k, v in layers that write KV), the cache, o = W_o ctx. */
static void forward_attention(struct emit *e, uint32_t l, uint32_t pos)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	uint32_t q = p->q_of[ly->kind], k = p->k_of[ly->kind], v = p->v_of[ly->kind];

	/* W_q, W_k, W_v back to back, each one's norms behind the next projection */
	if (ly->kv_write || !p->q_pieces) {
		gemv(e, lw->attn_q, p->h, q, false);
		behind(e, lw->attn_q);	/* model: LAuReL ends before the attention */
		if (e->altup)
			forward_laurel_finish(e, l);
		if (ly->kv_write) {
			gemv(e, lw->attn_k, p->h, k, false);
			behind(e, lw->attn_k);	/* model: q's norm and RoPE come before W_k */
			if (ly->k_eq_v)	/* v = W_k h */
				copy(e, v, k, ly->n_kv_heads * W(ly->head_dim));
		}
		/* q = RoPE(RMSNorm_{g_q}(W_q h)) per head */
		norm_rope(e, l, q, 0, ly->n_heads, PCCX_NORM_Q, PCCX_GEMMA_LV_Q_NORM);
	} else {
		forward_q_heads(e, l);
	}
	stage(e, q, ly->n_heads, ly->head_dim, "L%u.attn.q_rope", l);
	if (ly->q_scale != 1.0f) {
		/* the scores' scaling, applied to q (fewer elements than the scores) */
		s_const(e, PCCX_GEMMA_C_Q_SCALE);
		cvo(e, PCCX_CVO_SCALE, 0, q, q, ly->n_heads * ly->head_dim);
	}
	if (ly->kv_write && !ly->k_eq_v) {
		gemv(e, lw->attn_v, p->h, v, false);
		behind(e, lw->attn_v);	/* model: k's norm and RoPE come before W_v */
	}
	if (ly->kv_write)
		forward_kv_append(e, l, pos);
	forward_attend(e, l, pos);
	gemv(e, lw->attn_o, p->ctx_of[ly->kind], p->o, false);
	stage(e, p->o, 1, e->c->d_model, "L%u.attn.out", l);
}

/* S3.6: al = (a + RMSNorm_postattn(o) + lr) / sqrt 2, a = pred_0 in stream set P. */
static void forward_attn_residual(struct emit *e, uint32_t l, uint32_t P)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t D = e->c->d_model;

	ple_slice_proj(e, l);
	if (e->m->layers[l].norms & PCCX_NORM_POST_ATTN)
		rmsnorm(e, p->o, p->al, D, lvec(e, l, PCCX_GEMMA_LV_POST_ATTN_NORM));
	else
		copy(e, p->al, p->o, W(D));
	cvo(e, PCCX_CVO_ADD, 0, stream(e, P, 0), p->al, D);
	cvo(e, PCCX_CVO_ADD, 0, p->lr, p->al, D);
	s_const(e, PCCX_GEMMA_C_INV_SQRT2);
	cvo(e, PCCX_CVO_SCALE, 0, p->al, p->al, D);
	stage(e, p->al, 1, D, "L%u.attn.resid", l);
}

/* The FFN activation and W_up's piece buffers of a layer (plan.gate_n ...: a chunk's narrower
 * layers). */
struct ffn_regions {
	uint32_t gate, up, up2;
};

static struct ffn_regions ffn_regions(const struct pccx_gemma_plan *p,
				      const struct pccx_layer_desc *ly)
{
	if (p->ffn_narrow && ly->d_ffn == p->ffn_narrow)
		return (struct ffn_regions){ p->gate_n, p->up_n, p->up2_n };
	return (struct ffn_regions){ p->gate, p->up, p->up2 };
}

/* Rows of each of W_gate's GATE_PIECES GEMVs but the last (gate_pieces). */
static uint32_t gate_piece_rows(uint32_t F)
{
	return ffn_piece_rows(F, GATE_PIECES);
}

/*
 * Whether layer l's W_gate is issued in GATE_PIECES GEMVs with the Gaussian top-k's sum
 * carried in S from piece to piece (SUM accm, FEATURES.RACC): a sparse layer of a decode step
 * on a device with the extension, whose width is the one the mean's divisor (the constant
 * SPARSE_F) is for, and whose W_up waits for the cutoff (rowmask; in the dense order W_up's
 * first piece streams while the cutoff is worked out). A chunk's plan keeps one GEMM: S does
 * not live across its segments.
 */
static bool gate_pieces(const struct emit *e, const struct pccx_layer_desc *ly)
{
	return e->p->racc && e->p->rowmask && ly->sparse &&
	       ly->d_ffn == pccx__gemma_sparse_ffn(e->m) &&
	       ly->d_ffn > gate_piece_rows(ly->d_ffn);
}

/* S, S_MEAN <- the sum of gate[r, r + n), continuing the one of gate[0, r) in S_MEAN. */
static void gate_sum_piece(struct emit *e, uint32_t gate, uint32_t r, uint32_t n)
{
	const struct pccx_gemma_plan *p = e->p;

	if (r)
		cvo(e, PCCX_CVO_LDS, 0, p->scal + PCCX_GEMMA_S_MEAN, p->scal + PCCX_GEMMA_S_DUMP, 0);
	cvo(e, PCCX_CVO_SUM, r ? PCCX_CVOF_ACCM : 0, gate + r / EPW, p->scal + PCCX_GEMMA_S_MEAN,
	    n);
}

/*
 * The rest of W_gate after its first piece (gate_pieces): the sum of each piece behind the
 * next piece's GEMV, with S reloaded from S_MEAN first (the work behind the first piece uses
 * S). The sum is the one SUM over the whole: the same additions in the same order. The last
 * piece's sum comes with the cutoff (forward_ffn_cutoff).
 */
static void forward_gate_pieces(struct emit *e, uint32_t l)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	uint32_t F = ly->d_ffn, piece = gate_piece_rows(F), gate = ffn_regions(e->p, ly).gate;
	uint32_t r, n;

	for (r = piece; r < F; r += n) {
		n = F - r < piece ? F - r : piece;
		gemv_rows(e, lw->ffn_gate, r, n, e->p->t, gate + r / EPW, false);
		behind(e, lw->ffn_gate);	/* model: the top-k's mean follows all of W_gate */
		gate_sum_piece(e, gate, r - piece, piece);
	}
}

/* S3.7, a sparse layer's Gaussian top-k: S = cutoff = mean + std * z (population std). */
static void forward_ffn_cutoff(struct emit *e, uint32_t l)
{
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	uint32_t F = ly->d_ffn, gate = ffn_regions(p, ly).gate, piece, r;

	if (gate_pieces(e, ly)) {
		/* the last piece's sum, then the mean: sum / F as the SUM's mean divides */
		piece = gate_piece_rows(F);
		r = (F - 1) / piece * piece;
		gate_sum_piece(e, gate, r, F - r);
		cvo(e, PCCX_CVO_SCALE, PCCX_CVOF_SREG | PCCX_CVOF_RECIP,
		    p->consts + PCCX_GEMMA_C_SPARSE_F, p->scal + PCCX_GEMMA_S_MEAN, 0);
	} else {
		cvo(e, PCCX_CVO_SUM, PCCX_CVOF_RECIP, gate, p->scal + PCCX_GEMMA_S_MEAN, F);
	}
	cvo(e, PCCX_CVO_SUMSQ, PCCX_CVOF_SUB | PCCX_CVOF_RECIP, gate, p->scal + PCCX_GEMMA_S_DUMP,
	    F);
	s_fn(e, PCCX_CVO_SQRT, PCCX_GEMMA_S_DUMP);
	s_op(e, PCCX_CVO_MUL, p->consts + PCCX_GEMMA_C_SPARSE_Z, PCCX_GEMMA_S_DUMP);
	s_op(e, PCCX_CVO_ADD, p->scal + PCCX_GEMMA_S_MEAN, PCCX_GEMMA_S_CUTOFF);
}

/* S3.7 on elements [r, r + n) of gate: GELU(gate'), gate' = max(gate - S, 0) in a sparse
 * layer (S the cutoff), gate in a dense one. Element-wise: any split gives the same bits. */
static void forward_ffn_gelu(struct emit *e, uint32_t l, uint32_t r, uint32_t n)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	uint32_t gate = ffn_regions(e->p, ly).gate + r / EPW;

	cvo(e, PCCX_CVO_GELU, ly->sparse ? PCCX_CVOF_SUB | PCCX_CVOF_RELU : 0, gate, gate, n);
}

/* S3.7: gate = GELU(gate'), gate' = gate or, in sparse layers, its Gaussian top-k. */
static void forward_ffn_act(struct emit *e, uint32_t l)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];

	if (ly->sparse)
		forward_ffn_cutoff(e, l);
	forward_ffn_gelu(e, l, 0, ly->d_ffn);
	stage(e, ffn_regions(e->p, ly).gate, 1, ly->d_ffn, "L%u.ffn.act", l);
}

/* Little-endian FP32 at b. */
static float get_f32(const uint8_t *b)
{
	return pccx_f32_from_bits((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				  (uint32_t)b[3] << 24);
}

void pccx__gemma_route(const float *logits, const float *expert_scale, uint32_t n, uint32_t k,
		       uint32_t *idx, float *w)
{
	bool taken[PCCX_GEMMA_MAX_EXPERTS] = { false };
	float p[PCCX_GEMMA_MAX_EXPERTS], mx = logits[0], sum = 0.0f;
	uint32_t i, j, best;

	for (i = 1; i < n; i++)
		mx = logits[i] > mx ? logits[i] : mx;
	for (i = 0; i < n; i++) {
		p[i] = pccx__f32_exp(logits[i] - mx);
		sum += p[i];
	}
	for (i = 0; i < n; i++)
		p[i] = p[i] / sum;
	for (j = 0; j < k; j++) {
		best = n;
		for (i = 0; i < n; i++)
			if (!taken[i] && (best == n || p[i] > p[best]))
				best = i;
		taken[best < n ? best : j] = true;
	}
	sum = 0.0f;
	for (i = 0, j = 0; i < n && j < k; i++)
		if (taken[i]) {
			idx[j++] = i;
			sum += p[i];
		}
	for (j = 0; j < k; j++)
		w[j] = p[idx[j]] / sum * expert_scale[idx[j]];
}

/*
 * The job ends at the router: its logits and what the rest of the step needs from L2 (al,
 * the dense FFN's f, the per-layer inputs) go to BUF_OUT; the host chooses the experts and
 * writes their weights at moe_w in BUF_IN; the next job loads the step's inputs and those
 * values back (L2 does not persist across jobs). idx receives the chosen experts.
 */
static void route(struct emit *e, uint32_t l, uint32_t *idx)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	uint32_t D = e->c->d_model, LP = e->c->n_layers * e->c->d_ple, E = ly->n_experts, i;
	uint32_t K = ly->n_experts_used;
	float logits[PCCX_GEMMA_MAX_EXPERTS], scale[PCCX_GEMMA_MAX_EXPERTS];
	float w[PCCX_GEMMA_MAX_EXPERTS_USED];

	for (i = 0; i < K; i++)
		idx[i] = i;	/* defined even when the step has failed */
	store(e, PCCX_NPU_BUF_OUT, p->out_rlog, p->rlog, E);
	store(e, PCCX_NPU_BUF_OUT, p->out_spill_al, p->al, D);
	store(e, PCCX_NPU_BUF_OUT, p->out_spill_f, p->f, D);
	if (LP)
		store(e, PCCX_NPU_BUF_OUT, p->out_spill_u, p->u, LP);
	if (!e->rc && e->ops->end)
		e->rc = e->ops->end(e->ctx);
	if (e->rc)
		return;
	for (i = 0; i < E; i++)
		logits[i] = get_f32(e->hb->out + p->out_rlog + 4ull * i);
	pccx__gemma_row_f32(e->m, lw->vec[PCCX_GEMMA_LV_EXPERT_SCALE], 0, scale);
	pccx__gemma_route(logits, scale, E, K, idx, w);
	for (i = 0; i < K; i++)
		put_f32(e->hb->in, p->moe_w - p->in, i, w[i]);
	if (e->ops->begin)
		e->rc = e->ops->begin(e->ctx, e->pos);
	load_step_inputs(e);
	load(e, lvec_block(p, l), PCCX_NPU_BUF_WEIGHTS, lw->vec_offset,
	     (uint32_t)(lw->vec_bytes / sizeof(float)));
	load(e, p->al, PCCX_NPU_BUF_OUT, p->out_spill_al, D);
	load(e, p->f, PCCX_NPU_BUF_OUT, p->out_spill_f, D);
	if (LP)
		load(e, p->u, PCCX_NPU_BUF_OUT, p->out_spill_u, LP);
}

/*
 * Gemma 4's mixture of experts, beside the dense FFN whose output is in f:
 *   f = RMSNorm_1(f) + RMSNorm_2(sum_j w_j E_j(RMSNorm_pre2(al))),
 *   E_e(t) = W_down,e(GELU(W_gate,e t) * W_up,e t), the experts and weights w_j from the
 *   router: logits = W_r (RMSNorm(al) * scale * D^-1/2), chosen on the host (route).
 */
static void forward_moe(struct emit *e, uint32_t l)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	uint32_t D = e->c->d_model, I = ly->d_expert, idx[PCCX_GEMMA_MAX_EXPERTS], n, j;

	rmsnorm(e, p->f, p->f, D, lvec(e, l, PCCX_GEMMA_LV_POST_FFN_NORM_1));
	stage(e, p->f, 1, D, "L%u.moe.dense", l);
	rmsnorm(e, p->al, p->tmp, D, NO_WEIGHT);
	cvo(e, PCCX_CVO_MUL, 0, lvec(e, l, PCCX_GEMMA_LV_ROUTER_SCALE), p->tmp, D);
	s_const(e, PCCX_GEMMA_C_INV_SQRT_D);
	cvo(e, PCCX_CVO_SCALE, 0, p->tmp, p->tmp, D);
	gemv(e, lw->moe_router, p->tmp, p->rlog, false);
	stage(e, p->rlog, 1, ly->n_experts, "L%u.moe.router", l);
	if (e->hb) {
		route(e, l, idx);
		n = ly->n_experts_used;
	} else {
		/* a trace of every weight the step may read */
		for (n = 0; n < ly->n_experts; n++)
			idx[n] = n;
	}
	rmsnorm(e, p->al, p->t2, D, lvec(e, l, PCCX_GEMMA_LV_PRE_FFN_NORM_2));
	stage(e, p->t2, 1, D, "L%u.moe.input", l);
	for (j = 0; j < n; j++) {
		int32_t g = lw->experts + 3 * (int32_t)idx[j];

		gemv(e, g, p->t2, p->gate, false);
		gemv(e, g + 1, p->t2, p->up, false);
		cvo(e, PCCX_CVO_GELU, 0, p->gate, p->gate, I);
		cvo(e, PCCX_CVO_MUL, 0, p->up, p->gate, I);
		gemv(e, g + 2, p->gate, p->tmp, false);
		/* acc (+)= w_j y_j, w_j at element j of the routing weights */
		cvo(e, PCCX_CVO_LDS, 0, p->moe_w, p->scal + PCCX_GEMMA_S_DUMP,
		    j % ly->n_experts_used);
		cvo(e, PCCX_CVO_SCALE, j ? PCCX_CVOF_ACCM : 0, p->tmp, p->acc, D);
	}
	stage(e, p->acc, 1, D, "L%u.moe.experts", l);
	rmsnorm(e, p->acc, p->acc, D, lvec(e, l, PCCX_GEMMA_LV_POST_FFN_NORM_2));
	cvo(e, PCCX_CVO_ADD, 0, p->acc, p->f, D);
	stage(e, p->f, 1, D, "L%u.moe.out", l);
}

/*
 * W_up of a sparse layer on a device with GEMV rowmask (plan.rowmask), after the activation:
 * the cutoff, then per piece the piece's GELU (behind the previous piece's GEMV), the
 * activation copied to the piece's up rows (the rowmask GEMV's mask: its old destination) and
 * the rowmask GEMV, which reads only the rows whose activation is not +-0 and writes +0 in the
 * others; the products of all pieces but the last behind the last GEMV (after the activation's
 * stage, which they overwrite; forward_ffn issues the last one). Where act is +-0 the
 * product act * up is +-0 whatever finite value up has, and +-0 quantise to INT8 0 without
 * changing a block's amax, so W_down's input, and everything after it, has the dense path's
 * bits; ffn.up (+0 where act is +-0) and ffn.hidden (the sign of those zeros) differ from it
 * only where act is +-0 (docs/reference.md §5).
 */
static void forward_up_rowmask(struct emit *e, uint32_t l, uint32_t piece)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	struct ffn_regions fr = ffn_regions(p, ly);
	uint32_t F = ly->d_ffn, r, n;

	forward_ffn_cutoff(e, l);
	for (r = 0; r < F; r += n) {
		n = F - r < piece ? F - r : piece;
		if (r)
			behind(e, lw->ffn_up);	/* model: the activation comes before W_up */
		forward_ffn_gelu(e, l, r, n);
		if (r + n == F)
			stage(e, fr.gate, 1, F, "L%u.ffn.act", l);
		copy(e, fr.up + r / EPW, fr.gate + r / EPW, W(n));
		e->rowmask = true;
		gemv_rows(e, lw->ffn_up, r, n, p->t, fr.up + r / EPW, false);
		e->rowmask = false;
	}
	/* the products but the last piece's, behind the last piece's stream */
	behind(e, lw->ffn_up);	/* model: the products come after all of W_up */
	for (r = 0; r + piece < F; r += piece)
		cvo(e, PCCX_CVO_MUL, 0, fr.up + r / EPW, fr.gate + r / EPW, piece);
}

/* Where W_up's output rows from r (a multiple of piece) go: their place in up, or with
 * plan.up_ring the piece buffer of that piece's parity. */
static uint32_t up_at(const struct pccx_gemma_plan *p, const struct ffn_regions *fr, uint32_t r,
		     uint32_t piece)
{
	if (!p->up_ring)
		return fr->up + r / EPW;
	return (r / piece) % 2 ? fr->up2 : fr->up;
}

/*
 * W_up in a prompt chunk (plan.up_ring): a chunk's tokens each run their SFU work between two
 * GEMMs, so the activation of all of them behind W_up's first piece kept the next piece's
 * GEMM waiting. Here each piece's activation comes behind that piece's GEMM and its product
 * behind the next one's; a sparse layer's cutoff comes behind the first. The activation is
 * element-wise, so the pieces give the bits of one pass; each piece's activation is staged
 * as its own stage (L<l>.ffn.act<k>), since the products overwrite gate piece by piece.
 */
static void forward_up_act_pieces(struct emit *e, uint32_t l, uint32_t piece)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	struct ffn_regions fr = ffn_regions(p, ly);
	uint32_t F = ly->d_ffn, r, n;

	for (r = 0; r < F; r += n) {
		n = F - r < piece ? F - r : piece;
		gemv_rows(e, lw->ffn_up, r, n, p->t, up_at(p, &fr, r, piece), false);
		behind(e, lw->ffn_up);	/* model: the activation comes before W_up, the
					 * products after all of it */
		if (!r) {
			stage(e, fr.gate, 1, F, "L%u.ffn.gate", l);
			if (ly->sparse)
				forward_ffn_cutoff(e, l);
		}
		if (r && ly->sparse)	/* S does not outlive a GEMM's segment in a chunk */
			cvo(e, PCCX_CVO_LDS, 0, p->scal + PCCX_GEMMA_S_CUTOFF,
			    p->scal + PCCX_GEMMA_S_DUMP, 0);
		forward_ffn_gelu(e, l, r, n);
		stage(e, fr.gate + r / EPW, 1, n, "L%u.ffn.act%u", l, r / piece);
		if (r)
			cvo(e, PCCX_CVO_MUL, 0, up_at(p, &fr, r - piece, piece),
			    fr.gate + (r - piece) / EPW, piece);
	}
}

/*
 * S3.7: FFN: out = al + RMSNorm_postffn(W_down(GELU(gate') * W_up t)), t = RMSNorm_preffn(al),
 * gate' = W_gate t or its Gaussian top-k.
 */
static void forward_ffn(struct emit *e, uint32_t l, uint32_t X, uint32_t P)
{
	const struct pccx_layer_desc *ly = &e->m->layers[l];
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	struct ffn_regions fr = ffn_regions(p, ly);
	uint32_t D = e->c->d_model, F = ly->d_ffn, piece, r, n;

	if (ly->norms & PCCX_NORM_PRE_FFN)
		rmsnorm(e, p->al, p->t, D, lvec(e, l, PCCX_GEMMA_LV_FFN_NORM));
	else
		copy(e, p->t, p->al, W(D));
	stage(e, p->t, 1, D, "L%u.ffn.norm", l);
	if (gate_pieces(e, ly))
		gemv_rows(e, lw->ffn_gate, 0, gate_piece_rows(F), p->t, fr.gate, false);
	else
		gemv(e, lw->ffn_gate, p->t, fr.gate, false);
	/* model: predictions 1..3 come at the start of the layer, u_l at the start of the step */
	behind(e, lw->ffn_gate);
	if (e->altup) {
		forward_altup_predict(e, X, P, 1, NSTREAM);
		stage(e, p->xs[P], NSTREAM, D, "L%u.altup.pred", l);
	}
	ple_slice_finish(e, l);
	/* model: layer l+1 loads its vectors at its start (not across a job's end: experts) */
	if (l + 1 < e->c->n_layers && !ly->n_experts)
		load_layer_vectors(e, l + 1);
	if (gate_pieces(e, ly))
		forward_gate_pieces(e, l);
	/* W_up in up_pieces GEMVs, so that only the last piece's product waits for its stream */
	piece = ffn_piece_rows(F, p->up_pieces);
	if (ly->sparse && p->rowmask) {
		stage(e, fr.gate, 1, F, "L%u.ffn.gate", l);
		forward_up_rowmask(e, l, piece);
	} else if (p->up_ring) {
		forward_up_act_pieces(e, l, piece);
	} else {
		gemv_rows(e, lw->ffn_up, 0, piece < F ? piece : F, p->t, up_at(p, &fr, 0, piece), false);
		behind(e, lw->ffn_up);	/* model: the activation comes before W_up */
		stage(e, fr.gate, 1, F, "L%u.ffn.gate", l);
		forward_ffn_act(e, l);
		for (r = piece; r < F; r += n) {
			n = F - r < piece ? F - r : piece;
			gemv_rows(e, lw->ffn_up, r, n, p->t, up_at(p, &fr, r, piece), false);
			behind(e, lw->ffn_up);	/* model: the product comes after all of W_up */
			cvo(e, PCCX_CVO_MUL, 0, up_at(p, &fr, r - piece, piece),
			    fr.gate + (r - piece) / EPW, piece);
		}
	}
	if (!p->up_ring)	/* else no more than two pieces of it are ever in L2 */
		stage(e, fr.up, 1, F, "L%u.ffn.up", l);
	r = (F - 1) / piece * piece;	/* the last piece */
	cvo(e, PCCX_CVO_MUL, 0, up_at(p, &fr, r, piece), fr.gate + r / EPW, F - r);
	stage(e, fr.gate, 1, F, "L%u.ffn.hidden", l);
	if (ly->sparse && p->colskip && lw->down_q4c_ok)
		gemv_q4c(e, lw->ffn_down, lw->down_q4c, fr.gate, p->f);
	else
		gemv(e, lw->ffn_down, fr.gate, p->f, false);
	stage(e, p->f, 1, D, "L%u.ffn.down", l);
	if (ly->n_experts)
		forward_moe(e, l);
	if (ly->norms & PCCX_NORM_POST_FFN)
		rmsnorm(e, p->f, p->f, D, lvec(e, l, PCCX_GEMMA_LV_POST_FFN_NORM));
	cvo(e, PCCX_CVO_ADD, 0, p->al, p->f, D);
	stage(e, p->f, 1, D, "L%u.ffn.out", l);
}

/* X'_k = pred_k + w_k innov (innov = out - pred_0 at plan.innov, w at plan.corr). */
static void correct_stream(struct emit *e, uint32_t P, uint32_t k)
{
	const struct pccx_gemma_plan *p = e->p;

	cvo(e, PCCX_CVO_LDS, 0, p->corr, p->scal + PCCX_GEMMA_S_DUMP, k);
	cvo(e, PCCX_CVO_SCALE, PCCX_CVOF_ACCM, p->innov, stream(e, P, k), e->c->d_model);
}

/*
 * The per-layer input branch after its gate's GEMV (plan.pleg = W_gate x):
 *   tmp = RMSNorm_post(W_proj(GELU(pleg) * u_l))   (Gemma 3n and 4)
 */
static void ple_finish(struct emit *e, uint32_t l)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t D = e->c->d_model, dp = e->c->d_ple;
	bool ahead = e->altup && l + 1 < e->c->n_layers;

	cvo(e, PCCX_CVO_GELU, 0, p->pleg, p->pleg, dp);
	cvo(e, PCCX_CVO_MUL, 0, p->ple_slices ? p->u : p->u + l * W(dp), p->pleg, dp);
	stage(e, p->pleg, 1, dp, "L%u.ple.gate", l);
	gemv(e, e->m->w.layer[l].ple_proj, p->pleg, p->tmp, false);
	if (ahead) {
		/* model: layer l+1's router comes at its start, after the PLE mix of streams 1..3 */
		behind(e, e->m->w.layer[l].ple_proj);
		forward_altup_router(e, l + 1, (l + 1) % 2);
		/* model: the PLE mix's norm comes before layer l+1's router */
		behind(e, e->m->w.layer[l + 1].router);
	}
	rmsnorm(e, p->tmp, p->tmp, D, lvec(e, l, PCCX_GEMMA_LV_POST_PLE_NORM));
	stage(e, p->tmp, 1, D, "L%u.ple.mix", l);
	if (ahead)
		forward_altup_pred_coefs(e, l + 1);
}

/* S3.8-9: AltUp correct with the layer output, then the PLE mix into streams 1..3. */
static void forward_altup_correct(struct emit *e, uint32_t l, uint32_t P, uint32_t out)
{
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_layer_w *lw = &e->m->w.layer[l];
	uint32_t D = e->c->d_model, k;

	/* w = W_corr tanh(router(out)) + 1; X'_k = pred_k + w_k (out - pred_0) */
	router_gemv(e, l, out);
	behind(e, lw->router);	/* model: the innovation comes after the coefficients */
	copy(e, p->innov, out, W(D));
	s_const(e, PCCX_GEMMA_C_NEG_ONE);
	cvo(e, PCCX_CVO_SCALE, PCCX_CVOF_ACCM, stream(e, P, 0), p->innov, D);
	router_tanh(e);
	copy(e, p->corr, p->ones, 1);
	gemv(e, lw->corr_coef, p->rm, p->corr, true);
	stage(e, p->corr, 1, NSTREAM, "L%u.altup.corr", l);
	correct_stream(e, P, 0);

	/* PLE: d = RMSNorm(W_proj (GELU(W_gate (X'_0 * gamma)) * u_l)); X'_k += d, k = 1..3 */
	copy(e, p->tmp, stream(e, P, 0), W(D));
	cvo(e, PCCX_CVO_MUL, 0, lvec(e, l, PCCX_GEMMA_LV_CORRECT_SCALE), p->tmp, D);
	gemv(e, lw->ple_gate, p->tmp, p->pleg, false);
	behind(e, lw->ple_gate);	/* model: streams 1..3 are corrected with stream 0 */
	for (k = 1; k < NSTREAM; k++)
		correct_stream(e, P, k);
	ple_finish(e, l);
	for (k = 1; k < NSTREAM; k++)
		cvo(e, PCCX_CVO_ADD, 0, p->tmp, stream(e, P, k), D);
	stage(e, p->xs[P], NSTREAM, D, "L%u.out", l);
}

/*
 * Gemma 4's per-layer input, on the layer's output f (after the FFN's residual):
 *   f = f + RMSNorm_post(W_proj(GELU(W_gate f) * u_l))
 */
static void forward_ple_mix(struct emit *e, uint32_t l)
{
	const struct pccx_gemma_plan *p = e->p;

	gemv(e, e->m->w.layer[l].ple_gate, p->f, p->pleg, false);
	ple_finish(e, l);
	cvo(e, PCCX_CVO_ADD, 0, p->tmp, p->f, e->c->d_model);
}

/*
 * A decoder layer of one residual stream (Gemma 1, 2, 3, 4): x is the embedding for layer 0 and
 * the previous layer's output (plan.f) after it, which the layer overwrites only once
 * al = x + attention no longer needs x:
 *   h = RMSNorm_in(x); al = x + [RMSNorm_postattn](attention(h));
 *   out = al + [RMSNorm_postffn](FFN([RMSNorm_preffn](al)))   into plan.f
 */
static void forward_layer_plain(struct emit *e, uint32_t l, uint32_t pos)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t D = e->c->d_model, x = l ? p->f : p->embed;

	load_layer_vectors(e, l);
	rmsnorm(e, x, p->h, D, lvec(e, l, PCCX_GEMMA_LV_ATTN_NORM));
	stage(e, p->h, 1, D, "L%u.attn.norm", l);
	forward_attention(e, l, pos);
	ple_slice_proj(e, l);
	if (e->m->layers[l].norms & PCCX_NORM_POST_ATTN)
		rmsnorm(e, p->o, p->al, D, lvec(e, l, PCCX_GEMMA_LV_POST_ATTN_NORM));
	else
		copy(e, p->al, p->o, W(D));
	cvo(e, PCCX_CVO_ADD, 0, x, p->al, D);
	stage(e, p->al, 1, D, "L%u.attn.resid", l);
	forward_ffn(e, l, 0, 0);
	if (e->m->layers[l].ple)
		forward_ple_mix(e, l);
	if (e->m->layers[l].out_scale) {
		/* out = out * layer_scalar */
		cvo(e, PCCX_CVO_LDS, 0, lvec(e, l, PCCX_GEMMA_LV_OUT_SCALE),
		    p->scal + PCCX_GEMMA_S_DUMP, 0);
		cvo(e, PCCX_CVO_SCALE, 0, p->f, p->f, D);
		stage(e, p->f, 1, D, "L%u.out", l);
	}
}

/* S3: decoder layer l: streams in set X, result in set P = 1 - X. */
static void forward_layer(struct emit *e, uint32_t l, uint32_t pos)
{
	const struct pccx_gemma_plan *p = e->p;
	uint32_t D = e->c->d_model, X = l % 2, P = 1 - X;

	/* the layer vectors, the router and the coefficients (issued ahead from layer 1 on);
	 * predictions 1..3 are issued behind W_gate (forward_ffn) */
	forward_altup_coefs(e, l, X);
	forward_altup_predict(e, X, P, 0, 1);

	/* a = pred_0; h = RMSNorm_in(a) */
	rmsnorm(e, stream(e, P, 0), p->h, D, lvec(e, l, PCCX_GEMMA_LV_ATTN_NORM));
	stage(e, p->h, 1, D, "L%u.attn.norm", l);

	forward_laurel_project(e, l);
	forward_attention(e, l, pos);
	forward_attn_residual(e, l, P);
	forward_ffn(e, l, X, P);
	forward_altup_correct(e, l, P, p->f);
}

/* The final soft-cap of n logits at L2 word x: x = 30 tanh(x / 30). */
static void softcap(struct emit *e, uint32_t x, uint32_t n)
{
	s_const(e, PCCX_GEMMA_C_SOFTCAP);
	cvo_vec(e, PCCX_CVO_SCALE, PCCX_CVOF_RECIP, x, x, n);
	cvo_vec(e, PCCX_CVO_TANH, 0, x, x, n);
	cvo_vec(e, PCCX_CVO_SCALE, 0, x, x, n);
}

/*
 * Rows of the LM head's GEMV at row r: GEMV_CHUNK, but the last LM_TAIL rows or a few more
 * are a piece of their own, so that only their soft-cap waits for the last weight. Every
 * piece but the last is a multiple of 8 rows, so the next one starts on a word.
 */
static uint32_t lm_piece_rows(uint32_t vocab, uint32_t r)
{
	uint32_t tail_at = vocab > LM_TAIL ? (vocab - LM_TAIL) & ~7u : 0;

	if (r >= tail_at)
		return vocab - r;
	return tail_at - r < GEMV_CHUNK ? tail_at - r : GEMV_CHUNK;
}

/* S4: unembed streams 1..3, average, final norm, tied LM head, soft-cap. */
static void forward_output(struct emit *e)
{
	const struct pccx_gemma_config *c = e->c;
	const struct pccx_gemma_plan *p = e->p;
	const struct pccx_gemma_weights *w = &e->m->w;
	uint32_t D = c->d_model, X = c->n_layers % 2, k, r, n = 0, r0 = 0, n0 = 0;

	if (!e->altup) {
		rmsnorm(e, p->f, p->h, D, gvec(e, w->final_norm));
		stage(e, p->h, 1, D, "final.hidden");
		goto lm_head;
	}
	/* h = (x0 + sum_k match(W_au[k] x_k)) / 4 */
	copy(e, p->hsum, stream(e, X, 0), W(D));
	target_magnitude(e, stream(e, X, 0));
	for (k = 1; k < NSTREAM; k++) {
		gemv(e, w->altup_unembd[k - 1], stream(e, X, k), p->tmp, false);
		match_magnitude(e, p->tmp);
		cvo(e, PCCX_CVO_ADD, 0, p->tmp, p->hsum, D);
	}
	s_const(e, PCCX_GEMMA_C_QUARTER);
	cvo(e, PCCX_CVO_SCALE, 0, p->hsum, p->hsum, D);
	rmsnorm(e, p->hsum, p->h, D, gvec(e, w->final_norm));
	stage(e, p->h, 1, D, "final.hidden");

lm_head:
	/*
	 * logits = 30 tanh(E h / 30), piece by piece: the soft-cap of each piece is issued
	 * behind the next piece's GEMV, so it runs while that piece's weights stream; the last
	 * piece is short, so little of it follows the last weight. Families without a final
	 * soft-cap (c->softcap == 0) stop at E h. The logits go to the host in one store at the
	 * end: a store behind a piece would run as long on the DDR bus, whose reads and writes
	 * take turns (docs/sim.md).
	 */
	for (r = 0; r < c->vocab; r += n) {
		n = lm_piece_rows(c->vocab, r);
		gemv_rows(e, w->embed, r, n, p->h, p->logits + r / EPW, false);
		if (r && c->softcap > 0.0f) {
			behind(e, w->embed);	/* model: the soft-cap follows the whole LM head */
			softcap(e, p->logits + r0 / EPW, n0);
		}
		r0 = r;
		n0 = n;
	}
	if (c->softcap > 0.0f)
		softcap(e, p->logits + r0 / EPW, n0);
	stage(e, p->logits, 1, c->vocab, "final.logits");
	store(e, PCCX_NPU_BUF_OUT, 0, p->logits, c->vocab);
}

int pccx__gemma_step(const struct pccx_gemma_model *m, const struct pccx_gemma_plan *p,
		       const struct pccx_npu_ops *ops, void *ctx, uint32_t pos, bool with_logits,
		       const struct pccx_gemma_host *hb)
{
	struct emit e = {
		.ops = ops, .ctx = ctx, .m = m, .c = &m->cfg, .p = p, .last_w = -1, .hb = hb,
		.pos = pos, .altup = pccx__family(m->cfg.family)->altup, .coefs_of = UINT32_MAX,
		.vecs_of = UINT32_MAX,
	};
	uint32_t l;

	if (pos >= m->cfg.max_ctx)
		return PCCX_ERR_RANGE;
	e.rc = ops->begin ? ops->begin(ctx, pos) : 0;
	forward_inputs(&e);
	for (l = 0; l < m->cfg.n_layers; l++) {
		if (e.altup)
			forward_layer(&e, l, pos);
		else
			forward_layer_plain(&e, l, pos);
	}
	if (with_logits)
		forward_output(&e);
	if (!e.rc && ops->end)
		e.rc = ops->end(ctx);
	return e.rc;
}
