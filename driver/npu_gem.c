// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects: drm_gem_shmem, mapped into the device VA space of every
 * context that holds a handle (created or PRIME-imported), unmapped when
 * the last handle of that context goes.
 */

#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_vma_manager.h>

#include "npu_drv.h"
#include "npu_gem.h"

static struct npu_bo_map *npu_bo_find_map(struct npu_bo *bo,
					  struct npu_context *ctx)
{
	struct npu_bo_map *map;

	list_for_each_entry(map, &bo->maps, node)
		if (map->ctx == ctx)
			return map;
	return NULL;
}

static int npu_gem_open(struct drm_gem_object *obj, struct drm_file *file)
{
	/* The file's VA space, created by its first handle. */
	struct npu_context *ctx = npu_file_ctx(file);
	struct npu_device *ndev = to_npu_device(obj->dev);
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;
	struct sg_table *sgt;
	int ret, idx;

	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	/* Unbind takes every DMA mapping back: none may appear after it. */
	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;

	mutex_lock(&bo->lock);
	map = npu_bo_find_map(bo, ctx);
	if (map) {
		map->users++;
		ret = 0;
		goto err_unlock;
	}

	map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
	if (!map) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	map->ctx = ctx;
	map->bo = bo;
	map->users = 1;
	map->prot = bo->flags & DRM_NPU_BO_DEVICE_READ_ONLY ?
		    NPU_PTE_READ : NPU_PTE_READ | NPU_PTE_WRITE;

	/* VA first: a BO that does not fit never gets its pages pinned. */
	mutex_lock(&ctx->mmu.lock);
	ret = drm_mm_insert_node_generic(&ctx->mmu.mm, &map->va, obj->size,
					 NPU_PAGE_SIZE, 0, DRM_MM_INSERT_BEST);
	if (!ret)
		list_add_tail(&map->ctx_node, &ctx->mmu.maps);
	mutex_unlock(&ctx->mmu.lock);
	if (ret) {
		npu_dbg(ndev, GEM, "ctx %u: no VA for %zu bytes: %d\n",
			ctx->id, obj->size, ret);
		goto err_free;
	}

	/* Pins the pages (or takes the importer's sg table) until free. */
	sgt = drm_gem_shmem_get_pages_sgt(&bo->base);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_remove;
	}

	ret = npu_mmu_map(ndev, &ctx->mmu, map->va.start, sgt, obj->size,
			  map->prot);
	if (ret)
		goto err_remove;

	list_add_tail(&map->node, &bo->maps);
	mutex_unlock(&bo->lock);
	drm_dev_exit(idx);
	npu_dbg(ndev, GEM, "ctx %u: bo %p (%zu bytes) at %#llx\n", ctx->id,
		bo, obj->size, map->va.start);
	return 0;

err_remove:
	mutex_lock(&ctx->mmu.lock);
	list_del(&map->ctx_node);
	drm_mm_remove_node(&map->va);
	mutex_unlock(&ctx->mmu.lock);
err_free:
	kfree(map);
err_unlock:
	mutex_unlock(&bo->lock);
	drm_dev_exit(idx);
	return ret;
}

/*
 * Drop one user (a handle or a job) of @obj's mapping in @ctx; the last
 * one unmaps. Jobs hold their BOs' mappings, so a handle closed (or a
 * file released) with jobs still queued does not pull pages from under
 * them.
 */
void npu_bo_map_put(struct drm_gem_object *obj, struct npu_context *ctx)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;

	mutex_lock(&bo->lock);
	map = npu_bo_find_map(bo, ctx);
	if (!map || --map->users) {
		mutex_unlock(&bo->lock);
		return;
	}
	list_del(&map->node);
	mutex_unlock(&bo->lock);

	/* PTEs cleared and TLB invalidated before the pages can go. */
	npu_mmu_unmap(ctx->ndev, &ctx->mmu, map->va.start, obj->size);
	mutex_lock(&ctx->mmu.lock);
	list_del(&map->ctx_node);
	drm_mm_remove_node(&map->va);
	mutex_unlock(&ctx->mmu.lock);
	kfree(map);
}

static void npu_gem_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct npu_context *ctx = npu_file_ctx_peek(file);

	/* A handle exists only once npu_gem_open() made the VA space. */
	if (ctx)
		npu_bo_map_put(obj, ctx);
}

/* Take a user of @obj's mapping in @ctx (see npu_bo_map_put()). */
int npu_bo_map_get(struct drm_gem_object *obj, struct npu_context *ctx,
		   u64 *va)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;
	int ret = -ENOENT;

	mutex_lock(&bo->lock);
	map = npu_bo_find_map(bo, ctx);
	if (map) {
		map->users++;
		*va = map->va.start;
		ret = 0;
	}
	mutex_unlock(&bo->lock);
	return ret;
}

/* A new BO (created or imported) joins the device's list. */
static void npu_bo_register(struct npu_device *ndev, struct npu_bo *bo)
{
	atomic_inc(&ndev->bo_count);
	spin_lock(&ndev->bo_list_lock);
	list_add_tail(&bo->dev_node, &ndev->bo_list);
	spin_unlock(&ndev->bo_list_lock);
}

/*
 * Undo the DMA mapping of @bo's pages for the device (or the importer's
 * attachment mapping); the pages themselves stay with the shmem helper
 * until the BO is freed.
 */
static void npu_bo_dma_unmap(struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	struct dma_resv *resv = bo->attach ? bo->attach->dmabuf->resv : obj->resv;
	struct sg_table *sgt;

	dma_resv_lock(resv, NULL);
	sgt = bo->base.sgt;
	bo->base.sgt = NULL;
	if (sgt && bo->attach) {
		dma_buf_unmap_attachment(bo->attach, sgt, DMA_BIDIRECTIONAL);
	} else if (sgt) {
		dma_unmap_sgtable(obj->dev->dev, sgt, DMA_BIDIRECTIONAL, 0);
		sg_free_table(sgt);
		kfree(sgt);
	}
	dma_resv_unlock(resv);
}

/*
 * Unbind, with the device stopped: BOs that outlive the driver (held by
 * open files, mmaps or dma-bufs) give their DMA mappings back now, as
 * the DMA API requires of a driver that lets go of its device. A BO
 * being freed meanwhile does it itself (npu_gem_free()) before it leaves
 * the list, so the loop waits for it.
 */
void npu_gem_unbind_all(struct npu_device *ndev)
{
	LIST_HEAD(done);
	struct npu_bo *bo;

	spin_lock(&ndev->bo_list_lock);
	while (!list_empty(&ndev->bo_list)) {
		bo = list_first_entry(&ndev->bo_list, struct npu_bo, dev_node);
		if (!kref_get_unless_zero(&bo->base.base.refcount)) {
			spin_unlock(&ndev->bo_list_lock);
			usleep_range(50, 200);
			spin_lock(&ndev->bo_list_lock);
			continue;
		}
		list_move_tail(&bo->dev_node, &done);
		spin_unlock(&ndev->bo_list_lock);

		npu_bo_dma_unmap(bo);
		drm_gem_object_put(&bo->base.base);

		spin_lock(&ndev->bo_list_lock);
	}
	list_splice(&done, &ndev->bo_list);
	spin_unlock(&ndev->bo_list_lock);
}

static void npu_gem_free(struct drm_gem_object *obj)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_device *ndev = to_npu_device(obj->dev);

	drm_WARN_ON(obj->dev, !list_empty(&bo->maps));
	/* Before it leaves the list: see npu_gem_unbind_all(). */
	npu_bo_dma_unmap(bo);
	spin_lock(&ndev->bo_list_lock);
	list_del_init(&bo->dev_node);
	spin_unlock(&ndev->bo_list_lock);
	mutex_destroy(&bo->lock);
	atomic_dec(&ndev->bo_count);
	drm_gem_shmem_free(&bo->base);
}

static enum drm_gem_object_status npu_gem_status(struct drm_gem_object *obj)
{
	struct npu_bo *bo = to_npu_bo(obj);

	if (bo->base.pages || obj->import_attach)
		return DRM_GEM_OBJECT_RESIDENT;
	return 0;
}

static const struct drm_gem_object_funcs npu_gem_funcs = {
	.free = npu_gem_free,
	.open = npu_gem_open,
	.close = npu_gem_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.status = npu_gem_status,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

struct drm_gem_object *npu_gem_create_object(struct drm_device *drm,
					     size_t size)
{
	struct npu_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->base.base.funcs = &npu_gem_funcs;
	mutex_init(&bo->lock);
	INIT_LIST_HEAD(&bo->maps);
	INIT_LIST_HEAD(&bo->dev_node);
	/*
	 * Not counted or listed here: when the shmem helper fails after
	 * this hook (shmem file, mmap offset) it kfree()s the object
	 * without .free. The creators register it once it exists.
	 */
	return &bo->base.base;
}

struct drm_gem_object *
npu_gem_prime_import_sg_table(struct drm_device *drm,
			      struct dma_buf_attachment *attach,
			      struct sg_table *sgt)
{
	struct drm_gem_object *obj;
	int idx;

	/* After unbind the core undoes the attachment's mapping. */
	if (!drm_dev_enter(drm, &idx))
		return ERR_PTR(-ENODEV);
	obj = drm_gem_shmem_prime_import_sg_table(drm, attach, sgt);
	if (!IS_ERR(obj)) {
		to_npu_bo(obj)->attach = attach;
		npu_bo_register(to_npu_device(drm), to_npu_bo(obj));
	}
	drm_dev_exit(idx);
	return obj;
}

/* The device VA of @obj in @ctx. */
int npu_bo_va(struct drm_gem_object *obj, struct npu_context *ctx, u64 *va)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;
	int ret = -ENOENT;

	mutex_lock(&bo->lock);
	map = npu_bo_find_map(bo, ctx);
	if (map) {
		*va = map->va.start;
		ret = 0;
	}
	mutex_unlock(&bo->lock);
	return ret;
}

int npu_ioctl_bo_create(struct drm_device *drm, void *data,
			struct drm_file *file)
{
	struct drm_npu_bo_create *args = data;
	struct npu_context *ctx;
	struct drm_gem_shmem_object *shmem;
	u32 handle;
	int ret;

	if (args->flags & ~DRM_NPU_BO_FLAGS)
		return -EINVAL;
	if (!args->size)
		return -EINVAL;
	if (args->size > NPU_VA_END - NPU_VA_START)
		return -ENOSPC;
	ctx = npu_file_ctx(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);

	shmem = drm_gem_shmem_create(drm, PAGE_ALIGN(args->size));
	if (IS_ERR(shmem))
		return PTR_ERR(shmem);
	npu_bo_register(to_npu_device(drm), to_npu_bo(&shmem->base));
	to_npu_bo(&shmem->base)->flags = args->flags;

	/* Maps it into this context through npu_gem_open(). */
	ret = drm_gem_handle_create(file, &shmem->base, &handle);
	if (!ret)
		ret = npu_bo_va(&shmem->base, ctx, &args->va);
	drm_gem_object_put(&shmem->base);
	if (ret)
		return ret;

	args->handle = handle;
	return 0;
}

int npu_ioctl_bo_info(struct drm_device *drm, void *data,
		      struct drm_file *file)
{
	struct npu_context *ctx = npu_file_ctx_peek(file);
	struct drm_npu_bo_info *args = data;
	struct drm_gem_object *obj;
	int ret;

	if (args->flags)
		return -EINVAL;
	if (!ctx)
		return -ENOENT;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;

	ret = drm_gem_create_mmap_offset(obj);
	if (ret)
		goto out;
	ret = npu_bo_va(obj, ctx, &args->va);
	if (ret)
		goto out;
	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	args->size = obj->size;
out:
	drm_gem_object_put(obj);
	return ret;
}

void npu_gem_print_ctx(struct seq_file *m, struct npu_context *ctx)
{
	struct npu_bo_map *map;

	mutex_lock(&ctx->mmu.lock);
	list_for_each_entry(map, &ctx->mmu.maps, ctx_node)
		seq_printf(m, "    bo va %#llx size %#llx %s%s\n",
			   map->va.start, map->va.size,
			   map->prot & NPU_PTE_WRITE ? "rw" : "ro",
			   map->bo->base.base.import_attach ? " imported" : "");
	mutex_unlock(&ctx->mmu.lock);
}
