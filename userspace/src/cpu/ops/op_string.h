/* SPDX-License-Identifier: MIT */
/*
 * op_string.h - string tensor helpers other op families use (internal to
 * cpu/ops): the string side of Cast / CastLike and copying string values.
 */
#ifndef NPU_CPU_OP_STRING_H
#define NPU_CPU_OP_STRING_H

#include <stdbool.h>

#include "cpu/ops/cpu_ops.h"

/* Numbers of x (float, double, integers, bool) as text into output 0. */
npu_status npu_op_numbers_to_strings(struct npu_op_ctx *ctx, const struct npu_tensor *x);
/*
 * Input 0 x (string) read as numbers of y's type (float, double, integers,
 * bool) into y; text that is not such a number is an error naming it.
 */
npu_status npu_op_strings_to_numbers(struct npu_op_ctx *ctx, const struct npu_tensor *x,
				     struct npu_tensor *y);
/* Equal (19) on two string tensors, numpy-broadcast: a bool per pair. */
npu_status npu_op_strings_equal(struct npu_op_ctx *ctx);
/* Whether any input or output of the call is a string tensor. */
bool npu_op_has_strings(const struct npu_op_ctx *ctx);
/*
 * Run a data-movement op (one that only copies elements: Reshape,
 * Transpose, Concat, Gather...) on string tensors: 'compute' runs on int64
 * tensors holding each string's index, then every string output gathers
 * the strings its indices name.
 */
npu_status npu_op_strings_by_index(struct npu_op_ctx *ctx,
				   npu_status (*compute)(struct npu_op_ctx *ctx));
/* Input 'in' (string) copied to output 'out' with the same shape. */
npu_status npu_op_strings_copy(struct npu_op_ctx *ctx, size_t in, size_t out);

#endif /* NPU_CPU_OP_STRING_H */
