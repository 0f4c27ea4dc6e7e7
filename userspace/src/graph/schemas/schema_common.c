// SPDX-License-Identifier: MIT
/*
 * Helpers the op schemas' infer() share, and the kernels too: errors,
 * arity / dtype / attribute checks, axis and constant-input readers,
 * broadcasting and window shapes.
 */
#include "graph/schemas/schema_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

npu_status npu_op_error(struct npu_error *err, const struct npu_node *node,
			npu_status status, const char *fmt, ...)
{
	char msg[NPU_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return npu_error_set(err, status, "%s node '%s': %s",
			     node && node->op_type ? node->op_type : "?",
			     node && node->name ? node->name : "", msg);
}

const struct npu_value *npu_op_input(const struct npu_node *node, size_t i)
{
	return i < node->num_inputs ? node->inputs[i] : NULL;
}

npu_status npu_op_check_arity(const struct npu_infer_ctx *ctx, size_t min,
			      size_t max)
{
	const struct npu_node *node = ctx->node;
	size_t i;

	if (node->num_inputs < min || node->num_inputs > max)
		return npu_op_invalid(ctx->err, node,
				      "%zu inputs, expected %zu to %zu",
				      node->num_inputs, min, max);
	for (i = 0; i < min; i++)
		if (!node->inputs[i])
			return npu_op_invalid(ctx->err, node,
					      "required input %zu is missing",
					      i);
	return NPU_OK;
}

npu_status npu_op_check_dtype(const struct npu_infer_ctx *ctx, size_t i,
			      const enum npu_dtype *allowed)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);
	const enum npu_dtype *a;

	if (!v)
		return NPU_OK;
	for (a = allowed; *a != NPU_DTYPE_UNDEFINED; a++)
		if (v->dtype == *a)
			return NPU_OK;
	return npu_op_unsupported(ctx->err, ctx->node,
				  "input %zu '%s' has type %s, not supported",
				  i, v->name ? v->name : "",
				  npu_dtype_name(v->dtype));
}

npu_status npu_op_reject_attr(const struct npu_infer_ctx *ctx,
			      const char *name)
{
	if (npu_node_attr(ctx->node, name))
		return npu_op_unsupported(ctx->err, ctx->node,
					  "attribute '%s' is not supported",
					  name);
	return NPU_OK;
}

npu_status npu_op_check_attrs(const struct npu_infer_ctx *ctx,
			      const char *const *known)
{
	const struct npu_node *node = ctx->node;
	size_t i;

	for (i = 0; i < node->num_attrs; i++) {
		const char *const *k;
		bool found = false;

		for (k = known; *k; k++)
			if (!strcmp(*k, node->attrs[i].name))
				found = true;
		if (!found)
			return npu_op_unsupported(ctx->err, node,
						  "attribute '%s' is not supported",
						  node->attrs[i].name);
	}
	return NPU_OK;
}

npu_status npu_op_axis(struct npu_error *err, const struct npu_node *node,
		       const char *what, int64_t axis, int rank, int *out)
{
	if (axis < -rank || axis >= rank)
		return npu_op_invalid(err, node,
				      "%s %lld out of range for rank %d", what,
				      (long long)axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return NPU_OK;
}

npu_status npu_op_ints_from_attr(const struct npu_node *node, const char *name,
				 int64_t *vals, int max, int *count,
				 struct npu_error *err)
{
	const struct npu_attr *a = npu_node_attr(node, name);
	size_t i;

	*count = 0;
	if (!a)
		return NPU_OK;
	if (a->type == NPU_ATTR_INT) {
		vals[0] = a->i;
		*count = 1;
		return NPU_OK;
	}
	if (a->type != NPU_ATTR_INTS)
		return npu_op_invalid(err, node,
				      "attribute '%s' is not a list of ints",
				      name);
	if (a->count > (size_t)max)
		return npu_op_unsupported(err, node,
					  "attribute '%s' has %zu values, at most %d supported",
					  name, a->count, max);
	for (i = 0; i < a->count; i++)
		vals[i] = a->ints[i];
	*count = (int)a->count;
	return NPU_OK;
}

int64_t npu_op_index_get(const struct npu_tensor *t, size_t i)
{
	if (t->dtype == NPU_DTYPE_INT32)
		return ((const int32_t *)t->data)[i];
	return ((const int64_t *)t->data)[i];
}

npu_status npu_op_ints_from_tensor(const struct npu_node *node,
				   const struct npu_tensor *t, const char *what,
				   int64_t *vals, int max, int *count,
				   struct npu_error *err)
{
	int64_t n = npu_op_numel(t);
	int64_t i;

	if (t->dtype != NPU_DTYPE_INT64 && t->dtype != NPU_DTYPE_INT32)
		return npu_op_unsupported(err, node, "%s has type %s, expected int64",
					  what, npu_dtype_name(t->dtype));
	if (t->shape.rank > 1)
		return npu_op_invalid(err, node, "%s must be 1-D, has rank %d",
				      what, t->shape.rank);
	if (n > max)
		return npu_op_unsupported(err, node,
					  "%s has %lld values, at most %d supported",
					  what, (long long)n, max);
	for (i = 0; i < n; i++)
		vals[i] = npu_op_index_get(t, (size_t)i);
	*count = (int)n;
	return NPU_OK;
}

npu_status npu_op_ints_from_value(const struct npu_node *node, size_t i,
				  int64_t *vals, int max, int *count,
				  struct npu_error *err)
{
	const struct npu_value *v = npu_op_input(node, i);
	char what[96];

	*count = 0;
	if (!v)
		return NPU_OK;
	if (!v->constant) {
		*count = -1;
		return NPU_OK;
	}
	snprintf(what, sizeof(what), "input %zu '%s'", i, v->name ? v->name : "");
	return npu_op_ints_from_tensor(node, v->constant, what, vals, max, count,
				       err);
}

double npu_op_tensor_get(const struct npu_tensor *t, size_t i)
{
	switch (t->dtype) {
	case NPU_DTYPE_FLOAT: return ((const float *)t->data)[i];
	case NPU_DTYPE_DOUBLE: return ((const double *)t->data)[i];
	case NPU_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
	case NPU_DTYPE_INT8: return ((const int8_t *)t->data)[i];
	case NPU_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
	case NPU_DTYPE_INT16: return ((const int16_t *)t->data)[i];
	case NPU_DTYPE_INT32: return ((const int32_t *)t->data)[i];
	case NPU_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
	case NPU_DTYPE_UINT32: return ((const uint32_t *)t->data)[i];
	case NPU_DTYPE_UINT64: return (double)((const uint64_t *)t->data)[i];
	case NPU_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
	default: return 0;
	}
}

int64_t npu_op_numel(const struct npu_tensor *t)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < t->shape.rank; i++)
		n *= t->shape.dims[i];
	return n;
}

bool npu_op_shape_known(const struct npu_shape *s)
{
	int i;

	for (i = 0; i < s->rank; i++)
		if (s->dims[i] < 0)
			return false;
	return true;
}

int64_t npu_op_dims_prod(const struct npu_shape *s, int from, int to)
{
	int64_t n = 1;
	int i;

	for (i = from; i < to; i++) {
		if (s->dims[i] < 0)
			return -1;
		n *= s->dims[i];
	}
	return n;
}

npu_status npu_op_broadcast_shape(const struct npu_infer_ctx *ctx,
				  const struct npu_shape *a,
				  const struct npu_shape *b,
				  struct npu_shape *out)
{
	struct npu_shape sa = *a, sb = *b;	/* out may alias a or b */
	int rank = sa.rank > sb.rank ? sa.rank : sb.rank;
	int i;

	a = &sa;
	b = &sb;
	out->rank = rank;
	for (i = 0; i < rank; i++) {
		int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;

		if (da == 1)
			out->dims[i] = db;
		else if (db == 1)
			out->dims[i] = da;
		else if (da < 0)
			out->dims[i] = db;
		else if (db < 0 || da == db)
			out->dims[i] = da;
		else
			return npu_op_invalid(ctx->err, ctx->node,
					      "shapes cannot be broadcast: dim %d is %lld vs %lld",
					      i, (long long)da, (long long)db);
	}
	return NPU_OK;
}

npu_status npu_op_window(const struct npu_node *node, const struct npu_shape *x,
			 const int64_t *k, int n, bool ceil_mode,
			 struct npu_window *w, struct npu_error *err)
{
	const char *auto_pad = npu_node_attr_string_or(node, "auto_pad", "NOTSET");
	int64_t vals[2 * NPU_WIN_MAX];
	int cnt, i;
	npu_status st;

	memset(w, 0, sizeof(*w));
	w->n = n;
	for (i = 0; i < n; i++) {
		w->in[i] = x->dims[2 + i];
		w->k[i] = k[i];
		w->stride[i] = 1;
		w->dil[i] = 1;
		if (k[i] <= 0)
			return npu_op_invalid(err, node, "kernel dim %d is %lld",
					      i, (long long)k[i]);
	}
	st = npu_op_ints_from_attr(node, "strides", vals, NPU_WIN_MAX, &cnt, err);
	if (st)
		return st;
	if (cnt && cnt != n)
		return npu_op_invalid(err, node, "strides has %d values for %d dims",
				      cnt, n);
	for (i = 0; i < cnt; i++)
		w->stride[i] = vals[i];
	st = npu_op_ints_from_attr(node, "dilations", vals, NPU_WIN_MAX, &cnt, err);
	if (st)
		return st;
	if (cnt && cnt != n)
		return npu_op_invalid(err, node,
				      "dilations has %d values for %d dims", cnt, n);
	for (i = 0; i < cnt; i++)
		w->dil[i] = vals[i];
	for (i = 0; i < n; i++)
		if (w->stride[i] <= 0 || w->dil[i] <= 0)
			return npu_op_invalid(err, node,
					      "stride / dilation must be positive");
	if (!strcmp(auto_pad, "NOTSET")) {
		st = npu_op_ints_from_attr(node, "pads", vals, 2 * NPU_WIN_MAX,
					   &cnt, err);
		if (st)
			return st;
		if (cnt && cnt != 2 * n)
			return npu_op_invalid(err, node,
					      "pads has %d values for %d dims", cnt, n);
		for (i = 0; i < cnt / 2; i++) {
			w->pad_begin[i] = vals[i];
			w->pad_end[i] = vals[i + n];
			if (vals[i] < 0 || vals[i + n] < 0)
				return npu_op_unsupported(err, node,
							  "negative pads");
		}
	} else if (strcmp(auto_pad, "VALID") &&
		   strcmp(auto_pad, "SAME_UPPER") &&
		   strcmp(auto_pad, "SAME_LOWER")) {
		return npu_op_invalid(err, node, "auto_pad '%s'", auto_pad);
	}
	for (i = 0; i < n; i++) {
		int64_t ext = (w->k[i] - 1) * w->dil[i] + 1, span;

		if (w->in[i] < 0) {
			w->out[i] = -1;
			continue;
		}
		if (!strncmp(auto_pad, "SAME", 4)) {
			int64_t total;

			w->out[i] = (w->in[i] + w->stride[i] - 1) / w->stride[i];
			total = (w->out[i] - 1) * w->stride[i] + ext - w->in[i];
			if (total < 0)
				total = 0;
			if (!strcmp(auto_pad, "SAME_UPPER")) {
				w->pad_begin[i] = total / 2;
				w->pad_end[i] = total - total / 2;
			} else {
				w->pad_begin[i] = total - total / 2;
				w->pad_end[i] = total / 2;
			}
			continue;
		}
		span = w->in[i] + w->pad_begin[i] + w->pad_end[i] - ext;
		if (span < 0)
			return npu_op_invalid(err, node,
					      "kernel (%lld) larger than padded input (%lld) on dim %d",
					      (long long)ext,
					      (long long)(w->in[i] + w->pad_begin[i] + w->pad_end[i]), i);
		w->out[i] = (ceil_mode ? (span + w->stride[i] - 1) / w->stride[i]
				       : span / w->stride[i]) + 1;
		if (ceil_mode && (w->out[i] - 1) * w->stride[i] >=
				 w->in[i] + w->pad_begin[i])
			w->out[i]--;
	}
	return NPU_OK;
}

enum npu_dtype npu_op_wide_dtype(enum npu_dtype dtype, bool ints)
{
	switch (dtype) {
	case NPU_DTYPE_FLOAT16:
	case NPU_DTYPE_BFLOAT16:
		return NPU_DTYPE_FLOAT;
	case NPU_DTYPE_INT8:
	case NPU_DTYPE_INT16:
	case NPU_DTYPE_INT32:
		return ints ? NPU_DTYPE_INT64 : dtype;
	case NPU_DTYPE_UINT8:
	case NPU_DTYPE_UINT16:
	case NPU_DTYPE_UINT32:
		return ints ? NPU_DTYPE_UINT64 : dtype;
	default:
		return dtype;
	}
}

/* Whether r broadcasts to g (numpy rules, r may not be larger). */
bool npu_op_broadcasts_to(const struct npu_shape *r, const struct npu_shape *g)
{
	int i, k = g->rank - r->rank;

	if (k < 0)
		return false;
	for (i = 0; i < r->rank; i++)
		if (r->dims[i] >= 0 && g->dims[k + i] >= 0 && r->dims[i] != 1 &&
		    r->dims[i] != g->dims[k + i])
			return false;
	return true;
}
