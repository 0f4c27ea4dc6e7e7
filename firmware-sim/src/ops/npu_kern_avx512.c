// SPDX-License-Identifier: MIT
/*
 * npu_kern_avx512.c - AVX-512 VNNI kernels.
 *
 * vpdpbusd multiplies unsigned by signed bytes and adds groups of four
 * products into int32 lanes without intermediate saturation (unlike
 * vpmaddubsw, whose int16 sums saturate). The GEMM feeds the activations
 * as the signed side and the weights as u = b ^ 0x80 = b + 128, and
 * folds the +128 and both zero points back in per channel and per row
 * itself (NPU_DOT_S8U8); the depthwise kernel feeds u = x ^ 0x80 and the
 * weights minus zp_w, folding into the bias. Everything is modulo 2^32,
 * so the folding is exact even when the accumulator wraps.
 *
 * The GEMM works in outer-product register tiles on weights packed once
 * per instruction; the depthwise kernel turns four taps of 16 channels
 * into per-channel dwords with vpermb (both below).
 */
#include "npu_ops_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define NPU_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define NPU_INLINE static inline __attribute__((always_inline))

struct rq_vec {
	__m512i zp, lo, hi, one;
};

NPU_TGT NPU_INLINE struct rq_vec rq_vec_init(const struct npu_rq *rq)
{
	struct rq_vec v = {
		.zp = _mm512_set1_epi64(rq->zp_out),
		.lo = _mm512_set1_epi64(rq->act_min),
		.hi = _mm512_set1_epi64(rq->act_max),
		.one = _mm512_set1_epi64(1),
	};
	return v;
}

/* npu_requant() on 8 lanes, in 64-bit arithmetic like the scalar one. */
NPU_TGT NPU_INLINE __m128i rq8(__m256i acc, __m256i mult, __m256i shift,
			       const struct rq_vec *v)
{
	__m512i a = _mm512_cvtepi32_epi64(acc);
	__m512i m = _mm512_cvtepi32_epi64(mult);
	__m512i s = _mm512_cvtepi32_epi64(shift);
	__m512i p = _mm512_mul_epi32(a, m);	/* signed 32 x 32 -> 64 */

	p = _mm512_add_epi64(p, _mm512_sllv_epi64(v->one, _mm512_sub_epi64(s, v->one)));
	p = _mm512_srav_epi64(p, s);
	p = _mm512_add_epi64(p, v->zp);
	p = _mm512_min_epi64(_mm512_max_epi64(p, v->lo), v->hi);
	return _mm512_cvtepi64_epi8(p);
}

NPU_TGT NPU_INLINE __m128i rq16(__m512i acc, __m512i mult, __m512i shift,
				const struct rq_vec *v)
{
	__m128i l = rq8(_mm512_castsi512_si256(acc), _mm512_castsi512_si256(mult),
			_mm512_castsi512_si256(shift), v);
	__m128i h = rq8(_mm512_extracti64x4_epi64(acc, 1),
			_mm512_extracti64x4_epi64(mult, 1),
			_mm512_extracti64x4_epi64(shift, 1), v);

	return _mm_unpacklo_epi64(l, h);
}

/*
 * The GEMM in the outer-product form: a vector holds 16 output channels of
 * one row, and each vpdpbusd adds one k-group (four bytes of the row,
 * broadcast, times the channels' four weights) to them, so no horizontal
 * sums are needed and the epilogue works on whole vectors of channels.
 * vpdpbusd's broadcast operand is its signed one: the activations go in
 * as they are, the weights as u8 = b ^ 0x80 (NPU_DOT_S8U8: the packing
 * folds zp_in's column term, the tiles the +128 and zp_w's row term).
 *
 * gemm_prep_avx512() packs b once per instruction into panels of 32
 * channels (two vectors; the last panel one when 16 channels are enough),
 * k-group-major: panel p, group q is nv * 64 bytes, byte 64 * v + 4 * l + t
 * = channel 32 * p + 16 * v + l, k index 4 * q + t, zero past n and k. It
 * also lays the requantization out per 16-channel block as the even and
 * odd 64-bit lanes vpmuldq works on.
 *
 * A register tile is GM_MR rows x one panel: 24 accumulators, two weight
 * vectors, the rows' groups broadcast from memory. Rows of a tile at one
 * stride (im2col rows, packed pixels of one output row) are read in place;
 * others, and a last partial tile, are copied to a zero-padded buffer.
 */
#define GM_MR	12

struct gm_ep {
	__m512i col, mult, mult_o, rnd_e, rnd_o, sh_e, sh_o;
};

struct gm_pack {
	uint32_t kq;		/* k-groups: ceil(k / 4) */
	struct gm_ep *ep;	/* [ceil(n / 16)] */
	uint8_t *b;		/* panels */
};

/*
 * A 16-channel block's epilogue: its col, and mult, 2^(shift - 1) and
 * shift as the even and odd 64-bit lanes vpmuldq and vpsravq work on.
 */
NPU_TGT static void gm_ep_fill(struct gm_ep *e, const int32_t col[16],
			       const int32_t mult[16], const int32_t sh[16])
{
	int64_t me[8], mo[8], re[8], ro[8], se[8], so[8];

	for (uint32_t i = 0; i < 8; i++) {
		me[i] = mult[2 * i];
		mo[i] = mult[2 * i + 1];
		re[i] = (int64_t)1 << (sh[2 * i] - 1);
		ro[i] = (int64_t)1 << (sh[2 * i + 1] - 1);
		se[i] = sh[2 * i];
		so[i] = sh[2 * i + 1];
	}
	e->col = _mm512_loadu_si512(col);
	e->mult = _mm512_loadu_si512(me);
	e->mult_o = _mm512_loadu_si512(mo);
	e->rnd_e = _mm512_loadu_si512(re);
	e->rnd_o = _mm512_loadu_si512(ro);
	e->sh_e = _mm512_loadu_si512(se);
	e->sh_o = _mm512_loadu_si512(so);
}

/* out[c] = dword c of every in[r], r = 0..15 (a 16 x 16 dword transpose). */
NPU_TGT NPU_INLINE void transpose16x16(const __m512i in[16], __m512i out[16])
{
	__m512i t[16], u[16];

	for (int i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
	}
	/* u[4b + j]: per 128-bit lane L, dword 4L + j of rows 4b..4b+3 */
	for (int b = 0; b < 4; b++) {
		u[4 * b] = _mm512_unpacklo_epi64(t[4 * b], t[4 * b + 2]);
		u[4 * b + 1] = _mm512_unpackhi_epi64(t[4 * b], t[4 * b + 2]);
		u[4 * b + 2] = _mm512_unpacklo_epi64(t[4 * b + 1], t[4 * b + 3]);
		u[4 * b + 3] = _mm512_unpackhi_epi64(t[4 * b + 1], t[4 * b + 3]);
	}
	for (int j = 0; j < 4; j++) {
		__m512i x01 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
		__m512i y01 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
		__m512i x23 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
		__m512i y23 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 2, 3, 2));

		out[j] = _mm512_shuffle_i32x4(x01, y01, _MM_SHUFFLE(2, 0, 2, 0));
		out[4 + j] = _mm512_shuffle_i32x4(x01, y01, _MM_SHUFFLE(3, 1, 3, 1));
		out[8 + j] = _mm512_shuffle_i32x4(x23, y23, _MM_SHUFFLE(2, 0, 2, 0));
		out[12 + j] = _mm512_shuffle_i32x4(x23, y23, _MM_SHUFFLE(3, 1, 3, 1));
	}
}

NPU_TGT static void *gemm_prep_avx512(const struct npu_gemm *g)
{
	uint32_t n = g->n, k = g->k, kq = (k + 3) / 4, nvt = (n + 15) / 16;
	size_t size = 64 + (size_t)nvt * sizeof(struct gm_ep) + (size_t)nvt * kq * 64;
	struct gm_pack *pp;

	size = (size + 63) & ~(size_t)63;
	pp = aligned_alloc(64, size);
	if (!pp)
		abort();
	/* No clearing: the transposes below write every byte of the panels. */
	pp->kq = kq;
	pp->ep = (struct gm_ep *)(void *)((char *)pp + 64);
	pp->b = (uint8_t *)(pp->ep + nvt);
	/*
	 * A 16-channel block, 64 bytes of k at a time: 16 rows (zero past n
	 * and k, flipped where loaded) transposed as 16 x 16 dwords give the
	 * block's next 16 groups.
	 */
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	const __m512i ones = _mm512_set1_epi8(1);
	/* Per channel, the sum of its b ^ 0x80 bytes: vpdpbusd on the packed groups. */
	int32_t *usum = malloc((size_t)nvt * 16 * sizeof(*usum));

	if (!usum)
		abort();
	for (uint32_t bl = 0; bl < nvt; bl++) {
		uint32_t p = bl / 2, nvp = n - 32 * p > 16 ? 2 : 1, nc = n - 16 * bl;
		__m512i us = _mm512_setzero_si512();

		uint8_t *dst = pp->b + (size_t)p * kq * 128 + (bl % 2) * 64;
		const int8_t *src = g->b + (size_t)16 * bl * g->ldb;

		for (uint32_t k0 = 0; k0 < k; k0 += 64) {
			__mmask64 km = k - k0 >= 64 ? ~0ull : ~0ull >> (64 - (k - k0));
			__m512i r[16], t[16];

			for (uint32_t l = 0; l < 16; l++)
				r[l] = l < nc ? _mm512_xor_si512(_mm512_maskz_loadu_epi8(
						km, src + (size_t)l * g->ldb + k0),
						_mm512_maskz_mov_epi8(km, flip)) :
					_mm512_setzero_si512();
			transpose16x16(r, t);
			for (uint32_t c = 0; c < 16 && k0 / 4 + c < kq; c++) {
				_mm512_store_si512(dst + (size_t)(k0 / 4 + c) * nvp * 64, t[c]);
				us = _mm512_dpbusd_epi32(us, t[c], ones);
			}
		}
		_mm512_storeu_si512(usum + 16 * bl, us);
	}
	for (uint32_t bl = 0; bl < nvt; bl++) {
		int32_t col[16], mult[16], sh[16];

		for (uint32_t l = 0; l < 16; l++) {
			uint32_t j = 16 * bl + l;

			/* The zp_in terms of NPU_DOT_S8U8: sum b = usum - 128 k. */
			col[l] = j < n ? (int32_t)((uint32_t)g->rq.col[j] - (uint32_t)g->za *
				((uint32_t)usum[j] - 128u * k) + k * (uint32_t)g->za * (uint32_t)g->zb) : 0;
			mult[l] = j < n ? g->rq.mult[j] : 0;
			sh[l] = j < n ? g->rq.shift[j] : 1;
		}
		gm_ep_fill(&pp->ep[bl], col, mult, sh);
	}
	free(usum);
	return pp;
}

struct gm_consts {
	__m512i lo, hi, zp;	/* act_min - zp_out, act_max - zp_out (int64); zp_out */
};

/*
 * npu_requant() of 16 accumulators: vpmuldq on the even lanes and on the
 * odd ones shifted down, the same 64-bit rounding and shift, the clamp
 * before adding zp_out (clamp(v + zp, lo, hi) = clamp(v, lo - zp, hi - zp)
 * + zp), and the low halves interleaved back.
 */
NPU_TGT NPU_INLINE __m128i gm_rq16(__m512i acc, const struct gm_ep *e,
				   const struct gm_consts *c)
{
	__m512i pe = _mm512_mul_epi32(acc, e->mult);
	__m512i po = _mm512_mul_epi32(_mm512_srli_epi64(acc, 32), e->mult_o);

	pe = _mm512_srav_epi64(_mm512_add_epi64(pe, e->rnd_e), e->sh_e);
	po = _mm512_srav_epi64(_mm512_add_epi64(po, e->rnd_o), e->sh_o);
	pe = _mm512_min_epi64(_mm512_max_epi64(pe, c->lo), c->hi);
	po = _mm512_min_epi64(_mm512_max_epi64(po, c->lo), c->hi);
	return _mm512_cvtepi32_epi8(_mm512_add_epi32(c->zp, _mm512_mask_blend_epi32(
		0xAAAA, pe, _mm512_slli_epi64(po, 32))));
}

/*
 * One tile: rows a + r * lda (r < GM_MR), kf whole groups read in place,
 * then the group 'tail' holds per row when k is not a multiple of 4;
 * nv (1 or 2, a constant after inlining) vectors of channels from j0, of
 * which nval < 32 are stored, for the first mr rows.
 */
NPU_TGT NPU_INLINE void gm_tile(int nv, const int8_t *a, ptrdiff_t lda, uint32_t kf,
				const int32_t *tail, const uint8_t *bp,
				const struct gm_ep *ep, const int32_t *row,
				int8_t *const *orow, uint32_t mr, uint32_t j0,
				uint32_t nval, const struct gm_consts *cc)
{
	__m512i c0[GM_MR], c1[GM_MR];

#pragma GCC unroll 12
	for (int r = 0; r < GM_MR; r++) {
		__m512i rv = _mm512_set1_epi32(row[r]);

		c0[r] = _mm512_add_epi32(ep[0].col, rv);
		c1[r] = nv > 1 ? _mm512_add_epi32(ep[1].col, rv) : rv;
	}
	for (uint32_t q = 0; q < kf; q++, a += 4, bp += nv * 64) {
		__m512i b0 = _mm512_load_si512((const void *)bp);
		__m512i b1 = nv > 1 ? _mm512_load_si512((const void *)(bp + 64)) : b0;

#pragma GCC unroll 12
		for (int r = 0; r < GM_MR; r++) {
			__m512i av = _mm512_set1_epi32(npu_ld_i32((const uint8_t *)a + r * lda));

			c0[r] = _mm512_dpbusd_epi32(c0[r], b0, av);
			if (nv > 1)
				c1[r] = _mm512_dpbusd_epi32(c1[r], b1, av);
		}
	}
	if (tail) {
		__m512i b0 = _mm512_load_si512((const void *)bp);
		__m512i b1 = nv > 1 ? _mm512_load_si512((const void *)(bp + 64)) : b0;

#pragma GCC unroll 12
		for (int r = 0; r < GM_MR; r++) {
			__m512i av = _mm512_set1_epi32(tail[r]);

			c0[r] = _mm512_dpbusd_epi32(c0[r], b0, av);
			if (nv > 1)
				c1[r] = _mm512_dpbusd_epi32(c1[r], b1, av);
		}
	}
	__mmask16 m0 = nval >= 16 ? 0xFFFF : (__mmask16)((1u << nval) - 1);
	__mmask16 m1 = nval >= 32 ? 0xFFFF : nval <= 16 ? 0 : (__mmask16)((1u << (nval - 16)) - 1);

#pragma GCC unroll 12
	for (uint32_t r = 0; r < GM_MR; r++) {
		if (r >= mr)
			break;
		_mm_mask_storeu_epi8(orow[r] + j0, m0, gm_rq16(c0[r], &ep[0], cc));
		if (nv > 1)
			_mm_mask_storeu_epi8(orow[r] + j0 + 16, m1, gm_rq16(c1[r], &ep[1], cc));
	}
}

/*
 * Sum of a row's k int8, modulo 2^32: vpsadbw on u8 = a ^ 0x80, less 128
 * per byte of every block (masked-off bytes load as 0, count as 0x80).
 */
NPU_TGT NPU_INLINE uint32_t row_sum(const int8_t *p, uint32_t k)
{
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	__m512i s = _mm512_setzero_si512();
	uint32_t kk = 0;

	for (; kk < k; kk += 64) {
		__mmask64 m = k - kk >= 64 ? ~0ull : ~0ull >> (64 - (k - kk));

		s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_xor_si512(
			_mm512_maskz_loadu_epi8(m, p + kk), flip), _mm512_setzero_si512()));
	}
	return (uint32_t)_mm512_reduce_add_epi64(s) - 128u * kk;
}

NPU_TGT static void gemm_avx512vnni(const struct npu_gemm *g)
{
	const struct gm_pack *pp = g->prep;
	void *own = NULL;
	uint32_t m = g->m, n = g->n, k = g->k, kfull = k / 4, kt = k % 4;
	struct gm_consts cc = {
		.lo = _mm512_set1_epi64((int64_t)g->rq.act_min - g->rq.zp_out),
		.hi = _mm512_set1_epi64((int64_t)g->rq.act_max - g->rq.zp_out),
		.zp = _mm512_set1_epi32(g->rq.zp_out),
	};
	int8_t *tmp = NULL;

	if (!pp)
		pp = own = gemm_prep_avx512(g);
	size_t k4 = (size_t)pp->kq * 4;

	for (uint32_t i0 = 0; i0 < m; i0 += GM_MR) {
		uint32_t mr = m - i0 < GM_MR ? m - i0 : GM_MR, kf = kfull;
		const int8_t *const *ar = g->arow + i0;
		ptrdiff_t lda = mr > 1 ? ar[1] - ar[0] : 0;
		int32_t row[GM_MR], tail[GM_MR];
		const int32_t *tailp = NULL;
		const int8_t *a = ar[0];
		int uniform = mr == GM_MR;

		for (uint32_t r = 2; r < mr && uniform; r++)
			uniform = ar[r] - ar[r - 1] == lda;
		if (uniform) {
			if (kt) {
				for (uint32_t r = 0; r < GM_MR; r++) {
					tail[r] = 0;
					memcpy(&tail[r], ar[r] + 4 * (size_t)kfull, kt);
				}
				tailp = tail;
			}
		} else {
			/* Zero padding past k stays: only k bytes of a row are written. */
			if (!tmp) {
				tmp = calloc(GM_MR, k4);
				if (!tmp)
					abort();
			}
			for (uint32_t r = 0; r < mr; r++)
				memcpy(tmp + r * k4, ar[r], k);
			a = tmp;
			lda = (ptrdiff_t)k4;
			kf = pp->kq;
		}
		/* The S8U8 row term, -(128 + zb) * sum a, plus any the caller gave. */
		for (uint32_t r = 0; r < GM_MR; r++)
			row[r] = r >= mr ? 0 : (int32_t)((g->row ? (uint32_t)g->row[i0 + r] : 0) -
				(128u + (uint32_t)g->zb) * row_sum(ar[r], k));
		for (uint32_t j0 = 0; j0 < n; j0 += 32) {
			const uint8_t *bp = pp->b + (size_t)(j0 / 32) * pp->kq * 128;
			const struct gm_ep *ep = pp->ep + j0 / 16;
			uint32_t nval = n - j0 < 32 ? n - j0 : 32;

			if (nval > 16)
				gm_tile(2, a, lda, kf, tailp, bp, ep, row, g->orow + i0, mr,
					j0, nval, &cc);
			else
				gm_tile(1, a, lda, kf, tailp, bp, ep, row, g->orow + i0, mr,
					j0, nval, &cc);
		}
	}
	free(tmp);
	free(own);
}

/* The taps [lo, hi) of one axis that land inside the input. */
static inline void tap_range(int64_t origin, uint32_t k, uint32_t dil, uint32_t in,
			     uint32_t *lo, uint32_t *hi)
{
	int64_t l = origin < 0 ? (-origin + dil - 1) / dil : 0;
	int64_t h = origin >= in ? 0 : (in - origin + dil - 1) / dil;

	*hi = (uint32_t)(h < k ? h : k);
	*lo = (uint32_t)(l < *hi ? l : *hi);
}

/* VBMI is not part of this set's requirements (Cascade Lake has VNNI without it). */
static int cpu_vbmi(void)
{
	static int vbmi = -1;
	int has = __atomic_load_n(&vbmi, __ATOMIC_RELAXED);

	if (has < 0) {
		__builtin_cpu_init();
		has = !!__builtin_cpu_supports("avx512vbmi");
		__atomic_store_n(&vbmi, has, __ATOMIC_RELAXED);
	}
	return has;
}

/*
 * dw_vnni() with dil_w 1: input rows are turned into per-channel dwords
 * once, H[p] = (u[p], u[p + 1], u[p + 2], u[p + 3]) for u = x ^ 0x80 of
 * the row padded with zp_in (position p is input column p - pad_left), so
 * a kernel row's taps kw = 4 * j .. 4 * j + 3 of an output pixel are the
 * one vector H[ow * stride_w + 4 * j]. The rows live in a ring of
 * (k_h - 1) * dil_h + 1 slots, each built when first needed.
 */
#define NPU_TGT_VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

NPU_TGT_VBMI static void dw_rows(const struct npu_dw *d, const int8_t *wp,
				 const struct gm_ep *ep, const struct gm_consts *cc,
				 __m512i idx, const int8_t *zpbuf, uint32_t ng,
				 uint32_t ncb)
{
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	uint32_t c = d->c, ngw = ng / d->k_h;
	uint32_t wpos = (d->out_w - 1) * d->stride_w + 4 * ngw;
	uint32_t nslot = (d->k_h - 1) * d->dil_h + 1;
	size_t row_bytes = (size_t)wpos * ncb * 64;
	uint8_t *ring = aligned_alloc(64, nslot * row_bytes);
	int64_t *tag = malloc(nslot * sizeof(*tag));

	if (!ring || !tag)
		abort();
	for (uint32_t i = 0; i < nslot; i++)
		tag[i] = INT64_MIN;
	for (uint32_t oh = d->oh_begin; oh < d->oh_end; oh++) {
		int64_t ih0 = (int64_t)oh * d->stride_h - d->pad_top;
		const uint8_t *hrow[256];

		for (uint32_t kh = 0; kh < d->k_h; kh++) {
			int64_t ih = ih0 + (int64_t)kh * d->dil_h;
			uint32_t slot = (uint32_t)(((ih % nslot) + nslot) % nslot);
			uint8_t *h = ring + slot * row_bytes;

			hrow[kh] = h;
			if (tag[slot] == ih)
				continue;
			tag[slot] = ih;
			if (ih < 0 || ih >= d->in_h) {
				memset(h, (uint8_t)d->zp_in ^ 0x80, row_bytes);
				continue;
			}
			const int8_t *x = d->in + ih * d->in_rs;

			for (uint32_t p = 0; p < wpos; p++) {
				const int8_t *px[4];

				for (uint32_t t = 0; t < 4; t++) {
					int64_t iw = (int64_t)p + t - d->pad_left;

					px[t] = iw >= 0 && iw < d->in_w ? x + iw * d->in_ps : zpbuf;
				}
				for (uint32_t cb = 0; cb < ncb; cb++, h += 64) {
					uint32_t nc = c - 16 * cb;
					__mmask16 m = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
					__m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(m, px[0] + 16 * cb));

					v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, px[1] + 16 * cb), 1);
					v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, px[2] + 16 * cb), 2);
					v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, px[3] + 16 * cb), 3);
					_mm512_store_si512(h, _mm512_xor_si512(
						_mm512_permutexvar_epi8(idx, v), flip));
				}
			}
		}
		/* Four output pixels at a time: four independent accumulators. */
		for (uint32_t ow = 0; ow < d->out_w; ow += 4) {
			uint32_t npx = d->out_w - ow < 4 ? d->out_w - ow : 4;
			int8_t *out = d->out + oh * d->out_rs + ow * d->out_ps;
			size_t p0 = (size_t)ow * d->stride_w * ncb * 64;
			size_t px = (size_t)d->stride_w * ncb * 64;	/* next pixel in H */
			size_t jx = (size_t)4 * ncb * 64;		/* next group in H */
			/* Past out_w, pixels redo the last one and are not stored. */
			size_t o1 = (npx > 1 ? 1 : 0) * px, o2 = (npx > 2 ? 2 : npx - 1) * px;
			size_t o3 = (npx > 3 ? 3 : npx - 1) * px;
			for (uint32_t cb = 0; cb < ncb; cb++) {
				uint32_t nc = c - 16 * cb;
				__mmask16 m = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
				const int8_t *w = wp + (size_t)cb * ng * 64;
				__m512i a0 = ep[cb].col, a1 = a0, a2 = a0, a3 = a0;

				for (uint32_t kh = 0; kh < d->k_h; kh++) {
					const uint8_t *h = hrow[kh] + p0 + (size_t)cb * 64;

					for (uint32_t j = 0; j < ngw; j++, w += 64, h += jx) {
						__m512i wv = _mm512_load_si512((const void *)w);

						a0 = _mm512_dpbusd_epi32(a0, _mm512_load_si512(
							(const void *)h), wv);
						a1 = _mm512_dpbusd_epi32(a1, _mm512_load_si512(
							(const void *)(h + o1)), wv);
						a2 = _mm512_dpbusd_epi32(a2, _mm512_load_si512(
							(const void *)(h + o2)), wv);
						a3 = _mm512_dpbusd_epi32(a3, _mm512_load_si512(
							(const void *)(h + o3)), wv);
					}
				}
				_mm_mask_storeu_epi8(out + 16 * cb, m, gm_rq16(a0, &ep[cb], cc));
				if (npx > 1)
					_mm_mask_storeu_epi8(out + d->out_ps + 16 * cb, m,
							     gm_rq16(a1, &ep[cb], cc));
				if (npx > 2)
					_mm_mask_storeu_epi8(out + 2 * d->out_ps + 16 * cb, m,
							     gm_rq16(a2, &ep[cb], cc));
				if (npx > 3)
					_mm_mask_storeu_epi8(out + 3 * d->out_ps + 16 * cb, m,
							     gm_rq16(a3, &ep[cb], cc));
			}
		}
	}
	free(tag);
	free(ring);
}

/*
 * Depthwise with VNNI: four taps of 16 channels make one vpdpbusd. The
 * four taps' 16 bytes are loaded into the four 128-bit lanes of a vector
 * and vpermb turns it into per-channel dwords (byte 4 * l + t = tap t of
 * channel l), flipped to u8 = x + 128; the weights (w - zp_w, int8 here)
 * are packed the same way once per call, zero for the taps that pad a
 * group. A tap in the padding reads zp_in, so every pixel sums all taps
 * and the +128 and zp_in fold into the bias exactly:
 * sum (x - zp_in) * w = sum u * w - (128 + zp_in) * sum w.
 * Needs zp_in and every w - zp_w in int8, and VBMI (the caller checks);
 * returns 0 (nothing done) else.
 */
NPU_TGT_VBMI static int dw_vnni(const struct npu_dw *d)
{
	uint32_t c = d->c, taps = d->k_h * d->k_w, ngw = (d->k_w + 3) / 4;
	uint32_t ncb = (c + 15) / 16, cpad = ncb * 16;
	/* Groups: kernel rows cut in fours with dil_w 1 (dw_rows), else all taps. */
	int rows = d->dil_w == 1;
	uint32_t ng = rows ? d->k_h * ngw : (taps + 3) / 4;

	if (d->zp_in < -128 || d->zp_in > 127)
		return 0;

	size_t wsize = (size_t)ncb * ng * 64;
	int8_t *wp = aligned_alloc(64, wsize);
	struct gm_ep *ep = aligned_alloc(64, (size_t)ncb * sizeof(*ep));
	const int8_t **tp = malloc((size_t)ng * 4 * sizeof(*tp));
	ptrdiff_t *off = malloc((size_t)taps * sizeof(*off));
	int8_t *zpbuf = malloc(cpad);
	uint32_t *wsum = calloc(cpad, sizeof(*wsum));
	const struct npu_rq *rq = &d->rq;
	struct gm_consts cc = {
		.lo = _mm512_set1_epi64((int64_t)rq->act_min - rq->zp_out),
		.hi = _mm512_set1_epi64((int64_t)rq->act_max - rq->zp_out),
		.zp = _mm512_set1_epi32(rq->zp_out),
	};
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	uint8_t perm[64];
	int fits = 1;

	if (!wp || !ep || !tp || !off || !zpbuf || !wsum)
		abort();
	memset(wp, 0, wsize);
	memset(zpbuf, (uint8_t)d->zp_in, cpad);
	for (uint32_t t = 0; t < 64; t++)
		perm[t] = (uint8_t)(16 * (t % 4) + t / 4);
	const __m512i idx = _mm512_loadu_si512(perm);

	/* Tap (kh, kw) goes to byte 'slot' % 4 of group 'slot' / 4. */
	for (uint32_t kh = 0, t = 0; kh < d->k_h && fits; kh++)
		for (uint32_t kw = 0; kw < d->k_w && fits; kw++, t++) {
			uint32_t slot = rows ? (kh * ngw + kw / 4) * 4 + kw % 4 : t;
			const int32_t *src = d->wt + (size_t)t * d->cpad;
			int8_t *dst = wp + (size_t)slot / 4 * 64 + slot % 4;

			for (uint32_t ch = 0; ch < c; ch++) {
				int32_t w = src[ch];

				if (w < -128 || w > 127) {
					fits = 0;
					break;
				}
				dst[(size_t)(ch / 16) * ng * 64 + ch % 16 * 4] = (int8_t)w;
				wsum[ch] += (uint32_t)w;
			}
		}
	if (!fits)
		goto out;
	for (uint32_t cb = 0; cb < ncb; cb++) {
		int32_t col[16], mult[16], sh[16];

		for (uint32_t l = 0; l < 16; l++) {
			uint32_t ch = 16 * cb + l;

			col[l] = ch < c ? (int32_t)((uint32_t)rq->col[ch] -
					(uint32_t)(128 + d->zp_in) * wsum[ch]) : 0;
			mult[l] = ch < c ? rq->mult[ch] : 0;
			sh[l] = ch < c ? rq->shift[ch] : 1;
		}
		gm_ep_fill(&ep[cb], col, mult, sh);
	}
	if (rows) {
		dw_rows(d, wp, ep, &cc, idx, zpbuf, ng, ncb);
		goto out;
	}
	for (uint32_t t = 0; t < taps; t++)
		off[t] = (ptrdiff_t)(t / d->k_w) * d->dil_h * (ptrdiff_t)d->in_rs +
			 (ptrdiff_t)(t % d->k_w) * d->dil_w * (ptrdiff_t)d->in_ps;
	for (uint32_t t = taps; t < ng * 4; t++)
		tp[t] = zpbuf;

	for (uint32_t oh = d->oh_begin; oh < d->oh_end; oh++) {
		int64_t ih0 = (int64_t)oh * d->stride_h - d->pad_top;
		uint32_t kh_lo, kh_hi;

		tap_range(ih0, d->k_h, d->dil_h, d->in_h, &kh_lo, &kh_hi);
		for (uint32_t ow = 0; ow < d->out_w; ow++) {
			int64_t iw0 = (int64_t)ow * d->stride_w - d->pad_left;
			int8_t *out = d->out + oh * d->out_rs + ow * d->out_ps;
			uint32_t kw_lo, kw_hi;

			tap_range(iw0, d->k_w, d->dil_w, d->in_w, &kw_lo, &kw_hi);
			if (kh_lo == 0 && kh_hi == d->k_h && kw_lo == 0 && kw_hi == d->k_w) {
				const int8_t *x0 = d->in + ih0 * (int64_t)d->in_rs +
						   iw0 * (int64_t)d->in_ps;

				for (uint32_t t = 0; t < taps; t++)
					tp[t] = x0 + off[t];
			} else {
				for (uint32_t t = 0; t < taps; t++) {
					uint32_t kh = t / d->k_w, kw = t % d->k_w;

					tp[t] = kh >= kh_lo && kh < kh_hi && kw >= kw_lo && kw < kw_hi ?
						d->in + (ih0 + (int64_t)kh * d->dil_h) * d->in_rs +
						(iw0 + (int64_t)kw * d->dil_w) * d->in_ps : zpbuf;
				}
			}
			for (uint32_t cb = 0; cb < ncb; cb++) {
				uint32_t nc = c - 16 * cb;
				__mmask16 m = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
				const int8_t *w = wp + (size_t)cb * ng * 64;
				__m512i acc = ep[cb].col;

				for (uint32_t g = 0; g < ng; g++, w += 64) {
					const int8_t *const *p = tp + 4 * g;
					__m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(m, p[0] + 16 * cb));

					v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, p[1] + 16 * cb), 1);
					v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, p[2] + 16 * cb), 2);
					v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, p[3] + 16 * cb), 3);
					v = _mm512_xor_si512(_mm512_permutexvar_epi8(idx, v), flip);
					acc = _mm512_dpbusd_epi32(acc, v, _mm512_load_si512((const void *)w));
				}
				_mm_mask_storeu_epi8(out + 16 * cb, m, gm_rq16(acc, &ep[cb], &cc));
			}
		}
	}
out:
	free(wsum);
	free(zpbuf);
	free(off);
	free(tp);
	free(ep);
	free(wp);
	return fits;
}

/*
 * Depthwise without VBMI or with operands outside int8: 16 channels per
 * vector, taps accumulated with vpmulld; the valid taps of each output
 * pixel are found once, so the loop over taps has no bounds checks.
 */
NPU_TGT static void dw_avx512(const struct npu_dw *d)
{
	const struct npu_rq *rq = &d->rq;
	const struct rq_vec v = rq_vec_init(rq);
	const __m512i zp = _mm512_set1_epi32(d->zp_in);

	if (cpu_vbmi() && dw_vnni(d))
		return;

	for (uint32_t oh = d->oh_begin; oh < d->oh_end; oh++) {
		int64_t ih0 = (int64_t)oh * d->stride_h - d->pad_top;
		uint32_t kh_lo, kh_hi;

		tap_range(ih0, d->k_h, d->dil_h, d->in_h, &kh_lo, &kh_hi);
		for (uint32_t ow = 0; ow < d->out_w; ow++) {
			int64_t iw0 = (int64_t)ow * d->stride_w - d->pad_left;
			int8_t *out = d->out + oh * d->out_rs + ow * d->out_ps;
			uint32_t kw_lo, kw_hi;

			tap_range(iw0, d->k_w, d->dil_w, d->in_w, &kw_lo, &kw_hi);
			for (uint32_t c0 = 0; c0 < d->c; c0 += 16) {
				uint32_t nc = d->c - c0 < 16 ? d->c - c0 : 16;
				__mmask16 mask = (__mmask16)((1u << nc) - 1);
				__m512i acc = _mm512_loadu_si512((const void *)(rq->col + c0));

				/* No column tap (padding wider than the kernel): the
				 * row pointer below would leave the input. */
				for (uint32_t kh = kh_lo; kw_lo < kw_hi && kh < kh_hi; kh++) {
					const int8_t *x = d->in + (ih0 + (int64_t)kh * d->dil_h) * d->in_rs +
							  (iw0 + (int64_t)kw_lo * d->dil_w) * d->in_ps + c0;
					const int32_t *w = d->wt + (size_t)(kh * d->k_w + kw_lo) * d->cpad + c0;

					for (uint32_t kw = kw_lo; kw < kw_hi; kw++) {
						__m512i xv = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, x));

						acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(
							_mm512_sub_epi32(xv, zp),
							_mm512_loadu_si512((const void *)w)));
						x += d->dil_w * d->in_ps;
						w += d->cpad;
					}
				}
				_mm_mask_storeu_epi8(out + c0, mask, rq16(acc,
					_mm512_loadu_si512((const void *)(rq->mult + c0)),
					_mm512_loadu_si512((const void *)(rq->shift + c0)), &v));
			}
		}
	}
}

/* Sum of int8 as (sum of u8 after ^ 0x80) - 128 per byte, with vpsadbw. */
NPU_TGT static uint32_t sum_i8_avx512(const int8_t *p, uint32_t k)
{
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	const __m512i z = _mm512_setzero_si512();
	__m512i s = z;
	uint32_t kk = 0, blocks = 0;

	for (; kk + 64 <= k; kk += 64, blocks++)
		s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_xor_si512(
			_mm512_loadu_si512((const void *)(p + kk)), flip), z));
	if (kk < k) {
		__mmask64 tail = ~0ull >> (64 - (k - kk));

		/* Masked-off bytes load as 0 and count as 0x80 after the flip. */
		s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_xor_si512(
			_mm512_maskz_loadu_epi8(tail, p + kk), flip), z));
		blocks++;
	}
	return (uint32_t)_mm512_reduce_add_epi64(s) - 128u * 64u * blocks;
}

/*
 * int16 x int16 with VNNI's vpdpwssd (pairs multiplied and added into
 * int32 lanes): a pair sum is below 2^24, so 64 steps per lane are safe
 * before widening to the int64 total.
 */
NPU_TGT static int64_t dot16_avx512(const int16_t *a, const int16_t *b, uint32_t k)
{
	int64_t sum = 0;
	uint32_t kk = 0;

	while (kk + 32 <= k) {
		__m512i acc = _mm512_setzero_si512();

		for (uint32_t it = 0; it < 64 && kk + 32 <= k; it++, kk += 32)
			acc = _mm512_dpwssd_epi32(acc,
				_mm512_loadu_si512((const void *)(a + kk)),
				_mm512_loadu_si512((const void *)(b + kk)));
		sum += _mm512_reduce_add_epi64(_mm512_add_epi64(
			_mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc)),
			_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc, 1))));
	}
	return sum + npu_portable_dot16(a + kk, b + kk, k - kk);
}

/* Lanes of an int32 vector, widened and summed in 64 bits. */
NPU_TGT NPU_INLINE int64_t hsum64(__m512i v)
{
	return _mm512_reduce_add_epi64(_mm512_add_epi64(
		_mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)),
		_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1))));
}

/* dot16_avx512() on four columns, each loaded row of a used four times. */
NPU_TGT static void dot16x4_avx512(const int16_t *a, const int16_t *b, size_t ldb,
				   uint32_t k, int64_t out[4])
{
	const int16_t *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
	int64_t s[4] = { 0, 0, 0, 0 };
	uint32_t kk = 0;

	while (kk + 32 <= k) {
		__m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;

		for (uint32_t it = 0; it < 64 && kk + 32 <= k; it++, kk += 32) {
			__m512i x = _mm512_loadu_si512((const void *)(a + kk));

			c0 = _mm512_dpwssd_epi32(c0, x, _mm512_loadu_si512((const void *)(b + kk)));
			c1 = _mm512_dpwssd_epi32(c1, x, _mm512_loadu_si512((const void *)(b1 + kk)));
			c2 = _mm512_dpwssd_epi32(c2, x, _mm512_loadu_si512((const void *)(b2 + kk)));
			c3 = _mm512_dpwssd_epi32(c3, x, _mm512_loadu_si512((const void *)(b3 + kk)));
		}
		s[0] += hsum64(c0);
		s[1] += hsum64(c1);
		s[2] += hsum64(c2);
		s[3] += hsum64(c3);
	}
	for (int j = 0; j < 4; j++)
		out[j] = s[j] + npu_portable_dot16(a + kk, b + (size_t)j * ldb + kk, k - kk);
}

/* 16 channels per step: widen to int32, vpmulld, vpaddd. */
NPU_TGT static void mac16_avx512(int32_t *acc, const int16_t *x, const int16_t *w,
				 uint32_t c)
{
	uint32_t i = 0;

	for (; i + 16 <= c; i += 16) {
		__m512i p = _mm512_mullo_epi32(
			_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + i))),
			_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(w + i))));

		_mm512_storeu_si512(acc + i, _mm512_add_epi32(_mm512_loadu_si512(acc + i), p));
	}
	npu_portable_mac16(acc + i, x + i, w + i, c - i);
}

/*
 * ELTWISE, int8: 16 elements per step. The operands minus their zero points
 * are int32 lanes; vpmuldq takes the even ones to 64-bit products and, after
 * a 32-bit shift, the odd ones, so the requantization runs in int64 exactly
 * like the scalar one and the two halves interleave back by a blend.
 */
struct elt_vec512 {
	__m512i za, zb, ma, mb, rnd, zp, lo, hi;
	__m128i cnt;
};

NPU_TGT NPU_INLINE __m512i elt_rq512(__m512i acc, const struct elt_vec512 *v)
{
	acc = _mm512_sra_epi64(_mm512_add_epi64(acc, v->rnd), v->cnt);
	acc = _mm512_add_epi64(acc, v->zp);
	return _mm512_min_epi64(_mm512_max_epi64(acc, v->lo), v->hi);
}

NPU_TGT NPU_INLINE __m128i elt16_avx512(__m512i da, __m512i db, int add,
					const struct elt_vec512 *v)
{
	__m512i pe, po;

	if (add) {
		pe = _mm512_add_epi64(_mm512_mul_epi32(da, v->ma), _mm512_mul_epi32(db, v->mb));
		po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(da, 32), v->ma),
				      _mm512_mul_epi32(_mm512_srli_epi64(db, 32), v->mb));
	} else {
		__m512i d = _mm512_mullo_epi32(da, db);	/* fits: npu_ops_internal.h */

		pe = _mm512_mul_epi32(d, v->ma);
		po = _mm512_mul_epi32(_mm512_srli_epi64(d, 32), v->ma);
	}
	pe = elt_rq512(pe, v);
	po = elt_rq512(po, v);
	return _mm512_cvtepi32_epi8(_mm512_mask_blend_epi32(0xAAAA, pe,
							    _mm512_slli_epi64(po, 32)));
}

NPU_TGT NPU_INLINE void elt_run512(const struct elt_vec512 *v, const int8_t *a,
				   const int8_t *b, int b_scalar, int add,
				   int8_t *out, uint32_t n)
{
	__m512i db = v->zb;	/* b[0] - zb when b is a scalar */
	uint32_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512i da = _mm512_sub_epi32(_mm512_cvtepi8_epi32(
			_mm_loadu_si128((const __m128i *)(const void *)(a + i))), v->za);

		if (!b_scalar)
			db = _mm512_sub_epi32(_mm512_cvtepi8_epi32(
				_mm_loadu_si128((const __m128i *)(const void *)(b + i))), v->zb);
		_mm_storeu_si128((__m128i *)(void *)(out + i), elt16_avx512(da, db, add, v));
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m512i da = _mm512_sub_epi32(_mm512_cvtepi8_epi32(
			_mm_maskz_loadu_epi8(m, a + i)), v->za);

		if (!b_scalar)
			db = _mm512_sub_epi32(_mm512_cvtepi8_epi32(
				_mm_maskz_loadu_epi8(m, b + i)), v->zb);
		_mm_mask_storeu_epi8(out + i, m, elt16_avx512(da, db, add, v));
	}
}

NPU_TGT static void elt_i8_avx512(const struct npu_elt *e, const int8_t *a,
				  const int8_t *b, int b_scalar, int8_t *out, uint32_t n)
{
	struct elt_vec512 v = {
		.za = _mm512_set1_epi32(e->za),
		.zb = _mm512_set1_epi32(b_scalar ? b[0] - e->zb : e->zb),
		.ma = _mm512_set1_epi32(e->ma),
		.mb = _mm512_set1_epi32(e->mb),
		.rnd = _mm512_set1_epi64((int64_t)1 << (e->shift - 1)),
		.zp = _mm512_set1_epi64(e->zp_out),
		.lo = _mm512_set1_epi64(e->lo),
		.hi = _mm512_set1_epi64(e->hi),
		.cnt = _mm_cvtsi32_si128((int)e->shift),
	};

	if (e->mode == NPU_ELT_ADD)
		elt_run512(&v, a, b, b_scalar, 1, out, n);
	else
		elt_run512(&v, a, b, b_scalar, 0, out, n);
}

/*
 * LUT, int8: with VBMI, vpermi2b looks 64 bytes up in one half of the
 * table (index bits 0..6) and bit 7 picks the half. VBMI is not part of
 * this set's requirements (Cascade Lake has VNNI without it): checked once,
 * the portable loop otherwise.
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void lut_i8_vbmi(const uint8_t *table, const uint8_t *src, uint8_t *dst, size_t n)
{
	const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
	const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
	const __m512i flip = _mm512_set1_epi8((char)0x80);

	for (size_t i = 0; i < n; i += 64) {
		__mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
		__m512i u = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + i), flip);
		__m512i lo = _mm512_permutex2var_epi8(t0, u, t1);
		__m512i hi = _mm512_permutex2var_epi8(t2, u, t3);

		_mm512_mask_storeu_epi8(dst + i, m,
					_mm512_mask_blend_epi8(_mm512_movepi8_mask(u), lo, hi));
	}
}

static void lut_i8_avx512(const uint8_t *table, const uint8_t *src, uint8_t *dst, size_t n)
{
	if (cpu_vbmi())
		lut_i8_vbmi(table, src, dst, n);
	else
		npu_portable_lut_i8(table, src, dst, n);
}

const struct npu_kern npu_kern_avx512vnni = {
	.name = "avx512vnni",
	.dot_kind = NPU_DOT_S8U8,
	.gemm = gemm_avx512vnni,
	.gemm_prep = gemm_prep_avx512,
	.dw = dw_avx512,
	.sum_i8 = sum_i8_avx512,
	.dot16 = dot16_avx512,
	.dot16x4 = dot16x4_avx512,
	.mac16 = mac16_avx512,
	.elt_i8 = elt_i8_avx512,
	.lut_i8 = lut_i8_avx512,
};

#else

/* Never selected: npu_ops.c only picks it when the CPU has AVX-512 VNNI. */
const struct npu_kern npu_kern_avx512vnni = {
	.name = "avx512vnni",
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
