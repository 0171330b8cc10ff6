/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * Test backend only: the protocol between pccx_simlink.ko and the simulator
 * process (tests/qemu/pccx-simd.c) over /dev/pccx_simlink.
 *
 * The process ATTACHes, then read()s one struct pccx_simlink_msg at a time
 * (a register access of the driver, or a DMA window opening or closing) and
 * answers each with a write() of the same struct carrying the same seq (and
 * the value read). It reaches host memory only by mmap()ing a window the
 * driver has open, at offset window-id * page size, for as long as the window
 * stays open: the "shadow IOMMU". It reports device accesses outside every
 * window with FAULT and raises the interrupt line with IRQ.
 */
#ifndef PCCX_SIMLINK_H
#define PCCX_SIMLINK_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PCCX_SIMLINK_RD64      1	/* addr: offset; reply value */
#define PCCX_SIMLINK_WR64      2	/* addr: offset; value */
#define PCCX_SIMLINK_RD32      3
#define PCCX_SIMLINK_WR32      4
#define PCCX_SIMLINK_WIN_OPEN  5	/* addr: device address, size, access, id */
#define PCCX_SIMLINK_WIN_CLOSE 6	/* addr, id: unmap before answering */

/**
 * struct pccx_simlink_msg - one request and its answer
 * @seq: request number; the answer repeats it.
 * @op: %PCCX_SIMLINK_*.
 * @addr: register offset or device address.
 * @value: value written, or (answer) value read.
 * @size: window size in bytes.
 * @id: window id (mmap offset = id * page size).
 * @access: window access, PCCX_BO_DEV_* bits.
 */
struct pccx_simlink_msg {
	__u32 seq;
	__u32 op;
	__u64 addr;
	__u64 value;
	__u64 size;
	__u32 id;
	__u32 access;
};

/**
 * struct pccx_simlink_fault - a device access the simulator refused
 * @addr: device address.
 * @len: bytes.
 * @write: 1 for a device write.
 * @pad: MBZ.
 */
struct pccx_simlink_fault {
	__u64 addr;
	__u64 len;
	__u32 write;
	__u32 pad;
};

#define PCCX_SIMLINK_MAGIC 0xCD
/* Create the device (or, with a device-tree node, bind the backend to it). */
#define PCCX_SIMLINK_ATTACH _IO(PCCX_SIMLINK_MAGIC, 0)
/* The interrupt line went up. */
#define PCCX_SIMLINK_IRQ    _IO(PCCX_SIMLINK_MAGIC, 1)
#define PCCX_SIMLINK_FAULT  _IOW(PCCX_SIMLINK_MAGIC, 2, struct pccx_simlink_fault)

#endif /* PCCX_SIMLINK_H */
