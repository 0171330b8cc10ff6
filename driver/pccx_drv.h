/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pccx v002 NPU driver: device, open-file, buffer and job objects.
 */
#ifndef PCCX_DRV_H
#define PCCX_DRV_H

#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "pccx_engine.h"
#include "pccx_hw.h"
#include "pccx_job.h"
#include "uapi/pccx.h"
#include "pccx_regs.h"

#define PCCX_NAME "pccx"
#define PCCX_HISTORY 32

struct pccx_bo;
struct pccx_job;

/* One completed job, kept in the device's history ring (debugfs). */
struct pccx_job_record {
	u64 id;
	pid_t pid;
	u32 status;
	u32 hw_error;
	u32 n_insn;
	u64 retired;
	u64 submit_ns;
	u64 start_ns;
	u64 end_ns;
};

struct pccx_device {
	struct device *dev;
	struct miscdevice misc;
	/*
	 * one reference for the bound driver, one per open file: the struct
	 * outlives remove() while files are open
	 */
	struct kref ref;

	const struct pccx_hw_ops *ops;
	void *hw_ctx;
	u32 hw_flags;
	void __iomem *regs;
	int irq;				/* 0: no interrupt, completion is polled */

	/* identity, read once at probe */
	u64 id;
	u64 features;
	u64 caps;
	u64 clocks;
	u32 dma_bits;
	u32 l2_words;
	u32 fifo_depth;
	u32 dm_depth;
	bool extended;				/* ID holds the pccx magic */
	struct pccx_vlimits lim;		/* the validator's limits for this device */
	int minor;				/* 0: /dev/pccx, n: /dev/pccx<n> */

	/* Protects global_used. */
	spinlock_t mem_lock;
	u64 global_used;

	/*
	 * Protects queue, running, next_job_id, serve_clock, history,
	 * hist_head, wedged, gone, pccx_file.served and the pccx_job fields
	 * marked "job_lock".
	 */
	struct mutex job_lock;
	struct list_head queue;			/* submitted jobs of every file */
	u64 serve_clock;			/* ticks once per job started */
	struct pccx_job *running;
	u64 next_job_id;
	bool wedged;				/* the last recovery failed */
	/*
	 * The file whose job last ran, 0 once a reset cleared L2 (worker only):
	 * L2, S and the shape RAMs are scrubbed before another file's job runs.
	 */
	u64 l2_owner;
	atomic64_t next_file_id;
	bool gone;				/* remove() ran: no new work */
	struct pccx_job_record history[PCCX_HISTORY];
	unsigned int hist_head;

	struct task_struct *worker;
	struct pccx_engine_ctx engine;		/* the worker's */
	wait_queue_head_t worker_wq;		/* the worker sleeps here */
	wait_queue_head_t done_wq;		/* WAIT and poll() sleep here */
	atomic_t irq_events;			/* interrupts not yet seen by the worker */
	atomic_t reset_request;			/* RESET ioctl / debugfs: abort and reset */

	/* statistics */
	atomic64_t jobs_done;
	atomic64_t resets;
	atomic64_t l2_scrubs;			/* resets run only to clear L2 */
	atomic64_t busy_ns;

	/* fault injection (debugfs) */
	atomic_t fail_alloc;			/* fail the next N buffer allocations */
	atomic_t hang_jobs;			/* treat the next N jobs as hung at once */

	struct dentry *debugfs;
};

/* Per open file. */
struct pccx_file {
	struct pccx_device *pdev;
	u64 id;					/* unique per device, never 0 */
	/* Protects bos, jobs, n_jobs and mem_used. */
	struct mutex lock;
	struct idr bos;
	struct list_head jobs;			/* submitted, not yet reaped */
	u32 n_jobs;
	u64 mem_used;
	u64 submit_mark;			/* stamp for collecting a job's buffers */
	/*
	 * job_lock: serve_clock when a job of this file last started (its open
	 * for a new file); the worker starts the oldest queued job of the file
	 * served longest ago, so files take turns
	 */
	u64 served;
	/* fdinfo counters */
	atomic64_t busy_ns;
	atomic64_t jobs_submitted;
	atomic64_t jobs_completed;
};

struct pccx_bo {
	struct kref ref;			/* handle, jobs, mappings */
	struct pccx_device *pdev;
	void *cpu;
	dma_addr_t dma;
	size_t size;
	u32 flags;				/* PCCX_BO_DEV_* */
	u32 handle;
	u64 mark;				/* pccx_file.submit_mark of the last job using it */
};

struct pccx_job {
	struct kref ref;			/* owner's list, device queue, waiters */
	struct pccx_device *pdev;
	struct pccx_file *owner;		/* NULL once the file is closed (job_lock) */
	u64 owner_id;				/* the submitting file's id */
	struct list_head qnode;			/* device queue (job_lock) */
	struct list_head fnode;			/* owner's jobs (owner->lock) */
	u64 id;
	pid_t pid;

	/* the validated copy */
	u64 *insn;
	struct pccx_dma_desc *dma;
	struct pccx_stream_desc *stream;
	u32 n_insn;
	u32 n_dma;
	u32 n_stream;
	struct pccx_vresult vres;
	struct pccx_bo **bos;			/* distinct buffers, one reference each */
	u32 n_bos;
	u64 timeout_ns;

	/* outcome (job_lock; final once status >= PCCX_JOB_DONE) */
	u32 status;
	u32 hw_error;
	u32 fault_index;
	u64 error_info;
	u64 retired;
	u64 submit_ns;
	u64 start_ns;
	u64 end_ns;
};

static inline bool pccx_job_final(u32 status)
{
	return status >= PCCX_JOB_DONE;
}

/* pccx_drv.c */
u64 pccx_rd64(struct pccx_device *pdev, u32 off);
void pccx_wr64(struct pccx_device *pdev, u32 off, u64 val);
u32 pccx_rd32(struct pccx_device *pdev, u32 off);
void pccx_wr32(struct pccx_device *pdev, u32 off, u32 val);
void pccx_device_put(struct pccx_device *pdev);

/* pccx_mem.c */
int pccx_ioctl_bo_create(struct pccx_file *pf, void __user *arg);
int pccx_ioctl_bo_info(struct pccx_file *pf, void __user *arg);
int pccx_ioctl_bo_destroy(struct pccx_file *pf, void __user *arg);
int pccx_mmap(struct file *file, struct vm_area_struct *vma);
struct pccx_bo *pccx_bo_lookup(struct pccx_file *pf, u32 handle);
void pccx_bo_put(struct pccx_bo *bo);
void pccx_file_release_bos(struct pccx_file *pf);
extern unsigned long pccx_fd_quota;
extern unsigned long pccx_global_quota;
extern unsigned long pccx_max_bo_size;

/* pccx_job.c */
int pccx_job_init(struct pccx_device *pdev);
void pccx_job_fini(struct pccx_device *pdev);
int pccx_ioctl_submit(struct pccx_file *pf, void __user *arg);
int pccx_ioctl_wait(struct pccx_file *pf, void __user *arg);
int pccx_ioctl_reset(struct pccx_file *pf, void __user *arg);
__poll_t pccx_job_poll(struct pccx_file *pf, struct file *file, poll_table *wait);
void pccx_file_release_jobs(struct pccx_file *pf);
void pccx_request_reset(struct pccx_device *pdev);
irqreturn_t pccx_irq_thread(int irq, void *data);
extern unsigned int pccx_job_timeout_ms;
extern unsigned int pccx_max_jobs;

/* pccx_debugfs.c */
void pccx_debugfs_root_init(void);
void pccx_debugfs_root_fini(void);
void pccx_debugfs_init(struct pccx_device *pdev);
void pccx_debugfs_fini(struct pccx_device *pdev);

#endif /* PCCX_DRV_H */
