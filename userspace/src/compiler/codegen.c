// SPDX-License-Identifier: MIT
#include "compiler/codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu_device.h"
#include "npu_isa.h"

#define SRAM_ALIGN 64u

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

uint64_t npu_act_bytes(const struct npu_act *a)
{
	return npu_act_elems(a) * npu_act_es(a);
}

/* The header flags of a compute op over 'a' (int16: NPU_INSN_I16). */
static uint8_t i16_flag(const struct npu_act *a)
{
	return a->i16 ? NPU_INSN_I16 : 0;
}

/* Bytes of a lop's LUT: 513 int16 knots, 256 int8 entries, or none. */
static unsigned lut_bytes(const struct npu_lop_quant *q)
{
	return q->lut16 ? 1026 : q->lut ? 256 : 0;
}

/* Bias bytes per channel: int64 for an int16 lop, int32 else, 0: none. */
static unsigned bias_es(const struct npu_lop_quant *q)
{
	return q->bias64 ? 8 : q->bias ? 4 : 0;
}

/*
 * An int8 output LUT of a conv / matmul lop runs in the MAC array's output
 * unit (NPU_CONV_OUT_LUT, ISA 1.4): no LUT instruction, no vector-engine
 * cycles. opts.no_out_lut emits the separate LUT of ISA 1.3 instead (tests
 * compare the two). int16 tables (lut16) always take a LUT instruction.
 */
static bool out_lut_fused(const struct npu_codegen_options *o, const struct npu_lop_quant *q)
{
	return q->lut && !o->no_out_lut;
}

/* Whether the lop's output stage needs its own LUT instruction. */
static bool lut_insn(const struct npu_codegen_options *o, const struct npu_lop_quant *q)
{
	return q->lut16 || (q->lut && !out_lut_fused(o, q));
}

/* The OUT_LUT flag and table of a CONV2D / MATMUL when the stage fuses. */
static uint32_t out_lut_flag(const struct npu_codegen_options *o, const struct npu_lop_quant *q)
{
	return out_lut_fused(o, q) ? NPU_CONV_OUT_LUT : 0;
}

static uint32_t out_lut_at(const struct npu_codegen_options *o, const struct npu_lop_quant *q,
			   uint32_t table)
{
	return out_lut_fused(o, q) ? table : 0;
}

/*
 * The MAC array mode of a CONV2D / MATMUL (ISA 1.5): the fastest for the
 * instruction's shape (npu_isa.h), so that a layer of 24 or 16 channels
 * still fills the array. The cost model prices every instruction in the
 * mode its emitter picks. opts.no_array_modes keeps mode 0, the timing of
 * ISA 1.4 (tests compare the two: the modes change cycles, never bytes).
 */
static uint32_t conv_mode(const struct npu_codegen_options *o, uint64_t pixels, uint32_t groups,
			  uint32_t in_c, uint32_t out_c, bool i16)
{
	/* taps scale every mode's cycles alike, so they do not choose */
	return o->no_array_modes ? 0 : npu_conv2d_fastest_mode(pixels, 1, groups, in_c, out_c, i16);
}

static uint32_t matmul_mode(const struct npu_codegen_options *o, uint64_t m, uint64_t k,
			    uint64_t n, bool i16)
{
	return o->no_array_modes ? 0 : npu_matmul_fastest_mode(m, k, n, i16);
}

uint64_t npu_conv_insn_cycles(const struct npu_codegen_options *o, uint64_t pixels,
			      uint64_t taps, uint32_t groups, uint32_t in_c, uint32_t out_c,
			      bool i16)
{
	return npu_conv2d_cycles(pixels, taps, groups, in_c, out_c, i16,
				 conv_mode(o, pixels, groups, in_c, out_c, i16));
}

/* MATMUL cycles of one instruction, in its mode. */
static uint64_t matmul_cycles(const struct npu_codegen_options *o, uint64_t m, uint64_t k,
			      uint64_t n, bool i16)
{
	return npu_matmul_cycles(m, k, n, i16, matmul_mode(o, m, k, n, i16));
}

static bool parse_switch(const char *v, bool *on)
{
	if (!strcmp(v, "1") || !strcmp(v, "on"))
		*on = true;
	else if (!strcmp(v, "0") || !strcmp(v, "off"))
		*on = false;
	else
		return false;
	return true;
}

static bool parse_choice(const char *v, enum npu_codegen_choice *c)
{
	if (!strcmp(v, "auto") || !strcmp(v, "1") || !strcmp(v, "on"))
		*c = NPU_CODEGEN_AUTO;
	else if (!strcmp(v, "off") || !strcmp(v, "0"))
		*c = NPU_CODEGEN_OFF;
	else if (!strcmp(v, "force"))
		*c = NPU_CODEGEN_FORCE;
	else
		return false;
	return true;
}

npu_status npu_codegen_options_parse(struct npu_codegen_options *o, const char *spec,
				     struct npu_error *err)
{
	struct npu_codegen_options n = *o;
	char item[64];
	const char *p = spec;

	while (p && *p) {
		size_t len = strcspn(p, ",");
		char *v, *end;
		bool on, ok;

		if (len >= sizeof(item) || !(v = memchr(p, '=', len)))
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "'%.*s' is not key=value", (int)len, p);
		memcpy(item, p, len);
		item[len] = '\0';
		v = item + (v - p);
		*v++ = '\0';
		if (!strcmp(item, "pixel_mm")) {
			ok = parse_choice(v, &n.pixel_mm);
		} else if (!strcmp(item, "fuse")) {
			ok = parse_choice(v, &n.fuse);
		} else if (!strcmp(item, "fuse_rows")) {
			unsigned long r = strtoul(v, &end, 10);

			ok = *v && !*end && r <= UINT16_MAX;
			n.fuse_max_rows = (uint32_t)r;
		} else if (!strcmp(item, "lut_producer")) {
			ok = !strcmp(v, "any") || !strcmp(v, "last");
			n.lut_last_producer_only = !strcmp(v, "last");
		} else if ((ok = parse_switch(v, &on))) {
			if (!strcmp(item, "array_modes"))
				n.no_array_modes = !on;
			else if (!strcmp(item, "out_lut"))
				n.no_out_lut = !on;
			else if (!strcmp(item, "tile_search"))
				n.no_tile_search = !on;
			else if (!strcmp(item, "prefetch"))
				n.no_prefetch = !on;
			else if (!strcmp(item, "gap_split"))
				n.no_gap_split = !on;
			else
				return npu_error_set(err, NPU_ERR_INVALID_ARG,
						     "unknown option '%s' (array_modes, out_lut, tile_search, prefetch, gap_split, lut_producer, pixel_mm, fuse, fuse_rows)", item);
		} else if (strcmp(item, "array_modes") && strcmp(item, "out_lut") &&
			   strcmp(item, "tile_search") && strcmp(item, "prefetch") &&
			   strcmp(item, "gap_split")) {
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "unknown option '%s' (array_modes, out_lut, tile_search, prefetch, gap_split, lut_producer, pixel_mm, fuse, fuse_rows)", item);
		}
		if (!ok)
			return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s cannot be '%s' (%s)", item, v,
					     !strcmp(item, "pixel_mm") || !strcmp(item, "fuse") ?
					     "auto, off or force" :
					     !strcmp(item, "fuse_rows") ? "a row count" :
					     !strcmp(item, "lut_producer") ? "any or last" : "0 or 1");
		p += len;
		if (*p == ',')
			p++;
	}
	*o = n;
	return NPU_OK;
}

/* npu_cmdbuf_conv2d() / _matmul() with the instruction's array mode set. */
static npu_status cmd_conv2d(const struct npu_codegen_options *o, struct npu_cmdbuf *cb,
			      const struct npu_insn_conv2d *insn)
{
	struct npu_insn_conv2d cv = *insn;

	cv.flags |= NPU_CONV_ARRAY(conv_mode(o, (uint64_t)cv.out_h * cv.out_w, cv.groups, cv.in_c,
					     cv.out_c, cv.hdr.flags & NPU_INSN_I16));
	return npu_cmdbuf_conv2d(cb, &cv);
}

static npu_status cmd_matmul(const struct npu_codegen_options *o, struct npu_cmdbuf *cb,
			      const struct npu_insn_matmul *insn)
{
	struct npu_insn_matmul mm = *insn;

	mm.flags |= NPU_CONV_ARRAY(matmul_mode(o, mm.m, mm.k, mm.n, mm.hdr.flags & NPU_INSN_I16));
	return npu_cmdbuf_matmul(cb, &mm);
}

/* ---- Constant blob ---------------------------------------------------- */

struct blob {
	uint8_t *data;
	size_t size, cap;
};

/* Append 'size' bytes (NULL: zeros) at a 64-byte boundary; returns offset. */
static int blob_put(struct blob *b, const void *src, size_t size, size_t *off)
{
	size_t start = (size_t)align_up(b->size, SRAM_ALIGN);

	if (start + size > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap < start + size)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return -1;
		b->data = p;
		b->cap = cap;
	}
	memset(b->data + b->size, 0, start - b->size);
	if (src)
		memcpy(b->data + start, src, size);
	else
		memset(b->data + start, 0, size);
	b->size = start + size;
	*off = start;
	return 0;
}

/* ---- Channel slices (output-channel chunks of conv / matmul) ---------- */

/*
 * A slice of output channels [oc0, oc1) that one conv instruction computes:
 * 'groups' whole groups, or a part of one group (groups = 1). in_c and
 * in_offset select the input channels it reads from full-width rows.
 */
struct slice {
	uint32_t oc0, oc1;
	uint32_t groups, in_c, in_offset;
	/* Offsets in the constant blob of this slice's block. */
	size_t blob_off, blob_size;
	uint32_t w_off, bias_off, quant_off, lut_off;	/* within the block */
};

/* Bytes of one slice's constants in SRAM: weights, bias, mult, shift, LUT. */
static uint64_t slice_const_bytes(uint64_t channels, uint64_t weights_per_oc,
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

/* The same for a lop's quantization: its LUT may be int16 (1026 bytes). */
static uint64_t slice_consts(uint64_t channels, uint64_t weights_per_oc,
			     const struct npu_lop_quant *q)
{
	return align_up(slice_const_bytes(channels, weights_per_oc, bias_es(q), false) +
			lut_bytes(q), SRAM_ALIGN);
}

/* Output-channel slicing for 'out_c' channels in 'groups' groups of 'chunk'. */
static size_t make_slices(uint32_t out_c, uint32_t in_c, uint32_t groups,
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

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return q - (a % b != 0 && (a < 0) != (b < 0));
}

bool npu_conv_fold_phase(uint32_t in_w, uint32_t out_w, uint32_t in_c, uint32_t out_c,
			 uint32_t k_h, uint32_t k_w, uint32_t stride_w, uint32_t pad_left,
			 uint32_t fold_w, uint32_t r, struct npu_fold_phase *ph)
{
	int64_t off, last = 0, pr, in_w_v, out_w_v;
	uint64_t woff = 0;
	uint32_t R, i;

	memset(ph, 0, sizeof(*ph));
	if (!fold_w || !stride_w || !k_w || fold_w % stride_w || in_w % fold_w)
		return false;
	R = fold_w / stride_w;
	if (out_w % R || r >= R)
		return false;
	in_w_v = in_w / fold_w;
	out_w_v = out_w / R;
	for (i = 0; i <= r; i++) {
		/* Output column R m + i starts at input pixel F m + off. */
		off = (int64_t)stride_w * i - pad_left;
		ph->first = (int32_t)floor_div(off, fold_w);
		last = floor_div(off + k_w - 1, fold_w);
		ph->k_w = (uint32_t)(last - ph->first + 1);
		ph->weight_off = woff;
		woff += (uint64_t)out_c * k_h * ph->k_w * fold_w * in_c;
	}
	if (ph->first > 0)
		return false;	/* would need an input offset, not a pad */
	ph->pad_left = (uint32_t)-ph->first;
	/* The exact right pad for out_w_v outputs; read fewer pixels if negative. */
	pr = out_w_v - 1 + ph->k_w - in_w_v - ph->pad_left;
	ph->in_w = (uint32_t)in_w_v;
	if (pr < 0) {
		ph->in_w = (uint32_t)(in_w_v + pr);
		pr = 0;
	}
	ph->pad_right = (uint32_t)pr;
	return ph->in_w >= 1 && ph->k_w <= 255 && ph->pad_left <= 255 && pr <= 255 &&
	       ph->k_w <= ph->in_w + ph->pad_left + pr && in_w_v <= UINT16_MAX &&
	       (uint64_t)fold_w * in_c <= UINT16_MAX;
}

/* Weight bytes per output channel of a conv lop (all phases when folded). */
static uint64_t conv_wpo(const struct npu_lop *l, const struct npu_act *in,
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

/* ---- Tiling plans ----------------------------------------------------- */

struct plan {
	uint32_t chunk;		/* output channels per slice */
	uint32_t rows;		/* output rows (or matrix rows / elements) per tile */
	uint32_t sram_consts, sram_in[2], sram_in2[2], sram_out[2];
	uint64_t consts_bytes;
	bool pmm;		/* pixel-major MATMULs (struct pmm) */
};

/* Input rows a conv / pool tile of 'rows' output rows needs at most. */
static uint64_t window_rows(uint64_t rows, uint32_t stride, uint32_t dil,
			    uint32_t k)
{
	return (rows - 1) * stride + (uint64_t)dil * (k - 1) + 1;
}

/*
 * Lay out SRAM as [consts][in0][in1][in2_0][in2_1][out0][out1] for 'rows'
 * per tile; returns false when it does not fit.
 */
static bool plan_layout(struct plan *p, uint64_t consts, uint64_t in_bytes,
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
static uint32_t fit_rows(struct plan *p, uint64_t consts, uint32_t max_rows,
			 uint64_t (*in_bytes)(const void *ctx, uint32_t rows),
			 uint64_t (*out_bytes)(const void *ctx, uint32_t rows),
			 uint64_t in2_per_row, const void *ctx, uint32_t sram)
{
	uint32_t lo = 0, hi = max_rows;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		struct plan t;

		if (plan_layout(&t, consts, in_bytes(ctx, mid), in2_per_row * mid,
				out_bytes(ctx, mid), sram))
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo)
		plan_layout(p, consts, in_bytes(ctx, lo), in2_per_row * lo,
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
 * (plan_phases(), plan_conv()). opts.pixel_mm OFF keeps the CONV2Ds,
 * FORCE takes the MATMULs whenever they fit, opts.fuse_max_rows
 * caps the tile at N input rows (tests).
 */
#define PMM_MAX_PHASES 64

struct pmm {
	bool conv1x1;			/* 1x1 conv: phase p = output channel p */
	uint32_t phases, rows, n;	/* n: pixels (rows * in.w) per tile at most */
	uint32_t w_off[PMM_MAX_PHASES], bias_off[PMM_MAX_PHASES], quant_off[PMM_MAX_PHASES];
	uint32_t lut_off, sram_in[2], sram_mid, sram_out[2];
	uint64_t consts;
};

static bool pmm_ok(const struct npu_segment_program *prog, const struct npu_lop *l)
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
static void pmm_consts_layout(const struct npu_segment_program *prog, const struct npu_lop *l,
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
static bool pmm_layout(const struct npu_segment_program *prog, const struct npu_lop *l,
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

static uint64_t pmm_cost(const struct npu_segment_program *prog, const struct npu_lop *l,
			 const struct pmm *m);

/* The tile rows pmm_cost() likes best among those that fit; false: none. */
static bool pmm_plan(const struct npu_segment_program *prog, const struct npu_lop *l,
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
static void plan_take_pmm(struct plan *p, const struct pmm *pm, uint32_t chunk)
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

static bool plan_phases_conv(const struct npu_segment_program *prog,
			     const struct npu_lop *l, uint32_t sram, struct plan *p,
			     char *why, size_t why_size);
static uint64_t plan_cost(const struct npu_segment_program *prog,
			  const struct npu_lop *l, const struct plan *p);

static bool plan_phases(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct plan *p,
			char *why, size_t why_size)
{
	struct pmm pm;

	if (pmm_ok(prog, l) && pmm_plan(prog, l, sram, &pm)) {
		struct plan conv = *p;

		/* the phase CONV2Ds when they fit and the model prefers them */
		if (prog->opts.pixel_mm == NPU_CODEGEN_FORCE || !plan_phases_conv(prog, l, sram, &conv, why, why_size) ||
		    pmm_cost(prog, l, &pm) < plan_cost(prog, l, &conv)) {
			plan_take_pmm(p, &pm, 1);
			return true;
		}
		*p = conv;
		return true;
	}
	return plan_phases_conv(prog, l, sram, p, why, why_size);
}

static bool plan_phases_conv(const struct npu_segment_program *prog,
			     const struct npu_lop *l, uint32_t sram, struct plan *p,
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

static bool plan_conv_plain(const struct npu_segment_program *prog,
			    const struct npu_lop *l, uint32_t sram, struct plan *p,
			    char *why, size_t why_size);
static void tile_search(const struct npu_segment_program *prog,
			const struct npu_lop *l, struct plan *p);

/* A phase-split ConvTranspose, or a conv that pixel-major MATMULs (struct
 * pmm) may run faster than its CONV2Ds (each with its best tiles). */
static bool plan_conv(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct plan *p,
		      char *why, size_t why_size)
{
	struct pmm pm;

	if (l->conv.phase_h)
		return plan_phases(prog, l, sram, p, why, why_size);
	if (pmm_ok(prog, l) && pmm_plan(prog, l, sram, &pm)) {
		struct plan conv = *p;

		if (prog->opts.pixel_mm == NPU_CODEGEN_FORCE || !plan_conv_plain(prog, l, sram, &conv, why, why_size) ||
		    (tile_search(prog, l, &conv), pmm_cost(prog, l, &pm) < plan_cost(prog, l, &conv))) {
			plan_take_pmm(p, &pm, prog->acts[l->out].c);	/* one slice (fusion_plan()) */
			return true;
		}
		*p = conv;
		return true;
	}
	return plan_conv_plain(prog, l, sram, p, why, why_size);
}

static bool plan_conv_plain(const struct npu_segment_program *prog,
			    const struct npu_lop *l, uint32_t sram, struct plan *p,
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
struct mm_act_consts {
	uint32_t lut, idq, id, size;	/* SRAM / blob offsets from the block */
	bool mm_transpose;
};

static void mm_act_consts(const struct npu_lop *l, uint32_t n, struct mm_act_consts *o)
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

static bool plan_matmul_act(const struct npu_segment_program *prog,
			    const struct npu_lop *l, uint32_t sram, struct plan *p,
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

static bool plan_matmul(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct plan *p,
			char *why, size_t why_size)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];
	uint64_t m = (uint64_t)in->n * in->h * in->w;
	struct mm_ctx ctx = { .k = in->c, .es = npu_act_es(in) };
	uint32_t chunk = out->c;

	if (l->matmul.batch)
		return plan_matmul_act(prog, l, sram, p, why, why_size);

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

static bool plan_pool(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct plan *p,
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
static bool plan_flat(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct plan *p,
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

static bool plan_reduce(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct plan *p,
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
struct resize_ctx {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
};

static int64_t resize_floor(int64_t n, int64_t den)
{
	int64_t q = n / den;

	return q - (n % den < 0);
}

static void resize_rows(const struct npu_lop *l, const struct npu_act *in,
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

static uint64_t resize_in_bytes(const void *c, uint32_t rows)
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

static bool plan_resize(const struct npu_segment_program *prog,
			const struct npu_lop *l, uint32_t sram, struct plan *p,
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
 * SRAM goes in pieces ('rows' 0 in the plan means: p->chunk bytes each).
 */
static bool copy_in_bounds(uint64_t off, uint64_t stride, uint32_t rows,
			   uint32_t row_bytes, uint64_t size)
{
	return rows && row_bytes && stride >= row_bytes &&
	       off + (uint64_t)(rows - 1) * stride + row_bytes <= size;
}

static bool plan_copy(const struct npu_segment_program *prog,
		      const struct npu_lop *l, uint32_t sram, struct plan *p,
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
		struct plan t;

		if (plan_layout(&t, 256, (uint64_t)mid * SRAM_ALIGN, 0,
				(uint64_t)mid * SRAM_ALIGN, sram))
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!lo) {
		snprintf(why, why_size, "a requantizing copy does not fit in SRAM");
		return false;
	}
	plan_layout(p, 256, (uint64_t)lo * SRAM_ALIGN, 0, (uint64_t)lo * SRAM_ALIGN, sram);
	p->chunk = lo * SRAM_ALIGN;
	p->rows = 0;
	return true;
}

static bool plan_lop(const struct npu_segment_program *prog,
		     const struct npu_lop *l, uint32_t sram, struct plan *p,
		     char *why, size_t why_size)
{
	memset(p, 0, sizeof(*p));
	switch (l->kind) {
	case NPU_LOP_CONV:
		return plan_conv(prog, l, sram, p, why, why_size);
	case NPU_LOP_MATMUL:
		return plan_matmul(prog, l, sram, p, why, why_size);
	case NPU_LOP_POOL:
		return plan_pool(prog, l, sram, p, why, why_size);
	case NPU_LOP_ROWS:
		if (l->rows.opcode == NPU_OP_REDUCE)
			return plan_reduce(prog, l, sram, p, why, why_size);
		/* fall through */
	case NPU_LOP_ELTWISE:
	case NPU_LOP_LUT:
		return plan_flat(prog, l, sram, p, why, why_size);
	case NPU_LOP_RESIZE:
		return plan_resize(prog, l, sram, p, why, why_size);
	case NPU_LOP_COPY:
		return plan_copy(prog, l, sram, p, why, why_size);
	}
	snprintf(why, why_size, "unknown op kind %d", (int)l->kind);
	return false;
}

bool npu_lop_fits(const struct npu_segment_program *prog,
		  const struct npu_lop *lop, uint32_t sram_size, char *why,
		  size_t why_size)
{
	struct plan p;

	return plan_lop(prog, lop, sram_size, &p, why, why_size);
}

/* ---- Emission ---------------------------------------------------------- */

struct emitter {
	const struct npu_segment_program *prog;
	const struct npu_codegen_target *t;
	struct npu_cmdbuf *cb;
	struct blob blob;
	struct npu_codegen_result *res;
	struct npu_error *err;
	const struct npu_lop *lop;
	/* Instruction numbers of the constant loads (emit_consts()), rising:
	 * what prefetch_consts() may move; none is moved when recording one
	 * ran out of memory (const_loads_lost). */
	size_t *const_loads, num_const_loads, cap_const_loads;
	bool const_loads_lost;
};

static npu_status emit_fail(struct emitter *e, npu_status st)
{
	return npu_error_set(e->err, st, "codegen: %s: %s",
			     e->lop ? e->lop->name : "segment",
			     npu_cmdbuf_last_error(e->cb));
}

#define EMIT(e, call) do {				\
	npu_status _st = (call);			\
	if (_st != NPU_OK)				\
		return emit_fail((e), _st);		\
} while (0)

static uint64_t arena(const struct emitter *e, uint64_t off)
{
	return e->t->arena_va + off;
}

/* Copy a constant block from the blob into SRAM at 'sram' (after a SYNC). */
static npu_status emit_consts(struct emitter *e, size_t blob_off, size_t size,
			      uint32_t sram)
{
	if (!size)
		return NPU_OK;
	EMIT(e, npu_cmdbuf_barrier(e->cb));
	if (e->num_const_loads == e->cap_const_loads) {
		size_t cap = e->cap_const_loads ? 2 * e->cap_const_loads : 256;
		size_t *t = realloc(e->const_loads, cap * sizeof(*t));

		if (t) {
			e->const_loads = t;
			e->cap_const_loads = cap;
		} else {
			e->const_loads_lost = true;	/* then nothing is prefetched */
		}
	}
	if (e->num_const_loads < e->cap_const_loads)
		e->const_loads[e->num_const_loads++] = npu_cmdbuf_count(e->cb);
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, sram, NPU_SPACE_VA,
				       e->t->consts_va + blob_off, (uint32_t)size));
	return NPU_OK;
}

/* Build the slice's constant block: weights, bias, mult[] + shift[], LUT. */
static int put_slice_consts(struct blob *b, struct slice *s, const int8_t *weight,
			    uint64_t wpo, const struct npu_lop_quant *q)
{
	uint32_t c = s->oc1 - s->oc0;
	size_t start = (size_t)align_up(b->size, SRAM_ALIGN), off;
	uint8_t *quant;
	int rc;

	if (blob_put(b, weight + (size_t)s->oc0 * wpo, (size_t)c * wpo, &off))
		return -1;
	s->blob_off = start;
	s->w_off = (uint32_t)(off - start);
	if (q->bias || q->bias64) {
		if (q->bias64 ? blob_put(b, q->bias64 + s->oc0, (size_t)c * 8, &off) :
				blob_put(b, q->bias + s->oc0, (size_t)c * 4, &off))
			return -1;
		s->bias_off = (uint32_t)(off - start);
	}
	/* The ISA wants shift[] immediately after mult[]. */
	quant = malloc((size_t)c * 5);
	if (!quant)
		return -1;
	memcpy(quant, q->mult + s->oc0, (size_t)c * 4);
	memcpy(quant + (size_t)c * 4, q->shift + s->oc0, c);
	rc = blob_put(b, quant, (size_t)c * 5, &off);
	free(quant);
	if (rc)
		return -1;
	s->quant_off = (uint32_t)(off - start);
	if (q->lut || q->lut16) {
		if (q->lut16 ? blob_put(b, q->lut16, 1026, &off) : blob_put(b, q->lut, 256, &off))
			return -1;
		s->lut_off = (uint32_t)(off - start);
	}
	s->blob_size = b->size - start;
	return 0;
}

/*
 * The double-buffered tile loop shared by every op. Tile i computes from
 * buffer i % 2; the DMA engine writes back tile i-1 and prefetches i+1
 * meanwhile. A slice change reloads constants behind a barrier.
 */
struct tile_ops {
	size_t count;
	npu_status (*consts)(struct emitter *e, void *ctx, size_t tile, bool *changed);
	npu_status (*load)(struct emitter *e, void *ctx, size_t tile, int buf);
	npu_status (*compute)(struct emitter *e, void *ctx, size_t tile, int buf);
	npu_status (*store)(struct emitter *e, void *ctx, size_t tile, int buf,
			    uint8_t flags);
};

static npu_status run_tiles(struct emitter *e, const struct tile_ops *ops, void *ctx)
{
	bool changed;
	size_t i;
	npu_status st;

	if (!ops->count)
		return NPU_OK;
	st = ops->consts(e, ctx, 0, &changed);
	if (st)
		return st;
	st = ops->load(e, ctx, 0, 0);
	if (st)
		return st;
	for (i = 0; i < ops->count; i++) {
		if (i > 0) {
			st = ops->consts(e, ctx, i, &changed);
			if (st)
				return st;
			/* New constants were loaded before tile i's prefetch landed. */
		}
		st = ops->compute(e, ctx, i, (int)(i % 2));
		if (st)
			return st;
		if (i > 0) {
			st = ops->store(e, ctx, i - 1, (int)((i - 1) % 2), 0);
			if (st)
				return st;
		}
		if (i + 1 < ops->count) {
			st = ops->load(e, ctx, i + 1, (int)((i + 1) % 2));
			if (st)
				return st;
		}
	}
	return ops->store(e, ctx, ops->count - 1, (int)((ops->count - 1) % 2),
			  NPU_INSN_SYNC);
}

/* ---- CONV2D and POOL --------------------------------------------------- */

struct conv_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct plan p;
	struct slice *slices;
	size_t num_slices, cur_slice;
	uint32_t row_tiles;	/* per image */
	bool pool;
};

/* Tile index -> (slice, image, first output row). Slices outermost. */
static void conv_tile(const struct conv_tiles *c, size_t tile, size_t *slice,
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

struct window {
	uint32_t ih0, in_h, pad_top, pad_bottom;
};

static void conv_window(const struct conv_tiles *c, uint32_t r0, uint32_t r1,
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
	return emit_consts(e, c->slices[s].blob_off, c->slices[s].blob_size, c->p.sram_consts);
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
			.flags = (bias_es(q) ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q),
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
static uint64_t conv_taps(uint32_t k, uint32_t dil, uint32_t ins)
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
static uint64_t lop_taps(const struct npu_lop *l)
{
	return conv_taps(l->conv.k_h, l->conv.dil_h, l->conv.ins_h) *
	       conv_taps(l->conv.k_w, l->conv.dil_w, l->conv.ins_w);
}

/* The MACs a whole conv lop executes, as the device counts them. */
static uint64_t conv_lop_macs(const struct npu_segment_program *prog, const struct npu_lop *l)
{
	const struct npu_act *in = &prog->acts[l->in], *out = &prog->acts[l->out];

	if (l->conv.phase_h)	/* pixel-major: every (dy, dx) phase one MAC per input channel */
		return (uint64_t)out->n * out->h * out->w * out->c * in->c;
	/* taps on inserted zeros are skipped (npu_hw.h) */
	return (uint64_t)out->n * out->h * out->w * out->c * (in->c / l->conv.groups) *
	       lop_taps(l);
}

static npu_status gen_phases(struct emitter *e, const struct npu_lop *l,
			     const struct plan *p);
static npu_status gen_pmm(struct emitter *e, const struct npu_lop *l, const struct pmm *m);

static npu_status gen_conv_or_pool(struct emitter *e, const struct npu_lop *l,
				   const struct plan *p)
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
			return npu_error_set(e->err, NPU_ERR_INTERNAL, "codegen: %s: plan lost",
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
	struct plan p;
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
static npu_status pmm_emit(struct emitter *e, const struct npu_lop *l, const struct pmm *m,
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
static npu_status pmm_blob(struct emitter *e, const struct npu_lop *l, const struct pmm *m,
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

static npu_status gen_phases(struct emitter *e, const struct npu_lop *l, const struct plan *p)
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

/* ---- RESIZE ------------------------------------------------------------ */

struct resize_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct plan p;
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

static npu_status gen_resize(struct emitter *e, const struct npu_lop *l,
			     const struct plan *p)
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
	struct plan p;
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
	return emit_consts(e, c->slices[s].blob_off, c->slices[s].blob_size, c->p.sram_consts);
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
			.flags = (bias_es(q) ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q),
			.m = (uint32_t)(r1 - r0), .k = c->in->c, .n = n,
			.a_stride = c->in->c * npu_act_es(c->in), .out_stride = n * npu_act_es(c->out),
			.zp_a = (int16_t)c->in->q.zero_point, .zp_b = 0,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : c->out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
			.lut = out_lut_at(&e->prog->opts, q, c->p.sram_consts + sl->lut_off),
		};

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

static npu_status gen_matmul_act(struct emitter *e, const struct npu_lop *l,
				 const struct plan *p)
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

static npu_status gen_matmul(struct emitter *e, const struct npu_lop *l,
			     const struct plan *p)
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
	struct plan p;
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

static npu_status gen_flat(struct emitter *e, const struct npu_lop *l,
			   const struct plan *p)
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
	struct plan p;
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

static npu_status gen_reduce(struct emitter *e, const struct npu_lop *l,
			     const struct plan *p)
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
	struct plan p;
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

static npu_status gen_copy(struct emitter *e, const struct npu_lop *l,
			   const struct plan *p)
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

/* ---- Cost model -------------------------------------------------------- */

/*
 * Predicted cycles of one lop under a plan, before any code exists: the
 * tile loop of run_tiles() replayed on the two engines of the cycle model
 * (npu_hw.h): each instruction costs NPU_CYCLES_INSN_OVERHEAD plus its
 * formula, a SYNC one starts when both engines are free, nothing starts
 * before the last SYNC point. Exact in structure for CONV / POOL / ELTWISE
 * / LUT / SOFTMAX / LAYERNORM (the instructions run_tiles emits), a
 * roofline guess (max of compute and DMA) for the others.
 * Documentation/compiler.md ("Cost model") compares it with the cycle model.
 */
struct cost_engines {
	uint64_t dma, cmp, floor;
};

static void cost_insn(struct cost_engines *t, bool dma, bool sync, uint64_t cycles)
{
	uint64_t *own = dma ? &t->dma : &t->cmp, other = dma ? t->cmp : t->dma;
	uint64_t start = *own;

	if (sync && other > start)
		start = other;
	if (t->floor > start)
		start = t->floor;
	*own = start + NPU_CYCLES_INSN_OVERHEAD + cycles;
	if (sync)
		t->floor = start;
}

static uint64_t cost_dma(uint64_t rows, uint64_t row_bytes)
{
	return NPU_CYCLES_DMA_SETUP +
	       rows * ((row_bytes + NPU_DMA_BYTES_PER_CYCLE - 1) / NPU_DMA_BYTES_PER_CYCLE);
}

static uint64_t div_up64(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static uint64_t cost_end(const struct cost_engines *t)
{
	return t->dma > t->cmp ? t->dma : t->cmp;
}

static uint64_t cost_conv(const struct npu_segment_program *prog,
			  const struct npu_lop *l, const struct plan *p)
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
			  const struct npu_lop *l, const struct plan *p)
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
			    const struct npu_lop *l, const struct plan *p)
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
static uint64_t pmm_cost(const struct npu_segment_program *prog, const struct npu_lop *l,
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

static uint64_t plan_cost(const struct npu_segment_program *prog,
			  const struct npu_lop *l, const struct plan *p)
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
 * keeps the plan the cost model predicts fastest. The SRAM layout stays
 * the one planned for the largest tile (a smaller tile uses a prefix of
 * each buffer). opts.no_tile_search keeps the largest tile.
 */
static void tile_search(const struct npu_segment_program *prog,
			const struct npu_lop *l, struct plan *p)
{
	const struct npu_act *out = &prog->acts[l->out];
	uint64_t total, k, best_cost, c;
	uint32_t best = p->rows, last = p->rows, tries = 0;
	struct plan t = *p;

	if (prog->opts.no_tile_search || p->pmm)	/* pmm_plan() searched its own */
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
	best_cost = plan_cost(prog, l, p);
	for (k = div_up64(total, p->rows) + 1; k <= total && tries < 40;
	     k += k / 8 ? k / 8 : 1) {
		uint32_t r = (uint32_t)div_up64(total, k);

		if (r >= last)
			continue;
		last = r;
		tries++;
		t.rows = r;
		c = plan_cost(prog, l, &t);
		if (c < best_cost) {
			best_cost = c;
			best = r;
		}
	}
	p->rows = best;
}

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
 * pixel-major MATMULs may end a chain (pmm_tail_ok()). fusion_plan()
 * picks the chains whose predicted cycles beat the ops apart; opts.fuse OFF
 * turns it off.
 */
#define FUSE_MAX NPU_FUSE_MAX

static bool read_elsewhere(const struct npu_segment_program *prog, uint32_t a, size_t self);
static bool overlap(const struct npu_act *a, const struct npu_act *b);

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
 * The fusion planners' switches (prog->opts): fuse OFF, no fused group;
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

/* Whether act a is read by a lop other than lop 'self'. */
static bool read_elsewhere(const struct npu_segment_program *prog, uint32_t a, size_t self)
{
	size_t j;

	for (j = 0; j < prog->num_lops; j++) {
		const struct npu_lop *o = &prog->lops[j];

		if (j != self && (o->in == a || (npu_lop_reads_in2(o) && o->in2 == a)))
			return true;
	}
	return false;
}

static bool overlap(const struct npu_act *a, const struct npu_act *b)
{
	return a->offset < b->offset + npu_act_bytes(b) && b->offset < a->offset + npu_act_bytes(a);
}

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
static bool cat_plan(const struct npu_segment_program *prog, size_t i, uint32_t sram,
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

/* The Concat group starting at lop i (fusion_plan() chose it); *m its lops. */
static npu_status gen_concat(struct emitter *e, size_t i, uint32_t sram, size_t *m)
{
	struct cat_group g;
	struct tile_ops ops = {
		.consts = cat_consts, .load = cat_load,
		.compute = cat_compute, .store = cat_store,
	};
	uint32_t k;

	if (!cat_plan(e->prog, i, sram, &g))
		return npu_error_set(e->err, NPU_ERR_UNSUPPORTED, "codegen: %s: fusion plan changed",
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
static bool rz_elt_plan(const struct npu_segment_program *prog, size_t i, uint32_t sram,
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
 * (fusion_plan() chose it); *m: its lops. */
static npu_status gen_resize_elt(struct emitter *e, size_t i, uint32_t sram, size_t *m)
{
	struct rz_elt f;
	struct tile_ops ops = {
		.consts = rz_elt_consts, .load = rz_elt_load,
		.compute = rz_elt_compute, .store = rz_elt_store,
	};
	size_t off;

	if (!rz_elt_plan(e->prog, i, sram, &f))
		return npu_error_set(e->err, NPU_ERR_UNSUPPORTED, "codegen: %s: fusion plan changed",
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
static void fusion_plan(const struct npu_segment_program *prog, uint32_t sram,
			uint8_t *fuse)
{
	bool force = prog->opts.fuse == NPU_CODEGEN_FORCE;
	size_t i, L = prog->num_lops;
	uint64_t *best = NULL;
	uint8_t *len = NULL;

	if (prog->opts.fuse == NPU_CODEGEN_OFF)
		return;
	for (i = 0; i + 1 < L; i++) {
		struct rz_elt rz;
		struct cat_group cg;

		if (cat_plan(prog, i, sram, &cg)) {
			memset(fuse + i, 4, cg.lops);
			fuse[i] = 3;
			i += cg.lops - 1;
			continue;
		}
		if (rz_elt_plan(prog, i, sram, &rz)) {
			memset(fuse + i, 2, rz.lops);
			i += rz.lops - 1;
		}
	}
	best = calloc(L + 1, sizeof(*best));
	len = calloc(L + 1, 1);
	if (!best || !len)
		goto out;	/* no chains: each lop alone */
	for (i = L; i-- > 0;) {
		const struct npu_lop *l = &prog->lops[i];
		uint64_t alone = 0;
		struct plan p;
		char why[8];
		uint32_t n;

		len[i] = 1;
		if (!fuse[i] && (fuse_conv_ok(prog, l) || pmm_tail_ok(prog, l)) &&
		    plan_lop(prog, l, sram, &p, why, sizeof(why))) {
			tile_search(prog, l, &p);
			alone = plan_cost(prog, l, &p);
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
		.flags = (q->bias ? 0 : NPU_CONV_NO_BIAS) | out_lut_flag(&e->prog->opts, q),
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

/* The fused chain of n convs starting at lop i (fusion_plan() chose it). */
static npu_status gen_fused(struct emitter *e, size_t i, uint32_t n, uint32_t sram)
{
	const struct npu_segment_program *prog = e->prog;
	struct fused f;
	uint64_t cost;
	uint32_t t, k;
	size_t pm_blob_off = 0;
	npu_status st = NPU_OK;

	if (!fused_init(prog, i, n, &f) || !fused_search(prog, &f, sram, &cost))
		return npu_error_set(e->err, NPU_ERR_UNSUPPORTED, "codegen: %s: fusion plan changed",
				     prog->lops[i].name);
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
		     emit_consts(e, f.sl[k].blob_off, f.sl[k].blob_size, f.consts_at[k]);
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


/* ---- Constants prefetched across ops ------------------------------------ */

/*
 * An op starts with its constants: a BARRIER, so that they do not land on
 * SRAM the op before still uses, then their DMA, then its first input
 * tile; the MAC array idles through all of it and through the last store
 * of the op before. When the two ops' SRAM footprints fit side by side,
 * the op is moved to the other end of SRAM (every SRAM operand shifted)
 * and its constants' DMAs go in front of the previous op's final store,
 * without the BARRIER: the DMA engine loads the next layer's weights
 * while the MAC array computes this layer's last tile. Bytes are the
 * same; only the schedule changes. opts.no_prefetch turns it off.
 */


/* The SRAM bytes instructions [a, b) touch: [*lo, *hi), empty if none. */
static void sram_span(uint8_t *const *insn, size_t a, size_t b, uint32_t sram, uint32_t *lo,
		      uint32_t *hi)
{
	size_t j;
	unsigned int k;

	*lo = UINT32_MAX;
	*hi = 0;
	for (j = a; j < b; j++) {
		struct npu_isa_check chk = { .sram_size = sram };
		struct npu_op_footprint fp;

		if (npu_insn_check(insn[j], &chk, &fp) != NPU_JOB_OK)
			continue;	/* the stream was checked as it was built */
		for (k = 0; k < fp.num_reads + fp.num_writes; k++) {
			const struct npu_sram_range *r = k < fp.num_reads ? &fp.reads[k] :
							 &fp.writes[k - fp.num_reads];

			if (r->end <= r->begin)
				continue;
			if (r->begin < *lo)
				*lo = r->begin;
			if (r->end > *hi)
				*hi = r->end;
		}
	}
	if (*hi <= *lo)
		*lo = *hi = 0;
}

/*
 * Cycles of instructions list[0 .. n - 1] from idle engines, by the cycle
 * model (what the simulator's two-engine timing does; cost_insn()), less
 * the timestamps. An op between per-op profiling timestamps starts from
 * idle engines too.
 */
static uint64_t replay(uint8_t *const *list, size_t n, uint32_t sram)
{
	struct cost_engines t = { 0, 0, 0 };
	size_t j;

	for (j = 0; j < n; j++) {
		struct npu_isa_check chk = { .sram_size = sram };
		struct npu_op_footprint fp = { 0 };

		/* profiling timestamps left out, so that a profiled stream
		 * prefetches what the plain one does */
		if (list[j][0] == NPU_OP_TIMESTAMP ||
		    npu_insn_check(list[j], &chk, &fp) != NPU_JOB_OK)
			continue;	/* checked as the stream was built */
		cost_insn(&t, npu_insn_is_dma(list[j][0]), list[j][1] & NPU_INSN_SYNC, fp.cycles);
	}
	return cost_end(&t);
}

/* Whether instruction number j was emitted by emit_consts() (bsearch). */
static bool is_consts_load(const struct emitter *e, size_t j)
{
	size_t lo = 0, hi = e->num_const_loads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->const_loads[mid] == j)
			return true;
		if (e->const_loads[mid] < j)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Rewrites the segment's stream: ops start at stream offsets starts[0 ..
 * nops - 1], op i with lop first_lop[i]. Each op whose footprint fits
 * beside the previous one's is moved clear of it and its leading constant
 * loads go in front of the previous op's final SYNC store (prefetch_on());
 * its predicted cycles lose what those loads cost it (they overlap the
 * previous op's last tile).
 */
static npu_status prefetch_consts(struct emitter *e, const size_t *starts,
				  const size_t *first_lop, size_t nops)
{
	uint32_t sram = e->t->sram_size ? e->t->sram_size : NPU_SRAM_SIZE;
	size_t size, n = 0, cap = 0, i, j, *first = NULL, *at = NULL;
	const uint8_t *src = npu_cmdbuf_data(e->cb, &size);
	uint8_t *data = NULL, **insn = NULL, *fate = NULL;	/* 1 moved, 2 dropped */
	uint8_t **cand = NULL, **tmp = NULL;
	uint32_t prev_lo = 0, prev_hi = 0;
	npu_status st = NPU_OK;
	size_t off;

	if (e->prog->opts.no_prefetch || nops < 2 || e->const_loads_lost)
		return NPU_OK;
	data = malloc(size);
	first = calloc(nops + 1, sizeof(*first));
	at = malloc((nops + 1) * sizeof(*at));	/* op i's loads go before insn at[i] */
	if (!data || !first || !at)
		goto oom;
	for (i = 0; i <= nops; i++)
		at[i] = SIZE_MAX;
	memcpy(data, src, size);
	for (off = sizeof(struct npu_cs_header); off + sizeof(struct npu_insn_header) <= size;) {
		struct npu_insn_header h;

		memcpy(&h, data + off, sizeof(h));
		if (n == cap) {
			uint8_t **t = realloc(insn, (cap = cap ? 2 * cap : 1024) * sizeof(*t));

			if (!t)
				goto oom;
			insn = t;
		}
		insn[n++] = data + off;
		off += h.size;
	}
	fate = calloc(n + 1, 1);
	cand = malloc((n + 1) * sizeof(*cand));
	tmp = malloc((2 * n + 1) * sizeof(*tmp));
	if (!fate || !cand || !tmp)
		goto oom;
	for (i = 0, j = 0; i < nops; i++) {	/* instruction index of each op's start */
		while (j < n && (size_t)(insn[j] - data) < starts[i])
			j++;
		first[i] = j;
	}
	first[nops] = n;
	sram_span(insn, first[0], first[1], sram, &prev_lo, &prev_hi);
	for (i = 1; i < nops; i++) {
		uint32_t lo, hi, len, to;
		size_t k, last = SIZE_MAX, loads = 0;
		int64_t delta;

		sram_span(insn, first[i], first[i + 1], sram, &lo, &hi);
		lo &= ~(SRAM_ALIGN - 1);
		len = hi - lo;
		for (k = first[i - 1]; k < first[i]; k++)	/* the previous op's final store */
			if (insn[k][0] == NPU_OP_DMA_COPY && (insn[k][1] & NPU_INSN_SYNC))
				last = k;
		/* its leading constant loads, as many as the previous op's last
		 * tile hides: the previous op, replayed with them in front of its
		 * final store, must take no longer (then the per-op figures
		 * stay true too) */
		for (k = first[i]; last != SIZE_MAX && k < first[i + 1]; k++) {
			if (insn[k][0] == NPU_OP_BARRIER)
				continue;
			if (!is_consts_load(e, k))
				break;
			cand[loads++] = insn[k];
		}
		if (last != SIZE_MAX && loads) {
			size_t na = first[i] - first[i - 1], pos = last - first[i - 1];
			uint64_t before = replay(insn + first[i - 1], na, sram);

			for (; loads; loads--) {
				memcpy(tmp, insn + first[i - 1], pos * sizeof(*tmp));
				memcpy(tmp + pos, cand, loads * sizeof(*tmp));
				memcpy(tmp + pos + loads, insn + last, (na - pos) * sizeof(*tmp));
				if (replay(tmp, na + loads, sram) <= before)
					break;
			}
		}
		to = hi <= prev_lo || lo >= prev_hi ? lo :	/* clear already */
		     len <= (prev_lo & ~(SRAM_ALIGN - 1)) ? 0 :
		     ((sram - len) & ~(SRAM_ALIGN - 1)) >= prev_hi ?
		     (sram - len) & ~(SRAM_ALIGN - 1) : UINT32_MAX;
		if (!len || !loads || last == SIZE_MAX || to == UINT32_MAX) {
			prev_lo = lo;
			prev_hi = hi;
			continue;
		}
		delta = (int64_t)to - lo;
		for (k = first[i]; k < first[i + 1]; k++)
			npu_insn_shift_sram(insn[k], delta);
		{
			/* its prediction loses what it no longer waits for */
			uint64_t *pred = &e->res->lop_pred_cycles[first_lop[i]];
			uint64_t was = replay(insn + first[i], first[i + 1] - first[i], sram), now;
			size_t nb = 0;

			for (k = first[i]; loads; k++) {
				fate[k] = insn[k][0] == NPU_OP_BARRIER ? 2 : 1;
				loads -= fate[k] == 1;
			}
			for (k = first[i]; k < first[i + 1]; k++)
				if (!fate[k])
					tmp[nb++] = insn[k];
			now = replay(tmp, nb, sram);
			*pred = *pred > was - now ? *pred - (was - now) : 0;
		}
		at[i] = last;
		prev_lo = to;
		prev_hi = to + len;
	}
	npu_cmdbuf_reset(e->cb);
	for (j = 0; j < first[0] && !st; j++) {	/* before the first op: a timestamp */
		struct npu_insn_header h;

		memcpy(&h, insn[j], sizeof(h));
		st = npu_cmdbuf_raw(e->cb, insn[j], h.size);
	}
	for (i = 0; i < nops && !st; i++)
		for (j = first[i]; j < first[i + 1] && !st; j++) {
			struct npu_insn_header h;
			size_t k;

			if (i + 1 < nops && at[i + 1] == j)	/* the next op's loads */
				for (k = first[i + 1]; k < first[i + 2] && !st; k++)
					if (fate[k] == 1) {
						memcpy(&h, insn[k], sizeof(h));
						st = npu_cmdbuf_raw(e->cb, insn[k], h.size);
					}
			if (fate[j] || st)
				continue;
			memcpy(&h, insn[j], sizeof(h));
			st = npu_cmdbuf_raw(e->cb, insn[j], h.size);
		}
	if (st)
		st = npu_error_set(e->err, st, "codegen: prefetch: %s", npu_cmdbuf_last_error(e->cb));
	free(data);
	free(insn);
	free(first);
	free(at);
	free(fate);
	free(cand);
	free(tmp);
	return st;
oom:
	free(data);
	free(insn);
	free(first);
	free(at);
	free(fate);
	free(cand);
	free(tmp);
	return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: out of memory");
}

/* ---- Segment ----------------------------------------------------------- */

/*
 * Bytes the DMA instructions among the stream's bytes [from, to) move to
 * or from DRAM (device VA; an SRAM-to-SRAM copy moves none, a VA-to-VA
 * copy counts twice): what a lowered op costs the memory bus.
 */
static uint64_t stream_dram_bytes(const struct npu_cmdbuf *cb, size_t from, size_t to)
{
	size_t size;
	const uint8_t *p = npu_cmdbuf_data(cb, &size);
	uint64_t bytes = 0;

	if (to > size)
		to = size;
	while (p && from + sizeof(struct npu_insn_header) <= to) {
		struct npu_insn_header h;

		memcpy(&h, p + from, sizeof(h));
		if (h.size < sizeof(h) || from + h.size > to)
			break;
		if (h.opcode == NPU_OP_DMA_COPY && h.size >= sizeof(struct npu_insn_dma_copy)) {
			struct npu_insn_dma_copy d;

			memcpy(&d, p + from, sizeof(d));
			bytes += (uint64_t)d.rows * d.row_bytes *
				 ((d.src_space == NPU_SPACE_VA) + (d.dst_space == NPU_SPACE_VA));
		} else if (h.opcode == NPU_OP_DMA_FILL &&
			   h.size >= sizeof(struct npu_insn_dma_fill)) {
			struct npu_insn_dma_fill d;

			memcpy(&d, p + from, sizeof(d));
			if (d.dst_space == NPU_SPACE_VA)
				bytes += (uint64_t)d.rows * d.row_bytes;
		}
		from += h.size;
	}
	return bytes;
}

/*
 * After a fused group of m lops from lop i was emitted: its DRAM bytes
 * (the stream since stream_before) on the first lop (npu_op_stats.fused),
 * the others marked fused, and a profiling timestamp after each.
 */
static npu_status close_group(struct emitter *e, size_t i, size_t m, size_t stream_before)
{
	struct npu_codegen_result *result = e->res;
	size_t stream_after, k;

	npu_cmdbuf_data(e->cb, &stream_after);
	result->lop_dram_bytes[i] = stream_dram_bytes(e->cb, stream_before, stream_after);
	result->dram_bytes += result->lop_dram_bytes[i];
	result->fused_groups++;
	for (k = 1; k < m; k++)
		result->lop_fused[i + k] = 1;
	for (k = 0; k < m && e->t->profile_va; k++)
		if (npu_cmdbuf_timestamp(e->cb, NPU_INSN_SYNC, e->t->profile_va + 8 * (i + k + 1)))
			return emit_fail(e, NPU_ERR_INVALID_ARG);
	return NPU_OK;
}

npu_status npu_codegen_segment(const struct npu_segment_program *prog,
			       const struct npu_codegen_target *target,
			       struct npu_cmdbuf *cb,
			       struct npu_codegen_result *result,
			       struct npu_error *err)
{
	struct emitter e = { .prog = prog, .t = target, .cb = cb, .res = result, .err = err };
	npu_status st = NPU_OK;
	uint8_t *fuse = NULL;	/* fuse[i]: how lop i runs fused (fusion_plan()) */
	size_t *starts = NULL, *first_lop = NULL, nops = 0;	/* each op or group */
	size_t i;

	memset(result, 0, sizeof(*result));
	result->lop_macs = calloc(prog->num_lops + 1, sizeof(*result->lop_macs));
	result->lop_dram_bytes = calloc(prog->num_lops + 1, sizeof(*result->lop_dram_bytes));
	result->lop_pred_cycles = calloc(prog->num_lops + 1, sizeof(*result->lop_pred_cycles));
	result->lop_fused = calloc(prog->num_lops + 1, 1);
	if (!result->lop_macs || !result->lop_dram_bytes || !result->lop_pred_cycles ||
	    !result->lop_fused) {
		free(result->lop_macs);
		free(result->lop_dram_bytes);
		free(result->lop_pred_cycles);
		free(result->lop_fused);
		memset(result, 0, sizeof(*result));
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "codegen: out of memory");
	}
	if (target->profile_va &&
	    npu_cmdbuf_timestamp(cb, NPU_INSN_SYNC, target->profile_va) != NPU_OK)
		st = emit_fail(&e, NPU_ERR_INVALID_ARG);
	fuse = calloc(prog->num_lops + 1, 1);
	starts = calloc(prog->num_lops + 1, sizeof(*starts));
	first_lop = calloc(prog->num_lops + 1, sizeof(*first_lop));
	if (!fuse || !starts || !first_lop)
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "codegen: out of memory");
	else
		fusion_plan(prog, target->sram_size, fuse);
	for (i = 0; i < prog->num_lops && st == NPU_OK; i++) {
		const struct npu_lop *l = &prog->lops[i];
		uint64_t macs_before = result->macs;
		size_t stream_before;
		char why[160];
		struct plan p;

		npu_cmdbuf_data(cb, &stream_before);
		first_lop[nops] = i;
		starts[nops++] = stream_before;

		if (fuse && fuse[i] == 3) {	/* a Concat's copies as one tile loop */
			size_t m = 0;

			st = gen_concat(&e, i, target->sram_size, &m);
			if (st != NPU_OK)
				break;
			{
				struct cat_group cg;

				if (cat_plan(prog, i, target->sram_size, &cg))
					result->lop_pred_cycles[i] = cat_cost(&cg);
			}
			st = close_group(&e, i, m, stream_before);
			i += m - 1;
			continue;
		}
		if (fuse && fuse[i] == 2) {	/* [gate,] RESIZE, ELTWISE as one tile loop */
			size_t m = 0;

			st = gen_resize_elt(&e, i, target->sram_size, &m);
			if (st != NPU_OK)
				break;
			{
				struct rz_elt rz;

				if (rz_elt_plan(prog, i, target->sram_size, &rz))
					result->lop_pred_cycles[i] = rz_elt_cost(&rz);
			}
			st = close_group(&e, i, m, stream_before);
			i += m - 1;
			continue;
		}
		if (fuse && fuse[i] == 1) {	/* a conv chain as one tile loop */
			uint32_t n = 1, k;

			while (i + n < prog->num_lops && fuse[i + n] == 5)
				n++;
			st = gen_fused(&e, i, n, target->sram_size);
			if (st != NPU_OK)
				break;
			/* the group's figures go on its first lop (npu_op_stats.fused) */
			for (k = 0; k < n; k++)
				result->lop_macs[i] += conv_lop_macs(prog, &prog->lops[i + k]);
			result->macs += result->lop_macs[i];
			{
				struct fused f;
				uint64_t c = 0;

				if (fused_init(prog, i, n, &f) &&
				    fused_search(prog, &f, target->sram_size, &c))
					result->lop_pred_cycles[i] = c;
			}
			st = close_group(&e, i, n, stream_before);
			i += n - 1;
			continue;
		}
		e.lop = l;
		if (!plan_lop(prog, l, target->sram_size, &p, why, sizeof(why))) {
			st = npu_error_set(err, NPU_ERR_UNSUPPORTED, "codegen: %s: %s",
					   l->name, why);
			break;
		}
		tile_search(prog, l, &p);
		result->lop_pred_cycles[i] = plan_cost(prog, l, &p);
		switch (l->kind) {
		case NPU_LOP_CONV:
		case NPU_LOP_POOL:
			st = gen_conv_or_pool(&e, l, &p);
			break;
		case NPU_LOP_MATMUL:
			st = l->matmul.batch ? gen_matmul_act(&e, l, &p) : gen_matmul(&e, l, &p);
			break;
		case NPU_LOP_ROWS:
			if (l->rows.opcode == NPU_OP_REDUCE) {
				st = gen_reduce(&e, l, &p);
				break;
			}
			/* fall through */
		case NPU_LOP_ELTWISE:
		case NPU_LOP_LUT:
			st = gen_flat(&e, l, &p);
			break;
		case NPU_LOP_RESIZE:
			st = gen_resize(&e, l, &p);
			break;
		case NPU_LOP_COPY:
			st = gen_copy(&e, l, &p);
			break;
		}
		result->lop_macs[i] = result->macs - macs_before;
		if (st == NPU_OK) {
			size_t stream_after;

			npu_cmdbuf_data(cb, &stream_after);
			result->lop_dram_bytes[i] = stream_dram_bytes(cb, stream_before,
								      stream_after);
			result->dram_bytes += result->lop_dram_bytes[i];
		}
		if (st == NPU_OK && target->profile_va &&
		    npu_cmdbuf_timestamp(cb, NPU_INSN_SYNC, target->profile_va + 8 * (i + 1)) != NPU_OK)
			st = emit_fail(&e, NPU_ERR_INVALID_ARG);
	}
	free(fuse);
	if (st == NPU_OK)
		st = prefetch_consts(&e, starts, first_lop, nops);
	free(e.const_loads);
	free(starts);
	free(first_lop);
	if (st != NPU_OK) {
		free(e.blob.data);
		free(result->lop_macs);
		free(result->lop_dram_bytes);
		free(result->lop_pred_cycles);
		free(result->lop_fused);
		memset(result, 0, sizeof(*result));
		return st;
	}
	result->consts = e.blob.data;
	result->consts_size = e.blob.size;
	result->ideal_mac_cycles = (result->macs + NPU_MAC_ROWS * NPU_MAC_COLS - 1) /
				   (NPU_MAC_ROWS * NPU_MAC_COLS);
	result->instructions = npu_cmdbuf_count(cb);
	return NPU_OK;
}

void npu_codegen_result_free(struct npu_codegen_result *result)
{
	free(result->consts);
	free(result->lop_macs);
	free(result->lop_dram_bytes);
	free(result->lop_pred_cycles);
	free(result->lop_fused);
	memset(result, 0, sizeof(*result));
}
