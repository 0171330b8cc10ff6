/* SPDX-License-Identifier: MIT */
/*
 * Two reference sessions of one synthetic model side by side: [0] runs a prompt token by
 * token, [1] the faster path under test (batches on the host, chunks on the NPU's program),
 * so a test can compare their KV caches and next logits.
 */
#ifndef PCCX_TEST_REF_PAIR_H
#define PCCX_TEST_REF_PAIR_H

#include <stdint.h>

#include "exec_ref.h"
#include "gemma_config.h"
#include "gemma_model.h"
#include "session.h"

struct ref_pair {
	struct pccx_gemma_config cfg;
	struct pccx_gemma_model *m;
	struct pccx_ref_exec *x[2];
	struct pccx_gemma_session *s[2];	/* [0] token by token, [1] the path under test */
	float *logits[2];
};

/* The preset's model with weights synthesised from `seed`, and both sessions (2 threads). */
void ref_pair_open(struct ref_pair *p, const char *preset, uint32_t seed);
void ref_pair_close(struct ref_pair *p);

#endif
