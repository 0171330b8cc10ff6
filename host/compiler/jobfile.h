/* SPDX-License-Identifier: MIT */
/*
 * Job files: a job (instructions, host DMA descriptors, weight-stream
 * descriptors) plus the table of buffers it names, as one little-endian file.
 * Layout in docs/job.md. A bare program file is just the 64-bit words.
 */
#ifndef PCCX_JOBFILE_H
#define PCCX_JOBFILE_H

#include <stddef.h>
#include <stdint.h>
#include "pccx/status.h"
#include "pccx_job.h"

#define PCCX_JOBFILE_MAGIC "PCCXJOB"   /* 8 bytes with the NUL */
#define PCCX_JOBFILE_VERSION 1u
#define PCCX_JOBFILE_MAX_BUFS 4096u
#define PCCX_BUF_MAX_BYTES (1ull << 40)   /* largest buffer a job may declare */

struct pccx_buf_info {
	uint32_t handle;
	uint32_t access;   /* PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE */
	uint64_t size;
};

/*
 * The one rule on a buffer's declaration, applied by the job-file reader and by the in-process
 * backend alike, so that what `pccx validate` accepts `pccx sim` can create: size 1 ..
 * PCCX_BUF_MAX_BYTES, access a non-empty set of PCCX_BUF_DEV_READ and PCCX_BUF_DEV_WRITE and
 * nothing else. Returns PCCX_OK, or PCCX_ERR_FORMAT / PCCX_ERR_RANGE with the problem written
 * to why (e.g. "access 0xffffffff has undefined bits 0xfffffffc ...").
 */
int pccx__buf_decl_check(uint64_t size, uint32_t access, char *why, size_t why_size);

struct pccx_jobfile {
	uint64_t *insn;
	uint32_t n_insn;
	struct pccx_dma_desc *dma;
	uint32_t n_dma;
	struct pccx_stream_desc *stream;
	uint32_t n_stream;
	struct pccx_buf_info *buf;
	uint32_t n_buf;
	int is_program;    /* parsed from a bare program file: no descriptors, no buffers */
};

/* Parse a job file or (if it does not start with the magic) a program file. */
PCCX_MUST_CHECK int pccx__jobfile_parse(const uint8_t *data, size_t len, const char *name,
					struct pccx_jobfile *jf, pccx_diag *d);
PCCX_MUST_CHECK int pccx__jobfile_serialize(const struct pccx_jobfile *jf, uint8_t **out,
					    size_t *len, pccx_diag *d);
void pccx__jobfile_free(struct pccx_jobfile *jf);

/* Lookup callback over jf->buf for pccx__validate(). */
int pccx__jobfile_lookup(void *jf, uint32_t handle, uint64_t *size, uint32_t *access);

/* Validate jf; on refusal fill d with a message naming the word/descriptor and field. */
PCCX_MUST_CHECK int pccx__jobfile_validate(const struct pccx_jobfile *jf, const char *name,
					   struct pccx_vresult *res, pccx_diag *d);

/* One-line description of a validator refusal, e.g.
 * "instruction 12 (cvo func=mul ...): field len: LENGTH: length is invalid ...". */
void pccx__vresult_describe(const struct pccx_vresult *res, const uint64_t *insn, uint32_t n_insn,
			    char *buf, size_t size);

#endif
