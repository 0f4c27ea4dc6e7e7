// SPDX-License-Identifier: MIT
/*
 * SumToShape (domain ai.npu.cpu, made by the importer's Gradient lowering,
 * onnx/npu_onnx_gradient.c): Y = G summed over the axes along which input
 * R's shape was broadcast to G's, so Y has R's shape. It is the adjoint of
 * numpy broadcasting: the gradient of a broadcast operand. float, double.
 */
#include <string.h>

#include "cpu/ops/op_common.h"

/* Whether r broadcasts to g (numpy rules, r may not be larger). */
static bool broadcasts_to(const struct npu_shape *r, const struct npu_shape *g)
{
	int i, k = g->rank - r->rank;

	if (k < 0)
		return false;
	for (i = 0; i < r->rank; i++)
		if (r->dims[i] >= 0 && g->dims[k + i] >= 0 && r->dims[i] != 1 &&
		    r->dims[i] != g->dims[k + i])
			return false;
	return true;
}

static npu_status sum_to_shape_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *g, *r;
	char a[160], b[160];
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	g = node->inputs[0];
	r = node->inputs[1];
	if (g->dtype != NPU_DTYPE_FLOAT && g->dtype != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(ctx->err, node, "gradient of type %s is not supported",
					  npu_dtype_name(g->dtype));
	if (g->shape.rank >= 0 && r->shape.rank >= 0 && !broadcasts_to(&r->shape, &g->shape))
		return npu_op_invalid(ctx->err, node,
				      "'%s' (%s) does not broadcast to its gradient's shape %s",
				      r->name, npu_shape_str(&r->shape, a, sizeof(a)),
				      npu_shape_str(&g->shape, b, sizeof(b)));
	ctx->out_dtypes[0] = g->dtype;
	ctx->out_shapes[0] = r->shape;
	return NPU_OK;
}

static npu_status sum_to_shape_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *g = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_shape *ys = &y->shape;
	struct npu_bcast bc;
	int64_t r, k, off;
	bool dbl = g->dtype == NPU_DTYPE_DOUBLE;

	if (!broadcasts_to(ys, &g->shape))
		return npu_op_invalid(ctx->err, ctx->node,
				      "input '%s' does not broadcast to its gradient's shape",
				      ctx->node->inputs[1]->name);
	if (y->nbytes)
		memset(y->data, 0, y->nbytes);
	if (!npu_op_numel(g))
		return NPU_OK;
	/* Walk G's rows; each reads (here: adds into) Y as a broadcast input would. */
	npu_bcast_init(&bc, &g->shape, &ys, 1);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, &off);
		for (k = 0; k < bc.len; k++) {
			if (dbl)
				((double *)y->data)[off + k * bc.step[0]] +=
					((const double *)g->data)[r * bc.len + k];
			else
				((float *)y->data)[off + k * bc.step[0]] +=
					((const float *)g->data)[r * bc.len + k];
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(sum_to_shape) = {
	.op_type = "SumToShape", .domain = NPU_CPU_FUSED_DOMAIN, .since_version = 1,
	.max_version = 1, .infer = sum_to_shape_infer, .compute = sum_to_shape_compute,
};
