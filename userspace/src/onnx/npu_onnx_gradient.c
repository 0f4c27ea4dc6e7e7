// SPDX-License-Identifier: MIT
/*
 * npu_onnx_gradient.c - the Gradient op of ai.onnx.preview.training,
 * lowered at import into ordinary nodes (reverse-mode differentiation).
 *
 * Gradient(xs..., xs = [...], y = "Y") outputs dY/dx for each x, with dY/dY
 * all ones. The nodes between the xs and Y are walked backwards and each
 * contributes its inputs' gradients: Add, Sub, Mul, Div, Neg and Identity,
 * with numpy broadcasting undone by SumToShape (cpu/ops/op_gradient.c).
 * An x that Y does not depend on gets zeros. Any other op on the way, the
 * 'zs' attribute or a Gradient inside a subgraph is unsupported, named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/npu_onnx_internal.h"
#include "graph/npu_op_schema.h"
#include "graph/schemas/schema_common.h"

#define TRAINING_DOMAIN "ai.onnx.preview.training"

/*
 * SumToShape (domain ai.npu.cpu): Y = G summed over the axes along which
 * R's shape was broadcast to G's, so Y has R's shape: the gradient of a
 * broadcast operand. The lowering below makes it, so its schema is ours.
 */
static npu_status sum_to_shape_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *g, *r;
	char a[160], b[160];
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	g = node->inputs[0];
	r = node->inputs[1];
	if (g->dtype != NPU_DTYPE_FLOAT && g->dtype != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(ctx->err, node, "gradient of type %s is not supported",
					  npu_dtype_name(g->dtype));
	if (g->shape.rank >= 0 && r->shape.rank >= 0 && !npu_op_broadcasts_to(&r->shape, &g->shape))
		return npu_op_invalid(ctx->err, node,
				      "'%s' (%s) does not broadcast to its gradient's shape %s",
				      r->name, npu_shape_str(&r->shape, a, sizeof(a)),
				      npu_shape_str(&g->shape, b, sizeof(b)));
	ctx->out_dtypes[0] = g->dtype;
	ctx->out_shapes[0] = r->shape;
	return NPU_OK;
}

static const struct npu_op_schema sum_to_shape_schema = {
	.op_type = "SumToShape", .domain = NPU_DOMAIN_CPU_INTERNAL,
	.since_version = 1, .max_version = 1, .infer = sum_to_shape_infer,
};

__attribute__((constructor)) static void gradient_schemas_register(void)
{
	static const struct npu_op_schema *const list[] = { &sum_to_shape_schema };
	struct npu_error err;

	/* Only a second owner of ai.npu.cpu.SumToShape could make this fail. */
	(void)npu_op_schema_register(list, 1, &err);
}

struct lowering {
	struct npu_graph *g;
	const struct npu_node *grad;	/* the Gradient node */
	char label[300];
	struct npu_value **adj;		/* per value index: its gradient, or NULL */
	size_t count;			/* nodes made, for unique names */
	struct npu_error *err;
};

/* A node of 'op' at 'opset' on up to two inputs; its one output, or NULL. */
static struct npu_value *emit(struct lowering *lw, const char *op, const char *domain,
			      int opset, struct npu_value *a, struct npu_value *b)
{
	char name[400];
	struct npu_node *n;
	struct npu_value *out;

	snprintf(name, sizeof(name), "%s/%s_%zu", lw->grad->name && lw->grad->name[0]
		 ? lw->grad->name : "gradient", op, lw->count++);
	out = npu_graph_new_value(lw->g, name, lw->err);
	if (!out)
		return NULL;
	n = npu_graph_add_node(lw->g, op, domain, name, b ? 2 : 1, 1, lw->err);
	if (!n)
		return NULL;
	n->opset = opset;
	n->inputs[0] = a;
	if (b)
		n->inputs[1] = b;
	n->outputs[0] = out;
	out->producer = n;
	return out;
}

/* A scalar float constant (cast to the right type by CastLike). */
static struct npu_value *scalar(struct lowering *lw, float v)
{
	struct npu_shape s = { 0 };
	struct npu_value *c = npu_graph_new_value(lw->g, "gradient_scalar", lw->err);

	if (!c)
		return NULL;
	c->constant = npu_tensor_create(NPU_DTYPE_FLOAT, &s);
	if (!c->constant) {
		npu_error_set(lw->err, NPU_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	*(float *)c->constant->data = v;
	c->dtype = NPU_DTYPE_FLOAT;
	c->shape = s;
	return c;
}

/* v's type and shape, filled with 'fill'. */
static struct npu_value *filled_like(struct lowering *lw, struct npu_value *v, float fill)
{
	struct npu_value *c = scalar(lw, fill), *typed, *shape;

	if (!c || !(typed = emit(lw, "CastLike", "", 15, c, v)) ||
	    !(shape = emit(lw, "Shape", "", 13, v, NULL)))
		return NULL;
	return emit(lw, "Expand", "", 13, typed, shape);
}

/* adj[v] += d, where d has the shape of the op's output: undo broadcasting. */
static npu_status accumulate(struct lowering *lw, struct npu_value *v, struct npu_value *d)
{
	struct npu_value *s;

	if (!d || !(s = emit(lw, "SumToShape", NPU_DOMAIN_CPU_INTERNAL, 1, d, v)))
		return lw->err->status ? lw->err->status : NPU_ERR_NO_MEMORY;
	if (lw->adj[v->index]) {
		s = emit(lw, "Add", "", 14, lw->adj[v->index], s);
		if (!s)
			return lw->err->status;
	}
	lw->adj[v->index] = s;
	return NPU_OK;
}

/* One forward node's share of its inputs' gradients, given its output's. */
static npu_status backward(struct lowering *lw, const struct npu_node *n)
{
	struct npu_value *gy = lw->adj[n->outputs[0]->index];
	struct npu_value *a = n->inputs[0], *b = n->num_inputs > 1 ? n->inputs[1] : NULL;
	const char *op = n->op_type;
	char label[300];
	npu_status st;

	if (!a || (n->num_inputs > 1 && !b))
		return npu_error_set(lw->err, NPU_ERR_MODEL,
				     "%s: %s: %s on the path to 'y' has an omitted input",
				     lw->g->source, lw->label,
				     npu_node_label(lw->g, n, label, sizeof(label)));
	if (!strcmp(op, "Identity"))
		return accumulate(lw, a, gy);
	if (!strcmp(op, "Neg"))
		return accumulate(lw, a, emit(lw, "Neg", "", 13, gy, NULL));
	if (!b || n->num_inputs != 2 || n->num_outputs != 1)
		goto unsupported;
	if (!strcmp(op, "Add") || !strcmp(op, "Sub")) {
		st = accumulate(lw, a, gy);
		if (st)
			return st;
		return accumulate(lw, b, !strcmp(op, "Add") ? gy : emit(lw, "Neg", "", 13, gy, NULL));
	}
	if (!strcmp(op, "Mul")) {
		st = accumulate(lw, a, emit(lw, "Mul", "", 14, gy, b));
		if (st)
			return st;
		return accumulate(lw, b, emit(lw, "Mul", "", 14, gy, a));
	}
	if (!strcmp(op, "Div")) {
		/* d(a/b)/db = -(a/b)/b: the output over b. */
		struct npu_value *q = emit(lw, "Mul", "", 14, gy, n->outputs[0]);

		st = accumulate(lw, a, emit(lw, "Div", "", 14, gy, b));
		if (st)
			return st;
		q = q ? emit(lw, "Div", "", 14, q, b) : NULL;
		return accumulate(lw, b, q ? emit(lw, "Neg", "", 13, q, NULL) : NULL);
	}
unsupported:
	return npu_error_set(lw->err, NPU_ERR_UNSUPPORTED,
			     "%s: %s: differentiating through %s is not supported (Add, Sub, Mul, Div, Neg, Identity are)",
			     lw->g->source, lw->label,
			     npu_node_label(lw->g, n, label, sizeof(label)));
}

static npu_status lower_one(struct npu_graph *g, struct npu_node *grad, struct npu_error *err)
{
	const struct npu_attr *xs = npu_node_attr(grad, "xs"), *ya = npu_node_attr(grad, "y");
	struct lowering lw = { .g = g, .grad = grad, .err = err };
	struct npu_value *y, **outs = NULL;
	bool *on_path = NULL;
	size_t i, j, k, nodes = g->num_nodes, nout = grad->num_outputs;
	npu_status st = NPU_OK;

	npu_node_label(g, grad, lw.label, sizeof(lw.label));
	if (!xs || xs->type != NPU_ATTR_STRINGS || !ya || ya->type != NPU_ATTR_STRING)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: %s: needs attributes 'xs' (strings) and 'y' (string)",
				     g->source, lw.label);
	if (npu_node_attr(grad, "zs"))
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: %s: attribute 'zs' is not supported", g->source, lw.label);
	if (xs->count != nout || grad->num_inputs != nout)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: %s: %zu inputs, %zu outputs and %zu names in 'xs' differ",
				     g->source, lw.label, grad->num_inputs, nout, xs->count);
	y = npu_graph_find_value(g, ya->s);
	if (!y)
		return npu_error_set(err, NPU_ERR_MODEL, "%s: %s: 'y' names '%s', which no node makes",
				     g->source, lw.label, ya->s);
	for (i = 0; i < nout; i++)
		if (!grad->inputs[i] || strcmp(grad->inputs[i]->name, xs->strings[i]))
			return npu_error_set(err, NPU_ERR_MODEL,
					     "%s: %s: input %zu is not 'xs'[%zu] = '%s'", g->source,
					     lw.label, i, i, xs->strings[i]);
	lw.adj = calloc(g->num_values + 1, sizeof(*lw.adj));
	on_path = calloc(g->num_values + 1, sizeof(*on_path));
	outs = calloc(nout + 1, sizeof(*outs));
	if (!lw.adj || !on_path || !outs) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	/* Values that depend on some x (nodes are in topological order). */
	for (i = 0; i < nout; i++)
		on_path[grad->inputs[i]->index] = true;
	for (i = 0; i < nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		bool dep = false;

		for (j = 0; j < n->num_inputs; j++)
			dep |= n->inputs[j] && on_path[n->inputs[j]->index];
		for (j = 0; dep && j < n->num_outputs; j++)
			if (n->outputs[j])
				on_path[n->outputs[j]->index] = true;
	}
	if (on_path[y->index]) {
		lw.adj[y->index] = filled_like(&lw, y, 1.0f);
		if (!lw.adj[y->index]) {
			st = err->status;
			goto out;
		}
	}
	/* Backwards over the forward nodes (those made here come after 'nodes'). */
	for (k = nodes; st == NPU_OK && k-- > 0;) {
		const struct npu_node *n = g->nodes[k];
		bool from_x = false;

		if (n == grad || n->num_outputs != 1 || !n->outputs[0] ||
		    !lw.adj[n->outputs[0]->index])
			continue;
		/* Nodes fed by no x add nothing the outputs need. */
		for (j = 0; j < n->num_inputs; j++)
			from_x |= n->inputs[j] && on_path[n->inputs[j]->index];
		if (from_x)
			st = backward(&lw, n);
	}
	for (i = 0; st == NPU_OK && i < nout; i++) {
		outs[i] = lw.adj[grad->inputs[i]->index];
		if (!outs[i] && !(outs[i] = filled_like(&lw, grad->inputs[i], 0.0f)))
			st = err->status;
	}
	if (st != NPU_OK)
		goto out;
	/* The Gradient's outputs keep their names: Identity nodes now make them. */
	{
		struct npu_value *named[64];

		if (nout > 64) {
			st = npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: %s: more than 64 outputs",
					   g->source, lw.label);
			goto out;
		}
		for (i = 0; i < nout; i++)
			named[i] = grad->outputs[i];
		npu_graph_remove_node(g, grad);
		for (i = 0; i < nout; i++) {
			struct npu_node *id;

			if (!named[i])
				continue;
			id = npu_graph_add_node(g, "Identity", "", named[i]->name, 1, 1, err);
			if (!id) {
				st = err->status;
				goto out;
			}
			id->opset = 13;
			id->inputs[0] = outs[i];
			id->outputs[0] = named[i];
			named[i]->producer = id;
		}
	}
out:
	free(lw.adj);
	free(on_path);
	free(outs);
	return st;
}

npu_status npu_onnx_lower_gradients(struct npu_graph *g, struct npu_error *err)
{
	size_t i;
	bool lowered = false;
	npu_status st;

	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *n = g->nodes[i];

		if (strcmp(n->op_type, "Gradient") || !n->domain ||
		    strcmp(n->domain, TRAINING_DOMAIN))
			continue;
		st = lower_one(g, n, err);
		if (st != NPU_OK)
			return st;
		lowered = true;
		i = (size_t)-1;	/* the node list changed: look again from the start */
	}
	return lowered ? npu_graph_sort(g, err) : NPU_OK;
}
