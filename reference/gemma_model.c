// SPDX-License-Identifier: MIT
/* Gemma weights in device layout: the tensor table, the buffer, the synthesiser. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "diag.h"
#include "gemma_model.h"
#include "pccx_num.h"
#include "pool.h"

#define TENSOR_ALIGN 64u
#define HOST_ONLY UINT64_MAX	/* add()'s alignment of a tensor the device never reads */

struct layout {
	struct pccx_gemma_model *m;
	uint32_t cap;
	uint64_t off;
	int failed;
};

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static uint64_t row_bytes(uint32_t fmt, uint32_t cols)
{
	struct pccx_wshape ws = { .n = 1, .k = cols, .fmt = fmt, .w_scale = true };

	if (fmt == PCCX_WFMT_F32)
		ws.w_scale = false;
	return pccx__wstream_row_bytes(&ws);
}

/* Append a tensor at the next `align`-byte boundary; returns its id. */
static int32_t add(struct layout *L, uint64_t align, uint32_t fmt, uint32_t rows, uint32_t cols,
		   enum pccx_gemma_init init, float std, const char *fmt_name, ...)
	__attribute__((format(printf, 8, 9)));

static int32_t add(struct layout *L, uint64_t align, uint32_t fmt, uint32_t rows, uint32_t cols,
		   enum pccx_gemma_init init, float std, const char *fmt_name, ...)
{
	struct pccx_gemma_tensor *t;
	va_list ap;

	if (L->failed)
		return -1;
	if (L->m->n_t == L->cap) {
		uint32_t ncap = L->cap ? 2 * L->cap : 64;
		void *p = realloc(L->m->t, ncap * sizeof(*L->m->t));

		if (!p) {
			L->failed = 1;
			return -1;
		}
		L->m->t = p;
		L->cap = ncap;
	}
	t = &L->m->t[L->m->n_t];
	memset(t, 0, sizeof(*t));
	va_start(ap, fmt_name);
	vsnprintf(t->name, sizeof(t->name), fmt_name, ap);
	va_end(ap);
	t->fmt = fmt;
	t->rows = rows;
	t->cols = cols;
	t->row_bytes = row_bytes(fmt, cols);
	t->init = init;
	t->std = std;
	t->centre = 1.0f;
	if (align == HOST_ONLY) {
		t->offset = HOST_ONLY;	/* placed by place_host_only */
	} else {
		t->offset = align_up(L->off, align);
		L->off = t->offset + (uint64_t)rows * t->row_bytes;
	}
	return (int32_t)L->m->n_t++;
}

/*
 * Tensors only the host reads (the PLE table: one row per token, in pccx__gemma_host_inputs)
 * keep their place in the table, and so their synthetic values, but their bytes go after
 * everything the device reads (device_size), so the board's memory need not hold them
 * (1.5 GB of Gemma 4 E4B).
 */
static void place_host_only(struct layout *L)
{
	uint32_t i;

	L->off = align_up(L->off, 4096);
	L->m->device_size = L->off;
	for (i = 0; i < L->m->n_t; i++) {
		struct pccx_gemma_tensor *t = &L->m->t[i];

		if (t->offset != HOST_ONLY)
			continue;
		t->offset = align_up(L->off, 4096);
		L->off = t->offset + (uint64_t)t->rows * t->row_bytes;
	}
}

static float inv_sqrt(uint32_t n)
{
	return (float)(1.0 / sqrt((double)n));
}

static void lay_out(struct layout *L)
{
	struct pccx_gemma_model *m = L->m;
	const struct pccx_gemma_config *c = &m->cfg;
	struct pccx_gemma_weights *w = &m->w;
	uint32_t D = c->d_model, P = c->d_ple, R = c->laurel_rank, l, k;
	const uint32_t Q4 = PCCX_WFMT_Q4, F32 = PCCX_WFMT_F32;
	const enum pccx_gemma_init N = PCCX_GEMMA_INIT_NORMAL, ONE = PCCX_GEMMA_INIT_NEAR;
	static const char *const lvec_names[PCCX_GEMMA_LV_COUNT] = {
		"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm",
		"laurel_post_norm", "post_norm", "altup_router_norm", "altup_correct_scale",
		"attn_q_norm", "attn_k_norm", "layer_output_scale",
		"post_ffw_norm_1", "pre_ffw_norm_2", "post_ffw_norm_2", "ffn_gate_inp_scale",
		"ffn_exp_scale",
	};
	/* the norm flag a vector belongs to; 0: every layer has it */
	static const uint32_t lvec_norm[PCCX_GEMMA_LV_COUNT] = {
		[PCCX_GEMMA_LV_POST_ATTN_NORM] = PCCX_NORM_POST_ATTN,
		[PCCX_GEMMA_LV_FFN_NORM] = PCCX_NORM_PRE_FFN,
		[PCCX_GEMMA_LV_POST_FFN_NORM] = PCCX_NORM_POST_FFN,
		[PCCX_GEMMA_LV_Q_NORM] = PCCX_NORM_Q,
		[PCCX_GEMMA_LV_K_NORM] = PCCX_NORM_K,
	};
	const struct pccx_family_desc *fam = pccx__family(c->family);
	bool altup = fam->altup, ple = pccx__gemma_config_ple(c);
	/* whether the family has the vectors that are not norms of every layer */
	const bool lvec_family[PCCX_GEMMA_LV_COUNT] = {
		[PCCX_GEMMA_LV_LAUREL_NORM] = fam->altup, [PCCX_GEMMA_LV_ROUTER_NORM] = fam->altup,
		[PCCX_GEMMA_LV_CORRECT_SCALE] = fam->altup, [PCCX_GEMMA_LV_POST_PLE_NORM] = ple,
		[PCCX_GEMMA_LV_OUT_SCALE] = fam->layer_scale,
		[PCCX_GEMMA_LV_POST_FFN_NORM_1] = c->n_experts > 0,
		[PCCX_GEMMA_LV_PRE_FFN_NORM_2] = c->n_experts > 0,
		[PCCX_GEMMA_LV_POST_FFN_NORM_2] = c->n_experts > 0,
		[PCCX_GEMMA_LV_ROUTER_SCALE] = c->n_experts > 0,
		[PCCX_GEMMA_LV_EXPERT_SCALE] = c->n_experts > 0,
	};

	/* Embedding rows ~ N(0, 1/D): after the sqrt(D) scale the embedding has unit RMS. */
	w->embed = add(L, TENSOR_ALIGN, Q4, c->vocab, D, N, inv_sqrt(D), "token_embd.weight");
	w->ple_table = w->ple_model_proj = w->ple_proj_norm = -1;
	for (k = 0; k < 3; k++)
		w->altup_proj[k] = w->altup_unembd[k] = -1;
	if (ple) {
		/* PLE rows ~ N(0, 1/d_ple): after the x sqrt(d_ple) scale they have unit RMS. */
		w->ple_table = add(L, HOST_ONLY, Q4, c->ple_vocab, c->n_layers * P, N,
				   inv_sqrt(P), "per_layer_token_embd.weight");
		w->ple_model_proj = add(L, TENSOR_ALIGN, Q4, c->n_layers * P, D, N, inv_sqrt(D),
					"per_layer_model_proj.weight");
	}
	if (altup) {
		for (k = 0; k < 3; k++)
			w->altup_proj[k] = add(L, TENSOR_ALIGN, Q4, D, D, N, inv_sqrt(D),
					       "altup_proj.%u.weight", k);
		for (k = 0; k < 3; k++)
			w->altup_unembd[k] = add(L, TENSOR_ALIGN, Q4, D, D, N, inv_sqrt(D),
						 "altup_unembd_proj.%u.weight", k);
	}
	if (ple)
		w->ple_proj_norm = add(L, TENSOR_ALIGN, F32, 1, P, ONE, 0.1f,
				       "per_layer_proj_norm.weight");
	w->final_norm = add(L, ple ? 16 : TENSOR_ALIGN, F32, 1, D, ONE, 0.1f,
			    "output_norm.weight");
	if (!L->failed) {
		w->gvec_offset = m->t[ple ? w->ple_proj_norm : w->final_norm].offset;
		w->gvec_bytes = L->off - w->gvec_offset;
	}

	for (l = 0; l < c->n_layers; l++) {
		const struct pccx_layer_desc *ly = &m->layers[l];
		struct pccx_gemma_layer_w *lw = &w->layer[l];
		uint32_t F = ly->d_ffn, Q = ly->q_dim, KV = ly->kv_dim;
		/*
		 * The trained q/k norm weights and the q scale together give scores the usual
		 * 1/sqrt(head_dim): centre^2 * q_scale = head_dim^-1/2. Gemma 3n attends with
		 * scale 1.0, so its weights are centred on head_dim^(-1/4); with weights near 1
		 * the scores would have std sqrt(head_dim) (16 for E4B) and every softmax would be
		 * one-hot. Gemma 3's q_scale is head_dim^-1/2 already: centred on 1.
		 */
		float qk_centre = (float)(pow((double)ly->head_dim, -0.25) / sqrt((double)ly->q_scale));

		/* Gemma 4's KV-sharing layers have no k projection, so no k norm either */
		bool kv_weights = ly->kv_write || fam->shared_kv_weights;

		for (k = 0; k < PCCX_GEMMA_LV_COUNT; k++) {
			uint32_t n = k == PCCX_GEMMA_LV_OUT_SCALE ? 1 :
				     k == PCCX_GEMMA_LV_EXPERT_SCALE ? ly->n_experts :
				     k == PCCX_GEMMA_LV_Q_NORM || k == PCCX_GEMMA_LV_K_NORM ?
				     ly->head_dim : D;

			lw->vec[k] = -1;
			if (lvec_norm[k] ? !(ly->norms & lvec_norm[k]) :
					   k >= PCCX_GEMMA_LV_LAUREL_NORM && !lvec_family[k])
				continue;
			if (k == PCCX_GEMMA_LV_K_NORM && !kv_weights)
				continue;
			lw->vec[k] = add(L, k ? 16 : TENSOR_ALIGN, F32, 1, n, ONE, 0.1f,
					 "blk.%u.%s.weight", l, lvec_names[k]);
			if (!L->failed &&
			    (k == PCCX_GEMMA_LV_Q_NORM || k == PCCX_GEMMA_LV_K_NORM))
				m->t[lw->vec[k]].centre = qk_centre;
		}
		if (!L->failed) {
			lw->vec_offset = m->t[lw->vec[0]].offset;
			lw->vec_bytes = L->off - lw->vec_offset;
		}
		lw->router = lw->pred_coef = lw->corr_coef = -1;
		lw->laurel_l = lw->laurel_r = lw->ple_gate = lw->ple_proj = -1;
		if (altup) {
			/*
			 * Router input is RMS-normalised and divided by D, so its entries are ~1/D:
			 * weights ~ N(0, D/4) give tanh arguments of about 0.5.
			 */
			lw->router = add(L, TENSOR_ALIGN, F32, PCCX_GEMMA_ALTUP_STREAMS, D, N,
					 0.5f * (float)sqrt((double)D),
					 "blk.%u.altup_router.weight", l);
			lw->pred_coef = add(L, TENSOR_ALIGN, F32,
					    PCCX_GEMMA_ALTUP_STREAMS * PCCX_GEMMA_ALTUP_STREAMS,
					    PCCX_GEMMA_ALTUP_STREAMS, N, 0.05f,
					    "blk.%u.altup_predict_coef.weight", l);
			lw->corr_coef = add(L, TENSOR_ALIGN, F32, PCCX_GEMMA_ALTUP_STREAMS,
					    PCCX_GEMMA_ALTUP_STREAMS, N, 0.05f,
					    "blk.%u.altup_correct_coef.weight", l);
		}
		lw->attn_q =
			add(L, TENSOR_ALIGN, Q4, Q, D, N, inv_sqrt(D), "blk.%u.attn_q.weight", l);
		lw->attn_k = lw->attn_v = -1;
		if (kv_weights)
			lw->attn_k = add(L, TENSOR_ALIGN, Q4, KV, D, N, inv_sqrt(D),
					 "blk.%u.attn_k.weight", l);
		if (kv_weights && !ly->k_eq_v)
			lw->attn_v = add(L, TENSOR_ALIGN, Q4, KV, D, N, inv_sqrt(D),
					 "blk.%u.attn_v.weight", l);
		lw->attn_o = add(L, TENSOR_ALIGN, Q4, D, Q, N, inv_sqrt(Q),
				 "blk.%u.attn_output.weight", l);
		if (altup) {
			lw->laurel_l = add(L, TENSOR_ALIGN, Q4, R, D, N, inv_sqrt(D),
					   "blk.%u.laurel_l.weight", l);
			lw->laurel_r = add(L, TENSOR_ALIGN, Q4, D, R, N, inv_sqrt(R),
					   "blk.%u.laurel_r.weight", l);
		}
		lw->ffn_gate =
			add(L, TENSOR_ALIGN, Q4, F, D, N, inv_sqrt(D), "blk.%u.ffn_gate.weight", l);
		lw->ffn_up =
			add(L, TENSOR_ALIGN, Q4, F, D, N, inv_sqrt(D), "blk.%u.ffn_up.weight", l);
		lw->ffn_down =
			add(L, TENSOR_ALIGN, Q4, D, F, N, inv_sqrt(F), "blk.%u.ffn_down.weight", l);
		lw->moe_router = lw->experts = -1;
		if (ly->n_experts) {
			/*
			 * The router's input is RMS-normalised and scaled by D^-1/2, entries ~D^-1/2:
			 * weights ~ N(0, 1) give expert logits of unit spread.
			 */
			lw->moe_router = add(L, TENSOR_ALIGN, F32, ly->n_experts, D, N, 1.0f,
					     "blk.%u.ffn_gate_inp.weight", l);
			for (k = 0; k < ly->n_experts; k++) {
				int32_t g = add(L, TENSOR_ALIGN, Q4, ly->d_expert, D, N, inv_sqrt(D),
						"blk.%u.ffn_gate_exps.%u.weight", l, k);

				add(L, TENSOR_ALIGN, Q4, ly->d_expert, D, N, inv_sqrt(D),
				    "blk.%u.ffn_up_exps.%u.weight", l, k);
				add(L, TENSOR_ALIGN, Q4, D, ly->d_expert, N, inv_sqrt(ly->d_expert),
				    "blk.%u.ffn_down_exps.%u.weight", l, k);
				if (k == 0)
					lw->experts = g;
			}
		}
		if (ple) {
			lw->ple_gate = add(L, TENSOR_ALIGN, Q4, P, D, N, inv_sqrt(D),
					   "blk.%u.inp_gate.weight", l);
			lw->ple_proj = add(L, TENSOR_ALIGN, Q4, D, P, N, inv_sqrt(P),
					   "blk.%u.proj.weight", l);
		}
	}
	/* the sparse layers' W_down in q4c layout, after the tensors (not in the table) */
	for (l = 0; l < c->n_layers; l++) {
		struct pccx_gemma_layer_w *lw = &w->layer[l];
		struct pccx_wshape q4c = { D, m->layers[l].d_ffn, PCCX_WFMT_Q4C, true };

		lw->down_q4c = 0;
		lw->down_q4c_ok = false;
		if (!m->layers[l].sparse || lw->ffn_down < 0 || L->failed)
			continue;
		lw->down_q4c = align_up(L->off, TENSOR_ALIGN);
		L->off = lw->down_q4c + pccx__wstream_port_offset(&q4c, PCCX_WSTREAM_PORTS);
	}
	place_host_only(L);
	L->off = align_up(L->off, 4096);
}

int pccx__gemma_model_create(struct pccx_gemma_model **out,
			       const struct pccx_gemma_config *cfg,
			       pccx_diag *d)
{
	struct pccx_gemma_model *m;
	struct layout L = { 0 };
	int rc;

	*out = NULL;
	rc = pccx__gemma_config_check(cfg, d);
	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return pccx__fail(d, PCCX_ERR_NOMEM, "model '%s': out of memory", cfg->name);
	m->cfg = *cfg;
	rc = pccx__layers_build(&m->cfg, m->attn, m->layers, d);
	if (rc) {
		pccx__gemma_model_free(m);
		return rc;
	}
	L.m = m;
	lay_out(&L);
	if (L.failed) {
		pccx__gemma_model_free(m);
		return pccx__fail(d, PCCX_ERR_NOMEM, "model '%s': out of memory (tensor table)",
				  cfg->name);
	}
	m->size = L.off;
	m->mapping = mmap(NULL, m->size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->mapping == MAP_FAILED) {
		m->mapping = NULL;
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "model '%s': cannot map %llu bytes of weights",
				cfg->name, (unsigned long long)m->size);
		pccx__gemma_model_free(m);
		return rc;
	}
#ifdef MADV_HUGEPAGE
	/* The row kernels read 16 rows side by side, five 4 KiB pages a group: on 2 MiB pages
	 * their TLB misses vanish (a 262,144 x 2048 GEMV on two threads of an AMD EPYC VM read
	 * 26.5-28.5 GB/s from 4 KiB pages, 30.1-31.9 from 2 MiB ones). Advice only: where the
	 * kernel has no transparent huge pages the mapping stays as it is. */
	(void)madvise(m->mapping, m->size, MADV_HUGEPAGE);
#endif
	m->mapping_size = m->size;
	m->data = m->mapping;
	*out = m;
	return PCCX_OK;
}

void pccx__gemma_model_free(struct pccx_gemma_model *m)
{
	if (!m)
		return;
	if (m->mapping)
		munmap(m->mapping, m->mapping_size);
	free(m->t);
	free(m);
}

void pccx__gemma_row_f32(const struct pccx_gemma_model *m, int32_t t, uint32_t r, float *out)
{
	const struct pccx_gemma_tensor *T = &m->t[t];
	const uint8_t *rec = pccx_gemma_row(m, t, r);
	uint32_t k;

	if (T->fmt == PCCX_WFMT_Q4) {
		const uint16_t *sc = pccx_gemma_q4_scales(rec);
		const uint8_t *nib = pccx_gemma_q4_nibbles(rec, T->cols);

		for (k = 0; k < T->cols; k++)
			out[k] = pccx__q4_weight(nib, sc, k);
	} else {
		for (k = 0; k < T->cols; k++)
			out[k] = pccx_f32_from_bits((uint32_t)rec[4 * k] |
						    (uint32_t)rec[4 * k + 1] << 8 |
						    (uint32_t)rec[4 * k + 2] << 16 |
						    (uint32_t)rec[4 * k + 3] << 24);
	}
}

uint32_t pccx__gemma_sparse_ffn(const struct pccx_gemma_model *m)
{
	uint32_t l;

	for (l = 0; l < m->cfg.n_layers; l++)
		if (m->layers[l].sparse)
			return m->layers[l].d_ffn;
	return 0;
}

uint64_t pccx__gemma_streamed_bytes(const struct pccx_gemma_model *m)
{
	const struct pccx_gemma_config *c = &m->cfg;
	const struct pccx_gemma_weights *w = &m->w;
	uint64_t b = 0;
	uint32_t l, k;

#define TB(id) ((id) < 0 ? 0 : (uint64_t)m->t[id].rows * m->t[id].row_bytes)
	b += TB(w->embed) + TB(w->ple_model_proj) + w->gvec_bytes;
	for (k = 0; k < 3; k++)
		b += TB(w->altup_proj[k]) + TB(w->altup_unembd[k]);
	for (l = 0; l < c->n_layers; l++) {
		const struct pccx_gemma_layer_w *lw = &w->layer[l];

		b += lw->vec_bytes + TB(lw->router) + TB(lw->pred_coef) + TB(lw->corr_coef);
		b += TB(lw->attn_q) + TB(lw->attn_o) + TB(lw->laurel_l) + TB(lw->laurel_r);
		b += TB(lw->ffn_gate) + TB(lw->ffn_up) + TB(lw->ffn_down);
		b += TB(lw->ple_gate) + TB(lw->ple_proj);
		/* a mixture-of-experts layer reads its router and n_experts_used experts */
		if (lw->experts >= 0)
			b += TB(lw->moe_router) + m->layers[l].n_experts_used *
				(TB(lw->experts) + TB(lw->experts + 1) + TB(lw->experts + 2));
		if (m->layers[l].kv_write)
			b += TB(lw->attn_k) + TB(lw->attn_v);
	}
#undef TB
	return b;
}

/* ------------------------------------------------------------------------------------- */
/* Synthesiser.                                                                          */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/*
 * Approximately standard normal from 64 random bits: the sum of four 16-bit uniforms
 * (Irwin-Hall, n = 4), centred and scaled to unit variance. Tails end at +-3.46; the
 * kurtosis is 2.7 instead of 3. Good enough for weights that only need plausible statistics.
 */
static float gauss(uint64_t *s)
{
	uint64_t r = splitmix64(s);
	int32_t sum = (int32_t)(r & 0xFFFF) + (int32_t)((r >> 16) & 0xFFFF) +
		      (int32_t)((r >> 32) & 0xFFFF) + (int32_t)(r >> 48);

	return (float)(sum - 131070) * (1.0f / 37837.23f);
}

/*
 * Synthetic Q4 weights are drawn directly in the quantised domain (quantising 6.9 G floats
 * with the exact rule would take minutes for E4B): q = round(2.4 z), z ~ N(0, 1), clipped to
 * -8..7, by inverse CDF from 16 random bits; a per-block scale d = std / 2.4 with +-10 %
 * jitter, so w = d q has about the requested standard deviation (q has std 2.41).
 *
 * q_cdf[i]: 65536 * P(q <= i - 8) for i = 0..14 (q = 7 takes the rest).
 */
#define Q_SPREAD 2.4f

static const uint16_t q_cdf[15] = {
	58, 222, 718, 1992, 4743, 9751, 17432, 27360, 38176, 48104, 55785, 60793, 63544,
	64818, 65314,
};

static uint8_t q_of_u16[65536];	/* nibble (q & 15) for 16 uniform bits */
static pthread_once_t q_table_once = PTHREAD_ONCE_INIT;

static void q_table_init(void)
{
	uint32_t u, i = 0;

	for (u = 0; u < 65536; u++) {
		while (i < 15 && u >= q_cdf[i])
			i++;
		q_of_u16[u] = (uint8_t)(((int)i - 8) & 0xF);
	}
}

static void q4_block(uint64_t *s, float std, uint8_t *sc2, uint8_t *nib16)
{
	float jitter = 1.0f + 0.1f * gauss(s);
	uint16_t h = pccx__f32_to_fp16(std / Q_SPREAD * jitter);
	uint32_t i;

	sc2[0] = (uint8_t)h;
	sc2[1] = (uint8_t)(h >> 8);
	for (i = 0; i < 16; i += 2) {
		uint64_t r = splitmix64(s);

		nib16[i] = (uint8_t)(q_of_u16[r & 0xFFFF] | q_of_u16[(r >> 16) & 0xFFFF] << 4);
		nib16[i + 1] = (uint8_t)(q_of_u16[(r >> 32) & 0xFFFF] | q_of_u16[r >> 48] << 4);
	}
}

struct synth_job {
	struct pccx_gemma_model *m;
	int32_t t;
	uint64_t seed;
};

static void synth_rows(void *ctx, unsigned part, unsigned nparts)
{
	struct synth_job *j = ctx;
	const struct pccx_gemma_tensor *T = &j->m->t[j->t];
	unsigned long long lo, hi, r;
	uint32_t b, i;

	pccx__pool_split(T->rows, 1, part, nparts, &lo, &hi);
	for (r = lo; r < hi; r++) {
		uint8_t *rec = j->m->data + T->offset + r * T->row_bytes;
		uint64_t s =
			j->seed ^ ((uint64_t)(uint32_t)j->t << 40) ^ (r * 0xD1B54A32D192ED03ull);

		splitmix64(&s);
		if (T->fmt == PCCX_WFMT_Q4) {
			uint8_t *sc = rec, *nib = rec + pccx_gemma_q4_scale_bytes(T->cols);

			for (b = 0; b < T->cols / 32; b++)
				q4_block(&s, T->std, sc + 2 * b, nib + 16 * b);
		} else {
			for (i = 0; i < T->cols; i++) {
				float v = T->std * gauss(&s);
				uint32_t u;

				if (T->init == PCCX_GEMMA_INIT_NEAR)
					v = T->centre * (1.0f + v);
				u = pccx_f32_bits(v);
				rec[4 * i] = (uint8_t)u;
				rec[4 * i + 1] = (uint8_t)(u >> 8);
				rec[4 * i + 2] = (uint8_t)(u >> 16);
				rec[4 * i + 3] = (uint8_t)(u >> 24);
			}
		}
	}
}

int pccx__gemma_synth(struct pccx_gemma_model *m, uint64_t seed, unsigned n_threads,
			pccx_diag *d)
{
	struct pccx_pool *pool = NULL;
	struct synth_job j = { .m = m };
	uint32_t t;
	int rc;

	if (n_threads == 0)
		n_threads = pccx__pool_ncpu();
	pthread_once(&q_table_once, q_table_init);
	rc = pccx__pool_create(&pool, n_threads, d);
	if (rc)
		return rc;
	for (t = 0; t < m->n_t; t++) {
		j.t = (int32_t)t;
		j.seed = seed * 0x9E3779B97F4A7C15ull + t;
		pccx__pool_run(pool, synth_rows, &j);
	}
	pccx__pool_destroy(pool);
	pccx__gemma_model_q4c(m);
	return PCCX_OK;
}
