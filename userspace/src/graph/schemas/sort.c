// SPDX-License-Identifier: MIT
/*
 * The schemas of op_sort.c's ops: ArgMax, ArgMin, Hardmax, TopK and
 * Unique, and Unique's grouping, which infer() runs on a constant input to
 * size the outputs and the kernel runs on every input.
 */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/sort.h"

#include <stdlib.h>
#include <string.h>

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

#define UNIQ_CMP(T)							\
	do {								\
		T va = ((const T *)u->x->data)[ia];			\
		T vb = ((const T *)u->x->data)[ib];			\
		if (va != vb)						\
			return va < vb ? -1 : 1;			\
	} while (0)


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

/* Before opset 13 the input is coerced to 2-D at 'axis' (default 1). */
npu_status npu_hardmax_axis(const struct npu_node *node, int rank,
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

/* K from the attribute (< 10) or the constant / run-time input. */
npu_status npu_topk_k(const struct npu_node *node,
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
npu_status npu_uniq_all(const struct npu_node *node,
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


NPU_OP_SCHEMA_DEF(arg_max) = {
	.op_type = "ArgMax", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = npu_arg_infer,
};

NPU_OP_SCHEMA_DEF(arg_min) = {
	.op_type = "ArgMin", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = npu_arg_infer,
};

NPU_OP_SCHEMA_DEF(hardmax) = {
	.op_type = "Hardmax", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = hardmax_infer,
};

NPU_OP_SCHEMA_DEF(top_k) = {
	.op_type = "TopK", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = top_k_infer,
};

NPU_OP_SCHEMA_DEF(unique) = {
	.op_type = "Unique", .domain = "",
	.since_version = 11, .max_version = 21,
	.infer = unique_infer,
};
