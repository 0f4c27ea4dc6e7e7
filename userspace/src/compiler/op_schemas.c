// SPDX-License-Identifier: MIT
/*
 * The schemas of the ops the compiler's CPU passes make (domain ai.npu.cpu):
 * FusedConv and FusedConvTranspose (passes/pass_cpu_fuse.c), and the
 * blocked-layout ops (passes/pass_cpu_nchwc.c), and NpuSegment (domain
 * ai.npu, compile.c). They are not ONNX ops, so the compiler, which makes
 * them, registers them with the graph; their kernels are the CPU's
 * (cpu/ops/op_conv.c, op_nchwc.c) and the runtime's (npu_segment_op.c).
 */
#include "compiler/compiler.h"

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/cpu_ops.h"
#include "graph/schemas/conv.h"

/* The fused epilogue (activation, post affine) must be one the kernel has. */
static npu_status fused_epilogue_check(struct npu_infer_ctx *ctx)
{
	struct npu_cpu_act_params act;

	return npu_fused_conv_epilogue(ctx->node, &act, ctx->err);
}

static npu_status fused_conv_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = npu_conv_infer_common(ctx, NPU_OP_ATTRS(NPU_FUSED_CONV_ATTRS));

	return st ? st : fused_epilogue_check(ctx);
}

static npu_status fused_convt_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = npu_convt_infer_common(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
								 "group", "kernel_shape",
								 "output_padding",
								 "output_shape", "pads",
								 "strides", "activation",
								 "activation_params",
								 "post_scale", "post_shift"));

	return st ? st : fused_epilogue_check(ctx);
}

/*
 * Conv's inputs and attributes, an optional 4th input Z shaped as Y, and
 *   Y = post(act(conv(X, W) + B + Z))
 * computed in the convolution's output epilogue (npu_fused_conv_epilogue).
 */
static const struct npu_op_schema fused_conv_schema = {
	.op_type = "FusedConv", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = fused_conv_infer,
};

/* ConvTranspose's inputs and attributes plus FusedConv's epilogue (no Z). */
static const struct npu_op_schema fused_convt_schema = {
	.op_type = "FusedConvTranspose", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = fused_convt_infer,
};

/* ---- The blocked layout (NCHW16c), passes/pass_cpu_nchwc.c ---- */

/* Input 0 must be a float tensor of 'rank' dims, all known. */
static npu_status nchwc_check_x(struct npu_infer_ctx *ctx, int rank)
{
	const struct npu_value *x = ctx->node->inputs[0];
	int i;

	if (x->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, ctx->node,
					  "X '%s' has type %s, not float", x->name,
					  npu_dtype_name(x->dtype));
	if (x->shape.rank != rank)
		return npu_op_invalid(ctx->err, ctx->node, "X '%s' has rank %d, not %d",
				      x->name, x->shape.rank, rank);
	for (i = 0; i < rank; i++)
		if (x->shape.dims[i] < 0)
			return npu_op_unsupported(ctx->err, ctx->node,
						  "X '%s' has an unknown dim %d", x->name, i);
	if (rank == 5 && x->shape.dims[4] != NPU_NCHWC_BLOCK)
		return npu_op_invalid(ctx->err, ctx->node,
				      "X '%s' is not blocked by %d (last dim %lld)",
				      x->name, NPU_NCHWC_BLOCK, (long long)x->shape.dims[4]);
	return NPU_OK;
}

static npu_status reorder_in_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = npu_op_check_arity(ctx, 1, 1);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = nchwc_check_x(ctx, 4);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	npu_nchwc_shape(&ctx->node->inputs[0]->shape, &ctx->out_shapes[0]);
	return NPU_OK;
}

static npu_status reorder_out_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	int64_t c = npu_node_attr_int_or(node, "channels", -1);
	const struct npu_shape *x;
	npu_status st = npu_op_check_arity(ctx, 1, 1);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("channels"));
	if (!st)
		st = nchwc_check_x(ctx, 5);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	if (c < 1 || (int64_t)npu_nchwc_blocks((size_t)c) != x->dims[1])
		return npu_op_invalid(ctx->err, node,
				      "channels %lld do not fit %lld blocks of X '%s'",
				      (long long)c, (long long)x->dims[1],
				      node->inputs[0]->name);
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0].rank = 4;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = c;
	ctx->out_shapes[0].dims[2] = x->dims[2];
	ctx->out_shapes[0].dims[3] = x->dims[3];
	return NPU_OK;
}

static npu_status nchwc_conv_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *w, *b, *z;
	struct npu_conv2d_params p;
	npu_status st;
	size_t i;

	st = npu_op_check_arity(ctx, 2, 4);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NPU_FUSED_CONV_ATTRS));
	if (st)
		return st;
	x = node->inputs[0];
	w = node->inputs[1];
	b = npu_op_input(node, 2);
	z = npu_op_input(node, 3);
	st = nchwc_check_x(ctx, x->shape.rank == 4 ? 4 : 5);
	if (st)
		return st;
	for (i = 1; i < node->num_inputs; i++)
		if (node->inputs[i] && node->inputs[i]->dtype != NPU_DTYPE_FLOAT)
			return npu_op_unsupported(ctx->err, node, "input %zu '%s' is not float",
						  i, node->inputs[i]->name);
	if (!w->constant || (b && !b->constant))
		return npu_op_unsupported(ctx->err, node,
					  "W and B must be constants (they are packed once)");
	st = npu_nchwc_conv_params(node, &x->shape, &w->shape, &p, ctx->err);
	if (st)
		return st;
	if (b && npu_shape_numel(&b->shape) != (int64_t)p.out_c)
		return npu_op_invalid(ctx->err, node, "B '%s' does not have %zu elements",
				      b->name, p.out_c);
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0].rank = 5;
	ctx->out_shapes[0].dims[0] = (int64_t)p.batch;
	ctx->out_shapes[0].dims[1] = (int64_t)npu_nchwc_blocks(p.out_c);
	ctx->out_shapes[0].dims[2] = (int64_t)p.out_h;
	ctx->out_shapes[0].dims[3] = (int64_t)p.out_w;
	ctx->out_shapes[0].dims[4] = NPU_NCHWC_BLOCK;
	if (z) {
		bool same = z->shape.rank == 5;

		for (i = 0; same && i < 5; i++)
			same = z->shape.dims[i] == ctx->out_shapes[0].dims[i];
		if (!same)
			return npu_op_invalid(ctx->err, node,
					      "residual Z '%s' is not blocked as the output",
					      z->name);
	}
	return NPU_OK;
}

static npu_status nchwc_gap_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = npu_op_check_arity(ctx, 1, 1);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = nchwc_check_x(ctx, 5);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = ctx->node->inputs[0]->shape;
	ctx->out_shapes[0].dims[2] = 1;
	ctx->out_shapes[0].dims[3] = 1;
	return NPU_OK;
}

static npu_status nchwc_upsample_infer(struct npu_infer_ctx *ctx)
{
	int64_t f[2];
	npu_status st = npu_op_check_arity(ctx, 1, 1);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("factors"));
	if (!st)
		st = nchwc_check_x(ctx, 5);
	if (!st)
		st = npu_nchwc_upsample_factors(ctx->node, f, ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = ctx->node->inputs[0]->shape;
	ctx->out_shapes[0].dims[2] *= f[0];
	ctx->out_shapes[0].dims[3] *= f[1];
	return NPU_OK;
}

static const struct npu_op_schema nchwc_reorder_input_schema = {
	.op_type = "NchwcReorderInput", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = reorder_in_infer,
};

static const struct npu_op_schema nchwc_reorder_output_schema = {
	.op_type = "NchwcReorderOutput", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = reorder_out_infer,
};

static const struct npu_op_schema nchwc_conv_schema = {
	.op_type = "NchwcConv", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = nchwc_conv_infer,
};

static const struct npu_op_schema nchwc_gap_schema = {
	.op_type = "NchwcGlobalAveragePool", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = nchwc_gap_infer,
};

static const struct npu_op_schema nchwc_upsample_schema = {
	.op_type = "NchwcUpsample", .domain = NPU_CPU_FUSED_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = nchwc_upsample_infer,
};

/* ---- NpuSegment (compile.c makes it; runtime/npu_segment_op.c runs it) ---- */

static npu_status segment_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	size_t i;

	/* Shapes were fixed at compile time; the outputs already carry them. */
	for (i = 0; i < n->num_outputs; i++) {
		ctx->out_dtypes[i] = NPU_DTYPE_FLOAT;
		ctx->out_shapes[i] = n->outputs[i]->shape;
	}
	return NPU_OK;
}

/* What an NpuSegment is, for the graph; the compiler owns the domain. */
static const struct npu_op_schema segment_op_schema = {
	.op_type = NPU_SEGMENT_OP,
	.domain = NPU_SEGMENT_DOMAIN,
	.since_version = 1,
	.max_version = 1,
	.infer = segment_infer,
	.owner = "npu",
};


static const struct npu_op_schema *const cpu_pass_schemas[] = {
	&fused_conv_schema,
	&fused_convt_schema,
	&nchwc_reorder_input_schema,
	&nchwc_reorder_output_schema,
	&nchwc_conv_schema,
	&nchwc_gap_schema,
	&nchwc_upsample_schema,
	&segment_op_schema,
};

__attribute__((constructor)) static void cpu_pass_schemas_register(void)
{
	struct npu_error err;

	/* Only a second owner of these ai.npu.cpu / ai.npu ops could make this fail. */
	(void)npu_op_schema_register(cpu_pass_schemas,
				     sizeof(cpu_pass_schemas) / sizeof(cpu_pass_schemas[0]),
				     &err);
}
