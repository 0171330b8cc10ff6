/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How pccx.ko reaches the device's registers: real MMIO, or a test backend
 * (pccx_simlink.ko, which forwards every access to the cycle simulator). A
 * backend other than MMIO hands its ops table to the driver as the platform
 * device's platform data.
 */
#ifndef PCCX_HW_H
#define PCCX_HW_H

#include <linux/bits.h>
#include <linux/types.h>

/**
 * struct pccx_hw_ops - register access and DMA-window notifications
 * @rd64: read a 64-bit control-page register at byte offset @off.
 * @wr64: write a 64-bit control-page register.
 * @rd32: read a 32-bit register at byte offset @off from the device base
 *	(DataMover pages).
 * @wr32: write a 32-bit register.
 * @dma_window: optional. The driver calls it with @open true before a job
 *	may make the device touch [@addr, @addr + @size) and with @open false
 *	once the device is idle or reset and will not touch it again; @cpu is
 *	the kernel mapping, @access %PCCX_BO_DEV_* bits. A test backend refuses
 *	device accesses outside every open window.
 *
 * The accessors may sleep for a backend flagged PCCX_HW_MAY_SLEEP; the driver
 * then touches registers only from process context (ioctl, kthread, threaded
 * interrupt handler).
 */
struct pccx_hw_ops {
	u64 (*rd64)(void *ctx, u32 off);
	void (*wr64)(void *ctx, u32 off, u64 val);
	u32 (*rd32)(void *ctx, u32 off);
	void (*wr32)(void *ctx, u32 off, u32 val);
	void (*dma_window)(void *ctx, bool open, dma_addr_t addr, void *cpu, size_t size,
			   u32 access);
};

#define PCCX_HW_MAY_SLEEP BIT(0)
#define PCCX_HW_SIMULATED BIT(1)

/**
 * struct pccx_platform_data - a non-MMIO backend
 * @ops: accessors.
 * @ctx: passed to every accessor.
 * @flags: %PCCX_HW_*.
 */
struct pccx_platform_data {
	const struct pccx_hw_ops *ops;
	void *ctx;
	u32 flags;
};

#endif /* PCCX_HW_H */
