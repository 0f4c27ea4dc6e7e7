/* SPDX-License-Identifier: MIT */
/*
 * sim_test_host.c - the test host of sim_test_host.h.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_test_host.h"

static void sim_test_die(const char *what)
{
	fprintf(stderr, "sim_test_host: %s\n", what);
	abort();
}

static bool sim_test_in_range(const struct sim_test_host *host, uint64_t addr,
			      size_t len)
{
	return addr <= host->mem_size && len <= host->mem_size - addr;
}

static int host_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	struct sim_test_host *host = opaque;

	if (!sim_test_in_range(host, addr, len))
		return -1;
	memcpy(buf, host->mem + addr, len);
	return 0;
}

static int host_dma_write(void *opaque, uint64_t addr, const void *buf,
			  size_t len)
{
	struct sim_test_host *host = opaque;

	if (!sim_test_in_range(host, addr, len))
		return -1;
	memcpy(host->mem + addr, buf, len);
	return 0;
}

static void host_irq(void *opaque, unsigned int vector)
{
	struct sim_test_host *host = opaque;

	if (host->irq_count < SIM_TEST_IRQ_LOG)
		host->irq_log[host->irq_count] = vector;
	host->irq_count++;
}

static uint64_t host_now_ns(void *opaque)
{
	struct sim_test_host *host = opaque;

	return atomic_fetch_add(&host->now_ns, host->clock_step) + host->clock_step;
}

static const struct npu_sim_host_ops sim_test_ops = {
	.dma_read = host_dma_read,
	.dma_write = host_dma_write,
	.irq = host_irq,
	.now_ns = host_now_ns,
};

int sim_test_host_init(struct sim_test_host *host, uint64_t mem_size)
{
	memset(host, 0, sizeof(*host));
	host->mem = calloc(1, mem_size);
	if (!host->mem)
		return -1;
	host->mem_size = mem_size;
	host->alloc_next = NPU_PAGE_SIZE;
	host->now_ns = 1000000;
	host->clock_step = 100;
	host->sim = npu_sim_create(&sim_test_ops, host);
	if (!host->sim) {
		free(host->mem);
		return -1;
	}
	return 0;
}

void sim_test_host_fini(struct sim_test_host *host)
{
	npu_sim_destroy(host->sim);
	free(host->mem);
	memset(host, 0, sizeof(*host));
}

int sim_test_host_setup(struct sim_test_host *host, uint64_t mem_size)
{
	if (sim_test_host_init(host, mem_size))
		return -1;
	if (sim_test_boot(host) != NPU_STATE_READY)
		return -1;
	sim_test_ctx_table_init(host);
	for (unsigned int q = 0; q < NPU_NUM_QUEUES; q++)
		sim_test_ring_init(host, q, SIM_TEST_RING_ENTRIES);
	/* Start from a clean IRQ state: drop the boot event. */
	sim_test_set_reg(host, NPU_REG_IRQ_ACK, 0xffffffffu);
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, 0xffffffffu);
	host->irq_count = 0;
	return 0;
}

uint64_t sim_test_alloc(struct sim_test_host *host, uint64_t size,
			uint64_t align)
{
	uint64_t addr = (host->alloc_next + align - 1) & ~(align - 1);

	if (addr > host->mem_size || size > host->mem_size - addr)
		return 0;
	host->alloc_next = addr + size;
	memset(host->mem + addr, 0, size);
	return addr;
}

void sim_test_write(struct sim_test_host *host, uint64_t addr, const void *buf,
		    size_t len)
{
	if (!sim_test_in_range(host, addr, len))
		sim_test_die("write outside host memory");
	memcpy(host->mem + addr, buf, len);
}

void sim_test_read(struct sim_test_host *host, uint64_t addr, void *buf,
		   size_t len)
{
	if (!sim_test_in_range(host, addr, len))
		sim_test_die("read outside host memory");
	memcpy(buf, host->mem + addr, len);
}

uint32_t sim_test_reg(struct sim_test_host *host, uint32_t offset)
{
	return npu_sim_reg_read(host->sim, offset);
}

void sim_test_set_reg(struct sim_test_host *host, uint32_t offset,
		      uint32_t value)
{
	npu_sim_reg_write(host->sim, offset, value);
}

void sim_test_set_reg64(struct sim_test_host *host, uint32_t lo_offset,
			uint64_t value)
{
	npu_sim_reg_write(host->sim, lo_offset, (uint32_t)value);
	npu_sim_reg_write(host->sim, lo_offset + 4, (uint32_t)(value >> 32));
}

uint32_t sim_test_boot_image(struct sim_test_host *host, const void *image,
			     size_t size)
{
	uint64_t addr = sim_test_alloc(host, size, NPU_PAGE_SIZE);

	if (!addr)
		sim_test_die("no memory for the firmware image");
	sim_test_write(host, addr, image, size);
	sim_test_set_reg64(host, NPU_REG_FW_ADDR_LO, addr);
	sim_test_set_reg(host, NPU_REG_FW_SIZE, (uint32_t)size);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	return sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_STATE_MASK;
}

uint32_t sim_test_boot_config(struct sim_test_host *host,
			      const struct npu_fw_config *config)
{
	static const char payload[] = "sim_test_host firmware payload";
	uint8_t image[256];
	size_t size = npu_fw_build(image, sizeof(image), NPU_VERSION(1, 2),
				   "sim-test", config, payload, sizeof(payload));

	if (!size)
		sim_test_die("npu_fw_build failed");
	return sim_test_boot_image(host, image, size);
}

uint32_t sim_test_boot(struct sim_test_host *host)
{
	struct npu_fw_config config;

	npu_fw_default_config(&config);
	return sim_test_boot_config(host, &config);
}

void sim_test_ctx_table_init(struct sim_test_host *host)
{
	host->ctx_table = sim_test_alloc(host, NPU_NUM_CONTEXTS *
					 sizeof(struct npu_ctx_entry),
					 NPU_PAGE_SIZE);
	if (!host->ctx_table)
		sim_test_die("no memory for the context table");
	memset(host->ctx_root, 0, sizeof(host->ctx_root));
	sim_test_set_reg64(host, NPU_REG_CTX_TABLE_LO, host->ctx_table);
}

void sim_test_ctx_init(struct sim_test_host *host, uint32_t ctx)
{
	struct npu_ctx_entry entry = { 0 };
	uint64_t root = sim_test_alloc(host, NPU_PAGE_SIZE, NPU_PAGE_SIZE);

	if (!root || ctx >= NPU_NUM_CONTEXTS)
		sim_test_die("cannot create context");
	host->ctx_root[ctx] = root;
	entry.pt_root = root | NPU_CTX_VALID;
	sim_test_write(host, host->ctx_table + ctx * sizeof(entry), &entry,
		       sizeof(entry));
}

uint64_t sim_test_pte_addr(struct sim_test_host *host, uint32_t ctx,
			   uint64_t va)
{
	uint64_t table = host->ctx_root[ctx];

	if (!table)
		sim_test_die("context has no root table");
	for (int level = NPU_PT_LEVELS - 1; level > 0; level--) {
		uint64_t pte_addr = table + NPU_PT_INDEX(va, level) * 8;
		uint64_t pte;

		sim_test_read(host, pte_addr, &pte, sizeof(pte));
		if (!(pte & NPU_PTE_VALID)) {
			uint64_t next = sim_test_alloc(host, NPU_PAGE_SIZE,
						       NPU_PAGE_SIZE);

			if (!next)
				sim_test_die("no memory for a page table");
			pte = next | NPU_PTE_VALID;
			sim_test_write(host, pte_addr, &pte, sizeof(pte));
		}
		table = pte & NPU_PTE_ADDR_MASK;
	}
	return table + NPU_PT_INDEX(va, 0) * 8;
}

void sim_test_set_pte(struct sim_test_host *host, uint32_t ctx, uint64_t va,
		      uint64_t pte)
{
	sim_test_write(host, sim_test_pte_addr(host, ctx, va), &pte, sizeof(pte));
}

void sim_test_map(struct sim_test_host *host, uint32_t ctx, uint64_t va,
		  uint64_t addr, uint64_t size, uint64_t perms)
{
	for (uint64_t off = 0; off < size; off += NPU_PAGE_SIZE)
		sim_test_set_pte(host, ctx, va + off,
				 ((addr + off) & NPU_PTE_ADDR_MASK) |
				 NPU_PTE_VALID | perms);
}

uint64_t sim_test_map_new(struct sim_test_host *host, uint32_t ctx,
			  uint64_t va, uint64_t size, uint64_t perms)
{
	uint64_t pages = (size + NPU_PAGE_SIZE - 1) & ~(NPU_PAGE_SIZE - 1);
	uint64_t addr = sim_test_alloc(host, pages, NPU_PAGE_SIZE);

	if (!addr)
		sim_test_die("no memory for a mapping");
	sim_test_map(host, ctx, va, addr, pages, perms);
	return addr;
}

void sim_test_ring_init(struct sim_test_host *host, unsigned int q,
			uint32_t entries)
{
	struct sim_test_ring *ring = &host->rings[q];

	ring->entries = entries;
	ring->base = sim_test_alloc(host, (uint64_t)entries *
				    sizeof(struct npu_job_desc), 64);
	ring->completions = sim_test_alloc(host, (uint64_t)entries *
					   sizeof(struct npu_completion), 64);
	if (!ring->base || !ring->completions)
		sim_test_die("no memory for a ring");
	sim_test_set_reg64(host, NPU_REG_QUEUE(q, NPU_QREG_RING_BASE_LO),
			   ring->base);
	sim_test_set_reg(host, NPU_REG_QUEUE(q, NPU_QREG_RING_SIZE), entries);
}

uint64_t sim_test_completion_addr(struct sim_test_host *host, unsigned int q,
				  uint32_t index)
{
	struct sim_test_ring *ring = &host->rings[q];

	return ring->completions + (uint64_t)(index % ring->entries) *
				   sizeof(struct npu_completion);
}

struct npu_job_desc sim_test_desc(struct sim_test_host *host, unsigned int q,
				  uint32_t ctx, uint64_t cmd_va,
				  uint32_t cmd_size, uint64_t seqno)
{
	uint32_t tail = sim_test_reg(host, NPU_REG_QUEUE(q, NPU_QREG_TAIL));
	struct npu_job_desc desc = {
		.context = ctx,
		.cmd_va = cmd_va,
		.cmd_size = cmd_size,
		.seqno = seqno,
		.completion_addr = sim_test_completion_addr(host, q, tail),
	};

	return desc;
}

void sim_test_doorbell(struct sim_test_host *host, unsigned int q)
{
	sim_test_set_reg(host, NPU_REG_QUEUE(q, NPU_QREG_DOORBELL), 1);
}

uint32_t sim_test_push(struct sim_test_host *host, unsigned int q,
		       const struct npu_job_desc *desc, bool doorbell)
{
	struct sim_test_ring *ring = &host->rings[q];
	uint32_t tail = sim_test_reg(host, NPU_REG_QUEUE(q, NPU_QREG_TAIL));
	struct npu_completion clear = { 0 };

	/* Clear the completion slot so a stale fence cannot pass for new. */
	sim_test_write(host, sim_test_completion_addr(host, q, tail), &clear,
		       sizeof(clear));
	sim_test_write(host, ring->base + (uint64_t)(tail % ring->entries) *
			     sizeof(*desc), desc, sizeof(*desc));
	sim_test_set_reg(host, NPU_REG_QUEUE(q, NPU_QREG_TAIL), tail + 1);
	if (doorbell)
		sim_test_doorbell(host, q);
	return tail;
}

bool sim_test_completion(struct sim_test_host *host, unsigned int q,
			 uint32_t index, struct npu_completion *out)
{
	sim_test_read(host, sim_test_completion_addr(host, q, index), out,
		      sizeof(*out));
	return out->fence == NPU_COMPLETION_FENCE;
}

void sim_test_stream_init(struct sim_test_stream *s)
{
	struct npu_cs_header header = {
		.magic = NPU_CS_MAGIC,
		.isa_major = NPU_ISA_VERSION_MAJOR,
		.isa_minor = NPU_ISA_VERSION_MINOR,
	};

	s->len = 0;
	sim_test_emit(s, &header, sizeof(header));
}

uint32_t sim_test_emit(struct sim_test_stream *s, const void *bytes, size_t len)
{
	uint32_t offset = s->len;

	if (len > sizeof(s->buf) - s->len)
		sim_test_die("stream buffer full");
	memcpy(s->buf + s->len, bytes, len);
	s->len += (uint32_t)len;
	return offset;
}

static struct npu_insn_header sim_test_hdr(uint8_t opcode, uint8_t flags,
					   size_t size)
{
	struct npu_insn_header hdr = {
		.opcode = opcode,
		.flags = flags,
		.size = (uint16_t)size,
	};

	return hdr;
}

uint32_t sim_test_emit_nop(struct sim_test_stream *s, uint8_t flags)
{
	struct npu_insn_header hdr = sim_test_hdr(NPU_OP_NOP, flags, sizeof(hdr));

	return sim_test_emit(s, &hdr, sizeof(hdr));
}

uint32_t sim_test_emit_barrier(struct sim_test_stream *s)
{
	struct npu_insn_barrier insn = {
		.hdr = sim_test_hdr(NPU_OP_BARRIER, 0, sizeof(insn)),
	};

	return sim_test_emit(s, &insn, sizeof(insn));
}

uint32_t sim_test_emit_copy(struct sim_test_stream *s, uint8_t flags,
			    uint8_t src_space, uint64_t src,
			    uint8_t dst_space, uint64_t dst, uint32_t rows,
			    uint32_t row_bytes, uint64_t src_stride,
			    uint64_t dst_stride)
{
	struct npu_insn_dma_copy insn = {
		.hdr = sim_test_hdr(NPU_OP_DMA_COPY, flags, sizeof(insn)),
		.src_space = src_space,
		.dst_space = dst_space,
		.rows = rows,
		.src = src,
		.dst = dst,
		.row_bytes = row_bytes,
		.src_stride = src_stride,
		.dst_stride = dst_stride,
	};

	return sim_test_emit(s, &insn, sizeof(insn));
}

uint32_t sim_test_emit_fill(struct sim_test_stream *s, uint8_t flags,
			    uint8_t dst_space, uint64_t dst, uint8_t value,
			    uint32_t rows, uint32_t row_bytes,
			    uint64_t dst_stride)
{
	struct npu_insn_dma_fill insn = {
		.hdr = sim_test_hdr(NPU_OP_DMA_FILL, flags, sizeof(insn)),
		.dst_space = dst_space,
		.value = value,
		.rows = rows,
		.dst = dst,
		.row_bytes = row_bytes,
		.dst_stride = dst_stride,
	};

	return sim_test_emit(s, &insn, sizeof(insn));
}

uint32_t sim_test_emit_timestamp(struct sim_test_stream *s, uint8_t flags,
				 uint64_t va)
{
	struct npu_insn_timestamp insn = {
		.hdr = sim_test_hdr(NPU_OP_TIMESTAMP, flags, sizeof(insn)),
		.va = va,
	};

	return sim_test_emit(s, &insn, sizeof(insn));
}

uint32_t sim_test_emit_lut(struct sim_test_stream *s, uint8_t flags,
			   uint32_t input, uint32_t output, uint32_t table,
			   uint32_t count)
{
	struct npu_insn_lut insn = {
		.hdr = sim_test_hdr(NPU_OP_LUT, flags, sizeof(insn)),
		.input = input,
		.output = output,
		.table = table,
		.count = count,
	};

	return sim_test_emit(s, &insn, sizeof(insn));
}

bool sim_test_run_stream(struct sim_test_host *host, unsigned int q,
			 uint32_t ctx, uint64_t va,
			 const struct sim_test_stream *s,
			 struct npu_completion *out)
{
	uint64_t addr = sim_test_map_new(host, ctx, va, s->len, NPU_PTE_READ);
	struct npu_job_desc desc;
	uint32_t index;

	sim_test_write(host, addr, s->buf, s->len);
	desc = sim_test_desc(host, q, ctx, va, s->len, 0x5e9 + va);
	index = sim_test_push(host, q, &desc, true);
	npu_sim_run_pending(host->sim);
	return sim_test_completion(host, q, index, out);
}

unsigned int sim_test_irq_count(const struct sim_test_host *host,
				unsigned int vector)
{
	unsigned int n = 0;
	unsigned int logged = host->irq_count < SIM_TEST_IRQ_LOG ?
			      host->irq_count : SIM_TEST_IRQ_LOG;

	for (unsigned int i = 0; i < logged; i++)
		n += host->irq_log[i] == vector;
	return n;
}
