/* SPDX-License-Identifier: MIT */
/* What op_generate.c's schemas and kernels share (graph/schemas/generate.c). */
#ifndef NPU_SCHEMA_GENERATE_H
#define NPU_SCHEMA_GENERATE_H

#include "graph/schemas/schema_common.h"

int64_t npu_gen_int_get(const struct npu_tensor *t, size_t i);

bool npu_range_is_int(enum npu_dtype dt);

/* max(ceil((limit - start) / delta), 0), in the inputs' type's arithmetic. */
npu_status npu_range_count(const struct npu_node *node,
			   const struct npu_tensor *const *t,
			   int64_t *count, struct npu_error *err);

npu_status npu_onehot_depth(const struct npu_node *node,
			    const struct npu_tensor *t, int64_t *depth,
			    struct npu_error *err);

npu_status npu_window_size(const struct npu_node *node,
			   const struct npu_tensor *t, int64_t *size,
			   struct npu_error *err);

#endif /* NPU_SCHEMA_GENERATE_H */
