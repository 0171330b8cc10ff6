/* SPDX-License-Identifier: MIT */
/* Internal side of the Gemma 3n tensor map; the public API is in pccx/modelfile.h. */
#ifndef PCCX_GEMMA_TENSORS_H
#define PCCX_GEMMA_TENSORS_H

#include "pccx/modelfile.h"

#endif /* PCCX_GEMMA_TENSORS_H */
