// SPDX-License-Identifier: MIT
/*
 * The schemas of Conv and ConvTranspose (kernels: cpu/ops/op_conv.c), and
 * the shape rules the compiler's fused forms (FusedConv,
 * FusedConvTranspose: compiler/op_schemas.c) share with them.
 */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/conv.h"

#include <string.h>

/*
 * Conv-family arity, attributes ('attrs'), types and W's shape: float, with
 * 'others' float16 / bfloat16 (widened to float by the kernel) and double too.
 */
npu_status npu_conv_check_common(struct npu_infer_ctx *ctx,
				 const char *const *attrs,
				 size_t max_inputs, bool others)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, max_inputs);
	if (!st)
		st = npu_op_check_attrs(ctx, attrs);
	if (st)
		return st;
	for (i = 0; i < node->num_inputs; i++)
		if (node->inputs[i] && node->inputs[i]->dtype != NPU_DTYPE_FLOAT &&
		    !(others && node->inputs[i]->dtype == node->inputs[0]->dtype &&
		      (npu_op_wide_dtype(node->inputs[i]->dtype, false) == NPU_DTYPE_FLOAT ||
		       node->inputs[i]->dtype == NPU_DTYPE_DOUBLE)))
			return npu_op_unsupported(ctx->err, node,
						  "input %zu '%s' has type %s, not supported",
						  i, node->inputs[i]->name,
						  npu_dtype_name(node->inputs[i]->dtype));
	x = &node->inputs[0]->shape;
	w = &node->inputs[1]->shape;
	if (x->rank != 3 && x->rank != 4 && x->rank != 5)
		return npu_op_invalid(ctx->err, node, "X has rank %d", x->rank);
	if (w->rank != x->rank)
		return npu_op_invalid(ctx->err, node, "W has rank %d, X %d",
				      w->rank, x->rank);
	for (i = 2; i < (size_t)w->rank; i++)
		if (w->dims[i] < 0)
			return npu_op_unsupported(ctx->err, node,
						  "kernel size unknown");
	if (npu_node_attr_int_or(node, "group", 1) < 1)
		return npu_op_invalid(ctx->err, node, "group < 1");
	{
		int64_t ks[NPU_WIN_MAX];
		int cnt, j;

		st = npu_op_ints_from_attr(node, "kernel_shape", ks, NPU_WIN_MAX,
					   &cnt, ctx->err);
		if (st)
			return st;
		for (j = 0; j < cnt; j++)
			if (cnt != w->rank - 2 || ks[j] != w->dims[2 + j])
				return npu_op_invalid(ctx->err, node,
						      "kernel_shape does not match W");
	}
	return NPU_OK;
}

npu_status npu_conv_infer_common(struct npu_infer_ctx *ctx, const char *const *fused_attrs)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	struct npu_window win;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int i;
	npu_status st;

	if (fused_attrs)
		st = npu_conv_check_common(ctx, fused_attrs, 4, false);
	else
		st = npu_conv_check_common(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
							     "group", "kernel_shape",
							     "pads", "strides"), 3, true);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	w = &node->inputs[1]->shape;
	if ((x->dims[1] >= 0 && w->dims[1] >= 0 && x->dims[1] != w->dims[1] * group) ||
	    (w->dims[0] >= 0 && w->dims[0] % group))
		return npu_op_invalid(ctx->err, node,
				      "channels (X %lld, W %lldx%lld) do not match group %lld",
				      (long long)x->dims[1], (long long)w->dims[0],
				      (long long)w->dims[1], (long long)group);
	if (npu_op_input(node, 2) && npu_shape_numel(&node->inputs[2]->shape) >= 0 &&
	    w->dims[0] >= 0 && npu_shape_numel(&node->inputs[2]->shape) != w->dims[0])
		return npu_op_invalid(ctx->err, node, "B does not have M elements");
	st = npu_op_window(node, x, &w->dims[2], x->rank - 2, false, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = x->rank;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = w->dims[0];
	for (i = 0; i < win.n; i++)
		ctx->out_shapes[0].dims[2 + i] = win.out[i];
	if (fused_attrs) {
		const struct npu_value *z = npu_op_input(node, 3);

		if (x->rank == 5)
			return npu_op_unsupported(ctx->err, node,
						  "FusedConv is 1-D or 2-D, X has rank 5");
		if (z) {
			const struct npu_shape *zs = &z->shape;
			bool same = zs->rank == x->rank;

			for (i = 0; same && i < zs->rank; i++)
				same = zs->dims[i] == ctx->out_shapes[0].dims[i] &&
				       zs->dims[i] >= 0;
			if (!same)
				return npu_op_invalid(ctx->err, node,
						      "residual Z '%s' is not shaped as the output",
						      z->name);
		}
	}
	return NPU_OK;
}

static npu_status conv_infer(struct npu_infer_ctx *ctx)
{
	return npu_conv_infer_common(ctx, NULL);
}

npu_status npu_convt_geom(const struct npu_node *node,
			  const struct npu_shape *x,
			  const struct npu_shape *w,
			  struct npu_convt_geom *g,
			  struct npu_error *err)
{
	const char *auto_pad = npu_node_attr_string_or(node, "auto_pad", "NOTSET");
	int64_t strides[3], dil[3], pads[6], opad[3], oshape[NPU_MAX_RANK];
	int n = x->rank - 2, cs, cd, cp, co, cshape, i;
	npu_status st;

	g->n = n;
	st = npu_op_ints_from_attr(node, "strides", strides, 3, &cs, err);
	if (!st)
		st = npu_op_ints_from_attr(node, "dilations", dil, 3, &cd, err);
	if (!st)
		st = npu_op_ints_from_attr(node, "pads", pads, 6, &cp, err);
	if (!st)
		st = npu_op_ints_from_attr(node, "output_padding", opad, 3, &co, err);
	if (!st)
		st = npu_op_ints_from_attr(node, "output_shape", oshape,
					   NPU_MAX_RANK, &cshape, err);
	if (st)
		return st;
	if ((cs && cs != n) || (cd && cd != n) || (cp && cp != 2 * n) ||
	    (co && co != n) || (cshape && cshape != n && cshape != n + 2))
		return npu_op_invalid(err, node,
				      "strides / dilations / pads / output_padding / output_shape lengths do not match %d spatial dims",
				      n);
	if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID") &&
	    strcmp(auto_pad, "SAME_UPPER") && strcmp(auto_pad, "SAME_LOWER"))
		return npu_op_invalid(err, node, "auto_pad '%s'", auto_pad);
	for (i = 0; i < n; i++) {
		int64_t ext, op = co ? opad[i] : 0, total, pb = 0, pe = 0;

		g->in[i] = x->dims[2 + i];
		g->k[i] = w->dims[2 + i];
		g->stride[i] = cs ? strides[i] : 1;
		g->dil[i] = cd ? dil[i] : 1;
		if (g->stride[i] <= 0 || g->dil[i] <= 0 || op < 0)
			return npu_op_invalid(err, node,
					      "stride / dilation must be positive");
		ext = (g->k[i] - 1) * g->dil[i] + 1;
		if (g->in[i] < 0) {
			g->out[i] = -1;
			g->pad_begin[i] = 0;
			continue;
		}
		if (cshape || !strncmp(auto_pad, "SAME", 4)) {
			int64_t out = cshape ? oshape[cshape - n + i]
					     : g->in[i] * g->stride[i];

			total = g->stride[i] * (g->in[i] - 1) + op + ext - out;
			/* More padding at the end, except for SAME_LOWER. */
			pb = !strcmp(auto_pad, "SAME_LOWER") ? total - total / 2
							      : total / 2;
			g->pad_begin[i] = pb;
			g->out[i] = out;
			continue;
		}
		if (cp && strcmp(auto_pad, "VALID")) {
			pb = pads[i];
			pe = pads[i + n];
		}
		g->pad_begin[i] = pb;
		g->out[i] = g->stride[i] * (g->in[i] - 1) + op + ext - pb - pe;
		if (g->out[i] < 0)
			return npu_op_invalid(err, node, "output dim %d is negative", i);
	}
	return NPU_OK;
}

npu_status npu_convt_infer_common(struct npu_infer_ctx *ctx, const char *const *fused_attrs)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	struct npu_convt_geom g;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int i;
	npu_status st;

	if (fused_attrs) {
		st = npu_conv_check_common(ctx, fused_attrs, 3, false);
	} else {
		st = npu_conv_check_common(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
							     "group", "kernel_shape",
							     "output_padding",
							     "output_shape", "pads",
							     "strides"), 3, true);
		/* bfloat16 is a ConvTranspose type only from opset 22 on. */
		if (!st && node->inputs[0]->dtype == NPU_DTYPE_BFLOAT16)
			st = npu_op_unsupported(ctx->err, node,
						"input 0 '%s' has type %s, not supported (ConvTranspose before opset 22 takes float16, float and double)",
						node->inputs[0]->name,
						npu_dtype_name(node->inputs[0]->dtype));
	}
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	w = &node->inputs[1]->shape;
	if (x->dims[1] >= 0 && w->dims[0] >= 0 &&
	    (x->dims[1] != w->dims[0] || x->dims[1] % group))
		return npu_op_invalid(ctx->err, node,
				      "X has %lld channels, W %lld, group %lld",
				      (long long)x->dims[1], (long long)w->dims[0],
				      (long long)group);
	st = npu_convt_geom(node, x, w, &g, ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = x->rank;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = w->dims[1] < 0 ? -1 : w->dims[1] * group;
	for (i = 0; i < g.n; i++)
		ctx->out_shapes[0].dims[2 + i] = g.out[i];
	return NPU_OK;
}

static npu_status convt_infer(struct npu_infer_ctx *ctx)
{
	return npu_convt_infer_common(ctx, NULL);
}

NPU_OP_SCHEMA_DEF(conv) = {
	.op_type = "Conv", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = conv_infer,
};

NPU_OP_SCHEMA_DEF(conv_transpose) = {
	.op_type = "ConvTranspose", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = convt_infer,
};
