// SPDX-License-Identifier: MIT
/*
 * Transposes are moved below elementwise ops, then pairs that undo each
 * other are removed. TensorFlow exports (tf2onnx) wrap every Conv and
 * pool of an NHWC model in Transposes to NCHW and back and keep the
 * activations and Max / Add between them in NHWC: T -> LeakyRelu -> T'
 * becomes LeakyRelu -> T -> T' (cancelled), and Max(T a, T b) becomes
 * T Max(a, b). Moving a Transpose past an elementwise op never adds one.
 */
#include "compiler/passes/passes.h"

#include <string.h>

static bool get_perm(const struct npu_node *t, int64_t *perm, size_t *rank)
{
	const struct npu_attr *a = npu_node_attr(t, "perm");
	size_t i;

	if (!a || a->type != NPU_ATTR_INTS || a->count > NPU_MAX_RANK)
		return false;	/* default perm reverses: rank from the shape */
	for (i = 0; i < a->count; i++)
		perm[i] = a->ints[i];
	*rank = a->count;
	return true;
}

static bool is_op(const struct npu_node *n, const char *const *names)
{
	if (n->domain[0] || n->num_implicit_inputs)
		return false;
	for (; *names; names++)
		if (!strcmp(n->op_type, *names))
			return true;
	return false;
}

/* Ops whose output element i depends on input element i alone (input 0;
 * any further inputs are attributes-like scalars, e.g. Clip's bounds). */
static const char *const unary_ops[] = {
	"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish",
	"Elu", "Selu", "Softplus", "Abs", "Neg", "Exp", "Log", "Sqrt", "Erf",
	"Floor", "Ceil", "Round", "Reciprocal", NULL,
};
/* Broadcasting elementwise ops over all their inputs. */
static const char *const nary_ops[] = {
	"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Pow", NULL,
};

/* v's producer when it is a Transpose with an explicit perm read only by 'user'. */
static struct npu_node *transpose_into(const struct npu_graph *g, const struct npu_value *v,
				       const struct npu_node *user, int64_t *perm, size_t *rank)
{
	struct npu_node *t = v ? v->producer : NULL;

	if (!t || strcmp(t->op_type, "Transpose") || t->domain[0] || !get_perm(t, perm, rank) ||
	    npu_value_single_user(g, v) != user)
		return NULL;
	return t;
}

static bool one_element_constant(const struct npu_value *v, size_t rank)
{
	int64_t n = 1;
	int d;

	if (!v || !v->constant || v->shape.rank > (int)rank)
		return false;
	for (d = 0; d < v->shape.rank; d++)
		n *= v->shape.dims[d];
	return n == 1;
}

/*
 * u = U(T(a), ...) -> u = T(U(a, ...)) when every input of U that matters
 * is a Transpose of one perm read only by U (or, for the n-ary ops, a
 * one-element constant, whose broadcast no perm changes). The first
 * Transpose's output value becomes U's, the Transpose moves after U, the
 * others are left dead.
 */
static bool push_below(struct npu_graph *g, struct npu_node *u)
{
	bool nary = is_op(u, nary_ops);
	size_t n_in = nary ? u->num_inputs : 1, i, r0 = 0, r;
	int64_t p0[NPU_MAX_RANK], p[NPU_MAX_RANK];
	struct npu_node *ts[NPU_MAX_RANK * 4] = { NULL }, *first = NULL;
	struct npu_value *mid, *out;
	struct npu_shape sh;

	if ((!nary && !is_op(u, unary_ops)) || u->num_outputs != 1 || !u->outputs[0] ||
	    !u->num_inputs || n_in > sizeof(ts) / sizeof(ts[0]))
		return false;
	for (i = 0; i < n_in; i++) {
		ts[i] = transpose_into(g, u->inputs[i], u, p, &r);
		if (!ts[i])
			continue;
		if (!first) {
			first = ts[i];
			memcpy(p0, p, sizeof(p));
			r0 = r;
		} else if (r != r0 || memcmp(p, p0, r * sizeof(p[0]))) {
			return false;
		}
	}
	if (!first)
		return false;
	for (i = 0; i < n_in; i++)
		if (!ts[i] && !one_element_constant(u->inputs[i], r0))
			return false;
	out = u->outputs[0];
	if (out->shape.rank != (int)r0)
		return false;
	/* U's output before the Transpose: out = sh[perm], so sh[perm[i]] = out[i]. */
	sh = out->shape;
	for (i = 0; i < r0; i++)
		sh.dims[p0[i]] = out->shape.dims[i];
	for (i = 0; i < n_in; i++)
		if (ts[i])
			u->inputs[i] = ts[i]->inputs[0];
	mid = first->outputs[0];
	mid->shape = sh;
	mid->dtype = out->dtype;
	mid->producer = u;
	u->outputs[0] = mid;
	first->inputs[0] = mid;
	first->outputs[0] = out;
	out->producer = first;
	return true;
}

npu_status npu_pass_cancel_transposes(struct npu_graph *g, void *arg,
				      struct npu_error *err)
{
	size_t i, k;
	bool moved;

	(void)arg;
	(void)err;
	/* Bounded: each move takes one Transpose one op further down. */
	for (k = 0, moved = true; moved && k < 4 * g->num_nodes + 16; k++) {
		moved = false;
		for (i = 0; i < g->num_nodes && !moved; i++)
			moved = push_below(g, g->nodes[i]);
		if (moved) {
			npu_status st = npu_graph_sort(g, err);

			if (st)
				return st;
		}
	}
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *t2 = g->nodes[i], *t1;
		int64_t p1[NPU_MAX_RANK], p2[NPU_MAX_RANK];
		size_t r1, r2;
		bool identity = true;

		/* A graph output keeps its name: its Transpose stays. */
		if (strcmp(t2->op_type, "Transpose") || t2->domain[0] || !t2->inputs[0] ||
		    !t2->outputs[0] || t2->outputs[0]->is_graph_output ||
		    !(t1 = t2->inputs[0]->producer) || strcmp(t1->op_type, "Transpose") ||
		    t1->domain[0] || !get_perm(t1, p1, &r1) || !get_perm(t2, p2, &r2) ||
		    r1 != r2)
			continue;
		/* y[i] = x[p1[p2[i]]]: identity when p1 o p2 == id. */
		for (k = 0; k < r2; k++)
			identity &= p2[k] >= 0 && p2[k] < (int64_t)r1 && p1[p2[k]] == (int64_t)k;
		if (!identity)
			continue;
		npu_graph_replace_uses(g, t2->outputs[0], t1->inputs[0]);
		npu_graph_remove_node(g, t2);
		i = (size_t)-1;	/* t1 may be dead now; dead_nodes removes it */
	}
	return NPU_OK;
}
