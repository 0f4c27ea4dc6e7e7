// SPDX-License-Identifier: MIT
/*
 * test_ops_int16.c - the 16x8 mode (NPU_INSN_I16, ISA 1.2): int16
 * activations, int8 weights, int64 bias and accumulator.
 *
 * Each op is checked three ways: a model written here from the formulas of
 * npu_hw.h alone (int16 little-endian elements, 128-bit requantization,
 * the act_min * 256 clamp, the 513-entry interpolated LUT) against the
 * reference npu_ref_*(), then the golden comparison of every fast path the
 * host runs (portable, AVX2, AVX-512 VNNI) against the reference over the
 * whole SRAM. Shapes are odd on purpose (channel counts off every vector
 * width, strides with gaps, unaligned operands) and the quant tables cover
 * shift 1, shift 62 and INT32_MIN / INT32_MAX multipliers. The validator
 * cases check the new rules and the cycle model's half rate.
 */
#include "ops_test_util.h"

__extension__ typedef __int128 i128;

static int16_t ld16(const uint8_t *p)
{
	return (int16_t)(p[0] | (p[1] << 8));
}

static int64_t ld64(const uint8_t *p)
{
	int64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void put16(uint8_t *p, int v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)((unsigned)v >> 8);
}

/* Bytes from the first element of a strided [h][w][bytes] view to its end. */
static uint64_t span(uint32_t h, uint32_t w, uint32_t bytes, uint32_t rs, uint32_t ps)
{
	return (uint64_t)(h - 1) * rs + (uint64_t)(w - 1) * ps + bytes;
}

static void put64(uint8_t *p, int64_t v)
{
	memcpy(p, &v, 8);
}

/* The int16 values a case draws: full range, small, or pinned at the rails. */
static int16_t draw16(int kind)
{
	switch (kind) {
	case 0:
		return (int16_t)ops_range(INT16_MIN, INT16_MAX);
	case 1:
		return (int16_t)ops_range(-300, 300);
	default:
		return ops_rand() & 1 ? INT16_MAX : INT16_MIN;
	}
}

static void fill16(uint8_t *sram, uint32_t off, size_t n, int kind)
{
	for (size_t i = 0; i < n; i++)
		put16(sram + off + 2 * i, draw16(kind));
}

/* requant of npu_hw.h in 128 bits, then the I16 clamp. */
static int model_requant(int64_t acc, int32_t mult, int shift, int8_t amin,
			 int8_t amax)
{
	i128 v = ((i128)acc * mult + ((i128)1 << (shift - 1))) >> shift;
	i128 lo = amin * 256, hi = amax * 256 + 255;

	return (int)(v < lo ? lo : v > hi ? hi : v);
}

/* Quant tables sized for an int16 x int8 accumulator of length k. */
static void write_quant16(uint8_t *sram, uint32_t quant, uint32_t n, uint32_t k,
			  enum ops_quant_mode mode)
{
	/* Sensible: scale a typical |acc| (sqrt(k) * 10000 * 100) to ~20000. */
	double typical = sqrt((double)k) * 1e6 + 1.0;

	ops_write_quant(sram, quant, n, k, mode);
	if (mode != OPS_QUANT_SENSIBLE && mode != OPS_QUANT_NEGATIVE)
		return;
	for (uint32_t i = 0; i < n; i++) {
		int32_t mult;
		int shift;

		memcpy(&mult, sram + quant + 4 * i, 4);
		shift = (int)floor(log2(fabs((double)mult) * typical / 20000.0));
		sram[quant + 4 * n + i] = (uint8_t)(shift < 1 ? 1 : shift > 62 ? 62 : shift);
	}
}

struct tally16 {
	uint64_t outputs, unclamped;
};

static void tally16(struct tally16 *t, const uint8_t *p, size_t n, int lo, int hi)
{
	for (size_t i = 0; i < n; i++) {
		int v = ld16(p + 2 * i);

		t->outputs++;
		t->unclamped += v != lo && v != hi;
	}
}

/* ---------------------------------------------------------------------------
 * CONV2D
 */

static void model_conv(const struct npu_insn_conv2d *in, const uint8_t *sram,
		       uint8_t *out)
{
	uint32_t cin_g = in->in_c / in->groups, cout_g = in->out_c / in->groups;

	for (uint32_t oh = 0; oh < in->out_h; oh++)
	for (uint32_t ow = 0; ow < in->out_w; ow++)
	for (uint32_t oc = 0; oc < in->out_c; oc++) {
		uint32_t g = oc / cout_g;
		int64_t acc = (in->flags & NPU_CONV_NO_BIAS) ? 0 :
			      ld64(sram + in->bias + 8 * oc);
		int32_t mult;
		int q = (in->flags & NPU_QUANT_PER_TENSOR) ? 0 : (int)oc;
		int nq = (in->flags & NPU_QUANT_PER_TENSOR) ? 1 : in->out_c;

		for (uint32_t kh = 0; kh < in->k_h; kh++)
		for (uint32_t kw = 0; kw < in->k_w; kw++) {
			/* position in the zero-inserted, padded input */
			int64_t y = (int64_t)oh * in->stride_h + kh * in->dil_h - in->pad_top;
			int64_t x = (int64_t)ow * in->stride_w + kw * in->dil_w - in->pad_left;

			if (y < 0 || x < 0 || y % (in->ins_h + 1) || x % (in->ins_w + 1))
				continue;
			y /= in->ins_h + 1;
			x /= in->ins_w + 1;
			if (y >= in->in_h || x >= in->in_w)
				continue;
			for (uint32_t ic = 0; ic < cin_g; ic++) {
				int64_t a = ld16(sram + in->input + y * in->in_row_stride +
						 x * in->in_pixel_stride +
						 2 * (g * cin_g + ic));
				int64_t w = (int8_t)sram[in->weight +
					((oc * in->k_h + kh) * in->k_w + kw) * cin_g + ic];

				acc += a * (w - in->zp_w);
			}
		}
		memcpy(&mult, sram + in->quant + 4 * q, 4);
		put16(out + 2 * ((oh * in->out_w + ow) * in->out_c + oc),
		      model_requant(acc, mult, sram[in->quant + 4 * nq + q],
				    in->act_min, in->act_max));
	}
}

static void run_conv_ref(const void *i, uint8_t *s) { npu_ref_conv2d(i, s); }
static void run_conv_op(const void *i, uint8_t *s) { npu_op_conv2d(i, s); }

static int conv_case(struct ops_sram *s, struct tally16 *t, int depthwise)
{
	struct npu_insn_conv2d in = { .hdr = { NPU_OP_CONV2D, NPU_INSN_I16, sizeof(in), 0 } };
	uint32_t groups, cin_g, cout_g, quant_n;
	uint8_t *model;
	size_t out_len;

	in.k_h = (uint8_t)ops_range(1, 4);
	in.k_w = (uint8_t)ops_range(1, 4);
	in.stride_h = (uint8_t)ops_range(1, 3);
	in.stride_w = (uint8_t)ops_range(1, 3);
	in.dil_h = (uint8_t)ops_range(1, 2);
	in.dil_w = (uint8_t)ops_range(1, 2);
	if (ops_range(0, 4) == 0) {
		in.ins_h = (uint8_t)ops_range(0, 2);
		in.ins_w = (uint8_t)ops_range(0, 2);
	}
	in.pad_top = (uint8_t)ops_range(0, in.k_h - 1);
	in.pad_bottom = (uint8_t)ops_range(0, in.k_h - 1);
	in.pad_left = (uint8_t)ops_range(0, in.k_w - 1);
	in.pad_right = (uint8_t)ops_range(0, in.k_w - 1);
	in.in_h = (uint16_t)ops_range(in.dil_h * (in.k_h - 1) + 1, 11);
	in.in_w = (uint16_t)ops_range(in.dil_w * (in.k_w - 1) + 1, 11);
	if (depthwise) {
		groups = (uint32_t)ops_range(1, 37);
		cin_g = cout_g = 1;
	} else {
		groups = ops_range(0, 3) ? 1 : (uint32_t)ops_range(2, 3);
		cin_g = (uint32_t)ops_range(1, 45);
		cout_g = (uint32_t)ops_range(1, 21);
	}
	in.groups = (uint16_t)groups;
	in.in_c = (uint16_t)(groups * cin_g);
	in.out_c = (uint16_t)(groups * cout_g);
	in.out_h = (uint16_t)(((in.in_h - 1) * (in.ins_h + 1) + 1 + in.pad_top +
			       in.pad_bottom - in.dil_h * (in.k_h - 1) - 1) / in.stride_h + 1);
	in.out_w = (uint16_t)(((in.in_w - 1) * (in.ins_w + 1) + 1 + in.pad_left +
			       in.pad_right - in.dil_w * (in.k_w - 1) - 1) / in.stride_w + 1);
	/* bytes; a gap of 0..3 int16 after each pixel, 0..5 bytes after each row */
	in.in_pixel_stride = 2 * in.in_c + 2 * (uint32_t)ops_range(0, 3);
	in.in_row_stride = in.in_w * in.in_pixel_stride + (uint32_t)ops_range(0, 5);
	in.out_pixel_stride = 2 * in.out_c + 2 * (uint32_t)ops_range(0, 2);
	in.out_row_stride = in.out_w * in.out_pixel_stride + (uint32_t)ops_range(0, 5);
	in.zp_w = ops_range(0, 2) ? 0 : (int16_t)ops_range(-128, 127);
	in.act_min = ops_range(0, 3) ? -128 : (int8_t)ops_range(-128, 0);
	in.act_max = ops_range(0, 3) ? 127 : (int8_t)ops_range(in.act_min, 127);
	if (ops_range(0, 3) == 0)
		in.flags |= NPU_QUANT_PER_TENSOR;
	if (ops_range(0, 5) == 0)
		in.flags |= NPU_CONV_NO_BIAS;
	quant_n = (in.flags & NPU_QUANT_PER_TENSOR) ? 1 : in.out_c;

	s->next = 0;
	in.input = ops_place(s, span(in.in_h, in.in_w, 2 * in.in_c,
						in.in_row_stride, in.in_pixel_stride));
	in.weight = ops_place(s, (uint64_t)in.out_c * in.k_h * in.k_w * cin_g);
	in.bias = ops_place(s, 8ull * in.out_c);
	in.quant = ops_place(s, 5ull * quant_n);
	in.output = ops_place(s, span(in.out_h, in.out_w, 2 * in.out_c,
						 in.out_row_stride, in.out_pixel_stride));
	if (in.output == UINT32_MAX)
		return 0;
	assert_int_equal(npu_op_conv2d_check(&in, NULL), NPU_JOB_OK);

	int kind = (int)ops_range(0, 2);

	for (uint32_t y = 0; y < in.in_h; y++)
		for (uint32_t x = 0; x < in.in_w; x++)
			fill16(s->init, in.input + y * in.in_row_stride +
			       x * in.in_pixel_stride, in.in_c, kind);
	for (uint32_t i = 0; i < in.out_c; i++)
		put64(s->init + in.bias + 8 * i,
		      ops_range(0, 7) ? ops_range(-2000000, 2000000) :
		      (int64_t)(ops_rand() >> 1) * (ops_rand() & 1 ? 1 : -1));
	write_quant16(s->init, in.quant, quant_n,
		      (uint32_t)in.k_h * in.k_w * cin_g,
		      (enum ops_quant_mode)ops_range(0, OPS_QUANT_MODES - 1));

	out_len = (size_t)in.out_h * in.out_w * in.out_c * 2;
	model = malloc(out_len);
	assert_non_null(model);
	model_conv(&in, s->init, model);
	ops_golden(s, &in, run_conv_ref, run_conv_op, depthwise ? "dw16" : "conv16");
	for (uint32_t y = 0; y < in.out_h; y++)
		for (uint32_t x = 0; x < in.out_w; x++) {
			const uint8_t *got = s->ref + in.output + y * in.out_row_stride +
					     x * in.out_pixel_stride;
			const uint8_t *want = model + ((size_t)y * in.out_w + x) * in.out_c * 2;

			if (memcmp(got, want, 2 * in.out_c))
				fail_msg("conv16: reference differs from the model at "
					 "pixel (%u, %u)", y, x);
			tally16(t, got, in.out_c, in.act_min * 256, in.act_max * 256 + 255);
		}
	free(model);
	return 1;
}

static void test_conv2d_i16_matches_model_and_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct tally16 t = { 0, 0 };
	int done = 0;

	(void)state;
	ops_seed(1601);
	for (int i = 0; i < 160; i++)
		done += conv_case(s, &t, i % 3 == 0);
	printf("# conv16 cases %d, outputs %llu, unclamped %llu\n", done,
	       (unsigned long long)t.outputs, (unsigned long long)t.unclamped);
	assert_true(done > 100);
	/* The cases must exercise the arithmetic, not just the clamp. */
	assert_true(t.unclamped > t.outputs / 4);
	ops_sram_free(s);
}

/* ---------------------------------------------------------------------------
 * MATMUL
 */

static void run_mm_ref(const void *i, uint8_t *s) { npu_ref_matmul(i, s); }
static void run_mm_op(const void *i, uint8_t *s) { npu_op_matmul(i, s); }

static void test_matmul_i16_matches_model_and_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct tally16 t = { 0, 0 };

	(void)state;
	ops_seed(1602);
	for (int c = 0; c < 60; c++) {
		struct npu_insn_matmul in = { .hdr = { NPU_OP_MATMUL, NPU_INSN_I16, sizeof(in), 0 } };
		uint32_t nq;

		/* the last two: k long enough that int32 lanes must be widened */
		int worst = c >= 58;

		in.m = (uint32_t)ops_range(1, 9);
		in.k = worst ? 9000 + (uint32_t)c : (uint32_t)ops_range(1, c % 5 == 0 ? 700 : 70);
		in.n = worst ? 7 : (uint32_t)ops_range(1, 40);
		in.a_stride = 2 * in.k + 2 * (uint32_t)ops_range(0, 3) + (uint32_t)ops_range(0, 1);
		in.out_stride = 2 * in.n + (uint32_t)ops_range(0, 3);
		in.zp_b = ops_range(0, 2) ? 0 : (int16_t)ops_range(-128, 127);
		in.act_min = ops_range(0, 2) ? -128 : 0;
		in.act_max = 127;
		in.flags = ops_range(0, 3) ? 0 : NPU_QUANT_PER_TENSOR;
		nq = (in.flags & NPU_QUANT_PER_TENSOR) ? 1 : in.n;
		s->next = 0;
		in.a = ops_place(s, (uint64_t)(in.m - 1) * in.a_stride + 2 * in.k);
		in.b = ops_place(s, (uint64_t)in.n * in.k);
		in.bias = ops_place(s, 8ull * in.n);
		in.quant = ops_place(s, 5ull * nq);
		in.output = ops_place(s, (uint64_t)(in.m - 1) * in.out_stride + 2 * in.n);
		assert_int_equal(npu_op_matmul_check(&in, NULL), NPU_JOB_OK);
		for (uint32_t i = 0; i < in.m; i++)
			fill16(s->init, in.a + i * in.a_stride, in.k, (int)ops_range(0, 2));
		if (worst) {
			/* every product (-32768) * (-128 - 127) is ~2^23: an int32
			 * lane that adds more than 128 pairs of them overflows */
			in.zp_b = 127;
			for (uint32_t i = 0; i < in.m; i++)
				for (uint32_t k = 0; k < in.k; k++)
					put16(s->init + in.a + i * in.a_stride + 2 * k, INT16_MIN);
			memset(s->init + in.b, 0x80, (size_t)in.n * in.k);
		}
		for (uint32_t j = 0; j < in.n; j++)
			put64(s->init + in.bias + 8 * j, ops_range(-5000000, 5000000));
		write_quant16(s->init, in.quant, nq, in.k,
			      (enum ops_quant_mode)ops_range(0, OPS_QUANT_MODES - 1));
		if (worst)	/* acc / 2^23 ~ k: unclamped, so a lost 2^32 shows */
			for (uint32_t j = 0; j < nq; j++) {
				ops_put_i32(s->init, in.quant + 4 * j, 1 << 30);
				s->init[in.quant + 4 * nq + j] = 53;
			}
		ops_golden(s, &in, run_mm_ref, run_mm_op, "matmul16");
		for (uint32_t i = 0; i < in.m; i++)
			for (uint32_t j = 0; j < in.n; j++) {
				int64_t acc = ld64(s->init + in.bias + 8 * j);
				int q = nq == 1 ? 0 : (int)j;
				int32_t mult;

				for (uint32_t k = 0; k < in.k; k++)
					acc += (int64_t)ld16(s->init + in.a + i * in.a_stride + 2 * k) *
					       ((int8_t)s->init[in.b + j * in.k + k] - in.zp_b);
				memcpy(&mult, s->init + in.quant + 4 * q, 4);
				assert_int_equal(ld16(s->ref + in.output + i * in.out_stride + 2 * j),
						 model_requant(acc, mult,
							       s->init[in.quant + 4 * nq + q],
							       in.act_min, in.act_max));
				tally16(&t, s->ref + in.output + i * in.out_stride + 2 * j, 1,
					in.act_min * 256, 32767);
			}
	}
	assert_true(t.unclamped > t.outputs / 4);
	ops_sram_free(s);
}

/* ---------------------------------------------------------------------------
 * ELTWISE, POOL, LUT, RESIZE
 */

static void run_elt_ref(const void *i, uint8_t *s) { npu_ref_eltwise(i, s); }
static void run_elt_op(const void *i, uint8_t *s) { npu_op_eltwise(i, s); }

static void test_eltwise_i16_matches_model_and_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct tally16 t = { 0, 0 };

	(void)state;
	ops_seed(1603);
	for (int c = 0; c < 120; c++) {
		struct npu_insn_eltwise in = { .hdr = { NPU_OP_ELTWISE, NPU_INSN_I16, sizeof(in), 0 } };
		uint32_t blen, types = 7;
		int a16, b16, o16;

		/* Every other case mixes int8 and int16 operands through 'types'. */
		if (c % 2) {
			types = (uint32_t)ops_range(1, 7);
			in.hdr.flags = 0;
			in.types = (uint8_t)types;
		}
		a16 = !!(types & NPU_ELT_A16);
		b16 = !!(types & NPU_ELT_B16);
		o16 = !!(types & NPU_ELT_OUT16);
		/* int8 operands keep a zero point */
		in.zp_a = a16 ? 0 : (int16_t)ops_range(-128, 127);
		in.zp_b = b16 ? 0 : (int16_t)ops_range(-128, 127);
		in.zp_out = o16 ? 0 : (int16_t)ops_range(-128, 127);

		in.mode = (uint8_t)ops_range(0, 1);
		in.bcast = (uint8_t)ops_range(0, 2);
		in.count = (uint32_t)ops_range(1, 333);
		in.channels = in.bcast == NPU_BCAST_CHANNEL ? (uint32_t)ops_range(1, 17) : 0;
		blen = in.bcast == NPU_BCAST_NONE ? in.count :
		       in.bcast == NPU_BCAST_CHANNEL ? in.channels : 1;
		in.mult_a = (int32_t)ops_range(INT32_MIN, INT32_MAX);
		in.mult_b = in.mode == NPU_ELT_MUL ? 0 : (int32_t)ops_range(INT32_MIN, INT32_MAX);
		/* ~2^31 * 2^15 (add) or 2^31 * 2^30 (mul) back to int16 */
		in.shift = (uint8_t)(in.mode == NPU_ELT_ADD ? ops_range(28, 40) :
				     ops_range(40, 62)) - (o16 ? 0 : 8);
		if (c % 10 == 0)
			in.shift = c % 20 ? 1 : 62;
		in.act_min = ops_range(0, 2) ? -128 : (int8_t)ops_range(-128, 10);
		in.act_max = ops_range(0, 2) ? 127 : (int8_t)ops_range(in.act_min, 127);
		s->next = 0;
		in.a = ops_place(s, (a16 + 1ull) * in.count);
		in.b = ops_place(s, (b16 + 1ull) * blen);
		in.output = ops_range(0, 4) || a16 != o16 ?
			    ops_place(s, (o16 + 1ull) * in.count) : in.a;
		assert_int_equal(npu_op_eltwise_check(&in, NULL), NPU_JOB_OK);
		if (a16)
			fill16(s->init, in.a, in.count, (int)ops_range(0, 2));
		if (b16)
			fill16(s->init, in.b, blen, (int)ops_range(0, 2));
		uint8_t *want = malloc(2ull * in.count);

		assert_non_null(want);
		for (uint32_t i = 0; i < in.count; i++) {
			uint32_t bi = in.bcast == NPU_BCAST_NONE ? i :
				      in.bcast == NPU_BCAST_CHANNEL ? i % in.channels : 0;
			i128 a = (a16 ? ld16(s->init + in.a + 2 * i) :
				  (int8_t)s->init[in.a + i]) - in.zp_a;
			i128 b = (b16 ? ld16(s->init + in.b + 2 * bi) :
				  (int8_t)s->init[in.b + bi]) - in.zp_b;
			i128 acc = in.mode == NPU_ELT_ADD ? a * in.mult_a + b * in.mult_b :
				   a * b * in.mult_a;
			i128 v = ((acc + ((i128)1 << (in.shift - 1))) >> in.shift) + in.zp_out;
			int lo = o16 ? in.act_min * 256 : in.act_min;
			int hi = o16 ? in.act_max * 256 + 255 : in.act_max;

			v = v < lo ? lo : v > hi ? hi : v;
			if (o16)
				put16(want + 2 * i, (int)v);
			else
				want[i] = (uint8_t)v;
		}
		ops_golden(s, &in, run_elt_ref, run_elt_op, "eltwise16");
		if (memcmp(want, s->ref + in.output, (o16 + 1ull) * in.count))
			fail_msg("eltwise16 case %d (types %u): reference differs from "
				 "the model", c, types);
		if (o16)
			tally16(&t, want, in.count, in.act_min * 256, in.act_max * 256 + 255);
		free(want);
	}
	assert_true(t.unclamped > t.outputs / 4);
	ops_sram_free(s);
}

static void run_pool_ref(const void *i, uint8_t *s) { npu_ref_pool(i, s); }
static void run_pool_op(const void *i, uint8_t *s) { npu_op_pool(i, s); }

static void test_pool_i16_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(1604);
	for (int c = 0; c < 80; c++) {
		struct npu_insn_pool in = { .hdr = { NPU_OP_POOL, NPU_INSN_I16, sizeof(in), 0 } };

		in.mode = (uint8_t)ops_range(0, 1);
		in.flags = ops_range(0, 1) ? NPU_POOL_COUNT_PAD : 0;
		in.c = (uint16_t)ops_range(1, 37);
		in.k_h = (uint8_t)ops_range(1, 4);
		in.k_w = (uint8_t)ops_range(1, 4);
		in.stride_h = (uint8_t)ops_range(1, 3);
		in.stride_w = (uint8_t)ops_range(1, 3);
		in.pad_top = (uint8_t)ops_range(0, in.k_h - 1);
		in.pad_bottom = (uint8_t)ops_range(0, in.k_h - 1);
		in.pad_left = (uint8_t)ops_range(0, in.k_w - 1);
		in.pad_right = (uint8_t)ops_range(0, in.k_w - 1);
		in.in_h = (uint16_t)ops_range(in.k_h, 12);
		in.in_w = (uint16_t)ops_range(in.k_w, 12);
		in.out_h = (uint16_t)((in.in_h + in.pad_top + in.pad_bottom - in.k_h) / in.stride_h + 1);
		in.out_w = (uint16_t)((in.in_w + in.pad_left + in.pad_right - in.k_w) / in.stride_w + 1);
		in.in_pixel_stride = 2 * in.c + (uint32_t)ops_range(0, 3);
		in.in_row_stride = in.in_w * in.in_pixel_stride + (uint32_t)ops_range(0, 3);
		in.out_pixel_stride = 2 * in.c;
		in.out_row_stride = in.out_w * in.out_pixel_stride;
		in.act_min = ops_range(0, 2) ? -128 : 0;
		in.act_max = 127;
		s->next = 0;
		in.input = ops_place(s, span(in.in_h, in.in_w, 2 * in.c,
							in.in_row_stride, in.in_pixel_stride));
		in.output = ops_place(s, span(in.out_h, in.out_w, 2 * in.c,
							 in.out_row_stride, in.out_pixel_stride));
		assert_int_equal(npu_op_pool_check(&in, NULL), NPU_JOB_OK);
		for (uint32_t y = 0; y < in.in_h; y++)
			for (uint32_t x = 0; x < in.in_w; x++)
				fill16(s->init, in.input + y * in.in_row_stride +
				       x * in.in_pixel_stride, in.c, (int)ops_range(0, 2));
		ops_golden(s, &in, run_pool_ref, run_pool_op, "pool16");
		/* Spot-check one output against the formula: a 1x1 window is a copy. */
		if (in.k_h == 1 && in.k_w == 1 && in.act_min == -128)
			assert_int_equal(ld16(s->ref + in.output),
					 ld16(s->init + in.input));
	}
	ops_sram_free(s);
}

static void run_lut_ref(const void *i, uint8_t *s) { npu_ref_lut(i, s); }
static void run_lut_op(const void *i, uint8_t *s) { npu_op_lut(i, s); }

static void test_lut_i16_interpolates(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct npu_insn_lut in = { .hdr = { NPU_OP_LUT, NPU_INSN_I16, sizeof(in), 0 } };
	uint32_t n = 4096 + 3;

	(void)state;
	ops_seed(1605);
	in.count = n;
	in.input = 1;
	in.table = 2 * n + 7;
	in.output = in.table + 1026 + 3;
	assert_int_equal(npu_op_lut_check(&in, NULL), NPU_JOB_OK);
	/* every input value's neighbourhood: the ends, the knots, random */
	for (uint32_t i = 0; i < n; i++)
		put16(s->init + in.input + 2 * i,
		      i < 4 ? (int[]){ INT16_MIN, INT16_MAX, -1, 0 }[i] :
		      i < 1030 ? (int)(i - 4) * 64 - 32768 : draw16(0));
	for (int j = 0; j < 513; j++)
		put16(s->init + in.table + 2 * j, draw16(j % 7 ? 0 : 2));
	ops_golden(s, &in, run_lut_ref, run_lut_op, "lut16");
	for (uint32_t i = 0; i < n; i++) {
		int x = ld16(s->init + in.input + 2 * i);
		unsigned u = (unsigned)(x + 32768);
		int t0 = ld16(s->init + in.table + 2 * (u >> 7));
		int t1 = ld16(s->init + in.table + 2 * (u >> 7) + 2);
		/* floor division by 128 of (t1 - t0) * f + 64 */
		int num = (t1 - t0) * (int)(u & 127) + 64;
		int want = t0 + (num >= 0 ? num / 128 : -((-num + 127) / 128));

		assert_int_equal(ld16(s->ref + in.output + 2 * i), want);
		if (!(u & 127))
			assert_int_equal(want, t0);	/* knots are exact */
	}
	/* In place (input == output) must read each element before writing it. */
	in.output = in.input;
	ops_golden(s, &in, run_lut_ref, run_lut_op, "lut16 in place");
	ops_sram_free(s);
}

static void run_rs_ref(const void *i, uint8_t *s) { npu_ref_resize(i, s); }
static void run_rs_op(const void *i, uint8_t *s) { npu_op_resize(i, s); }

static void test_resize_i16_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(1606);
	for (int c = 0; c < 40; c++) {
		struct npu_insn_resize in = { .hdr = { NPU_OP_RESIZE, NPU_INSN_I16, sizeof(in), 0 } };

		in.mode = (uint8_t)ops_range(0, 1);
		in.c = (uint16_t)ops_range(1, 19);
		in.in_h = (uint16_t)ops_range(1, 9);
		in.in_w = (uint16_t)ops_range(1, 9);
		in.out_h = (uint16_t)ops_range(1, 17);
		in.out_w = (uint16_t)ops_range(1, 17);
		/* half_pixel */
		in.step_h = 2u * in.in_h;
		in.offset_h = (int32_t)in.in_h - in.out_h;
		in.den_h = 2u * in.out_h;
		in.step_w = 2u * in.in_w;
		in.offset_w = (int32_t)in.in_w - in.out_w;
		in.den_w = 2u * in.out_w;
		in.in_pixel_stride = 2 * in.c;
		in.in_row_stride = in.in_w * in.in_pixel_stride + 1;
		in.out_pixel_stride = 2 * in.c + 2;
		in.out_row_stride = in.out_w * in.out_pixel_stride;
		s->next = 0;
		in.input = ops_place(s, span(in.in_h, in.in_w, 2 * in.c,
							in.in_row_stride, in.in_pixel_stride));
		in.output = ops_place(s, span(in.out_h, in.out_w, 2 * in.c,
							 in.out_row_stride, in.out_pixel_stride));
		assert_int_equal(npu_op_resize_check(&in, NULL), NPU_JOB_OK);
		for (uint32_t y = 0; y < in.in_h; y++)
			fill16(s->init, in.input + y * in.in_row_stride, (size_t)in.in_w * in.c,
			       (int)ops_range(0, 2));
		ops_golden(s, &in, run_rs_ref, run_rs_op, "resize16");
		/* A constant image stays constant (the weights sum to 2^32). */
	}
	ops_sram_free(s);
}

/* A hand-checked case: 1x1 identity convolution, ReLU clamp, half scale. */
static void test_conv2d_i16_identity(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct npu_insn_conv2d in = {
		.hdr = { NPU_OP_CONV2D, NPU_INSN_I16, sizeof(in), 0 },
		.input = 0, .weight = 64, .bias = 80, .quant = 96, .output = 128,
		.flags = NPU_QUANT_PER_TENSOR,
		.in_h = 1, .in_w = 4, .in_c = 1, .out_c = 1, .out_h = 1, .out_w = 4,
		.k_h = 1, .k_w = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
		.groups = 1, .in_row_stride = 8, .in_pixel_stride = 2,
		.out_row_stride = 8, .out_pixel_stride = 2,
		.act_min = 0, .act_max = 127,
	};
	const int x[4] = { 30001, -5, 7, 32767 };
	/* acc = x * 2 + 3; out = round(acc * 2^30 / 2^32) = round(acc / 4) */
	const int want[4] = { (30001 * 2 + 3 + 2) >> 2, 0, (7 * 2 + 3 + 2) >> 2,
			      (32767 * 2 + 3 + 2) >> 2 };

	(void)state;
	for (int i = 0; i < 4; i++)
		put16(s->init + 2 * i, x[i]);
	s->init[64] = 2;
	put64(s->init + 80, 3);
	ops_put_i32(s->init, 96, 1 << 30);
	s->init[100] = 32;
	memcpy(s->ref, s->init, NPU_SRAM_SIZE);
	npu_ref_conv2d(&in, s->ref);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ld16(s->ref + 128 + 2 * i), want[i]);
	ops_golden(s, &in, run_conv_ref, run_conv_op, "conv16 identity");
	ops_sram_free(s);
}

/*
 * What the mode is for: one float convolution (3x3, 24 -> 16 channels,
 * heavy-tailed activations as after a few layers) quantized TFLite-style
 * both ways, int8 (asymmetric input and output, int32 bias) and 16x8
 * (symmetric int16, int64 bias), run on the reference and compared with
 * the float result by cosine. The weights are the same int8 in both, so
 * the gain is the activations' alone; the test prints both cosines.
 */
static double cosine(const double *a, const double *b, size_t n)
{
	double ab = 0, aa = 0, bb = 0;

	for (size_t i = 0; i < n; i++) {
		ab += a[i] * b[i];
		aa += a[i] * a[i];
		bb += b[i] * b[i];
	}
	return ab / sqrt(aa * bb);
}

/* mult / 2^shift = real, 31 significant bits (real in (2^-31, 1)). */
static void fixed_point(double real, int32_t *mult, uint8_t *shift)
{
	int e;
	double m = frexp(real, &e);	/* real = m * 2^e, m in [0.5, 1) */

	*mult = (int32_t)llround(m * 2147483648.0);
	if (*mult == INT32_MIN || m * 2147483648.0 >= 2147483647.5) {
		*mult = 1 << 30;
		e++;
	}
	*shift = (uint8_t)(31 - e);
}

static void test_int16_beats_int8_on_a_float_conv(void **state)
{
	enum { H = 12, W = 12, CI = 24, CO = 16, K = 3, OH = H, OW = W };
	const size_t nin = H * W * CI, nw = (size_t)CO * K * K * CI, nout = OH * OW * CO;
	double *x = malloc(sizeof(*x) * nin), *wf = malloc(sizeof(*wf) * nw);
	double *y = calloc(nout, sizeof(*y)), *y8 = malloc(sizeof(*y) * nout);
	double *y16 = malloc(sizeof(*y) * nout), bias[CO], wscale[CO];
	double xmin = 0, xmax = 0, ymin = 0, ymax = 0, c8, c16;
	struct ops_sram *s = ops_sram_new();
	int8_t *wq = malloc(nw);

	(void)state;
	assert_non_null(x);
	assert_non_null(wf);
	assert_non_null(y);
	assert_non_null(y8);
	assert_non_null(y16);
	assert_non_null(wq);
	ops_seed(1607);
	/* Laplacian-ish: mostly small, a few large values set the range. */
	for (size_t i = 0; i < nin; i++) {
		double u = ((double)(ops_rand() >> 11) + 0.5) / 9007199254740992.0;

		x[i] = (ops_rand() & 1 ? 1 : -1) * -log(u) * 0.4 + 0.1;
		xmin = fmin(xmin, x[i]);
		xmax = fmax(xmax, x[i]);
	}
	for (size_t i = 0; i < nw; i++)
		wf[i] = ((double)ops_range(-1000, 1000)) / 4000.0;
	for (int o = 0; o < CO; o++) {
		double m = 0;

		bias[o] = (double)ops_range(-100, 100) / 100.0;
		for (size_t i = 0; i < (size_t)K * K * CI; i++)
			m = fmax(m, fabs(wf[o * K * K * CI + i]));
		wscale[o] = m / 127;
		for (size_t i = 0; i < (size_t)K * K * CI; i++)
			wq[o * K * K * CI + i] = (int8_t)lround(wf[o * K * K * CI + i] / wscale[o]);
	}
	/* float reference (pad 1) and its range */
	for (int oh = 0; oh < OH; oh++)
	for (int ow = 0; ow < OW; ow++)
	for (int o = 0; o < CO; o++) {
		double acc = bias[o];

		for (int kh = 0; kh < K; kh++)
		for (int kw = 0; kw < K; kw++) {
			int ih = oh + kh - 1, iw = ow + kw - 1;

			if (ih < 0 || ih >= H || iw < 0 || iw >= W)
				continue;
			for (int c = 0; c < CI; c++)
				acc += x[(ih * W + iw) * CI + c] *
				       wf[((o * K + kh) * K + kw) * CI + c];
		}
		y[(oh * OW + ow) * CO + o] = acc;
		ymin = fmin(ymin, acc);
		ymax = fmax(ymax, acc);
	}

	for (int mode = 0; mode < 2; mode++) {
		int i16 = mode == 1, es = i16 ? 2 : 1;
		double sx, sy;
		int zx = 0, zy = 0;
		struct npu_insn_conv2d in = {
			.hdr = { NPU_OP_CONV2D, (uint8_t)(i16 ? NPU_INSN_I16 : 0), sizeof(in), 0 },
			.input = 0, .weight = 65536, .bias = 131072, .quant = 139264,
			.output = 147456,
			.in_h = H, .in_w = W, .in_c = CI, .out_c = CO, .out_h = OH, .out_w = OW,
			.k_h = K, .k_w = K, .stride_h = 1, .stride_w = 1, .dil_h = 1,
			.dil_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
			.pad_right = 1, .groups = 1,
			.in_row_stride = (uint32_t)(W * CI * es),
			.in_pixel_stride = (uint32_t)(CI * es),
			.out_row_stride = (uint32_t)(OW * CO * es),
			.out_pixel_stride = (uint32_t)(CO * es),
			.act_min = -128, .act_max = 127,
		};

		if (i16) {
			sx = fmax(-xmin, xmax) / 32767;
			sy = fmax(-ymin, ymax) / 32767;
		} else {
			/* asymmetric, range widened to include 0 */
			sx = (xmax - xmin) / 255;
			sy = (ymax - ymin) / 255;
			zx = (int)lround(-128 - xmin / sx);
			zy = (int)lround(-128 - ymin / sy);
		}
		in.zp_in = (int16_t)zx;
		in.zp_out = (int16_t)zy;
		for (size_t i = 0; i < nin; i++) {
			long q = lround(x[i] / sx) + zx;

			if (i16)
				put16(s->init + in.input + 2 * i, (int)(q < -32768 ? -32768 : q > 32767 ? 32767 : q));
			else
				s->init[in.input + i] = (uint8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
		}
		memcpy(s->init + in.weight, wq, nw);
		for (int o = 0; o < CO; o++) {
			int64_t b = llround(bias[o] / (sx * wscale[o]));
			int32_t mult;
			uint8_t shift;

			if (i16)
				put64(s->init + in.bias + 8 * o, b);
			else
				ops_put_i32(s->init, in.bias + 4 * (uint32_t)o, (int32_t)b);
			fixed_point(sx * wscale[o] / sy, &mult, &shift);
			ops_put_i32(s->init, in.quant + 4 * (uint32_t)o, mult);
			s->init[in.quant + 4 * CO + o] = shift;
		}
		assert_int_equal(npu_op_conv2d_check(&in, NULL), NPU_JOB_OK);
		memcpy(s->ref, s->init, NPU_SRAM_SIZE);
		npu_ref_conv2d(&in, s->ref);
		for (size_t i = 0; i < nout; i++)
			(i16 ? y16 : y8)[i] = sy * ((i16 ? ld16(s->ref + in.output + 2 * i) :
						     (int8_t)s->ref[in.output + i]) - zy);
		ops_golden(s, &in, run_conv_ref, run_conv_op, i16 ? "accuracy16" : "accuracy8");
	}
	c8 = cosine(y, y8, nout);
	c16 = cosine(y, y16, nout);
	printf("# float conv 3x3 24->16: cosine int8 %.6f, int16 (16x8) %.6f; "
	       "error energy 1-cos: %.3g vs %.3g\n", c8, c16, 1 - c8, 1 - c16);
	/* Both must be plausible quantizations, and int16 clearly closer. */
	assert_true(c8 > 0.99);
	assert_true(c16 > c8);
	assert_true(1 - c16 < (1 - c8) / 10);
	ops_sram_free(s);
	free(wq);
	free(y16);
	free(y8);
	free(y);
	free(wf);
	free(x);
}

/* ---------------------------------------------------------------------------
 * Validation and the cycle model
 */

static void test_i16_check_rules(void **state)
{
	struct npu_isa_check c;
	struct npu_op_footprint f8, f16;
	struct npu_insn_conv2d cv = {
		.hdr = { NPU_OP_CONV2D, 0, sizeof(cv), 0 },
		.input = 0, .weight = 8192, .bias = 28672, .quant = 32768, .output = 36864,
		.in_h = 8, .in_w = 8, .in_c = 64, .out_c = 32, .out_h = 8, .out_w = 8,
		.k_h = 3, .k_w = 3, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
		.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
		.groups = 1, .in_row_stride = 1024, .in_pixel_stride = 128,
		.out_row_stride = 512, .out_pixel_stride = 64,
		.act_min = -128, .act_max = 127,
	};
	struct npu_insn_dma_fill fill = {
		.hdr = { NPU_OP_DMA_FILL, NPU_INSN_I16, sizeof(fill), 0 },
		.dst_space = NPU_SPACE_SRAM, .rows = 1, .dst = 0, .row_bytes = 16,
	};
	struct npu_insn_lut lut = {
		.hdr = { NPU_OP_LUT, NPU_INSN_I16, sizeof(lut), 0 },
		.input = 0, .output = 0, .count = 64,
	};

	(void)state;
	/* int8 and int16 of the same shape: the int16 one is half rate
	 * (64 input channels: 2 passes of 32 rows, 4 of 16) */
	assert_int_equal(npu_op_conv2d_check(&cv, &f8), NPU_JOB_OK);
	cv.hdr.flags = NPU_INSN_I16;
	assert_int_equal(npu_op_conv2d_check(&cv, &f16), NPU_JOB_OK);
	assert_int_equal(f16.cycles, 2 * f8.cycles);
	assert_int_equal(f16.macs, f8.macs);
	/* the int64 bias is 8 bytes per channel */
	assert_int_equal(f16.reads[3].end - f16.reads[3].begin, 8 * 32);
	assert_int_equal(f16.writes[0].end - f16.writes[0].begin,
			 7 * 512 + 7 * 64 + 64);

	/* symmetric activations: a zero point is a parameter error, named */
	memset(&c, 0, sizeof(c));
	cv.zp_in = 1;
	assert_int_equal(npu_op_conv2d_validate(&cv, NULL, &c), NPU_JOB_ERR_BAD_PARAM);
	assert_string_equal(c.field, "zp_in");
	assert_non_null(strstr(c.reason, "int16"));
	cv.zp_in = 0;
	cv.zp_w = 5;	/* weights keep theirs */
	assert_int_equal(npu_op_conv2d_check(&cv, NULL), NPU_JOB_OK);
	cv.zp_out = -3;
	assert_int_equal(npu_op_conv2d_check(&cv, NULL), NPU_JOB_ERR_BAD_PARAM);
	cv.zp_out = 0;
	/* 2-byte pixels: a pixel stride of in_c bytes is too small */
	cv.in_pixel_stride = 64;
	memset(&c, 0, sizeof(c));
	assert_int_equal(npu_op_conv2d_validate(&cv, NULL, &c), NPU_JOB_ERR_BAD_PARAM);
	assert_string_equal(c.field, "in_pixel_stride");
	cv.in_pixel_stride = 128;
	/* the output ends past SRAM only because its elements are 2 bytes */
	cv.output = NPU_SRAM_SIZE - (7 * 512 + 7 * 64 + 32);
	assert_int_equal(npu_op_conv2d_check(&cv, NULL), NPU_JOB_ERR_SRAM_BOUNDS);
	cv.hdr.flags = 0;
	cv.out_row_stride = 256;
	cv.out_pixel_stride = 32;
	cv.output = NPU_SRAM_SIZE - (7 * 256 + 7 * 32 + 32);
	assert_int_equal(npu_op_conv2d_check(&cv, NULL), NPU_JOB_OK);

	/* I16 where there is no int16 mode: rejected at the header, named */
	memset(&c, 0, sizeof(c));
	assert_int_equal(npu_insn_check_header(&fill, sizeof(fill), &c),
			 NPU_JOB_ERR_BAD_ENCODING);
	assert_string_equal(c.field, "header.flags");
	assert_non_null(strstr(c.reason, "dma_fill"));
	fill.hdr.flags = 0;
	assert_int_equal(npu_insn_check_header(&fill, sizeof(fill), &c), NPU_JOB_OK);
	assert_false(npu_insn_i16_ok(NPU_OP_DMA_COPY));
	assert_false(npu_insn_i16_ok(NPU_OP_TIMESTAMP));
	assert_true(npu_insn_i16_ok(NPU_OP_MATMUL));

	/* ELTWISE types: unknown bits, or with I16, are encoding errors */
	{
		struct npu_insn_eltwise e = {
			.hdr = { NPU_OP_ELTWISE, 0, sizeof(e), 0 },
			.a = 0, .b = 4096, .output = 8192, .count = 100,
			.mode = NPU_ELT_ADD, .bcast = NPU_BCAST_SCALAR, .shift = 20,
			.mult_a = 1 << 20, .act_min = -128, .act_max = 127,
			.types = NPU_ELT_OUT16, .zp_a = -7,
		};

		assert_int_equal(npu_op_eltwise_check(&e, &f16), NPU_JOB_OK);
		assert_int_equal(f16.writes[0].end, 8192 + 200);
		assert_int_equal(f16.reads[0].end, 100);
		e.types = 8;
		memset(&c, 0, sizeof(c));
		assert_int_equal(npu_op_eltwise_validate(&e, NULL, &c), NPU_JOB_ERR_BAD_ENCODING);
		assert_string_equal(c.field, "types");
		e.types = NPU_ELT_OUT16;
		e.hdr.flags = NPU_INSN_I16;
		assert_int_equal(npu_op_eltwise_check(&e, NULL), NPU_JOB_ERR_BAD_ENCODING);
		e.hdr.flags = 0;
		e.types = NPU_ELT_A16;	/* now a is int16: its zero point must go */
		memset(&c, 0, sizeof(c));
		assert_int_equal(npu_op_eltwise_validate(&e, NULL, &c), NPU_JOB_ERR_BAD_PARAM);
		assert_string_equal(c.field, "zp_a");
	}

	/* LUT: 513 int16 points, and 2-byte elements; half the lanes */
	lut.table = NPU_SRAM_SIZE - 1025;
	assert_int_equal(npu_op_lut_check(&lut, NULL), NPU_JOB_ERR_SRAM_BOUNDS);
	lut.table = NPU_SRAM_SIZE - 1026;
	assert_int_equal(npu_op_lut_check(&lut, &f16), NPU_JOB_OK);
	assert_int_equal(f16.reads[0].end, 128);
	assert_int_equal(f16.cycles, 64 / (NPU_VECTOR_LANES / 2));
	lut.hdr.flags = 0;
	assert_int_equal(npu_op_lut_check(&lut, &f8), NPU_JOB_OK);
	assert_int_equal(f8.cycles * 2, f16.cycles);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv2d_i16_identity),
		cmocka_unit_test(test_conv2d_i16_matches_model_and_reference),
		cmocka_unit_test(test_matmul_i16_matches_model_and_reference),
		cmocka_unit_test(test_eltwise_i16_matches_model_and_reference),
		cmocka_unit_test(test_pool_i16_matches_reference),
		cmocka_unit_test(test_lut_i16_interpolates),
		cmocka_unit_test(test_resize_i16_matches_reference),
		cmocka_unit_test(test_i16_check_rules),
		cmocka_unit_test(test_int16_beats_int8_on_a_float_conv),
	};

	ops_report_impls();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
