// SPDX-License-Identifier: MIT
/*
 * SumToShape (domain ai.npu.cpu, made by the importer's Gradient lowering,
 * onnx/npu_onnx_gradient.c): Y = G summed over the axes along which input
 * R's shape was broadcast to G's, so Y has R's shape. It is the adjoint of
 * numpy broadcasting: the gradient of a broadcast operand. float, double.
 */
#include <string.h>

#include "cpu/ops/op_common.h"

static npu_status sum_to_shape_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *g = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_shape *ys = &y->shape;
	struct npu_bcast bc;
	int64_t r, k, off;
	bool dbl = g->dtype == NPU_DTYPE_DOUBLE;

	if (!npu_op_broadcasts_to(ys, &g->shape))
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

/* The schema is the importer's, which makes the op (onnx/npu_onnx_gradient.c). */
NPU_CPU_OP_DEF(sum_to_shape) = {
	.op_type = "SumToShape", .domain = NPU_CPU_FUSED_DOMAIN,
	.compute = sum_to_shape_compute,
};
