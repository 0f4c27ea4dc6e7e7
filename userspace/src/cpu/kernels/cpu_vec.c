// SPDX-License-Identifier: MIT
/*
 * cpu_vec.c - the row kernels of cpu_vec_body.h instantiated for AVX-512,
 * AVX2+FMA and plain C, and the public elementwise entry points.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu_kernels_internal.h"

/* ---- AVX-512 ---- */
#define NPU_V_FN(name) name##_avx512
#define NPU_V_TARGET __attribute__((target(NPU_TARGET_AVX512)))
#define V __m512
#define VL 16
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_SET1(f) _mm512_set1_ps(f)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_ROUND(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | \
					   _MM_FROUND_NO_EXC)
#define V_LDEXP(v, n) _mm512_scalef_ps(v, n)
#define V_SEL_GT(a, b, x, y) _mm512_mask_blend_ps( \
	_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x)
#define V_LOAD_S2(p) _mm512_permutex2var_ps(_mm512_loadu_ps(p), \
	_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, \
			  28, 30), _mm512_loadu_ps((p) + 16))
#define V_GATHER(p, s) _mm512_i32gather_ps(_mm512_mullo_epi32( \
	_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, \
			  15), _mm512_set1_epi32((int)(s))), p, 4)
#define V_LOAD_N(p, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), p)
#define V_STORE_N(p, v, n) _mm512_mask_storeu_ps(p, (__mmask16)((1u << (n)) - 1), v)
#define V_STORE_ZIP(p, a, b) do { \
	_mm512_storeu_ps(p, _mm512_permutex2var_ps(a, _mm512_setr_epi32( \
		0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), b)); \
	_mm512_storeu_ps((p) + 16, _mm512_permutex2var_ps(a, _mm512_setr_epi32( \
		8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), b)); \
} while (0)
#include "cpu_vec_body.h"
#undef NPU_V_FN
#undef NPU_V_TARGET
#undef V
#undef VL
#undef V_LOAD
#undef V_STORE
#undef V_SET1
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_DIV
#undef V_FMA
#undef V_MAX
#undef V_MIN
#undef V_ROUND
#undef V_LDEXP
#undef V_SEL_GT
#undef V_LOAD_S2
#undef V_GATHER
#undef V_STORE_ZIP
#undef V_LOAD_N
#undef V_STORE_N

/* ---- AVX2 + FMA ---- */
__attribute__((target(NPU_TARGET_AVX2)))
static inline __m256 npu_ldexp_avx2(__m256 v, __m256 n)
{
	/* Two steps keep each power of two a normal float. */
	__m256i ni = _mm256_cvtps_epi32(n);
	__m256i h = _mm256_srai_epi32(ni, 1), l = _mm256_sub_epi32(ni, h);
	__m256i bias = _mm256_set1_epi32(127);

	v = _mm256_mul_ps(v, _mm256_castsi256_ps(_mm256_slli_epi32(
				_mm256_add_epi32(h, bias), 23)));
	return _mm256_mul_ps(v, _mm256_castsi256_ps(_mm256_slli_epi32(
				_mm256_add_epi32(l, bias), 23)));
}

__attribute__((target(NPU_TARGET_AVX2)))
static inline __m256 npu_load_s2_avx2(const float *p)
{
	__m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);

	return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(
			_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
}

/* Lanes 0 .. n - 1 set: masked loads and stores of a row's tail. */
__attribute__((target(NPU_TARGET_AVX2)))
static inline __m256i npu_mask_n_avx2(size_t n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
				  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define NPU_V_FN(name) name##_avx2
#define NPU_V_TARGET __attribute__((target(NPU_TARGET_AVX2)))
#define V __m256
#define VL 8
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_SET1(f) _mm256_set1_ps(f)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_ROUND(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | \
				   _MM_FROUND_NO_EXC)
#define V_LDEXP(v, n) npu_ldexp_avx2(v, n)
#define V_SEL_GT(a, b, x, y) _mm256_blendv_ps(y, x, \
	_mm256_cmp_ps(a, b, _CMP_GT_OQ))
#define V_LOAD_S2(p) npu_load_s2_avx2(p)
#define V_GATHER(p, s) _mm256_i32gather_ps(p, _mm256_mullo_epi32( \
	_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), \
	_mm256_set1_epi32((int)(s))), 4)
#define V_LOAD_N(p, n) _mm256_maskload_ps(p, npu_mask_n_avx2(n))
#define V_STORE_N(p, v, n) _mm256_maskstore_ps(p, npu_mask_n_avx2(n), v)
#define V_STORE_ZIP(p, a, b) do { \
	__m256 zl_ = _mm256_unpacklo_ps(a, b), zh_ = _mm256_unpackhi_ps(a, b); \
	_mm256_storeu_ps(p, _mm256_permute2f128_ps(zl_, zh_, 0x20)); \
	_mm256_storeu_ps((p) + 8, _mm256_permute2f128_ps(zl_, zh_, 0x31)); \
} while (0)
#include "cpu_vec_body.h"
#undef NPU_V_FN
#undef NPU_V_TARGET
#undef V
#undef VL
#undef V_LOAD
#undef V_STORE
#undef V_SET1
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_DIV
#undef V_FMA
#undef V_MAX
#undef V_MIN
#undef V_ROUND
#undef V_LDEXP
#undef V_SEL_GT
#undef V_LOAD_S2
#undef V_GATHER
#undef V_STORE_ZIP
#undef V_LOAD_N
#undef V_STORE_N

/* ---- Portable: one lane ---- */
static inline float npu_maxf(float a, float b)
{
	return a > b ? a : b;
}

static inline float npu_minf(float a, float b)
{
	return a < b ? a : b;
}

#define NPU_V_FN(name) name##_portable
#define NPU_V_TARGET
#define V float
#define VL 1
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_SET1(f) (f)
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_MAX(a, b) npu_maxf(a, b)
#define V_MIN(a, b) npu_minf(a, b)
#define V_ROUND(v) rintf(v)
#define V_LDEXP(v, n) ldexpf(v, (int)(n))
#define V_SEL_GT(a, b, x, y) ((a) > (b) ? (x) : (y))
#define V_LOAD_S2(p) (*(p))
#define V_GATHER(p, s) (*(p))
#define V_STORE_ZIP(p, a, b) ((p)[0] = (a), (p)[1] = (b))
/* One lane: a row has no tail. */
#define V_LOAD_N(p, n) (*(p))
#define V_STORE_N(p, v, n) (*(p) = (v))
#include "cpu_vec_body.h"

void npu_vec_act_f32(const struct npu_cpu_act_params *act, const float *x,
		     float *y, size_t n)
{
	npu_vec_ops_get()->act(act, 0.0f, x, y, n);
}

void npu_vec_exp_f32(const float *x, float *y, size_t n)
{
	npu_vec_ops_get()->exp(x, y, n);
}

void npu_vec_tanh_f32(const float *x, float *y, size_t n)
{
	npu_vec_ops_get()->tanh(x, y, n);
}

void npu_vec_erf_f32(const float *x, float *y, size_t n)
{
	npu_vec_ops_get()->erf(x, y, n);
}

void npu_vec_binary_f32(enum npu_vec_binop op, const float *a, size_t sa,
			const float *b, size_t sb, float *y, size_t n)
{
	npu_vec_ops_get()->binary(op, a, sa, b, sb, y, n);
}

void npu_vec_axpb_f32(const float *x, float *y, size_t n, float a, float b)
{
	npu_vec_ops_get()->axpb(x, y, n, a, b);
}

float npu_vec_sum_f32(const float *x, size_t n)
{
	return npu_vec_ops_get()->sum(x, n);
}

float npu_vec_max_f32(const float *x, size_t n)
{
	return npu_vec_ops_get()->max(x, n);
}
