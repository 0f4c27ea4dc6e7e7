// SPDX-License-Identifier: MIT
/*
 * test_ops_rowops.c - SOFTMAX, LAYERNORM and REDUCE (ISA 1.3):
 *   - every fast path equals the reference bit for bit over random odd
 *     row lengths, strides, in-place rows, extreme scales, shifts and
 *     clamps (ops_golden compares the whole SRAM, so stray writes fail);
 *   - the integer results agree with float math (softmax, layer norm,
 *     mean, max) to within int8 rounding on sensible parameters;
 *   - the validator rejects each bad field with a reason naming it.
 */
#include "ops_test_util.h"

#include "npu_isa.h"

static void sm_ref(const void *i, uint8_t *s) { npu_ref_softmax(i, s); }
static void sm_fast(const void *i, uint8_t *s) { npu_op_softmax(i, s); }
static void ln_ref(const void *i, uint8_t *s) { npu_ref_layernorm(i, s); }
static void ln_fast(const void *i, uint8_t *s) { npu_op_layernorm(i, s); }
static void red_ref(const void *i, uint8_t *s) { npu_ref_reduce(i, s); }
static void red_fast(const void *i, uint8_t *s) { npu_op_reduce(i, s); }

/* Softmax exp table for input scale 'sc': table[d] = exp(-d sc) in Q'q'. */
static void sm_table(uint8_t *sram, uint32_t at, double sc, int q)
{
	for (int d = 0; d < 256; d++) {
		double v = exp(-d * sc) * ldexp(1.0, q);
		uint32_t t = v > 4294967295.0 ? UINT32_MAX : (uint32_t)llround(v);

		memcpy(sram + at + 4 * d, &t, 4);
	}
}

static struct npu_insn_softmax sm_insn(uint32_t rows, uint32_t c, uint32_t gap)
{
	struct npu_insn_softmax in = { 0 };

	in.hdr.opcode = NPU_OP_SOFTMAX;
	in.hdr.size = sizeof(in);
	in.rows = rows;
	in.c = c;
	in.in_stride = c + gap;
	in.out_stride = c + gap;
	/* output scale 1/256, zp -128: mult / 2^shift = 256 / 2^62 */
	in.mult = 1 << 30;
	in.shift = 62 + 30 - 8;
	in.zp_out = -128;
	in.act_min = -128;
	in.act_max = 127;
	return in;
}

static void test_softmax_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(16);
	for (int i = 0; i < 200; i++) {
		uint32_t rows = (uint32_t)ops_range(1, 9);
		uint32_t c = (uint32_t)(i % 5 == 0 ? ops_range(500, 7000) : ops_range(1, 130));
		uint32_t gap = (uint32_t)ops_range(0, 3);
		struct npu_insn_softmax in = sm_insn(rows, c, gap);
		uint64_t span = (uint64_t)(rows - 1) * in.in_stride + c;
		/* extreme input scales: everything underflows to table[0] only,
		 * or every entry is near 1, or the table holds huge values */
		static const double scales[] = { 1e-6, 0.01, 0.1, 1.0, 50.0 };
		double sc = scales[ops_range(0, 4)];
		int q = (int)ops_range(0, 31);

		s->next = 0;
		in.table = ops_place(s, 1024);
		in.input = ops_place(s, span);
		in.output = ops_range(0, 3) ? ops_place(s, span) : in.input;
		if (in.input == UINT32_MAX || in.output == UINT32_MAX)
			continue;
		sm_table(s->init, in.table, sc, q);
		if (i % 7 == 3) {
			in.mult = (int32_t)ops_range(0, INT32_MAX);
			in.shift = (uint8_t)ops_range(1, 126);
			in.zp_out = (int16_t)ops_range(-128, 127);
			in.act_min = (int8_t)ops_range(-128, 0);
			in.act_max = (int8_t)ops_range(0, 127);
		}
		ops_fill(s->init + in.input, span);
		assert_int_equal(npu_op_softmax_check(&in, NULL), NPU_JOB_OK);
		ops_golden(s, &in, sm_ref, sm_fast, "softmax");
	}
	/* a table of zeros: sum 0, every output is zp_out */
	{
		struct npu_insn_softmax in = sm_insn(2, 33, 1);

		s->next = 0;
		in.table = ops_place(s, 1024);
		in.input = ops_place(s, 2 * 34);
		in.output = ops_place(s, 2 * 34);
		memset(s->init + in.table, 0, 1024);
		ops_golden(s, &in, sm_ref, sm_fast, "softmax zero table");
		for (uint32_t k = 0; k < 33; k++)
			assert_int_equal((int8_t)s->ref[in.output + k], -128);
	}
	ops_sram_free(s);
}

/* The int8 softmax against float softmax: within 1.5 output steps. */
static void test_softmax_accuracy(void **state)
{
	struct ops_sram *s = ops_sram_new();
	const double sc = 0.07;

	(void)state;
	ops_seed(17);
	for (int t = 0; t < 20; t++) {
		uint32_t c = (uint32_t)ops_range(2, 300);
		struct npu_insn_softmax in = sm_insn(1, c, 0);
		double mx = -1e9, sum = 0, worst = 0;

		s->next = 0;
		in.table = ops_place(s, 1024);
		in.input = ops_place(s, c);
		in.output = ops_place(s, c);
		sm_table(s->init, in.table, sc, 20);
		ops_fill(s->init + in.input, c);
		memcpy(s->ref, s->init, NPU_SRAM_SIZE);
		npu_ref_softmax(&in, s->ref);
		for (uint32_t k = 0; k < c; k++)
			mx = fmax(mx, (int8_t)s->init[in.input + k] * sc);
		for (uint32_t k = 0; k < c; k++)
			sum += exp((int8_t)s->init[in.input + k] * sc - mx);
		for (uint32_t k = 0; k < c; k++) {
			double p = exp((int8_t)s->init[in.input + k] * sc - mx) / sum;
			double q = fmin(p * 256.0 - 128.0, 127.0);
			double err = fabs(q - (int8_t)s->ref[in.output + k]);

			worst = fmax(worst, err);
		}
		if (worst > 1.5)
			fail_msg("softmax c=%u: off by %.2f output steps", c, worst);
	}
	ops_sram_free(s);
}

static struct npu_insn_layernorm ln_insn(uint32_t rows, uint32_t c, uint32_t gap)
{
	struct npu_insn_layernorm in = { 0 };

	in.hdr.opcode = NPU_OP_LAYERNORM;
	in.hdr.size = sizeof(in);
	in.rows = rows;
	in.c = c;
	in.in_stride = c + gap;
	in.out_stride = c + gap;
	in.act_min = -128;
	in.act_max = 127;
	return in;
}

/* gamma, beta in float; output scale so; zp 0; Q15 in, 2^shift out. */
static void ln_params(uint8_t *sram, uint32_t at, uint32_t c, const double *gamma,
		      const double *beta, double so, int shift)
{
	for (uint32_t k = 0; k < c; k++) {
		int32_t m = (int32_t)llround(gamma[k] / so * ldexp(1.0, shift - 15));
		int32_t b = (int32_t)llround(beta[k] / so * ldexp(1.0, shift));

		ops_put_i32(sram, at + 4 * k, m);
		ops_put_i32(sram, at + 4 * (c + k), b);
	}
}

static void test_layernorm_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(18);
	for (int i = 0; i < 200; i++) {
		uint32_t rows = (uint32_t)ops_range(1, 9);
		uint32_t c = (uint32_t)(i % 5 == 0 ? ops_range(500, 9000) : ops_range(1, 130));
		uint32_t gap = (uint32_t)ops_range(0, 3);
		struct npu_insn_layernorm in = ln_insn(rows, c, gap);
		uint64_t span = (uint64_t)(rows - 1) * in.in_stride + c;

		s->next = 0;
		in.params = ops_place(s, 8ull * c);
		in.input = ops_place(s, span);
		in.output = ops_range(0, 3) ? ops_place(s, span) : in.input;
		if (in.input == UINT32_MAX || in.output == UINT32_MAX)
			continue;
		/* random (so extreme) multipliers and biases, every shift */
		ops_fill(s->init + in.params, 8ull * c);
		in.shift = (uint8_t)ops_range(1, 62);
		in.eps = ops_range(0, 1) ? (uint32_t)ops_range(0, 100) : (uint32_t)ops_rand();
		in.zp_out = (int16_t)ops_range(-128, 127);
		in.act_min = (int8_t)ops_range(-128, 0);
		in.act_max = (int8_t)ops_range(0, 127);
		ops_fill(s->init + in.input, span);
		/* constant rows: variance 0, eps alone (or 0 -> 1) */
		if (i % 9 == 4)
			memset(s->init + in.input, (uint8_t)ops_range(0, 255), span);
		assert_int_equal(npu_op_layernorm_check(&in, NULL), NPU_JOB_OK);
		ops_golden(s, &in, ln_ref, ln_fast, "layernorm");
	}
	ops_sram_free(s);
}

/* Layer norm against float math: within 1.5 output steps. */
static void test_layernorm_accuracy(void **state)
{
	struct ops_sram *s = ops_sram_new();
	double gamma[256], beta[256];
	const double si = 0.05, so = 0.03, eps = 1e-5;

	(void)state;
	ops_seed(19);
	for (int t = 0; t < 20; t++) {
		uint32_t c = (uint32_t)ops_range(2, 256);
		struct npu_insn_layernorm in = ln_insn(1, c, 0);
		double mean = 0, var = 0, worst = 0;

		for (uint32_t k = 0; k < c; k++) {
			gamma[k] = (double)ops_range(-200, 200) / 100.0;
			beta[k] = (double)ops_range(-100, 100) / 100.0;
		}
		s->next = 0;
		in.params = ops_place(s, 8ull * c);
		in.input = ops_place(s, c);
		in.output = ops_place(s, c);
		in.shift = 24;
		in.eps = (uint32_t)llround(eps * c * c / (si * si));
		ln_params(s->init, in.params, c, gamma, beta, so, in.shift);
		ops_fill(s->init + in.input, c);
		memcpy(s->ref, s->init, NPU_SRAM_SIZE);
		npu_ref_layernorm(&in, s->ref);
		for (uint32_t k = 0; k < c; k++)
			mean += (int8_t)s->init[in.input + k] * si / c;
		for (uint32_t k = 0; k < c; k++) {
			double d = (int8_t)s->init[in.input + k] * si - mean;

			var += d * d / c;
		}
		for (uint32_t k = 0; k < c; k++) {
			double x = (int8_t)s->init[in.input + k] * si;
			double y = (x - mean) / sqrt(var + eps) * gamma[k] + beta[k];
			double q = fmax(fmin(y / so, 127.0), -128.0);

			worst = fmax(worst, fabs(q - (int8_t)s->ref[in.output + k]));
		}
		if (worst > 1.5)
			fail_msg("layernorm c=%u: off by %.2f output steps", c, worst);
	}
	ops_sram_free(s);
}

static void test_reduce(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(20);
	for (int i = 0; i < 300; i++) {
		struct npu_insn_reduce in = { 0 };
		uint32_t rows = (uint32_t)ops_range(1, 40);
		uint32_t c = (uint32_t)(i % 5 == 0 ? ops_range(500, 9000) : ops_range(1, 130));
		uint64_t span;
		int sensible = i % 2;

		in.hdr.opcode = NPU_OP_REDUCE;
		in.hdr.size = sizeof(in);
		in.mode = (uint8_t)ops_range(0, 1);
		in.rows = rows;
		in.c = c;
		in.in_stride = c + (uint32_t)ops_range(0, 3);
		in.out_stride = (uint32_t)ops_range(1, 3);
		in.zp_in = (int16_t)ops_range(-128, 127);
		in.zp_out = (int16_t)ops_range(-128, 127);
		in.act_min = -128;
		in.act_max = 127;
		if (sensible) {
			/* a mean at the same scale: mult / 2^shift = 1 / c */
			in.shift = 30;
			in.mult = in.mode == NPU_REDUCE_MAX ? 1 << 30 :
				(int32_t)llround(ldexp(1.0, 30) / c);
			in.zp_out = in.zp_in;
		} else {
			in.mult = (int32_t)ops_rand();
			in.shift = (uint8_t)ops_range(1, 62);
		}
		span = (uint64_t)(rows - 1) * in.in_stride + c;
		s->next = 0;
		in.input = ops_place(s, span);
		in.output = ops_place(s, (uint64_t)(rows - 1) * in.out_stride + 1);
		if (in.input == UINT32_MAX || in.output == UINT32_MAX)
			continue;
		ops_fill(s->init + in.input, span);
		assert_int_equal(npu_op_reduce_check(&in, NULL), NPU_JOB_OK);
		ops_golden(s, &in, red_ref, red_fast, "reduce");
		if (!sensible)
			continue;
		for (uint32_t r = 0; r < rows; r++) {
			const int8_t *x = (const int8_t *)s->init + in.input + r * in.in_stride;
			double want = in.mode == NPU_REDUCE_MAX ? -128 : 0;

			for (uint32_t k = 0; k < c; k++)
				want = in.mode == NPU_REDUCE_MAX ? fmax(want, x[k]) :
					want + (double)x[k] / c;
			if (fabs(want - (int8_t)s->ref[in.output + r * in.out_stride]) > 0.51)
				fail_msg("reduce mode %u c=%u row %u: %d, want %.2f",
					 in.mode, c, r,
					 (int8_t)s->ref[in.output + r * in.out_stride], want);
		}
	}
	ops_sram_free(s);
}

/* One bad field: the status, and a reason that names the field. */
static void expect_bad(const void *insn, uint32_t status, const char *field)
{
	struct npu_isa_check c = { 0 };
	uint32_t st = npu_insn_check(insn, &c, NULL);

	if (st != status || !c.field || strcmp(c.field, field) ||
	    !strstr(c.reason, field))
		fail_msg("want status %u on '%s', got %u on '%s': %s", status, field,
			 st, c.field ? c.field : "(none)", c.reason);
}

static void test_validation(void **state)
{
	struct npu_insn_softmax sm = sm_insn(4, 10, 2), b;
	struct npu_insn_layernorm ln = ln_insn(4, 10, 0), lb;
	struct npu_insn_reduce rd = { 0 }, rb;
	struct npu_op_footprint fp;

	(void)state;
	sm.input = 0;
	sm.output = 100;
	sm.table = 200;
	assert_int_equal(npu_insn_check(&sm, NULL, &fp), NPU_JOB_OK);
	assert_int_equal(fp.cycles, 4 * (3 * 1 + NPU_CYCLES_VEC_ROW));
	assert_int_equal(fp.num_reads, 2);
	assert_int_equal(fp.writes[0].begin, 100);
	assert_int_equal(fp.writes[0].end, 100 + 3 * 12 + 10);
	b = sm; b.c = 0; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "c");
	b = sm; b.c = NPU_ROW_MAX_C + 1; b.rows = 1; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "c");
	b = sm; b.rows = 0; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "rows");
	b = sm; b.in_stride = 9; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "in_stride");
	b = sm; b.shift = 0; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "shift");
	b = sm; b.shift = 127; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "shift");
	b = sm; b.mult = -1; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "mult");
	b = sm; b.zp_out = 128; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "zp_out");
	b = sm; b.act_min = 5; b.act_max = 4; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "act_min");
	b = sm; b.reserved1 = 1; expect_bad(&b, NPU_JOB_ERR_BAD_ENCODING, "reserved1");
	b = sm; b.table = NPU_SRAM_SIZE - 1000; expect_bad(&b, NPU_JOB_ERR_SRAM_BOUNDS, "table");
	b = sm; b.input = NPU_SRAM_SIZE - 10; expect_bad(&b, NPU_JOB_ERR_SRAM_BOUNDS, "input");
	/* overlapping, but not exactly in place */
	b = sm; b.output = 5; expect_bad(&b, NPU_JOB_ERR_BAD_PARAM, "output");
	b = sm; b.output = 0; assert_int_equal(npu_insn_check(&b, NULL, NULL), NPU_JOB_OK);
	b = sm; b.hdr.flags = NPU_INSN_I16;
	expect_bad(&b, NPU_JOB_ERR_BAD_ENCODING, "header.flags");

	ln.input = 0;
	ln.output = 40;
	ln.params = 80;
	ln.shift = 20;
	assert_int_equal(npu_insn_check(&ln, NULL, &fp), NPU_JOB_OK);
	assert_int_equal(fp.cycles, 4 * (2 + NPU_CYCLES_VEC_ROW));
	assert_int_equal(fp.reads[1].end, 80 + 80);
	lb = ln; lb.shift = 63; expect_bad(&lb, NPU_JOB_ERR_BAD_PARAM, "shift");
	lb = ln; lb.params = NPU_SRAM_SIZE - 79;
	expect_bad(&lb, NPU_JOB_ERR_SRAM_BOUNDS, "params");
	lb = ln; lb.out_stride = 3; expect_bad(&lb, NPU_JOB_ERR_BAD_PARAM, "out_stride");
	lb = ln; lb.reserved0 = 1; expect_bad(&lb, NPU_JOB_ERR_BAD_ENCODING, "reserved0");

	rd.hdr.opcode = NPU_OP_REDUCE;
	rd.hdr.size = sizeof(rd);
	rd.rows = 3;
	rd.c = 7;
	rd.in_stride = 7;
	rd.out_stride = 1;
	rd.input = 0;
	rd.output = 64;
	rd.mult = 1;
	rd.shift = 1;
	assert_int_equal(npu_insn_check(&rd, NULL, &fp), NPU_JOB_OK);
	assert_int_equal(fp.cycles, 3 * 2);
	assert_int_equal(fp.writes[0].end, 64 + 3);
	rb = rd; rb.mode = 2; expect_bad(&rb, NPU_JOB_ERR_BAD_PARAM, "mode");
	rb = rd; rb.zp_in = -129; expect_bad(&rb, NPU_JOB_ERR_BAD_PARAM, "zp_in");
	rb = rd; rb.reserved = 1; expect_bad(&rb, NPU_JOB_ERR_BAD_ENCODING, "reserved");
	rb = rd; rb.output = 2; expect_bad(&rb, NPU_JOB_ERR_BAD_PARAM, "output");
	rb = rd; rb.hdr.size = 40; expect_bad(&rb, NPU_JOB_ERR_BAD_ENCODING, "header.size");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_softmax_matches_reference),
		cmocka_unit_test(test_softmax_accuracy),
		cmocka_unit_test(test_layernorm_matches_reference),
		cmocka_unit_test(test_layernorm_accuracy),
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
