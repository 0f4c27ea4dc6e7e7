// SPDX-License-Identifier: MIT
/* The schemas of op_random.c's ops: RandomUniform(Like), RandomNormal(Like), Bernoulli. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/random.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool rand_like(const struct npu_node *node)
{
	return !strcmp(node->op_type, "RandomUniformLike") ||
	       !strcmp(node->op_type, "RandomNormalLike");
}

/* The output type: attribute 'dtype', else the input's (Like, Bernoulli), else float. */
static npu_status rand_out_dtype(const struct npu_node *node, enum rand_kind k,
				 enum npu_dtype *out, struct npu_error *err)
{
	const struct npu_attr *dt = npu_node_attr(node, "dtype");
	enum npu_dtype d = NPU_DTYPE_FLOAT;

	if (dt && dt->type != NPU_ATTR_INT)
		return npu_op_invalid(err, node, "attribute 'dtype' is not an int");
	if (dt)
		d = (enum npu_dtype)dt->i;
	else if (node->num_inputs && node->inputs[0])
		d = node->inputs[0]->dtype;
	if (k == RAND_BERNOULLI) {
		switch (d) {
		case NPU_DTYPE_FLOAT: case NPU_DTYPE_DOUBLE: case NPU_DTYPE_BOOL:
		case NPU_DTYPE_INT8: case NPU_DTYPE_UINT8: case NPU_DTYPE_INT16:
		case NPU_DTYPE_UINT16: case NPU_DTYPE_INT32: case NPU_DTYPE_UINT32:
		case NPU_DTYPE_INT64: case NPU_DTYPE_UINT64:
			*out = d;
			return NPU_OK;
		default:
			break;
		}
	} else if (d == NPU_DTYPE_FLOAT || d == NPU_DTYPE_DOUBLE) {
		*out = d;
		return NPU_OK;
	}
	return npu_op_unsupported(err, node, "output type %s is not supported", npu_dtype_name(d));
}

static npu_status rand_infer(struct npu_infer_ctx *ctx, enum rand_kind k)
{
	const struct npu_node *node = ctx->node;
	bool from_input = k == RAND_BERNOULLI || rand_like(node);
	npu_status st;

	st = npu_op_check_arity(ctx, from_input ? 1 : 0, from_input ? 1 : 0);
	if (!st)
		st = npu_op_check_attrs(ctx, k == RAND_UNIFORM
					? NPU_OP_ATTRS("dtype", "high", "low", "seed", "shape")
					: k == RAND_NORMAL
					? NPU_OP_ATTRS("dtype", "mean", "scale", "seed", "shape")
					: NPU_OP_ATTRS("dtype", "seed"));
	if (!st)
		st = rand_out_dtype(node, k, &ctx->out_dtypes[0], ctx->err);
	if (st)
		return st;
	if (k == RAND_BERNOULLI) {
		enum npu_dtype p = node->inputs[0]->dtype;

		if (p != NPU_DTYPE_FLOAT && p != NPU_DTYPE_DOUBLE)
			return npu_op_unsupported(ctx->err, node, "input 'input' has type %s, not supported",
						  npu_dtype_name(p));
	}
	if (from_input) {
		ctx->out_shapes[0] = node->inputs[0]->shape;
	} else {
		const struct npu_attr *shape = npu_node_attr(node, "shape");
		size_t i;

		if (!shape || shape->type != NPU_ATTR_INTS || shape->count > NPU_MAX_RANK)
			return npu_op_invalid(ctx->err, node,
					      "attribute 'shape' is missing, not ints or of rank > %d",
					      NPU_MAX_RANK);
		ctx->out_shapes[0].rank = (int)shape->count;
		for (i = 0; i < shape->count; i++) {
			if (shape->ints[i] < 0)
				return npu_op_invalid(ctx->err, node, "attribute 'shape' has dim %lld",
						      (long long)shape->ints[i]);
			ctx->out_shapes[0].dims[i] = shape->ints[i];
		}
	}
	return NPU_OK;
}

#define RAND_SCHEMA(sym, name, kind, since)				\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return rand_infer(ctx, kind);					\
}									\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = "",					\
	.since_version = since, .max_version = 22,			\
	.infer = sym##_infer,						\
};

RAND_SCHEMA(random_uniform, "RandomUniform", RAND_UNIFORM, 1)
RAND_SCHEMA(random_uniform_like, "RandomUniformLike", RAND_UNIFORM, 1)
RAND_SCHEMA(random_normal, "RandomNormal", RAND_NORMAL, 1)
RAND_SCHEMA(random_normal_like, "RandomNormalLike", RAND_NORMAL, 1)
RAND_SCHEMA(bernoulli, "Bernoulli", RAND_BERNOULLI, 15)
