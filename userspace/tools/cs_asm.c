// SPDX-License-Identifier: MIT
/*
 * cs_asm.c - the text form of command streams (Documentation/
 * command-stream-text.md): one instruction per line, `opcode key=value`,
 * `#` comments, `.buffer` / `.queue` directives, buffer-relative VAs.
 *
 * Each line is parsed into the npu_hw.h struct through a field table
 * (name -> offset, width, signedness), defaults are filled in, and the
 * result goes through the command-stream builder, so the text form gets
 * exactly the builder's validation, reported at file:line:column.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "npu-tools/cs_asm.h"
#include "npu_sim.h"	/* npu_opcode_name: the firmware's names */

enum field_kind {
	F_NUM,		/* integer */
	F_ADDR,		/* sram:N | va:N | NAME[+N]; space byte at aux */
	F_VA,		/* va:N | NAME[+N] | N (TIMESTAMP) */
	F_BYTES,	/* pseudo field: 1-D length */
};

struct field {
	const char *name;
	uint16_t offset;
	uint8_t width;		/* bytes */
	bool is_signed;
	enum field_kind kind;
	uint16_t aux;		/* F_ADDR: offset of the space byte */
};

#define IS_SIGNED(x) _Generic((x), int8_t: true, int16_t: true, \
				     int32_t: true, int64_t: true, default: false)
#define NUMF(type, f) { #f, offsetof(type, f), sizeof(((type *)0)->f), \
			IS_SIGNED(((type *)0)->f), F_NUM, 0 }

static const struct field dma_copy_fields[] = {
	{ "src", offsetof(struct npu_insn_dma_copy, src), 8, false, F_ADDR,
	  offsetof(struct npu_insn_dma_copy, src_space) },
	{ "dst", offsetof(struct npu_insn_dma_copy, dst), 8, false, F_ADDR,
	  offsetof(struct npu_insn_dma_copy, dst_space) },
	NUMF(struct npu_insn_dma_copy, rows),
	NUMF(struct npu_insn_dma_copy, row_bytes),
	NUMF(struct npu_insn_dma_copy, src_stride),
	NUMF(struct npu_insn_dma_copy, dst_stride),
	NUMF(struct npu_insn_dma_copy, codec),		/* ISA 1.6: 1 the weight codec */
	NUMF(struct npu_insn_dma_copy, src_bytes),
	{ "bytes", 0, 4, false, F_BYTES, 0 },
	{ NULL, 0, 0, false, F_NUM, 0 },
};

static const struct field dma_fill_fields[] = {
	{ "dst", offsetof(struct npu_insn_dma_fill, dst), 8, false, F_ADDR,
	  offsetof(struct npu_insn_dma_fill, dst_space) },
	NUMF(struct npu_insn_dma_fill, value),
	NUMF(struct npu_insn_dma_fill, rows),
	NUMF(struct npu_insn_dma_fill, row_bytes),
	NUMF(struct npu_insn_dma_fill, dst_stride),
	{ "bytes", 0, 4, false, F_BYTES, 0 },
	{ NULL, 0, 0, false, F_NUM, 0 },
};

#define C(f) NUMF(struct npu_insn_conv2d, f)
static const struct field conv2d_fields[] = {
	C(input), C(weight), C(bias), C(quant), C(output), C(flags),
	C(in_h), C(in_w), C(in_c), C(out_c), C(out_h), C(out_w),
	C(k_h), C(k_w), C(stride_h), C(stride_w), C(dil_h), C(dil_w),
	C(pad_top), C(pad_left), C(pad_bottom), C(pad_right), C(groups),
	C(in_row_stride), C(in_pixel_stride), C(out_row_stride),
	C(out_pixel_stride), C(zp_in), C(zp_w), C(zp_out), C(act_min),
	C(act_max), C(ins_h), C(ins_w), C(lut),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef C

#define M(f) NUMF(struct npu_insn_matmul, f)
static const struct field matmul_fields[] = {
	M(a), M(b), M(bias), M(quant), M(output), M(flags), M(m), M(k), M(n),
	M(a_stride), M(out_stride), M(zp_a), M(zp_b), M(zp_out), M(act_min),
	M(act_max), M(lut),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef M

#define P(f) NUMF(struct npu_insn_pool, f)
static const struct field pool_fields[] = {
	P(input), P(output), P(mode), P(flags), P(c), P(in_h), P(in_w),
	P(out_h), P(out_w), P(k_h), P(k_w), P(stride_h), P(stride_w),
	P(pad_top), P(pad_left), P(pad_bottom), P(pad_right),
	P(in_row_stride), P(in_pixel_stride), P(out_row_stride),
	P(out_pixel_stride), P(zp_in), P(zp_out), P(act_min), P(act_max),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef P

#define E(f) NUMF(struct npu_insn_eltwise, f)
static const struct field eltwise_fields[] = {
	E(a), E(b), E(output), E(count), E(mode), E(bcast), E(shift),
	E(types), E(channels), E(mult_a), E(mult_b), E(zp_a), E(zp_b), E(zp_out),
	E(act_min), E(act_max),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef E

static const struct field lut_fields[] = {
	NUMF(struct npu_insn_lut, input), NUMF(struct npu_insn_lut, output),
	NUMF(struct npu_insn_lut, table), NUMF(struct npu_insn_lut, count),
	{ NULL, 0, 0, false, F_NUM, 0 },
};

#define R(f) NUMF(struct npu_insn_resize, f)
static const struct field resize_fields[] = {
	R(input), R(output), R(mode), R(c), R(in_h), R(in_w), R(out_h),
	R(out_w), R(in_row_stride), R(in_pixel_stride), R(out_row_stride),
	R(out_pixel_stride), R(step_h), R(step_w), R(offset_h), R(offset_w),
	R(den_h), R(den_w),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef R

/* ISA 1.3 row ops; REDUCE's mode is numeric (0 sum, 1 max: "max" is POOL's 0). */
#define S(f) NUMF(struct npu_insn_softmax, f)
static const struct field softmax_fields[] = {
	S(input), S(output), S(table), S(rows), S(c), S(in_stride), S(out_stride),
	S(mult), S(zp_out), S(act_min), S(act_max), S(shift),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef S

#define L(f) NUMF(struct npu_insn_layernorm, f)
static const struct field layernorm_fields[] = {
	L(input), L(output), L(params), L(rows), L(c), L(in_stride), L(out_stride),
	L(eps), L(zp_out), L(act_min), L(act_max), L(shift),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef L

#define D(f) NUMF(struct npu_insn_reduce, f)
static const struct field reduce_fields[] = {
	D(input), D(output), D(rows), D(c), D(in_stride), D(out_stride), D(mult),
	D(zp_in), D(zp_out), D(act_min), D(act_max), D(mode), D(shift),
	{ NULL, 0, 0, false, F_NUM, 0 },
};
#undef D

static const struct field timestamp_fields[] = {
	{ "va", offsetof(struct npu_insn_timestamp, va), 8, false, F_VA, 0 },
	{ NULL, 0, 0, false, F_NUM, 0 },
};

static const struct field no_fields[] = {
	{ NULL, 0, 0, false, F_NUM, 0 },
};

static const struct op_syntax {
	const char *name;
	uint8_t opcode;
	uint16_t size;
	const struct field *fields;
} ops[] = {
	{ "nop", NPU_OP_NOP, sizeof(struct npu_insn_header), no_fields },
	{ "dma_copy", NPU_OP_DMA_COPY, sizeof(struct npu_insn_dma_copy), dma_copy_fields },
	{ "dma_fill", NPU_OP_DMA_FILL, sizeof(struct npu_insn_dma_fill), dma_fill_fields },
	{ "conv2d", NPU_OP_CONV2D, sizeof(struct npu_insn_conv2d), conv2d_fields },
	{ "matmul", NPU_OP_MATMUL, sizeof(struct npu_insn_matmul), matmul_fields },
	{ "pool", NPU_OP_POOL, sizeof(struct npu_insn_pool), pool_fields },
	{ "eltwise", NPU_OP_ELTWISE, sizeof(struct npu_insn_eltwise), eltwise_fields },
	{ "lut", NPU_OP_LUT, sizeof(struct npu_insn_lut), lut_fields },
	{ "resize", NPU_OP_RESIZE, sizeof(struct npu_insn_resize), resize_fields },
	{ "softmax", NPU_OP_SOFTMAX, sizeof(struct npu_insn_softmax), softmax_fields },
	{ "layernorm", NPU_OP_LAYERNORM, sizeof(struct npu_insn_layernorm), layernorm_fields },
	{ "reduce", NPU_OP_REDUCE, sizeof(struct npu_insn_reduce), reduce_fields },
	{ "timestamp", NPU_OP_TIMESTAMP, sizeof(struct npu_insn_timestamp), timestamp_fields },
	{ "barrier", NPU_OP_BARRIER, sizeof(struct npu_insn_barrier), no_fields },
};

#define NUM_OPS (sizeof(ops) / sizeof(ops[0]))
#define MAX_FIELDS 40

/* Symbolic values accepted for some fields. */
static const struct {
	const char *field;
	const char *name;
	int64_t value;
} symbols[] = {
	{ "mode", "max", NPU_POOL_MAX }, { "mode", "avg", NPU_POOL_AVG },
	{ "mode", "add", NPU_ELT_ADD }, { "mode", "mul", NPU_ELT_MUL },
	{ "mode", "nearest", NPU_RESIZE_NEAREST },
	{ "mode", "bilinear", NPU_RESIZE_BILINEAR },
	{ "bcast", "none", NPU_BCAST_NONE },
	{ "bcast", "channel", NPU_BCAST_CHANNEL },
	{ "bcast", "scalar", NPU_BCAST_SCALAR },
	{ "flags", "per_tensor", NPU_QUANT_PER_TENSOR },
	{ "flags", "no_bias", NPU_CONV_NO_BIAS },
	{ "flags", "out_lut", NPU_CONV_OUT_LUT },
	{ "flags", "array1", NPU_CONV_ARRAY(1) },
	{ "flags", "array2", NPU_CONV_ARRAY(2) },
	{ "flags", "array3", NPU_CONV_ARRAY(3) },
	{ "flags", "array4", NPU_CONV_ARRAY(4) },
	{ "flags", "array5", NPU_CONV_ARRAY(5) },
	{ "flags", "sparse24", NPU_CONV_SPARSE(2, 4) },	/* ISA 1.6; other N:M numerically */
	{ "flags", "count_pad", NPU_POOL_COUNT_PAD },
};

struct asm_state {
	const char *file;
	unsigned int line;
	struct npu_cs_program *prog;
	struct npu_cmdbuf *cb;
	char *msg;
	size_t msg_size;
	size_t relocs_cap;
};

static npu_status aerr(struct asm_state *a, unsigned int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static npu_status aerr(struct asm_state *a, unsigned int col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!a->msg || !a->msg_size)
		return NPU_ERR_INVALID_ARG;
	n = snprintf(a->msg, a->msg_size, "%s:%u:%u: ", a->file, a->line, col);
	if (n < 0 || (size_t)n >= a->msg_size)
		return NPU_ERR_INVALID_ARG;
	va_start(ap, fmt);
	vsnprintf(a->msg + n, a->msg_size - (size_t)n, fmt, ap);
	va_end(ap);
	return NPU_ERR_INVALID_ARG;
}

/* Integer with optional sign and K/M/G suffix (sizes); whole string. */
static bool parse_int(const char *s, bool suffix, int64_t *out)
{
	char *end;
	long long v;

	if (!*s)
		return false;
	errno = 0;
	if (s[0] == '-')
		v = strtoll(s, &end, 0);
	else
		v = (long long)strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	if (suffix && *end) {
		int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 :
			    *end == 'G' ? 30 : -1;

		if (shift < 0 || end[1] || v < 0 || v > (INT64_MAX >> shift))
			return false;
		v <<= shift;
		end++;
	}
	if (*end)
		return false;
	*out = v;
	return true;
}

static int find_buffer(const struct npu_cs_program *p, const char *name, size_t len)
{
	unsigned int i;

	for (i = 0; i < p->num_buffers; i++)
		if (strlen(p->buffers[i].name) == len &&
		    !strncmp(p->buffers[i].name, name, len))
			return (int)i;
	return -1;
}

int npu_cs_find_buffer(const struct npu_cs_program *prog, const char *name)
{
	return find_buffer(prog, name, strlen(name));
}

/*
 * An address value: "sram:N", "va:N", "NAME" or "NAME+N". Sets *space,
 * *value, and *buffer (-1 for none).
 */
static npu_status parse_addr(struct asm_state *a, unsigned int col,
			     const char *field, const char *v, bool va_only,
			     uint8_t *space, uint64_t *value, int *buffer)
{
	const char *plus;
	int64_t n = 0;

	*buffer = -1;
	if (!strncmp(v, "sram:", 5)) {
		if (va_only)
			return aerr(a, col, "%s: must be a device VA (va:N or BUFFER+N), not SRAM",
				    field);
		if (!parse_int(v + 5, false, &n) || n < 0)
			return aerr(a, col + 5, "%s: '%s' is not an SRAM offset", field, v + 5);
		*space = NPU_SPACE_SRAM;
		*value = (uint64_t)n;
		return NPU_OK;
	}
	if (!strncmp(v, "va:", 3)) {
		if (!parse_int(v + 3, false, &n))
			return aerr(a, col + 3, "%s: '%s' is not an address", field, v + 3);
		*space = NPU_SPACE_VA;
		*value = (uint64_t)n;
		return NPU_OK;
	}
	if (isdigit((unsigned char)v[0]) || v[0] == '-') {
		if (va_only && parse_int(v, false, &n)) {
			*space = NPU_SPACE_VA;
			*value = (uint64_t)n;
			return NPU_OK;
		}
		return aerr(a, col, "%s: say sram:%s or va:%s (a bare number is ambiguous)",
			    field, v, v);
	}
	plus = strchr(v, '+');
	*buffer = find_buffer(a->prog, v, plus ? (size_t)(plus - v) : strlen(v));
	if (*buffer < 0)
		return aerr(a, col, "%s: unknown buffer '%.*s' (declare it first with .buffer NAME SIZE)",
			    field, plus ? (int)(plus - v) : (int)strlen(v), v);
	if (plus && (!parse_int(plus + 1, false, &n) || n < 0))
		return aerr(a, col + (unsigned int)(plus + 1 - v),
			    "%s: offset '%s' is not a non-negative integer", field, plus + 1);
	*space = NPU_SPACE_VA;
	*value = (uint64_t)n;
	return NPU_OK;
}

static void put_field(uint8_t *insn, const struct field *f, uint64_t v)
{
	uint8_t b1 = (uint8_t)v;
	uint16_t b2 = (uint16_t)v;
	uint32_t b4 = (uint32_t)v;

	switch (f->width) {
	case 1: memcpy(insn + f->offset, &b1, 1); break;
	case 2: memcpy(insn + f->offset, &b2, 2); break;
	case 4: memcpy(insn + f->offset, &b4, 4); break;
	default: memcpy(insn + f->offset, &v, 8); break;
	}
}

static bool fits(const struct field *f, int64_t v)
{
	int bits = f->width * 8;

	if (bits == 64)
		return true;
	if (f->is_signed)
		return v >= -(1ll << (bits - 1)) && v < (1ll << (bits - 1));
	return v >= 0 && v < (1ll << bits);
}

/* Fields the user left out: the documented defaults. */
#define GIVEN(name) given_field(op, given, name)
static bool given_field(const struct op_syntax *op, const bool *given,
			const char *name)
{
	unsigned int i;

	for (i = 0; op->fields[i].name; i++)
		if (!strcmp(op->fields[i].name, name))
			return given[i];
	return false;
}

static uint32_t out_dim(uint32_t in, uint32_t p0, uint32_t p1, uint32_t k,
			uint32_t dil, uint32_t stride)
{
	uint64_t span = (uint64_t)dil * (k ? k - 1 : 0) + 1;
	uint64_t padded = (uint64_t)in + p0 + p1;

	if (!stride || padded < span)
		return 0;
	return (uint32_t)((padded - span) / stride + 1);
}

static void apply_defaults(const struct op_syntax *op, const bool *given,
			   uint8_t *insn)
{
	switch (op->opcode) {
	case NPU_OP_CONV2D: {
		struct npu_insn_conv2d c;

		memcpy(&c, insn, sizeof(c));
		if (!GIVEN("stride_h")) c.stride_h = 1;
		if (!GIVEN("stride_w")) c.stride_w = 1;
		if (!GIVEN("dil_h")) c.dil_h = 1;
		if (!GIVEN("dil_w")) c.dil_w = 1;
		if (!GIVEN("groups")) c.groups = 1;
		if (!GIVEN("k_h")) c.k_h = 1;
		if (!GIVEN("k_w")) c.k_w = 1;
		if (!GIVEN("act_min")) c.act_min = -128;
		if (!GIVEN("act_max")) c.act_max = 127;
		if (!GIVEN("in_pixel_stride")) c.in_pixel_stride = c.in_c;
		if (!GIVEN("in_row_stride")) c.in_row_stride = c.in_w * c.in_pixel_stride;
		/* The input after zero insertion is what the kernel slides over. */
		if (!GIVEN("out_h"))
			c.out_h = (uint16_t)out_dim(c.in_h ? (c.in_h - 1u) * (c.ins_h + 1u) + 1 : 0,
						    c.pad_top, c.pad_bottom, c.k_h, c.dil_h, c.stride_h);
		if (!GIVEN("out_w"))
			c.out_w = (uint16_t)out_dim(c.in_w ? (c.in_w - 1u) * (c.ins_w + 1u) + 1 : 0,
						    c.pad_left, c.pad_right, c.k_w, c.dil_w, c.stride_w);
		if (!GIVEN("out_pixel_stride")) c.out_pixel_stride = c.out_c;
		if (!GIVEN("out_row_stride")) c.out_row_stride = c.out_w * c.out_pixel_stride;
		memcpy(insn, &c, sizeof(c));
		break;
	}
	case NPU_OP_MATMUL: {
		struct npu_insn_matmul m;

		memcpy(&m, insn, sizeof(m));
		if (!GIVEN("a_stride")) m.a_stride = m.k;
		if (!GIVEN("out_stride")) m.out_stride = m.n;
		if (!GIVEN("act_min")) m.act_min = -128;
		if (!GIVEN("act_max")) m.act_max = 127;
		memcpy(insn, &m, sizeof(m));
		break;
	}
	case NPU_OP_POOL: {
		struct npu_insn_pool p;

		memcpy(&p, insn, sizeof(p));
		if (!GIVEN("stride_h")) p.stride_h = 1;
		if (!GIVEN("stride_w")) p.stride_w = 1;
		if (!GIVEN("k_h")) p.k_h = 1;
		if (!GIVEN("k_w")) p.k_w = 1;
		if (!GIVEN("act_min")) p.act_min = -128;
		if (!GIVEN("act_max")) p.act_max = 127;
		if (!GIVEN("in_pixel_stride")) p.in_pixel_stride = p.c;
		if (!GIVEN("in_row_stride")) p.in_row_stride = p.in_w * p.in_pixel_stride;
		if (!GIVEN("out_h"))
			p.out_h = (uint16_t)out_dim(p.in_h, p.pad_top, p.pad_bottom, p.k_h, 1, p.stride_h);
		if (!GIVEN("out_w"))
			p.out_w = (uint16_t)out_dim(p.in_w, p.pad_left, p.pad_right, p.k_w, 1, p.stride_w);
		if (!GIVEN("out_pixel_stride")) p.out_pixel_stride = p.c;
		if (!GIVEN("out_row_stride")) p.out_row_stride = p.out_w * p.out_pixel_stride;
		memcpy(insn, &p, sizeof(p));
		break;
	}
	case NPU_OP_RESIZE: {
		struct npu_insn_resize r;

		/* Default coordinates: ONNX's asymmetric mode, in / out. */
		memcpy(&r, insn, sizeof(r));
		if (!GIVEN("in_pixel_stride")) r.in_pixel_stride = r.c;
		if (!GIVEN("in_row_stride")) r.in_row_stride = r.in_w * r.in_pixel_stride;
		if (!GIVEN("out_pixel_stride")) r.out_pixel_stride = r.c;
		if (!GIVEN("out_row_stride")) r.out_row_stride = r.out_w * r.out_pixel_stride;
		if (!GIVEN("step_h")) r.step_h = r.in_h;
		if (!GIVEN("den_h")) r.den_h = r.out_h;
		if (!GIVEN("step_w")) r.step_w = r.in_w;
		if (!GIVEN("den_w")) r.den_w = r.out_w;
		memcpy(insn, &r, sizeof(r));
		break;
	}
	case NPU_OP_ELTWISE: {
		struct npu_insn_eltwise e;

		memcpy(&e, insn, sizeof(e));
		if (!GIVEN("act_min")) e.act_min = -128;
		if (!GIVEN("act_max")) e.act_max = 127;
		memcpy(insn, &e, sizeof(e));
		break;
	}
	case NPU_OP_SOFTMAX:
	case NPU_OP_LAYERNORM:
	case NPU_OP_REDUCE: {
		/* dense rows and no clamp unless given; the layouts share no
		 * offsets, so each is set through its own struct */
		if (op->opcode == NPU_OP_SOFTMAX) {
			struct npu_insn_softmax s;

			memcpy(&s, insn, sizeof(s));
			if (!GIVEN("in_stride")) s.in_stride = s.c;
			if (!GIVEN("out_stride")) s.out_stride = s.c;
			if (!GIVEN("act_min")) s.act_min = -128;
			if (!GIVEN("act_max")) s.act_max = 127;
			memcpy(insn, &s, sizeof(s));
		} else if (op->opcode == NPU_OP_LAYERNORM) {
			struct npu_insn_layernorm l;

			memcpy(&l, insn, sizeof(l));
			if (!GIVEN("in_stride")) l.in_stride = l.c;
			if (!GIVEN("out_stride")) l.out_stride = l.c;
			if (!GIVEN("act_min")) l.act_min = -128;
			if (!GIVEN("act_max")) l.act_max = 127;
			memcpy(insn, &l, sizeof(l));
		} else {
			struct npu_insn_reduce r;

			memcpy(&r, insn, sizeof(r));
			if (!GIVEN("in_stride")) r.in_stride = r.c;
			if (!GIVEN("out_stride")) r.out_stride = 1;
			if (!GIVEN("act_min")) r.act_min = -128;
			if (!GIVEN("act_max")) r.act_max = 127;
			memcpy(insn, &r, sizeof(r));
		}
		break;
	}
	default:
		break;
	}
}

static npu_status add_reloc(struct asm_state *a, size_t offset, int buffer,
			    uint64_t addend)
{
	struct npu_cs_program *p = a->prog;

	if (p->num_relocs == a->relocs_cap) {
		size_t cap = a->relocs_cap ? a->relocs_cap * 2 : 16;
		struct npu_cs_reloc *r = realloc(p->relocs, cap * sizeof(*r));

		if (!r)
			return aerr(a, 1, "out of memory");
		p->relocs = r;
		a->relocs_cap = cap;
	}
	p->relocs[p->num_relocs].offset = offset;
	p->relocs[p->num_relocs].buffer = (unsigned int)buffer;
	p->relocs[p->num_relocs].addend = addend;
	p->num_relocs++;
	return NPU_OK;
}

struct token {
	char *s;
	unsigned int col;
};

/* Check that a buffer-relative DMA range stays inside its buffer. */
static npu_status check_in_buffer(struct asm_state *a, unsigned int col,
				  const char *field, int buffer, uint64_t off,
				  uint32_t rows, uint64_t stride, uint32_t row_bytes)
{
	const struct npu_cs_buffer_decl *b = &a->prog->buffers[buffer];
	unsigned __int128 end;

	if (!rows || !row_bytes)
		return NPU_OK;	/* the builder reports the zero */
	end = (unsigned __int128)off + (unsigned __int128)(rows - 1) * stride + row_bytes;
	if (end > b->size)
		return aerr(a, col, "%s: %s+%" PRIu64 " .. +%" PRIu64 " runs past the end of buffer '%s' (%" PRIu64 " bytes)",
			    field, b->name, off,
			    (uint64_t)(end > UINT64_MAX ? UINT64_MAX : end), b->name, b->size);
	return NPU_OK;
}

static npu_status assemble_insn(struct asm_state *a, const struct op_syntax *op,
				struct token *tok, unsigned int ntok)
{
	uint8_t insn[128] = { 0 };
	bool given[MAX_FIELDS] = { false };
	int bufref[MAX_FIELDS];
	uint64_t addval[MAX_FIELDS] = { 0 };
	unsigned int fcol[MAX_FIELDS] = { 0 };
	int64_t bytes = -1;
	unsigned int bytes_col = 0;
	struct npu_insn_header hdr = { .opcode = op->opcode, .size = op->size };
	size_t before;
	unsigned int i, f;
	npu_status st;

	for (i = 0; i < MAX_FIELDS; i++)
		bufref[i] = -1;
	for (i = 1; i < ntok; i++) {
		char *eq = strchr(tok[i].s, '=');
		const char *val;
		int64_t v;

		if (!eq) {
			if (!strcmp(tok[i].s, "sync")) {
				hdr.flags |= NPU_INSN_SYNC;
				continue;
			}
			if (!strcmp(tok[i].s, "i16")) {	/* int16 activations */
				hdr.flags |= NPU_INSN_I16;
				continue;
			}
			return aerr(a, tok[i].col,
				    "%s: expected key=value, 'sync' or 'i16', got '%s'",
				    op->name, tok[i].s);
		}
		*eq = '\0';
		val = eq + 1;
		for (f = 0; op->fields[f].name; f++)
			if (!strcmp(op->fields[f].name, tok[i].s))
				break;
		if (!op->fields[f].name) {
			char list[512] = "";
			size_t n = 0;
			unsigned int k;

			for (k = 0; op->fields[k].name && n < sizeof(list) - 32; k++)
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
						      k ? " " : "", op->fields[k].name);
			return aerr(a, tok[i].col, "%s has no field '%s' (fields: %s)",
				    op->name, tok[i].s, n ? list : "none");
		}
		if (given[f])
			return aerr(a, tok[i].col, "%s: field '%s' given twice",
				    op->name, tok[i].s);
		given[f] = true;
		fcol[f] = tok[i].col;
		if (op->fields[f].kind == F_ADDR || op->fields[f].kind == F_VA) {
			uint8_t space = 0;
			uint64_t value = 0;

			st = parse_addr(a, tok[i].col + (unsigned int)(val - tok[i].s),
					tok[i].s, val, op->fields[f].kind == F_VA,
					&space, &value, &bufref[f]);
			if (st)
				return st;
			addval[f] = value;
			put_field(insn, &op->fields[f], value);
			if (op->fields[f].kind == F_ADDR)
				insn[op->fields[f].aux] = space;
			continue;
		}
		if (!parse_int(val, op->fields[f].kind == F_BYTES, &v)) {
			unsigned int k;
			bool found = false;

			/* symbolic names, '|'-separated for flags */
			v = 0;
			for (const char *p = val; *p;) {
				size_t len = strcspn(p, "|");

				found = false;
				for (k = 0; k < sizeof(symbols) / sizeof(symbols[0]); k++)
					if (!strcmp(symbols[k].field, tok[i].s) &&
					    strlen(symbols[k].name) == len &&
					    !strncmp(symbols[k].name, p, len)) {
						v |= symbols[k].value;
						found = true;
					}
				if (!found)
					break;
				p += len;
				if (*p == '|')
					p++;
			}
			if (!found)
				return aerr(a, tok[i].col + (unsigned int)(val - tok[i].s),
					    "%s: %s='%s' is not a number%s", op->name,
					    tok[i].s, val,
					    !strcmp(tok[i].s, "flags") ? " or per_tensor|no_bias|out_lut|count_pad" :
					    !strcmp(tok[i].s, "mode") ? " or max|avg (pool) / add|mul (eltwise) / nearest|bilinear (resize)" :
					    !strcmp(tok[i].s, "bcast") ? " or none|channel|scalar" : "");
		}
		if (op->fields[f].kind == F_BYTES) {
			if (v <= 0 || v > UINT32_MAX)
				return aerr(a, tok[i].col, "%s: bytes=%" PRId64 " is outside 1..4294967295",
					    op->name, v);
			bytes = v;
			bytes_col = tok[i].col;
			continue;
		}
		if (!fits(&op->fields[f], v))
			return aerr(a, tok[i].col + (unsigned int)(val - tok[i].s),
				    "%s: %s=%" PRId64 " does not fit its %s%d-bit field",
				    op->name, tok[i].s, v,
				    op->fields[f].is_signed ? "signed " : "unsigned ",
				    op->fields[f].width * 8);
		put_field(insn, &op->fields[f], (uint64_t)v);
	}
	/* required addresses */
	for (f = 0; op->fields[f].name; f++)
		if ((op->fields[f].kind == F_ADDR || op->fields[f].kind == F_VA) &&
		    !given[f])
			return aerr(a, tok[0].col, "%s: missing %s=", op->name,
				    op->fields[f].name);
	if (op->opcode == NPU_OP_DMA_COPY || op->opcode == NPU_OP_DMA_FILL) {
		bool copy = op->opcode == NPU_OP_DMA_COPY;
		struct npu_insn_dma_copy c;
		struct npu_insn_dma_fill fl;

		if (bytes >= 0) {
			if (GIVEN("rows") || GIVEN("row_bytes"))
				return aerr(a, bytes_col, "%s: bytes= is a 1-D copy; with rows/row_bytes give strides instead",
					    op->name);
			if (copy) {
				memcpy(&c, insn, sizeof(c));
				c.rows = 1;
				c.row_bytes = (uint32_t)bytes;
				if (!GIVEN("src_stride")) c.src_stride = (uint64_t)bytes;
				if (!GIVEN("dst_stride")) c.dst_stride = (uint64_t)bytes;
				memcpy(insn, &c, sizeof(c));
			} else {
				memcpy(&fl, insn, sizeof(fl));
				fl.rows = 1;
				fl.row_bytes = (uint32_t)bytes;
				if (!GIVEN("dst_stride")) fl.dst_stride = (uint64_t)bytes;
				memcpy(insn, &fl, sizeof(fl));
			}
		} else if (!GIVEN("row_bytes")) {
			return aerr(a, tok[0].col, "%s: give bytes=N (1-D) or rows= row_bytes= strides (2-D)",
				    op->name);
		} else if (!GIVEN("rows")) {
			if (copy) {
				memcpy(&c, insn, sizeof(c));
				c.rows = 1;
				memcpy(insn, &c, sizeof(c));
			} else {
				memcpy(&fl, insn, sizeof(fl));
				fl.rows = 1;
				memcpy(insn, &fl, sizeof(fl));
			}
		}
		if (copy) {
			memcpy(&c, insn, sizeof(c));
			if (bufref[0] >= 0 &&
			    (st = check_in_buffer(a, fcol[0], "src", bufref[0], addval[0],
						  c.rows, c.src_stride, c.row_bytes)))
				return st;
			if (bufref[1] >= 0 &&
			    (st = check_in_buffer(a, fcol[1], "dst", bufref[1], addval[1],
						  c.rows, c.dst_stride, c.row_bytes)))
				return st;
		} else {
			memcpy(&fl, insn, sizeof(fl));
			if (bufref[0] >= 0 &&
			    (st = check_in_buffer(a, fcol[0], "dst", bufref[0], addval[0],
						  fl.rows, fl.dst_stride, fl.row_bytes)))
				return st;
		}
	}
	if (op->opcode == NPU_OP_TIMESTAMP && bufref[0] >= 0 &&
	    (st = check_in_buffer(a, fcol[0], "va", bufref[0], addval[0], 1, 8, 8)))
		return st;
	apply_defaults(op, given, insn);
	memcpy(insn, &hdr, sizeof(hdr));

	npu_cmdbuf_data(a->cb, &before);
	st = npu_cmdbuf_raw(a->cb, insn, op->size);
	if (st)
		return aerr(a, tok[0].col, "%s", npu_cmdbuf_last_error(a->cb));
	for (f = 0; op->fields[f].name; f++)
		if (bufref[f] >= 0) {
			st = add_reloc(a, before + op->fields[f].offset, bufref[f],
				       addval[f]);
			if (st)
				return st;
		}
	return NPU_OK;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static npu_status directive_buffer(struct asm_state *a, struct token *tok,
				   unsigned int ntok)
{
	struct npu_cs_program *p = a->prog;
	struct npu_cs_buffer_decl d = { 0 }, *nb;
	int64_t size;
	unsigned int i;
	const char *n;

	if (ntok < 3)
		return aerr(a, tok[0].col, ".buffer needs a name and a size: .buffer NAME SIZE [init=zero|random:SEED|hex:BYTES|fill:BYTE] [ro]");
	for (n = tok[1].s; *n; n++)
		if (!isalnum((unsigned char)*n) && *n != '_')
			return aerr(a, tok[1].col, ".buffer: name '%s' may use only letters, digits and _",
				    tok[1].s);
	if (isdigit((unsigned char)tok[1].s[0]) || strlen(tok[1].s) >= sizeof(d.name))
		return aerr(a, tok[1].col, ".buffer: name '%s' must start with a letter and be under %zu characters",
			    tok[1].s, sizeof(d.name));
	if (find_buffer(p, tok[1].s, strlen(tok[1].s)) >= 0)
		return aerr(a, tok[1].col, ".buffer: '%s' is already declared", tok[1].s);
	if (!parse_int(tok[2].s, true, &size) || size <= 0 || size > (1ll << 32))
		return aerr(a, tok[2].col, ".buffer: size '%s' is not 1 .. 4G (suffixes K, M, G)",
			    tok[2].s);
	snprintf(d.name, sizeof(d.name), "%s", tok[1].s);
	d.size = (uint64_t)size;
	d.line = a->line;
	for (i = 3; i < ntok; i++) {
		const char *t = tok[i].s;
		int64_t v;

		if (!strcmp(t, "ro")) {
			d.read_only = true;
		} else if (!strcmp(t, "init=zero")) {
			d.init = NPU_CS_INIT_ZERO;
		} else if (!strncmp(t, "init=random:", 12)) {
			if (!parse_int(t + 12, false, &v))
				return aerr(a, tok[i].col + 12, ".buffer: random seed '%s' is not a number", t + 12);
			d.init = NPU_CS_INIT_RANDOM;
			d.seed = (uint64_t)v;
		} else if (!strncmp(t, "init=fill:", 10)) {
			if (!parse_int(t + 10, false, &v) || v < 0 || v > 255)
				return aerr(a, tok[i].col + 10, ".buffer: fill byte '%s' is not 0..255", t + 10);
			d.init = NPU_CS_INIT_FILL;
			d.fill = (uint8_t)v;
		} else if (!strncmp(t, "init=hex:", 9)) {
			const char *h = t + 9;
			size_t len = strlen(h), k;

			if (len % 2)
				return aerr(a, tok[i].col + 9, ".buffer: hex data has an odd number of digits (%zu)", len);
			if (len / 2 > d.size)
				return aerr(a, tok[i].col + 9, ".buffer: %zu bytes of hex data exceed the buffer size %" PRIu64,
					    len / 2, d.size);
			free(d.bytes);
			d.bytes = malloc(len / 2 + 1);
			if (!d.bytes)
				return aerr(a, tok[i].col, "out of memory");
			for (k = 0; k < len; k += 2) {
				int hi = hexval(h[k]), lo = hexval(h[k + 1]);

				if (hi < 0 || lo < 0) {
					free(d.bytes);
					return aerr(a, tok[i].col + 9 + (unsigned int)k,
						    ".buffer: '%c%c' is not a hex byte", h[k], h[k + 1]);
				}
				d.bytes[k / 2] = (uint8_t)(hi << 4 | lo);
			}
			d.num_bytes = len / 2;
			d.init = NPU_CS_INIT_HEX;
		} else {
			free(d.bytes);
			return aerr(a, tok[i].col, ".buffer: unknown option '%s' (init=zero|random:SEED|hex:BYTES|fill:BYTE, ro)",
				    t);
		}
	}
	nb = realloc(p->buffers, (p->num_buffers + 1) * sizeof(*nb));
	if (!nb) {
		free(d.bytes);
		return aerr(a, tok[0].col, "out of memory");
	}
	p->buffers = nb;
	p->buffers[p->num_buffers++] = d;
	return NPU_OK;
}

static npu_status assemble_line(struct asm_state *a, char *line)
{
	struct token tok[MAX_FIELDS + 8];
	unsigned int ntok = 0, i;
	char *s = line, *hash;

	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	while (*s) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			break;
		if (ntok == sizeof(tok) / sizeof(tok[0]))
			return aerr(a, (unsigned int)(s - line) + 1, "too many fields on one line");
		tok[ntok].s = s;
		tok[ntok].col = (unsigned int)(s - line) + 1;
		ntok++;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
		if (*s)
			*s++ = '\0';
	}
	if (!ntok)
		return NPU_OK;
	if (!strcmp(tok[0].s, ".buffer"))
		return directive_buffer(a, tok, ntok);
	if (!strcmp(tok[0].s, ".queue")) {
		int64_t q;

		if (ntok != 2 || !parse_int(tok[1].s, false, &q) || q < 0 || q >= NPU_NUM_QUEUES)
			return aerr(a, tok[0].col, ".queue takes one queue number, 0 (high priority) or 1");
		a->prog->queue = (uint32_t)q;
		return NPU_OK;
	}
	if (tok[0].s[0] == '.')
		return aerr(a, tok[0].col, "unknown directive '%s' (.buffer, .queue)", tok[0].s);
	for (i = 0; i < NUM_OPS; i++)
		if (!strcmp(ops[i].name, tok[0].s))
			return assemble_insn(a, &ops[i], tok, ntok);
	return aerr(a, tok[0].col, "unknown instruction '%s' (nop dma_copy dma_fill conv2d matmul pool eltwise lut resize softmax layernorm reduce timestamp barrier)",
		    tok[0].s);
}

void npu_cs_program_free(struct npu_cs_program *prog)
{
	unsigned int i;

	if (!prog)
		return;
	for (i = 0; i < prog->num_buffers; i++)
		free(prog->buffers[i].bytes);
	free(prog->buffers);
	free(prog->relocs);
	free(prog->code);
	free(prog);
}

npu_status npu_cs_assemble(const char *text, size_t len, const char *filename,
			   struct npu_cs_program **out, char *msg, size_t msg_size)
{
	struct asm_state a = { .file = filename ? filename : "<stream>",
			       .msg = msg, .msg_size = msg_size };
	const char *p = text, *end = text + len;
	char *line = NULL;
	size_t cap = 0;
	npu_status st = NPU_OK;
	const void *data;
	size_t size;

	*out = NULL;
	a.prog = calloc(1, sizeof(*a.prog));
	if (!a.prog || npu_cmdbuf_create(&a.cb)) {
		free(a.prog);
		return NPU_ERR_NO_MEMORY;
	}
	a.prog->queue = 1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		a.line++;
		if (l + 1 > cap) {
			char *n = realloc(line, l + 1);

			if (!n) {
				st = NPU_ERR_NO_MEMORY;
				break;
			}
			line = n;
			cap = l + 1;
		}
		memcpy(line, p, l);
		line[l] = '\0';
		if (memchr(line, '\0', l)) {
			st = aerr(&a, 1, "NUL byte in a text stream (binary streams start with \"NPCS\")");
			break;
		}
		st = assemble_line(&a, line);
		if (st)
			break;
		p += l + (nl ? 1 : 0);
	}
	free(line);
	if (!st) {
		data = npu_cmdbuf_data(a.cb, &size);
		a.prog->code = malloc(size);
		if (!a.prog->code) {
			st = NPU_ERR_NO_MEMORY;
		} else {
			memcpy(a.prog->code, data, size);
			a.prog->code_size = size;
			a.prog->num_insns = npu_cmdbuf_count(a.cb);
		}
		if (!st && !a.prog->num_insns) {
			a.line = a.line ? a.line : 1;
			st = aerr(&a, 1, "no instructions in the stream");
		}
	}
	npu_cmdbuf_destroy(a.cb);
	if (st) {
		npu_cs_program_free(a.prog);
		return st;
	}
	*out = a.prog;
	return NPU_OK;
}

npu_status npu_cs_from_binary(const void *data, size_t size, const char *filename,
			      bool validate, struct npu_cs_program **out,
			      char *msg, size_t msg_size)
{
	struct npu_cs_program *p;
	char m[512];	/* npu_cs_validate's message */

	*out = NULL;
	if (validate && npu_cs_validate(data, size, 0, 0, m, sizeof(m))) {
		if (msg)
			snprintf(msg, msg_size, "%s: %s", filename ? filename : "<stream>", m);
		return NPU_ERR_INVALID_ARG;
	}
	if (!validate && (size < sizeof(struct npu_cs_header) || size % NPU_CS_ALIGN)) {
		if (msg)
			snprintf(msg, msg_size, "%s: %zu bytes is not a stream (at least 16, a multiple of 8)",
				 filename ? filename : "<stream>", size);
		return NPU_ERR_INVALID_ARG;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NPU_ERR_NO_MEMORY;
	p->code = malloc(size);
	if (!p->code) {
		free(p);
		return NPU_ERR_NO_MEMORY;
	}
	memcpy(p->code, data, size);
	p->code_size = size;
	p->queue = 1;
	p->binary = true;
	*out = p;
	return NPU_OK;
}

npu_status npu_cs_read_file(const char *path, bool validate,
			    struct npu_cs_program **out, char *msg, size_t msg_size)
{
	FILE *f;
	char *data = NULL;
	size_t len = 0, cap = 0, n;
	npu_status st;
	uint32_t magic = 0;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f) {
		if (msg)
			snprintf(msg, msg_size, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? NPU_ERR_NOT_FOUND : NPU_ERR_IO;
	}
	for (;;) {
		if (len == cap) {
			char *d;

			cap = cap ? cap * 2 : 65536;
			if (cap > (size_t)NPU_CS_MAX_SIZE * 8) {
				fclose(f);
				free(data);
				if (msg)
					snprintf(msg, msg_size, "%s: larger than %u bytes", path,
						 NPU_CS_MAX_SIZE * 8);
				return NPU_ERR_INVALID_ARG;
			}
			d = realloc(data, cap);
			if (!d) {
				fclose(f);
				free(data);
				return NPU_ERR_NO_MEMORY;
			}
			data = d;
		}
		n = fread(data + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fclose(f);
		free(data);
		if (msg)
			snprintf(msg, msg_size, "%s: read error", path);
		return NPU_ERR_IO;
	}
	fclose(f);
	if (len >= 4)
		memcpy(&magic, data, 4);
	if (magic == NPU_CS_MAGIC)
		st = npu_cs_from_binary(data, len, path, validate, out, msg, msg_size);
	else
		st = npu_cs_assemble(data, len, path, out, msg, msg_size);
	free(data);
	return st;
}

/* ---- Instantiation ---- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void init_buffer(const struct npu_cs_buffer_decl *d, uint8_t *p)
{
	uint64_t s = d->seed, i;

	switch (d->init) {
	case NPU_CS_INIT_ZERO:
		memset(p, 0, d->size);
		break;
	case NPU_CS_INIT_FILL:
		memset(p, d->fill, d->size);
		break;
	case NPU_CS_INIT_HEX:
		memset(p, 0, d->size);
		memcpy(p, d->bytes, d->num_bytes);
		break;
	case NPU_CS_INIT_RANDOM:
		for (i = 0; i < d->size; i += 8) {
			uint64_t r = splitmix64(&s);
			size_t n = d->size - i < 8 ? (size_t)(d->size - i) : 8;

			memcpy(p + i, &r, n);
		}
		break;
	}
}

void npu_cs_instance_free(struct npu_cs_instance *inst)
{
	unsigned int i;

	if (!inst)
		return;
	for (i = 0; i < inst->num_bufs; i++)
		npu_buffer_free(inst->bufs[i]);
	npu_buffer_free(inst->cmd);
	free(inst->bufs);
	free(inst->uses);
	free(inst);
}

npu_status npu_cs_instantiate(struct npu_device *dev,
			      const struct npu_cs_program *prog,
			      struct npu_cs_instance **out, char *msg, size_t msg_size)
{
	struct npu_cs_instance *inst;
	uint8_t *code;
	unsigned int i;
	npu_status st;
	void *map;

	*out = NULL;
	inst = calloc(1, sizeof(*inst));
	if (!inst) {
		snprintf(msg, msg_size, "out of memory");
		return NPU_ERR_NO_MEMORY;
	}
	inst->dev = dev;
	inst->bufs = calloc(prog->num_buffers + 1, sizeof(*inst->bufs));
	inst->uses = calloc(prog->num_buffers + 1, sizeof(*inst->uses));
	if (!inst->bufs || !inst->uses) {
		npu_cs_instance_free(inst);
		snprintf(msg, msg_size, "out of memory");
		return NPU_ERR_NO_MEMORY;
	}
	for (i = 0; i < prog->num_buffers; i++) {
		const struct npu_cs_buffer_decl *d = &prog->buffers[i];

		st = npu_buffer_alloc(dev, d->size,
				      d->read_only ? NPU_BUFFER_DEVICE_READ_ONLY : 0,
				      &inst->bufs[i]);
		if (st) {
			snprintf(msg, msg_size, "buffer '%s' (line %u): %s", d->name, d->line,
				 npu_device_last_error(dev));
			npu_cs_instance_free(inst);
			return st;
		}
		inst->num_bufs++;
		npu_buffer_map(inst->bufs[i], &map);
		init_buffer(d, map);
		inst->uses[i].buffer = inst->bufs[i];
		inst->uses[i].access = d->read_only ? NPU_ACCESS_READ_ONLY :
						      NPU_ACCESS_READ_WRITE;
	}
	st = npu_buffer_alloc(dev, prog->code_size, NPU_BUFFER_DEVICE_READ_ONLY,
			      &inst->cmd);
	if (st) {
		snprintf(msg, msg_size, "command buffer: %s", npu_device_last_error(dev));
		npu_cs_instance_free(inst);
		return st;
	}
	npu_buffer_map(inst->cmd, &map);
	code = map;
	memcpy(code, prog->code, prog->code_size);
	for (i = 0; i < prog->num_relocs; i++) {
		const struct npu_cs_reloc *r = &prog->relocs[i];
		uint64_t va = npu_buffer_va(inst->bufs[r->buffer]) + r->addend;

		memcpy(code + r->offset, &va, sizeof(va));
	}
	inst->submit.cmd = inst->cmd;
	inst->submit.cmd_offset = 0;
	inst->submit.cmd_size = prog->code_size;
	inst->submit.buffers = inst->uses;
	inst->submit.num_buffers = prog->num_buffers;
	inst->submit.queue = prog->queue;
	*out = inst;
	return NPU_OK;
}

const char *npu_cs_opcode_name(uint32_t opcode)
{
	return npu_opcode_name(opcode);
}

uint32_t npu_cs_crc32(const void *data, size_t size)
{
	uLong crc = crc32(0L, Z_NULL, 0);

	/* zlib takes uInt lengths: feed a large buffer in pieces. */
	while (size) {
		uInt n = size > (1u << 30) ? (1u << 30) : (uInt)size;

		crc = crc32(crc, data, n);
		data = (const uint8_t *)data + n;
		size -= n;
	}
	return (uint32_t)crc;
}
