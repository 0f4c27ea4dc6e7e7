// SPDX-License-Identifier: MIT
/*
 * The schemas of op_shape.c's ops: Reshape, Flatten, Transpose, Concat, Split, Slice,
 * Squeeze, Unsqueeze, Gather, Pad, Shape, Size, Constant, ConstantOfShape, Expand,
 * Dropout, Tile.
 */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/shape.h"

#include <stdlib.h>
#include <string.h>

npu_status npu_check_sized(const struct npu_infer_ctx *ctx, size_t i)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);

	/* Strings reach only ops that move them by index (npu_infer.c checks). */
	if (v && !npu_dtype_size(v->dtype) && v->dtype != NPU_DTYPE_STRING)
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input %zu '%s' has type %s, not supported",
					  i, v->name, npu_dtype_name(v->dtype));
	return NPU_OK;
}

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

int64_t npu_shape_clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : (v > hi ? hi : v);
}

npu_status npu_pad_args(const struct npu_node *node,
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

void npu_shape_range(const struct npu_node *node, int rank,
		     int64_t *start, int64_t *end)
{
	int64_t s = npu_node_attr_int_or(node, "start", 0);
	int64_t e = npu_node_attr_int_or(node, "end", rank);

	if (s < 0)
		s += rank;
	if (e < 0)
		e += rank;
	*start = npu_shape_clamp64(s, 0, rank);
	*end = npu_shape_clamp64(e, 0, rank);
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

/* ratio: the input (12), else the attribute, default 0.5; -1 unknown. */
float npu_dropout_ratio(const struct npu_node *node,
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

NPU_OP_SCHEMA_DEF(flatten) = {
	.op_type = "Flatten", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = flatten_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(squeeze) = {
	.op_type = "Squeeze", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = squeeze_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(unsqueeze) = {
	.op_type = "Unsqueeze", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = unsqueeze_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(pad) = {
	.op_type = "Pad", .domain = "",
	.since_version = 2, .max_version = 21,
	.infer = pad_infer,
};

NPU_OP_SCHEMA_DEF(shape) = {
	.op_type = "Shape", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = shape_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(size) = {
	.op_type = "Size", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = size_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(constant) = {
	.op_type = "Constant", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = constant_infer,
};

NPU_OP_SCHEMA_DEF(constant_of_shape) = {
	.op_type = "ConstantOfShape", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = constant_of_shape_infer,
};

NPU_OP_SCHEMA_DEF(dropout) = {
	.op_type = "Dropout", .domain = "",
	.since_version = 7, .max_version = 21,
	.infer = dropout_infer,
};


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

void npu_transpose_perm(const struct npu_node *node, int rank,
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

/* Reads the four lists from attributes, constant values or tensors. */
npu_status npu_slice_read(const struct npu_node *node,
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
void npu_slice_resolve(int64_t dim, int64_t *start, int64_t end,
		       int64_t step, int64_t *len)
{
	int64_t s = *start, e = end;

	if (s < 0)
		s += dim;
	if (e < 0)
		e += dim;
	if (step > 0) {
		s = npu_shape_clamp64(s, 0, dim);
		e = npu_shape_clamp64(e, 0, dim);
		*len = e > s ? (e - s + step - 1) / step : 0;
	} else {
		s = npu_shape_clamp64(s, -1, dim - 1);
		e = npu_shape_clamp64(e, -1, dim - 1);
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

NPU_OP_SCHEMA_DEF(reshape) = {
	.op_type = "Reshape", .domain = "",
	.since_version = 5, .max_version = 21,
	.infer = reshape_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(transpose) = {
	.op_type = "Transpose", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = transpose_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(concat) = {
	.op_type = "Concat", .domain = "",
	.since_version = 4, .max_version = 21,
	.infer = concat_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(split) = {
	.op_type = "Split", .domain = "",
	.since_version = 2, .max_version = 21,
	.infer = split_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(slice) = {
	.op_type = "Slice", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = slice_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(gather) = {
	.op_type = "Gather", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = gather_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(expand) = {
	.op_type = "Expand", .domain = "",
	.since_version = 8, .max_version = 21,
	.infer = expand_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(tile) = {
	.op_type = "Tile", .domain = "",
	.since_version = 6, .max_version = 21,
	.infer = tile_infer,
	.strings = true,
};
