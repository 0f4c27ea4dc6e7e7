// SPDX-License-Identifier: MIT
/*
 * cpu_nchwc.c - fp32 kernels on the blocked layout NCHW16c (cpu_kernels.h):
 * the reorders in and out of it, convolution (one group or depthwise)
 * with its epilogue fused into the output write, global average pooling
 * and nearest upsampling.
 *
 * Convolution works on register tiles of one output row: XT consecutive
 * output pixels x two output channel blocks (24 zmm accumulators on
 * AVX-512). For every input channel and tap it loads the two 16-float
 * weight vectors once and multiplies them by the pixel's input scalar,
 * broadcast: all 16 lanes of every FMA are real output channels, and the
 * packed weights stream contiguously. A 1x1 stride-1 convolution sees
 * its whole plane as one row (a blocked plane is contiguous pixels).
 * Depthwise tiles are DT pixels of one block, one weight vector per tap.
 *
 * Threads split the work into bands of output rows x blocks, band-major:
 * the pool hands thread i the i-th contiguous range of tasks, so each
 * thread writes one spatial band of every block, and the next layer's
 * band on that thread reads mostly what the thread wrote itself.
 */
#include <immintrin.h>
#include <string.h>

#include "cpu_kernels_internal.h"

/* One vector type per width; each include of the body picks its own. */
typedef float npu_v16f __attribute__((vector_size(64)));
typedef float npu_v8f __attribute__((vector_size(32)));
typedef float npu_v4f __attribute__((vector_size(16)));
typedef int npu_v16i __attribute__((vector_size(64)));
typedef int npu_v8i __attribute__((vector_size(32)));
typedef int npu_v4i __attribute__((vector_size(16)));
/* The same, unaligned and allowed to alias float arrays. */
typedef float npu_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef float npu_v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float npu_v4u __attribute__((vector_size(16), aligned(4), may_alias));

/* On the current include's NPU_NC_V. */
#define npu_nc_load(p) ((NPU_NC_V)*(const NPU_NC_VU *)(p))
#define npu_nc_store(p, v) (*(NPU_NC_VU *)(p) = (v))
/* f - (+0) is f for every f, -0 included: a broadcast */
#define npu_nc_set1(f) ((float)(f) - (NPU_NC_V){ 0 })
/* a > b ? x : y per lane (as the row kernels' V_SEL_GT: NaN takes y) */
#define npu_nc_sel_gt(a, b, x, y) ({					\
	NPU_NC_VI m_ = (a) > (b);					\
	(NPU_NC_V)((m_ & (NPU_NC_VI)(x)) | (~m_ & (NPU_NC_VI)(y)));	\
})
#define npu_nc_max(a, b) ({						\
	NPU_NC_V a_ = (a), b_ = (b);					\
	npu_nc_sel_gt(a_, b_, a_, b_);					\
})
#define npu_nc_min(a, b) ({						\
	NPU_NC_V a_ = (a), b_ = (b);					\
	npu_nc_sel_gt(b_, a_, a_, b_);					\
})

/* What a pixel out of the input row reads: one zero block. */
static const float npu_nc_zeros[NPU_NCHWC_BLOCK] __attribute__((aligned(64)));

/* One convolution call, with the geometry the tiles see. */
struct npu_nc_conv {
	const struct npu_conv2d_params *p;
	const float *x, *w, *bias;
	float *y;
	size_t icg;		/* input groups: blocks, or channels (NCHW) */
	size_t ocb;		/* output blocks */
	size_t wob, wg;		/* packed floats per output / input block */
	/* p's geometry, or a 1x1 stride-1 plane as one row */
	size_t in_h, in_w, out_h, out_w, kh, kw, sh, sw, dh, dw, pt, pl;
	/* tasks: bands of units (a segment of an output plane, in plane
	 * order: one row, or whole tiles across rows) x 'kt' */
	size_t seg_len, segs, units, band_units, kt;
	bool nchw, depthwise;
	/*
	 * The last pixels of a segment in plane order (5 to xt - 1 of them)
	 * in one tile, part written, not in 4-, 2- and 1-pixel ones: one
	 * pass over the weights, not two or three. On a 3 x 3 plane, 3x3 512
	 * -> 512: 0.59 -> 0.28 ms, weights cold; 2048 -> 512 1x1: 0.23 ->
	 * 0.15 ms. Row by row it is no gain (56 x 56 x 64: 1.15 -> 1.16 ms).
	 */
	bool tail_full;
	/*
	 * Segments and tiles run on across images (batch folded into the
	 * pixels of a tile): units are segments of all images' planes end
	 * to end, and a tile reaching past a plane's last pixel goes on at
	 * the next image's first. Small late planes (2 x 2, 3 x 3) then keep
	 * full tiles at batch > 1, and a pass over a block pair's weights
	 * serves several images (npu_nc_fold_wins).
	 */
	bool fold;
};

/* Tile arrays hold the widest instance: XT / DT or the 4-pixel one. */
#define NPU_NC_NMAX(t) ((t) > 4 ? (t) : 4)
/*
 * How far ahead (floats: 4 taps of 16 x 16) a tile prefetches the weights
 * it streams. A late layer's weights (3x3, 512 x 512: 9.4 MB) come from
 * memory, once per tile, and the hardware prefetcher stops at each 4 KiB
 * page: 3x3 512 -> 512 on a 3 x 3 plane, weights cold, took 0.93 ms
 * without, 0.58 ms with (Zen 5, one thread; no change with them cached).
 */
#define NPU_NC_PF 1024
/* Input pixels a padded row copy holds (a wider span gathers by tap). */
#define NPU_NC_SPAN 40

/* m: the pixels of the tile written (one-group tiles; nt for the rest) */
typedef void (*npu_nc_tile_fn)(const struct npu_nc_conv *c, size_t n,
			       size_t ob, size_t oh, size_t ow0, size_t m);

/* Tiles by [pixels: XT, 4, 2, 1][blocks - 1][lanes / stride: 16 s1,
 * 16 s2, 16 any, 1 any], depthwise by [pixels: DT, 4, 2, 1][s1, s2, any] */
struct npu_nc_ops {
	int xt, dt;
	npu_nc_tile_fn tile[4][2][4];
	npu_nc_tile_fn dw[4][3];
};

#define NPU_NC_TABLE(FN, X, D) {					\
	.xt = X, .dt = D,						\
	.tile = {							\
		NPU_NC_TROW(FN, X), NPU_NC_TROW(FN, 4),			\
		NPU_NC_TROW(FN, 2), NPU_NC_TROW(FN, 1),			\
	},								\
	.dw = {								\
		NPU_NC_DROW(FN, D), NPU_NC_DROW(FN, 4),			\
		NPU_NC_DROW(FN, 2), NPU_NC_DROW(FN, 1),			\
	},								\
}
#define NPU_NC_TROW(FN, nt) NPU_NC_TROW_(FN, nt)
#define NPU_NC_TROW_(FN, nt) {						\
	{ FN(npu_nc_tile_##nt##_1_16_1), FN(npu_nc_tile_##nt##_1_16_2),	\
	  FN(npu_nc_tile_##nt##_1_16_0), FN(npu_nc_tile_##nt##_1_1_0) },	\
	{ FN(npu_nc_tile_##nt##_2_16_1), FN(npu_nc_tile_##nt##_2_16_2),	\
	  FN(npu_nc_tile_##nt##_2_16_0), FN(npu_nc_tile_##nt##_2_1_0) },	\
}
/* The same with every stride on the any-stride tiles. */
#define NPU_NC_TABLE_ANY(FN, X, D) {					\
	.xt = X, .dt = D,						\
	.tile = {							\
		NPU_NC_TROW_ANY(FN, X), NPU_NC_TROW_ANY(FN, 4),		\
		NPU_NC_TROW_ANY(FN, 2), NPU_NC_TROW_ANY(FN, 1),		\
	},								\
	.dw = {								\
		NPU_NC_DROW_ANY(FN, D), NPU_NC_DROW_ANY(FN, 4),		\
		NPU_NC_DROW_ANY(FN, 2), NPU_NC_DROW_ANY(FN, 1),		\
	},								\
}
#define NPU_NC_TROW_ANY(FN, nt) NPU_NC_TROW_ANY_(FN, nt)
#define NPU_NC_TROW_ANY_(FN, nt) {					\
	{ FN(npu_nc_tile_##nt##_1_16_0), FN(npu_nc_tile_##nt##_1_16_0),	\
	  FN(npu_nc_tile_##nt##_1_16_0), FN(npu_nc_tile_##nt##_1_1_0) },	\
	{ FN(npu_nc_tile_##nt##_2_16_0), FN(npu_nc_tile_##nt##_2_16_0),	\
	  FN(npu_nc_tile_##nt##_2_16_0), FN(npu_nc_tile_##nt##_2_1_0) },	\
}
#define NPU_NC_DROW_ANY(FN, nt) NPU_NC_DROW_ANY_(FN, nt)
#define NPU_NC_DROW_ANY_(FN, nt) {					\
	FN(npu_nc_dw_##nt##_0), FN(npu_nc_dw_##nt##_0), FN(npu_nc_dw_##nt##_0) \
}
#define NPU_NC_DROW(FN, nt) NPU_NC_DROW_(FN, nt)
#define NPU_NC_DROW_(FN, nt) {						\
	FN(npu_nc_dw_##nt##_1), FN(npu_nc_dw_##nt##_2), FN(npu_nc_dw_##nt##_0) \
}

/* AVX-512: 12 x 2 accumulators + 2 weights in the 32 zmm. */
#define NPU_NC_FN(name) name##_avx512
#define NPU_NC_TARGET __attribute__((target(NPU_TARGET_AVX512)))
#define NPU_NC_V npu_v16f
#define NPU_NC_VU npu_v16u
#define NPU_NC_VI npu_v16i
#define NPU_NC_VW 16
#define NPU_NC_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define NPU_NC_XT 12
#define NPU_NC_DT 8
#define NPU_NC_SW_CONST 1
#include "cpu_nchwc_body.h"	/* npu_nc_ops_avx512 */

/* AVX2: a block is two ymm, so fewer pixels a tile (16 registers). */
#define NPU_NC_FN(name) name##_avx2
#define NPU_NC_TARGET __attribute__((target(NPU_TARGET_AVX2)))
#define NPU_NC_V npu_v8f
#define NPU_NC_VU npu_v8u
#define NPU_NC_VI npu_v8i
#define NPU_NC_VW 8
#define NPU_NC_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define NPU_NC_XT 3
#define NPU_NC_DT 6
/* The blocked layout runs here only when asked for (nchwc=1): one
 * tile for every stride (about 220 KB less code). */
#define NPU_NC_SW_CONST 0
#include "cpu_nchwc_body.h"	/* npu_nc_ops_avx2 */

/* Portable: SSE (the x86-64 baseline), four xmm a block, no FMA. */
#define NPU_NC_FN(name) name##_portable
#define NPU_NC_TARGET
#define NPU_NC_V npu_v4f
#define NPU_NC_VU npu_v4u
#define NPU_NC_VI npu_v4i
#define NPU_NC_VW 4
#define NPU_NC_FMA(a, b, c) ((a) * (b) + (c))
#define NPU_NC_XT 3
#define NPU_NC_DT 3
#define NPU_NC_SW_CONST 0
#include "cpu_nchwc_body.h"	/* npu_nc_ops_portable */

static const struct npu_nc_ops *npu_nc_ops_get(void)
{
	switch (npu_cpu_isa_get()) {
	case NPU_CPU_ISA_AVX512:
		return &npu_nc_ops_avx512;
	case NPU_CPU_ISA_AVX2:
		return &npu_nc_ops_avx2;
	default:
		return &npu_nc_ops_portable;
	}
}

/* ---- Threading ---- */

/* Below this many multiply-adds (or floats moved) one thread does it. */
#define NPU_NC_MIN_MACS 1500000
#define NPU_NC_MIN_FLOATS (4 * NPU_VEC_GRAIN)

/* Bands for 'units' of work x 'kt' tasks each: a few tasks per thread. */
static size_t npu_nc_bands(struct npu_threadpool *pool, size_t units,
			   size_t kt, bool big)
{
	size_t t = (size_t)npu_threadpool_size(pool), b;

	if (t <= 1 || !big)
		return 1;
	b = npu_div_up(8 * t, kt);
	return b < units ? b : units;
}

static void npu_nc_run(struct npu_threadpool *pool, size_t tasks,
		       void (*fn)(void *ctx, size_t i), void *ctx, bool serial)
{
	size_t i;

	if (serial || npu_threadpool_size(pool) <= 1) {
		for (i = 0; i < tasks; i++)
			fn(ctx, i);
		return;
	}
	npu_threadpool_run(pool, fn, ctx, tasks);
}

/* ---- Reorders ---- */

struct npu_nc_plain {
	size_t batch, c, cb, hw;
	size_t plen, pb;	/* pixels a band, bands a plane */
	const float *x;
	float *y;
	size_t in_h, in_w, fh, fw;	/* upsampling */
	bool serial;		/* too small for threads */
};

static void npu_nc_plain_split(struct npu_nc_plain *r,
			       struct npu_threadpool *pool, size_t rows,
			       size_t row_floats)
{
	size_t floats = r->batch * r->cb * rows * row_floats;

	r->serial = floats < NPU_NC_MIN_FLOATS;
	r->pb = npu_nc_bands(pool, rows, r->batch * r->cb, !r->serial);
	r->plen = npu_div_up(rows, r->pb);
	r->pb = npu_div_up(rows, r->plen);
}

/* r[0..15] = the 16 x 16 transpose of r (16 floats a row). */
__attribute__((target(NPU_TARGET_AVX512))) static inline void
npu_nc_tr16(__m512 *r)
{
	__m512 t[16], u[16];
	int i, k;

	for (i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
	}
	/* u[4 i + k], 128-bit lane L: rows 4 i .. 4 i + 3 of column 4 L + k */
	for (i = 0; i < 4; i++) {
		__m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
		__m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);

		u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
		u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
		u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
		u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
	}
	for (k = 0; k < 4; k++) {
		__m512 s0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44);
		__m512 s1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xee);
		__m512 s2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
		__m512 s3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xee);

		r[k] = _mm512_shuffle_f32x4(s0, s2, 0x88);
		r[4 + k] = _mm512_shuffle_f32x4(s0, s2, 0xdd);
		r[8 + k] = _mm512_shuffle_f32x4(s1, s3, 0x88);
		r[12 + k] = _mm512_shuffle_f32x4(s1, s3, 0xdd);
	}
}

/* Pixels [p0, p1) of one block from 'lanes' planes hw apart: x -> y. */
__attribute__((target(NPU_TARGET_AVX512))) static void
npu_nc_in_avx512(const float *x, size_t hw, size_t lanes, float *y,
		 size_t p0, size_t p1)
{
	size_t p, l;

	for (p = p0; p < p1; p += 16) {
		size_t m = p1 - p < 16 ? p1 - p : 16;
		__mmask16 k = (__mmask16)((1u << m) - 1);
		__m512 r[16];

		for (l = 0; l < 16; l++)
			r[l] = l < lanes ? _mm512_maskz_loadu_ps(k, x + l * hw + p) :
			       _mm512_setzero_ps();
		npu_nc_tr16(r);
		for (l = 0; l < m; l++)
			_mm512_storeu_ps(y + (p + l) * 16, r[l]);
	}
}

__attribute__((target(NPU_TARGET_AVX512))) static void
npu_nc_out_avx512(const float *x, size_t hw, size_t lanes, float *y,
		  size_t p0, size_t p1)
{
	size_t p, l;

	for (p = p0; p < p1; p += 16) {
		size_t m = p1 - p < 16 ? p1 - p : 16;
		__mmask16 k = (__mmask16)((1u << m) - 1);
		__m512 r[16];

		for (l = 0; l < 16; l++)
			r[l] = l < m ? _mm512_loadu_ps(x + (p + l) * 16) :
			       _mm512_setzero_ps();
		npu_nc_tr16(r);
		for (l = 0; l < lanes; l++)
			_mm512_mask_storeu_ps(y + l * hw + p, k, r[l]);
	}
}

/*
 * Task t: block t % cb of band t / cb (bands of all images in order).
 * The reorders move 16 x 16 tiles: whole cache lines on the plane side
 * too (the planes of a block are often a multiple of 4 KiB apart, and 16
 * scalar streams fight over one L1 set); on AVX-512 a register transpose.
 */
static void npu_nc_reorder_in_task(void *ctx, size_t t)
{
	const struct npu_nc_plain *r = ctx;
	size_t cb = t % r->cb, u = t / r->cb, n = u / r->pb;
	size_t p0 = u % r->pb * r->plen, p1 = p0 + r->plen, p, l;
	size_t lanes = r->c - cb * 16 < 16 ? r->c - cb * 16 : 16;
	const float *x = r->x + (n * r->c + cb * 16) * r->hw;
	float *y = r->y + (n * r->cb + cb) * r->hw * 16;

	if (p1 > r->hw)
		p1 = r->hw;
	if (npu_cpu_isa_get() == NPU_CPU_ISA_AVX512) {
		npu_nc_in_avx512(x, r->hw, lanes, y, p0, p1);
		return;
	}
	for (p = p0; p < p1; p++) {
		float *d = y + p * 16;

		for (l = 0; l < lanes; l++)
			d[l] = x[l * r->hw + p];
		for (; l < 16; l++)
			d[l] = 0.0f;
	}
}

void npu_nchwc_reorder_in_f32(size_t batch, size_t c, size_t hw,
			      const float *x, float *y,
			      struct npu_threadpool *pool)
{
	struct npu_nc_plain r = { .batch = batch, .c = c,
				  .cb = npu_nchwc_blocks(c), .hw = hw,
				  .x = x, .y = y };

	if (!batch || !c || !hw)
		return;
	npu_nc_plain_split(&r, pool, hw, 16);
	npu_nc_run(pool, batch * r.pb * r.cb, npu_nc_reorder_in_task, &r,
		   r.serial);
}

static void npu_nc_reorder_out_task(void *ctx, size_t t)
{
	const struct npu_nc_plain *r = ctx;
	size_t cb = t % r->cb, u = t / r->cb, n = u / r->pb;
	size_t p0 = u % r->pb * r->plen, p1 = p0 + r->plen, p, l;
	size_t lanes = r->c - cb * 16 < 16 ? r->c - cb * 16 : 16;
	const float *x = r->x + (n * r->cb + cb) * r->hw * 16;
	float *y = r->y + (n * r->c + cb * 16) * r->hw;

	if (p1 > r->hw)
		p1 = r->hw;
	if (npu_cpu_isa_get() == NPU_CPU_ISA_AVX512) {
		npu_nc_out_avx512(x, r->hw, lanes, y, p0, p1);
		return;
	}
	for (p = p0; p < p1; p += 16) {
		size_t m = p1 - p < 16 ? p1 - p : 16, q;
		float t[16][16];

		for (q = 0; q < m; q++)
			for (l = 0; l < 16; l++)
				t[l][q] = x[(p + q) * 16 + l];
		for (l = 0; l < lanes; l++)
			memcpy(y + l * r->hw + p, t[l], m * sizeof(float));
	}
}

void npu_nchwc_reorder_out_f32(size_t batch, size_t c, size_t hw,
			       const float *x, float *y,
			       struct npu_threadpool *pool)
{
	struct npu_nc_plain r = { .batch = batch, .c = c,
				  .cb = npu_nchwc_blocks(c), .hw = hw,
				  .x = x, .y = y };

	if (!batch || !c || !hw)
		return;
	npu_nc_plain_split(&r, pool, hw, 16);
	npu_nc_run(pool, batch * r.pb * r.cb, npu_nc_reorder_out_task, &r,
		   r.serial);
}

/* ---- Convolution ---- */

static bool npu_nc_depthwise(const struct npu_conv2d_params *p)
{
	return p->groups > 1;
}

/* Packed weights: one group [OCb][ICb][kh][kw][16 in][16 out], depthwise
 * [Cb][kh][kw][16]; then the bias [OCb][16]. Pad lanes zero. */
static size_t npu_nc_weight_floats(const struct npu_conv2d_params *p)
{
	size_t taps = p->k_h * p->k_w;

	if (npu_nc_depthwise(p))
		return npu_nchwc_blocks(p->out_c) * taps * 16;
	return npu_nchwc_blocks(p->out_c) * npu_nchwc_blocks(p->in_c) * taps *
	       256;
}

size_t npu_nchwc_conv_packed_floats(const struct npu_conv2d_params *p)
{
	return npu_nc_weight_floats(p) + npu_nchwc_blocks(p->out_c) * 16;
}

void npu_nchwc_conv_pack(const struct npu_conv2d_params *p, const float *w,
			 const float *bias, float *packed)
{
	size_t taps = p->k_h * p->k_w, icb = npu_nchwc_blocks(p->in_c);
	size_t nw = npu_nc_weight_floats(p), o, i, t;
	float *pb = packed + nw;

	memset(packed, 0, npu_nchwc_conv_packed_floats(p) * sizeof(float));
	for (o = 0; o < p->out_c; o++) {
		if (npu_nc_depthwise(p)) {
			for (t = 0; t < taps; t++)
				packed[(o / 16 * taps + t) * 16 + o % 16] =
					npu_flush_subnormal(w[o * taps + t]);
		} else {
			for (i = 0; i < p->in_c; i++)
				for (t = 0; t < taps; t++)
					packed[(((o / 16 * icb + i / 16) * taps +
						 t) * 16 + i % 16) * 16 + o % 16] =
						npu_flush_subnormal(
						w[(o * p->in_c + i) * taps + t]);
		}
		pb[o] = bias ? bias[o] : 0.0f;
	}
}

/*
 * The tiles of output pixels [c0, c1) of one plane (in plane order) for
 * blocks ob.. (nb): full tiles, then the rest in 4-, 2- and 1-pixel tiles
 * (nearly as efficient a multiply-add: they still load each weight vector
 * once per 4 pixels, where one more full tile over the last pixels would
 * redo most of them).
 */
static void npu_nc_segment(const struct npu_nc_conv *c,
			   const struct npu_nc_ops *ops, size_t n, size_t ob,
			   int nb, size_t c0, size_t c1)
{
	static const int sizes[4] = { 0, 4, 2, 1 };
	const size_t plane = c->out_h * c->out_w;
	size_t p = c0;
	int v, k;

	if (c->nchw)
		v = 3;
	else
		v = c->sw == 1 ? 0 : c->sw == 2 ? 1 : 2;
	if (c->depthwise && v > 2)
		v = 2;
	for (k = 0; k < 4; k++) {
		size_t nt = k ? (size_t)sizes[k] : c->depthwise ?
			    (size_t)ops->dt : (size_t)ops->xt;
		npu_nc_tile_fn f = c->depthwise ? ops->dw[k][v] :
				   ops->tile[k][nb - 1][v];

		/* p past one plane (folded): on in the images after n */
		for (; p + nt <= c1; p += nt)
			f(c, n + p / plane, ob, p % plane / c->out_w,
			  p % c->out_w, nt);
		/* The rest in one full tile, part written (see below). */
		if (!k && p < c1 && c->tail_full && c1 - p > 4) {
			f(c, n + p / plane, ob, p % plane / c->out_w,
			  p % c->out_w, c1 - p);
			return;
		}
	}
}

/* Task t: band t / kt, block (pair) t % kt. */
static void npu_nc_conv_task(void *ctx, size_t t)
{
	const struct npu_nc_conv *c = ctx;
	const struct npu_nc_ops *ops = npu_nc_ops_get();
	size_t k = t % c->kt, u0 = t / c->kt * c->band_units;
	size_t u1 = u0 + c->band_units, u, ob;
	size_t plane = c->out_h * c->out_w;
	int nb = 1;

	if (u1 > c->units)
		u1 = c->units;
	if (c->depthwise) {
		ob = k;
	} else {
		ob = 2 * k;
		nb = ob + 1 < c->ocb ? 2 : 1;
	}
	for (u = u0; u < u1; u++) {
		/* folded: one 'plane' of all images end to end */
		size_t s = c->fold ? u : u % c->segs, c0 = s * c->seg_len;
		size_t c1 = c0 + c->seg_len, end = c->fold ?
			    c->p->batch * plane : plane;

		if (c1 > end)
			c1 = end;
		npu_nc_segment(c, ops, c->fold ? 0 : u / c->segs, ob, nb, c0,
			       c1);
	}
}

/*
 * Relative time of a run of len output pixels in tiles of xt, 4, 2 and 1:
 * a tile of fewer than 4 pixels x 2 blocks (or than a full one) has too
 * few accumulators to hide the multiply-add latency, so it costs about
 * as much as 4 pixels.
 */
static size_t npu_nc_run_cost(size_t len, size_t xt)
{
	static const size_t sizes[4] = { 0, 4, 2, 1 };
	size_t lo = xt < 4 ? xt : 4, cost = 0, k, nt;

	for (k = 0; k < 4; k++) {
		nt = k ? sizes[k] : xt;
		cost += len / nt * (nt > lo ? nt : lo);
		len %= nt;
	}
	return cost;
}

/*
 * Whether one-group tiles run on in plane order across rows rather than
 * stop at each row's end: when a row's tiles would leave short ones (7,
 * 14 pixels across a late ResNet layer), and the gathering that tiles
 * crossing a row take (about 1 in 8 of their time) costs less than that.
 * Not on an NCHW input: there a tile gathers one lane a tap, as many
 * copies as multiply-adds (128 x 12 x 12 -> 256 x 6 x 6, 3x3 stride 2:
 * 0.24 ms in rows, 0.38 ms across them).
 */
static bool npu_nc_cross_rows(const struct npu_nc_conv *c, size_t xt)
{
	size_t rows = c->out_h * npu_nc_run_cost(c->out_w, xt);
	size_t plane = npu_nc_run_cost(c->out_h * c->out_w, xt);

	return c->out_h > 1 && 8 * rows > 9 * plane;
}

/*
 * What one tile's pass over its block pair's weights costs on top of its
 * multiply-adds, in npu_nc_run_cost's unit (one pixel of a tile), when
 * the pair's tiles of all images run in one task: little while they stay
 * in L1 or L2 across the tiles (1x1 512 -> 2048 on 2 x 2, batch 8, 64 KiB
 * a pair: 4-pixel tiles per image ran as fast as 12-pixel ones across
 * images), much when a pair outgrows L2 and comes from L3 or memory each
 * pass (3x3 512 -> 512 on 3 x 3, batch 8, 576 KiB a pair: 9-pixel tiles
 * per image 2.41 ms, 12-pixel ones across images 1.99 ms; cpu-conv-bench,
 * Zen 5, one thread, interleaved).
 */
static size_t npu_nc_pass_cost(const struct npu_nc_conv *c)
{
	size_t bytes = 2 * c->wob * sizeof(float);

	return bytes <= 32 * 1024 ? 0 : bytes <= 512 * 1024 ? 1 : 8;
}

/*
 * Eighths of npu_nc_run_cost's unit for a run of len pixels in tiles of
 * xt, 4, 2, 1 (tail_full: its last 5 .. xt - 1 in one full tile), each
 * tile also paying one weight pass; gather (eighths) on every pixel.
 */
static size_t npu_nc_run_cost_w(size_t len, size_t xt, size_t pass,
				bool tail_full, size_t gather)
{
	size_t full = len / xt, rest = len % xt, cost, tiles;

	if (tail_full && rest > 4) {
		cost = (full + 1) * xt;
		tiles = full + 1;
	} else {
		cost = npu_nc_run_cost(len, xt);
		tiles = full + rest / 4 + rest % 4 / 2 + rest % 2;
	}
	return cost * (8 + gather) + tiles * pass * 8;
}

/*
 * Whether tiles run on across images: when batch x the cost of one plane
 * (its tiles as chosen at batch 1, each a pass over the weights) is more
 * than the batch's planes end to end as one run, whose tiles crossing a
 * plane's end gather their inputs (about 1 in 8 of their time): on a late
 * 2 x 2 or 3 x 3 plane a 4- or 9-pixel tile streams a block pair's
 * weights for one image, a folded 12-pixel one for up to three. Not on an
 * NCHW input (a gathered lane costs as much as its multiply-adds) nor
 * depthwise (its weights are one vector a tap). 'flat': the plane is one
 * row (1x1 stride 1): only tiles across a plane's end gather.
 */
static bool npu_nc_fold_wins(const struct npu_nc_conv *c, size_t xt,
			     bool flat)
{
	size_t batch = c->p->batch, plane = c->out_h * c->out_w;
	size_t pass = npu_nc_pass_cost(c), one, all;
	bool rows = !c->tail_full && c->out_h > 1;

	if (batch < 2 || c->nchw || c->depthwise)
		return false;
	if (rows)
		one = c->out_h * npu_nc_run_cost_w(c->out_w, xt, pass, false, 0);
	else
		one = npu_nc_run_cost_w(plane, xt, pass, c->tail_full,
					flat || c->out_h == 1 ? 0 : 1);
	all = npu_nc_run_cost_w(batch * plane, xt, pass, true,
				flat || c->out_h == 1 ? 0 : 1);
	if (flat || c->out_h == 1)	/* a tile on each plane's end */
		all += (batch - 1) * xt;
	/* a clear gain only (1 in 16): big planes keep their tiles */
	return 16 * all < 15 * batch * one;
}

/*
 * c's geometry and split for p, on 't' threads (a non-empty output): how
 * the tiles run (rows, across rows, a flat plane, across images).
 */
static void npu_nc_plan(struct npu_nc_conv *c, const struct npu_conv2d_params *p,
			bool nchw_input, size_t t)
{
	const struct npu_nc_ops *ops = npu_nc_ops_get();
	const size_t xt = (size_t)ops->xt;
	bool flat = false;

	*c = (struct npu_nc_conv){
		.p = p,
		.ocb = npu_nchwc_blocks(p->out_c),
		.in_h = p->in_h, .in_w = p->in_w,
		.out_h = p->out_h, .out_w = p->out_w,
		.kh = p->k_h, .kw = p->k_w,
		.sh = p->stride_h, .sw = p->stride_w,
		.dh = p->dil_h, .dw = p->dil_w,
		.pt = p->pad_top, .pl = p->pad_left,
		.depthwise = npu_nc_depthwise(p),
		.nchw = nchw_input && !npu_nc_depthwise(p),
	};
	c->wg = c->kh * c->kw * 256;
	c->wob = npu_nchwc_blocks(p->in_c) * c->wg;
	c->icg = c->nchw ? p->in_c : npu_nchwc_blocks(p->in_c);
	c->kt = c->depthwise ? c->ocb : npu_div_up(c->ocb, 2);
	/* 1x1, stride 1, no padding: the plane is one row of pixels. */
	if (c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && !c->pt &&
	    !c->pl && c->in_h == c->out_h && c->in_w == c->out_w) {
		flat = true;
		c->in_w = c->out_w = c->in_h * c->in_w;
		c->in_h = c->out_h = 1;
		c->seg_len = xt * 16;
		c->tail_full = !c->depthwise;
		/*
		 * A small plane (20 x 20 x 384 channels): segments short
		 * enough that each thread gets several, or the last thread's
		 * band would hold fewer of them (2 : 1 on two threads).
		 */
		if (t > 1 && c->out_w < 4 * t * c->seg_len)
			c->seg_len = npu_round_up(npu_div_up(c->out_w, 4 * t), xt);
	} else if (!c->depthwise && !c->nchw && npu_nc_cross_rows(c, xt)) {
		size_t hw = c->out_h * c->out_w;

		/* Segments of whole tiles; a few per thread, as above. */
		c->seg_len = npu_round_up(c->out_w, xt);
		c->tail_full = true;
		if (t > 1 && hw < 4 * t * c->seg_len)
			c->seg_len = npu_round_up(npu_div_up(hw, 4 * t), xt);
	} else {
		c->seg_len = c->out_w;
	}
	if (npu_nc_fold_wins(c, xt, flat)) {
		/* Segments of whole tiles over all images; as above. */
		size_t all = p->batch * c->out_h * c->out_w;

		c->fold = true;
		c->tail_full = true;
		c->seg_len = xt * 16;
		if (t > 1 && all < 4 * t * c->seg_len)
			c->seg_len = npu_round_up(npu_div_up(all, 4 * t), xt);
	}
	c->segs = npu_div_up((c->fold ? p->batch : 1) * c->out_h * c->out_w,
			     c->seg_len);
	c->units = c->fold ? c->segs : p->batch * c->segs;
}

/*
 * A strided 1x1 convolution (downsampling) without padding: whether to
 * copy the pixels it reads into a plane of its output's size first and
 * run that as a flat 1x1 stride-1 plane (12-pixel tiles in plane order)
 * instead of row by row on the strided input. A cost model of the tiles,
 * in eighths of a pixel's multiply-adds for all block pairs: a tile
 * shorter than a full one costs 1.3x per pixel (1x1 256 -> 512, 16 x 16
 * stride 2, rows of two 4-pixel tiles: 155 GFLOP/s; the same on its 8 x
 * 8 output at stride 1: 205, cpu-conv-bench, one thread), as many as 4
 * at the least; the copy about 1/16 of a pixel's work.
 */
static size_t npu_nc_tiles_cost(size_t len, size_t xt)
{
	static const size_t sizes[4] = { 0, 4, 2, 1 };
	size_t lo = xt < 4 ? xt : 4, cost = 0, k, nt;

	for (k = 0; k < 4; k++) {
		nt = k ? sizes[k] : xt;
		if (nt == xt)
			cost += len / nt * nt * 8;
		else
			cost += len / nt * (nt > lo ? nt : lo) *
				(xt >= 8 ? 104 : 80) / 10;
		len %= nt;
	}
	return cost;
}

static bool npu_nc_subsample_wins(const struct npu_conv2d_params *p,
				  bool nchw_input, size_t xt)
{
	size_t plane = p->out_h * p->out_w, rows, flat;

	if (npu_nc_depthwise(p) || nchw_input || p->k_h != 1 || p->k_w != 1 ||
	    (p->stride_h == 1 && p->stride_w == 1) || p->pad_top ||
	    p->pad_left || (p->out_h - 1) * p->stride_h >= p->in_h ||
	    (p->out_w - 1) * p->stride_w >= p->in_w)
		return false;
	rows = p->out_h * npu_nc_tiles_cost(p->out_w, xt);
	flat = npu_nc_tiles_cost(plane, xt) + plane / 2;
	return flat < rows;
}

bool npu_nchwc_conv_subsamples(const struct npu_conv2d_params *p,
			       bool nchw_input)
{
	return p->batch && p->out_c && p->out_h && p->out_w &&
	       npu_nc_subsample_wins(p, nchw_input,
				     (size_t)npu_nc_ops_get()->xt);
}

/* Task t: block t of all images: the strided pixels into a dense plane. */
struct npu_nc_sub {
	const struct npu_conv2d_params *p;
	const float *x;
	float *y;
};

static void npu_nc_subsample_task(void *ctx, size_t t)
{
	const struct npu_nc_sub *s = ctx;
	const struct npu_conv2d_params *p = s->p;
	const float *x = s->x + t * p->in_h * p->in_w * 16;
	float *y = s->y + t * p->out_h * p->out_w * 16;
	size_t i, j;

	for (i = 0; i < p->out_h; i++) {
		const float *row = x + i * p->stride_h * p->in_w * 16;

		for (j = 0; j < p->out_w; j++, y += 16)
			memcpy(y, row + j * p->stride_w * 16, 16 * sizeof(float));
	}
}

bool npu_nchwc_conv_folds(const struct npu_conv2d_params *p, bool nchw_input,
			  int threads)
{
	struct npu_nc_conv c;

	if (!p->batch || !p->out_c || !p->out_h || !p->out_w)
		return false;
	npu_nc_plan(&c, p, nchw_input, threads > 1 ? (size_t)threads : 1);
	return c.fold;
}

void npu_nchwc_conv_f32(const struct npu_conv2d_params *p, bool nchw_input,
			const float *x, const float *packed, float *y,
			struct npu_threadpool *pool)
{
	struct npu_nc_conv c;
	size_t macs, bands;

	if (!p->batch || !p->out_c || !p->out_h || !p->out_w)
		return;
	if (npu_nc_subsample_wins(p, nchw_input, (size_t)npu_nc_ops_get()->xt)) {
		size_t blocks = p->batch * npu_nchwc_blocks(p->in_c);
		size_t bytes = blocks * p->out_h * p->out_w * 16 * sizeof(float);
		struct npu_conv2d_params q = *p;
		struct npu_nc_sub s = { .p = p, .x = x };
		float *own = NULL;

		s.y = npu_threadpool_scratch(pool, bytes);
		if (!s.y)
			s.y = own = aligned_alloc(64, npu_round_up(bytes, 64));
		/* no memory for the copy: the strided rows below */
		if (s.y) {
			npu_nc_run(pool, blocks, npu_nc_subsample_task, &s,
				   bytes / sizeof(float) < NPU_NC_MIN_FLOATS);
			q.in_h = q.out_h;
			q.in_w = q.out_w;
			q.stride_h = q.stride_w = 1;
			npu_nchwc_conv_f32(&q, false, s.y, packed, y, pool);
			free(own);
			return;
		}
	}
	npu_nc_plan(&c, p, nchw_input, (size_t)npu_threadpool_size(pool));
	c.x = x;
	c.w = packed;
	c.y = y;
	c.bias = packed + npu_nc_weight_floats(p);
	macs = p->batch * p->out_h * p->out_w * p->out_c * c.kh * c.kw *
	       (c.depthwise ? 1 : p->in_c);
	bands = npu_nc_bands(pool, c.units, c.kt, macs >= NPU_NC_MIN_MACS);
	c.band_units = npu_div_up(c.units, bands);
	bands = npu_div_up(c.units, c.band_units);
	npu_nc_run(pool, bands * c.kt, npu_nc_conv_task, &c,
		   macs < NPU_NC_MIN_MACS);
}

/* ---- Global average pooling, nearest upsampling ---- */

/* The 16 lane sums of hw pixels, four pixels in flight (AVX-512). */
__attribute__((target(NPU_TARGET_AVX512))) static void
npu_nc_gap_avx512(const float *x, size_t hw, float *sum)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	size_t p = 0;

	for (; p + 4 <= hw; p += 4) {
		a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + p * 16));
		a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + p * 16 + 16));
		a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + p * 16 + 32));
		a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + p * 16 + 48));
	}
	for (; p < hw; p++)
		a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + p * 16));
	_mm512_storeu_ps(sum, _mm512_add_ps(_mm512_add_ps(a0, a1),
					    _mm512_add_ps(a2, a3)));
}

static void npu_nc_gap_task(void *ctx, size_t t)
{
	const struct npu_nc_plain *r = ctx;
	const float *x = r->x + t * r->hw * 16;
	float acc[16] = { 0 }, inv = 1.0f / (float)r->hw;
	size_t p, l;

	if (npu_cpu_isa_get() == NPU_CPU_ISA_AVX512) {
		npu_nc_gap_avx512(x, r->hw, acc);
	} else {
		for (p = 0; p < r->hw; p++)
			for (l = 0; l < 16; l++)
				acc[l] += x[p * 16 + l];
	}
	for (l = 0; l < 16; l++)
		r->y[t * 16 + l] = acc[l] * inv;
}

void npu_nchwc_global_avgpool_f32(size_t batch, size_t c, size_t hw,
				  const float *x, float *y,
				  struct npu_threadpool *pool)
{
	struct npu_nc_plain r = { .batch = batch, .c = c,
				  .cb = npu_nchwc_blocks(c), .hw = hw,
				  .x = x, .y = y };
	size_t planes = batch * r.cb;

	if (!planes)
		return;
	if (!hw) {
		memset(y, 0, planes * 16 * sizeof(float));
		return;
	}
	npu_nc_run(pool, planes, npu_nc_gap_task, &r,
		   planes * hw * 16 < NPU_NC_MIN_FLOATS || planes == 1);
}

/* Task t: block t % cb of band t / cb of output rows. */
static void npu_nc_upsample_task(void *ctx, size_t t)
{
	const struct npu_nc_plain *r = ctx;
	size_t cb = t % r->cb, u = t / r->cb, n = u / r->pb;
	size_t oh = r->in_h * r->fh, ow = r->in_w * r->fw;
	size_t y0 = u % r->pb * r->plen, y1 = y0 + r->plen, i, j;
	const float *x = r->x + (n * r->cb + cb) * r->in_h * r->in_w * 16;
	float *y = r->y + (n * r->cb + cb) * oh * ow * 16;

	if (y1 > oh)
		y1 = oh;
	for (i = y0; i < y1; i++) {
		const float *src = x + i / r->fh * r->in_w * 16;
		float *dst = y + i * ow * 16;

		/* A repeated row is the one above it, already written. */
		if (i > y0 && i % r->fh) {
			memcpy(dst, dst - ow * 16, ow * 16 * sizeof(float));
			continue;
		}
		for (j = 0; j < ow; j++)
			memcpy(dst + j * 16, src + j / r->fw * 16,
			       16 * sizeof(float));
	}
}

void npu_nchwc_upsample_nearest_f32(size_t batch, size_t c, size_t in_h,
				    size_t in_w, size_t fh, size_t fw,
				    const float *x, float *y,
				    struct npu_threadpool *pool)
{
	struct npu_nc_plain r = { .batch = batch, .c = c,
				  .cb = npu_nchwc_blocks(c), .x = x, .y = y,
				  .in_h = in_h, .in_w = in_w, .fh = fh,
				  .fw = fw };

	if (!batch || !c || !in_h || !in_w || !fh || !fw)
		return;
	npu_nc_plain_split(&r, pool, in_h * fh, in_w * fw * 16);
	npu_nc_run(pool, batch * r.pb * r.cb, npu_nc_upsample_task, &r,
		   r.serial);
}
