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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_matches_reference),
		cmocka_unit_test(test_pool_avg_rounds_half_away_from_zero),
		cmocka_unit_test(test_eltwise_matches_reference),
		cmocka_unit_test(test_lut_matches_reference),
		cmocka_unit_test(test_lut_indexes_by_input_plus_128),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
