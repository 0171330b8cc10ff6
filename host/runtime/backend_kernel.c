// SPDX-License-Identifier: MIT
/* The kernel backend: /dev/pccx (backend_kernel.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_kernel.h"
#include "diag.h"

struct kb_buf {
	struct pccx_bo_create bo;
	void *map;
};

struct pccx_kernel_backend {
	int fd;
	struct kb_buf *buf;
	uint32_t n_buf, cap_buf;
};

int pccx__kernel_backend_create(const char *path, struct pccx_kernel_backend **out, pccx_diag *d)
{
	struct pccx_kernel_backend *b;
	int fd = pccx__kernel_dev_open(path);

	*out = NULL;
	if (fd < 0)
		return pccx__fail(d, fd == -ENOENT ? PCCX_ERR_NOT_FOUND : PCCX_ERR_IO, "%s: %s",
				  path ? path : PCCX_KERNEL_DEV_PATH, strerror(-fd));
	b = calloc(1, sizeof(*b));
	if (!b) {
		pccx__kernel_dev_close(fd);
		return pccx__fail(d, PCCX_ERR_NOMEM, "kernel backend: out of memory");
	}
	b->fd = fd;
	*out = b;
	return 0;
}

void pccx__kernel_backend_destroy(struct pccx_kernel_backend *b)
{
	uint32_t i;

	if (!b)
		return;
	for (i = 0; i < b->n_buf; i++)
		if (b->buf[i].map)
			pccx__kernel_dev_bo_unmap(b->buf[i].map, b->buf[i].bo.size);
	/* closing the file frees every buffer and job the driver holds for it */
	pccx__kernel_dev_close(b->fd);
	free(b->buf);
	free(b);
}

int pccx__kernel_backend_info(struct pccx_kernel_backend *b, struct pccx_info *info)
{
	return pccx__kernel_dev_info(b->fd, info) ? PCCX_ERR_IO : 0;
}

static struct kb_buf *find(struct pccx_kernel_backend *b, uint32_t handle)
{
	uint32_t i;

	for (i = 0; i < b->n_buf; i++)
		if (b->buf[i].map && b->buf[i].bo.handle == handle)
			return &b->buf[i];
	return NULL;
}

int pccx__kernel_backend_buf_alloc(struct pccx_kernel_backend *b, uint64_t size, uint32_t access,
				   uint32_t *handle,
				   pccx_diag *d)
{
	struct kb_buf *nb;
	int r;

	if (b->n_buf == b->cap_buf) {
		uint32_t cap = b->cap_buf ? 2 * b->cap_buf : 16;

		nb = realloc(b->buf, cap * sizeof(*nb));
		if (!nb)
			return pccx__fail(d, PCCX_ERR_NOMEM, "kernel backend: out of memory");
		b->buf = nb;
		b->cap_buf = cap;
	}
	nb = &b->buf[b->n_buf];
	memset(nb, 0, sizeof(*nb));
	r = pccx__kernel_dev_bo_create(b->fd, size, access, &nb->bo);
	if (r)
		return pccx__fail(d, r == -ENOSPC || r == -ENOMEM ? PCCX_ERR_NOMEM :
				  r == -E2BIG || r == -EINVAL ? PCCX_ERR_RANGE : PCCX_ERR_IO,
				  "buffer of %llu bytes: %s%s", (unsigned long long)size, strerror(-r),
				  r == -ENOSPC ? " (a quota: the kernel log says which; the pccx module "
				  "parameters fd_quota and global_quota set them)" : "");
	r = pccx__kernel_dev_bo_map(b->fd, &nb->bo, &nb->map);
	if (r) {
		(void)pccx__kernel_dev_bo_destroy(b->fd, nb->bo.handle);
		return pccx__fail(d, PCCX_ERR_IO, "mapping a buffer: %s", strerror(-r));
	}
	b->n_buf++;
	*handle = nb->bo.handle;
	return 0;
}

int pccx__kernel_backend_buf_free(struct pccx_kernel_backend *b, uint32_t handle)
{
	struct kb_buf *x = find(b, handle);

	if (!x)
		return PCCX_ERR_NOT_FOUND;
	pccx__kernel_dev_bo_unmap(x->map, x->bo.size);
	*x = b->buf[--b->n_buf];
	return pccx__kernel_dev_bo_destroy(b->fd, handle) ? PCCX_ERR_IO : 0;
}

void *pccx__kernel_backend_buf_map(struct pccx_kernel_backend *b, uint32_t handle, uint64_t *size)
{
	struct kb_buf *x = find(b, handle);

	if (!x)
		return NULL;
	if (size)
		*size = x->bo.size;
	return x->map;
}

int pccx__kernel_backend_submit_wait(struct pccx_kernel_backend *b,
				     const struct pccx_job_view *job,
				     const struct pccx_kernel_backend_opts *opts,
				     struct pccx_kernel_backend_result *res, pccx_diag *d)
{
	static const char *const where[] = { "job", "instruction", "host DMA descriptor",
					     "stream descriptor", "port" };
	struct pccx_kernel_backend_result dummy;
	struct timespec t0, t1;
	uint64_t wait_ns = opts && opts->wait_ns ? opts->wait_ns : 600000000000ull;
	int r;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the UAPI descriptors have the layouts of isa/pccx_job.h (the driver asserts it) */
	r = pccx__kernel_dev_submit(b->fd, job->insn, job->n_insn, (const void *)job->dma,
				    job->n_dma,
				    (const void *)job->stream, job->n_stream,
				    opts ? opts->timeout_ns : 0, &res->submit);
	if (r) {
		const struct pccx_submit *s = &res->submit;

		if (s->verr)
			return pccx__fail(d, PCCX_ERR_VALIDATE,
					  "job refused by the driver: %s at %s %u (%s)",
					  pccx__isa_errname(s->verr),
					  s->vwhere < 5 ? where[s->vwhere] : "?", s->vindex,
					  pccx__isa_strerror(s->verr));
		return pccx__fail(d, r == -ENOMEM ? PCCX_ERR_NOMEM :
				  r == -EBUSY ? PCCX_ERR_BUSY : PCCX_ERR_IO,
				  "submit: %s", strerror(-r));
	}
	do
		r = pccx__kernel_dev_wait(b->fd, res->submit.job_id,
					  pccx__kernel_dev_deadline((int64_t)wait_ns), &res->wait);
	while (r == -EINTR);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->host_seconds = (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	res->status = res->wait.status;
	switch (r) {
	case 0:
		return 0;
	case -EIO:
		return pccx__fail(d, PCCX_ERR_DEVICE,
				  "device fault: hw_error 0x%08x at instruction %u (info 0x%llx): %s",
				  res->wait.hw_error, res->wait.fault_index,
				  (unsigned long long)res->wait.error_info,
				  pccx__kernel_dev_fault_name(res->wait.hw_error));
	case -ETIMEDOUT:
		return pccx__fail(d, PCCX_ERR_TIMEOUT,
				  "job hung: %s (%u instructions pushed, %llu retired); the driver "
				  "reset the device", pccx__kernel_dev_fault_name(res->wait.hw_error),
				  res->wait.fault_index, (unsigned long long)res->wait.retired);
	case -ECANCELED:
		return pccx__fail(d, PCCX_ERR_BUSY, "job aborted: %s",
				  pccx__kernel_dev_fault_name(res->wait.hw_error));
	case -ETIME:
		return pccx__fail(d, PCCX_ERR_TIMEOUT, "job still %s after %llu ns",
				  pccx__kernel_dev_status_name(res->wait.status),
				  (unsigned long long)wait_ns);
	default:
		return pccx__fail(d, PCCX_ERR_IO, "wait: %s", strerror(-r));
	}
}

