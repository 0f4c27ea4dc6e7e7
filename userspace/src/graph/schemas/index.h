/* SPDX-License-Identifier: MIT */
/* What op_index.c's schemas and kernels share (graph/schemas/index.c). */
#ifndef NPU_SCHEMA_INDEX_H
#define NPU_SCHEMA_INDEX_H

#include "graph/schemas/schema_common.h"

enum npu_scatter_red { SCAT_NONE, SCAT_ADD, SCAT_MUL, SCAT_MAX, SCAT_MIN };

npu_status npu_scatter_reduction(const struct npu_node *node,
				 enum npu_scatter_red *r,
				 struct npu_error *err);

/* Kept slices: the true entries among the first min(len, n) of cond. */
int64_t npu_compress_count(const struct npu_tensor *cond, int64_t n);

bool npu_elem_nonzero(const void *p, enum npu_dtype dt, int64_t i);

int64_t npu_nonzero_count(const struct npu_tensor *x);

#endif /* NPU_SCHEMA_INDEX_H */
