// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects: drm_gem_shmem, mapped into the device VA space of every
 * context that holds a handle (created or PRIME-imported), unmapped when
 * the last handle of that context goes.
 */

#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/fs.h>
#include <linux/list_lru.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>

#include "npu_drv.h"
#include "npu_gem.h"

/* BOs, accounted to the allocating cgroup (see "Reclaim" below). */
static struct kmem_cache *npu_bo_cache;

int __init npu_gem_module_init(void)
{
	npu_bo_cache = KMEM_CACHE(npu_bo, SLAB_ACCOUNT);
	return npu_bo_cache ? 0 : -ENOMEM;
}

void npu_gem_module_exit(void)
{
	kmem_cache_destroy(npu_bo_cache);
}

static struct npu_bo_map *npu_bo_find_map(struct npu_bo *bo,
					  struct npu_context *ctx)
{
	struct npu_bo_map *map;

	list_for_each_entry(map, &bo->maps, node)
		if (map->ctx == ctx)
			return map;
	return NULL;
}

/*
 * Reclaim. A BO's pages are pinned, DMA-mapped and in the page tables of
 * every context that holds it ("resident") from its first mapping on.
 * The shrinker evicts a BO no job holds (job_users), nobody else pins
 * (vmap, a dma-buf attachment: pages_use_count above our one) and whose
 * fences have all signaled: its entries are cleared in every context and
 * the TLBs invalidated, the CPU's mappings zapped, the sg table unmapped
 * and the pages unpinned (marked dirty, so shmem writes them to swap).
 * It comes back, at the same VAs, when a job that lists it is submitted,
 * when a context maps it, or on a CPU fault (npu_bo_restore()).
 *
 * A resident BO sits in the device's list_lru (bo_lru), in the list of
 * the memory cgroup that allocated it: the shrinker is memcg-aware, so a
 * cgroup at its memory.max evicts its own idle BOs (reclaim of a child
 * cgroup calls only memcg-aware shrinkers). The BO comes from a kmem
 * cache through kmem_cache_alloc_lru(), which gives bo_lru a list for
 * the allocating cgroup: its shmem pages are charged to that cgroup too,
 * as the creating process pins them first.
 */
static void npu_bo_count_resident(struct npu_device *ndev, struct npu_bo *bo,
				  bool resident)
{
	s64 pages = bo->base.base.size >> PAGE_SHIFT;

	if (bo->resident_counted == resident)
		return;
	bo->resident_counted = resident;
	atomic64_add(resident ? pages : -pages, &ndev->pages_resident);
	if (resident)
		list_lru_add_obj(&ndev->bo_lru, &bo->lru_node);
	else
		list_lru_del_obj(&ndev->bo_lru, &bo->lru_node);
}

/* Drop the sg table and our pin of the pages; resv held. */
static void npu_bo_put_sgt(struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	struct sg_table *sgt = bo->base.sgt;

	dma_resv_assert_held(obj->resv);
	bo->base.sgt = NULL;
	dma_unmap_sgtable(obj->dev->dev, sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(sgt);
	kfree(sgt);
	drm_gem_shmem_put_pages(&bo->base);
	npu_bo_count_resident(to_npu_device(obj->dev), bo, false);
}

/* Make an evicted BO resident again; bo->lock held. */
static int npu_bo_restore(struct npu_device *ndev, struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	struct npu_bo_map *map, *done;
	struct sg_table *sgt;
	int ret = 0, idx;

	lockdep_assert_held(&bo->lock);
	if (!bo->evicted)
		return 0;
	/* No DMA mapping for a device that is gone. */
	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	sgt = drm_gem_shmem_get_pages_sgt(&bo->base);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto out;
	}
	npu_bo_count_resident(ndev, bo, true);
	list_for_each_entry(map, &bo->maps, node) {
		ret = npu_mmu_map(ndev, &map->ctx->mmu, map->va.start, sgt,
				  obj->size, map->prot);
		if (ret)
			break;
	}
	if (ret) {
		list_for_each_entry(done, &bo->maps, node) {
			if (done == map)
				break;
			npu_mmu_unmap(ndev, &done->ctx->mmu, done->va.start,
				      obj->size);
		}
		dma_resv_lock(obj->resv, NULL);
		npu_bo_put_sgt(bo);
		dma_resv_unlock(obj->resv);
		goto out;
	}
	bo->evicted = false;
	atomic64_inc(&ndev->bos_restored);
	npu_dbg(ndev, GEM, "bo %p restored\n", bo);
out:
	drm_dev_exit(idx);
	return ret;
}

static bool npu_bo_evictable(struct npu_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;

	return !bo->evicted && !bo->attach && !bo->dmabuf &&
	       !shmem->base.import_attach && shmem->sgt &&
	       !bo->job_users && shmem->pages_use_count == 1 &&
	       dma_resv_test_signaled(shmem->base.resv,
				      DMA_RESV_USAGE_BOOKKEEP);
}

/*
 * Evict @bo (see above); bo->lock and its reservation held, inside
 * drm_dev_enter(). The page tables' locks are only tried: a context
 * allocates page tables under its lock, and that allocation may be what
 * reclaim runs for. So is the device: the TLB invalidation needs it out
 * of reset, and a reset may be what allocates memory now. reset_lock
 * covers the device's side only: it is taken inside the fence-signalling
 * section, so the CPU mappings' zap (i_mmap_rwsem, held across MMU
 * notifiers that wait for fences) comes after it (lockdep, debug kernel).
 */
static bool npu_bo_evict(struct npu_device *ndev, struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	struct npu_bo_map *map, *locked;

	if (!npu_device_hw_tryenter(ndev))
		return false;
	list_for_each_entry(map, &bo->maps, node) {
		if (!mutex_trylock(&map->ctx->mmu.lock))
			goto busy;
	}
	list_for_each_entry(map, &bo->maps, node) {
		npu_mmu_clear_locked(ndev, &map->ctx->mmu, map->va.start,
				     obj->size);
		mutex_unlock(&map->ctx->mmu.lock);
	}
	wmb(); /* cleared entries are visible before the invalidation */
	list_for_each_entry(map, &bo->maps, node)
		npu_mmu_invalidate_entered(ndev, map->ctx->id);
	npu_device_hw_exit(ndev);

	drm_vma_node_unmap(&obj->vma_node, obj->dev->anon_inode->i_mapping);
	npu_bo_put_sgt(bo);
	bo->evicted = true;
	atomic64_add(obj->size >> PAGE_SHIFT, &ndev->pages_reclaimed);
	return true;

busy:
	list_for_each_entry(locked, &bo->maps, node) {
		if (locked == map)
			break;
		mutex_unlock(&locked->ctx->mmu.lock);
	}
	npu_device_hw_exit(ndev);
	return false;
}

/* Resident BOs of the cgroup (and node) being reclaimed. */
static unsigned long npu_gem_shrinker_count(struct shrinker *shrinker,
					    struct shrink_control *sc)
{
	struct npu_device *ndev = shrinker->private_data;
	unsigned long bos = list_lru_shrink_count(&ndev->bo_lru, sc);

	return bos ? bos : SHRINK_EMPTY;
}

/* Never waits: every lock is tried, fences are only tested. */
static unsigned long npu_gem_try_evict(struct npu_device *ndev,
				       struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	unsigned long freed = 0;

	if (mutex_trylock(&bo->lock)) {
		if (dma_resv_trylock(obj->resv)) {
			if (npu_bo_evictable(bo) && npu_bo_evict(ndev, bo))
				freed = 1;
			dma_resv_unlock(obj->resv);
		}
		mutex_unlock(&bo->lock);
	}
	return freed;
}

/* BOs taken from the lru per walk: evicting them sleeps, the walk may not. */
#define NPU_SHRINK_BATCH	16

struct npu_shrink_batch {
	struct npu_bo *bos[NPU_SHRINK_BATCH];
	unsigned int count;
};

/*
 * Under the lru's lock: take a reference and move the BO to the tail
 * (looked at). Eviction takes it off the lru (npu_bo_count_resident()).
 */
static enum lru_status npu_gem_lru_take(struct list_head *item,
					struct list_lru_one *list,
					spinlock_t *lock, void *arg)
{
	struct npu_bo *bo = container_of(item, struct npu_bo, lru_node);
	struct npu_shrink_batch *batch = arg;

	if (batch->count == NPU_SHRINK_BATCH)
		return LRU_STOP;
	/* Being freed: npu_gem_free() takes it off. */
	if (!kref_get_unless_zero(&bo->base.base.refcount))
		return LRU_SKIP;
	batch->bos[batch->count++] = bo;
	return LRU_ROTATE;
}

/*
 * Walk the cgroup's resident BOs from the least recently looked at, in
 * batches. Inside drm_dev_enter(): unbind waits for a running scan, and
 * none starts after it. Counted in BOs.
 */
static unsigned long npu_gem_shrinker_scan(struct shrinker *shrinker,
					   struct shrink_control *sc)
{
	struct npu_device *ndev = shrinker->private_data;
	struct npu_shrink_batch batch;
	unsigned long freed = 0, scanned = 0, walk, left;
	unsigned int i;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return SHRINK_STOP;
	while (scanned < sc->nr_to_scan) {
		walk = min_t(unsigned long, sc->nr_to_scan - scanned,
			     NPU_SHRINK_BATCH);
		left = walk;
		batch.count = 0;
		list_lru_walk_one(&ndev->bo_lru, sc->nid, sc->memcg,
				  npu_gem_lru_take, &batch, &left);
		scanned += walk - left;
		for (i = 0; i < batch.count; i++) {
			freed += npu_gem_try_evict(ndev, batch.bos[i]);
			drm_gem_object_put(&batch.bos[i]->base.base);
		}
		if (left == walk)
			break;	/* the list is empty */
	}
	drm_dev_exit(idx);
	sc->nr_scanned = scanned;
	/* Not SHRINK_STOP for a busy BO: that would end the pass at it. */
	return scanned ? freed : SHRINK_STOP;
}

static void npu_gem_fini(struct drm_device *drm, void *arg)
{
	struct npu_device *ndev = arg;

	shrinker_free(ndev->shrinker);
	list_lru_destroy(&ndev->bo_lru);
}

int npu_gem_init(struct npu_device *ndev)
{
	int ret;

	/* Evicting unpins pages: not slab, so called even without kmem accounting. */
	ndev->shrinker = shrinker_alloc(SHRINKER_MEMCG_AWARE |
					SHRINKER_NUMA_AWARE |
					SHRINKER_NONSLAB,
					"drm-npu:%s", dev_name(ndev->drm.dev));
	if (!ndev->shrinker)
		return -ENOMEM;
	ret = list_lru_init_memcg(&ndev->bo_lru, ndev->shrinker);
	if (ret) {
		shrinker_free(ndev->shrinker);
		return ret;
	}
	ndev->shrinker->count_objects = npu_gem_shrinker_count;
	ndev->shrinker->scan_objects = npu_gem_shrinker_scan;
	ndev->shrinker->private_data = ndev;
	/*
	 * Counted in BOs, each many pages: scanned one at a time, from the
	 * priority at which the cgroup has more BOs than 2^priority on.
	 */
	ndev->shrinker->batch = 1;
	shrinker_register(ndev->shrinker);
	return drmm_add_action_or_reset(&ndev->drm, npu_gem_fini, ndev);
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
	/* The other contexts' mappings come back with the pages. */
	ret = npu_bo_restore(ndev, bo);
	if (ret)
		goto err_unlock;

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
	if (!obj->import_attach && !bo->attach)
		npu_bo_count_resident(ndev, bo, true);

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
static void npu_bo_map_drop(struct drm_gem_object *obj,
			    struct npu_context *ctx, bool job)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;
	bool mapped;

	mutex_lock(&bo->lock);
	if (job && !drm_WARN_ON(obj->dev, !bo->job_users))
		bo->job_users--;
	map = npu_bo_find_map(bo, ctx);
	if (!map || --map->users) {
		mutex_unlock(&bo->lock);
		return;
	}
	list_del(&map->node);
	/* An evicted BO's entries are cleared already. */
	mapped = !bo->evicted;
	mutex_unlock(&bo->lock);

	/* PTEs cleared and TLB invalidated before the pages can go. */
	if (mapped)
		npu_mmu_unmap(ctx->ndev, &ctx->mmu, map->va.start, obj->size);
	mutex_lock(&ctx->mmu.lock);
	list_del(&map->ctx_node);
	drm_mm_remove_node(&map->va);
	mutex_unlock(&ctx->mmu.lock);
	kfree(map);
}

/* A job's end: see npu_bo_map_get(). */
void npu_bo_map_put(struct drm_gem_object *obj, struct npu_context *ctx)
{
	npu_bo_map_drop(obj, ctx, true);
}

static void npu_gem_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct npu_context *ctx = npu_file_ctx_peek(file);

	/* A handle exists only once npu_gem_open() made the VA space. */
	if (ctx)
		npu_bo_map_drop(obj, ctx, false);
}

/*
 * A job takes a user of @obj's mapping in @ctx (dropped by
 * npu_bo_map_put() when it is freed): an evicted BO is made resident
 * first, and none is evicted while a job holds it.
 */
int npu_bo_map_get(struct drm_gem_object *obj, struct npu_context *ctx,
		   u64 *va)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;
	int ret = -ENOENT;

	mutex_lock(&bo->lock);
	map = npu_bo_find_map(bo, ctx);
	if (map)
		ret = npu_bo_restore(ctx->ndev, bo);
	if (map && !ret) {
		map->users++;
		bo->job_users++;
		*va = map->va.start;
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
		npu_bo_count_resident(to_npu_device(obj->dev), bo, false);
	}
	dma_resv_unlock(resv);
}

/*
 * Unbind: give a foreign import's attachment back to its exporter. Its
 * sg mapping may be the one the dma-buf core caches in the attachment
 * (exporters with cache_sgt_mapping such as udmabuf and DRM PRIME, or
 * any dynamic exporter: we attach as a static importer), which
 * dma_buf_unmap_attachment() leaves in place; only the detach unmaps
 * it. The exporter also forgets a device that may be gone for good. The
 * BO keeps its dma-buf reference (put in npu_gem_free()) and no longer
 * counts as an import: nothing can map it again.
 */
static void npu_bo_detach(struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	struct dma_buf_attachment *attach = bo->attach;

	if (!attach)
		return;
	bo->dmabuf = attach->dmabuf;
	bo->attach = NULL;
	WRITE_ONCE(obj->import_attach, NULL);
	dma_buf_detach(bo->dmabuf, attach);
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
		npu_bo_detach(bo);
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
	struct dma_buf *detached = bo->dmabuf;

	drm_WARN_ON(obj->dev, !list_empty(&bo->maps));
	/* Before it leaves the list: see npu_gem_unbind_all(). */
	npu_bo_dma_unmap(bo);
	spin_lock(&ndev->bo_list_lock);
	list_del_init(&bo->dev_node);
	spin_unlock(&ndev->bo_list_lock);
	mutex_destroy(&bo->lock);
	atomic_dec(&ndev->bo_count);
	/* An import detached at unbind holds only its dma-buf reference. */
	drm_gem_shmem_free(&bo->base);
	if (detached)
		dma_buf_put(detached);
}

static enum drm_gem_object_status npu_gem_status(struct drm_gem_object *obj)
{
	struct npu_bo *bo = to_npu_bo(obj);

	if (bo->base.pages || obj->import_attach)
		return DRM_GEM_OBJECT_RESIDENT;
	return 0;
}

/*
 * A read-only import stays read-only for the CPU too: mapped through
 * our file, it would otherwise be writable (mmap checks our file's mode,
 * not the dma-buf's).
 */
static int npu_gem_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	if (obj->import_attach) {
		if (!(obj->dma_buf->file->f_mode & FMODE_WRITE)) {
			if (vma->vm_flags & VM_WRITE)
				return -EACCES;
			vm_flags_clear(vma, VM_MAYWRITE);
		}
		return drm_gem_shmem_object_mmap(obj, vma);
	}
	/* Pages are inserted at fault time: a mapping pins nothing. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
	return 0;
}

/*
 * A CPU fault makes an evicted BO resident again (after unbind, with no
 * device to map it for, it only pins the pages; freeing the BO unpins
 * them).
 */
static vm_fault_t npu_gem_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct npu_bo *bo = to_npu_bo(obj);
	pgoff_t off = (vmf->address - vma->vm_start) >> PAGE_SHIFT;
	vm_fault_t ret;
	int err;

	if (off >= obj->size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	mutex_lock(&bo->lock);
	err = npu_bo_restore(to_npu_device(obj->dev), bo);
	dma_resv_lock(obj->resv, NULL);
	if (err == -ENODEV && bo->evicted) {
		err = drm_gem_shmem_pin_locked(&bo->base);
		if (!err)
			bo->evicted = false;
	}
	if (!err && bo->base.pages)
		ret = vmf_insert_pfn(vma, vmf->address,
				     page_to_pfn(bo->base.pages[off]));
	else
		ret = err ? vmf_error(err) : VM_FAULT_SIGBUS;
	dma_resv_unlock(obj->resv);
	mutex_unlock(&bo->lock);
	return ret;
}

static const struct vm_operations_struct npu_gem_vm_ops = {
	.fault = npu_gem_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

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
	.mmap = npu_gem_mmap,
	.status = npu_gem_status,
	.vm_ops = &npu_gem_vm_ops,
};

struct drm_gem_object *npu_gem_create_object(struct drm_device *drm,
					     size_t size)
{
	struct npu_bo *bo;

	/* Freed by drm_gem_shmem_free() (kfree() takes cache objects). */
	bo = kmem_cache_alloc_lru(npu_bo_cache, &to_npu_device(drm)->bo_lru,
				  GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->base.base.funcs = &npu_gem_funcs;
	/* The device writes them: unpinned, they must go to swap, not away. */
	bo->base.pages_mark_dirty_on_put = true;
	mutex_init(&bo->lock);
	INIT_LIST_HEAD(&bo->maps);
	INIT_LIST_HEAD(&bo->dev_node);
	INIT_LIST_HEAD(&bo->lru_node);
	/*
	 * Not counted or listed here: when the shmem helper fails after
	 * this hook (shmem file, mmap offset) it kfree()s the object
	 * without .free. The creators register it once it exists.
	 */
	return &bo->base.base;
}

/* Called by npu_gem_prime_import(), inside drm_dev_enter(). */
struct drm_gem_object *
npu_gem_prime_import_sg_table(struct drm_device *drm,
			      struct dma_buf_attachment *attach,
			      struct sg_table *sgt)
{
	struct drm_gem_object *obj;
	struct npu_bo *bo;

	obj = drm_gem_shmem_prime_import_sg_table(drm, attach, sgt);
	if (IS_ERR(obj))
		return obj;
	bo = to_npu_bo(obj);
	bo->attach = attach;
	/* What the dma-buf's file may not write, the device may not either. */
	if (!(attach->dmabuf->file->f_mode & FMODE_WRITE))
		bo->flags |= DRM_NPU_BO_DEVICE_READ_ONLY;
	npu_bo_register(to_npu_device(drm), bo);
	return obj;
}

/*
 * drm_gem_prime_import_dev() without its shortcut for our own BOs: the
 * device gets its own attachment (and the importer a BO of its own).
 */
static struct drm_gem_object *npu_gem_import_attach(struct drm_device *drm,
						    struct dma_buf *dma_buf)
{
	struct dma_buf_attachment *attach;
	struct drm_gem_object *obj;
	struct sg_table *sgt;
	int ret;

	attach = dma_buf_attach(dma_buf, drm->dev);
	if (IS_ERR(attach))
		return ERR_CAST(attach);
	get_dma_buf(dma_buf);

	sgt = dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_detach;
	}
	obj = npu_gem_prime_import_sg_table(drm, attach, sgt);
	if (IS_ERR(obj)) {
		ret = PTR_ERR(obj);
		goto err_unmap;
	}
	obj->import_attach = attach;
	obj->resv = dma_buf->resv;
	return obj;

err_unmap:
	dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_BIDIRECTIONAL);
err_detach:
	dma_buf_detach(dma_buf, attach);
	dma_buf_put(dma_buf);
	return ERR_PTR(ret);
}

/*
 * PRIME import. A writable dma-buf goes the core's way: one of our own
 * BOs is that BO again, any other gets an attachment. A read-only one
 * (its file lacks FMODE_WRITE: a PRIME export without DRM_RDWR, a
 * dma-heap buffer allocated O_RDONLY) always gets an attachment and a BO
 * mapped read-only for the device, even when it is one of ours: sharing
 * the exporter's BO would hand the importer its writable mapping. All of
 * it inside drm_dev_enter(): unbind (npu_gem_unbind_all()) only ever
 * sees finished imports.
 */
struct drm_gem_object *npu_gem_prime_import(struct drm_device *drm,
					    struct dma_buf *dma_buf)
{
	struct drm_gem_object *obj;
	int idx;

	if (!drm_dev_enter(drm, &idx))
		return ERR_PTR(-ENODEV);
	if (dma_buf->file->f_mode & FMODE_WRITE)
		obj = drm_gem_prime_import(drm, dma_buf);
	else
		obj = npu_gem_import_attach(drm, dma_buf);
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
	/*
	 * All of a BO is resident while it is mapped: one larger than RAM
	 * could never be, and the shmem helper's page array for it (8 bytes
	 * a page, not charged to the caller's memcg) would be 1 GiB for the
	 * largest VA range.
	 */
	if (PAGE_ALIGN(args->size) >> PAGE_SHIFT > totalram_pages())
		return -ENOMEM;
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
