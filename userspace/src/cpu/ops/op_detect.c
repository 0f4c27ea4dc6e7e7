// SPDX-License-Identifier: MIT
/*
 * Detection ops: RoiAlign (ONNX Runtime's sampling: bilinear samples on
 * a grid per bin, averaged or maxed) and NonMaxSuppression. NMS: per
 * batch and class, the boxes scoring above score_threshold are taken best
 * first (ties: lower box index first) and kept unless their IoU with an
 * already kept box exceeds iou_threshold, up to
 * max_output_boxes_per_class; the output lists [batch, class, box] in
 * that order. Its row count depends on the values, so infer() runs the
 * selection when every input is constant and leaves it unknown (-1)
 * otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/detect.h"

static npu_status non_max_suppression_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *t[5] = { NULL };
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_nms_args a;
	int64_t *rows, n;
	size_t i;
	npu_status st;

	for (i = 0; i < 5; i++)
		t[i] = npu_op_in(ctx, i);
	st = npu_nms_args(ctx->node, t, &a, ctx->err);
	if (st)
		return st;
	n = npu_nms_run(&a, NULL);
	if (n < 0)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	if (n != y->shape.dims[0])
		return npu_op_invalid(ctx->err, ctx->node,
				      "output has room for %lld boxes, %lld selected",
				      (long long)y->shape.dims[0], (long long)n);
	rows = y->data;
	if (n && npu_nms_run(&a, rows) < 0)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	return NPU_OK;
}

NPU_CPU_OP_DEF(non_max_suppression) = {
	.op_type = "NonMaxSuppression",
	.domain = "",
	.compute = non_max_suppression_compute,
};

/* ---- RoiAlign ---- */

/*
 * One bilinear sample at (y, x) as ONNX Runtime's RoiAlign takes it:
 * outside [-1, size] contributes 0, else clamped to the image; 'max'
 * returns the largest weighted corner instead of their sum.
 */
static float npu_roi_sample(const float *img, int64_t h, int64_t w, double y,
			    double x, bool max_mode)
{
	int64_t y0, x0, y1, x1;
	double ly, lx, v[4], wt[4], r;
	int i;

	if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w)
		return 0.0f;
	y = y <= 0 ? 0 : y;
	x = x <= 0 ? 0 : x;
	y0 = (int64_t)y;
	x0 = (int64_t)x;
	if (y0 >= h - 1) {
		y0 = y1 = h - 1;
		y = (double)y0;
	} else {
		y1 = y0 + 1;
	}
	if (x0 >= w - 1) {
		x0 = x1 = w - 1;
		x = (double)x0;
	} else {
		x1 = x0 + 1;
	}
	ly = y - (double)y0;
	lx = x - (double)x0;
	v[0] = img[y0 * w + x0];
	v[1] = img[y0 * w + x1];
	v[2] = img[y1 * w + x0];
	v[3] = img[y1 * w + x1];
	wt[0] = (1 - ly) * (1 - lx);
	wt[1] = (1 - ly) * lx;
	wt[2] = ly * (1 - lx);
	wt[3] = ly * lx;
	r = max_mode ? wt[0] * v[0] : 0;
	for (i = 0; i < 4; i++)
		r = max_mode ? fmax(r, wt[i] * v[i]) : r + wt[i] * v[i];
	return (float)r;
}

static npu_status roi_align_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *rois = ctx->inputs[1];
	const struct npu_tensor *bi = ctx->inputs[2];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t n = x->shape.dims[0], c = x->shape.dims[1];
	int64_t h = x->shape.dims[2], w = x->shape.dims[3];
	int64_t nr = rois->shape.dims[0], r, ch, ph, pw, iy, ix;
	const float *rv = rois->data;
	float *yv = y->data;
	struct npu_roi_args a;
	npu_status st;

	st = npu_roi_args(ctx->node, &a, ctx->err);
	if (st)
		return st;
	for (r = 0; r < nr; r++) {
		int64_t b = ((const int64_t *)bi->data)[r];
		double off = a.half_pixel ? 0.5 : 0.0;
		double sw = rv[r * 4] * a.scale - off, sh = rv[r * 4 + 1] * a.scale - off;
		double ew = rv[r * 4 + 2] * a.scale - off, eh = rv[r * 4 + 3] * a.scale - off;
		double rw = ew - sw, rh = eh - sh, bw, bh;
		int64_t gh, gw, cnt;

		if (b < 0 || b >= n)
			return npu_op_invalid(ctx->err, ctx->node,
					      "batch index %lld of roi %lld is out of range for batch %lld",
					      (long long)b, (long long)r, (long long)n);
		if (!a.half_pixel) {
			rw = rw > 1 ? rw : 1;
			rh = rh > 1 ? rh : 1;
		}
		bh = rh / (double)a.out_h;
		bw = rw / (double)a.out_w;
		gh = a.ratio ? a.ratio : (int64_t)ceil(rh / (double)a.out_h);
		gw = a.ratio ? a.ratio : (int64_t)ceil(rw / (double)a.out_w);
		if (gh < 0 || gw < 0 || gh > 4096 || gw > 4096)
			return npu_op_invalid(ctx->err, ctx->node,
					      "roi %lld gives a sampling grid of %lld x %lld",
					      (long long)r, (long long)gh, (long long)gw);
		cnt = gh * gw > 1 ? gh * gw : 1;
		for (ch = 0; ch < c; ch++) {
			const float *img = (const float *)x->data + (b * c + ch) * h * w;

			for (ph = 0; ph < a.out_h; ph++)
				for (pw = 0; pw < a.out_w; pw++) {
					double acc = 0;
					bool first = true;

					for (iy = 0; iy < gh; iy++)
						for (ix = 0; ix < gw; ix++) {
							double yy = sh + (double)ph * bh +
								    ((double)iy + 0.5) * bh / (double)gh;
							double xx = sw + (double)pw * bw +
								    ((double)ix + 0.5) * bw / (double)gw;
							float v = npu_roi_sample(img, h, w, yy, xx,
										 a.max_mode);

							if (!a.max_mode)
								acc += v;
							else if (first || v > acc)
								acc = v;
							first = false;
						}
					yv[((r * c + ch) * a.out_h + ph) * a.out_w + pw] =
						(float)(a.max_mode ? acc : acc / (double)cnt);
				}
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(roi_align) = {
	.op_type = "RoiAlign",
	.domain = "",
	.compute = roi_align_compute,
};
