// SPDX-License-Identifier: MIT
/* The schemas of op_grid_sample.c's ops: GridSample. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/grid_sample.h"

#include <math.h>
#include <string.h>

npu_status npu_gs_args(const struct npu_node *node,
		       struct npu_gs_args *a, struct npu_error *err)
{
	const char *mode = npu_node_attr_string_or(node, "mode",
						   node->opset >= 20 ? "linear" :
								       "bilinear");
	const char *pad = npu_node_attr_string_or(node, "padding_mode", "zeros");
	bool new_names = node->opset >= 20;

	if (!strcmp(mode, new_names ? "linear" : "bilinear"))
		a->mode = GS_LINEAR;
	else if (!strcmp(mode, "nearest"))
		a->mode = GS_NEAREST;
	else if (!strcmp(mode, new_names ? "cubic" : "bicubic"))
		a->mode = GS_CUBIC;
	else
		return npu_op_invalid(err, node,
				      "attribute 'mode' = '%s' is not supported at opset %d",
				      mode, node->opset);
	if (!strcmp(pad, "zeros"))
		a->pad = GS_ZEROS;
	else if (!strcmp(pad, "border"))
		a->pad = GS_BORDER;
	else if (!strcmp(pad, "reflection"))
		a->pad = GS_REFLECTION;
	else
		return npu_op_invalid(err, node,
				      "attribute 'padding_mode' = '%s' is not zeros, border or reflection",
				      pad);
	a->align = npu_node_attr_int_or(node, "align_corners", 0) != 0;
	return NPU_OK;
}

static npu_status grid_sample_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype f32[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *xs, *gs;
	struct npu_shape *out = &ctx->out_shapes[0];
	struct npu_gs_args a;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("mode", "padding_mode",
							 "align_corners"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, f32);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, f32);
	if (!st)
		st = npu_gs_args(node, &a, ctx->err);
	if (st)
		return st;
	xs = &node->inputs[0]->shape;
	gs = &node->inputs[1]->shape;
	if (xs->rank != 4)
		return xs->rank == 5 ?
		       npu_op_unsupported(ctx->err, node,
					  "3-D (volumetric) sampling is not supported") :
		       npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected 4 (N, C, H, W)",
				      node->inputs[0]->name, xs->rank);
	if (gs->rank != 4 || (gs->dims[3] >= 0 && gs->dims[3] != 2))
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (grid) must be [N, H_out, W_out, 2]",
				      node->inputs[1]->name);
	if (xs->dims[0] >= 0 && gs->dims[0] >= 0 && xs->dims[0] != gs->dims[0])
		return npu_op_invalid(ctx->err, node,
				      "grid batch %lld differs from X batch %lld",
				      (long long)gs->dims[0], (long long)xs->dims[0]);
	out->rank = 4;
	out->dims[0] = xs->dims[0];
	out->dims[1] = xs->dims[1];
	out->dims[2] = gs->dims[1];
	out->dims[3] = gs->dims[2];
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(grid_sample) = {
	.op_type = "GridSample", .domain = "",
	.since_version = 16, .max_version = 21,
	.infer = grid_sample_infer,
};
