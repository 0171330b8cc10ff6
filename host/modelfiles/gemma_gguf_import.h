/* SPDX-License-Identifier: MIT */
/*
 * A GGUF's tensors into a model in device layout, read through bounded windows (pread) rather
 * than the mapping, Q4_0 tensors converted by several threads (docs/model-files.md "Memory of
 * a load").
 */
#ifndef PCCX_GEMMA_GGUF_IMPORT_H
#define PCCX_GEMMA_GGUF_IMPORT_H

#include <stdint.h>

#include "gemma_model.h"
#include "pccx/modelfile.h"

struct pccx_gguf_import;

/* An importer from g: its threads (the online CPUs, at most 4) and their windows. */
PCCX_MUST_CHECK int pccx__gguf_import_create(struct pccx_gguf_import **out, const pccx_gguf *g,
					     pccx_diag *d);
void pccx__gguf_import_free(struct pccx_gguf_import *im);

/*
 * Rows [base, base + rows of t) of the Q4_0 tensor gt (`name` in messages) into model tensor
 * t, losslessly (pccx__q4_0_row_import), the rows split between the threads. The first row
 * (in row order, whatever the threads) holding a block with an Inf or NaN scale is refused as
 * pccx__q4_0_refuse names it; err (may be NULL) counts the elements.
 */
PCCX_MUST_CHECK int pccx__gguf_import_q4_0(struct pccx_gguf_import *im,
					   struct pccx_gemma_model *m, uint32_t t,
					   const pccx_gguf_tensor *gt, uint64_t base,
					   const char *name, pccx_q4_error *err, pccx_diag *d);

/*
 * The same rows of a tensor of any other type, decoded and placed by pccx__gemma_place_rows
 * (requantised to Q4, or kept as FP32) on the calling thread. `row` is scratch of t's cols
 * floats.
 */
PCCX_MUST_CHECK int pccx__gguf_import_decoded(struct pccx_gguf_import *im,
					      struct pccx_gemma_model *m, uint32_t t,
					      const pccx_gguf_tensor *gt, uint64_t base,
					      const char *name, float *row, pccx_q4_error *err,
					      uint64_t *clipped, pccx_diag *d);

#endif /* PCCX_GEMMA_GGUF_IMPORT_H */
