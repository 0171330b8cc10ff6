// SPDX-License-Identifier: GPL-2.0
/*
 * pccx buffer objects: physically contiguous, zeroed, below the device's DMA
 * limit, owned by one open file, named by a per-file handle, mappable by
 * offset, counted against a per-file and a global quota.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pccx_drv.h"

/* mmap offset of a buffer: its handle in bits [62:32] */
#define PCCX_MMAP_SHIFT 32
#define PCCX_PGOFF_SHIFT (PCCX_MMAP_SHIFT - PAGE_SHIFT)

unsigned long pccx_fd_quota = 256ul << 20;
module_param_named(fd_quota, pccx_fd_quota, ulong, 0644);
MODULE_PARM_DESC(fd_quota, "Bytes of buffers one open file may hold (default 256 MiB)");

unsigned long pccx_global_quota = 512ul << 20;
module_param_named(global_quota, pccx_global_quota, ulong, 0644);
MODULE_PARM_DESC(global_quota, "Bytes of buffers all open files may hold (default 512 MiB)");

unsigned long pccx_max_bo_size = 64ul << 20;
module_param_named(max_bo_size, pccx_max_bo_size, ulong, 0644);
MODULE_PARM_DESC(max_bo_size, "Largest single buffer in bytes (default 64 MiB)");

static void pccx_bo_release(struct kref *ref)
{
	struct pccx_bo *bo = container_of(ref, struct pccx_bo, ref);
	struct pccx_device *pdev = bo->pdev;

	dma_free_coherent(pdev->dev, bo->size, bo->cpu, bo->dma);
	spin_lock(&pdev->mem_lock);
	pdev->global_used -= bo->size;
	spin_unlock(&pdev->mem_lock);
	kfree(bo);
	pccx_device_put(pdev);
}

void pccx_bo_put(struct pccx_bo *bo)
{
	kref_put(&bo->ref, pccx_bo_release);
}

/* Look a handle up; the caller holds pf->lock and takes its own reference if needed. */
struct pccx_bo *pccx_bo_lookup(struct pccx_file *pf, u32 handle)
{
	lockdep_assert_held(&pf->lock);
	if (!handle || handle > INT_MAX)
		return NULL;
	return idr_find(&pf->bos, handle);
}

/* Charge @size to the file and the device, or say why not. */
static int pccx_mem_charge(struct pccx_file *pf, u64 size)
{
	struct pccx_device *pdev = pf->pdev;
	unsigned long fdq = READ_ONCE(pccx_fd_quota);
	unsigned long glq = READ_ONCE(pccx_global_quota);

	lockdep_assert_held(&pf->lock);
	if (pf->mem_used > fdq || size > fdq - pf->mem_used) {
		dev_notice_ratelimited(pdev->dev,
				       "buffer of %llu bytes refused: this file holds %llu of its %lu-byte quota, %llu left\n",
				       size, pf->mem_used, fdq,
				       pf->mem_used < fdq ? fdq - pf->mem_used : 0);
		return -ENOSPC;
	}
	spin_lock(&pdev->mem_lock);
	if (pdev->global_used > glq || size > glq - pdev->global_used) {
		u64 used = pdev->global_used;

		spin_unlock(&pdev->mem_lock);
		dev_notice_ratelimited(pdev->dev,
				       "buffer of %llu bytes refused: all files hold %llu of the %lu-byte global quota, %llu left\n",
				       size, used, glq, used < glq ? glq - used : 0);
		return -ENOSPC;
	}
	pdev->global_used += size;
	spin_unlock(&pdev->mem_lock);
	pf->mem_used += size;
	return 0;
}

int pccx_ioctl_bo_create(struct pccx_file *pf, void __user *arg)
{
	struct pccx_device *pdev = pf->pdev;
	struct pccx_bo_create args;
	struct pccx_bo *bo;
	u64 size;
	int ret;

	if (copy_from_user(&args, arg, sizeof(args)))
		return -EFAULT;
	if (args.handle || args.mmap_offset || !(args.flags & PCCX_BO_FLAGS) ||
	    (args.flags & ~PCCX_BO_FLAGS) || !args.size)
		return -EINVAL;
	if (args.size > READ_ONCE(pccx_max_bo_size)) {
		dev_dbg(pdev->dev, "buffer of %llu bytes is above max_bo_size %lu\n",
			args.size, pccx_max_bo_size);
		return -E2BIG;
	}
	size = PAGE_ALIGN(args.size);
	if (READ_ONCE(pdev->gone))
		return -ENODEV;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	kref_init(&bo->ref);
	bo->pdev = pdev;
	bo->size = size;
	bo->flags = args.flags;

	mutex_lock(&pf->lock);
	ret = pccx_mem_charge(pf, size);
	if (ret)
		goto err_unlock;
	if (atomic_dec_if_positive(&pdev->fail_alloc) >= 0) {
		dev_info(pdev->dev, "fault injection: allocation of %llu bytes fails\n", size);
		ret = -ENOMEM;
		goto err_uncharge;
	}
	bo->cpu = dma_alloc_coherent(pdev->dev, size, &bo->dma, GFP_KERNEL | __GFP_NOWARN);
	if (!bo->cpu) {
		dev_notice_ratelimited(pdev->dev,
				       "cannot allocate %llu physically contiguous bytes below 2^%u\n",
				       size, pdev->dma_bits);
		ret = -ENOMEM;
		goto err_uncharge;
	}
	/*
	 * Reserve the handle with no buffer behind it: until the caller has the
	 * handle in hand, lookups (BO_DESTROY, SUBMIT, mmap) see nothing, so the
	 * undo below cannot race another thread that guessed the handle.
	 */
	ret = idr_alloc(&pf->bos, NULL, 1, INT_MAX, GFP_KERNEL);
	if (ret < 0)
		goto err_free;
	bo->handle = ret;
	mutex_unlock(&pf->lock);

	args.size = size;
	args.handle = bo->handle;
	args.mmap_offset = (u64)bo->handle << PCCX_MMAP_SHIFT;
	if (copy_to_user(arg, &args, sizeof(args))) {
		ret = -EFAULT;
		mutex_lock(&pf->lock);
		idr_remove(&pf->bos, bo->handle);
		goto err_free;
	}

	/* publish: from here the buffer belongs to the handle */
	kref_get(&pdev->ref);			/* put by pccx_bo_release() */
	mutex_lock(&pf->lock);
	WARN_ON(idr_replace(&pf->bos, bo, bo->handle));
	mutex_unlock(&pf->lock);
	return 0;

err_free:
	dma_free_coherent(pdev->dev, size, bo->cpu, bo->dma);
err_uncharge:
	pf->mem_used -= size;
	spin_lock(&pdev->mem_lock);
	pdev->global_used -= size;
	spin_unlock(&pdev->mem_lock);
err_unlock:
	mutex_unlock(&pf->lock);
	kfree(bo);
	return ret;
}

int pccx_ioctl_bo_info(struct pccx_file *pf, void __user *arg)
{
	struct pccx_bo_info args;
	struct pccx_bo *bo;

	if (copy_from_user(&args, arg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.size || args.mmap_offset)
		return -EINVAL;
	mutex_lock(&pf->lock);
	bo = pccx_bo_lookup(pf, args.handle);
	if (bo) {
		args.flags = bo->flags;
		args.size = bo->size;
		args.mmap_offset = (u64)bo->handle << PCCX_MMAP_SHIFT;
	}
	mutex_unlock(&pf->lock);
	if (!bo)
		return -ENOENT;
	if (copy_to_user(arg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

int pccx_ioctl_bo_destroy(struct pccx_file *pf, void __user *arg)
{
	struct pccx_bo_destroy args;
	struct pccx_bo *bo;

	if (copy_from_user(&args, arg, sizeof(args)))
		return -EFAULT;
	if (args.pad)
		return -EINVAL;
	mutex_lock(&pf->lock);
	bo = pccx_bo_lookup(pf, args.handle);
	if (bo) {
		idr_remove(&pf->bos, bo->handle);
		pf->mem_used -= bo->size;
	}
	mutex_unlock(&pf->lock);
	if (!bo)
		return -ENOENT;
	/* jobs and mappings keep their own references */
	pccx_bo_put(bo);
	return 0;
}

void pccx_file_release_bos(struct pccx_file *pf)
{
	struct pccx_bo *bo;
	int id;

	mutex_lock(&pf->lock);
	idr_for_each_entry(&pf->bos, bo, id) {
		idr_remove(&pf->bos, id);
		pf->mem_used -= bo->size;
		pccx_bo_put(bo);
	}
	mutex_unlock(&pf->lock);
}

static void pccx_vm_open(struct vm_area_struct *vma)
{
	struct pccx_bo *bo = vma->vm_private_data;

	kref_get(&bo->ref);
}

static void pccx_vm_close(struct vm_area_struct *vma)
{
	pccx_bo_put(vma->vm_private_data);
}

static const struct vm_operations_struct pccx_vm_ops = {
	.open = pccx_vm_open,
	.close = pccx_vm_close,
};

int pccx_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct pccx_file *pf = file->private_data;
	unsigned long pages = vma_pages(vma);
	unsigned long first;
	struct pccx_bo *bo;
	u64 handle;
	int ret;

	handle = vma->vm_pgoff >> PCCX_PGOFF_SHIFT;
	first = vma->vm_pgoff & ((1ul << PCCX_PGOFF_SHIFT) - 1);
	mutex_lock(&pf->lock);
	bo = handle <= INT_MAX ? pccx_bo_lookup(pf, (u32)handle) : NULL;
	if (bo)
		kref_get(&bo->ref);		/* put by pccx_vm_close() */
	mutex_unlock(&pf->lock);
	if (!bo)
		return -ENOENT;
	if (first >= (bo->size >> PAGE_SHIFT) || pages > (bo->size >> PAGE_SHIFT) - first) {
		ret = -EINVAL;
		goto err_put;
	}
	/* dma_mmap_coherent() reads the page offset into the buffer from vm_pgoff */
	vma->vm_pgoff = first;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	ret = dma_mmap_coherent(pf->pdev->dev, vma, bo->cpu, bo->dma, bo->size);
	if (ret)
		goto err_put;
	vma->vm_private_data = bo;
	vma->vm_ops = &pccx_vm_ops;
	return 0;

err_put:
	pccx_bo_put(bo);
	return ret;
}
