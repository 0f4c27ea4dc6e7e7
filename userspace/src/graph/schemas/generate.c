// SPDX-License-Identifier: MIT
/* The schemas of op_generate.c's ops: EyeLike, OneHot, Range and the windows (Hann, Hamming, Blackman). */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/generate.h"

#include <math.h>
#include <string.h>

int64_t npu_gen_int_get(const struct npu_tensor *t, size_t i)
{
	if (t->dtype == NPU_DTYPE_INT16)
		return ((const int16_t *)t->data)[i];
	return npu_op_index_get(t, i);
}

bool npu_range_is_int(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_INT16 || dt == NPU_DTYPE_INT32 ||
	       dt == NPU_DTYPE_INT64;
}

/* max(ceil((limit - start) / delta), 0), in the inputs' type's arithmetic. */
npu_status npu_range_count(const struct npu_node *node,
			   const struct npu_tensor *const *t,
			   int64_t *count, struct npu_error *err)
{
	if (npu_range_is_int(t[0]->dtype)) {
		int64_t start = npu_gen_int_get(t[0], 0);
		int64_t limit = npu_gen_int_get(t[1], 0);
		int64_t delta = npu_gen_int_get(t[2], 0);
		int64_t span;

		if (!delta)
			return npu_op_invalid(err, node, "input 2 (delta) is 0");
		if (__builtin_sub_overflow(limit, start, &span) ||
		    span == INT64_MIN || delta == INT64_MIN)
			return npu_op_invalid(err, node,
					      "range %lld .. %lld overflows int64",
					      (long long)start, (long long)limit);
		if ((span > 0) != (delta > 0) || !span)
			*count = 0;
		else
			*count = span / delta + (span % delta != 0);
	} else {
		double start = npu_op_tensor_get(t[0], 0);
		double limit = npu_op_tensor_get(t[1], 0);
		double delta = npu_op_tensor_get(t[2], 0);
		double n;

		if (delta == 0 || isnan(delta))
			return npu_op_invalid(err, node,
					      "input 2 (delta) is 0 or NaN");
		n = ceil((limit - start) / delta);
		if (!(n < 1e12))
			return npu_op_invalid(err, node,
					      "range of %g elements is too large",
					      n);
		*count = n > 0 ? (int64_t)n : 0;
	}
	return NPU_OK;
}

static npu_status range_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_INT16,
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *c[3];
	int64_t count = -1;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 3, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	for (i = 0; !st && i < 3; i++)
		st = npu_op_check_dtype(ctx, i, types);
	if (st)
		return st;
	for (i = 0; i < 3; i++) {
		const struct npu_value *v = node->inputs[i];

		if (v->dtype != node->inputs[0]->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input %zu '%s' has type %s, input 0 %s",
					      i, v->name, npu_dtype_name(v->dtype),
					      npu_dtype_name(node->inputs[0]->dtype));
		if (npu_shape_numel(&v->shape) > 1)
			return npu_op_invalid(ctx->err, node,
					      "input %zu '%s' must be a scalar",
					      i, v->name);
		c[i] = v->constant;
	}
	if (c[0] && c[1] && c[2]) {
		st = npu_range_count(node, c, &count, ctx->err);
		if (st)
			return st;
	}
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = 1;
	ctx->out_shapes[0].dims[0] = count;
	return NPU_OK;
}

static bool npu_eye_type_ok(enum npu_dtype dt)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: case NPU_DTYPE_DOUBLE: case NPU_DTYPE_FLOAT16:
	case NPU_DTYPE_INT8: case NPU_DTYPE_UINT8: case NPU_DTYPE_INT16:
	case NPU_DTYPE_UINT16: case NPU_DTYPE_INT32: case NPU_DTYPE_UINT32:
	case NPU_DTYPE_INT64: case NPU_DTYPE_UINT64: case NPU_DTYPE_BOOL:
		return true;
	default:
		return false;
	}
}

static npu_status eye_like_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	const struct npu_attr *dt_attr = npu_node_attr(node, "dtype");
	enum npu_dtype dt;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("dtype", "k"));
	if (st)
		return st;
	x = node->inputs[0];
	if (x->shape.rank != 2)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected 2",
				      x->name, x->shape.rank);
	if (!npu_eye_type_ok(x->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	dt = dt_attr ? (enum npu_dtype)dt_attr->i : x->dtype;
	if (dt_attr && (dt_attr->type != NPU_ATTR_INT || !npu_eye_type_ok(dt)))
		return npu_op_unsupported(ctx->err, node,
					  "attribute 'dtype' = %lld (%s) is not supported",
					  (long long)dt_attr->i,
					  npu_dtype_name(dt));
	ctx->out_dtypes[0] = dt;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

npu_status npu_onehot_depth(const struct npu_node *node,
			    const struct npu_tensor *t, int64_t *depth,
			    struct npu_error *err)
{
	double d;

	if (npu_op_numel(t) != 1)
		return npu_op_invalid(err, node,
				      "input 1 (depth) must be a single value");
	d = npu_op_tensor_get(t, 0);
	if (!(d >= 1 && d < 1e9))
		return npu_op_invalid(err, node,
				      "input 1 (depth) = %g is not a positive count",
				      d);
	*depth = (int64_t)d;
	return NPU_OK;
}

static const enum npu_dtype npu_onehot_num_types[] = {
	NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_INT8, NPU_DTYPE_UINT8,
	NPU_DTYPE_INT16, NPU_DTYPE_UINT16, NPU_DTYPE_INT32, NPU_DTYPE_UINT32,
	NPU_DTYPE_INT64, NPU_DTYPE_UINT64, NPU_DTYPE_UNDEFINED,
};

static npu_status one_hot_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *idx, *depth, *vals;
	struct npu_shape *out = &ctx->out_shapes[0];
	int64_t d = -1;
	int axis, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 3, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, npu_onehot_num_types);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, npu_onehot_num_types);
	if (st)
		return st;
	idx = node->inputs[0];
	depth = node->inputs[1];
	vals = node->inputs[2];
	if (!npu_dtype_size(vals->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input 2 '%s' has type %s, not supported",
					  vals->name, npu_dtype_name(vals->dtype));
	if (vals->shape.rank != 1 ||
	    (vals->shape.dims[0] >= 0 && vals->shape.dims[0] != 2))
		return npu_op_invalid(ctx->err, node,
				      "input 2 '%s' (values) must be [off_value, on_value]",
				      vals->name);
	if (idx->shape.rank + 1 > NPU_MAX_RANK)
		return npu_op_unsupported(ctx->err, node, "output rank > %d",
					  NPU_MAX_RANK);
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", -1),
			 idx->shape.rank + 1, &axis);
	if (!st && depth->constant)
		st = npu_onehot_depth(node, depth->constant, &d, ctx->err);
	if (st)
		return st;
	out->rank = idx->shape.rank + 1;
	for (i = 0; i < out->rank; i++)
		out->dims[i] = i < axis ? idx->shape.dims[i] :
			       i == axis ? d : idx->shape.dims[i - 1];
	ctx->out_dtypes[0] = vals->dtype;
	return NPU_OK;
}

npu_status npu_window_size(const struct npu_node *node,
			   const struct npu_tensor *t, int64_t *size,
			   struct npu_error *err)
{
	if ((t->dtype != NPU_DTYPE_INT32 && t->dtype != NPU_DTYPE_INT64) ||
	    npu_op_numel(t) != 1)
		return npu_op_invalid(err, node,
				      "input 0 (size) must be one int32 or int64");
	*size = npu_op_index_get(t, 0);
	if (*size < 0)
		return npu_op_invalid(err, node, "input 0 (size) = %lld is negative",
				      (long long)*size);
	return NPU_OK;
}

static npu_status npu_window_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype size_types[] = {
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *sz;
	enum npu_dtype dt;
	int64_t n = -1;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("output_datatype",
							 "periodic"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, size_types);
	if (st)
		return st;
	sz = node->inputs[0];
	dt = (enum npu_dtype)npu_node_attr_int_or(node, "output_datatype",
						  NPU_DTYPE_FLOAT);
	if (!npu_eye_type_ok(dt) || dt == NPU_DTYPE_BOOL ||
	    dt == NPU_DTYPE_FLOAT16)
		return npu_op_unsupported(ctx->err, node,
					  "attribute 'output_datatype' = %d (%s) is not supported",
					  (int)dt, npu_dtype_name(dt));
	if (sz->constant) {
		st = npu_window_size(node, sz->constant, &n, ctx->err);
		if (st)
			return st;
	}
	ctx->out_dtypes[0] = dt;
	ctx->out_shapes[0].rank = 1;
	ctx->out_shapes[0].dims[0] = n;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(range) = {
	.op_type = "Range", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = range_infer,
};

NPU_OP_SCHEMA_DEF(eye_like) = {
	.op_type = "EyeLike", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = eye_like_infer,
};

NPU_OP_SCHEMA_DEF(one_hot) = {
	.op_type = "OneHot", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = one_hot_infer,
};

#define WINDOW_SCHEMA(sym, name)					\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = "",					\
	.since_version = 17, .max_version = 21,				\
	.infer = npu_window_infer,					\
};

WINDOW_SCHEMA(hann_window, "HannWindow")
WINDOW_SCHEMA(hamming_window, "HammingWindow")
WINDOW_SCHEMA(blackman_window, "BlackmanWindow")
