// SPDX-License-Identifier: MIT
/* The schemas of op_sequence.c's ops: ConcatFromSequence, Optional, OptionalGetElement, OptionalHasElement, SequenceAt, SequenceConstruct, SequenceEmpty, SequenceErase, SequenceInsert, SequenceLength, SequenceMap, SplitToSequence. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/sequence.h"

#include <stdlib.h>
#include <string.h>

static void seq_value_shape(struct npu_infer_ctx *ctx, size_t i, enum npu_dtype kind)
{
	ctx->out_dtypes[i] = kind;
	ctx->out_shapes[i].rank = 1;
	ctx->out_shapes[i].dims[0] = -1;
}

static void unknown_output(struct npu_infer_ctx *ctx, size_t i)
{
	ctx->out_dtypes[i] = NPU_DTYPE_UNDEFINED;
	ctx->out_shapes[i].rank = -1;
}

static npu_status need_kind(const struct npu_node *n, const struct npu_value *v, size_t i,
			    enum npu_dtype kind, struct npu_error *err)
{
	if (!v)
		return npu_op_invalid(err, n, "input %zu is missing", i);
	if (v->dtype != NPU_DTYPE_UNDEFINED && v->dtype != kind)
		return npu_op_invalid(err, n, "input %zu '%s' must be a %s, got %s", i, v->name,
				      npu_dtype_name(kind), npu_dtype_name(v->dtype));
	return NPU_OK;
}

static npu_status seq_empty_infer(struct npu_infer_ctx *ctx)
{
	seq_value_shape(ctx, 0, NPU_DTYPE_SEQUENCE);
	return NPU_OK;
}

static npu_status seq_construct_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	size_t i;

	if (!n->num_inputs)
		return npu_op_invalid(ctx->err, n, "needs at least one input");
	for (i = 1; i < n->num_inputs; i++)
		if (n->inputs[i] && n->inputs[0] && n->inputs[i]->dtype != n->inputs[0]->dtype)
			return npu_op_invalid(ctx->err, n, "input %zu is %s, input 0 %s (a sequence holds one type)",
					      i, npu_dtype_name(n->inputs[i]->dtype),
					      npu_dtype_name(n->inputs[0]->dtype));
	seq_value_shape(ctx, 0, NPU_DTYPE_SEQUENCE);
	return NPU_OK;
}

static npu_status seq_in_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = need_kind(ctx->node, npu_op_input(ctx->node, 0), 0, NPU_DTYPE_SEQUENCE,
				  ctx->err);

	if (st == NPU_OK)
		seq_value_shape(ctx, 0, NPU_DTYPE_SEQUENCE);
	return st;
}

static npu_status seq_at_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = need_kind(ctx->node, npu_op_input(ctx->node, 0), 0, NPU_DTYPE_SEQUENCE,
				  ctx->err);

	if (st == NPU_OK && !npu_op_input(ctx->node, 1))
		st = npu_op_invalid(ctx->err, ctx->node, "input 'position' is missing");
	if (st == NPU_OK)
		unknown_output(ctx, 0);
	return st;
}

static npu_status seq_length_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = need_kind(ctx->node, npu_op_input(ctx->node, 0), 0, NPU_DTYPE_SEQUENCE,
				  ctx->err);

	ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	ctx->out_shapes[0].rank = 0;
	return st;
}

static npu_status split_to_seq_infer(struct npu_infer_ctx *ctx)
{
	if (!npu_op_input(ctx->node, 0))
		return npu_op_invalid(ctx->err, ctx->node, "input 'input' is missing");
	seq_value_shape(ctx, 0, NPU_DTYPE_SEQUENCE);
	return NPU_OK;
}

static npu_status concat_from_seq_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = need_kind(ctx->node, npu_op_input(ctx->node, 0), 0, NPU_DTYPE_SEQUENCE,
				  ctx->err);

	if (st == NPU_OK && !npu_node_attr(ctx->node, "axis"))
		st = npu_op_invalid(ctx->err, ctx->node, "attribute 'axis' is required");
	if (st == NPU_OK)
		unknown_output(ctx, 0);
	return st;
}

struct npu_graph *npu_seq_map_body(const struct npu_node *n)
{
	const struct npu_attr *a = npu_node_attr(n, "body");

	return a && a->type == NPU_ATTR_GRAPH ? a->g : NULL;
}

static npu_status seq_map_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	struct npu_graph *g = npu_seq_map_body(n);
	size_t declared = n->num_inputs - n->num_implicit_inputs, formal, i, k;
	npu_status st;

	if (!g)
		return npu_op_invalid(ctx->err, n, "needs a graph attribute 'body'");
	formal = g->num_inputs - g->num_captures;
	if (formal != declared || g->num_outputs != n->num_outputs)
		return npu_op_invalid(ctx->err, n, "body takes %zu inputs and makes %zu outputs, the node has %zu and %zu",
				      formal, g->num_outputs, declared, n->num_outputs);
	st = need_kind(n, npu_op_input(n, 0), 0, NPU_DTYPE_SEQUENCE, ctx->err);
	/* Items of sequence inputs: type unknown until run time. */
	for (i = 0; st == NPU_OK && i < declared; i++) {
		const struct npu_value *v = npu_op_input(n, i);
		struct npu_value *in = g->inputs[i];

		if (!v)
			return npu_op_invalid(ctx->err, n, "input %zu is missing", i);
		if (in->dtype == NPU_DTYPE_UNDEFINED && v->dtype != NPU_DTYPE_SEQUENCE) {
			in->dtype = v->dtype;
			in->shape = v->shape;
		}
	}
	for (k = 0; st == NPU_OK && k < g->num_captures; k++) {
		const struct npu_value *outer = n->inputs[declared + g->capture_slot[k]];

		g->inputs[formal + k]->dtype = outer->dtype;
		g->inputs[formal + k]->shape = outer->shape;
	}
	if (st == NPU_OK)
		st = npu_graph_infer(g, true, ctx->err);
	for (i = 0; st == NPU_OK && i < n->num_outputs; i++)
		seq_value_shape(ctx, i, NPU_DTYPE_SEQUENCE);
	return st;
}

static npu_status optional_infer(struct npu_infer_ctx *ctx)
{
	seq_value_shape(ctx, 0, NPU_DTYPE_OPTIONAL);
	return NPU_OK;
}

static npu_status has_element_infer(struct npu_infer_ctx *ctx)
{
	ctx->out_dtypes[0] = NPU_DTYPE_BOOL;
	ctx->out_shapes[0].rank = 0;
	return NPU_OK;
}

static npu_status get_element_infer(struct npu_infer_ctx *ctx)
{
	if (!npu_op_input(ctx->node, 0))
		return npu_op_invalid(ctx->err, ctx->node, "input 'input' is missing");
	unknown_output(ctx, 0);
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(sequence_empty) = {
	.op_type = "SequenceEmpty", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = seq_empty_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(sequence_construct) = {
	.op_type = "SequenceConstruct", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = seq_construct_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(sequence_insert) = {
	.op_type = "SequenceInsert", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = seq_in_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(sequence_erase) = {
	.op_type = "SequenceErase", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = seq_in_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(sequence_at) = {
	.op_type = "SequenceAt", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = seq_at_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(sequence_length) = {
	.op_type = "SequenceLength", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = seq_length_infer,
};

NPU_OP_SCHEMA_DEF(split_to_sequence) = {
	.op_type = "SplitToSequence", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = split_to_seq_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(concat_from_sequence) = {
	.op_type = "ConcatFromSequence", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = concat_from_seq_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(sequence_map) = {
	.op_type = "SequenceMap", .domain = "",
	.since_version = 17, .max_version = 21,
	.infer = seq_map_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(optional) = {
	.op_type = "Optional", .domain = "",
	.since_version = 15, .max_version = 21,
	.infer = optional_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(optional_has_element) = {
	.op_type = "OptionalHasElement", .domain = "",
	.since_version = 15, .max_version = 21,
	.infer = has_element_infer,
};

NPU_OP_SCHEMA_DEF(optional_get_element) = {
	.op_type = "OptionalGetElement", .domain = "",
	.since_version = 15, .max_version = 21,
	.infer = get_element_infer,
	.dynamic_outputs = true,
};
