/* SPDX-License-Identifier: MIT */
/* llama.cpp Q4_0 rows into the device's Q4 row records, whole rows at a time. */
#ifndef PCCX_Q4_0_ROWS_H
#define PCCX_Q4_0_ROWS_H

#include <stdint.h>

/*
 * One row of cols / 32 Q4_0 blocks (18 bytes each: FP16 scale, 16 bytes of nibbles) at src
 * into a device Q4 row record at rec (docs/reference.md §3): the scales copied bit for bit to
 * rec[0 .. cols/16), the nibbles re-ordered to the device's order after the scale beats. The
 * bytes are those of pccx__q4_from_ggml_q4_0 block by block (test_gguf_load_mem checks it),
 * found 8 or 16 bytes at a time instead of a nibble at a time: loading a model is mostly this.
 * The scale padding of rec is not written. Returns the first block whose scale is Inf or NaN
 * (the row is refused: pccx_q4_0_scale_finite), or cols / 32 when every scale is finite.
 */
uint32_t pccx__q4_0_row_import(const uint8_t *src, uint32_t cols, uint8_t *rec);

/* Its variants, the same bytes: 64-bit words (any CPU), SSE2 (x86-64; the one chosen there). */
uint32_t pccx__q4_0_row_import_words(const uint8_t *src, uint32_t cols, uint8_t *rec);
#ifdef __SSE2__
uint32_t pccx__q4_0_row_import_sse2(const uint8_t *src, uint32_t cols, uint8_t *rec);
#endif

#endif /* PCCX_Q4_0_ROWS_H */
