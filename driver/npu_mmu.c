// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-context device page tables (3 levels, 512 entries, 4 KiB pages, see
 * npu_hw.h) and the device TLB invalidation.
 */

#include <linux/dma-mapping.h>
#include <linux/iopoll.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>

#include "npu_drv.h"

static int npu_pt_alloc(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
			struct npu_pt *pt, int level)
{
	pt->entries = dma_alloc_coherent(ndev->drm.dev, NPU_PAGE_SIZE, &pt->dma,
					 GFP_KERNEL_ACCOUNT);
	if (!pt->entries)
		return -ENOMEM;
	pt->children = NULL;
	if (level > 0) {
		pt->children = kcalloc(NPU_PT_ENTRIES, sizeof(*pt->children),
				       GFP_KERNEL_ACCOUNT);
		if (!pt->children) {
			dma_free_coherent(ndev->drm.dev, NPU_PAGE_SIZE,
					  pt->entries, pt->dma);
			pt->entries = NULL;
			return -ENOMEM;
		}
	}
	mmu->tables++;
	return 0;
}

static void npu_pt_free(struct npu_device *ndev, struct npu_pt *pt)
{
	int i;

	if (!pt->entries)
		return;
	if (pt->children) {
		for (i = 0; i < NPU_PT_ENTRIES; i++) {
			if (!pt->children[i])
				continue;
			npu_pt_free(ndev, pt->children[i]);
			kfree(pt->children[i]);
		}
		kfree(pt->children);
		pt->children = NULL;
	}
	dma_free_coherent(ndev->drm.dev, NPU_PAGE_SIZE, pt->entries, pt->dma);
	pt->entries = NULL;
}

int npu_mmu_ctx_init(struct npu_device *ndev, struct npu_mmu_ctx *mmu)
{
	int ret;

	mutex_init(&mmu->lock);
	INIT_LIST_HEAD(&mmu->maps);
	ret = npu_pt_alloc(ndev, mmu, &mmu->root, NPU_PT_LEVELS - 1);
	if (ret)
		return ret;
	drm_mm_init(&mmu->mm, NPU_VA_START, NPU_VA_END - NPU_VA_START);
	return 0;
}

void npu_mmu_ctx_fini(struct npu_device *ndev, struct npu_mmu_ctx *mmu)
{
	if (drm_mm_initialized(&mmu->mm))
		drm_mm_takedown(&mmu->mm);
	npu_pt_free(ndev, &mmu->root);
	mutex_destroy(&mmu->lock);
}

/*
 * Unbind with the file still open: the device is stopped, so its tables
 * go now, while the driver still owns the DMA API's view of the device.
 * Mappings left in the context then only release their VA (npu_mmu_map()
 * fails, npu_mmu_unmap() has no entries to clear).
 */
void npu_mmu_ctx_unbind(struct npu_device *ndev, struct npu_mmu_ctx *mmu)
{
	mutex_lock(&mmu->lock);
	npu_pt_free(ndev, &mmu->root);
	mutex_unlock(&mmu->lock);
}

/* The level-0 table covering @va, created on demand when @alloc. */
static struct npu_pt *npu_mmu_walk(struct npu_device *ndev,
				   struct npu_mmu_ctx *mmu, u64 va, bool alloc)
{
	struct npu_pt *pt = &mmu->root;
	int level;

	if (!pt->entries)	/* taken back at unbind */
		return NULL;
	for (level = NPU_PT_LEVELS - 1; level > 0; level--) {
		u32 idx = NPU_PT_INDEX(va, level);
		struct npu_pt *next = pt->children[idx];

		if (!next) {
			if (!alloc)
				return NULL;
			next = kzalloc(sizeof(*next), GFP_KERNEL_ACCOUNT);
			if (!next)
				return NULL;
			if (npu_pt_alloc(ndev, mmu, next, level - 1)) {
				kfree(next);
				return NULL;
			}
			pt->children[idx] = next;
			WRITE_ONCE(pt->entries[idx],
				   cpu_to_le64(next->dma | NPU_PTE_VALID));
		}
		pt = next;
	}
	return pt;
}

/*
 * Under reset_lock (npu_device_hw_enter()). While a reset owns the
 * device, or it is unusable, there is nothing to invalidate: the device
 * was reset (its DMA stopped) or lost bus mastering, and every boot
 * starts with a full invalidation. An invalidation that times out leaves
 * stale translations to pages that are about to be freed: the device
 * loses bus mastering until a reset (npu_device_wedge()).
 */
/* The invalidation itself; the caller holds npu_device_hw_enter(). */
int npu_mmu_invalidate_entered(struct npu_device *ndev, u32 ctx_id)
{
	u32 val;
	int ret;

	mutex_lock(&ndev->mmu_lock);
	npu_write(ndev, NPU_REG_MMU_INVALIDATE, ctx_id);
	ret = readl_poll_timeout(ndev->regs + NPU_REG_MMU_INVALIDATE, val,
				 val == 0, 5, 100000);
	if (npu_inject(ndev, NPU_INJECT_TLB_TIMEOUT))
		ret = -ETIMEDOUT;
	mutex_unlock(&ndev->mmu_lock);
	if (ret) {
		drm_err(&ndev->drm, "TLB invalidation of context %u timed out\n",
			ctx_id);
		npu_device_wedge(ndev, "TLB invalidation timed out");
	}
	return ret;
}

int npu_mmu_invalidate(struct npu_device *ndev, u32 ctx_id)
{
	int ret;

	if (!npu_device_hw_enter(ndev))
		return 0;
	ret = npu_mmu_invalidate_entered(ndev, ctx_id);
	npu_device_hw_exit(ndev);
	return ret;
}

static void npu_mmu_clear(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
			  u64 va, u64 size)
{
	u64 end = va + size;

	for (; va < end; va += NPU_PAGE_SIZE) {
		struct npu_pt *pt = npu_mmu_walk(ndev, mmu, va, false);

		if (pt)
			WRITE_ONCE(pt->entries[NPU_PT_INDEX(va, 0)], 0);
	}
}

/*
 * Clear the entries of @va..+@size with @mmu->lock held (the shrinker
 * trylocks it); the caller invalidates the TLB.
 */
void npu_mmu_clear_locked(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
			  u64 va, u64 size)
{
	lockdep_assert_held(&mmu->lock);
	npu_mmu_clear(ndev, mmu, va, size);
	atomic64_sub(size >> NPU_PAGE_SHIFT, &ndev->pages_mapped);
}

static struct npu_context *npu_mmu_to_ctx(struct npu_mmu_ctx *mmu)
{
	return container_of(mmu, struct npu_context, mmu);
}

/*
 * Map @size bytes of @sgt at @va. Called with the VA range reserved and
 * the pages pinned; leaves are written before the TLB is told.
 */
int npu_mmu_map(struct npu_device *ndev, struct npu_mmu_ctx *mmu, u64 va,
		struct sg_table *sgt, u64 size, u32 prot)
{
	struct npu_context *ctx = npu_mmu_to_ctx(mmu);
	u64 pte_flags = NPU_PTE_VALID | NPU_PTE_READ;
	struct sg_dma_page_iter iter;
	u64 cur = va, end = va + size;
	int ret = 0, idx;

	if (prot & NPU_PTE_WRITE)
		pte_flags |= NPU_PTE_WRITE;

	mutex_lock(&mmu->lock);
	if (!mmu->root.entries) {
		mutex_unlock(&mmu->lock);
		return -ENODEV;
	}
	for_each_sgtable_dma_page(sgt, &iter, 0) {
		dma_addr_t addr = sg_page_iter_dma_address(&iter);
		u64 off;

		/* A kernel page may hold several NPU pages (PAGE_SIZE > 4K). */
		for (off = 0; off < PAGE_SIZE && cur < end;
		     off += NPU_PAGE_SIZE) {
			struct npu_pt *pt = npu_mmu_walk(ndev, mmu, cur, true);

			if (!pt) {
				ret = -ENOMEM;
				break;
			}
			WRITE_ONCE(pt->entries[NPU_PT_INDEX(cur, 0)],
				   cpu_to_le64(((addr + off) & NPU_PTE_ADDR_MASK) |
					       pte_flags));
			cur += NPU_PAGE_SIZE;
		}
		if (cur >= end || ret)
			break;
	}
	if (!ret && cur < end)
		ret = -EINVAL;	/* sg table shorter than the object */
	if (ret)
		npu_mmu_clear(ndev, mmu, va, cur - va);
	mutex_unlock(&mmu->lock);

	wmb(); /* entries reach memory before the device may walk them */
	if (drm_dev_enter(&ndev->drm, &idx)) {
		npu_mmu_invalidate(ndev, ctx->id);
		drm_dev_exit(idx);
	}
	if (!ret)
		atomic64_add(size >> NPU_PAGE_SHIFT, &ndev->pages_mapped);
	npu_dbg(ndev, MMU, "ctx %u map %#llx+%#llx: %d\n", ctx->id, va, size, ret);
	return ret;
}

void npu_mmu_unmap(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
		   u64 va, u64 size)
{
	struct npu_context *ctx = npu_mmu_to_ctx(mmu);
	int idx;

	mutex_lock(&mmu->lock);
	npu_mmu_clear(ndev, mmu, va, size);
	mutex_unlock(&mmu->lock);

	wmb(); /* cleared entries are visible before the invalidation */
	if (drm_dev_enter(&ndev->drm, &idx)) {
		npu_mmu_invalidate(ndev, ctx->id);
		drm_dev_exit(idx);
	}
	atomic64_sub(size >> NPU_PAGE_SHIFT, &ndev->pages_mapped);
	npu_dbg(ndev, MMU, "ctx %u unmap %#llx+%#llx\n", ctx->id, va, size);
}
