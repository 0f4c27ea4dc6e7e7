/* SPDX-License-Identifier: MIT */
/* Shared between the importer's files; not for other modules. */
#ifndef NPU_ONNX_INTERNAL_H
#define NPU_ONNX_INTERNAL_H

#include <stdbool.h>

#include "onnx/npu_onnx.h"
#include "onnx/onnx.pb-c.h"

bool npu_onnx_dtype_supported(int32_t onnx_type);
const char *npu_onnx_dtype_name(int32_t onnx_type);
/* 'what' ("model.onnx: initializer 'w'") prefixes every message. */
npu_status npu_onnx_tensor_from_proto(const Onnx__TensorProto *tp,
				      const char *what,
				      struct npu_tensor **out,
				      struct npu_error *err);
/* The model's metadata (npu_onnx_meta.c); 'source' prefixes messages. */
npu_status npu_onnx_meta_from_proto(const Onnx__ModelProto *mp, const char *source,
				    struct npu_onnx_meta **out, struct npu_error *err);
/*
 * Lower every Gradient node (ai.onnx.preview.training) of the top graph
 * into ordinary nodes (npu_onnx_gradient.c); re-sorts the graph.
 */
npu_status npu_onnx_lower_gradients(struct npu_graph *g, struct npu_error *err);

#endif /* NPU_ONNX_INTERNAL_H */
