// SPDX-License-Identifier: MIT
/*
 * The random ops (issue 17): seeded draws are numpy's (RandomState(0)'s
 * well-known first numbers), repeat run after run, and Dropout in
 * training mode keeps exactly the elements whose draw is >= ratio, scaled
 * by 1 / (1 - ratio), with a matching mask. Bad ratios and probabilities
 * are errors naming the node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>

#include "npu/npu_model.h"
#include "onnx_builder.h"

/* numpy: np.random.seed(0); np.random.random_sample(4), np.random.randn(4) */
static const double np_uniform0[] = { 0.5488135039273248, 0.7151893663724195,
				      0.6027633760716439, 0.5448831829968969 };
static const double np_normal0[] = { 1.764052345967664, 0.4001572083672233,
				     0.9787379841057392, 2.240893199201458 };

struct attrs {
	Onnx__AttributeProto a[4], *p[4];
	int64_t ints[8];
};

static Onnx__AttributeProto *attr(struct attrs *at, size_t k, const char *name,
				  Onnx__AttributeProto__AttributeType type)
{
	onnx__attribute_proto__init(&at->a[k]);
	at->a[k].name = (char *)name;
	at->a[k].has_type = 1;
	at->a[k].type = type;
	at->p[k] = &at->a[k];
	return &at->a[k];
}

static struct npu_model *load(struct npu_engine *e, struct tb_model *m)
{
	struct npu_model *model = NULL;
	size_t size;
	void *buf = tb_pack(m, &size);

	if (npu_model_load_memory(e, buf, size, "random.onnx", NULL, &model) != NPU_OK)
		fail_msg("%s", npu_last_error());
	free(buf);
	return model;
}

/* y, mask = Dropout(x [n], ratio, training_mode = true), seed 0. */
static struct npu_model *dropout_model(struct npu_engine *e)
{
	static const int64_t dn[] = { -1 };
	static struct tb_model m;
	static struct attrs at;
	Onnx__NodeProto *n;
	Onnx__AttributeProto *a;

	tb_init(&m, 13);
	tb_input(&m, "x", 1, dn);
	tb_input(&m, "ratio", 0, NULL);
	tb_input(&m, "train", 0, NULL);
	m.in_ptr[2]->type->tensor_type->elem_type = 9;	/* bool */
	tb_output(&m, "y", 1, dn);
	tb_output(&m, "mask", 1, dn);
	m.out_ptr[1]->type->tensor_type->elem_type = 9;
	n = tb_node(&m, "Dropout", "drop", "y", 3, "x", "ratio");
	m.node_in[0][2] = "train";
	m.node_out[0][1] = "mask";
	n->n_output = 2;
	a = attr(&at, 0, "seed", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = 1;
	a->i = 0;
	n->n_attribute = 1;
	n->attribute = at.p;
	return load(e, &m);
}

static npu_status run_dropout(struct npu_session *s, float *x, size_t n, float ratio,
			      struct npu_host_tensor *y, struct npu_host_tensor *mask)
{
	uint8_t train = 1;
	struct npu_host_tensor in[3] = {
		{ .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 1, .dims = { (int64_t)n },
		  .data = x, .nbytes = n * sizeof(float) },
		{ .name = "ratio", .dtype = NPU_TYPE_FLOAT, .data = &ratio, .nbytes = 4 },
		{ .name = "train", .dtype = NPU_TYPE_BOOL, .data = &train, .nbytes = 1 },
	};
	npu_status st = npu_session_run(s, in, 3);

	if (st == NPU_OK) {
		assert_int_equal(npu_session_output(s, 0, y), NPU_OK);
		assert_int_equal(npu_session_output(s, 1, mask), NPU_OK);
	}
	return st;
}

static void test_training_dropout_keeps_numpy_draws_at_or_above_ratio(void **state)
{
	enum { N = 4000 };
	float *x = malloc(N * sizeof(float)), *first = malloc(N * sizeof(float));
	struct npu_host_tensor y, mask;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t i, kept = 0;

	(void)state;
	for (i = 0; i < N; i++)
		x[i] = 1.0f + (float)(i % 7);
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = dropout_model(e);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (run_dropout(s, x, N, 0.6f, &y, &mask) != NPU_OK)
		fail_msg("%s", npu_last_error());
	/* The first draws of RandomState(0) against ratio 0.6. */
	for (i = 0; i < 4; i++) {
		bool keep = np_uniform0[i] >= 0.6f;

		assert_int_equal(((uint8_t *)mask.data)[i], keep);
		assert_true(fabsf(((float *)y.data)[i] - (keep ? x[i] / 0.4f : 0.0f)) < 1e-5f);
	}
	for (i = 0; i < N; i++) {
		bool keep = ((uint8_t *)mask.data)[i] != 0;

		kept += keep;
		assert_true(fabsf(((float *)y.data)[i] - (keep ? x[i] / 0.4f : 0.0f)) < 1e-4f);
	}
	/* About 40% kept: 1600, far more than a few standard deviations (31) off is wrong. */
	assert_true(kept > 1450 && kept < 1750);
	memcpy(first, y.data, N * sizeof(float));
	/* Seeded: the next run drops the same elements. */
	if (run_dropout(s, x, N, 0.6f, &y, &mask) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_memory_equal(first, y.data, N * sizeof(float));
	/* A ratio of 1 would drop everything and divide by zero. */
	assert_int_equal(run_dropout(s, x, N, 1.0f, &y, &mask), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'drop' (Dropout)"));
	assert_non_null(strstr(npu_last_error(), "ratio 1 is outside [0, 1)"));
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(x);
	free(first);
}

/* y = op(seed 0, shape [4]) */
static struct npu_model *generator_model(struct npu_engine *e, const char *op)
{
	static const int64_t d4[] = { 4 };
	static struct tb_model m;
	static struct attrs at;
	Onnx__NodeProto *n;
	Onnx__AttributeProto *a;

	tb_init(&m, 13);
	tb_output(&m, "y", 1, d4);
	n = tb_node(&m, op, "draw", "y", 0, NULL, NULL);
	a = attr(&at, 0, "seed", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = 0;
	a = attr(&at, 1, "shape", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	at.ints[0] = 4;
	a->ints = at.ints;
	a->n_ints = 1;
	a = attr(&at, 2, !strcmp(op, "RandomNormal") ? "mean" : "low",
		 ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = -1;
	n->n_attribute = 3;
	n->attribute = at.p;
	return load(e, &m);
}

static void test_seeded_generators_give_numpys_numbers(void **state)
{
	struct npu_host_tensor y;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = generator_model(e, "RandomUniform");	/* low -1, high 1 */
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, NULL, 0) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	for (i = 0; i < 4; i++)
		assert_true(fabs(((float *)y.data)[i] - (-1 + 2 * np_uniform0[i])) < 1e-6);
	npu_session_destroy(s);
	npu_model_destroy(m);
	m = generator_model(e, "RandomNormal");	/* mean -1, scale 1 */
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, NULL, 0) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	for (i = 0; i < 4; i++)
		assert_true(fabs(((float *)y.data)[i] - (-1 + np_normal0[i])) < 1e-5);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_bernoulli_rejects_a_probability_above_one(void **state)
{
	static const int64_t d3[] = { 3 };
	static struct tb_model tm;
	float p[3] = { 0.0f, 1.0f, 1.5f };
	struct npu_host_tensor in = { .name = "p", .dtype = NPU_TYPE_FLOAT, .rank = 1,
				      .dims = { 3 }, .data = p, .nbytes = sizeof(p) }, y;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;

	(void)state;
	tb_init(&tm, 15);
	tb_input(&tm, "p", 1, d3);
	tb_output(&tm, "y", 1, d3);
	tb_node(&tm, "Bernoulli", "coin", "y", 1, "p", NULL);
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = load(e, &tm);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'coin' (Bernoulli)"));
	assert_non_null(strstr(npu_last_error(), "probability 1.5 at element 2"));
	/* 0 and 1 are certain whatever the draw. */
	p[2] = 1.0f;
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_true(((float *)y.data)[0] == 0 && ((float *)y.data)[1] == 1 &&
		    ((float *)y.data)[2] == 1);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_training_dropout_keeps_numpy_draws_at_or_above_ratio),
		cmocka_unit_test(test_seeded_generators_give_numpys_numbers),
		cmocka_unit_test(test_bernoulli_rejects_a_probability_above_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
