// SPDX-License-Identifier: MIT
/*
 * cpu_conv2d.c - fp32 2-D convolution, NCHW, ONNX weight layout.
 *
 * Paths:
 *  - depthwise (groups == in_c == out_c): per output row, one vectorized
 *    multiply-add pass per kernel tap over the in-bounds columns;
 *  - 1x1, stride 1, no padding: a GEMM over channels, the input rows
 *    packed straight into GEMM panels (no im2col);
 *  - general: im2col of a chunk of output pixels straight into packed B
 *    panels in the thread's scratch, then the GEMM register tiles.
 * The weights of one group are the packed A operand, packed once per
 * call. Bias and activation run on each output block while it is hot.
 * Work is split over (image, group, chunk of output pixels).
 */
#include <stdint.h>
#include <string.h>

#include "cpu_kernels_internal.h"

/* im2col chunk: about this many bytes of packed B per thread. */
#define NPU_CONV_CHUNK_BYTES (192 * 1024)

struct npu_conv_plan {
	const struct npu_gemm_ukernel *uk;
	bool depthwise, pointwise;
	size_t mg, cg, kdim;	/* out / in channels per group, GEMM depth */
	size_t hw_in, hw_out;
	size_t chunk_max;	/* output columns per task, a multiple of nr */
	size_t a_panels;	/* packed weight panels per group */
	size_t w_floats;	/* packed weights, all groups */
	size_t b_floats;	/* packed B per thread */
};

static void npu_conv_plan(const struct npu_conv2d_params *p,
			  struct npu_conv_plan *pl)
{
	const struct npu_gemm_ukernel *uk = npu_gemm_ukernel_for(npu_cpu_isa_get());
	size_t cols;

	memset(pl, 0, sizeof(*pl));
	pl->uk = uk;
	pl->mg = p->out_c / p->groups;
	pl->cg = p->in_c / p->groups;
	pl->kdim = pl->cg * p->k_h * p->k_w;
	pl->hw_in = p->in_h * p->in_w;
	pl->hw_out = p->out_h * p->out_w;
	pl->depthwise = p->groups == p->in_c && p->groups == p->out_c;
	pl->pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 &&
			p->stride_w == 1 && !p->pad_top && !p->pad_left &&
			p->out_h == p->in_h && p->out_w == p->in_w;
	if (pl->depthwise)
		return;
	cols = NPU_CONV_CHUNK_BYTES / sizeof(float) / (pl->kdim ? pl->kdim : 1);
	cols = cols / uk->nr * uk->nr;
	if (cols < uk->nr)
		cols = uk->nr;
	if (cols > npu_round_up(pl->hw_out, uk->nr))
		cols = npu_round_up(pl->hw_out, uk->nr);
	pl->chunk_max = cols;
	pl->a_panels = npu_div_up(pl->mg, uk->mr);
	pl->w_floats = p->groups * pl->a_panels * uk->mr * pl->kdim;
	pl->b_floats = npu_round_up(cols * pl->kdim, 16);
}

static bool npu_conv_degenerate(const struct npu_conv2d_params *p)
{
	return !p->batch || !p->out_c || !p->out_h || !p->out_w ||
	       !p->groups || p->in_c % p->groups || p->out_c % p->groups;
}

size_t npu_conv2d_f32_scratch_size(const struct npu_conv2d_params *p,
				   int threads)
{
	struct npu_conv_plan pl;

	if (npu_conv_degenerate(p))
		return 0;
	npu_conv_plan(p, &pl);
	if (pl.depthwise)
		return 0;
	if (threads < 1)
		threads = 1;
	/* + 64: the caller's buffer need not be aligned. */
	return (pl.w_floats + (size_t)threads * pl.b_floats) * sizeof(float) +
	       64;
}

struct npu_conv_job {
	const struct npu_conv2d_params *p;
	struct npu_conv_plan pl;
	const struct npu_vec_ops *ops;
	const float *x, *w, *bias;
	float *y;
	float *pw;		/* packed weights */
	float *pb;		/* per-thread packed B */
	size_t chunk, chunks;	/* output columns per task, tasks per image */
	size_t rows_per_task, row_tasks; /* depthwise */
};

/* Copy 'len' floats (src NULL: zeros) to columns [jj, jj + len) of one
 * depth row of packed B; panels are 'ps' floats apart. */
static void npu_conv_put(float *row, size_t jj, const float *src, size_t len,
			 size_t nr, size_t ps)
{
	while (len) {
		size_t c = jj % nr, take = nr - c < len ? nr - c : len;
		float *d = row + jj / nr * ps + c;

		if (src) {
			memcpy(d, src, take * sizeof(float));
			src += take;
		} else {
			memset(d, 0, take * sizeof(float));
		}
		jj += take;
		len -= take;
	}
}

/* im2col of output columns [col0, col0 + ncols) into packed B panels. */
static void npu_conv_im2col(const struct npu_conv2d_params *p,
			    const struct npu_conv_plan *pl, const float *xg,
			    size_t col0, size_t ncols, float *dst)
{
	size_t nr = pl->uk->nr, ps = pl->kdim * nr;
	ptrdiff_t in_h = (ptrdiff_t)p->in_h, in_w = (ptrdiff_t)p->in_w;
	size_t ci, kh, kw, r = 0;

	for (ci = 0; ci < pl->cg; ci++) {
		const float *xc = xg + ci * pl->hw_in;

		for (kh = 0; kh < p->k_h; kh++) {
			for (kw = 0; kw < p->k_w; kw++, r++) {
				float *row = dst + r * nr;
				size_t oh = col0 / p->out_w, ow = col0 % p->out_w;
				size_t jj = 0;

				while (jj < ncols) {
					size_t seg = p->out_w - ow;
					ptrdiff_t ih = (ptrdiff_t)(oh * p->stride_h + kh * p->dil_h) -
						       (ptrdiff_t)p->pad_top;
					ptrdiff_t iw0 = (ptrdiff_t)(ow * p->stride_w + kw * p->dil_w) -
							(ptrdiff_t)p->pad_left;

					if (seg > ncols - jj)
						seg = ncols - jj;
					if (ih < 0 || ih >= in_h) {
						npu_conv_put(row, jj, NULL, seg, nr, ps);
					} else if (p->stride_w == 1) {
						const float *xr = xc + ih * in_w;
						ptrdiff_t lead = iw0 < 0 ? -iw0 : 0;
						ptrdiff_t end = in_w - iw0;

						if (lead > (ptrdiff_t)seg)
							lead = (ptrdiff_t)seg;
						if (end > (ptrdiff_t)seg)
							end = (ptrdiff_t)seg;
						if (end < lead)
							end = lead;
						npu_conv_put(row, jj, NULL, (size_t)lead, nr, ps);
						npu_conv_put(row, jj + (size_t)lead,
							     xr + iw0 + lead,
							     (size_t)(end - lead), nr, ps);
						npu_conv_put(row, jj + (size_t)end, NULL,
							     seg - (size_t)end, nr, ps);
					} else {
						const float *xr = xc + ih * in_w;
						size_t t;

						for (t = 0; t < seg; t++) {
							ptrdiff_t iw = iw0 + (ptrdiff_t)(t * p->stride_w);
							size_t j = jj + t;

							row[j / nr * ps + j % nr] =
								iw >= 0 && iw < in_w ? xr[iw] : 0.0f;
						}
					}
					jj += seg;
					oh++;
					ow = 0;
				}
				/* Zero the unused columns of the last panel. */
				if (ncols % nr)
					npu_conv_put(row, ncols, NULL,
						     nr - ncols % nr, nr, ps);
			}
		}
	}
}

static void npu_conv_pack_w_task(void *ctx, size_t i)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv_plan *pl = &job->pl;
	size_t mr = pl->uk->mr, g = i / pl->a_panels, pi = i % pl->a_panels;

	npu_gemm_pack_a(false, job->w + g * pl->mg * pl->kdim, pl->kdim,
			pi * mr, pl->mg - pi * mr, pl->kdim, mr,
			job->pw + i * pl->kdim * mr);
}

static void npu_conv_gemm_task(void *ctx, size_t t, int tid)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv2d_params *p = job->p;
	const struct npu_conv_plan *pl = &job->pl;
	const struct npu_gemm_ukernel *uk = pl->uk;
	size_t nr = uk->nr, mr = uk->mr, kdim = pl->kdim;
	size_t bg = t / job->chunks, b = bg / p->groups, g = bg % p->groups;
	size_t col0 = t % job->chunks * job->chunk;
	size_t nc = pl->hw_out - col0 < job->chunk ? pl->hw_out - col0 : job->chunk;
	const float *xg = job->x + (b * p->in_c + g * pl->cg) * pl->hw_in;
	const float *ag = job->pw + g * pl->a_panels * mr * kdim;
	float *pb = job->pb + (size_t)tid * pl->b_floats;
	float *yg = job->y + (b * p->out_c + g * pl->mg) * pl->hw_out + col0;
	size_t k0, j, r;

	if (pl->pointwise) {
		for (j = 0; j < nc; j += nr)
			npu_gemm_pack_b(false, xg, pl->hw_in, col0 + j, nc - j,
					kdim, nr, pb + j / nr * kdim * nr);
	} else {
		npu_conv_im2col(p, pl, xg, col0, nc, pb);
	}
	for (k0 = 0; k0 < kdim; k0 += uk->kc) {
		size_t kc = kdim - k0 < uk->kc ? kdim - k0 : uk->kc;

		npu_gemm_macro(uk, pl->mg, nc, kc, ag + k0 * mr, kdim * mr,
			       pb + k0 * nr, kdim * nr, yg, pl->hw_out, 1.0f,
			       k0 ? 1.0f : 0.0f);
	}
	if (!job->bias && p->act.kind == NPU_CPU_ACT_NONE)
		return;
	for (r = 0; r < pl->mg; r++) {
		float *yr = yg + r * pl->hw_out;

		job->ops->act(&p->act, job->bias ? job->bias[g * pl->mg + r] : 0.0f,
			      yr, yr, nc);
	}
}

static void npu_conv_depthwise_task(void *ctx, size_t t)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv2d_params *p = job->p;
	const struct npu_vec_ops *ops = job->ops;
	size_t bc = t / job->row_tasks, c = bc % p->in_c;
	size_t oh0 = t % job->row_tasks * job->rows_per_task, oh, kh, kw;
	size_t oh_end = oh0 + job->rows_per_task < p->out_h ?
			oh0 + job->rows_per_task : p->out_h;
	const float *xc = job->x + bc * job->pl.hw_in;
	const float *wc = job->w + c * p->k_h * p->k_w;
	float bias = job->bias ? job->bias[c] : 0.0f;
	ptrdiff_t in_h = (ptrdiff_t)p->in_h, in_w = (ptrdiff_t)p->in_w;
	ptrdiff_t sw = (ptrdiff_t)p->stride_w;

	for (oh = oh0; oh < oh_end; oh++) {
		float *yr = job->y + bc * job->pl.hw_out + oh * p->out_w;

		memset(yr, 0, p->out_w * sizeof(float));
		for (kh = 0; kh < p->k_h; kh++) {
			ptrdiff_t ih = (ptrdiff_t)(oh * p->stride_h + kh * p->dil_h) -
				       (ptrdiff_t)p->pad_top;

			if (ih < 0 || ih >= in_h)
				continue;
			for (kw = 0; kw < p->k_w; kw++) {
				ptrdiff_t off = (ptrdiff_t)(kw * p->dil_w) -
						(ptrdiff_t)p->pad_left;
				/* Output columns whose tap lands inside the row. */
				ptrdiff_t lo = off < 0 ? (-off + sw - 1) / sw : 0;
				ptrdiff_t hi = in_w - off > 0 ?
					       (in_w - off + sw - 1) / sw : 0;

				if (hi > (ptrdiff_t)p->out_w)
					hi = (ptrdiff_t)p->out_w;
				if (lo >= hi)
					continue;
				ops->fma_row(yr + lo, xc + ih * in_w + lo * sw + off,
					     p->stride_w, wc[kh * p->k_w + kw],
					     (size_t)(hi - lo));
			}
		}
		if (bias != 0.0f || p->act.kind != NPU_CPU_ACT_NONE)
			ops->act(&p->act, bias, yr, yr, p->out_w);
	}
}

void npu_conv2d_f32(const struct npu_conv2d_params *p, const float *x,
		    const float *w, const float *bias, float *y,
		    void *scratch, struct npu_threadpool *pool)
{
	struct npu_conv_job job = {
		.p = p, .x = x, .w = w, .bias = bias, .y = y,
		.ops = npu_vec_ops_get(),
	};
	size_t threads = (size_t)npu_threadpool_size(pool);
	size_t images = p->batch * p->groups, want, per_image;

	if (npu_conv_degenerate(p))
		return;
	npu_conv_plan(p, &job.pl);
	want = 4 * threads;	/* tasks wanted: a few per thread */

	if (job.pl.depthwise) {
		size_t planes = p->batch * p->in_c;

		job.rows_per_task = p->out_h;
		if (planes < want)
			job.rows_per_task = npu_div_up(p->out_h,
						       npu_div_up(want, planes));
		job.row_tasks = npu_div_up(p->out_h, job.rows_per_task);
		npu_threadpool_run(pool, npu_conv_depthwise_task, &job,
				   planes * job.row_tasks);
		return;
	}
	if (!job.pl.kdim) {
		/* No input channels: the output is the bias alone. */
		size_t i, n = p->out_c * job.pl.hw_out;

		for (i = 0; i < p->batch * n; i++)
			y[i] = 0.0f;
		for (i = 0; i < p->batch * p->out_c; i++)
			job.ops->act(&p->act, bias ? bias[i % p->out_c] : 0.0f,
				     y + i * job.pl.hw_out, y + i * job.pl.hw_out,
				     job.pl.hw_out);
		return;
	}

	job.pw = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
	job.pb = job.pw + job.pl.w_floats;
	job.chunk = job.pl.chunk_max;
	per_image = npu_div_up(job.pl.hw_out, job.chunk);
	if (images * per_image < want) {
		per_image = npu_div_up(want, images);
		job.chunk = npu_round_up(npu_div_up(job.pl.hw_out, per_image),
					 job.pl.uk->nr);
	}
	job.chunks = npu_div_up(job.pl.hw_out, job.chunk);
	npu_threadpool_run(pool, npu_conv_pack_w_task, &job,
			   p->groups * job.pl.a_panels);
	npu_threadpool_run_tid(pool, npu_conv_gemm_task, &job,
			       images * job.chunks);
}
