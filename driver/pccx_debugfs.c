// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: /sys/kernel/debug/pccx/<device>/
 *   regs        control-page and DataMover registers
 *   history     the last PCCX_HISTORY jobs
 *   reset       write 1: abort the running job and reset the device
 *   fail_alloc  the next N buffer allocations fail with ENOMEM
 *   hang_jobs   the next N jobs are treated as hung when they start
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "pccx_drv.h"

static struct dentry *pccx_debugfs_root;

static const struct {
	const char *name;
	u32 off;
} pccx_ctrl_regs[] = {
	{ "ID", PCCX_REG_ID },
	{ "FEATURES", PCCX_REG_FEATURES },
	{ "STATUS", PCCX_REG_STATUS },
	{ "RETIRED", PCCX_REG_RETIRED },
	{ "ERROR", PCCX_REG_ERROR },
	{ "ERROR_INFO", PCCX_REG_ERROR_INFO },
	{ "IRQ_STATUS", PCCX_REG_IRQ_STATUS },
	{ "IRQ_ENABLE", PCCX_REG_IRQ_ENABLE },
	{ "RESET", PCCX_REG_RESET },
	{ "DMA_ADDR_BITS", PCCX_REG_DMA_ADDR_BITS },
	{ "CAPS", PCCX_REG_CAPS },
	{ "CLOCKS", PCCX_REG_CLOCKS },
	{ "CYCLES", PCCX_REG_CYCLES },
	{ "WFIFO_DEPTH", PCCX_REG_WFIFO_DEPTH },
};

static int pccx_regs_show(struct seq_file *m, void *unused)
{
	struct pccx_device *pdev = m->private;
	unsigned int i;

	/* reads have no side effects on extended devices (STATUS_POP is not read) */
	mutex_lock(&pdev->job_lock);
	if (pdev->gone) {
		mutex_unlock(&pdev->job_lock);
		return -ENODEV;
	}
	for (i = 0; i < ARRAY_SIZE(pccx_ctrl_regs); i++)
		seq_printf(m, "%-14s 0x%03x 0x%016llx\n", pccx_ctrl_regs[i].name,
			   pccx_ctrl_regs[i].off, pccx_rd64(pdev, pccx_ctrl_regs[i].off));
	for (i = 0; i < PCCX_DM_CHANNELS; i++)
		seq_printf(m, "DM%u            FLAGS 0x%02x CMD_LVL %u STS_LVL %u\n", i,
			   pccx_rd32(pdev, PCCX_DM_PAGE(i) + PCCX_DM_FLAGS),
			   pccx_rd32(pdev, PCCX_DM_PAGE(i) + PCCX_DM_CMD_LVL),
			   pccx_rd32(pdev, PCCX_DM_PAGE(i) + PCCX_DM_STS_LVL));
	mutex_unlock(&pdev->job_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pccx_regs);

static const char *const pccx_status_names[] = {
	[PCCX_JOB_QUEUED] = "queued",
	[PCCX_JOB_RUNNING] = "running",
	[PCCX_JOB_DONE] = "done",
	[PCCX_JOB_FAULT] = "fault",
	[PCCX_JOB_TIMEOUT] = "timeout",
	[PCCX_JOB_ABORTED] = "aborted",
};

static int pccx_history_show(struct seq_file *m, void *unused)
{
	struct pccx_device *pdev = m->private;
	unsigned int i, n, head;

	seq_puts(m, "id pid status hw_error n_insn retired queue_us run_us\n");
	mutex_lock(&pdev->job_lock);
	head = pdev->hist_head;
	n = min_t(unsigned int, head, PCCX_HISTORY);
	for (i = head - n; i != head; i++) {
		const struct pccx_job_record *r = &pdev->history[i % PCCX_HISTORY];
		u64 q = r->start_ns ? r->start_ns - r->submit_ns : r->end_ns - r->submit_ns;
		u64 run = r->start_ns ? r->end_ns - r->start_ns : 0;

		seq_printf(m, "%llu %d %s 0x%08x %u %llu %llu %llu\n", r->id, r->pid,
			   r->status < ARRAY_SIZE(pccx_status_names) ?
			   pccx_status_names[r->status] : "?",
			   r->hw_error, r->n_insn, r->retired, q / 1000, run / 1000);
	}
	mutex_unlock(&pdev->job_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pccx_history);

static int pccx_reset_set(void *data, u64 val)
{
	if (val != 1)
		return -EINVAL;
	pccx_request_reset(data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(pccx_reset_fops, NULL, pccx_reset_set, "%llu\n");

static int pccx_fail_alloc_get(void *data, u64 *val)
{
	*val = atomic_read(&((struct pccx_device *)data)->fail_alloc);
	return 0;
}

static int pccx_fail_alloc_set(void *data, u64 val)
{
	atomic_set(&((struct pccx_device *)data)->fail_alloc, (int)min_t(u64, val, INT_MAX));
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(pccx_fail_alloc_fops, pccx_fail_alloc_get, pccx_fail_alloc_set,
			 "%llu\n");

static int pccx_hang_jobs_get(void *data, u64 *val)
{
	*val = atomic_read(&((struct pccx_device *)data)->hang_jobs);
	return 0;
}

static int pccx_hang_jobs_set(void *data, u64 val)
{
	atomic_set(&((struct pccx_device *)data)->hang_jobs, (int)min_t(u64, val, INT_MAX));
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(pccx_hang_jobs_fops, pccx_hang_jobs_get, pccx_hang_jobs_set,
			 "%llu\n");

void pccx_debugfs_init(struct pccx_device *pdev)
{
	struct dentry *d;

	d = debugfs_create_dir(dev_name(pdev->dev), pccx_debugfs_root);
	pdev->debugfs = d;
	debugfs_create_file("regs", 0400, d, pdev, &pccx_regs_fops);
	debugfs_create_file("history", 0400, d, pdev, &pccx_history_fops);
	debugfs_create_file_unsafe("reset", 0200, d, pdev, &pccx_reset_fops);
	debugfs_create_file_unsafe("fail_alloc", 0600, d, pdev, &pccx_fail_alloc_fops);
	debugfs_create_file_unsafe("hang_jobs", 0600, d, pdev, &pccx_hang_jobs_fops);
}

void pccx_debugfs_root_init(void)
{
	pccx_debugfs_root = debugfs_create_dir(PCCX_NAME, NULL);
}

void pccx_debugfs_root_fini(void)
{
	debugfs_remove_recursive(pccx_debugfs_root);
}

void pccx_debugfs_fini(struct pccx_device *pdev)
{
	debugfs_remove_recursive(pdev->debugfs);
	pdev->debugfs = NULL;
}
