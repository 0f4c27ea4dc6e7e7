// SPDX-License-Identifier: MIT
/*
 * npu_graph_fuse.c - a set of nodes becomes one node that carries them as
 * its "body" subgraph: how an execution provider's claim enters the plan
 * (runtime/npu_provider.c), kept whole so that a compiled file can store
 * it and the provider compile it again. And the order that keeps the nodes
 * of one side (a provider's, the NPU's) together before they are grouped.
 */
#include "graph/npu_ir.h"

#include <stdlib.h>
#include <string.h>

static bool in_set(struct npu_node *const *nodes, size_t count, const struct npu_node *n)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (nodes[i] == n)
			return true;
	return false;
}

/* Whether something outside the set (a node, or the graph's outputs) reads v. */
static bool read_outside(const struct npu_graph *g, struct npu_node *const *nodes, size_t count,
			 const struct npu_value *v)
{
	size_t i, j;

	if (v->is_graph_output)
		return true;
	for (i = 0; i < g->num_nodes; i++) {
		if (in_set(nodes, count, g->nodes[i]))
			continue;
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			if (g->nodes[i]->inputs[j] == v)
				return true;
	}
	return false;
}

static bool append(struct npu_value ***list, size_t *n, struct npu_value *v)
{
	struct npu_value **l = realloc(*list, (*n + 1) * sizeof(**list));

	if (!l)
		return false;
	l[(*n)++] = v;
	*list = l;
	return true;
}

/* The body's copy of outer value v (made on first use), or NULL on ENOMEM. */
static struct npu_value *body_value(struct npu_graph *body, const struct npu_value *v,
				    struct npu_error *err)
{
	struct npu_value *b = npu_graph_find_value(body, v->name);

	if (b)
		return b;
	b = npu_graph_add_value(body, v->name, err);
	if (!b)
		return NULL;
	b->dtype = v->dtype;
	b->shape = v->shape;
	if (v->constant && !(b->constant = npu_tensor_dup(v->constant))) {
		npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	return b;
}

static npu_status copy_opsets(struct npu_graph *body, const struct npu_graph *g)
{
	size_t i;

	body->opsets = calloc(g->num_opsets + 1, sizeof(*body->opsets));
	if (!body->opsets)
		return NPU_ERR_NO_MEMORY;
	for (i = 0; i < g->num_opsets; i++) {
		body->opsets[i].version = g->opsets[i].version;
		body->opsets[i].domain = strdup(g->opsets[i].domain);
		if (!body->opsets[i].domain)
			return NPU_ERR_NO_MEMORY;
		body->num_opsets++;
	}
	return NPU_OK;
}

/* The body graph of the set: its nodes copied, their values mapped by name. */
static npu_status build_body(const struct npu_graph *g, struct npu_node *const *nodes,
			     size_t count, struct npu_graph **out, struct npu_value ***ins,
			     size_t *num_ins, struct npu_value ***outs, size_t *num_outs,
			     struct npu_error *err)
{
	struct npu_graph *body = npu_graph_create(g->source);
	npu_status st = body ? copy_opsets(body, g) : NPU_ERR_NO_MEMORY;
	size_t i, j;

	if (st)
		goto nomem;
	body->ops = g->ops;
	for (i = 0; i < count; i++) {
		const struct npu_node *sn = nodes[i];
		struct npu_node *n;

		for (j = 0; j < sn->num_inputs; j++) {
			const struct npu_value *v = sn->inputs[j];
			bool outer;

			if (!v)
				continue;
			outer = !v->constant && !npu_graph_find_value(body, v->name) &&
				!(v->producer && in_set(nodes, count, v->producer));
			if (!body_value(body, v, err))
				goto fail;
			if (outer && (!append(ins, num_ins, (struct npu_value *)v) ||
				      !append(&body->inputs, &body->num_inputs,
					      npu_graph_find_value(body, v->name))))
				goto nomem;
		}
		n = npu_graph_add_node(body, sn->op_type, sn->domain, sn->name, sn->num_inputs,
				       sn->num_outputs, err);
		if (!n)
			goto fail;
		n->opset = sn->opset;
		for (j = 0; j < sn->num_inputs; j++)
			n->inputs[j] = sn->inputs[j] ? npu_graph_find_value(body, sn->inputs[j]->name)
						     : NULL;
		for (j = 0; j < sn->num_outputs; j++) {
			const struct npu_value *v = sn->outputs[j];

			if (!v)
				continue;
			if (!(n->outputs[j] = body_value(body, v, err)))
				goto fail;
			n->outputs[j]->producer = n;
			if (read_outside(g, nodes, count, v) &&
			    (!append(outs, num_outs, (struct npu_value *)v) ||
			     !append(&body->outputs, &body->num_outputs, n->outputs[j])))
				goto nomem;
		}
		if (sn->num_attrs && !(n->attrs = calloc(sn->num_attrs, sizeof(*n->attrs))))
			goto nomem;
		for (j = 0; j < sn->num_attrs; j++) {
			n->num_attrs++;
			if (!npu_attr_clone(&n->attrs[j], &sn->attrs[j]))
				goto nomem;
		}
	}
	for (i = 0; i < body->num_inputs; i++)
		body->inputs[i]->is_graph_input = true;
	for (i = 0; i < body->num_outputs; i++)
		body->outputs[i]->is_graph_output = true;
	*out = body;
	return NPU_OK;
nomem:
	npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory fusing nodes", g->source);
fail:
	npu_graph_destroy(body);
	return err->status ? err->status : NPU_ERR_NO_MEMORY;
}

npu_status npu_graph_fuse(struct npu_graph *g, struct npu_node *const *nodes, size_t count,
			  const char *op_type, const char *domain, const char *name,
			  struct npu_node **out, struct npu_error *err)
{
	struct npu_value **ins = NULL, **outs = NULL;
	size_t num_ins = 0, num_outs = 0, i;
	struct npu_graph *body = NULL;
	struct npu_node *n;
	npu_status st;

	*out = NULL;
	for (i = 0; i < count; i++)
		if (nodes[i]->num_implicit_inputs)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "%s: node '%s' (%s) has subgraphs and cannot be fused",
					     g->source, nodes[i]->name, nodes[i]->op_type);
	st = build_body(g, nodes, count, &body, &ins, &num_ins, &outs, &num_outs, err);
	if (st)
		goto out;
	n = npu_graph_add_node(g, op_type, domain, name, num_ins, num_outs, err);
	if (!n || !(n->attrs = calloc(1, sizeof(*n->attrs))) ||
	    !(n->attrs[0].name = strdup("body"))) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory fusing nodes",
				   g->source);
		goto out;
	}
	n->opset = 1;
	n->num_attrs = 1;
	n->attrs[0].type = NPU_ATTR_GRAPH;
	n->attrs[0].g = body;
	body = NULL;
	for (i = 0; i < num_ins; i++)
		n->inputs[i] = ins[i];
	for (i = 0; i < count; i++)
		npu_graph_remove_node(g, nodes[i]);
	for (i = 0; i < num_outs; i++) {
		n->outputs[i] = outs[i];
		outs[i]->producer = n;
	}
	*out = n;
	st = npu_graph_sort(g, err);
out:
	npu_graph_destroy(body);
	free(ins);
	free(outs);
	return st;
}

bool npu_node_has_subgraph(const struct npu_node *n)
{
	size_t a;

	for (a = 0; a < n->num_attrs; a++)
		if (n->attrs[a].type == NPU_ATTR_GRAPH && n->attrs[a].g)
			return true;
	return false;
}

npu_status npu_graph_cluster_order(struct npu_graph *g, bool *side, bool first,
				   struct npu_error *err)
{
	size_t n = g->num_nodes, i, j, k, done;
	size_t *indeg = calloc(n + 1, sizeof(*indeg));
	bool *placed = calloc(n + 1, sizeof(*placed));
	bool *side2 = calloc(n + 1, sizeof(*side2));
	struct npu_node **order = calloc(n + 1, sizeof(*order));
	bool last = first;

	if (!indeg || !placed || !side2 || !order) {
		free(indeg);
		free(placed);
		free(side2);
		free(order);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			indeg[i] += g->nodes[i]->inputs[j] && g->nodes[i]->inputs[j]->producer;
	for (done = 0; done < n; done++) {
		size_t pick = n;

		for (i = 0; i < n; i++) {
			if (placed[i] || indeg[i])
				continue;
			if (pick == n)
				pick = i;
			if (side[i] == last) {
				pick = i;
				break;
			}
		}
		if (pick == n)
			break;
		placed[pick] = true;
		order[done] = g->nodes[pick];
		side2[done] = last = side[pick];
		for (k = 0; k < g->nodes[pick]->num_outputs; k++) {
			const struct npu_value *v = g->nodes[pick]->outputs[k];

			for (i = 0; v && i < n; i++)
				for (j = 0; j < g->nodes[i]->num_inputs; j++)
					indeg[i] -= g->nodes[i]->inputs[j] == v;
		}
	}
	if (done == n && n) {	/* a graph of constants alone has no node array */
		memcpy(g->nodes, order, n * sizeof(*order));
		memcpy(side, side2, n * sizeof(*side));
	}
	free(indeg);
	free(placed);
	free(side2);
	free(order);
	return done == n ? NPU_OK : npu_error_set(err, NPU_ERR_MODEL, "graph has a cycle");
}
