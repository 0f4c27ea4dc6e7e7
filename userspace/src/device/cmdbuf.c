// SPDX-License-Identifier: MIT
/*
 * cmdbuf.c - the command-stream builder and the host-side validator.
 *
 * Every instruction is checked before it is appended, with the rules of
 * npu_hw.h that need no device state: sizes, flags, reserved fields, enums,
 * dimensions and their consistency, zero-point ranges and SRAM bounds
 * (in 128-bit arithmetic, so no field combination can wrap). What needs
 * the device (MMU translations, hazards, shift values stored in SRAM) is
 * left to it. The same checker validates binary streams read from files.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

typedef unsigned __int128 u128;

struct npu_cmdbuf {
	uint8_t *data;
	size_t size, cap;
	unsigned int count;
	uint32_t sram_size;
	uint32_t op_mask;
	struct npu_error err;
};

static const struct {
	uint8_t opcode;
	const char *name;
	uint16_t size;
} insn_table[] = {
	{ NPU_OP_NOP, "nop", sizeof(struct npu_insn_header) },
	{ NPU_OP_DMA_COPY, "dma_copy", sizeof(struct npu_insn_dma_copy) },
	{ NPU_OP_DMA_FILL, "dma_fill", sizeof(struct npu_insn_dma_fill) },
	{ NPU_OP_CONV2D, "conv2d", sizeof(struct npu_insn_conv2d) },
	{ NPU_OP_MATMUL, "matmul", sizeof(struct npu_insn_matmul) },
	{ NPU_OP_POOL, "pool", sizeof(struct npu_insn_pool) },
	{ NPU_OP_ELTWISE, "eltwise", sizeof(struct npu_insn_eltwise) },
	{ NPU_OP_LUT, "lut", sizeof(struct npu_insn_lut) },
	{ NPU_OP_TIMESTAMP, "timestamp", sizeof(struct npu_insn_timestamp) },
	{ NPU_OP_BARRIER, "barrier", sizeof(struct npu_insn_barrier) },
};

#define NUM_INSNS (sizeof(insn_table) / sizeof(insn_table[0]))

/* Validation context: where we are, where the message goes. */
struct vctx {
	const char *op;
	unsigned int index;
	uint32_t sram;
	char *msg;
	size_t msg_size;
};

static npu_status vfail(struct vctx *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static npu_status vfail(struct vctx *v, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!v->msg || !v->msg_size)
		return NPU_ERR_INVALID_ARG;
	n = snprintf(v->msg, v->msg_size, "%s #%u: ", v->op, v->index);
	if (n < 0 || (size_t)n >= v->msg_size)
		return NPU_ERR_INVALID_ARG;
	va_start(ap, fmt);
	vsnprintf(v->msg + n, v->msg_size - (size_t)n, fmt, ap);
	va_end(ap);
	return NPU_ERR_INVALID_ARG;
}

/* [base, base + len) must lie in SRAM. */
static npu_status sram_range(struct vctx *v, const char *field, u128 base,
			     u128 len)
{
	if (base + len > v->sram)
		return vfail(v, "%s [%" PRIu64 ", %" PRIu64 ") exceeds SRAM size %u",
			     field, (uint64_t)base,
			     (uint64_t)(base + len > UINT64_MAX ? UINT64_MAX : base + len),
			     v->sram);
	return NPU_OK;
}

/* Bytes spanned by rows x cols of 'elem' bytes with the given strides. */
static u128 extent2(uint64_t rows, uint64_t row_stride, uint64_t cols,
		    uint64_t col_stride, uint64_t elem)
{
	return (u128)(rows - 1) * row_stride + (u128)(cols - 1) * col_stride + elem;
}

static npu_status check_zp(struct vctx *v, const char *field, int16_t zp)
{
	if (zp < -128 || zp > 127)
		return vfail(v, "%s %d is outside -128..127", field, zp);
	return NPU_OK;
}

#define TRY(x) do { npu_status s_ = (x); if (s_) return s_; } while (0)
#define NONZERO(v, ins, f) do { if (!(ins)->f) return vfail(v, #f " is 0"); } while (0)
#define ZERO(v, ins, f) do { if ((ins)->f) return vfail(v, "reserved field " #f " is not 0"); } while (0)

static npu_status check_act(struct vctx *v, int8_t lo, int8_t hi)
{
	if (lo > hi)
		return vfail(v, "act_min %d > act_max %d", lo, hi);
	return NPU_OK;
}

static npu_status check_dma_span(struct vctx *v, const char *field,
				 uint8_t space, uint64_t addr, uint32_t rows,
				 uint64_t stride, uint32_t row_bytes,
				 u128 *end)
{
	u128 e = (u128)addr + (u128)(rows - 1) * stride + row_bytes;

	*end = e;
	if (space == NPU_SPACE_SRAM) {
		if (e > v->sram)
			return vfail(v, "%s [%" PRIu64 ", %" PRIu64 ") exceeds SRAM size %u",
				     field, addr, (uint64_t)(e > UINT64_MAX ? UINT64_MAX : e),
				     v->sram);
	} else if (e > UINT64_MAX) {
		return vfail(v, "%s range 0x%" PRIx64 " + %u rows x %" PRIu64 " bytes wraps around",
			     field, addr, rows, stride);
	}
	return NPU_OK;
}

static npu_status check_dma_copy(struct vctx *v, const struct npu_insn_dma_copy *i)
{
	u128 se, de;

	if (i->src_space > NPU_SPACE_SRAM)
		return vfail(v, "src_space %u is not 0 (va) or 1 (sram)", i->src_space);
	if (i->dst_space > NPU_SPACE_SRAM)
		return vfail(v, "dst_space %u is not 0 (va) or 1 (sram)", i->dst_space);
	ZERO(v, i, reserved0);
	ZERO(v, i, reserved1);
	NONZERO(v, i, rows);
	NONZERO(v, i, row_bytes);
	TRY(check_dma_span(v, "src", i->src_space, i->src, i->rows, i->src_stride,
			   i->row_bytes, &se));
	TRY(check_dma_span(v, "dst", i->dst_space, i->dst, i->rows, i->dst_stride,
			   i->row_bytes, &de));
	if (i->src_space == NPU_SPACE_SRAM && i->dst_space == NPU_SPACE_SRAM &&
	    i->src < de && i->dst < se)
		return vfail(v, "SRAM source [%" PRIu64 ", %" PRIu64 ") overlaps destination [%" PRIu64 ", %" PRIu64 ")",
			     i->src, (uint64_t)se, i->dst, (uint64_t)de);
	return NPU_OK;
}

static npu_status check_dma_fill(struct vctx *v, const struct npu_insn_dma_fill *i)
{
	u128 de;

	if (i->dst_space > NPU_SPACE_SRAM)
		return vfail(v, "dst_space %u is not 0 (va) or 1 (sram)", i->dst_space);
	ZERO(v, i, reserved0);
	ZERO(v, i, reserved1);
	NONZERO(v, i, rows);
	NONZERO(v, i, row_bytes);
	return check_dma_span(v, "dst", i->dst_space, i->dst, i->rows,
			      i->dst_stride, i->row_bytes, &de);
}

static npu_status check_out_dim(struct vctx *v, const char *field,
				uint32_t in, uint32_t pad0, uint32_t pad1,
				uint32_t k, uint32_t dil, uint32_t stride,
				uint32_t out)
{
	uint64_t span = (uint64_t)dil * (k - 1) + 1;
	uint64_t padded = (uint64_t)in + pad0 + pad1;
	uint64_t want;

	if (padded < span)
		return vfail(v, "kernel extent %" PRIu64 " exceeds padded input %" PRIu64 " (%s)",
			     span, padded, field);
	want = (padded - span) / stride + 1;
	if (want != out)
		return vfail(v, "%s is %u, expected %" PRIu64 " from the input size, padding, kernel, dilation and stride",
			     field, out, want);
	return NPU_OK;
}

static npu_status check_quant(struct vctx *v, uint32_t flags, uint32_t quant,
			      uint32_t bias, uint32_t n)
{
	if (flags & ~(NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS))
		return vfail(v, "flags 0x%x has unknown bits", flags);
	if (!(flags & NPU_CONV_NO_BIAS))
		TRY(sram_range(v, "bias", bias, (u128)n * 4));
	return sram_range(v, "quant", quant,
			  flags & NPU_QUANT_PER_TENSOR ? 5 : (u128)n * 5);
}

static npu_status check_conv2d(struct vctx *v, const struct npu_insn_conv2d *i)
{
	NONZERO(v, i, in_h); NONZERO(v, i, in_w); NONZERO(v, i, in_c);
	NONZERO(v, i, out_c); NONZERO(v, i, out_h); NONZERO(v, i, out_w);
	NONZERO(v, i, k_h); NONZERO(v, i, k_w);
	NONZERO(v, i, stride_h); NONZERO(v, i, stride_w);
	NONZERO(v, i, dil_h); NONZERO(v, i, dil_w);
	NONZERO(v, i, groups);
	ZERO(v, i, reserved[0]);
	ZERO(v, i, reserved[1]);
	if (i->in_c % i->groups || i->out_c % i->groups)
		return vfail(v, "groups %u does not divide in_c %u and out_c %u",
			     i->groups, i->in_c, i->out_c);
	if (i->in_pixel_stride < i->in_c)
		return vfail(v, "in_pixel_stride %u < in_c %u", i->in_pixel_stride, i->in_c);
	if (i->out_pixel_stride < i->out_c)
		return vfail(v, "out_pixel_stride %u < out_c %u", i->out_pixel_stride, i->out_c);
	TRY(check_out_dim(v, "out_h", i->in_h, i->pad_top, i->pad_bottom, i->k_h,
			  i->dil_h, i->stride_h, i->out_h));
	TRY(check_out_dim(v, "out_w", i->in_w, i->pad_left, i->pad_right, i->k_w,
			  i->dil_w, i->stride_w, i->out_w));
	TRY(check_zp(v, "zp_in", i->zp_in));
	TRY(check_zp(v, "zp_w", i->zp_w));
	TRY(check_zp(v, "zp_out", i->zp_out));
	TRY(check_act(v, i->act_min, i->act_max));
	TRY(sram_range(v, "input", i->input,
		       extent2(i->in_h, i->in_row_stride, i->in_w,
			       i->in_pixel_stride, i->in_c)));
	TRY(sram_range(v, "weight", i->weight,
		       (u128)i->out_c * i->k_h * i->k_w * (i->in_c / i->groups)));
	TRY(check_quant(v, i->flags, i->quant, i->bias, i->out_c));
	return sram_range(v, "output", i->output,
			  extent2(i->out_h, i->out_row_stride, i->out_w,
				  i->out_pixel_stride, i->out_c));
}

static npu_status check_matmul(struct vctx *v, const struct npu_insn_matmul *i)
{
	NONZERO(v, i, m); NONZERO(v, i, k); NONZERO(v, i, n);
	ZERO(v, i, reserved);
	if (i->a_stride < i->k)
		return vfail(v, "a_stride %u < k %u", i->a_stride, i->k);
	if (i->out_stride < i->n)
		return vfail(v, "out_stride %u < n %u", i->out_stride, i->n);
	TRY(check_zp(v, "zp_a", i->zp_a));
	TRY(check_zp(v, "zp_b", i->zp_b));
	TRY(check_zp(v, "zp_out", i->zp_out));
	TRY(check_act(v, i->act_min, i->act_max));
	TRY(sram_range(v, "a", i->a, (u128)(i->m - 1) * i->a_stride + i->k));
	TRY(sram_range(v, "b", i->b, (u128)i->n * i->k));
	TRY(check_quant(v, i->flags, i->quant, i->bias, i->n));
	return sram_range(v, "output", i->output,
			  (u128)(i->m - 1) * i->out_stride + i->n);
}

static npu_status check_pool(struct vctx *v, const struct npu_insn_pool *i)
{
	if (i->mode > NPU_POOL_AVG)
		return vfail(v, "mode %u is not 0 (max) or 1 (avg)", i->mode);
	if (i->flags & ~NPU_POOL_COUNT_PAD)
		return vfail(v, "flags 0x%x has unknown bits", i->flags);
	NONZERO(v, i, c); NONZERO(v, i, in_h); NONZERO(v, i, in_w);
	NONZERO(v, i, out_h); NONZERO(v, i, out_w);
	NONZERO(v, i, k_h); NONZERO(v, i, k_w);
	NONZERO(v, i, stride_h); NONZERO(v, i, stride_w);
	ZERO(v, i, reserved0[0]);
	ZERO(v, i, reserved0[1]);
	ZERO(v, i, reserved1);
	if (i->in_pixel_stride < i->c)
		return vfail(v, "in_pixel_stride %u < c %u", i->in_pixel_stride, i->c);
	if (i->out_pixel_stride < i->c)
		return vfail(v, "out_pixel_stride %u < c %u", i->out_pixel_stride, i->c);
	TRY(check_out_dim(v, "out_h", i->in_h, i->pad_top, i->pad_bottom, i->k_h,
			  1, i->stride_h, i->out_h));
	TRY(check_out_dim(v, "out_w", i->in_w, i->pad_left, i->pad_right, i->k_w,
			  1, i->stride_w, i->out_w));
	TRY(check_zp(v, "zp_in", i->zp_in));
	TRY(check_zp(v, "zp_out", i->zp_out));
	TRY(check_act(v, i->act_min, i->act_max));
	TRY(sram_range(v, "input", i->input,
		       extent2(i->in_h, i->in_row_stride, i->in_w,
			       i->in_pixel_stride, i->c)));
	return sram_range(v, "output", i->output,
			  extent2(i->out_h, i->out_row_stride, i->out_w,
				  i->out_pixel_stride, i->c));
}

static npu_status check_eltwise(struct vctx *v, const struct npu_insn_eltwise *i)
{
	u128 blen;

	if (i->mode > NPU_ELT_MUL)
		return vfail(v, "mode %u is not 0 (add) or 1 (mul)", i->mode);
	if (i->bcast > NPU_BCAST_SCALAR)
		return vfail(v, "bcast %u is not 0 (none), 1 (channel) or 2 (scalar)",
			     i->bcast);
	if (i->shift < 1 || i->shift > 62)
		return vfail(v, "shift %u is outside 1..62", i->shift);
	ZERO(v, i, reserved0);
	NONZERO(v, i, count);
	if (i->bcast == NPU_BCAST_CHANNEL && !i->channels)
		return vfail(v, "channels is 0 with bcast=channel");
	TRY(check_zp(v, "zp_a", i->zp_a));
	TRY(check_zp(v, "zp_b", i->zp_b));
	TRY(check_zp(v, "zp_out", i->zp_out));
	TRY(check_act(v, i->act_min, i->act_max));
	blen = i->bcast == NPU_BCAST_NONE ? i->count :
	       i->bcast == NPU_BCAST_CHANNEL ? i->channels : 1;
	TRY(sram_range(v, "a", i->a, i->count));
	TRY(sram_range(v, "b", i->b, blen));
	return sram_range(v, "output", i->output, i->count);
}

static npu_status check_lut(struct vctx *v, const struct npu_insn_lut *i)
{
	NONZERO(v, i, count);
	TRY(sram_range(v, "input", i->input, i->count));
	TRY(sram_range(v, "table", i->table, 256));
	return sram_range(v, "output", i->output, i->count);
}

npu_status npu_insn_validate(const void *insn, size_t avail, uint32_t sram_size,
			     uint32_t op_mask, unsigned int index,
			     size_t *insn_size, char *msg, size_t msg_size)
{
	struct npu_insn_header h;
	struct vctx v = { "instruction", index, sram_size, msg, msg_size };
	unsigned int t;

	if (avail < sizeof(h))
		return vfail(&v, "truncated: the header needs %zu bytes, %zu left",
			     sizeof(h), avail);
	memcpy(&h, insn, sizeof(h));
	for (t = 0; t < NUM_INSNS; t++)
		if (insn_table[t].opcode == h.opcode)
			break;
	if (t == NUM_INSNS)
		return vfail(&v, "unknown opcode 0x%02x", h.opcode);
	v.op = insn_table[t].name;
	if (h.size != insn_table[t].size)
		return vfail(&v, "size field %u, a %s is %u bytes", h.size,
			     v.op, insn_table[t].size);
	if (avail < h.size)
		return vfail(&v, "truncated: needs %u bytes, %zu left", h.size, avail);
	if (h.flags & ~NPU_INSN_SYNC)
		return vfail(&v, "header flags 0x%x has unknown bits", h.flags);
	if (h.reserved)
		return vfail(&v, "reserved header field is not 0");
	if (!(op_mask & NPU_OP_BIT(h.opcode)))
		return vfail(&v, "the device's op mask 0x%x does not enable %s",
			     op_mask, v.op);
	*insn_size = h.size;

	/* copy out: the stream may be unaligned */
	switch (h.opcode) {
	case NPU_OP_DMA_COPY: {
		struct npu_insn_dma_copy i;

		memcpy(&i, insn, sizeof(i));
		return check_dma_copy(&v, &i);
	}
	case NPU_OP_DMA_FILL: {
		struct npu_insn_dma_fill i;

		memcpy(&i, insn, sizeof(i));
		return check_dma_fill(&v, &i);
	}
	case NPU_OP_CONV2D: {
		struct npu_insn_conv2d i;

		memcpy(&i, insn, sizeof(i));
		return check_conv2d(&v, &i);
	}
	case NPU_OP_MATMUL: {
		struct npu_insn_matmul i;

		memcpy(&i, insn, sizeof(i));
		return check_matmul(&v, &i);
	}
	case NPU_OP_POOL: {
		struct npu_insn_pool i;

		memcpy(&i, insn, sizeof(i));
		return check_pool(&v, &i);
	}
	case NPU_OP_ELTWISE: {
		struct npu_insn_eltwise i;

		memcpy(&i, insn, sizeof(i));
		return check_eltwise(&v, &i);
	}
	case NPU_OP_LUT: {
		struct npu_insn_lut i;

		memcpy(&i, insn, sizeof(i));
		return check_lut(&v, &i);
	}
	case NPU_OP_TIMESTAMP: {
		struct npu_insn_timestamp i;

		memcpy(&i, insn, sizeof(i));
		if (i.va % 8)
			return vfail(&v, "va 0x%" PRIx64 " is not 8-byte aligned", i.va);
		return NPU_OK;
	}
	default:
		return NPU_OK;
	}
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
