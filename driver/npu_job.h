/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Jobs, hardware queues and their schedulers (npu_job.c).
 */
#ifndef __NPU_JOB_H__
#define __NPU_JOB_H__

#include <linux/dma-fence.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include <drm/gpu_scheduler.h>

#include <drm/npu_accel.h>
#include "npu_hw.h"

/* Strict priority over the other queue: CAP_SYS_NICE or DRM master. */
#define NPU_QUEUE_HIGH_PRIORITY	0
/* NORMAL and LOW contexts share it, LOW at a lower drm_sched priority. */
#define NPU_QUEUE_NORMAL	1
/* Ring entries per hardware queue; also the scheduler's credit limit. */
#define NPU_RING_ENTRIES	256
/* JOB_INFO keeps the last this many jobs of a file. */
#define NPU_JOB_HISTORY		4096
/* Jobs of one context not yet retired; SUBMIT fails with -EBUSY beyond. */
#define NPU_MAX_QUEUED_JOBS	1024
/* Largest drm_npu_submit.bo_ref_size (an extended drm_npu_bo_ref). */
#define NPU_MAX_BO_REF_SIZE	4096

struct drm_file;
struct npu_context;
struct npu_device;
struct npu_exec_ctx;
struct seq_file;
struct work_struct;

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
	/* Fences of jobs canceled in run_job (npu_job_run_cancel()). */
	spinlock_t cancel_lock;
	u64 cancel_context;
	u64 cancel_seqno;

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

/* Per-job record kept for DRM_IOCTL_NPU_JOB_INFO. */
struct npu_job_rec {
	struct kref ref;
	u64 id;
	u32 context_id;
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

struct npu_job {
	struct drm_sched_job base;
	struct npu_device *ndev;
	struct npu_context *ctx;
	/* The uAPI context it was submitted to (its entity, its ban). */
	struct npu_exec_ctx *ectx;
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
	/* Other drivers' fences, gathered at submit behind one gate fence. */
	struct dma_fence **foreign;
	u32 foreign_count;
	u32 foreign_cap;

	/*
	 * Hardware fence, allocated at submit and initialized by run_job:
	 * a job is written to a ring at most once per device reset and runs
	 * on the engine at most once (see npu_device_reset_restart()).
	 */
	struct dma_fence *hw_fence;
	bool hw_fence_init;
	/* A canceled job's hardware fence waits for the job ahead of it. */
	struct dma_fence_cb cancel_cb;
	/* On npu_device.job_free_list once the scheduler is done with it. */
	struct llist_node free_node;
};

static inline struct npu_job *to_npu_job(struct drm_sched_job *sched_job)
{
	return container_of(sched_job, struct npu_job, base);
}

int npu_job_queues_init(struct npu_device *ndev);
void npu_job_queues_fini(struct npu_device *ndev);
void npu_job_entities_fini(struct npu_context *ctx);
void npu_exec_ctx_put(struct npu_exec_ctx *ectx);
u32 npu_exec_ctx_count(struct npu_context *ctx);
void npu_queue_process(struct npu_queue *q);
void npu_queue_abort_inflight(struct npu_queue *q, int error);
void npu_queue_retire(struct npu_queue *q, const struct npu_active *act);
void npu_queue_rerun(struct npu_queue *q, int error);
bool npu_job_is_hung(struct npu_job *job);
void npu_job_drain(struct npu_device *ndev);
void npu_job_gates_fail(struct npu_device *ndev);
void npu_job_timeout_reinsert(struct npu_job *job);
void npu_job_free_work(struct work_struct *work);
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
int npu_ioctl_context_create(struct drm_device *drm, void *data,
			     struct drm_file *file);
int npu_ioctl_context_destroy(struct drm_device *drm, void *data,
			      struct drm_file *file);
void npu_job_print_ctx(struct seq_file *m, struct npu_context *ctx);

#endif /* __NPU_JOB_H__ */
