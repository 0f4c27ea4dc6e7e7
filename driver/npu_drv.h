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
#include <linux/fault-inject.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/list_lru.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/srcu.h>
#include <linux/uidgid.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <drm/drm_device.h>
#include <drm/drm_file.h>
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
/* What DRM_NPU_PARAM_FEATURES reports: version 2 defines no bits yet. */
#define NPU_FEATURES		0ull
/* Contexts of the uAPI one file may hold (-ENOSPC beyond). */
#define NPU_MAX_FILE_CONTEXTS	32

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
#ifdef CONFIG_FAULT_INJECTION
	/* The device's own: an armed point fails on this device only. */
	struct fault_attr attrs[NPU_INJECT_COUNT];
#endif
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
	/* Protects contexts (the list debugfs walks) and vm_users. */
	struct mutex ctx_lock;
	struct list_head contexts;
	/* uid -> VA spaces it holds (xa_mk_value), for max_vms_per_user. */
	struct xarray vm_users;

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
	 * Serializes the steps that stop the schedulers for good (a PCI
	 * reset's prepare, shutdown, the pause hook) with those that let them
	 * go again (resume, unpause); taken before reset_lock, never in a
	 * fence-signalling section (npu_device_stop_scheds()).
	 */
	struct mutex sched_lock;
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
	/*
	 * Reclaim (npu_gem.c): resident BOs per memory cgroup, pages pinned
	 * for the device, and the totals.
	 */
	struct shrinker *shrinker;
	struct list_lru bo_lru;
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

/*
 * An open file. Its VA space (@ctx) is created at first need
 * (npu_file_ctx()): a file that only asks parameters holds none of the
 * device's NPU_NUM_CONTEXTS hardware contexts.
 */
struct npu_file {
	struct npu_device *ndev;
	/* Serializes the creation of @ctx. */
	struct mutex lock;
	struct npu_context *ctx;
};

static inline struct npu_file *to_npu_file(struct drm_file *file)
{
	return file->driver_priv;
}

/*
 * A file's VA space: one hardware (MMU) context, the file's job records
 * and the contexts of the uAPI (struct npu_exec_ctx) that submit into it.
 */
struct npu_context {
	struct kref ref;
	struct npu_device *ndev;
	u32 id;
	struct list_head node;
	pid_t pid;
	/*
	 * Counted in ndev->vm_users against the euid of the task that made
	 * it (not for CAP_SYS_ADMIN).
	 */
	kuid_t uid;
	bool uid_charged;

	struct npu_mmu_ctx mmu;

	/*
	 * Contexts of the uAPI by id; changed under exec_lock, looked up
	 * by submits under npu_exec_ctx_srcu. exec_closed: no new ones.
	 */
	struct mutex exec_lock;
	struct xarray exec_ctxs;
	bool exec_closed;

	/* Serializes job arm + push on the entities and job ids. */
	struct mutex submit_lock;
	u64 next_job_id;
	/* The last NPU_JOB_HISTORY job records, at id % NPU_JOB_HISTORY. */
	struct npu_job_rec **recs;
	/* Protects @recs and the records' fields. */
	spinlock_t rec_lock;

	/* Busy time and modeled cycles per hardware queue, for fdinfo. */
	atomic64_t engine_ns[NPU_NUM_QUEUES];
	atomic64_t cycles[NPU_NUM_QUEUES];
	/* Jobs submitted and not yet freed, at most NPU_MAX_QUEUED_JOBS. */
	atomic_t jobs_inflight;
	/* Woken whenever one of the records reaches DONE or CANCELED. */
	wait_queue_head_t job_wq;
};

/*
 * A context of the uAPI (DRM_IOCTL_NPU_CONTEXT_CREATE): an ordered stream
 * of jobs with a priority, one drm_sched entity on one hardware queue,
 * banned alone when one of its jobs hangs the device. Jobs hold a
 * reference; it holds one on its VA space.
 */
struct npu_exec_ctx {
	struct kref ref;
	struct npu_context *ctx;
	u32 id;
	u32 priority;
	u32 queue;
	struct drm_sched_entity entity;
	bool entity_ready;
	atomic_t banned;
};

/* npu_drv.c */
extern unsigned int npu_max_vms_per_user;
struct npu_context *npu_context_get(struct npu_context *ctx);
void npu_context_put(struct npu_context *ctx);
struct npu_context *npu_file_ctx(struct drm_file *file);
struct npu_context *npu_file_ctx_peek(struct drm_file *file);

/* npu_device.c */
int npu_device_init(struct npu_device *ndev);
void npu_device_fini(struct npu_device *ndev);
int npu_device_hw_start(struct npu_device *ndev);
int npu_device_reset_hw(struct npu_device *ndev);
u64 npu_device_time_ns(struct npu_device *ndev);
bool npu_device_hw_enter(struct npu_device *ndev);
bool npu_device_hw_tryenter(struct npu_device *ndev);
void npu_device_hw_exit(struct npu_device *ndev);
bool npu_device_reset_begin(struct npu_device *ndev);
void npu_device_reset_end(struct npu_device *ndev, bool cookie);
void npu_device_stop_scheds(struct npu_device *ndev);
void npu_device_start_scheds(struct npu_device *ndev);
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
