// SPDX-License-Identifier: MIT
/*
 * cpu_gemm_ukernels.c - GEMM register tiles, one per ISA:
 *   AVX-512: 14 x 32 (28 zmm accumulators, B row in 2 zmm, A broadcast)
 *   AVX2+FMA: 6 x 16 (12 ymm accumulators)
 *   portable: 4 x 8 in plain C
 * Each reads packed panels (see npu_gemm_pack_a/b) and updates a tile of
 * C with alpha / beta; beta == 0 never reads C. Edge tiles (m < mr,
 * n < nr) store through masks / row checks; on AVX-512 an edge of at
 * most 8 rows runs a tile of 1, 2, 4 or 8 rows instead of all 14.
 */
#include <immintrin.h>

#include "cpu_kernels_internal.h"

/* ---- AVX-512 ---- */

#define AVX512_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) \
	X(10) X(11) X(12) X(13)

/*
 * The tile over a list of rows: ROWS(X) expands X(i) for each row i the
 * variant computes. Every row's sums are the same FMA chain in every
 * variant, so a C element has the same bits whichever variant runs it.
 */
#define AVX512_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), \
	c##i##1 = _mm512_setzero_ps();
#define AVX512_PREF(i) if (i < m) { _mm_prefetch((const char *)(c + i * ldc), \
		_MM_HINT_T0); _mm_prefetch((const char *)(c + i * ldc + 31), \
		_MM_HINT_T0); }
#define AVX512_STEP(i) { __m512 ai = _mm512_set1_ps(a[i]); \
		c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0); \
		c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1); }
#define AVX512_STORE0(i) if (i < m) { float *ci = c + i * ldc; \
		_mm512_mask_storeu_ps(ci, k0, _mm512_mul_ps(va, c##i##0)); \
		_mm512_mask_storeu_ps(ci + 16, k1, \
				      _mm512_mul_ps(va, c##i##1)); }
#define AVX512_STORE(i) if (i < m) { float *ci = c + i * ldc; \
		__m512 o0 = _mm512_maskz_loadu_ps(k0, ci); \
		__m512 o1 = _mm512_maskz_loadu_ps(k1, ci + 16); \
		_mm512_mask_storeu_ps(ci, k0, _mm512_fmadd_ps(vb, o0, \
				      _mm512_mul_ps(va, c##i##0))); \
		_mm512_mask_storeu_ps(ci + 16, k1, _mm512_fmadd_ps(vb, o1, \
				      _mm512_mul_ps(va, c##i##1))); }
#define AVX512_UKERNEL(name, ROWS)					\
__attribute__((target(NPU_TARGET_AVX512)))				\
static void name(size_t kc, const float *a, const float *b, float *c,	\
		 size_t ldc, float alpha, float beta, size_t m, size_t n) \
{									\
	ROWS(AVX512_DECL)						\
	__mmask16 k0, k1;						\
	__m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);	\
	size_t kk;							\
									\
	/* The C tile is touched only at the end: start fetching it now. */ \
	ROWS(AVX512_PREF)						\
	for (kk = 0; kk < kc; kk++) {					\
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16); \
									\
		_mm_prefetch((const char *)(b + 32 * 8), _MM_HINT_T0);	\
		ROWS(AVX512_STEP)					\
		a += 14;						\
		b += 32;						\
	}								\
									\
	k0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);		\
	k1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1); \
	if (beta == 0.0f) {						\
		ROWS(AVX512_STORE0)					\
	} else {							\
		ROWS(AVX512_STORE)					\
	}								\
}

/*
 * Short tiles for m < 14 (a batch-1 Gemm / MatMul is m = 1, a recurrent
 * step m = batch): the full tile would run all 14 rows' FMAs for them.
 */
#define AVX512_ROWS1(X) X(0)
#define AVX512_ROWS2(X) X(0) X(1)
#define AVX512_ROWS4(X) X(0) X(1) X(2) X(3)
#define AVX512_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
AVX512_UKERNEL(npu_ukernel_avx512_14, AVX512_ROWS)
AVX512_UKERNEL(npu_ukernel_avx512_1, AVX512_ROWS1)
AVX512_UKERNEL(npu_ukernel_avx512_2, AVX512_ROWS2)
AVX512_UKERNEL(npu_ukernel_avx512_4, AVX512_ROWS4)
AVX512_UKERNEL(npu_ukernel_avx512_8, AVX512_ROWS8)

__attribute__((target(NPU_TARGET_AVX512)))
static void npu_ukernel_avx512(size_t kc, const float *a, const float *b,
			       float *c, size_t ldc, float alpha, float beta,
			       size_t m, size_t n)
{
	if (m > 8)
		npu_ukernel_avx512_14(kc, a, b, c, ldc, alpha, beta, m, n);
	else if (m > 4)
		npu_ukernel_avx512_8(kc, a, b, c, ldc, alpha, beta, m, n);
	else if (m > 2)
		npu_ukernel_avx512_4(kc, a, b, c, ldc, alpha, beta, m, n);
	else if (m > 1)
		npu_ukernel_avx512_2(kc, a, b, c, ldc, alpha, beta, m, n);
	else
		npu_ukernel_avx512_1(kc, a, b, c, ldc, alpha, beta, m, n);
}

/*
 * The same tile with B read in place (indirect GEMM): step kk of B is the
 * n floats at bp[kk] + off, loaded under a mask, so no packed copy of B
 * is made. C = sum + beta * C (alpha 1).
 */
__attribute__((target(NPU_TARGET_AVX512)))
static void npu_ukernel_ind_avx512(size_t kc, const float *a,
				   const float *const *bp, size_t off,
				   float *c, size_t ldc, float beta,
				   size_t m, size_t n)
{
#define DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), \
	c##i##1 = _mm512_setzero_ps();
	AVX512_ROWS(DECL)
#undef DECL
	__mmask16 k0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
	__mmask16 k1 = n >= 32 ? 0xffff : n <= 16 ? 0 :
		       (__mmask16)((1u << (n - 16)) - 1);
	__m512 vb = _mm512_set1_ps(beta);
	size_t kk;

	for (kk = 0; kk < kc; kk++) {
		const float *b = bp[kk] + off;
		__m512 b0 = _mm512_maskz_loadu_ps(k0, b);
		__m512 b1 = _mm512_maskz_loadu_ps(k1, b + 16);

		if (kk + 4 < kc)
			_mm_prefetch((const char *)(bp[kk + 4] + off), _MM_HINT_T0);
#define STEP(i) { __m512 ai = _mm512_set1_ps(a[i]); \
		c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0); \
		c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1); }
		AVX512_ROWS(STEP)
#undef STEP
		a += 14;
	}
	if (beta == 0.0f) {
#define STORE(i) if (i < m) { float *ci = c + i * ldc; \
		_mm512_mask_storeu_ps(ci, k0, c##i##0); \
		_mm512_mask_storeu_ps(ci + 16, k1, c##i##1); }
		AVX512_ROWS(STORE)
#undef STORE
	} else {
#define STORE(i) if (i < m) { float *ci = c + i * ldc; \
		__m512 o0 = _mm512_maskz_loadu_ps(k0, ci); \
		__m512 o1 = _mm512_maskz_loadu_ps(k1, ci + 16); \
		_mm512_mask_storeu_ps(ci, k0, _mm512_fmadd_ps(vb, o0, c##i##0)); \
		_mm512_mask_storeu_ps(ci + 16, k1, \
				      _mm512_fmadd_ps(vb, o1, c##i##1)); }
		AVX512_ROWS(STORE)
#undef STORE
	}
}

/* ---- AVX2 + FMA ---- */

#define AVX2_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

__attribute__((target(NPU_TARGET_AVX2)))
static void npu_avx2_store_row(float *ci, __m256 v0, __m256 v1, float alpha,
			       float beta, size_t n)
{
	static const int32_t ones[16] = {
		-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	__m256 va = _mm256_set1_ps(alpha);

	v0 = _mm256_mul_ps(va, v0);
	v1 = _mm256_mul_ps(va, v1);
	if (n == 16) {
		if (beta != 0.0f) {
			__m256 vb = _mm256_set1_ps(beta);

			v0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), v0);
			v1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), v1);
		}
		_mm256_storeu_ps(ci, v0);
		_mm256_storeu_ps(ci + 8, v1);
	} else {
		size_t n0 = n < 8 ? n : 8, n1 = n - n0;
		__m256i m0 = _mm256_loadu_si256((const __m256i *)(ones + 8 - n0));
		__m256i m1 = _mm256_loadu_si256((const __m256i *)(ones + 8 - n1));

		if (beta != 0.0f) {
			__m256 vb = _mm256_set1_ps(beta);

			v0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(ci, m0), v0);
			v1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(ci + 8, m1),
					     v1);
		}
		_mm256_maskstore_ps(ci, m0, v0);
		_mm256_maskstore_ps(ci + 8, m1, v1);
	}
}

__attribute__((target(NPU_TARGET_AVX2)))
static void npu_ukernel_avx2(size_t kc, const float *a, const float *b,
			     float *c, size_t ldc, float alpha, float beta,
			     size_t m, size_t n)
{
#define DECL(i) __m256 c##i##0 = _mm256_setzero_ps(), \
	c##i##1 = _mm256_setzero_ps();
	AVX2_ROWS(DECL)
#undef DECL
	size_t kk;

	for (kk = 0; kk < kc; kk++) {
		__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);

#define STEP(i) { __m256 ai = _mm256_broadcast_ss(a + i); \
		c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0); \
		c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1); }
		AVX2_ROWS(STEP)
#undef STEP
		a += 6;
		b += 16;
	}
#define STORE(i) if (i < m) \
	npu_avx2_store_row(c + i * ldc, c##i##0, c##i##1, alpha, beta, n);
	AVX2_ROWS(STORE)
#undef STORE
}

/* ---- Portable ---- */

#define PORT_MR 4
#define PORT_NR 8

static void npu_ukernel_portable(size_t kc, const float *a, const float *b,
				 float *c, size_t ldc, float alpha, float beta,
				 size_t m, size_t n)
{
	float acc[PORT_MR][PORT_NR] = { { 0 } };
	size_t kk, i, j;

	for (kk = 0; kk < kc; kk++) {
		for (i = 0; i < PORT_MR; i++)
			for (j = 0; j < PORT_NR; j++)
				acc[i][j] += a[i] * b[j];
		a += PORT_MR;
		b += PORT_NR;
	}
	for (i = 0; i < m; i++) {
		float *ci = c + i * ldc;

		for (j = 0; j < n; j++)
			ci[j] = beta == 0.0f ? alpha * acc[i][j] :
				alpha * acc[i][j] + beta * ci[j];
	}
}

/*
 * Blocking: the kc x nr B micro-panel stays in L1 (48 KiB) while the
 * mc x kc A block streams from L2 (1 MiB on Zen 5).
 */
static const struct npu_gemm_ukernel npu_ukernels[] = {
	[NPU_CPU_ISA_PORTABLE] = { PORT_MR, PORT_NR, 128, 512, 256,
				   npu_ukernel_portable, NULL },
	[NPU_CPU_ISA_AVX2] = { 6, 16, 192, 512, 256, npu_ukernel_avx2, NULL },
	[NPU_CPU_ISA_AVX512] = { 14, 32, 224, 512, 256, npu_ukernel_avx512,
				 npu_ukernel_ind_avx512 },
};

const struct npu_gemm_ukernel *npu_gemm_ukernel_for(enum npu_cpu_isa isa)
{
	return &npu_ukernels[isa];
}
