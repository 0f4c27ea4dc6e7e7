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

	WRITE_ONCE(ndev->ready, false);
	ret = npu_device_reset_hw(ndev);
	if (ret)
		return ret;
	/* The device's DMA has stopped: it may reach memory again. */
	if (ndev->wedged) {
		pci_set_master(ndev->pdev);
		WRITE_ONCE(ndev->wedged, false);
	}

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
	WRITE_ONCE(ndev->ready, true);
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
	init_rwsem(&ndev->reset_lock);
	ret = drmm_mutex_init(&ndev->drm, &ndev->sched_lock);
	if (ret)
		return ret;
	init_waitqueue_head(&ndev->job_free_wq);
	init_llist_head(&ndev->job_free_list);
	spin_lock_init(&ndev->gate_lock);
	INIT_LIST_HEAD(&ndev->gates);
	INIT_WORK(&ndev->job_free_work, npu_job_free_work);
	INIT_LIST_HEAD(&ndev->contexts);
	spin_lock_init(&ndev->bo_list_lock);
	INIT_LIST_HEAD(&ndev->bo_list);
	ret = drmm_mutex_init(drm, &ndev->ctx_lock);
	if (ret)
		return ret;
	ret = drmm_mutex_init(drm, &ndev->mmu_lock);
	if (ret)
		return ret;
	ret = npu_gem_init(ndev);
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

	down_write(&ndev->reset_lock);
	ret = npu_device_hw_start(ndev);
	if (ret) {
		/*
		 * A boot that timed out may still be reading the firmware,
		 * which devres frees before it disables the device: stop it
		 * first, and if it does not stop, cut its DMA.
		 */
		npu_irq_disable(ndev);
		if (npu_device_reset_hw(ndev))
			npu_device_wedge(ndev, "device reset timed out at probe");
	}
	up_write(&ndev->reset_lock);
	if (ret) {
		npu_irq_fini(ndev);	/* not under reset_lock: npu_device_fini() */
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
	down_write(&ndev->reset_lock);
	npu_irq_disable(ndev);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_process(&ndev->queues[q]);
	/* Pages and tables go below: a device that did not stop loses DMA. */
	if (npu_device_reset_hw(ndev))
		npu_device_wedge(ndev, "device reset timed out at unbind");
	WRITE_ONCE(ndev->ready, false);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_abort_inflight(&ndev->queues[q], -ENODEV);

	/*
	 * A PCI error recovery that failed after error_detected calls
	 * neither slot_reset nor resume, a shutdown stopped the schedulers
	 * for good and tests may hold jobs back: every job would wait. Start
	 * them, so that each job reaches run_job and ends (-ENODEV).
	 */
	if (ndev->reset_prepared)
		drm_warn(&ndev->drm, "unbind after a failed PCI recovery: failing its jobs\n");
	if (ndev->reset_prepared || ndev->inject.paused || ndev->shut_down) {
		ndev->reset_prepared = false;
		ndev->inject.paused = false;
		ndev->shut_down = false;
		for (q = 0; q < NPU_NUM_QUEUES; q++)
			drm_sched_wqueue_start(&ndev->queues[q].sched);
	}
	up_write(&ndev->reset_lock);
	/*
	 * Not under reset_lock: the timeout handler takes it inside the
	 * fence-signalling section, and freeing the vectors takes the MSI
	 * descriptor mutex, which is held across GFP_KERNEL allocations
	 * (lockdep: md->mutex -> fs_reclaim -> dma_fence_map -> reset_lock).
	 * Interrupts are masked and synchronized above; the device lock,
	 * held by unbind, keeps a PCI reset out.
	 */
	npu_irq_fini(ndev);
	/* Jobs waiting for another driver's fence must not wait for ever. */
	npu_job_gates_fail(ndev);
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
 * MMIO outside the schedulers, the IRQ threads and the reset paths
 * (TLB invalidation, GET_PARAM, debugfs, the submit timestamp): true
 * with reset_lock held for reading, false (nothing held) while a reset
 * owns the device, after a shutdown or while the device is unusable.
 * A caller that gets false skips its MMIO; every reset ends with a full
 * TLB invalidation (npu_device_hw_start()).
 */
bool npu_device_hw_enter(struct npu_device *ndev)
{
	down_read(&ndev->reset_lock);
	if (READ_ONCE(ndev->ready) && !ndev->reset_prepared)
		return true;
	up_read(&ndev->reset_lock);
	return false;
}

/* npu_device_hw_enter() that never waits (reclaim: the shrinker). */
bool npu_device_hw_tryenter(struct npu_device *ndev)
{
	if (!down_read_trylock(&ndev->reset_lock))
		return false;
	if (READ_ONCE(ndev->ready) && !ndev->reset_prepared)
		return true;
	up_read(&ndev->reset_lock);
	return false;
}

void npu_device_hw_exit(struct npu_device *ndev)
{
	up_read(&ndev->reset_lock);
}

/*
 * One step of a reset, or of holding or releasing the schedulers, with
 * reset_lock held for writing. Jobs' fences wait for it, so it is a
 * fence-signalling section, as the timeout handler is: lockdep checks
 * that it allocates nothing and takes no lock held across an allocation
 * or a fence wait.
 */
bool npu_device_reset_begin(struct npu_device *ndev)
{
	bool cookie = dma_fence_begin_signalling();

	down_write(&ndev->reset_lock);
	return cookie;
}

void npu_device_reset_end(struct npu_device *ndev, bool cookie)
{
	up_write(&ndev->reset_lock);
	dma_fence_end_signalling(cookie);
}

/*
 * The device may still be doing DMA and nothing stopped it (its reset or
 * a TLB invalidation timed out): turn bus mastering off before any page
 * it could reach is freed. Jobs fail with -EIO until a reset succeeds;
 * npu_device_hw_start() turns bus mastering back on.
 */
void npu_device_wedge(struct npu_device *ndev, const char *why)
{
	pci_clear_master(ndev->pdev);
	WRITE_ONCE(ndev->wedged, true);
	WRITE_ONCE(ndev->ready, false);
	drm_err(&ndev->drm, "%s: bus mastering off until a reset succeeds\n", why);
}

/*
 * The steps of every reset, shared by timeout recovery, PCI error
 * recovery and PCI resets: stop the jobs, reset and re-boot the device,
 * run the jobs that had not started again. Each step holds reset_lock
 * for writing; between the steps of a PCI reset, reset_prepared keeps
 * the MMIO users (npu_device_hw_enter()) and the timeout handler away.
 * Nothing here allocates or waits for a fence: the timeout handler runs
 * it inside a fence-signalling section.
 */

/*
 * Whether the timeout handler may reset the device: not while a PCI
 * reset holds it, nor after a shutdown. reset_lock held.
 */
bool npu_device_may_recover(struct npu_device *ndev)
{
	lockdep_assert_held(&ndev->reset_lock);
	return !ndev->reset_prepared && !ndev->shut_down;
}

/* The schedulers hand jobs to the device: no reset, shutdown or pause. */
bool npu_device_sched_running(struct npu_device *ndev)
{
	return npu_device_may_recover(ndev) && !ndev->inject.paused;
}

/*
 * Stop the schedulers handing jobs to the device (drm_sched_wqueue_stop()
 * waits for a run_job in progress; the jobs keep their hardware fences
 * and their places on the pending lists). Never under reset_lock: run_job
 * is a fence-signalling section, and the timeout handler takes reset_lock
 * inside one, so waiting for run_job under it inverts that order (the
 * debug kernel's lockdep, once a run_job was in flight at a PCI reset:
 * work_run_job -> dma_fence_map -> reset_lock -> work_run_job). Every
 * caller takes reset_lock afterwards and, under it, starts them again if
 * nothing holds them (npu_device_start_scheds()): the last word is always
 * said under the lock. Steps that make npu_device_sched_running() false
 * set their flag first and stop after, under sched_lock. Never inside a
 * fence-signalling section either, for the same reason
 * (npu_device_reset_begin() comes after it).
 */
void npu_device_stop_scheds(struct npu_device *ndev)
{
	int q;

	lockdep_assert_not_held(&ndev->reset_lock);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		drm_sched_wqueue_stop(&ndev->queues[q].sched);
}

/* Under reset_lock: let the schedulers go on if nothing holds them. */
void npu_device_start_scheds(struct npu_device *ndev)
{
	int q;

	lockdep_assert_held_write(&ndev->reset_lock);
	if (npu_device_sched_running(ndev))
		for (q = 0; q < NPU_NUM_QUEUES; q++)
			drm_sched_wqueue_start(&ndev->queues[q].sched);
}

/*
 * With the schedulers stopped (npu_device_stop_scheds()): stop the
 * device's queues from fetching and note the one job that may have
 * started (NPU_REG_ACTIVE).
 */
static void npu_device_stop_jobs(struct npu_device *ndev)
{
	struct npu_active *act = &ndev->reset_active;
	u32 active;
	int q;

	lockdep_assert_held_write(&ndev->reset_lock);
	npu_irq_disable(ndev);
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
 * Reset the device (the reset completes once its DMA has stopped; if it
 * does not, bus mastering goes off before any job ends), retire what it
 * held (npu_queue_retire()), boot it again and put the jobs that had not
 * started back on the rings.
 */
static int npu_device_restart_locked(struct npu_device *ndev)
{
	int q, ret;

	lockdep_assert_held_write(&ndev->reset_lock);
	/* Counted before a fence of this reset signals: who sees one, sees it. */
	atomic_inc(&ndev->reset_count);
	if (npu_device_reset_hw(ndev))
		npu_device_wedge(ndev, "device reset timed out");
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
static void npu_device_resume_locked(struct npu_device *ndev)
{
	lockdep_assert_held_write(&ndev->reset_lock);
	ndev->reset_prepared = false;
	npu_device_start_scheds(ndev);
	npu_dbg(ndev, RESET, "reset %d done\n", atomic_read(&ndev->reset_count));
}

/*
 * Recovery after a job timeout, once npu_job_is_hung() found @bad on the
 * engine for job_timeout_ms; called by the timeout handler with
 * reset_lock held for writing, @bad off its pending list (the handler
 * puts it back). Only the job the device says it is executing is blamed
 * and its context banned; a job that merely waited behind others never is.
 */
void npu_device_recover(struct npu_device *ndev, struct npu_job *bad)
{
	struct npu_active *act = &ndev->reset_active;
	u32 guilty_ctx = ~0u;
	u64 guilty_id = 0;

	npu_device_stop_jobs(ndev);
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

	npu_device_restart_locked(ndev);
	npu_job_timeout_reinsert(bad);
	npu_device_resume_locked(ndev);
}

/*
 * A reset not caused by a job (PCI error recovery, FLR / bus reset from
 * sysfs): nobody is guilty; the job executing fails with
 * NPU_JOB_ERR_ABORTED, the ones that had not started run afterwards.
 * The device is reset here already, so that its DMA has stopped before
 * anything is unmapped while the PCI core resets it (MMU invalidations
 * are skipped meanwhile, and npu_device_hw_start() invalidates all).
 */
void npu_device_reset_prepare(struct npu_device *ndev)
{
	bool cookie, stop;

	mutex_lock(&ndev->sched_lock);
	cookie = npu_device_reset_begin(ndev);
	stop = !ndev->reset_prepared && !ndev->shut_down;
	/* From here the timeout handler leaves jobs alone, nothing starts. */
	if (stop)
		ndev->reset_prepared = true;
	npu_device_reset_end(ndev, cookie);
	if (stop) {
		npu_device_stop_scheds(ndev);
		cookie = npu_device_reset_begin(ndev);
		npu_device_stop_jobs(ndev);
		if (npu_device_reset_hw(ndev))
			npu_device_wedge(ndev, "device reset timed out");
		trace_npu_reset(ndev, ~0u, atomic_read(&ndev->reset_count) + 1);
		npu_device_reset_end(ndev, cookie);
	}
	mutex_unlock(&ndev->sched_lock);
}

int npu_device_reset_restart(struct npu_device *ndev)
{
	bool cookie;
	int ret = -EIO;

	cookie = npu_device_reset_begin(ndev);
	if (ndev->reset_prepared)
		ret = npu_device_restart_locked(ndev);
	npu_device_reset_end(ndev, cookie);
	return ret;
}

void npu_device_reset_resume(struct npu_device *ndev)
{
	bool cookie;

	mutex_lock(&ndev->sched_lock);
	cookie = npu_device_reset_begin(ndev);
	if (ndev->reset_prepared)
		npu_device_resume_locked(ndev);
	npu_device_reset_end(ndev, cookie);
	mutex_unlock(&ndev->sched_lock);
}

/*
 * Reboot, poweroff or kexec: no more jobs reach the device, its
 * interrupts and DMA stop. Jobs still queued never run; the timeout
 * handler leaves them alone (npu_device_may_recover()).
 */
void npu_device_shutdown(struct npu_device *ndev)
{
	bool cookie;

	mutex_lock(&ndev->sched_lock);
	cookie = npu_device_reset_begin(ndev);
	ndev->shut_down = true;
	npu_device_reset_end(ndev, cookie);
	npu_device_stop_scheds(ndev);
	cookie = npu_device_reset_begin(ndev);
	npu_irq_disable(ndev);
	ndev->ready = false;
	npu_device_reset_hw(ndev);
	pci_clear_master(ndev->pdev);
	npu_device_reset_end(ndev, cookie);
	mutex_unlock(&ndev->sched_lock);
}
