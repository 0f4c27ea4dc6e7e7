// SPDX-License-Identifier: MIT
/*
 * cpu_winograd.c - Winograd F(4,3) for 3x3, stride 1, dilation 1, one-group
 * convolutions: each 4x4 block of outputs (a tile) comes from a 6x6 input
 * patch through 36 products per channel pair instead of 144.
 *
 *  - weights: U = G g G^T once per plan, as 36 packed GEMM A operands
 *    (out_c x in_c each);
 *  - input: a task takes a band of tile rows (tile rows padded to a
 *    multiple of 8 slots) and zero-pads just the input rows under it into
 *    its own buffer (in L2: no pass over the whole input through memory),
 *    each row split into its 4 column phases so that 8 consecutive tiles
 *    read 8 contiguous floats per tap; then, a chunk of its tiles at a
 *    time, transforms them, V = B^T d B, straight into 36 packed GEMM B
 *    operands (in_c x tiles);
 *  - 36 GEMMs M = U V on the register tiles, per chunk, in L2;
 *  - Y = A^T M A, interleaved into 4 output rows, then the epilogue row
 *    pass (bias, residual, activation, affine) into y.
 * The transforms are one body on 8-float GNU C vectors, compiled per ISA.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_internal.h"

typedef float npu_v8 __attribute__((vector_size(32)));
/* The same, unaligned and allowed to alias float arrays. */
typedef float npu_v8u __attribute__((vector_size(32), aligned(4), may_alias));
#define npu_v8_load(p) (*(const npu_v8u *)(p))
#define npu_v8_store(p, v) (*(npu_v8u *)(p) = (v))

struct npu_wino_ops {
	void (*in8)(const float *xp, size_t wp, size_t wq, float *dst,
		    size_t ds);
	void (*out8)(const float *m, size_t ms, float *out, size_t ld);
	void (*split4)(const float *xr, size_t lo, size_t hi, float *d,
		       size_t wq);
};

#define NPU_W_FN(name) name##_avx512
#define NPU_W_TARGET __attribute__((target(NPU_TARGET_AVX512)))
#include "cpu_winograd_body.h"
#undef NPU_W_FN
#undef NPU_W_TARGET

#define NPU_W_FN(name) name##_avx2
#define NPU_W_TARGET __attribute__((target(NPU_TARGET_AVX2)))
#include "cpu_winograd_body.h"
#undef NPU_W_FN
#undef NPU_W_TARGET

#define NPU_W_FN(name) name##_portable
#define NPU_W_TARGET
#include "cpu_winograd_body.h"
#undef NPU_W_FN
#undef NPU_W_TARGET

static const struct npu_wino_ops *npu_wino_ops_get(void)
{
	switch (npu_cpu_isa_get()) {
	case NPU_CPU_ISA_AVX512:
		return &npu_wino_ops_avx512;
	case NPU_CPU_ISA_AVX2:
		return &npu_wino_ops_avx2;
	default:
		return &npu_wino_ops_portable;
	}
}

/* Per chunk and thread: V and M of about this many bytes (L2). */
#define NPU_WINO_CHUNK_BYTES (768 * 1024)

static size_t npu_wino_gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

size_t npu_wino_u_floats(const struct npu_conv2d_params *p,
			 const struct npu_gemm_ukernel *uk)
{
	if (p->winograd == NPU_CONV_WINOGRAD_OFF || p->groups != 1 ||
	    p->k_h != 3 || p->k_w != 3 || !p->in_c || !p->out_c)
		return 0;
	if (p->winograd == NPU_CONV_WINOGRAD_AUTO &&
	    p->in_c * p->out_c > NPU_WINO_MAX_PAIRS)
		return 0;
	return npu_round_up(36 * npu_div_up(p->out_c, uk->mr) * uk->mr *
			    p->in_c, 16);
}

bool npu_wino_plan(const struct npu_conv2d_params *p,
		   const struct npu_gemm_ukernel *uk, struct npu_wino_plan *wp)
{
	size_t per_slot, n;

	memset(wp, 0, sizeof(*wp));
	wp->u_floats = npu_wino_u_floats(p, uk);
	if (!wp->u_floats || p->stride_h != 1 || p->stride_w != 1 ||
	    p->dil_h != 1 || p->dil_w != 1)
		return false;
	/* Where it wins (cpu-conv-bench, Documentation/cpu-kernels.md). */
	if (p->winograd == NPU_CONV_WINOGRAD_AUTO &&
	    (p->out_h < NPU_WINO_MIN_HW || p->out_w < NPU_WINO_MIN_HW))
		return false;
	wp->th_n = npu_div_up(p->out_h, 4);
	wp->tw_n = npu_div_up(p->out_w, 4);
	wp->twv = npu_round_up(wp->tw_n, 8);
	/*
	 * Few input channels: the transforms (per channel and tile) and
	 * GEMMs of depth in_c outweigh the products saved, the more so as
	 * empty slots pad the tile rows (in_c scaled by the slots used).
	 */
	if (p->winograd == NPU_CONV_WINOGRAD_AUTO &&
	    p->in_c * wp->tw_n < NPU_WINO_MIN_IN_C * wp->twv)
		return false;
	/*
	 * Under half the slots of a tile row used (10-12 outputs wide: 3
	 * tiles in 8 slots), the 2.25x fewer products are spent on empty
	 * slots: 128 -> 128 on 12 x 12 at batch 8 took 6.5 ms, the blocked
	 * direct kernel 1.8 ms.
	 */
	if (p->winograd == NPU_CONV_WINOGRAD_AUTO && 2 * wp->tw_n < wp->twv)
		return false;
	wp->wq = wp->twv + 1;
	wp->wp = 4 * wp->wq;
	wp->hp = 4 * wp->th_n + 2;
	wp->slots = wp->th_n * wp->twv;
	per_slot = 36 * (p->in_c + p->out_c) * sizeof(float);
	n = NPU_WINO_CHUNK_BYTES / per_slot / uk->nr * uk->nr;
	if (n < uk->nr)
		n = uk->nr;
	if (n > npu_round_up(wp->slots, uk->nr))
		n = npu_round_up(wp->slots, uk->nr);
	wp->chunk = n;
	wp->a_panels = npu_div_up(p->out_c, uk->mr);
	/*
	 * A band: whole tile rows whose slots fill whole GEMM tiles (nr
	 * columns; twv is a multiple of 8, so at most nr / 8 rows), and at
	 * least about a chunk of them.
	 */
	wp->band = uk->nr / npu_wino_gcd(wp->twv, uk->nr);
	while (wp->band * wp->twv < n / 2)
		wp->band *= 2;
	if (wp->band > wp->th_n)
		wp->band = wp->th_n;
	wp->pad_floats = 0;
	/*
	 * V (in_c x chunk per xi), M (out_c x chunk per xi), 4 output rows,
	 * then the band's padded input rows (4 per tile row and 2 below).
	 */
	wp->t_floats = npu_round_up(36 * ((p->in_c + p->out_c) * n + 32) +
				    16 * n, 16) +
		       npu_round_up(p->in_c * (4 * wp->band + 2) * wp->wp + 16, 16);
	return true;
}

struct npu_wino_job {
	const struct npu_conv2d_params *p;
	const struct npu_wino_plan *wp;
	size_t a_panels;	/* weight packing */
	const struct npu_gemm_ukernel *uk;
	const struct npu_wino_ops *wo;
	const struct npu_vec_ops *ops;
	const float *x, *w, *bias;
	const float *u;
	float *y, *tmp, *pu;
	size_t chunk;		/* slots per GEMM pass */
	size_t band, bands;	/* tile rows per task, bands per image */
	size_t part_slots, parts; /* a one-row band split in parts */
};

/* U = G g G^T of panel pi (output channels pi * mr ...), packed as A. */
static void npu_wino_pack_task(void *ctx, size_t pi)
{
	static const double g6[6][3] = {
		{ 1.0 / 4, 0, 0 },
		{ -1.0 / 6, -1.0 / 6, -1.0 / 6 },
		{ -1.0 / 6, 1.0 / 6, -1.0 / 6 },
		{ 1.0 / 24, 1.0 / 12, 1.0 / 6 },
		{ 1.0 / 24, -1.0 / 12, 1.0 / 6 },
		{ 0, 0, 1 },
	};
	struct npu_wino_job *job = ctx;
	const struct npu_conv2d_params *p = job->p;
	size_t mr = job->uk->mr, in_c = p->in_c;
	size_t xs = job->a_panels * mr * in_c;	/* floats per xi */
	size_t o, c, i, j, k, l;

	for (i = 0; i < 36; i++)
		memset(job->pu + i * xs + pi * in_c * mr, 0,
		       in_c * mr * sizeof(float));
	for (o = pi * mr; o < (pi + 1) * mr && o < p->out_c; o++)
		for (c = 0; c < in_c; c++) {
			const float *g = job->w + (o * in_c + c) * 9;
			double t[6][3];

			for (i = 0; i < 6; i++)
				for (k = 0; k < 3; k++)
					t[i][k] = g6[i][0] * g[k] + g6[i][1] * g[3 + k] +
						  g6[i][2] * g[6 + k];
			for (i = 0; i < 6; i++)
				for (j = 0; j < 6; j++) {
					double u = 0;

					for (l = 0; l < 3; l++)
						u += t[i][l] * g6[j][l];
					job->pu[(i * 6 + j) * xs + pi * in_c * mr +
						c * mr + o % mr] =
						npu_flush_subnormal((float)u);
				}
		}
}

void npu_wino_pack_weights(const struct npu_conv2d_params *p, const float *w,
			   float *packed, struct npu_threadpool *pool)
{
	struct npu_wino_job job = {
		.p = p, .w = w, .pu = packed,
		.uk = npu_gemm_ukernel_for(npu_cpu_isa_get()),
	};

	job.a_panels = npu_div_up(p->out_c, job.uk->mr);
	npu_threadpool_run(pool, npu_wino_pack_task, &job, job.a_panels);
}

/*
 * The padded input rows r0 .. r0 + rows - 1 of every channel of image b,
 * zero padded and split into phases, into d (channel c at c * rows * wp).
 */
static void npu_wino_pad_rows(const struct npu_wino_job *job, size_t b,
			      size_t r0, size_t rows, float *d)
{
	const struct npu_conv2d_params *p = job->p;
	const struct npu_wino_plan *wp = job->wp;
	size_t lo = p->pad_left < wp->wp ? p->pad_left : wp->wp;
	size_t hi = p->pad_left + p->in_w < wp->wp ? p->pad_left + p->in_w : wp->wp;
	size_t c, r;

	for (c = 0; c < p->in_c; c++) {
		const float *xc = job->x + (b * p->in_c + c) * p->in_h * p->in_w;

		for (r = r0; r < r0 + rows; r++, d += wp->wp) {
			ptrdiff_t ih = (ptrdiff_t)r - (ptrdiff_t)p->pad_top;

			if (ih < 0 || ih >= (ptrdiff_t)p->in_h || lo >= hi) {
				memset(d, 0, wp->wp * sizeof(float));
				continue;
			}
			job->wo->split4(xc + (size_t)ih * p->in_w, lo, hi, d, wp->wq);
		}
	}
}

/*
 * Slots [s0, s0 + n) of image b, whose padded rows from 4 * th0 are at xb
 * (channel c at c * brows * wp): transform, 36 GEMMs, back, epilogue.
 */
static void npu_wino_chunk(struct npu_wino_job *job, size_t b, size_t s0,
			   size_t n, const float *xb, size_t th0, size_t brows,
			   float *v)
{
	const struct npu_conv2d_params *p = job->p;
	const struct npu_wino_plan *wp = job->wp;
	const struct npu_gemm_ukernel *uk = job->uk;
	size_t nr = uk->nr, mr = uk->mr, in_c = p->in_c, out_c = p->out_c;
	size_t np = npu_round_up(n, nr);
	/* One cache line between the 36 matrices of V and of M: at strides
	 * of a multiple of 4 KiB their rows would fight over a few cache sets
	 * (in8 writes all 36 at once, out8 reads all 36). */
	size_t vs = in_c * np + 16, ms = out_c * n + 16;
	float *m = v + 36 * vs;
	float *rows = m + 36 * ms;
	size_t ld = 4 * n, us = wp->a_panels * mr * in_c;
	size_t c, l, i, k0, o, a;

	for (c = 0; c < in_c; c++) {
		const float *xc = xb + c * brows * wp->wp;

		for (l = 0; l < n; l += 8) {
			size_t s = s0 + l, th = s / wp->twv, tw = s % wp->twv;

			job->wo->in8(xc + 4 * (th - th0) * wp->wp + tw, wp->wp,
				     wp->wq, v + l / nr * in_c * nr + c * nr + l % nr,
				     vs);
		}
	}
	for (i = 0; i < 36; i++)
		for (k0 = 0; k0 < in_c; k0 += uk->kc) {
			size_t kc = in_c - k0 < uk->kc ? in_c - k0 : uk->kc;

			npu_gemm_macro(uk, out_c, n, kc, job->u + i * us + k0 * mr,
				       in_c * mr, v + i * vs + k0 * nr,
				       in_c * nr, m + i * ms, n, 1.0f,
				       k0 ? 1.0f : 0.0f);
		}
	for (o = 0; o < out_c; o++) {
		float bias = job->bias ? job->bias[o] : 0.0f;

		for (l = 0; l < n;) {
			size_t s = s0 + l, th = s / wp->twv, tw0 = s % wp->twv;
			size_t seg = wp->twv - tw0 < n - l ? wp->twv - tw0 : n - l;
			size_t tw1 = tw0 + seg < wp->tw_n ? tw0 + seg : wp->tw_n;
			size_t tw, ow0 = 4 * tw0, ow1;

			for (tw = tw0; tw < tw1; tw += 8)
				job->wo->out8(m + o * n + l + (tw - tw0), ms,
					      rows + 4 * (tw - tw0), ld);
			ow1 = 4 * tw1 < p->out_w ? 4 * tw1 : p->out_w;
			for (a = 0; a < 4 && ow0 < ow1; a++) {
				size_t oh = 4 * th + a;
				float *yr;

				if (oh >= p->out_h)
					break;
				yr = job->y + ((b * out_c + o) * p->out_h + oh) *
					      p->out_w + ow0;
				job->ops->epi(&p->act, bias,
					      p->residual ? p->residual + (yr - job->y) : NULL,
					      rows + a * ld, yr, ow1 - ow0);
			}
			l += seg;
		}
	}
}

/*
 * Task t: a band of tile rows of one image (or a part of a one-row band):
 * its padded input rows into the thread's buffer, then its slots a chunk
 * at a time.
 */
static void npu_wino_task(void *ctx, size_t t, int tid)
{
	struct npu_wino_job *job = ctx;
	const struct npu_wino_plan *wp = job->wp;
	size_t per_image = job->bands * job->parts;
	size_t b = t / per_image, bi = t % per_image / job->parts;
	size_t part = t % job->parts;
	size_t th0 = bi * job->band;
	size_t th1 = th0 + job->band < wp->th_n ? th0 + job->band : wp->th_n;
	size_t brows = 4 * (th1 - th0) + 2;
	size_t s0 = th0 * wp->twv + part * job->part_slots;
	size_t s1 = job->parts > 1 ? s0 + job->part_slots : th1 * wp->twv;
	float *v = job->tmp + (size_t)tid * wp->t_floats;
	float *xb = v + (wp->t_floats -
			 npu_round_up(job->p->in_c * (4 * wp->band + 2) * wp->wp + 16, 16));
	size_t s, n;

	if (s1 > th1 * wp->twv)
		s1 = th1 * wp->twv;
	npu_wino_pad_rows(job, b, 4 * th0, brows, xb);
	for (s = s0; s < s1; s += n) {
		n = s1 - s < job->chunk ? s1 - s : job->chunk;
		npu_wino_chunk(job, b, s, n, xb, th0, brows, v);
	}
}

void npu_wino_run(const struct npu_conv2d_params *p,
		  const struct npu_wino_plan *wp, const float *x,
		  const float *u, const float *bias, float *y, float *tmp,
		  struct npu_threadpool *pool)
{
	struct npu_wino_job job = {
		.p = p, .wp = wp, .x = x, .u = u, .bias = bias, .y = y,
		.tmp = tmp,
		.uk = npu_gemm_ukernel_for(npu_cpu_isa_get()),
		.wo = npu_wino_ops_get(), .ops = npu_vec_ops_get(),
	};
	size_t threads = (size_t)npu_threadpool_size(pool);
	size_t want = 4 * threads;

	job.chunk = wp->chunk;
	job.band = wp->band;
	job.bands = npu_div_up(wp->th_n, job.band);
	job.parts = 1;
	job.part_slots = wp->twv;
	/*
	 * Narrower bands while there are fewer than two per thread (bands
	 * whose slots fill whole GEMM tiles are worth some imbalance), then
	 * parts of rows if still fewer than threads.
	 */
	while (threads > 1 && job.band > 1 && p->batch * job.bands < 2 * threads) {
		job.band = npu_div_up(job.band, 2);
		job.bands = npu_div_up(wp->th_n, job.band);
	}
	if (threads > 1 && p->batch * job.bands < threads) {
		/* (band is 1 here) Parts of whole 8-slot groups, in8's unit. */
		size_t parts = npu_div_up(want, p->batch * job.bands);

		job.part_slots = npu_round_up(npu_div_up(wp->twv, parts), 8);
		job.parts = npu_div_up(wp->twv, job.part_slots);
	}
	npu_threadpool_run_tid(pool, npu_wino_task, &job,
			       p->batch * job.bands * job.parts);
}
