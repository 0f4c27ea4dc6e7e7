// SPDX-License-Identifier: MIT
/*
 * GridSample over 2-D images (X: N, C, H, W; grid: N, Ho, Wo, 2 of
 * normalized (x, y) in [-1, 1]), fp32. Modes bilinear / nearest / bicubic
 * (opset 20 names: linear / cubic), padding zeros / border / reflection,
 * align_corners: the ONNX reference (PyTorch's grid_sampler) step by step
 * - denormalize, nearest rounds half to even, out-of-range coordinates
 * are clamped or reflected, then each tap is fetched with the padding
 * rule. 3-D (volumetric) sampling is rejected.
 */
#include <math.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/grid_sample.h"

static double npu_gs_denorm(double n, int64_t len, bool align)
{
	return align ? (n + 1) / 2.0 * (double)(len - 1) :
		       ((n + 1) * (double)len - 1) / 2.0;
}

/* Reflects x into [lo, hi] by the nearer border until it is inside. */
static double npu_gs_reflect(double x, double lo, double hi)
{
	double rng = hi - lo, dx, r;
	int64_t n;

	if (rng <= 0)
		return lo;
	if (x < lo) {
		dx = lo - x;
		n = (int64_t)(dx / rng);
		r = dx - (double)n * rng;
		return n % 2 == 0 ? lo + r : hi - r;
	}
	if (x > hi) {
		dx = x - hi;
		n = (int64_t)(dx / rng);
		r = dx - (double)n * rng;
		return n % 2 == 0 ? hi - r : lo + r;
	}
	return x;
}

/* Index i of a dim of 'len' under the padding rule; -1: a zero pixel. */
static int64_t npu_gs_index(int64_t i, int64_t len, const struct npu_gs_args *a)
{
	double lo = a->align ? 0 : -0.5, hi = a->align ? (double)len - 1 :
							  (double)len - 0.5;

	switch (a->pad) {
	case GS_ZEROS:
		return i >= 0 && i < len ? i : -1;
	case GS_BORDER:
		return i < 0 ? 0 : i >= len ? len - 1 : i;
	default:
		i = (int64_t)npu_gs_reflect((double)i, lo, hi);
		/* Guards a degenerate reflection from leaving the image. */
		return i < 0 ? 0 : i >= len ? len - 1 : i;
	}
}

static void npu_gs_cubic_coeffs(double t, double *c)
{
	const double A = -0.75;

	t = fabs(t);
	c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
	c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
	c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
	c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

/* Brings a coordinate outside [lo, hi] back in for border / reflection. */
static double npu_gs_fix_coord(double v, int64_t len,
			       const struct npu_gs_args *a)
{
	double lo = a->align ? 0 : -0.5, hi = a->align ? (double)len - 1 :
							  (double)len - 0.5;

	if (v >= lo && v <= hi)
		return v;
	if (a->pad == GS_BORDER)
		return v < 0 ? 0 : v > (double)(len - 1) ? (double)(len - 1) : v;
	if (a->pad == GS_REFLECTION)
		return npu_gs_reflect(v, lo, hi);
	return v;
}

static double npu_gs_pixel(const float *img, int64_t h, int64_t w, int64_t y,
			   int64_t x, const struct npu_gs_args *a)
{
	int64_t iy = npu_gs_index(y, h, a), ix = npu_gs_index(x, w, a);

	return iy < 0 || ix < 0 ? 0.0 : img[iy * w + ix];
}

static float npu_gs_sample(const float *img, int64_t h, int64_t w, double x,
			   double y, const struct npu_gs_args *a)
{
	double cx[4], cy[4], v = 0;
	int64_t x0, y0, i, j, taps, first;

	if (a->mode == GS_NEAREST) {
		x = npu_gs_fix_coord(nearbyint(x), w, a);
		y = npu_gs_fix_coord(nearbyint(y), h, a);
		if (!(fabs(x) < 1e9 && fabs(y) < 1e9))
			return 0.0f;
		return (float)npu_gs_pixel(img, h, w, (int64_t)y, (int64_t)x, a);
	}
	x = npu_gs_fix_coord(x, w, a);
	y = npu_gs_fix_coord(y, h, a);
	/* Coordinates far outside (zeros padding) only ever read zeros. */
	if (!(fabs(x) < 1e9 && fabs(y) < 1e9))
		return 0.0f;
	x0 = (int64_t)floor(x);
	y0 = (int64_t)floor(y);
	if (a->mode == GS_LINEAR) {
		cx[0] = 1 - (x - (double)x0);
		cx[1] = x - (double)x0;
		cy[0] = 1 - (y - (double)y0);
		cy[1] = y - (double)y0;
		taps = 2;
		first = 0;
	} else {
		npu_gs_cubic_coeffs(x - (double)x0, cx);
		npu_gs_cubic_coeffs(y - (double)y0, cy);
		taps = 4;
		first = -1;
	}
	for (i = 0; i < taps; i++) {
		double row = 0;

		for (j = 0; j < taps; j++)
			row += cx[j] * npu_gs_pixel(img, h, w, y0 + first + i,
						    x0 + first + j, a);
		v += cy[i] * row;
	}
	return (float)v;
}

static npu_status grid_sample_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t n = x->shape.dims[0], c = x->shape.dims[1];
	int64_t h = x->shape.dims[2], w = x->shape.dims[3];
	int64_t ho = grid->shape.dims[1], wo = grid->shape.dims[2];
	int64_t b, ch, p;
	const float *gv = grid->data;
	float *yv = y->data;
	struct npu_gs_args a;
	npu_status st;

	st = npu_gs_args(ctx->node, &a, ctx->err);
	if (st)
		return st;
	if (!h || !w) {
		if (npu_op_numel(y))
			memset(yv, 0, (size_t)npu_op_numel(y) * sizeof(float));
		return NPU_OK;
	}
	for (b = 0; b < n; b++)
		for (ch = 0; ch < c; ch++) {
			const float *img = (const float *)x->data + (b * c + ch) * h * w;

			for (p = 0; p < ho * wo; p++) {
				const float *g = gv + (b * ho * wo + p) * 2;
				/* The reference keeps coordinates in fp32. */
				float fx = (float)npu_gs_denorm(g[0], w, a.align);
				float fy = (float)npu_gs_denorm(g[1], h, a.align);

				yv[(b * c + ch) * ho * wo + p] =
					npu_gs_sample(img, h, w, fx, fy, &a);
			}
		}
	return NPU_OK;
}

NPU_CPU_OP_DEF(grid_sample) = {
	.op_type = "GridSample",
	.domain = "",
	.compute = grid_sample_compute,
};
