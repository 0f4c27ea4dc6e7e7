/* SPDX-License-Identifier: MIT */
/*
 * op_common.h - helpers shared by the CPU op families (internal to cpu/ops).
 *
 * Error messages, axis / attribute / constant-input readers, and the
 * numpy broadcasting iterator the elementwise ops are built on.
 */
#ifndef NPU_CPU_OP_COMMON_H
#define NPU_CPU_OP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/ops/cpu_ops.h"

/* Declares the op's definition; op_list.h collects them into the table. */
#define NPU_CPU_OP_DEF(sym) const struct npu_op_def npu_cpu_op_##sym

/* "<Op> node '<name>': <message>" with status; returns status. */
npu_status npu_op_error(struct npu_error *err, const struct npu_node *node,
			npu_status status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define npu_op_unsupported(err, node, ...) \
	npu_op_error(err, node, NPU_ERR_UNSUPPORTED, __VA_ARGS__)
#define npu_op_invalid(err, node, ...) \
	npu_op_error(err, node, NPU_ERR_INVALID_ARG, __VA_ARGS__)

/* Input / output value i of the node, NULL when absent or omitted. */
const struct npu_value *npu_op_input(const struct npu_node *node, size_t i);
/* Input tensor i of a compute call, NULL when absent or omitted. */
const struct npu_tensor *npu_op_in(const struct npu_op_ctx *ctx, size_t i);
struct npu_tensor *npu_op_out(const struct npu_op_ctx *ctx, size_t i);

/* Checks num_inputs in [min, max] and that inputs [0, min) are present. */
npu_status npu_op_check_arity(const struct npu_infer_ctx *ctx, size_t min,
			      size_t max);
/* Rejects input i unless its dtype is one of 'allowed' (0-terminated). */
npu_status npu_op_check_dtype(const struct npu_infer_ctx *ctx, size_t i,
			      const enum npu_dtype *allowed);
/* Rejects the attribute when present: "attribute 'x' is not supported". */
npu_status npu_op_reject_attr(const struct npu_infer_ctx *ctx,
			      const char *name);

/*
 * Rejects any attribute not named in 'known' (NULL-terminated), so a newer
 * opset's attribute is never silently ignored.
 */
npu_status npu_op_check_attrs(const struct npu_infer_ctx *ctx,
			      const char *const *known);
#define NPU_OP_ATTRS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Normalizes axis into [0, rank) ('rank + 1' for Unsqueeze-like ops). */
npu_status npu_op_axis(struct npu_error *err, const struct npu_node *node,
		       const char *what, int64_t axis, int rank, int *out);

/*
 * Reads an int attribute list or a constant int32/int64 input into vals
 * (at most max). *count = -1: not known at infer time (non-constant).
 */
npu_status npu_op_ints_from_attr(const struct npu_node *node, const char *name,
				 int64_t *vals, int max, int *count,
				 struct npu_error *err);
npu_status npu_op_ints_from_value(const struct npu_node *node, size_t i,
				  int64_t *vals, int max, int *count,
				  struct npu_error *err);
/* The same from a compute-time tensor. */
npu_status npu_op_ints_from_tensor(const struct npu_node *node,
				   const struct npu_tensor *t, const char *what,
				   int64_t *vals, int max, int *count,
				   struct npu_error *err);
/* Reads element i of a float / int tensor as double. */
double npu_op_tensor_get(const struct npu_tensor *t, size_t i);
/* Element i of an int32/int64 tensor. */
int64_t npu_op_index_get(const struct npu_tensor *t, size_t i);

int64_t npu_op_numel(const struct npu_tensor *t);
bool npu_op_shape_known(const struct npu_shape *s);
/* Product of dims [from, to); -1 if any unknown. */
int64_t npu_op_dims_prod(const struct npu_shape *s, int from, int to);

/* ---- numpy broadcasting ---- */

/* Output shape of broadcasting a with b; unknown dims propagate. */
npu_status npu_op_broadcast_shape(const struct npu_infer_ctx *ctx,
				  const struct npu_shape *a,
				  const struct npu_shape *b,
				  struct npu_shape *out);

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

/* ---- sliding windows (Conv, pooling) ---- */

#define NPU_WIN_MAX 3

struct npu_window {
	int n;				/* spatial dims */
	int64_t in[NPU_WIN_MAX], k[NPU_WIN_MAX], stride[NPU_WIN_MAX];
	int64_t dil[NPU_WIN_MAX], pad_begin[NPU_WIN_MAX], pad_end[NPU_WIN_MAX];
	int64_t out[NPU_WIN_MAX];	/* -1 when the input dim is unknown */
};

/*
 * Window geometry from strides / dilations / pads / auto_pad of the node
 * over the spatial dims of x (NC + n dims) with kernel k[]. ceil_mode
 * rounds the output size up (pooling) but never starts a window in the
 * end padding.
 */
npu_status npu_op_window(const struct npu_node *node, const struct npu_shape *x,
			 const int64_t *k, int n, bool ceil_mode,
			 struct npu_window *w, struct npu_error *err);

/* ---- type families: one kernel per family ---- */

/* IEEE half and bfloat16 <-> float (op_elementwise.c, Cast's conversions). */
float npu_half_to_float(uint16_t h);
uint16_t npu_float_to_half(float f);		/* round to nearest even */
float npu_bf16_to_float(uint16_t b);
uint16_t npu_float_to_bf16(float f, bool round);	/* round: to nearest even */

/*
 * The type a family's kernel computes in: float for float16 / bfloat16
 * and, with 'ints', int64 for signed and uint64 for unsigned integers;
 * every other type is its own.
 */
enum npu_dtype npu_op_wide_dtype(enum npu_dtype dtype, bool ints);
/* Does any input or output of ctx need widening? */
bool npu_op_needs_widening(const struct npu_op_ctx *ctx, bool ints);
/*
 * Run 'compute' on widened copies of the tensors that need it, then
 * narrow its outputs back (floats rounded to nearest even, integers
 * wrapping as C conversions do), so a kernel of the wide type serves the
 * whole family: what numpy does for float16 arithmetic. Outputs must be
 * preallocated (no alloc_outputs).
 */
npu_status npu_op_compute_widened(struct npu_op_ctx *ctx, bool ints,
				  npu_status (*compute)(struct npu_op_ctx *ctx));

#endif /* NPU_CPU_OP_COMMON_H */
