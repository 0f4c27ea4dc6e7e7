// SPDX-License-Identifier: MIT
/*
 * Pixel-major MATMULs (codegen_conv.c, gen_pmm()): a phase-split ConvTranspose
 * with one output channel, each (dy, dx) phase one MATMUL with the input
 * pixels on its n axis, and a 1x1 conv with few output channels, one
 * MATMUL per channel; a nearest RESIZE of step 1 puts each plane's pixels
 * in place. Must give exactly the bytes of the same model compiled with
 * CONV2Ds (pixel_mm=off against force), over odd sizes, more than 32
 * input channels, 2x2 and 3x3 kernels (= stride), 1, 5 and 12 output
 * channels, with and without bias and a fused Sigmoid LUT, tiles forced
 * to 1 and 3 input rows (codegen fuse_rows) and free.
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

#include "compiler/compiler.h"
#include "runtime/npu_runtime.h"

#include "graph_builder.h"

struct variant {
	int64_t c, mid, h, w, k;	/* x channels, ConvTranspose input channels, kernel = stride */
	bool bias, sigmoid;
	int64_t oc;		/* > 0: a 1x1 Conv to oc channels instead of the ConvTranspose */
};

/*
 * x[1,c,h,w] -> Conv3x3 (pad 1) to mid -> Relu -> ConvTranspose k x k,
 * stride k, to 1 (or Conv1x1 to oc) [-> Sigmoid]; the last node is "pm".
 */
static struct npu_graph *build(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("deconv1");
	int64_t xd[4] = { 1, v->c, v->h, v->w }, md[4] = { 1, v->mid, v->h, v->w };
	int64_t yd[4] = { 1, v->oc ? v->oc : 1, v->h * (v->oc ? 1 : v->k), v->w * (v->oc ? 1 : v->k) };
	int64_t wd1[4] = { v->mid, v->c, 3, 3 }, bd1[1] = { v->mid };
	int64_t wd2[4] = { v->mid, 1, v->k, v->k }, bd2[1] = { v->oc ? v->oc : 1 };
	int64_t wd3[4] = { v->oc, v->mid, 1, 1 }, k1[2] = { 1, 1 };
	int64_t k3[2] = { 3, 3 }, pads[4] = { 1, 1, 1, 1 }, kk[2] = { v->k, v->k };
	struct npu_value *x = gb_value(g, "x", 4, xd), *p = gb_value(g, "p", 4, md);
	struct npu_value *r = gb_value(g, "r", 4, md), *d = gb_value(g, "d", 4, yd), *y = d;
	struct npu_value *in[3];
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, wd1, -0.4f, 0.4f);
	in[2] = gb_weights(g, "b1", 1, bd1, -0.2f, 0.2f);
	n = gb_node(g, "Conv", "conv", in, 3, p);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "pads", pads, 4);
	gb_node(g, "Relu", "relu", &p, 1, r);
	in[0] = r;
	in[1] = gb_weights(g, "w2", 4, v->oc ? wd3 : wd2, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b2", 1, bd2, -0.3f, 0.3f);
	if (v->oc) {
		n = gb_node(g, "Conv", "pm", in, v->bias ? 3 : 2, d);
		gb_set_ints(n, "kernel_shape", k1, 2);
	} else {
		n = gb_node(g, "ConvTranspose", "pm", in, v->bias ? 3 : 2, d);
		gb_set_ints(n, "kernel_shape", kk, 2);
		gb_set_ints(n, "strides", kk, 2);
	}
	if (v->sigmoid) {
		y = gb_value(g, "y", 4, yd);
		gb_node(g, "Sigmoid", "sig", &d, 1, y);
	}
	gb_outputs(g, &y, 1);
	return g;
}

/* Compile for sim (pixel_mm=<mm>: 0 or force), run on x, copy the output out. */
static size_t compile_and_run(struct npu_device *dev, const struct variant *v,
			      struct npu_tensor *x, const char *mm, const char *rows,
			      float *out, size_t cap, uint64_t *insns, uint64_t *pred)
{
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t n, i;

	gb_codegen_use("fuse=off");	/* no conv pair takes the 1x1 conv in */
	gb_codegen.pixel_mm = fuse_choice(mm);
	if (rows)
		gb_codegen.fuse_max_rows = (uint32_t)atoi(rows);
	gb_seed = 23;	/* the same weights every time */
	g = build(v);
	c = gb_compile(g, dev, &x);
	/* everything on the NPU, or the test would compare CPU with CPU */
	assert_int_equal(c->num_segments, 1);
	*insns = c->segments[0]->code.instructions;
	*pred = 0;
	for (i = 0; i < c->segments[0]->prog.num_lops; i++)
		if (c->segments[0]->prog.lops[i].kind == NPU_LOP_CONV &&
		    !strcmp(c->segments[0]->prog.lops[i].name, "pm") &&
		    (v->oc || c->segments[0]->prog.lops[i].conv.phase_h))
			*pred = c->segments[0]->code.lop_pred_cycles[i];
	assert_true(*pred > 0);	/* the phase form was chosen at all */
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	gb_codegen_use(NULL);
	return n;
}

static void check(const struct variant *v, const char *rows)
{
	struct npu_device *dev;
	struct npu_shape xs = { .rank = 4, .dims = { 1, v->c, v->h, v->w } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	size_t cap = 1 << 16, n0, n1, i, diff = 0;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));
	uint64_t i0, i1, p0, p1;
	int64_t k;

	assert_non_null(x);
	assert_non_null(a);
	assert_non_null(b);
	gb_seed = 5;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();

	n0 = compile_and_run(dev, v, x, "0", rows, a, cap, &i0, &p0);
	n1 = compile_and_run(dev, v, x, "force", rows, b, cap, &i1, &p1);
	print_message("# %lldx%lldx%lld -> %lld ch, %s %lld%s%s, tile rows <= %s: "
		      "%llu -> %llu instructions, predicted %llu -> %llu cycles\n",
		      (long long)v->c, (long long)v->h, (long long)v->w, (long long)v->mid,
		      v->oc ? "1x1 conv to" : "deconv k = s =", (long long)(v->oc ? v->oc : v->k),
		      v->bias ? " + bias" : "",
		      v->sigmoid ? " + sigmoid" : "", rows ? rows : "any",
		      (unsigned long long)i0, (unsigned long long)i1,
		      (unsigned long long)p0, (unsigned long long)p1);
	assert_true(i0 != i1);	/* a different program ran */
	assert_int_equal(n0, n1);
	assert_int_equal(n0, (size_t)(v->oc ? v->h * v->w * v->oc : v->h * v->k * v->w * v->k));
	for (i = 0; i < n0; i++)
		diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
	assert_int_equal(diff, 0);
	/* and the output is not trivially constant */
	for (i = 1; i < n0 && a[i] == a[0]; i++)
		;
	assert_true(i < n0);

	npu_device_close(dev);
	npu_tensor_destroy(x);
	free(a);
	free(b);
}

static void test_pixel_mm_small_tiles(void **state)
{
	static const struct variant v[] = {
		{ 3, 24, 11, 13, 2, true, true, 0 },
		{ 4, 37, 7, 9, 2, true, false, 0 },
		{ 2, 5, 5, 7, 3, false, true, 0 },
		{ 3, 37, 9, 13, 0, true, false, 12 },
		{ 2, 20, 7, 11, 0, false, true, 5 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		check(&v[i], "1");
		check(&v[i], "3");
	}
}

static void test_pixel_mm_free_tiles(void **state)
{
	static const struct variant v[] = {
		{ 3, 24, 11, 13, 2, true, true, 0 },
		{ 5, 40, 19, 21, 2, false, false, 0 },
		{ 2, 9, 9, 11, 3, true, true, 0 },
		{ 4, 48, 15, 17, 0, true, true, 12 },
		{ 3, 33, 8, 23, 0, true, false, 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check(&v[i], NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pixel_mm_small_tiles),
		cmocka_unit_test(test_pixel_mm_free_tiles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
