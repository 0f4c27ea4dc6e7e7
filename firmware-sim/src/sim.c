/* SPDX-License-Identifier: MIT */
/*
 * sim.c - creation, reset and the BAR0 register file of the simulated NPU.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static uint32_t lo32(uint64_t v)
{
	return (uint32_t)v;
}

static uint32_t hi32(uint64_t v)
{
	return (uint32_t)(v >> 32);
}

uint64_t npu_sim_clock_ns(struct npu_sim *sim)
{
	uint64_t now = sim->ops.now_ns ? sim->ops.now_ns(sim->opaque) : 0;
	uint64_t base = atomic_load_explicit(&sim->reset_ns, memory_order_relaxed);

	/* A host clock that steps back must not make the device clock wrap. */
	return now >= base ? now - base : 0;
}

/* Latch events in IRQ_STATUS and signal the vectors of the enabled ones. */
void npu_sim_raise(struct npu_sim *sim, uint32_t irq_bits)
{
	uint32_t enabled;

	sim->irq_status |= irq_bits;
	enabled = irq_bits & sim->irq_mask;
	if (!sim->ops.irq)
		return;
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++)
		if (enabled & NPU_IRQ_QUEUE_DONE(q))
			sim->ops.irq(sim->opaque, NPU_MSIX_VEC_QUEUE(q));
	if (enabled & NPU_IRQ_ERROR_MASK)
		sim->ops.irq(sim->opaque, NPU_MSIX_VEC_ERROR);
}

static void npu_sim_reset(struct npu_sim *sim)
{
	/* The running job sees the new epoch at its next instruction. */
	atomic_fetch_add(&sim->epoch, 1);
	sim->state = NPU_STATE_OFF;
	sim->boot_status = NPU_BOOT_OK;
	sim->fw_addr = 0;
	sim->fw_size = 0;
	sim->fw_version = 0;
	sim->op_mask = NPU_HW_OP_MASK;
	sim->tlb_entries = 1;
	sim->watchdog_cycles = 0;
	sim->scratch = 0;
	sim->debug = 0;
	sim->irq_status = 0;
	sim->irq_mask = 0;
	sim->timestamp_hi_latch = 0;
	atomic_store(&sim->ctx_table, 0);
	npu_mmu_invalidate(sim, NPU_MMU_INVALIDATE_ALL);
	sim->fault_status = 0;
	sim->fault_ctx = 0;
	sim->fault_addr = 0;
	sim->fault_access = 0;
	sim->perf_jobs = 0;
	sim->perf_cycles = 0;
	sim->perf_macs = 0;
	sim->perf_dma_bytes = 0;
	sim->perf_errors = 0;
	sim->perf_faults = 0;
	sim->busy = false;
	sim->boot_requested = false;
	sim->active = 0;
	sim->active_seq = 0;
	sim->active_start = 0;
	/* CTRL.RESET reads 1 until a DMA step begun before now has ended. */
	sim->reset_wait = npu_dma_quiesce_request(sim);
	/*
	 * SRAM may still be in use by an aborting job on another thread;
	 * nothing can observe it before the next job, so clear it then.
	 */
	sim->sram_clear_pending = true;
	npu_queue_reset(sim);
	atomic_store_explicit(&sim->reset_ns,
			      sim->ops.now_ns ? sim->ops.now_ns(sim->opaque) : 0,
			      memory_order_relaxed);
}

struct npu_sim *npu_sim_create(const struct npu_sim_host_ops *ops,
			       void *opaque)
{
	struct npu_sim *sim;

	if (!ops || !ops->dma_read || !ops->dma_write)
		return NULL;
	sim = calloc(1, sizeof(*sim));
	if (!sim)
		return NULL;
	sim->sram = calloc(1, NPU_SRAM_SIZE);
	sim->ops_cache = npu_ops_cache_create();
	if (!sim->sram || !sim->ops_cache) {
		npu_ops_cache_destroy(sim->ops_cache);
		free(sim->sram);
		free(sim);
		return NULL;
	}
	sim->ops = *ops;
	sim->opaque = opaque;
	atomic_init(&sim->epoch, 0);
	atomic_init(&sim->reset_ns, 0);
	atomic_init(&sim->ctx_table, 0);
	atomic_init(&sim->tlb_gen_all, 0);
	atomic_init(&sim->quiesce_req, 0);
	atomic_init(&sim->dma_step, 0);
	for (unsigned int i = 0; i < NPU_NUM_CONTEXTS; i++)
		atomic_init(&sim->tlb_gen_ctx[i], 0);
	npu_sim_reset(sim);
	sim->sram_clear_pending = false;
	return sim;
}

void npu_sim_destroy(struct npu_sim *sim)
{
	if (!sim)
		return;
	npu_ops_pool_destroy(sim->pool);
	npu_ops_cache_destroy(sim->ops_cache);
	free(sim->codec_buf);
	free(sim->sram);
	free(sim);
}

int npu_sim_set_threads(struct npu_sim *sim, unsigned int threads)
{
	struct npu_ops_pool *pool = NULL;

	_Static_assert(NPU_SIM_MAX_THREADS <= NPU_OPS_MAX_THREADS,
		       "a simulator thread count the ops pool cannot take");
	if (!sim || threads < 1 || threads > NPU_SIM_MAX_THREADS)
		return -1;
	if (threads == npu_sim_threads(sim))
		return 0;
	if (threads > 1) {
		pool = npu_ops_pool_create(threads);
		if (!pool)
			return -1;
	}
	npu_ops_pool_destroy(sim->pool);
	sim->pool = pool;
	return 0;
}

unsigned int npu_sim_threads(const struct npu_sim *sim)
{
	return sim ? npu_ops_pool_threads(sim->pool) : 0;
}

static uint32_t npu_sim_status(const struct npu_sim *sim)
{
	uint32_t v = sim->state & NPU_STATUS_STATE_MASK;

	if (sim->busy)
		v |= NPU_STATUS_BUSY;
	if (sim->fault_status)
		v |= NPU_STATUS_FAULT;
	return v;
}

uint32_t npu_sim_reg_read(struct npu_sim *sim, uint32_t offset)
{
	uint64_t ts;

	if (offset & 3 || offset >= NPU_BAR_REGS_SIZE)
		return 0;
	if (offset >= NPU_REG_QUEUE_BASE &&
	    offset < NPU_REG_QUEUE(NPU_NUM_QUEUES, 0)) {
		uint32_t rel = offset - NPU_REG_QUEUE_BASE;

		return npu_queue_reg_read(sim, rel / NPU_REG_QUEUE_STRIDE,
					  rel % NPU_REG_QUEUE_STRIDE);
	}

	switch (offset) {
	case NPU_REG_ID:
		return NPU_ID_MAGIC;
	case NPU_REG_HW_VERSION:
		return NPU_VERSION(NPU_HW_VERSION_MAJOR, NPU_HW_VERSION_MINOR);
	case NPU_REG_ISA_VERSION:
		return NPU_VERSION(NPU_ISA_VERSION_MAJOR, NPU_ISA_VERSION_MINOR);
	case NPU_REG_CAPS:
		return NPU_HW_CAPS;
	case NPU_REG_NUM_QUEUES:
		return NPU_NUM_QUEUES;
	case NPU_REG_NUM_CONTEXTS:
		return NPU_NUM_CONTEXTS;
	case NPU_REG_MAC_SHAPE:
		return (NPU_MAC_ROWS << 16) | NPU_MAC_COLS;
	case NPU_REG_SRAM_SIZE:
		return NPU_SRAM_SIZE;
	case NPU_REG_CLOCK_MHZ:
		return NPU_CLOCK_MHZ;
	case NPU_REG_DMA_BYTES_PER_CYCLE:
		return NPU_DMA_BYTES_PER_CYCLE;
	case NPU_REG_OP_MASK:
		return sim->state == NPU_STATE_READY ? sim->op_mask : NPU_HW_OP_MASK;
	case NPU_REG_VA_BITS:
		return NPU_VA_BITS;
	case NPU_REG_FW_VERSION:
		return sim->state == NPU_STATE_READY ? sim->fw_version : 0;
	case NPU_REG_RING_MAX_ENTRIES:
		return NPU_RING_MAX_ENTRIES;
	case NPU_REG_VECTOR_LANES:
		return NPU_VECTOR_LANES;

	case NPU_REG_CTRL:
		/* RESET reads 1 while the aborted job's DMA is in flight. */
		return npu_dma_pending(sim, sim->reset_wait) ? NPU_CTRL_RESET : 0;
	case NPU_REG_STATUS:
		return npu_sim_status(sim);
	case NPU_REG_SCRATCH:
		return sim->scratch;
	case NPU_REG_FW_ADDR_LO:
		return lo32(sim->fw_addr);
	case NPU_REG_FW_ADDR_HI:
		return hi32(sim->fw_addr);
	case NPU_REG_FW_SIZE:
		return sim->fw_size;
	case NPU_REG_FW_BOOT:
		return 0;
	case NPU_REG_BOOT_STATUS:
		return sim->boot_status;
	case NPU_REG_ACTIVE:
		return sim->active;
	case NPU_REG_ACTIVE_SEQ_LO:
		return lo32(sim->active_seq);
	case NPU_REG_ACTIVE_SEQ_HI:
		return hi32(sim->active_seq);
	case NPU_REG_ACTIVE_START_LO:
		return lo32(sim->active_start);
	case NPU_REG_ACTIVE_START_HI:
		return hi32(sim->active_start);

	case NPU_REG_IRQ_STATUS:
		return sim->irq_status;
	case NPU_REG_IRQ_MASK:
		return sim->irq_mask;

	case NPU_REG_CTX_TABLE_LO:
		return lo32(atomic_load(&sim->ctx_table));
	case NPU_REG_CTX_TABLE_HI:
		return hi32(atomic_load(&sim->ctx_table));
	case NPU_REG_MMU_INVALIDATE:
		/* PENDING while a page moved under the old TLB is in flight. */
		return npu_dma_pending(sim, sim->inval_wait) ?
		       NPU_MMU_INVALIDATE_PENDING : 0;
	case NPU_REG_FAULT_STATUS:
		return sim->fault_status;
	case NPU_REG_FAULT_CTX:
		return sim->fault_ctx;
	case NPU_REG_FAULT_ADDR_LO:
		return lo32(sim->fault_addr);
	case NPU_REG_FAULT_ADDR_HI:
		return hi32(sim->fault_addr);
	case NPU_REG_FAULT_ACCESS:
		return sim->fault_access;

	case NPU_REG_TIMESTAMP_LO:
		ts = npu_sim_clock_ns(sim);
		sim->timestamp_hi_latch = hi32(ts);
		return lo32(ts);
	case NPU_REG_TIMESTAMP_HI:
		return sim->timestamp_hi_latch;
	case NPU_REG_PERF_JOBS_LO:
		return lo32(sim->perf_jobs);
	case NPU_REG_PERF_JOBS_HI:
		return hi32(sim->perf_jobs);
	case NPU_REG_PERF_CYCLES_LO:
		return lo32(sim->perf_cycles);
	case NPU_REG_PERF_CYCLES_HI:
		return hi32(sim->perf_cycles);
	case NPU_REG_PERF_MACS_LO:
		return lo32(sim->perf_macs);
	case NPU_REG_PERF_MACS_HI:
		return hi32(sim->perf_macs);
	case NPU_REG_PERF_DMA_BYTES_LO:
		return lo32(sim->perf_dma_bytes);
	case NPU_REG_PERF_DMA_BYTES_HI:
		return hi32(sim->perf_dma_bytes);
	case NPU_REG_PERF_ERRORS:
		return sim->perf_errors;
	case NPU_REG_PERF_FAULTS:
		return sim->perf_faults;
	case NPU_REG_WATCHDOG_CYCLES:
		return sim->watchdog_cycles;
	case NPU_REG_DEBUG:
		return sim->debug;
	default:
		return 0;
	}
}

static void npu_sim_irq_mask_write(struct npu_sim *sim, uint32_t value)
{
	uint32_t newly_enabled = value & ~sim->irq_mask;

	sim->irq_mask = value;
	/* Events latched while masked are delivered when unmasked. */
	if (newly_enabled & sim->irq_status)
		npu_sim_raise(sim, newly_enabled & sim->irq_status);
}

void npu_sim_reg_write(struct npu_sim *sim, uint32_t offset, uint32_t value)
{
	if (offset & 3 || offset >= NPU_BAR_REGS_SIZE)
		return;
	if (offset >= NPU_REG_QUEUE_BASE &&
	    offset < NPU_REG_QUEUE(NPU_NUM_QUEUES, 0)) {
		uint32_t rel = offset - NPU_REG_QUEUE_BASE;

		npu_queue_reg_write(sim, rel / NPU_REG_QUEUE_STRIDE,
				    rel % NPU_REG_QUEUE_STRIDE, value);
		return;
	}

	switch (offset) {
	case NPU_REG_CTRL:
		if (value & NPU_CTRL_RESET)
			npu_sim_reset(sim);
		break;
	case NPU_REG_SCRATCH:
		sim->scratch = value;
		break;
	case NPU_REG_FW_ADDR_LO:
		sim->fw_addr = (sim->fw_addr & ~0xffffffffull) | value;
		break;
	case NPU_REG_FW_ADDR_HI:
		sim->fw_addr = (sim->fw_addr & 0xffffffffull) |
			       ((uint64_t)value << 32);
		break;
	case NPU_REG_FW_SIZE:
		sim->fw_size = value;
		break;
	case NPU_REG_FW_BOOT:
		if (value & NPU_BOOT_START)
			npu_fw_boot(sim);
		break;
	case NPU_REG_IRQ_MASK:
		npu_sim_irq_mask_write(sim, value);
		break;
	case NPU_REG_IRQ_ACK:
		sim->irq_status &= ~value;
		break;
	case NPU_REG_CTX_TABLE_LO: {
		uint64_t old = atomic_load(&sim->ctx_table);

		atomic_store(&sim->ctx_table, (old & ~0xffffffffull) | value);
		break;
	}
	case NPU_REG_CTX_TABLE_HI: {
		uint64_t old = atomic_load(&sim->ctx_table);

		atomic_store(&sim->ctx_table, (old & 0xffffffffull) |
					      ((uint64_t)value << 32));
		break;
	}
	case NPU_REG_MMU_INVALIDATE:
		npu_mmu_invalidate(sim, value);
		break;
	case NPU_REG_FAULT_ACK:
		sim->fault_status = 0;
		sim->fault_ctx = 0;
		sim->fault_addr = 0;
		sim->fault_access = 0;
		break;
	case NPU_REG_WATCHDOG_CYCLES:
		sim->watchdog_cycles = value;
		break;
	case NPU_REG_DEBUG:
		sim->debug = value & NPU_DEBUG_HANG_NEXT;
		break;
	default:
		break;
	}
}
