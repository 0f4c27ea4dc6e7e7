/* SPDX-License-Identifier: MIT */
/* What op_norm.c's schemas and kernels share (graph/schemas/norm.c). */
#ifndef NPU_SCHEMA_NORM_H
#define NPU_SCHEMA_NORM_H

#include "graph/schemas/schema_common.h"

/* reduced[d] from 'axes' (default 0, 2, 3). */
npu_status npu_mvn_axes(const struct npu_node *node, int rank,
			bool *reduced, struct npu_error *err);

#endif /* NPU_SCHEMA_NORM_H */
