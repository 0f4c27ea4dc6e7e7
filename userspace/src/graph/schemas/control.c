// SPDX-License-Identifier: MIT
/* The schemas of op_control.c's ops: If, Loop, Scan. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/control.h"

#include <stdlib.h>
#include <string.h>

struct npu_graph *npu_control_body(const struct npu_node *n, const char *name)
{
	const struct npu_attr *a = npu_node_attr(n, name);

	return a && a->type == NPU_ATTR_GRAPH ? a->g : NULL;
}

size_t npu_control_num_declared(const struct npu_node *n)
{
	return n->num_inputs - n->num_implicit_inputs;
}

static size_t num_formal(const struct npu_graph *g)
{
	return g->num_inputs - g->num_captures;
}

/* Give a body input the type the node feeds it, unless the body declares one. */
static npu_status bind_input(const struct npu_node *n, struct npu_value *in,
			     enum npu_dtype dtype, const struct npu_shape *shape,
			     const char *body, struct npu_error *err)
{
	char a[160], b[160];

	if (in->dtype == NPU_DTYPE_UNDEFINED) {
		in->dtype = dtype;
		in->shape = *shape;
		return NPU_OK;
	}
	if (dtype != NPU_DTYPE_UNDEFINED && in->dtype != dtype)
		return npu_op_invalid(err, n, "%s input '%s' is declared %s, the node feeds %s",
				      body, in->name, npu_dtype_name(in->dtype),
				      npu_dtype_name(dtype));
	if (in->shape.rank >= 0 && shape->rank >= 0 && in->shape.rank != shape->rank)
		return npu_op_invalid(err, n, "%s input '%s' is declared %s, the node feeds %s",
				      body, in->name, npu_shape_str(&in->shape, a, sizeof(a)),
				      npu_shape_str(shape, b, sizeof(b)));
	return NPU_OK;
}

/* Captures take their outer values' types; then the body is inferred. */
static npu_status infer_body(const struct npu_node *n, struct npu_graph *g,
			     const char *body, struct npu_error *err)
{
	size_t k, first = num_formal(g);
	npu_status st;

	for (k = 0; k < g->num_captures; k++) {
		const struct npu_value *outer = n->inputs[npu_control_num_declared(n) + g->capture_slot[k]];
		struct npu_value *in = g->inputs[first + k];

		in->dtype = outer->dtype;
		in->shape = outer->shape;
	}
	st = npu_graph_infer(g, true, err);
	if (st != NPU_OK) {
		size_t len = strlen(g->source);

		/* "<file>: <node>: body: <file>: <inner node>: ..." reads badly. */
		if (!strncmp(err->msg, g->source, len) && !strncmp(err->msg + len, ": ", 2))
			memmove(err->msg, err->msg + len + 2, strlen(err->msg + len + 2) + 1);
		npu_error_prefix(err, "%s node '%s': %s", n->op_type, n->name, body);
	}
	return st;
}

/* Two shapes a value may take: equal dims stay, others become unknown. */
static struct npu_shape merge_shapes(const struct npu_shape *a, const struct npu_shape *b)
{
	struct npu_shape s = *a;
	int d;

	if (a->rank != b->rank) {
		s.rank = -1;
		return s;
	}
	for (d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d])
			s.dims[d] = -1;
	return s;
}

bool npu_control_truth(const struct npu_tensor *t)
{
	return t->dtype == NPU_DTYPE_BOOL ? *(const uint8_t *)t->data != 0
					  : npu_op_tensor_get(t, 0) != 0;
}

/* The If's output types are those of branch g, the only one that can run. */
static npu_status take_branch_types(struct npu_infer_ctx *ctx, const struct npu_graph *g,
				    const char *which)
{
	const struct npu_node *n = ctx->node;
	size_t i;

	if (g->num_outputs != n->num_outputs)
		return npu_op_invalid(ctx->err, n, "the node has %zu outputs, %s %zu", n->num_outputs,
				      which, g->num_outputs);
	for (i = 0; i < n->num_outputs; i++) {
		ctx->out_dtypes[i] = g->outputs[i]->dtype;
		ctx->out_shapes[i] = g->outputs[i]->shape;
	}
	return NPU_OK;
}

static npu_status if_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	struct npu_graph *then_g = npu_control_body(n, "then_branch"), *else_g = npu_control_body(n, "else_branch");
	const struct npu_value *cond = npu_op_input(n, 0);
	npu_status st;
	size_t i;

	if (!then_g || !else_g)
		return npu_op_invalid(ctx->err, n, "needs graph attributes 'then_branch' and 'else_branch'");
	if (npu_control_num_declared(n) != 1 || !cond)
		return npu_op_invalid(ctx->err, n, "needs exactly one input, 'cond'");
	if (cond->dtype != NPU_DTYPE_UNDEFINED && cond->dtype != NPU_DTYPE_BOOL)
		return npu_op_invalid(ctx->err, n, "input 'cond' must be bool, got %s",
				      npu_dtype_name(cond->dtype));
	if (num_formal(then_g) || num_formal(else_g))
		return npu_op_invalid(ctx->err, n, "a branch declares inputs (branches take none)");
	if (cond->constant && npu_shape_numel(&cond->constant->shape) == 1) {
		/*
		 * Known now (shapes fold: "squeeze dim 2 if it is 1", as PyTorch
		 * exports it): the other branch never runs and may not even be
		 * valid for these shapes, so only the taken one is inferred.
		 */
		bool take_then = npu_control_truth(cond->constant);
		const char *which = take_then ? "then_branch" : "else_branch";

		st = infer_body(n, take_then ? then_g : else_g, which, ctx->err);
		return st != NPU_OK ? st : take_branch_types(ctx, take_then ? then_g : else_g, which);
	}
	/*
	 * Not known before run time. A branch these shapes make invalid
	 * (silero VAD's 8 kHz path given a 16 kHz frame) is not an error
	 * while the other one is valid: it can only be the branch not taken,
	 * and if it is taken after all, run-time inference of the failing
	 * node reports it then. The If's outputs take the valid branch's
	 * types. Both invalid: the model cannot run with these shapes.
	 */
	st = infer_body(n, then_g, "then_branch", ctx->err);
	if (st != NPU_OK) {
		struct npu_error then_err = *ctx->err;

		npu_error_clear(ctx->err);
		if (infer_body(n, else_g, "else_branch", ctx->err) != NPU_OK) {
			*ctx->err = then_err;
			return then_err.status;
		}
		return take_branch_types(ctx, else_g, "else_branch");
	}
	st = infer_body(n, else_g, "else_branch", ctx->err);
	if (st != NPU_OK) {
		npu_error_clear(ctx->err);
		return take_branch_types(ctx, then_g, "then_branch");
	}
	if (then_g->num_outputs != n->num_outputs || else_g->num_outputs != n->num_outputs)
		return npu_op_invalid(ctx->err, n,
				      "the node has %zu outputs, then_branch %zu and else_branch %zu",
				      n->num_outputs, then_g->num_outputs, else_g->num_outputs);
	for (i = 0; i < n->num_outputs; i++) {
		const struct npu_value *a = then_g->outputs[i], *b = else_g->outputs[i];

		/* A type known only at run time (undefined) agrees with any. */
		if (a->dtype != b->dtype && a->dtype != NPU_DTYPE_UNDEFINED &&
		    b->dtype != NPU_DTYPE_UNDEFINED)
			return npu_op_invalid(ctx->err, n,
					      "output %zu is %s in then_branch ('%s') and %s in else_branch ('%s')",
					      i, npu_dtype_name(a->dtype), a->name,
					      npu_dtype_name(b->dtype), b->name);
		ctx->out_dtypes[i] = a->dtype != NPU_DTYPE_UNDEFINED ? a->dtype : b->dtype;
		ctx->out_shapes[i] = merge_shapes(&a->shape, &b->shape);
	}
	return NPU_OK;
}

static npu_status loop_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	struct npu_graph *g = npu_control_body(n, "body");
	const struct npu_value *m = npu_op_input(n, 0), *cond = npu_op_input(n, 1);
	static const struct npu_shape scalar = { 0 };
	size_t carried, scans, i;
	npu_status st;

	if (!g)
		return npu_op_invalid(ctx->err, n, "needs a graph attribute 'body'");
	if (npu_control_num_declared(n) < 2)
		return npu_op_invalid(ctx->err, n, "needs inputs 'M' and 'cond' (either may be empty)");
	carried = npu_control_num_declared(n) - 2;
	if (m && m->dtype != NPU_DTYPE_UNDEFINED && m->dtype != NPU_DTYPE_INT64)
		return npu_op_invalid(ctx->err, n, "trip count 'M' must be int64, got %s",
				      npu_dtype_name(m->dtype));
	if (cond && cond->dtype != NPU_DTYPE_UNDEFINED && cond->dtype != NPU_DTYPE_BOOL)
		return npu_op_invalid(ctx->err, n, "condition 'cond' must be bool, got %s",
				      npu_dtype_name(cond->dtype));
	if (n->num_outputs < carried)
		return npu_op_invalid(ctx->err, n, "%zu loop-carried inputs but only %zu outputs",
				      carried, n->num_outputs);
	scans = n->num_outputs - carried;
	if (num_formal(g) != 2 + carried)
		return npu_op_invalid(ctx->err, n, "body takes %zu inputs, the node gives %zu (iteration, condition and %zu carried)",
				      num_formal(g), 2 + carried, carried);
	if (g->num_outputs != 1 + carried + scans)
		return npu_op_invalid(ctx->err, n, "body has %zu outputs, expected %zu (condition, %zu carried, %zu scan)",
				      g->num_outputs, 1 + carried + scans, carried, scans);
	st = bind_input(n, g->inputs[0], NPU_DTYPE_INT64, &scalar, "body", ctx->err);
	if (st == NPU_OK)
		st = bind_input(n, g->inputs[1], NPU_DTYPE_BOOL, &scalar, "body", ctx->err);
	for (i = 0; st == NPU_OK && i < carried; i++) {
		const struct npu_value *v = npu_op_input(n, 2 + i);

		if (!v)
			return npu_op_invalid(ctx->err, n, "loop-carried input %zu is empty", i);
		st = bind_input(n, g->inputs[2 + i], v->dtype, &v->shape, "body", ctx->err);
	}
	if (st == NPU_OK)
		st = infer_body(n, g, "body", ctx->err);
	if (st != NPU_OK)
		return st;
	if (g->outputs[0]->dtype != NPU_DTYPE_BOOL)
		return npu_op_invalid(ctx->err, n, "body output 0 (the condition) must be bool, got %s",
				      npu_dtype_name(g->outputs[0]->dtype));
	for (i = 0; i < carried; i++) {
		const struct npu_value *init = npu_op_input(n, 2 + i), *out = g->outputs[1 + i];

		/* An optional may start empty and carry what the body makes. */
		if (out->dtype != init->dtype && out->dtype != NPU_DTYPE_UNDEFINED &&
		    init->dtype != NPU_DTYPE_UNDEFINED && init->dtype != NPU_DTYPE_OPTIONAL)
			return npu_op_invalid(ctx->err, n, "loop-carried value %zu starts %s and the body makes it %s",
					      i, npu_dtype_name(init->dtype), npu_dtype_name(out->dtype));
		ctx->out_dtypes[i] = out->dtype != NPU_DTYPE_UNDEFINED ? out->dtype : init->dtype;
		ctx->out_shapes[i] = merge_shapes(&init->shape, &out->shape);
	}
	for (i = 0; i < scans; i++) {
		const struct npu_value *out = g->outputs[1 + carried + i];
		int d;

		ctx->out_dtypes[carried + i] = out->dtype;
		ctx->out_shapes[carried + i].rank = out->shape.rank < 0 ? -1 : out->shape.rank + 1;
		ctx->out_shapes[carried + i].dims[0] = -1;
		for (d = 0; d < out->shape.rank && d + 1 < NPU_MAX_RANK; d++)
			ctx->out_shapes[carried + i].dims[d + 1] = out->shape.dims[d];
	}
	return NPU_OK;
}

npu_status npu_scan_attrs_read(const struct npu_node *n, const struct npu_graph *g,
			       struct npu_scan_attrs *a, struct npu_error *err)
{
	int64_t m = npu_node_attr_int_or(n, "num_scan_inputs", -1);
	size_t first = 0;
	int count;
	npu_status st;
	size_t i;

	memset(a, 0, sizeof(*a));
	a->batched = n->opset < 9;
	if (a->batched)
		first = 1;	/* sequence_lens, may be empty */
	if (m < 1 || (size_t)m + first > npu_control_num_declared(n) || m > 32)
		return npu_op_invalid(err, n, "attribute 'num_scan_inputs' = %lld does not fit its %zu inputs",
				      (long long)m, npu_control_num_declared(n));
	a->inputs = (size_t)m;
	a->states = npu_control_num_declared(n) - first - a->inputs;
	if (n->num_outputs < a->states || n->num_outputs - a->states > 32)
		return npu_op_invalid(err, n, "%zu state inputs but %zu outputs", a->states,
				      n->num_outputs);
	a->outputs = n->num_outputs - a->states;
	if (num_formal(g) != a->states + a->inputs || g->num_outputs != n->num_outputs)
		return npu_op_invalid(err, n, "body takes %zu inputs and makes %zu outputs, the node needs %zu and %zu",
				      num_formal(g), g->num_outputs, a->states + a->inputs,
				      n->num_outputs);
	if (a->batched) {
		st = npu_op_ints_from_attr(n, "directions", a->in_dirs, 32, &count, err);
		if (st == NPU_OK && count && (size_t)count != a->inputs)
			return npu_op_invalid(err, n, "attribute 'directions' has %d values for %zu scan inputs",
					      count, a->inputs);
		for (i = 0; i < a->inputs; i++)
			a->in_axes[i] = 0;	/* after the batch dim */
		return st;
	}
	st = npu_op_ints_from_attr(n, "scan_input_axes", a->in_axes, 32, &count, err);
	if (st == NPU_OK && count && (size_t)count != a->inputs)
		st = npu_op_invalid(err, n, "attribute 'scan_input_axes' has %d values for %zu scan inputs",
				    count, a->inputs);
	if (st == NPU_OK)
		st = npu_op_ints_from_attr(n, "scan_input_directions", a->in_dirs, 32, &count, err);
	if (st == NPU_OK && count && (size_t)count != a->inputs)
		st = npu_op_invalid(err, n, "attribute 'scan_input_directions' has %d values for %zu scan inputs",
				    count, a->inputs);
	if (st == NPU_OK)
		st = npu_op_ints_from_attr(n, "scan_output_axes", a->out_axes, 32, &count, err);
	if (st == NPU_OK && count && (size_t)count != a->outputs)
		st = npu_op_invalid(err, n, "attribute 'scan_output_axes' has %d values for %zu scan outputs",
				    count, a->outputs);
	if (st == NPU_OK)
		st = npu_op_ints_from_attr(n, "scan_output_directions", a->out_dirs, 32, &count, err);
	if (st == NPU_OK && count && (size_t)count != a->outputs)
		st = npu_op_invalid(err, n, "attribute 'scan_output_directions' has %d values for %zu scan outputs",
				    count, a->outputs);
	return st;
}

/* The shape of one slice of a scanned input (its scan axis removed). */
npu_status npu_scan_slice_shape(const struct npu_node *n, const struct npu_shape *in, int64_t axis,
				size_t k, struct npu_shape *out, int *norm_axis, struct npu_error *err)
{
	int d, j = 0;
	npu_status st;

	if (in->rank < 0) {
		out->rank = -1;
		*norm_axis = (int)axis;
		return NPU_OK;
	}
	st = npu_op_axis(err, n, "scan input axis", axis, in->rank, norm_axis);
	if (st != NPU_OK)
		return st;
	(void)k;
	out->rank = in->rank - 1;
	for (d = 0; d < in->rank; d++)
		if (d != *norm_axis)
			out->dims[j++] = in->dims[d];
	return NPU_OK;
}

static npu_status scan_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	struct npu_graph *g = npu_control_body(n, "body");
	struct npu_scan_attrs a;
	size_t first, i;
	int64_t seq = -1, batch = -1;
	npu_status st;

	if (!g)
		return npu_op_invalid(ctx->err, n, "needs a graph attribute 'body'");
	st = npu_scan_attrs_read(n, g, &a, ctx->err);
	first = a.batched ? 1 : 0;
	for (i = 0; st == NPU_OK && i < a.states; i++) {
		const struct npu_value *v = npu_op_input(n, first + i);
		struct npu_shape s;
		int d;

		if (!v)
			return npu_op_invalid(ctx->err, n, "state input %zu is empty", i);
		s = v->shape;
		if (a.batched && s.rank > 0) {	/* the body sees one batch item */
			batch = s.dims[0];
			for (d = 1; d < s.rank; d++)
				s.dims[d - 1] = s.dims[d];
			s.rank--;
		}
		st = bind_input(n, g->inputs[i], v->dtype, &s, "body", ctx->err);
	}
	for (i = 0; st == NPU_OK && i < a.inputs; i++) {
		const struct npu_value *v = npu_op_input(n, first + a.states + i);
		struct npu_shape s, item;
		int axis, d;

		if (!v)
			return npu_op_invalid(ctx->err, n, "scan input %zu is empty", i);
		item = v->shape;
		if (a.batched && item.rank > 0) {
			batch = item.dims[0];
			for (d = 1; d < item.rank; d++)
				item.dims[d - 1] = item.dims[d];
			item.rank--;
		}
		st = npu_scan_slice_shape(n, &item, a.in_axes[i], i, &s, &axis, ctx->err);
		if (st == NPU_OK && item.rank >= 0 && seq < 0)
			seq = item.dims[axis];
		if (st == NPU_OK)
			st = bind_input(n, g->inputs[a.states + i], v->dtype, &s, "body", ctx->err);
	}
	if (st == NPU_OK)
		st = infer_body(n, g, "body", ctx->err);
	if (st != NPU_OK)
		return st;
	for (i = 0; i < n->num_outputs; i++) {
		const struct npu_value *out = g->outputs[i];
		struct npu_shape s = out->shape;
		int d;

		ctx->out_dtypes[i] = out->dtype;
		if (i >= a.states && s.rank >= 0 && s.rank + 1 <= NPU_MAX_RANK) {
			int64_t axis = a.out_axes[i - a.states];

			if (axis < 0)
				axis += s.rank + 1;
			if (axis < 0 || axis > s.rank)
				return npu_op_invalid(ctx->err, n, "scan_output_axes[%zu] = %lld is out of range for rank %d",
						      i - a.states, (long long)a.out_axes[i - a.states],
						      s.rank + 1);
			for (d = s.rank; d > axis; d--)
				s.dims[d] = s.dims[d - 1];
			s.dims[axis] = seq;
			s.rank++;
		} else if (i >= a.states) {
			s.rank = -1;
		}
		if (a.batched && s.rank >= 0 && s.rank + 1 <= NPU_MAX_RANK) {
			for (d = s.rank; d > 0; d--)
				s.dims[d] = s.dims[d - 1];
			s.dims[0] = batch;
			s.rank++;
		}
		ctx->out_shapes[i] = s;
	}
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(if) = {
	.op_type = "If", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = if_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(loop) = {
	.op_type = "Loop", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = loop_infer,
	.dynamic_outputs = true,
};

NPU_OP_SCHEMA_DEF(scan) = {
	.op_type = "Scan", .domain = "",
	.since_version = 8, .max_version = 21,
	.infer = scan_infer,
	.dynamic_outputs = true,
};
