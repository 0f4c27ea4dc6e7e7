/* SPDX-License-Identifier: MIT */
/* What op_sort.c's schemas and kernels share (graph/schemas/sort.c). */
#ifndef NPU_SCHEMA_SORT_H
#define NPU_SCHEMA_SORT_H

#include "graph/schemas/schema_common.h"

/* Calls X(T) in a switch over the numeric dtype dt. */
#define SORT_SWITCH(dt, X)						\
	switch (dt) {							\
	case NPU_DTYPE_FLOAT: X(float); break;				\
	case NPU_DTYPE_DOUBLE: X(double); break;			\
	case NPU_DTYPE_INT8: X(int8_t); break;				\
	case NPU_DTYPE_UINT8: X(uint8_t); break;			\
	case NPU_DTYPE_INT16: X(int16_t); break;			\
	case NPU_DTYPE_UINT16: X(uint16_t); break;			\
	case NPU_DTYPE_INT32: X(int32_t); break;			\
	case NPU_DTYPE_UINT32: X(uint32_t); break;			\
	case NPU_DTYPE_INT64: X(int64_t); break;			\
	case NPU_DTYPE_UINT64: X(uint64_t); break;			\
	default: break;							\
	}

/*
 * Slices along the axis (or single elements without one): slice s is
 * the elements (o, s, k) for o < outer, k < inner.
 */
struct npu_uniq {
	const struct npu_tensor *x;
	int64_t outer, dim, inner;
};

/* Hardmax's axis (default 1 before opset 13, -1 from 13). */
npu_status npu_hardmax_axis(const struct npu_node *node, int rank, int *axis,
			    struct npu_error *err);
/* TopK's K: attribute k before opset 10, else input 1 (kt, or its constant); -1 unknown. */
npu_status npu_topk_k(const struct npu_node *node, const struct npu_tensor *kt,
		      int64_t *k, struct npu_error *err);
/* Runs Unique on x; *n unique slices; the arrays are the caller's to free. */
npu_status npu_uniq_all(const struct npu_node *node, const struct npu_tensor *x,
			struct npu_uniq *u, int *axis, int64_t **first, int64_t **group,
			int64_t **count, int64_t *n, struct npu_error *err);

#endif /* NPU_SCHEMA_SORT_H */
