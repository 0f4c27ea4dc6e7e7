// SPDX-License-Identifier: MIT
/*
 * boundary.c - a segment's boundary conversions, fp32 NCHW (or rows) <->
 * int8 NHWC (or rows) with an act's parameters: what the NpuSegment
 * kernel (runtime/npu_segment_op.c) does at every run, and what the
 * quantization report's emulation does, so that both quantize alike.
 */
#include "compiler/boundary.h"

#include <math.h>
#include <string.h>

/*
 * x * inv rounded to nearest even, as lrintf() in the default rounding
 * mode, without the libm call (the segment's inputs are millions of
 * elements): clamped first, to a range whose every value rounds exactly
 * by the 1.5 * 2^23 trick and still saturates int16, so NaN and values
 * past the long range saturate too (NaN to the low end).
 */
static inline int32_t quant_round(float x, float inv)
{
	float v = x * inv;

	v = v >= -65536.0f ? v : -65536.0f;
	v = v <= 65536.0f ? v : 65536.0f;
	return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

/* Element e of act a's storage: int8, or int16 (symmetric) when a->i16. */
static inline void put_q(const struct npu_act *a, int8_t *dst, uint64_t e, float x,
			 float inv)
{
	int32_t v = quant_round(x, inv) + a->q.zero_point;

	if (a->i16)
		((int16_t *)(void *)dst)[e] = (int16_t)(v < -32767 ? -32767 : v > 32767 ? 32767 : v);
	else
		dst[e] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/*
 * 'count' floats of 'src' into elements e0, e0 + stride, ... of act a:
 * put_q() with the element width decided once per run.
 */
static void put_q_run(const struct npu_act *a, int8_t *dst, uint64_t e0, uint64_t stride,
		      const float *src, uint64_t count, float inv)
{
	int32_t zp = a->q.zero_point;
	uint64_t i;

	if (a->i16) {
		int16_t *d = (int16_t *)(void *)dst + e0;

		for (i = 0; i < count; i++) {
			int32_t v = quant_round(src[i], inv) + zp;

			d[i * stride] = (int16_t)(v < -32767 ? -32767 : v > 32767 ? 32767 : v);
		}
		return;
	}
	for (i = 0; i < count; i++) {
		int32_t v = quant_round(src[i], inv) + zp;

		dst[e0 + i * stride] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
	}
}

static inline float get_q(const struct npu_act *a, const int8_t *src, uint64_t e)
{
	int32_t q = a->i16 ? ((const int16_t *)(const void *)src)[e] : src[e];

	return a->q.scale * (float)(q - a->q.zero_point);
}

/*
 * fp32 NCHW -> int8 im2col (npu_act.im2col): every output pixel's window,
 * [k_h][k_w][c], padding as the zero point. The source is t's own NCHW
 * shape; a window pixel outside it reads as padding, so no index leaves t.
 */
static void quantize_im2col(const struct npu_tensor *t, const struct npu_act *a,
			    int8_t *dst, float inv)
{
	const float *src = t->data;
	uint32_t kh = a->im2col.k_h, kw = a->im2col.k_w, c = a->c / (kh * kw);
	int64_t H = t->shape.rank == 4 ? t->shape.dims[2] : 0;
	int64_t W = t->shape.rank == 4 ? t->shape.dims[3] : 0;
	uint64_t e = 0, n, y, x, i, j, k;

	if (t->shape.rank != 4 || t->shape.dims[0] != a->n || t->shape.dims[1] != c)
		H = W = 0;	/* not the value compiled for: padding only */
	for (n = 0; n < a->n; n++)
		for (y = 0; y < a->h; y++)
			for (x = 0; x < a->w; x++)
				for (i = 0; i < kh; i++)
					for (j = 0; j < kw; j++) {
						int64_t sy = (int64_t)(y * a->im2col.stride_h + i) -
							     a->im2col.pad_top;
						int64_t sx = (int64_t)(x * a->im2col.stride_w + j) -
							     a->im2col.pad_left;
						bool in = sy >= 0 && sy < H && sx >= 0 && sx < W;

						for (k = 0; k < c; k++, e++) {
							if (in)
								put_q(a, dst, e, src[((n * c + k) * H + sy) *
										     W + sx], inv);
							else	/* padding: the zero point, either width */
								put_q(a, dst, e, 0.0f, inv);
						}
					}
}

/*
 * fp32 NCHW (or rows) -> int8 NHWC (or rows), with rounding to nearest
 * even; int16 elements for an int16 act.
 */
void npu_segment_quantize_in(const struct npu_tensor *t, const struct npu_act *a,
			enum npu_layout layout, int8_t *dst)
{
	const float *src = t->data;
	float inv = 1.0f / a->q.scale;
	uint64_t hw = (uint64_t)a->h * a->w, n, c;

	if (layout == NPU_LAYOUT_ROWS) {
		put_q_run(a, dst, 0, 1, src, npu_act_elems(a), inv);
		return;
	}
	if (layout == NPU_LAYOUT_IM2COL) {
		quantize_im2col(t, a, dst, inv);
		return;
	}
	for (n = 0; n < a->n; n++)
		for (c = 0; c < a->c; c++)
			put_q_run(a, dst, n * hw * a->c + c, a->c,
				  src + (n * a->c + c) * hw, hw, inv);
}

void npu_segment_dequantize_out(const int8_t *src, const struct npu_act *a,
			   enum npu_layout layout, struct npu_tensor *t)
{
	float *dst = t->data;
	uint64_t hw = (uint64_t)a->h * a->w, n, p, c;

	if (layout == NPU_LAYOUT_ROWS) {
		uint64_t i, count = npu_act_elems(a);

		for (i = 0; i < count; i++)
			dst[i] = get_q(a, src, i);
		return;
	}
	for (n = 0; n < a->n; n++) {
		for (c = 0; c < a->c; c++) {
			float *plane = dst + (n * a->c + c) * hw;
			uint64_t base = n * hw * a->c + c;

			for (p = 0; p < hw; p++)
				plane[p] = get_q(a, src, base + p * a->c);
		}
	}
}
