// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs: device state, per-context BOs and jobs, leak counters and
 * fault injection. Lives in the DRM device's debugfs directory
 * (/sys/kernel/debug/accel/<pci name>/).
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <drm/drm_drv.h>

#include "npu_drv.h"
#include "npu_gem.h"

static const char * const npu_state_names[] = {
	[NPU_STATE_OFF] = "off",
	[NPU_STATE_BOOTING] = "booting",
	[NPU_STATE_READY] = "ready",
	[NPU_STATE_FW_ERROR] = "fw_error",
};

static int npu_debugfs_state_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	u32 status = 0, state;
	int q, idx;

	seq_printf(m, "ready: %d\n", ndev->ready);
	seq_printf(m, "hw_version: %u.%u\n", ndev->hw_version >> 16,
		   ndev->hw_version & 0xffff);
	seq_printf(m, "fw_version: %u.%u\n", ndev->fw_version >> 16,
		   ndev->fw_version & 0xffff);
	seq_printf(m, "fw_build_id: %s\n", ndev->fw_build_id);
	seq_printf(m, "reset_count: %d\n", atomic_read(&ndev->reset_count));
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		seq_puts(m, "device: unplugged\n");
		return 0;
	}
	status = npu_read(ndev, NPU_REG_STATUS);
	state = status & NPU_STATUS_STATE_MASK;
	seq_printf(m, "device_state: %s%s%s\n",
		   state < ARRAY_SIZE(npu_state_names) ? npu_state_names[state] : "?",
		   status & NPU_STATUS_BUSY ? " busy" : "",
		   status & NPU_STATUS_FAULT ? " fault" : "");
	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		struct npu_queue *queue = &ndev->queues[q];

		seq_printf(m, "queue%d: host head %u tail %u, device head %u status %u\n",
			   q, queue->head, queue->tail,
			   npu_read(ndev, NPU_REG_QUEUE(q, NPU_QREG_HEAD)),
			   npu_read(ndev, NPU_REG_QUEUE(q, NPU_QREG_STATUS)));
	}
	seq_printf(m, "perf_jobs: %llu\n", npu_read64(ndev, NPU_REG_PERF_JOBS_LO));
	seq_printf(m, "perf_cycles: %llu\n",
		   npu_read64(ndev, NPU_REG_PERF_CYCLES_LO));
	seq_printf(m, "perf_errors: %u\n", npu_read(ndev, NPU_REG_PERF_ERRORS));
	seq_printf(m, "perf_faults: %u\n", npu_read(ndev, NPU_REG_PERF_FAULTS));
	drm_dev_exit(idx);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_debugfs_state);

/* One "name value" per line: the kselftests parse these. */
static int npu_debugfs_counters_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;

	seq_printf(m, "bos %d\n", atomic_read(&ndev->bo_count));
	seq_printf(m, "pages_mapped %lld\n",
		   (s64)atomic64_read(&ndev->pages_mapped));
	seq_printf(m, "pages_reclaimed %lld\n",
		   (s64)atomic64_read(&ndev->pages_reclaimed));
	seq_printf(m, "bos_restored %lld\n", (s64)atomic64_read(&ndev->bos_restored));
	seq_printf(m, "jobs %d\n", atomic_read(&ndev->job_count));
	seq_printf(m, "contexts %d\n", atomic_read(&ndev->ctx_count));
	seq_printf(m, "jobs_submitted %lld\n",
		   (s64)atomic64_read(&ndev->jobs_submitted));
	seq_printf(m, "jobs_completed %lld\n",
		   (s64)atomic64_read(&ndev->jobs_completed));
	seq_printf(m, "jobs_failed %lld\n", (s64)atomic64_read(&ndev->jobs_failed));
	seq_printf(m, "mmu_faults %lld\n", (s64)atomic64_read(&ndev->mmu_faults));
	seq_printf(m, "resets %d\n", atomic_read(&ndev->reset_count));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_debugfs_counters);

static int npu_debugfs_contexts_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	struct npu_context *ctx;

	mutex_lock(&ndev->ctx_lock);
	list_for_each_entry(ctx, &ndev->contexts, node) {
		seq_printf(m, "context %u pid %d tables %llu\n", ctx->id,
			   ctx->pid, ctx->mmu.tables);
		npu_gem_print_ctx(m, ctx);
		npu_job_print_ctx(m, ctx);
	}
	mutex_unlock(&ndev->ctx_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_debugfs_contexts);

/*
 * Test hook: 1 stops the schedulers from handing jobs to the device (they
 * stay queued, their fences unsignaled), 0 lets them run again.
 */
static int npu_debugfs_pause_get(void *data, u64 *val)
{
	struct npu_device *ndev = data;

	*val = atomic_read(&ndev->inject.paused);
	return 0;
}

static int npu_debugfs_pause_set(void *data, u64 val)
{
	struct npu_device *ndev = data;
	int q;

	if (atomic_xchg(&ndev->inject.paused, !!val) == !!val)
		return 0;
	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		if (val)
			drm_sched_wqueue_stop(&ndev->queues[q].sched);
		else
			drm_sched_wqueue_start(&ndev->queues[q].sched);
	}
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(npu_debugfs_pause_fops, npu_debugfs_pause_get,
			 npu_debugfs_pause_set, "%llu\n");

void npu_debugfs_init(struct npu_device *ndev)
{
	struct dentry *root = ndev->drm.debugfs_root;

	if (IS_ERR_OR_NULL(root))
		return;
	debugfs_create_file("npu_state", 0444, root, ndev,
			    &npu_debugfs_state_fops);
	debugfs_create_file("npu_counters", 0444, root, ndev,
			    &npu_debugfs_counters_fops);
	debugfs_create_file("npu_contexts", 0444, root, ndev,
			    &npu_debugfs_contexts_fops);
	/* Fault injection, each one-shot: write 1. */
	debugfs_create_atomic_t("npu_inject_hang", 0600, root,
				&ndev->inject.hang_next);
	debugfs_create_atomic_t("npu_inject_mmu_fault", 0600, root,
				&ndev->inject.fault_next);
	debugfs_create_atomic_t("npu_inject_boot_fail", 0600, root,
				&ndev->inject.fail_boot);
	debugfs_create_file_unsafe("npu_pause_queues", 0600, root, ndev,
				   &npu_debugfs_pause_fops);
}
