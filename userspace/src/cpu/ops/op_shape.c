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
#include "graph/schemas/shape.h"
#include "cpu/ops/op_random.h"
#include "cpu/ops/op_string.h"

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

NPU_STRINGS_BY_INDEX(npu_copy_compute)

NPU_CPU_OP_DEF(reshape) = {
	.op_type = "Reshape",
	.domain = "",
	.compute = npu_copy_compute_any,
};

/* ---- Flatten ---- */

NPU_CPU_OP_DEF(flatten) = {
	.op_type = "Flatten",
	.domain = "",
	.compute = npu_copy_compute_any,
};

/* ---- Squeeze / Unsqueeze: axes attribute (< 13) or input ---- */

NPU_CPU_OP_DEF(squeeze) = {
	.op_type = "Squeeze",
	.domain = "",
	.compute = npu_copy_compute_any,
};

NPU_CPU_OP_DEF(unsqueeze) = {
	.op_type = "Unsqueeze",
	.domain = "",
	.compute = npu_copy_compute_any,
};

/* ---- Transpose ---- */

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
	.op_type = "Transpose",
	.domain = "",
	.compute = transpose_compute_any,
};

/* ---- Concat ---- */

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
	.op_type = "Concat",
	.domain = "",
	.compute = concat_compute_any,
};

/* ---- Split: split attribute (< 13), input (>= 13), num_outputs (>= 18) ---- */


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
	.op_type = "Split",
	.domain = "",
	.compute = split_compute_any,
};

/* ---- Slice: attributes (< 10) or inputs starts, ends, axes, steps ---- */

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
	.op_type = "Slice",
	.domain = "",
	.compute = slice_compute_any,
};

/* ---- Gather ---- */

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
	.op_type = "Gather",
	.domain = "",
	.compute = gather_compute_any,
};

/* ---- Pad: attributes (< 11) or inputs pads, constant_value, axes (18) ---- */

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
	.op_type = "Pad",
	.domain = "",
	.compute = pad_compute,
};

/* ---- Shape (start / end from 15) and Size ---- */

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
	.op_type = "Shape",
	.domain = "",
	.compute = shape_compute,
};

static npu_status size_compute(struct npu_op_ctx *ctx)
{
	*(int64_t *)ctx->outputs[0]->data = npu_op_numel(ctx->inputs[0]);
	return NPU_OK;
}

NPU_CPU_OP_DEF(size) = {
	.op_type = "Size",
	.domain = "",
	.compute = size_compute,
};

/* ---- Constant ---- */

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
	.op_type = "Constant",
	.domain = "",
	.compute = constant_compute,
};

/* ---- ConstantOfShape ---- */

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
	.op_type = "ConstantOfShape",
	.domain = "",
	.compute = constant_of_shape_compute,
};

/* ---- Expand ---- */

static npu_status expand_compute(struct npu_op_ctx *ctx)
{
	npu_op_broadcast_copy(ctx->inputs[0], ctx->outputs[0]);
	return NPU_OK;
}

NPU_STRINGS_BY_INDEX(expand_compute)

NPU_CPU_OP_DEF(expand) = {
	.op_type = "Expand",
	.domain = "",
	.compute = expand_compute_any,
};

/*
 * ---- Dropout: identity with the mask all true ----
 * Inference, or training_mode = true with ratio 0 (which drops nothing).
 * Training with a non-zero ratio drops at random (op_random.c).
 */

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
	.op_type = "Dropout",
	.domain = "",
	.compute = dropout_compute,
};

/* ---- Tile ---- */

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
	.op_type = "Tile",
	.domain = "",
	.compute = tile_compute_any,
};
