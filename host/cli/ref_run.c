// SPDX-License-Identifier: MIT
/* What pccx ref and pccx fidelity share (ref_run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag.h"
#include "exec_ref.h"
#include "session.h"
#include "gemma_gguf.h"
#include "gemma_st.h"
#include "oracle.h"
#include "pccx/tokenizer.h"
#include "ref_run.h"
#include "tokenizer_gguf.h"

/* A directory, a .safetensors file or an index .json: a Hugging Face checkpoint. */
static bool is_checkpoint(const char *path)
{
	size_t n = strlen(path);
	struct stat sb;

	return (n >= 12 && !strcmp(path + n - 12, ".safetensors")) ||
	       (n >= 5 && !strcmp(path + n - 5, ".json")) ||
	       (!stat(path, &sb) && S_ISDIR(sb.st_mode));
}

/* -m FILE: a GGUF (with its tokenizer unless --tokenizer) or a safetensors checkpoint. */
static int load_file(struct pccx_cli_ref *r, pccx_diag *d)
{
	const struct pccx_cli_ref_args *a = r->a;
	double t0 = pccx_cli_now();
	uint64_t clipped = 0;
	pccx_q4_error q4;
	char buf[160];
	int rc;

	memset(&q4, 0, sizeof(q4));
	if (is_checkpoint(a->model)) {
		rc = pccx__gemma_load_safetensors(&r->m, a->model, (uint32_t)a->max_ctx, &q4, d);
	} else {
		struct pccx_gemma_load_info li;
		pccx_gguf *g = NULL;

		rc = pccx__gemma_load_gguf(&r->m, a->model, (uint32_t)a->max_ctx, &li,
					     a->tokenizer ? NULL : &g, d);
		if (!rc && g)
			rc = pccx__tokenizer_load_gguf(g, &r->tk, d);
		pccx_gguf_close(g);
		q4 = li.q4;
		clipped = li.clipped;
	}
	if (rc)
		return rc;
	/* the checkpoint loader's notice (a multimodal model's towers not read), status OK */
	if (d && !d->status && d->msg[0]) {
		if (!a->quiet)
			fprintf(stderr, "pccx %s: notice: %s\n", r->cmd, d->msg);
		d->msg[0] = 0;
	}
	r->cfg = r->m->cfg;
	if (!a->quiet)
		fprintf(stderr,
			"pccx %s: %s: %u layers, D %u, vocab %u, %.1f MB in device layout in "
			"%.2f s; Q4 conversion %s; %llu AltUp coefficients clamped\n",
			r->cmd, a->model, r->cfg.n_layers, r->cfg.d_model, r->cfg.vocab,
			(double)r->m->size / 1e6, pccx_cli_now() - t0,
			pccx_q4_error_format(&q4, buf, sizeof(buf)), (unsigned long long)clipped);
	return PCCX_OK;
}

int pccx_cli_ref_load(struct pccx_cli_ref *r, pccx_diag *d)
{
	const struct pccx_cli_ref_args *a = r->a;
	double t0 = pccx_cli_now();
	int rc;

	r->eos = 1;
	if (a->model)
		return load_file(r, d);
	rc = pccx_cli_config(a->config, a->max_ctx, &r->cfg, d);
	if (!rc)
		rc = pccx_cli_synth(&r->cfg, a->wseed, (unsigned)a->threads, &r->m, d);
	if (!rc && !a->quiet)
		fprintf(stderr,
			"pccx %s: config %s, %.1f MB of synthetic weights (seed %llu) in %.2f s\n",
			r->cmd, r->cfg.name, (double)r->m->size / 1e6, (unsigned long long)a->wseed,
			pccx_cli_now() - t0);
	return rc;
}

int pccx_cli_ref_encode(struct pccx_cli_ref *r, pccx_diag *d)
{
	const char *prompt = r->a->prompt;
	size_t len = strlen(prompt), i;
	int rc;

	if (r->a->tokenizer) {
		rc = pccx_tokenizer_load_json(r->a->tokenizer, &r->tk, d);
		if (rc)
			return rc;
	}
	if (r->tk) {
		if (pccx_tokenizer_n_vocab(r->tk) > r->cfg.vocab)
			return pccx__fail(d, PCCX_ERR_INVALID,
					  "%s: the tokenizer has %zu ids, the model only %u "
					  "(use tiny-vocab, e2b or e4b)",
					  r->cmd, pccx_tokenizer_n_vocab(r->tk), r->cfg.vocab);
		r->eos = pccx_tokenizer_eos(r->tk);
		return pccx_tokenizer_encode(r->tk, prompt, len, PCCX_TOK_ADD_BOS, &r->ids,
					     &r->n_ids, d);
	}
	if (r->cfg.vocab < 259)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "%s: a vocabulary of %u ids is too small for the byte tokenizer",
				  r->cmd, r->cfg.vocab);
	r->ids = malloc(sizeof(*r->ids) * (len + 1));
	if (!r->ids)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", r->cmd);
	r->ids[r->n_ids++] = 2;	/* <bos> */
	for (i = 0; i < len; i++)
		r->ids[r->n_ids++] = (int32_t)(unsigned char)prompt[i] + 3;
	return PCCX_OK;
}

int pccx_cli_ref_start(struct pccx_cli_ref *r, bool oracle, pccx_diag *d)
{
	const struct pccx_cli_ref_args *a = r->a;
	int rc;

	rc = pccx__ref_exec_create(&r->x, (unsigned)a->threads, a->kernel, d);
	if (!rc)
		rc = pccx__gemma_session_create(&r->s, r->m, pccx__ref_exec_ops(), r->x, d);
	if (!rc && oracle)
		rc = pccx__oracle_create(&r->orc, r->m, (unsigned)a->threads, d);
	if (rc)
		return rc;
	if (!a->quiet)
		fprintf(stderr, "pccx %s: kernel %s, %u threads\n", r->cmd,
			pccx__kern_name(pccx__ref_exec_kernel(r->x)), pccx__ref_exec_threads(r->x));
	r->logits = malloc(sizeof(float) * r->cfg.vocab);
	if (!r->logits)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", r->cmd);
	if (oracle) {
		r->ologits = malloc(sizeof(double) * r->cfg.vocab);
		if (!r->ologits || pccx__cmp_create(&r->cmp))
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", r->cmd);
		pccx__oracle_on_stage(r->orc, pccx__cmp_oracle_stage, r->cmp);
		pccx__ref_exec_on_stage(r->x, pccx__cmp_ref_stage, r->cmp);
	}
	return PCCX_OK;
}

int pccx_cli_ref_step(struct pccx_cli_ref *r, int32_t tok, bool logits, pccx_diag *d)
{
	double t0 = pccx_cli_now();
	int rc;

	if (r->cmp)
		pccx__cmp_clear(r->cmp);
	rc = pccx__gemma_session_step(r->s, (uint32_t)tok, logits || r->orc ? r->logits : NULL,
					d);
	r->t_ref += pccx_cli_now() - t0;
	if (rc || !r->orc)
		return rc;
	t0 = pccx_cli_now();
	rc = pccx__oracle_step(r->orc, (uint32_t)tok, r->ologits, d);
	r->t_oracle += pccx_cli_now() - t0;
	if (rc)
		return rc;
	pccx__logit_compare(r->logits, r->ologits, r->cfg.vocab, &r->lc);
	return PCCX_OK;
}

void pccx_cli_ref_free(struct pccx_cli_ref *r)
{
	pccx__cmp_free(r->cmp);
	pccx__oracle_free(r->orc);
	pccx__gemma_session_free(r->s);
	pccx__ref_exec_free(r->x);
	pccx__gemma_model_free(r->m);
	pccx_tokenizer_free(r->tk);
	free(r->ids);
	free(r->logits);
	free(r->ologits);
	memset(r, 0, sizeof(*r));
}
