// SPDX-License-Identifier: MIT
/*
 * Ops that select elements by comparing values along one axis: ArgMax,
 * ArgMin, Hardmax, TopK and Unique. Values are compared in their own type (one
 * loop per numeric type through a macro); ties go to the lowest index
 * (ArgMax / ArgMin: the highest with select_last_index).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/sort.h"

/*
 * For each (outer, inner) position, the index along 'dim' of the max
 * (or min) value; ties: first, or last with 'last'.
 */
#define ARG_LOOP(T)							\
	do {								\
		const T *x_ = x;					\
		for (o = 0; o < outer; o++)				\
			for (j = 0; j < inner; j++) {			\
				const T *p_ = x_ + o * dim * inner + j;	\
				T best = p_[0];				\
				int64_t bi = 0;				\
				for (a = 1; a < dim; a++) {		\
					T v = p_[a * inner];		\
					bool better = is_max ?		\
						(last ? v >= best : v > best) : \
						(last ? v <= best : v < best); \
					if (better) {			\
						best = v;		\
						bi = a;			\
					}				\
				}					\
				out[o * inner + j] = bi;		\
			}						\
	} while (0)

static void npu_arg_kernel(const void *x, enum npu_dtype dt, int64_t outer,
			   int64_t dim, int64_t inner, bool is_max, bool last,
			   int64_t *out)
{
	int64_t o, j, a;

	SORT_SWITCH(dt, ARG_LOOP)
}

/* ---- ArgMax / ArgMin ---- */

static npu_status npu_arg_compute(struct npu_op_ctx *ctx, bool is_max)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int rank = x->shape.rank;
	int axis = (int)npu_node_attr_int_or(ctx->node, "axis", 0);
	bool last = npu_node_attr_int_or(ctx->node, "select_last_index", 0);

	if (axis < 0)
		axis += rank;
	if (!x->shape.dims[axis])
		return npu_op_invalid(ctx->err, ctx->node,
				      "axis %d of input 0 is empty", axis);
	npu_arg_kernel(x->data, x->dtype, npu_op_dims_prod(&x->shape, 0, axis),
		       x->shape.dims[axis],
		       npu_op_dims_prod(&x->shape, axis + 1, rank), is_max, last,
		       y->data);
	return NPU_OK;
}

static npu_status arg_max_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, arg_max_compute);
	return npu_arg_compute(ctx, true);
}

static npu_status arg_min_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, arg_min_compute);
	return npu_arg_compute(ctx, false);
}

NPU_CPU_OP_DEF(arg_max) = {
	.op_type = "ArgMax",
	.domain = "",
	.compute = arg_max_compute,
};

NPU_CPU_OP_DEF(arg_min) = {
	.op_type = "ArgMin",
	.domain = "",
	.compute = arg_min_compute,
};

/* ---- Hardmax ---- */

static npu_status hardmax_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int rank = x->shape.rank, axis;
	int64_t outer, dim, inner, o, j, *idx;
	size_t es = npu_dtype_size(x->dtype);
	npu_status st;

	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, hardmax_compute);
	st = npu_hardmax_axis(ctx->node, rank, &axis, ctx->err);
	if (st)
		return st;
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	if (ctx->node->opset < 13) {	/* 2-D: [outer, everything after] */
		dim = npu_op_dims_prod(&x->shape, axis, rank);
		inner = 1;
	} else {
		dim = x->shape.dims[axis];
		inner = npu_op_dims_prod(&x->shape, axis + 1, rank);
	}
	if (!npu_op_numel(x))
		return NPU_OK;
	memset(y->data, 0, (size_t)npu_op_numel(x) * es);
	idx = malloc((size_t)(outer * inner) * sizeof(*idx));
	if (!idx)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	npu_arg_kernel(x->data, x->dtype, outer, dim, inner, true, false, idx);
	for (o = 0; o < outer; o++)
		for (j = 0; j < inner; j++) {
			int64_t at = (o * dim + idx[o * inner + j]) * inner + j;

			if (x->dtype == NPU_DTYPE_FLOAT)
				((float *)y->data)[at] = 1.0f;
			else
				((double *)y->data)[at] = 1.0;
		}
	free(idx);
	return NPU_OK;
}

NPU_CPU_OP_DEF(hardmax) = {
	.op_type = "Hardmax",
	.domain = "",
	.compute = hardmax_compute,
};

/* ---- TopK ---- */

struct npu_topk_item {
	double f;		/* float key */
	int64_t i;		/* integer key */
	uint64_t u;		/* unsigned key */
	int64_t idx;
};

/* Orders by key, then by index (lower first) so ties are stable. */
#define TOPK_CMP(name, field, desc)					\
static int name(const void *pa, const void *pb)				\
{									\
	const struct npu_topk_item *a = pa, *b = pb;			\
									\
	if (a->field != b->field)					\
		return (desc ? a->field > b->field : a->field < b->field) ? \
		       -1 : 1;						\
	return a->idx < b->idx ? -1 : a->idx > b->idx;			\
}
TOPK_CMP(npu_topk_f_desc, f, 1)
TOPK_CMP(npu_topk_f_asc, f, 0)
TOPK_CMP(npu_topk_i_desc, i, 1)
TOPK_CMP(npu_topk_i_asc, i, 0)
TOPK_CMP(npu_topk_u_desc, u, 1)
TOPK_CMP(npu_topk_u_asc, u, 0)

#define TOPK_FILL(T)							\
	do {								\
		const T *p_ = (const T *)x->data + o * dim * inner + j;	\
		for (a = 0; a < dim; a++) {				\
			T v = p_[a * inner];				\
			if (is_f)					\
				items[a].f = (double)v;			\
			else if (is_u)					\
				items[a].u = (uint64_t)v;		\
			else						\
				items[a].i = (int64_t)v;		\
			items[a].idx = a;				\
		}							\
	} while (0)

static npu_status top_k_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, top_k_compute);
	{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *vals = ctx->outputs[0], *inds = ctx->outputs[1];
	const struct npu_node *node = ctx->node;
	bool largest = npu_node_attr_int_or(node, "largest", 1) != 0;
	bool is_f = x->dtype == NPU_DTYPE_FLOAT || x->dtype == NPU_DTYPE_DOUBLE;
	bool is_u = x->dtype == NPU_DTYPE_UINT8 || x->dtype == NPU_DTYPE_UINT16 ||
		    x->dtype == NPU_DTYPE_UINT32 || x->dtype == NPU_DTYPE_UINT64;
	int (*cmp)(const void *, const void *);
	struct npu_topk_item *items;
	int rank = x->shape.rank, axis;
	int64_t k, outer, dim, inner, o, j, a;
	size_t es = npu_dtype_size(x->dtype);
	npu_status st;

	st = npu_topk_k(node, npu_op_in(ctx, 1), &k, ctx->err);
	if (st)
		return st;
	axis = (int)npu_node_attr_int_or(node, "axis", -1);
	if (axis < 0)
		axis += rank;
	dim = x->shape.dims[axis];
	if (k > dim || vals->shape.dims[axis] != k)
		return npu_op_invalid(ctx->err, node,
				      "K = %lld does not fit axis %d of size %lld",
				      (long long)k, axis, (long long)dim);
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	inner = npu_op_dims_prod(&x->shape, axis + 1, rank);
	if (!k || !outer || !inner)
		return NPU_OK;
	cmp = is_f ? (largest ? npu_topk_f_desc : npu_topk_f_asc) :
	      is_u ? (largest ? npu_topk_u_desc : npu_topk_u_asc) :
		     (largest ? npu_topk_i_desc : npu_topk_i_asc);
	items = malloc((size_t)dim * sizeof(*items));
	if (!items)
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	for (o = 0; o < outer; o++)
		for (j = 0; j < inner; j++) {
			SORT_SWITCH(x->dtype, TOPK_FILL)
			qsort(items, (size_t)dim, sizeof(*items), cmp);
			for (a = 0; a < k; a++) {
				int64_t at = (o * k + a) * inner + j;
				int64_t src = (o * dim + items[a].idx) * inner + j;

				memcpy((char *)vals->data + at * (int64_t)es,
				       (const char *)x->data + src * (int64_t)es,
				       es);
				((int64_t *)inds->data)[at] = items[a].idx;
			}
		}
	free(items);
	return NPU_OK;
	}
}

NPU_CPU_OP_DEF(top_k) = {
	.op_type = "TopK",
	.domain = "",
	.compute = top_k_compute,
};

/* ---- Unique ---- */

static npu_status unique_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_tensor *t_idx = npu_op_out(ctx, 1), *t_inv = npu_op_out(ctx, 2);
	struct npu_tensor *t_cnt = npu_op_out(ctx, 3);
	size_t es = npu_dtype_size(x->dtype);
	int64_t *first, *group, *count, n, g, o, chunk;
	struct npu_uniq u;
	int axis;
	npu_status st;

	st = npu_uniq_all(ctx->node, x, &u, &axis, &first, &group, &count, &n,
			  ctx->err);
	if (st)
		return st;
	if ((axis >= 0 ? y->shape.dims[axis] : y->shape.dims[0]) != n) {
		st = npu_op_invalid(ctx->err, ctx->node,
				    "output has room for %lld unique slices, found %lld",
				    (long long)(axis >= 0 ? y->shape.dims[axis] :
						      y->shape.dims[0]),
				    (long long)n);
		goto out;
	}
	chunk = u.inner * (int64_t)es;
	for (o = 0; o < u.outer; o++)
		for (g = 0; g < n; g++)
			memcpy((char *)y->data + (o * n + g) * chunk,
			       (const char *)x->data +
				       (o * u.dim + first[g]) * chunk,
			       (size_t)chunk);
	if (t_idx)
		memcpy(t_idx->data, first, (size_t)n * sizeof(int64_t));
	if (t_inv)
		memcpy(t_inv->data, group, (size_t)u.dim * sizeof(int64_t));
	if (t_cnt)
		memcpy(t_cnt->data, count, (size_t)n * sizeof(int64_t));
out:
	free(first);
	free(group);
	free(count);
	return st;
}

NPU_CPU_OP_DEF(unique) = {
	.op_type = "Unique",
	.domain = "",
	.compute = unique_compute,
};
