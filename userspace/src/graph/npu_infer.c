// SPDX-License-Identifier: MIT
/*
 * npu_infer.c - shape / type inference over a graph with each op's infer(),
 * and folding of nodes whose inputs are all known at load time (constant
 * initializers, Shape / Size of known shapes): Shape -> Gather -> Concat ->
 * Reshape chains collapse into constants.
 */
#include "graph/npu_ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/npu_op_schema.h"

/* Folded outputs larger than this stay computed at run time. */
#define NPU_FOLD_MAX_BYTES (64u << 20)

/* The backend's evaluator for folding (npu_graph_set_fold), set at load. */
static npu_op_fold_fn npu_fold;

void npu_graph_set_fold(npu_op_fold_fn fold)
{
	npu_fold = fold;
}

static bool is_default_domain(const char *d)
{
	return !d || !d[0] || !strcmp(d, "ai.onnx");
}

static bool fold_allowed(const struct npu_node *node)
{
	static const char *const never[] = {
		"RandomNormal", "RandomUniform", "RandomNormalLike",
		"RandomUniformLike", "Multinomial", "Bernoulli", "Dropout",
	};
	size_t i;

	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (!strcmp(node->op_type, never[i]))
			return false;
	return true;
}

/* Shape / Size of a value whose shape is fully known, without its data. */
static npu_status fold_shape_op(struct npu_node *node, struct npu_error *err,
				bool *folded)
{
	const struct npu_value *in = node->inputs[0];
	struct npu_value *out = node->outputs[0];
	struct npu_shape s = { 0 };
	struct npu_tensor *t;
	int64_t start = 0, end, r, i;

	*folded = false;
	if (!in || !out || in->shape.rank < 0 || npu_shape_numel(&in->shape) < 0)
		return NPU_OK;
	r = in->shape.rank;
	if (!strcmp(node->op_type, "Size")) {
		t = npu_tensor_create(NPU_DTYPE_INT64, &s);
		if (!t)
			return npu_error_set(err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		*(int64_t *)t->data = npu_shape_numel(&in->shape);
	} else {
		start = npu_node_attr_int_or(node, "start", 0);
		end = npu_node_attr_int_or(node, "end", r);
		if (start < 0)
			start += r;
		if (end < 0)
			end += r;
		start = start < 0 ? 0 : start > r ? r : start;
		end = end < 0 ? 0 : end > r ? r : end;
		s.rank = 1;
		s.dims[0] = end > start ? end - start : 0;
		t = npu_tensor_create(NPU_DTYPE_INT64, &s);
		if (!t)
			return npu_error_set(err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		for (i = 0; i < s.dims[0]; i++)
			((int64_t *)t->data)[i] = in->shape.dims[start + i];
	}
	out->dtype = NPU_DTYPE_INT64;
	out->shape = t->shape;
	out->constant = t;
	*folded = true;
	return NPU_OK;
}

/* *folded = false when the evaluator has no kernel for the op. */
static npu_status fold_node(struct npu_node *node, bool *folded, struct npu_error *err)
{
	const struct npu_tensor *ins[64];
	struct npu_tensor *outs[16] = { 0 };
	npu_status st = NPU_OK;
	size_t j;

	*folded = false;
	for (j = 0; j < node->num_inputs; j++)
		ins[j] = node->inputs[j] ? node->inputs[j]->constant : NULL;
	for (j = 0; j < node->num_outputs; j++) {
		struct npu_value *v = node->outputs[j];

		if (!v)
			continue;
		outs[j] = npu_tensor_create(v->dtype, &v->shape);
		if (!outs[j]) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY,
					   "out of memory folding '%s'", v->name);
			goto fail;
		}
	}
	st = npu_fold(node, ins, outs, folded, err);
	if (st != NPU_OK || !*folded)
		goto fail;
	for (j = 0; j < node->num_outputs; j++)
		if (node->outputs[j])
			node->outputs[j]->constant = outs[j];
	return NPU_OK;
fail:
	for (j = 0; j < node->num_outputs; j++)
		npu_tensor_destroy(outs[j]);
	return st;
}

static bool can_fold(const struct npu_node *node)
{
	size_t j, bytes = 0;

	if (!npu_fold || node->num_inputs > 64 || node->num_outputs > 16 ||
	    !fold_allowed(node))
		return false;
	if (!node->num_inputs && strcmp(node->op_type, "Constant"))
		return false;
	for (j = 0; j < node->num_inputs; j++)
		if (node->inputs[j] && !node->inputs[j]->constant)
			return false;
	for (j = 0; j < node->num_outputs; j++) {
		const struct npu_value *v = node->outputs[j];
		int64_t n;

		if (!v)
			continue;
		n = npu_shape_numel(&v->shape);
		if (v->shape.rank < 0 || n < 0 || !npu_dtype_size(v->dtype))
			return false;
		bytes += (size_t)n * npu_dtype_size(v->dtype);
		if (bytes > NPU_FOLD_MAX_BYTES)
			return false;
	}
	return true;
}

static npu_status string_unsupported(const struct npu_graph *g, const struct npu_node *node,
				     const struct npu_value *v, const char *what,
				     struct npu_error *err)
{
	char label[300];

	return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			     "%s: %s: %s '%s' is a string tensor; %s does not support strings",
			     g->source, npu_node_label(g, node, label, sizeof(label)), what,
			     v->name, node->op_type);
}

/*
 * No definition for the node's opset: when the op exists at other
 * versions, say which, so that "not implemented at this version" reads
 * differently from "not implemented at all".
 */
npu_status npu_graph_op_unsupported(const struct npu_graph *g, const struct npu_node *node,
				   struct npu_error *err)
{
	const char *domain = is_default_domain(node->domain) ? "" : node->domain;
	int lo, hi;
	char label[300];

	if (npu_op_registry_versions(g->ops, domain, node->op_type, &lo, &hi))
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: %s: op '%s%s%s' version %d (the model's opset) is not implemented; this library implements it for opsets %d to %d",
				     g->source, npu_node_label(g, node, label, sizeof(label)),
				     domain, domain[0] ? "." : "", node->op_type, node->opset, lo, hi);
	/* Not ONNX's or Microsoft's (ops we lack), nor the library's: an application's. */
	if (!npu_op_domain_reserved(domain) && !npu_op_registry_has_domain(g->ops, domain))
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: %s: unsupported op '%s.%s' (opset %d): no op of domain '%s' is registered (a custom op: register it on the engine with npu_engine_register_custom_op() before loading)",
				     g->source, npu_node_label(g, node, label, sizeof(label)),
				     domain, node->op_type, node->opset, domain);
	return npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: %s: unsupported op '%s%s%s' (opset %d)",
			     g->source, npu_node_label(g, node, label, sizeof(label)), domain,
			     domain[0] ? "." : "", node->op_type, node->opset);
}

/* dtypes and shapes: room for the most outputs of any node of g. */
static npu_status infer_nodes(struct npu_graph *g, bool fold, enum npu_dtype *dtypes,
			      struct npu_shape *shapes, struct npu_error *err)
{
	char label[300];
	size_t i = 0, j;
	npu_status st;

	while (i < g->num_nodes) {
		struct npu_node *node = g->nodes[i];
		const struct npu_op_schema *schema;
		struct npu_infer_ctx ctx;
		bool unknown_rank = false, folded = false;

		schema = npu_node_schema(g, node);
		if (!schema)
			return npu_graph_op_unsupported(g, node, err);
		for (j = 0; j < node->num_inputs; j++)
			if (node->inputs[j] && node->inputs[j]->dtype == NPU_DTYPE_STRING &&
			    !schema->strings)
				return string_unsupported(g, node, node->inputs[j], "input", err);
		for (j = 0; j < node->num_inputs; j++)
			if (node->inputs[j] && node->inputs[j]->shape.rank < 0)
				unknown_rank = true;
		if (unknown_rank && !schema->dynamic_outputs) {
			/* Rank not known before run time: infer then. */
			for (j = 0; j < node->num_outputs; j++)
				if (node->outputs[j] &&
				    !node->outputs[j]->is_graph_output)
					node->outputs[j]->shape.rank = -1;
			i++;
			continue;
		}
		for (j = 0; j < node->num_outputs; j++) {
			dtypes[j] = NPU_DTYPE_UNDEFINED;
			memset(&shapes[j], 0, sizeof(shapes[j]));
		}
		ctx.schema = schema;
		ctx.node = node;
		ctx.out_dtypes = dtypes;
		ctx.out_shapes = shapes;
		ctx.err = err;
		npu_error_clear(err);
		st = schema->infer(&ctx);
		if (st != NPU_OK) {
			if (!err->msg[0])
				npu_error_set(err, st, "shape inference failed");
			npu_graph_error_context(g, node, err);
			return st;
		}
		for (j = 0; j < node->num_outputs; j++) {
			struct npu_value *v = node->outputs[j];

			if (!v)
				continue;
			if ((shapes[j].rank < 0 && !schema->dynamic_outputs) ||
			    shapes[j].rank > NPU_MAX_RANK)
				return npu_error_set(err, NPU_ERR_INTERNAL,
					"%s: %s: op inferred rank %d for '%s'",
					g->source,
					npu_node_label(g, node, label,
						       sizeof(label)),
					shapes[j].rank, v->name);
			v->dtype = dtypes[j];
			v->shape = shapes[j];
			if (v->dtype == NPU_DTYPE_STRING && !schema->strings)
				return string_unsupported(g, node, v, "output", err);
		}
		if (fold && node->num_inputs >= 1 && node->inputs[0] &&
		    (!strcmp(node->op_type, "Shape") ||
		     !strcmp(node->op_type, "Size")) &&
		    is_default_domain(node->domain) && node->outputs[0] &&
		    !node->outputs[0]->is_graph_output) {
			st = fold_shape_op(node, err, &folded);
			if (st != NPU_OK)
				return st;
		} else if (fold && !schema->dynamic_outputs && can_fold(node)) {
			st = fold_node(node, &folded, err);
			if (st != NPU_OK) {
				npu_graph_error_context(g, node, err);
				return st;
			}
		}
		if (folded)
			npu_graph_remove_node(g, node);
		else
			i++;
	}
	return NPU_OK;
}

npu_status npu_graph_infer(struct npu_graph *g, bool fold,
			   struct npu_error *err)
{
	size_t i, most = 1;
	enum npu_dtype *dtypes;
	struct npu_shape *shapes;
	npu_status st;

	for (i = 0; i < g->num_nodes; i++)
		if (g->nodes[i]->num_outputs > most)
			most = g->nodes[i]->num_outputs;
	dtypes = calloc(most, sizeof(*dtypes));
	shapes = calloc(most, sizeof(*shapes));
	if (!dtypes || !shapes)
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	else
		st = infer_nodes(g, fold, dtypes, shapes, err);
	free(dtypes);
	free(shapes);
	return st;
}
