// SPDX-License-Identifier: MIT
/* Decoding session: host buffers, per-token inputs, one NPU step per token. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "diag.h"
#include "session.h"
#include "pccx_num.h"

static void *map_zero(uint64_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int pccx__gemma_session_create(struct pccx_gemma_session **out,
				 const struct pccx_gemma_model *m,
				 const struct pccx_npu_ops *ops, void *ctx, pccx_diag *d)
{
	struct pccx_gemma_session *s;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return pccx__fail(d, PCCX_ERR_NOMEM, "session: out of memory");
	s->m = m;
	s->ops = ops;
	s->ctx = ctx;
	rc = pccx__gemma_plan_build(m, &s->plan, d);
	if (rc) {
		free(s);
		return rc;
	}
	/* room for the inputs of a prompt chunk as large as L2 takes (gemma_chunk.h) */
	s->in_rows = pccx__gemma_chunk_rows_max(m, &s->plan);
	s->in_rows = s->in_rows ? s->in_rows : 1;
	s->in = calloc(s->in_rows, s->plan.in_bytes);
	s->out = calloc(1, s->plan.out_bytes);
	s->kv = map_zero(s->plan.kv_bytes);
	if (!s->in || !s->out || !s->kv) {
		unsigned long long kv = s->plan.kv_bytes;

		pccx__gemma_session_free(s);
		return pccx__fail(d, PCCX_ERR_NOMEM,
				  "session: cannot allocate %llu bytes of KV cache", kv);
	}
	rc = ops->bind(ctx, PCCX_NPU_BUF_WEIGHTS, m->data, m->device_size, false);
	if (!rc)
		rc = ops->bind(ctx, PCCX_NPU_BUF_KV, s->kv, s->plan.kv_bytes, true);
	if (!rc)
		rc = ops->bind(ctx, PCCX_NPU_BUF_IN, s->in, s->in_rows * s->plan.in_bytes, false);
	if (!rc)
		rc = ops->bind(ctx, PCCX_NPU_BUF_OUT, s->out, s->plan.out_bytes, true);
	if (rc) {
		pccx__gemma_session_free(s);
		return pccx__fail(d, rc, "session: cannot bind host buffers to '%s'", ops->name);
	}
	*out = s;
	return PCCX_OK;
}

void pccx__gemma_session_free(struct pccx_gemma_session *s)
{
	if (!s)
		return;
	free(s->in);
	free(s->out);
	if (s->kv)
		munmap(s->kv, s->plan.kv_bytes ? s->plan.kv_bytes : 1);
	free(s);
}

void pccx__gemma_session_reset(struct pccx_gemma_session *s)
{
	s->pos = 0;
}

int pccx__gemma_session_step(struct pccx_gemma_session *s, uint32_t token, float *logits,
			       pccx_diag *d)
{
	const struct pccx_gemma_config *c = &s->m->cfg;
	uint32_t i;
	int rc;

	if (s->pos >= c->max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE, "context full: %u positions (max_ctx)",
				  c->max_ctx);
	rc = pccx__gemma_host_inputs(s->m, &s->plan, token, s->pos, s->in, d);
	if (rc)
		return rc;
	rc = pccx__gemma_step(s->m, &s->plan, s->ops, s->ctx, s->pos, logits != NULL,
			      &(struct pccx_gemma_host){ s->in, s->out });
	if (rc)
		return pccx__fail(d, rc, "decode step at position %u: %s", s->pos,
				  s->ops->error ? s->ops->error(s->ctx) : pccx_strerror(rc));
	if (logits) {
		const uint8_t *b = s->out;

		for (i = 0; i < c->vocab; i++)
			logits[i] = pccx_f32_from_bits((uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
							(uint32_t)b[4 * i + 2] << 16 |
							(uint32_t)b[4 * i + 3] << 24);
	}
	s->pos++;
	return PCCX_OK;
}

int pccx__gemma_session_chunk(struct pccx_gemma_session *s, struct pccx_gemma_chunk *ck,
			      const uint32_t *tokens, uint32_t rows, pccx_diag *d)
{
	const struct pccx_gemma_config *c = &s->m->cfg;
	int rc;

	if (rows > s->in_rows || rows > ck->rows || ck->p != &s->plan)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "prompt chunk of %u tokens: the session holds inputs for %u, the "
				  "chunk %u (or it is another session's)", rows, s->in_rows, ck->rows);
	if (rows > c->max_ctx - s->pos)
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "context full: %u positions (max_ctx), %u used, %u in the chunk",
				  c->max_ctx, s->pos, rows);
	rc = pccx__gemma_chunk_inputs(ck, tokens, rows, s->pos, s->in, d);
	if (!rc)
		rc = pccx__gemma_chunk_step(ck, s->ops, s->ctx, s->pos, rows, d);
	if (rc)
		return rc;
	s->pos += rows;
	return PCCX_OK;
}
