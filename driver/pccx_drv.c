// SPDX-License-Identifier: GPL-2.0
/*
 * pccx v002 NPU: platform driver, /dev/pccx, ioctl dispatch, sysfs, fdinfo.
 *
 * The device is reached through an ops table: ioremapped MMIO for hardware,
 * or the test backend's accessors handed over as platform data. Jobs are fed
 * to it by the shared command engine from a kthread (pccx_job.c).
 */
#include <linux/bitfield.h>
#include <linux/capability.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/miscdevice.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/of_reserved_mem.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/property.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pccx_drv.h"

/* Features the driver cannot work without. */
#define PCCX_FEAT_REQUIRED (PCCX_FEAT_STATUS_REGS | PCCX_FEAT_ERROR_REG | PCCX_FEAT_RETIRED)

static bool force_poll;
module_param(force_poll, bool, 0444);
MODULE_PARM_DESC(force_poll, "Poll for completion even when the device has an interrupt");

static DEFINE_IDA(pccx_minor_ida);

u64 pccx_rd64(struct pccx_device *pdev, u32 off)
{
	if (pdev->ops)
		return pdev->ops->rd64(pdev->hw_ctx, off);
	return readq(pdev->regs + off);
}

void pccx_wr64(struct pccx_device *pdev, u32 off, u64 val)
{
	if (pdev->ops)
		pdev->ops->wr64(pdev->hw_ctx, off, val);
	else
		writeq(val, pdev->regs + off);
}

u32 pccx_rd32(struct pccx_device *pdev, u32 off)
{
	if (pdev->ops)
		return pdev->ops->rd32(pdev->hw_ctx, off);
	return readl(pdev->regs + off);
}

void pccx_wr32(struct pccx_device *pdev, u32 off, u32 val)
{
	if (pdev->ops)
		pdev->ops->wr32(pdev->hw_ctx, off, val);
	else
		writel(val, pdev->regs + off);
}

static void pccx_device_release(struct kref *ref)
{
	struct pccx_device *pdev = container_of(ref, struct pccx_device, ref);

	put_device(pdev->dev);
	kfree(pdev);
}

void pccx_device_put(struct pccx_device *pdev)
{
	kref_put(&pdev->ref, pccx_device_release);
}

static struct pccx_device *to_pccx_device(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct pccx_device, misc);
}

static int pccx_open(struct inode *inode, struct file *file)
{
	struct pccx_device *pdev = to_pccx_device(file);
	struct pccx_file *pf;

	pf = kzalloc(sizeof(*pf), GFP_KERNEL);
	if (!pf)
		return -ENOMEM;
	mutex_init(&pf->lock);
	idr_init_base(&pf->bos, 1);
	INIT_LIST_HEAD(&pf->jobs);
	/*
	 * misc_open() holds the misc lock, so remove() cannot run between the
	 * lookup of the device and this reference
	 */
	kref_get(&pdev->ref);
	pf->pdev = pdev;
	pf->id = atomic64_inc_return(&pdev->next_file_id);
	mutex_lock(&pdev->job_lock);
	pf->served = pdev->serve_clock;		/* a new file queues behind the others */
	mutex_unlock(&pdev->job_lock);
	file->private_data = pf;
	return 0;
}

static int pccx_release(struct inode *inode, struct file *file)
{
	struct pccx_file *pf = file->private_data;
	struct pccx_device *pdev = pf->pdev;

	/* jobs first: a running job holds references to buffers of this file */
	pccx_file_release_jobs(pf);
	pccx_file_release_bos(pf);
	idr_destroy(&pf->bos);
	mutex_destroy(&pf->lock);
	kfree(pf);
	pccx_device_put(pdev);
	return 0;
}

static int pccx_ioctl_get_info(struct pccx_file *pf, void __user *arg)
{
	struct pccx_device *pdev = pf->pdev;
	struct pccx_get_info gi;
	struct pccx_info info = { };
	u32 n;

	if (copy_from_user(&gi, arg, sizeof(gi)))
		return -EFAULT;
	if (gi.pad)
		return -EINVAL;

	info.uapi_version = PCCX_UAPI_VERSION;
	if (pdev->extended)
		info.flags |= PCCX_INFO_EXTENDED;
	if (pdev->irq > 0)
		info.flags |= PCCX_INFO_IRQ;
	if (pdev->hw_flags & PCCX_HW_SIMULATED)
		info.flags |= PCCX_INFO_SIMULATED;
	if (READ_ONCE(pdev->wedged))
		info.flags |= PCCX_INFO_WEDGED;
	info.hw_id = pdev->id;
	info.features = pdev->features;
	info.caps = pdev->caps;
	info.clocks = pdev->clocks;
	info.dma_addr_bits = pdev->dma_bits;
	info.l2_words = pdev->l2_words;
	info.max_insn = pdev->lim.max_insn;
	info.max_dma = pdev->lim.max_dma;
	info.max_stream = pdev->lim.max_stream;
	info.max_jobs = pccx_max_jobs;
	info.max_bo_size = pccx_max_bo_size;
	info.fd_quota = pccx_fd_quota;
	info.global_quota = pccx_global_quota;
	spin_lock(&pdev->mem_lock);
	info.global_used = pdev->global_used;
	spin_unlock(&pdev->mem_lock);
	info.job_timeout_ns = (u64)pccx_job_timeout_ms * NSEC_PER_MSEC;
	info.jobs_done = atomic64_read(&pdev->jobs_done);
	info.resets = atomic64_read(&pdev->resets);
	info.busy_ns = atomic64_read(&pdev->busy_ns);

	if (gi.ptr) {
		void __user *dst = u64_to_user_ptr(gi.ptr);

		n = min_t(u32, gi.size, sizeof(info));
		if (copy_to_user(dst, &info, n))
			return -EFAULT;
		if (gi.size > n && clear_user(dst + n, gi.size - n))
			return -EFAULT;
	}
	gi.size = sizeof(info);
	if (copy_to_user(arg, &gi, sizeof(gi)))
		return -EFAULT;
	return 0;
}

static long pccx_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct pccx_file *pf = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case PCCX_IOCTL_GET_INFO:
		return pccx_ioctl_get_info(pf, uarg);
	case PCCX_IOCTL_BO_CREATE:
		return pccx_ioctl_bo_create(pf, uarg);
	case PCCX_IOCTL_BO_INFO:
		return pccx_ioctl_bo_info(pf, uarg);
	case PCCX_IOCTL_BO_DESTROY:
		return pccx_ioctl_bo_destroy(pf, uarg);
	case PCCX_IOCTL_SUBMIT:
		return pccx_ioctl_submit(pf, uarg);
	case PCCX_IOCTL_WAIT:
		return pccx_ioctl_wait(pf, uarg);
	case PCCX_IOCTL_RESET:
		return pccx_ioctl_reset(pf, uarg);
	default:
		return -ENOTTY;
	}
}

static __poll_t pccx_poll(struct file *file, poll_table *wait)
{
	struct pccx_file *pf = file->private_data;

	return pccx_job_poll(pf, file, wait);
}

static void pccx_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct pccx_file *pf = file->private_data;
	u64 mem;
	u32 jobs;
	int bos = 0, id;
	struct pccx_bo *bo;

	mutex_lock(&pf->lock);
	mem = pf->mem_used;
	jobs = pf->n_jobs;
	idr_for_each_entry(&pf->bos, bo, id)
		bos++;
	mutex_unlock(&pf->lock);

	seq_printf(m, "pccx-device:\t%s\n", dev_name(pf->pdev->dev));
	seq_printf(m, "pccx-buffers:\t%d\n", bos);
	seq_printf(m, "pccx-memory:\t%llu KiB\n", mem >> 10);
	seq_printf(m, "pccx-jobs-pending:\t%u\n", jobs);
	seq_printf(m, "pccx-jobs-submitted:\t%lld\n", atomic64_read(&pf->jobs_submitted));
	seq_printf(m, "pccx-jobs-completed:\t%lld\n", atomic64_read(&pf->jobs_completed));
	seq_printf(m, "pccx-busy:\t%lld ns\n", atomic64_read(&pf->busy_ns));
}

static const struct file_operations pccx_fops = {
	.owner = THIS_MODULE,
	.open = pccx_open,
	.release = pccx_release,
	.unlocked_ioctl = pccx_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = pccx_mmap,
	.poll = pccx_poll,
	.show_fdinfo = pccx_show_fdinfo,
	.llseek = noop_llseek,
};

/* ---- sysfs (on the misc device) ------------------------------------------------ */

static struct pccx_device *attr_pdev(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct pccx_device, misc);
}

static ssize_t version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pccx_device *pdev = attr_pdev(dev);

	return sysfs_emit(buf, "%u.%u build %u uapi %u features 0x%llx\n",
			  (u32)((pdev->id >> 24) & 0xff), (u32)((pdev->id >> 16) & 0xff),
			  (u32)(pdev->id & 0xffff), PCCX_UAPI_VERSION, pdev->features);
}
static DEVICE_ATTR_RO(version);

static ssize_t busy_time_ns_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&attr_pdev(dev)->busy_ns));
}
static DEVICE_ATTR_RO(busy_time_ns);

static ssize_t reset_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&attr_pdev(dev)->resets));
}
static DEVICE_ATTR_RO(reset_count);

static ssize_t wedged_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(attr_pdev(dev)->wedged) ? 1 : 0);
}
static DEVICE_ATTR_RO(wedged);

static ssize_t jobs_done_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&attr_pdev(dev)->jobs_done));
}
static DEVICE_ATTR_RO(jobs_done);

static ssize_t l2_scrubs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&attr_pdev(dev)->l2_scrubs));
}
static DEVICE_ATTR_RO(l2_scrubs);

static ssize_t completion_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", attr_pdev(dev)->irq > 0 ? "irq" : "poll");
}
static DEVICE_ATTR_RO(completion);

static struct attribute *pccx_attrs[] = {
	&dev_attr_version.attr,
	&dev_attr_busy_time_ns.attr,
	&dev_attr_reset_count.attr,
	&dev_attr_wedged.attr,
	&dev_attr_jobs_done.attr,
	&dev_attr_l2_scrubs.attr,
	&dev_attr_completion.attr,
	NULL,
};
ATTRIBUTE_GROUPS(pccx);

/* ---- probe ------------------------------------------------------------------------ */

static int pccx_map_registers(struct platform_device *plat, struct pccx_device *pdev)
{
	struct device *dev = &plat->dev;
	const struct pccx_platform_data *pd = dev_get_platdata(dev);
	struct resource *res;

	if (pd && pd->ops) {
		if (!pd->ops->rd64 || !pd->ops->wr64 || !pd->ops->rd32 || !pd->ops->wr32)
			return dev_err_probe(dev, -EINVAL, "incomplete register backend\n");
		pdev->ops = pd->ops;
		pdev->hw_ctx = pd->ctx;
		pdev->hw_flags = pd->flags;
		return 0;
	}
	res = platform_get_resource(plat, IORESOURCE_MEM, 0);
	if (!res)
		return dev_err_probe(dev, -ENODEV, "no register resource\n");
	if (resource_size(res) < PCCX_MMIO_SIZE)
		return dev_err_probe(dev, -EINVAL,
				     "register window %pR is smaller than the 0x%x bytes of the control and DataMover pages\n",
				     res, PCCX_MMIO_SIZE);
	pdev->regs = devm_ioremap_resource(dev, res);
	if (IS_ERR(pdev->regs))
		return PTR_ERR(pdev->regs);
	return 0;
}

static int pccx_identify(struct pccx_device *pdev)
{
	struct device *dev = pdev->dev;
	u32 magic, major, prop;

	pdev->id = pccx_rd64(pdev, PCCX_REG_ID);
	magic = (u32)(pdev->id >> 32);
	major = (u32)((pdev->id >> 24) & 0xff);
	if (magic != PCCX_ID_MAGIC)
		return dev_err_probe(dev, -ENODEV,
				     "ID register reads 0x%016llx, not the pccx magic 0x%08x: an upstream bitstream without the v002 driver extensions (docs/registers.md); load a bitstream with them\n",
				     pdev->id, PCCX_ID_MAGIC);
	if (major != PCCX_ID_MAJOR)
		return dev_err_probe(dev, -ENODEV,
				     "device implements pccx major version %u, this driver supports %u: load a matching bitstream or driver\n",
				     major, PCCX_ID_MAJOR);
	pdev->extended = true;
	pdev->features = pccx_rd64(pdev, PCCX_REG_FEATURES);
	if ((pdev->features & PCCX_FEAT_REQUIRED) != PCCX_FEAT_REQUIRED)
		return dev_err_probe(dev, -ENODEV,
				     "device features 0x%llx lack 0x%llx (STATUS_REGS, ERROR_REG, RETIRED), which the driver needs\n",
				     pdev->features,
				     PCCX_FEAT_REQUIRED & ~pdev->features);
	pdev->caps = pccx_rd64(pdev, PCCX_REG_CAPS);
	pdev->clocks = pccx_rd64(pdev, PCCX_REG_CLOCKS);
	pdev->dma_bits = (u32)pccx_rd64(pdev, PCCX_REG_DMA_ADDR_BITS);
	pdev->l2_words = (u32)(pdev->caps & 0xffffffffu);
	pdev->fifo_depth = (u32)((pdev->caps >> 32) & 0xff);
	pdev->dm_depth = (u32)((pdev->caps >> 56) & 0xff);

	/* the device-tree parameters must agree with what the device reports */
	if (!device_property_read_u32(dev, "pccx,l2-words", &prop) && prop != pdev->l2_words)
		dev_warn(dev, "pccx,l2-words is %u but CAPS reports %u; using CAPS\n",
			 prop, pdev->l2_words);
	if (!device_property_read_u32(dev, "pccx,dma-address-bits", &prop) &&
	    prop != pdev->dma_bits)
		dev_warn(dev, "pccx,dma-address-bits is %u but the register reports %u; using the register\n",
			 prop, pdev->dma_bits);

	if (pdev->dma_bits < 32 || pdev->dma_bits > 64)
		return dev_err_probe(dev, -ENODEV, "DMA_ADDR_BITS reads %u\n", pdev->dma_bits);
	if (pdev->dma_bits > 32 && !(pdev->features & PCCX_FEAT_WIDE_DMA))
		return dev_err_probe(dev, -ENODEV,
				     "DMA_ADDR_BITS is %u without the WIDE_DMA feature\n",
				     pdev->dma_bits);
	if (!pdev->l2_words || !pdev->fifo_depth || !pdev->dm_depth)
		return dev_err_probe(dev, -ENODEV, "CAPS reads 0x%016llx\n", pdev->caps);
	return 0;
}

static int pccx_probe(struct platform_device *plat)
{
	struct device *dev = &plat->dev;
	struct pccx_device *pdev;
	int minor, ret;

	pdev = kzalloc(sizeof(*pdev), GFP_KERNEL);
	if (!pdev)
		return -ENOMEM;
	kref_init(&pdev->ref);
	pdev->dev = get_device(dev);
	spin_lock_init(&pdev->mem_lock);
	mutex_init(&pdev->job_lock);
	INIT_LIST_HEAD(&pdev->queue);
	init_waitqueue_head(&pdev->worker_wq);
	init_waitqueue_head(&pdev->done_wq);
	pdev->next_job_id = 1;
	pdev->misc.minor = MISC_DYNAMIC_MINOR;

	ret = pccx_map_registers(plat, pdev);
	if (ret)
		goto err_put;
	ret = pccx_identify(pdev);
	if (ret)
		goto err_put;

	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(pdev->dma_bits));
	if (ret) {
		dev_err(dev, "cannot use %u-bit DMA addresses: %d\n", pdev->dma_bits, ret);
		goto err_put;
	}
	if (device_property_present(dev, "memory-region")) {
		ret = of_reserved_mem_device_init(dev);
		if (ret) {
			dev_err(dev, "memory-region: cannot use the reserved pool: %d\n", ret);
			goto err_put;
		}
	}

	pdev->irq = 0;
	if (pdev->features & PCCX_FEAT_IRQ) {
		ret = platform_get_irq_optional(plat, 0);
		if (ret == -EPROBE_DEFER)
			goto err_mem;
		if (ret > 0 && !force_poll)
			pdev->irq = ret;
	}

	ret = pccx_job_init(pdev);
	if (ret)
		goto err_mem;

	if (pdev->irq) {
		ret = request_threaded_irq(pdev->irq, NULL, pccx_irq_thread, IRQF_ONESHOT,
					   dev_name(dev), pdev);
		if (ret) {
			dev_err(dev, "cannot request interrupt %d: %d\n", pdev->irq, ret);
			goto err_job;
		}
	}

	minor = ida_alloc(&pccx_minor_ida, GFP_KERNEL);
	if (minor < 0) {
		ret = minor;
		goto err_irq;
	}
	pdev->minor = minor;
	pdev->misc.name = minor ? kasprintf(GFP_KERNEL, PCCX_NAME "%d", minor) : PCCX_NAME;
	if (!pdev->misc.name) {
		ret = -ENOMEM;
		goto err_ida;
	}
	pdev->misc.fops = &pccx_fops;
	pdev->misc.mode = 0660;
	pdev->misc.groups = pccx_groups;
	pdev->misc.parent = dev;
	ret = misc_register(&pdev->misc);
	if (ret) {
		dev_err(dev, "cannot register the misc device: %d\n", ret);
		goto err_name;
	}
	platform_set_drvdata(plat, pdev);
	pccx_debugfs_init(pdev);

	dev_info(dev, "pccx %u.%u build %u, features 0x%llx, L2 %u words, %u-bit DMA, %s completion%s: /dev/%s\n",
		 (u32)((pdev->id >> 24) & 0xff), (u32)((pdev->id >> 16) & 0xff),
		 (u32)(pdev->id & 0xffff), pdev->features, pdev->l2_words, pdev->dma_bits,
		 pdev->irq ? "interrupt-driven" : "polled",
		 (pdev->hw_flags & PCCX_HW_SIMULATED) ? " (simulated device)" : "",
		 pdev->misc.name);
	return 0;

err_name:
	if (minor)
		kfree(pdev->misc.name);
err_ida:
	ida_free(&pccx_minor_ida, minor);
err_irq:
	if (pdev->irq)
		free_irq(pdev->irq, pdev);
err_job:
	pccx_job_fini(pdev);
err_mem:
	if (device_property_present(dev, "memory-region"))
		of_reserved_mem_device_release(dev);
err_put:
	pccx_device_put(pdev);
	return ret;
}

static int pccx_remove(struct platform_device *plat)
{
	struct pccx_device *pdev = platform_get_drvdata(plat);

	pccx_debugfs_fini(pdev);
	misc_deregister(&pdev->misc);
	if (pdev->minor)
		kfree(pdev->misc.name);
	ida_free(&pccx_minor_ida, pdev->minor);
	/* stops the worker and aborts every job: no register access after this */
	pccx_job_fini(pdev);
	if (pdev->irq)
		free_irq(pdev->irq, pdev);
	if (device_property_present(&plat->dev, "memory-region"))
		of_reserved_mem_device_release(&plat->dev);
	pccx_device_put(pdev);
	return 0;
}

static const struct of_device_id pccx_of_match[] = {
	{ .compatible = "pccx,npu-v002" },
	{ }
};
MODULE_DEVICE_TABLE(of, pccx_of_match);

static const struct platform_device_id pccx_id_table[] = {
	{ .name = "pccx-npu-v002" },
	{ }
};
MODULE_DEVICE_TABLE(platform, pccx_id_table);

static struct platform_driver pccx_driver = {
	.probe = pccx_probe,
	.remove = pccx_remove,
	.id_table = pccx_id_table,
	.driver = {
		.name = PCCX_NAME,
		.of_match_table = pccx_of_match,
	},
};

static int __init pccx_init(void)
{
	int ret;

	pccx_debugfs_root_init();
	ret = platform_driver_register(&pccx_driver);
	if (ret)
		pccx_debugfs_root_fini();
	return ret;
}
module_init(pccx_init);

static void __exit pccx_exit(void)
{
	platform_driver_unregister(&pccx_driver);
	pccx_debugfs_root_fini();
}
module_exit(pccx_exit);

MODULE_DESCRIPTION("pccx v002 FPGA NPU");
MODULE_VERSION("0.1.0");
MODULE_LICENSE("GPL");
