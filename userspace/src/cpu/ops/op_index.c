// SPDX-License-Identifier: MIT
/*
 * Ops addressed by an index tensor: GatherElements, ScatterElements (and
 * the older Scatter), GatherND, ScatterND, and the mask-driven Compress
 * and NonZero. They move elements of any
 * fixed-size type; only the scatter reductions (add / mul / max / min)
 * look at the values, through one typed loop per arithmetic type.
 * Indices may be negative (counted from the end); one out of range is an
 * error at run time naming the node, never an out-of-bounds access.
 */
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/index.h"

/* Copies one element of 'es' bytes (the data-movement kernel). */
static inline void npu_elem_copy(void *dst, const void *src, size_t es)
{
	switch (es) {
	case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
	case 2: memcpy(dst, src, 2); break;
	case 4: memcpy(dst, src, 4); break;
	case 8: memcpy(dst, src, 8); break;
	default: memcpy(dst, src, es); break;
	}
}

/* ---- scatter reductions ---- */

#define SCAT_APPLY(T)							\
	do {								\
		T *d_ = dst;						\
		T s_ = *(const T *)src;					\
		switch (r) {						\
		case SCAT_ADD: *d_ = (T)(*d_ + s_); break;		\
		case SCAT_MUL: *d_ = (T)(*d_ * s_); break;		\
		case SCAT_MAX: *d_ = *d_ > s_ ? *d_ : s_; break;	\
		case SCAT_MIN: *d_ = *d_ < s_ ? *d_ : s_; break;	\
		default: *d_ = s_; break;				\
		}							\
	} while (0)

/* dst op= src for one element of type dt. */
static void npu_scatter_elem(void *dst, const void *src, enum npu_dtype dt,
			     enum npu_scatter_red r)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: SCAT_APPLY(float); break;
	case NPU_DTYPE_DOUBLE: SCAT_APPLY(double); break;
	case NPU_DTYPE_INT8: SCAT_APPLY(int8_t); break;
	case NPU_DTYPE_UINT8: SCAT_APPLY(uint8_t); break;
	case NPU_DTYPE_INT16: SCAT_APPLY(int16_t); break;
	case NPU_DTYPE_UINT16: SCAT_APPLY(uint16_t); break;
	case NPU_DTYPE_INT32: SCAT_APPLY(int32_t); break;
	case NPU_DTYPE_UINT32: SCAT_APPLY(uint32_t); break;
	case NPU_DTYPE_INT64: SCAT_APPLY(int64_t); break;
	case NPU_DTYPE_UINT64: SCAT_APPLY(uint64_t); break;
	default: npu_elem_copy(dst, src, npu_dtype_size(dt)); break;
	}
}

/* Index k checked against an axis of 'dim', normalized into [0, dim). */
static npu_status npu_index_norm(const struct npu_node *node,
				 struct npu_error *err, int64_t k, int64_t dim,
				 int axis, int64_t at, int64_t *out)
{
	if (k < -dim || k >= dim)
		return npu_op_invalid(err, node,
				      "index %lld at element %lld is out of range for axis %d of size %lld",
				      (long long)k, (long long)at, axis,
				      (long long)dim);
	*out = k < 0 ? k + dim : k;
	return NPU_OK;
}

/* ---- GatherElements / ScatterElements / Scatter ---- */

/*
 * Walks every element of indices (row-major); for each, *src_off is its
 * own offset and *data_off the offset in data of the same coordinates
 * with the axis replaced by the index.
 */
static npu_status npu_elements_walk(struct npu_op_ctx *ctx,
				    const struct npu_tensor *data,
				    const struct npu_tensor *idx,
				    bool scatter)
{
	const struct npu_tensor *upd = scatter ? ctx->inputs[2] : NULL;
	struct npu_tensor *y = ctx->outputs[0];
	int rank = data->shape.rank, axis, d;
	int64_t n = npu_op_numel(idx), coord[NPU_MAX_RANK] = { 0 };
	int64_t dstride[NPU_MAX_RANK], j, base = 0;
	size_t es = npu_dtype_size(data->dtype);
	enum npu_scatter_red red = SCAT_NONE;
	npu_status st;

	axis = (int)npu_node_attr_int_or(ctx->node, "axis", 0);
	if (axis < 0)
		axis += rank;
	if (scatter) {
		st = npu_scatter_reduction(ctx->node, &red, ctx->err);
		if (st)
			return st;
		if (y->data != data->data && npu_op_numel(data))
			memcpy(y->data, data->data,
			       (size_t)npu_op_numel(data) * es);
	}
	npu_op_strides(&data->shape, dstride);
	for (j = 0; j < n; j++) {
		int64_t k = 0;

		st = npu_index_norm(ctx->node, ctx->err,
				    npu_op_index_get(idx, (size_t)j),
				    data->shape.dims[axis], axis, j, &k);
		if (st)
			return st;
		k = base + k * dstride[axis];
		if (scatter)
			npu_scatter_elem((char *)y->data + k * (int64_t)es,
					 (const char *)upd->data + j * (int64_t)es,
					 data->dtype, red);
		else
			npu_elem_copy((char *)y->data + j * (int64_t)es,
				      (const char *)data->data + k * (int64_t)es,
				      es);
		/* Next coordinate of indices; base tracks the non-axis part. */
		for (d = rank - 1; d >= 0; d--) {
			if (d != axis)
				base += dstride[d];
			if (++coord[d] < idx->shape.dims[d])
				break;
			if (d != axis)
				base -= coord[d] * dstride[d];
			coord[d] = 0;
		}
	}
	return NPU_OK;
}

static npu_status gather_elements_compute(struct npu_op_ctx *ctx)
{
	return npu_elements_walk(ctx, ctx->inputs[0], ctx->inputs[1], false);
}

NPU_CPU_OP_DEF(gather_elements) = {
	.op_type = "GatherElements",
	.domain = "",
	.compute = gather_elements_compute,
};

static npu_status scatter_elements_compute(struct npu_op_ctx *ctx)
{
	return npu_elements_walk(ctx, ctx->inputs[0], ctx->inputs[1], true);
}

NPU_CPU_OP_DEF(scatter_elements) = {
	.op_type = "ScatterElements",
	.domain = "",
	.compute = scatter_elements_compute,
};

/* Scatter (9, 10): ScatterElements without reduction, deprecated in 11. */
NPU_CPU_OP_DEF(scatter) = {
	.op_type = "Scatter",
	.domain = "",
	.compute = scatter_elements_compute,
};

/* ---- GatherND / ScatterND ---- */

static npu_status npu_nd_compute(struct npu_op_ctx *ctx, bool scatter)
{
	const struct npu_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1];
	const struct npu_tensor *upd = scatter ? ctx->inputs[2] : NULL;
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_shape *ds = &data->shape, *is = &idx->shape;
	int64_t b = scatter ? 0 : npu_node_attr_int_or(ctx->node, "batch_dims", 0);
	int64_t q = is->dims[is->rank - 1], dstride[NPU_MAX_RANK];
	int64_t slice = npu_op_dims_prod(ds, (int)(b + q), ds->rank);
	int64_t batch = npu_op_dims_prod(ds, 0, (int)b);
	int64_t tuples = npu_op_dims_prod(is, 0, is->rank - 1);
	int64_t per_batch = batch ? tuples / batch : 0, t, e, i;
	size_t es = npu_dtype_size(data->dtype);
	enum npu_scatter_red red = SCAT_NONE;
	const int64_t *iv = idx->data;
	npu_status st;

	if (scatter) {
		st = npu_scatter_reduction(ctx->node, &red, ctx->err);
		if (st)
			return st;
		if (npu_op_numel(data))
			memcpy(y->data, data->data,
			       (size_t)npu_op_numel(data) * es);
	}
	npu_op_strides(ds, dstride);
	for (t = 0; t < tuples; t++) {
		int64_t off = (per_batch ? t / per_batch : 0) * (b ? dstride[b - 1] : 0);

		for (i = 0; i < q; i++) {
			int64_t k = 0;

			st = npu_index_norm(ctx->node, ctx->err, iv[t * q + i],
					    ds->dims[b + i], (int)(b + i),
					    t * q + i, &k);
			if (st)
				return st;
			off += k * dstride[b + i];
		}
		for (e = 0; e < slice; e++) {
			if (scatter)
				npu_scatter_elem((char *)y->data + (off + e) * (int64_t)es,
						 (const char *)upd->data +
							 (t * slice + e) * (int64_t)es,
						 data->dtype, red);
			else
				npu_elem_copy((char *)y->data + (t * slice + e) * (int64_t)es,
					      (const char *)data->data +
						      (off + e) * (int64_t)es,
					      es);
		}
	}
	return NPU_OK;
}

static npu_status gather_nd_compute(struct npu_op_ctx *ctx)
{
	return npu_nd_compute(ctx, false);
}

NPU_CPU_OP_DEF(gather_nd) = {
	.op_type = "GatherND",
	.domain = "",
	.compute = gather_nd_compute,
};

static npu_status scatter_nd_compute(struct npu_op_ctx *ctx)
{
	return npu_nd_compute(ctx, true);
}

NPU_CPU_OP_DEF(scatter_nd) = {
	.op_type = "ScatterND",
	.domain = "",
	.compute = scatter_nd_compute,
};

/* ---- Compress ---- */

static npu_status compress_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *cond = ctx->inputs[1];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_attr *ax = npu_node_attr(ctx->node, "axis");
	int rank = x->shape.rank, axis = 0;
	int64_t outer = 1, dim = npu_op_numel(x), inner = 1, o, i, kept;
	size_t es = npu_dtype_size(x->dtype), chunk;
	const uint8_t *cv = cond->data;
	char *dst = y->data;

	if (ax) {
		axis = (int)(ax->i < 0 ? ax->i + rank : ax->i);
		outer = npu_op_dims_prod(&x->shape, 0, axis);
		dim = x->shape.dims[axis];
		inner = npu_op_dims_prod(&x->shape, axis + 1, rank);
	}
	kept = npu_compress_count(cond, dim);
	if (kept != (ax ? y->shape.dims[axis] : y->shape.dims[0]))
		return npu_op_invalid(ctx->err, ctx->node,
				      "output has room for %lld slices, condition selects %lld",
				      (long long)(ax ? y->shape.dims[axis] :
						       y->shape.dims[0]),
				      (long long)kept);
	chunk = (size_t)inner * es;
	for (o = 0; o < outer; o++)
		for (i = 0; i < dim && i < npu_op_numel(cond); i++)
			if (cv[i]) {
				memcpy(dst, (const char *)x->data +
						    (size_t)(o * dim + i) * chunk,
				       chunk);
				dst += chunk;
			}
	return NPU_OK;
}

NPU_CPU_OP_DEF(compress) = {
	.op_type = "Compress",
	.domain = "",
	.compute = compress_compute,
};

/* ---- NonZero ---- */

static npu_status non_zero_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int rank = x->shape.rank, d;
	int64_t n = npu_op_numel(x), nnz = npu_nonzero_count(x), i, c = 0;
	int64_t coord[NPU_MAX_RANK] = { 0 }, *yv = y->data;

	if (y->shape.dims[1] != nnz)
		return npu_op_invalid(ctx->err, ctx->node,
				      "output has room for %lld, input has %lld non-zeros",
				      (long long)y->shape.dims[1], (long long)nnz);
	for (i = 0; i < n; i++) {
		if (npu_elem_nonzero(x->data, x->dtype, i)) {
			for (d = 0; d < rank; d++)
				yv[d * nnz + c] = coord[d];
			c++;
		}
		for (d = rank - 1; d >= 0; d--) {
			if (++coord[d] < x->shape.dims[d])
				break;
			coord[d] = 0;
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(non_zero) = {
	.op_type = "NonZero",
	.domain = "",
	.compute = non_zero_compute,
};
