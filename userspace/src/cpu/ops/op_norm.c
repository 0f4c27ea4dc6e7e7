// SPDX-License-Identifier: MIT
/*
 * Normalization: BatchNormalization (inference, and training_mode = 1
 * with batch statistics and running mean / var outputs from opset 14),
 * InstanceNormalization and LayerNormalization (with its optional Mean and
 * InvStdDev outputs), LRN and MeanVarianceNormalization.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "graph/schemas/norm.h"

/* ---- BatchNormalization ---- */

/*
 * training_mode = 1 (opset 14): normalize with the batch's own mean and
 * (biased) variance per channel; running_mean / running_var outputs are
 * input * momentum + batch statistic * (1 - momentum).
 */
static void batchnorm_training(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const float *scale = ctx->inputs[1]->data, *bias = ctx->inputs[2]->data;
	const float *mean = ctx->inputs[3]->data, *var = ctx->inputs[4]->data;
	float eps = npu_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
	float mom = npu_node_attr_float_or(ctx->node, "momentum", 0.9f);
	struct npu_tensor *rm = npu_op_out(ctx, 1), *rv = npu_op_out(ctx, 2);
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], i, j, k;
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank);
	const float *xv = x->data;
	float *yv = ctx->outputs[0]->data;

	for (j = 0; j < c; j++) {
		double s = 0, sq = 0, cnt = (double)(n * inner), bm, bv;
		float a, b;

		for (i = 0; i < n; i++)
			for (k = 0; k < inner; k++) {
				double v = xv[(i * c + j) * inner + k];

				s += v;
				sq += v * v;
			}
		bm = cnt > 0 ? s / cnt : 0;
		bv = cnt > 0 ? sq / cnt - bm * bm : 0;
		bv = bv > 0 ? bv : 0;
		a = (float)(scale[j] / sqrt(bv + eps));
		b = (float)(bias[j] - bm * a);
		for (i = 0; i < n; i++)
			for (k = 0; k < inner; k++)
				yv[(i * c + j) * inner + k] =
					xv[(i * c + j) * inner + k] * a + b;
		if (rm)
			((float *)rm->data)[j] = (float)(mean[j] * mom + bm * (1 - mom));
		if (rv)
			((float *)rv->data)[j] = (float)(var[j] * mom + bv * (1 - mom));
	}
}

/* Inference: y = x * a + b per channel plane, planes over the pool. */
struct npu_bn_job {
	const float *scale, *bias, *mean, *var;
	float eps;
	int64_t c, inner;
	const float *x;
	float *y;
};

static void npu_bn_planes(void *ctx, size_t begin, size_t end)
{
	const struct npu_bn_job *job = ctx;
	size_t pl;

	for (pl = begin; pl < end; pl++) {
		int64_t j = (int64_t)pl % job->c;
		float a = job->scale[j] / sqrtf(job->var[j] + job->eps);
		float b = job->bias[j] - job->mean[j] * a;

		npu_vec_axpb_f32(job->x + pl * (size_t)job->inner,
				 job->y + pl * (size_t)job->inner,
				 (size_t)job->inner, a, b);
	}
}

static npu_status batchnorm_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const float *scale = ctx->inputs[1]->data, *bias = ctx->inputs[2]->data;
	const float *mean = ctx->inputs[3]->data, *var = ctx->inputs[4]->data;
	float eps = npu_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
	int64_t n = x->shape.dims[0], c = x->shape.dims[1];
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank);
	const float *xv = x->data;
	float *yv = ctx->outputs[0]->data;

	if (npu_node_attr_int_or(ctx->node, "training_mode", 0)) {
		batchnorm_training(ctx);
		return NPU_OK;
	}
	if (n * c == 0)
		return NPU_OK;
	{
		struct npu_bn_job job = {
			.scale = scale, .bias = bias, .mean = mean, .var = var,
			.eps = eps, .c = c, .inner = inner, .x = xv, .y = yv,
		};
		size_t grain = inner >= NPU_VEC_GRAIN ? 1 :
			       NPU_VEC_GRAIN / (size_t)(inner ? inner : 1);

		npu_threadpool_parallel_for(ctx->pool, (size_t)(n * c), grain,
					    npu_bn_planes, &job);
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(batch_normalization) = {
	.op_type = "BatchNormalization",
	.domain = "",
	.compute = batchnorm_compute,
};

/* ---- InstanceNormalization ---- */

/* Mean and 1 / sqrt(var + eps) of n floats, accumulated in double. */
static void npu_moments(const float *x, int64_t n, float eps, float *mean,
			float *inv_std)
{
	double s = 0, v = 0, m;
	int64_t k;

	for (k = 0; k < n; k++)
		s += x[k];
	m = n ? s / (double)n : 0;
	for (k = 0; k < n; k++)
		v += (x[k] - m) * (x[k] - m);
	v = n ? v / (double)n : 0;
	*mean = (float)m;
	*inv_std = (float)(1.0 / sqrt(v + eps));
}

static npu_status instancenorm_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const float *scale = ctx->inputs[1]->data, *bias = ctx->inputs[2]->data;
	float eps = npu_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], i, j, k;
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank);

	for (i = 0; i < n; i++)
		for (j = 0; j < c; j++) {
			const float *xp = (const float *)x->data + (i * c + j) * inner;
			float *yp = (float *)ctx->outputs[0]->data + (i * c + j) * inner;
			float mean, inv;

			npu_moments(xp, inner, eps, &mean, &inv);
			for (k = 0; k < inner; k++)
				yp[k] = (xp[k] - mean) * inv * scale[j] + bias[j];
		}
	return NPU_OK;
}

NPU_CPU_OP_DEF(instance_normalization) = {
	.op_type = "InstanceNormalization",
	.domain = "",
	.compute = instancenorm_compute,
};

/* ---- LayerNormalization (opset 17) ---- */

static npu_status layernorm_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *sc = ctx->inputs[1];
	const struct npu_tensor *b = npu_op_in(ctx, 2);
	struct npu_tensor *mean_t = npu_op_out(ctx, 1), *inv_t = npu_op_out(ctx, 2);
	float eps = npu_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
	int64_t axis = npu_node_attr_int_or(ctx->node, "axis", -1);
	int64_t outer, norm, o, k, sc_step, b_step;
	const float *scale = sc->data, *bias = b ? b->data : NULL;

	if (axis < 0)
		axis += x->shape.rank;
	outer = npu_op_dims_prod(&x->shape, 0, (int)axis);
	norm = npu_op_dims_prod(&x->shape, (int)axis, x->shape.rank);
	sc_step = npu_op_numel(sc) == 1 ? 0 : 1;
	b_step = b && npu_op_numel(b) == 1 ? 0 : 1;
	for (o = 0; o < outer; o++) {
		const float *xp = (const float *)x->data + o * norm;
		float *yp = (float *)ctx->outputs[0]->data + o * norm;
		float mean, inv;

		npu_moments(xp, norm, eps, &mean, &inv);
		for (k = 0; k < norm; k++)
			yp[k] = (xp[k] - mean) * inv * scale[k * sc_step] +
				(bias ? bias[k * b_step] : 0.0f);
		if (mean_t)
			((float *)mean_t->data)[o] = mean;
		if (inv_t)
			((float *)inv_t->data)[o] = inv;
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(layer_normalization) = {
	.op_type = "LayerNormalization",
	.domain = "",
	.compute = layernorm_compute,
};

/* ---- LRN: across-channel local response normalization ---- */

/* y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta */
static npu_status lrn_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const struct npu_node *node = ctx->node;
	float alpha = npu_node_attr_float_or(node, "alpha", 1e-4f);
	float beta = npu_node_attr_float_or(node, "beta", 0.75f);
	float bias = npu_node_attr_float_or(node, "bias", 1.0f);
	int64_t size = npu_node_attr_int_or(node, "size", 1);
	int64_t n = x->shape.dims[0], c = x->shape.dims[1];
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo, b, ch, k, i;
	const float *xv = x->data;
	float *yv = ctx->outputs[0]->data;

	for (b = 0; b < n; b++)
		for (ch = 0; ch < c; ch++)
			for (i = 0; i < inner; i++) {
				double sq = 0;
				int64_t at = (b * c + ch) * inner + i;

				for (k = ch - lo; k <= ch + hi; k++)
					if (k >= 0 && k < c) {
						double v = xv[(b * c + k) * inner + i];

						sq += v * v;
					}
				yv[at] = (float)(xv[at] /
						 pow(bias + alpha / (double)size * sq, beta));
			}
	return NPU_OK;
}

NPU_CPU_OP_DEF(lrn) = {
	.op_type = "LRN",
	.domain = "",
	.compute = lrn_compute,
};

/* ---- MeanVarianceNormalization ---- */

/*
 * (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over the axes, as the
 * operator's function body computes it.
 */
static npu_status mvn_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const float *xv = x->data;
	float *yv = ctx->outputs[0]->data;
	int rank = x->shape.rank, d;
	bool reduced[NPU_MAX_RANK];
	int64_t n = npu_op_numel(x), groups = 1, count = 1, i, g;
	int64_t gstride[NPU_MAX_RANK], coord[NPU_MAX_RANK] = { 0 }, *gi;
	double *sum, *sq;
	npu_status st;

	st = npu_mvn_axes(ctx->node, rank, reduced, ctx->err);
	if (st)
		return st;
	/* Group index of an element: its coordinates in the kept dims. */
	for (d = rank - 1; d >= 0; d--) {
		gstride[d] = reduced[d] ? 0 : groups;
		if (reduced[d])
			count *= x->shape.dims[d];
		else
			groups *= x->shape.dims[d];
	}
	if (!n)
		return NPU_OK;
	sum = calloc((size_t)groups, sizeof(*sum));
	sq = calloc((size_t)groups, sizeof(*sq));
	gi = malloc((size_t)n * sizeof(*gi));
	if (!sum || !sq || !gi) {
		free(sum);
		free(sq);
		free(gi);
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	}
	for (i = 0; i < n; i++) {
		g = 0;
		for (d = 0; d < rank; d++)
			g += coord[d] * gstride[d];
		gi[i] = g;
		sum[g] += xv[i];
		sq[g] += (double)xv[i] * xv[i];
		for (d = rank - 1; d >= 0; d--) {
			if (++coord[d] < x->shape.dims[d])
				break;
			coord[d] = 0;
		}
	}
	for (g = 0; g < groups; g++) {
		double mean = sum[g] / (double)count;
		double var = sq[g] / (double)count - mean * mean;

		sum[g] = mean;
		sq[g] = sqrt(var > 0 ? var : 0) + 1e-9;
	}
	for (i = 0; i < n; i++)
		yv[i] = (float)((xv[i] - sum[gi[i]]) / sq[gi[i]]);
	free(sum);
	free(sq);
	free(gi);
	return NPU_OK;
}

NPU_CPU_OP_DEF(mean_variance_normalization) = {
	.op_type = "MeanVarianceNormalization",
	.domain = "",
	.compute = mvn_compute,
};
