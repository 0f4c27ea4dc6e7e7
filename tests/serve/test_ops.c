// SPDX-License-Identifier: MIT
/*
 * libnpu_serve_test_ops.so: a custom-op library (<npu/npu_custom_op.h>,
 * NPU_CUSTOM_OPS_ENTRY) for the serve suite: com.example.Twice, y = 2 x
 * on floats. npu serve loads it for a model whose config lists it in
 * model_operations { op_library_filename }.
 */
#include <npu/npu.h>
#include <npu/npu_custom_op.h>

static npu_status twice_infer(void *user, struct npu_infer_context *ctx)
{
	struct npu_tensor_info x;

	(void)user;
	if (npu_infer_input(ctx, 0, &x) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	return npu_infer_set_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims);
}

static npu_status twice_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	struct npu_host_tensor x;
	const float *in;
	float *y;
	size_t i;

	(void)user;
	(void)state;
	if (npu_kernel_input(ctx, 0, &x) != NPU_OK || x.dtype != NPU_TYPE_FLOAT) {
		npu_kernel_set_error(ctx, "Twice takes one float tensor");
		return NPU_ERR_INVALID_ARG;
	}
	if (npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, (void **)&y) != NPU_OK)
		return NPU_ERR_NO_MEMORY;
	in = x.data;
	for (i = 0; i < x.nbytes / sizeof(float); i++)
		y[i] = 2.0f * in[i];
	return NPU_OK;
}

npu_status npu_custom_ops_register(struct npu_engine *engine);

npu_status npu_custom_ops_register(struct npu_engine *engine)
{
	struct npu_custom_op op;

	npu_custom_op_init(&op);
	op.domain = "com.example";
	op.op_type = "Twice";
	op.since_version = 1;
	op.min_inputs = op.max_inputs = 1;
	op.min_outputs = op.max_outputs = 1;
	op.infer = twice_infer;
	op.compute = twice_compute;
	return npu_engine_register_custom_op(engine, &op);
}
