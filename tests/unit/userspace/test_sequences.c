// SPDX-License-Identifier: MIT
/*
 * ONNX sequences and optionals: the packed container the public API
 * exchanges (npu_sequence_*), a model that builds and indexes one, and
 * the errors: a position out of range names the node, a container that
 * is not one is refused, a buffer too small is refused.
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

static void test_pack_length_item_round_trip(void **state)
{
	float a[3] = { 1, 2, 3 }, b[2] = { 4, 5 };
	struct npu_host_tensor items[2] = {
		{ .dtype = NPU_TYPE_FLOAT, .rank = 1, .dims = { 3 }, .data = a, .nbytes = sizeof(a) },
		{ .dtype = NPU_TYPE_FLOAT, .rank = 2, .dims = { 1, 2 }, .data = b, .nbytes = sizeof(b) },
	}, seq, item, opt, inner;
	size_t need = npu_sequence_bytes(items, 2), n;
	void *buf = malloc(need), *obuf;

	(void)state;
	assert_int_equal(npu_sequence_pack(NPU_TYPE_SEQUENCE, items, 2, buf, need - 1, &seq),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "needed"));
	assert_int_equal(npu_sequence_pack(NPU_TYPE_SEQUENCE, items, 2, buf, need, &seq), NPU_OK);
	assert_int_equal(seq.dims[0], (int64_t)need);
	assert_int_equal(npu_sequence_length(&seq, &n), NPU_OK);
	assert_int_equal(n, 2);
	assert_int_equal(npu_sequence_item(&seq, 1, &item), NPU_OK);
	assert_int_equal(item.rank, 2);
	assert_memory_equal(item.data, b, sizeof(b));
	assert_int_equal(npu_sequence_item(&seq, 2, &item), NPU_ERR_INVALID_ARG);
	/* A sequence inside an optional. */
	obuf = malloc(npu_sequence_bytes(&seq, 1));
	assert_int_equal(npu_sequence_pack(NPU_TYPE_OPTIONAL, &seq, 1, obuf,
					   npu_sequence_bytes(&seq, 1), &opt), NPU_OK);
	assert_int_equal(npu_sequence_item(&opt, 0, &inner), NPU_OK);
	assert_int_equal(inner.dtype, NPU_TYPE_SEQUENCE);
	assert_int_equal(npu_sequence_length(&inner, &n), NPU_OK);
	assert_int_equal(n, 2);
	/* Items of two types are no sequence; bytes that are no container either. */
	items[1].dtype = NPU_TYPE_INT32;
	items[1].nbytes = 8;
	assert_int_equal(npu_sequence_pack(NPU_TYPE_SEQUENCE, items, 2, buf, need, &seq),
			 NPU_ERR_INVALID_ARG);
	memset(buf, 0x5a, need);
	seq.data = buf;
	assert_int_equal(npu_sequence_length(&seq, &n), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "malformed sequence"));
	free(buf);
	free(obuf);
}

/* y = SequenceAt(SequenceConstruct(x, Neg(x)), pos) */
static void *seq_model(size_t *size)
{
	static const int64_t d3[] = { 3 };
	static struct tb_model m;
	Onnx__ValueInfoProto *pos;

	tb_init(&m, 13);
	tb_input(&m, "x", 1, d3);
	tb_input(&m, "pos", 0, NULL);
	pos = m.in_ptr[1];
	pos->type->tensor_type->elem_type = 7;	/* int64 */
	tb_output(&m, "y", 1, d3);
	tb_node(&m, "Neg", "neg", "nx", 1, "x", NULL);
	tb_node(&m, "SequenceConstruct", "make", "s", 2, "x", "nx");
	tb_node(&m, "SequenceAt", "pick", "y", 2, "s", "pos");
	return tb_pack(&m, size);
}

static void test_model_builds_and_indexes_a_sequence(void **state)
{
	float x[3] = { 1, -2, 3 };
	int64_t pos;
	struct npu_host_tensor in[2] = {
		{ .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 1, .dims = { 3 }, .data = x,
		  .nbytes = sizeof(x) },
		{ .name = "pos", .dtype = NPU_TYPE_INT64, .rank = 0, .data = &pos, .nbytes = 8 },
	}, y;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	size_t size;
	void *buf = seq_model(&size);

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	if (npu_model_load_memory(e, buf, size, "seq.onnx", NULL, &m) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	pos = -1;	/* the last item: Neg(x) */
	if (npu_session_run(s, in, 2) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_true(((float *)y.data)[1] == 2.0f);
	pos = 2;
	assert_int_equal(npu_session_run(s, in, 2), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "node 'pick' (SequenceAt)"));
	assert_non_null(strstr(npu_last_error(), "position 2 is out of range"));
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_length_item_round_trip),
		cmocka_unit_test(test_model_builds_and_indexes_a_sequence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
