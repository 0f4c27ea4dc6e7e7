/* SPDX-License-Identifier: MIT */
/*
 * npu_sim.h - firmware-sim: the NPU of npu_hw.h as a portable C11 library.
 *
 * The simulator is the device: register file, queue engine, MMU walker,
 * ISA decoder/validator/executor and cycle model. It owns no memory of
 * the host's: every access to "host memory" (rings, page tables, tensors)
 * goes through the host's callbacks, so the QEMU device (guest DMA) and the
 * in-process userspace backend (plain memory) run the same code.
 *
 * Threading: npu_sim_reg_read(), npu_sim_reg_write(), npu_sim_job_fetch()
 * and npu_sim_job_finish() must be serialized by the host (QEMU: the BQL or
 * the device lock). npu_sim_job_execute() is the long part and may run on
 * another thread while registers are accessed: a reset or an MMU
 * invalidation written meanwhile is seen by the running job at its next
 * instruction or translation. At most one job executes at a time.
 */
#ifndef NPU_SIM_H
#define NPU_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_sim_host_ops {
	/* Copy host memory at 'addr'; return 0, or -1 for a bus error. */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
			 size_t len);
	/* Signal MSI-X vector 'vector' (NPU_MSIX_VEC_*). */
	void (*irq)(void *opaque, unsigned int vector);
	/* A monotonic clock in nanoseconds. */
	uint64_t (*now_ns)(void *opaque);
};

struct npu_sim;

/* Returns NULL only when out of memory. The device starts in NPU_STATE_OFF. */
struct npu_sim *npu_sim_create(const struct npu_sim_host_ops *ops,
			       void *opaque);
void npu_sim_destroy(struct npu_sim *sim);

/*
 * Host threads one job's instructions run on (hardware.md, "Host
 * threads"): 1 (the default) runs everything on the thread that calls
 * npu_sim_job_execute(); n > 1 starts n - 1 workers once, which take part
 * in the large CONV2D, MATMUL, ELTWISE, LUT, POOL and RESIZE
 * instructions. The device model stays one NPU: modeled cycles, MACs,
 * statuses and every byte written are the same for every count. Call it
 * on the serialized side while no job executes. Returns 0, or -1 with
 * the count outside 1..NPU_SIM_MAX_THREADS or when the workers cannot be
 * started (the previous setting is kept).
 */
#define NPU_SIM_MAX_THREADS	64
int npu_sim_set_threads(struct npu_sim *sim, unsigned int threads);
unsigned int npu_sim_threads(const struct npu_sim *sim);

/* 32-bit aligned register access at a BAR0 offset (see npu_hw.h). */
uint32_t npu_sim_reg_read(struct npu_sim *sim, uint32_t offset);
void npu_sim_reg_write(struct npu_sim *sim, uint32_t offset, uint32_t value);

/* A job between fetch and finish; the host keeps it, its fields are output. */
struct npu_sim_job {
	uint32_t queue;
	uint32_t epoch;		/* reset epoch at fetch: stale jobs are dropped */
	bool hang;		/* injected hang: the host must never finish it */
	struct npu_job_desc desc;
	struct npu_completion result;
};

/*
 * Take the next descriptor (queue 0 before queue 1) and mark the device
 * busy. Returns false when no queue has work, or a job is already running.
 */
bool npu_sim_job_fetch(struct npu_sim *sim, struct npu_sim_job *job);
/* Run the job's command stream; fills job->result. */
void npu_sim_job_execute(struct npu_sim *sim, struct npu_sim_job *job);
/*
 * Write the completion record, advance the queue's head, update the
 * counters and raise the interrupts. A job fetched before a reset is
 * discarded silently.
 */
void npu_sim_job_finish(struct npu_sim *sim, struct npu_sim_job *job);

/*
 * For single-threaded hosts: fetch, execute and finish until no queue has
 * work (an injected hang stops the loop). Returns the number of jobs run.
 */
unsigned int npu_sim_run_pending(struct npu_sim *sim);

/* Whether a doorbell left work that npu_sim_job_fetch() would take. */
bool npu_sim_has_work(struct npu_sim *sim);

/*
 * Firmware boot off the register path, for hosts with an execute thread
 * (QEMU): a boot reads up to 16 MiB and checks its CRC. After
 * npu_sim_set_async_boot(sim, true), FW_BOOT.START only checks the state
 * and moves the device to BOOTING; the host then takes the request with
 * npu_sim_boot_fetch(), runs npu_sim_boot_execute() on any thread (it
 * only reads host memory into 'boot') and completes it with
 * npu_sim_boot_finish() on the serialized side: READY or FW_ERROR,
 * BOOT_STATUS and NPU_IRQ_BOOT, as the synchronous boot does. A boot
 * fetched before a reset is dropped at finish. Off by default: the boot
 * then completes inside the FW_BOOT write.
 */
struct npu_sim_boot {
	uint64_t addr;
	uint32_t size;
	uint32_t epoch;
	uint32_t status;	/* enum npu_boot_status, set by execute */
	struct npu_fw_header header;
	struct npu_fw_config config;
};

void npu_sim_set_async_boot(struct npu_sim *sim, bool async);
bool npu_sim_boot_fetch(struct npu_sim *sim, struct npu_sim_boot *boot);
void npu_sim_boot_execute(struct npu_sim *sim, struct npu_sim_boot *boot);
void npu_sim_boot_finish(struct npu_sim *sim, struct npu_sim_boot *boot);

/* ---- Firmware images (the format is in npu_hw.h) ---- */

uint32_t npu_crc32(uint32_t crc, const void *buf, size_t len);

/*
 * Build an image into 'buf' (capacity 'cap'); returns its size, or 0 if it
 * does not fit. 'payload' may be NULL when payload_size is 0.
 */
size_t npu_fw_build(void *buf, size_t cap, uint32_t fw_version,
		    const char *build_id, const struct npu_fw_config *config,
		    const void *payload, size_t payload_size);
/* The configuration the reference firmware ships with. */
void npu_fw_default_config(struct npu_fw_config *config);

/* ---- Names for messages ---- */

const char *npu_job_status_name(uint32_t status);	/* "MMU_UNMAPPED" */
const char *npu_boot_status_name(uint32_t status);
const char *npu_opcode_name(uint32_t opcode);		/* "CONV2D" or NULL */

#ifdef __cplusplus
}
#endif

#endif /* NPU_SIM_H */
