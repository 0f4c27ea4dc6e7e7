// SPDX-License-Identifier: MIT
/* The schemas of op_matmul.c's ops: Det, Gemm, MatMul. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Kernels: float (npu_sgemm; float16 / bfloat16 widened to it), double,
 * int64 and uint64 (narrower integers widened to them), as the spec's
 * MatMul-13 / Gemm-13 type lists allow. Every input has the type of A.
 */
static npu_status npu_gemm_type_ok(const struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	enum npu_dtype t = node->inputs[0]->dtype, w = npu_op_wide_dtype(t, true);
	size_t i;

	if (w != NPU_DTYPE_FLOAT && w != NPU_DTYPE_DOUBLE &&
	    t != NPU_DTYPE_INT32 && t != NPU_DTYPE_INT64 &&
	    t != NPU_DTYPE_UINT32 && t != NPU_DTYPE_UINT64)
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  node->inputs[0]->name, npu_dtype_name(t));
	for (i = 1; i < node->num_inputs; i++)
		if (node->inputs[i] && node->inputs[i]->dtype != t)
			return npu_op_invalid(ctx->err, node,
					      "input %zu '%s' has type %s, input 0 %s",
					      i, node->inputs[i]->name,
					      npu_dtype_name(node->inputs[i]->dtype),
					      npu_dtype_name(t));
	return NPU_OK;
}

/* A and B promoted to rank >= 2 the numpy way. */
void npu_matmul_promote(const struct npu_shape *a,
			const struct npu_shape *b,
			struct npu_shape *pa, struct npu_shape *pb)
{
	*pa = *a;
	*pb = *b;
	if (a->rank == 1) {
		pa->rank = 2;
		pa->dims[0] = 1;
		pa->dims[1] = a->dims[0];
	}
	if (b->rank == 1) {
		pb->rank = 2;
		pb->dims[1] = 1;
	}
}

static npu_status matmul_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *a, *b;
	struct npu_shape pa, pb, ba, bb, batch, *out = &ctx->out_shapes[0];
	int64_t ka, kb;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	a = node->inputs[0];
	b = node->inputs[1];
	st = npu_gemm_type_ok(ctx);
	if (st)
		return st;
	if (a->shape.rank < 1 || b->shape.rank < 1)
		return npu_op_invalid(ctx->err, node, "scalar operand");
	npu_matmul_promote(&a->shape, &b->shape, &pa, &pb);
	ka = pa.dims[pa.rank - 1];
	kb = pb.dims[pb.rank - 2];
	if (ka >= 0 && kb >= 0 && ka != kb)
		return npu_op_invalid(ctx->err, node,
				      "inner dimensions differ: %lld vs %lld",
				      (long long)ka, (long long)kb);
	ba = pa;
	ba.rank -= 2;
	bb = pb;
	bb.rank -= 2;
	st = npu_op_broadcast_shape(ctx, &ba, &bb, &batch);
	if (st)
		return st;
	*out = batch;
	if (a->shape.rank > 1)
		out->dims[out->rank++] = pa.dims[pa.rank - 2];
	if (b->shape.rank > 1)
		out->dims[out->rank++] = pb.dims[pb.rank - 1];
	ctx->out_dtypes[0] = a->dtype;
	return NPU_OK;
}

static npu_status gemm_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *a, *b;
	struct npu_shape y, tmp;
	int64_t m, ka, kb, n;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 7 ?
					NPU_OP_ATTRS("alpha", "beta", "transA",
						     "transB", "broadcast") :
					NPU_OP_ATTRS("alpha", "beta", "transA",
						     "transB"));
	if (st)
		return st;
	st = npu_gemm_type_ok(ctx);
	if (st)
		return st;
	a = &node->inputs[0]->shape;
	b = &node->inputs[1]->shape;
	if (a->rank != 2 || b->rank != 2)
		return npu_op_invalid(ctx->err, node, "A and B must be 2-D");
	if (node->num_inputs < 3 && node->opset < 11)
		return npu_op_invalid(ctx->err, node, "C is required before opset 11");
	m = npu_node_attr_int_or(node, "transA", 0) ? a->dims[1] : a->dims[0];
	ka = npu_node_attr_int_or(node, "transA", 0) ? a->dims[0] : a->dims[1];
	kb = npu_node_attr_int_or(node, "transB", 0) ? b->dims[1] : b->dims[0];
	n = npu_node_attr_int_or(node, "transB", 0) ? b->dims[0] : b->dims[1];
	if (ka >= 0 && kb >= 0 && ka != kb)
		return npu_op_invalid(ctx->err, node,
				      "inner dimensions differ: %lld vs %lld",
				      (long long)ka, (long long)kb);
	y.rank = 2;
	y.dims[0] = m;
	y.dims[1] = n;
	if (npu_op_input(node, 2)) {
		st = npu_op_broadcast_shape(ctx, &y, &node->inputs[2]->shape,
					    &tmp);
		if (st)
			return st;
		if (tmp.rank != 2 || (m >= 0 && tmp.dims[0] != m) ||
		    (n >= 0 && tmp.dims[1] != n))
			return npu_op_invalid(ctx->err, node,
					      "C does not broadcast to (M, N)");
	}
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0] = y;
	return NPU_OK;
}

static npu_status det_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	if (x->rank < 2 ||
	    (x->dims[x->rank - 1] >= 0 && x->dims[x->rank - 2] >= 0 &&
	     x->dims[x->rank - 1] != x->dims[x->rank - 2]))
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' must end in square matrices (..., M, M)",
				      node->inputs[0]->name);
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0] = *x;
	ctx->out_shapes[0].rank -= 2;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(matmul) = {
	.op_type = "MatMul", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = matmul_infer,
};

NPU_OP_SCHEMA_DEF(gemm) = {
	.op_type = "Gemm", .domain = "",
	.since_version = 6, .max_version = 21,
	.infer = gemm_infer,
};

NPU_OP_SCHEMA_DEF(det) = {
	.op_type = "Det", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = det_infer,
};
