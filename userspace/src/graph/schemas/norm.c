// SPDX-License-Identifier: MIT
/* The schemas of op_norm.c's ops: BatchNormalization, InstanceNormalization, LRN, LayerNormalization, MeanVarianceNormalization. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/norm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* reduced[d] from 'axes' (default 0, 2, 3). */
npu_status npu_mvn_axes(const struct npu_node *node, int rank,
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

NPU_OP_SCHEMA_DEF(batch_normalization) = {
	.op_type = "BatchNormalization", .domain = "",
	.since_version = 6, .max_version = 21,
	.infer = batchnorm_infer,
};

NPU_OP_SCHEMA_DEF(instance_normalization) = {
	.op_type = "InstanceNormalization", .domain = "",
	.since_version = 6, .max_version = 21,
	.infer = instancenorm_infer,
};

NPU_OP_SCHEMA_DEF(layer_normalization) = {
	.op_type = "LayerNormalization", .domain = "",
	.since_version = 17, .max_version = 21,
	.infer = layernorm_infer,
};

NPU_OP_SCHEMA_DEF(lrn) = {
	.op_type = "LRN", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = lrn_infer,
};

NPU_OP_SCHEMA_DEF(mean_variance_normalization) = {
	.op_type = "MeanVarianceNormalization", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = mvn_infer,
};
