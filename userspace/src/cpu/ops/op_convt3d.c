// SPDX-License-Identifier: MIT
/*
 * 3-D ConvTranspose as a direct gather: each output voxel sums the input
 * voxels whose stride grid lands on it through some kernel tap. One task
 * per (image, output channel) plane, so tasks never write the same output.
 * A rare shape in inference models (volumetric decoders); the 1-D and 2-D
 * cases keep op_conv.c's GEMM + col2im path.
 */
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_convt3d.h"

struct convt3d_job {
	const struct npu_convt3d_params *p;
	const float *x, *w, *b;
	float *y;
};

/* The input index reaching output o through tap t, or -1. */
static int64_t source(const struct npu_convt3d_params *p, int d, int64_t o, int64_t t)
{
	int64_t v = o + p->pad_begin[d] - t * p->dil[d];

	if (v < 0 || v % p->stride[d])
		return -1;
	v /= p->stride[d];
	return v < p->in[d] ? v : -1;
}

static void convt3d_planes(void *arg, size_t begin, size_t end)
{
	const struct convt3d_job *j = arg;
	const struct npu_convt3d_params *p = j->p;
	int64_t cg = p->in_c / p->groups, mg = p->out_c / p->groups;
	int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
	int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
	int64_t k_vol = p->k[0] * p->k[1] * p->k[2];
	size_t plane;

	for (plane = begin; plane < end; plane++) {
		int64_t n = (int64_t)plane / p->out_c, m = (int64_t)plane % p->out_c;
		int64_t g = m / mg, ml = m % mg, od, oh, ow, c, kd, kh, kw;
		float *yo = j->y + (int64_t)plane * out_vol;
		const float *xn = j->x + (n * p->in_c + g * cg) * in_vol;

		for (od = 0; od < p->out[0]; od++)
			for (oh = 0; oh < p->out[1]; oh++)
				for (ow = 0; ow < p->out[2]; ow++) {
					double acc = j->b ? j->b[m] : 0;

					for (kd = 0; kd < p->k[0]; kd++) {
						int64_t id = source(p, 0, od, kd);

						if (id < 0)
							continue;
						for (kh = 0; kh < p->k[1]; kh++) {
							int64_t ih = source(p, 1, oh, kh);

							if (ih < 0)
								continue;
							for (kw = 0; kw < p->k[2]; kw++) {
								int64_t iw = source(p, 2, ow, kw);
								int64_t xi, wi;

								if (iw < 0)
									continue;
								xi = (id * p->in[1] + ih) * p->in[2] + iw;
								wi = (kd * p->k[1] + kh) * p->k[2] + kw;
								for (c = 0; c < cg; c++)
									acc += (double)xn[c * in_vol + xi] *
									       j->w[((g * cg + c) * mg + ml) *
										    k_vol + wi];
							}
						}
					}
					yo[(od * p->out[1] + oh) * p->out[2] + ow] = (float)acc;
				}
	}
}

void npu_convt3d_f32(const struct npu_convt3d_params *p, const float *x, const float *w,
		     const float *b, float *y, struct npu_threadpool *pool)
{
	struct convt3d_job j = { .p = p, .x = x, .w = w, .b = b, .y = y };

	npu_threadpool_parallel_for(pool, (size_t)(p->batch * p->out_c), 1, convt3d_planes, &j);
}
