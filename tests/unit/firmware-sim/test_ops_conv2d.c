// SPDX-License-Identifier: MIT
/*
 * test_ops_conv2d.c - CONV2D: every implementation on this host equals the
 * reference bit for bit, over seeded random shapes and handpicked edges
 * (odd channel counts, asymmetric padding, stride, dilation, groups,
 * depthwise, 1x1, strided layouts, extreme zero points and quant tables,
 * wrapping accumulators, output overlapping the input), zero insertion
 * included; and zero insertion equals a transposed convolution written
 * independently (scatter form).
 */
#include <inttypes.h>

#include "ops_test_util.h"

struct conv_p {
	int in_h, in_w, in_c, out_c, groups;
	int k_h, k_w, sh, sw, dh, dw, pt, pl, pb, pr;
	int zp_in, zp_w, zp_out, act_min, act_max;
	uint32_t flags;
	int in_gap, in_row_gap, out_gap, out_row_gap;	/* layout padding bytes */
	enum ops_quant_mode quant;
	int extreme;	/* operands at the int8 ends: accumulators wrap */
	int overlap;	/* output starts where the input starts */
	int big_bias;	/* biases near INT32_MIN / INT32_MAX */
	int ins_h, ins_w;	/* zero insertion (ISA 1.1) */
};

static const struct conv_p conv_defaults = {
	.in_h = 5, .in_w = 5, .in_c = 8, .out_c = 8, .groups = 1,
	.k_h = 3, .k_w = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1,
	.zp_in = 3, .zp_w = 0, .zp_out = -5, .act_min = -128, .act_max = 127,
};

static void run_ref(const void *insn, uint8_t *sram)
{
	npu_ref_conv2d(insn, sram);
}

static void run_fast(const void *insn, uint8_t *sram)
{
	npu_op_conv2d(insn, sram);
}

/* Lays the case out in s->init; returns the check status. */
static uint32_t conv_build(struct ops_sram *s, const struct conv_p *p,
			   struct npu_insn_conv2d *in)
{
	struct npu_op_footprint fp;
	int cin_g = p->in_c / p->groups;
	uint32_t nq = (p->flags & NPU_QUANT_PER_TENSOR) ? 1 : (uint32_t)p->out_c;
	uint64_t in_span, out_span, w_len;

	memset(in, 0, sizeof(*in));
	in->hdr.opcode = NPU_OP_CONV2D;
	in->hdr.size = sizeof(*in);
	in->flags = p->flags;
	in->in_h = (uint16_t)p->in_h;
	in->in_w = (uint16_t)p->in_w;
	in->in_c = (uint16_t)p->in_c;
	in->out_c = (uint16_t)p->out_c;
	in->k_h = (uint8_t)p->k_h;
	in->k_w = (uint8_t)p->k_w;
	in->stride_h = (uint8_t)p->sh;
	in->stride_w = (uint8_t)p->sw;
	in->dil_h = (uint8_t)p->dh;
	in->dil_w = (uint8_t)p->dw;
	in->pad_top = (uint8_t)p->pt;
	in->pad_left = (uint8_t)p->pl;
	in->pad_bottom = (uint8_t)p->pb;
	in->pad_right = (uint8_t)p->pr;
	in->groups = (uint16_t)p->groups;
	in->ins_h = (uint8_t)p->ins_h;
	in->ins_w = (uint8_t)p->ins_w;
	in->out_h = (uint16_t)(((p->in_h - 1) * (p->ins_h + 1) + 1 + p->pt + p->pb -
				p->dh * (p->k_h - 1) - 1) / p->sh + 1);
	in->out_w = (uint16_t)(((p->in_w - 1) * (p->ins_w + 1) + 1 + p->pl + p->pr -
				p->dw * (p->k_w - 1) - 1) / p->sw + 1);
	in->in_pixel_stride = (uint32_t)(p->in_c + p->in_gap);
	in->in_row_stride = in->in_pixel_stride * (uint32_t)p->in_w + (uint32_t)p->in_row_gap;
	in->out_pixel_stride = (uint32_t)(p->out_c + p->out_gap);
	in->out_row_stride = in->out_pixel_stride * in->out_w + (uint32_t)p->out_row_gap;
	in->zp_in = (int16_t)p->zp_in;
	in->zp_w = (int16_t)p->zp_w;
	in->zp_out = (int16_t)p->zp_out;
	in->act_min = (int8_t)p->act_min;
	in->act_max = (int8_t)p->act_max;

	in_span = (uint64_t)(in->in_h - 1) * in->in_row_stride +
		  (uint64_t)(in->in_w - 1) * in->in_pixel_stride + in->in_c;
	out_span = (uint64_t)(in->out_h - 1) * in->out_row_stride +
		   (uint64_t)(in->out_w - 1) * in->out_pixel_stride + in->out_c;
	w_len = (uint64_t)p->out_c * p->k_h * p->k_w * cin_g;

	s->next = (uint32_t)ops_range(0, 64);
	in->input = ops_place(s, in_span > out_span || !p->overlap ? in_span : out_span);
	in->output = p->overlap ? in->input : ops_place(s, out_span);
	in->weight = ops_place(s, w_len);
	in->bias = ops_place(s, 4ull * p->out_c);
	in->quant = ops_place(s, 5ull * nq);
	if (in->quant == UINT32_MAX || in->output == UINT32_MAX ||
	    in->bias == UINT32_MAX || in->weight == UINT32_MAX)
		return NPU_JOB_ERR_SRAM_BOUNDS;

	ops_fill(s->init + in->input, in_span);
	ops_fill(s->init + in->weight, w_len);
	if (p->extreme) {
		/* (x - zp_in) * (w - zp_w) = 255 * 255 on every tap. */
		memset(s->init + in->input, p->zp_in >= 0 ? 0x80 : 0x7f, in_span);
		memset(s->init + in->weight, p->zp_w >= 0 ? 0x80 : 0x7f, w_len);
	}
	for (int i = 0; i < p->out_c; i++)
		ops_put_i32(s->init, in->bias + 4 * i, p->big_bias ?
			    (ops_rand() & 1 ? INT32_MAX - (int32_t)ops_range(0, 1 << 20) :
			     INT32_MIN + (int32_t)ops_range(0, 1 << 20)) :
			    (int32_t)ops_range(-50000, 50000));
	ops_write_quant(s->init, in->quant, nq, (uint32_t)(p->k_h * p->k_w * cin_g),
			p->quant);
	return npu_op_conv2d_check(in, &fp);
}

static void conv_golden(struct ops_sram *s, const struct conv_p *p, const char *what)
{
	struct npu_insn_conv2d in;
	uint32_t st = conv_build(s, p, &in);

	assert_int_equal(st, NPU_JOB_OK);
	assert_int_equal(npu_op_conv2d_check_sram(&in, s->init), NPU_JOB_OK);
	ops_golden(s, &in, run_ref, run_fast, what);
	for (uint32_t y = 0; y < in.out_h; y++)
		for (uint32_t x = 0; x < in.out_w; x++)
			ops_tally_bytes(s->ref + in.output + y * in.out_row_stride +
					x * in.out_pixel_stride, in.out_c,
					p->act_min, p->act_max);
}

static int pick(const int *v, int n)
{
	return v[ops_range(0, n - 1)];
}

static void conv_random(struct conv_p *p)
{
	static const int chans[] = { 1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64, 65 };
	int kind = (int)ops_range(0, 9);

	*p = conv_defaults;
	p->in_c = pick(chans, 12);
	p->out_c = pick(chans, 12);
	if (kind < 2) {
		/* depthwise */
		p->out_c = p->in_c;
		p->groups = p->in_c;
	} else if (kind < 4) {
		int g = (int)ops_range(2, 4);

		p->in_c = g * (int)ops_range(1, 12);
		p->out_c = g * (int)ops_range(1, 12);
		p->groups = g;
	}
	if (kind == 4 || kind == 5) {
		p->k_h = p->k_w = 1;
	} else {
		p->k_h = (int)ops_range(1, 5);
		p->k_w = (int)ops_range(1, 5);
	}
	p->sh = (int)ops_range(1, 3);
	p->sw = (int)ops_range(1, 3);
	p->dh = ops_range(0, 3) ? 1 : 2;
	p->dw = ops_range(0, 3) ? 1 : 2;
	if (kind != 4) {
		p->pt = (int)ops_range(0, 2);
		p->pl = (int)ops_range(0, 2);
		p->pb = (int)ops_range(0, 2);
		p->pr = (int)ops_range(0, 2);
	}
	p->in_h = p->dh * (p->k_h - 1) + (int)ops_range(1, 12);
	p->in_w = p->dw * (p->k_w - 1) + (int)ops_range(1, 12);
	p->zp_in = (int)ops_range(-128, 127);
	p->zp_w = ops_range(0, 1) ? 0 : (int)ops_range(-128, 127);
	/* Mostly outputs centred inside the clamp; sometimes anything goes. */
	p->zp_out = (int)ops_range(-30, 30);
	p->act_min = (int)ops_range(-128, -70);
	p->act_max = (int)ops_range(70, 127);
	if (!ops_range(0, 7)) {
		p->zp_out = (int)ops_range(-128, 127);
		p->act_min = (int)ops_range(-128, 0);
		p->act_max = (int)ops_range(0, 127);
	}
	p->flags = (ops_range(0, 3) ? 0 : NPU_QUANT_PER_TENSOR) |
		   (ops_range(0, 3) ? 0 : NPU_CONV_NO_BIAS);
	if (!ops_range(0, 3)) {
		p->in_gap = (int)ops_range(0, 9);
		p->in_row_gap = (int)ops_range(0, 33);
		p->out_gap = (int)ops_range(0, 9);
		p->out_row_gap = (int)ops_range(0, 33);
	}
	p->quant = ops_range(0, 5) ? OPS_QUANT_SENSIBLE :
		   (enum ops_quant_mode)ops_range(0, OPS_QUANT_MODES - 1);
	p->overlap = !ops_range(0, 15);
	p->big_bias = !ops_range(0, 15);
}

static void test_conv2d_random_shapes_match_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	char what[64];

	(void)state;
	ops_seed(20240601);
	ops_tally.outputs = ops_tally.unclamped = 0;
	for (int i = 0; i < 400; i++) {
		struct conv_p p;

		conv_random(&p);
		snprintf(what, sizeof(what), "random conv #%d", i);
		conv_golden(s, &p, what);
	}
	/* Sensible quant tables dominate: most outputs must land inside the clamp. */
	print_message("# %llu of %llu outputs inside the clamp\n",
		      (unsigned long long)ops_tally.unclamped,
		      (unsigned long long)ops_tally.outputs);
	assert_true(ops_tally.unclamped * 2 > ops_tally.outputs);
	ops_sram_free(s);
	ops_report_impls();
}

/*
 * Shapes around the AVX-512 kernels' blocks, every implementation against
 * the reference: the GEMM's 12-row tiles (pixel counts just off multiples
 * of 12, rows at one stride or not: strided 1x1, gaps), 32-channel panels
 * and 16-channel vectors (n just off multiples of 16), k not a multiple of
 * 4 or 64; depthwise rows of four taps (k_w 1..9) and four output pixels
 * (out_w just off multiples of 4), strides, dil_w 1 and 2, channel counts
 * off 16, weights minus zp_w inside int8 (the VNNI kernel) and outside
 * it (the fallback), accumulators that wrap.
 */
static void test_conv2d_vnni_blocks_match_reference(void **state)
{
	static const int chans[] = { 1, 3, 4, 5, 12, 15, 16, 17, 24, 31, 32, 33,
				     47, 48, 49, 64, 65, 96, 97 };
	struct ops_sram *s = ops_sram_new();
	char what[96];

	(void)state;
	ops_seed(20261207);
	for (int i = 0; i < 240; i++) {
		struct conv_p p = conv_defaults;
		int kind = i % 4;

		p.in_c = pick(chans, 19);
		p.out_c = pick(chans, 19);
		p.sh = (int)ops_range(1, 3);
		p.sw = (int)ops_range(1, 3);
		if (kind == 0) {		/* 1x1: rows in place or copied */
			p.k_h = p.k_w = 1;
		} else if (kind == 1) {		/* im2col GEMM, groups sometimes */
			p.k_h = (int)ops_range(1, 4);
			p.k_w = (int)ops_range(1, 4);
			p.pt = p.pl = p.pb = p.pr = (int)ops_range(0, 2);
			if (!ops_range(0, 3)) {
				int g = (int)ops_range(2, 3);

				p.in_c = g * (int)ops_range(1, 20);
				p.out_c = g * (int)ops_range(1, 20);
				p.groups = g;
			}
		} else {			/* depthwise */
			p.out_c = p.in_c;
			p.groups = p.in_c;
			p.k_h = (int)ops_range(1, 5);
			p.k_w = (int)ops_range(1, 9);
			p.dh = ops_range(0, 3) ? 1 : 2;
			p.dw = kind == 3 && !ops_range(0, 2) ? 2 : 1;
			p.pt = (int)ops_range(0, 3);
			p.pl = (int)ops_range(0, 4);
			p.pb = (int)ops_range(0, 3);
			p.pr = (int)ops_range(0, 4);
		}
		p.in_h = p.dh * (p.k_h - 1) + (int)ops_range(1, 14);
		p.in_w = p.dw * (p.k_w - 1) + (int)ops_range(1, 30);
		p.zp_in = (int)ops_range(-128, 127);
		/* 0 keeps w - zp_w in int8; the rest mostly leaves it. */
		p.zp_w = ops_range(0, 2) ? 0 : (int)ops_range(-128, 127);
		p.zp_out = (int)ops_range(-30, 30);
		p.act_min = (int)ops_range(-128, -70);
		p.act_max = (int)ops_range(70, 127);
		p.flags = ops_range(0, 3) ? 0 : NPU_QUANT_PER_TENSOR;
		if (!ops_range(0, 3)) {
			p.in_gap = (int)ops_range(0, 9);
			p.in_row_gap = (int)ops_range(0, 33);
			p.out_gap = (int)ops_range(0, 9);
		}
		p.extreme = !ops_range(0, 11);
		p.big_bias = !ops_range(0, 11);
		snprintf(what, sizeof(what), "vnni block case #%d (%dx%dx%d -> %d, %dx%d, groups %d)",
			 i, p.in_h, p.in_w, p.in_c, p.out_c, p.k_h, p.k_w, p.groups);
		conv_golden(s, &p, what);
	}
	ops_sram_free(s);
	ops_report_impls();
}

static void test_conv2d_edge_cases_match_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	static const int odd[] = { 1, 3, 7, 31, 33, 65 };
	struct conv_p p;

	(void)state;
	ops_seed(7);
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++) {
			p = conv_defaults;
			p.in_c = odd[i];
			p.out_c = odd[j];
			p.pt = 1;
			p.pr = 2;
			conv_golden(s, &p, "odd channels, 3x3, asymmetric pad");
			p.k_h = p.k_w = 1;
			p.pt = p.pr = 0;
			conv_golden(s, &p, "odd channels, 1x1");
		}
	for (int i = 0; i < 6; i++) {
		p = conv_defaults;
		p.in_c = p.out_c = p.groups = odd[i];
		p.pt = p.pl = p.pb = p.pr = 1;
		conv_golden(s, &p, "depthwise 3x3 odd channels");
		p.sh = p.sw = 2;
		p.dh = p.dw = 2;
		p.in_h = p.in_w = 9;
		conv_golden(s, &p, "depthwise stride 2 dilation 2");
	}

	p = conv_defaults;
	p.in_h = 11, p.in_w = 10, p.sh = 3, p.sw = 2, p.pt = 2, p.pb = 0, p.pl = 0, p.pr = 1;
	conv_golden(s, &p, "stride 3x2, asymmetric pad");
	p = conv_defaults;
	p.in_h = p.in_w = 9, p.dh = 2, p.dw = 3, p.k_h = 3, p.k_w = 2;
	conv_golden(s, &p, "dilation 2x3");
	p = conv_defaults;
	p.in_c = 12, p.out_c = 6, p.groups = 3;
	conv_golden(s, &p, "groups 3");
	p = conv_defaults;
	p.in_c = 4, p.out_c = 8, p.groups = 4;
	conv_golden(s, &p, "depthwise with channel multiplier 2");
	p = conv_defaults;
	p.in_c = 70, p.out_c = 9, p.k_h = 5, p.k_w = 5, p.in_h = 7, p.in_w = 7;
	conv_golden(s, &p, "k = 1750, k tail of 22 bytes");
	p = conv_defaults;
	p.k_h = p.k_w = 1, p.in_gap = 3, p.in_row_gap = 5, p.out_gap = 2, p.out_row_gap = 7;
	p.sh = p.sw = 2;
	conv_golden(s, &p, "1x1 stride 2 on strided layouts");
	p = conv_defaults;
	p.in_gap = 1, p.out_gap = 13, p.out_row_gap = 1;
	conv_golden(s, &p, "3x3 on strided layouts");
	p = conv_defaults;
	p.k_h = 5, p.k_w = 5, p.pt = p.pl = p.pb = p.pr = 4;
	conv_golden(s, &p, "outputs that see only padding");

	for (int zi = -128; zi <= 127; zi += 255)
		for (int zw = -128; zw <= 127; zw += 255)
			for (int zo = -128; zo <= 127; zo += 255) {
				p = conv_defaults;
				p.in_c = 33, p.out_c = 17;
				p.zp_in = zi, p.zp_w = zw, p.zp_out = zo;
				p.pt = p.pb = 1;
				conv_golden(s, &p, "extreme zero points");
				p.groups = p.out_c = p.in_c;
				conv_golden(s, &p, "extreme zero points, depthwise");
			}

	for (int mode = 0; mode < OPS_QUANT_MODES; mode++) {
		p = conv_defaults;
		p.in_c = 31, p.out_c = 33, p.quant = (enum ops_quant_mode)mode;
		conv_golden(s, &p, "quant table mode");
		p.flags = NPU_QUANT_PER_TENSOR;
		conv_golden(s, &p, "per-tensor quant mode");
	}

	p = conv_defaults;
	p.act_min = -3, p.act_max = 5;
	conv_golden(s, &p, "narrow clamp");
	p.act_min = p.act_max = 9;
	conv_golden(s, &p, "clamp to a single value");

	/* 255 * 255 * 9 * 4000 taps overflows int32: the accumulator wraps. */
	p = conv_defaults;
	p.in_c = 4000, p.out_c = 5, p.in_h = p.in_w = 3, p.pt = p.pb = p.pl = p.pr = 1;
	p.zp_in = 127, p.zp_w = 127, p.extreme = 1, p.quant = OPS_QUANT_EXTREME_MULT;
	conv_golden(s, &p, "wrapping accumulator");
	p.zp_in = -128, p.zp_w = -128;
	conv_golden(s, &p, "wrapping accumulator, negative zero points");
	p = conv_defaults;
	p.big_bias = 1, p.extreme = 1, p.zp_in = 127, p.in_c = 300;
	conv_golden(s, &p, "bias near INT32 limits");

	p = conv_defaults;
	p.overlap = 1;
	conv_golden(s, &p, "output overlaps input");
	p.k_h = p.k_w = 1;
	conv_golden(s, &p, "1x1 in place");
	p.groups = p.in_c;
	p.k_h = p.k_w = 3;
	conv_golden(s, &p, "depthwise in place");

	p = conv_defaults;
	p.in_h = 1, p.in_w = 1, p.in_c = 1, p.out_c = 1, p.k_h = 1, p.k_w = 1;
	conv_golden(s, &p, "1x1x1");
	p = conv_defaults;
	p.in_h = 1, p.in_w = 40, p.k_h = 1, p.k_w = 40, p.in_c = 3, p.out_c = 70;
	conv_golden(s, &p, "single output pixel, many channels");
	p = conv_defaults;
	p.in_h = 2, p.in_w = 3, p.k_h = 1, p.k_w = 1, p.in_c = 64, p.out_c = 64;
	conv_golden(s, &p, "six pixels, full 64-byte k");
	ops_sram_free(s);
}

/*
 * The im2col gathering: packed pixels copy a kernel row's taps inside the
 * input as one run, the rest filled with zp_in. Kernels wider than the
 * input, windows hanging over both edges, strides, few channels (first
 * layers), and dilation or gaps between pixels (tap by tap) for contrast.
 */
static void test_conv2d_patch_runs_match_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	static const int chans[] = { 1, 3, 4, 16, 17 };

	(void)state;
	ops_seed(3232);
	for (int i = 0; i < 300; i++) {
		struct conv_p p = conv_defaults;

		p.in_c = chans[ops_range(0, 4)];
		p.out_c = (int)ops_range(1, 20);
		p.k_h = (int)ops_range(1, 4);
		p.k_w = (int)ops_range(1, 7);
		p.sh = (int)ops_range(1, 2);
		p.sw = (int)ops_range(1, 3);
		p.dw = ops_range(0, 4) ? 1 : 2;
		p.pt = (int)ops_range(0, p.k_h - 1);
		p.pb = (int)ops_range(0, p.k_h - 1);
		p.pl = (int)ops_range(0, p.k_w - 1);
		p.pr = (int)ops_range(0, p.k_w - 1);
		p.in_h = p.k_h + (int)ops_range(0, 3);
		p.in_w = p.dw * (p.k_w - 1) + 1 - p.pl - p.pr + (int)ops_range(0, 4);
		if (p.in_w < 1)
			p.in_w = 1 + (int)ops_range(0, 2);
		if (p.in_w + p.pl + p.pr < p.dw * (p.k_w - 1) + 1)
			p.pr = p.dw * (p.k_w - 1) + 1 - p.in_w - p.pl;
		if (p.pr >= p.k_w) {
			p.dw = 1;
			p.pl = p.pr = p.k_w - 1;
			p.in_w = 1;
		}
		p.zp_in = (int)ops_range(-128, 127);
		p.in_gap = ops_range(0, 4) ? 0 : (int)ops_range(1, 5);
		conv_golden(s, &p, "patch runs");
	}
	ops_sram_free(s);
}

static void test_conv2d_large_shape_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct conv_p p = conv_defaults;

	(void)state;
	ops_seed(99);
	/* Enough pixels to cross the im2col chunk boundary several times. */
	p.in_h = 30, p.in_w = 29, p.in_c = 40, p.out_c = 36, p.pt = p.pl = p.pb = p.pr = 1;
	conv_golden(s, &p, "30x29x40 -> 36, 3x3");
	p.zp_w = -7;
	p.k_h = p.k_w = 1, p.pt = p.pl = p.pb = p.pr = 0;
	conv_golden(s, &p, "30x29x40 -> 36, 1x1, zp_w != 0");
	ops_sram_free(s);
}

/* Random shapes with zero insertion (ISA 1.1): every path against the reference. */
static void test_conv2d_zero_insertion_matches_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	char what[64];

	(void)state;
	ops_seed(20250316);
	for (int i = 0; i < 300; i++) {
		struct conv_p p;

		conv_random(&p);
		p.ins_h = (int)ops_range(0, 3);
		p.ins_w = (int)ops_range(0, 3);
		if (!p.ins_h && !p.ins_w)
			p.ins_w = 1;
		if (!ops_range(0, 3))
			p.sh = p.sw = 1;
		/* The zero-inserted input is larger: shrink the real one. */
		p.in_h = 1 + (int)ops_range(0, 6);
		p.in_w = 1 + (int)ops_range(0, 6);
		p.pt = p.pb = p.dh * (p.k_h - 1);
		p.pl = p.pr = p.dw * (p.k_w - 1);
		if (p.pt > 255 || p.pl > 255)
			continue;
		if (i % 5 == 0)
			p.quant = (enum ops_quant_mode)(i / 5 % OPS_QUANT_MODES);
		if (i % 17 == 0)
			p.extreme = 1;
		snprintf(what, sizeof(what), "zero-insert conv #%d", i);
		conv_golden(s, &p, what);
	}
	ops_sram_free(s);
}

/*
 * ConvTranspose(stride s, kernel k, pads p) written as a scatter:
 * out[iy * s - p + ky][...] += x[iy][ix] * w[ic][oc][ky][kx]; it must equal
 * CONV2D with ins = s - 1, the kernel flipped, pads k - 1 - p.
 */
static void test_conv2d_zero_insertion_is_conv_transpose(void **state)
{
	struct ops_sram *s = ops_sram_new();
	static const int shapes[][6] = {
		/* in_h, in_w, in_c, out_c, k, stride */
		{ 4, 5, 3, 2, 2, 2 }, { 3, 3, 8, 5, 3, 2 }, { 5, 2, 33, 7, 4, 2 },
		{ 2, 3, 1, 1, 3, 3 }, { 6, 4, 16, 16, 2, 2 }, { 1, 1, 4, 3, 3, 2 },
	};

	(void)state;
	ops_seed(99);
	for (unsigned int t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
		int ih = shapes[t][0], iw = shapes[t][1], ic = shapes[t][2];
		int oc = shapes[t][3], k = shapes[t][4], st = shapes[t][5];
		int pad = t % 2 ? 1 : 0;
		int oh = (ih - 1) * st - 2 * pad + k, ow = (iw - 1) * st - 2 * pad + k;
		int8_t *x = malloc((size_t)ih * iw * ic);
		int8_t *wt = malloc((size_t)ic * oc * k * k);	/* ONNX [ic][oc][k][k] */
		int32_t *acc = calloc((size_t)oh * ow * oc, sizeof(*acc));
		struct npu_insn_conv2d in = { 0 };
		int32_t mult = 1518500250;
		uint8_t shift = 38, *sram = s->ref;
		int zp_in = -7, zp_out = 3;

		assert_non_null(x);
		assert_non_null(wt);
		assert_non_null(acc);
		ops_fill((uint8_t *)x, (size_t)ih * iw * ic);
		ops_fill((uint8_t *)wt, (size_t)ic * oc * k * k);
		for (int y = 0; y < ih; y++)
		for (int xx = 0; xx < iw; xx++)
		for (int c = 0; c < ic; c++)
		for (int o = 0; o < oc; o++)
		for (int ky = 0; ky < k; ky++)
		for (int kx = 0; kx < k; kx++) {
			int py = y * st - pad + ky, px = xx * st - pad + kx;

			if (py < 0 || py >= oh || px < 0 || px >= ow)
				continue;
			acc[((size_t)py * ow + px) * oc + o] +=
				(x[((size_t)y * iw + xx) * ic + c] - zp_in) *
				wt[(((size_t)c * oc + o) * k + ky) * k + kx];
		}

		memset(sram, 0, NPU_SRAM_SIZE);
		in.hdr.opcode = NPU_OP_CONV2D;
		in.hdr.size = sizeof(in);
		in.input = 0;
		in.weight = 65536;
		in.quant = 131072;
		in.output = 196608;
		in.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS;
		in.in_h = (uint16_t)ih;
		in.in_w = (uint16_t)iw;
		in.in_c = (uint16_t)ic;
		in.out_c = (uint16_t)oc;
		in.out_h = (uint16_t)oh;
		in.out_w = (uint16_t)ow;
		in.k_h = in.k_w = (uint8_t)k;
		in.stride_h = in.stride_w = in.dil_h = in.dil_w = 1;
		in.ins_h = in.ins_w = (uint8_t)(st - 1);
		in.pad_top = in.pad_left = in.pad_bottom = in.pad_right = (uint8_t)(k - 1 - pad);
		in.groups = 1;
		in.in_pixel_stride = (uint32_t)ic;
		in.in_row_stride = (uint32_t)(ic * iw);
		in.out_pixel_stride = (uint32_t)oc;
		in.out_row_stride = (uint32_t)(oc * ow);
		in.zp_in = (int16_t)zp_in;
		in.zp_out = (int16_t)zp_out;
		in.act_min = -128;
		in.act_max = 127;
		memcpy(sram, x, (size_t)ih * iw * ic);
		/* CONV2D weight [oc][ky][kx][ic], flipped in both axes. */
		for (int o = 0; o < oc; o++)
		for (int ky = 0; ky < k; ky++)
		for (int kx = 0; kx < k; kx++)
		for (int c = 0; c < ic; c++)
			sram[in.weight + (((size_t)o * k + ky) * k + kx) * ic + c] =
				(uint8_t)wt[(((size_t)c * oc + o) * k + (k - 1 - ky)) * k +
					    (k - 1 - kx)];
		memcpy(sram + in.quant, &mult, 4);
		sram[in.quant + 4] = shift;
		assert_int_equal(npu_op_conv2d_check(&in, &(struct npu_op_footprint){ 0 }),
				 NPU_JOB_OK);
		memcpy(s->init, sram, NPU_SRAM_SIZE);
		ops_golden(s, &in, run_ref, run_fast, "conv transpose");
		for (int i = 0; i < oh * ow * oc; i++) {
			int64_t v = (int64_t)acc[i] * mult + ((int64_t)1 << (shift - 1));
			int64_t q = (v >> shift) + zp_out;

			q = q < -128 ? -128 : q > 127 ? 127 : q;
			if ((int8_t)s->ref[in.output + i] != q)
				fail_msg("conv transpose case %u: output %d is %d, scatter gives %d",
					 t, i, (int8_t)s->ref[in.output + i], (int)q);
		}
		free(acc);
		free(wt);
		free(x);
	}
	ops_sram_free(s);
}

static void test_conv2d_bad_shift_writes_nothing(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct npu_insn_conv2d in;
	struct conv_p p = conv_defaults;

	(void)state;
	assert_int_equal(conv_build(s, &p, &in), NPU_JOB_OK);
	s->init[in.quant + 4 * in.out_c + 3] = 63;
	assert_int_equal(npu_op_conv2d_check_sram(&in, s->init), NPU_JOB_ERR_BAD_PARAM);
	s->init[in.quant + 4 * in.out_c + 3] = 0;
	assert_int_equal(npu_op_conv2d_check_sram(&in, s->init), NPU_JOB_ERR_BAD_PARAM);
	memcpy(s->ref, s->init, NPU_SRAM_SIZE);
	npu_ref_conv2d(&in, s->ref);
	assert_memory_equal(s->ref, s->init, NPU_SRAM_SIZE);
	for (int i = 0; i < OPS_NUM_IMPLS; i++) {
		if (npu_ops_set_impl(ops_impls[i]))
			continue;
		memcpy(s->fast, s->init, NPU_SRAM_SIZE);
		npu_op_conv2d(&in, s->fast);
		assert_memory_equal(s->fast, s->init, NPU_SRAM_SIZE);
	}
	ops_sram_free(s);
}

/*
 * Issue 29 D-b: a zero-inserting convolution does the work the cycle model
 * charges (npu_op_footprint.macs): the inserted-zero taps, which the model
 * skips, are neither packed nor multiplied. A 255 x 255 kernel over an
 * input with 255 zeros between pixels is charged one tap per pixel; the
 * dense im2col did all 65,025. Results still equal the reference's.
 */
static void conv_work_within_charge(struct ops_sram *s,
				    const struct npu_insn_conv2d *in,
				    const char *what)
{
	struct npu_op_footprint fp;
	uint64_t before;

	assert_int_equal(npu_op_conv2d_check(in, &fp), NPU_JOB_OK);
	assert_int_equal(npu_op_conv2d_check_sram(in, s->init), NPU_JOB_OK);
	for (int i = 0; i < OPS_NUM_IMPLS; i++) {
		if (npu_ops_set_impl(ops_impls[i]))
			continue;
		memcpy(s->fast, s->init, NPU_SRAM_SIZE);
		before = npu_ops_host_macs();
		npu_op_conv2d(in, s->fast);
		if (npu_ops_host_macs() - before > fp.macs)
			fail_msg("%s, %s: %" PRIu64 " MACs done, %" PRIu64 " charged",
				 what, ops_impls[i], npu_ops_host_macs() - before,
				 fp.macs);
	}
	ops_golden(s, in, run_ref, run_fast, what);
}

static void test_conv2d_zero_insertion_work_is_what_is_charged(void **state)
{
	struct ops_sram *s = ops_sram_new();
	struct conv_p p = conv_defaults;
	struct npu_insn_conv2d in;

	(void)state;
	ops_seed(29);
	p.in_h = p.in_w = 2, p.in_c = 2, p.out_c = 3;
	p.k_h = p.k_w = 255, p.ins_h = p.ins_w = 255;
	p.pt = p.pl = 2, p.pb = p.pr = 4;
	assert_int_equal(conv_build(s, &p, &in), NPU_JOB_OK);
	conv_work_within_charge(s, &in, "k 255, ins 255");

	/* Depthwise with dilation and stride: several residue classes. */
	p = conv_defaults;
	p.in_h = p.in_w = 6, p.in_c = p.out_c = p.groups = 5;
	p.k_h = p.k_w = 7, p.dh = p.dw = 3, p.ins_h = p.ins_w = 3;
	p.sh = 2, p.pt = p.pl = p.pb = p.pr = 5;
	assert_int_equal(conv_build(s, &p, &in), NPU_JOB_OK);
	conv_work_within_charge(s, &in, "depthwise, dil 3, ins 3, stride 2");

	/* The int16 path: the same shape with int16 activations. */
	p = conv_defaults;
	p.in_h = p.in_w = 2, p.in_c = 2, p.out_c = 3;
	p.k_h = p.k_w = 255, p.ins_h = p.ins_w = 255;
	p.pt = p.pl = 2, p.pb = p.pr = 4;
	p.zp_in = p.zp_w = p.zp_out = 0;
	assert_int_equal(conv_build(s, &p, &in), NPU_JOB_OK);
	in.hdr.flags |= NPU_INSN_I16;
	in.in_pixel_stride = 2u * in.in_c;
	in.in_row_stride = in.in_pixel_stride * in.in_w;
	in.out_pixel_stride = 2u * in.out_c;
	in.out_row_stride = in.out_pixel_stride * in.out_w;
	in.input = 0;
	in.output = 4096;
	in.weight = 8192;
	in.bias = 8192 + 3 * 65025 * 2 + 64;
	in.quant = in.bias + 8 * 3 + 64;
	ops_write_quant(s->init, in.quant, 3, 2, p.quant);
	conv_work_within_charge(s, &in, "int16, k 255, ins 255");
	ops_sram_free(s);
}

/*
 * Issue 29 D-b: a reset stops a long op between slices, not after it.
 * The poll reports "aborted" from its third call on; each op must then
 * stop within a slice (about 2^22 MACs), whatever the op's size.
 */
static int polls_seen;

static bool abort_on_third_poll(void *ctx)
{
	(void)ctx;
	return ++polls_seen >= 3;
}

static void test_ops_stop_soon_after_an_abort(void **state)
{
	const struct npu_ops_poll poll = { .aborted = abort_on_third_poll };
	struct ops_sram *s = ops_sram_new();
	struct conv_p p = conv_defaults;
	struct npu_insn_conv2d in;
	struct npu_op_footprint fp;
	const struct { int hw, c, groups, k, ins; const char *what; } shapes[] = {
		{ 64, 64, 1, 5, 0, "im2col" },
		{ 128, 16, 16, 15, 0, "depthwise" },
		{ 32, 64, 1, 5, 1, "zero insertion" },
	};

	(void)state;
	ops_seed(291);
	for (unsigned int i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		uint64_t before;

		p = conv_defaults;
		p.in_h = p.in_w = shapes[i].hw, p.in_c = p.out_c = shapes[i].c;
		p.groups = shapes[i].groups, p.ins_h = p.ins_w = shapes[i].ins;
		p.k_h = p.k_w = shapes[i].k;
		p.pt = p.pl = p.pb = p.pr = shapes[i].k / 2;
		assert_int_equal(conv_build(s, &p, &in), NPU_JOB_OK);
		assert_int_equal(npu_op_conv2d_check(&in, &fp), NPU_JOB_OK);
		memcpy(s->fast, s->init, NPU_SRAM_SIZE);
		polls_seen = 0;
		npu_ops_set_poll(&poll);
		before = npu_ops_host_macs();
		npu_op_conv2d(&in, s->fast);
		npu_ops_set_poll(NULL);
		if (npu_ops_host_macs() - before > 4ull << 22 ||
		    npu_ops_host_macs() - before >= fp.macs / 2)
			fail_msg("%s: %" PRIu64 " of %" PRIu64 " MACs done after an abort",
				 shapes[i].what, npu_ops_host_macs() - before, fp.macs);
	}

	/*
	 * POOL (charged per window tap): a 255 x 255 max pool polls, and
	 * stops at the first "aborted" it sees, with its output untouched
	 * when the output overlaps the input (a temporary result).
	 */
	struct npu_insn_pool pool = {
		.hdr = { .opcode = NPU_OP_POOL, .size = sizeof(pool) },
		.input = 0, .output = 0, .mode = NPU_POOL_MAX, .c = 8,
		.in_h = 255, .in_w = 255, .out_h = 255, .out_w = 255,
		.k_h = 255, .k_w = 255, .stride_h = 1, .stride_w = 1,
		.pad_top = 127, .pad_left = 127, .pad_bottom = 127, .pad_right = 127,
		.in_row_stride = 255 * 8, .in_pixel_stride = 8,
		.out_row_stride = 255 * 8, .out_pixel_stride = 8,
		.act_min = -128, .act_max = 127,
	};

	assert_int_equal(npu_op_pool_check(&pool, &fp), NPU_JOB_OK);
	memcpy(s->fast, s->init, NPU_SRAM_SIZE);
	polls_seen = 0;
	npu_ops_set_poll(&poll);
	npu_op_pool(&pool, s->fast);
	npu_ops_set_poll(NULL);
	assert_int_equal(polls_seen, 3);
	assert_memory_equal(s->fast, s->init, 255u * 255 * 8);
	ops_sram_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv2d_random_shapes_match_reference),
		cmocka_unit_test(test_conv2d_edge_cases_match_reference),
		cmocka_unit_test(test_conv2d_vnni_blocks_match_reference),
		cmocka_unit_test(test_conv2d_patch_runs_match_reference),
		cmocka_unit_test(test_conv2d_large_shape_matches_reference),
		cmocka_unit_test(test_conv2d_bad_shift_writes_nothing),
		cmocka_unit_test(test_conv2d_zero_insertion_matches_reference),
		cmocka_unit_test(test_conv2d_zero_insertion_is_conv_transpose),
		cmocka_unit_test(test_conv2d_zero_insertion_work_is_what_is_charged),
		cmocka_unit_test(test_ops_stop_soon_after_an_abort),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
