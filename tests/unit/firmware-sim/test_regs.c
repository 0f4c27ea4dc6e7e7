/* SPDX-License-Identifier: MIT */
/*
 * test_regs.c - the register file: identity values, unknown and odd
 * offsets, scratch, IRQ mask / ack / delivery, timestamp, and what a
 * reset clears.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim_test_host.h"

#define MEM_SIZE	(4u << 20)

static int host_setup(void **state)
{
	static struct sim_test_host host;

	if (sim_test_host_init(&host, MEM_SIZE))
		return -1;
	*state = &host;
	return 0;
}

static int host_teardown(void **state)
{
	sim_test_host_fini(*state);
	return 0;
}

static void identity_registers_describe_the_device(void **state)
{
	struct sim_test_host *host = *state;

	assert_int_equal(sim_test_reg(host, NPU_REG_ID), NPU_ID_MAGIC);
	assert_int_equal(sim_test_reg(host, NPU_REG_HW_VERSION),
			 NPU_VERSION(NPU_HW_VERSION_MAJOR, NPU_HW_VERSION_MINOR));
	assert_int_equal(sim_test_reg(host, NPU_REG_ISA_VERSION),
			 NPU_VERSION(NPU_ISA_VERSION_MAJOR, NPU_ISA_VERSION_MINOR));
	assert_int_equal(sim_test_reg(host, NPU_REG_CAPS) & NPU_CAP_MMU, NPU_CAP_MMU);
	assert_int_equal(sim_test_reg(host, NPU_REG_CAPS) & NPU_CAP_WATCHDOG,
			 NPU_CAP_WATCHDOG);
	assert_int_equal(sim_test_reg(host, NPU_REG_NUM_QUEUES), NPU_NUM_QUEUES);
	assert_int_equal(sim_test_reg(host, NPU_REG_NUM_CONTEXTS), NPU_NUM_CONTEXTS);
	assert_int_equal(sim_test_reg(host, NPU_REG_MAC_SHAPE),
			 (NPU_MAC_ROWS << 16) | NPU_MAC_COLS);
	assert_int_equal(sim_test_reg(host, NPU_REG_SRAM_SIZE), NPU_SRAM_SIZE);
	assert_int_equal(sim_test_reg(host, NPU_REG_CLOCK_MHZ), NPU_CLOCK_MHZ);
	assert_int_equal(sim_test_reg(host, NPU_REG_DMA_BYTES_PER_CYCLE),
			 NPU_DMA_BYTES_PER_CYCLE);
	assert_int_equal(sim_test_reg(host, NPU_REG_OP_MASK), NPU_OP_MASK_ALL);
	assert_int_equal(sim_test_reg(host, NPU_REG_VA_BITS), NPU_VA_BITS);
	assert_int_equal(sim_test_reg(host, NPU_REG_RING_MAX_ENTRIES),
			 NPU_RING_MAX_ENTRIES);
	assert_int_equal(sim_test_reg(host, NPU_REG_VECTOR_LANES), NPU_VECTOR_LANES);
	assert_int_equal(sim_test_reg(host, NPU_REG_STATUS), NPU_STATE_OFF);
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++) {
		assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(q, NPU_QREG_PRIORITY)), q);
		assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(q, NPU_QREG_CTRL)),
				 NPU_QUEUE_ENABLE);
	}
	/* Identity registers are read-only. */
	sim_test_set_reg(host, NPU_REG_ID, 0);
	sim_test_set_reg(host, NPU_REG_SRAM_SIZE, 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_ID), NPU_ID_MAGIC);
	assert_int_equal(sim_test_reg(host, NPU_REG_SRAM_SIZE), NPU_SRAM_SIZE);
}

static void unknown_and_unaligned_offsets_read_zero(void **state)
{
	struct sim_test_host *host = *state;
	const uint32_t offsets[] = { 0x003c, 0x0098, 0x010c, 0x0500, 0x0ffc,
				     NPU_REG_QUEUE(NPU_NUM_QUEUES, 0),
				     NPU_REG_QUEUE(0, 0x2c), 0x8000,
				     NPU_BAR_REGS_SIZE, 0xfffffffc };

	for (unsigned int i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		sim_test_set_reg(host, offsets[i], 0xdeadbeef);
		assert_int_equal(sim_test_reg(host, offsets[i]), 0);
	}
	/* Unaligned accesses never alias a real register. */
	sim_test_set_reg(host, NPU_REG_SCRATCH, 0x11223344);
	sim_test_set_reg(host, NPU_REG_SCRATCH + 1, 0);
	sim_test_set_reg(host, NPU_REG_CTRL + 2, NPU_CTRL_RESET);
	assert_int_equal(sim_test_reg(host, NPU_REG_SCRATCH + 1), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_ID + 3), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_SCRATCH), 0x11223344);
	assert_int_equal(sim_test_reg(host, 0xffffffffu), 0);
}

static void scratch_holds_any_value(void **state)
{
	struct sim_test_host *host = *state;
	const uint32_t values[] = { 0, 1, 0xffffffffu, 0xa5a5a5a5u };

	for (unsigned int i = 0; i < 4; i++) {
		sim_test_set_reg(host, NPU_REG_SCRATCH, values[i]);
		assert_int_equal(sim_test_reg(host, NPU_REG_SCRATCH), values[i]);
	}
}

static void irq_masked_events_latch_without_vector(void **state)
{
	struct sim_test_host *host = *state;

	/* A boot event with everything masked: latched, not signalled. */
	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_STATUS), NPU_IRQ_BOOT);
	assert_int_equal(host->irq_count, 0);

	/* Unmasking a latched event delivers it once. */
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, NPU_IRQ_BOOT);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_MASK), NPU_IRQ_BOOT);
	assert_int_equal(host->irq_count, 1);
	assert_int_equal(host->irq_log[0], NPU_MSIX_VEC_ERROR);
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, NPU_IRQ_BOOT);
	assert_int_equal(host->irq_count, 1);

	/* ACK clears only the written bits; IRQ_STATUS itself is read-only. */
	sim_test_set_reg(host, NPU_REG_IRQ_STATUS, 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_STATUS), NPU_IRQ_BOOT);
	sim_test_set_reg(host, NPU_REG_IRQ_ACK, NPU_IRQ_JOB_ERROR);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_STATUS), NPU_IRQ_BOOT);
	sim_test_set_reg(host, NPU_REG_IRQ_ACK, NPU_IRQ_BOOT);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_STATUS), 0);
}

static void queue_done_raises_its_own_vector(void **state)
{
	struct sim_test_host *host = *state;
	struct sim_test_stream *s = test_malloc(sizeof(*s));
	struct npu_completion c;

	sim_test_host_fini(host);
	assert_int_equal(sim_test_host_setup(host, MEM_SIZE), 0);
	sim_test_ctx_init(host, 1);
	sim_test_stream_init(s);
	sim_test_emit_nop(s, 0);
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, NPU_IRQ_QUEUE_DONE(1));
	host->irq_count = 0;
	assert_true(sim_test_run_stream(host, 1, 1, 0x10000, s, &c));
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(host->irq_count, 1);
	assert_int_equal(host->irq_log[0], NPU_MSIX_VEC_QUEUE(1));
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_QUEUE_DONE(1));

	/* Queue 0's event is latched but masked. */
	assert_true(sim_test_run_stream(host, 0, 1, 0x20000, s, &c));
	assert_int_equal(host->irq_count, 1);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_QUEUE_DONE(0));
	test_free(s);
}

static void timestamp_counts_from_reset_and_latches_hi(void **state)
{
	struct sim_test_host *host = *state;
	uint32_t lo1, lo2;

	host->now_ns = 5000000000ull;	/* above 2^32 ns */
	host->clock_step = 1000;
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	lo1 = sim_test_reg(host, NPU_REG_TIMESTAMP_LO);
	assert_int_equal(sim_test_reg(host, NPU_REG_TIMESTAMP_HI), 0);
	assert_int_equal(lo1, 1000);
	lo2 = sim_test_reg(host, NPU_REG_TIMESTAMP_LO);
	assert_true(lo2 > lo1);

	/* Far past reset: HI is latched by the LO read, not by its own read. */
	host->now_ns += 3ull << 32;
	lo1 = sim_test_reg(host, NPU_REG_TIMESTAMP_LO);
	host->now_ns += 1ull << 32;
	assert_int_equal(sim_test_reg(host, NPU_REG_TIMESTAMP_HI), 3);
}

static void reset_returns_every_register_to_its_reset_value(void **state)
{
	struct sim_test_host *host = *state;

	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
	sim_test_set_reg(host, NPU_REG_SCRATCH, 77);
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, 0xffffffffu);
	sim_test_set_reg64(host, NPU_REG_CTX_TABLE_LO, 0x123456789000ull);
	sim_test_set_reg(host, NPU_REG_WATCHDOG_CYCLES, 99);
	sim_test_set_reg(host, NPU_REG_DEBUG, NPU_DEBUG_HANG_NEXT);
	sim_test_set_reg64(host, NPU_REG_QUEUE(1, NPU_QREG_RING_BASE_LO), 0x4000);
	sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_RING_SIZE), 16);
	sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_TAIL), 3);
	assert_int_equal(sim_test_reg(host, NPU_REG_CTX_TABLE_HI), 0x1234);
	assert_int_equal(sim_test_reg(host, NPU_REG_DEBUG), NPU_DEBUG_HANG_NEXT);

	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(sim_test_reg(host, NPU_REG_CTRL), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_STATUS), NPU_STATE_OFF);
	assert_int_equal(sim_test_reg(host, NPU_REG_FW_VERSION), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_SCRATCH), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_MASK), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_STATUS), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_CTX_TABLE_LO), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_CTX_TABLE_HI), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_WATCHDOG_CYCLES), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_DEBUG), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_STATUS), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_JOBS_LO), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_BOOT_STATUS), NPU_BOOT_OK);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_RING_BASE_LO)), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_RING_SIZE)), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_TAIL)), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_HEAD)), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_STATUS)), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_MMU_INVALIDATE), 0);
	/* A reset device boots again. */
	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
}

static void perf_and_fault_registers_are_read_only(void **state)
{
	struct sim_test_host *host = *state;

	sim_test_set_reg(host, NPU_REG_PERF_JOBS_LO, 5);
	sim_test_set_reg(host, NPU_REG_PERF_ERRORS, 5);
	sim_test_set_reg(host, NPU_REG_FAULT_STATUS, 5);
	sim_test_set_reg(host, NPU_REG_QUEUE(0, NPU_QREG_HEAD), 5);
	sim_test_set_reg(host, NPU_REG_QUEUE(0, NPU_QREG_LAST_SEQ_LO), 5);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_JOBS_LO), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_ERRORS), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_STATUS), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(0, NPU_QREG_HEAD)), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(0, NPU_QREG_LAST_SEQ_LO)), 0);
}

static const struct npu_sim_host_ops no_ops;

static void create_rejects_missing_callbacks(void **state)
{
	(void)state;
	assert_null(npu_sim_create(NULL, NULL));
	assert_null(npu_sim_create(&no_ops, NULL));
	npu_sim_destroy(NULL);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, host_setup, host_teardown)
	const struct CMUnitTest tests[] = {
		T(identity_registers_describe_the_device),
		T(unknown_and_unaligned_offsets_read_zero),
		T(scratch_holds_any_value),
		T(irq_masked_events_latch_without_vector),
		T(queue_done_raises_its_own_vector),
		T(timestamp_counts_from_reset_and_latches_hi),
		T(reset_returns_every_register_to_its_reset_value),
		T(perf_and_fault_registers_are_read_only),
		cmocka_unit_test(create_rejects_missing_callbacks),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
