// SPDX-License-Identifier: MIT
/*
 * Elementwise ops: binary arithmetic / comparison / logic with numpy
 * broadcasting (Add Sub Mul Div Pow Max Min Sum Mean Equal Greater Less
 * GreaterOrEqual LessOrEqual And Or Xor Where PRelu), unary math and
 * activations, Cast and Identity.
 *
 * Binary ops run row by row (npu_bcast): one typed loop per (op, dtype),
 * picked once per row, with contiguous / scalar-operand variants the
 * compiler vectorizes.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "cpu/ops/op_string.h"
#include "graph/schemas/elementwise.h"

/* ---- binary row kernels ---- */

/* y[i] = f(a[i * sa], b[i * sb]) for i < n, sa / sb in {0, 1}. */
typedef void (*npu_bin_row_fn)(const void *a, const void *b, void *y,
			       int64_t n, int64_t sa, int64_t sb);

#define BIN_ROW(name, T, TO, EXPR)					\
static void name(const void *pa, const void *pb, void *py, int64_t n,	\
		 int64_t sa, int64_t sb)				\
{									\
	const T *restrict av = pa;					\
	const T *restrict bv = pb;					\
	TO *yv = py;							\
	int64_t i;							\
									\
	if (sa && sb) {							\
		for (i = 0; i < n; i++) {				\
			T a = av[i], b = bv[i];				\
			yv[i] = (TO)(EXPR);				\
		}							\
	} else if (sa) {						\
		T b = bv[0];						\
		for (i = 0; i < n; i++) {				\
			T a = av[i];					\
			yv[i] = (TO)(EXPR);				\
		}							\
	} else if (sb) {						\
		T a = av[0];						\
		for (i = 0; i < n; i++) {				\
			T b = bv[i];					\
			yv[i] = (TO)(EXPR);				\
		}							\
	} else {							\
		T a = av[0], b = bv[0];					\
		TO v = (TO)(EXPR);					\
		for (i = 0; i < n; i++)					\
			yv[i] = v;					\
	}								\
}

/* The arithmetic element types; 'F' marks floating point. */
#define ARITH_TYPES(X, OP, TOF, EXPR, IEXPR)			\
	X(OP, f32, float, TOF(float), FLOAT, EXPR)		\
	X(OP, f64, double, TOF(double), DOUBLE, EXPR)		\
	X(OP, i8, int8_t, TOF(int8_t), INT8, IEXPR)		\
	X(OP, u8, uint8_t, TOF(uint8_t), UINT8, IEXPR)		\
	X(OP, i16, int16_t, TOF(int16_t), INT16, IEXPR)		\
	X(OP, u16, uint16_t, TOF(uint16_t), UINT16, IEXPR)	\
	X(OP, i32, int32_t, TOF(int32_t), INT32, IEXPR)		\
	X(OP, u32, uint32_t, TOF(uint32_t), UINT32, IEXPR)	\
	X(OP, i64, int64_t, TOF(int64_t), INT64, IEXPR)		\
	X(OP, u64, uint64_t, TOF(uint64_t), UINT64, IEXPR)

#define SAME_T(T) T
#define BOOL_T(T) uint8_t

#define DEF_ROW(OP, suf, T, TO, DT, EXPR) BIN_ROW(OP##_##suf, T, TO, EXPR)
#define CASE_ROW(OP, suf, T, TO, DT, EXPR) case NPU_DTYPE_##DT: return OP##_##suf;

/* Defines OP_<type> row kernels and OP_fn(dtype) for every arithmetic type. */
#define BIN_OP_ALL(OP, TOF, EXPR, IEXPR)				\
	ARITH_TYPES(DEF_ROW, OP, TOF, EXPR, IEXPR)			\
	static npu_bin_row_fn OP##_fn(enum npu_dtype dt)		\
	{								\
		switch (dt) {						\
		ARITH_TYPES(CASE_ROW, OP, TOF, EXPR, IEXPR)		\
		default: return NULL;					\
		}							\
	}

BIN_OP_ALL(add, SAME_T, a + b, a + b)
BIN_OP_ALL(sub, SAME_T, a - b, a - b)
BIN_OP_ALL(mul, SAME_T, a * b, a * b)
/* Integer division by zero yields 0 instead of trapping. */
BIN_OP_ALL(div, SAME_T, a / b, b ? a / b : 0)
BIN_OP_ALL(max, SAME_T, (a > b || a != a) ? a : b, a > b ? a : b)
BIN_OP_ALL(min, SAME_T, (a < b || a != a) ? a : b, a < b ? a : b)
BIN_OP_ALL(eq, BOOL_T, a == b, a == b)
BIN_OP_ALL(gt, BOOL_T, a > b, a > b)
BIN_OP_ALL(lt, BOOL_T, a < b, a < b)
BIN_OP_ALL(ge, BOOL_T, a >= b, a >= b)
BIN_OP_ALL(le, BOOL_T, a <= b, a <= b)
BIN_ROW(prelu_f32, float, float, a < 0 ? a * b : a)
BIN_ROW(pow_f32, float, float, powf(a, b))
BIN_ROW(and_b, uint8_t, uint8_t, (a != 0) & (b != 0))
BIN_ROW(or_b, uint8_t, uint8_t, (a != 0) | (b != 0))
BIN_ROW(xor_b, uint8_t, uint8_t, (a != 0) ^ (b != 0))
BIN_ROW(eq_b, uint8_t, uint8_t, (a != 0) == (b != 0))

/*
 * Mod: integer mod takes the divisor's sign (Python's %); fmod = 1 the
 * dividend's (C's %, fmod()). x % 0 is 0, and x % -1 is 0 without the
 * INT64_MIN / -1 trap.
 */
static inline int64_t npu_mod_int(int64_t a, int64_t b)
{
	int64_t r;

	if (b == 0 || b == -1)
		return 0;
	r = a % b;
	return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

static inline int64_t npu_fmod_int(int64_t a, int64_t b)
{
	return b == 0 || b == -1 ? 0 : a % b;
}

static inline uint64_t npu_mod_uint(uint64_t a, uint64_t b)
{
	return b ? a % b : 0;
}

/* Shifts by the type's width or more give 0 (C leaves them undefined). */
#define SHIFT_EXPR(a, b, op)						\
	((uint64_t)(b) >= sizeof(a) * 8 ? 0 : (uint64_t)(a) op (b))

#define SINT_TYPES(X, OP, EXPR)					\
	X(OP, i8, int8_t, INT8, EXPR)				\
	X(OP, i16, int16_t, INT16, EXPR)			\
	X(OP, i32, int32_t, INT32, EXPR)			\
	X(OP, i64, int64_t, INT64, EXPR)
#define UINT_TYPES(X, OP, EXPR)					\
	X(OP, u8, uint8_t, UINT8, EXPR)				\
	X(OP, u16, uint16_t, UINT16, EXPR)			\
	X(OP, u32, uint32_t, UINT32, EXPR)			\
	X(OP, u64, uint64_t, UINT64, EXPR)
#define DEF_INT_ROW(OP, suf, T, DT, EXPR) BIN_ROW(OP##_##suf, T, T, EXPR)
#define CASE_INT_ROW(OP, suf, T, DT, EXPR) case NPU_DTYPE_##DT: return OP##_##suf;

SINT_TYPES(DEF_INT_ROW, mod, npu_mod_int(a, b))
UINT_TYPES(DEF_INT_ROW, mod, npu_mod_uint(a, b))
SINT_TYPES(DEF_INT_ROW, fmod, npu_fmod_int(a, b))
UINT_TYPES(DEF_INT_ROW, shl, SHIFT_EXPR(a, b, <<))
UINT_TYPES(DEF_INT_ROW, shr, SHIFT_EXPR(a, b, >>))
BIN_ROW(fmod_f32, float, float, fmodf(a, b))
BIN_ROW(fmod_f64, double, double, fmod(a, b))

static npu_bin_row_fn mod_fn(enum npu_dtype dt)
{
	switch (dt) {
	SINT_TYPES(CASE_INT_ROW, mod, _)
	UINT_TYPES(CASE_INT_ROW, mod, _)
	default: return NULL;
	}
}

static npu_bin_row_fn fmod_fn(enum npu_dtype dt)
{
	switch (dt) {
	SINT_TYPES(CASE_INT_ROW, fmod, _)
	UINT_TYPES(CASE_INT_ROW, mod, _)	/* same for unsigned */
	case NPU_DTYPE_FLOAT: return fmod_f32;
	case NPU_DTYPE_DOUBLE: return fmod_f64;
	default: return NULL;
	}
}

static npu_bin_row_fn shl_fn(enum npu_dtype dt)
{
	switch (dt) {
	UINT_TYPES(CASE_INT_ROW, shl, _)
	default: return NULL;
	}
}

static npu_bin_row_fn shr_fn(enum npu_dtype dt)
{
	switch (dt) {
	UINT_TYPES(CASE_INT_ROW, shr, _)
	default: return NULL;
	}
}


static npu_bin_row_fn npu_bin_fn(enum npu_bin_kind k, enum npu_dtype dt)
{
	switch (k) {
	case BIN_ADD: case BIN_SUM: return add_fn(dt);
	case BIN_SUB: return sub_fn(dt);
	case BIN_MUL: return mul_fn(dt);
	case BIN_DIV: return div_fn(dt);
	case BIN_MEAN: return dt == NPU_DTYPE_FLOAT || dt == NPU_DTYPE_DOUBLE ?
			      add_fn(dt) : NULL;
	case BIN_MAX: return max_fn(dt);
	case BIN_MIN: return min_fn(dt);
	case BIN_EQ: return dt == NPU_DTYPE_BOOL ? eq_b : eq_fn(dt);
	case BIN_GT: return gt_fn(dt);
	case BIN_LT: return lt_fn(dt);
	case BIN_GE: return ge_fn(dt);
	case BIN_LE: return le_fn(dt);
	case BIN_AND: return dt == NPU_DTYPE_BOOL ? and_b : NULL;
	case BIN_OR: return dt == NPU_DTYPE_BOOL ? or_b : NULL;
	case BIN_XOR: return dt == NPU_DTYPE_BOOL ? xor_b : NULL;
	case BIN_PRELU: return dt == NPU_DTYPE_FLOAT ? prelu_f32 : NULL;
	case BIN_POW: return dt == NPU_DTYPE_FLOAT ? pow_f32 : NULL;
	case BIN_MOD: return mod_fn(dt);
	case BIN_FMOD: return fmod_fn(dt);
	case BIN_SHL: return shl_fn(dt);
	case BIN_SHR: return shr_fn(dt);
	}
	return NULL;
}

/* y = op(a, b) over the broadcast of both to y's shape. */
static void npu_bin_apply(npu_bin_row_fn fn, const struct npu_tensor *a,
			  const struct npu_tensor *b, struct npu_tensor *y)
{
	const struct npu_shape *ins[2] = { &a->shape, &b->shape };
	size_t ea = npu_dtype_size(a->dtype), eb = npu_dtype_size(b->dtype);
	size_t ey = npu_dtype_size(y->dtype);
	struct npu_bcast bc;
	int64_t r, off[2];

	npu_bcast_init(&bc, &y->shape, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, off);
		fn((const char *)a->data + off[0] * ea,
		   (const char *)b->data + off[1] * eb,
		   (char *)y->data + r * bc.len * ey, bc.len, bc.step[0],
		   bc.step[1]);
	}
}

/*
 * Items per image plane of a tensor of this shape: the dims after the
 * channels (rank 4 and up: H x W, D x H x W, or H x W x 16 of a blocked
 * NCHW16c tensor), the last two of rank 3. The threads split each plane
 * by pixels, as convolutions do, so that each reads what it wrote
 * (npu_threadpool_parallel_for_planes).
 */
static size_t npu_elt_plane(const struct npu_shape *s, size_t n)
{
	size_t plane = 1;
	int d;

	if (s->rank < 3)
		return n ? n : 1;
	for (d = s->rank >= 4 ? 2 : s->rank - 2; d < s->rank; d++) {
		if (s->dims[d] <= 0)
			return n ? n : 1;
		plane *= (size_t)s->dims[d];
	}
	return n % plane ? n : plane;
}

/*
 * fp32 Add / Sub / Mul / Div: the vectorized kernel, over pieces of the
 * output split between the pool's threads (rows of the broadcast, or
 * parts of one long row).
 */
struct npu_bin_f32_job {
	struct npu_bcast bc;
	enum npu_vec_binop op;
	const float *a, *b;
	float *y;
};

/*
 * Rows of 16 contiguous floats (a blocked tensor's pixels): through a
 * local array, so that the compiler vectorizes them even where y is a.
 */
#define NPU_BIN_ROWS16(expr)							\
	for (r = 0; r < rows; r++, a += da, b += db, y += 16) {			\
		float t[16];							\
										\
		for (i = 0; i < 16; i++)					\
			t[i] = (expr);						\
		memcpy(y, t, sizeof(t));					\
	}

/* 'rows' consecutive rows along broadcast dim d from offsets off. */
static void npu_bin_f32_short_rows(const struct npu_bin_f32_job *job, const int64_t *off,
				   int d, size_t rows, size_t begin)
{
	size_t len = (size_t)job->bc.len, r, i;
	size_t sa = (size_t)job->bc.step[0], sb = (size_t)job->bc.step[1];
	const float *a = job->a + off[0], *b = job->b + off[1];
	size_t da = (size_t)job->bc.strides[0][d], db = (size_t)job->bc.strides[1][d];
	float *y = job->y + begin;

	if (len == 16 && sa == 1 && sb == 1) {
		switch (job->op) {
		case NPU_VEC_ADD:
			NPU_BIN_ROWS16(a[i] + b[i]);
			return;
		case NPU_VEC_SUB:
			NPU_BIN_ROWS16(a[i] - b[i]);
			return;
		case NPU_VEC_MUL:
			NPU_BIN_ROWS16(a[i] * b[i]);
			return;
		default:
			NPU_BIN_ROWS16(a[i] / b[i]);
			return;
		}
	}
	for (r = 0; r < rows; r++, a += da, b += db, y += len)
		npu_vec_binary_f32(job->op, a, sa, b, sb, y, len);
}

static void npu_bin_f32_range(void *ctx, size_t begin, size_t end)
{
	const struct npu_bin_f32_job *job = ctx;
	size_t len = (size_t)job->bc.len, sa = (size_t)job->bc.step[0];
	size_t sb = (size_t)job->bc.step[1];
	int64_t off[2];

	while (begin < end) {
		size_t r = begin / len, c = begin % len;
		size_t n = len - c < end - begin ? len - c : end - begin;

		npu_bcast_row(&job->bc, (int64_t)r, off);
		if (len < 64 && !c && job->bc.rank >= 2) {
			/*
			 * Short rows (a blocked tensor times one vector per
			 * channel block, [N,Cb,H,W,16] * [N,Cb,1,1,16]): step
			 * along the next dim without re-deriving the offsets
			 * or calling the vector kernel per row.
			 */
			int d = job->bc.rank - 2;
			size_t run = (size_t)job->bc.dims[d] - r % (size_t)job->bc.dims[d];
			size_t rows = (end - begin) / len < run ? (end - begin) / len : run;

			if (rows > 1) {
				npu_bin_f32_short_rows(job, off, d, rows, begin);
				begin += rows * len;
				continue;
			}
		}
		npu_vec_binary_f32(job->op, job->a + off[0] + c * sa, sa,
				   job->b + off[1] + c * sb, sb,
				   job->y + begin, n);
		begin += n;
	}
}

static void npu_bin_f32(enum npu_bin_kind k, const struct npu_tensor *a,
			const struct npu_tensor *b, struct npu_tensor *y,
			struct npu_threadpool *pool)
{
	const struct npu_shape *ins[2] = { &a->shape, &b->shape };
	struct npu_bin_f32_job job = { .a = a->data, .b = b->data, .y = y->data };
	size_t n, plane;

	job.op = k == BIN_ADD ? NPU_VEC_ADD : k == BIN_SUB ? NPU_VEC_SUB :
		 k == BIN_MUL ? NPU_VEC_MUL : NPU_VEC_DIV;
	npu_bcast_init(&job.bc, &y->shape, ins, 2);
	if (job.bc.len <= 0)
		return;
	n = (size_t)(job.bc.rows * job.bc.len);
	plane = npu_elt_plane(&y->shape, n);
	npu_threadpool_parallel_for_planes(pool, n / plane, plane, NPU_VEC_GRAIN,
					   npu_bin_f32_range, &job);
}

static double npu_pow_get(const struct npu_tensor *t, int64_t i)
{
	return npu_op_tensor_get(t, (size_t)i);
}

/* Pow for integer bases or non-float exponents (rare; not vectorized). */
static void npu_pow_generic(const struct npu_tensor *a,
			    const struct npu_tensor *b, struct npu_tensor *y)
{
	const struct npu_shape *ins[2] = { &a->shape, &b->shape };
	struct npu_bcast bc;
	int64_t r, i, off[2];

	npu_bcast_init(&bc, &y->shape, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, off);
		for (i = 0; i < bc.len; i++) {
			double v = pow(npu_pow_get(a, off[0] + i * bc.step[0]),
				       npu_pow_get(b, off[1] + i * bc.step[1]));
			int64_t o = r * bc.len + i;

			switch (y->dtype) {
			case NPU_DTYPE_FLOAT: ((float *)y->data)[o] = (float)v; break;
			case NPU_DTYPE_DOUBLE: ((double *)y->data)[o] = v; break;
			case NPU_DTYPE_INT8: ((int8_t *)y->data)[o] = (int8_t)v; break;
			case NPU_DTYPE_UINT8: ((uint8_t *)y->data)[o] = (uint8_t)v; break;
			case NPU_DTYPE_INT16: ((int16_t *)y->data)[o] = (int16_t)v; break;
			case NPU_DTYPE_UINT16: ((uint16_t *)y->data)[o] = (uint16_t)v; break;
			case NPU_DTYPE_INT32: ((int32_t *)y->data)[o] = (int32_t)v; break;
			case NPU_DTYPE_UINT32: ((uint32_t *)y->data)[o] = (uint32_t)v; break;
			case NPU_DTYPE_INT64: ((int64_t *)y->data)[o] = (int64_t)v; break;
			case NPU_DTYPE_UINT64: ((uint64_t *)y->data)[o] = (uint64_t)v; break;
			default: break;
			}
		}
	}
}

static npu_status npu_bin_compute(struct npu_op_ctx *ctx, enum npu_bin_kind k);

/*
 * float16 / bfloat16 operands: computed in fp32 and rounded back (to
 * nearest even), which is what numpy's float16 arithmetic does.
 */
static npu_status npu_bin_half(struct npu_op_ctx *ctx, enum npu_bin_kind k)
{
	struct npu_tensor *fin, fout, *out_p = &fout;
	const struct npu_tensor **in_p;
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_op_ctx fctx = *ctx;
	bool half_out = y->dtype == NPU_DTYPE_FLOAT16 || y->dtype == NPU_DTYPE_BFLOAT16;
	int64_t n, i;
	size_t j;
	npu_status st = NPU_OK;

	fin = calloc(ctx->num_inputs + 1, sizeof(*fin));
	in_p = calloc(ctx->num_inputs + 1, sizeof(*in_p));
	if (!fin || !in_p) {
		free(fin);
		free(in_p);
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (j = 0; j < ctx->num_inputs; j++) {
		const struct npu_tensor *t = ctx->inputs[j];

		fin[j] = *t;
		fin[j].dtype = NPU_DTYPE_FLOAT;
		n = npu_op_numel(t);
		fin[j].nbytes = (size_t)n * sizeof(float);
		fin[j].data = malloc(fin[j].nbytes ? fin[j].nbytes : 1);
		if (!fin[j].data) {
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
					  "out of memory");
			goto out;
		}
		for (i = 0; i < n; i++)
			((float *)fin[j].data)[i] = t->dtype == NPU_DTYPE_BFLOAT16 ?
				npu_bf16_to_float(((const uint16_t *)t->data)[i]) :
				npu_half_to_float(((const uint16_t *)t->data)[i]);
		in_p[j] = &fin[j];
	}
	fout = *y;
	if (half_out) {
		n = npu_op_numel(y);
		fout.dtype = NPU_DTYPE_FLOAT;
		fout.nbytes = (size_t)n * sizeof(float);
		fout.data = malloc(fout.nbytes ? fout.nbytes : 1);
		if (!fout.data) {
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
					  "out of memory");
			goto out;
		}
	}
	fctx.inputs = in_p;
	fctx.outputs = &out_p;
	fctx.num_outputs = 1;
	st = npu_bin_compute(&fctx, k);
	if (!st && half_out)
		for (i = 0; i < npu_op_numel(y); i++)
			((uint16_t *)y->data)[i] = y->dtype == NPU_DTYPE_BFLOAT16 ?
				npu_float_to_bf16(((const float *)fout.data)[i], true) :
				npu_float_to_half(((const float *)fout.data)[i]);
	if (half_out)
		free(fout.data);
out:
	for (j = 0; j < ctx->num_inputs; j++)
		free(fin[j].data);
	free(fin);
	free(in_p);
	return st;
}

/* fp32 Max / Min of two tensors of y's shape (no broadcast): one tight
 * loop (the generic path calls a function per element), threaded. The
 * expressions are the generic path's: a NaN in either input wins. */
struct npu_minmax_job {
	const float *a, *b;
	float *y;
	bool max;
};

typedef float npu_v4f __attribute__((vector_size(16)));
typedef int32_t npu_v4i __attribute__((vector_size(16)));

static void npu_minmax_range(void *ctx, size_t begin, size_t end)
{
	const struct npu_minmax_job *job = ctx;
	const float *a = job->a, *b = job->b;
	float *y = job->y;
	size_t i = begin;

	/* Branch-free on 4 lanes (GNU C vectors, SSE2 in the base ISA; wider
	 * ones are split lane by lane there): with branches, random data
	 * mispredicts every other element. */
	for (; i + 4 <= end; i += 4) {
		npu_v4f x, z;
		npu_v4i m;

		memcpy(&x, a + i, sizeof(x));
		memcpy(&z, b + i, sizeof(z));
		m = (job->max ? x > z : x < z) | (x != x);
		m = (m & (npu_v4i)x) | (~m & (npu_v4i)z);
		memcpy(y + i, &m, sizeof(m));
	}
	if (job->max)
		for (; i < end; i++)
			y[i] = (a[i] > b[i] || a[i] != a[i]) ? a[i] : b[i];
	else
		for (; i < end; i++)
			y[i] = (a[i] < b[i] || a[i] != a[i]) ? a[i] : b[i];
}

static bool npu_minmax_f32(struct npu_op_ctx *ctx, enum npu_bin_kind k)
{
	const struct npu_tensor *a = ctx->inputs[0], *b;
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_minmax_job job;
	int d;

	if (ctx->num_inputs != 2)
		return false;
	b = ctx->inputs[1];
	if (a->dtype != NPU_DTYPE_FLOAT ||
	    b->dtype != NPU_DTYPE_FLOAT || y->dtype != NPU_DTYPE_FLOAT ||
	    a->shape.rank != y->shape.rank || b->shape.rank != y->shape.rank)
		return false;
	for (d = 0; d < y->shape.rank; d++)
		if (a->shape.dims[d] != y->shape.dims[d] || b->shape.dims[d] != y->shape.dims[d])
			return false;
	job.a = a->data;
	job.b = b->data;
	job.y = y->data;
	job.max = k == BIN_MAX;
	npu_threadpool_parallel_for(ctx->pool, (size_t)npu_op_numel(y), NPU_VEC_GRAIN,
				    npu_minmax_range, &job);
	return true;
}

static npu_status npu_pow_compute(struct npu_op_ctx *ctx)
{
	return npu_bin_compute(ctx, BIN_POW);
}

static npu_status npu_bin_compute(struct npu_op_ctx *ctx, enum npu_bin_kind k)
{
	const struct npu_tensor *a = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t n = npu_op_numel(y), i;
	size_t j;

	struct npu_tensor b;

	if (n == 0)
		return NPU_OK;
	if ((a->dtype == NPU_DTYPE_FLOAT16 || a->dtype == NPU_DTYPE_BFLOAT16) && k != BIN_POW)
		return npu_bin_half(ctx, k);
	k = npu_bin_resolve(ctx->node, k);
	b = *ctx->inputs[1 % ctx->num_inputs];
	npu_bin_legacy_shape(ctx->node, &a->shape, &b.shape, &b.shape);
	if (k == BIN_POW) {
		if (npu_op_needs_widening(ctx, false))
			return npu_op_compute_widened(ctx, false, npu_pow_compute);
		if (a->dtype == NPU_DTYPE_FLOAT && b.dtype == NPU_DTYPE_FLOAT &&
		    npu_op_numel(&b) == 1 && ((const float *)b.data)[0] == 2.0f &&
		    npu_op_numel(a) == n) {
			/* x^2 (variances, power spectra): x * x, the correctly
			 * rounded square (powf is within 1 ulp), threaded and
			 * vectorized instead of a powf call per element. */
			npu_bin_f32(BIN_MUL, a, a, y, ctx->pool);
		} else if (a->dtype == NPU_DTYPE_FLOAT && b.dtype == NPU_DTYPE_FLOAT) {
			npu_bin_apply(pow_f32, a, &b, y);
		} else {
			npu_pow_generic(a, &b, y);
		}
		return NPU_OK;
	}
	if (k <= BIN_DIV && a->dtype == NPU_DTYPE_FLOAT &&
	    b.dtype == NPU_DTYPE_FLOAT) {
		npu_bin_f32(k, a, &b, y, ctx->pool);
		return NPU_OK;
	}
	if (!npu_bin_is_variadic(k)) {
		npu_bin_apply(npu_bin_fn(k, a->dtype), a, &b, y);
		return NPU_OK;
	}
	if ((k == BIN_MAX || k == BIN_MIN) && npu_minmax_f32(ctx, k))
		return NPU_OK;
	/* Variadic: fold the inputs into y in place. */
	if (ctx->num_inputs == 1) {
		npu_op_broadcast_copy(a, y);
	} else {
		npu_bin_apply(npu_bin_fn(k, a->dtype), a, ctx->inputs[1], y);
		for (j = 2; j < ctx->num_inputs; j++)
			npu_bin_apply(npu_bin_fn(k, a->dtype), y,
				      ctx->inputs[j], y);
	}
	if (k == BIN_MEAN) {
		if (y->dtype == NPU_DTYPE_FLOAT) {
			float *v = y->data, s = (float)ctx->num_inputs;

			for (i = 0; i < n; i++)
				v[i] /= s;
		} else {
			double *v = y->data, s = (double)ctx->num_inputs;

			for (i = 0; i < n; i++)
				v[i] /= s;
		}
	}
	return NPU_OK;
}

#define BIN_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)			\
{									\
	return npu_bin_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "",					\
	.compute = sym##_compute,					\
};

BIN_DEF(add, "Add", BIN_ADD)
BIN_DEF(sub, "Sub", BIN_SUB)
BIN_DEF(mul, "Mul", BIN_MUL)
BIN_DEF(div, "Div", BIN_DIV)
BIN_DEF(pow, "Pow", BIN_POW)
BIN_DEF(max, "Max", BIN_MAX)
BIN_DEF(min, "Min", BIN_MIN)
BIN_DEF(sum, "Sum", BIN_SUM)
BIN_DEF(mean, "Mean", BIN_MEAN)

static npu_status equal_compute(struct npu_op_ctx *ctx)
{
	if (ctx->inputs[0]->dtype == NPU_DTYPE_STRING)
		return npu_op_strings_equal(ctx);
	return npu_bin_compute(ctx, BIN_EQ);
}

NPU_CPU_OP_DEF(equal) = {
	.op_type = "Equal",
	.domain = "",
	.compute = equal_compute,
};
BIN_DEF(greater, "Greater", BIN_GT)
BIN_DEF(less, "Less", BIN_LT)
BIN_DEF(greater_or_equal, "GreaterOrEqual", BIN_GE)
BIN_DEF(less_or_equal, "LessOrEqual", BIN_LE)
BIN_DEF(and, "And", BIN_AND)
BIN_DEF(or, "Or", BIN_OR)
BIN_DEF(xor, "Xor", BIN_XOR)
BIN_DEF(prelu, "PRelu", BIN_PRELU)
BIN_DEF(mod, "Mod", BIN_MOD)
BIN_DEF(bit_shift, "BitShift", BIN_SHL)

/* ---- Where ---- */

#define WHERE_ROW(name, T)						\
static void name(const uint8_t *c, const void *px, const void *py,	\
		 void *pz, int64_t n, const int64_t *step)		\
{									\
	const T *x = px, *y = py;					\
	T *z = pz;							\
	int64_t i;							\
									\
	for (i = 0; i < n; i++)						\
		z[i] = c[i * step[0]] ? x[i * step[1]] : y[i * step[2]]; \
}
WHERE_ROW(where_8, uint8_t)
WHERE_ROW(where_16, uint16_t)
WHERE_ROW(where_32, uint32_t)
WHERE_ROW(where_64, uint64_t)

static npu_status where_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *c = ctx->inputs[0], *x = ctx->inputs[1],
				*y = ctx->inputs[2];
	const struct npu_shape *ins[3] = { &c->shape, &x->shape, &y->shape };
	struct npu_tensor *z = ctx->outputs[0];
	size_t es = npu_dtype_size(x->dtype);
	struct npu_bcast bc;
	int64_t r, off[3];

	if (npu_op_numel(z) == 0)
		return NPU_OK;
	npu_bcast_init(&bc, &z->shape, ins, 3);
	for (r = 0; r < bc.rows; r++) {
		const uint8_t *cp;
		const char *xp, *yp;
		char *zp = (char *)z->data + r * bc.len * es;

		npu_bcast_row(&bc, r, off);
		cp = (const uint8_t *)c->data + off[0];
		xp = (const char *)x->data + off[1] * es;
		yp = (const char *)y->data + off[2] * es;
		switch (es) {
		case 1: where_8(cp, xp, yp, zp, bc.len, bc.step); break;
		case 2: where_16(cp, xp, yp, zp, bc.len, bc.step); break;
		case 4: where_32(cp, xp, yp, zp, bc.len, bc.step); break;
		default: where_64(cp, xp, yp, zp, bc.len, bc.step); break;
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(where) = {
	.op_type = "Where",
	.domain = "",
	.compute = where_compute,
};

/* ---- unary float ops ---- */


struct npu_unary_params {
	float alpha, beta, gamma;
};

/* One source for the float and double kernels (T, suffix S, libm suffix M). */
#define UNARY_IMPL(T, S, M)							\
static void npu_unary_##S(enum npu_unary_kind k, \
			  const struct npu_unary_params *p, \
			  const T *restrict x, T *restrict y, \
			  int64_t n) \
{ \
	T alpha = (T)p->alpha, beta = (T)p->beta, gamma = (T)p->gamma; \
	int64_t i; \
 \
	switch (k) { \
	case UN_SQRT: for (i = 0; i < n; i++) y[i] = sqrt##M(x[i]); break; \
	case UN_EXP: for (i = 0; i < n; i++) y[i] = exp##M(x[i]); break; \
	case UN_LOG: for (i = 0; i < n; i++) y[i] = log##M(x[i]); break; \
	case UN_RELU: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] > (T)0.0 ? x[i] : (T)0.0; \
		break; \
	case UN_LEAKY_RELU: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] < (T)0.0 ? alpha * x[i] : x[i]; \
		break; \
	case UN_THRESHOLDED_RELU: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] > alpha ? x[i] : (T)0.0; \
		break; \
	case UN_SIGMOID: \
		for (i = 0; i < n; i++) \
			y[i] = (T)1.0 / ((T)1.0 + exp##M(-x[i])); \
		break; \
	case UN_TANH: for (i = 0; i < n; i++) y[i] = tanh##M(x[i]); break; \
	case UN_HARD_SIGMOID: \
		for (i = 0; i < n; i++) \
			y[i] = fmax##M((T)0.0, fmin##M((T)1.0, alpha * x[i] + beta)); \
		break; \
	case UN_HARD_SWISH: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] * fmax##M((T)0.0, fmin##M((T)1.0, x[i] / (T)6.0 + (T)0.5)); \
		break; \
	case UN_ERF: for (i = 0; i < n; i++) y[i] = erf##M(x[i]); break; \
	case UN_NEG: for (i = 0; i < n; i++) y[i] = -x[i]; break; \
	case UN_ABS: for (i = 0; i < n; i++) y[i] = fabs##M(x[i]); break; \
	case UN_RECIPROCAL: for (i = 0; i < n; i++) y[i] = (T)1.0 / x[i]; break; \
	case UN_FLOOR: for (i = 0; i < n; i++) y[i] = floor##M(x[i]); break; \
	case UN_CEIL: for (i = 0; i < n; i++) y[i] = ceil##M(x[i]); break; \
	/* Round half to even, as ONNX (and the default FP rounding mode). */ \
	case UN_ROUND: for (i = 0; i < n; i++) y[i] = nearbyint##M(x[i]); break; \
	case UN_SIN: for (i = 0; i < n; i++) y[i] = sin##M(x[i]); break; \
	case UN_COS: for (i = 0; i < n; i++) y[i] = cos##M(x[i]); break; \
	case UN_SOFTPLUS: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] > (T)30.0 ? x[i] : log1p##M(exp##M(x[i])); \
		break; \
	case UN_SOFTSIGN: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] / ((T)1.0 + fabs##M(x[i])); \
		break; \
	case UN_ELU: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] < (T)0.0 ? alpha * (exp##M(x[i]) - (T)1.0) : x[i]; \
		break; \
	case UN_SELU: \
		for (i = 0; i < n; i++) \
			y[i] = x[i] <= (T)0.0 ? gamma * (alpha * exp##M(x[i]) - alpha) \
					    : gamma * x[i]; \
		break; \
	case UN_SIGN: \
		for (i = 0; i < n; i++) \
			y[i] = (T)((x[i] > (T)0) - (x[i] < (T)0)); \
		break; \
	case UN_CLIP: \
		for (i = 0; i < n; i++) \
			y[i] = fmin##M(fmax##M(x[i], alpha), beta); \
		break; \
	case UN_TAN: for (i = 0; i < n; i++) y[i] = tan##M(x[i]); break; \
	case UN_ASIN: for (i = 0; i < n; i++) y[i] = asin##M(x[i]); break; \
	case UN_ACOS: for (i = 0; i < n; i++) y[i] = acos##M(x[i]); break; \
	case UN_ATAN: for (i = 0; i < n; i++) y[i] = atan##M(x[i]); break; \
	case UN_SINH: for (i = 0; i < n; i++) y[i] = sinh##M(x[i]); break; \
	case UN_COSH: for (i = 0; i < n; i++) y[i] = cosh##M(x[i]); break; \
	case UN_ASINH: for (i = 0; i < n; i++) y[i] = asinh##M(x[i]); break; \
	case UN_ACOSH: for (i = 0; i < n; i++) y[i] = acosh##M(x[i]); break; \
	case UN_ATANH: for (i = 0; i < n; i++) y[i] = atanh##M(x[i]); break; \
	case UN_CELU: \
		for (i = 0; i < n; i++) \
			y[i] = fmax##M((T)0.0, x[i]) + \
			       fmin##M((T)0.0, alpha * (exp##M(x[i] / alpha) - (T)1.0)); \
		break; \
	case UN_SHRINK: \
		/* alpha = lambd, beta = bias */ \
		for (i = 0; i < n; i++) \
			y[i] = x[i] < -alpha ? x[i] + beta : \
			       (x[i] > alpha ? x[i] - beta : (T)0.0); \
		break; \
	case UN_NOT: case UN_IS_NAN: case UN_IS_INF: \
		break; \
	} \
}

UNARY_IMPL(float, f32, f)
UNARY_IMPL(double, f64, )

/*
 * fp32 unary ops over the pool: the activations the kernels vectorize
 * (Relu, LeakyRelu, HardSigmoid, HardSwish, Sigmoid, Clip) through
 * npu_vec_act_f32, Erf and Tanh through their vector kernels (about
 * 2 ulp), the libm ones through npu_unary_f32. NaN inputs stay NaN in
 * the vectorized ones (as in ONNX Runtime).
 */
struct npu_unary_f32_job {
	enum npu_unary_kind k;
	struct npu_unary_params p;
	struct npu_cpu_act_params act;
	const float *x;
	float *y;
};

static void npu_unary_f32_range(void *ctx, size_t begin, size_t end)
{
	const struct npu_unary_f32_job *job = ctx;

	if (job->act.kind != NPU_CPU_ACT_NONE)
		npu_vec_act_f32(&job->act, job->x + begin, job->y + begin,
				end - begin);
	else if (job->k == UN_ERF)
		npu_vec_erf_f32(job->x + begin, job->y + begin, end - begin);
	else if (job->k == UN_TANH)
		npu_vec_tanh_f32(job->x + begin, job->y + begin, end - begin);
	else
		npu_unary_f32(job->k, &job->p, job->x + begin, job->y + begin,
			      (int64_t)(end - begin));
}

static void npu_unary_f32_par(enum npu_unary_kind k,
			      const struct npu_unary_params *p,
			      const float *x, float *y, int64_t n,
			      const struct npu_shape *shape,
			      struct npu_threadpool *pool)
{
	struct npu_unary_f32_job job = { .k = k, .p = *p, .x = x, .y = y };
	size_t grain = 2048;	/* libm calls: costly per element */
	size_t plane;

	switch (k) {
	case UN_RELU: job.act.kind = NPU_CPU_ACT_RELU; break;
	case UN_LEAKY_RELU:
		job.act.kind = NPU_CPU_ACT_LEAKY_RELU;
		job.act.alpha = p->alpha;
		break;
	case UN_HARD_SIGMOID:
		job.act.kind = NPU_CPU_ACT_HARD_SIGMOID;
		job.act.alpha = p->alpha;
		job.act.beta = p->beta;
		break;
	case UN_HARD_SWISH: job.act.kind = NPU_CPU_ACT_HARD_SWISH; break;
	case UN_SIGMOID: job.act.kind = NPU_CPU_ACT_SIGMOID; break;
	case UN_CLIP:
		/* A NaN bound: keep fminf / fmaxf's meaning (ignore it). */
		if (p->alpha != p->alpha || p->beta != p->beta)
			break;
		job.act.kind = NPU_CPU_ACT_CLIP;
		job.act.act_min = p->alpha;
		job.act.act_max = p->beta;
		break;
	default: break;
	}
	if (job.act.kind != NPU_CPU_ACT_NONE || k == UN_ERF || k == UN_TANH)
		grain = NPU_VEC_GRAIN;
	plane = npu_elt_plane(shape, (size_t)n);
	npu_threadpool_parallel_for_planes(pool, (size_t)n / plane, plane, grain,
					   npu_unary_f32_range, &job);
}

#define INT_NEG_ABS(T, k, x, y, n)					\
	do {								\
		const T *xv = (x);					\
		T *yv = (y);						\
		int64_t i_;						\
		for (i_ = 0; i_ < (n); i_++)				\
			yv[i_] = (T)((k) == UN_NEG ? -xv[i_] :		\
				     (xv[i_] < 0 ? -xv[i_] : xv[i_]));	\
	} while (0)

/*
 * Relu and Sign on integers: one kernel per family (int64 / uint64), the
 * narrower integers widened to it.
 */
static npu_status npu_int_relu_sign(struct npu_op_ctx *ctx)
{
	bool sign = !strcmp(ctx->node->op_type, "Sign");
	int64_t n = npu_op_numel(ctx->inputs[0]), i;

	switch (ctx->inputs[0]->dtype) {
	case NPU_DTYPE_INT64: {
		const int64_t *x = ctx->inputs[0]->data;
		int64_t *y = ctx->outputs[0]->data;

		for (i = 0; i < n; i++)
			y[i] = sign ? (x[i] > 0) - (x[i] < 0) : x[i] > 0 ? x[i] : 0;
		return NPU_OK;
	}
	case NPU_DTYPE_UINT64: {	/* Relu of an unsigned value is itself */
		const uint64_t *x = ctx->inputs[0]->data;
		uint64_t *y = ctx->outputs[0]->data;

		for (i = 0; i < n; i++)
			y[i] = sign ? x[i] != 0 : x[i];
		return NPU_OK;
	}
	default:
		return npu_op_compute_widened(ctx, true, npu_int_relu_sign);
	}
}

static npu_status npu_unary_compute(struct npu_op_ctx *ctx,
				    enum npu_unary_kind k)
{
	const struct npu_node *node = ctx->node;
	struct npu_unary_params p = { 0 };
	int64_t n = npu_op_numel(ctx->inputs[0]), i;

	switch (k) {
	case UN_LEAKY_RELU: p.alpha = npu_node_attr_float_or(node, "alpha", 0.01f); break;
	case UN_HARD_SIGMOID:
		p.alpha = npu_node_attr_float_or(node, "alpha", 0.2f);
		p.beta = npu_node_attr_float_or(node, "beta", 0.5f);
		break;
	case UN_ELU: p.alpha = npu_node_attr_float_or(node, "alpha", 1.0f); break;
	case UN_THRESHOLDED_RELU: p.alpha = npu_node_attr_float_or(node, "alpha", 1.0f); break;
	case UN_CELU: p.alpha = npu_node_attr_float_or(node, "alpha", 1.0f); break;
	case UN_SHRINK:
		p.alpha = npu_node_attr_float_or(node, "lambd", 0.5f);
		p.beta = npu_node_attr_float_or(node, "bias", 0.0f);
		break;
	case UN_SELU:
		p.alpha = npu_node_attr_float_or(node, "alpha", 1.67326319217681884765625f);
		p.gamma = npu_node_attr_float_or(node, "gamma", 1.05070102214813232421875f);
		break;
	default: break;
	}
	if (k == UN_IS_NAN || k == UN_IS_INF) {
		bool dbl = ctx->inputs[0]->dtype == NPU_DTYPE_DOUBLE;
		const float *x = ctx->inputs[0]->data;
		const double *xd = ctx->inputs[0]->data;
		uint8_t *y = ctx->outputs[0]->data;
		bool neg = npu_node_attr_int_or(node, "detect_negative", 1) != 0;
		bool pos = npu_node_attr_int_or(node, "detect_positive", 1) != 0;

		for (i = 0; i < n; i++) {
			double v = dbl ? xd[i] : x[i];

			y[i] = k == UN_IS_NAN ? isnan(v) : (isinf(v) && (v > 0 ? pos : neg));
		}
		return NPU_OK;
	}
	if (k == UN_NOT) {
		const uint8_t *x = ctx->inputs[0]->data;
		uint8_t *y = ctx->outputs[0]->data;

		for (i = 0; i < n; i++)
			y[i] = !x[i];
		return NPU_OK;
	}
	if ((k == UN_RELU || k == UN_SIGN) && npu_integer(ctx->inputs[0]->dtype))
		return npu_int_relu_sign(ctx);
	switch (ctx->inputs[0]->dtype) {
	case NPU_DTYPE_DOUBLE:	/* the same formulas as float, in double */
		npu_unary_f64(k, &p, ctx->inputs[0]->data, ctx->outputs[0]->data, n);
		break;
	case NPU_DTYPE_UINT8:	/* Abs of an unsigned value is itself */
	case NPU_DTYPE_UINT16:
	case NPU_DTYPE_UINT32:
	case NPU_DTYPE_UINT64:
		memcpy(ctx->outputs[0]->data, ctx->inputs[0]->data, ctx->inputs[0]->nbytes);
		break;
	case NPU_DTYPE_INT8: INT_NEG_ABS(int8_t, k, ctx->inputs[0]->data, ctx->outputs[0]->data, n); break;
	case NPU_DTYPE_INT16: INT_NEG_ABS(int16_t, k, ctx->inputs[0]->data, ctx->outputs[0]->data, n); break;
	case NPU_DTYPE_INT32: INT_NEG_ABS(int32_t, k, ctx->inputs[0]->data, ctx->outputs[0]->data, n); break;
	case NPU_DTYPE_INT64: INT_NEG_ABS(int64_t, k, ctx->inputs[0]->data, ctx->outputs[0]->data, n); break;
	default:
		npu_unary_f32_par(k, &p, ctx->inputs[0]->data,
				  ctx->outputs[0]->data, n, &ctx->inputs[0]->shape,
				  ctx->pool);
		break;
	}
	return NPU_OK;
}

#define UNARY_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)			\
{									\
	if (npu_op_wide_dtype(ctx->inputs[0]->dtype, false) == NPU_DTYPE_FLOAT &&	\
	    ctx->inputs[0]->dtype != NPU_DTYPE_FLOAT)			\
		return npu_op_compute_widened(ctx, false, sym##_compute);	\
	return npu_unary_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "",					\
	.compute = sym##_compute,					\
};

UNARY_DEF(sqrt, "Sqrt", UN_SQRT)
UNARY_DEF(exp, "Exp", UN_EXP)
UNARY_DEF(log, "Log", UN_LOG)
UNARY_DEF(relu, "Relu", UN_RELU)
UNARY_DEF(leaky_relu, "LeakyRelu", UN_LEAKY_RELU)
UNARY_DEF(thresholded_relu, "ThresholdedRelu", UN_THRESHOLDED_RELU)
UNARY_DEF(sigmoid, "Sigmoid", UN_SIGMOID)
UNARY_DEF(tanh, "Tanh", UN_TANH)
UNARY_DEF(hard_sigmoid, "HardSigmoid", UN_HARD_SIGMOID)
UNARY_DEF(hard_swish, "HardSwish", UN_HARD_SWISH)
UNARY_DEF(erf, "Erf", UN_ERF)
UNARY_DEF(neg, "Neg", UN_NEG)
UNARY_DEF(abs, "Abs", UN_ABS)
UNARY_DEF(reciprocal, "Reciprocal", UN_RECIPROCAL)
UNARY_DEF(floor, "Floor", UN_FLOOR)
UNARY_DEF(ceil, "Ceil", UN_CEIL)
UNARY_DEF(round, "Round", UN_ROUND)
UNARY_DEF(sin, "Sin", UN_SIN)
UNARY_DEF(cos, "Cos", UN_COS)
UNARY_DEF(softplus, "Softplus", UN_SOFTPLUS)
UNARY_DEF(softsign, "Softsign", UN_SOFTSIGN)
UNARY_DEF(elu, "Elu", UN_ELU)
UNARY_DEF(selu, "Selu", UN_SELU)
UNARY_DEF(sign, "Sign", UN_SIGN)
UNARY_DEF(not, "Not", UN_NOT)
UNARY_DEF(tan, "Tan", UN_TAN)
UNARY_DEF(asin, "Asin", UN_ASIN)
UNARY_DEF(acos, "Acos", UN_ACOS)
UNARY_DEF(atan, "Atan", UN_ATAN)
UNARY_DEF(sinh, "Sinh", UN_SINH)
UNARY_DEF(cosh, "Cosh", UN_COSH)
UNARY_DEF(asinh, "Asinh", UN_ASINH)
UNARY_DEF(acosh, "Acosh", UN_ACOSH)
UNARY_DEF(atanh, "Atanh", UN_ATANH)
UNARY_DEF(celu, "Celu", UN_CELU)
UNARY_DEF(shrink, "Shrink", UN_SHRINK)
UNARY_DEF(is_nan, "IsNaN", UN_IS_NAN)
UNARY_DEF(is_inf, "IsInf", UN_IS_INF)

/* ---- Clip: min / max as attributes (< 11) or optional inputs ---- */

#define CLIP_LOOP(T, x, y, n, lo, hi)					\
	do {								\
		const T *xv = (x);					\
		T *yv = (y), l = (T)(lo), h = (T)(hi);			\
		int64_t i_;						\
		for (i_ = 0; i_ < (n); i_++) {				\
			T v = xv[i_] < l ? l : xv[i_];			\
			yv[i_] = v > h ? h : v;				\
		}							\
	} while (0)

static npu_status clip_kernel(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	const struct npu_tensor *tmin = npu_op_in(ctx, 1), *tmax = npu_op_in(ctx, 2);
	void *y = ctx->outputs[0]->data;
	int64_t n = npu_op_numel(x);
	double lo, hi;

	switch (x->dtype) {
	case NPU_DTYPE_FLOAT: lo = -FLT_MAX; hi = FLT_MAX; break;
	case NPU_DTYPE_DOUBLE: lo = -DBL_MAX; hi = DBL_MAX; break;
	case NPU_DTYPE_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
	case NPU_DTYPE_UINT8: lo = 0; hi = UINT8_MAX; break;
	case NPU_DTYPE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
	default: lo = (double)INT64_MIN; hi = (double)INT64_MAX; break;
	}
	if (ctx->node->opset < 11) {
		lo = npu_node_attr_float_or(ctx->node, "min", -FLT_MAX);
		hi = npu_node_attr_float_or(ctx->node, "max", FLT_MAX);
	}
	if (tmin && npu_op_numel(tmin) == 1)
		lo = npu_op_tensor_get(tmin, 0);
	if (tmax && npu_op_numel(tmax) == 1)
		hi = npu_op_tensor_get(tmax, 0);
	switch (x->dtype) {
	case NPU_DTYPE_FLOAT: {
		struct npu_unary_params p = { .alpha = (float)lo, .beta = (float)hi };

		npu_unary_f32_par(UN_CLIP, &p, x->data, y, n, &x->shape, ctx->pool);
		break;
	}
	case NPU_DTYPE_DOUBLE: CLIP_LOOP(double, x->data, y, n, lo, hi); break;
	case NPU_DTYPE_INT8: CLIP_LOOP(int8_t, x->data, y, n, lo, hi); break;
	case NPU_DTYPE_UINT8: CLIP_LOOP(uint8_t, x->data, y, n, lo, hi); break;
	case NPU_DTYPE_INT32: CLIP_LOOP(int32_t, x->data, y, n, lo, hi); break;
	case NPU_DTYPE_INT64: {
		/* Exact int64 bounds: do not go through double. */
		const int64_t *xv = x->data;
		int64_t *yv = y, l = INT64_MIN, h = INT64_MAX, i;

		if (tmin && npu_op_numel(tmin) == 1)
			l = ((const int64_t *)tmin->data)[0];
		if (tmax && npu_op_numel(tmax) == 1)
			h = ((const int64_t *)tmax->data)[0];
		for (i = 0; i < n; i++) {
			int64_t v = xv[i] < l ? l : xv[i];

			yv[i] = v > h ? h : v;
		}
		break;
	}
	case NPU_DTYPE_UINT64: {
		const uint64_t *xv = x->data;
		uint64_t *yv = y, l = 0, h = UINT64_MAX;
		int64_t i;

		if (tmin && npu_op_numel(tmin) == 1)
			l = ((const uint64_t *)tmin->data)[0];
		if (tmax && npu_op_numel(tmax) == 1)
			h = ((const uint64_t *)tmax->data)[0];
		for (i = 0; i < n; i++) {
			uint64_t v = xv[i] < l ? l : xv[i];

			yv[i] = v > h ? h : v;
		}
		break;
	}
	default:
		break;
	}
	return NPU_OK;
}

/* Types without a loop of their own run their family's (npu_op_compute_widened). */
static npu_status clip_compute(struct npu_op_ctx *ctx)
{
	switch (ctx->inputs[0]->dtype) {
	case NPU_DTYPE_FLOAT16:
	case NPU_DTYPE_BFLOAT16:
		return npu_op_compute_widened(ctx, false, clip_kernel);
	case NPU_DTYPE_INT16:
	case NPU_DTYPE_UINT16:
	case NPU_DTYPE_UINT32:
		return npu_op_compute_widened(ctx, true, clip_kernel);
	default:
		return clip_kernel(ctx);
	}
}

NPU_CPU_OP_DEF(clip) = {
	.op_type = "Clip",
	.domain = "",
	.compute = clip_compute,
};

/* ---- Identity ---- */

static npu_status identity_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	size_t n = (size_t)npu_op_numel(x) * npu_dtype_size(x->dtype);

	if (x->dtype == NPU_DTYPE_STRING)
		return npu_op_strings_copy(ctx, 0, 0);
	if (n && ctx->outputs[0]->data != x->data)
		memcpy(ctx->outputs[0]->data, x->data, n);
	return NPU_OK;
}

NPU_CPU_OP_DEF(identity) = {
	.op_type = "Identity",
	.domain = "",
	.compute = identity_compute,
};

/* ---- Cast ---- */

float npu_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff, bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (mant << 13);
	} else if (exp == 0) {
		f = ldexpf((float)mant, -24);
		return sign ? -f : f;
	} else {
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* float -> IEEE half, round to nearest even (what numpy's astype does). */
uint16_t npu_float_to_half(float f)
{
	uint32_t bits, sign, mant;
	int32_t exp;

	memcpy(&bits, &f, sizeof(bits));
	sign = (bits >> 16) & 0x8000;
	exp = (int32_t)((bits >> 23) & 0xff);
	mant = bits & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	exp = exp - 127 + 15;
	if (exp >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		uint32_t shift, m, rem, half;

		if (exp < -10)
			return (uint16_t)sign;
		m = mant | 0x800000;
		shift = (uint32_t)(14 - exp);
		rem = m & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		m >>= shift;
		if (rem > half || (rem == half && (m & 1)))
			m++;
		return (uint16_t)(sign | m);
	}
	{
		uint32_t rem = mant & 0x1fff, h;

		h = sign | ((uint32_t)exp << 10) | (mant >> 13);
		if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
			h++;	/* may carry into the exponent: still correct */
		return (uint16_t)h;
	}
}

/* bfloat16: the top 16 bits of a float, rounded to nearest even. */
float npu_bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * Before opset 19 ONNX's reference (and its test data) truncates to
 * bfloat16; from 19 it rounds to nearest even.
 */
uint16_t npu_float_to_bf16(float f, bool round)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);	/* NaN stays a quiet NaN */
	if (round)
		u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static bool npu_dtype_is_float(enum npu_dtype dt)
{
	return dt == NPU_DTYPE_FLOAT || dt == NPU_DTYPE_DOUBLE ||
	       dt == NPU_DTYPE_FLOAT16 || dt == NPU_DTYPE_BFLOAT16;
}

/* Source to a wide buffer: int64 when both ends are integers, else double. */
#define CAST_READ(T, src, wide, n)					\
	do {								\
		const T *s_ = (src);					\
		int64_t i_;						\
		for (i_ = 0; i_ < (n); i_++)				\
			(wide)[i_] = s_[i_];				\
	} while (0)
#define CAST_WRITE(T, dst, wide, n)					\
	do {								\
		T *d_ = (dst);						\
		int64_t i_;						\
		for (i_ = 0; i_ < (n); i_++)				\
			d_[i_] = (T)(wide)[i_];				\
	} while (0)

#define CAST_SWITCH(OP, dt, buf, wide, n, HALF, BF16)			\
	switch (dt) {							\
	case NPU_DTYPE_FLOAT: OP(float, buf, wide, n); break;		\
	case NPU_DTYPE_DOUBLE: OP(double, buf, wide, n); break;		\
	case NPU_DTYPE_INT8: OP(int8_t, buf, wide, n); break;		\
	case NPU_DTYPE_UINT8: OP(uint8_t, buf, wide, n); break;		\
	case NPU_DTYPE_INT16: OP(int16_t, buf, wide, n); break;		\
	case NPU_DTYPE_UINT16: OP(uint16_t, buf, wide, n); break;	\
	case NPU_DTYPE_INT32: OP(int32_t, buf, wide, n); break;		\
	case NPU_DTYPE_UINT32: OP(uint32_t, buf, wide, n); break;	\
	case NPU_DTYPE_INT64: OP(int64_t, buf, wide, n); break;		\
	case NPU_DTYPE_UINT64: OP(uint64_t, buf, wide, n); break;	\
	case NPU_DTYPE_BOOL: OP(uint8_t, buf, wide, n); break;		\
	case NPU_DTYPE_FLOAT16: HALF; break;				\
	case NPU_DTYPE_BFLOAT16: BF16; break;				\
	default: break;							\
	}

/*
 * To or from text (op_string.c, which knows no half types: fp16 and bf16
 * go through a float copy).
 */
static npu_status cast_strings(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0], f = { .dtype = NPU_DTYPE_FLOAT };
	int64_t n = npu_op_numel(x), i;
	bool half;
	npu_status st;

	if (x->dtype == NPU_DTYPE_STRING && y->dtype == NPU_DTYPE_STRING)
		return npu_op_strings_copy(ctx, 0, 0);
	half = x->dtype == NPU_DTYPE_FLOAT16 || x->dtype == NPU_DTYPE_BFLOAT16 ||
	       y->dtype == NPU_DTYPE_FLOAT16 || y->dtype == NPU_DTYPE_BFLOAT16;
	if (!half)
		return x->dtype == NPU_DTYPE_STRING ? npu_op_strings_to_numbers(ctx, x, y)
						    : npu_op_numbers_to_strings(ctx, x);
	f.shape = x->shape;
	f.nbytes = (size_t)n * sizeof(float);
	f.data = malloc(f.nbytes + 1);
	if (!f.data)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	if (x->dtype == NPU_DTYPE_STRING) {
		st = npu_op_strings_to_numbers(ctx, x, &f);
		for (i = 0; st == NPU_OK && i < n; i++)
			((uint16_t *)y->data)[i] =
				y->dtype == NPU_DTYPE_FLOAT16
					? npu_float_to_half(((float *)f.data)[i])
					: npu_float_to_bf16(((float *)f.data)[i], ctx->node->opset >= 19);
	} else {
		for (i = 0; i < n; i++)
			((float *)f.data)[i] = x->dtype == NPU_DTYPE_FLOAT16
				? npu_half_to_float(((const uint16_t *)x->data)[i])
				: npu_bf16_to_float(((const uint16_t *)x->data)[i]);
		st = npu_op_numbers_to_strings(ctx, &f);
	}
	free(f.data);
	return st;
}

/*
 * A value already truncated for an integer dtype (or any for a float
 * one), made representable in dt: ONNX leaves out-of-range casts
 * undefined and C makes them undefined behaviour, so integers saturate
 * to the type's range and finite values beyond float's become +-inf, as
 * IEEE rounding gives (from FLT_MAX + half an ulp on). NaN stays NaN.
 */
static double cast_saturate(enum npu_dtype dt, double v)
{
	double lo, hi;

	switch (dt) {
	case NPU_DTYPE_FLOAT:
	case NPU_DTYPE_FLOAT16:
	case NPU_DTYPE_BFLOAT16:
		return fabs(v) >= 0x1.ffffffp127 ? copysign(INFINITY, v) : v;
	case NPU_DTYPE_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
	case NPU_DTYPE_UINT8: lo = 0; hi = UINT8_MAX; break;
	case NPU_DTYPE_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
	case NPU_DTYPE_UINT16: lo = 0; hi = UINT16_MAX; break;
	case NPU_DTYPE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
	case NPU_DTYPE_UINT32: lo = 0; hi = UINT32_MAX; break;
	/* The largest doubles below 2^63 and 2^64. */
	case NPU_DTYPE_INT64: lo = -0x1p63; hi = 0x1.fffffffffffffp62; break;
	case NPU_DTYPE_UINT64: lo = 0; hi = 0x1.fffffffffffffp63; break;
	default: return v;
	}
	return v < lo ? lo : v > hi ? hi : v;
}

static npu_status cast_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t n = npu_op_numel(x), i;
	bool as_int = !npu_dtype_is_float(x->dtype) &&
		      !npu_dtype_is_float(y->dtype);
	void *wide;

	if (x->dtype == NPU_DTYPE_STRING || y->dtype == NPU_DTYPE_STRING)
		return cast_strings(ctx);	/* even empty: a string output needs its buffer */
	if (n == 0)
		return NPU_OK;
	if (x->dtype == y->dtype) {
		memcpy(y->data, x->data, (size_t)n * npu_dtype_size(x->dtype));
		return NPU_OK;
	}
	wide = malloc((size_t)n * 8);
	if (!wide)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	if (as_int) {
		int64_t *w = wide;

		CAST_SWITCH(CAST_READ, x->dtype, x->data, w, n, (void)0, (void)0)
		if (y->dtype == NPU_DTYPE_BOOL)
			for (i = 0; i < n; i++)
				w[i] = w[i] != 0;
		CAST_SWITCH(CAST_WRITE, y->dtype, y->data, w, n, (void)0, (void)0)
	} else {
		double *w = wide;

		CAST_SWITCH(CAST_READ, x->dtype, x->data, w, n,
			    for (i = 0; i < n; i++)
				w[i] = npu_half_to_float(((const uint16_t *)x->data)[i]),
			    for (i = 0; i < n; i++)
				w[i] = npu_bf16_to_float(((const uint16_t *)x->data)[i]))
		if (y->dtype == NPU_DTYPE_BOOL)
			for (i = 0; i < n; i++)
				w[i] = w[i] != 0;
		/* Float to integer: truncate toward zero, NaN to 0, saturate. */
		if (!npu_dtype_is_float(y->dtype))
			for (i = 0; i < n; i++)
				w[i] = isnan(w[i]) ? 0 : trunc(w[i]);
		for (i = 0; i < n; i++)
			w[i] = cast_saturate(y->dtype, w[i]);
		CAST_SWITCH(CAST_WRITE, y->dtype, y->data, w, n,
			    for (i = 0; i < n; i++)
				((uint16_t *)y->data)[i] = npu_float_to_half((float)w[i]),
			    for (i = 0; i < n; i++)
				((uint16_t *)y->data)[i] = npu_float_to_bf16((float)w[i],
									     ctx->node->opset >= 19))
	}
	free(wide);
	return NPU_OK;
}

NPU_CPU_OP_DEF(cast) = {
	.op_type = "Cast",
	.domain = "",
	.compute = cast_compute,
};

NPU_CPU_OP_DEF(cast_like) = {
	.op_type = "CastLike",
	.domain = "",
	.compute = cast_compute,
};
