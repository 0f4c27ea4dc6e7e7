// SPDX-License-Identifier: MIT
/* The schemas of op_dft.c's ops: DFT, MelWeightMatrix, STFT. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/dft.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A scalar int32 / int64 value of a tensor. */
static npu_status npu_dft_scalar(const struct npu_node *node,
				 const struct npu_tensor *t, const char *what,
				 int64_t *v, struct npu_error *err)
{
	if ((t->dtype != NPU_DTYPE_INT32 && t->dtype != NPU_DTYPE_INT64) ||
	    npu_op_numel(t) != 1)
		return npu_op_invalid(err, node, "%s must be one int32 or int64",
				      what);
	*v = npu_op_index_get(t, 0);
	return NPU_OK;
}

/* The signal axis (of the squeezed, complex signal) and dft_length. */
npu_status npu_dft_args(const struct npu_node *node, int rank,
			const struct npu_tensor *len_t,
			const struct npu_tensor *axis_t, int64_t in_len,
			int *axis, int64_t *n_fft, struct npu_error *err)
{
	int64_t a;
	npu_status st;

	if (node->opset >= 20) {
		a = -2;
		if (axis_t) {
			st = npu_dft_scalar(node, axis_t, "input 2 (axis)", &a, err);
			if (st)
				return st;
		}
		/* Counted on the full rank; the last (complex) dim excluded. */
		if (a < -rank || a >= rank - 1 || a == -1)
			return npu_op_invalid(err, node,
					      "axis %lld out of range for rank %d (the last dim holds the complex parts)",
					      (long long)a, rank);
		*axis = (int)(a < 0 ? a + rank : a);
	} else {
		a = npu_node_attr_int_or(node, "axis", 1);
		/* Counted on the signal without its complex dim. */
		if (a < -(rank - 1) || a >= rank - 1)
			return npu_op_invalid(err, node,
					      "attribute 'axis' = %lld out of range for rank %d",
					      (long long)a, rank);
		*axis = (int)(a < 0 ? a + rank - 1 : a);
	}
	*n_fft = in_len;
	if (len_t) {
		st = npu_dft_scalar(node, len_t, "input 1 (dft_length)", n_fft,
				    err);
		if (st)
			return st;
		if (*n_fft < 1)
			return npu_op_invalid(err, node,
					      "input 1 (dft_length) = %lld is not positive",
					      (long long)*n_fft);
	}
	return NPU_OK;
}

static npu_status dft_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *len_v, *axis_v;
	struct npu_shape *out = &ctx->out_shapes[0];
	bool onesided = npu_node_attr_int_or(node, "onesided", 0) != 0;
	int64_t n_fft = -1;
	int axis = 0, rank;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, node->opset >= 20 ? 3 : 2);
	if (!st)
		st = node->opset >= 20 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("inverse", "onesided")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("axis", "inverse",
							  "onesided"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (st)
		return st;
	x = node->inputs[0];
	len_v = npu_op_input(node, 1);
	axis_v = npu_op_input(node, 2);
	rank = x->shape.rank;
	if (rank < 2 || (x->shape.dims[rank - 1] >= 0 &&
			 x->shape.dims[rank - 1] != 1 &&
			 x->shape.dims[rank - 1] != 2))
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' must end in a dim of 1 (real) or 2 (complex)",
				      x->name);
	if (axis_v && !axis_v->constant)
		return npu_op_unsupported(ctx->err, node,
					  "a non-constant axis input is not supported");
	if (onesided && npu_node_attr_int_or(node, "inverse", 0))
		return npu_op_unsupported(ctx->err, node,
					  "onesided with inverse is not supported");
	st = npu_dft_args(node, rank, NULL, axis_v ? axis_v->constant : NULL,
			  -1, &axis, &n_fft, ctx->err);
	if (st)
		return st;
	if (len_v) {
		n_fft = -1;
		if (len_v->constant) {
			st = npu_dft_args(node, rank, len_v->constant,
					  axis_v ? axis_v->constant : NULL, -1,
					  &axis, &n_fft, ctx->err);
			if (st)
				return st;
		}
	} else {
		n_fft = x->shape.dims[axis];
	}
	*out = x->shape;
	out->dims[axis] = n_fft < 0 ? -1 : onesided ? n_fft / 2 + 1 : n_fft;
	out->dims[rank - 1] = 2;
	ctx->out_dtypes[0] = x->dtype;
	return NPU_OK;
}

/* frame_length: the input, else the window's length, else the signal's. */
npu_status npu_stft_args(const struct npu_node *node,
			 const struct npu_shape *xs,
			 const struct npu_tensor *step_t,
			 const struct npu_shape *win,
			 const struct npu_tensor *flen_t, int64_t *step,
			 int64_t *flen, int64_t *frames,
			 struct npu_error *err)
{
	npu_status st;

	st = npu_dft_scalar(node, step_t, "input 1 (frame_step)", step, err);
	if (st)
		return st;
	if (*step < 1)
		return npu_op_invalid(err, node,
				      "input 1 (frame_step) = %lld is not positive",
				      (long long)*step);
	if (flen_t) {
		st = npu_dft_scalar(node, flen_t, "input 3 (frame_length)", flen,
				    err);
		if (st)
			return st;
	} else {
		*flen = win ? win->dims[0] : xs->dims[1];
	}
	if (*flen < 1 || *flen > xs->dims[1])
		return npu_op_invalid(err, node,
				      "frame_length %lld does not fit a signal of %lld",
				      (long long)*flen, (long long)xs->dims[1]);
	if (win && win->dims[0] != *flen)
		return npu_op_invalid(err, node,
				      "window of %lld for frame_length %lld",
				      (long long)win->dims[0], (long long)*flen);
	*frames = 1 + (xs->dims[1] - *flen) / *step;
	return NPU_OK;
}

static npu_status stft_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *step, *win, *flen;
	struct npu_shape *out = &ctx->out_shapes[0];
	bool onesided = npu_node_attr_int_or(node, "onesided", 1) != 0;
	int64_t st_v, fl, frames;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 4);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("onesided"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (st)
		return st;
	x = node->inputs[0];
	step = node->inputs[1];
	win = npu_op_input(node, 2);
	flen = npu_op_input(node, 3);
	if (x->shape.rank != 3 || (x->shape.dims[2] != 1 && x->shape.dims[2] != 2))
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' must be [batch, length, 1 or 2]",
				      x->name);
	if (win && (win->dtype != x->dtype || win->shape.rank != 1))
		return npu_op_invalid(ctx->err, node,
				      "input 2 '%s' (window) must be 1-D of the signal's type",
				      win->name);
	out->rank = 4;
	out->dims[0] = x->shape.dims[0];
	out->dims[1] = -1;
	out->dims[2] = -1;
	out->dims[3] = 2;
	/* Frame count and bins follow once the values are known. */
	if (step->constant && (!flen || flen->constant) &&
	    npu_op_shape_known(&x->shape) &&
	    (!win || npu_op_shape_known(&win->shape))) {
		st = npu_stft_args(node, &x->shape, step->constant,
				   win ? &win->shape : NULL,
				   flen ? flen->constant : NULL, &st_v, &fl,
				   &frames, ctx->err);
		if (st)
			return st;
		out->dims[1] = frames;
		out->dims[2] = onesided ? fl / 2 + 1 : fl;
	}
	ctx->out_dtypes[0] = x->dtype;
	return NPU_OK;
}

npu_status npu_mel_args(const struct npu_node *node,
			const struct npu_tensor *const *t,
			struct npu_mel_args *a, struct npu_error *err)
{
	npu_status st;

	st = npu_dft_scalar(node, t[0], "input 0 (num_mel_bins)", &a->bins, err);
	if (!st)
		st = npu_dft_scalar(node, t[1], "input 1 (dft_length)", &a->dft_len,
				    err);
	if (!st)
		st = npu_dft_scalar(node, t[2], "input 2 (sample_rate)", &a->rate,
				    err);
	if (st)
		return st;
	if (npu_op_numel(t[3]) != 1 || npu_op_numel(t[4]) != 1)
		return npu_op_invalid(err, node,
				      "inputs 3 and 4 (edge frequencies) must be scalars");
	a->lo_hz = npu_op_tensor_get(t[3], 0);
	a->hi_hz = npu_op_tensor_get(t[4], 0);
	if (a->bins < 1 || a->dft_len < 1 || a->rate < 1 || a->bins > 1 << 20 ||
	    a->dft_len > 1 << 24)
		return npu_op_invalid(err, node,
				      "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be positive",
				      (long long)a->bins, (long long)a->dft_len,
				      (long long)a->rate);
	if (!(a->lo_hz >= 0 && a->hi_hz > a->lo_hz))
		return npu_op_invalid(err, node,
				      "edge frequencies %g .. %g are not an increasing, non-negative range",
				      a->lo_hz, a->hi_hz);
	return NPU_OK;
}

static npu_status mel_weight_matrix_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype ints[] = {
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	static const enum npu_dtype floats[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *c[5];
	enum npu_dtype dt;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 5, 5);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("output_datatype"));
	for (i = 0; !st && i < 5; i++)
		st = npu_op_check_dtype(ctx, i, i < 3 ? ints : floats);
	if (st)
		return st;
	dt = (enum npu_dtype)npu_node_attr_int_or(node, "output_datatype",
						  NPU_DTYPE_FLOAT);
	if (dt != NPU_DTYPE_FLOAT && dt != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(ctx->err, node,
					  "attribute 'output_datatype' = %d (%s) is not supported",
					  (int)dt, npu_dtype_name(dt));
	ctx->out_dtypes[0] = dt;
	ctx->out_shapes[0].rank = 2;
	ctx->out_shapes[0].dims[0] = -1;
	ctx->out_shapes[0].dims[1] = -1;
	for (i = 0; i < 5; i++)
		c[i] = node->inputs[i]->constant;
	if (c[0] && c[1] && c[2] && c[3] && c[4]) {
		struct npu_mel_args a;

		st = npu_mel_args(node, c, &a, ctx->err);
		if (st)
			return st;
		ctx->out_shapes[0].dims[0] = a.dft_len / 2 + 1;
		ctx->out_shapes[0].dims[1] = a.bins;
	}
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(dft) = {
	.op_type = "DFT", .domain = "",
	.since_version = 17, .max_version = 21,
	.infer = dft_infer,
};

NPU_OP_SCHEMA_DEF(stft) = {
	.op_type = "STFT", .domain = "",
	.since_version = 17, .max_version = 21,
	.infer = stft_infer,
};

NPU_OP_SCHEMA_DEF(mel_weight_matrix) = {
	.op_type = "MelWeightMatrix", .domain = "",
	.since_version = 17, .max_version = 21,
	.infer = mel_weight_matrix_infer,
};
