// SPDX-License-Identifier: MIT
/*
 * codegen_cost.c - the cost model: a lop's cycles under a tiling, predicted
 * before code exists, and the tile height search that uses it.
 */
#include <stdlib.h>

#include "compiler/codegen_internal.h"

/* ---- Cost model -------------------------------------------------------- */

/*
 * Predicted cycles of one lop under a tiling, before any code exists: the
 * tile loop of run_tiles() replayed on the two engines of the cycle model
 * (npu_hw.h): each instruction costs NPU_CYCLES_INSN_OVERHEAD plus its
 * formula, a SYNC one starts when both engines are free, nothing starts
 * before the last SYNC point. Exact in structure for CONV / POOL / ELTWISE
 * / LUT / SOFTMAX / LAYERNORM (the instructions run_tiles emits), a
 * roofline guess (max of compute and DMA) for the others.
 * Documentation/compiler.md ("Cost model") compares it with the cycle model.
 * The engines (struct cost_engines, cost_insn()) are in codegen_internal.h:
 * the fused groups' costs and the prefetch's replay run on them too.
 */

static uint64_t cost_conv(const struct npu_segment_program *prog,
			  const struct npu_lop *l, const struct tiling *p)
{
	struct conv_tiles c = {
		.l = l, .p = *p,
		.in = &prog->acts[l->in], .out = &prog->acts[l->out],
		.pool = l->kind == NPU_LOP_POOL,
	};
	struct cost_engines t = { 0, 0, 0 };
	uint32_t lanes = c.in->i16 ? NPU_VECTOR_LANES / 2 : NPU_VECTOR_LANES;
	uint64_t row = (uint64_t)c.in->w * c.in->c * npu_act_es(c.in);
	uint64_t wpo = 0, prev_store = 0, tiles, i;
	size_t s = 0;

	c.row_tiles = (c.out->h + p->rows - 1) / p->rows;
	if (!c.pool) {
		wpo = conv_wpo(l, c.in, c.out);
		c.slices = calloc(c.out->c, sizeof(*c.slices));
		if (!c.slices)
			return 0;
		c.num_slices = make_slices(c.out->c, c.in->c, l->conv.groups, p->chunk,
					   c.slices, c.out->c);
	} else {
		c.num_slices = 1;
	}
	tiles = (uint64_t)c.num_slices * c.in->n * c.row_tiles;
	for (i = 0; i <= tiles; i++) {
		uint32_t img, r0, r1, oc = c.out->c;
		uint64_t compute, pixels, load = 0, store;
		struct window w;

		if (i < tiles) {
			conv_tile(&c, i, &s, &img, &r0, &r1);
			conv_window(&c, r0, r1, &w);
			if (w.in_h)
				load = cost_dma(1, w.in_h * row);
		}
		if (i == 0 && !c.pool) {	/* consts, then the first load */
			cost_insn(&t, false, true, 0);
			cost_insn(&t, true, false, cost_dma(1, slice_const_bytes(
				c.slices[0].oc1 - c.slices[0].oc0, wpo, bias_es(&l->conv.q),
				l->conv.q.lut != NULL)));
		}
		if (i == 0) {
			if (load)
				cost_insn(&t, true, false, load);
			continue;
		}
		/* tile i - 1 computes, tile i - 2 is stored, tile i loads */
		conv_tile(&c, i - 1, &s, &img, &r0, &r1);
		conv_window(&c, r0, r1, &w);
		if (!c.pool) {
			const struct slice *sl = &c.slices[s];

			oc = sl->oc1 - sl->oc0;
			if (i - 1 > 0 && s != c.cur_slice) {
				cost_insn(&t, false, true, 0);
				cost_insn(&t, true, false, cost_dma(1, slice_const_bytes(
					oc, wpo, bias_es(&l->conv.q), l->conv.q.lut != NULL)));
			}
			c.cur_slice = s;
		}
		pixels = (uint64_t)(r1 - r0) * c.out->w;
		if (c.pool) {
			compute = div_up64(pixels * oc * l->pool.k_h * l->pool.k_w, lanes);
			cost_insn(&t, false, true, compute);
		} else if (l->conv.fold_w) {
			uint32_t R = l->conv.fold_w / l->conv.stride_w, r;

			for (r = 0; r < R; r++) {
				struct npu_fold_phase ph;

				npu_conv_fold_phase(c.in->w, c.out->w, c.in->c, c.out->c,
						    l->conv.k_h, l->conv.k_w, l->conv.stride_w,
						    l->conv.pad_left, l->conv.fold_w, r, &ph);
				compute = npu_conv_insn_cycles(&prog->opts, (uint64_t)(r1 - r0) * (c.out->w / R),
							       conv_taps(l->conv.k_h, l->conv.dil_h, 0) *
							       ph.k_w, c.slices[s].groups,
							       l->conv.fold_w * c.slices[s].in_c, oc,
							       c.in->i16);
				cost_insn(&t, false, true, compute);
			}
		} else {
			compute = npu_conv_insn_cycles(&prog->opts, (uint64_t)(r1 - r0) * c.out->w, lop_taps(l),
						       c.slices[s].groups, c.slices[s].in_c, oc,
						       c.in->i16);
			cost_insn(&t, false, true, compute);
		}
		if (!c.pool && lut_insn(&prog->opts, &l->conv.q))
			cost_insn(&t, false, false, div_up64(pixels * oc, lanes));
		store = oc == c.out->c ? cost_dma(1, pixels * oc * npu_act_es(c.out)) :
			cost_dma(pixels, (uint64_t)oc * npu_act_es(c.out));
		if (prev_store)
			cost_insn(&t, true, false, prev_store);
		if (i < tiles && load)
			cost_insn(&t, true, false, load);
		prev_store = store;
	}
	cost_insn(&t, true, true, prev_store);
	free(c.slices);
	return cost_end(&t);
}

static uint64_t cost_flat(const struct npu_segment_program *prog,
			  const struct npu_lop *l, const struct tiling *p)
{
	const struct npu_act *out = &prog->acts[l->out];
	uint32_t lanes = out->i16 ? NPU_VECTOR_LANES / 2 : NPU_VECTOR_LANES;
	uint64_t es = npu_act_es(out), elems = npu_act_elems(out);
	uint64_t per = (uint64_t)p->rows * out->c, tiles = div_up64(elems, per), i;
	bool two = l->kind == NPU_LOP_ELTWISE && l->elt.bcast == NPU_BCAST_NONE;
	bool lut = (l->kind == NPU_LOP_ELTWISE && l->elt.lut);
	struct cost_engines t = { 0, 0, 0 };
	uint64_t prev_store = 0;

	if (p->consts_bytes) {
		cost_insn(&t, false, true, 0);
		cost_insn(&t, true, false, cost_dma(1, p->consts_bytes));
	}
	for (i = 0; i <= tiles; i++) {
		uint64_t n = i < tiles ? (i + 1 < tiles ? per : elems - i * per) : 0, m;

		if (i > 0) {
			m = i < tiles ? per : elems - (i - 1) * per;
			if (m > per)
				m = per;
			if (l->kind == NPU_LOP_ROWS && l->rows.opcode == NPU_OP_SOFTMAX)
				cost_insn(&t, false, true, m / out->c *
					  (3 * div_up64(out->c, lanes) + NPU_CYCLES_VEC_ROW));
			else if (l->kind == NPU_LOP_ROWS)
				cost_insn(&t, false, true, m / out->c *
					  (2 * div_up64(out->c, lanes) + NPU_CYCLES_VEC_ROW));
			else
				cost_insn(&t, false, true, div_up64(m, lanes));
			if (lut)
				cost_insn(&t, false, false, div_up64(m, lanes));
			if (prev_store)
				cost_insn(&t, true, false, prev_store);
			prev_store = cost_dma(1, m * es);
		}
		if (n) {
			cost_insn(&t, true, false, cost_dma(1, n * es));
			if (two)
				cost_insn(&t, true, false, cost_dma(1, n * es));
		}
	}
	cost_insn(&t, true, true, prev_store);
	return cost_end(&t);
}

/* MATMUL with constant weights: gen_matmul()'s tile loop, slices outermost. */
static uint64_t cost_matmul(const struct npu_segment_program *prog,
			    const struct npu_lop *l, const struct tiling *p)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	uint32_t lanes = out->i16 ? NPU_VECTOR_LANES / 2 : NPU_VECTOR_LANES;
	uint64_t m = (uint64_t)in->n * in->h * in->w, es_in = npu_act_es(in);
	uint64_t es_out = npu_act_es(out), rt = div_up64(m, p->rows), tiles, i;
	uint64_t prev_store = 0;
	bool lut = lut_insn(&prog->opts, &l->matmul.q);
	struct cost_engines t = { 0, 0, 0 };
	size_t ns = div_up64(out->c, p->chunk), prev_s = 0;

	tiles = ns * rt;
	for (i = 0; i <= tiles; i++) {
		if (i > 0) {	/* tile i - 1 computes, i - 2 is stored */
			uint64_t s = (i - 1) / rt, r0 = (i - 1) % rt * p->rows;
			uint64_t r1 = r0 + p->rows < m ? r0 + p->rows : m;
			uint64_t n = s + 1 < ns ? p->chunk : out->c - s * p->chunk;

			if (i - 1 > 0 && s != prev_s) {
				cost_insn(&t, false, true, 0);
				cost_insn(&t, true, false, cost_dma(1, slice_consts(n, in->c,
										   &l->matmul.q)));
			}
			prev_s = s;
			cost_insn(&t, false, true, matmul_cycles(&prog->opts, r1 - r0, in->c, n, in->i16));
			if (lut)
				cost_insn(&t, false, false, div_up64((r1 - r0) * n, lanes));
			if (prev_store)
				cost_insn(&t, true, false, prev_store);
			prev_store = n == out->c ? cost_dma(1, (r1 - r0) * n * es_out) :
				     cost_dma(r1 - r0, n * es_out);
		} else {
			uint64_t n = ns > 1 ? p->chunk : out->c;

			cost_insn(&t, false, true, 0);
			cost_insn(&t, true, false, cost_dma(1, slice_consts(n, in->c, &l->matmul.q)));
		}
		if (i < tiles) {
			uint64_t r0 = i % rt * p->rows, r1 = r0 + p->rows < m ? r0 + p->rows : m;

			cost_insn(&t, true, false, cost_dma(1, (r1 - r0) * in->c * es_in));
		}
	}
	cost_insn(&t, true, true, prev_store);
	return cost_end(&t);
}

/* The rest: compute and DMA overlap perfectly, plus one tile of each. */
static uint64_t cost_roofline(const struct npu_segment_program *prog,
			      const struct npu_lop *l)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	uint64_t bytes = npu_act_bytes(in) + npu_act_bytes(out), compute;

	if (l->kind == NPU_LOP_MATMUL) {
		uint64_t m = npu_act_elems(out) / out->c;

		compute = matmul_cycles(&prog->opts, m, in->c, out->c, in->i16);
		if (!l->matmul.batch)
			bytes += (uint64_t)in->c * out->c;
	} else if (l->kind == NPU_LOP_COPY && !l->copy.lut) {
		/* DRAM to DRAM, one DMA per repeat (dma_rows()) */
		uint64_t reps = l->copy.count > 1 ? l->copy.count : 1;
		bool dense = l->copy.rows > 1 && l->copy.src_stride == l->copy.row_bytes &&
			     l->copy.dst_stride == l->copy.row_bytes;

		return reps * (NPU_CYCLES_INSN_OVERHEAD +
			       (dense ? cost_dma(1, (uint64_t)l->copy.rows * l->copy.row_bytes) :
				cost_dma(l->copy.rows, l->copy.row_bytes)));
	} else if (l->kind == NPU_LOP_COPY) {
		compute = div_up64((uint64_t)l->copy.rows * l->copy.row_bytes, NPU_VECTOR_LANES);
		bytes = 2 * (uint64_t)l->copy.rows * l->copy.row_bytes;
	} else if (l->kind == NPU_LOP_RESIZE) {
		compute = div_up64(npu_act_elems(out) *
				   (l->resize.mode == NPU_RESIZE_NEAREST ? 1 : 4), NPU_VECTOR_LANES);
	} else {
		compute = div_up64(npu_act_elems(out) * 4, NPU_VECTOR_LANES);
	}
	bytes = div_up64(bytes, NPU_DMA_BYTES_PER_CYCLE);
	return (compute > bytes ? compute : bytes) + 4 * (NPU_CYCLES_DMA_SETUP +
							  NPU_CYCLES_INSN_OVERHEAD);
}

/* pmm_compute()'s tile loop (pixel-major MATMULs) replayed. */
uint64_t pmm_cost(const struct npu_segment_program *prog, const struct npu_lop *l,
		  const struct pmm *m)
{
	const struct npu_act *in = &prog->acts[l->in];
	struct cost_engines t = { 0, 0, 0 };
	uint64_t tiles = div_up64(in->h, m->rows) * in->n, prev_store = 0, i;
	uint64_t row = (uint64_t)in->w * in->c;
	uint32_t p;

	cost_insn(&t, false, true, 0);
	cost_insn(&t, true, false, cost_dma(1, m->consts));
	for (i = 0; i <= tiles; i++) {
		uint64_t r0 = (i % div_up64(in->h, m->rows)) * m->rows, r = 0, n;

		if (i < tiles)
			r = (r0 + m->rows < in->h ? m->rows : in->h - r0);
		if (i == 0) {
			cost_insn(&t, true, false, cost_dma(1, r * row));
			continue;
		}
		r0 = ((i - 1) % div_up64(in->h, m->rows)) * m->rows;
		n = (r0 + m->rows < in->h ? m->rows : in->h - r0) * in->w;
		for (p = 0; p < m->phases; p++)
			cost_insn(&t, false, p == 0, matmul_cycles(&prog->opts, 1, in->c, n, false));
		if (lut_insn(&prog->opts, &l->conv.q))
			cost_insn(&t, false, false, div_up64(m->phases * n, NPU_VECTOR_LANES));
		for (p = 0; p < m->phases; p++)
			cost_insn(&t, false, false, div_up64(n, NPU_VECTOR_LANES));
		if (prev_store)
			cost_insn(&t, true, false, prev_store);
		if (i < tiles)
			cost_insn(&t, true, false, cost_dma(1, r * row));
		prev_store = cost_dma(1, m->phases * n);
	}
	cost_insn(&t, true, true, prev_store);
	return cost_end(&t);
}

uint64_t tiling_cost(const struct npu_segment_program *prog,
		     const struct npu_lop *l, const struct tiling *p)
{
	struct pmm pm;

	if (p->pmm && pmm_layout(prog, l, p->rows, UINT32_MAX, &pm))
		return pmm_cost(prog, l, &pm);
	if ((l->kind == NPU_LOP_CONV && !l->conv.phase_h) || l->kind == NPU_LOP_POOL)
		return cost_conv(prog, l, p);
	if (l->kind == NPU_LOP_CONV) {
		/* phase-split ConvTranspose: lowering's per-row model, plus the
		 * constants, the first load, the last store and one tile's
		 * instructions per tile */
		const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
		uint32_t f = l->conv.fold_w ? l->conv.fold_w : 1;
		uint64_t rows = p->rows ? p->rows : 1, tiles = div_up64(in->h, rows) * in->n;
		uint64_t row_in = (uint64_t)in->w * in->c, row_out = (uint64_t)l->conv.phase_h *
								  out->w * out->c;
		bool joined;
		uint64_t per = npu_phase_row_cycles(&prog->opts, in->w, in->c, out->c, l->conv.phase_h,
						    l->conv.phase_w, f, &joined);

		return (uint64_t)in->n * in->h * per + cost_dma(1, p->consts_bytes) +
		       cost_dma(1, rows * row_in) + cost_dma(1, rows * row_out) +
		       tiles * (joined ? 1 : l->conv.phase_h) * NPU_CYCLES_INSN_OVERHEAD;
	}
	if (l->kind == NPU_LOP_ELTWISE || l->kind == NPU_LOP_LUT ||
	    (l->kind == NPU_LOP_ROWS && l->rows.opcode != NPU_OP_REDUCE))
		return cost_flat(prog, l, p);
	if (l->kind == NPU_LOP_MATMUL && !l->matmul.batch)
		return cost_matmul(prog, l, p);
	return cost_roofline(prog, l);
}

/*
 * Tile height by search: the largest tile that fits leaves the first load
 * and the last store of an op outside the double-buffered overlap, so a
 * few more, smaller tiles often finish sooner; more tiles cost instruction
 * overhead and conv halo rows. Tries tile counts from the fewest up and
 * keeps the tiling the cost model predicts fastest. The SRAM layout stays
 * the one planned for the largest tile (a smaller tile uses a prefix of
 * each buffer). opts.no_tile_search keeps the largest tile.
 */
void tile_search(const struct npu_segment_program *prog,
		 const struct npu_lop *l, struct tiling *p)
{
	const struct npu_act *out = &prog->acts[l->out];
	uint64_t total, k, best_cost, c;
	uint32_t best = p->rows, last = p->rows, tries = 0;
	struct tiling t = *p;

	if (prog->opts.no_tile_search || p->pmm)	/* pmm_tiling() searched its own */
		return;
	if ((l->kind == NPU_LOP_CONV && !l->conv.phase_h) || l->kind == NPU_LOP_POOL)
		total = out->h;
	else if (l->kind == NPU_LOP_ELTWISE || l->kind == NPU_LOP_LUT ||
		 (l->kind == NPU_LOP_ROWS && l->rows.opcode != NPU_OP_REDUCE))
		total = npu_act_elems(out) / out->c;
	else if (l->kind == NPU_LOP_MATMUL && !l->matmul.batch)
		total = npu_act_elems(&prog->acts[l->in]) / prog->acts[l->in].c;
	else
		return;
	best_cost = tiling_cost(prog, l, p);
	for (k = div_up64(total, p->rows) + 1; k <= total && tries < 40;
	     k += k / 8 ? k / 8 : 1) {
		uint32_t r = (uint32_t)div_up64(total, k);

		if (r >= last)
			continue;
		last = r;
		tries++;
		t.rows = r;
		c = tiling_cost(prog, l, &t);
		if (c < best_cost) {
			best_cost = c;
			best = r;
		}
	}
	p->rows = best;
}
