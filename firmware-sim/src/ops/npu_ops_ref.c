// SPDX-License-Identifier: MIT
/*
 * npu_ops_ref.c - the naive reference of every compute instruction: the
 * formulas of npu_hw.h written as straight loops. It is the specification
 * the fast paths (npu_ops.c) must equal bit for bit, so it favours being
 * obviously right over being fast.
 *
 * Every reference computes the whole result into a temporary and only then
 * writes the output: all operands are read before any output byte is
 * written, whatever the operands overlap.
 */
#include <stdlib.h>

#include "npu_ops_internal.h"

void npu_scatter_dense(uint8_t *dst, size_t row_stride, size_t pixel_stride,
		       const uint8_t *src, uint32_t h, uint32_t w, uint32_t c)
{
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			memcpy(dst + y * row_stride + x * pixel_stride,
			       src + ((size_t)y * w + x) * c, c);
}

/* One activation element of 1 or 2 bytes (NPU_INSN_I16). */
static int32_t ld_act(const uint8_t *p, int i16)
{
	return i16 ? npu_ld_i16(p) : (int8_t)*p;
}

/* Stores an element already clamped to the activation type. */
static void st_act(uint8_t *p, int32_t v, int i16)
{
	if (i16)
		npu_st_i16(p, v);
	else
		*p = (uint8_t)v;
}

/*
 * The requantization of a CONV2D / MATMUL accumulator: int8 keeps the
 * 32-bit wrap of its accumulator, int16 the 64-bit one.
 */
static int32_t requant_acc(uint64_t acc, int32_t mult, uint32_t shift,
			   int32_t zp_out, int8_t act_min, int8_t act_max, int i16)
{
	if (i16)
		return npu_requant16((int64_t)acc, mult, shift,
				     npu_act16_lo(act_min), npu_act16_hi(act_max));
	return npu_requant((int32_t)(uint32_t)acc, mult, shift, zp_out,
			   act_min, act_max);
}

/* NPU_CONV_OUT_LUT (int8 only): the output unit's table lookup. */
static int32_t out_lut(const uint8_t *sram, uint32_t flags, uint32_t lut,
		       int32_t o)
{
	if (!(flags & NPU_CONV_OUT_LUT))
		return o;
	return (int8_t)sram[lut + (uint32_t)(o + 128)];
}

static int64_t ld_bias(const uint8_t *sram, uint32_t bias, uint32_t i, int i16)
{
	if (i16)
		return npu_ld_i64(sram + bias + 8 * (size_t)i);
	return npu_ld_i32(sram + bias + 4 * (size_t)i);
}

/*
 * Weight (row, col) of a k-column weight matrix at 'w': dense, or looked
 * up in its N:M group (ISA 1.6) straight from the format, zp where the
 * group keeps no weight at that position.
 */
static int32_t ref_weight(const uint8_t *w, uint32_t flags, uint64_t row,
			  uint64_t k, uint64_t col, int32_t zp, uint64_t rows)
{
	uint32_t n = NPU_SPARSE_N(flags), m = NPU_SPARSE_M(flags), bits = 0;
	uint64_t group, kept;

	if (!m)
		return (int8_t)w[row * k + col];
	while ((1u << bits) < m)
		bits++;
	group = row * (k / m) + col / m;
	kept = rows * (k / m) * n;
	for (uint32_t j = 0; j < n; j++) {
		uint64_t bit = (group * n + j) * bits;
		uint32_t pos = 0;

		for (uint32_t b = 0; b < bits; b++, bit++)
			pos |= (uint32_t)((w[kept + bit / 8] >> (bit % 8)) & 1) << b;
		if (pos == col % m)
			return (int8_t)w[group * n + j];
	}
	return zp;
}

void npu_ref_conv2d(const struct npu_insn_conv2d *in, uint8_t *sram)
{
	const uint8_t *input = sram + in->input;
	const int8_t *weight = (const int8_t *)(sram + in->weight);
	uint32_t cin_g = in->in_c / in->groups, cout_g = in->out_c / in->groups;
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = i16 ? 2 : 1;
	int32_t *mult, *shift;
	uint8_t *res;

	mult = malloc(sizeof(*mult) * in->out_c);
	shift = malloc(sizeof(*shift) * in->out_c);
	res = malloc((size_t)in->out_h * in->out_w * in->out_c * es);
	if (!mult || !shift || !res)
		abort();
	if (npu_load_quant(sram, in->quant, in->flags, in->out_c, mult, shift) ||
	    npu_op_conv2d_check_sram(in, sram))
		goto out;

	for (uint32_t oh = 0; oh < in->out_h; oh++)
	for (uint32_t ow = 0; ow < in->out_w; ow++)
	for (uint32_t oc = 0; oc < in->out_c; oc++) {
		uint32_t g = oc / cout_g;
		/*
		 * The accumulator wraps as on the device: at 32 bits for int8,
		 * 64 for int16 (requant_acc() truncates).
		 */
		uint64_t acc = 0;

		if (!(in->flags & NPU_CONV_NO_BIAS))
			acc = (uint64_t)ld_bias(sram, in->bias, oc, i16);
		for (uint32_t kh = 0; kh < in->k_h; kh++)
		for (uint32_t kw = 0; kw < in->k_w; kw++)
		for (uint32_t ic = 0; ic < cin_g; ic++) {
			/* Coordinates in the zero-inserted input. */
			int64_t ih = (int64_t)oh * in->stride_h - in->pad_top +
				     (int64_t)kh * in->dil_h;
			int64_t iw = (int64_t)ow * in->stride_w - in->pad_left +
				     (int64_t)kw * in->dil_w;
			int64_t uh = in->ins_h + 1, uw = in->ins_w + 1;
			int32_t x = in->zp_in;
			int32_t w = ref_weight((const uint8_t *)weight, in->flags,
					       ((uint64_t)oc * in->k_h + kh) * in->k_w + kw,
					       cin_g, ic, in->zp_w,
					       (uint64_t)in->out_c * in->k_h * in->k_w);

			if (ih >= 0 && ih < ((int64_t)in->in_h - 1) * uh + 1 &&
			    iw >= 0 && iw < ((int64_t)in->in_w - 1) * uw + 1 &&
			    ih % uh == 0 && iw % uw == 0)
				x = ld_act(input + ih / uh * in->in_row_stride +
					   iw / uw * in->in_pixel_stride +
					   (g * cin_g + ic) * es, i16);
			acc += (uint64_t)(int64_t)((x - in->zp_in) * (w - in->zp_w));
		}
		st_act(res + (((size_t)oh * in->out_w + ow) * in->out_c + oc) * es,
		       out_lut(sram, in->flags, in->lut,
			       requant_acc(acc, mult[oc], (uint32_t)shift[oc],
					   in->zp_out, in->act_min, in->act_max,
					   i16)), i16);
	}
	npu_scatter_dense(sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, res,
			  in->out_h, in->out_w, in->out_c * es);
out:
	free(res);
	free(shift);
	free(mult);
}

void npu_ref_matmul(const struct npu_insn_matmul *in, uint8_t *sram)
{
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = i16 ? 2 : 1;
	int32_t *mult, *shift;
	uint8_t *res;

	mult = malloc(sizeof(*mult) * in->n);
	shift = malloc(sizeof(*shift) * in->n);
	res = malloc((size_t)in->m * in->n * es);
	if (!mult || !shift || !res)
		abort();
	if (npu_load_quant(sram, in->quant, in->flags, in->n, mult, shift) ||
	    npu_op_matmul_check_sram(in, sram))
		goto out;

	for (uint32_t i = 0; i < in->m; i++)
	for (uint32_t j = 0; j < in->n; j++) {
		uint64_t acc = 0;

		if (!(in->flags & NPU_CONV_NO_BIAS))
			acc = (uint64_t)ld_bias(sram, in->bias, j, i16);
		for (uint32_t k = 0; k < in->k; k++) {
			int32_t a = ld_act(sram + in->a + (size_t)i * in->a_stride +
					   (size_t)k * es, i16);
			int32_t b = ref_weight(sram + in->b, in->flags, j, in->k, k,
					       in->zp_b, in->n);

			acc += (uint64_t)(int64_t)((a - in->zp_a) * (b - in->zp_b));
		}
		st_act(res + ((size_t)i * in->n + j) * es,
		       out_lut(sram, in->flags, in->lut,
			       requant_acc(acc, mult[j], (uint32_t)shift[j],
					   in->zp_out, in->act_min, in->act_max,
					   i16)), i16);
	}
	npu_scatter_dense(sram + in->output, in->out_stride, 0,
			  res, in->m, 1, in->n * es);
out:
	free(res);
	free(shift);
	free(mult);
}

void npu_ref_pool(const struct npu_insn_pool *in, uint8_t *sram)
{
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = i16 ? 2 : 1;
	int32_t lo = i16 ? npu_act16_lo(in->act_min) : in->act_min;
	int32_t hi = i16 ? npu_act16_hi(in->act_max) : in->act_max;
	uint8_t *res = malloc((size_t)in->out_h * in->out_w * in->c * es);

	if (!res)
		abort();
	for (uint32_t oh = 0; oh < in->out_h; oh++)
	for (uint32_t ow = 0; ow < in->out_w; ow++)
	for (uint32_t c = 0; c < in->c; c++) {
		int64_t sum = 0, count = 0;
		int32_t max = i16 ? INT16_MIN : INT8_MIN, v;

		for (uint32_t kh = 0; kh < in->k_h; kh++)
		for (uint32_t kw = 0; kw < in->k_w; kw++) {
			int64_t ih = (int64_t)oh * in->stride_h - in->pad_top + kh;
			int64_t iw = (int64_t)ow * in->stride_w - in->pad_left + kw;
			int32_t x;

			if (ih < 0 || ih >= in->in_h || iw < 0 || iw >= in->in_w) {
				if (in->flags & NPU_POOL_COUNT_PAD)
					count++;
				continue;
			}
			x = ld_act(sram + in->input + ih * in->in_row_stride +
				   iw * in->in_pixel_stride + (size_t)c * es, i16);
			if (x > max)
				max = x;
			sum += x - in->zp_in;
			count++;
		}
		if (in->mode == NPU_POOL_MAX)
			v = max - in->zp_in;
		else
			v = npu_div_round(sum, count);
		st_act(res + (((size_t)oh * in->out_w + ow) * in->c + c) * es,
		       npu_clamp64((int64_t)v + in->zp_out, lo, hi), i16);
	}
	npu_scatter_dense(sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, res,
			  in->out_h, in->out_w, in->c * es);
	free(res);
}

void npu_ref_eltwise(const struct npu_insn_eltwise *in, uint8_t *sram)
{
	uint32_t types = npu_elt_types(in);
	int a16 = !!(types & NPU_ELT_A16), b16 = !!(types & NPU_ELT_B16);
	int i16 = !!(types & NPU_ELT_OUT16);
	uint32_t es = i16 ? 2 : 1;
	int32_t lo = i16 ? npu_act16_lo(in->act_min) : in->act_min;
	int32_t hi = i16 ? npu_act16_hi(in->act_max) : in->act_max;
	uint8_t *res = malloc((size_t)in->count * es);

	if (!res)
		abort();
	for (uint32_t i = 0; i < in->count; i++) {
		uint32_t bi = in->bcast == NPU_BCAST_NONE ? i :
			      in->bcast == NPU_BCAST_CHANNEL ? i % in->channels : 0;
		int64_t a = ld_act(sram + in->a + (size_t)i * (a16 + 1), a16) - in->zp_a;
		int64_t b = ld_act(sram + in->b + (size_t)bi * (b16 + 1), b16) - in->zp_b;
		int64_t acc, v;

		/* |a|, |b| <= 2^16 (int16) keep acc and its rounding in 63 bits. */
		if (in->mode == NPU_ELT_ADD)
			acc = a * in->mult_a + b * in->mult_b;
		else
			acc = a * b * in->mult_a;
		v = (acc + ((int64_t)1 << (in->shift - 1))) >> in->shift;
		st_act(res + (size_t)i * es, npu_clamp64(v + in->zp_out, lo, hi), i16);
	}
	memcpy(sram + in->output, res, (size_t)in->count * es);
	free(res);
}

void npu_ref_lut(const struct npu_insn_lut *in, uint8_t *sram)
{
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = i16 ? 2 : 1;
	uint8_t *res = malloc((size_t)in->count * es);

	if (!res)
		abort();
	for (uint32_t i = 0; i < in->count; i++)
		if (i16)
			npu_st_i16(res + 2 * (size_t)i,
				   npu_lut16(sram + in->table,
					     npu_ld_i16(sram + in->input + 2 * (size_t)i)));
		else
			res[i] = sram[in->table +
				      (uint8_t)(sram[in->input + (size_t)i] + 128)];
	memcpy(sram + in->output, res, (size_t)in->count * es);
	free(res);
}

/* One axis of RESIZE: the clamped neighbours and the Q16 fraction. */
void npu_resize_coord(uint32_t o, uint32_t step, int32_t offset, uint32_t den,
		      uint32_t in, uint32_t *i0, uint32_t *i1, uint32_t *frac)
{
	int64_t n = (int64_t)o * step + offset;
	int64_t x0 = n / (int64_t)den, r;

	if (n % (int64_t)den < 0)	/* C division truncates: floor it */
		x0--;
	r = n - x0 * (int64_t)den;
	*frac = (uint32_t)(((uint64_t)r << 16) / den);
	*i0 = (uint32_t)(x0 < 0 ? 0 : x0 > (int64_t)in - 1 ? in - 1 : x0);
	*i1 = (uint32_t)(x0 + 1 < 0 ? 0 : x0 + 1 > (int64_t)in - 1 ? in - 1 : x0 + 1);
}

void npu_ref_resize(const struct npu_insn_resize *in, uint8_t *sram)
{
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = i16 ? 2 : 1;
	uint8_t *res = malloc((size_t)in->out_h * in->out_w * in->c * es);

	if (!res)
		abort();
	for (uint32_t oy = 0; oy < in->out_h; oy++)
	for (uint32_t ox = 0; ox < in->out_w; ox++)
	for (uint32_t c = 0; c < in->c; c++) {
		uint32_t y0, y1, fy, x0, x1, fx;
		int32_t v;

		npu_resize_coord(oy, in->step_h, in->offset_h, in->den_h, in->in_h,
				 &y0, &y1, &fy);
		npu_resize_coord(ox, in->step_w, in->offset_w, in->den_w, in->in_w,
				 &x0, &x1, &fx);
#define PIX(y, x) ((int64_t)ld_act(sram + in->input + (size_t)(y) * in->in_row_stride + \
				  (size_t)(x) * in->in_pixel_stride + (size_t)c * es, i16))
		if (in->mode == NPU_RESIZE_NEAREST) {
			v = (int32_t)PIX(y0, x0);
		} else {
			int64_t wy1 = fy, wy0 = 65536 - fy, wx1 = fx, wx0 = 65536 - fx;
			int64_t acc = PIX(y0, x0) * wy0 * wx0 + PIX(y0, x1) * wy0 * wx1 +
				      PIX(y1, x0) * wy1 * wx0 + PIX(y1, x1) * wy1 * wx1;

			v = (int32_t)((acc + ((int64_t)1 << 31)) >> 32);
		}
#undef PIX
		st_act(res + (((size_t)oy * in->out_w + ox) * in->c + c) * es, v, i16);
	}
	npu_scatter_dense(sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, res,
			  in->out_h, in->out_w, in->c * es);
	free(res);
}
