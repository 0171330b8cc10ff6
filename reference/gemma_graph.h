/* SPDX-License-Identifier: MIT */
/*
 * The Gemma decode step (every family) as a program of NPU ops (npu_ops.h), and everything it needs
 * decided up front: the L2 plan (where every activation lives), the layout of the host
 * buffers (per-step inputs, KV cache, logits) and the per-step inputs the host computes.
 *
 * docs/reference.md lists the op sequence of every stage and the plan.
 */
#ifndef PCCX_GEMMA_GRAPH_H
#define PCCX_GEMMA_GRAPH_H

#include "gemma_model.h"
#include "npu_ops.h"

/* FP32 constants the host writes into slot 0 of one word each (PCCX_NPU_BUF_IN). */
enum pccx_gemma_const {
	PCCX_GEMMA_C_EPS,		/* rms_norm_eps */
	PCCX_GEMMA_C_INV_D,	/* 1/D: AltUp router input scale */
	PCCX_GEMMA_C_INV_SQRT_D,	/* D^-1/2: PLE model projection scale */
	PCCX_GEMMA_C_INV_SQRT2,	/* 2^-1/2: LAuReL and PLE combination */
	PCCX_GEMMA_C_MAG_EPS,	/* 1e-5: floor of the AltUp magnitude mean square */
	PCCX_GEMMA_C_QUARTER,	/* 1/4: mean of the four streams */
	PCCX_GEMMA_C_SPARSE_Z,	/* Gaussian top-k multiplier */
	PCCX_GEMMA_C_NEG_ONE,	/* -1: the AltUp innovation out - pred0 */
	PCCX_GEMMA_C_SOFTCAP,	/* final logit soft-cap */
	PCCX_GEMMA_C_Q_SCALE,	/* q scale: query_pre_attn_scalar^-1/2 */
	PCCX_GEMMA_C_ATTN_SOFTCAP,	/* attention-score soft-cap */
	PCCX_GEMMA_C_SPARSE_F,	/* d_ffn of the sparse layers: the Gaussian top-k's mean divisor */
	PCCX_GEMMA_NCONST
};

/*
 * The smallest shapes the two decode-step splits are used for (plan.q_pieces, plan.racc):
 * each extra GEMV pays its pre phase and start, which only a long enough chain behind it
 * repays. Measured: E2B, E4B and Gemma 4 E2B / E4B (W_q of 2,048 rows; d_ffn 8,192 and
 * 16,384) gain; the tiny test shapes (W_q of 128-512 rows, d_ffn 512) lose 2-4 %.
 */
#define PCCX_GEMMA_Q_PIECES_MIN_ROWS 2048u
#define PCCX_GEMMA_RACC_MIN_FFN 8192u

/* Scalar scratch words (FP32 results kept in slot 0). */
enum pccx_gemma_scal {
	PCCX_GEMMA_S_DUMP,	/* results nobody reads again */
	PCCX_GEMMA_S_MEAN,	/* Gaussian top-k mean */
	PCCX_GEMMA_S_TMAG,	/* AltUp target magnitude rms(x0) */
	PCCX_GEMMA_S_CUTOFF,	/* Gaussian top-k cutoff, for a chunk's later W_up pieces */
	PCCX_GEMMA_NSCAL
};

/* Regions a plan has at most (gemma_graph.c checks). */
#define PCCX_GEMMA_PLAN_REGIONS 64u

/*
 * Every L2 address of the step (words). Shapes (rows, cols) in elements; a row of cols
 * elements takes ceil(cols/4) words. Nothing persists in L2 between steps: every step loads
 * its inputs and the weights' vectors again, so a step is a self-contained job.
 */
struct pccx_gemma_plan {
	/* image of PCCX_NPU_BUF_IN, loaded by the step's first op */
	uint32_t in;		/* (in_words) start of the image */
	uint32_t in_words;
	uint32_t consts;	/* (NCONST) one FP32 constant per word */
	uint32_t ones;		/* (4) FP32 1.0: the +1 of the AltUp correction coefficients */
	/* RoPE per attention kind (enum pccx_attn_kind), head_dim of that kind */
	uint32_t rope_cos[PCCX_ATTN_KINDS];	/* (head_dim) cos(pos * inv_freq_(i mod hd/2)) */
	uint32_t rope_sin[PCCX_ATTN_KINDS];	/* (head_dim) -sin in the first half, +sin after */
	uint32_t embed;		/* (D) embedding row * sqrt(D) */
	uint32_t embed_mm;	/* (D) the embedding a matmul reads: embed, or in a prompt
				 * chunk's plan a copy in a region of its own (one row wide:
				 * the PLE and AltUp projections run as GEMMs) */
	uint32_t ple_in;	/* (n_layers, d_ple) PLE row * sqrt(d_ple); with ple_slices
				 * (d_ple) after the image, the row's slice of the layer being
				 * run, which the layer loads from BUF_IN at ple_in_word */
	uint32_t ple_in_word;	/* the PLE row's first 16-byte word in BUF_IN */
	uint32_t moe_w;		/* (n_experts_used) routing weights the host writes mid-step */
	/* the RoPE tables repeated for every query head of the kind (filled by copies: once a
	 * step, or with rope_per_use before each RoPE) */
	uint32_t rep_cos[PCCX_ATTN_KINDS];	/* (n_heads, head_dim) */
	uint32_t rep_sin[PCCX_ATTN_KINDS];	/* (n_heads, head_dim) */
	/* weight vectors */
	uint32_t gvec;		/* per_layer_proj_norm, output_norm (the global vector block) */
	uint32_t lvec;		/* even layers' vector block (the largest of any layer) */
	uint32_t lvec_odd;	/* odd layers' (models of one layer: lvec): a prompt chunk's
				 * tokens share both, and token 0 loads layer l+1's while a later
				 * token still reads layer l's (gemma_chunk.h) */
	/* activations */
	uint32_t xs[2];		/* (4, D) stream sets: layer l reads [l%2], writes [(l+1)%2] */
	uint32_t u;		/* (n_layers, d_ple) per-layer inputs u_l; with ple_slices (d_ple),
				 * the slice of the layer being run */
	uint32_t h;		/* (D) normalised attention input */
	uint32_t lr;		/* (D) LAuReL output */
	uint32_t rm;		/* (4) router modalities */
	uint32_t coefs;		/* (16) prediction coefficients */
	uint32_t corr;		/* (4) correction coefficients + 1 */
	uint32_t scal;		/* (NSCAL) scalar scratch words */
	/* the layer working set, from lrank to pleg (the logits reuse it) */
	uint32_t lrank;		/* (laurel_rank) */
	/* attention and FFN regions hold the largest shape of any attention kind or layer */
	uint32_t q;		/* (n_heads, head_dim) */
	uint32_t k;		/* (n_kv_heads, head_dim) */
	uint32_t v;		/* (n_kv_heads, head_dim) */
	/* q, k, v and the context of each attention kind: the one region of the largest shape
	 * in a decode step; in a prompt chunk's plan each kind's own shape (kinds of one shape
	 * share), so that every projection's rows are one region wide and run as a GEMM */
	uint32_t q_of[PCCX_ATTN_KINDS], k_of[PCCX_ATTN_KINDS], v_of[PCCX_ATTN_KINDS];
	uint32_t ctx_of[PCCX_ATTN_KINDS];
	uint32_t swap;		/* (n_heads, head_dim) rotate-half scratch */
	uint32_t scores;	/* (n_heads/n_kv_heads, max_keys) scores, then probabilities */
	uint32_t ctx;		/* (n_heads, head_dim) attention context */
	uint32_t o;		/* (D) */
	uint32_t al;		/* (D) (a + attn + laurel) / sqrt 2 */
	uint32_t t;		/* (D) FFN input */
	uint32_t gate;		/* (d_ffn) */
	uint32_t up;		/* (d_ffn) */
	uint32_t f;		/* (D) FFN output, then the layer output */
	uint32_t innov;		/* (D) out - pred0 */
	uint32_t tmp;		/* (D) */
	uint32_t hsum;		/* (D) */
	uint32_t pleg;		/* (d_ple) */
	uint32_t rlog;		/* (n_experts) router logits */
	uint32_t t2;		/* (D) the experts' input */
	uint32_t acc;		/* (D) the experts' weighted sum */
	uint32_t logits;	/* (vocab) after the last layer, over the layer working set */
	uint32_t words;		/* L2 words used */
	/*
	 * The regions of L2 the step uses, in address order: the BUF_IN image as one, then each
	 * buffer after it that has words (the logits, which reuse the layer working set, are not
	 * one). Every L2 range an op of a step without logits names lies inside one region; a
	 * prompt in chunks (gemma_chunk.h) gives every token of the chunk its own copy of each it
	 * cannot share, regions whose values never meet sharing one place.
	 */
	uint32_t n_regions;
	uint32_t region[PCCX_GEMMA_PLAN_REGIONS];	/* first word */
	uint32_t region_words[PCCX_GEMMA_PLAN_REGIONS];
	/* bit i: region i holds only bytes of the model's weights, the same for every position
	 * (the global and layer vector blocks) */
	uint64_t region_same;
	uint32_t up_pieces;	/* GEMVs W_up is issued in: 4 in a decode step, 8 in a chunk */
	/*
	 * In a layer that writes no KV, W_q's last heads are GEMVs of their own, each piece's
	 * norm and RoPE behind the next piece. Set by plan_build for a decode step whose
	 * KV-free layers' W_q has PCCX_GEMMA_Q_PIECES_MIN_ROWS rows or more (a chunk's GEMMs need
	 * whole rows, and its tokens' SFU work runs between two GEMMs anyway).
	 */
	bool q_pieces;
	/*
	 * W_up's pieces go to two piece-wide buffers in turn, up and up2, each multiplied into
	 * gate behind the next piece, instead of to their places in one d_ffn-wide up: a prompt
	 * chunk's plan (pccx__gemma_plan_build_chunk), whose every token needs its own copy.
	 */
	bool up_ring;
	uint32_t up2;		/* (d_ffn / up_pieces) the second piece buffer (up_ring) */
	/* a chunk's plan, layers of a narrower FFN than the widest (Gemma 4 E2B's single-wide
	 * ones): their activation and W_up piece buffers, one row of their width each, so that
	 * their W_gate, W_up and W_down run as GEMMs (ffn_narrow 0: none) */
	uint32_t ffn_narrow;	/* the d_ffn these are for */
	uint32_t gate_n, up_n, up2_n;
	/*
	 * The device executes GEMV rowmask (FEATURES.ROWMASK): in sparse layers W_up is issued
	 * after the activation as rowmask GEMVs and reads only the rows it keeps. Off after
	 * pccx__gemma_plan_build; the caller sets it (both sessions of a verified run alike).
	 */
	bool rowmask;
	/*
	 * The device executes GEMV on q4c weights (FEATURES.COLSKIP): in sparse layers W_down is
	 * issued on the layer's q4c copy (gemma_model.h: down_q4c) and reads only the columns of
	 * the hidden units that are not 0. Off after plan_build; the caller sets it.
	 */
	bool colskip;
	/*
	 * RMSNorm's scale and weight as one CVO smul (the device reports FEATURES.SMUL; off
	 * after plan_build, the session sets it): the bits of SCALE then MUL in one pass.
	 */
	bool smul;
	/*
	 * Sum from S (FEATURES.RACC; off after plan_build, the session sets it when the device
	 * reports the bit and the sparse layers' d_ffn is PCCX_GEMMA_RACC_MIN_FFN or more): a
	 * sparse layer's W_gate is issued in pieces and the Gaussian top-k's sum taken piece by
	 * piece behind them, the bits of one SUM, so that only the last piece's sum follows the
	 * last weight. Never in a chunk's plan.
	 */
	bool racc;
	/*
	 * Each layer makes its own slice of the per-layer inputs (u_l = W_plmp rows of layer l,
	 * its norm, + its PLE row, / sqrt 2) instead of the step making all of them at its start:
	 * the slice's GEMV streams while the SFU works through the chain before the layer's W_gate,
	 * when the ports would wait, and u holds one slice instead of n_layers (fewer L2 words per
	 * prompt token in a chunk). Set by plan_build for the families with per-layer inputs
	 * unless a layer has experts (a MoE job spills the whole of u at its router); part of the
	 * layout, so never changed after plan_build.
	 */
	bool ple_slices;
	/*
	 * The RoPE tables are repeated per head right before each RoPE instead of once at the
	 * start of the step: in a prompt chunk (gemma_chunk.c) they are then written and read in
	 * the same segment, so one copy serves every token. Set by pccx__gemma_plan_build_chunk,
	 * off in the decode plan.
	 */
	bool rope_per_use;
	uint32_t max_keys;	/* the most KV rows of an attention kind: max(window, max_ctx) */
	/* host buffers */
	uint64_t in_bytes;
	uint64_t kv_bytes;
	uint64_t out_bytes;	/* vocab FP32 logits, padded to 16 bytes, then the MoE area */
	/*
	 * Mixture of experts (docs/reference.md): at each such layer the step's job ends with
	 * the router logits and the live activations stored in BUF_OUT after the logits; the
	 * host chooses the experts, writes their weights at moe_w in BUF_IN, and the next job
	 * loads everything back.
	 */
	uint64_t out_rlog;	/* byte offsets in BUF_OUT: router logits (n_experts) */
	uint64_t out_spill_al;	/* (D) the attention residual */
	uint64_t out_spill_f;	/* (D) the dense FFN's normalised output */
	uint64_t out_spill_u;	/* (n_layers * d_ple) the per-layer inputs, when the model has them */
	uint64_t kv_off[PCCX_GEMMA_MAX_LAYERS];	/* KV-writing layer: K heads 0..n, V heads 0..n */
};

/* Lay out L2 and the host buffers for a model; PCCX_ERR_RANGE if L2 is too small. */
PCCX_MUST_CHECK int pccx__gemma_plan_build(const struct pccx_gemma_model *m,
					     struct pccx_gemma_plan *p, pccx_diag *d);
/* The layout of a prompt chunk's steps (gemma_chunk.h): the decode plan's host buffers, with
 * up_ring, up_pieces 8 and rope_per_use; PCCX_ERR_UNSUPPORTED for a model with experts. */
PCCX_MUST_CHECK int pccx__gemma_plan_build_chunk(const struct pccx_gemma_model *m,
					       struct pccx_gemma_plan *p, pccx_diag *d);
/* The same with the per-layer inputs made at the start of the step however the model is
 * (plan.ple_slices off, all of u in L2): the order the slices are compared with in tests. */
PCCX_MUST_CHECK int pccx__gemma_plan_build_ple_at_start(const struct pccx_gemma_model *m,
							  struct pccx_gemma_plan *p, pccx_diag *d);
/*
 * Drop what a program whose matmuls a GEMM shares among several tokens cannot use (a prompt
 * chunk, a batched prompt): the rowmask and q4c GEMVs (each token keeps its own hidden
 * units) and S carried from piece to piece (S does not live across a GEMM's segments). The
 * bits are those of the ops they replace.
 */
void pccx__gemma_plan_for_rows(struct pccx_gemma_plan *p);
/*
 * The v002 extensions a decode step's plan uses, from the device's FEATURES
 * (isa/pccx_regs.h): smul; rowmask and colskip unless no_sparse (the dense figures); racc
 * where the model's sparse layers are PCCX_GEMMA_RACC_MIN_FFN wide or more. A verified run
 * gives its reference session's plan the same.
 */
void pccx__gemma_plan_use_features(struct pccx_gemma_plan *p, const struct pccx_gemma_model *m,
				   uint64_t features, bool no_sparse);


/*
 * Write the per-step inputs of (token, pos) into `in` (p->in_bytes): constants, the RoPE
 * tables, the embedding row and the PLE row, computed on the host with isa/num (the formulas
 * are in docs/reference.md). PCCX_ERR_RANGE for a token outside the vocabulary.
 */
PCCX_MUST_CHECK int pccx__gemma_host_inputs(const struct pccx_gemma_model *m,
					      const struct pccx_gemma_plan *p, uint32_t token,
					      uint32_t pos, uint8_t *in, pccx_diag *d);

/*
 * The host memory bound as BUF_IN and BUF_OUT, which the step reads and writes between the
 * jobs of a mixture-of-experts step (the router logits, the routing weights).
 */
struct pccx_gemma_host {
	uint8_t *in;
	const uint8_t *out;
};

/*
 * Emit one decode step at position `pos` (inputs already in BUF_IN). with_logits == false
 * stops after the last layer (prefill of all but the last prompt token). Returns the first
 * non-zero status an op returned. pos must be < max_ctx.
 *
 * A step is one job (begin .. end), except in a model with experts, where it ends a job at
 * each such layer and begins the next once the host has chosen the experts (hb). Without hb
 * the step is a trace of every weight it may read: one job, every expert of every layer.
 */
PCCX_MUST_CHECK int pccx__gemma_step(const struct pccx_gemma_model *m,
				       const struct pccx_gemma_plan *p,
				       const struct pccx_npu_ops *ops, void *ctx, uint32_t pos,
				       bool with_logits, const struct pccx_gemma_host *hb);

/*
 * Gemma 4's router on the host (FP32, isa/num): softmax of the n logits, the k largest
 * probabilities (ties to the lower index), renormalised to sum 1 and multiplied by the
 * expert's scale. idx[] ascending; w[j] is expert idx[j]'s weight.
 */
void pccx__gemma_route(const float *logits, const float *expert_scale, uint32_t n, uint32_t k,
		       uint32_t *idx, float *w);

/* Keys a layer attends to at pos: min(pos+1, window), pos+1 without a window (global). */
uint32_t pccx__gemma_n_keys(const struct pccx_layer_desc *layer, uint32_t pos);

/*
 * The KV block of (KV-writing layer, kv head, v = 0 for K / 1 for V): its byte offset in the
 * KV buffer (returned) and its size (*bytes, may be NULL), kv_rows rows of the head. Every
 * read and write of a step stays inside one block.
 */
uint64_t pccx__gemma_kv_block(const struct pccx_gemma_model *m,
				const struct pccx_gemma_plan *p, uint32_t layer, uint32_t head,
				unsigned v, uint64_t *bytes);

#endif /* PCCX_GEMMA_GRAPH_H */
