/* SPDX-License-Identifier: MIT */
/* What op_reduce.c's schemas and kernels share (graph/schemas/reduce.c). */
#ifndef NPU_SCHEMA_REDUCE_H
#define NPU_SCHEMA_REDUCE_H

#include "graph/schemas/schema_common.h"

enum npu_reduce_kind {
	RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2,
	RED_SUM_SQUARE, RED_LOG_SUM, RED_LOG_SUM_EXP,
};

/* reduced[d] for each input dim; false everywhere means identity. */
npu_status npu_reduce_axes(const struct npu_node *node,
			   enum npu_reduce_kind k,
			   const struct npu_tensor *axes_t, int rank,
			   bool *reduced, bool *known,
			   struct npu_error *err);

#endif /* NPU_SCHEMA_REDUCE_H */
