// SPDX-License-Identifier: GPL-2.0
/*
 * pccx jobs: SUBMIT (copy into kernel memory, validate with isa/validate.c),
 * one worker kthread that feeds jobs to the device through the shared command
 * engine, completion by interrupt or polling, a per-job timeout that checks
 * progress before declaring a hang, soft-reset recovery, WAIT and poll().
 *
 * Recovery contract (docs/driver.md): the job that hung ends TIMEOUT, the
 * device is reset, and queued jobs then run. If the reset fails the device is
 * wedged: queued and new jobs fail until a RESET ioctl succeeds, and the
 * buffers of the job that was on the device stay allocated (the device might
 * still write them).
 */
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pccx_drv.h"
#include "pccx_engine.h"

unsigned int pccx_job_timeout_ms = 5000;
module_param_named(job_timeout_ms, pccx_job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(job_timeout_ms, "Time a job may go without progress before it is declared hung");

unsigned int pccx_max_jobs = 64;
module_param_named(max_jobs, pccx_max_jobs, uint, 0644);
MODULE_PARM_DESC(max_jobs, "Jobs one open file may have submitted and not yet reaped");

static_assert(sizeof(struct pccx_ioc_dma_desc) == sizeof(struct pccx_dma_desc));
static_assert(offsetof(struct pccx_ioc_dma_desc, flags) == offsetof(struct pccx_dma_desc, flags));
static_assert(offsetof(struct pccx_ioc_dma_desc, offset) ==
	      offsetof(struct pccx_dma_desc, offset));
static_assert(offsetof(struct pccx_ioc_dma_desc, length) ==
	      offsetof(struct pccx_dma_desc, length));
static_assert(sizeof(struct pccx_ioc_stream_desc) == sizeof(struct pccx_stream_desc));
static_assert(offsetof(struct pccx_ioc_stream_desc, port) ==
	      offsetof(struct pccx_stream_desc, port));
static_assert(offsetof(struct pccx_ioc_stream_desc, offset) ==
	      offsetof(struct pccx_stream_desc, offset));
static_assert(offsetof(struct pccx_ioc_stream_desc, length) ==
	      offsetof(struct pccx_stream_desc, length));
static_assert(PCCX_DESC_TO_DEVICE == PCCX_DMA_TO_DEVICE);
static_assert(PCCX_DESC_FROM_DEVICE == PCCX_DMA_FROM_DEVICE);
static_assert(PCCX_BO_DEV_READ == PCCX_BUF_DEV_READ);
static_assert(PCCX_BO_DEV_WRITE == PCCX_BUF_DEV_WRITE);
static_assert(PCCX_FAULT_BUSY == PCCX_EF_BUSY && PCCX_FAULT_DEVICE == PCCX_EF_DEVICE);
static_assert(PCCX_FAULT_DM_STATUS == PCCX_EF_DM_STATUS && PCCX_FAULT_DM_TAG == PCCX_EF_DM_TAG);
static_assert(PCCX_FAULT_XLATE == PCCX_EF_XLATE && PCCX_FAULT_ADDR == PCCX_EF_ADDR);
static_assert(PCCX_FAULT_RETIRED == PCCX_EF_RETIRED);

static void pccx_job_release(struct kref *ref)
{
	struct pccx_job *job = container_of(ref, struct pccx_job, ref);
	u32 i;

	for (i = 0; i < job->n_bos; i++)
		pccx_bo_put(job->bos[i]);
	kvfree(job->bos);
	kvfree(job->insn);
	kvfree(job->dma);
	kvfree(job->stream);
	pccx_device_put(job->pdev);
	kfree(job);
}

static void pccx_job_put(struct pccx_job *job)
{
	kref_put(&job->ref, pccx_job_release);
}

/* ---- SUBMIT ------------------------------------------------------------------------ */

struct pccx_lookup_ctx {
	struct pccx_file *pf;
};

static int pccx_validate_lookup(void *ctx, u32 handle, u64 *size, u32 *access)
{
	struct pccx_lookup_ctx *lc = ctx;
	struct pccx_bo *bo = pccx_bo_lookup(lc->pf, handle);

	if (!bo)
		return -ENOENT;
	*size = bo->size;
	*access = bo->flags;
	return 0;
}

static int pccx_verr_errno(int verr)
{
	switch (verr) {
	case PCCX_ISA_E_BUF_HANDLE:
		return -ENOENT;
	case PCCX_ISA_E_BUF_RANGE:
		return -EOVERFLOW;
	case PCCX_ISA_E_BUF_ACCESS:
		return -EACCES;
	case PCCX_ISA_E_JOB_LIMIT:
		return -E2BIG;
	default:
		return -EINVAL;
	}
}

static void *pccx_copy_array(u64 uptr, u32 n, size_t elem)
{
	size_t bytes;
	void *p;

	if (!n)
		return NULL;
	if (check_mul_overflow((size_t)n, elem, &bytes))
		return ERR_PTR(-E2BIG);
	p = kvmalloc(bytes, GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(p, u64_to_user_ptr(uptr), bytes)) {
		kvfree(p);
		return ERR_PTR(-EFAULT);
	}
	return p;
}

/* Take one reference on each distinct buffer the job names. Called with pf->lock. */
static int pccx_job_collect_bos(struct pccx_file *pf, struct pccx_job *job)
{
	u64 mark = ++pf->submit_mark;
	u32 i, n = 0;

	job->bos = kvmalloc_array((size_t)job->n_dma + job->n_stream, sizeof(*job->bos),
				  GFP_KERNEL);
	if (!job->bos)
		return -ENOMEM;
	for (i = 0; i < job->n_dma + job->n_stream; i++) {
		u32 h = i < job->n_dma ? job->dma[i].handle : job->stream[i - job->n_dma].handle;
		struct pccx_bo *bo = pccx_bo_lookup(pf, h);

		/* the validator accepted every handle under the same lock */
		if (WARN_ON(!bo))
			return -ENOENT;
		if (bo->mark == mark)
			continue;
		bo->mark = mark;
		kref_get(&bo->ref);		/* put by pccx_job_release() */
		job->bos[n++] = bo;
		job->n_bos = n;
	}
	return 0;
}

/* The file has a job queued or on the device. Called with pf->lock and job_lock. */
static bool pccx_file_active_locked(struct pccx_file *pf)
{
	struct pccx_job *job;

	lockdep_assert_held(&pf->lock);
	lockdep_assert_held(&pf->pdev->job_lock);
	list_for_each_entry(job, &pf->jobs, fnode)
		if (job->status == PCCX_JOB_QUEUED || job->status == PCCX_JOB_RUNNING)
			return true;
	return false;
}

int pccx_ioctl_submit(struct pccx_file *pf, void __user *arg)
{
	struct pccx_device *pdev = pf->pdev;
	struct pccx_lookup_ctx lc = { .pf = pf };
	static const u64 dummy[4];
	struct pccx_job_view view = { };
	struct pccx_submit args;
	struct pccx_job *job;
	u8 *used = NULL;
	int ret, verr;

	if (copy_from_user(&args, arg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;
	if (READ_ONCE(pdev->gone) || READ_ONCE(pdev->wedged))
		return -ENODEV;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return -ENOMEM;
	kref_init(&job->ref);			/* the owner's list */
	kref_get(&pdev->ref);			/* put by pccx_job_release() */
	job->pdev = pdev;
	job->pid = task_tgid_nr(current);
	job->submit_ns = ktime_get_ns();

	if (args.n_insn > pdev->lim.max_insn || args.n_dma > pdev->lim.max_dma ||
	    args.n_stream > pdev->lim.max_stream) {
		/* refused on the counts alone: the validator reads no array */
		view.insn = dummy;
		view.dma = (const void *)dummy;
		view.stream = (const void *)dummy;
		view.n_insn = args.n_insn;
		view.n_dma = args.n_dma;
		view.n_stream = args.n_stream;
		verr = pccx__validate(&view, pccx_validate_lookup, &lc, &pdev->lim, NULL,
				      &job->vres);
		goto refused;
	}

	/* copy first, then validate the copy: user space cannot change it after */
	job->insn = pccx_copy_array(args.insn_ptr, args.n_insn, sizeof(u64));
	job->dma = pccx_copy_array(args.dma_ptr, args.n_dma, sizeof(struct pccx_dma_desc));
	job->stream = pccx_copy_array(args.stream_ptr, args.n_stream,
				      sizeof(struct pccx_stream_desc));
	if (IS_ERR(job->insn) || IS_ERR(job->dma) || IS_ERR(job->stream)) {
		ret = IS_ERR(job->insn) ? PTR_ERR(job->insn) :
		      IS_ERR(job->dma) ? PTR_ERR(job->dma) : PTR_ERR(job->stream);
		if (IS_ERR(job->insn))
			job->insn = NULL;
		if (IS_ERR(job->dma))
			job->dma = NULL;
		if (IS_ERR(job->stream))
			job->stream = NULL;
		goto err_put;
	}
	job->n_insn = args.n_insn;
	job->n_dma = args.n_dma;
	job->n_stream = args.n_stream;
	used = kvzalloc(PCCX_DMA_BITMAP_BYTES(args.n_dma), GFP_KERNEL);
	if (!used) {
		ret = -ENOMEM;
		goto err_put;
	}

	view.insn = job->insn;
	view.n_insn = job->n_insn;
	view.dma = job->dma;
	view.n_dma = job->n_dma;
	view.stream = job->stream;
	view.n_stream = job->n_stream;

	mutex_lock(&pf->lock);
	if (pf->n_jobs >= READ_ONCE(pccx_max_jobs)) {
		mutex_unlock(&pf->lock);
		ret = -EBUSY;
		goto err_put;
	}
	verr = pccx__validate(&view, pccx_validate_lookup, &lc, &pdev->lim, used, &job->vres);
	if (verr) {
		mutex_unlock(&pf->lock);
		goto refused;
	}
	ret = pccx_job_collect_bos(pf, job);
	if (ret) {
		mutex_unlock(&pf->lock);
		goto err_put;
	}
	kvfree(used);
	used = NULL;

	job->timeout_ns = (u64)READ_ONCE(pccx_job_timeout_ms) * NSEC_PER_MSEC;
	if (args.timeout_ns && args.timeout_ns < job->timeout_ns)
		job->timeout_ns = args.timeout_ns;

	mutex_lock(&pdev->job_lock);
	if (pdev->gone || pdev->wedged) {
		mutex_unlock(&pdev->job_lock);
		mutex_unlock(&pf->lock);
		ret = -ENODEV;
		goto err_put;
	}
	job->id = pdev->next_job_id++;
	job->status = PCCX_JOB_QUEUED;
	/* a file that was idle takes its turn behind the files already waiting */
	if (!pccx_file_active_locked(pf) && pf->served < pdev->serve_clock)
		pf->served = pdev->serve_clock;
	job->owner = pf;
	job->owner_id = pf->id;
	kref_get(&job->ref);			/* the device queue: put by the worker */
	list_add_tail(&job->qnode, &pdev->queue);
	mutex_unlock(&pdev->job_lock);
	list_add_tail(&job->fnode, &pf->jobs);
	pf->n_jobs++;
	mutex_unlock(&pf->lock);
	atomic64_inc(&pf->jobs_submitted);
	wake_up(&pdev->worker_wq);

	args.job_id = job->id;
	args.verr = 0;
	args.vwhere = 0;
	args.vindex = 0;
	args.vfield = -1;
	args.vexpected = 0;
	args.vactual = 0;
	/*
	 * the job is queued either way; a caller that faults here loses its id
	 * and the job is reaped when the file closes
	 */
	if (copy_to_user(arg, &args, sizeof(args)))
		return -EFAULT;
	return 0;

refused:
	args.job_id = 0;
	args.verr = job->vres.err;
	args.vwhere = job->vres.where;
	args.vindex = job->vres.index;
	args.vfield = job->vres.field;
	args.vexpected = job->vres.expected;
	args.vactual = job->vres.actual;
	dev_dbg(pdev->dev, "job refused: %s at %u/%u\n", pccx__isa_errname(verr),
		job->vres.where, job->vres.index);
	ret = pccx_verr_errno(verr);
	if (copy_to_user(arg, &args, sizeof(args)))
		ret = -EFAULT;
err_put:
	kvfree(used);
	pccx_job_put(job);
	return ret;
}

/* ---- WAIT, poll ------------------------------------------------------------------- */

static struct pccx_job *pccx_file_find_job(struct pccx_file *pf, u64 id)
{
	struct pccx_job *job;

	lockdep_assert_held(&pf->lock);
	list_for_each_entry(job, &pf->jobs, fnode)
		if (job->id == id)
			return job;
	return NULL;
}

static int pccx_status_errno(u32 status)
{
	switch (status) {
	case PCCX_JOB_DONE:
		return 0;
	case PCCX_JOB_FAULT:
		return -EIO;
	case PCCX_JOB_TIMEOUT:
		return -ETIMEDOUT;
	case PCCX_JOB_ABORTED:
		return -ECANCELED;
	default:
		return -ETIME;
	}
}

int pccx_ioctl_wait(struct pccx_file *pf, void __user *arg)
{
	struct pccx_device *pdev = pf->pdev;
	struct pccx_wait args;
	struct pccx_job *job;
	ktime_t left;
	int ret;

	if (copy_from_user(&args, arg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;

	mutex_lock(&pf->lock);
	job = pccx_file_find_job(pf, args.job_id);
	if (job)
		kref_get(&job->ref);
	mutex_unlock(&pf->lock);
	if (!job)
		return -ENOENT;

	left = ktime_sub(ns_to_ktime(args.timeout_ns), ktime_get());
	if (!pccx_job_final(READ_ONCE(job->status)) && ktime_to_ns(left) > 0) {
		ret = wait_event_interruptible_hrtimeout(pdev->done_wq,
							 pccx_job_final(READ_ONCE(job->status)),
							 left);
		if (ret == -ERESTARTSYS) {
			pccx_job_put(job);
			return ret;
		}
	}

	mutex_lock(&pdev->job_lock);
	args.status = job->status;
	args.hw_error = job->hw_error;
	args.fault_index = job->fault_index;
	args.error_info = job->error_info;
	args.submit_ns = job->submit_ns;
	args.start_ns = job->start_ns;
	args.end_ns = job->end_ns;
	args.retired = job->retired;
	mutex_unlock(&pdev->job_lock);
	ret = pccx_status_errno(args.status);

	/*
	 * the outcome reaches the caller before the job is forgotten: a WAIT that
	 * cannot write it back leaves the job to a later WAIT
	 */
	if (copy_to_user(arg, &args, sizeof(args))) {
		pccx_job_put(job);
		return -EFAULT;
	}
	if (pccx_job_final(args.status)) {
		/* reap: the id is unknown from now on */
		mutex_lock(&pf->lock);
		if (pccx_file_find_job(pf, args.job_id) == job) {
			list_del(&job->fnode);
			pf->n_jobs--;
			pccx_job_put(job);
		}
		mutex_unlock(&pf->lock);
	}
	pccx_job_put(job);
	return ret;
}

__poll_t pccx_job_poll(struct pccx_file *pf, struct file *file, poll_table *wait)
{
	struct pccx_device *pdev = pf->pdev;
	struct pccx_job *job;
	__poll_t mask = 0;

	poll_wait(file, &pdev->done_wq, wait);
	mutex_lock(&pf->lock);
	list_for_each_entry(job, &pf->jobs, fnode) {
		if (pccx_job_final(READ_ONCE(job->status))) {
			mask |= EPOLLIN | EPOLLRDNORM;
			break;
		}
	}
	mutex_unlock(&pf->lock);
	if (READ_ONCE(pdev->gone))
		mask |= EPOLLERR;
	return mask;
}

/* ---- finishing, closing, resetting --------------------------------------------------- */

/* Record the outcome and wake waiters. Called with job_lock held. */
static void pccx_job_finish_locked(struct pccx_device *pdev, struct pccx_job *job, u32 status)
{
	struct pccx_job_record *rec;

	lockdep_assert_held(&pdev->job_lock);
	job->end_ns = ktime_get_ns();
	WRITE_ONCE(job->status, status);
	rec = &pdev->history[pdev->hist_head++ % PCCX_HISTORY];
	rec->id = job->id;
	rec->pid = job->pid;
	rec->status = status;
	rec->hw_error = job->hw_error;
	rec->n_insn = job->n_insn;
	rec->retired = job->retired;
	rec->submit_ns = job->submit_ns;
	rec->start_ns = job->start_ns;
	rec->end_ns = job->end_ns;
	atomic64_inc(&pdev->jobs_done);
	if (job->start_ns) {
		u64 busy = job->end_ns - job->start_ns;

		atomic64_add(busy, &pdev->busy_ns);
		if (job->owner)
			atomic64_add(busy, &job->owner->busy_ns);
	}
	if (job->owner)
		atomic64_inc(&job->owner->jobs_completed);
	wake_up_all(&pdev->done_wq);
}

/* Why a job ends with @status but no engine fault: the hw_error of TIMEOUT and ABORTED. */
static void pccx_job_set_reason(struct pccx_job *job, u32 kind)
{
	job->hw_error = kind << PCCX_FAULT_KIND_SHIFT;
}

/* Abort every queued job (device gone or wedged). Called with job_lock held. */
static void pccx_abort_queue_locked(struct pccx_device *pdev, u32 kind)
{
	struct pccx_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, &pdev->queue, qnode) {
		list_del_init(&job->qnode);
		pccx_job_set_reason(job, kind);
		pccx_job_finish_locked(pdev, job, PCCX_JOB_ABORTED);
		pccx_job_put(job);		/* the queue's reference */
	}
}

void pccx_file_release_jobs(struct pccx_file *pf)
{
	struct pccx_device *pdev = pf->pdev;
	struct pccx_job *job, *tmp;
	bool cancel = false;

	mutex_lock(&pf->lock);
	mutex_lock(&pdev->job_lock);
	list_for_each_entry_safe(job, tmp, &pf->jobs, fnode) {
		WRITE_ONCE(job->owner, NULL);
		if (job->status == PCCX_JOB_QUEUED) {
			list_del_init(&job->qnode);
			pccx_job_set_reason(job, PCCX_FAULT_CLOSED);
			pccx_job_finish_locked(pdev, job, PCCX_JOB_ABORTED);
			pccx_job_put(job);	/* the queue's reference */
		} else if (job->status == PCCX_JOB_RUNNING) {
			/* the worker ends it and drops its buffers */
			cancel = true;
		}
		list_del(&job->fnode);
		pccx_job_put(job);		/* the owner's reference */
	}
	pf->n_jobs = 0;
	mutex_unlock(&pdev->job_lock);
	mutex_unlock(&pf->lock);
	if (cancel)
		wake_up(&pdev->worker_wq);
}

/*
 * Soft reset: flush the FIFOs, abort the engines and DataMovers, clear L2.
 * Returns 0 when the device reports the reset complete.
 */
static int pccx_hw_reset(struct pccx_device *pdev)
{
	unsigned int i;

	if (!(pdev->features & PCCX_FEAT_SOFT_RESET))
		return -EOPNOTSUPP;
	pccx_wr64(pdev, PCCX_REG_RESET, 1);
	/* at most L2 words / 8 core cycles: well under a millisecond */
	for (i = 0; i < 1000; i++) {
		if (!(pccx_rd64(pdev, PCCX_REG_RESET) & 1))
			break;
		usleep_range(50, 100);
	}
	if (i == 1000)
		return -ETIMEDOUT;
	pccx_wr64(pdev, PCCX_REG_ERROR, PCCX_ERROR_VALID);
	pccx_wr64(pdev, PCCX_REG_IRQ_STATUS, PCCX_IRQ_IDLE | PCCX_IRQ_ERROR | PCCX_IRQ_DM);
	for (i = 0; i < PCCX_DM_CHANNELS; i++)
		pccx_wr32(pdev, PCCX_DM_PAGE(i) + PCCX_DM_ERR_W1C, 0xf);
	pccx_wr64(pdev, PCCX_REG_RETIRED, 0);
	pccx_wr64(pdev, PCCX_REG_IRQ_ENABLE, pdev->irq ? PCCX_IRQ_IDLE | PCCX_IRQ_ERROR : 0);
	atomic_set(&pdev->irq_events, 0);
	pdev->l2_owner = 0;
	return 0;
}

/* Reset after a hang, a cancellation or a RESET request; sets or clears wedged. */
static int pccx_recover(struct pccx_device *pdev, const char *why)
{
	int ret = pccx_hw_reset(pdev);

	atomic64_inc(&pdev->resets);
	mutex_lock(&pdev->job_lock);
	if (ret) {
		WRITE_ONCE(pdev->wedged, true);
		pccx_abort_queue_locked(pdev, PCCX_FAULT_WEDGED);
	} else {
		WRITE_ONCE(pdev->wedged, false);
	}
	mutex_unlock(&pdev->job_lock);
	if (ret)
		dev_err(pdev->dev,
			"%s: soft reset failed (%d): device wedged, jobs fail until a RESET succeeds or the bitstream is reloaded\n",
			why, ret);
	else
		dev_info(pdev->dev, "%s: device reset, queued jobs continue\n", why);
	return ret;
}

void pccx_request_reset(struct pccx_device *pdev)
{
	atomic_set(&pdev->reset_request, 1);
	wake_up(&pdev->worker_wq);
}

int pccx_ioctl_reset(struct pccx_file *pf, void __user *arg)
{
	struct pccx_reset args;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&args, arg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.pad)
		return -EINVAL;
	if (READ_ONCE(pf->pdev->gone))
		return -ENODEV;
	pccx_request_reset(pf->pdev);
	return 0;
}

irqreturn_t pccx_irq_thread(int irq, void *data)
{
	struct pccx_device *pdev = data;
	/* DM is the engine's to clear: it pops statuses when it sees the bit */
	u64 st = pccx_rd64(pdev, PCCX_REG_IRQ_STATUS) & (PCCX_IRQ_IDLE | PCCX_IRQ_ERROR);

	if (!st)
		return IRQ_NONE;
	pccx_wr64(pdev, PCCX_REG_IRQ_STATUS, st);
	atomic_inc(&pdev->irq_events);
	wake_up(&pdev->worker_wq);
	return IRQ_HANDLED;
}

/* ---- running a job ------------------------------------------------------------------- */

static void pccx_windows(struct pccx_device *pdev, struct pccx_job *job, bool open)
{
	u32 i;

	if (!pdev->ops || !pdev->ops->dma_window)
		return;
	for (i = 0; i < job->n_bos; i++) {
		struct pccx_bo *bo = job->bos[i];

		pdev->ops->dma_window(pdev->hw_ctx, open, bo->dma, bo->cpu, bo->size, bo->flags);
	}
}

/* Why the worker must stop feeding the current job (a PCCX_FAULT_* kind), or 0. */
static u32 pccx_job_cancelled(struct pccx_device *pdev, struct pccx_job *job)
{
	if (kthread_should_stop())
		return PCCX_FAULT_REMOVED;
	if (atomic_read(&pdev->reset_request))
		return PCCX_FAULT_RESET;
	if (!READ_ONCE(job->owner))
		return PCCX_FAULT_CLOSED;
	return 0;
}

static u32 pccx_eng_rd32(void *io, u32 off)
{
	return pccx_rd32(io, off);
}

static void pccx_eng_wr32(void *io, u32 off, u32 val)
{
	pccx_wr32(io, off, val);
}

static u64 pccx_eng_rd64(void *io, u32 off)
{
	return pccx_rd64(io, off);
}

static void pccx_eng_wr64(void *io, u32 off, u64 val)
{
	pccx_wr64(io, off, val);
}

static const struct pccx_engine_ops pccx_engine_ops = {
	.rd32 = pccx_eng_rd32,
	.wr32 = pccx_eng_wr32,
	.rd64 = pccx_eng_rd64,
	.wr64 = pccx_eng_wr64,
};

/* Device address of (handle, offset, len) for the engine; buffers are contiguous. */
static int pccx_job_xlate(void *ctx, u32 handle, u64 offset, u64 len, u64 *addr, u64 *contig)
{
	struct pccx_job *job = ctx;
	u32 i;

	for (i = 0; i < job->n_bos; i++) {
		struct pccx_bo *bo = job->bos[i];

		if (bo->handle != handle)
			continue;
		if (offset > bo->size || len > bo->size - offset)
			return -EOVERFLOW;
		*addr = bo->dma + offset;
		*contig = len;
		return 0;
	}
	return -ENOENT;
}

/* Sleep until an interrupt, a cancellation or @timeout jiffies. */
static void pccx_job_sleep(struct pccx_device *pdev, struct pccx_job *job, long timeout)
{
	wait_event_interruptible_timeout(pdev->worker_wq,
					 atomic_read(&pdev->irq_events) ||
					 pccx_job_cancelled(pdev, job),
					 timeout);
	atomic_set(&pdev->irq_events, 0);
}

/* A hang injected through debugfs: nothing reaches the device, the timeout fires. */
static u32 pccx_job_fake_hang(struct pccx_device *pdev, struct pccx_job *job)
{
	u64 deadline = ktime_get_ns() + job->timeout_ns;
	u32 why;

	while (ktime_get_ns() < deadline) {
		why = pccx_job_cancelled(pdev, job);
		if (why) {
			pccx_job_set_reason(job, why);
			return PCCX_JOB_ABORTED;
		}
		pccx_job_sleep(pdev, job, msecs_to_jiffies(20));
	}
	dev_warn(pdev->dev, "job %llu: injected hang\n", job->id);
	pccx_job_set_reason(job, PCCX_FAULT_HANG_INJECTED);
	return PCCX_JOB_TIMEOUT;
}

static u32 pccx_job_failed(struct pccx_device *pdev, struct pccx_job *job,
			   const struct pccx_engine_ctx *e)
{
	const struct pccx_engine_error *err = &e->err;

	job->fault_index = err->insn;
	job->error_info = err->info;
	if (err->kind == PCCX_EF_DEVICE) {
		job->hw_error = ((u32)err->error & 0x00ffffffu) |
				((u32)PCCX_FAULT_DEVICE << PCCX_FAULT_KIND_SHIFT);
		job->fault_index = (u32)(err->error >> PCCX_ERROR_INDEX_SHIFT);
	} else {
		job->hw_error = ((u32)err->kind << PCCX_FAULT_KIND_SHIFT) |
				((err->channel & 0xffu) << 8) |
				(err->kind == PCCX_EF_DM_STATUS || err->kind == PCCX_EF_DM_TAG ?
				 (u32)err->info & 0xffu : 0);
	}
	dev_dbg(pdev->dev, "job %llu: %s at instruction %u: error 0x%llx info 0x%llx channel %u\n",
		job->id, pccx__engine_fail_name(err->kind), err->insn, err->error, err->info,
		err->channel);
	return PCCX_JOB_FAULT;
}

/*
 * Feed one job to the device. Returns its final status; for anything but DONE
 * the worker resets the device afterwards.
 */
static u32 pccx_job_run(struct pccx_device *pdev, struct pccx_job *job)
{
	struct pccx_engine_ctx *e = &pdev->engine;
	struct pccx_job_view view = {
		.insn = job->insn, .n_insn = job->n_insn,
		.dma = job->dma, .n_dma = job->n_dma,
		.stream = job->stream, .n_stream = job->n_stream,
	};
	unsigned int backoff_us = 20;
	u64 last_progress, last_retired, last_ns, now;
	bool retried = false;
	int state;
	u32 why;

	if (atomic_dec_if_positive(&pdev->hang_jobs) >= 0)
		return pccx_job_fake_hang(pdev, job);
restart:
	state = pccx__engine_start(e, &view, &pccx_engine_ops, pdev, pccx_job_xlate, job);
	if (state == PCCX_ENGINE_ERROR && e->err.kind == PCCX_EF_BUSY && !retried) {
		/* left busy by something outside the driver: reset once and retry */
		retried = true;
		if (!pccx_recover(pdev, "device busy at job start"))
			goto restart;
	}
	last_progress = e->progress;
	last_retired = 0;
	last_ns = ktime_get_ns();
	while (state == PCCX_ENGINE_RUNNING) {
		state = pccx__engine_step(e);
		if (state != PCCX_ENGINE_RUNNING)
			break;
		why = pccx_job_cancelled(pdev, job);
		if (why) {
			pccx_job_set_reason(job, why);
			job->fault_index = pccx__engine_words_pushed(e);
			job->retired = e->retired;
			return PCCX_JOB_ABORTED;
		}
		now = ktime_get_ns();
		if (e->progress != last_progress) {
			last_progress = e->progress;
			last_ns = now;
			backoff_us = 20;
			cond_resched();
			continue;
		}
		if (now - last_ns > job->timeout_ns) {
			/* the engine saw nothing move: a long instruction may still retire */
			u64 r = pccx_rd64(pdev, PCCX_REG_RETIRED);

			if (r != last_retired) {
				last_retired = r;
				last_ns = now;
				continue;
			}
			job->retired = r;
			pccx_job_set_reason(job, PCCX_FAULT_HUNG);
			job->fault_index = pccx__engine_words_pushed(e);
			job->error_info = r;
			dev_warn(pdev->dev,
				 "job %llu: no progress for %llu ms (%u of %u words pushed, %llu retired): hung\n",
				 job->id, job->timeout_ns / NSEC_PER_MSEC, job->fault_index,
				 job->n_insn, r);
			return PCCX_JOB_TIMEOUT;
		}
		if (pdev->irq && e->tail)
			/* everything is pushed: the IDLE or ERROR interrupt ends the wait */
			pccx_job_sleep(pdev, job, msecs_to_jiffies(50));
		else
			usleep_range(backoff_us, backoff_us * 2);
		backoff_us = min(backoff_us * 2, 1000u);
	}
	job->retired = e->retired;
	if (state == PCCX_ENGINE_DONE)
		return PCCX_JOB_DONE;
	return pccx_job_failed(pdev, job, e);
}

/*
 * L2, S and the shape RAMs keep what the last job left there, and a job may
 * read L2 it never wrote: before a job of another file runs, a soft reset
 * clears them, so no process sees another's activations. Jobs of one file run
 * back to back without it (L2 does not persist across jobs in the contract
 * either way).
 */
static int pccx_l2_scrub(struct pccx_device *pdev, struct pccx_job *job)
{
	int ret;

	if (!(pdev->features & PCCX_FEAT_SOFT_RESET) || !pdev->l2_owner ||
	    pdev->l2_owner == job->owner_id)
		return 0;
	ret = pccx_hw_reset(pdev);
	if (!ret) {
		atomic64_inc(&pdev->l2_scrubs);
		return 0;
	}
	dev_warn(pdev->dev, "job %llu: clearing L2 of another file's job failed (%d)\n",
		 job->id, ret);
	/* a recovery is a reset too: when it works L2 is clear, otherwise the device is wedged */
	return pccx_recover(pdev, "clearing L2 failed");
}

/*
 * The next job to start: files take turns. Among the queued jobs, the first of
 * the file whose job started longest ago (a file's jobs keep their order), so a
 * job waits behind at most one job of each other file that was waiting before
 * it, however many jobs those files queue. Queued jobs always have an owner
 * (closing a file aborts its queued jobs under job_lock).
 */
static struct pccx_job *pccx_next_job_locked(struct pccx_device *pdev)
{
	struct pccx_job *job, *next = NULL;

	lockdep_assert_held(&pdev->job_lock);
	list_for_each_entry(job, &pdev->queue, qnode)
		if (!next || job->owner->served < next->owner->served)
			next = job;
	if (next)
		next->owner->served = ++pdev->serve_clock;
	return next;
}

static int pccx_worker(void *data)
{
	struct pccx_device *pdev = data;

	while (!kthread_should_stop()) {
		struct pccx_job *job = NULL;
		bool scrub_failed;
		u32 status;

		wait_event_interruptible(pdev->worker_wq,
					 kthread_should_stop() ||
					 atomic_read(&pdev->reset_request) ||
					 (!list_empty(&pdev->queue) && !READ_ONCE(pdev->wedged)));
		if (kthread_should_stop())
			break;
		if (atomic_xchg(&pdev->reset_request, 0)) {
			pccx_recover(pdev, "reset requested");
			continue;
		}

		mutex_lock(&pdev->job_lock);
		if (!pdev->wedged)
			job = pccx_next_job_locked(pdev);
		if (job) {
			list_del_init(&job->qnode);
			job->status = PCCX_JOB_RUNNING;
			job->start_ns = ktime_get_ns();
			pdev->running = job;
		}
		mutex_unlock(&pdev->job_lock);
		if (!job)
			continue;

		pccx_windows(pdev, job, true);
		scrub_failed = pccx_l2_scrub(pdev, job) != 0;
		if (scrub_failed) {
			/* the device is wedged; the job never reached it */
			job->hw_error = PCCX_FAULT_BUSY << PCCX_FAULT_KIND_SHIFT;
			status = PCCX_JOB_FAULT;
		} else {
			status = pccx_job_run(pdev, job);
			if (status == PCCX_JOB_DONE)
				pdev->l2_owner = job->owner_id;
		}
		if (status != PCCX_JOB_DONE && !scrub_failed) {
			bool wedged;

			atomic_set(&pdev->reset_request, 0);
			wedged = pccx_recover(pdev, status == PCCX_JOB_TIMEOUT ? "job hung" :
					      status == PCCX_JOB_FAULT ? "job faulted" :
					      "job cancelled") != 0;
			if (wedged) {
				/* the device may still write these buffers: keep them */
				job->n_bos = 0;
			}
		}
		if (job->n_bos)
			pccx_windows(pdev, job, false);

		mutex_lock(&pdev->job_lock);
		pdev->running = NULL;
		pccx_job_finish_locked(pdev, job, status);
		mutex_unlock(&pdev->job_lock);
		pccx_job_put(job);			/* the queue's reference */
	}
	return 0;
}

int pccx_job_init(struct pccx_device *pdev)
{
	int ret;

	pccx__vlimits_default(&pdev->lim);
	pdev->lim.l2_words = pdev->l2_words;
	pdev->lim.features = pdev->features;

	if (pdev->features & PCCX_FEAT_SOFT_RESET) {
		ret = pccx_hw_reset(pdev);
		if (ret) {
			dev_err(pdev->dev, "initial soft reset failed: %d\n", ret);
			return ret;
		}
	} else {
		dev_warn(pdev->dev,
			 "no SOFT_RESET feature: a hung job wedges the device until the bitstream is reloaded, and L2 is not cleared between files\n");
	}
	pdev->worker = kthread_run(pccx_worker, pdev, "pccx-%s", dev_name(pdev->dev));
	if (IS_ERR(pdev->worker))
		return PTR_ERR(pdev->worker);
	return 0;
}

void pccx_job_fini(struct pccx_device *pdev)
{
	mutex_lock(&pdev->job_lock);
	WRITE_ONCE(pdev->gone, true);
	pccx_abort_queue_locked(pdev, PCCX_FAULT_REMOVED);
	mutex_unlock(&pdev->job_lock);
	/* the running job sees kthread_should_stop() and is aborted */
	kthread_stop(pdev->worker);
	if (pdev->features & PCCX_FEAT_SOFT_RESET)
		pccx_hw_reset(pdev);
	pccx_wr64(pdev, PCCX_REG_IRQ_ENABLE, 0);
}
