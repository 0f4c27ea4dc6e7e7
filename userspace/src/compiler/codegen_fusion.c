// SPDX-License-Identifier: MIT
/*
 * codegen_fusion.c - cross-layer fusion: which lops run as one tile loop
 * through SRAM (choose_fusion()), and conv chains run depth-first, planned
 * and emitted. The Concat and RESIZE -> ELTWISE groups it also takes are
 * in codegen_fusion_groups.c.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_internal.h"

/* ---- Cross-layer fusion: conv chains through SRAM ------------------------ */

/*
 * A chain of n (2..FUSE_MAX) convolutions, each reading the one before,
 * runs as one tile loop (depth-first tiling): per tile of the last conv's
 * output rows, the DMA loads the input rows the first conv needs for the
 * rows of its output the second one's window reads, and so on back
 * through the chain (halo rows at a tile edge are recomputed by both
 * neighbouring tiles); each conv computes into an SRAM buffer the next
 * one reads, and the last one's rows are stored. An intermediate nothing
 * else reads (npu_act.internal) never goes to DRAM. One that is read
 * outside the chain too (a Squeeze-and-Excitation block's input, read by
 * its GlobalAveragePool in the chain and by the gate after it) is "teed":
 * its buffer is doubled and each tile's new rows are stored while the
 * next tile computes, so its reader later finds it whole, and the chain
 * saves that reader's load of it instead.
 * SRAM: [consts 0 .. n-1][in0][in1][mid 0 (x2 if teed)] .. [out0][out1].
 * Whole layers only (one slice each), batch 1, no folded or phase-split
 * conv (zero insertion is fine), no int16; except that a ConvTranspose as
 * pixel-major MATMULs may end a chain (pmm_tail_ok()). choose_fusion()
 * picks the chains whose predicted cycles beat the ops apart; opts.fuse OFF
 * turns it off.
 */
#define FUSE_MAX NPU_FUSE_MAX

struct fused {
	const struct npu_segment_program *prog;
	uint32_t n;				/* convs in the chain */
	const struct npu_lop *l[FUSE_MAX];
	/* act[0] the chain's input, act[k + 1] conv k's output */
	const struct npu_act *act[FUSE_MAX + 1];
	bool tee[FUSE_MAX];			/* act[k + 1], k < n - 1, also stored */
	struct slice sl[FUSE_MAX];
	uint64_t consts_bytes[FUSE_MAX];
	uint32_t consts_at[FUSE_MAX];
	uint32_t rows, tiles;			/* last conv's output rows per tile */
	uint32_t sram_in[2], sram_out[2];
	uint32_t sram_mid[FUSE_MAX][2];		/* act[k + 1]; [1] only when teed */
	/* The last lop is a ConvTranspose as pixel-major MATMULs (gen_pmm()):
	 * tiles count its input rows, pm its constants and buffer. */
	bool pmm;
	struct pmm pm;
};

/* Rows the tiles split: the last lop's output, or a pmm tail's input. */
static uint32_t fused_h(const struct fused *f)
{
	return f->pmm ? f->act[f->n - 1]->h : f->act[f->n]->h;
}

/* Output rows per row the tiles count (a pmm tail: its stride). */
static uint32_t fused_out_per_row(const struct fused *f)
{
	return f->pmm ? f->l[f->n - 1]->conv.phase_h : 1;
}

/* Per tile: w[k], the input window of conv k; w[n - 1] is the output's. */
struct fused_tile {
	uint32_t r0, r1;			/* last conv's output rows */
	struct window w[FUSE_MAX];
};

static bool fuse_conv_ok(const struct npu_segment_program *prog, const struct npu_lop *l)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];

	return l->kind == NPU_LOP_CONV && !npu_lop_reads_in2(l) && !l->conv.phase_h && !l->conv.fold_w &&
	       in->n == 1 && out->n == 1 &&
	       !in->i16 && !out->i16 && !l->conv.q.bias64 && conv_wpo(l, in, out) &&
	       !out->im2col.k_h;	/* an im2col input is plain rows of k_h * k_w * c */
}

/* Rows [a, b) of a conv's output -> the window of its input rows. */
static void fused_window(const struct npu_segment_program *prog, const struct npu_lop *l,
			 uint32_t a, uint32_t b, struct window *w)
{
	struct conv_tiles c = { .l = l, .in = &prog->acts[l->in], .out = &prog->acts[l->out] };

	conv_window(&c, a, b, w);
}

/* Buffer of act[k + 1] for tile t. */
static uint32_t fused_mid(const struct fused *f, uint32_t k, uint32_t t)
{
	return f->sram_mid[k][f->tee[k] ? t % 2 : 0];
}

/* Lay out SRAM for 'rows' output rows per tile; false: it does not fit. */
static bool fused_layout(struct fused *f, uint32_t rows, uint32_t sram)
{
	uint64_t need = rows, mid_b[FUSE_MAX], in_b, out_b, off = 0, pm_mid = 0;
	uint32_t k, last = f->n - 1;

	if (f->pmm) {	/* its input rows are the tile's rows */
		mid_b[last - 1] = align_up(need * f->act[last]->w * f->act[last]->c, SRAM_ALIGN);
		pmm_consts_layout(f->prog, f->l[last], need * f->act[last]->w, &f->pm);
		f->consts_bytes[last] = f->pm.consts;
		pm_mid = align_up(f->pm.phases * need * f->act[last]->w, SRAM_ALIGN);
		last--;
	}
	/* rows of act[k] one tile needs at most, from the output back */
	for (k = last; k > 0; k--) {
		need = window_rows(need, f->l[k]->conv.stride_h, f->l[k]->conv.dil_h,
				   f->l[k]->conv.k_h);
		if (need > f->act[k]->h)
			need = f->act[k]->h;
		mid_b[k - 1] = align_up(need * f->act[k]->w * f->act[k]->c, SRAM_ALIGN);
	}
	need = window_rows(need, f->l[0]->conv.stride_h, f->l[0]->conv.dil_h, f->l[0]->conv.k_h);
	if (need > f->act[0]->h)
		need = f->act[0]->h;
	in_b = align_up(need * f->act[0]->w * f->act[0]->c, SRAM_ALIGN);
	out_b = align_up((uint64_t)rows * fused_out_per_row(f) * f->act[f->n]->w * f->act[f->n]->c,
			 SRAM_ALIGN);
	for (k = 0; k < f->n; k++) {
		f->consts_at[k] = (uint32_t)off;
		off += align_up(f->consts_bytes[k], SRAM_ALIGN);
	}
	for (k = 0; k < 2; k++, off += in_b)
		f->sram_in[k] = (uint32_t)off;
	for (k = 0; k + 1 < f->n; k++) {
		f->sram_mid[k][0] = f->sram_mid[k][1] = (uint32_t)off;
		off += mid_b[k];
		if (f->tee[k]) {
			f->sram_mid[k][1] = (uint32_t)off;
			off += mid_b[k];
		}
	}
	for (k = 0; k < 2; k++, off += out_b)
		f->sram_out[k] = (uint32_t)off;
	f->pm.sram_mid = (uint32_t)off;
	off += pm_mid;
	if (off > sram)
		return false;
	f->rows = rows;
	f->tiles = (fused_h(f) + rows - 1) / rows;
	return true;
}

/* Whether reading act a's rows through conv l's windows leaves no row out. */
static bool fused_covers(const struct npu_segment_program *prog, const struct npu_lop *l,
			 const struct npu_act *a)
{
	struct window w;

	fused_window(prog, l, 0, prog->acts[l->out].h, &w);
	return w.ih0 == 0 && w.in_h == a->h &&
	       l->conv.stride_h <= (uint32_t)l->conv.dil_h * (l->conv.k_h - 1) + 1;
}

/*
 * A ConvTranspose as pixel-major MATMULs (pmm_ok()) ends a chain: an input
 * row makes phase_h output rows, so its tiles need no halo.
 */
static bool pmm_tail_ok(const struct npu_segment_program *prog, const struct npu_lop *l)
{
	return l->kind == NPU_LOP_CONV && l->conv.phase_h && pmm_ok(prog, l) &&
	       prog->acts[l->in].n == 1;
}

/* The chain of n convs from lop i, or false when it cannot fuse. */
static bool fused_init(const struct npu_segment_program *prog, size_t i, uint32_t n,
		       struct fused *f)
{
	uint32_t k;

	memset(f, 0, sizeof(*f));
	if (n < 2 || n > FUSE_MAX || i + n > prog->num_lops)
		return false;
	f->n = n;
	f->prog = prog;
	for (k = 0; k < n; k++) {
		f->l[k] = &prog->lops[i + k];
		if (k && f->l[k]->in != f->l[k - 1]->out)
			return false;
		if (!fuse_conv_ok(prog, f->l[k]) &&
		    !(k == n - 1 && pmm_tail_ok(prog, f->l[k]) && (f->pmm = true)))
			return false;
		f->act[k] = &prog->acts[f->l[k]->in];
	}
	f->act[n] = &prog->acts[f->l[n - 1]->out];
	for (k = 0; k + 1 < n; k++) {
		uint32_t a = f->l[k]->out;

		f->tee[k] = !prog->acts[a].internal || read_elsewhere(prog, a, i + k + 1);
		/* a teed act is stored whole: the next conv's windows must cover it
		 * (a pmm tail reads every row once) */
		if (f->tee[k] && !(f->pmm && k + 2 == n) &&
		    !fused_covers(prog, f->l[k + 1], f->act[k + 1]))
			return false;
	}
	/* The first conv reads its input until the last tile: nothing the
	 * chain writes to DRAM may share its memory (compile.c plans so). */
	for (k = 1; k <= n; k++)
		if ((k == n || f->tee[k - 1]) && overlap(f->act[0], f->act[k]))
			return false;
	for (k = 0; k < n - f->pmm; k++) {
		make_slices(f->act[k + 1]->c, f->act[k]->c, f->l[k]->conv.groups, f->act[k + 1]->c,
			    &f->sl[k], 1);
		f->consts_bytes[k] = slice_const_bytes(f->act[k + 1]->c,
						       conv_wpo(f->l[k], f->act[k], f->act[k + 1]),
						       bias_es(&f->l[k]->conv.q),
						       f->l[k]->conv.q.lut != NULL);
	}
	return true;
}

/* Tile t's output rows and, back through the chain, each conv's window. */
static void fused_tile(const struct npu_segment_program *prog, const struct fused *f,
		       uint32_t t, struct fused_tile *ft)
{
	uint32_t k, a, b;

	ft->r0 = t * f->rows;
	ft->r1 = ft->r0 + f->rows < fused_h(f) ? ft->r0 + f->rows : fused_h(f);
	a = ft->r0;
	b = ft->r1;
	k = f->n;
	if (f->pmm) {	/* one input row per output row phase: no halo */
		k--;
		ft->w[k] = (struct window){ .ih0 = a, .in_h = b - a };
	}
	while (k-- > 0) {
		fused_window(prog, f->l[k], a, b, &ft->w[k]);
		a = ft->w[k].ih0;
		b = a + ft->w[k].in_h;
	}
}

/* Rows of act[k + 1] conv k computes in a tile: those conv k + 1 reads. */
static void fused_rows(const struct fused *f, const struct fused_tile *ft, uint32_t k,
		       uint32_t *a, uint32_t *b)
{
	if (k + 1 == f->n) {
		*a = ft->r0;
		*b = ft->r1;
	} else {
		*a = ft->w[k + 1].ih0;
		*b = *a + ft->w[k + 1].in_h;
	}
}

/* The rows of teed act[k + 1] tile t stores: those no earlier tile did. */
static void fused_tee_rows(const struct npu_segment_program *prog, const struct fused *f,
			   uint32_t k, uint32_t t, uint32_t *a, uint32_t *b)
{
	struct fused_tile ft;
	uint32_t m0, m1;

	fused_tile(prog, f, t, &ft);
	fused_rows(f, &ft, k, a, b);
	if (t) {
		fused_tile(prog, f, t - 1, &ft);
		fused_rows(f, &ft, k, &m0, &m1);
		if (*a < m1)
			*a = m1 < *b ? m1 : *b;
	}
}

static uint64_t fused_cost(const struct npu_segment_program *prog, const struct fused *f)
{
	struct cost_engines t = { 0, 0, 0 };
	uint64_t in_row = (uint64_t)f->act[0]->w * f->act[0]->c, prev_store = 0;
	uint32_t i, k;

	for (k = 0; k < f->n; k++) {
		cost_insn(&t, false, true, 0);
		cost_insn(&t, true, false, cost_dma(1, f->consts_bytes[k]));
	}
	for (i = 0; i <= f->tiles; i++) {
		struct fused_tile ft;
		uint64_t load = 0;

		if (i < f->tiles) {
			fused_tile(prog, f, i, &ft);
			if (ft.w[0].in_h)
				load = cost_dma(1, ft.w[0].in_h * in_row);
		}
		if (i == 0) {
			if (load)
				cost_insn(&t, true, false, load);
			continue;
		}
		fused_tile(prog, f, i - 1, &ft);
		for (k = 0; k < f->n; k++) {
			const struct npu_act *o = f->act[k + 1];
			uint32_t a, b, p;

			fused_rows(f, &ft, k, &a, &b);
			if (f->pmm && k + 1 == f->n) {	/* pmm_emit() */
				uint64_t px = (uint64_t)(b - a) * f->act[k]->w;

				for (p = 0; p < f->pm.phases; p++)
					cost_insn(&t, false, false,
						  matmul_cycles(&prog->opts, 1, f->act[k]->c, px, false));
				if (lut_insn(&prog->opts, &f->l[k]->conv.q))
					cost_insn(&t, false, false, div_up64(f->pm.phases * px,
									     NPU_VECTOR_LANES));
				for (p = 0; p < f->pm.phases; p++)
					cost_insn(&t, false, false, div_up64(px, NPU_VECTOR_LANES));
				continue;
			}
			cost_insn(&t, false, k == 0,
				  npu_conv_insn_cycles(&prog->opts, (uint64_t)(b - a) * o->w, lop_taps(f->l[k]),
						       f->sl[k].groups, f->sl[k].in_c, o->c, false));
			if (lut_insn(&prog->opts, &f->l[k]->conv.q))
				cost_insn(&t, false, false, div_up64((uint64_t)(b - a) * o->w * o->c,
								     NPU_VECTOR_LANES));
		}
		if (prev_store)
			cost_insn(&t, true, false, prev_store);
		for (k = 0; k + 1 < f->n; k++) {
			uint32_t a, b;

			if (!f->tee[k] || i < 2)
				continue;
			fused_tee_rows(prog, f, k, i - 2, &a, &b);
			if (b > a)
				cost_insn(&t, true, false, cost_dma(1, (uint64_t)(b - a) *
								   f->act[k + 1]->w *
								   f->act[k + 1]->c));
		}
		if (i < f->tiles && load)
			cost_insn(&t, true, false, load);
		prev_store = cost_dma(1, (uint64_t)(ft.r1 - ft.r0) * fused_out_per_row(f) *
				      f->act[f->n]->w * f->act[f->n]->c);
	}
	cost_insn(&t, true, true, prev_store);
	for (k = 0; k + 1 < f->n; k++) {
		uint32_t a, b;

		if (!f->tee[k])
			continue;
		fused_tee_rows(prog, f, k, f->tiles - 1, &a, &b);
		if (b > a)
			cost_insn(&t, true, false, cost_dma(1, (uint64_t)(b - a) *
							   f->act[k + 1]->w * f->act[k + 1]->c));
	}
	return cost_end(&t);
}

/*
 * The fusion choosers' switches (prog->opts): fuse OFF, no fused group;
 * FORCE, every group that can fuse does (conv chains as long as they go);
 * fuse_max_rows caps a group's tile rows (tests force halos and many
 * tiles). The best tile height for a fused chain, or false when none fits.
 */
static bool fused_search(const struct npu_segment_program *prog, struct fused *f,
			 uint32_t sram, uint64_t *cost)
{
	uint32_t cap = prog->opts.fuse_max_rows, h = fused_h(f);
	uint32_t r, best = 0, last = 0, tries = 0;
	uint64_t k, c, best_cost = UINT64_MAX;

	for (k = cap ? div_up64(h, cap) : 1; k <= h && tries < 48; k += k / 8 ? k / 8 : 1) {
		r = (uint32_t)div_up64(h, k);
		if (r == last || (cap && r > cap) || !fused_layout(f, r, sram))
			continue;
		last = r;
		tries++;
		c = fused_cost(prog, f);
		if (c < best_cost) {
			best_cost = c;
			best = r;
		}
	}
	if (!best)
		return false;
	fused_layout(f, best, sram);
	*cost = best_cost;
	return true;
}

/* Whether act a is read by a lop other than lop 'self'. */
bool read_elsewhere(const struct npu_segment_program *prog, uint32_t a, size_t self)
{
	size_t j;

	for (j = 0; j < prog->num_lops; j++) {
		const struct npu_lop *o = &prog->lops[j];

		if (j != self && (o->in == a || (npu_lop_reads_in2(o) && o->in2 == a)))
			return true;
	}
	return false;
}

/*
 * Which lops run fused. fuse[i] = 1: lop i heads a conv chain, each lop
 * after it in the chain marked 5 (gen_fused()); 2: lop i is a RESIZE run
 * inside the ELTWISE i + 1, or a gate run with the RESIZE i + 1 inside the
 * ELTWISE i + 2, all three marked 2 (always, when it fits: it only removes
 * DMA); 3: lop i heads a Concat's COPY lops (and the gates and RESIZEs
 * before them) run as one loop (gen_concat(), always), 4 marking the
 * others. The Concat and RESIZE groups are taken first, in order; then
 * the conv chains that minimize the segment's predicted cycles, each
 * conv alone at its own best tiles or in a chain at the chain's
 * (dynamic programming over the lops, from the end).
 */
void choose_fusion(const struct npu_segment_program *prog, uint32_t sram,
		   uint8_t *fuse)
{
	bool force = prog->opts.fuse == NPU_CODEGEN_FORCE;
	size_t i, L = prog->num_lops;
	uint64_t *best = NULL;
	uint8_t *len = NULL;

	if (prog->opts.fuse == NPU_CODEGEN_OFF)
		return;
	for (i = 0; i + 1 < L; i++) {
		uint32_t m = concat_group_lops(prog, i, sram);

		if (m) {
			memset(fuse + i, 4, m);
			fuse[i] = 3;
			i += m - 1;
			continue;
		}
		m = resize_elt_lops(prog, i, sram);
		if (m) {
			memset(fuse + i, 2, m);
			i += m - 1;
		}
	}
	best = calloc(L + 1, sizeof(*best));
	len = calloc(L + 1, 1);
	if (!best || !len)
		goto out;	/* no chains: each lop alone */
	for (i = L; i-- > 0;) {
		const struct npu_lop *l = &prog->lops[i];
		uint64_t alone = 0;
		struct tiling p;
		char why[8];
		uint32_t n;

		len[i] = 1;
		if (!fuse[i] && (fuse_conv_ok(prog, l) || pmm_tail_ok(prog, l)) &&
		    tile_lop(prog, l, sram, &p, why, sizeof(why))) {
			tile_search(prog, l, &p);
			alone = tiling_cost(prog, l, &p);
		}
		best[i] = alone + best[i + 1];
		for (n = 2; n <= FUSE_MAX && i + n <= L && !fuse[i + n - 1]; n++) {
			struct fused f;
			uint64_t fc;

			if (fuse[i] || !fused_init(prog, i, n, &f))
				break;
			if (!fused_search(prog, &f, sram, &fc))
				continue;
			if (fc + best[i + n] < best[i] || force) {
				best[i] = fc + best[i + n];
				len[i] = (uint8_t)n;
			}
		}
	}
	for (i = 0; i < L; i++)
		if (len[i] > 1) {
			memset(fuse + i + 1, 5, len[i] - 1u);
			fuse[i] = 1;
			i += len[i] - 1u;
		}
out:
	free(best);
	free(len);
}

static npu_status fused_conv(struct emitter *e, const struct npu_lop *l,
			     const struct npu_act *in, const struct npu_act *out,
			     const struct slice *sl, uint32_t consts, uint32_t input,
			     uint32_t output, const struct window *w, uint32_t out_h, uint8_t flags)
{
	const struct npu_lop_quant *q = &l->conv.q;
	struct npu_insn_conv2d cv = {
		.hdr.flags = flags,
		.input = input + sl->in_offset,
		.weight = consts + sl->w_off,
		.bias = q->bias ? consts + sl->bias_off : 0,
		.quant = consts + sl->quant_off,
		.output = output,
		.flags = (q->bias ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q) |
			 sparse_flags(sl),
		.in_h = (uint16_t)w->in_h, .in_w = (uint16_t)in->w,
		.in_c = (uint16_t)sl->in_c, .out_c = (uint16_t)out->c,
		.out_h = (uint16_t)out_h, .out_w = (uint16_t)out->w,
		.k_h = l->conv.k_h, .k_w = l->conv.k_w,
		.stride_h = l->conv.stride_h, .stride_w = l->conv.stride_w,
		.dil_h = l->conv.dil_h, .dil_w = l->conv.dil_w,
		.pad_top = (uint8_t)w->pad_top, .pad_bottom = (uint8_t)w->pad_bottom,
		.pad_left = l->conv.pad_left, .pad_right = l->conv.pad_right,
		.ins_h = l->conv.ins_h, .ins_w = l->conv.ins_w,
		.groups = (uint16_t)sl->groups,
		.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
		.out_row_stride = out->w * out->c, .out_pixel_stride = out->c,
		.zp_in = (int16_t)in->q.zero_point, .zp_w = 0,
		.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
		.act_min = q->act_min, .act_max = q->act_max,
		.lut = out_lut_at(&e->prog->opts, q, consts + sl->lut_off),
	};

	sparse_note_conv(e, l, sl, &cv);
	EMIT(e, cmd_conv2d(&e->prog->opts, e->cb, &cv));
	if (lut_insn(&e->prog->opts, q))
		EMIT(e, npu_cmdbuf_lut(e->cb, 0, output, output, consts + sl->lut_off,
				       out_h * out->w * out->c));
	return NPU_OK;
}

static npu_status fused_load(struct emitter *e, const struct fused *f, uint32_t t)
{
	struct fused_tile ft;
	uint64_t row = (uint64_t)f->act[0]->w * f->act[0]->c;

	fused_tile(e->prog, f, t, &ft);
	if (!ft.w[0].in_h)
		return NPU_OK;
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, f->sram_in[t % 2], NPU_SPACE_VA,
				       arena(e, f->act[0]->offset + ft.w[0].ih0 * row),
				       (uint32_t)(ft.w[0].in_h * row)));
	return NPU_OK;
}

static npu_status fused_store(struct emitter *e, const struct fused *f, uint32_t t,
			      uint8_t flags)
{
	const struct npu_act *out = f->act[f->n];
	uint64_t row = (uint64_t)out->w * out->c * fused_out_per_row(f);
	uint32_t r0 = t * f->rows;
	uint32_t r1 = r0 + f->rows < fused_h(f) ? r0 + f->rows : fused_h(f);

	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA, arena(e, out->offset + r0 * row),
				       NPU_SPACE_SRAM, f->sram_out[t % 2],
				       (uint32_t)((r1 - r0) * row)));
	return NPU_OK;
}

/* Tile t's new rows of every teed intermediate, from its buffer. */
static npu_status fused_store_tees(struct emitter *e, const struct fused *f, uint32_t t,
				   uint8_t flags)
{
	uint32_t k;

	for (k = 0; k + 1 < f->n; k++) {
		const struct npu_act *m = f->act[k + 1];
		uint64_t row = (uint64_t)m->w * m->c;
		struct fused_tile ft;
		uint32_t a, b, m0, m1;

		if (!f->tee[k])
			continue;
		fused_tile(e->prog, f, t, &ft);
		fused_rows(f, &ft, k, &m0, &m1);
		fused_tee_rows(e->prog, f, k, t, &a, &b);
		if (b <= a)
			continue;
		EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, flags, NPU_SPACE_VA,
					       arena(e, m->offset + a * row), NPU_SPACE_SRAM,
					       fused_mid(f, k, t) + (uint32_t)((a - m0) * row),
					       (uint32_t)((b - a) * row)));
		flags = 0;
	}
	return NPU_OK;
}

/*
 * The predicted cycles of the chain choose_fusion() chose at lop i (0: it
 * does not plan), which npu_codegen_segment() puts on the chain's first lop.
 */
uint64_t fused_chain_cycles(const struct npu_segment_program *prog, size_t i, uint32_t n,
			    uint32_t sram)
{
	struct fused f;
	uint64_t c = 0;

	return fused_init(prog, i, n, &f) && fused_search(prog, &f, sram, &c) ? c : 0;
}

/* The fused chain of n convs starting at lop i (choose_fusion() chose it). */
npu_status gen_fused(struct emitter *e, size_t i, uint32_t n, uint32_t sram)
{
	const struct npu_segment_program *prog = e->prog;
	struct fused f;
	uint64_t cost;
	uint32_t t, k;
	size_t pm_blob_off = 0;
	npu_status st = NPU_OK;

	if (!fused_init(prog, i, n, &f) || !fused_search(prog, &f, sram, &cost))
		return npu_error_set(e->err, NPU_ERR_UNSUPPORTED, "codegen: %s: fusion choice changed",
				     prog->lops[i].name);
	for (k = 0; k < n - f.pmm; k++)
		sparse_slices(e, f.l[k], &f.sl[k], 1);
	for (k = 0; k < n - f.pmm; k++)
		if (put_slice_consts(&e->blob, &f.sl[k], f.l[k]->conv.weight,
				     conv_wpo(f.l[k], f.act[k], f.act[k + 1]), &f.l[k]->conv.q))
			return npu_error_set(e->err, NPU_ERR_NO_MEMORY,
					     "codegen: %s: out of memory", f.l[0]->name);
	if (f.pmm && pmm_blob(e, f.l[n - 1], &f.pm, &pm_blob_off))
		return e->err->status;
	e->lop = f.l[0];
	for (k = 0; k < n && !st; k++)
		st = f.pmm && k == n - 1 ?
		     emit_consts(e, pm_blob_off, f.pm.consts, f.consts_at[k]) :
		     emit_slice_consts(e, f.l[k], &f.sl[k], f.consts_at[k]);
	if (!st)
		st = fused_load(e, &f, 0);
	for (t = 0; t < f.tiles && !st; t++) {
		struct fused_tile ft;

		fused_tile(prog, &f, t, &ft);
		for (k = 0; k < n && !st; k++) {
			uint32_t a, b;

			fused_rows(&f, &ft, k, &a, &b);
			e->lop = f.l[k];
			if (f.pmm && k == n - 1) {
				st = pmm_emit(e, f.l[k], &f.pm, f.consts_at[k], fused_mid(&f, k - 1, t),
					      f.sram_out[t % 2], b - a, 0);
				continue;
			}
			st = fused_conv(e, f.l[k], f.act[k], f.act[k + 1], &f.sl[k], f.consts_at[k],
					k ? fused_mid(&f, k - 1, t) : f.sram_in[t % 2],
					k + 1 < n ? fused_mid(&f, k, t) : f.sram_out[t % 2],
					&ft.w[k], b - a, k ? 0 : NPU_INSN_SYNC);
		}
		e->lop = f.l[0];
		if (!st && t > 0)
			st = fused_store(e, &f, t - 1, 0);
		if (!st && t > 0)
			st = fused_store_tees(e, &f, t - 1, 0);
		if (!st && t + 1 < f.tiles)
			st = fused_load(e, &f, t + 1);
	}
	if (!st)
		st = fused_store(e, &f, f.tiles - 1, NPU_INSN_SYNC);
	if (!st)
		st = fused_store_tees(e, &f, f.tiles - 1, 0);
	return st;
}
