// SPDX-License-Identifier: MIT
/*
 * op_sequence.c - ONNX sequences and optionals: SequenceEmpty,
 * SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
 * SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap,
 * Optional, OptionalHasElement, OptionalGetElement. Values are packed
 * containers (graph/npu_seq.h); ops that make one give it its size at run
 * time (the schemas' dynamic_outputs).
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/sequence.h"
#include "graph/npu_seq.h"

#define MAX_ITEMS 65536

static npu_status open_input(struct npu_op_ctx *ctx, size_t i, struct npu_seq *seq)
{
	npu_status st = npu_seq_open(npu_op_in(ctx, i), seq, ctx->err);

	if (st != NPU_OK)
		npu_error_prefix(ctx->err, "%s node '%s': input %zu", ctx->node->op_type,
				 ctx->node->name, i);
	return st;
}

/* Output 'index' as a container of these items. */
static npu_status emit(struct npu_op_ctx *ctx, size_t index, enum npu_dtype kind,
		       enum npu_dtype elem, const struct npu_tensor *const *items, size_t count)
{
	struct npu_shape s = { .rank = 1 };
	npu_status st;

	s.dims[0] = (int64_t)npu_seq_bytes(items, count);
	st = ctx->rt->alloc_output(ctx, index, kind, &s);
	if (st == NPU_OK && ctx->outputs[index])
		npu_seq_pack(kind, elem, items, count, ctx->outputs[index]->data);
	return st;
}

static npu_status emit_tensor(struct npu_op_ctx *ctx, size_t index, const struct npu_tensor *t)
{
	npu_status st = ctx->rt->alloc_output(ctx, index, t->dtype, &t->shape);

	if (st == NPU_OK && ctx->outputs[index] && t->nbytes)
		memcpy(ctx->outputs[index]->data, t->data, t->nbytes);
	return st;
}

/* The items of a container as an array of views (caller frees). */
static npu_status items_of(struct npu_op_ctx *ctx, const struct npu_seq *seq, size_t extra,
			   struct npu_tensor **views, const struct npu_tensor ***ptrs)
{
	size_t i;

	*views = calloc(seq->count + extra + 1, sizeof(**views));
	*ptrs = calloc(seq->count + extra + 1, sizeof(**ptrs));
	if (!*views || !*ptrs) {
		free(*views);
		free(*ptrs);
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < seq->count; i++) {
		npu_seq_item(seq, i, &(*views)[i]);
		(*ptrs)[i] = &(*views)[i];
	}
	return NPU_OK;
}

/* A position input: index into [0, len] (insert: len allowed), negative from the end. */
static npu_status position(struct npu_op_ctx *ctx, size_t input, size_t len, bool insert,
			   size_t fallback, size_t *out)
{
	const struct npu_tensor *p = npu_op_in(ctx, input);
	int64_t v;

	if (!p) {
		*out = fallback;
		return NPU_OK;
	}
	if ((p->dtype != NPU_DTYPE_INT64 && p->dtype != NPU_DTYPE_INT32) ||
	    npu_shape_numel(&p->shape) != 1)
		return npu_op_invalid(ctx->err, ctx->node, "input 'position' must be one int32 or int64 value");
	v = npu_op_index_get(p, 0);
	if (v < 0)
		v += (int64_t)len;
	if (v < 0 || v > (int64_t)len || (!insert && v == (int64_t)len))
		return npu_op_invalid(ctx->err, ctx->node, "position %lld is out of range for a sequence of %zu",
				      (long long)npu_op_index_get(p, 0), len);
	*out = (size_t)v;
	return NPU_OK;
}

/* ---- SequenceEmpty / SequenceConstruct ---- */

static npu_status seq_empty_compute(struct npu_op_ctx *ctx)
{
	return emit(ctx, 0, NPU_DTYPE_SEQUENCE,
		    (enum npu_dtype)npu_node_attr_int_or(ctx->node, "dtype", NPU_DTYPE_FLOAT), NULL, 0);
}

NPU_CPU_OP_DEF(sequence_empty) = {
	.op_type = "SequenceEmpty",
	.domain = "",
	.compute = seq_empty_compute,
};

static npu_status seq_construct_compute(struct npu_op_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->num_inputs; i++)
		if (!ctx->inputs[i])
			return npu_op_invalid(ctx->err, ctx->node, "input %zu is missing", i);
	return emit(ctx, 0, NPU_DTYPE_SEQUENCE, ctx->inputs[0]->dtype, ctx->inputs,
		    ctx->num_inputs);
}

NPU_CPU_OP_DEF(sequence_construct) = {
	.op_type = "SequenceConstruct",
	.domain = "",
	.compute = seq_construct_compute,
};

/* ---- SequenceInsert / SequenceErase / SequenceAt / SequenceLength ---- */

static npu_status seq_insert_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *t = npu_op_in(ctx, 1), **ptrs;
	struct npu_tensor *views;
	struct npu_seq seq;
	size_t at, i;
	npu_status st;

	if (!t)
		return npu_op_invalid(ctx->err, ctx->node, "input 'tensor' is missing");
	st = open_input(ctx, 0, &seq);
	if (st == NPU_OK && seq.count >= MAX_ITEMS)
		st = npu_op_unsupported(ctx->err, ctx->node, "a sequence of more than %d items",
					MAX_ITEMS);
	if (st == NPU_OK && seq.count && seq.elem_dtype != NPU_DTYPE_UNDEFINED &&
	    t->dtype != seq.elem_dtype)
		st = npu_op_invalid(ctx->err, ctx->node, "inserting a %s into a sequence of %s",
				    npu_dtype_name(t->dtype), npu_dtype_name(seq.elem_dtype));
	if (st == NPU_OK)
		st = position(ctx, 2, seq.count, true, seq.count, &at);
	if (st != NPU_OK)
		return st;
	st = items_of(ctx, &seq, 1, &views, &ptrs);
	if (st != NPU_OK)
		return st;
	for (i = seq.count; i > at; i--)
		ptrs[i] = ptrs[i - 1];
	ptrs[at] = t;
	st = emit(ctx, 0, NPU_DTYPE_SEQUENCE, t->dtype, ptrs, seq.count + 1);
	free(views);
	free(ptrs);
	return st;
}

NPU_CPU_OP_DEF(sequence_insert) = {
	.op_type = "SequenceInsert",
	.domain = "",
	.compute = seq_insert_compute,
};

static npu_status seq_erase_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor **ptrs;
	struct npu_tensor *views;
	struct npu_seq seq;
	size_t at, i;
	npu_status st = open_input(ctx, 0, &seq);

	if (st == NPU_OK && !seq.count)
		st = npu_op_invalid(ctx->err, ctx->node, "erasing from an empty sequence");
	if (st == NPU_OK)
		st = position(ctx, 1, seq.count, false, seq.count - 1, &at);
	if (st == NPU_OK)
		st = items_of(ctx, &seq, 0, &views, &ptrs);
	if (st != NPU_OK)
		return st;
	for (i = at; i + 1 < seq.count; i++)
		ptrs[i] = ptrs[i + 1];
	st = emit(ctx, 0, NPU_DTYPE_SEQUENCE, seq.elem_dtype, ptrs, seq.count - 1);
	free(views);
	free(ptrs);
	return st;
}

NPU_CPU_OP_DEF(sequence_erase) = {
	.op_type = "SequenceErase",
	.domain = "",
	.compute = seq_erase_compute,
};

static npu_status seq_at_compute(struct npu_op_ctx *ctx)
{
	struct npu_tensor item;
	struct npu_seq seq;
	size_t at;
	npu_status st = open_input(ctx, 0, &seq);

	if (st == NPU_OK)
		st = position(ctx, 1, seq.count, false, 0, &at);
	if (st != NPU_OK)
		return st;
	npu_seq_item(&seq, at, &item);
	return emit_tensor(ctx, 0, &item);
}

NPU_CPU_OP_DEF(sequence_at) = {
	.op_type = "SequenceAt",
	.domain = "",
	.compute = seq_at_compute,
};

static npu_status seq_length_compute(struct npu_op_ctx *ctx)
{
	struct npu_seq seq;
	npu_status st = open_input(ctx, 0, &seq);

	if (st == NPU_OK)
		*(int64_t *)npu_op_out(ctx, 0)->data = (int64_t)seq.count;
	return st;
}

NPU_CPU_OP_DEF(sequence_length) = {
	.op_type = "SequenceLength",
	.domain = "",
	.compute = seq_length_compute,
};

/* ---- SplitToSequence / ConcatFromSequence ---- */

static npu_status split_to_seq_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = npu_op_in(ctx, 0), *split = npu_op_in(ctx, 1);
	int64_t keepdims = npu_node_attr_int_or(ctx->node, "keepdims", 1), len, pos = 0;
	int64_t sizes_buf[64], *sizes = sizes_buf, outer, o;
	size_t count = 0, i, inner, esize = npu_dtype_size(x->dtype);
	struct npu_tensor *pieces;
	const struct npu_tensor **ptrs;
	int axis, d;
	npu_status st;

	st = npu_op_axis(ctx->err, ctx->node, "axis", npu_node_attr_int_or(ctx->node, "axis", 0),
			 x->shape.rank, &axis);
	if (st != NPU_OK)
		return st;
	len = x->shape.dims[axis];
	if (!split) {
		count = (size_t)len;
	} else if (split->shape.rank == 0) {
		int64_t chunk = npu_op_index_get(split, 0);

		if (chunk <= 0)
			return npu_op_invalid(ctx->err, ctx->node, "input 'split' = %lld must be positive",
					      (long long)chunk);
		count = (size_t)((len + chunk - 1) / chunk);
	} else {
		count = (size_t)npu_shape_numel(&split->shape);
	}
	if (count > MAX_ITEMS)
		return npu_op_unsupported(ctx->err, ctx->node, "a sequence of more than %d items",
					  MAX_ITEMS);
	if (count > 64) {
		sizes = calloc(count, sizeof(*sizes));
		if (!sizes)
			return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < count; i++) {
		if (!split)
			sizes[i] = 1;
		else if (split->shape.rank == 0)
			sizes[i] = len - pos < npu_op_index_get(split, 0) ? len - pos
									   : npu_op_index_get(split, 0);
		else
			sizes[i] = npu_op_index_get(split, i);
		if (sizes[i] < 0 || pos + sizes[i] > len) {
			if (sizes != sizes_buf)
				free(sizes);
			return npu_op_invalid(ctx->err, ctx->node, "input 'split' does not add up to the %lld elements of axis %d",
					      (long long)len, axis);
		}
		pos += sizes[i];
	}
	if (pos != len) {
		if (sizes != sizes_buf)
			free(sizes);
		return npu_op_invalid(ctx->err, ctx->node, "input 'split' sums to %lld, axis %d has %lld",
				      (long long)pos, axis, (long long)len);
	}
	pieces = calloc(count + 1, sizeof(*pieces));
	ptrs = calloc(count + 1, sizeof(*ptrs));
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	inner = (size_t)npu_op_dims_prod(&x->shape, axis + 1, x->shape.rank) * esize;
	st = pieces && ptrs ? NPU_OK : npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0, pos = 0; st == NPU_OK && i < count; pos += sizes[i], i++) {
		struct npu_shape s = x->shape;

		s.dims[axis] = sizes[i];
		if (!split && !keepdims) {
			for (d = axis; d + 1 < s.rank; d++)
				s.dims[d] = s.dims[d + 1];
			s.rank--;
		}
		pieces[i].dtype = x->dtype;
		pieces[i].shape = s;
		pieces[i].nbytes = (size_t)(outer * sizes[i]) * inner;
		pieces[i].data = malloc(pieces[i].nbytes + 1);
		if (!pieces[i].data) {
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
			break;
		}
		for (o = 0; pieces[i].nbytes && o < outer; o++)
			memcpy((uint8_t *)pieces[i].data + (size_t)(o * sizes[i]) * inner,
			       (const uint8_t *)x->data + (size_t)(o * len + pos) * inner,
			       (size_t)sizes[i] * inner);
		ptrs[i] = &pieces[i];
	}
	if (st == NPU_OK)
		st = emit(ctx, 0, NPU_DTYPE_SEQUENCE, x->dtype, ptrs, count);
	for (i = 0; pieces && i < count; i++)
		free(pieces[i].data);
	free(pieces);
	free(ptrs);
	if (sizes != sizes_buf)
		free(sizes);
	return st;
}

NPU_CPU_OP_DEF(split_to_sequence) = {
	.op_type = "SplitToSequence",
	.domain = "",
	.compute = split_to_seq_compute,
};

static npu_status concat_from_seq_compute(struct npu_op_ctx *ctx)
{
	int64_t new_axis = npu_node_attr_int_or(ctx->node, "new_axis", 0), total = 0, o, outer;
	struct npu_tensor first, item;
	struct npu_shape out;
	struct npu_seq seq;
	size_t i, inner, esize, off = 0;
	int axis, d, rank;
	char a[160], b[160];
	npu_status st = open_input(ctx, 0, &seq);

	if (st == NPU_OK && !seq.count)
		st = npu_op_invalid(ctx->err, ctx->node, "concatenating an empty sequence");
	if (st != NPU_OK)
		return st;
	npu_seq_item(&seq, 0, &first);
	rank = first.shape.rank + (new_axis ? 1 : 0);
	st = npu_op_axis(ctx->err, ctx->node, "axis", npu_node_attr_int_or(ctx->node, "axis", 0),
			 rank, &axis);
	if (st != NPU_OK)
		return st;
	if (rank > NPU_MAX_RANK)
		return npu_op_unsupported(ctx->err, ctx->node, "rank %d", rank);
	for (i = 0; i < seq.count; i++) {
		npu_seq_item(&seq, i, &item);
		if (item.dtype != first.dtype || item.shape.rank != first.shape.rank)
			return npu_op_invalid(ctx->err, ctx->node, "item %zu is %s %s, item 0 %s %s", i,
					      npu_dtype_name(item.dtype),
					      npu_shape_str(&item.shape, a, sizeof(a)),
					      npu_dtype_name(first.dtype),
					      npu_shape_str(&first.shape, b, sizeof(b)));
		for (d = 0; d < first.shape.rank; d++)
			if ((new_axis || d != axis) && item.shape.dims[d] != first.shape.dims[d])
				return npu_op_invalid(ctx->err, ctx->node, "item %zu is %s, item 0 %s", i,
						      npu_shape_str(&item.shape, a, sizeof(a)),
						      npu_shape_str(&first.shape, b, sizeof(b)));
		total += new_axis ? 1 : item.shape.dims[axis];
	}
	/* new_axis: the items stack on a new dim; else they join along axis. */
	out.rank = rank;
	for (d = 0, i = 0; d < rank; d++) {
		if (d == axis) {
			out.dims[d] = total;
			if (!new_axis)
				i++;
		} else {
			out.dims[d] = first.shape.dims[i++];
		}
	}
	st = ctx->rt->alloc_output(ctx, 0, first.dtype, &out);
	if (st != NPU_OK || !ctx->outputs[0])
		return st;
	esize = npu_dtype_size(first.dtype);
	outer = npu_op_dims_prod(&out, 0, axis);
	inner = (size_t)npu_op_dims_prod(&out, axis + 1, out.rank) * esize;
	for (i = 0; i < seq.count; i++) {
		size_t rows;

		npu_seq_item(&seq, i, &item);
		rows = new_axis ? 1 : (size_t)item.shape.dims[axis];
		for (o = 0; rows && inner && o < outer; o++)
			memcpy((uint8_t *)ctx->outputs[0]->data + ((size_t)o * (size_t)total + off) * inner,
			       (const uint8_t *)item.data + (size_t)o * rows * inner, rows * inner);
		off += rows;
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(concat_from_sequence) = {
	.op_type = "ConcatFromSequence",
	.domain = "",
	.compute = concat_from_seq_compute,
};

/* ---- SequenceMap: a body per item ---- */

static npu_status seq_map_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	const struct npu_graph *g = npu_seq_map_body(n);
	size_t declared = n->num_inputs - n->num_implicit_inputs, count = 0, i, j;
	struct npu_seq seqs[32];
	struct npu_tensor items[32];
	const struct npu_tensor *ins[32], *outs[32];
	struct npu_tensor **kept;
	const struct npu_tensor **ptrs;
	npu_status st = NPU_OK;

	if (declared > 32 || n->num_outputs > 32)
		return npu_op_unsupported(ctx->err, n, "more than 32 inputs or outputs");
	for (j = 0; j < declared && st == NPU_OK; j++) {
		const struct npu_tensor *t = npu_op_in(ctx, j);

		if (t && t->dtype == NPU_DTYPE_SEQUENCE) {
			st = open_input(ctx, j, &seqs[j]);
			if (st == NPU_OK && j && seqs[j].count != count)
				st = npu_op_invalid(ctx->err, n, "sequence input %zu has %zu items, input 0 has %zu",
						    j, seqs[j].count, count);
			if (!j)
				count = seqs[0].count;
		}
	}
	if (st != NPU_OK)
		return st;
	kept = calloc(count * n->num_outputs + 1, sizeof(*kept));
	ptrs = calloc(count + 1, sizeof(*ptrs));
	if (!kept || !ptrs)
		st = npu_op_error(ctx->err, n, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; st == NPU_OK && i < count; i++) {
		for (j = 0; j < declared; j++) {
			const struct npu_tensor *t = npu_op_in(ctx, j);

			if (t && t->dtype == NPU_DTYPE_SEQUENCE) {
				npu_seq_item(&seqs[j], i, &items[j]);
				ins[j] = &items[j];
			} else {
				ins[j] = t;
			}
		}
		st = ctx->rt->run(ctx, g, ins, outs);
		for (j = 0; st == NPU_OK && j < n->num_outputs; j++) {
			struct npu_tensor *c = npu_tensor_create(outs[j]->dtype, &outs[j]->shape);

			if (!c) {
				st = npu_op_error(ctx->err, n, NPU_ERR_NO_MEMORY, "out of memory");
				break;
			}
			if (c->nbytes)
				memcpy(c->data, outs[j]->data, c->nbytes);
			kept[j * count + i] = c;
		}
	}
	for (j = 0; st == NPU_OK && j < n->num_outputs; j++) {
		for (i = 0; i < count; i++)
			ptrs[i] = kept[j * count + i];
		st = emit(ctx, j, NPU_DTYPE_SEQUENCE, count ? kept[j * count]->dtype : NPU_DTYPE_UNDEFINED,
			  ptrs, count);
	}
	for (i = 0; kept && i < count * n->num_outputs; i++)
		npu_tensor_destroy(kept[i]);
	free(kept);
	free(ptrs);
	return st;
}

NPU_CPU_OP_DEF(sequence_map) = {
	.op_type = "SequenceMap",
	.domain = "",
	.compute = seq_map_compute,
};

/* ---- Optional ---- */

static npu_status optional_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *t = ctx->num_inputs ? npu_op_in(ctx, 0) : NULL;

	return emit(ctx, 0, NPU_DTYPE_OPTIONAL, t ? t->dtype : NPU_DTYPE_UNDEFINED, &t, t ? 1 : 0);
}

NPU_CPU_OP_DEF(optional) = {
	.op_type = "Optional",
	.domain = "",
	.compute = optional_compute,
};

static npu_status has_element_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *t = ctx->num_inputs ? npu_op_in(ctx, 0) : NULL;
	struct npu_seq seq;
	bool has = t != NULL;
	npu_status st;

	if (t && t->dtype == NPU_DTYPE_OPTIONAL) {
		st = open_input(ctx, 0, &seq);
		if (st != NPU_OK)
			return st;
		has = seq.count > 0;
	}
	*(uint8_t *)npu_op_out(ctx, 0)->data = has;
	return NPU_OK;
}

NPU_CPU_OP_DEF(optional_has_element) = {
	.op_type = "OptionalHasElement",
	.domain = "",
	.compute = has_element_compute,
};

static npu_status get_element_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *t = npu_op_in(ctx, 0);
	struct npu_tensor item;
	struct npu_seq seq;
	npu_status st;

	if (t->dtype != NPU_DTYPE_OPTIONAL)
		return emit_tensor(ctx, 0, t);	/* opset 18: a plain value passes */
	st = open_input(ctx, 0, &seq);
	if (st == NPU_OK && !seq.count)
		st = npu_op_invalid(ctx->err, ctx->node, "the optional input holds no element");
	if (st != NPU_OK)
		return st;
	npu_seq_item(&seq, 0, &item);
	return emit_tensor(ctx, 0, &item);
}

NPU_CPU_OP_DEF(optional_get_element) = {
	.op_type = "OptionalGetElement",
	.domain = "",
	.compute = get_element_compute,
};
