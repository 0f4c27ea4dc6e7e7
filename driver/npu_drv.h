/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu - DRM accel driver for the NPU of firmware-sim/include/npu_hw.h.
 *
 * Shared types: the device, its hardware queues, per-file contexts, buffer
 * objects and jobs. One file per responsibility, as drivers/accel/ivpu.
 */
#ifndef __NPU_DRV_H__
#define __NPU_DRV_H__

#include <linux/atomic.h>
#include <linux/dma-fence.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <drm/drm_device.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <drm/drm_print.h>
#include <drm/gpu_scheduler.h>

#include <drm/npu_accel.h>
#include "npu_hw.h"

#define NPU_DRIVER_NAME		"npu"
#define NPU_DRIVER_DESC		"NPU DRM accel driver"
#define NPU_FW_NAME		"npu/npu-fw.bin"

/* Upper bound of the job_timeout_ms module parameter (10 minutes). */
#define NPU_JOB_TIMEOUT_MAX_MS	600000
/* Strict priority over the other queue: CAP_SYS_NICE or DRM master. */
#define NPU_QUEUE_HIGH_PRIORITY	0
/* Ring entries per hardware queue; also the scheduler's credit limit. */
#define NPU_RING_ENTRIES	256
/* Device VA handed out to contexts: page 0..1 MiB stays unmapped. */
#define NPU_VA_START		0x100000ull
#define NPU_VA_END		BIT_ULL(NPU_VA_BITS)
/* JOB_INFO keeps the last this many jobs of a file. */
#define NPU_JOB_HISTORY		4096
/* Jobs of one context not yet retired; SUBMIT fails with -EBUSY beyond. */
#define NPU_MAX_QUEUED_JOBS	1024
/* Largest drm_npu_submit.bo_ref_size (an extended drm_npu_bo_ref). */
#define NPU_MAX_BO_REF_SIZE	4096
/* What DRM_NPU_PARAM_FEATURES reports. */
#define NPU_FEATURES		(DRM_NPU_FEATURE_URING_SUBMIT |		\
				 DRM_NPU_FEATURE_TIMELINE_SYNCOBJ |	\
				 DRM_NPU_FEATURE_JOB_WAIT |		\
				 DRM_NPU_FEATURE_UNALIGNED_ARRAYS |	\
				 DRM_NPU_FEATURE_TIMELINE_DEP_ERRORS)

/* Debug categories, enabled through the dbg_mask module parameter. */
#define NPU_DBG_DRV		BIT(0)
#define NPU_DBG_GEM		BIT(1)
#define NPU_DBG_MMU		BIT(2)
#define NPU_DBG_JOB		BIT(3)
#define NPU_DBG_IRQ		BIT(4)
#define NPU_DBG_FW		BIT(5)
#define NPU_DBG_RESET		BIT(6)
#define NPU_DBG_URING		BIT(7)

extern unsigned int npu_dbg_mask;
extern unsigned int npu_job_timeout_ms;

#define npu_dbg(ndev, cat, fmt, ...) do {				\
	if (npu_dbg_mask & NPU_DBG_##cat)				\
		drm_dbg(&(ndev)->drm, "[%s] " fmt, #cat, ##__VA_ARGS__); \
} while (0)

struct npu_device;
struct npu_job;
struct dma_buf_attachment;
struct sg_table;

/* One hardware queue: its ring, completion records and scheduler. */
struct npu_queue {
	struct npu_device *ndev;
	u32 id;
	char name[16];

	struct npu_job_desc *ring;
	dma_addr_t ring_dma;
	struct npu_completion *compl;
	dma_addr_t compl_dma;

	/* Protects tail, head and slots; taken from the IRQ thread. */
	spinlock_t lock;
	u32 tail;
	u32 head;
	struct npu_job *slots[NPU_RING_ENTRIES];

	struct drm_gpu_scheduler sched;
	bool sched_ready;

	/* Hardware fences: one per job, seqnos in ring order. */
	spinlock_t fence_lock;
	u64 fence_context;
	u64 fence_seqno;

	/* Jobs a reset took off the ring before they started, in order. */
	struct npu_job *rerun[NPU_RING_ENTRIES];
	u32 rerun_count;
};

/* The job on the engine when the queues were stopped for a reset. */
struct npu_active {
	bool known;	/* the register could be read (device present) */
	bool valid;	/* a job was on the engine */
	u32 queue;
	u64 seqno;
};

/* Test hooks set through debugfs. */
struct npu_inject {
	atomic_t hang_next;
	atomic_t fault_next;
	atomic_t fail_boot;
	/* Schedulers hold jobs back (drm_sched_wqueue_stop) while set. */
	atomic_t paused;
};

struct npu_device {
	struct drm_device drm;
	struct pci_dev *pdev;
	void __iomem *regs;

	/* Firmware image kept in DMA memory for every (re)boot. */
	void *fw_cpu;
	dma_addr_t fw_dma;
	u32 fw_size;
	u32 fw_version;
	char fw_build_id[32];

	/* Identity read at probe. */
	u32 hw_version;
	u32 isa_version;
	u32 caps;
	u32 op_mask;
	u32 mac_shape;
	u32 sram_size;
	u32 clock_mhz;
	u32 dma_bytes_per_cycle;

	struct npu_ctx_entry *ctx_table;
	dma_addr_t ctx_table_dma;
	struct ida ctx_ida;
	/* Protects contexts (the list debugfs walks). */
	struct mutex ctx_lock;
	struct list_head contexts;

	/* Serializes MMU invalidations (register write + readback poll). */
	struct mutex mmu_lock;

	struct npu_queue queues[NPU_NUM_QUEUES];
	int irqs[NPU_MSIX_NUM_VECTORS];
	bool irqs_requested;
	atomic_t irq_err_pending;

	/* Timeout handlers of every queue run here, one at a time. */
	struct workqueue_struct *reset_wq;
	atomic_t reset_pending;
	atomic_t reset_count;
	/* Set by npu_device_stop_jobs(), used once the device was reset. */
	struct npu_active reset_active;
	bool ready;	/* firmware booted, queues usable */

	struct npu_inject inject;

	/* Leak accounting read by the kselftests through debugfs. */
	atomic_t bo_count;
	atomic64_t pages_mapped;
	atomic_t job_count;
	/* Woken when job_count drops to zero (unbind waits for it). */
	wait_queue_head_t job_free_wq;
	atomic_t ctx_count;
	atomic64_t jobs_submitted;
	atomic64_t jobs_completed;
	atomic64_t jobs_failed;
	atomic64_t mmu_faults;
};

static inline struct npu_device *to_npu_device(struct drm_device *drm)
{
	return container_of(drm, struct npu_device, drm);
}

static inline u32 npu_read(struct npu_device *ndev, u32 reg)
{
	return readl(ndev->regs + reg);
}

static inline void npu_write(struct npu_device *ndev, u32 reg, u32 val)
{
	writel(val, ndev->regs + reg);
}

static inline u64 npu_read64(struct npu_device *ndev, u32 lo)
{
	u32 l = npu_read(ndev, lo);

	return ((u64)npu_read(ndev, lo + 4) << 32) | l;
}

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

/* Per-job record kept for DRM_IOCTL_NPU_JOB_INFO. */
struct npu_job_rec {
	struct kref ref;
	u64 id;
	u32 state;
	u32 status;
	u32 error_offset;
	u32 queue;
	u64 fault_addr;
	u64 submit_ns;
	u64 start_ns;
	u64 end_ns;
	u64 cycles;
	u64 macs;
};

/* An open file: one hardware context. */
struct npu_context {
	struct kref ref;
	struct npu_device *ndev;
	u32 id;
	struct list_head node;
	pid_t pid;

	struct npu_mmu_ctx mmu;
	struct drm_sched_entity entity[NPU_NUM_QUEUES];
	bool entities_ready;

	/* Serializes job arm + push on the entities and job ids. */
	struct mutex submit_lock;
	u64 next_job_id;
	struct xarray jobs;		/* job id -> struct npu_job_rec */
	/* Protects the records' fields. */
	spinlock_t rec_lock;

	atomic_t banned;
	atomic64_t engine_ns[NPU_NUM_QUEUES];
	/* Jobs submitted and not yet freed, at most NPU_MAX_QUEUED_JOBS. */
	atomic_t jobs_inflight;
	/* Woken whenever one of the records reaches DONE or CANCELED. */
	wait_queue_head_t job_wq;
};

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
};

static inline struct npu_bo *to_npu_bo(struct drm_gem_object *obj)
{
	return container_of(to_drm_gem_shmem_obj(obj), struct npu_bo, base);
}

struct npu_job {
	struct drm_sched_job base;
	struct npu_device *ndev;
	struct npu_context *ctx;
	struct npu_queue *queue;
	struct npu_job_rec *rec;

	struct drm_gem_object **bos;
	u32 *access;
	u32 bo_count;
	u32 maps_held;			/* bos[0..maps_held) mappings held */

	u64 cmd_va;
	u32 cmd_size;

	/* The in-syncs' fences: a job whose dependency failed is canceled. */
	struct dma_fence **deps;
	u32 dep_count;

	/*
	 * Hardware fence, allocated at submit and initialized by run_job:
	 * a job is written to a ring at most once per device reset and runs
	 * on the engine at most once (see npu_device_reset_restart()).
	 */
	struct dma_fence *hw_fence;
	bool hw_fence_init;
};

static inline struct npu_job *to_npu_job(struct drm_sched_job *sched_job)
{
	return container_of(sched_job, struct npu_job, base);
}

/* npu_drv.c */
struct npu_context *npu_context_get(struct npu_context *ctx);
void npu_context_put(struct npu_context *ctx);

/* npu_device.c */
int npu_device_init(struct npu_device *ndev);
void npu_device_fini(struct npu_device *ndev);
int npu_device_hw_start(struct npu_device *ndev);
int npu_device_reset_hw(struct npu_device *ndev);
u64 npu_device_time_ns(struct npu_device *ndev);
void npu_device_recover(struct npu_device *ndev, struct npu_job *bad);
bool npu_device_reset_trylock(struct npu_device *ndev, unsigned int ms);
void npu_device_reset_unlock(struct npu_device *ndev);
void npu_device_reset_prepare(struct npu_device *ndev);
int npu_device_reset_restart(struct npu_device *ndev);
void npu_device_reset_resume(struct npu_device *ndev);
void npu_device_shutdown(struct npu_device *ndev);
const char *npu_job_status_str(u32 status);

/* npu_fw.c */
int npu_fw_load(struct npu_device *ndev);
int npu_fw_boot(struct npu_device *ndev);

/* npu_irq.c */
int npu_irq_init(struct npu_device *ndev);
void npu_irq_fini(struct npu_device *ndev);
void npu_irq_enable(struct npu_device *ndev);
void npu_irq_disable(struct npu_device *ndev);

/* npu_mmu.c */
int npu_mmu_ctx_init(struct npu_device *ndev, struct npu_mmu_ctx *mmu);
void npu_mmu_ctx_fini(struct npu_device *ndev, struct npu_mmu_ctx *mmu);
int npu_mmu_map(struct npu_device *ndev, struct npu_mmu_ctx *mmu, u64 va,
		struct sg_table *sgt, u64 size, u32 prot);
void npu_mmu_unmap(struct npu_device *ndev, struct npu_mmu_ctx *mmu,
		   u64 va, u64 size);
int npu_mmu_invalidate(struct npu_device *ndev, u32 ctx_id);

/* npu_gem.c */
struct drm_gem_object *npu_gem_create_object(struct drm_device *drm,
					     size_t size);
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

/* npu_job.c */
int npu_job_queues_init(struct npu_device *ndev);
void npu_job_queues_fini(struct npu_device *ndev);
int npu_job_entities_init(struct npu_context *ctx);
void npu_job_entities_fini(struct npu_context *ctx);
void npu_queue_process(struct npu_queue *q);
void npu_queue_abort_inflight(struct npu_queue *q, int error);
void npu_queue_retire(struct npu_queue *q, const struct npu_active *act);
void npu_queue_rerun(struct npu_queue *q, int error);
bool npu_job_is_hung(struct npu_job *job);
void npu_job_drain(struct npu_device *ndev);
void npu_job_sched_restart(struct drm_gpu_scheduler *sched);
void npu_queue_hw_init(struct npu_queue *q);
int npu_job_submit(struct drm_file *file, struct drm_npu_submit *args,
		   struct dma_fence **finished, struct npu_job_rec **rec);
void npu_job_rec_put(struct npu_job_rec *rec);
int npu_ioctl_submit(struct drm_device *drm, void *data,
		     struct drm_file *file);
int npu_ioctl_job_info(struct drm_device *drm, void *data,
		       struct drm_file *file);
int npu_ioctl_job_wait(struct drm_device *drm, void *data,
		       struct drm_file *file);
void npu_job_print_ctx(struct seq_file *m, struct npu_context *ctx);

/* npu_uring.c */
int npu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);

/* npu_debugfs.c */
void npu_debugfs_init(struct npu_device *ndev);

#endif /* __NPU_DRV_H__ */
