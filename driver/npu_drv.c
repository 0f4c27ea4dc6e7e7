// SPDX-License-Identifier: GPL-2.0-only
/*
 * DRM glue: driver registration, per-file contexts, GET_PARAM, fdinfo and
 * the PCI driver.
 */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_prime.h>

#include "npu_drv.h"
#include "npu_gem.h"

#define CREATE_TRACE_POINTS
#include "npu_trace.h"

unsigned int npu_dbg_mask;
module_param_named(dbg_mask, npu_dbg_mask, uint, 0644);
MODULE_PARM_DESC(dbg_mask, "Debug categories: DRV=1 GEM=2 MMU=4 JOB=8 IRQ=16 FW=32 RESET=64 URING=128");

unsigned int npu_job_timeout_ms = 2000;

/* 0 would make every job time out at once: insmod fails instead. */
static int npu_job_timeout_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret;

	ret = kstrtouint(val, 0, &ms);
	if (ret)
		return ret;
	if (!ms || ms > NPU_JOB_TIMEOUT_MAX_MS)
		return -EINVAL;
	*(unsigned int *)kp->arg = ms;
	return 0;
}

static const struct kernel_param_ops npu_job_timeout_ops = {
	.set = npu_job_timeout_set,
	.get = param_get_uint,
};
module_param_cb(job_timeout_ms, &npu_job_timeout_ops, &npu_job_timeout_ms, 0444);
MODULE_PARM_DESC(job_timeout_ms, "Job timeout before a device reset, in ms (1..600000)");

struct npu_context *npu_context_get(struct npu_context *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

static void npu_context_release(struct kref *ref)
{
	struct npu_context *ctx = container_of(ref, struct npu_context, ref);
	struct npu_device *ndev = ctx->ndev;
	int idx;

	/*
	 * No job of this context can run any more: retire it in hardware
	 * (after unbind the table and the device are gone already). It
	 * leaves the list and its page tables go in one ctx_lock section:
	 * an unbind either finds it and frees the tables itself while it
	 * still owns the device, or finds it gone with them. The tables are
	 * never freed on a device the driver has let go.
	 */
	mutex_lock(&ndev->ctx_lock);
	list_del_init(&ctx->node);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		WRITE_ONCE(ndev->ctx_table[ctx->id].pt_root, 0);
		wmb(); /* the entry is cleared before the TLB drops it */
		npu_mmu_invalidate(ndev, ctx->id);
		drm_dev_exit(idx);
	}
	npu_mmu_ctx_fini(ndev, &ctx->mmu);
	mutex_unlock(&ndev->ctx_lock);
	ida_free(&ndev->ctx_ida, ctx->id);
	atomic_dec(&ndev->ctx_count);
	npu_dbg(ndev, DRV, "context %u released\n", ctx->id);
	mutex_destroy(&ctx->submit_lock);
	kfree(ctx);
	drm_dev_put(&ndev->drm);
}

void npu_context_put(struct npu_context *ctx)
{
	kref_put(&ctx->ref, npu_context_release);
}

static int npu_open(struct drm_device *drm, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_context *ctx;
	int ret, id, idx;

	/* Page tables and the context table entry: not after unbind. */
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx) {
		ret = -ENOMEM;
		goto err_exit;
	}

	/* The device has NPU_NUM_CONTEXTS: one more open is -EBUSY (uAPI). */
	id = ida_alloc_max(&ndev->ctx_ida, NPU_NUM_CONTEXTS - 1, GFP_KERNEL);
	if (id < 0) {
		if (id == -ENOSPC)
			npu_dbg(ndev, DRV, "all %d contexts in use\n",
				NPU_NUM_CONTEXTS);
		ret = id == -ENOSPC ? -EBUSY : id;
		goto err_free;
	}

	kref_init(&ctx->ref);
	ctx->ndev = ndev;
	ctx->id = id;
	ctx->pid = task_tgid_nr(current);
	ctx->next_job_id = 1;
	mutex_init(&ctx->submit_lock);
	xa_init(&ctx->jobs);
	spin_lock_init(&ctx->rec_lock);
	init_waitqueue_head(&ctx->job_wq);
	INIT_LIST_HEAD(&ctx->node);

	ret = npu_mmu_ctx_init(ndev, &ctx->mmu);
	if (ret)
		goto err_ida;

	ret = npu_job_entities_init(ctx);
	if (ret)
		goto err_mmu;

	drm_dev_get(drm);
	WRITE_ONCE(ndev->ctx_table[id].pt_root,
		   cpu_to_le64(ctx->mmu.root.dma | NPU_CTX_VALID));
	wmb(); /* the entry is visible before any job names the context */

	mutex_lock(&ndev->ctx_lock);
	list_add_tail(&ctx->node, &ndev->contexts);
	mutex_unlock(&ndev->ctx_lock);
	atomic_inc(&ndev->ctx_count);

	file->driver_priv = ctx;
	drm_dev_exit(idx);
	npu_dbg(ndev, DRV, "context %d opened by pid %d\n", id, ctx->pid);
	return 0;

err_mmu:
	npu_mmu_ctx_fini(ndev, &ctx->mmu);
err_ida:
	ida_free(&ndev->ctx_ida, id);
err_free:
	mutex_destroy(&ctx->submit_lock);
	kfree(ctx);
err_exit:
	drm_dev_exit(idx);
	return ret;
}

static void npu_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct npu_context *ctx = file->driver_priv;
	struct npu_job_rec *rec;
	unsigned long id;

	/*
	 * Queued jobs are flushed or killed; running ones hold a reference.
	 * On the list until its release: an unbind in parallel finds the
	 * context and waits (submit_lock) rather than tear the schedulers
	 * down under this entity, and takes its page tables back.
	 */
	npu_job_entities_fini(ctx);

	xa_for_each(&ctx->jobs, id, rec)
		npu_job_rec_put(rec);
	xa_destroy(&ctx->jobs);

	file->driver_priv = NULL;
	npu_context_put(ctx);
}

static int npu_ioctl_get_param(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_context *ctx = file->driver_priv;
	struct drm_npu_get_param *args = data;
	int idx;

	if (args->pad)
		return -EINVAL;

	switch (args->param) {
	case DRM_NPU_PARAM_DEVICE_ID:
		args->value = ndev->pdev->device;
		break;
	case DRM_NPU_PARAM_HW_VERSION:
		args->value = ndev->hw_version;
		break;
	case DRM_NPU_PARAM_ISA_VERSION:
		args->value = ndev->isa_version;
		break;
	case DRM_NPU_PARAM_FW_VERSION:
		args->value = ndev->fw_version;
		break;
	case DRM_NPU_PARAM_CAPS:
		args->value = ndev->caps;
		break;
	case DRM_NPU_PARAM_OP_MASK:
		args->value = ndev->op_mask;
		break;
	case DRM_NPU_PARAM_NUM_QUEUES:
		args->value = NPU_NUM_QUEUES;
		break;
	case DRM_NPU_PARAM_MAC_SHAPE:
		args->value = ndev->mac_shape;
		break;
	case DRM_NPU_PARAM_SRAM_SIZE:
		args->value = ndev->sram_size;
		break;
	case DRM_NPU_PARAM_CLOCK_MHZ:
		args->value = ndev->clock_mhz;
		break;
	case DRM_NPU_PARAM_DMA_BYTES_PER_CYCLE:
		args->value = ndev->dma_bytes_per_cycle;
		break;
	case DRM_NPU_PARAM_VA_START:
		args->value = NPU_VA_START;
		break;
	case DRM_NPU_PARAM_VA_END:
		args->value = NPU_VA_END;
		break;
	case DRM_NPU_PARAM_CONTEXT_ID:
		args->value = ctx->id;
		break;
	case DRM_NPU_PARAM_RESET_COUNT:
		args->value = atomic_read(&ndev->reset_count);
		break;
	case DRM_NPU_PARAM_DEVICE_TIME_NS:
		if (!drm_dev_enter(drm, &idx))
			return -ENODEV;
		/* Not while a reset owns the device. */
		if (!npu_device_hw_enter(ndev)) {
			drm_dev_exit(idx);
			return -EBUSY;
		}
		args->value = npu_device_time_ns(ndev);
		npu_device_hw_exit(ndev);
		drm_dev_exit(idx);
		break;
	case DRM_NPU_PARAM_FEATURES:
		args->value = NPU_FEATURES;
		break;
	case DRM_NPU_PARAM_MAX_BO_REFS:
		args->value = DRM_NPU_MAX_BO_REFS;
		break;
	case DRM_NPU_PARAM_MAX_SYNCS:
		args->value = DRM_NPU_MAX_SYNCS;
		break;
	case DRM_NPU_PARAM_MAX_BO_REF_SIZE:
		args->value = NPU_MAX_BO_REF_SIZE;
		break;
	case DRM_NPU_PARAM_MAX_CMD_SIZE:
		args->value = NPU_CS_MAX_SIZE;
		break;
	case DRM_NPU_PARAM_MAX_QUEUED_JOBS:
		args->value = NPU_MAX_QUEUED_JOBS;
		break;
	case DRM_NPU_PARAM_MAX_CONTEXTS:
		args->value = NPU_NUM_CONTEXTS;
		break;
	case DRM_NPU_PARAM_JOB_HISTORY:
		args->value = NPU_JOB_HISTORY;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static void npu_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct npu_context *ctx = file->driver_priv;
	int q;

	drm_printf(p, "drm-client-context:\t%u\n", ctx->id);
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		drm_printf(p, "drm-engine-queue%d:\t%llu ns\n", q,
			   (u64)atomic64_read(&ctx->engine_ns[q]));
	drm_show_memory_stats(p, file);
}

#define NPU_IOCTL(n, func) \
	DRM_IOCTL_DEF_DRV(NPU_##n, npu_ioctl_##func, 0)

static const struct drm_ioctl_desc npu_ioctls[] = {
	NPU_IOCTL(GET_PARAM, get_param),
	NPU_IOCTL(BO_CREATE, bo_create),
	NPU_IOCTL(BO_INFO, bo_info),
	NPU_IOCTL(SUBMIT, submit),
	NPU_IOCTL(JOB_INFO, job_info),
	NPU_IOCTL(JOB_WAIT, job_wait),
};

/* DRM_ACCEL_FOPS plus the io_uring command entry point. */
static const struct file_operations npu_fops = {
	.owner		= THIS_MODULE,
	.open		= accel_open,
	.release	= drm_release,
	.unlocked_ioctl	= drm_ioctl,
	.compat_ioctl	= drm_compat_ioctl,
	.poll		= drm_poll,
	.read		= drm_read,
	.llseek		= noop_llseek,
	.mmap		= drm_gem_mmap,
	.show_fdinfo	= drm_show_fdinfo,
	.uring_cmd	= npu_uring_cmd,
	.fop_flags	= FOP_UNSIGNED_OFFSET,
};

static const struct drm_driver npu_drm_driver = {
	.driver_features	= DRIVER_GEM | DRIVER_COMPUTE_ACCEL |
				  DRIVER_SYNCOBJ | DRIVER_SYNCOBJ_TIMELINE,
	.open			= npu_open,
	.postclose		= npu_postclose,
	.gem_create_object	= npu_gem_create_object,
	.gem_prime_import	= npu_gem_prime_import,
	.gem_prime_import_sg_table = npu_gem_prime_import_sg_table,
	.show_fdinfo		= npu_show_fdinfo,
	.ioctls			= npu_ioctls,
	.num_ioctls		= ARRAY_SIZE(npu_ioctls),
	.fops			= &npu_fops,
	.name			= NPU_DRIVER_NAME,
	.desc			= NPU_DRIVER_DESC,
	.major			= 1,
	.minor			= 0,
};

static int npu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct npu_device *ndev;
	int ret;

	ndev = devm_drm_dev_alloc(&pdev->dev, &npu_drm_driver,
				  struct npu_device, drm);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);

	ndev->pdev = pdev;
	pci_set_drvdata(pdev, ndev);

	ret = npu_device_init(ndev);
	if (ret)
		return ret;

	ret = drm_dev_register(&ndev->drm, 0);
	if (ret) {
		npu_device_fini(ndev);
		return ret;
	}
	npu_debugfs_init(ndev);
	drm_info(&ndev->drm, "NPU hw %u.%u, firmware %u.%u (%s), %d queues\n",
		 ndev->hw_version >> 16, ndev->hw_version & 0xffff,
		 ndev->fw_version >> 16, ndev->fw_version & 0xffff,
		 ndev->fw_build_id, NPU_NUM_QUEUES);
	return 0;
}

static void npu_remove(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);

	/*
	 * New ioctls fail with -ENODEV; jobs in flight are failed, every job
	 * is freed and the schedulers torn down before this returns.
	 */
	drm_dev_unplug(&ndev->drm);
	npu_device_fini(ndev);
}

static void npu_shutdown(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return;
	npu_device_shutdown(ndev);
	drm_dev_exit(idx);
}

/*
 * PCI error recovery (AER) and PCI resets (FLR or bus reset, e.g. through
 * sysfs) take the path of timeout recovery without a guilty job: jobs
 * are stopped, the device re-booted, unfinished jobs run again.
 */
static pci_ers_result_t npu_pci_error_detected(struct pci_dev *pdev,
					       pci_channel_state_t state)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);

	drm_warn(&ndev->drm, "PCI error (channel state %d)\n", state);
	if (state == pci_channel_io_perm_failure)
		return PCI_ERS_RESULT_DISCONNECT;
	npu_device_reset_prepare(ndev);
	return PCI_ERS_RESULT_NEED_RESET;
}

static pci_ers_result_t npu_pci_slot_reset(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);

	pci_restore_state(pdev);
	pci_save_state(pdev);
	pci_set_master(pdev);
	/* Boot now; npu_pci_resume() lets the jobs run again. */
	if (npu_device_reset_restart(ndev)) {
		/* No resume follows: the jobs fail (-EIO) instead of waiting. */
		npu_device_reset_resume(ndev);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	return PCI_ERS_RESULT_RECOVERED;
}

static void npu_pci_resume(struct pci_dev *pdev)
{
	npu_device_reset_resume(pci_get_drvdata(pdev));
}

static void npu_pci_reset_prepare(struct pci_dev *pdev)
{
	npu_device_reset_prepare(pci_get_drvdata(pdev));
}

static void npu_pci_reset_done(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);

	/*
	 * The PCI core restored the config space. Reset once more through
	 * CTRL: it completes only when the device's DMA has stopped.
	 */
	npu_device_reset_restart(ndev);
	npu_device_reset_resume(ndev);
}

static const struct pci_error_handlers npu_pci_err_handlers = {
	.error_detected	= npu_pci_error_detected,
	.slot_reset	= npu_pci_slot_reset,
	.resume		= npu_pci_resume,
	.reset_prepare	= npu_pci_reset_prepare,
	.reset_done	= npu_pci_reset_done,
};

static const struct pci_device_id npu_pci_ids[] = {
	{ PCI_DEVICE(NPU_PCI_VENDOR_ID, NPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, npu_pci_ids);

static struct pci_driver npu_pci_driver = {
	.name		= KBUILD_MODNAME,
	.id_table	= npu_pci_ids,
	.probe		= npu_probe,
	.remove		= npu_remove,
	.shutdown	= npu_shutdown,
	.err_handler	= &npu_pci_err_handlers,
};
module_pci_driver(npu_pci_driver);

MODULE_DESCRIPTION(NPU_DRIVER_DESC);
MODULE_LICENSE("GPL");
MODULE_FIRMWARE(NPU_FW_NAME);
MODULE_IMPORT_NS(DMA_BUF);
