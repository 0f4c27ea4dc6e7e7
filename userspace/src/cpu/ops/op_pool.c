// SPDX-License-Identifier: MIT
/*
 * Pooling: MaxPool and AveragePool (1-D / 2-D, pads, auto_pad, strides,
 * dilations, ceil_mode, count_include_pad) on the npu_*pool2d_f32
 * kernels, with a direct loop for MaxPool's Indices output, int8 / uint8
 * MaxPool and 3-D windows; GlobalAveragePool and GlobalMaxPool for any
 * rank; MaxUnpool.
 */
#include <math.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"

/*
 * Direct pooling for what the fp32 1-D / 2-D kernels do not cover: the
 * Indices output, int8 / uint8 MaxPool, double and 3-D windows. Indices are flat
 * over the whole input, the spatial part row-major (storage_order 0) or
 * column-major (1).
 */
static npu_status npu_pool_direct(struct npu_op_ctx *ctx, bool is_max,
				  const struct npu_window *win)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0], *ind = npu_op_out(ctx, 1);
	bool col_major = npu_node_attr_int_or(ctx->node, "storage_order", 0) != 0;
	bool incl = npu_node_attr_int_or(ctx->node, "count_include_pad", 0) != 0;
	int64_t in[3] = { 1, 1, 1 }, out[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 };
	int64_t st[3] = { 1, 1, 1 }, dl[3] = { 1, 1, 1 }, pb[3] = { 0 }, pe[3] = { 0 };
	int64_t nc = x->shape.dims[0] * x->shape.dims[1], ch, o0, o1, o2, k0, k1, k2;
	int64_t in_sz, yi = 0;
	int d, off = 3 - win->n;

	/* Spatial dims right-aligned into three. */
	for (d = 0; d < win->n; d++) {
		in[off + d] = win->in[d];
		out[off + d] = win->out[d];
		k[off + d] = win->k[d];
		st[off + d] = win->stride[d];
		dl[off + d] = win->dil[d];
		pb[off + d] = win->pad_begin[d];
		pe[off + d] = win->pad_end[d];
	}
	in_sz = in[0] * in[1] * in[2];
	for (ch = 0; ch < nc; ch++)
		for (o0 = 0; o0 < out[0]; o0++)
			for (o1 = 0; o1 < out[1]; o1++)
				for (o2 = 0; o2 < out[2]; o2++, yi++) {
					double best = -INFINITY, sum = 0;
					int64_t best_i = -1, cnt = 0, cnt_pad = 0;

					for (k0 = 0; k0 < k[0]; k0++)
					for (k1 = 0; k1 < k[1]; k1++)
					for (k2 = 0; k2 < k[2]; k2++) {
						int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
						int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
						int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
						int64_t at;
						double v;

						if (i0 >= -pb[0] && i0 < in[0] + pe[0] &&
						    i1 >= -pb[1] && i1 < in[1] + pe[1] &&
						    i2 >= -pb[2] && i2 < in[2] + pe[2])
							cnt_pad++;
						if (i0 < 0 || i0 >= in[0] || i1 < 0 ||
						    i1 >= in[1] || i2 < 0 || i2 >= in[2])
							continue;
						at = ch * in_sz + (i0 * in[1] + i1) * in[2] + i2;
						v = npu_op_tensor_get(x, (size_t)at);
						cnt++;
						sum += v;
						if (best_i < 0 || v > best) {
							best = v;
							best_i = col_major ?
								ch * in_sz + (i2 * in[1] + i1) * in[0] + i0 :
								at;
						}
					}
					if (!is_max) {
						int64_t div = incl ? cnt_pad : cnt;

						if (y->dtype == NPU_DTYPE_DOUBLE)
							((double *)y->data)[yi] =
								div ? sum / (double)div : 0.0;
						else
							((float *)y->data)[yi] =
								div ? (float)(sum / (double)div) : 0.0f;
						continue;
					}
					switch (y->dtype) {
					case NPU_DTYPE_UINT8:
						((uint8_t *)y->data)[yi] = (uint8_t)(best_i < 0 ? 0 : best);
						break;
					case NPU_DTYPE_INT8:
						((int8_t *)y->data)[yi] = (int8_t)(best_i < 0 ? 0 : best);
						break;
					case NPU_DTYPE_DOUBLE:
						((double *)y->data)[yi] = best;
						break;
					default:
						((float *)y->data)[yi] = (float)best;
						break;
					}
					if (ind)
						((int64_t *)ind->data)[yi] = best_i < 0 ? 0 : best_i;
				}
	return NPU_OK;
}

static npu_status npu_pool_compute(struct npu_op_ctx *ctx, bool is_max)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	bool one_d = x->shape.rank == 3;
	struct npu_pool2d_params p;
	struct npu_window win;
	int64_t ks[NPU_WIN_MAX];
	int cnt;
	npu_status st;

	npu_op_ints_from_attr(node, "kernel_shape", ks, NPU_WIN_MAX, &cnt, NULL);
	st = npu_op_window(node, &x->shape, ks, cnt,
			   npu_node_attr_int_or(node, "ceil_mode", 0) != 0, &win,
			   ctx->err);
	if (st)
		return st;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	if (x->dtype != NPU_DTYPE_FLOAT || x->shape.rank == 5 ||
	    npu_op_out(ctx, 1))
		return npu_pool_direct(ctx, is_max, &win);
	memset(&p, 0, sizeof(p));
	p.batch = (size_t)x->shape.dims[0];
	p.channels = (size_t)x->shape.dims[1];
	p.in_h = one_d ? 1 : (size_t)win.in[0];
	p.in_w = (size_t)win.in[one_d ? 0 : 1];
	p.out_h = one_d ? 1 : (size_t)win.out[0];
	p.out_w = (size_t)win.out[one_d ? 0 : 1];
	p.k_h = one_d ? 1 : (size_t)win.k[0];
	p.k_w = (size_t)win.k[one_d ? 0 : 1];
	p.stride_h = one_d ? 1 : (size_t)win.stride[0];
	p.stride_w = (size_t)win.stride[one_d ? 0 : 1];
	p.dil_h = one_d ? 1 : (size_t)win.dil[0];
	p.dil_w = (size_t)win.dil[one_d ? 0 : 1];
	p.pad_top = one_d ? 0 : (size_t)win.pad_begin[0];
	p.pad_bottom = one_d ? 0 : (size_t)win.pad_end[0];
	p.pad_left = (size_t)win.pad_begin[one_d ? 0 : 1];
	p.pad_right = (size_t)win.pad_end[one_d ? 0 : 1];
	p.count_include_pad = npu_node_attr_int_or(node, "count_include_pad", 0) != 0;
	if (is_max)
		npu_maxpool2d_f32(&p, x->data, y->data, ctx->pool);
	else
		npu_avgpool2d_f32(&p, x->data, y->data, ctx->pool);
	return NPU_OK;
}

static npu_status maxpool_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, maxpool_compute);
	return npu_pool_compute(ctx, true);
}

static npu_status avgpool_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, avgpool_compute);
	return npu_pool_compute(ctx, false);
}

NPU_CPU_OP_DEF(max_pool) = {
	.op_type = "MaxPool",
	.domain = "",
	.compute = maxpool_compute,
};

NPU_CPU_OP_DEF(average_pool) = {
	.op_type = "AveragePool",
	.domain = "",
	.compute = avgpool_compute,
};

/* ---- GlobalAveragePool / GlobalMaxPool ---- */

struct npu_gap_job {
	const float *x;
	float *y;
	size_t inner;
};

static void npu_gap_planes(void *ctx, size_t begin, size_t end)
{
	const struct npu_gap_job *job = ctx;
	size_t i;

	for (i = begin; i < end; i++)
		job->y[i] = npu_vec_sum_f32(job->x + i * job->inner, job->inner) /
			    (float)job->inner;
}

static npu_status npu_global_pool(struct npu_op_ctx *ctx, bool is_max)
{
	const struct npu_tensor *x = ctx->inputs[0];
	int64_t nc = x->shape.dims[0] * x->shape.dims[1];
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank), i, k;
	float *y = ctx->outputs[0]->data;

	if (x->dtype == NPU_DTYPE_DOUBLE) {
		double *yd = ctx->outputs[0]->data;

		for (i = 0; i < nc; i++) {
			const double *xp = (const double *)x->data + i * inner;
			double acc = is_max ? -INFINITY : 0.0;

			for (k = 0; k < inner; k++)
				acc = is_max ? fmax(acc, xp[k]) : acc + xp[k];
			yd[i] = is_max ? acc : acc / (double)inner;
		}
		return NPU_OK;
	}
	if (!is_max && inner > 0) {
		/* Vectorized sums, planes over the pool. */
		struct npu_gap_job job = { .x = x->data, .y = y, .inner = (size_t)inner };

		npu_threadpool_parallel_for(ctx->pool, (size_t)nc,
					    inner >= NPU_VEC_GRAIN ? 1 :
					    NPU_VEC_GRAIN / (size_t)inner,
					    npu_gap_planes, &job);
		return NPU_OK;
	}
	for (i = 0; i < nc; i++) {
		const float *xp = (const float *)x->data + i * inner;
		float acc = is_max ? -INFINITY : 0.0f;

		if (is_max)
			for (k = 0; k < inner; k++)
				acc = fmaxf(acc, xp[k]);
		else
			for (k = 0; k < inner; k++)
				acc += xp[k];
		y[i] = is_max ? acc : acc / (float)inner;
	}
	return NPU_OK;
}

static npu_status global_avgpool_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, global_avgpool_compute);
	return npu_global_pool(ctx, false);
}

static npu_status global_maxpool_compute(struct npu_op_ctx *ctx)
{
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, global_maxpool_compute);
	return npu_global_pool(ctx, true);
}

NPU_CPU_OP_DEF(global_average_pool) = {
	.op_type = "GlobalAveragePool",
	.domain = "",
	.compute = global_avgpool_compute,
};

NPU_CPU_OP_DEF(global_max_pool) = {
	.op_type = "GlobalMaxPool",
	.domain = "",
	.compute = global_maxpool_compute,
};

/* ---- MaxUnpool: MaxPool's values back at their Indices ---- */

/*
 * I indexes the flattened default-size output ((in - 1) * stride + kernel
 * - pads); with a different output_shape each index keeps its
 * coordinates, which must fit the given shape.
 */
static npu_status max_unpool_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *idx = ctx->inputs[1];
	struct npu_tensor *y = ctx->outputs[0];
	const struct npu_node *node = ctx->node;
	int64_t n = npu_op_numel(x), ny = npu_op_numel(y), i;
	int64_t k[NPU_WIN_MAX], s[NPU_MAX_RANK], p[2 * NPU_WIN_MAX];
	int64_t ystr[NPU_MAX_RANK];
	struct npu_shape inf = x->shape;
	const int64_t *iv = idx->data;
	const float *xv = x->data;
	float *yv = y->data;
	int nk, ns, np, sp = x->shape.rank - 2, d;
	bool same = true;
	npu_status st;

	st = npu_op_ints_from_attr(node, "kernel_shape", k, NPU_WIN_MAX, &nk,
				   ctx->err);
	if (!st)
		st = npu_op_ints_from_attr(node, "strides", s, NPU_MAX_RANK, &ns,
					   ctx->err);
	if (!st)
		st = npu_op_ints_from_attr(node, "pads", p, 2 * NPU_WIN_MAX, &np,
					   ctx->err);
	if (st)
		return st;
	if (npu_op_numel(idx) != n)
		return npu_op_invalid(ctx->err, node,
				      "input 1 (I) has %lld elements, X has %lld",
				      (long long)npu_op_numel(idx), (long long)n);
	for (d = 0; d < sp; d++)
		inf.dims[2 + d] = (x->shape.dims[2 + d] - 1) * (ns ? s[d] : 1) +
				  k[d] - (np ? p[d] + p[sp + d] : 0);
	for (d = 0; d < y->shape.rank; d++)
		same = same && d < inf.rank && inf.dims[d] == y->shape.dims[d];
	same = same && inf.rank == y->shape.rank;
	npu_op_strides(&y->shape, ystr);
	if (ny)
		memset(yv, 0, (size_t)ny * sizeof(float));
	for (i = 0; i < n; i++) {
		int64_t at = iv[i], rem = iv[i];

		if (!same && rem >= 0) {
			/* Coordinates in the default shape, flattened in y's. */
			at = 0;
			for (d = inf.rank - 1; d >= 0; d--) {
				int64_t c;

				if (inf.dims[d] <= 0) {
					at = -1 - ny;
					break;
				}
				c = rem % inf.dims[d];

				rem /= inf.dims[d];
				if (c >= y->shape.dims[d])
					at = -1 - ny;
				if (at >= 0)
					at += c * ystr[d];
			}
			if (rem)
				at = -1 - ny;
		}
		if (at < 0 || at >= ny)
			return npu_op_invalid(ctx->err, node,
					      "index %lld at element %lld is out of range for an output of %lld",
					      (long long)iv[i], (long long)i,
					      (long long)ny);
		yv[at] = xv[i];
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(max_unpool) = {
	.op_type = "MaxUnpool",
	.domain = "",
	.compute = max_unpool_compute,
};
