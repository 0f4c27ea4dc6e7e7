/* SPDX-License-Identifier: MIT */
/*
 * sim_internal.h - state of one simulated NPU, shared by the files of the
 * device core (sim.c registers, queue.c rings, mmu.c translation, exec.c
 * command streams, fw.c images).
 *
 * Threading (see npu_sim.h): everything here is owned by the register
 * side (reg_read/reg_write/job_fetch/job_finish, serialized by the host)
 * except 'run', 'tlb' and 'sram', which belong to the job being executed
 * between fetch and finish. The only values both sides touch are atomics:
 * the reset epoch, the reset time, the context-table base, the TLB
 * generations and the DMA-quiesce handshake (quiesce_req, dma_step).
 */
#ifndef NPU_SIM_INTERNAL_H
#define NPU_SIM_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "npu_sim.h"
#include "npu_ops.h"

#define NPU_HW_OP_MASK		NPU_OP_MASK_ALL
#define NPU_HW_CAPS		(NPU_CAP_INT8 | NPU_CAP_INT32_BIAS | \
				 NPU_CAP_PER_CHANNEL_QUANT | NPU_CAP_DEPTHWISE | \
				 NPU_CAP_DILATION | NPU_CAP_MMU | \
				 NPU_CAP_WATCHDOG | NPU_CAP_TIMESTAMP | \
				 NPU_CAP_ZERO_INSERT | NPU_CAP_RESIZE | \
				 NPU_CAP_INT16 | NPU_CAP_OUT_LUT | \
				 NPU_CAP_ARRAY_MODES | NPU_CAP_SPARSE)
#define NPU_TLB_MAX_ENTRIES	4096
/* Recent instructions per engine kept for hazard checks (hardware.md). */
#define NPU_HAZARD_WINDOW	64
/* Command-stream prefetch buffer. */
#define NPU_STREAM_CHUNK	4096

struct npu_queue {
	uint64_t ring_base;
	uint32_t ring_size;
	uint32_t head;
	uint32_t tail;
	uint32_t doorbell_tail;	/* TAIL sampled by the last valid doorbell */
	uint32_t ctrl;
	uint32_t status;	/* enum npu_queue_status */
	uint64_t last_seq;
};

struct npu_tlb_entry {
	uint64_t tag;		/* vpn << 7 | ctx << 1 | 1 (valid) */
	uint64_t page_addr;
	uint32_t gen_all;	/* generations the entry was filled under */
	uint32_t gen_ctx;
	uint8_t perms;		/* NPU_PTE_READ | NPU_PTE_WRITE */
};

/* An instruction still possibly in flight on one engine. */
struct npu_inflight {
	uint64_t end;		/* cycle it completes */
	struct npu_op_footprint fp;
};

struct npu_engine {
	uint64_t free_at;	/* cycle the engine can start its next insn */
	struct npu_inflight window[NPU_HAZARD_WINDOW];
	unsigned int first, count;	/* ring of in-flight entries */
};

enum npu_engine_id {
	NPU_ENGINE_DMA = 0,
	NPU_ENGINE_COMPUTE = 1,
	NPU_ENGINE_COUNT
};

/* Per-job execution state; set at fetch, used by execute. */
struct npu_sim_run {
	uint32_t ctx;
	uint32_t epoch;
	uint32_t watchdog_cycles;	/* snapshot: 0 = off */
	uint32_t op_mask;
	uint32_t tlb_mask;		/* tlb_entries - 1 */
	uint64_t start_ns;
	uint64_t dma_bytes;
	uint64_t macs;
	uint32_t fault_access;		/* for the FAULT_ACCESS register */
	uint64_t fault_addr;
	/* Command-stream fetch: a window of the stream read through the MMU. */
	uint64_t cmd_va;
	uint32_t cmd_size;
	uint32_t chunk_offset;
	uint32_t chunk_len;
	uint32_t chunk_fault;		/* the fault that ended the chunk early */
	uint8_t chunk[NPU_STREAM_CHUNK];
	struct npu_engine engines[NPU_ENGINE_COUNT];
	uint64_t sync_floor;		/* start of the last SYNC instruction */
};

struct npu_sim {
	struct npu_sim_host_ops ops;
	void *opaque;

	uint32_t state;			/* enum npu_state */
	uint32_t boot_status;
	uint64_t fw_addr;
	uint32_t fw_size;
	uint32_t fw_version;
	uint32_t op_mask;		/* active op mask (hardware until booted) */
	uint32_t tlb_entries;
	uint32_t watchdog_cycles;
	uint32_t scratch;
	uint32_t debug;

	uint32_t irq_status;
	uint32_t irq_mask;

	_Atomic uint64_t reset_ns;	/* host clock at the last reset */
	uint32_t timestamp_hi_latch;

	_Atomic uint64_t ctx_table;
	_Atomic uint32_t epoch;		/* bumped by every reset */
	_Atomic uint32_t tlb_gen_all;
	_Atomic uint32_t tlb_gen_ctx[NPU_NUM_CONTEXTS];
	/*
	 * Resets and invalidations bump quiesce_req; the execute side holds
	 * dma_step = (quiesce_req it saw) << 1 | 1 around each page it
	 * translates and moves, 0 between pages. A reset or invalidation is
	 * complete once no step that began before it is in flight.
	 */
	_Atomic uint64_t quiesce_req;
	_Atomic uint64_t dma_step;
	uint64_t reset_wait;		/* quiesce_req of the last reset */
	uint64_t inval_wait;		/* ... of the last invalidation */

	uint32_t fault_status;
	uint32_t fault_ctx;
	uint64_t fault_addr;
	uint32_t fault_access;

	uint64_t perf_jobs;
	uint64_t perf_cycles;
	uint64_t perf_macs;
	uint64_t perf_dma_bytes;
	uint32_t perf_errors;
	uint32_t perf_faults;

	bool busy;			/* a job is between fetch and finish */
	bool async_boot;		/* npu_sim_set_async_boot() */
	bool boot_requested;		/* BOOTING, not yet fetched */
	uint32_t active;		/* NPU_REG_ACTIVE */
	uint64_t active_seq;
	uint64_t active_start;
	bool sram_clear_pending;	/* reset happened: zero SRAM at next fetch */
	struct npu_queue queues[NPU_NUM_QUEUES];

	struct npu_ops_pool *pool;	/* npu_sim_set_threads(); NULL: 1 */
	struct npu_ops_cache *ops_cache;	/* decoded sparse weights (ISA 1.6) */
	uint8_t *codec_buf;		/* a weight-codec stream read from VA, decoded */
	uint64_t codec_cap;
	struct npu_sim_run run;
	struct npu_tlb_entry tlb[NPU_TLB_MAX_ENTRIES];
	uint8_t *sram;
};

/* sim.c */
void npu_sim_raise(struct npu_sim *sim, uint32_t irq_bits);
uint64_t npu_sim_clock_ns(struct npu_sim *sim);

/* queue.c */
void npu_queue_reset(struct npu_sim *sim);
uint32_t npu_queue_reg_read(struct npu_sim *sim, unsigned int q, uint32_t reg);
void npu_queue_reg_write(struct npu_sim *sim, unsigned int q, uint32_t reg,
			 uint32_t value);

/* mmu.c */
void npu_mmu_invalidate(struct npu_sim *sim, uint32_t value);
/* Bump quiesce_req; returns the value to wait for with npu_dma_pending(). */
uint64_t npu_dma_quiesce_request(struct npu_sim *sim);
/* A DMA step that began before request 'req' is still in flight. */
bool npu_dma_pending(struct npu_sim *sim, uint64_t req);
uint32_t npu_mmu_read_ctx_entry(struct npu_sim *sim, uint32_t ctx,
				struct npu_ctx_entry *entry);
/*
 * Move 'len' bytes between a context VA range and 'buf', page by page.
 * Returns NPU_JOB_OK or the fault status with run->fault_addr set.
 */
uint32_t npu_mmu_read(struct npu_sim *sim, struct npu_sim_run *run,
		      uint64_t va, void *buf, uint64_t len);
uint32_t npu_mmu_write(struct npu_sim *sim, struct npu_sim_run *run,
		       uint64_t va, const void *buf, uint64_t len);
/* Check that [va, va + len) lies inside the VA space without wrapping. */
uint32_t npu_mmu_check_range(struct npu_sim_run *run, uint64_t va,
			     uint64_t len, uint32_t access);

/* exec.c */
void npu_exec_job(struct npu_sim *sim, struct npu_sim_job *job);

/* fw.c */
void npu_fw_boot(struct npu_sim *sim);

#endif /* NPU_SIM_INTERNAL_H */
