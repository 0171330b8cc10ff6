/* SPDX-License-Identifier: MIT */
/*
 * Internal helpers shared by the model-file readers and writers (GGUF, safetensors):
 * read-only file mapping, a bump allocator whose total is bounded by the input that was
 * validated, an open-addressing string index, checked arithmetic and temp-file writes.
 */
#ifndef PCCX_MODELFILE_UTIL_H
#define PCCX_MODELFILE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"

/* A read-only view of a whole file (mmap) or of a caller's buffer. */
typedef struct pccx_modelfile_map {
	const uint8_t *data;
	size_t size;
	void *mapping;		/* non-NULL when we own an mmap of `size` bytes */
	int fd;			/* the file, open while mapped (pccx__modelfile_read) */
} pccx_modelfile_map;

/* Map `path` read-only. An empty file gives data == NULL, size == 0 and succeeds. */
PCCX_MUST_CHECK int pccx__modelfile_map_file(const char *path, pccx_modelfile_map *m, pccx_diag *d);
void pccx__modelfile_unmap(pccx_modelfile_map *m);
/*
 * Bytes [p, p + len) of the view (p inside it) for a loader converting them. A mapped file's
 * bytes are read into buf (len bytes) with pread, *out = buf: they never enter the resident
 * set through the mapping, and a read that fails or comes short (the file shrank since it was
 * mapped) is an error naming `name` and the offset, where touching the mapping would raise
 * SIGBUS. A caller's buffer is not copied: *out = p.
 */
PCCX_MUST_CHECK int pccx__modelfile_read(const pccx_modelfile_map *m, const char *name,
					 const uint8_t *p, size_t len, uint8_t *buf,
					 const uint8_t **out, pccx_diag *d);
/*
 * A loader is about to read [p, p + len) of a mapped file in windows, from several threads:
 * the kernel starts reading all of it into the page cache at once (POSIX_FADV_WILLNEED),
 * where the threads' interleaved windows would defeat its readahead on a cold file. Advice
 * only; nothing for a caller's buffer.
 */
void pccx__modelfile_will_read(const pccx_modelfile_map *m, const uint8_t *p, uint64_t len);
/*
 * Hand the pages of [p, p + len) inside the mapping back to the kernel once a loader has
 * converted them: the mapping stays valid (a later read faults them in again from the file),
 * but they stop counting in the process's resident memory. Only whole pages inside the range
 * are released.
 */
void pccx__modelfile_release(const pccx_modelfile_map *m, const void *p, uint64_t len);

/* Bump allocator: many small objects freed together. Every block is 16-byte aligned. */
typedef struct pccx_modelfile_arena {
	struct pccx_modelfile_arena_block *head;
	size_t used;		/* bytes used in head */
	size_t cap;		/* capacity of head */
} pccx_modelfile_arena;

void *pccx__modelfile_arena_alloc(pccx_modelfile_arena *a, size_t n);
char *pccx__modelfile_arena_strndup(pccx_modelfile_arena *a, const char *s, size_t n);
void pccx__modelfile_arena_free(pccx_modelfile_arena *a);

/*
 * String index: open addressing, linear probing, FNV-1a. Maps NUL-terminated names to
 * indices into the caller's arrays. The table does not own the strings.
 */
typedef struct pccx_modelfile_index {
	const char **names;
	uint32_t *slots;	/* index + 1, 0 = empty */
	size_t mask;
	size_t count;
} pccx_modelfile_index;

/* Prepare for up to `n` entries. */
PCCX_MUST_CHECK int pccx__modelfile_index_init(pccx_modelfile_index *ix, size_t n);
/* Insert; returns 1 if inserted, 0 if the name was already present (*dup = its index). */
int pccx__modelfile_index_add(pccx_modelfile_index *ix, const char *name, uint32_t idx,
			      uint32_t *dup);
/* Look up; returns the index or -1. */
int64_t pccx__modelfile_index_find(const pccx_modelfile_index *ix, const char *name);
void pccx__modelfile_index_free(pccx_modelfile_index *ix);

/* Checked arithmetic: return true on overflow. */
static inline bool pccx_modelfile_add_ovf(uint64_t a, uint64_t b, uint64_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

static inline bool pccx_modelfile_mul_ovf(uint64_t a, uint64_t b, uint64_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

static inline bool pccx_modelfile_is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* Little-endian loads from unaligned bytes. */
static inline uint16_t pccx_modelfile_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t pccx_modelfile_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t pccx_modelfile_le64(const uint8_t *p)
{
	return (uint64_t)pccx_modelfile_le32(p) | (uint64_t)pccx_modelfile_le32(p + 4) << 32;
}

static inline void pccx_modelfile_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void pccx_modelfile_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void pccx_modelfile_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Output sink of the writers: either a growing memory buffer or a file descriptor.
 * Errors are sticky: after the first failure every call is a no-op and `status` holds it.
 */
typedef struct pccx_modelfile_sink {
	int fd;			/* -1 for memory */
	uint8_t *buf;
	size_t len, cap;
	uint64_t written;	/* bytes accepted (the logical file position) */
	uint64_t on_disk;	/* bytes the file descriptor took */
	int status;
	int err;		/* errno of the failed write */
	uint8_t *stage;		/* staging buffer for small writes to a file */
	size_t stage_len;
} pccx_modelfile_sink;

void pccx__modelfile_sink_mem(pccx_modelfile_sink *s);
void pccx__modelfile_sink_write(pccx_modelfile_sink *s, const void *p, size_t n);
void pccx__modelfile_sink_zeros(pccx_modelfile_sink *s, size_t n);
void pccx__modelfile_sink_free(pccx_modelfile_sink *s);

/*
 * Write a file atomically: create a temporary file next to `path`, let `emit` fill the
 * sink, fsync, rename over `path`. On any failure the temporary file is removed and
 * `path` is untouched; the diag names `path` and the cause (e.g. "No space left on device").
 */
PCCX_MUST_CHECK int pccx__modelfile_write_atomic(const char *path,
						 int (*emit)(void *ctx, pccx_modelfile_sink *s,
							     pccx_diag *d),
						 void *ctx, pccx_diag *d);

#endif /* PCCX_MODELFILE_UTIL_H */
