/* SPDX-License-Identifier: MIT */
/*
 * schema_common.h - helpers the op schemas share (internal to graph/ and
 * the kernels that run its ops).
 *
 * Error messages naming the node, arity / dtype / attribute checks, axis
 * and attribute / constant-input readers, numpy broadcasting and
 * sliding-window shapes.
 */
#ifndef NPU_SCHEMA_COMMON_H
#define NPU_SCHEMA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/npu_op_schema.h"

/* Declares a built-in schema; schema_list.h collects them into the table. */
#define NPU_OP_SCHEMA_DEF(sym) const struct npu_op_schema npu_schema_##sym

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

/* Whether r broadcasts to g (numpy rules, r may not be larger). */
bool npu_op_broadcasts_to(const struct npu_shape *r, const struct npu_shape *g);

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

/*
 * The type a family's kernel computes in: float for float16 / bfloat16
 * and, with 'ints', int64 for signed and uint64 for unsigned integers;
 * every other type is its own.
 */
enum npu_dtype npu_op_wide_dtype(enum npu_dtype dtype, bool ints);

#endif /* NPU_SCHEMA_COMMON_H */
