// SPDX-License-Identifier: MIT
/*
 * Compile warnings (issue 30): a bias too large for the int32 accumulator
 * at a channel's fine weight scale widens that scale; a live channel is
 * worth a warning (npu_plan_warning(), npu compile --explain), a dead one
 * (weights ~0: its output is its bias) is not, and the engine's log says
 * the count once per model, however many plans it makes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

/* x[N,2,8,8] -> Conv 1x1 (3 channels, bias) -> y. */
static float w[3 * 2], b[3];
static int64_t w_dims[] = { 3, 2, 1, 1 }, b_dims[] = { 3 };

static void *model(size_t *size)
{
	static const int64_t xd[] = { -1, 2, 8, 8 }, yd[] = { -1, 3, 8, 8 };
	static struct tb_model m;
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;

	w[0] = 0.8f, w[1] = -0.5f, b[0] = 0.1f;		/* an ordinary channel */
	w[2] = 0.0f, w[3] = 0.0f, b[1] = 3.0e4f;	/* dead: its output is its bias */
	w[4] = 2e-5f, w[5] = -1e-5f, b[2] = 3.0e4f;	/* live, tiny weights, huge bias */
	tb_init(&m, 13);
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "y", 4, yd);
	t = tb_init_tensor(&m, "w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w_dims);
	t->n_float_data = 6;
	t->float_data = w;
	t = tb_init_tensor(&m, "b", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b_dims);
	t->n_float_data = 3;
	t->float_data = b;
	n = tb_node(&m, "Conv", "conv", "y", 3, "x", "w");
	m.node_in[0][2] = "b";
	(void)n;
	return tb_pack(&m, size);
}

static int warnings_logged;
static char first_logged[512];

static void on_log(void *arg, enum npu_log_level level, const char *message)
{
	(void)arg;
	if (level != NPU_LOG_WARNING)
		return;
	if (!warnings_logged++)
		snprintf(first_logged, sizeof(first_logged), "%s", message);
}

static void test_live_channel_warns_once_per_model(void **state)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_plan *p1, *p2;
	struct npu_host_tensor s1 = { .name = "x", .rank = 4, .dims = { 1, 2, 8, 8 } };
	struct npu_host_tensor s2 = { .name = "x", .rank = 4, .dims = { 2, 2, 8, 8 } };
	size_t size;
	void *buf = model(&size);

	(void)state;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	eo.log = on_log;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	if (npu_model_load_memory(e, buf, size, "warn.onnx", &mo, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	if (npu_model_get_plan(m, &s1, 1, &p1) != NPU_OK || npu_model_get_plan(m, &s2, 1, &p2) != NPU_OK)
		fail_msg("plan: %s", npu_last_error());
	/* Each plan: one warning, naming 1 of 3 channels, the live one (2). */
	assert_int_equal(npu_plan_num_warnings(p1), 1);
	assert_int_equal(npu_plan_num_warnings(p2), 1);
	assert_non_null(strstr(npu_plan_warning(p1, 0), "1 of 3 channels (first: 2)"));
	assert_null(npu_plan_warning(p1, 1));
	/* The log: once for the model, not once per plan or per node. */
	assert_int_equal(warnings_logged, 1);
	assert_non_null(strstr(first_logged, "1 compile warning, the first:"));
	assert_non_null(strstr(first_logged, "--explain"));
	npu_plan_release(p1);
	npu_plan_release(p2);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_channel_warns_once_per_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
