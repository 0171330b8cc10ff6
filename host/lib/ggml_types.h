/* SPDX-License-Identifier: MIT */
/* Internal side of ggml_types.c; the public API is in pccx/modelfile.h. */
#ifndef PCCX_GGML_TYPES_H
#define PCCX_GGML_TYPES_H

#include "pccx/modelfile.h"

#endif /* PCCX_GGML_TYPES_H */
