// SPDX-License-Identifier: MIT
/*
 * npu_onnx.c - ModelProto -> npu_graph. Checks versions, opset imports,
 * value types, initializers, attributes and topology; Constant nodes of the
 * default domain become constant values directly.
 */
#include "onnx/npu_onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/*
 * One graph being imported: the model's, or a subgraph attribute (If
 * branches, Loop and Scan bodies), which may read values of the graphs
 * around it by name.
 */
struct importer {
	struct npu_graph *g;
	const char *src;
	struct npu_error *err;
	struct importer *parent;	/* the enclosing graph; NULL at the top */
	int depth;
	const Onnx__GraphProto *gp;	/* a subgraph's proto: the names it defines */
	struct npu_value **outer;	/* per capture, the parent graph's value */
	/* Subgraphs of the node being imported, with their captures' outer values. */
	struct pending_subgraph {
		struct npu_graph *g;
		struct npu_value **outer;
	} pending[8];
	size_t num_pending;
};

#define NPU_ONNX_MAX_SUBGRAPH_DEPTH 16

static npu_status import_body(struct importer *im, const Onnx__GraphProto *gp);

static bool is_default_domain(const char *d)
{
	return !d || !d[0] || !strcmp(d, "ai.onnx");
}

static char *bin_to_str(const ProtobufCBinaryData *b)
{
	char *s = malloc(b->len + 1);

	if (!s)
		return NULL;
	if (b->len)
		memcpy(s, b->data, b->len);
	s[b->len] = '\0';
	return s;
}

/*
 * A declared type that says nothing: ONNX lets subgraph inputs and graph
 * outputs leave their type to inference (a TypeProto with no value, or a
 * tensor type without an element type).
 */
static bool type_is_empty(const Onnx__TypeProto *tp)
{
	if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
		return true;
	return tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
	       (!tp->tensor_type || !tp->tensor_type->has_elem_type ||
		tp->tensor_type->elem_type == 0);
}

/* ValueInfoProto type -> value dtype / shape / symbolic dim names. */
static npu_status import_type(struct importer *im, const char *what,
			      const Onnx__ValueInfoProto *vi,
			      struct npu_value *v)
{
	const Onnx__TypeProto *tp = vi->type;
	const Onnx__TypeProto__Tensor *tt;
	size_t i;

	if (!tp)
		return npu_error_set(im->err, NPU_ERR_MODEL, "%s: %s '%s' has no type",
				     im->src, what, v->name);
	switch (tp->value_case) {
	case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
		break;
	case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
	case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
		/* A packed container (graph/npu_seq.h): its size is its shape. */
		v->dtype = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE
				   ? NPU_DTYPE_SEQUENCE : NPU_DTYPE_OPTIONAL;
		v->shape.rank = 1;
		v->shape.dims[0] = -1;
		return NPU_OK;
	case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
	case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
			"%s: %s '%s': unsupported type (%s; tensors, sequences and optionals are supported)",
			im->src, what, v->name,
			tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE ? "map" : "sparse tensor");
	default:
		return npu_error_set(im->err, NPU_ERR_MODEL,
				     "%s: %s '%s' has an empty type", im->src,
				     what, v->name);
	}
	tt = tp->tensor_type;
	if (!tt || !tt->has_elem_type || tt->elem_type == 0)
		return npu_error_set(im->err, NPU_ERR_MODEL,
				     "%s: %s '%s' has no element type", im->src,
				     what, v->name);
	if (!npu_onnx_dtype_supported(tt->elem_type))
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
				     "%s: %s '%s': unsupported type '%s'",
				     im->src, what, v->name,
				     npu_onnx_dtype_name(tt->elem_type));
	v->dtype = (enum npu_dtype)tt->elem_type;
	if (!tt->shape) {
		v->shape.rank = -1;
		return NPU_OK;
	}
	if (tt->shape->n_dim > NPU_MAX_RANK)
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
				     "%s: %s '%s': rank %zu (at most %d supported)",
				     im->src, what, v->name, tt->shape->n_dim,
				     NPU_MAX_RANK);
	v->shape.rank = (int)tt->shape->n_dim;
	for (i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];

		v->shape.dims[i] = -1;
		if (!d)
			continue;
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return npu_error_set(im->err, NPU_ERR_MODEL,
					"%s: %s '%s': dim %zu is negative (%lld)",
					im->src, what, v->name, i,
					(long long)d->dim_value);
			v->shape.dims[i] = d->dim_value;
		} else if (d->value_case ==
				   ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   d->dim_param && d->dim_param[0]) {
			free(v->dim_params[i]);
			v->dim_params[i] = strdup(d->dim_param);
			if (!v->dim_params[i])
				return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
						     "out of memory");
		}
	}
	return NPU_OK;
}

static const char *attr_type_name(int t)
{
	switch (t) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "float";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "int";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "string";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "tensor";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "graph";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "sparse tensor";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "type proto";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "floats";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "ints";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "strings";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "tensors";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "graphs";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "sparse tensors";
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "type protos";
	}
	return "undefined";
}

/* Which value fields an attribute carries, as a bit per attribute type. */
static unsigned attr_fields(const Onnx__AttributeProto *a)
{
	unsigned m = 0;

	if (a->has_f) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	if (a->has_i) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	if (a->has_s) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	if (a->t) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	if (a->g) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	if (a->sparse_tensor) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
	if (a->tp) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
	if (a->n_floats) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
	if (a->n_ints) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	if (a->n_strings) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	if (a->n_tensors) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
	if (a->n_graphs) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
	if (a->n_sparse_tensors) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
	if (a->n_type_protos) m |= 1u << ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
	return m;
}

/* Does the subgraph define 'name' itself (initializer, input, node output)? */
static bool defines(const Onnx__GraphProto *gp, const char *name)
{
	size_t i, j;

	for (i = 0; i < gp->n_initializer; i++)
		if (gp->initializer[i] && gp->initializer[i]->name &&
		    !strcmp(gp->initializer[i]->name, name))
			return true;
	for (i = 0; i < gp->n_input; i++)
		if (gp->input[i] && gp->input[i]->name && !strcmp(gp->input[i]->name, name))
			return true;
	for (i = 0; i < gp->n_node; i++)
		for (j = 0; gp->node[i] && j < gp->node[i]->n_output; j++)
			if (gp->node[i]->output[j] && !strcmp(gp->node[i]->output[j], name))
				return true;
	return false;
}

/* A subgraph attribute: a graph of its own that may capture outer values. */
static npu_status import_subgraph(struct importer *im, const char *label,
				  const Onnx__AttributeProto *a, struct npu_graph **out)
{
	struct importer sub = {
		.src = im->src, .err = im->err, .parent = im, .depth = im->depth + 1,
		.gp = a->g,
	};
	size_t i;
	npu_status st;

	if (sub.depth > NPU_ONNX_MAX_SUBGRAPH_DEPTH)
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
				     "%s: %s: attribute '%s': subgraphs nested more than %d deep",
				     im->src, label, a->name, NPU_ONNX_MAX_SUBGRAPH_DEPTH);
	if (im->num_pending == sizeof(im->pending) / sizeof(im->pending[0]))
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
				     "%s: %s: more than %zu subgraph attributes", im->src, label,
				     sizeof(im->pending) / sizeof(im->pending[0]));
	sub.g = npu_graph_create(im->src);
	if (!sub.g)
		return npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
	sub.g->ir_version = im->g->ir_version;
	sub.g->opsets = calloc(im->g->num_opsets + 1, sizeof(*sub.g->opsets));
	st = sub.g->opsets ? NPU_OK : npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; !st && i < im->g->num_opsets; i++) {
		sub.g->opsets[i].version = im->g->opsets[i].version;
		sub.g->opsets[i].domain = strdup(im->g->opsets[i].domain);
		sub.g->num_opsets++;
		if (!sub.g->opsets[i].domain)
			st = npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	if (!st)
		st = import_body(&sub, a->g);
	if (st) {
		npu_error_prefix(im->err, "%s: attribute '%s'", label, a->name);
		free(sub.outer);
		npu_graph_destroy(sub.g);
		return st;
	}
	/* The node lists the captures' outer values (add_implicit_inputs). */
	im->pending[im->num_pending].g = sub.g;
	im->pending[im->num_pending++].outer = sub.outer;
	*out = sub.g;
	return NPU_OK;
}

static npu_status import_attr(struct importer *im, const char *label,
			      const Onnx__AttributeProto *a,
			      struct npu_attr *out)
{
	unsigned fields = attr_fields(a);
	int type;
	size_t i;
	char what[600];

	if (!a->name || !a->name[0])
		return npu_error_set(im->err, NPU_ERR_MODEL,
				     "%s: %s: attribute without a name", im->src,
				     label);
	out->name = strdup(a->name);
	if (!out->name)
		return npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
	if (a->ref_attr_name && a->ref_attr_name[0])
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
			"%s: %s: attribute '%s' refers to a function attribute ('%s'), which is only valid inside functions",
			im->src, label, a->name, a->ref_attr_name);
	if (a->has_type && a->type != 0) {
		type = a->type;
		if (type < 1 || type > 14)
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: attribute '%s' has an unknown type %d",
				im->src, label, a->name, type);
		if (fields & ~(1u << type))
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: attribute '%s' is declared %s but holds another kind of value",
				im->src, label, a->name, attr_type_name(type));
	} else {
		/* IR < 3 files may omit the type: take the one field set. */
		if (!fields || (fields & (fields - 1)))
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: attribute '%s' has no type and %s value",
				im->src, label, a->name,
				fields ? "more than one" : "no");
		for (type = 0; !(fields & (1u << type)); type++)
			;
	}
	switch (type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		out->type = NPU_ATTR_FLOAT;
		out->f = a->f;
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		out->type = NPU_ATTR_INT;
		out->i = a->i;
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		out->type = NPU_ATTR_STRING;
		out->s = bin_to_str(&a->s);
		if (!out->s)
			return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		out->type = NPU_ATTR_TENSOR;
		if (!a->t)
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: attribute '%s' is declared tensor but holds none",
				im->src, label, a->name);
		snprintf(what, sizeof(what), "%s: %s: attribute '%s'", im->src,
			 label, a->name);
		return npu_onnx_tensor_from_proto(a->t, what, &out->t, im->err);
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		out->type = NPU_ATTR_FLOATS;
		out->count = a->n_floats;
		out->floats = malloc((a->n_floats ? a->n_floats : 1) *
				     sizeof(float));
		if (!out->floats)
			return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		if (a->n_floats)
			memcpy(out->floats, a->floats,
			       a->n_floats * sizeof(float));
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		out->type = NPU_ATTR_INTS;
		out->count = a->n_ints;
		out->ints = malloc((a->n_ints ? a->n_ints : 1) *
				   sizeof(int64_t));
		if (!out->ints)
			return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		if (a->n_ints)
			memcpy(out->ints, a->ints, a->n_ints * sizeof(int64_t));
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
		out->type = NPU_ATTR_STRINGS;
		out->strings = calloc(a->n_strings ? a->n_strings : 1,
				      sizeof(char *));
		if (!out->strings)
			return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		out->count = a->n_strings;
		for (i = 0; i < a->n_strings; i++) {
			out->strings[i] = bin_to_str(&a->strings[i]);
			if (!out->strings[i])
				return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
						     "out of memory");
		}
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
		/* Only Optional takes one, to type an empty optional: not needed. */
		out->type = NPU_ATTR_TYPE_PROTO;
		return NPU_OK;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		out->type = NPU_ATTR_GRAPH;
		if (!a->g)
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: attribute '%s' is declared graph but holds none",
				im->src, label, a->name);
		return import_subgraph(im, label, a, &out->g);
	}
	/* Valid ONNX, but not something our ops take. */
	out->type = (enum npu_attr_type)0;
	return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
		"%s: %s: attribute '%s' is a %s (%s attributes are not supported)",
		im->src, label, a->name, attr_type_name(type),
		type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS
			? "graph list" : attr_type_name(type));
}

/* Constant (default domain) -> a constant value, no node. */
static npu_status import_constant(struct importer *im, const char *label,
				  const struct npu_node *node,
				  struct npu_value *out)
{
	const struct npu_attr *a;
	struct npu_shape shape = { 0 };
	struct npu_tensor *t = NULL;

	if (node->num_attrs != 1)
		return npu_error_set(im->err, NPU_ERR_MODEL,
			"%s: %s: needs exactly one value attribute, has %zu",
			im->src, label, node->num_attrs);
	a = &node->attrs[0];
	if (!strcmp(a->name, "value") && a->type == NPU_ATTR_TENSOR) {
		t = npu_tensor_dup(a->t);
	} else if (!strcmp(a->name, "value_float") &&
		   a->type == NPU_ATTR_FLOAT) {
		t = npu_tensor_create(NPU_DTYPE_FLOAT, &shape);
		if (t)
			*(float *)t->data = a->f;
	} else if (!strcmp(a->name, "value_int") && a->type == NPU_ATTR_INT) {
		t = npu_tensor_create(NPU_DTYPE_INT64, &shape);
		if (t)
			*(int64_t *)t->data = a->i;
	} else if (!strcmp(a->name, "value_floats") &&
		   a->type == NPU_ATTR_FLOATS) {
		shape.rank = 1;
		shape.dims[0] = (int64_t)a->count;
		t = npu_tensor_create(NPU_DTYPE_FLOAT, &shape);
		if (t && a->count)
			memcpy(t->data, a->floats, a->count * sizeof(float));
	} else if (!strcmp(a->name, "value_ints") && a->type == NPU_ATTR_INTS) {
		shape.rank = 1;
		shape.dims[0] = (int64_t)a->count;
		t = npu_tensor_create(NPU_DTYPE_INT64, &shape);
		if (t && a->count)
			memcpy(t->data, a->ints, a->count * sizeof(int64_t));
	} else if (!strcmp(a->name, "value") || !strcmp(a->name, "value_float") ||
		   !strcmp(a->name, "value_int") ||
		   !strcmp(a->name, "value_floats") ||
		   !strcmp(a->name, "value_ints")) {
		return npu_error_set(im->err, NPU_ERR_MODEL,
			"%s: %s: attribute '%s' has the wrong type", im->src,
			label, a->name);
	} else {
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
			"%s: %s: attribute '%s' is not supported", im->src,
			label, a->name);
	}
	if (!t)
		return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
				     "%s: %s: out of memory", im->src, label);
	out->constant = t;
	out->dtype = t->dtype;
	out->shape = t->shape;
	return NPU_OK;
}

static struct npu_value *use_value(struct importer *im, const char *name);

/*
 * A subgraph reading a value it does not define: an input of its own
 * (a capture) fed from the enclosing graph's value of that name, which
 * may itself capture it from further out.
 */
static struct npu_value *capture(struct importer *im, const char *name)
{
	struct npu_value *outer, *v, **in, **ov;
	size_t *slots;

	outer = use_value(im->parent, name);
	if (!outer)
		return NULL;
	v = npu_graph_add_value(im->g, name, im->err);
	in = realloc(im->g->inputs, (im->g->num_inputs + 1) * sizeof(*in));
	if (in)
		im->g->inputs = in;
	ov = realloc(im->outer, (im->g->num_captures + 1) * sizeof(*ov));
	if (ov)
		im->outer = ov;
	slots = realloc(im->g->capture_slot, (im->g->num_captures + 1) * sizeof(*slots));
	if (slots)
		im->g->capture_slot = slots;
	if (!v || !in || !ov || !slots) {
		if (v)
			npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	v->is_graph_input = true;
	im->g->inputs[im->g->num_inputs++] = v;
	im->outer[im->g->num_captures] = outer;
	im->g->capture_slot[im->g->num_captures++] = 0;
	return v;
}

/* The value named 'name' used as a node input, created when first seen. */
static struct npu_value *use_value(struct importer *im, const char *name)
{
	struct npu_value *v = npu_graph_find_value(im->g, name);

	if (v)
		return v;
	if (im->parent && !defines(im->gp, name))
		return capture(im, name);
	return npu_graph_add_value(im->g, name, im->err);
}

/*
 * After its attributes and inputs: a node with subgraphs lists the outer
 * values they capture as implicit inputs, and each subgraph learns which
 * implicit input feeds each of its captures.
 */
static npu_status add_implicit_inputs(struct importer *im, struct npu_node *node)
{
	size_t p, k, j, declared = node->num_inputs;
	struct npu_value **in;
	npu_status st = NPU_OK;

	for (p = 0; p < im->num_pending && !st; p++) {
		struct npu_graph *sub = im->pending[p].g;

		for (k = 0; k < sub->num_captures && !st; k++) {
			struct npu_value *outer = im->pending[p].outer[k];

			for (j = declared; j < node->num_inputs; j++)
				if (node->inputs[j] == outer)
					break;
			if (j == node->num_inputs) {
				in = realloc(node->inputs, (node->num_inputs + 1) * sizeof(*in));
				if (!in) {
					st = npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
					break;
				}
				node->inputs = in;
				node->inputs[node->num_inputs++] = outer;
				node->num_implicit_inputs++;
			}
			sub->capture_slot[k] = j - declared;
		}
	}
	return st;	/* import_node frees the pending lists */
}

static npu_status import_node_fields(struct importer *im, size_t index,
				     const Onnx__NodeProto *np);

/* One node; its subgraphs' capture lists never outlive it. */
static npu_status import_node(struct importer *im, size_t index,
			      const Onnx__NodeProto *np)
{
	npu_status st = import_node_fields(im, index, np);
	size_t p;

	for (p = 0; p < im->num_pending; p++)
		free(im->pending[p].outer);
	im->num_pending = 0;
	return st;
}

static npu_status import_node_fields(struct importer *im, size_t index,
				     const Onnx__NodeProto *np)
{
	struct npu_node *node;
	const char *domain = np->domain ? np->domain : "";
	char label[300];
	size_t i, j;
	int64_t opset;
	npu_status st;

	if (!np->op_type || !np->op_type[0])
		return npu_error_set(im->err, NPU_ERR_MODEL,
				     "%s: node #%zu has no op_type", im->src,
				     index);
	if (np->name && np->name[0])
		snprintf(label, sizeof(label), "node '%s' (%s)", np->name,
			 np->op_type);
	else
		snprintf(label, sizeof(label), "node #%zu (%s)", index,
			 np->op_type);
	opset = npu_graph_opset(im->g, domain);
	if (opset < 0)
		return npu_error_set(im->err, NPU_ERR_MODEL,
			"%s: %s: domain '%s' is not in the model's opset imports",
			im->src, label, is_default_domain(domain) ? "ai.onnx"
								  : domain);
	if (np->n_input > 4096 || np->n_output > 4096)
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
				     "%s: %s: too many inputs / outputs",
				     im->src, label);
	node = npu_graph_add_node(im->g, np->op_type,
				  is_default_domain(domain) ? "" : domain,
				  np->name, np->n_input, np->n_output, im->err);
	if (!node)
		return im->err->status;
	node->opset = (int)(opset > 1000000 ? 1000000 : opset);
	if (np->n_attribute) {
		node->attrs = calloc(np->n_attribute, sizeof(*node->attrs));
		if (!node->attrs)
			return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
	}
	for (i = 0; i < np->n_attribute; i++) {
		struct npu_attr *a = &node->attrs[node->num_attrs++];

		if (!np->attribute[i])
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: %s: empty attribute", im->src,
					     label);
		st = import_attr(im, label, np->attribute[i], a);
		if (st != NPU_OK)
			return st;
		for (j = 0; j + 1 < node->num_attrs; j++)
			if (!strcmp(node->attrs[j].name, a->name))
				return npu_error_set(im->err, NPU_ERR_MODEL,
					"%s: %s: attribute '%s' appears twice",
					im->src, label, a->name);
	}
	for (i = 0; i < np->n_input; i++) {
		if (!np->input[i] || !np->input[i][0])
			continue;	/* omitted optional input */
		node->inputs[i] = use_value(im, np->input[i]);
		if (!node->inputs[i])
			return im->err->status;
	}
	st = add_implicit_inputs(im, node);
	if (st != NPU_OK)
		return st;
	for (i = 0; i < np->n_output; i++) {
		struct npu_value *v;

		if (!np->output[i] || !np->output[i][0])
			continue;
		v = use_value(im, np->output[i]);
		if (!v)
			return im->err->status;
		if (v->producer || v->constant || v->is_graph_input)
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: output '%s' is already %s", im->src,
				label, v->name,
				v->producer == node ? "an output of this node"
				: v->producer ? "produced by another node"
				: v->constant ? "an initializer or constant"
					      : "a graph input");
		v->producer = node;
		node->outputs[i] = v;
	}
	if (is_default_domain(domain) && !strcmp(np->op_type, "Constant")) {
		struct npu_value *out = node->num_outputs == 1 ?
					node->outputs[0] : NULL;

		if (node->num_inputs || !out)
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: %s: needs no inputs and one output", im->src,
				label);
		st = import_constant(im, label, node, out);
		if (st != NPU_OK)
			return st;
		npu_graph_remove_node(im->g, node);
	}
	return NPU_OK;
}

static npu_status import_graph(struct importer *im, const Onnx__ModelProto *mp)
{
	if (!mp->graph)
		return npu_error_set(im->err, NPU_ERR_MODEL, "%s: the model has no graph",
				     im->src);
	return import_body(im, mp->graph);
}

/* A graph's initializers, inputs, nodes and outputs, then sorted and checked. */
static npu_status import_body(struct importer *im, const Onnx__GraphProto *gp)
{
	struct npu_graph *g = im->g;
	char what[600];
	size_t i;
	npu_status st;

	if (gp->name) {
		free(g->name);
		g->name = strdup(gp->name);
		if (!g->name)
			return npu_error_set(im->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
	}
	if (gp->n_sparse_initializer)
		return npu_error_set(im->err, NPU_ERR_UNSUPPORTED,
				     "%s: sparse initializers are not supported",
				     im->src);
	for (i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		struct npu_value *v;

		if (!tp || !tp->name || !tp->name[0])
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: initializer #%zu has no name",
					     im->src, i);
		if (npu_graph_find_value(g, tp->name))
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: initializer '%s' appears twice",
					     im->src, tp->name);
		v = npu_graph_add_value(g, tp->name, im->err);
		if (!v)
			return im->err->status;
		snprintf(what, sizeof(what), "%s: initializer '%s'", im->src,
			 tp->name);
		st = npu_onnx_tensor_from_proto(tp, what, &v->constant, im->err);
		if (st != NPU_OK)
			return st;
		v->dtype = v->constant->dtype;
		v->shape = v->constant->shape;
	}
	g->inputs = calloc(gp->n_input ? gp->n_input : 1, sizeof(*g->inputs));
	g->outputs = calloc(gp->n_output ? gp->n_output : 1,
			    sizeof(*g->outputs));
	if (!g->inputs || !g->outputs)
		return npu_error_set(im->err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		struct npu_value *v;

		if (!vi || !vi->name || !vi->name[0])
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: graph input #%zu has no name",
					     im->src, i);
		v = npu_graph_find_value(g, vi->name);
		if (v && v->constant)
			continue;	/* an initializer listed as input (IR < 4) */
		if (v)
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: graph input '%s' appears twice",
					     im->src, vi->name);
		v = npu_graph_add_value(g, vi->name, im->err);
		if (!v)
			return im->err->status;
		/* A subgraph input may leave its type to the node that runs it. */
		st = im->parent && type_is_empty(vi->type) ? NPU_OK
					     : import_type(im, im->parent ? "subgraph input"
									  : "graph input", vi, v);
		if (st != NPU_OK)
			return st;
		v->is_graph_input = true;
		g->inputs[g->num_inputs++] = v;
	}
	for (i = 0; i < gp->n_node; i++) {
		if (!gp->node[i])
			continue;
		st = import_node(im, i, gp->node[i]);
		if (st != NPU_OK)
			return st;
	}
	if (!gp->n_output)
		return npu_error_set(im->err, NPU_ERR_MODEL,
				     "%s: the graph has no outputs", im->src);
	for (i = 0; i < gp->n_output; i++) {
		const Onnx__ValueInfoProto *vi = gp->output[i];
		struct npu_value *v;
		struct npu_value declared;

		if (!vi || !vi->name || !vi->name[0])
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: graph output #%zu has no name",
					     im->src, i);
		v = npu_graph_find_value(g, vi->name);
		if (!v)
			return npu_error_set(im->err, NPU_ERR_MODEL,
				"%s: graph output '%s' is never produced",
				im->src, vi->name);
		if (v->is_graph_output)
			return npu_error_set(im->err, NPU_ERR_MODEL,
					     "%s: graph output '%s' appears twice",
					     im->src, vi->name);
		/* An output without a type gets the one inference gives it. */
		if (!type_is_empty(vi->type)) {
			/* Check the declared type; keep its symbolic names. */
			memset(&declared, 0, sizeof(declared));
			declared.name = vi->name;
			st = import_type(im, "graph output", vi, &declared);
			if (st == NPU_OK) {
				int d;

				for (d = 0; d < NPU_MAX_RANK; d++) {
					if (d < declared.shape.rank &&
					    !v->dim_params[d])
						v->dim_params[d] =
							declared.dim_params[d];
					else
						free(declared.dim_params[d]);
				}
				if (!v->producer && !v->constant && !v->dtype) {
					v->dtype = declared.dtype;
					v->shape = declared.shape;
				}
			} else {
				for (int d = 0; d < NPU_MAX_RANK; d++)
					free(declared.dim_params[d]);
				return st;
			}
		}
		v->is_graph_output = true;
		g->outputs[g->num_outputs++] = v;
	}
	return npu_graph_sort(g, im->err);
}

npu_status npu_onnx_import(const void *data, size_t size, const char *source,
			   struct npu_graph **out, struct npu_error *err)
{
	return npu_onnx_import_meta(data, size, source, out, NULL, err);
}

npu_status npu_onnx_import_meta(const void *data, size_t size, const char *source,
				struct npu_graph **out, struct npu_onnx_meta **meta,
				struct npu_error *err)
{
	Onnx__ModelProto *mp;
	struct importer im = { 0 };
	npu_status st = NPU_OK;
	size_t i, j;

	*out = NULL;
	if (meta)
		*meta = NULL;
	if (!source)
		source = "<memory>";
	mp = onnx__model_proto__unpack(NULL, size, data);
	if (!mp)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: not a valid ONNX model (protobuf parse failed)",
				     source);
	im.err = err;
	im.src = source;
	im.g = npu_graph_create(source);
	if (!im.g) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	if (!mp->has_ir_version) {
		st = npu_error_set(err, NPU_ERR_MODEL, "%s: no ir_version", source);
		goto out;
	}
	if (mp->ir_version < NPU_ONNX_IR_MIN || mp->ir_version > NPU_ONNX_IR_MAX) {
		st = npu_error_set(err, NPU_ERR_UNSUPPORTED,
				   "%s: IR version %lld is not supported (%d..%d)",
				   source, (long long)mp->ir_version,
				   NPU_ONNX_IR_MIN, NPU_ONNX_IR_MAX);
		goto out;
	}
	im.g->ir_version = mp->ir_version;
	if (!mp->n_opset_import) {
		st = npu_error_set(err, NPU_ERR_MODEL, "%s: no opset_import",
				   source);
		goto out;
	}
	im.g->opsets = calloc(mp->n_opset_import, sizeof(*im.g->opsets));
	if (!im.g->opsets) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (i = 0; i < mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *os = mp->opset_import[i];
		const char *d = os && os->domain ? os->domain : "";

		if (!os || !os->has_version || os->version < 1) {
			st = npu_error_set(err, NPU_ERR_MODEL,
				"%s: opset import of domain '%s' has no valid version",
				source, is_default_domain(d) ? "ai.onnx" : d);
			goto out;
		}
		for (j = 0; j < im.g->num_opsets; j++) {
			const char *e = im.g->opsets[j].domain;

			if (is_default_domain(d) ? is_default_domain(e)
						 : !strcmp(d, e)) {
				st = npu_error_set(err, NPU_ERR_MODEL,
					"%s: domain '%s' is imported twice",
					source, is_default_domain(d) ? "ai.onnx" : d);
				goto out;
			}
		}
		im.g->opsets[j].domain = strdup(is_default_domain(d) ? "" : d);
		if (!im.g->opsets[j].domain) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
		im.g->opsets[j].version = os->version;
		im.g->num_opsets++;
	}
	st = import_graph(&im, mp);
	if (st == NPU_OK)
		st = npu_onnx_lower_gradients(im.g, err);
	if (st == NPU_OK && meta)
		st = npu_onnx_meta_from_proto(mp, source, meta, err);
out:
	onnx__model_proto__free_unpacked(mp, NULL);
	if (st != NPU_OK) {
		npu_graph_destroy(im.g);
		return st;
	}
	*out = im.g;
	return NPU_OK;
}

npu_status npu_onnx_import_file(const char *path, struct npu_graph **out,
				struct npu_error *err)
{
	void *data;
	size_t size;
	npu_status st;

	*out = NULL;
	st = npu_read_file(path, &data, &size, err);
	if (st != NPU_OK)
		return st;
	st = npu_onnx_import(data, size, path, out, err);
	free(data);
	return st;
}
