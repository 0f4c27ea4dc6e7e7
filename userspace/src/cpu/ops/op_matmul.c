// SPDX-License-Identifier: MIT
/*
 * MatMul (numpy semantics: 1-D promotion, broadcast batch dims) and Gemm,
 * both on npu_sgemm for float (a reference loop for double and the
 * integers); Det (LU with partial pivoting, in double).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "graph/schemas/matmul.h"

/* ---- The type families ---- */

/*
 * y = alpha * op(A) op(B) + beta * y (beta 0: y not read), the reference
 * loop for the non-float families; U is the arithmetic type (unsigned for
 * the integers, so overflow wraps as the spec's integer math does).
 */
#define GEMM_REF(T, U, S)						\
static void npu_gemm_ref_##S(bool ta, bool tb, int64_t m, int64_t n,	\
			     int64_t k, T alpha, const T *a, int64_t lda, \
			     const T *b, int64_t ldb, T beta, T *y)	\
{									\
	int64_t i, j, p;						\
									\
	for (i = 0; i < m; i++)						\
		for (j = 0; j < n; j++) {				\
			U s = 0;					\
									\
			for (p = 0; p < k; p++)				\
				s += (U)(ta ? a[p * lda + i] : a[i * lda + p]) * \
				     (U)(tb ? b[j * ldb + p] : b[p * ldb + j]); \
			s = (U)alpha * s;				\
			if (beta != 0)					\
				s += (U)beta * (U)y[i * n + j];		\
			y[i * n + j] = (T)s;				\
		}							\
}

GEMM_REF(double, double, f64)
GEMM_REF(int64_t, uint64_t, i64)
GEMM_REF(uint64_t, uint64_t, u64)

/* One (m, k) x (k, n) product of type dt; lda / ldb are the row lengths. */
static void npu_gemm_typed(enum npu_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
			   int64_t k, float alpha, const void *a, int64_t lda,
			   const void *b, int64_t ldb, float beta, void *y,
			   struct npu_threadpool *pool)
{
	switch (dt) {
	case NPU_DTYPE_DOUBLE:
		npu_gemm_ref_f64(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, y);
		break;
	case NPU_DTYPE_INT64:
		npu_gemm_ref_i64(ta, tb, m, n, k, (int64_t)alpha, a, lda, b, ldb,
				 (int64_t)beta, y);
		break;
	case NPU_DTYPE_UINT64:
		npu_gemm_ref_u64(ta, tb, m, n, k, (uint64_t)alpha, a, lda, b, ldb,
				 (uint64_t)beta, y);
		break;
	default:
		npu_sgemm(ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha, a, (size_t)lda,
			  b, (size_t)ldb, beta, y, (size_t)n, pool);
		break;
	}
}

/*
 * A constant float B packed at plan time for npu_sgemm_prepacked (rec's
 * 120 x 6625 classifier: 3 MiB re-packed every run otherwise). Shared
 * read-only by every session running the plan.
 */
struct npu_gemm_state {
	int64_t k, n;		/* op(B) is K x N */
	bool trans_b;
	size_t nr;		/* panel width it was packed for */
	float *packed;
};

static npu_status npu_gemm_prepare_b(struct npu_node *node, bool trans_b,
				     struct npu_error *err)
{
	const struct npu_value *bv = node->num_inputs > 1 ? node->inputs[1] : NULL;
	const struct npu_tensor *b = bv ? bv->constant : NULL;
	struct npu_gemm_state *st;
	int64_t k, n;
	size_t floats;

	node->op_state = NULL;
	if (!b || b->dtype != NPU_DTYPE_FLOAT || b->shape.rank != 2)
		return NPU_OK;	/* packed per call */
	k = b->shape.dims[trans_b ? 1 : 0];
	n = b->shape.dims[trans_b ? 0 : 1];
	if (k <= 0 || n <= 0)
		return NPU_OK;
	floats = npu_sgemm_packed_b_floats((size_t)n, (size_t)k);
	st = calloc(1, sizeof(*st));
	if (st)
		st->packed = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
	if (!st || !st->packed) {
		free(st);
		return npu_op_error(err, node, NPU_ERR_NO_MEMORY,
				    "out of memory (%zu bytes of packed B)",
				    floats * sizeof(float));
	}
	st->k = k;
	st->n = n;
	st->trans_b = trans_b;
	st->nr = npu_sgemm_pack_b(trans_b, (size_t)n, (size_t)k, b->data,
				  (size_t)b->shape.dims[1], st->packed);
	node->op_state = st;
	return NPU_OK;
}

static void npu_gemm_release(struct npu_node *node)
{
	struct npu_gemm_state *st = node->op_state;

	if (st)
		free(st->packed);
	free(st);
	node->op_state = NULL;
}

/* B packed by prepare() for exactly this product, or NULL. */
static const struct npu_gemm_state *npu_gemm_packed_for(const struct npu_op_ctx *ctx,
							 bool trans_b, int64_t k,
							 int64_t n)
{
	const struct npu_gemm_state *st = ctx->node->op_state;

	if (!st || ctx->outputs[0]->dtype != NPU_DTYPE_FLOAT ||
	    ctx->inputs[1]->dtype != NPU_DTYPE_FLOAT || st->trans_b != trans_b ||
	    st->k != k || st->n != n)
		return NULL;
	return st;
}

/* ---- MatMul ---- */

static npu_status matmul_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_shape pa, pb, ba, bb, batch;
	const struct npu_shape *ins[2] = { &ba, &bb };
	int64_t m, k, n, r, i, off[2];
	struct npu_bcast bc;
	char *yv = y->data;
	size_t es;

	if (npu_op_needs_widening(ctx, true))
		return npu_op_compute_widened(ctx, true, matmul_compute);
	es = npu_dtype_size(y->dtype);
	npu_matmul_promote(&a->shape, &b->shape, &pa, &pb);
	m = pa.dims[pa.rank - 2];
	k = pa.dims[pa.rank - 1];
	n = pb.dims[pb.rank - 1];
	ba = pa;
	ba.rank -= 2;
	bb = pb;
	bb.rank -= 2;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	if (k == 0) {
		memset(yv, 0, (size_t)npu_op_numel(y) * es);
		return NPU_OK;
	}
	/* B shared by every batch: fold A's batches into M. */
	if (npu_shape_numel(&bb) == 1) {
		const struct npu_gemm_state *st = b->shape.rank == 2 ?
			npu_gemm_packed_for(ctx, false, k, n) : NULL;

		if (st) {
			npu_sgemm_prepacked(false, false, (size_t)(m * npu_shape_numel(&ba)),
					    (size_t)n, (size_t)k, 1.0f, a->data, (size_t)k,
					    b->data, (size_t)n, st->packed, st->nr, 0.0f,
					    (float *)y->data, (size_t)n, ctx->pool);
			return NPU_OK;
		}
		npu_gemm_typed(y->dtype, false, false, m * npu_shape_numel(&ba), n, k, 1.0f,
			       a->data, k, b->data, n, 0.0f, yv, ctx->pool);
		return NPU_OK;
	}
	batch.rank = ba.rank > bb.rank ? ba.rank : bb.rank;
	for (i = 0; i < batch.rank; i++) {
		int ia = i - (batch.rank - ba.rank), ib = i - (batch.rank - bb.rank);
		int64_t da = ia >= 0 ? ba.dims[ia] : 1, db = ib >= 0 ? bb.dims[ib] : 1;

		batch.dims[i] = da == 1 ? db : da;
	}
	npu_bcast_init(&bc, &batch, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, off);
		for (i = 0; i < bc.len; i++) {
			const char *ap = (const char *)a->data +
					 (size_t)((off[0] + i * bc.step[0]) * m * k) * es;
			const char *bp = (const char *)b->data +
					 (size_t)((off[1] + i * bc.step[1]) * k * n) * es;

			npu_gemm_typed(y->dtype, false, false, m, n, k, 1.0f, ap, k, bp, n,
				       0.0f, yv + (size_t)((r * bc.len + i) * m * n) * es,
				       ctx->pool);
		}
	}
	return NPU_OK;
}

static npu_status matmul_prepare(const struct npu_op_def *def, struct npu_node *node,
				 const struct npu_cpu_options *cpu, struct npu_error *err)
{
	(void)def;
	(void)cpu;
	return npu_gemm_prepare_b(node, false, err);
}

NPU_CPU_OP_DEF(matmul) = {
	.op_type = "MatMul",
	.domain = "",
	.compute = matmul_compute,
	.prepare = matmul_prepare,
	.release = npu_gemm_release,
};

/* ---- Gemm ---- */

static npu_status gemm_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
	const struct npu_tensor *c = npu_op_in(ctx, 2);
	struct npu_tensor *y = ctx->outputs[0];
	bool ta = npu_node_attr_int_or(node, "transA", 0) != 0;
	bool tb = npu_node_attr_int_or(node, "transB", 0) != 0;
	float alpha = npu_node_attr_float_or(node, "alpha", 1.0f);
	float beta = npu_node_attr_float_or(node, "beta", 1.0f);
	int64_t m = y->shape.dims[0], n = y->shape.dims[1];
	int64_t k = ta ? a->shape.dims[0] : a->shape.dims[1];
	const struct npu_gemm_state *st;

	if (npu_op_needs_widening(ctx, true))
		return npu_op_compute_widened(ctx, true, gemm_compute);
	if (m * n == 0)
		return NPU_OK;
	if (c && beta != 0.0f)
		npu_op_broadcast_copy(c, y);
	else
		beta = 0.0f;
	if (k == 0 && y->dtype == NPU_DTYPE_FLOAT) {
		int64_t i;
		float *yv = y->data;

		for (i = 0; i < m * n; i++)
			yv[i] = beta == 0.0f ? 0.0f : beta * yv[i];
		return NPU_OK;
	}
	st = npu_gemm_packed_for(ctx, tb, k, n);
	if (st) {
		npu_sgemm_prepacked(ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha,
				    a->data, (size_t)a->shape.dims[1], b->data,
				    (size_t)b->shape.dims[1], st->packed, st->nr, beta,
				    y->data, (size_t)n, ctx->pool);
		return NPU_OK;
	}
	npu_gemm_typed(y->dtype, ta, tb, m, n, k, alpha, a->data, a->shape.dims[1], b->data,
		       b->shape.dims[1], beta, y->data, ctx->pool);
	return NPU_OK;
}

static npu_status gemm_prepare(const struct npu_op_def *def, struct npu_node *node,
			       const struct npu_cpu_options *cpu, struct npu_error *err)
{
	(void)def;
	(void)cpu;
	return npu_gemm_prepare_b(node, npu_node_attr_int_or(node, "transB", 0) != 0,
				  err);
}

NPU_CPU_OP_DEF(gemm) = {
	.op_type = "Gemm",
	.domain = "",
	.compute = gemm_compute,
	.prepare = gemm_prepare,
	.release = npu_gemm_release,
};

/* ---- Det: determinants of the trailing square matrices ---- */

/* LU decomposition with partial pivoting, in double. */
static double npu_det(double *a, int64_t m)
{
	double det = 1;
	int64_t i, j, k, p;

	for (k = 0; k < m; k++) {
		p = k;
		for (i = k + 1; i < m; i++)
			if (fabs(a[i * m + k]) > fabs(a[p * m + k]))
				p = i;
		if (a[p * m + k] == 0)
			return 0;
		if (p != k) {
			for (j = 0; j < m; j++) {
				double t = a[k * m + j];

				a[k * m + j] = a[p * m + j];
				a[p * m + j] = t;
			}
			det = -det;
		}
		det *= a[k * m + k];
		for (i = k + 1; i < m; i++) {
			double f = a[i * m + k] / a[k * m + k];

			for (j = k; j < m; j++)
				a[i * m + j] -= f * a[k * m + j];
		}
	}
	return det;
}

static npu_status det_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t m = x->shape.dims[x->shape.rank - 1], mats = npu_op_numel(y);
	int64_t b, i;
	double *a;

	a = malloc((size_t)(m > 0 ? m * m : 1) * sizeof(*a));
	if (!a)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	for (b = 0; b < mats; b++) {
		double d;

		for (i = 0; i < m * m; i++)
			a[i] = x->dtype == NPU_DTYPE_DOUBLE ?
			       ((const double *)x->data)[b * m * m + i] :
			       ((const float *)x->data)[b * m * m + i];
		d = npu_det(a, m);
		if (y->dtype == NPU_DTYPE_DOUBLE)
			((double *)y->data)[b] = d;
		else
			((float *)y->data)[b] = (float)d;
	}
	free(a);
	return NPU_OK;
}

NPU_CPU_OP_DEF(det) = {
	.op_type = "Det",
	.domain = "",
	.compute = det_compute,
};
