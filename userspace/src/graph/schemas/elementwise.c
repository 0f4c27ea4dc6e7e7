// SPDX-License-Identifier: MIT
/*
 * The schemas of op_elementwise.c's ops: the binary (numpy-broadcast)
 * and unary families, Where, Clip, Identity, Cast and CastLike.
 */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/elementwise.h"
#include "graph/schemas/string.h"

#include <string.h>

/*
 * The element types the binary kernels have, per kind (the same sets as
 * the row kernels in cpu/ops/op_elementwise.c): infer() rejects the rest.
 */
static bool npu_arith_type(enum npu_dtype dt)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: case NPU_DTYPE_DOUBLE:
	case NPU_DTYPE_INT8: case NPU_DTYPE_UINT8: case NPU_DTYPE_INT16:
	case NPU_DTYPE_UINT16: case NPU_DTYPE_INT32: case NPU_DTYPE_UINT32:
	case NPU_DTYPE_INT64: case NPU_DTYPE_UINT64:
		return true;
	default:
		return false;
	}
}

static bool npu_uint_type(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_UINT8 || dt == NPU_DTYPE_UINT16 ||
	       dt == NPU_DTYPE_UINT32 || dt == NPU_DTYPE_UINT64;
}

static bool npu_sint_type(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_INT8 || dt == NPU_DTYPE_INT16 ||
	       dt == NPU_DTYPE_INT32 || dt == NPU_DTYPE_INT64;
}

static bool npu_bin_type_ok(enum npu_bin_kind k, enum npu_dtype dt)
{
	switch (k) {
	case BIN_ADD: case BIN_SUM: case BIN_SUB: case BIN_MUL: case BIN_DIV:
	case BIN_MAX: case BIN_MIN: case BIN_GT: case BIN_LT: case BIN_GE:
	case BIN_LE:
		return npu_arith_type(dt);
	case BIN_MEAN: return dt == NPU_DTYPE_FLOAT || dt == NPU_DTYPE_DOUBLE;
	case BIN_EQ: return dt == NPU_DTYPE_BOOL || npu_arith_type(dt);
	case BIN_AND: case BIN_OR: case BIN_XOR: return dt == NPU_DTYPE_BOOL;
	case BIN_PRELU: case BIN_POW: return dt == NPU_DTYPE_FLOAT;
	case BIN_MOD: return npu_sint_type(dt) || npu_uint_type(dt);
	case BIN_FMOD:
		return npu_sint_type(dt) || npu_uint_type(dt) ||
		       dt == NPU_DTYPE_FLOAT || dt == NPU_DTYPE_DOUBLE;
	case BIN_SHL: case BIN_SHR: return npu_uint_type(dt);
	}
	return false;
}

/* The kind an attribute selects (Mod's fmod, BitShift's direction). */
enum npu_bin_kind npu_bin_resolve(const struct npu_node *node,
				  enum npu_bin_kind k)
{
	if (k == BIN_MOD && npu_node_attr_int_or(node, "fmod", 0))
		return BIN_FMOD;
	if (k == BIN_SHL &&
	    !strcmp(npu_node_attr_string_or(node, "direction", ""), "RIGHT"))
		return BIN_SHR;
	return k;
}

bool npu_bin_is_variadic(enum npu_bin_kind k)
{
	return k == BIN_MAX || k == BIN_MIN || k == BIN_SUM || k == BIN_MEAN;
}

bool npu_bin_is_bool_out(enum npu_bin_kind k)
{
	return k >= BIN_EQ && k <= BIN_XOR;
}

/* Pow with mixed base / exponent types: the exponent goes through double. */
static bool npu_pow_type_ok(enum npu_dtype dt)
{
	switch (dt) {
	case NPU_DTYPE_FLOAT: case NPU_DTYPE_DOUBLE: case NPU_DTYPE_INT32:
	case NPU_DTYPE_INT64: case NPU_DTYPE_UINT32: case NPU_DTYPE_UINT64:
	case NPU_DTYPE_INT8: case NPU_DTYPE_UINT8: case NPU_DTYPE_INT16:
	case NPU_DTYPE_UINT16:
	case NPU_DTYPE_FLOAT16: case NPU_DTYPE_BFLOAT16:	/* widened to float */
		return true;
	default:
		return false;
	}
}

/*
 * Before opset 7, B broadcasts to A only with broadcast = 1, aligned at
 * 'axis' (default: the trailing dims): pad B with trailing ones so the
 * numpy rules give the same result.
 */
void npu_bin_legacy_shape(const struct npu_node *node,
			  const struct npu_shape *a,
			  const struct npu_shape *b,
			  struct npu_shape *out)
{
	int64_t axis;
	int i;

	*out = *b;
	/* PRelu-6: a 1-D slope is per channel (axis 1). */
	if (node->opset < 7 && !strcmp(node->op_type, "PRelu") &&
	    b->rank == 1 && a->rank >= 2 && b->dims[0] == a->dims[1] &&
	    b->dims[0] != 1) {
		for (i = 1; i < a->rank - 1; i++)
			out->dims[i] = 1;
		out->rank = a->rank - 1;
		return;
	}
	if (node->opset >= 7 || !npu_node_attr_int_or(node, "broadcast", 0) ||
	    !npu_node_attr(node, "axis"))
		return;
	axis = npu_node_attr_int_or(node, "axis", 0);
	if (axis < 0)
		axis += a->rank;
	if (axis < 0 || axis + b->rank > a->rank)
		return;
	for (i = b->rank; i < a->rank - axis; i++)
		out->dims[i] = 1;
	out->rank = (int)(a->rank - axis);
}

npu_status npu_bin_infer(struct npu_infer_ctx *ctx, enum npu_bin_kind k)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *a;
	struct npu_shape shape;
	size_t i, n_max = npu_bin_is_variadic(k) ? 64 : 2;
	npu_status st;

	st = npu_op_check_arity(ctx, npu_bin_is_variadic(k) ? 1 : 2, n_max);
	if (st)
		return st;
	if (k == BIN_MOD)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("fmod"));
	else if (k == BIN_SHL)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("direction"));
	else
		st = node->opset < 7 && !npu_bin_is_variadic(k) ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("broadcast", "axis")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	a = node->inputs[0];
	if (k == BIN_SHL) {
		const char *dir = npu_node_attr_string_or(node, "direction", "");

		if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
			return npu_op_invalid(ctx->err, node,
					      "attribute 'direction' = '%s' is not LEFT or RIGHT",
					      dir);
	}
	if (k == BIN_MOD && !npu_node_attr_int_or(node, "fmod", 0) &&
	    (a->dtype == NPU_DTYPE_FLOAT || a->dtype == NPU_DTYPE_DOUBLE ||
	     a->dtype == NPU_DTYPE_FLOAT16 || a->dtype == NPU_DTYPE_BFLOAT16))
		return npu_op_invalid(ctx->err, node,
				      "attribute 'fmod' must be 1 for %s inputs",
				      npu_dtype_name(a->dtype));
	k = npu_bin_resolve(node, k);
	if (k == BIN_POW) {
		for (i = 0; i < 2; i++)
			if (!npu_pow_type_ok(node->inputs[i]->dtype))
				return npu_op_unsupported(ctx->err, node,
							  "input %zu has type %s, not supported",
							  i, npu_dtype_name(node->inputs[i]->dtype));
	} else if (!npu_bin_type_ok(k, npu_op_wide_dtype(a->dtype, false))) {
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  a->name, npu_dtype_name(a->dtype));
	}
	shape = a->shape;
	for (i = 1; i < node->num_inputs; i++) {
		const struct npu_value *b = node->inputs[i];
		struct npu_shape bs;

		if (!b)
			return npu_op_invalid(ctx->err, node,
					      "input %zu is missing", i);
		if (k != BIN_POW && b->dtype != a->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input %zu has type %s, input 0 %s",
					      i, npu_dtype_name(b->dtype),
					      npu_dtype_name(a->dtype));
		npu_bin_legacy_shape(node, &a->shape, &b->shape, &bs);
		st = npu_op_broadcast_shape(ctx, &shape, &bs, &shape);
		if (st)
			return st;
	}
	if (k == BIN_PRELU && shape.rank != a->shape.rank)
		return npu_op_invalid(ctx->err, node,
				      "slope does not broadcast to X");
	ctx->out_dtypes[0] = npu_bin_is_bool_out(k) ? NPU_DTYPE_BOOL : a->dtype;
	ctx->out_shapes[0] = shape;
	return NPU_OK;
}

/* Equal also compares strings (opset 19), in op_string.c. */
static npu_status equal_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;

	if (node->num_inputs < 1 || !node->inputs[0] || node->inputs[0]->dtype != NPU_DTYPE_STRING)
		return npu_bin_infer(ctx, BIN_EQ);
	if (node->opset < 19)
		return npu_op_unsupported(ctx->err, node,
					  "string inputs need opset 19, the model imports opset %d",
					  node->opset);
	return npu_op_strings_equal_infer(ctx);
}

static npu_status where_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	struct npu_shape shape;
	size_t es;
	npu_status st;

	st = npu_op_check_arity(ctx, 3, 3);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	if (node->inputs[0]->dtype != NPU_DTYPE_BOOL)
		return npu_op_invalid(ctx->err, node,
				      "condition has type %s, expected bool",
				      npu_dtype_name(node->inputs[0]->dtype));
	if (node->inputs[1]->dtype != node->inputs[2]->dtype)
		return npu_op_invalid(ctx->err, node,
				      "X and Y types differ (%s, %s)",
				      npu_dtype_name(node->inputs[1]->dtype),
				      npu_dtype_name(node->inputs[2]->dtype));
	es = npu_dtype_size(node->inputs[1]->dtype);
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return npu_op_unsupported(ctx->err, node,
					  "X has type %s, not supported",
					  npu_dtype_name(node->inputs[1]->dtype));
	st = npu_op_broadcast_shape(ctx, &node->inputs[0]->shape,
				    &node->inputs[1]->shape, &shape);
	if (!st)
		st = npu_op_broadcast_shape(ctx, &shape,
					    &node->inputs[2]->shape, &shape);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[1]->dtype;
	ctx->out_shapes[0] = shape;
	return NPU_OK;
}

bool npu_signed_int(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_INT8 || dt == NPU_DTYPE_INT16 ||
	       dt == NPU_DTYPE_INT32 || dt == NPU_DTYPE_INT64;
}

bool npu_integer(enum npu_dtype dt)
{
	enum npu_dtype w = npu_op_wide_dtype(dt, true);

	return w == NPU_DTYPE_INT64 || w == NPU_DTYPE_UINT64;
}

npu_status npu_unary_infer(struct npu_infer_ctx *ctx,
			   enum npu_unary_kind k,
			   const char *const *attrs)
{
	const struct npu_value *x;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, attrs);
	if (st)
		return st;
	x = ctx->node->inputs[0];
	/* float16 / bfloat16 run the float kernel (npu_op_compute_widened). */
	if (k == UN_NOT ? x->dtype != NPU_DTYPE_BOOL :
	    (npu_op_wide_dtype(x->dtype, false) != NPU_DTYPE_FLOAT &&
	     x->dtype != NPU_DTYPE_DOUBLE &&
	     !((k == UN_NEG || k == UN_ABS || k == UN_RELU || k == UN_SIGN) &&
	       npu_signed_int(x->dtype)) &&
	     !(k == UN_SIGN && npu_integer(x->dtype)) &&
	     !(k == UN_ABS && npu_op_wide_dtype(x->dtype, true) == NPU_DTYPE_UINT64)))
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input 0 '%s' has type %s, not supported",
					  x->name, npu_dtype_name(x->dtype));
	ctx->out_dtypes[0] = k == UN_IS_NAN || k == UN_IS_INF ? NPU_DTYPE_BOOL
							   : x->dtype;
	ctx->out_shapes[0] = x->shape;
	return NPU_OK;
}

static npu_status clip_infer(struct npu_infer_ctx *ctx)
{
	/* int16 / uint16 / uint32 and float16 / bfloat16 are widened (clip_compute). */
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_INT8, NPU_DTYPE_UINT8,
		NPU_DTYPE_INT16, NPU_DTYPE_UINT16, NPU_DTYPE_INT32, NPU_DTYPE_UINT32,
		NPU_DTYPE_INT64, NPU_DTYPE_UINT64, NPU_DTYPE_FLOAT16, NPU_DTYPE_BFLOAT16,
		NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, node->opset < 11 ? 1 : 3);
	if (!st)
		st = node->opset < 11 ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("min", "max")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (st)
		return st;
	if (node->opset < 11 && node->inputs[0]->dtype != NPU_DTYPE_FLOAT)
		return npu_op_unsupported(ctx->err, node,
					  "input 0 type %s before opset 11",
					  npu_dtype_name(node->inputs[0]->dtype));
	for (i = 1; i < node->num_inputs; i++) {
		const struct npu_value *v = node->inputs[i];

		if (v && (v->dtype != node->inputs[0]->dtype ||
			  npu_shape_numel(&v->shape) > 1))
			return npu_op_invalid(ctx->err, node,
					      "input %zu must be a scalar of the input's type",
					      i);
	}
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	return NPU_OK;
}

static npu_status identity_infer(struct npu_infer_ctx *ctx)
{
	npu_status st = npu_op_check_arity(ctx, 1, 1);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	if (!npu_dtype_size(ctx->node->inputs[0]->dtype) &&
	    ctx->node->inputs[0]->dtype != NPU_DTYPE_STRING)
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input 0 has type %s, not supported",
					  npu_dtype_name(ctx->node->inputs[0]->dtype));
	ctx->out_dtypes[0] = ctx->node->inputs[0]->dtype;
	ctx->out_shapes[0] = ctx->node->inputs[0]->shape;
	return NPU_OK;
}

static bool npu_cast_type_ok(enum npu_dtype dt)
{
	switch (dt) {
	case NPU_DTYPE_BFLOAT16:
	case NPU_DTYPE_FLOAT: case NPU_DTYPE_DOUBLE: case NPU_DTYPE_FLOAT16:
	case NPU_DTYPE_INT8: case NPU_DTYPE_UINT8: case NPU_DTYPE_INT16:
	case NPU_DTYPE_UINT16: case NPU_DTYPE_INT32: case NPU_DTYPE_UINT32:
	case NPU_DTYPE_INT64: case NPU_DTYPE_UINT64: case NPU_DTYPE_BOOL:
	case NPU_DTYPE_STRING:	/* op_string.c */
		return true;
	default:
		return false;
	}
}

static npu_status cast_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_attr *to = npu_node_attr(node, "to");
	enum npu_dtype src;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("to", "saturate"));
	if (st)
		return st;
	if (!to || to->type != NPU_ATTR_INT)
		return npu_op_invalid(ctx->err, node,
				      "attribute 'to' is missing or not an int");
	src = node->inputs[0]->dtype;
	if (!npu_cast_type_ok(src))
		return npu_op_unsupported(ctx->err, node,
					  "input type %s is not supported",
					  npu_dtype_name(src));
	if (!npu_cast_type_ok((enum npu_dtype)to->i))
		return npu_op_unsupported(ctx->err, node,
					  "attribute 'to' = %lld (%s) is not supported",
					  (long long)to->i,
					  npu_dtype_name((enum npu_dtype)to->i));
	ctx->out_dtypes[0] = (enum npu_dtype)to->i;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	return NPU_OK;
}

/* CastLike (15): Cast to the type of input 1 (whose values are unused). */
static npu_status cast_like_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	enum npu_dtype src, dst;
	npu_status st;

	st = npu_op_check_arity(ctx, 2, 2);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("saturate"));
	if (st)
		return st;
	src = node->inputs[0]->dtype;
	dst = node->inputs[1]->dtype;
	if (!npu_cast_type_ok(src))
		return npu_op_unsupported(ctx->err, node,
					  "input 0 '%s' has type %s, not supported",
					  node->inputs[0]->name, npu_dtype_name(src));
	if (!npu_cast_type_ok(dst))
		return npu_op_unsupported(ctx->err, node,
					  "input 1 '%s' has type %s, not supported",
					  node->inputs[1]->name, npu_dtype_name(dst));
	ctx->out_dtypes[0] = dst;
	ctx->out_shapes[0] = node->inputs[0]->shape;
	return NPU_OK;
}


NPU_OP_SCHEMA_DEF(equal) = {
	.op_type = "Equal", .domain = "",
	.since_version = 7, .max_version = 21,
	.infer = equal_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(where) = {
	.op_type = "Where", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = where_infer,
};

NPU_OP_SCHEMA_DEF(clip) = {
	.op_type = "Clip", .domain = "",
	.since_version = 6, .max_version = 21,
	.infer = clip_infer,
};

NPU_OP_SCHEMA_DEF(identity) = {
	.op_type = "Identity", .domain = "",
	.since_version = 1, .max_version = 21,
	.infer = identity_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(cast) = {
	.op_type = "Cast", .domain = "",
	.since_version = 6, .max_version = 21,
	.infer = cast_infer,
	.strings = true,
};

NPU_OP_SCHEMA_DEF(cast_like) = {
	.op_type = "CastLike", .domain = "",
	.since_version = 15, .max_version = 21,
	.infer = cast_like_infer,
	.strings = true,
};

#define UNARY_SCHEMA(sym, name, kind, since, ...)			\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return npu_unary_infer(ctx, kind, NPU_OP_ATTRS(__VA_ARGS__));	\
}									\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = "",					\
	.since_version = since, .max_version = 21,			\
	.infer = sym##_infer,						\
};

UNARY_SCHEMA(sqrt, "Sqrt", UN_SQRT, 6, NULL)
UNARY_SCHEMA(exp, "Exp", UN_EXP, 6, NULL)
UNARY_SCHEMA(log, "Log", UN_LOG, 6, NULL)
UNARY_SCHEMA(relu, "Relu", UN_RELU, 6, NULL)
UNARY_SCHEMA(leaky_relu, "LeakyRelu", UN_LEAKY_RELU, 6, "alpha")
UNARY_SCHEMA(thresholded_relu, "ThresholdedRelu", UN_THRESHOLDED_RELU, 10, "alpha")
UNARY_SCHEMA(sigmoid, "Sigmoid", UN_SIGMOID, 6, NULL)
UNARY_SCHEMA(tanh, "Tanh", UN_TANH, 6, NULL)
UNARY_SCHEMA(hard_sigmoid, "HardSigmoid", UN_HARD_SIGMOID, 6, "alpha", "beta")
UNARY_SCHEMA(hard_swish, "HardSwish", UN_HARD_SWISH, 14, NULL)
UNARY_SCHEMA(erf, "Erf", UN_ERF, 9, NULL)
UNARY_SCHEMA(neg, "Neg", UN_NEG, 6, NULL)
UNARY_SCHEMA(abs, "Abs", UN_ABS, 6, NULL)
UNARY_SCHEMA(reciprocal, "Reciprocal", UN_RECIPROCAL, 6, NULL)
UNARY_SCHEMA(floor, "Floor", UN_FLOOR, 6, NULL)
UNARY_SCHEMA(ceil, "Ceil", UN_CEIL, 6, NULL)
UNARY_SCHEMA(round, "Round", UN_ROUND, 11, NULL)
UNARY_SCHEMA(sin, "Sin", UN_SIN, 7, NULL)
UNARY_SCHEMA(cos, "Cos", UN_COS, 7, NULL)
UNARY_SCHEMA(softplus, "Softplus", UN_SOFTPLUS, 1, NULL)
UNARY_SCHEMA(softsign, "Softsign", UN_SOFTSIGN, 1, NULL)
UNARY_SCHEMA(elu, "Elu", UN_ELU, 6, "alpha")
UNARY_SCHEMA(selu, "Selu", UN_SELU, 6, "alpha", "gamma")
UNARY_SCHEMA(sign, "Sign", UN_SIGN, 9, NULL)
UNARY_SCHEMA(not, "Not", UN_NOT, 1, NULL)
UNARY_SCHEMA(tan, "Tan", UN_TAN, 7, NULL)
UNARY_SCHEMA(asin, "Asin", UN_ASIN, 7, NULL)
UNARY_SCHEMA(acos, "Acos", UN_ACOS, 7, NULL)
UNARY_SCHEMA(atan, "Atan", UN_ATAN, 7, NULL)
UNARY_SCHEMA(sinh, "Sinh", UN_SINH, 9, NULL)
UNARY_SCHEMA(cosh, "Cosh", UN_COSH, 9, NULL)
UNARY_SCHEMA(asinh, "Asinh", UN_ASINH, 9, NULL)
UNARY_SCHEMA(acosh, "Acosh", UN_ACOSH, 9, NULL)
UNARY_SCHEMA(atanh, "Atanh", UN_ATANH, 9, NULL)
UNARY_SCHEMA(celu, "Celu", UN_CELU, 12, "alpha")
UNARY_SCHEMA(shrink, "Shrink", UN_SHRINK, 9, "lambd", "bias")
UNARY_SCHEMA(is_nan, "IsNaN", UN_IS_NAN, 9, NULL)
UNARY_SCHEMA(is_inf, "IsInf", UN_IS_INF, 10, "detect_negative", "detect_positive")

#define BIN_SCHEMA(sym, name, kind, since)				\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return npu_bin_infer(ctx, kind);				\
}									\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = "",					\
	.since_version = since, .max_version = 21,			\
	.infer = sym##_infer,						\
};

BIN_SCHEMA(add, "Add", BIN_ADD, 6)
BIN_SCHEMA(sub, "Sub", BIN_SUB, 6)
BIN_SCHEMA(mul, "Mul", BIN_MUL, 6)
BIN_SCHEMA(div, "Div", BIN_DIV, 6)
BIN_SCHEMA(pow, "Pow", BIN_POW, 1)
BIN_SCHEMA(max, "Max", BIN_MAX, 6)
BIN_SCHEMA(min, "Min", BIN_MIN, 6)
BIN_SCHEMA(sum, "Sum", BIN_SUM, 6)
BIN_SCHEMA(mean, "Mean", BIN_MEAN, 6)
BIN_SCHEMA(greater, "Greater", BIN_GT, 7)
BIN_SCHEMA(less, "Less", BIN_LT, 7)
BIN_SCHEMA(greater_or_equal, "GreaterOrEqual", BIN_GE, 12)
BIN_SCHEMA(less_or_equal, "LessOrEqual", BIN_LE, 12)
BIN_SCHEMA(and, "And", BIN_AND, 7)
BIN_SCHEMA(or, "Or", BIN_OR, 7)
BIN_SCHEMA(xor, "Xor", BIN_XOR, 7)
BIN_SCHEMA(prelu, "PRelu", BIN_PRELU, 6)
BIN_SCHEMA(mod, "Mod", BIN_MOD, 10)
BIN_SCHEMA(bit_shift, "BitShift", BIN_SHL, 11)
