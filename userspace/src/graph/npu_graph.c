// SPDX-License-Identifier: MIT
/* npu_graph.c - graph construction, lookup, topological sort and passes. */
#include "graph/npu_ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

struct npu_graph *npu_graph_create(const char *source)
{
	struct npu_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->source = dup_str(source);
	g->name = dup_str("");
	if (!g->source || !g->name) {
		npu_graph_destroy(g);
		return NULL;
	}
	return g;
}

void npu_attr_free(struct npu_attr *a)
{
	size_t i;

	free(a->name);
	free(a->s);
	free(a->floats);
	free(a->ints);
	if (a->strings)
		for (i = 0; i < a->count; i++)
			free(a->strings[i]);
	free(a->strings);
	npu_tensor_destroy(a->t);
	npu_graph_destroy(a->g);
}

static void free_node(struct npu_node *n)
{
	size_t i;

	if (!n)
		return;
	free(n->name);
	free(n->op_type);
	free(n->domain);
	free(n->inputs);
	free(n->outputs);
	for (i = 0; i < n->num_attrs; i++)
		npu_attr_free(&n->attrs[i]);
	free(n->attrs);
	free(n);
}

static void free_value(struct npu_value *v)
{
	int i;

	free(v->name);
	npu_tensor_destroy(v->constant);
	for (i = 0; i < NPU_MAX_RANK; i++)
		free(v->dim_params[i]);
	free(v);
}

void npu_graph_destroy(struct npu_graph *g)
{
	size_t i;

	if (!g)
		return;
	for (i = 0; i < g->num_nodes; i++)
		free_node(g->nodes[i]);
	for (i = 0; i < g->num_values; i++)
		free_value(g->values[i]);
	for (i = 0; i < g->num_opsets; i++)
		free(g->opsets[i].domain);
	free(g->opsets);
	free(g->nodes);
	free(g->values);
	free(g->inputs);
	free(g->outputs);
	free(g->name_index);
	free(g->capture_slot);
	free(g->name);
	free(g->source);
	free(g);
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static void index_insert(struct npu_value **tab, size_t cap,
			 struct npu_value *v)
{
	size_t i = hash_name(v->name) & (cap - 1);

	while (tab[i])
		i = (i + 1) & (cap - 1);
	tab[i] = v;
}

struct npu_value *npu_graph_find_value(const struct npu_graph *g,
				       const char *name)
{
	size_t i;

	if (!g->name_index_cap || !name)
		return NULL;
	i = hash_name(name) & (g->name_index_cap - 1);
	while (g->name_index[i]) {
		if (!strcmp(g->name_index[i]->name, name))
			return g->name_index[i];
		i = (i + 1) & (g->name_index_cap - 1);
	}
	return NULL;
}

struct npu_value *npu_graph_add_value(struct npu_graph *g, const char *name,
				      struct npu_error *err)
{
	struct npu_value *v;

	if (npu_graph_find_value(g, name)) {
		npu_error_set(err, NPU_ERR_MODEL, "%s: duplicate value name '%s'",
			      g->source, name);
		return NULL;
	}
	if (g->num_values == g->cap_values) {
		size_t cap = g->cap_values ? g->cap_values * 2 : 64;
		struct npu_value **nv = realloc(g->values, cap * sizeof(*nv));

		if (!nv)
			goto nomem;
		g->values = nv;
		g->cap_values = cap;
	}
	if ((g->num_values + 1) * 2 > g->name_index_cap) {
		size_t cap = g->name_index_cap ? g->name_index_cap * 2 : 128;
		struct npu_value **tab = calloc(cap, sizeof(*tab));
		size_t i;

		if (!tab)
			goto nomem;
		for (i = 0; i < g->num_values; i++)
			index_insert(tab, cap, g->values[i]);
		free(g->name_index);
		g->name_index = tab;
		g->name_index_cap = cap;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		goto nomem;
	v->name = dup_str(name);
	if (!v->name) {
		free(v);
		goto nomem;
	}
	v->shape.rank = -1;	/* unknown rank until typed */
	v->index = g->num_values;
	g->values[g->num_values++] = v;
	index_insert(g->name_index, g->name_index_cap, v);
	return v;
nomem:
	npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory adding value",
		      g->source);
	return NULL;
}

struct npu_value *npu_graph_new_value(struct npu_graph *g, const char *hint,
				      struct npu_error *err)
{
	char name[256];
	unsigned n;

	for (n = 0;; n++) {
		snprintf(name, sizeof(name), "%s__%u", hint ? hint : "v", n);
		if (!npu_graph_find_value(g, name))
			return npu_graph_add_value(g, name, err);
	}
}

struct npu_node *npu_graph_add_node(struct npu_graph *g, const char *op_type,
				    const char *domain, const char *name,
				    size_t num_inputs, size_t num_outputs,
				    struct npu_error *err)
{
	struct npu_node *n;

	if (g->num_nodes == g->cap_nodes) {
		size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
		struct npu_node **nn = realloc(g->nodes, cap * sizeof(*nn));

		if (!nn)
			goto nomem;
		g->nodes = nn;
		g->cap_nodes = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		goto nomem;
	n->name = dup_str(name);
	n->op_type = dup_str(op_type);
	n->domain = dup_str(domain);
	n->inputs = calloc(num_inputs ? num_inputs : 1, sizeof(*n->inputs));
	n->outputs = calloc(num_outputs ? num_outputs : 1,
			    sizeof(*n->outputs));
	n->num_inputs = num_inputs;
	n->num_outputs = num_outputs;
	n->opset = (int)npu_graph_opset(g, n->domain ? n->domain : "");
	n->placement_reason = "";
	if (!n->name || !n->op_type || !n->domain || !n->inputs ||
	    !n->outputs) {
		free_node(n);
		goto nomem;
	}
	g->nodes[g->num_nodes++] = n;
	return n;
nomem:
	npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory adding node",
		      g->source);
	return NULL;
}

void npu_graph_remove_node(struct npu_graph *g, struct npu_node *node)
{
	size_t i, j;

	for (i = 0; i < g->num_nodes; i++) {
		if (g->nodes[i] != node)
			continue;
		for (j = 0; j < node->num_outputs; j++)
			if (node->outputs[j] && node->outputs[j]->producer == node)
				node->outputs[j]->producer = NULL;
		memmove(&g->nodes[i], &g->nodes[i + 1],
			(g->num_nodes - i - 1) * sizeof(g->nodes[0]));
		g->num_nodes--;
		free_node(node);
		return;
	}
}

void npu_graph_replace_uses(struct npu_graph *g, struct npu_value *from,
			    struct npu_value *to)
{
	size_t i, j;

	for (i = 0; i < g->num_nodes; i++)
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			if (g->nodes[i]->inputs[j] == from)
				g->nodes[i]->inputs[j] = to;
	for (i = 0; i < g->num_outputs; i++) {
		if (g->outputs[i] == from) {
			g->outputs[i] = to;
			from->is_graph_output = false;
			to->is_graph_output = true;
		}
	}
}

static bool is_default_domain(const char *d)
{
	return !d || !d[0] || !strcmp(d, "ai.onnx");
}

int64_t npu_graph_opset(const struct npu_graph *g, const char *domain)
{
	size_t i;

	for (i = 0; i < g->num_opsets; i++) {
		const char *d = g->opsets[i].domain;

		if (is_default_domain(domain) ? is_default_domain(d)
					      : !strcmp(d, domain))
			return g->opsets[i].version;
	}
	return -1;
}

const char *npu_node_label(const struct npu_graph *g,
			   const struct npu_node *node, char *buf, size_t size)
{
	size_t i;

	if (node->name && node->name[0]) {
		snprintf(buf, size, "node '%s' (%s)", node->name, node->op_type);
		return buf;
	}
	for (i = 0; i < g->num_nodes; i++)
		if (g->nodes[i] == node)
			break;
	snprintf(buf, size, "node #%zu (%s)", i, node->op_type);
	return buf;
}

void npu_graph_error_context(const struct npu_graph *g,
			     const struct npu_node *node, struct npu_error *err)
{
	char label[300], own[300];
	size_t len, slen = strlen(g->source);

	if (!err)
		return;
	if (!strncmp(err->msg, g->source, slen) && err->msg[slen] == ':')
		return;		/* already in context */
	snprintf(own, sizeof(own), "%s node '%s': ", node->op_type, node->name);
	len = strlen(own);
	if (!strncmp(err->msg, own, len))
		memmove(err->msg, err->msg + len, strlen(err->msg + len) + 1);
	npu_node_label(g, node, label, sizeof(label));
	if (strncmp(err->msg, label, strlen(label)))
		npu_error_prefix(err, "%s", label);
	npu_error_prefix(err, "%s", g->source);
}

npu_status npu_graph_sort(struct npu_graph *g, struct npu_error *err)
{
	size_t n = g->num_nodes, i, j, head = 0, tail = 0;
	size_t *pending = NULL, *queue = NULL, *user_count = NULL;
	size_t **users = NULL;
	struct npu_node **sorted = NULL;
	npu_status st = NPU_OK;
	char label[300];

	/* Producers from the node list: each value has at most one. */
	for (i = 0; i < g->num_values; i++)
		g->values[i]->producer = NULL;
	for (i = 0; i < n; i++) {
		struct npu_node *node = g->nodes[i];

		for (j = 0; j < node->num_outputs; j++) {
			struct npu_value *v = node->outputs[j];

			if (!v)
				continue;
			if (v->producer || v->constant || v->is_graph_input) {
				return npu_error_set(err, NPU_ERR_MODEL,
					"%s: %s: output '%s' is already %s",
					g->source,
					npu_node_label(g, node, label,
						       sizeof(label)),
					v->name,
					v->producer ? "produced by another node"
					: v->constant ? "an initializer"
						      : "a graph input");
			}
			v->producer = node;
		}
	}
	for (i = 0; i < n; i++) {
		struct npu_node *node = g->nodes[i];

		for (j = 0; j < node->num_inputs; j++) {
			struct npu_value *v = node->inputs[j];

			if (v && !v->producer && !v->constant &&
			    !v->is_graph_input && j >= node->num_inputs - node->num_implicit_inputs)
				return npu_error_set(err, NPU_ERR_MODEL,
					"%s: %s: a subgraph reads '%s', which no node, initializer or input of an enclosing graph defines",
					g->source,
					npu_node_label(g, node, label, sizeof(label)),
					v->name);
			if (v && !v->producer && !v->constant &&
			    !v->is_graph_input)
				return npu_error_set(err, NPU_ERR_MODEL,
					"%s: %s: input %zu '%s' is not produced by any node, initializer or graph input",
					g->source,
					npu_node_label(g, node, label,
						       sizeof(label)),
					j, v->name);
		}
	}
	for (i = 0; i < g->num_outputs; i++) {
		struct npu_value *v = g->outputs[i];

		if (!v->producer && !v->constant && !v->is_graph_input)
			return npu_error_set(err, NPU_ERR_MODEL,
				"%s: graph output '%s' is never produced",
				g->source, v->name);
	}
	if (!n)
		return NPU_OK;

	/* Kahn's algorithm; ties keep the original order (stable). */
	pending = calloc(n, sizeof(*pending));
	queue = calloc(n, sizeof(*queue));
	user_count = calloc(n, sizeof(*user_count));
	users = calloc(n, sizeof(*users));
	sorted = calloc(n, sizeof(*sorted));
	if (!pending || !queue || !user_count || !users || !sorted) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory",
				   g->source);
		goto out;
	}
	/* Node index of each producer, through a temporary map. */
	{
		struct npu_node **order = g->nodes;
		size_t *idx_of_value = calloc(g->num_values, sizeof(size_t));

		if (!idx_of_value) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY,
					   "%s: out of memory", g->source);
			goto out;
		}
		for (i = 0; i < g->num_values; i++)
			idx_of_value[i] = SIZE_MAX;
		for (i = 0; i < n; i++)
			for (j = 0; j < order[i]->num_outputs; j++)
				if (order[i]->outputs[j])
					idx_of_value[order[i]->outputs[j]->index] = i;
		for (i = 0; i < n; i++) {
			for (j = 0; j < order[i]->num_inputs; j++) {
				struct npu_value *v = order[i]->inputs[j];
				size_t p;
				size_t *nu;

				if (!v || idx_of_value[v->index] == SIZE_MAX)
					continue;
				p = idx_of_value[v->index];
				pending[i]++;
				nu = realloc(users[p], (user_count[p] + 1) *
							       sizeof(*nu));
				if (!nu) {
					free(idx_of_value);
					st = npu_error_set(err, NPU_ERR_NO_MEMORY,
						"%s: out of memory", g->source);
					goto out;
				}
				users[p] = nu;
				users[p][user_count[p]++] = i;
			}
		}
		free(idx_of_value);
	}
	for (i = 0; i < n; i++)
		if (!pending[i])
			queue[tail++] = i;
	while (head < tail) {
		size_t cur = queue[head];

		sorted[head++] = g->nodes[cur];
		for (j = 0; j < user_count[cur]; j++)
			if (--pending[users[cur][j]] == 0)
				queue[tail++] = users[cur][j];
	}
	if (head != n) {
		for (i = 0; i < n; i++)
			if (pending[i])
				break;
		st = npu_error_set(err, NPU_ERR_MODEL,
				   "%s: the graph has a cycle through %s",
				   g->source,
				   npu_node_label(g, g->nodes[i], label,
						  sizeof(label)));
		goto out;
	}
	memcpy(g->nodes, sorted, n * sizeof(*sorted));
out:
	if (users)
		for (i = 0; i < n; i++)
			free(users[i]);
	free(users);
	free(user_count);
	free(pending);
	free(queue);
	free(sorted);
	return st;
}

npu_status npu_graph_run_passes(struct npu_graph *g,
				const struct npu_pass *passes, size_t count,
				struct npu_error *err)
{
	size_t i;
	npu_status st;

	for (i = 0; i < count; i++) {
		st = passes[i].run(g, passes[i].arg, err);
		if (st != NPU_OK) {
			npu_error_prefix(err, "pass '%s'", passes[i].name);
			return st;
		}
		st = npu_graph_sort(g, err);
		if (st != NPU_OK) {
			npu_error_prefix(err, "graph invalid after pass '%s'",
					 passes[i].name);
			return st;
		}
	}
	return NPU_OK;
}

static struct npu_tensor *clone_tensor(const struct npu_tensor *t)
{
	struct npu_tensor *c;

	if (!t)
		return NULL;
	if (t->dtype == NPU_DTYPE_STRING)	/* its size is not numel * element size */
		return npu_tensor_dup(t);
	c = npu_tensor_create(t->dtype, &t->shape);
	if (c && t->nbytes && c->nbytes == t->nbytes)
		memcpy(c->data, t->data, t->nbytes);
	else if (c && c->nbytes != t->nbytes) {
		npu_tensor_destroy(c);
		return NULL;
	}
	return c;
}

bool npu_attr_clone(struct npu_attr *dst, const struct npu_attr *src)
{
	size_t i;

	*dst = *src;
	dst->name = NULL;
	dst->s = NULL;
	dst->floats = NULL;
	dst->ints = NULL;
	dst->strings = NULL;
	dst->t = NULL;
	dst->g = NULL;
	dst->name = strdup(src->name);
	if (!dst->name)
		return false;
	if (src->s && !(dst->s = strdup(src->s)))
		return false;
	if (src->floats) {
		dst->floats = malloc(src->count * sizeof(float) + 1);
		if (!dst->floats)
			return false;
		memcpy(dst->floats, src->floats, src->count * sizeof(float));
	}
	if (src->ints) {
		dst->ints = malloc(src->count * sizeof(int64_t) + 1);
		if (!dst->ints)
			return false;
		memcpy(dst->ints, src->ints, src->count * sizeof(int64_t));
	}
	if (src->strings) {
		dst->strings = calloc(src->count + 1, sizeof(char *));
		if (!dst->strings)
			return false;
		for (i = 0; i < src->count; i++)
			if (src->strings[i] && !(dst->strings[i] = strdup(src->strings[i])))
				return false;
	}
	if (src->t && !(dst->t = clone_tensor(src->t)))
		return false;
	if (src->g && !(dst->g = npu_graph_clone(src->g, &(struct npu_error){ 0 })))
		return false;
	return true;
}

struct npu_graph *npu_graph_clone(const struct npu_graph *src,
				  struct npu_error *err)
{
	struct npu_graph *g = npu_graph_create(src->source);
	size_t i, j;
	int d;

	if (!g)
		goto nomem;
	free(g->name);
	g->name = dup_str(src->name);
	g->ir_version = src->ir_version;
	g->ops = src->ops;
	g->opsets = calloc(src->num_opsets + 1, sizeof(*g->opsets));
	if (!g->name || !g->opsets)
		goto nomem;
	for (i = 0; i < src->num_opsets; i++) {
		g->opsets[i].version = src->opsets[i].version;
		g->opsets[i].domain = dup_str(src->opsets[i].domain);
		g->num_opsets++;
		if (!g->opsets[i].domain)
			goto nomem;
	}
	/* Values first, at the same indices, so nodes can point at them. */
	for (i = 0; i < src->num_values; i++) {
		const struct npu_value *sv = src->values[i];
		struct npu_value *v = npu_graph_add_value(g, sv->name, err);

		if (!v)
			goto fail;
		v->dtype = sv->dtype;
		v->shape = sv->shape;
		v->is_graph_input = sv->is_graph_input;
		v->is_graph_output = sv->is_graph_output;
		v->rows_layout = sv->rows_layout;
		if (sv->constant && !(v->constant = clone_tensor(sv->constant)))
			goto nomem;
		for (d = 0; d < NPU_MAX_RANK; d++)
			if (sv->dim_params[d] && !(v->dim_params[d] = strdup(sv->dim_params[d])))
				goto nomem;
	}
	for (i = 0; i < src->num_nodes; i++) {
		const struct npu_node *sn = src->nodes[i];
		struct npu_node *n = npu_graph_add_node(g, sn->op_type, sn->domain, sn->name,
							sn->num_inputs, sn->num_outputs, err);

		if (!n)
			goto fail;
		n->opset = sn->opset;
		n->num_implicit_inputs = sn->num_implicit_inputs;
		n->placement = sn->placement;
		n->placement_reason = sn->placement_reason;
		for (j = 0; j < sn->num_inputs; j++)
			n->inputs[j] = sn->inputs[j] ? g->values[sn->inputs[j]->index] : NULL;
		for (j = 0; j < sn->num_outputs; j++) {
			n->outputs[j] = sn->outputs[j] ? g->values[sn->outputs[j]->index] : NULL;
			if (n->outputs[j] && sn->outputs[j]->producer == sn)
				n->outputs[j]->producer = n;
		}
		if (sn->num_attrs) {
			n->attrs = calloc(sn->num_attrs, sizeof(*n->attrs));
			if (!n->attrs)
				goto nomem;
			for (j = 0; j < sn->num_attrs; j++) {
				n->num_attrs++;
				if (!npu_attr_clone(&n->attrs[j], &sn->attrs[j]))
					goto nomem;
			}
		}
	}
	g->inputs = calloc(src->num_inputs + 1, sizeof(*g->inputs));
	g->outputs = calloc(src->num_outputs + 1, sizeof(*g->outputs));
	if (!g->inputs || !g->outputs)
		goto nomem;
	for (i = 0; i < src->num_inputs; i++)
		g->inputs[g->num_inputs++] = g->values[src->inputs[i]->index];
	for (i = 0; i < src->num_outputs; i++)
		g->outputs[g->num_outputs++] = g->values[src->outputs[i]->index];
	if (src->num_captures) {
		g->capture_slot = malloc(src->num_captures * sizeof(*g->capture_slot));
		if (!g->capture_slot)
			goto nomem;
		memcpy(g->capture_slot, src->capture_slot,
		       src->num_captures * sizeof(*g->capture_slot));
		g->num_captures = src->num_captures;
	}
	return g;
nomem:
	npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory copying the graph",
		      src->source);
fail:
	npu_graph_destroy(g);
	return NULL;
}

void npu_graph_set_ops(struct npu_graph *g, const struct npu_op_registry *ops)
{
	size_t i, a;

	g->ops = ops;
	for (i = 0; i < g->num_nodes; i++)
		for (a = 0; a < g->nodes[i]->num_attrs; a++)
			if (g->nodes[i]->attrs[a].type == NPU_ATTR_GRAPH && g->nodes[i]->attrs[a].g)
				npu_graph_set_ops(g->nodes[i]->attrs[a].g, ops);
}
