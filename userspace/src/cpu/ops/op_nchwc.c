// SPDX-License-Identifier: MIT
/*
 * The blocked-layout ops of the layout pass (compiler/passes/
 * pass_cpu_nchwc.c), domain ai.npu.cpu, opset 1. A blocked value is a
 * rank-5 float tensor [N][Cb][H][W][16] holding the NCHW tensor of C
 * channels (cpu_kernels.h, "Blocked layout NCHW16c"); the elementwise ops
 * run on such values unchanged, lane by lane.
 *
 *   NchwcReorderInput       X [N,C,H,W]      -> Y [N,Cb,H,W,16]
 *   NchwcReorderOutput      X [N,Cb,H,W,16]  -> Y [N,channels,H,W]
 *   NchwcConv               FusedConv's inputs and attributes (op_conv.c)
 *                           with X blocked, or plain NCHW (rank 4) for
 *                           group 1; Z and Y blocked
 *   NchwcGlobalAveragePool  X blocked -> Y [N,Cb,1,1,16]
 *   NchwcUpsample           nearest, integer 'factors' [fh, fw]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"

/* The blocked shape of an NCHW shape with known channels. */
void npu_nchwc_shape(const struct npu_shape *nchw, struct npu_shape *out)
{
	out->rank = 5;
	out->dims[0] = nchw->dims[0];
	out->dims[1] = (int64_t)npu_nchwc_blocks((size_t)nchw->dims[1]);
	out->dims[2] = nchw->dims[2];
	out->dims[3] = nchw->dims[3];
	out->dims[4] = NPU_NCHWC_BLOCK;
}

/* ---- Reorders ---- */

static npu_status reorder_in_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const int64_t *d = x->shape.dims;

	npu_nchwc_reorder_in_f32((size_t)d[0], (size_t)d[1], (size_t)(d[2] * d[3]),
				 x->data, ctx->outputs[0]->data, ctx->pool);
	return NPU_OK;
}

NPU_CPU_OP_DEF(nchwc_reorder_input) = {
	.op_type = "NchwcReorderInput", .domain = NPU_CPU_FUSED_DOMAIN,
	.compute = reorder_in_compute,
};

static npu_status reorder_out_compute(struct npu_op_ctx *ctx)
{
	const int64_t *d = ctx->outputs[0]->shape.dims;

	npu_nchwc_reorder_out_f32((size_t)d[0], (size_t)d[1], (size_t)(d[2] * d[3]),
				  ctx->inputs[0]->data, ctx->outputs[0]->data,
				  ctx->pool);
	return NPU_OK;
}

NPU_CPU_OP_DEF(nchwc_reorder_output) = {
	.op_type = "NchwcReorderOutput", .domain = NPU_CPU_FUSED_DOMAIN,
	.compute = reorder_out_compute,
};

/* ---- Convolution ---- */

/*
 * The kernel's parameters from the node and its input shapes (all dims
 * known): x is [N,C,H,W] or blocked (C from W and group); an error status,
 * err set, when they do not fit.
 */
npu_status npu_nchwc_conv_params(const struct npu_node *node,
				 const struct npu_shape *x,
				 const struct npu_shape *w,
				 struct npu_conv2d_params *p,
				 struct npu_error *err)
{
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	struct npu_shape logical;
	struct npu_window win;
	npu_status st;

	memset(p, 0, sizeof(*p));
	if (w->rank != 4 || group < 1)
		return npu_op_invalid(err, node, "W has rank %d, group %lld (want 4, >= 1)",
				      w->rank, (long long)group);
	if (w->dims[1] < 0 || w->dims[1] > INT32_MAX || group > INT32_MAX)
		return npu_op_invalid(err, node, "W's %lld channels a group x group %lld: too many",
				      (long long)w->dims[1], (long long)group);
	logical = *x;
	logical.rank = 4;
	logical.dims[1] = w->dims[1] * group;
	if (x->rank == 5 && x->dims[1] != (int64_t)npu_nchwc_blocks((size_t)logical.dims[1]))
		return npu_op_invalid(err, node,
				      "X has %lld blocks, W and group give %lld channels",
				      (long long)x->dims[1], (long long)logical.dims[1]);
	if (x->rank == 4 && x->dims[1] != logical.dims[1])
		return npu_op_invalid(err, node, "X has %lld channels, W and group %lld",
				      (long long)x->dims[1], (long long)logical.dims[1]);
	if (w->dims[0] % group)
		return npu_op_invalid(err, node, "W's %lld outputs do not split into %lld groups",
				      (long long)w->dims[0], (long long)group);
	if (group > 1 && (group != logical.dims[1] || group != w->dims[0]))
		return npu_op_unsupported(err, node,
					  "group %lld is neither 1 nor depthwise (%lld -> %lld channels)",
					  (long long)group, (long long)logical.dims[1],
					  (long long)w->dims[0]);
	if (group > 1 && x->rank == 4)
		return npu_op_unsupported(err, node, "a depthwise NchwcConv needs a blocked X");
	st = npu_op_window(node, &logical, &w->dims[2], 2, false, &win, err);
	if (st)
		return st;
	p->batch = (size_t)logical.dims[0];
	p->in_c = (size_t)logical.dims[1];
	p->out_c = (size_t)w->dims[0];
	p->groups = (size_t)group;
	p->in_h = (size_t)win.in[0];
	p->in_w = (size_t)win.in[1];
	p->out_h = (size_t)win.out[0];
	p->out_w = (size_t)win.out[1];
	p->k_h = (size_t)win.k[0];
	p->k_w = (size_t)win.k[1];
	p->stride_h = (size_t)win.stride[0];
	p->stride_w = (size_t)win.stride[1];
	p->dil_h = (size_t)win.dil[0];
	p->dil_w = (size_t)win.dil[1];
	p->pad_top = (size_t)win.pad_begin[0];
	p->pad_left = (size_t)win.pad_begin[1];
	return npu_fused_conv_epilogue(node, &p->act, err);
}

bool npu_nchwc_conv_preferred(const struct npu_node *conv, const struct npu_cpu_options *cpu)
{
	struct npu_error err = { 0 };
	struct npu_conv2d_params p;
	struct npu_shape xs;

	if (conv->num_inputs < 2 || !conv->inputs[0] || !conv->inputs[1] ||
	    conv->inputs[0]->shape.rank != 4 || conv->inputs[0]->shape.dims[1] < 1)
		return false;
	/* As NchwcConv would see it: a depthwise one reads its X blocked. */
	xs = conv->inputs[0]->shape;
	if (npu_node_attr_int_or(conv, "group", 1) > 1)
		npu_nchwc_shape(&conv->inputs[0]->shape, &xs);
	if (npu_nchwc_conv_params(conv, &xs, &conv->inputs[1]->shape, &p, &err))
		return false;
	p.winograd = (enum npu_conv_winograd)npu_conv_winograd_of(cpu);
	return !npu_conv2d_f32_takes_winograd(&p);
}

static bool npu_nchwc_pads_little(size_t c)
{
	return 2 * npu_nchwc_blocks(c) * NPU_NCHWC_BLOCK <= 3 * c;
}

bool npu_nchwc_conv_alone_pays(const struct npu_node *conv, const struct npu_cpu_options *cpu)
{
	struct npu_error err = { 0 };
	struct npu_conv2d_params p;

	if (!npu_nchwc_conv_preferred(conv, cpu) ||
	    npu_node_attr_int_or(conv, "group", 1) != 1 ||
	    npu_nchwc_conv_params(conv, &conv->inputs[0]->shape,
				  &conv->inputs[1]->shape, &p, &err))
		return false;
	p.winograd = (enum npu_conv_winograd)npu_conv_winograd_of(cpu);
	return npu_nchwc_pads_little(p.in_c) && npu_nchwc_pads_little(p.out_c) &&
	       npu_conv2d_f32_takes_im2col(&p);
}

/* Weights and bias packed at plan time for the shapes the plan has. */
struct nchwc_conv_state {
	struct npu_conv2d_params p;
	float *packed;
};

static float *nchwc_pack(const struct npu_conv2d_params *p, const float *w,
			 const float *bias)
{
	size_t bytes = npu_nchwc_conv_packed_floats(p) * sizeof(float);
	float *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);

	if (packed)
		npu_nchwc_conv_pack(p, w, bias, packed);
	return packed;
}

/* The fields that fix the packed layout and the geometry. */
static bool same_geometry(const struct npu_conv2d_params *a,
			  const struct npu_conv2d_params *b)
{
	return a->batch == b->batch && a->in_c == b->in_c && a->in_h == b->in_h &&
	       a->in_w == b->in_w && a->out_c == b->out_c && a->out_h == b->out_h &&
	       a->out_w == b->out_w && a->k_h == b->k_h && a->k_w == b->k_w &&
	       a->stride_h == b->stride_h && a->stride_w == b->stride_w &&
	       a->dil_h == b->dil_h && a->dil_w == b->dil_w &&
	       a->pad_top == b->pad_top && a->pad_left == b->pad_left &&
	       a->groups == b->groups;
}

static npu_status nchwc_conv_prepare(const struct npu_op_def *def, struct npu_node *node,
				     const struct npu_cpu_options *cpu, struct npu_error *err)
{
	const struct npu_value *b = npu_op_input(node, 2);
	struct nchwc_conv_state *s;
	npu_status st;

	(void)def;
	(void)cpu;	/* the blocked kernels are direct: no Winograd choice */
	node->op_state = NULL;
	if (!npu_op_shape_known(&node->inputs[0]->shape) || !node->inputs[1]->constant)
		return NPU_OK;	/* packed per call */
	s = calloc(1, sizeof(*s));
	if (!s)
		return npu_op_error(err, node, NPU_ERR_NO_MEMORY, "out of memory");
	st = npu_nchwc_conv_params(node, &node->inputs[0]->shape,
			       &node->inputs[1]->constant->shape, &s->p, err);
	if (st) {
		free(s);
		return st;
	}
	s->packed = nchwc_pack(&s->p, node->inputs[1]->constant->data,
			       b && b->constant ? b->constant->data : NULL);
	if (!s->packed) {
		size_t bytes = npu_nchwc_conv_packed_floats(&s->p) * sizeof(float);

		free(s);
		return npu_op_error(err, node, NPU_ERR_NO_MEMORY,
				    "out of memory (%zu bytes of packed weights)", bytes);
	}
	node->op_state = s;
	return NPU_OK;
}

static void nchwc_conv_release(struct npu_node *node)
{
	struct nchwc_conv_state *s = node->op_state;

	if (s) {
		free(s->packed);
		free(s);
	}
	node->op_state = NULL;
}

static npu_status nchwc_conv_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct nchwc_conv_state *s = node->op_state;
	const struct npu_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
	const struct npu_tensor *b = npu_op_in(ctx, 2), *z = npu_op_in(ctx, 3);
	struct npu_conv2d_params p;
	float *own = NULL;
	const float *packed;
	npu_status st;

	st = npu_nchwc_conv_params(node, &x->shape, &w->shape, &p, ctx->err);
	if (st)
		return st;
	p.residual = z ? z->data : NULL;
	if (s && same_geometry(&s->p, &p)) {
		packed = s->packed;
	} else {
		own = nchwc_pack(&p, w->data, b ? b->data : NULL);
		if (!own)
			return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
					    "out of memory (packed weights)");
		packed = own;
	}
	npu_nchwc_conv_f32(&p, x->shape.rank == 4, x->data, packed,
			   ctx->outputs[0]->data, ctx->pool);
	free(own);
	return NPU_OK;
}

NPU_CPU_OP_DEF(nchwc_conv) = {
	.op_type = "NchwcConv", .domain = NPU_CPU_FUSED_DOMAIN,
	.prepare = nchwc_conv_prepare,
	.release = nchwc_conv_release, .compute = nchwc_conv_compute,
};

/* ---- Pooling and resizing ---- */

static npu_status nchwc_gap_compute(struct npu_op_ctx *ctx)
{
	const int64_t *d = ctx->inputs[0]->shape.dims;

	npu_nchwc_global_avgpool_f32((size_t)d[0], (size_t)(d[1] * NPU_NCHWC_BLOCK),
				     (size_t)(d[2] * d[3]), ctx->inputs[0]->data,
				     ctx->outputs[0]->data, ctx->pool);
	return NPU_OK;
}

NPU_CPU_OP_DEF(nchwc_global_average_pool) = {
	.op_type = "NchwcGlobalAveragePool", .domain = NPU_CPU_FUSED_DOMAIN,
	.compute = nchwc_gap_compute,
};

npu_status npu_nchwc_upsample_factors(const struct npu_node *node, int64_t *f,
					 struct npu_error *err)
{
	const struct npu_attr *a = npu_node_attr(node, "factors");

	if (!a || a->type != NPU_ATTR_INTS || a->count != 2 || a->ints[0] < 1 ||
	    a->ints[1] < 1 || a->ints[0] > NPU_NCHWC_MAX_FACTOR ||
	    a->ints[1] > NPU_NCHWC_MAX_FACTOR)
		return npu_op_invalid(err, node, "'factors' must be two ints in [1, %d]",
				      NPU_NCHWC_MAX_FACTOR);
	f[0] = a->ints[0];
	f[1] = a->ints[1];
	return NPU_OK;
}

static npu_status nchwc_upsample_compute(struct npu_op_ctx *ctx)
{
	const int64_t *d = ctx->inputs[0]->shape.dims;
	int64_t f[2] = { 1, 1 };
	npu_status st = npu_nchwc_upsample_factors(ctx->node, f, ctx->err);

	if (st)
		return st;
	npu_nchwc_upsample_nearest_f32((size_t)d[0], (size_t)(d[1] * NPU_NCHWC_BLOCK),
				       (size_t)d[2], (size_t)d[3], (size_t)f[0],
				       (size_t)f[1], ctx->inputs[0]->data,
				       ctx->outputs[0]->data, ctx->pool);
	return NPU_OK;
}

NPU_CPU_OP_DEF(nchwc_upsample) = {
	.op_type = "NchwcUpsample", .domain = NPU_CPU_FUSED_DOMAIN,
	.compute = nchwc_upsample_compute,
};
