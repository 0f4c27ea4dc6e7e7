// SPDX-License-Identifier: MIT
/* Small graph-editing helpers shared by the compiler passes. */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

size_t npu_value_use_count(const struct npu_graph *g, const struct npu_value *v)
{
	size_t uses = 0, i, j;

	for (i = 0; i < g->num_nodes; i++)
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			uses += g->nodes[i]->inputs[j] == v;
	for (i = 0; i < g->num_outputs; i++)
		uses += g->outputs[i] == v;
	return uses;
}

struct npu_node *npu_value_single_user(const struct npu_graph *g,
				       const struct npu_value *v)
{
	struct npu_node *user = NULL;
	size_t i, j;

	if (v->is_graph_output)
		return NULL;
	for (i = 0; i < g->num_nodes; i++) {
		for (j = 0; j < g->nodes[i]->num_inputs; j++) {
			if (g->nodes[i]->inputs[j] != v)
				continue;
			if (user)
				return NULL;
			user = g->nodes[i];
		}
	}
	return user;
}

struct npu_value *npu_graph_add_constant(struct npu_graph *g, const char *hint,
					 struct npu_tensor *tensor,
					 struct npu_error *err)
{
	struct npu_value *v = npu_graph_new_value(g, hint, err);

	if (!v) {
		npu_tensor_destroy(tensor);
		return NULL;
	}
	v->constant = tensor;
	v->dtype = tensor->dtype;
	v->shape = tensor->shape;
	return v;
}

static struct npu_attr *attr_slot(struct npu_node *n, const char *name)
{
	struct npu_attr *attrs;
	size_t i;

	for (i = 0; i < n->num_attrs; i++)
		if (!strcmp(n->attrs[i].name, name))
			return &n->attrs[i];
	attrs = realloc(n->attrs, (n->num_attrs + 1) * sizeof(*attrs));
	if (!attrs)
		return NULL;
	n->attrs = attrs;
	memset(&attrs[n->num_attrs], 0, sizeof(attrs[0]));
	attrs[n->num_attrs].name = strdup(name);
	if (!attrs[n->num_attrs].name)
		return NULL;
	return &attrs[n->num_attrs++];
}

npu_status npu_node_set_attr_float(struct npu_node *n, const char *name,
				   float value)
{
	struct npu_attr *a = attr_slot(n, name);

	if (!a)
		return NPU_ERR_NO_MEMORY;
	a->type = NPU_ATTR_FLOAT;
	a->f = value;
	return NPU_OK;
}

npu_status npu_node_set_attr_string(struct npu_node *n, const char *name,
				    const char *value)
{
	struct npu_attr *a = attr_slot(n, name);
	char *s = strdup(value);

	if (!a || !s) {
		free(s);
		return NPU_ERR_NO_MEMORY;
	}
	free(a->s);
	a->type = NPU_ATTR_STRING;
	a->s = s;
	return NPU_OK;
}

npu_status npu_node_set_attr_floats(struct npu_node *n, const char *name,
				     const float *v, size_t count)
{
	float *copy = malloc((count ? count : 1) * sizeof(float));
	struct npu_attr *a = copy ? attr_slot(n, name) : NULL;

	if (!a) {
		free(copy);
		return NPU_ERR_NO_MEMORY;
	}
	memcpy(copy, v, count * sizeof(float));
	free(a->floats);
	a->type = NPU_ATTR_FLOATS;
	a->floats = copy;
	a->count = count;
	return NPU_OK;
}

npu_status npu_node_set_attr_int(struct npu_node *n, const char *name,
				 int64_t value)
{
	struct npu_attr *a = attr_slot(n, name);

	if (!a)
		return NPU_ERR_NO_MEMORY;
	a->type = NPU_ATTR_INT;
	a->i = value;
	return NPU_OK;
}

npu_status npu_node_set_attr_ints(struct npu_node *n, const char *name,
				  const int64_t *v, size_t count)
{
	int64_t *copy = malloc((count ? count : 1) * sizeof(int64_t));
	struct npu_attr *a = copy ? attr_slot(n, name) : NULL;

	if (!a) {
		free(copy);
		return NPU_ERR_NO_MEMORY;
	}
	memcpy(copy, v, count * sizeof(int64_t));
	free(a->ints);
	a->type = NPU_ATTR_INTS;
	a->ints = copy;
	a->count = count;
	return NPU_OK;
}

npu_status npu_node_set_op(struct npu_node *n, const char *domain, const char *op_type,
			   int opset)
{
	char *d = strdup(domain), *t = strdup(op_type);

	if (!d || !t) {
		free(d);
		free(t);
		return NPU_ERR_NO_MEMORY;
	}
	free(n->domain);
	free(n->op_type);
	n->domain = d;
	n->op_type = t;
	n->opset = opset;
	return NPU_OK;
}

const float *npu_const_floats(const struct npu_value *v, int64_t *count)
{
	if (!v || !v->constant || v->constant->dtype != NPU_DTYPE_FLOAT)
		return NULL;
	*count = npu_shape_numel(&v->constant->shape);
	return v->constant->data;
}
