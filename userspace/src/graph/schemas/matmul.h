/* SPDX-License-Identifier: MIT */
/* What op_matmul.c's schemas and kernels share (graph/schemas/matmul.c). */
#ifndef NPU_SCHEMA_MATMUL_H
#define NPU_SCHEMA_MATMUL_H

#include "graph/schemas/schema_common.h"

/* A and B promoted to rank >= 2 the numpy way. */
void npu_matmul_promote(const struct npu_shape *a,
			const struct npu_shape *b,
			struct npu_shape *pa, struct npu_shape *pb);

#endif /* NPU_SCHEMA_MATMUL_H */
