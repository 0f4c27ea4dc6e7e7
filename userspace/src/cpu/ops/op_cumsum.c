// SPDX-License-Identifier: MIT
/*
 * CumSum: running sums along one axis (given as a scalar input), with
 * 'exclusive' (each output leaves out its own element) and 'reverse'.
 * One loop per numeric type through a macro.
 */
#include "cpu/ops/op_common.h"
#include "graph/schemas/cumsum.h"

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
	.op_type = "CumSum",
	.domain = "",
	.compute = cum_sum_compute,
};
