// SPDX-License-Identifier: MIT
/*
 * codegen_ops.c - the emitters of the other lop kinds: RESIZE, MATMUL (constant
 * weights or two activations), ELTWISE / LUT / SOFTMAX / LAYERNORM, REDUCE and
 * COPY.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_internal.h"

/* ---- RESIZE ------------------------------------------------------------ */

struct resize_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct tiling p;
	uint32_t row_tiles;	/* per image */
};

static void resize_tile(const struct resize_tiles *c, size_t tile, uint32_t *img,
			uint32_t *r0, uint32_t *r1)
{
	*img = (uint32_t)(tile / c->row_tiles);
	*r0 = (uint32_t)(tile % c->row_tiles) * c->p.rows;
	*r1 = *r0 + c->p.rows < c->out->h ? *r0 + c->p.rows : c->out->h;
}

static npu_status resize_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	(void)e;
	(void)ctx;
	*changed = tile == 0;
	return NPU_OK;
}

static npu_status resize_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct resize_tiles *c = ctx;
	uint64_t row = (uint64_t)c->in->w * c->in->c * (c->in->i16 ? 2u : 1u);
	uint32_t img, r0, r1, a, b;

	resize_tile(c, tile, &img, &r0, &r1);
	resize_rows(c->l, c->in, r0, r1, &a, &b);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->p.sram_in[buf],
				       NPU_SPACE_VA,
				       arena(e, c->in->offset + ((uint64_t)img * c->in->h + a) * row),
				       (uint32_t)((b - a + 1u) * row)));
	return NPU_OK;
}

static npu_status resize_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct resize_tiles *c = ctx;
	const struct npu_lop *l = c->l;
	uint32_t img, r0, r1, a, b, es = c->in->i16 ? 2u : 1u;	/* strides in bytes */
	struct npu_insn_resize r;

	resize_tile(c, tile, &img, &r0, &r1);
	resize_rows(l, c->in, r0, r1, &a, &b);
	/*
	 * The tile's rows restart at 0 and its input at row a: shift the
	 * numerator so every output row samples the same input row as in the
	 * whole tensor (the clamps agree too: a and b are clamped ends).
	 */
	r = (struct npu_insn_resize){
		.hdr.flags = NPU_INSN_SYNC | i16_flag(c->in),
		.input = c->p.sram_in[buf], .output = c->p.sram_out[buf],
		.mode = l->resize.mode, .c = (uint16_t)c->in->c,
		.in_h = (uint16_t)(b - a + 1u), .in_w = (uint16_t)c->in->w,
		.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)c->out->w,
		.in_row_stride = c->in->w * c->in->c * es, .in_pixel_stride = c->in->c * es,
		.out_row_stride = c->out->w * c->out->c * es, .out_pixel_stride = c->out->c * es,
		.step_h = l->resize.step_h, .step_w = l->resize.step_w,
		.offset_h = (int32_t)((int64_t)l->resize.offset_h +
				      (int64_t)r0 * l->resize.step_h -
				      (int64_t)a * l->resize.den_h),
		.offset_w = l->resize.offset_w,
		.den_h = l->resize.den_h, .den_w = l->resize.den_w,
	};
	EMIT(e, npu_cmdbuf_resize(e->cb, &r));
	return NPU_OK;
}

static npu_status resize_store(struct emitter *e, void *ctx, size_t tile, int buf,
			       uint8_t flags)
{
	struct resize_tiles *c = ctx;
	uint64_t row = (uint64_t)c->out->w * c->out->c * (c->out->i16 ? 2u : 1u);
	uint32_t img, r0, r1;

	resize_tile(c, tile, &img, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, c->out->offset + ((uint64_t)img * c->out->h + r0) * row),
				       NPU_SPACE_SRAM, c->p.sram_out[buf],
				       (uint32_t)((r1 - r0) * row)));
	return NPU_OK;
}

npu_status gen_resize(struct emitter *e, const struct npu_lop *l,
		      const struct tiling *p)
{
	struct resize_tiles c = {
		.l = l, .p = *p,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = resize_consts, .load = resize_load,
		.compute = resize_compute, .store = resize_store,
	};

	c.row_tiles = (c.out->h + p->rows - 1) / p->rows;
	ops.count = (size_t)c.in->n * c.row_tiles;
	return run_tiles(e, &ops, &c);
}

/* ---- MATMUL ------------------------------------------------------------ */

struct mm_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct tiling p;
	struct slice *slices;
	size_t num_slices, cur_slice;
	uint64_t m;
	uint32_t row_tiles;
};

static void mm_tile(const struct mm_tiles *c, size_t tile, size_t *slice,
		    uint64_t *r0, uint64_t *r1)
{
	*slice = tile / c->row_tiles;
	*r0 = (uint64_t)(tile % c->row_tiles) * c->p.rows;
	*r1 = *r0 + c->p.rows < c->m ? *r0 + c->p.rows : c->m;
}

static npu_status mm_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct mm_tiles *c = ctx;
	uint64_t r0, r1;
	size_t s;

	mm_tile(c, tile, &s, &r0, &r1);
	*changed = tile == 0 || s != c->cur_slice;
	if (!*changed)
		return NPU_OK;
	c->cur_slice = s;
	return emit_slice_consts(e, c->l, &c->slices[s], c->p.sram_consts);
}

static npu_status mm_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct mm_tiles *c = ctx;
	uint64_t r0, r1;
	size_t s;

	mm_tile(c, tile, &s, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->p.sram_in[buf],
				       NPU_SPACE_VA,
				       arena(e, c->in->offset + r0 * c->in->c * npu_act_es(c->in)),
				       (uint32_t)((r1 - r0) * c->in->c * npu_act_es(c->in))));
	return NPU_OK;
}

static npu_status mm_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct mm_tiles *c = ctx;
	const struct npu_lop_quant *q = &c->l->matmul.q;
	const struct slice *sl;
	uint64_t r0, r1;
	size_t s;
	uint32_t n;

	mm_tile(c, tile, &s, &r0, &r1);
	sl = &c->slices[s];
	n = sl->oc1 - sl->oc0;
	{
		struct npu_insn_matmul mm = {
			.hdr.flags = NPU_INSN_SYNC | i16_flag(c->in),
			.a = c->p.sram_in[buf],
			.b = c->p.sram_consts + sl->w_off,
			.bias = bias_es(q) ? c->p.sram_consts + sl->bias_off : 0,
			.quant = c->p.sram_consts + sl->quant_off,
			.output = c->p.sram_out[buf],
			.flags = (bias_es(q) ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q) |
				 sparse_flags(sl),
			.m = (uint32_t)(r1 - r0), .k = c->in->c, .n = n,
			.a_stride = c->in->c * npu_act_es(c->in), .out_stride = n * npu_act_es(c->out),
			.zp_a = (int16_t)c->in->q.zero_point, .zp_b = 0,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : c->out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
			.lut = out_lut_at(&e->prog->opts, q, c->p.sram_consts + sl->lut_off),
		};

		sparse_note_matmul(e, c->l, sl, &mm);
		EMIT(e, cmd_matmul(&e->prog->opts, e->cb, &mm));
		if (lut_insn(&e->prog->opts, q))
			EMIT(e, npu_cmdbuf_lut(e->cb, i16_flag(c->out), mm.output, mm.output,
					       c->p.sram_consts + sl->lut_off,
					       (uint32_t)(r1 - r0) * n));
	}
	return NPU_OK;
}

static npu_status mm_store(struct emitter *e, void *ctx, size_t tile, int buf,
			   uint8_t flags)
{
	struct mm_tiles *c = ctx;
	const struct slice *sl;
	uint64_t r0, r1, dst;
	size_t s;
	uint32_t n, es;

	mm_tile(c, tile, &s, &r0, &r1);
	sl = &c->slices[s];
	n = sl->oc1 - sl->oc0;
	es = npu_act_es(c->out);
	dst = arena(e, c->out->offset + (r0 * c->out->c + sl->oc0) * es);
	if (n == c->out->c)
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA, dst, NPU_SPACE_SRAM,
					       c->p.sram_out[buf], (uint32_t)((r1 - r0) * n * es)));
	else
		EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, flags, NPU_SPACE_VA, dst, c->out->c * es,
					       NPU_SPACE_SRAM, c->p.sram_out[buf], n * es,
					       (uint32_t)(r1 - r0), n * es));
	return NPU_OK;
}

npu_status gen_matmul_act(struct emitter *e, const struct npu_lop *l,
			  const struct tiling *p)
{
	const struct npu_act *in = &e->prog->acts[l->in], *in2 = &e->prog->acts[l->in2];
	const struct npu_act *out = &e->prog->acts[l->out];
	const struct npu_lop_quant *q = &l->matmul.q;
	uint32_t m = p->rows, k = in->c, n = out->c, b0, b, nb, i;
	size_t start = (size_t)align_up(e->blob.size, SRAM_ALIGN), off;
	struct mm_act_consts cl;
	uint8_t quant[5], idq[5] = { 0, 0, 0, 0x40, 30 };	/* 2^30 >> 30 = 1 */
	int8_t *ident = NULL;
	int rc;

	mm_act_consts(l, n, &cl);
	memcpy(quant, q->mult, 4);
	quant[4] = q->shift[0];
	if (cl.mm_transpose) {
		ident = calloc((size_t)n * n, 1);
		if (!ident)
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY,
					     "codegen: %s: out of memory", l->name);
		for (i = 0; i < n; i++)
			ident[(size_t)i * n + i] = 1;
	}
	/* Each part at the next 64-byte boundary: the offsets of mm_act_consts(). */
	rc = blob_put(&e->blob, quant, sizeof(quant), &off) ||
	     (q->lut && blob_put(&e->blob, q->lut, 256, &off)) ||
	     (cl.mm_transpose && (blob_put(&e->blob, idq, sizeof(idq), &off) ||
				  blob_put(&e->blob, ident, (size_t)n * n, &off)));
	free(ident);
	if (rc)
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory",
				     l->name);
	if (emit_consts(e, start, e->blob.size - start, p->sram_consts))
		return e->err->status;
	for (b0 = 0; b0 < l->matmul.batch; b0 += nb) {
		uint64_t b_va = arena(e, in2->offset + (uint64_t)b0 * k * n);
		bool sync = true;	/* the first compute waits for the loads */

		nb = l->matmul.batch - b0 < p->chunk ? l->matmul.batch - b0 : p->chunk;
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, p->sram_in[0],
					       NPU_SPACE_VA,
					       arena(e, in->offset + (uint64_t)b0 * m * k),
					       nb * m * k));
		if (l->matmul.b_nk || cl.mm_transpose)	/* as it is */
			EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM,
						       l->matmul.b_nk ? p->sram_in2[0] :
						       p->sram_in[1], NPU_SPACE_VA, b_va,
						       nb * k * n));
		for (b = 0; cl.mm_transpose && b < nb; b++, sync = false) {
			struct npu_insn_matmul t = {
				.hdr.flags = sync ? NPU_INSN_SYNC : 0,
				.a = p->sram_consts + cl.id, .b = p->sram_in[1] + b * k * n,
				.quant = p->sram_consts + cl.idq,
				.output = p->sram_in2[0] + b * k * n,
				.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS,
				.m = n, .k = n, .n = k, .a_stride = n, .out_stride = k,
				.zp_b = (int16_t)in2->q.zero_point,
				.zp_out = (int16_t)in2->q.zero_point,
				.act_min = -128, .act_max = 127,
			};

			EMIT(e, cmd_matmul(&e->prog->opts, e->cb, &t));
		}
		for (b = 0; !l->matmul.b_nk && !cl.mm_transpose && b < nb; b++) {
			uint64_t bb = b_va + (uint64_t)b * k * n;
			uint32_t dst = p->sram_in2[0] + b * k * n;

			/* B [k][n] -> [n][k]: a strided DMA of one-byte rows per
			 * row of the smaller side (each DMA costs a setup). */
			if (k <= n)
				for (i = 0; i < k; i++)
					EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, 0, NPU_SPACE_SRAM, dst + i,
								       k, NPU_SPACE_VA,
								       bb + (uint64_t)i * n, 1, n, 1));
			else
				for (i = 0; i < n; i++)
					EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, 0, NPU_SPACE_SRAM,
								       dst + i * k, 1, NPU_SPACE_VA,
								       bb + i, n, k, 1));
		}
		for (b = 0; b < nb; b++, sync = false) {
			struct npu_insn_matmul mm = {
				.hdr.flags = sync ? NPU_INSN_SYNC : 0,
				.a = p->sram_in[0] + b * m * k, .b = p->sram_in2[0] + b * k * n,
				.quant = p->sram_consts, .output = p->sram_out[0] + b * m * n,
				.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS | out_lut_flag(&e->prog->opts, q),
				.m = m, .k = k, .n = n, .a_stride = k, .out_stride = n,
				.zp_a = (int16_t)in->q.zero_point,
				.zp_b = (int16_t)in2->q.zero_point,
				.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
				.act_min = q->act_min, .act_max = q->act_max,
				.lut = out_lut_at(&e->prog->opts, q, p->sram_consts + cl.lut),
			};

			EMIT(e, cmd_matmul(&e->prog->opts, e->cb, &mm));
		}
		if (lut_insn(&e->prog->opts, q))
			EMIT(e, npu_cmdbuf_lut(e->cb, 0, p->sram_out[0], p->sram_out[0],
					       p->sram_consts + cl.lut, nb * m * n));
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, NPU_INSN_SYNC, NPU_SPACE_VA,
					       arena(e, out->offset + (uint64_t)b0 * m * n),
					       NPU_SPACE_SRAM, p->sram_out[0], nb * m * n));
	}
	/* The model's MACs: the transposing products are data movement. */
	e->res->macs += (uint64_t)l->matmul.batch * m * n * k;
	return NPU_OK;
}

npu_status gen_matmul(struct emitter *e, const struct npu_lop *l,
		      const struct tiling *p)
{
	struct mm_tiles c = {
		.l = l, .p = *p,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = mm_consts, .load = mm_load,
		.compute = mm_compute, .store = mm_store,
	};
	npu_status st;
	size_t i;

	c.m = (uint64_t)c.in->n * c.in->h * c.in->w;
	c.row_tiles = (uint32_t)((c.m + p->rows - 1) / p->rows);
	c.slices = calloc(c.out->c, sizeof(*c.slices));
	if (!c.slices)
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
	c.num_slices = make_slices(c.out->c, c.in->c, 1, p->chunk, c.slices, c.out->c);
	sparse_slices(e, l, c.slices, c.num_slices);
	for (i = 0; i < c.num_slices; i++) {
		if (put_slice_consts(&e->blob, &c.slices[i], l->matmul.weight, c.in->c,
				     &l->matmul.q)) {
			free(c.slices);
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY,
					     "codegen: %s: out of memory", l->name);
		}
	}
	e->res->macs += c.m * c.out->c * c.in->c;
	ops.count = c.num_slices * c.row_tiles;
	st = run_tiles(e, &ops, &c);
	free(c.slices);
	return st;
}

/* ---- ELTWISE and LUT --------------------------------------------------- */

struct flat_tiles {
	const struct npu_lop *l;
	const struct npu_act *a, *b, *out;
	const struct npu_act *bvec;	/* broadcast activation, loaded once */
	struct tiling p;
	uint64_t elems;		/* total elements */
	uint64_t per_tile;	/* elements per tile */
	uint32_t b_sram, lut_sram;
	size_t blob_off, blob_size;
};

static void flat_tile(const struct flat_tiles *c, size_t tile, uint64_t *e0,
		      uint64_t *e1)
{
	*e0 = tile * c->per_tile;
	*e1 = *e0 + c->per_tile < c->elems ? *e0 + c->per_tile : c->elems;
}

static npu_status flat_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct flat_tiles *c = ctx;

	*changed = tile == 0;
	if (!*changed)
		return NPU_OK;
	if (emit_consts(e, c->blob_off, c->blob_size, c->p.sram_consts))
		return e->err->status;
	/* The previous op ended with a SYNC store: its SRAM is free. */
	if (c->bvec)
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->b_sram, NPU_SPACE_VA,
					       arena(e, c->bvec->offset),
					       c->l->elt.b_count * npu_act_es(c->bvec)));
	return NPU_OK;
}

static npu_status flat_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct flat_tiles *c = ctx;
	uint64_t e0, e1;

	uint32_t ea = npu_act_es(c->a), eb = c->b ? npu_act_es(c->b) : 1;

	flat_tile(c, tile, &e0, &e1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->p.sram_in[buf],
				       NPU_SPACE_VA, arena(e, c->a->offset + e0 * ea),
				       (uint32_t)((e1 - e0) * ea)));
	if (c->b)
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->p.sram_in2[buf],
					       NPU_SPACE_VA, arena(e, c->b->offset + e0 * eb),
					       (uint32_t)((e1 - e0) * eb)));
	return NPU_OK;
}

static npu_status flat_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct flat_tiles *c = ctx;
	const struct npu_lop *l = c->l;
	uint64_t e0, e1;
	uint32_t n;

	flat_tile(c, tile, &e0, &e1);
	n = (uint32_t)(e1 - e0);
	if (l->kind == NPU_LOP_LUT) {
		EMIT(e, npu_cmdbuf_lut(e->cb, NPU_INSN_SYNC | i16_flag(c->out), c->p.sram_in[buf],
				       c->p.sram_out[buf], c->lut_sram, n));
		return NPU_OK;
	} else if (l->kind == NPU_LOP_ROWS && l->rows.opcode == NPU_OP_SOFTMAX) {
		struct npu_insn_softmax sm = {
			.hdr.flags = NPU_INSN_SYNC,
			.input = c->p.sram_in[buf], .output = c->p.sram_out[buf],
			.table = c->lut_sram, .rows = n / c->out->c, .c = c->out->c,
			.in_stride = c->out->c, .out_stride = c->out->c,
			.mult = l->rows.mult, .shift = l->rows.shift,
			.zp_out = (int16_t)c->out->q.zero_point,
			.act_min = -128, .act_max = 127,
		};

		EMIT(e, npu_cmdbuf_softmax(e->cb, &sm));
		return NPU_OK;
	} else if (l->kind == NPU_LOP_ROWS) {
		struct npu_insn_layernorm ln = {
			.hdr.flags = NPU_INSN_SYNC,
			.input = c->p.sram_in[buf], .output = c->p.sram_out[buf],
			.params = c->lut_sram, .rows = n / c->out->c, .c = c->out->c,
			.in_stride = c->out->c, .out_stride = c->out->c,
			.eps = l->rows.eps, .shift = l->rows.shift,
			.zp_out = (int16_t)c->out->q.zero_point,
			.act_min = -128, .act_max = 127,
		};

		EMIT(e, npu_cmdbuf_layernorm(e->cb, &ln));
		return NPU_OK;
	} else {
		struct npu_insn_eltwise el = {
			.hdr.flags = NPU_INSN_SYNC,
			.a = c->p.sram_in[buf],
			.b = c->b ? c->p.sram_in2[buf] : c->b_sram,
			.output = c->p.sram_out[buf],
			.count = n,
			.mode = l->elt.mode,
			.bcast = l->elt.bcast,
			.shift = l->elt.shift,
			.channels = l->elt.bcast == NPU_BCAST_CHANNEL ? c->out->c : 0,
			.mult_a = l->elt.mult_a, .mult_b = l->elt.mult_b,
			.zp_a = (int16_t)c->a->q.zero_point,
			.zp_b = c->b ? (int16_t)c->b->q.zero_point :
				c->bvec ? (int16_t)c->bvec->q.zero_point : l->elt.zp_b,
			.zp_out = (int16_t)(l->elt.lut ? l->elt.pre_act_zp : c->out->q.zero_point),
			.act_min = l->elt.act_min, .act_max = l->elt.act_max,
		};
		const struct npu_act *bact = c->b ? c->b : c->bvec;

		/* Mixed widths (int8 <-> int16 at a precision boundary, or an
		 * int8 constant b) say per operand; all int16 is the I16 mode. */
		el.types = (uint8_t)((c->a->i16 ? NPU_ELT_A16 : 0) |
				     (bact && bact->i16 ? NPU_ELT_B16 : 0) |
				     (c->out->i16 ? NPU_ELT_OUT16 : 0));
		if (el.types == (NPU_ELT_A16 | NPU_ELT_B16 | NPU_ELT_OUT16)) {
			el.types = 0;
			el.hdr.flags |= NPU_INSN_I16;
		}
		EMIT(e, npu_cmdbuf_eltwise(e->cb, &el));
		if (l->elt.lut || l->elt.lut16)
			EMIT(e, npu_cmdbuf_lut(e->cb, i16_flag(c->out), el.output, el.output,
					       c->lut_sram, n));
		return NPU_OK;
	}
}

static npu_status flat_store(struct emitter *e, void *ctx, size_t tile, int buf,
			     uint8_t flags)
{
	struct flat_tiles *c = ctx;
	uint64_t e0, e1;

	flat_tile(c, tile, &e0, &e1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, c->out->offset + e0 * npu_act_es(c->out)),
				       NPU_SPACE_SRAM, c->p.sram_out[buf],
				       (uint32_t)((e1 - e0) * npu_act_es(c->out))));
	return NPU_OK;
}

npu_status gen_flat(struct emitter *e, const struct npu_lop *l,
		    const struct tiling *p)
{
	struct flat_tiles c = {
		.l = l, .p = *p,
		.a = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = flat_consts, .load = flat_load,
		.compute = flat_compute, .store = flat_store,
	};
	const void *lut = l->kind == NPU_LOP_LUT ? (l->lut.table16 ? (const void *)l->lut.table16
							: (const void *)l->lut.table) :
			  l->kind == NPU_LOP_ELTWISE ? (l->elt.lut16 ? (const void *)l->elt.lut16
							 : (const void *)l->elt.lut) : NULL;
	bool lut16 = (l->kind == NPU_LOP_LUT && l->lut.table16) ||
		     (l->kind == NPU_LOP_ELTWISE && l->elt.lut16);
	size_t start = (size_t)align_up(e->blob.size, SRAM_ALIGN), off;

	if (l->kind == NPU_LOP_ELTWISE && l->elt.bcast == NPU_BCAST_NONE)
		c.b = &e->prog->acts[l->in2];
	else if (l->kind == NPU_LOP_ELTWISE && !l->elt.b_const)
		c.bvec = &e->prog->acts[l->in2];
	c.elems = npu_act_elems(c.out);
	c.per_tile = (uint64_t)p->rows * c.out->c;
	c.blob_off = start;
	if (l->kind == NPU_LOP_ELTWISE && l->elt.b_const) {
		if (blob_put(&e->blob, l->elt.b_const, l->elt.b_count, &off))
			goto oom;
		c.b_sram = p->sram_consts + (uint32_t)(off - start);
	}
	if (lut) {
		if (blob_put(&e->blob, lut, lut16 ? 1026 : 256, &off))
			goto oom;
		c.lut_sram = p->sram_consts + (uint32_t)(off - start);
	}
	if (l->kind == NPU_LOP_ROWS) {
		/* the exp table / gamma-beta params, resident for every tile */
		if (blob_put(&e->blob, l->rows.consts, l->rows.consts_size, &off))
			goto oom;
		c.lut_sram = p->sram_consts + (uint32_t)(off - start);
	}
	c.blob_size = e->blob.size > start ? e->blob.size - start : 0;
	if (c.bvec)
		c.b_sram = p->sram_consts + (uint32_t)align_up(c.blob_size, SRAM_ALIGN);
	ops.count = (size_t)((c.elems + c.per_tile - 1) / c.per_tile);
	return run_tiles(e, &ops, &c);
oom:
	return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
}

/* ---- REDUCE ------------------------------------------------------------ */

struct reduce_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct tiling p;
	uint64_t rows;
};

static void reduce_tile(const struct reduce_tiles *c, size_t tile, uint64_t *r0,
			uint64_t *r1)
{
	*r0 = tile * (uint64_t)c->p.rows;
	*r1 = *r0 + c->p.rows < c->rows ? *r0 + c->p.rows : c->rows;
}

static npu_status reduce_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	(void)e, (void)ctx, (void)tile;
	*changed = false;
	return NPU_OK;
}

static npu_status reduce_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct reduce_tiles *c = ctx;
	uint64_t r0, r1;

	reduce_tile(c, tile, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, c->p.sram_in[buf],
				       NPU_SPACE_VA, arena(e, c->in->offset + r0 * c->in->c),
				       (uint32_t)((r1 - r0) * c->in->c)));
	return NPU_OK;
}

static npu_status reduce_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct reduce_tiles *c = ctx;
	const struct npu_lop *l = c->l;
	uint64_t r0, r1;
	struct npu_insn_reduce rd = {
		.hdr.flags = NPU_INSN_SYNC,
		.input = c->p.sram_in[buf], .output = c->p.sram_out[buf],
		.c = c->in->c, .in_stride = c->in->c, .out_stride = 1,
		.mult = l->rows.mult, .shift = l->rows.shift, .mode = l->rows.mode,
		.zp_in = (int16_t)c->in->q.zero_point,
		.zp_out = (int16_t)c->out->q.zero_point,
		.act_min = -128, .act_max = 127,
	};

	reduce_tile(c, tile, &r0, &r1);
	rd.rows = (uint32_t)(r1 - r0);
	EMIT(e, npu_cmdbuf_reduce(e->cb, &rd));
	return NPU_OK;
}

static npu_status reduce_store(struct emitter *e, void *ctx, size_t tile, int buf,
			       uint8_t flags)
{
	struct reduce_tiles *c = ctx;
	uint64_t r0, r1;

	reduce_tile(c, tile, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, c->out->offset + r0), NPU_SPACE_SRAM,
				       c->p.sram_out[buf], (uint32_t)(r1 - r0)));
	return NPU_OK;
}

npu_status gen_reduce(struct emitter *e, const struct npu_lop *l,
		      const struct tiling *p)
{
	struct reduce_tiles c = {
		.l = l, .p = *p,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = reduce_consts, .load = reduce_load,
		.compute = reduce_compute, .store = reduce_store,
	};

	c.rows = npu_act_bytes(c.in) / c.in->c;
	ops.count = (size_t)((c.rows + p->rows - 1) / p->rows);
	return run_tiles(e, &ops, &c);
}

/* ---- COPY (Concat, Split, Slice) ------------------------------------- */

struct copy_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct tiling p;
	uint32_t pieces;	/* per row when rows are split, else 1 */
	size_t blob_off;
	uint64_t src_off, dst_off;	/* of the repetition being emitted */
};

/*
 * A 2-D DMA, as one 1-D copy when both sides are dense: a row costs the
 * DMA engine at least a cycle, so rows of a few bytes are slow.
 */
static npu_status dma_rows(struct emitter *e, uint8_t flags, uint8_t dst_space,
			   uint64_t dst, uint64_t dst_stride, uint8_t src_space,
			   uint64_t src, uint64_t src_stride, uint32_t rows,
			   uint32_t bytes)
{
	if (rows > 1 && dst_stride == bytes && src_stride == bytes &&
	    (uint64_t)rows * bytes <= UINT32_MAX)
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, dst_space, dst, src_space, src,
					       rows * bytes));
	else
		EMIT(e, npu_cmdbuf_dma_copy_2d(e->cb, flags, dst_space, dst, dst_stride,
					       src_space, src, src_stride, rows, bytes));
	return NPU_OK;
}

/* Tile -> rows [r0, r0 + nrows), bytes [b0, b0 + nbytes) of each. */
static void copy_tile(const struct copy_tiles *c, size_t tile, uint32_t *r0,
		      uint32_t *nrows, uint32_t *b0, uint32_t *nbytes)
{
	const struct npu_lop *l = c->l;

	if (c->p.rows) {
		*r0 = (uint32_t)(tile * c->p.rows);
		*nrows = *r0 + c->p.rows < l->copy.rows ? c->p.rows : l->copy.rows - *r0;
		*b0 = 0;
		*nbytes = l->copy.row_bytes;
		return;
	}
	*r0 = (uint32_t)(tile / c->pieces);
	*nrows = 1;
	*b0 = (uint32_t)(tile % c->pieces) * c->p.chunk;
	*nbytes = *b0 + c->p.chunk < l->copy.row_bytes ? c->p.chunk : l->copy.row_bytes - *b0;
}

static npu_status copy_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct copy_tiles *c = ctx;

	*changed = tile == 0;
	if (!*changed)
		return NPU_OK;
	return emit_consts(e, c->blob_off, 256, c->p.sram_consts);
}

static npu_status copy_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct copy_tiles *c = ctx;
	uint32_t r0, nrows, b0, nbytes;

	copy_tile(c, tile, &r0, &nrows, &b0, &nbytes);
	return dma_rows(e, 0, NPU_SPACE_SRAM, c->p.sram_in[buf], nbytes, NPU_SPACE_VA,
			arena(e, c->in->offset + c->src_off +
			      (uint64_t)r0 * c->l->copy.src_stride + b0),
			c->l->copy.src_stride, nrows, nbytes);
}

static npu_status copy_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct copy_tiles *c = ctx;
	uint32_t r0, nrows, b0, nbytes;

	copy_tile(c, tile, &r0, &nrows, &b0, &nbytes);
	EMIT(e, npu_cmdbuf_lut(e->cb, NPU_INSN_SYNC, c->p.sram_in[buf], c->p.sram_out[buf],
			       c->p.sram_consts, nrows * nbytes));
	return NPU_OK;
}

static npu_status copy_store(struct emitter *e, void *ctx, size_t tile, int buf,
			     uint8_t flags)
{
	struct copy_tiles *c = ctx;
	uint32_t r0, nrows, b0, nbytes;

	copy_tile(c, tile, &r0, &nrows, &b0, &nbytes);
	return dma_rows(e, flags, NPU_SPACE_VA,
			arena(e, c->out->offset + c->dst_off +
			      (uint64_t)r0 * c->l->copy.dst_stride + b0),
			c->l->copy.dst_stride, NPU_SPACE_SRAM, c->p.sram_out[buf], nbytes,
			nrows, nbytes);
}

npu_status gen_copy(struct emitter *e, const struct npu_lop *l,
		    const struct tiling *p)
{
	struct copy_tiles c = {
		.l = l, .p = *p,
		.in = &e->prog->acts[l->in], .out = &e->prog->acts[l->out],
	};
	struct tile_ops ops = {
		.consts = copy_consts, .load = copy_load,
		.compute = copy_compute, .store = copy_store,
	};

	uint32_t reps = l->copy.count > 1 ? l->copy.count : 1, k;
	npu_status st = NPU_OK;

	if (!l->copy.lut) {
		/* Same quantization: DRAM to DRAM, no SRAM, no compute. */
		for (k = 0; k < reps && st == NPU_OK; k++)
			st = dma_rows(e, 0, NPU_SPACE_VA,
				      arena(e, c.out->offset + l->copy.dst_off + k * l->copy.dst_step),
				      l->copy.dst_stride, NPU_SPACE_VA,
				      arena(e, c.in->offset + l->copy.src_off + k * l->copy.src_step),
				      l->copy.src_stride, l->copy.rows, l->copy.row_bytes);
		return st;
	}
	if (blob_put(&e->blob, l->copy.lut, 256, &c.blob_off))
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory", l->name);
	if (p->rows) {
		ops.count = (l->copy.rows + p->rows - 1) / p->rows;
		c.pieces = 1;
	} else {
		c.pieces = (l->copy.row_bytes + p->chunk - 1) / p->chunk;
		ops.count = (size_t)l->copy.rows * c.pieces;
	}
	for (k = 0; k < reps && st == NPU_OK; k++) {
		c.src_off = l->copy.src_off + k * l->copy.src_step;
		c.dst_off = l->copy.dst_off + k * l->copy.dst_step;
		st = run_tiles(e, &ops, &c);
	}
	return st;
}
