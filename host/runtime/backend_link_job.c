// SPDX-License-Identifier: MIT
/*
 * A job over the link (backend_link.h): the host copies' changes go up, the job image goes
 * into a host-only board buffer, SUBMIT, WAIT until a final state, then the ranges the job's
 * device-write descriptors name come back into the host copies. Outcomes are reported as the
 * kernel backend reports the driver's (the WAIT reply carries the same status and fault
 * values as struct pccx_wait).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_link_int.h"
#include "diag.h"
#include "uapi/pccx.h"

_Static_assert(PCCX_LINK_JOB_DONE == PCCX_JOB_DONE && PCCX_LINK_JOB_FAULT == PCCX_JOB_FAULT &&
	       PCCX_LINK_JOB_TIMEOUT == PCCX_JOB_TIMEOUT &&
	       PCCX_LINK_JOB_ABORTED == PCCX_JOB_ABORTED &&
	       PCCX_LINK_JOB_RUNNING == PCCX_JOB_RUNNING, "WAIT status values are the UAPI's");
_Static_assert(PCCX_LINK_FAULT_HUNG == PCCX_FAULT_HUNG && PCCX_LINK_FAULT_RESET == PCCX_FAULT_RESET
	       && PCCX_LINK_FAULT_DEVICE == PCCX_FAULT_DEVICE &&
	       PCCX_LINK_FAULT_SHIFT == PCCX_FAULT_KIND_SHIFT, "fault kinds are the UAPI's");

#define WAIT_SLICE_MS 1000u     /* one WAIT's timeout: the link is checked this often */

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The job file of docs/job.md without a buffer table, little-endian. */
static int build_image(struct pccx_link_backend *b, const struct pccx_job_view *job,
		       uint64_t *size, pccx_diag *d)
{
	uint64_t n = PCCX_LINK_JOB_HDR + 8ull * job->n_insn + 24ull * job->n_dma +
		     24ull * job->n_stream;
	uint8_t *p;
	uint32_t i;

	if (n > b->img_cap) {
		uint8_t *q = realloc(b->img, (size_t)n);

		if (!q)
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: no memory for a job image of %llu "
					  "bytes", b->what, (unsigned long long)n);
		b->img = q;
		b->img_cap = n;
	}
	p = b->img;
	memcpy(p, "PCCXJOB", 8);
	pccx__le32_put(p + 8, 1);
	pccx__le32_put(p + 12, job->n_insn);
	pccx__le32_put(p + 16, job->n_dma);
	pccx__le32_put(p + 20, job->n_stream);
	pccx__le32_put(p + 24, 0);
	pccx__le32_put(p + 28, 0);
	p += PCCX_LINK_JOB_HDR;
	for (i = 0; i < job->n_insn; i++, p += 8)
		pccx__le64_put(p, job->insn[i]);
	for (i = 0; i < job->n_dma; i++, p += 24) {
		pccx__le32_put(p, job->dma[i].handle);
		pccx__le32_put(p + 4, job->dma[i].flags);
		pccx__le64_put(p + 8, job->dma[i].offset);
		pccx__le64_put(p + 16, job->dma[i].length);
	}
	for (i = 0; i < job->n_stream; i++, p += 24) {
		pccx__le32_put(p, job->stream[i].handle);
		pccx__le32_put(p + 4, job->stream[i].port);
		pccx__le64_put(p + 8, job->stream[i].offset);
		pccx__le64_put(p + 16, job->stream[i].length);
	}
	*size = n;
	return 0;
}

/* A host-only board buffer of at least `size` bytes for the image (kept between jobs). */
static int image_buffer(struct pccx_link_backend *b, uint64_t size, pccx_diag *d)
{
	uint8_t *p = b->tx + PCCX_LINK_HDR;
	uint64_t want = (size + 65535) & ~65535ull;
	struct link_reply rep;
	int rc;

	if (b->img_handle && b->img_size >= size)
		return 0;
	if (b->img_handle) {
		rc = pccx__link_free_handle(b, b->img_handle, d);
		if (rc)
			return rc;
		b->img_handle = 0;
	}
	pccx__le64_put(p, want);
	pccx__le32_put(p + 8, 0);
	pccx__le32_put(p + 12, 0);
	rc = pccx__link_request(b, PCCX_LINK_BUF_CREATE, PCCX_LINK_CREATE_REQ, PCCX_LINK_CREATE_REP,
				0, &rep, d);
	if (rc)
		return rc;
	b->img_handle = pccx__le32_get(rep.p);
	b->img_size = want;
	return 0;
}

static int submit(struct pccx_link_backend *b, uint64_t size, uint64_t timeout_ns,
		  struct pccx_kernel_backend_result *res, pccx_diag *d)
{
	static const char *const where[] = { "job", "instruction", "host DMA descriptor",
					     "stream descriptor", "port" };
	uint8_t *p = b->tx + PCCX_LINK_HDR;
	uint64_t ms = (timeout_ns + 999999) / 1000000;
	struct link_reply rep;
	pccx_diag dd = { 0 };
	int rc;

	pccx__le32_put(p, b->img_handle);
	pccx__le32_put(p + 4, ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms);
	pccx__le64_put(p + 8, 0);
	pccx__le64_put(p + 16, size);
	rc = pccx__link_request(b, PCCX_LINK_SUBMIT, PCCX_LINK_SUBMIT_REQ, PCCX_LINK_SUBMIT_REP, 0,
				&rep, &dd);
	if (rc == PCCX_ERR_VALIDATE && rep.len >= PCCX_LINK_ERR_BYTES) {
		uint32_t verr = pccx__le32_get(rep.p + 8), w = pccx__le32_get(rep.p + 12);

		res->submit.verr = verr;
		res->submit.vwhere = w;
		res->submit.vindex = pccx__le32_get(rep.p + 16);
		return pccx__fail(d, PCCX_ERR_VALIDATE, "job refused by the board: %s at %s %u (%s)",
				  pccx__isa_errname((int)verr), w < 5 ? where[w] : "?",
				  res->submit.vindex, pccx__isa_strerror((int)verr));
	}
	if (rc) {
		if (d)
			*d = dd;
		return rc;
	}
	res->submit.job_id = pccx__le32_get(rep.p);
	return 0;
}

static void read_outcome(const uint8_t *p, struct pccx_wait *w)
{
	w->status = pccx__le32_get(p + 4);
	w->hw_error = pccx__le32_get(p + 8);
	w->fault_index = pccx__le32_get(p + 12);
	w->error_info = pccx__le64_get(p + 16);
	w->retired = pccx__le64_get(p + 24);
	w->start_ns = pccx__le64_get(p + 32);
	w->end_ns = pccx__le64_get(p + 40);
}

/* WAIT in slices until a final state or wait_ns. */
static int wait_job(struct pccx_link_backend *b, uint64_t wait_ns,
		    struct pccx_kernel_backend_result *res, pccx_diag *d)
{
	struct timespec t0;
	uint64_t id = res->submit.job_id;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint8_t *p = b->tx + PCCX_LINK_HDR;
		struct link_reply rep;
		int rc;

		pccx__le32_put(p, (uint32_t)id);
		pccx__le32_put(p + 4, WAIT_SLICE_MS);
		rc = pccx__link_request(b, PCCX_LINK_WAIT, PCCX_LINK_WAIT_REQ, PCCX_LINK_WAIT_REP,
					WAIT_SLICE_MS + 10000, &rep, d);
		if (rc)
			return rc;
		if (pccx__le32_get(rep.p) != id)
			return pccx__fail(d, PCCX_ERR_IO, "%s: WAIT for job %llu answered for job %u",
					  b->what, (unsigned long long)id, pccx__le32_get(rep.p));
		read_outcome(rep.p, &res->wait);
		res->wait.job_id = id;
		if (res->wait.status != PCCX_JOB_RUNNING)
			return 0;
		if (seconds_since(&t0) * 1e9 >= (double)wait_ns) {
			/* stop it, and reap it, so the board takes the next job */
			if (!pccx__link_backend_reset(b, NULL)) {
				pccx__le32_put(p, (uint32_t)id);
				pccx__le32_put(p + 4, 0);
				(void)pccx__link_request(b, PCCX_LINK_WAIT, PCCX_LINK_WAIT_REQ,
							 PCCX_LINK_WAIT_REP, 0, &rep, NULL);
			}
			return pccx__fail(d, PCCX_ERR_TIMEOUT, "%s: job %llu still running after %llu "
					  "ns: the board was told to reset", b->what,
					  (unsigned long long)id, (unsigned long long)wait_ns);
		}
	}
}

/* After the job: what it wrote comes back (DONE), or is uploaded again next time (else). */
static int write_back(struct pccx_link_backend *b, const struct pccx_job_view *job, bool done,
		      pccx_diag *d)
{
	uint32_t i;

	for (i = 0; i < job->n_dma; i++) {
		const struct pccx_dma_desc *dd = &job->dma[i];
		struct link_buf *lb = pccx__link_buf(b, dd->handle);
		int rc;

		if (!(dd->flags & PCCX_DMA_FROM_DEVICE) || !lb || dd->offset > lb->size ||
		    dd->length > lb->size - dd->offset)
			continue;
		if (!done) {
			pccx__link_forget(lb, dd->offset, dd->length);
			continue;
		}
		rc = pccx__link_download(b, lb, dd->offset, dd->length, d);
		if (rc)
			return rc;
	}
	return 0;
}

static int outcome_status(struct pccx_link_backend *b, const struct pccx_wait *w, pccx_diag *d)
{
	switch (w->status) {
	case PCCX_JOB_DONE:
		return 0;
	case PCCX_JOB_FAULT:
		return pccx__fail(d, PCCX_ERR_DEVICE, "%s: device fault: hw_error 0x%08x at "
				  "instruction %u (info 0x%llx): %s", b->what, w->hw_error,
				  w->fault_index, (unsigned long long)w->error_info,
				  pccx__kernel_dev_fault_name(w->hw_error));
	case PCCX_JOB_TIMEOUT:
		return pccx__fail(d, PCCX_ERR_TIMEOUT, "%s: job hung: %s (%u instructions pushed, "
				  "%llu retired); the board reset the device", b->what,
				  pccx__kernel_dev_fault_name(w->hw_error), w->fault_index,
				  (unsigned long long)w->retired);
	case PCCX_JOB_ABORTED:
		return pccx__fail(d, PCCX_ERR_BUSY, "%s: job aborted: %s", b->what,
				  pccx__kernel_dev_fault_name(w->hw_error));
	default:
		return pccx__fail(d, PCCX_ERR_IO, "%s: WAIT reported status %u", b->what, w->status);
	}
}

int pccx__link_backend_submit_wait(struct pccx_link_backend *b, const struct pccx_job_view *job,
				   const struct pccx_kernel_backend_opts *opts,
				   struct pccx_kernel_backend_result *res, pccx_diag *d)
{
	struct pccx_kernel_backend_result dummy;
	uint64_t wait_ns = opts && opts->wait_ns ? opts->wait_ns : 600000000000ull;
	struct timespec t0;
	uint64_t size = 0;
	int rc;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = build_image(b, job, &size, d);
	if (!rc)
		rc = pccx__link_sync_up(b, d);
	if (!rc)
		rc = image_buffer(b, size, d);
	if (!rc)
		rc = pccx__link_upload_image(b, b->img_handle, b->img, size, d);
	if (!rc)
		rc = submit(b, size, opts ? opts->timeout_ns : 0, res, d);
	if (!rc)
		rc = wait_job(b, wait_ns, res, d);
	if (rc)
		return rc;
	res->status = res->wait.status;
	rc = write_back(b, job, res->status == PCCX_JOB_DONE, d);
	res->host_seconds = seconds_since(&t0);
	return rc ? rc : outcome_status(b, &res->wait, d);
}
