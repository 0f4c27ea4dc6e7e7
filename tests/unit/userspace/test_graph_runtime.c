// SPDX-License-Identifier: MIT
/*
 * Graph IR + runtime: shape inference, folding of Shape chains, the pass
 * hook, liveness-based execution and re-planning for new input shapes
 * through the public model API.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "graph/npu_ir.h"
#include "npu/npu_model.h"
#include "onnx/npu_onnx.h"
#include "onnx_builder.h"
#include "runtime/npu_runtime.h"

static const int64_t d23[] = { 2, 3 };

static struct npu_graph *import(struct tb_model *m)
{
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };
	size_t size;
	void *buf = tb_pack(m, &size);

	assert_non_null(buf);
	if (npu_onnx_import(buf, size, "t.onnx", &g, &err) != NPU_OK)
		fail_msg("%s", err.msg);
	free(buf);
	return g;
}

/* y = relu(x) + x, z = relu(y): three nodes, one dead intermediate. */
static void chain_model(struct tb_model *m, const int64_t *dims)
{
	tb_init(m, 14);
	tb_input(m, "x", 2, dims);
	tb_output(m, "z", 2, dims);
	tb_node(m, "Relu", "r1", "a", 1, "x", NULL);
	tb_node(m, "Add", "add", "y", 2, "a", "x");
	tb_node(m, "Relu", "r2", "z", 1, "y", NULL);
}

static void test_session_runs_chain_and_frees_intermediates(void **state)
{
	struct tb_model m;
	struct npu_graph *g;
	struct npu_exec *s = NULL;
	struct npu_exec_options so = { .threads = 2, .profile = true };
	struct npu_error err = { 0 };
	float xin[6] = { -1, 2, -3, 4, 0.5f, -0.5f };
	struct npu_tensor x = { .dtype = NPU_DTYPE_FLOAT,
				.shape = { 2, { 2, 3 } },
				.data = xin, .nbytes = sizeof(xin) };
	const struct npu_tensor *ins[] = { &x };
	const struct npu_tensor *z;
	const struct npu_op_stat *stats;
	int i;

	(void)state;
	chain_model(&m, d23);
	g = import(&m);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	assert_int_equal(npu_exec_create(g, &so, &s, &err), NPU_OK);
	for (i = 0; i < 2; i++) {	/* twice: buffers come back from the pool */
		assert_int_equal(npu_exec_run(s, ins, &err), NPU_OK);
		z = npu_exec_output(s, 0);
		assert_non_null(z);
		assert_true(((float *)z->data)[0] == 0.0f);	/* relu(0 - 1) */
		assert_true(((float *)z->data)[1] == 4.0f);	/* 2 + 2 */
		assert_true(((float *)z->data)[4] == 1.0f);
	}
	assert_int_equal(npu_exec_op_stats(s, &stats), 2);	/* Relu, Add */
	npu_exec_destroy(s);
	npu_graph_destroy(g);
}

static void test_shape_chain_folds_into_constant(void **state)
{
	static int64_t one[] = { 1 };
	static int64_t idx[] = { 0 };
	struct tb_model m;
	struct npu_graph *g;
	struct npu_error err = { 0 };
	const struct npu_value *v;
	Onnx__TensorProto *t;

	(void)state;
	tb_init(&m, 14);
	tb_input(&m, "x", 2, d23);
	tb_output(&m, "y", 2, d23);
	t = tb_init_tensor(&m, "unused", 7, 1, one);
	t->n_int64_data = 1;
	t->int64_data = idx;
	tb_node(&m, "Shape", "shape", "s", 1, "x", NULL);
	tb_node(&m, "Reshape", "reshape", "y", 2, "x", "s");
	g = import(&m);
	assert_int_equal(g->num_nodes, 2);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 1);	/* Shape folded */
	v = npu_graph_find_value(g, "s");
	assert_non_null(v->constant);
	assert_int_equal(((int64_t *)v->constant->data)[1], 3);
	assert_int_equal(g->outputs[0]->shape.rank, 2);
	assert_int_equal(g->outputs[0]->shape.dims[1], 3);
	npu_graph_destroy(g);
}

static npu_status mark_all_npu(struct npu_graph *g, void *arg,
			       struct npu_error *err)
{
	size_t i;

	(void)err;
	for (i = 0; i < g->num_nodes; i++) {
		g->nodes[i]->placement = NPU_PLACE_NPU;
		g->nodes[i]->placement_reason = arg;
	}
	return NPU_OK;
}

static npu_status break_graph(struct npu_graph *g, void *arg,
			      struct npu_error *err)
{
	(void)arg;
	(void)err;
	g->nodes[0]->inputs[0] = npu_graph_add_value(g, "orphan", NULL);
	return NPU_OK;
}

static void test_passes_run_in_order_and_broken_graphs_are_named(void **state)
{
	struct tb_model m;
	struct npu_graph *g;
	struct npu_error err = { 0 };
	const struct npu_pass good[] = { { "place", mark_all_npu, "test" } };
	const struct npu_pass bad[] = { { "breaker", break_graph, NULL } };

	(void)state;
	chain_model(&m, d23);
	g = import(&m);
	assert_int_equal(npu_graph_run_passes(g, good, 1, &err), NPU_OK);
	assert_int_equal(g->nodes[2]->placement, NPU_PLACE_NPU);
	assert_string_equal(g->nodes[2]->placement_reason, "test");
	assert_int_equal(npu_graph_run_passes(g, bad, 1, &err), NPU_ERR_MODEL);
	assert_non_null(strstr(err.msg, "after pass 'breaker'"));
	assert_non_null(strstr(err.msg, "orphan"));
	npu_graph_destroy(g);
}

static void test_model_api_replans_for_new_input_shapes(void **state)
{
	static const int64_t dyn[] = { -1, 3 };
	struct tb_model m;
	struct npu_engine *eng = NULL;
	struct npu_model *model = NULL;
	struct npu_session *sess = NULL;
	struct npu_tensor_info info;
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT,
				      .rank = 2 }, out;
	float data[12];
	size_t size;
	void *buf;
	int i;

	(void)state;
	for (i = 0; i < 12; i++)
		data[i] = (float)i - 6;
	chain_model(&m, dyn);
	buf = tb_pack(&m, &size);
	assert_int_equal(npu_engine_create(NULL, &eng), NPU_OK);
	assert_int_equal(npu_model_load_memory(eng, buf, size, "dyn.onnx", NULL, &model),
			 NPU_OK);
	free(buf);
	assert_int_equal(npu_session_create(model, NULL, &sess), NPU_OK);
	assert_int_equal(npu_model_input_info(model, 0, &info), NPU_OK);
	assert_string_equal(info.name, "x");
	assert_int_equal(info.dims[0], -1);
	assert_string_equal(info.dim_names[0], "N");
	/* Outputs the file leaves to its nodes are typed at load, dims symbolic. */
	assert_int_equal(npu_model_output_info(model, 0, &info), NPU_OK);
	assert_int_equal(info.dtype, NPU_TYPE_FLOAT);
	assert_int_equal(info.rank, 2);
	for (i = 1; i <= 4; i += 3) {
		in.dims[0] = i;
		in.dims[1] = 3;
		in.data = data;
		in.nbytes = (size_t)i * 3 * sizeof(float);
		if (npu_session_run(sess, &in, 1) != NPU_OK)
			fail_msg("%s", npu_last_error());
		assert_int_equal(npu_session_output(sess, 0, &out), NPU_OK);
		assert_int_equal(out.dims[0], i);
		assert_true(((float *)out.data)[3 * i - 1] ==
			    (data[3 * i - 1] > 0 ? 2 * data[3 * i - 1] : 0));
	}
	/* A fixed dim that does not match is refused with the input's name. */
	in.dims[1] = 5;
	assert_int_equal(npu_session_run(sess, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "'x'"));
	npu_session_destroy(sess);
	npu_model_destroy(model);
	npu_engine_destroy(eng);
}

/* NPU devices are accepted (the compiler handles them); unknown ones are not. */
static void test_unknown_device_is_refused_by_name(void **state)
{
	static const int64_t dyn[] = { -1, 3 };
	struct npu_model_options o;
	struct npu_engine *eng = NULL;
	struct npu_model *model = NULL;
	struct tb_model m;
	size_t size;
	void *buf;

	(void)state;
	chain_model(&m, dyn);
	buf = tb_pack(&m, &size);
	assert_int_equal(npu_engine_create(NULL, &eng), NPU_OK);
	npu_model_options_init(&o);
	o.device = "gpu";
	assert_int_equal(npu_model_load_memory(eng, buf, size, "m.onnx", &o, &model),
			 NPU_ERR_INVALID_ARG);
	assert_null(model);	/* a failed load returns no object */
	assert_non_null(strstr(npu_last_error(), "'gpu'"));
	o.device = "sim";
	/* An NPU device without calibration data: refused, naming the fields. */
	assert_int_equal(npu_model_load_memory(eng, buf, size, "m.onnx", &o, &model),
			 NPU_ERR_INVALID_ARG);
	assert_null(model);
	assert_non_null(strstr(npu_last_error(), "npu_model_options.calib_dir"));
	assert_non_null(strstr(npu_last_error(), "calib_random"));
	o.calib_random = 1;
	assert_int_equal(npu_model_load_memory(eng, buf, size, "m.onnx", &o, &model), NPU_OK);
	npu_model_destroy(model);
	npu_engine_destroy(eng);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_runs_chain_and_frees_intermediates),
		cmocka_unit_test(test_shape_chain_folds_into_constant),
		cmocka_unit_test(test_passes_run_in_order_and_broken_graphs_are_named),
		cmocka_unit_test(test_model_api_replans_for_new_input_shapes),
		cmocka_unit_test(test_unknown_device_is_refused_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
