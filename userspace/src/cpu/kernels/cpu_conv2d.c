// SPDX-License-Identifier: MIT
/*
 * cpu_conv2d.c - fp32 2-D convolution, NCHW, ONNX weight layout.
 *
 * Paths:
 *  - depthwise (groups == in_c == out_c): stride_w 1 on a zero-padded copy,
 *    one register-blocked pass per output row over all taps; strided rows
 *    one vectorized multiply-add pass per tap over the in-bounds columns;
 *  - 1x1, stride 1, no padding: a GEMM over channels, the input rows
 *    packed straight into GEMM panels (no im2col);
 *  - row tiles (ISAs with an indirect register tile, i.e. AVX-512): the
 *    input zero-padded once (phase-split for stride_w > 1), each output
 *    row a GEMM whose B rows are read in place through row pointers;
 *  - Winograd F(4,3) for 3x3 stride 1 where it wins (cpu_winograd.c);
 *  - general: im2col of a chunk of output pixels straight into packed B
 *    panels in the thread's scratch, then the GEMM register tiles.
 * The weights of one group are the packed A operand, packed at plan time
 * (npu_conv2d_f32_pack_weights) or once per call. Bias and activation run
 * (and the fused residual add and affine) on each output block while it
 * is hot. Work is split over (image, group,
 * chunk of output pixels or output row).
 * Also ConvTranspose with stride == kernel (tiles that do not overlap).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_internal.h"

/* im2col chunk: about this many bytes of packed B per thread (in L2:
 * large chunks spread the per-row cost of im2col over many columns). */
#define NPU_CONV_CHUNK_BYTES (512 * 1024)

/* Depthwise kernels up to this many taps run on the padded input. */
#define NPU_CONV_DW_MAX_TAPS 64

struct npu_conv_plan {
	const struct npu_gemm_ukernel *uk;
	bool depthwise, pointwise;
	size_t mg, cg, kdim;	/* out / in channels per group, GEMM depth */
	size_t hw_in, hw_out;
	size_t chunk_max;	/* output columns per task, a multiple of nr */
	size_t a_panels;	/* packed weight panels per group */
	size_t w_floats;	/* packed weights, all groups */
	size_t b_floats;	/* packed B per thread */
	/* Row tiles (k > 1x1, ISA with uk->ind): */
	bool indirect;
	size_t hp, wp;		/* padded input plane: hp rows of wp floats */
	size_t wq;		/* a row holds stride_w phases of wq columns */
	bool dw_padded;		/* depthwise on the padded copy (tap table) */
	size_t pad_floats;	/* the zero-padded copy of the whole input */
	/*
	 * Winograd F(4,3) (cpu_winograd.c): 3x3 stride 1 where it wins.
	 * Packed weights hold the direct panels (direct_w floats) and, if
	 * W's shape allows Winograd, its transformed weights after them: the
	 * Conv op packs before the spatial sizes are known.
	 */
	bool wino;
	struct npu_wino_plan wino_pl;
	size_t direct_w;
};

static void npu_conv_plan(const struct npu_conv2d_params *p,
			  struct npu_conv_plan *pl)
{
	const struct npu_gemm_ukernel *uk = npu_gemm_ukernel_for(npu_cpu_isa_get());
	size_t cols;

	memset(pl, 0, sizeof(*pl));
	pl->uk = uk;
	pl->mg = p->out_c / p->groups;
	pl->cg = p->in_c / p->groups;
	pl->kdim = pl->cg * p->k_h * p->k_w;
	pl->hw_in = p->in_h * p->in_w;
	pl->hw_out = p->out_h * p->out_w;
	pl->depthwise = p->groups == p->in_c && p->groups == p->out_c;
	pl->pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 &&
			p->stride_w == 1 && !p->pad_top && !p->pad_left &&
			p->out_h == p->in_h && p->out_w == p->in_w;
	if (pl->depthwise) {
		/*
		 * Stride 1 or 2 along rows: padded rows (stride 2 split into
		 * even and odd column phases as they are copied), every tap an
		 * output reads is in the buffer, contiguous along the row.
		 * Larger strides keep the per-tap gather passes.
		 */
		if (p->k_h * p->k_w <= NPU_CONV_DW_MAX_TAPS && p->stride_w <= 2) {
			pl->dw_padded = true;
			pl->hp = (p->out_h - 1) * p->stride_h +
				 (p->k_h - 1) * p->dil_h + 1;
			pl->wq = p->out_w + (p->k_w - 1) * p->dil_w / p->stride_w;
			pl->wp = p->stride_w * pl->wq;
		}
		return;
	}
	pl->direct_w = npu_round_up(p->groups * npu_div_up(pl->mg, uk->mr) *
				    uk->mr * pl->kdim, 16);
	if (npu_wino_plan(p, uk, &pl->wino_pl)) {
		pl->wino = true;
		pl->w_floats = pl->wino_pl.u_floats;
		pl->pad_floats = pl->wino_pl.pad_floats;
		pl->b_floats = pl->wino_pl.t_floats;
		return;
	}
	cols = NPU_CONV_CHUNK_BYTES / sizeof(float) / (pl->kdim ? pl->kdim : 1);
	cols = cols / uk->nr * uk->nr;
	if (cols < uk->nr)
		cols = uk->nr;
	if (cols > npu_round_up(pl->hw_out, uk->nr))
		cols = npu_round_up(pl->hw_out, uk->nr);
	pl->chunk_max = cols;
	pl->a_panels = npu_div_up(pl->mg, uk->mr);
	pl->w_floats = npu_round_up(p->groups * pl->a_panels * uk->mr * pl->kdim, 16);
	pl->b_floats = npu_round_up(cols * pl->kdim, 16);
	/* Tiles span one output row: only where few of their lanes idle. */
	pl->indirect = uk->ind && !pl->pointwise && pl->kdim &&
		       p->k_h * p->k_w > 1 &&
		       4 * p->out_w >= 3 * npu_round_up(p->out_w, uk->nr);
	if (pl->indirect) {
		/*
		 * Every row a tap reads, zero padded; each row split into
		 * stride_w phases (column j * stride_w + q at phase q, j), so
		 * a tap's inputs for consecutive outputs are contiguous.
		 */
		pl->hp = (p->out_h - 1) * p->stride_h + (p->k_h - 1) * p->dil_h + 1;
		pl->wq = p->out_w + (p->k_w - 1) * p->dil_w / p->stride_w;
		pl->wp = p->stride_w * pl->wq;
		pl->pad_floats = npu_round_up(p->batch * p->in_c * pl->hp * pl->wp, 16);
		/* Per thread: kdim row pointers instead of a packed B chunk. */
		pl->b_floats = npu_round_up(pl->kdim * sizeof(float *) /
					    sizeof(float), 16);
	}
}

static bool npu_conv_degenerate(const struct npu_conv2d_params *p)
{
	return !p->batch || !p->out_c || !p->out_h || !p->out_w ||
	       !p->groups || p->in_c % p->groups || p->out_c % p->groups;
}

/* Anything to do after the sums: bias, activation, affine, residual. */
static bool npu_conv_has_epilogue(const struct npu_conv2d_params *p,
				  const float *bias)
{
	return bias || p->act.kind != NPU_CPU_ACT_NONE || p->act.post ||
	       p->residual;
}

/* The residual row under output row 'yr' (NULL without residual). */
static inline const float *npu_conv_res(const struct npu_conv2d_params *p,
					const float *y, const float *yr)
{
	return p->residual ? p->residual + (yr - y) : NULL;
}

/*
 * Depthwise tasks are bands of output rows, band-major (task t: band
 * t / planes of plane t % planes): the pool hands thread i the i-th run
 * of tasks, so here the i-th horizontal slab of every plane, the rows
 * the pixel-split ops around (GEMM columns, conv rows) give it too. A
 * plane split by channels instead would read half its input from the
 * other core's cache. Each band pads its own input rows into the
 * thread's buffer (npu_conv_dw_band_floats), so bands are at most
 * NPU_CONV_DW_BAND_BYTES of padded rows, in a multiple of 'threads'
 * so that thread i still gets the i-th slab.
 */
#define NPU_CONV_DW_BAND_BYTES (256 * 1024)

static void npu_conv_dw_bands(const struct npu_conv2d_params *p,
			      const struct npu_conv_plan *pl, size_t threads,
			      size_t *rows_per_task, size_t *row_tasks)
{
	size_t planes = p->batch * p->in_c, tasks = threads, rows;

	if (planes < 4 * threads)
		tasks = npu_div_up(4 * threads, planes);
	if (pl->dw_padded) {
		size_t span = (p->k_h - 1) * p->dil_h + 1;
		size_t max_rows = NPU_CONV_DW_BAND_BYTES / sizeof(float) / pl->wp;

		for (rows = npu_div_up(p->out_h, tasks);
		     rows > 1 && (rows - 1) * p->stride_h + span > max_rows;
		     rows = npu_div_up(p->out_h, tasks))
			tasks += threads;
	}
	if (tasks > p->out_h)
		tasks = p->out_h;
	*rows_per_task = npu_div_up(p->out_h, tasks);
	*row_tasks = npu_div_up(p->out_h, *rows_per_task);
}

/* Floats of one thread's padded band (+ slack: dw_taps reads whole
 * vectors past a row). */
static size_t npu_conv_dw_band_floats(const struct npu_conv2d_params *p,
				      const struct npu_conv_plan *pl,
				      size_t rows_per_task)
{
	size_t rows = (rows_per_task - 1) * p->stride_h + (p->k_h - 1) * p->dil_h + 1;

	if (rows > pl->hp)
		rows = pl->hp;
	return npu_round_up(rows * pl->wp + NPU_VEC_SLACK, 16);
}

size_t npu_conv2d_f32_scratch_size(const struct npu_conv2d_params *p,
				   int threads)
{
	struct npu_conv_plan pl;

	if (npu_conv_degenerate(p))
		return 0;
	npu_conv_plan(p, &pl);
	if (threads < 1)
		threads = 1;
	if (pl.depthwise) {
		size_t rows_per_task, row_tasks;

		if (!pl.dw_padded)
			return 0;
		npu_conv_dw_bands(p, &pl, (size_t)threads, &rows_per_task, &row_tasks);
		return (size_t)threads * npu_conv_dw_band_floats(p, &pl, rows_per_task) *
		       sizeof(float) + 64;
	}
	/* + 64: the caller's buffer need not be aligned. */
	return (pl.w_floats + pl.pad_floats + (size_t)threads * pl.b_floats) *
	       sizeof(float) + 64;
}

struct npu_conv_job {
	const struct npu_conv2d_params *p;
	struct npu_conv_plan pl;
	const struct npu_vec_ops *ops;
	const float *x, *w, *bias;
	float *y;
	float *pw;		/* packed weights */
	float *pb;		/* per-thread packed B (indirect: row pointers) */
	float *xpad;		/* indirect: the zero-padded input */
	size_t chunk, chunks;	/* output columns per task, tasks per image */
	size_t rows_per_task, row_tasks; /* depthwise */
	size_t band_floats;		/* depthwise: a thread's padded band */
	size_t pad_rows, pad_chunks;	/* padded rows per task, tasks per plane */
	size_t pad_planes;
};

/* Copy 'len' floats (src NULL: zeros) to columns [jj, jj + len) of one
 * depth row of packed B; panels are 'ps' floats apart; nr a power of 2. */
static inline void npu_conv_put(float *row, size_t jj, const float *src,
				size_t len, size_t nr, size_t ps)
{
	while (len) {
		size_t c = jj & (nr - 1), take = nr - c < len ? nr - c : len;
		float *d = row + (jj - c) / nr * ps + c;

		if (src) {
			memcpy(d, src, take * sizeof(float));
			src += take;
		} else {
			memset(d, 0, take * sizeof(float));
		}
		jj += take;
		len -= take;
	}
}

/* im2col of output columns [col0, col0 + ncols) into packed B panels. */
static void npu_conv_im2col(const struct npu_conv2d_params *p,
			    const struct npu_conv_plan *pl, const float *xg,
			    size_t col0, size_t ncols, float *dst)
{
	size_t nr = pl->uk->nr, ps = pl->kdim * nr;
	ptrdiff_t in_h = (ptrdiff_t)p->in_h, in_w = (ptrdiff_t)p->in_w;
	size_t ci, kh, kw, r = 0;

	for (ci = 0; ci < pl->cg; ci++) {
		const float *xc = xg + ci * pl->hw_in;

		for (kh = 0; kh < p->k_h; kh++) {
			for (kw = 0; kw < p->k_w; kw++, r++) {
				float *row = dst + r * nr;
				size_t oh = col0 / p->out_w, ow = col0 % p->out_w;
				size_t jj = 0;

				while (jj < ncols) {
					size_t seg = p->out_w - ow;
					ptrdiff_t ih = (ptrdiff_t)(oh * p->stride_h + kh * p->dil_h) -
						       (ptrdiff_t)p->pad_top;
					ptrdiff_t iw0 = (ptrdiff_t)(ow * p->stride_w + kw * p->dil_w) -
							(ptrdiff_t)p->pad_left;

					if (seg > ncols - jj)
						seg = ncols - jj;
					if (ih < 0 || ih >= in_h) {
						npu_conv_put(row, jj, NULL, seg, nr, ps);
					} else if (p->stride_w == 1) {
						const float *xr = xc + ih * in_w;
						ptrdiff_t lead = iw0 < 0 ? -iw0 : 0;
						ptrdiff_t end = in_w - iw0;

						if (lead > (ptrdiff_t)seg)
							lead = (ptrdiff_t)seg;
						if (end > (ptrdiff_t)seg)
							end = (ptrdiff_t)seg;
						if (end < lead)
							end = lead;
						npu_conv_put(row, jj, NULL, (size_t)lead, nr, ps);
						npu_conv_put(row, jj + (size_t)lead,
							     xr + iw0 + lead,
							     (size_t)(end - lead), nr, ps);
						npu_conv_put(row, jj + (size_t)end, NULL,
							     seg - (size_t)end, nr, ps);
					} else {
						const float *xr = xc + ih * in_w;
						ptrdiff_t iw = iw0, sw = (ptrdiff_t)p->stride_w;
						size_t t, c = jj & (nr - 1);
						float *d = row + (jj - c) / nr * ps;

						/* Walk the panel position along, no division. */
						for (t = 0; t < seg; t++, iw += sw) {
							d[c] = iw >= 0 && iw < in_w ? xr[iw] : 0.0f;
							if (++c == nr) {
								c = 0;
								d += ps;
							}
						}
					}
					jj += seg;
					oh++;
					ow = 0;
				}
				/* Zero the unused columns of the last panel. */
				if (ncols % nr)
					npu_conv_put(row, ncols, NULL,
						     nr - ncols % nr, nr, ps);
			}
		}
	}
}

static void npu_conv_pack_w_task(void *ctx, size_t i)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv_plan *pl = &job->pl;
	size_t mr = pl->uk->mr, g = i / pl->a_panels, pi = i % pl->a_panels, k;
	float *d = job->pw + i * pl->kdim * mr;

	npu_gemm_pack_a(false, job->w + g * pl->mg * pl->kdim, pl->kdim,
			pi * mr, pl->mg - pi * mr, pl->kdim, mr, d);
	for (k = 0; k < pl->kdim * mr; k++)
		d[k] = npu_flush_subnormal(d[k]);
}

static void npu_conv_gemm_task(void *ctx, size_t t, int tid)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv2d_params *p = job->p;
	const struct npu_conv_plan *pl = &job->pl;
	const struct npu_gemm_ukernel *uk = pl->uk;
	size_t nr = uk->nr, mr = uk->mr, kdim = pl->kdim;
	size_t bg = t / job->chunks, b = bg / p->groups, g = bg % p->groups;
	size_t col0 = t % job->chunks * job->chunk;
	size_t nc = pl->hw_out - col0 < job->chunk ? pl->hw_out - col0 : job->chunk;
	const float *xg = job->x + (b * p->in_c + g * pl->cg) * pl->hw_in;
	const float *ag = job->pw + g * pl->a_panels * mr * kdim;
	float *pb = job->pb + (size_t)tid * pl->b_floats;
	float *yg = job->y + (b * p->out_c + g * pl->mg) * pl->hw_out + col0;
	size_t k0, j, r;

	if (pl->pointwise) {
		for (j = 0; j < nc; j += nr)
			npu_gemm_pack_b(false, xg, pl->hw_in, col0 + j, nc - j,
					kdim, nr, pb + j / nr * kdim * nr);
	} else {
		npu_conv_im2col(p, pl, xg, col0, nc, pb);
	}
	for (k0 = 0; k0 < kdim; k0 += uk->kc) {
		size_t kc = kdim - k0 < uk->kc ? kdim - k0 : uk->kc;

		npu_gemm_macro(uk, pl->mg, nc, kc, ag + k0 * mr, kdim * mr,
			       pb + k0 * nr, kdim * nr, yg, pl->hw_out, 1.0f,
			       k0 ? 1.0f : 0.0f);
	}
	if (!npu_conv_has_epilogue(p, job->bias))
		return;
	for (r = 0; r < pl->mg; r++) {
		float *yr = yg + r * pl->hw_out;

		job->ops->epi(&p->act, job->bias ? job->bias[g * pl->mg + r] : 0.0f,
			      npu_conv_res(p, job->y, yr), yr, yr, nc);
	}
}

/*
 * Padded rows [r0, r1) of one input plane, row r0 at d: zero rows and
 * columns around the input's, each row split into stride_w phases
 * (column j * stride_w + q at phase q, j).
 */
static void npu_conv_pad_rows(const struct npu_conv_job *job, size_t plane,
			      size_t r0, size_t r1, float *d)
{
	const struct npu_conv2d_params *p = job->p;
	const struct npu_conv_plan *pl = &job->pl;
	const float *xc = job->x + plane * pl->hw_in;
	size_t r, lo = p->pad_left < pl->wp ? p->pad_left : pl->wp;
	size_t hi = p->pad_left + p->in_w < pl->wp ? p->pad_left + p->in_w : pl->wp;
	size_t sw = p->stride_w;

	for (r = r0; r < r1; r++, d += pl->wp) {
		ptrdiff_t ih = (ptrdiff_t)r - (ptrdiff_t)p->pad_top;
		const float *xr;
		size_t q, j;

		if (ih < 0 || ih >= (ptrdiff_t)p->in_h || lo >= hi) {
			memset(d, 0, pl->wp * sizeof(float));
			continue;
		}
		/* Formed only for a row inside x (no out-of-object pointer). */
		xr = xc + (size_t)ih * p->in_w;
		if (sw == 1) {
			memset(d, 0, lo * sizeof(float));
			memcpy(d + lo, xr, (hi - lo) * sizeof(float));
			memset(d + hi, 0, (pl->wp - hi) * sizeof(float));
			continue;
		}
		for (q = 0; q < sw; q++) {
			/* Phase q holds padded columns j * sw + q; those in
			 * [lo, hi) are input columns j * sw + q - pad_left. */
			float *dq = d + q * pl->wq;
			size_t j0 = lo > q ? (lo - q + sw - 1) / sw : 0;
			size_t j1 = hi > q ? (hi - q + sw - 1) / sw : 0;
			const float *src;

			if (j0 > pl->wq)
				j0 = pl->wq;
			if (j1 > pl->wq)
				j1 = pl->wq;
			if (j1 < j0)
				j1 = j0;
			src = xr + (j0 * sw + q - p->pad_left);
			for (j = 0; j < j0; j++)
				dq[j] = 0.0f;
			if (sw == 2)
				job->ops->copy_s2(src, dq + j0, j1 - j0);
			else
				for (j = j0; j < j1; j++)
					dq[j] = src[(j - j0) * sw];
			for (j = j1; j < pl->wq; j++)
				dq[j] = 0.0f;
		}
	}
}

/*
 * Row tiles (the indirect convolution's shared padded copy): rows of one
 * input plane. A task takes pad_rows rows, so that a few planes (the RGB
 * input of a stem convolution) still spread over the threads; tasks are
 * band-major, so each thread pads the rows it will read (and its
 * producer wrote), as in npu_conv_dw_bands.
 */
static void npu_conv_pad_task(void *ctx, size_t t)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv_plan *pl = &job->pl;
	size_t plane = t % job->pad_planes, r0 = t / job->pad_planes * job->pad_rows;
	size_t r1 = r0 + job->pad_rows < pl->hp ? r0 + job->pad_rows : pl->hp;

	npu_conv_pad_rows(job, plane, r0, r1, job->xpad + (plane * pl->hp + r0) * pl->wp);
}

/* Pad tasks: rows per task so that there are at least a few per thread. */
static size_t npu_conv_pad_split(struct npu_conv_job *job, size_t planes,
				 size_t threads)
{
	size_t want = 4 * threads, hp = job->pl.hp, chunks = 1;

	if (planes < want && hp > 1)
		chunks = npu_div_up(want, planes);
	/* A band of rows per thread at least (see npu_conv_pad_task). */
	if (chunks < threads)
		chunks = threads;
	if (chunks > hp)
		chunks = hp ? hp : 1;
	job->pad_rows = npu_div_up(hp, chunks);
	job->pad_chunks = npu_div_up(hp, job->pad_rows);
	job->pad_planes = planes;
	return planes * job->pad_chunks;
}

/*
 * Row tiles: output row oh of image b, group g. B's step (ci, kh, kw) is
 * the padded input row under that tap (its phase for strided rows), read
 * in place by the tile at column offset ow0: no im2col copy.
 */
static void npu_conv_ind_task(void *ctx, size_t t, int tid)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv2d_params *p = job->p;
	const struct npu_conv_plan *pl = &job->pl;
	const struct npu_gemm_ukernel *uk = pl->uk;
	size_t mr = uk->mr, nr = uk->nr, kdim = pl->kdim;
	size_t oh = t % p->out_h, bg = t / p->out_h;
	size_t b = bg / p->groups, g = bg % p->groups;
	const float **ptrs = (const float **)(job->pb + (size_t)tid * pl->b_floats);
	const float *ag = job->pw + g * pl->a_panels * mr * kdim;
	float *yg = job->y + (b * p->out_c + g * pl->mg) * pl->hw_out +
		    oh * p->out_w;
	size_t ci, kh, kw, r = 0, ow0, ir, k0;

	for (ci = 0; ci < pl->cg; ci++) {
		const float *xc = job->xpad +
			(b * p->in_c + g * pl->cg + ci) * pl->hp * pl->wp;

		for (kh = 0; kh < p->k_h; kh++) {
			const float *xr = xc + (oh * p->stride_h + kh * p->dil_h) * pl->wp;

			for (kw = 0; kw < p->k_w; kw++) {
				size_t o = kw * p->dil_w;

				ptrs[r++] = xr + o % p->stride_w * pl->wq +
					    o / p->stride_w;
			}
		}
	}
	for (ow0 = 0; ow0 < p->out_w; ow0 += nr) {
		size_t n = p->out_w - ow0 < nr ? p->out_w - ow0 : nr;

		for (ir = 0; ir < pl->mg; ir += mr) {
			size_t m = pl->mg - ir < mr ? pl->mg - ir : mr;

			for (k0 = 0; k0 < kdim; k0 += uk->kc) {
				size_t kc = kdim - k0 < uk->kc ? kdim - k0 : uk->kc;

				uk->ind(kc, ag + ir / mr * kdim * mr + k0 * mr,
					ptrs + k0, ow0, yg + ir * pl->hw_out + ow0,
					pl->hw_out, k0 ? 1.0f : 0.0f, m, n);
			}
		}
	}
	if (!npu_conv_has_epilogue(p, job->bias))
		return;
	for (r = 0; r < pl->mg; r++) {
		float *yr = yg + r * pl->hw_out;

		job->ops->epi(&p->act, job->bias ? job->bias[g * pl->mg + r] : 0.0f,
			      npu_conv_res(p, job->y, yr), yr, yr, p->out_w);
	}
}

static void npu_conv_depthwise_task(void *ctx, size_t t, int tid)
{
	struct npu_conv_job *job = ctx;
	const struct npu_conv2d_params *p = job->p;
	const struct npu_vec_ops *ops = job->ops;
	size_t planes = p->batch * p->in_c, bc = t % planes, c = bc % p->in_c;
	size_t oh0 = t / planes * job->rows_per_task, oh, kh, kw;
	size_t oh_end = oh0 + job->rows_per_task < p->out_h ?
			oh0 + job->rows_per_task : p->out_h;
	const float *xc = job->x + bc * job->pl.hw_in;
	const float *wc = job->w + c * p->k_h * p->k_w;
	float bias = job->bias ? job->bias[c] : 0.0f;
	ptrdiff_t in_h = (ptrdiff_t)p->in_h, in_w = (ptrdiff_t)p->in_w;
	ptrdiff_t sw = (ptrdiff_t)p->stride_w;

	if (job->pl.dw_padded) {
		/*
		 * Every tap in the buffer: one register-blocked pass per two
		 * rows (row oh + 1's taps are stride_h padded rows further).
		 */
		const struct npu_conv_plan *pl = &job->pl;
		float *band = job->xpad + (size_t)tid * job->band_floats;
		size_t pr0 = oh0 * p->stride_h;
		size_t pr1 = (oh_end - 1) * p->stride_h + (p->k_h - 1) * p->dil_h + 1;
		const float *taps[NPU_CONV_DW_MAX_TAPS];
		size_t tap_off[NPU_CONV_DW_MAX_TAPS], t = 0;
		const struct npu_cpu_act_params *act =
			p->act.kind != NPU_CPU_ACT_NONE || p->act.post ? &p->act : NULL;

		/* The band's padded rows, while the producer's output is
		 * still in this core's cache; then zeros for the slack. */
		npu_conv_pad_rows(job, bc, pr0, pr1, band);
		memset(band + (pr1 - pr0) * pl->wp, 0, NPU_VEC_SLACK * sizeof(float));

		/* Where each tap is from its output row's first padded row
		 * (once per task: per row, the divisions cost more than the
		 * row's multiply-adds). */
		for (kh = 0; kh < p->k_h; kh++)
			for (kw = 0; kw < p->k_w; kw++) {
				size_t o = kw * p->dil_w;

				tap_off[t++] = kh * p->dil_h * pl->wp +
					       o % p->stride_w * pl->wq + o / p->stride_w;
			}
		for (oh = oh0; oh < oh_end; oh += 2) {
			float *yr = job->y + bc * pl->hw_out + oh * p->out_w;
			const float *xr = band + (oh * p->stride_h - pr0) * pl->wp;

			for (t = 0; t < p->k_h * p->k_w; t++)
				taps[t] = xr + tap_off[t];
			if (oh + 1 < oh_end)
				ops->dw_taps2(taps, p->stride_h * pl->wp, wc, t, bias, act,
					      npu_conv_res(p, job->y, yr),
					      npu_conv_res(p, job->y, yr + p->out_w), yr,
					      yr + p->out_w, p->out_w);
			else
				ops->dw_taps(taps, wc, t, bias, act,
					     npu_conv_res(p, job->y, yr), yr, p->out_w);
		}
		return;
	}
	for (oh = oh0; oh < oh_end; oh++) {
		float *yr = job->y + bc * job->pl.hw_out + oh * p->out_w;

		memset(yr, 0, p->out_w * sizeof(float));
		for (kh = 0; kh < p->k_h; kh++) {
			ptrdiff_t ih = (ptrdiff_t)(oh * p->stride_h + kh * p->dil_h) -
				       (ptrdiff_t)p->pad_top;

			if (ih < 0 || ih >= in_h)
				continue;
			for (kw = 0; kw < p->k_w; kw++) {
				ptrdiff_t off = (ptrdiff_t)(kw * p->dil_w) -
						(ptrdiff_t)p->pad_left;
				/* Output columns whose tap lands inside the row. */
				ptrdiff_t lo = off < 0 ? (-off + sw - 1) / sw : 0;
				ptrdiff_t hi = in_w - off > 0 ?
					       (in_w - off + sw - 1) / sw : 0;

				if (hi > (ptrdiff_t)p->out_w)
					hi = (ptrdiff_t)p->out_w;
				if (lo >= hi)
					continue;
				ops->fma_row(yr + lo, xc + ih * in_w + lo * sw + off,
					     p->stride_w, wc[kh * p->k_w + kw],
					     (size_t)(hi - lo));
			}
		}
		if (bias != 0.0f || npu_conv_has_epilogue(p, NULL))
			ops->epi(&p->act, bias, npu_conv_res(p, job->y, yr), yr,
				 yr, p->out_w);
	}
}

size_t npu_conv2d_f32_packed_floats(const struct npu_conv2d_params *p)
{
	struct npu_conv_plan pl;

	if (npu_conv_degenerate(p))
		return 0;
	npu_conv_plan(p, &pl);
	if (pl.depthwise || !pl.kdim)
		return 0;
	return pl.direct_w + npu_wino_u_floats(p, pl.uk);
}

void npu_conv2d_f32_pack_weights(const struct npu_conv2d_params *p,
				 const float *w, float *packed,
				 struct npu_threadpool *pool)
{
	struct npu_conv_job job = { .p = p, .w = w, .pw = packed };

	if (!npu_conv2d_f32_packed_floats(p))
		return;
	npu_conv_plan(p, &job.pl);
	/* The direct panels always (strides may differ at run time). */
	job.pl.a_panels = npu_div_up(job.pl.mg, job.pl.uk->mr);
	npu_threadpool_run(pool, npu_conv_pack_w_task, &job,
			   p->groups * job.pl.a_panels);
	if (npu_wino_u_floats(p, job.pl.uk))
		npu_wino_pack_weights(p, w, packed + job.pl.direct_w, pool);
}

bool npu_conv2d_f32(const struct npu_conv2d_params *p, const float *x,
		    const float *w, const float *bias, float *y,
		    void *scratch, struct npu_threadpool *pool)
{
	return npu_conv2d_f32_prepacked(p, x, w, NULL, bias, y, scratch, pool);
}

bool npu_conv2d_f32_takes_winograd(const struct npu_conv2d_params *p)
{
	struct npu_conv_plan pl;

	npu_conv_plan(p, &pl);
	return pl.wino;
}

bool npu_conv2d_f32_takes_im2col(const struct npu_conv2d_params *p)
{
	struct npu_conv_plan pl;

	if (p->groups != 1 || p->k_h * p->k_w < 2)
		return false;
	npu_conv_plan(p, &pl);
	return !pl.wino && !pl.indirect && !pl.pointwise && pl.kdim;
}

bool npu_conv2d_f32_prepacked(const struct npu_conv2d_params *p,
			      const float *x, const float *w,
			      const float *packed, const float *bias,
			      float *y, void *scratch,
			      struct npu_threadpool *pool)
{
	struct npu_conv_job job = {
		.p = p, .x = x, .w = w, .bias = bias, .y = y,
		.ops = npu_vec_ops_get(),
	};
	size_t threads = (size_t)npu_threadpool_size(pool);
	size_t images = p->batch * p->groups, want, per_image;

	if (npu_conv_degenerate(p))
		return true;
	npu_conv_plan(p, &job.pl);
	want = 4 * threads;	/* tasks wanted: a few per thread */

	if (job.pl.depthwise) {
		size_t planes = p->batch * p->in_c;
		void *own = NULL;

		npu_conv_dw_bands(p, &job.pl, threads, &job.rows_per_task,
				  &job.row_tasks);
		if (job.pl.dw_padded) {
			size_t need;

			job.band_floats = npu_conv_dw_band_floats(p, &job.pl,
								  job.rows_per_task);
			need = threads * job.band_floats * sizeof(float) + 64;
			if (!scratch)
				scratch = npu_threadpool_scratch(pool, need);
			if (!scratch)
				scratch = own = malloc(need);
			if (!scratch)
				job.pl.dw_padded = false;	/* unpadded taps */
			else
				job.xpad = (float *)(((uintptr_t)scratch + 63) &
						     ~(uintptr_t)63);
		}
		npu_threadpool_run_tid(pool, npu_conv_depthwise_task, &job,
				       planes * job.row_tasks);
		free(own);
		return true;
	}
	if (!job.pl.kdim) {
		/* No input channels: the output is the bias alone. */
		size_t i, n = p->out_c * job.pl.hw_out;

		for (i = 0; i < p->batch * n; i++)
			y[i] = 0.0f;
		for (i = 0; i < p->batch * p->out_c; i++)
			job.ops->epi(&p->act, bias ? bias[i % p->out_c] : 0.0f,
				     p->residual ? p->residual + i * job.pl.hw_out : NULL,
				     y + i * job.pl.hw_out, y + i * job.pl.hw_out,
				     job.pl.hw_out);
		return true;
	}

	if (!scratch) {
		/* The pool's scratch: no fresh pages (faults) per call. */
		size_t need = npu_conv2d_f32_scratch_size(p, (int)threads) -
			      (packed ? job.pl.w_floats * sizeof(float) : 0);

		scratch = npu_threadpool_scratch(pool, need);
		if (!scratch) {
			/* No pool (or no memory): fresh memory for this call. */
			void *own = malloc(need);

			bool ok;

			if (!own)
				return false;
			ok = npu_conv2d_f32_prepacked(p, x, w, packed, bias, y, own, pool);
			free(own);
			return ok;
		}
	}
	job.pw = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
	job.xpad = job.pw + (packed ? 0 : job.pl.w_floats);
	job.pb = job.xpad + job.pl.pad_floats;
	if (job.pl.wino) {
		if (!packed)
			npu_wino_pack_weights(p, w, job.pw, pool);
		npu_wino_run(p, &job.pl.wino_pl, x,
			     packed ? packed + job.pl.direct_w : job.pw,
			     bias, y, job.pb, pool);
		return true;
	}
	job.chunk = job.pl.chunk_max;
	per_image = npu_div_up(job.pl.hw_out, job.chunk);
	/*
	 * On several threads, more column chunks: each packs only its own
	 * B columns, so the threads end within a small task of each other
	 * even when one starts late (a busy machine) or runs slower. But at
	 * least two tiles wide while that leaves two tasks per thread, as
	 * every task streams all the packed weights (det's 384 x 384 on
	 * 20 x 20: about 20% more CPU in 32-column chunks).
	 */
	want = threads > 1 ? 8 * threads : want;
	if (images * per_image < want) {
		size_t min = 2 * job.pl.uk->nr;

		per_image = npu_div_up(want, images);
		job.chunk = npu_round_up(npu_div_up(job.pl.hw_out, per_image),
					 job.pl.uk->nr);
		if (job.chunk < min && job.pl.chunk_max >= min &&
		    images * npu_div_up(job.pl.hw_out, min) >= 2 * threads)
			job.chunk = min;
	}
	job.chunks = npu_div_up(job.pl.hw_out, job.chunk);
	if (packed)
		job.pw = (float *)packed;
	else
		npu_threadpool_run(pool, npu_conv_pack_w_task, &job,
				   p->groups * job.pl.a_panels);
	if (job.pl.indirect) {
		npu_threadpool_run(pool, npu_conv_pad_task, &job,
				   npu_conv_pad_split(&job, p->batch * p->in_c,
						      threads));
		npu_threadpool_run_tid(pool, npu_conv_ind_task, &job,
				       images * p->out_h);
		return true;
	}
	npu_threadpool_run_tid(pool, npu_conv_gemm_task, &job,
			       images * job.chunks);
	return true;
}

/* ---- ConvTranspose with stride == kernel (tiles do not overlap) ---- */

struct npu_convt_job {
	const struct npu_convt2d_params *p;
	const struct npu_vec_ops *ops;
	const float *x, *w, *bias;
	float *y, *acc;		/* acc: k_w * in_w floats per thread */
};

/*
 * Task (image b, output channel oc, input row ih): output rows
 * ih * k_h + ki. k_w 2 (the detection heads' 2x2): one register-blocked
 * pass per output row (convt2). Else tap column kj of every input pixel
 * is one multiply-add row over the input channels, then the k_w rows
 * interleave into y.
 */
static void npu_convt_task(void *ctx, size_t t, int tid)
{
	const struct npu_convt_job *job = ctx;
	const struct npu_convt2d_params *p = job->p;
	size_t mg = p->out_c / p->groups, cg = p->in_c / p->groups;
	size_t ih = t % p->in_h, boc = t / p->in_h;
	size_t b = boc / p->out_c, oc = boc % p->out_c, g = oc / mg, mi = oc % mg;
	size_t out_w = p->in_w * p->k_w, kk = p->k_h * p->k_w;
	float *acc = job->acc + (size_t)tid * p->k_w * p->in_w;
	float bias = job->bias ? job->bias[oc] : 0.0f;
	size_t ki, kj, ci, iw;

	for (ki = 0; ki < p->k_h; ki++) {
		float *yr = job->y + ((b * p->out_c + oc) * p->in_h * p->k_h +
				      ih * p->k_h + ki) * out_w;

		if (p->k_w == 2) {
			/* Both taps in registers, interleaved on the store. */
			job->ops->convt2(job->x + ((b * p->in_c + g * cg) * p->in_h + ih) *
					 p->in_w, p->in_h * p->in_w, cg,
					 job->w + (g * cg * mg + mi) * kk + ki * p->k_w,
					 mg * kk, bias, yr, p->in_w);
			if (p->act.kind != NPU_CPU_ACT_NONE || p->act.post)
				job->ops->act(&p->act, 0.0f, yr, yr, out_w);
			continue;
		}
		memset(acc, 0, p->k_w * p->in_w * sizeof(float));
		for (ci = 0; ci < cg; ci++) {
			size_t c = g * cg + ci;
			const float *xr = job->x + ((b * p->in_c + c) * p->in_h + ih) *
						   p->in_w;
			/* W is [in_c][out_c / groups][k_h][k_w]. */
			const float *wc = job->w + (c * mg + mi) * kk + ki * p->k_w;

			for (kj = 0; kj < p->k_w; kj++)
				job->ops->fma_row(acc + kj * p->in_w, xr, 1, wc[kj],
						  p->in_w);
		}
		for (kj = 0; kj < p->k_w; kj++)
			for (iw = 0; iw < p->in_w; iw++)
				yr[iw * p->k_w + kj] = acc[kj * p->in_w + iw] + bias;
		if (p->act.kind != NPU_CPU_ACT_NONE || p->act.post)
			job->ops->act(&p->act, 0.0f, yr, yr, out_w);
	}
}

bool npu_convtranspose2d_f32_tiled(const struct npu_convt2d_params *p,
				   const float *x, const float *w,
				   const float *bias, float *y,
				   struct npu_threadpool *pool)
{
	struct npu_convt_job job = {
		.p = p, .ops = npu_vec_ops_get(), .x = x, .w = w, .bias = bias,
		.y = y,
	};
	size_t threads = (size_t)npu_threadpool_size(pool);
	size_t need = threads * p->k_w * p->in_w * sizeof(float);
	void *own = NULL;

	if (!p->batch || !p->out_c || !p->in_h || !p->in_w || !p->k_h ||
	    !p->k_w || !p->groups)
		return true;
	job.acc = npu_threadpool_scratch(pool, need);
	if (!job.acc) {
		own = malloc(need);
		if (!own)
			return false;
		job.acc = own;
	}
	npu_threadpool_run_tid(pool, npu_convt_task, &job,
			       p->batch * p->out_c * p->in_h);
	free(own);
	return true;
}
