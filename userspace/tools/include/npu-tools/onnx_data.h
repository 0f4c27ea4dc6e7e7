/* SPDX-License-Identifier: MIT */
/*
 * npu-tools/onnx_data.h - ONNX test-data files (test_data_set_N/input_K.pb,
 * output_K.pb), for the tools (libnpu-tools.a: `npu onnx-test`; not part
 * of libnpu-user).
 */
#ifndef NPU_TOOLS_ONNX_DATA_H
#define NPU_TOOLS_ONNX_DATA_H

#include <stddef.h>

#include "npu/npu_model.h"

/*
 * Read one value: for kind NPU_TYPE_SEQUENCE / NPU_TYPE_OPTIONAL a
 * serialized SequenceProto / OptionalProto, packed as npu_sequence_*()
 * reads it; otherwise a TensorProto. *out owns its data and its name (the
 * proto's, NULL when it has none): free with npu_host_tensor_free().
 * Errors: a status (NPU_ERR_UNSUPPORTED for a type the library does not
 * handle) and a message naming the file in 'msg'.
 */
npu_status npu_onnx_data_read(const char *path, enum npu_data_type kind,
			      struct npu_host_tensor *out, char *msg, size_t msg_size);

#endif /* NPU_TOOLS_ONNX_DATA_H */
