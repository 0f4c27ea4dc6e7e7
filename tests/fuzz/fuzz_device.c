/* SPDX-License-Identifier: MIT */
/*
 * fuzz_device.c - libFuzzer target: firmware-sim as a hostile guest sees
 * it, through the interface the QEMU device uses (npu_sim.h: host
 * callbacks for DMA, IRQ and clock; register reads and writes; job fetch,
 * execute and finish as separate steps).
 *
 * The input is a small program for the guest. Each action starts with a
 * byte whose low 3 bits pick it:
 *   0 RAM      u32 addr, u8 len, len bytes: write guest RAM
 *   1 MMIO     u16 offset, u32 value: write a register of BAR0
 *   2 RING     u8 queue, u16 stream offset, u16 stream size, u8 flags:
 *              a descriptor at TAIL (a valid one, or 64 raw bytes when
 *              flags bit 0 is set), TAIL + 1, doorbell when bit 1 is set
 *   3 FETCH    take the next job (the device goes BUSY)
 *   4 EXECUTE  run the fetched job's stream: the racing actions armed
 *              before it fire during it
 *   5 FINISH   complete the fetched job
 *   6 RACE     u8 when, then one RAM or MMIO action: armed to happen at
 *              the when-th host memory access of the next EXECUTE, i.e.
 *              while the job runs (guest writes to its stream, its page
 *              tables, its ring; resets, invalidations, queue disables)
 *   7 RUN      fetch, execute and finish until no work is left
 * Guest RAM is 1 MiB; context 1 maps it all identity and read/write, so
 * streams may DMA over their own page tables, rings or stream. Every input
 * starts from the same memory snapshot and a freshly booted device.
 *
 * Checks (a failed check aborts: a finding): no sanitizer report; a job's
 * host CPU time stays within FUZZ_NS_FIXED + FUZZ_NS_PER_CYCLE per
 * modeled cycle (the real work of a job is bounded by what the cycle model
 * charges; issue 29 D-b); completion records are well formed; no run
 * executes more jobs than any doorbell can announce (issue 29 D-c).
 *
 * The harness keeps WATCHDOG_CYCLES between 1 and FUZZ_WATCHDOG_CYCLES
 * (a guest may switch it off, but then a job may legitimately run for
 * hours of modeled time, which no fuzzer can wait for).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz_sim_layout.h"
#include "sim_test_host.h"

#define FUZZ_MEM_SIZE		(1u << 20)
#define FUZZ_CTX		1
#define FUZZ_STREAM_BASE	0x80000u	/* VA == host address */
#define FUZZ_WATCHDOG_CYCLES	200000u
#define FUZZ_TLB_ENTRIES	8u
#define FUZZ_MAX_ACTIONS	256
#define FUZZ_MAX_RACES		8
#define FUZZ_BAR0_SIZE		0x2000u
/*
 * Host CPU time per job: a fixed part (setup, sanitizer overhead, the
 * first page walks) and a part per modeled cycle. The busiest cycle does
 * a few thousand MACs (a 32 x 32 array in 4 parts) or moves 128 pixels of
 * a depthwise op, a few microseconds of host work without sanitizers;
 * both are generous for an ASan + UBSan build. The defect this catches
 * (issue 29 D-b) cost 22 ms per modeled cycle.
 */
#define FUZZ_NS_FIXED		(200ull * 1000 * 1000)
#define FUZZ_NS_PER_CYCLE	(100ull * 1000)

enum fuzz_action {
	FUZZ_RAM, FUZZ_MMIO, FUZZ_RING, FUZZ_FETCH, FUZZ_EXECUTE, FUZZ_FINISH,
	FUZZ_RACE, FUZZ_RUN,
};

struct fuzz_input {
	const uint8_t *data;
	size_t size;
};

/* An action armed to happen while a job executes. */
struct fuzz_race {
	uint32_t when;		/* host memory accesses into the job */
	bool mmio;
	uint32_t addr;		/* RAM address or register offset */
	uint32_t value;		/* register value */
	uint8_t len;
	uint8_t bytes[255];
};

static struct sim_test_host fuzz_host;
static struct fuzz_sim_layout fuzz_layout;

static struct fuzz_race fuzz_races[FUZZ_MAX_RACES];
static unsigned int fuzz_num_races;
static bool fuzz_executing;
static uint32_t fuzz_accesses;

static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_device: %s\n", what);
	abort();
}

static void fuzz_check(bool ok, const char *what)
{
	if (!ok)
		fuzz_fail(what);
}

static bool take(struct fuzz_input *in, void *out, size_t len)
{
	if (in->size < len)
		return false;
	memcpy(out, in->data, len);
	in->data += len;
	in->size -= len;
	return true;
}

/* ---- Register writes, with the harness's watchdog clamp ---------------- */

static void fuzz_mmio(uint32_t offset, uint32_t value)
{
	struct sim_test_host *host = &fuzz_host;
	uint32_t watchdog;

	offset = (offset % FUZZ_BAR0_SIZE) & ~3u;
	npu_sim_reg_write(host->sim, offset, value);
	watchdog = npu_sim_reg_read(host->sim, NPU_REG_WATCHDOG_CYCLES);
	if (!watchdog || watchdog > FUZZ_WATCHDOG_CYCLES)
		npu_sim_reg_write(host->sim, NPU_REG_WATCHDOG_CYCLES,
				  FUZZ_WATCHDOG_CYCLES);
}

static void fuzz_ram(uint32_t addr, const uint8_t *bytes, uint32_t len)
{
	addr %= FUZZ_MEM_SIZE;
	if (len > FUZZ_MEM_SIZE - addr)
		len = FUZZ_MEM_SIZE - addr;
	memcpy(fuzz_host.mem + addr, bytes, len);
}

/* ---- The host callbacks: plain memory, plus the races ------------------ */

static void fuzz_fire_races(void)
{
	if (!fuzz_executing)
		return;
	fuzz_accesses++;
	for (unsigned int i = 0; i < fuzz_num_races; i++) {
		struct fuzz_race *race = &fuzz_races[i];

		if (race->when != fuzz_accesses)
			continue;
		if (race->mmio)
			fuzz_mmio(race->addr, race->value);
		else
			fuzz_ram(race->addr, race->bytes, race->len);
	}
}

static int fuzz_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	struct sim_test_host *host = opaque;

	fuzz_fire_races();
	if (addr > host->mem_size || len > host->mem_size - addr)
		return -1;
	memcpy(buf, host->mem + addr, len);
	return 0;
}

static int fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
			  size_t len)
{
	struct sim_test_host *host = opaque;

	fuzz_fire_races();
	if (addr > host->mem_size || len > host->mem_size - addr)
		return -1;
	memcpy(host->mem + addr, buf, len);
	return 0;
}

static void fuzz_irq(void *opaque, unsigned int vector)
{
	struct sim_test_host *host = opaque;

	fuzz_check(vector < NPU_MSIX_NUM_VECTORS, "IRQ on a vector the device lacks");
	host->irq_count++;
}

static uint64_t fuzz_now_ns(void *opaque)
{
	struct sim_test_host *host = opaque;

	return atomic_fetch_add(&host->now_ns, 100) + 100;
}

static const struct npu_sim_host_ops fuzz_ops = {
	.dma_read = fuzz_dma_read,
	.dma_write = fuzz_dma_write,
	.irq = fuzz_irq,
	.now_ns = fuzz_now_ns,
};

/* ---- Setup ------------------------------------------------------------- */

static void fuzz_init(void)
{
	struct sim_test_host *host = &fuzz_host;

	if (sim_test_host_init(host, FUZZ_MEM_SIZE))
		abort();
	/* The same sim, behind this file's callbacks. */
	npu_sim_destroy(host->sim);
	host->sim = npu_sim_create(&fuzz_ops, host);
	if (!host->sim)
		abort();
	fuzz_sim_layout_init(host, FUZZ_MEM_SIZE, FUZZ_TLB_ENTRIES, FUZZ_CTX, FUZZ_STREAM_BASE,
			     &fuzz_layout);
}

static void fuzz_boot(void)
{
	fuzz_check(fuzz_sim_boot(&fuzz_host, &fuzz_layout, FUZZ_WATCHDOG_CYCLES),
		   "the reference firmware did not boot");
}

/* ---- Jobs -------------------------------------------------------------- */

static struct npu_sim_job fuzz_job;
static bool fuzz_job_fetched, fuzz_job_executed;

static uint64_t fuzz_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fuzz_execute(void)
{
	uint64_t start, spent, allowed;
	char why[160];

	if (!fuzz_job_fetched || fuzz_job_executed)
		return;
	fuzz_executing = true;
	fuzz_accesses = 0;
	start = fuzz_cpu_ns();
	npu_sim_job_execute(fuzz_host.sim, &fuzz_job);
	spent = fuzz_cpu_ns() - start;
	fuzz_executing = false;
	fuzz_num_races = 0;
	fuzz_job_executed = true;
	if (fuzz_job.hang)
		return;
	fuzz_check(fuzz_job.result.status < NPU_JOB_STATUS_COUNT,
		   "a job status outside the contract");
	fuzz_check(fuzz_job.result.cycles <= FUZZ_WATCHDOG_CYCLES,
		   "a job ran past its watchdog budget");
	allowed = FUZZ_NS_FIXED + FUZZ_NS_PER_CYCLE * fuzz_job.result.cycles;
	if (getenv("FUZZ_DEVICE_VERBOSE"))
		fprintf(stderr, "fuzz_device: job %llu on queue %u: %s at %u, "
			"%llu cycles, %llu MACs, %llu ns of CPU\n",
			(unsigned long long)fuzz_job.desc.seqno, fuzz_job.queue,
			npu_job_status_name(fuzz_job.result.status),
			fuzz_job.result.error_offset,
			(unsigned long long)fuzz_job.result.cycles,
			(unsigned long long)fuzz_job.result.macs,
			(unsigned long long)spent);
	if (spent > allowed) {
		snprintf(why, sizeof(why),
			 "host time per modeled cycle: %llu ns of CPU for %llu cycles "
			 "(status %s)", (unsigned long long)spent,
			 (unsigned long long)fuzz_job.result.cycles,
			 npu_job_status_name(fuzz_job.result.status));
		fuzz_fail(why);
	}
}

static void fuzz_finish(void)
{
	if (!fuzz_job_fetched)
		return;
	if (!fuzz_job_executed)
		fuzz_execute();
	npu_sim_job_finish(fuzz_host.sim, &fuzz_job);
	fuzz_job_fetched = false;
}

static void fuzz_fetch(void)
{
	if (fuzz_job_fetched)
		return;
	fuzz_job_fetched = npu_sim_job_fetch(fuzz_host.sim, &fuzz_job);
	fuzz_job_executed = false;
}

static void fuzz_run(void)
{
	unsigned int jobs = 0;

	fuzz_finish();
	for (;;) {
		fuzz_fetch();
		if (!fuzz_job_fetched)
			break;
		if (fuzz_job.hang) {
			fuzz_job_fetched = false;	/* BUSY until a reset */
			break;
		}
		fuzz_finish();
		/*
		 * A doorbell announces at most a ring of the largest size; the
		 * races of the first job may ring again, once each.
		 */
		fuzz_check(++jobs <= (FUZZ_MAX_RACES + 1) * NPU_RING_MAX_ENTRIES,
			   "more jobs ran than any doorbell announced");
	}
}

static void fuzz_ring(struct fuzz_input *in)
{
	struct sim_test_host *host = &fuzz_host;
	struct npu_job_desc desc;
	uint8_t q, flags;
	uint16_t offset, size;
	uint32_t tail, ring_size;
	uint64_t base;

	if (!take(in, &q, 1) || !take(in, &offset, 2) || !take(in, &size, 2) ||
	    !take(in, &flags, 1))
		return;
	q %= NPU_NUM_QUEUES;
	desc = sim_test_desc(host, q, FUZZ_CTX, FUZZ_STREAM_BASE + (offset & ~7u),
			     size & ~7u, offset);
	if (flags & 1)
		take(in, &desc, sizeof(desc));
	/* Where the guest's registers say the ring is, as a driver would. */
	tail = npu_sim_reg_read(host->sim, NPU_REG_QUEUE(q, NPU_QREG_TAIL));
	ring_size = npu_sim_reg_read(host->sim, NPU_REG_QUEUE(q, NPU_QREG_RING_SIZE));
	base = npu_sim_reg_read(host->sim, NPU_REG_QUEUE(q, NPU_QREG_RING_BASE_LO)) |
	       (uint64_t)npu_sim_reg_read(host->sim,
					  NPU_REG_QUEUE(q, NPU_QREG_RING_BASE_HI)) << 32;
	if (ring_size && !(ring_size & (ring_size - 1))) {
		uint64_t slot = base + (uint64_t)(tail & (ring_size - 1)) * sizeof(desc);

		if (slot < FUZZ_MEM_SIZE && sizeof(desc) <= FUZZ_MEM_SIZE - slot)
			memcpy(host->mem + slot, &desc, sizeof(desc));
	}
	fuzz_mmio(NPU_REG_QUEUE(q, NPU_QREG_TAIL), tail + 1);
	if (flags & 2)
		fuzz_mmio(NPU_REG_QUEUE(q, NPU_QREG_DOORBELL), 1);
}

static void fuzz_race_arm(struct fuzz_input *in)
{
	struct fuzz_race *race;
	uint8_t when, kind;
	uint16_t reg;

	if (!take(in, &when, 1) || !take(in, &kind, 1) ||
	    fuzz_num_races == FUZZ_MAX_RACES)
		return;
	race = &fuzz_races[fuzz_num_races];
	race->when = when;
	race->mmio = kind & 1;
	if (race->mmio) {
		if (!take(in, &reg, 2) || !take(in, &race->value, 4))
			return;
		race->addr = reg;
	} else {
		if (!take(in, &race->addr, 4) || !take(in, &race->len, 1) ||
		    !take(in, race->bytes, race->len))
			return;
	}
	fuzz_num_races++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_test_host *host = &fuzz_host;
	struct fuzz_input in = { data, size };
	uint8_t op;

	if (!fuzz_layout.snapshot)
		fuzz_init();
	memcpy(host->mem, fuzz_layout.snapshot, FUZZ_MEM_SIZE);
	fuzz_num_races = 0;
	fuzz_job_fetched = false;
	fuzz_boot();

	for (unsigned int n = 0; n < FUZZ_MAX_ACTIONS && take(&in, &op, 1); n++) {
		switch ((enum fuzz_action)(op & 7)) {
		case FUZZ_RAM: {
			uint32_t addr;
			uint8_t len;

			if (!take(&in, &addr, 4) || !take(&in, &len, 1))
				break;
			if (len > in.size)
				len = (uint8_t)in.size;
			fuzz_ram(addr, in.data, len);
			in.data += len;
			in.size -= len;
			break;
		}
		case FUZZ_MMIO: {
			uint16_t reg;
			uint32_t value;

			if (take(&in, &reg, 2) && take(&in, &value, 4))
				fuzz_mmio(reg, value);
			break;
		}
		case FUZZ_RING:
			fuzz_ring(&in);
			break;
		case FUZZ_FETCH:
			fuzz_fetch();
			break;
		case FUZZ_EXECUTE:
			fuzz_execute();
			break;
		case FUZZ_FINISH:
			fuzz_finish();
			break;
		case FUZZ_RACE:
			fuzz_race_arm(&in);
			break;
		case FUZZ_RUN:
			fuzz_run();
			break;
		}
	}
	/* A fetched job always completes or is dropped, as the QEMU pump does. */
	fuzz_finish();
	fuzz_run();
	return 0;
}
