// SPDX-License-Identifier: MIT
/*
 * npu_kern_avx2.c - AVX2 kernels.
 *
 * Bytes are sign-extended to int16 and the zero points subtracted there:
 * (a - za) and (b - zb) lie in -255..255, so each vpmaddwd pair sum is at
 * most 2 * 255 * 255 and never overflows its int32 lane. That computes the
 * exact sum directly (NPU_DOT_EXACT), no correction terms needed.
 * The GEMM tile is 4 rows x 2 columns: 8 accumulators plus operands fit
 * the 16 ymm registers.
 */
#include "npu_ops_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define NPU_TGT __attribute__((target("avx2")))
#define NPU_INLINE static inline __attribute__((always_inline))

NPU_TGT NPU_INLINE __m256i ld16(const int8_t *p, __m256i zp)
{
	return _mm256_sub_epi16(_mm256_cvtepi8_epi16(
		_mm_loadu_si128((const __m128i *)(const void *)p)), zp);
}

/* [sum v0, sum v1, sum v2, sum v3] */
NPU_TGT NPU_INLINE __m128i hsum4(__m256i v0, __m256i v1, __m256i v2, __m256i v3)
{
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1),
				      _mm256_hadd_epi32(v2, v3));

	return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

NPU_TGT static void gemm_avx2(const struct npu_gemm *g)
{
	const struct npu_rq *rq = &g->rq;
	const __m256i za = _mm256_set1_epi16((int16_t)g->za);
	const __m256i zb = _mm256_set1_epi16((int16_t)g->zb);
	uint32_t m = g->m, n = g->n, k = g->k;

	for (uint32_t i0 = 0; i0 < m; i0 += 4) {
		/* Past m, repeat the last row and drop its results. */
		const int8_t *a[4];
		uint32_t mr = m - i0 < 4 ? m - i0 : 4;

		for (uint32_t r = 0; r < 4; r++)
			a[r] = g->arow[r < mr ? i0 + r : m - 1];
		for (uint32_t j0 = 0; j0 < n; j0 += 2) {
			const int8_t *b0 = g->b + (size_t)j0 * g->ldb;
			const int8_t *b1 = g->b + (size_t)(j0 + 1 < n ? j0 + 1 : j0) * g->ldb;
			__m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00;
			__m256i c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
			uint32_t s[4][2], kk = 0;
			__m128i h;

			for (; kk + 16 <= k; kk += 16) {
				__m256i a0 = ld16(a[0] + kk, za), a1 = ld16(a[1] + kk, za);
				__m256i a2 = ld16(a[2] + kk, za), a3 = ld16(a[3] + kk, za);
				__m256i w = ld16(b0 + kk, zb);

				c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(a0, w));
				c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(a1, w));
				c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(a2, w));
				c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(a3, w));
				w = ld16(b1 + kk, zb);
				c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(a0, w));
				c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(a1, w));
				c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(a2, w));
				c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(a3, w));
			}
			h = hsum4(c00, c01, c10, c11);
			_mm_storeu_si128((void *)s[0], h);
			h = hsum4(c20, c21, c30, c31);
			_mm_storeu_si128((void *)s[2], h);
			for (; kk < k; kk++)
				for (uint32_t r = 0; r < 4; r++) {
					s[r][0] += (uint32_t)((a[r][kk] - g->za) * (b0[kk] - g->zb));
					s[r][1] += (uint32_t)((a[r][kk] - g->za) * (b1[kk] - g->zb));
				}
			for (uint32_t r = 0; r < mr; r++)
				for (uint32_t j = 0; j < 2 && j0 + j < n; j++) {
					uint32_t acc = s[r][j] + (uint32_t)rq->col[j0 + j];

					if (g->row)
						acc += (uint32_t)g->row[i0 + r];
					g->orow[i0 + r][j0 + j] =
						npu_requant((int32_t)acc, rq->mult[j0 + j],
							    (uint32_t)rq->shift[j0 + j],
							    rq->zp_out, rq->act_min,
							    rq->act_max);
				}
		}
	}
}

/* Depthwise: 8 channels per vector, scalar requantization. */
NPU_TGT static void dw_avx2(const struct npu_dw *d)
{
	const struct npu_rq *rq = &d->rq;
	const __m256i zp = _mm256_set1_epi32(d->zp_in);

	for (uint32_t oh = d->oh_begin; oh < d->oh_end; oh++)
	for (uint32_t ow = 0; ow < d->out_w; ow++) {
		int8_t *out = d->out + oh * d->out_rs + ow * d->out_ps;

		for (uint32_t c0 = 0; c0 < d->c; c0 += 8) {
			uint32_t nc = d->c - c0 < 8 ? d->c - c0 : 8;
			__m256i acc = _mm256_loadu_si256((const void *)(rq->col + c0));
			int32_t s[8];

			for (uint32_t kh = 0; kh < d->k_h; kh++) {
				int64_t ih = (int64_t)oh * d->stride_h - d->pad_top +
					     (int64_t)kh * d->dil_h;

				if (ih < 0 || ih >= d->in_h)
					continue;
				for (uint32_t kw = 0; kw < d->k_w; kw++) {
					int64_t iw = (int64_t)ow * d->stride_w -
						     d->pad_left + (int64_t)kw * d->dil_w;
					const int8_t *src;
					int64_t bytes = 0;
					__m256i x, w;

					if (iw < 0 || iw >= d->in_w)
						continue;
					src = d->in + ih * d->in_rs + iw * d->in_ps + c0;
					/* No masked byte loads in AVX2: copy a short tail. */
					memcpy(&bytes, src, nc);
					x = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes));
					w = _mm256_loadu_si256((const void *)(d->wt +
						(size_t)(kh * d->k_w + kw) * d->cpad + c0));
					acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(
						_mm256_sub_epi32(x, zp), w));
				}
			}
			_mm256_storeu_si256((void *)s, acc);
			for (uint32_t c = 0; c < nc; c++)
				out[c0 + c] = npu_requant(s[c], rq->mult[c0 + c],
							  (uint32_t)rq->shift[c0 + c],
							  rq->zp_out, rq->act_min,
							  rq->act_max);
		}
	}
}

/*
 * int16 x int16 with vpmaddwd: a pair sum is below 2^24, so an int32 lane
 * takes 64 of them before it is widened into the int64 total.
 */
NPU_TGT static int64_t dot16_avx2(const int16_t *a, const int16_t *b, uint32_t k)
{
	int64_t sum = 0;
	uint32_t kk = 0;

	while (kk + 16 <= k) {
		__m256i acc = _mm256_setzero_si256();
		int32_t lane[8];

		for (uint32_t it = 0; it < 64 && kk + 16 <= k; it++, kk += 16)
			acc = _mm256_add_epi32(acc, _mm256_madd_epi16(
				_mm256_loadu_si256((const __m256i *)(const void *)(a + kk)),
				_mm256_loadu_si256((const __m256i *)(const void *)(b + kk))));
		_mm256_storeu_si256((__m256i *)(void *)lane, acc);
		for (int i = 0; i < 8; i++)
			sum += lane[i];
	}
	return sum + npu_portable_dot16(a + kk, b + kk, k - kk);
}

/* dot16_avx2() on four columns, each loaded row of a used four times. */
NPU_TGT static void dot16x4_avx2(const int16_t *a, const int16_t *b, size_t ldb,
				 uint32_t k, int64_t out[4])
{
	const int16_t *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
	int64_t s[4] = { 0, 0, 0, 0 };
	uint32_t kk = 0;

	while (kk + 16 <= k) {
		__m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
		int32_t lane[4][8];

		for (uint32_t it = 0; it < 64 && kk + 16 <= k; it++, kk += 16) {
			__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + kk));

#define LDB(p) _mm256_loadu_si256((const __m256i *)(const void *)((p) + kk))
			c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(x, LDB(b)));
			c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(x, LDB(b1)));
			c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(x, LDB(b2)));
			c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(x, LDB(b3)));
#undef LDB
		}
		_mm256_storeu_si256((__m256i *)(void *)lane[0], c0);
		_mm256_storeu_si256((__m256i *)(void *)lane[1], c1);
		_mm256_storeu_si256((__m256i *)(void *)lane[2], c2);
		_mm256_storeu_si256((__m256i *)(void *)lane[3], c3);
		for (int j = 0; j < 4; j++)
			for (int i = 0; i < 8; i++)
				s[j] += lane[j][i];
	}
	for (int j = 0; j < 4; j++)
		out[j] = s[j] + npu_portable_dot16(a + kk, b + (size_t)j * ldb + kk, k - kk);
}

/* 8 channels per step: widen to int32, vpmulld, vpaddd. */
NPU_TGT static void mac16_avx2(int32_t *acc, const int16_t *x, const int16_t *w,
			       uint32_t c)
{
	uint32_t i = 0;

	for (; i + 8 <= c; i += 8) {
		__m256i p = _mm256_mullo_epi32(
			_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(x + i))),
			_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(w + i))));
		__m256i *a = (__m256i *)(void *)(acc + i);

		_mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), p));
	}
	npu_portable_mac16(acc + i, x + i, w + i, c - i);
}

/*
 * ELTWISE, int8: 8 elements per step, the even and odd ones in 64-bit lanes
 * as in the AVX-512 kernel. AVX2 has no 64-bit arithmetic shift or min/max:
 * the shift is a logical one of x ^ sign (then ^ sign again), the clamp two
 * compares and blends.
 */
struct elt_vec256 {
	__m256i za, zb, ma, mb, rnd, zp, lo, hi, zero;
	__m128i cnt;
};

NPU_TGT NPU_INLINE __m256i elt_rq256(__m256i acc, const struct elt_vec256 *v)
{
	__m256i sgn;

	acc = _mm256_add_epi64(acc, v->rnd);
	sgn = _mm256_cmpgt_epi64(v->zero, acc);
	acc = _mm256_xor_si256(_mm256_srl_epi64(_mm256_xor_si256(acc, sgn), v->cnt), sgn);
	acc = _mm256_add_epi64(acc, v->zp);
	acc = _mm256_blendv_epi8(acc, v->lo, _mm256_cmpgt_epi64(v->lo, acc));
	return _mm256_blendv_epi8(acc, v->hi, _mm256_cmpgt_epi64(acc, v->hi));
}

NPU_TGT NPU_INLINE __m128i elt8_avx2(__m256i da, __m256i db, int add,
				     const struct elt_vec256 *v)
{
	__m256i pe, po, r;

	if (add) {
		pe = _mm256_add_epi64(_mm256_mul_epi32(da, v->ma), _mm256_mul_epi32(db, v->mb));
		po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(da, 32), v->ma),
				      _mm256_mul_epi32(_mm256_srli_epi64(db, 32), v->mb));
	} else {
		__m256i d = _mm256_mullo_epi32(da, db);	/* fits: npu_ops_internal.h */

		pe = _mm256_mul_epi32(d, v->ma);
		po = _mm256_mul_epi32(_mm256_srli_epi64(d, 32), v->ma);
	}
	r = _mm256_blend_epi32(elt_rq256(pe, v), _mm256_slli_epi64(elt_rq256(po, v), 32), 0xAA);
	/* Every lane is within int8 already: the saturating packs are exact. */
	r = _mm256_castsi128_si256(_mm_packs_epi32(_mm256_castsi256_si128(r),
						   _mm256_extracti128_si256(r, 1)));
	return _mm_packs_epi16(_mm256_castsi256_si128(r), _mm256_castsi256_si128(r));
}

NPU_TGT NPU_INLINE void elt_run256(const struct elt_vec256 *v, const int8_t *a,
				   const int8_t *b, int b_scalar, int add,
				   int8_t *out, uint32_t n)
{
	__m256i db = v->zb;	/* b[0] - zb when b is a scalar */

	for (uint32_t i = 0; i + 8 <= n; i += 8) {
		__m256i da = _mm256_sub_epi32(_mm256_cvtepi8_epi32(
			_mm_loadl_epi64((const __m128i *)(const void *)(a + i))), v->za);

		if (!b_scalar)
			db = _mm256_sub_epi32(_mm256_cvtepi8_epi32(
				_mm_loadl_epi64((const __m128i *)(const void *)(b + i))), v->zb);
		_mm_storel_epi64((__m128i *)(void *)(out + i), elt8_avx2(da, db, add, v));
	}
}

NPU_TGT static void elt_i8_avx2(const struct npu_elt *e, const int8_t *a,
				const int8_t *b, int b_scalar, int8_t *out, uint32_t n)
{
	struct elt_vec256 v = {
		.za = _mm256_set1_epi32(e->za),
		.zb = _mm256_set1_epi32(b_scalar ? b[0] - e->zb : e->zb),
		.ma = _mm256_set1_epi32(e->ma),
		.mb = _mm256_set1_epi32(e->mb),
		.rnd = _mm256_set1_epi64x((int64_t)1 << (e->shift - 1)),
		.zp = _mm256_set1_epi64x(e->zp_out),
		.lo = _mm256_set1_epi64x(e->lo),
		.hi = _mm256_set1_epi64x(e->hi),
		.zero = _mm256_setzero_si256(),
		.cnt = _mm_cvtsi32_si128((int)e->shift),
	};
	uint32_t done = n & ~7u;

	if (e->mode == NPU_ELT_ADD)
		elt_run256(&v, a, b, b_scalar, 1, out, done);
	else
		elt_run256(&v, a, b, b_scalar, 0, out, done);
	if (done < n)
		npu_portable_elt_i8(e, a + done, b_scalar ? b : b + done, b_scalar,
				    out + done, n - done);
}

const struct npu_kern npu_kern_avx2 = {
	.name = "avx2",
	.dot_kind = NPU_DOT_EXACT,
	.gemm = gemm_avx2,
	.dw = dw_avx2,
	.sum_i8 = npu_portable_sum_i8,
	.dot16 = dot16_avx2,
	.dot16x4 = dot16x4_avx2,
	.mac16 = mac16_avx2,
	.elt_i8 = elt_i8_avx2,
	.lut_i8 = npu_portable_lut_i8,
};

#else

/* Never selected: npu_ops.c only picks it when the CPU has AVX2. */
const struct npu_kern npu_kern_avx2 = {
	.name = "avx2",
	.dot_kind = NPU_DOT_EXACT,
	.gemm = npu_portable_gemm,
	.dw = npu_portable_dw,
	.sum_i8 = npu_portable_sum_i8,
	.dot16 = npu_portable_dot16,
	.dot16x4 = npu_portable_dot16x4,
	.mac16 = npu_portable_mac16,
	.elt_i8 = npu_portable_elt_i8,
	.lut_i8 = npu_portable_lut_i8,
};

#endif
