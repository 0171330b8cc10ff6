/* SPDX-License-Identifier: MIT */
/* Internal GGUF definitions shared by the reader (gguf.c) and the writer (gguf_write.c). */
#ifndef PCCX_GGUF_INTERNAL_H
#define PCCX_GGUF_INTERNAL_H

#include <stdint.h>

#include "pccx/modelfile.h"

#define PCCX_GGUF_MAGIC "GGUF"
/* Fixed part of the header: magic, version, n_tensors, n_kv. */
#define PCCX_GGUF_HEADER_BYTES 24u

/* Size in bytes of a scalar value type; 0 for STRING, ARRAY and unknown types. */
uint32_t pccx__gguf_scalar_size(uint32_t type);

/*
 * Check a key or tensor name (`what` is "key" or "tensor name"): non-empty, at most `max`
 * bytes, no control characters (so diagnostics stay on one line). Returns NULL when
 * acceptable, else a static description of the problem.
 */
const char *pccx__gguf_name_problem(const char *s, uint64_t len, uint64_t max);

/*
 * A loader is done with [p, p + len) of the file's tensor data: its pages leave the resident
 * set (pccx__modelfile_release); reading them again still works.
 */
void pccx__gguf_release(const pccx_gguf *g, const void *p, uint64_t len);

#endif /* PCCX_GGUF_INTERNAL_H */
