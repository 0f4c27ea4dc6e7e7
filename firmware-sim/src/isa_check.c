// SPDX-License-Identifier: MIT
/*
 * isa_check.c - the one ISA validator (npu_isa.h): instruction headers,
 * DMA_COPY, DMA_FILL and TIMESTAMP, and the dispatch to the compute ops'
 * checks (ops/npu_ops_check.c); and npu_insn_shift_sram(), which knows the
 * same SRAM operands. The executor (exec.c) and the host's
 * command-stream builder call the same functions; only the VA side of a
 * DMA goes through a hook, because translating it needs the device's MMU.
 */
#include <inttypes.h>
#include <string.h>

#include "ops/npu_ops_internal.h"

#define ENC	NPU_JOB_ERR_BAD_ENCODING
#define PARAM	NPU_JOB_ERR_BAD_PARAM

static const struct {
	uint8_t opcode;
	uint8_t dma;
	uint16_t size;
	const char *name;
} insn_table[] = {
	{ NPU_OP_NOP, 0, sizeof(struct npu_insn_header), "nop" },
	{ NPU_OP_DMA_COPY, 1, sizeof(struct npu_insn_dma_copy), "dma_copy" },
	{ NPU_OP_DMA_FILL, 1, sizeof(struct npu_insn_dma_fill), "dma_fill" },
	{ NPU_OP_CONV2D, 0, sizeof(struct npu_insn_conv2d), "conv2d" },
	{ NPU_OP_MATMUL, 0, sizeof(struct npu_insn_matmul), "matmul" },
	{ NPU_OP_POOL, 0, sizeof(struct npu_insn_pool), "pool" },
	{ NPU_OP_ELTWISE, 0, sizeof(struct npu_insn_eltwise), "eltwise" },
	{ NPU_OP_LUT, 0, sizeof(struct npu_insn_lut), "lut" },
	{ NPU_OP_RESIZE, 0, sizeof(struct npu_insn_resize), "resize" },
	{ NPU_OP_SOFTMAX, 0, sizeof(struct npu_insn_softmax), "softmax" },
	{ NPU_OP_LAYERNORM, 0, sizeof(struct npu_insn_layernorm), "layernorm" },
	{ NPU_OP_REDUCE, 0, sizeof(struct npu_insn_reduce), "reduce" },
	{ NPU_OP_TIMESTAMP, 1, sizeof(struct npu_insn_timestamp), "timestamp" },
	{ NPU_OP_BARRIER, 0, sizeof(struct npu_insn_barrier), "barrier" },
};

#define NUM_INSNS (sizeof(insn_table) / sizeof(insn_table[0]))

static int insn_index(uint8_t opcode)
{
	for (unsigned int i = 0; i < NUM_INSNS; i++)
		if (insn_table[i].opcode == opcode)
			return (int)i;
	return -1;
}

uint16_t npu_insn_size(uint8_t opcode)
{
	int i = insn_index(opcode);

	return i < 0 ? 0 : insn_table[i].size;
}

const char *npu_insn_name(uint8_t opcode)
{
	int i = insn_index(opcode);

	return i < 0 ? "unknown" : insn_table[i].name;
}

int npu_insn_is_dma(uint8_t opcode)
{
	int i = insn_index(opcode);

	return i >= 0 && insn_table[i].dma;
}

int npu_insn_i16_ok(uint8_t opcode)
{
	switch (opcode) {
	case NPU_OP_CONV2D:
	case NPU_OP_MATMUL:
	case NPU_OP_POOL:
	case NPU_OP_ELTWISE:
	case NPU_OP_LUT:
	case NPU_OP_RESIZE:
		return 1;
	}
	return 0;
}

uint32_t npu_insn_check_header(const void *bytes, size_t avail,
			       struct npu_isa_check *c)
{
	uint32_t op_mask = c && c->op_mask ? c->op_mask : NPU_OP_MASK_ALL;
	struct npu_insn_header h;
	uint16_t size;

	if (avail < sizeof(h))
		return npu_isa_fail(c, NPU_JOB_ERR_TRUNCATED, "header",
				    "truncated: the header needs %zu bytes, %zu left",
				    sizeof(h), avail);
	memcpy(&h, bytes, sizeof(h));
	size = npu_insn_size(h.opcode);
	if (!size)
		return npu_isa_fail(c, NPU_JOB_ERR_BAD_OPCODE, "header.opcode",
				    "unknown opcode 0x%02x", h.opcode);
	/* Only now is the opcode known to be small enough for NPU_OP_BIT. */
	if (!(op_mask & NPU_OP_BIT(h.opcode)))
		return npu_isa_fail(c, NPU_JOB_ERR_BAD_OPCODE, "header.opcode",
				    "the device's op mask 0x%x does not enable %s",
				    op_mask, npu_insn_name(h.opcode));
	if (h.size != size)
		return npu_isa_fail(c, ENC, "header.size",
				    "size field %u, a %s is %u bytes", h.size,
				    npu_insn_name(h.opcode), size);
	if (avail < size)
		return npu_isa_fail(c, NPU_JOB_ERR_TRUNCATED, "header.size",
				    "truncated: needs %u bytes, %zu left", size, avail);
	if ((h.flags & NPU_INSN_I16) && !npu_insn_i16_ok(h.opcode))
		return npu_isa_fail(c, ENC, "header.flags",
				    "header flag I16 (int16 activations) on %s, which "
				    "has no int16 mode", npu_insn_name(h.opcode));
	if (h.flags & ~(NPU_INSN_SYNC | NPU_INSN_I16))
		return npu_isa_fail(c, ENC, "header.flags",
				    "header flags 0x%x has unknown bits", h.flags);
	if (h.reserved)
		return npu_isa_fail(c, ENC, "header.reserved",
				    "reserved header field is not 0");
	return NPU_JOB_OK;
}

/* Bytes from the first row's start to the last row's end, overflow-checked. */
static int dma_extent(uint32_t rows, uint32_t row_bytes, uint64_t stride,
		      uint64_t *extent)
{
	uint64_t span = (uint64_t)(rows - 1);

	if (stride && span > UINT64_MAX / stride)
		return 0;
	span *= stride;
	if (span > UINT64_MAX - row_bytes)
		return 0;
	*extent = span + row_bytes;
	return 1;
}

/* The VA side: the hook (the device's MMU), else the VA-space limit. */
static uint32_t va_range(struct npu_isa_check *c, const char *field,
			 uint64_t va, uint64_t len, uint32_t access)
{
	const uint64_t limit = 1ull << NPU_VA_BITS;
	uint32_t st;

	if (c && c->va_check) {
		st = c->va_check(c->va_ctx, va, len, access);
		if (st)
			return npu_isa_fail(c, st, field,
					    "%s [0x%" PRIx64 ", +%" PRIu64 ") is not %s in the context",
					    field, va, len,
					    access == NPU_ACCESS_WRITE ? "writable" : "readable");
		return NPU_JOB_OK;
	}
	if (va >= limit || len > limit - va)
		return npu_isa_fail(c, NPU_JOB_ERR_MMU_UNMAPPED, field,
				    "%s range 0x%" PRIx64 " + %" PRIu64 " bytes passes the %d-bit VA space",
				    field, va, len, NPU_VA_BITS);
	return NPU_JOB_OK;
}

static uint32_t dma_operand(struct npu_isa_check *c, const char *field,
			    uint8_t space, uint64_t addr, uint64_t extent,
			    uint32_t access, struct npu_sram_range *range)
{
	uint32_t sram = npu_isa_sram_size(c);

	if (space == NPU_SPACE_VA)
		return va_range(c, field, addr, extent, access);
	if (addr > sram || extent > sram - addr)
		return npu_isa_fail(c, NPU_JOB_ERR_SRAM_BOUNDS, field,
				    "%s [%" PRIu64 ", %" PRIu64 ") exceeds SRAM size %u",
				    field, addr,
				    extent > UINT64_MAX - addr ? UINT64_MAX : addr + extent,
				    sram);
	range->begin = (uint32_t)addr;
	range->end = (uint32_t)(addr + extent);
	return NPU_JOB_OK;
}

static uint64_t dma_cycles(uint32_t rows, uint32_t row_bytes)
{
	return NPU_CYCLES_DMA_SETUP +
	       (uint64_t)rows * ((row_bytes + NPU_DMA_BYTES_PER_CYCLE - 1) /
				 NPU_DMA_BYTES_PER_CYCLE);
}

/*
 * DMA_COPY with the weight codec (ISA 1.6): a stream of src_bytes in VA
 * decoded into row_bytes at SRAM dst. DRAM moves the compressed bytes and
 * the decoder writes 256 bytes a cycle, so the slower side sets the pace.
 * The stream itself is data, checked while it is decoded.
 */
static uint32_t check_dma_decode(const struct npu_insn_dma_copy *in,
				 struct npu_isa_check *c, struct npu_op_footprint *f)
{
	struct npu_sram_range dst = { 0, 0 };
	uint64_t in_cyc, out_cyc;
	uint32_t st;

	if (in->src_space != NPU_SPACE_VA || in->dst_space != NPU_SPACE_SRAM)
		return npu_isa_fail(c, PARAM, "src_space",
				    "the weight codec reads VA (src_space 0) into SRAM "
				    "(dst_space 1), not %u -> %u", in->src_space, in->dst_space);
	if (in->rows != 1)
		return npu_isa_fail(c, PARAM, "rows", "rows is %u, the weight codec "
				    "decodes one row", in->rows);
	if (in->src_stride || in->dst_stride)
		return npu_isa_fail(c, PARAM, "src_stride",
				    "strides must be 0 with the weight codec");
	if (!in->row_bytes)
		return npu_isa_fail(c, PARAM, "row_bytes", "row_bytes is 0");
	if (!in->src_bytes)
		return npu_isa_fail(c, PARAM, "src_bytes", "src_bytes is 0");
	if (in->src_bytes > npu_wcodec_max_bytes(in->row_bytes))
		return npu_isa_fail(c, PARAM, "src_bytes",
				    "src_bytes %u exceeds %" PRIu64 ", the largest stream "
				    "of %u bytes", in->src_bytes,
				    npu_wcodec_max_bytes(in->row_bytes), in->row_bytes);
	st = dma_operand(c, "src", NPU_SPACE_VA, in->src, in->src_bytes,
			 NPU_ACCESS_READ, &dst);
	if (st)
		return st;
	st = dma_operand(c, "dst", NPU_SPACE_SRAM, in->dst, in->row_bytes,
			 NPU_ACCESS_WRITE, &dst);
	if (st)
		return st;
	f->writes[f->num_writes++] = dst;
	in_cyc = (in->src_bytes + NPU_DMA_BYTES_PER_CYCLE - 1) / NPU_DMA_BYTES_PER_CYCLE;
	out_cyc = ((uint64_t)in->row_bytes + NPU_WCODEC_BYTES_PER_CYCLE - 1) /
		  NPU_WCODEC_BYTES_PER_CYCLE;
	f->cycles = NPU_CYCLES_DMA_SETUP + (in_cyc > out_cyc ? in_cyc : out_cyc);
	return NPU_JOB_OK;
}

static uint32_t check_dma_copy(const struct npu_insn_dma_copy *in,
			       struct npu_isa_check *c, struct npu_op_footprint *f)
{
	struct npu_sram_range src = { 0, 0 }, dst = { 0, 0 };
	uint64_t src_extent, dst_extent;
	uint32_t st;

	if (in->codec > NPU_DMA_CODEC_BLOCK)
		return npu_isa_fail(c, ENC, "codec", "codec %u is not 0 (none) or 1 (block)",
				    in->codec);
	if (!in->codec && in->src_bytes)
		return npu_isa_fail(c, ENC, "src_bytes",
				    "src_bytes is %u without a codec (must be 0)", in->src_bytes);
	if (in->codec)
		return check_dma_decode(in, c, f);
	if (in->src_space > NPU_SPACE_SRAM)
		return npu_isa_fail(c, PARAM, "src_space",
				    "src_space %u is not 0 (va) or 1 (sram)", in->src_space);
	if (in->dst_space > NPU_SPACE_SRAM)
		return npu_isa_fail(c, PARAM, "dst_space",
				    "dst_space %u is not 0 (va) or 1 (sram)", in->dst_space);
	if (!in->rows)
		return npu_isa_fail(c, PARAM, "rows", "rows is 0");
	if (!in->row_bytes)
		return npu_isa_fail(c, PARAM, "row_bytes", "row_bytes is 0");
	if (!dma_extent(in->rows, in->row_bytes, in->src_stride, &src_extent))
		return npu_isa_fail(c, PARAM, "src_stride",
				    "src range %u rows x %" PRIu64 " bytes overflows 64 bits",
				    in->rows, in->src_stride);
	if (!dma_extent(in->rows, in->row_bytes, in->dst_stride, &dst_extent))
		return npu_isa_fail(c, PARAM, "dst_stride",
				    "dst range %u rows x %" PRIu64 " bytes overflows 64 bits",
				    in->rows, in->dst_stride);
	st = dma_operand(c, "src", in->src_space, in->src, src_extent,
			 NPU_ACCESS_READ, &src);
	if (st)
		return st;
	st = dma_operand(c, "dst", in->dst_space, in->dst, dst_extent,
			 NPU_ACCESS_WRITE, &dst);
	if (st)
		return st;
	if (in->src_space == NPU_SPACE_SRAM && in->dst_space == NPU_SPACE_SRAM &&
	    npu_ranges_overlap(src, dst))
		return npu_isa_fail(c, PARAM, "dst",
				    "SRAM source [%u, %u) overlaps destination [%u, %u)",
				    src.begin, src.end, dst.begin, dst.end);
	if (in->src_space == NPU_SPACE_SRAM)
		f->reads[f->num_reads++] = src;
	if (in->dst_space == NPU_SPACE_SRAM)
		f->writes[f->num_writes++] = dst;
	f->cycles = dma_cycles(in->rows, in->row_bytes);
	return NPU_JOB_OK;
}

static uint32_t check_dma_fill(const struct npu_insn_dma_fill *in,
			       struct npu_isa_check *c, struct npu_op_footprint *f)
{
	struct npu_sram_range dst = { 0, 0 };
	uint64_t extent;
	uint32_t st;

	if (in->reserved0)
		return npu_isa_fail(c, ENC, "reserved0", "reserved field reserved0 is not 0");
	if (in->reserved1)
		return npu_isa_fail(c, ENC, "reserved1", "reserved field reserved1 is not 0");
	if (in->dst_space > NPU_SPACE_SRAM)
		return npu_isa_fail(c, PARAM, "dst_space",
				    "dst_space %u is not 0 (va) or 1 (sram)", in->dst_space);
	if (!in->rows)
		return npu_isa_fail(c, PARAM, "rows", "rows is 0");
	if (!in->row_bytes)
		return npu_isa_fail(c, PARAM, "row_bytes", "row_bytes is 0");
	if (!dma_extent(in->rows, in->row_bytes, in->dst_stride, &extent))
		return npu_isa_fail(c, PARAM, "dst_stride",
				    "dst range %u rows x %" PRIu64 " bytes overflows 64 bits",
				    in->rows, in->dst_stride);
	st = dma_operand(c, "dst", in->dst_space, in->dst, extent,
			 NPU_ACCESS_WRITE, &dst);
	if (st)
		return st;
	if (in->dst_space == NPU_SPACE_SRAM)
		f->writes[f->num_writes++] = dst;
	f->cycles = dma_cycles(in->rows, in->row_bytes);
	return NPU_JOB_OK;
}

/* Copy out first: a stream may hold instructions at any byte offset. */
#define CHECK_OP(type, fn) do {						\
		struct type i_;						\
									\
		memcpy(&i_, insn, sizeof(i_));				\
		return fn(&i_, fp, c);					\
	} while (0)

uint32_t npu_insn_check(const void *insn, struct npu_isa_check *c,
			struct npu_op_footprint *fp)
{
	struct npu_op_footprint scratch;
	struct npu_insn_header h;

	if (!fp)
		fp = &scratch;
	memset(fp, 0, sizeof(*fp));
	memcpy(&h, insn, sizeof(h));
	switch (h.opcode) {
	case NPU_OP_NOP:
	case NPU_OP_BARRIER:
		return NPU_JOB_OK;
	case NPU_OP_DMA_COPY: {
		struct npu_insn_dma_copy i;

		memcpy(&i, insn, sizeof(i));
		return check_dma_copy(&i, c, fp);
	}
	case NPU_OP_DMA_FILL: {
		struct npu_insn_dma_fill i;

		memcpy(&i, insn, sizeof(i));
		return check_dma_fill(&i, c, fp);
	}
	case NPU_OP_TIMESTAMP: {
		struct npu_insn_timestamp i;

		memcpy(&i, insn, sizeof(i));
		if (i.va & 7)
			return npu_isa_fail(c, PARAM, "va",
					    "va 0x%" PRIx64 " is not 8-byte aligned", i.va);
		return va_range(c, "va", i.va, 8, NPU_ACCESS_WRITE);
	}
	case NPU_OP_CONV2D:
		CHECK_OP(npu_insn_conv2d, npu_op_conv2d_validate);
	case NPU_OP_MATMUL:
		CHECK_OP(npu_insn_matmul, npu_op_matmul_validate);
	case NPU_OP_POOL:
		CHECK_OP(npu_insn_pool, npu_op_pool_validate);
	case NPU_OP_ELTWISE:
		CHECK_OP(npu_insn_eltwise, npu_op_eltwise_validate);
	case NPU_OP_LUT:
		CHECK_OP(npu_insn_lut, npu_op_lut_validate);
	case NPU_OP_RESIZE:
		CHECK_OP(npu_insn_resize, npu_op_resize_validate);
	case NPU_OP_SOFTMAX:
		CHECK_OP(npu_insn_softmax, npu_op_softmax_validate);
	case NPU_OP_LAYERNORM:
		CHECK_OP(npu_insn_layernorm, npu_op_layernorm_validate);
	case NPU_OP_REDUCE:
		CHECK_OP(npu_insn_reduce, npu_op_reduce_validate);
	default:
		return npu_isa_fail(c, NPU_JOB_ERR_BAD_OPCODE, "header.opcode",
				    "unknown opcode 0x%02x", h.opcode);
	}
}

/* ---- Relocation ------------------------------------------------------------ */

static void shift32(uint8_t *p, size_t off, int64_t delta)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	v = (uint32_t)((int64_t)v + delta);
	memcpy(p + off, &v, 4);
}

static void shift64(uint8_t *p, size_t off, int64_t delta)
{
	uint64_t v;

	memcpy(&v, p + off, 8);
	v = (uint64_t)((int64_t)v + delta);
	memcpy(p + off, &v, 8);
}

void npu_insn_shift_sram(void *insn, int64_t delta)
{
	uint8_t *p = insn;
	struct npu_insn_header h;
	uint32_t flags;

#define R32(type, field) shift32(p, offsetof(struct type, field), delta)
	memcpy(&h, p, sizeof(h));
	switch (h.opcode) {
	case NPU_OP_DMA_COPY:
		if (p[offsetof(struct npu_insn_dma_copy, src_space)] == NPU_SPACE_SRAM)
			shift64(p, offsetof(struct npu_insn_dma_copy, src), delta);
		if (p[offsetof(struct npu_insn_dma_copy, dst_space)] == NPU_SPACE_SRAM)
			shift64(p, offsetof(struct npu_insn_dma_copy, dst), delta);
		break;
	case NPU_OP_DMA_FILL:
		if (p[offsetof(struct npu_insn_dma_fill, dst_space)] == NPU_SPACE_SRAM)
			shift64(p, offsetof(struct npu_insn_dma_fill, dst), delta);
		break;
	case NPU_OP_CONV2D:
		memcpy(&flags, p + offsetof(struct npu_insn_conv2d, flags), 4);
		R32(npu_insn_conv2d, input);
		R32(npu_insn_conv2d, weight);
		R32(npu_insn_conv2d, quant);
		R32(npu_insn_conv2d, output);
		if (!(flags & NPU_CONV_NO_BIAS))
			R32(npu_insn_conv2d, bias);
		if (flags & NPU_CONV_OUT_LUT)
			R32(npu_insn_conv2d, lut);
		break;
	case NPU_OP_MATMUL:
		memcpy(&flags, p + offsetof(struct npu_insn_matmul, flags), 4);
		R32(npu_insn_matmul, a);
		R32(npu_insn_matmul, b);
		R32(npu_insn_matmul, quant);
		R32(npu_insn_matmul, output);
		if (!(flags & NPU_CONV_NO_BIAS))
			R32(npu_insn_matmul, bias);
		if (flags & NPU_CONV_OUT_LUT)
			R32(npu_insn_matmul, lut);
		break;
	case NPU_OP_POOL:
		R32(npu_insn_pool, input);
		R32(npu_insn_pool, output);
		break;
	case NPU_OP_ELTWISE:
		R32(npu_insn_eltwise, a);
		R32(npu_insn_eltwise, b);
		R32(npu_insn_eltwise, output);
		break;
	case NPU_OP_LUT:
		R32(npu_insn_lut, input);
		R32(npu_insn_lut, output);
		R32(npu_insn_lut, table);
		break;
	case NPU_OP_RESIZE:
		R32(npu_insn_resize, input);
		R32(npu_insn_resize, output);
		break;
	case NPU_OP_SOFTMAX:
		R32(npu_insn_softmax, input);
		R32(npu_insn_softmax, output);
		R32(npu_insn_softmax, table);
		break;
	case NPU_OP_LAYERNORM:
		R32(npu_insn_layernorm, input);
		R32(npu_insn_layernorm, output);
		R32(npu_insn_layernorm, params);
		break;
	case NPU_OP_REDUCE:
		R32(npu_insn_reduce, input);
		R32(npu_insn_reduce, output);
		break;
	default:	/* NOP, BARRIER, TIMESTAMP: no SRAM operand */
		break;
	}
#undef R32
}
