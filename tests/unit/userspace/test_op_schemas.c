// SPDX-License-Identifier: MIT
/*
 * Op schemas (graph/npu_op_schema.h) apart from kernels: an op with a
 * schema and no CPU kernel imports and infers, then fails placement with
 * a message naming it; every CPU kernel has a schema; a schema that would
 * redefine an op is refused, naming it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/ops/cpu_ops.h"
#include "graph/npu_op_schema.h"
#include "npu/npu_model.h"
#include "onnx/npu_onnx.h"
#include "runtime/npu_runtime.h"
#include "onnx_builder.h"

#define TEST_DOMAIN "test.schema_only"

static const int64_t d14[] = { 1, 4 };

/* "Twice": y = 2x, described to the graph, run by no kernel. */
static npu_status twice_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_value *x = ctx->node->inputs[0];

	if (ctx->node->num_inputs != 1 || !x)
		return npu_error_set(ctx->err, NPU_ERR_INVALID_ARG, "Twice takes one input");
	ctx->out_dtypes[0] = x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

static const struct npu_op_schema twice_schema = {
	.op_type = "Twice", .domain = TEST_DOMAIN,
	.since_version = 1, .max_version = 1, .infer = twice_infer,
};

static int register_twice(void **state)
{
	static const struct npu_op_schema *const list[] = { &twice_schema };
	struct npu_error err = { 0 };

	(void)state;
	assert_int_equal(npu_op_schema_register(list, 1, &err), NPU_OK);
	return 0;
}

/* x [1, 4] -> op (in 'domain' at opset 1) -> y [1, 4]. */
static void *one_op_model(const char *domain, const char *op, size_t *size)
{
	static struct tb_model m;
	Onnx__NodeProto *n;

	tb_init(&m, 13);
	onnx__operator_set_id_proto__init(&m.opset[1]);
	m.opset[1].domain = (char *)domain;
	m.opset[1].has_version = 1;
	m.opset[1].version = 1;
	m.opset_ptr[1] = &m.opset[1];
	m.model.n_opset_import = 2;
	tb_input(&m, "x", 2, d14);
	tb_output(&m, "y", 2, d14);
	n = tb_node(&m, op, "op0", "y", 1, "x", NULL);
	n->domain = (char *)domain;
	return tb_pack(&m, size);
}

static void test_schema_only_op_imports_and_infers(void **state)
{
	struct npu_error err = { 0 };
	struct npu_graph *g = NULL;
	size_t size;
	void *buf = one_op_model(TEST_DOMAIN, "Twice", &size);
	const struct npu_value *y;

	(void)state;
	assert_non_null(buf);
	assert_int_equal(npu_onnx_import(buf, size, "twice.onnx", &g, &err), NPU_OK);
	free(buf);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 1);	/* no kernel: nothing to fold with */
	y = g->nodes[0]->outputs[0];
	assert_int_equal(y->dtype, NPU_DTYPE_FLOAT);
	assert_int_equal(y->shape.rank, 2);
	assert_int_equal(y->shape.dims[1], 4);
	/* The graph has it; the CPU has no kernel for it. */
	assert_non_null(npu_op_schema_find(TEST_DOMAIN, "Twice", 1));
	assert_null(npu_cpu_op_find(TEST_DOMAIN, "Twice", 1));
	npu_graph_destroy(g);
}

static void test_schema_only_op_fails_placement_naming_it(void **state)
{
	struct npu_error err = { 0 };
	struct npu_graph *g = NULL;
	struct npu_exec_schedule *p = NULL;
	size_t size;
	void *buf = one_op_model(TEST_DOMAIN, "Twice", &size);

	(void)state;
	assert_int_equal(npu_onnx_import(buf, size, "twice.onnx", &g, &err), NPU_OK);
	free(buf);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	assert_int_equal(npu_exec_schedule_create(g, &p, &err), NPU_ERR_UNSUPPORTED);
	assert_null(p);
	if (!strstr(err.msg, "twice.onnx") ||
	    !strstr(err.msg, "no CPU kernel for op 'test.schema_only.Twice' (opset 1)"))
		fail_msg("message: %s", err.msg);
	npu_graph_destroy(g);
}

/* What a user of the engine sees, on the CPU and on the simulated NPU. */
static void test_schema_only_op_fails_to_load_or_run_through_the_engine(void **state)
{
	static const char *const devices[] = { "cpu", "sim" };
	size_t k;

	(void)state;
	for (k = 0; k < 2; k++) {
		struct npu_engine *eng = NULL;
		struct npu_model_options mo;
		struct npu_model *model = NULL;
		struct npu_session *s = NULL;
		float xv[4] = { 1, 2, 3, 4 };
		struct npu_host_tensor in = {
			.name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 2, .dims = { 1, 4 },
			.data = xv, .nbytes = sizeof(xv),
		};
		size_t size;
		void *buf = one_op_model(TEST_DOMAIN, "Twice", &size);
		npu_status st;

		assert_int_equal(npu_engine_create(NULL, &eng), NPU_OK);
		npu_model_options_init(&mo);
		mo.device = devices[k];
		mo.calib_random = 1;
		st = npu_model_load_memory(eng, buf, size, "twice.onnx", &mo, &model);
		free(buf);
		if (st == NPU_OK)
			st = npu_session_create(model, NULL, &s);
		if (st == NPU_OK)
			st = npu_session_run(s, &in, 1);
		assert_int_equal(st, NPU_ERR_UNSUPPORTED);
		if (!strstr(npu_last_error(), "no CPU kernel for op 'test.schema_only.Twice'"))
			fail_msg("%s: %s", devices[k], npu_last_error());
		npu_session_destroy(s);
		npu_model_destroy(model);
		npu_engine_destroy(eng);
	}
}

/* Without a schema the op is unknown to the graph: import, then infer fails. */
static void test_op_without_schema_is_unsupported(void **state)
{
	struct npu_error err = { 0 };
	struct npu_graph *g = NULL;
	size_t size;
	void *buf = one_op_model(TEST_DOMAIN, "Thrice", &size);

	(void)state;
	assert_int_equal(npu_onnx_import(buf, size, "thrice.onnx", &g, &err), NPU_OK);
	free(buf);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_ERR_UNSUPPORTED);
	if (!strstr(err.msg, "unsupported op 'test.schema_only.Thrice'"))
		fail_msg("message: %s", err.msg);
	npu_graph_destroy(g);
}

static void test_every_cpu_kernel_has_a_schema(void **state)
{
	struct npu_error err = { 0 };
	const struct npu_op_def *def;
	size_t i;
	int lo, hi;

	(void)state;
	if (npu_cpu_ops_check(&err) != NPU_OK)
		fail_msg("%s", err.msg);
	for (i = 0; (def = npu_cpu_op_at(i)); i++)
		if (!npu_op_schema_versions(def->domain, def->op_type, &lo, &hi))
			fail_msg("kernel %s.%s has no schema", def->domain, def->op_type);
	assert_true(i > 100);
}

static void test_registering_an_existing_op_is_refused_naming_it(void **state)
{
	static const struct npu_op_schema relu = {
		.op_type = "Relu", .domain = "", .since_version = 13, .max_version = 13,
		.infer = twice_infer,
	};
	static const struct npu_op_schema nameless = {
		.domain = TEST_DOMAIN, .since_version = 1, .max_version = 1,
		.infer = twice_infer,
	};
	const struct npu_op_schema *list[] = { &relu };
	struct npu_error err = { 0 };
	size_t before;

	(void)state;
	for (before = 0; npu_op_schema_at(before); before++)
		;
	assert_int_equal(npu_op_schema_register(list, 1, &err), NPU_ERR_INVALID_ARG);
	if (!strstr(err.msg, "'Relu' opsets 13 to 13: already defined"))
		fail_msg("message: %s", err.msg);
	list[0] = &twice_schema;	/* registered by the setup */
	assert_int_equal(npu_op_schema_register(list, 1, &err), NPU_ERR_INVALID_ARG);
	list[0] = &nameless;
	assert_int_equal(npu_op_schema_register(list, 1, &err), NPU_ERR_INVALID_ARG);
	if (!strstr(err.msg, "needs an op type"))
		fail_msg("message: %s", err.msg);
	/* Nothing of a refused batch is kept. */
	assert_null(npu_op_schema_at(before));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_only_op_imports_and_infers),
		cmocka_unit_test(test_schema_only_op_fails_placement_naming_it),
		cmocka_unit_test(test_schema_only_op_fails_to_load_or_run_through_the_engine),
		cmocka_unit_test(test_op_without_schema_is_unsupported),
		cmocka_unit_test(test_every_cpu_kernel_has_a_schema),
		cmocka_unit_test(test_registering_an_existing_op_is_refused_naming_it),
	};

	return cmocka_run_group_tests(tests, register_twice, NULL);
}
