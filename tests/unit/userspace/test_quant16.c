// SPDX-License-Identifier: MIT
/*
 * The compiler's arithmetic for the 16x8 mode (quant.h): symmetric int16
 * parameters from a calibration range, int64 bias, the host copy of the
 * device's int16 requantization checked against firmware-sim's reference,
 * and 513-knot LUTs measured against the int8 LUT of the same function.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler/quant.h"
#include "npu_ops.h"

static uint64_t rng = 0x1516;

static uint64_t next(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return rng >> 11;
}

static void test_qparams16_are_symmetric(void **state)
{
	struct npu_qparams q;

	(void)state;
	q = npu_qparams16_from_range(-2.0f, 6.0f);
	assert_int_equal(q.zero_point, 0);
	assert_float_equal(q.scale, 6.0f / 32767.0f, 1e-9);
	/* the wider side sets the scale, whichever it is */
	q = npu_qparams16_from_range(-10.0f, 1.0f);
	assert_float_equal(q.scale, 10.0f / 32767.0f, 1e-9);
	assert_int_equal(npu_quantize_value16(-10.0f, q), -32767);
	assert_int_equal(npu_quantize_value16(10.0f, q), 32767);
	assert_int_equal(npu_quantize_value16(-1e9f, q), -32767);	/* saturates */
	assert_int_equal(npu_quantize_value16(NAN, q), -32767);
	assert_int_equal(npu_quantize_value16(0.0f, q), 0);
	/* every value in range comes back within half a step */
	for (int i = 0; i < 1000; i++) {
		float x = (float)((double)next() / (double)(1ull << 53) * 11.0 - 10.0);

		assert_true(fabsf(npu_dequantize_value16(npu_quantize_value16(x, q), q) - x) <=
			    q.scale * 0.5f * 1.0001f);
	}
	/* degenerate and broken ranges still give a usable positive scale */
	q = npu_qparams16_from_range(0.0f, 0.0f);
	assert_true(q.scale > 0.0f);
	q = npu_qparams16_from_range(NAN, 1.0f);
	assert_true(q.scale > 0.0f);
	/* an int64 bias keeps what int32 must saturate */
	/* (scales that are powers of two keep the products exact) */
	assert_int_equal(npu_quantize_bias(3.0f, 0x1p-20f, 0x1p-10f), INT32_MAX);
	assert_true(npu_quantize_bias64(3.0f, 0x1p-20f, 0x1p-10f) == 3ll << 30);
	assert_true(npu_quantize_bias64(-3e30f, 0x1p-20f, 0x1p-10f) == INT64_MIN);
	assert_true(npu_quantize_bias64(3e30f, 0x1p-20f, 0x1p-10f) == INT64_MAX);
}

/*
 * npu_requant16_apply() against the device: an int16 MATMUL with k = 1,
 * a = 1, b = 1 and bias = acc - 1 makes the accumulator any int64 wanted.
 */
static void test_requant16_matches_firmware_sim(void **state)
{
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	struct npu_insn_matmul mm = {
		.hdr = { NPU_OP_MATMUL, NPU_INSN_I16, sizeof(mm), 0 },
		.a = 0, .b = 16, .bias = 32, .quant = 48, .output = 64,
		.flags = NPU_QUANT_PER_TENSOR, .m = 1, .k = 1, .n = 1,
		.a_stride = 2, .out_stride = 2,
	};

	(void)state;
	assert_non_null(sram);
	sram[0] = 1;
	sram[16] = 1;
	for (int i = 0; i < 20000; i++) {
		int64_t acc = (int64_t)(next() << 11) >> (next() % 63);
		struct npu_requant rq;
		int64_t bias = (int64_t)((uint64_t)acc - 1);
		int16_t dev;

		/* multipliers of every magnitude, shifts across 1..62 */
		assert_true(npu_requant_from_real(exp2((double)(next() % 6000) / 100.0 - 45.0),
						  &rq));
		if (i % 7 == 0)
			rq.mult = -rq.mult;
		mm.act_min = (int8_t)(i % 5 ? -128 : 0);
		mm.act_max = (int8_t)(i % 11 ? 127 : 40);
		memcpy(sram + 32, &bias, 8);
		memcpy(sram + 48, &rq.mult, 4);
		sram[52] = rq.shift;
		assert_int_equal(npu_op_matmul_check(&mm, NULL), NPU_JOB_OK);
		npu_ref_matmul(&mm, sram);
		memcpy(&dev, sram + 64, 2);
		assert_int_equal(npu_requant16_apply(acc, rq, mm.act_min, mm.act_max), dev);
	}
	free(sram);
}

static float sigmoid(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

static float hardswish(float x)
{
	return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
}

/*
 * The same function as an int8 LUT (256 entries) and an int16 LUT (513
 * knots, interpolated by the device), both from the calibration range
 * [lo, hi]; the largest error over a dense sweep of that range.
 */
static void lut_errors(float (*f)(float), float lo, float hi, float ylo, float yhi,
		       double *err8, double *err16)
{
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	struct npu_qparams in8 = npu_qparams_from_range(lo, hi);
	struct npu_qparams out8 = npu_qparams_from_range(ylo, yhi);
	struct npu_qparams in16 = npu_qparams16_from_range(lo, hi);
	struct npu_qparams out16 = npu_qparams16_from_range(ylo, yhi);
	struct npu_insn_lut lut = {
		.hdr = { NPU_OP_LUT, NPU_INSN_I16, sizeof(lut), 0 },
		.input = 0, .table = 140000, .output = 150000, .count = 60001,
	};
	int8_t t8[256];
	int16_t t16[513];
	float y[513];

	assert_non_null(sram);
	for (int i = 0; i < 256; i++)
		t8[i] = npu_quantize_value(f(npu_dequantize_value((int8_t)(i - 128), in8)), out8);
	for (int j = 0; j < 513; j++)
		y[j] = f(npu_lut16_knot(j, in16));
	npu_lut16_table(y, out16, t16);
	memcpy(sram + lut.table, t16, sizeof(t16));
	/* the inputs: 60001 points across [lo, hi], int16-quantized */
	for (uint32_t i = 0; i < lut.count; i++) {
		float x = lo + (hi - lo) * (float)i / (float)(lut.count - 1);
		int16_t q = npu_quantize_value16(x, in16);

		memcpy(sram + 2 * i, &q, 2);
	}
	assert_int_equal(npu_op_lut_check(&lut, NULL), NPU_JOB_OK);
	npu_ref_lut(&lut, sram);
	*err8 = *err16 = 0;
	for (uint32_t i = 0; i < lut.count; i++) {
		float x = lo + (hi - lo) * (float)i / (float)(lut.count - 1);
		int16_t o;
		int8_t q8 = npu_quantize_value(x, in8);

		memcpy(&o, sram + lut.output + 2 * i, 2);
		*err16 = fmax(*err16, fabs(npu_dequantize_value16(o, out16) - f(x)));
		*err8 = fmax(*err8, fabs(npu_dequantize_value(t8[(uint8_t)(q8 + 128)], out8) -
					 f(x)));
	}
	free(sram);
}

static void test_lut16_is_far_closer_than_lut8(void **state)
{
	double e8, e16;

	(void)state;
	lut_errors(sigmoid, -8.0f, 8.0f, 0.0f, 1.0f, &e8, &e16);
	printf("# sigmoid on [-8, 8]: max |error| int8 LUT %.3g, int16 LUT %.3g\n", e8, e16);
	assert_true(e8 > 1e-3);	/* an int8 output step is 1/255 */
	assert_true(e16 < e8 / 20);
	lut_errors(hardswish, -6.0f, 6.0f, -0.375f, 6.0f, &e8, &e16);
	printf("# hardswish on [-6, 6]: max |error| int8 LUT %.3g, int16 LUT %.3g\n", e8, e16);
	assert_true(e16 < e8 / 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qparams16_are_symmetric),
		cmocka_unit_test(test_requant16_matches_firmware_sim),
		cmocka_unit_test(test_lut16_is_far_closer_than_lut8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
