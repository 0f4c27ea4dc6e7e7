// SPDX-License-Identifier: MIT
/*
 * Layer normalization written out as its arithmetic (what exporters emit
 * for opsets before 17):
 *
 *   m = ReduceMean(x, last axis)   d = x - m   v = ReduceMean(d ^ 2)
 *   y = d / Sqrt(v + eps)          [y * gamma]   [+ beta]
 *
 * becomes one LayerNormalization(x, gamma, beta, epsilon = eps) over the
 * last axis, so the NPU runs it as one LAYERNORM instead of seven nodes on
 * the CPU (none of ReduceMean, Sub, Pow, Sqrt or Div has an int8 form that
 * keeps the precision: the variance of int8 deltas needs the integer sums
 * LAYERNORM keeps). gamma / beta are folded when they are constants with
 * one value per element of the last axis. The last node of the chain is
 * rewritten in place, so its output keeps its name; the rest go dead.
 */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

static bool op(const struct npu_node *n, const char *type)
{
	return n && !n->domain[0] && !strcmp(n->op_type, type);
}

/* The one node reading v, if it is of 'type'. */
static struct npu_node *only_user(const struct npu_graph *g,
				  const struct npu_value *v, const char *type)
{
	struct npu_node *u = npu_value_single_user(g, v);

	return op(u, type) ? u : NULL;
}

/* A ReduceMean over exactly the last axis, keepdims = 1. */
static bool mean_last_axis(const struct npu_node *n)
{
	const struct npu_attr *axes = npu_node_attr(n, "axes");
	int rank = n->inputs[0]->shape.rank;
	int64_t axis;

	if (!op(n, "ReduceMean") || rank < 1 ||
	    npu_node_attr_int_or(n, "keepdims", 1) != 1)
		return false;
	if (axes) {
		if (axes->type != NPU_ATTR_INTS || axes->count != 1)
			return false;
		axis = axes->ints[0];
	} else if (n->num_inputs > 1 && n->inputs[1] && n->inputs[1]->constant &&
		   n->inputs[1]->constant->dtype == NPU_DTYPE_INT64 &&
		   npu_shape_numel(&n->inputs[1]->shape) == 1) {
		axis = ((const int64_t *)n->inputs[1]->constant->data)[0];
	} else {
		return false;
	}
	return axis == -1 || axis == rank - 1;
}

/* The other input of a binary node, as a float scalar constant. */
static bool scalar_const(const struct npu_node *n, const struct npu_value *act,
			 float *out)
{
	const struct npu_value *k = n->inputs[0] == act ? n->inputs[1] : n->inputs[0];
	int64_t count;
	const float *d = npu_const_floats(k, &count);

	if (!d || count != 1)
		return false;
	*out = d[0];
	return true;
}

/* The constant operand of 'n' with one value per element of the last axis. */
static const float *last_axis_const(const struct npu_node *n,
				    const struct npu_value *act, int64_t c)
{
	const struct npu_value *k = n->inputs[0] == act ? n->inputs[1] : n->inputs[0];
	int64_t count;
	const float *d = npu_const_floats(k, &count);
	int i;

	if (!d || count != c || k->shape.rank > act->shape.rank)
		return NULL;
	for (i = 0; i + 1 < k->shape.rank; i++)
		if (k->shape.dims[i] != 1)
			return NULL;
	return d;
}

static struct npu_value *vec_const(struct npu_graph *g, const char *hint,
				   const float *src, float fill, int64_t c,
				   struct npu_error *err)
{
	struct npu_shape s = { .rank = 1, .dims = { c } };
	struct npu_tensor *t = npu_tensor_create(NPU_DTYPE_FLOAT, &s);
	int64_t i;

	if (!t) {
		npu_error_set(err, NPU_ERR_NO_MEMORY, "fuse_layernorm: out of memory");
		return NULL;
	}
	for (i = 0; i < c; i++)
		((float *)t->data)[i] = src ? src[i] : fill;
	return npu_graph_add_constant(g, hint, t, err);
}

/* Match the chain from its first ReduceMean; rewrite its last node. */
static npu_status fuse_at(struct npu_graph *g, struct npu_node *m1,
			  struct npu_error *err)
{
	struct npu_value *x = m1->inputs[0], *scale, *bias, **ins;
	struct npu_node *sub, *pw, *m2, *add, *sq, *div = NULL, *last;
	const float *gamma = NULL, *beta = NULL;
	int64_t c = x->shape.dims[x->shape.rank - 1];
	float two, eps;
	size_t i;

	if (!mean_last_axis(m1) || x->constant)
		return NPU_OK;
	sub = only_user(g, m1->outputs[0], "Sub");
	if (!sub || sub->inputs[0] != x || sub->inputs[1] != m1->outputs[0])
		return NPU_OK;
	/* d feeds exactly a Pow(d, 2) and the Div */
	if (npu_value_use_count(g, sub->outputs[0]) != 2)
		return NPU_OK;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *u = g->nodes[i];

		if (u->num_inputs < 1 || u->inputs[0] != sub->outputs[0])
			continue;
		if (op(u, "Div"))
			div = u;
	}
	pw = NULL;
	for (i = 0; i < g->num_nodes; i++)
		if (op(g->nodes[i], "Pow") && g->nodes[i]->inputs[0] == sub->outputs[0])
			pw = g->nodes[i];
	if (!pw || !div || !scalar_const(pw, sub->outputs[0], &two) || two != 2.0f)
		return NPU_OK;
	m2 = only_user(g, pw->outputs[0], "ReduceMean");
	if (!m2 || !mean_last_axis(m2))
		return NPU_OK;
	add = only_user(g, m2->outputs[0], "Add");
	if (!add || !scalar_const(add, m2->outputs[0], &eps) || eps < 0)
		return NPU_OK;
	sq = only_user(g, add->outputs[0], "Sqrt");
	if (!sq || only_user(g, sq->outputs[0], "Div") != div ||
	    div->inputs[1] != sq->outputs[0])
		return NPU_OK;
	last = div;
	{
		struct npu_node *mul = only_user(g, div->outputs[0], "Mul"), *ad;

		if (mul && !div->outputs[0]->is_graph_output &&
		    (gamma = last_axis_const(mul, div->outputs[0], c))) {
			last = mul;
			ad = only_user(g, mul->outputs[0], "Add");
			if (ad && !mul->outputs[0]->is_graph_output &&
			    (beta = last_axis_const(ad, mul->outputs[0], c)))
				last = ad;
		}
	}
	scale = vec_const(g, "layernorm_scale", gamma, 1.0f, c, err);
	bias = scale ? vec_const(g, "layernorm_bias", beta, 0.0f, c, err) : NULL;
	ins = bias ? malloc(3 * sizeof(*ins)) : NULL;
	if (!ins)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "fuse_layernorm: out of memory");
	ins[0] = x;
	ins[1] = scale;
	ins[2] = bias;
	free(last->inputs);
	last->inputs = ins;
	last->num_inputs = 3;
	last->num_implicit_inputs = 0;
	free(last->op_type);
	last->op_type = strdup("LayerNormalization");
	if (!last->op_type)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "fuse_layernorm: out of memory");
	/* LayerNormalization exists from opset 17; the node carries its own. */
	last->opset = 17;
	if (npu_node_set_attr_float(last, "epsilon", eps))
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "fuse_layernorm: out of memory");
	return NPU_OK;
}

npu_status npu_pass_fuse_layernorm(struct npu_graph *g, void *arg,
				   struct npu_error *err)
{
	size_t i, n = g->num_nodes;

	(void)arg;
	for (i = 0; i < n && i < g->num_nodes; i++) {
		npu_status st;

		if (!op(g->nodes[i], "ReduceMean"))
			continue;
		st = fuse_at(g, g->nodes[i], err);
		if (st)
			return st;
	}
	return NPU_OK;
}
