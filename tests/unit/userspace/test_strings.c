// SPDX-License-Identifier: MIT
/*
 * String tensors (issue 17): the public packing functions, models that
 * carry strings through Cast and StringNormalizer, and the errors for bad
 * string data, bad attributes and ops that take no strings.
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

/* A host string tensor of rank 1 packed into *buf (the caller frees). */
static struct npu_host_tensor strings(const char *name, const char *const *s, size_t n,
				      void **buf)
{
	struct npu_host_tensor t = { .name = name, .dtype = NPU_TYPE_STRING, .rank = 1,
				     .dims = { (int64_t)n } };
	size_t len[16], i;

	for (i = 0; i < n; i++)
		len[i] = strlen(s[i]);
	t.nbytes = npu_string_tensor_bytes(len, n);
	*buf = malloc(t.nbytes);
	assert_non_null(*buf);
	assert_int_equal(npu_string_tensor_pack(s, len, n, *buf, t.nbytes), NPU_OK);
	t.data = *buf;
	return t;
}

static void assert_string_at(const struct npu_host_tensor *t, size_t i, const char *want)
{
	const char *s;
	size_t len;

	if (npu_string_tensor_get(t, i, &s, &len) != NPU_OK)
		fail_msg("%s", npu_last_error());
	if (len != strlen(want) || memcmp(s, want, len))
		fail_msg("string %zu is \"%.*s\", expected \"%s\"", i, (int)len, s, want);
}

static void test_pack_and_get_round_trip(void **state)
{
	static const char *const s[] = { "", "héllo", "a\0b" };
	size_t len[] = { 0, 6, 3 };
	struct npu_host_tensor t = { .dtype = NPU_TYPE_STRING, .rank = 2, .dims = { 1, 3 } };
	const char *got;
	size_t n, need = npu_string_tensor_bytes(len, 3);
	char *buf = malloc(need);

	(void)state;
	assert_int_equal(npu_string_tensor_pack(s, len, 3, buf, need - 1), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_string_tensor_pack(s, len, 3, buf, need), NPU_OK);
	t.data = buf;
	t.nbytes = need;
	assert_int_equal(npu_string_tensor_get(&t, 1, &got, &n), NPU_OK);
	assert_int_equal(n, 6);
	assert_memory_equal(got, "héllo", 6);
	assert_int_equal(npu_string_tensor_get(&t, 2, &got, &n), NPU_OK);
	assert_int_equal(n, 3);
	assert_memory_equal(got, "a\0b", 3);	/* lengths are explicit: NUL is a byte */
	assert_int_equal(npu_string_tensor_get(&t, 3, &got, &n), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "index 3 of 3 strings"));
	/* A shape that disagrees with the buffer's count is caught. */
	t.dims[1] = 4;
	assert_int_equal(npu_string_tensor_get(&t, 0, &got, &n), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "holds 3 strings, its shape has 4"));
	free(buf);
}

static void set_string_type(struct tb_model *m, Onnx__ValueInfoProto *vi)
{
	(void)m;
	vi->type->tensor_type->elem_type = 8;
}

/* Attributes of one node, built by hand (the builder holds one per node). */
struct attrs {
	Onnx__AttributeProto a[4], *p[4];
	ProtobufCBinaryData words[4];
};

static void attr_string(struct attrs *at, size_t k, const char *name, const char *v)
{
	onnx__attribute_proto__init(&at->a[k]);
	at->a[k].name = (char *)name;
	at->a[k].has_type = 1;
	at->a[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	at->a[k].has_s = 1;
	at->a[k].s.data = (uint8_t *)v;
	at->a[k].s.len = strlen(v);
	at->p[k] = &at->a[k];
}

/* y = StringNormalizer(x: string [N]) with these attributes. */
static void *normalizer_model(const char *action, const char *stopword, int rank2,
			      size_t *size)
{
	static const int64_t d1[] = { -1 }, d2[] = { 2, -1 };
	static struct tb_model m;
	static struct attrs at;
	Onnx__NodeProto *n;
	size_t k = 0;

	tb_init(&m, 12);
	tb_input(&m, "x", rank2 ? 2 : 1, rank2 ? d2 : d1);
	set_string_type(&m, m.in_ptr[0]);
	tb_output(&m, "y", 1, d1);
	set_string_type(&m, m.out_ptr[0]);
	n = tb_node(&m, "StringNormalizer", "norm", "y", 1, "x", NULL);
	attr_string(&at, k++, "case_change_action", action);
	if (stopword) {
		onnx__attribute_proto__init(&at.a[k]);
		at.a[k].name = "stopwords";
		at.a[k].has_type = 1;
		at.a[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
		at.words[0].data = (uint8_t *)stopword;
		at.words[0].len = strlen(stopword);
		at.a[k].n_strings = 1;
		at.a[k].strings = at.words;
		at.p[k] = &at.a[k];
		k++;
	}
	n->n_attribute = k;
	n->attribute = at.p;
	return tb_pack(&m, size);
}

static struct npu_model *load(struct npu_engine *e, void *buf, const size_t *size)
{
	struct npu_model *m = NULL;

	if (npu_model_load_memory(e, buf, *size, "strings.onnx", NULL, &m) != NPU_OK)
		fail_msg("%s", npu_last_error());
	free(buf);
	return m;
}

static void test_normalizer_drops_stopwords_and_changes_case(void **state)
{
	static const char *const words[] = { "The", "Straße", "ÉTÉ", "the" };
	static const char *const only[] = { "THE", "the" };
	struct npu_host_tensor x, y;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	void *xb;
	size_t size;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = load(e, normalizer_model("LOWER", "the", 0, &size), &size);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	x = strings("x", words, 4, &xb);
	if (npu_session_run(s, &x, 1) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_int_equal(y.dtype, NPU_TYPE_STRING);
	assert_int_equal(y.rank, 1);
	assert_int_equal(y.dims[0], 2);	/* "The" and "the" are stopwords, case-insensitively */
	assert_string_at(&y, 0, "straße");
	assert_string_at(&y, 1, "été");	/* Unicode lower case, not only ASCII */
	free(xb);
	/* Everything dropped: one empty string, as ONNX specifies. */
	x = strings("x", only, 2, &xb);
	if (npu_session_run(s, &x, 1) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_int_equal(y.dims[0], 1);
	assert_string_at(&y, 0, "");
	free(xb);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* Load, then run once on x: the status, with the message in npu_last_error(). */
static npu_status run_once(struct npu_engine *e, void *buf, size_t size,
			   const struct npu_host_tensor *x)
{
	struct npu_model *m = load(e, buf, &size);
	struct npu_session *s;
	npu_status st;

	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	st = npu_session_run(s, x, 1);
	npu_session_destroy(s);
	npu_model_destroy(m);
	return st;
}

static void test_normalizer_bad_attribute_and_shape_name_the_node(void **state)
{
	static const char *const words[] = { "a", "b", "c", "d" };
	struct npu_host_tensor x;
	struct npu_engine *e;
	size_t size;
	void *xb, *buf;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	x = strings("x", words, 2, &xb);
	buf = normalizer_model("TITLE", NULL, 0, &size);
	assert_int_equal(run_once(e, buf, size, &x), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'norm' (StringNormalizer)"));
	assert_non_null(strstr(npu_last_error(), "'case_change_action' = 'TITLE'"));
	free(xb);
	/* A [2, 2] input: only [C] and [1, C] are allowed. */
	x = strings("x", words, 4, &xb);
	x.rank = 2;
	x.dims[0] = 2;
	x.dims[1] = 2;
	buf = normalizer_model("UPPER", NULL, 1, &size);
	assert_int_equal(run_once(e, buf, size, &x), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'norm' (StringNormalizer)"));
	assert_non_null(strstr(npu_last_error(), "must be [C] or [1, C]"));
	free(xb);
	npu_engine_destroy(e);
}

/* y = Cast(x, to), x and y of the given ONNX types, shape [N]. */
static void *cast_model(const char *op, int from, int to, size_t *size)
{
	static const int64_t d1[] = { -1 };
	static struct tb_model m;
	Onnx__NodeProto *n;

	tb_init(&m, 13);
	tb_input(&m, "x", 1, d1);
	m.in_ptr[0]->type->tensor_type->elem_type = from;
	tb_output(&m, "y", 1, d1);
	m.out_ptr[0]->type->tensor_type->elem_type = to;
	n = tb_node(&m, op, "cast", "y", 1, "x", NULL);
	tb_attr_int(&m, n, "to", to);
	return tb_pack(&m, size);
}

static void test_cast_numbers_to_text_and_back(void **state)
{
	float x[] = { 0.25f, 3.0f, 1e-5f, -0.1f, NAN, -INFINITY };
	static const char *const want[] = { "0.25", "3.0", "1e-05", "-0.1", "NaN", "-INF" };
	static const char *const text[] = { " 1.5", "-2e3", "inf", "nan" };
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 1,
				      .dims = { 6 }, .data = x, .nbytes = sizeof(x) }, y;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t size, i;
	void *xb;
	float *f;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = load(e, cast_model("Cast", 1, 8, &size), &size);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	for (i = 0; i < 6; i++)
		assert_string_at(&y, i, want[i]);
	npu_session_destroy(s);
	npu_model_destroy(m);

	m = load(e, cast_model("Cast", 8, 1, &size), &size);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	in = strings("x", text, 4, &xb);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	f = y.data;
	assert_true(f[0] == 1.5f && f[1] == -2000.0f && isinf(f[2]) && isnan(f[3]));
	free(xb);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_cast_of_bad_text_names_node_and_element(void **state)
{
	static const char *const text[] = { "7", "seven" };
	struct npu_host_tensor in;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t size;
	void *xb;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = load(e, cast_model("Cast", 8, 6, &size), &size);	/* to int32 */
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	in = strings("x", text, 2, &xb);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'cast' (Cast)"));
	assert_non_null(strstr(npu_last_error(), "element 1 of input 'x' is \"seven\", not a int32"));
	free(xb);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_malformed_string_input_is_rejected(void **state)
{
	static const char *const text[] = { "a", "b" };
	struct npu_host_tensor in;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t size;
	void *xb;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	m = load(e, cast_model("Cast", 8, 1, &size), &size);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	in = strings("x", text, 2, &xb);
	in.dims[0] = 3;		/* the buffer holds 2 */
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "input 'x': holds 2 strings, its shape has 3"));
	in.dims[0] = 2;
	in.nbytes -= 1;		/* the text is cut short */
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "input 'x': string 1 ends at 2"));
	memset(xb, 0, 4);	/* not a string buffer at all */
	in.nbytes += 1;
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "bad magic"));
	free(xb);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_op_without_strings_rejects_them_by_name(void **state)
{
	static const int64_t d1[] = { 2 };
	static const char *const words[] = { "a", "b" };
	static struct tb_model tm;
	struct npu_host_tensor x;
	struct npu_engine *e;
	size_t size;
	void *buf, *xb;

	(void)state;
	tb_init(&tm, 13);
	tb_input(&tm, "x", 1, d1);
	set_string_type(&tm, tm.in_ptr[0]);
	tb_output(&tm, "y", 1, d1);
	set_string_type(&tm, tm.out_ptr[0]);
	tb_node(&tm, "Abs", "flip", "y", 1, "x", NULL);
	buf = tb_pack(&tm, &size);
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	x = strings("x", words, 2, &xb);
	assert_int_equal(run_once(e, buf, size, &x), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(npu_last_error(), "node 'flip' (Abs)"));
	assert_non_null(strstr(npu_last_error(), "input 'x' is a string tensor"));
	free(xb);
	npu_engine_destroy(e);
}

/* y = Equal(Identity(a), b) at 'opset', a [3] and b [1] strings. */
static void *equal_model(int opset, size_t *size)
{
	static const int64_t d3[] = { 3 }, d1[] = { 1 };
	static struct tb_model m;

	tb_init(&m, opset);
	tb_input(&m, "a", 1, d3);
	set_string_type(&m, m.in_ptr[0]);
	tb_input(&m, "b", 1, d1);
	set_string_type(&m, m.in_ptr[1]);
	tb_output(&m, "y", 1, d3);
	m.out_ptr[0]->type->tensor_type->elem_type = 9;	/* bool */
	tb_node(&m, "Identity", "same", "a2", 1, "a", NULL);
	tb_node(&m, "Equal", "eq", "y", 2, "a2", "b");
	return tb_pack(&m, size);
}

static void test_equal_compares_strings_with_broadcasting(void **state)
{
	static const char *const a[] = { "x", "xx", "x" }, *const b[] = { "x" };
	struct npu_host_tensor in[2], y;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t size;
	void *ab, *bb, *buf;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	in[0] = strings("a", a, 3, &ab);
	in[1] = strings("b", b, 1, &bb);
	m = load(e, equal_model(19, &size), &size);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, in, 2) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_int_equal(y.dtype, NPU_TYPE_BOOL);
	assert_true(((uint8_t *)y.data)[0] == 1 && ((uint8_t *)y.data)[1] == 0 &&
		    ((uint8_t *)y.data)[2] == 1);
	npu_session_destroy(s);
	npu_model_destroy(m);
	/* Before opset 19 Equal takes no strings. */
	buf = equal_model(13, &size);
	m = load(e, buf, &size);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_equal(npu_session_run(s, in, 2), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(npu_last_error(), "node 'eq' (Equal)"));
	assert_non_null(strstr(npu_last_error(), "string inputs need opset 19"));
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(ab);
	free(bb);
	npu_engine_destroy(e);
}

/* y = Gather(Reshape(Transpose(x), [-1]), idx): strings move by index. */
/*
 * y = Relu(Cast(x: string [3]) to float), compiled for sim with random
 * calibration: no random input can be made for a string, and the error
 * says so, naming the input (it once read "out of memory").
 */
static void test_random_calibration_refuses_string_inputs_by_name(void **state)
{
	static const int64_t d3[] = { 3 };
	static struct tb_model tm;
	struct npu_model_options mo;
	struct npu_engine *e;
	struct npu_model *m = NULL;
	Onnx__NodeProto *n;
	size_t size;
	void *buf;

	(void)state;
	tb_init(&tm, 13);
	tb_input(&tm, "text", 1, d3);
	set_string_type(&tm, tm.in_ptr[0]);
	tb_output(&tm, "y", 1, d3);
	n = tb_node(&tm, "Cast", "cast", "v", 1, "text", NULL);
	tb_attr_int(&tm, n, "to", 1);
	tb_node(&tm, "Relu", "relu", "y", 1, "v", NULL);
	buf = tb_pack(&tm, &size);
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	if (npu_model_load_memory(e, buf, size, "text.onnx", &mo, &m) == NPU_OK) {
		struct npu_host_tensor in = { .dtype = NPU_TYPE_STRING, .rank = 1, .dims = { 3 } };
		struct npu_plan *plan = NULL;

		assert_int_not_equal(npu_model_get_plan(m, &in, 1, &plan), NPU_OK);
		npu_model_destroy(m);
	}
	assert_non_null(strstr(npu_last_error(), "input 'text' is a string tensor"));
	assert_non_null(strstr(npu_last_error(), "--calib-dir"));
	free(buf);
	npu_engine_destroy(e);
}

static void test_data_movement_ops_move_strings(void **state)
{
	static const char *const x[] = { "a", "bb", "c", "dd", "e", "ff" };
	static const int64_t d23[] = { 2, 3 }, d3[] = { 3 }, d1[] = { 1 };
	static int64_t flat_dims[] = { 1 }, flat[] = { -1 };
	static struct tb_model m;
	int64_t idx[3] = { 5, 0, 3 };
	struct npu_host_tensor in[2], y;
	Onnx__TensorProto *t;
	struct npu_engine *e;
	struct npu_model *model;
	struct npu_session *s;
	size_t size;
	void *xb;

	(void)state;
	(void)d1;
	tb_init(&m, 13);
	tb_input(&m, "x", 2, d23);
	set_string_type(&m, m.in_ptr[0]);
	tb_input(&m, "idx", 1, d3);
	m.in_ptr[1]->type->tensor_type->elem_type = 7;
	tb_output(&m, "y", 1, d3);
	set_string_type(&m, m.out_ptr[0]);
	t = tb_init_tensor(&m, "flat", 7, 1, flat_dims);
	t->int64_data = flat;
	t->n_int64_data = 1;
	tb_node(&m, "Transpose", "t", "xt", 1, "x", NULL);
	tb_node(&m, "Reshape", "r", "xf", 2, "xt", "flat");
	tb_node(&m, "Gather", "g", "y", 2, "xf", "idx");
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	model = load(e, tb_pack(&m, &size), &size);
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	in[0] = strings("x", x, 6, &xb);
	in[0].rank = 2;
	in[0].dims[0] = 2;
	in[0].dims[1] = 3;
	in[1] = (struct npu_host_tensor){ .name = "idx", .dtype = NPU_TYPE_INT64, .rank = 1,
					  .dims = { 3 }, .data = idx, .nbytes = sizeof(idx) };
	if (npu_session_run(s, in, 2) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	/* Transposed and flattened: a dd bb e c ff. */
	assert_string_at(&y, 0, "ff");
	assert_string_at(&y, 1, "a");
	assert_string_at(&y, 2, "e");
	/* An index out of range is Gather's own error, named. */
	idx[1] = 6;
	assert_int_equal(npu_session_run(s, in, 2), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'g' (Gather)"));
	free(xb);
	npu_session_destroy(s);
	npu_model_destroy(model);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_and_get_round_trip),
		cmocka_unit_test(test_normalizer_drops_stopwords_and_changes_case),
		cmocka_unit_test(test_normalizer_bad_attribute_and_shape_name_the_node),
		cmocka_unit_test(test_cast_numbers_to_text_and_back),
		cmocka_unit_test(test_cast_of_bad_text_names_node_and_element),
		cmocka_unit_test(test_malformed_string_input_is_rejected),
		cmocka_unit_test(test_op_without_strings_rejects_them_by_name),
		cmocka_unit_test(test_equal_compares_strings_with_broadcasting),
		cmocka_unit_test(test_data_movement_ops_move_strings),
		cmocka_unit_test(test_random_calibration_refuses_string_inputs_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
