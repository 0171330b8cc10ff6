/* SPDX-License-Identifier: MIT */
/*
 * The Gemma generations the stack runs, and what is true of every model of one generation
 * (docs/reference.md, "Families"). A configuration names its family; the per-layer table
 * (layers.h), the weight layout, the graph and the oracle read the family's facts from here,
 * never from its name.
 *
 *                Gemma 1        Gemma 2           Gemma 3           Gemma 3n           Gemma 4
 *   norms        in, pre-FFN    + post-attn,      + q/k norm        + v norm (unweighted),  as 3n,
 *                               post-FFN                            router, LAuReL, PLE     PLE
 *   residual     x + f(x)       x + post(f(x))    x + post(f(x))    AltUp, LAuReL, PLE      x + post,
 *                                                                                           + PLE, x s
 *   attention    global         local/global 1:1  local/global 5:1  4:1, KV sharing     5:1 or 4:1,
 *                                                                                       KV sharing,
 *                                                                                       own global
 *                                                                                       heads, k = v
 *   q scale      hd^-1/2        qpas^-1/2         qpas^-1/2         1 (q/k norms)       1
 *   score cap    -              50                -                 -                   -
 *   final cap    -              30                -                 30                  30
 *   embed scale  bf16(sqrt D)   bf16(sqrt D)      bf16(sqrt D)      sqrt D in FP32      bf16(sqrt D)
 */
#ifndef PCCX_FAMILY_H
#define PCCX_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

enum pccx_family {
	PCCX_FAMILY_GEMMA3N,	/* the NPU's design target; the zero value */
	PCCX_FAMILY_GEMMA,	/* Gemma 1 */
	PCCX_FAMILY_GEMMA2,
	PCCX_FAMILY_GEMMA3,
	PCCX_FAMILY_GEMMA4,
	PCCX_FAMILIES
};

struct pccx_family_desc {
	const char *arch;	/* the GGUF general.architecture: "gemma3n", "gemma", ... */
	const char *title;	/* "Gemma 3n", "Gemma 1", ... for messages */
	/*
	 * Gemma 3n's residual structure: four AltUp streams, LAuReL beside the attention, the
	 * per-layer embeddings (PLE) mixed into streams 1..3, KV sharing, sparse FFN layers.
	 * Without it a layer is x + f(x) on one residual stream.
	 */
	bool altup;
	uint32_t norms;		/* PCCX_NORM_* (layers.h) every layer of the family applies */
	/*
	 * Hugging Face's RMSNorm of the family scales by (1 + w). The device (and llama.cpp's
	 * GGUF) holds the effective multiplier, so loaders of Hugging Face files add the 1.
	 */
	bool norm_plus_one;
	/* The embedding is scaled by sqrt(D) rounded to BF16, as Hugging Face does with the
	 * BF16 checkpoints (the scale is cast to the weights' dtype); else sqrt(D) in FP32. */
	bool embed_scale_bf16;
	/*
	 * Per-layer embeddings: a table row per token and a projection of the embedding give
	 * every layer an input of d_ple (Gemma 3n mixes it into AltUp streams 1..3, Gemma 4
	 * adds a gated projection of it to the layer's output).
	 */
	bool ple;
	/* Every layer's output is multiplied by a learned scalar (Gemma 4's layer_scalar). */
	bool layer_scale;
	/* The last n_kv_shared layers may read earlier layers' KV caches (KV donors). */
	bool kv_sharing;
	/* KV-sharing layers still carry k/v projections and a k norm (Gemma 3n's files). */
	bool shared_kv_weights;
};

/* The facts of family f (f < PCCX_FAMILIES). */
const struct pccx_family_desc *pccx__family(enum pccx_family f);

/* The family whose GGUF architecture is `arch`; PCCX_FAMILIES if none. */
enum pccx_family pccx__family_from_arch(const char *arch);

#endif /* PCCX_FAMILY_H */
