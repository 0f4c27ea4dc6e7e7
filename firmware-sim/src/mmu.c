/* SPDX-License-Identifier: MIT */
/*
 * mmu.c - the device MMU: context table, 3-level page walk, a direct-mapped
 * TLB invalidated through generation counters, and transfers between
 * context VAs and device buffers translated page by page and moved in runs
 * of pages contiguous in host memory.
 */
#include <string.h>

#include "sim_internal.h"

#define NPU_VA_LIMIT		(1ull << NPU_VA_BITS)

uint64_t npu_dma_quiesce_request(struct npu_sim *sim)
{
	return atomic_fetch_add(&sim->quiesce_req, 1) + 1;
}

bool npu_dma_pending(struct npu_sim *sim, uint64_t req)
{
	uint64_t step = atomic_load(&sim->dma_step);

	return step && (step >> 1) < req;
}

/*
 * Invalidation bumps a generation: the job thread compares the
 * generations an entry was filled under with the current ones, so a
 * register write never has to touch the TLB array it is using. The page
 * the job is moving right now may still use the old translation: the
 * register reads PENDING until that step is over.
 */
void npu_mmu_invalidate(struct npu_sim *sim, uint32_t value)
{
	if (value == NPU_MMU_INVALIDATE_ALL)
		atomic_fetch_add(&sim->tlb_gen_all, 1);
	else if (value < NPU_NUM_CONTEXTS)
		atomic_fetch_add(&sim->tlb_gen_ctx[value], 1);
	else
		return;
	sim->inval_wait = npu_dma_quiesce_request(sim);
}

uint32_t npu_mmu_read_ctx_entry(struct npu_sim *sim, uint32_t ctx,
				struct npu_ctx_entry *entry)
{
	uint64_t table = atomic_load(&sim->ctx_table);
	uint64_t addr = table + (uint64_t)ctx * sizeof(*entry);

	if (ctx >= NPU_NUM_CONTEXTS)
		return NPU_JOB_ERR_BAD_CONTEXT;
	/* No table (after a reset): never read guest address 0. */
	if (!table || addr < table ||
	    sim->ops.dma_read(sim->opaque, addr, entry, sizeof(*entry)))
		return NPU_JOB_ERR_DMA;
	if (!(entry->pt_root & NPU_CTX_VALID) || entry->reserved)
		return NPU_JOB_ERR_BAD_CONTEXT;
	return NPU_JOB_OK;
}

static uint32_t npu_mmu_fault(struct npu_sim_run *run, uint32_t status,
			      uint64_t va, uint32_t access)
{
	run->fault_addr = va;
	run->fault_access = access;
	return status;
}

static uint32_t npu_mmu_walk(struct npu_sim *sim, struct npu_sim_run *run,
			     uint64_t va, uint64_t *page_addr, uint8_t *perms)
{
	struct npu_ctx_entry entry;
	uint64_t table;
	uint64_t pte = 0;
	uint32_t status;

	status = npu_mmu_read_ctx_entry(sim, run->ctx, &entry);
	if (status != NPU_JOB_OK)
		return status;
	table = entry.pt_root & NPU_PTE_ADDR_MASK;
	for (int level = NPU_PT_LEVELS - 1; level >= 0; level--) {
		uint64_t pte_addr = table + NPU_PT_INDEX(va, level) * sizeof(pte);

		if (sim->ops.dma_read(sim->opaque, pte_addr, &pte, sizeof(pte)))
			return NPU_JOB_ERR_DMA;
		if (!(pte & NPU_PTE_VALID))
			return NPU_JOB_ERR_MMU_UNMAPPED;
		table = pte & NPU_PTE_ADDR_MASK;
	}
	*page_addr = table;
	*perms = pte & (NPU_PTE_READ | NPU_PTE_WRITE);
	return NPU_JOB_OK;
}

/* Translate one VA for 'access'; the result is the host address of 'va'. */
static uint32_t npu_mmu_translate(struct npu_sim *sim, struct npu_sim_run *run,
				  uint64_t va, uint32_t access, uint64_t *addr)
{
	uint64_t vpn = va >> NPU_PAGE_SHIFT;
	uint64_t tag = vpn << 7 | (uint64_t)run->ctx << 1 | 1;
	/* Mix the context in so equal VAs of different contexts spread out. */
	uint32_t index = (uint32_t)(vpn ^ (vpn >> 13) ^ run->ctx * 0x9e5u) &
			 run->tlb_mask;
	struct npu_tlb_entry *tlb = &sim->tlb[index];
	uint32_t gen_all = atomic_load_explicit(&sim->tlb_gen_all,
						memory_order_acquire);
	uint32_t gen_ctx = atomic_load_explicit(&sim->tlb_gen_ctx[run->ctx],
						memory_order_acquire);
	uint8_t need = access == NPU_ACCESS_WRITE ? NPU_PTE_WRITE : NPU_PTE_READ;
	uint32_t status;

	if (va >= NPU_VA_LIMIT)
		return npu_mmu_fault(run, NPU_JOB_ERR_MMU_UNMAPPED, va, access);

	if (tlb->tag != tag || tlb->gen_all != gen_all || tlb->gen_ctx != gen_ctx) {
		uint64_t page_addr;
		uint8_t perms;

		status = npu_mmu_walk(sim, run, va, &page_addr, &perms);
		if (status != NPU_JOB_OK)
			return npu_mmu_fault(run, status, va, access);
		tlb->tag = tag;
		tlb->page_addr = page_addr;
		tlb->perms = perms;
		tlb->gen_all = gen_all;
		tlb->gen_ctx = gen_ctx;
	}
	if (!(tlb->perms & need))
		return npu_mmu_fault(run, NPU_JOB_ERR_MMU_PERM, va, access);
	*addr = tlb->page_addr | (va & (NPU_PAGE_SIZE - 1));
	return NPU_JOB_OK;
}

uint32_t npu_mmu_check_range(struct npu_sim_run *run, uint64_t va,
			     uint64_t len, uint32_t access)
{
	if (va >= NPU_VA_LIMIT)
		return npu_mmu_fault(run, NPU_JOB_ERR_MMU_UNMAPPED, va, access);
	if (len > NPU_VA_LIMIT - va)
		return npu_mmu_fault(run, NPU_JOB_ERR_MMU_UNMAPPED, NPU_VA_LIMIT,
				     access);
	return NPU_JOB_OK;
}

/*
 * Pages one quiesce step may move: a run of pages that are contiguous in
 * host memory goes out in one dma_read / dma_write (hardware.md, DMA
 * quiesce), and a reset waits for at most this much.
 */
#define NPU_DMA_RUN_PAGES	16

static int npu_mmu_move(struct npu_sim *sim, uint32_t access, uint64_t addr,
			uint8_t *rbuf, const uint8_t *wbuf, uint64_t n)
{
	if (access == NPU_ACCESS_WRITE)
		return sim->ops.dma_write(sim->opaque, addr, wbuf, n);
	return sim->ops.dma_read(sim->opaque, addr, rbuf, n);
}

static uint32_t npu_mmu_transfer(struct npu_sim *sim, struct npu_sim_run *run,
				 uint64_t va, uint8_t *rbuf, const uint8_t *wbuf,
				 uint64_t len, uint32_t access)
{
	uint32_t status = npu_mmu_check_range(run, va, len, access);

	while (status == NPU_JOB_OK && len) {
		uint64_t in_page = NPU_PAGE_SIZE - (va & (NPU_PAGE_SIZE - 1));
		uint64_t n = len < in_page ? len : in_page;
		uint32_t next_status = NPU_JOB_OK;
		uint64_t addr;

		/*
		 * One run of pages is one step of the quiesce handshake:
		 * announce it, then look at the epoch, so a reset either sees
		 * this step in flight or this step sees the reset (both seq_cst).
		 */
		atomic_store(&sim->dma_step,
			     atomic_load(&sim->quiesce_req) << 1 | 1);
		if (atomic_load(&sim->epoch) != run->epoch) {
			atomic_store(&sim->dma_step, 0);
			return NPU_JOB_ERR_ABORTED;
		}
		status = npu_mmu_translate(sim, run, va, access, &addr);
		if (status != NPU_JOB_OK) {
			atomic_store(&sim->dma_step, 0);
			break;
		}
		/*
		 * Extend the run while the next page follows in host memory. A
		 * fault there ends the job after the run before it has moved,
		 * as if page by page.
		 */
		for (int pages = 1; pages < NPU_DMA_RUN_PAGES && n < len; pages++) {
			uint64_t next, step = len - n < NPU_PAGE_SIZE ? len - n : NPU_PAGE_SIZE;

			next_status = npu_mmu_translate(sim, run, va + n, access, &next);
			if (next_status != NPU_JOB_OK || next != addr + n)
				break;
			n += step;
		}
		if (npu_mmu_move(sim, access, addr, rbuf, wbuf, n)) {
			/* Which page the bus refused: move the run page by page. */
			uint64_t done = 0;

			while (done < n) {
				uint64_t left = NPU_PAGE_SIZE - ((va + done) & (NPU_PAGE_SIZE - 1));
				uint64_t m = n - done < left ? n - done : left;

				if (npu_mmu_move(sim, access, addr + done,
						 rbuf ? rbuf + done : NULL,
						 wbuf ? wbuf + done : NULL, m)) {
					atomic_store(&sim->dma_step, 0);
					return npu_mmu_fault(run, NPU_JOB_ERR_DMA, va + done,
							     access);
				}
				done += m;
			}
		}
		atomic_store(&sim->dma_step, 0);
		va += n;
		len -= n;
		if (rbuf)
			rbuf += n;
		if (wbuf)
			wbuf += n;
		status = next_status;
	}
	return status;
}

uint32_t npu_mmu_read(struct npu_sim *sim, struct npu_sim_run *run,
		      uint64_t va, void *buf, uint64_t len)
{
	return npu_mmu_transfer(sim, run, va, buf, NULL, len, NPU_ACCESS_READ);
}

uint32_t npu_mmu_write(struct npu_sim *sim, struct npu_sim_run *run,
		       uint64_t va, const void *buf, uint64_t len)
{
	return npu_mmu_transfer(sim, run, va, NULL, buf, len, NPU_ACCESS_WRITE);
}
