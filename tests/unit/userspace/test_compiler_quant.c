// SPDX-License-Identifier: MIT
/* The compiler's quantization arithmetic: exactness and calibration. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler/compiler.h"
#include "compiler/quant.h"
#include "compiler/boundary.h"
#include "compiler/segment_rt.h"

static double lcg_uniform(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*s >> 11) / (double)(1ull << 53);
}

static void test_requant_multiplier_is_accurate(void **state)
{
	uint64_t seed = 1;
	int i;

	(void)state;
	for (i = 0; i < 10000; i++) {
		double real = exp2(lcg_uniform(&seed) * 60.0 - 30.0);
		struct npu_requant rq;
		double approx;

		assert_true(npu_requant_from_real(real, &rq));
		assert_in_range(rq.shift, 1, 62);
		assert_true(rq.mult >= (1 << 30) || rq.shift == 62);
		approx = ldexp((double)rq.mult, -rq.shift);
		assert_true(fabs(approx - real) <= real * ldexp(1.0, -30));
	}
}

static void test_requant_multiplier_rejects_out_of_range(void **state)
{
	struct npu_requant rq;

	(void)state;
	assert_false(npu_requant_from_real(0.0, &rq));
	assert_false(npu_requant_from_real(-1.0, &rq));
	assert_false(npu_requant_from_real(NAN, &rq));
	assert_false(npu_requant_from_real(INFINITY, &rq));
	assert_false(npu_requant_from_real(ldexp(1.0, 31), &rq));
	/* Tiny multipliers stay representable with shift capped at 62. */
	assert_true(npu_requant_from_real(ldexp(1.0, -40), &rq));
	assert_int_equal(rq.shift, 62);
}

/* Requantized results match round(acc * real) + zp within one step. */
static void test_requant_apply_matches_real_arithmetic(void **state)
{
	uint64_t seed = 7;
	int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		double real = exp2(lcg_uniform(&seed) * 16.0 - 14.0);
		int64_t acc = (int64_t)((lcg_uniform(&seed) - 0.5) * 2e6);
		int32_t zp = (int32_t)(lcg_uniform(&seed) * 255.0) - 128;
		struct npu_requant rq;
		double exact;
		int8_t got;

		assert_true(npu_requant_from_real(real, &rq));
		got = npu_requant_apply(acc, rq, zp, -128, 127);
		exact = floor((double)acc * real + 0.5) + zp;
		exact = fmin(fmax(exact, -128.0), 127.0);
		assert_true(fabs((double)got - exact) <= 1.0);
	}
}

static void test_requant_apply_rounds_half_up_and_clamps(void **state)
{
	struct npu_requant half = { .mult = 1 << 30, .shift = 31 };

	(void)state;
	assert_int_equal(npu_requant_apply(3, half, 0, -128, 127), 2);	/* 1.5 */
	assert_int_equal(npu_requant_apply(-3, half, 0, -128, 127), -1); /* -1.5 */
	assert_int_equal(npu_requant_apply(1000, half, 0, -128, 127), 127);
	assert_int_equal(npu_requant_apply(-1000, half, 0, -128, 127), -128);
	assert_int_equal(npu_requant_apply(10, half, 0, 0, 3), 3);
}

static void test_qparams_cover_range_and_zero_exactly(void **state)
{
	struct npu_qparams q = npu_qparams_from_range(-1.0f, 3.0f);
	struct npu_qparams relu = npu_qparams_from_range(0.5f, 6.0f);

	(void)state;
	assert_int_equal(npu_quantize_value(0.0f, q) - q.zero_point, 0);
	assert_true(fabsf(npu_dequantize_value(npu_quantize_value(-1.0f, q), q) + 1.0f) <= q.scale);
	assert_true(fabsf(npu_dequantize_value(npu_quantize_value(3.0f, q), q) - 3.0f) <= q.scale);
	/* A positive-only range still includes 0, at the bottom. */
	assert_int_equal(relu.zero_point, -128);
	assert_int_equal(npu_quantize_value(100.0f, q), 127);
	assert_int_equal(npu_quantize_value(-100.0f, q), -128);
	assert_int_equal(npu_quantize_value(NAN, q), -128);
}

static void test_weights_per_channel_are_symmetric(void **state)
{
	/* 0.2537 keeps the row off every int8 grid (see the test below). */
	const float w[6] = { 0.5f, -1.0f, 0.2537f, 0.0f, 0.0f, 0.0f };
	int8_t q[6];
	float scales[2];

	(void)state;
	npu_quantize_weights_per_channel(w, 2, 3, q, scales);
	assert_int_equal(q[1], -127);
	assert_int_equal(q[0], 64);	/* 63.5 rounds to even */
	assert_true(fabsf(scales[0] - 1.0f / 127.0f) < 1e-9f);
	assert_true(scales[1] == 1.0f);
	assert_int_equal(q[3], 0);
}

/*
 * A QDQ model's weights reach the compiler dequantized, s * q with max |q|
 * below 127: they keep an exact grid instead of being rounded again onto
 * max / 127 (which would move almost every value).
 */
static void test_weights_on_an_int8_grid_stay_exact(void **state)
{
	enum { PER = 64 };
	float w[2 * PER], scales[2];
	int8_t q[2 * PER];
	size_t i;
	int moved_by_old_rule = 0;

	(void)state;
	for (i = 0; i < 2 * PER; i++) {
		int v = (int)((i * 37) % 201) - 100;	/* -100..100 */

		w[i] = (i < PER ? 0.0123f : 0.5f) * (float)v;
	}
	npu_quantize_weights_per_channel(w, 2, PER, q, scales);
	for (i = 0; i < 2 * PER; i++) {
		float back = scales[i / PER] * (float)q[i];
		float old_scale = (i < PER ? 0.0123f : 0.5f) * 100.0f / 127.0f;

		assert_true(fabsf(back - w[i]) <= 1e-5f * fabsf(w[i]) + 1e-7f);
		moved_by_old_rule += fabsf(old_scale * nearbyintf(w[i] / old_scale) - w[i]) > 1e-4f * fabsf(w[i]);
	}
	/* max / 127 would have moved most of them: the test can fail. */
	assert_true(moved_by_old_rule > PER);
}

/* Every int8 value survives dequantize -> quantize (LUT domains rely on it). */
static void test_int8_domain_round_trips(void **state)
{
	struct npu_qparams p = npu_qparams_from_range(-2.0f, 2.0f);
	int i;

	(void)state;
	for (i = 0; i < 256; i++)
		assert_int_equal(npu_quantize_value(npu_dequantize_value((int8_t)(i - 128), p), p),
				 i - 128);
}

static double lcg_normal(uint64_t *s)
{
	double u1 = lcg_uniform(s) + 1e-12, u2 = lcg_uniform(s);

	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#define N_CALIB 200000
#define N_BIG 4000000
static float calib_data[N_BIG];

/* Both passes, streamed in chunks as calibration does. */
static void observe_chunks(struct npu_calib_stats *st, const float *x, size_t n)
{
	size_t i, chunk = 7919;

	npu_calib_init(st);
	for (i = 0; i < n; i += chunk)
		npu_calib_observe_minmax(st, x + i, n - i < chunk ? n - i : chunk);
	npu_calib_hist_begin(st);
	for (i = 0; i < n; i += chunk)
		npu_calib_observe_hist(st, x + i, n - i < chunk ? n - i : chunk);
}

/* Expected squared error of quantizing x to [lo, hi] with 256 levels. */
static double quant_mse(const float *x, size_t n, float lo, float hi)
{
	struct npu_qparams q = npu_qparams_from_range(lo, hi);
	double e = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d = x[i] - npu_dequantize_value(npu_quantize_value(x[i], q), q);

		e += d * d;
	}
	return e / (double)n;
}

/* Uniform on [-1, 3]: nothing to clip, every method keeps ~ the range. */
static void test_calibration_uniform_keeps_the_range(void **state)
{
	struct npu_calib_stats st;
	enum npu_calib_method m;
	float mn, mx;
	uint64_t seed = 5;
	size_t i;

	(void)state;
	for (i = 0; i < N_CALIB; i++)
		calib_data[i] = (float)(lcg_uniform(&seed) * 4.0 - 1.0);
	observe_chunks(&st, calib_data, N_CALIB);
	assert_int_equal(st.seen, N_CALIB);
	assert_true(st.lo == st.min && st.hi == st.max);	/* asymmetric: [min, max] */
	npu_calib_range(&st, NPU_CALIB_MINMAX, 0, &mn, &mx);
	assert_true(mn == st.min && mx == st.max);		/* exact */
	for (m = NPU_CALIB_PERCENTILE; m <= NPU_CALIB_MSE; m++) {
		npu_calib_range(&st, m, 99.99, &mn, &mx);
		assert_true(mn >= st.min && mx <= st.max);	/* never wider */
		/* Clipping a uniform tail costs more than the finer step gains. */
		assert_true(mn < -0.95f && mx > 2.85f);
	}
}

/*
 * N(0, 1), 4M values, plus one outlier at -40 and one at +40: percentile,
 * MSE and entropy clip them. (MSE clips an outlier only when its squared
 * error is worth less than the finer step for everything else: below about
 * one value in 12 * 255^2 ~ 780k, which is where real activation tensors
 * with millions of values per sample are.)
 */
static void test_calibration_gaussian_outliers_are_clipped(void **state)
{
	struct npu_calib_stats st;
	float mn, mx, lo_mse, hi_mse;
	uint64_t seed = 7;
	size_t i;

	(void)state;
	for (i = 0; i < N_BIG; i++)
		calib_data[i] = (float)lcg_normal(&seed);
	calib_data[1234] = -40.0f;
	calib_data[N_BIG / 2] = 40.0f;
	observe_chunks(&st, calib_data, N_BIG);
	npu_calib_range(&st, NPU_CALIB_MINMAX, 0, &mn, &mx);
	assert_true(mn == -40.0f && mx == 40.0f);
	npu_calib_range(&st, NPU_CALIB_PERCENTILE, 99.9, &mn, &mx);	/* both tails */
	assert_true(mx > 2.8f && mx < 3.6f);
	assert_true(mn < -2.8f && mn > -3.6f);
	npu_calib_range(&st, NPU_CALIB_MSE, 0, &lo_mse, &hi_mse);
	assert_true(hi_mse > 2.0f && hi_mse < 10.0f);
	assert_true(lo_mse < -2.0f && lo_mse > -10.0f);
	/* MSE's range is what it claims: better than min / max on the data. */
	assert_true(quant_mse(calib_data, N_BIG, lo_mse, hi_mse) <
		    0.5 * quant_mse(calib_data, N_BIG, -40.0f, 40.0f));
	npu_calib_range(&st, NPU_CALIB_ENTROPY, 0, &mn, &mx);
	assert_true(mx > 2.0f && mx < 10.0f);
	assert_true(mn < -2.0f && mn > -10.0f);
}

/* ReLU-like: half the values exactly 0, the rest |N(0, 2)|, one at 30. */
static void test_calibration_relu_like_range_starts_at_zero(void **state)
{
	struct npu_calib_stats st;
	enum npu_calib_method m;
	float mn, mx;
	uint64_t seed = 11;
	size_t i;

	(void)state;
	for (i = 0; i < N_CALIB; i++) {
		double v = 2.0 * lcg_normal(&seed);

		calib_data[i] = v > 0 ? (float)v : 0.0f;
	}
	calib_data[12345] = 30.0f;
	observe_chunks(&st, calib_data, N_CALIB);
	assert_true(st.lo == 0.0 && st.hi == 30.0);	/* no bins spent below 0 */
	assert_true(st.zeros > N_CALIB / 3);
	for (m = NPU_CALIB_MINMAX; m <= NPU_CALIB_MSE; m++) {
		npu_calib_range(&st, m, 99.99, &mn, &mx);
		assert_true(mn == 0.0f);
		assert_true(mx > 4.0f);	/* entropy does not collapse (was 0.116 cosine) */
	}
	npu_calib_range(&st, NPU_CALIB_MSE, 0, &mn, &mx);
	assert_true(mx < 30.0f);	/* the lone outlier is clipped */
	assert_true(quant_mse(calib_data, N_CALIB, mn, mx) <
		    quant_mse(calib_data, N_CALIB, 0.0f, 30.0f));
}

/* All positive data [2, 5]: the quantizer's range includes 0, and so does
 * the histogram's, so MSE / entropy search over [0, 5]. */
static void test_calibration_positive_data_includes_zero(void **state)
{
	struct npu_calib_stats st;
	float mn, mx;
	uint64_t seed = 13;
	size_t i;

	(void)state;
	for (i = 0; i < N_CALIB; i++)
		calib_data[i] = (float)(2.0 + 3.0 * lcg_uniform(&seed));
	observe_chunks(&st, calib_data, N_CALIB);
	assert_true(st.lo == 0.0 && st.hi == st.max);
	npu_calib_range(&st, NPU_CALIB_MSE, 0, &mn, &mx);
	assert_true(mx > 4.9f);
	npu_calib_range(&st, NPU_CALIB_MINMAX, 0, &mn, &mx);
	assert_true(mn == st.min);
}

/* Streaming in chunks gives the same histogram as one buffer. */
static void test_calibration_streamed_equals_whole(void **state)
{
	static struct npu_calib_stats a, b;
	uint64_t seed = 17;
	size_t i;

	(void)state;
	for (i = 0; i < N_CALIB; i++)
		calib_data[i] = (float)(lcg_normal(&seed) * 3.0 + 1.0);
	observe_chunks(&a, calib_data, N_CALIB);
	npu_calib_init(&b);
	npu_calib_observe(&b, calib_data, N_CALIB);
	assert_memory_equal(a.bins, b.bins, sizeof(a.bins));
	assert_true(a.min == b.min && a.max == b.max && a.count == b.count);
}

static void test_calibration_method_names(void **state)
{
	enum npu_calib_method m;

	(void)state;
	assert_true(npu_calib_method_parse("mse", &m) && m == NPU_CALIB_MSE);
	assert_true(npu_calib_method_parse("entropy", &m) && m == NPU_CALIB_ENTROPY);
	assert_false(npu_calib_method_parse("kl", &m));
	assert_false(npu_calib_method_parse(NULL, &m));
	assert_string_equal(npu_calib_method_name(NPU_CALIB_PERCENTILE), "percentile");
}

static void test_calibration_of_nothing_is_zero_range(void **state)
{
	struct npu_calib_stats st;
	float mn = 1, mx = 1;

	(void)state;
	npu_calib_init(&st);
	npu_calib_range(&st, NPU_CALIB_PERCENTILE, 99.99, &mn, &mx);
	assert_true(mn == 0.0f && mx == 0.0f);
}

/*
 * Bias correction: on an input whose every channel sits at its mean, the
 * int8 weights with the corrected bias give exactly what the fp32 weights
 * with the original bias give (the expected shift is removed), for a
 * grouped conv (4 groups of 2 input / 3 output channels) and a depthwise
 * one; without the correction they differ.
 */
static void check_bias_correction(size_t ic, size_t oc, size_t groups, size_t khw)
{
	size_t per = ic / groups * khw, icg = ic / groups, ocg = oc / groups, o, i, k;
	float *w = malloc(oc * per * sizeof(*w)), *scales = malloc(oc * sizeof(*scales));
	float *bias = malloc(oc * sizeof(*bias));
	double *mean = malloc(ic * sizeof(*mean)), worst_before = 0;
	int8_t *q = malloc(oc * per);
	uint64_t seed = 7;

	assert_non_null(w && scales && bias && mean && q);
	for (i = 0; i < oc * per; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		w[i] = (float)((int64_t)(seed >> 40) % 1000) / 997.0f;
	}
	for (i = 0; i < ic; i++)
		mean[i] = 3.0 + (double)i * 0.75;	/* far from 0: a visible shift */
	for (o = 0; o < oc; o++)
		bias[o] = (float)o * 0.1f - 0.2f;
	npu_quantize_weights_per_channel(w, oc, per, q, scales);
	{
		float *orig = malloc(oc * sizeof(*orig));

		assert_non_null(orig);
		memcpy(orig, bias, oc * sizeof(*orig));
		npu_bias_correct(w, q, scales, oc, ic, groups, khw, mean, bias);
		for (o = 0; o < oc; o++) {
			double fp = orig[o], before = orig[o], after = bias[o];

			for (i = 0; i < icg; i++)
				for (k = 0; k < khw; k++) {
					double x = mean[(o / ocg) * icg + i];

					fp += w[(o * icg + i) * khw + k] * x;
					before += q[(o * icg + i) * khw + k] * scales[o] * x;
					after += q[(o * icg + i) * khw + k] * scales[o] * x;
				}
			assert_true(fabs(after - fp) < 1e-4 * (1.0 + fabs(fp)));
			if (fabs(before - fp) > worst_before)
				worst_before = fabs(before - fp);
		}
		free(orig);
	}
	assert_true(worst_before > 1e-3);	/* there was something to correct */
	free(w);
	free(scales);
	free(bias);
	free(mean);
	free(q);
}

static void test_bias_correction_removes_the_mean_shift(void **state)
{
	(void)state;
	check_bias_correction(8, 12, 4, 9);	/* grouped 3x3 */
	check_bias_correction(16, 16, 16, 9);	/* depthwise 3x3 */
	check_bias_correction(5, 7, 1, 1);	/* pointwise */
}

/*
 * A segment's inputs are quantized as lrintf() would in the default
 * rounding mode: ties to even; and saturated: NaN to the low end, +-inf
 * and values past the long range to their own end (lrintf() plus the zero
 * point overflowed there, so -inf read as +127). Rows, NHWC and im2col
 * (padding = the zero point) all take the same rule, int8 and int16.
 */
static void test_segment_inputs_round_to_even_and_saturate(void **state)
{
	static const float x[8] = { 2.5f, 3.5f, -2.5f, NAN, INFINITY, -INFINITY,
				    1e30f, -1e30f };
	static const int8_t want8[8] = { -3, -1, -7, -128, 127, -128, 127, -128 };
	static const int16_t want16[8] = { 2, 4, -2, -32767, 32767, -32767, 32767,
					   -32767 };
	struct npu_tensor t = { .dtype = NPU_DTYPE_FLOAT, .data = (void *)x,
				.nbytes = sizeof(x) };
	struct npu_act a = { .n = 1, .h = 1, .w = 4, .c = 2,
			     .q = { .scale = 1.0f, .zero_point = -5 } };
	int8_t q8[9 * 4];
	int16_t q16[8];
	int i, p;

	(void)state;
	t.shape.rank = 4;
	t.shape.dims[0] = 1;
	t.shape.dims[1] = 2;
	t.shape.dims[2] = 1;
	t.shape.dims[3] = 4;
	npu_segment_quantize_in(&t, &a, NPU_LAYOUT_ROWS, q8);
	for (i = 0; i < 8; i++)
		assert_int_equal(want8[i], q8[i]);
	/* NHWC: element (p, c) comes from NCHW c * 4 + p. */
	npu_segment_quantize_in(&t, &a, NPU_LAYOUT_NHWC, q8);
	for (p = 0; p < 4; p++)
		for (i = 0; i < 2; i++)
			assert_int_equal(want8[i * 4 + p], q8[p * 2 + i]);
	a.i16 = true;
	a.q.zero_point = 0;
	npu_segment_quantize_in(&t, &a, NPU_LAYOUT_ROWS, (int8_t *)q16);
	for (i = 0; i < 8; i++)
		assert_int_equal(want16[i], q16[i]);

	/* im2col of a 1x1x2x4 value, 3x3 windows at stride 1, pad 1. */
	memset(&a, 0, sizeof(a));
	a = (struct npu_act){ .n = 1, .h = 1, .w = 4, .c = 9,
			      .q = { .scale = 1.0f, .zero_point = -5 },
			      .im2col = { 3, 3, 1, 1, 1, 1 } };
	t.shape.dims[1] = 1;
	t.shape.dims[2] = 2;
	npu_segment_quantize_in(&t, &a, NPU_LAYOUT_IM2COL, q8);
	/* Pixel (0, 0): row -1 and column -1 are padding, (1, 1) is x[0]. */
	for (i = 0; i < 3; i++)
		assert_int_equal(-5, q8[i]);
	assert_int_equal(-5, q8[3]);
	assert_int_equal(want8[0], q8[4]);
	assert_int_equal(want8[1], q8[5]);
	assert_int_equal(want8[4], q8[7]);	/* x[1 * 4 + 0] */
	/* Pixel (0, 3): its right column is padding, its centre x[3] (NaN). */
	assert_int_equal(-128, q8[27 + 4]);
	assert_int_equal(-5, q8[27 + 5]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requant_multiplier_is_accurate),
		cmocka_unit_test(test_requant_multiplier_rejects_out_of_range),
		cmocka_unit_test(test_requant_apply_matches_real_arithmetic),
		cmocka_unit_test(test_requant_apply_rounds_half_up_and_clamps),
		cmocka_unit_test(test_qparams_cover_range_and_zero_exactly),
		cmocka_unit_test(test_weights_per_channel_are_symmetric),
		cmocka_unit_test(test_weights_on_an_int8_grid_stay_exact),
		cmocka_unit_test(test_int8_domain_round_trips),
		cmocka_unit_test(test_calibration_uniform_keeps_the_range),
		cmocka_unit_test(test_calibration_gaussian_outliers_are_clipped),
		cmocka_unit_test(test_calibration_relu_like_range_starts_at_zero),
		cmocka_unit_test(test_calibration_positive_data_includes_zero),
		cmocka_unit_test(test_calibration_streamed_equals_whole),
		cmocka_unit_test(test_calibration_method_names),
		cmocka_unit_test(test_calibration_of_nothing_is_zero_range),
		cmocka_unit_test(test_bias_correction_removes_the_mean_shift),
		cmocka_unit_test(test_segment_inputs_round_to_even_and_saturate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
