// SPDX-License-Identifier: MIT
/*
 * Control flow (If, Loop, Scan) through the public engine API: subgraphs
 * that read outer values (captures), nested two levels deep, loop-carried
 * state and scan outputs, a trip count that bounds a loop whose condition
 * never turns false, and the malformed models that must be errors naming
 * the node: a missing outer value, a trip count of the wrong type, If
 * branches whose outputs disagree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

enum { FLOAT = 1, INT64 = 7, BOOL = 9 };

/* A body input without a type: the Loop gives it one. */
static void untyped_input(struct tb_model *m, const char *name)
{
	Onnx__ValueInfoProto *vi = &m->vi[m->n_vi++];

	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	m->in_ptr[m->graph.n_input++] = vi;
}

static void untyped_output(struct tb_model *m, const char *name)
{
	Onnx__ValueInfoProto *vi = &m->vi[m->n_vi++];

	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	m->out_ptr[m->graph.n_output++] = vi;
}

struct graph_attrs {
	Onnx__AttributeProto a[2];
	Onnx__AttributeProto *p[2];
};

static void graph_attr(Onnx__NodeProto *n, struct graph_attrs *ga, const char *name,
		       Onnx__GraphProto *g)
{
	size_t k = n->n_attribute;

	onnx__attribute_proto__init(&ga->a[k]);
	ga->a[k].name = (char *)name;
	ga->a[k].has_type = 1;
	ga->a[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	ga->a[k].g = g;
	ga->p[k] = &ga->a[k];
	n->attribute = ga->p;
	n->n_attribute = k + 1;
}

static int64_t scalar_dims[1];
static int64_t trip_value[1];
static int32_t true_value[1] = { 1 };
static float trip_float[1] = { 3.0f };

static void *pack(struct tb_model *m, size_t *size)
{
	return tb_pack(m, size);
}

static struct npu_engine *engine;

static npu_status load(const void *buf, size_t size, struct npu_model **m)
{
	if (!engine)
		assert_int_equal(npu_engine_create(NULL, &engine), NPU_OK);
	return npu_model_load_memory(engine, buf, size, "cf.onnx", NULL, m);
}

static void run(struct npu_model *m, const float *x, size_t n, struct npu_session **s)
{
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 1,
				      .dims = { (int64_t)n }, .data = (void *)x,
				      .nbytes = n * sizeof(float) };

	assert_int_equal(npu_session_create(m, NULL, s), NPU_OK);
	if (npu_session_run(*s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
}

/*
 * acc, rows = Loop(M, cond, acc0 = x) with body
 *   acc' = Add(acc, y) where y = If(iter < 2, then: x (outer-outer), else: Neg x)
 *   rows += acc'
 * x is read two levels down (Loop body -> If branch) without being passed.
 */
static struct tb_model top, body, then_b, else_b;
static struct graph_attrs loop_attrs, if_attrs;

static void build_loop_model(int64_t trip, bool float_trip, bool bad_capture)
{
	static const int64_t d2[] = { 2 };
	static int64_t two_dims[1];
	static int64_t two[1] = { 2 };
	Onnx__TensorProto *t;
	Onnx__NodeProto *loop, *iff;

	tb_init(&top, 13);
	tb_input(&top, "x", 1, d2);
	tb_output(&top, "acc", 1, d2);
	tb_output(&top, "rows", 2, (const int64_t[]){ -1, 2 });
	trip_value[0] = trip;
	t = tb_init_tensor(&top, "M", float_trip ? FLOAT : INT64, 0, scalar_dims);
	if (float_trip) {
		t->n_float_data = 1;
		t->float_data = trip_float;
	} else {
		t->n_int64_data = 1;
		t->int64_data = trip_value;
	}
	t = tb_init_tensor(&top, "cond", BOOL, 0, scalar_dims);
	t->n_int32_data = 1;
	t->int32_data = true_value;
	loop = tb_node(&top, "Loop", "loop", "acc", 3, "M", "cond");
	loop->input[2] = "x";
	loop->n_output = 2;
	top.node_out[0][1] = "rows";

	/* Loop body: (iter, cond_in, acc_in) -> (cond_out, acc_out, row) */
	tb_init(&body, 13);
	untyped_input(&body, "iter");
	untyped_input(&body, "cond_in");
	untyped_input(&body, "acc_in");
	untyped_output(&body, "cond_out");
	untyped_output(&body, "acc_out");
	untyped_output(&body, "row");
	t = tb_init_tensor(&body, "two", INT64, 0, two_dims);
	t->n_int64_data = 1;
	t->int64_data = two;
	tb_node(&body, "Identity", "keep_going", "cond_out", 1, "cond_in", NULL);
	tb_node(&body, "Less", "early", "is_early", 2, "iter", "two");
	iff = tb_node(&body, "If", "pick", "y", 1, "is_early", NULL);
	tb_node(&body, "Add", "acc", "acc_out", 2, "acc_in", "y");
	tb_node(&body, "Identity", "row", "row", 1, "acc_out", NULL);

	/* Branches read x from the top graph (a capture through the body). */
	tb_init(&then_b, 13);
	untyped_output(&then_b, "tx");
	tb_node(&then_b, "Identity", "take_x", "tx", 1, bad_capture ? "nope" : "x", NULL);
	tb_init(&else_b, 13);
	untyped_output(&else_b, "ex");
	tb_node(&else_b, "Neg", "neg_x", "ex", 1, "x", NULL);
	graph_attr(iff, &if_attrs, "then_branch", &then_b.graph);
	graph_attr(iff, &if_attrs, "else_branch", &else_b.graph);
	graph_attr(loop, &loop_attrs, "body", &body.graph);
}

static void test_loop_with_nested_if_and_captures(void **state)
{
	static const float x[2] = { 1.5f, -2.0f };
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor acc, rows;
	const float *r;
	size_t size;
	void *buf;
	int i;

	(void)state;
	build_loop_model(4, false, false);
	buf = pack(&top, &size);
	if (load(buf, size, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	run(m, x, 2, &s);
	assert_int_equal(npu_session_output(s, 0, &acc), NPU_OK);
	assert_int_equal(npu_session_output(s, 1, &rows), NPU_OK);
	/* Iterations 0, 1 add x; 2, 3 subtract it: acc = x + x + x - x - x. */
	assert_true(((const float *)acc.data)[0] == 1.5f);
	assert_true(((const float *)acc.data)[1] == -2.0f);
	assert_int_equal(rows.rank, 2);
	assert_int_equal(rows.dims[0], 4);
	assert_int_equal(rows.dims[1], 2);
	r = rows.data;
	for (i = 0; i < 4; i++) {
		float k = i < 2 ? (float)(i + 2) : (float)(4 - i);	/* 2x 3x 2x 1x */

		assert_true(r[2 * i] == k * 1.5f);
		assert_true(r[2 * i + 1] == k * -2.0f);
	}
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
}

/* The condition never turns false: the trip count stops the loop. */
static void test_trip_count_bounds_an_endless_condition(void **state)
{
	static const float x[2] = { 1, 1 };
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor rows;
	size_t size;
	void *buf;

	(void)state;
	build_loop_model(1000, false, false);
	buf = pack(&top, &size);
	assert_int_equal(load(buf, size, &m), NPU_OK);
	run(m, x, 2, &s);
	assert_int_equal(npu_session_output(s, 1, &rows), NPU_OK);
	assert_int_equal(rows.dims[0], 1000);
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
}

/* Plans an NPU device compiles keep the control flow on the CPU. */
static void test_loop_runs_on_an_npu_device_model(void **state)
{
	static const float x[2] = { 1.5f, -2.0f };
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor acc;
	size_t size;
	void *buf;

	(void)state;
	build_loop_model(4, false, false);
	buf = pack(&top, &size);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	if (npu_model_load_memory(engine, buf, size, "cf.onnx", &mo, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	run(m, x, 2, &s);
	assert_int_equal(npu_session_output(s, 0, &acc), NPU_OK);
	assert_true(((const float *)acc.data)[0] == 1.5f);
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
}

static void expect_plan_error(const char *needle1, const char *needle2)
{
	static const float x[2] = { 1, 1 };
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 1,
				      .dims = { 2 }, .data = (void *)x, .nbytes = sizeof(x) };
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	size_t size;
	void *buf = pack(&top, &size);
	npu_status st = load(buf, size, &m);

	if (st == NPU_OK) {
		assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
		st = npu_session_run(s, &in, 1);
	}
	print_message("# %s\n", npu_last_error());
	if (st == NPU_OK || !strstr(npu_last_error(), needle1) ||
	    (needle2 && !strstr(npu_last_error(), needle2)))
		fail_msg("status %d, message: %s", st, npu_last_error());
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
}

static void test_missing_outer_value_is_named(void **state)
{
	(void)state;
	build_loop_model(4, false, true);
	expect_plan_error("'nope'", NULL);
}

static void test_trip_count_of_the_wrong_type_is_named(void **state)
{
	(void)state;
	build_loop_model(4, true, false);
	expect_plan_error("node 'loop' (Loop)", "trip count 'M' must be int64");
}

static void test_if_branches_that_disagree_are_named(void **state)
{
	static int64_t one_dims[1];
	static int64_t one[1] = { 1 };
	Onnx__TensorProto *t;

	(void)state;
	build_loop_model(4, false, false);
	/* else_branch now yields an int64 where then_branch yields a float. */
	tb_init(&else_b, 13);
	untyped_output(&else_b, "ex");
	t = tb_init_tensor(&else_b, "one", INT64, 0, one_dims);
	t->n_int64_data = 1;
	t->int64_data = one;
	tb_node(&else_b, "Identity", "int_one", "ex", 1, "one", NULL);
	expect_plan_error("node 'pick' (If)", "output 0 is float in then_branch");
}

static int teardown(void **state)
{
	(void)state;
	npu_engine_destroy(engine);
	engine = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loop_with_nested_if_and_captures),
		cmocka_unit_test(test_trip_count_bounds_an_endless_condition),
		cmocka_unit_test(test_loop_runs_on_an_npu_device_model),
		cmocka_unit_test(test_missing_outer_value_is_named),
		cmocka_unit_test(test_trip_count_of_the_wrong_type_is_named),
		cmocka_unit_test(test_if_branches_that_disagree_are_named),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
