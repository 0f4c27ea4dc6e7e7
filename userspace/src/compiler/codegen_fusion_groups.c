// SPDX-License-Identifier: MIT
/*
 * codegen_fusion_groups.c - data movement run inside one tile loop: a
 * Concat's copies (with the RESIZEs and gates that make its inputs), and a
 * RESIZE feeding an ELTWISE (with the gate making its other operand);
 * choose_fusion() (codegen_fusion.c) takes them wherever they fit.
 */
#include <string.h>

#include "compiler/codegen_internal.h"

/* ---- Concat and RESIZE -> ELTWISE groups ------------------------------- */

/*
 * A channel Concat (COPY lops i .. i + m - 1, plain, each one input's
 * pixels into its channel block of the same output) as one tile loop:
 * each input's rows come in dense, an identity RESIZE (nearest, step 1,
 * any pixel stride) interleaves them into the output tile at their
 * channel offset, and the tile goes out dense. A strided DMA pays a cycle
 * per pixel row of a few bytes; this pays the bytes. Same bytes as the
 * copies (a RESIZE moves bytes, no arithmetic; an input whose parameters
 * differ from the output's goes through its copy's LUT first, in place).
 * Gates (broadcast ELTWISEs) making an input, or a RESIZE's input, may
 * lead the group (compile.c sink_gates()): their input rows come in and
 * are gated in place.
 * SRAM: [LUTs][gate vectors][in0 (all inputs)][in1][out0][out1], rows of
 * out.w pixels.
 */
#define CAT_MAX 16

struct cat_group {
	const struct npu_act *in[CAT_MAX], *out;
	const int8_t *lut[CAT_MAX];	/* requantizing input k, or NULL */
	/* Input k made by this RESIZE inside the loop from rin[k] (its
	 * input rows come in, the resized ones never exist in DRAM). */
	const struct npu_lop *rz[CAT_MAX];
	const struct npu_act *rin[CAT_MAX];
	/* Input k's rows (rin[k]'s with a RESIZE) made in the loop by this
	 * broadcast ELTWISE (det's RSE gate y * (s + 1)) from gate_a[k] rows,
	 * its vector gate_b[k] (or a constant) resident at gate_sram[k]. */
	const struct npu_lop *gate[CAT_MAX];
	const struct npu_act *gate_a[CAT_MAX], *gate_b[CAT_MAX];
	uint32_t gate_sram[CAT_MAX];
	uint32_t lops;			/* gates + RESIZE lops before the copies + m */
	uint32_t off[CAT_MAX];		/* channel offset of input k */
	size_t blob_off;		/* the LUTs, 256 bytes per input, at SRAM 0, then the gates' vectors */
	uint32_t consts;		/* their SRAM bytes */
	uint32_t m, rows, tiles;	/* inputs; image rows (n * h) per tile */
	uint32_t sram_in[2], sram_out[2];
};

/*
 * Lops i ..: RESIZE lops (compile.c sinks those whose output only a Concat
 * reads next to it) then the Concat's COPY lops.
 */
static bool same_dims(const struct npu_act *a, const struct npu_act *b);

static bool cat_init(const struct npu_segment_program *prog, size_t i, struct cat_group *g)
{
	const struct npu_act *out;
	uint64_t pixels, covered = 0;
	uint32_t q = 0, used = 0, x, ng = 0, gused = 0, k;
	size_t j, first, g0 = i;

	memset(g, 0, sizeof(*g));
	while (i + ng < prog->num_lops && prog->lops[i + ng].kind == NPU_LOP_ELTWISE &&
	       prog->lops[i + ng].elt.bcast != NPU_BCAST_NONE && ng < CAT_MAX)
		ng++;
	i += ng;	/* the gates, then the RESIZEs, then the copies */
	while (i + q < prog->num_lops && prog->lops[i + q].kind == NPU_LOP_RESIZE && q < CAT_MAX)
		q++;
	first = i + q;
	if (first >= prog->num_lops || prog->lops[first].kind != NPU_LOP_COPY)
		return false;
	out = &prog->acts[prog->lops[first].out];
	pixels = (uint64_t)out->n * out->h * out->w;
	g->out = out;
	if (out->i16 || out->im2col.k_h || out->c > 0xffff || out->w > 0xffff || (q && out->n != 1))
		return false;
	for (j = first; j < prog->num_lops && prog->lops[j].kind == NPU_LOP_COPY &&
		    prog->lops[j].out == prog->lops[first].out; j++) {
		const struct npu_lop *l = &prog->lops[j];
		const struct npu_act *in = &prog->acts[l->in];

		for (x = 0; x < q && prog->lops[i + x].out != l->in; x++)
			;
		if (x < q) {
			const struct npu_lop *r = &prog->lops[i + x];
			const struct npu_act *rin = &prog->acts[r->in];

			if (!in->internal || read_elsewhere(prog, l->in, j) || rin->i16 ||
			    rin->im2col.k_h || rin->n != 1 || overlap(rin, out) ||
			    (l->copy.lut && r->resize.mode != NPU_RESIZE_NEAREST))
				return false;
			g->rz[g->m] = r;
			g->rin[g->m] = rin;
			used++;
		}

		if (g->m == CAT_MAX || l->copy.count > 1 || in->i16 ||
		    in->im2col.k_h || l->copy.rows != pixels || l->copy.src_off ||
		    l->copy.row_bytes != in->c || l->copy.src_stride != in->c ||
		    l->copy.dst_stride != out->c || l->copy.dst_off + in->c > out->c ||
		    in->n != out->n || in->h != out->h || in->w != out->w ||
		    (!g->rz[g->m] && overlap(in, out)))
			return false;
		g->in[g->m] = in;
		g->lut[g->m] = l->copy.lut;
		g->off[g->m++] = (uint32_t)l->copy.dst_off;
		covered += in->c;
	}
	g->lops = ng + q + g->m;
	g->consts = 256u * g->m;
	/* each gate makes one input's rows (or its RESIZE's input), which only
	 * that input's RESIZE or copy reads */
	for (x = 0; x < ng; x++) {
		const struct npu_lop *lx = &prog->lops[g0 + x];
		const struct npu_act *xa = &prog->acts[lx->in];
		const struct npu_act *bv = lx->elt.b_const ? NULL : &prog->acts[lx->in2];

		for (k = 0; k < g->m && &prog->acts[lx->out] != (g->rz[k] ? g->rin[k] : g->in[k]); k++)
			;
		if (k == g->m || g->gate[k] || lx->elt.lut || lx->elt.lut16 ||
		    !prog->acts[lx->out].internal || xa->i16 || xa->im2col.k_h ||
		    !same_dims(xa, &prog->acts[lx->out]) || (bv && bv->i16) ||
		    lx->elt.b_count != (lx->elt.bcast == NPU_BCAST_CHANNEL ? xa->c : 1u) ||
		    overlap(xa, out) || (bv && overlap(bv, out)))
			return false;
		for (j = 0; j < prog->num_lops; j++) {
			const struct npu_lop *o = &prog->lops[j];

			if (o != (g->rz[k] ? g->rz[k] : &prog->lops[first + k]) &&
			    (o->in == lx->out || (npu_lop_reads_in2(o) && o->in2 == lx->out)))
				return false;
		}
		g->gate[k] = lx;
		g->gate_a[k] = xa;
		g->gate_b[k] = bv;
		gused++;
	}
	for (k = 0; k < g->m; k++) {	/* the vectors after the LUT slots, as gen_concat() puts them */
		if (!g->gate[k])
			continue;
		g->gate_sram[k] = g->consts;
		g->consts += (uint32_t)align_up(g->gate[k]->elt.b_count, SRAM_ALIGN);
	}
	/* every channel once (the copies' blocks are disjoint then), every
	 * RESIZE and gate absorbed */
	return g->m >= 2 && covered == out->c && used == q && gused == ng;
}

/* SRAM bytes of input k's block for tiles of 'rows' rows. */
static uint64_t cat_block_bytes(const struct cat_group *g, uint32_t k, uint32_t rows)
{
	if (g->rz[k]) {
		struct resize_ctx rc = { .l = g->rz[k], .in = g->rin[k], .out = g->in[k] };

		return align_up(resize_in_bytes(&rc, rows), SRAM_ALIGN);
	}
	return align_up((uint64_t)rows * g->out->w * g->in[k]->c, SRAM_ALIGN);
}

static bool cat_layout(struct cat_group *g, uint32_t rows, uint32_t sram)
{
	uint64_t b = align_up((uint64_t)rows * g->out->w * g->out->c, SRAM_ALIGN);
	uint64_t base = align_up(g->consts, SRAM_ALIGN), in_b = 0;
	uint32_t k;

	/* the inputs' blocks inside in[buf], each 64-byte aligned */
	for (k = 0; k < g->m; k++)
		in_b += cat_block_bytes(g, k, rows);
	if (base + 2 * in_b + 2 * b > sram)
		return false;
	g->sram_in[0] = (uint32_t)base;
	g->sram_in[1] = (uint32_t)(base + in_b);
	g->sram_out[0] = (uint32_t)(base + 2 * in_b);
	g->sram_out[1] = (uint32_t)(base + 2 * in_b + b);
	g->rows = rows;
	g->tiles = (uint32_t)div_up64((uint64_t)g->out->n * g->out->h, rows);
	return true;
}

static void cat_tile(const struct cat_group *g, size_t t, uint32_t *r0, uint32_t *r1);

/* The group's tile loop (cat_load / _compute / _store) replayed. */
static uint64_t cat_cost(const struct cat_group *g)
{
	struct cost_engines t = { 0, 0, 0 };
	uint64_t prev_store = 0, i, orow = (uint64_t)g->out->w * g->out->c;
	uint32_t r0, r1, a, b, k;

	cost_insn(&t, false, true, 0);
	cost_insn(&t, true, false, cost_dma(1, g->consts));
	for (k = 0; k < g->m; k++)
		if (g->gate_b[k])
			cost_insn(&t, true, false, cost_dma(1, g->gate[k]->elt.b_count));
	for (i = 0; i <= g->tiles; i++) {
		if (i > 0) {
			bool sync = true;

			cat_tile(g, i - 1, &r0, &r1);
			for (k = 0; k < g->m; k++) {
				uint64_t n = (uint64_t)(r1 - r0) * g->out->w * g->in[k]->c, lut_n = n;
				uint64_t taps = 1;

				if (g->rz[k]) {
					resize_rows(g->rz[k], g->rin[k], r0, r1, &a, &b);
					lut_n = (uint64_t)(b - a + 1u) * g->rin[k]->w * g->rin[k]->c;
					taps = g->rz[k]->resize.mode == NPU_RESIZE_NEAREST ? 1 : 4;
				}
				if (g->gate[k]) {	/* on the rows loaded (lut_n of them) */
					cost_insn(&t, false, sync, div_up64(lut_n, NPU_VECTOR_LANES));
					sync = false;
				}
				if (g->lut[k]) {
					cost_insn(&t, false, sync, div_up64(lut_n, NPU_VECTOR_LANES));
					sync = false;
				}
				cost_insn(&t, false, sync, div_up64(n * taps, NPU_VECTOR_LANES));
				sync = false;
			}
			if (prev_store)
				cost_insn(&t, true, false, prev_store);
			prev_store = cost_dma(1, (uint64_t)(r1 - r0) * orow);
		}
		if (i == g->tiles)
			break;
		cat_tile(g, i, &r0, &r1);
		for (k = 0; k < g->m; k++) {
			uint64_t rows = r1 - r0, row = (uint64_t)g->out->w * g->in[k]->c;

			if (g->rz[k]) {
				resize_rows(g->rz[k], g->rin[k], r0, r1, &a, &b);
				rows = b - a + 1u;
				row = (uint64_t)g->rin[k]->w * g->rin[k]->c;
			}
			cost_insn(&t, true, false, cost_dma(1, rows * row));
		}
	}
	cost_insn(&t, true, true, prev_store);
	return cost_end(&t);
}

/* The tile rows cat_cost() likes best (from the most that fit down). */
static void cat_search(struct cat_group *g, uint32_t lo, uint32_t sram)
{
	uint32_t h = g->out->n * g->out->h, r, best = lo, last = 0, tries = 0;
	uint64_t k, c, best_cost = cat_cost(g);

	for (k = div_up64(h, lo) + 1; k <= h && tries < 40; k += k / 8 ? k / 8 : 1) {
		r = (uint32_t)div_up64(h, k);
		if (r >= lo || r == last || !cat_layout(g, r, sram))
			continue;
		last = r;
		tries++;
		c = cat_cost(g);
		if (c < best_cost) {
			best_cost = c;
			best = r;
		}
	}
	cat_layout(g, best, sram);
}

/* The group at lop i with the tile rows cat_cost() likes best; false: none. */
static bool cat_tiling(const struct npu_segment_program *prog, size_t i, uint32_t sram,
		       struct cat_group *g)
{
	uint32_t cap = prog->opts.fuse_max_rows, lo = 0, hi;

	if (!cat_init(prog, i, g))
		return false;
	hi = g->out->n * g->out->h;
	if (hi > 0xffff)
		hi = 0xffff;
	if (cap && cap < hi)
		hi = cap;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;

		if (cat_layout(g, mid, sram))
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!lo || !cat_layout(g, lo, sram))
		return false;
	/*
	 * Without a RESIZE to absorb, only where the copies' strided rows
	 * waste DMA cycles: their DMA (a cycle per started 64 bytes of each
	 * pixel row) against the loop's dense bytes in and out plus each
	 * tile's instructions (rec's Concat of 120-byte rows is faster as
	 * copies). opts.fuse FORCE: always (tests).
	 */
	if (g->lops == g->m && prog->opts.fuse != NPU_CODEGEN_FORCE) {
		uint64_t pixels = (uint64_t)g->out->n * g->out->h * g->out->w, copies = 0;
		uint64_t loop = div_up64(2 * pixels * g->out->c, 64) +
				(uint64_t)g->tiles * (2 * g->m + 1) *
					(NPU_CYCLES_INSN_OVERHEAD + NPU_CYCLES_DMA_SETUP);
		uint32_t k;

		for (k = 0; k < g->m; k++)
			copies += NPU_CYCLES_INSN_OVERHEAD + NPU_CYCLES_DMA_SETUP +
				  pixels * div_up64(g->in[k]->c, 64);
		if (copies <= loop)
			return false;
	}
	cat_search(g, lo, sram);
	return true;
}

static void cat_tile(const struct cat_group *g, size_t t, uint32_t *r0, uint32_t *r1)
{
	uint32_t h = g->out->n * g->out->h;

	*r0 = (uint32_t)t * g->rows;
	*r1 = *r0 + g->rows < h ? *r0 + g->rows : h;
}

static uint32_t cat_in_block(const struct cat_group *g, uint32_t k)
{
	uint32_t off = 0, j;

	for (j = 0; j < k; j++)
		off += (uint32_t)cat_block_bytes(g, j, g->rows);
	return off;
}

static npu_status cat_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct cat_group *g = ctx;

	uint32_t k;

	*changed = tile == 0;
	if (!*changed)
		return NPU_OK;
	if (emit_consts(e, g->blob_off, g->consts, 0))
		return e->err->status;
	/* The previous op ended with a SYNC store: its SRAM is free. */
	for (k = 0; k < g->m; k++)
		if (g->gate_b[k])
			EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, g->gate_sram[k],
						       NPU_SPACE_VA, arena(e, g->gate_b[k]->offset),
						       g->gate[k]->elt.b_count));
	return NPU_OK;
}

static npu_status cat_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct cat_group *g = ctx;
	uint32_t r0, r1, k;

	cat_tile(g, tile, &r0, &r1);
	for (k = 0; k < g->m; k++) {
		uint64_t row = (uint64_t)g->out->w * g->in[k]->c;
		uint32_t a, b;

		/* with a gate its input (the same shape) comes in instead */
		if (g->rz[k]) {
			row = (uint64_t)g->rin[k]->w * g->rin[k]->c;
			resize_rows(g->rz[k], g->rin[k], r0, r1, &a, &b);
			EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM,
						       g->sram_in[buf] + cat_in_block(g, k),
						       NPU_SPACE_VA,
						       arena(e, (g->gate[k] ? g->gate_a[k] : g->rin[k])->offset +
							     a * row),
						       (uint32_t)((b - a + 1u) * row)));
			continue;
		}
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM,
					       g->sram_in[buf] + cat_in_block(g, k), NPU_SPACE_VA,
					       arena(e, (g->gate[k] ? g->gate_a[k] : g->in[k])->offset +
						     r0 * row),
					       (uint32_t)((r1 - r0) * row)));
	}
	return NPU_OK;
}

static npu_status cat_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct cat_group *g = ctx;
	uint32_t r0, r1, k;
	uint8_t sync = NPU_INSN_SYNC;	/* on the tile's first instruction */

	cat_tile(g, tile, &r0, &r1);
	for (k = 0; k < g->m; k++) {
		const struct npu_act *in = g->in[k];
		uint32_t blk = g->sram_in[buf] + cat_in_block(g, k);
		struct npu_insn_resize r = {
			.hdr.flags = 0,
			.input = blk,
			.output = g->sram_out[buf] + g->off[k],
			.mode = NPU_RESIZE_NEAREST, .c = (uint16_t)in->c,
			.in_h = (uint16_t)(r1 - r0), .in_w = (uint16_t)in->w,
			.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)in->w,
			.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
			.out_row_stride = g->out->w * g->out->c, .out_pixel_stride = g->out->c,
			.step_h = 1, .step_w = 1, .den_h = 1, .den_w = 1,
		};

		uint32_t lut_n = (r1 - r0) * in->w * in->c;

		if (g->rz[k]) {	/* as resize_compute(), into the channel block */
			const struct npu_lop *lr = g->rz[k];
			const struct npu_act *rin = g->rin[k];
			uint32_t a, b;

			resize_rows(lr, rin, r0, r1, &a, &b);
			r.mode = lr->resize.mode;
			r.in_h = (uint16_t)(b - a + 1u);
			r.in_w = (uint16_t)rin->w;
			r.in_row_stride = rin->w * rin->c;
			r.step_h = lr->resize.step_h;
			r.step_w = lr->resize.step_w;
			r.offset_h = (int32_t)((int64_t)lr->resize.offset_h +
					       (int64_t)r0 * lr->resize.step_h -
					       (int64_t)a * lr->resize.den_h);
			r.offset_w = lr->resize.offset_w;
			r.den_h = lr->resize.den_h;
			r.den_w = lr->resize.den_w;
			/* nearest (cat_init()): the LUT commutes with it */
			lut_n = (b - a + 1u) * rin->w * rin->c;
		}
		if (g->gate[k]) {	/* the input's rows from the gate's, in place (flat_compute()) */
			const struct npu_lop *lx = g->gate[k];
			const struct npu_act *xo = g->rz[k] ? g->rin[k] : in;
			struct npu_insn_eltwise el = {
				.hdr.flags = sync,
				.a = blk, .b = g->gate_sram[k], .output = blk, .count = lut_n,
				.mode = lx->elt.mode, .bcast = lx->elt.bcast, .shift = lx->elt.shift,
				.channels = lx->elt.bcast == NPU_BCAST_CHANNEL ? xo->c : 0,
				.mult_a = lx->elt.mult_a, .mult_b = lx->elt.mult_b,
				.zp_a = (int16_t)g->gate_a[k]->q.zero_point,
				.zp_b = g->gate_b[k] ? (int16_t)g->gate_b[k]->q.zero_point : lx->elt.zp_b,
				.zp_out = (int16_t)xo->q.zero_point,
				.act_min = lx->elt.act_min, .act_max = lx->elt.act_max,
			};

			e->lop = lx;
			EMIT(e, npu_cmdbuf_eltwise(e->cb, &el));
			sync = 0;
		}
		if (g->lut[k]) {
			EMIT(e, npu_cmdbuf_lut(e->cb, sync, blk, blk, 256u * k, lut_n));
			sync = 0;
		}
		r.hdr.flags = sync;
		sync = 0;
		EMIT(e, npu_cmdbuf_resize(e->cb, &r));
	}
	return NPU_OK;
}

static npu_status cat_store(struct emitter *e, void *ctx, size_t tile, int buf, uint8_t flags)
{
	struct cat_group *g = ctx;
	uint64_t row = (uint64_t)g->out->w * g->out->c;
	uint32_t r0, r1;

	cat_tile(g, tile, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, g->out->offset + r0 * row), NPU_SPACE_SRAM,
				       g->sram_out[buf], (uint32_t)((r1 - r0) * row)));
	return NPU_OK;
}

/* The Concat group starting at lop i (choose_fusion() chose it); *m its lops. */
npu_status gen_concat(struct emitter *e, size_t i, uint32_t sram, size_t *m)
{
	struct cat_group g;
	struct tile_ops ops = {
		.consts = cat_consts, .load = cat_load,
		.compute = cat_compute, .store = cat_store,
	};
	uint32_t k;

	if (!cat_tiling(e->prog, i, sram, &g))
		return npu_error_set(e->err, NPU_ERR_UNSUPPORTED, "codegen: %s: fusion choice changed",
				     e->prog->lops[i].name);
	e->lop = &e->prog->lops[i];
	*m = g.lops;
	for (k = 0; k < g.m; k++) {
		static const int8_t none[256];
		size_t off;

		/* a LUT slot per input (unused for a plain one) */
		if (blob_put(&e->blob, g.lut[k] ? g.lut[k] : none, 256, &off))
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory",
					     e->prog->lops[i].name);
		if (!k)
			g.blob_off = off;
	}
	for (k = 0; k < g.m; k++) {	/* a gate's constant vector, or room for its input */
		size_t off;

		if (g.gate[k] && blob_put(&e->blob, g.gate[k]->elt.b_const, g.gate[k]->elt.b_count, &off))
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory",
					     e->prog->lops[i].name);
	}
	/* blob_put() pads to 64 bytes: the block is g.consts bytes, as cat_init() laid out */
	if (blob_put(&e->blob, NULL, 0, &(size_t){ 0 }))
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory",
				     e->prog->lops[i].name);
	ops.count = g.tiles;
	return run_tiles(e, &ops, &g);
}

/*
 * RESIZE -> ELTWISE as one tile loop (the FPN's a + up(b)): per tile of
 * output rows the resized rows of b are made in SRAM from the few input
 * rows they sample and fed straight to the ELTWISE, so the upsampled
 * tensor (an internal value only that ELTWISE reads) never goes to DRAM.
 * SRAM: [consts][rin0][rin1][x0][x1][mid][out0][out1]; rin holds the
 * resize's input window, x the other operand's rows, mid the resized
 * rows. Whole rows of one image per tile; no int16. Bit-identical to
 * the two ops apart: RESIZE and ELTWISE see the same bytes (the tile's
 * RESIZE samples the same input rows as the whole one, resize_compute()).
 *
 * The other operand x may itself be a broadcast ELTWISE of the lop just
 * before (det's RSE gate y * (s + 1) feeding the FPN's y' + up(b); compile.c
 * sink_gates() puts it there): then x's input y comes in instead, the gate
 * runs in place on the tile with its vector resident, and x never goes to
 * DRAM either. The gate is vector work the loop's DMA used to wait on.
 */
struct rz_elt {
	const struct npu_lop *lx, *lr, *le;	/* lx: the gate making x, or NULL */
	const struct npu_act *rin, *mid, *x, *out;
	const struct npu_act *xa, *bvec;	/* the gate's a, its broadcast b (or NULL) */
	bool mid_is_a;			/* the resized tensor is the ELTWISE's a */
	uint32_t lops;			/* 2, or 3 with the gate */
	uint32_t rows, row_tiles;	/* output rows per tile, tiles per image */
	uint32_t sram_rin[2], sram_x[2], sram_mid, sram_out[2];
	size_t blob_off, blob_size;
	uint32_t lut_sram, gate_lut_sram, gate_b_sram, consts;
};

static bool same_dims(const struct npu_act *a, const struct npu_act *b)
{
	return a->n == b->n && a->h == b->h && a->w == b->w && a->c == b->c;
}

static bool rz_pair_init(const struct npu_segment_program *prog, size_t i, struct rz_elt *f)
{
	const struct npu_lop *lr = &prog->lops[i], *le = &prog->lops[i + 1];
	size_t j;

	memset(f, 0, sizeof(*f));
	if (lr->kind != NPU_LOP_RESIZE || le->kind != NPU_LOP_ELTWISE ||
	    le->elt.bcast != NPU_BCAST_NONE || le->elt.b_const || le->elt.lut16 ||
	    (le->in == lr->out) == (le->in2 == lr->out) || !prog->acts[lr->out].internal)
		return false;
	for (j = 0; j < prog->num_lops; j++) {
		const struct npu_lop *o = &prog->lops[j];

		if (j != i + 1 && (o->in == lr->out ||
				   (npu_lop_reads_in2(o) && o->in2 == lr->out)))
			return false;
	}
	f->lr = lr;
	f->le = le;
	f->rin = &prog->acts[lr->in];
	f->mid = &prog->acts[lr->out];
	f->mid_is_a = le->in == lr->out;
	f->x = &prog->acts[f->mid_is_a ? le->in2 : le->in];
	f->out = &prog->acts[le->out];
	if (f->rin->i16 || f->mid->i16 || f->x->i16 || f->out->i16 || f->rin->im2col.k_h ||
	    f->x->im2col.k_h || f->rin->n != f->out->n || !same_dims(f->mid, f->out) ||
	    !same_dims(f->x, f->out))
		return false;
	/* The resize reads its input until the last tile: the output must not
	 * overwrite it (compile.c keeps them apart). */
	return !(f->out->offset < f->rin->offset + npu_act_bytes(f->rin) &&
		 f->rin->offset < f->out->offset + npu_act_bytes(f->out));
}

/* Lop i as the gate making the pair's x (lops i + 1, i + 2); f holds the pair. */
static bool rz_gate_init(const struct npu_segment_program *prog, size_t i, struct rz_elt *f)
{
	const struct npu_lop *lx = &prog->lops[i];
	const struct npu_act *xa = &prog->acts[lx->in];
	const struct npu_act *bvec = lx->elt.b_const ? NULL : &prog->acts[lx->in2];
	size_t j;

	if (lx->kind != NPU_LOP_ELTWISE || lx->elt.bcast == NPU_BCAST_NONE || lx->elt.lut16 ||
	    &prog->acts[lx->out] != f->x || !f->x->internal || xa->i16 || xa->im2col.k_h ||
	    !same_dims(xa, f->x) || (bvec && bvec->i16) ||
	    lx->elt.b_count != (lx->elt.bcast == NPU_BCAST_CHANNEL ? f->x->c : 1u))
		return false;
	for (j = 0; j < prog->num_lops; j++) {
		const struct npu_lop *o = &prog->lops[j];

		if (j != i + 2 && (o->in == lx->out ||
				   (npu_lop_reads_in2(o) && o->in2 == lx->out)))
			return false;
	}
	/* y and the vector are read until the last tile (compile.c keeps
	 * them apart from the output) */
	if (overlap(f->out, xa) || (bvec && overlap(f->out, bvec)))
		return false;
	f->lx = lx;
	f->xa = xa;
	f->bvec = bvec;
	return true;
}

static bool rz_elt_init(const struct npu_segment_program *prog, size_t i, struct rz_elt *f)
{
	uint32_t off = 0;

	if (i + 2 < prog->num_lops && prog->lops[i].kind == NPU_LOP_ELTWISE &&
	    rz_pair_init(prog, i + 1, f) && rz_gate_init(prog, i, f)) {
		f->lops = 3;
	} else if (rz_pair_init(prog, i, f)) {
		f->lops = 2;
	} else {
		return false;
	}
	/* SRAM constants, as gen_resize_elt() puts them in the blob */
	if (f->le->elt.lut) {
		f->lut_sram = off;
		off += 256;
	}
	if (f->lx && f->lx->elt.lut) {
		f->gate_lut_sram = off;
		off += 256;
	}
	if (f->lx) {
		f->gate_b_sram = off;
		off += (uint32_t)align_up(f->lx->elt.b_count, SRAM_ALIGN);
	}
	f->consts = off;
	return true;
}

/* Lay out SRAM for 'rows' output rows per tile; false: it does not fit. */
static bool rz_elt_layout(struct rz_elt *f, uint32_t rows, uint32_t sram)
{
	struct resize_ctx rc = { .l = f->lr, .in = f->rin, .out = f->mid };
	uint64_t rin_b = align_up(resize_in_bytes(&rc, rows), SRAM_ALIGN);
	uint64_t row_b = align_up((uint64_t)rows * f->out->w * f->out->c, SRAM_ALIGN);
	uint64_t off = align_up(f->consts, SRAM_ALIGN);

	if (off + 2 * rin_b + 5 * row_b > sram)
		return false;
	f->sram_rin[0] = (uint32_t)off;
	f->sram_rin[1] = (uint32_t)(off + rin_b);
	f->sram_x[0] = (uint32_t)(off + 2 * rin_b);
	f->sram_x[1] = (uint32_t)(off + 2 * rin_b + row_b);
	f->sram_mid = (uint32_t)(off + 2 * rin_b + 2 * row_b);
	f->sram_out[0] = (uint32_t)(off + 2 * rin_b + 3 * row_b);
	f->sram_out[1] = (uint32_t)(off + 2 * rin_b + 4 * row_b);
	f->rows = rows;
	f->row_tiles = (f->out->h + rows - 1) / rows;
	return true;
}

static uint64_t rz_elt_cost(const struct rz_elt *f);

/*
 * The tile rows the cost model likes best (rz_elt_cost(), tile counts from
 * the fewest up, as fused_search()); false: not one row fits.
 */
static bool rz_elt_tiling(const struct npu_segment_program *prog, size_t i, uint32_t sram,
			  struct rz_elt *f)
{
	uint32_t cap = prog->opts.fuse_max_rows, lo = 0, hi, r, best, last = 0, tries = 0;
	uint64_t k, c, best_cost;

	if (!rz_elt_init(prog, i, f))
		return false;
	hi = cap && cap < f->out->h ? cap : f->out->h;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;

		if (rz_elt_layout(f, mid, sram))
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!lo || !rz_elt_layout(f, lo, sram))
		return false;
	best = lo;
	best_cost = rz_elt_cost(f);
	for (k = div_up64(f->out->h, lo) + 1; k <= f->out->h && tries < 40; k += k / 8 ? k / 8 : 1) {
		r = (uint32_t)div_up64(f->out->h, k);
		if (r >= lo || r == last || !rz_elt_layout(f, r, sram))
			continue;
		last = r;
		tries++;
		c = rz_elt_cost(f);
		if (c < best_cost) {
			best_cost = c;
			best = r;
		}
	}
	return rz_elt_layout(f, best, sram);
}

static void rz_elt_tile(const struct rz_elt *f, uint32_t t, uint32_t *img, uint32_t *r0,
			uint32_t *r1)
{
	*img = t / f->row_tiles;
	*r0 = (t % f->row_tiles) * f->rows;
	*r1 = *r0 + f->rows < f->out->h ? *r0 + f->rows : f->out->h;
}

/* The group's tile loop (rz_elt_load / _compute / _store) replayed. */
static uint64_t rz_elt_cost(const struct rz_elt *f)
{
	struct cost_engines t = { 0, 0, 0 };
	uint64_t in_row = (uint64_t)f->rin->w * f->rin->c, row = (uint64_t)f->out->w * f->out->c;
	uint64_t tiles = (uint64_t)f->out->n * f->row_tiles, prev_store = 0, i;
	uint64_t taps = f->lr->resize.mode == NPU_RESIZE_NEAREST ? 1 : 4;
	uint32_t img, r0, r1, a, b;

	if (f->consts) {	/* what rz_elt_consts() loads */
		cost_insn(&t, false, true, 0);
		cost_insn(&t, true, false, cost_dma(1, f->consts));
	}
	for (i = 0; i <= tiles; i++) {
		uint64_t n;

		if (i == 0) {
			rz_elt_tile(f, 0, &img, &r0, &r1);
			resize_rows(f->lr, f->rin, r0, r1, &a, &b);
			cost_insn(&t, true, false, cost_dma(1, (b - a + 1u) * in_row));
			cost_insn(&t, true, false, cost_dma(1, (r1 - r0) * row));
			continue;
		}
		rz_elt_tile(f, (uint32_t)(i - 1), &img, &r0, &r1);
		n = (r1 - r0) * row;
		if (f->lx) {
			cost_insn(&t, false, true, div_up64(n, NPU_VECTOR_LANES));
			if (f->lx->elt.lut)
				cost_insn(&t, false, false, div_up64(n, NPU_VECTOR_LANES));
		}
		cost_insn(&t, false, !f->lx, div_up64(n * taps, NPU_VECTOR_LANES));
		cost_insn(&t, false, false, div_up64(n, NPU_VECTOR_LANES));
		if (f->le->elt.lut)
			cost_insn(&t, false, false, div_up64(n, NPU_VECTOR_LANES));
		if (prev_store)
			cost_insn(&t, true, false, prev_store);
		if (i < tiles) {
			rz_elt_tile(f, (uint32_t)i, &img, &r0, &r1);
			resize_rows(f->lr, f->rin, r0, r1, &a, &b);
			cost_insn(&t, true, false, cost_dma(1, (b - a + 1u) * in_row));
			cost_insn(&t, true, false, cost_dma(1, (r1 - r0) * row));
		}
		prev_store = cost_dma(1, n);
	}
	cost_insn(&t, true, true, prev_store);
	return cost_end(&t);
}

static npu_status rz_elt_consts(struct emitter *e, void *ctx, size_t tile, bool *changed)
{
	struct rz_elt *f = ctx;

	*changed = tile == 0;
	if (*changed && f->blob_size && emit_consts(e, f->blob_off, f->blob_size, 0))
		return e->err->status;
	/* The previous op ended with a SYNC store: its SRAM is free. */
	if (*changed && f->bvec)
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, f->gate_b_sram, NPU_SPACE_VA,
					       arena(e, f->bvec->offset), f->lx->elt.b_count));
	return NPU_OK;
}

static npu_status rz_elt_load(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct rz_elt *f = ctx;
	uint64_t in_row = (uint64_t)f->rin->w * f->rin->c, row = (uint64_t)f->out->w * f->out->c;
	uint32_t img, r0, r1, a, b;

	rz_elt_tile(f, (uint32_t)tile, &img, &r0, &r1);
	resize_rows(f->lr, f->rin, r0, r1, &a, &b);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, f->sram_rin[buf], NPU_SPACE_VA,
				       arena(e, f->rin->offset +
					     ((uint64_t)img * f->rin->h + a) * in_row),
				       (uint32_t)((b - a + 1u) * in_row)));
	/* x, or with the gate its input y (the same shape) */
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, f->sram_x[buf], NPU_SPACE_VA,
				       arena(e, (f->lx ? f->xa : f->x)->offset +
					     ((uint64_t)img * f->out->h + r0) * row),
				       (uint32_t)((r1 - r0) * row)));
	return NPU_OK;
}

static npu_status rz_elt_compute(struct emitter *e, void *ctx, size_t tile, int buf)
{
	struct rz_elt *f = ctx;
	const struct npu_lop *lr = f->lr, *le = f->le;
	uint32_t img, r0, r1, a, b, n;
	struct npu_insn_resize r;
	struct npu_insn_eltwise el;

	rz_elt_tile(f, (uint32_t)tile, &img, &r0, &r1);
	resize_rows(lr, f->rin, r0, r1, &a, &b);
	n = (r1 - r0) * f->out->w * f->out->c;
	if (f->lx) {	/* x = gate(y) in place, as flat_compute() */
		const struct npu_lop *lx = f->lx;

		el = (struct npu_insn_eltwise){
			.hdr.flags = NPU_INSN_SYNC,
			.a = f->sram_x[buf], .b = f->gate_b_sram, .output = f->sram_x[buf],
			.count = n, .mode = lx->elt.mode, .bcast = lx->elt.bcast,
			.shift = lx->elt.shift,
			.channels = lx->elt.bcast == NPU_BCAST_CHANNEL ? f->x->c : 0,
			.mult_a = lx->elt.mult_a, .mult_b = lx->elt.mult_b,
			.zp_a = (int16_t)f->xa->q.zero_point,
			.zp_b = f->bvec ? (int16_t)f->bvec->q.zero_point : lx->elt.zp_b,
			.zp_out = (int16_t)(lx->elt.lut ? lx->elt.pre_act_zp : f->x->q.zero_point),
			.act_min = lx->elt.act_min, .act_max = lx->elt.act_max,
		};
		e->lop = lx;
		EMIT(e, npu_cmdbuf_eltwise(e->cb, &el));
		if (lx->elt.lut)
			EMIT(e, npu_cmdbuf_lut(e->cb, 0, el.output, el.output, f->gate_lut_sram, n));
	}
	/* As resize_compute(): the numerator shifted to the tile's rows. */
	r = (struct npu_insn_resize){
		.hdr.flags = f->lx ? 0 : NPU_INSN_SYNC,
		.input = f->sram_rin[buf], .output = f->sram_mid,
		.mode = lr->resize.mode, .c = (uint16_t)f->rin->c,
		.in_h = (uint16_t)(b - a + 1u), .in_w = (uint16_t)f->rin->w,
		.out_h = (uint16_t)(r1 - r0), .out_w = (uint16_t)f->mid->w,
		.in_row_stride = f->rin->w * f->rin->c, .in_pixel_stride = f->rin->c,
		.out_row_stride = f->mid->w * f->mid->c, .out_pixel_stride = f->mid->c,
		.step_h = lr->resize.step_h, .step_w = lr->resize.step_w,
		.offset_h = (int32_t)((int64_t)lr->resize.offset_h +
				      (int64_t)r0 * lr->resize.step_h -
				      (int64_t)a * lr->resize.den_h),
		.offset_w = lr->resize.offset_w,
		.den_h = lr->resize.den_h, .den_w = lr->resize.den_w,
	};
	e->lop = lr;
	EMIT(e, npu_cmdbuf_resize(e->cb, &r));
	/* The compute engine runs in order: the ELTWISE sees mid complete. */
	el = (struct npu_insn_eltwise){
		.a = f->mid_is_a ? f->sram_mid : f->sram_x[buf],
		.b = f->mid_is_a ? f->sram_x[buf] : f->sram_mid,
		.output = f->sram_out[buf], .count = n,
		.mode = le->elt.mode, .bcast = NPU_BCAST_NONE, .shift = le->elt.shift,
		.mult_a = le->elt.mult_a, .mult_b = le->elt.mult_b,
		.zp_a = (int16_t)(f->mid_is_a ? f->mid : f->x)->q.zero_point,
		.zp_b = (int16_t)(f->mid_is_a ? f->x : f->mid)->q.zero_point,
		.zp_out = (int16_t)(le->elt.lut ? le->elt.pre_act_zp : f->out->q.zero_point),
		.act_min = le->elt.act_min, .act_max = le->elt.act_max,
	};
	e->lop = le;
	EMIT(e, npu_cmdbuf_eltwise(e->cb, &el));
	if (le->elt.lut)
		EMIT(e, npu_cmdbuf_lut(e->cb, 0, el.output, el.output, f->lut_sram, n));
	return NPU_OK;
}

static npu_status rz_elt_store(struct emitter *e, void *ctx, size_t tile, int buf,
			       uint8_t flags)
{
	struct rz_elt *f = ctx;
	uint64_t row = (uint64_t)f->out->w * f->out->c;
	uint32_t img, r0, r1;

	rz_elt_tile(f, (uint32_t)tile, &img, &r0, &r1);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
				       arena(e, f->out->offset +
					     ((uint64_t)img * f->out->h + r0) * row),
				       NPU_SPACE_SRAM, f->sram_out[buf], (uint32_t)((r1 - r0) * row)));
	return NPU_OK;
}

/* The RESIZE -> ELTWISE pair (or gate, RESIZE, ELTWISE) starting at lop i
 * (choose_fusion() chose it); *m: its lops. */
npu_status gen_resize_elt(struct emitter *e, size_t i, uint32_t sram, size_t *m)
{
	struct rz_elt f;
	struct tile_ops ops = {
		.consts = rz_elt_consts, .load = rz_elt_load,
		.compute = rz_elt_compute, .store = rz_elt_store,
	};
	size_t off;

	if (!rz_elt_tiling(e->prog, i, sram, &f))
		return npu_error_set(e->err, NPU_ERR_UNSUPPORTED, "codegen: %s: fusion choice changed",
				     e->prog->lops[i].name);
	e->lop = f.lr;
	*m = f.lops;
	/* rz_elt_init()'s layout: [LUT][gate LUT][gate b], each 64-aligned */
	f.blob_off = (size_t)align_up(e->blob.size, SRAM_ALIGN);
	if ((f.le->elt.lut && blob_put(&e->blob, f.le->elt.lut, 256, &off)) ||
	    (f.lx && f.lx->elt.lut && blob_put(&e->blob, f.lx->elt.lut, 256, &off)) ||
	    (f.lx && f.lx->elt.b_const &&
	     blob_put(&e->blob, f.lx->elt.b_const, f.lx->elt.b_count, &off)))
		return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: %s: out of memory",
				     f.le->name);
	f.blob_size = e->blob.size > f.blob_off ? e->blob.size - f.blob_off : 0;
	ops.count = (size_t)f.out->n * f.row_tiles;
	return run_tiles(e, &ops, &f);
}

/*
 * The lops of the group at lop i, 0 when none plans there: choose_fusion()
 * marks them, npu_codegen_segment() emits them with gen_concat() /
 * gen_resize_elt().
 */
uint32_t concat_group_lops(const struct npu_segment_program *prog, size_t i, uint32_t sram)
{
	struct cat_group cg;

	return cat_tiling(prog, i, sram, &cg) ? cg.lops : 0;
}

uint32_t resize_elt_lops(const struct npu_segment_program *prog, size_t i, uint32_t sram)
{
	struct rz_elt rz;

	return rz_elt_tiling(prog, i, sram, &rz) ? rz.lops : 0;
}

/*
 * The predicted cycles of the group at lop i (0: it does not plan), which
 * npu_codegen_segment() puts on the group's first lop.
 */
uint64_t concat_group_cycles(const struct npu_segment_program *prog, size_t i, uint32_t sram)
{
	struct cat_group cg;

	return cat_tiling(prog, i, sram, &cg) ? cat_cost(&cg) : 0;
}

uint64_t resize_elt_cycles(const struct npu_segment_program *prog, size_t i, uint32_t sram)
{
	struct rz_elt rz;

	return rz_elt_tiling(prog, i, sram, &rz) ? rz_elt_cost(&rz) : 0;
}
