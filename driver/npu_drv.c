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

/*
 * The uAPI header is self-contained: its job statuses, CAPS and OP_MASK
 * bits restate the hardware contract's, which the device reports as is.
 */
#define NPU_SAME(uapi, hw) \
	static_assert((u64)(uapi) == (u64)(hw), #uapi " != " #hw)
NPU_SAME(DRM_NPU_JOB_STATUS_OK, NPU_JOB_OK);
NPU_SAME(DRM_NPU_JOB_STATUS_BAD_DESC, NPU_JOB_ERR_BAD_DESC);
NPU_SAME(DRM_NPU_JOB_STATUS_BAD_CONTEXT, NPU_JOB_ERR_BAD_CONTEXT);
NPU_SAME(DRM_NPU_JOB_STATUS_BAD_HEADER, NPU_JOB_ERR_BAD_HEADER);
NPU_SAME(DRM_NPU_JOB_STATUS_TRUNCATED, NPU_JOB_ERR_TRUNCATED);
NPU_SAME(DRM_NPU_JOB_STATUS_BAD_OPCODE, NPU_JOB_ERR_BAD_OPCODE);
NPU_SAME(DRM_NPU_JOB_STATUS_BAD_ENCODING, NPU_JOB_ERR_BAD_ENCODING);
NPU_SAME(DRM_NPU_JOB_STATUS_BAD_PARAM, NPU_JOB_ERR_BAD_PARAM);
NPU_SAME(DRM_NPU_JOB_STATUS_SRAM_BOUNDS, NPU_JOB_ERR_SRAM_BOUNDS);
NPU_SAME(DRM_NPU_JOB_STATUS_MMU_UNMAPPED, NPU_JOB_ERR_MMU_UNMAPPED);
NPU_SAME(DRM_NPU_JOB_STATUS_MMU_PERM, NPU_JOB_ERR_MMU_PERM);
NPU_SAME(DRM_NPU_JOB_STATUS_DMA, NPU_JOB_ERR_DMA);
NPU_SAME(DRM_NPU_JOB_STATUS_WATCHDOG, NPU_JOB_ERR_WATCHDOG);
NPU_SAME(DRM_NPU_JOB_STATUS_HAZARD, NPU_JOB_ERR_HAZARD);
NPU_SAME(DRM_NPU_JOB_STATUS_ABORTED, NPU_JOB_ERR_ABORTED);
NPU_SAME(DRM_NPU_JOB_STATUS_ABORTED + 1, NPU_JOB_STATUS_COUNT);
NPU_SAME(DRM_NPU_CAP_INT8, NPU_CAP_INT8);
NPU_SAME(DRM_NPU_CAP_INT32_BIAS, NPU_CAP_INT32_BIAS);
NPU_SAME(DRM_NPU_CAP_PER_CHANNEL_QUANT, NPU_CAP_PER_CHANNEL_QUANT);
NPU_SAME(DRM_NPU_CAP_DEPTHWISE, NPU_CAP_DEPTHWISE);
NPU_SAME(DRM_NPU_CAP_DILATION, NPU_CAP_DILATION);
NPU_SAME(DRM_NPU_CAP_MMU, NPU_CAP_MMU);
NPU_SAME(DRM_NPU_CAP_WATCHDOG, NPU_CAP_WATCHDOG);
NPU_SAME(DRM_NPU_CAP_TIMESTAMP, NPU_CAP_TIMESTAMP);
NPU_SAME(DRM_NPU_CAP_ZERO_INSERT, NPU_CAP_ZERO_INSERT);
NPU_SAME(DRM_NPU_CAP_RESIZE, NPU_CAP_RESIZE);
NPU_SAME(DRM_NPU_CAP_INT16, NPU_CAP_INT16);
NPU_SAME(DRM_NPU_CAP_OUT_LUT, NPU_CAP_OUT_LUT);
NPU_SAME(DRM_NPU_CAP_ARRAY_MODES, NPU_CAP_ARRAY_MODES);
NPU_SAME(DRM_NPU_CAP_SPARSE, NPU_CAP_SPARSE);
NPU_SAME(DRM_NPU_OP_NOP, NPU_OP_NOP);
NPU_SAME(DRM_NPU_OP_DMA_COPY, NPU_OP_DMA_COPY);
NPU_SAME(DRM_NPU_OP_DMA_FILL, NPU_OP_DMA_FILL);
NPU_SAME(DRM_NPU_OP_CONV2D, NPU_OP_CONV2D);
NPU_SAME(DRM_NPU_OP_MATMUL, NPU_OP_MATMUL);
NPU_SAME(DRM_NPU_OP_POOL, NPU_OP_POOL);
NPU_SAME(DRM_NPU_OP_ELTWISE, NPU_OP_ELTWISE);
NPU_SAME(DRM_NPU_OP_LUT, NPU_OP_LUT);
NPU_SAME(DRM_NPU_OP_RESIZE, NPU_OP_RESIZE);
NPU_SAME(DRM_NPU_OP_TIMESTAMP, NPU_OP_TIMESTAMP);
NPU_SAME(DRM_NPU_OP_BARRIER, NPU_OP_BARRIER);
NPU_SAME(DRM_NPU_OP_SOFTMAX, NPU_OP_SOFTMAX);
NPU_SAME(DRM_NPU_OP_LAYERNORM, NPU_OP_LAYERNORM);
NPU_SAME(DRM_NPU_OP_REDUCE, NPU_OP_REDUCE);
/* Every opcode the contract knows is one the header names. */
NPU_SAME(DRM_NPU_OP_BIT(DRM_NPU_OP_NOP) | DRM_NPU_OP_BIT(DRM_NPU_OP_DMA_COPY) |
	 DRM_NPU_OP_BIT(DRM_NPU_OP_DMA_FILL) | DRM_NPU_OP_BIT(DRM_NPU_OP_CONV2D) |
	 DRM_NPU_OP_BIT(DRM_NPU_OP_MATMUL) | DRM_NPU_OP_BIT(DRM_NPU_OP_POOL) |
	 DRM_NPU_OP_BIT(DRM_NPU_OP_ELTWISE) | DRM_NPU_OP_BIT(DRM_NPU_OP_LUT) |
	 DRM_NPU_OP_BIT(DRM_NPU_OP_RESIZE) | DRM_NPU_OP_BIT(DRM_NPU_OP_TIMESTAMP) |
	 DRM_NPU_OP_BIT(DRM_NPU_OP_BARRIER) | DRM_NPU_OP_BIT(DRM_NPU_OP_SOFTMAX) |
	 DRM_NPU_OP_BIT(DRM_NPU_OP_LAYERNORM) | DRM_NPU_OP_BIT(DRM_NPU_OP_REDUCE),
	 NPU_OP_MASK_ALL);

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

unsigned int npu_max_vms_per_user = 16;
module_param_named(max_vms_per_user, npu_max_vms_per_user, uint, 0644);
MODULE_PARM_DESC(max_vms_per_user, "VA spaces (hardware contexts) one user may hold; 0: no limit; CAP_SYS_ADMIN is exempt");

struct npu_context *npu_context_get(struct npu_context *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

/* ctx_lock held. */
static int npu_vm_user_charge(struct npu_device *ndev, struct npu_context *ctx)
{
	unsigned long uid = from_kuid(&init_user_ns, ctx->uid);
	unsigned long held;
	int ret;

	if (!npu_max_vms_per_user || capable(CAP_SYS_ADMIN))
		return 0;
	held = xa_to_value(xa_load(&ndev->vm_users, uid) ?: xa_mk_value(0));
	if (held >= npu_max_vms_per_user) {
		npu_dbg(ndev, DRV, "uid %lu holds %lu VA spaces already\n",
			uid, held);
		return -EMFILE;
	}
	ret = xa_err(xa_store(&ndev->vm_users, uid, xa_mk_value(held + 1),
			      GFP_KERNEL));
	ctx->uid_charged = !ret;
	return ret;
}

/* ctx_lock held. */
static void npu_vm_user_uncharge(struct npu_device *ndev,
				 struct npu_context *ctx)
{
	unsigned long uid = from_kuid(&init_user_ns, ctx->uid);
	unsigned long held;

	if (!ctx->uid_charged)
		return;
	held = xa_to_value(xa_load(&ndev->vm_users, uid) ?: xa_mk_value(1));
	if (held <= 1)
		xa_erase(&ndev->vm_users, uid);
	else
		xa_store(&ndev->vm_users, uid, xa_mk_value(held - 1),
			 GFP_KERNEL | __GFP_NOFAIL);
	ctx->uid_charged = false;
}

static void npu_context_release(struct kref *ref)
{
	struct npu_context *ctx = container_of(ref, struct npu_context, ref);
	struct npu_device *ndev = ctx->ndev;
	u32 i;
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
	npu_vm_user_uncharge(ndev, ctx);
	mutex_unlock(&ndev->ctx_lock);
	ida_free(&ndev->ctx_ida, ctx->id);
	atomic_dec(&ndev->ctx_count);
	npu_dbg(ndev, DRV, "context %u released\n", ctx->id);
	for (i = 0; i < NPU_JOB_HISTORY; i++)
		if (ctx->recs[i])
			npu_job_rec_put(ctx->recs[i]);
	kvfree(ctx->recs);
	xa_destroy(&ctx->exec_ctxs);
	mutex_destroy(&ctx->exec_lock);
	mutex_destroy(&ctx->submit_lock);
	kfree(ctx);
	drm_dev_put(&ndev->drm);
}

void npu_context_put(struct npu_context *ctx)
{
	kref_put(&ctx->ref, npu_context_release);
}

/*
 * A VA space for @nfile: one of the device's NPU_NUM_CONTEXTS hardware
 * contexts (-EBUSY when all are in use) within the owner's
 * max_vms_per_user (-EMFILE).
 */
static struct npu_context *npu_context_create(struct npu_file *nfile)
{
	struct npu_device *ndev = nfile->ndev;
	struct npu_context *ctx;
	int ret, id, idx;

	/* Page tables and the context table entry: not after unbind. */
	if (!drm_dev_enter(&ndev->drm, &idx))
		return ERR_PTR(-ENODEV);

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx) {
		ret = -ENOMEM;
		goto err_exit;
	}
	ctx->recs = kvcalloc(NPU_JOB_HISTORY, sizeof(*ctx->recs),
			     GFP_KERNEL_ACCOUNT);
	if (!ctx->recs) {
		ret = -ENOMEM;
		goto err_free;
	}

	/* The device has NPU_NUM_CONTEXTS: one more is -EBUSY (uAPI). */
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
	ctx->uid = current_euid();
	ctx->next_job_id = 1;
	mutex_init(&ctx->submit_lock);
	mutex_init(&ctx->exec_lock);
	xa_init_flags(&ctx->exec_ctxs, XA_FLAGS_ALLOC1);
	spin_lock_init(&ctx->rec_lock);
	init_waitqueue_head(&ctx->job_wq);
	INIT_LIST_HEAD(&ctx->node);

	ret = npu_mmu_ctx_init(ndev, &ctx->mmu);
	if (ret)
		goto err_ida;

	mutex_lock(&ndev->ctx_lock);
	ret = npu_vm_user_charge(ndev, ctx);
	if (ret) {
		mutex_unlock(&ndev->ctx_lock);
		goto err_mmu;
	}
	drm_dev_get(&ndev->drm);
	WRITE_ONCE(ndev->ctx_table[id].pt_root,
		   cpu_to_le64(ctx->mmu.root.dma | NPU_CTX_VALID));
	wmb(); /* the entry is visible before any job names the context */
	list_add_tail(&ctx->node, &ndev->contexts);
	mutex_unlock(&ndev->ctx_lock);
	atomic_inc(&ndev->ctx_count);

	drm_dev_exit(idx);
	npu_dbg(ndev, DRV, "context %d created by pid %d\n", id, ctx->pid);
	return ctx;

err_mmu:
	npu_mmu_ctx_fini(ndev, &ctx->mmu);
err_ida:
	mutex_destroy(&ctx->exec_lock);
	mutex_destroy(&ctx->submit_lock);
	ida_free(&ndev->ctx_ida, id);
err_free:
	kvfree(ctx->recs);
	kfree(ctx);
err_exit:
	drm_dev_exit(idx);
	return ERR_PTR(ret);
}

/* @file's VA space, created at its first need; ERR_PTR if it cannot be. */
struct npu_context *npu_file_ctx(struct drm_file *file)
{
	struct npu_file *nfile = to_npu_file(file);
	struct npu_context *ctx;

	/* Pairs with the smp_store_release() below: a published ctx is whole. */
	ctx = smp_load_acquire(&nfile->ctx);
	if (ctx)
		return ctx;
	mutex_lock(&nfile->lock);
	ctx = nfile->ctx;
	if (ctx)
		goto out;
	ctx = npu_context_create(nfile);
	if (IS_ERR(ctx))
		goto out;
	/* Pairs with the lockless smp_load_acquire()s. */
	smp_store_release(&nfile->ctx, ctx);
out:
	mutex_unlock(&nfile->lock);
	return ctx;
}

/* @file's VA space if it has one, else NULL. */
struct npu_context *npu_file_ctx_peek(struct drm_file *file)
{
	/* Pairs with the smp_store_release() in npu_file_ctx(). */
	return smp_load_acquire(&to_npu_file(file)->ctx);
}

static int npu_open(struct drm_device *drm, struct drm_file *file)
{
	struct npu_file *nfile;

	nfile = kzalloc(sizeof(*nfile), GFP_KERNEL_ACCOUNT);
	if (!nfile)
		return -ENOMEM;
	nfile->ndev = to_npu_device(drm);
	mutex_init(&nfile->lock);
	file->driver_priv = nfile;
	return 0;
}

static void npu_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct npu_file *nfile = to_npu_file(file);
	struct npu_context *ctx = nfile->ctx;

	/*
	 * Queued jobs are flushed or killed; running ones hold a reference.
	 * On the list until its release: an unbind in parallel finds the
	 * context and waits (exec_lock) rather than tear the schedulers
	 * down under its entities, and takes its page tables back.
	 */
	if (ctx) {
		npu_job_entities_fini(ctx);
		npu_context_put(ctx);
	}
	file->driver_priv = NULL;
	mutex_destroy(&nfile->lock);
	kfree(nfile);
}

static int npu_ioctl_get_param(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_get_param *args = data;
	struct npu_context *ctx;
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
	case DRM_NPU_PARAM_VM_ID:
		ctx = npu_file_ctx(file);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
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
	case DRM_NPU_PARAM_MAX_VMS:
		args->value = NPU_NUM_CONTEXTS;
		break;
	case DRM_NPU_PARAM_JOB_HISTORY:
		args->value = NPU_JOB_HISTORY;
		break;
	case DRM_NPU_PARAM_MAX_VMS_PER_USER:
		args->value = READ_ONCE(npu_max_vms_per_user);
		break;
	case DRM_NPU_PARAM_MAX_FILE_CONTEXTS:
		args->value = NPU_MAX_FILE_CONTEXTS;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/*
 * Documentation/gpu/drm-usage-stats.rst: the DRM core prints drm-driver,
 * drm-pdev and drm-client-id; the engines are the hardware queues
 * (queue0, queue1), busy time and modeled cycles at a fixed clock; the
 * memory keys come from drm_show_memory_stats(). Keys of the driver's own
 * start with "npu-".
 */
static void npu_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(file->minor->dev);
	struct npu_context *ctx = npu_file_ctx_peek(file);
	int q;

	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		drm_printf(p, "drm-engine-queue%d:\t%llu ns\n", q,
			   ctx ? (u64)atomic64_read(&ctx->engine_ns[q]) : 0);
		drm_printf(p, "drm-cycles-queue%d:\t%llu\n", q,
			   ctx ? (u64)atomic64_read(&ctx->cycles[q]) : 0);
		drm_printf(p, "drm-maxfreq-queue%d:\t%u MHz\n", q,
			   ndev->clock_mhz);
	}
	drm_show_memory_stats(p, file);
	/* The file's VA space: its hardware context, or none yet. */
	if (ctx)
		drm_printf(p, "npu-vm-id:\t%u\n", ctx->id);
	else
		drm_printf(p, "npu-vm-id:\tnone\n");
	drm_printf(p, "npu-contexts:\t%u\n",
		   ctx ? npu_exec_ctx_count(ctx) : 0);
}

#define NPU_IOCTL(n, func) \
	DRM_IOCTL_DEF_DRV(NPU_##n, npu_ioctl_##func, 0)

static const struct drm_ioctl_desc npu_ioctls[] = {
	NPU_IOCTL(GET_PARAM, get_param),
	NPU_IOCTL(BO_CREATE, bo_create),
	NPU_IOCTL(BO_INFO, bo_info),
	/* 0x03 and 0x04 (version 1 SUBMIT, JOB_INFO): -EINVAL. */
	NPU_IOCTL(JOB_WAIT, job_wait),
	NPU_IOCTL(SUBMIT, submit),
	NPU_IOCTL(JOB_INFO, job_info),
	NPU_IOCTL(CONTEXT_CREATE, context_create),
	NPU_IOCTL(CONTEXT_DESTROY, context_destroy),
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
	.major			= DRM_NPU_ABI_MAJOR,
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
	xa_init(&ndev->vm_users);
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

static int __init npu_init(void)
{
	int ret;

	ret = npu_gem_module_init();
	if (ret)
		return ret;
	ret = pci_register_driver(&npu_pci_driver);
	if (ret)
		npu_gem_module_exit();
	return ret;
}
module_init(npu_init);

/* Every BO is gone: each holds its device, open files and dma-bufs the module. */
static void __exit npu_exit(void)
{
	pci_unregister_driver(&npu_pci_driver);
	npu_gem_module_exit();
}
module_exit(npu_exit);

MODULE_DESCRIPTION(NPU_DRIVER_DESC);
MODULE_LICENSE("GPL");
MODULE_FIRMWARE(NPU_FW_NAME);
MODULE_IMPORT_NS(DMA_BUF);
