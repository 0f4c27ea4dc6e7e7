// SPDX-License-Identifier: MIT
/*
 * test_ops_vector.c - POOL, ELTWISE and LUT: the fast paths equal the
 * reference over random shapes and edges (padding counted or not, windows
 * at the border, every broadcast mode, extreme zero points, shifts 1 and
 * 62, in-place and overlapping operands).
 */
#include "ops_test_util.h"

static void pool_ref(const void *i, uint8_t *s) { npu_ref_pool(i, s); }
static void pool_fast(const void *i, uint8_t *s) { npu_op_pool(i, s); }
static void elt_ref(const void *i, uint8_t *s) { npu_ref_eltwise(i, s); }
static void elt_fast(const void *i, uint8_t *s) { npu_op_eltwise(i, s); }
static void lut_ref(const void *i, uint8_t *s) { npu_ref_lut(i, s); }
static void lut_fast(const void *i, uint8_t *s) { npu_op_lut(i, s); }
static void resize_ref(const void *i, uint8_t *s) { npu_ref_resize(i, s); }
static void resize_fast(const void *i, uint8_t *s) { npu_op_resize(i, s); }

struct pool_p {
	int mode, flags, c, in_h, in_w, k_h, k_w, sh, sw, pt, pl, pb, pr;
	int zp_in, zp_out, act_min, act_max, gap, overlap;
};

static void pool_golden(struct ops_sram *s, const struct pool_p *p, const char *what)
{
	struct npu_insn_pool in = { 0 };
	struct npu_op_footprint fp;
	uint64_t in_span, out_span;

	in.hdr.opcode = NPU_OP_POOL;
	in.hdr.size = sizeof(in);
	in.mode = (uint8_t)p->mode;
	in.flags = (uint8_t)p->flags;
	in.c = (uint16_t)p->c;
	in.in_h = (uint16_t)p->in_h;
	in.in_w = (uint16_t)p->in_w;
	in.k_h = (uint8_t)p->k_h;
	in.k_w = (uint8_t)p->k_w;
	in.stride_h = (uint8_t)p->sh;
	in.stride_w = (uint8_t)p->sw;
	in.pad_top = (uint8_t)p->pt;
	in.pad_left = (uint8_t)p->pl;
	in.pad_bottom = (uint8_t)p->pb;
	in.pad_right = (uint8_t)p->pr;
	in.out_h = (uint16_t)((p->in_h + p->pt + p->pb - p->k_h) / p->sh + 1);
	in.out_w = (uint16_t)((p->in_w + p->pl + p->pr - p->k_w) / p->sw + 1);
	in.in_pixel_stride = (uint32_t)(p->c + p->gap);
	in.in_row_stride = in.in_pixel_stride * in.in_w + (uint32_t)p->gap;
	in.out_pixel_stride = (uint32_t)(p->c + p->gap);
	in.out_row_stride = in.out_pixel_stride * in.out_w;
	in.zp_in = (int16_t)p->zp_in;
	in.zp_out = (int16_t)p->zp_out;
	in.act_min = (int8_t)p->act_min;
	in.act_max = (int8_t)p->act_max;
	in_span = (uint64_t)(in.in_h - 1) * in.in_row_stride +
		  (uint64_t)(in.in_w - 1) * in.in_pixel_stride + in.c;
	out_span = (uint64_t)(in.out_h - 1) * in.out_row_stride +
		   (uint64_t)(in.out_w - 1) * in.out_pixel_stride + in.c;
	s->next = 0;
	in.input = ops_place(s, in_span);
	in.output = p->overlap ? in.input : ops_place(s, out_span);
	ops_fill(s->init + in.input, in_span);
	assert_int_equal(npu_op_pool_check(&in, &fp), NPU_JOB_OK);
	ops_golden(s, &in, pool_ref, pool_fast, what);
}

static void test_pool_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(5);
	for (int i = 0; i < 300; i++) {
		struct pool_p p = { 0 };

		p.mode = (int)ops_range(0, 1);
		p.flags = ops_range(0, 1) ? NPU_POOL_COUNT_PAD : 0;
		p.c = (int)ops_range(1, 70);
		p.k_h = (int)ops_range(1, 4);
		p.k_w = (int)ops_range(1, 4);
		p.sh = (int)ops_range(1, 3);
		p.sw = (int)ops_range(1, 3);
		p.pt = (int)ops_range(0, p.k_h - 1);
		p.pl = (int)ops_range(0, p.k_w - 1);
		p.pb = (int)ops_range(0, p.k_h - 1);
		p.pr = (int)ops_range(0, p.k_w - 1);
		p.in_h = p.k_h + (int)ops_range(0, 9);
		p.in_w = p.k_w + (int)ops_range(0, 9);
		p.zp_in = (int)ops_range(-128, 127);
		p.zp_out = (int)ops_range(-128, 127);
		p.act_min = (int)ops_range(-128, 0);
		p.act_max = (int)ops_range(0, 127);
		p.gap = ops_range(0, 3) ? 0 : (int)ops_range(1, 7);
		p.overlap = !ops_range(0, 9);
		pool_golden(s, &p, "random pool");
	}
	/* Global average pool of a 7x7x65 map; a 3x3/2 max pool with pad. */
	pool_golden(s, &(struct pool_p){ .mode = NPU_POOL_AVG, .c = 65, .in_h = 7,
		.in_w = 7, .k_h = 7, .k_w = 7, .sh = 1, .sw = 1, .zp_in = -128,
		.zp_out = 127, .act_min = -128, .act_max = 127 }, "global average");
	pool_golden(s, &(struct pool_p){ .mode = NPU_POOL_MAX, .c = 33, .in_h = 9,
		.in_w = 8, .k_h = 3, .k_w = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1,
		.pb = 1, .pr = 1, .zp_in = 5, .zp_out = -5, .act_min = -128,
		.act_max = 127 }, "3x3/2 max pool");
	pool_golden(s, &(struct pool_p){ .mode = NPU_POOL_AVG, .flags = NPU_POOL_COUNT_PAD,
		.c = 3, .in_h = 2, .in_w = 2, .k_h = 2, .k_w = 2, .sh = 1, .sw = 1,
		.pt = 1, .pl = 1, .pb = 1, .pr = 1, .zp_in = 127, .zp_out = 0,
		.act_min = -128, .act_max = 127 }, "average counting padding");
	ops_sram_free(s);
}

/* Hand-computed AVG rounding: half away from zero, both signs. */
static void test_pool_avg_rounds_half_away_from_zero(void **state)
{
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	struct npu_insn_pool in = { 0 };
	struct npu_op_footprint fp;
	static const int8_t vals[][2] = { { 1, 2 }, { -1, -2 }, { 0, 1 }, { 0, -1 } };
	static const int8_t want[] = { 2, -2, 1, -1 };

	(void)state;
	assert_non_null(sram);
	in.hdr.opcode = NPU_OP_POOL;
	in.hdr.size = sizeof(in);
	in.mode = NPU_POOL_AVG;
	in.c = 1;
	in.in_h = 1, in.in_w = 2, in.out_h = 1, in.out_w = 1;
	in.k_h = 1, in.k_w = 2, in.stride_h = 1, in.stride_w = 1;
	in.in_pixel_stride = 1, in.in_row_stride = 2;
	in.out_pixel_stride = 1, in.out_row_stride = 1;
	in.act_min = -128, in.act_max = 127;
	in.output = 100;
	assert_int_equal(npu_op_pool_check(&in, &fp), NPU_JOB_OK);
	for (int i = 0; i < 4; i++) {
		memcpy(sram, vals[i], 2);
		npu_ref_pool(&in, sram);
		assert_int_equal((int8_t)sram[100], want[i]);
		sram[100] = 0;
		npu_op_pool(&in, sram);
		assert_int_equal((int8_t)sram[100], want[i]);
	}
	free(sram);
}

struct elt_p {
	int mode, bcast, shift;
	uint32_t count, channels;
	int32_t mult_a, mult_b;
	int zp_a, zp_b, zp_out, act_min, act_max;
	int alias;	/* 0 none, 1 out == a, 2 out == b, 3 out overlaps a + 1 */
};

static void elt_golden(struct ops_sram *s, const struct elt_p *p, const char *what)
{
	struct npu_insn_eltwise in = { 0 };
	struct npu_op_footprint fp;
	uint32_t b_len = p->bcast == NPU_BCAST_NONE ? p->count :
			 p->bcast == NPU_BCAST_CHANNEL ? p->channels : 1;

	in.hdr.opcode = NPU_OP_ELTWISE;
	in.hdr.size = sizeof(in);
	in.count = p->count;
	in.mode = (uint8_t)p->mode;
	in.bcast = (uint8_t)p->bcast;
	in.shift = (uint8_t)p->shift;
	in.channels = p->bcast == NPU_BCAST_CHANNEL ? p->channels : 0;
	in.mult_a = p->mult_a;
	in.mult_b = p->mode == NPU_ELT_MUL ? 0 : p->mult_b;
	in.zp_a = (int16_t)p->zp_a;
	in.zp_b = (int16_t)p->zp_b;
	in.zp_out = (int16_t)p->zp_out;
	in.act_min = (int8_t)p->act_min;
	in.act_max = (int8_t)p->act_max;
	s->next = 0;
	in.a = ops_place(s, p->count + 1);
	in.b = ops_place(s, b_len);
	in.output = p->alias == 1 ? in.a : p->alias == 2 ? in.b :
		    p->alias == 3 ? in.a + 1 : ops_place(s, p->count);
	if (p->alias == 2 && p->bcast != NPU_BCAST_NONE)
		in.output = in.b;	/* overlapping a broadcast b */
	assert_int_equal(npu_op_eltwise_check(&in, &fp), NPU_JOB_OK);
	ops_golden(s, &in, elt_ref, elt_fast, what);
}

static void test_eltwise_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(17);
	for (int i = 0; i < 400; i++) {
		struct elt_p p = { 0 };

		p.mode = (int)ops_range(0, 1);
		p.bcast = (int)ops_range(0, 2);
		p.count = (uint32_t)ops_range(1, 3000);
		p.channels = (uint32_t)ops_range(1, 80);
		p.zp_a = (int)ops_range(-128, 127);
		p.zp_b = (int)ops_range(-128, 127);
		p.zp_out = (int)ops_range(-20, 20);
		p.act_min = (int)ops_range(-128, -60);
		p.act_max = (int)ops_range(60, 127);
		p.mult_a = (int32_t)ops_range(-(1 << 30), 1 << 30);
		p.mult_b = (int32_t)ops_range(-(1 << 30), 1 << 30);
		/* ~2^30 * 2^8 (ADD) or 2^30 * 2^16 (MUL) down to about +-64 */
		p.shift = p.mode == NPU_ELT_ADD ? (int)ops_range(29, 33) : (int)ops_range(37, 41);
		if (!ops_range(0, 7))
			p.shift = ops_rand() & 1 ? 1 : 62;
		if (!ops_range(0, 7)) {
			p.mult_a = ops_rand() & 1 ? INT32_MAX : INT32_MIN;
			p.mult_b = ops_rand() & 1 ? INT32_MAX : INT32_MIN;
		}
		p.alias = ops_range(0, 2) ? 0 : (int)ops_range(1, 3);
		elt_golden(s, &p, "random eltwise");
	}
	for (int za = -128; za <= 127; za += 255)
		for (int zb = -128; zb <= 127; zb += 255)
			for (int mode = 0; mode < 2; mode++)
				elt_golden(s, &(struct elt_p){ .mode = mode, .count = 257,
					.shift = mode ? 62 : 1, .mult_a = INT32_MIN,
					.mult_b = INT32_MAX, .zp_a = za, .zp_b = zb,
					.zp_out = za < 0 ? 127 : -128, .act_min = -128, .act_max = 127 },
					"extreme zero points and multipliers");
	ops_sram_free(s);
}

/*
 * The vector ELTWISE kernels: every count around their widths (8, 16) for
 * the tails, channel broadcasts below and above the length the op repeats
 * short b to, each mode and broadcast form, in place on a and on b.
 */
static void test_eltwise_tails_and_short_periods_match_reference(void **state)
{
	static const uint32_t counts[] = { 1, 2, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33,
					   63, 65, 255, 256, 257, 511, 513, 1029 };
	static const uint32_t chans[] = { 1, 2, 3, 5, 8, 16, 17, 24, 100, 255, 256,
					  257, 300 };
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(32);
	for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
		for (int mode = 0; mode < 2; mode++)
			for (int bcast = 0; bcast < 3; bcast++) {
				struct elt_p p = {
					.mode = mode, .bcast = bcast, .count = counts[ci],
					.channels = chans[ops_range(0, 12)],
					.zp_a = (int)ops_range(-128, 127),
					.zp_b = (int)ops_range(-128, 127),
					.zp_out = (int)ops_range(-20, 20),
					.act_min = (int)ops_range(-128, -60),
					.act_max = (int)ops_range(60, 127),
					.mult_a = (int32_t)ops_range(-(1 << 30), 1 << 30),
					.mult_b = (int32_t)ops_range(-(1 << 30), 1 << 30),
					.shift = mode == NPU_ELT_ADD ? (int)ops_range(29, 33) :
								       (int)ops_range(37, 41),
					.alias = (int)ops_range(0, 2),
				};

				elt_golden(s, &p, "eltwise tail or short period");
			}
	for (size_t ci = 0; ci < sizeof(chans) / sizeof(chans[0]); ci++)
		for (int mode = 0; mode < 2; mode++)
			elt_golden(s, &(struct elt_p){ .mode = mode,
				.bcast = NPU_BCAST_CHANNEL, .channels = chans[ci],
				.count = chans[ci] * 7 + 3, .shift = mode ? 38 : 30,
				.mult_a = 1 << 30, .mult_b = -(1 << 29), .zp_a = 5,
				.zp_b = -7, .act_min = -128, .act_max = 127 },
				"eltwise channel broadcast, every period");
	ops_sram_free(s);
	ops_report_impls();
}

static void test_lut_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();

	(void)state;
	ops_seed(23);
	for (int i = 0; i < 100; i++) {
		struct npu_insn_lut in = { 0 };
		struct npu_op_footprint fp;
		uint32_t count = (uint32_t)ops_range(1, 5000);
		int alias = (int)ops_range(0, 3);

		in.hdr.opcode = NPU_OP_LUT;
		in.hdr.size = sizeof(in);
		in.count = count;
		s->next = 0;
		in.input = ops_place(s, count + 300);
		in.table = alias == 3 ? in.input + count / 2 : ops_place(s, 256);
		in.output = alias == 1 ? in.input : alias == 2 ? in.input + 7 :
			    alias == 3 ? in.input : ops_place(s, count);
		assert_int_equal(npu_op_lut_check(&in, &fp), NPU_JOB_OK);
		ops_golden(s, &in, lut_ref, lut_fast, "lut");
	}
	/* Every tail of the 64-byte vector kernel, in place or not. */
	for (uint32_t count = 1; count <= 200; count++) {
		struct npu_insn_lut in = { 0 };
		struct npu_op_footprint fp;

		in.hdr.opcode = NPU_OP_LUT;
		in.hdr.size = sizeof(in);
		in.count = count;
		s->next = 0;
		in.input = ops_place(s, count);
		in.table = ops_place(s, 256);
		in.output = count % 2 ? in.input : ops_place(s, count);
		assert_int_equal(npu_op_lut_check(&in, &fp), NPU_JOB_OK);
		ops_golden(s, &in, lut_ref, lut_fast, "lut tail");
	}
	ops_sram_free(s);
}

/* The LUT index is the input byte + 128: -128 picks table[0]. */
static void test_lut_indexes_by_input_plus_128(void **state)
{
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	struct npu_insn_lut in = { .hdr = { NPU_OP_LUT, 0, sizeof(in), 0 },
				   .input = 0, .output = 16, .table = 1024, .count = 3 };

	(void)state;
	assert_non_null(sram);
	for (int i = 0; i < 256; i++)
		sram[1024 + i] = (uint8_t)(255 - i);
	sram[0] = 0x80;	/* -128 */
	sram[1] = 0;
	sram[2] = 0x7f;
	npu_op_lut(&in, sram);
	assert_int_equal(sram[16], 255);
	assert_int_equal(sram[17], 127);
	assert_int_equal(sram[18], 0);
	free(sram);
}

/* A RESIZE laid out at random offsets in s->init; returns its check status. */
static uint32_t resize_build(struct ops_sram *s, struct npu_insn_resize *r,
			     int mode, int c, int ih, int iw, int oh, int ow,
			     int gap, int overlap)
{
	uint64_t in_span, out_span;

	memset(r, 0, sizeof(*r));
	r->hdr.opcode = NPU_OP_RESIZE;
	r->hdr.size = sizeof(*r);
	r->mode = (uint8_t)mode;
	r->c = (uint16_t)c;
	r->in_h = (uint16_t)ih;
	r->in_w = (uint16_t)iw;
	r->out_h = (uint16_t)oh;
	r->out_w = (uint16_t)ow;
	r->in_pixel_stride = (uint32_t)(c + gap);
	r->in_row_stride = r->in_pixel_stride * (uint32_t)iw + (uint32_t)gap;
	r->out_pixel_stride = (uint32_t)(c + gap);
	r->out_row_stride = r->out_pixel_stride * (uint32_t)ow + (uint32_t)(2 * gap);
	in_span = (uint64_t)(ih - 1) * r->in_row_stride + (uint64_t)(iw - 1) * r->in_pixel_stride + c;
	out_span = (uint64_t)(oh - 1) * r->out_row_stride + (uint64_t)(ow - 1) * r->out_pixel_stride + c;
	s->next = (uint32_t)ops_range(0, 64);
	r->den_h = r->den_w = 1;
	r->input = ops_place(s, in_span > out_span ? in_span : out_span);
	r->output = overlap ? r->input : ops_place(s, out_span);
	ops_fill(s->init + r->input, in_span);
	return npu_op_resize_check(r, &(struct npu_op_footprint){ 0 });
}

static void test_resize_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	static const int chans[] = { 1, 3, 7, 16, 33, 64, 65 };
	char what[64];

	(void)state;
	ops_seed(4242);
	for (int i = 0; i < 300; i++) {
		struct npu_insn_resize r;
		int mode = i % 2, c = chans[ops_range(0, 6)];
		int ih = (int)ops_range(1, 9), iw = (int)ops_range(1, 9);
		int oh = (int)ops_range(1, 20), ow = (int)ops_range(1, 20);

		assert_int_equal(resize_build(s, &r, mode, c, ih, iw, oh, ow,
					      (int)ops_range(0, 1) * (int)ops_range(0, 5),
					      !ops_range(0, 9)), NPU_JOB_OK);
		switch (i % 6) {
		case 0: case 1:	/* asymmetric */
			r.step_h = (uint32_t)ih;
			r.den_h = (uint32_t)oh;
			r.step_w = (uint32_t)iw;
			r.den_w = (uint32_t)ow;
			break;
		case 2: case 3:	/* half_pixel */
			r.step_h = 2u * (uint32_t)ih;
			r.offset_h = ih - oh;
			r.den_h = 2u * (uint32_t)oh;
			r.step_w = 2u * (uint32_t)iw;
			r.offset_w = iw - ow;
			r.den_w = 2u * (uint32_t)ow;
			break;
		default:	/* anything: coordinates far outside, clamped */
			r.step_h = (uint32_t)ops_rand();
			r.step_w = (uint32_t)ops_range(0, 1 << 20);
			r.offset_h = (int32_t)ops_rand();
			r.offset_w = (int32_t)ops_range(-(1 << 22), 1 << 22);
			r.den_h = (uint32_t)ops_rand() | 1;
			r.den_w = (uint32_t)ops_range(1, 1 << 18);
			memcpy(s->init + r.input, (uint8_t[]){ 0x80, 0x7f, 0x80, 0x7f }, c < 4 ? c : 4);
			break;
		}
		snprintf(what, sizeof(what), "resize #%d", i);
		ops_golden(s, &r, resize_ref, resize_fast, what);
	}
	ops_sram_free(s);
}

/*
 * Independent of the reference: nearest (asymmetric, floor) picks
 * in[floor(o * in / out)] for every ratio (the coordinate is an exact
 * rational); bilinear half_pixel x2 is the float formula rounded half up
 * (its weights, 1/4 and 3/4, are exact in Q16); extreme values stay in
 * range.
 */
static void test_resize_equals_the_onnx_formulas(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct npu_insn_resize r;
	const int ih = 5, iw = 7, c = 3;

	(void)state;
	ops_seed(77);
	for (int up = 1; up <= 4; up++) {
		int oh = ih * up + (up == 3), ow = iw * up;

		assert_int_equal(resize_build(s, &r, NPU_RESIZE_NEAREST, c, ih, iw,
					      oh, ow, 0, 0), NPU_JOB_OK);
		r.step_h = (uint32_t)ih;
		r.den_h = (uint32_t)oh;
		r.step_w = (uint32_t)iw;
		r.den_w = (uint32_t)ow;
		memcpy(s->ref, s->init, NPU_SRAM_SIZE);
		npu_op_resize(&r, s->ref);
		for (int y = 0; y < oh; y++)
			for (int x = 0; x < ow; x++)
				for (int ch = 0; ch < c; ch++) {
					int sy = (int)floor((double)y * ih / oh);
					int sx = (int)floor((double)x * iw / ow);

					assert_int_equal(s->ref[r.output + y * r.out_row_stride +
								x * r.out_pixel_stride + ch],
							 s->init[r.input + sy * r.in_row_stride +
								 sx * r.in_pixel_stride + ch]);
				}
	}
	for (int extreme = 0; extreme < 2; extreme++) {
		assert_int_equal(resize_build(s, &r, NPU_RESIZE_BILINEAR, c, ih, iw,
					      2 * ih, 2 * iw, 0, 0), NPU_JOB_OK);
		if (extreme)
			for (int i = 0; i < ih * iw * c; i++)
				s->init[r.input + i] = i % 3 ? 0x7f : 0x80;
		/* half_pixel, out = 2 in: (o * 2 in + in - out) / (2 out) */
		r.step_h = 2u * ih;
		r.step_w = 2u * iw;
		r.offset_h = -ih;
		r.offset_w = -iw;
		r.den_h = 4u * ih;
		r.den_w = 4u * iw;
		memcpy(s->ref, s->init, NPU_SRAM_SIZE);
		npu_op_resize(&r, s->ref);
		for (int y = 0; y < 2 * ih; y++)
			for (int x = 0; x < 2 * iw; x++)
				for (int ch = 0; ch < c; ch++) {
					double fy = (y + 0.5) / 2 - 0.5, fx = (x + 0.5) / 2 - 0.5;
					int y0 = (int)floor(fy), x0 = (int)floor(fx);
					double wy = fy - y0, wx = fx - x0, v = 0;

					for (int dy = 0; dy < 2; dy++)
						for (int dx = 0; dx < 2; dx++) {
							int yy = y0 + dy, xx = x0 + dx;

							yy = yy < 0 ? 0 : yy >= ih ? ih - 1 : yy;
							xx = xx < 0 ? 0 : xx >= iw ? iw - 1 : xx;
							v += (dy ? wy : 1 - wy) * (dx ? wx : 1 - wx) *
							     (int8_t)s->init[r.input + (yy * iw + xx) * c + ch];
						}
					assert_int_equal((int8_t)s->ref[r.output + (y * 2 * iw + x) * c + ch],
							 (int)floor(v + 0.5));
				}
	}
	ops_sram_free(s);
}

static void test_resize_check_statuses(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct npu_insn_resize r, b;
	struct npu_isa_check chk;

	(void)state;
	assert_int_equal(resize_build(s, &r, NPU_RESIZE_BILINEAR, 8, 4, 4, 8, 8, 0, 0),
			 NPU_JOB_OK);
#define RESIZE_EXPECT(status, fld, ...) do {					\
		b = r;								\
		memset(&chk, 0, sizeof(chk));					\
		__VA_ARGS__;							\
		assert_int_equal(npu_op_resize_validate(&b, NULL, &chk), status); \
		if (fld)							\
			assert_string_equal(chk.field, fld);			\
	} while (0)
	RESIZE_EXPECT(NPU_JOB_OK, NULL);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_ENCODING, "header.size", b.hdr.size = 56);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_ENCODING, "reserved0", b.reserved0 = 1);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_ENCODING, "reserved1", b.reserved1 = 1);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_PARAM, "mode", b.mode = 2);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_PARAM, "c", b.c = 0);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_PARAM, "out_w", b.out_w = 0);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_PARAM, "den_w", b.den_w = 0);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_PARAM, "in_pixel_stride", b.in_pixel_stride = 7);
	RESIZE_EXPECT(NPU_JOB_ERR_BAD_PARAM, "out_row_stride", b.out_row_stride = 8);
	RESIZE_EXPECT(NPU_JOB_ERR_SRAM_BOUNDS, "output", b.output = NPU_SRAM_SIZE - 100);
	RESIZE_EXPECT(NPU_JOB_ERR_SRAM_BOUNDS, "input", b.input = UINT32_MAX);
	/* The device's SRAM size is an input of the check. */
	RESIZE_EXPECT(NPU_JOB_ERR_SRAM_BOUNDS, "input", chk.sram_size = 64;
		      (void)0);
	/* Cycles: bilinear blends 4 taps per element, nearest gathers 1. */
	{
		struct npu_op_footprint fp;

		assert_int_equal(npu_op_resize_check(&r, &fp), NPU_JOB_OK);
		assert_int_equal(fp.cycles, (8 * 8 * 8 * 4 + 63) / 64);
		r.mode = NPU_RESIZE_NEAREST;
		assert_int_equal(npu_op_resize_check(&r, &fp), NPU_JOB_OK);
		assert_int_equal(fp.cycles, (8 * 8 * 8 + 63) / 64);
	}
	ops_sram_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_matches_reference),
		cmocka_unit_test(test_pool_avg_rounds_half_away_from_zero),
		cmocka_unit_test(test_eltwise_matches_reference),
		cmocka_unit_test(test_eltwise_tails_and_short_periods_match_reference),
		cmocka_unit_test(test_lut_matches_reference),
		cmocka_unit_test(test_lut_indexes_by_input_plus_128),
		cmocka_unit_test(test_resize_matches_reference),
		cmocka_unit_test(test_resize_equals_the_onnx_formulas),
		cmocka_unit_test(test_resize_check_statuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
