// SPDX-License-Identifier: MIT
/*
 * codegen_tiling.c - how each lop is cut to fit SRAM: output-channel slices,
 * folded convolutions, and the tilings (tile rows, SRAM layout) of every
 * lop kind, which npu_lop_fits() answers the partitioner from.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/codegen_internal.h"

/* ---- Channel slices (output-channel chunks of conv / matmul) ---------- */

/* Bytes of one slice's constants in SRAM: weights, bias, mult, shift, LUT. */
uint64_t slice_const_bytes(uint64_t channels, uint64_t weights_per_oc,
			   unsigned bias_bytes, bool lut)
{
	uint64_t b = align_up(channels * weights_per_oc, SRAM_ALIGN);

	if (bias_bytes)
		b += align_up(channels * bias_bytes, SRAM_ALIGN);
	b += align_up(channels * 5, SRAM_ALIGN);
	if (lut)
		b += 256;
	return align_up(b, SRAM_ALIGN);
}

/* Bytes of a lop's LUT: 513 int16 knots, 256 int8 entries, or none. */
static unsigned lut_bytes(const struct npu_lop_quant *q)
{
	return q->lut16 ? 1026 : q->lut ? 256 : 0;
}

/* The same for a lop's quantization: its LUT may be int16 (1026 bytes). */
uint64_t slice_consts(uint64_t channels, uint64_t weights_per_oc,
		      const struct npu_lop_quant *q)
{
	return align_up(slice_const_bytes(channels, weights_per_oc, bias_es(q), false) +
			lut_bytes(q), SRAM_ALIGN);
}

/* Output-channel slicing for 'out_c' channels in 'groups' groups of 'chunk'. */
size_t make_slices(uint32_t out_c, uint32_t in_c, uint32_t groups,
		   uint32_t chunk, struct slice *s, size_t max)
{
	uint32_t opg = out_c / groups, ipg = in_c / groups, g, oc;
	size_t n = 0;

	if (chunk >= opg) {	/* whole groups per slice */
		uint32_t per = chunk / opg;

		for (g = 0; g < groups && n < max; g += per, n++) {
			uint32_t g1 = g + per < groups ? g + per : groups;

			s[n].oc0 = g * opg;
			s[n].oc1 = g1 * opg;
			s[n].groups = g1 - g;
			s[n].in_c = (g1 - g) * ipg;
			s[n].in_offset = g * ipg;
		}
		return n;
	}
	for (g = 0; g < groups; g++) {	/* parts of one group per slice */
		for (oc = g * opg; oc < (g + 1) * opg && n < max; oc += chunk, n++) {
			s[n].oc0 = oc;
			s[n].oc1 = oc + chunk < (g + 1) * opg ? oc + chunk : (g + 1) * opg;
			s[n].groups = 1;
			s[n].in_c = ipg;
			s[n].in_offset = g * ipg;
		}
	}
	return n;
}

/* ---- Folded convolutions (few input channels) ------------------------- */

/* Weight bytes per output channel of a conv lop (all phases when folded). */
uint64_t conv_wpo(const struct npu_lop *l, const struct npu_act *in,
		  const struct npu_act *out)
{
	struct npu_fold_phase ph;
	uint32_t R;

	if (!l->conv.fold_w)
		return (uint64_t)l->conv.k_h * l->conv.k_w * (in->c / l->conv.groups);
	R = l->conv.fold_w / l->conv.stride_w;
	if (!R || !npu_conv_fold_phase(in->w, out->w, in->c, out->c, l->conv.k_h, l->conv.k_w,
				       l->conv.stride_w, l->conv.pad_left, l->conv.fold_w,
				       R - 1, &ph))
		return 0;
	return (ph.weight_off + (uint64_t)out->c * l->conv.k_h * ph.k_w * l->conv.fold_w * in->c) /
	       out->c;
}

/* ---- Tilings --------------------------------------------------------- */

/*
 * Lay out SRAM as [consts][in0][in1][in2_0][in2_1][out0][out1] for 'rows'
 * per tile; returns false when it does not fit.
 */
static bool tiling_layout(struct tiling *p, uint64_t consts, uint64_t in_bytes,
			  uint64_t in2_bytes, uint64_t out_bytes, uint32_t sram)
{
	uint64_t off = align_up(consts, SRAM_ALIGN);
	int i;

	in_bytes = align_up(in_bytes, SRAM_ALIGN);
	in2_bytes = align_up(in2_bytes, SRAM_ALIGN);
	out_bytes = align_up(out_bytes, SRAM_ALIGN);
	if (off + 2 * (in_bytes + in2_bytes + out_bytes) > sram)
		return false;
	p->sram_consts = 0;
	p->consts_bytes = consts;
	for (i = 0; i < 2; i++) {
		p->sram_in[i] = (uint32_t)(off + i * in_bytes);
		p->sram_in2[i] = (uint32_t)(off + 2 * in_bytes + i * in2_bytes);
		p->sram_out[i] = (uint32_t)(off + 2 * (in_bytes + in2_bytes) + i * out_bytes);
	}
	return true;
}

static bool is_depthwise(const struct npu_lop *l, const struct npu_act *in,
			 const struct npu_act *out)
{
	return l->conv.groups == in->c && in->c == out->c && l->conv.groups > 1;
}

/* Largest tile rows in [1, max_rows] that fit, by binary search; 0: none. */
static uint32_t fit_rows(struct tiling *p, uint64_t consts, uint32_t max_rows,
			 uint64_t (*in_bytes)(const void *ctx, uint32_t rows),
			 uint64_t (*out_bytes)(const void *ctx, uint32_t rows),
			 uint64_t in2_per_row, const void *ctx, uint32_t sram)
{
	uint32_t lo = 0, hi = max_rows;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		struct tiling t;

		if (tiling_layout(&t, consts, in_bytes(ctx, mid), in2_per_row * mid,
				  out_bytes(ctx, mid), sram))
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo)
		tiling_layout(p, consts, in_bytes(ctx, lo), in2_per_row * lo,
			      out_bytes(ctx, lo), sram);
	return lo;
}

struct conv_ctx {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	uint32_t chunk;
	bool pool;
};

static uint64_t conv_in_bytes(const void *c, uint32_t rows)
{
	const struct conv_ctx *x = c;
	uint32_t s = x->pool ? x->l->pool.stride_h : x->l->conv.stride_h;
	uint32_t d = x->pool ? 1 : x->l->conv.dil_h;
	uint32_t k = x->pool ? x->l->pool.k_h : x->l->conv.k_h;
	uint32_t u = x->pool ? 1 : x->l->conv.ins_h + 1u;
	uint64_t r = window_rows(rows, s, d, k);

	/* With zero insertion a window of r rows holds ~r / u real rows. */
	if (u > 1)
		r = (r + u - 1) / u + 1;
	if (r > x->in->h)
		r = x->in->h;
	return r * x->in->w * x->in->c * npu_act_es(x->in);
}

static uint64_t conv_out_bytes(const void *c, uint32_t rows)
{
	const struct conv_ctx *x = c;

	return (uint64_t)rows * x->out->w * x->chunk * npu_act_es(x->out);
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

uint64_t npu_phase_row_cycles(const struct npu_codegen_options *o, uint32_t in_w, uint32_t in_c,
			      uint32_t out_c, uint32_t phase_h, uint32_t phase_w, uint32_t f,
			      bool *joined)
{
	uint64_t m = in_w / f;
	uint64_t pc = (uint64_t)f * phase_w * out_c, load = ceil_div((uint64_t)in_w * in_c, NPU_DMA_BYTES_PER_CYCLE);
	uint64_t dma = NPU_CYCLES_DMA_SETUP + NPU_CYCLES_INSN_OVERHEAD;
	/* Apart: phase_h CONV2D, one contiguous store of phase_h rows. */
	uint64_t apart_c = phase_h * npu_conv_insn_cycles(o, m, 1, 1, f * in_c, (uint32_t)pc, false);
	uint64_t apart_d = load + ceil_div(phase_h * m * pc, NPU_DMA_BYTES_PER_CYCLE);
	/* Joined: one CONV2D, a strided store per row phase of m rows. */
	uint64_t join_c = npu_conv_insn_cycles(o, m, 1, 1, f * in_c, (uint32_t)(phase_h * pc), false);
	uint64_t join_d = load + phase_h * (dma + m * ceil_div(pc, NPU_DMA_BYTES_PER_CYCLE));
	uint64_t apart = apart_c > apart_d ? apart_c : apart_d;
	uint64_t join = join_c > join_d ? join_c : join_d;

	*joined = phase_h > 1 && phase_h * pc <= UINT16_MAX && join < apart;
	return *joined ? join : apart;
}

/*
 * A phase-split ConvTranspose with one output channel as MATMULs with the
 * pixels on the n axis (pixel-major): phase (dy, dx) is out[1][n] =
 * w[1][k] x in[n][k], one MATMUL of ceil(k / 32) * ceil(n / 32) cycles
 * for n input pixels, where a CONV2D computing one output channel per
 * pixel leaves 31 of 32 MAC columns idle (the joined phases, a
 * block-diagonal kernel over wide pixels, still waste 3 of 4 MACs). The
 * weight row of a phase is the lop's row (dy, f = 0, dx) (lowering's fold
 * repeats it per f), its own multiplier and shift per tensor (MATMUL
 * requantizes per column, here per pixel), its bias repeated per pixel.
 * A nearest RESIZE of step 1 (a strided copy) then puts each phase's
 * pixels at their place in the output rows, and the rows go out dense.
 * SRAM: [per phase: weights, bias[n], quant][LUT][in0][in1][mid][out0][out1].
 *
 * The same for a 1x1 convolution with few output channels (det's 48 -> 12
 * RSE convs use 12 of 32 MAC columns): "phase" p is output channel p, one
 * MATMUL per channel, and the RESIZE interleaves the channel planes into
 * NHWC pixels (output pixel stride = out_c): out_c * (ceil(in_c / 32) / 32
 * + 1 / 64) cycles per pixel instead of ceil(in_c / 32) * ceil(out_c / 32).
 *
 * Chosen when the cost model predicts it faster than the CONV2Ds
 * (tile_phases(), tile_conv()). opts.pixel_mm OFF keeps the CONV2Ds,
 * FORCE takes the MATMULs whenever they fit, opts.fuse_max_rows
 * caps the tile at N input rows (tests).
 */
bool pmm_ok(const struct npu_segment_program *prog, const struct npu_lop *l)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];

	if (prog->opts.pixel_mm == NPU_CODEGEN_OFF || l->kind != NPU_LOP_CONV || npu_lop_reads_in2(l) || in->i16 ||
	    out->i16 || l->conv.q.bias64 || l->conv.q.lut16 || in->im2col.k_h ||
	    in->n != out->n || in->w > UINT16_MAX || in->h > UINT16_MAX)
		return false;
	if (!l->conv.phase_h)	/* a plain 1x1 conv, stride 1, no padding */
		return l->conv.k_h == 1 && l->conv.k_w == 1 && l->conv.stride_h == 1 &&
		       l->conv.stride_w == 1 && !l->conv.pad_top && !l->conv.pad_left &&
		       !l->conv.pad_bottom && !l->conv.pad_right && l->conv.groups == 1 &&
		       !l->conv.fold_w && !l->conv.ins_h && !l->conv.ins_w &&
		       out->c <= PMM_MAX_PHASES && out->h == in->h && out->w == in->w;
	return l->conv.phase_w && out->c == 1 &&
	       (uint32_t)l->conv.phase_h * l->conv.phase_w <= PMM_MAX_PHASES &&
	       out->h == in->h * l->conv.phase_h && out->w == in->w * l->conv.phase_w &&
	       (!l->conv.fold_w || in->w % l->conv.fold_w == 0);
}

/*
 * The constants of tiles of n pixels from SRAM offset 0: per phase its
 * weight row, its bias once per pixel (m = 1: the bias goes with the
 * n side) and its requantization, then the LUT.
 */
void pmm_consts_layout(const struct npu_segment_program *prog, const struct npu_lop *l,
		       uint64_t n, struct pmm *m)
{
	const struct npu_act *in = &prog->acts[l->in];
	uint64_t off = 0;
	uint32_t p;

	m->conv1x1 = !l->conv.phase_h;
	m->phases = m->conv1x1 ? prog->acts[l->out].c : (uint32_t)l->conv.phase_h * l->conv.phase_w;
	for (p = 0; p < m->phases; p++) {
		m->w_off[p] = (uint32_t)off;
		off += align_up(in->c, SRAM_ALIGN);
		m->bias_off[p] = (uint32_t)off;
		if (l->conv.q.bias)
			off += align_up(4 * n, SRAM_ALIGN);
		m->quant_off[p] = (uint32_t)off;
		off += SRAM_ALIGN;	/* mult + shift: 5 bytes */
	}
	m->lut_off = (uint32_t)off;
	if (l->conv.q.lut)
		off += 256;
	m->consts = align_up(off, SRAM_ALIGN);
	m->n = (uint32_t)n;
}

/* Lay out SRAM for tiles of 'rows' input rows; false: it does not fit. */
bool pmm_layout(const struct npu_segment_program *prog, const struct npu_lop *l,
		uint32_t rows, uint32_t sram, struct pmm *m)
{
	const struct npu_act *in = &prog->acts[l->in];
	uint64_t n = (uint64_t)rows * in->w, in_b, mid_b;

	pmm_consts_layout(prog, l, n, m);
	in_b = align_up(n * in->c, SRAM_ALIGN);
	mid_b = align_up(m->phases * n, SRAM_ALIGN);	/* = one output tile */
	if (m->consts + 2 * in_b + 3 * mid_b > sram)
		return false;
	m->rows = rows;
	m->n = (uint32_t)n;
	m->sram_in[0] = (uint32_t)m->consts;
	m->sram_in[1] = (uint32_t)(m->consts + in_b);
	m->sram_mid = (uint32_t)(m->consts + 2 * in_b);
	m->sram_out[0] = (uint32_t)(m->consts + 2 * in_b + mid_b);
	m->sram_out[1] = (uint32_t)(m->consts + 2 * in_b + 2 * mid_b);
	return true;
}

/* The tile rows pmm_cost() likes best among those that fit; false: none. */
static bool pmm_tiling(const struct npu_segment_program *prog, const struct npu_lop *l,
		       uint32_t sram, struct pmm *m)
{
	const struct npu_act *in = &prog->acts[l->in];
	uint32_t r, best = 0;
	uint64_t c, best_cost = UINT64_MAX;

	uint32_t cap = prog->opts.fuse_max_rows;	/* tests: small tiles */

	for (r = in->h; r >= 1; r--) {
		if ((cap && r > cap) || !pmm_layout(prog, l, r, sram, m))
			continue;
		c = pmm_cost(prog, l, m);
		if (c < best_cost) {
			best_cost = c;
			best = r;
		}
	}
	return best && pmm_layout(prog, l, best, sram, m);
}

/* Phase-split ConvTranspose: p->rows counts *input* rows per tile. */
struct phase_ctx {
	const struct npu_act *in, *out;
	uint32_t ph;
};

static uint64_t phase_in_bytes(const void *c, uint32_t rows)
{
	const struct phase_ctx *x = c;

	return (uint64_t)rows * x->in->w * x->in->c;
}

static uint64_t phase_out_bytes(const void *c, uint32_t rows)
{
	const struct phase_ctx *x = c;

	return (uint64_t)rows * x->ph * x->out->w * x->out->c;
}

/* Modeled cycles of a joined phase lop in tiles of r input rows. */
static uint64_t joined_cost(const struct npu_codegen_options *o, const struct npu_lop *l,
			    const struct npu_act *in, const struct npu_act *out, uint64_t r)
{
	uint64_t f = l->conv.fold_w ? l->conv.fold_w : 1, ph = l->conv.phase_h;
	uint64_t m = in->w / f, pc = f * l->conv.phase_w * out->c, orow = (uint64_t)out->w * out->c;
	uint64_t setup = NPU_CYCLES_DMA_SETUP + NPU_CYCLES_INSN_OVERHEAD, tiles = ceil_div(in->h, r);
	uint64_t cmp = r * npu_conv_insn_cycles(o, m, 1, 1, (uint32_t)(f * in->c), (uint32_t)(ph * pc),
						false) +
		       (lut_insn(o, &l->conv.q) ? ceil_div(r * ph * orow, NPU_VECTOR_LANES) : 0);
	uint64_t load = setup + ceil_div(r * in->w * in->c, NPU_DMA_BYTES_PER_CYCLE);
	uint64_t store = ph * (r < m ? r : m) * setup +
			 ph * r * m * ceil_div(pc, NPU_DMA_BYTES_PER_CYCLE);

	return tiles * (cmp > load + store ? cmp : load + store) + load + store;
}

/* The tile rows (at most 'max') joined_cost() likes best. */
static uint32_t joined_rows(const struct npu_codegen_options *o, const struct npu_lop *l,
			    const struct npu_act *in, const struct npu_act *out, uint32_t max)
{
	uint32_t r, best = max;

	for (r = 1; r < max; r++)
		if (joined_cost(o, l, in, out, r) < joined_cost(o, l, in, out, best))
			best = r;
	return best;
}

/* p runs the pixel-major MATMULs of pm, in slices of 'chunk' channels. */
static void tiling_take_pmm(struct tiling *p, const struct pmm *pm, uint32_t chunk)
{
	p->pmm = true;
	p->chunk = chunk;
	p->rows = pm->rows;
	p->consts_bytes = pm->consts;
	p->sram_in[0] = pm->sram_in[0];
	p->sram_in[1] = pm->sram_in[1];
	p->sram_in2[0] = pm->sram_mid;
	p->sram_out[0] = pm->sram_out[0];
	p->sram_out[1] = pm->sram_out[1];
}

static bool tile_phases_conv(const struct npu_segment_program *prog,
			     const struct npu_lop *l, uint32_t sram, struct tiling *p,
			     char *why, size_t why_size);

static bool tile_phases(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct tiling *p,
			char *why, size_t why_size)
{
	struct pmm pm;

	if (pmm_ok(prog, l) && pmm_tiling(prog, l, sram, &pm)) {
		struct tiling conv = *p;

		/* the phase CONV2Ds when they fit and the model prefers them */
		if (prog->opts.pixel_mm == NPU_CODEGEN_FORCE || !tile_phases_conv(prog, l, sram, &conv, why, why_size) ||
		    pmm_cost(prog, l, &pm) < tiling_cost(prog, l, &conv)) {
			tiling_take_pmm(p, &pm, 1);
			return true;
		}
		*p = conv;
		return true;
	}
	return tile_phases_conv(prog, l, sram, p, why, why_size);
}

static bool tile_phases_conv(const struct npu_segment_program *prog,
			     const struct npu_lop *l, uint32_t sram, struct tiling *p,
			     char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	struct phase_ctx ctx = { .in = in, .out = out, .ph = l->conv.phase_h };
	uint32_t f = l->conv.fold_w ? l->conv.fold_w : 1;
	uint64_t pc = (uint64_t)f * l->conv.phase_w * out->c;
	uint64_t consts = l->conv.phase_h * slice_const_bytes(pc, (uint64_t)f * in->c,
							      bias_es(&l->conv.q),
							      l->conv.q.lut != NULL);
	bool joined;

	npu_phase_row_cycles(&prog->opts, in->w, in->c, out->c, l->conv.phase_h, l->conv.phase_w, f, &joined);
	if (joined)	/* one slice of all phase_h * pc channels */
		consts = slice_const_bytes(l->conv.phase_h * pc, (uint64_t)f * in->c,
					   bias_es(&l->conv.q), l->conv.q.lut != NULL);

	if (out->h != in->h * l->conv.phase_h || out->w != in->w * l->conv.phase_w ||
	    in->n != out->n || pc > UINT16_MAX || in->w % f || (uint64_t)f * in->c > UINT16_MAX) {
		snprintf(why, why_size, "phase-split transposed conv: %ux%u -> %ux%u is not x%ux%u",
			 in->h, in->w, out->h, out->w, l->conv.phase_h, l->conv.phase_w);
		return false;
	}
	p->chunk = (uint32_t)pc;
	if (consts < sram)
		p->rows = fit_rows(p, consts, in->h, phase_in_bytes, phase_out_bytes, 0, &ctx, sram);
	/* A joined store costs about what the compute does: the first load
	 * and the last store overlap nothing, so balance tile count and size. */
	if (joined && p->rows > 1)
		p->rows = fit_rows(p, consts, joined_rows(&prog->opts, l, in, out, p->rows),
				   phase_in_bytes, phase_out_bytes, 0, &ctx, sram);
	if (p->rows)
		return true;
	snprintf(why, why_size, "weights of %u phases and one input row of %ux%u do not fit in SRAM",
		 l->conv.phase_h, in->w, in->c);
	return false;
}

static bool tile_conv_plain(const struct npu_segment_program *prog,
			    const struct npu_lop *l, uint32_t sram, struct tiling *p,
			    char *why, size_t why_size);

/* A phase-split ConvTranspose, or a conv that pixel-major MATMULs (struct
 * pmm) may run faster than its CONV2Ds (each with its best tiles). */
static bool tile_conv(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct tiling *p,
		      char *why, size_t why_size)
{
	struct pmm pm;

	if (l->conv.phase_h)
		return tile_phases(prog, l, sram, p, why, why_size);
	if (pmm_ok(prog, l) && pmm_tiling(prog, l, sram, &pm)) {
		struct tiling conv = *p;

		if (prog->opts.pixel_mm == NPU_CODEGEN_FORCE || !tile_conv_plain(prog, l, sram, &conv, why, why_size) ||
		    (tile_search(prog, l, &conv), pmm_cost(prog, l, &pm) < tiling_cost(prog, l, &conv))) {
			tiling_take_pmm(p, &pm, prog->acts[l->out].c);	/* one slice (choose_fusion()) */
			return true;
		}
		*p = conv;
		return true;
	}
	return tile_conv_plain(prog, l, sram, p, why, why_size);
}

static bool tile_conv_plain(const struct npu_segment_program *prog,
			    const struct npu_lop *l, uint32_t sram, struct tiling *p,
			    char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	uint32_t groups = l->conv.groups, opg = out->c / groups;
	uint64_t wpo = conv_wpo(l, in, out);
	bool dw = is_depthwise(l, in, out);
	struct conv_ctx ctx = { .l = l, .in = in, .out = out };
	uint32_t chunk;

	/* Whole layer first, then whole groups, then 32-channel multiples. */
	for (chunk = out->c; chunk >= 1;) {
		uint64_t consts = slice_consts(chunk, wpo, &l->conv.q);

		ctx.chunk = chunk;
		if (consts < sram) {
			p->chunk = chunk;
			p->rows = fit_rows(p, consts, out->h, conv_in_bytes,
					   conv_out_bytes, 0, &ctx, sram);
			if (p->rows)
				return true;
		}
		if (dw || l->conv.fold_w || !wpo)
			break;	/* depthwise slices would re-read everything */
		if (chunk > opg)
			chunk = (chunk / opg) > 1 ? (chunk / opg / 2) * opg : opg;
		else if (chunk > NPU_MAC_COLS)
			chunk = (chunk / 2 + NPU_MAC_COLS - 1) / NPU_MAC_COLS * NPU_MAC_COLS;
		else
			break;
	}
	snprintf(why, why_size, "one output row of %ux%u needs more than the %u KiB of SRAM",
		 out->w, out->c, sram / 1024);
	return false;
}

struct mm_ctx {
	uint32_t k, chunk, es;
};

static uint64_t mm_in_bytes(const void *c, uint32_t rows)
{
	return (uint64_t)rows * ((const struct mm_ctx *)c)->k * ((const struct mm_ctx *)c)->es;
}

static uint64_t mm_out_bytes(const void *c, uint32_t rows)
{
	return (uint64_t)rows * ((const struct mm_ctx *)c)->chunk * ((const struct mm_ctx *)c)->es;
}

/*
 * MATMUL of two activations (npu_lop.matmul.batch): 'chunk' batches per
 * pass (all of them when they fit), A [m][k], B as [n][k] and out [m][n]
 * of each whole in SRAM after the constants. A pass loads, multiplies and
 * stores; the next pass's loads wait for the store (attention's products
 * are small: usually one pass).
 *
 * B as ONNX stores it, [k][n], must become [n][k]. With n <= 64 a MATMUL
 * does that: identity I_n (m = k = n) times B read as n' = k rows of n
 * gives out[i][j] = B[j][i] - zp_b, requantized by exactly 1 (2^30 >> 30)
 * back to B's zero point: exact, and n * ceil(k / 32) cycles instead of
 * n strided DMAs of one-byte rows (64 cycles of setup each).
 */
void mm_act_consts(const struct npu_lop *l, uint32_t n, struct mm_act_consts *o)
{
	uint64_t at = SRAM_ALIGN;	/* the per-tensor quant pair at 0 */

	memset(o, 0, sizeof(*o));
	o->lut = (uint32_t)at;
	if (l->matmul.q.lut)
		at += 256;
	o->mm_transpose = !l->matmul.b_nk && n <= 64;
	if (o->mm_transpose) {
		o->idq = (uint32_t)at;
		o->id = (uint32_t)(at + SRAM_ALIGN);
		at = align_up(at + SRAM_ALIGN + (uint64_t)n * n, SRAM_ALIGN);
	}
	o->size = (uint32_t)at;
}

static bool tile_matmul_act(const struct npu_segment_program *prog,
			    const struct npu_lop *l, uint32_t sram, struct tiling *p,
			    char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *in2 = &prog->acts[l->in2];
	const struct npu_act *out = &prog->acts[l->out];
	uint64_t rows = (uint64_t)in->n * in->h * in->w, m = rows / l->matmul.batch;
	uint64_t k = in->c, n = out->c, at = 0, per;
	struct mm_act_consts cl;

	if (rows % l->matmul.batch || npu_act_bytes(in2) != l->matmul.batch * k * n ||
	    npu_act_bytes(out) != l->matmul.batch * m * n ||
	    in2->c != (l->matmul.b_nk ? k : n)) {
		snprintf(why, why_size, "operand shapes do not form %u products",
			 l->matmul.batch);
		return false;
	}
	mm_act_consts(l, (uint32_t)n, &cl);
	for (per = l->matmul.batch; per >= 1; per = per > 1 ? (per + 1) / 2 : 0) {
		p->sram_consts = 0;
		at = cl.size;
		p->sram_in[0] = (uint32_t)at;
		at = align_up(at + per * m * k, SRAM_ALIGN);
		p->sram_in2[0] = p->sram_in2[1] = (uint32_t)at;
		at = align_up(at + per * k * n, SRAM_ALIGN);
		p->sram_in[1] = (uint32_t)at;	/* B as stored, to transpose */
		if (cl.mm_transpose)
			at = align_up(at + per * k * n, SRAM_ALIGN);
		p->sram_out[0] = p->sram_out[1] = (uint32_t)at;
		at += per * m * n;
		if (at <= sram) {
			p->rows = (uint32_t)m;
			p->chunk = (uint32_t)per;
			return true;
		}
		if (per == 1)
			break;
	}
	snprintf(why, why_size, "one product's operands (%llu bytes) do not fit in SRAM",
		 (unsigned long long)at);
	return false;
}

static bool tile_matmul(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct tiling *p,
			char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	uint64_t m = (uint64_t)in->n * in->h * in->w;
	struct mm_ctx ctx = { .k = in->c, .es = npu_act_es(in) };
	uint32_t chunk = out->c;

	if (l->matmul.batch)
		return tile_matmul_act(prog, l, sram, p, why, why_size);

	if (m > UINT32_MAX) {
		snprintf(why, why_size, "%llu rows exceed the MATMUL row limit",
			 (unsigned long long)m);
		return false;
	}
	for (;;) {
		uint64_t consts = slice_consts(chunk, in->c, &l->matmul.q);

		ctx.chunk = chunk;
		if (consts < sram) {
			p->chunk = chunk;
			p->rows = fit_rows(p, consts, (uint32_t)m, mm_in_bytes,
					   mm_out_bytes, 0, &ctx, sram);
			if (p->rows)
				return true;
		}
		if (chunk <= NPU_MAC_COLS)
			break;
		chunk = (chunk / 2 + NPU_MAC_COLS - 1) / NPU_MAC_COLS * NPU_MAC_COLS;
	}
	snprintf(why, why_size, "weights of one %u-column slice with K=%u do not fit in SRAM",
		 NPU_MAC_COLS, in->c);
	return false;
}

static bool tile_pool(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct tiling *p,
		      char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	struct conv_ctx ctx = { .l = l, .in = in, .out = out, .chunk = out->c, .pool = true };

	p->chunk = out->c;
	p->rows = fit_rows(p, 0, out->h, conv_in_bytes, conv_out_bytes, 0, &ctx, sram);
	if (p->rows)
		return true;
	snprintf(why, why_size, "one pooling window row of %ux%u does not fit in SRAM",
		 in->w, in->c);
	return false;
}

struct flat_ctx {
	uint32_t unit;	/* elements per 'row' of a flat tile */
	uint32_t es_in, es_out;	/* bytes per element (int16: 2), 0: 1 */
};

static uint64_t flat_bytes(const void *c, uint32_t rows)
{
	const struct flat_ctx *x = c;

	return (uint64_t)rows * x->unit * (x->es_in ? x->es_in : 1);
}

static uint64_t flat_out_bytes(const void *c, uint32_t rows)
{
	const struct flat_ctx *x = c;

	return (uint64_t)rows * x->unit * (x->es_out ? x->es_out : 1);
}

/* Eltwise / LUT: tiles of whole channel vectors ("rows" of c elements). */
static bool tile_flat(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct tiling *p,
		      char *why, size_t why_size)
{
	const struct npu_act *out = &prog->acts[l->out];
	uint64_t vectors = npu_act_elems(out) / out->c;
	struct flat_ctx ctx = { .unit = out->c, .es_in = npu_act_es(&prog->acts[l->in]),
				.es_out = npu_act_es(out) };
	uint64_t consts = 0, in2 = 0;
	uint32_t max_rows = vectors > UINT32_MAX ? UINT32_MAX : (uint32_t)vectors;

	if (l->kind == NPU_LOP_LUT) {
		consts = l->lut.table16 ? 1026 : 256;
	} else if (l->kind == NPU_LOP_ROWS) {
		consts = l->rows.consts_size;
	} else {
		/* A broadcast operand (constant or activation) stays resident. */
		uint32_t es_b = l->elt.b_const ? 1 : npu_act_es(&prog->acts[l->in2]);

		if (l->elt.bcast != NPU_BCAST_NONE)
			consts = align_up((uint64_t)l->elt.b_count * es_b, SRAM_ALIGN);
		else
			in2 = (uint64_t)out->c * es_b;
		if (l->elt.lut || l->elt.lut16)
			consts = align_up(consts, SRAM_ALIGN) + (l->elt.lut16 ? 1026 : 256);
	}
	p->chunk = out->c;
	/* Keep each tile's element count within the instruction's 32 bits. */
	if ((uint64_t)max_rows * out->c > UINT32_MAX)
		max_rows = UINT32_MAX / out->c;
	p->rows = fit_rows(p, consts, max_rows, flat_bytes, flat_out_bytes, in2, &ctx, sram);
	if (p->rows)
		return true;
	snprintf(why, why_size, "a vector of %u channels does not fit in SRAM", out->c);
	return false;
}

/* REDUCE: tiles of whole input rows of in.c bytes, one output byte each. */
static uint64_t reduce_out_bytes(const void *c, uint32_t rows)
{
	(void)c;
	return rows;
}

static bool tile_reduce(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct tiling *p,
			char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in];
	struct flat_ctx ctx = { .unit = in->c };
	uint64_t rows = npu_act_bytes(in) / in->c;
	uint32_t max_rows = rows > UINT32_MAX ? UINT32_MAX : (uint32_t)rows;

	p->chunk = in->c;
	p->rows = fit_rows(p, 0, max_rows, flat_bytes, reduce_out_bytes, 0, &ctx, sram);
	if (p->rows)
		return true;
	snprintf(why, why_size, "a row of %u elements does not fit in SRAM", in->c);
	return false;
}

/* Input rows an output tile of RESIZE reads: floor of both ends, +1 below. */
static int64_t resize_floor(int64_t n, int64_t den)
{
	int64_t q = n / den;

	return q - (n % den < 0);
}

void resize_rows(const struct npu_lop *l, const struct npu_act *in,
		 uint32_t r0, uint32_t r1, uint32_t *ih0, uint32_t *ih1)
{
	int64_t a = resize_floor((int64_t)r0 * l->resize.step_h + l->resize.offset_h,
				 l->resize.den_h);
	int64_t b = resize_floor((int64_t)(r1 - 1) * l->resize.step_h + l->resize.offset_h,
				 l->resize.den_h) + 1;

	a = a < 0 ? 0 : a > (int64_t)in->h - 1 ? in->h - 1 : a;
	b = b < 0 ? 0 : b > (int64_t)in->h - 1 ? in->h - 1 : b;
	*ih0 = (uint32_t)a;
	*ih1 = (uint32_t)(b < a ? a : b);	/* inclusive */
}

uint64_t resize_in_bytes(const void *c, uint32_t rows)
{
	const struct resize_ctx *x = c;
	uint64_t most = 0;
	uint32_t r0, a, b;

	/* The widest window over the tiles of 'rows' rows (steps may vary). */
	for (r0 = 0; r0 < x->out->h; r0 += rows) {
		uint32_t r1 = r0 + rows < x->out->h ? r0 + rows : x->out->h;

		resize_rows(x->l, x->in, r0, r1, &a, &b);
		if (b - a + 1u > most)
			most = b - a + 1u;
	}
	return most * x->in->w * x->in->c * (x->in->i16 ? 2u : 1u);
}

static uint64_t resize_out_bytes(const void *c, uint32_t rows)
{
	const struct resize_ctx *x = c;

	return (uint64_t)rows * x->out->w * x->out->c * (x->out->i16 ? 2u : 1u);
}

static bool tile_resize(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct tiling *p,
			char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	struct resize_ctx ctx = { .l = l, .in = in, .out = out };

	p->chunk = out->c;
	p->rows = fit_rows(p, 0, out->h, resize_in_bytes, resize_out_bytes, 0, &ctx, sram);
	if (p->rows)
		return true;
	snprintf(why, why_size, "one resized row of %ux%u does not fit in SRAM",
		 out->w, out->c);
	return false;
}

/*
 * COPY: a plain copy is one VA-to-VA DMA and needs no SRAM. A requantizing
 * copy streams whole rows through SRAM (LUT in place); a row too long for
 * SRAM goes in pieces ('rows' 0 in the tiling means: p->chunk bytes each).
 */
static bool copy_in_bounds(uint64_t off, uint64_t stride, uint32_t rows,
			   uint32_t row_bytes, uint64_t size)
{
	return rows && row_bytes && stride >= row_bytes &&
	       off + (uint64_t)(rows - 1) * stride + row_bytes <= size;
}

static bool tile_copy(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct tiling *p,
		      char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	struct flat_ctx ctx = { .unit = l->copy.row_bytes };
	uint32_t lo, hi;

	uint64_t last = l->copy.count > 1 ? l->copy.count - 1 : 0;

	if (!copy_in_bounds(l->copy.src_off + last * l->copy.src_step,
			    l->copy.rows > 1 ? l->copy.src_stride : l->copy.row_bytes,
			    l->copy.rows, l->copy.row_bytes, npu_act_bytes(in)) ||
	    !copy_in_bounds(l->copy.dst_off + last * l->copy.dst_step,
			    l->copy.rows > 1 ? l->copy.dst_stride : l->copy.row_bytes,
			    l->copy.rows, l->copy.row_bytes, npu_act_bytes(out))) {
		snprintf(why, why_size, "copy of %u rows of %u bytes lies outside its tensors",
			 l->copy.rows, l->copy.row_bytes);
		return false;
	}
	p->chunk = l->copy.row_bytes;
	if (!l->copy.lut) {
		p->rows = l->copy.rows;
		return true;
	}
	p->rows = fit_rows(p, 256, l->copy.rows, flat_bytes, flat_bytes, 0, &ctx, sram);
	if (p->rows)
		return true;
	/* One row does not fit: the largest 64-byte multiple that does. */
	lo = 0;
	hi = l->copy.row_bytes / SRAM_ALIGN;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		struct tiling t;

		if (tiling_layout(&t, 256, (uint64_t)mid * SRAM_ALIGN, 0,
				  (uint64_t)mid * SRAM_ALIGN, sram))
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!lo) {
		snprintf(why, why_size, "a requantizing copy does not fit in SRAM");
		return false;
	}
	tiling_layout(p, 256, (uint64_t)lo * SRAM_ALIGN, 0, (uint64_t)lo * SRAM_ALIGN, sram);
	p->chunk = lo * SRAM_ALIGN;
	p->rows = 0;
	return true;
}

bool tile_lop(const struct npu_segment_program *prog,
	      const struct npu_lop *l, uint32_t sram, struct tiling *p,
	      char *why, size_t why_size)
{
	memset(p, 0, sizeof(*p));
	switch (l->kind) {
	case NPU_LOP_CONV:
		return tile_conv(prog, l, sram, p, why, why_size);
	case NPU_LOP_MATMUL:
		return tile_matmul(prog, l, sram, p, why, why_size);
	case NPU_LOP_POOL:
		return tile_pool(prog, l, sram, p, why, why_size);
	case NPU_LOP_ROWS:
		if (l->rows.opcode == NPU_OP_REDUCE)
			return tile_reduce(prog, l, sram, p, why, why_size);
		/* fall through */
	case NPU_LOP_ELTWISE:
	case NPU_LOP_LUT:
		return tile_flat(prog, l, sram, p, why, why_size);
	case NPU_LOP_RESIZE:
		return tile_resize(prog, l, sram, p, why, why_size);
	case NPU_LOP_COPY:
		return tile_copy(prog, l, sram, p, why, why_size);
	}
	snprintf(why, why_size, "unknown op kind %d", (int)l->kind);
	return false;
}

bool npu_lop_fits(const struct npu_segment_program *prog,
		  const struct npu_lop *lop, uint32_t sram_size, char *why,
		  size_t why_size)
{
	struct tiling p;

	return tile_lop(prog, lop, sram_size, &p, why, why_size);
}
