/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * pccx v002 NPU: the /dev/pccx interface (docs/driver.md).
 *
 * Memory is named only by (buffer handle, offset, length): no physical or
 * device address crosses this interface. Every struct is a multiple of 8
 * bytes with explicit padding; padding and reserved fields are "MBZ" (must be
 * zero) and a non-zero value makes the ioctl fail with EINVAL, so they can be
 * given a meaning later. Pointers are passed as __u64.
 *
 * Ioctl numbers are append-only: place new ioctls at the end, never re-order,
 * re-number, replace or remove one. A struct may only grow at its end, and
 * only where the ioctl negotiates sizes (GET_INFO).
 */
#ifndef _UAPI_PCCX_H
#define _UAPI_PCCX_H

#include <linux/ioctl.h>
#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PCCX_UAPI_VERSION 1

/**
 * struct pccx_info - what GET_INFO reports (the payload; it may grow at its end)
 * @uapi_version: %PCCX_UAPI_VERSION of the driver.
 * @flags: %PCCX_INFO_* bits.
 * @hw_id: the ID register (0 on a device without the v002 extensions).
 * @features: the FEATURES register (%PCCX_FEAT_* of the register map, isa/pccx_regs.h).
 * @caps: the CAPS register: [31:0] L2 words, [39:32] instruction FIFO depth,
 *	[47:40] shape entries, [55:48] weight ports, [63:56] DataMover FIFO depth.
 * @clocks: the CLOCKS register: [31:0] core kHz, [63:32] AXI kHz.
 * @dma_addr_bits: width of the device's DMA addresses; every buffer lies below
 *	2^dma_addr_bits.
 * @l2_words: 128-bit words of L2 the validator checks ranges against.
 * @max_insn: most instruction words one SUBMIT may carry.
 * @max_dma: most host DMA descriptors one SUBMIT may carry.
 * @max_stream: most weight-stream descriptors one SUBMIT may carry.
 * @max_jobs: most jobs one open file may have submitted and not yet reaped by
 *	a final WAIT.
 * @max_bo_size: largest size one BO_CREATE may ask for, in bytes.
 * @fd_quota: bytes of buffers one open file may hold.
 * @global_quota: bytes of buffers all open files together may hold.
 * @global_used: bytes of buffers held now, by all open files.
 * @job_timeout_ns: the longest a job may run without progress before it is
 *	declared hung (the driver's limit; SUBMIT may ask for less).
 * @jobs_done: jobs completed since the driver was loaded, all outcomes.
 * @resets: device resets since the driver was loaded.
 * @busy_ns: nanoseconds the device spent running jobs.
 */
struct pccx_info {
	__u32 uapi_version;
	__u32 flags;
	__u64 hw_id;
	__u64 features;
	__u64 caps;
	__u64 clocks;
	__u32 dma_addr_bits;
	__u32 l2_words;
	__u32 max_insn;
	__u32 max_dma;
	__u32 max_stream;
	__u32 max_jobs;
	__u64 max_bo_size;
	__u64 fd_quota;
	__u64 global_quota;
	__u64 global_used;
	__u64 job_timeout_ns;
	__u64 jobs_done;
	__u64 resets;
	__u64 busy_ns;
};

/* pccx_info.flags */
#define PCCX_INFO_EXTENDED  (1u << 0)	/* the ID register holds the pccx magic */
#define PCCX_INFO_IRQ       (1u << 1)	/* completion is interrupt-driven (else polled) */
#define PCCX_INFO_SIMULATED (1u << 2)	/* the device is the simulator (test backend) */
#define PCCX_INFO_WEDGED    (1u << 3)	/* the device is unusable until reset succeeds */

/**
 * struct pccx_get_info - argument of %PCCX_IOCTL_GET_INFO
 * @ptr: in: user address of a struct pccx_info of @size bytes, or 0 to only
 *	learn the size.
 * @size: in: bytes at @ptr; out: sizeof(struct pccx_info) of the driver.
 *	The driver copies min(@size, its size) bytes and zeroes the rest of a
 *	larger buffer, so old and new programs both work.
 * @pad: MBZ.
 */
struct pccx_get_info {
	__u64 ptr;
	__u32 size;
	__u32 pad;
};

/* Access a buffer grants the device (struct pccx_bo_create.flags). */
#define PCCX_BO_DEV_READ  (1u << 0)	/* the device may read it: MEMCPY host->L2, streams */
#define PCCX_BO_DEV_WRITE (1u << 1)	/* the device may write it: L2->host MEMCPY */
#define PCCX_BO_FLAGS     (PCCX_BO_DEV_READ | PCCX_BO_DEV_WRITE)

/**
 * struct pccx_bo_create - argument of %PCCX_IOCTL_BO_CREATE
 * @size: in: bytes wanted (> 0, at most pccx_info.max_bo_size); out: the size
 *	allocated (rounded up to the page size). The memory is zeroed,
 *	physically contiguous, below 2^dma_addr_bits, and counts against the
 *	caller's and the global quota (ENOSPC, with the amounts in the kernel
 *	log, when either would be exceeded).
 * @flags: in: %PCCX_BO_* bits, at least one; others MBZ.
 * @handle: out: non-zero; valid only on the file it was created on.
 * @mmap_offset: out: pass to mmap() on the same file to map the buffer (a
 *	mapping may not extend past the buffer).
 */
struct pccx_bo_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 mmap_offset;
};

/**
 * struct pccx_bo_info - argument of %PCCX_IOCTL_BO_INFO
 * @handle: in: a handle of this file.
 * @flags: out: the %PCCX_BO_* flags it was created with.
 * @size: out: its size in bytes.
 * @mmap_offset: out: as returned by BO_CREATE.
 */
struct pccx_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 mmap_offset;
};

/**
 * struct pccx_bo_destroy - argument of %PCCX_IOCTL_BO_DESTROY
 * @handle: in: a handle of this file. The handle is invalid from now on; the
 *	memory is freed when the last job using it and the last mapping of it
 *	are gone.
 * @pad: MBZ.
 */
struct pccx_bo_destroy {
	__u32 handle;
	__u32 pad;
};

/*
 * Descriptors: the layouts of struct pccx_dma_desc and struct pccx_stream_desc
 * of isa/pccx_job.h (24 bytes each; docs/job.md).
 */
#define PCCX_DESC_TO_DEVICE   1u	/* MEMCPY host -> L2: the device reads the buffer */
#define PCCX_DESC_FROM_DEVICE 2u	/* MEMCPY L2 -> host: the device writes the buffer */

/**
 * struct pccx_ioc_dma_desc - host side of one MEMCPY (named by its desc field)
 * @handle: a buffer of the submitting file.
 * @flags: exactly one of %PCCX_DESC_TO_DEVICE, %PCCX_DESC_FROM_DEVICE.
 * @offset: bytes into the buffer, a multiple of 16.
 * @length: bytes, a multiple of 16, equal to the MEMCPY's transfer.
 */
struct pccx_ioc_dma_desc {
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 length;
};

/**
 * struct pccx_ioc_stream_desc - bytes fed in order to a weight-stream port
 * @handle: a buffer of the submitting file, created with %PCCX_BO_DEV_READ.
 * @port: 0..3.
 * @offset: bytes into the buffer, a multiple of 16.
 * @length: bytes, a multiple of 16.
 */
struct pccx_ioc_stream_desc {
	__u32 handle;
	__u32 port;
	__u64 offset;
	__u64 length;
};

/**
 * struct pccx_submit - argument of %PCCX_IOCTL_SUBMIT
 * @insn_ptr: in: user address of @n_insn 64-bit instruction words.
 * @dma_ptr: in: user address of @n_dma struct pccx_ioc_dma_desc.
 * @stream_ptr: in: user address of @n_stream struct pccx_ioc_stream_desc.
 * @n_insn: in: 1..pccx_info.max_insn.
 * @n_dma: in: 0..pccx_info.max_dma.
 * @n_stream: in: 0..pccx_info.max_stream.
 * @flags: in: MBZ.
 * @timeout_ns: in: how long the job may go without progress before it is
 *	declared hung; 0 or more than pccx_info.job_timeout_ns means the
 *	driver's limit.
 * @job_id: out: identifies the job to WAIT; unique per device, never 0.
 * @verr: out: 0, or the validator's error code (enum pccx_isa_err of
 *	isa/pccx_isa.h) when the job was refused.
 * @vwhere: out: what @vindex counts (enum pccx_vwhere: 0 job, 1 instruction,
 *	2 host DMA descriptor, 3 stream descriptor, 4 port).
 * @vindex: out: index of the offending word, descriptor or port.
 * @vfield: out: the instruction field at fault (enum pccx_field_id), or -1.
 * @vexpected: out: detail, e.g. bytes the instructions consume.
 * @vactual: out: detail, e.g. bytes the descriptors provide.
 *
 * The driver copies the words and descriptors into kernel memory and runs
 * the validator (isa/validate.c) on its copy: a refused job never reaches the
 * device, the ioctl fails (EINVAL, or ENOENT for an unknown handle, EOVERFLOW
 * for a range outside a buffer, EACCES for a buffer without the access, E2BIG
 * for a size limit) and @verr..@vactual say why. The fields from @job_id on
 * are written back on success and on a validator refusal.
 */
struct pccx_submit {
	__u64 insn_ptr;
	__u64 dma_ptr;
	__u64 stream_ptr;
	__u32 n_insn;
	__u32 n_dma;
	__u32 n_stream;
	__u32 flags;
	__u64 timeout_ns;
	__u64 job_id;
	__s32 verr;
	__u32 vwhere;
	__u32 vindex;
	__s32 vfield;
	__u64 vexpected;
	__u64 vactual;
};

/* struct pccx_wait.status */
#define PCCX_JOB_QUEUED   0u	/* accepted, not started */
#define PCCX_JOB_RUNNING  1u	/* on the device */
#define PCCX_JOB_DONE     2u	/* completed: every instruction retired, no error */
#define PCCX_JOB_FAULT    3u	/* the device reported an error (see hw_error) */
#define PCCX_JOB_TIMEOUT  4u	/* no progress within the timeout: killed, device reset */
#define PCCX_JOB_ABORTED  5u	/* cancelled: RESET ioctl, device removal, or recovery failed */

/*
 * struct pccx_wait.hw_error[31:24]: why a job did not end DONE. 2-8 are the command engine's
 * kinds (%PCCX_JOB_FAULT); 9-14 say why a job ended TIMEOUT or ABORTED.
 */
#define PCCX_FAULT_KIND_SHIFT 24
#define PCCX_FAULT_BUSY       2u	/* the device was not idle when the job started */
#define PCCX_FAULT_DEVICE     3u	/* the device set its ERROR register */
#define PCCX_FAULT_DM_STATUS  4u	/* a DataMover status without OKAY */
#define PCCX_FAULT_DM_TAG     5u	/* a DataMover status with an unexpected tag */
#define PCCX_FAULT_XLATE      6u	/* a buffer range could not be translated */
#define PCCX_FAULT_ADDR       7u	/* a device address wider than the device accepts */
#define PCCX_FAULT_RETIRED    8u	/* idle, but fewer or more instructions retired */
#define PCCX_FAULT_HUNG       9u	/* TIMEOUT: no progress for the job's timeout */
#define PCCX_FAULT_HANG_INJECTED 10u	/* TIMEOUT: a hang injected through debugfs */
#define PCCX_FAULT_RESET      11u	/* ABORTED: a RESET ioctl stopped it */
#define PCCX_FAULT_CLOSED     12u	/* ABORTED: its file was closed */
#define PCCX_FAULT_REMOVED    13u	/* ABORTED: the device went away */
#define PCCX_FAULT_WEDGED     14u	/* ABORTED: a reset failed, the device is wedged */

/**
 * struct pccx_wait - argument of %PCCX_IOCTL_WAIT
 * @job_id: in: a job of this file, as SUBMIT returned it.
 * @timeout_ns: in: absolute CLOCK_MONOTONIC deadline; one in the past (such as
 *	0) makes WAIT not block.
 * @flags: in: MBZ.
 * @status: out: %PCCX_JOB_*.
 * @hw_error: out: 0 for %PCCX_JOB_DONE; for every other final status [31:24]
 *	says why (%PCCX_FAULT_*); for %PCCX_FAULT_DEVICE [23:0] are the ERROR
 *	register's (cause in [7:0], ISA error code in [23:16]); for the
 *	DataMover kinds [15:8] is the channel and [7:0] the status byte.
 * @fault_index: out: index of the faulting instruction (ERROR[63:32] for a
 *	device error), else the instruction being fed when the job stopped
 *	(for TIMEOUT and ABORTED: the words pushed so far).
 * @error_info: out: ERROR_INFO (faulting word or address) for a device error,
 *	else the failure's detail (status byte, address, RETIRED).
 * @submit_ns: out: CLOCK_MONOTONIC time of SUBMIT.
 * @start_ns: out: when the job reached the device (0 if it never did).
 * @end_ns: out: when it finished (0 if not finished).
 * @retired: out: instructions the device retired for this job.
 *
 * Returns 0 when the job completed (%PCCX_JOB_DONE) and reaps it: the id is
 * unknown afterwards. Each other final outcome also reaps the job and has its
 * own errno: EIO (%PCCX_JOB_FAULT), ETIMEDOUT (%PCCX_JOB_TIMEOUT), ECANCELED
 * (%PCCX_JOB_ABORTED). A job not yet finished: ETIME when the deadline passed
 * (the job is left alone, WAIT again later), EINTR when a signal arrived
 * (restarted transparently under SA_RESTART). ENOENT: not a job of this file,
 * or already reaped.
 */
struct pccx_wait {
	__u64 job_id;
	__s64 timeout_ns;
	__u32 flags;
	__u32 status;
	__u32 hw_error;
	__u32 fault_index;
	__u64 error_info;
	__u64 submit_ns;
	__u64 start_ns;
	__u64 end_ns;
	__u64 retired;
};

/**
 * struct pccx_reset - argument of %PCCX_IOCTL_RESET (needs CAP_SYS_ADMIN)
 * @flags: in: MBZ.
 * @pad: MBZ.
 *
 * Aborts the running job (%PCCX_JOB_ABORTED), soft-resets the device and
 * clears the wedged state if the reset succeeds; queued jobs then run.
 */
struct pccx_reset {
	__u32 flags;
	__u32 pad;
};

#define PCCX_IOCTL_MAGIC 0xCC

/* Append-only: never re-order, re-number or remove. */
#define PCCX_IOCTL_GET_INFO   _IOWR(PCCX_IOCTL_MAGIC, 0x00, struct pccx_get_info)
#define PCCX_IOCTL_BO_CREATE  _IOWR(PCCX_IOCTL_MAGIC, 0x01, struct pccx_bo_create)
#define PCCX_IOCTL_BO_INFO    _IOWR(PCCX_IOCTL_MAGIC, 0x02, struct pccx_bo_info)
#define PCCX_IOCTL_BO_DESTROY _IOW(PCCX_IOCTL_MAGIC, 0x03, struct pccx_bo_destroy)
#define PCCX_IOCTL_SUBMIT     _IOWR(PCCX_IOCTL_MAGIC, 0x04, struct pccx_submit)
#define PCCX_IOCTL_WAIT       _IOWR(PCCX_IOCTL_MAGIC, 0x05, struct pccx_wait)
#define PCCX_IOCTL_RESET      _IOW(PCCX_IOCTL_MAGIC, 0x06, struct pccx_reset)

#ifdef __cplusplus
}
#endif
#endif /* _UAPI_PCCX_H */
