/* SPDX-License-Identifier: MIT */
/*
 * queue.c - job rings: per-queue registers, doorbell validation, fetching
 * descriptors (queue 0 first) and writing completion records.
 */
#include <string.h>

#include "sim_internal.h"

void npu_queue_reset(struct npu_sim *sim)
{
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++) {
		struct npu_queue *queue = &sim->queues[q];

		memset(queue, 0, sizeof(*queue));
		/* Enabled out of reset: a doorbell is all a host needs. */
		queue->ctrl = NPU_QUEUE_ENABLE;
	}
}

static void npu_queue_stop(struct npu_sim *sim, struct npu_queue *queue,
			   uint32_t status)
{
	queue->status = status;
	queue->ctrl &= ~NPU_QUEUE_ENABLE;
	queue->doorbell_tail = queue->head;
	npu_sim_raise(sim, NPU_IRQ_JOB_ERROR);
}

static bool npu_is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static void npu_queue_doorbell(struct npu_sim *sim, struct npu_queue *queue)
{
	if (!(queue->ctrl & NPU_QUEUE_ENABLE))
		return;		/* a stopped queue ignores doorbells */
	if (sim->state != NPU_STATE_READY) {
		npu_queue_stop(sim, queue, NPU_QUEUE_ERR_NOT_READY);
		return;
	}
	if (queue->ring_base & 63) {
		npu_queue_stop(sim, queue, NPU_QUEUE_ERR_RING_BASE);
		return;
	}
	if (!npu_is_pow2(queue->ring_size) ||
	    queue->ring_size > NPU_RING_MAX_ENTRIES) {
		npu_queue_stop(sim, queue, NPU_QUEUE_ERR_RING_SIZE);
		return;
	}
	if (queue->tail - queue->head > queue->ring_size) {
		npu_queue_stop(sim, queue, NPU_QUEUE_ERR_TAIL);
		return;
	}
	queue->doorbell_tail = queue->tail;
}

uint32_t npu_queue_reg_read(struct npu_sim *sim, unsigned int q, uint32_t reg)
{
	struct npu_queue *queue;

	if (q >= NPU_NUM_QUEUES)
		return 0;
	queue = &sim->queues[q];
	switch (reg) {
	case NPU_QREG_RING_BASE_LO:
		return (uint32_t)queue->ring_base;
	case NPU_QREG_RING_BASE_HI:
		return (uint32_t)(queue->ring_base >> 32);
	case NPU_QREG_RING_SIZE:
		return queue->ring_size;
	case NPU_QREG_HEAD:
		return queue->head;
	case NPU_QREG_TAIL:
		return queue->tail;
	case NPU_QREG_CTRL:
		return queue->ctrl;
	case NPU_QREG_STATUS:
		return queue->status;
	case NPU_QREG_PRIORITY:
		return q;
	case NPU_QREG_LAST_SEQ_LO:
		return (uint32_t)queue->last_seq;
	case NPU_QREG_LAST_SEQ_HI:
		return (uint32_t)(queue->last_seq >> 32);
	default:
		return 0;
	}
}

void npu_queue_reg_write(struct npu_sim *sim, unsigned int q, uint32_t reg,
			 uint32_t value)
{
	struct npu_queue *queue;

	if (q >= NPU_NUM_QUEUES)
		return;
	queue = &sim->queues[q];
	switch (reg) {
	case NPU_QREG_RING_BASE_LO:
		queue->ring_base = (queue->ring_base & ~0xffffffffull) | value;
		break;
	case NPU_QREG_RING_BASE_HI:
		queue->ring_base = (queue->ring_base & 0xffffffffull) |
				   ((uint64_t)value << 32);
		break;
	case NPU_QREG_RING_SIZE:
		queue->ring_size = value;
		break;
	case NPU_QREG_TAIL:
		queue->tail = value;
		break;
	case NPU_QREG_DOORBELL:
		npu_queue_doorbell(sim, queue);
		break;
	case NPU_QREG_CTRL:
		if (value & NPU_QUEUE_ENABLE) {
			/* Re-enabling clears a latched error; doorbells revalidate. */
			if (!(queue->ctrl & NPU_QUEUE_ENABLE))
				queue->status = NPU_QUEUE_OK;
			queue->ctrl = NPU_QUEUE_ENABLE;
		} else {
			queue->ctrl = 0;
			queue->doorbell_tail = queue->head;
		}
		break;
	default:
		break;
	}
}

/*
 * Work is the slots between HEAD and the doorbell TAIL, at most a ring's
 * worth: a HEAD that somehow passed the doorbell TAIL (modulo 2^32) must
 * read as "nothing announced", never as four billion slots to run.
 */
static bool npu_queue_has_work(const struct npu_sim *sim,
			       const struct npu_queue *queue)
{
	uint32_t announced = queue->doorbell_tail - queue->head;

	return sim->state == NPU_STATE_READY &&
	       (queue->ctrl & NPU_QUEUE_ENABLE) &&
	       queue->status == NPU_QUEUE_OK &&
	       announced && announced <= queue->ring_size;
}

bool npu_sim_has_work(struct npu_sim *sim)
{
	if (sim->busy)
		return false;
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++)
		if (npu_queue_has_work(sim, &sim->queues[q]))
			return true;
	return false;
}

static void npu_run_prepare(struct npu_sim *sim, struct npu_sim_job *job)
{
	struct npu_sim_run *run = &sim->run;

	run->ctx = job->desc.context;
	run->epoch = job->epoch;
	run->watchdog_cycles = sim->watchdog_cycles;
	run->op_mask = sim->op_mask;
	run->tlb_mask = sim->tlb_entries - 1;
	run->start_ns = 0;
	run->dma_bytes = 0;
	run->macs = 0;
	run->fault_access = 0;
	run->fault_addr = 0;
	run->cmd_va = 0;
	run->cmd_size = 0;
	run->chunk_offset = 0;
	run->chunk_len = 0;
	run->chunk_fault = NPU_JOB_OK;
	run->sync_floor = 0;
	for (unsigned int e = 0; e < NPU_ENGINE_COUNT; e++) {
		run->engines[e].free_at = 0;
		run->engines[e].first = 0;
		run->engines[e].count = 0;
	}
}

bool npu_sim_job_fetch(struct npu_sim *sim, struct npu_sim_job *job)
{
	if (sim->busy || !job)
		return false;
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++) {
		struct npu_queue *queue = &sim->queues[q];
		uint64_t slot_addr;

		if (!npu_queue_has_work(sim, queue))
			continue;
		slot_addr = queue->ring_base +
			    (uint64_t)(queue->head & (queue->ring_size - 1)) *
			    sizeof(struct npu_job_desc);
		memset(job, 0, sizeof(*job));
		if (slot_addr < queue->ring_base ||
		    sim->ops.dma_read(sim->opaque, slot_addr, &job->desc,
				      sizeof(job->desc))) {
			npu_queue_stop(sim, queue, NPU_QUEUE_ERR_RING_BASE);
			continue;
		}
		job->queue = q;
		job->epoch = atomic_load(&sim->epoch);
		job->hang = sim->debug & NPU_DEBUG_HANG_NEXT;
		sim->debug &= ~NPU_DEBUG_HANG_NEXT;
		job->result.seqno = job->desc.seqno;
		job->result.queue = q;
		sim->busy = true;
		sim->active = NPU_ACTIVE_VALID | q;
		sim->active_seq = job->desc.seqno;
		sim->active_start = npu_sim_clock_ns(sim);
		if (sim->sram_clear_pending) {
			memset(sim->sram, 0, NPU_SRAM_SIZE);
			sim->sram_clear_pending = false;
		}
		npu_run_prepare(sim, job);
		return true;
	}
	return false;
}

void npu_sim_job_execute(struct npu_sim *sim, struct npu_sim_job *job)
{
	if (!sim || !job || job->hang)
		return;		/* a hung job never runs, never completes */
	npu_exec_job(sim, job);
}

static bool npu_status_is_fault(uint32_t status)
{
	return status == NPU_JOB_ERR_MMU_UNMAPPED ||
	       status == NPU_JOB_ERR_MMU_PERM || status == NPU_JOB_ERR_DMA;
}

static void npu_latch_fault(struct npu_sim *sim, const struct npu_sim_job *job)
{
	sim->perf_faults++;
	if (sim->fault_status)
		return;		/* first fault only, until FAULT_ACK */
	sim->fault_status = job->result.status;
	sim->fault_ctx = job->desc.context;
	sim->fault_addr = job->result.fault_addr;
	sim->fault_access = sim->run.fault_access;
}

void npu_sim_job_finish(struct npu_sim *sim, struct npu_sim_job *job)
{
	struct npu_queue *queue;
	struct npu_completion record;
	uint32_t fence = NPU_COMPLETION_FENCE;
	uint32_t irq;

	if (!sim || !job || job->hang)
		return;
	if (job->epoch != atomic_load(&sim->epoch) || job->queue >= NPU_NUM_QUEUES)
		return;		/* fetched before a reset: dropped */
	queue = &sim->queues[job->queue];
	sim->busy = false;
	sim->active = 0;

	record = job->result;
	record.seqno = job->desc.seqno;
	record.queue = job->queue;
	record.fence = 0;
	/* The fence goes last so the host never sees a half-written record. */
	if (sim->ops.dma_write(sim->opaque, job->desc.completion_addr, &record,
			       sizeof(record)) ||
	    sim->ops.dma_write(sim->opaque, job->desc.completion_addr +
			       offsetof(struct npu_completion, fence),
			       &fence, sizeof(fence))) {
		sim->perf_errors++;
		npu_queue_stop(sim, queue, NPU_QUEUE_ERR_COMPLETION);
		return;
	}
	job->result.fence = fence;

	/*
	 * A stop, a disable or a doorbell of a rewound TAIL while this job ran
	 * left the doorbell TAIL on this job's slot: HEAD moving past the
	 * job must take it along, or HEAD would pass it (issue 29 D-c).
	 */
	if (queue->doorbell_tail == queue->head)
		queue->doorbell_tail++;
	queue->head++;
	queue->last_seq = job->desc.seqno;
	sim->perf_jobs++;
	sim->perf_cycles += job->result.cycles;
	sim->perf_macs += job->result.macs;
	sim->perf_dma_bytes += sim->run.dma_bytes;

	irq = NPU_IRQ_QUEUE_DONE(job->queue);
	if (job->result.status != NPU_JOB_OK) {
		sim->perf_errors++;
		irq |= NPU_IRQ_JOB_ERROR;
		if (npu_status_is_fault(job->result.status)) {
			npu_latch_fault(sim, job);
			irq |= NPU_IRQ_MMU_FAULT;
		}
		if (job->result.status == NPU_JOB_ERR_WATCHDOG)
			irq |= NPU_IRQ_WATCHDOG;
	}
	npu_sim_raise(sim, irq);
}

unsigned int npu_sim_run_pending(struct npu_sim *sim)
{
	struct npu_sim_job job;
	unsigned int count = 0;

	while (npu_sim_job_fetch(sim, &job)) {
		if (job.hang)
			break;	/* stays busy until the host resets the device */
		npu_sim_job_execute(sim, &job);
		npu_sim_job_finish(sim, &job);
		count++;
	}
	return count;
}
