// SPDX-License-Identifier: MIT
/*
 * cpu_gemm_bench - GFLOP/s of npu_sgemm on square (or M N K) products.
 * usage: cpu-gemm-bench [--threads N] [--min-ms MS] [--isa ISA] SIZE... | M,N,K...
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

int main(int argc, char **argv)
{
	struct npu_threadpool *pool;
	int threads = 1, i;
	double min_ms = 300;

	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--min-ms"))
			min_ms = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--isa") || npu_cpu_kernels_cap_isa(argv[i + 1]))
			goto usage;
	}
	if (i >= argc)
		goto usage;
	pool = npu_threadpool_create(threads);
	if (!pool)
		return 1;
	printf("isa %s, threads %d\n", npu_cpu_kernels_isa(), threads);
	for (; i < argc; i++) {
		size_t m, n, k;
		float *a, *b, *c;
		double t0, t, best = 1e30, cbest = 1e30;
		int reps = 0;

		if (sscanf(argv[i], "%zu,%zu,%zu", &m, &n, &k) != 3) {
			m = n = k = strtoul(argv[i], NULL, 10);
		}
		a = malloc(m * k * sizeof(*a));
		b = malloc(k * n * sizeof(*b));
		c = malloc(m * n * sizeof(*c));
		if (!a || !b || !c)
			return 1;
		npu_fill(a, m * k, 1);
		npu_fill(b, k * n, 2);
		npu_sgemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n,
			  pool);
		t0 = npu_now();
		do {
			double s = npu_now(), cs = npu_cpu_now();

			npu_sgemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f,
				  c, n, pool);
			t = npu_now() - s;
			if (t < best)
				best = t;
			t = npu_cpu_now() - cs;
			if (t < cbest)
				cbest = t;
			reps++;
		} while ((npu_now() - t0) * 1e3 < min_ms || reps < 3);
		printf("sgemm %zux%zux%zu: best %.3f ms, %.1f GFLOP/s; "
		       "per CPU-second %.1f GFLOP/s (%d reps)\n", m, n, k,
		       best * 1e3, 2.0 * m * n * k / best * 1e-9,
		       2.0 * m * n * k / cbest * 1e-9, reps);
		free(a);
		free(b);
		free(c);
	}
	npu_threadpool_destroy(pool);
	return 0;
usage:
	fprintf(stderr, "usage: %s [--threads N] [--min-ms MS] [--isa portable|avx2|avx512] SIZE|M,N,K...\n",
		argv[0]);
	return 2;
}
