// SPDX-License-Identifier: MIT
/*
 * Normalization: BatchNormalization (inference form only),
 * InstanceNormalization and LayerNormalization (with its optional Mean and
 * InvStdDev outputs).
 */
#include <math.h>
#include <stdlib.h>

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
	if (npu_node_attr_int_or(node, "training_mode", 0))
		return npu_op_unsupported(ctx->err, node,
					  "training_mode = 1 is not supported (inference only)");
	if (!npu_node_attr_int_or(node, "spatial", 1))
		return npu_op_unsupported(ctx->err, node,
					  "spatial = 0 is not supported");
	if (node->num_outputs > 1)
		return npu_op_unsupported(ctx->err, node,
					  "training outputs (%zu outputs) are not supported",
					  node->num_outputs);
	x = &node->inputs[0]->shape;
	if (x->rank < 2)
		return npu_op_invalid(ctx->err, node, "X has rank %d", x->rank);
	st = npu_per_channel(ctx, 1, 5, x->dims[1]);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = *x;
	return NPU_OK;
}

static npu_status batchnorm_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const float *scale = ctx->inputs[1]->data, *bias = ctx->inputs[2]->data;
	const float *mean = ctx->inputs[3]->data, *var = ctx->inputs[4]->data;
	float eps = npu_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], i, j, k;
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank);
	const float *xv = x->data;
	float *yv = ctx->outputs[0]->data;

	for (j = 0; j < c; j++) {
		float a = scale[j] / sqrtf(var[j] + eps);
		float b = bias[j] - mean[j] * a;

		for (i = 0; i < n; i++) {
			const float *xp = xv + (i * c + j) * inner;
			float *yp = yv + (i * c + j) * inner;

			for (k = 0; k < inner; k++)
				yp[k] = xp[k] * a + b;
		}
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
