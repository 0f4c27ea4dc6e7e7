// SPDX-License-Identifier: MIT
/*
 * Losses, as plain inference computations: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (with its optional log_prob output) over float
 * and double. Input (N, C, d1..dk), target (N, d1..dk) int32/int64,
 * optional per-class weight (C); reduction none / sum / mean, where mean
 * divides by the sum of the weights actually used (ignored targets weigh
 * 0), as the ONNX reference does. Sums accumulate in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"

enum npu_loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN };

static double npu_loss_get(const void *p, enum npu_dtype dt, int64_t i)
{
	return dt == NPU_DTYPE_DOUBLE ? ((const double *)p)[i] :
					((const float *)p)[i];
}

static void npu_loss_set(void *p, enum npu_dtype dt, int64_t i, double v)
{
	if (dt == NPU_DTYPE_DOUBLE)
		((double *)p)[i] = v;
	else
		((float *)p)[i] = (float)v;
}

static npu_status npu_loss_reduction(const struct npu_node *node,
				     enum npu_loss_reduction *r,
				     struct npu_error *err)
{
	const char *s = npu_node_attr_string_or(node, "reduction", "mean");

	if (!strcmp(s, "none"))
		*r = LOSS_NONE;
	else if (!strcmp(s, "sum"))
		*r = LOSS_SUM;
	else if (!strcmp(s, "mean"))
		*r = LOSS_MEAN;
	else
		return npu_op_invalid(err, node,
				      "attribute 'reduction' = '%s' is not none, sum or mean",
				      s);
	return NPU_OK;
}

static npu_status npu_loss_infer(struct npu_infer_ctx *ctx, bool softmax)
{
	static const enum npu_dtype x_types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_UNDEFINED,
	};
	static const enum npu_dtype t_types[] = {
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *t, *w;
	enum npu_loss_reduction red;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("reduction",
							 "ignore_index"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, x_types);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, t_types);
	if (!st)
		st = npu_loss_reduction(node, &red, ctx->err);
	if (st)
		return st;
	if (node->num_outputs > (softmax ? 2u : 1u))
		return npu_op_invalid(ctx->err, node, "%zu outputs, expected at most %d",
				      node->num_outputs, softmax ? 2 : 1);
	x = node->inputs[0];
	t = node->inputs[1];
	w = npu_op_input(node, 2);
	if (x->shape.rank < 2)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected (N, C, ...)",
				      x->name, x->shape.rank);
	if (t->shape.rank != x->shape.rank - 1)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (target) has rank %d, expected %d",
				      t->name, t->shape.rank, x->shape.rank - 1);
	for (i = 0; i < t->shape.rank; i++) {
		int64_t xd = x->shape.dims[i ? i + 1 : 0], td = t->shape.dims[i];

		if (xd >= 0 && td >= 0 && xd != td)
			return npu_op_invalid(ctx->err, node,
					      "input 1 '%s' (target) dim %d is %lld, input 0 has %lld",
					      t->name, i, (long long)td,
					      (long long)xd);
	}
	if (w) {
		if (w->dtype != x->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input 2 '%s' (weight) has type %s, input 0 %s",
					      w->name, npu_dtype_name(w->dtype),
					      npu_dtype_name(x->dtype));
		if (w->shape.rank != 1 ||
		    (w->shape.dims[0] >= 0 && x->shape.dims[1] >= 0 &&
		     w->shape.dims[0] != x->shape.dims[1]))
			return npu_op_invalid(ctx->err, node,
					      "input 2 '%s' (weight) must be 1-D of C elements",
					      w->name);
	}
	ctx->out_dtypes[0] = x->dtype;
	if (red == LOSS_NONE)
		ctx->out_shapes[0] = t->shape;
	else
		ctx->out_shapes[0].rank = 0;
	if (node->num_outputs > 1) {
		ctx->out_dtypes[1] = x->dtype;
		ctx->out_shapes[1] = x->shape;
	}
	return NPU_OK;
}

/* lp = log_softmax(x) over axis 1 of (N, C, D). */
static void npu_log_softmax_c(const struct npu_tensor *x, void *lp,
			      int64_t N, int64_t C, int64_t D)
{
	int64_t n, c, d;

	for (n = 0; n < N; n++)
		for (d = 0; d < D; d++) {
			int64_t base = n * C * D + d;
			double mx = -INFINITY, s = 0;

			for (c = 0; c < C; c++)
				mx = fmax(mx, npu_loss_get(x->data, x->dtype,
							   base + c * D));
			for (c = 0; c < C; c++)
				s += exp(npu_loss_get(x->data, x->dtype,
						      base + c * D) - mx);
			s = log(s);
			for (c = 0; c < C; c++)
				npu_loss_set(lp, x->dtype, base + c * D,
					     npu_loss_get(x->data, x->dtype,
							  base + c * D) - mx - s);
		}
}

static npu_status npu_loss_compute(struct npu_op_ctx *ctx, bool softmax)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0], *t = ctx->inputs[1];
	const struct npu_tensor *w = npu_op_in(ctx, 2);
	struct npu_tensor *y = ctx->outputs[0], *lp_out = npu_op_out(ctx, 1);
	const struct npu_attr *ii = npu_node_attr(node, "ignore_index");
	int64_t N = x->shape.dims[0], C = x->shape.dims[1];
	int64_t D = npu_op_dims_prod(&x->shape, 2, x->shape.rank);
	enum npu_dtype dt = x->dtype;
	enum npu_loss_reduction red;
	double sum = 0, wsum = 0;
	const void *src = x->data;
	void *lp = NULL;
	int64_t n, d;
	npu_status st;

	st = npu_loss_reduction(node, &red, ctx->err);
	if (st)
		return st;
	if (softmax) {
		int64_t numel = N * C * D;

		lp = lp_out ? lp_out->data :
		     malloc((size_t)(numel > 0 ? numel : 1) *
			    npu_dtype_size(dt));
		if (!lp)
			return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
					    "out of memory");
		npu_log_softmax_c(x, lp, N, C, D);
		src = lp;
	}
	for (n = 0; n < N; n++)
		for (d = 0; d < D; d++) {
			int64_t k = npu_op_index_get(t, (size_t)(n * D + d));
			double l = 0, wt = 0;

			if (!ii || k != ii->i) {
				if (k < 0 || k >= C) {
					st = npu_op_invalid(ctx->err, node,
							    "target %lld at element %lld is out of range for %lld classes",
							    (long long)k,
							    (long long)(n * D + d),
							    (long long)C);
					goto out;
				}
				wt = w ? npu_loss_get(w->data, dt, k) : 1.0;
				l = -npu_loss_get(src, dt, (n * C + k) * D + d) * wt;
			}
			sum += l;
			wsum += wt;
			if (red == LOSS_NONE)
				npu_loss_set(y->data, dt, n * D + d, l);
		}
	if (red == LOSS_SUM)
		npu_loss_set(y->data, dt, 0, sum);
	else if (red == LOSS_MEAN)
		/* Without weight or ignore_index every weight is 1: np.mean. */
		npu_loss_set(y->data, dt, 0, sum / wsum);
out:
	if (lp && !lp_out)
		free(lp);
	return st;
}

static npu_status nll_loss_infer(struct npu_infer_ctx *ctx)
{
	return npu_loss_infer(ctx, false);
}

static npu_status nll_loss_compute(struct npu_op_ctx *ctx)
{
	return npu_loss_compute(ctx, false);
}

NPU_CPU_OP_DEF(negative_log_likelihood_loss) = {
	.op_type = "NegativeLogLikelihoodLoss", .domain = "",
	.since_version = 12, .max_version = 21, .infer = nll_loss_infer,
	.compute = nll_loss_compute,
};

static npu_status sce_loss_infer(struct npu_infer_ctx *ctx)
{
	return npu_loss_infer(ctx, true);
}

static npu_status sce_loss_compute(struct npu_op_ctx *ctx)
{
	return npu_loss_compute(ctx, true);
}

NPU_CPU_OP_DEF(softmax_cross_entropy_loss) = {
	.op_type = "SoftmaxCrossEntropyLoss", .domain = "",
	.since_version = 12, .max_version = 21, .infer = sce_loss_infer,
	.compute = sce_loss_compute,
};
