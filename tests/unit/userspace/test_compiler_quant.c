// SPDX-License-Identifier: MIT
/* The compiler's quantization arithmetic: exactness and calibration. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "compiler/quant.h"

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
	const float w[6] = { 0.5f, -1.0f, 0.25f, 0.0f, 0.0f, 0.0f };
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

static void test_calibration_percentile_clips_outliers(void **state)
{
	static float data[100000];
	struct npu_calib_stats st;
	float mn, mx;
	uint64_t seed = 3;
	size_t i;

	(void)state;
	for (i = 0; i < 100000; i++)
		data[i] = (float)(lcg_uniform(&seed) * 2.0 - 1.0);
	data[17] = 50.0f;	/* one outlier */
	npu_calib_init(&st);
	npu_calib_observe(&st, data, 50000);
	npu_calib_observe(&st, data + 50000, 50000);

	npu_calib_range(&st, NPU_CALIB_MINMAX, 0, &mn, &mx);
	assert_true(mx == 50.0f);
	npu_calib_range(&st, NPU_CALIB_PERCENTILE, 99.9, &mn, &mx);
	assert_true(mx < 1.5f && mx > 0.9f);
	assert_true(mn > -1.5f && mn < -0.9f);
	npu_calib_range(&st, NPU_CALIB_ENTROPY, 0, &mn, &mx);
	assert_true(mx < 50.0f && mx > 0.5f);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requant_multiplier_is_accurate),
		cmocka_unit_test(test_requant_multiplier_rejects_out_of_range),
		cmocka_unit_test(test_requant_apply_matches_real_arithmetic),
		cmocka_unit_test(test_requant_apply_rounds_half_up_and_clamps),
		cmocka_unit_test(test_qparams_cover_range_and_zero_exactly),
		cmocka_unit_test(test_weights_per_channel_are_symmetric),
		cmocka_unit_test(test_int8_domain_round_trips),
		cmocka_unit_test(test_calibration_percentile_clips_outliers),
		cmocka_unit_test(test_calibration_of_nothing_is_zero_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
