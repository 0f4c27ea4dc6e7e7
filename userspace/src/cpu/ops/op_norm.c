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

static npu_status npu_float_inputs(const struct npu_infer_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->node->num_inputs; i++) {
		const struct npu_value *v = ctx->node->inputs[i];

		if (v && v->dtype != NPU_DTYPE_FLOAT)
			return npu_op_unsupported(ctx->err, ctx->node,
						  "input %zu '%s' has type %s, not supported",
						  i, v->name, npu_dtype_name(v->dtype));
	}
	return NPU_OK;
}

/* Checks that inputs [from, to) are 1-D with 'c' elements. */
static npu_status npu_per_channel(const struct npu_infer_ctx *ctx, size_t from,
				  size_t to, int64_t c)
{
	size_t i;

	for (i = from; i < to; i++) {
		const struct npu_value *v = ctx->node->inputs[i];
		int64_t n = npu_shape_numel(&v->shape);

		if (v->shape.rank != 1 || (c >= 0 && n >= 0 && n != c))
			return npu_op_invalid(ctx->err, ctx->node,
					      "input %zu '%s' must be 1-D of %lld channels",
					      i, v->name, (long long)c);
	}
	return NPU_OK;
}

/* ---- BatchNormalization ---- */

static npu_status batchnorm_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x;
	bool training;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 5, 5);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("epsilon", "momentum",
							 "training_mode", "spatial",
							 "is_test"));
	if (!st)
		st = npu_float_inputs(ctx);
	if (st)
		return st;
	training = npu_node_attr_int_or(node, "training_mode", 0) != 0;
	if (training && node->opset < 14)
		return npu_op_unsupported(ctx->err, node,
					  "training_mode = 1 is not supported before opset 14");
	if (!npu_node_attr_int_or(node, "spatial", 1))
		return npu_op_unsupported(ctx->err, node,
					  "spatial = 0 is not supported");
	if (node->num_outputs > (training ? 3u : 1u))
		return npu_op_unsupported(ctx->err, node,
					  "training outputs (%zu outputs) are not supported%s",
					  node->num_outputs,
					  training ? "" : " without training_mode = 1");
	x = &node->inputs[0]->shape;
	if (x->rank < 2)
		return npu_op_invalid(ctx->err, node, "X has rank %d", x->rank);
	st = npu_per_channel(ctx, 1, 5, x->dims[1]);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = *x;
	for (i = 1; i < node->num_outputs; i++) {
		/* running_mean, running_var */
		ctx->out_dtypes[i] = NPU_DTYPE_FLOAT;
		ctx->out_shapes[i].rank = 1;
		ctx->out_shapes[i].dims[0] = x->dims[1];
	}
	return NPU_OK;
}

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
	.op_type = "BatchNormalization", .domain = "", .since_version = 6,
	.max_version = 21, .infer = batchnorm_infer,
	.compute = batchnorm_compute,
};

/* ---- InstanceNormalization ---- */

static npu_status instancenorm_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x;
	npu_status st;

	st = npu_op_check_arity(ctx, 3, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("epsilon"));
	if (!st)
		st = npu_float_inputs(ctx);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	if (x->rank < 3)
		return npu_op_invalid(ctx->err, node, "X has rank %d", x->rank);
	st = npu_per_channel(ctx, 1, 3, x->dims[1]);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = *x;
	return NPU_OK;
}

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
	.op_type = "InstanceNormalization", .domain = "", .since_version = 6,
	.max_version = 21, .infer = instancenorm_infer,
	.compute = instancenorm_compute,
};

/* ---- LayerNormalization (opset 17) ---- */

static npu_status layernorm_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x;
	int64_t norm;
	int axis, i;
	size_t k;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "epsilon",
							 "stash_type"));
	if (!st)
		st = npu_float_inputs(ctx);
	if (st)
		return st;
	if (npu_node_attr_int_or(node, "stash_type", 1) != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "stash_type %lld is not supported",
					  (long long)npu_node_attr_int_or(node, "stash_type", 1));
	x = &node->inputs[0]->shape;
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", -1), x->rank, &axis);
	if (st)
		return st;
	norm = npu_op_dims_prod(x, axis, x->rank);
	for (k = 1; k < node->num_inputs; k++) {
		const struct npu_value *v = node->inputs[k];
		int64_t n;

		if (!v)
			continue;
		n = npu_shape_numel(&v->shape);
		if (n >= 0 && norm >= 0 && n != norm && n != 1)
			return npu_op_unsupported(ctx->err, node,
						  "input %zu '%s' has %lld elements; only the normalized shape (%lld) or a scalar is supported",
						  k, v->name, (long long)n, (long long)norm);
	}
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = *x;
	for (k = 1; k < node->num_outputs && k < 3; k++) {
		ctx->out_dtypes[k] = NPU_DTYPE_FLOAT;
		ctx->out_shapes[k] = *x;
		for (i = axis; i < x->rank; i++)
			ctx->out_shapes[k].dims[i] = 1;
	}
	return NPU_OK;
}

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
	.op_type = "LayerNormalization", .domain = "", .since_version = 17,
	.max_version = 21, .infer = layernorm_infer,
	.compute = layernorm_compute,
};

/* ---- LRN: across-channel local response normalization ---- */

static npu_status lrn_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_attr *size = npu_node_attr(node, "size");
	const struct npu_value *x;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("alpha", "beta", "bias",
							 "size"));
	if (!st)
		st = npu_float_inputs(ctx);
	if (st)
		return st;
	x = node->inputs[0];
	if (!size || size->type != NPU_ATTR_INT || size->i <= 0)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'size' is missing or not positive");
	if (x->shape.rank < 3)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected (N, C, D1, ...)",
				      x->name, x->shape.rank);
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

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
	.op_type = "LRN", .domain = "", .since_version = 1,
	.max_version = 21, .infer = lrn_infer, .compute = lrn_compute,
};

/* ---- MeanVarianceNormalization ---- */

/* reduced[d] from 'axes' (default 0, 2, 3). */
static npu_status npu_mvn_axes(const struct npu_node *node, int rank,
			       bool *reduced, struct npu_error *err)
{
	static const int64_t def[3] = { 0, 2, 3 };
	int64_t axes[NPU_MAX_RANK];
	int n, i, ax;
	npu_status st;

	st = npu_op_ints_from_attr(node, "axes", axes, NPU_MAX_RANK, &n, err);
	if (st)
		return st;
	if (!npu_node_attr(node, "axes")) {
		memcpy(axes, def, sizeof(def));
		n = 3;
	}
	for (i = 0; i < rank; i++)
		reduced[i] = false;
	for (i = 0; i < n; i++) {
		st = npu_op_axis(err, node, "axes", axes[i], rank, &ax);
		if (st)
			return st;
		reduced[ax] = true;
	}
	return NPU_OK;
}

static npu_status mvn_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	bool reduced[NPU_MAX_RANK];
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axes"));
	if (!st)
		st = npu_float_inputs(ctx);
	if (!st)
		st = npu_mvn_axes(node, node->inputs[0]->shape.rank, reduced,
				  ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	return NPU_OK;
}

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
	.op_type = "MeanVarianceNormalization", .domain = "",
	.since_version = 9, .max_version = 21, .infer = mvn_infer,
	.compute = mvn_compute,
};
