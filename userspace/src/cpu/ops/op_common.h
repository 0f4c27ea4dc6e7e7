/* SPDX-License-Identifier: MIT */
/*
 * op_common.h - helpers shared by the CPU kernels (internal to cpu/ops).
 *
 * The numpy broadcasting iterator the elementwise kernels are built on,
 * strided copies and type widening; the helpers infer() uses too (errors,
 * attribute and constant-input readers) are graph/schemas/schema_common.h.
 */
#ifndef NPU_CPU_OP_COMMON_H
#define NPU_CPU_OP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/ops/cpu_ops.h"
#include "graph/schemas/schema_common.h"

/* Declares the op's definition; op_list.h collects them into the table. */
#define NPU_CPU_OP_DEF(sym) const struct npu_op_def npu_cpu_op_##sym

/* Input tensor i of a compute call, NULL when absent or omitted. */
const struct npu_tensor *npu_op_in(const struct npu_op_ctx *ctx, size_t i);
struct npu_tensor *npu_op_out(const struct npu_op_ctx *ctx, size_t i);

#define NPU_BCAST_MAX_IN 3

/*
 * Walks the output in rows of 'len' elements; for each row, input k starts
 * at element off[k] and advances by step[k] (0 or 1) per element. Dims are
 * coalesced first so rows are as long as the strides allow.
 */
struct npu_bcast {
	int n_in, rank;
	int64_t dims[NPU_MAX_RANK];
	int64_t strides[NPU_BCAST_MAX_IN][NPU_MAX_RANK];
	int64_t len;		/* elements per row */
	int64_t step[NPU_BCAST_MAX_IN];
	int64_t rows;
};

void npu_bcast_init(struct npu_bcast *bc, const struct npu_shape *out,
		    const struct npu_shape *const *ins, int n_in);
/* Input element offsets of row r (0 <= r < rows). */
void npu_bcast_row(const struct npu_bcast *bc, int64_t r, int64_t *off);

/* y = a broadcast to y's shape (any element type). */
void npu_op_broadcast_copy(const struct npu_tensor *a, struct npu_tensor *y);

/*
 * dst (contiguous, 'dims') = src read with per-dim element strides
 * (negative allowed): the gather behind Slice and Transpose.
 */
void npu_op_strided_copy(void *dst, const void *src, int rank,
			 const int64_t *dims, const int64_t *src_strides,
			 size_t elem_size);

/* Row-major element strides of a shape. */
void npu_op_strides(const struct npu_shape *s, int64_t *strides);

/* ---- type families: one kernel per family ---- */

/* IEEE half and bfloat16 <-> float (op_elementwise.c, Cast's conversions). */
float npu_half_to_float(uint16_t h);
uint16_t npu_float_to_half(float f);		/* round to nearest even */
float npu_bf16_to_float(uint16_t b);
uint16_t npu_float_to_bf16(float f, bool round);	/* round: to nearest even */

/* Does any input or output of ctx need widening? */
bool npu_op_needs_widening(const struct npu_op_ctx *ctx, bool ints);
/*
 * Run 'compute' on widened copies of the tensors that need it, then
 * narrow its outputs back (floats rounded to nearest even, integers
 * wrapping as C conversions do), so a kernel of the wide type serves the
 * whole family: what numpy does for float16 arithmetic. Outputs must be
 * preallocated (no dynamic_outputs).
 */
npu_status npu_op_compute_widened(struct npu_op_ctx *ctx, bool ints,
				  npu_status (*compute)(struct npu_op_ctx *ctx));

#endif /* NPU_CPU_OP_COMMON_H */
