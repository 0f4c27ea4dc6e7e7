// SPDX-License-Identifier: MIT
/*
 * RESIZE inside the ELTWISE tile loop (codegen_fusion_groups.c, gen_resize_elt()): the
 * FPN's `a + up(b)` whose upsampled tensor stays in SRAM must give exactly
 * the bytes of the same model compiled with fusion off (fuse=off), over
 * odd sizes, non-integer scales, bilinear and nearest, the resized tensor
 * as either operand, Add and Mul, with tiles forced small (codegen fuse_rows)
 * so that the tiles' input windows overlap. The same for a channel Concat
 * whose copies run as one tile loop (gen_concat()), and for a gated
 * operand p * sigmoid(GlobalAveragePool(p)) (det's RSE gate) made inside
 * the loop from p (compile.c sink_gates(), the gate ELTWISE in the loop).
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
	bool linear;		/* bilinear half_pixel, else nearest asymmetric floor */
	bool resized_first;	/* Add(up(q), p) instead of Add(p, up(q)) */
	const char *op;		/* "Add" or "Mul"; NULL: the Concat model */
	bool gate;		/* op(p * sigmoid(gap(p)), up(q)) */
};

static struct npu_value *conv(struct npu_graph *g, struct npu_value *x, const char *name,
			      int64_t out_c, int64_t k);

/*
 * x[1,c,h,w] -> p = Conv1x1 -> q = Conv3x3 stride 2 (pad 1) -> r =
 * Resize(q) to h x w (sizes) -> y = op(p, r) (or op(r, p)) -> Relu.
 * With 'gate': p * sigmoid(gap(p)) in place of p, and three 1x1 convs
 * after q, so that the gate is lowered a few lops before the RESIZE.
 */
static struct npu_graph *build(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("fpn");
	int64_t xd[4] = { 1, v->c, v->h, v->w };
	int64_t qd[4] = { 1, v->c, (v->h - 1) / 2 + 1, (v->w - 1) / 2 + 1 };
	int64_t wd1[4] = { v->c, v->c, 1, 1 }, wd2[4] = { v->c, v->c, 3, 3 }, bd[1] = { v->c };
	int64_t k1[2] = { 1, 1 }, k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, pads[4] = { 1, 1, 1, 1 };
	struct npu_shape ss = { .rank = 1, .dims = { 4 } };
	struct npu_tensor *sz = npu_tensor_create(NPU_DTYPE_INT64, &ss);
	struct npu_value *x = gb_value(g, "x", 4, xd), *p = gb_value(g, "p", 4, xd), *q = gb_value(g, "q", 4, qd);
	struct npu_value *r = gb_value(g, "r", 4, xd), *s = gb_value(g, "s", 4, xd), *y = gb_value(g, "y", 4, xd);
	struct npu_value *in[4];
	struct npu_node *n;

	assert_non_null(sz);
	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, wd1, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b1", 1, bd, -0.2f, 0.2f);
	n = gb_node(g, "Conv", "conv1", in, 3, p);
	gb_set_ints(n, "kernel_shape", k1, 2);
	in[0] = p;
	in[1] = gb_weights(g, "w2", 4, wd2, -0.3f, 0.3f);
	in[2] = gb_weights(g, "b2", 1, bd, -0.2f, 0.2f);
	n = gb_node(g, "Conv", "conv2", in, 3, q);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "strides", s2, 2);
	gb_set_ints(n, "pads", pads, 4);
	memcpy(sz->data, xd, sizeof(xd));
	if (v->gate)
		q = conv(g, conv(g, conv(g, q, "c3", v->c, 1), "c4", v->c, 1), "c5", v->c, 1);
	in[0] = q;
	in[1] = NULL;
	in[2] = NULL;
	in[3] = npu_graph_add_constant(g, "sizes", sz, NULL);
	n = gb_node(g, "Resize", "up", in, 4, r);
	if (v->linear) {
		gb_set_str(n, "mode", "linear");
		gb_set_str(n, "coordinate_transformation_mode", "half_pixel");
	} else {
		gb_set_str(n, "mode", "nearest");
		gb_set_str(n, "coordinate_transformation_mode", "asymmetric");
		gb_set_str(n, "nearest_mode", "floor");
	}
	if (v->gate) {	/* the gate comes first in graph order: sink_gates() moves it */
		int64_t gd[4] = { 1, v->c, 1, 1 };
		struct npu_value *gp = gb_value(g, "gp", 4, gd), *gs = gb_value(g, "gs", 4, gd);
		struct npu_value *gy = gb_value(g, "gy", 4, xd);
		struct npu_node *t[3];

		t[0] = gb_node(g, "GlobalAveragePool", "gap", &p, 1, gp);
		t[1] = gb_node(g, "Sigmoid", "gsig", &gp, 1, gs);
		in[0] = p;
		in[1] = gs;
		t[2] = gb_node(g, "Mul", "gate", in, 2, gy);
		/* graph order conv1, gap, gsig, gate, conv2, c3, c4, c5, up (the
		 * sort keeps a valid order): the gate five lops before its reader */
		memmove(&g->nodes[4], &g->nodes[1], (g->num_nodes - 4) * sizeof(*g->nodes));
		memcpy(&g->nodes[1], t, sizeof(t));
		p = gy;
	}
	in[0] = v->resized_first ? r : p;
	in[1] = v->resized_first ? p : r;
	gb_node(g, v->op, "merge", in, 2, s);
	gb_node(g, "Relu", "relu", &s, 1, y);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

static struct npu_value *conv(struct npu_graph *g, struct npu_value *x, const char *name,
			      int64_t out_c, int64_t k)
{
	int64_t od[4] = { 1, out_c, x->shape.dims[2], x->shape.dims[3] };
	int64_t wd[4] = { out_c, x->shape.dims[1], k, k }, bd[1] = { out_c };
	int64_t ks[2] = { k, k }, pads[4] = { k / 2, k / 2, k / 2, k / 2 };
	struct npu_value *in[3], *y = gb_value(g, name, 4, od);
	struct npu_node *n;
	char wn[32];

	in[0] = x;
	snprintf(wn, sizeof(wn), "%s_w", name);
	in[1] = gb_weights(g, wn, 4, wd, -0.5f, 0.5f);
	snprintf(wn, sizeof(wn), "%s_b", name);
	in[2] = gb_weights(g, wn, 1, bd, -0.2f, 0.2f);
	n = gb_node(g, "Conv", wn, in, 3, y);
	gb_set_ints(n, "kernel_shape", ks, 2);
	gb_set_ints(n, "pads", pads, 4);
	return y;
}

static struct npu_value *resize(struct npu_graph *g, struct npu_value *x, const char *name,
				int64_t h, int64_t w, bool linear)
{
	int64_t od[4] = { 1, x->shape.dims[1], h, w };
	struct npu_shape ss = { .rank = 1, .dims = { 4 } };
	struct npu_tensor *sz = npu_tensor_create(NPU_DTYPE_INT64, &ss);
	struct npu_value *in[4], *y = gb_value(g, name, 4, od);
	struct npu_node *n;
	char sn[32];

	assert_non_null(sz);
	memcpy(sz->data, od, sizeof(od));
	snprintf(sn, sizeof(sn), "%s_sizes", name);
	in[0] = x;
	in[1] = NULL;
	in[2] = NULL;
	in[3] = npu_graph_add_constant(g, sn, sz, NULL);
	n = gb_node(g, "Resize", name, in, 4, y);
	gb_set_str(n, "mode", linear ? "linear" : "nearest");
	gb_set_str(n, "coordinate_transformation_mode", linear ? "half_pixel" : "asymmetric");
	if (!linear)
		gb_set_str(n, "nearest_mode", "floor");
	return y;
}

/* y * sigmoid(gap(y)) (det's RSE gate), the Mul node named 'name'. */
static struct npu_value *gate(struct npu_graph *g, struct npu_value *y, const char *name)
{
	int64_t gd[4] = { 1, y->shape.dims[1], 1, 1 };
	struct npu_value *in[2], *o = gb_value(g, name, 4, y->shape.dims);
	char vn[40];

	snprintf(vn, sizeof(vn), "%s_gap", name);
	in[0] = gb_value(g, vn, 4, gd);
	gb_node(g, "GlobalAveragePool", vn, &y, 1, in[0]);
	snprintf(vn, sizeof(vn), "%s_sig", name);
	in[1] = gb_value(g, vn, 4, gd);
	gb_node(g, "Sigmoid", vn, &in[0], 1, in[1]);
	in[0] = y;
	gb_node(g, "Mul", name, in, 2, o);
	return o;
}

/*
 * The FPN's Concat: x[1,c,h,w] -> three convs of 5, 7 and 3 channels ->
 * Concat on channels (-> 15) -> Conv3x3 to 4 channels. With 'linear' /
 * 'resized_first' the 5- and 3-channel inputs are upsampled from a
 * downsampled x (as det's neck does), so their RESIZEs run inside the
 * Concat's loop. With 'gate' the 7-channel input (and the upsampled
 * 5-channel one's source) is gated, the gates inside the loop too.
 */
static struct npu_graph *build_concat(const struct variant *v)
{
	struct npu_graph *g = npu_graph_create("concat");
	int64_t xd[4] = { 1, v->c, v->h, v->w }, cd[4] = { 1, 15, v->h, v->w };
	struct npu_value *x = gb_value(g, "x", 4, xd), *cat = gb_value(g, "cat", 4, cd), *in[3], *y;
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	if (v->resized_first) {
		struct npu_value *d = resize(g, x, "down", (v->h + 2) / 3, (v->w + 1) / 2, false);

		struct npu_value *p5 = conv(g, d, "p5", 5, 1);

		in[0] = resize(g, v->gate ? gate(g, p5, "g5") : p5, "up5", v->h, v->w, v->linear);
		in[2] = resize(g, conv(g, d, "p3", 3, 3), "up3", v->h, v->w, false);
	} else {
		in[0] = conv(g, x, "p5", 5, 1);
		in[2] = conv(g, x, "p3", 3, 1);
	}
	in[1] = conv(g, x, "p7", 7, 3);
	if (v->gate)
		in[1] = gate(g, in[1], "g7");
	n = gb_node(g, "Concat", "cat", in, 3, cat);
	gb_set_int(n, "axis", 1);
	y = conv(g, cat, "head", 4, 3);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/* Compile for sim with codegen fuse=<fuse>, run on x, copy the output out. */
static size_t compile_and_run(struct npu_device *dev, const struct variant *v,
			      struct npu_tensor *x, const char *fuse, const char *rows,
			      float *out, size_t cap, uint64_t *fused_groups,
			      size_t *fused_lops, bool *gate_loop)
{
	struct npu_compiled *c;
	struct npu_error err = { 0 };
	struct npu_graph *g;
	size_t n;

	gb_codegen_use(NULL);
	gb_codegen.fuse = fuse_choice(fuse);
	if (rows)
		gb_codegen.fuse_max_rows = (uint32_t)atoi(rows);
	gb_seed = 17;	/* the same weights every time */
	g = v->op ? build(v) : build_concat(v);
	if (v->op && v->gate) {	/* in sorted graph order compile.c must sink the gate */
		size_t gi = 0, ci = 0;

		assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
		for (n = 0; n < g->num_nodes; n++) {
			if (!strcmp(g->nodes[n]->name, "gate"))
				gi = n;
			if (!strcmp(g->nodes[n]->name, "c5_b"))	/* conv()'s node name */
				ci = n;
		}
		assert_true(gi + 1 < ci);
	}
	c = gb_compile(g, dev, &x);
	/* everything on the NPU, or the test would compare CPU with CPU */
	assert_int_equal(c->num_segments, 1);
	*fused_groups = c->segments[0]->code.fused_groups;
	/* lops run inside another's loop (the Concat's copies and RESIZEs) */
	*fused_lops = 0;
	*gate_loop = false;
	for (n = 0; n < c->segments[0]->prog.num_lops; n++) {
		const struct npu_segment_program *pr = &c->segments[0]->prog;

		*fused_lops += c->segments[0]->code.lop_fused[n];
		/* the gate heads a loop with the RESIZE and the ELTWISE inside */
		if (!strcmp(pr->lops[n].name, "gate") && n + 2 < pr->num_lops &&
		    pr->lops[n + 1].kind == NPU_LOP_RESIZE && !c->segments[0]->code.lop_fused[n] &&
		    c->segments[0]->code.lop_fused[n + 1] && c->segments[0]->code.lop_fused[n + 2])
			*gate_loop = true;
	}
	if (!v->op && v->gate) {	/* every lop from the gate g7 to the last COPY in one loop */
		const struct npu_segment_program *pr = &c->segments[0]->prog;
		size_t gi = pr->num_lops, last = 0, k;

		for (n = 0; n < pr->num_lops; n++) {
			if (!strcmp(pr->lops[n].name, "g7"))
				gi = n;
			if (pr->lops[n].kind == NPU_LOP_COPY)
				last = n;
		}
		*gate_loop = gi < last;
		for (k = gi + 1; k <= last && *gate_loop; k++)
			*gate_loop = c->segments[0]->code.lop_fused[k];
	}
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
	uint64_t g0, g1;
	size_t f0, f1;
	bool gl0, gl1;
	int64_t k;

	assert_non_null(x);
	assert_non_null(a);
	assert_non_null(b);
	gb_seed = 3;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();

	n0 = compile_and_run(dev, v, x, "0", NULL, a, cap, &g0, &f0, &gl0);
	/* force: a small plain Concat alone is cheaper as copies */
	n1 = compile_and_run(dev, v, x, "force", rows, b, cap, &g1, &f1, &gl1);
	print_message("# %s%s %lldx%lldx%lld %s%s, tile rows <= %s: %llu fused groups, %zu lops inside\n",
		      v->op ? v->op : "Concat", v->gate ? " of a gated operand" : "",
		      (long long)v->c, (long long)v->h, (long long)v->w,
		      v->linear ? "bilinear" : "nearest", v->resized_first ? " (resized a)" : "",
		      rows ? rows : "any", (unsigned long long)g1, f1);
	assert_int_equal(g0, 0);
	assert_true(g1 >= 1);	/* the RESIZE -> ELTWISE pair, the Concat */
	/* the Concat's other two copies, and both RESIZEs when nearest */
	if (!v->op)
		assert_true(f1 >= (v->resized_first && !v->linear ? 4u : 2u));
	/* the RESIZE and the ELTWISE (the copies) inside the gate's loop; not
	 * the Concat's with a bilinear RESIZE whose copy requantizes (a LUT
	 * commutes only with nearest): that RESIZE and what precedes it stay
	 * outside, the bytes are checked all the same */
	if (v->gate && (v->op || !v->linear))
		assert_true(gl1 && !gl0);
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

static void test_resize_eltwise_small_tiles(void **state)
{
	static const struct variant v[] = {
		{ 6, 13, 11, true, false, "Add", false },
		{ 5, 17, 9, false, true, "Add", false },
		{ 7, 11, 15, true, true, "Mul", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		check(&v[i], "1");
		check(&v[i], "3");
	}
}

/* The gate y = p * sigmoid(gap(p)) made inside the RESIZE -> ELTWISE loop. */
static void test_gate_resize_eltwise(void **state)
{
	static const struct variant v[] = {
		{ 6, 13, 11, true, false, "Add", true },
		{ 5, 17, 9, false, true, "Add", true },
		{ 7, 11, 15, false, false, "Mul", true },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		check(&v[i], "1");
		check(&v[i], "4");
		check(&v[i], NULL);
	}
}

static void test_resize_eltwise_free_tiles(void **state)
{
	static const struct variant v[] = {
		{ 6, 13, 11, true, false, "Add", false },
		{ 9, 40, 33, false, false, "Add", false },
		{ 3, 21, 29, true, true, "Mul", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check(&v[i], NULL);
}

/* Concat's copies as one tile loop (gen_concat()), with RESIZEs absorbed. */
static void test_concat_group(void **state)
{
	static const struct variant v[] = {
		{ 4, 13, 11, false, false, NULL, false },
		{ 3, 7, 33, false, false, NULL, false },
		{ 4, 17, 12, false, true, NULL, false },
		{ 2, 11, 19, true, true, NULL, false },
		{ 4, 13, 11, false, false, NULL, true },
		{ 4, 17, 12, false, true, NULL, true },
		{ 2, 11, 19, true, true, NULL, true },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		check(&v[i], "1");
		check(&v[i], "4");
		check(&v[i], NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concat_group),
		cmocka_unit_test(test_resize_eltwise_small_tiles),
		cmocka_unit_test(test_resize_eltwise_free_tiles),
		cmocka_unit_test(test_gate_resize_eltwise),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
