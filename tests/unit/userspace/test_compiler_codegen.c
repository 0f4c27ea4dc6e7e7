// SPDX-License-Identifier: MIT
/*
 * Code generation end to end: a segment of every op kind is tiled for a
 * small SRAM budget (forcing row tiles, output-channel slices and double
 * buffering), run on the simulator, and must equal firmware-sim's untiled
 * reference ops bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler/codegen.h"
#include "npu/npu_device.h"
#include "npu_ops.h"

static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

static void fill_random(int8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (int8_t)(rnd() & 0xff);
}

struct quant_arrays {
	int32_t *bias, *mult;
	uint8_t *shift;
};

static void make_quant(struct quant_arrays *q, uint32_t n, uint32_t k)
{
	uint32_t i;

	q->bias = malloc(n * sizeof(*q->bias));
	q->mult = malloc(n * sizeof(*q->mult));
	q->shift = malloc(n);
	for (i = 0; i < n; i++) {
		q->bias[i] = (int32_t)(rnd() % 20001) - 10000;
		q->mult[i] = (int32_t)((1u << 30) + rnd() % (1u << 30));
		/* Accumulators of k products of 8-bit values: scale to ~int8. */
		q->shift[i] = (uint8_t)(31 + 8 + (k > 64 ? 4 : 2) + rnd() % 2);
	}
}

static void free_quant(struct quant_arrays *q)
{
	free(q->bias);
	free(q->mult);
	free(q->shift);
}

static uint32_t out_dim(uint32_t in, uint32_t k, uint32_t s, uint32_t d,
			uint32_t p0, uint32_t p1)
{
	return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

/* Reference "SRAM": big enough to hold every tensor untiled. */
#define REF_SIZE (4u << 20)

struct ref {
	uint8_t *mem;
	uint32_t top;
};

static uint32_t ref_put(struct ref *r, const void *src, size_t n)
{
	uint32_t off = r->top;

	if (src)
		memcpy(r->mem + off, src, n);
	r->top += (uint32_t)((n + 63) & ~63ull);
	assert_true(r->top <= REF_SIZE);
	return off;
}

static uint32_t ref_quant(struct ref *r, const struct quant_arrays *q, uint32_t n)
{
	uint32_t off = ref_put(r, NULL, (size_t)n * 5);

	memcpy(r->mem + off, q->mult, (size_t)n * 4);
	memcpy(r->mem + off + (size_t)n * 4, q->shift, n);
	return off;
}

static void run_segment(uint32_t sram_budget)
{
	struct npu_device_options opts;
	struct npu_device *dev = NULL;
	struct npu_buffer *arena_buf, *const_buf, *cmd_buf;
	struct npu_cmdbuf *cb;
	struct npu_codegen_result res;
	struct npu_codegen_target tgt = { 0 };
	struct npu_job_result jr;
	struct npu_error err = { 0 };
	struct quant_arrays q_conv, q_dw, q_mm, q_grp;
	int8_t *w_conv, *w_dw, *w_mm, *w_grp, lut[256], bvec[40];
	struct ref ref = { .mem = calloc(1, REF_SIZE) };
	struct npu_act acts[8];
	struct npu_lop lops[7];
	struct npu_segment_program prog = { .acts = acts, .lops = lops };
	uint32_t ref_off[8];
	uint64_t arena_bytes = 0;
	uint8_t *arena_map, *const_map, *cmd_map;
	const void *stream;
	size_t stream_size, i;
	char msg[256];

	rng_state = 42;
	npu_device_options_init(&opts);
	opts.backend = NPU_BACKEND_SIM;
	opts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&opts, &dev, msg, sizeof(msg)), NPU_OK);

	/* Tensors (NHWC int8). */
	memset(acts, 0, sizeof(acts));
	acts[0] = (struct npu_act){ .n = 2, .h = 13, .w = 11, .c = 24 };
	acts[1] = (struct npu_act){ .n = 2, .h = 13, .w = 11, .c = 40 };	/* conv 3x3 */
	acts[2] = (struct npu_act){ .n = 2, .h = out_dim(13, 3, 2, 1, 1, 1),
				    .w = out_dim(11, 3, 2, 1, 1, 1), .c = 40 };	/* dw s2 + LUT */
	acts[3] = (struct npu_act){ .n = 2, .h = out_dim(acts[2].h, 2, 2, 1, 0, 0),
				    .w = out_dim(acts[2].w, 2, 2, 1, 0, 0), .c = 40 };	/* max pool */
	acts[4] = acts[3];	/* add channel-broadcast constant */
	acts[5] = (struct npu_act){ .n = 1, .h = 1, .w = acts[4].n * acts[4].h * acts[4].w,
				    .c = 72 };	/* matmul over rows of act 4 */
	acts[6] = acts[1];	/* grouped 1x1 conv of act 1, 4 groups */
	acts[7] = acts[6];	/* standalone LUT */
	for (i = 0; i < 8; i++) {
		acts[i].q.zero_point = (int32_t)(rnd() % 41) - 20;
		acts[i].offset = arena_bytes;
		arena_bytes += (npu_act_bytes(&acts[i]) + 63) & ~63ull;
	}
	prog.num_acts = 8;

	w_conv = malloc(40 * 3 * 3 * 24);
	w_dw = malloc(40 * 3 * 3);
	w_mm = malloc(72 * 40);
	w_grp = malloc(40 * 10);
	fill_random(w_conv, 40 * 3 * 3 * 24);
	fill_random(w_dw, 40 * 9);
	fill_random(w_mm, 72 * 40);
	fill_random(w_grp, 40 * 10);
	fill_random(lut, 256);
	fill_random(bvec, 40);
	make_quant(&q_conv, 40, 216);
	make_quant(&q_dw, 40, 9);
	make_quant(&q_mm, 72, 40);
	make_quant(&q_grp, 40, 10);

	memset(lops, 0, sizeof(lops));
	lops[0] = (struct npu_lop){ .kind = NPU_LOP_CONV, .name = "conv3x3", .in = 0, .out = 1 };
	lops[0].conv.weight = w_conv;
	lops[0].conv.k_h = lops[0].conv.k_w = 3;
	lops[0].conv.stride_h = lops[0].conv.stride_w = 1;
	lops[0].conv.dil_h = lops[0].conv.dil_w = 1;
	lops[0].conv.pad_top = lops[0].conv.pad_left = 1;
	lops[0].conv.pad_bottom = lops[0].conv.pad_right = 1;
	lops[0].conv.groups = 1;
	lops[0].conv.q = (struct npu_lop_quant){ .bias = q_conv.bias, .mult = q_conv.mult,
		.shift = q_conv.shift, .act_min = -100, .act_max = 120 };

	lops[1] = (struct npu_lop){ .kind = NPU_LOP_CONV, .name = "dw3x3s2", .in = 1, .out = 2 };
	lops[1].conv.weight = w_dw;
	lops[1].conv.k_h = lops[1].conv.k_w = 3;
	lops[1].conv.stride_h = lops[1].conv.stride_w = 2;
	lops[1].conv.dil_h = lops[1].conv.dil_w = 1;
	lops[1].conv.pad_top = lops[1].conv.pad_left = 1;
	lops[1].conv.pad_bottom = lops[1].conv.pad_right = 1;
	lops[1].conv.groups = 40;
	lops[1].conv.q = (struct npu_lop_quant){ .bias = q_dw.bias, .mult = q_dw.mult,
		.shift = q_dw.shift, .act_min = -128, .act_max = 127, .lut = lut,
		.pre_act_zp = 5 };

	lops[2] = (struct npu_lop){ .kind = NPU_LOP_POOL, .name = "maxpool", .in = 2, .out = 3 };
	lops[2].pool.mode = NPU_POOL_MAX;
	lops[2].pool.k_h = lops[2].pool.k_w = 2;
	lops[2].pool.stride_h = lops[2].pool.stride_w = 2;
	lops[2].pool.act_min = -128;
	lops[2].pool.act_max = 127;

	lops[3] = (struct npu_lop){ .kind = NPU_LOP_ELTWISE, .name = "add_bias_vec", .in = 3, .out = 4 };
	lops[3].elt.mode = NPU_ELT_ADD;
	lops[3].elt.bcast = NPU_BCAST_CHANNEL;
	lops[3].elt.b_const = bvec;
	lops[3].elt.b_count = 40;
	lops[3].elt.mult_a = 1 << 20;
	lops[3].elt.mult_b = 3 << 19;
	lops[3].elt.shift = 21;
	lops[3].elt.zp_b = -3;
	lops[3].elt.act_min = -128;
	lops[3].elt.act_max = 127;

	lops[4] = (struct npu_lop){ .kind = NPU_LOP_MATMUL, .name = "fc", .in = 4, .out = 5 };
	lops[4].matmul.weight = w_mm;
	lops[4].matmul.q = (struct npu_lop_quant){ .bias = q_mm.bias, .mult = q_mm.mult,
		.shift = q_mm.shift, .act_min = -128, .act_max = 127 };

	lops[5] = (struct npu_lop){ .kind = NPU_LOP_CONV, .name = "grouped1x1", .in = 1, .out = 6 };
	lops[5].conv.weight = w_grp;
	lops[5].conv.k_h = lops[5].conv.k_w = 1;
	lops[5].conv.stride_h = lops[5].conv.stride_w = 1;
	lops[5].conv.dil_h = lops[5].conv.dil_w = 1;
	lops[5].conv.groups = 4;
	lops[5].conv.q = (struct npu_lop_quant){ .bias = NULL, .mult = q_grp.mult,
		.shift = q_grp.shift, .act_min = -128, .act_max = 127 };

	lops[6] = (struct npu_lop){ .kind = NPU_LOP_LUT, .name = "lut", .in = 6, .out = 7 };
	lops[6].lut.table = lut;
	prog.num_lops = 7;

	/* Device buffers and code. */
	assert_int_equal(npu_buffer_alloc(dev, arena_bytes, 0, &arena_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(arena_buf, (void **)&arena_map), NPU_OK);
	fill_random((int8_t *)arena_map, npu_act_bytes(&acts[0]));
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	tgt.sram_size = sram_budget;
	tgt.arena_va = npu_buffer_va(arena_buf);
	tgt.consts_va = 0;	/* first pass: learn the constant blob's size */
	assert_int_equal(npu_codegen_segment(&prog, &tgt, cb, &res, &err), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, res.consts_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &const_buf), NPU_OK);
	npu_codegen_result_free(&res);
	npu_cmdbuf_reset(cb);
	tgt.consts_va = npu_buffer_va(const_buf);
	if (npu_codegen_segment(&prog, &tgt, cb, &res, &err) != NPU_OK)
		fail_msg("codegen: %s", npu_error_msg(&err));
	assert_int_equal(npu_buffer_map(const_buf, (void **)&const_map), NPU_OK);
	memcpy(const_map, res.consts, res.consts_size);
	stream = npu_cmdbuf_data(cb, &stream_size);
	assert_int_equal(npu_buffer_alloc(dev, stream_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &cmd_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(cmd_buf, (void **)&cmd_map), NPU_OK);
	memcpy(cmd_map, stream, stream_size);
	{
		struct npu_buffer_use uses[] = {
			{ arena_buf, NPU_ACCESS_READ_WRITE },
			{ const_buf, NPU_ACCESS_READ_ONLY },
		};
		struct npu_submit s = {
			.cmd = cmd_buf, .cmd_size = stream_size,
			.buffers = uses, .num_buffers = 2,
		};

		if (npu_job_run(dev, &s, &jr) != NPU_OK)
			fail_msg("job: %s (status %s at offset %u)", npu_device_last_error(dev),
				 npu_job_status_str(jr.device_status), jr.error_offset);
	}
	assert_int_equal(jr.device_status, NPU_JOB_OK);
	assert_true(jr.cycles >= res.ideal_mac_cycles);
	assert_int_equal(jr.macs, res.macs);
	printf("# sram %u KiB: %llu instructions, %llu cycles, ideal %llu, macs %llu\n",
	       sram_budget / 1024, (unsigned long long)res.instructions,
	       (unsigned long long)jr.cycles, (unsigned long long)res.ideal_mac_cycles,
	       (unsigned long long)res.macs);

	/* Reference: each op untiled, in one big buffer. */
	for (i = 0; i < 8; i++)
		ref_off[i] = ref_put(&ref, NULL, npu_act_bytes(&acts[i]));
	memcpy(ref.mem + ref_off[0], arena_map + acts[0].offset, npu_act_bytes(&acts[0]));
	for (i = 0; i < prog.num_lops; i++) {
		const struct npu_lop *l = &lops[i];
		const struct npu_act *in = &acts[l->in], *out = &acts[l->out];
		uint32_t n;

		for (n = 0; n < in->n && l->kind != NPU_LOP_MATMUL; n++) {
			uint32_t in_off = ref_off[l->in] + n * in->h * in->w * in->c;
			uint32_t out_off = ref_off[l->out] + n * out->h * out->w * out->c;

			if (l->kind == NPU_LOP_CONV) {
				const struct npu_lop_quant *q = &l->conv.q;
				uint32_t wsz = out->c * l->conv.k_h * l->conv.k_w * (in->c / l->conv.groups);
				struct npu_insn_conv2d cv = {
					.input = in_off, .output = out_off,
					.weight = ref_put(&ref, l->conv.weight, wsz),
					.bias = q->bias ? ref_put(&ref, q->bias, out->c * 4) : 0,
					.quant = 0,
					.flags = q->bias ? 0 : NPU_CONV_NO_BIAS,
					.in_h = (uint16_t)in->h, .in_w = (uint16_t)in->w,
					.in_c = (uint16_t)in->c, .out_c = (uint16_t)out->c,
					.out_h = (uint16_t)out->h, .out_w = (uint16_t)out->w,
					.k_h = l->conv.k_h, .k_w = l->conv.k_w,
					.stride_h = l->conv.stride_h, .stride_w = l->conv.stride_w,
					.dil_h = l->conv.dil_h, .dil_w = l->conv.dil_w,
					.pad_top = l->conv.pad_top, .pad_left = l->conv.pad_left,
					.pad_bottom = l->conv.pad_bottom, .pad_right = l->conv.pad_right,
					.groups = l->conv.groups,
					.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
					.out_row_stride = out->w * out->c, .out_pixel_stride = out->c,
					.zp_in = (int16_t)in->q.zero_point,
					.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
					.act_min = q->act_min, .act_max = q->act_max,
				};
				struct quant_arrays qa = { .mult = (int32_t *)q->mult,
							   .shift = (uint8_t *)q->shift };

				cv.quant = ref_quant(&ref, &qa, out->c);
				npu_ref_conv2d(&cv, ref.mem);
				if (q->lut) {
					struct npu_insn_lut lt = {
						.input = out_off, .output = out_off,
						.table = ref_put(&ref, q->lut, 256),
						.count = out->h * out->w * out->c,
					};
					npu_ref_lut(&lt, ref.mem);
				}
			} else if (l->kind == NPU_LOP_POOL) {
				struct npu_insn_pool p = {
					.input = in_off, .output = out_off,
					.mode = l->pool.mode, .flags = l->pool.flags, .c = (uint16_t)in->c,
					.in_h = (uint16_t)in->h, .in_w = (uint16_t)in->w,
					.out_h = (uint16_t)out->h, .out_w = (uint16_t)out->w,
					.k_h = l->pool.k_h, .k_w = l->pool.k_w,
					.stride_h = l->pool.stride_h, .stride_w = l->pool.stride_w,
					.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
					.out_row_stride = out->w * out->c, .out_pixel_stride = out->c,
					.zp_in = (int16_t)in->q.zero_point,
					.zp_out = (int16_t)out->q.zero_point,
					.act_min = l->pool.act_min, .act_max = l->pool.act_max,
				};
				npu_ref_pool(&p, ref.mem);
			} else if (l->kind == NPU_LOP_ELTWISE) {
				struct npu_insn_eltwise el = {
					.a = in_off, .b = ref_put(&ref, l->elt.b_const, l->elt.b_count),
					.output = out_off, .count = out->h * out->w * out->c,
					.mode = l->elt.mode, .bcast = l->elt.bcast, .shift = l->elt.shift,
					.channels = out->c, .mult_a = l->elt.mult_a, .mult_b = l->elt.mult_b,
					.zp_a = (int16_t)in->q.zero_point, .zp_b = l->elt.zp_b,
					.zp_out = (int16_t)out->q.zero_point,
					.act_min = l->elt.act_min, .act_max = l->elt.act_max,
				};
				npu_ref_eltwise(&el, ref.mem);
			} else if (l->kind == NPU_LOP_LUT) {
				struct npu_insn_lut lt = {
					.input = in_off, .output = out_off,
					.table = ref_put(&ref, l->lut.table, 256),
					.count = out->h * out->w * out->c,
				};
				npu_ref_lut(&lt, ref.mem);
			}
		}
		if (l->kind == NPU_LOP_MATMUL) {
			const struct npu_lop_quant *q = &l->matmul.q;
			struct quant_arrays qa = { .mult = (int32_t *)q->mult,
						   .shift = (uint8_t *)q->shift };
			struct npu_insn_matmul mm = {
				.a = ref_off[l->in], .b = ref_put(&ref, l->matmul.weight, out->c * in->c),
				.bias = ref_put(&ref, q->bias, out->c * 4),
				.output = ref_off[l->out],
				.m = in->n * in->h * in->w, .k = in->c, .n = out->c,
				.a_stride = in->c, .out_stride = out->c,
				.zp_a = (int16_t)in->q.zero_point,
				.zp_out = (int16_t)out->q.zero_point,
				.act_min = q->act_min, .act_max = q->act_max,
			};

			mm.quant = ref_quant(&ref, &qa, out->c);
			npu_ref_matmul(&mm, ref.mem);
		}
	}
	for (i = 1; i < 8; i++) {
		if (memcmp(ref.mem + ref_off[i], arena_map + acts[i].offset,
			   npu_act_bytes(&acts[i])))
			fail_msg("tensor %zu (output of %s) differs from the reference", i,
				 lops[i - 1].name);
	}

	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd_buf);
	npu_buffer_free(const_buf);
	npu_buffer_free(arena_buf);
	npu_device_close(dev);
	free(w_conv);
	free(w_dw);
	free(w_mm);
	free(w_grp);
	free_quant(&q_conv);
	free_quant(&q_dw);
	free_quant(&q_mm);
	free_quant(&q_grp);
	free(ref.mem);
}

/* The whole segment fits at once: one tile per op. */
static void test_segment_untiled_matches_reference(void **state)
{
	(void)state;
	run_segment(NPU_SRAM_SIZE);
}

/* A 24 KiB budget splits rows, output channels and vectors into tiles. */
static void test_segment_tiled_matches_reference(void **state)
{
	(void)state;
	run_segment(24 * 1024);
}

static void test_too_small_sram_is_reported(void **state)
{
	struct npu_act acts[2] = {
		{ .n = 1, .h = 4, .w = 200, .c = 64 },
		{ .n = 1, .h = 4, .w = 200, .c = 64 },
	};
	int8_t w[64 * 64] = { 0 };
	int32_t mult[64];
	uint8_t shift[64];
	struct npu_lop l = { .kind = NPU_LOP_CONV, .name = "wide", .in = 0, .out = 1 };
	struct npu_segment_program prog = { .acts = acts, .num_acts = 2, .lops = &l, .num_lops = 1 };
	char why[160] = "";

	(void)state;
	l.conv.weight = w;
	l.conv.k_h = l.conv.k_w = 1;
	l.conv.stride_h = l.conv.stride_w = l.conv.dil_h = l.conv.dil_w = 1;
	l.conv.groups = 1;
	l.conv.q.mult = mult;
	l.conv.q.shift = shift;
	assert_true(npu_lop_fits(&prog, &l, NPU_SRAM_SIZE, why, sizeof(why)));
	assert_false(npu_lop_fits(&prog, &l, 16 * 1024, why, sizeof(why)));
	assert_non_null(strstr(why, "SRAM"));
}

/*
 * COPY lops (Concat, Split, Slice as addressing): a channel concat of two
 * tensors (one plain DMA, one requantized through a LUT), a channel slice
 * of the result, and one long row that a small SRAM must take in pieces.
 * The device must equal a host loop over the same rows and strides.
 */
static void run_copies(uint32_t sram_budget)
{
	struct npu_device_options opts;
	struct npu_device *dev = NULL;
	struct npu_buffer *arena_buf, *const_buf, *cmd_buf;
	struct npu_cmdbuf *cb;
	struct npu_codegen_result res;
	struct npu_codegen_target tgt = { 0 };
	struct npu_job_result jr;
	struct npu_error err = { 0 };
	struct npu_act acts[7];
	struct npu_lop lops[5];
	struct npu_segment_program prog = { .acts = acts, .lops = lops };
	int8_t lut_b[256], lut_d[256], lut_f[256];
	size_t r;
	uint8_t *arena_map, *const_map, *cmd_map, *want;
	uint64_t arena_bytes = 0;
	const void *stream;
	size_t stream_size, i, j, k;
	char msg[256];

	rng_state = 7;
	npu_device_options_init(&opts);
	opts.backend = NPU_BACKEND_SIM;
	opts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&opts, &dev, msg, sizeof(msg)), NPU_OK);

	memset(acts, 0, sizeof(acts));
	acts[0] = (struct npu_act){ .n = 2, .h = 5, .w = 7, .c = 24 };	/* a */
	acts[1] = (struct npu_act){ .n = 2, .h = 5, .w = 7, .c = 17 };	/* b */
	acts[2] = (struct npu_act){ .n = 2, .h = 5, .w = 7, .c = 41 };	/* concat(a, b) */
	acts[3] = (struct npu_act){ .n = 2, .h = 5, .w = 7, .c = 11 };	/* its channels 13..23 */
	acts[4] = (struct npu_act){ .n = 1, .h = 1, .w = 1, .c = 70001 };	/* a long row */
	acts[5] = acts[4];
	acts[6] = (struct npu_act){ .n = 1, .h = 1, .w = 24, .c = 70 };	/* a transposed */
	for (i = 0; i < 7; i++) {
		acts[i].offset = arena_bytes;
		arena_bytes += (npu_act_bytes(&acts[i]) + 63) & ~63ull;
	}
	prog.num_acts = 7;
	fill_random(lut_b, 256);
	fill_random(lut_d, 256);
	fill_random(lut_f, 256);

	memset(lops, 0, sizeof(lops));
	lops[0] = (struct npu_lop){ .kind = NPU_LOP_COPY, .name = "cat_a", .in = 0, .out = 2 };
	lops[0].copy.rows = 2 * 5 * 7;
	lops[0].copy.row_bytes = 24;
	lops[0].copy.src_stride = 24;
	lops[0].copy.dst_stride = 41;
	lops[1] = (struct npu_lop){ .kind = NPU_LOP_COPY, .name = "cat_b", .in = 1, .out = 2 };
	lops[1].copy.rows = 2 * 5 * 7;
	lops[1].copy.row_bytes = 17;
	lops[1].copy.src_stride = 17;
	lops[1].copy.dst_off = 24;
	lops[1].copy.dst_stride = 41;
	lops[1].copy.lut = lut_b;
	lops[2] = (struct npu_lop){ .kind = NPU_LOP_COPY, .name = "slice", .in = 2, .out = 3 };
	lops[2].copy.rows = 2 * 5 * 7;
	lops[2].copy.row_bytes = 11;
	lops[2].copy.src_off = 13;
	lops[2].copy.src_stride = 41;
	lops[2].copy.dst_stride = 11;
	lops[2].copy.lut = lut_d;
	lops[3] = (struct npu_lop){ .kind = NPU_LOP_COPY, .name = "long", .in = 4, .out = 5 };
	lops[3].copy.rows = 1;
	lops[3].copy.row_bytes = 70001;
	lops[3].copy.src_stride = lops[3].copy.dst_stride = 70001;
	lops[3].copy.lut = lut_f;
	/* A transpose [70][24] -> [24][70]: 24 DMAs gathering a column each. */
	lops[4] = (struct npu_lop){ .kind = NPU_LOP_COPY, .name = "transpose", .in = 0, .out = 6 };
	lops[4].copy.rows = 70;
	lops[4].copy.row_bytes = 1;
	lops[4].copy.src_stride = 24;
	lops[4].copy.dst_stride = 1;
	lops[4].copy.count = 24;
	lops[4].copy.src_step = 1;
	lops[4].copy.dst_step = 70;
	lops[4].copy.lut = lut_b;
	prog.num_lops = 5;

	assert_int_equal(npu_buffer_alloc(dev, arena_bytes, 0, &arena_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(arena_buf, (void **)&arena_map), NPU_OK);
	fill_random((int8_t *)arena_map, arena_bytes);
	want = malloc(arena_bytes);
	memcpy(want, arena_map, arena_bytes);
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	tgt.sram_size = sram_budget;
	tgt.arena_va = npu_buffer_va(arena_buf);
	assert_int_equal(npu_codegen_segment(&prog, &tgt, cb, &res, &err), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, res.consts_size ? res.consts_size : 64,
					  NPU_BUFFER_DEVICE_READ_ONLY, &const_buf), NPU_OK);
	npu_codegen_result_free(&res);
	npu_cmdbuf_reset(cb);
	tgt.consts_va = npu_buffer_va(const_buf);
	if (npu_codegen_segment(&prog, &tgt, cb, &res, &err) != NPU_OK)
		fail_msg("codegen: %s", npu_error_msg(&err));
	assert_int_equal(npu_buffer_map(const_buf, (void **)&const_map), NPU_OK);
	memcpy(const_map, res.consts, res.consts_size);
	stream = npu_cmdbuf_data(cb, &stream_size);
	assert_int_equal(npu_buffer_alloc(dev, stream_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &cmd_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(cmd_buf, (void **)&cmd_map), NPU_OK);
	memcpy(cmd_map, stream, stream_size);
	{
		struct npu_buffer_use uses[] = {
			{ arena_buf, NPU_ACCESS_READ_WRITE },
			{ const_buf, NPU_ACCESS_READ_ONLY },
		};
		struct npu_submit s = {
			.cmd = cmd_buf, .cmd_size = stream_size,
			.buffers = uses, .num_buffers = 2,
		};

		if (npu_job_run(dev, &s, &jr) != NPU_OK)
			fail_msg("job: %s (status %s at offset %u)", npu_device_last_error(dev),
				 npu_job_status_str(jr.device_status), jr.error_offset);
	}
	assert_int_equal(jr.device_status, NPU_JOB_OK);
	assert_int_equal(jr.macs, 0);
	/* No MAC work, but DRAM traffic: every copied byte read and written. */
	assert_true(res.dram_bytes >= 2ull * (2 * 70 * 24 + 70 * 17 + 70 * 11 + 70001));
	printf("# copies, sram %u KiB: %llu instructions, %llu cycles\n", sram_budget / 1024,
	       (unsigned long long)res.instructions, (unsigned long long)jr.cycles);

	/* The host's version of the same rows, in program order. */
	for (i = 0; i < prog.num_lops; i++) {
		const struct npu_lop *l = &lops[i];

		for (r = 0; r < (l->copy.count > 1 ? l->copy.count : 1); r++)
			for (j = 0; j < l->copy.rows; j++)
				for (k = 0; k < l->copy.row_bytes; k++) {
					int8_t v = (int8_t)want[acts[l->in].offset + l->copy.src_off +
								r * l->copy.src_step +
								j * l->copy.src_stride + k];

					want[acts[l->out].offset + l->copy.dst_off + r * l->copy.dst_step +
					     j * l->copy.dst_stride + k] =
						(uint8_t)(l->copy.lut ? l->copy.lut[(uint8_t)(v + 128)] : v);
				}
	}
	/* The transpose, stated directly. */
	for (j = 0; j < 70; j++)
		for (k = 0; k < 24; k++)
			assert_int_equal(want[acts[6].offset + k * 70 + j],
					 (uint8_t)lut_b[(uint8_t)((int8_t)want[acts[0].offset + j * 24 + k] + 128)]);
	for (i = 2; i < 7; i++)
		if (i != 4 && memcmp(want + acts[i].offset, arena_map + acts[i].offset,
				     npu_act_bytes(&acts[i])))
			fail_msg("tensor %zu differs from the host's copy", i);

	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd_buf);
	npu_buffer_free(const_buf);
	npu_buffer_free(arena_buf);
	npu_device_close(dev);
	free(want);
}

static void test_copies_match_the_host(void **state)
{
	(void)state;
	run_copies(NPU_SRAM_SIZE);
	run_copies(24 * 1024);	/* row tiles, and the long row in pieces */
}

/* A copy reaching outside its tensors is refused with the reason. */
static void test_copy_outside_its_tensors_is_refused(void **state)
{
	struct npu_act acts[2] = {
		{ .n = 1, .h = 2, .w = 3, .c = 8 },
		{ .n = 1, .h = 2, .w = 3, .c = 12 },
	};
	struct npu_lop l = { .kind = NPU_LOP_COPY, .name = "cat", .in = 0, .out = 1 };
	struct npu_segment_program prog = { .acts = acts, .num_acts = 2, .lops = &l, .num_lops = 1 };
	char why[160] = "";

	(void)state;
	l.copy.rows = 6;
	l.copy.row_bytes = 8;
	l.copy.src_stride = 8;
	l.copy.dst_off = 4;
	l.copy.dst_stride = 12;
	assert_true(npu_lop_fits(&prog, &l, NPU_SRAM_SIZE, why, sizeof(why)));
	l.copy.dst_off = 5;	/* the last row would end at byte 73 of 72 */
	assert_false(npu_lop_fits(&prog, &l, NPU_SRAM_SIZE, why, sizeof(why)));
	assert_non_null(strstr(why, "outside"));
}

/*
 * A kernel = stride ConvTranspose two ways in one segment: as phase
 * convolutions (one 1x1 conv per output row phase, interleaved in place)
 * and as CONV2D with zero insertion and the flipped kernel. With the same
 * per-channel requantization they must agree bit for bit, tiled or not.
 */
/* run_phases_of() generates in array mode 0 (the timing of ISA 1.4). */
static bool phases_plain_mode;

/*
 * in [2][h][w][cin] -> [2][2h][2w][oc]. Narrow layers keep the row phases
 * apart; a wide one with few output channels joins them into one CONV2D
 * whose store interleaves the rows (npu_phase_row_cycles()).
 */
static void run_phases_of(uint32_t sram_budget, bool with_lut, uint32_t fold, uint32_t h,
			  uint32_t w, uint32_t cin, uint32_t oc, bool want_joined)
{
	struct npu_device_options opts;
	struct npu_device *dev = NULL;
	struct npu_buffer *arena_buf, *const_buf, *cmd_buf;
	struct npu_cmdbuf *cb;
	struct npu_codegen_result res;
	struct npu_codegen_target tgt = { 0 };
	struct npu_job_result jr;
	struct npu_error err = { 0 };
	const uint32_t s = 2;
	struct npu_act acts[3];
	struct npu_lop lops[2];
	struct npu_segment_program prog = { .acts = acts, .lops = lops,
					    .opts = { .no_array_modes = phases_plain_mode } };
	struct quant_arrays q;
	uint32_t f = fold ? fold : 1, g;
	int32_t *bias4 = calloc(4 * oc, 4), *mult4 = calloc(4 * oc, 4);
	int32_t *bias8 = calloc(4 * f * oc, 4), *mult8 = calloc(4 * f * oc, 4);
	uint8_t *shift4 = calloc(4 * oc, 1), *shift8 = calloc(4 * f * oc, 1);
	uint8_t *arena_map, *const_map, *cmd_map;
	int8_t *wph = calloc(4 * oc, cin), *wzi = calloc(4 * oc, cin), lut[256], *wfold;
	bool joined;
	uint64_t arena_bytes = 0;
	const void *stream;
	size_t stream_size, i;
	uint32_t dy, dx, o, ci;
	char msg[256];

	rng_state = 11;
	npu_device_options_init(&opts);
	opts.backend = NPU_BACKEND_SIM;
	opts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&opts, &dev, msg, sizeof(msg)), NPU_OK);
	acts[0] = (struct npu_act){ .n = 2, .h = h, .w = w, .c = cin };
	acts[1] = (struct npu_act){ .n = 2, .h = 2 * h, .w = 2 * w, .c = oc };
	acts[2] = acts[1];
	for (i = 0; i < 3; i++) {
		acts[i].q.zero_point = (int32_t)(rnd() % 41) - 20;
		acts[i].offset = arena_bytes;
		arena_bytes += (npu_act_bytes(&acts[i]) + 63) & ~63ull;
	}
	acts[2].q = acts[1].q;
	prog.num_acts = 3;
	fill_random(wph, (size_t)4 * oc * cin);
	fill_random(lut, sizeof(lut));
	make_quant(&q, oc, cin);
	for (dy = 0; dy < s; dy++)
		for (dx = 0; dx < s; dx++)
			for (o = 0; o < oc; o++) {
				size_t r = (dy * s + dx) * oc + o;

				bias4[r] = q.bias[o];
				mult4[r] = q.mult[o];
				shift4[r] = q.shift[o];
				/* [o][kh][kw][ci] of the flipped kernel */
				for (ci = 0; ci < cin; ci++)
					wzi[((o * s + (s - 1 - dy)) * s + (s - 1 - dx)) * cin + ci] =
						wph[r * cin + ci];
			}
	/* Folded: row (dy, g, dx, o) reads input pixel g of the wide pixel. */
	wfold = calloc((size_t)s * f * s * oc, (size_t)f * cin);
	for (dy = 0; dy < s; dy++)
		for (g = 0; g < f; g++)
			for (dx = 0; dx < s; dx++)
				for (o = 0; o < oc; o++)
					memcpy(wfold + ((((size_t)dy * f + g) * s + dx) * oc + o) * f * cin +
					       (size_t)g * cin, wph + ((dy * s + dx) * oc + o) * cin, cin);
	memset(lops, 0, sizeof(lops));
	lops[0] = (struct npu_lop){ .kind = NPU_LOP_CONV, .name = "phases", .in = 0, .out = 1 };
	lops[0].conv.weight = fold ? wfold : wph;
	lops[0].conv.fold_w = (uint8_t)fold;
	lops[0].conv.k_h = lops[0].conv.k_w = 1;
	lops[0].conv.stride_h = lops[0].conv.stride_w = 1;
	lops[0].conv.dil_h = lops[0].conv.dil_w = 1;
	lops[0].conv.groups = 1;
	lops[0].conv.phase_h = lops[0].conv.phase_w = (uint8_t)s;
	if (fold) {	/* the same channel quantization repeated for every g */
		for (i = s * s * oc; i-- > 0;) {
			dy = (uint32_t)(i / (s * oc));
			for (g = 0; g < f; g++) {
				size_t r = ((size_t)dy * f + g) * s * oc + i % (s * oc);

				bias8[r] = bias4[i];
				mult8[r] = mult4[i];
				shift8[r] = shift4[i];
			}
		}
	}
	lops[0].conv.q = (struct npu_lop_quant){ .bias = fold ? bias8 : bias4,
		.mult = fold ? mult8 : mult4, .shift = fold ? shift8 : shift4,
		.act_min = -120, .act_max = 110, .lut = with_lut ? lut : NULL, .pre_act_zp = 3 };
	lops[1] = (struct npu_lop){ .kind = NPU_LOP_CONV, .name = "zero_insert", .in = 0, .out = 2 };
	lops[1].conv.weight = wzi;
	lops[1].conv.k_h = lops[1].conv.k_w = (uint8_t)s;
	lops[1].conv.stride_h = lops[1].conv.stride_w = 1;
	lops[1].conv.dil_h = lops[1].conv.dil_w = 1;
	lops[1].conv.pad_top = lops[1].conv.pad_left = (uint8_t)(s - 1);
	lops[1].conv.pad_bottom = lops[1].conv.pad_right = (uint8_t)(s - 1);
	lops[1].conv.groups = 1;
	lops[1].conv.ins_h = lops[1].conv.ins_w = (uint8_t)(s - 1);
	lops[1].conv.q = (struct npu_lop_quant){ .bias = q.bias, .mult = q.mult, .shift = q.shift,
		.act_min = -120, .act_max = 110, .lut = with_lut ? lut : NULL, .pre_act_zp = 3 };
	prog.num_lops = 2;

	assert_int_equal(npu_buffer_alloc(dev, arena_bytes, 0, &arena_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(arena_buf, (void **)&arena_map), NPU_OK);
	fill_random((int8_t *)arena_map, npu_act_bytes(&acts[0]));
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	tgt.sram_size = sram_budget;
	tgt.arena_va = npu_buffer_va(arena_buf);
	assert_int_equal(npu_codegen_segment(&prog, &tgt, cb, &res, &err), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, res.consts_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &const_buf), NPU_OK);
	npu_codegen_result_free(&res);
	npu_cmdbuf_reset(cb);
	tgt.consts_va = npu_buffer_va(const_buf);
	tgt.profile_va = 0;
	if (npu_codegen_segment(&prog, &tgt, cb, &res, &err) != NPU_OK)
		fail_msg("codegen: %s", npu_error_msg(&err));
	assert_int_equal(npu_buffer_map(const_buf, (void **)&const_map), NPU_OK);
	memcpy(const_map, res.consts, res.consts_size);
	stream = npu_cmdbuf_data(cb, &stream_size);
	assert_int_equal(npu_buffer_alloc(dev, stream_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &cmd_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(cmd_buf, (void **)&cmd_map), NPU_OK);
	memcpy(cmd_map, stream, stream_size);
	{
		struct npu_buffer_use uses[] = {
			{ arena_buf, NPU_ACCESS_READ_WRITE },
			{ const_buf, NPU_ACCESS_READ_ONLY },
		};
		struct npu_submit sub = {
			.cmd = cmd_buf, .cmd_size = stream_size,
			.buffers = uses, .num_buffers = 2,
		};

		if (npu_job_run(dev, &sub, &jr) != NPU_OK)
			fail_msg("job: %s (status %s at offset %u)", npu_device_last_error(dev),
				 npu_job_status_str(jr.device_status), jr.error_offset);
	}
	assert_int_equal(jr.device_status, NPU_JOB_OK);
	/* Both count the real MACs: every output element, every input channel. */
	assert_int_equal(res.lop_macs[0], 2ull * 2 * h * 2 * w * oc * cin);
	npu_phase_row_cycles(&prog.opts, w, cin, oc, s, s, f, &joined);
	assert_int_equal(joined, want_joined);
	printf("# phases %ux%ux%u -> %u, fold %u, sram %u KiB%s%s: %llu cycles in all\n", h, w,
	       cin, oc, f, sram_budget / 1024, joined ? ", joined" : "",
	       with_lut ? ", LUT" : "", (unsigned long long)jr.cycles);
	if (memcmp(arena_map + acts[1].offset, arena_map + acts[2].offset,
		   npu_act_bytes(&acts[1])))
		fail_msg("phase convolutions differ from zero insertion");

	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd_buf);
	npu_buffer_free(const_buf);
	npu_buffer_free(arena_buf);
	npu_device_close(dev);
	free_quant(&q);
	free(wfold);
	free(bias4);
	free(mult4);
	free(bias8);
	free(mult8);
	free(shift4);
	free(shift8);
	free(wph);
	free(wzi);
}

static void run_phases(uint32_t sram_budget, bool with_lut, uint32_t fold)
{
	run_phases_of(sram_budget, with_lut, fold, 9, 8, 16, 3, false);
}

static void test_phase_split_transposed_conv_equals_zero_insertion(void **state)
{
	(void)state;
	run_phases(NPU_SRAM_SIZE, false, 0);
	run_phases(NPU_SRAM_SIZE, true, 0);
	run_phases(3 * 1024, true, 0);	/* a few input rows per tile */
	run_phases(NPU_SRAM_SIZE, true, 2);	/* two input pixels per wide pixel */
	run_phases(6 * 1024, false, 4);
	/*
	 * PP-OCR det's two ConvTranspose layers, fewer rows: joined in array
	 * mode 0. The array modes of ISA 1.5 fill the columns of the phases
	 * apart as well, and then the cheaper store keeps them apart.
	 */
	phases_plain_mode = true;
	run_phases_of(NPU_SRAM_SIZE, true, 8, 11, 320, 24, 1, true);
	run_phases_of(NPU_SRAM_SIZE, false, 0, 7, 160, 24, 24, true);
	run_phases_of(60 * 1024, true, 8, 13, 320, 24, 1, true);	/* several tiles */
	/* Full size: tall tiles, stored by wide pixel (a DMA row per input row). */
	run_phases_of(NPU_SRAM_SIZE, true, 8, 320, 320, 24, 1, true);
	phases_plain_mode = false;
	run_phases_of(NPU_SRAM_SIZE, true, 8, 11, 320, 24, 1, false);
	run_phases_of(NPU_SRAM_SIZE, false, 0, 7, 160, 24, 24, false);
}

/*
 * A conv over 3 input channels (3x3, stride 2, pad 1, as a network's first
 * layer) folded into wide pixels and column phases (npu_lop.conv.fold_w)
 * must equal the same conv run plain, bit for bit, tiled or not.
 */
static void run_fold(uint32_t sram_budget, uint32_t stride, uint32_t fold)
{
	struct npu_device_options opts;
	struct npu_device *dev = NULL;
	struct npu_buffer *arena_buf, *const_buf, *cmd_buf;
	struct npu_cmdbuf *cb;
	struct npu_codegen_result res;
	struct npu_codegen_target tgt = { 0 };
	struct npu_job_result jr;
	struct npu_error err = { 0 };
	const uint32_t cin = 3, oc = 5, k = 3, h = 11, w = 40;
	uint32_t ow = (w + 2 - k) / stride + 1, oh = (h + 2 - k) / stride + 1;
	uint32_t R = fold / stride, r, o, kh, t, q, ci;
	struct npu_act acts[3];
	struct npu_lop lops[2];
	struct npu_segment_program prog = { .acts = acts, .lops = lops };
	struct quant_arrays qa;
	int8_t wplain[5 * 3 * 3 * 3], *wfold, *p;
	uint8_t *arena_map, *const_map, *cmd_map;
	uint64_t arena_bytes = 0;
	struct npu_fold_phase ph;
	const void *stream;
	size_t stream_size, i;
	char msg[256];

	rng_state = 5;
	npu_device_options_init(&opts);
	opts.backend = NPU_BACKEND_SIM;
	opts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&opts, &dev, msg, sizeof(msg)), NPU_OK);
	acts[0] = (struct npu_act){ .n = 2, .h = h, .w = w, .c = cin };
	acts[1] = (struct npu_act){ .n = 2, .h = oh, .w = ow, .c = oc };
	acts[2] = acts[1];
	for (i = 0; i < 3; i++) {
		acts[i].q.zero_point = (int32_t)(rnd() % 41) - 20;
		acts[i].offset = arena_bytes;
		arena_bytes += (npu_act_bytes(&acts[i]) + 63) & ~63ull;
	}
	acts[2].q = acts[1].q;
	prog.num_acts = 3;
	fill_random(wplain, sizeof(wplain));
	make_quant(&qa, oc, 27);
	/* The folded kernel, built independently of the compiler's code. */
	assert_true(npu_conv_fold_phase(w, ow, cin, oc, k, k, stride, 1, fold, R - 1, &ph));
	wfold = calloc(1, ph.weight_off + (size_t)oc * k * ph.k_w * fold * cin);
	for (r = 0; r < R; r++) {
		assert_true(npu_conv_fold_phase(w, ow, cin, oc, k, k, stride, 1, fold, r, &ph));
		p = wfold + ph.weight_off;
		for (o = 0; o < oc; o++)
			for (kh = 0; kh < k; kh++)
				for (t = 0; t < ph.k_w; t++)
					for (q = 0; q < fold; q++)
						for (ci = 0; ci < cin; ci++, p++) {
							int kw = (ph.first + (int)t) * (int)fold + (int)q -
								 ((int)(stride * r) - 1);

							if (kw >= 0 && kw < (int)k)
								*p = wplain[((o * k + kh) * k + kw) * cin + ci];
						}
	}
	memset(lops, 0, sizeof(lops));
	for (i = 0; i < 2; i++) {
		lops[i] = (struct npu_lop){ .kind = NPU_LOP_CONV, .in = 0, .out = (uint32_t)i + 1 };
		lops[i].conv.k_h = lops[i].conv.k_w = (uint8_t)k;
		lops[i].conv.stride_h = lops[i].conv.stride_w = (uint8_t)stride;
		lops[i].conv.dil_h = lops[i].conv.dil_w = 1;
		lops[i].conv.pad_top = lops[i].conv.pad_left = 1;
		lops[i].conv.pad_bottom = lops[i].conv.pad_right = 1;
		lops[i].conv.groups = 1;
		lops[i].conv.q = (struct npu_lop_quant){ .bias = qa.bias, .mult = qa.mult,
			.shift = qa.shift, .act_min = -100, .act_max = 120 };
	}
	lops[0].name = "plain";
	lops[0].conv.weight = wplain;
	lops[1].name = "folded";
	lops[1].conv.weight = wfold;
	lops[1].conv.fold_w = (uint8_t)fold;
	prog.num_lops = 2;

	assert_int_equal(npu_buffer_alloc(dev, arena_bytes, 0, &arena_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(arena_buf, (void **)&arena_map), NPU_OK);
	fill_random((int8_t *)arena_map, npu_act_bytes(&acts[0]));
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	tgt.sram_size = sram_budget;
	tgt.arena_va = npu_buffer_va(arena_buf);
	assert_int_equal(npu_codegen_segment(&prog, &tgt, cb, &res, &err), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, res.consts_size + 16, NPU_BUFFER_DEVICE_READ_ONLY,
					  &const_buf), NPU_OK);
	npu_codegen_result_free(&res);
	npu_cmdbuf_reset(cb);
	tgt.consts_va = npu_buffer_va(const_buf);
	if (npu_codegen_segment(&prog, &tgt, cb, &res, &err) != NPU_OK)
		fail_msg("codegen: %s", npu_error_msg(&err));
	/* Both report the convolution's own MACs, not the folded zeros. */
	assert_int_equal(res.lop_macs[0], res.lop_macs[1]);
	assert_int_equal(npu_buffer_map(const_buf, (void **)&const_map), NPU_OK);
	memcpy(const_map, res.consts, res.consts_size);
	stream = npu_cmdbuf_data(cb, &stream_size);
	assert_int_equal(npu_buffer_alloc(dev, stream_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &cmd_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(cmd_buf, (void **)&cmd_map), NPU_OK);
	memcpy(cmd_map, stream, stream_size);
	{
		struct npu_buffer_use uses[] = {
			{ arena_buf, NPU_ACCESS_READ_WRITE },
			{ const_buf, NPU_ACCESS_READ_ONLY },
		};
		struct npu_submit sub = {
			.cmd = cmd_buf, .cmd_size = stream_size,
			.buffers = uses, .num_buffers = 2,
		};

		if (npu_job_run(dev, &sub, &jr) != NPU_OK)
			fail_msg("job: %s (status %s at offset %u)", npu_device_last_error(dev),
				 npu_job_status_str(jr.device_status), jr.error_offset);
	}
	assert_int_equal(jr.device_status, NPU_JOB_OK);
	if (memcmp(arena_map + acts[1].offset, arena_map + acts[2].offset,
		   npu_act_bytes(&acts[1])))
		fail_msg("folded conv (stride %u, fold %u) differs from the plain one", stride, fold);
	printf("# fold %u, stride %u, sram %u KiB: %llu cycles for both\n", fold, stride,
	       sram_budget / 1024, (unsigned long long)jr.cycles);

	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd_buf);
	npu_buffer_free(const_buf);
	npu_buffer_free(arena_buf);
	npu_device_close(dev);
	free_quant(&qa);
	free(wfold);
}

static void test_folded_conv_equals_plain(void **state)
{
	(void)state;
	run_fold(NPU_SRAM_SIZE, 2, 8);
	run_fold(NPU_SRAM_SIZE, 2, 10);
	run_fold(NPU_SRAM_SIZE, 1, 4);
	run_fold(4 * 1024, 2, 8);	/* row tiles: the window rows still hold */
}

/*
 * Generate and run 'prog' on the simulator; the first 'fill' bytes of the
 * arena are random input. Returns a copy of the arena after the job.
 */
static uint8_t *run_program(const struct npu_segment_program *prog, uint64_t arena_bytes,
			    uint64_t fill, uint32_t sram_budget)
{
	struct npu_device_options opts;
	struct npu_device *dev = NULL;
	struct npu_buffer *arena_buf, *const_buf, *cmd_buf;
	struct npu_cmdbuf *cb;
	struct npu_codegen_result res;
	struct npu_codegen_target tgt = { 0 };
	struct npu_job_result jr;
	struct npu_error err = { 0 };
	uint8_t *arena_map, *const_map, *cmd_map, *copy;
	const void *stream;
	size_t stream_size;
	char msg[256];

	npu_device_options_init(&opts);
	opts.backend = NPU_BACKEND_SIM;
	opts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&opts, &dev, msg, sizeof(msg)), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, arena_bytes, 0, &arena_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(arena_buf, (void **)&arena_map), NPU_OK);
	fill_random((int8_t *)arena_map, fill);
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	tgt.sram_size = sram_budget;
	tgt.arena_va = npu_buffer_va(arena_buf);
	assert_int_equal(npu_codegen_segment(prog, &tgt, cb, &res, &err), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, res.consts_size + 64, NPU_BUFFER_DEVICE_READ_ONLY,
					  &const_buf), NPU_OK);
	npu_codegen_result_free(&res);
	npu_cmdbuf_reset(cb);
	tgt.consts_va = npu_buffer_va(const_buf);
	if (npu_codegen_segment(prog, &tgt, cb, &res, &err) != NPU_OK)
		fail_msg("codegen: %s", npu_error_msg(&err));
	assert_int_equal(npu_buffer_map(const_buf, (void **)&const_map), NPU_OK);
	memcpy(const_map, res.consts, res.consts_size);
	stream = npu_cmdbuf_data(cb, &stream_size);
	assert_int_equal(npu_buffer_alloc(dev, stream_size, NPU_BUFFER_DEVICE_READ_ONLY,
					  &cmd_buf), NPU_OK);
	assert_int_equal(npu_buffer_map(cmd_buf, (void **)&cmd_map), NPU_OK);
	memcpy(cmd_map, stream, stream_size);
	{
		struct npu_buffer_use uses[] = {
			{ arena_buf, NPU_ACCESS_READ_WRITE },
			{ const_buf, NPU_ACCESS_READ_ONLY },
		};
		struct npu_submit sub = {
			.cmd = cmd_buf, .cmd_size = stream_size,
			.buffers = uses, .num_buffers = 2,
		};

		if (npu_job_run(dev, &sub, &jr) != NPU_OK)
			fail_msg("job: %s (status %s at offset %u)", npu_device_last_error(dev),
				 npu_job_status_str(jr.device_status), jr.error_offset);
	}
	assert_int_equal(jr.device_status, NPU_JOB_OK);
	copy = malloc(arena_bytes);
	memcpy(copy, arena_map, arena_bytes);
	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd_buf);
	npu_buffer_free(const_buf);
	npu_buffer_free(arena_buf);
	npu_device_close(dev);
	return copy;
}

/*
 * A LUT fused into its producer's output stage (what lowering does for a
 * pointwise group right after a conv, matmul or eltwise) gives exactly the
 * bytes of the conv followed by a separate LUT op.
 */
static void test_fused_lut_equals_separate_ops(void **state)
{
	struct npu_act acts[4];
	struct npu_lop sep[2], fused[1];
	struct npu_segment_program p1 = { .acts = acts, .num_acts = 4, .lops = sep, .num_lops = 2 };
	struct npu_segment_program p2 = { .acts = acts, .num_acts = 4, .lops = fused, .num_lops = 1 };
	struct quant_arrays q;
	int8_t w[24 * 9 * 8], lut[256];
	uint64_t bytes = 0;
	uint8_t *a1, *a2;
	uint32_t budgets[2] = { NPU_SRAM_SIZE, 6 * 1024 };
	size_t i, b;

	(void)state;
	rng_state = 3;
	acts[0] = (struct npu_act){ .n = 1, .h = 17, .w = 13, .c = 8 };
	acts[1] = (struct npu_act){ .n = 1, .h = 17, .w = 13, .c = 24 };	/* x */
	acts[2] = acts[1];	/* y = LUT(x), separately */
	acts[3] = acts[1];	/* y, fused */
	for (i = 0; i < 4; i++) {
		acts[i].q.zero_point = (int32_t)(rnd() % 41) - 20;
		acts[i].offset = bytes;
		bytes += (npu_act_bytes(&acts[i]) + 63) & ~63ull;
	}
	fill_random(w, sizeof(w));
	fill_random(lut, sizeof(lut));
	make_quant(&q, 24, 72);
	memset(sep, 0, sizeof(sep));
	sep[0] = (struct npu_lop){ .kind = NPU_LOP_CONV, .name = "conv", .in = 0, .out = 1 };
	sep[0].conv.weight = w;
	sep[0].conv.k_h = sep[0].conv.k_w = 3;
	sep[0].conv.stride_h = sep[0].conv.stride_w = 1;
	sep[0].conv.dil_h = sep[0].conv.dil_w = 1;
	sep[0].conv.pad_top = sep[0].conv.pad_left = 1;
	sep[0].conv.pad_bottom = sep[0].conv.pad_right = 1;
	sep[0].conv.groups = 1;
	sep[0].conv.q = (struct npu_lop_quant){ .bias = q.bias, .mult = q.mult, .shift = q.shift,
		.act_min = -128, .act_max = 127 };
	sep[1] = (struct npu_lop){ .kind = NPU_LOP_LUT, .name = "lut", .in = 1, .out = 2 };
	sep[1].lut.table = lut;
	fused[0] = sep[0];
	fused[0].out = 3;
	fused[0].conv.q.lut = lut;
	fused[0].conv.q.pre_act_zp = (int16_t)acts[1].q.zero_point;
	for (b = 0; b < 2; b++) {
		/* Same seed, same input in both arenas. */
		rng_state = 99;
		a1 = run_program(&p1, bytes, npu_act_bytes(&acts[0]), budgets[b]);
		rng_state = 99;
		a2 = run_program(&p2, bytes, npu_act_bytes(&acts[0]), budgets[b]);
		assert_memory_equal(a1 + acts[0].offset, a2 + acts[0].offset, npu_act_bytes(&acts[0]));
		if (memcmp(a1 + acts[2].offset, a2 + acts[3].offset, npu_act_bytes(&acts[2])))
			fail_msg("fused LUT differs from conv + LUT (sram %u)", budgets[b]);
		free(a1);
		free(a2);
	}
	free_quant(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segment_untiled_matches_reference),
		cmocka_unit_test(test_segment_tiled_matches_reference),
		cmocka_unit_test(test_too_small_sram_is_reported),
		cmocka_unit_test(test_copies_match_the_host),
		cmocka_unit_test(test_copy_outside_its_tensors_is_refused),
		cmocka_unit_test(test_phase_split_transposed_conv_equals_zero_insertion),
		cmocka_unit_test(test_folded_conv_equals_plain),
		cmocka_unit_test(test_fused_lut_equals_separate_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
