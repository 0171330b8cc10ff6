/* SPDX-License-Identifier: MIT */
/*
 * Hugging Face config.json of every family (docs/model-files.md §5): model_type selects the
 * family ("gemma", "gemma2", "gemma3_text", "gemma3" with its text_config, "gemma4_text",
 * "gemma4" with its text_config; "gemma3n" or none: Gemma 3n as pccx_hf_config_read has always
 * read it). The fields Gemma 3n does not have
 * beside pccx_hf_config's come back here.
 */
#ifndef PCCX_HF_CONFIG_H
#define PCCX_HF_CONFIG_H

#include "family.h"
#include "pccx/modelfile.h"

struct pccx_hf_family {
	enum pccx_family family;
	/*
	 * model_type "gemma3" or "gemma4" with a vision_config (or Gemma 4's audio_config): the
	 * text model of a multimodal checkpoint
	 */
	bool vision;
	double query_pre_attn_scalar;	/* Gemma 1: head_dim (its q scale); 0 for Gemma 3n */
	double attn_logit_softcapping;	/* 0: none */
	double rope_factor;		/* linear RoPE scaling of the global layers; 0: none */
	uint32_t max_position_embeddings;
	/* layer_types or sliding_window_pattern was given (else the family's default pattern) */
	bool pattern_given;
	/* Gemma 4: the global layers' head size and KV heads (0: as the sliding ones), their
	 * proportional RoPE's partial_rotary_factor (1: all), attention_k_eq_v,
	 * use_double_wide_mlp */
	uint32_t head_dim_global;
	uint32_t n_kv_heads_global;
	double rope_partial_global;
	bool k_eq_v;
	bool double_wide_mlp;
	/* Gemma 4 with enable_moe_block: num_experts, top_k_experts, moe_intermediate_size (0:
	 * dense) */
	uint32_t n_experts;
	uint32_t n_experts_used;
	uint32_t d_expert;
};

/*
 * Read config.json as pccx_hf_config_read does, for every family; x receives the family and
 * its fields. Fields Gemma 3n alone has (PLE, AltUp, LAuReL, KV sharing, sparsity) are 0 for
 * the others. Refusals name the key and the value (an unknown model_type, a missing key, a
 * hidden_activation other than gelu_pytorch_tanh / gelu, RoPE scaling other than linear, a
 * layer pattern the family cannot express).
 */
PCCX_MUST_CHECK int pccx__hf_config_read(const char *path, pccx_hf_config *cfg,
					 struct pccx_hf_family *x, pccx_diag *d);
PCCX_MUST_CHECK int pccx__hf_config_parse(const void *json, size_t len, const char *name,
					  pccx_hf_config *cfg, struct pccx_hf_family *x,
					  pccx_diag *d);

#endif /* PCCX_HF_CONFIG_H */
