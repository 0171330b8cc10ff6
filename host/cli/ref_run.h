/* SPDX-License-Identifier: MIT */
/*
 * What pccx ref and pccx fidelity share: the model options, loading the model (a file or
 * synthetic weights) and the prompt's ids, the reference executor and session, and the FP64
 * oracle stepped on the same token as the reference, stage by stage compared (compare.h).
 */
#ifndef PCCX_CLI_REF_RUN_H
#define PCCX_CLI_REF_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "compare.h"
#include "gemma_config.h"
#include "kernels.h"

struct pccx_gemma_model;
struct pccx_ref_exec;
struct pccx_gemma_session;
struct pccx_oracle;

/* The model and run options of both commands (PCCX_CLI_REF_OPTS). */
struct pccx_cli_ref_args {
	const char *config, *model, *prompt, *tokenizer;
	uint64_t wseed, max_ctx, threads;
	enum pccx_kern_impl kernel;
	bool have_prompt, quiet;
};

/* The option table entries of the struct pccx_cli_ref_args at field f of the command's T. */
#define PCCX_CLI_REF_OPTS(T, f)                                                                 \
	PCCX_OPT("config", 0, PCCX_OPT_STR, PCCX_AT(T, f.config, const char *), "NAME",          \
		 "model shape", .values = pccx__gemma_config_names),                          \
	PCCX_OPT(NULL, 'm', PCCX_OPT_PATH, PCCX_AT(T, f.model, const char *), "MODEL",           \
		 "a GGUF of any family in llama.cpp's layout (gemma, gemma2, gemma3,\n"          \
		 "gemma3n, gemma4) or a Hugging Face checkpoint of any family (directory,\n"     \
		 "*.safetensors, index .json); Q4_0 loads losslessly, other types are\n"         \
		 "requantised and the error reported"),                                          \
	PCCX_OPT(NULL, 'p', PCCX_OPT_STR, PCCX_AT(T, f.prompt, const char *), "TEXT",            \
		 "prompt (default \"Hello\")", .seen_at = PCCX_AT(T, f.have_prompt, bool) + 1),   \
	PCCX_OPT("tokenizer", 0, PCCX_OPT_PATH, PCCX_AT(T, f.tokenizer, const char *), "FILE",   \
		 "Hugging Face tokenizer.json (needs a model with its\n"                         \
		 "vocabulary, e.g. tiny-vocab); else bytes are ids 3..258"),                     \
	PCCX_OPT("max-ctx", 0, PCCX_OPT_UINT, PCCX_AT(T, f.max_ctx, uint64_t), "N",              \
		 "KV-cache positions of global layers (default: the config's)", .min = 1,       \
		 .max = 65535),                                                                  \
	PCCX_OPT("threads", 0, PCCX_OPT_UINT, PCCX_AT(T, f.threads, uint64_t), "N",              \
		 "host threads (default: all CPUs)", .min = 1, .max = 256),                     \
	PCCX_OPT("kernel", 0, PCCX_OPT_CUSTOM, PCCX_AT(T, f.kernel, enum pccx_kern_impl), "K",   \
		 "Q4 host kernel", .parse = pccx_cli_parse_kernel,                               \
		 .values = pccx_cli_kernel_names),                                               \
	PCCX_OPT(NULL, 'q', PCCX_OPT_FLAG, PCCX_AT(T, f.quiet, bool), NULL,                      \
		 "no model, kernel and timing lines on stderr")

/* A reference decode, with the oracle beside it when started so. */
struct pccx_cli_ref {
	const char *cmd;			/* "ref", "fidelity": what messages start with */
	const struct pccx_cli_ref_args *a;
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	struct pccx_tokenizer *tk;		/* --tokenizer, or the GGUF's; NULL: bytes */
	int32_t eos;				/* the tokenizer's end of sequence (else 1) */
	int32_t *ids;				/* the prompt's (n_ids), <bos> first */
	size_t n_ids;
	struct pccx_ref_exec *x;
	struct pccx_gemma_session *s;
	struct pccx_oracle *orc;		/* with the oracle: */
	struct pccx_cmp *cmp;			/*   the stages of the last step compared */
	struct pccx_logit_cmp lc;		/*   its logits compared */
	float *logits;				/* (vocab) of the last step with logits */
	double *ologits;			/* (vocab) the oracle's */
	double t_ref, t_oracle;			/* seconds in the steps of each */
};

/* The model (a file given with -m, else the preset --config with weights of a->wseed). */
PCCX_MUST_CHECK int pccx_cli_ref_load(struct pccx_cli_ref *r, pccx_diag *d);
/* The prompt's ids: the tokenizer (--tokenizer, else the GGUF's), else bytes as ids 3..258. */
PCCX_MUST_CHECK int pccx_cli_ref_encode(struct pccx_cli_ref *r, pccx_diag *d);
/*
 * The executor, session and logit buffer; with `oracle`, the oracle and the comparison (the
 * reference's stages go to pccx__cmp_ref_stage unless the caller sets another stage callback
 * that passes them on).
 */
PCCX_MUST_CHECK int pccx_cli_ref_start(struct pccx_cli_ref *r, bool oracle, pccx_diag *d);
/*
 * Decode `tok` at the next position: the reference (logits to r->logits when `logits` or with
 * the oracle), then the oracle, its stages compared (pccx__cmp_results(r->cmp)) and its logits
 * (r->lc).
 */
PCCX_MUST_CHECK int pccx_cli_ref_step(struct pccx_cli_ref *r, int32_t tok, bool logits,
				      pccx_diag *d);
void pccx_cli_ref_free(struct pccx_cli_ref *r);

#endif /* PCCX_CLI_REF_RUN_H */
