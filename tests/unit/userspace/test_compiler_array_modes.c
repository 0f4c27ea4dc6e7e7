// SPDX-License-Identifier: MIT
/*
 * MAC array modes (ISA 1.5, NPU_CONV_ARRAY()): code generation gives each
 * CONV2D and MATMUL the mode with the fewest cycles for its shape
 * (codegen.c cmd_conv2d() / cmd_matmul()). A mode changes timing only, so
 * a model must give exactly the bytes of mode 0 (array_modes=0) in
 * every path: plain, depthwise, the fused pair, ConvTranspose, Gemm; over
 * channel counts that leave the 32 x 32 array part idle (3, 8, 16, 24,
 * 40) and ones that fill it. The MAC cycles of the stream, summed by the
 * one ISA validator, must never grow, and must shrink where a layer has
 * 24, 16 or 8 channels.
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
#include "compiler/compiler.h"
#include "npu/npu_device.h"
#include "npu_isa.h"
#include "runtime/npu_runtime.h"

#include "graph_builder.h"

enum shape {
	CONVS,		/* Conv3x3 c->mid, Relu, depthwise 3x3, Conv1x1 mid->oc */
	DECONV,		/* Conv3x3 c->mid, Relu, ConvTranspose k = s = 2 to oc */
	GEMMS,		/* x[h,c] Gemm -> mid, Relu, Gemm -> oc */
};

struct variant {
	enum shape shape;
	int64_t c, mid, h, w, oc;
	const char *env;	/* extra codegen options (key=value), or NULL */
	bool faster;		/* modes must save cycles */
};

static struct npu_graph *build(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("modes");
	struct npu_value *x, *p, *r, *d, *y, *in[3];
	struct npu_node *n;
	int64_t k3[2] = { 3, 3 }, k1[2] = { 1, 1 }, k2[2] = { 2, 2 };
	int64_t pads[4] = { 1, 1, 1, 1 };

	if (v->shape == GEMMS) {
		int64_t xd[2] = { v->h, v->c }, md[2] = { v->h, v->mid }, yd[2] = { v->h, v->oc };
		int64_t w1[2] = { v->c, v->mid }, b1[1] = { v->mid };
		int64_t w2[2] = { v->mid, v->oc }, b2[1] = { v->oc };

		x = gb_value(g, "x", 2, xd);
		p = gb_value(g, "p", 2, md);
		r = gb_value(g, "r", 2, md);
		y = gb_value(g, "y", 2, yd);
		in[0] = x;
		in[1] = gb_weights(g, "w1", 2, w1, -0.4f, 0.4f);
		in[2] = gb_weights(g, "b1", 1, b1, -0.2f, 0.2f);
		gb_node(g, "Gemm", "mm1", in, 3, p);
		gb_node(g, "Relu", "relu", &p, 1, r);
		in[0] = r;
		in[1] = gb_weights(g, "w2", 2, w2, -0.5f, 0.5f);
		in[2] = gb_weights(g, "b2", 1, b2, -0.3f, 0.3f);
		gb_node(g, "Gemm", "mm2", in, 3, y);
	} else {
		int64_t s = v->shape == DECONV ? 2 : 1;
		int64_t xd[4] = { 1, v->c, v->h, v->w }, md[4] = { 1, v->mid, v->h, v->w };
		int64_t yd[4] = { 1, v->oc, v->h * s, v->w * s };
		int64_t wd1[4] = { v->mid, v->c, 3, 3 }, bd1[1] = { v->mid };
		int64_t wdw[4] = { v->mid, 1, 3, 3 }, bdw[1] = { v->mid };
		int64_t wc[4] = { v->oc, v->mid, 1, 1 }, wt[4] = { v->mid, v->oc, 2, 2 };
		int64_t bd2[1] = { v->oc };

		x = gb_value(g, "x", 4, xd);
		p = gb_value(g, "p", 4, md);
		r = gb_value(g, "r", 4, md);
		d = gb_value(g, "d", 4, md);
		y = gb_value(g, "y", 4, yd);
		in[0] = x;
		in[1] = gb_weights(g, "w1", 4, wd1, -0.4f, 0.4f);
		in[2] = gb_weights(g, "b1", 1, bd1, -0.2f, 0.2f);
		n = gb_node(g, "Conv", "conv", in, 3, p);
		gb_set_ints(n, "kernel_shape", k3, 2);
		gb_set_ints(n, "pads", pads, 4);
		gb_node(g, "Relu", "relu", &p, 1, r);
		if (v->shape == DECONV) {
			in[0] = r;
			in[1] = gb_weights(g, "wt", 4, wt, -0.5f, 0.5f);
			in[2] = gb_weights(g, "b2", 1, bd2, -0.3f, 0.3f);
			n = gb_node(g, "ConvTranspose", "deconv", in, 3, y);
			gb_set_ints(n, "kernel_shape", k2, 2);
			gb_set_ints(n, "strides", k2, 2);
		} else {
			in[0] = r;
			in[1] = gb_weights(g, "wdw", 4, wdw, -0.5f, 0.5f);
			in[2] = gb_weights(g, "bdw", 1, bdw, -0.2f, 0.2f);
			n = gb_node(g, "Conv", "dw", in, 3, d);
			gb_set_ints(n, "kernel_shape", k3, 2);
			gb_set_ints(n, "pads", pads, 4);
			gb_set_int(n, "group", v->mid);
			in[0] = d;
			in[1] = gb_weights(g, "w2", 4, wc, -0.5f, 0.5f);
			in[2] = gb_weights(g, "b2", 1, bd2, -0.3f, 0.3f);
			n = gb_node(g, "Conv", "pw", in, 3, y);
			gb_set_ints(n, "kernel_shape", k1, 2);
		}
	}
	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	gb_outputs(g, &y, 1);
	return g;
}

/*
 * Generates the segment's stream again and sums, through the ISA
 * validator, the cycles of its CONV2D and MATMUL instructions; counts
 * those that run in a mode other than 0.
 */
static uint64_t mac_cycles(const struct npu_compiled *c, unsigned *moded)
{
	uint32_t sram = c->dev_info.sram_size;
	struct npu_codegen_result res;
	struct npu_cmdbuf *cb;
	const uint8_t *p;
	size_t size, off;
	uint64_t cycles = 0;

	*moded = 0;
	gb_segment_stream(c, &cb, &res);
	p = npu_cmdbuf_data(cb, &size);
	for (off = sizeof(struct npu_cs_header); off < size;) {
		struct npu_insn_header h;
		struct npu_op_footprint fp;
		uint32_t flags = 0;

		memcpy(&h, p + off, sizeof(h));
		assert_true(h.size >= sizeof(h) && off + h.size <= size);
		if (h.opcode == NPU_OP_CONV2D || h.opcode == NPU_OP_MATMUL) {
			struct npu_isa_check chk = { .sram_size = sram };

			assert_int_equal(npu_insn_check(p + off, &chk, &fp), NPU_JOB_OK);
			cycles += fp.cycles;
			memcpy(&flags, p + off + (h.opcode == NPU_OP_CONV2D ?
						  offsetof(struct npu_insn_conv2d, flags) :
						  offsetof(struct npu_insn_matmul, flags)),
			       sizeof(flags));
			*moded += !!(flags & NPU_CONV_ARRAY_MASK);
		}
		off += h.size;
	}
	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
	return cycles;
}

static size_t compile_and_run(struct npu_device *dev, const struct variant *v,
			      struct npu_tensor *x, bool modes, float *out, size_t cap,
			      uint64_t *cycles, unsigned *moded)
{
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t n;

	gb_codegen_use(v->env);
	gb_codegen.no_array_modes = !modes;
	gb_seed = 17;	/* the same weights every time */
	g = build(v);
	c = gb_compile(g, dev, &x);
	/* everything on the NPU, or the test would compare CPU with CPU */
	assert_int_equal(c->num_segments, 1);
	*cycles = mac_cycles(c, moded);
	if (v->env && !strcmp(v->env, "fuse=force"))	/* the pair path ran */
		assert_true(c->segments[0]->code.fused_groups >= 1);
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	gb_codegen_use(NULL);
	return n;
}

static void check(const struct variant *v)
{
	struct npu_shape xs = v->shape == GEMMS ?
		(struct npu_shape){ .rank = 2, .dims = { v->h, v->c } } :
		(struct npu_shape){ .rank = 4, .dims = { 1, v->c, v->h, v->w } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	size_t cap = 1 << 17, n0, n1, i;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));
	struct npu_device *dev;
	uint64_t cyc0, cyc1;
	unsigned moded0, moded1;
	int64_t k;

	assert_non_null(x);
	assert_non_null(a);
	assert_non_null(b);
	gb_seed = 3;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();
	n0 = compile_and_run(dev, v, x, false, a, cap, &cyc0, &moded0);
	n1 = compile_and_run(dev, v, x, true, b, cap, &cyc1, &moded1);
	print_message("# shape %d %lldx%lldx%lld -> %lld -> %lld%s%s: MAC cycles %llu -> %llu, "
		      "%u instructions in modes 1..5\n", (int)v->shape, (long long)v->c,
		      (long long)v->h, (long long)v->w, (long long)v->mid, (long long)v->oc,
		      v->env ? ", " : "", v->env ? v->env : "", (unsigned long long)cyc0,
		      (unsigned long long)cyc1, moded1);
	assert_int_equal(moded0, 0);
	assert_true(cyc1 <= cyc0);
	if (v->faster) {
		assert_true(moded1 > 0);
		assert_true(cyc1 < cyc0);
	}
	assert_int_equal(n0, n1);
	assert_true(n0 > 0);
	assert_memory_equal(a, b, n0 * sizeof(float));
	for (i = 1; i < n0 && a[i] == a[0]; i++)
		;
	assert_true(i < n0);	/* not trivially constant */
	npu_device_close(dev);
	npu_tensor_destroy(x);
	free(a);
	free(b);
}

static const struct variant variants[] = {
	{ CONVS, 3, 24, 11, 13, 16, NULL, true },
	{ CONVS, 16, 16, 9, 17, 24, NULL, true },
	{ CONVS, 40, 48, 7, 9, 8, NULL, true },
	{ CONVS, 5, 24, 13, 6, 40, "fuse=force", true },	/* the conv pair */
	{ CONVS, 32, 32, 6, 7, 64, NULL, false },	/* fills the array */
	{ DECONV, 3, 24, 7, 9, 24, NULL, true },
	{ DECONV, 4, 16, 6, 5, 3, NULL, false },
	{ GEMMS, 37, 24, 13, 1, 11, NULL, true },
	{ GEMMS, 64, 96, 33, 1, 64, NULL, false },
};

static void test_modes_keep_bytes(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		check(&variants[i]);
}

/*
 * The validator's cycles against the formula of npu_hw.h written out
 * here, and the fastest mode for a few layers whose answer is plain.
 */
static void test_cycle_model(void **state)
{
	static const uint32_t rows[6] = { 32, 32, 16, 32, 16, 8 };
	static const uint32_t cols[6] = { 32, 16, 32, 8, 16, 32 };
	static const uint32_t parts[6] = { 1, 2, 2, 4, 4, 4 };
	static const uint32_t chans[] = { 1, 3, 8, 16, 24, 31, 32, 33, 48, 96 };
	uint32_t mode, ci, co, i16;

	(void)state;
	for (mode = 0; mode < NPU_ARRAY_NUM_MODES; mode++)
		for (i16 = 0; i16 < 2; i16++)
			for (ci = 0; ci < sizeof(chans) / sizeof(chans[0]); ci++)
				for (co = 0; co < sizeof(chans) / sizeof(chans[0]); co++) {
					uint64_t px = 37, r = rows[mode] >> i16;

					if (chans[ci] == 1 && chans[co] == 1)
						continue;	/* depthwise, below */
					uint64_t in = chans[ci], out = chans[co];
					uint64_t want = (px + parts[mode] - 1) / parts[mode] * 9 *
							((in + r - 1) / r) *
							((out + cols[mode] - 1) / cols[mode]);

					assert_int_equal(npu_conv2d_cycles(px, 9, 1, chans[ci],
									   chans[co], (int)i16,
									   mode), want);
					want = (px + parts[mode] - 1) / parts[mode] *
					       ((in + r - 1) / r) *
					       ((out + cols[mode] - 1) / cols[mode]);
					assert_int_equal(npu_matmul_cycles(px, in, out, (int)i16,
									   mode), want);
				}
	/* depthwise: rows carry pixels, parts multiply them */
	assert_int_equal(npu_conv2d_cycles(1000, 9, 16, 16, 16, 0, 0), 32 * 9);
	assert_int_equal(npu_conv2d_cycles(1000, 9, 16, 16, 16, 0, 1), 16 * 9);
	assert_int_equal(npu_conv2d_cycles(1000, 9, 8, 8, 8, 0, 3), 8 * 9);
	/* the choice */
	assert_int_equal(npu_conv2d_fastest_mode(1024, 1, 1, 96, 24, 0), 3);
	assert_int_equal(npu_conv2d_fastest_mode(1024, 1, 1, 96, 96, 0), 0);
	assert_int_equal(npu_conv2d_fastest_mode(1024, 1, 1, 16, 32, 0), 2);
	assert_int_equal(npu_conv2d_fastest_mode(1024, 1, 1, 8, 32, 0), 5);
	assert_int_equal(npu_conv2d_fastest_mode(1024, 1, 1, 16, 16, 0), 4);
	assert_int_equal(npu_conv2d_fastest_mode(1024, 1, 16, 16, 16, 0), 1);
	assert_int_equal(npu_matmul_fastest_mode(1, 96, 24, 0), 0);	/* one row: no parts */
	assert_int_equal(npu_matmul_fastest_mode(64, 96, 24, 0), 3);
}

/* Mode 6 and 7 do not exist: BAD_ENCODING naming the flags field. */
static void test_bad_mode(void **state)
{
	struct npu_insn_matmul mm = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(mm) },
		.a = 0, .b = 4096, .quant = 8192, .output = 12288,
		.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS,
		.m = 4, .k = 8, .n = 8, .a_stride = 8, .out_stride = 8,
		.act_min = -128, .act_max = 127,
	};
	struct npu_isa_check chk = { 0 };
	struct npu_op_footprint fp;
	uint32_t mode;

	(void)state;
	for (mode = 0; mode < 8; mode++) {
		mm.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS | NPU_CONV_ARRAY(mode);
		if (mode < NPU_ARRAY_NUM_MODES) {
			assert_int_equal(npu_op_matmul_validate(&mm, &fp, &chk), NPU_JOB_OK);
			assert_int_equal(fp.cycles, npu_matmul_cycles(4, 8, 8, 0, mode));
			continue;
		}
		assert_int_equal(npu_op_matmul_validate(&mm, &fp, &chk),
				 NPU_JOB_ERR_BAD_ENCODING);
		assert_string_equal(chk.field, "flags");
		assert_non_null(strstr(chk.reason, "array mode"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycle_model),
		cmocka_unit_test(test_bad_mode),
		cmocka_unit_test(test_modes_keep_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
