// SPDX-License-Identifier: MIT
/*
 * The ONNX importer: valid models import into a checked graph; every kind
 * of malformed model is an error that names the file, node / tensor /
 * attribute and the reason (never a crash).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "graph/npu_ir.h"
#include "onnx/npu_onnx.h"
#include "onnx_builder.h"

static const int64_t d234[] = { 2, 3, 4 };

static npu_status import(struct tb_model *m, struct npu_graph **g,
			 struct npu_error *err)
{
	size_t size;
	void *buf = tb_pack(m, &size);
	npu_status st;

	assert_non_null(buf);
	st = npu_onnx_import(buf, size, "t.onnx", g, err);
	free(buf);
	return st;
}

static void relu_model(struct tb_model *m)
{
	tb_init(m, 13);
	tb_input(m, "x", 3, d234);
	tb_output(m, "y", 3, d234);
	tb_node(m, "Relu", "r", "y", 1, "x", NULL);
}

static void test_valid_model_imports_into_sorted_graph(void **state)
{
	struct tb_model m;
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };

	(void)state;
	tb_init(&m, 13);
	tb_input(&m, "x", 3, d234);
	tb_output(&m, "z", 3, d234);
	/* Listed out of order: the importer sorts. */
	tb_node(&m, "Relu", "second", "z", 1, "y", NULL);
	tb_node(&m, "Relu", "first", "y", 1, "x", NULL);
	assert_int_equal(import(&m, &g, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 2);
	assert_string_equal(g->nodes[0]->name, "first");
	assert_string_equal(g->nodes[1]->name, "second");
	assert_int_equal(g->num_inputs, 1);
	assert_true(g->inputs[0]->is_graph_input);
	assert_int_equal(g->inputs[0]->shape.rank, 3);
	assert_int_equal(g->nodes[0]->opset, 13);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	assert_int_equal(g->outputs[0]->shape.dims[2], 4);
	assert_int_equal(g->outputs[0]->dtype, NPU_DTYPE_FLOAT);
	npu_graph_destroy(g);
}

static void test_symbolic_dims_keep_their_names(void **state)
{
	static const int64_t dn[] = { -1, 3 };
	struct tb_model m;
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };

	(void)state;
	tb_init(&m, 13);
	tb_input(&m, "x", 2, dn);
	tb_output(&m, "y", 2, dn);
	tb_node(&m, "Relu", "r", "y", 1, "x", NULL);
	assert_int_equal(import(&m, &g, &err), NPU_OK);
	assert_true(g->inputs[0]->shape.dims[0] < 0);
	assert_string_equal(g->inputs[0]->dim_params[0], "N");
	npu_graph_destroy(g);
}

static void test_garbage_bytes_are_a_model_error(void **state)
{
	static const unsigned char junk[] = { 0xff, 0xff, 0xff, 0x7f, 0x12, 0x34 };
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };

	(void)state;
	assert_int_equal(npu_onnx_import(junk, sizeof(junk), "junk.onnx", &g, &err),
			 NPU_ERR_MODEL);
	assert_null(g);
	assert_non_null(strstr(err.msg, "junk.onnx"));
}

static void expect_error(struct tb_model *m, npu_status want,
			 const char *needle1, const char *needle2)
{
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };
	npu_status st = import(m, &g, &err);

	if (st == NPU_OK && want != NPU_OK)
		st = npu_graph_infer(g, true, &err);
	npu_graph_destroy(g);
	if (st != want || !strstr(err.msg, needle1) ||
	    (needle2 && !strstr(err.msg, needle2)))
		fail_msg("status %d (want %d), message: %s", st, want, err.msg);
	assert_non_null(strstr(err.msg, "t.onnx"));
}

static void test_unsupported_domain_is_named(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	m.opset[1].base = m.opset[0].base;
	m.opset[1].domain = "com.example";
	m.opset[1].has_version = 1;
	m.opset[1].version = 1;
	m.opset_ptr[1] = &m.opset[1];
	m.model.n_opset_import = 2;
	m.nodes[0].domain = "com.example";
	/* Importing is not deciding support: planning names the op. */
	expect_error(&m, NPU_ERR_UNSUPPORTED, "unsupported op 'com.example.Relu'",
		     "node 'r' (Relu)");
}

static void test_domain_without_opset_import_is_rejected(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	m.nodes[0].domain = "com.other";
	expect_error(&m, NPU_ERR_MODEL, "not in the model's opset imports",
		     "node 'r'");
}

static void test_unknown_op_is_unsupported_with_opset(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	m.nodes[0].op_type = "NoSuchOp";
	expect_error(&m, NPU_ERR_UNSUPPORTED, "unsupported op 'NoSuchOp' (opset 13)",
		     NULL);
}

static void test_raw_data_size_mismatch_names_initializer(void **state)
{
	static int64_t dims[] = { 2, 2 };
	static uint8_t bytes[12];
	struct tb_model m;
	Onnx__TensorProto *t;

	(void)state;
	relu_model(&m);
	t = tb_init_tensor(&m, "w", 1, 2, dims);
	t->has_raw_data = 1;
	t->raw_data.len = sizeof(bytes);
	t->raw_data.data = bytes;
	expect_error(&m, NPU_ERR_MODEL, "initializer 'w'", "expected 16");
}

static void test_external_data_is_rejected_by_name(void **state)
{
	static int64_t dims[] = { 4 };
	struct tb_model m;
	Onnx__TensorProto *t;

	(void)state;
	relu_model(&m);
	t = tb_init_tensor(&m, "big_weight", 1, 1, dims);
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	expect_error(&m, NPU_ERR_UNSUPPORTED, "'big_weight'", "external data");
}

static void test_typed_fields_decode_int8_and_float16(void **state)
{
	static int64_t dims[] = { 3 };
	static int32_t i8[] = { -5, 0, 127 }, h[] = { 0x3c00, 0xc000, 0 };
	struct tb_model m;
	Onnx__TensorProto *t;
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };
	const struct npu_value *v;

	(void)state;
	relu_model(&m);
	t = tb_init_tensor(&m, "q", 3, 1, dims);
	t->n_int32_data = 3;
	t->int32_data = i8;
	t = tb_init_tensor(&m, "h", 10, 1, dims);
	t->n_int32_data = 3;
	t->int32_data = h;
	assert_int_equal(import(&m, &g, &err), NPU_OK);
	v = npu_graph_find_value(g, "q");
	assert_non_null(v->constant);
	assert_int_equal(((int8_t *)v->constant->data)[0], -5);
	assert_int_equal(((int8_t *)v->constant->data)[2], 127);
	v = npu_graph_find_value(g, "h");
	assert_int_equal(((uint16_t *)v->constant->data)[1], 0xc000);
	npu_graph_destroy(g);
}

static void test_typed_field_count_mismatch_is_rejected(void **state)
{
	static int64_t dims[] = { 3 };
	static float f[] = { 1, 2 };
	struct tb_model m;
	Onnx__TensorProto *t;

	(void)state;
	relu_model(&m);
	t = tb_init_tensor(&m, "w", 1, 1, dims);
	t->n_float_data = 2;
	t->float_data = f;
	expect_error(&m, NPU_ERR_MODEL, "float_data has 2 elements, expected 3",
		     "'w'");
}

static void test_duplicate_output_is_rejected(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	tb_node(&m, "Relu", "again", "y", 1, "x", NULL);
	expect_error(&m, NPU_ERR_MODEL, "node 'again' (Relu)",
		     "already produced by another node");
}

static void test_dangling_input_is_rejected(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	m.node_in[0][0] = "nowhere";
	expect_error(&m, NPU_ERR_MODEL, "'nowhere' is not produced", "node 'r'");
}

static void test_cycle_is_rejected(void **state)
{
	struct tb_model m;

	(void)state;
	tb_init(&m, 13);
	tb_input(&m, "x", 3, d234);
	tb_output(&m, "b", 3, d234);
	tb_node(&m, "Add", "n1", "a", 2, "x", "b");
	tb_node(&m, "Relu", "n2", "b", 1, "a", NULL);
	expect_error(&m, NPU_ERR_MODEL, "cycle", NULL);
}

static void test_output_never_produced_is_rejected(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	tb_output(&m, "ghost", 3, d234);
	expect_error(&m, NPU_ERR_MODEL, "graph output 'ghost' is never produced",
		     NULL);
}

static void test_attribute_type_mismatch_is_named(void **state)
{
	struct tb_model m;
	Onnx__AttributeProto *a;

	(void)state;
	relu_model(&m);
	a = tb_attr_int(&m, &m.nodes[0], "alpha", 1);
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;	/* holds an int */
	expect_error(&m, NPU_ERR_MODEL, "attribute 'alpha'", "declared float");
}

static void test_missing_ir_version_and_opset_are_rejected(void **state)
{
	struct tb_model m;

	(void)state;
	relu_model(&m);
	m.model.has_ir_version = 0;
	expect_error(&m, NPU_ERR_MODEL, "no ir_version", NULL);
	relu_model(&m);
	m.model.ir_version = 99;
	expect_error(&m, NPU_ERR_UNSUPPORTED, "IR version 99", NULL);
	relu_model(&m);
	m.model.n_opset_import = 0;
	expect_error(&m, NPU_ERR_MODEL, "no opset_import", NULL);
}

static void test_constant_node_becomes_a_constant_value(void **state)
{
	struct tb_model m;
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };
	const struct npu_value *v;

	(void)state;
	tb_init(&m, 13);
	tb_input(&m, "x", 3, d234);
	tb_output(&m, "y", 3, d234);
	tb_attr_int(&m, tb_node(&m, "Constant", "c", "k", 0, NULL, NULL),
		    "value_int", 7);
	tb_node(&m, "Add", "add", "y", 2, "x", "k");
	assert_int_equal(import(&m, &g, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 1);
	v = npu_graph_find_value(g, "k");
	assert_non_null(v->constant);
	assert_int_equal(v->constant->dtype, NPU_DTYPE_INT64);
	assert_int_equal(*(int64_t *)v->constant->data, 7);
	npu_graph_destroy(g);
}

static void test_tensor_pb_reads_name_and_data(void **state)
{
	static int64_t dims[] = { 2 };
	static float f[] = { 1.5f, -2.0f };
	Onnx__TensorProto t;
	struct npu_tensor *out = NULL;
	struct npu_error err = { 0 };
	char *name = NULL;
	uint8_t buf[256];
	size_t n;

	(void)state;
	onnx__tensor_proto__init(&t);
	t.name = "input";
	t.has_data_type = 1;
	t.data_type = 1;
	t.n_dims = 1;
	t.dims = dims;
	t.n_float_data = 2;
	t.float_data = f;
	n = onnx__tensor_proto__pack(&t, buf);
	assert_int_equal(npu_onnx_read_tensor(buf, n, "in.pb", &out, &name, &err),
			 NPU_OK);
	assert_string_equal(name, "input");
	assert_int_equal(out->shape.dims[0], 2);
	assert_true(((float *)out->data)[1] == -2.0f);
	npu_tensor_destroy(out);
	free(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_model_imports_into_sorted_graph),
		cmocka_unit_test(test_symbolic_dims_keep_their_names),
		cmocka_unit_test(test_garbage_bytes_are_a_model_error),
		cmocka_unit_test(test_unsupported_domain_is_named),
		cmocka_unit_test(test_domain_without_opset_import_is_rejected),
		cmocka_unit_test(test_unknown_op_is_unsupported_with_opset),
		cmocka_unit_test(test_raw_data_size_mismatch_names_initializer),
		cmocka_unit_test(test_external_data_is_rejected_by_name),
		cmocka_unit_test(test_typed_fields_decode_int8_and_float16),
		cmocka_unit_test(test_typed_field_count_mismatch_is_rejected),
		cmocka_unit_test(test_duplicate_output_is_rejected),
		cmocka_unit_test(test_dangling_input_is_rejected),
		cmocka_unit_test(test_cycle_is_rejected),
		cmocka_unit_test(test_output_never_produced_is_rejected),
		cmocka_unit_test(test_attribute_type_mismatch_is_named),
		cmocka_unit_test(test_missing_ir_version_and_opset_are_rejected),
		cmocka_unit_test(test_constant_node_becomes_a_constant_value),
		cmocka_unit_test(test_tensor_pb_reads_name_and_data),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
