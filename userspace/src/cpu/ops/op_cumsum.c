// SPDX-License-Identifier: MIT
/*
 * CumSum: running sums along one axis (given as a scalar input), with
 * 'exclusive' (each output leaves out its own element) and 'reverse'.
 * One loop per numeric type through a macro.
 */
#include "cpu/ops/op_common.h"

static npu_status npu_cumsum_axis(const struct npu_node *node,
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

#define CUMSUM_LOOP(T)							\
	do {								\
		const T *x_ = x->data;					\
		T *y_ = y->data;					\
		for (o = 0; o < outer; o++)				\
			for (j = 0; j < inner; j++) {			\
				T acc = 0;				\
				for (a = 0; a < dim; a++) {		\
					int64_t aa = rev ? dim - 1 - a : a; \
					int64_t at = (o * dim + aa) * inner + j; \
					if (excl) {			\
						y_[at] = acc;		\
						acc = (T)(acc + x_[at]); \
					} else {			\
						acc = (T)(acc + x_[at]); \
						y_[at] = acc;		\
					}				\
				}					\
			}						\
	} while (0)

static npu_status cum_sum_kernel(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	bool excl = npu_node_attr_int_or(ctx->node, "exclusive", 0) != 0;
	bool rev = npu_node_attr_int_or(ctx->node, "reverse", 0) != 0;
	int rank = x->shape.rank, axis;
	int64_t outer, dim, inner, o, j, a;
	npu_status st;

	st = npu_cumsum_axis(ctx->node, ctx->inputs[1], rank, &axis, ctx->err);
	if (st)
		return st;
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	dim = x->shape.dims[axis];
	inner = npu_op_dims_prod(&x->shape, axis + 1, rank);
	switch (x->dtype) {
	case NPU_DTYPE_FLOAT: CUMSUM_LOOP(float); break;
	case NPU_DTYPE_DOUBLE: CUMSUM_LOOP(double); break;
	case NPU_DTYPE_INT32: CUMSUM_LOOP(int32_t); break;
	case NPU_DTYPE_INT64: CUMSUM_LOOP(int64_t); break;
	case NPU_DTYPE_UINT32: CUMSUM_LOOP(uint32_t); break;
	case NPU_DTYPE_UINT64: CUMSUM_LOOP(uint64_t); break;
	default: break;
	}
	return NPU_OK;
}

static npu_status cum_sum_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))	/* float16 / bfloat16 */
		return npu_op_compute_widened(ctx, false, cum_sum_kernel);
	return cum_sum_kernel(ctx);
}

NPU_CPU_OP_DEF(cum_sum) = {
	.op_type = "CumSum", .domain = "", .since_version = 11,
	.max_version = 21, .infer = cum_sum_infer, .compute = cum_sum_compute,
};
