// SPDX-License-Identifier: MIT
/*
 * The output LUT of ISA 1.4 (NPU_CONV_OUT_LUT): a conv's or matmul's int8
 * activation table, emitted as the CONV2D / MATMUL flag instead of a LUT
 * instruction after it (codegen_internal.h out_lut_fused()), must give exactly the
 * bytes of the separate LUT (out_lut=0) in every code path that emits
 * one: the plain tile loop, the fused conv -> conv pair, the ConvTranspose
 * phases (joined, per phase, pixel-major MATMUL) and the MATMUL of a
 * Gemm, over odd sizes and tiles forced small; and no LUT instruction is
 * left in the stream.
 * And a device of an older ISA is refused with a message naming both.
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
#include "runtime/npu_runtime.h"

#include "graph_builder.h"

enum tail {
	TAIL_CONV1,	/* Conv1x1 to oc -> Sigmoid */
	TAIL_DECONV,	/* ConvTranspose k = s to oc -> Sigmoid */
	TAIL_GEMM,	/* (a 2-D input) Gemm -> HardSwish -> Gemm -> Sigmoid */
};

struct variant {
	int64_t c, mid, h, w, oc, k;
	enum tail tail;
	const char *env;	/* extra codegen options (key=value), or NULL */
};

/*
 * x[1,c,h,w] -> Conv3x3 (pad 1) to mid -> HardSwish -> tail; for
 * TAIL_GEMM x[h,c] -> Gemm [c,mid] + bias -> HardSwish -> Gemm [mid,oc]
 * + bias -> Sigmoid. Every activation is a LUT the producer takes in.
 */
static struct npu_graph *build(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("outlut");
	struct npu_value *x, *p, *r, *d, *y, *in[3];
	struct npu_node *n;

	if (v->tail == TAIL_GEMM) {
		int64_t xd[2] = { v->h, v->c }, md[2] = { v->h, v->mid }, yd[2] = { v->h, v->oc };
		int64_t w1[2] = { v->c, v->mid }, b1[1] = { v->mid };
		int64_t w2[2] = { v->mid, v->oc }, b2[1] = { v->oc };

		x = gb_value(g, "x", 2, xd);
		p = gb_value(g, "p", 2, md);
		r = gb_value(g, "r", 2, md);
		d = gb_value(g, "d", 2, yd);
		y = gb_value(g, "y", 2, yd);
		in[0] = x;
		in[1] = gb_weights(g, "w1", 2, w1, -0.4f, 0.4f);
		in[2] = gb_weights(g, "b1", 1, b1, -0.2f, 0.2f);
		gb_node(g, "Gemm", "mm1", in, 3, p);
		gb_node(g, "HardSwish", "hs", &p, 1, r);
		in[0] = r;
		in[1] = gb_weights(g, "w2", 2, w2, -0.5f, 0.5f);
		in[2] = gb_weights(g, "b2", 1, b2, -0.3f, 0.3f);
		gb_node(g, "Gemm", "mm2", in, 3, d);
	} else {
		int64_t xd[4] = { 1, v->c, v->h, v->w }, md[4] = { 1, v->mid, v->h, v->w };
		int64_t s = v->tail == TAIL_DECONV ? v->k : 1;
		int64_t yd[4] = { 1, v->oc, v->h * s, v->w * s };
		int64_t wd1[4] = { v->mid, v->c, 3, 3 }, bd1[1] = { v->mid }, bd2[1] = { v->oc };
		int64_t wc[4] = { v->oc, v->mid, 1, 1 }, wt[4] = { v->mid, v->oc, v->k, v->k };
		int64_t k3[2] = { 3, 3 }, k1[2] = { 1, 1 }, kk[2] = { v->k, v->k };
		int64_t pads[4] = { 1, 1, 1, 1 };

		x = gb_value(g, "x", 4, xd);
		p = gb_value(g, "p", 4, md);
		r = gb_value(g, "r", 4, md);
		d = gb_value(g, "d", 4, yd);
		y = gb_value(g, "y", 4, yd);
		in[0] = x;
		in[1] = gb_weights(g, "w1", 4, wd1, -0.4f, 0.4f);
		in[2] = gb_weights(g, "b1", 1, bd1, -0.2f, 0.2f);
		n = gb_node(g, "Conv", "conv", in, 3, p);
		gb_set_ints(n, "kernel_shape", k3, 2);
		gb_set_ints(n, "pads", pads, 4);
		gb_node(g, "HardSwish", "hs", &p, 1, r);
		in[0] = r;
		in[1] = gb_weights(g, "w2", 4, v->tail == TAIL_DECONV ? wt : wc, -0.5f, 0.5f);
		in[2] = gb_weights(g, "b2", 1, bd2, -0.3f, 0.3f);
		if (v->tail == TAIL_DECONV) {
			n = gb_node(g, "ConvTranspose", "tail", in, 3, d);
			gb_set_ints(n, "kernel_shape", kk, 2);
			gb_set_ints(n, "strides", kk, 2);
		} else {
			n = gb_node(g, "Conv", "tail", in, 3, d);
			gb_set_ints(n, "kernel_shape", k1, 2);
		}
	}
	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	gb_node(g, "Sigmoid", "sig", &d, 1, y);
	gb_outputs(g, &y, 1);
	return g;
}

/*
 * Generates the segment's stream again and counts its LUT instructions
 * and the CONV2D / MATMUL instructions that carry NPU_CONV_OUT_LUT.
 */
static void scan_stream(const struct npu_compiled *c, unsigned *luts, unsigned *flagged)
{
	struct npu_codegen_result res;
	struct npu_cmdbuf *cb;
	const uint8_t *p;
	size_t size, off;

	*luts = *flagged = 0;
	gb_segment_stream(c, &cb, &res);
	p = npu_cmdbuf_data(cb, &size);
	for (off = sizeof(struct npu_cs_header); off < size;) {
		struct npu_insn_header h;

		memcpy(&h, p + off, sizeof(h));
		assert_true(h.size >= sizeof(h) && off + h.size <= size);
		*luts += h.opcode == NPU_OP_LUT;
		if (h.opcode == NPU_OP_CONV2D) {
			struct npu_insn_conv2d cv;

			memcpy(&cv, p + off, sizeof(cv));
			*flagged += !!(cv.flags & NPU_CONV_OUT_LUT);
		} else if (h.opcode == NPU_OP_MATMUL) {
			struct npu_insn_matmul mm;

			memcpy(&mm, p + off, sizeof(mm));
			*flagged += !!(mm.flags & NPU_CONV_OUT_LUT);
		}
		off += h.size;
	}
	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
}

static size_t compile_and_run(struct npu_device *dev, const struct variant *v,
			      struct npu_tensor *x, bool fused, const char *rows,
			      float *out, size_t cap, uint64_t *insns)
{
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t n, i, luts = 0, stages = 0;
	unsigned lut_insns, flagged;

	gb_codegen_use(v->env);
	gb_codegen.no_out_lut = !fused;
	if (rows)
		gb_codegen.fuse_max_rows = (uint32_t)atoi(rows);
	gb_seed = 41;	/* the same weights every time */
	g = build(v);
	c = gb_compile(g, dev, &x);
	/* everything on the NPU, or the test would compare CPU with CPU */
	assert_int_equal(c->num_segments, 1);
	for (i = 0; i < c->segments[0]->prog.num_lops; i++) {
		const struct npu_lop *l = &c->segments[0]->prog.lops[i];

		luts += l->kind == NPU_LOP_LUT;
		stages += (l->kind == NPU_LOP_CONV && l->conv.q.lut) ||
			  (l->kind == NPU_LOP_MATMUL && l->matmul.q.lut);
	}
	/* both activations are output stages of their producers */
	assert_int_equal(luts, 0);
	assert_int_equal(stages, 2);
	*insns = c->segments[0]->code.instructions;
	if (v->env && !strcmp(v->env, "fuse=force"))	/* the pair path ran */
		assert_true(c->segments[0]->code.fused_groups >= 1);
	/* fused: no LUT instruction at all; else no flag */
	scan_stream(c, &lut_insns, &flagged);
	if (fused) {
		assert_int_equal(lut_insns, 0);
		assert_true(flagged >= 2);
	} else {
		assert_true(lut_insns >= 2);
		assert_int_equal(flagged, 0);
	}
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	gb_codegen_use(NULL);
	return n;
}

static void check(const struct variant *v, const char *rows)
{
	struct npu_shape xs = v->tail == TAIL_GEMM ?
		(struct npu_shape){ .rank = 2, .dims = { v->h, v->c } } :
		(struct npu_shape){ .rank = 4, .dims = { 1, v->c, v->h, v->w } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	size_t cap = 1 << 16, n0, n1, i;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));
	struct npu_device *dev;
	uint64_t i0, i1;
	int64_t k;

	assert_non_null(x);
	assert_non_null(a);
	assert_non_null(b);
	gb_seed = 5;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();
	n0 = compile_and_run(dev, v, x, false, rows, a, cap, &i0);
	n1 = compile_and_run(dev, v, x, true, rows, b, cap, &i1);
	print_message("# tail %d %lldx%lldx%lld -> %lld -> %lld%s%s, tile rows <= %s: "
		      "%llu -> %llu instructions\n", (int)v->tail, (long long)v->c,
		      (long long)v->h, (long long)v->w, (long long)v->mid, (long long)v->oc,
		      v->env ? ", " : "", v->env ? v->env : "", rows ? rows : "any",
		      (unsigned long long)i0, (unsigned long long)i1);
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
	{ 3, 20, 11, 13, 7, 1, TAIL_CONV1, "fuse=off" },
	{ 5, 33, 9, 17, 40, 1, TAIL_CONV1, "fuse=force" },	/* the conv pair */
	{ 3, 24, 7, 9, 5, 2, TAIL_DECONV, "pixel_mm=off" },	/* phases */
	{ 2, 9, 5, 7, 1, 2, TAIL_DECONV, "pixel_mm=force" },	/* pixel-major */
	{ 4, 16, 6, 5, 3, 3, TAIL_DECONV, NULL },
	{ 37, 45, 13, 1, 11, 1, TAIL_GEMM, NULL },
	{ 8, 70, 65, 1, 33, 1, TAIL_GEMM, NULL },
};

static void test_out_lut_small_tiles(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		if (variants[i].tail == TAIL_GEMM)
			continue;	/* no row tiling knob for the MATMUL loop */
		check(&variants[i], "1");
		check(&variants[i], "3");
	}
}

static void test_out_lut_free_tiles(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		check(&variants[i], NULL);
}

static void test_older_isa_device_is_refused(void **state)
{
	struct npu_device_info info = { 0 };
	struct npu_error err = { 0 };
	char want[32];

	(void)state;
	info.isa_version = NPU_VERSION(NPU_ISA_VERSION_MAJOR, NPU_ISA_VERSION_MINOR);
	assert_int_equal(npu_compiled_isa_check(&info, &err), NPU_OK);
	info.isa_version = NPU_VERSION(NPU_ISA_VERSION_MAJOR, NPU_ISA_VERSION_MINOR + 1);
	assert_int_equal(npu_compiled_isa_check(&info, &err), NPU_OK);
	info.isa_version = NPU_VERSION(1, 3);
	assert_int_equal(npu_compiled_isa_check(&info, &err), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(err.msg, "the device runs command-stream ISA 1.3"));
	snprintf(want, sizeof(want), "emits ISA %d.%d", NPU_ISA_VERSION_MAJOR,
		 NPU_ISA_VERSION_MINOR);
	assert_non_null(strstr(err.msg, want));
	info.isa_version = NPU_VERSION(NPU_ISA_VERSION_MAJOR + 1, 0);
	assert_int_equal(npu_compiled_isa_check(&info, &err), NPU_ERR_UNSUPPORTED);
	info.isa_version = 0;	/* a device that reports none */
	assert_int_equal(npu_compiled_isa_check(&info, &err), NPU_ERR_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out_lut_small_tiles),
		cmocka_unit_test(test_out_lut_free_tiles),
		cmocka_unit_test(test_older_isa_device_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
