// SPDX-License-Identifier: MIT
/*
 * npu_tensor_file.c - the public face of tensor files (API 1.2): .npy
 * (runtime/npu_npy.c) and ONNX TensorProto .pb (onnx/npu_onnx_tensor.c),
 * as host tensors the caller owns.
 */
#include "runtime/npu_api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/npu_onnx.h"
#include "runtime/npu_npy.h"

_Static_assert(NPU_MAX_RANK == NPU_MODEL_MAX_RANK, "one rank limit");

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

void npu_host_tensor_take(struct npu_host_tensor *out, struct npu_tensor *t, char *name)
{
	out->name = name;
	out->dtype = (enum npu_data_type)t->dtype;
	out->rank = t->shape.rank;
	memcpy(out->dims, t->shape.dims, sizeof(int64_t) * (size_t)t->shape.rank);
	out->data = t->data;
	out->nbytes = t->nbytes;
	t->data = NULL;
	npu_tensor_destroy(t);
}

NPU_API npu_status npu_tensor_file_read(const char *path, struct npu_host_tensor *out)
{
	struct npu_error err = { 0 };
	struct npu_tensor *t = NULL;
	char *name = NULL;
	npu_status st;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_tensor_file_read: NULL tensor");
	memset(out, 0, sizeof(*out));
	if (!path)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_tensor_file_read: NULL path");
	if (ends_with(path, ".pb"))
		st = npu_onnx_read_tensor_file(path, &t, &name, &err);
	else
		st = npu_npy_read(path, &t, &err);
	if (st != NPU_OK)
		return npu_api_fail_err(&err);
	npu_host_tensor_take(out, t, name);
	return NPU_OK;
}

NPU_API npu_status npu_tensor_file_write_npy(const char *path, const struct npu_host_tensor *t)
{
	struct npu_error err = { 0 };
	struct npu_tensor v = { 0 };
	size_t esize;
	uint64_t numel = 1;
	int d;

	if (!path || !t)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_tensor_file_write_npy: NULL argument");
	if (t->rank < 0 || t->rank > NPU_MODEL_MAX_RANK)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: rank %d is not 0 .. %d", path,
				    t->rank, NPU_MODEL_MAX_RANK);
	for (d = 0; d < t->rank; d++) {
		if (t->dims[d] < 0 || (t->dims[d] && numel > UINT64_MAX / (uint64_t)t->dims[d]))
			return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: dim %d is %lld", path, d,
					    (long long)t->dims[d]);
		numel *= (uint64_t)t->dims[d];
	}
	esize = npu_data_type_size(t->dtype);
	if (t->dtype != NPU_TYPE_STRING && esize &&
	    (numel > SIZE_MAX / esize || t->nbytes != numel * esize))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: %zu bytes of data for %llu elements of %s", path,
				    t->nbytes, (unsigned long long)numel,
				    npu_data_type_name(t->dtype));
	if (t->nbytes && !t->data)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: NULL data", path);
	v.dtype = (enum npu_dtype)t->dtype;
	v.shape.rank = t->rank;
	memcpy(v.shape.dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
	v.data = t->data;
	v.nbytes = t->nbytes;
	if (npu_npy_write(path, &v, &err) != NPU_OK)
		return npu_api_fail_err(&err);
	return NPU_OK;
}

NPU_API void npu_host_tensor_free(struct npu_host_tensor *t)
{
	if (!t)
		return;
	free((char *)t->name);
	free(t->data);
	memset(t, 0, sizeof(*t));
}
