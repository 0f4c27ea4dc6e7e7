// SPDX-License-Identifier: MIT
/* The schemas of op_resize.c's ops: Resize, Upsample. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool npu_is_upsample(const struct npu_node *node)
{
	return !strcmp(node->op_type, "Upsample");
}

static npu_status npu_resize_attrs(const struct npu_node *node,
				   struct npu_resize *rs, struct npu_error *err)
{
	const char *mode = npu_node_attr_string_or(node, "mode", "nearest");
	const char *ctm, *nm;

	if (!strcmp(mode, "nearest"))
		rs->mode = RS_NEAREST;
	else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear"))
		rs->mode = RS_LINEAR;
	else if (!strcmp(mode, "cubic") && !npu_is_upsample(node) && node->opset >= 11)
		rs->mode = RS_CUBIC;
	else
		return npu_op_unsupported(err, node, "mode '%s' is not supported", mode);
	rs->cubic_a = npu_node_attr_float_or(node, "cubic_coeff_a", -0.75f);
	rs->exclude_outside = npu_node_attr_int_or(node, "exclude_outside", 0) != 0;
	rs->extrapolation = npu_node_attr_float_or(node, "extrapolation_value", 0.0f);
	if (npu_is_upsample(node) || node->opset < 11) {
		/* Resize-10 / Upsample: asymmetric, nearest rounds down. */
		rs->ctm = CTM_ASYMMETRIC;
		rs->nearest = NM_FLOOR;
		return NPU_OK;
	}
	ctm = npu_node_attr_string_or(node, "coordinate_transformation_mode",
				      "half_pixel");
	if (!strcmp(ctm, "half_pixel"))
		rs->ctm = CTM_HALF_PIXEL;
	else if (!strcmp(ctm, "half_pixel_symmetric"))
		rs->ctm = CTM_HALF_PIXEL_SYMMETRIC;
	else if (!strcmp(ctm, "pytorch_half_pixel"))
		rs->ctm = CTM_PYTORCH_HALF_PIXEL;
	else if (!strcmp(ctm, "align_corners"))
		rs->ctm = CTM_ALIGN_CORNERS;
	else if (!strcmp(ctm, "asymmetric"))
		rs->ctm = CTM_ASYMMETRIC;
	else if (!strcmp(ctm, "tf_half_pixel_for_nn"))
		rs->ctm = CTM_TF_HALF_PIXEL_FOR_NN;
	else if (!strcmp(ctm, "tf_crop_and_resize"))
		rs->ctm = CTM_TF_CROP_AND_RESIZE;
	else
		return npu_op_unsupported(err, node,
					  "coordinate_transformation_mode '%s' is not supported",
					  ctm);
	nm = npu_node_attr_string_or(node, "nearest_mode", "round_prefer_floor");
	if (!strcmp(nm, "round_prefer_floor"))
		rs->nearest = NM_ROUND_PREFER_FLOOR;
	else if (!strcmp(nm, "round_prefer_ceil"))
		rs->nearest = NM_ROUND_PREFER_CEIL;
	else if (!strcmp(nm, "floor"))
		rs->nearest = NM_FLOOR;
	else if (!strcmp(nm, "ceil"))
		rs->nearest = NM_CEIL;
	else
		return npu_op_unsupported(err, node,
					  "nearest_mode '%s' is not supported", nm);
	if (npu_node_attr_int_or(node, "antialias", 0))
		return npu_op_unsupported(err, node, "antialias = 1 is not supported");
	return NPU_OK;
}

/* Reads a float input (scales / roi) into vals; -1: not constant. */
static npu_status npu_resize_floats(const struct npu_node *node,
				    const struct npu_tensor *t, size_t idx,
				    double *vals, int max, int *count,
				    struct npu_error *err)
{
	const struct npu_value *v = npu_op_input(node, idx);
	int64_t n, i;

	*count = 0;
	if (!t) {
		if (!v)
			return NPU_OK;
		if (!v->constant) {
			*count = npu_shape_numel(&v->shape) == 0 ? 0 : -1;
			return NPU_OK;
		}
		t = v->constant;
	}
	if (t->dtype != NPU_DTYPE_FLOAT && t->dtype != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(err, node, "input %zu has type %s",
					  idx, npu_dtype_name(t->dtype));
	n = npu_op_numel(t);
	if (n > max)
		return npu_op_invalid(err, node, "input %zu has %lld values",
				      idx, (long long)n);
	for (i = 0; i < n; i++)
		vals[i] = npu_op_tensor_get(t, (size_t)i);
	*count = (int)n;
	return NPU_OK;
}

/*
 * Fills rs from the node and input 0's shape; 't' holds compute-time
 * tensors (NULL at infer time: constants are used).
 */
npu_status npu_resize_setup(const struct npu_node *node,
			    const struct npu_shape *x,
			    const struct npu_tensor *const *t,
			    struct npu_resize *rs, struct npu_error *err)
{
	bool upsample = npu_is_upsample(node);
	int rank = x->rank, n_axes = rank, cnt_scales = 0, cnt_sizes = 0;
	int cnt_roi = 0, i;
	int64_t axes[NPU_MAX_RANK], sizes[NPU_MAX_RANK];
	double scales[NPU_MAX_RANK], roi[2 * NPU_MAX_RANK];
	size_t i_roi = 1, i_scales = 2, i_sizes = 3;
	npu_status st;

	memset(rs, 0, sizeof(*rs));
	st = npu_resize_attrs(node, rs, err);
	if (st)
		return st;
	rs->rank = rank;
	for (i = 0; i < rank; i++) {
		axes[i] = i;
		rs->in[i] = x->dims[i];
		rs->out[i] = x->dims[i];
		rs->scale[i] = 1.0;
		rs->roi_start[i] = 0.0;
		rs->roi_end[i] = 1.0;
	}
	if (upsample || node->opset < 11) {
		i_scales = 1;
		i_roi = i_sizes = (size_t)-1;
	}
	if (upsample && node->opset < 9) {
		const struct npu_attr *a = npu_node_attr(node, "scales");

		if (!a || a->type != NPU_ATTR_FLOATS || a->count != (size_t)rank)
			return npu_op_invalid(err, node, "scales attribute must have %d values", rank);
		for (i = 0; i < rank; i++)
			scales[i] = a->floats[i];
		cnt_scales = rank;
	} else {
		st = npu_resize_floats(node, t ? t[i_scales] : NULL, i_scales,
				       scales, NPU_MAX_RANK, &cnt_scales, err);
		if (st)
			return st;
	}
	if (i_sizes != (size_t)-1) {
		const struct npu_value *v = npu_op_input(node, i_sizes);

		if (t && t[i_sizes])
			st = npu_op_ints_from_tensor(node, t[i_sizes], "sizes",
						     sizes, NPU_MAX_RANK, &cnt_sizes, err);
		else if (!t && v && !v->constant && npu_shape_numel(&v->shape) == 0)
			cnt_sizes = 0;
		else if (!t)
			st = npu_op_ints_from_value(node, i_sizes, sizes,
						    NPU_MAX_RANK, &cnt_sizes, err);
		if (st)
			return st;
		st = npu_resize_floats(node, t ? t[i_roi] : NULL, i_roi, roi,
				       2 * NPU_MAX_RANK, &cnt_roi, err);
		if (st)
			return st;
	}
	if (node->opset >= 18 && !upsample) {
		int n;

		st = npu_op_ints_from_attr(node, "axes", axes, NPU_MAX_RANK, &n, err);
		if (st)
			return st;
		if (n) {
			n_axes = n;
			for (i = 0; i < n; i++) {
				int ax;

				st = npu_op_axis(err, node, "axes", axes[i], rank, &ax);
				if (st)
					return st;
				axes[i] = ax;
			}
		}
	}
	if (cnt_scales < 0 || cnt_sizes < 0 || cnt_roi < 0) {
		rs->known = false;
		return NPU_OK;
	}
	rs->known = true;
	if (cnt_scales && cnt_sizes)
		return npu_op_invalid(err, node, "both scales and sizes are given");
	if (!cnt_scales && !cnt_sizes)
		return npu_op_invalid(err, node, "neither scales nor sizes is given");
	if ((cnt_scales && cnt_scales != n_axes) || (cnt_sizes && cnt_sizes != n_axes))
		return npu_op_invalid(err, node,
				      "scales / sizes have %d values for %d axes",
				      cnt_scales ? cnt_scales : cnt_sizes, n_axes);
	if (rs->ctm == CTM_TF_CROP_AND_RESIZE) {
		if (cnt_roi != 2 * n_axes)
			return npu_op_invalid(err, node, "roi has %d values for %d axes",
					      cnt_roi, n_axes);
		for (i = 0; i < n_axes; i++) {
			rs->roi_start[axes[i]] = roi[i];
			rs->roi_end[axes[i]] = roi[i + n_axes];
		}
	}
	for (i = 0; i < rank; i++)
		if (x->dims[i] < 0)
			rs->known = false;
	if (cnt_scales) {
		for (i = 0; i < n_axes; i++) {
			int ax = (int)axes[i];

			if (scales[i] <= 0)
				return npu_op_invalid(err, node, "scale %g", scales[i]);
			rs->scale[ax] = (float)scales[i];
			if (x->dims[ax] >= 0)
				rs->out[ax] = (int64_t)floor((double)x->dims[ax] *
							     rs->scale[ax]);
		}
		return NPU_OK;
	}
	{
		const char *policy = npu_node_attr_string_or(node,
					"keep_aspect_ratio_policy", "stretch");
		bool not_larger = !strcmp(policy, "not_larger");
		double s = not_larger ? INFINITY : 0;

		if (strcmp(policy, "stretch") && !not_larger &&
		    strcmp(policy, "not_smaller"))
			return npu_op_unsupported(err, node,
						  "keep_aspect_ratio_policy '%s'", policy);
		if (!rs->known)
			return NPU_OK;
		for (i = 0; i < n_axes; i++) {
			int ax = (int)axes[i];
			double r = (double)sizes[i] / (double)x->dims[ax];

			if (sizes[i] < 0)
				return npu_op_invalid(err, node, "sizes[%d] = %lld", i,
						      (long long)sizes[i]);
			rs->out[ax] = sizes[i];
			rs->scale[ax] = r;
			s = not_larger ? fmin(s, r) : fmax(s, r);
		}
		if (strcmp(policy, "stretch"))
			for (i = 0; i < n_axes; i++) {
				int ax = (int)axes[i];

				rs->scale[ax] = s;
				rs->out[ax] = (int64_t)nearbyint(s * (double)x->dims[ax]);
			}
	}
	return NPU_OK;
}

/* Nearest mode picks input elements: any fixed-size type, by index. */
static bool npu_resize_gathers(const struct npu_node *node, enum npu_dtype dt)
{
	return dt != NPU_DTYPE_STRING && npu_dtype_size(dt) > 0 &&
	       !strcmp(npu_node_attr_string_or(node, "mode", "nearest"), "nearest") &&
	       strcmp(npu_node_attr_string_or(node, "coordinate_transformation_mode", ""),
		      "tf_crop_and_resize");
}

static npu_status npu_resize_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	bool upsample = npu_is_upsample(node);
	const struct npu_value *x;
	struct npu_resize rs;
	size_t max_in = upsample ? (node->opset < 9 ? 1 : 2) :
			(node->opset < 11 ? 2 : 4);
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, upsample && node->opset < 9 ? 1 :
				(node->opset < 11 || upsample ? 2 : 1), max_in);
	if (!st)
		st = upsample ? npu_op_check_attrs(ctx, NPU_OP_ATTRS("mode", "scales")) :
		     node->opset < 11 ? npu_op_check_attrs(ctx, NPU_OP_ATTRS("mode")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("antialias", "axes",
							 "coordinate_transformation_mode",
							 "cubic_coeff_a", "exclude_outside",
							 "extrapolation_value",
							 "keep_aspect_ratio_policy",
							 "mode", "nearest_mode"));
	if (st)
		return st;
	x = node->inputs[0];
	/*
	 * The float kernel; float16 / bfloat16 widened to it; double in
	 * double; every other fixed-size type in nearest mode
	 * (npu_resize_gather).
	 */
	if (npu_op_wide_dtype(x->dtype, false) != NPU_DTYPE_FLOAT &&
	    x->dtype != NPU_DTYPE_DOUBLE && !npu_resize_gathers(node, x->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	st = npu_resize_setup(node, &x->shape, NULL, &rs, ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0].rank = x->shape.rank;
	for (i = 0; i < x->shape.rank; i++)
		ctx->out_shapes[0].dims[i] = rs.known ? rs.out[i] : -1;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(resize) = {
	.op_type = "Resize", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = npu_resize_infer,
};

NPU_OP_SCHEMA_DEF(upsample) = {
	.op_type = "Upsample", .domain = "",
	.since_version = 7, .max_version = 9,
	.infer = npu_resize_infer,
};
