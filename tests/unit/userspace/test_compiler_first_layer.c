// SPDX-License-Identifier: MIT
/*
 * Issue 16, MAC utilization without new instructions:
 *  - a first-layer conv over 3 channels reads its graph input as im2col
 *    (gathered by the host while quantizing): one 1x1 CONV2D whose K is
 *    the whole window. Its output must be bit-identical to the plain
 *    conv's (the same int32 sums), which runs when the input has a
 *    second reader; and survive a .npub round trip;
 *  - the self-gated residual y + y * s (s a per-channel gate) becomes
 *    y * (s + 1): one full-size ELTWISE less, still close to fp32.
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
#include <unistd.h>

#include <cmocka.h>

#include "compiler/compiler.h"
#include "compiler/npub.h"
#include "runtime/npu_runtime.h"

#include "graph_builder.h"

/*
 * x[1,3,H,W] -> Conv 3x3 stride 2, pads (1,1,0,1), 32 channels + Relu -> y.
 * With 'second', a MaxPool also reads x (a second output), so x is no
 * longer the conv's alone and it runs as the plain 3x3 conv.
 */
#define H 129
#define W 131
#define OH 64	/* (129 + 1 + 0 - 3) / 2 + 1 */
#define OW 66	/* (131 + 1 + 1 - 3) / 2 + 1 */
#define NY (32 * OH * OW)

static struct npu_graph *build_first_layer(bool second)
{
	struct npu_graph *g = npu_graph_create("first_layer");
	const int64_t x_d[4] = { 1, 3, H, W }, y_d[4] = { 1, 32, OH, OW };
	const int64_t p_d[4] = { 1, 3, H - 1, W - 1 };
	const int64_t w_d[4] = { 32, 3, 3, 3 }, b_d[1] = { 32 };
	const int64_t k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, k2[2] = { 2, 2 }, s1[2] = { 1, 1 };
	const int64_t pads[4] = { 1, 1, 0, 1 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *c = gb_value(g, "c", 4, y_d);
	struct npu_value *y = gb_value(g, "y", 4, y_d), *in[3], *outs[2];
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "w", 4, w_d, -0.4f, 0.4f);
	in[2] = gb_weights(g, "b", 1, b_d, -0.1f, 0.1f);
	n = gb_node(g, "Conv", "conv0", in, 3, c);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "strides", s2, 2);
	gb_set_ints(n, "pads", pads, 4);
	gb_node(g, "Relu", "relu0", &c, 1, y);
	outs[0] = y;
	if (second) {
		outs[1] = gb_value(g, "p", 4, p_d);
		n = gb_node(g, "MaxPool", "pool", &x, 1, outs[1]);
		gb_set_ints(n, "kernel_shape", k2, 2);
		gb_set_ints(n, "strides", s1, 2);
	}
	gb_outputs(g, outs, second ? 2 : 1);
	return g;
}

static struct npu_device *open_sim(void)
{
	struct npu_device_options dopts;
	struct npu_device *dev;
	char msg[256];

	npu_device_options_init(&dopts);
	dopts.backend = NPU_BACKEND_SIM;
	dopts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&dopts, &dev, msg, sizeof(msg)), NPU_OK);
	return dev;
}

static struct npu_compiled *compile(struct npu_graph *g, struct npu_device *dev,
				    struct npu_tensor **x)
{
	struct npu_compiled *c = gb_compile(g, dev, x);
	size_t i;

	for (i = 0; i < c->num_records; i++)
		print_message("# %-10s %-18s %s (%s)\n", c->records[i].node, c->records[i].op_type,
			      c->records[i].placement == NPU_PLACE_NPU ? "npu" : "cpu",
			      c->records[i].reason);
	return c;
}

/* Run g on x; copy output 0 (n floats) into out. */
static void run(struct npu_graph *g, struct npu_tensor *x, float *out, size_t n)
{
	struct npu_exec_options so = { .threads = 1 };
	const struct npu_tensor *in = x;
	struct npu_error err = { 0 };
	struct npu_exec *s;

	if (npu_exec_create(g, &so, &s, &err) != NPU_OK)
		fail_msg("session: %s", err.msg);
	if (npu_exec_run(s, &in, &err) != NPU_OK)
		fail_msg("run: %s", err.msg);
	assert_int_equal(npu_exec_output(s, 0)->nbytes, n * sizeof(float));
	memcpy(out, npu_exec_output(s, 0)->data, n * sizeof(float));
	npu_exec_destroy(s);
}

/* Layout of segment input 'x' in c (-1: no segment reads x). */
static int x_layout(const struct npu_compiled *c)
{
	size_t s, i;

	for (s = 0; s < c->num_segments; s++)
		for (i = 0; i < c->segments[s]->num_inputs; i++)
			if (!strcmp(c->segments[s]->inputs[i]->name, "x"))
				return (int)c->segments[s]->input_layout[i];
	return -1;
}

static struct npu_tensor *random_x(void)
{
	struct npu_shape s = { .rank = 4, .dims = { 1, 3, H, W } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &s);
	int k;

	assert_non_null(x);
	gb_seed = 99;
	for (k = 0; k < 3 * H * W; k++)
		((float *)x->data)[k] = gb_uniform(-1.5f, 1.5f);
	/* Both extremes: the range calibration sees is the one quantized. */
	((float *)x->data)[0] = -2.0f;
	((float *)x->data)[1] = 2.0f;
	return x;
}

static void test_first_layer_im2col_matches_plain_conv_bit_for_bit(void **state)
{
	struct npu_device *dev = open_sim();
	struct npu_tensor *x = random_x();
	struct npu_graph *g, *plain;
	struct npu_compiled *c, *cp;
	float *got = calloc(NY, sizeof(float)), *want = calloc(NY, sizeof(float));
	size_t k, nonzero = 0;

	(void)state;
	gb_seed = 7;
	g = build_first_layer(false);
	gb_seed = 7;
	plain = build_first_layer(true);	/* same weights */
	c = compile(g, dev, &x);
	cp = compile(plain, dev, &x);
	assert_int_equal(c->num_segments, 1);
	assert_int_equal(x_layout(c), NPU_LAYOUT_IM2COL);
	assert_int_equal(x_layout(cp), NPU_LAYOUT_NHWC);
	/* One pass of the MAC rows per output pixel: a 1x1 conv over K = 27. */
	for (k = 0; k < c->segments[0]->prog.num_lops; k++) {
		const struct npu_lop *l = &c->segments[0]->prog.lops[k];

		if (l->kind == NPU_LOP_CONV) {
			assert_int_equal(l->conv.k_h, 1);
			assert_int_equal(l->conv.k_w, 1);
			assert_int_equal(c->segments[0]->prog.acts[l->in].c, 27);
			assert_int_equal(c->segments[0]->prog.acts[l->in].h, OH);
			assert_int_equal(c->segments[0]->prog.acts[l->in].w, OW);
		}
	}
	run(g, x, got, NY);
	run(plain, x, want, NY);
	assert_memory_equal(got, want, NY * sizeof(float));
	for (k = 0; k < NY; k++)
		nonzero += got[k] != 0.0f;
	assert_true(nonzero > NY / 4);	/* not all clamped away */
	free(got);
	free(want);

	npu_compiled_free(cp);
	npu_compiled_free(c);
	npu_graph_destroy(plain);
	npu_graph_destroy(g);
	npu_tensor_destroy(x);
	npu_device_close(dev);
}

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *d;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	d = malloc((size_t)n);
	assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return d;
}

/* The im2col window travels in the .npub's layout word; a bad one is refused. */
static void test_im2col_input_survives_npub_round_trip(void **state)
{
	static const char fake_onnx[] = "model";
	struct npu_device *dev = open_sim();
	struct npu_tensor *x = random_x();
	struct npu_graph *g, *g2;
	struct npu_compiled *c, *c2 = NULL;
	struct npu_qdq_table qdq = { 0 };
	struct npu_error err = { 0 };
	struct npu_npub *f = NULL;
	float *first = calloc(NY, sizeof(float)), *second = calloc(NY, sizeof(float));
	char path[] = "/tmp/npub-im2col-XXXXXX";
	size_t size, at;
	uint8_t *bytes;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	gb_seed = 7;
	g = build_first_layer(false);
	gb_seed = 7;
	g2 = build_first_layer(false);
	c = compile(g, dev, &x);
	run(g, x, first, NY);
	if (npu_npub_save(path, &(struct npu_npub_source){ fake_onnx, sizeof(fake_onnx), NULL },
			  g, c, &err) != NPU_OK)
		fail_msg("save: %s", err.msg);
	bytes = read_all(path, &size);
	if (npu_npub_open(bytes, size, path, &f, &err) != NPU_OK)
		fail_msg("open: %s", err.msg);
	/* A finished file: its own graph, no import and no pass. */
	npu_graph_destroy(g2);
	g2 = npu_npub_take_graph(f);
	assert_non_null(g2);
	if (npu_npub_instantiate(f, g2, dev, false, &c2, &err) != NPU_OK)
		fail_msg("instantiate: %s", err.msg);
	assert_int_equal(x_layout(c2), NPU_LAYOUT_IM2COL);
	run(g2, x, second, NY);
	assert_memory_equal(first, second, NY * sizeof(float));
	free(first);
	free(second);
	npu_npub_close(f);

	/* A window the loader must refuse although the checksum is right. */
	for (at = 0; at < c->segments[0]->num_inputs; at++)
		if (c->segments[0]->input_layout[at] == NPU_LAYOUT_IM2COL)
			c->segments[0]->prog.acts[c->segments[0]->input_acts[at]].im2col.k_h = 0;
	assert_int_equal(npu_npub_save(path, &(struct npu_npub_source){ "m", 1, NULL }, g, c, &err), NPU_OK);
	free(bytes);
	bytes = read_all(path, &size);
	f = NULL;
	assert_int_equal(npu_npub_open(bytes, size, path, &f, &err), NPU_ERR_MODEL);
	print_message("# %s\n", err.msg);
	assert_non_null(strstr(err.msg, "layout"));

	npu_qdq_table_free(&qdq);
	npu_compiled_free(c2);
	npu_compiled_free(c);
	npu_graph_destroy(g2);
	npu_graph_destroy(g);
	npu_tensor_destroy(x);
	npu_device_close(dev);
	free(bytes);
	unlink(path);
}

#define GC 32
#define GH 40
#define GW 44
#define NG (GC * GH * GW)

/*
 * x[1,GC,GH,GW] -> Conv 1x1 (GC) -> y; s = HardSigmoid(Conv1x1(GAP(y)));
 * out = y + y * s (PP-OCR's RSE tail), with the Mul's operands in 'order'.
 */
static struct npu_graph *build_self_gate(bool swap)
{
	struct npu_graph *g = npu_graph_create("self_gate");
	const int64_t x_d[4] = { 1, GC, GH, GW }, g_d[4] = { 1, GC, 1, 1 };
	const int64_t w_d[4] = { GC, GC, 1, 1 }, b_d[1] = { GC };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *y = gb_value(g, "y", 4, x_d);
	struct npu_value *gap = gb_value(g, "gap", 4, g_d), *se = gb_value(g, "se", 4, g_d);
	struct npu_value *s = gb_value(g, "s", 4, g_d), *m = gb_value(g, "m", 4, x_d);
	struct npu_value *out = gb_value(g, "out", 4, x_d), *in[3];

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, w_d, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b1", 1, b_d, -0.2f, 0.2f);
	gb_node(g, "Conv", "conv", in, 3, y);
	gb_node(g, "GlobalAveragePool", "gap", &y, 1, gap);
	in[0] = gap;
	in[1] = gb_weights(g, "w2", 4, w_d, -1.0f, 1.0f);
	in[2] = gb_weights(g, "b2", 1, b_d, -0.5f, 0.5f);
	gb_node(g, "Conv", "se", in, 3, se);
	gb_node(g, "HardSigmoid", "hsig", &se, 1, s);
	in[0] = swap ? s : y;
	in[1] = swap ? y : s;
	gb_node(g, "Mul", "gate", in, 2, m);
	in[0] = swap ? m : y;
	in[1] = swap ? y : m;
	gb_node(g, "Add", "residual", in, 2, out);
	gb_outputs(g, &out, 1);
	return g;
}

static void run_self_gate(bool swap)
{
	struct npu_device *dev = open_sim();
	struct npu_shape xs = { .rank = 4, .dims = { 1, GC, GH, GW } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	struct npu_error err = { 0 };
	struct npu_graph *g, *ref;
	struct npu_compiled *c;
	float *want = calloc(NG, sizeof(float)), *got = calloc(NG, sizeof(float));
	float dot = 0, n1 = 0, n2 = 0, worst = 0;
	size_t i, elt = 0, adds = 0;
	int k;

	gb_seed = 5;
	for (k = 0; k < NG; k++)
		((float *)x->data)[k] = gb_uniform(-1.0f, 1.0f);
	gb_seed = 11;
	ref = build_self_gate(swap);
	gb_seed = 11;
	g = build_self_gate(swap);
	assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(ref, true, &err), NPU_OK);
	run(ref, x, want, NG);
	c = compile(g, dev, &x);
	for (i = 0; i < c->num_segments; i++) {
		const struct npu_segment_program *p = &c->segments[i]->prog;

		for (k = 0; k < (int)p->num_lops; k++)
			if (p->lops[k].kind == NPU_LOP_ELTWISE &&
			    npu_act_elems(&p->acts[p->lops[k].out]) == NG) {
				elt++;
				adds += p->lops[k].elt.mode == NPU_ELT_ADD;
			}
	}
	/* y * (s + 1): one MUL over y, no ADD of two full tensors (s + 1
	 * is an ELTWISE over GC values, or part of the gate's LUT). */
	assert_int_equal(elt, 1);
	assert_int_equal(adds, 0);
	run(g, x, got, NG);
	for (k = 0; k < NG; k++) {
		dot += want[k] * got[k];
		n1 += want[k] * want[k];
		n2 += got[k] * got[k];
		if (fabsf(want[k] - got[k]) > worst)
			worst = fabsf(want[k] - got[k]);
	}
	print_message("# cosine %.5f, worst %.4f (range %.3f)\n", dot / sqrtf(n1 * n2), worst,
		      sqrtf(n1 / (NG)));
	assert_true(dot / sqrtf(n1 * n2) > 0.995f);
	assert_true(worst < 0.05f * sqrtf(n1 / (NG)) * 4);

	free(want);
	free(got);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	npu_graph_destroy(ref);
	npu_tensor_destroy(x);
	npu_device_close(dev);
}

static void test_self_gated_residual_is_one_mul(void **state)
{
	(void)state;
	run_self_gate(false);
	run_self_gate(true);
}

/* Count nodes of op type 'op' in g. */
static size_t count_op(const struct npu_graph *g, const char *op)
{
	size_t i, n = 0;

	for (i = 0; i < g->num_nodes; i++)
		n += !strcmp(g->nodes[i]->op_type, op);
	return n;
}

/*
 * Only a gate that broadcasts into y is rewritten: y + y * z with z as big
 * as y (s + 1 would be a full-size op again) and y + w * s with w not y
 * stay as they are.
 */
static void test_self_gate_pass_leaves_other_shapes(void **state)
{
	const int64_t d[4] = { 1, 4, 6, 6 }, gd[4] = { 1, 4, 1, 1 };
	struct npu_qdq_table qdq = { 0 };
	struct npu_error err = { 0 };
	int variant;

	(void)state;
	for (variant = 0; variant < 3; variant++) {
		struct npu_graph *g = npu_graph_create("gate");
		struct npu_value *y = gb_value(g, "y", 4, d), *w = gb_value(g, "w", 4, d);
		struct npu_value *z = gb_value(g, "z", 4, variant == 1 ? d : gd);
		struct npu_value *m = gb_value(g, "m", 4, d), *out = gb_value(g, "out", 4, d), *in[2];

		y->is_graph_input = w->is_graph_input = z->is_graph_input = true;
		g->inputs = malloc(3 * sizeof(*g->inputs));
		g->inputs[0] = y;
		g->inputs[1] = w;
		g->inputs[2] = z;
		g->num_inputs = 3;
		in[0] = variant == 2 ? w : y;
		in[1] = z;
		gb_node(g, "Mul", "gate", in, 2, m);
		in[0] = y;
		in[1] = m;
		gb_node(g, "Add", "residual", in, 2, out);
		gb_outputs(g, &out, 1);
		assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
		assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
		assert_int_equal(npu_compile_passes_pre(g, &qdq, &err), NPU_OK);
		/* Variant 0 is the gate: the Add now adds 1 to z, the Mul writes out. */
		assert_int_equal(count_op(g, "Mul"), 1);
		assert_int_equal(count_op(g, "Add"), 1);
		assert_true((out->producer && !strcmp(out->producer->op_type, "Mul")) ==
			    (variant == 0));
		npu_graph_destroy(g);
	}
	npu_qdq_table_free(&qdq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_layer_im2col_matches_plain_conv_bit_for_bit),
		cmocka_unit_test(test_im2col_input_survives_npub_round_trip),
		cmocka_unit_test(test_self_gated_residual_is_one_mul),
		cmocka_unit_test(test_self_gate_pass_leaves_other_shapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
