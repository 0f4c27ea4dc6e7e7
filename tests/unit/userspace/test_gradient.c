// SPDX-License-Identifier: MIT
/*
 * The Gradient op (issue 17), lowered at import: d = (a + b) * a with b
 * broadcast over a's rows gives dd/da = 2a + b and dd/db = the column sums
 * of a; an x that y does not depend on gets zeros; an op the lowering
 * cannot differentiate is an error naming it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>

#include "npu/npu_model.h"
#include "onnx_builder.h"

struct grad_attrs {
	Onnx__AttributeProto a[2], *p[2];
	ProtobufCBinaryData xs[3];
};

/* Gradient(xs = a, b, c; y) appended to m, outputs ga, gb, gc. */
static void add_gradient(struct tb_model *m, struct grad_attrs *at, const char *y)
{
	static const char *const names[] = { "a", "b", "c" };
	static char *outs[] = { "ga", "gb", "gc" }, *ins[] = { "a", "b", "c" };
	Onnx__NodeProto *n;
	int i;

	onnx__operator_set_id_proto__init(&m->opset[1]);
	m->opset[1].domain = "ai.onnx.preview.training";
	m->opset[1].has_version = 1;
	m->opset[1].version = 1;
	m->opset_ptr[1] = &m->opset[1];
	m->model.n_opset_import = 2;
	n = tb_node(m, "Gradient", "grad", "ga", 1, "a", NULL);
	n->domain = "ai.onnx.preview.training";
	n->input = ins;
	n->n_input = 3;
	n->output = outs;
	n->n_output = 3;
	onnx__attribute_proto__init(&at->a[0]);
	at->a[0].name = "xs";
	at->a[0].has_type = 1;
	at->a[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	for (i = 0; i < 3; i++) {
		at->xs[i].data = (uint8_t *)names[i];
		at->xs[i].len = 1;
	}
	at->a[0].strings = at->xs;
	at->a[0].n_strings = 3;
	onnx__attribute_proto__init(&at->a[1]);
	at->a[1].name = "y";
	at->a[1].has_type = 1;
	at->a[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	at->a[1].has_s = 1;
	at->a[1].s.data = (uint8_t *)y;
	at->a[1].s.len = strlen(y);
	at->p[0] = &at->a[0];
	at->p[1] = &at->a[1];
	n->attribute = at->p;
	n->n_attribute = 2;
}

static void *model(const char *inner_op, size_t *size)
{
	static const int64_t d23[] = { 2, 3 }, d3[] = { 3 }, d1[] = { 1 };
	static struct tb_model m;
	static struct grad_attrs at;

	tb_init(&m, 13);
	tb_input(&m, "a", 2, d23);
	tb_input(&m, "b", 1, d3);
	tb_input(&m, "c", 1, d1);
	tb_output(&m, "ga", 2, d23);
	tb_output(&m, "gb", 1, d3);
	tb_output(&m, "gc", 1, d1);
	tb_node(&m, inner_op, "sum", "s", 2, "a", "b");
	tb_node(&m, "Mul", "prod", "d", 2, "s", "a");
	add_gradient(&m, &at, "d");
	return tb_pack(&m, size);
}

static void test_gradient_undoes_broadcasting_and_zeros_unused_inputs(void **state)
{
	float a[6] = { 1, 2, 3, -1, 0.5f, 4 }, b[3] = { 10, 20, 30 }, c[1] = { 7 };
	struct npu_host_tensor in[3] = {
		{ .name = "a", .dtype = NPU_TYPE_FLOAT, .rank = 2, .dims = { 2, 3 }, .data = a,
		  .nbytes = sizeof(a) },
		{ .name = "b", .dtype = NPU_TYPE_FLOAT, .rank = 1, .dims = { 3 }, .data = b,
		  .nbytes = sizeof(b) },
		{ .name = "c", .dtype = NPU_TYPE_FLOAT, .rank = 1, .dims = { 1 }, .data = c,
		  .nbytes = sizeof(c) },
	}, ga, gb, gc;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t size, i;
	void *buf = model("Add", &size);

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	if (npu_model_load_memory(e, buf, size, "grad.onnx", NULL, &m) != NPU_OK)
		fail_msg("%s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, in, 3) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &ga), NPU_OK);
	assert_int_equal(npu_session_output(s, 1, &gb), NPU_OK);
	assert_int_equal(npu_session_output(s, 2, &gc), NPU_OK);
	assert_int_equal(ga.rank, 2);
	for (i = 0; i < 6; i++)
		assert_true(fabsf(((float *)ga.data)[i] - (2 * a[i] + b[i % 3])) < 1e-5f);
	assert_int_equal(gb.rank, 1);
	assert_int_equal(gb.dims[0], 3);
	for (i = 0; i < 3; i++)
		assert_true(fabsf(((float *)gb.data)[i] - (a[i] + a[3 + i])) < 1e-5f);
	assert_true(((float *)gc.data)[0] == 0.0f);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_gradient_through_an_unsupported_op_is_named(void **state)
{
	struct npu_engine *e;
	struct npu_model *m = NULL;
	size_t size;
	void *buf = model("Pow", &size);

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	assert_int_equal(npu_model_load_memory(e, buf, size, "grad.onnx", NULL, &m),
			 NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(npu_last_error(), "node 'grad' (Gradient)"));
	assert_non_null(strstr(npu_last_error(), "differentiating through node 'sum' (Pow)"));
	free(buf);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradient_undoes_broadcasting_and_zeros_unused_inputs),
		cmocka_unit_test(test_gradient_through_an_unsupported_op_is_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
