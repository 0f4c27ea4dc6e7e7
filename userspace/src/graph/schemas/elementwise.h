/* SPDX-License-Identifier: MIT */
/* What op_elementwise.c's schemas and kernels share (graph/schemas/elementwise.c). */
#ifndef NPU_SCHEMA_ELEMENTWISE_H
#define NPU_SCHEMA_ELEMENTWISE_H

#include "graph/schemas/schema_common.h"

enum npu_bin_kind {
	BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW, BIN_MAX, BIN_MIN,
	BIN_SUM, BIN_MEAN, BIN_EQ, BIN_GT, BIN_LT, BIN_GE, BIN_LE,
	BIN_AND, BIN_OR, BIN_XOR, BIN_PRELU,
	BIN_MOD, BIN_FMOD,	/* Mod; fmod = 1 selects BIN_FMOD */
	BIN_SHL, BIN_SHR,	/* BitShift; direction RIGHT selects BIN_SHR */
};

/* The kind an attribute selects (Mod's fmod, BitShift's direction). */
enum npu_bin_kind npu_bin_resolve(const struct npu_node *node, enum npu_bin_kind k);
bool npu_bin_is_variadic(enum npu_bin_kind k);
bool npu_bin_is_bool_out(enum npu_bin_kind k);
/*
 * Before opset 7, B broadcasts to A only with broadcast = 1, aligned at
 * 'axis': B's shape padded with trailing ones so numpy's rules agree.
 */
void npu_bin_legacy_shape(const struct npu_node *node, const struct npu_shape *a,
			  const struct npu_shape *b, struct npu_shape *out);
npu_status npu_bin_infer(struct npu_infer_ctx *ctx, enum npu_bin_kind k);

enum npu_unary_kind {
	UN_SQRT, UN_EXP, UN_LOG, UN_RELU, UN_LEAKY_RELU, UN_SIGMOID, UN_TANH,
	UN_HARD_SIGMOID, UN_HARD_SWISH, UN_ERF, UN_NEG, UN_ABS, UN_RECIPROCAL,
	UN_FLOOR, UN_CEIL, UN_ROUND, UN_SIN, UN_COS, UN_SOFTPLUS,
	UN_SOFTSIGN, UN_ELU, UN_SELU, UN_SIGN, UN_CLIP, UN_NOT,
	UN_THRESHOLDED_RELU, UN_TAN, UN_ASIN, UN_ACOS, UN_ATAN, UN_SINH,
	UN_COSH, UN_ASINH, UN_ACOSH, UN_ATANH, UN_CELU, UN_SHRINK,
	UN_IS_NAN, UN_IS_INF,
};

npu_status npu_unary_infer(struct npu_infer_ctx *ctx, enum npu_unary_kind k,
			   const char *const *attrs);
bool npu_signed_int(enum npu_dtype dt);
/* An integer type (its kernel family: int64 / uint64). */
bool npu_integer(enum npu_dtype dt);

#endif /* NPU_SCHEMA_ELEMENTWISE_H */
