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

/* ---- QuantizeLinear / DequantizeLinear ---- */

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

static npu_status quantize_compute(struct npu_op_ctx *ctx)
{
	return npu_qdq_compute(ctx, true);
}

static npu_status dequantize_compute(struct npu_op_ctx *ctx)
{
	return npu_qdq_compute(ctx, false);
}

NPU_CPU_OP_DEF(quantize_linear) = {
	.op_type = "QuantizeLinear",
	.domain = "",
	.compute = quantize_compute,
};

NPU_CPU_OP_DEF(dequantize_linear) = {
	.op_type = "DequantizeLinear",
	.domain = "",
	.compute = dequantize_compute,
};

/* ---- shared checks for QLinearMatMul / QLinearConv ---- */

/* ---- QLinearMatMul ---- */

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
	.op_type = "QLinearMatMul",
	.domain = "",
	.compute = qlinear_matmul_compute,
};

/* ---- QLinearConv ---- */

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
	.op_type = "QLinearConv",
	.domain = "",
	.compute = qlinear_conv_compute,
};

/* ---- ConvInteger ---- */

static npu_status conv_integer_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *xzp = npu_op_in(ctx, 2);

	return npu_qconv_acc(ctx->node, ctx->inputs[0],
			     xzp ? npu_q8_at(xzp, 0) : 0, ctx->inputs[1],
			     npu_op_in(ctx, 3), NULL, ctx->outputs[0]->data,
			     ctx->err);
}

NPU_CPU_OP_DEF(conv_integer) = {
	.op_type = "ConvInteger",
	.domain = "",
	.compute = conv_integer_compute,
};

/* ---- MatMulInteger ---- */

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
	.op_type = "MatMulInteger",
	.domain = "",
	.compute = matmul_integer_compute,
};

/* ---- DynamicQuantizeLinear ---- */

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
	.op_type = "DynamicQuantizeLinear",
	.domain = "",
	.compute = dynamic_quantize_linear_compute,
};
