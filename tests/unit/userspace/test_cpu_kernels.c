// SPDX-License-Identifier: MIT
/*
 * test_cpu_kernels.c - the CPU kernels against naive double-precision
 * references over seeded random shapes. meson runs this binary once per
 * code path (NPU_CPU_ISA=portable|avx2|avx512, which main() applies), once
 * more with every 3x3 conv through Winograd (NPU_CPU_WINOGRAD=all: the
 * params' winograd field) and once with every pool timed (NPU_POOL_STATS=1:
 * the pools are created with stats on).
 *
 * Tolerances (eps = FLT_EPSILON), per output element:
 *   sgemm:   |c - ref| <= 4 eps (K + 2) (|alpha| sum_k |a b| + |beta c|)
 *   conv:    |y - ref| <= 4 eps (K + 2) (sum |w x| + |bias|) + 2e-6 |ref|,
 *            K = in_c / groups * k_h * k_w (the 2e-6 covers sigmoid)
 *   maxpool: exact; avgpool: 4 eps (taps + 2) sum |x| / taps
 *   exp:     relative 4e-7 (normal results); sigmoid: relative 1e-6
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_kernels.h"
#include "kernel_test_util.h"

/* NPU_CPU_WINOGRAD / NPU_POOL_STATS as meson sets them (main()). */
static enum npu_conv_winograd conv_winograd;
static bool pool_stats;

/* Every pool of the tests with stats as the run asks (the stats test aside). */
static struct npu_threadpool *test_pool_create(int threads)
{
	return npu_threadpool_create_stats(threads, pool_stats);
}
#define npu_threadpool_create(threads) test_pool_create(threads)

/* ---- helpers ---- */

static float *alloc_floats(size_t n)
{
	float *p = malloc((n ? n : 1) * sizeof(float));

	assert_non_null(p);
	return p;
}

/* A dimension: often tiny, odd or prime, sometimes large. */
static size_t pick_dim(struct rng *r, size_t large)
{
	static const size_t special[] = { 1, 2, 3, 5, 7, 13, 14, 15, 16, 17,
					  31, 32, 33, 47, 64, 97, 127, 131 };

	switch (rng_below(r, 4)) {
	case 0:
		return special[rng_below(r, sizeof(special) / sizeof(special[0]))];
	case 1:
		return 1 + rng_below(r, 40);
	case 2:
		return 1 + rng_below(r, 150);
	default:
		return 1 + rng_below(r, large);
	}
}

/* ---- ISA selection ---- */

static void test_isa_follows_env_cap(void **state)
{
	const char *want = getenv("NPU_CPU_ISA");
	const char *isa = npu_cpu_kernels_isa();

	(void)state;
	assert_true(!strcmp(isa, "portable") || !strcmp(isa, "avx2") ||
		    !strcmp(isa, "avx512"));
	if (!want)
		return;
	if (!strcmp(want, "portable"))
		assert_string_equal(isa, "portable");
	else if (!strcmp(want, "avx2") && __builtin_cpu_supports("avx2") &&
		 __builtin_cpu_supports("fma"))
		assert_string_equal(isa, "avx2");
	else if (!strcmp(want, "avx512") &&
		 __builtin_cpu_supports("avx512f") &&
		 __builtin_cpu_supports("avx512bw") &&
		 __builtin_cpu_supports("avx512dq") &&
		 __builtin_cpu_supports("avx512vl"))
		assert_string_equal(isa, "avx512");
	print_message("kernels run the %s path\n", isa);
}

/* ---- thread pool ---- */

struct visit_ctx {
	_Atomic unsigned *hits;
	int threads;
	_Atomic int bad_tid;
};

static void visit(void *ctx, size_t i)
{
	struct visit_ctx *v = ctx;

	v->hits[i]++;
}

static void visit_tid(void *ctx, size_t i, int tid)
{
	struct visit_ctx *v = ctx;

	v->hits[i]++;
	if (tid < 0 || tid >= v->threads)
		v->bad_tid = 1;
}

static void test_threadpool_runs_every_index_once(void **state)
{
	static const int sizes[] = { 1, 2, 3, 8 };
	static const size_t counts[] = { 0, 1, 2, 7, 1000, 100000 };
	size_t si, ci, i;

	(void)state;
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		struct npu_threadpool *pool = npu_threadpool_create(sizes[si]);

		assert_non_null(pool);
		assert_int_equal(npu_threadpool_size(pool), sizes[si]);
		for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
			size_t count = counts[ci];
			int runs = count <= 1000 ? 100 : 3, run;
			struct visit_ctx v = { .threads = sizes[si] };

			v.hits = calloc(count + 1, sizeof(*v.hits));
			assert_non_null(v.hits);
			for (run = 0; run < runs; run++) {
				if (run & 1)
					npu_threadpool_run_tid(pool, visit_tid,
							       &v, count);
				else
					npu_threadpool_run(pool, visit, &v,
							   count);
			}
			for (i = 0; i < count; i++)
				assert_int_equal(v.hits[i], (unsigned)runs);
			assert_int_equal(v.hits[count], 0);
			assert_int_equal(v.bad_tid, 0);
			free(v.hits);
		}
		npu_threadpool_destroy(pool);
	}
}

static void test_threadpool_null_and_bad_sizes(void **state)
{
	struct visit_ctx v = { .threads = 1 };
	size_t i;

	(void)state;
	assert_null(npu_threadpool_create(0));
	assert_null(npu_threadpool_create(-3));
	assert_int_equal(npu_threadpool_size(NULL), 1);
	npu_threadpool_destroy(NULL);
	v.hits = calloc(50, sizeof(*v.hits));
	assert_non_null(v.hits);
	npu_threadpool_run(NULL, visit, &v, 50);
	npu_threadpool_run_tid(NULL, visit_tid, &v, 50);
	for (i = 0; i < 50; i++)
		assert_int_equal(v.hits[i], 2);
	assert_int_equal(v.bad_tid, 0);
	free(v.hits);
}

/* Busy work the stats can see: a few microseconds of CPU per task. */
static void spin_task(void *ctx, size_t i)
{
	struct visit_ctx *v = ctx;
	volatile unsigned x = 0;
	unsigned k;

	for (k = 0; k < 20000; k++)
		x += k;
	v->hits[i]++;
}

/*
 * A pool created with stats on: the counters add up to what was run, on
 * the pool or a view, and the take resets them. Created with them off
 * (run twice: on, then off), take says stats are off.
 */
static void check_threadpool_stats(bool on)
{
	struct npu_threadpool *pool = npu_threadpool_create_stats(2, on);
	struct npu_threadpool *view;
	struct npu_threadpool_stats st;
	struct visit_ctx v = { .threads = 2 };
	size_t i;

	assert_non_null(pool);
	view = npu_threadpool_create_view(pool);
	assert_non_null(view);
	v.hits = calloc(1000, sizeof(*v.hits));
	assert_non_null(v.hits);
	if (!on) {
		assert_false(npu_threadpool_stats_take(pool, &st));
		assert_false(npu_threadpool_stats_take(view, &st));
		assert_false(npu_threadpool_stats_take(NULL, &st));
		goto out;
	}
	assert_true(npu_threadpool_stats_take(pool, &st));	/* reset */
	npu_threadpool_run(pool, spin_task, &v, 1000);	/* parallel */
	npu_threadpool_run(pool, spin_task, &v, 1);	/* inline: one task */
	assert_true(npu_threadpool_stats_take(pool, &st));
	assert_int_equal(st.runs, 1);
	assert_int_equal(st.inline_runs, 1);
	assert_int_equal(st.tasks, 1001);
	assert_true(st.worker_tasks <= 1000);
	assert_true(st.work_ns > 0);
	assert_true(st.serial_ns > 0 && st.serial_ns <= st.work_ns);
	/* Balance can only be as good as perfect: span >= work / threads. */
	assert_true(st.span_ns >= (st.work_ns - st.serial_ns) / 2 + st.serial_ns);
	assert_true(st.wait_ns <= st.wall_ns);
	assert_true(npu_threadpool_stats_take(pool, &st));
	assert_int_equal(st.runs + st.inline_runs + st.tasks + st.work_ns, 0);
	/* A view's runs count on the view, not on the shared pool. */
	npu_threadpool_run_tid(view, visit_tid, &v, 999);
	assert_true(npu_threadpool_stats_take(view, &st));
	assert_int_equal(st.runs, 1);
	assert_int_equal(st.tasks, 999);
	assert_true(npu_threadpool_stats_take(pool, &st));
	assert_int_equal(st.runs + st.tasks, 0);
	assert_int_equal(v.hits[0], 3);
	for (i = 1; i < 999; i++)
		assert_int_equal(v.hits[i], 2);
	assert_int_equal(v.hits[999], 1);
out:
	free(v.hits);
	npu_threadpool_destroy(view);
	npu_threadpool_destroy(pool);
}

static void test_threadpool_stats(void **state)
{
	(void)state;
	check_threadpool_stats(true);
	check_threadpool_stats(false);
}

static void test_threadpool_create_destroy_repeatedly(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 50; i++) {
		struct npu_threadpool *pool = npu_threadpool_create(1 + i % 4);
		struct visit_ctx v = { .threads = 1 + i % 4 };

		assert_non_null(pool);
		v.hits = calloc(10, sizeof(*v.hits));
		assert_non_null(v.hits);
		if (i % 3)
			npu_threadpool_run(pool, visit, &v, 10);
		npu_threadpool_destroy(pool);
		free(v.hits);
	}
}

/* ---- sgemm ---- */

static double gemm_a(bool t, const float *a, size_t lda, size_t i, size_t k)
{
	return t ? a[k * lda + i] : a[i * lda + k];
}

static double gemm_b(bool t, const float *b, size_t ldb, size_t k, size_t j)
{
	return t ? b[j * ldb + k] : b[k * ldb + j];
}

/* Runs one product and checks it against the double reference. */
static void check_sgemm(struct rng *r, bool ta, bool tb, size_t m, size_t n,
			size_t k, float alpha, float beta,
			struct npu_threadpool *pool)
{
	size_t pad = rng_below(r, 3) ? 0 : 1 + rng_below(r, 5);
	size_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
	size_t ldc = n + pad, arows = ta ? k : m, brows = tb ? n : k;
	float *a = alloc_floats(arows * lda), *b = alloc_floats(brows * ldb);
	float *c = alloc_floats(m * ldc), *c0 = alloc_floats(m * ldc);
	size_t i, j, kk;

	fill_random(r, a, arows * lda);
	fill_random(r, b, brows * ldb);
	if (beta == 0.0f)
		fill_nan(c0, m * ldc);	/* must not be read */
	else
		fill_random(r, c0, m * ldc);
	/* The padding columns of C must survive. */
	for (i = 0; i < m; i++)
		for (j = n; j < ldc; j++)
			c0[i * ldc + j] = 12345.0f;
	memcpy(c, c0, m * ldc * sizeof(float));
	npu_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pool);

	for (i = 0; i < m; i++) {
		for (j = 0; j < ldc; j++) {
			double ref = 0, mag = 0, tol, got = c[i * ldc + j];

			if (j >= n) {
				assert_true(got == 12345.0);
				continue;
			}
			for (kk = 0; kk < k; kk++) {
				double p = gemm_a(ta, a, lda, i, kk) *
					   gemm_b(tb, b, ldb, kk, j);

				ref += p;
				mag += fabs(p);
			}
			ref *= alpha;
			mag *= fabs(alpha);
			if (beta != 0.0f) {
				ref += (double)beta * c0[i * ldc + j];
				mag += fabs((double)beta * c0[i * ldc + j]);
			}
			tol = 4.0 * FLT_EPSILON * (double)(k + 2) * mag + 1e-30;
			if (!(fabs(got - ref) <= tol))
				fail_msg("sgemm ta=%d tb=%d m=%zu n=%zu k=%zu "
					 "alpha=%g beta=%g: C[%zu][%zu] = %.9g, "
					 "want %.9g (tol %.3g)", ta, tb, m, n, k,
					 alpha, beta, i, j, got, ref, tol);
		}
	}
	free(a);
	free(b);
	free(c);
	free(c0);
}

static void test_sgemm_matches_reference_random_shapes(void **state)
{
	static const float alphas[] = { 1.0f, -0.5f, 2.25f, 1.0f };
	static const float betas[] = { 0.0f, 1.0f, -0.75f, 0.0f };
	struct npu_threadpool *pool = npu_threadpool_create(3);
	struct rng r = { 0x5eed0001u };
	int t;

	(void)state;
	assert_non_null(pool);
	for (t = 0; t < 160; t++) {
		size_t m = pick_dim(&r, 300), n = pick_dim(&r, 300);
		size_t k = pick_dim(&r, 600);

		/* Keep the double reference affordable under sanitizers. */
		while ((double)m * n * k > 4e6) {
			if (k > 64)
				k /= 2;
			else if (m > n)
				m /= 2;
			else
				n /= 2;
		}
		check_sgemm(&r, t & 1, (t >> 1) & 1, m, n, k,
			    alphas[rng_below(&r, 4)], betas[rng_below(&r, 4)],
			    t % 3 ? pool : NULL);
	}
	npu_threadpool_destroy(pool);
}

static void test_sgemm_deep_and_wide_products(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed0002u };
	int t;

	(void)state;
	assert_non_null(pool);
	/* Several depth blocks, several row / column blocks, edge tiles. */
	for (t = 0; t < 4; t++)
		check_sgemm(&r, t & 1, t >> 1, 61, 45, 1031, 1.0f,
			    t ? 0.5f : 0.0f, pool);
	check_sgemm(&r, false, false, 517, 300, 37, 1.0f, 0.0f, pool);
	check_sgemm(&r, true, true, 29, 1100, 70, -1.0f, 2.0f, pool);
	check_sgemm(&r, false, true, 1, 1, 3000, 1.0f, 0.0f, pool);
	npu_threadpool_destroy(pool);
}

static void test_sgemm_degenerate_sizes(void **state)
{
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 1, 1, 1, 1, 1 };
	float c[4] = { 1, 2, 3, 4 };

	(void)state;
	/* m or n zero: nothing written. */
	npu_sgemm(false, false, 0, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2, NULL);
	npu_sgemm(false, false, 2, 0, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2, NULL);
	assert_true(c[0] == 1 && c[3] == 4);
	/* k zero: C = beta C. */
	npu_sgemm(false, false, 2, 2, 0, 1.0f, a, 3, b, 2, 2.0f, c, 2, NULL);
	assert_true(c[0] == 2 && c[1] == 4 && c[2] == 6 && c[3] == 8);
	/* alpha zero and beta zero: C = 0 even if it held NaN. */
	fill_nan(c, 4);
	npu_sgemm(false, false, 2, 2, 3, 0.0f, a, 3, b, 2, 0.0f, c, 2, NULL);
	assert_true(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 0);
	/* beta zero with NaN C and a real product. */
	fill_nan(c, 4);
	npu_sgemm(false, false, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2, NULL);
	assert_true(c[0] == 6 && c[1] == 6 && c[2] == 15 && c[3] == 15);
}

static void test_sgemm_result_independent_of_thread_count(void **state)
{
	static const int sizes[] = { 1, 2, 3, 5 };
	struct rng r = { 0x5eed0003u };
	size_t m = 301, n = 257, k = 530, si;
	float *a = alloc_floats(m * k), *b = alloc_floats(k * n);
	float *c = alloc_floats(m * n), *c1 = alloc_floats(m * n);

	(void)state;
	fill_random(&r, a, m * k);
	fill_random(&r, b, k * n);
	npu_sgemm(false, true, m, n, k, 1.5f, a, k, b, k, 0.0f, c1, n, NULL);
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		struct npu_threadpool *pool = npu_threadpool_create(sizes[si]);

		assert_non_null(pool);
		fill_nan(c, m * n);
		npu_sgemm(false, true, m, n, k, 1.5f, a, k, b, k, 0.0f, c, n,
			  pool);
		assert_memory_equal(c, c1, m * n * sizeof(float));
		npu_threadpool_destroy(pool);
	}
	free(a);
	free(b);
	free(c);
	free(c1);
}

/*
 * B packed once (plan time) gives bitwise npu_sgemm's result, both
 * layouts of B, odd shapes, with and without a pool; a panel width that
 * is not this ISA's (B packed on another machine) packs B per call.
 */
static void test_sgemm_prepacked_b_matches_per_call(void **state)
{
	static const size_t shapes[][3] = {
		{ 40, 6625, 120 }, { 1, 1, 1 }, { 7, 33, 5 }, { 61, 45, 1031 },
		{ 128, 17, 64 },
	};
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed0004u };
	size_t si;
	int tb, pi;

	(void)state;
	assert_non_null(pool);
	for (si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
		for (tb = 0; tb < 2; tb++)
			for (pi = 0; pi < 2; pi++) {
				size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
				size_t ldb = tb ? k : n, nr;
				float *a = alloc_floats(m * k), *b = alloc_floats(k * n);
				float *c = alloc_floats(m * n), *c1 = alloc_floats(m * n);
				float *pb = alloc_floats(npu_sgemm_packed_b_floats(n, k));

				fill_random(&r, a, m * k);
				fill_random(&r, b, k * n);
				fill_random(&r, c1, m * n);
				memcpy(c, c1, m * n * sizeof(float));
				nr = npu_sgemm_pack_b(tb, n, k, b, ldb, pb);
				assert_true(nr > 0);
				npu_sgemm(false, tb, m, n, k, 0.5f, a, k, b, ldb, 0.25f, c1, n,
					  pi ? pool : NULL);
				/* B's own copy scrambled: the packed panels are read. */
				fill_nan(b, k * n);
				npu_sgemm_prepacked(false, tb, m, n, k, 0.5f, a, k, b, ldb, pb,
						    nr, 0.25f, c, n, pi ? pool : NULL);
				assert_memory_equal(c, c1, m * n * sizeof(float));
				/* Another panel width: B from its operand (NaN now). */
				npu_sgemm_prepacked(false, tb, m, n, k, 0.5f, a, k, b, ldb, pb,
						    nr + 1, 0.0f, c, n, pi ? pool : NULL);
				assert_true(c[0] != c[0]);
				free(a);
				free(b);
				free(c);
				free(c1);
				free(pb);
			}
	npu_threadpool_destroy(pool);
}

/* ---- activations and exp ---- */

static double act_ref(const struct npu_cpu_act_params *a, double x)
{
	switch (a->kind) {
	case NPU_CPU_ACT_RELU:
		return x > 0 ? x : 0;
	case NPU_CPU_ACT_CLIP:
		return x < a->act_min ? a->act_min : x > a->act_max ? a->act_max : x;
	case NPU_CPU_ACT_LEAKY_RELU:
		return x < 0 ? a->alpha * x : x;
	case NPU_CPU_ACT_HARD_SIGMOID:
		return fmin(1.0, fmax(0.0, a->alpha * x + a->beta));
	case NPU_CPU_ACT_HARD_SWISH:
		return x * fmin(1.0, fmax(0.0, x / 6.0 + 0.5));
	case NPU_CPU_ACT_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	default:
		return x;
	}
}

static const struct npu_cpu_act_params test_acts[] = {
	{ .kind = NPU_CPU_ACT_NONE },
	{ .kind = NPU_CPU_ACT_RELU },
	{ .kind = NPU_CPU_ACT_CLIP, .act_min = -0.25f, .act_max = 0.5f },
	{ .kind = NPU_CPU_ACT_LEAKY_RELU, .alpha = 0.1f },
	{ .kind = NPU_CPU_ACT_HARD_SIGMOID, .alpha = 0.2f, .beta = 0.5f },
	{ .kind = NPU_CPU_ACT_HARD_SWISH },
	{ .kind = NPU_CPU_ACT_SIGMOID },
};
#define N_TEST_ACTS (sizeof(test_acts) / sizeof(test_acts[0]))

static void test_vec_act_every_kind_and_length(void **state)
{
	struct rng r = { 0x5eed0004u };
	size_t ai, n, i;
	float x[300], y[300];

	(void)state;
	for (ai = 0; ai < N_TEST_ACTS; ai++) {
		for (n = 0; n <= 67; n++) {
			for (i = 0; i < n; i++)
				x[i] = rng_float(&r) * 12.0f;
			y[n] = 777.0f;
			npu_vec_act_f32(&test_acts[ai], x, y, n);
			assert_true(y[n] == 777.0f);
			for (i = 0; i < n; i++) {
				double ref = act_ref(&test_acts[ai], x[i]);

				if (!(fabs(y[i] - ref) <= 1e-6 * fabs(ref) + 1e-7))
					fail_msg("act %d x=%.9g: %.9g want %.9g",
						 test_acts[ai].kind, x[i], y[i], ref);
			}
		}
		/* In place. */
		for (i = 0; i < 300; i++)
			x[i] = y[i] = rng_float(&r) * 30.0f;
		npu_vec_act_f32(&test_acts[ai], y, y, 300);
		for (i = 0; i < 300; i++)
			assert_true(fabs(y[i] - act_ref(&test_acts[ai], x[i])) <=
				    1e-6 * fabs(act_ref(&test_acts[ai], x[i])) + 1e-7);
	}
}

static void test_vec_sigmoid_saturates_cleanly(void **state)
{
	const struct npu_cpu_act_params sig = { .kind = NPU_CPU_ACT_SIGMOID };
	float x[6] = { -200.0f, -90.0f, 90.0f, 200.0f, INFINITY, -INFINITY };
	float y[6];

	(void)state;
	npu_vec_act_f32(&sig, x, y, 6);
	assert_true(y[0] >= 0.0f && y[0] < 1e-30f);
	assert_true(y[1] >= 0.0f && y[1] < 1e-30f);
	assert_true(y[2] == 1.0f && y[3] == 1.0f && y[4] == 1.0f);
	assert_true(y[5] == 0.0f);
}

static void test_vec_exp_accuracy_over_full_range(void **state)
{
	struct rng r = { 0x5eed0005u };
	size_t n = 200000, i;
	float *x = alloc_floats(n), *y = alloc_floats(n);
	double worst = 0;

	(void)state;
	for (i = 0; i < n; i++)
		x[i] = i < n / 2 ? -87.0f + 175.7f * (float)i / (float)(n / 2) :
		       rng_float(&r) * (i % 2 ? 10.0f : 87.0f);
	npu_vec_exp_f32(x, y, n);
	for (i = 0; i < n; i++) {
		double ref = exp((double)x[i]), rel = fabs(y[i] - ref) / ref;

		if (rel > worst)
			worst = rel;
		if (!(rel <= 4e-7))
			fail_msg("exp(%.9g) = %.9g, want %.9g (rel %.3g)", x[i],
				 y[i], ref, rel);
	}
	print_message("exp: worst relative error %.3g\n", worst);
	free(x);
	free(y);
}

static void test_vec_exp_special_values(void **state)
{
	float x[10] = { 0.0f, -0.0f, 89.0f, 1000.0f, INFINITY, -104.0f,
			-1000.0f, -INFINITY, NAN, -100.0f };
	float y[10];

	(void)state;
	npu_vec_exp_f32(x, y, 10);
	assert_true(y[0] == 1.0f && y[1] == 1.0f);
	assert_true(isinf(y[2]) && isinf(y[3]) && isinf(y[4]));
	assert_true(y[5] >= 0.0f && y[5] <= 1e-44f);
	assert_true(y[6] == 0.0f && y[7] == 0.0f);
	assert_true(isnan(y[8]));
	/* A subnormal result, within a few units of the smallest step. */
	assert_true(fabs(y[9] - exp(-100.0)) <= 4.0 * 1.4e-45 + 1e-6 * exp(-100.0));
}

static void test_vec_tanh_accuracy_and_special_values(void **state)
{
	struct rng r = { 0x5eed0006u };
	size_t n = 200011, i;	/* odd: the tail vector too */
	float *x = alloc_floats(n), *y = alloc_floats(n);
	float sx[8] = { 0.0f, -0.0f, 20.0f, -20.0f, INFINITY, -INFINITY, NAN, 1e-30f };
	float sy[8];
	double worst = 0;

	(void)state;
	for (i = 0; i < n; i++)
		x[i] = i < n / 2 ? -12.0f + 24.0f * (float)i / (float)(n / 2) :
		       (rng_float(&r) - 0.5f) * (i % 3 ? 2.0f : 1e-3f);
	npu_vec_tanh_f32(x, y, n);
	for (i = 0; i < n; i++) {
		double ref = tanh((double)x[i]), e = fabs(y[i] - ref);

		if (ref != 0 && e / fabs(ref) > worst)
			worst = e / fabs(ref);
		if (!(e <= 4e-7 * fabs(ref) + 1e-30))
			fail_msg("tanh(%.9g) = %.9g, want %.9g (rel %.3g)", x[i],
				 y[i], ref, e / fabs(ref));
	}
	print_message("tanh: worst relative error %.3g\n", worst);
	npu_vec_tanh_f32(sx, sy, 8);
	assert_true(sy[0] == 0.0f && sy[1] == 0.0f);
	assert_true(sy[2] == 1.0f && sy[3] == -1.0f && sy[4] == 1.0f && sy[5] == -1.0f);
	assert_true(isnan(sy[6]));
	assert_true(sy[7] == 1e-30f);
	free(x);
	free(y);
}

static void test_vec_erf_accuracy_and_special_values(void **state)
{
	struct rng r = { 0x5eed0007u };
	size_t n = 200013, i;	/* odd: the tail vector too */
	float *x = alloc_floats(n), *y = alloc_floats(n);
	float sx[9] = { 0.0f, -0.0f, 5.0f, -5.0f, INFINITY, -INFINITY, NAN, 1e-30f,
			0.927734375f };
	float sy[9];
	double worst = 0;

	(void)state;
	/* A sweep over both halves and past the clamp, then small values. */
	for (i = 0; i < n; i++)
		x[i] = i < n / 2 ? -6.0f + 12.0f * (float)i / (float)(n / 2) :
		       (rng_float(&r) - 0.5f) * (i % 3 ? 4.0f : 1e-3f);
	npu_vec_erf_f32(x, y, n);
	for (i = 0; i < n; i++) {
		double ref = erf((double)x[i]), e = fabs(y[i] - ref);

		if (ref != 0 && e / fabs(ref) > worst)
			worst = e / fabs(ref);
		/* 2 ulp of a float (the portable path has no fused FMA) */
		if (!(e <= 2.5e-7 * fabs(ref) + 1e-30))
			fail_msg("erf(%.9g) = %.9g, want %.9g (rel %.3g)", x[i],
				 y[i], ref, e / fabs(ref));
	}
	print_message("erf: worst relative error %.3g\n", worst);
	npu_vec_erf_f32(sx, sy, 9);
	assert_true(sy[0] == 0.0f && sy[1] == 0.0f && signbit(sy[1]));
	assert_true(sy[2] == 1.0f && sy[3] == -1.0f && sy[4] == 1.0f && sy[5] == -1.0f);
	assert_true(isnan(sy[6]));
	assert_true(fabs(sy[7] - 1.1283791670955126e-30) <= 2e-37);
	assert_true(fabs(sy[8] - erf(0.927734375)) <= 2.5e-7 * erf(0.927734375));
	free(x);
	free(y);
}

/* ---- convolution ---- */

struct conv_case {
	struct npu_conv2d_params p;
	size_t pad_bottom, pad_right;
	bool with_bias;
	bool with_residual;	/* p.residual set by check_conv */
};

/*
 * How check_conv runs the kernel: 0 npu_conv2d_f32 with the caller's
 * scratch; 1 weights packed first (as at plan time), caller's scratch;
 * 2 packed weights and scratch NULL (the pool's own, or malloc); 3 as 2,
 * packed from W's shape alone (1x1 planes, stride and dilation 1), as the
 * Conv op does before it knows the input's size.
 */
static int conv_mode;

static void run_conv(const struct npu_conv2d_params *p, const float *x,
		     const float *w, const float *bias, float *y,
		     struct npu_threadpool *pool)
{
	size_t size = npu_conv2d_f32_scratch_size(p, npu_threadpool_size(pool));
	size_t nw = npu_conv2d_f32_packed_floats(p);
	/* Exactly the size asked for, deliberately misaligned by 4 bytes. */
	char *buf = malloc(size + 4);
	float *packed = NULL;

	assert_non_null(buf);
	if (conv_mode && nw) {
		struct npu_conv2d_params wp = *p;

		if (conv_mode == 3) {
			wp.batch = wp.in_h = wp.in_w = wp.out_h = wp.out_w = 1;
			wp.stride_h = wp.stride_w = wp.dil_h = wp.dil_w = 1;
			wp.pad_top = wp.pad_left = 0;
			assert_int_equal(npu_conv2d_f32_packed_floats(&wp), nw);
		}
		/* Exactly the packed size too (rounded for aligned_alloc). */
		packed = aligned_alloc(64, (nw * sizeof(float) + 63) / 64 * 64);
		assert_non_null(packed);
		fill_nan(packed, nw);
		npu_conv2d_f32_pack_weights(&wp, w, packed, pool);
	}
	if (!conv_mode)
		assert_true(npu_conv2d_f32(p, x, w, bias, y, size ? buf + 4 : NULL, pool));
	else
		assert_true(npu_conv2d_f32_prepacked(p, x, w, packed, bias, y,
						     conv_mode == 1 && size ? buf + 4 : NULL,
						     pool));
	free(packed);
	free(buf);
}

static void check_conv(struct rng *r, const struct conv_case *cc,
		       struct npu_threadpool *pool)
{
	struct npu_conv2d_params pp = cc->p;
	const struct npu_conv2d_params *p = &pp;
	float *res = NULL;
	size_t xs = p->batch * p->in_c * p->in_h * p->in_w;
	size_t ws = p->out_c * (p->in_c / p->groups) * p->k_h * p->k_w;
	size_t ys = p->batch * p->out_c * p->out_h * p->out_w;
	size_t kdim = (p->in_c / p->groups) * p->k_h * p->k_w;
	float *x = alloc_floats(xs), *w = alloc_floats(ws);
	float *bias = alloc_floats(p->out_c), *y = alloc_floats(ys + 1);
	size_t b, oc, oh, ow;

	pp.winograd = conv_winograd;
	fill_random(r, x, xs);
	fill_random(r, w, ws);
	fill_random(r, bias, p->out_c);
	fill_nan(y, ys);
	y[ys] = 4321.0f;
	if (cc->with_residual) {
		res = alloc_floats(ys);
		fill_random(r, res, ys);
		pp.residual = res;
	}
	run_conv(p, x, w, cc->with_bias ? bias : NULL, y, pool);
	assert_true(y[ys] == 4321.0f);
	for (b = 0; b < p->batch; b++)
	for (oc = 0; oc < p->out_c; oc++)
	for (oh = 0; oh < p->out_h; oh++)
	for (ow = 0; ow < p->out_w; ow++) {
		double mag, ref = conv_ref(p, x, w, cc->with_bias ? bias : NULL,
					   b, oc, oh, ow, &mag);
		size_t yi = ((b * p->out_c + oc) * p->out_h + oh) * p->out_w + ow;
		double got = y[yi];
		double tol;

		if (res) {
			ref += res[yi];
			mag += fabs(res[yi]);
		}
		ref = act_ref(&p->act, ref);
		tol = 4.0 * FLT_EPSILON * (double)(kdim + 3) * mag +
		      2e-6 * fabs(ref) + 1e-30;
		if (p->act.post) {
			ref = p->act.post_scale * ref + p->act.post_shift;
			tol = tol * fabs(p->act.post_scale) +
			      4.0 * FLT_EPSILON * (fabs(ref) + fabs(p->act.post_shift));
		}
		if (!(fabs(got - ref) <= tol))
			fail_msg("conv n%zu c%zu %zux%zu -> oc%zu %zux%zu k%zux%zu "
				 "s%zu,%zu d%zu,%zu pads %zu,%zu,%zu,%zu g%zu act %d "
				 "post %d res %d: "
				 "y[%zu][%zu][%zu][%zu] = %.9g want %.9g (tol %.3g)",
				 p->batch, p->in_c, p->in_h, p->in_w, p->out_c,
				 p->out_h, p->out_w, p->k_h, p->k_w, p->stride_h,
				 p->stride_w, p->dil_h, p->dil_w, p->pad_top,
				 p->pad_left, cc->pad_bottom, cc->pad_right,
				 p->groups, p->act.kind, p->act.post, res != NULL,
				 b, oc, oh, ow, got, ref, tol);
	}
	free(res);
	free(x);
	free(w);
	free(bias);
	free(y);
}

/* The fused extras, each in a third of the cases: residual, affine. */
static void random_epilogue(struct rng *r, struct conv_case *cc)
{
	cc->with_residual = rng_below(r, 3) == 0;
	cc->p.act.post = rng_below(r, 3) == 0;
	cc->p.act.post_scale = cc->p.act.post ? 2.0f * rng_float(r) : 0.0f;
	cc->p.act.post_shift = cc->p.act.post ? rng_float(r) : 0.0f;
}

/* Random convolution: kind 0 general, 1 depthwise, 2 pointwise, 3 grouped. */
static void random_conv(struct rng *r, int kind, struct conv_case *cc)
{
	struct npu_conv2d_params *p = &cc->p;

	do {
		memset(cc, 0, sizeof(*cc));
		p->batch = 1 + (rng_below(r, 4) == 0) * rng_below(r, 3);
		p->groups = 1;
		p->in_h = 1 + rng_below(r, 24);
		p->in_w = 1 + rng_below(r, 40);
		if (kind == 1) {
			p->in_c = p->out_c = p->groups = 1 + rng_below(r, 12);
		} else if (kind == 3) {
			p->groups = 2 + rng_below(r, 3);
			p->in_c = p->groups * (1 + rng_below(r, 5));
			p->out_c = p->groups * (1 + rng_below(r, 20));
		} else {
			p->in_c = 1 + rng_below(r, 20);
			p->out_c = 1 + rng_below(r, 40);
		}
		if (kind == 2) {
			p->k_h = p->k_w = 1;
			p->stride_h = p->stride_w = p->dil_h = p->dil_w = 1;
		} else {
			p->k_h = 1 + rng_below(r, 5);
			p->k_w = 1 + rng_below(r, 5);
			p->stride_h = 1 + rng_below(r, 3);
			p->stride_w = 1 + rng_below(r, 3);
			p->dil_h = 1 + (rng_below(r, 4) == 0);
			p->dil_w = 1 + (rng_below(r, 4) == 0) * rng_below(r, 3);
			p->pad_top = rng_below(r, p->k_h + 1);
			p->pad_left = rng_below(r, p->k_w + 1);
			cc->pad_bottom = rng_below(r, p->k_h + 1);
			cc->pad_right = rng_below(r, p->k_w + 1);
		}
		p->out_h = out_extent(p->in_h, p->k_h, p->stride_h, p->dil_h,
				      p->pad_top, cc->pad_bottom);
		p->out_w = out_extent(p->in_w, p->k_w, p->stride_w, p->dil_w,
				      p->pad_left, cc->pad_right);
	} while (!p->out_h || !p->out_w);
	p->act = test_acts[rng_below(r, N_TEST_ACTS)];
	cc->with_bias = rng_below(r, 3) != 0;
	random_epilogue(r, cc);
}

static void test_conv2d_matches_reference_random_shapes(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(3);
	struct rng r = { 0x5eed0006u };
	struct conv_case cc;
	int t;

	(void)state;
	assert_non_null(pool);
	for (t = 0; t < 240; t++) {
		random_conv(&r, t % 4, &cc);
		check_conv(&r, &cc, t % 5 ? pool : NULL);
	}
	npu_threadpool_destroy(pool);
}

static void test_conv2d_every_activation_each_path(void **state)
{
	struct rng r = { 0x5eed0007u };
	struct conv_case cc;
	size_t ai;
	int kind;

	(void)state;
	for (kind = 0; kind < 4; kind++) {
		for (ai = 0; ai < N_TEST_ACTS; ai++) {
			int epi;

			/* Alone, with a residual, with an affine, both. */
			for (epi = 0; epi < 4; epi++) {
				random_conv(&r, kind, &cc);
				cc.p.act = test_acts[ai];
				cc.with_bias = true;
				cc.with_residual = epi & 1;
				cc.p.act.post = epi & 2;
				cc.p.act.post_scale = -1.5f;
				cc.p.act.post_shift = 0.25f;
				check_conv(&r, &cc, NULL);
			}
		}
	}
}

static void test_conv2d_larger_layers(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed0008u };
	struct conv_case cc;

	(void)state;
	assert_non_null(pool);
	/* Deep: several depth blocks of the GEMM; wide rows. */
	memset(&cc, 0, sizeof(cc));
	cc.p = (struct npu_conv2d_params){
		.batch = 1, .in_c = 70, .in_h = 9, .in_w = 11, .out_c = 33,
		.out_h = 9, .out_w = 11, .k_h = 3, .k_w = 3, .stride_h = 1,
		.stride_w = 1, .dil_h = 1, .dil_w = 1, .pad_top = 1,
		.pad_left = 1, .groups = 1,
		.act = { .kind = NPU_CPU_ACT_RELU },
	};
	cc.with_bias = true;
	check_conv(&r, &cc, pool);
	/* Pointwise over many pixels and channels. */
	cc.p = (struct npu_conv2d_params){
		.batch = 2, .in_c = 300, .in_h = 13, .in_w = 29, .out_c = 45,
		.out_h = 13, .out_w = 29, .k_h = 1, .k_w = 1, .stride_h = 1,
		.stride_w = 1, .dil_h = 1, .dil_w = 1, .groups = 1,
	};
	check_conv(&r, &cc, pool);
	/* Depthwise stride 2 on wide rows (vector pair loads). */
	cc.p = (struct npu_conv2d_params){
		.batch = 1, .in_c = 5, .in_h = 17, .in_w = 131, .out_c = 5,
		.out_h = 9, .out_w = 66, .k_h = 3, .k_w = 3, .stride_h = 2,
		.stride_w = 2, .dil_h = 1, .dil_w = 1, .pad_top = 1,
		.pad_left = 1, .groups = 5,
		.act = { .kind = NPU_CPU_ACT_HARD_SWISH },
	};
	check_conv(&r, &cc, pool);
	/*
	 * 3x3 stride 1 through Winograd on 2 threads: an odd number of bands
	 * (5 on AVX-512), a partial last tile row and column, a residual.
	 */
	cc.p = (struct npu_conv2d_params){
		.batch = 1, .in_c = 8, .in_h = 79, .in_w = 77, .out_c = 24,
		.out_h = 79, .out_w = 77, .k_h = 3, .k_w = 3, .stride_h = 1,
		.stride_w = 1, .dil_h = 1, .dil_w = 1, .pad_top = 1,
		.pad_left = 1, .groups = 1,
		.act = { .kind = NPU_CPU_ACT_RELU },
	};
	cc.pad_bottom = cc.pad_right = 1;
	cc.with_residual = true;
	check_conv(&r, &cc, pool);
	npu_threadpool_destroy(pool);
}

/*
 * Subnormal weights (a third of a trained squeeze-excite conv's) are
 * zero in the packed copy, where each would cost a microcode assist per
 * multiply-add, and the outputs still match the reference computed with
 * them: pointwise, general and Winograd (3x3) packings.
 */
static void test_conv2d_packed_weights_flush_subnormals(void **state)
{
	static const size_t ks[] = { 1, 3 };
	struct rng r = { 0x5eed0010u };
	size_t ki;

	(void)state;
	for (ki = 0; ki < 2; ki++) {
		struct npu_conv2d_params p = {
			.batch = 1, .in_c = 48, .in_h = 12, .in_w = 13,
			.out_c = 20, .out_h = 12, .out_w = 13, .k_h = ks[ki],
			.k_w = ks[ki], .stride_h = 1, .stride_w = 1, .dil_h = 1,
			.dil_w = 1, .pad_top = ks[ki] / 2, .pad_left = ks[ki] / 2,
			.groups = 1, .act = { .kind = NPU_CPU_ACT_RELU },
			.winograd = conv_winograd,
		};
		size_t xs = p.in_c * p.in_h * p.in_w, ys = p.out_c * p.out_h * p.out_w;
		size_t ws = p.out_c * p.in_c * p.k_h * p.k_w, i, sub = 0;
		size_t n = npu_conv2d_f32_packed_floats(&p), oc, oh, ow;
		float *x = alloc_floats(xs), *w = alloc_floats(ws);
		float *bias = alloc_floats(p.out_c), *y = alloc_floats(ys);
		float *packed = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);

		assert_true(n > 0);
		assert_non_null(packed);
		fill_random(&r, x, xs);
		fill_random(&r, w, ws);
		fill_random(&r, bias, p.out_c);
		for (i = 0; i < ws; i += 3) {
			w[i] = i % 2 ? 3e-39f : -1e-40f;	/* both subnormal */
			sub++;
		}
		assert_true(fpclassify(w[0]) == FP_SUBNORMAL && sub > ws / 4);
		npu_conv2d_f32_pack_weights(&p, w, packed, NULL);
		for (i = 0; i < n; i++)
			if (fpclassify(packed[i]) == FP_SUBNORMAL)
				fail_msg("k%zu: packed[%zu] = %g is subnormal",
					 ks[ki], i, (double)packed[i]);
		assert_true(npu_conv2d_f32_prepacked(&p, x, w, packed, bias, y,
						     NULL, NULL));
		for (oc = 0; oc < p.out_c; oc++)
		for (oh = 0; oh < p.out_h; oh++)
		for (ow = 0; ow < p.out_w; ow++) {
			double mag, ref = conv_ref(&p, x, w, bias, 0, oc, oh, ow, &mag);
			double got = y[(oc * p.out_h + oh) * p.out_w + ow];
			double tol = 4.0 * FLT_EPSILON * (double)(p.in_c * 9 + 3) * mag +
				     2e-6 * fabs(ref) + 1e-30;

			ref = ref > 0 ? ref : 0;	/* ReLU */
			if (!(fabs(got - ref) <= tol))
				fail_msg("k%zu: y[%zu][%zu][%zu] = %.9g want %.9g",
					 ks[ki], oc, oh, ow, got, ref);
		}
		free(packed);
		free(x);
		free(w);
		free(bias);
		free(y);
	}
}

static void test_conv2d_result_independent_of_thread_count(void **state)
{
	static const int sizes[] = { 1, 2, 4 };
	struct rng r = { 0x5eed0009u };
	struct conv_case cc;
	int i;

	(void)state;
	/* Six shapes of each kind: depthwise rows pair up differently in
	 * bands of different thread counts (dw_taps2 against dw_taps). */
	for (i = 0; i < 24; i++) {
		struct npu_conv2d_params *p = &cc.p;
		size_t xs, ws, ys, si;
		float *x, *w, *bias, *y, *y1;

		random_conv(&r, i % 4, &cc);
		xs = p->batch * p->in_c * p->in_h * p->in_w;
		ws = p->out_c * (p->in_c / p->groups) * p->k_h * p->k_w;
		ys = p->batch * p->out_c * p->out_h * p->out_w;
		x = alloc_floats(xs);
		w = alloc_floats(ws);
		bias = alloc_floats(p->out_c);
		y = alloc_floats(ys);
		y1 = alloc_floats(ys);
		fill_random(&r, x, xs);
		fill_random(&r, w, ws);
		fill_random(&r, bias, p->out_c);
		run_conv(p, x, w, bias, y1, NULL);
		for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			struct npu_threadpool *pool =
				npu_threadpool_create(sizes[si]);

			assert_non_null(pool);
			fill_nan(y, ys);
			run_conv(p, x, w, bias, y, pool);
			assert_memory_equal(y, y1, ys * sizeof(float));
			npu_threadpool_destroy(pool);
		}
		free(x);
		free(w);
		free(bias);
		free(y);
		free(y1);
	}
}

static void test_conv2d_prepacked_weights_match_reference(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed000au };
	struct conv_case cc;
	int t;

	(void)state;
	assert_non_null(pool);
	for (conv_mode = 1; conv_mode <= 3; conv_mode++)
		for (t = 0; t < 120; t++) {
			random_conv(&r, t % 4, &cc);
			check_conv(&r, &cc, t % 3 ? pool : NULL);
		}
	conv_mode = 0;
	npu_threadpool_destroy(pool);
}

/*
 * Wide output rows: on AVX-512 these take the row-tile path that reads
 * the zero-padded (phase-split for stride_w > 1) input in place, no
 * im2col; odd widths leave partial tiles, pads are asymmetric, strides and
 * dilations vary along and down the rows.
 */
static void test_conv2d_wide_rows_match_reference(void **state)
{
	static const size_t widths[] = { 24, 31, 32, 50, 64, 77, 96, 130 };
	struct npu_threadpool *pool = npu_threadpool_create(3);
	struct rng r = { 0x5eed000bu };
	struct conv_case cc;
	size_t wi;

	(void)state;
	assert_non_null(pool);
	for (wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++) {
		struct npu_conv2d_params *p = &cc.p;

		memset(&cc, 0, sizeof(cc));
		p->batch = 1 + wi % 2;
		p->groups = wi % 3 == 2 ? 2 : 1;
		p->in_c = p->groups * (1 + rng_below(&r, 17));
		p->out_c = p->groups * (1 + rng_below(&r, 33));
		p->k_h = 1 + rng_below(&r, 5);
		p->k_w = 2 + rng_below(&r, 6);
		p->stride_h = 1 + wi % 2;
		p->stride_w = 1 + (wi % 3 == 1) + (wi == 7);
		p->dil_h = 1 + (wi % 4 == 3);
		p->dil_w = 1 + (wi % 5 == 4);
		p->pad_top = rng_below(&r, p->k_h + 1);
		p->pad_left = rng_below(&r, p->k_w);
		cc.pad_bottom = rng_below(&r, p->k_h + 1);
		cc.pad_right = rng_below(&r, p->k_w);
		p->in_w = (widths[wi] - 1) * p->stride_w + (p->k_w - 1) * p->dil_w + 1 -
			  p->pad_left - cc.pad_right + wi % p->stride_w;
		p->in_h = 2 + rng_below(&r, 9);
		p->out_h = out_extent(p->in_h, p->k_h, p->stride_h, p->dil_h,
				      p->pad_top, cc.pad_bottom);
		p->out_w = out_extent(p->in_w, p->k_w, p->stride_w, p->dil_w,
				      p->pad_left, cc.pad_right);
		assert_int_equal(p->out_w, widths[wi]);
		if (!p->out_h)
			continue;
		p->act = test_acts[wi % N_TEST_ACTS];
		cc.with_bias = wi % 3 != 0;
		random_epilogue(&r, &cc);
		for (conv_mode = 0; conv_mode <= 2; conv_mode++)
			check_conv(&r, &cc, conv_mode == 1 ? NULL : pool);
		/* The same window depthwise: dw_taps2's blocks of four vectors
		 * and its tail, on rows paired two by two and an odd last row. */
		p->in_c = p->out_c = p->groups = 1 + rng_below(&r, 9);
		for (conv_mode = 0; conv_mode <= 2; conv_mode++)
			check_conv(&r, &cc, conv_mode == 1 ? NULL : pool);
	}
	conv_mode = 0;
	npu_threadpool_destroy(pool);
}

/*
 * The params' winograd field decides: a 3x3 stride-1 conv on a plane below
 * the size where Winograd wins takes it only under ALL, one above it under
 * AUTO and ALL, never under OFF; a 1x1 or strided one never; and the
 * packed weights grow by Winograd's only where it is allowed.
 */
static void test_conv_winograd_choice_follows_params(void **state)
{
	struct npu_conv2d_params small = {
		.batch = 1, .in_c = 16, .in_h = 6, .in_w = 6, .out_c = 16, .out_h = 6,
		.out_w = 6, .k_h = 3, .k_w = 3, .stride_h = 1, .stride_w = 1, .dil_h = 1,
		.dil_w = 1, .pad_top = 1, .pad_left = 1, .groups = 1,
	};
	struct npu_conv2d_params big = small, strided = small, thin;
	size_t plain;

	(void)state;
	big.in_h = big.in_w = big.out_h = big.out_w = 40;
	strided.stride_h = strided.stride_w = 2;
	strided.out_h = strided.out_w = 3;
	assert_false(npu_conv2d_f32_takes_winograd(&small));
	assert_true(npu_conv2d_f32_takes_winograd(&big));
	/* Few input channels: direct (4 at 40 wide: 10 tiles in 16 slots). */
	thin = big;
	thin.in_c = 1;
	assert_false(npu_conv2d_f32_takes_winograd(&thin));
	thin.in_c = 4;
	assert_false(npu_conv2d_f32_takes_winograd(&thin));
	thin.in_w = thin.out_w = 64;
	assert_true(npu_conv2d_f32_takes_winograd(&thin));
	thin.in_c = 1;
	thin.winograd = NPU_CONV_WINOGRAD_ALL;
	assert_true(npu_conv2d_f32_takes_winograd(&thin));
	/* 12 wide: 3 tiles in a row of 8 slots, direct; 16 wide: 4 of 8. */
	thin = big;
	thin.in_w = thin.out_w = 12;
	assert_false(npu_conv2d_f32_takes_winograd(&thin));
	thin.in_w = thin.out_w = 16;
	assert_true(npu_conv2d_f32_takes_winograd(&thin));
	small.winograd = big.winograd = strided.winograd = NPU_CONV_WINOGRAD_ALL;
	assert_true(npu_conv2d_f32_takes_winograd(&small));
	assert_true(npu_conv2d_f32_takes_winograd(&big));
	assert_false(npu_conv2d_f32_takes_winograd(&strided));
	small.winograd = big.winograd = NPU_CONV_WINOGRAD_OFF;
	assert_false(npu_conv2d_f32_takes_winograd(&small));
	assert_false(npu_conv2d_f32_takes_winograd(&big));
	plain = npu_conv2d_f32_packed_floats(&big);
	big.winograd = NPU_CONV_WINOGRAD_AUTO;
	assert_true(npu_conv2d_f32_packed_floats(&big) > plain);
}

/*
 * 3x3, stride 1, dilation 1, one group: Winograd F(4,3) where it wins
 * (outputs at least 10 high and wide, at most 65536 channel pairs: most
 * shapes here), and every shape under winograd ALL (NPU_CPU_WINOGRAD=all, the meson
 * cpu_kernels_*_winograd runs). Odd sizes leave partial tiles and partial
 * 8-tile vectors, pads 0..2 on each side are asymmetric, batch 2 and
 * several chunks per image cross tile rows; the last, wide shape takes
 * bands of several tile rows whose GEMM tiles cross tile rows. 1, 2 and
 * 3 threads (they band differently).
 */
static void test_conv2d_3x3_stride1_shapes(void **state)
{
	static const size_t shapes[][4] = {	/* in_c, out_c, in_h, in_w */
		{ 16, 16, 8, 8 }, { 17, 23, 13, 29 }, { 33, 16, 41, 9 },
		{ 96, 24, 21, 37 }, { 16, 50, 9, 70 }, { 40, 35, 30, 30 },
		{ 3, 5, 7, 11 }, { 16, 1, 5, 3 }, { 1, 16, 12, 12 },
		{ 130, 20, 10, 10 }, { 300, 17, 9, 8 }, { 8, 8, 60, 130 },
	};
	struct npu_threadpool *pool = npu_threadpool_create(3);
	struct npu_threadpool *pool2 = npu_threadpool_create(2);
	struct rng r = { 0x5eed0010u };
	struct conv_case cc;
	size_t si;

	(void)state;
	assert_non_null(pool);
	assert_non_null(pool2);
	for (si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
		struct npu_conv2d_params *p = &cc.p;

		memset(&cc, 0, sizeof(cc));
		p->batch = 1 + si % 2;
		p->groups = 1;
		p->in_c = shapes[si][0];
		p->out_c = shapes[si][1];
		p->in_h = shapes[si][2];
		p->in_w = shapes[si][3];
		p->k_h = p->k_w = 3;
		p->stride_h = p->stride_w = 1;
		p->dil_h = p->dil_w = 1;
		p->pad_top = rng_below(&r, 3);
		p->pad_left = rng_below(&r, 3);
		cc.pad_bottom = rng_below(&r, 3);
		cc.pad_right = rng_below(&r, 3);
		p->out_h = out_extent(p->in_h, 3, 1, 1, p->pad_top, cc.pad_bottom);
		p->out_w = out_extent(p->in_w, 3, 1, 1, p->pad_left, cc.pad_right);
		if (!p->out_h || !p->out_w)
			continue;
		p->act = test_acts[si % N_TEST_ACTS];
		cc.with_bias = si % 3 != 0;
		random_epilogue(&r, &cc);
		for (conv_mode = 0; conv_mode <= 3; conv_mode++)
			check_conv(&r, &cc, conv_mode == 1 ? NULL : pool);
		/* 2 threads: the task split differs from 3's. */
		conv_mode = 0;
		check_conv(&r, &cc, pool2);
	}
	conv_mode = 0;
	npu_threadpool_destroy(pool2);
	npu_threadpool_destroy(pool);
}

/* ConvTranspose, stride == kernel: each input pixel's own output tile. */
static void test_convtranspose_tiled_matches_reference(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed000eu };
	int t;

	(void)state;
	assert_non_null(pool);
	/* k_w 2 (the register-blocked rows) in a third of the cases; rows
	 * up to 80 wide cover its two-vector, one-vector and scalar parts. */
	for (t = 0; t < 90; t++) {
		struct npu_convt2d_params p = {
			.batch = 1 + rng_below(&r, 2), .groups = 1 + (t % 3 == 2),
			.in_h = 1 + rng_below(&r, 9), .in_w = 1 + rng_below(&r, 80),
			.k_h = 1 + rng_below(&r, 3), .k_w = 1 + rng_below(&r, 3),
		};
		size_t mg = 1 + rng_below(&r, 6), cg = 1 + rng_below(&r, 9);
		size_t oh_n, ow_n, xs, ws, ys, b, oc, oh, ow;
		bool with_bias = t % 4 != 0;
		float *x, *w, *bias, *y;

		p.in_c = cg * p.groups;
		p.out_c = mg * p.groups;
		p.act = test_acts[rng_below(&r, N_TEST_ACTS)];
		p.act.post = rng_below(&r, 3) == 0;
		p.act.post_scale = p.act.post ? 2.0f * rng_float(&r) : 0.0f;
		p.act.post_shift = p.act.post ? rng_float(&r) : 0.0f;
		oh_n = p.in_h * p.k_h;
		ow_n = p.in_w * p.k_w;
		xs = p.batch * p.in_c * p.in_h * p.in_w;
		ws = p.in_c * mg * p.k_h * p.k_w;
		ys = p.batch * p.out_c * oh_n * ow_n;
		x = alloc_floats(xs);
		w = alloc_floats(ws);
		bias = alloc_floats(p.out_c);
		y = alloc_floats(ys + 1);
		fill_random(&r, x, xs);
		fill_random(&r, w, ws);
		fill_random(&r, bias, p.out_c);
		fill_nan(y, ys);
		y[ys] = 99.0f;
		assert_true(npu_convtranspose2d_f32_tiled(&p, x, w, with_bias ? bias : NULL, y,
							  t % 2 ? pool : NULL));
		assert_true(y[ys] == 99.0f);
		for (b = 0; b < p.batch; b++)
		for (oc = 0; oc < p.out_c; oc++)
		for (oh = 0; oh < oh_n; oh++)
		for (ow = 0; ow < ow_n; ow++) {
			size_t g = oc / mg, mi = oc % mg, ih = oh / p.k_h, iw = ow / p.k_w;
			size_t ki = oh % p.k_h, kj = ow % p.k_w, ci;
			double ref = with_bias ? bias[oc] : 0.0, mag = fabs(ref), got, tol;

			for (ci = 0; ci < cg; ci++) {
				size_t c = g * cg + ci;
				double v = (double)x[((b * p.in_c + c) * p.in_h + ih) * p.in_w + iw] *
					   w[((c * mg + mi) * p.k_h + ki) * p.k_w + kj];

				ref += v;
				mag += fabs(v);
			}
			ref = act_ref(&p.act, ref);
			tol = 4.0 * FLT_EPSILON * (double)(cg + 2) * mag +
			      2e-6 * fabs(ref) + 1e-30;
			if (p.act.post) {
				ref = p.act.post_scale * ref + p.act.post_shift;
				tol = tol * fabs(p.act.post_scale) +
				      4.0 * FLT_EPSILON * (fabs(ref) + fabs(p.act.post_shift));
			}
			got = y[((b * p.out_c + oc) * oh_n + oh) * ow_n + ow];
			if (!(fabs(got - ref) <= tol))
				fail_msg("convT case %d y[%zu][%zu][%zu][%zu] = %.9g want %.9g",
					 t, b, oc, oh, ow, got, ref);
		}
		free(x);
		free(w);
		free(bias);
		free(y);
	}
	npu_threadpool_destroy(pool);
}

/* ---- elementwise: binary ops, a * x + b, sums, parallel_for ---- */

static void test_vec_binary_exact_every_op_and_stride(void **state)
{
	static const enum npu_vec_binop ops[] = {
		NPU_VEC_ADD, NPU_VEC_SUB, NPU_VEC_MUL, NPU_VEC_DIV,
	};
	struct rng r = { 0x5eed000cu };
	float a[301], b[301], y[302], want;
	size_t oi, n, i, sa, sb;

	(void)state;
	for (oi = 0; oi < 4; oi++)
		for (n = 0; n <= 300; n += 1 + n / 7)
			for (sa = 0; sa <= 1; sa++)
				for (sb = 0; sb <= 1; sb++) {
					fill_random(&r, a, 301);
					fill_random(&r, b, 301);
					b[3] = 0.0f;	/* x / 0 and 0 / 0 */
					a[5] = NAN;
					y[n] = 777.0f;
					npu_vec_binary_f32(ops[oi], a, sa, b, sb, y, n);
					assert_true(y[n] == 777.0f);
					for (i = 0; i < n; i++) {
						float x = a[i * sa], z = b[i * sb];

						want = oi == 0 ? x + z : oi == 1 ? x - z :
						       oi == 2 ? x * z : x / z;
						if (!(y[i] == want || (isnan(y[i]) && isnan(want))))
							fail_msg("op %zu n %zu sa %zu sb %zu: y[%zu] = %.9g want %.9g",
								 oi, n, sa, sb, i, y[i], want);
					}
					/* In place: y aliases a. */
					if (sa && n) {
						memcpy(y, a, n * sizeof(float));
						npu_vec_binary_f32(ops[oi], y, 1, b, sb, y, n);
						for (i = 0; i < n; i++) {
							float z = b[i * sb];

							want = oi == 0 ? a[i] + z : oi == 1 ? a[i] - z :
							       oi == 2 ? a[i] * z : a[i] / z;
							assert_true(y[i] == want || (isnan(y[i]) && isnan(want)));
						}
					}
				}
}

/* Max reduction: exact, NaN elements skipped (fmaxf), -inf when empty. */
static void test_vec_max_skips_nan_every_length(void **state)
{
	struct rng r = { 0x5eed0010u };
	float x[200] = { 0 };
	size_t n, i;

	(void)state;
	assert_true(isinf(npu_vec_max_f32(x, 0)) && npu_vec_max_f32(x, 0) < 0);
	for (n = 1; n <= 200; n++) {
		float want = -INFINITY;

		for (i = 0; i < n; i++) {
			x[i] = rng_below(&r, 7) ? rng_float(&r) * 100.0f : NAN;
			want = fmaxf(want, x[i]);
		}
		/* The maximum anywhere: first, last, or in the tail. */
		if (n % 3 == 0)
			x[n - 1] = want = 1000.0f + (float)n;
		else if (n % 5 == 0)
			x[0] = want = 2000.0f;
		assert_true(npu_vec_max_f32(x, n) == want);
	}
	for (i = 0; i < 200; i++)
		x[i] = NAN;
	assert_true(npu_vec_max_f32(x, 200) == -INFINITY);
}

static void test_vec_axpb_and_sum(void **state)
{
	struct rng r = { 0x5eed000du };
	float x[1000] = { 0 }, y[1001];
	size_t n, i;

	(void)state;
	for (n = 0; n <= 1000; n += 1 + n / 5) {
		double ref = 0, mag = 0;
		float sum;

		fill_random(&r, x, n);
		y[n] = 55.0f;
		npu_vec_axpb_f32(x, y, n, 1.7f, -0.3f);
		assert_true(y[n] == 55.0f);
		/* Fused or not (portable): within one rounding of the product. */
		for (i = 0; i < n; i++)
			assert_true(fabs(y[i] - (1.7 * x[i] - 0.3)) <=
				    FLT_EPSILON * (fabs(1.7 * x[i]) + 0.3));
		for (i = 0; i < n; i++) {
			ref += x[i];
			mag += fabs(x[i]);
		}
		sum = npu_vec_sum_f32(x, n);
		if (!(fabs(sum - ref) <= FLT_EPSILON * (double)(n + 2) * mag + 1e-30))
			fail_msg("sum of %zu: %.9g want %.9g", n, sum, ref);
	}
}

struct range_ctx {
	unsigned *hits;
	size_t n;
	size_t plane;	/* nonzero: every call must stay inside one plane */
	int bad;
};

static void visit_range(void *ctx, size_t begin, size_t end)
{
	struct range_ctx *v = ctx;
	size_t i;

	if (begin >= end || end > v->n ||
	    (v->plane && begin / v->plane != (end - 1) / v->plane))
		v->bad = 1;
	for (i = begin; i < end && i < v->n; i++)
		__atomic_fetch_add(&v->hits[i], 1, __ATOMIC_RELAXED);
}

static void test_threadpool_parallel_for_covers_range_once(void **state)
{
	static const int sizes[] = { 1, 2, 3 };
	static const size_t ns[] = { 0, 1, 5, 63, 64, 1000, 65537 };
	static const size_t grains[] = { 0, 1, 7, 64, 100000 };
	size_t si, ni, gi, i;

	(void)state;
	for (si = 0; si < 3; si++) {
		struct npu_threadpool *pool = npu_threadpool_create(sizes[si]);

		assert_non_null(pool);
		for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
			for (gi = 0; gi < sizeof(grains) / sizeof(grains[0]); gi++) {
				struct range_ctx v = { .n = ns[ni] };

				v.hits = calloc(ns[ni] + 1, sizeof(*v.hits));
				assert_non_null(v.hits);
				npu_threadpool_parallel_for(si ? pool : NULL, ns[ni],
							    grains[gi], visit_range, &v);
				assert_int_equal(v.bad, 0);
				for (i = 0; i < ns[ni]; i++)
					assert_int_equal(v.hits[i], 1);
				free(v.hits);
			}
		npu_threadpool_destroy(pool);
	}
}

/*
 * Split by planes: every item once, each call inside one plane, with
 * planes too short to split (plain pieces) and long ones.
 */
static void test_threadpool_parallel_for_planes_covers_each_once(void **state)
{
	static const size_t planes[] = { 0, 1, 2, 3, 48, 480 };
	static const size_t lens[] = { 1, 5, 64, 127, 128, 480, 6400 };
	static const size_t grains[] = { 0, 1, 256, 100000 };
	size_t si, pi, li, gi, i;

	(void)state;
	for (si = 0; si < 3; si++) {
		struct npu_threadpool *pool = npu_threadpool_create((int)si + 1);

		assert_non_null(pool);
		for (pi = 0; pi < sizeof(planes) / sizeof(planes[0]); pi++)
			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
				for (gi = 0; gi < sizeof(grains) / sizeof(grains[0]); gi++) {
					size_t n = planes[pi] * lens[li];
					struct range_ctx v = { .n = n };

					/* Plain pieces may span planes; split ones not. */
					if (si && lens[li] >= 64 * (si + 1) && planes[pi] > 1 &&
					    n >= 2 * (grains[gi] ? grains[gi] : 1))
						v.plane = lens[li];
					v.hits = calloc(n + 1, sizeof(*v.hits));
					assert_non_null(v.hits);
					npu_threadpool_parallel_for_planes(pool, planes[pi], lens[li],
									   grains[gi], visit_range, &v);
					assert_int_equal(v.bad, 0);
					for (i = 0; i < n; i++)
						assert_int_equal(v.hits[i], 1);
					free(v.hits);
				}
		npu_threadpool_destroy(pool);
	}
}

/*
 * Many short runs back to back, of varying counts: a worker late for one
 * run must never take a task of the next (each index once per run).
 */
static void test_threadpool_back_to_back_short_runs(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(3);
	struct visit_ctx v = { .threads = 3 };
	unsigned want[8] = { 0 };
	int run;
	size_t i;

	(void)state;
	assert_non_null(pool);
	v.hits = calloc(8, sizeof(*v.hits));
	assert_non_null(v.hits);
	for (run = 0; run < 20000; run++) {
		size_t count = 2 + (size_t)run % 6;

		if (run & 1)
			npu_threadpool_run_tid(pool, visit_tid, &v, count);
		else
			npu_threadpool_run(pool, visit, &v, count);
		for (i = 0; i < count; i++)
			want[i]++;
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(v.hits[i], want[i]);
	assert_int_equal(v.bad_tid, 0);
	free(v.hits);
	npu_threadpool_destroy(pool);
}

/* ---- pooling ---- */

/* check_pool: every this many inputs a NaN (0: none); max skips them. */
static size_t pool_nan_every;

static void check_pool(struct rng *r, const struct npu_pool2d_params *p,
		       bool max, struct npu_threadpool *pool)
{
	size_t xs = p->batch * p->channels * p->in_h * p->in_w;
	size_t ys = p->batch * p->channels * p->out_h * p->out_w;
	float *x = alloc_floats(xs), *y = alloc_floats(ys + 1);
	size_t pl, oh, ow, kh, kw;

	fill_random(r, x, xs);
	for (pl = 0; pool_nan_every && pl < xs; pl += pool_nan_every)
		x[pl] = NAN;
	fill_nan(y, ys);
	y[ys] = 99.0f;
	if (max)
		npu_maxpool2d_f32(p, x, y, pool);
	else
		npu_avgpool2d_f32(p, x, y, pool);
	assert_true(y[ys] == 99.0f);
	for (pl = 0; pl < p->batch * p->channels; pl++)
	for (oh = 0; oh < p->out_h; oh++)
	for (ow = 0; ow < p->out_w; ow++) {
		double best = -FLT_MAX, sum = 0, mag = 0;
		size_t cnt = 0;
		double got = y[(pl * p->out_h + oh) * p->out_w + ow], ref, tol;

		for (kh = 0; kh < p->k_h; kh++)
		for (kw = 0; kw < p->k_w; kw++) {
			ptrdiff_t ih = (ptrdiff_t)(oh * p->stride_h + kh * p->dil_h) -
				       (ptrdiff_t)p->pad_top;
			ptrdiff_t iw = (ptrdiff_t)(ow * p->stride_w + kw * p->dil_w) -
				       (ptrdiff_t)p->pad_left;
			bool in = ih >= 0 && ih < (ptrdiff_t)p->in_h && iw >= 0 &&
				  iw < (ptrdiff_t)p->in_w;
			bool in_padded = ih < (ptrdiff_t)(p->in_h + p->pad_bottom) &&
					 iw < (ptrdiff_t)(p->in_w + p->pad_right);

			if (in) {
				double v = x[(pl * p->in_h + (size_t)ih) * p->in_w +
					     (size_t)iw];

				best = v > best ? v : best;
				sum += v;
				mag += fabs(v);
			}
			if (p->count_include_pad ? in_padded : in)
				cnt++;
		}
		if (max) {
			ref = best;
			tol = 0;
		} else {
			ref = cnt ? sum / (double)cnt : 0;
			tol = cnt ? 4.0 * FLT_EPSILON * (double)(cnt + 2) * mag /
				    (double)cnt : 0;
		}
		if (!(fabs(got - ref) <= tol))
			fail_msg("%s pool c%zu %zux%zu -> %zux%zu k%zux%zu s%zu,%zu "
				 "d%zu,%zu pads %zu,%zu,%zu,%zu incl %d: y[%zu][%zu][%zu] "
				 "= %.9g want %.9g", max ? "max" : "avg",
				 p->channels, p->in_h, p->in_w, p->out_h, p->out_w,
				 p->k_h, p->k_w, p->stride_h, p->stride_w, p->dil_h,
				 p->dil_w, p->pad_top, p->pad_left, p->pad_bottom,
				 p->pad_right, p->count_include_pad, pl, oh, ow,
				 got, ref);
	}
	free(x);
	free(y);
}

static void random_pool(struct rng *r, struct npu_pool2d_params *p)
{
	do {
		memset(p, 0, sizeof(*p));
		p->batch = 1 + rng_below(r, 2);
		p->channels = 1 + rng_below(r, 6);
		p->in_h = 1 + rng_below(r, 20);
		p->in_w = 1 + rng_below(r, 70);
		p->k_h = 1 + rng_below(r, 4);
		p->k_w = 1 + rng_below(r, 4);
		p->stride_h = 1 + rng_below(r, 3);
		p->stride_w = 1 + rng_below(r, 3);
		p->dil_h = 1 + (rng_below(r, 4) == 0);
		p->dil_w = 1 + (rng_below(r, 4) == 0);
		/* ONNX keeps pads smaller than the kernel. */
		p->pad_top = rng_below(r, p->k_h);
		p->pad_left = rng_below(r, p->k_w);
		p->pad_bottom = rng_below(r, p->k_h);
		p->pad_right = rng_below(r, p->k_w);
		p->count_include_pad = rng_below(r, 2);
		p->out_h = out_extent(p->in_h, p->k_h, p->stride_h, p->dil_h,
				      p->pad_top, p->pad_bottom);
		p->out_w = out_extent(p->in_w, p->k_w, p->stride_w, p->dil_w,
				      p->pad_left, p->pad_right);
		/* Sometimes one more column, as ceil_mode produces. */
		if (p->out_w && rng_below(r, 4) == 0)
			p->out_w++;
	} while (!p->out_h || !p->out_w);
}

static void test_pool2d_matches_reference_random_shapes(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed000au };
	struct npu_pool2d_params p;
	int t;

	(void)state;
	assert_non_null(pool);
	for (t = 0; t < 300; t++) {
		random_pool(&r, &p);
		check_pool(&r, &p, t & 1, t % 3 ? pool : NULL);
	}
	npu_threadpool_destroy(pool);
}

static void test_pool2d_common_layers(void **state)
{
	struct rng r = { 0x5eed000bu };
	struct npu_pool2d_params p = {
		.batch = 1, .channels = 3, .in_h = 40, .in_w = 81,
		.out_h = 20, .out_w = 41, .k_h = 3, .k_w = 3, .stride_h = 2,
		.stride_w = 2, .dil_h = 1, .dil_w = 1, .pad_top = 1,
		.pad_left = 1, .pad_bottom = 1, .pad_right = 1,
	};

	(void)state;
	check_pool(&r, &p, true, NULL);
	check_pool(&r, &p, false, NULL);
	p.count_include_pad = true;
	check_pool(&r, &p, false, NULL);
	/* Global average pooling. */
	p = (struct npu_pool2d_params){
		.batch = 2, .channels = 7, .in_h = 13, .in_w = 17, .out_h = 1,
		.out_w = 1, .k_h = 13, .k_w = 17, .stride_h = 1, .stride_w = 1,
		.dil_h = 1, .dil_w = 1,
	};
	check_pool(&r, &p, false, NULL);
	check_pool(&r, &p, true, NULL);
}

/*
 * 2x2 stride-2 max pooling (its own row kernel): odd and even input
 * sizes, rows around the vector widths, batch 1 / 3 / 8, with and without
 * the pool, a ceil_mode extra column (the generic path), NaN inputs.
 */
static void test_pool2d_max2x2(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed000cu };
	static const size_t ws[] = { 2, 3, 5, 16, 17, 31, 32, 33, 34, 35, 40, 63,
				     64, 65, 66, 67, 97 };
	static const size_t bs[] = { 1, 3, 8 };
	size_t wi, b, h;

	(void)state;
	assert_non_null(pool);
	for (wi = 0; wi < sizeof(ws) / sizeof(ws[0]); wi++)
	for (b = 0; b < 3; b++)
	for (h = 2; h <= 7; h += 5) {
		struct npu_pool2d_params p = {
			.batch = bs[b], .channels = 2, .in_h = h, .in_w = ws[wi],
			.out_h = h / 2, .out_w = ws[wi] / 2, .k_h = 2, .k_w = 2,
			.stride_h = 2, .stride_w = 2, .dil_h = 1, .dil_w = 1,
		};

		pool_nan_every = wi % 3 ? 0 : 7;
		check_pool(&r, &p, true, b == 1 ? NULL : pool);
		if (ws[wi] % 2) {	/* ceil_mode: a last window half outside */
			p.out_w++;
			p.pad_right = 1;
			check_pool(&r, &p, true, pool);
		}
	}
	pool_nan_every = 0;
	npu_threadpool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isa_follows_env_cap),
		cmocka_unit_test(test_threadpool_runs_every_index_once),
		cmocka_unit_test(test_threadpool_null_and_bad_sizes),
		cmocka_unit_test(test_threadpool_create_destroy_repeatedly),
		cmocka_unit_test(test_threadpool_stats),
		cmocka_unit_test(test_sgemm_matches_reference_random_shapes),
		cmocka_unit_test(test_sgemm_deep_and_wide_products),
		cmocka_unit_test(test_sgemm_degenerate_sizes),
		cmocka_unit_test(test_sgemm_result_independent_of_thread_count),
		cmocka_unit_test(test_sgemm_prepacked_b_matches_per_call),
		cmocka_unit_test(test_vec_act_every_kind_and_length),
		cmocka_unit_test(test_vec_sigmoid_saturates_cleanly),
		cmocka_unit_test(test_vec_exp_accuracy_over_full_range),
		cmocka_unit_test(test_vec_exp_special_values),
		cmocka_unit_test(test_vec_tanh_accuracy_and_special_values),
		cmocka_unit_test(test_vec_erf_accuracy_and_special_values),
		cmocka_unit_test(test_conv2d_matches_reference_random_shapes),
		cmocka_unit_test(test_conv2d_every_activation_each_path),
		cmocka_unit_test(test_conv2d_larger_layers),
		cmocka_unit_test(test_conv2d_packed_weights_flush_subnormals),
		cmocka_unit_test(test_conv2d_result_independent_of_thread_count),
		cmocka_unit_test(test_conv2d_prepacked_weights_match_reference),
		cmocka_unit_test(test_conv2d_wide_rows_match_reference),
		cmocka_unit_test(test_conv_winograd_choice_follows_params),
		cmocka_unit_test(test_conv2d_3x3_stride1_shapes),
		cmocka_unit_test(test_convtranspose_tiled_matches_reference),
		cmocka_unit_test(test_vec_binary_exact_every_op_and_stride),
		cmocka_unit_test(test_vec_axpb_and_sum),
		cmocka_unit_test(test_vec_max_skips_nan_every_length),
		cmocka_unit_test(test_threadpool_parallel_for_covers_range_once),
		cmocka_unit_test(test_threadpool_parallel_for_planes_covers_each_once),
		cmocka_unit_test(test_threadpool_back_to_back_short_runs),
		cmocka_unit_test(test_pool2d_matches_reference_random_shapes),
		cmocka_unit_test(test_pool2d_common_layers),
		cmocka_unit_test(test_pool2d_max2x2),
	};
	const char *wino = getenv("NPU_CPU_WINOGRAD");
	const char *stats = getenv("NPU_POOL_STATS");

	if (!kernel_test_cap_isa())
		return 1;
	conv_winograd = wino && !strcmp(wino, "all") ? NPU_CONV_WINOGRAD_ALL :
			wino && !strcmp(wino, "0") ? NPU_CONV_WINOGRAD_OFF : NPU_CONV_WINOGRAD_AUTO;
	pool_stats = stats && *stats && strcmp(stats, "0");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
