/* SPDX-License-Identifier: MIT */
/*
 * Gemma weights in device layout (every family): one byte buffer (the host buffer the weight streams and
 * weight MEMCPYs read) holding every tensor as the NPU consumes it.
 *
 *   Q4 matrix (rows, cols): one record per row of pccx__wstream_row_bytes() bytes:
 *     ceil(cols/32/8) beats of FP16 block scales (8 per 16-byte beat, little-endian,
 *     zero-padded), then cols/32 beats of 32 INT4 nibbles (element 2j = low nibble of byte j).
 *   F32 matrix (rows, cols): rows of cols FP32, each padded to a multiple of 16 bytes.
 *   F32 vector (n): an F32 matrix of one row.
 *
 * Every tensor starts at a multiple of 64 bytes. Tensors only the host reads (the PLE
 * table) come last, after device_size. The F32 vectors of one layer (its norms,
 * correct_output_scale, q/k norms) are contiguous, each starting on a 16-byte word, so the
 * graph brings them into L2 with a single MEMCPY (the "layer vector block").
 *
 * Tensor names are llama.cpp's GGUF names (research note §1.6); the stacked AltUp
 * projections are split as altup_proj.{0,1,2}.weight / altup_unembd_proj.{0,1,2}.weight.
 */
#ifndef PCCX_GEMMA_MODEL_H
#define PCCX_GEMMA_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "gemma_config.h"
#include "layers.h"
#include "pccx_isa.h"

#define PCCX_GEMMA_NAME_MAX 48

/* How the synthesiser fills a tensor. */
enum pccx_gemma_init {
	PCCX_GEMMA_INIT_NORMAL,	/* N(0, std^2), then quantised (Q4) or kept (F32) */
	PCCX_GEMMA_INIT_NEAR,	/* centre * (1 + std * N(0, 1)): norm weights and scales */
};

struct pccx_gemma_tensor {
	char name[PCCX_GEMMA_NAME_MAX];
	uint32_t fmt;		/* PCCX_WFMT_Q4 or PCCX_WFMT_F32 */
	uint32_t rows, cols;	/* (out, in): y = W x has rows outputs */
	uint64_t offset;	/* bytes from the start of the weight buffer */
	uint64_t row_bytes;	/* stored bytes per row (multiple of 16) */
	enum pccx_gemma_init init;
	float std;
	float centre;		/* PCCX_GEMMA_INIT_NEAR */
};

/*
 * The per-layer F32 vectors, in their order inside the layer vector block. A layer without
 * one of the optional norms (pccx_layer_desc.norms) has no tensor for it (vec[k] == -1).
 */
enum pccx_gemma_lvec {
	PCCX_GEMMA_LV_ATTN_NORM,		/* (D) input_layernorm */
	PCCX_GEMMA_LV_POST_ATTN_NORM,	/* (D) post_attention_layernorm */
	PCCX_GEMMA_LV_FFN_NORM,		/* (D) pre_feedforward_layernorm */
	PCCX_GEMMA_LV_POST_FFN_NORM,	/* (D) post_feedforward_layernorm */
	PCCX_GEMMA_LV_LAUREL_NORM,	/* (D) laurel.post_laurel_norm */
	PCCX_GEMMA_LV_POST_PLE_NORM,	/* (D) post_per_layer_input_norm (3n and 4) */
	PCCX_GEMMA_LV_ROUTER_NORM,	/* (D) altup.router_norm */
	PCCX_GEMMA_LV_CORRECT_SCALE,	/* (D) altup.correct_output_scale */
	PCCX_GEMMA_LV_Q_NORM,		/* (head_dim) self_attn.q_norm */
	PCCX_GEMMA_LV_K_NORM,		/* (head_dim) self_attn.k_norm (3n: also in KV-reading layers) */
	PCCX_GEMMA_LV_OUT_SCALE,	/* (1) layer_scalar (Gemma 4) */
	/* Gemma 4's mixture of experts */
	PCCX_GEMMA_LV_POST_FFN_NORM_1,	/* (D) post_feedforward_layernorm_1 of the dense FFN */
	PCCX_GEMMA_LV_PRE_FFN_NORM_2,	/* (D) pre_feedforward_layernorm_2: the experts' input */
	PCCX_GEMMA_LV_POST_FFN_NORM_2,	/* (D) post_feedforward_layernorm_2 of their sum */
	PCCX_GEMMA_LV_ROUTER_SCALE,	/* (D) router.scale */
	PCCX_GEMMA_LV_EXPERT_SCALE,	/* (n_experts) router.per_expert_scale */
	PCCX_GEMMA_LV_COUNT
};

/*
 * Tensor ids (indices into model->t) of one decoder layer; -1 for the tensors a layer of its
 * family does not have (AltUp and LAuReL outside Gemma 3n, PLE outside 3n and 4, ...).
 */
struct pccx_gemma_layer_w {
	int32_t attn_q;		/* Q4 (q_dim, D) */
	int32_t attn_k;		/* Q4 (kv_dim, D); never read by layers that do not write KV
				 * (which have none outside Gemma 3n) */
	int32_t attn_v;		/* Q4 (kv_dim, D); the same, and none where v = k (k_eq_v) */
	int32_t attn_o;		/* Q4 (D, q_dim) */
	int32_t ffn_gate;	/* Q4 (d_ffn, D) */
	int32_t ffn_up;		/* Q4 (d_ffn, D) */
	int32_t ffn_down;	/* Q4 (D, d_ffn) */
	int32_t laurel_l;	/* Q4 (rank, D) */
	int32_t laurel_r;	/* Q4 (D, rank) */
	int32_t ple_gate;	/* Q4 (d_ple, D) per_layer_input_gate (3n and 4) */
	int32_t ple_proj;	/* Q4 (D, d_ple) per_layer_projection (3n and 4) */
	int32_t router;		/* F32 (4, D) altup.modality_router */
	int32_t pred_coef;	/* F32 (16, 4) altup.prediction_coefs */
	int32_t corr_coef;	/* F32 (4, 4) altup.correction_coefs */
	int32_t moe_router;	/* F32 (n_experts, D) router.proj (Gemma 4 MoE) */
	/* expert e's gate, up (d_expert, D) and down (D, d_expert), Q4: ids experts + 3e + 0..2 */
	int32_t experts;
	/*
	 * A sparse layer's W_down once more in q4c layout (docs/model-files.md): the column
	 * records a device with FEATURES.COLSKIP reads only for the hidden units that are not 0.
	 * down_q4c: its byte offset (0: the layer has none); down_q4c_ok: filled from ffn_down
	 * by pccx__gemma_model_q4c and every scale of ffn_down finite (what makes skipping exact).
	 */
	uint64_t down_q4c;
	bool down_q4c_ok;
	int32_t vec[PCCX_GEMMA_LV_COUNT];	/* F32 vectors, contiguous */
	uint64_t vec_offset;	/* byte offset of the layer vector block */
	uint64_t vec_bytes;	/* its size (multiple of 16) */
};

/* The model's tensor ids; -1 for AltUp's outside Gemma 3n, PLE's outside 3n and 4. */
struct pccx_gemma_weights {
	int32_t embed;			/* Q4 (vocab, D) token_embd; also the tied LM head */
	int32_t ple_table;		/* Q4 (ple_vocab, n_layers*d_ple) per_layer_token_embd */
	int32_t ple_model_proj;		/* Q4 (n_layers*d_ple, D) per_layer_model_proj */
	int32_t altup_proj[3];		/* Q4 (D, D) feed streams 1..3 from the embedding */
	int32_t altup_unembd[3];	/* Q4 (D, D) bring streams 1..3 back at the end */
	int32_t ple_proj_norm;		/* F32 (d_ple) shared by all layers' slices */
	int32_t final_norm;		/* F32 (D) output_norm */
	uint64_t gvec_offset;		/* the global vectors (PLE norm, output norm), contiguous */
	uint64_t gvec_bytes;
	struct pccx_gemma_layer_w layer[PCCX_GEMMA_MAX_LAYERS];
};

struct pccx_gemma_model {
	struct pccx_gemma_config cfg;
	/* the layers (layers.h), built from cfg once by pccx__gemma_model_create */
	struct pccx_layer_desc layers[PCCX_GEMMA_MAX_LAYERS];
	struct pccx_attn_desc attn[PCCX_ATTN_KINDS];
	struct pccx_gemma_tensor *t;	/* (n_t) tensor table */
	uint32_t n_t;
	struct pccx_gemma_weights w;
	uint8_t *data;			/* (size) the weight buffer, device layout */
	uint64_t size;
	/* bytes [0, device_size) hold what the device reads; after them, host-only tensors */
	uint64_t device_size;
	void *mapping;			/* mmap owned by the model, or NULL */
	uint64_t mapping_size;
};

/*
 * Check the config, build its layer table, lay the model out (tensor table, offsets, size)
 * and map an anonymous, zero-filled buffer for the data (pages are touched only when written).
 */
PCCX_MUST_CHECK int pccx__gemma_model_create(struct pccx_gemma_model **out,
					       const struct pccx_gemma_config *cfg, pccx_diag *d);
void pccx__gemma_model_free(struct pccx_gemma_model *m);


/*
 * Fill every tensor with seeded synthetic values whose statistics resemble a trained
 * model's (docs/reference.md "Synthetic weights"). The result depends only on (config,
 * seed): each row draws from its own generator, whatever n_threads is.
 */
PCCX_MUST_CHECK int pccx__gemma_synth(struct pccx_gemma_model *m, uint64_t seed,
					unsigned n_threads,
					pccx_diag *d);

/* Stored record of row r of tensor t. */
static inline const uint8_t *pccx_gemma_row(const struct pccx_gemma_model *m, int32_t t,
					      uint32_t r)
{
	return m->data + m->t[t].offset + (uint64_t)r * m->t[t].row_bytes;
}

/* Bytes of FP16 scales before the nibbles in a Q4 row record of `cols` elements. */
static inline uint64_t pccx_gemma_q4_scale_bytes(uint32_t cols)
{
	return (uint64_t)((cols / 32 + 7) / 8) * 16;
}

/* Scales (cols/32 FP16, little-endian) and nibbles (cols/2 bytes) of a Q4 row record. */
static inline const uint16_t *pccx_gemma_q4_scales(const uint8_t *rec)
{
	return (const uint16_t *)(const void *)rec;
}

static inline const uint8_t *pccx_gemma_q4_nibbles(const uint8_t *rec, uint32_t cols)
{
	return rec + pccx_gemma_q4_scale_bytes(cols);
}

/*
 * Fill the sparse layers' q4c copies of W_down from ffn_down (gemma_q4c.c). Every model
 * producer (the synthesiser, the GGUF and safetensors loaders) calls it once the weights are in
 * place; whoever changes ffn_down afterwards calls it again.
 */
void pccx__gemma_model_q4c(struct pccx_gemma_model *m);
/* The q4c image (docs/model-files.md) of an (n, k) Q4 matrix of row records at w. */
void pccx__q4c_pack(const uint8_t *w, uint32_t n, uint32_t k, uint8_t *dst);

/* Dequantise / copy row r of tensor t as FP32 (cols values): w = fp16(d) * q, or the FP32. */
void pccx__gemma_row_f32(const struct pccx_gemma_model *m, int32_t t, uint32_t r, float *out);

/* d_ffn of the model's first sparse layer (the Gaussian top-k's width), 0 without one. */
uint32_t pccx__gemma_sparse_ffn(const struct pccx_gemma_model *m);

/* Bytes the streamed tensors of one decode step read (for the benchmark's bandwidth line). */
uint64_t pccx__gemma_streamed_bytes(const struct pccx_gemma_model *m);

#endif /* PCCX_GEMMA_MODEL_H */
