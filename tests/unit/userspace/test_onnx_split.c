// SPDX-License-Identifier: MIT
/*
 * Split computing (issue 18): cutting a model in two at named tensors.
 * A small branchy model (a residual, an If whose branches capture outer
 * tensors, a second input only the end reads) is split at every cut the
 * enumeration offers; the head and the tail then run one after the other
 * on the CPU through the engine API and must give the whole model's output
 * bit for bit. Bad cuts are errors naming the tensor: one that crosses the
 * cut (directly or through a subgraph's capture), an unknown name, an
 * initializer, a model input or output, a cut tensor nothing reads.
 * int8 transfer: the quantized parts send ONNX's uint8 quantization of the
 * cut tensor and give the whole model's output within a quantization step.
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

#include "npu-tools/onnx_split.h"
#include "npu/npu.h"
#include "onnx_builder.h"

enum { FLOAT = 1, BOOL = 9 };

static struct tb_model top, then_b, else_b;
static Onnx__AttributeProto if_attr[2], *if_attr_ptr[2];
static int64_t dims_14[2] = { 1, 4 }, dims_scalar[1];
static float w1[4] = { 0.5f, -1.25f, 2.0f, 0.75f }, w2[4] = { 0.1f, -0.2f, 0.3f, -0.4f };
static int32_t cond_true[1] = { 1 };

static void graph_attr(int k, const char *name, Onnx__GraphProto *g)
{
	onnx__attribute_proto__init(&if_attr[k]);
	if_attr[k].name = (char *)name;
	if_attr[k].has_type = 1;
	if_attr[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	if_attr[k].g = g;
	if_attr_ptr[k] = &if_attr[k];
}

/*
 *   a = Mul(x, w1); b = Relu(a); c = Add(b, w2); d = Sigmoid(c)
 *   e = Add(d, b)                      residual: b skips c and d
 *   f = Tanh(e)
 *   g = If(cond) then Mul(e, f) else Sub(e, f)   both branches capture e and f
 *   y = Add(g, x2)                     x2: a model input only the end reads
 */
static void *build(size_t *size)
{
	static const int64_t d[] = { 1, 4 };
	Onnx__TensorProto *t;
	Onnx__NodeProto *iff;

	tb_init(&then_b, 13);
	then_b.graph.name = "then";
	tb_node(&then_b, "Mul", "then_mul", "t_out", 2, "e", "f");
	tb_output(&then_b, "t_out", 2, d);
	tb_init(&else_b, 13);
	else_b.graph.name = "else";
	tb_node(&else_b, "Sub", "else_sub", "e_out", 2, "e", "f");
	tb_output(&else_b, "e_out", 2, d);

	tb_init(&top, 13);
	tb_input(&top, "x", 2, d);
	tb_input(&top, "x2", 2, d);
	tb_output(&top, "y", 2, d);
	t = tb_init_tensor(&top, "w1", FLOAT, 2, dims_14);
	t->n_float_data = 4;
	t->float_data = w1;
	t = tb_init_tensor(&top, "w2", FLOAT, 2, dims_14);
	t->n_float_data = 4;
	t->float_data = w2;
	t = tb_init_tensor(&top, "cond", BOOL, 0, dims_scalar);
	t->n_int32_data = 1;
	t->int32_data = cond_true;
	tb_node(&top, "Mul", "mul", "a", 2, "x", "w1");
	tb_node(&top, "Relu", "relu", "b", 1, "a", NULL);
	tb_node(&top, "Add", "add_w2", "c", 2, "b", "w2");
	tb_node(&top, "Sigmoid", "sigmoid", "d", 1, "c", NULL);
	tb_node(&top, "Add", "residual", "e", 2, "d", "b");
	tb_node(&top, "Tanh", "tanh", "f", 1, "e", NULL);
	iff = tb_node(&top, "If", "if", "g", 1, "cond", NULL);
	graph_attr(0, "then_branch", &then_b.graph);
	graph_attr(1, "else_branch", &else_b.graph);
	iff->n_attribute = 2;
	iff->attribute = if_attr_ptr;
	tb_node(&top, "Add", "add_x2", "y", 2, "g", "x2");
	return tb_pack(&top, size);
}

static const float x_in[4] = { 1.0f, 2.0f, -3.0f, 0.25f };
static const float x2_in[4] = { -0.5f, 0.5f, 1.5f, -2.5f };
static struct npu_engine *engine;

static struct npu_host_tensor host(const char *name, const void *data)
{
	struct npu_host_tensor t = { .name = name, .dtype = NPU_TYPE_FLOAT, .rank = 2,
				     .dims = { 1, 4 }, .data = (void *)data,
				     .nbytes = 4 * sizeof(float) };
	return t;
}

static int setup(void **state)
{
	(void)state;
	return npu_engine_create(NULL, &engine) != NPU_OK;
}

static int teardown(void **state)
{
	(void)state;
	npu_engine_destroy(engine);
	return 0;
}

/* Run a serialized model on 'ins' (given by name) and copy output 0. */
static void run_model(const void *buf, size_t size, const char *name,
		      const struct npu_host_tensor *ins, size_t n_in,
		      struct npu_model **keep_model, struct npu_session **keep_session,
		      struct npu_host_tensor *out0)
{
	struct npu_model_options o;

	npu_model_options_init(&o);
	o.device = "cpu";
	if (npu_model_load_memory(engine, buf, size, name, &o, keep_model) != NPU_OK)
		fail_msg("load %s: %s", name, npu_last_error());
	assert_int_equal(npu_session_create(*keep_model, NULL, keep_session), NPU_OK);
	if (npu_session_run(*keep_session, ins, n_in) != NPU_OK)
		fail_msg("run %s: %s", name, npu_last_error());
	assert_int_equal(npu_session_output(*keep_session, 0, out0), NPU_OK);
}

struct cuts {
	char names[32][2][16];
	size_t count[32];
	size_t n;
};

static void collect(void *arg, const char *const *names, size_t count)
{
	struct cuts *c = arg;
	size_t i;

	assert_true(c->n < 32 && count <= 2);
	for (i = 0; i < count; i++)
		snprintf(c->names[c->n][i], sizeof(c->names[c->n][i]), "%s", names[i]);
	c->count[c->n++] = count;
}

static void test_every_cut_runs_bit_exact(void **state)
{
	struct npu_onnx_cutgraph *cg;
	char err[512] = "";
	struct npu_host_tensor ins[2] = { host("x", x_in), host("x2", x2_in) };
	struct npu_model *whole;
	struct npu_session *ws;
	struct npu_host_tensor ref;
	struct cuts cuts = { 0 };
	size_t size, i, k;
	void *buf = build(&size);
	/* The valid single cuts and the two-tensor frontiers of this graph. */
	static const char *const expect[][2] = {
		{ "a", NULL }, { "b", NULL }, { "e", NULL }, { "g", NULL },
		{ "b", "c" }, { "b", "d" }, { "e", "f" },
	};

	(void)state;
	run_model(buf, size, "whole", ins, 2, &whole, &ws, &ref);
	assert_int_equal(npu_onnx_cutgraph_create(buf, size, "split.onnx", &cg, err, sizeof(err)),
			 NPU_OK);
	assert_int_equal(npu_onnx_cutgraph_num_nodes(cg), 8);
	npu_onnx_cutgraph_enumerate(cg, 0, collect, &cuts);
	npu_onnx_cutgraph_destroy(cg);
	assert_int_equal(cuts.n, sizeof(expect) / sizeof(expect[0]));
	for (i = 0; i < cuts.n; i++) {
		assert_string_equal(cuts.names[i][0], expect[i][0]);
		if (expect[i][1]) {
			assert_int_equal(cuts.count[i], 2);
			assert_string_equal(cuts.names[i][1], expect[i][1]);
		} else {
			assert_int_equal(cuts.count[i], 1);
		}
	}
	for (i = 0; i < cuts.n; i++) {
		const char *cut[2] = { cuts.names[i][0], cuts.names[i][1] };
		struct npu_onnx_split sp;
		struct npu_model *hm, *tm;
		struct npu_session *hs, *ts;
		struct npu_host_tensor h0, t0, tin[3];
		size_t n_tin = 0, ho;
		bool x2_in_tail = false;

		if (npu_onnx_split(buf, size, "split.onnx", cut, cuts.count[i], &sp, err,
				   sizeof(err)) != NPU_OK)
			fail_msg("cut %s: %s", cut[0], err);
		/* The head reads only x: the raw second input stays for the tail. */
		run_model(sp.head, sp.head_size, "head", ins, 1, &hm, &hs, &h0);
		assert_int_equal(npu_model_num_inputs(hm), 1);
		assert_int_equal(npu_model_num_outputs(hm), cuts.count[i]);
		for (ho = 0; ho < cuts.count[i]; ho++) {
			assert_int_equal(npu_session_output(hs, ho, &tin[n_tin]), NPU_OK);
			assert_string_equal(tin[n_tin].name, cut[ho]);
			n_tin++;
		}
		for (k = 0; k < sp.num_tail_inputs; k++)
			if (!strcmp(sp.tail_inputs[k], "x2"))
				x2_in_tail = true;
		assert_true(x2_in_tail);
		assert_int_equal(sp.num_tail_inputs, cuts.count[i] + 1);
		tin[n_tin++] = ins[1];
		run_model(sp.tail, sp.tail_size, "tail", tin, n_tin, &tm, &ts, &t0);
		assert_int_equal(t0.nbytes, ref.nbytes);
		if (memcmp(t0.data, ref.data, ref.nbytes))
			fail_msg("cut at '%s'%s%s: tail output differs from the whole model",
				 cut[0], cut[1] ? ", " : "", cut[1] ? cut[1] : "");
		/* Every node in exactly one part (no constant-only nodes here). */
		assert_int_equal(sp.head_nodes + sp.tail_nodes, 8);
		npu_session_destroy(ts);
		npu_model_destroy(tm);
		npu_session_destroy(hs);
		npu_model_destroy(hm);
		npu_onnx_split_free(&sp);
	}
	npu_session_destroy(ws);
	npu_model_destroy(whole);
	free(buf);
}

static void expect_bad(const void *buf, size_t size, const char *const *cut, size_t n,
		       const char *needle)
{
	struct npu_onnx_split sp;
	char err[512] = "";

	if (npu_onnx_split(buf, size, "split.onnx", cut, n, &sp, err, sizeof(err)) == NPU_OK)
		fail_msg("cut at '%s' was accepted", cut[0]);
	if (!strstr(err, needle))
		fail_msg("cut at '%s': message '%s' lacks '%s'", cut[0], err,
			 needle);
	assert_null(sp.head);
	assert_null(sp.tail);
}

static void test_bad_cuts_are_named(void **state)
{
	size_t size;
	void *buf = build(&size);

	(void)state;
	/* c and d leave the residual's b behind. */
	expect_bad(buf, size, (const char *[]){ "c" }, 1,
		   "tensor 'b' crosses it (node 'residual' (Add) after the cut reads it");
	expect_bad(buf, size, (const char *[]){ "d" }, 1, "tensor 'b' crosses it");
	/* f: the If's branches read e, which the head computes. */
	expect_bad(buf, size, (const char *[]){ "f" }, 1,
		   "tensor 'e' crosses it (node 'if' (If) after the cut reads it");
	expect_bad(buf, size, (const char *[]){ "nosuch" }, 1,
		   "cut tensor 'nosuch': no node, input or initializer");
	expect_bad(buf, size, (const char *[]){ "w1" }, 1, "cut tensor 'w1': it is an initializer");
	expect_bad(buf, size, (const char *[]){ "x" }, 1, "cut tensor 'x': it is an input");
	expect_bad(buf, size, (const char *[]){ "y" }, 1, "cut tensor 'y': it is an output");
	expect_bad(buf, size, (const char *[]){ "a", "b" }, 2,
		   "cut tensor 'a': nothing after the cut reads it");
	expect_bad(buf, size, (const char *[]){ "b", "b" }, 2, "cut tensor 'b': it is given twice");
	expect_bad(buf, size, NULL, 0, "the cut names no tensor");
	expect_bad("garbage", 7, (const char *[]){ "a" }, 1, "not an ONNX model");
	free(buf);
}

/*
 * int8 transfer: 'b' crosses as uint8 (QuantizeLinear at the end of the
 * head, DequantizeLinear at the start of the tail), 'd' as it is. The head
 * sends exactly ONNX's quantization of b; the tail's result is the whole
 * model's within the error one quantization step of b can cause.
 */
static void test_int8_transfer(void **state)
{
	const char *cut[2] = { "b", "d" };
	struct npu_onnx_split_quant q[2] = { { .on = true, .scale = 0.5f / 255, .zero_point = 3 },
					     { .on = false } };
	struct npu_host_tensor ins[2] = { host("x", x_in), host("x2", x2_in) };
	struct npu_onnx_split sp, plain;
	char err[512] = "";
	struct npu_model *whole, *hm, *pm, *tm;
	struct npu_session *ws, *hs, *ps, *ts;
	struct npu_host_tensor ref, h0, p0, t0, tin[3];
	size_t size, i;
	void *buf = build(&size);

	(void)state;
	run_model(buf, size, "whole", ins, 2, &whole, &ws, &ref);
	if (npu_onnx_split_quantized(buf, size, "split.onnx", cut, 2, q, &sp, err,
				     sizeof(err)) != NPU_OK)
		fail_msg("int8 cut: %s", err);
	assert_int_equal(npu_onnx_split(buf, size, "split.onnx", cut, 2, &plain, err, sizeof(err)),
			 NPU_OK);
	assert_int_equal(sp.num_tail_inputs, 3);
	assert_string_equal(sp.tail_inputs[0], "b_uint8");
	assert_string_equal(sp.tail_inputs[1], "d");
	assert_string_equal(sp.tail_inputs[2], "x2");
	/* One QuantizeLinear more in the head, one DequantizeLinear in the tail. */
	assert_int_equal(sp.head_nodes, plain.head_nodes + 1);
	assert_int_equal(sp.tail_nodes, plain.tail_nodes + 1);
	run_model(sp.head, sp.head_size, "int8 head", ins, 1, &hm, &hs, &h0);
	run_model(plain.head, plain.head_size, "head", ins, 1, &pm, &ps, &p0);
	assert_string_equal(h0.name, "b_uint8");
	assert_int_equal(h0.dtype, NPU_TYPE_UINT8);
	assert_int_equal(h0.nbytes, 4);
	for (i = 0; i < 4; i++) {
		float v = ((const float *)p0.data)[i] / q[0].scale + q[0].zero_point;
		long e = lrintf(v);	/* round half to even, as ONNX */

		assert_int_equal(((const uint8_t *)h0.data)[i], e < 0 ? 0 : e > 255 ? 255 : e);
	}
	tin[0] = h0;
	assert_int_equal(npu_session_output(hs, 1, &tin[1]), NPU_OK);
	assert_string_equal(tin[1].name, "d");
	assert_int_equal(tin[1].dtype, NPU_TYPE_FLOAT);
	tin[2] = ins[1];
	run_model(sp.tail, sp.tail_size, "int8 tail", tin, 3, &tm, &ts, &t0);
	assert_int_equal(t0.nbytes, ref.nbytes);
	for (i = 0; i < 4; i++) {
		float a = ((const float *)t0.data)[i], r = ((const float *)ref.data)[i];

		/* b's step is 0.002; through Add, Tanh and Mul at most a few steps. */
		if (!(a - r < 0.01f && r - a < 0.01f))
			fail_msg("output %zu: int8 split %g, whole model %g", i, a, r);
	}
	npu_session_destroy(ts);
	npu_model_destroy(tm);
	npu_session_destroy(ps);
	npu_model_destroy(pm);
	npu_session_destroy(hs);
	npu_model_destroy(hm);
	npu_session_destroy(ws);
	npu_model_destroy(whole);
	npu_onnx_split_free(&plain);
	npu_onnx_split_free(&sp);

	/* A scale that is not a positive number. */
	q[0].scale = 0;
	assert_int_not_equal(npu_onnx_split_quantized(buf, size, "split.onnx", cut, 2, q, &sp, err,
						      sizeof(err)),
			     NPU_OK);
	if (!strstr(err, "cut tensor 'b': int8 transfer scale 0 is not a positive number"))
		fail_msg("message: %s", err);
	assert_null(sp.head);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_cut_runs_bit_exact),
		cmocka_unit_test(test_bad_cuts_are_named),
		cmocka_unit_test(test_int8_transfer),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
