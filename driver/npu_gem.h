/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Buffer objects and their per-context mappings (npu_gem.c).
 */
#ifndef __NPU_GEM_H__
#define __NPU_GEM_H__

#include <linux/list.h>
#include <linux/mutex.h>

#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>

struct dma_buf;
struct dma_buf_attachment;
struct drm_file;
struct npu_context;
struct npu_device;
struct seq_file;
struct sg_table;

/* A mapping of a BO into one context. */
struct npu_bo_map {
	struct list_head node;		/* in npu_bo.maps */
	struct list_head ctx_node;	/* in npu_mmu_ctx.maps */
	struct npu_context *ctx;
	struct npu_bo *bo;
	struct drm_mm_node va;
	u32 prot;
	u32 users;			/* handles of this context + jobs */
};

struct npu_bo {
	struct drm_gem_shmem_object base;
	u32 flags;
	/* Protects maps. */
	struct mutex lock;
	struct list_head maps;
	struct list_head dev_node;	/* in npu_device.bo_list */
	struct list_head lru_node;	/* in npu_device.bo_lru while resident */
	/*
	 * A foreign dma-buf's attachment, set before the BO is listed (the
	 * core sets import_attach and resv only after the import hook).
	 */
	struct dma_buf_attachment *attach;
	/* The dma-buf of an import whose attachment unbind gave back. */
	struct dma_buf *dmabuf;
	/* Under lock: jobs holding the BO; reclaimed by the shrinker. */
	u32 job_users;
	bool evicted;
	bool resident_counted;		/* in npu_device.pages_resident */
};

static inline struct npu_bo *to_npu_bo(struct drm_gem_object *obj)
{
	return container_of(to_drm_gem_shmem_obj(obj), struct npu_bo, base);
}

struct drm_gem_object *npu_gem_create_object(struct drm_device *drm,
					     size_t size);
struct drm_gem_object *npu_gem_prime_import(struct drm_device *drm,
					    struct dma_buf *dma_buf);
struct drm_gem_object *
npu_gem_prime_import_sg_table(struct drm_device *drm,
			      struct dma_buf_attachment *attach,
			      struct sg_table *sgt);
int npu_bo_va(struct drm_gem_object *obj, struct npu_context *ctx, u64 *va);
int npu_bo_map_get(struct drm_gem_object *obj, struct npu_context *ctx,
		   u64 *va);
void npu_bo_map_put(struct drm_gem_object *obj, struct npu_context *ctx);
int npu_ioctl_bo_create(struct drm_device *drm, void *data,
			struct drm_file *file);
int npu_ioctl_bo_info(struct drm_device *drm, void *data,
		      struct drm_file *file);
void npu_gem_print_ctx(struct seq_file *m, struct npu_context *ctx);
void npu_gem_unbind_all(struct npu_device *ndev);
int npu_gem_init(struct npu_device *ndev);
int npu_gem_module_init(void);
void npu_gem_module_exit(void);

#endif /* __NPU_GEM_H__ */
