/* SPDX-License-Identifier: MIT */
/*
 * sim_test_host.h - a host for firmware-sim in tests: plain memory as host
 * memory (accesses outside it are bus errors), a deterministic clock, an
 * IRQ log, and builders for firmware images, page tables, rings and
 * command streams. No test framework dependency, so fuzzers use it too.
 */
#ifndef SIM_TEST_HOST_H
#define SIM_TEST_HOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_sim.h"

#define SIM_TEST_IRQ_LOG	256
#define SIM_TEST_RING_ENTRIES	64
#define SIM_TEST_STREAM_MAX	(64 * 1024)

struct sim_test_ring {
	uint64_t base;
	uint32_t entries;
	uint64_t completions;	/* one 64-byte record per ring slot */
};

struct sim_test_host {
	struct npu_sim *sim;
	uint8_t *mem;
	uint64_t mem_size;
	uint64_t alloc_next;	/* bump allocator; address 0 is never handed out */
	_Atomic uint64_t now_ns;	/* atomic: jobs may run on another thread */
	uint64_t clock_step;	/* now_ns advances this much per clock read */
	unsigned int irq_log[SIM_TEST_IRQ_LOG];
	unsigned int irq_count;
	uint64_t ctx_table;
	uint64_t ctx_root[NPU_NUM_CONTEXTS];
	struct sim_test_ring rings[NPU_NUM_QUEUES];
};

/* Host with 'mem_size' bytes of memory and a fresh sim (state OFF). */
int sim_test_host_init(struct sim_test_host *host, uint64_t mem_size);
void sim_test_host_fini(struct sim_test_host *host);
/*
 * The usual fixture: booted with the default firmware config, a context
 * table, and rings of SIM_TEST_RING_ENTRIES on every queue; IRQs unmasked.
 */
int sim_test_host_setup(struct sim_test_host *host, uint64_t mem_size);

/* Zeroed host memory, 'align' a power of two; 0 when memory is exhausted. */
uint64_t sim_test_alloc(struct sim_test_host *host, uint64_t size,
			uint64_t align);
void sim_test_write(struct sim_test_host *host, uint64_t addr, const void *buf,
		    size_t len);
void sim_test_read(struct sim_test_host *host, uint64_t addr, void *buf,
		   size_t len);

uint32_t sim_test_reg(struct sim_test_host *host, uint32_t offset);
void sim_test_set_reg(struct sim_test_host *host, uint32_t offset,
		      uint32_t value);
void sim_test_set_reg64(struct sim_test_host *host, uint32_t lo_offset,
			uint64_t value);

/* Write 'image' to host memory and run the boot handshake; returns STATUS. */
uint32_t sim_test_boot_image(struct sim_test_host *host, const void *image,
			     size_t size);
uint32_t sim_test_boot_config(struct sim_test_host *host,
			      const struct npu_fw_config *config);
uint32_t sim_test_boot(struct sim_test_host *host);

/* ---- MMU ---- */
void sim_test_ctx_table_init(struct sim_test_host *host);
/* Give 'ctx' an empty root table and a valid context entry. */
void sim_test_ctx_init(struct sim_test_host *host, uint32_t ctx);
/* Host address of the leaf PTE of 'va', creating the upper tables. */
uint64_t sim_test_pte_addr(struct sim_test_host *host, uint32_t ctx,
			   uint64_t va);
void sim_test_set_pte(struct sim_test_host *host, uint32_t ctx, uint64_t va,
		      uint64_t pte);
/* Map [va, va + size) to host [addr, addr + size), 4 KiB pages. */
void sim_test_map(struct sim_test_host *host, uint32_t ctx, uint64_t va,
		  uint64_t addr, uint64_t size, uint64_t perms);
/* Allocate page-aligned backing memory, map it; returns its host address. */
uint64_t sim_test_map_new(struct sim_test_host *host, uint32_t ctx,
			  uint64_t va, uint64_t size, uint64_t perms);

/* ---- Rings ---- */
void sim_test_ring_init(struct sim_test_host *host, unsigned int q,
			uint32_t entries);
/* A valid descriptor whose completion goes to the ring slot it will use. */
struct npu_job_desc sim_test_desc(struct sim_test_host *host, unsigned int q,
				  uint32_t ctx, uint64_t cmd_va,
				  uint32_t cmd_size, uint64_t seqno);
/* Write at TAIL, advance TAIL; ring the doorbell when 'doorbell'. */
uint32_t sim_test_push(struct sim_test_host *host, unsigned int q,
		       const struct npu_job_desc *desc, bool doorbell);
void sim_test_doorbell(struct sim_test_host *host, unsigned int q);
uint64_t sim_test_completion_addr(struct sim_test_host *host, unsigned int q,
				  uint32_t index);
/* Read the record for ring index 'index'; true when its fence is set. */
bool sim_test_completion(struct sim_test_host *host, unsigned int q,
			 uint32_t index, struct npu_completion *out);

/* ---- Command streams ---- */
struct sim_test_stream {
	uint32_t len;
	/* Aligned so tests can edit instructions in place through their structs. */
	_Alignas(8) uint8_t buf[SIM_TEST_STREAM_MAX];
};

/* Starts with a valid npu_cs_header. */
void sim_test_stream_init(struct sim_test_stream *s);
/* Append raw bytes; returns the offset they start at. */
uint32_t sim_test_emit(struct sim_test_stream *s, const void *bytes,
		       size_t len);
uint32_t sim_test_emit_nop(struct sim_test_stream *s, uint8_t flags);
uint32_t sim_test_emit_barrier(struct sim_test_stream *s);
uint32_t sim_test_emit_copy(struct sim_test_stream *s, uint8_t flags,
			    uint8_t src_space, uint64_t src,
			    uint8_t dst_space, uint64_t dst, uint32_t rows,
			    uint32_t row_bytes, uint64_t src_stride,
			    uint64_t dst_stride);
uint32_t sim_test_emit_fill(struct sim_test_stream *s, uint8_t flags,
			    uint8_t dst_space, uint64_t dst, uint8_t value,
			    uint32_t rows, uint32_t row_bytes,
			    uint64_t dst_stride);
uint32_t sim_test_emit_timestamp(struct sim_test_stream *s, uint8_t flags,
				 uint64_t va);
uint32_t sim_test_emit_lut(struct sim_test_stream *s, uint8_t flags,
			   uint32_t input, uint32_t output, uint32_t table,
			   uint32_t count);

/*
 * Place 's' at 'va' of 'ctx' (mapped read-only into fresh memory), submit
 * it on queue 'q', run the device until idle and return the completion.
 * Returns false when no valid completion record was written.
 */
bool sim_test_run_stream(struct sim_test_host *host, unsigned int q,
			 uint32_t ctx, uint64_t va,
			 const struct sim_test_stream *s,
			 struct npu_completion *out);

unsigned int sim_test_irq_count(const struct sim_test_host *host,
				unsigned int vector);

#endif /* SIM_TEST_HOST_H */
