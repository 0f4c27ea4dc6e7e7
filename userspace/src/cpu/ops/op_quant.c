// SPDX-License-Identifier: MIT
/*
 * Quantization: QuantizeLinear, DequantizeLinear (per tensor or per axis,
 * uint8 / int8), QLinearMatMul, QLinearConv, their int32-output forms
 * MatMulInteger and ConvInteger, and DynamicQuantizeLinear. Integer paths accumulate
 * exactly in int32 and requantize as the ONNX reference does: round half
 * to even (nearbyint in the default rounding mode), add the zero point,
 * saturate.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"

static bool npu_is_q8(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_UINT8 || dt == NPU_DTYPE_INT8;
}

static int32_t npu_q8_get(const struct npu_tensor *t, int64_t i)
{
	return t->dtype == NPU_DTYPE_UINT8 ? ((const uint8_t *)t->data)[i]
					   : ((const int8_t *)t->data)[i];
}

/* round half to even, add zero point, saturate to the type's range. */
static void npu_q8_put(void *data, enum npu_dtype dt, int64_t i, double v,
		       int32_t zp)
{
	double q = nearbyint(v) + zp;
	double lo = dt == NPU_DTYPE_UINT8 ? 0 : -128;
	double hi = dt == NPU_DTYPE_UINT8 ? 255 : 127;

	q = q < lo ? lo : (q > hi ? hi : q);
	if (dt == NPU_DTYPE_UINT8)
		((uint8_t *)data)[i] = (uint8_t)q;
	else
		((int8_t *)data)[i] = (int8_t)q;
}

/* Checks a scale / zero point: one value, or one per channel of 'axis'. */
static npu_status npu_q_param(const struct npu_infer_ctx *ctx, size_t i,
			      int64_t per_axis_len, bool allow_per_axis)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);
	int64_t n;

	if (!v)
		return NPU_OK;
	n = npu_shape_numel(&v->shape);
	if (n == 1 && v->shape.rank <= 1)
		return NPU_OK;
	if (allow_per_axis && v->shape.rank == 1 &&
	    (n < 0 || per_axis_len < 0 || n == per_axis_len))
		return NPU_OK;
	return npu_op_unsupported(ctx->err, ctx->node,
				  "input %zu '%s' must be a scalar%s", i, v->name,
				  allow_per_axis ? " or 1-D per channel" : "");
}

/* ---- QuantizeLinear / DequantizeLinear ---- */

static npu_status npu_qdq_infer(struct npu_infer_ctx *ctx, bool quant)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x, *zp;
	int64_t axis_len = -1;
	int axis = 0;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, node->opset < 13 ? NPU_OP_ATTRS(NULL) :
					NPU_OP_ATTRS("axis", "saturate"));
	if (st)
		return st;
	x = node->inputs[0];
	zp = npu_op_input(node, 2);
	if (quant ? x->dtype != NPU_DTYPE_FLOAT :
		    !(npu_is_q8(x->dtype) || x->dtype == NPU_DTYPE_INT32))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	if (node->inputs[1]->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "scale has type %s, not supported",
					  npu_dtype_name(node->inputs[1]->dtype));
	if (zp && (quant ? !npu_is_q8(zp->dtype) : zp->dtype != x->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "zero point has type %s, not supported",
					  npu_dtype_name(zp->dtype));
	if (x->shape.rank > 0 && npu_op_input(node, 1)->shape.rank == 1 &&
	    npu_shape_numel(&node->inputs[1]->shape) != 1) {
		st = npu_op_axis(ctx->err, node, "axis",
				 npu_node_attr_int_or(node, "axis", 1),
				 x->shape.rank, &axis);
		if (st)
			return st;
		axis_len = x->shape.dims[axis];
	}
	st = npu_q_param(ctx, 1, axis_len, node->opset >= 13 && x->shape.rank > 0);
	if (!st)
		st = npu_q_param(ctx, 2, axis_len, node->opset >= 13 && x->shape.rank > 0);
	if (st)
		return st;
	ctx->out_dtypes[0] = quant ? (zp ? zp->dtype : NPU_DTYPE_UINT8)
				   : NPU_DTYPE_FLOAT;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

static npu_status npu_qdq_compute(struct npu_op_ctx *ctx, bool quant)
{
	const struct npu_tensor *x = ctx->inputs[0], *sc = ctx->inputs[1];
	const struct npu_tensor *zp = npu_op_in(ctx, 2);
	struct npu_tensor *y = ctx->outputs[0];
	int64_t n = npu_op_numel(x), inner = 1, dim = 1, i;
	bool per_axis = npu_op_numel(sc) > 1;
	const float *scale = sc->data;

	if (per_axis) {
		int64_t axis = npu_node_attr_int_or(ctx->node, "axis", 1);

		if (axis < 0)
			axis += x->shape.rank;
		dim = x->shape.dims[axis];
		inner = npu_op_dims_prod(&x->shape, (int)axis + 1, x->shape.rank);
	}
	for (i = 0; i < n; i++) {
		int64_t c = per_axis ? (i / inner) % dim : 0;
		int32_t z = zp ? (zp->dtype == NPU_DTYPE_INT32 ?
				  ((const int32_t *)zp->data)[c] : npu_q8_get(zp, c)) : 0;

		if (quant) {
			/* x / scale in float, as the reference computes it. */
			float q = ((const float *)x->data)[i] / scale[c];

			npu_q8_put(y->data, y->dtype, i, q, z);
		} else {
			int32_t v = x->dtype == NPU_DTYPE_INT32 ?
				    ((const int32_t *)x->data)[i] : npu_q8_get(x, i);

			((float *)y->data)[i] = (float)(v - z) * scale[c];
		}
	}
	return NPU_OK;
}

static npu_status quantize_infer(struct npu_infer_ctx *ctx)
{
	return npu_qdq_infer(ctx, true);
}

static npu_status quantize_compute(struct npu_op_ctx *ctx)
{
	return npu_qdq_compute(ctx, true);
}

static npu_status dequantize_infer(struct npu_infer_ctx *ctx)
{
	return npu_qdq_infer(ctx, false);
}

static npu_status dequantize_compute(struct npu_op_ctx *ctx)
{
	return npu_qdq_compute(ctx, false);
}

NPU_CPU_OP_DEF(quantize_linear) = {
	.op_type = "QuantizeLinear", .domain = "", .since_version = 10,
	.max_version = 21, .infer = quantize_infer,
	.compute = quantize_compute,
};

NPU_CPU_OP_DEF(dequantize_linear) = {
	.op_type = "DequantizeLinear", .domain = "", .since_version = 10,
	.max_version = 21, .infer = dequantize_infer,
	.compute = dequantize_compute,
};

/* ---- shared checks for QLinearMatMul / QLinearConv ---- */

/* Inputs (value, scale, zero point) at i, i+1, i+2. */
static npu_status npu_qtriple(const struct npu_infer_ctx *ctx, size_t i,
			      bool data_too, int64_t per_channel)
{
	const struct npu_node *node = ctx->node;
	npu_status st;

	if (data_too && !npu_is_q8(node->inputs[i]->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input %zu '%s' has type %s, not supported",
					  i, node->inputs[i]->name,
					  npu_dtype_name(node->inputs[i]->dtype));
	if (node->inputs[i + 1]->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "input %zu (scale) has type %s",
					  i + 1, npu_dtype_name(node->inputs[i + 1]->dtype));
	if (node->inputs[i + 2]->dtype != (data_too ? node->inputs[i]->dtype :
					   node->inputs[i + 2]->dtype) ||
	    !npu_is_q8(node->inputs[i + 2]->dtype))
		return npu_op_unsupported(ctx->err, node,
					  "input %zu (zero point) has type %s",
					  i + 2, npu_dtype_name(node->inputs[i + 2]->dtype));
	st = npu_q_param(ctx, i + 1, per_channel, per_channel != -2);
	if (!st)
		st = npu_q_param(ctx, i + 2, per_channel, per_channel != -2);
	return st;
}

/* ---- QLinearMatMul ---- */

static npu_status qlinear_matmul_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *a, *b;
	struct npu_shape ba, bb;
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 8, 8);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	a = &node->inputs[0]->shape;
	b = &node->inputs[3]->shape;
	if (a->rank < 2 || b->rank < 2)
		return npu_op_unsupported(ctx->err, node,
					  "1-D operands are not supported");
	st = npu_qtriple(ctx, 0, true, -2);
	if (!st)
		st = npu_qtriple(ctx, 3, true, b->dims[b->rank - 1]);
	if (!st)
		st = npu_qtriple(ctx, 5, false, -2);
	if (st)
		return st;
	if (a->dims[a->rank - 1] >= 0 && b->dims[b->rank - 2] >= 0 &&
	    a->dims[a->rank - 1] != b->dims[b->rank - 2])
		return npu_op_invalid(ctx->err, node, "inner dimensions differ");
	ba = *a;
	ba.rank -= 2;
	bb = *b;
	bb.rank -= 2;
	st = npu_op_broadcast_shape(ctx, &ba, &bb, &ctx->out_shapes[0]);
	if (st)
		return st;
	i = ctx->out_shapes[0].rank;
	ctx->out_shapes[0].dims[i] = a->dims[a->rank - 2];
	ctx->out_shapes[0].dims[i + 1] = b->dims[b->rank - 1];
	ctx->out_shapes[0].rank = i + 2;
	ctx->out_dtypes[0] = node->inputs[7]->dtype;
	return NPU_OK;
}

static float npu_f32_at(const struct npu_tensor *t, int64_t i)
{
	return ((const float *)t->data)[npu_op_numel(t) > 1 ? i : 0];
}

static int32_t npu_q8_at(const struct npu_tensor *t, int64_t i)
{
	return npu_q8_get(t, npu_op_numel(t) > 1 ? i : 0);
}

static npu_status qlinear_matmul_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *const *in = ctx->inputs;
	const struct npu_tensor *a = in[0], *b = in[3];
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_shape ba = a->shape, bb = b->shape, batch = y->shape;
	const struct npu_shape *ins[2] = { &ba, &bb };
	int64_t m = a->shape.dims[a->shape.rank - 2];
	int64_t k = a->shape.dims[a->shape.rank - 1];
	int64_t n = b->shape.dims[b->shape.rank - 1];
	int32_t azp = npu_q8_at(in[2], 0), yzp = npu_q8_at(in[7], 0);
	float a_s = npu_f32_at(in[1], 0), y_s = npu_f32_at(in[6], 0);
	int64_t r, e, i, j, l, off[2];
	struct npu_bcast bc;

	ba.rank -= 2;
	bb.rank -= 2;
	batch.rank -= 2;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	npu_bcast_init(&bc, &batch, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, off);
		for (e = 0; e < bc.len; e++) {
			int64_t ao = (off[0] + e * bc.step[0]) * m * k;
			int64_t bo = (off[1] + e * bc.step[1]) * k * n;
			int64_t yo = (r * bc.len + e) * m * n;

			for (i = 0; i < m; i++)
				for (j = 0; j < n; j++) {
					int32_t bzp = npu_q8_at(in[5], j), acc = 0;
					float mult = a_s * npu_f32_at(in[4], j) / y_s;

					for (l = 0; l < k; l++)
						acc += (npu_q8_get(a, ao + i * k + l) - azp) *
						       (npu_q8_get(b, bo + l * n + j) - bzp);
					npu_q8_put(y->data, y->dtype, yo + i * n + j,
						   (double)acc * mult, yzp);
				}
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(qlinear_matmul) = {
	.op_type = "QLinearMatMul", .domain = "", .since_version = 10,
	.max_version = 20, .infer = qlinear_matmul_infer,
	.compute = qlinear_matmul_compute,
};

/* ---- QLinearConv ---- */

/* QLinearConv / ConvInteger: 1-D or 2-D X, W of X's rank and known shape. */
static npu_status check_conv_shapes(const struct npu_infer_ctx *ctx, const struct npu_shape *x,
				    const struct npu_shape *w)
{
	const struct npu_node *node = ctx->node;
	int i;

	if (x->rank == 5)
		return npu_op_unsupported(ctx->err, node,
					  "3-D convolution is not supported");
	if (x->rank != 3 && x->rank != 4)
		return npu_op_invalid(ctx->err, node, "X has rank %d", x->rank);
	if (w->rank != x->rank)
		return npu_op_invalid(ctx->err, node, "W has rank %d", w->rank);
	for (i = 0; i < w->rank; i++)
		if (w->dims[i] < 0)
			return npu_op_unsupported(ctx->err, node, "W shape unknown");
	return NPU_OK;
}

static npu_status qlinear_conv_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	const struct npu_value *b;
	struct npu_window win;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int i;
	npu_status st;

	st = npu_op_check_arity(ctx, 8, 9);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
							 "group", "kernel_shape",
							 "pads", "strides"));
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	w = &node->inputs[3]->shape;
	st = check_conv_shapes(ctx, x, w);
	if (st)
		return st;
	st = npu_qtriple(ctx, 0, true, -2);
	if (!st)
		st = npu_qtriple(ctx, 3, true, w->dims[0]);
	if (!st)
		st = npu_qtriple(ctx, 5, false, -2);
	if (st)
		return st;
	b = npu_op_input(node, 8);
	if (b && (b->dtype != NPU_DTYPE_INT32 || b->shape.rank != 1))
		return npu_op_unsupported(ctx->err, node,
					  "B must be 1-D int32, is %s rank %d",
					  npu_dtype_name(b->dtype), b->shape.rank);
	if (group < 1 || (x->dims[1] >= 0 && x->dims[1] != w->dims[1] * group) ||
	    w->dims[0] % group)
		return npu_op_invalid(ctx->err, node,
				      "channels do not match group %lld",
				      (long long)group);
	st = npu_op_window(node, x, &w->dims[2], x->rank - 2, false, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[7]->dtype;
	ctx->out_shapes[0].rank = x->rank;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = w->dims[0];
	for (i = 0; i < win.n; i++)
		ctx->out_shapes[0].dims[2 + i] = win.out[i];
	return NPU_OK;
}

/*
 * The int32 accumulators of a quantized convolution (QLinearConv,
 * ConvInteger): acc = bias + sum (x - xzp) * (w - wzp), wzp per output
 * channel or one for all (NULL: 0), laid out like the output.
 */
static npu_status npu_qconv_acc(const struct npu_node *node,
				const struct npu_tensor *x, int32_t xzp,
				const struct npu_tensor *w,
				const struct npu_tensor *wzp,
				const struct npu_tensor *b, int32_t *out,
				struct npu_error *err)
{
	struct npu_window win;
	bool one_d = x->shape.rank == 3;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int64_t nb, c, m, cg, mg, ih, iw, oh_n, ow_n, kh, kw, sh, sw, dh, dw, pt, pl;
	int64_t n_i, mi, oh, ow, ci, ki, kj, i, nx, nw;
	int32_t *xi, *wi;
	npu_status st;

	st = npu_op_window(node, &x->shape, &w->shape.dims[2], x->shape.rank - 2,
			   false, &win, err);
	if (st)
		return st;
	nb = x->shape.dims[0];
	c = x->shape.dims[1];
	m = w->shape.dims[0];
	cg = c / group;
	mg = m / group;
	ih = one_d ? 1 : win.in[0];
	iw = win.in[one_d ? 0 : 1];
	oh_n = one_d ? 1 : win.out[0];
	ow_n = win.out[one_d ? 0 : 1];
	kh = one_d ? 1 : win.k[0];
	kw = win.k[one_d ? 0 : 1];
	sh = one_d ? 1 : win.stride[0];
	sw = win.stride[one_d ? 0 : 1];
	dh = one_d ? 1 : win.dil[0];
	dw = win.dil[one_d ? 0 : 1];
	pt = one_d ? 0 : win.pad_begin[0];
	pl = win.pad_begin[one_d ? 0 : 1];
	if (nb * m * oh_n * ow_n == 0)
		return NPU_OK;
	/* Zero points subtracted once: padding then contributes 0. */
	nx = npu_op_numel(x);
	nw = npu_op_numel(w);
	xi = malloc((size_t)(nx ? nx : 1) * sizeof(int32_t));
	wi = malloc((size_t)(nw ? nw : 1) * sizeof(int32_t));
	if (!xi || !wi) {
		free(xi);
		free(wi);
		return npu_op_error(err, node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < nx; i++)
		xi[i] = npu_q8_get(x, i) - xzp;
	for (i = 0; i < nw; i++)
		wi[i] = npu_q8_get(w, i) -
			(wzp ? npu_q8_at(wzp, i / (nw / m)) : 0);
	for (n_i = 0; n_i < nb; n_i++)
		for (mi = 0; mi < m; mi++) {
			int64_t g = mi / mg;
			int32_t bias = b ? ((const int32_t *)b->data)[mi] : 0;

			for (oh = 0; oh < oh_n; oh++)
				for (ow = 0; ow < ow_n; ow++) {
					int32_t acc = bias;

					for (ci = 0; ci < cg; ci++) {
						const int32_t *xp = xi + (n_i * c + g * cg + ci) * ih * iw;
						const int32_t *wp = wi + (mi * cg + ci) * kh * kw;

						for (ki = 0; ki < kh; ki++) {
							int64_t y0 = oh * sh - pt + ki * dh;

							if (y0 < 0 || y0 >= ih)
								continue;
							for (kj = 0; kj < kw; kj++) {
								int64_t x0 = ow * sw - pl + kj * dw;

								if (x0 >= 0 && x0 < iw)
									acc += xp[y0 * iw + x0] * wp[ki * kw + kj];
							}
						}
					}
					out[((n_i * m + mi) * oh_n + oh) * ow_n + ow] = acc;
				}
		}
	free(xi);
	free(wi);
	return NPU_OK;
}

static npu_status qlinear_conv_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *const *in = ctx->inputs;
	const struct npu_tensor *x = in[0], *w = in[3];
	struct npu_tensor *y = ctx->outputs[0];
	int32_t yzp = npu_q8_at(in[7], 0), *acc;
	float x_s = npu_f32_at(in[1], 0), y_s = npu_f32_at(in[6], 0);
	int64_t n = npu_op_numel(y), m = w->shape.dims[0], per_m, i;
	npu_status st;

	if (n == 0)
		return NPU_OK;
	acc = malloc((size_t)n * sizeof(*acc));
	if (!acc)
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY, "out of memory");
	st = npu_qconv_acc(node, x, npu_q8_at(in[2], 0), w, in[5],
			   npu_op_in(ctx, 8), acc, ctx->err);
	per_m = n / (y->shape.dims[0] * m);
	for (i = 0; !st && i < n; i++) {
		float mult = x_s * npu_f32_at(in[4], (i / per_m) % m) / y_s;

		npu_q8_put(y->data, y->dtype, i, (double)acc[i] * mult, yzp);
	}
	free(acc);
	return st;
}

NPU_CPU_OP_DEF(qlinear_conv) = {
	.op_type = "QLinearConv", .domain = "", .since_version = 10,
	.max_version = 21, .infer = qlinear_conv_infer,
	.compute = qlinear_conv_compute,
};

/* ---- ConvInteger ---- */

/* ConvInteger / MatMulInteger: (u)int8 operands, zero points of their type. */
static npu_status check_integer_operands(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	size_t i;

	for (i = 0; i < node->num_inputs; i++) {
		const struct npu_value *v = node->inputs[i];

		if (v && !npu_is_q8(v->dtype))
			return npu_op_unsupported(ctx->err, node,
						  "input %zu '%s' has type %s, not supported",
						  i, v->name, npu_dtype_name(v->dtype));
		if (v && i >= 2 && v->dtype != node->inputs[i - 2]->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input %zu (zero point) has type %s, its data %s",
					      i, npu_dtype_name(v->dtype),
					      npu_dtype_name(node->inputs[i - 2]->dtype));
	}
	return NPU_OK;
}

static npu_status conv_integer_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *x, *w;
	struct npu_window win;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int d;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 4);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("auto_pad", "dilations",
							 "group", "kernel_shape",
							 "pads", "strides"));
	if (st)
		return st;
	st = check_integer_operands(ctx);
	if (st)
		return st;
	x = &node->inputs[0]->shape;
	w = &node->inputs[1]->shape;
	st = check_conv_shapes(ctx, x, w);
	if (st)
		return st;
	st = npu_q_param(ctx, 2, -2, false);
	if (!st)
		st = npu_q_param(ctx, 3, w->dims[0], true);
	if (st)
		return st;
	if (group < 1 || (x->dims[1] >= 0 && x->dims[1] != w->dims[1] * group) ||
	    w->dims[0] % group)
		return npu_op_invalid(ctx->err, node,
				      "channels do not match group %lld",
				      (long long)group);
	st = npu_op_window(node, x, &w->dims[2], x->rank - 2, false, &win,
			   ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_INT32;
	ctx->out_shapes[0].rank = x->rank;
	ctx->out_shapes[0].dims[0] = x->dims[0];
	ctx->out_shapes[0].dims[1] = w->dims[0];
	for (d = 0; d < win.n; d++)
		ctx->out_shapes[0].dims[2 + d] = win.out[d];
	return NPU_OK;
}

static npu_status conv_integer_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *xzp = npu_op_in(ctx, 2);

	return npu_qconv_acc(ctx->node, ctx->inputs[0],
			     xzp ? npu_q8_at(xzp, 0) : 0, ctx->inputs[1],
			     npu_op_in(ctx, 3), NULL, ctx->outputs[0]->data,
			     ctx->err);
}

NPU_CPU_OP_DEF(conv_integer) = {
	.op_type = "ConvInteger", .domain = "", .since_version = 10,
	.max_version = 21, .infer = conv_integer_infer,
	.compute = conv_integer_compute,
};

/* ---- MatMulInteger ---- */

static npu_status matmul_integer_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *a, *b;
	struct npu_shape ba, bb;
	int r;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 4);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	st = check_integer_operands(ctx);
	if (st)
		return st;
	a = &node->inputs[0]->shape;
	b = &node->inputs[1]->shape;
	if (a->rank < 2 || b->rank < 2)
		return npu_op_unsupported(ctx->err, node,
					  "1-D operands are not supported");
	st = npu_q_param(ctx, 2, a->dims[a->rank - 2], true);
	if (!st)
		st = npu_q_param(ctx, 3, b->dims[b->rank - 1], true);
	if (st)
		return st;
	if (a->dims[a->rank - 1] >= 0 && b->dims[b->rank - 2] >= 0 &&
	    a->dims[a->rank - 1] != b->dims[b->rank - 2])
		return npu_op_invalid(ctx->err, node,
				      "inner dimensions differ (%lld vs %lld)",
				      (long long)a->dims[a->rank - 1],
				      (long long)b->dims[b->rank - 2]);
	ba = *a;
	ba.rank -= 2;
	bb = *b;
	bb.rank -= 2;
	st = npu_op_broadcast_shape(ctx, &ba, &bb, &ctx->out_shapes[0]);
	if (st)
		return st;
	r = ctx->out_shapes[0].rank;
	ctx->out_shapes[0].dims[r] = a->dims[a->rank - 2];
	ctx->out_shapes[0].dims[r + 1] = b->dims[b->rank - 1];
	ctx->out_shapes[0].rank = r + 2;
	ctx->out_dtypes[0] = NPU_DTYPE_INT32;
	return NPU_OK;
}

static npu_status matmul_integer_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
	const struct npu_tensor *azp = npu_op_in(ctx, 2), *bzp = npu_op_in(ctx, 3);
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_shape ba = a->shape, bb = b->shape, batch = y->shape;
	const struct npu_shape *ins[2] = { &ba, &bb };
	int64_t m = a->shape.dims[a->shape.rank - 2];
	int64_t k = a->shape.dims[a->shape.rank - 1];
	int64_t n = b->shape.dims[b->shape.rank - 1];
	int64_t r, e, i, j, l, off[2];
	int32_t *yv = y->data;
	struct npu_bcast bc;

	ba.rank -= 2;
	bb.rank -= 2;
	batch.rank -= 2;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	npu_bcast_init(&bc, &batch, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, off);
		for (e = 0; e < bc.len; e++) {
			int64_t ao = (off[0] + e * bc.step[0]) * m * k;
			int64_t bo = (off[1] + e * bc.step[1]) * k * n;
			int64_t yo = (r * bc.len + e) * m * n;

			for (i = 0; i < m; i++) {
				int32_t az = azp ? npu_q8_at(azp, i) : 0;

				for (j = 0; j < n; j++) {
					int32_t bz = bzp ? npu_q8_at(bzp, j) : 0;
					int32_t acc = 0;

					for (l = 0; l < k; l++)
						acc += (npu_q8_get(a, ao + i * k + l) - az) *
						       (npu_q8_get(b, bo + l * n + j) - bz);
					yv[yo + i * n + j] = acc;
				}
			}
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(matmul_integer) = {
	.op_type = "MatMulInteger", .domain = "", .since_version = 10,
	.max_version = 21, .infer = matmul_integer_infer,
	.compute = matmul_integer_compute,
};

/* ---- DynamicQuantizeLinear ---- */

static npu_status dynamic_quantize_linear_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype f32[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, f32);
	if (st)
		return st;
	if (node->num_outputs != 3)
		return npu_op_invalid(ctx->err, node, "%zu outputs, expected 3",
				      node->num_outputs);
	ctx->out_dtypes[0] = NPU_DTYPE_UINT8;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	ctx->out_dtypes[1] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[1].rank = 0;
	ctx->out_dtypes[2] = NPU_DTYPE_UINT8;
	ctx->out_shapes[2].rank = 0;
	return NPU_OK;
}

/*
 * The range always includes 0; scale = range / 255, zero point =
 * round(-min / scale) clipped to [0, 255], then QuantizeLinear.
 */
static npu_status dynamic_quantize_linear_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const float *xv = x->data;
	int64_t n = npu_op_numel(x), i;
	float lo = 0, hi = 0, scale, zpf;
	int32_t zp;

	for (i = 0; i < n; i++) {
		lo = xv[i] < lo ? xv[i] : lo;
		hi = xv[i] > hi ? xv[i] : hi;
	}
	scale = (hi - lo) / 255.0f;
	zpf = scale > 0 ? nearbyintf(0.0f - lo / scale) : 0.0f;
	zp = (int32_t)(zpf < 0 ? 0 : zpf > 255 ? 255 : zpf);
	((float *)ctx->outputs[1]->data)[0] = scale;
	((uint8_t *)ctx->outputs[2]->data)[0] = (uint8_t)zp;
	for (i = 0; i < n; i++)
		npu_q8_put(ctx->outputs[0]->data, NPU_DTYPE_UINT8, i,
			   scale > 0 ? (double)(xv[i] / scale) : 0.0, zp);
	return NPU_OK;
}

NPU_CPU_OP_DEF(dynamic_quantize_linear) = {
	.op_type = "DynamicQuantizeLinear", .domain = "", .since_version = 11,
	.max_version = 21, .infer = dynamic_quantize_linear_infer,
	.compute = dynamic_quantize_linear_compute,
};
