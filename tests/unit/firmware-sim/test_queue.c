/* SPDX-License-Identifier: MIT */
/*
 * test_queue.c - the queue engine: many jobs over ring wraparound,
 * priorities, completion records and counters, watchdog, injected hangs,
 * resets with jobs queued or running, invalid ring registers and
 * descriptors.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim_test_host.h"

#define MEM_SIZE	(8u << 20)
#define CMD_VA		0x100000ull

struct fixture {
	struct sim_test_host host;
	struct sim_test_stream stream;
};

static int fixture_setup(void **state)
{
	struct fixture *f = test_calloc(1, sizeof(*f));

	if (!f || sim_test_host_setup(&f->host, MEM_SIZE))
		return -1;
	sim_test_ctx_init(&f->host, 1);
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;

	sim_test_host_fini(&f->host);
	test_free(f);
	return 0;
}

/* Place f->stream at 'va' in context 1. */
static void load_stream(struct fixture *f, uint64_t va)
{
	uint64_t addr = sim_test_map_new(&f->host, 1, va, f->stream.len,
					 NPU_PTE_READ);

	sim_test_write(&f->host, addr, f->stream.buf, f->stream.len);
}

static uint32_t push_job(struct fixture *f, unsigned int q, uint64_t va,
			 uint64_t seqno, bool doorbell)
{
	struct npu_job_desc desc = sim_test_desc(&f->host, q, 1, va,
						 f->stream.len, seqno);

	return sim_test_push(&f->host, q, &desc, doorbell);
}

static uint32_t qreg(struct fixture *f, unsigned int q, uint32_t reg)
{
	return sim_test_reg(&f->host, NPU_REG_QUEUE(q, reg));
}

static void many_jobs_wrap_the_ring_over_several_laps(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	uint64_t seqno = 1000;
	uint32_t index = 0;

	sim_test_ring_init(&f->host, 1, 8);
	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	/* Batches of 6 on a ring of 8: the batches straddle the wrap point. */
	for (unsigned int batch = 0; batch < 7; batch++) {
		uint32_t first = index;

		for (unsigned int j = 0; j < 6; j++)
			push_job(f, 1, CMD_VA, seqno + index + j, j == 5);
		assert_true(npu_sim_has_work(f->host.sim));
		assert_int_equal(npu_sim_run_pending(f->host.sim), 6);
		assert_false(npu_sim_has_work(f->host.sim));
		for (uint32_t i = first; i < first + 6; i++) {
			assert_true(sim_test_completion(&f->host, 1, i, &c));
			assert_int_equal(c.status, NPU_JOB_OK);
			assert_int_equal(c.seqno, seqno + i);
			assert_int_equal(c.queue, 1);
		}
		index += 6;
		assert_int_equal(qreg(f, 1, NPU_QREG_HEAD), index);
	}
	assert_int_equal(qreg(f, 1, NPU_QREG_LAST_SEQ_LO), seqno + index - 1);
	assert_int_equal(qreg(f, 1, NPU_QREG_LAST_SEQ_HI), 0);
	assert_int_equal(sim_test_reg(&f->host, NPU_REG_PERF_JOBS_LO), 42);
	assert_int_equal(sim_test_reg(&f->host, NPU_REG_PERF_ERRORS), 0);
	assert_int_equal(sim_test_irq_count(&f->host, NPU_MSIX_VEC_QUEUE(1)), 42);
}

static void tail_may_advance_once_a_slot_is_consumed(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_sim_job job;
	struct npu_completion c;

	/* A full ring of 4; after one completion a fifth job fits. */
	sim_test_ring_init(host, 0, 4);
	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	for (int i = 0; i < 4; i++)
		push_job(f, 0, CMD_VA, i, false);
	sim_test_doorbell(host, 0);
	assert_int_equal(qreg(f, 0, NPU_QREG_STATUS), NPU_QUEUE_OK);
	assert_true(npu_sim_job_fetch(host->sim, &job));
	npu_sim_job_execute(host->sim, &job);
	npu_sim_job_finish(host->sim, &job);
	assert_true(sim_test_completion(host, 0, 0, &c));
	push_job(f, 0, CMD_VA, 4, true);
	assert_int_equal(qreg(f, 0, NPU_QREG_STATUS), NPU_QUEUE_OK);
	assert_int_equal(npu_sim_run_pending(host->sim), 4);
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 5);
}

static void queue_0_drains_before_queue_1(void **state)
{
	struct fixture *f = *state;
	struct npu_sim_job job;
	unsigned int order[16], n = 0;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	for (int i = 0; i < 4; i++)
		push_job(f, 1, CMD_VA, 100 + i, true);
	for (int i = 0; i < 4; i++)
		push_job(f, 0, CMD_VA, i, true);
	while (npu_sim_job_fetch(f->host.sim, &job)) {
		/* Only one job at a time. */
		struct npu_sim_job other;

		assert_false(npu_sim_job_fetch(f->host.sim, &other));
		assert_true(sim_test_reg(&f->host, NPU_REG_STATUS) & NPU_STATUS_BUSY);
		npu_sim_job_execute(f->host.sim, &job);
		npu_sim_job_finish(f->host.sim, &job);
		order[n++] = job.queue;
		/* A new high-priority job overtakes the rest of queue 1. */
		if (n == 5)
			push_job(f, 0, CMD_VA, 4, true);
	}
	assert_int_equal(n, 9);
	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(order[i], 0);
	assert_int_equal(order[4], 1);
	assert_int_equal(order[5], 0);
	for (unsigned int i = 6; i < 9; i++)
		assert_int_equal(order[i], 1);
}

static void completion_record_carries_the_job_results(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	uint64_t expected_cycles;
	uint32_t index;

	sim_test_stream_init(&f->stream);
	/* 3 rows of 100 bytes: 64 + 3 * ceil(100 / 64) = 70 DMA cycles. */
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 7, 3, 100, 128);
	sim_test_emit_nop(&f->stream, 0);
	expected_cycles = NPU_CYCLES_INSN_OVERHEAD + 70;
	load_stream(f, CMD_VA);
	index = push_job(f, 0, CMD_VA, 0x1122334455667788ull, true);
	assert_int_equal(npu_sim_run_pending(host->sim), 1);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.error_offset, 0);
	assert_int_equal(c.seqno, 0x1122334455667788ull);
	assert_true(c.start_ns > 0);
	assert_true(c.end_ns > c.start_ns);
	assert_int_equal(c.cycles, expected_cycles);
	assert_int_equal(c.macs, 0);
	assert_int_equal(c.fault_addr, 0);
	assert_int_equal(c.queue, 0);
	assert_int_equal(c.fence, NPU_COMPLETION_FENCE);
	assert_int_equal(qreg(f, 0, NPU_QREG_LAST_SEQ_LO), 0x55667788u);
	assert_int_equal(qreg(f, 0, NPU_QREG_LAST_SEQ_HI), 0x11223344u);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_CYCLES_LO), expected_cycles);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_DMA_BYTES_LO), 300);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_JOBS_LO), 1);
	assert_int_equal(sim_test_irq_count(host, NPU_MSIX_VEC_QUEUE(0)), 1);
	assert_int_equal(sim_test_irq_count(host, NPU_MSIX_VEC_ERROR), 0);
}

static void watchdog_ends_a_job_with_huge_modeled_cycles(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	uint32_t offset, index;
	uint32_t watchdog = sim_test_reg(host, NPU_REG_WATCHDOG_CYCLES);

	assert_int_equal(watchdog, 2000000000u);
	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	/* 2^32 - 1 rows: ~4.3e9 modeled cycles, stopped before it runs. */
	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 1,
				    UINT32_MAX, 64, 0);
	load_stream(f, CMD_VA);
	index = push_job(f, 0, CMD_VA, 1, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_WATCHDOG);
	assert_int_equal(c.error_offset, offset);
	assert_int_equal(c.cycles, watchdog);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_WATCHDOG);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_ERRORS), 1);

	/* A host-programmed watchdog: NOP k ends at 16 * (k + 1) cycles. */
	sim_test_set_reg(host, NPU_REG_WATCHDOG_CYCLES, 1000);
	sim_test_stream_init(&f->stream);
	for (int i = 0; i < 100; i++)
		sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA + 0x10000);
	index = push_job(f, 0, CMD_VA + 0x10000, 2, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_WATCHDOG);
	assert_int_equal(c.error_offset, sizeof(struct npu_cs_header) + 62 * 8);
	assert_int_equal(c.cycles, 1000);

	/* 0 disables the watchdog. */
	sim_test_set_reg(host, NPU_REG_WATCHDOG_CYCLES, 0);
	index = push_job(f, 0, CMD_VA + 0x10000, 3, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.cycles, 1600);
}

static void hang_next_job_stays_busy_until_reset(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	struct npu_sim_job job;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	sim_test_set_reg(host, NPU_REG_DEBUG, NPU_DEBUG_HANG_NEXT);
	push_job(f, 0, CMD_VA, 1, true);
	push_job(f, 0, CMD_VA, 2, true);
	assert_int_equal(npu_sim_run_pending(host->sim), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_DEBUG), 0);
	assert_true(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_BUSY);
	assert_false(npu_sim_has_work(host->sim));
	assert_false(npu_sim_job_fetch(host->sim, &job));
	assert_false(sim_test_completion(host, 0, 0, &c));
	assert_false(sim_test_completion(host, 0, 1, &c));
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 0);

	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(sim_test_reg(host, NPU_REG_STATUS), NPU_STATE_OFF);

	/* Recovery: boot, reprogram, resubmit. */
	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
	sim_test_ctx_table_init(host);
	sim_test_ctx_init(host, 1);
	sim_test_ring_init(host, 0, 8);
	load_stream(f, CMD_VA);
	push_job(f, 0, CMD_VA, 3, true);
	assert_int_equal(npu_sim_run_pending(host->sim), 1);
	assert_true(sim_test_completion(host, 0, 0, &c));
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.seqno, 3);
}

static void reset_with_jobs_queued_writes_no_completion(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	struct npu_sim_job job;

	sim_test_stream_init(&f->stream);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 0xee, 1, 64, 0);
	load_stream(f, CMD_VA);
	for (int i = 0; i < 3; i++)
		push_job(f, 0, CMD_VA, i, true);
	assert_true(npu_sim_job_fetch(host->sim, &job));

	/* Reset between fetch and execute: the job aborts, is dropped. */
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	npu_sim_job_execute(host->sim, &job);
	assert_int_equal(job.result.status, NPU_JOB_ERR_ABORTED);
	npu_sim_job_finish(host->sim, &job);
	assert_int_equal(npu_sim_run_pending(host->sim), 0);
	for (uint32_t i = 0; i < 3; i++)
		assert_false(sim_test_completion(host, 0, i, &c));
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_JOBS_LO), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_IRQ_STATUS), 0);
	assert_false(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_BUSY);

	/* Reset between execute and finish: also dropped. */
	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
	sim_test_ctx_table_init(host);
	sim_test_ctx_init(host, 1);
	sim_test_ring_init(host, 0, 8);
	load_stream(f, CMD_VA);
	push_job(f, 0, CMD_VA, 7, true);
	assert_true(npu_sim_job_fetch(host->sim, &job));
	npu_sim_job_execute(host->sim, &job);
	assert_int_equal(job.result.status, NPU_JOB_OK);
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	npu_sim_job_finish(host->sim, &job);
	assert_false(sim_test_completion(host, 0, 0, &c));
}

struct exec_thread {
	struct npu_sim *sim;
	struct npu_sim_job *job;
};

static void *exec_thread_main(void *arg)
{
	struct exec_thread *t = arg;

	npu_sim_job_execute(t->sim, t->job);
	return NULL;
}

static void reset_aborts_a_job_running_on_another_thread(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_sim_job job;
	struct exec_thread t = { host->sim, &job };
	struct npu_completion c;
	pthread_t thread;

	/* About 2^31 one-byte rows: minutes of work unless aborted. */
	sim_test_set_reg(host, NPU_REG_WATCHDOG_CYCLES, 0);
	sim_test_stream_init(&f->stream);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 1, 1u << 31, 1, 0);
	load_stream(f, CMD_VA);
	push_job(f, 0, CMD_VA, 1, true);
	assert_true(npu_sim_job_fetch(host->sim, &job));
	assert_int_equal(pthread_create(&thread, NULL, exec_thread_main, &t), 0);
	sim_test_set_reg(host, NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(pthread_join(thread, NULL), 0);
	assert_int_equal(job.result.status, NPU_JOB_ERR_ABORTED);
	npu_sim_job_finish(host->sim, &job);
	assert_false(sim_test_completion(host, 0, 0, &c));
}

static void invalid_ring_registers_stop_the_queue(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	const struct {
		uint64_t base;
		uint32_t size;
		uint32_t tail;
		uint32_t status;
	} cases[] = {
		{ 0x10020, 8, 1, NPU_QUEUE_ERR_RING_BASE },
		{ 0x10000, 0, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ 0x10000, 3, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ 0x10000, 2 * NPU_RING_MAX_ENTRIES, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ 0x10000, 8, 9, NPU_QUEUE_ERR_TAIL },
		{ 0x10000, 8, 0xffffffffu, NPU_QUEUE_ERR_TAIL },
	};

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sim_test_set_reg(host, NPU_REG_IRQ_ACK, 0xffffffffu);
		sim_test_set_reg64(host, NPU_REG_QUEUE(1, NPU_QREG_RING_BASE_LO),
				   cases[i].base);
		sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_RING_SIZE),
				 cases[i].size);
		sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_TAIL), cases[i].tail);
		sim_test_doorbell(host, 1);
		assert_int_equal(qreg(f, 1, NPU_QREG_STATUS), cases[i].status);
		assert_int_equal(qreg(f, 1, NPU_QREG_CTRL), 0);
		assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR);
		assert_false(npu_sim_has_work(host->sim));
		/* A stopped queue ignores doorbells until re-enabled. */
		sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_TAIL), 0);
		sim_test_doorbell(host, 1);
		assert_int_equal(qreg(f, 1, NPU_QREG_STATUS), cases[i].status);
		sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_CTRL), NPU_QUEUE_ENABLE);
		assert_int_equal(qreg(f, 1, NPU_QREG_STATUS), NPU_QUEUE_OK);
	}
}

static void unreadable_ring_stops_queue_at_fetch(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_sim_job job;

	sim_test_set_reg64(host, NPU_REG_QUEUE(1, NPU_QREG_RING_BASE_LO),
			   MEM_SIZE + 0x1000);
	sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_RING_SIZE), 8);
	sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_TAIL), 1);
	sim_test_doorbell(host, 1);
	assert_int_equal(qreg(f, 1, NPU_QREG_STATUS), NPU_QUEUE_OK);
	assert_true(npu_sim_has_work(host->sim));
	assert_false(npu_sim_job_fetch(host->sim, &job));
	assert_int_equal(qreg(f, 1, NPU_QREG_STATUS), NPU_QUEUE_ERR_RING_BASE);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR);
	assert_false(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_BUSY);
}

static void tail_without_doorbell_is_not_work(void **state)
{
	struct fixture *f = *state;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	push_job(f, 0, CMD_VA, 1, false);
	assert_false(npu_sim_has_work(f->host.sim));
	assert_int_equal(npu_sim_run_pending(f->host.sim), 0);
	sim_test_doorbell(&f->host, 0);
	assert_int_equal(npu_sim_run_pending(f->host.sim), 1);

	/* Disabling a queue drops what its doorbell announced. */
	push_job(f, 0, CMD_VA, 2, true);
	sim_test_set_reg(&f->host, NPU_REG_QUEUE(0, NPU_QREG_CTRL), 0);
	assert_false(npu_sim_has_work(f->host.sim));
	sim_test_set_reg(&f->host, NPU_REG_QUEUE(0, NPU_QREG_CTRL), NPU_QUEUE_ENABLE);
	assert_false(npu_sim_has_work(f->host.sim));
	sim_test_doorbell(&f->host, 0);
	assert_int_equal(npu_sim_run_pending(f->host.sim), 1);
}

/*
 * Issue 29 D-c: a queue disabled (or its TAIL rewound and rung) while one
 * of its jobs runs must not leave HEAD past the doorbell TAIL when that job
 * completes, or a re-enabled queue runs ring slots nobody submitted.
 */
static void queue_stopped_during_a_job_runs_nothing_more(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_sim_job job;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	push_job(f, 0, CMD_VA, 1, true);
	assert_true(npu_sim_job_fetch(host->sim, &job));
	sim_test_set_reg(host, NPU_REG_QUEUE(0, NPU_QREG_CTRL), 0);
	npu_sim_job_execute(host->sim, &job);
	npu_sim_job_finish(host->sim, &job);
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 1);
	sim_test_set_reg(host, NPU_REG_QUEUE(0, NPU_QREG_CTRL), NPU_QUEUE_ENABLE);
	assert_false(npu_sim_has_work(host->sim));
	assert_int_equal(npu_sim_run_pending(host->sim), 0);
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 1);
	assert_int_equal(qreg(f, 0, NPU_QREG_TAIL), 1);

	/* The same with TAIL rewound onto the running job and rung. */
	push_job(f, 0, CMD_VA, 2, true);
	assert_true(npu_sim_job_fetch(host->sim, &job));
	sim_test_set_reg(host, NPU_REG_QUEUE(0, NPU_QREG_TAIL), 1);
	sim_test_doorbell(host, 0);
	npu_sim_job_execute(host->sim, &job);
	npu_sim_job_finish(host->sim, &job);
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 2);
	assert_false(npu_sim_has_work(host->sim));
	assert_int_equal(npu_sim_run_pending(host->sim), 0);

	/* The queue still works: the next submission runs once. */
	sim_test_set_reg(host, NPU_REG_QUEUE(0, NPU_QREG_TAIL), 2);
	push_job(f, 0, CMD_VA, 3, true);
	assert_int_equal(npu_sim_run_pending(host->sim), 1);
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 3);
}

static void bad_descriptors_complete_with_bad_desc(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	struct npu_job_desc desc;
	uint32_t index;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	for (int i = 0; i < 8; i++) {
		desc = sim_test_desc(host, 0, 1, CMD_VA, f->stream.len, 50 + i);
		switch (i) {
		case 0: desc.flags = 1; break;
		case 1: desc.reserved0 = 1; break;
		case 2: desc.reserved1[2] = 1; break;
		case 3: desc.cmd_size = 0; break;
		case 4: desc.cmd_size = 20; break;
		case 5: desc.cmd_size = NPU_CS_MAX_SIZE + 8; break;
		case 6: desc.completion_addr += 8; break;
		default: break;	/* the last one is valid */
		}
		index = sim_test_push(host, 0, &desc, true);
		npu_sim_run_pending(host->sim);
		if (i == 6) {
			sim_test_read(host, desc.completion_addr, &c, sizeof(c));
			assert_int_equal(c.fence, NPU_COMPLETION_FENCE);
		} else {
			assert_true(sim_test_completion(host, 0, index, &c));
		}
		assert_int_equal(c.status, i == 7 ? NPU_JOB_OK : NPU_JOB_ERR_BAD_DESC);
		assert_int_equal(c.seqno, 50 + i);
	}
	assert_int_equal(qreg(f, 0, NPU_QREG_STATUS), NPU_QUEUE_OK);
	assert_int_equal(qreg(f, 0, NPU_QREG_HEAD), 8);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_ERRORS), 7);
}

static void unwritable_completion_stops_the_queue(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_job_desc desc;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	load_stream(f, CMD_VA);
	desc = sim_test_desc(host, 1, 1, CMD_VA, f->stream.len, 1);
	desc.completion_addr = MEM_SIZE - 32;	/* record crosses the end */
	sim_test_push(host, 1, &desc, true);
	push_job(f, 1, CMD_VA, 2, true);
	assert_int_equal(npu_sim_run_pending(host->sim), 1);
	assert_int_equal(qreg(f, 1, NPU_QREG_STATUS), NPU_QUEUE_ERR_COMPLETION);
	assert_int_equal(qreg(f, 1, NPU_QREG_HEAD), 0);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR);
	assert_false(npu_sim_has_work(host->sim));
	/* Queue 0 is unaffected. */
	push_job(f, 0, CMD_VA, 3, true);
	assert_int_equal(npu_sim_run_pending(host->sim), 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
	const struct CMUnitTest tests[] = {
		T(many_jobs_wrap_the_ring_over_several_laps),
		T(tail_may_advance_once_a_slot_is_consumed),
		T(queue_0_drains_before_queue_1),
		T(completion_record_carries_the_job_results),
		T(watchdog_ends_a_job_with_huge_modeled_cycles),
		T(hang_next_job_stays_busy_until_reset),
		T(reset_with_jobs_queued_writes_no_completion),
		T(reset_aborts_a_job_running_on_another_thread),
		T(invalid_ring_registers_stop_the_queue),
		T(unreadable_ring_stops_queue_at_fetch),
		T(tail_without_doorbell_is_not_work),
		T(queue_stopped_during_a_job_runs_nothing_more),
		T(bad_descriptors_complete_with_bad_desc),
		T(unwritable_completion_stops_the_queue),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
