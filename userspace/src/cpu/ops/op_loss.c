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
#include "graph/schemas/loss.h"

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

static npu_status nll_loss_compute(struct npu_op_ctx *ctx)
{
	return npu_loss_compute(ctx, false);
}

NPU_CPU_OP_DEF(negative_log_likelihood_loss) = {
	.op_type = "NegativeLogLikelihoodLoss",
	.domain = "",
	.compute = nll_loss_compute,
};

static npu_status sce_loss_compute(struct npu_op_ctx *ctx)
{
	return npu_loss_compute(ctx, true);
}

NPU_CPU_OP_DEF(softmax_cross_entropy_loss) = {
	.op_type = "SoftmaxCrossEntropyLoss",
	.domain = "",
	.compute = sce_loss_compute,
};
