// SPDX-License-Identifier: MIT
/*
 * test_ops_out_lut.c - the output LUT of CONV2D and MATMUL (ISA 1.4,
 * NPU_CONV_OUT_LUT): with the flag, the op equals the same op without it
 * followed by out = table[o + 128] on every output byte (and nothing else
 * changes in SRAM), every implementation on this host equals the reference
 * bit for bit over odd shapes (depthwise, grouped, 1x1, strided layouts,
 * zero insertion, tables overlapping the output or the input), and the
 * validator refuses a table outside SRAM, the flag with NPU_INSN_I16 and a
 * table word without the flag; the table is a read of the footprint and
 * adds no cycles.
 */
#include "ops_test_util.h"

static void conv_ref(const void *insn, uint8_t *sram)
{
	npu_ref_conv2d(insn, sram);
}

static void conv_fast(const void *insn, uint8_t *sram)
{
	npu_op_conv2d(insn, sram);
}

static void mm_ref(const void *insn, uint8_t *sram)
{
	npu_ref_matmul(insn, sram);
}

static void mm_fast(const void *insn, uint8_t *sram)
{
	npu_op_matmul(insn, sram);
}

/* Where a case puts its table. */
enum table_at {
	TABLE_APART,	/* its own bytes */
	TABLE_IN_OUTPUT,	/* inside the output: read before any write */
	TABLE_IN_INPUT,	/* inside the input (a read/read overlap) */
	TABLE_MODES
};

static int pick(const int *v, int n)
{
	return v[ops_range(0, n - 1)];
}

/*
 * A random CONV2D laid out in s->init with a random table; returns 0 when
 * SRAM could not hold the case (the caller draws again).
 */
static int conv_case(struct ops_sram *s, struct npu_insn_conv2d *in,
		     enum table_at at)
{
	static const int chans[] = { 1, 3, 7, 8, 16, 31, 32, 33, 65 };
	int kind = (int)ops_range(0, 5), cin_g, ins = !ops_range(0, 5);
	uint64_t in_span, out_span, w_len;
	uint32_t nq;

	memset(in, 0, sizeof(*in));
	in->hdr.opcode = NPU_OP_CONV2D;
	in->hdr.size = sizeof(*in);
	in->in_c = (uint16_t)pick(chans, 9);
	in->out_c = (uint16_t)pick(chans, 9);
	in->groups = 1;
	if (kind == 0) {		/* depthwise: the dw kernels */
		in->out_c = in->in_c;
		in->groups = in->in_c;
	} else if (kind == 1) {		/* grouped */
		in->groups = (uint16_t)ops_range(2, 3);
		in->in_c = (uint16_t)(in->groups * ops_range(1, 9));
		in->out_c = (uint16_t)(in->groups * ops_range(1, 9));
	}
	if (kind == 2) {		/* 1x1 without padding: the direct GEMM */
		in->k_h = in->k_w = 1;
	} else {
		in->k_h = (uint8_t)ops_range(1, 4);
		in->k_w = (uint8_t)ops_range(1, 4);
		in->pad_top = (uint8_t)ops_range(0, 2);
		in->pad_left = (uint8_t)ops_range(0, 2);
		in->pad_bottom = (uint8_t)ops_range(0, 2);
		in->pad_right = (uint8_t)ops_range(0, 2);
	}
	in->stride_h = (uint8_t)ops_range(1, 2);
	in->stride_w = (uint8_t)ops_range(1, 3);
	in->dil_h = in->dil_w = 1;
	if (ins && kind != 2) {		/* zero insertion (ConvTranspose form) */
		in->ins_h = (uint8_t)ops_range(0, 2);
		in->ins_w = (uint8_t)ops_range(1, 2);
	}
	in->in_h = (uint16_t)(in->k_h - 1 + ops_range(1, 9));
	in->in_w = (uint16_t)(in->k_w - 1 + ops_range(1, 9));
	in->out_h = (uint16_t)(((in->in_h - 1) * (in->ins_h + 1) + 1 + in->pad_top +
				in->pad_bottom - in->k_h) / in->stride_h + 1);
	in->out_w = (uint16_t)(((in->in_w - 1) * (in->ins_w + 1) + 1 + in->pad_left +
				in->pad_right - in->k_w) / in->stride_w + 1);
	in->in_pixel_stride = in->in_c + (uint32_t)(ops_range(0, 3) ? 0 : ops_range(1, 5));
	in->in_row_stride = in->in_pixel_stride * in->in_w + (uint32_t)ops_range(0, 7);
	in->out_pixel_stride = in->out_c + (uint32_t)(ops_range(0, 3) ? 0 : ops_range(1, 5));
	in->out_row_stride = in->out_pixel_stride * in->out_w + (uint32_t)ops_range(0, 7);
	in->zp_in = (int16_t)ops_range(-128, 127);
	in->zp_w = (int16_t)(ops_range(0, 1) ? 0 : ops_range(-128, 127));
	in->zp_out = (int16_t)ops_range(-30, 30);
	in->act_min = (int8_t)ops_range(-128, -60);
	in->act_max = (int8_t)ops_range(60, 127);
	in->flags = NPU_CONV_OUT_LUT | (ops_range(0, 3) ? 0 : NPU_QUANT_PER_TENSOR) |
		    (ops_range(0, 3) ? 0 : NPU_CONV_NO_BIAS);
	cin_g = in->in_c / in->groups;
	nq = (in->flags & NPU_QUANT_PER_TENSOR) ? 1 : in->out_c;

	in_span = (uint64_t)(in->in_h - 1) * in->in_row_stride +
		  (uint64_t)(in->in_w - 1) * in->in_pixel_stride + in->in_c;
	out_span = (uint64_t)(in->out_h - 1) * in->out_row_stride +
		   (uint64_t)(in->out_w - 1) * in->out_pixel_stride + in->out_c;
	w_len = (uint64_t)in->out_c * in->k_h * in->k_w * cin_g;
	s->next = (uint32_t)ops_range(0, 64);
	in->input = ops_place(s, in_span);
	in->output = ops_place(s, out_span);
	in->weight = ops_place(s, w_len);
	in->bias = ops_place(s, 4ull * in->out_c);
	in->quant = ops_place(s, 5ull * nq);
	in->lut = ops_place(s, 256);
	if (in->lut == UINT32_MAX || in->quant == UINT32_MAX)
		return 0;
	if (at == TABLE_IN_OUTPUT && out_span >= 256)
		in->lut = in->output + (uint32_t)ops_range(0, (int64_t)out_span - 256);
	else if (at == TABLE_IN_INPUT && in_span >= 256)
		in->lut = in->input + (uint32_t)ops_range(0, (int64_t)in_span - 256);
	ops_fill(s->init + in->input, in_span);
	ops_fill(s->init + in->weight, w_len);
	for (int i = 0; i < in->out_c; i++)
		ops_put_i32(s->init, in->bias + 4 * i, (int32_t)ops_range(-50000, 50000));
	ops_write_quant(s->init, in->quant, nq, (uint32_t)(in->k_h * in->k_w * cin_g),
			OPS_QUANT_SENSIBLE);
	/* the table last: placed inside an operand it overwrites some of it */
	ops_fill(s->init + in->lut, 256);
	return 1;
}

/*
 * The flag's meaning, checked against the reference without it: the same
 * op, then table[o + 128] over the output's bytes only. 'h, w, c, rs, ps'
 * describe the output view.
 */
static void expect_mapped(struct ops_sram *s, const void *plain, ops_run_fn ref,
			  uint32_t output, uint32_t lut, uint32_t h, uint32_t w,
			  uint32_t c, uint32_t rs, uint32_t ps, const char *what)
{
	uint8_t table[256], *want = malloc(NPU_SRAM_SIZE);

	assert_non_null(want);
	memcpy(table, s->init + lut, sizeof(table));
	memcpy(want, s->init, NPU_SRAM_SIZE);
	ref(plain, want);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			for (uint32_t i = 0; i < c; i++) {
				uint8_t *p = want + output + y * rs + x * ps + i;

				*p = table[(uint8_t)(*p + 128)];
			}
	if (memcmp(want, s->ref, NPU_SRAM_SIZE)) {
		size_t at = 0;

		while (want[at] == s->ref[at])
			at++;
		free(want);
		fail_msg("%s: OUT_LUT differs from the op then the table at SRAM 0x%zx",
			 what, at);
	}
	free(want);
}

static void test_conv2d_out_lut_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	unsigned int done = 0, changed = 0;
	char what[64];

	(void)state;
	ops_seed(20261202);
	for (int i = 0; done < 240 && i < 2000; i++) {
		struct npu_insn_conv2d in, plain;
		struct npu_op_footprint fp, fp_plain;
		enum table_at at = (enum table_at)(i % TABLE_MODES);

		if (!conv_case(s, &in, at))
			continue;
		assert_int_equal(npu_op_conv2d_check(&in, &fp), NPU_JOB_OK);
		assert_int_equal(npu_op_conv2d_check_sram(&in, s->init), NPU_JOB_OK);
		plain = in;
		plain.flags &= ~NPU_CONV_OUT_LUT;
		plain.lut = 0;
		assert_int_equal(npu_op_conv2d_check(&plain, &fp_plain), NPU_JOB_OK);
		/* no cycles: the table sits in the output pipeline */
		assert_int_equal(fp.cycles, fp_plain.cycles);
		assert_int_equal(fp.num_reads, fp_plain.num_reads + 1);
		assert_int_equal(fp.reads[fp.num_reads - 1].begin, in.lut);
		assert_int_equal(fp.reads[fp.num_reads - 1].end, in.lut + 256);
		snprintf(what, sizeof(what), "conv out_lut #%d (table %d)", i, (int)at);
		ops_golden(s, &in, conv_ref, conv_fast, what);
		expect_mapped(s, &plain, conv_ref, in.output, in.lut, in.out_h, in.out_w,
			      in.out_c, in.out_row_stride, in.out_pixel_stride, what);
		changed += memcmp(s->init + in.output, s->ref + in.output, in.out_c) != 0;
		done++;
	}
	assert_int_equal(done, 240);
	assert_true(changed > done / 2);	/* the cases write something */
	ops_sram_free(s);
	ops_report_impls();
}

static void test_matmul_out_lut_matches_reference(void **state)
{
	static const uint32_t dims[] = { 1, 2, 3, 5, 31, 32, 33, 63, 64, 65, 100 };
	struct ops_sram *s = ops_sram_new();
	char what[64];

	(void)state;
	ops_seed(4242);
	for (int i = 0; i < 200; i++) {
		struct npu_insn_matmul in = { 0 }, plain;
		struct npu_op_footprint fp, fp_plain;
		enum table_at at = (enum table_at)(i % TABLE_MODES);
		uint64_t a_len, out_len;
		uint32_t nq;

		in.hdr.opcode = NPU_OP_MATMUL;
		in.hdr.size = sizeof(in);
		in.m = dims[ops_range(0, 10)];
		in.k = dims[ops_range(0, 10)] + (uint32_t)ops_range(0, 200);
		in.n = dims[ops_range(0, 10)];
		in.flags = NPU_CONV_OUT_LUT | (ops_range(0, 2) ? 0 : NPU_QUANT_PER_TENSOR) |
			   (ops_range(0, 2) ? 0 : NPU_CONV_NO_BIAS);
		in.a_stride = in.k + (uint32_t)ops_range(0, 5);
		in.out_stride = in.n + (uint32_t)ops_range(0, 5);
		in.zp_a = (int16_t)ops_range(-128, 127);
		in.zp_b = (int16_t)(ops_range(0, 1) ? 0 : ops_range(-128, 127));
		in.zp_out = (int16_t)ops_range(-20, 20);
		in.act_min = (int8_t)ops_range(-128, -60);
		in.act_max = (int8_t)ops_range(60, 127);
		nq = (in.flags & NPU_QUANT_PER_TENSOR) ? 1 : in.n;
		a_len = (uint64_t)(in.m - 1) * in.a_stride + in.k;
		out_len = (uint64_t)(in.m - 1) * in.out_stride + in.n;
		s->next = 0;
		in.a = ops_place(s, a_len);
		in.output = ops_place(s, out_len);
		in.b = ops_place(s, (uint64_t)in.n * in.k);
		in.bias = ops_place(s, 4ull * in.n);
		in.quant = ops_place(s, 5ull * nq);
		in.lut = ops_place(s, 256);
		assert_int_not_equal(in.lut, UINT32_MAX);
		if (at == TABLE_IN_OUTPUT && out_len >= 256)
			in.lut = in.output + (uint32_t)ops_range(0, (int64_t)out_len - 256);
		else if (at == TABLE_IN_INPUT && a_len >= 256)
			in.lut = in.a + (uint32_t)ops_range(0, (int64_t)a_len - 256);
		ops_fill(s->init + in.a, a_len);
		ops_fill(s->init + in.b, (size_t)in.n * in.k);
		for (uint32_t j = 0; j < in.n; j++)
			ops_put_i32(s->init, in.bias + 4 * j, (int32_t)ops_range(-90000, 90000));
		ops_write_quant(s->init, in.quant, nq, in.k, OPS_QUANT_SENSIBLE);
		ops_fill(s->init + in.lut, 256);

		assert_int_equal(npu_op_matmul_check(&in, &fp), NPU_JOB_OK);
		assert_int_equal(npu_op_matmul_check_sram(&in, s->init), NPU_JOB_OK);
		plain = in;
		plain.flags &= ~NPU_CONV_OUT_LUT;
		plain.lut = 0;
		assert_int_equal(npu_op_matmul_check(&plain, &fp_plain), NPU_JOB_OK);
		assert_int_equal(fp.cycles, fp_plain.cycles);
		assert_int_equal(fp.num_reads, fp_plain.num_reads + 1);
		assert_int_equal(fp.reads[fp.num_reads - 1].begin, in.lut);
		snprintf(what, sizeof(what), "matmul out_lut #%d (table %d)", i, (int)at);
		ops_golden(s, &in, mm_ref, mm_fast, what);
		expect_mapped(s, &plain, mm_ref, in.output, in.lut, in.m, 1, in.n,
			      in.out_stride, 0, what);
	}
	ops_sram_free(s);
}

/* A small valid conv / matmul with a table, for the bad-input cases. */
static struct npu_insn_conv2d conv_small(void)
{
	struct npu_insn_conv2d c = {
		.hdr = { .opcode = NPU_OP_CONV2D, .size = sizeof(c) },
		.input = 0, .weight = 4096, .bias = 8192, .quant = 12288,
		.output = 16384, .lut = 20480, .flags = NPU_CONV_OUT_LUT,
		.in_h = 4, .in_w = 4, .in_c = 8, .out_c = 8, .out_h = 4, .out_w = 4,
		.k_h = 1, .k_w = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
		.groups = 1, .in_row_stride = 32, .in_pixel_stride = 8,
		.out_row_stride = 32, .out_pixel_stride = 8,
		.act_min = -128, .act_max = 127,
	};

	return c;
}

static struct npu_insn_matmul mm_small(void)
{
	struct npu_insn_matmul m = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(m) },
		.a = 0, .b = 4096, .bias = 8192, .quant = 12288, .output = 16384,
		.lut = 20480, .flags = NPU_CONV_OUT_LUT,
		.m = 4, .k = 16, .n = 8, .a_stride = 16, .out_stride = 8,
		.act_min = -128, .act_max = 127,
	};

	return m;
}

static void test_out_lut_bad_inputs_are_refused(void **state)
{
	struct npu_insn_conv2d c = conv_small();
	struct npu_insn_matmul m = mm_small();
	struct npu_isa_check chk = { 0 };
	struct npu_op_footprint fp;

	(void)state;
	assert_int_equal(npu_op_conv2d_validate(&c, &fp, &chk), NPU_JOB_OK);
	assert_int_equal(fp.num_reads, 5);	/* input, weight, quant, bias, lut */
	assert_int_equal(npu_op_matmul_validate(&m, &fp, &chk), NPU_JOB_OK);
	assert_int_equal(fp.num_reads, 5);

	/* the table must lie in SRAM: the last byte is the first too far */
	c.lut = NPU_SRAM_SIZE - 256;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_OK);
	c.lut = NPU_SRAM_SIZE - 255;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_SRAM_BOUNDS);
	assert_string_equal(chk.field, "lut");
	c.lut = UINT32_MAX;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_SRAM_BOUNDS);
	m.lut = NPU_SRAM_SIZE;
	assert_int_equal(npu_op_matmul_validate(&m, NULL, &chk), NPU_JOB_ERR_SRAM_BOUNDS);
	assert_string_equal(chk.field, "lut");
	/* a device with less SRAM refuses what a bigger one takes */
	c = conv_small();
	chk.sram_size = 20480 + 255;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_SRAM_BOUNDS);
	chk.sram_size = 0;

	/* int8 only: the flag with I16 is an encoding error */
	c = conv_small();
	c.hdr.flags = NPU_INSN_I16;
	c.flags |= NPU_CONV_NO_BIAS;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_ENCODING);
	assert_string_equal(chk.field, "flags");
	assert_non_null(strstr(chk.reason, "I16"));
	m = mm_small();
	m.hdr.flags = NPU_INSN_I16;
	assert_int_equal(npu_op_matmul_validate(&m, NULL, &chk), NPU_JOB_ERR_BAD_ENCODING);

	/* the word means nothing without the flag: it must stay 0 (1.0-1.3) */
	c = conv_small();
	c.flags = 0;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_ENCODING);
	assert_string_equal(chk.field, "lut");
	c.lut = 0;
	assert_int_equal(npu_op_conv2d_validate(&c, &fp, &chk), NPU_JOB_OK);
	assert_int_equal(fp.num_reads, 4);
	m = mm_small();
	m.flags = NPU_QUANT_PER_TENSOR;
	assert_int_equal(npu_op_matmul_validate(&m, NULL, &chk), NPU_JOB_ERR_BAD_ENCODING);
	assert_string_equal(chk.field, "lut");
	/* a table at offset 0 is a table */
	m = mm_small();
	m.lut = 0;
	assert_int_equal(npu_op_matmul_validate(&m, &fp, &chk), NPU_JOB_OK);
	assert_int_equal(fp.reads[fp.num_reads - 1].begin, 0);
	assert_int_equal(fp.reads[fp.num_reads - 1].end, 256);
	/* the next flag bit after the array mode (ISA 1.5) is still unknown */
	c = conv_small();
	c.flags |= 1u << 6;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_ENCODING);
}

/* An instruction the validator refuses writes nothing, table or not. */
static void test_out_lut_refused_writes_nothing(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct npu_insn_conv2d c = conv_small();
	struct npu_insn_matmul m = mm_small();

	(void)state;
	ops_write_quant(s->init, c.quant, 8, 8, OPS_QUANT_SENSIBLE);
	c.lut = NPU_SRAM_SIZE - 100;
	m.lut = NPU_SRAM_SIZE - 100;
	for (int i = 0; i < OPS_NUM_IMPLS; i++) {
		if (npu_ops_set_impl(ops_impls[i]))
			continue;
		memcpy(s->fast, s->init, NPU_SRAM_SIZE);
		npu_op_conv2d(&c, s->fast);
		npu_op_matmul(&m, s->fast);
		assert_memory_equal(s->fast, s->init, NPU_SRAM_SIZE);
	}
	ops_sram_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv2d_out_lut_matches_reference),
		cmocka_unit_test(test_matmul_out_lut_matches_reference),
		cmocka_unit_test(test_out_lut_bad_inputs_are_refused),
		cmocka_unit_test(test_out_lut_refused_writes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
