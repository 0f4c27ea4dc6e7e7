// SPDX-License-Identifier: MIT
/*
 * Ops that generate a tensor from a few parameters: Range, EyeLike,
 * OneHot and the Hann / Hamming / Blackman windows. Range's and OneHot's output shapes depend on input values: exact
 * when those inputs are constant, unknown (-1) until run time otherwise.
 */
#include <math.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/generate.h"

/* Writes the value v (a small integer or a float) as element i of type dt. */
static void npu_gen_set(void *p, enum npu_dtype dt, int64_t i, double v)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
	case NPU_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
	case NPU_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case NPU_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case NPU_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case NPU_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case NPU_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case NPU_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case NPU_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case NPU_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
	case NPU_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	case NPU_DTYPE_FLOAT16:
		/* Only 0 and 1 are written as half (EyeLike). */
		((uint16_t *)p)[i] = v != 0 ? 0x3c00 : 0;
		break;
	default: break;
	}
}

/* ---- Range ---- */

static npu_status range_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *const *t = ctx->inputs;
	struct npu_tensor *y = ctx->outputs[0];
	int64_t count, i;
	npu_status st;

	st = npu_range_count(ctx->node, t, &count, ctx->err);
	if (st)
		return st;
	if (count != y->shape.dims[0])
		return npu_op_invalid(ctx->err, ctx->node,
				      "output has %lld elements, the range %lld",
				      (long long)y->shape.dims[0],
				      (long long)count);
	if (npu_range_is_int(y->dtype)) {
		int64_t start = npu_gen_int_get(t[0], 0);
		int64_t delta = npu_gen_int_get(t[2], 0);

		for (i = 0; i < count; i++)
			npu_gen_set(y->data, y->dtype, i,
				    (double)(start + i * delta));
	} else if (y->dtype == NPU_DTYPE_FLOAT) {
		float start = ((const float *)t[0]->data)[0];
		float delta = ((const float *)t[2]->data)[0];

		for (i = 0; i < count; i++)
			((float *)y->data)[i] = start + (float)i * delta;
	} else {
		double start = ((const double *)t[0]->data)[0];
		double delta = ((const double *)t[2]->data)[0];

		for (i = 0; i < count; i++)
			((double *)y->data)[i] = start + (double)i * delta;
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(range) = {
	.op_type = "Range",
	.domain = "",
	.compute = range_compute,
};

/* ---- EyeLike ---- */

static npu_status eye_like_compute(struct npu_op_ctx *ctx)
{
	struct npu_tensor *y = ctx->outputs[0];
	int64_t rows = y->shape.dims[0], cols = y->shape.dims[1];
	int64_t k = npu_node_attr_int_or(ctx->node, "k", 0), i;

	if (npu_op_numel(y))
		memset(y->data, 0, (size_t)npu_op_numel(y) * npu_dtype_size(y->dtype));
	for (i = 0; i < rows; i++)
		if (k > -cols && k < cols && i + k >= 0 && i + k < cols)
			npu_gen_set(y->data, y->dtype, i * cols + i + k, 1);
	return NPU_OK;
}

NPU_CPU_OP_DEF(eye_like) = {
	.op_type = "EyeLike",
	.domain = "",
	.compute = eye_like_compute,
};

/* ---- OneHot ---- */

static npu_status one_hot_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *idx = ctx->inputs[0], *vals = ctx->inputs[2];
	struct npu_tensor *y = ctx->outputs[0];
	int rank = y->shape.rank, axis;
	int64_t depth, outer, inner, o, j, c;
	size_t es = npu_dtype_size(y->dtype);
	const char *off_v = vals->data, *on_v = off_v + es;
	npu_status st;

	st = npu_onehot_depth(ctx->node, ctx->inputs[1], &depth, ctx->err);
	if (st)
		return st;
	axis = (int)npu_node_attr_int_or(ctx->node, "axis", -1);
	if (axis < 0)
		axis += rank;
	if (y->shape.dims[axis] != depth)
		return npu_op_invalid(ctx->err, ctx->node,
				      "output axis has %lld elements, depth is %lld",
				      (long long)y->shape.dims[axis],
				      (long long)depth);
	outer = npu_op_dims_prod(&y->shape, 0, axis);
	inner = npu_op_dims_prod(&y->shape, axis + 1, rank);
	for (o = 0; o < outer; o++)
		for (c = 0; c < depth; c++)
			for (j = 0; j < inner; j++) {
				double v = npu_op_tensor_get(idx, (size_t)(o * inner + j));
				/* Out of [-depth, depth) (NaN too): all off. */
				int64_t k = v > -1e15 && v < 1e15 ? (int64_t)v : -1;

				/* Negative indices count from the end. */
				if (k < 0)
					k += depth;
				memcpy((char *)y->data +
					       ((o * depth + c) * inner + j) * (int64_t)es,
				       k == c ? on_v : off_v, es);
			}
	return NPU_OK;
}

NPU_CPU_OP_DEF(one_hot) = {
	.op_type = "OneHot",
	.domain = "",
	.compute = one_hot_compute,
};

/* ---- HannWindow / HammingWindow / BlackmanWindow ---- */

enum npu_window_kind { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN };

/* Computed in double as the ONNX reference does, then converted. */
static npu_status npu_window_compute(struct npu_op_ctx *ctx,
				     enum npu_window_kind k)
{
	struct npu_tensor *y = ctx->outputs[0];
	bool periodic = npu_node_attr_int_or(ctx->node, "periodic", 1) != 0;
	int64_t n, i;
	double den;
	npu_status st;

	st = npu_window_size(ctx->node, ctx->inputs[0], &n, ctx->err);
	if (st)
		return st;
	if (n != y->shape.dims[0])
		return npu_op_invalid(ctx->err, ctx->node,
				      "output has %lld elements, size is %lld",
				      (long long)y->shape.dims[0], (long long)n);
	den = (double)(periodic ? n : n - 1);
	for (i = 0; i < n; i++) {
		double x = (double)i * M_PI / den, v;

		switch (k) {
		case WIN_HANN: v = sin(x) * sin(x); break;
		case WIN_HAMMING:
			v = 25.0 / 46.0 - cos(2 * x) * (1 - 25.0 / 46.0);
			break;
		default: v = 0.42 - 0.5 * cos(2 * x) + 0.08 * cos(4 * x); break;
		}
		npu_gen_set(y->data, y->dtype, i, v);
	}
	return NPU_OK;
}

#define WINDOW_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)		\
{									\
	return npu_window_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "",					\
	.compute = sym##_compute,					\
};

WINDOW_DEF(hann_window, "HannWindow", WIN_HANN)
WINDOW_DEF(hamming_window, "HammingWindow", WIN_HAMMING)
WINDOW_DEF(blackman_window, "BlackmanWindow", WIN_BLACKMAN)
