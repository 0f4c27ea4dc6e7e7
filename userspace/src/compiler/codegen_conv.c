// SPDX-License-Identifier: MIT
/*
 * codegen_conv.c - the emitters of CONV2D and POOL lops: plain convs (sliced
 * by output channel, folded), ConvTranspose as phase convolutions, and convs
 * as pixel-major MATMULs.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_internal.h"

/* ---- CONV2D and POOL --------------------------------------------------- */

/* Tile index -> (slice, image, first output row). Slices outermost. */
void conv_tile(const struct conv_tiles *c, size_t tile, size_t *slice,
	       uint32_t *img, uint32_t *r0, uint32_t *r1)
{
	size_t per_slice = (size_t)c->in->n * c->row_tiles;
	uint32_t rt;

	*slice = tile / per_slice;
	*img = (uint32_t)(tile % per_slice / c->row_tiles);
	rt = (uint32_t)(tile % c->row_tiles);
	*r0 = rt * c->p.rows;
	*r1 = *r0 + c->p.rows < c->out->h ? *r0 + c->p.rows : c->out->h;
}

void conv_window(const struct conv_tiles *c, uint32_t r0, uint32_t r1,
		 struct window *w)
{
	uint32_t stride = c->pool ? c->l->pool.stride_h : c->l->conv.stride_h;
	uint32_t dil = c->pool ? 1 : c->l->conv.dil_h;
	uint32_t k = c->pool ? c->l->pool.k_h : c->l->conv.k_h;
	uint32_t pt = c->pool ? c->l->pool.pad_top : c->l->conv.pad_top;
	int64_t u = c->pool ? 1 : c->l->conv.ins_h + 1;
	int64_t start = (int64_t)r0 * stride - pt;
	int64_t need = (int64_t)window_rows(r1 - r0, stride, dil, k);
	int64_t end = start + need;
	/*
	 * Coordinates are in the zero-inserted input (row i real at i * u):
	 * the tile reads the real rows inside [start, end) and pads the rest.
	 */
	int64_t s = start <= 0 ? 0 : (start + u - 1) / u;
	int64_t t = end <= 0 ? 0 : (end - 1) / u + 1;

	if (t > c->in->h)
		t = c->in->h;
	if (t < s)
		t = s;
	w->ih0 = (uint32_t)s;
	w->in_h = (uint32_t)(t - s);
	w->pad_top = (uint32_t)(s * u - start);
	w->pad_bottom = (uint32_t)(need - w->pad_top -
				   (w->in_h ? (w->in_h - 1) * u + 1 : 0));
}

static npu_status conv_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct conv_tiles *c = ctx;
	uint32_t img, r0, r1;
	size_t s;

	conv_tile(c, tile, &s, &img, &r0, &r1);
	*changed = tile == 0 || s != c->cur_slice;
	if (!*changed || c->pool)
		return NPU_OK;
	c->cur_slice = s;
	return emit_slice_consts(e, c->l, &c->slices[s], c->p.sram_consts);
}

static npu_status conv_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct conv_tiles *c = ctx;
	uint64_t row = (uint64_t)c->in->w * c->in->c * npu_act_es(c->in);
	struct window w;
	uint32_t img, r0, r1;
	size_t s;

	conv_tile(c, tile, &s, &img, &r0, &r1);
	conv_window(c, r0, r1, &w);
	if (!w.in_h)
		return NPU_OK;
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->p.sram_in[buf],
				       NPU_SPACE_VA,
				       arena(e, c->in->offset + ((uint64_t)img * c->in->h + w.ih0) * row),
				       (uint32_t)(w.in_h * row)));
	return NPU_OK;
}

static npu_status conv_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct conv_tiles *c = ctx;
	const struct npu_lop *l = c->l;
	struct window w;
	uint32_t img, r0, r1, oc;
	size_t s;

	uint32_t es = npu_act_es(c->in);

	conv_tile(c, tile, &s, &img, &r0, &r1);
	conv_window(c, r0, r1, &w);
	oc = c->pool ? c->out->c : c->slices[s].oc1 - c->slices[s].oc0;
	if (c->pool) {
		struct npu_insn_pool p = {
			.hdr.flags = NPU_INSN_SYNC | i16_flag(c->in),
			.input = c->p.sram_in[buf], .output = c->p.sram_out[buf],
			.mode = l->pool.mode, .flags = l->pool.flags, .c = (uint16_t)oc,
			.in_h = (uint16_t)w.in_h, .in_w = (uint16_t)c->in->w,
			.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)c->out->w,
			.k_h = l->pool.k_h, .k_w = l->pool.k_w,
			.stride_h = l->pool.stride_h, .stride_w = l->pool.stride_w,
			.pad_top = (uint8_t)w.pad_top, .pad_bottom = (uint8_t)w.pad_bottom,
			.pad_left = l->pool.pad_left, .pad_right = l->pool.pad_right,
			.in_row_stride = c->in->w * c->in->c * es, .in_pixel_stride = c->in->c * es,
			.out_row_stride = c->out->w * oc * es, .out_pixel_stride = oc * es,
			.zp_in = (int16_t)c->in->q.zero_point,
			.zp_out = (int16_t)c->out->q.zero_point,
			.act_min = l->pool.act_min, .act_max = l->pool.act_max,
		};

		EMIT(e, npu_cmdbuf_pool(e->cb, &p));
		return NPU_OK;
	} else {
		const struct slice *sl = &c->slices[s];
		const struct npu_lop_quant *q = &l->conv.q;
		struct npu_insn_conv2d cv = {
			.hdr.flags = NPU_INSN_SYNC | i16_flag(c->in),
			.input = c->p.sram_in[buf] + sl->in_offset * es,
			.weight = c->p.sram_consts + sl->w_off,
			.bias = bias_es(q) ? c->p.sram_consts + sl->bias_off : 0,
			.quant = c->p.sram_consts + sl->quant_off,
			.output = c->p.sram_out[buf],
			.flags = (bias_es(q) ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q) |
				 sparse_flags(sl),
			.in_h = (uint16_t)w.in_h, .in_w = (uint16_t)c->in->w,
			.in_c = (uint16_t)sl->in_c, .out_c = (uint16_t)oc,
			.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)c->out->w,
			.k_h = l->conv.k_h, .k_w = l->conv.k_w,
			.stride_h = l->conv.stride_h, .stride_w = l->conv.stride_w,
			.dil_h = l->conv.dil_h, .dil_w = l->conv.dil_w,
			.pad_top = (uint8_t)w.pad_top, .pad_bottom = (uint8_t)w.pad_bottom,
			.pad_left = l->conv.pad_left, .pad_right = l->conv.pad_right,
			.groups = (uint16_t)sl->groups,
			.ins_h = l->conv.ins_h, .ins_w = l->conv.ins_w,
			.in_row_stride = c->in->w * c->in->c * es, .in_pixel_stride = c->in->c * es,
			.out_row_stride = c->out->w * oc * es, .out_pixel_stride = oc * es,
			.zp_in = (int16_t)c->in->q.zero_point, .zp_w = 0,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : c->out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
			.lut = out_lut_at(&e->prog->opts, q, c->p.sram_consts + sl->lut_off),
		};

		if (l->conv.fold_w) {
			/* Column phases over wide pixels, interleaved in place. */
			uint32_t R = l->conv.fold_w / l->conv.stride_w, r;

			for (r = 0; r < R; r++) {
				struct npu_fold_phase ph;
				struct npu_insn_conv2d f = cv;

				npu_conv_fold_phase(c->in->w, c->out->w, c->in->c, c->out->c,
						    l->conv.k_h, l->conv.k_w, l->conv.stride_w,
						    l->conv.pad_left, l->conv.fold_w, r, &ph);
				f.weight = cv.weight + (uint32_t)ph.weight_off;
				f.output = cv.output + r * oc;
				f.in_w = (uint16_t)ph.in_w;
				f.in_c = (uint16_t)(l->conv.fold_w * c->in->c);
				f.in_pixel_stride = l->conv.fold_w * c->in->c;
				f.out_w = (uint16_t)(c->out->w / R);
				f.out_pixel_stride = R * oc;
				f.k_w = (uint8_t)ph.k_w;
				f.stride_w = 1;
				f.pad_left = (uint8_t)ph.pad_left;
				f.pad_right = (uint8_t)ph.pad_right;
				EMIT(e, cmd_conv2d(&e->prog->opts, e->cb, &f));
			}
		} else {
			sparse_note_conv(e, l, sl, &cv);
			EMIT(e, cmd_conv2d(&e->prog->opts, e->cb, &cv));
		}
		if (lut_insn(&e->prog->opts, q))
			EMIT(e, npu_cmdbuf_lut(e->cb, i16_flag(c->out), cv.output, cv.output,
					       c->p.sram_consts + sl->lut_off,
					       (r1 - r0) * c->out->w * oc));
		return NPU_OK;
	}
}

static npu_status conv_store(struct emitter *e, void *ctx, size_t tile, int buf,
			     uint8_t flags)
{
	struct conv_tiles *c = ctx;
	uint32_t img, r0, r1, oc0 = 0, oc1 = c->out->c, es;
	uint64_t pixels, dst;
	size_t s;

	conv_tile(c, tile, &s, &img, &r0, &r1);
	if (!c->pool) {
		oc0 = c->slices[s].oc0;
		oc1 = c->slices[s].oc1;
	}
	pixels = (uint64_t)(r1 - r0) * c->out->w;
	es = npu_act_es(c->out);
	dst = arena(e, c->out->offset +
		       (((uint64_t)img * c->out->h + r0) * c->out->w * c->out->c + oc0) * es);
	if (oc1 - oc0 == c->out->c)
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA, dst, NPU_SPACE_SRAM,
					       c->p.sram_out[buf], (uint32_t)(pixels * c->out->c * es)));
	else
		EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, flags, NPU_SPACE_VA, dst, c->out->c * es,
					       NPU_SPACE_SRAM, c->p.sram_out[buf], (oc1 - oc0) * es,
					       (uint32_t)pixels, (oc1 - oc0) * es));
	return NPU_OK;
}

/* Kernel taps per axis the device runs with zero insertion (npu_hw.h). */
uint64_t conv_taps(uint32_t k, uint32_t dil, uint32_t ins)
{
	uint32_t a = dil, b = ins + 1u, period;

	while (b) {
		uint32_t t = a % b;

		a = b;
		b = t;
	}
	period = (ins + 1u) / a;
	return (k + period - 1) / period;
}

/* Taps a conv lop's CONV2D runs per output pixel (zero insertion skips some). */
uint64_t lop_taps(const struct npu_lop *l)
{
	return conv_taps(l->conv.k_h, l->conv.dil_h, l->conv.ins_h) *
	       conv_taps(l->conv.k_w, l->conv.dil_w, l->conv.ins_w);
}

/* The MACs a whole conv lop executes, as the device counts them. */
uint64_t conv_lop_macs(const struct npu_segment_program *prog, const struct npu_lop *l)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];

	if (l->conv.phase_h)	/* pixel-major: every (dy, dx) phase one MAC per input channel */
		return (uint64_t)out->n * out->h * out->w * out->c * in->c;
	/* taps on inserted zeros are skipped (npu_hw.h) */
	return (uint64_t)out->n * out->h * out->w * out->c * (in->c / l->conv.groups) *
	       lop_taps(l);
}

static npu_status gen_phases(struct emitter *e, const struct npu_lop *l,
			     const struct tiling *p);
static npu_status gen_pmm(struct emitter *e, const struct npu_lop *l, const struct pmm *m);

npu_status gen_conv_or_pool(struct emitter *e, const struct npu_lop *l,
			    const struct tiling *p)
{
	struct conv_tiles c = {
		.l = l, .p = *p,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
		.pool = l->kind == NPU_LOP_POOL,
	};
	struct tile_ops ops = {
		.consts = conv_consts, .load = conv_load,
		.compute = conv_compute, .store = conv_store,
	};
	npu_status st = NPU_OK;
	size_t i;

	if (!c.pool && p->pmm) {
		struct pmm pm;

		if (!pmm_layout(e->prog, l, p->rows, e->t->sram_size, &pm))
			return npu_error_set(e->err, NPU_ERR_INTERNAL, "codegen: %s: tiling lost",
					     l->name);
		return gen_pmm(e, l, &pm);
	}
	if (!c.pool && l->conv.phase_h)
		return gen_phases(e, l, p);
	c.row_tiles = (c.out->h + p->rows - 1) / p->rows;
	if (!c.pool) {
		uint64_t wpo = conv_wpo(l, c.in, c.out);
		size_t max = c.out->c;

		c.slices = calloc(max, sizeof(*c.slices));
		if (!c.slices)
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
		c.num_slices = make_slices(c.out->c, c.in->c, l->conv.groups, p->chunk,
					   c.slices, max);
		sparse_slices(e, l, c.slices, c.num_slices);
		for (i = 0; i < c.num_slices; i++) {
			if (put_slice_consts(&e->blob, &c.slices[i], l->conv.weight, wpo, &l->conv.q)) {
				free(c.slices);
				return npu_error_set(e->err, NPU_ERR_NO_MEMORY,
						     "codegen: %s: out of memory", l->name);
			}
		}
		e->res->macs += conv_lop_macs(e->prog, l);
	} else {
		c.num_slices = 1;
	}
	ops.count = c.num_slices * c.in->n * c.row_tiles;
	st = run_tiles(e, &ops, &c);
	free(c.slices);
	return st;
}

/* ---- ConvTranspose with kernel = stride, as phase convolutions -------- */

struct phase_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct tiling p;
	struct slice *sl;	/* one per row phase, contiguous in the blob */
	bool joined;		/* one slice, one CONV2D (npu_phase_row_cycles()) */
	uint32_t row_tiles;	/* per image */
	size_t blob_off, blob_size;
};

static void phase_tile(const struct phase_tiles *c, size_t tile, uint32_t *img,
		       uint32_t *r0, uint32_t *r1)
{
	*img = (uint32_t)(tile / c->row_tiles);
	*r0 = (uint32_t)(tile % c->row_tiles) * c->p.rows;
	*r1 = *r0 + c->p.rows < c->in->h ? *r0 + c->p.rows : c->in->h;
}

static npu_status phase_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct phase_tiles *c = ctx;

	*changed = tile == 0;
	if (!*changed)
		return NPU_OK;
	return emit_consts(e, c->blob_off, c->blob_size, c->p.sram_consts);
}

/* Input rows [r0, r1) of image img, dense NHWC, to SRAM at 'sram'. */
static npu_status load_in_rows(struct emitter *e, const struct npu_act *in, uint32_t sram,
			       uint32_t img, uint32_t r0, uint32_t r1)
{
	uint64_t row = (uint64_t)in->w * in->c;

	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, sram, NPU_SPACE_VA,
				       arena(e, in->offset + ((uint64_t)img * in->h + r0) * row),
				       (uint32_t)((r1 - r0) * row)));
	return NPU_OK;
}

static npu_status phase_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct phase_tiles *c = ctx;
	uint32_t img, r0, r1;

	phase_tile(c, tile, &img, &r0, &r1);
	return load_in_rows(e, c->in, c->p.sram_in[buf], img, r0, r1);
}

/*
 * Row phase dy is a 1x1 convolution to the (dx, oc) channels of output
 * rows s * i + dy: written in place with the output's row stride, the
 * phases interleave into the finished NHWC rows.
 */
static npu_status phase_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct phase_tiles *c = ctx;
	const struct npu_lop *l = c->l;
	const struct npu_lop_quant *q = &l->conv.q;
	uint32_t img, r0, r1, dy, pc = c->p.chunk, f = l->conv.fold_w ? l->conv.fold_w : 1;
	uint64_t orow = (uint64_t)c->out->w * c->out->c;

	phase_tile(c, tile, &img, &r0, &r1);
	if (c->joined) {
		/* Wide pixel m holds (dy, f, dx, oc): phase_store() interleaves. */
		const struct slice *sl = &c->sl[0];
		uint32_t base = c->p.sram_consts + (uint32_t)(sl->blob_off - c->blob_off);
		struct npu_insn_conv2d cv = {
			.hdr.flags = NPU_INSN_SYNC,
			.input = c->p.sram_in[buf],
			.weight = base + sl->w_off,
			.bias = q->bias ? base + sl->bias_off : 0,
			.quant = base + sl->quant_off,
			.output = c->p.sram_out[buf],
			.flags = (q->bias ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q),
			.in_h = (uint16_t)(r1 - r0), .in_w = (uint16_t)(c->in->w / f),
			.in_c = (uint16_t)(f * c->in->c), .out_c = (uint16_t)(l->conv.phase_h * pc),
			.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)(c->in->w / f),
			.k_h = 1, .k_w = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
			.groups = 1,
			.in_row_stride = c->in->w * c->in->c, .in_pixel_stride = f * c->in->c,
			.out_row_stride = (uint32_t)(l->conv.phase_h * orow),
			.out_pixel_stride = l->conv.phase_h * pc,
			.zp_in = (int16_t)c->in->q.zero_point, .zp_w = 0,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : c->out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
			.lut = out_lut_at(&e->prog->opts, q, c->p.sram_consts + c->sl[0].lut_off),
		};

		EMIT(e, cmd_conv2d(&e->prog->opts, e->cb, &cv));
	}
	for (dy = 0; dy < l->conv.phase_h && !c->joined; dy++) {
		const struct slice *sl = &c->sl[dy];
		uint32_t base = c->p.sram_consts + (uint32_t)(sl->blob_off - c->blob_off);
		struct npu_insn_conv2d cv = {
			.hdr.flags = NPU_INSN_SYNC,
			.input = c->p.sram_in[buf],
			.weight = base + sl->w_off,
			.bias = q->bias ? base + sl->bias_off : 0,
			.quant = base + sl->quant_off,
			.output = c->p.sram_out[buf] + dy * (uint32_t)orow,
			.flags = (q->bias ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q),
			.in_h = (uint16_t)(r1 - r0), .in_w = (uint16_t)(c->in->w / f),
			.in_c = (uint16_t)(f * c->in->c), .out_c = (uint16_t)pc,
			.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)(c->in->w / f),
			.k_h = 1, .k_w = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
			.groups = 1,
			.in_row_stride = c->in->w * c->in->c, .in_pixel_stride = f * c->in->c,
			.out_row_stride = (uint32_t)(l->conv.phase_h * orow), .out_pixel_stride = pc,
			.zp_in = (int16_t)c->in->q.zero_point, .zp_w = 0,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : c->out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
			.lut = out_lut_at(&e->prog->opts, q, c->p.sram_consts + c->sl[0].lut_off),
		};

		EMIT(e, cmd_conv2d(&e->prog->opts, e->cb, &cv));
	}
	if (lut_insn(&e->prog->opts, q))
		EMIT(e, npu_cmdbuf_lut(e->cb, 0, c->p.sram_out[buf], c->p.sram_out[buf],
				       c->p.sram_consts + c->sl[0].lut_off,
				       (uint32_t)((r1 - r0) * l->conv.phase_h * orow)));
	return NPU_OK;
}

/*
 * A joined tile in SRAM is [row i][wide pixel m][dy][pc]; output row
 * phase_h * i + dy takes block dy of every m. Strided DMA, by input row
 * (m rows of pc bytes each) or by wide pixel (a row per input row) when
 * the tile has fewer rows than wide pixels. 'flags' (the tile's SYNC) go
 * on the first: the DMA engine runs the rest after it.
 */
static npu_status phase_store_joined(struct emitter *e, const struct phase_tiles *c,
				     uint32_t img, uint32_t r0, uint32_t r1, int buf,
				     uint8_t flags)
{
	uint32_t ph = c->l->conv.phase_h, f = c->l->conv.fold_w ? c->l->conv.fold_w : 1;
	uint32_t m = c->in->w / f, pc = c->p.chunk, dy, i, n = r1 - r0;
	uint64_t orow = (uint64_t)c->out->w * c->out->c;
	uint64_t dst = c->out->offset + ((uint64_t)img * c->out->h + (uint64_t)r0 * ph) * orow;
	uint64_t src = c->p.sram_out[buf];

	for (dy = 0; dy < ph; dy++) {
		if (n <= m) {
			for (i = 0; i < n; i++, flags = 0)
				EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, flags, NPU_SPACE_VA,
							       arena(e, dst + ((uint64_t)i * ph + dy) * orow),
							       pc, NPU_SPACE_SRAM,
							       src + (uint64_t)i * ph * orow + dy * pc,
							       (uint64_t)ph * pc, m, pc));
			continue;
		}
		for (i = 0; i < m; i++, flags = 0)
			EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, flags, NPU_SPACE_VA,
						       arena(e, dst + dy * orow + (uint64_t)i * pc),
						       ph * orow, NPU_SPACE_SRAM,
						       src + ((uint64_t)i * ph + dy) * pc,
						       ph * orow, n, pc));
	}
	return NPU_OK;
}

static npu_status phase_store(struct emitter *e, void *ctx, size_t tile, int buf,
			      uint8_t flags)
{
	struct phase_tiles *c = ctx;
	uint64_t orow = (uint64_t)c->out->w * c->out->c;
	uint32_t img, r0, r1;

	phase_tile(c, tile, &img, &r0, &r1);
	if (c->joined)
		return phase_store_joined(e, c, img, r0, r1, buf, flags);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, c->out->offset + ((uint64_t)img * c->out->h +
								 (uint64_t)r0 * c->l->conv.phase_h) * orow),
				       NPU_SPACE_SRAM, c->p.sram_out[buf],
				       (uint32_t)((r1 - r0) * c->l->conv.phase_h * orow)));
	return NPU_OK;
}

/* ---- Pixel-major MATMULs: 1x1 convs, ConvTranspose phases (pmm) ------- */

struct pmm_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct pmm m;
	uint32_t row_tiles;	/* per image */
	size_t blob_off;
};

static void pmm_tile(const struct pmm_tiles *c, size_t tile, uint32_t *img, uint32_t *r0,
		     uint32_t *r1)
{
	*img = (uint32_t)(tile / c->row_tiles);
	*r0 = (uint32_t)(tile % c->row_tiles) * c->m.rows;
	*r1 = *r0 + c->m.rows < c->in->h ? *r0 + c->m.rows : c->in->h;
}

static npu_status pmm_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct pmm_tiles *c = ctx;

	*changed = tile == 0;
	return *changed ? emit_consts(e, c->blob_off, c->m.consts, 0) : NPU_OK;
}

static npu_status pmm_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct pmm_tiles *c = ctx;
	uint32_t img, r0, r1;

	pmm_tile(c, tile, &img, &r0, &r1);
	return load_in_rows(e, c->in, c->m.sram_in[buf], img, r0, r1);
}

/*
 * The pixel-major MATMULs of 'rows' input rows at SRAM 'input' (constants
 * at 'consts' + m's offsets): phase p = (dy, dx) into mid block p, the LUT
 * over all, then each block to output pixels (s_h * i + dy, s_w * j + dx)
 * of the tile at 'output'. 'flags' on the first instruction.
 */
npu_status pmm_emit(struct emitter *e, const struct npu_lop *l, const struct pmm *m,
		    uint32_t consts, uint32_t input, uint32_t output, uint32_t rows,
		    uint8_t flags)
{
	const struct npu_act *in = &e->prog->acts[l->in], *out = &e->prog->acts[l->out];
	const struct npu_lop_quant *q = &l->conv.q;
	uint32_t ph = l->conv.phase_h, pw = l->conv.phase_w ? l->conv.phase_w : 1;
	uint32_t p, n = rows * in->w, ow = out->w;

	for (p = 0; p < m->phases; p++) {
		struct npu_insn_matmul mm = {
			.hdr.flags = p ? 0 : flags,
			.a = consts + m->w_off[p],
			.b = input,
			.bias = q->bias ? consts + m->bias_off[p] : 0,
			.quant = consts + m->quant_off[p],
			.output = m->sram_mid + p * n,
			.flags = NPU_QUANT_PER_TENSOR | (q->bias ? 0 : NPU_CONV_NO_BIAS) |
				 out_lut_flag(&e->prog->opts, q),
			.m = 1, .k = in->c, .n = n,
			.a_stride = in->c, .out_stride = n,
			.zp_a = 0, .zp_b = (int16_t)in->q.zero_point,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
			.lut = out_lut_at(&e->prog->opts, q, consts + m->lut_off),
		};

		EMIT(e, cmd_matmul(&e->prog->opts, e->cb, &mm));
	}
	if (lut_insn(&e->prog->opts, q))
		EMIT(e, npu_cmdbuf_lut(e->cb, 0, m->sram_mid, m->sram_mid, consts + m->lut_off,
				       m->phases * n));
	for (p = 0; p < m->phases; p++) {
		struct npu_insn_resize rz = {
			.input = m->sram_mid + p * n,
			.output = output + (p / pw) * ow + p % pw,
			.mode = NPU_RESIZE_NEAREST, .c = 1,
			.in_h = (uint16_t)rows, .in_w = (uint16_t)in->w,
			.out_h = (uint16_t)rows, .out_w = (uint16_t)in->w,
			.in_row_stride = in->w, .in_pixel_stride = 1,
			.out_row_stride = ph * ow, .out_pixel_stride = pw,
			.step_h = 1, .step_w = 1, .den_h = 1, .den_w = 1,
		};

		if (m->conv1x1) {	/* channel p of every NHWC pixel */
			rz.output = output + p;
			rz.out_row_stride = in->w * m->phases;
			rz.out_pixel_stride = m->phases;
		}
		EMIT(e, npu_cmdbuf_resize(e->cb, &rz));
	}
	return NPU_OK;
}

static npu_status pmm_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct pmm_tiles *c = ctx;
	uint32_t img, r0, r1;

	pmm_tile(c, tile, &img, &r0, &r1);
	return pmm_emit(e, c->l, &c->m, 0, c->m.sram_in[buf], c->m.sram_out[buf], r1 - r0,
			NPU_INSN_SYNC);
}

static npu_status pmm_store(struct emitter *e, void *ctx, size_t tile, int buf, uint8_t flags)
{
	struct pmm_tiles *c = ctx;
	uint64_t orow = (uint64_t)c->out->w * c->out->c;
	uint32_t img, r0, r1, s = c->m.conv1x1 ? 1 : c->l->conv.phase_h;	/* out rows per in row */

	pmm_tile(c, tile, &img, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, c->out->offset + ((uint64_t)img * c->out->h +
								 (uint64_t)r0 * s) * orow),
				       NPU_SPACE_SRAM, c->m.sram_out[buf],
				       (uint32_t)((r1 - r0) * s * orow)));
	return NPU_OK;
}

/* The constants of pmm_consts_layout() into the blob at *off. */
npu_status pmm_blob(struct emitter *e, const struct npu_lop *l, const struct pmm *m,
		    size_t *off)
{
	const struct npu_lop_quant *q = &l->conv.q;
	const struct npu_act *in = &e->prog->acts[l->in];
	uint32_t f = l->conv.fold_w ? l->conv.fold_w : 1, pw = l->conv.phase_w ? l->conv.phase_w : 1;
	uint32_t p, j;
	uint8_t *k = calloc(1, m->consts);
	int rc;

	if (!k)
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
	for (p = 0; p < m->phases; p++) {
		/* lowering's row (dy, f = 0, dx, oc = 0); its f = 0 block of weights
		 * (a 1x1 conv: row p) */
		size_t row = m->conv1x1 ? p : ((size_t)(p / pw) * f * pw) + p % pw;

		memcpy(k + m->w_off[p], l->conv.weight + row * f * in->c, in->c);
		if (q->bias)
			for (j = 0; j < m->n; j++)
				memcpy(k + m->bias_off[p] + 4 * (size_t)j, &q->bias[row], 4);
		memcpy(k + m->quant_off[p], &q->mult[row], 4);
		k[m->quant_off[p] + 4] = q->shift[row];
	}
	if (q->lut)
		memcpy(k + m->lut_off, q->lut, 256);
	rc = blob_put(&e->blob, k, m->consts, off);
	free(k);
	if (rc)
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
	return NPU_OK;
}

static npu_status gen_pmm(struct emitter *e, const struct npu_lop *l, const struct pmm *m)
{
	struct pmm_tiles c = {
		.l = l, .m = *m,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = pmm_consts, .load = pmm_load,
		.compute = pmm_compute, .store = pmm_store,
	};

	if (pmm_blob(e, l, m, &c.blob_off))
		return e->err->status;
	c.row_tiles = (c.in->h + m->rows - 1) / m->rows;
	e->res->macs += conv_lop_macs(e->prog, l);
	ops.count = (size_t)c.in->n * c.row_tiles;
	return run_tiles(e, &ops, &c);
}

static npu_status gen_phases(struct emitter *e, const struct npu_lop *l, const struct tiling *p)
{

	struct phase_tiles c = {
		.l = l, .p = *p,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = phase_consts, .load = phase_load,
		.compute = phase_compute, .store = phase_store,
	};
	uint32_t dy;
	npu_status st;

	npu_phase_row_cycles(&e->prog->opts, c.in->w, c.in->c, c.out->c, l->conv.phase_h, l->conv.phase_w,
			     l->conv.fold_w ? l->conv.fold_w : 1, &c.joined);
	c.sl = calloc(l->conv.phase_h, sizeof(*c.sl));
	if (!c.sl)
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
	for (dy = 0; dy < (c.joined ? 1u : l->conv.phase_h); dy++) {
		c.sl[dy].oc0 = dy * p->chunk;
		c.sl[dy].oc1 = c.joined ? l->conv.phase_h * p->chunk : (dy + 1) * p->chunk;
		if (put_slice_consts(&e->blob, &c.sl[dy], l->conv.weight,
				     (uint64_t)(l->conv.fold_w ? l->conv.fold_w : 1) * c.in->c,
				     &l->conv.q)) {
			free(c.sl);
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory",
					     l->name);
		}
	}
	c.blob_off = c.sl[0].blob_off;
	c.blob_size = e->blob.size - c.blob_off;
	c.row_tiles = (c.in->h + p->rows - 1) / p->rows;
	e->res->macs += (uint64_t)c.out->n * c.out->h * c.out->w * c.out->c * c.in->c;
	ops.count = (size_t)c.in->n * c.row_tiles;
	st = run_tiles(e, &ops, &c);
	free(c.sl);
	return st;
}
