// SPDX-License-Identifier: MIT
/*
 * Shape and data-movement ops: Reshape, Flatten, Transpose, Concat, Split,
 * Slice, Squeeze, Unsqueeze, Gather, Pad, Shape, Size, Constant,
 * ConstantOfShape, Expand, Dropout (identity). Element types are moved as
 * bytes, so any fixed-size type works.
 *
 * Output shapes that depend on an input's values (Reshape's shape, Slice's
 * starts...) are exact when that input is a constant at infer time and
 * unknown (-1) otherwise.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "cpu/ops/op_random.h"
#include "cpu/ops/op_string.h"

static npu_status npu_check_sized(const struct npu_infer_ctx *ctx, size_t i)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);

	/* Strings reach only ops that move them by index (npu_infer.c checks). */
	if (v && !npu_dtype_size(v->dtype) && v->dtype != NPU_DTYPE_STRING)
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input %zu '%s' has type %s, not supported",
					  i, v->name, npu_dtype_name(v->dtype));
	return NPU_OK;
}

static size_t npu_tensor_bytes(const struct npu_tensor *t)
{
	return (size_t)npu_op_numel(t) * npu_dtype_size(t->dtype);
}

/* Copies input 0 to output 0 unchanged (Reshape, Flatten, Squeeze...). */
static npu_status npu_copy_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	size_t n = npu_tensor_bytes(x);

	if (npu_tensor_bytes(y) != n)
		return npu_op_invalid(ctx->err, ctx->node,
				      "output holds %zu bytes, input %zu",
				      npu_tensor_bytes(y), n);
	if (n && y->data != x->data)
		memcpy(y->data, x->data, n);
	return NPU_OK;
}

/*
 * The ops below move elements without reading them: string tensors go
 * through them as int64 indices of their strings (op_string.c).
 */
#define NPU_STRINGS_BY_INDEX(fn)					\
static npu_status fn##_any(struct npu_op_ctx *ctx)			\
{									\
	return npu_op_has_strings(ctx) ? npu_op_strings_by_index(ctx, fn) : fn(ctx); \
}

/* ---- Reshape ---- */

static npu_status npu_reshape_dims(const struct npu_node *node,
				   const struct npu_shape *in,
				   const int64_t *shape, int n, bool allowzero,
				   struct npu_shape *out, struct npu_error *err)
{
	int64_t known = 1, total = npu_shape_numel(in);
	int i, infer_at = -1;
	bool unknown = false;

	out->rank = n;
	for (i = 0; i < n; i++) {
		int64_t v = shape[i];

		if (v == 0 && !allowzero) {
			if (i >= in->rank)
				return npu_op_invalid(err, node,
						      "shape[%d] = 0 copies a dim the input (rank %d) lacks",
						      i, in->rank);
			v = in->dims[i];
		} else if (v == -1) {
			if (infer_at >= 0)
				return npu_op_invalid(err, node,
						      "shape has more than one -1");
			infer_at = i;
			out->dims[i] = -1;
			continue;
		} else if (v < -1) {
			return npu_op_invalid(err, node, "shape[%d] = %lld",
					      i, (long long)v);
		}
		out->dims[i] = v;
		if (v < 0)
			unknown = true;
		else
			known *= v;
	}
	if (infer_at >= 0) {
		if (allowzero && known == 0)
			return npu_op_invalid(err, node,
					      "allowzero shape has both 0 and -1");
		if (unknown || total < 0) {
			out->dims[infer_at] = -1;
		} else if (known == 0 || total % known) {
			return npu_op_invalid(err, node,
					      "cannot reshape %lld elements with the -1 at %d",
					      (long long)total, infer_at);
		} else {
			out->dims[infer_at] = total / known;
		}
	} else if (!unknown && total >= 0 && total != known) {
		return npu_op_invalid(err, node,
				      "cannot reshape %lld elements into %lld",
				      (long long)total, (long long)known);
	}
	return NPU_OK;
}

static npu_status reshape_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	int64_t shape[NPU_MAX_RANK];
	int n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("allowzero"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st)
		st = npu_op_ints_from_value(node, 1, shape, NPU_MAX_RANK, &n,
					    ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	if (n < 0) {
		const struct npu_shape *ss = &node->inputs[1]->shape;

		if (ss->rank != 1 || ss->dims[0] < 0 ||
		    ss->dims[0] > NPU_MAX_RANK)
			return npu_op_unsupported(ctx->err, node,
						  "shape input '%s' is not constant and its length is unknown",
						  node->inputs[1]->name);
		ctx->out_shapes[0].rank = (int)ss->dims[0];
		for (i = 0; i < ctx->out_shapes[0].rank; i++)
			ctx->out_shapes[0].dims[i] = -1;
		return NPU_OK;
	}
	return npu_reshape_dims(node, &node->inputs[0]->shape, shape, n,
				npu_node_attr_int_or(node, "allowzero", 0) != 0,
				&ctx->out_shapes[0], ctx->err);
}

NPU_STRINGS_BY_INDEX(npu_copy_compute)

NPU_CPU_OP_DEF(reshape) = {
	.op_type = "Reshape", .domain = "", .since_version = 5,
	.max_version = 21, .infer = reshape_infer, .compute = npu_copy_compute_any,
	.strings = true,
};

/* ---- Flatten ---- */

static npu_status flatten_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *in;
	int64_t axis;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	axis = npu_node_attr_int_or(node, "axis", 1);
	if (axis < 0)
		axis += in->rank;
	if (axis < 0 || axis > in->rank)
		return npu_op_invalid(ctx->err, node,
				      "axis %lld out of range for rank %d",
				      (long long)npu_node_attr_int_or(node, "axis", 1),
				      in->rank);
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = 2;
	ctx->out_shapes[0].dims[0] = npu_op_dims_prod(in, 0, (int)axis);
	ctx->out_shapes[0].dims[1] = npu_op_dims_prod(in, (int)axis, in->rank);
	return NPU_OK;
}

NPU_CPU_OP_DEF(flatten) = {
	.op_type = "Flatten", .domain = "", .since_version = 1,
	.max_version = 21, .infer = flatten_infer, .compute = npu_copy_compute_any,
	.strings = true,
};

/* ---- Squeeze / Unsqueeze: axes attribute (< 13) or input ---- */

static npu_status npu_axes_arg(const struct npu_node *node, int64_t *axes,
			       int *n, struct npu_error *err)
{
	if (node->opset < 13)
		return npu_op_ints_from_attr(node, "axes", axes, NPU_MAX_RANK,
					     n, err);
	return npu_op_ints_from_value(node, 1, axes, NPU_MAX_RANK, n, err);
}

/* Length of a non-constant 1-D axes input 1, or -1. */
static int npu_axes_count(const struct npu_node *node)
{
	const struct npu_value *v = npu_op_input(node, 1);

	if (!v || v->shape.rank != 1 || v->shape.dims[0] < 0 ||
	    v->shape.dims[0] > NPU_MAX_RANK)
		return -1;
	return (int)v->shape.dims[0];
}

static npu_status npu_squeeze_shape(const struct npu_node *node,
				    const struct npu_shape *in,
				    const int64_t *axes, int n,
				    struct npu_shape *out, struct npu_error *err)
{
	bool drop[NPU_MAX_RANK] = { false };
	int i, ax;
	npu_status st;

	for (i = 0; i < n; i++) {
		st = npu_op_axis(err, node, "axes", axes[i], in->rank, &ax);
		if (st)
			return st;
		if (in->dims[ax] > 1 || in->dims[ax] == 0)
			return npu_op_invalid(err, node,
					      "cannot squeeze axis %d of size %lld",
					      ax, (long long)in->dims[ax]);
		drop[ax] = true;
	}
	if (n == 0)
		for (i = 0; i < in->rank; i++)
			drop[i] = in->dims[i] == 1;
	out->rank = 0;
	for (i = 0; i < in->rank; i++)
		if (!drop[i])
			out->dims[out->rank++] = in->dims[i];
	return NPU_OK;
}

static npu_status squeeze_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	int64_t axes[NPU_MAX_RANK];
	int n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, node->opset < 13 ? 1 : 2);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 13 ?
					NPU_OP_ATTRS("axes") : NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st)
		st = npu_axes_arg(node, axes, &n, ctx->err);
	if (st)
		return st;
	if (n < 0) {
		/* Known at run time: the rank follows from the axes' count. */
		n = npu_axes_count(node);
		if (n < 0 || n > node->inputs[0]->shape.rank)
			return npu_op_unsupported(ctx->err, node,
						  "axes input is not constant and its length is unknown");
		ctx->out_dtypes[0] = node->inputs[0]->dtype;
		ctx->out_shapes[0].rank = node->inputs[0]->shape.rank - n;
		for (i = 0; i < ctx->out_shapes[0].rank; i++)
			ctx->out_shapes[0].dims[i] = -1;
		return NPU_OK;
	}
	if (n == 0)
		for (i = 0; i < node->inputs[0]->shape.rank; i++)
			if (node->inputs[0]->shape.dims[i] < 0)
				return npu_op_unsupported(ctx->err, node,
							  "no axes and dim %d is unknown", i);
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	return npu_squeeze_shape(node, &node->inputs[0]->shape, axes, n,
				 &ctx->out_shapes[0], ctx->err);
}

NPU_CPU_OP_DEF(squeeze) = {
	.op_type = "Squeeze", .domain = "", .since_version = 1,
	.max_version = 21, .infer = squeeze_infer, .compute = npu_copy_compute_any,
	.strings = true,
};

static npu_status unsqueeze_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *in;
	bool ins[NPU_MAX_RANK] = { false };
	int64_t axes[NPU_MAX_RANK];
	int n, i, j, rank, ax;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, node->opset < 13 ? 1 : 2);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 13 ?
					NPU_OP_ATTRS("axes") : NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st)
		st = npu_axes_arg(node, axes, &n, ctx->err);
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	if (n < 0) {
		n = npu_axes_count(node);
		if (n < 0 || in->rank + n > NPU_MAX_RANK)
			return npu_op_unsupported(ctx->err, node,
						  "axes input is not constant and its length is unknown");
		ctx->out_dtypes[0] = node->inputs[0]->dtype;
		ctx->out_shapes[0].rank = in->rank + n;
		for (i = 0; i < in->rank + n; i++)
			ctx->out_shapes[0].dims[i] = -1;
		return NPU_OK;
	}
	rank = in->rank + n;
	if (n == 0 || rank > NPU_MAX_RANK)
		return npu_op_invalid(ctx->err, node,
				      "%d axes for an input of rank %d", n,
				      in->rank);
	for (i = 0; i < n; i++) {
		st = npu_op_axis(ctx->err, node, "axes", axes[i], rank, &ax);
		if (st)
			return st;
		if (ins[ax])
			return npu_op_invalid(ctx->err, node,
					      "axis %d repeated", ax);
		ins[ax] = true;
	}
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = rank;
	for (i = 0, j = 0; i < rank; i++)
		ctx->out_shapes[0].dims[i] = ins[i] ? 1 : in->dims[j++];
	return NPU_OK;
}

NPU_CPU_OP_DEF(unsqueeze) = {
	.op_type = "Unsqueeze", .domain = "", .since_version = 1,
	.max_version = 21, .infer = unsqueeze_infer,
	.compute = npu_copy_compute_any,
	.strings = true,
};

/* ---- Transpose ---- */

static void npu_transpose_perm(const struct npu_node *node, int rank,
			       int64_t *perm, int *n)
{
	int i;

	*n = 0;
	npu_op_ints_from_attr(node, "perm", perm, NPU_MAX_RANK, n, NULL);
	if (*n == 0) {
		for (i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
		*n = rank;
	}
}

static npu_status transpose_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *in;
	bool seen[NPU_MAX_RANK] = { false };
	int64_t perm[NPU_MAX_RANK];
	int n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("perm"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st) {
		const struct npu_attr *a = npu_node_attr(node, "perm");

		if (a && a->count > NPU_MAX_RANK)
			st = npu_op_invalid(ctx->err, node, "perm too long");
	}
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	npu_transpose_perm(node, in->rank, perm, &n);
	if (n != in->rank)
		return npu_op_invalid(ctx->err, node,
				      "perm has %d entries for rank %d", n,
				      in->rank);
	for (i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
			return npu_op_invalid(ctx->err, node,
					      "perm[%d] = %lld is not a permutation",
					      i, (long long)perm[i]);
		seen[perm[i]] = true;
	}
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = n;
	for (i = 0; i < n; i++)
		ctx->out_shapes[0].dims[i] = in->dims[perm[i]];
	return NPU_OK;
}

static npu_status transpose_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t perm[NPU_MAX_RANK], in_str[NPU_MAX_RANK], str[NPU_MAX_RANK];
	int n, i;

	npu_transpose_perm(ctx->node, x->shape.rank, perm, &n);
	npu_op_strides(&x->shape, in_str);
	for (i = 0; i < n; i++)
		str[i] = in_str[perm[i]];
	npu_op_strided_copy(y->data, x->data, n, y->shape.dims, str,
			    npu_dtype_size(x->dtype));
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(transpose_compute)

NPU_CPU_OP_DEF(transpose) = {
	.op_type = "Transpose", .domain = "", .since_version = 1,
	.max_version = 21, .infer = transpose_infer,
	.compute = transpose_compute_any,
	.strings = true,
};

/* ---- Concat ---- */

static npu_status concat_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *a;
	struct npu_shape out;
	size_t i;
	int axis, d;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, SIZE_MAX);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (st)
		return st;
	if (!npu_node_attr(node, "axis"))
		return npu_op_invalid(ctx->err, node, "attribute 'axis' is missing");
	a = node->inputs[0];
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", 0), a->shape.rank,
			 &axis);
	if (st)
		return st;
	out = a->shape;
	for (i = 1; i < node->num_inputs; i++) {
		const struct npu_value *b = node->inputs[i];

		if (!b || b->dtype != a->dtype || b->shape.rank != out.rank)
			return npu_op_invalid(ctx->err, node,
					      "input %zu type or rank differs from input 0",
					      i);
		for (d = 0; d < out.rank; d++) {
			if (d == axis) {
				out.dims[d] = out.dims[d] < 0 || b->shape.dims[d] < 0 ?
					      -1 : out.dims[d] + b->shape.dims[d];
			} else if (out.dims[d] < 0) {
				out.dims[d] = b->shape.dims[d];
			} else if (b->shape.dims[d] >= 0 &&
				   b->shape.dims[d] != out.dims[d]) {
				return npu_op_invalid(ctx->err, node,
						      "input %zu dim %d is %lld, expected %lld",
						      i, d, (long long)b->shape.dims[d],
						      (long long)out.dims[d]);
			}
		}
	}
	ctx->out_dtypes[0] = a->dtype;
	ctx->out_shapes[0] = out;
	return NPU_OK;
}

/*
 * Concat as pieces of y over the pool: y is, per outer index, the inputs'
 * rows one after another; a piece [begin, end) of y's elements copies the
 * parts of those rows it covers.
 */
#define CONCAT_MAX_PAR 64

struct concat_job {
	const struct npu_op_ctx *ctx;
	char *y;
	size_t es;
	int64_t y_row;
	int64_t row[CONCAT_MAX_PAR], pos[CONCAT_MAX_PAR];
};

static void concat_range(void *arg, size_t begin, size_t end)
{
	const struct concat_job *j = arg;
	const char *src;
	int64_t k = (int64_t)begin;
	size_t i = 0;

	while (k < (int64_t)end) {
		int64_t o = k / j->y_row, r = k % j->y_row, n;

		while (r >= j->pos[i] + j->row[i] || r < j->pos[i])
			i = r < j->pos[i] ? 0 : i + 1;
		n = j->pos[i] + j->row[i] - r;
		if (n > (int64_t)end - k)
			n = (int64_t)end - k;
		src = (const char *)j->ctx->inputs[i]->data +
		      (size_t)(o * j->row[i] + r - j->pos[i]) * j->es;
		/* An input placed in y by the executor is there already. */
		if (src != j->y + (size_t)k * j->es)
			memcpy(j->y + (size_t)k * j->es, src, (size_t)n * j->es);
		k += n;
	}
}

static npu_status concat_compute(struct npu_op_ctx *ctx)
{
	struct npu_tensor *y = ctx->outputs[0];
	size_t es = npu_dtype_size(y->dtype), i;
	int axis = (int)npu_node_attr_int_or(ctx->node, "axis", 0);
	int64_t outer, o, y_row, pos = 0;

	if (axis < 0)
		axis += y->shape.rank;
	outer = npu_op_dims_prod(&y->shape, 0, axis);
	y_row = npu_op_dims_prod(&y->shape, axis, y->shape.rank);
	if (ctx->num_inputs <= CONCAT_MAX_PAR && y_row > 0 &&
	    (size_t)(outer * y_row) >= 2 * NPU_VEC_GRAIN) {
		struct concat_job j = { .ctx = ctx, .y = y->data, .es = es, .y_row = y_row };
		int64_t copy = 0;

		for (i = 0; i < ctx->num_inputs; i++) {
			j.row[i] = npu_op_dims_prod(&ctx->inputs[i]->shape, axis,
						    ctx->inputs[i]->shape.rank);
			j.pos[i] = pos;
			if (outer != 1 || (char *)y->data + pos * es != ctx->inputs[i]->data)
				copy += j.row[i];
			pos += j.row[i];
		}
		if (!copy)
			return NPU_OK;	/* every input is in place */
		npu_threadpool_parallel_for(ctx->pool, (size_t)(outer * y_row),
					    NPU_VEC_GRAIN, concat_range, &j);
		return NPU_OK;
	}
	for (i = 0; i < ctx->num_inputs; i++) {
		const struct npu_tensor *x = ctx->inputs[i];
		int64_t row = npu_op_dims_prod(&x->shape, axis, x->shape.rank);

		/* An input placed in y by the executor (npu_exec.c) is there. */
		if (row && (outer != 1 || (char *)y->data + pos * es != x->data))
			for (o = 0; o < outer; o++)
				memcpy((char *)y->data + (o * y_row + pos) * es,
				       (const char *)x->data + o * row * es,
				       (size_t)row * es);
		pos += row;
	}
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(concat_compute)

NPU_CPU_OP_DEF(concat) = {
	.op_type = "Concat", .domain = "", .since_version = 4,
	.max_version = 21, .infer = concat_infer, .compute = concat_compute_any,
	.strings = true,
};

/* ---- Split: split attribute (< 13), input (>= 13), num_outputs (>= 18) ---- */

#define NPU_SPLIT_MAX 256

/* Sizes of the outputs along the axis; -1 each when not known. */
static npu_status npu_split_sizes(const struct npu_node *node, int64_t dim,
				  const struct npu_tensor *split_t,
				  int64_t *sizes, struct npu_error *err)
{
	size_t n = node->num_outputs, i;
	int64_t vals[NPU_SPLIT_MAX], sum = 0;
	int count = 0;
	npu_status st;

	if (n > NPU_SPLIT_MAX)
		return npu_op_unsupported(err, node, "%zu outputs", n);
	if (node->opset < 13) {
		st = npu_op_ints_from_attr(node, "split", vals, NPU_SPLIT_MAX,
					   &count, err);
	} else if (split_t) {
		st = npu_op_ints_from_tensor(node, split_t, "split", vals,
					     NPU_SPLIT_MAX, &count, err);
	} else {
		st = npu_op_ints_from_value(node, 1, vals, NPU_SPLIT_MAX,
					    &count, err);
	}
	if (st)
		return st;
	if (count < 0) {
		for (i = 0; i < n; i++)
			sizes[i] = -1;
		return NPU_OK;
	}
	if (count > 0) {
		if ((size_t)count != n)
			return npu_op_invalid(err, node,
					      "split has %d entries for %zu outputs",
					      count, n);
		for (i = 0; i < n; i++) {
			if (vals[i] < 0)
				return npu_op_invalid(err, node,
						      "split[%zu] = %lld", i,
						      (long long)vals[i]);
			sizes[i] = vals[i];
			sum += vals[i];
		}
		if (dim >= 0 && sum != dim)
			return npu_op_invalid(err, node,
					      "split sums to %lld, axis has %lld",
					      (long long)sum, (long long)dim);
		return NPU_OK;
	}
	if (node->opset >= 18) {
		int64_t k = npu_node_attr_int_or(node, "num_outputs", 0), chunk;

		if (k != (int64_t)n)
			return npu_op_invalid(err, node,
					      "num_outputs %lld for %zu outputs",
					      (long long)k, n);
		if (dim < 0) {
			for (i = 0; i < n; i++)
				sizes[i] = -1;
			return NPU_OK;
		}
		/* Ceil-sized chunks, the last one holds the remainder. */
		chunk = (dim + k - 1) / k;
		for (i = 0; i < n; i++) {
			int64_t left = dim - (int64_t)i * chunk;

			sizes[i] = left < 0 ? 0 : (left < chunk ? left : chunk);
		}
		return NPU_OK;
	}
	for (i = 0; i < n; i++)
		sizes[i] = dim < 0 ? -1 : dim / (int64_t)n;
	if (dim >= 0 && dim % (int64_t)n)
		return npu_op_invalid(err, node,
				      "axis of %lld does not split evenly into %zu",
				      (long long)dim, n);
	return NPU_OK;
}

static npu_status split_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	int64_t sizes[NPU_SPLIT_MAX];
	const struct npu_shape *in;
	int axis;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, node->opset < 13 ? 1 : 2);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 13 ?
					NPU_OP_ATTRS("axis", "split") :
					NPU_OP_ATTRS("axis", "num_outputs"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", 0), in->rank, &axis);
	if (!st)
		st = npu_split_sizes(node, in->dims[axis], NULL, sizes,
				     ctx->err);
	if (st)
		return st;
	for (i = 0; i < node->num_outputs; i++) {
		ctx->out_dtypes[i] = node->inputs[0]->dtype;
		ctx->out_shapes[i] = *in;
		ctx->out_shapes[i].dims[axis] = sizes[i];
	}
	return NPU_OK;
}

static npu_status split_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	size_t es = npu_dtype_size(x->dtype), i;
	int axis = (int)npu_node_attr_int_or(ctx->node, "axis", 0);
	int64_t outer, inner, o, pos = 0, dim;

	if (axis < 0)
		axis += x->shape.rank;
	dim = x->shape.dims[axis];
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	inner = npu_op_dims_prod(&x->shape, axis + 1, x->shape.rank);
	for (i = 0; i < ctx->num_outputs; i++) {
		struct npu_tensor *y = ctx->outputs[i];
		int64_t len;

		if (!y)
			continue;
		len = y->shape.dims[axis];
		if (pos + len > dim)
			return npu_op_invalid(ctx->err, ctx->node,
					      "outputs exceed the split axis");
		if (len * inner != 0)
			for (o = 0; o < outer; o++)
				memcpy((char *)y->data + o * len * inner * es,
				       (const char *)x->data +
					       (o * dim + pos) * inner * es,
				       (size_t)(len * inner) * es);
		pos += len;
	}
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(split_compute)

NPU_CPU_OP_DEF(split) = {
	.op_type = "Split", .domain = "", .since_version = 2,
	.max_version = 21, .infer = split_infer, .compute = split_compute_any,
	.strings = true,
};

/* ---- Slice: attributes (< 10) or inputs starts, ends, axes, steps ---- */

/* Per axis: start, step and (before npu_slice_resolve) the end in len. */
struct npu_slice_args {
	int64_t start[NPU_MAX_RANK], step[NPU_MAX_RANK], len[NPU_MAX_RANK];
	bool known[NPU_MAX_RANK];
};

static int64_t npu_clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : (v > hi ? hi : v);
}

/* Reads the four lists from attributes, constant values or tensors. */
static npu_status npu_slice_read(const struct npu_node *node,
				 const struct npu_tensor *const *t, int rank,
				 struct npu_slice_args *sa,
				 struct npu_error *err)
{
	static const char *const names[4] = { "starts", "ends", "axes", "steps" };
	int64_t v[4][NPU_MAX_RANK];
	int cnt[4], i, k, ax;
	bool seen[NPU_MAX_RANK] = { false };
	npu_status st;

	for (k = 0; k < 4; k++) {
		if (node->opset < 10)
			st = k < 3 ? npu_op_ints_from_attr(node, names[k], v[k],
							   NPU_MAX_RANK, &cnt[k], err)
				   : (cnt[k] = 0, NPU_OK);
		else if (t)
			st = t[k + 1] ? npu_op_ints_from_tensor(node, t[k + 1], names[k],
								v[k], NPU_MAX_RANK,
								&cnt[k], err)
				      : (cnt[k] = 0, NPU_OK);
		else
			st = npu_op_ints_from_value(node, (size_t)k + 1, v[k],
						    NPU_MAX_RANK, &cnt[k], err);
		if (st)
			return st;
	}
	for (i = 0; i < rank; i++) {
		sa->start[i] = 0;
		sa->step[i] = 1;
		sa->len[i] = INT64_MAX;	/* end: the whole axis */
		sa->known[i] = true;
	}
	if (cnt[0] < 0 || cnt[1] < 0 || cnt[2] < 0 || cnt[3] < 0) {
		/* Not constant: the sliced axes (or all) are unknown. */
		for (i = 0; i < rank; i++)
			sa->known[i] = cnt[2] > 0;
		if (cnt[2] > 0)
			for (i = 0; i < cnt[2]; i++) {
				st = npu_op_axis(err, node, "axes", v[2][i], rank, &ax);
				if (st)
					return st;
				sa->known[ax] = false;
			}
		return NPU_OK;
	}
	if (cnt[0] != cnt[1] || (cnt[2] && cnt[2] != cnt[0]) ||
	    (cnt[3] && cnt[3] != cnt[0]))
		return npu_op_invalid(err, node,
				      "starts/ends/axes/steps lengths differ (%d/%d/%d/%d)",
				      cnt[0], cnt[1], cnt[2], cnt[3]);
	for (i = 0; i < cnt[0]; i++) {
		int64_t s = v[0][i], e = v[1][i], step = cnt[3] ? v[3][i] : 1;

		if (cnt[2]) {
			st = npu_op_axis(err, node, "axes", v[2][i], rank, &ax);
			if (st)
				return st;
		} else {
			if (i >= rank)
				return npu_op_invalid(err, node, "too many starts");
			ax = i;
		}
		if (seen[ax])
			return npu_op_invalid(err, node, "axis %d repeated", ax);
		seen[ax] = true;
		if (step == 0)
			return npu_op_invalid(err, node, "steps[%d] is 0", i);
		sa->start[ax] = s;
		sa->step[ax] = step;
		sa->len[ax] = e;	/* resolved against the dim later */
	}
	return NPU_OK;
}

/* Resolves start / end against dim (ONNX clamping), gives the length. */
static void npu_slice_resolve(int64_t dim, int64_t *start, int64_t end,
			      int64_t step, int64_t *len)
{
	int64_t s = *start, e = end;

	if (s < 0)
		s += dim;
	if (e < 0)
		e += dim;
	if (step > 0) {
		s = npu_clamp64(s, 0, dim);
		e = npu_clamp64(e, 0, dim);
		*len = e > s ? (e - s + step - 1) / step : 0;
	} else {
		s = npu_clamp64(s, -1, dim - 1);
		e = npu_clamp64(e, -1, dim - 1);
		*len = s > e ? (s - e - step - 1) / -step : 0;
	}
	*start = s;
}

static npu_status slice_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *in;
	struct npu_slice_args sa;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, node->opset < 10 ? 1 : 3,
				node->opset < 10 ? 1 : 5);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 10 ?
					NPU_OP_ATTRS("starts", "ends", "axes") :
					NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	st = npu_slice_read(node, NULL, in->rank, &sa, ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = in->rank;
	for (i = 0; i < in->rank; i++) {
		int64_t s = sa.start[i], len;

		if (!sa.known[i] || in->dims[i] < 0) {
			ctx->out_shapes[0].dims[i] = -1;
			continue;
		}
		npu_slice_resolve(in->dims[i], &s, sa.len[i], sa.step[i], &len);
		ctx->out_shapes[0].dims[i] = len;
	}
	return NPU_OK;
}

static npu_status slice_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_tensor *t[5] = { NULL };
	int64_t in_str[NPU_MAX_RANK], str[NPU_MAX_RANK], dims[NPU_MAX_RANK];
	int64_t off = 0;
	struct npu_slice_args sa;
	size_t es = npu_dtype_size(x->dtype), k;
	int i;
	npu_status st;

	for (k = 0; k < 5; k++)
		t[k] = npu_op_in(ctx, k);
	st = npu_slice_read(ctx->node, t, x->shape.rank, &sa, ctx->err);
	if (st)
		return st;
	npu_op_strides(&x->shape, in_str);
	for (i = 0; i < x->shape.rank; i++) {
		int64_t s = sa.start[i], len;

		npu_slice_resolve(x->shape.dims[i], &s, sa.len[i], sa.step[i],
				  &len);
		if (len != y->shape.dims[i])
			return npu_op_invalid(ctx->err, ctx->node,
					      "axis %d: slice has %lld elements, output %lld",
					      i, (long long)len,
					      (long long)y->shape.dims[i]);
		dims[i] = len;
		str[i] = in_str[i] * sa.step[i];
		if (len)
			off += s * in_str[i];
	}
	if (npu_op_numel(y))
		npu_op_strided_copy(y->data, (const char *)x->data + off * (int64_t)es,
				    x->shape.rank, dims, str, es);
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(slice_compute)

NPU_CPU_OP_DEF(slice) = {
	.op_type = "Slice", .domain = "", .since_version = 1,
	.max_version = 21, .infer = slice_infer, .compute = slice_compute_any,
	.strings = true,
};

/* ---- Gather ---- */

static npu_status gather_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype idx_types[] = {
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *data, *idx;
	struct npu_shape *out = &ctx->out_shapes[0];
	int axis, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, idx_types);
	if (st)
		return st;
	data = &node->inputs[0]->shape;
	idx = &node->inputs[1]->shape;
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", 0), data->rank,
			 &axis);
	if (st)
		return st;
	if (data->rank - 1 + idx->rank > NPU_MAX_RANK)
		return npu_op_unsupported(ctx->err, node, "output rank > %d",
					  NPU_MAX_RANK);
	out->rank = 0;
	for (i = 0; i < axis; i++)
		out->dims[out->rank++] = data->dims[i];
	for (i = 0; i < idx->rank; i++)
		out->dims[out->rank++] = idx->dims[i];
	for (i = axis + 1; i < data->rank; i++)
		out->dims[out->rank++] = data->dims[i];
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	return NPU_OK;
}

static npu_status gather_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *idx = ctx->inputs[1];
	struct npu_tensor *y = ctx->outputs[0];
	size_t es = npu_dtype_size(x->dtype);
	int axis = (int)npu_node_attr_int_or(ctx->node, "axis", 0);
	int64_t outer, inner, dim, n_idx, o, j;
	char *dst = y->data;

	if (axis < 0)
		axis += x->shape.rank;
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	inner = npu_op_dims_prod(&x->shape, axis + 1, x->shape.rank);
	dim = x->shape.dims[axis];
	n_idx = npu_op_numel(idx);
	for (j = 0; j < n_idx; j++) {
		int64_t k = npu_op_index_get(idx, (size_t)j);

		if (k < -dim || k >= dim)
			return npu_op_invalid(ctx->err, ctx->node,
					      "index %lld out of range for axis of %lld",
					      (long long)k, (long long)dim);
	}
	for (o = 0; o < outer; o++)
		for (j = 0; j < n_idx; j++) {
			int64_t k = npu_op_index_get(idx, (size_t)j);

			if (k < 0)
				k += dim;
			memcpy(dst, (const char *)x->data +
					    ((o * dim + k) * inner) * (int64_t)es,
			       (size_t)inner * es);
			dst += (size_t)inner * es;
		}
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(gather_compute)

NPU_CPU_OP_DEF(gather) = {
	.op_type = "Gather", .domain = "", .since_version = 1,
	.max_version = 21, .infer = gather_infer, .compute = gather_compute_any,
	.strings = true,
};

/* ---- Pad: attributes (< 11) or inputs pads, constant_value, axes (18) ---- */

enum npu_pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

static npu_status npu_pad_args(const struct npu_node *node,
			       const struct npu_tensor *const *t, int rank,
			       int64_t *begin, int64_t *end, bool *known,
			       enum npu_pad_mode *mode, struct npu_error *err)
{
	const char *m = npu_node_attr_string_or(node, "mode", "constant");
	int64_t pads[2 * NPU_MAX_RANK], axes[NPU_MAX_RANK];
	int n, n_axes = 0, i, ax;
	npu_status st;

	if (!strcmp(m, "constant"))
		*mode = PAD_CONSTANT;
	else if (!strcmp(m, "reflect"))
		*mode = PAD_REFLECT;
	else if (!strcmp(m, "edge"))
		*mode = PAD_EDGE;
	else
		return npu_op_unsupported(err, node, "mode '%s' is not supported", m);
	if (node->opset < 11)
		st = npu_op_ints_from_attr(node, "pads", pads, 2 * NPU_MAX_RANK,
					   &n, err);
	else if (t)
		st = npu_op_ints_from_tensor(node, t[1], "pads", pads,
					     2 * NPU_MAX_RANK, &n, err);
	else
		st = npu_op_ints_from_value(node, 1, pads, 2 * NPU_MAX_RANK,
					    &n, err);
	if (st)
		return st;
	if (node->opset >= 18 && npu_op_input(node, 3)) {
		if (t)
			st = npu_op_ints_from_tensor(node, t[3], "axes", axes,
						     NPU_MAX_RANK, &n_axes, err);
		else
			st = npu_op_ints_from_value(node, 3, axes, NPU_MAX_RANK,
						    &n_axes, err);
		if (st)
			return st;
	} else {
		for (i = 0; i < rank; i++)
			axes[i] = i;
		n_axes = rank;
	}
	*known = n >= 0 && n_axes >= 0;
	for (i = 0; i < rank; i++)
		begin[i] = end[i] = 0;
	if (!*known)
		return NPU_OK;
	if (n != 2 * n_axes)
		return npu_op_invalid(err, node,
				      "pads has %d values for %d axes", n, n_axes);
	for (i = 0; i < n_axes; i++) {
		st = npu_op_axis(err, node, "axes", axes[i], rank, &ax);
		if (st)
			return st;
		begin[ax] = pads[i];
		end[ax] = pads[i + n_axes];
	}
	return NPU_OK;
}

static npu_status pad_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	int64_t begin[NPU_MAX_RANK], end[NPU_MAX_RANK];
	const struct npu_shape *in;
	enum npu_pad_mode mode;
	bool known;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, node->opset < 11 ? 1 : 2,
				node->opset < 11 ? 1 : (node->opset < 18 ? 3 : 4));
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 11 ?
					NPU_OP_ATTRS("mode", "pads", "value") :
					NPU_OP_ATTRS("mode"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	if (node->opset < 11 && node->inputs[0]->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "type %s before opset 11",
					  npu_dtype_name(node->inputs[0]->dtype));
	if (npu_op_input(node, 2) &&
	    node->inputs[2]->dtype != node->inputs[0]->dtype)
		return npu_op_invalid(ctx->err, node,
				      "constant_value type differs from data");
	st = npu_pad_args(node, NULL, in->rank, begin, end, &known, &mode,
			  ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = in->rank;
	for (i = 0; i < in->rank; i++) {
		int64_t d = in->dims[i];

		if (!known || d < 0) {
			ctx->out_shapes[0].dims[i] = -1;
			continue;
		}
		d += begin[i] + end[i];
		if (d < 0)
			return npu_op_invalid(ctx->err, node,
					      "pads make axis %d negative", i);
		if (mode != PAD_CONSTANT && in->dims[i] == 0 && d > 0)
			return npu_op_invalid(ctx->err, node,
					      "cannot %s-pad empty axis %d",
					      mode == PAD_EDGE ? "edge" : "reflect", i);
		ctx->out_shapes[0].dims[i] = d;
	}
	return NPU_OK;
}

/* Source index of output position o on one axis; -1 for the pad value. */
static int64_t npu_pad_src(int64_t o, int64_t begin, int64_t dim,
			   enum npu_pad_mode mode)
{
	int64_t s = o - begin;

	if (s >= 0 && s < dim)
		return s;
	if (mode == PAD_CONSTANT)
		return -1;
	if (mode == PAD_EDGE)
		return s < 0 ? 0 : dim - 1;
	if (dim == 1)
		return 0;
	/* Reflect without repeating the edge, period 2 * (dim - 1). */
	{
		int64_t p = 2 * (dim - 1);

		s %= p;
		if (s < 0)
			s += p;
		return s < dim ? s : p - s;
	}
}

static npu_status pad_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_tensor *t[4] = { NULL };
	int64_t begin[NPU_MAX_RANK], end[NPU_MAX_RANK], in_str[NPU_MAX_RANK];
	int64_t *map[NPU_MAX_RANK] = { NULL }, rows, r, len, total = 0;
	size_t es = npu_dtype_size(x->dtype), k;
	unsigned char value[16] = { 0 };
	enum npu_pad_mode mode;
	int rank = x->shape.rank, d;
	int64_t *buf;
	bool known;
	char *dst = y->data;
	npu_status st;

	for (k = 0; k < 4; k++)
		t[k] = npu_op_in(ctx, k);
	st = npu_pad_args(node, t, rank, begin, end, &known, &mode, ctx->err);
	if (st)
		return st;
	if (node->opset < 11) {
		float v = npu_node_attr_float_or(node, "value", 0.0f);

		memcpy(value, &v, sizeof(v));
	} else if (t[2] && npu_op_numel(t[2]) == 1) {
		memcpy(value, t[2]->data, es);
	}
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	if (rank == 0)
		return npu_copy_compute(ctx);
	for (d = 0; d < rank; d++)
		total += y->shape.dims[d];
	buf = malloc((size_t)total * sizeof(*buf));
	if (!buf)
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	total = 0;
	for (d = 0; d < rank; d++) {
		int64_t o;

		if (x->shape.dims[d] + begin[d] + end[d] != y->shape.dims[d]) {
			free(buf);
			return npu_op_invalid(ctx->err, node,
					      "axis %d: output dim does not match pads", d);
		}
		map[d] = buf + total;
		for (o = 0; o < y->shape.dims[d]; o++)
			map[d][o] = npu_pad_src(o, begin[d], x->shape.dims[d], mode);
		total += y->shape.dims[d];
	}
	npu_op_strides(&x->shape, in_str);
	len = y->shape.dims[rank - 1];
	rows = npu_op_numel(y) / len;
	for (r = 0; r < rows; r++) {
		int64_t rem = r, off = 0, i;
		bool pad_row = false;

		for (d = rank - 2; d >= 0; d--) {
			int64_t s = map[d][rem % y->shape.dims[d]];

			rem /= y->shape.dims[d];
			if (s < 0)
				pad_row = true;
			else
				off += s * in_str[d];
		}
		for (i = 0; i < len; i++) {
			int64_t s = map[rank - 1][i];

			if (pad_row || s < 0)
				memcpy(dst, value, es);
			else
				memcpy(dst, (const char *)x->data + (off + s) * (int64_t)es, es);
			dst += es;
		}
	}
	free(buf);
	return NPU_OK;
}

NPU_CPU_OP_DEF(pad) = {
	.op_type = "Pad", .domain = "", .since_version = 2,
	.max_version = 21, .infer = pad_infer, .compute = pad_compute,
};

/* ---- Shape (start / end from 15) and Size ---- */

static void npu_shape_range(const struct npu_node *node, int rank,
			    int64_t *start, int64_t *end)
{
	int64_t s = npu_node_attr_int_or(node, "start", 0);
	int64_t e = npu_node_attr_int_or(node, "end", rank);

	if (s < 0)
		s += rank;
	if (e < 0)
		e += rank;
	*start = npu_clamp64(s, 0, rank);
	*end = npu_clamp64(e, 0, rank);
	if (*end < *start)
		*end = *start;
}

static npu_status shape_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	int64_t s, e;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 15 ? NPU_OP_ATTRS(NULL) :
					NPU_OP_ATTRS("start", "end"));
	if (st)
		return st;
	npu_shape_range(node, node->inputs[0]->shape.rank, &s, &e);
	ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	ctx->out_shapes[0].rank = 1;
	ctx->out_shapes[0].dims[0] = e - s;
	return NPU_OK;
}

static npu_status shape_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	int64_t *y = ctx->outputs[0]->data, s, e, i;

	npu_shape_range(ctx->node, x->shape.rank, &s, &e);
	for (i = s; i < e; i++)
		y[i - s] = x->shape.dims[i];
	return NPU_OK;
}

NPU_CPU_OP_DEF(shape) = {
	.op_type = "Shape", .domain = "", .since_version = 1,
	.max_version = 21, .infer = shape_infer, .compute = shape_compute,
	.strings = true,	/* reads the shape only */
};

static npu_status size_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = npu_op_check_arity(ctx, 1, 1);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	ctx->out_shapes[0].rank = 0;
	return NPU_OK;
}

static npu_status size_compute(struct npu_op_ctx *ctx)
{
	*(int64_t *)ctx->outputs[0]->data = npu_op_numel(ctx->inputs[0]);
	return NPU_OK;
}

NPU_CPU_OP_DEF(size) = {
	.op_type = "Size", .domain = "", .since_version = 1,
	.max_version = 21, .infer = size_infer, .compute = size_compute,
	.strings = true,	/* reads the shape only */
};

/* ---- Constant ---- */

static npu_status constant_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_attr *a;
	struct npu_shape *out = &ctx->out_shapes[0];
	npu_status st;

	st = npu_op_check_arity(ctx, 0, 0);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("value", "value_float",
							 "value_floats", "value_int",
							 "value_ints"));
	if (st)
		return st;
	if (node->num_attrs != 1)
		return npu_op_invalid(ctx->err, node,
				      "needs exactly one value attribute, has %zu",
				      node->num_attrs);
	a = &node->attrs[0];
	out->rank = 0;
	if (!strcmp(a->name, "value")) {
		if (a->type != NPU_ATTR_TENSOR || !a->t)
			return npu_op_invalid(ctx->err, node, "'value' is not a tensor");
		if (!npu_dtype_size(a->t->dtype))
			return npu_op_unsupported(ctx->err, node,
						  "'value' has type %s, not supported",
						  npu_dtype_name(a->t->dtype));
		ctx->out_dtypes[0] = a->t->dtype;
		*out = a->t->shape;
	} else if (!strcmp(a->name, "value_float")) {
		ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	} else if (!strcmp(a->name, "value_int")) {
		ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	} else {
		ctx->out_dtypes[0] = !strcmp(a->name, "value_floats") ?
				     NPU_DTYPE_FLOAT : NPU_DTYPE_INT64;
		out->rank = 1;
		out->dims[0] = (int64_t)a->count;
	}
	return NPU_OK;
}

static npu_status constant_compute(struct npu_op_ctx *ctx)
{
	const struct npu_attr *a = &ctx->node->attrs[0];
	struct npu_tensor *y = ctx->outputs[0];
	size_t i;

	if (!strcmp(a->name, "value")) {
		if (a->t->nbytes && a->t->data)
			memcpy(y->data, a->t->data, npu_tensor_bytes(y));
	} else if (!strcmp(a->name, "value_float")) {
		*(float *)y->data = a->f;
	} else if (!strcmp(a->name, "value_int")) {
		*(int64_t *)y->data = a->i;
	} else if (!strcmp(a->name, "value_floats")) {
		for (i = 0; i < a->count; i++)
			((float *)y->data)[i] = a->floats[i];
	} else {
		for (i = 0; i < a->count; i++)
			((int64_t *)y->data)[i] = a->ints[i];
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(constant) = {
	.op_type = "Constant", .domain = "", .since_version = 1,
	.max_version = 21, .infer = constant_infer, .compute = constant_compute,
};

/* ---- ConstantOfShape ---- */

static npu_status constant_of_shape_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_attr *a = npu_node_attr(node, "value");
	int64_t dims[NPU_MAX_RANK];
	int n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("value"));
	if (!st)
		st = npu_op_ints_from_value(node, 0, dims, NPU_MAX_RANK, &n,
					    ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	if (a) {
		if (a->type != NPU_ATTR_TENSOR || !a->t ||
		    npu_shape_numel(&a->t->shape) != 1 ||
		    !npu_dtype_size(a->t->dtype))
			return npu_op_unsupported(ctx->err, node,
						  "'value' must be a one-element tensor of a fixed-size type");
		ctx->out_dtypes[0] = a->t->dtype;
	}
	if (n < 0) {
		const struct npu_shape *ss = &node->inputs[0]->shape;

		if (ss->rank != 1 || ss->dims[0] < 0 || ss->dims[0] > NPU_MAX_RANK)
			return npu_op_unsupported(ctx->err, node,
						  "shape input is not constant and its length is unknown");
		n = (int)ss->dims[0];
		for (i = 0; i < n; i++)
			dims[i] = -1;
	}
	ctx->out_shapes[0].rank = n;
	for (i = 0; i < n; i++) {
		if (dims[i] < -1)
			return npu_op_invalid(ctx->err, node, "shape[%d] = %lld",
					      i, (long long)dims[i]);
		ctx->out_shapes[0].dims[i] = dims[i];
	}
	return NPU_OK;
}

static npu_status constant_of_shape_compute(struct npu_op_ctx *ctx)
{
	const struct npu_attr *a = npu_node_attr(ctx->node, "value");
	struct npu_tensor *y = ctx->outputs[0];
	size_t es = npu_dtype_size(y->dtype);
	int64_t n = npu_op_numel(y), i;
	unsigned char v[16] = { 0 };

	if (a && a->t->data)
		memcpy(v, a->t->data, es);
	for (i = 0; i < n; i++)
		memcpy((char *)y->data + i * (int64_t)es, v, es);
	return NPU_OK;
}

NPU_CPU_OP_DEF(constant_of_shape) = {
	.op_type = "ConstantOfShape", .domain = "", .since_version = 9,
	.max_version = 21, .infer = constant_of_shape_infer,
	.compute = constant_of_shape_compute,
};

/* ---- Expand ---- */

static npu_status expand_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	struct npu_shape target;
	int64_t dims[NPU_MAX_RANK];
	int n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st)
		st = npu_op_ints_from_value(node, 1, dims, NPU_MAX_RANK, &n,
					    ctx->err);
	if (st)
		return st;
	if (n < 0) {
		const struct npu_shape *ss = &node->inputs[1]->shape;

		if (ss->rank != 1 || ss->dims[0] < 0 || ss->dims[0] > NPU_MAX_RANK)
			return npu_op_unsupported(ctx->err, node,
						  "shape input is not constant and its length is unknown");
		n = (int)ss->dims[0];
		for (i = 0; i < n; i++)
			dims[i] = -1;
	}
	target.rank = n;
	for (i = 0; i < n; i++)
		target.dims[i] = dims[i];
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	return npu_op_broadcast_shape(ctx, &node->inputs[0]->shape, &target,
				      &ctx->out_shapes[0]);
}

static npu_status expand_compute(struct npu_op_ctx *ctx)
{
	npu_op_broadcast_copy(ctx->inputs[0], ctx->outputs[0]);
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(expand_compute)

NPU_CPU_OP_DEF(expand) = {
	.op_type = "Expand", .domain = "", .since_version = 8,
	.max_version = 21, .infer = expand_infer, .compute = expand_compute_any,
	.strings = true,
};

/*
 * ---- Dropout: identity with the mask all true ----
 * Inference, or training_mode = true with ratio 0 (which drops nothing).
 * Training with a non-zero ratio drops at random (op_random.c).
 */

/* ratio: the input (12), else the attribute, default 0.5; -1 unknown. */
static float npu_dropout_ratio(const struct npu_node *node,
			       const struct npu_tensor *t)
{
	if (node->opset < 12)
		return npu_node_attr_float_or(node, "ratio", 0.5f);
	if (!t)
		return npu_op_input(node, 1) ? -1.0f : 0.5f;
	return (float)npu_op_tensor_get(t, 0);
}

static npu_status dropout_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *train = npu_op_input(node, 2);
	const struct npu_value *ratio = npu_op_input(node, 1);
	npu_status st;

	st = npu_op_check_arity(ctx, 1, node->opset < 12 ? 1 : 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("ratio", "seed", "is_test"));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (st)
		return st;
	if (node->opset < 7)
		return npu_op_unsupported(ctx->err, node, "opset %d", node->opset);
	if (train && train->constant && npu_shape_numel(&train->constant->shape) > 0 &&
	    ((const uint8_t *)train->constant->data)[0]) {
		float r = npu_dropout_ratio(node, ratio ? ratio->constant : NULL);

		if (r != -1.0f && !(r >= 0 && r < 1))
			return npu_op_invalid(ctx->err, node,
					      "ratio %g is outside [0, 1) with training_mode = true", r);
	}
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	if (node->num_outputs > 1) {
		ctx->out_dtypes[1] = NPU_DTYPE_BOOL;
		ctx->out_shapes[1] = node->inputs[0]->shape;
	}
	return NPU_OK;
}

static npu_status dropout_compute(struct npu_op_ctx *ctx)
{
	struct npu_tensor *mask = npu_op_out(ctx, 1);
	const struct npu_tensor *train = npu_op_in(ctx, 2);

	if (train && npu_op_numel(train) &&
	    ((const uint8_t *)train->data)[0]) {
		float r = npu_dropout_ratio(ctx->node, npu_op_in(ctx, 1));

		if (r != 0)
			return npu_op_dropout_train(ctx, r);
	}
	if (mask && npu_op_numel(mask))
		memset(mask->data, 1, (size_t)npu_op_numel(mask));
	return npu_copy_compute(ctx);
}

NPU_CPU_OP_DEF(dropout) = {
	.op_type = "Dropout", .domain = "", .since_version = 7,
	.max_version = 21, .infer = dropout_infer, .compute = dropout_compute,
};

/* ---- Tile ---- */

static npu_status tile_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *in;
	int64_t reps[NPU_MAX_RANK];
	int n, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_check_sized(ctx, 0);
	if (!st)
		st = npu_op_ints_from_value(node, 1, reps, NPU_MAX_RANK, &n,
					    ctx->err);
	if (st)
		return st;
	in = &node->inputs[0]->shape;
	if (n >= 0 && n != in->rank)
		return npu_op_invalid(ctx->err, node,
				      "repeats has %d values for rank %d", n,
				      in->rank);
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = in->rank;
	for (i = 0; i < in->rank; i++) {
		if (n >= 0 && reps[i] < 0)
			return npu_op_invalid(ctx->err, node, "repeats[%d] = %lld",
					      i, (long long)reps[i]);
		ctx->out_shapes[0].dims[i] = n < 0 || in->dims[i] < 0 ? -1 :
					     in->dims[i] * reps[i];
	}
	return NPU_OK;
}

static npu_status tile_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	size_t es = npu_dtype_size(x->dtype);
	int64_t in_str[NPU_MAX_RANK], rows, r, len, in_len, k;
	int rank = x->shape.rank, d;
	char *dst = y->data;

	if (npu_op_numel(y) == 0)
		return NPU_OK;
	if (rank == 0) {
		memcpy(dst, x->data, es);
		return NPU_OK;
	}
	npu_op_strides(&x->shape, in_str);
	len = y->shape.dims[rank - 1];
	in_len = x->shape.dims[rank - 1];
	rows = npu_op_numel(y) / len;
	for (r = 0; r < rows; r++) {
		int64_t rem = r, off = 0;

		for (d = rank - 2; d >= 0; d--) {
			off += (rem % y->shape.dims[d]) % x->shape.dims[d] * in_str[d];
			rem /= y->shape.dims[d];
		}
		for (k = 0; k < len; k += in_len) {
			memcpy(dst, (const char *)x->data + off * (int64_t)es,
			       (size_t)in_len * es);
			dst += (size_t)in_len * es;
		}
	}
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(tile_compute)

NPU_CPU_OP_DEF(tile) = {
	.op_type = "Tile", .domain = "", .since_version = 6,
	.max_version = 21, .infer = tile_infer, .compute = tile_compute_any,
	.strings = true,
};
