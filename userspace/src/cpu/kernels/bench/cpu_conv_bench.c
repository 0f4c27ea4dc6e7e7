// SPDX-License-Identifier: MIT
/*
 * cpu_conv_bench - GFLOP/s of npu_conv2d_f32 (and time of the pooling
 * kernels) on a few typical layer shapes, or one given on the command line:
 * cpu-conv-bench [--threads N] [--min-ms MS] [N,C,H,W,OC,K,STRIDE,PAD,GROUPS]...
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

	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--min-ms"))
			min_ms = atof(argv[i + 1]);
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
	fprintf(stderr, "usage: %s [--threads N] [--min-ms MS] "
		"[N,C,H,W,OC,K,STRIDE,PAD,GROUPS]...\n", argv[0]);
	return 2;
}
