// SPDX-License-Identifier: MIT
/*
 * Spectral ops: DFT (opset 17: axis attribute; 20: axis input), STFT and
 * MelWeightMatrix. DFT and STFT take float / double signals whose last
 * dim holds 1 (real) or 2 (real, imaginary) values; outputs are complex
 * ([..., 2]). A direct O(N * bins) transform in double - exact rather
 * than fast - with numpy.fft's conventions: dft_length zero-pads or
 * truncates, the inverse divides by N, onesided keeps the first
 * N / 2 + 1 bins.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/dft.h"

static double npu_dft_get(const struct npu_tensor *t, int64_t i)
{
	return t->dtype == NPU_DTYPE_DOUBLE ? ((const double *)t->data)[i] :
					      ((const float *)t->data)[i];
}

static void npu_dft_set(struct npu_tensor *t, int64_t i, double v)
{
	if (t->dtype == NPU_DTYPE_DOUBLE)
		((double *)t->data)[i] = v;
	else
		((float *)t->data)[i] = (float)v;
}

/*
 * One transform: 'len' complex-or-real samples of x starting at element
 * 'xo' (complex: 'cplx' values per sample), 'xs' elements apart, each
 * times w[n] (NULL: 1); 'bins' outputs of an N-point DFT written to y at
 * 'yo', 'ys' elements apart (real, imaginary adjacent).
 */
static void npu_dft_1d(const struct npu_tensor *x, int64_t xo, int64_t xs,
		       int64_t len, int64_t cplx, const struct npu_tensor *w,
		       int64_t n_fft, bool inverse, int64_t bins,
		       struct npu_tensor *y, int64_t yo, int64_t ys)
{
	double sign = inverse ? 1.0 : -1.0;
	int64_t k, n, m = len < n_fft ? len : n_fft;

	for (k = 0; k < bins; k++) {
		double re = 0, im = 0;

		for (n = 0; n < m; n++) {
			double a = sign * 2 * M_PI * (double)((k * n) % n_fft) /
				   (double)n_fft;
			double xr = npu_dft_get(x, xo + n * xs);
			double xi = cplx == 2 ? npu_dft_get(x, xo + n * xs + 1) : 0;
			double c = cos(a), s = sin(a);

			if (w) {
				double wv = npu_dft_get(w, n);

				xr *= wv;
				xi *= wv;
			}
			re += xr * c - xi * s;
			im += xr * s + xi * c;
		}
		if (inverse) {
			re /= (double)n_fft;
			im /= (double)n_fft;
		}
		npu_dft_set(y, yo + k * ys, re);
		npu_dft_set(y, yo + k * ys + 1, im);
	}
}

/* ---- DFT ---- */

static npu_status dft_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	bool inverse = npu_node_attr_int_or(ctx->node, "inverse", 0) != 0;
	int rank = x->shape.rank, axis;
	int64_t n_fft, cplx = x->shape.dims[rank - 1], outer, inner, len, bins;
	int64_t o, j;
	npu_status st;

	st = npu_dft_args(ctx->node, rank, npu_op_in(ctx, 1), npu_op_in(ctx, 2),
			  0, &axis, &n_fft, ctx->err);
	if (st)
		return st;
	len = x->shape.dims[axis];
	if (!npu_op_in(ctx, 1))
		n_fft = len;
	bins = y->shape.dims[axis];
	if (n_fft < 1 ||
	    bins != (npu_node_attr_int_or(ctx->node, "onesided", 0) ?
		     n_fft / 2 + 1 : n_fft))
		return npu_op_invalid(ctx->err, ctx->node,
				      "output axis of %lld does not match dft_length %lld",
				      (long long)bins, (long long)n_fft);
	outer = npu_op_dims_prod(&x->shape, 0, axis);
	inner = npu_op_dims_prod(&x->shape, axis + 1, rank - 1);
	for (o = 0; o < outer; o++)
		for (j = 0; j < inner; j++)
			npu_dft_1d(x, ((o * len) * inner + j) * cplx, inner * cplx,
				   len, cplx, NULL, n_fft, inverse, bins, y,
				   ((o * bins) * inner + j) * 2, inner * 2);
	return NPU_OK;
}

NPU_CPU_OP_DEF(dft) = {
	.op_type = "DFT",
	.domain = "",
	.compute = dft_compute,
};

/* ---- STFT ---- */

static npu_status stft_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *win = npu_op_in(ctx, 2);
	struct npu_tensor *y = ctx->outputs[0];
	int64_t step, fl, frames, b, f, bins = y->shape.dims[2];
	int64_t len = x->shape.dims[1], cplx = x->shape.dims[2];
	npu_status st;

	st = npu_stft_args(ctx->node, &x->shape, ctx->inputs[1],
			   win ? &win->shape : NULL, npu_op_in(ctx, 3), &step,
			   &fl, &frames, ctx->err);
	if (st)
		return st;
	if (y->shape.dims[1] != frames ||
	    bins != (npu_node_attr_int_or(ctx->node, "onesided", 1) ? fl / 2 + 1 : fl))
		return npu_op_invalid(ctx->err, ctx->node,
				      "output shape does not match %lld frames of %lld",
				      (long long)frames, (long long)fl);
	for (b = 0; b < x->shape.dims[0]; b++)
		for (f = 0; f < frames; f++) {
			int64_t begin = f * step;
			int64_t n = len - begin < fl ? len - begin : fl;

			npu_dft_1d(x, (b * len + begin) * cplx, cplx, n, cplx, win,
				   fl, false, bins, y, ((b * frames + f) * bins) * 2,
				   2);
		}
	return NPU_OK;
}

NPU_CPU_OP_DEF(stft) = {
	.op_type = "STFT",
	.domain = "",
	.compute = stft_compute,
};

/* ---- MelWeightMatrix ---- */

/*
 * Triangular filters between mel-spaced points (HTK mel scale: 2595 *
 * log10(1 + f / 700)), num_mel_bins + 2 points over the edges, each
 * mapped to the spectrogram bin floor((dft_length + 1) * f / rate), as
 * the ONNX reference computes them.
 */
static npu_status mel_weight_matrix_compute(struct npu_op_ctx *ctx)
{
	struct npu_tensor *y = ctx->outputs[0];
	int64_t rows, i, j, *pt;
	double lo_mel, hi_mel, step;
	struct npu_mel_args a;
	npu_status st;

	st = npu_mel_args(ctx->node, ctx->inputs, &a, ctx->err);
	if (st)
		return st;
	rows = a.dft_len / 2 + 1;
	if (y->shape.dims[0] != rows || y->shape.dims[1] != a.bins)
		return npu_op_invalid(ctx->err, ctx->node,
				      "output shape does not match [%lld, %lld]",
				      (long long)rows, (long long)a.bins);
	pt = malloc((size_t)(a.bins + 2) * sizeof(*pt));
	if (!pt)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	lo_mel = 2595 * log10(1 + a.lo_hz / 700);
	hi_mel = 2595 * log10(1 + a.hi_hz / 700);
	step = (hi_mel - lo_mel) / (double)(a.bins + 2);
	for (i = 0; i < a.bins + 2; i++) {
		double hz = 700 * (pow(10, ((double)i * step + lo_mel) / 2595) - 1);

		pt[i] = (int64_t)floor((double)(a.dft_len + 1) * hz /
				       (double)a.rate);
	}
	for (i = 0; i < rows * a.bins; i++)
		npu_dft_set(y, i, 0);
	for (i = 0; i < a.bins; i++) {
		int64_t l = pt[i], c = pt[i + 1], h = pt[i + 2];

		if (l < 0 || c < l || h < c || c >= rows || h > rows) {
			free(pt);
			return npu_op_invalid(ctx->err, ctx->node,
					      "mel bin %lld spans spectrogram bins %lld .. %lld, outside [0, %lld)",
					      (long long)i, (long long)l, (long long)h,
					      (long long)rows);
		}
		if (c == l)
			npu_dft_set(y, c * a.bins + i, 1);
		else
			for (j = l; j <= c; j++)
				npu_dft_set(y, j * a.bins + i,
					    (double)(j - l) / (double)(c - l));
		for (j = c; j < h; j++)
			npu_dft_set(y, j * a.bins + i,
				    (double)(h - j) / (double)(h - c));
	}
	free(pt);
	return NPU_OK;
}

NPU_CPU_OP_DEF(mel_weight_matrix) = {
	.op_type = "MelWeightMatrix",
	.domain = "",
	.compute = mel_weight_matrix_compute,
};
