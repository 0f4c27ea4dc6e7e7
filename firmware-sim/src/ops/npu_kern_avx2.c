// SPDX-License-Identifier: MIT
/*
 * npu_kern_avx2.c - AVX2 kernels.
 *
 * Bytes are sign-extended to int16 and the zero points subtracted there:
 * (a - za) and (b - zb) lie in -255..255, so each vpmaddwd pair sum is at
 * most 2 * 255 * 255 and never overflows its int32 lane. That computes the
 * exact sum directly (NPU_DOT_EXACT), no correction terms needed.
 */
#include <stdlib.h>

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

/*
 * GEMM in outer-product tiles (the AVX-512 kernel's shape with vpmaddwd):
 * gemm_prep_avx2() widens b - zb to int16 once per instruction into
 * panels of 16 columns, [k pair][column][2] (64 bytes a pair, k padded to
 * even with zeros), and lays the epilogue out per 8 columns. A tile is
 * GM2_MR rows x 16 columns in 8 int32 accumulators (with the panel, the
 * broadcast and the products they fit the 16 ymm registers; 6 rows
 * spill): per k pair two panel loads, and per row one broadcast of
 * (a - za) as an int16 pair and two vpmaddwd. Each pair sum is at most 2 * 255 * 255 and the int32 lanes
 * wrap like the device's accumulator, so the sums are the exact ones
 * (NPU_DOT_EXACT) bit for bit.
 */
#define GM2_MR	4

/* The epilogue of 8 columns: 64-bit even / odd lanes as in elt_rq256(). */
struct gm2_ep {
	__m256i col, mult;		/* int32 per column */
	__m256i rnd_e, rnd_o, cnt_e, cnt_o;	/* int64: columns 0,2,4,6 / 1,3,5,7 */
};

struct gm2_pack {
	uint32_t kq, npanel;		/* k pairs, panels of 16 columns */
	struct gm2_ep *ep;		/* [npanel * 2] */
	int16_t *b;			/* [npanel][kq][16][2] */
};

NPU_TGT static void *gemm_prep_avx2(const struct npu_gemm *g)
{
	uint32_t kq = (g->k + 1) / 2, npanel = (g->n + 15) / 16;
	size_t ep_bytes = (size_t)npanel * 2 * sizeof(struct gm2_ep);
	size_t b_bytes = (size_t)npanel * kq * 64;
	size_t head = (sizeof(struct gm2_pack) + 63) & ~(size_t)63;
	uint8_t *mem = aligned_alloc(64, head + ep_bytes + b_bytes);
	struct gm2_pack *pp = (struct gm2_pack *)(void *)mem;

	if (!mem)
		abort();
	pp->kq = kq;
	pp->npanel = npanel;
	pp->ep = (struct gm2_ep *)(void *)(mem + head);
	pp->b = (int16_t *)(void *)(mem + head + ep_bytes);
	memset(pp->b, 0, b_bytes);
	for (uint32_t j = 0; j < g->n; j++) {
		const int8_t *src = g->b + (size_t)j * g->ldb;
		int16_t *dst = pp->b + (size_t)(j / 16) * kq * 32 + (j % 16) * 2;

		for (uint32_t kk = 0; kk < g->k; kk++)
			dst[(size_t)(kk / 2) * 32 + kk % 2] = (int16_t)(src[kk] - g->zb);
	}
	for (uint32_t e = 0; e < npanel * 2; e++) {
		int32_t col[8], mult[8];
		int64_t rnd[8], cnt[8];

		for (uint32_t i = 0; i < 8; i++) {
			uint32_t j = e * 8 + i;
			/* Columns past n: mult 0, shift 1, never stored. */
			uint32_t sh = j < g->n ? (uint32_t)g->rq.shift[j] : 1;

			col[i] = j < g->n ? g->rq.col[j] : 0;
			mult[i] = j < g->n ? g->rq.mult[j] : 0;
			rnd[i] = (int64_t)1 << (sh - 1);
			cnt[i] = sh;
		}
		pp->ep[e].col = _mm256_loadu_si256((const void *)col);
		pp->ep[e].mult = _mm256_loadu_si256((const void *)mult);
		pp->ep[e].rnd_e = _mm256_setr_epi64x(rnd[0], rnd[2], rnd[4], rnd[6]);
		pp->ep[e].rnd_o = _mm256_setr_epi64x(rnd[1], rnd[3], rnd[5], rnd[7]);
		pp->ep[e].cnt_e = _mm256_setr_epi64x(cnt[0], cnt[2], cnt[4], cnt[6]);
		pp->ep[e].cnt_o = _mm256_setr_epi64x(cnt[1], cnt[3], cnt[5], cnt[7]);
	}
	return pp;
}

struct gm2_consts {
	__m256i lo, hi, zp, zero;	/* int64 */
};

/* (prod + rnd) >> cnt, arithmetic, + zp_out, clamped: int64 lanes. */
NPU_TGT NPU_INLINE __m256i gm2_rq4(__m256i prod, __m256i rnd, __m256i cnt,
				   const struct gm2_consts *c)
{
	__m256i v = _mm256_add_epi64(prod, rnd);
	__m256i sgn = _mm256_cmpgt_epi64(c->zero, v);

	v = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(v, sgn), cnt), sgn);
	v = _mm256_add_epi64(v, c->zp);
	v = _mm256_blendv_epi8(v, c->lo, _mm256_cmpgt_epi64(c->lo, v));
	return _mm256_blendv_epi8(v, c->hi, _mm256_cmpgt_epi64(v, c->hi));
}

/* npu_requant() of the accumulators of 8 columns, written to out[0..nval). */
NPU_TGT NPU_INLINE void gm2_store8(__m256i acc, const struct gm2_ep *e,
				   const struct gm2_consts *c, int8_t *out,
				   uint32_t nval)
{
	__m256i pe = _mm256_mul_epi32(acc, e->mult);
	__m256i po = _mm256_mul_epi32(_mm256_srli_epi64(acc, 32),
				      _mm256_srli_epi64(e->mult, 32));
	__m256i r = _mm256_blend_epi32(gm2_rq4(pe, e->rnd_e, e->cnt_e, c),
				       _mm256_slli_epi64(gm2_rq4(po, e->rnd_o, e->cnt_o, c), 32),
				       0xAA);
	/* Every lane is within int8 already: the saturating packs are exact. */
	__m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
	int64_t b = _mm_cvtsi128_si64(_mm_packs_epi16(w, w));

	memcpy(out, &b, nval < 8 ? nval : 8);
}

NPU_TGT static void gemm_avx2(const struct npu_gemm *g)
{
	const struct gm2_pack *pp = g->prep;
	void *own = NULL;
	uint32_t m = g->m, n = g->n, k = g->k;
	struct gm2_consts cc = {
		.lo = _mm256_set1_epi64x(g->rq.act_min),
		.hi = _mm256_set1_epi64x(g->rq.act_max),
		.zp = _mm256_set1_epi64x(g->rq.zp_out),
		.zero = _mm256_setzero_si256(),
	};
	const __m256i za = _mm256_set1_epi16((int16_t)g->za);
	int16_t *a16;

	if (!pp)
		pp = own = gemm_prep_avx2(g);
	size_t lda = (size_t)pp->kq * 2;	/* int16 per packed row */

	a16 = aligned_alloc(32, (GM2_MR * lda * sizeof(*a16) + 31) & ~(size_t)31);
	if (!a16)
		abort();
	for (uint32_t i0 = 0; i0 < m; i0 += GM2_MR) {
		uint32_t mr = m - i0 < GM2_MR ? m - i0 : GM2_MR;
		int32_t row[GM2_MR];

		/* (a - za) as int16, k padded with zeros; rows past m are zero. */
		for (uint32_t r = 0; r < GM2_MR; r++) {
			int16_t *dst = a16 + r * lda;
			uint32_t kk = 0;

			row[r] = r < mr && g->row ? g->row[i0 + r] : 0;
			if (r >= mr) {
				memset(dst, 0, lda * sizeof(*dst));
				continue;
			}
			for (const int8_t *src = g->arow[i0 + r]; kk + 16 <= k; kk += 16)
				_mm256_storeu_si256((void *)(dst + kk), ld16(src + kk, za));
			for (; kk < k; kk++)
				dst[kk] = (int16_t)(g->arow[i0 + r][kk] - g->za);
			for (; kk < lda; kk++)
				dst[kk] = 0;
		}
		for (uint32_t p = 0; p < pp->npanel; p++) {
			const int16_t *bp = pp->b + (size_t)p * pp->kq * 32;
			const struct gm2_ep *ep = pp->ep + 2 * p;
			__m256i c0[GM2_MR], c1[GM2_MR];
			uint32_t j0 = p * 16, nval = n - j0 < 16 ? n - j0 : 16;

			for (int r = 0; r < GM2_MR; r++) {
				__m256i rv = _mm256_set1_epi32(row[r]);

				c0[r] = _mm256_add_epi32(ep[0].col, rv);
				c1[r] = _mm256_add_epi32(ep[1].col, rv);
			}
			for (uint32_t q = 0; q < pp->kq; q++, bp += 32) {
				__m256i b0 = _mm256_load_si256((const void *)bp);
				__m256i b1 = _mm256_load_si256((const void *)(bp + 16));

#pragma GCC unroll 4
				for (int r = 0; r < GM2_MR; r++) {
					__m256i av = _mm256_set1_epi32(
						npu_ld_i32((const uint8_t *)(a16 + r * lda + 2 * q)));

					c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(av, b0));
					c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(av, b1));
				}
			}
			for (uint32_t r = 0; r < mr; r++) {
				int8_t *out = g->orow[i0 + r] + j0;

				gm2_store8(c0[r], &ep[0], &cc, out, nval);
				if (nval > 8)
					gm2_store8(c1[r], &ep[1], &cc, out + 8, nval - 8);
			}
		}
	}
	free(a16);
	free(own);
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
	.gemm_prep = gemm_prep_avx2,
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
