// SPDX-License-Identifier: MIT
/*
 * test_cpu_nchwc.c - the NCHW16c kernels (cpu_nchwc.c) against the NCHW
 * ones: every convolution also runs through npu_conv2d_f32 on the same
 * data, and the blocked result, reordered back, must agree with it.
 * meson runs this binary once per code path (NPU_CPU_ISA=..., which main()
 * applies).
 *
 * The lanes of a blocked input past its channels are filled with garbage,
 * NaN and infinities included (the layout allows anything there, e.g. the
 * 0 / 0 of a Div): a kernel that let them reach a real channel fails.
 *
 * Tolerance per element: both results are within the conv tolerance of
 * test_cpu_kernels.c of the exact value, so their difference is within
 * twice it; the activation can stretch that by up to 1.5 (hard swish),
 * hence 4 x (4 eps (K + 3) mag + 2e-6 |ref|), mag = sum |w x| + |bias| +
 * |res|, K = in_c / groups * k_h * k_w.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_kernels.h"
#include "kernel_test_util.h"

#define B NPU_NCHWC_BLOCK

/* 64-byte aligned, n floats rounded up to whole cache lines. */
static float *alloc_floats(size_t n)
{
	float *p = aligned_alloc(64, ((n ? n : 1) * sizeof(float) + 63) / 64 * 64);

	assert_non_null(p);
	return p;
}

/* Garbage in the lanes of a blocked tensor past channel c: NaN, +-inf,
 * large values. */
static void spoil_pad_lanes(struct rng *r, float *xb, size_t batch, size_t c,
			    size_t hw)
{
	static const float odd[3] = { NAN, INFINITY, -INFINITY };
	size_t cb = npu_nchwc_blocks(c), n, p, l, k = 0;

	if (c % B == 0)
		return;
	for (n = 0; n < batch; n++)
		for (p = 0; p < hw; p++)
			for (l = c % B; l < B; l++, k++)
				xb[((n * cb + cb - 1) * hw + p) * B + l] =
					k % 4 < 3 ? odd[k % 4] : 1e30f * rng_float(r);
}

/* ---- reorders ---- */

static void check_reorder(struct rng *r, size_t batch, size_t c, size_t hw,
			  struct npu_threadpool *pool)
{
	size_t cb = npu_nchwc_blocks(c), n, ch, p, l;
	float *x = alloc_floats(batch * c * hw), *back = alloc_floats(batch * c * hw);
	float *xb = alloc_floats(batch * cb * hw * B);

	fill_random(r, x, batch * c * hw);
	fill_nan(xb, batch * cb * hw * B);
	fill_nan(back, batch * c * hw);
	npu_nchwc_reorder_in_f32(batch, c, hw, x, xb, pool);
	for (n = 0; n < batch; n++)
		for (p = 0; p < hw; p++)
			for (ch = 0; ch < cb * B; ch++) {
				float got = xb[((n * cb + ch / B) * hw + p) * B + ch % B];
				float want = ch < c ? x[(n * c + ch) * hw + p] : 0.0f;

				if (memcmp(&got, &want, sizeof(got)))
					fail_msg("reorder in n%zu c%zu hw%zu: "
						 "[%zu][%zu][%zu] = %g want %g",
						 batch, c, hw, n, ch, p, got, want);
			}
	/* Out must ignore the pad lanes, whatever they hold. */
	spoil_pad_lanes(r, xb, batch, c, hw);
	npu_nchwc_reorder_out_f32(batch, c, hw, xb, back, pool);
	assert_memory_equal(x, back, batch * c * hw * sizeof(float));
	(void)l;
	free(x);
	free(back);
	free(xb);
}

static void test_nchwc_reorder_round_trip(void **state)
{
	static const size_t cs[] = { 1, 3, 15, 16, 17, 24, 40, 96 };
	static const size_t hws[] = { 1, 5, 13 * 31, 31 * 31, 160 * 160 };
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5eed1 };
	size_t i, j;

	(void)state;
	assert_non_null(pool);
	for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
		for (j = 0; j < sizeof(hws) / sizeof(hws[0]); j++) {
			if (cs[i] * hws[j] > 400000)
				continue;
			check_reorder(&r, 1 + (i + j) % 2, cs[i], hws[j], NULL);
			check_reorder(&r, 1 + (i + j) % 2, cs[i], hws[j], pool);
		}
	check_reorder(&r, 2, 40, 160 * 160, pool);
	npu_threadpool_destroy(pool);
}

/* ---- convolution ---- */

struct nc_case {
	size_t batch, in_c, out_c, h, w, kh, kw, sh, sw, dh, dw;
	size_t pt, pl, pb, pr;
	bool depthwise, nchw, bias, res;
	enum npu_cpu_act act;
	bool post;
	int threads;
};

static void set_act(struct rng *r, struct npu_cpu_act_params *a,
		    enum npu_cpu_act kind, bool post)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->act_min = -0.25f + 0.2f * rng_float(r);
	a->act_max = 0.5f + 0.4f * rng_float(r);
	a->alpha = kind == NPU_CPU_ACT_HARD_SIGMOID ? 0.2f : 0.1f + 0.05f * rng_float(r);
	a->beta = 0.5f;
	a->post = post;
	a->post_scale = 1.5f + rng_float(r);
	a->post_shift = rng_float(r);
}

static int cases_run;

static void check_nchwc_conv(struct rng *r, const struct nc_case *cc,
			     struct npu_threadpool *pool2)
{
	struct npu_threadpool *pool = cc->threads > 1 ? pool2 : NULL;
	struct npu_conv2d_params p = {
		.batch = cc->batch, .in_c = cc->in_c, .in_h = cc->h, .in_w = cc->w,
		.out_c = cc->out_c, .k_h = cc->kh, .k_w = cc->kw,
		.stride_h = cc->sh, .stride_w = cc->sw, .dil_h = cc->dh,
		.dil_w = cc->dw, .pad_top = cc->pt, .pad_left = cc->pl,
		.groups = cc->depthwise ? cc->in_c : 1,
	};
	size_t icb = npu_nchwc_blocks(cc->in_c), ocb = npu_nchwc_blocks(cc->out_c);
	size_t xs, ws, ys, ybs, hw, ohw, kdim, nw, b, oc, i;
	float *x, *w, *bias, *res = NULL, *resb = NULL, *xb = NULL, *packed;
	float *yref, *yb, *y;
	struct npu_conv2d_params rp;

	p.out_h = out_extent(cc->h, cc->kh, cc->sh, cc->dh, cc->pt, cc->pb);
	p.out_w = out_extent(cc->w, cc->kw, cc->sw, cc->dw, cc->pl, cc->pr);
	if (!p.out_h || !p.out_w)
		return;
	set_act(r, &p.act, cc->act, cc->post);
	hw = p.in_h * p.in_w;
	ohw = p.out_h * p.out_w;
	xs = p.batch * p.in_c * hw;
	ws = p.out_c * (p.in_c / p.groups) * p.k_h * p.k_w;
	ys = p.batch * p.out_c * ohw;
	ybs = p.batch * ocb * ohw * B;
	kdim = (p.in_c / p.groups) * p.k_h * p.k_w;
	x = alloc_floats(xs);
	w = alloc_floats(ws);
	bias = alloc_floats(p.out_c);
	yref = alloc_floats(ys);
	y = alloc_floats(ys);
	yb = alloc_floats(ybs + 1);
	fill_random(r, x, xs);
	fill_random(r, w, ws);
	fill_random(r, bias, p.out_c);
	if (cc->res) {
		res = alloc_floats(ys);
		resb = alloc_floats(ybs);
		fill_random(r, res, ys);
		npu_nchwc_reorder_in_f32(p.batch, p.out_c, ohw, res, resb, NULL);
		spoil_pad_lanes(r, resb, p.batch, p.out_c, ohw);
	}

	/* The reference: the NCHW kernel on the same data. */
	rp = p;
	rp.residual = res;
	assert_true(npu_conv2d_f32(&rp, x, w, cc->bias ? bias : NULL, yref,
				   NULL, pool));

	nw = npu_nchwc_conv_packed_floats(&p);
	packed = alloc_floats(nw);
	fill_nan(packed, nw);
	npu_nchwc_conv_pack(&p, w, cc->bias ? bias : NULL, packed);
	for (i = 0; i < nw; i++)
		if (isnan(packed[i]))
			fail_msg("packed[%zu] of %zu not written", i, nw);
	if (!cc->nchw) {
		xb = alloc_floats(p.batch * icb * hw * B);
		npu_nchwc_reorder_in_f32(p.batch, p.in_c, hw, x, xb, pool);
		spoil_pad_lanes(r, xb, p.batch, p.in_c, hw);
	}
	fill_nan(yb, ybs);
	yb[ybs] = 4321.0f;
	p.residual = resb;
	npu_nchwc_conv_f32(&p, cc->nchw, cc->nchw ? x : xb, packed, yb, pool);
	assert_true(yb[ybs] == 4321.0f);
	if (pool) {
		/* The tiles do not depend on the split: bitwise the same. */
		float *y1 = alloc_floats(ybs);

		npu_nchwc_conv_f32(&p, cc->nchw, cc->nchw ? x : xb, packed, y1,
				   NULL);
		assert_memory_equal(y1, yb, ybs * sizeof(float));
		free(y1);
	}
	fill_nan(y, ys);
	npu_nchwc_reorder_out_f32(p.batch, p.out_c, ohw, yb, y, NULL);
	p.residual = res;

	for (b = 0; b < p.batch; b++)
	for (oc = 0; oc < p.out_c; oc++)
	for (i = 0; i < ohw; i++) {
		size_t yi = (b * p.out_c + oc) * ohw + i;
		double ref = yref[yi], got = y[yi], tol, mag;

		/* The error scale of this output: sum |w x| + |bias|. */
		conv_ref(&p, x, w, cc->bias ? bias : NULL, b, oc, i / p.out_w,
			 i % p.out_w, &mag);

		if (res)
			mag += fabs(res[yi]);
		tol = 4.0 * FLT_EPSILON * (double)(kdim + 3) * mag + 2e-6 * fabs(ref);
		if (p.act.post)
			tol = tol * fabs(p.act.post_scale) +
			      4.0 * FLT_EPSILON * (fabs(ref) + fabs(p.act.post_shift));
		tol = 4.0 * tol + 1e-30;
		if (!(fabs(got - ref) <= tol))
			fail_msg("nchwc conv n%zu c%zu %zux%zu -> oc%zu %zux%zu "
				 "k%zux%zu s%zu,%zu d%zu,%zu pads %zu,%zu,%zu,%zu "
				 "%s%s bias %d res %d act %d post %d threads %d: "
				 "y[%zu][%zu][%zu][%zu] = %.9g want %.9g (tol %.3g)",
				 p.batch, p.in_c, p.in_h, p.in_w, p.out_c, p.out_h,
				 p.out_w, p.k_h, p.k_w, p.stride_h, p.stride_w,
				 p.dil_h, p.dil_w, cc->pt, cc->pl, cc->pb, cc->pr,
				 cc->depthwise ? "depthwise" : "groups 1",
				 cc->nchw ? " nchw input" : "", cc->bias, cc->res,
				 p.act.kind, p.act.post, cc->threads, b, oc,
				 i / p.out_w, i % p.out_w, got, ref, tol);
	}
	cases_run++;
	free(x);
	free(w);
	free(bias);
	free(res);
	free(resb);
	free(xb);
	free(packed);
	free(yref);
	free(yb);
	free(y);
}

/* Every listed feature at least once, including the threaded sizes. */
static const struct nc_case nc_fixed[] = {
	/* 1x1 stride 1: the plane as one row */
	{ 1, 16, 32, 13, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, true, false, NPU_CPU_ACT_RELU, false, 1 },
	{ 1, 96, 96, 31, 31, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_HARD_SWISH, false, 2 },
	{ 2, 17, 40, 31, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, false, true, NPU_CPU_ACT_NONE, true, 2 },
	{ 1, 40, 24, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, true, false, NPU_CPU_ACT_SIGMOID, false, 1 },
	/* 1x1 with a stride or padding: not flat */
	{ 1, 24, 40, 13, 13, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, true, false, NPU_CPU_ACT_CLIP, false, 2 },
	{ 1, 15, 17, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_LEAKY_RELU, true, 1 },
	/* 3x3 one group, threaded */
	{ 1, 24, 24, 31, 31, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 },
	{ 2, 40, 96, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, false, NPU_CPU_ACT_HARD_SIGMOID, true, 2 },
	/* first layer, NCHW input */
	{ 1, 3, 16, 31, 31, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true, true, false, NPU_CPU_ACT_HARD_SWISH, false, 1 },
	{ 2, 3, 24, 96, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true, true, true, NPU_CPU_ACT_RELU, false, 2 },
	{ 1, 1, 17, 13, 5, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, false, true, false, false, NPU_CPU_ACT_NONE, false, 1 },
	/* depthwise */
	{ 1, 16, 16, 31, 31, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, false, NPU_CPU_ACT_HARD_SWISH, false, 1 },
	{ 2, 96, 96, 31, 31, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true, false, true, true, NPU_CPU_ACT_RELU, true, 2 },
	{ 1, 40, 40, 31, 31, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, true, false, NPU_CPU_ACT_SIGMOID, false, 2 },
	{ 1, 17, 17, 13, 13, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true, false, false, true, NPU_CPU_ACT_CLIP, false, 1 },
	/* asymmetric pads, dilation, 3x1 / 1x7 */
	{ 1, 24, 17, 13, 31, 3, 1, 1, 1, 1, 1, 0, 0, 2, 0, false, false, true, false, NPU_CPU_ACT_LEAKY_RELU, false, 1 },
	{ 1, 17, 24, 13, 31, 1, 7, 1, 1, 1, 1, 0, 3, 0, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 },
	{ 1, 15, 15, 31, 13, 5, 5, 1, 2, 2, 1, 1, 4, 3, 0, false, false, true, false, NPU_CPU_ACT_NONE, true, 1 },
	{ 1, 24, 24, 13, 31, 1, 7, 2, 1, 1, 3, 0, 9, 0, 0, true, false, true, false, NPU_CPU_ACT_HARD_SIGMOID, false, 1 },
	{ 1, 96, 16, 5, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false, false, true, false, NPU_CPU_ACT_SIGMOID, true, 1 },
};

static void test_nchwc_conv_fixed_cases(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0xc0ffee };
	size_t i;

	(void)state;
	assert_non_null(pool);
	cases_run = 0;
	for (i = 0; i < sizeof(nc_fixed) / sizeof(nc_fixed[0]); i++)
		check_nchwc_conv(&r, &nc_fixed[i], pool);
	assert_int_equal(cases_run, sizeof(nc_fixed) / sizeof(nc_fixed[0]));
	npu_threadpool_destroy(pool);
}

/* Seeded random combinations of the odd sizes, every kind and option. */
static void test_nchwc_conv_random_cases(void **state)
{
	static const size_t cs[] = { 1, 3, 15, 16, 17, 24, 40, 96 };
	static const size_t hs[] = { 1, 3, 5, 7, 13, 31 };
	static const size_t ks[][2] = { { 1, 1 }, { 3, 3 }, { 5, 5 }, { 3, 1 },
					{ 1, 7 } };
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0xbadc0de };
	int i, ran = 0;

	(void)state;
	assert_non_null(pool);
	for (i = 0; i < 240; i++) {
		struct nc_case cc = { 0 };
		size_t k = rng_below(&r, 5);

		cc.batch = 1 + rng_below(&r, 2);
		cc.depthwise = rng_below(&r, 3) == 0;
		cc.nchw = !cc.depthwise && rng_below(&r, 5) == 0;
		cc.in_c = cs[rng_below(&r, 8)];
		cc.out_c = cc.depthwise ? cc.in_c : cs[rng_below(&r, 8)];
		if (cc.nchw && cc.in_c > 17)
			cc.in_c = 3;
		cc.h = hs[rng_below(&r, 6)];
		cc.w = hs[rng_below(&r, 6)];
		cc.kh = ks[k][0];
		cc.kw = ks[k][1];
		cc.sh = 1 + rng_below(&r, 2);
		cc.sw = 1 + rng_below(&r, 2);
		cc.dh = rng_below(&r, 4) == 0 ? 2 : 1;
		cc.dw = rng_below(&r, 4) == 0 ? 2 : 1;
		cc.pt = rng_below(&r, cc.kh);
		cc.pb = rng_below(&r, cc.kh);
		cc.pl = rng_below(&r, cc.kw);
		cc.pr = rng_below(&r, cc.kw);
		if (rng_below(&r, 2)) {
			cc.pt = cc.pb = (cc.kh - 1) * cc.dh / 2;
			cc.pl = cc.pr = (cc.kw - 1) * cc.dw / 2;
		}
		cc.bias = rng_below(&r, 4) != 0;
		cc.res = rng_below(&r, 3) == 0;
		cc.act = (enum npu_cpu_act)rng_below(&r, NPU_CPU_ACT_SIGMOID + 1);
		cc.post = rng_below(&r, 4) == 0;
		cc.threads = 1 + (int)rng_below(&r, 2);
		if (out_extent(cc.h, cc.kh, cc.sh, cc.dh, cc.pt, cc.pb) &&
		    out_extent(cc.w, cc.kw, cc.sw, cc.dw, cc.pl, cc.pr))
			ran++;
		check_nchwc_conv(&r, &cc, pool);
	}
	print_message("nchwc conv: %d random cases\n", ran);
	assert_true(ran > 150);
	npu_threadpool_destroy(pool);
}

/*
 * Small planes, where one-group tiles run on across rows (the late layers
 * of a ResNet: 7 x 7, 3 x 3, 2 x 2): tiles that start mid-row and end in a
 * later one, planes narrower than one tile, single-row tiles that copy a
 * padded row, gathered tiles on every side of the padding, strides 2,
 * dilation, an NCHW input, odd channel counts, both block counts of a
 * tile (an odd number of output blocks), batch 2 and 2 threads (whose
 * split of the plane differs from one thread's: bitwise the same).
 */
static const struct nc_case nc_small_planes[] = {
	/* 7 x 7 3x3 pad 1: 4 tiles of 12 then a 1-pixel one */
	{ 1, 64, 64, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 1 },
	{ 2, 40, 48, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 },
	/* 14 x 14, an odd output block count, residual + sigmoid */
	{ 1, 17, 40, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_SIGMOID, false, 2 },
	/* planes narrower than a tile: 3 x 3, 2 x 2, 1 x 5, 5 x 1 */
	{ 1, 96, 96, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, false, NPU_CPU_ACT_NONE, true, 1 },
	{ 2, 32, 17, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, false, true, NPU_CPU_ACT_HARD_SWISH, false, 2 },
	{ 1, 24, 40, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, false, NPU_CPU_ACT_CLIP, false, 1 },
	{ 1, 24, 40, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, false, NPU_CPU_ACT_LEAKY_RELU, false, 1 },
	/* a plane's last 5 to 11 pixels in one tile, part written: 4 x 5
	 * (12 + 8), 1x1 on 3 x 3 (9), NCHW input on 3 x 3 */
	{ 1, 33, 40, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_SIGMOID, false, 2 },
	{ 2, 96, 40, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_RELU, true, 1 },
	{ 1, 3, 24, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true, true, true, NPU_CPU_ACT_CLIP, false, 2 },
	/* strides 2: 12 x 12 -> 6 x 6, 13 x 13 -> 7 x 7, 1x1 downsampling */
	{ 1, 40, 64, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, false, NPU_CPU_ACT_RELU, false, 2 },
	{ 2, 17, 33, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_NONE, true, 1 },
	{ 1, 48, 96, 13, 13, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 },
	/* asymmetric pads, dilation, 5x5, stride 3 across */
	{ 1, 24, 24, 9, 9, 5, 5, 1, 1, 2, 2, 3, 1, 4, 2, false, false, true, false, NPU_CPU_ACT_HARD_SIGMOID, false, 1 },
	{ 1, 15, 40, 11, 10, 3, 3, 2, 3, 1, 1, 1, 2, 0, 1, false, false, true, true, NPU_CPU_ACT_RELU, true, 2 },
	/* NCHW input on a small plane */
	{ 1, 3, 32, 13, 13, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, false, true, true, false, NPU_CPU_ACT_RELU, false, 1 },
	{ 2, 3, 17, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true, false, true, NPU_CPU_ACT_NONE, false, 2 },
	/* depthwise keeps its row tiles: the same small planes */
	{ 1, 40, 40, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, true, NPU_CPU_ACT_RELU, false, 2 },
	{ 1, 17, 17, 3, 3, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, true, false, true, false, NPU_CPU_ACT_NONE, false, 1 },
};

static void test_nchwc_conv_small_planes(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5a11 };
	size_t i;

	(void)state;
	assert_non_null(pool);
	cases_run = 0;
	for (i = 0; i < sizeof(nc_small_planes) / sizeof(nc_small_planes[0]); i++)
		check_nchwc_conv(&r, &nc_small_planes[i], pool);
	assert_int_equal(cases_run,
			 sizeof(nc_small_planes) / sizeof(nc_small_planes[0]));
	npu_threadpool_destroy(pool);
}

/*
 * Batch folded into the tiles (npu_nchwc_conv_folds): on small planes at
 * batch > 1 the one-group tiles run on from one image's last pixel to the
 * next image's first, gathering their inputs and writing each pixel in
 * its own image. Batches 1, 3 and 8, planes 2 x 2 to 5 x 5 and narrower
 * than a tile, 3x3 with padding, 1x1 at strides 1 and 2, odd widths,
 * channel counts not multiples of 16 (an odd output block count: a
 * one-block tile), residual and sigmoid (written pixel by pixel across
 * images), 1 and 2 threads (bitwise the same). 'fold' 1: the cost model
 * must fold it on every ISA; 0: must not; -1: either.
 */
struct nc_fold_case {
	struct nc_case cc;
	int fold;
};

static const struct nc_fold_case nc_fold[] = {
	/* 2 x 2, 540 KiB or more of weights a block pair: folds on every ISA */
	{ { 8, 480, 64, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 1 }, 1 },
	{ { 3, 480, 40, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_SIGMOID, false, 2 }, 1 },
	{ { 8, 450, 33, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, false, true, NPU_CPU_ACT_HARD_SWISH, true, 2 }, 1 },
	/* batch 1 never folds */
	{ { 1, 480, 64, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 1 }, 0 },
	/* 3 x 3 and 5 x 3 planes (odd widths), 3x3 pad 1 */
	{ { 8, 96, 96, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 }, -1 },
	{ { 3, 40, 17, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_SIGMOID, true, 1 }, -1 },
	/* 1x1 stride 1 (a flat plane) on 2 x 2 and 3 x 1, stride 2 on 5 x 5 */
	{ { 8, 520, 48, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_CLIP, false, 2 }, -1 },
	{ { 3, 257, 40, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false, true, false, NPU_CPU_ACT_NONE, true, 1 }, -1 },
	{ { 8, 300, 33, 5, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 }, -1 },
	/* stride 2 3x3 with padding onto 2 x 2 */
	{ { 8, 272, 64, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_LEAKY_RELU, false, 1 }, -1 },
	/* a big plane, an NCHW input and depthwise keep their tiles */
	{ { 8, 64, 64, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, false, NPU_CPU_ACT_RELU, false, 2 }, 0 },
	{ { 8, 3, 24, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true, true, true, NPU_CPU_ACT_NONE, false, 2 }, 0 },
	{ { 8, 40, 40, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, true, NPU_CPU_ACT_RELU, false, 1 }, 0 },
};

static void test_nchwc_conv_batch_folded(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0xf01d };
	size_t i, folded = 0;

	(void)state;
	assert_non_null(pool);
	for (i = 0; i < sizeof(nc_fold) / sizeof(nc_fold[0]); i++) {
		const struct nc_case *cc = &nc_fold[i].cc;
		struct npu_conv2d_params p = {
			.batch = cc->batch, .in_c = cc->in_c, .in_h = cc->h,
			.in_w = cc->w, .out_c = cc->out_c, .k_h = cc->kh,
			.k_w = cc->kw, .stride_h = cc->sh, .stride_w = cc->sw,
			.dil_h = cc->dh, .dil_w = cc->dw, .pad_top = cc->pt,
			.pad_left = cc->pl, .groups = cc->depthwise ? cc->in_c : 1,
		};
		bool f;

		p.out_h = out_extent(cc->h, cc->kh, cc->sh, cc->dh, cc->pt, cc->pb);
		p.out_w = out_extent(cc->w, cc->kw, cc->sw, cc->dw, cc->pl, cc->pr);
		f = npu_nchwc_conv_folds(&p, cc->nchw, cc->threads);
		/* the choice is the cost model's, not the thread count's */
		assert_true(f == npu_nchwc_conv_folds(&p, cc->nchw, 3 - cc->threads));
		if (nc_fold[i].fold >= 0 && f != (nc_fold[i].fold > 0))
			fail_msg("case %zu (batch %zu, %zux%zu, %zu -> %zu, k%zu): "
				 "folds %d, want %d", i, cc->batch, cc->h, cc->w,
				 cc->in_c, cc->out_c, cc->kh, f, nc_fold[i].fold);
		folded += f;
		check_nchwc_conv(&r, cc, pool);
	}
	assert_true(folded >= 3);
	npu_threadpool_destroy(pool);
}

/*
 * Strided 1x1 convolutions run as stride-1 ones on a copy of the pixels
 * they read (npu_nchwc_conv_subsamples): 16 x 16 stride 2 (rows of two
 * 4-pixel tiles) must; stride 2 and 3, odd sizes, odd channel counts,
 * batch 1 / 3 / 8, residual, 1 and 2 threads (the pool's scratch or
 * malloc holds the copy) all agree with the reference; a padded one, an
 * NCHW input and a 3x3 never take it.
 */
static void test_nchwc_conv_strided_1x1(void **state)
{
	static const struct nc_case cases[] = {
		{ 1, 64, 64, 16, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_RELU, false, 1 },
		{ 3, 40, 33, 16, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_SIGMOID, false, 2 },
		{ 8, 17, 40, 11, 9, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, false, true, NPU_CPU_ACT_CLIP, true, 2 },
		{ 1, 48, 24, 13, 17, 1, 1, 3, 2, 1, 1, 0, 0, 0, 0, false, false, true, false, NPU_CPU_ACT_NONE, false, 1 },
		{ 8, 96, 48, 6, 6, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false, true, true, NPU_CPU_ACT_RELU, false, 1 },
		/* never: padded, 3x3 */
		{ 1, 64, 64, 16, 16, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 2 },
		{ 1, 64, 64, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, true, NPU_CPU_ACT_RELU, false, 1 },
	};
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x5b2 };
	size_t i;

	(void)state;
	assert_non_null(pool);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct nc_case *cc = &cases[i];
		struct npu_conv2d_params p = {
			.batch = cc->batch, .in_c = cc->in_c, .in_h = cc->h,
			.in_w = cc->w, .out_c = cc->out_c, .k_h = cc->kh,
			.k_w = cc->kw, .stride_h = cc->sh, .stride_w = cc->sw,
			.dil_h = 1, .dil_w = 1, .pad_top = cc->pt,
			.pad_left = cc->pl, .groups = 1,
		};
		bool sub;

		p.out_h = out_extent(cc->h, cc->kh, cc->sh, cc->dh, cc->pt, cc->pb);
		p.out_w = out_extent(cc->w, cc->kw, cc->sw, cc->dw, cc->pl, cc->pr);
		sub = npu_nchwc_conv_subsamples(&p, false);
		if (i == 0)
			assert_true(sub);
		if (i >= 5)
			assert_false(sub);
		assert_false(npu_nchwc_conv_subsamples(&p, true));
		check_nchwc_conv(&r, cc, pool);
	}
	npu_threadpool_destroy(pool);
}

/* Every activation kind, with and without post, on each tile path. */
static void test_nchwc_conv_every_activation(void **state)
{
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0xac7 };
	int kind, post, shape;

	(void)state;
	assert_non_null(pool);
	for (kind = 0; kind <= NPU_CPU_ACT_SIGMOID; kind++)
		for (post = 0; post < 2; post++)
			for (shape = 0; shape < 4; shape++) {
				struct nc_case cc = {
					1, 24, 40, 13, 13, 3, 3, 1, 1, 1, 1,
					1, 1, 1, 1, false, false, true, post,
					(enum npu_cpu_act)kind, post, 1 + shape % 2,
				};

				if (shape == 1) {	/* flat 1x1 */
					cc.kh = cc.kw = 1;
					cc.pt = cc.pl = cc.pb = cc.pr = 0;
				} else if (shape == 2) {
					cc.depthwise = true;
					cc.out_c = cc.in_c;
				} else if (shape == 3) {
					cc.nchw = true;
					cc.in_c = 3;
					cc.sh = cc.sw = 2;
				}
				check_nchwc_conv(&r, &cc, pool);
			}
	npu_threadpool_destroy(pool);
}

/* ---- global average pooling, upsampling ---- */

static void test_nchwc_global_avgpool(void **state)
{
	static const size_t cs[] = { 1, 15, 16, 17, 40, 96 };
	static const size_t hws[] = { 1, 5, 169, 961, 6400 };
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x6a9 };
	size_t i, j, n, l, p;

	(void)state;
	assert_non_null(pool);
	for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
		for (j = 0; j < sizeof(hws) / sizeof(hws[0]); j++) {
			size_t batch = 1 + (i + j) % 2, c = cs[i], hw = hws[j];
			size_t cb = npu_nchwc_blocks(c), xs = batch * cb * hw * B;
			float *x = alloc_floats(xs), *y = alloc_floats(batch * cb * B);

			fill_random(&r, x, xs);
			fill_nan(y, batch * cb * B);
			npu_nchwc_global_avgpool_f32(batch, c, hw, x, y,
						     j % 2 ? pool : NULL);
			for (n = 0; n < batch; n++)
				for (l = 0; l < cb * B; l++) {
					double sum = 0, mag = 0, got, tol;

					for (p = 0; p < hw; p++) {
						double v = x[((n * cb + l / B) * hw + p) * B + l % B];

						sum += v;
						mag += fabs(v);
					}
					got = y[(n * cb + l / B) * B + l % B];
					tol = 4.0 * FLT_EPSILON * (double)(hw + 2) * mag / (double)hw;
					if (!(fabs(got - sum / (double)hw) <= tol))
						fail_msg("gap n%zu c%zu hw%zu: [%zu][%zu] = %.9g "
							 "want %.9g", batch, c, hw, n, l, got,
							 sum / (double)hw);
				}
			free(x);
			free(y);
		}
	npu_threadpool_destroy(pool);
}

static void test_nchwc_upsample_nearest(void **state)
{
	static const size_t shapes[][6] = {
		/* batch, c, in_h, in_w, fh, fw */
		{ 1, 16, 1, 1, 2, 2 },
		{ 2, 17, 5, 13, 2, 2 },
		{ 1, 40, 13, 5, 3, 1 },
		{ 1, 3, 5, 5, 1, 4 },
		{ 2, 96, 20, 20, 2, 2 },
		{ 1, 24, 40, 40, 4, 4 },
	};
	struct npu_threadpool *pool = npu_threadpool_create(2);
	struct rng r = { 0x0b5a };
	size_t s, n, cb, i, j;

	(void)state;
	assert_non_null(pool);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		size_t batch = shapes[s][0], c = shapes[s][1];
		size_t ih = shapes[s][2], iw = shapes[s][3];
		size_t fh = shapes[s][4], fw = shapes[s][5];
		size_t cbs = npu_nchwc_blocks(c), oh = ih * fh, ow = iw * fw;
		size_t xs = batch * cbs * ih * iw * B, ys = batch * cbs * oh * ow * B;
		float *x = alloc_floats(xs), *y = alloc_floats(ys + 1);

		fill_random(&r, x, xs);
		fill_nan(y, ys);
		y[ys] = 4321.0f;
		npu_nchwc_upsample_nearest_f32(batch, c, ih, iw, fh, fw, x, y,
					       s % 2 ? pool : NULL);
		assert_true(y[ys] == 4321.0f);
		for (n = 0; n < batch; n++)
			for (cb = 0; cb < cbs; cb++)
				for (i = 0; i < oh; i++)
					for (j = 0; j < ow; j++) {
						const float *src = x + (((n * cbs + cb) * ih + i / fh) * iw + j / fw) * B;
						const float *dst = y + (((n * cbs + cb) * oh + i) * ow + j) * B;

						if (memcmp(src, dst, B * sizeof(float)))
							fail_msg("upsample shape %zu: [%zu][%zu][%zu][%zu] "
								 "differs", s, n, cb, i, j);
					}
		free(x);
		free(y);
	}
	npu_threadpool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nchwc_reorder_round_trip),
		cmocka_unit_test(test_nchwc_conv_fixed_cases),
		cmocka_unit_test(test_nchwc_conv_random_cases),
		cmocka_unit_test(test_nchwc_conv_small_planes),
		cmocka_unit_test(test_nchwc_conv_batch_folded),
		cmocka_unit_test(test_nchwc_conv_strided_1x1),
		cmocka_unit_test(test_nchwc_conv_every_activation),
		cmocka_unit_test(test_nchwc_global_avgpool),
		cmocka_unit_test(test_nchwc_upsample_nearest),
	};

	if (!kernel_test_cap_isa())
		return 1;
	print_message("isa %s\n", npu_cpu_kernels_isa());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
