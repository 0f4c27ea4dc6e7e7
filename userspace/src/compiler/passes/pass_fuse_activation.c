// SPDX-License-Identifier: MIT
/* Activation fusion into the producing Conv / Gemm / MatMul / Add. */
#include "compiler/passes/passes.h"

#include <float.h>
#include <string.h>

static bool is_fusable_producer(const struct npu_node *p)
{
	static const char *const ops[] = { "Conv", "Gemm", "MatMul", "Add" };
	size_t i;

	if (p->domain[0] || p->num_outputs != 1)
		return false;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(p->op_type, ops[i]))
			return true;
	return false;
}

/* A scalar float constant input, or 'fallback' when the input is omitted. */
static bool scalar_input(const struct npu_node *n, size_t idx, float fallback,
			 float *out)
{
	int64_t count;
	const float *v;

	if (idx >= n->num_inputs || !n->inputs[idx]) {
		*out = fallback;
		return true;
	}
	v = npu_const_floats(n->inputs[idx], &count);
	if (!v || count != 1)
		return false;
	*out = v[0];
	return true;
}

/* The activation's parameters as npu_activation_* attributes. */
static bool activation_params(const struct npu_node *a, float *alpha,
			      float *beta, float *lo, float *hi)
{
	*alpha = *beta = 0.0f;
	*lo = -FLT_MAX;
	*hi = FLT_MAX;
	if (a->domain[0])
		return false;
	if (!strcmp(a->op_type, "Relu")) {
		*lo = 0.0f;
		return true;
	}
	if (!strcmp(a->op_type, "Clip")) {
		if (a->opset < 11) {
			*lo = npu_node_attr_float_or(a, "min", -FLT_MAX);
			*hi = npu_node_attr_float_or(a, "max", FLT_MAX);
			return true;
		}
		return scalar_input(a, 1, -FLT_MAX, lo) && scalar_input(a, 2, FLT_MAX, hi);
	}
	if (!strcmp(a->op_type, "LeakyRelu")) {
		*alpha = npu_node_attr_float_or(a, "alpha", 0.01f);
		return true;
	}
	if (!strcmp(a->op_type, "HardSigmoid")) {
		*alpha = npu_node_attr_float_or(a, "alpha", 0.2f);
		*beta = npu_node_attr_float_or(a, "beta", 0.5f);
		return true;
	}
	return !strcmp(a->op_type, "HardSwish") || !strcmp(a->op_type, "Sigmoid");
}

npu_status npu_pass_fuse_activation(struct npu_graph *g, void *arg,
				    struct npu_error *err)
{
	size_t i;

	(void)arg;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *a = g->nodes[i], *p;
		struct npu_value *x, *y;
		float alpha, beta, lo, hi;
		npu_status st = NPU_OK;

		if (!a->num_inputs || !(x = a->inputs[0]) || !(p = x->producer) ||
		    a->num_outputs != 1 || !(y = a->outputs[0]))
			continue;
		if (!is_fusable_producer(p) || npu_node_attr(p, "npu_activation") ||
		    npu_value_single_user(g, x) != a || x->dtype != NPU_DTYPE_FLOAT ||
		    !activation_params(a, &alpha, &beta, &lo, &hi))
			continue;
		st |= npu_node_set_attr_string(p, "npu_activation", a->op_type);
		st |= npu_node_set_attr_float(p, "npu_activation_alpha", alpha);
		st |= npu_node_set_attr_float(p, "npu_activation_beta", beta);
		st |= npu_node_set_attr_float(p, "npu_activation_min", lo);
		st |= npu_node_set_attr_float(p, "npu_activation_max", hi);
		st |= npu_node_set_attr_string(p, "npu_pre_activation", x->name);
		if (st)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "fuse_activation: out of memory");
		p->outputs[0] = y;
		y->producer = p;
		npu_graph_remove_node(g, a);
		i--;	/* the next node moved into slot i */
	}
	return NPU_OK;
}
