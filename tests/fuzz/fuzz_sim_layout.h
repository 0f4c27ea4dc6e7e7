/* SPDX-License-Identifier: MIT */
/*
 * The guest memory both firmware-sim fuzzers (fuzz_isa, fuzz_device) start
 * every input from: a firmware image, the context table, one context with
 * all of memory mapped read-write, a 4-slot ring per queue, and a snapshot
 * of it all to restore between inputs; and the boot that brings the device
 * up on it.
 */
#ifndef FUZZ_SIM_LAYOUT_H
#define FUZZ_SIM_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_test_host.h"

struct fuzz_sim_layout {
	uint64_t fw_addr;
	uint32_t fw_size;
	uint8_t *snapshot;	/* host->mem as laid out, mem_size bytes */
};

/* Aborts if anything would land at or past 'first_free' (the fuzzers' own data). */
static inline void fuzz_sim_layout_init(struct sim_test_host *host, uint64_t mem_size,
					uint32_t tlb_entries, uint32_t ctx,
					uint64_t first_free, struct fuzz_sim_layout *l)
{
	struct npu_fw_config config;
	uint8_t image[256];

	npu_fw_default_config(&config);
	config.tlb_entries = tlb_entries;
	l->fw_size = (uint32_t)npu_fw_build(image, sizeof(image), 1, "fuzz", &config, NULL, 0);
	l->fw_addr = sim_test_alloc(host, l->fw_size, 64);
	sim_test_write(host, l->fw_addr, image, l->fw_size);
	sim_test_ctx_table_init(host);
	sim_test_ctx_init(host, ctx);
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++)
		sim_test_ring_init(host, q, 4);
	sim_test_map(host, ctx, 0, 0, mem_size, NPU_PTE_READ | NPU_PTE_WRITE);
	if (host->alloc_next > first_free)
		abort();
	l->snapshot = malloc(mem_size);
	if (!l->snapshot)
		abort();
	memcpy(l->snapshot, host->mem, mem_size);
}

/*
 * Reset and boot the device on the layout, then program the watchdog, the
 * context table and the rings, with every interrupt unmasked. Returns
 * whether the firmware booted (the rest is programmed either way).
 */
static inline bool fuzz_sim_boot(struct sim_test_host *host,
				 const struct fuzz_sim_layout *l,
				 uint32_t watchdog_cycles)
{
	bool booted;

	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	sim_test_set_reg64(host, NPU_REG_FW_ADDR_LO, l->fw_addr);
	sim_test_set_reg(host, NPU_REG_FW_SIZE, l->fw_size);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	booted = sim_test_reg(host, NPU_REG_STATUS) == NPU_STATE_READY;
	sim_test_set_reg(host, NPU_REG_WATCHDOG_CYCLES, watchdog_cycles);
	sim_test_set_reg64(host, NPU_REG_CTX_TABLE_LO, host->ctx_table);
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++) {
		sim_test_set_reg64(host, NPU_REG_QUEUE(q, NPU_QREG_RING_BASE_LO),
				   host->rings[q].base);
		sim_test_set_reg(host, NPU_REG_QUEUE(q, NPU_QREG_RING_SIZE),
				 host->rings[q].entries);
	}
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, 0xffffffffu);
	return booted;
}

#endif /* FUZZ_SIM_LAYOUT_H */
