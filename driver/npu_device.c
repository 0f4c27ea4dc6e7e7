// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device bring-up, teardown, reset and recovery.
 */

#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/iopoll.h>
#include <linux/pci.h>

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "npu_drv.h"
#include "npu_gem.h"
#include "npu_trace.h"

static const char * const npu_job_status_names[NPU_JOB_STATUS_COUNT] =
	NPU_JOB_STATUS_NAMES;

const char *npu_job_status_str(u32 status)
{
	if (status < NPU_JOB_STATUS_COUNT && npu_job_status_names[status])
		return npu_job_status_names[status];
	return "UNKNOWN";
}

u64 npu_device_time_ns(struct npu_device *ndev)
{
	/* Reading LO latches HI. */
	return npu_read64(ndev, NPU_REG_TIMESTAMP_LO);
}

int npu_device_reset_hw(struct npu_device *ndev)
{
	u32 val;
	int ret;

	npu_write(ndev, NPU_REG_CTRL, NPU_CTRL_RESET);
	ret = readl_poll_timeout(ndev->regs + NPU_REG_CTRL, val,
				 !(val & NPU_CTRL_RESET), 10, 100000);
	if (ret)
		drm_err(&ndev->drm, "device reset did not complete\n");
	return ret;
}

/* Reset, boot the firmware and program contexts and queues. */
int npu_device_hw_start(struct npu_device *ndev)
{
	int ret, q;

	ndev->ready = false;
	ret = npu_device_reset_hw(ndev);
	if (ret)
		return ret;

	npu_write(ndev, NPU_REG_FAULT_ACK, 1);
	npu_write(ndev, NPU_REG_IRQ_ACK, ~0u);

	ret = npu_fw_boot(ndev);
	if (ret)
		return ret;

	npu_write(ndev, NPU_REG_CTX_TABLE_LO, lower_32_bits(ndev->ctx_table_dma));
	npu_write(ndev, NPU_REG_CTX_TABLE_HI, upper_32_bits(ndev->ctx_table_dma));
	npu_write(ndev, NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);

	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_hw_init(&ndev->queues[q]);

	ndev->fw_version = npu_read(ndev, NPU_REG_FW_VERSION);
	ndev->op_mask = npu_read(ndev, NPU_REG_OP_MASK);
	ndev->ready = true;
	npu_irq_enable(ndev);
	return 0;
}

static int npu_device_identify(struct npu_device *ndev)
{
	u32 id = npu_read(ndev, NPU_REG_ID);

	if (id != NPU_ID_MAGIC) {
		drm_err(&ndev->drm, "unexpected ID register %#x\n", id);
		return -ENODEV;
	}
	ndev->hw_version = npu_read(ndev, NPU_REG_HW_VERSION);
	ndev->isa_version = npu_read(ndev, NPU_REG_ISA_VERSION);
	ndev->caps = npu_read(ndev, NPU_REG_CAPS);
	ndev->mac_shape = npu_read(ndev, NPU_REG_MAC_SHAPE);
	ndev->sram_size = npu_read(ndev, NPU_REG_SRAM_SIZE);
	ndev->clock_mhz = npu_read(ndev, NPU_REG_CLOCK_MHZ);
	ndev->dma_bytes_per_cycle = npu_read(ndev, NPU_REG_DMA_BYTES_PER_CYCLE);

	if (ndev->hw_version >> 16 != NPU_HW_VERSION_MAJOR ||
	    npu_read(ndev, NPU_REG_NUM_QUEUES) != NPU_NUM_QUEUES ||
	    npu_read(ndev, NPU_REG_NUM_CONTEXTS) != NPU_NUM_CONTEXTS) {
		drm_err(&ndev->drm, "unsupported hardware version %#x\n",
			ndev->hw_version);
		return -ENODEV;
	}
	return 0;
}

/* The context table outlives the PCI binding while files stay open. */
static void npu_device_release(struct drm_device *drm, void *data)
{
	struct npu_device *ndev = to_npu_device(drm);

	npu_job_queues_fini(ndev);
	if (ndev->reset_wq)
		destroy_workqueue(ndev->reset_wq);
	ida_destroy(&ndev->ctx_ida);
}

int npu_device_init(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	struct drm_device *drm = &ndev->drm;
	int ret;

	/* Device tables are __le (npu_hw.h); kernel pages hold whole NPU pages. */
	BUILD_BUG_ON(PAGE_SIZE % NPU_PAGE_SIZE);
	BUILD_BUG_ON(NPU_NUM_CONTEXTS * sizeof(struct npu_ctx_entry) > PAGE_SIZE);

	ida_init(&ndev->ctx_ida);
	init_waitqueue_head(&ndev->job_free_wq);
	INIT_LIST_HEAD(&ndev->contexts);
	spin_lock_init(&ndev->bo_list_lock);
	INIT_LIST_HEAD(&ndev->bo_list);
	ret = drmm_mutex_init(drm, &ndev->ctx_lock);
	if (ret)
		return ret;
	ret = drmm_mutex_init(drm, &ndev->mmu_lock);
	if (ret)
		return ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);

	/*
	 * Page table entries and the context root hold address bits 12..51:
	 * a DMA address at or above 2^52 would be truncated, not refused.
	 */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(fls64(NPU_PTE_ADDR_MASK)));
	if (ret)
		return ret;
	/*
	 * The device's MMU takes any segment length (the page tables get one
	 * entry per 4 KiB of it); without this, segments of the shmem sg
	 * tables beyond the 64 KiB default break the DMA API's contract.
	 */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);

	ndev->regs = pcim_iomap_region(pdev, NPU_BAR_REGS, NPU_DRIVER_NAME);
	if (IS_ERR(ndev->regs))
		return PTR_ERR(ndev->regs);

	ret = npu_device_identify(ndev);
	if (ret)
		return ret;

	/*
	 * Device-managed, like the rings: it goes at unbind, not with the
	 * last open file (contexts touch it only inside drm_dev_enter()).
	 */
	ndev->ctx_table = dmam_alloc_coherent(&pdev->dev, PAGE_SIZE,
					      &ndev->ctx_table_dma, GFP_KERNEL);
	if (!ndev->ctx_table)
		return -ENOMEM;

	ndev->reset_wq = alloc_ordered_workqueue("npu-reset", 0);
	if (!ndev->reset_wq)
		return -ENOMEM;
	ret = drmm_add_action_or_reset(drm, npu_device_release, NULL);
	if (ret)
		return ret;

	ret = npu_job_queues_init(ndev);
	if (ret)
		return ret;

	ret = npu_fw_load(ndev);
	if (ret)
		return ret;

	ret = npu_irq_init(ndev);
	if (ret)
		return ret;

	ret = npu_device_hw_start(ndev);
	if (ret) {
		npu_irq_fini(ndev);
		return ret;
	}
	/* What PCI error recovery restores after a slot reset. */
	pci_save_state(pdev);
	return 0;
}

/*
 * Unbind, after drm_dev_unplug(): stop the device, fail every job it
 * holds, wait until every job is freed, then tear down the entities and
 * schedulers here (as rocket and amdxdna do), so that no free_job on a
 * scheduler's workqueue can drop the last device reference and end up
 * in drm_sched_fini() waiting for itself. Open files keep their context
 * (ioctls fail with -ENODEV) until they are closed, but no DMA memory:
 * page tables and BO mappings are given back here, before the DMA API
 * sees the driver let go of the device.
 */
void npu_device_fini(struct npu_device *ndev)
{
	struct npu_context *ctx;
	int q;

	/*
	 * run_job, submit and the timeout handler run inside drm_dev_enter(),
	 * so after drm_dev_unplug() nothing else touches the rings.
	 */
	npu_irq_disable(ndev);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_process(&ndev->queues[q]);
	npu_device_reset_hw(ndev);
	ndev->ready = false;
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_abort_inflight(&ndev->queues[q], -ENODEV);
	npu_irq_fini(ndev);

	/*
	 * A PCI error recovery that failed after error_detected calls
	 * neither slot_reset nor resume: the schedulers are still stopped
	 * and would hold every job. Resume them, so that each job ends.
	 */
	if (READ_ONCE(ndev->reset_prepared)) {
		drm_warn(&ndev->drm, "unbind after a failed PCI recovery: failing its jobs\n");
		npu_device_reset_resume(ndev);
	}
	npu_job_drain(ndev);
	mutex_lock(&ndev->ctx_lock);
	list_for_each_entry(ctx, &ndev->contexts, node) {
		npu_job_entities_fini(ctx);
		npu_mmu_ctx_unbind(ndev, &ctx->mmu);
	}
	mutex_unlock(&ndev->ctx_lock);
	npu_job_queues_fini(ndev);
	npu_gem_unbind_all(ndev);
}

/*
 * The steps of every reset, shared by timeout recovery, PCI error
 * recovery and PCI resets: stop the jobs, reset and re-boot the device,
 * run the jobs that had not started again. reset_pending is held from the
 * first to the last.
 */

/*
 * Stop handing jobs to the device, stop its queues from fetching and
 * note the one job that may have started (NPU_REG_ACTIVE).
 */
static void npu_device_stop_jobs(struct npu_device *ndev, struct npu_job *bad)
{
	struct npu_active *act = &ndev->reset_active;
	u32 active;
	int q;

	npu_irq_disable(ndev);
	/* A timed-out job goes back on its scheduler's pending list. */
	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		struct npu_queue *queue = &ndev->queues[q];

		drm_sched_stop(&queue->sched,
			       bad && bad->queue == queue ? &bad->base : NULL);
	}
	/* Disabled queues fetch nothing: only the executing job can run on. */
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_write(ndev, NPU_REG_QUEUE(q, NPU_QREG_CTRL), 0);
	active = npu_read(ndev, NPU_REG_ACTIVE);
	act->known = active != ~0u;
	act->valid = act->known && (active & NPU_ACTIVE_VALID);
	act->queue = active & NPU_ACTIVE_QUEUE_MASK;
	act->seqno = act->valid ? npu_read64(ndev, NPU_REG_ACTIVE_SEQ_LO) : 0;
}

/*
 * Reset the device (the reset completes once its DMA has stopped), retire
 * what it held (npu_queue_retire()), boot it again and put the jobs that
 * had not started back on the rings.
 */
int npu_device_reset_restart(struct npu_device *ndev)
{
	int q, ret;

	npu_device_reset_hw(ndev);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_retire(&ndev->queues[q], &ndev->reset_active);

	ret = npu_device_hw_start(ndev);
	if (ret)
		drm_err(&ndev->drm, "recovery failed (%d): device unusable\n", ret);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_rerun(&ndev->queues[q], ret ? -EIO : 0);
	return ret;
}

/* Let the schedulers go on: re-run jobs complete through their fences. */
void npu_device_reset_resume(struct npu_device *ndev)
{
	int q;

	atomic_inc(&ndev->reset_count);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_job_sched_restart(&ndev->queues[q].sched);
	WRITE_ONCE(ndev->reset_prepared, false);
	atomic_set(&ndev->reset_pending, 0);
	npu_dbg(ndev, RESET, "reset %d done\n", atomic_read(&ndev->reset_count));
}

/*
 * Recovery after a job timeout, once npu_job_is_hung() found @bad on the
 * engine for job_timeout_ms; called with reset_pending taken
 * (npu_device_reset_trylock()), which npu_device_reset_resume() releases.
 * Only the job the device says it is executing is blamed and its context
 * banned; a job that merely waited behind others never is.
 */
void npu_device_recover(struct npu_device *ndev, struct npu_job *bad)
{
	struct npu_active *act = &ndev->reset_active;
	u32 guilty_ctx = ~0u;
	u64 guilty_id = 0;

	npu_device_stop_jobs(ndev, bad);
	/* Still the job judged hung (it may have ended in between)? */
	if (act->valid && act->queue == bad->queue->id &&
	    act->seqno == bad->hw_fence->seqno) {
		atomic_set(&bad->ectx->banned, 1);
		guilty_ctx = bad->ctx->id;
		guilty_id = bad->rec->id;
		drm_warn(&ndev->drm, "job %llu of context %u hung the device: context banned\n",
			 guilty_id, guilty_ctx);
	}
	trace_npu_reset(ndev, guilty_ctx, atomic_read(&ndev->reset_count) + 1);

	npu_device_reset_restart(ndev);
	npu_device_reset_resume(ndev);
}

/* Wait for a running recovery, then keep others out until resume. */
static void npu_device_reset_lock(struct npu_device *ndev)
{
	while (atomic_cmpxchg(&ndev->reset_pending, 0, 1) != 0)
		usleep_range(1000, 2000);
}

/*
 * The same for the timeout handler, which gives up after @ms (a shutdown
 * keeps reset_pending for good). Release with npu_device_reset_unlock()
 * or npu_device_reset_resume().
 */
bool npu_device_reset_trylock(struct npu_device *ndev, unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	while (atomic_cmpxchg(&ndev->reset_pending, 0, 1) != 0) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(1000, 2000);
	}
	return true;
}

void npu_device_reset_unlock(struct npu_device *ndev)
{
	atomic_set(&ndev->reset_pending, 0);
}

/*
 * A reset not caused by a job (PCI error recovery, FLR / bus reset from
 * sysfs): nobody is guilty; the job executing fails with
 * NPU_JOB_ERR_ABORTED, the ones that had not started run afterwards.
 */
void npu_device_reset_prepare(struct npu_device *ndev)
{
	npu_device_reset_lock(ndev);
	npu_device_stop_jobs(ndev, NULL);
	WRITE_ONCE(ndev->reset_prepared, true);
	trace_npu_reset(ndev, ~0u, atomic_read(&ndev->reset_count) + 1);
}

/*
 * Reboot, poweroff or kexec: no more jobs reach the device, its
 * interrupts and DMA stop. Jobs still queued never run.
 */
void npu_device_shutdown(struct npu_device *ndev)
{
	int q;

	npu_device_reset_lock(ndev);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		drm_sched_wqueue_stop(&ndev->queues[q].sched);
	npu_irq_disable(ndev);
	ndev->ready = false;
	npu_device_reset_hw(ndev);
	pci_clear_master(ndev->pdev);
}
