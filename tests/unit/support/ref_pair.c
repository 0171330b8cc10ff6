// SPDX-License-Identifier: MIT
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref_pair.h"

void ref_pair_open(struct ref_pair *p, const char *preset, uint32_t seed)
{
	pccx_diag d = { 0 };
	int i;

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(pccx__gemma_config_preset(preset, &p->cfg, &d), 0);
	ck_assert_msg(pccx__gemma_model_create(&p->m, &p->cfg, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx__gemma_synth(p->m, seed, 2, &d) == 0, "%s", d.msg);
	for (i = 0; i < 2; i++) {
		ck_assert_msg(pccx__ref_exec_create(&p->x[i], 2, PCCX_KERN_AUTO, &d) == 0, "%s",
			      d.msg);
		ck_assert_msg(pccx__gemma_session_create(&p->s[i], p->m, pccx__ref_exec_ops(),
							 p->x[i], &d) == 0, "%s", d.msg);
		p->logits[i] = malloc(sizeof(float) * p->cfg.vocab);
		ck_assert_ptr_nonnull(p->logits[i]);
	}
}

void ref_pair_close(struct ref_pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		pccx__gemma_session_free(p->s[i]);
		pccx__ref_exec_free(p->x[i]);
		free(p->logits[i]);
	}
	pccx__gemma_model_free(p->m);
}
