/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-context device page tables and the device TLB (npu_mmu.c).
 */
#ifndef __NPU_MMU_H__
#define __NPU_MMU_H__

#include <linux/mutex.h>
#include <linux/types.h>

#include <drm/drm_mm.h>

#include "npu_hw.h"

/* Device VA handed out to contexts: page 0..1 MiB stays unmapped. */
#define NPU_VA_START		0x100000ull
#define NPU_VA_END		BIT_ULL(NPU_VA_BITS)

struct npu_device;
struct sg_table;

/* Device page tables of one context. */
struct npu_pt {
	__le64 *entries;		/* read by the device: little-endian */
	dma_addr_t dma;
	struct npu_pt **children;	/* NULL for level-0 tables */
};

struct npu_mmu_ctx {
	struct npu_pt root;
	/* Protects the tables and the VA allocator. */
	struct mutex lock;
	struct drm_mm mm;
	struct list_head maps;		/* struct npu_bo_map.ctx_node */
	u64 tables;
};

int npu_mmu_ctx_init(struct npu_device *ndev, struct npu_mmu_ctx *mmu);
void npu_mmu_ctx_fini(struct npu_device *ndev, struct npu_mmu_ctx *mmu);
void npu_mmu_ctx_unbind(struct npu_device *ndev, struct npu_mmu_ctx *mmu);
int npu_mmu_map(struct npu_device *ndev, struct npu_mmu_ctx *mmu, u64 va,
		struct sg_table *sgt, u64 size, u32 prot);
void npu_mmu_unmap(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
		   u64 va, u64 size);
void npu_mmu_clear_locked(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
			  u64 va, u64 size);
int npu_mmu_invalidate(struct npu_device *ndev, u32 ctx_id);
int npu_mmu_invalidate_entered(struct npu_device *ndev, u32 ctx_id);

#endif /* __NPU_MMU_H__ */
