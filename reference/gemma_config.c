// SPDX-License-Identifier: MIT
/* Gemma configurations of every family (docs/reference.md, "Configurations"). */
#include <string.h>

#include "diag.h"
#include "gemma_config.h"
#include "layers.h"

/* float32 Normal.icdf(0.95) as Hugging Face evaluates it (2 ulp below the rounded value). */
#define SPARSE_Z 1.6448533535f

static const struct pccx_gemma_config presets[] = {
	{
		/* google/gemma-3n-E4B text decoder (research note model-sim-anchors §1.2) */
		.name = "e4b", .n_layers = 35, .d_model = 2048, .d_ffn = 16384,
		.n_heads = 8, .n_kv_heads = 2, .head_dim = 256,
		.vocab = 262400, .ple_vocab = 262144, .d_ple = 256,
		.window = 512, .global_period = 5, .n_kv_shared = 15, .laurel_rank = 64,
		.n_sparse = 10, .sparse_z = SPARSE_Z, .softcap = 30.0f, .eps = 1e-6f,
		.theta_local = 10000.0f, .theta_global = 1000000.0f, .max_ctx = 4096,
	},
	{
		/*
		 * google/gemma-3n-E2B text decoder: 30 layers, FFN 8192, 10 KV-shared layers
		 * (first shared 20, sources 18/19 as in E4B), sparsity on layers 0-9; everything
		 * else as E4B. Taken from copies of the published config, not from the
		 * research note, which only gives the layer count.
		 */
		.name = "e2b", .n_layers = 30, .d_model = 2048, .d_ffn = 8192,
		.n_heads = 8, .n_kv_heads = 2, .head_dim = 256,
		.vocab = 262400, .ple_vocab = 262144, .d_ple = 256,
		.window = 512, .global_period = 5, .n_kv_shared = 10, .laurel_rank = 64,
		.n_sparse = 10, .sparse_z = SPARSE_Z, .softcap = 30.0f, .eps = 1e-6f,
		.theta_local = 10000.0f, .theta_global = 1000000.0f, .max_ctx = 4096,
	},
	{
		/*
		 * Test shape: 10 layers, owners 0-4 (4 global), shared 5-9 reading 3 (local) and
		 * 4 (global) as E4B's 20-34 read 18/19; sparse layers 0-2; 8 q / 2 kv heads of 32.
		 * Vocabulary 512 with a 480-row PLE table so ids >= ple_vocab are exercised.
		 */
		.name = "tiny", .n_layers = 10, .d_model = 128, .d_ffn = 512,
		.n_heads = 8, .n_kv_heads = 2, .head_dim = 32,
		.vocab = 512, .ple_vocab = 480, .d_ple = 32,
		.window = 64, .global_period = 5, .n_kv_shared = 5, .laurel_rank = 32,
		.n_sparse = 3, .sparse_z = SPARSE_Z, .softcap = 30.0f, .eps = 1e-6f,
		.theta_local = 10000.0f, .theta_global = 1000000.0f, .max_ctx = 1024,
	},
	{
		/* "tiny" with the real Gemma vocabulary size, for demos with the real tokenizer. */
		.name = "tiny-vocab", .n_layers = 10, .d_model = 128, .d_ffn = 512,
		.n_heads = 8, .n_kv_heads = 2, .head_dim = 32,
		.vocab = 262400, .ple_vocab = 262144, .d_ple = 32,
		.window = 64, .global_period = 5, .n_kv_shared = 5, .laurel_rank = 32,
		.n_sparse = 3, .sparse_z = SPARSE_Z, .softcap = 30.0f, .eps = 1e-6f,
		.theta_local = 10000.0f, .theta_global = 1000000.0f, .max_ctx = 1024,
	},
	/*
	 * Gemma 1, 2 and 3: the real shapes from the published config.json files (Hugging Face
	 * google/gemma-2b, gemma-2-2b, gemma-3-1b-pt and gemma-3-4b-pt's text_config), and test
	 * shapes with each family's structure, windows short enough that 64 tokens wrap the
	 * local layers' rings.
	 */
	{
		.name = "gemma-2b", .family = PCCX_FAMILY_GEMMA, .n_layers = 18, .d_model = 2048,
		.d_ffn = 16384, .n_heads = 8, .n_kv_heads = 1, .head_dim = 256, .vocab = 256000,
		.window = 8192, .global_period = 1, .query_pre_attn_scalar = 256.0f,
		.eps = 1e-6f, .theta_local = 10000.0f, .theta_global = 10000.0f, .max_ctx = 4096,
	},
	{
		.name = "gemma-2-2b", .family = PCCX_FAMILY_GEMMA2, .n_layers = 26,
		.d_model = 2304, .d_ffn = 9216, .n_heads = 8, .n_kv_heads = 4, .head_dim = 256,
		.vocab = 256000, .window = 4096, .global_period = 2, .softcap = 30.0f,
		.attn_softcap = 50.0f, .query_pre_attn_scalar = 256.0f, .eps = 1e-6f,
		.theta_local = 10000.0f, .theta_global = 10000.0f, .max_ctx = 4096,
	},
	{
		.name = "gemma-3-1b", .family = PCCX_FAMILY_GEMMA3, .n_layers = 26,
		.d_model = 1152, .d_ffn = 6912, .n_heads = 4, .n_kv_heads = 1, .head_dim = 256,
		.vocab = 262144, .window = 512, .global_period = 6,
		.query_pre_attn_scalar = 256.0f, .eps = 1e-6f, .theta_local = 10000.0f,
		.theta_global = 1000000.0f, .max_ctx = 4096,
	},
	{
		.name = "gemma-3-4b", .family = PCCX_FAMILY_GEMMA3, .n_layers = 34,
		.d_model = 2560, .d_ffn = 10240, .n_heads = 8, .n_kv_heads = 4, .head_dim = 256,
		.vocab = 262208, .window = 1024, .global_period = 6,
		.query_pre_attn_scalar = 256.0f, .eps = 1e-6f, .theta_local = 10000.0f,
		.theta_global = 1000000.0f, .rope_factor_global = 8.0f, .max_ctx = 4096,
	},
	{
		/* Gemma 1 with MHA (as the 7B): every layer global */
		.name = "tiny-gemma", .family = PCCX_FAMILY_GEMMA, .n_layers = 4, .d_model = 128,
		.d_ffn = 512, .n_heads = 4, .n_kv_heads = 4, .head_dim = 32, .vocab = 512,
		.window = 1024, .global_period = 1, .query_pre_attn_scalar = 32.0f,
		.eps = 1e-6f, .theta_local = 10000.0f, .theta_global = 10000.0f, .max_ctx = 1024,
	},
	{
		/* Gemma 2 with GQA: local/global alternating, both soft-caps */
		.name = "tiny-gemma2", .family = PCCX_FAMILY_GEMMA2, .n_layers = 6, .d_model = 128,
		.d_ffn = 384, .n_heads = 4, .n_kv_heads = 2, .head_dim = 32, .vocab = 512,
		.window = 16, .global_period = 2, .softcap = 30.0f, .attn_softcap = 50.0f,
		.query_pre_attn_scalar = 32.0f, .eps = 1e-6f, .theta_local = 10000.0f,
		.theta_global = 10000.0f, .max_ctx = 1024,
	},
	{
		/* Gemma 3 with MQA: 5 local : 1 global, q/k norms, linear RoPE scaling */
		.name = "tiny-gemma3", .family = PCCX_FAMILY_GEMMA3, .n_layers = 8, .d_model = 128,
		.d_ffn = 512, .n_heads = 4, .n_kv_heads = 1, .head_dim = 32, .vocab = 512,
		.window = 16, .global_period = 6, .query_pre_attn_scalar = 32.0f, .eps = 1e-6f,
		.theta_local = 10000.0f, .theta_global = 1000000.0f, .rope_factor_global = 8.0f,
		.max_ctx = 1024,
	},
	/*
	 * Gemma 4 E2B and E4B text decoders (Hugging Face google/gemma-4-E2B / E4B config.json):
	 * local heads of 256, global heads of 512 with proportional RoPE over a quarter of the
	 * frequencies, PLE, the last 20 / 18 layers reading their donors' KV caches; E2B's
	 * KV-sharing layers have a double-wide FFN.
	 */
	{
		.name = "gemma-4-e2b", .family = PCCX_FAMILY_GEMMA4, .n_layers = 35,
		.d_model = 1536, .d_ffn = 6144, .n_heads = 8, .n_kv_heads = 1, .head_dim = 256,
		.head_dim_global = 512, .vocab = 262144, .ple_vocab = 262144, .d_ple = 256,
		.window = 512, .global_period = 5, .n_kv_shared = 20, .softcap = 30.0f,
		.eps = 1e-6f, .theta_local = 10000.0f, .theta_global = 1000000.0f,
		.rope_partial_global = 0.25f, .double_wide_mlp = true, .max_ctx = 4096,
	},
	{
		.name = "gemma-4-e4b", .family = PCCX_FAMILY_GEMMA4, .n_layers = 42,
		.d_model = 2560, .d_ffn = 10240, .n_heads = 8, .n_kv_heads = 2, .head_dim = 256,
		.head_dim_global = 512, .vocab = 262144, .ple_vocab = 262144, .d_ple = 256,
		.window = 512, .global_period = 6, .n_kv_shared = 18, .softcap = 30.0f,
		.eps = 1e-6f, .theta_local = 10000.0f, .theta_global = 1000000.0f,
		.rope_partial_global = 0.25f, .max_ctx = 4096,
	},
	{
		/*
		 * Gemma 4 with every piece the real shapes have and the ones they may: global
		 * layers 3 and 7 with heads of 64 and one KV head (k = v), local heads of 32 with
		 * two, KV donors 2 (local) and 3 (global) for layers 4-7, double-wide FFN there,
		 * PLE. The last KV owner is global and the one before it local, as in E2B and
		 * E4B (llama.cpp's gemma4 assumes it when it maps the donors).
		 */
		.name = "tiny-gemma4", .family = PCCX_FAMILY_GEMMA4, .n_layers = 8,
		.d_model = 128, .d_ffn = 256, .n_heads = 4, .n_kv_heads = 2, .head_dim = 32,
		.head_dim_global = 64, .n_kv_heads_global = 1, .vocab = 512, .ple_vocab = 512,
		.d_ple = 32, .window = 16, .global_period = 4, .n_kv_shared = 4,
		.softcap = 30.0f, .eps = 1e-6f, .theta_local = 10000.0f,
		.theta_global = 1000000.0f, .rope_partial_global = 0.25f, .k_eq_v = true,
		.double_wide_mlp = true, .max_ctx = 1024,
	},
	{
		/*
		 * Gemma 4's mixture of experts as the 26B-A4B lays it out, at a tiny size: every
		 * layer runs its dense FFN and 2 of 8 experts; k = v in the global layers, no PLE.
		 */
		.name = "tiny-gemma4-moe", .family = PCCX_FAMILY_GEMMA4, .n_layers = 6,
		.d_model = 128, .d_ffn = 128, .n_heads = 4, .n_kv_heads = 2, .head_dim = 32,
		.head_dim_global = 64, .n_kv_heads_global = 1, .vocab = 512, .window = 16,
		.global_period = 3, .softcap = 30.0f, .eps = 1e-6f, .theta_local = 10000.0f,
		.theta_global = 1000000.0f, .rope_partial_global = 0.25f, .k_eq_v = true,
		.n_experts = 8, .n_experts_used = 2, .d_expert = 64, .max_ctx = 1024,
	},
};

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

const char *pccx__gemma_config_names(void)
{
	return "e4b, e2b, tiny, tiny-vocab, gemma-2b, gemma-2-2b, gemma-3-1b, gemma-3-4b, "
	       "tiny-gemma, tiny-gemma2, tiny-gemma3, gemma-4-e2b, gemma-4-e4b, tiny-gemma4, "
	       "tiny-gemma4-moe";
}

const struct pccx_gemma_config *pccx__gemma_config_at(unsigned i)
{
	return i < NPRESETS ? &presets[i] : NULL;
}

int pccx__gemma_config_preset(const char *name, struct pccx_gemma_config *cfg, pccx_diag *d)
{
	size_t i;

	for (i = 0; i < NPRESETS; i++) {
		if (!strcmp(name, presets[i].name)) {
			*cfg = presets[i];
			return PCCX_OK;
		}
	}
	return pccx__fail(d, PCCX_ERR_NOT_FOUND, "config '%s': unknown (known: %s)", name,
			  pccx__gemma_config_names());
}

#define BAD(field, why) \
	pccx__fail(d, PCCX_ERR_INVALID, "config '%s': %s %s", c->name, field, why)

int pccx__gemma_config_check(const struct pccx_gemma_config *c, pccx_diag *d)
{
	struct pccx_attn_desc attn[PCCX_ATTN_KINDS];
	struct pccx_layer_desc layers[PCCX_GEMMA_MAX_LAYERS];
	uint32_t q_dim = c->n_heads * c->head_dim;
	const struct pccx_family_desc *fam;

	if ((unsigned)c->family >= PCCX_FAMILIES)
		return BAD("family", "is not a known family");
	fam = pccx__family(c->family);
	if (c->n_layers == 0 || c->n_layers > PCCX_GEMMA_MAX_LAYERS)
		return BAD("n_layers", "must be 1..64");
	if (c->d_model == 0 || c->d_model % 32 || c->d_model > 8192)
		return BAD("d_model", "must be a multiple of 32, at most 8192");
	if (c->d_ffn == 0 || c->d_ffn % 32 || c->d_ffn > 65504)
		return BAD("d_ffn", "must be a multiple of 32 that fits a 16-bit shape field");
	if (c->n_kv_heads == 0 || c->n_heads == 0 || c->n_heads % c->n_kv_heads)
		return BAD("n_heads", "must be a multiple of n_kv_heads");
	if (c->head_dim == 0 || c->head_dim % 32 || c->head_dim > 1024)
		return BAD("head_dim",
			   "must be a multiple of 32 (word-aligned RoPE halves), <= 1024");
	if (q_dim % 32 || q_dim > 65504)
		return BAD("n_heads * head_dim", "must fit a 16-bit shape field");
	if (c->vocab == 0 || c->vocab > (1u << 24))
		return BAD("vocab", "must be 1..2^24");
	if (fam->ple && (fam->altup || c->d_ple)) {
		if (c->d_ple == 0 || c->d_ple % 32 ||
		    (uint64_t)c->d_ple * c->n_layers > 65504)
			return BAD("d_ple",
				   "must be a multiple of 32 with n_layers * d_ple <= 65504");
		if (c->ple_vocab == 0 || c->ple_vocab > c->vocab)
			return BAD("ple_vocab", "must be 1..vocab");
	} else if (c->d_ple || c->ple_vocab) {
		return BAD("d_ple/ple_vocab", "must be 0 in a model without per-layer embeddings");
	}
	if (fam->altup) {
		if (c->laurel_rank == 0 || c->laurel_rank % 32)
			return BAD("laurel_rank", "must be a multiple of 32");
	} else if (c->laurel_rank || c->n_sparse) {
		return BAD("laurel_rank/n_sparse", "must be 0 outside Gemma 3n");
	}
	if (c->family != PCCX_FAMILY_GEMMA4 &&
	    (c->head_dim_global || c->n_kv_heads_global || c->rope_partial_global != 0.0f ||
	     c->k_eq_v || c->double_wide_mlp))
		return BAD("head_dim_global/n_kv_heads_global/rope_partial_global/k_eq_v/"
			   "double_wide_mlp", "are Gemma 4's: must be 0 in other families");
	if (c->n_kv_shared && !fam->kv_sharing)
		return BAD("n_kv_shared", "must be 0 in a family without KV sharing");
	if (c->head_dim_global % 32 || c->head_dim_global > 1024 ||
	    (c->n_kv_heads_global && c->n_heads % c->n_kv_heads_global) ||
	    (uint64_t)c->n_heads * c->head_dim_global > 65504)
		return BAD("head_dim_global/n_kv_heads_global",
			   "must be a multiple of 32 <= 1024 and divide n_heads");
	if (!(c->rope_partial_global >= 0.0f && c->rope_partial_global <= 1.0f))
		return BAD("rope_partial_global", "must be in [0, 1]");
	if (c->double_wide_mlp && 2ull * c->d_ffn > 65504)
		return BAD("d_ffn", "doubled (double_wide_mlp) must fit a 16-bit shape field");
	if (c->n_experts && c->family != PCCX_FAMILY_GEMMA4)
		return BAD("n_experts", "is Gemma 4's: must be 0 in other families");
	if (c->n_experts > PCCX_GEMMA_MAX_EXPERTS ||
	    (c->n_experts && (c->n_experts_used == 0 || c->n_experts_used > c->n_experts ||
			      c->n_experts_used > PCCX_GEMMA_MAX_EXPERTS_USED ||
			      c->d_expert == 0 || c->d_expert % 32 || c->d_expert > 65504)) ||
	    (!c->n_experts && (c->n_experts_used || c->d_expert)))
		return BAD("n_experts/n_experts_used/d_expert",
			   "must be 1..256 experts, 1..16 of them used, of a width that is a "
			   "multiple of 32 (or all 0)");
	if (c->window == 0 || c->window > 65535 || c->max_ctx == 0 || c->max_ctx > 65535)
		return BAD("window/max_ctx", "must be 1..65535 (16-bit GEMV K field)");
	if (c->global_period == 0)
		return BAD("global_period", "must be > 0");
	if (c->n_kv_shared >= c->n_layers)
		return BAD("n_kv_shared", "must leave at least one KV-owner layer");
	if (c->n_sparse > c->n_layers)
		return BAD("n_sparse", "exceeds n_layers");
	if (!(c->eps > 0.0f) || !(c->theta_local > 1.0f) || !(c->theta_global > 1.0f) ||
	    !(c->sparse_z >= 0.0f))
		return BAD("eps/theta/sparse_z", "out of range");
	if (!(c->softcap >= 0.0f) || !(c->attn_softcap >= 0.0f) ||
	    !(c->query_pre_attn_scalar >= 0.0f) || !(c->rope_factor_global >= 0.0f) ||
	    !(c->softcap < 1e30f && c->attn_softcap < 1e30f &&
	      c->query_pre_attn_scalar < 1e30f && c->rope_factor_global < 1e30f))
		return BAD("softcap/attn_softcap/query_pre_attn_scalar/rope_factor_global",
			   "must be finite and >= 0 (0: none)");
	/* the layer structure: every KV-sharing layer finds a layer to read from */
	return pccx__layers_build(c, attn, layers, d);
}
