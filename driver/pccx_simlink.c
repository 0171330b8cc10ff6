// SPDX-License-Identifier: GPL-2.0
/*
 * pccx_simlink: test backend for pccx.ko. It gives the driver a device whose
 * registers are the cycle simulator running as a user process (protocol in
 * pccx_simlink.h), and lets that process reach host memory only inside the
 * DMA windows the driver has open for the running job. Without a device-tree
 * node it registers a "pccx-npu-v002" platform device with a software
 * interrupt; with a "pccx,npu-v002" node (arm64 tests) it hands its accessors
 * to that node's device instead, so the driver probes through OF.
 *
 * Not for production: it exists so the real driver runs unmodified in QEMU.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/of_platform.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "pccx_hw.h"
#include "pccx_simlink.h"

#define SIMLINK_ANSWER_TIMEOUT (30 * HZ)

static int violations;
module_param(violations, int, 0444);
MODULE_PARM_DESC(violations, "Device accesses outside every open DMA window (must stay 0)");

static unsigned long calls;
module_param(calls, ulong, 0444);
MODULE_PARM_DESC(calls, "Requests answered by the simulator");

struct simlink_window {
	struct list_head node;
	u32 id;
	dma_addr_t addr;
	void *cpu;
	size_t size;
	u32 access;
	int maps;		/* win_lock */
	bool closed;		/* win_lock: closed while still mapped */
};

static struct simlink {
	/* One request in flight: a register access or a window change. */
	struct mutex call_lock;
	/* Protects req, pending, delivered, answered, answer, dead. */
	spinlock_t lock;
	wait_queue_head_t req_wq;
	wait_queue_head_t resp_wq;
	struct pccx_simlink_msg req;
	bool pending;
	bool delivered;
	bool answered;
	u64 answer;
	bool dead;

	/* Protects owner and attached. */
	struct mutex attach_lock;
	struct file *owner;
	bool attached;
	struct work_struct attach_work;
	struct platform_device *plat;
	bool dt_mode;
	int irq;

	/* Protects windows and next_id. */
	struct mutex win_lock;
	struct list_head windows;
	u32 next_id;
} sl;

static u64 simlink_call(struct pccx_simlink_msg *m)
{
	u64 val = ~0ull;
	long left;

	mutex_lock(&sl.call_lock);
	spin_lock(&sl.lock);
	if (sl.dead) {
		spin_unlock(&sl.lock);
		goto out;
	}
	m->seq = sl.req.seq + 1;
	sl.req = *m;
	sl.pending = true;
	sl.delivered = false;
	sl.answered = false;
	spin_unlock(&sl.lock);
	wake_up_interruptible(&sl.req_wq);

	left = wait_event_timeout(sl.resp_wq, READ_ONCE(sl.answered) || READ_ONCE(sl.dead),
				  SIMLINK_ANSWER_TIMEOUT);
	spin_lock(&sl.lock);
	if (sl.answered) {
		val = sl.answer;
		calls++;
	} else if (!left) {
		sl.dead = true;
		pr_err("pccx_simlink: the simulator did not answer op %u at 0x%llx: link dead\n",
		       m->op, m->addr);
	}
	sl.pending = false;
	spin_unlock(&sl.lock);
out:
	mutex_unlock(&sl.call_lock);
	return val;
}

static u64 simlink_rd64(void *ctx, u32 off)
{
	struct pccx_simlink_msg m = { .op = PCCX_SIMLINK_RD64, .addr = off };

	return simlink_call(&m);
}

static void simlink_wr64(void *ctx, u32 off, u64 val)
{
	struct pccx_simlink_msg m = { .op = PCCX_SIMLINK_WR64, .addr = off, .value = val };

	simlink_call(&m);
}

static u32 simlink_rd32(void *ctx, u32 off)
{
	struct pccx_simlink_msg m = { .op = PCCX_SIMLINK_RD32, .addr = off };

	return (u32)simlink_call(&m);
}

static void simlink_wr32(void *ctx, u32 off, u32 val)
{
	struct pccx_simlink_msg m = { .op = PCCX_SIMLINK_WR32, .addr = off, .value = val };

	simlink_call(&m);
}

static void simlink_window_free_locked(struct simlink_window *w)
{
	list_del(&w->node);
	kfree(w);
}

static void simlink_dma_window(void *ctx, bool open, dma_addr_t addr, void *cpu, size_t size,
			       u32 access)
{
	struct pccx_simlink_msg m = { .addr = addr, .size = size, .access = access };
	struct simlink_window *w, *found = NULL;

	if (open) {
		w = kzalloc(sizeof(*w), GFP_KERNEL);
		if (!w)
			return;		/* the simulator then refuses the accesses */
		w->addr = addr;
		w->cpu = cpu;
		w->size = size;
		w->access = access;
		mutex_lock(&sl.win_lock);
		w->id = ++sl.next_id;
		list_add_tail(&w->node, &sl.windows);
		mutex_unlock(&sl.win_lock);
		m.op = PCCX_SIMLINK_WIN_OPEN;
		m.id = w->id;
		simlink_call(&m);
		return;
	}

	mutex_lock(&sl.win_lock);
	list_for_each_entry(w, &sl.windows, node) {
		if (w->addr == addr && !w->closed) {
			found = w;
			break;
		}
	}
	mutex_unlock(&sl.win_lock);
	if (!found)
		return;
	m.op = PCCX_SIMLINK_WIN_CLOSE;
	m.id = found->id;
	simlink_call(&m);
	mutex_lock(&sl.win_lock);
	if (found->maps) {
		/* the buffer is about to be freed while the simulator still maps it */
		violations++;
		pr_err("pccx_simlink: window %u [%pad +0x%zx] closed but still mapped by the simulator\n",
		       found->id, &found->addr, found->size);
		found->closed = true;
	} else {
		simlink_window_free_locked(found);
	}
	mutex_unlock(&sl.win_lock);
}

static const struct pccx_hw_ops simlink_ops = {
	.rd64 = simlink_rd64,
	.wr64 = simlink_wr64,
	.rd32 = simlink_rd32,
	.wr32 = simlink_wr32,
	.dma_window = simlink_dma_window,
};

static struct pccx_platform_data simlink_pdata = {
	.ops = &simlink_ops,
	.flags = PCCX_HW_MAY_SLEEP | PCCX_HW_SIMULATED,
};

/* Create the device from a work item: its probe talks to the process that attached. */
static void simlink_attach_work(struct work_struct *work)
{
	struct platform_device_info info = {
		.name = "pccx-npu-v002",
		.id = PLATFORM_DEVID_NONE,
		.data = &simlink_pdata,
		.size_data = sizeof(simlink_pdata),
		.dma_mask = DMA_BIT_MASK(32),
	};
	struct resource irq_res = DEFINE_RES_IRQ(sl.irq);
	struct platform_device *plat;

	if (IS_ENABLED(CONFIG_OF)) {
		struct device_node *np = of_find_compatible_node(NULL, NULL, "pccx,npu-v002");

		if (np) {
			plat = of_find_device_by_node(np);
			of_node_put(np);
			if (plat) {
				/* pccx.ko binds to the OF device when it is loaded */
				plat->dev.platform_data = &simlink_pdata;
				sl.dt_mode = true;
				sl.plat = plat;
				pr_info("pccx_simlink: serving the device-tree node %pOF\n",
					plat->dev.of_node);
				return;
			}
		}
	}
	if (sl.irq > 0) {
		info.res = &irq_res;
		info.num_res = 1;
	}
	plat = platform_device_register_full(&info);
	if (IS_ERR(plat)) {
		pr_err("pccx_simlink: cannot register the device: %ld\n", PTR_ERR(plat));
		return;
	}
	sl.plat = plat;
}

static void simlink_detach(void)
{
	struct simlink_window *w, *tmp;

	spin_lock(&sl.lock);
	sl.dead = true;
	spin_unlock(&sl.lock);
	wake_up_all(&sl.resp_wq);
	wake_up_all(&sl.req_wq);
	flush_work(&sl.attach_work);
	if (sl.plat) {
		if (sl.dt_mode) {
			device_release_driver(&sl.plat->dev);
			sl.plat->dev.platform_data = NULL;
			put_device(&sl.plat->dev);
		} else {
			platform_device_unregister(sl.plat);
		}
		sl.plat = NULL;
	}
	mutex_lock(&sl.win_lock);
	list_for_each_entry_safe(w, tmp, &sl.windows, node) {
		if (w->maps)
			w->closed = true;
		else
			simlink_window_free_locked(w);
	}
	mutex_unlock(&sl.win_lock);
	sl.attached = false;
	sl.dt_mode = false;
}

static int simlink_open(struct inode *inode, struct file *file)
{
	mutex_lock(&sl.attach_lock);
	if (sl.owner) {
		mutex_unlock(&sl.attach_lock);
		return -EBUSY;
	}
	sl.owner = file;
	spin_lock(&sl.lock);
	sl.dead = false;
	sl.pending = false;
	spin_unlock(&sl.lock);
	mutex_unlock(&sl.attach_lock);
	return nonseekable_open(inode, file);
}

static int simlink_release(struct inode *inode, struct file *file)
{
	mutex_lock(&sl.attach_lock);
	simlink_detach();
	sl.owner = NULL;
	mutex_unlock(&sl.attach_lock);
	return 0;
}

static ssize_t simlink_read(struct file *file, char __user *buf, size_t len, loff_t *ppos)
{
	struct pccx_simlink_msg m;
	int ret;

	if (len < sizeof(m))
		return -EINVAL;
	for (;;) {
		spin_lock(&sl.lock);
		if (sl.pending && !sl.delivered) {
			m = sl.req;
			sl.delivered = true;
			spin_unlock(&sl.lock);
			break;
		}
		spin_unlock(&sl.lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(sl.req_wq, READ_ONCE(sl.pending) &&
					       !READ_ONCE(sl.delivered));
		if (ret)
			return ret;
	}
	if (copy_to_user(buf, &m, sizeof(m)))
		return -EFAULT;
	return sizeof(m);
}

static ssize_t simlink_write(struct file *file, const char __user *buf, size_t len,
			     loff_t *ppos)
{
	struct pccx_simlink_msg m;

	if (len != sizeof(m))
		return -EINVAL;
	if (copy_from_user(&m, buf, sizeof(m)))
		return -EFAULT;
	spin_lock(&sl.lock);
	if (!sl.pending || !sl.delivered || sl.answered || m.seq != sl.req.seq) {
		spin_unlock(&sl.lock);
		return -EPROTO;
	}
	sl.answer = m.value;
	sl.answered = true;
	spin_unlock(&sl.lock);
	wake_up(&sl.resp_wq);
	return sizeof(m);
}

static __poll_t simlink_poll(struct file *file, poll_table *wait)
{
	__poll_t mask = 0;

	poll_wait(file, &sl.req_wq, wait);
	spin_lock(&sl.lock);
	if (sl.pending && !sl.delivered)
		mask |= EPOLLIN | EPOLLRDNORM;
	spin_unlock(&sl.lock);
	return mask;
}

static long simlink_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct pccx_simlink_fault f;

	switch (cmd) {
	case PCCX_SIMLINK_ATTACH:
		mutex_lock(&sl.attach_lock);
		if (sl.attached) {
			mutex_unlock(&sl.attach_lock);
			return -EBUSY;
		}
		sl.attached = true;
		schedule_work(&sl.attach_work);
		mutex_unlock(&sl.attach_lock);
		return 0;
	case PCCX_SIMLINK_IRQ:
		if (sl.irq <= 0 || sl.dt_mode)
			return -ENXIO;
		return generic_handle_irq_safe(sl.irq);
	case PCCX_SIMLINK_FAULT:
		if (copy_from_user(&f, (void __user *)arg, sizeof(f)))
			return -EFAULT;
		violations++;
		pr_err("pccx_simlink: shadow IOMMU refused a device %s of 0x%llx bytes at 0x%llx: outside every open window\n",
		       f.write ? "write" : "read", f.len, f.addr);
		return 0;
	default:
		return -ENOTTY;
	}
}

static void simlink_vm_open(struct vm_area_struct *vma)
{
	struct simlink_window *w = vma->vm_private_data;

	mutex_lock(&sl.win_lock);
	w->maps++;
	mutex_unlock(&sl.win_lock);
}

static void simlink_vm_close(struct vm_area_struct *vma)
{
	struct simlink_window *w = vma->vm_private_data;

	mutex_lock(&sl.win_lock);
	if (!--w->maps && w->closed)
		simlink_window_free_locked(w);
	mutex_unlock(&sl.win_lock);
}

static const struct vm_operations_struct simlink_vm_ops = {
	.open = simlink_vm_open,
	.close = simlink_vm_close,
};

/* Map an open window (offset = id pages); nothing else is reachable. */
static int simlink_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct simlink_window *w, *found = NULL;
	size_t len = vma->vm_end - vma->vm_start;
	int ret = -ENOENT;

	mutex_lock(&sl.win_lock);
	list_for_each_entry(w, &sl.windows, node) {
		if (w->id == vma->vm_pgoff && !w->closed) {
			found = w;
			break;
		}
	}
	if (found && sl.plat && len <= PAGE_ALIGN(found->size)) {
		vma->vm_pgoff = 0;
		vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
		ret = dma_mmap_coherent(&sl.plat->dev, vma, found->cpu, found->addr, found->size);
		if (!ret) {
			found->maps++;
			vma->vm_private_data = found;
			vma->vm_ops = &simlink_vm_ops;
		}
	} else if (found) {
		ret = -EINVAL;
	}
	mutex_unlock(&sl.win_lock);
	return ret;
}

static const struct file_operations simlink_fops = {
	.owner = THIS_MODULE,
	.open = simlink_open,
	.release = simlink_release,
	.read = simlink_read,
	.write = simlink_write,
	.poll = simlink_poll,
	.unlocked_ioctl = simlink_ioctl,
	.mmap = simlink_mmap,
	.llseek = no_llseek,
};

static struct miscdevice simlink_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "pccx_simlink",
	.fops = &simlink_fops,
	.mode = 0600,
};

static int __init simlink_init(void)
{
	int ret;

	mutex_init(&sl.call_lock);
	spin_lock_init(&sl.lock);
	init_waitqueue_head(&sl.req_wq);
	init_waitqueue_head(&sl.resp_wq);
	mutex_init(&sl.attach_lock);
	INIT_WORK(&sl.attach_work, simlink_attach_work);
	mutex_init(&sl.win_lock);
	INIT_LIST_HEAD(&sl.windows);

	/* a software interrupt line the simulator raises through PCCX_SIMLINK_IRQ */
	sl.irq = irq_alloc_desc(NUMA_NO_NODE);
	if (sl.irq > 0) {
		irq_set_chip_and_handler(sl.irq, &dummy_irq_chip, handle_simple_irq);
		irq_clear_status_flags(sl.irq, IRQ_NOREQUEST | IRQ_NOPROBE);
	} else {
		pr_warn("pccx_simlink: no interrupt descriptor (%d): the device has no interrupt\n",
			sl.irq);
	}
	ret = misc_register(&simlink_misc);
	if (ret && sl.irq > 0)
		irq_free_desc(sl.irq);
	return ret;
}
module_init(simlink_init);

static void __exit simlink_exit(void)
{
	misc_deregister(&simlink_misc);
	if (sl.irq > 0)
		irq_free_desc(sl.irq);
}
module_exit(simlink_exit);

MODULE_DESCRIPTION("pccx test backend: the cycle simulator as a user process");
MODULE_LICENSE("GPL");
