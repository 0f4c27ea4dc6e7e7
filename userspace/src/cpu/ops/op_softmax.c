// SPDX-License-Identifier: MIT
/*
 * Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at
 * 'axis' (default 1) and normalized over the whole second dimension; from
 * 13 on it is normalized along the single 'axis' (default -1). Both are
 * computed stably: exp(x - max).
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"

/*
 * Normalizes n values at stride 'inner' for each of 'inner' lanes: once
 * per floating type T (suffix S, libm suffix M).
 */
#define SOFTMAX_BLOCK(T, S, M) \
static void npu_softmax_block_##S(const T *x, T *y, int64_t n, \
			      int64_t inner, bool log_out, T *mx, \
			      T *sum) \
{ \
	int64_t k, j; \
 \
	for (j = 0; j < inner; j++) { \
		mx[j] = -INFINITY; \
		sum[j] = (T)0; \
	} \
	for (k = 0; k < n; k++) \
		for (j = 0; j < inner; j++) \
			mx[j] = fmax##M(mx[j], x[k * inner + j]); \
	for (k = 0; k < n; k++) \
		for (j = 0; j < inner; j++) { \
			T e = exp##M(x[k * inner + j] - mx[j]); \
 \
			if (!log_out) \
				y[k * inner + j] = e; \
			sum[j] += e; \
		} \
	if (log_out) { \
		for (j = 0; j < inner; j++) \
			sum[j] = mx[j] + log##M(sum[j]); \
		for (k = 0; k < n; k++) \
			for (j = 0; j < inner; j++) \
				y[k * inner + j] = x[k * inner + j] - sum[j]; \
	} else { \
		for (j = 0; j < inner; j++) \
			sum[j] = (T)1 / sum[j]; \
		for (k = 0; k < n; k++) \
			for (j = 0; j < inner; j++) \
				y[k * inner + j] *= sum[j]; \
	} \
}

SOFTMAX_BLOCK(float, f32, f)
SOFTMAX_BLOCK(double, f64, )

/*
 * Softmax over contiguous rows (inner 1): the vectorized exp, sum and
 * scale, rows split over the pool.
 */
struct npu_softmax_rows_job {
	const float *x;
	float *y;
	size_t n;
};

static void npu_softmax_rows(void *ctx, size_t begin, size_t end)
{
	const struct npu_softmax_rows_job *job = ctx;
	size_t r, n = job->n;

	for (r = begin; r < end; r++) {
		const float *x = job->x + r * n;
		float *y = job->y + r * n, mx, sum;

		mx = npu_vec_max_f32(x, n);	/* NaN ignored, as fmaxf */
		npu_vec_binary_f32(NPU_VEC_SUB, x, 1, &mx, 0, y, n);
		npu_vec_exp_f32(y, y, n);
		sum = npu_vec_sum_f32(y, n);
		npu_vec_binary_f32(NPU_VEC_MUL, y, 1, &(float){ 1.0f / sum }, 0,
				   y, n);
	}
}

static npu_status npu_softmax_compute(struct npu_op_ctx *ctx, bool log_out)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0];
	const struct npu_shape *s = &x->shape;
	float *tmp;
	int64_t axis = npu_node_attr_int_or(node, "axis",
					    node->opset < 13 ? 1 : -1);
	int64_t outer, n, inner, o;

	if (axis < 0)
		axis += s->rank;
	outer = npu_op_dims_prod(s, 0, (int)axis);
	if (node->opset < 13) {
		n = npu_op_dims_prod(s, (int)axis, s->rank);
		inner = 1;
	} else {
		n = s->dims[axis];
		inner = npu_op_dims_prod(s, (int)axis + 1, s->rank);
	}
	if (outer * n * inner == 0)
		return NPU_OK;
	if (x->dtype == NPU_DTYPE_DOUBLE) {
		double *dtmp = malloc(2 * (size_t)inner * sizeof(double));

		if (!dtmp)
			return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
					    "out of memory");
		for (o = 0; o < outer; o++)
			npu_softmax_block_f64((const double *)x->data + o * n * inner,
					      (double *)ctx->outputs[0]->data + o * n * inner,
					      n, inner, log_out, dtmp, dtmp + inner);
		free(dtmp);
		return NPU_OK;
	}
	if (inner == 1 && !log_out) {
		struct npu_softmax_rows_job job = {
			.x = x->data, .y = ctx->outputs[0]->data, .n = (size_t)n,
		};

		npu_threadpool_parallel_for(ctx->pool, (size_t)outer,
					    n >= NPU_VEC_GRAIN ? 1 :
					    (size_t)(NPU_VEC_GRAIN / n),
					    npu_softmax_rows, &job);
		return NPU_OK;
	}
	tmp = malloc(2 * (size_t)inner * sizeof(float));
	if (!tmp)
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	for (o = 0; o < outer; o++)
		npu_softmax_block_f32((const float *)x->data + o * n * inner,
				      (float *)ctx->outputs[0]->data + o * n * inner,
				      n, inner, log_out, tmp, tmp + inner);
	free(tmp);
	return NPU_OK;
}

static npu_status softmax_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, softmax_compute);
	return npu_softmax_compute(ctx, false);
}

static npu_status log_softmax_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, log_softmax_compute);
	return npu_softmax_compute(ctx, true);
}

NPU_CPU_OP_DEF(softmax) = {
	.op_type = "Softmax",
	.domain = "",
	.compute = softmax_compute,
};

NPU_CPU_OP_DEF(log_softmax) = {
	.op_type = "LogSoftmax",
	.domain = "",
	.compute = log_softmax_compute,
};
