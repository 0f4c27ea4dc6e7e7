// SPDX-License-Identifier: MIT
/* The schemas of op_pool.c's ops: AveragePool, GlobalAveragePool, GlobalMaxPool, MaxPool, MaxUnpool. */
#include "graph/schemas/schema_common.h"

#include <math.h>
#include <string.h>

static npu_status npu_pool_infer(struct npu_infer_ctx *ctx, bool is_max)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int64_t ks[NPU_WIN_MAX];
	struct npu_window win;
	int cnt, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = is_max ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "ceil_mode",
							 "dilations", "kernel_shape",
							 "pads", "storage_order",
							 "strides")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "ceil_mode",
							 "count_include_pad", "dilations",
							 "kernel_shape", "pads", "strides"));
	if (st)
		return st;
	x = node->inputs[0];
	/* float16 / bfloat16 widened to float; double on the direct loop. */
	if (npu_op_wide_dtype(x->dtype, false) != NPU_DTYPE_FLOAT && x->dtype != NPU_DTYPE_DOUBLE &&
	    !(is_max && node->opset >= 12 &&
	      (x->dtype == NPU_DTYPE_UINT8 || x->dtype == NPU_DTYPE_INT8)))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (node->num_outputs > 2 || (!is_max && node->num_outputs > 1))
		return npu_op_invalid(ctx->err, node, "%zu outputs",
				      node->num_outputs);
	if (x->shape.rank < 3 || x->shape.rank > 5)
		return npu_op_invalid(ctx->err, node, "X has rank %d",
				      x->shape.rank);
	st = npu_op_ints_from_attr(node, "kernel_shape", ks, NPU_WIN_MAX, &cnt,
				   ctx->err);
	if (st)
		return st;
	if (cnt != x->shape.rank - 2)
		return npu_op_invalid(ctx->err, node,
				      "kernel_shape has %d values for %d spatial dims",
				      cnt, x->shape.rank - 2);
	st = npu_op_window(node, &x->shape, ks, cnt,
			   npu_node_attr_int_or(node, "ceil_mode", 0) != 0, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	for (i = 0; i < cnt; i++)
		ctx->out_shapes[0].dims[2 + i] = win.out[i];
	if (node->num_outputs > 1) {
		ctx->out_dtypes[1] = NPU_DTYPE_INT64;
		ctx->out_shapes[1] = ctx->out_shapes[0];
	}
	return NPU_OK;
}

static npu_status maxpool_infer(struct npu_infer_ctx *ctx)
{
	return npu_pool_infer(ctx, true);
}

static npu_status avgpool_infer(struct npu_infer_ctx *ctx)
{
	return npu_pool_infer(ctx, false);
}

static npu_status global_pool_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	x = node->inputs[0];
	/* float16 / bfloat16 widened to float; double in its own loop. */
	if (npu_op_wide_dtype(x->dtype, false) != NPU_DTYPE_FLOAT && x->dtype != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (x->shape.rank < 3)
		return npu_op_invalid(ctx->err, node, "X has rank %d",
				      x->shape.rank);
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	for (i = 2; i < x->shape.rank; i++)
		ctx->out_shapes[0].dims[i] = 1;
	return NPU_OK;
}

static npu_status max_unpool_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype f32[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_UNDEFINED,
	};
	static const enum npu_dtype i64[] = {
		NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *is;
	struct npu_shape *out = &ctx->out_shapes[0];
	int64_t k[NPU_WIN_MAX], s[NPU_MAX_RANK], p[2 * NPU_WIN_MAX], osh[NPU_MAX_RANK];
	int nk, ns, np, no, n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("kernel_shape", "pads",
							 "strides"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, i64);
	if (!st)
		st = npu_op_check_dtype(ctx, 2, i64);
	if (!st)
		st = npu_op_ints_from_attr(node, "kernel_shape", k, NPU_WIN_MAX,
					   &nk, ctx->err);
	if (!st)
		st = npu_op_ints_from_attr(node, "strides", s, NPU_MAX_RANK, &ns,
					   ctx->err);
	if (!st)
		st = npu_op_ints_from_attr(node, "pads", p, 2 * NPU_WIN_MAX, &np,
					   ctx->err);
	if (!st)
		st = npu_op_ints_from_value(node, 2, osh, NPU_MAX_RANK, &no,
					    ctx->err);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	is = &node->inputs[1]->shape;
	n = x->rank - 2;
	if (n < 1 || n > NPU_WIN_MAX || nk != n)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'kernel_shape' has %d values for %d spatial dims",
				      nk, n);
	if ((ns && ns != n) || (np && np != 2 * n))
		return npu_op_invalid(ctx->err, node,
				      "attributes 'strides' / 'pads' do not match %d spatial dims",
				      n);
	if (is->rank != x->rank)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (I) has rank %d, X has %d",
				      node->inputs[1]->name, is->rank, x->rank);
	*out = *x;
	if (npu_op_input(node, 2)) {
		if (no >= 0 && no != x->rank)
			return npu_op_invalid(ctx->err, node,
					      "input 2 (output_shape) has %d values, X has rank %d",
					      no, x->rank);
		for (i = 0; i < x->rank; i++)
			out->dims[i] = no < 0 ? -1 : osh[i];
	} else {
		for (i = 0; i < n; i++) {
			int64_t in = x->dims[2 + i];

			out->dims[2 + i] = in < 0 ? -1 :
				(in - 1) * (ns ? s[i] : 1) + k[i] -
				(np ? p[i] + p[n + i] : 0);
		}
	}
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(max_pool) = {
	.op_type = "MaxPool", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = maxpool_infer,
};

NPU_OP_SCHEMA_DEF(average_pool) = {
	.op_type = "AveragePool", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = avgpool_infer,
};

NPU_OP_SCHEMA_DEF(global_average_pool) = {
	.op_type = "GlobalAveragePool", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = global_pool_infer,
};

NPU_OP_SCHEMA_DEF(global_max_pool) = {
	.op_type = "GlobalMaxPool", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = global_pool_infer,
};

NPU_OP_SCHEMA_DEF(max_unpool) = {
	.op_type = "MaxUnpool", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = max_unpool_infer,
};
