// SPDX-License-Identifier: MIT
/*
 * GlobalAveragePool in two depthwise CONV2D stages (lower.c,
 * lower_global_pool_split(): ~32 band means into an int8 temporary, then
 * their mean) against the one-stage form (gap_split=0) and the fp32
 * mean, over odd shapes: H x W prime, tiny, large, padded bands, C not a
 * multiple of 32. The temporary is int8 (the ISA has no int8 -> int16
 * CONV2D), so the two forms may differ, by at most one output step (the
 * grid rule keeps the rounding of the band means well under one).
 */
#include <math.h>
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
	int64_t c, h, w;
	float spread;	/* per-channel offsets: the means' range over the input's */
	bool splits;	/* the cycle and rounding rules take the two-stage form */
};

struct result {
	size_t convs;	/* CONV lops: 2 when split */
	float in_scale, out_scale;
};

static struct npu_graph *build(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("gap");
	int64_t xd[4] = { 1, v->c, v->h, v->w }, yd[4] = { 1, v->c, 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, xd), *y = gb_value(g, "y", 4, yd);

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	gb_node(g, "GlobalAveragePool", "gap", &x, 1, y);
	gb_outputs(g, &y, 1);
	return g;
}

static size_t compile_and_run(struct npu_device *dev, const struct variant *v, bool split,
			      struct npu_tensor *x, float *out, size_t cap, struct result *r)
{
	const struct npu_segment_program *p;
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t n, i;

	gb_codegen_use(split ? NULL : "gap_split=0");
	g = build(v);
	c = gb_compile(g, dev, &x);
	assert_int_equal(c->num_segments, 1);
	p = &c->segments[0]->prog;
	memset(r, 0, sizeof(*r));
	for (i = 0; i < p->num_lops; i++)
		if (p->lops[i].kind == NPU_LOP_CONV) {
			if (!r->convs++)
				r->in_scale = p->acts[p->lops[i].in].q.scale;
			r->out_scale = p->acts[p->lops[i].out].q.scale;
		}
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	gb_codegen_use(NULL);
	return n;
}

static void test_gap_split(void **state)
{
	static const struct variant v[] = {
		{ 33, 7, 11, 1.5f, true },	/* 77 positions, C = 32 + 1 */
		{ 5, 1, 97, 1.5f, true },	/* H x W prime */
		{ 70, 37, 29, 1.5f, true },	/* 1073 = 29 x 37, padded bands */
		{ 40, 96, 96, 1.5f, true },	/* large */
		{ 17, 160, 5, 0.3f, true },	/* narrow output range: many bands */
		{ 3, 2, 3, 1.5f, false },	/* tiny: one stage pays */
		{ 96, 20, 20, 0.0f, false },	/* pure noise: means ~0, r too large */
	};
	struct npu_device *dev;
	size_t cap = 4096, i, k, n0, n1;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));
	float *ref = calloc(cap, sizeof(float));
	size_t diffs = 0, total = 0;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(ref);
	dev = gb_sim_device();
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct npu_shape xs = { .rank = 4, .dims = { 1, v[i].c, v[i].h, v[i].w } };
		struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
		int64_t hw = v[i].h * v[i].w, ch, e;
		struct result r0, r1;
		float *xd;

		assert_non_null(x);
		xd = x->data;
		gb_seed = 11 + i;
		for (ch = 0; ch < v[i].c; ch++) {
			float off = gb_uniform(-v[i].spread, v[i].spread);
			double s = 0;

			for (e = 0; e < hw; e++) {
				xd[ch * hw + e] = off + gb_uniform(-0.5f, 0.5f);
				s += xd[ch * hw + e];
			}
			ref[ch] = (float)(s / (double)hw);
		}
		n0 = compile_and_run(dev, &v[i], false, x, a, cap, &r0);
		n1 = compile_and_run(dev, &v[i], true, x, b, cap, &r1);
		assert_int_equal(n0, (size_t)v[i].c);
		assert_int_equal(n1, n0);
		assert_int_equal(r0.convs, 1);
		assert_int_equal(r1.convs, v[i].splits ? 2 : 1);
		/* both calibrated on x: the same output quantization */
		assert_true(r0.out_scale == r1.out_scale);
		for (k = 0; k < n0; k++) {
			float d = fabsf(a[k] - b[k]) / r0.out_scale;
			/* fp32 mean: the output's rounding, one step more of
			 * the two-stage form's, and half an input step */
			float tol = 1.5f * r0.out_scale + 0.5f * r0.in_scale + 1e-6f;

			if (d > 1.01f || fabsf(b[k] - ref[k]) > tol || fabsf(a[k] - ref[k]) > tol)
				fail_msg("%lldx%lldx%lld channel %zu: one-stage %g, two-stage %g "
					 "(%.2f steps), fp32 %g, step %g",
					 (long long)v[i].c, (long long)v[i].h, (long long)v[i].w, k,
					 a[k], b[k], d, ref[k], r0.out_scale);
			diffs += d > 0.5f;
			total++;
		}
		npu_tensor_destroy(x);
	}
	/* the forms are not trivially identical everywhere, nor far apart */
	printf("# %zu of %zu means differ by one step\n", diffs, total);
	assert_true(diffs * 4 < total);
	npu_device_close(dev);
	free(a);
	free(b);
	free(ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gap_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
