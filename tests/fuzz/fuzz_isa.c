/* SPDX-License-Identifier: MIT */
/*
 * fuzz_isa.c - libFuzzer target over firmware-sim's descriptor checks,
 * command-stream decoder, validator and executor.
 *
 * A sim boots over 1 MiB of host memory; context 1 maps all of it
 * identity, read/write, so a stream may DMA over its own page tables,
 * ring or context table: hostile, but never a crash. Input byte 0 picks
 * the variant:
 *   bit 0 clear: bytes 1.. are the command stream of a valid descriptor;
 *   bit 0 set:   bytes 1..64 are the raw descriptor, the rest the stream
 *                (placed at FUZZ_STREAM_ADDR whatever the descriptor says);
 *   bit 1:       submit on queue 1 instead of 0;
 *   bit 2:       run the job twice (TLB and SRAM state carried over).
 * Every input starts from the same memory snapshot and a freshly reset,
 * booted device, so a crash reproduces from its input alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_sim_layout.h"
#include "sim_test_host.h"

#define FUZZ_MEM_SIZE		(1u << 20)
#define FUZZ_CTX		1
#define FUZZ_STREAM_ADDR	0x80000ull	/* VA == host address */
#define FUZZ_STREAM_MAX		0x40000u
/* Small enough that no input runs for long, large enough for real work. */
#define FUZZ_WATCHDOG_CYCLES	200000u
#define FUZZ_TLB_ENTRIES	8u

static struct sim_test_host fuzz_host;
static struct fuzz_sim_layout fuzz_layout;

static void fuzz_check(int ok)
{
	if (!ok)
		__builtin_trap();
}

static void fuzz_boot(void)
{
	fuzz_check(fuzz_sim_boot(&fuzz_host, &fuzz_layout, FUZZ_WATCHDOG_CYCLES));
}

static void fuzz_init(void)
{
	struct sim_test_host *host = &fuzz_host;

	if (sim_test_host_init(host, FUZZ_MEM_SIZE))
		abort();
	fuzz_sim_layout_init(host, FUZZ_MEM_SIZE, FUZZ_TLB_ENTRIES, FUZZ_CTX, FUZZ_STREAM_ADDR,
			     &fuzz_layout);
}

static void fuzz_run_job(unsigned int q, const struct npu_job_desc *desc)
{
	struct sim_test_host *host = &fuzz_host;
	struct npu_completion c;
	uint32_t index;

	index = sim_test_push(host, q, desc, true);
	npu_sim_run_pending(host->sim);
	fuzz_check(!npu_sim_has_work(host->sim));
	fuzz_check(!(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_BUSY));
	if (sim_test_reg(host, NPU_REG_QUEUE(q, NPU_QREG_STATUS)) != NPU_QUEUE_OK)
		return;
	/* The record may have been overwritten by the job itself: re-read raw. */
	if (desc->completion_addr > FUZZ_MEM_SIZE - sizeof(c))
		return;
	sim_test_read(host, desc->completion_addr, &c, sizeof(c));
	fuzz_check(c.fence == NPU_COMPLETION_FENCE);
	fuzz_check(c.status < NPU_JOB_STATUS_COUNT);
	fuzz_check(c.status == NPU_JOB_OK || c.status == NPU_JOB_ERR_BAD_DESC ||
		   c.status == NPU_JOB_ERR_BAD_CONTEXT ||
		   c.error_offset < desc->cmd_size);
	fuzz_check(c.error_offset % 8 == 0);
	fuzz_check(c.status != NPU_JOB_ERR_WATCHDOG ||
		   c.cycles == FUZZ_WATCHDOG_CYCLES);
	fuzz_check(c.cycles <= FUZZ_WATCHDOG_CYCLES);
	(void)index;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_test_host *host = &fuzz_host;
	struct npu_job_desc desc;
	const uint8_t *stream;
	size_t stream_len;
	unsigned int q;
	uint8_t mode;

	if (!fuzz_layout.snapshot)
		fuzz_init();
	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	q = (mode >> 1) & 1;

	memcpy(host->mem, fuzz_layout.snapshot, FUZZ_MEM_SIZE);
	fuzz_boot();

	desc = sim_test_desc(host, q, FUZZ_CTX, FUZZ_STREAM_ADDR, 0, 1);
	if (mode & 1) {
		if (size < sizeof(desc))
			return 0;
		memcpy(&desc, data, sizeof(desc));
		data += sizeof(desc);
		size -= sizeof(desc);
	}
	stream = data;
	stream_len = size < FUZZ_STREAM_MAX ? size : FUZZ_STREAM_MAX;
	sim_test_write(host, FUZZ_STREAM_ADDR, stream, stream_len);
	if (!(mode & 1))
		desc.cmd_size = (uint32_t)(stream_len & ~(size_t)7);

	fuzz_run_job(q, &desc);
	if (mode & 4) {
		desc.seqno++;
		fuzz_run_job(q, &desc);
	}
	return 0;
}
