// SPDX-License-Identifier: MIT
/* The schemas of op_quant.c's ops: ConvInteger, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearConv, QLinearMatMul, QuantizeLinear. */
#include "graph/schemas/schema_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool npu_is_q8(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_UINT8 || dt == NPU_DTYPE_INT8;
}

/* Checks a scale / zero point: one value, or one per channel of 'axis'. */
static npu_status npu_q_param(const struct npu_infer_ctx *ctx, size_t i,
			      int64_t per_axis_len, bool allow_per_axis)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);
	int64_t n;

	if (!v)
		return NPU_OK;
	n = npu_shape_numel(&v->shape);
	if (n == 1 && v->shape.rank <= 1)
		return NPU_OK;
	if (allow_per_axis && v->shape.rank == 1 &&
	    (n < 0 || per_axis_len < 0 || n == per_axis_len))
		return NPU_OK;
	return npu_op_unsupported(ctx->err, ctx->node,
				  "input %zu '%s' must be a scalar%s", i, v->name,
				  allow_per_axis ? " or 1-D per channel" : "");
}

static npu_status npu_qdq_infer(struct npu_infer_ctx *ctx, bool quant)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *zp;
	int64_t axis_len = -1;
	int axis = 0;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 13 ? NPU_OP_ATTRS(NULL) :
					NPU_OP_ATTRS("axis", "saturate"));
	if (st)
		return st;
	x = node->inputs[0];
	zp = npu_op_input(node, 2);
	if (quant ? x->dtype != NPU_DTYPE_FLOAT :
		    !(npu_is_q8(x->dtype) || x->dtype == NPU_DTYPE_INT32))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (node->inputs[1]->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "scale has type %s, not supported",
					  npu_dtype_name(node->inputs[1]->dtype));
	if (zp && (quant ? !npu_is_q8(zp->dtype) : zp->dtype != x->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "zero point has type %s, not supported",
					  npu_dtype_name(zp->dtype));
	if (x->shape.rank > 0 && npu_op_input(node, 1)->shape.rank == 1 &&
	    npu_shape_numel(&node->inputs[1]->shape) != 1) {
		st = npu_op_axis(ctx->err, node, "axis",
				 npu_node_attr_int_or(node, "axis", 1),
				 x->shape.rank, &axis);
		if (st)
			return st;
		axis_len = x->shape.dims[axis];
	}
	st = npu_q_param(ctx, 1, axis_len, node->opset >= 13 && x->shape.rank > 0);
	if (!st)
		st = npu_q_param(ctx, 2, axis_len, node->opset >= 13 && x->shape.rank > 0);
	if (st)
		return st;
	ctx->out_dtypes[0] = quant ? (zp ? zp->dtype : NPU_DTYPE_UINT8)
				   : NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

static npu_status quantize_infer(struct npu_infer_ctx *ctx)
{
	return npu_qdq_infer(ctx, true);
}

static npu_status dequantize_infer(struct npu_infer_ctx *ctx)
{
	return npu_qdq_infer(ctx, false);
}

/* Inputs (value, scale, zero point) at i, i+1, i+2. */
static npu_status npu_qtriple(const struct npu_infer_ctx *ctx, size_t i,
			      bool data_too, int64_t per_channel)
{
	const struct npu_node *node = ctx->node;
	npu_status st;

	if (data_too && !npu_is_q8(node->inputs[i]->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input %zu '%s' has type %s, not supported",
					  i, node->inputs[i]->name,
					  npu_dtype_name(node->inputs[i]->dtype));
	if (node->inputs[i + 1]->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "input %zu (scale) has type %s",
					  i + 1, npu_dtype_name(node->inputs[i + 1]->dtype));
	if (node->inputs[i + 2]->dtype != (data_too ? node->inputs[i]->dtype :
					   node->inputs[i + 2]->dtype) ||
	    !npu_is_q8(node->inputs[i + 2]->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input %zu (zero point) has type %s",
					  i + 2, npu_dtype_name(node->inputs[i + 2]->dtype));
	st = npu_q_param(ctx, i + 1, per_channel, per_channel != -2);
	if (!st)
		st = npu_q_param(ctx, i + 2, per_channel, per_channel != -2);
	return st;
}

static npu_status qlinear_matmul_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *a, *b;
	struct npu_shape ba, bb;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 8, 8);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	a = &node->inputs[0]->shape;
	b = &node->inputs[3]->shape;
	if (a->rank < 2 || b->rank < 2)
		return npu_op_unsupported(ctx->err, node,
					  "1-D operands are not supported");
	st = npu_qtriple(ctx, 0, true, -2);
	if (!st)
		st = npu_qtriple(ctx, 3, true, b->dims[b->rank - 1]);
	if (!st)
		st = npu_qtriple(ctx, 5, false, -2);
	if (st)
		return st;
	if (a->dims[a->rank - 1] >= 0 && b->dims[b->rank - 2] >= 0 &&
	    a->dims[a->rank - 1] != b->dims[b->rank - 2])
		return npu_op_invalid(ctx->err, node, "inner dimensions differ");
	ba = *a;
	ba.rank -= 2;
	bb = *b;
	bb.rank -= 2;
	st = npu_op_broadcast_shape(ctx, &ba, &bb, &ctx->out_shapes[0]);
	if (st)
		return st;
	i = ctx->out_shapes[0].rank;
	ctx->out_shapes[0].dims[i] = a->dims[a->rank - 2];
	ctx->out_shapes[0].dims[i + 1] = b->dims[b->rank - 1];
	ctx->out_shapes[0].rank = i + 2;
	ctx->out_dtypes[0] = node->inputs[7]->dtype;
	return NPU_OK;
}

/* QLinearConv / ConvInteger: 1-D or 2-D X, W of X's rank and known shape. */
static npu_status check_conv_shapes(const struct npu_infer_ctx *ctx, const struct npu_shape *x,
				    const struct npu_shape *w)
{
	const struct npu_node *node = ctx->node;
	int i;

	if (x->rank == 5)
		return npu_op_unsupported(ctx->err, node,
					  "3-D convolution is not supported");
	if (x->rank != 3 && x->rank != 4)
		return npu_op_invalid(ctx->err, node, "X has rank %d", x->rank);
	if (w->rank != x->rank)
		return npu_op_invalid(ctx->err, node, "W has rank %d", w->rank);
	for (i = 0; i < w->rank; i++)
		if (w->dims[i] < 0)
			return npu_op_unsupported(ctx->err, node, "W shape unknown");
	return NPU_OK;
}

static npu_status qlinear_conv_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	const struct npu_value *b;
	struct npu_window win;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 8, 9);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
							 "group", "kernel_shape",
							 "pads", "strides"));
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	w = &node->inputs[3]->shape;
	st = check_conv_shapes(ctx, x, w);
	if (st)
		return st;
	st = npu_qtriple(ctx, 0, true, -2);
	if (!st)
		st = npu_qtriple(ctx, 3, true, w->dims[0]);
	if (!st)
		st = npu_qtriple(ctx, 5, false, -2);
	if (st)
		return st;
	b = npu_op_input(node, 8);
	if (b && (b->dtype != NPU_DTYPE_INT32 || b->shape.rank != 1))
		return npu_op_unsupported(ctx->err, node,
					  "B must be 1-D int32, is %s rank %d",
					  npu_dtype_name(b->dtype), b->shape.rank);
	if (group < 1 || (x->dims[1] >= 0 && x->dims[1] != w->dims[1] * group) ||
	    w->dims[0] % group)
		return npu_op_invalid(ctx->err, node,
				      "channels do not match group %lld",
				      (long long)group);
	st = npu_op_window(node, x, &w->dims[2], x->rank - 2, false, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[7]->dtype;
	ctx->out_shapes[0].rank = x->rank;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = w->dims[0];
	for (i = 0; i < win.n; i++)
		ctx->out_shapes[0].dims[2 + i] = win.out[i];
	return NPU_OK;
}

/* ConvInteger / MatMulInteger: (u)int8 operands, zero points of their type. */
static npu_status check_integer_operands(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	size_t i;

	for (i = 0; i < node->num_inputs; i++) {
		const struct npu_value *v = node->inputs[i];

		if (v && !npu_is_q8(v->dtype))
			return npu_op_unsupported(ctx->err, node,
						  "input %zu '%s' has type %s, not supported",
						  i, v->name, npu_dtype_name(v->dtype));
		if (v && i >= 2 && v->dtype != node->inputs[i - 2]->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input %zu (zero point) has type %s, its data %s",
					      i, npu_dtype_name(v->dtype),
					      npu_dtype_name(node->inputs[i - 2]->dtype));
	}
	return NPU_OK;
}

static npu_status conv_integer_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	struct npu_window win;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int d;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 4);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
							 "group", "kernel_shape",
							 "pads", "strides"));
	if (st)
		return st;
	st = check_integer_operands(ctx);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	w = &node->inputs[1]->shape;
	st = check_conv_shapes(ctx, x, w);
	if (st)
		return st;
	st = npu_q_param(ctx, 2, -2, false);
	if (!st)
		st = npu_q_param(ctx, 3, w->dims[0], true);
	if (st)
		return st;
	if (group < 1 || (x->dims[1] >= 0 && x->dims[1] != w->dims[1] * group) ||
	    w->dims[0] % group)
		return npu_op_invalid(ctx->err, node,
				      "channels do not match group %lld",
				      (long long)group);
	st = npu_op_window(node, x, &w->dims[2], x->rank - 2, false, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_INT32;
	ctx->out_shapes[0].rank = x->rank;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = w->dims[0];
	for (d = 0; d < win.n; d++)
		ctx->out_shapes[0].dims[2 + d] = win.out[d];
	return NPU_OK;
}

static npu_status matmul_integer_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *a, *b;
	struct npu_shape ba, bb;
	int r;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 4);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	st = check_integer_operands(ctx);
	if (st)
		return st;
	a = &node->inputs[0]->shape;
	b = &node->inputs[1]->shape;
	if (a->rank < 2 || b->rank < 2)
		return npu_op_unsupported(ctx->err, node,
					  "1-D operands are not supported");
	st = npu_q_param(ctx, 2, a->dims[a->rank - 2], true);
	if (!st)
		st = npu_q_param(ctx, 3, b->dims[b->rank - 1], true);
	if (st)
		return st;
	if (a->dims[a->rank - 1] >= 0 && b->dims[b->rank - 2] >= 0 &&
	    a->dims[a->rank - 1] != b->dims[b->rank - 2])
		return npu_op_invalid(ctx->err, node,
				      "inner dimensions differ (%lld vs %lld)",
				      (long long)a->dims[a->rank - 1],
				      (long long)b->dims[b->rank - 2]);
	ba = *a;
	ba.rank -= 2;
	bb = *b;
	bb.rank -= 2;
	st = npu_op_broadcast_shape(ctx, &ba, &bb, &ctx->out_shapes[0]);
	if (st)
		return st;
	r = ctx->out_shapes[0].rank;
	ctx->out_shapes[0].dims[r] = a->dims[a->rank - 2];
	ctx->out_shapes[0].dims[r + 1] = b->dims[b->rank - 1];
	ctx->out_shapes[0].rank = r + 2;
	ctx->out_dtypes[0] = NPU_DTYPE_INT32;
	return NPU_OK;
}

static npu_status dynamic_quantize_linear_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype f32[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, f32);
	if (st)
		return st;
	if (node->num_outputs != 3)
		return npu_op_invalid(ctx->err, node, "%zu outputs, expected 3",
				      node->num_outputs);
	ctx->out_dtypes[0] = NPU_DTYPE_UINT8;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	ctx->out_dtypes[1] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[1].rank = 0;
	ctx->out_dtypes[2] = NPU_DTYPE_UINT8;
	ctx->out_shapes[2].rank = 0;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(quantize_linear) = {
	.op_type = "QuantizeLinear", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = quantize_infer,
};

NPU_OP_SCHEMA_DEF(dequantize_linear) = {
	.op_type = "DequantizeLinear", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = dequantize_infer,
};

NPU_OP_SCHEMA_DEF(qlinear_matmul) = {
	.op_type = "QLinearMatMul", .domain = "",
	.since_version = 10, .max_version = 20,
	.infer = qlinear_matmul_infer,
};

NPU_OP_SCHEMA_DEF(qlinear_conv) = {
	.op_type = "QLinearConv", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = qlinear_conv_infer,
};

NPU_OP_SCHEMA_DEF(conv_integer) = {
	.op_type = "ConvInteger", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = conv_integer_infer,
};

NPU_OP_SCHEMA_DEF(matmul_integer) = {
	.op_type = "MatMulInteger", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = matmul_integer_infer,
};

NPU_OP_SCHEMA_DEF(dynamic_quantize_linear) = {
	.op_type = "DynamicQuantizeLinear", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = dynamic_quantize_linear_infer,
};
