// SPDX-License-Identifier: MIT
/*
 * The board's SUBMIT, WAIT and RESET (docs/link.md). A job image is read in place from a
 * host-only buffer (no descriptor can name it, so the device cannot rewrite words it was not
 * shown), its counts are bounded before they are used, and isa/validate.c runs over the
 * board's buffer table before the executor sees the job.
 */
#include "fw_internal.h"

static int lookup(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access)
{
	struct pccx_fw_buf *b = pccx__fw_buf_find(ctx, handle);

	if (!b)
		return -1;
	*size = b->size;
	*access = b->access;
	return 0;
}

static int bad_job(struct pccx_fw_refusal *why, uint64_t what, uint64_t limit, const char *msg)
{
	return pccx__fw_refuse(why, PCCX_LINK_E_JOB, what, limit, msg);
}

/* The job view of an image of `len` bytes at `img` (8-byte aligned), or a refusal. */
static int parse_image(const uint8_t *img, uint64_t len, struct pccx_job_view *job,
		       uint32_t max_dma_bitmap, struct pccx_fw_refusal *why)
{
	static const uint8_t magic[8] = { 'P', 'C', 'C', 'X', 'J', 'O', 'B', 0 };
	struct pccx_vlimits lim;
	uint32_t n_insn, n_dma, n_stream;
	uint64_t want;

	if (len < PCCX_LINK_JOB_HDR)
		return bad_job(why, len, PCCX_LINK_JOB_HDR, "image shorter than its header");
	if (__builtin_memcmp(img, magic, 8))
		return bad_job(why, pccx__le64_get(img), 0, "image without the PCCXJOB magic");
	if (pccx__le32_get(img + 8) != 1)
		return bad_job(why, pccx__le32_get(img + 8), 1, "image version is not 1");
	n_insn = pccx__le32_get(img + 12);
	n_dma = pccx__le32_get(img + 16);
	n_stream = pccx__le32_get(img + 20);
	if (pccx__le32_get(img + 24) || pccx__le32_get(img + 28))
		return bad_job(why, pccx__le32_get(img + 24), 0,
			       "image with a buffer table or reserved bits");
	pccx__vlimits_default(&lim);
	if (n_insn > lim.max_insn)
		return bad_job(why, n_insn, lim.max_insn, "too many instructions");
	if (n_dma > lim.max_dma)
		return bad_job(why, n_dma, lim.max_dma, "too many host DMA descriptors");
	if (n_stream > lim.max_stream)
		return bad_job(why, n_stream, lim.max_stream, "too many stream descriptors");
	if (PCCX_DMA_BITMAP_BYTES(n_dma) > max_dma_bitmap)
		return bad_job(why, n_dma, ((uint64_t)max_dma_bitmap - 1) * 8,
			       "more host DMA descriptors than this board checks");
	want = PCCX_LINK_JOB_HDR + 8ull * n_insn + 24ull * n_dma + 24ull * n_stream;
	if (len != want)
		return bad_job(why, len, want, "image length differs from what its counts imply");
	job->insn = (const uint64_t *)(const void *)(img + PCCX_LINK_JOB_HDR);
	job->n_insn = n_insn;
	job->dma = (const struct pccx_dma_desc *)(const void *)(job->insn + n_insn);
	job->n_dma = n_dma;
	job->stream = (const struct pccx_stream_desc *)(const void *)(job->dma + n_dma);
	job->n_stream = n_stream;
	return 0;
}

static int validate(struct pccx_fw_server *s, const struct pccx_job_view *job,
		    struct pccx_fw_refusal *why)
{
	struct pccx_vresult vr;
	struct pccx_vlimits lim;
	int err;

	/* the L2 bound and the extensions are the device's (a configured simulator may differ) */
	if (!s->l2_words) {
		struct pccx_fw_dev_info di;

		__builtin_memset(&di, 0, sizeof(di));
		if (s->cfg.exec->info(s->cfg.exec_ctx, &di) || !di.l2_words)
			return pccx__fw_refuse(why, PCCX_LINK_E_DEVICE, 0, 0,
					       "the device's L2 size cannot be read");
		s->l2_words = di.l2_words;
		s->features = di.features;
	}
	pccx__vlimits_default(&lim);
	lim.l2_words = s->l2_words;
	lim.features = s->features;
	__builtin_memset(&vr, 0, sizeof(vr));
	/* the reply is built afterwards: the tx buffer is the validator's scratch until then */
	err = pccx__validate(job, lookup, s, &lim, s->cfg.tx, &vr);
	if (!err)
		return 0;
	pccx__fw_refuse(why, PCCX_LINK_E_VALIDATE, vr.expected, vr.actual, "job refused");
	why->a0 = (uint32_t)err;
	why->a1 = (uint32_t)vr.where;
	why->a2 = vr.index;
	why->a3 = vr.field;
	return PCCX_FW_REFUSED;
}

int pccx__fw_on_submit(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		       struct pccx_fw_refusal *why)
{
	uint32_t handle = pccx__le32_get(r->p), timeout_ms = pccx__le32_get(r->p + 4);
	uint64_t off = pccx__le64_get(r->p + 8), len = pccx__le64_get(r->p + 16);
	struct pccx_fw_buf *b = pccx__fw_buf_find(s, handle);
	struct pccx_job_view job;
	uint8_t *p = pccx__fw_reply_payload(s);

	if (s->job_active)
		return pccx__fw_refuse(why, PCCX_LINK_E_BUSY, s->job_id, 0,
				       "a job is active: WAIT for it first");
	if (s->wedged)
		return pccx__fw_refuse(why, PCCX_LINK_E_DEVICE, 0, 0,
				       "the device is wedged: RESET it first");
	if (!b)
		return pccx__fw_refuse(why, PCCX_LINK_E_HANDLE, handle, 0, "no such buffer");
	if (b->access)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, b->access, 0,
				       "the job image must be in a host-only buffer (access 0)");
	if (off % 8 || (uintptr_t)b->mem % 8)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, off, 8,
				       "image offset not a multiple of 8");
	if (off > b->size || len > b->size - off)
		return pccx__fw_refuse(why, PCCX_LINK_E_RANGE, off > UINT64_MAX - len ?
				       UINT64_MAX : off + len, b->size, "range outside the buffer");
	if (parse_image(b->mem + off, len, &job, s->cfg.buf_size, why) || validate(s, &job, why))
		return PCCX_FW_REFUSED;
	__builtin_memset(&s->outcome, 0, sizeof(s->outcome));
	s->job_id = s->next_job_id++;
	if (!s->next_job_id)
		s->next_job_id = 1;
	s->job_active = true;
	s->job_final = false;
	s->job_buf = handle;
	if (s->cfg.exec->start(s->cfg.exec_ctx, &job, timeout_ms ? timeout_ms :
			       s->cfg.job_timeout_ms, &s->outcome)) {
		/* the device would not take it: the job is over, WAIT reports why (an executor
		 * that gave no final status is reported as a device that was not ready) */
		if (s->outcome.status < PCCX_LINK_JOB_FAULT ||
		    s->outcome.status > PCCX_LINK_JOB_ABORTED) {
			s->outcome.status = PCCX_LINK_JOB_FAULT;
			s->outcome.hw_error = PCCX_LINK_FAULT_BUSY << PCCX_LINK_FAULT_SHIFT;
		}
		s->job_final = true;
		s->st.jobs_done++;
	}
	pccx__le32_put(p, s->job_id);
	pccx__le32_put(p + 4, 0);
	return PCCX_LINK_SUBMIT_REP;
}

int pccx__fw_on_wait(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why)
{
	uint32_t id = pccx__le32_get(r->p), timeout_ms = pccx__le32_get(r->p + 4);
	int n;

	if (!s->job_active || id != s->job_id)
		return pccx__fw_refuse(why, PCCX_LINK_E_NOJOB, id, 0, "no such active job");
	if (!s->job_final && timeout_ms) {
		s->wait_pending = true;
		s->wait_seq = r->hdr->seq;
		s->wait_deadline_ms = r->now_ms + timeout_ms;
		return PCCX_FW_DEFERRED;
	}
	n = pccx__fw_wait_payload(s, s->job_final ? s->outcome.status : PCCX_LINK_JOB_RUNNING);
	if (s->job_final)
		s->job_active = false;
	return n;
}

int pccx__fw_on_reset(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		      struct pccx_fw_refusal *why)
{
	uint32_t flags = pccx__le32_get(r->p), pad = pccx__le32_get(r->p + 4);
	uint8_t *p = pccx__fw_reply_payload(s);
	bool failed;
	uint32_t i;

	if ((flags & ~PCCX_LINK_RESET_FREE_ALL) || pad)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, flags | pad, 0,
				       "undefined flags, or pad not zero");
	failed = s->cfg.exec->reset(s->cfg.exec_ctx) != 0;
	if (s->job_active && !s->job_final) {
		s->outcome.status = PCCX_LINK_JOB_ABORTED;
		s->outcome.hw_error = (failed ? PCCX_LINK_FAULT_WEDGED : PCCX_LINK_FAULT_RESET)
				      << PCCX_LINK_FAULT_SHIFT;
		s->job_final = true;
		s->st.jobs_done++;
	}
	if (flags & PCCX_LINK_RESET_FREE_ALL) {
		/* the device is stopped: nothing uses the buffers, the job goes with them */
		s->job_active = false;
		for (i = 0; i < s->cfg.max_bufs; i++)
			if (s->cfg.bufs[i].handle) {
				s->cfg.exec->buf_free(s->cfg.exec_ctx, s->cfg.bufs[i].handle);
				__builtin_memset(&s->cfg.bufs[i], 0, sizeof(s->cfg.bufs[i]));
			}
	}
	s->wedged = failed;
	pccx__le32_put(p, failed ? 1 : 0);
	pccx__le32_put(p + 4, 0);
	return PCCX_LINK_RESET_REP;
}
