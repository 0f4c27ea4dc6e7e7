// SPDX-License-Identifier: MIT
/*
 * npu_kern_avx512.c - AVX-512 VNNI kernels.
 *
 * vpdpbusd multiplies unsigned by signed bytes and adds groups of four
 * products into int32 lanes without intermediate saturation (unlike
 * vpmaddubsw, whose int16 sums saturate). The activation side is fed as
 * u = a ^ 0x80 = a + 128 and the weights as they are, so the kernel sums
 * u * b; npu_ops.c folds the +128 and both zero points back in per channel
 * and per row (NPU_DOT_U8S8). Everything is modulo 2^32, so the folding
 * is exact even when the accumulator wraps.
 *
 * The GEMM is the dot-product form: rows of a and columns of b are both
 * contiguous in k, which is how CONV2D weights and MATMUL's b are stored,
 * so nothing is repacked. A 4x4 tile keeps 16 accumulators in registers,
 * reduces them to one vector with lane 4 * i + j = out[i][j] and
 * requantizes 16 outputs at once in 64-bit lanes.
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

/* Per 128-bit lane q: [sum_q v0, sum_q v1, sum_q v2, sum_q v3]. */
NPU_TGT NPU_INLINE __m512i red4(__m512i v0, __m512i v1, __m512i v2, __m512i v3)
{
	__m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1),
				      _mm512_unpackhi_epi32(v0, v1));
	__m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(v2, v3),
				      _mm512_unpackhi_epi32(v2, v3));

	return _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1),
				_mm512_unpackhi_epi64(t0, t1));
}

/* Lane 4 * g + j = total of s_g's column j over the four 128-bit lanes. */
NPU_TGT NPU_INLINE __m512i red16(__m512i s0, __m512i s1, __m512i s2, __m512i s3)
{
	__m512i w01 = _mm512_add_epi32(_mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(1, 0, 1, 0)),
				       _mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(3, 2, 3, 2)));
	__m512i w23 = _mm512_add_epi32(_mm512_shuffle_i32x4(s2, s3, _MM_SHUFFLE(1, 0, 1, 0)),
				       _mm512_shuffle_i32x4(s2, s3, _MM_SHUFFLE(3, 2, 3, 2)));

	return _mm512_add_epi32(_mm512_shuffle_i32x4(w01, w23, _MM_SHUFFLE(2, 0, 2, 0)),
				_mm512_shuffle_i32x4(w01, w23, _MM_SHUFFLE(3, 1, 3, 1)));
}

#define DOT_STEP(MR, LOAD_A, LOAD_B)						\
	do {									\
		__m512i u0 = _mm512_xor_si512(LOAD_A(a0), flip);		\
		__m512i u1 = MR > 1 ? _mm512_xor_si512(LOAD_A(a1), flip) : u0;	\
		__m512i u2 = MR > 1 ? _mm512_xor_si512(LOAD_A(a2), flip) : u0;	\
		__m512i u3 = MR > 1 ? _mm512_xor_si512(LOAD_A(a3), flip) : u0;	\
		__m512i w;							\
		w = LOAD_B(b0);							\
		c00 = _mm512_dpbusd_epi32(c00, u0, w);				\
		if (MR > 1) {							\
			c10 = _mm512_dpbusd_epi32(c10, u1, w);			\
			c20 = _mm512_dpbusd_epi32(c20, u2, w);			\
			c30 = _mm512_dpbusd_epi32(c30, u3, w);			\
		}								\
		w = LOAD_B(b1);							\
		c01 = _mm512_dpbusd_epi32(c01, u0, w);				\
		if (MR > 1) {							\
			c11 = _mm512_dpbusd_epi32(c11, u1, w);			\
			c21 = _mm512_dpbusd_epi32(c21, u2, w);			\
			c31 = _mm512_dpbusd_epi32(c31, u3, w);			\
		}								\
		w = LOAD_B(b2);							\
		c02 = _mm512_dpbusd_epi32(c02, u0, w);				\
		if (MR > 1) {							\
			c12 = _mm512_dpbusd_epi32(c12, u1, w);			\
			c22 = _mm512_dpbusd_epi32(c22, u2, w);			\
			c32 = _mm512_dpbusd_epi32(c32, u3, w);			\
		}								\
		w = LOAD_B(b3);							\
		c03 = _mm512_dpbusd_epi32(c03, u0, w);				\
		if (MR > 1) {							\
			c13 = _mm512_dpbusd_epi32(c13, u1, w);			\
			c23 = _mm512_dpbusd_epi32(c23, u2, w);			\
			c33 = _mm512_dpbusd_epi32(c33, u3, w);			\
		}								\
	} while (0)

#define LD_TAIL(p)	_mm512_maskz_loadu_epi8(tail, (const void *)((p) + kk))

/*
 * One MR x 4 tile (MR = 4 or 1), returned reduced: lane 4 * i + j holds
 * sum_k u[i][k] * b[j][k]. The k tail is a masked load: zeros in b make
 * the 0x80 bytes of the tail of u contribute nothing.
 */
#define DEFINE_TILE(MR)								\
NPU_TGT NPU_INLINE __m512i tile##MR(const int8_t *a0, const int8_t *a1,	\
				    const int8_t *a2, const int8_t *a3,		\
				    const int8_t *b0, const int8_t *b1,		\
				    const int8_t *b2, const int8_t *b3,		\
				    uint32_t k)					\
{										\
	const __m512i flip = _mm512_set1_epi8((char)0x80);			\
	__m512i z = _mm512_setzero_si512();					\
	__m512i c00 = z, c01 = z, c02 = z, c03 = z;				\
	__m512i c10 = z, c11 = z, c12 = z, c13 = z;				\
	__m512i c20 = z, c21 = z, c22 = z, c23 = z;				\
	__m512i c30 = z, c31 = z, c32 = z, c33 = z;				\
	uint32_t kk = 0;							\
										\
	(void)a1; (void)a2; (void)a3;						\
	/* One loop body: full blocks load under an all-ones mask. */	\
	for (; kk < k; kk += 64) {						\
		__mmask64 tail = k - kk >= 64 ? ~0ull : ~0ull >> (64 - (k - kk)); \
		DOT_STEP(MR, LD_TAIL, LD_TAIL);					\
	}									\
	return red16(red4(c00, c01, c02, c03), red4(c10, c11, c12, c13),	\
		     red4(c20, c21, c22, c23), red4(c30, c31, c32, c33));	\
}

DEFINE_TILE(1)

/*
 * The 4 x 4 tile's k loop in assembly: GCC 12 does not keep 16 intrinsic
 * accumulators plus operands in the 32 zmm registers (it spills and
 * shuffles them every iteration, costing over half the throughput).
 * zmm0-15 accumulate c[i][j] = zmm(4 * i + j), zmm16-19 hold u = a ^ 0x80
 * of the four rows, zmm20 one column of b, zmm21 the 0x80 bytes.
 */
#define NPU_STR(x) #x
#define ACC_COL(b, r0, r1, r2, r3)					\
	"vmovdqu8 (%[" b "],%[off]), %%zmm20%{%%k1%}%{z%}\n\t"		\
	"vpdpbusd %%zmm20, %%zmm16, %%zmm" NPU_STR(r0) "\n\t"		\
	"vpdpbusd %%zmm20, %%zmm17, %%zmm" NPU_STR(r1) "\n\t"		\
	"vpdpbusd %%zmm20, %%zmm18, %%zmm" NPU_STR(r2) "\n\t"		\
	"vpdpbusd %%zmm20, %%zmm19, %%zmm" NPU_STR(r3) "\n\t"
#define ACC_COL_FULL(b, r0, r1, r2, r3)				\
	"vmovdqu64 (%[" b "],%[off]), %%zmm20\n\t"			\
	"vpdpbusd %%zmm20, %%zmm16, %%zmm" NPU_STR(r0) "\n\t"		\
	"vpdpbusd %%zmm20, %%zmm17, %%zmm" NPU_STR(r1) "\n\t"		\
	"vpdpbusd %%zmm20, %%zmm18, %%zmm" NPU_STR(r2) "\n\t"		\
	"vpdpbusd %%zmm20, %%zmm19, %%zmm" NPU_STR(r3) "\n\t"
#define LOAD_ROWS_FULL							\
	"vpxord (%[a0],%[off]), %%zmm21, %%zmm16\n\t"			\
	"vpxord (%[a1],%[off]), %%zmm21, %%zmm17\n\t"			\
	"vpxord (%[a2],%[off]), %%zmm21, %%zmm18\n\t"			\
	"vpxord (%[a3],%[off]), %%zmm21, %%zmm19\n\t"
#define LOAD_ROWS							\
	"vmovdqu8 (%[a0],%[off]), %%zmm16%{%%k1%}%{z%}\n\t"		\
	"vmovdqu8 (%[a1],%[off]), %%zmm17%{%%k1%}%{z%}\n\t"		\
	"vmovdqu8 (%[a2],%[off]), %%zmm18%{%%k1%}%{z%}\n\t"		\
	"vmovdqu8 (%[a3],%[off]), %%zmm19%{%%k1%}%{z%}\n\t"		\
	"vpxord %%zmm21, %%zmm16, %%zmm16\n\t"				\
	"vpxord %%zmm21, %%zmm17, %%zmm17\n\t"				\
	"vpxord %%zmm21, %%zmm18, %%zmm18\n\t"				\
	"vpxord %%zmm21, %%zmm19, %%zmm19\n\t"
#define STORE_ACC(r)	"vmovdqu64 %%zmm" NPU_STR(r) ", " NPU_STR(r) "*64(%[acc])\n\t"

NPU_TGT NPU_INLINE __m512i tile4(const int8_t *a0, const int8_t *a1,
				 const int8_t *a2, const int8_t *a3,
				 const int8_t *b0, const int8_t *b1,
				 const int8_t *b2, const int8_t *b3, uint32_t k)
{
	__m512i acc[16];
	uint64_t full = k / 64, off = 0;
	uint64_t tail = k % 64 ? ~0ull >> (64 - k % 64) : 0;

	__asm__ volatile(
		"vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
		"vmovdqa64 %%zmm0, %%zmm1\n\t" "vmovdqa64 %%zmm0, %%zmm2\n\t"
		"vmovdqa64 %%zmm0, %%zmm3\n\t" "vmovdqa64 %%zmm0, %%zmm4\n\t"
		"vmovdqa64 %%zmm0, %%zmm5\n\t" "vmovdqa64 %%zmm0, %%zmm6\n\t"
		"vmovdqa64 %%zmm0, %%zmm7\n\t" "vmovdqa64 %%zmm0, %%zmm8\n\t"
		"vmovdqa64 %%zmm0, %%zmm9\n\t" "vmovdqa64 %%zmm0, %%zmm10\n\t"
		"vmovdqa64 %%zmm0, %%zmm11\n\t" "vmovdqa64 %%zmm0, %%zmm12\n\t"
		"vmovdqa64 %%zmm0, %%zmm13\n\t" "vmovdqa64 %%zmm0, %%zmm14\n\t"
		"vmovdqa64 %%zmm0, %%zmm15\n\t"
		"movl $0x80808080, %%eax\n\t"
		"vpbroadcastd %%eax, %%zmm21\n\t"
		"test %[full], %[full]\n\t"
		"jz 2f\n\t"
		".p2align 4\n"
		"1:\n\t"
		LOAD_ROWS_FULL
		ACC_COL_FULL("b0", 0, 4, 8, 12) ACC_COL_FULL("b1", 1, 5, 9, 13)
		ACC_COL_FULL("b2", 2, 6, 10, 14) ACC_COL_FULL("b3", 3, 7, 11, 15)
		"add $64, %[off]\n\t"
		"dec %[full]\n\t"
		"jnz 1b\n"
		"2:\n\t"
		"test %[tail], %[tail]\n\t"
		"jz 3f\n\t"
		"kmovq %[tail], %%k1\n\t"
		LOAD_ROWS
		ACC_COL("b0", 0, 4, 8, 12) ACC_COL("b1", 1, 5, 9, 13)
		ACC_COL("b2", 2, 6, 10, 14) ACC_COL("b3", 3, 7, 11, 15)
		"3:\n\t"
		STORE_ACC(0) STORE_ACC(1) STORE_ACC(2) STORE_ACC(3)
		STORE_ACC(4) STORE_ACC(5) STORE_ACC(6) STORE_ACC(7)
		STORE_ACC(8) STORE_ACC(9) STORE_ACC(10) STORE_ACC(11)
		STORE_ACC(12) STORE_ACC(13) STORE_ACC(14) STORE_ACC(15)
		: [full] "+r"(full), [off] "+r"(off)
		: [a0] "r"(a0), [a1] "r"(a1), [a2] "r"(a2), [a3] "r"(a3),
		  [b0] "r"(b0), [b1] "r"(b1), [b2] "r"(b2), [b3] "r"(b3),
		  [tail] "r"(tail), [acc] "r"(acc)
		: "eax", "k1", "cc", "memory",
		  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
		  "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21");
	return red16(red4(acc[0], acc[1], acc[2], acc[3]),
		     red4(acc[4], acc[5], acc[6], acc[7]),
		     red4(acc[8], acc[9], acc[10], acc[11]),
		     red4(acc[12], acc[13], acc[14], acc[15]));
}


/* Requantizes a reduced tile and stores its valid mr x nv corner. */
NPU_TGT NPU_INLINE void tile_store(const struct npu_gemm *g, const struct rq_vec *v,
				   __m512i acc, __m512i row, uint32_t i0,
				   uint32_t mr, uint32_t j0)
{
	const struct npu_rq *rq = &g->rq;
	__m512i col = _mm512_broadcast_i32x4(_mm_loadu_si128((const void *)(rq->col + j0)));
	__m512i mult = _mm512_broadcast_i32x4(_mm_loadu_si128((const void *)(rq->mult + j0)));
	__m512i shift = _mm512_broadcast_i32x4(_mm_loadu_si128((const void *)(rq->shift + j0)));
	uint32_t nv = g->n - j0 < 4 ? g->n - j0 : 4;
	uint8_t bytes[16];

	acc = _mm512_add_epi32(_mm512_add_epi32(acc, col), row);
	_mm_storeu_si128((void *)bytes, rq16(acc, mult, shift, v));
	if (nv == 4)
		for (uint32_t r = 0; r < mr; r++)
			memcpy(g->orow[i0 + r] + j0, bytes + 4 * r, 4);
	else
		for (uint32_t r = 0; r < mr; r++)
			memcpy(g->orow[i0 + r] + j0, bytes + 4 * r, nv);
}

/*
 * Columns are taken in blocks of about 32 KiB of b so the block stays in
 * L1 while every row tile passes over it; a row tile's k bytes then come
 * from L1 for all but the first column tile of a block.
 */
NPU_TGT static void gemm_avx512vnni(const struct npu_gemm *g)
{
	const struct rq_vec v = rq_vec_init(&g->rq);
	const __m512i row_idx = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2,
						 1, 1, 1, 1, 0, 0, 0, 0);
	uint32_t m = g->m, n = g->n, k = g->k;
	uint32_t nb = (32768 / k) & ~3u;

	if (nb < 4)
		nb = 4;
	for (uint32_t jb = 0; jb < n; jb += nb) {
		uint32_t je = n - jb < nb ? n : jb + nb, i0 = 0;

		for (; i0 + 4 <= m; i0 += 4) {
			const int8_t *a0 = g->arow[i0], *a1 = g->arow[i0 + 1];
			const int8_t *a2 = g->arow[i0 + 2], *a3 = g->arow[i0 + 3];
			__m512i row = _mm512_setzero_si512();

			if (g->row)
				row = _mm512_permutexvar_epi32(row_idx, _mm512_castsi128_si512(
					_mm_loadu_si128((const void *)(g->row + i0))));
			for (uint32_t j0 = jb; j0 < je; j0 += 4) {
				/* Past n, repeat the last column and drop its results. */
				const int8_t *b0 = g->b + (size_t)j0 * g->ldb;
				const int8_t *b1 = g->b + (size_t)(j0 + 1 < n ? j0 + 1 : n - 1) * g->ldb;
				const int8_t *b2 = g->b + (size_t)(j0 + 2 < n ? j0 + 2 : n - 1) * g->ldb;
				const int8_t *b3 = g->b + (size_t)(j0 + 3 < n ? j0 + 3 : n - 1) * g->ldb;

				tile_store(g, &v, tile4(a0, a1, a2, a3, b0, b1, b2, b3, k),
					   row, i0, 4, j0);
			}
		}
		for (; i0 < m; i0++) {
			const int8_t *a0 = g->arow[i0];
			__m512i row = _mm512_set1_epi32(g->row ? g->row[i0] : 0);

			for (uint32_t j0 = jb; j0 < je; j0 += 4) {
				const int8_t *b0 = g->b + (size_t)j0 * g->ldb;
				const int8_t *b1 = g->b + (size_t)(j0 + 1 < n ? j0 + 1 : n - 1) * g->ldb;
				const int8_t *b2 = g->b + (size_t)(j0 + 2 < n ? j0 + 2 : n - 1) * g->ldb;
				const int8_t *b3 = g->b + (size_t)(j0 + 3 < n ? j0 + 3 : n - 1) * g->ldb;

				tile_store(g, &v, tile1(a0, a0, a0, a0, b0, b1, b2, b3, k),
					   row, i0, 1, j0);
			}
		}
	}
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

/*
 * Depthwise: 16 channels per vector, taps accumulated with vpmulld; the
 * valid taps of each output pixel are found once, so the loop over taps
 * has no bounds checks.
 */
NPU_TGT static void dw_avx512(const struct npu_dw *d)
{
	const struct npu_rq *rq = &d->rq;
	const struct rq_vec v = rq_vec_init(rq);
	const __m512i zp = _mm512_set1_epi32(d->zp_in);

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

				for (uint32_t kh = kh_lo; kh < kh_hi; kh++) {
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
	static int vbmi = -1;
	int has = __atomic_load_n(&vbmi, __ATOMIC_RELAXED);

	if (has < 0) {
		__builtin_cpu_init();
		has = !!__builtin_cpu_supports("avx512vbmi");
		__atomic_store_n(&vbmi, has, __ATOMIC_RELAXED);
	}
	if (has)
		lut_i8_vbmi(table, src, dst, n);
	else
		npu_portable_lut_i8(table, src, dst, n);
}

const struct npu_kern npu_kern_avx512vnni = {
	.name = "avx512vnni",
	.dot_kind = NPU_DOT_U8S8,
	.gemm = gemm_avx512vnni,
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
