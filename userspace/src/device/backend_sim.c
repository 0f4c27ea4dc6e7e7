// SPDX-License-Identifier: MIT
/*
 * backend_sim.c - the "sim" backend: firmware-sim in-process, driven the
 * way the kernel driver drives the real device.
 *
 * This file is a small driver. It owns a host-memory arena that is the
 * simulated device's whole DMA address space (dma_read / dma_write bounds-
 * check into it) and places everything the device reads there: the
 * firmware image, the context table, one context's 3-level page tables,
 * one descriptor ring and one completion-record array per queue, and
 * every buffer. It boots the firmware through the registers (FW_ADDR /
 * FW_SIZE / FW_BOOT -> READY), submits by writing descriptors, TAIL and
 * the doorbell, and runs jobs on a worker thread following npu_sim.h's
 * threading contract: fetch and finish under hw_lock, execute outside it.
 *
 * Locks, in order: dev->lock, then hw_lock, then mem_lock. The worker never
 * holds hw_lock while it reports completions to device.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "device/device_internal.h"
#include "npu_sim.h"

#define SIM_DMA_BASE		0x10000000ull	/* arena offset 0 on the bus */
#define SIM_VA_BASE		0x100000000ull	/* buffers are mapped from 4 GiB */
#define SIM_CONTEXT		1		/* context 0 stays unused */
#define SIM_DEFAULT_MEMORY	(256ull << 20)
#define SIM_DEFAULT_RING	1024u
#define SIM_FW_VERSION		NPU_VERSION(1, 0)

struct sim_queue {
	uint64_t ring_off, compl_off;	/* arena offsets */
	uint32_t tail;			/* descriptors written */
	uint32_t harvested;		/* completions consumed */
	struct npu_job **slot;		/* job in each ring slot */
	struct npu_job *fifo_head, *fifo_tail;	/* waiting for ring space */
};

struct sim_backend {
	struct npu_sim *sim;
	uint8_t *arena;
	uint64_t arena_size;
	uint64_t *page_used;		/* bitmap, one bit per 4 KiB page */
	uint64_t num_pages;
	uint64_t alloc_hint;
	pthread_mutex_t mem_lock;	/* arena bitmap + page tables */

	pthread_mutex_t hw_lock;	/* registers, fetch/finish, queues */
	pthread_cond_t hw_cond;		/* the worker: doorbell or stop */
	pthread_t worker;
	bool worker_started;
	bool stop;
	bool hung;			/* an injected hang holds the device */
	uint32_t ring_entries;
	struct sim_queue q[NPU_NUM_QUEUES];
	uint64_t ctx_table_off, pt_root_off, fw_off;
};

static struct sim_backend *to_sim(struct npu_device *dev)
{
	return dev->be;
}

/* ---- Host side of the device: DMA, interrupts, clock ---- */

static int sim_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	struct sim_backend *be = opaque;

	if (addr < SIM_DMA_BASE || addr - SIM_DMA_BASE > be->arena_size ||
	    len > be->arena_size - (addr - SIM_DMA_BASE))
		return -1;
	memcpy(buf, be->arena + (addr - SIM_DMA_BASE), len);
	return 0;
}

static int sim_dma_write(void *opaque, uint64_t addr, const void *buf,
			 size_t len)
{
	struct sim_backend *be = opaque;

	if (addr < SIM_DMA_BASE || addr - SIM_DMA_BASE > be->arena_size ||
	    len > be->arena_size - (addr - SIM_DMA_BASE))
		return -1;
	memcpy(be->arena + (addr - SIM_DMA_BASE), buf, len);
	return 0;
}

static void sim_irq(void *opaque, unsigned int vector)
{
	/* The worker harvests completion records right after finish. */
	(void)opaque;
	(void)vector;
}

static uint64_t sim_now(void *opaque)
{
	(void)opaque;
	return npu_now_ns();
}

static const struct npu_sim_host_ops sim_host_ops = {
	.dma_read = sim_dma_read,
	.dma_write = sim_dma_write,
	.irq = sim_irq,
	.now_ns = sim_now,
};

/* ---- Arena: page-granular first fit over a bitmap ---- */

static bool page_used(struct sim_backend *be, uint64_t p)
{
	return be->page_used[p / 64] >> (p % 64) & 1;
}

static void mark_pages(struct sim_backend *be, uint64_t first, uint64_t n,
		       bool used)
{
	uint64_t p;

	for (p = first; p < first + n; p++) {
		if (used)
			be->page_used[p / 64] |= 1ull << (p % 64);
		else
			be->page_used[p / 64] &= ~(1ull << (p % 64));
	}
}

/* Returns the arena offset of 'bytes' zeroed bytes, or UINT64_MAX. */
static uint64_t arena_alloc(struct sim_backend *be, uint64_t bytes)
{
	uint64_t n = (bytes + NPU_PAGE_SIZE - 1) / NPU_PAGE_SIZE;
	uint64_t start, run = 0, p, tries;

	pthread_mutex_lock(&be->mem_lock);
	start = be->alloc_hint;
	for (tries = 0, p = start; tries < be->num_pages + n; tries++, p++) {
		if (p == be->num_pages) {	/* wrap: runs restart at 0 */
			p = 0;
			run = 0;
		}
		if (!(p % 64) && be->page_used[p / 64] == ~0ull &&
		    p + 64 <= be->num_pages) {
			run = 0;
			p += 63;
			tries += 63;
			continue;
		}
		if (page_used(be, p)) {
			run = 0;
			continue;
		}
		if (++run == n) {
			uint64_t first = p + 1 - n;

			mark_pages(be, first, n, true);
			be->alloc_hint = p + 1 == be->num_pages ? 0 : p + 1;
			pthread_mutex_unlock(&be->mem_lock);
			memset(be->arena + first * NPU_PAGE_SIZE, 0,
			       n * NPU_PAGE_SIZE);
			return first * NPU_PAGE_SIZE;
		}
	}
	pthread_mutex_unlock(&be->mem_lock);
	return UINT64_MAX;
}

static void arena_free(struct sim_backend *be, uint64_t off, uint64_t bytes)
{
	pthread_mutex_lock(&be->mem_lock);
	mark_pages(be, off / NPU_PAGE_SIZE,
		   (bytes + NPU_PAGE_SIZE - 1) / NPU_PAGE_SIZE, false);
	pthread_mutex_unlock(&be->mem_lock);
}

static uint64_t *arena_u64(struct sim_backend *be, uint64_t off)
{
	return (uint64_t *)(void *)(be->arena + off);
}

/* ---- Page tables (3 levels, 4 KiB pages) ---- */

/* Leaf PTE address for 'va', allocating tables on the way; mem_lock held. */
static uint64_t *pte_for(struct sim_backend *be, uint64_t va, bool alloc)
{
	uint64_t table = be->pt_root_off;
	int level;

	for (level = NPU_PT_LEVELS - 1; level > 0; level--) {
		uint64_t *e = arena_u64(be, table + 8 * NPU_PT_INDEX(va, level));
		uint64_t v = __atomic_load_n(e, __ATOMIC_ACQUIRE);

		if (!(v & NPU_PTE_VALID)) {
			uint64_t t;

			if (!alloc)
				return NULL;
			/* arena_alloc takes mem_lock: drop it around the call */
			pthread_mutex_unlock(&be->mem_lock);
			t = arena_alloc(be, NPU_PAGE_SIZE);
			pthread_mutex_lock(&be->mem_lock);
			if (t == UINT64_MAX)
				return NULL;
			v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
			if (v & NPU_PTE_VALID) {	/* raced: keep theirs */
				pthread_mutex_unlock(&be->mem_lock);
				arena_free(be, t, NPU_PAGE_SIZE);
				pthread_mutex_lock(&be->mem_lock);
			} else {
				v = (SIM_DMA_BASE + t) | NPU_PTE_VALID;
				__atomic_store_n(e, v, __ATOMIC_RELEASE);
			}
		}
		table = (v & NPU_PTE_ADDR_MASK) - SIM_DMA_BASE;
	}
	return arena_u64(be, table + 8 * NPU_PT_INDEX(va, 0));
}

static npu_status map_range(struct sim_backend *be, uint64_t va, uint64_t off,
			    uint64_t size, bool writable)
{
	uint64_t i;

	pthread_mutex_lock(&be->mem_lock);
	for (i = 0; i < size; i += NPU_PAGE_SIZE) {
		uint64_t *pte = pte_for(be, va + i, true);
		uint64_t v = (SIM_DMA_BASE + off + i) | NPU_PTE_VALID |
			     NPU_PTE_READ | (writable ? NPU_PTE_WRITE : 0);

		if (!pte) {
			pthread_mutex_unlock(&be->mem_lock);
			return NPU_ERR_NO_MEMORY;
		}
		__atomic_store_n(pte, v, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&be->mem_lock);
	return NPU_OK;
}

static void unmap_range(struct sim_backend *be, uint64_t va, uint64_t size)
{
	uint64_t i;

	pthread_mutex_lock(&be->mem_lock);
	for (i = 0; i < size; i += NPU_PAGE_SIZE) {
		uint64_t *pte = pte_for(be, va + i, false);

		if (pte)
			__atomic_store_n(pte, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&be->mem_lock);
}

/* ---- Registers ---- */

static uint32_t rd(struct sim_backend *be, uint32_t reg)
{
	return npu_sim_reg_read(be->sim, reg);
}

static void wr(struct sim_backend *be, uint32_t reg, uint32_t v)
{
	npu_sim_reg_write(be->sim, reg, v);
}

static void wr64(struct sim_backend *be, uint32_t lo, uint64_t v)
{
	wr(be, lo, (uint32_t)v);
	wr(be, lo + 4, (uint32_t)(v >> 32));
}

/* hw_lock held */
static void tlb_invalidate(struct sim_backend *be)
{
	int i;

	wr(be, NPU_REG_MMU_INVALIDATE, SIM_CONTEXT);
	for (i = 0; i < 1000000 && rd(be, NPU_REG_MMU_INVALIDATE); i++)
		;
}

/* ---- Queues ---- */

/* Move jobs from the software FIFOs into free ring slots; hw_lock held. */
static void kick_queues(struct sim_backend *be)
{
	unsigned int q;

	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		struct sim_queue *sq = &be->q[q];
		bool rang = false;

		while (sq->fifo_head && sq->tail - sq->harvested < be->ring_entries) {
			struct npu_job *job = sq->fifo_head;
			uint32_t slot = sq->tail % be->ring_entries;
			struct npu_job_desc d = { 0 };
			struct npu_completion *c;

			sq->fifo_head = job->cq_next;
			if (!sq->fifo_head)
				sq->fifo_tail = NULL;
			job->cq_next = NULL;
			d.context = SIM_CONTEXT;
			d.cmd_va = job->cmd_va;
			d.cmd_size = job->cmd_size;
			d.seqno = sq->tail;
			d.completion_addr = SIM_DMA_BASE + sq->compl_off +
					    (uint64_t)slot * sizeof(*c);
			c = (void *)(be->arena + sq->compl_off +
				     (uint64_t)slot * sizeof(*c));
			memset(c, 0, sizeof(*c));
			memcpy(be->arena + sq->ring_off + (uint64_t)slot * sizeof(d),
			       &d, sizeof(d));
			sq->slot[slot] = job;
			job->result.job_id = sq->tail;
			sq->tail++;
			rang = true;
		}
		if (rang) {
			wr(be, NPU_REG_QUEUE(q, NPU_QREG_TAIL), sq->tail);
			wr(be, NPU_REG_QUEUE(q, NPU_QREG_DOORBELL), 1);
		}
	}
	pthread_cond_signal(&be->hw_cond);
}

/*
 * Collect finished jobs from the completion records of queue q into a
 * list (linked through cq_next); hw_lock held.
 */
static struct npu_job *harvest(struct sim_backend *be, unsigned int q,
			       struct npu_job *list)
{
	struct sim_queue *sq = &be->q[q];

	while (sq->harvested != sq->tail) {
		uint32_t slot = sq->harvested % be->ring_entries;
		struct npu_completion *c = (void *)(be->arena + sq->compl_off +
						   (uint64_t)slot * sizeof(*c));
		struct npu_job *job = sq->slot[slot];

		if (__atomic_load_n(&c->fence, __ATOMIC_ACQUIRE) !=
		    NPU_COMPLETION_FENCE)
			break;
		job->result.device_status = c->status;
		job->result.error_offset = c->error_offset;
		job->result.fault_addr = c->fault_addr;
		job->result.device_start_ns = c->start_ns;
		job->result.device_end_ns = c->end_ns;
		job->result.cycles = c->cycles;
		job->result.macs = c->macs;
		job->result.queue = c->queue;
		job->result.job_id = c->seqno;
		c->fence = 0;
		sq->slot[slot] = NULL;
		sq->harvested++;
		job->cq_next = list;
		list = job;
	}
	return list;
}

static void complete_list(struct npu_device *dev, struct npu_job *list)
{
	struct npu_job *rev = NULL;

	while (list) {	/* harvested newest first: report oldest first */
		struct npu_job *next = list->cq_next;

		list->cq_next = rev;
		rev = list;
		list = next;
	}
	while (rev) {
		struct npu_job *next = rev->cq_next;

		rev->cq_next = NULL;
		npu_dev_job_complete(dev, rev);
		rev = next;
	}
}

static void *sim_worker(void *arg)
{
	struct npu_device *dev = arg;
	struct sim_backend *be = to_sim(dev);
	struct npu_sim_job sjob;

	pthread_mutex_lock(&be->hw_lock);
	while (!be->stop) {
		struct npu_job *done = NULL;
		uint32_t irq;

		if (be->hung || !npu_sim_job_fetch(be->sim, &sjob)) {
			pthread_cond_wait(&be->hw_cond, &be->hw_lock);
			continue;
		}
		if (sjob.hang) {
			/* injected hang: the job never finishes until close */
			be->hung = true;
			continue;
		}
		pthread_mutex_unlock(&be->hw_lock);
		npu_sim_job_execute(be->sim, &sjob);
		pthread_mutex_lock(&be->hw_lock);
		npu_sim_job_finish(be->sim, &sjob);
		irq = rd(be, NPU_REG_IRQ_STATUS);
		if (irq)
			wr(be, NPU_REG_IRQ_ACK, irq);
		if (rd(be, NPU_REG_STATUS) & NPU_STATUS_FAULT)
			wr(be, NPU_REG_FAULT_ACK, 1);
		done = harvest(be, sjob.queue, done);
		kick_queues(be);
		pthread_mutex_unlock(&be->hw_lock);
		complete_list(dev, done);
		pthread_mutex_lock(&be->hw_lock);
	}
	pthread_mutex_unlock(&be->hw_lock);
	return NULL;
}

static npu_status sim_submit(struct npu_device *dev, struct npu_job *job,
			     const struct npu_submit *s)
{
	struct sim_backend *be = to_sim(dev);
	struct sim_queue *sq = &be->q[job->queue];
	uint32_t qs;

	(void)s;
	pthread_mutex_lock(&be->hw_lock);
	qs = rd(be, NPU_REG_QUEUE(job->queue, NPU_QREG_STATUS));
	if (qs != NPU_QUEUE_OK || be->stop) {
		pthread_mutex_unlock(&be->hw_lock);
		return npu_dev_error(dev, NPU_ERR_DEVICE,
				     "sim queue %u is stopped (queue status %u)",
				     job->queue, qs);
	}
	job->cq_next = NULL;
	if (sq->fifo_tail)
		sq->fifo_tail->cq_next = job;
	else
		sq->fifo_head = job;
	sq->fifo_tail = job;
	kick_queues(be);
	pthread_mutex_unlock(&be->hw_lock);
	return NPU_OK;
}

/* ---- Buffers ---- */

static npu_status sim_buffer_alloc(struct npu_device *dev, struct npu_buffer *buf)
{
	struct sim_backend *be = to_sim(dev);
	uint64_t off = arena_alloc(be, buf->size);
	npu_status st;

	if (off == UINT64_MAX)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY,
				     "the sim arena (%" PRIu64 " MiB) has no free range of %" PRIu64 " bytes (raise sim_memory_bytes)",
				     be->arena_size >> 20, buf->size);
	buf->arena_off = off;
	buf->va = SIM_VA_BASE + off;
	buf->cpu = be->arena + off;
	st = map_range(be, buf->va, off, buf->size,
		       !(buf->flags & NPU_BUFFER_DEVICE_READ_ONLY));
	if (st) {
		unmap_range(be, buf->va, buf->size);
		arena_free(be, off, buf->size);
		return npu_dev_error(dev, st, "no arena memory left for page tables");
	}
	return NPU_OK;
}

static void sim_buffer_free(struct npu_device *dev, struct npu_buffer *buf)
{
	struct sim_backend *be = to_sim(dev);

	unmap_range(be, buf->va, buf->size);
	if (be->sim) {
		pthread_mutex_lock(&be->hw_lock);
		tlb_invalidate(be);
		pthread_mutex_unlock(&be->hw_lock);
	}
	arena_free(be, buf->arena_off, buf->size);
}

/* ---- Boot ---- */

static npu_status sim_boot(struct npu_device *dev,
			   const struct npu_device_options *opts)
{
	struct sim_backend *be = to_sim(dev);
	struct npu_fw_config cfg;
	size_t fw_size;
	uint32_t state = 0, mac;
	unsigned int q;
	int i;

	npu_fw_default_config(&cfg);
	if (opts->sim_watchdog_cycles)
		cfg.watchdog_cycles = opts->sim_watchdog_cycles;
	be->fw_off = arena_alloc(be, NPU_PAGE_SIZE);
	be->ctx_table_off = arena_alloc(be, NPU_PAGE_SIZE);
	be->pt_root_off = arena_alloc(be, NPU_PAGE_SIZE);
	if (be->fw_off == UINT64_MAX || be->ctx_table_off == UINT64_MAX ||
	    be->pt_root_off == UINT64_MAX)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY, "sim arena too small");
	fw_size = npu_fw_build(be->arena + be->fw_off, NPU_PAGE_SIZE,
			       SIM_FW_VERSION, "libnpu-user sim", &cfg, NULL, 0);
	if (!fw_size)
		return npu_dev_error(dev, NPU_ERR_INTERNAL,
				     "npu_fw_build: the image does not fit in a page");
	/* context table: our context points at its page-table root */
	*arena_u64(be, be->ctx_table_off + 16 * SIM_CONTEXT) =
		(SIM_DMA_BASE + be->pt_root_off) | NPU_CTX_VALID;

	if (rd(be, NPU_REG_ID) != NPU_ID_MAGIC)
		return npu_dev_error(dev, NPU_ERR_DEVICE,
				     "sim: ID register reads 0x%08x, not 0x%08x",
				     rd(be, NPU_REG_ID), NPU_ID_MAGIC);
	wr64(be, NPU_REG_CTX_TABLE_LO, SIM_DMA_BASE + be->ctx_table_off);
	wr64(be, NPU_REG_FW_ADDR_LO, SIM_DMA_BASE + be->fw_off);
	wr(be, NPU_REG_FW_SIZE, (uint32_t)fw_size);
	wr(be, NPU_REG_IRQ_MASK, NPU_IRQ_QUEUE_DONE(0) | NPU_IRQ_QUEUE_DONE(1) |
				 NPU_IRQ_ERROR_MASK);
	wr(be, NPU_REG_FW_BOOT, NPU_BOOT_START);
	for (i = 0; i < 100000; i++) {
		state = rd(be, NPU_REG_STATUS) & NPU_STATUS_STATE_MASK;
		if (state != NPU_STATE_BOOTING && state != NPU_STATE_OFF)
			break;
		if (i > 100) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	if (state != NPU_STATE_READY)
		return npu_dev_error(dev, NPU_ERR_DEVICE,
				     "sim firmware boot failed: state %u, boot status %s",
				     state, npu_boot_status_name(rd(be, NPU_REG_BOOT_STATUS)));
	wr(be, NPU_REG_IRQ_ACK, rd(be, NPU_REG_IRQ_STATUS));
	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		struct sim_queue *sq = &be->q[q];
		uint64_t bytes = (uint64_t)be->ring_entries * 64;

		sq->ring_off = arena_alloc(be, bytes);
		sq->compl_off = arena_alloc(be, bytes);
		sq->slot = calloc(be->ring_entries, sizeof(*sq->slot));
		if (sq->ring_off == UINT64_MAX || sq->compl_off == UINT64_MAX ||
		    !sq->slot)
			return npu_dev_error(dev, NPU_ERR_NO_MEMORY,
					     "sim: no memory for the rings");
		wr64(be, NPU_REG_QUEUE(q, NPU_QREG_RING_BASE_LO),
		     SIM_DMA_BASE + sq->ring_off);
		wr(be, NPU_REG_QUEUE(q, NPU_QREG_RING_SIZE), be->ring_entries);
		wr(be, NPU_REG_QUEUE(q, NPU_QREG_CTRL), NPU_QUEUE_ENABLE);
		sq->tail = sq->harvested = rd(be, NPU_REG_QUEUE(q, NPU_QREG_HEAD));
	}

	mac = rd(be, NPU_REG_MAC_SHAPE);
	snprintf(dev->info.name, sizeof(dev->info.name), "firmware-sim");
	snprintf(dev->info.driver, sizeof(dev->info.driver), "sim");
	dev->info.fw_version = rd(be, NPU_REG_FW_VERSION);
	dev->info.hw_version = rd(be, NPU_REG_HW_VERSION);
	dev->info.isa_version = rd(be, NPU_REG_ISA_VERSION);
	dev->info.caps = rd(be, NPU_REG_CAPS);
	dev->info.op_mask = rd(be, NPU_REG_OP_MASK);
	dev->info.num_queues = rd(be, NPU_REG_NUM_QUEUES);
	if (dev->info.num_queues > NPU_NUM_QUEUES)
		dev->info.num_queues = NPU_NUM_QUEUES;
	dev->info.mac_rows = mac >> 16;
	dev->info.mac_cols = mac & 0xffff;
	dev->info.sram_size = rd(be, NPU_REG_SRAM_SIZE);
	dev->info.clock_mhz = rd(be, NPU_REG_CLOCK_MHZ);
	dev->info.dma_bytes_per_cycle = rd(be, NPU_REG_DMA_BYTES_PER_CYCLE);
	dev->info.context_id = SIM_CONTEXT;
	dev->info.va_start = SIM_VA_BASE;
	dev->info.va_end = SIM_VA_BASE + be->arena_size;
	dev->info.memory_bytes = be->arena_size;
	{	/* device clock counts from reset: map it onto the host clock */
		uint64_t lo = rd(be, NPU_REG_TIMESTAMP_LO);
		uint64_t ts = lo | (uint64_t)rd(be, NPU_REG_TIMESTAMP_HI) << 32;

		dev->dev_to_host_ns = (int64_t)npu_now_ns() - (int64_t)ts;
	}
	return NPU_OK;
}

static void sim_close(struct npu_device *dev);

/* The simulator's host threads (npu_device_options.sim_threads). */
static npu_status sim_set_threads(struct npu_device *dev, struct sim_backend *be,
				  uint32_t threads)
{
	if (!threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		threads = cpus >= 2 ? 2 : 1;
	}
	if (threads > NPU_SIM_MAX_THREADS)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "sim_threads %u is outside 1..%u", threads,
				     NPU_SIM_MAX_THREADS);
	if (npu_sim_set_threads(be->sim, threads))
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY,
				     "sim: cannot start %u simulator threads", threads);
	return NPU_OK;
}

static npu_status sim_open(struct npu_device *dev,
			   const struct npu_device_options *opts,
			   const char *path)
{
	struct sim_backend *be;
	pthread_condattr_t ca;
	npu_status st;

	(void)path;
	be = calloc(1, sizeof(*be));
	if (!be)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY, "out of memory");
	dev->be = be;
	pthread_mutex_init(&be->mem_lock, NULL);
	pthread_mutex_init(&be->hw_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&be->hw_cond, &ca);
	pthread_condattr_destroy(&ca);

	be->arena_size = opts->sim_memory_bytes ? opts->sim_memory_bytes :
						  SIM_DEFAULT_MEMORY;
	be->arena_size = (be->arena_size + NPU_PAGE_SIZE - 1) & ~(NPU_PAGE_SIZE - 1);
	be->ring_entries = opts->sim_ring_entries ? opts->sim_ring_entries :
						    SIM_DEFAULT_RING;
	if (be->ring_entries > NPU_RING_MAX_ENTRIES ||
	    (be->ring_entries & (be->ring_entries - 1))) {
		st = npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				   "sim_ring_entries %u is not a power of two up to %u",
				   be->ring_entries, NPU_RING_MAX_ENTRIES);
		goto fail;
	}
	if (be->arena_size < (1u << 20) || be->arena_size > (1ull << 38)) {
		st = npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				   "sim_memory_bytes %" PRIu64 " is outside 1 MiB .. 256 GiB",
				   be->arena_size);
		goto fail;
	}
	/* Lazily backed: untouched pages cost nothing. */
	be->arena = mmap(NULL, be->arena_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (be->arena == MAP_FAILED) {
		be->arena = NULL;
		st = npu_dev_error(dev, NPU_ERR_NO_MEMORY,
				   "sim: cannot reserve a %" PRIu64 " MiB arena: %s",
				   be->arena_size >> 20, strerror(errno));
		goto fail;
	}
	be->num_pages = be->arena_size / NPU_PAGE_SIZE;
	be->page_used = calloc((be->num_pages + 63) / 64, sizeof(uint64_t));
	if (!be->page_used) {
		st = npu_dev_error(dev, NPU_ERR_NO_MEMORY, "out of memory");
		goto fail;
	}
	if (be->num_pages % 64)	/* pages past the end are never free */
		be->page_used[be->num_pages / 64] = ~0ull << (be->num_pages % 64);
	be->sim = npu_sim_create(&sim_host_ops, be);
	if (!be->sim) {
		st = npu_dev_error(dev, NPU_ERR_NO_MEMORY, "npu_sim_create failed");
		goto fail;
	}
	st = sim_set_threads(dev, be, opts->flags & NPU_DEVICE_SIM_THREADS ? opts->sim_threads : 0);
	if (st)
		goto fail;
	st = sim_boot(dev, opts);
	if (st)
		goto fail;
	if (pthread_create(&be->worker, NULL, sim_worker, dev)) {
		st = npu_dev_error(dev, NPU_ERR_NO_MEMORY,
				   "cannot start the sim worker thread");
		goto fail;
	}
	be->worker_started = true;
	return NPU_OK;
fail:
	sim_close(dev);
	return st;
}

static void sim_close(struct npu_device *dev)
{
	struct sim_backend *be = to_sim(dev);
	struct npu_job *left = NULL;
	unsigned int q;

	if (!be)
		return;
	if (be->worker_started) {
		pthread_mutex_lock(&be->hw_lock);
		be->stop = true;
		pthread_cond_signal(&be->hw_cond);
		pthread_mutex_unlock(&be->hw_lock);
		pthread_join(be->worker, NULL);
	}
	/* Anything still queued never ran: abort it, as a reset would. */
	for (q = 0; q < NPU_NUM_QUEUES; q++) {
		struct sim_queue *sq = &be->q[q];
		struct npu_job *j;

		while (sq->slot && sq->harvested != sq->tail) {
			j = sq->slot[sq->harvested++ % be->ring_entries];
			if (j) {
				j->cq_next = left;
				left = j;
			}
		}
		while ((j = sq->fifo_head)) {
			sq->fifo_head = j->cq_next;
			j->cq_next = left;
			left = j;
		}
		free(sq->slot);
		sq->slot = NULL;
	}
	while (left) {
		struct npu_job *next = left->cq_next;

		left->cq_next = NULL;
		left->result.device_status = NPU_JOB_ERR_ABORTED;
		npu_dev_job_complete(dev, left);
		left = next;
	}
	if (be->sim) {
		wr(be, NPU_REG_CTRL, NPU_CTRL_RESET);
		npu_sim_destroy(be->sim);
	}
	be->sim = NULL;
	/* Buffers are freed by device.c after close: keep the arena until then. */
}

static void sim_release(struct npu_device *dev)
{
	struct sim_backend *be = to_sim(dev);

	if (!be)
		return;
	if (be->arena)
		munmap(be->arena, be->arena_size);
	free(be->page_used);
	pthread_mutex_destroy(&be->mem_lock);
	pthread_mutex_destroy(&be->hw_lock);
	pthread_cond_destroy(&be->hw_cond);
}

const struct npu_backend_ops npu_sim_backend_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.release = sim_release,
	.buffer_alloc = sim_buffer_alloc,
	.buffer_free = sim_buffer_free,
	.submit = sim_submit,
};
