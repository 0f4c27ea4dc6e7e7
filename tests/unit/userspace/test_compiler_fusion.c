// SPDX-License-Identifier: MIT
/*
 * Cross-layer fusion (codegen.c, fusion_plan()): conv -> conv pairs whose
 * intermediate stays in SRAM must give exactly the bytes of the same model
 * compiled with fusion off (NPU_FUSE=0), over odd sizes, strides, kernels,
 * dilations, depthwise and fused activations, with tiles forced small
 * (NPU_FUSE_ROWS) so that halo rows are recomputed across tiles.
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

struct conv_spec {
	int64_t out_c, k_h, k_w, stride, dil, pad_t, pad_l, pad_b, pad_r, group;
	const char *act;	/* NULL, "Relu", "HardSwish" */
};

static struct npu_value *conv(struct npu_graph *g, struct npu_value *x, int idx,
			      const struct conv_spec *s)
{
	const int64_t *xd = x->shape.dims;
	int64_t eh = s->dil * (s->k_h - 1) + 1, ew = s->dil * (s->k_w - 1) + 1;
	int64_t od[4] = { 1, s->out_c, (xd[2] + s->pad_t + s->pad_b - eh) / s->stride + 1,
			  (xd[3] + s->pad_l + s->pad_r - ew) / s->stride + 1 };
	int64_t wd[4] = { s->out_c, xd[1] / s->group, s->k_h, s->k_w }, bd[1] = { s->out_c };
	int64_t k[2] = { s->k_h, s->k_w }, st[2] = { s->stride, s->stride };
	int64_t dl[2] = { s->dil, s->dil };
	int64_t pads[4] = { s->pad_t, s->pad_l, s->pad_b, s->pad_r };
	struct npu_value *in[3], *y;
	struct npu_node *n;
	char name[32];

	snprintf(name, sizeof(name), "c%d", idx);
	y = gb_value(g, name, 4, od);
	in[0] = x;
	snprintf(name, sizeof(name), "w%d", idx);
	in[1] = gb_weights(g, name, 4, wd, -0.4f, 0.4f);
	snprintf(name, sizeof(name), "b%d", idx);
	in[2] = gb_weights(g, name, 1, bd, -0.2f, 0.2f);
	snprintf(name, sizeof(name), "conv%d", idx);
	n = gb_node(g, "Conv", name, in, 3, y);
	gb_set_ints(n, "kernel_shape", k, 2);
	gb_set_ints(n, "strides", st, 2);
	gb_set_ints(n, "dilations", dl, 2);
	gb_set_ints(n, "pads", pads, 4);
	gb_set_int(n, "group", s->group);
	if (s->act) {
		struct npu_value *a;

		snprintf(name, sizeof(name), "a%d", idx);
		a = gb_value(g, name, 4, od);
		snprintf(name, sizeof(name), "act%d", idx);
		gb_node(g, s->act, name, &y, 1, a);
		y = a;
	}
	return y;
}

/*
 * x[1,5,H,W] through a chain of convs: 3x3 + Relu, depthwise 3x3 stride 2
 * + HardSwish, pointwise, 5x3 dilation 2 with uneven pads, depthwise 3x3,
 * pointwise stride 1 + Relu, 3x3 stride 2 (odd output), pointwise.
 */
static struct npu_graph *build_chain(int64_t h, int64_t w)
{
	static const struct conv_spec specs[] = {
		{ 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu" },
		{ 12, 3, 3, 2, 1, 1, 1, 1, 1, 12, "HardSwish" },
		{ 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },
		{ 9, 5, 3, 1, 2, 3, 2, 5, 2, 1, "Relu" },
		{ 9, 3, 3, 1, 1, 1, 1, 1, 1, 9, NULL },
		{ 33, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },
		{ 7, 3, 3, 2, 1, 0, 1, 1, 0, 1, NULL },
		{ 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },
	};
	struct npu_graph *g = npu_graph_create("chain");
	int64_t xd[4] = { 1, 5, h, w };
	struct npu_value *x = gb_value(g, "x", 4, xd), *y = x;
	size_t i;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		y = conv(g, y, (int)i, &specs[i]);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/* Compile for sim with NPU_FUSE=fuse, run on x, copy the output out. */
static size_t compile_and_run(struct npu_device *dev, int64_t h, int64_t w,
			      struct npu_tensor *x, const char *fuse, const char *rows,
			      float *out, size_t cap, uint64_t *fused_groups)
{
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t i, n;

	setenv("NPU_FUSE", fuse, 1);
	if (rows)
		setenv("NPU_FUSE_ROWS", rows, 1);
	else
		unsetenv("NPU_FUSE_ROWS");
	gb_seed = 11;	/* the same weights every time */
	g = build_chain(h, w);
	c = gb_compile(g, dev, &x);
	assert_true(c->num_segments >= 1);
	*fused_groups = 0;
	for (i = 0; i < c->num_segments; i++)
		*fused_groups += c->segments[i]->code.fused_groups;
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	unsetenv("NPU_FUSE");
	unsetenv("NPU_FUSE_ROWS");
	return n;
}

static void check_shape(int64_t h, int64_t w, const char *rows)
{
	struct npu_device *dev;
	struct npu_shape xs = { .rank = 4, .dims = { 1, 5, h, w } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	size_t cap = 1 << 16, n0, n1, i, diff = 0;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));
	uint64_t g0, g1;
	int64_t k;

	assert_non_null(x);
	assert_non_null(a);
	assert_non_null(b);
	gb_seed = 5;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();

	n0 = compile_and_run(dev, h, w, x, "0", NULL, a, cap, &g0);
	/* forced tiles of few rows cost more than they save: force the pairs too */
	n1 = compile_and_run(dev, h, w, x, rows ? "force" : "1", rows, b, cap, &g1);
	print_message("# %lldx%lld, fused tile rows <= %s: %llu fused groups, %zu outputs\n",
		      (long long)h, (long long)w, rows ? rows : "any",
		      (unsigned long long)g1, n1);
	assert_int_equal(g0, 0);
	/* 8 convs in a chain: at least two disjoint pairs must fuse. */
	assert_true(g1 >= 2);
	assert_int_equal(n0, n1);
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

static void test_fused_small_tiles_are_bit_identical(void **state)
{
	(void)state;
	check_shape(37, 29, "1");
	check_shape(37, 29, "2");
	check_shape(23, 41, "3");
}

static void test_fused_free_tiles_are_bit_identical(void **state)
{
	(void)state;
	check_shape(61, 47, NULL);
	check_shape(9, 7, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused_small_tiles_are_bit_identical),
		cmocka_unit_test(test_fused_free_tiles_are_bit_identical),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
