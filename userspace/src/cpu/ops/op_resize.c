// SPDX-License-Identifier: MIT
/*
 * Resize (opsets 10 - 19) and Upsample (7 - 9). Modes nearest (all
 * four nearest_mode values), linear and cubic, every
 * coordinate_transformation_mode, scales or sizes, opset 18's axes and
 * keep_aspect_ratio_policy. antialias is rejected. Types: float; float16 /
 * bfloat16 widened to float; double interpolated in double (weights too);
 * any other fixed-size type in nearest mode, by gathering.
 *
 * Interpolation is separable and, as in the ONNX reference, applied one
 * axis at a time from the last to the first: each output index of an axis
 * gets up to four (source index, weight) taps, or the extrapolation value.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "graph/schemas/resize.h"

/* Source coordinate of output index o on axis d. */
static double npu_resize_coord(const struct npu_resize *rs, int d, int64_t o)
{
	double s = rs->scale[d], x = (double)o;
	/* The reference uses the unrounded output length in * scale. */
	double in = (double)rs->in[d], out = in * s;

	switch (rs->ctm) {
	case CTM_HALF_PIXEL:
		return (x + 0.5) / s - 0.5;
	case CTM_HALF_PIXEL_SYMMETRIC: {
		double adj = (double)rs->out[d] / out, center = in / 2;

		return center * (1 - adj) + (x + 0.5) / s - 0.5;
	}
	case CTM_PYTORCH_HALF_PIXEL:
		return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
	case CTM_ALIGN_CORNERS:
		return out == 1 ? 0.0 : x * (in - 1) / (out - 1);
	case CTM_ASYMMETRIC:
		return x / s;
	case CTM_TF_HALF_PIXEL_FOR_NN:
		return (x + 0.5) / s;
	case CTM_TF_CROP_AND_RESIZE: {
		double a = rs->roi_start[d], b = rs->roi_end[d];

		return out > 1 ? a * (in - 1) + x * (b - a) * (in - 1) / (out - 1)
				      : 0.5 * (a + b) * (in - 1);
	}
	}
	return x;
}

struct npu_taps {
	int n;			/* taps per output index: 1, 2 or 4 */
	int64_t *idx;		/* [out][n] */
	float *w;		/* [out][n] */
	double *wd;		/* [out][n], the same in double; NULL: not wanted */
	bool *extrap;		/* [out] */
};

static void npu_cubic_coeffs(double r, double a, double *c)
{
	double t = r + 1, u = 1 - r, v = 2 - r;

	c[0] = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
	c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	c[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
	c[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

static void npu_resize_taps(const struct npu_resize *rs, int d,
			    struct npu_taps *tp)
{
	int64_t in = rs->in[d], o, j;

	for (o = 0; o < rs->out[d]; o++) {
		double x = npu_resize_coord(rs, d, o), base = floor(x), r = x - base;
		int64_t *idx = tp->idx + o * tp->n;
		float *w = tp->w + o * tp->n;
		double c[4] = { 1, 0, 0, 0 }, sum = 0;
		int64_t first;

		tp->extrap[o] = rs->ctm == CTM_TF_CROP_AND_RESIZE &&
				(x < 0 || x > (double)(in - 1));
		if (rs->mode == RS_NEAREST) {
			double v;

			switch (rs->nearest) {
			case NM_ROUND_PREFER_FLOOR: v = r <= 0.5 ? base : base + 1; break;
			case NM_ROUND_PREFER_CEIL: v = r < 0.5 ? base : base + 1; break;
			case NM_FLOOR: v = base; break;
			default: v = ceil(x); break;
			}
			if (r == 0)
				v = base;
			idx[0] = v < 0 ? 0 : (v > (double)(in - 1) ? in - 1 : (int64_t)v);
			w[0] = 1.0f;
			if (tp->wd)
				tp->wd[o] = 1.0;
			continue;
		}
		if (rs->mode == RS_LINEAR) {
			c[0] = 1 - r;
			c[1] = r;
			first = (int64_t)base;
		} else {
			npu_cubic_coeffs(r, rs->cubic_a, c);
			first = (int64_t)base - 1;
		}
		for (j = 0; j < tp->n; j++) {
			int64_t s = first + j;

			if (rs->exclude_outside && (s < 0 || s >= in))
				c[j] = 0;
			sum += c[j];
			idx[j] = s < 0 ? 0 : (s >= in ? in - 1 : s);
		}
		for (j = 0; j < tp->n; j++) {
			double wj = rs->exclude_outside && sum != 0 ? c[j] / sum : c[j];

			w[j] = (float)wj;
			if (tp->wd)
				tp->wd[o * tp->n + j] = wj;
		}
	}
}

/*
 * y[outer][out][inner] from x[outer][in][inner] with the axis' taps, for
 * element (and weight) type T: float, and double so a double Resize is
 * interpolated in double. 'wf' is the taps' weight array of that type.
 */
#define NPU_RESIZE_AXIS(sfx, T, wf)						\
static void npu_resize_axis_##sfx(const T *x, T *y, int64_t outer,		\
				  int64_t in, int64_t out, int64_t inner,	\
				  const struct npu_taps *tp, T extrap)		\
{										\
	int64_t a, o, i;							\
	int j;									\
										\
	for (a = 0; a < outer; a++) {						\
		const T *xa = x + a * in * inner;				\
		T *ya = y + a * out * inner;					\
										\
		for (o = 0; o < out; o++) {					\
			T *yo = ya + o * inner;					\
			const int64_t *idx = tp->idx + o * tp->n;		\
			const T *w = tp->wf + o * tp->n;			\
										\
			if (tp->extrap[o]) {					\
				for (i = 0; i < inner; i++)			\
					yo[i] = extrap;				\
				continue;					\
			}							\
			if (inner == 1) {					\
				T acc = 0;					\
										\
				for (j = 0; j < tp->n; j++)			\
					acc += w[j] * xa[idx[j]];		\
				yo[0] = tp->n == 1 ? xa[idx[0]] : acc;		\
				continue;					\
			}							\
			if (tp->n == 1) {					\
				memcpy(yo, xa + idx[0] * inner,			\
				       (size_t)inner * sizeof(T));		\
				continue;					\
			}							\
			for (i = 0; i < inner; i++)				\
				yo[i] = 0;					\
			for (j = 0; j < tp->n; j++) {				\
				const T *xs = xa + idx[j] * inner;		\
				T wj = w[j];					\
										\
				if (wj == 0)					\
					continue;				\
				for (i = 0; i < inner; i++)			\
					yo[i] += wj * xs[i];			\
			}							\
		}							\
	}								\
}

NPU_RESIZE_AXIS(f32, float, w)
NPU_RESIZE_AXIS(f64, double, wd)

/* One axis pass, its 'outer' slices split over the pool. */
struct npu_resize_job {
	const void *x;
	void *y;
	bool f64;		/* double elements, else float */
	int64_t in, out, inner;
	const struct npu_taps *tp;
	double extrap;
};

static void npu_resize_slices(void *ctx, size_t begin, size_t end)
{
	const struct npu_resize_job *j = ctx;
	int64_t xo = (int64_t)begin * j->in * j->inner;
	int64_t yo = (int64_t)begin * j->out * j->inner;

	if (j->f64)
		npu_resize_axis_f64((const double *)j->x + xo, (double *)j->y + yo,
				    (int64_t)(end - begin), j->in, j->out, j->inner,
				    j->tp, j->extrap);
	else
		npu_resize_axis_f32((const float *)j->x + xo, (float *)j->y + yo,
				    (int64_t)(end - begin), j->in, j->out, j->inner,
				    j->tp, (float)j->extrap);
}

/*
 * Nearest resize of the last two axes only (the usual 2-D upsample): each
 * output row is a gather of one input row, written straight into y (no
 * intermediate pass); (plane, row) pairs over the pool.
 */
struct npu_resize_nearest2d_job {
	const float *x;
	float *y;
	int64_t in_h, in_w, out_h, out_w;
	const int64_t *idx_h, *idx_w;
	int rep;		/* 2: idx_w[ow] == ow / 2 (each column twice) */
};

static void npu_resize_nearest2d_rows(void *ctx, size_t begin, size_t end)
{
	const struct npu_resize_nearest2d_job *j = ctx;
	size_t t;

	for (t = begin; t < end; t++) {
		int64_t plane = (int64_t)t / j->out_h, oh = (int64_t)t % j->out_h, ow;
		const float *xr = j->x + (plane * j->in_h + j->idx_h[oh]) * j->in_w;
		float *yr = j->y + (plane * j->out_h + oh) * j->out_w;

		/* An upsample repeats rows: copy the one just written. */
		if (t > begin && oh && j->idx_h[oh] == j->idx_h[oh - 1]) {
			memcpy(yr, yr - j->out_w, (size_t)j->out_w * sizeof(float));
			continue;
		}
		if (j->rep == 2) {
			for (ow = 0; ow < j->in_w; ow++)
				yr[2 * ow] = yr[2 * ow + 1] = xr[ow];
			continue;
		}
		for (ow = 0; ow < j->out_w; ow++)
			yr[ow] = xr[j->idx_w[ow]];
	}
}

/*
 * Working memory of one Resize: the pool's scratch (no allocation per
 * run), else its own; *own is what to free.
 */
static void *npu_resize_mem(struct npu_op_ctx *ctx, size_t bytes, void **own)
{
	void *p = npu_threadpool_scratch(ctx->pool, bytes);

	*own = NULL;
	if (!p)
		p = *own = malloc(bytes ? bytes : 1);
	return p;
}

/* Carve n bytes, 64-byte aligned, from *cur. */
static void *npu_resize_take(unsigned char **cur, size_t n)
{
	void *p = *cur;

	*cur += (n + 63) & ~(size_t)63;
	return p;
}

static bool npu_resize_nearest2d(struct npu_op_ctx *ctx,
				 const struct npu_resize *rs)
{
	const struct npu_tensor *x = ctx->inputs[0];
	int r = x->shape.rank, d;
	struct npu_resize_nearest2d_job job = { .x = x->data, .y = ctx->outputs[0]->data };
	struct npu_taps th = { .n = 1 }, tw = { .n = 1 };
	int64_t planes = 1;
	bool ok = false;

	if (rs->mode != RS_NEAREST || r < 2 || rs->ctm == CTM_TF_CROP_AND_RESIZE ||
	    x->dtype != NPU_DTYPE_FLOAT)
		return false;
	for (d = 0; d < r - 2; d++) {
		if (rs->in[d] != rs->out[d] || rs->scale[d] != 1.0)
			return false;
		planes *= rs->in[d];
	}
	job.in_h = rs->in[r - 2];
	job.in_w = rs->in[r - 1];
	job.out_h = rs->out[r - 2];
	job.out_w = rs->out[r - 1];
	if (!job.in_h || !job.in_w)
		return false;
	{
		size_t oh = (size_t)job.out_h, ow = (size_t)job.out_w, i;
		size_t bytes = 3 * 64 + oh * (sizeof(int64_t) + sizeof(float) + 1) +
			       3 * 64 + ow * (sizeof(int64_t) + sizeof(float) + 1);
		void *own;
		unsigned char *mem = npu_resize_mem(ctx, bytes, &own);

		if (!mem)
			return false;
		th.idx = npu_resize_take(&mem, oh * sizeof(int64_t));
		th.w = npu_resize_take(&mem, oh * sizeof(float));
		th.extrap = npu_resize_take(&mem, oh);
		tw.idx = npu_resize_take(&mem, ow * sizeof(int64_t));
		tw.w = npu_resize_take(&mem, ow * sizeof(float));
		tw.extrap = npu_resize_take(&mem, ow);
		npu_resize_taps(rs, r - 2, &th);
		npu_resize_taps(rs, r - 1, &tw);
		job.idx_h = th.idx;
		job.idx_w = tw.idx;
		job.rep = job.out_w == 2 * job.in_w ? 2 : 0;
		for (i = 0; i < ow && job.rep; i++)
			if (tw.idx[i] != (int64_t)(i / 2))
				job.rep = 0;
		npu_threadpool_parallel_for(ctx->pool, (size_t)(planes * job.out_h),
					    1 + (size_t)(NPU_VEC_GRAIN / (job.out_w + 1)),
					    npu_resize_nearest2d_rows, &job);
		ok = true;
		free(own);
	}
	return ok;
}

static npu_status npu_resize_compute(struct npu_op_ctx *ctx);

/*
 * Nearest resize of a non-float type: the float kernel resizes the flat
 * input indices (exact below 2^24), then the elements are gathered by
 * them, so one kernel serves every type.
 */
static npu_status npu_resize_gather(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0], xi = *x, yi = *y, *out_p[1] = { &yi };
	const struct npu_tensor *in_p[4];
	struct npu_op_ctx w = *ctx;
	int64_t n = npu_op_numel(x), m = npu_op_numel(y), i;
	size_t es = npu_dtype_size(x->dtype), k;
	npu_status st;

	if (n > (1 << 24))
		return npu_op_unsupported(ctx->err, ctx->node,
					  "%s input of %lld elements (nearest resize of a non-float type takes at most 2^24)",
					  npu_dtype_name(x->dtype), (long long)n);
	for (k = 0; k < ctx->num_inputs && k < 4; k++)
		in_p[k] = ctx->inputs[k];
	xi.dtype = yi.dtype = NPU_DTYPE_FLOAT;
	xi.nbytes = (size_t)n * sizeof(float);
	yi.nbytes = (size_t)m * sizeof(float);
	xi.data = malloc(xi.nbytes ? xi.nbytes : 1);
	yi.data = malloc(yi.nbytes ? yi.nbytes : 1);
	if (!xi.data || !yi.data) {
		free(xi.data);
		free(yi.data);
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < n; i++)
		((float *)xi.data)[i] = (float)i;
	in_p[0] = &xi;
	w.inputs = in_p;
	w.num_inputs = k;
	w.outputs = out_p;
	st = npu_resize_compute(&w);
	for (i = 0; !st && i < m; i++) {
		float at = ((const float *)yi.data)[i];

		if (!(at >= 0 && at < (float)n))	/* never: nearest picks inputs */
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_INTERNAL,
					  "nearest index %g out of range", (double)at);
		else
			memcpy((char *)y->data + (size_t)i * es,
			       (const char *)x->data + (size_t)at * es, es);
	}
	free(xi.data);
	free(yi.data);
	return st;
}

static npu_status npu_resize_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_tensor *t[4] = { NULL };
	struct npu_resize rs;
	void *buf[2] = { NULL, NULL };
	struct npu_taps taps;
	void *own = NULL;
	const void *cur = x->data;
	bool f64 = x->dtype == NPU_DTYPE_DOUBLE;
	size_t es = f64 ? sizeof(double) : sizeof(float);
	int64_t cur_dims[NPU_MAX_RANK], max_n = npu_op_numel(x), max_out = 1;
	int d, pass = 0, last = -1;
	size_t k;
	npu_status st;

	if (!f64 && npu_op_wide_dtype(x->dtype, false) != NPU_DTYPE_FLOAT)
		return npu_resize_gather(ctx);
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, npu_resize_compute);
	for (k = 0; k < 4; k++)
		t[k] = npu_op_in(ctx, k);
	st = npu_resize_setup(node, &x->shape, t, &rs, ctx->err);
	if (st)
		return st;
	for (d = 0; d < x->shape.rank; d++) {
		if (rs.out[d] != y->shape.dims[d])
			return npu_op_invalid(ctx->err, node,
					      "axis %d: resize gives %lld, output has %lld",
					      d, (long long)rs.out[d],
					      (long long)y->shape.dims[d]);
		cur_dims[d] = rs.in[d];
	}
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	/* Axes that change: identity axes (same size, scale 1) are skipped. */
	/* Passes run from the last axis down: the lowest one writes y. */
	for (d = x->shape.rank - 1; d >= 0; d--)
		if (rs.in[d] != rs.out[d] || rs.scale[d] != 1.0 ||
		    rs.ctm == CTM_TF_CROP_AND_RESIZE)
			last = d;
	if (last < 0) {
		memcpy(y->data, x->data, (size_t)npu_op_numel(x) * es);
		return NPU_OK;
	}
	if (npu_resize_nearest2d(ctx, &rs))
		return NPU_OK;
	/* The largest intermediate, simulating the passes. */
	{
		int64_t sim[NPU_MAX_RANK], n;

		memcpy(sim, cur_dims, sizeof(sim));
		for (d = x->shape.rank - 1; d >= 0; d--) {
			sim[d] = rs.out[d];
			n = 1;
			for (k = 0; k < (size_t)x->shape.rank; k++)
				n *= sim[k];
			if (n > max_n)
				max_n = n;
		}
	}
	/* Both intermediates and the largest axis's taps, in one block. */
	for (d = 0; d < x->shape.rank; d++)
		if (rs.out[d] > max_out)
			max_out = rs.out[d];
	{
		size_t bytes = 2 * ((size_t)max_n * es + 64) +
			       (size_t)max_out * 4 * (sizeof(int64_t) + sizeof(float)) +
			       (f64 ? (size_t)max_out * 4 * sizeof(double) + 64 : 0) +
			       (size_t)max_out + 3 * 64;
		unsigned char *mem = npu_resize_mem(ctx, bytes, &own);

		if (!mem)
			goto oom;
		buf[0] = npu_resize_take(&mem, (size_t)max_n * es);
		buf[1] = npu_resize_take(&mem, (size_t)max_n * es);
		taps.idx = npu_resize_take(&mem, (size_t)max_out * 4 * sizeof(int64_t));
		taps.w = npu_resize_take(&mem, (size_t)max_out * 4 * sizeof(float));
		taps.wd = f64 ? npu_resize_take(&mem, (size_t)max_out * 4 * sizeof(double))
			      : NULL;
		taps.extrap = npu_resize_take(&mem, (size_t)max_out);
	}
	for (d = x->shape.rank - 1; d >= 0; d--) {
		struct npu_taps tp = taps;
		int64_t outer, inner;
		void *dst;

		if (!(rs.in[d] != rs.out[d] || rs.scale[d] != 1.0 ||
		      rs.ctm == CTM_TF_CROP_AND_RESIZE))
			continue;
		if (rs.in[d] == 0) {
			free(own);
			return npu_op_invalid(ctx->err, node, "axis %d is empty", d);
		}
		cur_dims[d] = rs.out[d];
		dst = d == last ? y->data : buf[pass];
		tp.n = rs.mode == RS_NEAREST ? 1 : (rs.mode == RS_LINEAR ? 2 : 4);
		npu_resize_taps(&rs, d, &tp);
		outer = 1;
		for (k = 0; k < (size_t)d; k++)
			outer *= cur_dims[k];
		inner = 1;
		for (k = (size_t)d + 1; k < (size_t)x->shape.rank; k++)
			inner *= cur_dims[k];
		{
			struct npu_resize_job job = {
				.x = cur, .y = dst, .f64 = f64, .in = rs.in[d], .out = rs.out[d],
				.inner = inner, .tp = &tp, .extrap = rs.extrapolation,
			};
			int64_t per = rs.out[d] * inner * tp.n;

			npu_threadpool_parallel_for(ctx->pool, (size_t)outer,
						    per >= NPU_VEC_GRAIN ? 1 :
						    (size_t)(NPU_VEC_GRAIN / (per ? per : 1)),
						    npu_resize_slices, &job);
		}
		cur = dst;
		pass ^= 1;
	}
	free(own);
	return NPU_OK;
oom:
	return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY, "out of memory");
}

NPU_CPU_OP_DEF(resize) = {
	.op_type = "Resize",
	.domain = "",
	.compute = npu_resize_compute,
};

NPU_CPU_OP_DEF(upsample) = {
	.op_type = "Upsample",
	.domain = "",
	.compute = npu_resize_compute,
};
