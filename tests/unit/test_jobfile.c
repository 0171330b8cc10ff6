/* SPDX-License-Identifier: MIT */
/*
 * Job files (host/compiler/jobfile.c): the byte layout, serialise/parse round
 * trips, every malformed file refused with its message, bare program files,
 * and the validator's messages as pccx__jobfile_validate reports them.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_sim.h"
#include "jobfile.h"
#include "pccx_asm.h"

#define HDR 32u

/* ---- helpers ---------------------------------------------------------------------- */

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A header with the given counts, followed by `extra` zero bytes. */
static uint8_t *header(uint32_t version, uint32_t ni, uint32_t nd, uint32_t ns, uint32_t nb,
		       uint32_t rsv, size_t extra)
{
	uint8_t *b = calloc(1, HDR + extra);

	ck_assert_ptr_nonnull(b);
	memcpy(b, "PCCXJOB", 8);
	le32(b + 8, version);
	le32(b + 12, ni);
	le32(b + 16, nd);
	le32(b + 20, ns);
	le32(b + 24, nb);
	le32(b + 28, rsv);
	return b;
}

/*
 * Parse from an exactly-sized heap copy (so ASan sees any read past the end)
 * and return the status; the message lands in d.
 */
static int parse(const uint8_t *data, size_t len, struct pccx_jobfile *jf, pccx_diag *d)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, data, len);
	memset(d, 0, sizeof(*d));
	rc = pccx__jobfile_parse(copy, len, "t.job", jf, d);
	free(copy);
	return rc;
}

/* The parse must fail with status and a message naming the file and containing needle. */
static void refused(const uint8_t *data, size_t len, int status, const char *needle)
{
	struct pccx_jobfile jf;
	pccx_diag d;
	int rc = parse(data, len, &jf, &d);

	ck_assert_msg(rc == status, "expected %s, got %s (%s)", pccx_status_name(status),
		      pccx_status_name(rc), d.msg);
	ck_assert_msg(strncmp(d.msg, "t.job: ", 7) == 0, "message '%s' does not name the file",
		      d.msg);
	ck_assert_msg(strstr(d.msg, needle) != NULL, "message '%s' lacks '%s'", d.msg, needle);
	ck_assert_int_eq(d.status, status);
	/* nothing is left allocated, and freeing is still safe */
	ck_assert_ptr_null(jf.insn);
	ck_assert_ptr_null(jf.dma);
	ck_assert_ptr_null(jf.stream);
	ck_assert_ptr_null(jf.buf);
	pccx__jobfile_free(&jf);
}

static uint64_t A(const char *line)
{
	struct pccx_asm_error e;
	uint64_t w = 0;
	bool has = false;

	ck_assert_int_eq(pccx__asm_line(line, strlen(line), &w, &has, &e), 0);
	ck_assert(has);
	return w;
}

/* A small, valid job: x (16 FP32, 4 words) in, y = W x (f32 4 x 16: a 64-byte row per
 * port), y (4 FP32, 1 word) out. */
static uint64_t g_insn[6];
static struct pccx_dma_desc g_dma[2];
static struct pccx_stream_desc g_stream[4];
static struct pccx_buf_info g_buf[3];

static struct pccx_jobfile sample_job(void)
{
	struct pccx_jobfile jf;
	unsigned p;

	g_insn[0] = A("memset cache=fmap entry=0 a=16 b=1 c=1");
	g_insn[1] = A("memset cache=fmap entry=1 a=4 b=1 c=1");
	g_insn[2] = A("memset cache=weight entry=0 a=4 b=16 c=1");
	g_insn[3] = A("memcpy dest=0 src=0 desc=0 fshape=0 +from_host");
	g_insn[4] = A("gemv dest=0x10 src=0 wshape=0 fshape=0");
	g_insn[5] = A("memcpy dest=0 src=0x10 desc=1 fshape=1 +to_host");
	g_dma[0] = (struct pccx_dma_desc){ 10, PCCX_DMA_TO_DEVICE, 0, 64 };
	g_dma[1] = (struct pccx_dma_desc){ 11, PCCX_DMA_FROM_DEVICE, 16, 16 };
	for (p = 0; p < 4; p++)
		g_stream[p] = (struct pccx_stream_desc){ 12, p, 64 * p, 64 };
	g_buf[0] = (struct pccx_buf_info){ 10, PCCX_BUF_DEV_READ, 64 };
	g_buf[1] = (struct pccx_buf_info){ 11, PCCX_BUF_DEV_WRITE, 32 };
	g_buf[2] = (struct pccx_buf_info){ 12, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE, 256 };
	memset(&jf, 0, sizeof(jf));
	jf.insn = g_insn;
	jf.n_insn = 6;
	jf.dma = g_dma;
	jf.n_dma = 2;
	jf.stream = g_stream;
	jf.n_stream = 4;
	jf.buf = g_buf;
	jf.n_buf = 3;
	return jf;
}

static void serialize(const struct pccx_jobfile *jf, uint8_t **out, size_t *len)
{
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__jobfile_serialize(jf, out, len, &d), PCCX_OK);
}

/* ---- layout and round trip ------------------------------------------------------------- */

START_TEST(serialize_layout)
{
	struct pccx_jobfile jf = sample_job();
	uint8_t *b;
	size_t len;

	serialize(&jf, &b, &len);
	ck_assert_uint_eq(len, HDR + 6 * 8 + 6 * 24 + 3 * 16);
	ck_assert(memcmp(b, "PCCXJOB\0", 8) == 0);
	ck_assert(memcmp(b + 8, "\x01\0\0\0" "\x06\0\0\0" "\x02\0\0\0" "\x04\0\0\0" "\x03\0\0\0"
			 "\0\0\0\0", 24) == 0);
	/* words little-endian, then DMA, stream and buffer records in that order */
	ck_assert_uint_eq(b[HDR + 7], (uint8_t)(g_insn[0] >> 56));
	ck_assert_uint_eq(b[HDR], (uint8_t)g_insn[0]);
	ck_assert(memcmp(b + HDR + 48, "\x0a\0\0\0" "\x01\0\0\0" "\0\0\0\0\0\0\0\0"
			 "\x40\0\0\0\0\0\0\0", 24) == 0);
	ck_assert(memcmp(b + HDR + 48 + 2 * 24 + 24, "\x0c\0\0\0" "\x01\0\0\0"
			 "\x40\0\0\0\0\0\0\0" "\x40\0\0\0\0\0\0\0", 24) == 0);
	ck_assert(memcmp(b + len - 16, "\x0c\0\0\0" "\x03\0\0\0" "\0\x01\0\0\0\0\0\0", 16) == 0);
	free(b);
}
END_TEST

START_TEST(round_trip)
{
	struct pccx_jobfile jf = sample_job(), back;
	uint8_t *b, *b2;
	size_t len, len2;
	pccx_diag d;
	uint32_t i;

	/* values that use every byte of every field (that a buffer record may hold) */
	g_dma[1].offset = 0xfedcba9876543210ull;
	g_stream[3].length = 0x0123456789abcdefull;
	g_buf[2].size = 0xfedcba9876ull;
	g_buf[2].handle = 0xffffffffu;
	g_buf[1].access = PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE;
	serialize(&jf, &b, &len);
	ck_assert_int_eq(parse(b, len, &back, &d), PCCX_OK);
	ck_assert_int_eq(back.is_program, 0);
	ck_assert_uint_eq(back.n_insn, jf.n_insn);
	ck_assert_uint_eq(back.n_dma, jf.n_dma);
	ck_assert_uint_eq(back.n_stream, jf.n_stream);
	ck_assert_uint_eq(back.n_buf, jf.n_buf);
	for (i = 0; i < jf.n_insn; i++)
		ck_assert_uint_eq(back.insn[i], jf.insn[i]);
	for (i = 0; i < jf.n_dma; i++)
		ck_assert(memcmp(&back.dma[i], &jf.dma[i], sizeof(jf.dma[i])) == 0);
	for (i = 0; i < jf.n_stream; i++)
		ck_assert(memcmp(&back.stream[i], &jf.stream[i], sizeof(jf.stream[i])) == 0);
	for (i = 0; i < jf.n_buf; i++) {
		ck_assert_uint_eq(back.buf[i].handle, jf.buf[i].handle);
		ck_assert_uint_eq(back.buf[i].access, jf.buf[i].access);
		ck_assert_uint_eq(back.buf[i].size, jf.buf[i].size);
	}
	serialize(&back, &b2, &len2);
	ck_assert_uint_eq(len2, len);
	ck_assert(memcmp(b, b2, len) == 0);
	pccx__jobfile_free(&back);
	ck_assert_ptr_null(back.insn);
	ck_assert_uint_eq(back.n_insn, 0);
	free(b);
	free(b2);
}
END_TEST

START_TEST(round_trip_empty_counts)
{
	struct pccx_jobfile jf, back;
	uint8_t *b;
	size_t len;
	pccx_diag d;

	memset(&jf, 0, sizeof(jf));
	serialize(&jf, &b, &len);
	ck_assert_uint_eq(len, HDR);
	ck_assert_int_eq(parse(b, len, &back, &d), PCCX_OK);
	ck_assert_uint_eq(back.n_insn + back.n_dma + back.n_stream + back.n_buf, 0);
	/* a job file without instructions parses, and the validator refuses it */
	{
		struct pccx_vresult res;

		ck_assert_int_eq(pccx__jobfile_validate(&back, "t.job", &res, &d),
				 PCCX_ERR_VALIDATE);
		ck_assert_int_eq(res.err, PCCX_ISA_E_JOB_EMPTY);
		ck_assert_str_eq(d.msg, "t.job: job: JOB_EMPTY: job has no instructions");
	}
	pccx__jobfile_free(&back);
	free(b);
}
END_TEST

/* ---- malformed job files --------------------------------------------------------------- */

START_TEST(truncated_header)
{
	uint8_t *b = header(1, 0, 0, 0, 0, 0, 0);
	size_t len;

	for (len = 8; len < HDR; len++) {
		char want[64];

		snprintf(want, sizeof(want), "truncated job header (%zu bytes)", len);
		refused(b, len, PCCX_ERR_FORMAT, want);
	}
	free(b);
}
END_TEST

START_TEST(wrong_version)
{
	uint8_t *b = header(2, 0, 0, 0, 0, 0, 0);

	refused(b, HDR, PCCX_ERR_UNSUPPORTED, "job file version 2 (expected 1)");
	le32(b + 8, 0);
	refused(b, HDR, PCCX_ERR_UNSUPPORTED, "job file version 0 (expected 1)");
	le32(b + 8, 0x01000000);
	refused(b, HDR, PCCX_ERR_UNSUPPORTED, "job file version 16777216 (expected 1)");
	free(b);
}
END_TEST

START_TEST(reserved_word)
{
	uint8_t *b = header(1, 0, 0, 0, 0, 1, 0);

	refused(b, HDR, PCCX_ERR_FORMAT, "reserved header word is not zero");
	le32(b + 28, 0x80000000u);
	refused(b, HDR, PCCX_ERR_FORMAT, "reserved header word is not zero");
	free(b);
}
END_TEST

/* Counts beyond the limits are refused from the header alone, before any allocation. */
START_TEST(counts_too_large)
{
	uint8_t *b;

	b = header(1, (1u << 20) + 1, 0, 0, 0, 0, 0);
	refused(b, HDR, PCCX_ERR_RANGE, "counts too large (insn 1048577, dma 0, stream 0, "
					"buffers 0)");
	free(b);
	b = header(1, 1, (1u << 17) + 1, 0, 0, 0, 0);
	refused(b, HDR, PCCX_ERR_RANGE, "dma 131073");
	free(b);
	b = header(1, 1, 0, (1u << 16) + 1, 0, 0, 0);
	refused(b, HDR, PCCX_ERR_RANGE, "stream 65537");
	free(b);
	b = header(1, 1, 0, 0, PCCX_JOBFILE_MAX_BUFS + 1, 0, 0);
	refused(b, HDR, PCCX_ERR_RANGE, "buffers 4097");
	free(b);
	b = header(1, ~0u, ~0u, ~0u, ~0u, 0, 0);
	refused(b, HDR, PCCX_ERR_RANGE, "counts too large");
	free(b);
	/* every count at its limit is not "too large": only the length is then wrong */
	b = header(1, 1u << 20, 1u << 17, 1u << 16, PCCX_JOBFILE_MAX_BUFS, 0, 0);
	refused(b, HDR, PCCX_ERR_FORMAT, "32 bytes but the header's counts need 13172768");
	free(b);
}
END_TEST

START_TEST(length_mismatch)
{
	struct pccx_jobfile jf = sample_job();
	uint8_t *b;
	size_t len;
	char want[96];

	serialize(&jf, &b, &len);
	snprintf(want, sizeof(want), "%zu bytes but the header's counts need %zu", len - 1, len);
	refused(b, len - 1, PCCX_ERR_FORMAT, want);
	snprintf(want, sizeof(want), "%zu bytes but the header's counts need %zu", len - 16, len);
	refused(b, len - 16, PCCX_ERR_FORMAT, want);
	free(b);
	/* one byte too many */
	b = header(1, 1, 0, 0, 0, 0, 9);
	refused(b, HDR + 9, PCCX_ERR_FORMAT, "41 bytes but the header's counts need 40");
	free(b);
	/* each record size counts: insn 8, descriptors 24, buffers 16 */
	b = header(1, 0, 1, 0, 0, 0, 16);
	refused(b, HDR + 16, PCCX_ERR_FORMAT, "48 bytes but the header's counts need 56");
	le32(b + 16, 0);
	le32(b + 20, 1);
	refused(b, HDR + 16, PCCX_ERR_FORMAT, "need 56");
	le32(b + 20, 0);
	le32(b + 24, 1);
	le32(b + HDR + 4, PCCX_BUF_DEV_READ);   /* a buffer record: handle 0, read, 16 bytes */
	b[HDR + 8] = 16;
	ck_assert_int_eq(parse(b, HDR + 16, &jf, &(pccx_diag){ 0 }), PCCX_OK);
	ck_assert_uint_eq(jf.n_buf, 1);
	pccx__jobfile_free(&jf);
	free(b);
}
END_TEST

START_TEST(duplicate_buffer_handle)
{
	struct pccx_jobfile jf = sample_job();
	uint8_t *b;
	size_t len;

	g_buf[2].handle = 10;
	serialize(&jf, &b, &len);
	refused(b, len, PCCX_ERR_FORMAT, "buffer handle 10 listed twice");
	free(b);
	/* the same handle with different sizes or access is still the same handle */
	g_buf[2].handle = 11;
	g_buf[2].size = 1;
	serialize(&jf, &b, &len);
	refused(b, len, PCCX_ERR_FORMAT, "buffer handle 11 listed twice");
	free(b);
}
END_TEST

/* The sample job with buffer 2 (handle 12) declared as (size, access): refused with needle. */
static void buffer_refused(uint64_t size, uint32_t access, int status, const char *needle)
{
	struct pccx_jobfile jf = sample_job();
	uint8_t *b;
	size_t len;
	char want[200];

	g_buf[2].size = size;
	g_buf[2].access = access;
	serialize(&jf, &b, &len);
	snprintf(want, sizeof(want), "t.job: buffer 2 (handle 12): %s", needle);
	refused(b, len, status, want);
	free(b);
}

/* A buffer record's access word holds only the two defined bits, and at least one of them. */
START_TEST(buffer_access_bits)
{
	struct pccx_jobfile jf, back;
	uint32_t access;
	uint8_t *b;
	size_t len;
	pccx_diag d;

	buffer_refused(256, 0xffffffffu, PCCX_ERR_FORMAT, "access 0xffffffff has undefined bits "
		       "0xfffffffc (defined: 0x1 device-read, 0x2 device-write)");
	buffer_refused(256, 0x4, PCCX_ERR_FORMAT, "access 0x4 has undefined bits 0x4 (");
	buffer_refused(256, 0x7, PCCX_ERR_FORMAT, "access 0x7 has undefined bits 0x4 (");
	buffer_refused(256, 0x80000001u, PCCX_ERR_FORMAT, "access 0x80000001 has undefined bits "
		       "0x80000000 (");
	buffer_refused(256, 0, PCCX_ERR_FORMAT, "access 0 grants the device neither read nor "
		       "write");
	for (access = 1; access <= 3; access++) {
		jf = sample_job();
		g_buf[2].access = access;
		serialize(&jf, &b, &len);
		ck_assert_int_eq(parse(b, len, &back, &d), PCCX_OK);
		ck_assert_uint_eq(back.buf[2].access, access);
		pccx__jobfile_free(&back);
		free(b);
	}
}
END_TEST

/* A buffer holds 1 .. 2^40 bytes. */
START_TEST(buffer_sizes)
{
	struct pccx_jobfile jf, back;
	uint8_t *b;
	size_t len;
	pccx_diag d;

	buffer_refused(0, 3, PCCX_ERR_FORMAT, "size 0");
	buffer_refused((1ull << 40) + 1, 3, PCCX_ERR_RANGE,
		       "size 1099511627777 is more than the limit of 1099511627776 bytes");
	buffer_refused(~0ull, 1, PCCX_ERR_RANGE, "size 18446744073709551615 is more than");
	/* the access word is checked first */
	buffer_refused(0, 8, PCCX_ERR_FORMAT, "access 0x8 has undefined bits 0x8");
	jf = sample_job();
	g_buf[2].size = 1ull << 40;
	serialize(&jf, &b, &len);
	ck_assert_int_eq(parse(b, len, &back, &d), PCCX_OK);
	ck_assert_uint_eq(back.buf[2].size, 1ull << 40);
	pccx__jobfile_free(&back);
	free(b);
}
END_TEST

/*
 * One rule: a buffer record the job-file reader accepts is one the in-process backend (what
 * `pccx sim` creates the job's buffers with) accepts, and the other way round. The device
 * has 48 address bits so that the backend's DMA space is not what decides.
 */
START_TEST(buffer_rule_matches_backend)
{
	static const uint64_t sizes[] = { 0, 1, 16, 4096, 1ull << 32, 1ull << 40,
					  (1ull << 40) + 1, 1ull << 63, ~0ull };
	static const uint32_t accesses[] = { 0, 1, 2, 3, 4, 5, 7, 8, 0x100, 0x80000000u,
					     0x80000003u, 0xffffffffu };
	static uint8_t host[16];
	struct pccx_sim_config cfg;
	struct pccx_sim_backend *sb;
	pccx_diag d = { 0 };
	size_t i, k;

	pccx__sim_config_default(&cfg);
	cfg.dma_address_bits = 48;
	ck_assert_int_eq(pccx__sim_backend_create(&cfg, &sb, &d), 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (k = 0; k < sizeof(accesses) / sizeof(accesses[0]); k++) {
			struct pccx_jobfile jf = sample_job(), back;
			uint32_t h = 0;
			uint8_t *b;
			size_t len;
			int file_ok, sim_ok;

			g_buf[2].size = sizes[i];
			g_buf[2].access = accesses[k];
			serialize(&jf, &b, &len);
			file_ok = parse(b, len, &back, &d) == PCCX_OK;
			if (file_ok)
				pccx__jobfile_free(&back);
			free(b);
			/* imported, not allocated: nothing is mapped or touched */
			sim_ok = pccx__sim_backend_buf_import(sb, host, sizes[i], accesses[k], &h, &d) == 0;
			if (sim_ok)
				ck_assert_int_eq(pccx__sim_backend_buf_free(sb, h), 0);
			ck_assert_msg(file_ok == sim_ok,
				      "size %llu access 0x%x: the job file %s it, the backend %s it",
				      (unsigned long long)sizes[i], accesses[k],
				      file_ok ? "accepts" : "refuses",
				      sim_ok ? "accepts" : "refuses");
		}
	pccx__sim_backend_destroy(sb);
}
END_TEST

/* ---- program files ------------------------------------------------------------------- */

START_TEST(program_files)
{
	static const uint8_t prog[16] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30,
					  0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x41 };
	struct pccx_jobfile jf;
	pccx_diag d;

	refused(prog, 0, PCCX_ERR_FORMAT, "t.job: empty program");
	refused(prog, 12, PCCX_ERR_FORMAT, "12 bytes is not a whole number of 64-bit words");
	refused(prog, 4, PCCX_ERR_FORMAT, "4 bytes is not a whole number of 64-bit words");
	refused((const uint8_t *)"PCCXJOB", 7, PCCX_ERR_FORMAT, "7 bytes is not a whole number");
	ck_assert_int_eq(parse(prog, 16, &jf, &d), PCCX_OK);
	ck_assert_int_eq(jf.is_program, 1);
	ck_assert_uint_eq(jf.n_insn, 2);
	ck_assert_uint_eq(jf.insn[0], 0x3000000000000000ull);
	ck_assert_uint_eq(jf.insn[1], 0x4102030405060708ull);
	ck_assert_uint_eq(jf.n_dma + jf.n_stream + jf.n_buf, 0);
	pccx__jobfile_free(&jf);
}
END_TEST

START_TEST(program_too_long)
{
	size_t len = ((size_t)(1u << 20) + 1) * 8;
	uint8_t *b = calloc(1, len);
	struct pccx_jobfile jf;
	pccx_diag d;

	ck_assert_ptr_nonnull(b);
	refused(b, len, PCCX_ERR_RANGE, "1048577 words, more than 1048576");
	ck_assert_int_eq(parse(b, len - 8, &jf, &d), PCCX_OK);
	ck_assert_uint_eq(jf.n_insn, 1u << 20);
	pccx__jobfile_free(&jf);
	free(b);
}
END_TEST

/* A program can never be mistaken for a job file: the magic is not a legal first word. */
START_TEST(magic_is_not_a_legal_word)
{
	uint64_t w = 0;
	unsigned i;

	for (i = 0; i < 8; i++)
		w |= (uint64_t)(uint8_t)PCCX_JOBFILE_MAGIC[i] << (8 * i);
	ck_assert_int_ne(pccx__decode(w, &(struct pccx_insn){ 0 }, NULL), 0);
}
END_TEST

/* ---- validation through the job file --------------------------------------------------- */

START_TEST(lookup_callback)
{
	struct pccx_jobfile jf = sample_job();
	uint64_t size = 0;
	uint32_t access = 0;

	ck_assert_int_eq(pccx__jobfile_lookup(&jf, 11, &size, &access), 0);
	ck_assert_uint_eq(size, 32);
	ck_assert_uint_eq(access, PCCX_BUF_DEV_WRITE);
	ck_assert_int_ne(pccx__jobfile_lookup(&jf, 13, &size, &access), 0);
	jf.n_buf = 0;
	ck_assert_int_ne(pccx__jobfile_lookup(&jf, 10, &size, &access), 0);
}
END_TEST

/* Validate jf and require refusal with exactly this message. */
static void validate_msg(const struct pccx_jobfile *jf, int isa_err, const char *msg)
{
	struct pccx_vresult res;
	pccx_diag d = { 0 };
	int rc = pccx__jobfile_validate(jf, "t.job", &res, &d);

	ck_assert_msg(rc == PCCX_ERR_VALIDATE, "status %s (%s)", pccx_status_name(rc), d.msg);
	ck_assert_int_eq(res.err, isa_err);
	ck_assert_str_eq(d.msg, msg);
}

START_TEST(validate_accepts_sample)
{
	struct pccx_jobfile jf = sample_job();
	struct pccx_vresult res;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx__jobfile_validate(&jf, "t.job", &res, &d), PCCX_OK);
	ck_assert_uint_eq(res.dma_bytes_in, 64);
	ck_assert_uint_eq(res.dma_bytes_out, 16);
	ck_assert_uint_eq(res.port_bytes[0], 64);
	ck_assert_uint_eq(res.port_bytes[3], 64);
	/* as a bare program the descriptors are not needed */
	jf.n_dma = jf.n_stream = jf.n_buf = 0;
	jf.is_program = 1;
	ck_assert_int_eq(pccx__jobfile_validate(&jf, "t.job", &res, &d), PCCX_OK);
	jf.is_program = 0;
	validate_msg(&jf, PCCX_ISA_E_DMA_INDEX,
		     "t.job: instruction 3 (memcpy dest=0x00000 src=0x00000 desc=0 fshape=0 "
		     "+from_host): field desc: DMA_INDEX: host DMA descriptor index out of range");
}
END_TEST

START_TEST(validate_messages)
{
	struct pccx_jobfile jf = sample_job();

	g_stream[2].length = 0x30;
	validate_msg(&jf, PCCX_ISA_E_STREAM_MISMATCH,
		     "t.job: weight-stream port 2: STREAM_MISMATCH: weight-stream bytes differ "
		     "from what the instructions consume (instructions consume 64 bytes, "
		     "descriptors provide 48)");
	jf = sample_job();
	g_dma[0].length = 48;
	validate_msg(&jf, PCCX_ISA_E_DMA_LENGTH,
		     "t.job: instruction 3 (memcpy dest=0x00000 src=0x00000 desc=0 fshape=0 "
		     "+from_host): field desc: DMA_LENGTH: host DMA descriptor length differs from "
		     "the transfer length (transfer is 64 bytes, descriptor says 48)");
	jf = sample_job();
	g_dma[1].offset = 32;
	validate_msg(&jf, PCCX_ISA_E_BUF_RANGE,
		     "t.job: host DMA descriptor 1: BUF_RANGE: offset + length outside the buffer "
		     "(or overflows) (buffer is 32 bytes)");
	jf = sample_job();
	g_stream[1].handle = 99;
	validate_msg(&jf, PCCX_ISA_E_BUF_HANDLE,
		     "t.job: weight-stream descriptor 1: BUF_HANDLE: unknown buffer handle");
	jf = sample_job();
	g_insn[4] = 0x5000000000000000ull;
	validate_msg(&jf, PCCX_ISA_E_OPCODE,
		     "t.job: instruction 4 (word 0x5000000000000000): OPCODE: opcode is not "
		     "defined (0x5-0xF are illegal)");
	jf = sample_job();
	g_insn[0] = A("memset cache=fmap entry=5 a=16 b=1 c=1");
	validate_msg(&jf, PCCX_ISA_E_SHAPE_UNSET,
		     "t.job: instruction 3 (memcpy dest=0x00000 src=0x00000 desc=0 fshape=0 "
		     "+from_host): field fshape: SHAPE_UNSET: shape entry used before it is set in "
		     "this job");
}
END_TEST

/* The limit message names the limit and the descriptor's length. */
START_TEST(validate_message_descriptor_limit)
{
	struct pccx_jobfile jf = sample_job();

	g_buf[2].size = 1ull << 40;
	g_stream[0].length = 1ull << 32;
	validate_msg(&jf, PCCX_ISA_E_JOB_LIMIT,
		     "t.job: weight-stream descriptor 0: JOB_LIMIT: job exceeds a size limit "
		     "(limit 4294967280, got 4294967296)");
}
END_TEST

START_TEST(describe_edges)
{
	struct pccx_vresult res;
	uint64_t insn[2] = { 0, 0 };
	char buf[400], small[12];

	memset(&res, 0, sizeof(res));
	res.err = PCCX_ISA_E_L2_RANGE;
	res.where = PCCX_VW_INSN;
	res.index = 9;
	res.field = PCCX_FID_D_len;
	pccx__vresult_describe(&res, insn, 2, buf, sizeof(buf));
	ck_assert_str_eq(buf, "instruction 9 (?): field len: L2_RANGE: L2 range outside the "
			      "114,688-word L2");
	pccx__vresult_describe(&res, NULL, 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "instruction 9 (?): field len: L2_RANGE: L2 range outside the "
			      "114,688-word L2");
	res.field = PCCX_NFIELDS;
	res.where = PCCX_VW_PORT;
	res.index = 3;
	res.err = PCCX_ISA_E_COUNT + 5;
	pccx__vresult_describe(&res, insn, 2, buf, sizeof(buf));
	ck_assert_str_eq(buf, "weight-stream port 3: UNKNOWN: unknown ISA error");
	memset(small, 'x', sizeof(small));
	pccx__vresult_describe(&res, insn, 2, small, sizeof(small));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

static Suite *jobfile_suite(void)
{
	Suite *s = suite_create("jobfile");
	TCase *tc;

	tc = tcase_create("format");
	tcase_add_test(tc, serialize_layout);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, round_trip_empty_counts);
	tcase_add_test(tc, truncated_header);
	tcase_add_test(tc, wrong_version);
	tcase_add_test(tc, reserved_word);
	tcase_add_test(tc, counts_too_large);
	tcase_add_test(tc, length_mismatch);
	tcase_add_test(tc, duplicate_buffer_handle);
	tcase_add_test(tc, buffer_access_bits);
	tcase_add_test(tc, buffer_sizes);
	tcase_add_test(tc, buffer_rule_matches_backend);
	tcase_add_test(tc, program_files);
	tcase_add_test(tc, program_too_long);
	tcase_add_test(tc, magic_is_not_a_legal_word);
	suite_add_tcase(s, tc);

	tc = tcase_create("validate");
	tcase_add_test(tc, lookup_callback);
	tcase_add_test(tc, validate_accepts_sample);
	tcase_add_test(tc, validate_messages);
	tcase_add_test(tc, validate_message_descriptor_limit);
	tcase_add_test(tc, describe_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jobfile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
