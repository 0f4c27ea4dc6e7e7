// SPDX-License-Identifier: MIT
/* .npy files: round trip, header versions, and clear refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "graph/npu_ir.h"
#include "npu/npu_model.h"
#include "runtime/npu_npy.h"

/* A .npy in memory with the given header dict and version. */
static size_t make_npy(uint8_t *buf, int major, const char *dict,
		       const void *data, size_t nbytes)
{
	size_t pre = major == 1 ? 10 : 12, len = strlen(dict);
	size_t total = (pre + len + 1 + 63) / 64 * 64, hlen = total - pre;

	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)major;
	buf[7] = 0;
	buf[8] = (uint8_t)(hlen & 0xff);
	buf[9] = (uint8_t)(hlen >> 8);
	if (major != 1) {
		buf[10] = 0;
		buf[11] = 0;
	}
	memcpy(buf + pre, dict, len);
	memset(buf + pre + len, ' ', hlen - len - 1);
	buf[total - 1] = '\n';
	memcpy(buf + total, data, nbytes);
	return total + nbytes;
}

static void test_write_then_read_round_trips(void **state)
{
	char path[] = "/tmp/npu-npy-XXXXXX";
	struct npu_tensor t = { .dtype = NPU_DTYPE_INT64,
				.shape = { 2, { 2, 3 } } };
	int64_t data[6] = { 1, -2, 3, -4, 5, 1LL << 40 };
	struct npu_tensor *back = NULL;
	struct npu_error err = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	t.data = data;
	t.nbytes = sizeof(data);
	assert_int_equal(npu_npy_write(path, &t, &err), NPU_OK);
	assert_int_equal(npu_npy_read(path, &back, &err), NPU_OK);
	assert_int_equal(back->dtype, NPU_DTYPE_INT64);
	assert_int_equal(back->shape.rank, 2);
	assert_int_equal(back->shape.dims[1], 3);
	assert_memory_equal(back->data, data, sizeof(data));
	npu_tensor_destroy(back);
	unlink(path);
}

static void test_v2_header_and_1d_scalar_shapes_parse(void **state)
{
	uint8_t buf[256];
	float f[3] = { 1, 2, 3 };
	struct npu_tensor *t = NULL;
	struct npu_error err = { 0 };
	size_t n;

	(void)state;
	n = make_npy(buf, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
		     f, sizeof(f));
	assert_int_equal(npu_npy_parse(buf, n, "a.npy", &t, &err), NPU_OK);
	assert_int_equal(t->shape.rank, 1);
	assert_int_equal(t->shape.dims[0], 3);
	npu_tensor_destroy(t);
	n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }",
		     "\x01", 1);
	assert_int_equal(npu_npy_parse(buf, n, "b.npy", &t, &err), NPU_OK);
	assert_int_equal(t->dtype, NPU_DTYPE_BOOL);
	assert_int_equal(t->shape.rank, 0);
	npu_tensor_destroy(t);
}

static void expect_refusal(const char *dict, size_t data_bytes,
			   const char *needle)
{
	uint8_t buf[512] = { 0 }, zeros[64] = { 0 };
	struct npu_tensor *t = NULL;
	struct npu_error err = { 0 };
	size_t n = make_npy(buf, 1, dict, zeros, data_bytes);

	assert_int_not_equal(npu_npy_parse(buf, n, "bad.npy", &t, &err), NPU_OK);
	assert_null(t);
	if (!strstr(err.msg, needle) || !strstr(err.msg, "bad.npy"))
		fail_msg("message: %s", err.msg);
}

static void test_fortran_order_big_endian_and_truncation_are_refused(void **state)
{
	(void)state;
	expect_refusal("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
		       16, "fortran_order");
	expect_refusal("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
		       8, "big-endian");
	expect_refusal("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), }",
		       8, "the header says 64");
	expect_refusal("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
		       8, "'<c8'");
	expect_refusal("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }",
		       8, "malformed");
}

static void test_not_npy_is_refused(void **state)
{
	struct npu_tensor *t = NULL;
	struct npu_error err = { 0 };

	(void)state;
	assert_int_equal(npu_npy_parse("hello world", 11, "x.npy", &t, &err),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(err.msg, "bad magic"));
}

/* The public face (API 1.2): host tensors the caller owns, checked on write. */
static void test_public_tensor_files_round_trip_and_refuse_bad_tensors(void **state)
{
	char path[] = "/tmp/npu-npy-XXXXXX";
	float data[6] = { 1.5f, -2, 3, -4, 5, 6 };
	struct npu_host_tensor t = { .dtype = NPU_TYPE_FLOAT, .rank = 2, .dims = { 3, 2 },
				     .data = data, .nbytes = sizeof(data) };
	struct npu_host_tensor back;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(npu_tensor_file_write_npy(path, &t), NPU_OK);
	assert_int_equal(npu_tensor_file_read(path, &back), NPU_OK);
	assert_int_equal(back.dtype, NPU_TYPE_FLOAT);
	assert_int_equal(back.rank, 2);
	assert_int_equal(back.dims[0], 3);
	assert_int_equal(back.dims[1], 2);
	assert_null(back.name);
	assert_int_equal(back.nbytes, sizeof(data));
	assert_memory_equal(back.data, data, sizeof(data));
	npu_host_tensor_free(&back);
	assert_null(back.data);
	npu_host_tensor_free(NULL);

	/* nbytes that do not match the dims: refused, naming the file. */
	t.nbytes = sizeof(data) - 4;
	assert_int_equal(npu_tensor_file_write_npy(path, &t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "20 bytes of data for 6 elements of float"));
	t.nbytes = sizeof(data);
	t.dims[1] = -1;
	assert_int_equal(npu_tensor_file_write_npy(path, &t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "dim 1 is -1"));
	unlink(path);

	/* A missing file, and a .pb that is not a TensorProto. */
	assert_int_not_equal(npu_tensor_file_read("/nonexistent/x.npy", &back), NPU_OK);
	assert_non_null(strstr(npu_last_error(), "/nonexistent/x.npy"));
	assert_null(back.data);
	{
		char pb[] = "/tmp/npu-pb-XXXXXX.pb";
		int pfd = mkstemps(pb, 3);

		assert_true(pfd >= 0);
		assert_int_equal(write(pfd, "\xff\xff\xff\xff", 4), 4);
		close(pfd);
		assert_int_not_equal(npu_tensor_file_read(pb, &back), NPU_OK);
		assert_non_null(strstr(npu_last_error(), pb));
		unlink(pb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read_round_trips),
		cmocka_unit_test(test_v2_header_and_1d_scalar_shapes_parse),
		cmocka_unit_test(test_fortran_order_big_endian_and_truncation_are_refused),
		cmocka_unit_test(test_not_npy_is_refused),
		cmocka_unit_test(test_public_tensor_files_round_trip_and_refuse_bad_tensors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
