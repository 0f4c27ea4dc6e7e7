// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs: device state, per-context BOs and jobs, leak counters and
 * fault injection. Lives in the DRM device's debugfs directory
 * (/sys/kernel/debug/accel/<pci name>/).
 */

#include <linux/debugfs.h>
#include <linux/fault-inject.h>
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

	seq_printf(m, "ready: %d\n", READ_ONCE(ndev->ready));
	seq_printf(m, "wedged: %d\n", READ_ONCE(ndev->wedged));
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
	/* Registers: not while a reset owns the device. */
	if (!npu_device_hw_enter(ndev)) {
		seq_puts(m, "device: in reset or unusable\n");
		drm_dev_exit(idx);
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
	npu_device_hw_exit(ndev);
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

#if IS_ENABLED(CONFIG_DRM_ACCEL_NPU_DEBUG)
/*
 * Test hook: 1 stops the schedulers from handing jobs to the device (they
 * stay queued, their fences unsignaled), 0 lets them run again. A state
 * of the schedulers as a reset's: changed under reset_lock, and a reset
 * or the timeout handler leaves held schedulers stopped. Tests need it
 * on kernels without sw_sync (Debian's), where no fence that user space
 * signals at will can hold a job back.
 */
static int npu_debugfs_pause_get(void *data, u64 *val)
{
	struct npu_device *ndev = data;

	down_read(&ndev->reset_lock);
	*val = ndev->inject.paused;
	up_read(&ndev->reset_lock);
	return 0;
}

static int npu_debugfs_pause_set(void *data, u64 val)
{
	struct npu_device *ndev = data;
	bool was, cookie;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	/* Flag first, stop after, outside reset_lock (npu_device_stop_scheds()). */
	mutex_lock(&ndev->sched_lock);
	cookie = npu_device_reset_begin(ndev);
	was = npu_device_sched_running(ndev);
	ndev->inject.paused = val;
	npu_device_start_scheds(ndev);
	npu_device_reset_end(ndev, cookie);
	if (was && val)
		npu_device_stop_scheds(ndev);
	mutex_unlock(&ndev->sched_lock);
	drm_dev_exit(idx);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(npu_debugfs_pause_fops, npu_debugfs_pause_get,
			 npu_debugfs_pause_set, "%llu\n");

/*
 * Fault injection points. With CONFIG_FAULT_INJECTION_DEBUG_FS each is a
 * fault_attr (Documentation/fault-injection/fault-injection.rst) in a
 * directory fail_<name>/ of the device's debugfs, one per device (with
 * several NPUs a hang armed on one must not hit another): e.g. times 1,
 * probability 100 fails the next pass through the point on that device.
 * Without it (Debian's stock kernel) each device has a one-shot knob
 * npu_inject_<name> instead: write 1, and the next pass fails.
 */
static const char * const npu_inject_names[NPU_INJECT_COUNT] = {
	[NPU_INJECT_HANG] = "hang",
	[NPU_INJECT_MMU_FAULT] = "mmu_fault",
	[NPU_INJECT_BOOT_FAIL] = "boot_fail",
	[NPU_INJECT_TLB_TIMEOUT] = "tlb_timeout",
};

bool npu_inject(struct npu_device *ndev, enum npu_inject_point point)
{
	if (atomic_xchg(&ndev->inject.once[point], 0))
		return true;
#ifdef CONFIG_FAULT_INJECTION
	/*
	 * Only once armed: a task's fail-nth counts every should_fail() it
	 * passes, and the ioctl tests' fail-nth runs must not land here.
	 */
	if (!READ_ONCE(ndev->inject.attrs[point].probability))
		return false;
	return should_fail(&ndev->inject.attrs[point], 1);
#else
	return false;
#endif
}

static void npu_debugfs_init_hooks(struct npu_device *ndev, struct dentry *root)
{
	char name[32];
	int i;

	for (i = 0; i < NPU_INJECT_COUNT; i++) {
#ifdef CONFIG_FAULT_INJECTION
		ndev->inject.attrs[i] =
			(struct fault_attr)FAULT_ATTR_INITIALIZER;
#endif
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
		snprintf(name, sizeof(name), "fail_%s", npu_inject_names[i]);
		fault_create_debugfs_attr(name, root, &ndev->inject.attrs[i]);
#else
		snprintf(name, sizeof(name), "npu_inject_%s", npu_inject_names[i]);
		debugfs_create_atomic_t(name, 0600, root, &ndev->inject.once[i]);
#endif
	}
	debugfs_create_file_unsafe("npu_pause_queues", 0600, root, ndev,
				   &npu_debugfs_pause_fops);
}
#else
bool npu_inject(struct npu_device *ndev, enum npu_inject_point point)
{
	return false;
}

static void npu_debugfs_init_hooks(struct npu_device *ndev, struct dentry *root)
{
}
#endif

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
	npu_debugfs_init_hooks(ndev, root);
}
