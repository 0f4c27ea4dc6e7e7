// SPDX-License-Identifier: MIT
/* The schemas of op_cumsum.c's ops: CumSum. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/cumsum.h"


npu_status npu_cumsum_axis(const struct npu_node *node,
			   const struct npu_tensor *t, int rank,
			   int *axis, struct npu_error *err)
{
	if (t->dtype != NPU_DTYPE_INT32 && t->dtype != NPU_DTYPE_INT64)
		return npu_op_invalid(err, node,
				      "input 1 (axis) has type %s, expected int32 or int64",
				      npu_dtype_name(t->dtype));
	if (npu_op_numel(t) != 1)
		return npu_op_invalid(err, node,
				      "input 1 (axis) must hold one value");
	return npu_op_axis(err, node, "axis", npu_op_index_get(t, 0), rank,
			   axis);
}

static npu_status cum_sum_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_INT32,
		NPU_DTYPE_INT64, NPU_DTYPE_UINT32, NPU_DTYPE_UINT64,
		NPU_DTYPE_FLOAT16, NPU_DTYPE_BFLOAT16,	/* widened to float */
		NPU_DTYPE_UNDEFINED,
	};
	static const enum npu_dtype axis_types[] = {
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *ax;
	int axis;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("exclusive", "reverse"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, axis_types);
	if (st)
		return st;
	x = node->inputs[0];
	ax = node->inputs[1];
	if (ax->shape.rank > 1 || npu_shape_numel(&ax->shape) > 1)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (axis) must be a scalar",
				      ax->name);
	if (ax->constant) {
		st = npu_cumsum_axis(node, ax->constant, x->shape.rank, &axis,
				     ctx->err);
		if (st)
			return st;
	}
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(cum_sum) = {
	.op_type = "CumSum", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = cum_sum_infer,
};
