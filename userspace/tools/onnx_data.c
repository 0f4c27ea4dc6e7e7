// SPDX-License-Identifier: MIT
/*
 * onnx_data.c - ONNX test-data values as host tensors (the tools library:
 * `npu onnx-test`), read by the importer's TensorProto / SequenceProto /
 * OptionalProto reader.
 */
#include "npu-tools/onnx_data.h"

#include <stdio.h>
#include <string.h>

#include "onnx/npu_onnx.h"
#include "runtime/npu_api.h"


npu_status npu_onnx_data_read(const char *path, enum npu_data_type kind,
			      struct npu_host_tensor *out, char *msg, size_t msg_size)
{
	struct npu_error err = { 0 };
	struct npu_tensor *t = NULL;
	char *name = NULL;
	npu_status st;

	memset(out, 0, sizeof(*out));
	st = npu_onnx_read_value_file(path, (enum npu_dtype)kind, &t, &name, &err);
	if (st != NPU_OK) {
		if (msg && msg_size)
			snprintf(msg, msg_size, "%s", npu_error_msg(&err));
		return st;
	}
	npu_host_tensor_take(out, t, name);
	return NPU_OK;
}
