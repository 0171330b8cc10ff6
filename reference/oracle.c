// SPDX-License-Identifier: MIT
/*
 * Float oracle of the Gemma decode step of every family: FP64 arithmetic on the dequantised
 * weights, written from the models' definitions (Hugging Face GemmaModel, Gemma2Model,
 * Gemma3TextModel, Gemma3nTextModel and Gemma4TextModel, dense or with its mixture of
 * experts), independently of the NPU graph.
 * What a family has comes from its facts (family.h) and the per-layer table (layers.h); stage
 * names and shapes match gemma_graph.c. docs/reference.md, "Families".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "oracle.h"
#include "pool.h"

#define NS PCCX_GEMMA_ALTUP_STREAMS
#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct pccx_oracle {
	const struct pccx_gemma_model *m;
	const struct pccx_gemma_config *c;
	pccx_oracle_stage_fn on_stage;
	void *user;
	int rc;
	uint32_t pos;
	double *kc[PCCX_GEMMA_MAX_LAYERS];	/* KV writers: (max_ctx, n_kv_heads, head_dim) */
	double *vc[PCCX_GEMMA_MAX_LAYERS];	/* KV writers: (max_ctx, n_kv_heads, head_dim) */
	struct pccx_pool *pool;			/* matvec rows are split across its threads */
	float *rows;				/* (threads, max cols) the threads' rows */
	float *row;				/* = rows: the calling thread's, outside matvec */
	uint32_t maxc;
	float **deq;				/* (n_t) dequantised tensors, or NULL */
	uint64_t deq_left;			/* bytes the cache may still take */
	double *xs_all, *pred_all;		/* (4, D) streams and predictions */
	double *xs[NS], *pred[NS];		/* rows of the above */
	double *e;				/* (D) */
	double *u;				/* (n_layers, d_ple) per-layer inputs */
	double *h, *lr, *o, *al, *t, *f, *tmp, *tmp2;	/* (D) */
	double *lrank;				/* (laurel_rank) */
	double *q, *ctx;			/* (n_heads, head_dim), the largest layer's */
	double *k, *v;				/* (n_kv_heads, head_dim), the largest */
	double *scores;				/* (max_ctx) */
	double *gate, *up;			/* (max(d_ffn, d_expert)), the largest */
	double *t2, *acc, *y;			/* (D) the experts' input, sum, one's output */
	double *rlog, *probs;			/* (n_experts) router logits, probabilities */
	double *pleg;				/* (d_ple) */
	double *w;				/* (max(D, head_dim, d_ple, n_experts)) */
	double *logits;				/* (vocab) */
};

static void emit(struct pccx_oracle *o, const double *x, uint32_t rows, uint32_t cols,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void emit(struct pccx_oracle *o, const double *x, uint32_t rows, uint32_t cols,
		 const char *fmt, ...)
{
	char name[64];
	va_list ap;

	if (o->rc || !o->on_stage)
		return;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	o->rc = o->on_stage(o->user, name, x, rows, cols);
}

/* Budget of the dequantised-weight cache (the oracle is for small models; E4B streams). */
#define DEQ_CACHE_BYTES (256ull << 20)

/* The dequantised tensor t, from the cache (filled on first use while the budget lasts). */
static const float *deq_tensor(struct pccx_oracle *o, int32_t t)
{
	const struct pccx_gemma_tensor *T = &o->m->t[t];
	uint64_t bytes = (uint64_t)T->rows * T->cols * sizeof(float);
	uint32_t r;

	if (o->deq[t] || bytes > o->deq_left)
		return o->deq[t];
	o->deq[t] = malloc(bytes);
	if (!o->deq[t])
		return NULL;
	o->deq_left -= bytes;
	for (r = 0; r < T->rows; r++)
		pccx__gemma_row_f32(o->m, t, r, o->deq[t] + (size_t)r * T->cols);
	return o->deq[t];
}

struct mv_job {
	struct pccx_oracle *o;
	int32_t t;
	const float *W;		/* the dequantised tensor, or NULL: rows dequantised here */
	const double *x;
	double *y;
};

/* Rows of one thread; each row's sum runs in column order, so y does not depend on threads. */
static void matvec_part(void *ctx, unsigned part, unsigned nparts)
{
	const struct mv_job *j = ctx;
	const struct pccx_gemma_tensor *T = &j->o->m->t[j->t];
	float *buf = j->o->rows + (size_t)part * j->o->maxc;
	unsigned long long lo, hi, r;
	const float *row;
	uint32_t k;

	pccx__pool_split(T->rows, 1, part, nparts, &lo, &hi);
	for (r = lo; r < hi; r++) {
		double s = 0.0;

		if (j->W) {
			row = j->W + (size_t)r * T->cols;
		} else {
			pccx__gemma_row_f32(j->o->m, j->t, (uint32_t)r, buf);
			row = buf;
		}
		for (k = 0; k < T->cols; k++)
			s += (double)row[k] * j->x[k];
		j->y[r] = s;
	}
}

/* y = W x over all rows of tensor t. */
static void matvec(struct pccx_oracle *o, int32_t t, const double *x, double *y)
{
	struct mv_job j = { o, t, deq_tensor(o, t), x, y };

	/* small tensors are not worth waking the threads */
	pccx__pool_run((uint64_t)o->m->t[t].rows * o->m->t[t].cols >= (1u << 16) ? o->pool : NULL,
		       matvec_part, &j);
}

/* A weight vector (tensor of one row) as doubles in o->w. */
static const double *wvec(struct pccx_oracle *o, int32_t t)
{
	uint32_t k;

	pccx__gemma_row_f32(o->m, t, 0, o->row);
	for (k = 0; k < o->m->t[t].cols; k++)
		o->w[k] = o->row[k];
	return o->w;
}

/* out = x / sqrt(mean(x^2) + eps) * w  (w == NULL: no weight). out may equal x. */
static void rmsnorm(const struct pccx_oracle *o, const double *x, double *out, uint32_t n,
		    const double *w)
{
	double ss = 0.0, r;
	uint32_t i;

	for (i = 0; i < n; i++)
		ss += x[i] * x[i];
	r = 1.0 / sqrt(ss / n + (double)o->c->eps);
	for (i = 0; i < n; i++)
		out[i] = x[i] * r * (w ? w[i] : 1.0);
}

static double gelu(double x)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double rms(const double *x, uint32_t n)
{
	double ss = 0.0;
	uint32_t i;

	for (i = 0; i < n; i++)
		ss += x[i] * x[i];
	return sqrt(ss / n);
}

/* y *= target / sqrt(max(mean(y^2), 1e-5)) */
static void match_magnitude(double *y, uint32_t n, double target)
{
	double m = rms(y, n), s;
	uint32_t i;

	m = m * m < 1e-5 ? sqrt(1e-5) : m;
	s = target / m;
	for (i = 0; i < n; i++)
		y[i] *= s;
}

/* Router modalities tanh(W_r (RMSNorm_{g_r}(x) / D)). */
static void router(struct pccx_oracle *o, uint32_t l, const double *x, double m[NS])
{
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t D = o->c->d_model, i;

	rmsnorm(o, x, o->tmp, D, wvec(o, lw->vec[PCCX_GEMMA_LV_ROUTER_NORM]));
	for (i = 0; i < D; i++)
		o->tmp[i] /= D;
	matvec(o, lw->router, o->tmp, m);
	for (i = 0; i < NS; i++)
		m[i] = tanh(m[i]);
}

/*
 * Rotate-half RoPE of one head at position pos with base theta: pair i <-> i + hd/2 turns by
 * pos * theta^(-2i/hd) / factor (Hugging Face's "linear" rope_type; 1: none) for the first
 * rope_dims/2 pairs; the others have inverse frequency 0 and do not turn (Gemma 4's
 * "proportional" rope_type: the exponent keeps the whole head's hd).
 */
static void rope(double *x, uint32_t hd, uint32_t rope_dims, uint32_t pos, double theta,
		 double factor)
{
	uint32_t half = hd / 2, i;

	for (i = 0; i < half; i++) {
		double ph = i < rope_dims / 2 ? pos * (pow(theta, -2.0 * i / hd) / factor) : 0.0;
		double a = x[i], b = x[i + half];

		x[i] = a * cos(ph) - b * sin(ph);
		x[i + half] = b * cos(ph) + a * sin(ph);
	}
}

/* RoPE(RMSNorm_w(x)) on each of `heads` heads of layer ly; the norm if the layer has it. */
static void norm_rope(struct pccx_oracle *o, const struct pccx_layer_desc *ly, double *x,
		      uint32_t heads, uint32_t norm, int32_t w)
{
	uint32_t hd = ly->head_dim, h;

	if (ly->norms & norm)
		wvec(o, w);
	for (h = 0; h < heads; h++) {
		if (ly->norms & norm)
			rmsnorm(o, x + h * hd, x + h * hd, hd, o->w);
		rope(x + h * hd, hd, ly->rope_dims, o->pos, ly->theta,
		     o->m->attn[ly->kind].rope_factor);
	}
}

static void attention(struct pccx_oracle *o, uint32_t l)
{
	const struct pccx_layer_desc *ly = &o->m->layers[l];
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t hd = ly->head_dim, nkv = ly->n_kv_heads, group = ly->n_heads / nkv, p = o->pos;
	uint32_t src = ly->kv_src, h, j, i, first;

	matvec(o, lw->attn_q, o->h, o->q);
	norm_rope(o, ly, o->q, ly->n_heads, PCCX_NORM_Q, lw->vec[PCCX_GEMMA_LV_Q_NORM]);
	emit(o, o->q, ly->n_heads, hd, "L%u.attn.q_rope", l);
	if (ly->kv_write) {
		matvec(o, lw->attn_k, o->h, o->k);
		/* Gemma 4's attention_k_eq_v: v is k's projection, before k's norm and RoPE */
		if (ly->k_eq_v)
			memcpy(o->v, o->k, sizeof(double) * nkv * hd);
		else
			matvec(o, lw->attn_v, o->h, o->v);
		norm_rope(o, ly, o->k, nkv, PCCX_NORM_K, lw->vec[PCCX_GEMMA_LV_K_NORM]);
		for (h = 0; h < nkv && (ly->norms & PCCX_NORM_V); h++)
			rmsnorm(o, o->v + h * hd, o->v + h * hd, hd, NULL);
		emit(o, o->k, nkv, hd, "L%u.attn.k_rope", l);
		emit(o, o->v, nkv, hd, "L%u.attn.v", l);
		memcpy(o->kc[l] + (size_t)p * nkv * hd, o->k, sizeof(double) * nkv * hd);
		memcpy(o->vc[l] + (size_t)p * nkv * hd, o->v, sizeof(double) * nkv * hd);
	}
	/* causal; a layer with a window sees keys p - window + 1 .. p */
	first = ly->window && p + 1 > ly->window ? p + 1 - ly->window : 0;
	for (h = 0; h < ly->n_heads; h++) {
		const double *qh = o->q + h * hd;
		uint32_t g = h / group;
		double mx = -INFINITY, sum = 0.0;

		for (j = first; j <= p; j++) {
			const double *kj = o->kc[src] + ((size_t)j * nkv + g) * hd;
			double s = 0.0;

			for (i = 0; i < hd; i++)
				s += qh[i] * kj[i];
			/* Hugging Face scales the scores (the graph scales q: the same product) */
			s *= ly->q_scale;
			if (ly->attn_softcap > 0.0f)
				s = ly->attn_softcap * tanh(s / ly->attn_softcap);
			o->scores[j] = s;
			mx = s > mx ? s : mx;
		}
		for (j = first; j <= p; j++) {
			o->scores[j] = exp(o->scores[j] - mx);
			sum += o->scores[j];
		}
		for (i = 0; i < hd; i++)
			o->ctx[h * hd + i] = 0.0;
		for (j = first; j <= p; j++) {
			const double *vj = o->vc[src] + ((size_t)j * nkv + g) * hd;
			double pj = o->scores[j] / sum;

			for (i = 0; i < hd; i++)
				o->ctx[h * hd + i] += pj * vj[i];
		}
	}
	emit(o, o->ctx, ly->n_heads, hd, "L%u.attn.ctx", l);
	matvec(o, lw->attn_o, o->ctx, o->o);
	emit(o, o->o, 1, o->c->d_model, "L%u.attn.out", l);
}

static void ffn(struct pccx_oracle *o, uint32_t l)
{
	const struct pccx_layer_desc *ly = &o->m->layers[l];
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t F = ly->d_ffn, i;

	matvec(o, lw->ffn_gate, o->t, o->gate);
	matvec(o, lw->ffn_up, o->t, o->up);
	emit(o, o->gate, 1, F, "L%u.ffn.gate", l);
	emit(o, o->up, 1, F, "L%u.ffn.up", l);
	if (ly->sparse) {
		/* Gaussian top-k: shifted ReLU at mean + population std * z */
		double mean = 0.0, var = 0.0, cut;

		for (i = 0; i < F; i++)
			mean += o->gate[i];
		mean /= F;
		for (i = 0; i < F; i++)
			var += (o->gate[i] - mean) * (o->gate[i] - mean);
		cut = mean + sqrt(var / F) * (double)ly->sparse_z;
		for (i = 0; i < F; i++)
			o->gate[i] = o->gate[i] - cut > 0.0 ? o->gate[i] - cut : 0.0;
	}
	for (i = 0; i < F; i++)
		o->gate[i] = gelu(o->gate[i]);
	emit(o, o->gate, 1, F, "L%u.ffn.act", l);
	for (i = 0; i < F; i++)
		o->gate[i] *= o->up[i];
	emit(o, o->gate, 1, F, "L%u.ffn.hidden", l);
	matvec(o, lw->ffn_down, o->gate, o->f);
	emit(o, o->f, 1, o->c->d_model, "L%u.ffn.down", l);
}

/* out = RMSNorm_w(x) when layer l has `norm`, else x (out may equal x). */
static void layer_norm(struct pccx_oracle *o, uint32_t l, uint32_t norm, enum pccx_gemma_lvec k,
		       const double *x, double *out)
{
	uint32_t D = o->c->d_model;

	if (o->m->layers[l].norms & norm)
		rmsnorm(o, x, out, D, wvec(o, o->m->w.layer[l].vec[k]));
	else if (out != x)
		memcpy(out, x, sizeof(double) * D);
}

/* Gemma 3n's decoder layer (Gemma3nTextDecoderLayer) on the four AltUp streams o->xs. */
static void layer_altup(struct pccx_oracle *o, uint32_t l)
{
	const struct pccx_gemma_config *c = o->c;
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t D = c->d_model, P = c->d_ple, k, j, i;
	double m[NS], coef[NS * NS], corr[NS];

	/* AltUp predict: pred_k = x_k + sum_j c[4k+j] x_j */
	router(o, l, o->xs[0], m);
	emit(o, m, 1, NS, "L%u.altup.router", l);
	matvec(o, lw->pred_coef, m, coef);
	for (k = 0; k < NS; k++) {
		for (i = 0; i < D; i++) {
			double s = 0.0;

			for (j = 0; j < NS; j++)
				s += coef[NS * k + j] * o->xs[j][i];
			o->pred[k][i] = o->xs[k][i] + s;
		}
	}
	emit(o, o->pred_all, NS, D, "L%u.altup.pred", l);

	/* h = RMSNorm_in(pred_0); LAuReL */
	rmsnorm(o, o->pred[0], o->h, D, wvec(o, lw->vec[PCCX_GEMMA_LV_ATTN_NORM]));
	emit(o, o->h, 1, D, "L%u.attn.norm", l);
	matvec(o, lw->laurel_l, o->h, o->lrank);
	matvec(o, lw->laurel_r, o->lrank, o->lr);
	rmsnorm(o, o->lr, o->lr, D, wvec(o, lw->vec[PCCX_GEMMA_LV_LAUREL_NORM]));
	for (i = 0; i < D; i++)
		o->lr[i] += o->h[i];
	emit(o, o->lr, 1, D, "L%u.laurel", l);

	attention(o, l);
	layer_norm(o, l, PCCX_NORM_POST_ATTN, PCCX_GEMMA_LV_POST_ATTN_NORM, o->o, o->al);
	for (i = 0; i < D; i++)
		o->al[i] = (o->pred[0][i] + o->al[i] + o->lr[i]) / sqrt(2.0);
	emit(o, o->al, 1, D, "L%u.attn.resid", l);

	layer_norm(o, l, PCCX_NORM_PRE_FFN, PCCX_GEMMA_LV_FFN_NORM, o->al, o->t);
	emit(o, o->t, 1, D, "L%u.ffn.norm", l);
	ffn(o, l);
	layer_norm(o, l, PCCX_NORM_POST_FFN, PCCX_GEMMA_LV_POST_FFN_NORM, o->f, o->f);
	for (i = 0; i < D; i++)
		o->f[i] += o->al[i];
	emit(o, o->f, 1, D, "L%u.ffn.out", l);

	/* AltUp correct: w = W_corr tanh(router(out)) + 1; x_k = pred_k + w_k (out - pred_0) */
	router(o, l, o->f, m);
	matvec(o, lw->corr_coef, m, corr);
	for (k = 0; k < NS; k++)
		corr[k] += 1.0;
	emit(o, corr, 1, NS, "L%u.altup.corr", l);
	for (k = 0; k < NS; k++)
		for (i = 0; i < D; i++)
			o->xs[k][i] = o->pred[k][i] + corr[k] * (o->f[i] - o->pred[0][i]);

	/* PLE: d = RMSNorm(W_proj (GELU(W_gate (x_0 * gamma)) * u_l)); x_k += d for k >= 1 */
	wvec(o, lw->vec[PCCX_GEMMA_LV_CORRECT_SCALE]);
	for (i = 0; i < D; i++)
		o->tmp[i] = o->xs[0][i] * o->w[i];
	matvec(o, lw->ple_gate, o->tmp, o->pleg);
	for (i = 0; i < P; i++)
		o->pleg[i] = gelu(o->pleg[i]) * o->u[l * P + i];
	emit(o, o->pleg, 1, P, "L%u.ple.gate", l);
	matvec(o, lw->ple_proj, o->pleg, o->tmp);
	rmsnorm(o, o->tmp, o->tmp, D, wvec(o, lw->vec[PCCX_GEMMA_LV_POST_PLE_NORM]));
	emit(o, o->tmp, 1, D, "L%u.ple.mix", l);
	for (k = 1; k < NS; k++)
		for (i = 0; i < D; i++)
			o->xs[k][i] += o->tmp[i];
	emit(o, o->xs_all, NS, D, "L%u.out", l);
}

/*
 * Gemma 4's per-layer input on the layer's output x (Gemma4TextDecoderLayer):
 *   x += RMSNorm_postple(W_proj(GELU(W_gate x) * u_l))
 */
static void ple_mix(struct pccx_oracle *o, uint32_t l, double *x)
{
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t D = o->c->d_model, P = o->c->d_ple, i;

	matvec(o, lw->ple_gate, x, o->pleg);
	for (i = 0; i < P; i++)
		o->pleg[i] = gelu(o->pleg[i]) * o->u[l * P + i];
	emit(o, o->pleg, 1, P, "L%u.ple.gate", l);
	matvec(o, lw->ple_proj, o->pleg, o->tmp);
	rmsnorm(o, o->tmp, o->tmp, D, wvec(o, lw->vec[PCCX_GEMMA_LV_POST_PLE_NORM]));
	emit(o, o->tmp, 1, D, "L%u.ple.mix", l);
	for (i = 0; i < D; i++)
		x[i] += o->tmp[i];
}

/*
 * Gemma 4's router (Gemma4TextRouter) on the attention block's output x1 = o->al:
 *   logits = W_r (RMSNorm(x1) * scale * D^-1/2), RMSNorm without weight; p = softmax(logits);
 * the k experts of the largest p (ties to the lower index), their p renormalised to sum 1 and
 * times the per-expert scale: weights w. All in FP64, as the oracle's other sums: the device
 * chooses in FP32 from its own (W4A8) logits, so where two experts nearly tie the choices may
 * differ; the oracle keeps its own (docs/reference.md, "Families").
 */
static void moe_route(struct pccx_oracle *o, uint32_t l, uint32_t *idx, double *w)
{
	const struct pccx_layer_desc *ly = &o->m->layers[l];
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t D = o->c->d_model, E = ly->n_experts, K = ly->n_experts_used, i, j;
	bool taken[PCCX_GEMMA_MAX_EXPERTS] = { false };
	double mx, sum = 0.0;

	rmsnorm(o, o->al, o->tmp, D, NULL);
	wvec(o, lw->vec[PCCX_GEMMA_LV_ROUTER_SCALE]);
	for (i = 0; i < D; i++)
		o->tmp[i] *= o->w[i] / sqrt((double)D);
	matvec(o, lw->moe_router, o->tmp, o->rlog);
	emit(o, o->rlog, 1, E, "L%u.moe.router", l);
	for (i = 1, mx = o->rlog[0]; i < E; i++)
		mx = o->rlog[i] > mx ? o->rlog[i] : mx;
	for (i = 0; i < E; i++) {
		o->probs[i] = exp(o->rlog[i] - mx);
		sum += o->probs[i];
	}
	for (i = 0; i < E; i++)
		o->probs[i] /= sum;
	for (j = 0, sum = 0.0; j < K; j++) {
		uint32_t best = E;

		for (i = 0; i < E; i++)
			if (!taken[i] && (best == E || o->probs[i] > o->probs[best]))
				best = i;
		taken[best] = true;
		idx[j] = best;
		sum += o->probs[best];
	}
	wvec(o, lw->vec[PCCX_GEMMA_LV_EXPERT_SCALE]);
	for (j = 0; j < K; j++)
		w[j] = o->probs[idx[j]] / sum * o->w[idx[j]];
}

/*
 * Gemma 4's mixture of experts beside the dense FFN (Gemma4TextDecoderLayer with
 * enable_moe_block; the experts' activation is hidden_activation, GELU_tanh, as the dense
 * MLP's), on o->f = the dense FFN's W_down output and x1 = o->al:
 *   f = RMSNorm_post1(f) + RMSNorm_post2(sum_j w_j E_j(RMSNorm_pre2(x1))),
 *   E_e(t) = W_down,e(GELU(W_gate,e t) * W_up,e t)
 * (the layer's post-FFN norm and residual follow in layer_plain).
 */
static void moe(struct pccx_oracle *o, uint32_t l)
{
	const struct pccx_layer_desc *ly = &o->m->layers[l];
	const struct pccx_gemma_layer_w *lw = &o->m->w.layer[l];
	uint32_t D = o->c->d_model, I = ly->d_expert, idx[PCCX_GEMMA_MAX_EXPERTS_USED], i, j;
	double w[PCCX_GEMMA_MAX_EXPERTS_USED];

	rmsnorm(o, o->f, o->f, D, wvec(o, lw->vec[PCCX_GEMMA_LV_POST_FFN_NORM_1]));
	emit(o, o->f, 1, D, "L%u.moe.dense", l);
	moe_route(o, l, idx, w);
	rmsnorm(o, o->al, o->t2, D, wvec(o, lw->vec[PCCX_GEMMA_LV_PRE_FFN_NORM_2]));
	emit(o, o->t2, 1, D, "L%u.moe.input", l);
	memset(o->acc, 0, sizeof(double) * D);
	for (j = 0; j < ly->n_experts_used; j++) {
		int32_t g = lw->experts + 3 * (int32_t)idx[j];

		matvec(o, g, o->t2, o->gate);
		matvec(o, g + 1, o->t2, o->up);
		for (i = 0; i < I; i++)
			o->gate[i] = gelu(o->gate[i]) * o->up[i];
		matvec(o, g + 2, o->gate, o->y);
		for (i = 0; i < D; i++)
			o->acc[i] += w[j] * o->y[i];
	}
	emit(o, o->acc, 1, D, "L%u.moe.experts", l);
	rmsnorm(o, o->acc, o->acc, D, wvec(o, lw->vec[PCCX_GEMMA_LV_POST_FFN_NORM_2]));
	for (i = 0; i < D; i++)
		o->f[i] += o->acc[i];
	emit(o, o->f, 1, D, "L%u.moe.out", l);
}

/*
 * A decoder layer of one residual stream x = o->xs[0] (GemmaDecoderLayer, Gemma2DecoderLayer,
 * Gemma3DecoderLayer, Gemma4TextDecoderLayer), the norms and pieces those of the layer's row:
 *   h = RMSNorm_in(x); al = x + [RMSNorm_postattn](attention(h));
 *   x = al + [RMSNorm_postffn](FFN([RMSNorm_preffn](al)) [with the experts' (moe)]);
 *   [x += the per-layer input's mix (ple_mix)]; [x *= layer_scalar]
 * Gemma 1 has only the pre-FFN norm (Hugging Face's post_attention_layernorm, which despite
 * its name normalises the FFN input).
 */
static void layer_plain(struct pccx_oracle *o, uint32_t l)
{
	const struct pccx_layer_desc *ly = &o->m->layers[l];
	uint32_t D = o->c->d_model, i;
	double *x = o->xs[0];

	rmsnorm(o, x, o->h, D, wvec(o, o->m->w.layer[l].vec[PCCX_GEMMA_LV_ATTN_NORM]));
	emit(o, o->h, 1, D, "L%u.attn.norm", l);
	attention(o, l);
	layer_norm(o, l, PCCX_NORM_POST_ATTN, PCCX_GEMMA_LV_POST_ATTN_NORM, o->o, o->al);
	for (i = 0; i < D; i++)
		o->al[i] += x[i];
	emit(o, o->al, 1, D, "L%u.attn.resid", l);

	layer_norm(o, l, PCCX_NORM_PRE_FFN, PCCX_GEMMA_LV_FFN_NORM, o->al, o->t);
	emit(o, o->t, 1, D, "L%u.ffn.norm", l);
	ffn(o, l);
	if (ly->n_experts)
		moe(o, l);
	layer_norm(o, l, PCCX_NORM_POST_FFN, PCCX_GEMMA_LV_POST_FFN_NORM, o->f, o->f);
	for (i = 0; i < D; i++)
		x[i] = o->al[i] + o->f[i];
	emit(o, x, 1, D, "L%u.ffn.out", l);
	if (ly->ple)
		ple_mix(o, l, x);
	if (ly->out_scale) {
		double s = wvec(o, o->m->w.layer[l].vec[PCCX_GEMMA_LV_OUT_SCALE])[0];

		for (i = 0; i < D; i++)
			x[i] *= s;
		emit(o, x, 1, D, "L%u.out", l);
	}
}

/*
 * x rounded to BF16 (8 significant bits, to nearest even): what a value cast to a BF16 tensor
 * holds.
 */
static double round_bf16(double x)
{
	int e;
	double m = frexp(x, &e);

	return ldexp(nearbyint(ldexp(m, 8)), e - 8);
}

/* S0: e = E[tok] * sqrt(D); sqrt(D) rounded to BF16 where the family's checkpoints do it. */
static void embed(struct pccx_oracle *o, uint32_t token)
{
	uint32_t D = o->c->d_model, i;
	double scale = sqrt((double)D);

	if (pccx__family(o->c->family)->embed_scale_bf16)
		scale = round_bf16(scale);
	pccx__gemma_row_f32(o->m, o->m->w.embed, token, o->row);
	for (i = 0; i < D; i++)
		o->e[i] = o->row[i] * scale;
	emit(o, o->e, 1, D, "embed");
}

/*
 * S1, the per-layer inputs u of Gemma 3n and 4 from e and the token:
 *   u = (RMSNorm_{g_pl}(W_plmp e / sqrt D) per slice + E_pl[tok'] * sqrt P) / sqrt 2,
 * tok' = tok, or 0 past the PLE table (Gemma 3n). sqrt P is rounded to BF16 where the
 * family's embedding scales are (Gemma 4: Gemma4TextScaledWordEmbedding casts its scale to
 * the table's dtype); 1/sqrt D and 1/sqrt 2 are plain floats in Hugging Face's code.
 */
static void inputs_ple(struct pccx_oracle *o, uint32_t token)
{
	const struct pccx_gemma_config *c = o->c;
	const struct pccx_gemma_weights *w = &o->m->w;
	uint32_t D = c->d_model, P = c->d_ple, LP = c->n_layers * P, l, i;
	double scale = sqrt((double)P);

	if (pccx__family(c->family)->embed_scale_bf16)
		scale = round_bf16(scale);
	pccx__gemma_row_f32(o->m, w->ple_table, token < c->ple_vocab ? token : 0, o->row);
	for (i = 0; i < LP; i++)
		o->tmp2[i] = o->row[i] * scale;
	for (l = 0; l < c->n_layers; l++)
		emit(o, o->tmp2 + l * P, 1, P, "L%u.ple.inputs", l);
	matvec(o, w->ple_model_proj, o->e, o->u);
	for (i = 0; i < LP; i++)
		o->u[i] /= sqrt((double)D);
	wvec(o, w->ple_proj_norm);
	for (l = 0; l < c->n_layers; l++)
		rmsnorm(o, o->u + l * P, o->u + l * P, P, o->w);
	for (l = 0; l < c->n_layers; l++)
		emit(o, o->u + l * P, 1, P, "L%u.ple.proj", l);
	for (i = 0; i < LP; i++)
		o->u[i] = (o->u[i] + o->tmp2[i]) / sqrt(2.0);
	for (l = 0; l < c->n_layers; l++)
		emit(o, o->u + l * P, 1, P, "L%u.ple.u", l);
}

/* Gemma 3n's S2: the AltUp streams o->xs, x_0 = e, x_k = W_ap[k] e matched to rms(e). */
static void inputs_altup(struct pccx_oracle *o)
{
	uint32_t D = o->c->d_model, k;
	double target;

	memcpy(o->xs[0], o->e, sizeof(double) * D);
	target = rms(o->e, D);
	for (k = 1; k < NS; k++) {
		matvec(o, o->m->w.altup_proj[k - 1], o->e, o->xs[k]);
		match_magnitude(o->xs[k], D, target);
	}
	emit(o, o->xs_all, NS, D, "altup.streams");
}

/* Gemma 3n's S4 head: h = mean(x0, match(W_au[k] x_k)) into o->h. */
static void unembed_altup(struct pccx_oracle *o)
{
	uint32_t D = o->c->d_model, k, i;
	double target = rms(o->xs[0], D);

	memcpy(o->h, o->xs[0], sizeof(double) * D);
	for (k = 1; k < NS; k++) {
		matvec(o, o->m->w.altup_unembd[k - 1], o->xs[k], o->tmp);
		match_magnitude(o->tmp, D, target);
		for (i = 0; i < D; i++)
			o->h[i] += o->tmp[i];
	}
	for (i = 0; i < D; i++)
		o->h[i] /= NS;
}

/* S4: h = RMSNorm_final(o->h); logits = E h (tied LM head), soft-capped when the model is. */
static void output(struct pccx_oracle *o, double *logits)
{
	const struct pccx_gemma_config *c = o->c;
	uint32_t D = c->d_model, i;

	rmsnorm(o, o->h, o->h, D, wvec(o, o->m->w.final_norm));
	emit(o, o->h, 1, D, "final.hidden");
	matvec(o, o->m->w.embed, o->h, o->logits);
	for (i = 0; i < c->vocab && c->softcap > 0.0f; i++)
		o->logits[i] = c->softcap * tanh(o->logits[i] / c->softcap);
	emit(o, o->logits, 1, c->vocab, "final.logits");
	memcpy(logits, o->logits, sizeof(double) * c->vocab);
}

int pccx__oracle_step(struct pccx_oracle *o, uint32_t token, double *logits, pccx_diag *d)
{
	const struct pccx_gemma_config *c = o->c;
	const struct pccx_family_desc *fam = pccx__family(c->family);
	bool altup = fam->altup;
	uint32_t l;

	if (token >= c->vocab)
		return pccx__fail(d, PCCX_ERR_RANGE, "oracle: token %u outside the vocabulary",
				  token);
	if (o->pos >= c->max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE, "oracle: context full (%u)", c->max_ctx);
	o->rc = 0;

	embed(o, token);
	if (pccx__gemma_config_ple(o->c))
		inputs_ple(o, token);
	if (altup)
		inputs_altup(o);
	else
		memcpy(o->xs[0], o->e, sizeof(double) * c->d_model);
	for (l = 0; l < c->n_layers && !o->rc; l++) {
		if (altup)
			layer_altup(o, l);
		else
			layer_plain(o, l);
	}
	if (logits && !o->rc) {
		if (altup)
			unembed_altup(o);
		else
			memcpy(o->h, o->xs[0], sizeof(double) * c->d_model);
		output(o, logits);
	}
	if (o->rc)
		return pccx__fail(d, o->rc, "oracle: step at position %u stopped (%s)", o->pos,
				  pccx_strerror(o->rc));
	o->pos++;
	return PCCX_OK;
}

void pccx__oracle_on_stage(struct pccx_oracle *o, pccx_oracle_stage_fn fn, void *user)
{
	o->on_stage = fn;
	o->user = user;
}

static double *dalloc(size_t n, int *fail)
{
	double *p = calloc(n ? n : 1, sizeof(double));

	if (!p)
		*fail = 1;
	return p;
}

int pccx__oracle_create(struct pccx_oracle **out, const struct pccx_gemma_model *m,
			unsigned n_threads, pccx_diag *d)
{
	const struct pccx_gemma_config *c = &m->cfg;
	uint32_t D = c->d_model, LP = c->n_layers * c->d_ple, l, k, maxc;
	uint32_t hd = 0, F = 0, qmax = 0, kvmax = 0, E = 0;	/* the largest of any layer */
	struct pccx_oracle *o;
	int fail = 0, rc;

	*out = NULL;
	for (l = 0; l < c->n_layers; l++) {
		const struct pccx_layer_desc *ly = &m->layers[l];

		qmax = ly->q_dim > qmax ? ly->q_dim : qmax;
		kvmax = ly->kv_dim > kvmax ? ly->kv_dim : kvmax;
		hd = ly->head_dim > hd ? ly->head_dim : hd;
		F = ly->d_ffn > F ? ly->d_ffn : F;
		F = ly->d_expert > F ? ly->d_expert : F;
		E = ly->n_experts > E ? ly->n_experts : E;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return pccx__fail(d, PCCX_ERR_NOMEM, "oracle: out of memory");
	o->m = m;
	o->c = c;
	maxc = D > LP ? D : LP;
	maxc = maxc > F ? maxc : F;
	maxc = maxc > qmax ? maxc : qmax;
	maxc = maxc > E ? maxc : E;
	o->maxc = maxc;
	rc = pccx__pool_create(&o->pool, n_threads ? n_threads : pccx__pool_ncpu(), d);
	if (rc) {
		free(o);
		return rc;
	}
	o->rows = malloc(sizeof(float) * maxc * pccx__pool_threads(o->pool));
	o->row = o->rows;
	o->deq = calloc(m->n_t, sizeof(*o->deq));
	o->deq_left = DEQ_CACHE_BYTES;
	if (!o->rows || !o->deq)
		fail = 1;
	for (l = 0; l < c->n_layers; l++) {
		if (!m->layers[l].kv_write)
			continue;
		o->kc[l] = dalloc((size_t)c->max_ctx * m->layers[l].kv_dim, &fail);
		o->vc[l] = dalloc((size_t)c->max_ctx * m->layers[l].kv_dim, &fail);
	}
	o->xs_all = dalloc((size_t)NS * D, &fail);
	o->pred_all = dalloc((size_t)NS * D, &fail);
	for (k = 0; k < NS && !fail; k++) {
		o->xs[k] = o->xs_all + k * D;
		o->pred[k] = o->pred_all + k * D;
	}
	o->e = dalloc(D, &fail);
	o->u = dalloc(LP, &fail);
	o->h = dalloc(D, &fail);
	o->lr = dalloc(D, &fail);
	o->o = dalloc(D, &fail);
	o->al = dalloc(D, &fail);
	o->t = dalloc(D, &fail);
	o->f = dalloc(D, &fail);
	o->tmp = dalloc(D, &fail);
	o->tmp2 = dalloc(maxc, &fail);
	o->lrank = dalloc(c->laurel_rank, &fail);
	o->q = dalloc(qmax, &fail);
	o->ctx = dalloc(qmax, &fail);
	o->k = dalloc(kvmax, &fail);
	o->v = dalloc(kvmax, &fail);
	o->scores = dalloc(c->max_ctx, &fail);
	o->gate = dalloc(F, &fail);
	o->up = dalloc(F, &fail);
	o->t2 = dalloc(D, &fail);
	o->acc = dalloc(D, &fail);
	o->y = dalloc(D, &fail);
	o->rlog = dalloc(E, &fail);
	o->probs = dalloc(E, &fail);
	o->pleg = dalloc(c->d_ple, &fail);
	o->w = dalloc(MAX(MAX(D, hd), MAX(c->d_ple, E)), &fail);
	o->logits = dalloc(c->vocab, &fail);
	if (fail) {
		pccx__oracle_free(o);
		return pccx__fail(d, PCCX_ERR_NOMEM, "oracle: out of memory");
	}
	*out = o;
	return PCCX_OK;
}

void pccx__oracle_free(struct pccx_oracle *o)
{
	uint32_t l;

	if (!o)
		return;
	for (l = 0; o->deq && l < o->m->n_t; l++)
		free(o->deq[l]);
	free(o->deq);
	for (l = 0; l < PCCX_GEMMA_MAX_LAYERS; l++) {
		free(o->kc[l]);
		free(o->vc[l]);
	}
	free(o->xs_all);
	free(o->pred_all);
	free(o->rows);
	pccx__pool_destroy(o->pool);
	free(o->e);
	free(o->u);
	free(o->h);
	free(o->lr);
	free(o->o);
	free(o->al);
	free(o->t);
	free(o->f);
	free(o->tmp);
	free(o->tmp2);
	free(o->lrank);
	free(o->q);
	free(o->ctx);
	free(o->k);
	free(o->v);
	free(o->scores);
	free(o->gate);
	free(o->up);
	free(o->t2);
	free(o->acc);
	free(o->y);
	free(o->rlog);
	free(o->probs);
	free(o->pleg);
	free(o->w);
	free(o->logits);
	free(o);
}
