/* SPDX-License-Identifier: MIT */
/*
 * cpu_nchwc_body.h - the NCHW16c convolution tiles, written once on GNU C
 * vectors of the ISA's width (a 16-float channel block is NV of them) and
 * included by cpu_nchwc.c once per ISA, which defines beforehand:
 *   NPU_NC_FN(name)  the name with the ISA suffix
 *   NPU_NC_TARGET    the function attribute (empty for portable)
 *   NPU_NC_V / NPU_NC_VU / NPU_NC_VI  the vector type, its unaligned
 *                    aliasing twin, and the int vector of the same shape
 *   NPU_NC_VW        floats a vector (16, 8, 4)
 *   NPU_NC_FMA(a, b, c)  a * b + c, fused where the ISA has it (the
 *                    build is ISO C, so GCC contracts nothing itself)
 *   NPU_NC_XT        output pixels of a one-group register tile
 *   NPU_NC_DT        output pixels of a depthwise register tile
 *   NPU_NC_SW_CONST  1: tiles for stride 1 and 2 of their own (the
 *                    stride a constant), 0: the any-stride tiles serve
 * The tiles take and return no vectors by value: helpers work through
 * pointers, always inlined. It ends with the ISA's table of tiles,
 * NPU_NC_FN(npu_nc_ops), and undefines the parameters above.
 */
#define NV (16 / NPU_NC_VW)

/* v = post(act(v)), sigmoid excepted (the caller runs it on the row). */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_act)(const struct npu_cpu_act_params *a,
		      const enum npu_cpu_act kind, NPU_NC_V *v)
{
	NPU_NC_V x = *v, zero = npu_nc_set1(0.0f), one = npu_nc_set1(1.0f);

	switch (kind) {
	case NPU_CPU_ACT_RELU:
		x = npu_nc_max(zero, x);
		break;
	case NPU_CPU_ACT_CLIP:
		x = npu_nc_min(npu_nc_set1(a->act_max),
				npu_nc_max(npu_nc_set1(a->act_min), x));
		break;
	case NPU_CPU_ACT_LEAKY_RELU:
		x = npu_nc_sel_gt(zero, x, x * a->alpha, x);
		break;
	case NPU_CPU_ACT_HARD_SIGMOID:
		x = npu_nc_min(one, npu_nc_max(zero,
			NPU_NC_FMA(npu_nc_set1(a->alpha), x,
				   npu_nc_set1(a->beta))));
		break;
	case NPU_CPU_ACT_HARD_SWISH:
		x = x * npu_nc_min(one, npu_nc_max(zero,
			NPU_NC_FMA(npu_nc_set1(1.0f / 6.0f), x,
				   npu_nc_set1(0.5f))));
		break;
	default:
		break;
	}
	if (a->post && kind != NPU_CPU_ACT_SIGMOID)
		x = NPU_NC_FMA(x, npu_nc_set1(a->post_scale),
			       npu_nc_set1(a->post_shift));
	*v = x;
}

/*
 * The output write of a tile of nt pixels x nb channel blocks: bias,
 * residual, activation, post; acc[(j * nb + b) * NV + h] is part h of
 * pixel j of block b. Only the first m pixels are real (a tile over the
 * last m pixels of a plane). yo, when not NULL (a tile across images),
 * adds yo[j] floats to pixel j's place: a later image's plane is further
 * on. 'kind' is a constant in each caller below, so no switch runs per
 * vector.
 */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_store_k)(const struct npu_nc_conv *c, NPU_NC_V *acc,
			  size_t n, size_t ob, size_t oh, size_t ow0,
			  const int nt, size_t m, const int nb,
			  const ptrdiff_t *yo, const enum npu_cpu_act kind)
{
	const struct npu_cpu_act_params *a = &c->p->act;
	const float *res = c->p->residual;
	int j, b, h;

	for (b = 0; b < nb; b++) {
		size_t off = (((n * c->ocb + ob + b) * c->out_h + oh) * c->out_w +
			      ow0) * 16;
		const float *bias = c->bias + (ob + b) * 16;
		float *y = c->y + off;

#pragma GCC unroll 16
		for (j = 0; j < nt; j++) {
			ptrdiff_t o = j * 16 + (yo ? yo[j] : 0);

			if ((size_t)j >= m)
				break;
#pragma GCC unroll 4
			for (h = 0; h < NV; h++) {
				NPU_NC_V v = acc[(j * nb + b) * NV + h] +
					     npu_nc_load(bias + h * NPU_NC_VW);

				if (res)
					v += npu_nc_load(res + off + o +
							 h * NPU_NC_VW);
				NPU_NC_FN(npu_nc_act)(a, kind, &v);
				npu_nc_store(y + o + h * NPU_NC_VW, v);
			}
			if (kind == NPU_CPU_ACT_SIGMOID && yo)
				npu_vec_act_f32(a, y + o, y + o, 16);
		}
		if (kind == NPU_CPU_ACT_SIGMOID && !yo)
			npu_vec_act_f32(a, y, y, m * 16);
	}
}

NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_store)(const struct npu_nc_conv *c, NPU_NC_V *acc, size_t n,
			size_t ob, size_t oh, size_t ow0, const int nt,
			size_t m, const int nb, const ptrdiff_t *yo)
{
#define NPU_NC_STORE_CASE(k)						\
	case k:								\
		NPU_NC_FN(npu_nc_store_k)(c, acc, n, ob, oh, ow0, nt, m, nb, \
					  yo, k);				\
		break;
	switch (c->p->act.kind) {
	NPU_NC_STORE_CASE(NPU_CPU_ACT_RELU)
	NPU_NC_STORE_CASE(NPU_CPU_ACT_CLIP)
	NPU_NC_STORE_CASE(NPU_CPU_ACT_LEAKY_RELU)
	NPU_NC_STORE_CASE(NPU_CPU_ACT_HARD_SIGMOID)
	NPU_NC_STORE_CASE(NPU_CPU_ACT_HARD_SWISH)
	NPU_NC_STORE_CASE(NPU_CPU_ACT_SIGMOID)
	default:
	NPU_NC_STORE_CASE(NPU_CPU_ACT_NONE)
	}
#undef NPU_NC_STORE_CASE
}

/*
 * acc[pixel j][block b] += x[j * ps] * w[b * wob]: one input lane of nt
 * pixels into nb blocks.
 */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_fma_px)(NPU_NC_V *acc, const float *w, size_t wob,
			 const float *x, size_t ps, const int nt, const int nb)
{
	NPU_NC_V wv[2 * NV];
	int j, h;

#pragma GCC unroll 8
	for (h = 0; h < nb * NV; h++)
		wv[h] = npu_nc_load(w + h / NV * wob + h % NV * NPU_NC_VW);
	/* this cache line of each block's weights, a few taps on */
	__builtin_prefetch(w + NPU_NC_PF, 0, 3);
	if (nb > 1)
		__builtin_prefetch(w + wob + NPU_NC_PF, 0, 3);
#pragma GCC unroll 16
	for (j = 0; j < nt; j++) {
		NPU_NC_V s = npu_nc_set1(x[j * ps]);

#pragma GCC unroll 8
		for (h = 0; h < nb * NV; h++)
			acc[j * nb * NV + h] = NPU_NC_FMA(s, wv[h],
							  acc[j * nb * NV + h]);
	}
}

/* acc[pixel j][block b] += *xs[j] * w[b * wob], as npu_nc_fma_px. */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_fma_ptrs)(NPU_NC_V *acc, const float *w, size_t wob,
			   const float *const *xs, const int nt, const int nb)
{
	NPU_NC_V wv[2 * NV];
	int j, h;

#pragma GCC unroll 8
	for (h = 0; h < nb * NV; h++)
		wv[h] = npu_nc_load(w + h / NV * wob + h % NV * NPU_NC_VW);
#pragma GCC unroll 16
	for (j = 0; j < nt; j++) {
		NPU_NC_V s = npu_nc_set1(*xs[j]);

#pragma GCC unroll 8
		for (h = 0; h < nb * NV; h++)
			acc[j * nb * NV + h] = NPU_NC_FMA(s, wv[h],
							  acc[j * nb * NV + h]);
	}
}

/* One pixel's l lanes (16 or 1) from src to dst. */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_copy_px)(float *dst, const float *src, const int l)
{
	int h;

	if (l == 16) {
#pragma GCC unroll 4
		for (h = 0; h < NV; h++)
			npu_nc_store(dst + h * NPU_NC_VW, npu_nc_load(src + h * NPU_NC_VW));
	} else {
		dst[0] = src[0];
	}
}

/*
 * One tile of the one-group convolution: nt output pixels from (oh, ow0)
 * on, in the plane's order (past the end of row oh, on into the next
 * rows: a small plane keeps whole tiles), output blocks ob .. ob + nb - 1;
 * of them only the first m are written (m < nt: the last pixels of a
 * plane, in one pass over the weights rather than several short tiles).
 * l input lanes per pixel (16: blocked input, 1: NCHW); swc the stride
 * across if constant (0: read it). A tile on one row whose every tap is
 * in the input reads its pixels at constant offsets; one on one row that
 * reaches into the padding first copies the span of each input row it
 * reads, zeros where the padding is, and reads that alike; any other
 * gathers, tap by tap, its pixels' inputs into one contiguous tile (a
 * zero block where a pixel reads the padding), which the same
 * multiply-adds then read at constant offsets. On one lane (NCHW) a copy
 * costs as much as the multiply-adds it feeds: short tiles on one row
 * there read through a pointer per pixel instead.
 */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_tile)(const struct npu_nc_conv *c, size_t n, size_t ob,
		       size_t oh, size_t ow0, size_t m, const int nt,
		       const int nb, const int l, const int swc)
{
	const size_t sw = swc ? (size_t)swc : c->sw, kw = c->kw;
	const size_t ps = sw * l, ts = c->dw * l;
	const ptrdiff_t ih0 = (ptrdiff_t)(oh * c->sh) - (ptrdiff_t)c->pt;
	const ptrdiff_t iw0 = (ptrdiff_t)(ow0 * sw) - (ptrdiff_t)c->pl;
	const bool inside = m == (size_t)nt && ow0 + (size_t)nt <= c->out_w &&
		iw0 >= 0 &&
		iw0 + (ptrdiff_t)((nt - 1) * sw + (kw - 1) * c->dw) <
		(ptrdiff_t)c->in_w;
	const size_t plane = c->in_h * c->in_w * l;
	/* the input pixels a tile on one row reads across */
	const size_t span = (size_t)(nt - 1) * sw + (kw - 1) * c->dw + 1;
	const bool one_row = m == (size_t)nt && ow0 + (size_t)nt <= c->out_w;
	const bool padded_row = !inside && one_row && span <= NPU_NC_SPAN &&
				(l == 16 || nt == NPU_NC_XT);
	/* one lane, a short tile on the padding: a pointer per pixel */
	const bool row_ptrs = !inside && !padded_row && one_row && l == 1;
	NPU_NC_V acc[NPU_NC_NMAX(NPU_NC_XT) * 2 * NV];
	/* a padded row: that span, zeros where it is out of the row */
	float rb[NPU_NC_SPAN * 16] __attribute__((aligned(64)));
	/* the gathered tile: pixel j's l lanes at j * l */
	float gx[NPU_NC_NMAX(NPU_NC_XT) * 16] __attribute__((aligned(64)));
	/* one lane (NCHW): where each pixel's input is, not a copy */
	const float *xs[NPU_NC_NMAX(NPU_NC_XT)];
	/* where pixel j's window starts in the input (gathering tiles) */
	ptrdiff_t gh[NPU_NC_NMAX(NPU_NC_XT)] = { 0 };
	ptrdiff_t gw[NPU_NC_NMAX(NPU_NC_XT)] = { 0 };
	/*
	 * A tile across images (c->fold): how much further pixel j's input
	 * and output planes are than image n's (floats); cross: some real
	 * pixel is in a later image.
	 */
	ptrdiff_t go[NPU_NC_NMAX(NPU_NC_XT)] = { 0 };
	ptrdiff_t yo[NPU_NC_NMAX(NPU_NC_XT)] = { 0 };
	const size_t oplane = c->out_h * c->out_w;
	size_t g, ky, kx, row, col, img;
	bool cross = false;
	int j, q;

#pragma GCC unroll 32
	for (j = 0; j < nt * nb * NV; j++)
		acc[j] = npu_nc_set1(0.0f);
	/*
	 * Where each pixel reads, for the tiles that do not read a row at
	 * constant offsets only: a 1x1 tile on 1 or 2 input blocks has few
	 * multiply-adds to hide it behind (1x1 8 x 16 x 48 x 48 -> 96: 0.83
	 * -> 0.69 ms; 8 x 24 x 24 x 24 -> 58: 0.166 -> 0.139 ms; one thread,
	 * cpu-conv-bench interleaved, medians of 7).
	 */
	for (j = 0, row = oh, col = ow0, img = 0;
	     !inside && !padded_row && j < nt; j++) {
		/* past the m real pixels: rows above every tap's */
		gh[j] = (size_t)j < m ? (ptrdiff_t)(row * c->sh) - (ptrdiff_t)c->pt :
			-1 - (ptrdiff_t)((c->kh - 1) * c->dh);
		gw[j] = (ptrdiff_t)(col * sw) - (ptrdiff_t)c->pl;
		go[j] = (ptrdiff_t)(img * c->icg * plane);
		yo[j] = (ptrdiff_t)(img * (c->ocb - 1) * oplane * 16);
		if ((size_t)j < m && img)
			cross = true;
		if (++col == c->out_w) {
			col = 0;
			if (++row == c->out_h && c->fold) {
				row = 0;
				img++;
			}
		}
	}
	for (g = 0; g < c->icg; g++) {
		const float *xp = c->x + (n * c->icg + g) * plane;
		/* weight (ky, kx, lane q): wg + (ky * kw + kx) * 256 + q * 16 */
		const float *wg = c->w + ob * c->wob + (l == 16 ? g * c->wg :
				  g / 16 * c->wg + g % 16 * 16);
		/*
		 * The real lanes of the last block only: its pad lanes may
		 * hold anything, NaN included (a Div ran on them), and
		 * 0 * NaN would reach every output channel.
		 */
		const int lq = l == 16 && g + 1 == c->icg ?
			       (int)(c->p->in_c - g * 16) : l;

		for (ky = 0; ky < c->kh; ky++) {
			const float *wr = wg + ky * kw * 256;

			if (inside || padded_row || row_ptrs) {
				ptrdiff_t ih = ih0 + (ptrdiff_t)(ky * c->dh);
				const float *xr;

				if (ih < 0 || ih >= (ptrdiff_t)c->in_h)
					continue;
				xr = xp + (size_t)ih * c->in_w * l;
				if (row_ptrs) {
					for (kx = 0; kx < kw; kx++, wr += 256) {
						for (j = 0; j < nt; j++) {
							ptrdiff_t iw = gw[j] + (ptrdiff_t)(kx * c->dw);

							xs[j] = iw >= 0 && iw < (ptrdiff_t)c->in_w ?
								xr + iw : npu_nc_zeros;
						}
						NPU_NC_FN(npu_nc_fma_ptrs)(acc, wr, c->wob, xs, nt, nb);
					}
					continue;
				}
				if (inside) {
					xr += (size_t)iw0 * l;
				} else {
					/* the row's span, zeros for the padding */
					for (col = 0; col < span; col++) {
						ptrdiff_t iw = iw0 + (ptrdiff_t)col;
						const float *src = iw >= 0 && iw < (ptrdiff_t)c->in_w ?
							xr + (size_t)iw * l : npu_nc_zeros;

						NPU_NC_FN(npu_nc_copy_px)(rb + col * l, src, l);
					}
					xr = rb;
				}
				for (kx = 0; kx < kw; kx++, xr += ts,
				     wr += 256) {
					for (q = 0; q < lq; q++)
						NPU_NC_FN(npu_nc_fma_px)(acc, wr + q * 16, c->wob,
									 xr + q, ps, nt, nb);
				}
				continue;
			}
			for (kx = 0; kx < kw; kx++, wr += 256) {
				bool any = false;

				for (j = 0; j < nt; j++) {
					ptrdiff_t ih = gh[j] + (ptrdiff_t)(ky * c->dh);
					ptrdiff_t iw = gw[j] + (ptrdiff_t)(kx * c->dw);
					const float *src = npu_nc_zeros;

					if (ih >= 0 && ih < (ptrdiff_t)c->in_h &&
					    iw >= 0 && iw < (ptrdiff_t)c->in_w) {
						src = xp + go[j] +
						      ((size_t)ih * c->in_w + (size_t)iw) * l;
						any = true;
					}
					if (l == 16)
						NPU_NC_FN(npu_nc_copy_px)(gx + j * 16, src, 16);
					else
						xs[j] = src;
				}
				if (!any)
					continue;
				if (l == 16) {
					for (q = 0; q < lq; q++)
						NPU_NC_FN(npu_nc_fma_px)(acc, wr + q * 16, c->wob,
									 gx + q, 16, nt, nb);
					continue;
				}
				/* one lane: its scalars through the pointers */
				NPU_NC_FN(npu_nc_fma_ptrs)(acc, wr, c->wob, xs, nt, nb);
			}
		}
	}
	/*
	 * A whole tile in one image: the store with constant offsets,
	 * unrolled (with m and yo at run time it ran as a loop: 1x1 8 x 16 x
	 * 48 x 48 -> 96 0.905 -> 0.813 ms, 8 x 24 x 24 x 24 -> 144 0.326 ->
	 * 0.298 ms; interleaved medians of 7).
	 */
	if (m == (size_t)nt && !cross)
		NPU_NC_FN(npu_nc_store)(c, acc, n, ob, oh, ow0, nt, (size_t)nt,
					nb, NULL);
	else
		NPU_NC_FN(npu_nc_store)(c, acc, n, ob, oh, ow0, nt, m, nb,
					cross ? yo : NULL);
}

/* One depthwise tile: nt output pixels of row oh from ow0, block cb. */
NPU_NC_TARGET static inline __attribute__((always_inline)) void
NPU_NC_FN(npu_nc_dw_tile)(const struct npu_nc_conv *c, size_t n, size_t cb,
			  size_t oh, size_t ow0, const int nt, const int swc)
{
	const size_t sw = swc ? (size_t)swc : c->sw, kw = c->kw;
	const ptrdiff_t ih0 = (ptrdiff_t)(oh * c->sh) - (ptrdiff_t)c->pt;
	const ptrdiff_t iw0 = (ptrdiff_t)(ow0 * sw) - (ptrdiff_t)c->pl;
	const bool inside = iw0 >= 0 &&
		iw0 + (ptrdiff_t)((nt - 1) * sw + (kw - 1) * c->dw) <
		(ptrdiff_t)c->in_w;
	const float *xp = c->x + (n * c->ocb + cb) * c->in_h * c->in_w * 16;
	const float *wb = c->w + cb * c->kh * kw * 16;
	NPU_NC_V acc[NPU_NC_NMAX(NPU_NC_DT) * NV];
	size_t ky, kx;
	int j, h;

#pragma GCC unroll 32
	for (j = 0; j < nt * NV; j++)
		acc[j] = npu_nc_set1(0.0f);
	for (ky = 0; ky < c->kh; ky++) {
		ptrdiff_t ih = ih0 + (ptrdiff_t)(ky * c->dh);
		const float *row, *wr = wb + ky * kw * 16;

		if (ih < 0 || ih >= (ptrdiff_t)c->in_h)
			continue;
		row = xp + (size_t)ih * c->in_w * 16;
		if (inside) {
			const float *xr = row + iw0 * 16;

			for (kx = 0; kx < kw; kx++, xr += c->dw * 16) {
#pragma GCC unroll 4
				for (h = 0; h < NV; h++) {
					NPU_NC_V wv = npu_nc_load(wr + kx * 16 + h * NPU_NC_VW);

#pragma GCC unroll 16
					for (j = 0; j < nt; j++)
						acc[j * NV + h] = NPU_NC_FMA(
							npu_nc_load(xr + j * sw * 16 + h * NPU_NC_VW),
							wv, acc[j * NV + h]);
				}
			}
			continue;
		}
		for (kx = 0; kx < kw; kx++) {
#pragma GCC unroll 16
			for (j = 0; j < nt; j++) {
				ptrdiff_t iw = iw0 + (ptrdiff_t)(j * sw + kx * c->dw);

				if (iw < 0 || iw >= (ptrdiff_t)c->in_w)
					continue;
#pragma GCC unroll 4
				for (h = 0; h < NV; h++)
					acc[j * NV + h] = NPU_NC_FMA(
						npu_nc_load(row + (size_t)iw * 16 + h * NPU_NC_VW),
						npu_nc_load(wr + kx * 16 + h * NPU_NC_VW),
						acc[j * NV + h]);
			}
		}
	}
	NPU_NC_FN(npu_nc_store)(c, acc, n, cb, oh, ow0, nt, (size_t)nt, 1, NULL);
}

/* The instances: one-group tiles by (pixels, blocks, lanes, stride). */
#define NPU_NC_INST(nt, nb, l, swc)					\
NPU_NC_TARGET static void						\
NPU_NC_FN(npu_nc_tile_##nt##_##nb##_##l##_##swc)(const struct npu_nc_conv *c, \
		size_t n, size_t ob, size_t oh, size_t ow0, size_t m)	\
{									\
	NPU_NC_FN(npu_nc_tile)(c, n, ob, oh, ow0, m, nt, nb, l, swc);	\
}
/* Stride 1 and 2 by their own instances where NPU_NC_SW_CONST (the
 * table points them at the any-stride one otherwise). */
#if NPU_NC_SW_CONST
#define NPU_NC_INST_NT(nt)						\
	NPU_NC_INST(nt, 1, 16, 1) NPU_NC_INST(nt, 2, 16, 1)		\
	NPU_NC_INST(nt, 1, 16, 2) NPU_NC_INST(nt, 2, 16, 2)		\
	NPU_NC_INST(nt, 1, 16, 0) NPU_NC_INST(nt, 2, 16, 0)		\
	NPU_NC_INST(nt, 1, 1, 0) NPU_NC_INST(nt, 2, 1, 0)
#else
#define NPU_NC_INST_NT(nt)						\
	NPU_NC_INST(nt, 1, 16, 0) NPU_NC_INST(nt, 2, 16, 0)		\
	NPU_NC_INST(nt, 1, 1, 0) NPU_NC_INST(nt, 2, 1, 0)
#endif
#define NPU_NC_DW_INST(nt, swc)						\
NPU_NC_TARGET static void						\
NPU_NC_FN(npu_nc_dw_##nt##_##swc)(const struct npu_nc_conv *c, size_t n, \
		size_t cb, size_t oh, size_t ow0, size_t m)		\
{									\
	(void)m;							\
	NPU_NC_FN(npu_nc_dw_tile)(c, n, cb, oh, ow0, nt, swc);		\
}
#if NPU_NC_SW_CONST
#define NPU_NC_DW_INST_NT(nt)						\
	NPU_NC_DW_INST(nt, 1) NPU_NC_DW_INST(nt, 2) NPU_NC_DW_INST(nt, 0)
#else
#define NPU_NC_DW_INST_NT(nt) NPU_NC_DW_INST(nt, 0)
#endif

NPU_NC_INST_NT(NPU_NC_XT)
NPU_NC_INST_NT(4)
NPU_NC_INST_NT(2)
NPU_NC_INST_NT(1)
NPU_NC_DW_INST_NT(NPU_NC_DT)
NPU_NC_DW_INST_NT(4)
NPU_NC_DW_INST_NT(2)
NPU_NC_DW_INST_NT(1)
#undef NPU_NC_INST
#undef NPU_NC_INST_NT
#undef NPU_NC_DW_INST
#undef NPU_NC_DW_INST_NT
#undef NV

#if NPU_NC_SW_CONST
static const struct npu_nc_ops NPU_NC_FN(npu_nc_ops) =
	NPU_NC_TABLE(NPU_NC_FN, NPU_NC_XT, NPU_NC_DT);
#else
static const struct npu_nc_ops NPU_NC_FN(npu_nc_ops) =
	NPU_NC_TABLE_ANY(NPU_NC_FN, NPU_NC_XT, NPU_NC_DT);
#endif

#undef NPU_NC_FN
#undef NPU_NC_TARGET
#undef NPU_NC_V
#undef NPU_NC_VU
#undef NPU_NC_VI
#undef NPU_NC_VW
#undef NPU_NC_FMA
#undef NPU_NC_XT
#undef NPU_NC_DT
#undef NPU_NC_SW_CONST
