// SPDX-License-Identifier: MIT
/* The schemas of op_softmax.c's ops: LogSoftmax, Softmax. */
#include "graph/schemas/schema_common.h"

#include <math.h>
#include <stdlib.h>

static npu_status npu_softmax_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int64_t def_axis = node->opset < 13 ? 1 : -1;
	int axis;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (st)
		return st;
	x = node->inputs[0];
	/* Kernels: float (float16 / bfloat16 widened to it) and double. */
	if (npu_op_wide_dtype(x->dtype, false) != NPU_DTYPE_FLOAT && x->dtype != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (x->shape.rank == 0)
		return npu_op_invalid(ctx->err, node, "input is a scalar");
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", def_axis),
			 x->shape.rank, &axis);
	if (st)
		return st;
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(softmax) = {
	.op_type = "Softmax", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = npu_softmax_infer,
};

NPU_OP_SCHEMA_DEF(log_softmax) = {
	.op_type = "LogSoftmax", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = npu_softmax_infer,
};
