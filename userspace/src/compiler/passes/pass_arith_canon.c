// SPDX-License-Identifier: MIT
/*
 * Arithmetic canonicalization for the NPU: x / c becomes x * (1/c) and
 * x - c becomes x + (-c) for constant float c, so they map onto ELTWISE
 * (which has ADD and MUL only). The reciprocal rounds once more than the
 * division; this pass runs only when compiling for the NPU, where values
 * are int8 anyway. Max(x, c) and Min(x, c) with one constant value c
 * become Clip(x, c) and Clip(x, , c), a clamp the NPU applies in place
 * (TensorFlow exports clamps this way: tf.math.maximum after LeakyRelu).
 */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* Max / Min of x and one constant value: the same as a Clip of x. */
static npu_status clamp_canon(struct npu_graph *g, struct npu_node *n, struct npu_error *err)
{
	bool max = !strcmp(n->op_type, "Max");
	struct npu_value *x, *c, *nc, **ins;
	struct npu_shape scalar = { .rank = 0 };
	struct npu_tensor *t;
	const float *v;
	int64_t count;
	char *op;
	int xi;

	if ((!max && strcmp(n->op_type, "Min")) || n->domain[0] || n->num_inputs != 2 ||
	    n->num_implicit_inputs || !n->inputs[0] || !n->inputs[1])
		return NPU_OK;
	xi = n->inputs[0]->constant ? 1 : 0;
	x = n->inputs[xi];
	c = n->inputs[1 - xi];
	v = npu_const_floats(c, &count);
	/* The result must have x's shape: c must not broadcast it wider. */
	if (x->constant || x->dtype != NPU_DTYPE_FLOAT || !v || count != 1 ||
	    c->shape.rank > x->shape.rank)
		return NPU_OK;
	t = npu_tensor_create(NPU_DTYPE_FLOAT, &scalar);
	ins = calloc(3, sizeof(*ins));
	op = strdup("Clip");
	if (!t || !ins || !op) {
		npu_tensor_destroy(t);
		free(ins);
		free(op);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "arith_canon: out of memory");
	}
	((float *)t->data)[0] = v[0];
	nc = npu_graph_add_constant(g, c->name, t, err);
	if (!nc) {
		free(ins);
		free(op);
		return err->status;
	}
	ins[0] = x;
	ins[max ? 1 : 2] = nc;
	free(n->inputs);
	n->inputs = ins;
	n->num_inputs = max ? 2 : 3;
	free(n->op_type);
	n->op_type = op;
	if (n->opset < 13)
		n->opset = 13;	/* Clip takes its bounds as inputs from 11 on */
	return NPU_OK;
}

npu_status npu_pass_arith_canon(struct npu_graph *g, void *arg,
				struct npu_error *err)
{
	size_t i;

	(void)arg;
	for (i = 0; i < g->num_nodes; i++) {
		npu_status st = clamp_canon(g, g->nodes[i], err);

		if (st != NPU_OK)
			return st;
	}
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *n = g->nodes[i];
		bool div = !strcmp(n->op_type, "Div"), sub = !strcmp(n->op_type, "Sub");
		const struct npu_value *c;
		struct npu_tensor *t;
		struct npu_value *nc;
		int64_t count, k;
		const float *src;
		char *op;

		if ((!div && !sub) || n->domain[0] || n->num_inputs != 2 ||
		    !n->inputs[0] || n->inputs[0]->constant)
			continue;
		c = n->inputs[1];
		src = npu_const_floats(c, &count);
		if (!src || count < 1)
			continue;
		t = npu_tensor_create(NPU_DTYPE_FLOAT, &c->shape);
		if (!t)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "arith_canon: out of memory");
		for (k = 0; k < count; k++)
			((float *)t->data)[k] = div ? 1.0f / src[k] : -src[k];
		nc = npu_graph_add_constant(g, c->name, t, err);
		op = strdup(div ? "Mul" : "Add");
		if (!nc || !op) {
			free(op);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "arith_canon: out of memory");
		}
		free(n->op_type);
		n->op_type = op;
		n->inputs[1] = nc;
		/* Mul / Add exist at every opset the Div / Sub did. */
	}
	return NPU_OK;
}
