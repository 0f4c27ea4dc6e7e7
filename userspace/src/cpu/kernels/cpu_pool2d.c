// SPDX-License-Identifier: MIT
/*
 * cpu_pool2d.c - max and average pooling, NCHW, with padding and
 * dilation. Per output row, one vectorized pass per kernel tap over the
 * output columns whose tap lands inside the input row; padding cells are
 * skipped (max) or counted per count_include_pad (average, the divisor of
 * ONNX Runtime: cells inside the padded input).
 */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "cpu_kernels_internal.h"

struct npu_pool_job {
	const struct npu_pool2d_params *p;
	const struct npu_vec_ops *ops;
	const float *x;
	float *y;
	bool max;
	bool max2x2;	/* 2x2 windows, stride 2, every one inside: ops->max2x2 */
	size_t rows_per_task, row_tasks;
};

/* Taps k in [0, k_n) with lo <= base + k * dil < hi. */
static size_t npu_pool_taps(ptrdiff_t base, size_t dil, size_t k_n,
			    ptrdiff_t lo, ptrdiff_t hi)
{
	ptrdiff_t d = (ptrdiff_t)dil, first, last;

	if (hi <= lo)
		return 0;
	first = base >= lo ? 0 : (lo - base + d - 1) / d;
	if (hi - 1 < base)
		return 0;
	last = (hi - 1 - base) / d;
	if (last > (ptrdiff_t)k_n - 1)
		last = (ptrdiff_t)k_n - 1;
	return last >= first ? (size_t)(last - first + 1) : 0;
}

static void npu_pool_task(void *ctx, size_t t)
{
	struct npu_pool_job *job = ctx;
	const struct npu_pool2d_params *p = job->p;
	const struct npu_vec_ops *ops = job->ops;
	size_t plane = t / job->row_tasks;
	size_t oh0 = t % job->row_tasks * job->rows_per_task, oh, ow, kh, kw;
	size_t oh_end = oh0 + job->rows_per_task < p->out_h ?
			oh0 + job->rows_per_task : p->out_h;
	const float *xc = job->x + plane * p->in_h * p->in_w;
	ptrdiff_t in_h = (ptrdiff_t)p->in_h, in_w = (ptrdiff_t)p->in_w;
	ptrdiff_t sw = (ptrdiff_t)p->stride_w;
	/* count_include_pad counts cells inside the padded input. */
	ptrdiff_t lo_h = p->count_include_pad ? -(ptrdiff_t)p->pad_top : 0;
	ptrdiff_t hi_h = p->count_include_pad ? in_h + (ptrdiff_t)p->pad_bottom : in_h;
	ptrdiff_t lo_w = p->count_include_pad ? -(ptrdiff_t)p->pad_left : 0;
	ptrdiff_t hi_w = p->count_include_pad ? in_w + (ptrdiff_t)p->pad_right : in_w;

	if (job->max2x2) {
		for (oh = oh0; oh < oh_end; oh++)
			ops->max2x2(job->y + (plane * p->out_h + oh) * p->out_w,
				    xc + 2 * oh * p->in_w, xc + (2 * oh + 1) * p->in_w,
				    p->out_w);
		return;
	}
	for (oh = oh0; oh < oh_end; oh++) {
		float *yr = job->y + (plane * p->out_h + oh) * p->out_w;
		ptrdiff_t ih0 = (ptrdiff_t)(oh * p->stride_h) - (ptrdiff_t)p->pad_top;

		if (job->max) {
			for (ow = 0; ow < p->out_w; ow++)
				yr[ow] = -FLT_MAX;
		} else {
			memset(yr, 0, p->out_w * sizeof(float));
		}
		for (kh = 0; kh < p->k_h; kh++) {
			ptrdiff_t ih = ih0 + (ptrdiff_t)(kh * p->dil_h);
			const float *xr;

			if (ih < 0 || ih >= in_h)
				continue;
			xr = xc + ih * in_w;
			for (kw = 0; kw < p->k_w; kw++) {
				ptrdiff_t off = (ptrdiff_t)(kw * p->dil_w) -
						(ptrdiff_t)p->pad_left;
				ptrdiff_t lo = off < 0 ? (-off + sw - 1) / sw : 0;
				ptrdiff_t hi = in_w - off > 0 ?
					       (in_w - off + sw - 1) / sw : 0;

				if (hi > (ptrdiff_t)p->out_w)
					hi = (ptrdiff_t)p->out_w;
				if (lo >= hi)
					continue;
				if (job->max)
					ops->max_row(yr + lo, xr + lo * sw + off,
						     p->stride_w, (size_t)(hi - lo));
				else
					ops->fma_row(yr + lo, xr + lo * sw + off,
						     p->stride_w, 1.0f,
						     (size_t)(hi - lo));
			}
		}
		if (!job->max) {
			size_t ch = npu_pool_taps(ih0, p->dil_h, p->k_h, lo_h, hi_h);

			for (ow = 0; ow < p->out_w; ow++) {
				ptrdiff_t iw0 = (ptrdiff_t)(ow * p->stride_w) -
						(ptrdiff_t)p->pad_left;
				size_t cnt = ch * npu_pool_taps(iw0, p->dil_w,
								p->k_w, lo_w, hi_w);

				yr[ow] = cnt ? yr[ow] / (float)cnt : 0.0f;
			}
		}
	}
}

static void npu_pool2d(const struct npu_pool2d_params *p, const float *x,
		       float *y, struct npu_threadpool *pool, bool max)
{
	struct npu_pool_job job = {
		.p = p, .ops = npu_vec_ops_get(), .x = x, .y = y, .max = max,
	};
	size_t planes = p->batch * p->channels;
	size_t want = 4 * (size_t)npu_threadpool_size(pool);

	if (!planes || !p->out_h || !p->out_w)
		return;
	/* The common 2x2 / 2 max pooling: one call per output row instead
	 * of an initialization and a call per tap (4x on 20-wide rows). */
	job.max2x2 = max && p->k_h == 2 && p->k_w == 2 && p->stride_h == 2 &&
		     p->stride_w == 2 && p->dil_h == 1 && p->dil_w == 1 &&
		     !p->pad_top && !p->pad_left && 2 * p->out_h <= p->in_h &&
		     2 * p->out_w <= p->in_w;
	job.rows_per_task = p->out_h;
	if (planes < want)
		job.rows_per_task = npu_div_up(p->out_h, npu_div_up(want, planes));
	job.row_tasks = npu_div_up(p->out_h, job.rows_per_task);
	npu_threadpool_run(pool, npu_pool_task, &job, planes * job.row_tasks);
}

void npu_maxpool2d_f32(const struct npu_pool2d_params *p, const float *x,
		       float *y, struct npu_threadpool *pool)
{
	npu_pool2d(p, x, y, pool, true);
}

void npu_avgpool2d_f32(const struct npu_pool2d_params *p, const float *x,
		       float *y, struct npu_threadpool *pool)
{
	npu_pool2d(p, x, y, pool, false);
}
