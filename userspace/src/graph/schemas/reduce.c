// SPDX-License-Identifier: MIT
/* The schemas of op_reduce.c's ops: the ten Reduce* ops. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The opset from which 'axes' is an input. */
static int npu_reduce_axes_input_opset(enum npu_reduce_kind k)
{
	return k == RED_SUM ? 13 : 18;
}

/* reduced[d] for each input dim; false everywhere means identity. */
npu_status npu_reduce_axes(const struct npu_node *node,
			   enum npu_reduce_kind k,
			   const struct npu_tensor *axes_t, int rank,
			   bool *reduced, bool *known,
			   struct npu_error *err)
{
	int64_t axes[NPU_MAX_RANK];
	int n, i, ax;
	npu_status st;

	*known = true;
	if (node->opset < npu_reduce_axes_input_opset(k))
		st = npu_op_ints_from_attr(node, "axes", axes, NPU_MAX_RANK,
					   &n, err);
	else if (axes_t)
		st = npu_op_ints_from_tensor(node, axes_t, "axes", axes,
					     NPU_MAX_RANK, &n, err);
	else
		st = npu_op_ints_from_value(node, 1, axes, NPU_MAX_RANK, &n,
					    err);
	if (st)
		return st;
	if (n < 0) {
		*known = false;
		return NPU_OK;
	}
	for (i = 0; i < rank; i++)
		reduced[i] = n == 0 &&
			     !npu_node_attr_int_or(node, "noop_with_empty_axes", 0);
	for (i = 0; i < n; i++) {
		st = npu_op_axis(err, node, "axes", axes[i], rank, &ax);
		if (st)
			return st;
		reduced[ax] = true;
	}
	return NPU_OK;
}

static npu_status npu_reduce_infer(struct npu_infer_ctx *ctx,
				   enum npu_reduce_kind k)
{
	const struct npu_node *node = ctx->node;
	bool axes_input = node->opset >= npu_reduce_axes_input_opset(k);
	bool reduced[NPU_MAX_RANK], known, keep;
	const struct npu_value *x;
	struct npu_shape *out = &ctx->out_shapes[0];
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, axes_input ? 2 : 1);
	if (!st)
		st = axes_input ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("keepdims",
							 "noop_with_empty_axes")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("keepdims", "axes"));
	if (st)
		return st;
	x = node->inputs[0];
	/*
	 * Kernels per family: float (float16 / bfloat16 widened to it),
	 * double, int64 and uint64 (narrower integers widened to them).
	 */
	if (npu_op_wide_dtype(x->dtype, true) != NPU_DTYPE_FLOAT && x->dtype != NPU_DTYPE_DOUBLE &&
	    npu_op_wide_dtype(x->dtype, true) != NPU_DTYPE_INT64 &&
	    npu_op_wide_dtype(x->dtype, true) != NPU_DTYPE_UINT64 &&
	    /* ReduceMax / ReduceMin-20 take bool: any / all. */
	    !(x->dtype == NPU_DTYPE_BOOL && (k == RED_MAX || k == RED_MIN) && node->opset >= 20))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	st = npu_reduce_axes(node, k, NULL, x->shape.rank, reduced, &known,
			     ctx->err);
	if (st)
		return st;
	keep = npu_node_attr_int_or(node, "keepdims", 1) != 0;
	ctx->out_dtypes[0] = x->dtype;
	if (!known && !keep) {
		/* Known at run time: the rank follows from the axes' count. */
		const struct npu_shape *as = &node->inputs[1]->shape;

		if (as->rank != 1 || as->dims[0] <= 0 ||
		    as->dims[0] > x->shape.rank)
			return npu_op_unsupported(ctx->err, node,
						  "axes input is not constant and keepdims = 0");
		out->rank = x->shape.rank - (int)as->dims[0];
		for (i = 0; i < out->rank; i++)
			out->dims[i] = -1;
		return NPU_OK;
	}
	out->rank = 0;
	for (i = 0; i < x->shape.rank; i++) {
		if (!known)
			out->dims[out->rank++] = -1;
		else if (!reduced[i])
			out->dims[out->rank++] = x->shape.dims[i];
		else if (keep)
			out->dims[out->rank++] = 1;
	}
	return NPU_OK;
}

#define REDUCE_SCHEMA(sym, name, kind)					\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return npu_reduce_infer(ctx, kind);				\
}									\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = "",					\
	.since_version = 1, .max_version = 21,				\
	.infer = sym##_infer,						\
};

REDUCE_SCHEMA(reduce_sum, "ReduceSum", RED_SUM)
REDUCE_SCHEMA(reduce_mean, "ReduceMean", RED_MEAN)
REDUCE_SCHEMA(reduce_max, "ReduceMax", RED_MAX)
REDUCE_SCHEMA(reduce_min, "ReduceMin", RED_MIN)
REDUCE_SCHEMA(reduce_prod, "ReduceProd", RED_PROD)
REDUCE_SCHEMA(reduce_l1, "ReduceL1", RED_L1)
REDUCE_SCHEMA(reduce_l2, "ReduceL2", RED_L2)
REDUCE_SCHEMA(reduce_sum_square, "ReduceSumSquare", RED_SUM_SQUARE)
REDUCE_SCHEMA(reduce_log_sum, "ReduceLogSum", RED_LOG_SUM)
REDUCE_SCHEMA(reduce_log_sum_exp, "ReduceLogSumExp", RED_LOG_SUM_EXP)
