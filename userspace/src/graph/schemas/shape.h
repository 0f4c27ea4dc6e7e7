/* SPDX-License-Identifier: MIT */
/* What op_shape.c's schemas and kernels share (graph/schemas/shape.c). */
#ifndef NPU_SCHEMA_SHAPE_H
#define NPU_SCHEMA_SHAPE_H

#include "graph/schemas/schema_common.h"

/* The most outputs of a Split. */
#define NPU_SPLIT_MAX 256

enum npu_pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

npu_status npu_check_sized(const struct npu_infer_ctx *ctx, size_t i);

int64_t npu_shape_clamp64(int64_t v, int64_t lo, int64_t hi);

npu_status npu_pad_args(const struct npu_node *node,
			const struct npu_tensor *const *t, int rank,
			int64_t *begin, int64_t *end, bool *known,
			enum npu_pad_mode *mode, struct npu_error *err);

void npu_shape_range(const struct npu_node *node, int rank,
		     int64_t *start, int64_t *end);

/* ratio: the input (12), else the attribute, default 0.5; -1 unknown. */
float npu_dropout_ratio(const struct npu_node *node,
			const struct npu_tensor *t);

/* Per axis: start, step and (before npu_slice_resolve) the end in len. */
struct npu_slice_args {
	int64_t start[NPU_MAX_RANK], step[NPU_MAX_RANK], len[NPU_MAX_RANK];
	bool known[NPU_MAX_RANK];
};

void npu_transpose_perm(const struct npu_node *node, int rank,
			int64_t *perm, int *n);

/* Reads the four lists from attributes, constant values or tensors. */
npu_status npu_slice_read(const struct npu_node *node,
			  const struct npu_tensor *const *t, int rank,
			  struct npu_slice_args *sa,
			  struct npu_error *err);

/* Resolves start / end against dim (ONNX clamping), gives the length. */
void npu_slice_resolve(int64_t dim, int64_t *start, int64_t end,
		       int64_t step, int64_t *len);
#endif /* NPU_SCHEMA_SHAPE_H */
