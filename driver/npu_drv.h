/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu - DRM accel driver for the NPU of driver/hw/npu_hw.h.
 *
 * The device and the per-file contexts; one header per unit besides
 * (npu_mmu.h, npu_gem.h, npu_job.h), as drivers/accel/ivpu.
 */
#ifndef __NPU_DRV_H__
#define __NPU_DRV_H__

#include <linux/atomic.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <drm/drm_device.h>
#include <drm/drm_print.h>
#include <drm/gpu_scheduler.h>

#include <drm/npu_accel.h>
#include "npu_hw.h"
#include "npu_job.h"
#include "npu_mmu.h"

#define NPU_DRIVER_NAME		"npu"
#define NPU_DRIVER_DESC		"NPU DRM accel driver"
#define NPU_FW_NAME		"npu/npu-fw.bin"

/* Upper bound of the job_timeout_ms module parameter (10 minutes). */
#define NPU_JOB_TIMEOUT_MAX_MS	600000
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

/* Fault injection points (CONFIG_DRM_ACCEL_NPU_DEBUG, npu_debugfs.c). */
enum npu_inject_point {
	NPU_INJECT_HANG,		/* the next job started never ends */
	NPU_INJECT_MMU_FAULT,		/* the next job's stream address is 0 */
	NPU_INJECT_BOOT_FAIL,		/* the next firmware boot is refused */
	NPU_INJECT_TLB_TIMEOUT,		/* the next TLB invalidation times out */
	NPU_INJECT_COUNT
};

struct npu_inject {
	/* One-shot knobs, on kernels without CONFIG_FAULT_INJECTION_DEBUG_FS. */
	atomic_t once[NPU_INJECT_COUNT];
	/* Schedulers hold jobs back while set; under reset_lock. */
	bool paused;
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
	/*
	 * Held for writing by every step of a reset (timeout recovery, PCI
	 * error recovery and resets, shutdown), for reading by the MMIO
	 * users outside the schedulers (npu_device_hw_enter()). The
	 * schedulers' run_job and the IRQ threads are stopped by the reset
	 * itself (drm_sched_wqueue_stop(), synchronize_irq()) and never
	 * take it. Held in fence-signalling sections: no allocation and no
	 * fence wait while it is held.
	 */
	struct rw_semaphore reset_lock;
	/*
	 * Under reset_lock: npu_device_reset_prepare() ran and no resume
	 * yet. A PCI recovery that failed before slot_reset leaves it set,
	 * and unbind ends it.
	 */
	bool reset_prepared;
	bool shut_down;		/* under reset_lock: .shutdown ran */
	atomic_t reset_count;
	/* Set by npu_device_stop_jobs(), used once the device was reset. */
	struct npu_active reset_active;
	bool ready;	/* firmware booted, queues usable; under reset_lock */
	/*
	 * A reset or a TLB invalidation failed: bus mastering is off, so the
	 * device can reach no memory the driver frees, until a reset works.
	 */
	bool wedged;

	/*
	 * Jobs are freed here, not in free_job: free_job may run inside a
	 * fence-signalling section, and freeing takes locks (bo->lock,
	 * mmu.lock, dma_resv, ctx_lock) held elsewhere across allocations.
	 */
	struct llist_head job_free_list;
	struct work_struct job_free_work;
	/* Jobs' gates on other drivers' fences still waiting (npu_job.c). */
	spinlock_t gate_lock;
	struct list_head gates;

	struct npu_inject inject;

	/*
	 * Every BO of the device, so that unbind can take back the DMA
	 * mappings of those that outlive it (open files, mmaps, dma-bufs).
	 */
	spinlock_t bo_list_lock;
	struct list_head bo_list;	/* struct npu_bo.dev_node */

	/* Leak accounting read by the kselftests through debugfs. */
	atomic_t bo_count;
	atomic64_t pages_mapped;
	/* Reclaim (npu_gem.c): pages pinned for the device, and the totals. */
	struct shrinker *shrinker;
	atomic64_t pages_resident;
	atomic64_t pages_reclaimed;
	atomic64_t bos_restored;
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

/* npu_drv.c */
struct npu_context *npu_context_get(struct npu_context *ctx);
void npu_context_put(struct npu_context *ctx);

/* npu_device.c */
int npu_device_init(struct npu_device *ndev);
void npu_device_fini(struct npu_device *ndev);
int npu_device_hw_start(struct npu_device *ndev);
int npu_device_reset_hw(struct npu_device *ndev);
u64 npu_device_time_ns(struct npu_device *ndev);
bool npu_device_hw_enter(struct npu_device *ndev);
bool npu_device_hw_tryenter(struct npu_device *ndev);
void npu_device_hw_exit(struct npu_device *ndev);
void npu_device_wedge(struct npu_device *ndev, const char *why);
void npu_device_recover(struct npu_device *ndev, struct npu_job *bad);
bool npu_device_may_recover(struct npu_device *ndev);
bool npu_device_sched_running(struct npu_device *ndev);
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

/* npu_uring.c */
int npu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);

/* npu_debugfs.c */
void npu_debugfs_init(struct npu_device *ndev);
bool npu_inject(struct npu_device *ndev, enum npu_inject_point point);

#endif /* __NPU_DRV_H__ */
