// SPDX-License-Identifier: MIT
/*
 * cpu_conv_bench - GFLOP/s of npu_conv2d_f32 (and time of the pooling
 * kernels) on a few typical layer shapes, or one given on the command line:
 * cpu-conv-bench [--threads N] [--min-ms MS] [--nchwc] [--nchw-in]
 *                [N,C,H,W,OC,K,STRIDE,PAD,GROUPS]...
 * --nchwc times the blocked NCHW16c convolution (input already blocked,
 * weights packed) against npu_conv2d_f32_prepacked on the same shape,
 * interleaved, and prints both medians and their ratio. A one-group conv
 * with fewer than 8 input channels reads its input as NCHW (nchw_input,
 * as a first layer does); --nchw-in makes every one-group conv read
 * NCHW (what a blocked conv after a plain op did before the layout pass
 * reordered such inputs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_kernels.h"

static double npu_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double npu_now(void)
{
	return npu_clock(CLOCK_MONOTONIC);
}

/* CPU time of the whole process: on a busy machine, time spent running. */
static double npu_cpu_now(void)
{
	return npu_clock(CLOCK_PROCESS_CPUTIME_ID);
}

static void npu_fill(float *v, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
	}
}

static int npu_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double npu_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), npu_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define NPU_BENCH_MAX_REPS 2000

/*
 * The blocked convolution next to the NCHW one, alternating run by run so
 * both see the same machine state; medians of each.
 */
static bool npu_nchw_in_mode;

static int npu_bench_nchwc(const struct npu_conv2d_params *p, const float *x,
			   const float *wt, const float *bias,
			   struct npu_threadpool *pool, double min_ms)
{
	static double tn[NPU_BENCH_MAX_REPS], tb[NPU_BENCH_MAX_REPS];
	size_t icb = npu_nchwc_blocks(p->in_c), ocb = npu_nchwc_blocks(p->out_c);
	size_t hw = p->in_h * p->in_w, ohw = p->out_h * p->out_w;
	bool nchw_in = p->groups == 1 && (p->in_c < 8 || npu_nchw_in_mode);
	size_t nw = npu_conv2d_f32_packed_floats(p);
	size_t nb = npu_nchwc_conv_packed_floats(p);
	float *xb, *yb, *y, *packed = NULL, *pb;
	double t0, mn, mb, flops;
	int reps = 0;

	xb = aligned_alloc(64, (p->batch * icb * hw * 16 * sizeof(float) + 63) / 64 * 64);
	yb = aligned_alloc(64, (p->batch * ocb * ohw * 16 * sizeof(float) + 63) / 64 * 64);
	y = aligned_alloc(64, (p->batch * p->out_c * ohw * sizeof(float) + 63) / 64 * 64);
	pb = aligned_alloc(64, (nb * sizeof(float) + 63) / 64 * 64);
	if (!xb || !yb || !y || !pb)
		return -1;
	if (nw) {
		packed = aligned_alloc(64, (nw * sizeof(float) + 63) / 64 * 64);
		if (!packed)
			return -1;
		npu_conv2d_f32_pack_weights(p, wt, packed, pool);
	}
	npu_nchwc_conv_pack(p, wt, bias, pb);
	npu_nchwc_reorder_in_f32(p->batch, p->in_c, hw, x, xb, pool);
	/* Warm both up (pool scratch, page faults). */
	npu_conv2d_f32_prepacked(p, x, wt, packed, bias, y, NULL, pool);
	npu_nchwc_conv_f32(p, nchw_in, nchw_in ? x : xb, pb, yb, pool);
	t0 = npu_now();
	do {
		double st = npu_now();

		npu_conv2d_f32_prepacked(p, x, wt, packed, bias, y, NULL, pool);
		tn[reps] = npu_now() - st;
		st = npu_now();
		npu_nchwc_conv_f32(p, nchw_in, nchw_in ? x : xb, pb, yb, pool);
		tb[reps] = npu_now() - st;
		reps++;
	} while (((npu_now() - t0) * 1e3 < min_ms || reps < 5) &&
		 reps < NPU_BENCH_MAX_REPS);
	mn = npu_median(tn, reps);
	mb = npu_median(tb, reps);
	flops = 2.0 * p->batch * p->out_c * ohw * (p->in_c / p->groups) *
		p->k_h * p->k_w;
	printf("conv %zux%zux%zux%zu k%zu s%zu p%zu g%zu -> %zu%s: "
	       "nchw %.3f ms (%.1f GFLOP/s), nchwc %.3f ms (%.1f GFLOP/s), "
	       "nchw/nchwc %.2fx (%d reps, medians)\n", p->batch, p->in_c,
	       p->in_h, p->in_w, p->k_h, p->stride_h, p->pad_top, p->groups,
	       p->out_c, nchw_in ? " (nchw input)" : "", mn * 1e3,
	       flops / mn * 1e-9, mb * 1e3, flops / mb * 1e-9, mn / mb, reps);
	free(xb);
	free(yb);
	free(y);
	free(pb);
	free(packed);
	return 0;
}

/* --winograd: the kernels' choice for every convolution timed. */
static enum npu_conv_winograd npu_bench_winograd;
static bool npu_nchwc_mode;

static int npu_bench_conv(const char *spec, struct npu_threadpool *pool,
			  double min_ms)
{
	struct npu_conv2d_params p = { .dil_h = 1, .dil_w = 1 };
	size_t n, c, h, w, oc, k, s, pad, g, xs, ws, ys;
	float *x, *wt, *bias, *y;
	void *scratch;
	float *packed = NULL;
	size_t nw;
	double t0, t, best = 1e30, cbest = 1e30, flops;
	int reps = 0;

	if (sscanf(spec, "%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu", &n, &c, &h, &w,
		   &oc, &k, &s, &pad, &g) != 9 || !g || !s)
		return -1;
	p.batch = n;
	p.in_c = c;
	p.in_h = h;
	p.in_w = w;
	p.out_c = oc;
	p.k_h = p.k_w = k;
	p.stride_h = p.stride_w = s;
	p.pad_top = p.pad_left = pad;
	p.out_h = (h + 2 * pad - k) / s + 1;
	p.out_w = (w + 2 * pad - k) / s + 1;
	p.groups = g;
	p.act.kind = NPU_CPU_ACT_RELU;
	p.winograd = npu_bench_winograd;
	xs = n * c * h * w;
	ws = oc * (c / g) * k * k;
	ys = n * oc * p.out_h * p.out_w;
	x = malloc(xs * sizeof(*x));
	wt = malloc(ws * sizeof(*wt));
	bias = calloc(oc, sizeof(*bias));
	y = malloc(ys * sizeof(*y));
	scratch = malloc(npu_conv2d_f32_scratch_size(&p,
			 npu_threadpool_size(pool)) + 1);
	if (!x || !wt || !bias || !y || !scratch)
		return -1;
	npu_fill(x, xs, 1);
	npu_fill(wt, ws, 2);
	if (npu_nchwc_mode) {
		int rc = npu_bench_nchwc(&p, x, wt, bias, pool, min_ms);

		free(x);
		free(wt);
		free(bias);
		free(y);
		free(scratch);
		return rc;
	}
	/* Weights packed once, as the Conv op does at plan time. */
	nw = npu_conv2d_f32_packed_floats(&p);
	if (nw) {
		packed = aligned_alloc(64, (nw * sizeof(float) + 63) / 64 * 64);
		if (!packed)
			return -1;
		npu_conv2d_f32_pack_weights(&p, wt, packed, pool);
	}
	npu_conv2d_f32_prepacked(&p, x, wt, packed, bias, y, scratch, pool);
	t0 = npu_now();
	do {
		double st = npu_now(), cs = npu_cpu_now();

		npu_conv2d_f32_prepacked(&p, x, wt, packed, bias, y, scratch,
					 pool);
		t = npu_now() - st;
		if (t < best)
			best = t;
		t = npu_cpu_now() - cs;
		if (t < cbest)
			cbest = t;
		reps++;
	} while ((npu_now() - t0) * 1e3 < min_ms || reps < 3);
	flops = 2.0 * ys * (c / g) * k * k;
	printf("conv %zux%zux%zux%zu k%zu s%zu p%zu g%zu -> %zu: best %.3f ms, "
	       "%.1f GFLOP/s; per CPU-second %.1f GFLOP/s (%d reps)\n", n, c,
	       h, w, k, s, pad, g, oc, best * 1e3, flops / best * 1e-9,
	       flops / cbest * 1e-9, reps);
	free(x);
	free(wt);
	free(bias);
	free(y);
	free(scratch);
	free(packed);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {
		"1,64,160,160,64,3,1,1,1",	/* 3x3 conv */
		"1,64,160,160,64,1,1,0,1",	/* pointwise */
		"1,64,160,160,64,3,1,1,64",	/* depthwise */
		"1,3,640,640,16,3,2,1,1",	/* stem */
		"1,256,20,20,256,3,1,1,1",	/* deep, small */
	};
	struct npu_threadpool *pool;
	int threads = 1, i, rc = 0;
	double min_ms = 300;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--nchwc")) {
			npu_nchwc_mode = true;
			continue;
		}
		if (!strcmp(argv[i], "--nchw-in")) {
			npu_nchw_in_mode = true;
			continue;
		}
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min-ms"))
			min_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--isa") && !npu_cpu_kernels_cap_isa(argv[i + 1]))
			i++;
		else if (!strcmp(argv[i], "--winograd") && !strcmp(argv[i + 1], "0"))
			npu_bench_winograd = NPU_CONV_WINOGRAD_OFF, i++;
		else if (!strcmp(argv[i], "--winograd") && !strcmp(argv[i + 1], "all"))
			npu_bench_winograd = NPU_CONV_WINOGRAD_ALL, i++;
		else if (!strcmp(argv[i], "--winograd") && !strcmp(argv[i + 1], "auto"))
			i++;
		else
			goto usage;
	}
	pool = npu_threadpool_create(threads);
	if (!pool)
		return 1;
	printf("isa %s, threads %d\n", npu_cpu_kernels_isa(), threads);
	if (i < argc) {
		for (; i < argc; i++)
			if (npu_bench_conv(argv[i], pool, min_ms))
				goto usage;
	} else {
		for (i = 0; i < (int)(sizeof(defaults) / sizeof(defaults[0])); i++)
			rc |= npu_bench_conv(defaults[i], pool, min_ms);
	}
	npu_threadpool_destroy(pool);
	return rc ? 1 : 0;
usage:
	fprintf(stderr, "usage: %s [--threads N] [--min-ms MS] [--nchwc] [--nchw-in] "
		"[--isa portable|avx2|avx512] [--winograd auto|0|all] "
		"[N,C,H,W,OC,K,STRIDE,PAD,GROUPS]...\n", argv[0]);
	return 2;
}
