/* SPDX-License-Identifier: MIT */
/* Internal GGUF definitions shared by the reader (gguf.c) and the writer (gguf_write.c). */
#ifndef PCCX_GGUF_INTERNAL_H
#define PCCX_GGUF_INTERNAL_H

#include <stddef.h>
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
 * [p, p + len) of the file's tensor data (p from a pccx_gguf_tensor's data) for a loader
 * converting it: read into buf with pread from a file, in place (*out = p) from memory. The
 * tensor data thus never becomes resident through the mapping, and a read error or a file that
 * shrank is an error naming the file (pccx__modelfile_read). Threads may read at once.
 */
PCCX_MUST_CHECK int pccx__gguf_read(const pccx_gguf *g, const uint8_t *p, size_t len,
				    uint8_t *buf, const uint8_t **out, pccx_diag *d);
/* The loader will read [p, p + len) next (pccx__modelfile_will_read). */
void pccx__gguf_will_read(const pccx_gguf *g, const uint8_t *p, uint64_t len);

#endif /* PCCX_GGUF_INTERNAL_H */
