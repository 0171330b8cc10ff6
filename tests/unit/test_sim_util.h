/* SPDX-License-Identifier: MIT */
/* Helpers shared by the simulator and command-engine tests: encoders, data, job assembly. */
#ifndef PCCX_TEST_SIM_UTIL_H
#define PCCX_TEST_SIM_UTIL_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "backend_sim.h"
#include "pccx_isa.h"
#include "pccx_job.h"
#include "pccx_num.h"
#include "pccx_sim.h"

/* Checked register access to a simulator; `io` is the pccx_sim (engine ops take void *). */
static inline uint32_t t_rd32(void *io, uint32_t off)
{
	uint32_t v = 0;

	ck_assert_int_eq(pccx__sim_mmio_read32(io, off, &v), 0);
	return v;
}

static inline void t_wr32(void *io, uint32_t off, uint32_t v)
{
	ck_assert_int_eq(pccx__sim_mmio_write32(io, off, v), 0);
}

static inline uint64_t t_rd64(void *io, uint32_t off)
{
	uint64_t v = 0;

	ck_assert_int_eq(pccx__sim_mmio_read64(io, off, &v), 0);
	return v;
}

static inline void t_wr64(void *io, uint32_t off, uint64_t v)
{
	ck_assert_int_eq(pccx__sim_mmio_write64(io, off, v), 0);
}

static inline uint64_t t_memset(unsigned cache, unsigned entry, unsigned a, unsigned b, unsigned c)
{
	return ((uint64_t)PCCX_OP_MEMSET << 60) | PCCX_PUT(C, cache, cache) |
	       PCCX_PUT(C, entry, entry) | PCCX_PUT(C, a, a) | PCCX_PUT(C, b, b) |
	       PCCX_PUT(C, c, c);
}

#define TF_WSCALE   (1u << 0)
#define TF_ACCM     (1u << 1)
#define TF_FINDEMAX (1u << 2)

static inline uint64_t t_matmul(unsigned op, uint32_t dest, uint32_t src, unsigned wshape,
				unsigned fshape, unsigned fl)
{
	return ((uint64_t)op << 60) | PCCX_PUT(A, dest, dest) | PCCX_PUT(A, src, src) |
	       PCCX_PUT(A, wshape, wshape) | PCCX_PUT(A, fshape, fshape) |
	       PCCX_PUT(A, w_scale, !!(fl & TF_WSCALE)) | PCCX_PUT(A, accm, !!(fl & TF_ACCM)) |
	       PCCX_PUT(A, findemax, !!(fl & TF_FINDEMAX));
}

static inline uint64_t t_memcpy(bool from_host, bool to_host, uint32_t dest, uint32_t src,
				uint32_t desc, unsigned fshape, bool async)
{
	return ((uint64_t)PCCX_OP_MEMCPY << 60) | PCCX_PUT(B, from_host, from_host) |
	       PCCX_PUT(B, to_host, to_host) | PCCX_PUT(B, dest, dest) | PCCX_PUT(B, src, src) |
	       PCCX_PUT(B, desc, desc) | PCCX_PUT(B, fshape, fshape) | PCCX_PUT(B, async, async);
}

/* flags: PCCX_CVOF_* plus bit 0 = async */
static inline uint64_t t_cvo(unsigned func, uint32_t src, uint32_t dst, uint32_t len,
			     uint32_t flags)
{
	return ((uint64_t)PCCX_OP_CVO << 60) | PCCX_PUT(D, func, func) | PCCX_PUT(D, src, src) |
	       PCCX_PUT(D, dst, dst) | PCCX_PUT(D, len, len) | (flags & 0x3fu);
}

/* xorshift64* for test data */
static inline uint64_t t_rand(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 0x2545F4914F6CDD1Dull;
}

/*
 * An FP32 value uniform-ish in [-range, range) (range a power of two), with a full 24-bit
 * significand (but for the rare |x| < range / 2^16), so that results depend on every bit
 * L2 holds: a 40-bit integer, rounded to FP32, times a power of two.
 */
static inline float t_f32(uint64_t *st, float range)
{
	int64_t r = (int64_t)(t_rand(st) >> 24) - ((int64_t)1 << 39);

	return (float)r * (range / 549755813888.0f);   /* 2^39 */
}

/* A job under construction (fixed capacities, tests only). */
struct tjob {
	uint64_t insn[256];
	uint32_t n_insn;
	struct pccx_dma_desc dma[32];
	uint32_t n_dma;
	struct pccx_stream_desc stream[64];
	uint32_t n_stream;
};

static inline void tj_add(struct tjob *j, uint64_t w)
{
	ck_assert_uint_lt(j->n_insn, 256);
	j->insn[j->n_insn++] = w;
}

static inline uint32_t tj_dma(struct tjob *j, uint32_t handle, uint32_t flags, uint64_t off,
			      uint64_t len)
{
	struct pccx_dma_desc *d = &j->dma[j->n_dma];

	d->handle = handle;
	d->flags = flags;
	d->offset = off;
	d->length = len;
	return j->n_dma++;
}

/* The stream descriptors of one matmul whose row records start at `off` of `handle`. */
static inline void tj_streams(struct tjob *j, const struct pccx_wshape *ws, uint32_t handle,
			      uint64_t off)
{
	unsigned p;

	for (p = 0; p < PCCX_WSTREAM_PORTS; p++) {
		if (!pccx__wstream_port_bytes(ws, p))
			continue;
		j->stream[j->n_stream].handle = handle;
		j->stream[j->n_stream].port = p;
		j->stream[j->n_stream].offset = off + pccx__wstream_port_offset(ws, p);
		j->stream[j->n_stream].length = pccx__wstream_port_bytes(ws, p);
		j->n_stream++;
	}
}

static inline struct pccx_job_view tj_view(const struct tjob *j)
{
	struct pccx_job_view v = { j->insn, j->n_insn, j->dma, j->n_dma, j->stream, j->n_stream };

	return v;
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* Little-endian 32-bit values: FP32 L2 elements and f32 weight-stream values. */
static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void put_f32(uint8_t *p, float v)
{
	put32(p, pccx_f32_bits(v));
}

static inline float get_f32(const uint8_t *p)
{
	return pccx_f32_from_bits(get32(p));
}

#endif
