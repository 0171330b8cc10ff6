// SPDX-License-Identifier: MIT
/* The /dev/pccx executor of the board daemon (kexec.h). */
#include "kexec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_dev.h"

/* How long one poll may block in WAIT: the link is read again in between. */
#define POLL_NS         2000000

int pccx__kexec_open(struct pccx_kexec *x, const char *path, uint32_t max_bufs, char *msg,
		     size_t n)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "%s", path ? path : PCCX_KERNEL_DEV_PATH);
	x->fd = pccx__kernel_dev_open(x->path);
	if (x->fd < 0) {
		snprintf(msg, n, "%s: %s", x->path, strerror(-x->fd));
		return x->fd;
	}
	x->bufs = calloc(max_bufs, sizeof(*x->bufs));
	if (!x->bufs) {
		pccx__kernel_dev_close(x->fd);
		snprintf(msg, n, "out of memory");
		return -ENOMEM;
	}
	x->max_bufs = max_bufs;
	x->next_handle = 1;
	return 0;
}

static void release(struct pccx_kexec *x, struct pccx_kexec_buf *b, bool destroy)
{
	if (b->kh) {
		(void)pccx__kernel_dev_bo_unmap(b->mem, b->size);
		if (destroy)
			(void)pccx__kernel_dev_bo_destroy(x->fd, b->kh);
	} else {
		free(b->mem);
		x->host_bytes -= b->size;
	}
	memset(b, 0, sizeof(*b));
}

void pccx__kexec_close(struct pccx_kexec *x)
{
	uint32_t i;

	if (!x->bufs)
		return;
	/* closing the file destroys every buffer object and aborts the job */
	for (i = 0; i < x->max_bufs; i++)
		if (x->bufs[i].handle)
			release(x, &x->bufs[i], false);
	pccx__kernel_dev_close(x->fd);
	free(x->bufs);
	free(x->dma);
	free(x->stream);
	memset(x, 0, sizeof(*x));
	x->fd = -1;
}

static struct pccx_kexec_buf *find(struct pccx_kexec *x, uint32_t handle)
{
	uint32_t i;

	for (i = 0; handle && i < x->max_bufs; i++)
		if (x->bufs[i].handle == handle)
			return &x->bufs[i];
	return NULL;
}

static int k_info(void *ctx, struct pccx_fw_dev_info *out)
{
	struct pccx_kexec *x = ctx;
	struct pccx_info ki;
	uint64_t fd_left, global_left;

	memset(out, 0, sizeof(*out));
	if (pccx__kernel_dev_info(x->fd, &ki))
		return -1;
	out->hw_id = ki.hw_id;
	out->features = ki.features;
	out->caps = ki.caps;
	out->clocks = ki.clocks;
	out->dma_addr_bits = ki.dma_addr_bits;
	out->l2_words = ki.l2_words;
	out->max_buf_size = ki.max_bo_size;
	/* what this file may still take: its own quota and the global one both bound it */
	out->memory_total = ki.fd_quota < ki.global_quota ? ki.fd_quota : ki.global_quota;
	fd_left = ki.fd_quota;
	for (uint32_t i = 0; i < x->max_bufs; i++)
		if (x->bufs[i].kh)
			fd_left -= x->bufs[i].size < fd_left ? x->bufs[i].size : fd_left;
	global_left = ki.global_quota > ki.global_used ? ki.global_quota - ki.global_used : 0;
	out->memory_free = fd_left < global_left ? fd_left : global_left;
	out->flags = (ki.flags & PCCX_INFO_SIMULATED ? PCCX_LINK_INFO_SIMULATED : 0) |
		     (ki.flags & PCCX_INFO_WEDGED ? PCCX_LINK_INFO_WEDGED : 0);
	out->resets = ki.resets;
	return 0;
}

static uint32_t new_handle(struct pccx_kexec *x)
{
	uint32_t h;

	/* never 0, never one in use; not reused at once, so a stale handle is refused */
	do {
		h = x->next_handle++;
		if (!x->next_handle)
			x->next_handle = 1;
	} while (!h || find(x, h));
	return h;
}

static int k_buf_alloc(void *ctx, uint64_t size, uint32_t access, uint32_t *handle,
		       uint8_t **mem, uint64_t *largest)
{
	struct pccx_kexec *x = ctx;
	struct pccx_kexec_buf *b = NULL;
	struct pccx_fw_dev_info di;
	uint32_t i;

	for (i = 0; !b && i < x->max_bufs; i++)
		if (!x->bufs[i].handle)
			b = &x->bufs[i];
	*largest = 0;
	if (!b)
		return PCCX_LINK_E_NOSPACE;
	if (!access) {
		uint64_t left = PCCX_KEXEC_HOST_BYTES - x->host_bytes;
		uint64_t sz = (size + 15) & ~15ull;

		*largest = left;
		if (sz > left || !(b->mem = aligned_alloc(16, sz)))
			return PCCX_LINK_E_NOSPACE;
		memset(b->mem, 0, sz);
		b->size = sz;
		x->host_bytes += sz;
	} else {
		struct pccx_bo_create bo;
		void *map;

		if (pccx__kernel_dev_bo_create(x->fd, size, access, &bo)) {
			if (!k_info(x, &di))
				*largest = di.memory_free < di.max_buf_size ? di.memory_free :
					   di.max_buf_size;
			return PCCX_LINK_E_NOSPACE;
		}
		if (pccx__kernel_dev_bo_map(x->fd, &bo, &map)) {
			(void)pccx__kernel_dev_bo_destroy(x->fd, bo.handle);
			return PCCX_LINK_E_NOSPACE;
		}
		b->kh = bo.handle;
		b->size = bo.size;
		b->mem = map;
	}
	b->handle = new_handle(x);
	*handle = b->handle;
	*mem = b->mem;
	return 0;
}

static void k_buf_free(void *ctx, uint32_t handle)
{
	struct pccx_kexec *x = ctx;
	struct pccx_kexec_buf *b = find(x, handle);

	if (b)
		release(x, b, true);
}

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	void *q;

	if (need <= *cap)
		return true;
	q = realloc(*p, need * elem);
	if (!q)
		return false;
	*p = q;
	*cap = need;
	return true;
}

/* The job's descriptors with the driver's handles; false for a host-only or unknown one. */
static bool translate(struct pccx_kexec *x, const struct pccx_job_view *job)
{
	struct pccx_kexec_buf *b;
	uint32_t i;

	if (!grow((void **)&x->dma, &x->cap_dma, job->n_dma, sizeof(*x->dma)) ||
	    !grow((void **)&x->stream, &x->cap_stream, job->n_stream, sizeof(*x->stream)))
		return false;
	for (i = 0; i < job->n_dma; i++) {
		b = find(x, job->dma[i].handle);
		if (!b || !b->kh)
			return false;
		x->dma[i] = job->dma[i];
		x->dma[i].handle = b->kh;
	}
	for (i = 0; i < job->n_stream; i++) {
		b = find(x, job->stream[i].handle);
		if (!b || !b->kh)
			return false;
		x->stream[i] = job->stream[i];
		x->stream[i].handle = b->kh;
	}
	return true;
}

static void fault(struct pccx_fw_outcome *out, uint32_t kind)
{
	memset(out, 0, sizeof(*out));
	out->status = PCCX_LINK_JOB_FAULT;
	out->hw_error = kind << PCCX_LINK_FAULT_SHIFT;
}

static int k_start(void *ctx, const struct pccx_job_view *job, uint32_t timeout_ms,
		   struct pccx_fw_outcome *out)
{
	struct pccx_kexec *x = ctx;
	struct pccx_submit sub;
	int r;

	if (!translate(x, job)) {
		/* the core validated the job over our table: only memory can fail here */
		fault(out, PCCX_LINK_FAULT_DEVICE);
		return -1;
	}
	/* the UAPI descriptors have the layouts of isa/pccx_job.h (the driver asserts it) */
	r = pccx__kernel_dev_submit(x->fd, job->insn, job->n_insn, (const void *)x->dma,
				    job->n_dma, (const void *)x->stream, job->n_stream,
				    (uint64_t)timeout_ms * 1000000, &sub);
	if (r) {
		fault(out, r == -EBUSY ? PCCX_LINK_FAULT_BUSY : PCCX_LINK_FAULT_DEVICE);
		out->error_info = (uint64_t)-r;
		return -1;
	}
	x->job_id = sub.job_id;
	x->running = true;
	return 0;
}

static uint32_t outcome(const struct pccx_wait *w, int r, struct pccx_fw_outcome *out)
{
	memset(out, 0, sizeof(*out));
	out->hw_error = w->hw_error;
	out->fault_index = w->fault_index;
	out->error_info = w->error_info;
	out->retired = w->retired;
	out->start_ns = w->start_ns;
	out->end_ns = w->end_ns;
	switch (r) {
	case 0:
		out->status = PCCX_LINK_JOB_DONE;
		break;
	case -ETIMEDOUT:
		out->status = PCCX_LINK_JOB_TIMEOUT;
		break;
	case -ECANCELED:
		out->status = PCCX_LINK_JOB_ABORTED;
		break;
	case -EIO:
		out->status = PCCX_LINK_JOB_FAULT;
		break;
	default:
		/* ENOENT and the like: the driver lost the job; report it as a device fault */
		fault(out, PCCX_LINK_FAULT_DEVICE);
		out->error_info = (uint64_t)-r;
		break;
	}
	return out->status;
}

static uint32_t k_poll(void *ctx, struct pccx_fw_outcome *out)
{
	struct pccx_kexec *x = ctx;
	struct pccx_wait w;
	int r;

	if (!x->running) {
		fault(out, PCCX_LINK_FAULT_DEVICE);
		return out->status;
	}
	r = pccx__kernel_dev_wait(x->fd, x->job_id, pccx__kernel_dev_deadline(POLL_NS), &w);
	if (r == -ETIME || r == -EINTR)
		return PCCX_LINK_JOB_RUNNING;
	x->running = false;
	return outcome(&w, r, out);
}

static int k_reset(void *ctx)
{
	struct pccx_kexec *x = ctx;
	struct pccx_wait w;
	int r = pccx__kernel_dev_reset(x->fd), rw;

	if (x->running) {
		/* the reset aborted it (or it had ended): reap it so the next job starts clean */
		do
			rw = pccx__kernel_dev_wait(x->fd, x->job_id,
						   pccx__kernel_dev_deadline(1000000000), &w);
		while (rw == -EINTR);
		if (rw == -ETIME)
			return -1;
		x->running = false;
	}
	return r ? -1 : 0;
}

const struct pccx_fw_exec_ops pccx__kexec_ops = {
	.info = k_info,
	.buf_alloc = k_buf_alloc,
	.buf_free = k_buf_free,
	.start = k_start,
	.poll = k_poll,
	.reset = k_reset,
};
