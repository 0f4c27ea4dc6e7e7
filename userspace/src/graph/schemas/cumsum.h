/* SPDX-License-Identifier: MIT */
/* What op_cumsum.c's schemas and kernels share (graph/schemas/cumsum.c). */
#ifndef NPU_SCHEMA_CUMSUM_H
#define NPU_SCHEMA_CUMSUM_H

#include "graph/schemas/schema_common.h"

npu_status npu_cumsum_axis(const struct npu_node *node,
			   const struct npu_tensor *t, int rank,
			   int *axis, struct npu_error *err);

#endif /* NPU_SCHEMA_CUMSUM_H */
