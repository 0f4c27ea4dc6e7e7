// SPDX-License-Identifier: MIT
/*
 * The schemas of the ops the compiler's CPU passes make (domain ai.npu.cpu):
 * FusedConv and FusedConvTranspose (passes/pass_cpu_fuse.c), and the
 * blocked-layout ops (passes/pass_cpu_nchwc.c). They are not ONNX ops, so
 * the compiler, which makes them, registers them with the graph; their
 * kernels are the CPU's (cpu/ops/op_conv.c, op_nchwc.c).
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

static const struct npu_op_schema *const cpu_pass_schemas[] = {
	&fused_conv_schema,
	&fused_convt_schema,
};

__attribute__((constructor)) static void cpu_pass_schemas_register(void)
{
	struct npu_error err;

	/* Only a second owner of these ai.npu.cpu ops could make this fail. */
	(void)npu_op_schema_register(cpu_pass_schemas,
				     sizeof(cpu_pass_schemas) / sizeof(cpu_pass_schemas[0]),
				     &err);
}
