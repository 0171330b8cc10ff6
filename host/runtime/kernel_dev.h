/* SPDX-License-Identifier: MIT */
/*
 * Thin wrappers over the /dev/pccx ioctls (driver/include/uapi/pccx.h), used by
 * the kernel backend of libpccx and by the driver's guest tests. Every function
 * returns 0 or a negative errno (the ioctl's), never touches errno's meaning,
 * and does no allocation.
 */
#ifndef PCCX_KERNEL_DEV_H
#define PCCX_KERNEL_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "uapi/pccx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PCCX_KERNEL_DEV_PATH "/dev/pccx"

/* Open the device node (NULL: PCCX_KERNEL_DEV_PATH). Returns a file descriptor or -errno. */
int pccx__kernel_dev_open(const char *path);
void pccx__kernel_dev_close(int fd);

/* GET_INFO into *info (zeroed first; a driver with a smaller struct leaves the tail 0). */
int pccx__kernel_dev_info(int fd, struct pccx_info *info);

/* BO_CREATE: *size in bytes is rounded up by the driver; fills handle and mmap offset. */
int pccx__kernel_dev_bo_create(int fd, uint64_t size, uint32_t flags, struct pccx_bo_create *out);
int pccx__kernel_dev_bo_info(int fd, uint32_t handle, struct pccx_bo_info *out);
int pccx__kernel_dev_bo_destroy(int fd, uint32_t handle);
/* mmap the whole buffer read/write; *map receives the address. */
int pccx__kernel_dev_bo_map(int fd, const struct pccx_bo_create *bo, void **map);
int pccx__kernel_dev_bo_unmap(void *map, uint64_t size);

/*
 * SUBMIT. On a validator refusal the return is the ioctl's errno and *sub holds
 * verr/vwhere/vindex/vfield/vexpected/vactual; on success sub->job_id.
 */
int pccx__kernel_dev_submit(int fd, const uint64_t *insn, uint32_t n_insn,
			    const struct pccx_ioc_dma_desc *dma, uint32_t n_dma,
			    const struct pccx_ioc_stream_desc *stream, uint32_t n_stream,
			    uint64_t timeout_ns, struct pccx_submit *sub);

/*
 * WAIT with an absolute CLOCK_MONOTONIC deadline (pccx__kernel_dev_deadline(ns from now)).
 * Returns 0 (done), -EIO (device fault), -ETIMEDOUT (hung, device reset), -ECANCELED
 * (aborted), -ETIME (deadline passed, job still pending), -EINTR, -ENOENT.
 */
int pccx__kernel_dev_wait(int fd, uint64_t job_id, int64_t deadline_ns, struct pccx_wait *out);
int64_t pccx__kernel_dev_deadline(int64_t ns_from_now);

/* RESET (CAP_SYS_ADMIN). */
int pccx__kernel_dev_reset(int fd);

/* Name of a PCCX_JOB_* status. */
const char *pccx__kernel_dev_status_name(uint32_t status);
/* Why a job did not end DONE, from struct pccx_wait.hw_error[31:24]. */
const char *pccx__kernel_dev_fault_name(uint32_t hw_error);

#ifdef __cplusplus
}
#endif
#endif /* PCCX_KERNEL_DEV_H */
