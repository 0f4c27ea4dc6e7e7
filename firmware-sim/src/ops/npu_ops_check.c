// SPDX-License-Identifier: MIT
/*
 * npu_ops_check.c - validation, SRAM footprint and cycle model of the
 * compute instructions. The order of the checks is part of the contract
 * (Documentation/isa.md): encoding (BAD_ENCODING), then parameters
 * (BAD_PARAM), then SRAM bounds (SRAM_BOUNDS), so one malformed
 * instruction always gets the same status.
 */
#include <string.h>

#include "npu_ops_internal.h"

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static uint32_t check_hdr(const struct npu_insn_header *hdr, uint8_t opcode,
			  size_t size)
{
	if (hdr->opcode != opcode)
		return NPU_JOB_ERR_BAD_OPCODE;
	if (hdr->size != size || hdr->reserved || (hdr->flags & ~NPU_INSN_SYNC))
		return NPU_JOB_ERR_BAD_ENCODING;
	return NPU_JOB_OK;
}

static int zp_ok(int32_t zp)
{
	return zp >= -128 && zp <= 127;
}

/*
 * [base, base + a * b * c): false when the product overflows 64 bits or
 * the range leaves SRAM.
 */
static int sram_range(uint64_t base, uint64_t a, uint64_t b, uint64_t c,
		      struct npu_sram_range *r)
{
	uint64_t len;

	if (__builtin_mul_overflow(a, b, &len) ||
	    __builtin_mul_overflow(len, c, &len))
		return 0;
	if (base > NPU_SRAM_SIZE || len > NPU_SRAM_SIZE - base)
		return 0;
	r->begin = (uint32_t)base;
	r->end = (uint32_t)(base + len);
	return 1;
}

/* A strided [h][w][c] view; (h - 1) * row_stride fits 64 bits always. */
static int tensor_range(uint32_t base, uint32_t h, uint32_t w, uint32_t c,
			uint32_t row_stride, uint32_t pixel_stride,
			struct npu_sram_range *r)
{
	return sram_range(base, npu_tensor_span(h, w, c, row_stride,
						pixel_stride), 1, 1, r);
}

/*
 * Pixels may not overlap inside a tensor (pixel stride >= channels, row
 * stride >= one row of pixels): overlapping outputs would make the result
 * depend on the order the hardware writes in.
 */
static int layout_ok(uint32_t h, uint32_t w, uint32_t c, uint32_t row_stride,
		     uint32_t pixel_stride)
{
	if (pixel_stride < c)
		return 0;
	return h == 1 || (uint64_t)row_stride >= (uint64_t)w * pixel_stride;
}

/* One spatial axis: out == (in + pads - dil * (k - 1) - 1) / stride + 1. */
static int out_dim_ok(uint32_t in, uint32_t pad0, uint32_t pad1, uint32_t k,
		      uint32_t stride, uint32_t dil, uint32_t out)
{
	uint32_t padded = in + pad0 + pad1;
	uint32_t extent = dil * (k - 1) + 1;

	if (extent > padded)
		return 0;
	return (padded - extent) / stride + 1 == out;
}

/* Footprint of the quant table: n mults then n shifts, 5 bytes each. */
static int quant_range(uint32_t quant, uint32_t flags, uint32_t n,
		       struct npu_sram_range *r)
{
	return sram_range(quant, (flags & NPU_QUANT_PER_TENSOR) ? 1 : n, 5, 1, r);
}

uint32_t npu_op_conv2d_check(const struct npu_insn_conv2d *in,
			     struct npu_op_footprint *fp)
{
	struct npu_op_footprint f = { 0 };
	uint32_t st, cin_g, cout_g;

	memset(fp, 0, sizeof(*fp));
	st = check_hdr(&in->hdr, NPU_OP_CONV2D, sizeof(*in));
	if (st)
		return st;
	if (in->reserved[0] || in->reserved[1] ||
	    (in->flags & ~(NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS)))
		return NPU_JOB_ERR_BAD_ENCODING;

	if (!in->in_h || !in->in_w || !in->in_c || !in->out_c ||
	    !in->out_h || !in->out_w || !in->k_h || !in->k_w ||
	    !in->stride_h || !in->stride_w || !in->dil_h || !in->dil_w ||
	    !in->groups)
		return NPU_JOB_ERR_BAD_PARAM;
	if (in->in_c % in->groups || in->out_c % in->groups)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!zp_ok(in->zp_in) || !zp_ok(in->zp_w) || !zp_ok(in->zp_out) ||
	    in->act_min > in->act_max)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!out_dim_ok(in->in_h, in->pad_top, in->pad_bottom, in->k_h,
			in->stride_h, in->dil_h, in->out_h) ||
	    !out_dim_ok(in->in_w, in->pad_left, in->pad_right, in->k_w,
			in->stride_w, in->dil_w, in->out_w))
		return NPU_JOB_ERR_BAD_PARAM;
	if (!layout_ok(in->in_h, in->in_w, in->in_c, in->in_row_stride,
		       in->in_pixel_stride) ||
	    !layout_ok(in->out_h, in->out_w, in->out_c, in->out_row_stride,
		       in->out_pixel_stride))
		return NPU_JOB_ERR_BAD_PARAM;

	cin_g = in->in_c / in->groups;
	cout_g = in->out_c / in->groups;
	if (!tensor_range(in->input, in->in_h, in->in_w, in->in_c,
			  in->in_row_stride, in->in_pixel_stride, &f.reads[0]) ||
	    !sram_range(in->weight, in->out_c, (uint32_t)in->k_h * in->k_w,
			cin_g, &f.reads[1]) ||
	    !quant_range(in->quant, in->flags, in->out_c, &f.reads[2]) ||
	    !tensor_range(in->output, in->out_h, in->out_w, in->out_c,
			  in->out_row_stride, in->out_pixel_stride, &f.writes[0]))
		return NPU_JOB_ERR_SRAM_BOUNDS;
	f.num_reads = 3;
	if (!(in->flags & NPU_CONV_NO_BIAS)) {
		if (!sram_range(in->bias, in->out_c, 4, 1, &f.reads[3]))
			return NPU_JOB_ERR_SRAM_BOUNDS;
		f.num_reads = 4;
	}
	f.num_writes = 1;

	/* Sizes are bounded by SRAM now, so none of these products overflow. */
	if (in->groups == in->in_c && in->groups == in->out_c)
		f.cycles = div_up((uint64_t)in->out_h * in->out_w, NPU_MAC_ROWS) *
			   in->k_h * in->k_w * div_up(in->out_c, NPU_MAC_COLS);
	else
		f.cycles = (uint64_t)in->out_h * in->out_w * in->k_h * in->k_w *
			   in->groups * div_up(cin_g, NPU_MAC_ROWS) *
			   div_up(cout_g, NPU_MAC_COLS);
	f.macs = (uint64_t)in->out_h * in->out_w * in->out_c * in->k_h *
		 in->k_w * cin_g;
	*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_matmul_check(const struct npu_insn_matmul *in,
			     struct npu_op_footprint *fp)
{
	struct npu_op_footprint f = { 0 };
	uint32_t st;

	memset(fp, 0, sizeof(*fp));
	st = check_hdr(&in->hdr, NPU_OP_MATMUL, sizeof(*in));
	if (st)
		return st;
	if (in->reserved || (in->flags & ~(NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS)))
		return NPU_JOB_ERR_BAD_ENCODING;
	if (!in->m || !in->k || !in->n)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!zp_ok(in->zp_a) || !zp_ok(in->zp_b) || !zp_ok(in->zp_out) ||
	    in->act_min > in->act_max)
		return NPU_JOB_ERR_BAD_PARAM;
	if (in->m > 1 && (in->a_stride < in->k || in->out_stride < in->n))
		return NPU_JOB_ERR_BAD_PARAM;

	if (!sram_range(in->a, 1, 1, (uint64_t)(in->m - 1) * in->a_stride + in->k,
			&f.reads[0]) ||
	    !sram_range(in->b, in->n, in->k, 1, &f.reads[1]) ||
	    !quant_range(in->quant, in->flags, in->n, &f.reads[2]) ||
	    !sram_range(in->output, 1, 1,
			(uint64_t)(in->m - 1) * in->out_stride + in->n, &f.writes[0]))
		return NPU_JOB_ERR_SRAM_BOUNDS;
	f.num_reads = 3;
	if (!(in->flags & NPU_CONV_NO_BIAS)) {
		if (!sram_range(in->bias, in->n, 4, 1, &f.reads[3]))
			return NPU_JOB_ERR_SRAM_BOUNDS;
		f.num_reads = 4;
	}
	f.num_writes = 1;
	f.cycles = (uint64_t)in->m * div_up(in->k, NPU_MAC_ROWS) *
		   div_up(in->n, NPU_MAC_COLS);
	f.macs = (uint64_t)in->m * in->k * in->n;
	*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_pool_check(const struct npu_insn_pool *in,
			   struct npu_op_footprint *fp)
{
	struct npu_op_footprint f = { 0 };
	uint32_t st;

	memset(fp, 0, sizeof(*fp));
	st = check_hdr(&in->hdr, NPU_OP_POOL, sizeof(*in));
	if (st)
		return st;
	if (in->reserved0[0] || in->reserved0[1] || in->reserved1 ||
	    (in->flags & ~NPU_POOL_COUNT_PAD))
		return NPU_JOB_ERR_BAD_ENCODING;
	if (in->mode != NPU_POOL_MAX && in->mode != NPU_POOL_AVG)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!in->c || !in->in_h || !in->in_w || !in->out_h || !in->out_w ||
	    !in->k_h || !in->k_w || !in->stride_h || !in->stride_w)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!zp_ok(in->zp_in) || !zp_ok(in->zp_out) || in->act_min > in->act_max)
		return NPU_JOB_ERR_BAD_PARAM;
	/* A pad below the window size keeps a real pixel in every window. */
	if (in->pad_top >= in->k_h || in->pad_bottom >= in->k_h ||
	    in->pad_left >= in->k_w || in->pad_right >= in->k_w)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!out_dim_ok(in->in_h, in->pad_top, in->pad_bottom, in->k_h,
			in->stride_h, 1, in->out_h) ||
	    !out_dim_ok(in->in_w, in->pad_left, in->pad_right, in->k_w,
			in->stride_w, 1, in->out_w))
		return NPU_JOB_ERR_BAD_PARAM;
	if (!layout_ok(in->in_h, in->in_w, in->c, in->in_row_stride,
		       in->in_pixel_stride) ||
	    !layout_ok(in->out_h, in->out_w, in->c, in->out_row_stride,
		       in->out_pixel_stride))
		return NPU_JOB_ERR_BAD_PARAM;
	if (!tensor_range(in->input, in->in_h, in->in_w, in->c,
			  in->in_row_stride, in->in_pixel_stride, &f.reads[0]) ||
	    !tensor_range(in->output, in->out_h, in->out_w, in->c,
			  in->out_row_stride, in->out_pixel_stride, &f.writes[0]))
		return NPU_JOB_ERR_SRAM_BOUNDS;
	f.num_reads = 1;
	f.num_writes = 1;
	f.cycles = div_up((uint64_t)in->out_h * in->out_w * in->c * in->k_h *
			  in->k_w, NPU_VECTOR_LANES);
	*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_eltwise_check(const struct npu_insn_eltwise *in,
			      struct npu_op_footprint *fp)
{
	struct npu_op_footprint f = { 0 };
	uint32_t st, b_len;

	memset(fp, 0, sizeof(*fp));
	st = check_hdr(&in->hdr, NPU_OP_ELTWISE, sizeof(*in));
	if (st)
		return st;
	if (in->reserved0)
		return NPU_JOB_ERR_BAD_ENCODING;
	if (in->mode != NPU_ELT_ADD && in->mode != NPU_ELT_MUL)
		return NPU_JOB_ERR_BAD_PARAM;
	if (in->bcast > NPU_BCAST_SCALAR)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!in->count || in->shift < 1 || in->shift > 62)
		return NPU_JOB_ERR_BAD_PARAM;
	/* Fields a mode does not use must be zero, like reserved ones. */
	if ((in->bcast == NPU_BCAST_CHANNEL) != (in->channels != 0))
		return NPU_JOB_ERR_BAD_PARAM;
	if (in->mode == NPU_ELT_MUL && in->mult_b)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!zp_ok(in->zp_a) || !zp_ok(in->zp_b) || !zp_ok(in->zp_out) ||
	    in->act_min > in->act_max)
		return NPU_JOB_ERR_BAD_PARAM;

	b_len = in->bcast == NPU_BCAST_NONE ? in->count :
		in->bcast == NPU_BCAST_CHANNEL ? in->channels : 1;
	if (!sram_range(in->a, in->count, 1, 1, &f.reads[0]) ||
	    !sram_range(in->b, b_len, 1, 1, &f.reads[1]) ||
	    !sram_range(in->output, in->count, 1, 1, &f.writes[0]))
		return NPU_JOB_ERR_SRAM_BOUNDS;
	f.num_reads = 2;
	f.num_writes = 1;
	f.cycles = div_up(in->count, NPU_VECTOR_LANES);
	*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_lut_check(const struct npu_insn_lut *in,
			  struct npu_op_footprint *fp)
{
	struct npu_op_footprint f = { 0 };
	uint32_t st;

	memset(fp, 0, sizeof(*fp));
	st = check_hdr(&in->hdr, NPU_OP_LUT, sizeof(*in));
	if (st)
		return st;
	if (!in->count)
		return NPU_JOB_ERR_BAD_PARAM;
	if (!sram_range(in->input, in->count, 1, 1, &f.reads[0]) ||
	    !sram_range(in->table, 256, 1, 1, &f.reads[1]) ||
	    !sram_range(in->output, in->count, 1, 1, &f.writes[0]))
		return NPU_JOB_ERR_SRAM_BOUNDS;
	f.num_reads = 2;
	f.num_writes = 1;
	f.cycles = div_up(in->count, NPU_VECTOR_LANES);
	*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_load_quant(const uint8_t *sram, uint32_t quant, uint32_t flags,
			uint32_t n, int32_t *mult, int32_t *shift)
{
	uint32_t nq = (flags & NPU_QUANT_PER_TENSOR) ? 1 : n;
	const uint8_t *shifts = sram + quant + 4 * (size_t)nq;
	uint32_t i;

	for (i = 0; i < nq; i++) {
		if (shifts[i] < 1 || shifts[i] > 62)
			return NPU_JOB_ERR_BAD_PARAM;
		if (mult) {
			mult[i] = npu_ld_i32(sram + quant + 4 * (size_t)i);
			shift[i] = shifts[i];
		}
	}
	if (mult)
		for (; i < n; i++) {
			mult[i] = mult[0];
			shift[i] = shift[0];
		}
	return NPU_JOB_OK;
}

uint32_t npu_op_conv2d_check_sram(const struct npu_insn_conv2d *insn,
				  const uint8_t *sram)
{
	return npu_load_quant(sram, insn->quant, insn->flags, insn->out_c,
			      NULL, NULL);
}

uint32_t npu_op_matmul_check_sram(const struct npu_insn_matmul *insn,
				  const uint8_t *sram)
{
	return npu_load_quant(sram, insn->quant, insn->flags, insn->n,
			      NULL, NULL);
}
