// SPDX-License-Identifier: MIT
/*
 * Self-gated residual: Add(y, Mul(y, s)) becomes Mul(y, Add(s, 1)), with s
 * the smaller, broadcast operand (a squeeze-excitation gate [1,C,1,1]).
 * PP-OCR's RSE blocks end in y + y * hardsigmoid(se(y)); on the NPU the
 * Add was one more full-size ELTWISE (reading two tensors of y's size
 * from DRAM and writing one), while s + 1 is a LUT over C values that
 * joins the gate's activation. Equal in exact arithmetic; in int8 it
 * rounds once instead of twice. NPU path only, like arith_canon.
 */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

static bool is_plain(const struct npu_node *n, const char *op)
{
	return !strcmp(n->op_type, op) && !n->domain[0] && n->num_inputs == 2 &&
	       n->num_outputs == 1 && n->inputs[0] && n->inputs[1] && n->outputs[0] &&
	       !n->num_implicit_inputs;
}

static bool same_shape(const struct npu_shape *a, const struct npu_shape *b)
{
	return a->rank == b->rank && npu_shape_numel(a) >= 0 &&
	       !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(a->dims[0]));
}

/* The Mul(y, s) of Add(y, m), or NULL; *sp gets s. */
static struct npu_node *gate_of(const struct npu_graph *g, struct npu_node *add,
				int yi, struct npu_value **sp)
{
	struct npu_value *y = add->inputs[yi], *m = add->inputs[1 - yi], *s;
	struct npu_node *mul = m->producer;
	int64_t ns;

	if (!mul || !is_plain(mul, "Mul") || npu_value_single_user(g, m) != add ||
	    m->is_graph_output)
		return NULL;
	if (mul->inputs[0] == y)
		s = mul->inputs[1];
	else if (mul->inputs[1] == y)
		s = mul->inputs[0];
	else
		return NULL;
	ns = npu_shape_numel(&s->shape);
	/* s broadcasts into y (never the reverse): y, m and the sum agree. */
	if (s == y || s->dtype != NPU_DTYPE_FLOAT || y->dtype != NPU_DTYPE_FLOAT ||
	    !same_shape(&y->shape, &m->shape) || !same_shape(&y->shape, &add->outputs[0]->shape) ||
	    ns < 1 || ns >= npu_shape_numel(&y->shape) || s->shape.rank > y->shape.rank)
		return NULL;
	*sp = s;
	return mul;
}

npu_status npu_pass_fold_self_gate(struct npu_graph *g, void *arg,
				   struct npu_error *err)
{
	struct npu_shape scalar = { .rank = 0 };
	size_t i;

	(void)arg;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *add = g->nodes[i], *mul = NULL;
		struct npu_value *s = NULL, *y, *one, *s1, *out;
		struct npu_tensor *t;
		int yi;

		if (!is_plain(add, "Add"))
			continue;
		for (yi = 0; yi < 2 && !mul; yi++)
			mul = gate_of(g, add, yi, &s);
		if (!mul)
			continue;
		y = add->inputs[yi - 1];
		out = add->outputs[0];
		t = npu_tensor_create(NPU_DTYPE_FLOAT, &scalar);
		if (!t)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_self_gate: out of memory");
		*(float *)t->data = 1.0f;
		one = npu_graph_add_constant(g, "self_gate_one", t, err);
		s1 = one ? npu_graph_new_value(g, s->name, err) : NULL;
		if (!s1)
			return err->status ? err->status : NPU_ERR_NO_MEMORY;
		s1->dtype = NPU_DTYPE_FLOAT;
		s1->shape = s->shape;
		/* The Add computes s + 1; the Mul writes what the Add wrote. */
		add->inputs[0] = s;
		add->inputs[1] = one;
		add->outputs[0] = s1;
		s1->producer = add;
		mul->outputs[0]->producer = NULL;	/* the old product is orphaned */
		mul->inputs[0] = y;
		mul->inputs[1] = s1;
		mul->outputs[0] = out;
		out->producer = mul;
	}
	return NPU_OK;
}
