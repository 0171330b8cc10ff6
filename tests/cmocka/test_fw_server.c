// SPDX-License-Identifier: MIT
/*
 * The board's server (firmware/core) against a hostile host, with a mock executor: every
 * field of every message checked and refused with its code, the job image and validation,
 * the one-job rule, deferred WAITs, RESET, and a usable server after each refusal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "fw_test_util.h"

/* ---- the mock executor: buffers from a static arena, jobs scripted with will_return ---- */

static uint8_t arena[8][4096] __attribute__((aligned(64)));
static uint32_t arena_handle[8];
static uint32_t mock_l2 = 114688;

static int m_info(void *ctx, struct pccx_fw_dev_info *out)
{
	(void)ctx;
	out->hw_id = 0x5043435802000001ull;
	out->l2_words = mock_l2;
	out->max_buf_size = sizeof(arena[0]);
	out->flags = PCCX_LINK_INFO_SIMULATED;
	return 0;
}

static int m_alloc(void *ctx, uint64_t size, uint32_t access, uint32_t *handle, uint8_t **mem,
		   uint64_t *largest)
{
	int i;

	(void)ctx;
	(void)access;
	*largest = sizeof(arena[0]);
	if (size > sizeof(arena[0]))
		return PCCX_LINK_E_NOSPACE;
	for (i = 0; i < 8; i++)
		if (!arena_handle[i]) {
			arena_handle[i] = 500u + (uint32_t)i;
			memset(arena[i], 0, sizeof(arena[i]));
			*handle = arena_handle[i];
			*mem = arena[i];
			return 0;
		}
	*largest = 0;
	return PCCX_LINK_E_NOSPACE;
}

static void m_free(void *ctx, uint32_t handle)
{
	(void)ctx;
	check_expected(handle);
	arena_handle[handle - 500] = 0;
}

static int m_start(void *ctx, const struct pccx_job_view *job, uint32_t timeout_ms,
		   struct pccx_fw_outcome *out)
{
	(void)ctx;
	check_expected(timeout_ms);
	assert_int_equal(job->n_insn, 3);
	out->start_ns = 1000;
	return mock_type(int);
}

static uint32_t m_poll(void *ctx, struct pccx_fw_outcome *out)
{
	uint32_t st = mock_type(uint32_t);

	(void)ctx;
	if (st != PCCX_LINK_JOB_RUNNING) {
		out->retired = 3;
		out->end_ns = 5000;
	}
	return st;
}

static int m_reset(void *ctx)
{
	(void)ctx;
	return mock_type(int);
}

static const struct pccx_fw_exec_ops mock_ops = { m_info, m_alloc, m_free, m_start, m_poll,
						  m_reset };

static struct t_link L;

static int setup(void **state)
{
	(void)state;
	memset(arena_handle, 0, sizeof(arena_handle));
	mock_l2 = 114688;
	t_link_init(&L, &mock_ops, NULL, 4);
	return 0;
}

/* BUF_CREATE; returns the handle (0 after a refusal). */
static uint32_t create(uint64_t size, uint32_t access)
{
	uint8_t *p = t_req(&L);

	pccx__le64_put(p, size);
	pccx__le32_put(p + 8, access);
	pccx__le32_put(p + 12, 0);
	t_send(&L, PCCX_LINK_BUF_CREATE, 16);
	return L.hdr.type == PCCX_LINK_BUF_CREATE ? pccx__le32_get(L.payload) : 0;
}

static void upload(uint32_t h, uint64_t off, const void *data, uint32_t n)
{
	uint8_t *p = t_req(&L);

	pccx__le32_put(p, h);
	pccx__le32_put(p + 4, 0);
	pccx__le64_put(p + 8, off);
	memcpy(p + 16, data, n);
	t_send(&L, PCCX_LINK_UPLOAD, 16 + n);
}

static void submit(uint32_t h, uint64_t off, uint64_t len)
{
	uint8_t *p = t_req(&L);

	pccx__le32_put(p, h);
	pccx__le32_put(p + 4, 0);
	pccx__le64_put(p + 8, off);
	pccx__le64_put(p + 16, len);
	t_send(&L, PCCX_LINK_SUBMIT, 24);
}

static void wait_req(uint32_t id, uint32_t ms)
{
	pccx__le32_put(t_req(&L), id);
	pccx__le32_put(t_req(&L) + 4, ms);
	t_send(&L, PCCX_LINK_WAIT, 8);
}

static void info_still_answers(void)
{
	unsigned before = L.n_replies;

	t_send(&L, PCCX_LINK_INFO, 0);
	assert_int_equal(L.n_replies, before + 1);
	assert_int_equal(L.hdr.type, PCCX_LINK_INFO);
}

static void info_reports_versions_limits_and_name(void **state)
{
	(void)state;
	t_send(&L, PCCX_LINK_INFO, 0);
	assert_int_equal(L.hdr.type, PCCX_LINK_INFO);
	assert_int_equal(L.hdr.seq, L.seq);
	assert_int_equal(L.hdr.len, PCCX_LINK_INFO_BYTES);
	assert_int_equal(pccx__le16_get(L.payload), 1);
	assert_int_equal(pccx__le16_get(L.payload + 2), 1);
	assert_int_equal(pccx__le32_get(L.payload + 4), T_PAYLOAD);
	assert_int_equal(pccx__le32_get(L.payload + 8), 4);
	assert_int_equal(pccx__le32_get(L.payload + 12), PCCX_LINK_INFO_SIMULATED);
	assert_int_equal(pccx__le64_get(L.payload + 16), 4096);
	assert_int_equal(pccx__le32_get(L.payload + 92), PCCX_LINK_JOB_TIMEOUT_MS);
	assert_string_equal((const char *)L.payload + 96, "test-board");
}

static void buffer_fields_are_checked(void **state)
{
	uint8_t *p = t_req(&L);
	uint32_t h;

	(void)state;
	assert_int_equal(create(0, 1), 0);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	assert_int_equal(create(64, 4), 0);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	assert_int_equal(create(4097, 1), 0);
	assert_int_equal(t_err(&L), PCCX_LINK_E_NOSPACE);
	assert_int_equal(pccx__le64_get(L.payload + 32), 4096);   /* the largest it could give */
	pccx__le64_put(p, 64);
	pccx__le32_put(p + 8, 1);
	pccx__le32_put(p + 12, 9);                                /* pad */
	t_send(&L, PCCX_LINK_BUF_CREATE, 16);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	h = create(100, 3);
	assert_int_equal(h, 500);
	/* the table holds 4: the fifth is NOSPACE even though the executor has room */
	assert_int_not_equal(create(16, 1), 0);
	assert_int_not_equal(create(16, 1), 0);
	assert_int_not_equal(create(16, 1), 0);
	assert_int_equal(create(16, 1), 0);
	assert_int_equal(t_err(&L), PCCX_LINK_E_NOSPACE);
	/* ranges: up to the end is fine, one past or wrapping is not */
	upload(h, 96, "abcd", 4);
	assert_int_equal(L.hdr.type, PCCX_LINK_UPLOAD);
	assert_int_equal(pccx__le64_get(L.payload), 100);
	assert_memory_equal(arena[0] + 96, "abcd", 4);
	upload(h, 97, "abcd", 4);
	assert_int_equal(t_err(&L), PCCX_LINK_E_RANGE);
	upload(h, UINT64_MAX - 1, "abcd", 4);
	assert_int_equal(t_err(&L), PCCX_LINK_E_RANGE);
	upload(77, 0, "abcd", 4);
	assert_int_equal(t_err(&L), PCCX_LINK_E_HANDLE);
	t_send(&L, PCCX_LINK_UPLOAD, 16);                         /* no data byte */
	assert_int_equal(t_err(&L), PCCX_LINK_E_LENGTH);
	/* DOWNLOAD: length 1 .. max_payload inside the buffer */
	pccx__le32_put(p, h);
	pccx__le32_put(p + 4, 0);
	pccx__le64_put(p + 8, 96);
	pccx__le32_put(p + 16, 4);
	pccx__le32_put(p + 20, 0);
	t_send(&L, PCCX_LINK_DOWNLOAD, 24);
	assert_int_equal(L.hdr.type, PCCX_LINK_DOWNLOAD);
	assert_memory_equal(L.payload, "abcd", 4);
	pccx__le32_put(p + 16, 0);
	t_send(&L, PCCX_LINK_DOWNLOAD, 24);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	pccx__le32_put(p + 16, T_PAYLOAD + 1);
	t_send(&L, PCCX_LINK_DOWNLOAD, 24);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	pccx__le32_put(p + 16, 5);
	t_send(&L, PCCX_LINK_DOWNLOAD, 24);
	assert_int_equal(t_err(&L), PCCX_LINK_E_RANGE);
	/* FREE: twice is HANDLE the second time */
	expect_value(m_free, handle, h);
	pccx__le32_put(p, h);
	pccx__le32_put(p + 4, 0);
	t_send(&L, PCCX_LINK_BUF_FREE, 8);
	assert_int_equal(L.hdr.type, PCCX_LINK_BUF_FREE);
	t_send(&L, PCCX_LINK_BUF_FREE, 8);
	assert_int_equal(t_err(&L), PCCX_LINK_E_HANDLE);
	info_still_answers();
}

/* A host-only buffer holding the copy job; the two data buffers it names. */
static uint32_t job_buffers(uint32_t *in, uint32_t *out, uint32_t *len)
{
	uint8_t img[256];
	uint32_t h;

	*in = create(32, PCCX_BUF_DEV_READ);
	*out = create(32, PCCX_BUF_DEV_WRITE);
	h = create(256, 0);
	*len = t_copy_image(img, *in, *out);
	upload(h, 0, img, *len);
	return h;
}

static void job_images_are_checked(void **state)
{
	uint32_t in, out, len, h = job_buffers(&in, &out, &len);
	uint8_t *img = arena[2];

	(void)state;
	submit(in, 0, len);                       /* a device buffer cannot hold a job */
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	submit(h, 8, len);                        /* the image is at 0 */
	assert_int_equal(t_err(&L), PCCX_LINK_E_JOB);
	submit(h, 4, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	submit(h, 0, len + 8);
	assert_int_equal(t_err(&L), PCCX_LINK_E_JOB);
	submit(h, 0, 300);
	assert_int_equal(t_err(&L), PCCX_LINK_E_RANGE);
	pccx__le32_put(img + 12, (1u << 20) + 1);  /* more words than the validator allows */
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_JOB);
	assert_int_equal(pccx__le64_get(L.payload + 32), 1u << 20);
	pccx__le32_put(img + 12, 3);
	pccx__le32_put(img + 24, 1);              /* a buffer table */
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_JOB);
	pccx__le32_put(img + 24, 0);
	img[0] = 'X';
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_JOB);
	img[0] = 'P';
	/* the validator: a descriptor naming the image's own buffer is BUF_ACCESS at DMA 1 */
	pccx__le32_put(img + PCCX_LINK_JOB_HDR + 24 + 24, h);
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_VALIDATE);
	assert_int_equal(pccx__le32_get(L.payload + 8), PCCX_ISA_E_BUF_ACCESS);
	assert_int_equal(pccx__le32_get(L.payload + 12), PCCX_VW_DMA);
	assert_int_equal(pccx__le32_get(L.payload + 16), 1);
	pccx__le32_put(img + PCCX_LINK_JOB_HDR + 24 + 24, 4242);
	submit(h, 0, len);
	assert_int_equal(pccx__le32_get(L.payload + 8), PCCX_ISA_E_BUF_HANDLE);
	info_still_answers();
}

/* The validator's L2 bound is the device's: the copy reaches L2 words 10 and 11. */
static void jobs_are_checked_against_the_devices_l2(void **state)
{
	uint32_t in, out, len, h;

	(void)state;
	mock_l2 = 11;
	h = job_buffers(&in, &out, &len);
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_VALIDATE);
	assert_int_equal(pccx__le32_get(L.payload + 8), PCCX_ISA_E_L2_RANGE);
	assert_int_equal(pccx__le32_get(L.payload + 12), PCCX_VW_INSN);
	assert_int_equal(pccx__le32_get(L.payload + 16), 1);
}

static void one_job_deferred_wait_and_reaping(void **state)
{
	uint32_t in, out, len, h = job_buffers(&in, &out, &len), id;
	uint8_t *p = t_req(&L);
	unsigned n;

	(void)state;
	expect_value(m_start, timeout_ms, PCCX_LINK_JOB_TIMEOUT_MS);
	will_return(m_start, 0);
	submit(h, 0, len);
	assert_int_equal(L.hdr.type, PCCX_LINK_SUBMIT);
	id = pccx__le32_get(L.payload);
	/* while it is active: a second job, an upload, a free are BUSY */
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_BUSY);
	upload(in, 0, "x", 1);
	assert_int_equal(t_err(&L), PCCX_LINK_E_BUSY);
	pccx__le32_put(p, in);
	pccx__le32_put(p + 4, 0);
	t_send(&L, PCCX_LINK_BUF_FREE, 8);
	assert_int_equal(t_err(&L), PCCX_LINK_E_BUSY);
	wait_req(id + 1, 0);
	assert_int_equal(t_err(&L), PCCX_LINK_E_NOJOB);
	/* WAIT 0: RUNNING at once, not reaped */
	wait_req(id, 0);
	assert_int_equal(pccx__le32_get(L.payload + 4), PCCX_LINK_JOB_RUNNING);
	/* WAIT 1000: no reply until the job ends */
	L.now = 10;
	n = L.n_replies;
	wait_req(id, 1000);
	assert_int_equal(L.n_replies, n);
	will_return_count(m_poll, PCCX_LINK_JOB_RUNNING, 256);
	pccx__fw_server_poll(&L.srv, 20);
	assert_int_equal(L.n_replies, n);
	will_return(m_poll, PCCX_LINK_JOB_DONE);
	pccx__fw_server_poll(&L.srv, 30);
	assert_int_equal(L.n_replies, n + 1);
	assert_int_equal(L.hdr.type, PCCX_LINK_WAIT);
	assert_int_equal(L.hdr.seq, L.seq);
	assert_int_equal(pccx__le32_get(L.payload), id);
	assert_int_equal(pccx__le32_get(L.payload + 4), PCCX_LINK_JOB_DONE);
	assert_int_equal(pccx__le64_get(L.payload + 24), 3);
	assert_int_equal(pccx__le64_get(L.payload + 32), 1000);
	assert_int_equal(pccx__le64_get(L.payload + 40), 5000);
	/* reaped: the id is gone, the next job is accepted */
	wait_req(id, 0);
	assert_int_equal(t_err(&L), PCCX_LINK_E_NOJOB);
	expect_value(m_start, timeout_ms, PCCX_LINK_JOB_TIMEOUT_MS);
	will_return(m_start, 0);
	submit(h, 0, len);
	assert_int_equal(pccx__le32_get(L.payload), id + 1);
	/* a WAIT that times out answers RUNNING; a request arriving first answers it at once */
	wait_req(id + 1, 50);
	will_return_count(m_poll, PCCX_LINK_JOB_RUNNING, 256);
	pccx__fw_server_poll(&L.srv, L.now + 51);
	assert_int_equal(pccx__le32_get(L.payload + 4), PCCX_LINK_JOB_RUNNING);
	wait_req(id + 1, 5000);
	n = L.n_replies;
	t_send(&L, PCCX_LINK_INFO, 0);
	assert_int_equal(L.n_replies, n + 2);
	assert_int_equal(L.hdr.type, PCCX_LINK_INFO);
	/* RESET aborts it: ABORTED with cause RESET, reaped by a WAIT */
	will_return(m_reset, 0);
	memset(p, 0, 8);
	t_send(&L, PCCX_LINK_RESET, 8);
	assert_int_equal(pccx__le32_get(L.payload), 0);
	wait_req(id + 1, 0);
	assert_int_equal(pccx__le32_get(L.payload + 4), PCCX_LINK_JOB_ABORTED);
	assert_int_equal(pccx__le32_get(L.payload + 8) >> 24, PCCX_LINK_FAULT_RESET);
}

static void a_failed_reset_wedges_until_one_works(void **state)
{
	uint32_t in, out, len, h = job_buffers(&in, &out, &len);
	uint8_t *p = t_req(&L);

	(void)state;
	memset(p, 0, 8);
	pccx__le32_put(p, 2);                     /* an undefined flag */
	t_send(&L, PCCX_LINK_RESET, 8);
	assert_int_equal(t_err(&L), PCCX_LINK_E_INVALID);
	will_return(m_reset, -1);
	memset(p, 0, 8);
	t_send(&L, PCCX_LINK_RESET, 8);
	assert_int_equal(pccx__le32_get(L.payload), 1);
	t_send(&L, PCCX_LINK_INFO, 0);
	assert_int_equal(pccx__le32_get(L.payload + 12) & PCCX_LINK_INFO_WEDGED,
			 PCCX_LINK_INFO_WEDGED);
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_DEVICE);
	/* FREE_ALL: a working reset, and every buffer goes */
	will_return(m_reset, 0);
	expect_value(m_free, handle, in);
	expect_value(m_free, handle, out);
	expect_value(m_free, handle, h);
	memset(p, 0, 8);
	pccx__le32_put(p, PCCX_LINK_RESET_FREE_ALL);
	t_send(&L, PCCX_LINK_RESET, 8);
	assert_int_equal(pccx__le32_get(L.payload), 0);
	submit(h, 0, len);
	assert_int_equal(t_err(&L), PCCX_LINK_E_HANDLE);
	t_send(&L, PCCX_LINK_INFO, 0);
	assert_int_equal(pccx__le32_get(L.payload + 12) & PCCX_LINK_INFO_WEDGED, 0);
}

static void a_start_refused_by_the_device_is_a_final_outcome(void **state)
{
	uint32_t in, out, len, h = job_buffers(&in, &out, &len), id;

	(void)state;
	expect_value(m_start, timeout_ms, 250);
	will_return(m_start, -1);
	pccx__le32_put(t_req(&L), h);
	pccx__le32_put(t_req(&L) + 4, 250);
	pccx__le64_put(t_req(&L) + 8, 0);
	pccx__le64_put(t_req(&L) + 16, len);
	t_send(&L, PCCX_LINK_SUBMIT, 24);
	id = pccx__le32_get(L.payload);
	wait_req(id, 1000);                       /* answered at once: the job is over */
	assert_int_equal(L.hdr.type, PCCX_LINK_WAIT);
	/* the mock gave no status: the server reports a device that was not ready */
	assert_int_equal(pccx__le32_get(L.payload + 4), PCCX_LINK_JOB_FAULT);
	assert_int_equal(pccx__le32_get(L.payload + 8) >> 24, PCCX_LINK_FAULT_BUSY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(info_reports_versions_limits_and_name, setup),
		cmocka_unit_test_setup(buffer_fields_are_checked, setup),
		cmocka_unit_test_setup(job_images_are_checked, setup),
		cmocka_unit_test_setup(jobs_are_checked_against_the_devices_l2, setup),
		cmocka_unit_test_setup(one_job_deferred_wait_and_reaping, setup),
		cmocka_unit_test_setup(a_failed_reset_wedges_until_one_works, setup),
		cmocka_unit_test_setup(a_start_refused_by_the_device_is_a_final_outcome, setup),
	};

	return cmocka_run_group_tests_name("fw_server", tests, NULL, NULL);
}
