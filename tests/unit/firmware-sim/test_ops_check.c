// SPDX-License-Identifier: MIT
/*
 * test_ops_check.c - validation of the compute instructions: each rule
 * gives its own status (BAD_ENCODING for reserved fields, flags and size,
 * BAD_PARAM for dims / enums / zero points / shapes, SRAM_BOUNDS for
 * operands outside SRAM, including sizes that overflow 32 and 64 bits),
 * and the footprint and cycles of known shapes equal the formulas; and
 * npu_insn_shift_sram() moves exactly the footprint the validator sees.
 */
#include "ops_test_util.h"

#define OK		NPU_JOB_OK
#define ENC		NPU_JOB_ERR_BAD_ENCODING
#define PARAM		NPU_JOB_ERR_BAD_PARAM
#define BOUNDS		NPU_JOB_ERR_SRAM_BOUNDS

/* 8x8x16 -> 8x8x32, 3x3, pad 1, dense, operands back to back. */
static struct npu_insn_conv2d conv_base(void)
{
	struct npu_insn_conv2d c = {
		.hdr = { NPU_OP_CONV2D, 0, sizeof(c), 0 },
		.input = 0, .weight = 1024, .bias = 1024 + 4608,
		.quant = 1024 + 4608 + 128, .output = 8192,
		.in_h = 8, .in_w = 8, .in_c = 16, .out_c = 32, .out_h = 8, .out_w = 8,
		.k_h = 3, .k_w = 3, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
		.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
		.groups = 1, .in_row_stride = 128, .in_pixel_stride = 16,
		.out_row_stride = 256, .out_pixel_stride = 32,
		.act_min = -128, .act_max = 127,
	};
	return c;
}

#define CONV_EXPECT(status, ...)						\
	do {									\
		struct npu_insn_conv2d c = conv_base();				\
		struct npu_op_footprint fp;					\
		__VA_ARGS__;							\
		assert_int_equal(npu_op_conv2d_check(&c, &fp), status);		\
	} while (0)

static void test_conv2d_check_statuses(void **state)
{
	(void)state;
	CONV_EXPECT(OK);
	/* encoding */
	CONV_EXPECT(ENC, c.hdr.size = 80);
	CONV_EXPECT(ENC, c.hdr.reserved = 1);
	CONV_EXPECT(ENC, c.hdr.flags = 0x4);
	CONV_EXPECT(OK, c.hdr.flags = NPU_INSN_SYNC);
	CONV_EXPECT(ENC, c.reserved0 = 1);
	CONV_EXPECT(ENC, c.lut = 0x80000000u);	/* the table without OUT_LUT */
	CONV_EXPECT(OK, c.flags = NPU_CONV_ARRAY(5));	/* ISA 1.5 modes */
	CONV_EXPECT(ENC, c.flags = NPU_CONV_ARRAY(6));	/* no such mode */
	CONV_EXPECT(ENC, c.flags = NPU_CONV_ARRAY(7));
	CONV_EXPECT(ENC, c.flags = 1u << 6);
	CONV_EXPECT(ENC, c.flags = 1u << 31);
	CONV_EXPECT(OK, c.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS);
	CONV_EXPECT(NPU_JOB_ERR_BAD_OPCODE, c.hdr.opcode = NPU_OP_MATMUL);
	/* zero dims */
	CONV_EXPECT(PARAM, c.in_h = 0);
	CONV_EXPECT(PARAM, c.in_w = 0);
	CONV_EXPECT(PARAM, c.in_c = 0);
	CONV_EXPECT(PARAM, c.out_c = 0);
	CONV_EXPECT(PARAM, c.out_h = 0);
	CONV_EXPECT(PARAM, c.k_h = 0);
	CONV_EXPECT(PARAM, c.k_w = 0);
	CONV_EXPECT(PARAM, c.stride_h = 0);
	CONV_EXPECT(PARAM, c.stride_w = 0);
	CONV_EXPECT(PARAM, c.dil_h = 0);
	CONV_EXPECT(PARAM, c.dil_w = 0);
	CONV_EXPECT(PARAM, c.groups = 0);
	/* groups */
	CONV_EXPECT(PARAM, c.groups = 3);
	CONV_EXPECT(PARAM, c.groups = 32);	/* divides out_c, not in_c */
	CONV_EXPECT(OK, c.groups = 16);
	CONV_EXPECT(OK, c.groups = 16; c.out_c = 16; c.out_row_stride = 128;
		    c.out_pixel_stride = 16);	/* depthwise */
	/* zero points and clamp */
	CONV_EXPECT(PARAM, c.zp_in = 128);
	CONV_EXPECT(PARAM, c.zp_in = -129);
	CONV_EXPECT(PARAM, c.zp_w = 200);
	CONV_EXPECT(PARAM, c.zp_out = -32768);
	CONV_EXPECT(OK, c.zp_in = -128; c.zp_w = 127; c.zp_out = -128);
	CONV_EXPECT(PARAM, c.act_min = 5; c.act_max = 4);
	CONV_EXPECT(OK, c.act_min = 4; c.act_max = 4);
	/* output shape must follow the formula exactly */
	CONV_EXPECT(PARAM, c.out_h = 7);
	CONV_EXPECT(PARAM, c.out_w = 9);
	CONV_EXPECT(PARAM, c.stride_h = 2);
	CONV_EXPECT(OK, c.stride_h = 2; c.out_h = 4);
	CONV_EXPECT(OK, c.stride_h = 3; c.out_h = 3);	/* (8 + 2 - 3) / 3 + 1 */
	CONV_EXPECT(OK, c.dil_w = 2; c.out_w = 6);
	CONV_EXPECT(PARAM, c.k_h = 11);		/* window larger than padded input */
	CONV_EXPECT(OK, c.pad_top = 0; c.out_h = 7);
	/* layouts */
	CONV_EXPECT(PARAM, c.in_pixel_stride = 15);
	CONV_EXPECT(PARAM, c.in_row_stride = 127);
	CONV_EXPECT(PARAM, c.out_pixel_stride = 31);
	CONV_EXPECT(PARAM, c.out_row_stride = 255);
	CONV_EXPECT(OK, c.in_pixel_stride = 20; c.in_row_stride = 160);
	/* a single row needs no row stride */
	CONV_EXPECT(OK, c.in_h = 1; c.pad_top = c.pad_bottom = 1; c.out_h = 1;
		    c.in_row_stride = 0; c.out_row_stride = 0);
	/* SRAM bounds */
	CONV_EXPECT(BOUNDS, c.output = NPU_SRAM_SIZE - 2047);
	CONV_EXPECT(OK, c.output = NPU_SRAM_SIZE - 2048);
	CONV_EXPECT(BOUNDS, c.input = NPU_SRAM_SIZE);
	CONV_EXPECT(BOUNDS, c.input = UINT32_MAX);
	CONV_EXPECT(BOUNDS, c.weight = NPU_SRAM_SIZE - 4607);
	CONV_EXPECT(BOUNDS, c.bias = NPU_SRAM_SIZE - 127);
	CONV_EXPECT(OK, c.bias = UINT32_MAX; c.flags = NPU_CONV_NO_BIAS);
	CONV_EXPECT(BOUNDS, c.quant = NPU_SRAM_SIZE - 159);
	CONV_EXPECT(OK, c.quant = NPU_SRAM_SIZE - 5; c.flags = NPU_QUANT_PER_TENSOR);
	CONV_EXPECT(BOUNDS, c.in_row_stride = UINT32_MAX);
	CONV_EXPECT(BOUNDS, c.out_pixel_stride = UINT32_MAX / 8; c.out_row_stride = UINT32_MAX);
	/* 65535 x 65535 x 65535 channels: sizes far past 32 bits */
	CONV_EXPECT(BOUNDS, c.in_h = 65535; c.in_w = 65535; c.in_c = 65535;
		    c.out_c = 65535; c.k_h = 255; c.k_w = 255; c.pad_top = c.pad_left = 0;
		    c.pad_bottom = c.pad_right = 0; c.out_h = 65281; c.out_w = 65281;
		    c.in_pixel_stride = 65535; c.in_row_stride = 65535u * 65535u;
		    c.out_pixel_stride = 65535; c.out_row_stride = 65535u * 65281u);
}

static struct npu_insn_matmul mm_base(void)
{
	struct npu_insn_matmul m = {
		.hdr = { NPU_OP_MATMUL, 0, sizeof(m), 0 },
		.a = 0, .b = 4096, .bias = 65536, .quant = 70000, .output = 80000,
		.m = 16, .k = 100, .n = 40, .a_stride = 100, .out_stride = 40,
		.act_min = -128, .act_max = 127,
	};
	return m;
}

#define MM_EXPECT(status, ...)							\
	do {									\
		struct npu_insn_matmul m = mm_base();				\
		struct npu_op_footprint fp;					\
		__VA_ARGS__;							\
		assert_int_equal(npu_op_matmul_check(&m, &fp), status);		\
	} while (0)

static void test_matmul_check_statuses(void **state)
{
	(void)state;
	MM_EXPECT(OK);
	MM_EXPECT(ENC, m.hdr.size = 72);
	MM_EXPECT(ENC, m.lut = 1);	/* the table without OUT_LUT */
	MM_EXPECT(OK, m.flags = NPU_CONV_ARRAY(3));
	MM_EXPECT(ENC, m.flags = NPU_CONV_ARRAY(6));
	MM_EXPECT(ENC, m.flags = 1u << 6);
	MM_EXPECT(PARAM, m.m = 0);
	MM_EXPECT(PARAM, m.k = 0);
	MM_EXPECT(PARAM, m.n = 0);
	MM_EXPECT(PARAM, m.zp_a = 128);
	MM_EXPECT(PARAM, m.zp_b = -129);
	MM_EXPECT(PARAM, m.zp_out = 1000);
	MM_EXPECT(PARAM, m.act_min = 1; m.act_max = 0);
	MM_EXPECT(PARAM, m.a_stride = 99);
	MM_EXPECT(PARAM, m.out_stride = 39);
	MM_EXPECT(OK, m.m = 1; m.a_stride = 0; m.out_stride = 0);
	MM_EXPECT(BOUNDS, m.output = NPU_SRAM_SIZE - 15 * 40 - 39);
	MM_EXPECT(OK, m.output = NPU_SRAM_SIZE - 15 * 40 - 40);
	MM_EXPECT(BOUNDS, m.b = NPU_SRAM_SIZE - 3999);
	/* m * a_stride overflows 32 bits; n * k overflows 32 bits */
	MM_EXPECT(BOUNDS, m.m = 0x10000; m.a_stride = 0x10000);
	MM_EXPECT(BOUNDS, m.n = 0x10000; m.k = 0x10000; m.a_stride = 0x10000;
		  m.m = 1);
	/* (m - 1) * a_stride + k and n * k near 2^64 */
	MM_EXPECT(BOUNDS, m.m = UINT32_MAX; m.a_stride = UINT32_MAX;
		  m.k = UINT32_MAX; m.out_stride = UINT32_MAX; m.n = UINT32_MAX);
	MM_EXPECT(BOUNDS, m.m = 1; m.k = UINT32_MAX; m.n = UINT32_MAX);
	MM_EXPECT(BOUNDS, m.bias = UINT32_MAX - 3);
	MM_EXPECT(BOUNDS, m.quant = NPU_SRAM_SIZE - 199);
}

/* 8x8x8 max pool 2x2 stride 2; a 1000-element ADD; a 100-byte LUT. */
static struct npu_insn_pool pool_base(void)
{
	struct npu_insn_pool p = {
		.hdr = { NPU_OP_POOL, 0, sizeof(p), 0 },
		.input = 0, .output = 4096, .mode = NPU_POOL_MAX, .c = 8,
		.in_h = 8, .in_w = 8, .out_h = 4, .out_w = 4,
		.k_h = 2, .k_w = 2, .stride_h = 2, .stride_w = 2,
		.in_row_stride = 64, .in_pixel_stride = 8,
		.out_row_stride = 32, .out_pixel_stride = 8,
		.act_min = -128, .act_max = 127,
	};
	return p;
}

static struct npu_insn_eltwise elt_base(void)
{
	struct npu_insn_eltwise e = {
		.hdr = { NPU_OP_ELTWISE, 0, sizeof(e), 0 },
		.a = 0, .b = 1000, .output = 2000, .count = 1000,
		.mode = NPU_ELT_ADD, .bcast = NPU_BCAST_NONE, .shift = 20,
		.mult_a = 1 << 20, .mult_b = 1 << 20,
		.act_min = -128, .act_max = 127,
	};
	return e;
}

static struct npu_insn_lut lut_base(void)
{
	struct npu_insn_lut l = {
		.hdr = { NPU_OP_LUT, 0, sizeof(l), 0 },
		.input = 0, .output = 100, .table = 200, .count = 100,
	};
	return l;
}

static void test_pool_eltwise_lut_check_statuses(void **state)
{
	struct npu_op_footprint fp;
	const struct npu_insn_pool pool = pool_base();
	const struct npu_insn_eltwise elt = elt_base();
	const struct npu_insn_lut lut = lut_base();
	struct npu_insn_pool p;
	struct npu_insn_eltwise e;
	struct npu_insn_lut l;

	(void)state;
#define POOL(status, ...) do { p = pool; __VA_ARGS__; \
	assert_int_equal(npu_op_pool_check(&p, &fp), status); } while (0)
	POOL(OK);
	POOL(ENC, p.hdr.size = 60);
	POOL(ENC, p.reserved0[1] = 1);
	POOL(ENC, p.reserved1 = 1);
	POOL(ENC, p.flags = 2);
	POOL(PARAM, p.mode = 2);
	POOL(PARAM, p.c = 0);
	POOL(PARAM, p.k_w = 0);
	POOL(PARAM, p.stride_h = 0);
	POOL(PARAM, p.out_w = 5);
	POOL(PARAM, p.zp_in = 128);
	POOL(PARAM, p.act_min = 127; p.act_max = -128);
	POOL(PARAM, p.pad_top = 2; p.out_h = 5);	/* pad >= window */
	POOL(OK, p.pad_top = 1; p.out_h = 4);
	POOL(PARAM, p.in_pixel_stride = 7);
	POOL(BOUNDS, p.output = NPU_SRAM_SIZE - 127);
	POOL(BOUNDS, p.in_row_stride = UINT32_MAX);
#define ELT(status, ...) do { e = elt; __VA_ARGS__; \
	assert_int_equal(npu_op_eltwise_check(&e, &fp), status); } while (0)
	ELT(OK);
	ELT(ENC, e.hdr.reserved = 3);
	ELT(ENC, e.types = 8);
	ELT(PARAM, e.mode = 2);
	ELT(PARAM, e.bcast = 3);
	ELT(PARAM, e.shift = 0);
	ELT(PARAM, e.shift = 63);
	ELT(OK, e.shift = 1);
	ELT(OK, e.shift = 62);
	ELT(PARAM, e.count = 0);
	ELT(PARAM, e.bcast = NPU_BCAST_CHANNEL);	/* channels = 0 */
	ELT(OK, e.bcast = NPU_BCAST_CHANNEL; e.channels = 7);
	ELT(PARAM, e.channels = 7);			/* unused field set */
	ELT(PARAM, e.mode = NPU_ELT_MUL);		/* mult_b unused but set */
	ELT(OK, e.mode = NPU_ELT_MUL; e.mult_b = 0);
	ELT(PARAM, e.zp_b = -129);
	ELT(PARAM, e.act_min = 1; e.act_max = 0);
	ELT(BOUNDS, e.output = NPU_SRAM_SIZE - 999);
	ELT(BOUNDS, e.count = UINT32_MAX);
	ELT(OK, e.bcast = NPU_BCAST_SCALAR; e.b = NPU_SRAM_SIZE - 1);
	ELT(BOUNDS, e.bcast = NPU_BCAST_SCALAR; e.b = NPU_SRAM_SIZE);
#define LUT(status, ...) do { l = lut; __VA_ARGS__; \
	assert_int_equal(npu_op_lut_check(&l, &fp), status); } while (0)
	LUT(OK);
	LUT(ENC, l.hdr.size = 32);
	LUT(PARAM, l.count = 0);
	LUT(BOUNDS, l.table = NPU_SRAM_SIZE - 255);
	LUT(OK, l.table = NPU_SRAM_SIZE - 256);
	LUT(BOUNDS, l.input = UINT32_MAX; l.count = UINT32_MAX);
}

static void test_footprints_and_cycles_follow_the_formulas(void **state)
{
	struct npu_insn_conv2d c = conv_base();
	struct npu_insn_matmul m = mm_base();
	struct npu_op_footprint fp;

	(void)state;
	assert_int_equal(npu_op_conv2d_check(&c, &fp), OK);
	/* 8*8 pixels * 9 taps * 1 group * ceil(16/32) * ceil(32/32) */
	assert_int_equal(fp.cycles, 576);
	assert_int_equal(fp.macs, 8 * 8 * 32 * 9 * 16);
	assert_int_equal(fp.num_reads, 4);
	assert_int_equal(fp.reads[0].begin, 0);
	assert_int_equal(fp.reads[0].end, 1024);
	assert_int_equal(fp.reads[1].begin, 1024);
	assert_int_equal(fp.reads[1].end, 1024 + 4608);
	assert_int_equal(fp.reads[2].begin, c.quant);
	assert_int_equal(fp.reads[2].end, c.quant + 160);
	assert_int_equal(fp.reads[3].begin, c.bias);
	assert_int_equal(fp.reads[3].end, c.bias + 128);
	assert_int_equal(fp.num_writes, 1);
	assert_int_equal(fp.writes[0].begin, 8192);
	assert_int_equal(fp.writes[0].end, 8192 + 2048);

	/* 56x56x128 -> 128 3x3: 3136 * 9 * 4 * 4 */
	c.in_h = c.in_w = c.out_h = c.out_w = 56;
	c.in_c = c.out_c = 128;
	c.in_pixel_stride = c.out_pixel_stride = 128;
	c.in_row_stride = c.out_row_stride = 56 * 128;
	c.input = 0, c.weight = 401408, c.bias = c.weight + 147456;
	c.quant = c.bias + 512, c.output = c.quant + 640;
	c.flags = 0;
	assert_int_equal(npu_op_conv2d_check(&c, &fp), OK);
	assert_int_equal(fp.cycles, 3136ull * 9 * 4 * 4);
	assert_int_equal(fp.macs, 3136ull * 128 * 1152);
	/* depthwise 56x56x128: ceil(3136 / 32) * 9 * ceil(128 / 32) */
	c.groups = 128;
	assert_int_equal(npu_op_conv2d_check(&c, &fp), OK);
	assert_int_equal(fp.cycles, 98ull * 9 * 4);
	assert_int_equal(fp.macs, 3136ull * 128 * 9);
	/* groups 4 of 32 -> 32 channels: 3136 * 9 * 4 * 1 * 1 */
	c.groups = 4;
	assert_int_equal(npu_op_conv2d_check(&c, &fp), OK);
	assert_int_equal(fp.cycles, 3136ull * 9 * 4);
	/* NO_BIAS drops the bias read */
	c.flags = NPU_CONV_NO_BIAS | NPU_QUANT_PER_TENSOR;
	assert_int_equal(npu_op_conv2d_check(&c, &fp), OK);
	assert_int_equal(fp.num_reads, 3);
	assert_int_equal(fp.reads[2].end - fp.reads[2].begin, 5);

	/* MATMUL 16 x 100 x 40: 16 * ceil(100/32) * ceil(40/32) */
	assert_int_equal(npu_op_matmul_check(&m, &fp), OK);
	assert_int_equal(fp.cycles, 16 * 4 * 2);
	assert_int_equal(fp.macs, 16 * 100 * 40);
	assert_int_equal(fp.reads[0].end, 1600);
	assert_int_equal(fp.reads[1].end - fp.reads[1].begin, 4000);
	assert_int_equal(fp.writes[0].end - fp.writes[0].begin, 640);

	struct npu_insn_pool p = {
		.hdr = { NPU_OP_POOL, 0, sizeof(p), 0 }, .c = 65, .in_h = 7, .in_w = 7,
		.out_h = 1, .out_w = 1, .k_h = 7, .k_w = 7, .stride_h = 1, .stride_w = 1,
		.in_row_stride = 7 * 65, .in_pixel_stride = 65, .out_pixel_stride = 65,
		.mode = NPU_POOL_AVG, .output = 4096, .act_max = 127,
	};
	assert_int_equal(npu_op_pool_check(&p, &fp), OK);
	assert_int_equal(fp.cycles, (65 * 49 + 63) / 64);
	assert_int_equal(fp.macs, 0);

	struct npu_insn_eltwise e = {
		.hdr = { NPU_OP_ELTWISE, 0, sizeof(e), 0 }, .count = 129, .shift = 1,
		.b = 200, .output = 400, .bcast = NPU_BCAST_SCALAR,
	};
	assert_int_equal(npu_op_eltwise_check(&e, &fp), OK);
	assert_int_equal(fp.cycles, 3);
	assert_int_equal(fp.reads[1].end - fp.reads[1].begin, 1);

	struct npu_insn_lut l = {
		.hdr = { NPU_OP_LUT, 0, sizeof(l), 0 }, .count = 64, .table = 1000,
		.output = 64,
	};
	assert_int_equal(npu_op_lut_check(&l, &fp), OK);
	assert_int_equal(fp.cycles, 1);
	assert_int_equal(fp.reads[1].end - fp.reads[1].begin, 256);
}

static void test_quant_shifts_in_sram_are_checked(void **state)
{
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	struct npu_insn_matmul m = mm_base();

	(void)state;
	assert_non_null(sram);
	memset(sram + m.quant + 4 * m.n, 1, m.n);
	assert_int_equal(npu_op_matmul_check_sram(&m, sram), OK);
	sram[m.quant + 4 * m.n + m.n - 1] = 62;
	assert_int_equal(npu_op_matmul_check_sram(&m, sram), OK);
	sram[m.quant + 4 * m.n + m.n - 1] = 63;
	assert_int_equal(npu_op_matmul_check_sram(&m, sram), PARAM);
	sram[m.quant + 4 * m.n + m.n - 1] = 0;
	assert_int_equal(npu_op_matmul_check_sram(&m, sram), PARAM);
	/* per-tensor reads one shift, right after the one multiplier */
	m.flags = NPU_QUANT_PER_TENSOR;
	sram[m.quant + 4] = 62;
	assert_int_equal(npu_op_matmul_check_sram(&m, sram), OK);
	sram[m.quant + 4] = 99;
	assert_int_equal(npu_op_matmul_check_sram(&m, sram), PARAM);
	free(sram);
}

/*
 * npu_insn_shift_sram() moves exactly what the validator sees: for one
 * valid instruction of every kind (and the CONV2D / MATMUL flag cases that
 * name or drop an operand), the footprint after a shift is the old one
 * moved by delta, cycles and MACs unchanged, and shifting back restores
 * the bytes.
 */
static void check_shift(const void *insn, size_t size, int64_t delta)
{
	uint8_t a[128], b[128];
	struct npu_op_footprint f0, f1;
	unsigned int k;

	assert_true(size <= sizeof(a));
	memcpy(a, insn, size);
	memcpy(b, insn, size);
	assert_int_equal(npu_insn_check(a, NULL, &f0), OK);
	npu_insn_shift_sram(b, delta);
	assert_int_equal(npu_insn_check(b, NULL, &f1), OK);
	assert_int_equal(f0.num_reads, f1.num_reads);
	assert_int_equal(f0.num_writes, f1.num_writes);
	for (k = 0; k < f0.num_reads; k++) {
		assert_int_equal(f1.reads[k].begin, f0.reads[k].begin + delta);
		assert_int_equal(f1.reads[k].end, f0.reads[k].end + delta);
	}
	for (k = 0; k < f0.num_writes; k++) {
		assert_int_equal(f1.writes[k].begin, f0.writes[k].begin + delta);
		assert_int_equal(f1.writes[k].end, f0.writes[k].end + delta);
	}
	assert_int_equal(f0.cycles, f1.cycles);
	assert_int_equal(f0.macs, f1.macs);
	npu_insn_shift_sram(b, -delta);
	assert_memory_equal(a, b, size);
}

static void test_shift_moves_footprints(void **state)
{
	struct npu_insn_conv2d c = conv_base();
	struct npu_insn_matmul m = mm_base();
	const struct npu_insn_pool pool = pool_base();
	const struct npu_insn_eltwise elt = elt_base();
	const struct npu_insn_lut lut = lut_base();
	const struct npu_insn_resize rz = {
		.hdr = { NPU_OP_RESIZE, 0, sizeof(rz), 0 },
		.input = 64, .output = 1024, .mode = NPU_RESIZE_NEAREST, .c = 4,
		.in_h = 2, .in_w = 2, .out_h = 4, .out_w = 4,
		.in_row_stride = 8, .in_pixel_stride = 4,
		.out_row_stride = 16, .out_pixel_stride = 4,
		.step_h = 2, .step_w = 2, .den_h = 4, .den_w = 4,
	};
	struct npu_insn_softmax sm = {
		.hdr = { NPU_OP_SOFTMAX, 0, sizeof(sm), 0 },
		.input = 0, .output = 512, .rows = 3, .c = 40, .in_stride = 40,
		.out_stride = 40, .mult = 1 << 30, .shift = 84, .zp_out = -128,
		.act_min = -128, .act_max = 127,
	};
	struct npu_insn_layernorm ln = {
		.hdr = { NPU_OP_LAYERNORM, 0, sizeof(ln), 0 },
		.input = 0, .output = 512, .params = 1024, .rows = 3, .c = 40,
		.in_stride = 40, .out_stride = 40, .shift = 20,
		.act_min = -128, .act_max = 127,
	};
	struct npu_insn_reduce rd = {
		.hdr = { NPU_OP_REDUCE, 0, sizeof(rd), 0 },
		.input = 0, .output = 512, .rows = 3, .c = 40, .in_stride = 40,
		.out_stride = 1, .mult = 1 << 20, .shift = 20,
		.act_min = -128, .act_max = 127,
	};
	struct npu_insn_dma_copy dc = {
		.hdr = { NPU_OP_DMA_COPY, 0, sizeof(dc), 0 },
		.src_space = NPU_SPACE_SRAM, .dst_space = NPU_SPACE_SRAM,
		.rows = 3, .src = 0, .dst = 4096, .row_bytes = 100,
		.src_stride = 128, .dst_stride = 100,
	};
	struct npu_insn_dma_fill df = {
		.hdr = { NPU_OP_DMA_FILL, 0, sizeof(df), 0 },
		.dst_space = NPU_SPACE_SRAM, .value = 7, .rows = 2, .dst = 256,
		.row_bytes = 64, .dst_stride = 64,
	};
	const struct npu_insn_barrier bar = { .hdr = { NPU_OP_BARRIER, 0, sizeof(bar), 0 } };
	static const int64_t deltas[] = { 64, 65536, 1 << 20 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++) {
		int64_t d = deltas[i];

		c = conv_base();
		check_shift(&c, sizeof(c), d);
		c.flags = NPU_CONV_NO_BIAS | NPU_CONV_OUT_LUT | NPU_CONV_ARRAY(3);
		c.bias = 0;
		c.lut = 1024 + 4608 + 256;
		check_shift(&c, sizeof(c), d);
		m = mm_base();
		check_shift(&m, sizeof(m), d);
		m.flags = NPU_CONV_NO_BIAS | NPU_CONV_OUT_LUT;
		m.bias = 0;
		m.lut = 90000;
		check_shift(&m, sizeof(m), d);
		check_shift(&pool, sizeof(pool), d);
		check_shift(&elt, sizeof(elt), d);
		check_shift(&lut, sizeof(lut), d);
		check_shift(&rz, sizeof(rz), d);
		check_shift(&sm, sizeof(sm), d);
		check_shift(&ln, sizeof(ln), d);
		check_shift(&rd, sizeof(rd), d);
		check_shift(&dc, sizeof(dc), d);
		dc.src_space = NPU_SPACE_VA;	/* only the SRAM side moves */
		dc.src = 0x10000;
		check_shift(&dc, sizeof(dc), d);
		dc.src_space = NPU_SPACE_SRAM;
		dc.src = 0;
		dc.dst_space = NPU_SPACE_VA;
		dc.dst = 0x20000;
		check_shift(&dc, sizeof(dc), d);
		dc.dst_space = NPU_SPACE_SRAM;
		dc.dst = 4096;
		check_shift(&df, sizeof(df), d);
		check_shift(&bar, sizeof(bar), d);
	}
}

static void test_impl_selection(void **state)
{
	(void)state;
	assert_int_equal(npu_ops_set_impl("portable"), 0);
	assert_string_equal(npu_ops_impl_name(), "portable");
	assert_int_equal(npu_ops_set_impl("sse9"), -1);
	assert_string_equal(npu_ops_impl_name(), "portable");
	ops_report_impls();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv2d_check_statuses),
		cmocka_unit_test(test_matmul_check_statuses),
		cmocka_unit_test(test_pool_eltwise_lut_check_statuses),
		cmocka_unit_test(test_footprints_and_cycles_follow_the_formulas),
		cmocka_unit_test(test_quant_shifts_in_sram_are_checked),
		cmocka_unit_test(test_shift_moves_footprints),
		cmocka_unit_test(test_impl_selection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
