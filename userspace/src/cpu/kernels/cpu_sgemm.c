// SPDX-License-Identifier: MIT
/*
 * cpu_sgemm.c - packed single-precision GEMM.
 *
 * Both operands are packed into register-tile panels over their whole
 * depth (shared, read-only afterwards), in parallel: A per call, B per
 * call too unless it is a constant packed at plan time
 * (npu_sgemm_pack_b). The
 * output is then cut into mc x nc blocks, one pool task each; a task
 * walks the depth in kc steps and runs the ISA's register tile over the
 * block. Every C element sees the same arithmetic whatever the blocking,
 * so results do not depend on the thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_internal.h"

void npu_gemm_pack_a(bool trans, const float *a, size_t lda, size_t m0,
		     size_t m, size_t k, size_t mr, float *dst)
{
	size_t rows = m < mr ? m : mr, r, kk;

	if (!trans) {
		for (r = 0; r < rows; r++) {
			const float *src = a + (m0 + r) * lda;

			for (kk = 0; kk < k; kk++)
				dst[kk * mr + r] = src[kk];
		}
	} else {
		for (kk = 0; kk < k; kk++)
			memcpy(dst + kk * mr, a + kk * lda + m0,
			       rows * sizeof(float));
	}
	for (r = rows; r < mr; r++)
		for (kk = 0; kk < k; kk++)
			dst[kk * mr + r] = 0.0f;
}

void npu_gemm_pack_b(bool trans, const float *b, size_t ldb, size_t n0,
		     size_t n, size_t k, size_t nr, float *dst)
{
	size_t cols = n < nr ? n : nr, j, kk;

	if (!trans) {
		for (kk = 0; kk < k; kk++) {
			memcpy(dst + kk * nr, b + kk * ldb + n0,
			       cols * sizeof(float));
			for (j = cols; j < nr; j++)
				dst[kk * nr + j] = 0.0f;
		}
	} else {
		for (j = 0; j < cols; j++) {
			const float *src = b + (n0 + j) * ldb;

			for (kk = 0; kk < k; kk++)
				dst[kk * nr + j] = src[kk];
		}
		for (j = cols; j < nr; j++)
			for (kk = 0; kk < k; kk++)
				dst[kk * nr + j] = 0.0f;
	}
}

void npu_gemm_macro(const struct npu_gemm_ukernel *uk, size_t mc, size_t nc,
		    size_t kc, const float *a, size_t a_ps, const float *b,
		    size_t b_ps, float *c, size_t ldc, float alpha,
		    float beta)
{
	size_t mr = uk->mr, nr = uk->nr, ir, jr;

	for (jr = 0; jr < nc; jr += nr) {
		const float *bp = b + jr / nr * b_ps;
		size_t n = nc - jr < nr ? nc - jr : nr;

		for (ir = 0; ir < mc; ir += mr) {
			size_t m = mc - ir < mr ? mc - ir : mr;

			uk->fn(kc, a + ir / mr * a_ps, bp, c + ir * ldc + jr,
			       ldc, alpha, beta, m, n);
		}
	}
}

struct npu_sgemm_job {
	const struct npu_gemm_ukernel *uk;
	bool trans_a, trans_b;
	size_t m, n, k;
	float alpha, beta;
	const float *a, *b;
	size_t lda, ldb, ldc;
	float *c;
	float *pa, *pb_out;	/* packed A, and B when packed per call */
	const float *pb;	/* packed B: pb_out, or packed at plan time */
	size_t a_panels, b_panels;
	size_t mc, nc, kc;	/* block sizes */
	size_t m_blocks, n_blocks;
};

static void npu_sgemm_pack_task(void *ctx, size_t i)
{
	struct npu_sgemm_job *job = ctx;
	size_t mr = job->uk->mr, nr = job->uk->nr;

	if (i < job->a_panels) {
		npu_gemm_pack_a(job->trans_a, job->a, job->lda, i * mr,
				job->m - i * mr, job->k, mr,
				job->pa + i * job->k * mr);
		return;
	}
	i -= job->a_panels;
	npu_gemm_pack_b(job->trans_b, job->b, job->ldb, i * nr,
			job->n - i * nr, job->k, nr, job->pb_out + i * job->k * nr);
}

static void npu_sgemm_block_task(void *ctx, size_t i)
{
	struct npu_sgemm_job *job = ctx;
	const struct npu_gemm_ukernel *uk = job->uk;
	size_t mb = i / job->n_blocks, nb = i % job->n_blocks;
	size_t m0 = mb * job->mc, n0 = nb * job->nc;
	size_t mc = job->m - m0 < job->mc ? job->m - m0 : job->mc;
	size_t nc = job->n - n0 < job->nc ? job->n - n0 : job->nc;
	size_t k0;

	for (k0 = 0; k0 < job->k; k0 += job->kc) {
		size_t kc = job->k - k0 < job->kc ? job->k - k0 : job->kc;

		npu_gemm_macro(uk, mc, nc, kc,
			       job->pa + m0 * job->k + k0 * uk->mr,
			       job->k * uk->mr,
			       job->pb + n0 * job->k + k0 * uk->nr,
			       job->k * uk->nr, job->c + m0 * job->ldc + n0,
			       job->ldc, job->alpha, k0 ? 1.0f : job->beta);
	}
}

/* C = beta * C for the degenerate products (k == 0 or alpha == 0). */
static void npu_sgemm_scale_c(size_t m, size_t n, float beta, float *c,
			      size_t ldc)
{
	size_t i, j;

	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++)
			c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

/* Unpacked fallback when the packing buffers cannot be allocated. */
static void npu_sgemm_naive(bool trans_a, bool trans_b, size_t m, size_t n,
			    size_t k, float alpha, const float *a, size_t lda,
			    const float *b, size_t ldb, float beta, float *c,
			    size_t ldc)
{
	size_t i, j, kk;

	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			float acc = 0.0f;

			for (kk = 0; kk < k; kk++)
				acc += (trans_a ? a[kk * lda + i] : a[i * lda + kk]) *
				       (trans_b ? b[j * ldb + kk] : b[kk * ldb + j]);
			c[i * ldc + j] = beta == 0.0f ? alpha * acc :
					 alpha * acc + beta * c[i * ldc + j];
		}
	}
}

/*
 * Products below this many multiply-adds (about 30 us on one core) stay
 * on the calling thread: two pool runs (pack, then blocks), and blocks
 * reading panels the other core packed, cost more than half of that.
 */
#define NPU_SGEMM_THREAD_MIN_MACS (2.0 * 1024 * 1024)

/* Split 'len' into blocks of at most 'max' (multiples of 'unit'), evenly. */
static size_t npu_block_size(size_t len, size_t max, size_t blocks_min,
			     size_t unit)
{
	size_t blocks = npu_div_up(len, max);

	if (blocks < blocks_min)
		blocks = blocks_min;
	if (blocks > npu_div_up(len, unit))
		blocks = npu_div_up(len, unit);
	return npu_round_up(npu_div_up(len, blocks), unit);
}

size_t npu_sgemm_packed_b_floats(size_t n, size_t k)
{
	const struct npu_gemm_ukernel *uk = npu_gemm_ukernel_for(npu_cpu_isa_get());

	return npu_div_up(n, uk->nr) * uk->nr * k;
}

size_t npu_sgemm_pack_b(bool trans_b, size_t n, size_t k, const float *b,
			size_t ldb, float *packed)
{
	const struct npu_gemm_ukernel *uk = npu_gemm_ukernel_for(npu_cpu_isa_get());
	size_t nr = uk->nr, j;

	for (j = 0; j < npu_div_up(n, nr); j++)
		npu_gemm_pack_b(trans_b, b, ldb, j * nr, n - j * nr, k, nr,
				packed + j * k * nr);
	return nr;
}

void npu_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
	       float alpha, const float *a, size_t lda, const float *b,
	       size_t ldb, float beta, float *c, size_t ldc,
	       struct npu_threadpool *pool)
{
	npu_sgemm_prepacked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
			    NULL, 0, beta, c, ldc, pool);
}

void npu_sgemm_prepacked(bool trans_a, bool trans_b, size_t m, size_t n,
			 size_t k, float alpha, const float *a, size_t lda,
			 const float *b, size_t ldb, const float *packed_b,
			 size_t packed_nr, float beta, float *c, size_t ldc,
			 struct npu_threadpool *pool)
{
	const struct npu_gemm_ukernel *uk = npu_gemm_ukernel_for(npu_cpu_isa_get());
	struct npu_sgemm_job job = {
		.uk = uk, .trans_a = trans_a, .trans_b = trans_b,
		.m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
		.a = a, .b = b, .lda = lda, .ldb = ldb, .ldc = ldc, .c = c,
	};
	size_t threads = (size_t)npu_threadpool_size(pool), m_min = 1;
	size_t a_bytes, b_bytes;
	float *own = NULL;

	if (!m || !n)
		return;
	if (!k || alpha == 0.0f) {
		npu_sgemm_scale_c(m, n, beta, c, ldc);
		return;
	}
	if (packed_nr != uk->nr)
		packed_b = NULL;
	job.a_panels = npu_div_up(m, uk->mr);
	job.b_panels = npu_div_up(n, uk->nr);
	a_bytes = npu_round_up(job.a_panels * uk->mr * k * sizeof(float), 64);
	b_bytes = packed_b ? 0 :
		  npu_round_up(job.b_panels * uk->nr * k * sizeof(float), 64);
	job.pa = npu_threadpool_scratch(pool, a_bytes + b_bytes);
	if (!job.pa)
		job.pa = own = aligned_alloc(64, a_bytes + b_bytes);
	if (!job.pa) {
		npu_sgemm_naive(trans_a, trans_b, m, n, k, alpha, a, lda, b,
				ldb, beta, c, ldc);
		return;
	}
	job.pb_out = job.pa + a_bytes / sizeof(float);
	job.pb = packed_b ? packed_b : job.pb_out;
	/* Small products stay on the calling thread. */
	if ((double)m * n * k < NPU_SGEMM_THREAD_MIN_MACS)
		pool = NULL, threads = 1;
	npu_threadpool_run(pool, npu_sgemm_pack_task, &job,
			   job.a_panels + (packed_b ? 0 : job.b_panels));

	job.kc = npu_block_size(k, uk->kc, 1, 1);
	/* Enough blocks that every thread gets a few. */
	if (threads > 1 && npu_div_up(n, uk->nc) * npu_div_up(m, uk->mc) <
			   3 * threads)
		m_min = npu_div_up(3 * threads, npu_div_up(n, uk->nc));
	job.mc = npu_block_size(m, uk->mc, m_min, uk->mr);
	job.m_blocks = npu_div_up(m, job.mc);
	job.nc = npu_block_size(n, uk->nc,
				npu_div_up(3 * threads, job.m_blocks), uk->nr);
	if (threads == 1)
		job.nc = npu_block_size(n, uk->nc, 1, uk->nr);
	job.n_blocks = npu_div_up(n, job.nc);
	npu_threadpool_run(pool, npu_sgemm_block_task, &job,
			   job.m_blocks * job.n_blocks);
	free(own);
}
