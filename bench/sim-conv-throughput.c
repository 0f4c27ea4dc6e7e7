// SPDX-License-Identifier: MIT
/*
 * sim-conv-throughput - how fast firmware-sim executes int8 convolutions
 * on this host, per kernel implementation, next to the reference and the
 * host's own int8 peak measured by a tight VNNI (or AVX2) loop on the same
 * core; then the same shapes in the 16x8 mode (NPU_INSN_I16), so the two
 * read side by side. Prints what it measured; asserts nothing. Times are
 * the thread's CPU time.
 *
 *   sim-conv-throughput [seconds-per-measurement [implementation|all [threads]]]
 *
 * (default 0.3 s, every implementation, one thread, its CPU time). Given
 * a thread count, the ops split each convolution over a pool of that many
 * host threads (npu_ops.h) and the times are wall-clock time (for 1 too,
 * so counts compare), which a loaded host inflates. The int8 shapes are the three
 * classic ones and four from PP-OCRv4 det (few channels, as the compiler
 * tiles them); the last lines give the fastest implementation's rate per
 * shape as a share of the host peak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/*
 * Thread CPU time, not wall time: the host is usually shared (CI, other
 * builds), and descheduled time is not the simulator's throughput.
 */
static clockid_t bench_clock = CLOCK_THREAD_CPUTIME_ID;

static double now(void)
{
	struct timespec ts;

	clock_gettime(bench_clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct bench_case {
	const char *name;
	uint16_t hw, in_c, out_c, groups;
	uint8_t k, pad;
};

/* i16: int16 activations, int64 bias, zero points 0 (NPU_INSN_I16). */
static struct npu_insn_conv2d make_conv(const struct bench_case *c, uint8_t *sram,
					int i16)
{
	struct npu_insn_conv2d in = { 0 };
	uint32_t es = i16 ? 2 : 1, bias_bytes = i16 ? 8 : 4;
	uint32_t in_bytes = (uint32_t)c->hw * c->hw * c->in_c * es;
	uint32_t cin_g = c->in_c / c->groups;

	in.hdr.opcode = NPU_OP_CONV2D;
	in.hdr.flags = i16 ? NPU_INSN_I16 : 0;
	in.hdr.size = sizeof(in);
	in.in_h = in.in_w = c->hw;
	in.in_c = c->in_c;
	in.out_c = c->out_c;
	in.k_h = in.k_w = c->k;
	in.stride_h = in.stride_w = in.dil_h = in.dil_w = 1;
	in.pad_top = in.pad_left = in.pad_bottom = in.pad_right = c->pad;
	in.out_h = in.out_w = (uint16_t)(c->hw + 2 * c->pad - c->k + 1);
	in.groups = c->groups;
	in.in_pixel_stride = c->in_c * es;
	in.in_row_stride = (uint32_t)c->hw * c->in_c * es;
	in.out_pixel_stride = c->out_c * es;
	in.out_row_stride = (uint32_t)in.out_w * c->out_c * es;
	in.zp_in = i16 ? 0 : -3;
	in.zp_out = i16 ? 0 : 2;
	in.act_min = -128;
	in.act_max = 127;
	in.input = 0;
	in.weight = in_bytes;
	in.bias = in.weight + (uint32_t)c->out_c * c->k * c->k * cin_g;
	in.quant = in.bias + bias_bytes * c->out_c;
	in.output = in.quant + 5u * c->out_c;
	for (uint32_t i = 0; i < in.bias; i++)
		sram[i] = (uint8_t)(i * 2654435761u >> 24);
	for (uint32_t i = 0; i < c->out_c; i++) {
		int64_t b = (int64_t)(i * 37) - 1000;
		int32_t b32 = (int32_t)b, mult = 1 << 30;

		if (i16)
			memcpy(sram + in.bias + 8 * i, &b, 8);
		else
			memcpy(sram + in.bias + 4 * i, &b32, 4);
		memcpy(sram + in.quant + 4 * i, &mult, 4);
		sram[in.quant + 4u * c->out_c + i] = 44;
	}
	return in;
}

/* Runs op repeatedly for about 'secs'; returns MACs per second. */
static double measure(void (*op)(const struct npu_insn_conv2d *, uint8_t *),
		      const struct npu_insn_conv2d *in, uint8_t *sram, double secs)
{
	struct npu_op_footprint fp;
	double t0, t;
	long reps = 0;

	if (npu_op_conv2d_check(in, &fp)) {
		fprintf(stderr, "bench case fails its check\n");
		exit(1);
	}
	op(in, sram);	/* warm caches and the page tables */
	t0 = now();
	do {
		op(in, sram);
		reps++;
		t = now() - t0;
	} while (t < secs);
	return (double)fp.macs * reps / t;
}

#if defined(__x86_64__)
/* 12 independent vpdpbusd chains: enough to cover latency x throughput. */
__attribute__((target("avx512f,avx512vnni"), noinline))
static double peak_vnni(double secs)
{
	__m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(2);
	__m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
	__m512i c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
	long iters = 0;
	double t0 = now(), t;

	do {
		for (int i = 0; i < 100000; i++) {
			c0 = _mm512_dpbusd_epi32(c0, a, b); c1 = _mm512_dpbusd_epi32(c1, a, b);
			c2 = _mm512_dpbusd_epi32(c2, a, b); c3 = _mm512_dpbusd_epi32(c3, a, b);
			c4 = _mm512_dpbusd_epi32(c4, a, b); c5 = _mm512_dpbusd_epi32(c5, a, b);
			c6 = _mm512_dpbusd_epi32(c6, a, b); c7 = _mm512_dpbusd_epi32(c7, a, b);
			c8 = _mm512_dpbusd_epi32(c8, a, b); c9 = _mm512_dpbusd_epi32(c9, a, b);
			c10 = _mm512_dpbusd_epi32(c10, a, b); c11 = _mm512_dpbusd_epi32(c11, a, b);
			__asm__ volatile("" : "+v"(a), "+v"(b));
		}
		iters += 100000;
		t = now() - t0;
	} while (t < secs);
	c0 = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)),
			      _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7)));
	c0 = _mm512_add_epi32(c0, _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11)));
	if (_mm512_reduce_add_epi32(c0) == 42)
		puts("");	/* keeps the chains alive */
	return (double)iters * 12 * 64 / t;
}

/* AVX2 int8 peak the way the avx2 kernel computes: vpmaddwd + vpaddd. */
__attribute__((target("avx2"), noinline))
static double peak_avx2(double secs)
{
	__m256i a = _mm256_set1_epi16(3), b = _mm256_set1_epi16(5);
	__m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
	__m256i c6 = c0, c7 = c0;
	long iters = 0;
	double t0 = now(), t;

	do {
		for (int i = 0; i < 100000; i++) {
			c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(a, b));
			c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(a, b));
			c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(a, b));
			c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(a, b));
			c4 = _mm256_add_epi32(c4, _mm256_madd_epi16(a, b));
			c5 = _mm256_add_epi32(c5, _mm256_madd_epi16(a, b));
			c6 = _mm256_add_epi32(c6, _mm256_madd_epi16(a, b));
			c7 = _mm256_add_epi32(c7, _mm256_madd_epi16(a, b));
			__asm__ volatile("" : "+x"(a), "+x"(b));
		}
		iters += 100000;
		t = now() - t0;
	} while (t < secs);
	c0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
			      _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
	if (_mm256_extract_epi32(c0, 0) == 42)
		puts("");
	return (double)iters * 8 * 16 / t;
}
#endif

int main(int argc, char **argv)
{
	static const struct bench_case cases[] = {
		{ "56x56x128 -> 128, 3x3 pad 1", 56, 128, 128, 1, 3, 1 },
		{ "56x56x128 -> 128, 1x1", 56, 128, 128, 1, 1, 0 },
		{ "56x56x128 depthwise 3x3 pad 1", 56, 128, 128, 128, 3, 1 },
		{ "80x80x16 -> 32, 1x1", 80, 16, 32, 1, 1, 0 },
		{ "40x40x96 -> 24, 3x3 pad 1", 40, 96, 24, 1, 3, 1 },
		{ "80x80x16 depthwise 3x3 pad 1", 80, 16, 16, 16, 3, 1 },
		{ "20x20x192 depthwise 5x5 pad 2", 20, 192, 192, 192, 5, 2 },
	};
	/* The 16x8 mode on the first three only. */
	const size_t n_i16 = 3;
	static const struct bench_case ref_case = {
		"14x14x32 -> 32, 3x3 pad 1", 14, 32, 32, 1, 3, 1 };
	static const char *const impls[] = { "portable", "avx2", "avx512vnni" };
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	const char *only = argc > 2 && strcmp(argv[2], "all") ? argv[2] : NULL;
	unsigned int threads = argc > 3 ? (unsigned int)atoi(argv[3]) : 1;
	struct npu_ops_pool *pool = NULL;
	double best = 0, peak = 0, fastest[sizeof(cases) / sizeof(cases[0])] = { 0 };
	const char *peak_name = "none";
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	struct npu_insn_conv2d in;

	if (!sram)
		return 1;
	if (argc > 3) {
		pool = npu_ops_pool_create(threads);
		if (!pool) {
			fprintf(stderr, "cannot start %u threads (1..%u)\n", threads,
				NPU_OPS_MAX_THREADS);
			return 1;
		}
		npu_ops_set_pool(pool);
		bench_clock = CLOCK_MONOTONIC;
		printf("firmware-sim int8 CONV2D throughput, %u thread(s), wall time "
		       "(GMAC/s = 1e9 MAC/s)\n", threads);
	} else {
		printf("firmware-sim int8 CONV2D throughput, one thread (GMAC/s = 1e9 MAC/s)\n");
	}
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]) + n_i16; c++) {
		size_t nc = sizeof(cases) / sizeof(cases[0]);
		int i16 = c >= nc;

		if (c == nc)
			printf("the same shapes with int16 activations (16x8, NPU_INSN_I16)\n");
		in = make_conv(&cases[c % nc], sram, i16);
		printf("%-32s", cases[c % nc].name);
		for (size_t i = 0; i < sizeof(impls) / sizeof(impls[0]); i++) {
			double r;

			if (only && strcmp(only, impls[i]))
				continue;
			if (npu_ops_set_impl(impls[i])) {
				printf("  %s: n/a", impls[i]);
				continue;
			}
			r = measure(npu_op_conv2d, &in, sram, secs);
			if (c == 0 && r > best)
				best = r;
			if (!i16 && r > fastest[c])
				fastest[c] = r;
			printf("  %s %7.2f", impls[i], r / 1e9);
		}
		printf("\n");
	}
	npu_ops_set_pool(NULL);
	npu_ops_pool_destroy(pool);
	bench_clock = CLOCK_THREAD_CPUTIME_ID;
	in = make_conv(&ref_case, sram, 0);
	printf("%-32s  reference %.3f GMAC/s (naive loops; smaller case)\n",
	       ref_case.name, measure(npu_ref_conv2d, &in, sram, secs) / 1e9);

#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512vnni")) {
		peak = peak_vnni(secs);
		peak_name = "vpdpbusd zmm";
	} else if (__builtin_cpu_supports("avx2")) {
		peak = peak_avx2(secs);
		peak_name = "vpmaddwd ymm";
	}
	if (__builtin_cpu_supports("avx2"))
		printf("host AVX2 peak (vpmaddwd ymm loop): %.1f GMAC/s\n",
		       peak_avx2(secs) / 1e9);
#endif
	if (peak > 0) {
		printf("host int8 peak (%s loop): %.1f GMAC/s\n", peak_name, peak / 1e9);
		printf("best sim 3x3 conv / host peak: %.1f%%\n", 100.0 * best / peak);
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
			printf("  %-32s %7.2f GMAC/s  %5.1f%% of peak\n", cases[c].name,
			       fastest[c] / 1e9, 100.0 * fastest[c] / peak);
	}
	printf("default implementation: %s\n", npu_ops_impl_name());
	free(sram);
	return 0;
}
