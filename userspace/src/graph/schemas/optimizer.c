// SPDX-License-Identifier: MIT
/* The schemas of op_optimizer.c's ops: Adagrad, Momentum, Adam (ai.onnx.preview.training). */
#include "graph/schemas/schema_common.h"

#define NPU_TRAINING_DOMAIN "ai.onnx.preview.training"
#include "graph/schemas/optimizer.h"

#include <math.h>
#include <string.h>

static npu_status npu_opt_infer(struct npu_infer_ctx *ctx,
				enum npu_opt_kind k)
{
	const struct npu_node *node = ctx->node;
	size_t groups = k == OPT_ADAM ? 4 : 3, n, i, g;	/* X, G and the states */
	const struct npu_value *r, *t;
	npu_status st;

	if (k == OPT_ADAGRAD)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("decay_factor", "epsilon",
							  "norm_coefficient"));
	else if (k == OPT_MOMENTUM)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("alpha", "beta", "mode",
							  "norm_coefficient"));
	else
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("alpha", "beta", "epsilon",
							  "norm_coefficient",
							  "norm_coefficient_post"));
	if (st)
		return st;
	if (node->num_inputs < 2 + groups || (node->num_inputs - 2) % groups)
		return npu_op_invalid(ctx->err, node,
				      "%zu inputs: expected R, T and %zu tensors per optimized input",
				      node->num_inputs, groups);
	n = (node->num_inputs - 2) / groups;
	if (node->num_outputs != n * (groups - 1))
		return npu_op_invalid(ctx->err, node,
				      "%zu outputs, expected %zu",
				      node->num_outputs, n * (groups - 1));
	for (i = 0; i < node->num_inputs; i++)
		if (!node->inputs[i])
			return npu_op_invalid(ctx->err, node,
					      "input %zu is missing", i);
	r = node->inputs[0];
	t = node->inputs[1];
	if ((r->dtype != NPU_DTYPE_FLOAT && r->dtype != NPU_DTYPE_DOUBLE) ||
	    npu_shape_numel(&r->shape) > 1)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' (R) must be a float or double scalar",
				      r->name);
	if (t->dtype != NPU_DTYPE_INT64 || npu_shape_numel(&t->shape) > 1)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (T) must be an int64 scalar",
				      t->name);
	if (k == OPT_MOMENTUM) {
		const char *mode = npu_node_attr_string_or(node, "mode", "");

		if (strcmp(mode, "standard") && strcmp(mode, "nesterov"))
			return npu_op_invalid(ctx->err, node,
					      "attribute 'mode' = '%s' is not standard or nesterov",
					      mode);
		if (!npu_node_attr(node, "alpha") || !npu_node_attr(node, "beta") ||
		    !npu_node_attr(node, "norm_coefficient"))
			return npu_op_invalid(ctx->err, node,
					      "attributes 'alpha', 'beta' and 'norm_coefficient' are required");
	}
	for (i = 0; i < n; i++) {
		const struct npu_value *x = node->inputs[2 + i];

		if (x->dtype != NPU_DTYPE_FLOAT && x->dtype != NPU_DTYPE_DOUBLE)
			return npu_op_unsupported(ctx->err, node,
						  "input %zu '%s' has type %s, not supported",
						  2 + i, x->name,
						  npu_dtype_name(x->dtype));
		for (g = 1; g < groups; g++) {
			const struct npu_value *o = node->inputs[2 + g * n + i];
			int d;

			if (o->dtype != x->dtype || o->shape.rank != x->shape.rank)
				return npu_op_invalid(ctx->err, node,
						      "input %zu '%s' does not match input %zu '%s' in type or rank",
						      2 + g * n + i, o->name, 2 + i,
						      x->name);
			for (d = 0; d < x->shape.rank; d++)
				if (o->shape.dims[d] >= 0 && x->shape.dims[d] >= 0 &&
				    o->shape.dims[d] != x->shape.dims[d])
					return npu_op_invalid(ctx->err, node,
							      "input %zu '%s' dim %d differs from input %zu",
							      2 + g * n + i, o->name,
							      d, 2 + i);
		}
		/* Outputs: the new X, then the new states, input order. */
		for (g = 0; g + 1 < groups; g++) {
			ctx->out_dtypes[g * n + i] = x->dtype;
			ctx->out_shapes[g * n + i] = x->shape;
		}
	}
	return NPU_OK;
}

#define OPT_SCHEMA(sym, name, kind)					\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return npu_opt_infer(ctx, kind);				\
}									\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = NPU_TRAINING_DOMAIN,			\
	.since_version = 1, .max_version = 1,				\
	.infer = sym##_infer,						\
};

OPT_SCHEMA(adagrad, "Adagrad", OPT_ADAGRAD)
OPT_SCHEMA(momentum, "Momentum", OPT_MOMENTUM)
OPT_SCHEMA(adam, "Adam", OPT_ADAM)
