// SPDX-License-Identifier: MIT
/* The schemas of op_loss.c's ops: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/loss.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

npu_status npu_loss_reduction(const struct npu_node *node,
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
	enum npu_loss_reduction red = 0;
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

static npu_status nll_loss_infer(struct npu_infer_ctx *ctx)
{
	return npu_loss_infer(ctx, false);
}

static npu_status sce_loss_infer(struct npu_infer_ctx *ctx)
{
	return npu_loss_infer(ctx, true);
}

NPU_OP_SCHEMA_DEF(negative_log_likelihood_loss) = {
	.op_type = "NegativeLogLikelihoodLoss", .domain = "",
	.since_version = 12, .max_version = 21,
	.infer = nll_loss_infer,
};

NPU_OP_SCHEMA_DEF(softmax_cross_entropy_loss) = {
	.op_type = "SoftmaxCrossEntropyLoss", .domain = "",
	.since_version = 12, .max_version = 21,
	.infer = sce_loss_infer,
};
