/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c - one simulated NPU on several host threads
 * (npu_sim_set_threads): the same job on 1, 2 and 3 threads ends with the
 * same status, modeled cycles and MACs and writes the same bytes, with
 * odd shapes whose splits are uneven and tiny ops that are not split; bad
 * thread counts are refused and keep the setting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "npu_ops.h"
#include "sim_test_host.h"

#define MEM_SIZE	(16u << 20)
#define CMD_VA		0x1000000ull
#define IN_VA		0x200000ull	/* the SRAM image the job loads */
#define OUT_VA		0x400000ull	/* the SRAM the job stores at its end */
#define SRAM		NPU_SRAM_SIZE

/* SRAM layout of the job. */
enum {
	X = 0x000000,		/* 37 x 29 x 24 input */
	W1 = 0x008000, B1 = 0x00a400, Q1 = 0x00a500, O1 = 0x010000,
	W2 = 0x01c000, B2 = 0x01c100, Q2 = 0x01c200, O2 = 0x020000,
	MA = 0x030000, MB = 0x036000, MBIAS = 0x037000, MQ = 0x037100, MO = 0x038000,
	EA = 0x040000, EB = 0x070000, EO = 0x0a0000,
	LI = 0x0d0000, LT = 0x102000, LO = 0x110000,
	PO = 0x150000, RO = 0x160000,
	TI = 0x180000, TW = 0x180100, TB = 0x180200, TQ = 0x180300, TO = 0x180400,
	W3 = 0x181000, B3 = 0x182000, Q3 = 0x182100, Q4 = 0x182400,
	O3 = 0x190000, O4 = 0x1a0000,
};

#define XH 37
#define XW 29
#define XC 24

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

/* mult[n] then shift[n]: accumulators of k products to about +-40. */
static void put_quant(uint8_t *img, uint32_t at, uint32_t n, uint32_t k)
{
	double typical = sqrt((double)k) * 100.0 * 100.0 + 1.0;

	for (uint32_t i = 0; i < n; i++) {
		int32_t mult = (int32_t)((1u << 30) + (rnd() & 0x3fffffff));
		int shift = (int)floor(log2((double)mult * typical / 40.0));

		shift = shift < 1 ? 1 : shift > 62 ? 62 : shift;
		memcpy(img + at + 4 * i, &mult, 4);
		img[at + 4 * n + i] = (uint8_t)shift;
	}
}

static void emit_sync(struct sim_test_stream *s, const void *insn, size_t len)
{
	uint32_t at = sim_test_emit(s, insn, len);

	((struct npu_insn_header *)(s->buf + at))->flags |= NPU_INSN_SYNC;
}

static struct npu_insn_conv2d conv(uint32_t in, uint32_t w, uint32_t b,
				   uint32_t q, uint32_t out, uint16_t h,
				   uint16_t wd, uint16_t cin, uint16_t cout,
				   uint8_t k, uint8_t stride, uint16_t groups)
{
	uint8_t pad = k / 2;
	uint16_t oh = (uint16_t)((h + 2 * pad - k) / stride + 1);
	uint16_t ow = (uint16_t)((wd + 2 * pad - k) / stride + 1);

	return (struct npu_insn_conv2d){
		.hdr = { .opcode = NPU_OP_CONV2D, .size = sizeof(struct npu_insn_conv2d) },
		.input = in, .weight = w, .bias = b, .quant = q, .output = out,
		.in_h = h, .in_w = wd, .in_c = cin, .out_c = cout,
		.out_h = oh, .out_w = ow, .k_h = k, .k_w = k,
		.stride_h = stride, .stride_w = stride, .dil_h = 1, .dil_w = 1,
		.pad_top = pad, .pad_left = pad, .pad_bottom = pad, .pad_right = pad,
		.groups = groups,
		.in_row_stride = (uint32_t)wd * cin, .in_pixel_stride = cin,
		.out_row_stride = (uint32_t)ow * cout, .out_pixel_stride = cout,
		.zp_in = 3, .zp_w = -2, .zp_out = 1, .act_min = -128, .act_max = 127,
	};
}

/* The job: load an SRAM image, run every splittable op and a tiny one, store SRAM. */
static void build_job(struct sim_test_stream *s)
{
	struct npu_insn_conv2d c3 = conv(X, W1, B1, Q1, O1, XH, XW, XC, 40, 3, 1, 1);
	struct npu_insn_conv2d dw = conv(X, W2, B2, Q2, O2, XH, XW, XC, XC, 3, 1, XC);
	struct npu_insn_conv2d c1 = conv(X, W1, B1, Q4, O3, XH, XW, XC, 33, 1, 1, 1);
	struct npu_insn_conv2d grp = conv(X, W3, B3, Q3, O4, XH, XW, XC, 36, 3, 2, 3);
	struct npu_insn_conv2d tiny = conv(TI, TW, TB, TQ, TO, 3, 3, 8, 8, 1, 1, 1);
	struct npu_insn_matmul mm = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(mm) },
		.a = MA, .b = MB, .bias = MBIAS, .quant = MQ, .output = MO,
		.m = 301, .k = 77, .n = 45, .a_stride = 77, .out_stride = 45,
		.zp_a = -5, .zp_b = 4, .zp_out = -3, .act_min = -128, .act_max = 127,
	};
	struct npu_insn_eltwise el = {
		.hdr = { .opcode = NPU_OP_ELTWISE, .size = sizeof(el) },
		.a = EA, .b = EB, .output = EO, .count = 150001,
		.mode = NPU_ELT_ADD, .bcast = NPU_BCAST_NONE, .shift = 8,
		.mult_a = 100, .mult_b = -77, .zp_a = 2, .zp_b = -1, .zp_out = 4,
		.act_min = -128, .act_max = 127,
	};
	struct npu_insn_eltwise elc = el;
	struct npu_insn_pool pool = {
		.hdr = { .opcode = NPU_OP_POOL, .size = sizeof(pool) },
		.input = X, .output = PO, .mode = NPU_POOL_AVG, .c = XC,
		.in_h = XH, .in_w = XW, .out_h = 19, .out_w = 15, .k_h = 3, .k_w = 3,
		.stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
		.pad_bottom = 1, .pad_right = 1,
		.in_row_stride = XW * XC, .in_pixel_stride = XC,
		.out_row_stride = 15 * XC, .out_pixel_stride = XC,
		.zp_in = 1, .zp_out = -1, .act_min = -128, .act_max = 127,
	};
	struct npu_insn_resize rs = {
		.hdr = { .opcode = NPU_OP_RESIZE, .size = sizeof(rs) },
		.input = X, .output = RO, .mode = NPU_RESIZE_BILINEAR, .c = XC,
		.in_h = XH, .in_w = XW, .out_h = 73, .out_w = 57,
		.in_row_stride = XW * XC, .in_pixel_stride = XC,
		.out_row_stride = 57 * XC, .out_pixel_stride = XC,
		.step_h = 2 * XH, .step_w = 2 * XW, .offset_h = XH - 73,
		.offset_w = XW - 57, .den_h = 2 * 73, .den_w = 2 * 57,
	};

	/* Channel broadcast over 21 channels, in place on a. */
	elc.output = EA;
	elc.count = 21 * 7001;
	elc.bcast = NPU_BCAST_CHANNEL;
	elc.channels = 21;
	sim_test_stream_init(s);
	sim_test_emit_copy(s, 0, NPU_SPACE_VA, IN_VA, NPU_SPACE_SRAM, 0,
			   SRAM / 4096, 4096, 4096, 4096);
	emit_sync(s, &c3, sizeof(c3));
	emit_sync(s, &dw, sizeof(dw));
	emit_sync(s, &c1, sizeof(c1));
	emit_sync(s, &grp, sizeof(grp));
	emit_sync(s, &tiny, sizeof(tiny));
	emit_sync(s, &mm, sizeof(mm));
	emit_sync(s, &el, sizeof(el));
	emit_sync(s, &elc, sizeof(elc));
	sim_test_emit_lut(s, NPU_INSN_SYNC, LI, LO, LT, 200003);
	emit_sync(s, &pool, sizeof(pool));
	emit_sync(s, &rs, sizeof(rs));
	/* In place over its own input: LUT reads every element before writing it. */
	sim_test_emit_lut(s, NPU_INSN_SYNC, LI, LI, LT, 100001);
	sim_test_emit_copy(s, NPU_INSN_SYNC, NPU_SPACE_SRAM, 0, NPU_SPACE_VA, OUT_VA,
			   SRAM / 4096, 4096, 4096, 4096);
}

static uint8_t *build_image(void)
{
	uint8_t *img = malloc(SRAM);

	assert_non_null(img);
	rng = 0x2545f4914f6cdd1dull;
	for (uint32_t i = 0; i < SRAM; i++)
		img[i] = (uint8_t)rnd();
	put_quant(img, Q1, 40, 9 * XC);
	put_quant(img, Q2, XC, 9);
	put_quant(img, MQ, 45, 77);
	put_quant(img, TQ, 8, 8);
	put_quant(img, Q3, 36, 9 * 8);
	put_quant(img, Q4, 33, XC);
	/* bias values small enough not to dominate */
	for (uint32_t i = 0; i < 48; i++) {
		int32_t b = (int32_t)(rnd() % 20001) - 10000;

		memcpy(img + B1 + 4 * i, &b, 4);
		memcpy(img + B2 + 4 * i, &b, 4);
		memcpy(img + MBIAS + 4 * i, &b, 4);
		memcpy(img + TB + 4 * (i % 8), &b, 4);
		memcpy(img + B3 + 4 * (i % 36), &b, 4);
	}
	return img;
}

struct job_result {
	struct npu_completion c;
	uint8_t *sram;		/* what the job stored */
};

static struct job_result run_job(unsigned int threads, const uint8_t *img,
				 const struct sim_test_stream *s)
{
	struct sim_test_host host;
	struct job_result r;
	uint64_t in, out;

	assert_int_equal(sim_test_host_setup(&host, MEM_SIZE), 0);
	assert_int_equal(npu_sim_set_threads(host.sim, threads), 0);
	assert_int_equal(npu_sim_threads(host.sim), threads);
	sim_test_ctx_init(&host, 1);
	in = sim_test_map_new(&host, 1, IN_VA, SRAM, NPU_PTE_READ);
	out = sim_test_map_new(&host, 1, OUT_VA, SRAM, NPU_PTE_READ | NPU_PTE_WRITE);
	sim_test_write(&host, in, img, SRAM);
	assert_true(sim_test_run_stream(&host, 0, 1, CMD_VA, s, &r.c));
	if (r.c.status != NPU_JOB_OK)
		fail_msg("%u threads: job ended %s at stream offset %u", threads,
			 npu_job_status_name(r.c.status), r.c.error_offset);
	r.sram = malloc(SRAM);
	assert_non_null(r.sram);
	sim_test_read(&host, out, r.sram, SRAM);
	sim_test_host_fini(&host);
	return r;
}

static void expect_same(const struct job_result *a, const struct job_result *b,
			const char *what)
{
	if (a->c.cycles != b->c.cycles || a->c.macs != b->c.macs)
		fail_msg("%s: cycles %llu / %llu, MACs %llu / %llu", what,
			 (unsigned long long)a->c.cycles, (unsigned long long)b->c.cycles,
			 (unsigned long long)a->c.macs, (unsigned long long)b->c.macs);
	if (memcmp(a->sram, b->sram, SRAM)) {
		size_t at = 0;

		while (a->sram[at] == b->sram[at])
			at++;
		fail_msg("%s: SRAM differs at 0x%zx (%d vs %d)", what, at,
			 (int8_t)a->sram[at], (int8_t)b->sram[at]);
	}
}

static void same_job_on_1_2_and_3_threads_is_byte_identical(void **state)
{
	static struct sim_test_stream s;
	uint8_t *img = build_image();
	struct job_result one, r;

	(void)state;
	build_job(&s);
	one = run_job(1, img, &s);
	/* The job did compute: the conv output differs from the random image. */
	assert_memory_not_equal(one.sram + O1, img + O1, 1024);
	for (unsigned int t = 2; t <= 3; t++) {
		r = run_job(t, img, &s);
		expect_same(&one, &r, t == 2 ? "2 threads" : "3 threads");
		free(r.sram);
	}
	/* Every op of two rows or more split, so the splits are uneven. */
	uint64_t old = npu_ops_set_split_min(0);

	r = run_job(3, img, &s);
	npu_ops_set_split_min(old);
	expect_same(&one, &r, "3 threads, everything split");
	free(r.sram);
	free(one.sram);
	free(img);
}

static void bad_thread_counts_are_refused_and_keep_the_setting(void **state)
{
	struct sim_test_host host;

	(void)state;
	assert_int_equal(sim_test_host_init(&host, 1u << 20), 0);
	assert_int_equal(npu_sim_threads(host.sim), 1);
	assert_int_equal(npu_sim_set_threads(host.sim, 0), -1);
	assert_int_equal(npu_sim_set_threads(host.sim, NPU_SIM_MAX_THREADS + 1), -1);
	assert_int_equal(npu_sim_set_threads(host.sim, UINT32_MAX), -1);
	assert_int_equal(npu_sim_threads(host.sim), 1);
	assert_int_equal(npu_sim_set_threads(host.sim, 3), 0);
	assert_int_equal(npu_sim_set_threads(host.sim, 0), -1);
	assert_int_equal(npu_sim_threads(host.sim), 3);
	/* Back to one thread stops the workers; again up, then destroy with them. */
	assert_int_equal(npu_sim_set_threads(host.sim, 1), 0);
	assert_int_equal(npu_sim_threads(host.sim), 1);
	assert_int_equal(npu_sim_set_threads(host.sim, 2), 0);
	assert_int_equal(npu_sim_set_threads(NULL, 2), -1);
	assert_int_equal(npu_sim_threads(NULL), 0);
	assert_null(npu_ops_pool_create(0));
	assert_null(npu_ops_pool_create(NPU_OPS_MAX_THREADS + 1));
	sim_test_host_fini(&host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_job_on_1_2_and_3_threads_is_byte_identical),
		cmocka_unit_test(bad_thread_counts_are_refused_and_keep_the_setting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
