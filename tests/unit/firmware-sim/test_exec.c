/* SPDX-License-Identifier: MIT */
/*
 * test_exec.c - command-stream execution: malformed streams end with an
 * exact status and error_offset; DMA semantics and bounds; TIMESTAMP;
 * the two-engine cycle model and hazard detection; an int16 (16x8) job;
 * an output-LUT (ISA 1.4) job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "npu_isa.h"
#include "sim_test_host.h"

#define MEM_SIZE	(8u << 20)
#define CMD_VA		0x1000000ull
#define DATA_VA		0x200000ull
#define HDR		((uint32_t)sizeof(struct npu_cs_header))
#define OVERHEAD	NPU_CYCLES_INSN_OVERHEAD

struct fixture {
	struct sim_test_host host;
	struct sim_test_stream stream;
	uint64_t next_cmd_va;
	uint64_t data;		/* host address of DATA_VA, 64 KiB read/write */
};

static int fixture_setup(void **state)
{
	struct fixture *f = test_calloc(1, sizeof(*f));

	if (!f || sim_test_host_setup(&f->host, MEM_SIZE))
		return -1;
	sim_test_ctx_init(&f->host, 1);
	f->data = sim_test_map_new(&f->host, 1, DATA_VA, 0x10000,
				   NPU_PTE_READ | NPU_PTE_WRITE);
	f->next_cmd_va = CMD_VA;
	sim_test_stream_init(&f->stream);
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

static struct npu_completion run(struct fixture *f)
{
	struct npu_completion c;

	assert_true(sim_test_run_stream(&f->host, 0, 1, f->next_cmd_va,
					&f->stream, &c));
	f->next_cmd_va += 0x100000;
	return c;
}

static void expect(struct fixture *f, uint32_t status, uint32_t offset)
{
	struct npu_completion c = run(f);

	if (c.status != status)
		print_error("status %s, expected %s\n",
			    npu_job_status_name(c.status),
			    npu_job_status_name(status));
	assert_int_equal(c.status, status);
	assert_int_equal(c.error_offset, offset);
}

static struct npu_cs_header *stream_header(struct fixture *f)
{
	return (struct npu_cs_header *)f->stream.buf;
}

/* ---- Stream structure ---- */

static void bad_stream_headers_fail_at_offset_0(void **state)
{
	struct fixture *f = *state;

	sim_test_emit_nop(&f->stream, 0);
	stream_header(f)->magic ^= 0x100;
	expect(f, NPU_JOB_ERR_BAD_HEADER, 0);
	stream_header(f)->magic = NPU_CS_MAGIC;
	stream_header(f)->isa_major = NPU_ISA_VERSION_MAJOR + 1;
	expect(f, NPU_JOB_ERR_BAD_HEADER, 0);
	stream_header(f)->isa_major = NPU_ISA_VERSION_MAJOR;
	stream_header(f)->isa_minor = NPU_ISA_VERSION_MINOR + 1;
	expect(f, NPU_JOB_ERR_BAD_HEADER, 0);
	stream_header(f)->isa_minor = NPU_ISA_VERSION_MINOR;
	stream_header(f)->reserved[1] = 4;
	expect(f, NPU_JOB_ERR_BAD_HEADER, 0);
	stream_header(f)->reserved[1] = 0;
	expect(f, NPU_JOB_OK, 0);
	/* Shorter than a header. */
	f->stream.len = 8;
	expect(f, NPU_JOB_ERR_BAD_HEADER, 0);
	/* A header and nothing else is an empty, valid program. */
	f->stream.len = HDR;
	expect(f, NPU_JOB_OK, 0);
}

static void truncated_instruction_reports_its_offset(void **state)
{
	struct fixture *f = *state;
	uint32_t offset;

	sim_test_emit_nop(&f->stream, 0);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA,
				    NPU_SPACE_SRAM, 0, 1, 8, 0, 0);
	/* Cut the 56-byte DMA_COPY after 40 bytes. */
	f->stream.len -= 16;
	expect(f, NPU_JOB_ERR_TRUNCATED, offset);
	/* Cut right after its header. */
	f->stream.len = offset + 8;
	expect(f, NPU_JOB_ERR_TRUNCATED, offset);
}

static void unknown_opcodes_fail_bad_opcode(void **state)
{
	struct fixture *f = *state;
	const uint8_t opcodes[] = { 0x03, 0x0f, 0x16, 0x22, 0x33, 0x7f, 0x80, 0xff };

	for (unsigned int i = 0; i < sizeof(opcodes); i++) {
		struct npu_insn_header hdr = { .opcode = opcodes[i], .size = 8 };
		uint32_t offset;

		sim_test_stream_init(&f->stream);
		sim_test_emit_nop(&f->stream, 0);
		sim_test_emit_nop(&f->stream, 0);
		offset = sim_test_emit(&f->stream, &hdr, sizeof(hdr));
		sim_test_emit_nop(&f->stream, 0);
		expect(f, NPU_JOB_ERR_BAD_OPCODE, offset);
	}
}

static void opcode_disabled_by_firmware_fails_bad_opcode(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_fw_config config;
	uint32_t offset;

	sim_test_host_fini(host);
	assert_int_equal(sim_test_host_init(host, MEM_SIZE), 0);
	npu_fw_default_config(&config);
	config.op_mask &= ~NPU_OP_BIT(NPU_OP_DMA_FILL);
	assert_int_equal(sim_test_boot_config(host, &config), NPU_STATE_READY);
	sim_test_ctx_table_init(host);
	sim_test_ring_init(host, 0, 8);
	sim_test_ctx_init(host, 1);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_SRAM, 64,
			   1, 8, 0, 0);
	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 1, 1, 8, 0);
	expect(f, NPU_JOB_ERR_BAD_OPCODE, offset);
}

static void wrong_size_field_fails_bad_encoding(void **state)
{
	struct fixture *f = *state;
	struct npu_insn_header nop16[2] = { { .opcode = NPU_OP_NOP, .size = 16 } };
	uint32_t offset;

	sim_test_emit_nop(&f->stream, 0);
	offset = sim_test_emit(&f->stream, nop16, sizeof(nop16));
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);

	/* A DMA_COPY claiming 48 bytes; and a size of 0. */
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0,
				    NPU_SPACE_SRAM, 64, 1, 8, 0, 0);
	((struct npu_insn_header *)(f->stream.buf + offset))->size = 48;
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
	((struct npu_insn_header *)(f->stream.buf + offset))->size = 0;
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
	/* A size larger than the rest of the stream is still a bad size. */
	((struct npu_insn_header *)(f->stream.buf + offset))->size = 0xfff8;
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
}

static void reserved_bits_and_unknown_flags_fail_bad_encoding(void **state)
{
	struct fixture *f = *state;
	struct npu_insn_dma_copy *copy;
	struct npu_insn_header *hdr;
	uint32_t offset;

	sim_test_emit_nop(&f->stream, 0);
	offset = sim_test_emit_nop(&f->stream, 0);
	hdr = (struct npu_insn_header *)(f->stream.buf + offset);
	hdr->reserved = 1u << 31;
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
	hdr->reserved = 0;
	hdr->flags = 0x02;
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
	hdr->flags = NPU_INSN_SYNC;
	expect(f, NPU_JOB_OK, 0);

	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0,
				    NPU_SPACE_SRAM, 64, 1, 8, 0, 0);
	copy = (struct npu_insn_dma_copy *)(f->stream.buf + offset);
	copy->codec = 2;	/* no such codec */
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
	copy->codec = 0;
	copy->src_bytes = 0x100;	/* without a codec */
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
}

static void fault_on_a_later_stream_page_names_that_instruction(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_job_desc desc;
	struct npu_completion c;
	uint64_t addr;
	uint32_t index;

	/* 600 NOPs span two pages; only the first page is mapped. */
	for (int i = 0; i < 600; i++)
		sim_test_emit_nop(&f->stream, 0);
	addr = sim_test_map_new(host, 1, CMD_VA, 4096, NPU_PTE_READ);
	sim_test_write(host, addr, f->stream.buf, 4096);
	desc = sim_test_desc(host, 0, 1, CMD_VA, f->stream.len, 1);
	index = sim_test_push(host, 0, &desc, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.error_offset, 4096);
	assert_int_equal(c.fault_addr, CMD_VA + 4096);
	assert_int_equal(c.cycles, (4096 - HDR) / 8 * OVERHEAD);
}

static void stream_range_crossing_the_va_limit_is_unmapped(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_job_desc desc;
	struct npu_completion c;
	uint32_t index;

	desc = sim_test_desc(host, 0, 1, (1ull << NPU_VA_BITS) - 8, 64, 1);
	index = sim_test_push(host, 0, &desc, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.error_offset, 0);
	assert_int_equal(c.fault_addr, 1ull << NPU_VA_BITS);

	desc = sim_test_desc(host, 0, 1, UINT64_MAX - 15, 64, 2);
	index = sim_test_push(host, 0, &desc, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.fault_addr, UINT64_MAX - 15);
}

/* ---- DMA ---- */

static void dma_2d_copy_moves_strided_rows(void **state)
{
	struct fixture *f = *state;
	uint8_t in[8 * 100], out[8 * 100];
	struct npu_completion c;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 13 + 1);
	sim_test_write(&f->host, f->data, in, sizeof(in));
	/* Gather 8 rows of 40 bytes from a 100-byte pitch, pack, scatter at 64. */
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM,
			   1000, 8, 40, 100, 40);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 1000, NPU_SPACE_SRAM,
			   5000, 1, 320, 0, 0);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 5000, NPU_SPACE_VA,
			   DATA_VA + 0x8000, 8, 40, 40, 64);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_VA, DATA_VA + 0x8000 + 40,
			   0xcc, 8, 24, 64);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data + 0x8000, out, 8 * 64);
	for (int r = 0; r < 8; r++) {
		assert_memory_equal(out + r * 64, in + r * 100, 40);
		for (int b = 40; b < 64; b++)
			assert_int_equal(out[r * 64 + b], 0xcc);
	}
	assert_int_equal(sim_test_reg(&f->host, NPU_REG_PERF_DMA_BYTES_LO),
			 320 * 3 + 8 * 24);
}

/*
 * ISA 1.6: a DMA_COPY with the weight codec decodes the stream into SRAM,
 * charges DRAM the compressed bytes (cycles and PERF_DMA_BYTES), and a
 * corrupted stream fails the job at that instruction writing nothing.
 */
static struct npu_insn_dma_copy codec_copy(uint64_t src, uint32_t src_bytes, uint32_t dst,
					   uint32_t bytes)
{
	struct npu_insn_dma_copy d = {
		.hdr = { .opcode = NPU_OP_DMA_COPY, .size = sizeof(d) },
		.src_space = NPU_SPACE_VA, .dst_space = NPU_SPACE_SRAM,
		.codec = NPU_DMA_CODEC_BLOCK, .rows = 1, .src = src, .dst = dst,
		.row_bytes = bytes, .src_bytes = src_bytes,
	};

	return d;
}

static void dma_codec_decodes_and_charges_compressed_bytes(void **state)
{
	struct fixture *f = *state;
	static uint8_t raw[4096], enc[4096 + 3 * 256], out[4096];
	struct npu_insn_dma_copy d;
	struct npu_completion c;
	uint32_t n, offset;

	for (size_t i = 0; i < sizeof(raw); i++)	/* 3 of 4 zero, small values */
		raw[i] = i % 4 ? 0 : (uint8_t)((int)(i % 13) - 6);
	n = npu_wcodec_encode(raw, sizeof(raw), enc);
	assert_true(n < sizeof(raw) / 2);
	sim_test_write(&f->host, f->data, enc, n);
	d = codec_copy(DATA_VA, n, 64, sizeof(raw));
	sim_test_emit(&f->stream, &d, sizeof(d));
	sim_test_emit_copy(&f->stream, NPU_INSN_SYNC, NPU_SPACE_SRAM, 64, NPU_SPACE_VA,
			   DATA_VA + 0x8000, 1, sizeof(raw), 0, 0);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data + 0x8000, out, sizeof(out));
	assert_memory_equal(out, raw, sizeof(raw));
	assert_int_equal(sim_test_reg(&f->host, NPU_REG_PERF_DMA_BYTES_LO), n + sizeof(raw));
	/* decode: 64 + max(ceil(n / 64), 4096 / 256); then the plain copy back */
	assert_int_equal(c.cycles, 2 * OVERHEAD + 64 + (n + 63) / 64 + 64 + sizeof(raw) / 64);

	/* the stream one byte short: BAD_PARAM at the decode, SRAM untouched */
	sim_test_stream_init(&f->stream);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 64, 0x5a, 1, sizeof(raw), 0);
	d = codec_copy(DATA_VA, n - 1, 64, sizeof(raw));
	offset = sim_test_emit(&f->stream, &d, sizeof(d));
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, NPU_INSN_SYNC, NPU_SPACE_SRAM, 64, NPU_SPACE_VA,
			   DATA_VA + 0x8000, 1, sizeof(raw), 0, 0);
	assert_int_equal(run(f).status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data + 0x8000, out, sizeof(out));
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal(out[i], 0x5a);
	/* a corrupted header (width 9) */
	enc[0] = 9;
	sim_test_write(&f->host, f->data, enc, n);
	sim_test_stream_init(&f->stream);
	d = codec_copy(DATA_VA, n, 64, sizeof(raw));
	offset = sim_test_emit(&f->stream, &d, sizeof(d));
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	/* encodings the validator refuses up front */
	sim_test_stream_init(&f->stream);
	d = codec_copy(DATA_VA, n, 64, sizeof(raw));
	d.rows = 2;
	offset = sim_test_emit(&f->stream, &d, sizeof(d));
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	d = codec_copy(DATA_VA, sizeof(raw) + 3 * 256 + 1, 64, sizeof(raw));
	offset = sim_test_emit(&f->stream, &d, sizeof(d));
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	d = codec_copy(DATA_VA, n, 64, sizeof(raw));
	d.dst_space = NPU_SPACE_VA;
	offset = sim_test_emit(&f->stream, &d, sizeof(d));
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
}

/*
 * ISA 1.6: a sparse MATMUL is priced at issue from its weights in SRAM:
 * all-zero kept weights skip every tile; a wrong position in SRAM fails
 * the job with BAD_PARAM at the instruction.
 */
static void sparse_matmul_skips_zero_tiles_and_refuses_bad_positions(void **state)
{
	struct fixture *f = *state;
	struct npu_insn_matmul mm = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(mm) },
		.a = 0, .b = 0x10000, .quant = 0x8000, .output = 0x9000,
		.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS | NPU_CONV_SPARSE(2, 4),
		.m = 64, .k = 256, .n = 64, .a_stride = 256, .out_stride = 64,
		.act_min = -128, .act_max = 127,
	};
	/* the weights: 64 rows x 128 kept values, then positions (0, 1) = 0x4 per group */
	static uint8_t w[64 * 128 + 64 * 128 * 2 / 8];
	uint8_t q[5] = { 0, 0, 0, 0x40, 20 };	/* mult 2^30, shift 20 */
	struct npu_completion c;
	uint32_t offset;

	memset(w, 0, sizeof(w));
	memset(w + 64 * 128, 0x44, 64 * 128 * 2 / 8);	/* (0, 1) in every group */
	sim_test_write(&f->host, f->data, w, sizeof(w));
	sim_test_write(&f->host, f->data + 0x8000, q, sizeof(q));
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM, 0x10000, 1,
			   sizeof(w), 0, 0);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA + 0x8000, NPU_SPACE_SRAM,
			   0x8000, 1, sizeof(q), 0, 0);
	mm.hdr.flags = NPU_INSN_SYNC;
	sim_test_emit(&f->stream, &mm, sizeof(mm));
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	/* the two copies, then the matmul with no tile left: its overhead only */
	assert_int_equal(c.cycles, 64 + (sizeof(w) + 63) / 64 + 64 + 1 + 3 * OVERHEAD);
	/* one nonzero weight: one tile per row of a (64 cycles) */
	w[5] = 3;
	sim_test_write(&f->host, f->data, w, sizeof(w));
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.cycles, 64 + (sizeof(w) + 63) / 64 + 64 + 1 + 3 * OVERHEAD + 64);
	/* group 0's positions (1, 1): refused where the matmul runs */
	w[64 * 128] = 0x5;
	sim_test_write(&f->host, f->data, w, sizeof(w));
	offset = HDR + 2 * sizeof(struct npu_insn_dma_copy);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
}

static void dma_row_arithmetic_overflow_is_bad_param(void **state)
{
	struct fixture *f = *state;
	uint32_t offset;

	/* (rows - 1) * stride overflows 64 bits. */
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA,
				    NPU_SPACE_SRAM, 0, 3, 8, 1ull << 63, 8);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	/* The product fits, adding row_bytes overflows. */
	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 0, 2, 16,
				    UINT64_MAX - 8);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	/* The destination side overflows. */
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0,
				    NPU_SPACE_VA, DATA_VA, 0xffffffffu, 1, 1,
				    1ull << 40);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
}

static void dma_zero_dims_and_bad_spaces_are_bad_param(void **state)
{
	struct fixture *f = *state;
	uint32_t offset;

	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA,
				    NPU_SPACE_SRAM, 0, 0, 8, 8, 8);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA,
				    NPU_SPACE_SRAM, 0, 1, 0, 8, 8);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 0, 0, 8, 8);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, 2, DATA_VA, NPU_SPACE_SRAM, 0,
				    1, 8, 0, 0);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_fill(&f->stream, 0, 7, 0, 0, 1, 8, 0);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
}

static void dma_va_ranges_that_wrap_are_unmapped(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	uint32_t offset;

	/* Starts at the top of the 64-bit space, wraps to 0. */
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, UINT64_MAX - 100,
				    NPU_SPACE_SRAM, 0, 1, 200, 0, 0);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.error_offset, offset);
	assert_int_equal(c.fault_addr, UINT64_MAX - 100);

	/* Starts mapped; a huge stride walks the rows past the VA limit. */
	sim_test_stream_init(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA,
				    DATA_VA, 2, 8, 8, UINT64_MAX - DATA_VA);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(c.error_offset, offset);
	assert_int_equal(c.fault_addr, 1ull << NPU_VA_BITS);
	/* Nothing was written before the fault was detected. */
	assert_int_equal(f->host.mem[f->data], 0);
}

static void sram_operands_outside_sram_fail_bounds(void **state)
{
	struct fixture *f = *state;
	uint32_t offset;

	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM,
				    NPU_SRAM_SIZE - 10, 0, 1, 64, 0);
	expect(f, NPU_JOB_ERR_SRAM_BOUNDS, offset);
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 1ull << 40,
				    NPU_SPACE_VA, DATA_VA, 1, 8, 0, 0);
	expect(f, NPU_JOB_ERR_SRAM_BOUNDS, offset);
	/* Each row fits; the last row does not. */
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA,
				    NPU_SPACE_SRAM, 0, 3, 64, 64,
				    NPU_SRAM_SIZE / 2);
	expect(f, NPU_JOB_ERR_SRAM_BOUNDS, offset);
	/* Exactly up to the end is fine. */
	sim_test_stream_init(&f->stream);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, NPU_SRAM_SIZE - 64, 0,
			   1, 64, 0);
	expect(f, NPU_JOB_OK, 0);
}

static void overlapping_sram_copy_is_bad_param(void **state)
{
	struct fixture *f = *state;
	uint32_t offset;

	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0,
				    NPU_SPACE_SRAM, 32, 1, 64, 0, 0);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_SRAM, 64,
			   1, 64, 0, 0);
	expect(f, NPU_JOB_OK, 0);
}

static void sram_persists_between_jobs_and_clears_on_reset(void **state)
{
	struct fixture *f = *state;
	uint8_t v;

	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 4096, 0x77, 1, 16, 0);
	expect(f, NPU_JOB_OK, 0);
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 4096, NPU_SPACE_VA,
			   DATA_VA, 1, 16, 0, 0);
	expect(f, NPU_JOB_OK, 0);
	sim_test_read(&f->host, f->data + 15, &v, 1);
	assert_int_equal(v, 0x77);

	/* After a reset and a new boot the SRAM reads as zero. */
	sim_test_set_reg(&f->host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(sim_test_boot(&f->host), NPU_STATE_READY);
	sim_test_set_reg64(&f->host, NPU_REG_CTX_TABLE_LO, f->host.ctx_table);
	sim_test_ring_init(&f->host, 0, SIM_TEST_RING_ENTRIES);
	expect(f, NPU_JOB_OK, 0);
	sim_test_read(&f->host, f->data + 15, &v, 1);
	assert_int_equal(v, 0);
}

/* ---- TIMESTAMP ---- */

static void timestamp_writes_the_modeled_device_clock(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	uint64_t ts0, ts1;
	uint32_t offset;

	sim_test_emit_timestamp(&f->stream, 0, DATA_VA);
	/* 1 row of 64 bytes: 64 + 1 cycles + overhead. */
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0, 0, 1, 64, 0);
	sim_test_emit_timestamp(&f->stream, 0, DATA_VA + 8);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data, &ts0, 8);
	sim_test_read(&f->host, f->data + 8, &ts1, 8);
	assert_int_equal(ts0, c.start_ns);
	assert_int_equal(ts1, c.start_ns + OVERHEAD + (OVERHEAD + 65));
	assert_int_equal(c.cycles, 3 * OVERHEAD + 65);

	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_timestamp(&f->stream, 0, DATA_VA + 4);
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
	sim_test_map_new(&f->host, 1, DATA_VA + 0x10000, 4096, NPU_PTE_READ);
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_timestamp(&f->stream, 0, DATA_VA + 0x10000);
	expect(f, NPU_JOB_ERR_MMU_PERM, offset);
}

/* ---- Timing model and hazards ---- */

/* A 256-entry table at SRAM 'table': identity plus one. */
static void emit_lut_table(struct fixture *f, uint32_t table)
{
	int8_t t[256];

	for (int i = 0; i < 256; i++)
		t[i] = (int8_t)(i - 128 + 1);
	sim_test_write(&f->host, f->data + 0x4000, t, sizeof(t));
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA + 0x4000,
			   NPU_SPACE_SRAM, table, 1, 256, 0, 0);
}

static void cycle_count_of_a_known_program_matches_the_formula(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	uint64_t dma_free, compute_free, lut_start;

	/* DMA engine: table copy, 256 bytes = 4 beats. */
	emit_lut_table(f, 0x10000);
	dma_free = OVERHEAD + NPU_CYCLES_DMA_SETUP + 4;
	/* DMA: 4 rows of 100 bytes = 4 * 2 beats. */
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM,
			   0, 4, 100, 100, 100);
	dma_free += OVERHEAD + NPU_CYCLES_DMA_SETUP + 4 * 2;
	/* COMPUTE after SYNC: LUT of 400 -> ceil(400 / 64) = 7 cycles. */
	sim_test_emit_lut(&f->stream, NPU_INSN_SYNC, 0, 1024, 0x10000, 400);
	lut_start = dma_free;
	compute_free = lut_start + OVERHEAD + 7;
	/* DMA on an unrelated region overlaps the LUT: 1000 bytes = 16 beats. */
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 8192, 1, 1, 1000, 0);
	dma_free += OVERHEAD + NPU_CYCLES_DMA_SETUP + 16;
	/* A NOP on the compute engine: overhead only. */
	sim_test_emit_nop(&f->stream, 0);
	compute_free += OVERHEAD;
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.cycles, dma_free > compute_free ? dma_free : compute_free);
	assert_int_equal(c.cycles, 2 * OVERHEAD + 2 * 64 + 4 + 8 + OVERHEAD + 64 + 16);

	/* BARRIER then NOP: the NOP waits for the barrier on the compute engine. */
	sim_test_emit_barrier(&f->stream);
	sim_test_emit_nop(&f->stream, 0);
	c = run(f);
	assert_int_equal(c.cycles, dma_free + 2 * OVERHEAD);
	assert_int_equal(sim_test_reg(&f->host, NPU_REG_PERF_CYCLES_LO),
			 2 * dma_free + 2 * OVERHEAD);
}

static void missing_sync_is_a_hazard_and_sync_fixes_it(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	int8_t in[300], out[300];
	uint32_t offset;

	for (int i = 0; i < 300; i++)
		in[i] = (int8_t)(i % 200 - 100);
	sim_test_write(&f->host, f->data, in, sizeof(in));
	emit_lut_table(f, 0x10000);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM,
			   0, 1, 300, 0, 0);
	/* Read-after-write across engines without SYNC. */
	offset = sim_test_emit_lut(&f->stream, 0, 0, 1024, 0x10000, 300);
	expect(f, NPU_JOB_ERR_HAZARD, offset);

	/* The same program with SYNC on the LUT passes and computes. */
	((struct npu_insn_header *)(f->stream.buf + offset))->flags = NPU_INSN_SYNC;
	sim_test_emit_barrier(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 1024, NPU_SPACE_VA,
			   DATA_VA + 0x1000, 1, 300, 0, 0);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data + 0x1000, out, sizeof(out));
	for (int i = 0; i < 300; i++)
		assert_int_equal(out[i], (int8_t)(in[i] + 1));

	/* Without the BARRIER the DMA reads the LUT's output in flight. */
	sim_test_stream_init(&f->stream);
	emit_lut_table(f, 0x10000);
	sim_test_emit_lut(&f->stream, NPU_INSN_SYNC, 0, 1024, 0x10000, 300);
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 1024 + 299,
				    NPU_SPACE_VA, DATA_VA + 0x1000, 1, 1, 0, 0);
	expect(f, NPU_JOB_ERR_HAZARD, offset);

	/* Write-after-read: DMA overwrites the LUT's input while it runs. */
	sim_test_stream_init(&f->stream);
	emit_lut_table(f, 0x10000);
	sim_test_emit_lut(&f->stream, NPU_INSN_SYNC, 0, 1024, 0x10000, 300);
	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 100, 0, 1, 8, 0);
	expect(f, NPU_JOB_ERR_HAZARD, offset);

	/* Disjoint SRAM on both engines overlaps in time without a hazard. */
	sim_test_stream_init(&f->stream);
	emit_lut_table(f, 0x10000);
	sim_test_emit_lut(&f->stream, NPU_INSN_SYNC, 0, 1024, 0x10000, 300);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 4096, 0, 1, 8, 0);
	expect(f, NPU_JOB_OK, 0);
}

static void full_hazard_window_stalls_instead_of_missing_hazards(void **state)
{
	struct fixture *f = *state;
	struct npu_completion c;
	uint64_t fill_cycles = OVERHEAD + NPU_CYCLES_DMA_SETUP + 1;
	uint32_t offset;

	/* 100 DMA fills of separate 64-byte blocks, compute engine idle. */
	emit_lut_table(f, 0x10000);
	for (int i = 0; i < 100; i++)
		sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 64 * i, 1, 1, 64, 0);
	/*
	 * Only 64 fills fit the window: dropping the oldest 36 (+ the table
	 * copy) stalled the compute engine until they end, so reading block 0
	 * is safe and starts once the dropped ones are done.
	 */
	sim_test_emit_lut(&f->stream, 0, 0, 0x8000, 0x10000, 64);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.cycles, (OVERHEAD + NPU_CYCLES_DMA_SETUP + 4) +
				   100 * fill_cycles);

	/* The last block is still in flight: a hazard. */
	f->stream.len -= sizeof(struct npu_insn_lut);
	offset = sim_test_emit_lut(&f->stream, 0, 64 * 99, 0x8000, 0x10000, 64);
	expect(f, NPU_JOB_ERR_HAZARD, offset);
}

static void matmul_counts_macs_and_checks_sram_shifts(void **state)
{
	struct fixture *f = *state;
	struct npu_insn_matmul mm = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(mm) },
		.a = 0, .b = 4096, .quant = 8192, .output = 12288,
		.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS,
		.m = 2, .k = 40, .n = 33, .a_stride = 40, .out_stride = 33,
		.act_min = -128, .act_max = 127,
	};
	struct npu_completion c;
	uint32_t offset;

	/* mult = 0x01010101, shift = 1: five bytes of 1. */
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 8192, 1, 1, 5, 0);
	offset = sim_test_emit(&f->stream, &mm, sizeof(mm));
	((struct npu_insn_header *)(f->stream.buf + offset))->flags = NPU_INSN_SYNC;
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	assert_int_equal(c.macs, 2 * 40 * 33);
	assert_int_equal(sim_test_reg(&f->host, NPU_REG_PERF_MACS_LO), 2 * 40 * 33);
	/* MATMUL: m * ceil(k / 32) * ceil(n / 32) = 2 * 2 * 2. */
	assert_int_equal(c.cycles, OVERHEAD + NPU_CYCLES_DMA_SETUP + 1 +
				   OVERHEAD + 8);

	/* A shift of 0 in SRAM is found when the instruction runs. */
	sim_test_stream_init(&f->stream);
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 8192, 0, 1, 5, 0);
	offset = sim_test_emit(&f->stream, &mm, sizeof(mm));
	((struct npu_insn_header *)(f->stream.buf + offset))->flags = NPU_INSN_SYNC;
	expect(f, NPU_JOB_ERR_BAD_PARAM, offset);
}

/*
 * The 16x8 mode through the device (ISA 1.2): an int16 MATMUL with an
 * int64 bias computed by hand, its half-rate cycles, and NPU_INSN_I16 on
 * a DMA failing the job at that instruction.
 */
static void int16_matmul_job_gives_the_hand_computed_result(void **state)
{
	struct fixture *f = *state;
	struct npu_insn_matmul mm = {
		.hdr = { .opcode = NPU_OP_MATMUL, .flags = NPU_INSN_SYNC | NPU_INSN_I16,
			 .size = sizeof(mm) },
		.a = 0, .b = 64, .bias = 128, .quant = 192, .output = 256,
		.flags = NPU_QUANT_PER_TENSOR,
		.m = 2, .k = 3, .n = 2, .a_stride = 6, .out_stride = 4,
		.act_min = -128, .act_max = 127,
	};
	const int16_t a[6] = { 1000, -2000, 3000, 32767, -32768, 5 };
	const int8_t b[6] = { 1, 2, 3, -1, 0, 127 };
	const int64_t bias[2] = { 10, -7 };
	const int32_t mult = 1 << 30;	/* with shift 31: round(acc / 2) */
	/*
	 * row 0: 10 + 1000 - 4000 + 9000 = 6010 -> 3005;
	 *        -7 - 1000 + 0 + 381000 = 379993 -> 189997 -> clamp 32767
	 * row 1: 10 + 32767 - 65536 + 15 = -32744 -> -16372;
	 *        -7 - 32767 + 0 + 635 = -32139 -> -16069 (half rounds up)
	 */
	const int16_t want[4] = { 3005, 32767, -16372, -16069 };
	uint8_t img[512] = { 0 };
	int16_t got[4];
	struct npu_completion c;
	uint32_t offset;

	memcpy(img, a, sizeof(a));
	memcpy(img + 64, b, sizeof(b));
	memcpy(img + 128, bias, sizeof(bias));
	memcpy(img + 192, &mult, 4);
	img[196] = 31;
	sim_test_write(&f->host, f->data, img, sizeof(img));
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM, 0,
			   1, sizeof(img), 0, 0);
	sim_test_emit(&f->stream, &mm, sizeof(mm));
	sim_test_emit_copy(&f->stream, NPU_INSN_SYNC, NPU_SPACE_SRAM, 256,
			   NPU_SPACE_VA, DATA_VA + 0x1000, 1, sizeof(got), 0, 0);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data + 0x1000, got, sizeof(got));
	for (int i = 0; i < 4; i++)
		assert_int_equal(got[i], want[i]);
	assert_int_equal(c.macs, 2 * 3 * 2);
	/* DMA 512 B = 8 beats; MATMUL at half rate: 2 * ceil(3 / 16) * ceil(2 / 32);
	 * DMA 8 B = 1 beat. */
	assert_int_equal(c.cycles, OVERHEAD + NPU_CYCLES_DMA_SETUP + 8 +
				   OVERHEAD + 2 + OVERHEAD + NPU_CYCLES_DMA_SETUP + 1);

	/* The flag on a DMA (bytes have no element type) is an encoding error. */
	sim_test_stream_init(&f->stream);
	offset = sim_test_emit_copy(&f->stream, NPU_INSN_I16, NPU_SPACE_VA, DATA_VA,
				    NPU_SPACE_SRAM, 0, 1, 16, 0, 0);
	expect(f, NPU_JOB_ERR_BAD_ENCODING, offset);
}

/*
 * The output LUT through the device (ISA 1.4): an int8 MATMUL whose table
 * (output + 1) is applied by hand, the cycles of the MATMUL without it,
 * and the table a read for hazards: a DMA writing it while the MATMUL
 * runs fails the job, one writing just past it does not.
 */
static void matmul_out_lut_job_maps_outputs_and_reads_its_table(void **state)
{
	struct fixture *f = *state;
	struct npu_insn_matmul mm = {
		.hdr = { .opcode = NPU_OP_MATMUL, .flags = NPU_INSN_SYNC, .size = sizeof(mm) },
		.a = 0, .b = 64, .quant = 192, .output = 256, .lut = 0x10000,
		.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS | NPU_CONV_OUT_LUT,
		.m = 2, .k = 3, .n = 2, .a_stride = 3, .out_stride = 2,
		.act_min = -128, .act_max = 126,
	};
	const int8_t a[6] = { 10, -20, 30, 127, -128, 5 };
	const int8_t b[6] = { 1, 2, 3, -1, 0, 127 };
	const int32_t mult = 1 << 30;	/* with shift 31: round(acc / 2) */
	/*
	 * row 0: 10 - 40 + 90 = 60 -> 30;  -10 + 0 + 3810 = 3800 -> clamp 126
	 * row 1: 127 - 256 + 15 = -114 -> -57;  -127 + 0 + 635 = 508 -> 126
	 * then the table: + 1
	 */
	const int8_t want[4] = { 31, 127, -56, 127 };
	uint8_t img[512] = { 0 };
	int8_t got[4];
	struct npu_completion c;
	uint32_t offset;

	memcpy(img, a, sizeof(a));
	memcpy(img + 64, b, sizeof(b));
	memcpy(img + 192, &mult, 4);
	img[196] = 31;
	sim_test_write(&f->host, f->data, img, sizeof(img));
	emit_lut_table(f, 0x10000);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM, 0,
			   1, sizeof(img), 0, 0);
	sim_test_emit(&f->stream, &mm, sizeof(mm));
	sim_test_emit_copy(&f->stream, NPU_INSN_SYNC, NPU_SPACE_SRAM, 256,
			   NPU_SPACE_VA, DATA_VA + 0x1000, 1, sizeof(got), 0, 0);
	c = run(f);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(&f->host, f->data + 0x1000, got, sizeof(got));
	for (int i = 0; i < 4; i++)
		assert_int_equal(got[i], want[i]);
	/* table 4 beats and image 8 beats on the DMA engine; the MATMUL
	 * 2 * ceil(3 / 32) * ceil(2 / 32) = 2 cycles, the LUT none; 1 beat out */
	assert_int_equal(c.cycles, 2 * (OVERHEAD + NPU_CYCLES_DMA_SETUP) + 4 + 8 +
				   OVERHEAD + 2 + OVERHEAD + NPU_CYCLES_DMA_SETUP + 1);

	/* DMA into the table while the MATMUL reads it (no SYNC): a hazard */
	sim_test_stream_init(&f->stream);
	emit_lut_table(f, 0x10000);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM, 0,
			   1, sizeof(img), 0, 0);
	sim_test_emit(&f->stream, &mm, sizeof(mm));
	offset = sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0x10000 + 255, 0,
				    1, 1, 0);
	expect(f, NPU_JOB_ERR_HAZARD, offset);
	/* the byte after the table is not the MATMUL's */
	sim_test_stream_init(&f->stream);
	emit_lut_table(f, 0x10000);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_SRAM, 0,
			   1, sizeof(img), 0, 0);
	sim_test_emit(&f->stream, &mm, sizeof(mm));
	sim_test_emit_fill(&f->stream, 0, NPU_SPACE_SRAM, 0x10000 + 256, 0, 1, 1, 0);
	expect(f, NPU_JOB_OK, 0);

	/* a table past the end of SRAM fails the job at the MATMUL */
	sim_test_stream_init(&f->stream);
	mm.lut = NPU_SRAM_SIZE - 128;
	offset = sim_test_emit(&f->stream, &mm, sizeof(mm));
	expect(f, NPU_JOB_ERR_SRAM_BOUNDS, offset);
}

/*
 * Issue 29 D-a: a stream that rewrites itself. An early DMA_COPY puts a
 * DMA_FILL over the DMA_COPY at stream offset 4088, whose 56 bytes cross
 * the end of the 4 KiB chunk the device fetched first; the device re-reads
 * that instruction and must check and run what it re-read, as a whole:
 * never the new opcode with the old instruction's header checks and size.
 * Returns the completion; the fill's target is DATA_VA + 0x8000.
 */
static struct npu_completion run_self_rewriting_stream(struct fixture *f,
						       const struct npu_insn_dma_fill *fill)
{
	struct sim_test_host *host = &f->host;
	struct npu_job_desc desc;
	struct npu_completion c;
	uint64_t addr;
	uint32_t index, offset;

	sim_test_write(host, f->data, fill, sizeof(*fill));
	sim_test_stream_init(&f->stream);
	sim_test_emit_copy(&f->stream, 0, NPU_SPACE_VA, DATA_VA, NPU_SPACE_VA,
			   f->next_cmd_va + 4088, 1, sizeof(*fill), 0, 0);
	while (f->stream.len < 4088)
		sim_test_emit_nop(&f->stream, 0);
	/* Its strides (unused with one row) read as two NOPs after a fill. */
	offset = sim_test_emit_copy(&f->stream, 0, NPU_SPACE_SRAM, 0,
				    NPU_SPACE_SRAM, 64, 1, 8, 8u << 16, 8u << 16);
	assert_int_equal(offset, 4088);
	addr = sim_test_map_new(host, 1, f->next_cmd_va, 2 * 4096,
				NPU_PTE_READ | NPU_PTE_WRITE);
	sim_test_write(host, addr, f->stream.buf, f->stream.len);
	desc = sim_test_desc(host, 0, 1, f->next_cmd_va, f->stream.len, 7);
	f->next_cmd_va += 0x100000;
	index = sim_test_push(host, 0, &desc, true);
	npu_sim_run_pending(host->sim);
	assert_true(sim_test_completion(host, 0, index, &c));
	return c;
}

static bool fill_target_untouched(struct fixture *f)
{
	uint8_t out[4096];

	sim_test_read(&f->host, f->data + 0x8000, out, sizeof(out));
	for (size_t i = 0; i < sizeof(out); i++)
		if (out[i])
			return false;
	return true;
}

static void rewritten_instruction_runs_only_as_checked(void **state)
{
	struct fixture *f = *state;
	struct sim_test_host *host = &f->host;
	struct npu_fw_config config;
	struct npu_insn_dma_fill fill = {
		.hdr = { .opcode = NPU_OP_DMA_FILL, .size = sizeof(fill) },
		.dst_space = NPU_SPACE_VA, .value = 0x5a, .rows = 1,
		.dst = DATA_VA + 0x8000, .row_bytes = 4096,
	};
	struct npu_completion c;
	uint8_t out[4096];

	/* A valid replacement runs: all of it, as checked, then the NOP. */
	c = run_self_rewriting_stream(f, &fill);
	assert_int_equal(c.error_offset, 0);
	assert_int_equal(c.status, NPU_JOB_OK);
	sim_test_read(host, f->data + 0x8000, out, sizeof(out));
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal(out[i], 0x5a);
	memset(out, 0, sizeof(out));
	sim_test_write(host, f->data + 0x8000, out, sizeof(out));

	/* Header rules apply to the re-read bytes: flags and reserved. */
	fill.hdr.flags = 0xfc;
	c = run_self_rewriting_stream(f, &fill);
	assert_int_equal(c.status, NPU_JOB_ERR_BAD_ENCODING);
	assert_int_equal(c.error_offset, 4088);
	assert_true(fill_target_untouched(f));
	fill.hdr.flags = 0;
	fill.hdr.reserved = 0xdeadbeef;
	c = run_self_rewriting_stream(f, &fill);
	assert_int_equal(c.status, NPU_JOB_ERR_BAD_ENCODING);
	assert_int_equal(c.error_offset, 4088);
	assert_true(fill_target_untouched(f));
	fill.hdr.reserved = 0;

	/* So does the firmware's op mask: a disabled DMA_FILL never runs. */
	sim_test_host_fini(host);
	assert_int_equal(sim_test_host_init(host, MEM_SIZE), 0);
	npu_fw_default_config(&config);
	config.op_mask &= ~NPU_OP_BIT(NPU_OP_DMA_FILL);
	assert_int_equal(sim_test_boot_config(host, &config), NPU_STATE_READY);
	sim_test_ctx_table_init(host);
	sim_test_ring_init(host, 0, 8);
	sim_test_ctx_init(host, 1);
	f->data = sim_test_map_new(host, 1, DATA_VA, 0x10000,
				   NPU_PTE_READ | NPU_PTE_WRITE);
	c = run_self_rewriting_stream(f, &fill);
	assert_int_equal(c.status, NPU_JOB_ERR_BAD_OPCODE);
	assert_int_equal(c.error_offset, 4088);
	assert_true(fill_target_untouched(f));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
	const struct CMUnitTest tests[] = {
		T(bad_stream_headers_fail_at_offset_0),
		T(truncated_instruction_reports_its_offset),
		T(unknown_opcodes_fail_bad_opcode),
		T(opcode_disabled_by_firmware_fails_bad_opcode),
		T(wrong_size_field_fails_bad_encoding),
		T(reserved_bits_and_unknown_flags_fail_bad_encoding),
		T(fault_on_a_later_stream_page_names_that_instruction),
		T(stream_range_crossing_the_va_limit_is_unmapped),
		T(dma_2d_copy_moves_strided_rows),
		T(dma_codec_decodes_and_charges_compressed_bytes),
		T(sparse_matmul_skips_zero_tiles_and_refuses_bad_positions),
		T(dma_row_arithmetic_overflow_is_bad_param),
		T(dma_zero_dims_and_bad_spaces_are_bad_param),
		T(dma_va_ranges_that_wrap_are_unmapped),
		T(sram_operands_outside_sram_fail_bounds),
		T(overlapping_sram_copy_is_bad_param),
		T(sram_persists_between_jobs_and_clears_on_reset),
		T(timestamp_writes_the_modeled_device_clock),
		T(cycle_count_of_a_known_program_matches_the_formula),
		T(missing_sync_is_a_hazard_and_sync_fixes_it),
		T(full_hazard_window_stalls_instead_of_missing_hazards),
		T(matmul_counts_macs_and_checks_sram_shifts),
		T(int16_matmul_job_gives_the_hand_computed_result),
		T(matmul_out_lut_job_maps_outputs_and_reads_its_table),
		T(rewritten_instruction_runs_only_as_checked),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
