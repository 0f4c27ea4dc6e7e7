// SPDX-License-Identifier: MIT
/*
 * npu_ops_check.c - validation, SRAM footprint and cycle model of the
 * compute instructions: the per-op half of the one ISA validator
 * (npu_isa.h; the header, DMA and TIMESTAMP half is isa_check.c). The
 * order of the checks is part of the contract (Documentation/isa.md):
 * encoding (BAD_ENCODING), then parameters (BAD_PARAM), then SRAM bounds
 * (SRAM_BOUNDS), so one malformed instruction always gets the same status.
 * Each failure also names its field and says why, for the host's messages.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npu_ops_internal.h"

#define ENC	NPU_JOB_ERR_BAD_ENCODING
#define PARAM	NPU_JOB_ERR_BAD_PARAM
#define BOUNDS	NPU_JOB_ERR_SRAM_BOUNDS

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

uint32_t npu_isa_fail(struct npu_isa_check *c, uint32_t status,
		      const char *field, const char *fmt, ...)
{
	va_list ap;

	if (!c)
		return status;
	c->field = field;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	return status;
}

uint32_t npu_isa_sram_size(const struct npu_isa_check *c)
{
	return c && c->sram_size ? c->sram_size : NPU_SRAM_SIZE;
}

static uint32_t check_hdr(const struct npu_insn_header *hdr, uint8_t opcode,
			  size_t size, struct npu_isa_check *c)
{
	if (hdr->opcode != opcode)
		return npu_isa_fail(c, NPU_JOB_ERR_BAD_OPCODE, "header.opcode",
				    "header.opcode 0x%02x is not %s", hdr->opcode,
				    npu_insn_name(opcode));
	if (hdr->size != size)
		return npu_isa_fail(c, ENC, "header.size",
				    "size field %u, a %s is %zu bytes", hdr->size,
				    npu_insn_name(opcode), size);
	if ((hdr->flags & NPU_INSN_I16) && !npu_insn_i16_ok(opcode))
		return npu_isa_fail(c, ENC, "header.flags",
				    "header flag I16 (int16 activations) on %s, which "
				    "has no int16 mode", npu_insn_name(opcode));
	if (hdr->flags & ~(NPU_INSN_SYNC | NPU_INSN_I16))
		return npu_isa_fail(c, ENC, "header.flags",
				    "header flags 0x%x has unknown bits", hdr->flags);
	if (hdr->reserved)
		return npu_isa_fail(c, ENC, "header.reserved",
				    "reserved header field is not 0");
	return NPU_JOB_OK;
}

static uint32_t reserved_zero(struct npu_isa_check *c, const char *field,
			      uint64_t v)
{
	if (v)
		return npu_isa_fail(c, ENC, field, "reserved field %s is not 0", field);
	return NPU_JOB_OK;
}

static uint32_t nonzero(struct npu_isa_check *c, const char *field, uint64_t v)
{
	if (!v)
		return npu_isa_fail(c, PARAM, field, "%s is 0", field);
	return NPU_JOB_OK;
}

static uint32_t zp_chk(struct npu_isa_check *c, const char *field, int32_t zp)
{
	if (zp < -128 || zp > 127)
		return npu_isa_fail(c, PARAM, field, "%s %d is outside -128..127",
				    field, zp);
	return NPU_JOB_OK;
}

/*
 * An activation's zero point: -128..127 for int8; int16 activations are
 * symmetric (NPU_INSN_I16), so 0.
 */
static uint32_t zp_act_chk(struct npu_isa_check *c, const char *field,
			   int32_t zp, int i16)
{
	if (i16 && zp)
		return npu_isa_fail(c, PARAM, field,
				    "%s %d is not 0: int16 activations (I16) are "
				    "symmetric", field, zp);
	return zp_chk(c, field, zp);
}

/* Bytes per activation element. */
static uint32_t act_bytes(const struct npu_insn_header *hdr)
{
	return (hdr->flags & NPU_INSN_I16) ? 2 : 1;
}

/* Vector lanes: the engine moves bytes, int16 elements take two. */
static uint32_t vec_lanes(const struct npu_insn_header *hdr)
{
	return (hdr->flags & NPU_INSN_I16) ? NPU_VECTOR_LANES / 2 : NPU_VECTOR_LANES;
}

static uint32_t act_chk(struct npu_isa_check *c, int8_t lo, int8_t hi)
{
	if (lo > hi)
		return npu_isa_fail(c, PARAM, "act_min", "act_min %d > act_max %d",
				    lo, hi);
	return NPU_JOB_OK;
}

#define TRY(x) do { uint32_t st_ = (x); if (st_) return st_; } while (0)

/*
 * [base, base + a * b * cc) must lie in SRAM; the product is checked for
 * 64-bit overflow first.
 */
static uint32_t sram_range(struct npu_isa_check *c, const char *field,
			   uint64_t base, uint64_t a, uint64_t b, uint64_t cc,
			   struct npu_sram_range *r)
{
	uint32_t sram = npu_isa_sram_size(c);
	uint64_t len;

	if (__builtin_mul_overflow(a, b, &len) ||
	    __builtin_mul_overflow(len, cc, &len))
		return npu_isa_fail(c, BOUNDS, field,
				    "%s size %" PRIu64 " x %" PRIu64 " x %" PRIu64
				    " overflows 64 bits", field, a, b, cc);
	if (base > sram || len > sram - base)
		return npu_isa_fail(c, BOUNDS, field,
				    "%s [%" PRIu64 ", %" PRIu64 ") exceeds SRAM size %u",
				    field, base,
				    len > UINT64_MAX - base ? UINT64_MAX : base + len,
				    sram);
	r->begin = (uint32_t)base;
	r->end = (uint32_t)(base + len);
	return NPU_JOB_OK;
}

/* A strided [h][w][ch] view; (h - 1) * row_stride fits 64 bits always. */
static uint32_t tensor_range(struct npu_isa_check *c, const char *field,
			     uint32_t base, uint32_t h, uint32_t w, uint32_t ch,
			     uint32_t row_stride, uint32_t pixel_stride,
			     struct npu_sram_range *r)
{
	return sram_range(c, field, base,
			  npu_tensor_span(h, w, ch, row_stride, pixel_stride),
			  1, 1, r);
}

/*
 * Pixels may not overlap inside a tensor (pixel stride >= channels, row
 * stride >= one row of pixels): overlapping outputs would make the result
 * depend on the order the hardware writes in.
 */
static uint32_t layout_chk(struct npu_isa_check *c, const char *rs_name,
			   const char *ps_name, const char *c_name, uint32_t h,
			   uint32_t w, uint32_t ch, uint32_t row_stride,
			   uint32_t pixel_stride)
{
	if (pixel_stride < ch)
		return npu_isa_fail(c, PARAM, ps_name, "%s %u < %s %u", ps_name,
				    pixel_stride, c_name, ch);
	if (h > 1 && (uint64_t)row_stride < (uint64_t)w * pixel_stride)
		return npu_isa_fail(c, PARAM, rs_name,
				    "%s %u < width %u x pixel stride %u", rs_name,
				    row_stride, w, pixel_stride);
	return NPU_JOB_OK;
}

/*
 * One spatial axis: out == (in' + pads - dil * (k - 1) - 1) / stride + 1,
 * with in' = (in - 1) * (ins + 1) + 1 the input after zero insertion.
 */
static uint32_t out_dim_chk(struct npu_isa_check *c, const char *field,
			    uint32_t in, uint32_t ins, uint32_t pad0,
			    uint32_t pad1, uint32_t k, uint32_t stride,
			    uint32_t dil, uint32_t out)
{
	uint64_t padded = (uint64_t)(in - 1) * (ins + 1) + 1 + pad0 + pad1;
	uint64_t extent = (uint64_t)dil * (k - 1) + 1;
	uint64_t want;

	if (extent > padded)
		return npu_isa_fail(c, PARAM, field,
				    "kernel extent %" PRIu64 " exceeds padded input %"
				    PRIu64 " (%s)", extent, padded, field);
	want = (padded - extent) / stride + 1;
	if (want != out)
		return npu_isa_fail(c, PARAM, field,
				    "%s is %u, expected %" PRIu64 " from the input size, "
				    "zero insertion, padding, kernel, dilation and stride",
				    field, out, want);
	return NPU_JOB_OK;
}

/* Footprint of the quant table: n mults then n shifts, 5 bytes each. */
static uint32_t quant_range(struct npu_isa_check *c, uint32_t quant,
			    uint32_t flags, uint32_t n, struct npu_sram_range *r)
{
	return sram_range(c, "quant", quant,
			  (flags & NPU_QUANT_PER_TENSOR) ? 1 : n, 5, 1, r);
}

static uint32_t gcd(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * Kernel taps per axis the MAC array runs for one output pixel: all of
 * them without zero insertion; with it, the engine splits the output into
 * phases and skips taps that land on inserted zeros, so the densest phase
 * sets the pace. Taps kh * dil repeat their residue mod (ins + 1) every
 * (ins + 1) / gcd(dil, ins + 1) taps.
 */
uint32_t npu_conv_taps(uint32_t k, uint32_t dil, uint32_t ins)
{
	uint32_t period = (ins + 1) / gcd(dil, ins + 1);

	return (uint32_t)div_up(k, period);
}

/* The MAC array modes of npu_hw.h (NPU_CONV_ARRAY()): rows, cols, parts. */
static const struct npu_array_shape array_modes[NPU_ARRAY_NUM_MODES] = {
	{ 32, 32, 1 }, { 32, 16, 2 }, { 16, 32, 2 },
	{ 32, 8, 4 }, { 16, 16, 4 }, { 8, 32, 4 },
};

/* The table's 8 x 8 blocks tile this array. */
_Static_assert(NPU_MAC_ROWS == 32 && NPU_MAC_COLS == 32,
	       "array modes are defined for a 32 x 32 array");

int npu_array_shape(uint32_t mode, int i16, struct npu_array_shape *shape)
{
	int ret = mode < NPU_ARRAY_NUM_MODES ? 0 : -1;

	*shape = array_modes[ret ? 0 : mode];
	if (i16)
		shape->rows /= 2;
	return ret;
}

uint64_t npu_conv2d_cycles(uint64_t pixels, uint64_t taps, uint32_t groups,
			   uint32_t in_c, uint32_t out_c, int i16, uint32_t mode)
{
	struct npu_array_shape a;

	npu_array_shape(mode, i16, &a);
	if (groups == in_c && groups == out_c)	/* rows carry pixels */
		return div_up(pixels, (uint64_t)a.rows * a.parts) * taps *
		       div_up(out_c, a.cols);
	return div_up(pixels, a.parts) * taps * groups *
	       div_up(in_c / groups, a.rows) * div_up(out_c / groups, a.cols);
}

uint32_t npu_conv2d_fastest_mode(uint64_t pixels, uint64_t taps,
				 uint32_t groups, uint32_t in_c,
				 uint32_t out_c, int i16)
{
	uint32_t mode, best = 0;
	uint64_t best_cycles = UINT64_MAX;

	for (mode = 0; mode < NPU_ARRAY_NUM_MODES; mode++) {
		uint64_t cyc = npu_conv2d_cycles(pixels, taps, groups, in_c,
						 out_c, i16, mode);

		if (cyc < best_cycles) {
			best_cycles = cyc;
			best = mode;
		}
	}
	return best;
}

uint64_t npu_matmul_cycles(uint64_t m, uint64_t k, uint64_t n, int i16,
			   uint32_t mode)
{
	struct npu_array_shape a;

	npu_array_shape(mode, i16, &a);
	return div_up(m, a.parts) * div_up(k, a.rows) * div_up(n, a.cols);
}

uint32_t npu_matmul_fastest_mode(uint64_t m, uint64_t k, uint64_t n, int i16)
{
	uint32_t mode, best = 0;
	uint64_t best_cycles = UINT64_MAX;

	for (mode = 0; mode < NPU_ARRAY_NUM_MODES; mode++) {
		uint64_t cyc = npu_matmul_cycles(m, k, n, i16, mode);

		if (cyc < best_cycles) {
			best_cycles = cyc;
			best = mode;
		}
	}
	return best;
}

/*
 * The flags word of CONV2D / MATMUL, with its output LUT (ISA 1.4) and
 * array mode (ISA 1.5): the table offset means something only with
 * NPU_CONV_OUT_LUT, so it is 0 without (as the reserved word it was), and
 * the stage is int8 only; modes 6 and 7 do not exist.
 */
static uint32_t sparse_chk(struct npu_isa_check *c,
			   const struct npu_insn_header *hdr, uint32_t flags);

static uint32_t out_lut_chk(struct npu_isa_check *c,
			    const struct npu_insn_header *hdr, uint32_t flags,
			    uint32_t lut)
{
	if (flags & ~(NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS | NPU_CONV_OUT_LUT |
		      NPU_CONV_ARRAY_MASK | NPU_CONV_SPARSE_MASK))
		return npu_isa_fail(c, ENC, "flags", "flags 0x%x has unknown bits",
				    flags);
	if ((flags & NPU_CONV_ARRAY_MASK) >> NPU_CONV_ARRAY_SHIFT >=
	    NPU_ARRAY_NUM_MODES)
		return npu_isa_fail(c, ENC, "flags",
				    "flags 0x%x: array mode %u does not exist "
				    "(0..%u)", flags,
				    (flags & NPU_CONV_ARRAY_MASK) >> NPU_CONV_ARRAY_SHIFT,
				    NPU_ARRAY_NUM_MODES - 1);
	if (!(flags & NPU_CONV_OUT_LUT) && lut)
		return npu_isa_fail(c, ENC, "lut",
				    "lut is 0x%x without flag OUT_LUT (must be 0)", lut);
	if ((flags & NPU_CONV_OUT_LUT) && (hdr->flags & NPU_INSN_I16))
		return npu_isa_fail(c, ENC, "flags",
				    "flag OUT_LUT with header flag I16: the output "
				    "LUT is int8 only");
	return sparse_chk(c, hdr, flags);
}

/*
 * N:M sparse weights (ISA 1.6): m = 0 is dense (n must be 0), else
 * 2 <= m <= 8 and 1 <= n < m; int8 activations only.
 */
static uint32_t sparse_chk(struct npu_isa_check *c,
			   const struct npu_insn_header *hdr, uint32_t flags)
{
	uint32_t n = NPU_SPARSE_N(flags), m = NPU_SPARSE_M(flags);

	if (!m && !n)
		return NPU_JOB_OK;
	if (m < 2 || m > NPU_SPARSE_MAX_M || n < 1 || n >= m)
		return npu_isa_fail(c, ENC, "flags",
				    "flags 0x%x: sparse %u:%u is not N:M with "
				    "2 <= M <= %u and 1 <= N < M", flags, n, m,
				    NPU_SPARSE_MAX_M);
	if (hdr->flags & NPU_INSN_I16)
		return npu_isa_fail(c, ENC, "flags",
				    "sparse weights (%u:%u) with header flag I16: "
				    "the sparse form is int8 only", n, m);
	return NPU_JOB_OK;
}

/* The weight operand's bytes: dense rows x k, or the N:M form of it. */
static uint32_t weight_range(struct npu_isa_check *c, const char *field,
			     uint32_t base, uint32_t flags, uint64_t rows,
			     uint64_t k, struct npu_sram_range *r)
{
	uint32_t n = NPU_SPARSE_N(flags), m = NPU_SPARSE_M(flags);

	if (!m)
		return sram_range(c, field, base, rows, k, 1, r);
	return sram_range(c, field, base, 1, 1, npu_sparse_bytes(rows, k, n, m), r);
}

/* The output LUT's 256-byte table, a read of the op, when the flag is set. */
static uint32_t out_lut_range(struct npu_isa_check *c, uint32_t flags,
			      uint32_t lut, struct npu_op_footprint *f)
{
	if (!(flags & NPU_CONV_OUT_LUT))
		return NPU_JOB_OK;
	TRY(sram_range(c, "lut", lut, 256, 1, 1, &f->reads[f->num_reads]));
	f->num_reads++;
	return NPU_JOB_OK;
}

uint32_t npu_op_conv2d_validate(const struct npu_insn_conv2d *in,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };
	uint32_t cin_g;
	uint64_t taps;
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = act_bytes(&in->hdr);

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(check_hdr(&in->hdr, NPU_OP_CONV2D, sizeof(*in), c));
	TRY(reserved_zero(c, "reserved0", in->reserved0));
	TRY(out_lut_chk(c, &in->hdr, in->flags, in->lut));

	TRY(nonzero(c, "in_h", in->in_h));
	TRY(nonzero(c, "in_w", in->in_w));
	TRY(nonzero(c, "in_c", in->in_c));
	TRY(nonzero(c, "out_c", in->out_c));
	TRY(nonzero(c, "out_h", in->out_h));
	TRY(nonzero(c, "out_w", in->out_w));
	TRY(nonzero(c, "k_h", in->k_h));
	TRY(nonzero(c, "k_w", in->k_w));
	TRY(nonzero(c, "stride_h", in->stride_h));
	TRY(nonzero(c, "stride_w", in->stride_w));
	TRY(nonzero(c, "dil_h", in->dil_h));
	TRY(nonzero(c, "dil_w", in->dil_w));
	TRY(nonzero(c, "groups", in->groups));
	if (in->in_c % in->groups || in->out_c % in->groups)
		return npu_isa_fail(c, PARAM, "groups",
				    "groups %u does not divide in_c %u and out_c %u",
				    in->groups, in->in_c, in->out_c);
	TRY(zp_act_chk(c, "zp_in", in->zp_in, i16));
	TRY(zp_chk(c, "zp_w", in->zp_w));
	TRY(zp_act_chk(c, "zp_out", in->zp_out, i16));
	TRY(act_chk(c, in->act_min, in->act_max));
	if (NPU_SPARSE_M(in->flags)) {
		uint32_t m = NPU_SPARSE_M(in->flags);

		if ((in->in_c / in->groups) % m)
			return npu_isa_fail(c, PARAM, "flags",
					    "sparse %u:%u does not divide the %u input "
					    "channels per group", NPU_SPARSE_N(in->flags),
					    m, in->in_c / in->groups);
		if (in->ins_h || in->ins_w)
			return npu_isa_fail(c, PARAM, "ins_h",
					    "sparse weights with zero insertion are "
					    "not defined");
	}
	TRY(out_dim_chk(c, "out_h", in->in_h, in->ins_h, in->pad_top,
			in->pad_bottom, in->k_h, in->stride_h, in->dil_h,
			in->out_h));
	TRY(out_dim_chk(c, "out_w", in->in_w, in->ins_w, in->pad_left,
			in->pad_right, in->k_w, in->stride_w, in->dil_w,
			in->out_w));
	TRY(layout_chk(c, "in_row_stride", "in_pixel_stride", "in_c", in->in_h,
		       in->in_w, in->in_c * es, in->in_row_stride,
		       in->in_pixel_stride));
	TRY(layout_chk(c, "out_row_stride", "out_pixel_stride", "out_c",
		       in->out_h, in->out_w, in->out_c * es, in->out_row_stride,
		       in->out_pixel_stride));

	cin_g = in->in_c / in->groups;
	TRY(tensor_range(c, "input", in->input, in->in_h, in->in_w,
			 in->in_c * es, in->in_row_stride, in->in_pixel_stride,
			 &f.reads[0]));
	TRY(weight_range(c, "weight", in->weight, in->flags,
			 (uint64_t)in->out_c * in->k_h * in->k_w, cin_g, &f.reads[1]));
	TRY(quant_range(c, in->quant, in->flags, in->out_c, &f.reads[2]));
	TRY(tensor_range(c, "output", in->output, in->out_h, in->out_w,
			 in->out_c * es, in->out_row_stride, in->out_pixel_stride,
			 &f.writes[0]));
	f.num_reads = 3;
	if (!(in->flags & NPU_CONV_NO_BIAS)) {
		/* int32 bias, int64 with int16 activations (64-bit accumulator) */
		TRY(sram_range(c, "bias", in->bias, in->out_c, 4 * es, 1,
			       &f.reads[3]));
		f.num_reads = 4;
	}
	TRY(out_lut_range(c, in->flags, in->lut, &f));
	f.num_writes = 1;

	/* Sizes are bounded by SRAM now, so none of these products overflow. */
	taps = (uint64_t)npu_conv_taps(in->k_h, in->dil_h, in->ins_h) *
	       npu_conv_taps(in->k_w, in->dil_w, in->ins_w);
	f.cycles = npu_conv2d_cycles((uint64_t)in->out_h * in->out_w, taps,
				     in->groups, in->in_c, in->out_c, i16,
				     (in->flags & NPU_CONV_ARRAY_MASK) >>
				     NPU_CONV_ARRAY_SHIFT);
	if (NPU_SPARSE_M(in->flags)) {
		/* The array's rows carry kept weights; every tile counted here. */
		struct npu_array_shape a;
		uint64_t kept_g = cin_g / NPU_SPARSE_M(in->flags) *
				  NPU_SPARSE_N(in->flags);

		npu_array_shape((in->flags & NPU_CONV_ARRAY_MASK) >>
				NPU_CONV_ARRAY_SHIFT, 0, &a);
		f.cycles = div_up((uint64_t)in->out_h * in->out_w, a.parts) * taps *
			   in->groups * div_up(kept_g, a.rows) *
			   div_up(in->out_c / in->groups, a.cols);
	}
	f.macs = (uint64_t)in->out_h * in->out_w * in->out_c * taps * cin_g;
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_matmul_validate(const struct npu_insn_matmul *in,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = act_bytes(&in->hdr);

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(check_hdr(&in->hdr, NPU_OP_MATMUL, sizeof(*in), c));
	TRY(out_lut_chk(c, &in->hdr, in->flags, in->lut));
	TRY(nonzero(c, "m", in->m));
	TRY(nonzero(c, "k", in->k));
	TRY(nonzero(c, "n", in->n));
	TRY(zp_act_chk(c, "zp_a", in->zp_a, i16));
	TRY(zp_chk(c, "zp_b", in->zp_b));
	TRY(zp_act_chk(c, "zp_out", in->zp_out, i16));
	TRY(act_chk(c, in->act_min, in->act_max));
	if (NPU_SPARSE_M(in->flags) && in->k % NPU_SPARSE_M(in->flags))
		return npu_isa_fail(c, PARAM, "flags",
				    "sparse %u:%u does not divide k %u",
				    NPU_SPARSE_N(in->flags), NPU_SPARSE_M(in->flags),
				    in->k);
	/* Strides are bytes; rows hold k (n) elements of es bytes. */
	if (in->m > 1 && in->a_stride < (uint64_t)in->k * es)
		return npu_isa_fail(c, PARAM, "a_stride", "a_stride %u < k %u x %u bytes",
				    in->a_stride, in->k, es);
	if (in->m > 1 && in->out_stride < (uint64_t)in->n * es)
		return npu_isa_fail(c, PARAM, "out_stride",
				    "out_stride %u < n %u x %u bytes",
				    in->out_stride, in->n, es);

	TRY(sram_range(c, "a", in->a, 1, 1,
		       (uint64_t)(in->m - 1) * in->a_stride + (uint64_t)in->k * es,
		       &f.reads[0]));
	TRY(weight_range(c, "b", in->b, in->flags, in->n, in->k, &f.reads[1]));
	TRY(quant_range(c, in->quant, in->flags, in->n, &f.reads[2]));
	TRY(sram_range(c, "output", in->output, 1, 1,
		       (uint64_t)(in->m - 1) * in->out_stride + (uint64_t)in->n * es,
		       &f.writes[0]));
	f.num_reads = 3;
	if (!(in->flags & NPU_CONV_NO_BIAS)) {
		TRY(sram_range(c, "bias", in->bias, in->n, 4 * es, 1, &f.reads[3]));
		f.num_reads = 4;
	}
	TRY(out_lut_range(c, in->flags, in->lut, &f));
	f.num_writes = 1;
	f.cycles = npu_matmul_cycles(in->m, NPU_SPARSE_M(in->flags) ?
				     in->k / NPU_SPARSE_M(in->flags) *
				     NPU_SPARSE_N(in->flags) : in->k, in->n, i16,
				     (in->flags & NPU_CONV_ARRAY_MASK) >>
				     NPU_CONV_ARRAY_SHIFT);
	f.macs = (uint64_t)in->m * in->k * in->n;
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_pool_validate(const struct npu_insn_pool *in,
			      struct npu_op_footprint *fp,
			      struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };
	int i16 = !!(in->hdr.flags & NPU_INSN_I16);
	uint32_t es = act_bytes(&in->hdr);

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(check_hdr(&in->hdr, NPU_OP_POOL, sizeof(*in), c));
	TRY(reserved_zero(c, "reserved0[0]", in->reserved0[0]));
	TRY(reserved_zero(c, "reserved0[1]", in->reserved0[1]));
	TRY(reserved_zero(c, "reserved1", in->reserved1));
	if (in->flags & ~NPU_POOL_COUNT_PAD)
		return npu_isa_fail(c, ENC, "flags", "flags 0x%x has unknown bits",
				    in->flags);
	if (in->mode != NPU_POOL_MAX && in->mode != NPU_POOL_AVG)
		return npu_isa_fail(c, PARAM, "mode",
				    "mode %u is not 0 (max) or 1 (avg)", in->mode);
	TRY(nonzero(c, "c", in->c));
	TRY(nonzero(c, "in_h", in->in_h));
	TRY(nonzero(c, "in_w", in->in_w));
	TRY(nonzero(c, "out_h", in->out_h));
	TRY(nonzero(c, "out_w", in->out_w));
	TRY(nonzero(c, "k_h", in->k_h));
	TRY(nonzero(c, "k_w", in->k_w));
	TRY(nonzero(c, "stride_h", in->stride_h));
	TRY(nonzero(c, "stride_w", in->stride_w));
	TRY(zp_act_chk(c, "zp_in", in->zp_in, i16));
	TRY(zp_act_chk(c, "zp_out", in->zp_out, i16));
	TRY(act_chk(c, in->act_min, in->act_max));
	/* A pad below the window size keeps a real pixel in every window. */
	if (in->pad_top >= in->k_h || in->pad_bottom >= in->k_h)
		return npu_isa_fail(c, PARAM, "pad_top",
				    "pad_top %u / pad_bottom %u not below k_h %u",
				    in->pad_top, in->pad_bottom, in->k_h);
	if (in->pad_left >= in->k_w || in->pad_right >= in->k_w)
		return npu_isa_fail(c, PARAM, "pad_left",
				    "pad_left %u / pad_right %u not below k_w %u",
				    in->pad_left, in->pad_right, in->k_w);
	TRY(out_dim_chk(c, "out_h", in->in_h, 0, in->pad_top, in->pad_bottom,
			in->k_h, in->stride_h, 1, in->out_h));
	TRY(out_dim_chk(c, "out_w", in->in_w, 0, in->pad_left, in->pad_right,
			in->k_w, in->stride_w, 1, in->out_w));
	TRY(layout_chk(c, "in_row_stride", "in_pixel_stride", "c", in->in_h,
		       in->in_w, in->c * es, in->in_row_stride, in->in_pixel_stride));
	TRY(layout_chk(c, "out_row_stride", "out_pixel_stride", "c", in->out_h,
		       in->out_w, in->c * es, in->out_row_stride,
		       in->out_pixel_stride));
	TRY(tensor_range(c, "input", in->input, in->in_h, in->in_w, in->c * es,
			 in->in_row_stride, in->in_pixel_stride, &f.reads[0]));
	TRY(tensor_range(c, "output", in->output, in->out_h, in->out_w,
			 in->c * es, in->out_row_stride, in->out_pixel_stride,
			 &f.writes[0]));
	f.num_reads = 1;
	f.num_writes = 1;
	f.cycles = div_up((uint64_t)in->out_h * in->out_w * in->c * in->k_h *
			  in->k_w, vec_lanes(&in->hdr));
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_eltwise_validate(const struct npu_insn_eltwise *in,
				 struct npu_op_footprint *fp,
				 struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };
	uint32_t b_len;
	uint32_t types = npu_elt_types(in);
	uint32_t es_a = types & NPU_ELT_A16 ? 2 : 1, es_b = types & NPU_ELT_B16 ? 2 : 1;
	uint32_t es_o = types & NPU_ELT_OUT16 ? 2 : 1;

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(check_hdr(&in->hdr, NPU_OP_ELTWISE, sizeof(*in), c));
	if (in->types & ~(NPU_ELT_A16 | NPU_ELT_B16 | NPU_ELT_OUT16))
		return npu_isa_fail(c, ENC, "types", "types 0x%x has unknown bits",
				    in->types);
	if ((in->hdr.flags & NPU_INSN_I16) && in->types)
		return npu_isa_fail(c, ENC, "types",
				    "types 0x%x is not 0 with header flag I16 (all int16)",
				    in->types);
	if (in->mode != NPU_ELT_ADD && in->mode != NPU_ELT_MUL)
		return npu_isa_fail(c, PARAM, "mode",
				    "mode %u is not 0 (add) or 1 (mul)", in->mode);
	if (in->bcast > NPU_BCAST_SCALAR)
		return npu_isa_fail(c, PARAM, "bcast",
				    "bcast %u is not 0 (none), 1 (channel) or 2 (scalar)",
				    in->bcast);
	TRY(nonzero(c, "count", in->count));
	if (in->shift < 1 || in->shift > 62)
		return npu_isa_fail(c, PARAM, "shift", "shift %u is outside 1..62",
				    in->shift);
	/* Fields a mode does not use must be zero, like reserved ones. */
	if (in->bcast == NPU_BCAST_CHANNEL && !in->channels)
		return npu_isa_fail(c, PARAM, "channels",
				    "channels is 0 with bcast=channel");
	if (in->bcast != NPU_BCAST_CHANNEL && in->channels)
		return npu_isa_fail(c, PARAM, "channels",
				    "channels %u is not 0 without bcast=channel",
				    in->channels);
	if (in->mode == NPU_ELT_MUL && in->mult_b)
		return npu_isa_fail(c, PARAM, "mult_b",
				    "mult_b %d is not 0 with mode=mul", in->mult_b);
	TRY(zp_act_chk(c, "zp_a", in->zp_a, es_a == 2));
	TRY(zp_act_chk(c, "zp_b", in->zp_b, es_b == 2));
	TRY(zp_act_chk(c, "zp_out", in->zp_out, es_o == 2));
	TRY(act_chk(c, in->act_min, in->act_max));

	b_len = in->bcast == NPU_BCAST_NONE ? in->count :
		in->bcast == NPU_BCAST_CHANNEL ? in->channels : 1;
	TRY(sram_range(c, "a", in->a, in->count, es_a, 1, &f.reads[0]));
	TRY(sram_range(c, "b", in->b, b_len, es_b, 1, &f.reads[1]));
	TRY(sram_range(c, "output", in->output, in->count, es_o, 1, &f.writes[0]));
	f.num_reads = 2;
	f.num_writes = 1;
	/* Any int16 operand: 2-byte lanes. */
	f.cycles = div_up(in->count, types ? NPU_VECTOR_LANES / 2 : NPU_VECTOR_LANES);
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_lut_validate(const struct npu_insn_lut *in,
			     struct npu_op_footprint *fp,
			     struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };
	uint32_t es = act_bytes(&in->hdr);

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(check_hdr(&in->hdr, NPU_OP_LUT, sizeof(*in), c));
	TRY(nonzero(c, "count", in->count));
	TRY(sram_range(c, "input", in->input, in->count, es, 1, &f.reads[0]));
	/* 256 int8, or 513 int16 interpolation points */
	TRY(sram_range(c, "table", in->table, es == 2 ? 513 : 256, es, 1,
		       &f.reads[1]));
	TRY(sram_range(c, "output", in->output, in->count, es, 1, &f.writes[0]));
	f.num_reads = 2;
	f.num_writes = 1;
	f.cycles = div_up(in->count, vec_lanes(&in->hdr));
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_resize_validate(const struct npu_insn_resize *in,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };
	uint32_t es = act_bytes(&in->hdr);

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(check_hdr(&in->hdr, NPU_OP_RESIZE, sizeof(*in), c));
	TRY(reserved_zero(c, "reserved0", in->reserved0));
	TRY(reserved_zero(c, "reserved1", in->reserved1));
	if (in->mode != NPU_RESIZE_NEAREST && in->mode != NPU_RESIZE_BILINEAR)
		return npu_isa_fail(c, PARAM, "mode",
				    "mode %u is not 0 (nearest) or 1 (bilinear)",
				    in->mode);
	TRY(nonzero(c, "c", in->c));
	TRY(nonzero(c, "in_h", in->in_h));
	TRY(nonzero(c, "in_w", in->in_w));
	TRY(nonzero(c, "out_h", in->out_h));
	TRY(nonzero(c, "out_w", in->out_w));
	TRY(nonzero(c, "den_h", in->den_h));
	TRY(nonzero(c, "den_w", in->den_w));
	TRY(layout_chk(c, "in_row_stride", "in_pixel_stride", "c", in->in_h,
		       in->in_w, in->c * es, in->in_row_stride, in->in_pixel_stride));
	TRY(layout_chk(c, "out_row_stride", "out_pixel_stride", "c", in->out_h,
		       in->out_w, in->c * es, in->out_row_stride,
		       in->out_pixel_stride));
	TRY(tensor_range(c, "input", in->input, in->in_h, in->in_w, in->c * es,
			 in->in_row_stride, in->in_pixel_stride, &f.reads[0]));
	TRY(tensor_range(c, "output", in->output, in->out_h, in->out_w,
			 in->c * es, in->out_row_stride, in->out_pixel_stride,
			 &f.writes[0]));
	f.num_reads = 1;
	f.num_writes = 1;
	/* One gather per output element; bilinear blends four. */
	f.cycles = div_up((uint64_t)in->out_h * in->out_w * in->c *
			  (in->mode == NPU_RESIZE_BILINEAR ? 4 : 1),
			  vec_lanes(&in->hdr));
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

/* The device's checks: its SRAM, no message. */
uint32_t npu_op_conv2d_check(const struct npu_insn_conv2d *in,
			     struct npu_op_footprint *fp)
{
	return npu_op_conv2d_validate(in, fp, NULL);
}

uint32_t npu_op_matmul_check(const struct npu_insn_matmul *in,
			     struct npu_op_footprint *fp)
{
	return npu_op_matmul_validate(in, fp, NULL);
}

uint32_t npu_op_pool_check(const struct npu_insn_pool *in,
			   struct npu_op_footprint *fp)
{
	return npu_op_pool_validate(in, fp, NULL);
}

uint32_t npu_op_eltwise_check(const struct npu_insn_eltwise *in,
			      struct npu_op_footprint *fp)
{
	return npu_op_eltwise_validate(in, fp, NULL);
}

uint32_t npu_op_lut_check(const struct npu_insn_lut *in,
			  struct npu_op_footprint *fp)
{
	return npu_op_lut_validate(in, fp, NULL);
}

uint32_t npu_op_resize_check(const struct npu_insn_resize *in,
			     struct npu_op_footprint *fp)
{
	return npu_op_resize_validate(in, fp, NULL);
}

uint32_t npu_load_quant(const uint8_t *sram, uint32_t quant, uint32_t flags,
			uint32_t n, int32_t *mult, int32_t *shift)
{
	uint32_t nq = (flags & NPU_QUANT_PER_TENSOR) ? 1 : n;
	const uint8_t *shifts = sram + quant + 4 * (size_t)nq;
	uint32_t i;

	for (i = 0; i < nq; i++) {
		if (shifts[i] < 1 || shifts[i] > 62)
			return NPU_JOB_ERR_BAD_PARAM;
		if (mult) {
			mult[i] = npu_ld_i32(sram + quant + 4 * (size_t)i);
			shift[i] = shifts[i];
		}
	}
	if (mult)
		for (; i < n; i++) {
			mult[i] = mult[0];
			shift[i] = shift[0];
		}
	return NPU_JOB_OK;
}

uint32_t npu_op_conv2d_check_sram(const struct npu_insn_conv2d *insn,
				  const uint8_t *sram)
{
	uint32_t m = NPU_SPARSE_M(insn->flags);
	uint32_t st = npu_load_quant(sram, insn->quant, insn->flags, insn->out_c,
				     NULL, NULL);

	if (st || !m)
		return st;
	/* through the cache: the op then expands what was checked */
	return npu_sparse_dense(sram + insn->weight,
				(uint64_t)insn->out_c * insn->k_h * insn->k_w,
				insn->in_c / insn->groups, NPU_SPARSE_N(insn->flags), m,
				(int8_t)insn->zp_w) ? NPU_JOB_OK : NPU_JOB_ERR_BAD_PARAM;
}

uint32_t npu_op_matmul_check_sram(const struct npu_insn_matmul *insn,
				  const uint8_t *sram)
{
	uint32_t m = NPU_SPARSE_M(insn->flags);
	uint32_t st = npu_load_quant(sram, insn->quant, insn->flags, insn->n,
				     NULL, NULL);

	if (st || !m)
		return st;
	return npu_sparse_dense(sram + insn->b, insn->n, insn->k, NPU_SPARSE_N(insn->flags), m,
				(int8_t)insn->zp_b) ? NPU_JOB_OK : NPU_JOB_ERR_BAD_PARAM;
}
