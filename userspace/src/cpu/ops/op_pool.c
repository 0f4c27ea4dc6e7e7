// SPDX-License-Identifier: MIT
/*
 * Pooling: MaxPool and AveragePool (1-D / 2-D, pads, auto_pad, strides,
 * dilations, ceil_mode, count_include_pad) on the npu_*pool2d_f32
 * kernels; GlobalAveragePool and GlobalMaxPool for any rank.
 */
#include <math.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"

static npu_status npu_pool_infer(struct npu_infer_ctx *ctx, bool is_max)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int64_t ks[NPU_WIN_MAX];
	struct npu_window win;
	int cnt, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = is_max ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "ceil_mode",
							 "dilations", "kernel_shape",
							 "pads", "storage_order",
							 "strides")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "ceil_mode",
							 "count_include_pad", "dilations",
							 "kernel_shape", "pads", "strides"));
	if (st)
		return st;
	x = node->inputs[0];
	if (x->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (node->num_outputs > 1 && node->outputs[1])
		return npu_op_unsupported(ctx->err, node,
					  "the Indices output is not supported");
	if (x->shape.rank == 5)
		return npu_op_unsupported(ctx->err, node,
					  "3-D pooling is not supported");
	if (x->shape.rank != 3 && x->shape.rank != 4)
		return npu_op_invalid(ctx->err, node, "X has rank %d",
				      x->shape.rank);
	st = npu_op_ints_from_attr(node, "kernel_shape", ks, NPU_WIN_MAX, &cnt,
				   ctx->err);
	if (st)
		return st;
	if (cnt != x->shape.rank - 2)
		return npu_op_invalid(ctx->err, node,
				      "kernel_shape has %d values for %d spatial dims",
				      cnt, x->shape.rank - 2);
	st = npu_op_window(node, &x->shape, ks, cnt,
			   npu_node_attr_int_or(node, "ceil_mode", 0) != 0, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = x->shape;
	for (i = 0; i < cnt; i++)
		ctx->out_shapes[0].dims[2 + i] = win.out[i];
	return NPU_OK;
}

static npu_status npu_pool_compute(struct npu_op_ctx *ctx, bool is_max)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	bool one_d = x->shape.rank == 3;
	struct npu_pool2d_params p;
	struct npu_window win;
	int64_t ks[NPU_WIN_MAX];
	int cnt;
	npu_status st;

	npu_op_ints_from_attr(node, "kernel_shape", ks, NPU_WIN_MAX, &cnt, NULL);
	st = npu_op_window(node, &x->shape, ks, cnt,
			   npu_node_attr_int_or(node, "ceil_mode", 0) != 0, &win,
			   ctx->err);
	if (st)
		return st;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	memset(&p, 0, sizeof(p));
	p.batch = (size_t)x->shape.dims[0];
	p.channels = (size_t)x->shape.dims[1];
	p.in_h = one_d ? 1 : (size_t)win.in[0];
	p.in_w = (size_t)win.in[one_d ? 0 : 1];
	p.out_h = one_d ? 1 : (size_t)win.out[0];
	p.out_w = (size_t)win.out[one_d ? 0 : 1];
	p.k_h = one_d ? 1 : (size_t)win.k[0];
	p.k_w = (size_t)win.k[one_d ? 0 : 1];
	p.stride_h = one_d ? 1 : (size_t)win.stride[0];
	p.stride_w = (size_t)win.stride[one_d ? 0 : 1];
	p.dil_h = one_d ? 1 : (size_t)win.dil[0];
	p.dil_w = (size_t)win.dil[one_d ? 0 : 1];
	p.pad_top = one_d ? 0 : (size_t)win.pad_begin[0];
	p.pad_bottom = one_d ? 0 : (size_t)win.pad_end[0];
	p.pad_left = (size_t)win.pad_begin[one_d ? 0 : 1];
	p.pad_right = (size_t)win.pad_end[one_d ? 0 : 1];
	p.count_include_pad = npu_node_attr_int_or(node, "count_include_pad", 0) != 0;
	if (is_max)
		npu_maxpool2d_f32(&p, x->data, y->data, ctx->pool);
	else
		npu_avgpool2d_f32(&p, x->data, y->data, ctx->pool);
	return NPU_OK;
}

static npu_status maxpool_infer(struct npu_infer_ctx *ctx)
{
	return npu_pool_infer(ctx, true);
}

static npu_status maxpool_compute(struct npu_op_ctx *ctx)
{
	return npu_pool_compute(ctx, true);
}

static npu_status avgpool_infer(struct npu_infer_ctx *ctx)
{
	return npu_pool_infer(ctx, false);
}

static npu_status avgpool_compute(struct npu_op_ctx *ctx)
{
	return npu_pool_compute(ctx, false);
}

NPU_CPU_OP_DEF(max_pool) = {
	.op_type = "MaxPool", .domain = "", .since_version = 1,
	.max_version = 21, .infer = maxpool_infer, .compute = maxpool_compute,
};

NPU_CPU_OP_DEF(average_pool) = {
	.op_type = "AveragePool", .domain = "", .since_version = 1,
	.max_version = 21, .infer = avgpool_infer, .compute = avgpool_compute,
};

/* ---- GlobalAveragePool / GlobalMaxPool ---- */

static npu_status global_pool_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	x = node->inputs[0];
	if (x->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (x->shape.rank < 3)
		return npu_op_invalid(ctx->err, node, "X has rank %d",
				      x->shape.rank);
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = x->shape;
	for (i = 2; i < x->shape.rank; i++)
		ctx->out_shapes[0].dims[i] = 1;
	return NPU_OK;
}

static npu_status npu_global_pool(struct npu_op_ctx *ctx, bool is_max)
{
	const struct npu_tensor *x = ctx->inputs[0];
	int64_t nc = x->shape.dims[0] * x->shape.dims[1];
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank), i, k;
	float *y = ctx->outputs[0]->data;

	for (i = 0; i < nc; i++) {
		const float *xp = (const float *)x->data + i * inner;
		float acc = is_max ? -INFINITY : 0.0f;

		if (is_max)
			for (k = 0; k < inner; k++)
				acc = fmaxf(acc, xp[k]);
		else
			for (k = 0; k < inner; k++)
				acc += xp[k];
		y[i] = is_max ? acc : acc / (float)inner;
	}
	return NPU_OK;
}

static npu_status global_avgpool_compute(struct npu_op_ctx *ctx)
{
	return npu_global_pool(ctx, false);
}

static npu_status global_maxpool_compute(struct npu_op_ctx *ctx)
{
	return npu_global_pool(ctx, true);
}

NPU_CPU_OP_DEF(global_average_pool) = {
	.op_type = "GlobalAveragePool", .domain = "", .since_version = 1,
	.max_version = 21, .infer = global_pool_infer,
	.compute = global_avgpool_compute,
};

NPU_CPU_OP_DEF(global_max_pool) = {
	.op_type = "GlobalMaxPool", .domain = "", .since_version = 1,
	.max_version = 21, .infer = global_pool_infer,
	.compute = global_maxpool_compute,
};
