// SPDX-License-Identifier: MIT
/*
 * Reductions: ReduceSum / Mean / Max / Min / Prod / L1 / L2 / SumSquare /
 * LogSum / LogSumExp over float and double (one kernel per type through
 * REDUCE_IMPL; float16 / bfloat16 widened to float), and the first seven
 * over integers (int64 / uint64 kernels, narrower types widened). 'axes' is an attribute before opset 18
 * (before 13 for ReduceSum) and an optional input after; keepdims and
 * noop_with_empty_axes as specified.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/reduce.h"

#define NPU_MAX_INPUTS_REDUCE 2	/* data, axes */

/* The kinds with an integer kernel (exact in int64 / uint64 arithmetic). */
static bool npu_reduce_int_kind(enum npu_reduce_kind k)
{
	return k == RED_SUM || k == RED_MEAN || k == RED_MAX || k == RED_MIN || k == RED_PROD ||
	       k == RED_L1 || k == RED_SUM_SQUARE;
}

/*
 * The row kernel and the compute body, once per floating type T (suffix
 * S, math functions with suffix M: expf / exp ...).
 */
#define REDUCE_IMPL(T, S, M)						\
/* acc (len, step 0 or 1) op= x (len contiguous). */			\
static void npu_reduce_row_##S(enum npu_reduce_kind k,			\
			       const T *restrict x, T *restrict acc,	\
			       int64_t len, int64_t step)		\
{									\
	int64_t i;							\
									\
	if (step == 0) {						\
		T a = acc[0];						\
									\
		switch (k) {						\
		case RED_MAX: for (i = 0; i < len; i++) a = fmax##M(a, x[i]); break; \
		case RED_MIN: for (i = 0; i < len; i++) a = fmin##M(a, x[i]); break; \
		case RED_PROD: for (i = 0; i < len; i++) a *= x[i]; break; \
		default: for (i = 0; i < len; i++) a += x[i]; break;	\
		}							\
		acc[0] = a;						\
		return;							\
	}								\
	switch (k) {							\
	case RED_MAX: for (i = 0; i < len; i++) acc[i] = fmax##M(acc[i], x[i]); break; \
	case RED_MIN: for (i = 0; i < len; i++) acc[i] = fmin##M(acc[i], x[i]); break; \
	case RED_PROD: for (i = 0; i < len; i++) acc[i] *= x[i]; break;	\
	default: for (i = 0; i < len; i++) acc[i] += x[i]; break;	\
	}								\
}									\
									\
static npu_status npu_reduce_compute_##S(struct npu_op_ctx *ctx,	\
					 enum npu_reduce_kind k,	\
					 const bool *reduced)		\
{									\
	const struct npu_tensor *x = ctx->inputs[0];			\
	struct npu_tensor *y = ctx->outputs[0];				\
	struct npu_shape in_s = x->shape, red_s;			\
	const struct npu_shape *ins[1] = { &red_s };			\
	int64_t n = npu_op_numel(x), m = npu_op_numel(y), i, r, count = 1; \
	T *tmp = NULL, *yv = y->data, init = (T)npu_reduce_init(k);	\
	const T *src = x->data;						\
	struct npu_bcast bc;						\
	int d;								\
									\
	/* The output laid out with the input's rank (reduced dims -> 1). */ \
	red_s = in_s;							\
	for (d = 0; d < in_s.rank; d++)					\
		if (reduced[d]) {					\
			red_s.dims[d] = 1;				\
			count *= in_s.dims[d];				\
		}							\
	for (i = 0; i < m; i++)						\
		yv[i] = init;						\
	if (k == RED_L1 || k == RED_L2 || k == RED_SUM_SQUARE ||	\
	    k == RED_LOG_SUM_EXP) {					\
		tmp = malloc((size_t)(n ? n : 1) * sizeof(T));		\
		if (!tmp)						\
			return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, \
					    "out of memory");		\
		for (i = 0; i < n; i++) {				\
			T v = src[i];					\
									\
			tmp[i] = k == RED_L1 ? fabs##M(v) :		\
				 k == RED_LOG_SUM_EXP ? exp##M(v) : v * v; \
		}							\
		src = tmp;						\
	}								\
	/* Walk the input in rows; the output is the "broadcast" operand. */ \
	if (n) {							\
		npu_bcast_init(&bc, &in_s, ins, 1);			\
		for (r = 0; r < bc.rows; r++) {				\
			int64_t off;					\
									\
			npu_bcast_row(&bc, r, &off);			\
			npu_reduce_row_##S(k, src + r * bc.len, yv + off, \
					   bc.len, bc.step[0]);		\
		}							\
	}								\
	free(tmp);							\
	for (i = 0; i < m; i++) {					\
		switch (k) {						\
		case RED_MEAN: yv[i] /= (T)count; break;		\
		case RED_L2: yv[i] = sqrt##M(yv[i]); break;		\
		case RED_LOG_SUM: case RED_LOG_SUM_EXP: yv[i] = log##M(yv[i]); break; \
		default: break;						\
		}							\
	}								\
	return NPU_OK;							\
}

static double npu_reduce_init(enum npu_reduce_kind k)
{
	switch (k) {
	case RED_MAX: return -INFINITY;
	case RED_MIN: return INFINITY;
	case RED_PROD: return 1.0;
	default: return 0.0;
	}
}

REDUCE_IMPL(float, f32, f)
REDUCE_IMPL(double, f64, )

/* The integer kernels: wrapping sums and products, exact comparisons. */
#define REDUCE_INT_IMPL(T, S, MIN, MAX)					\
static T npu_reduce_abs_##S(T v)					\
{									\
	return v > (T)0 || v == (T)0 ? v : (T)((T)0 - v);		\
}									\
									\
static npu_status npu_reduce_compute_##S(struct npu_op_ctx *ctx,	\
					 enum npu_reduce_kind k,	\
					 const bool *reduced)		\
{									\
	const struct npu_tensor *x = ctx->inputs[0];			\
	struct npu_tensor *y = ctx->outputs[0];				\
	struct npu_shape red_s = x->shape;				\
	const struct npu_shape *ins[1] = { &red_s };			\
	int64_t n = npu_op_numel(x), m = npu_op_numel(y), i, r, count = 1; \
	const T *src = x->data;						\
	T *yv = y->data;						\
	struct npu_bcast bc;						\
	int d;								\
									\
	for (d = 0; d < red_s.rank; d++)				\
		if (reduced[d]) {					\
			count *= red_s.dims[d];				\
			red_s.dims[d] = 1;				\
		}							\
	for (i = 0; i < m; i++)						\
		yv[i] = k == RED_MAX ? MIN : k == RED_MIN ? MAX :	\
			k == RED_PROD ? (T)1 : (T)0;			\
	if (n) {							\
		npu_bcast_init(&bc, &x->shape, ins, 1);			\
		for (r = 0; r < bc.rows; r++) {				\
			int64_t off;					\
									\
			npu_bcast_row(&bc, r, &off);			\
			for (i = 0; i < bc.len; i++) {			\
				T v = src[r * bc.len + i], *a = &yv[off + i * bc.step[0]]; \
									\
				switch (k) {				\
				case RED_MAX: *a = v > *a ? v : *a; break; \
				case RED_MIN: *a = v < *a ? v : *a; break; \
				case RED_PROD: *a = (T)(*a * v); break;	\
				case RED_L1: *a = (T)(*a + npu_reduce_abs_##S(v)); break; \
				case RED_SUM_SQUARE: *a = (T)(*a + v * v); break; \
				default: *a = (T)(*a + v); break;	\
				}					\
			}						\
		}							\
	}								\
	for (i = 0; k == RED_MEAN && count && i < m; i++)		\
		yv[i] = (T)(yv[i] / (T)count);	/* truncates, as C does */ \
	return NPU_OK;							\
}

REDUCE_INT_IMPL(int64_t, i64, INT64_MIN, INT64_MAX)
REDUCE_INT_IMPL(uint64_t, u64, (uint64_t)0, UINT64_MAX)

/*
 * The kinds without an integer kernel (L2, LogSum, LogSumExp) on integers:
 * the double kernel, its result converted back as a C conversion does
 * (truncated; saturated where out of range). Exact below 2^53.
 */
static npu_status npu_reduce_int_in_double(struct npu_op_ctx *ctx,
					   enum npu_reduce_kind k,
					   const bool *reduced)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0], xd = *x, yd = *y, *out_p[1] = { &yd };
	const struct npu_tensor *in_p[1] = { &xd };
	struct npu_op_ctx w = *ctx;
	bool sgn = x->dtype == NPU_DTYPE_INT64;
	int64_t n = npu_op_numel(x), m = npu_op_numel(y), i;
	npu_status st;

	xd.dtype = yd.dtype = NPU_DTYPE_DOUBLE;
	xd.nbytes = (size_t)n * sizeof(double);
	yd.nbytes = (size_t)m * sizeof(double);
	xd.data = malloc(xd.nbytes ? xd.nbytes : 1);
	yd.data = malloc(yd.nbytes ? yd.nbytes : 1);
	if (!xd.data || !yd.data) {
		free(xd.data);
		free(yd.data);
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < n; i++)
		((double *)xd.data)[i] = sgn ? (double)((const int64_t *)x->data)[i] :
					       (double)((const uint64_t *)x->data)[i];
	w.inputs = in_p;
	w.num_inputs = 1;
	w.outputs = out_p;
	st = npu_reduce_compute_f64(&w, k, reduced);
	for (i = 0; !st && i < m; i++) {
		double v = ((double *)yd.data)[i];

		if (sgn)
			((int64_t *)y->data)[i] = v != v ? 0 : v >= 0x1p63 ? INT64_MAX :
						  v <= -0x1p63 ? INT64_MIN : (int64_t)v;
		else
			((uint64_t *)y->data)[i] = !(v > 0) ? 0 : v >= 0x1p64 ? UINT64_MAX :
						   (uint64_t)v;
	}
	free(xd.data);
	free(yd.data);
	return st;
}

static npu_status npu_reduce_compute(struct npu_op_ctx *ctx,
				     enum npu_reduce_kind k)
{
	const struct npu_tensor *x = ctx->inputs[0];
	bool reduced[NPU_MAX_RANK], known;
	npu_status st;

	st = npu_reduce_axes(ctx->node, k, npu_op_in(ctx, 1), x->shape.rank,
			     reduced, &known, ctx->err);
	if (st)
		return st;
	if ((x->dtype == NPU_DTYPE_INT64 || x->dtype == NPU_DTYPE_UINT64) &&
	    !npu_reduce_int_kind(k))
		return npu_reduce_int_in_double(ctx, k, reduced);
	switch (x->dtype) {
	case NPU_DTYPE_DOUBLE: return npu_reduce_compute_f64(ctx, k, reduced);
	case NPU_DTYPE_INT64: return npu_reduce_compute_i64(ctx, k, reduced);
	case NPU_DTYPE_UINT64: return npu_reduce_compute_u64(ctx, k, reduced);
	default: return npu_reduce_compute_f32(ctx, k, reduced);
	}
}

/* bool (ReduceMax / ReduceMin-20): the uint8 kernel, max = any, min = all. */
static npu_status npu_reduce_bool(struct npu_op_ctx *ctx,
				  npu_status (*compute)(struct npu_op_ctx *ctx))
{
	struct npu_tensor x = *ctx->inputs[0], y = *ctx->outputs[0], *out_p[1] = { &y };
	const struct npu_tensor *in_p[NPU_MAX_INPUTS_REDUCE];
	struct npu_op_ctx w = *ctx;
	size_t i;

	for (i = 0; i < ctx->num_inputs && i < NPU_MAX_INPUTS_REDUCE; i++)
		in_p[i] = ctx->inputs[i];
	x.dtype = y.dtype = NPU_DTYPE_UINT8;
	in_p[0] = &x;
	w.inputs = in_p;
	w.num_inputs = i;
	w.outputs = out_p;
	return compute(&w);
}

#define REDUCE_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)			\
{									\
	if (ctx->inputs[0]->dtype == NPU_DTYPE_BOOL)			\
		return npu_reduce_bool(ctx, sym##_compute);		\
	if (npu_op_needs_widening(ctx, true))				\
		return npu_op_compute_widened(ctx, true, sym##_compute);	\
	return npu_reduce_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "",					\
	.compute = sym##_compute,					\
};

REDUCE_DEF(reduce_sum, "ReduceSum", RED_SUM)
REDUCE_DEF(reduce_mean, "ReduceMean", RED_MEAN)
REDUCE_DEF(reduce_max, "ReduceMax", RED_MAX)
REDUCE_DEF(reduce_min, "ReduceMin", RED_MIN)
REDUCE_DEF(reduce_prod, "ReduceProd", RED_PROD)
REDUCE_DEF(reduce_l1, "ReduceL1", RED_L1)
REDUCE_DEF(reduce_l2, "ReduceL2", RED_L2)
REDUCE_DEF(reduce_sum_square, "ReduceSumSquare", RED_SUM_SQUARE)
REDUCE_DEF(reduce_log_sum, "ReduceLogSum", RED_LOG_SUM)
REDUCE_DEF(reduce_log_sum_exp, "ReduceLogSumExp", RED_LOG_SUM_EXP)
