// SPDX-License-Identifier: MIT
/* The schemas of op_detect.c's ops: NonMaxSuppression, RoiAlign. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/detect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct npu_nms_cand {
	float score;
	int64_t idx;
};

static int npu_nms_cmp(const void *pa, const void *pb)
{
	const struct npu_nms_cand *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Corners (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2. */
static void npu_nms_corners(const float *b, bool center, float *c)
{
	if (center) {
		c[0] = b[1] - b[3] / 2;
		c[1] = b[0] - b[2] / 2;
		c[2] = b[1] + b[3] / 2;
		c[3] = b[0] + b[2] / 2;
	} else {
		c[0] = b[0] < b[2] ? b[0] : b[2];
		c[1] = b[1] < b[3] ? b[1] : b[3];
		c[2] = b[0] < b[2] ? b[2] : b[0];
		c[3] = b[1] < b[3] ? b[3] : b[1];
	}
}

static bool npu_nms_suppress(const float *a, const float *b, bool center,
			     float iou_th)
{
	float ca[4], cb[4], iy1, ix1, iy2, ix2, inter, area_a, area_b, uni;

	npu_nms_corners(a, center, ca);
	npu_nms_corners(b, center, cb);
	iy1 = ca[0] > cb[0] ? ca[0] : cb[0];
	ix1 = ca[1] > cb[1] ? ca[1] : cb[1];
	iy2 = ca[2] < cb[2] ? ca[2] : cb[2];
	ix2 = ca[3] < cb[3] ? ca[3] : cb[3];
	if (iy2 <= iy1 || ix2 <= ix1)
		return false;
	inter = (iy2 - iy1) * (ix2 - ix1);
	area_a = (ca[2] - ca[0]) * (ca[3] - ca[1]);
	area_b = (cb[2] - cb[0]) * (cb[3] - cb[1]);
	if (area_a <= 0 || area_b <= 0)
		return false;
	uni = area_a + area_b - inter;
	return uni > 0 && inter / uni > iou_th;
}

/*
 * Runs the selection; writes rows to 'out' (may be NULL to count) and
 * returns the number of selected boxes, or -1 when out of memory.
 */
int64_t npu_nms_run(const struct npu_nms_args *a, int64_t *out)
{
	struct npu_nms_cand *cand;
	int64_t *kept, total = 0, b, c, i, j;

	if (a->max_out <= 0 || !a->nboxes)
		return 0;
	cand = malloc((size_t)a->nboxes * sizeof(*cand));
	kept = malloc((size_t)a->nboxes * sizeof(*kept));
	if (!cand || !kept) {
		free(cand);
		free(kept);
		return -1;
	}
	for (b = 0; b < a->batches; b++)
		for (c = 0; c < a->classes; c++) {
			const float *sc = a->scores + (b * a->classes + c) * a->nboxes;
			const float *bx = a->boxes + b * a->nboxes * 4;
			int64_t n = 0, nk = 0;

			for (i = 0; i < a->nboxes; i++)
				if (sc[i] > a->score_th) {
					cand[n].score = sc[i];
					cand[n++].idx = i;
				}
			qsort(cand, (size_t)n, sizeof(*cand), npu_nms_cmp);
			for (i = 0; i < n && nk < a->max_out; i++) {
				bool keep = true;

				for (j = 0; j < nk && keep; j++)
					keep = !npu_nms_suppress(bx + cand[i].idx * 4,
								 bx + kept[j] * 4,
								 a->center, a->iou_th);
				if (!keep)
					continue;
				kept[nk++] = cand[i].idx;
				if (out) {
					out[total * 3] = b;
					out[total * 3 + 1] = c;
					out[total * 3 + 2] = cand[i].idx;
				}
				total++;
			}
		}
	free(cand);
	free(kept);
	return total;
}

/* Reads the arguments from the tensors t[0..4] (t[2..4] may be NULL). */
npu_status npu_nms_args(const struct npu_node *node,
			const struct npu_tensor *const *t,
			struct npu_nms_args *a, struct npu_error *err)
{
	static const char *const what[5] = {
		NULL, NULL, "max_output_boxes_per_class", "iou_threshold",
		"score_threshold",
	};
	int i;

	for (i = 2; i < 5; i++)
		if (t[i] && npu_op_numel(t[i]) != 1)
			return npu_op_invalid(err, node,
					      "input %d (%s) must hold one value",
					      i, what[i]);
	a->boxes = t[0]->data;
	a->scores = t[1]->data;
	a->batches = t[0]->shape.dims[0];
	a->nboxes = t[0]->shape.dims[1];
	a->classes = t[1]->shape.dims[1];
	a->max_out = t[2] ? npu_op_index_get(t[2], 0) : 0;
	a->iou_th = t[3] ? ((const float *)t[3]->data)[0] : 0.0f;
	a->score_th = t[4] ? ((const float *)t[4]->data)[0] : -INFINITY;
	a->center = npu_node_attr_int_or(node, "center_point_box", 0) != 0;
	if (a->iou_th < 0 || a->iou_th > 1)
		return npu_op_invalid(err, node,
				      "input 3 (iou_threshold) = %g is not in [0, 1]",
				      a->iou_th);
	return NPU_OK;
}

static npu_status non_max_suppression_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype f32[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_UNDEFINED,
	};
	static const enum npu_dtype i64[] = {
		NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *bs, *ss;
	const struct npu_tensor *c[5] = { NULL };
	int64_t cpb, rows = -1;
	bool all_const = true;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 5);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("center_point_box"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 2, i64);
	if (!st)
		st = npu_op_check_dtype(ctx, 3, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 4, f32);
	if (st)
		return st;
	cpb = npu_node_attr_int_or(node, "center_point_box", 0);
	if (cpb != 0 && cpb != 1)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'center_point_box' = %lld is not 0 or 1",
				      (long long)cpb);
	bs = &node->inputs[0]->shape;
	ss = &node->inputs[1]->shape;
	if (bs->rank != 3 || (bs->dims[2] >= 0 && bs->dims[2] != 4))
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' (boxes) must be [batches, boxes, 4]",
				      node->inputs[0]->name);
	if (ss->rank != 3)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (scores) must be [batches, classes, boxes]",
				      node->inputs[1]->name);
	if ((bs->dims[0] >= 0 && ss->dims[0] >= 0 && bs->dims[0] != ss->dims[0]) ||
	    (bs->dims[1] >= 0 && ss->dims[2] >= 0 && bs->dims[1] != ss->dims[2]))
		return npu_op_invalid(ctx->err, node,
				      "boxes and scores disagree on batches or box count");
	for (i = 0; i < node->num_inputs && i < 5; i++) {
		const struct npu_value *v = node->inputs[i];

		if (v && !v->constant)
			all_const = false;
		c[i] = v ? v->constant : NULL;
	}
	if (all_const) {
		struct npu_nms_args a;

		st = npu_nms_args(node, c, &a, ctx->err);
		if (st)
			return st;
		rows = npu_nms_run(&a, NULL);
		if (rows < 0)
			return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
					    "out of memory");
	}
	ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	ctx->out_shapes[0].rank = 2;
	ctx->out_shapes[0].dims[0] = rows;
	ctx->out_shapes[0].dims[1] = 3;
	return NPU_OK;
}

npu_status npu_roi_args(const struct npu_node *node,
			struct npu_roi_args *a, struct npu_error *err)
{
	const char *ctm = npu_node_attr_string_or(node,
						  "coordinate_transformation_mode",
						  node->opset >= 16 ? "half_pixel" :
								      "output_half_pixel");
	const char *mode = npu_node_attr_string_or(node, "mode", "avg");

	if (!strcmp(ctm, "half_pixel"))
		a->half_pixel = true;
	else if (!strcmp(ctm, "output_half_pixel"))
		a->half_pixel = false;
	else
		return npu_op_invalid(err, node,
				      "attribute 'coordinate_transformation_mode' = '%s' is not half_pixel or output_half_pixel",
				      ctm);
	if (strcmp(mode, "avg") && strcmp(mode, "max"))
		return npu_op_invalid(err, node,
				      "attribute 'mode' = '%s' is not avg or max", mode);
	a->max_mode = !strcmp(mode, "max");
	a->out_h = npu_node_attr_int_or(node, "output_height", 1);
	a->out_w = npu_node_attr_int_or(node, "output_width", 1);
	a->ratio = npu_node_attr_int_or(node, "sampling_ratio", 0);
	a->scale = npu_node_attr_float_or(node, "spatial_scale", 1.0f);
	if (a->out_h < 1 || a->out_w < 1 || a->ratio < 0)
		return npu_op_invalid(err, node,
				      "output_height / output_width must be positive and sampling_ratio not negative");
	return NPU_OK;
}

static npu_status roi_align_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype f32[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_UNDEFINED,
	};
	static const enum npu_dtype i64[] = {
		NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *rois, *bi;
	struct npu_roi_args a;
	npu_status st;

	st = npu_op_check_arity(ctx, 3, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("coordinate_transformation_mode",
							 "mode", "output_height",
							 "output_width",
							 "sampling_ratio",
							 "spatial_scale"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 2, i64);
	if (!st)
		st = npu_roi_args(node, &a, ctx->err);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	rois = &node->inputs[1]->shape;
	bi = &node->inputs[2]->shape;
	if (x->rank != 4)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected 4 (N, C, H, W)",
				      node->inputs[0]->name, x->rank);
	if (rois->rank != 2 || (rois->dims[1] >= 0 && rois->dims[1] != 4))
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (rois) must be [num_rois, 4]",
				      node->inputs[1]->name);
	if (bi->rank != 1 || (bi->dims[0] >= 0 && rois->dims[0] >= 0 &&
			      bi->dims[0] != rois->dims[0]))
		return npu_op_invalid(ctx->err, node,
				      "input 2 '%s' (batch_indices) must hold one index per roi",
				      node->inputs[2]->name);
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0].rank = 4;
	ctx->out_shapes[0].dims[0] = rois->dims[0];
	ctx->out_shapes[0].dims[1] = x->dims[1];
	ctx->out_shapes[0].dims[2] = a.out_h;
	ctx->out_shapes[0].dims[3] = a.out_w;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(non_max_suppression) = {
	.op_type = "NonMaxSuppression", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = non_max_suppression_infer,
};

NPU_OP_SCHEMA_DEF(roi_align) = {
	.op_type = "RoiAlign", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = roi_align_infer,
};
