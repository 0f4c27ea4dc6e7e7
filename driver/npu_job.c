// SPDX-License-Identifier: GPL-2.0-only
/*
 * Jobs: the submit path, one drm_sched scheduler per hardware queue with
 * one entity per context, the rings and completion records, JOB_INFO.
 */

#include <linux/dma-fence-array.h>
#include <linux/dma-fence-chain.h>
#include <linux/dma-mapping.h>
#include <linux/irq_work.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_auth.h>
#include <drm/drm_drv.h>
#include <drm/drm_exec.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_syncobj.h>
#include <drm/drm_utils.h>

#include "npu_drv.h"
#include "npu_gem.h"
#include "npu_trace.h"

static const char *npu_fence_driver_name(struct dma_fence *fence)
{
	return NPU_DRIVER_NAME;
}

static const char *npu_fence_timeline_name(struct dma_fence *fence)
{
	struct npu_queue *q = container_of(fence->lock, struct npu_queue,
					   fence_lock);

	return q->name;
}

static const struct dma_fence_ops npu_fence_ops = {
	.get_driver_name = npu_fence_driver_name,
	.get_timeline_name = npu_fence_timeline_name,
};

static const char *npu_cancel_fence_timeline_name(struct dma_fence *fence)
{
	return "canceled";
}

/* A canceled job's fence (npu_job_run_cancel()): its own lock and timeline. */
static const struct dma_fence_ops npu_cancel_fence_ops = {
	.get_driver_name = npu_fence_driver_name,
	.get_timeline_name = npu_cancel_fence_timeline_name,
};

static void npu_job_rec_release(struct kref *ref)
{
	kfree(container_of(ref, struct npu_job_rec, ref));
}

void npu_job_rec_put(struct npu_job_rec *rec)
{
	kref_put(&rec->ref, npu_job_rec_release);
}

/*
 * A job that will not run to its end: its record says CANCELED. This comes
 * before its fence signals, since whoever waits on the fence (a syncobj, a
 * dependent job) then reads the record through JOB_INFO.
 */
static void npu_job_rec_cancel(struct npu_job *job)
{
	spin_lock(&job->ctx->rec_lock);
	if (job->rec->state != DRM_NPU_JOB_DONE) {
		job->rec->state = DRM_NPU_JOB_CANCELED;
		if (!job->rec->status)
			job->rec->status = NPU_JOB_ERR_ABORTED;
	}
	spin_unlock(&job->ctx->rec_lock);
	wake_up_all(&job->ctx->job_wq);
}

/* Fail @job's hardware fence with @error, its record first. */
static void npu_job_fence_fail(struct npu_job *job, int error)
{
	npu_job_rec_cancel(job);
	dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal(job->hw_fence);
}

/* Everything a job holds; used by free_job and by failed submits. */
static void npu_job_release(struct npu_job *job)
{
	struct npu_device *ndev = job->ndev;
	u32 i;

	if (job->rec) {
		npu_job_rec_cancel(job);
		npu_job_rec_put(job->rec);
	}
	/* The mappings go (if nothing else uses them) once the job is done. */
	for (i = 0; i < job->maps_held; i++)
		npu_bo_map_put(job->bos[i], job->ctx);
	for (i = 0; i < job->bo_count; i++)
		drm_gem_object_put(job->bos[i]);
	for (i = 0; i < job->dep_count; i++)
		dma_fence_put(job->deps[i]);
	kvfree(job->deps);
	for (i = 0; i < job->foreign_count; i++)
		dma_fence_put(job->foreign[i]);
	kfree(job->foreign);
	kvfree(job->bos);
	kvfree(job->access);
	if (job->hw_fence_init)
		dma_fence_put(job->hw_fence);
	else
		kfree(job->hw_fence);
	if (job->ectx)
		npu_exec_ctx_put(job->ectx);
	npu_context_put(job->ctx);
	kfree(job);
	/*
	 * Last, and never the last reference to the device: unbind waits
	 * for job_count to reach zero while it still holds its own.
	 */
	if (atomic_dec_and_test(&ndev->job_count))
		wake_up_all(&ndev->job_free_wq);
}

/* @c is a copy of the device's (little-endian) completion record. */
static void npu_job_complete(struct npu_queue *q, struct npu_job *job,
			     const struct npu_completion *c)
{
	struct npu_device *ndev = q->ndev;
	struct npu_job_rec *rec = job->rec;
	struct npu_job_rec res = {
		.status = le32_to_cpu(c->status),
		.error_offset = le32_to_cpu(c->error_offset),
		.fault_addr = le64_to_cpu(c->fault_addr),
		.start_ns = le64_to_cpu(c->start_ns),
		.end_ns = le64_to_cpu(c->end_ns),
		.cycles = le64_to_cpu(c->cycles),
		.macs = le64_to_cpu(c->macs),
	};

	spin_lock(&job->ctx->rec_lock);
	rec->state = DRM_NPU_JOB_DONE;
	rec->status = res.status;
	rec->error_offset = res.error_offset;
	rec->fault_addr = res.fault_addr;
	rec->start_ns = res.start_ns;
	rec->end_ns = res.end_ns;
	rec->cycles = res.cycles;
	rec->macs = res.macs;
	spin_unlock(&job->ctx->rec_lock);
	wake_up_all(&job->ctx->job_wq);

	if (res.end_ns > res.start_ns)
		atomic64_add(res.end_ns - res.start_ns,
			     &job->ctx->engine_ns[q->id]);
	atomic64_add(res.cycles, &job->ctx->cycles[q->id]);
	trace_npu_job_complete(job, &res);

	if (res.status != NPU_JOB_OK) {
		atomic64_inc(&ndev->jobs_failed);
		npu_dbg(ndev, JOB, "ctx %u job %llu failed: %s at offset %u (fault %#llx)\n",
			job->ctx->id, rec->id, npu_job_status_str(res.status),
			res.error_offset, res.fault_addr);
		dma_fence_set_error(job->hw_fence, -EIO);
	}
	atomic64_inc(&ndev->jobs_completed);
	/* The job may be freed once this returns. */
	dma_fence_signal(job->hw_fence);
}

/* Consume the completion records the device wrote, in ring order. */
void npu_queue_process(struct npu_queue *q)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	while (q->head != q->tail) {
		u32 slot = q->head % NPU_RING_ENTRIES;
		struct npu_completion *c = &q->compl[slot];
		struct npu_completion rec;
		struct npu_job *job;

		if (READ_ONCE(c->fence) != cpu_to_le32(NPU_COMPLETION_FENCE))
			break;
		dma_rmb(); /* the fence is written last */
		rec = *c;
		WRITE_ONCE(c->fence, 0);

		job = q->slots[slot];
		q->slots[slot] = NULL;
		q->head++;
		if (WARN_ON_ONCE(!job))
			continue;
		if (le64_to_cpu(rec.seqno) != job->hw_fence->seqno)
			drm_warn_once(&q->ndev->drm, "queue %u: seqno %llu, expected %llu\n",
				      q->id, le64_to_cpu(rec.seqno),
				      job->hw_fence->seqno);
		npu_job_complete(q, job, &rec);
	}
	spin_unlock_irqrestore(&q->lock, flags);
}

/* After a device reset or unplug: the hardware forgot these jobs. */
void npu_queue_abort_inflight(struct npu_queue *q, int error)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	while (q->head != q->tail) {
		u32 slot = q->head % NPU_RING_ENTRIES;
		struct npu_job *job = q->slots[slot];

		q->slots[slot] = NULL;
		q->head++;
		if (!job)
			continue;
		npu_job_fence_fail(job, error);
	}
	q->head = 0;
	q->tail = 0;
	spin_unlock_irqrestore(&q->lock, flags);
}

/* A reset stopped @job on the engine: it ended there, and is not re-run. */
static void npu_job_reset_aborted(struct npu_job *job)
{
	struct npu_job_rec *rec = job->rec;

	spin_lock(&job->ctx->rec_lock);
	rec->state = DRM_NPU_JOB_DONE;
	rec->status = NPU_JOB_ERR_ABORTED;
	spin_unlock(&job->ctx->rec_lock);
	wake_up_all(&job->ctx->job_wq);
	atomic64_inc(&job->ndev->jobs_failed);
	dma_fence_set_error(job->hw_fence, -EIO);
	dma_fence_signal(job->hw_fence);
}

/*
 * After a device reset: consume the records written before it, then sort
 * the jobs left on the ring. The one the engine was executing (@act) ended
 * with the reset: it fails (DONE, NPU_JOB_ERR_ABORTED, fence -EIO) and is
 * never run again, as nothing says what it already wrote. The device runs
 * one job at a time, so every other one had not started: they run again,
 * once, in their order (q->rerun), unless their context is banned
 * (-ECANCELED). A device that could not be read may have started any.
 */
void npu_queue_retire(struct npu_queue *q, const struct npu_active *act)
{
	unsigned long flags;

	npu_queue_process(q);
	spin_lock_irqsave(&q->lock, flags);
	q->rerun_count = 0;
	while (q->head != q->tail) {
		u32 slot = q->head % NPU_RING_ENTRIES;
		struct npu_job *job = q->slots[slot];
		bool started;

		q->slots[slot] = NULL;
		q->head++;
		if (!job)
			continue;
		started = !act->known ||
			  (act->valid && act->queue == q->id &&
			   act->seqno == job->hw_fence->seqno);
		if (atomic_read(&job->ectx->banned))
			npu_job_fence_fail(job, -ECANCELED);
		else if (started)
			npu_job_reset_aborted(job);
		else
			q->rerun[q->rerun_count++] = job;
	}
	q->head = 0;
	q->tail = 0;
	spin_unlock_irqrestore(&q->lock, flags);
}

void npu_queue_hw_init(struct npu_queue *q)
{
	struct npu_device *ndev = q->ndev;

	memset(q->compl, 0, NPU_RING_ENTRIES * sizeof(*q->compl));
	npu_write(ndev, NPU_REG_QUEUE(q->id, NPU_QREG_RING_BASE_LO),
		  lower_32_bits(q->ring_dma));
	npu_write(ndev, NPU_REG_QUEUE(q->id, NPU_QREG_RING_BASE_HI),
		  upper_32_bits(q->ring_dma));
	npu_write(ndev, NPU_REG_QUEUE(q->id, NPU_QREG_RING_SIZE),
		  NPU_RING_ENTRIES);
	npu_write(ndev, NPU_REG_QUEUE(q->id, NPU_QREG_CTRL), NPU_QUEUE_ENABLE);
}

/* Write @job's descriptor at the ring's tail; q->lock held. */
static u32 npu_queue_push_locked(struct npu_queue *q, struct npu_job *job)
{
	u32 slot = q->tail % NPU_RING_ENTRIES;
	struct npu_job_desc *desc = &q->ring[slot];

	WRITE_ONCE(q->compl[slot].fence, 0);
	memset(desc, 0, sizeof(*desc));
	desc->context = cpu_to_le32(job->ctx->id);
	desc->cmd_va = cpu_to_le64(job->cmd_va);
	desc->cmd_size = cpu_to_le32(job->cmd_size);
	desc->seqno = cpu_to_le64(job->hw_fence->seqno);
	desc->completion_addr = cpu_to_le64(q->compl_dma +
					    slot * sizeof(struct npu_completion));
	q->slots[slot] = job;
	q->tail++;
	return slot;
}

static void npu_queue_doorbell_locked(struct npu_queue *q)
{
	/* writel orders the descriptor writes before the doorbell. */
	npu_write(q->ndev, NPU_REG_QUEUE(q->id, NPU_QREG_TAIL), q->tail);
	npu_write(q->ndev, NPU_REG_QUEUE(q->id, NPU_QREG_DOORBELL), 1);
}

/*
 * After npu_queue_retire() and a successful re-boot (@error 0): put the
 * jobs that had not started back on the ring, with their own hardware
 * fences and seqnos. With an @error the device is unusable: they fail.
 */
void npu_queue_rerun(struct npu_queue *q, int error)
{
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&q->lock, flags);
	for (i = 0; i < q->rerun_count; i++) {
		struct npu_job *job = q->rerun[i];

		q->rerun[i] = NULL;
		if (error) {
			npu_job_fence_fail(job, error);
			continue;
		}
		npu_queue_push_locked(q, job);
	}
	if (!error && q->rerun_count)
		npu_queue_doorbell_locked(q);
	q->rerun_count = 0;
	spin_unlock_irqrestore(&q->lock, flags);
}

static void npu_job_cancel_cb(struct dma_fence *prev, struct dma_fence_cb *cb)
{
	struct npu_job *job = container_of(cb, struct npu_job, cancel_cb);
	struct dma_fence *fence = job->hw_fence;

	dma_fence_signal(fence);
	dma_fence_put(fence);
}

/*
 * run_job does not run @job: its finished fence fails with @error. Not
 * at once, though: an earlier job of the same queue may still be on the
 * ring, and this job's fence may have replaced that job's in a shared
 * BO's reservation (same scheduler context), so signaling first would
 * tell implicit sync the BO is idle mid-write. The hardware fence, unused
 * here, becomes a fence of the queue's canceled timeline that signals
 * with @error right after the last job on the ring. It is signaled from
 * that job's fence callback, under that fence's lock: it has a lock of
 * its own (cancel_lock). The record says CANCELED before either.
 */
static struct dma_fence *npu_job_run_cancel(struct npu_job *job, int error)
{
	struct npu_queue *q = job->queue;
	struct dma_fence *prev = NULL;
	unsigned long flags;

	npu_job_rec_cancel(job);
	spin_lock_irqsave(&q->lock, flags);
	if (q->tail != q->head) {
		struct npu_job *last = q->slots[(q->tail - 1) % NPU_RING_ENTRIES];

		if (last)
			prev = dma_fence_get(last->hw_fence);
	}
	if (prev) {
		dma_fence_init(job->hw_fence, &npu_cancel_fence_ops, &q->cancel_lock,
			       q->cancel_context, ++q->cancel_seqno);
		job->hw_fence_init = true;
	}
	spin_unlock_irqrestore(&q->lock, flags);
	if (!prev)
		return ERR_PTR(error);
	dma_fence_set_error(job->hw_fence, error);
	dma_fence_get(job->hw_fence);	/* the callback's */
	if (dma_fence_add_callback(prev, &job->cancel_cb, npu_job_cancel_cb))
		npu_job_cancel_cb(prev, &job->cancel_cb);
	dma_fence_put(prev);
	return dma_fence_get(job->hw_fence);
}

static struct dma_fence *npu_job_run_signalling(struct npu_job *job);

static struct dma_fence *npu_job_run(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);
	bool cookie;
	struct dma_fence *fence;

	cookie = dma_fence_begin_signalling();
	fence = npu_job_run_signalling(job);
	dma_fence_end_signalling(cookie);
	return fence;
}

/*
 * run_job, a fence-signalling section: the scheduler's run worker, which
 * a reset waits for (drm_sched_wqueue_stop()). Hence no reset_lock: the
 * reset stops this before it touches the rings.
 */
static struct dma_fence *npu_job_run_signalling(struct npu_job *job)
{
	struct drm_sched_job *sched_job = &job->base;
	struct npu_device *ndev = job->ndev;
	struct npu_queue *q = job->queue;
	unsigned long flags;
	u32 slot, i;
	int idx;

	if (unlikely(sched_job->s_fence->finished.error))
		return npu_job_run_cancel(job, sched_job->s_fence->finished.error);
	if (atomic_read(&job->ectx->banned))
		return npu_job_run_cancel(job, -ECANCELED);
	/* Dependencies have signaled by now; one that failed cancels this job. */
	for (i = 0; i < job->dep_count; i++)
		if (dma_fence_get_status(job->deps[i]) < 0)
			return npu_job_run_cancel(job, -ECANCELED);
	if (!drm_dev_enter(&ndev->drm, &idx))
		return npu_job_run_cancel(job, -ENODEV);
	if (!READ_ONCE(ndev->ready)) {
		drm_dev_exit(idx);
		return npu_job_run_cancel(job, -EIO);
	}

	spin_lock_irqsave(&q->lock, flags);
	if (WARN_ON_ONCE(q->tail - q->head >= NPU_RING_ENTRIES)) {
		spin_unlock_irqrestore(&q->lock, flags);
		drm_dev_exit(idx);
		return npu_job_run_cancel(job, -ENOSPC);
	}
	/* Allocated at submit: run_job never fails for want of memory. */
	dma_fence_init(job->hw_fence, &npu_fence_ops, &q->fence_lock,
		       q->fence_context, ++q->fence_seqno);
	job->hw_fence_init = true;
	slot = npu_queue_push_locked(q, job);
	/* Fault injection: a stream address that no context maps. */
	if (npu_inject(ndev, NPU_INJECT_MMU_FAULT))
		q->ring[slot].cmd_va = 0;

	spin_lock(&job->ctx->rec_lock);
	job->rec->state = DRM_NPU_JOB_RUNNING;
	spin_unlock(&job->ctx->rec_lock);
	trace_npu_job_run(job, job->hw_fence->seqno, slot);

	if (npu_inject(ndev, NPU_INJECT_HANG))
		npu_write(ndev, NPU_REG_DEBUG, NPU_DEBUG_HANG_NEXT);
	npu_queue_doorbell_locked(q);
	spin_unlock_irqrestore(&q->lock, flags);

	drm_dev_exit(idx);
	return dma_fence_get(job->hw_fence);
}

/*
 * Is @job hung: on the engine (NPU_REG_ACTIVE) for job_timeout_ms or more?
 * A job that waits behind another queue's work, or has only just started,
 * is not: its queue's timeout re-arms instead of blaming it. A queue the
 * device stopped on an error, or a device that reads all-ones, needs a
 * reset either way.
 */
bool npu_job_is_hung(struct npu_job *job)
{
	struct npu_device *ndev = job->ndev;
	struct npu_queue *q = job->queue;
	u64 seqno, start, now;
	u32 active;

	active = npu_read(ndev, NPU_REG_ACTIVE);
	if (active == ~0u ||
	    npu_read(ndev, NPU_REG_QUEUE(q->id, NPU_QREG_STATUS)) != NPU_QUEUE_OK)
		return true;
	if (!(active & NPU_ACTIVE_VALID) ||
	    (active & NPU_ACTIVE_QUEUE_MASK) != q->id)
		return false;
	seqno = npu_read64(ndev, NPU_REG_ACTIVE_SEQ_LO);
	if (!job->hw_fence_init || seqno != job->hw_fence->seqno)
		return false;
	start = npu_read64(ndev, NPU_REG_ACTIVE_START_LO);
	now = npu_device_time_ns(ndev);
	return now >= start &&
	       now - start >= (u64)npu_job_timeout_ms * NSEC_PER_MSEC;
}

/*
 * Put @job back at the head of its pending list, where
 * drm_sched_job_timedout() took it from; the core re-arms the timer when
 * the handler returns. 6.17's DRM_GPU_SCHED_STAT_NO_HANG does this in
 * the core; 6.12 has no such status, so the driver does it, as etnaviv
 * does. Neither drm_sched_stop() (it frees finished jobs from inside the
 * handler and drops the hardware fences of the others, which
 * drm_sched_start() then cancels) nor a poke at s_fence->parent is
 * needed. A job that ended meanwhile was not freed (it was off the
 * list): the handler stopped the schedulers first and starts them at
 * its end (npu_device_start_scheds()), which queues their run and free
 * work. Called with reset_lock held for writing.
 */
void npu_job_timeout_reinsert(struct npu_job *job)
{
	struct drm_gpu_scheduler *sched = &job->queue->sched;

	lockdep_assert_held_write(&job->ndev->reset_lock);
	spin_lock(&sched->job_list_lock);
	list_add(&job->base.list, &sched->pending_list);
	spin_unlock(&sched->job_list_lock);
}

/*
 * A fence-signalling section (npu_device_reset_begin()): lockdep checks
 * that nothing here allocates memory or takes a lock that is held
 * elsewhere across an allocation or a fence wait. reset_lock is taken
 * for writing; its readers only do MMIO. The schedulers stop before the
 * section begins: stopping waits for a run_job in progress, which is a
 * signalling section of its own, so waiting for it inside one is the
 * inversion lockdep reports (make soak's fault campaign found it).
 */
static enum drm_gpu_sched_stat npu_job_timedout(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);
	struct npu_device *ndev = job->ndev;
	enum drm_gpu_sched_stat stat = DRM_GPU_SCHED_STAT_NOMINAL;
	bool cookie;
	int idx;

	/* Before reset_lock, and started again under it at the end. */
	npu_device_stop_scheds(ndev);
	cookie = npu_device_reset_begin(ndev);
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		/* Unplugged: the job ends when unbind fails its fence. */
		npu_job_timeout_reinsert(job);
		stat = DRM_GPU_SCHED_STAT_ENODEV;
		goto out;
	}
	/* A PCI reset or a shutdown holds the schedulers: theirs to handle. */
	if (!npu_device_may_recover(ndev)) {
		npu_job_timeout_reinsert(job);
		goto out_exit;
	}

	npu_queue_process(job->queue);
	if (!job->hw_fence_init || job->hw_fence->ops != &npu_fence_ops ||
	    dma_fence_is_signaled(job->hw_fence)) {
		/*
		 * Ended, or never on the device (canceled in run_job, it
		 * waits for the job ahead): not hung itself.
		 */
		npu_job_timeout_reinsert(job);
	} else if (ndev->ready && !npu_job_is_hung(job)) {
		npu_dbg(ndev, RESET, "ctx %u job %llu waits, not hung\n",
			job->ctx->id, job->rec->id);
		npu_job_timeout_reinsert(job);
	} else {
		npu_device_recover(ndev, job);
	}
out_exit:
	drm_dev_exit(idx);
out:
	npu_device_start_scheds(ndev);
	npu_device_reset_end(ndev, cookie);
	return stat;
}

/*
 * free_job may run inside a fence-signalling section (the scheduler's
 * free worker, which a reset waits for; a killed entity's callback), and
 * freeing a job takes bo->lock, mmu.lock, ctx_lock and dma_resv locks
 * that are held elsewhere across GFP_KERNEL allocations, and reset_lock
 * for reading (TLB invalidation). So free_job only drops the scheduler's
 * part and hands the rest to npu_job_free_work().
 */
static void npu_job_free(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);
	struct npu_device *ndev = job->ndev;

	drm_sched_job_cleanup(sched_job);
	if (llist_add(&job->free_node, &ndev->job_free_list))
		queue_work(system_unbound_wq, &ndev->job_free_work);
}

void npu_job_free_work(struct work_struct *work)
{
	struct npu_device *ndev = container_of(work, struct npu_device,
					       job_free_work);
	struct npu_job *job, *next;
	struct llist_node *list;

	list = llist_del_all(&ndev->job_free_list);
	llist_for_each_entry_safe(job, next, list, free_node) {
		atomic_dec(&job->ctx->jobs_inflight);
		npu_job_release(job);
	}
}

/*
 * Unbind, after drm_dev_unplug() and the device's stop: every job ends
 * (run_job and the hardware fences fail with -ENODEV), so wait until
 * all are freed. The schedulers are torn down after this, from unbind,
 * never from a free_job on their own workqueue.
 */
void npu_job_drain(struct npu_device *ndev)
{
	while (!wait_event_timeout(ndev->job_free_wq,
				   !atomic_read(&ndev->job_count), 10 * HZ))
		drm_warn(&ndev->drm, "unbind waits for %d jobs\n",
			 atomic_read(&ndev->job_count));
	/* The last job's free may still be returning from the worker. */
	flush_work(&ndev->job_free_work);
}

static const struct drm_sched_backend_ops npu_sched_ops = {
	.run_job = npu_job_run,
	.timedout_job = npu_job_timedout,
	.free_job = npu_job_free,
};

int npu_job_queues_init(struct npu_device *ndev)
{
	struct device *dev = ndev->drm.dev;
	int q, ret;

	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		struct npu_queue *queue = &ndev->queues[q];

		queue->ndev = ndev;
		queue->id = q;
		snprintf(queue->name, sizeof(queue->name), "npu-q%d", q);
		spin_lock_init(&queue->lock);
		spin_lock_init(&queue->fence_lock);
		spin_lock_init(&queue->cancel_lock);
		queue->fence_context = dma_fence_context_alloc(1);
		queue->cancel_context = dma_fence_context_alloc(1);

		queue->ring = dmam_alloc_coherent(dev, NPU_RING_ENTRIES *
						  sizeof(*queue->ring),
						  &queue->ring_dma, GFP_KERNEL);
		queue->compl = dmam_alloc_coherent(dev, NPU_RING_ENTRIES *
						   sizeof(*queue->compl),
						   &queue->compl_dma, GFP_KERNEL);
		if (!queue->ring || !queue->compl)
			return -ENOMEM;

		/* Credits = ring slots: the scheduler never overfills a ring. */
		ret = drm_sched_init(&queue->sched, &npu_sched_ops, NULL,
				     DRM_SCHED_PRIORITY_COUNT, NPU_RING_ENTRIES,
				     0, msecs_to_jiffies(npu_job_timeout_ms),
				     ndev->reset_wq, NULL, queue->name, dev);
		if (ret) {
			drm_err(&ndev->drm, "cannot init scheduler %d: %d\n",
				q, ret);
			return ret;
		}
		queue->sched_ready = true;
	}
	return 0;
}

void npu_job_queues_fini(struct npu_device *ndev)
{
	int q;

	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		if (!ndev->queues[q].sched_ready)
			continue;
		drm_sched_fini(&ndev->queues[q].sched);
		ndev->queues[q].sched_ready = false;
	}
}

/*
 * Submits look their context up inside this SRCU section; destroy takes
 * it out of the file's table, waits for them, then ends its entity (as
 * amdxdna's hwctx_srcu).
 */
DEFINE_STATIC_SRCU(npu_exec_ctx_srcu);

static void npu_exec_ctx_release(struct kref *ref)
{
	struct npu_exec_ctx *ectx = container_of(ref, struct npu_exec_ctx, ref);

	npu_context_put(ectx->ctx);
	kfree(ectx);
}

void npu_exec_ctx_put(struct npu_exec_ctx *ectx)
{
	kref_put(&ectx->ref, npu_exec_ctx_release);
}

u32 npu_exec_ctx_count(struct npu_context *ctx)
{
	struct npu_exec_ctx *ectx;
	unsigned long id;
	u32 n = 0;

	xa_lock(&ctx->exec_ctxs);
	xa_for_each(&ctx->exec_ctxs, id, ectx)
		n++;
	xa_unlock(&ctx->exec_ctxs);
	return n;
}

/*
 * HIGH takes queue 0, which has strict priority over queue 1: whoever
 * floods it delays everyone else's jobs, so it needs a privilege (as
 * panthor's group_priority_permit()). LOW shares queue 1 with NORMAL
 * at a lower drm_sched priority.
 */
static int npu_exec_ctx_priority(struct drm_file *file, u32 priority,
				 u32 *queue, enum drm_sched_priority *sched_prio)
{
	switch (priority) {
	case DRM_NPU_CONTEXT_PRIORITY_LOW:
		*queue = NPU_QUEUE_NORMAL;
		*sched_prio = DRM_SCHED_PRIORITY_LOW;
		return 0;
	case DRM_NPU_CONTEXT_PRIORITY_NORMAL:
		*queue = NPU_QUEUE_NORMAL;
		*sched_prio = DRM_SCHED_PRIORITY_NORMAL;
		return 0;
	case DRM_NPU_CONTEXT_PRIORITY_HIGH:
		if (!capable(CAP_SYS_NICE) && !drm_is_current_master(file))
			return -EACCES;
		*queue = NPU_QUEUE_HIGH_PRIORITY;
		*sched_prio = DRM_SCHED_PRIORITY_HIGH;
		return 0;
	default:
		return -EINVAL;
	}
}

int npu_ioctl_context_create(struct drm_device *drm, void *data,
			     struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_context_create *args = data;
	enum drm_sched_priority sched_prio;
	struct drm_gpu_scheduler *sched;
	struct npu_exec_ctx *ectx;
	struct npu_context *ctx;
	u32 queue, id;
	int ret, idx;

	if (args->flags || args->pad)
		return -EINVAL;
	ret = npu_exec_ctx_priority(file, args->priority, &queue, &sched_prio);
	if (ret)
		return ret;
	ctx = npu_file_ctx(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);

	ectx = kzalloc(sizeof(*ectx), GFP_KERNEL_ACCOUNT);
	if (!ectx)
		return -ENOMEM;
	kref_init(&ectx->ref);
	ectx->ctx = npu_context_get(ctx);
	ectx->priority = args->priority;
	ectx->queue = queue;

	/* The schedulers: not after unbind. */
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto err_put;
	}
	mutex_lock(&ctx->exec_lock);
	if (ctx->exec_closed) {
		ret = -ENODEV;
		goto err_unlock;
	}
	sched = &ndev->queues[queue].sched;
	ret = drm_sched_entity_init(&ectx->entity, sched_prio, &sched, 1, NULL);
	if (ret)
		goto err_unlock;
	ectx->entity_ready = true;
	/* Ids from 1; a full table is this file's limit, not the device's. */
	/* xa_alloc() sets the id before a lookup can find the entry. */
	ret = xa_alloc(&ctx->exec_ctxs, &ectx->id, ectx,
		       XA_LIMIT(1, NPU_MAX_FILE_CONTEXTS), GFP_KERNEL_ACCOUNT);
	if (ret) {
		drm_sched_entity_destroy(&ectx->entity);
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_unlock;
	}
	id = ectx->id;
	mutex_unlock(&ctx->exec_lock);
	drm_dev_exit(idx);
	args->context_id = id;
	npu_dbg(ndev, JOB, "vm %u: context %u priority %u on queue %u\n",
		ctx->id, id, args->priority, queue);
	return 0;

err_unlock:
	mutex_unlock(&ctx->exec_lock);
	drm_dev_exit(idx);
err_put:
	npu_exec_ctx_put(ectx);
	return ret;
}

/*
 * Out of the table (no new submit finds it), submits in flight done,
 * then the entity: its queued jobs go to the device first (killable).
 * exec_lock held.
 */
static void npu_exec_ctx_end(struct npu_exec_ctx *ectx)
{
	synchronize_srcu(&npu_exec_ctx_srcu);
	if (ectx->entity_ready) {
		drm_sched_entity_destroy(&ectx->entity);
		ectx->entity_ready = false;
	}
	npu_exec_ctx_put(ectx);
}

int npu_ioctl_context_destroy(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct drm_npu_context_destroy *args = data;
	struct npu_exec_ctx *ectx;
	struct npu_context *ctx;

	if (args->pad)
		return -EINVAL;
	ctx = npu_file_ctx_peek(file);
	if (!ctx)
		return -ENOENT;
	mutex_lock(&ctx->exec_lock);
	ectx = xa_erase(&ctx->exec_ctxs, args->context_id);
	if (ectx)
		npu_exec_ctx_end(ectx);
	mutex_unlock(&ctx->exec_lock);
	return ectx ? 0 : -ENOENT;
}

/* From postclose or unbind, whichever comes first: once. */
void npu_job_entities_fini(struct npu_context *ctx)
{
	struct npu_exec_ctx *ectx;
	unsigned long id;

	mutex_lock(&ctx->exec_lock);
	ctx->exec_closed = true;
	xa_for_each(&ctx->exec_ctxs, id, ectx) {
		xa_erase(&ctx->exec_ctxs, id);
		npu_exec_ctx_end(ectx);
	}
	mutex_unlock(&ctx->exec_lock);
}

/*
 * One entry per BO, whatever the list holds: a BO listed twice (or the
 * command buffer listed again) gets its access bits merged, so it is
 * locked once, reserves one fence slot and gets exactly one fence added.
 */
static int npu_job_add_bo(struct npu_job *job, struct drm_file *file,
			  u32 handle, u32 access)
{
	struct drm_gem_object *obj = drm_gem_object_lookup(file, handle);
	u32 i;

	if (!obj)
		return -ENOENT;
	for (i = 0; i < job->bo_count; i++) {
		if (job->bos[i] == obj) {
			job->access[i] |= access;
			drm_gem_object_put(obj);
			return 0;
		}
	}
	job->bos[job->bo_count] = obj;
	job->access[job->bo_count] = access;
	job->bo_count++;
	return 0;
}

/*
 * What a submit reads from user memory, copied and checked before the
 * device is entered and before the job counts: a copy may fault and wait
 * for as long as user space likes (userfaultfd, a FUSE mmap), and neither
 * unbind (drm_dev_unplug's synchronize_srcu, global to all DRM devices)
 * nor npu_job_drain may wait for it.
 */
struct npu_submit_user {
	struct drm_npu_bo_ref *refs;
	struct drm_npu_sync *syncs;
};

static void npu_submit_user_free(struct npu_submit_user *u)
{
	kvfree(u->refs);
	kvfree(u->syncs);
}

static int npu_submit_user_copy(const struct drm_npu_submit *args,
				struct npu_submit_user *u)
{
	u32 i;
	int ret;

	memset(u, 0, sizeof(*u));
	if (args->bo_ref_count) {
		u->refs = kvmalloc_array(args->bo_ref_count, sizeof(*u->refs),
					 GFP_KERNEL_ACCOUNT);
		if (!u->refs)
			return -ENOMEM;
	}
	for (i = 0; i < args->bo_ref_count; i++) {
		u64 uptr = args->bo_refs + (u64)i * args->bo_ref_size;
		struct drm_npu_bo_ref *ref = &u->refs[i];

		ret = copy_struct_from_user(ref, sizeof(*ref),
					    u64_to_user_ptr(uptr),
					    args->bo_ref_size);
		if (ret) {
			ret = ret == -E2BIG ? -EINVAL : ret;
			goto err;
		}
		if (!ref->access || ref->access & ~(DRM_NPU_BO_ACCESS_READ |
						    DRM_NPU_BO_ACCESS_WRITE)) {
			ret = -EINVAL;
			goto err;
		}
	}
	if (args->in_sync_count) {
		u->syncs = kvmalloc_array(args->in_sync_count, sizeof(*u->syncs),
					  GFP_KERNEL_ACCOUNT);
		if (!u->syncs) {
			ret = -ENOMEM;
			goto err;
		}
	}
	for (i = 0; i < args->in_sync_count; i++) {
		u64 uptr = args->in_syncs + (u64)i * args->in_sync_size;

		ret = copy_struct_from_user(&u->syncs[i], sizeof(u->syncs[i]),
					    u64_to_user_ptr(uptr),
					    args->in_sync_size);
		if (ret) {
			ret = ret == -E2BIG ? -EINVAL : ret;
			goto err;
		}
		if (u->syncs[i].flags) {
			ret = -EINVAL;
			goto err;
		}
	}
	return 0;
err:
	npu_submit_user_free(u);
	return ret;
}

static int npu_job_add_bo_refs(struct npu_job *job, struct drm_file *file,
			       const struct drm_npu_submit *args,
			       const struct npu_submit_user *u)
{
	u32 i;
	int ret;

	for (i = 0; i < args->bo_ref_count; i++) {
		ret = npu_job_add_bo(job, file, u->refs[i].handle,
				     u->refs[i].access);
		if (ret)
			return ret;
	}
	return 0;
}

static int npu_job_check_args(const struct drm_npu_submit *args)
{
	if (args->flags || args->reserved || args->out_sync.flags)
		return -EINVAL;
	if (!args->cmd_size || args->cmd_size % NPU_CS_ALIGN ||
	    args->cmd_offset % NPU_CS_ALIGN || args->cmd_size > NPU_CS_MAX_SIZE)
		return -EINVAL;
	if (args->bo_ref_count > DRM_NPU_MAX_BO_REFS ||
	    args->in_sync_count > DRM_NPU_MAX_SYNCS)
		return -E2BIG;
	if (args->bo_ref_count) {
		if (args->bo_ref_size < sizeof(struct drm_npu_bo_ref) ||
		    args->bo_ref_size > NPU_MAX_BO_REF_SIZE)
			return -EINVAL;
		if (!args->bo_refs)
			return -EFAULT;
		/* A size rule only: the pointers may have any alignment. */
		if (args->bo_ref_size % 8)
			return -EINVAL;
	}
	if (args->in_sync_count) {
		if (args->in_sync_size < sizeof(struct drm_npu_sync) ||
		    args->in_sync_size > NPU_MAX_BO_REF_SIZE ||
		    args->in_sync_size % 8)
			return -EINVAL;
		if (!args->in_syncs)
			return -EFAULT;
	}
	if (!args->out_sync.handle && args->out_sync.point)
		return -EINVAL;
	return 0;
}

/*
 * Foreign dependencies. drm_sched waits for every dependency of a job
 * before it runs it, and also before it frees a job whose entity was
 * killed (a closed file), so a dependency that never signals would keep
 * the job, and with it unbind's drain, for ever. This driver's own fences
 * always signal (completion, reset, ban, unplug); another driver's need
 * not (sw_sync's, by design). So a job's foreign fences (in-syncs and
 * implicit fences that are not this device's scheduler fences) are
 * gathered behind one gate fence of the driver's, which signals once they
 * all have, with the first error, or with -ENODEV when unbind fails every
 * gate still waiting (npu_job_gates_fail()).
 */
struct npu_gate_cb {
	struct dma_fence_cb cb;
	struct dma_fence *fence;
	struct npu_job_gate *gate;
};

struct npu_job_gate {
	struct dma_fence base;
	spinlock_t lock;		/* the fence's */
	struct npu_device *ndev;
	/* On ndev->gates while waiting; the list holds a reference. */
	struct list_head node;
	struct list_head fail_node;	/* npu_job_gates_fail() */
	/* Signals outside the foreign fence's lock (as dma_fence_array). */
	struct irq_work work;
	atomic_t pending;
	int error;
	u32 count;
	struct npu_gate_cb cbs[] __counted_by(count);
};

static const char *npu_gate_timeline_name(struct dma_fence *fence)
{
	return "foreign-deps";
}

static const struct dma_fence_ops npu_gate_fence_ops = {
	.get_driver_name = npu_fence_driver_name,
	.get_timeline_name = npu_gate_timeline_name,
};

static void npu_gate_signal_work(struct irq_work *work)
{
	struct npu_job_gate *gate = container_of(work, struct npu_job_gate, work);
	struct npu_device *ndev = gate->ndev;
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&ndev->gate_lock, flags);
	list_del_init(&gate->node);
	spin_unlock_irqrestore(&ndev->gate_lock, flags);
	if (gate->error)
		dma_fence_set_error(&gate->base, gate->error);
	dma_fence_signal(&gate->base);
	for (i = 0; i < gate->count; i++)
		dma_fence_put(gate->cbs[i].fence);
	dma_fence_put(&gate->base);	/* the list's */
}

static void npu_gate_dep_done(struct npu_job_gate *gate, int error)
{
	if (error)
		cmpxchg(&gate->error, 0, error);
	if (atomic_dec_and_test(&gate->pending))
		irq_work_queue(&gate->work);
}

static void npu_gate_cb(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct npu_gate_cb *gcb = container_of(cb, struct npu_gate_cb, cb);

	npu_gate_dep_done(gcb->gate, fence->error);
}

/*
 * Unbind, after drm_dev_unplug() (no submit makes new gates) and the
 * device's stop: every gate still waiting fails with -ENODEV, so that the
 * jobs behind it reach run_job (or their kill) and end.
 */
void npu_job_gates_fail(struct npu_device *ndev)
{
	struct npu_job_gate *gate, *tmp;
	unsigned long flags;
	LIST_HEAD(failed);
	u32 i;

	spin_lock_irqsave(&ndev->gate_lock, flags);
	list_for_each_entry(gate, &ndev->gates, node) {
		dma_fence_get(&gate->base);
		list_add_tail(&gate->fail_node, &failed);
		for (i = 0; i < gate->count; i++)
			if (dma_fence_remove_callback(gate->cbs[i].fence,
						      &gate->cbs[i].cb))
				npu_gate_dep_done(gate, -ENODEV);
	}
	spin_unlock_irqrestore(&ndev->gate_lock, flags);
	/* Their signalling work is this module's code: wait for it. */
	list_for_each_entry_safe(gate, tmp, &failed, fail_node) {
		irq_work_sync(&gate->work);
		dma_fence_put(&gate->base);
	}
}

/* Whether @fence is one of this device's scheduler fences. */
static bool npu_fence_is_ours(struct npu_device *ndev, struct dma_fence *fence)
{
	struct drm_sched_fence *s_fence = to_drm_sched_fence(fence);
	int q;

	if (!s_fence)
		return false;
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		if (s_fence->sched == &ndev->queues[q].sched)
			return true;
	return false;
}

/* Ours, or a timeline point whose every link contains one of ours. */
static bool npu_fence_chain_is_ours(struct npu_device *ndev,
				    struct dma_fence *fence)
{
	struct dma_fence *iter;

	if (!dma_fence_is_chain(fence))
		return npu_fence_is_ours(ndev, fence);
	dma_fence_chain_for_each(iter, fence) {
		if (!npu_fence_is_ours(ndev, dma_fence_chain_contained(iter))) {
			dma_fence_put(iter);
			return false;
		}
	}
	return true;
}

/* Keep @fence (its reference) for the gate: npu_job_gate_arm(). */
static int npu_job_add_foreign(struct npu_job *job, struct dma_fence *fence)
{
	u32 i;

	if (dma_fence_is_signaled(fence) && !fence->error) {
		dma_fence_put(fence);
		return 0;
	}
	for (i = 0; i < job->foreign_count; i++) {
		if (job->foreign[i] == fence) {
			dma_fence_put(fence);
			return 0;
		}
	}
	if (job->foreign_count == job->foreign_cap) {
		u32 cap = max(2 * job->foreign_cap, 4u);
		struct dma_fence **f;

		f = krealloc_array(job->foreign, cap, sizeof(*f),
				   GFP_KERNEL_ACCOUNT);
		if (!f) {
			dma_fence_put(fence);
			return -ENOMEM;
		}
		job->foreign = f;
		job->foreign_cap = cap;
	}
	job->foreign[job->foreign_count++] = fence;
	return 0;
}

/* The gate of @job's foreign fences, if any, as one dependency. */
static int npu_job_gate_arm(struct npu_job *job)
{
	struct npu_device *ndev = job->ndev;
	struct npu_job_gate *gate;
	unsigned long flags;
	u32 i, n = job->foreign_count;

	if (!n)
		return 0;
	gate = kzalloc(struct_size(gate, cbs, n), GFP_KERNEL_ACCOUNT);
	if (!gate)
		return -ENOMEM;
	gate->count = n;
	gate->ndev = ndev;
	spin_lock_init(&gate->lock);
	init_irq_work(&gate->work, npu_gate_signal_work);
	dma_fence_init(&gate->base, &npu_gate_fence_ops, &gate->lock,
		       dma_fence_context_alloc(1), 1);
	/* Armed callbacks + 1, so that none can end the gate before all are. */
	atomic_set(&gate->pending, n + 1);
	for (i = 0; i < n; i++) {
		gate->cbs[i].fence = job->foreign[i];
		gate->cbs[i].gate = gate;
	}
	job->foreign_count = 0;

	dma_fence_get(&gate->base);	/* the list's */
	spin_lock_irqsave(&ndev->gate_lock, flags);
	list_add_tail(&gate->node, &ndev->gates);
	for (i = 0; i < n; i++)
		if (dma_fence_add_callback(gate->cbs[i].fence, &gate->cbs[i].cb,
					   npu_gate_cb))
			npu_gate_dep_done(gate, gate->cbs[i].fence->error);
	spin_unlock_irqrestore(&ndev->gate_lock, flags);
	npu_gate_dep_done(gate, 0);
	return drm_sched_job_add_dependency(&job->base, &gate->base);
}

/* A dependency of @job (takes @fence's reference). */
static int npu_job_add_dep(struct npu_job *job, struct dma_fence *fence)
{
	if (npu_fence_chain_is_ours(job->ndev, fence))
		return drm_sched_job_add_dependency(&job->base, fence);
	return npu_job_add_foreign(job, fence);
}

/*
 * drm_sched waits on a dependency from the job's own queue only until it
 * is scheduled, and not at all on one from the same context and queue:
 * the ring keeps them in order. But a dependency that fails cancels this
 * job (npu_job_run), so this job must wait until it has finished. A
 * fence of a context of its own, signaled with it, makes the scheduler
 * do that. Takes @fence's reference.
 */
static struct dma_fence *npu_job_dep_until_finished(struct npu_job *job,
						    struct dma_fence *fence)
{
	struct drm_sched_fence *s_fence = to_drm_sched_fence(fence);
	struct dma_fence_array *array;
	struct dma_fence **fences;

	if (!s_fence || s_fence->sched != &job->queue->sched ||
	    dma_fence_is_signaled(fence))
		return fence;
	fences = kmalloc_array(1, sizeof(*fences), GFP_KERNEL_ACCOUNT);
	if (!fences)
		goto nomem;
	fences[0] = fence;
	/* On success the array owns fences[] and the reference. */
	array = dma_fence_array_create(1, fences, dma_fence_context_alloc(1),
				       1, false);
	if (array)
		return &array->base;
	kfree(fences);
nomem:
	dma_fence_put(fence);
	return ERR_PTR(-ENOMEM);
}

static int npu_job_add_in_syncs(struct npu_job *job, struct drm_file *file,
				const struct drm_npu_submit *args,
				const struct drm_npu_sync *syncs)
{
	struct dma_fence *fence;
	u32 i;
	int ret;

	if (!args->in_sync_count)
		return 0;
	job->deps = kvmalloc_array(args->in_sync_count, sizeof(*job->deps),
				   GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!job->deps)
		return -ENOMEM;
	for (i = 0; i < args->in_sync_count; i++) {
		/* u64 points: drm_sched_job_add_syncobj_dependency takes u32. */
		ret = drm_syncobj_find_fence(file, syncs[i].handle,
					     syncs[i].point, 0, &fence);
		if (ret)
			return ret;
		/*
		 * A timeline point is a dma_fence_chain link, which signals
		 * without the error of the fence it contains: keep that one.
		 */
		job->deps[job->dep_count++] =
			dma_fence_get(dma_fence_chain_contained(fence));
		if (!npu_fence_chain_is_ours(job->ndev, fence)) {
			ret = npu_job_add_foreign(job, fence);
			if (ret)
				return ret;
			continue;
		}
		fence = npu_job_dep_until_finished(job, fence);
		if (IS_ERR(fence))
			return PTR_ERR(fence);
		ret = drm_sched_job_add_dependency(&job->base, fence);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Validate, build and queue one job. On success *@finished (if given)
 * holds a reference to the scheduler's finished fence and *@rec (if
 * given) one to the job's record.
 */
static int npu_job_do_submit(struct drm_file *file,
			     struct drm_npu_submit *args,
			     const struct npu_submit_user *u,
			     struct dma_fence **finished,
			     struct npu_job_rec **rec_out);

/*
 * User memory first (it may fault for ever), then inside drm_dev_enter():
 * unbind waits for submits in progress, which no longer touch user memory.
 */
int npu_job_submit(struct drm_file *file, struct drm_npu_submit *args,
		   struct dma_fence **finished, struct npu_job_rec **rec_out)
{
	struct npu_device *ndev = to_npu_device(file->minor->dev);
	struct npu_submit_user u;
	int idx, ret, srcu;

	ret = npu_job_check_args(args);
	if (ret)
		return ret;
	ret = npu_submit_user_copy(args, &u);
	if (ret)
		return ret;
	if (drm_dev_enter(&ndev->drm, &idx)) {
		srcu = srcu_read_lock(&npu_exec_ctx_srcu);
		ret = npu_job_do_submit(file, args, &u, finished, rec_out);
		srcu_read_unlock(&npu_exec_ctx_srcu, srcu);
		drm_dev_exit(idx);
	} else {
		ret = -ENODEV;
	}
	npu_submit_user_free(&u);
	return ret;
}

static int npu_job_do_submit(struct drm_file *file,
			     struct drm_npu_submit *args,
			     const struct npu_submit_user *u,
			     struct dma_fence **finished,
			     struct npu_job_rec **rec_out)
{
	struct npu_context *ctx = npu_file_ctx_peek(file);
	struct npu_device *ndev = to_npu_device(file->minor->dev);
	struct drm_syncobj *out_syncobj = NULL;
	struct dma_fence_chain *chain = NULL;
	struct npu_job_rec *rec, *old;
	struct npu_exec_ctx *ectx;
	struct dma_fence *fence;
	struct drm_exec exec;
	bool sched_init = false;
	struct npu_job *job;
	u64 va;
	u32 i;
	int ret;

	/* No VA space: no context either. Inside npu_exec_ctx_srcu. */
	if (!ctx)
		return -ENOENT;
	xa_lock(&ctx->exec_ctxs);
	ectx = xa_load(&ctx->exec_ctxs, args->context_id);
	if (ectx)
		kref_get(&ectx->ref);
	xa_unlock(&ctx->exec_ctxs);
	if (!ectx)
		return -ENOENT;
	if (atomic_read(&ectx->banned)) {
		npu_exec_ctx_put(ectx);
		return -ECANCELED;
	}
	/* A per-file cap on jobs not yet retired, as ivpu has. */
	if (atomic_inc_return(&ctx->jobs_inflight) > NPU_MAX_QUEUED_JOBS) {
		atomic_dec(&ctx->jobs_inflight);
		npu_exec_ctx_put(ectx);
		return -EBUSY;
	}

	job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	if (!job) {
		atomic_dec(&ctx->jobs_inflight);
		npu_exec_ctx_put(ectx);
		return -ENOMEM;
	}
	atomic_inc(&ndev->job_count);
	job->ndev = ndev;
	job->ctx = npu_context_get(ctx);
	job->ectx = ectx;
	job->queue = &ndev->queues[ectx->queue];

	job->bos = kvmalloc_array(args->bo_ref_count + 1, sizeof(*job->bos),
				  GFP_KERNEL_ACCOUNT);
	job->access = kvmalloc_array(args->bo_ref_count + 1,
				     sizeof(*job->access), GFP_KERNEL_ACCOUNT);
	rec = kzalloc(sizeof(*rec), GFP_KERNEL_ACCOUNT);
	job->hw_fence = kzalloc(sizeof(*job->hw_fence), GFP_KERNEL_ACCOUNT);
	if (!job->bos || !job->access || !rec || !job->hw_fence) {
		kfree(rec);
		ret = -ENOMEM;
		goto err_job;
	}
	kref_init(&rec->ref);
	rec->context_id = ectx->id;
	rec->queue = ectx->queue;
	rec->state = DRM_NPU_JOB_QUEUED;
	job->rec = rec;

	/* The command buffer: always read, offset and size inside it. */
	ret = npu_job_add_bo(job, file, args->cmd_handle, DRM_NPU_BO_ACCESS_READ);
	if (ret)
		goto err_job;
	if (args->cmd_offset > job->bos[0]->size ||
	    args->cmd_size > job->bos[0]->size - args->cmd_offset) {
		ret = -EINVAL;
		goto err_job;
	}
	job->cmd_size = args->cmd_size;

	ret = npu_job_add_bo_refs(job, file, args, u);
	if (ret)
		goto err_job;

	/* The job keeps its BOs mapped until it is freed. */
	for (i = 0; i < job->bo_count; i++) {
		ret = npu_bo_map_get(job->bos[i], ctx, &va);
		if (ret)
			goto err_job;
		job->maps_held++;
		if (!i)
			job->cmd_va = va + args->cmd_offset;
	}

	if (args->out_sync.handle) {
		out_syncobj = drm_syncobj_find(file, args->out_sync.handle);
		if (!out_syncobj) {
			ret = -ENOENT;
			goto err_job;
		}
		if (args->out_sync.point) {
			chain = dma_fence_chain_alloc();
			if (!chain) {
				ret = -ENOMEM;
				goto err_job;
			}
		}
	}

	/* MMIO: not while a reset owns the device (0 then). */
	if (npu_device_hw_enter(ndev)) {
		rec->submit_ns = npu_device_time_ns(ndev);
		npu_device_hw_exit(ndev);
	}

	ret = drm_sched_job_init(&job->base, &ectx->entity, 1, ctx);
	if (ret)
		goto err_job;
	sched_init = true;

	ret = npu_job_add_in_syncs(job, file, args, u->syncs);
	if (ret)
		goto err_job;

	/*
	 * job->bos holds no duplicates: one slot per BO is enough. Distinct
	 * BOs sharing one reservation (imports of a foreign exporter's
	 * buffers) fail with -EALREADY rather than add two fences for one
	 * reserved slot.
	 */
	drm_exec_init(&exec, DRM_EXEC_INTERRUPTIBLE_WAIT, job->bo_count);
	drm_exec_until_all_locked(&exec) {
		for (i = 0; i < job->bo_count; i++) {
			ret = drm_exec_prepare_obj(&exec, job->bos[i], 1);
			drm_exec_retry_on_contention(&exec);
			if (ret)
				goto err_exec;
		}
	}
	for (i = 0; i < job->bo_count; i++) {
		bool write = job->access[i] & DRM_NPU_BO_ACCESS_WRITE;
		struct dma_resv_iter cursor;
		struct dma_fence *dep;

		/* drm_sched_job_add_implicit_dependencies(), foreign ones gated. */
		dma_resv_for_each_fence(&cursor, job->bos[i]->resv,
					dma_resv_usage_rw(write), dep) {
			ret = npu_job_add_dep(job, dma_fence_get(dep));
			if (ret)
				goto err_exec;
		}
	}
	ret = npu_job_gate_arm(job);
	if (ret)
		goto err_exec;

	mutex_lock(&ctx->submit_lock);
	/* The record replaces the one NPU_JOB_HISTORY ids older. */
	rec->id = ctx->next_job_id++;
	kref_get(&rec->ref);
	spin_lock(&ctx->rec_lock);
	old = ctx->recs[rec->id % NPU_JOB_HISTORY];
	ctx->recs[rec->id % NPU_JOB_HISTORY] = rec;
	spin_unlock(&ctx->rec_lock);
	if (old)
		npu_job_rec_put(old);

	drm_sched_job_arm(&job->base);
	fence = dma_fence_get(&job->base.s_fence->finished);
	for (i = 0; i < job->bo_count; i++)
		dma_resv_add_fence(job->bos[i]->resv, fence,
				   job->access[i] & DRM_NPU_BO_ACCESS_WRITE ?
				   DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ);
	atomic64_inc(&ndev->jobs_submitted);
	trace_npu_job_submit(job);
	npu_dbg(ndev, JOB, "vm %u context %u job %llu queued on %u\n", ctx->id,
		ectx->id, rec->id, ectx->queue);
	if (rec_out) {
		kref_get(&rec->ref);
		*rec_out = rec;
	}
	args->job_id = rec->id;
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&ctx->submit_lock);
	drm_exec_fini(&exec);

	if (out_syncobj) {
		if (chain)
			drm_syncobj_add_point(out_syncobj, chain, fence,
					      args->out_sync.point);
		else
			drm_syncobj_replace_fence(out_syncobj, fence);
		drm_syncobj_put(out_syncobj);
	}
	if (finished)
		*finished = fence;
	else
		dma_fence_put(fence);
	return 0;

err_exec:
	drm_exec_fini(&exec);
err_job:
	dma_fence_chain_free(chain);
	if (out_syncobj)
		drm_syncobj_put(out_syncobj);
	if (sched_init)
		drm_sched_job_cleanup(&job->base);
	atomic_dec(&ctx->jobs_inflight);
	npu_job_release(job);
	return ret;
}

int npu_ioctl_submit(struct drm_device *drm, void *data,
		     struct drm_file *file)
{
	return npu_job_submit(file, data, NULL, NULL);
}

/*
 * A reference to the record of one of the file's last jobs, or NULL. The
 * slot holds the newest id with that remainder: an older id finds a
 * record with another id.
 */
static struct npu_job_rec *npu_job_rec_lookup(struct npu_context *ctx, u64 id)
{
	struct npu_job_rec *rec;

	spin_lock(&ctx->rec_lock);
	rec = ctx->recs[id % NPU_JOB_HISTORY];
	if (rec && rec->id == id)
		kref_get(&rec->ref);
	else
		rec = NULL;
	spin_unlock(&ctx->rec_lock);
	return rec;
}

int npu_ioctl_job_info(struct drm_device *drm, void *data,
		       struct drm_file *file)
{
	struct npu_context *ctx = npu_file_ctx_peek(file);
	struct drm_npu_job_info *args = data;
	struct npu_job_rec *rec;

	if (args->flags || args->reserved)
		return -EINVAL;
	if (!ctx)
		return -ENOENT;

	rec = npu_job_rec_lookup(ctx, args->job_id);
	if (!rec)
		return -ENOENT;

	spin_lock(&ctx->rec_lock);
	args->state = rec->state;
	args->status = rec->status;
	args->error_offset = rec->error_offset;
	args->context_id = rec->context_id;
	args->queue = rec->queue;
	args->fault_addr = rec->fault_addr;
	args->submit_ns = rec->submit_ns;
	args->start_ns = rec->start_ns;
	args->end_ns = rec->end_ns;
	args->cycles = rec->cycles;
	args->macs = rec->macs;
	spin_unlock(&ctx->rec_lock);
	npu_job_rec_put(rec);
	return 0;
}

static bool npu_job_rec_ended(struct npu_job_rec *rec)
{
	u32 state = READ_ONCE(rec->state);

	return state == DRM_NPU_JOB_DONE || state == DRM_NPU_JOB_CANCELED;
}

int npu_ioctl_job_wait(struct drm_device *drm, void *data,
		       struct drm_file *file)
{
	struct npu_context *ctx = npu_file_ctx_peek(file);
	struct drm_npu_job_wait *args = data;
	struct npu_job_rec *rec;
	long timeout, ret;

	if (args->flags || args->pad)
		return -EINVAL;
	if (!ctx)
		return -ENOENT;

	/*
	 * Absolute CLOCK_MONOTONIC only (botching-up-ioctls.rst): a wait
	 * restarted after a signal keeps its deadline.
	 */
	timeout = drm_timeout_abs_to_jiffies(args->timeout_ns);

	rec = npu_job_rec_lookup(ctx, args->job_id);
	if (!rec)
		return -ENOENT;

	/* Records reach DONE or CANCELED once; both wake job_wq. */
	ret = wait_event_interruptible_timeout(ctx->job_wq,
					       npu_job_rec_ended(rec),
					       timeout);
	spin_lock(&ctx->rec_lock);
	args->state = rec->state;
	args->status = rec->status;
	spin_unlock(&ctx->rec_lock);
	npu_job_rec_put(rec);
	if (ret < 0)
		return ret;
	return ret ? 0 : -ETIME;
}

static const char * const npu_job_state_names[] = {
	[DRM_NPU_JOB_QUEUED] = "queued",
	[DRM_NPU_JOB_RUNNING] = "running",
	[DRM_NPU_JOB_DONE] = "done",
	[DRM_NPU_JOB_CANCELED] = "canceled",
};

void npu_job_print_ctx(struct seq_file *m, struct npu_context *ctx)
{
	struct npu_exec_ctx *ectx;
	struct npu_job_rec *rec;
	unsigned long cid;
	u64 id, first;

	mutex_lock(&ctx->submit_lock);
	first = ctx->next_job_id > 16 ? ctx->next_job_id - 16 : 1;
	seq_printf(m, "    jobs submitted %llu in flight %d\n",
		   ctx->next_job_id - 1, atomic_read(&ctx->jobs_inflight));
	xa_lock(&ctx->exec_ctxs);
	xa_for_each(&ctx->exec_ctxs, cid, ectx)
		seq_printf(m, "    context %u priority %u queue %u banned %d\n",
			   ectx->id, ectx->priority, ectx->queue,
			   atomic_read(&ectx->banned));
	xa_unlock(&ctx->exec_ctxs);
	spin_lock(&ctx->rec_lock);
	for (id = first; id < ctx->next_job_id; id++) {
		rec = ctx->recs[id % NPU_JOB_HISTORY];
		if (!rec || rec->id != id)
			continue;
		seq_printf(m, "    job %llu context %u queue %u %s status %s cycles %llu\n",
			   rec->id, rec->context_id, rec->queue,
			   npu_job_state_names[rec->state & 3],
			   npu_job_status_str(rec->status), rec->cycles);
	}
	spin_unlock(&ctx->rec_lock);
	mutex_unlock(&ctx->submit_lock);
}
