// SPDX-License-Identifier: MIT
/*
 * Arithmetic canonicalization for the NPU: x / c becomes x * (1/c) and
 * x - c becomes x + (-c) for constant float c, so they map onto ELTWISE
 * (which has ADD and MUL only). The reciprocal rounds once more than the
 * division; this pass runs only when compiling for the NPU, where values
 * are int8 anyway.
 */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

npu_status npu_pass_arith_canon(struct npu_graph *g, void *arg,
				struct npu_error *err)
{
	size_t i;

	(void)arg;
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
