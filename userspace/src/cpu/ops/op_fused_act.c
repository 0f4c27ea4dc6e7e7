// SPDX-License-Identifier: MIT
/*
 * Activations fused into a producer by the compiler's fusion pass
 * (npu_activation* attributes): applied to the producer's output in place
 * when that producer runs on the CPU, with the vectorized kernels.
 */
#include <float.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/cpu_ops.h"

npu_status npu_cpu_apply_fused_activation(const struct npu_node *n,
					  struct npu_tensor *t,
					  struct npu_error *err)
{
	const char *op = npu_node_attr_string_or(n, "npu_activation", NULL);
	struct npu_cpu_act_params act = {
		.act_min = npu_node_attr_float_or(n, "npu_activation_min", -FLT_MAX),
		.act_max = npu_node_attr_float_or(n, "npu_activation_max", FLT_MAX),
		.alpha = npu_node_attr_float_or(n, "npu_activation_alpha", 0.0f),
		.beta = npu_node_attr_float_or(n, "npu_activation_beta", 0.0f),
	};

	if (!op)
		return NPU_OK;
	if (!t || t->dtype != NPU_DTYPE_FLOAT)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "fused %s on a non-float output", op);
	if (!strcmp(op, "Relu") || !strcmp(op, "Clip"))
		act.kind = NPU_CPU_ACT_CLIP;
	else if (!strcmp(op, "LeakyRelu"))
		act.kind = NPU_CPU_ACT_LEAKY_RELU;
	else if (!strcmp(op, "HardSigmoid"))
		act.kind = NPU_CPU_ACT_HARD_SIGMOID;
	else if (!strcmp(op, "HardSwish"))
		act.kind = NPU_CPU_ACT_HARD_SWISH;
	else if (!strcmp(op, "Sigmoid"))
		act.kind = NPU_CPU_ACT_SIGMOID;
	else
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "fused activation '%s' has no CPU kernel", op);
	npu_vec_act_f32(&act, t->data, t->data, t->nbytes / sizeof(float));
	return NPU_OK;
}
