// SPDX-License-Identifier: MIT
/* The schemas of op_layout.c's ops: DepthToSpace, ReverseSequence, SpaceToDepth, Trilu. */
#include "graph/schemas/schema_common.h"

#include <string.h>

static npu_status npu_layout_check_sized(const struct npu_infer_ctx *ctx,
					 size_t i)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);

	if (v && !npu_dtype_size(v->dtype))
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input %zu '%s' has type %s, not supported",
					  i, v->name, npu_dtype_name(v->dtype));
	return NPU_OK;
}

static npu_status trilu_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype k_types[] = {
		NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *k;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("upper"));
	if (!st)
		st = npu_layout_check_sized(ctx, 0);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, k_types);
	if (st)
		return st;
	x = node->inputs[0];
	k = npu_op_input(node, 1);
	if (x->shape.rank < 2)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected at least 2",
				      x->name, x->shape.rank);
	if (k && npu_shape_numel(&k->shape) > 1)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (k) must be a single value",
				      k->name);
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

static npu_status npu_d2s_infer(struct npu_infer_ctx *ctx, bool to_space)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	const struct npu_attr *bs = npu_node_attr(node, "blocksize");
	struct npu_shape *out = &ctx->out_shapes[0];
	const char *mode;
	int64_t b;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = to_space && node->opset >= 11 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("blocksize", "mode")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("blocksize"));
	if (!st)
		st = npu_layout_check_sized(ctx, 0);
	if (st)
		return st;
	x = node->inputs[0];
	if (!bs || bs->type != NPU_ATTR_INT || bs->i <= 0)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'blocksize' is missing or not positive");
	b = bs->i;
	mode = npu_node_attr_string_or(node, "mode", "DCR");
	if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
		return npu_op_invalid(ctx->err, node,
				      "attribute 'mode' = '%s' is not DCR or CRD",
				      mode);
	if (x->shape.rank != 4)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected 4 (NCHW)",
				      x->name, x->shape.rank);
	*out = x->shape;
	if (to_space) {
		if (x->shape.dims[1] >= 0 && x->shape.dims[1] % (b * b))
			return npu_op_invalid(ctx->err, node,
					      "channels %lld are not a multiple of blocksize^2 = %lld",
					      (long long)x->shape.dims[1],
					      (long long)(b * b));
		if (out->dims[1] >= 0)
			out->dims[1] /= b * b;
		if (out->dims[2] >= 0)
			out->dims[2] *= b;
		if (out->dims[3] >= 0)
			out->dims[3] *= b;
	} else {
		if ((x->shape.dims[2] >= 0 && x->shape.dims[2] % b) ||
		    (x->shape.dims[3] >= 0 && x->shape.dims[3] % b))
			return npu_op_invalid(ctx->err, node,
					      "height and width must be multiples of blocksize %lld",
					      (long long)b);
		if (out->dims[1] >= 0)
			out->dims[1] *= b * b;
		if (out->dims[2] >= 0)
			out->dims[2] /= b;
		if (out->dims[3] >= 0)
			out->dims[3] /= b;
	}
	ctx->out_dtypes[0] = x->dtype;
	return NPU_OK;
}

static npu_status depth_to_space_infer(struct npu_infer_ctx *ctx)
{
	return npu_d2s_infer(ctx, true);
}

static npu_status space_to_depth_infer(struct npu_infer_ctx *ctx)
{
	return npu_d2s_infer(ctx, false);
}

static npu_status reverse_sequence_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype len_types[] = {
		NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *lens;
	int64_t batch_axis, time_axis;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("batch_axis",
							 "time_axis"));
	if (!st)
		st = npu_layout_check_sized(ctx, 0);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, len_types);
	if (st)
		return st;
	x = node->inputs[0];
	lens = node->inputs[1];
	batch_axis = npu_node_attr_int_or(node, "batch_axis", 1);
	time_axis = npu_node_attr_int_or(node, "time_axis", 0);
	if (x->shape.rank < 2)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected at least 2",
				      x->name, x->shape.rank);
	if (batch_axis < 0 || batch_axis > 1)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'batch_axis' = %lld is not 0 or 1",
				      (long long)batch_axis);
	if (time_axis < 0 || time_axis > 1 || time_axis == batch_axis)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'time_axis' = %lld is not the other of 0 and 1",
				      (long long)time_axis);
	if (lens->shape.rank != 1 ||
	    (lens->shape.dims[0] >= 0 && x->shape.dims[batch_axis] >= 0 &&
	     lens->shape.dims[0] != x->shape.dims[batch_axis]))
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (sequence_lens) must be 1-D with one length per batch",
				      lens->name);
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(trilu) = {
	.op_type = "Trilu", .domain = "",
	.since_version = 14, .max_version = 21,
	.infer = trilu_infer,
};

NPU_OP_SCHEMA_DEF(depth_to_space) = {
	.op_type = "DepthToSpace", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = depth_to_space_infer,
};

NPU_OP_SCHEMA_DEF(space_to_depth) = {
	.op_type = "SpaceToDepth", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = space_to_depth_infer,
};

NPU_OP_SCHEMA_DEF(reverse_sequence) = {
	.op_type = "ReverseSequence", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = reverse_sequence_infer,
};
