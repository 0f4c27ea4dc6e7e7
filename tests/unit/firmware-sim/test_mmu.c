/* SPDX-License-Identifier: MIT */
/*
 * test_mmu.c - the device MMU: translation, unmapped and permission
 * faults with their registers, context isolation, TLB invalidation, the
 * VA limit and page tables outside host memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim_test_host.h"

#define MEM_SIZE	(8u << 20)
#define CMD_VA		0x100000ull
#define SRC_VA		0x200000ull
#define DST_VA		0x300000ull

struct fixture {
	struct sim_test_host host;
	struct sim_test_stream stream;
	uint64_t next_cmd_va;
};

static int fixture_setup(void **state)
{
	struct fixture *f = test_calloc(1, sizeof(*f));

	if (!f || sim_test_host_setup(&f->host, MEM_SIZE))
		return -1;
	sim_test_ctx_init(&f->host, 1);
	sim_test_ctx_init(&f->host, 2);
	f->next_cmd_va = CMD_VA;
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

/* Run f->stream in 'ctx' at a fresh VA. */
static struct npu_completion run(struct fixture *f, uint32_t ctx)
{
	struct npu_completion c;

	assert_true(sim_test_run_stream(&f->host, 0, ctx, f->next_cmd_va,
					&f->stream, &c));
	f->next_cmd_va += 0x10000;
	return c;
}

/* src VA -> SRAM 0 -> dst VA, 'len' bytes. */
static void stream_copy_through_sram(struct fixture *f, uint64_t src,
				     uint64_t dst, uint32_t len)
{
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, src, NPU_SPACE_SRAM, 0,
			   1, len, 0, 0);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA, dst,
			   1, len, 0, 0);
}

static void mapped_pages_translate_across_page_boundaries(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	uint8_t pattern[3 * 4096], out[sizeof(pattern)];
	uint64_t src, dst;
	struct npu_completion c;

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + 3);
	/* Physically discontiguous: map two separate allocations page by page. */
	src = sim_test_map_new(host, 1, SRC_VA, 8192, NPU_PTE_READ);
	sim_test_map_new(host, 1, SRC_VA + 8192, 8192, NPU_PTE_READ);
	dst = sim_test_map_new(host, 1, DST_VA, 16384, NPU_PTE_READ | NPU_PTE_WRITE);
	sim_test_write(host, src, pattern, 8192);
	sim_test_write(host, sim_test_map_new(host, 1, SRC_VA + 8192, 8192,
					      NPU_PTE_READ),
		       pattern + 8192, sizeof(pattern) - 8192);

	stream_copy_through_sram(f, SRC_VA + 100, DST_VA + 50,
				 sizeof(pattern) - 200);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(host, dst + 50, out, sizeof(pattern) - 200);
	assert_memory_equal(out, pattern + 100, sizeof(pattern) - 200);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_STATUS), 0);
}

static void unmapped_read_faults_with_address_and_context(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	uint32_t offset;

	sim_test_map_new(host, 2, SRC_VA, 4096, NPU_PTE_READ);
	sim_test_map_new(host, 2, DST_VA, 4096, NPU_PTE_WRITE);
	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	/* The second page of the source is not mapped. */
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, SRC_VA + 4000,
				    NPU_SPACE_SRAM, 0, 1, 200, 0, 0);
	c = run(f, 2);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.error_offset, offset);
	assert_int_equal(c.fault_addr, SRC_VA + 4096);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_STATUS),
			 NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_CTX), 2);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_ADDR_LO),
			 (uint32_t)(SRC_VA + 4096));
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_ADDR_HI), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_ACCESS), NPU_ACCESS_READ);
	assert_true(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_FAULT);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_FAULTS), 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_ERRORS), 1);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_MMU_FAULT);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR);
	assert_true(sim_test_irq_count(host, NPU_MSIX_VEC_ERROR) >= 1);

	/* A second fault only counts until FAULT_ACK. */
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA,
			   DST_VA + 8192, 1, 8, 0, 0);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.fault_addr, DST_VA + 8192);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_CTX), 2);
	assert_int_equal(sim_test_reg(host, NPU_REG_PERF_FAULTS), 2);
	sim_test_set_reg(host, NPU_REG_FAULT_ACK, 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_STATUS), 0);
	assert_false(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_FAULT);
	c = run(f, 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_CTX), 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_ACCESS), NPU_ACCESS_WRITE);
}

static void write_to_read_only_page_is_permission_fault(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	uint32_t offset;
	uint64_t dst;
	uint8_t page[64];

	sim_test_map_new(host, 1, SRC_VA, 4096, NPU_PTE_READ);
	dst = sim_test_map_new(host, 1, DST_VA, 4096, NPU_PTE_READ);
	sim_test_stream_init(&f->stream);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 0x5a, 1, 64, 0);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0,
				    NPU_SPACE_VA, DST_VA + 64, 1, 64, 0, 0);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_PERM);
	assert_int_equal(c.error_offset, offset);
	assert_int_equal(c.fault_addr, DST_VA + 64);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_STATUS), NPU_JOB_ERR_MMU_PERM);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_ACCESS), NPU_ACCESS_WRITE);
	sim_test_read(host, dst + 64, page, sizeof(page));
	for (size_t i = 0; i < sizeof(page); i++)
		assert_int_equal(page[i], 0);

	/* A write-only page cannot be read either. */
	sim_test_map_new(host, 1, SRC_VA + 4096, 4096, NPU_PTE_WRITE);
	sim_test_set_reg(host, NPU_REG_FAULT_ACK, 1);
	stream_copy_through_sram(f, SRC_VA + 4096, DST_VA, 16);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_PERM);
	assert_int_equal(sim_test_reg(host, NPU_REG_FAULT_ACCESS), NPU_ACCESS_READ);
}

static void contexts_cannot_see_each_others_memory(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	uint64_t secret1, secret2, dst1, dst2;
	uint8_t buf[32];
	struct npu_completion c;

	/* Same VA, different backing memory per context. */
	secret1 = sim_test_map_new(host, 1, SRC_VA, 4096, NPU_PTE_READ);
	secret2 = sim_test_map_new(host, 2, SRC_VA, 4096, NPU_PTE_READ);
	dst1 = sim_test_map_new(host, 1, DST_VA, 4096, NPU_PTE_WRITE);
	dst2 = sim_test_map_new(host, 2, DST_VA, 4096, NPU_PTE_WRITE);
	memset(buf, 0x11, sizeof(buf));
	sim_test_write(host, secret1, buf, sizeof(buf));
	memset(buf, 0x22, sizeof(buf));
	sim_test_write(host, secret2, buf, sizeof(buf));

	stream_copy_through_sram(f, SRC_VA, DST_VA, 32);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	assert_int_equal(run(f, 2).status, NPU_JOB_OK);
	sim_test_read(host, dst1, buf, 32);
	assert_int_equal(buf[31], 0x11);
	sim_test_read(host, dst2, buf, 32);
	assert_int_equal(buf[31], 0x22);

	/* A VA mapped only in context 1 faults in context 2. */
	sim_test_map_new(host, 1, SRC_VA + 0x10000, 4096, NPU_PTE_READ);
	stream_copy_through_sram(f, SRC_VA + 0x10000, DST_VA, 32);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	c = run(f, 2);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.fault_addr, SRC_VA + 0x10000);
}

static void stale_tlb_entry_until_invalidate(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	uint64_t old_page, new_page, dst;
	/* The TLB is direct-mapped: keep the pages on different sets. */
	const uint64_t dst_va = DST_VA + 0x3000;
	uint8_t v;

	old_page = sim_test_map_new(host, 1, SRC_VA, 4096, NPU_PTE_READ);
	new_page = sim_test_alloc(host, 4096, 4096);
	dst = sim_test_map_new(host, 1, dst_va, 4096, NPU_PTE_WRITE);
	v = 0xaa;
	sim_test_write(host, old_page, &v, 1);
	v = 0xbb;
	sim_test_write(host, new_page, &v, 1);

	stream_copy_through_sram(f, SRC_VA, dst_va, 1);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	sim_test_read(host, dst, &v, 1);
	assert_int_equal(v, 0xaa);

	/* Remap without invalidating: the TLB still holds the old page. */
	sim_test_map(host, 1, SRC_VA, new_page, 4096, NPU_PTE_READ);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	sim_test_read(host, dst, &v, 1);
	assert_int_equal(v, 0xaa);

	/* Invalidating another context changes nothing for context 1. */
	sim_test_set_reg(host, NPU_REG_MMU_INVALIDATE, 2);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	sim_test_read(host, dst, &v, 1);
	assert_int_equal(v, 0xaa);

	sim_test_set_reg(host, NPU_REG_MMU_INVALIDATE, 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_MMU_INVALIDATE), 0);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	sim_test_read(host, dst, &v, 1);
	assert_int_equal(v, 0xbb);

	/* Unmap, then invalidate everything: the next access faults. */
	sim_test_set_pte(host, 1, SRC_VA, 0);
	sim_test_set_reg(host, NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
	assert_int_equal(run(f, 1).status, NPU_JOB_ERR_MMU_UNMAPPED);
}

static void va_at_or_above_2_39_is_unmapped(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	const uint64_t limit = 1ull << NPU_VA_BITS;

	/* The page-table index bits of 2^39 + SRC_VA alias SRC_VA: mapped there. */
	sim_test_map_new(&f->host, 1, SRC_VA, 4096, NPU_PTE_READ);
	stream_copy_through_sram(f, limit + SRC_VA, DST_VA, 8);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.fault_addr, limit + SRC_VA);
	assert_int_equal(c.error_offset, sizeof(struct npu_cs_header));

	/* A range that starts below the limit and runs past it. */
	sim_test_map_new(&f->host, 1, limit - 4096, 4096, NPU_PTE_READ);
	stream_copy_through_sram(f, limit - 16, DST_VA, 32);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.fault_addr, limit);
}

static void pte_outside_host_memory_is_dma_error(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_completion c;
	uint64_t bogus = (1ull << 40) | NPU_PTE_VALID;
	uint64_t root_pte = host->ctx_root[1] + NPU_PT_INDEX(0x40000000ull * 3, 2) * 8;
	uint32_t offset;

	/* A level-2 entry whose next table is far beyond host memory. */
	sim_test_write(host, root_pte, &bogus, sizeof(bogus));
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA,
				    0x40000000ull * 3 + 8, NPU_SPACE_SRAM, 0,
				    1, 8, 0, 0);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_DMA);
	assert_int_equal(c.error_offset, offset);
	assert_int_equal(c.fault_addr, 0x40000000ull * 3 + 8);

	/* A leaf pointing outside host memory: the data access is the bus error. */
	sim_test_set_pte(host, 1, SRC_VA, (1ull << 45) | NPU_PTE_VALID | NPU_PTE_READ);
	stream_copy_through_sram(f, SRC_VA, DST_VA, 8);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_DMA);
	assert_int_equal(c.fault_addr, SRC_VA);
}

static void invalid_context_fails_bad_context(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_job_desc desc;
	struct npu_completion c;
	uint32_t index;

	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	/* Context 3 was never given an entry. */
	sim_test_map_new(host, 1, CMD_VA, 4096, NPU_PTE_READ);
	desc = sim_test_desc(host, 0, 3, CMD_VA, f->stream.len, 9);
	index = sim_test_push(host, 0, &desc, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_BAD_CONTEXT);

	desc = sim_test_desc(host, 0, NPU_NUM_CONTEXTS, CMD_VA, f->stream.len, 10);
	index = sim_test_push(host, 0, &desc, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_BAD_CONTEXT);
	assert_int_equal(c.seqno, 10);
	/* The queue goes on. */
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(0, NPU_QREG_STATUS)),
			 NPU_QUEUE_OK);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(0, NPU_QREG_HEAD)), 2);
}

/*
 * Pages contiguous in host memory move as one run (one dma_write), but a
 * fault or a refused page inside the run still ends the job exactly there:
 * the pages before it land, the fault names the first byte of that page.
 */
static void page_runs_stop_at_the_faulting_page(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	uint8_t in[5 * 4096], out[sizeof(in)];
	uint64_t src, dst;
	struct npu_completion c;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 13 + (i >> 12));
	src = sim_test_map_new(host, 1, SRC_VA, sizeof(in), NPU_PTE_READ);
	sim_test_write(host, src, in, sizeof(in));
	/* Three contiguous pages, then none: a write run of five faults at the fourth. */
	dst = sim_test_map_new(host, 1, DST_VA, 3 * 4096, NPU_PTE_WRITE);
	stream_copy_through_sram(f, SRC_VA, DST_VA + 10, sizeof(in) - 10);
	c = run(f, 1);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.fault_addr, DST_VA + 3 * 4096);
	sim_test_read(host, dst + 10, out, 3 * 4096 - 10);
	assert_memory_equal(out, in, 3 * 4096 - 10);
	sim_test_set_reg(host, NPU_REG_FAULT_ACK, 1);

	/* The last two pages of host memory and the page past its end: contiguous
	 * addresses, so one run, which the bus refuses at the third page. */
	sim_test_map(host, 2, DST_VA, MEM_SIZE - 2 * 4096, 3 * 4096, NPU_PTE_WRITE);
	sim_test_map(host, 2, SRC_VA, src, sizeof(in), NPU_PTE_READ);
	memset(out, 0, sizeof(out));
	sim_test_write(host, MEM_SIZE - 2 * 4096, out, 2 * 4096);
	stream_copy_through_sram(f, SRC_VA, DST_VA, 3 * 4096);
	c = run(f, 2);
	assert_int_equal(c.status, NPU_JOB_ERR_DMA);
	assert_int_equal(c.fault_addr, DST_VA + 2 * 4096);
	sim_test_read(host, MEM_SIZE - 2 * 4096, out, 2 * 4096);
	assert_memory_equal(out, in, 2 * 4096);
}

static void small_tlb_still_translates_correctly(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_fw_config config;
	uint8_t in[16 * 4096], out[sizeof(in)];
	uint64_t src, dst;

	/* A one-entry TLB thrashes on every page: results must not change. */
	sim_test_host_fini(host);
	assert_int_equal(sim_test_host_init(host, MEM_SIZE), 0);
	npu_fw_default_config(&config);
	config.tlb_entries = 1;
	assert_int_equal(sim_test_boot_config(host, &config), NPU_STATE_READY);
	sim_test_ctx_table_init(host);
	sim_test_ring_init(host, 0, 8);
	sim_test_ctx_init(host, 1);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i ^ (i >> 8));
	src = sim_test_map_new(host, 1, SRC_VA, sizeof(in), NPU_PTE_READ);
	dst = sim_test_map_new(host, 1, DST_VA, sizeof(in), NPU_PTE_WRITE);
	sim_test_write(host, src, in, sizeof(in));
	/* 2-D: 64 rows of 1024 bytes, each in a different page pair. */
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, SRC_VA, NPU_SPACE_VA,
			   DST_VA, 64, 1024, 1024, 1024);
	assert_int_equal(run(f, 1).status, NPU_JOB_OK);
	sim_test_read(host, dst, out, sizeof(out));
	assert_memory_equal(in, out, sizeof(in));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
	const struct CMUnitTest tests[] = {
		T(mapped_pages_translate_across_page_boundaries),
		T(unmapped_read_faults_with_address_and_context),
		T(write_to_read_only_page_is_permission_fault),
		T(contexts_cannot_see_each_others_memory),
		T(stale_tlb_entry_until_invalidate),
		T(va_at_or_above_2_39_is_unmapped),
		T(pte_outside_host_memory_is_dma_error),
		T(invalid_context_fails_bad_context),
		T(small_tlb_still_translates_correctly),
		T(page_runs_stop_at_the_faulting_page),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
