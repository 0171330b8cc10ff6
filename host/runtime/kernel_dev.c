// SPDX-License-Identifier: MIT
/*
 * /dev/pccx ioctl wrappers (see kernel_dev.h).
 */
#include "kernel_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR && req != PCCX_IOCTL_WAIT);
	return r < 0 ? -errno : 0;
}

int pccx__kernel_dev_open(const char *path)
{
	int fd = open(path ? path : PCCX_KERNEL_DEV_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void pccx__kernel_dev_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int pccx__kernel_dev_info(int fd, struct pccx_info *info)
{
	struct pccx_get_info gi;

	memset(info, 0, sizeof(*info));
	memset(&gi, 0, sizeof(gi));
	gi.ptr = (uint64_t)(uintptr_t)info;
	gi.size = sizeof(*info);
	return xioctl(fd, PCCX_IOCTL_GET_INFO, &gi);
}

int pccx__kernel_dev_bo_create(int fd, uint64_t size, uint32_t flags, struct pccx_bo_create *out)
{
	memset(out, 0, sizeof(*out));
	out->size = size;
	out->flags = flags;
	return xioctl(fd, PCCX_IOCTL_BO_CREATE, out);
}

int pccx__kernel_dev_bo_info(int fd, uint32_t handle, struct pccx_bo_info *out)
{
	memset(out, 0, sizeof(*out));
	out->handle = handle;
	return xioctl(fd, PCCX_IOCTL_BO_INFO, out);
}

int pccx__kernel_dev_bo_destroy(int fd, uint32_t handle)
{
	struct pccx_bo_destroy d;

	memset(&d, 0, sizeof(d));
	d.handle = handle;
	return xioctl(fd, PCCX_IOCTL_BO_DESTROY, &d);
}

int pccx__kernel_dev_bo_map(int fd, const struct pccx_bo_create *bo, void **map)
{
	void *p = mmap(NULL, (size_t)bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)bo->mmap_offset);

	if (p == MAP_FAILED)
		return -errno;
	*map = p;
	return 0;
}

int pccx__kernel_dev_bo_unmap(void *map, uint64_t size)
{
	return munmap(map, (size_t)size) ? -errno : 0;
}

int pccx__kernel_dev_submit(int fd, const uint64_t *insn, uint32_t n_insn,
			    const struct pccx_ioc_dma_desc *dma, uint32_t n_dma,
			    const struct pccx_ioc_stream_desc *stream, uint32_t n_stream,
			    uint64_t timeout_ns, struct pccx_submit *sub)
{
	memset(sub, 0, sizeof(*sub));
	sub->insn_ptr = (uint64_t)(uintptr_t)insn;
	sub->dma_ptr = (uint64_t)(uintptr_t)dma;
	sub->stream_ptr = (uint64_t)(uintptr_t)stream;
	sub->n_insn = n_insn;
	sub->n_dma = n_dma;
	sub->n_stream = n_stream;
	sub->timeout_ns = timeout_ns;
	return xioctl(fd, PCCX_IOCTL_SUBMIT, sub);
}

int64_t pccx__kernel_dev_deadline(int64_t ns_from_now)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + ns_from_now;
}

int pccx__kernel_dev_wait(int fd, uint64_t job_id, int64_t deadline_ns, struct pccx_wait *out)
{
	memset(out, 0, sizeof(*out));
	out->job_id = job_id;
	out->timeout_ns = deadline_ns;
	return xioctl(fd, PCCX_IOCTL_WAIT, out);
}

int pccx__kernel_dev_reset(int fd)
{
	struct pccx_reset r;

	memset(&r, 0, sizeof(r));
	return xioctl(fd, PCCX_IOCTL_RESET, &r);
}

const char *pccx__kernel_dev_status_name(uint32_t status)
{
	static const char *const names[] = { "queued", "running", "done", "fault", "timeout",
					     "aborted" };

	return status < sizeof(names) / sizeof(names[0]) ? names[status] : "unknown";
}

const char *pccx__kernel_dev_fault_name(uint32_t hw_error)
{
	static const char *const names[] = {
		[PCCX_FAULT_BUSY] = "the device was busy at the start",
		[PCCX_FAULT_DEVICE] = "the device reported an error",
		[PCCX_FAULT_DM_STATUS] = "a DataMover status without OKAY",
		[PCCX_FAULT_DM_TAG] = "a DataMover status with an unexpected tag",
		[PCCX_FAULT_XLATE] = "a buffer range could not be translated",
		[PCCX_FAULT_ADDR] = "a device address too wide for the device",
		[PCCX_FAULT_RETIRED] = "idle with another instruction count",
		[PCCX_FAULT_HUNG] = "no progress within the timeout",
		[PCCX_FAULT_HANG_INJECTED] = "a hang injected through debugfs",
		[PCCX_FAULT_RESET] = "a RESET stopped it",
		[PCCX_FAULT_CLOSED] = "its file was closed",
		[PCCX_FAULT_REMOVED] = "the device went away",
		[PCCX_FAULT_WEDGED] = "a reset failed: the device is wedged",
	};
	uint32_t kind = hw_error >> PCCX_FAULT_KIND_SHIFT;

	return kind < sizeof(names) / sizeof(names[0]) && names[kind] ? names[kind] : "unknown";
}
