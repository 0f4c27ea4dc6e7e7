// SPDX-License-Identifier: MIT
/*
 * op_control.c - If, Loop and Scan: ops whose graph attributes are run by
 * the runtime (ctx->rt). Their infer() binds each body's inputs (formal
 * ones from the node's inputs, captures from its implicit inputs) and
 * infers the body; compute() runs it and gives the outputs their shapes,
 * which may depend on the data (a branch taken, a trip count).
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/control.h"
#include "graph/npu_seq.h"

/* A loop with neither a trip count nor a condition that turns false. */
#define NPU_LOOP_MAX_ITERATIONS 10000000

static bool is_scalar_of(const struct npu_tensor *t, enum npu_dtype dtype)
{
	return t && t->dtype == dtype && npu_shape_numel(&t->shape) == 1;
}

/* Copy a tensor into output 'index', with its dtype and shape. */
static npu_status set_output(struct npu_op_ctx *ctx, size_t index, const struct npu_tensor *t)
{
	npu_status st;

	if (!ctx->outputs[index])
		return NPU_OK;	/* omitted */
	st = ctx->rt->alloc_output(ctx, index, t->dtype, &t->shape);
	if (st == NPU_OK && t->nbytes)
		memcpy(ctx->outputs[index]->data, t->data, t->nbytes);
	return st;
}

/* ---- If ---- */

static npu_status if_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	const struct npu_tensor *cond = npu_op_in(ctx, 0), **outs;
	const struct npu_graph *g;
	npu_status st;
	size_t i;

	if (!cond || npu_shape_numel(&cond->shape) != 1)
		return npu_op_invalid(ctx->err, n, "input 'cond' must hold one value");
	g = npu_control_body(n, npu_control_truth(cond) ? "then_branch" : "else_branch");
	outs = calloc(g->num_outputs + 1, sizeof(*outs));
	if (!outs)
		return npu_op_error(ctx->err, n, NPU_ERR_NO_MEMORY, "out of memory");
	st = ctx->rt->run(ctx, g, NULL, outs);
	for (i = 0; st == NPU_OK && i < n->num_outputs; i++)
		st = set_output(ctx, i, outs[i]);
	free(outs);
	return st;
}

NPU_CPU_OP_DEF(if) = {
	.op_type = "If",
	.domain = "",
	.compute = if_compute,
};

/* ---- Growing stacks of equally shaped slices (scan outputs) ---- */

struct stack {
	enum npu_dtype dtype;
	struct npu_shape elem;
	size_t elem_bytes, count, cap;
	uint8_t *data;
};

static npu_status stack_push(struct stack *s, const struct npu_tensor *t, const struct npu_node *n,
			     size_t k, size_t step, struct npu_error *err)
{
	char a[160], b[160];

	if (!s->count && !s->cap) {
		s->dtype = t->dtype;
		s->elem = t->shape;
		s->elem_bytes = t->nbytes;
	} else if (t->dtype != s->dtype || memcmp(&t->shape, &s->elem, sizeof(s->elem))) {
		return npu_op_invalid(err, n,
				      "scan output %zu is %s %s at iteration %zu, %s %s before",
				      k, npu_dtype_name(t->dtype), npu_shape_str(&t->shape, a, sizeof(a)),
				      step, npu_dtype_name(s->dtype),
				      npu_shape_str(&s->elem, b, sizeof(b)));
	}
	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		uint8_t *d = realloc(s->data, cap * s->elem_bytes + 1);

		if (!d)
			return npu_op_error(err, n, NPU_ERR_NO_MEMORY, "out of memory for scan output %zu",
					    k);
		s->data = d;
		s->cap = cap;
	}
	if (s->elem_bytes)
		memcpy(s->data + s->count * s->elem_bytes, t->data, s->elem_bytes);
	s->count++;
	return NPU_OK;
}

/*
 * Output 'index' from a stack: the slices along a new axis 'axis', in the
 * order pushed or (reverse) the opposite one. 'fallback' gives the slice
 * shape when nothing was pushed.
 */
static npu_status stack_output(struct npu_op_ctx *ctx, size_t index, const struct stack *s,
			       int axis, bool reverse, const struct npu_value *fallback)
{
	struct npu_shape shape, elem = s->count ? s->elem : fallback->shape;
	enum npu_dtype dtype = s->count ? s->dtype : fallback->dtype;
	int64_t outer, i, j;
	size_t inner, esize = npu_dtype_size(dtype);
	int d;
	npu_status st;

	if (!ctx->outputs[index])
		return NPU_OK;
	if (elem.rank < 0 || elem.rank + 1 > NPU_MAX_RANK || axis < 0 || axis > elem.rank)
		return npu_op_unsupported(ctx->err, ctx->node, "scan output %zu: cannot stack slices of rank %d on axis %d",
					  index, elem.rank, axis);
	for (d = 0; d < elem.rank; d++)
		if (elem.dims[d] < 0)
			elem.dims[d] = 0;	/* nothing pushed: an empty stack */
	shape.rank = elem.rank + 1;
	for (d = 0, j = 0; d < shape.rank; d++)
		shape.dims[d] = d == axis ? (int64_t)s->count : elem.dims[j++];
	st = ctx->rt->alloc_output(ctx, index, dtype, &shape);
	if (st != NPU_OK || !s->count)
		return st;
	outer = npu_op_dims_prod(&elem, 0, axis);
	inner = (size_t)npu_op_dims_prod(&elem, axis, elem.rank) * esize;
	for (i = 0; i < (int64_t)s->count; i++) {
		int64_t pos = reverse ? (int64_t)s->count - 1 - i : i;

		for (j = 0; j < outer; j++)
			memcpy((uint8_t *)ctx->outputs[index]->data +
				       ((size_t)j * s->count + (size_t)pos) * inner,
			       s->data + (size_t)i * s->elem_bytes + (size_t)j * inner, inner);
	}
	return NPU_OK;
}

/* A loop-carried value, owned between iterations (the body reuses its memory). */
static npu_status keep(struct npu_tensor **slot, const struct npu_tensor *t,
		       const struct npu_node *n, struct npu_error *err)
{
	if (*slot == t)
		return NPU_OK;	/* the body passed the value through */
	if (!t)
		return npu_op_invalid(err, n, "the body gave no loop-carried value");
	if (!*slot || (*slot)->dtype != t->dtype ||
	    memcmp(&(*slot)->shape, &t->shape, sizeof(t->shape))) {
		npu_tensor_destroy(*slot);
		*slot = npu_tensor_create(t->dtype, &t->shape);
		if (!*slot)
			return npu_op_error(err, n, NPU_ERR_NO_MEMORY, "out of memory for a loop-carried value");
	}
	if (t->nbytes)
		memcpy((*slot)->data, t->data, t->nbytes);
	return NPU_OK;
}

/*
 * A value where the body declares an optional: wrapped in one (a carried
 * optional that started empty holds what the body made of it).
 */
static npu_status as_optional(const struct npu_tensor *t, struct npu_tensor **wrapped,
			      const struct npu_node *n, struct npu_error *err)
{
	struct npu_shape s = { .rank = 1 };

	npu_tensor_destroy(*wrapped);
	s.dims[0] = (int64_t)npu_seq_bytes(&t, 1);
	*wrapped = npu_tensor_create(NPU_DTYPE_OPTIONAL, &s);
	if (!*wrapped)
		return npu_op_error(err, n, NPU_ERR_NO_MEMORY, "out of memory");
	npu_seq_pack(NPU_DTYPE_OPTIONAL, t->dtype, &t, 1, (*wrapped)->data);
	return NPU_OK;
}

/* ---- Loop ---- */

static npu_status loop_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	const struct npu_graph *g = npu_control_body(n, "body");
	const struct npu_tensor *m = npu_op_in(ctx, 0), *cond = npu_op_in(ctx, 1);
	size_t carried = npu_control_num_declared(n) - 2, scans = n->num_outputs - carried, i;
	struct npu_tensor **vals = calloc(carried + 1, sizeof(*vals));
	struct npu_tensor **wrapped = calloc(carried + 1, sizeof(*wrapped));
	struct stack *stacks = calloc(scans + 1, sizeof(*stacks));
	const struct npu_tensor **ins = calloc(carried + 2, sizeof(*ins));
	const struct npu_tensor **outs = calloc(g->num_outputs + 1, sizeof(*outs));
	int64_t iter = 0, trip = -1;
	uint8_t go = 1;
	struct npu_tensor it_t = { .dtype = NPU_DTYPE_INT64, .data = &iter, .nbytes = 8 };
	struct npu_tensor cond_t = { .dtype = NPU_DTYPE_BOOL, .data = &go, .nbytes = 1 };
	npu_status st = NPU_OK;

	if (!vals || !wrapped || !stacks || !ins || !outs) {
		st = npu_op_error(ctx->err, n, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	if (m) {
		if (!is_scalar_of(m, NPU_DTYPE_INT64)) {
			st = npu_op_invalid(ctx->err, n, "trip count 'M' must be one int64 value");
			goto out;
		}
		trip = *(const int64_t *)m->data;
	}
	if (cond) {
		if (!is_scalar_of(cond, NPU_DTYPE_BOOL)) {
			st = npu_op_invalid(ctx->err, n, "condition 'cond' must be one bool value");
			goto out;
		}
		go = npu_control_truth(cond);
	}
	for (i = 0; st == NPU_OK && i < carried; i++)
		st = keep(&vals[i], npu_op_in(ctx, 2 + i), n, ctx->err);
	ins[0] = &it_t;
	ins[1] = &cond_t;
	while (st == NPU_OK && go && (trip < 0 || iter < trip)) {
		if (trip < 0 && iter >= NPU_LOOP_MAX_ITERATIONS) {
			st = npu_op_invalid(ctx->err, n,
					    "%s after %d iterations, and the model gives no trip count 'M': stopped",
					    cond ? "the condition is still true" : "no condition",
					    NPU_LOOP_MAX_ITERATIONS);
			break;
		}
		for (i = 0; st == NPU_OK && i < carried; i++) {
			ins[2 + i] = vals[i];
			if (g->inputs[2 + i]->dtype == NPU_DTYPE_OPTIONAL &&
			    vals[i]->dtype != NPU_DTYPE_OPTIONAL) {
				st = as_optional(vals[i], &wrapped[i], n, ctx->err);
				ins[2 + i] = wrapped[i];
			}
		}
		if (st == NPU_OK)
			st = ctx->rt->run(ctx, g, ins, outs);
		if (st != NPU_OK)
			break;
		if (!is_scalar_of(outs[0], NPU_DTYPE_BOOL)) {
			st = npu_op_invalid(ctx->err, n, "body output 0 (the condition) must be one bool value");
			break;
		}
		go = npu_control_truth(outs[0]);
		for (i = 0; st == NPU_OK && i < carried; i++)
			st = keep(&vals[i], outs[1 + i], n, ctx->err);
		for (i = 0; st == NPU_OK && i < scans; i++)
			st = stack_push(&stacks[i], outs[1 + carried + i], n, i, (size_t)iter, ctx->err);
		iter++;
	}
	for (i = 0; st == NPU_OK && i < carried; i++)
		st = set_output(ctx, i, vals[i]);
	for (i = 0; st == NPU_OK && i < scans; i++)
		st = stack_output(ctx, carried + i, &stacks[i], 0, false, g->outputs[1 + carried + i]);
out:
	for (i = 0; vals && i < carried; i++)
		npu_tensor_destroy(vals[i]);
	for (i = 0; wrapped && i < carried; i++)
		npu_tensor_destroy(wrapped[i]);
	for (i = 0; stacks && i < scans; i++)
		free(stacks[i].data);
	free(vals);
	free(wrapped);
	free(stacks);
	free(ins);
	free(outs);
	return st;
}

NPU_CPU_OP_DEF(loop) = {
	.op_type = "Loop",
	.domain = "",
	.compute = loop_compute,
};

/* ---- Scan ---- */

/* t without its first dim at index b (a batch item), as a view. */
static struct npu_tensor batch_item(const struct npu_tensor *t, int64_t b)
{
	struct npu_tensor v = *t;
	int d;

	v.shape.rank = t->shape.rank - 1;
	for (d = 0; d < v.shape.rank; d++)
		v.shape.dims[d] = t->shape.dims[d + 1];
	v.nbytes = t->shape.dims[0] ? t->nbytes / (size_t)t->shape.dims[0] : 0;
	v.data = (uint8_t *)t->data + (size_t)b * v.nbytes;
	return v;
}

/* Copy slice 'index' along 'axis' of t into dst (shape of the slice). */
static void take_slice(const struct npu_tensor *t, int axis, int64_t index, struct npu_tensor *dst)
{
	int64_t outer = npu_op_dims_prod(&t->shape, 0, axis), o;
	size_t inner = (size_t)npu_op_dims_prod(&t->shape, axis + 1, t->shape.rank) *
		       npu_dtype_size(t->dtype);
	int64_t len = t->shape.dims[axis];

	for (o = 0; o < outer; o++)
		memcpy((uint8_t *)dst->data + (size_t)o * inner,
		       (const uint8_t *)t->data + ((size_t)(o * len + index)) * inner, inner);
}

/* One unbatched scan: states[] in and out, stacks[] appended. */
static npu_status scan_run(struct npu_op_ctx *ctx, const struct npu_scan_attrs *a,
			   const struct npu_graph *g, const struct npu_tensor *const *scan_in,
			   struct npu_tensor **states, struct stack *stacks, int64_t limit)
{
	const struct npu_node *n = ctx->node;
	const struct npu_tensor *ins[64], *outs[64];
	struct npu_tensor *slices[32] = { 0 };
	int axes[32];
	int64_t seq = -1, t;
	size_t i;
	npu_status st = NPU_OK;

	for (i = 0; i < a->inputs; i++) {
		struct npu_shape s;

		st = npu_scan_slice_shape(n, &scan_in[i]->shape, a->in_axes[i], i, &s, &axes[i], ctx->err);
		if (st != NPU_OK)
			goto out;
		if (seq < 0)
			seq = scan_in[i]->shape.dims[axes[i]];
		else if (scan_in[i]->shape.dims[axes[i]] != seq) {
			st = npu_op_invalid(ctx->err, n, "scan input %zu has %lld steps, scan input 0 has %lld",
					    i, (long long)scan_in[i]->shape.dims[axes[i]], (long long)seq);
			goto out;
		}
		slices[i] = npu_tensor_create(scan_in[i]->dtype, &s);
		if (!slices[i]) {
			st = npu_op_error(ctx->err, n, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
	}
	if (limit >= 0 && limit < seq)
		seq = limit;
	for (t = 0; st == NPU_OK && t < seq; t++) {
		for (i = 0; i < a->states; i++)
			ins[i] = states[i];
		for (i = 0; i < a->inputs; i++) {
			take_slice(scan_in[i], axes[i], a->in_dirs[i] ? seq - 1 - t : t, slices[i]);
			ins[a->states + i] = slices[i];
		}
		st = ctx->rt->run(ctx, g, ins, outs);
		for (i = 0; st == NPU_OK && i < a->states; i++)
			st = keep(&states[i], outs[i], n, ctx->err);
		for (i = 0; st == NPU_OK && i < a->outputs; i++)
			st = stack_push(&stacks[i], outs[a->states + i], n, i, (size_t)t, ctx->err);
	}
out:
	for (i = 0; i < a->inputs; i++)
		npu_tensor_destroy(slices[i]);
	return st;
}

static npu_status scan_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	const struct npu_graph *g = npu_control_body(n, "body");
	struct npu_tensor *states[64] = { 0 };
	struct stack stacks[32];
	const struct npu_tensor *scan_in[32];
	struct npu_tensor items[32];
	struct npu_scan_attrs a;
	size_t first, i;
	int64_t batches = 1, b;
	npu_status st;

	st = npu_scan_attrs_read(n, g, &a, ctx->err);
	if (st != NPU_OK || a.states > 64)
		return st ? st : npu_op_unsupported(ctx->err, n, "more than 64 states");
	first = a.batched ? 1 : 0;
	memset(stacks, 0, sizeof(stacks));
	if (!a.batched) {
		for (i = 0; st == NPU_OK && i < a.states; i++)
			st = keep(&states[i], npu_op_in(ctx, i), n, ctx->err);
		for (i = 0; i < a.inputs; i++)
			scan_in[i] = npu_op_in(ctx, a.states + i);
		if (st == NPU_OK)
			st = scan_run(ctx, &a, g, scan_in, states, stacks, -1);
		for (i = 0; st == NPU_OK && i < a.states; i++)
			st = set_output(ctx, i, states[i]);
		for (i = 0; st == NPU_OK && i < a.outputs; i++) {
			int64_t axis = a.out_axes[i];
			int rank = stacks[i].count ? stacks[i].elem.rank
						   : g->outputs[a.states + i]->shape.rank;

			st = stack_output(ctx, a.states + i, &stacks[i],
					  (int)(axis < 0 ? axis + rank + 1 : axis), a.out_dirs[i] != 0,
					  g->outputs[a.states + i]);
		}
		goto out;
	}
	/* opset 8: every input has a batch dim; the body runs per batch item. */
	if (npu_op_in(ctx, 0))
		return npu_op_unsupported(ctx->err, n, "input 'sequence_lens' is not supported (give every sequence its full length)");
	batches = npu_op_in(ctx, first)->shape.rank > 0 ? npu_op_in(ctx, first)->shape.dims[0] : 0;
	{
		/* Per batch item: run, then collect states and scans item by item. */
		struct npu_tensor **finals = calloc((size_t)batches * (a.states + 1) + 1, sizeof(*finals));
		struct stack *per = calloc((size_t)batches * (a.outputs + 1) + 1, sizeof(*per));

		if (!finals || !per) {
			free(finals);
			free(per);
			return npu_op_error(ctx->err, n, NPU_ERR_NO_MEMORY, "out of memory");
		}
		for (b = 0; st == NPU_OK && b < batches; b++) {
			for (i = 0; i < a.inputs; i++) {
				const struct npu_tensor *t = npu_op_in(ctx, first + a.states + i);

				if (t->shape.rank < 1 || t->shape.dims[0] != batches) {
					st = npu_op_invalid(ctx->err, n, "scan input %zu does not have the batch size %lld",
							    i, (long long)batches);
					break;
				}
				items[i] = batch_item(t, b);
				scan_in[i] = &items[i];
			}
			for (i = 0; st == NPU_OK && i < a.states; i++) {
				struct npu_tensor item = batch_item(npu_op_in(ctx, first + i), b);

				st = keep(&finals[b * (int64_t)a.states + (int64_t)i], &item, n, ctx->err);
			}
			if (st == NPU_OK)
				st = scan_run(ctx, &a, g, scan_in, &finals[b * (int64_t)a.states],
					      &per[b * (int64_t)a.outputs], -1);
		}
		/* Outputs: batch-major stacks of the per-item results. */
		for (i = 0; st == NPU_OK && i < a.states; i++) {
			struct stack s = { 0 };

			for (b = 0; st == NPU_OK && b < batches; b++)
				st = stack_push(&s, finals[b * (int64_t)a.states + (int64_t)i], n, i,
						(size_t)b, ctx->err);
			if (st == NPU_OK)
				st = stack_output(ctx, i, &s, 0, false, g->outputs[i]);
			free(s.data);
		}
		for (i = 0; st == NPU_OK && i < a.outputs; i++) {
			struct stack s = { 0 };

			for (b = 0; st == NPU_OK && b < batches; b++) {
				const struct stack *item = &per[b * (int64_t)a.outputs + (int64_t)i];
				struct npu_tensor t = { .dtype = item->dtype, .data = item->data };
				int d;

				t.shape.rank = item->elem.rank + 1;
				t.shape.dims[0] = (int64_t)item->count;
				for (d = 0; d < item->elem.rank; d++)
					t.shape.dims[d + 1] = item->elem.dims[d];
				t.nbytes = item->count * item->elem_bytes;
				st = stack_push(&s, &t, n, i, (size_t)b, ctx->err);
			}
			if (st == NPU_OK)
				st = stack_output(ctx, a.states + i, &s, 0, false, g->outputs[a.states + i]);
			free(s.data);
		}
		for (b = 0; b < batches; b++) {
			for (i = 0; i < a.states; i++)
				npu_tensor_destroy(finals[b * (int64_t)a.states + (int64_t)i]);
			for (i = 0; i < a.outputs; i++)
				free(per[b * (int64_t)a.outputs + (int64_t)i].data);
		}
		free(finals);
		free(per);
		return st;
	}
out:
	for (i = 0; i < a.states; i++)
		npu_tensor_destroy(states[i]);
	for (i = 0; i < a.outputs; i++)
		free(stacks[i].data);
	return st;
}

NPU_CPU_OP_DEF(scan) = {
	.op_type = "Scan",
	.domain = "",
	.compute = scan_compute,
};
