// SPDX-License-Identifier: MIT
/*
 * Placement: a node goes to the NPU only when the device's ISA can do
 * exactly what the node asks (op, attributes, shapes, types); every other
 * node runs on the CPU, and the reason is recorded for --explain.
 */
#include "compiler/compiler.h"
#include "compiler/lower.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is_op(const struct npu_node *n, const char *op)
{
	return !n->domain[0] && !strcmp(n->op_type, op);
}

static bool static_float(const struct npu_value *v)
{
	int i;

	if (!v || v->dtype != NPU_DTYPE_FLOAT || v->shape.rank < 0)
		return false;
	for (i = 0; i < v->shape.rank; i++)
		if (v->shape.dims[i] <= 0)
			return false;
	return true;
}

bool npu_node_activation(const struct npu_node *n, struct npu_act_fn *fn)
{
	const char *op = npu_node_attr_string_or(n, "npu_activation", NULL);

	memset(fn, 0, sizeof(*fn));
	fn->min = -FLT_MAX;
	fn->max = FLT_MAX;
	if (op) {
		fn->op = op;
		fn->alpha = npu_node_attr_float_or(n, "npu_activation_alpha", 0);
		fn->beta = npu_node_attr_float_or(n, "npu_activation_beta", 0);
		fn->min = npu_node_attr_float_or(n, "npu_activation_min", -FLT_MAX);
		fn->max = npu_node_attr_float_or(n, "npu_activation_max", FLT_MAX);
		return true;
	}
	return false;
}

uint64_t npu_node_macs(const struct npu_node *n)
{
	const struct npu_value *x = n->num_inputs ? n->inputs[0] : NULL;
	const struct npu_value *w = n->num_inputs > 1 ? n->inputs[1] : NULL;
	const struct npu_value *y = n->num_outputs ? n->outputs[0] : NULL;
	int64_t out, per;
	int i;

	if (!x || !w || !y || y->shape.rank < 1 || w->shape.rank < 1)
		return 0;
	if (is_op(n, "Conv") || is_op(n, "ConvTranspose")) {
		out = npu_shape_numel(&y->shape);
		per = npu_shape_numel(&w->shape) / (w->shape.dims[0] > 0 ? w->shape.dims[0] : 1);
		if (is_op(n, "ConvTranspose")) {	/* [C_in][C_out/g][k...] */
			out = npu_shape_numel(&x->shape);
			per = npu_shape_numel(&w->shape) / (w->shape.dims[0] > 0 ? w->shape.dims[0] : 1);
		}
		return out > 0 && per > 0 ? (uint64_t)out * (uint64_t)per : 0;
	}
	if (is_op(n, "MatMul") || is_op(n, "Gemm")) {
		int64_t k = x->shape.dims[x->shape.rank - 1];

		if (is_op(n, "Gemm") && npu_node_attr_int_or(n, "transA", 0))
			k = x->shape.dims[0];
		out = npu_shape_numel(&y->shape);
		for (i = 0; i < x->shape.rank; i++)
			if (x->shape.dims[i] <= 0)
				return 0;
		return out > 0 && k > 0 ? (uint64_t)out * (uint64_t)k : 0;
	}
	return 0;
}

#define WHY(...) (snprintf(why, why_size, __VA_ARGS__), false)

static bool activation_ok(const struct npu_node *n, char *why, size_t why_size)
{
	struct npu_act_fn fn;

	if (!npu_node_activation(n, &fn))
		return true;
	if (!npu_lut_function_known(fn.op))
		return WHY("fused activation %s has no NPU form", fn.op);
	return true;
}

static bool supported_conv(const struct npu_graph *g, const struct npu_node *n,
			   char *why, size_t why_size)
{
	struct npu_conv_geom geo;

	if (!npu_conv_geometry(g, n, &geo, why, why_size))
		return false;
	return activation_ok(n, why, why_size);
}

static bool constant_1d_of(const struct npu_value *v, int64_t count)
{
	return v && v->constant && v->dtype == NPU_DTYPE_FLOAT &&
	       npu_shape_numel(&v->shape) == count;
}

static bool supported_gemm(const struct npu_node *n, char *why, size_t why_size)
{
	const struct npu_value *a = n->inputs[0], *b = n->num_inputs > 1 ? n->inputs[1] : NULL;
	const struct npu_value *c = n->num_inputs > 2 ? n->inputs[2] : NULL;
	bool gemm = is_op(n, "Gemm");
	int64_t k, cols;

	if (!gemm && b && !b->constant && static_float(b)) {	/* attention: act x act */
		uint32_t batch;

		if (!npu_matmul_act_geometry(n, &batch, why, why_size))
			return false;
		return activation_ok(n, why, why_size);
	}
	if (!b || !b->constant || b->dtype != NPU_DTYPE_FLOAT || b->shape.rank != 2)
		return WHY("weights are not a constant 2-D float matrix");
	if (gemm && npu_node_attr_int_or(n, "transA", 0))
		return WHY("transA=1 has no NPU form");
	/* A rank-4 input's last dim is W, which NHWC storage does not keep inner. */
	if (a->shape.rank < 1 || a->shape.rank > 3 || (gemm && a->shape.rank != 2))
		return WHY("input rank %d has no NPU form", a->shape.rank);
	k = a->shape.dims[a->shape.rank - 1];
	if (gemm && npu_node_attr_int_or(n, "transB", 0)) {
		cols = b->shape.dims[0];
		if (b->shape.dims[1] != k)
			return WHY("inner dimensions differ");
	} else {
		cols = b->shape.dims[1];
		if (b->shape.dims[0] != k)
			return WHY("inner dimensions differ");
	}
	if (c && !(constant_1d_of(c, cols) || constant_1d_of(c, 1)))
		return WHY("bias is not a constant vector of %lld", (long long)cols);
	if (k > UINT16_MAX * 64ll || cols > UINT32_MAX)
		return WHY("matrix too large");
	return activation_ok(n, why, why_size);
}

static bool supported_pool(const struct npu_graph *g, const struct npu_node *n,
			   char *why, size_t why_size)
{
	struct npu_conv_geom geo;

	if (n->num_outputs > 1 && n->outputs[1])
		return WHY("the Indices output has no NPU form");
	if (npu_node_attr_int_or(n, "storage_order", 0))
		return WHY("storage_order=1 has no NPU form");
	return npu_conv_geometry(g, n, &geo, why, why_size);
}

static bool supported_binary(const struct npu_node *n, char *why, size_t why_size)
{
	const struct npu_value *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];

	if (!static_float(a) || !static_float(b))
		return WHY("inputs are not float tensors of known shape");
	if (a->constant && b->constant)
		return WHY("both inputs constant (folded on the CPU)");
	/* a: the full-size activation; b: the constant or broadcast one. */
	if (a->constant || (!b->constant && npu_shape_numel(&a->shape) < npu_shape_numel(&b->shape)))
		a = b, b = n->inputs[0];
	if (npu_shape_numel(&a->shape) != npu_shape_numel(&y->shape))
		return WHY("the larger input is itself broadcast");
	if (!b->constant && a->shape.rank == b->shape.rank &&
	    !memcmp(a->shape.dims, b->shape.dims, a->shape.rank * sizeof(int64_t)))
		return activation_ok(n, why, why_size);
	if (npu_bcast_kind(a, b) < 0)
		return WHY("broadcast over a non-channel axis");
	return activation_ok(n, why, why_size);
}

/*
 * A ReduceMax whose output a Sub takes from the reduction's own input:
 * the stabilizer of a written-out (Log)Softmax, x - max(x) before Exp. In
 * int8 the max is off by up to half an input step, and that error goes
 * straight into the exponent (ONNX's *_large_number_expanded: a step of
 * 39 gives e^20), so the reduction stays in float on the CPU.
 */
static bool softmax_stabilizer(const struct npu_graph *g, const struct npu_node *n)
{
	size_t i;

	if (!is_op(n, "ReduceMax"))
		return false;
	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *u = g->nodes[i];

		if (is_op(u, "Sub") && u->num_inputs == 2 &&
		    u->inputs[1] == n->outputs[0] && u->inputs[0] == n->inputs[0])
			return true;
	}
	return false;
}

bool npu_node_supported(const struct npu_graph *g, const struct npu_node *n,
			const struct npu_device_info *dev, char *why,
			size_t why_size)
{
	size_t i;

	if (n->domain[0])
		return WHY("op domain '%s' not in the NPU ISA", n->domain);
	for (i = 0; i < n->num_outputs; i++)
		if (i == 0 && !static_float(n->outputs[0]))
			return WHY("output is not a float tensor of known shape");
	if (is_op(n, "Add") || is_op(n, "Mul"))	/* either input may be the constant */
		return supported_binary(n, why, why_size);
	if (!n->num_inputs || !static_float(n->inputs[0]) || n->inputs[0]->constant)
		return WHY("input is not a float activation of known shape");
	if (is_op(n, "Conv"))
		return supported_conv(g, n, why, why_size);
	if (is_op(n, "ConvTranspose")) {	/* CONV2D with zero insertion */
		struct npu_conv_geom geo;

		if (!npu_conv_transpose_geometry(g, n, &geo, why, why_size))
			return false;
		return activation_ok(n, why, why_size);
	}
	if (is_op(n, "Resize")) {		/* RESIZE */
		struct npu_resize_geom rg;

		return npu_resize_geometry(n, &rg, why, why_size);
	}
	if (is_op(n, "Gemm") || is_op(n, "MatMul"))
		return supported_gemm(n, why, why_size);
	if (is_op(n, "MaxPool") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool"))
		return supported_pool(g, n, why, why_size);
	if (npu_is_data_movement(n))		/* COPY: DMA with strides */
		return npu_data_movement_geometry(n, why, why_size);
	if (npu_rows_op(n)) {			/* SOFTMAX / LAYERNORM / REDUCE */
		uint8_t op = is_op(n, "Softmax") ? NPU_OP_SOFTMAX :
			     is_op(n, "LayerNormalization") ? NPU_OP_LAYERNORM : NPU_OP_REDUCE;

		if (softmax_stabilizer(g, n))
			return WHY("the max a softmax written out subtracts before Exp: "
				   "int8 rounding of it goes into the exponent");
		/* a device booted with an older firmware lacks the ISA 1.3 ops */
		if (dev && dev->op_mask && !(dev->op_mask & NPU_OP_BIT(op)))
			return WHY("the device's op mask 0x%x does not enable %s (ISA 1.3)",
				   dev->op_mask, is_op(n, "Softmax") ? "SOFTMAX" :
				   is_op(n, "LayerNormalization") ? "LAYERNORM" : "REDUCE");
		return npu_rows_op_geometry(n, why, why_size);
	}
	if (npu_lut_function_known(n->op_type)) {
		if (is_op(n, "Clip") && n->opset >= 11) {
			for (i = 1; i < n->num_inputs; i++)
				if (n->inputs[i] && !constant_1d_of(n->inputs[i], 1))
					return WHY("Clip bounds are not constants");
		}
		return true;
	}
	return WHY("op not in the NPU ISA");
}
