/* SPDX-License-Identifier: MIT */
/*
 * npu_alloc.h - tensor memory (internal).
 *
 * Sizes come from model shapes, and a model (or a damaged compiled file)
 * may describe tensors no machine holds. A request larger than the
 * machine's physical memory fails here as out of memory, the way a real
 * shortage does, instead of reaching the allocator (sanitizers abort on
 * sizes past their own limit rather than return NULL).
 */
#ifndef NPU_COMMON_ALLOC_H
#define NPU_COMMON_ALLOC_H

#include <stddef.h>

/* aligned_alloc(64, bytes rounded up to 64), or NULL. */
void *npu_alloc_aligned(size_t bytes);

#endif /* NPU_COMMON_ALLOC_H */
