// SPDX-License-Identifier: MIT
/*
 * A pointwise group's LUT fused into its producer's output stage when
 * another branch was lowered in between (lower.c, fuse_lut_into_producer():
 * the producer need not be the last lop). x -> a = Conv3x3, b = Conv1x1,
 * s = a * relu(a + k1) * k2 (one table), c = Conv1x1(s), y = c + b, with
 * b between a and s in graph order: lowered with a LUT lop of its own
 * (lut_producer=last, the old rule) and as conv_a's output stage, the
 * same output bytes, over odd sizes and tiles forced small.
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
	int64_t c, h, w;
};

static struct npu_graph *build(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("lutfar");
	int64_t xd[4] = { 1, v->c, v->h, v->w }, md[4] = { 1, 8, v->h, v->w };
	int64_t w3[4] = { 8, v->c, 3, 3 }, w1[4] = { 8, v->c, 1, 1 }, w8[4] = { 8, 8, 1, 1 };
	int64_t bd[1] = { 8 }, k3[2] = { 3, 3 }, k1[2] = { 1, 1 }, pads[4] = { 1, 1, 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, xd), *a = gb_value(g, "a", 4, md);
	struct npu_value *b = gb_value(g, "b", 4, md), *s = gb_value(g, "s", 4, md);
	struct npu_value *c = gb_value(g, "c", 4, md), *y = gb_value(g, "y", 4, md);
	struct npu_value *in[3];
	struct npu_node *n, *nb, *ns;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "wa", 4, w3, -0.4f, 0.4f);
	in[2] = gb_weights(g, "ba", 1, bd, -0.2f, 0.2f);
	n = gb_node(g, "Conv", "conv_a", in, 3, a);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "pads", pads, 4);
	{	/* a pointwise group of a, not one activation a conv takes:
		 * s = a * relu(a + k1) * k2 (hard-swish written out, as det's) */
		int64_t one[1] = { 1 };
		struct npu_value *t1 = gb_value(g, "t1", 4, md), *t2 = gb_value(g, "t2", 4, md);
		struct npu_value *t3 = gb_value(g, "t3", 4, md);

		in[0] = a;
		in[1] = gb_weights(g, "k1", 1, one, 0.2f, 0.3f);
		ns = gb_node(g, "Add", "sig", in, 2, t1);
		gb_node(g, "Relu", "sig2", &t1, 1, t2);
		in[0] = a;
		in[1] = t2;
		gb_node(g, "Mul", "sig3", in, 2, t3);
		in[0] = t3;
		in[1] = gb_weights(g, "k2", 1, one, 0.4f, 0.6f);
		gb_node(g, "Mul", "sig4", in, 2, s);
	}
	in[0] = x;
	in[1] = gb_weights(g, "wb", 4, w1, -0.4f, 0.4f);
	in[2] = gb_weights(g, "bb", 1, bd, -0.2f, 0.2f);
	nb = gb_node(g, "Conv", "conv_b", in, 3, b);
	gb_set_ints(nb, "kernel_shape", k1, 2);
	in[0] = s;
	in[1] = gb_weights(g, "wc", 4, w8, -0.4f, 0.4f);
	in[2] = gb_weights(g, "bc", 1, bd, -0.2f, 0.2f);
	n = gb_node(g, "Conv", "conv_c", in, 3, c);
	gb_set_ints(n, "kernel_shape", k1, 2);
	in[0] = c;
	in[1] = b;
	gb_node(g, "Add", "add", in, 2, y);
	/* conv_a, conv_b, sig, ... (the sort would put conv_b there anyway) */
	memmove(&g->nodes[2], &g->nodes[1], 4 * sizeof(*g->nodes));
	g->nodes[1] = nb;
	assert_ptr_equal(g->nodes[2], ns);
	gb_outputs(g, &y, 1);
	return g;
}

static size_t compile_and_run(struct npu_device *dev, const struct variant *v, bool fuse,
			      struct npu_tensor *x, const char *rows, float *out, size_t cap)
{
	struct npu_error err = { 0 };
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t n, i, luts = 0, order_b = 0, order_s = 0;

	gb_codegen_use(fuse ? NULL : "lut_producer=last");
	if (rows)
		gb_codegen.fuse_max_rows = (uint32_t)atoi(rows);
	gb_seed = 29;
	g = build(v);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	for (i = 0; i < g->num_nodes; i++) {
		if (!strcmp(g->nodes[i]->name, "conv_b"))
			order_b = i;
		if (!strcmp(g->nodes[i]->name, "sig"))
			order_s = i;
	}
	assert_true(order_b < order_s);	/* conv_b lowered between conv_a and sig */
	c = gb_compile(g, dev, &x);
	assert_int_equal(c->num_segments, 1);
	for (i = 0; i < c->segments[0]->prog.num_lops; i++)
		luts += c->segments[0]->prog.lops[i].kind == NPU_LOP_LUT;
	/* the Sigmoid a LUT lop, or conv_a's output stage */
	assert_int_equal(luts, fuse ? 0 : 1);
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	gb_codegen_use(NULL);
	return n;
}

static void test_lut_into_earlier_producer(void **state)
{
	static const struct variant v[] = { { 3, 13, 11 }, { 5, 9, 17 }, { 2, 21, 7 } };
	static const char *rows[] = { "1", "3", NULL };
	struct npu_device *dev;
	size_t cap = 1 << 14, i, r, n0, n1, k;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	dev = gb_sim_device();
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct npu_shape xs = { .rank = 4, .dims = { 1, v[i].c, v[i].h, v[i].w } };
		struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
		int64_t e;

		assert_non_null(x);
		gb_seed = 7;
		for (e = 0; e < npu_shape_numel(&xs); e++)
			((float *)x->data)[e] = gb_uniform(-2.0f, 2.0f);
		for (r = 0; r < 3; r++) {
			n0 = compile_and_run(dev, &v[i], false, x, rows[r], a, cap);
			n1 = compile_and_run(dev, &v[i], true, x, rows[r], b, cap);
			assert_int_equal(n0, n1);
			assert_memory_equal(a, b, n0 * sizeof(float));
			for (k = 1; k < n0 && a[k] == a[0]; k++)
				;
			assert_true(k < n0);	/* not trivially constant */
		}
		npu_tensor_destroy(x);
	}
	npu_device_close(dev);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lut_into_earlier_producer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
