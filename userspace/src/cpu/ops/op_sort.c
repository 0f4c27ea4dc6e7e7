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

static const enum npu_dtype npu_sort_types[] = {
	NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_INT8, NPU_DTYPE_UINT8,
	NPU_DTYPE_INT16, NPU_DTYPE_UINT16, NPU_DTYPE_INT32, NPU_DTYPE_UINT32,
	NPU_DTYPE_INT64, NPU_DTYPE_UINT64, NPU_DTYPE_UNDEFINED,
};

/* ArgMax / ArgMin / TopK: those and float16 / bfloat16, widened to float. */
static const enum npu_dtype npu_sort_types_half[] = {
	NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_INT8, NPU_DTYPE_UINT8,
	NPU_DTYPE_INT16, NPU_DTYPE_UINT16, NPU_DTYPE_INT32, NPU_DTYPE_UINT32,
	NPU_DTYPE_INT64, NPU_DTYPE_UINT64, NPU_DTYPE_FLOAT16, NPU_DTYPE_BFLOAT16,
	NPU_DTYPE_UNDEFINED,
};

/* Calls X(T) in a switch over the numeric dtype dt. */
#define SORT_SWITCH(dt, X)						\
	switch (dt) {							\
	case NPU_DTYPE_FLOAT: X(float); break;				\
	case NPU_DTYPE_DOUBLE: X(double); break;			\
	case NPU_DTYPE_INT8: X(int8_t); break;				\
	case NPU_DTYPE_UINT8: X(uint8_t); break;			\
	case NPU_DTYPE_INT16: X(int16_t); break;			\
	case NPU_DTYPE_UINT16: X(uint16_t); break;			\
	case NPU_DTYPE_INT32: X(int32_t); break;			\
	case NPU_DTYPE_UINT32: X(uint32_t); break;			\
	case NPU_DTYPE_INT64: X(int64_t); break;			\
	case NPU_DTYPE_UINT64: X(uint64_t); break;			\
	default: break;							\
	}

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

static npu_status npu_arg_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	struct npu_shape *out = &ctx->out_shapes[0];
	bool keep;
	int axis, i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = node->opset >= 12 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "keepdims",
							  "select_last_index")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "keepdims"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, npu_sort_types_half);
	if (st)
		return st;
	x = node->inputs[0];
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", 0), x->shape.rank,
			 &axis);
	if (st)
		return st;
	if (x->shape.dims[axis] == 0)
		return npu_op_invalid(ctx->err, node,
				      "axis %d of input 0 '%s' is empty", axis,
				      x->name);
	keep = npu_node_attr_int_or(node, "keepdims", 1) != 0;
	out->rank = 0;
	for (i = 0; i < x->shape.rank; i++)
		if (i != axis)
			out->dims[out->rank++] = x->shape.dims[i];
		else if (keep)
			out->dims[out->rank++] = 1;
	ctx->out_dtypes[0] = NPU_DTYPE_INT64;
	return NPU_OK;
}

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
	.op_type = "ArgMax", .domain = "", .since_version = 1,
	.max_version = 21, .infer = npu_arg_infer, .compute = arg_max_compute,
};

NPU_CPU_OP_DEF(arg_min) = {
	.op_type = "ArgMin", .domain = "", .since_version = 1,
	.max_version = 21, .infer = npu_arg_infer, .compute = arg_min_compute,
};

/* ---- Hardmax ---- */

/* Before opset 13 the input is coerced to 2-D at 'axis' (default 1). */
static npu_status npu_hardmax_axis(const struct npu_node *node, int rank,
				   int *axis, struct npu_error *err)
{
	int64_t def = node->opset >= 13 ? -1 : 1;

	if (node->opset < 13 && rank == 0)
		return npu_op_invalid(err, node, "input 0 is a scalar");
	return npu_op_axis(err, node, "axis",
			   npu_node_attr_int_or(node, "axis", def), rank, axis);
}

static npu_status hardmax_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE,
		NPU_DTYPE_FLOAT16, NPU_DTYPE_BFLOAT16,	/* widened to float */
		NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int axis;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (st)
		return st;
	x = node->inputs[0];
	st = npu_hardmax_axis(node, x->shape.rank, &axis, ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

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
	.op_type = "Hardmax", .domain = "", .since_version = 1,
	.max_version = 21, .infer = hardmax_infer, .compute = hardmax_compute,
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

/* K from the attribute (< 10) or the constant / run-time input. */
static npu_status npu_topk_k(const struct npu_node *node,
			     const struct npu_tensor *kt, int64_t *k,
			     struct npu_error *err)
{
	int64_t v[1];
	int n;
	npu_status st;

	if (node->opset < 10) {
		const struct npu_attr *a = npu_node_attr(node, "k");

		if (!a || a->type != NPU_ATTR_INT)
			return npu_op_invalid(err, node,
					      "attribute 'k' is missing or not an int");
		*k = a->i;
	} else {
		st = kt ? npu_op_ints_from_tensor(node, kt, "input 1 (K)", v, 1,
						  &n, err) :
			  npu_op_ints_from_value(node, 1, v, 1, &n, err);
		if (st)
			return st;
		if (n < 0) {
			*k = -1;
			return NPU_OK;
		}
		if (n != 1)
			return npu_op_invalid(err, node,
					      "input 1 (K) must hold one value");
		*k = v[0];
	}
	if (*k < 0)
		return npu_op_invalid(err, node, "K = %lld is negative",
				      (long long)*k);
	return NPU_OK;
}

static npu_status top_k_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	int64_t k;
	int axis;
	npu_status st;

	st = npu_op_check_arity(ctx, node->opset < 10 ? 1 : 2,
				node->opset < 10 ? 1 : 2);
	if (!st)
		st = node->opset < 10 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "k")) :
		     node->opset < 11 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "largest",
							  "sorted"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, npu_sort_types_half);
	if (!st)
		st = npu_topk_k(node, NULL, &k, ctx->err);
	if (st)
		return st;
	if (node->num_outputs != 2)
		return npu_op_invalid(ctx->err, node, "%zu outputs, expected 2",
				      node->num_outputs);
	x = node->inputs[0];
	st = npu_op_axis(ctx->err, node, "axis",
			 npu_node_attr_int_or(node, "axis", -1), x->shape.rank,
			 &axis);
	if (st)
		return st;
	if (k >= 0 && x->shape.dims[axis] >= 0 && k > x->shape.dims[axis])
		return npu_op_invalid(ctx->err, node,
				      "K = %lld is larger than axis %d of size %lld",
				      (long long)k, axis,
				      (long long)x->shape.dims[axis]);
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_dtypes[1] = NPU_DTYPE_INT64;
	ctx->out_shapes[0] = x->shape;
	ctx->out_shapes[0].dims[axis] = k;
	ctx->out_shapes[1] = ctx->out_shapes[0];
	return NPU_OK;
}

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
	.op_type = "TopK", .domain = "", .since_version = 1,
	.max_version = 21, .infer = top_k_infer, .compute = top_k_compute,
};

/* ---- Unique ---- */

/*
 * Slices along the axis (or single elements without one): slice s is
 * the elements (o, s, k) for o < outer, k < inner.
 */
struct npu_uniq {
	const struct npu_tensor *x;
	int64_t outer, dim, inner;
};

#define UNIQ_CMP(T)							\
	do {								\
		T va = ((const T *)u->x->data)[ia];			\
		T vb = ((const T *)u->x->data)[ib];			\
		if (va != vb)						\
			return va < vb ? -1 : 1;			\
	} while (0)

static int npu_uniq_cmp_slices(const struct npu_uniq *u, int64_t a, int64_t b)
{
	int64_t o, k;

	for (o = 0; o < u->outer; o++)
		for (k = 0; k < u->inner; k++) {
			int64_t ia = (o * u->dim + a) * u->inner + k;
			int64_t ib = (o * u->dim + b) * u->inner + k;

			SORT_SWITCH(u->x->dtype, UNIQ_CMP)
		}
	return 0;
}

/* Orders slice indices by slice, then by index (first occurrence first). */
static int npu_uniq_qsort_cmp(const void *pa, const void *pb, void *arg)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	int c = npu_uniq_cmp_slices(arg, a, b);

	return c ? c : (a < b ? -1 : a > b);
}

static int npu_uniq_first_cmp(const void *pa, const void *pb)
{
	int64_t a = ((const int64_t *)pa)[0], b = ((const int64_t *)pb)[0];

	return a < b ? -1 : a > b;
}

/*
 * Groups the slices: first[g] is the first index of unique slice g (in
 * output order), group[s] the unique slice of slice s, count[g] its
 * occurrences. Returns the number of unique slices, -1 out of memory.
 */
static int64_t npu_uniq_run(const struct npu_uniq *u, bool sorted,
			    int64_t *first, int64_t *group, int64_t *count)
{
	int64_t *ord = malloc((size_t)(u->dim ? u->dim : 1) * sizeof(*ord));
	int64_t (*pairs)[2] = NULL, *remap = NULL, n = 0, i;

	if (!ord)
		return -1;
	for (i = 0; i < u->dim; i++)
		ord[i] = i;
	qsort_r(ord, (size_t)u->dim, sizeof(*ord), npu_uniq_qsort_cmp,
		(void *)u);
	for (i = 0; i < u->dim; i++) {
		if (!i || npu_uniq_cmp_slices(u, ord[i - 1], ord[i])) {
			first[n] = ord[i];
			count[n++] = 0;
		}
		group[ord[i]] = n - 1;
		count[n - 1]++;
	}
	free(ord);
	if (sorted || n < 2)
		return n;
	/* Unsorted: unique slices in the order they first occur. */
	pairs = malloc((size_t)n * sizeof(*pairs));
	remap = malloc((size_t)n * sizeof(*remap));
	if (!pairs || !remap) {
		free(pairs);
		free(remap);
		return -1;
	}
	for (i = 0; i < n; i++) {
		pairs[i][0] = first[i];
		pairs[i][1] = count[i];
	}
	qsort(pairs, (size_t)n, sizeof(*pairs), npu_uniq_first_cmp);
	for (i = 0; i < n; i++) {
		first[i] = pairs[i][0];
		count[i] = pairs[i][1];
		remap[group[first[i]]] = i;
	}
	for (i = 0; i < u->dim; i++)
		group[i] = remap[group[i]];
	free(pairs);
	free(remap);
	return n;
}

static npu_status npu_uniq_setup(const struct npu_node *node,
				 const struct npu_tensor *x, struct npu_uniq *u,
				 int *axis, struct npu_error *err)
{
	const struct npu_attr *ax = npu_node_attr(node, "axis");
	npu_status st;

	u->x = x;
	*axis = -1;
	if (!ax) {
		u->outer = 1;
		u->dim = npu_op_numel(x);
		u->inner = 1;
		return NPU_OK;
	}
	st = npu_op_axis(err, node, "axis", ax->i, x->shape.rank, axis);
	if (st)
		return st;
	u->outer = npu_op_dims_prod(&x->shape, 0, *axis);
	u->dim = x->shape.dims[*axis];
	u->inner = npu_op_dims_prod(&x->shape, *axis + 1, x->shape.rank);
	return NPU_OK;
}

/* Runs Unique on x; *n unique slices; the arrays are the caller's to free. */
static npu_status npu_uniq_all(const struct npu_node *node,
			       const struct npu_tensor *x, struct npu_uniq *u,
			       int *axis, int64_t **first, int64_t **group,
			       int64_t **count, int64_t *n, struct npu_error *err)
{
	size_t sz;
	npu_status st;

	st = npu_uniq_setup(node, x, u, axis, err);
	if (st)
		return st;
	sz = (size_t)(u->dim ? u->dim : 1) * sizeof(int64_t);
	*first = malloc(sz);
	*group = malloc(sz);
	*count = malloc(sz);
	*n = *first && *group && *count ?
	     npu_uniq_run(u, npu_node_attr_int_or(node, "sorted", 1) != 0,
			  *first, *group, *count) : -1;
	if (*n < 0) {
		free(*first);
		free(*group);
		free(*count);
		return npu_op_error(err, node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	return NPU_OK;
}

static npu_status unique_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	const struct npu_attr *ax;
	int64_t n = -1, dim;
	int axis = -1;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "sorted"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, npu_sort_types);
	if (st)
		return st;
	if (node->num_outputs < 1 || node->num_outputs > 4)
		return npu_op_invalid(ctx->err, node, "%zu outputs, expected 1 to 4",
				      node->num_outputs);
	x = node->inputs[0];
	ax = npu_node_attr(node, "axis");
	if (ax) {
		st = npu_op_axis(ctx->err, node, "axis", ax->i, x->shape.rank,
				 &axis);
		if (st)
			return st;
		dim = x->shape.dims[axis];
	} else {
		dim = npu_shape_numel(&x->shape);
	}
	if (x->constant) {
		struct npu_uniq u;
		int64_t *first, *group, *count;

		st = npu_uniq_all(node, x->constant, &u, &axis, &first, &group,
				  &count, &n, ctx->err);
		if (st)
			return st;
		free(first);
		free(group);
		free(count);
	}
	ctx->out_dtypes[0] = x->dtype;
	if (ax) {
		ctx->out_shapes[0] = x->shape;
		ctx->out_shapes[0].dims[axis] = n;
	} else {
		ctx->out_shapes[0].rank = 1;
		ctx->out_shapes[0].dims[0] = n;
	}
	for (i = 1; i < node->num_outputs; i++) {
		ctx->out_dtypes[i] = NPU_DTYPE_INT64;
		ctx->out_shapes[i].rank = 1;
		ctx->out_shapes[i].dims[0] = i == 2 ? dim : n;
	}
	return NPU_OK;
}

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
	.op_type = "Unique", .domain = "", .since_version = 11,
	.max_version = 21, .infer = unique_infer, .compute = unique_compute,
};
