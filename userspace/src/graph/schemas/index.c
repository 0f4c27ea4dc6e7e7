// SPDX-License-Identifier: MIT
/* The schemas of op_index.c's ops: Compress, GatherElements, GatherND, NonZero, Scatter, ScatterElements, ScatterND. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/index.h"

static const enum npu_dtype npu_index_types[] = {
	NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
};

#include <string.h>

static npu_status npu_index_check_sized(const struct npu_infer_ctx *ctx,
					size_t i)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);

	if (v && !npu_dtype_size(v->dtype))
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input %zu '%s' has type %s, not supported",
					  i, v->name, npu_dtype_name(v->dtype));
	return NPU_OK;
}

npu_status npu_scatter_reduction(const struct npu_node *node,
				 enum npu_scatter_red *r,
				 struct npu_error *err)
{
	const char *s = npu_node_attr_string_or(node, "reduction", "none");

	if (!strcmp(s, "none"))
		*r = SCAT_NONE;
	else if (!strcmp(s, "add"))
		*r = SCAT_ADD;
	else if (!strcmp(s, "mul"))
		*r = SCAT_MUL;
	else if (!strcmp(s, "max"))
		*r = SCAT_MAX;
	else if (!strcmp(s, "min"))
		*r = SCAT_MIN;
	else
		return npu_op_invalid(err, node,
				      "attribute 'reduction' = '%s' is not none, add, mul, max or min",
				      s);
	return NPU_OK;
}

static bool npu_scatter_red_type_ok(enum npu_dtype dt)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: case NPU_DTYPE_DOUBLE: case NPU_DTYPE_INT8:
	case NPU_DTYPE_UINT8: case NPU_DTYPE_INT16: case NPU_DTYPE_UINT16:
	case NPU_DTYPE_INT32: case NPU_DTYPE_UINT32: case NPU_DTYPE_INT64:
	case NPU_DTYPE_UINT64:
		return true;
	default:
		return false;
	}
}

/*
 * Shared shape rules: indices (and updates) have data's rank, and every
 * dim of indices is at most data's (it addresses data with the same
 * coordinates, the axis replaced by the index).
 */
static npu_status npu_elements_infer(struct npu_infer_ctx *ctx, bool scatter)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *data, *idx, *upd = NULL;
	enum npu_scatter_red red = SCAT_NONE;
	int axis, i;
	npu_status st;

	st = npu_op_check_arity(ctx, scatter ? 3 : 2, scatter ? 3 : 2);
	if (!st)
		st = scatter && node->opset >= 16 &&
		     strcmp(node->op_type, "Scatter") ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "reduction")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_index_check_sized(ctx, 0);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, npu_index_types);
	if (!st && scatter)
		st = npu_scatter_reduction(node, &red, ctx->err);
	if (st)
		return st;
	data = node->inputs[0];
	idx = node->inputs[1];
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", 0), data->shape.rank,
			 &axis);
	if (st)
		return st;
	if (idx->shape.rank != data->shape.rank)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (indices) has rank %d, data has %d",
				      idx->name, idx->shape.rank, data->shape.rank);
	for (i = 0; i < idx->shape.rank; i++)
		if (i != axis && idx->shape.dims[i] >= 0 &&
		    data->shape.dims[i] >= 0 &&
		    idx->shape.dims[i] > data->shape.dims[i])
			return npu_op_invalid(ctx->err, node,
					      "input 1 '%s' (indices) dim %d is %lld, larger than data's %lld",
					      idx->name, i,
					      (long long)idx->shape.dims[i],
					      (long long)data->shape.dims[i]);
	if (scatter) {
		upd = node->inputs[2];
		if (upd->dtype != data->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input 2 '%s' (updates) has type %s, data %s",
					      upd->name, npu_dtype_name(upd->dtype),
					      npu_dtype_name(data->dtype));
		if (upd->shape.rank != idx->shape.rank)
			return npu_op_invalid(ctx->err, node,
					      "input 2 '%s' (updates) has rank %d, indices %d",
					      upd->name, upd->shape.rank,
					      idx->shape.rank);
		for (i = 0; i < idx->shape.rank; i++)
			if (upd->shape.dims[i] >= 0 && idx->shape.dims[i] >= 0 &&
			    upd->shape.dims[i] != idx->shape.dims[i])
				return npu_op_invalid(ctx->err, node,
						      "input 2 '%s' (updates) dim %d is %lld, indices have %lld",
						      upd->name, i,
						      (long long)upd->shape.dims[i],
						      (long long)idx->shape.dims[i]);
		if (red != SCAT_NONE && !npu_scatter_red_type_ok(data->dtype))
			return npu_op_unsupported(ctx->err, node,
						  "reduction on type %s is not supported",
						  npu_dtype_name(data->dtype));
	}
	ctx->out_dtypes[0] = data->dtype;
	ctx->out_shapes[0] = scatter ? data->shape : idx->shape;
	return NPU_OK;
}

static npu_status gather_elements_infer(struct npu_infer_ctx *ctx)
{
	return npu_elements_infer(ctx, false);
}

static npu_status scatter_elements_infer(struct npu_infer_ctx *ctx)
{
	return npu_elements_infer(ctx, true);
}

/*
 * indices (..., q) address data's first batch_dims + q dims; each index
 * tuple selects a slice of data's remaining dims ('slice' elements).
 */
static npu_status npu_nd_infer(struct npu_infer_ctx *ctx, bool scatter)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *data, *idx;
	const struct npu_shape *ds, *is;
	struct npu_shape *out = &ctx->out_shapes[0];
	enum npu_scatter_red red = SCAT_NONE;
	int64_t b, q;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, scatter ? 3 : 2, scatter ? 3 : 2);
	if (!st)
		st = !scatter ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("batch_dims")) :
		     node->opset >= 16 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("reduction")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_index_check_sized(ctx, 0);
	if (!st && (node->inputs[1]->dtype != NPU_DTYPE_INT64))
		st = npu_op_invalid(ctx->err, node,
				    "input 1 '%s' (indices) has type %s, expected int64",
				    node->inputs[1]->name,
				    npu_dtype_name(node->inputs[1]->dtype));
	if (!st && scatter)
		st = npu_scatter_reduction(node, &red, ctx->err);
	if (st)
		return st;
	data = node->inputs[0];
	idx = node->inputs[1];
	ds = &data->shape;
	is = &idx->shape;
	b = scatter ? 0 : npu_node_attr_int_or(node, "batch_dims", 0);
	if (is->rank < 1 || ds->rank < 1)
		return npu_op_invalid(ctx->err, node,
				      "data and indices must have rank >= 1");
	if (b < 0 || b >= is->rank || b >= ds->rank)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'batch_dims' = %lld out of range for ranks %d and %d",
				      (long long)b, ds->rank, is->rank);
	q = is->dims[is->rank - 1];
	if (q < 0)
		return npu_op_unsupported(ctx->err, node,
					  "the last dim of input 1 '%s' (indices) is not known",
					  idx->name);
	if (b + q > ds->rank)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (indices) last dim %lld + batch_dims %lld exceeds data's rank %d",
				      idx->name, (long long)q, (long long)b,
				      ds->rank);
	for (i = 0; i < b; i++)
		if (is->dims[i] >= 0 && ds->dims[i] >= 0 &&
		    is->dims[i] != ds->dims[i])
			return npu_op_invalid(ctx->err, node,
					      "batch dim %d differs: data %lld, indices %lld",
					      i, (long long)ds->dims[i],
					      (long long)is->dims[i]);
	if (scatter) {
		const struct npu_value *upd = node->inputs[2];
		int ur = is->rank - 1 + ds->rank - (int)q;

		if (upd->dtype != data->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input 2 '%s' (updates) has type %s, data %s",
					      upd->name, npu_dtype_name(upd->dtype),
					      npu_dtype_name(data->dtype));
		if (upd->shape.rank != ur)
			return npu_op_invalid(ctx->err, node,
					      "input 2 '%s' (updates) has rank %d, expected %d",
					      upd->name, upd->shape.rank, ur);
		for (i = 0; i < ur; i++) {
			int64_t want = i < is->rank - 1 ? is->dims[i] :
				       ds->dims[q + i - (is->rank - 1)];

			if (want >= 0 && upd->shape.dims[i] >= 0 &&
			    upd->shape.dims[i] != want)
				return npu_op_invalid(ctx->err, node,
						      "input 2 '%s' (updates) dim %d is %lld, expected %lld",
						      upd->name, i,
						      (long long)upd->shape.dims[i],
						      (long long)want);
		}
		if (red != SCAT_NONE && !npu_scatter_red_type_ok(data->dtype))
			return npu_op_unsupported(ctx->err, node,
						  "reduction on type %s is not supported",
						  npu_dtype_name(data->dtype));
		*out = *ds;
	} else {
		if (is->rank - 1 + ds->rank - q - b > NPU_MAX_RANK)
			return npu_op_unsupported(ctx->err, node,
						  "output rank > %d", NPU_MAX_RANK);
		out->rank = 0;
		for (i = 0; i < is->rank - 1; i++)
			out->dims[out->rank++] = is->dims[i];
		for (i = (int)(b + q); i < ds->rank; i++)
			out->dims[out->rank++] = ds->dims[i];
	}
	ctx->out_dtypes[0] = data->dtype;
	return NPU_OK;
}

static npu_status gather_nd_infer(struct npu_infer_ctx *ctx)
{
	return npu_nd_infer(ctx, false);
}

static npu_status scatter_nd_infer(struct npu_infer_ctx *ctx)
{
	return npu_nd_infer(ctx, true);
}

/* Kept slices: the true entries among the first min(len, n) of cond. */
int64_t npu_compress_count(const struct npu_tensor *cond, int64_t n)
{
	int64_t len = npu_op_numel(cond), i, c = 0;
	const uint8_t *cv = cond->data;

	for (i = 0; i < len && i < n; i++)
		c += cv[i] != 0;
	return c;
}

static npu_status compress_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype cond_types[] = {
		NPU_DTYPE_BOOL, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *cond;
	struct npu_shape *out = &ctx->out_shapes[0];
	const struct npu_attr *ax = npu_node_attr(node, "axis");
	int axis = 0;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_index_check_sized(ctx, 0);
	if (!st)
		st = npu_op_check_dtype(ctx, 1, cond_types);
	if (st)
		return st;
	x = node->inputs[0];
	cond = node->inputs[1];
	if (cond->shape.rank != 1)
		return npu_op_invalid(ctx->err, node,
				      "input 1 '%s' (condition) must be 1-D, has rank %d",
				      cond->name, cond->shape.rank);
	if (ax) {
		st = npu_op_axis(ctx->err, node, "axis", ax->i, x->shape.rank,
				 &axis);
		if (st)
			return st;
		*out = x->shape;
		out->dims[axis] = -1;
		if (cond->constant && x->shape.dims[axis] >= 0)
			out->dims[axis] = npu_compress_count(cond->constant,
							     x->shape.dims[axis]);
	} else {
		int64_t n = npu_shape_numel(&x->shape);

		out->rank = 1;
		out->dims[0] = cond->constant && n >= 0 ?
			       npu_compress_count(cond->constant, n) : -1;
	}
	ctx->out_dtypes[0] = x->dtype;
	return NPU_OK;
}

bool npu_elem_nonzero(const void *p, enum npu_dtype dt, int64_t i)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: return ((const float *)p)[i] != 0;
	case NPU_DTYPE_DOUBLE: return ((const double *)p)[i] != 0;
	case NPU_DTYPE_FLOAT16:
		return (((const uint16_t *)p)[i] & 0x7fff) != 0;
	default: {
		/* Integers and bool: any set byte. */
		size_t es = npu_dtype_size(dt), b;
		const uint8_t *e = (const uint8_t *)p + (size_t)i * es;

		for (b = 0; b < es; b++)
			if (e[b])
				return true;
		return false;
	}
	}
}

int64_t npu_nonzero_count(const struct npu_tensor *x)
{
	int64_t n = npu_op_numel(x), i, c = 0;

	for (i = 0; i < n; i++)
		c += npu_elem_nonzero(x->data, x->dtype, i);
	return c;
}

static npu_status non_zero_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_index_check_sized(ctx, 0);
	if (st)
		return st;
	x = node->inputs[0];
	ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	ctx->out_shapes[0].rank = 2;
	ctx->out_shapes[0].dims[0] = x->shape.rank;
	ctx->out_shapes[0].dims[1] = x->constant ?
				     npu_nonzero_count(x->constant) : -1;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(gather_elements) = {
	.op_type = "GatherElements", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = gather_elements_infer,
};

NPU_OP_SCHEMA_DEF(scatter_elements) = {
	.op_type = "ScatterElements", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = scatter_elements_infer,
};

NPU_OP_SCHEMA_DEF(scatter) = {
	.op_type = "Scatter", .domain = "",
	.since_version = 9, .max_version = 10,
	.infer = scatter_elements_infer,
};

NPU_OP_SCHEMA_DEF(gather_nd) = {
	.op_type = "GatherND", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = gather_nd_infer,
};

NPU_OP_SCHEMA_DEF(scatter_nd) = {
	.op_type = "ScatterND", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = scatter_nd_infer,
};

NPU_OP_SCHEMA_DEF(compress) = {
	.op_type = "Compress", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = compress_infer,
};

NPU_OP_SCHEMA_DEF(non_zero) = {
	.op_type = "NonZero", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = non_zero_infer,
};
