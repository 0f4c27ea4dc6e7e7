// SPDX-License-Identifier: MIT
/*
 * cmdbuf.c - the command-stream builder and the host-side validator.
 *
 * Every instruction is checked before it is appended by the device's own
 * validator (firmware-sim's npu_isa.h: the one description of the rules
 * that need no device state: sizes, flags, reserved fields, enums,
 * dimensions and their consistency, zero-point ranges, SRAM bounds, the
 * VA-space limit), which names the failing field. What needs the device
 * (MMU translations, hazards, shift values stored in SRAM) is left to it.
 * The same checker validates binary streams read from files.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "npu_isa.h"

struct npu_cmdbuf {
	uint8_t *data;
	size_t size, cap;
	unsigned int count;
	uint32_t sram_size;
	uint32_t op_mask;
	struct npu_error err;
};

/*
 * The device's own validator (firmware-sim's npu_isa.h) decides; this
 * only words its verdict: "<op> #<index>: <field and reason>".
 */
npu_status npu_insn_validate(const void *insn, size_t avail, uint32_t sram_size,
			     uint32_t op_mask, unsigned int index,
			     size_t *insn_size, char *msg, size_t msg_size)
{
	struct npu_isa_check c = { .sram_size = sram_size, .op_mask = op_mask };
	struct npu_insn_header h;
	const char *op = "instruction";
	uint32_t st;

	st = npu_insn_check_header(insn, avail, &c);
	if (avail >= sizeof(h)) {
		memcpy(&h, insn, sizeof(h));
		if (npu_insn_size(h.opcode))
			op = npu_insn_name(h.opcode);
	}
	if (st == NPU_JOB_OK) {
		*insn_size = h.size;
		st = npu_insn_check(insn, &c, NULL);
	}
	if (st == NPU_JOB_OK)
		return NPU_OK;
	if (msg && msg_size)
		snprintf(msg, msg_size, "%s #%u: %s", op, index, c.reason);
	return NPU_ERR_INVALID_ARG;
}

npu_status npu_cs_validate(const void *data, size_t size, uint32_t sram_size,
			   uint32_t op_mask, char *msg, size_t msg_size)
{
	const uint8_t *p = data;
	struct npu_cs_header h;
	size_t off, isz = 0;
	unsigned int idx = 0;
	npu_status st;

	if (!sram_size)
		sram_size = NPU_SRAM_SIZE;
	if (!op_mask)
		op_mask = NPU_OP_MASK_ALL;
	if (msg && msg_size)
		msg[0] = '\0';
	if (!data || size < sizeof(h)) {
		if (msg)
			snprintf(msg, msg_size, "stream of %zu bytes is shorter than its %zu-byte header",
				 size, sizeof(h));
		return NPU_ERR_INVALID_ARG;
	}
	memcpy(&h, p, sizeof(h));
	if (h.magic != NPU_CS_MAGIC) {
		if (msg)
			snprintf(msg, msg_size, "bad magic 0x%08x (a command stream starts with 0x%08x, \"NPCS\")",
				 h.magic, NPU_CS_MAGIC);
		return NPU_ERR_INVALID_ARG;
	}
	if (h.isa_major != NPU_ISA_VERSION_MAJOR || h.isa_minor > NPU_ISA_VERSION_MINOR) {
		if (msg)
			snprintf(msg, msg_size, "ISA version %u.%u, the device runs %u.%u",
				 h.isa_major, h.isa_minor, NPU_ISA_VERSION_MAJOR,
				 NPU_ISA_VERSION_MINOR);
		return NPU_ERR_INVALID_ARG;
	}
	if (h.reserved[0] || h.reserved[1]) {
		if (msg)
			snprintf(msg, msg_size, "stream header reserved fields are not 0");
		return NPU_ERR_INVALID_ARG;
	}
	if (size % NPU_CS_ALIGN || size > NPU_CS_MAX_SIZE) {
		if (msg)
			snprintf(msg, msg_size, "stream size %zu is not a multiple of %d up to %u",
				 size, NPU_CS_ALIGN, NPU_CS_MAX_SIZE);
		return NPU_ERR_INVALID_ARG;
	}
	for (off = sizeof(h); off < size; off += isz, idx++) {
		char m[NPU_ERROR_MSG_MAX];

		st = npu_insn_validate(p + off, size - off, sram_size, op_mask,
				       idx, &isz, m, sizeof(m));
		if (st) {
			if (msg)
				snprintf(msg, msg_size, "offset %zu: %s", off, m);
			return st;
		}
	}
	return NPU_OK;
}

/* ---- The builder ---- */

npu_status npu_cmdbuf_create(struct npu_cmdbuf **out)
{
	struct npu_cmdbuf *cb;

	if (!out)
		return NPU_ERR_INVALID_ARG;
	*out = NULL;
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return NPU_ERR_NO_MEMORY;
	cb->cap = 4096;
	cb->data = malloc(cb->cap);
	if (!cb->data) {
		free(cb);
		return NPU_ERR_NO_MEMORY;
	}
	cb->sram_size = NPU_SRAM_SIZE;
	cb->op_mask = NPU_OP_MASK_ALL;
	npu_cmdbuf_reset(cb);
	*out = cb;
	return NPU_OK;
}

void npu_cmdbuf_destroy(struct npu_cmdbuf *cb)
{
	if (!cb)
		return;
	free(cb->data);
	free(cb);
}

npu_status npu_cmdbuf_set_device(struct npu_cmdbuf *cb, struct npu_device *dev)
{
	if (!cb || !dev)
		return NPU_ERR_INVALID_ARG;
	cb->sram_size = dev->info.sram_size;
	cb->op_mask = dev->info.op_mask;
	return NPU_OK;
}

void npu_cmdbuf_reset(struct npu_cmdbuf *cb)
{
	struct npu_cs_header h = {
		.magic = NPU_CS_MAGIC,
		.isa_major = NPU_ISA_VERSION_MAJOR,
		.isa_minor = NPU_ISA_VERSION_MINOR,
	};

	memcpy(cb->data, &h, sizeof(h));
	cb->size = sizeof(h);
	cb->count = 0;
	npu_error_clear(&cb->err);
}

const char *npu_cmdbuf_last_error(const struct npu_cmdbuf *cb)
{
	return cb ? npu_error_msg(&cb->err) : "no cmdbuf";
}

unsigned int npu_cmdbuf_count(const struct npu_cmdbuf *cb)
{
	return cb ? cb->count : 0;
}

const void *npu_cmdbuf_data(const struct npu_cmdbuf *cb, size_t *size)
{
	if (size)
		*size = cb ? cb->size : 0;
	return cb ? cb->data : NULL;
}

npu_status npu_cmdbuf_raw(struct npu_cmdbuf *cb, const void *insn, size_t size)
{
	size_t isz = 0;
	npu_status st;

	if (!cb || !insn)
		return NPU_ERR_INVALID_ARG;
	st = npu_insn_validate(insn, size, cb->sram_size, cb->op_mask, cb->count,
			       &isz, cb->err.msg, sizeof(cb->err.msg));
	if (st) {
		cb->err.status = st;
		return st;
	}
	if (isz != size)
		return npu_error_set(&cb->err, NPU_ERR_INVALID_ARG,
				     "instruction #%u: %zu bytes given, its size field says %zu",
				     cb->count, size, isz);
	if (cb->size + size > NPU_CS_MAX_SIZE)
		return npu_error_set(&cb->err, NPU_ERR_INVALID_ARG,
				     "instruction #%u: the stream would exceed %u bytes",
				     cb->count, NPU_CS_MAX_SIZE);
	if (cb->size + size > cb->cap) {
		size_t cap = cb->cap * 2;
		uint8_t *d;

		while (cap < cb->size + size)
			cap *= 2;
		d = realloc(cb->data, cap);
		if (!d)
			return npu_error_set(&cb->err, NPU_ERR_NO_MEMORY,
					     "instruction #%u: out of memory", cb->count);
		cb->data = d;
		cb->cap = cap;
	}
	memcpy(cb->data + cb->size, insn, size);
	cb->size += size;
	cb->count++;
	return NPU_OK;
}

/* Set opcode and size, keep the caller's flags, then append. */
#define EMIT(cb, opc, type, insn_ptr) do { \
		struct type c_ = *(insn_ptr); \
		if (!(cb)) \
			return NPU_ERR_INVALID_ARG; \
		c_.hdr.opcode = (opc); \
		c_.hdr.size = sizeof(c_); \
		return npu_cmdbuf_raw((cb), &c_, sizeof(c_)); \
	} while (0)

npu_status npu_cmdbuf_dma_copy(struct npu_cmdbuf *cb,
			       const struct npu_insn_dma_copy *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_DMA_COPY, npu_insn_dma_copy, insn);
}

npu_status npu_cmdbuf_dma_copy_2d(struct npu_cmdbuf *cb, uint8_t insn_flags,
				  uint8_t dst_space, uint64_t dst,
				  uint64_t dst_stride, uint8_t src_space,
				  uint64_t src, uint64_t src_stride,
				  uint32_t rows, uint32_t row_bytes)
{
	struct npu_insn_dma_copy i = {
		.hdr.flags = insn_flags,
		.src_space = src_space, .dst_space = dst_space,
		.rows = rows, .src = src, .dst = dst, .row_bytes = row_bytes,
		.src_stride = src_stride, .dst_stride = dst_stride,
	};

	return npu_cmdbuf_dma_copy(cb, &i);
}

npu_status npu_cmdbuf_dma_copy_1d(struct npu_cmdbuf *cb, uint8_t insn_flags,
				  uint8_t dst_space, uint64_t dst,
				  uint8_t src_space, uint64_t src, uint32_t bytes)
{
	return npu_cmdbuf_dma_copy_2d(cb, insn_flags, dst_space, dst, bytes,
				      src_space, src, bytes, 1, bytes);
}

npu_status npu_cmdbuf_dma_fill(struct npu_cmdbuf *cb,
			       const struct npu_insn_dma_fill *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_DMA_FILL, npu_insn_dma_fill, insn);
}

npu_status npu_cmdbuf_dma_fill_1d(struct npu_cmdbuf *cb, uint8_t insn_flags,
				  uint8_t dst_space, uint64_t dst,
				  uint8_t value, uint32_t bytes)
{
	struct npu_insn_dma_fill i = {
		.hdr.flags = insn_flags,
		.dst_space = dst_space, .value = value, .rows = 1,
		.dst = dst, .row_bytes = bytes, .dst_stride = bytes,
	};

	return npu_cmdbuf_dma_fill(cb, &i);
}

npu_status npu_cmdbuf_conv2d(struct npu_cmdbuf *cb,
			     const struct npu_insn_conv2d *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_CONV2D, npu_insn_conv2d, insn);
}

npu_status npu_cmdbuf_matmul(struct npu_cmdbuf *cb,
			     const struct npu_insn_matmul *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_MATMUL, npu_insn_matmul, insn);
}

npu_status npu_cmdbuf_pool(struct npu_cmdbuf *cb, const struct npu_insn_pool *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_POOL, npu_insn_pool, insn);
}

npu_status npu_cmdbuf_eltwise(struct npu_cmdbuf *cb,
			      const struct npu_insn_eltwise *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_ELTWISE, npu_insn_eltwise, insn);
}

npu_status npu_cmdbuf_lut(struct npu_cmdbuf *cb, uint8_t insn_flags,
			  uint32_t input, uint32_t output, uint32_t table,
			  uint32_t count)
{
	struct npu_insn_lut i = {
		.hdr.flags = insn_flags,
		.input = input, .output = output, .table = table, .count = count,
	};

	EMIT(cb, NPU_OP_LUT, npu_insn_lut, &i);
}

npu_status npu_cmdbuf_resize(struct npu_cmdbuf *cb,
			     const struct npu_insn_resize *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_RESIZE, npu_insn_resize, insn);
}

npu_status npu_cmdbuf_softmax(struct npu_cmdbuf *cb,
			      const struct npu_insn_softmax *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_SOFTMAX, npu_insn_softmax, insn);
}

npu_status npu_cmdbuf_layernorm(struct npu_cmdbuf *cb,
				const struct npu_insn_layernorm *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_LAYERNORM, npu_insn_layernorm, insn);
}

npu_status npu_cmdbuf_reduce(struct npu_cmdbuf *cb,
			     const struct npu_insn_reduce *insn)
{
	if (!insn)
		return NPU_ERR_INVALID_ARG;
	EMIT(cb, NPU_OP_REDUCE, npu_insn_reduce, insn);
}

npu_status npu_cmdbuf_timestamp(struct npu_cmdbuf *cb, uint8_t insn_flags,
				uint64_t va)
{
	struct npu_insn_timestamp i = { .hdr.flags = insn_flags, .va = va };

	EMIT(cb, NPU_OP_TIMESTAMP, npu_insn_timestamp, &i);
}

npu_status npu_cmdbuf_barrier(struct npu_cmdbuf *cb)
{
	struct npu_insn_barrier i = { .hdr.flags = 0 };

	EMIT(cb, NPU_OP_BARRIER, npu_insn_barrier, &i);
}

npu_status npu_cmdbuf_nop(struct npu_cmdbuf *cb, uint8_t insn_flags)
{
	struct npu_insn_header h = { .opcode = NPU_OP_NOP, .flags = insn_flags,
				     .size = sizeof(h) };

	if (!cb)
		return NPU_ERR_INVALID_ARG;
	return npu_cmdbuf_raw(cb, &h, sizeof(h));
}
