/* SPDX-License-Identifier: MIT */
/*
 * Model files: GGUF reader and writer, ggml tensor types (decoding to float rows and
 * import into the device "Q4" weight format), safetensors reader, Hugging Face
 * config.json for the Gemma 3n text decoder, and the Gemma 3n tensor-name map.
 *
 * Every reader refuses a malformed file with a status code and a one-line pccx_diag that
 * names the file, the key or tensor and the problem. docs/model-files.md describes what
 * is accepted and refused.
 */
#ifndef PCCX_MODELFILE_H
#define PCCX_MODELFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* what follows is exported by libpccx.so */

/* ===================================================================================== */
/* ggml tensor types                                                                      */

/* The numbering is the on-disk one of GGUF tensor infos. Gaps are types ggml removed. */
typedef enum pccx_ggml_type {
	PCCX_GGML_F32 = 0,
	PCCX_GGML_F16 = 1,
	PCCX_GGML_Q4_0 = 2,
	PCCX_GGML_Q4_1 = 3,
	PCCX_GGML_Q5_0 = 6,
	PCCX_GGML_Q5_1 = 7,
	PCCX_GGML_Q8_0 = 8,
	PCCX_GGML_Q8_1 = 9,
	PCCX_GGML_Q2_K = 10,
	PCCX_GGML_Q3_K = 11,
	PCCX_GGML_Q4_K = 12,
	PCCX_GGML_Q5_K = 13,
	PCCX_GGML_Q6_K = 14,
	PCCX_GGML_Q8_K = 15,
	PCCX_GGML_IQ2_XXS = 16,
	PCCX_GGML_IQ2_XS = 17,
	PCCX_GGML_IQ3_XXS = 18,
	PCCX_GGML_IQ1_S = 19,
	PCCX_GGML_IQ4_NL = 20,
	PCCX_GGML_IQ3_S = 21,
	PCCX_GGML_IQ2_S = 22,
	PCCX_GGML_IQ4_XS = 23,
	PCCX_GGML_I8 = 24,
	PCCX_GGML_I16 = 25,
	PCCX_GGML_I32 = 26,
	PCCX_GGML_I64 = 27,
	PCCX_GGML_F64 = 28,
	PCCX_GGML_IQ1_M = 29,
	PCCX_GGML_BF16 = 30,
	PCCX_GGML_TQ1_0 = 34,
	PCCX_GGML_TQ2_0 = 35,
	PCCX_GGML_MXFP4 = 39,
	PCCX_GGML_TYPE_LIMIT = 40	/* every known type is below this */
} pccx_ggml_type;

/* Name ("Q4_0") of a known type, or NULL. */
const char *pccx_ggml_type_name(uint32_t type);
/* True when `type` is a ggml type this library knows the block layout of. */
bool pccx_ggml_type_known(uint32_t type);
/* Elements per block (1 for F32/F16/BF16 ...) and bytes per block; 0 for unknown types. */
uint32_t pccx_ggml_block_elems(uint32_t type);
uint32_t pccx_ggml_block_bytes(uint32_t type);
/* True when pccx_ggml_decode() can turn the type into floats. */
bool pccx_ggml_can_decode(uint32_t type);
/*
 * Bytes taken by `n` elements of `type`; fails (PCCX_ERR_INVALID) when `n` is not a
 * multiple of the block size or on overflow, PCCX_ERR_UNSUPPORTED for unknown types.
 */
PCCX_MUST_CHECK int pccx_ggml_nbytes(uint32_t type, uint64_t n, uint64_t *bytes);
/*
 * Decode `n` elements (a multiple of the block size) of `type` from `src` (size `src_len`,
 * any alignment, little-endian) into `dst`. Supported: F32, F16, BF16, F64, I8, I16, I32,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K. `what` names the tensor
 * in diagnostics.
 */
PCCX_MUST_CHECK int pccx_ggml_decode(uint32_t type, const void *src, size_t src_len, float *dst,
				     uint64_t n, const char *what, pccx_diag *d);

/* ===================================================================================== */
/* Device weight format "Q4"                                                              */
/*
 * A Q4 matrix of (rows, cols) with cols a multiple of 32 is two arrays (pccx_num.h):
 *   nibbles  rows * cols / 2 bytes, row-major; element 2j is the low nibble of byte j,
 *            element 2j+1 the high nibble, each a 4-bit two's complement value q (-8..7);
 *   scales   rows * cols / 32 FP16 values, one per block of 32 consecutive elements;
 * weight k = fp16_to_f32(scales[k / 32]) * q_k.
 *
 * ggml Q4_0 is imported without loss (same scale bits, q = nibble - 8, reordered). Every
 * other type is decoded to FP32 and requantised with pccx__q4_quantize_block(); the error
 * against the decoded values is accumulated in a pccx_q4_error.
 */

typedef struct pccx_q4_error {
	uint64_t n;		/* elements compared */
	double sum_sq_err;	/* sum of (dequantised - source)^2 */
	double sum_sq_ref;	/* sum of source^2 */
	double max_abs_err;	/* largest |dequantised - source| */
	bool lossless;		/* every element came from a lossless import */
} pccx_q4_error;

/* Zero the statistics (lossless starts true). */
void pccx_q4_error_init(pccx_q4_error *e);
/* Root-mean-square error; 0 when n == 0. */
double pccx_q4_error_rms(const pccx_q4_error *e);
/* RMS error divided by the RMS of the source; 0 when the source is all zeros. */
double pccx_q4_error_rel_rms(const pccx_q4_error *e);
/* One line: "lossless" or "rms 1.23e-03, max 4.56e-03, relative rms 2.10e-02 (n 4096)". */
const char *pccx_q4_error_format(const pccx_q4_error *e, char *buf, size_t size);

/*
 * Convert `n` elements (a multiple of 32 and of the type's block) of ggml `type` at `src`
 * into nibbles (n / 2 bytes) and scales (n / 32). `err` (may be NULL) accumulates the error;
 * `what` names the tensor in diagnostics. Fails on undecodable types and on a block holding
 * Inf or NaN (a requantised block with such a value, a Q4_0 block whose FP16 scale is Inf or
 * NaN), naming the block.
 */
PCCX_MUST_CHECK int pccx_q4_import(uint32_t type, const void *src, size_t src_len, uint64_t n,
				   uint8_t *nibbles, uint16_t *scales, pccx_q4_error *err,
				   const char *what, pccx_diag *d);
/* Quantise FP32 values (n a multiple of 32) into Q4, accumulating the error. */
PCCX_MUST_CHECK int pccx_q4_quantize(const float *x, uint64_t n, uint8_t *nibbles,
				     uint16_t *scales, pccx_q4_error *err, const char *what,
				     pccx_diag *d);

/* ===================================================================================== */
/* GGUF reader                                                                            */

typedef enum pccx_gguf_type {
	PCCX_GGUF_UINT8 = 0,
	PCCX_GGUF_INT8 = 1,
	PCCX_GGUF_UINT16 = 2,
	PCCX_GGUF_INT16 = 3,
	PCCX_GGUF_UINT32 = 4,
	PCCX_GGUF_INT32 = 5,
	PCCX_GGUF_FLOAT32 = 6,
	PCCX_GGUF_BOOL = 7,
	PCCX_GGUF_STRING = 8,
	PCCX_GGUF_ARRAY = 9,
	PCCX_GGUF_UINT64 = 10,
	PCCX_GGUF_INT64 = 11,
	PCCX_GGUF_FLOAT64 = 12,
	PCCX_GGUF_TYPE_COUNT = 13
} pccx_gguf_type;

#define PCCX_GGUF_DEFAULT_ALIGNMENT 32u
#define PCCX_GGUF_MAX_DIMS 4u
/* Limits of the format: tensor names are at most 64 bytes, keys at most 65535 bytes. */
#define PCCX_GGUF_MAX_NAME 64u
#define PCCX_GGUF_MAX_KEY 65535u
/* Deepest array nesting accepted (an array of arrays is depth 2). */
#define PCCX_GGUF_MAX_DEPTH 8u

/* "uint32", "string", "array" ...; NULL for unknown types. */
const char *pccx_gguf_type_name(uint32_t type);

/* A string value: NUL-terminated copy (s[len] == '\0'); it may contain NUL bytes itself. */
typedef struct pccx_gguf_str {
	const char *s;
	uint64_t len;
} pccx_gguf_str;

struct pccx_gguf_value;

/*
 * An array value. Numeric and bool elements are in `data` as a native, aligned C array
 * of the element type (uint8_t ... double; bool as uint8_t 0/1); string elements in
 * `strs`; nested arrays in `items` (each of type PCCX_GGUF_ARRAY).
 */
typedef struct pccx_gguf_array {
	uint32_t elem_type;
	uint64_t n;
	const void *data;
	const pccx_gguf_str *strs;
	const struct pccx_gguf_value *items;
} pccx_gguf_array;

typedef struct pccx_gguf_value {
	uint32_t type;		/* pccx_gguf_type */
	union {
		uint64_t u;	/* UINT8/16/32/64 */
		int64_t i;	/* INT8/16/32/64 */
		double f;	/* FLOAT32 (exact) / FLOAT64 */
		bool b;
		pccx_gguf_str str;
		pccx_gguf_array arr;
	} v;
} pccx_gguf_value;

typedef struct pccx_gguf_tensor {
	const char *name;
	uint32_t n_dims;	/* 1..4 */
	/* ggml order: ne[0] is the row length; dimensions past n_dims are 1 */
	uint64_t ne[PCCX_GGUF_MAX_DIMS];
	uint32_t type;		/* pccx_ggml_type */
	uint64_t offset;	/* from the start of the data section */
	uint64_t n_elems;
	uint64_t nbytes;
	const uint8_t *data;	/* inside the mapping; valid while the pccx_gguf is open */
} pccx_gguf_tensor;

typedef struct pccx_gguf pccx_gguf;

/* Open and validate a GGUF file (memory-mapped; tensor data is never copied). */
PCCX_MUST_CHECK int pccx_gguf_open(pccx_gguf **out, const char *path, pccx_diag *d);
/*
 * Validate a GGUF image in memory. `buf` must stay valid and unchanged until
 * pccx_gguf_close(); `name` is used in diagnostics.
 */
PCCX_MUST_CHECK int pccx_gguf_open_mem(pccx_gguf **out, const void *buf, size_t len,
				       const char *name, pccx_diag *d);
void pccx_gguf_close(pccx_gguf *g);

const char *pccx_gguf_name(const pccx_gguf *g);
uint32_t pccx_gguf_version(const pccx_gguf *g);
uint64_t pccx_gguf_alignment(const pccx_gguf *g);
/* File offset of the tensor data section. */
uint64_t pccx_gguf_data_offset(const pccx_gguf *g);

/* Metadata in file order. */
uint64_t pccx_gguf_n_kv(const pccx_gguf *g);
const char *pccx_gguf_kv_key(const pccx_gguf *g, uint64_t i);
const pccx_gguf_value *pccx_gguf_kv_value(const pccx_gguf *g, uint64_t i);
/* Hash look-up; NULL when absent. */
const pccx_gguf_value *pccx_gguf_find(const pccx_gguf *g, const char *key);

/*
 * Typed getters. They fail with PCCX_ERR_NOT_FOUND when the key is absent, with
 * PCCX_ERR_FORMAT when its type does not fit and PCCX_ERR_RANGE when the value does not
 * fit the requested C type; the diag names the file and the key.
 * Integer getters accept every integer type; float getters accept FLOAT32 and FLOAT64.
 */
PCCX_MUST_CHECK int pccx_gguf_get_u32(const pccx_gguf *g, const char *key, uint32_t *out,
				      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_i32(const pccx_gguf *g, const char *key, int32_t *out,
				      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_u64(const pccx_gguf *g, const char *key, uint64_t *out,
				      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_i64(const pccx_gguf *g, const char *key, int64_t *out,
				      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_f32(const pccx_gguf *g, const char *key, float *out,
				      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_f64(const pccx_gguf *g, const char *key, double *out,
				      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_bool(const pccx_gguf *g, const char *key, bool *out,
				       pccx_diag *d);
/* `len` may be NULL. The string is owned by `g`. */
PCCX_MUST_CHECK int pccx_gguf_get_str(const pccx_gguf *g, const char *key, const char **out,
				      uint64_t *len, pccx_diag *d);
/* Any array; `elem_type` PCCX_GGUF_TYPE_COUNT accepts every element type. */
PCCX_MUST_CHECK int pccx_gguf_get_array(const pccx_gguf *g, const char *key, uint32_t elem_type,
					const pccx_gguf_array **out, pccx_diag *d);
/* Arrays for the tokenizer (tokenizer.ggml.tokens / scores / token_type / merges ...). */
PCCX_MUST_CHECK int pccx_gguf_get_str_array(const pccx_gguf *g, const char *key,
					    const pccx_gguf_str **items, uint64_t *n, pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_f32_array(const pccx_gguf *g, const char *key,
					    const float **items, uint64_t *n, pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_get_i32_array(const pccx_gguf *g, const char *key,
					    const int32_t **items, uint64_t *n, pccx_diag *d);
/* Element i of an integer or bool array as int64 (uint64 values above INT64_MAX fail). */
PCCX_MUST_CHECK int pccx_gguf_array_i64(const pccx_gguf_array *a, uint64_t i, int64_t *out);

/* Tensors in file order, and by name. */
uint64_t pccx_gguf_n_tensors(const pccx_gguf *g);
const pccx_gguf_tensor *pccx_gguf_tensor_at(const pccx_gguf *g, uint64_t i);
const pccx_gguf_tensor *pccx_gguf_find_tensor(const pccx_gguf *g, const char *name);
/* Like find_tensor but fails with PCCX_ERR_NOT_FOUND and a diag naming file and tensor. */
PCCX_MUST_CHECK int pccx_gguf_get_tensor(const pccx_gguf *g, const char *name,
					 const pccx_gguf_tensor **out, pccx_diag *d);
/* Decode rows [row, row + n_rows) of a tensor (rows are ne[0] long) into floats. */
PCCX_MUST_CHECK int pccx_gguf_decode_rows(const pccx_gguf *g, const pccx_gguf_tensor *t,
					  uint64_t row, uint64_t n_rows, float *dst, pccx_diag *d);

/*
 * Convert a whole tensor to Q4 (rows of ne[0] elements; ne[0] must be a multiple of 32).
 * `nibbles` holds n_elems / 2 bytes, `scales` n_elems / 32 values.
 */
PCCX_MUST_CHECK int pccx_gguf_tensor_to_q4(const pccx_gguf *g, const pccx_gguf_tensor *t,
					   uint8_t *nibbles, uint16_t *scales, pccx_q4_error *err,
					   pccx_diag *d);

/* ===================================================================================== */
/* GGUF writer                                                                            */

typedef struct pccx_gguf_writer pccx_gguf_writer;

PCCX_MUST_CHECK int pccx_gguf_writer_new(pccx_gguf_writer **out, pccx_diag *d);
void pccx_gguf_writer_free(pccx_gguf_writer *w);
/* Format version to write: 3 (default) or 2; the layouts are the same on little-endian. */
PCCX_MUST_CHECK int pccx_gguf_writer_set_version(pccx_gguf_writer *w, uint32_t version,
						 pccx_diag *d);
/*
 * Data alignment (power of two). Also stores "general.alignment" (UINT32); setting that key
 * through pccx_gguf_writer_set_value() has the same effect.
 */
PCCX_MUST_CHECK int pccx_gguf_writer_set_alignment(pccx_gguf_writer *w, uint32_t alignment,
						   pccx_diag *d);

/* Metadata, written in the order added. Duplicate keys are refused. */
PCCX_MUST_CHECK int pccx_gguf_writer_set_u8(pccx_gguf_writer *w, const char *key, uint8_t v,
					    pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_i8(pccx_gguf_writer *w, const char *key, int8_t v,
					    pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_u16(pccx_gguf_writer *w, const char *key, uint16_t v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_i16(pccx_gguf_writer *w, const char *key, int16_t v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_u32(pccx_gguf_writer *w, const char *key, uint32_t v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_i32(pccx_gguf_writer *w, const char *key, int32_t v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_u64(pccx_gguf_writer *w, const char *key, uint64_t v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_i64(pccx_gguf_writer *w, const char *key, int64_t v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_f32(pccx_gguf_writer *w, const char *key, float v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_f64(pccx_gguf_writer *w, const char *key, double v,
					     pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_bool(pccx_gguf_writer *w, const char *key, bool v,
					      pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_str(pccx_gguf_writer *w, const char *key, const char *s,
					     pccx_diag *d);
/* Array of a numeric or bool type; `data` is a C array of the element type (bool as bool). */
PCCX_MUST_CHECK int pccx_gguf_writer_set_array(pccx_gguf_writer *w, const char *key,
					       uint32_t elem_type, const void *data, uint64_t n,
					       pccx_diag *d);
PCCX_MUST_CHECK int pccx_gguf_writer_set_str_array(pccx_gguf_writer *w, const char *key,
						   const char *const *strs, uint64_t n,
						   pccx_diag *d);
/* Any value, including nested arrays (e.g. copied from a pccx_gguf). */
PCCX_MUST_CHECK int pccx_gguf_writer_set_value(pccx_gguf_writer *w, const char *key,
					       const pccx_gguf_value *v, pccx_diag *d);
/*
 * Add a tensor. `ne` has `n_dims` entries (ggml order). `data` (exactly the tensor's byte
 * size, `nbytes`) is not copied: it must stay valid until the writer has written.
 */
PCCX_MUST_CHECK int pccx_gguf_writer_add_tensor(pccx_gguf_writer *w, const char *name,
						uint32_t type, uint32_t n_dims, const uint64_t *ne,
						const void *data, uint64_t nbytes, pccx_diag *d);
/*
 * Write the file: to a temporary file next to `path`, then rename. On failure (e.g. a
 * full disk) nothing is left at `path` (an existing file there is untouched) and the
 * diag names the path and the cause.
 */
PCCX_MUST_CHECK int pccx_gguf_writer_write(pccx_gguf_writer *w, const char *path, pccx_diag *d);
/* Write to a malloc'ed buffer (caller frees). */
PCCX_MUST_CHECK int pccx_gguf_writer_write_mem(pccx_gguf_writer *w, uint8_t **buf, size_t *len,
					       pccx_diag *d);

/* ===================================================================================== */
/* safetensors reader                                                                     */
/*
 * A file is an 8-byte little-endian header length N, N bytes of JSON header mapping tensor
 * names to {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional
 * "__metadata__" object of strings), then the data. Offsets are relative to the data; the
 * tensors must cover it exactly (no holes, no overlap, nothing after the last one).
 * Tensor data is used in place (memory-mapped). F32, F16 and BF16 tensors are readable;
 * tensors of the other safetensors dtypes are listed (their extents are validated) but
 * refused when accessed; an unknown dtype string refuses the file.
 */

#define PCCX_ST_MAX_DIMS 8u
/* Largest header accepted (the reference implementation's limit). */
#define PCCX_ST_MAX_HEADER ((uint64_t)100 << 20)
/* `type` of a tensor whose dtype is valid safetensors but not readable here. */
#define PCCX_ST_UNSUPPORTED UINT32_MAX

typedef struct pccx_st_tensor {
	const char *name;
	const char *dtype;	/* as written: "BF16", "I64" ... */
	uint32_t type;		/* PCCX_GGML_F32 / F16 / BF16, or PCCX_ST_UNSUPPORTED */
	uint32_t n_dims;	/* 0 for a scalar */
	uint64_t shape[PCCX_ST_MAX_DIMS];	/* row-major: shape[n_dims - 1] is the row length */
	uint64_t n_elems;
	uint64_t nbytes;
	uint64_t offset;	/* from the start of the data section */
	const uint8_t *data;
	const char *file;	/* the shard holding it */
} pccx_st_tensor;

typedef struct pccx_safetensors pccx_safetensors;

/*
 * Open a checkpoint: `path` is a .safetensors file, a model.safetensors.index.json (every
 * shard named in its weight_map is opened and checked to hold the tensors the index
 * assigns to it; a tensor in two shards is refused), or a directory holding either
 * (the index is preferred).
 */
PCCX_MUST_CHECK int pccx_st_open(pccx_safetensors **out, const char *path, pccx_diag *d);
/* One safetensors image in memory (kept by reference until pccx_st_close). */
PCCX_MUST_CHECK int pccx_st_open_mem(pccx_safetensors **out, const void *buf, size_t len,
				     const char *name, pccx_diag *d);
void pccx_st_close(pccx_safetensors *st);

uint64_t pccx_st_n_tensors(const pccx_safetensors *st);
const pccx_st_tensor *pccx_st_tensor_at(const pccx_safetensors *st, uint64_t i);
const pccx_st_tensor *pccx_st_find(const pccx_safetensors *st, const char *name);
/* Fails with PCCX_ERR_NOT_FOUND, or PCCX_ERR_UNSUPPORTED for a dtype other than F32/F16/BF16. */
PCCX_MUST_CHECK int pccx_st_get_tensor(const pccx_safetensors *st, const char *name,
				       const pccx_st_tensor **out, pccx_diag *d);
/* Value of a "__metadata__" entry (first shard that has it), or NULL. */
const char *pccx_st_metadata(const pccx_safetensors *st, const char *key);
/* The path given to pccx_st_open (or the name given to pccx_st_open_mem). */
const char *pccx_st_name(const pccx_safetensors *st);
/* Number of shard files (1 for a single file). */
uint64_t pccx_st_n_files(const pccx_safetensors *st);
/* Decode rows [row, row + n_rows) (rows are shape[n_dims - 1] long) into floats. */
PCCX_MUST_CHECK int pccx_st_decode_rows(const pccx_safetensors *st, const pccx_st_tensor *t,
					uint64_t row, uint64_t n_rows, float *dst, pccx_diag *d);

/* ===================================================================================== */
/* Gemma 3n text configuration (Hugging Face config.json)                                 */

#define PCCX_HF_MAX_LAYERS 128u

typedef struct pccx_hf_config {
	uint32_t hidden_size;
	uint32_t num_hidden_layers;
	uint32_t intermediate_size[PCCX_HF_MAX_LAYERS];	/* per layer */
	uint32_t num_attention_heads;
	uint32_t num_key_value_heads;
	uint32_t head_dim;
	uint32_t vocab_size;
	uint32_t vocab_size_per_layer_input;
	uint32_t hidden_size_per_layer_input;
	uint32_t sliding_window;
	bool layer_is_sliding[PCCX_HF_MAX_LAYERS];	/* layer_types[i] == "sliding_attention" */
	double rope_theta;		/* full-attention layers */
	double rope_local_base_freq;	/* sliding layers */
	double rms_norm_eps;
	uint32_t altup_num_inputs;
	uint32_t altup_active_idx;
	uint32_t laurel_rank;
	uint32_t num_kv_shared_layers;
	float activation_sparsity[PCCX_HF_MAX_LAYERS];	/* per layer, 0 = dense */
	double final_logit_softcapping;	/* 0 when null */
	/* Bit i set when field i of the list in docs/model-files.md took its default. */
	uint32_t defaulted;
} pccx_hf_config;

/*
 * Read the text part of a config.json of any family the loaders take: model_type selects it
 * ("gemma", "gemma2", "gemma3_text", "gemma4_text" with the keys at the root; "gemma3",
 * "gemma4" with the language model under "text_config"; "gemma3n", "gemma3n_text" or none:
 * Gemma 3n, under "text_config" when the root has one, as a multimodal
 * Gemma3nForConditionalGeneration config does). Required: hidden_size, num_hidden_layers,
 * intermediate_size (a number or one per layer), num_attention_heads, num_key_value_heads,
 * head_dim, vocab_size (and what the family needs beside: Gemma 4's
 * hidden_size_per_layer_input and layer_types). The others take the Hugging Face defaults of
 * the family when absent (listed in docs/model-files.md §5). This structure holds the fields
 * the families share and Gemma 3n's; the fields only Gemma 1, 2, 3 or 4 have (soft-caps, the
 * global layers' heads and RoPE, ...) are read by the model loaders (pccx_model_load). Every
 * value is checked (ranges, list lengths, consistency); the diag names the file and the field.
 */
PCCX_MUST_CHECK int pccx_hf_config_read(const char *path, pccx_hf_config *cfg, pccx_diag *d);
PCCX_MUST_CHECK int pccx_hf_config_parse(const void *json, size_t len, const char *name,
					  pccx_hf_config *cfg, pccx_diag *d);
/* The default E4B configuration (the values of the published config.json). */
void pccx_hf_config_e4b(pccx_hf_config *cfg);

/* ===================================================================================== */
/* Gemma 3n text-decoder tensor map                                                       */

typedef enum pccx_tensor_map_tensor {
	/* global */
	PCCX_TENSOR_MAP_TOKEN_EMBD,
	PCCX_TENSOR_MAP_PER_LAYER_TOKEN_EMBD,
	PCCX_TENSOR_MAP_PER_LAYER_MODEL_PROJ,
	PCCX_TENSOR_MAP_PER_LAYER_PROJ_NORM,
	PCCX_TENSOR_MAP_ALTUP_PROJ,		/* GGUF: one stacked tensor; safetensors: parts 0..A-2 */
	PCCX_TENSOR_MAP_ALTUP_UNEMBD_PROJ,	/* likewise */
	PCCX_TENSOR_MAP_OUTPUT_NORM,
	/* per layer */
	PCCX_TENSOR_MAP_ATTN_NORM,
	PCCX_TENSOR_MAP_ATTN_Q,
	PCCX_TENSOR_MAP_ATTN_K,
	PCCX_TENSOR_MAP_ATTN_V,
	PCCX_TENSOR_MAP_ATTN_OUTPUT,
	PCCX_TENSOR_MAP_ATTN_Q_NORM,
	PCCX_TENSOR_MAP_ATTN_K_NORM,
	PCCX_TENSOR_MAP_POST_ATTN_NORM,
	PCCX_TENSOR_MAP_FFN_NORM,
	PCCX_TENSOR_MAP_FFN_GATE,
	PCCX_TENSOR_MAP_FFN_UP,
	PCCX_TENSOR_MAP_FFN_DOWN,
	PCCX_TENSOR_MAP_POST_FFW_NORM,
	PCCX_TENSOR_MAP_LAUREL_L,
	PCCX_TENSOR_MAP_LAUREL_R,
	PCCX_TENSOR_MAP_LAUREL_POST_NORM,
	PCCX_TENSOR_MAP_ALTUP_ROUTER,
	PCCX_TENSOR_MAP_ALTUP_ROUTER_NORM,
	PCCX_TENSOR_MAP_ALTUP_PREDICT_COEF,
	PCCX_TENSOR_MAP_ALTUP_CORRECT_COEF,
	PCCX_TENSOR_MAP_ALTUP_CORRECT_SCALE,
	PCCX_TENSOR_MAP_INP_GATE,
	PCCX_TENSOR_MAP_PROJ,
	PCCX_TENSOR_MAP_POST_NORM,
	PCCX_TENSOR_MAP_COUNT
} pccx_tensor_map_tensor;

/* Short key ("ffn_up", the GGUF name without "blk.N." and ".weight"); NULL if out of range. */
const char *pccx_tensor_map_key(int id);
/* Id of a short key, or -1. */
int pccx_tensor_map_by_key(const char *key);
/* True for tensors that exist once per layer. */
bool pccx_tensor_map_per_layer(int id);
/* Number of safetensors tensors making up the GGUF one (altup_num_inputs - 1 or 1). */
uint32_t pccx_tensor_map_st_parts(const pccx_hf_config *cfg, int id);

/* Names. `layer` is ignored for global tensors, `part` for non-stacked ones. */
PCCX_MUST_CHECK int pccx_tensor_map_gguf_name(int id, uint32_t layer, char *buf, size_t size);
PCCX_MUST_CHECK int pccx_tensor_map_st_name(int id, uint32_t layer, uint32_t part, char *buf,
				     size_t size);
/*
 * Expected shape in PyTorch order (outermost first; a GGUF tensor's ne is the reverse).
 * For the stacked AltUp projections the GGUF shape is (A-1, D, D) and each safetensors
 * part (D, D); `for_gguf` selects which.
 */
PCCX_MUST_CHECK int pccx_tensor_map_expected_shape(const pccx_hf_config *cfg, int id,
						   uint32_t layer,
					    bool for_gguf, uint32_t *n_dims, uint64_t shape[4],
					    pccx_diag *d);
/*
 * Find a tensor and check its shape. Missing tensors fail with PCCX_ERR_NOT_FOUND, shape
 * mismatches with PCCX_ERR_FORMAT; the diag names the file, the tensor, the expected and
 * the actual shape. The GGUF per_layer_token_embd may have vocab_size rows instead of
 * vocab_size_per_layer_input (newer converters pad it).
 */
PCCX_MUST_CHECK int pccx_tensor_map_find_gguf(const pccx_gguf *g, const pccx_hf_config *cfg, int id,
				       uint32_t layer, const pccx_gguf_tensor **out,
				       pccx_diag *d);
PCCX_MUST_CHECK int pccx_tensor_map_find_st(const pccx_safetensors *st, const pccx_hf_config *cfg,
				     int id, uint32_t layer, uint32_t part,
				     const pccx_st_tensor **out, pccx_diag *d);
/* Check every text-decoder tensor of every layer (first failure reported). */
PCCX_MUST_CHECK int pccx_tensor_map_check_gguf(const pccx_gguf *g, const pccx_hf_config *cfg,
					pccx_diag *d);
PCCX_MUST_CHECK int pccx_tensor_map_check_st(const pccx_safetensors *st, const pccx_hf_config *cfg,
				      pccx_diag *d);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* PCCX_MODELFILE_H */
