// SPDX-License-Identifier: MIT
/*
 * The quantization report: per NPU node, the error of its int8 output
 * against fp32, alone (local) and accumulated (end to end). See
 * quant_report.h.
 */
#include "compiler/quant_report.h"
#include "compiler/lower.h"
#include "compiler/boundary.h"
#include "compiler/segment_rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_ops.h"	/* firmware-sim's reference kernels */

double npu_err_sqnr_db(const struct npu_err_acc *a)
{
	if (!a->n)
		return NAN;
	if (a->ee <= 0.0)
		return INFINITY;
	if (a->rr <= 0.0)
		return -INFINITY;
	return 10.0 * log10(a->rr / a->ee);
}

double npu_err_cosine(const struct npu_err_acc *a)
{
	if (!a->n)
		return NAN;
	if (a->rr <= 0.0 || a->qq <= 0.0)
		return a->rr == a->qq ? 1.0 : 0.0;
	return a->rq / sqrt(a->rr * a->qq);
}

static void acc_add(struct npu_err_acc *a, const float *ref, const float *q, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double r = ref[i], v = q[i];

		if (!isfinite(r) || !isfinite(v))
			continue;
		a->rr += r * r;
		a->ee += (r - v) * (r - v);
		a->rq += r * v;
		a->qq += v * v;
		a->n++;
	}
}

/* ---- One lop on the host, with the reference kernels ---- */

/* A scratch "SRAM" holding one op's operands untiled. */
struct scratch {
	uint8_t *mem;
	size_t top, cap;
};

static uint32_t put(struct scratch *s, const void *src, size_t n)
{
	size_t off = s->top;

	if (src)
		memcpy(s->mem + off, src, n);
	else
		memset(s->mem + off, 0, n);
	s->top += (n + 63) & ~(size_t)63;
	return (uint32_t)off;
}

static uint32_t put_quant(struct scratch *s, const struct npu_lop_quant *q, uint32_t n)
{
	uint32_t off = put(s, NULL, (size_t)n * 5);

	memcpy(s->mem + off, q->mult, (size_t)n * 4);
	memcpy(s->mem + off + (size_t)n * 4, q->shift, n);
	return off;
}

/* Weight bytes of a conv lop: every column phase's kernel when folded. */
static size_t conv_weight_bytes(const struct npu_lop *l, const struct npu_act *in,
				const struct npu_act *out)
{
	struct npu_fold_phase ph;

	if (!l->conv.fold_w)
		return (size_t)out->c * l->conv.k_h * l->conv.k_w * (in->c / l->conv.groups);
	if (!npu_conv_fold_phase(in->w, out->w, in->c, out->c, l->conv.k_h, l->conv.k_w,
				 l->conv.stride_w, l->conv.pad_left, l->conv.fold_w,
				 l->conv.fold_w / l->conv.stride_w - 1, &ph))
		return 0;
	return ph.weight_off + (size_t)out->c * l->conv.k_h * ph.k_w * l->conv.fold_w * in->c;
}

static size_t lop_const_bytes(const struct npu_lop *l, const struct npu_act *in,
			      const struct npu_act *out)
{
	size_t b = 256 + 64 * 8 + (size_t)out->c * 9;

	if (l->kind == NPU_LOP_CONV && l->conv.phase_h)	/* every phase's constants */
		b = 256 + 64 * 8 + (size_t)l->conv.phase_h * l->conv.phase_w * out->c *
			(l->conv.fold_w ? l->conv.fold_w : 1) *
			((size_t)(l->conv.fold_w ? l->conv.fold_w : 1) * in->c + 9 + 64);
	else if (l->kind == NPU_LOP_CONV)
		b += conv_weight_bytes(l, in, out);
	else if (l->kind == NPU_LOP_MATMUL)
		b += (size_t)out->c * in->c;
	else if (l->kind == NPU_LOP_ELTWISE)
		b += l->elt.b_count ? l->elt.b_count : npu_act_bytes(in);
	else if (l->kind == NPU_LOP_ROWS)
		b += l->rows.consts_size;
	return b;
}

/* MATMUL of two activations: per batch, B [k][n] transposed to [n][k]
 * (or [n][k] already: b_nk). */
static bool run_matmul_act(const struct npu_segment_program *p, const struct npu_lop *l,
			   const int8_t *a, const int8_t *b, int8_t *out_data)
{
	const struct npu_act *in = &p->acts[l->in], *in2 = &p->acts[l->in2];
	const struct npu_act *out = &p->acts[l->out];
	const struct npu_lop_quant *q = &l->matmul.q;
	uint32_t m = (uint32_t)(npu_act_bytes(in) / l->matmul.batch / in->c), k = in->c;
	uint32_t n = out->c, bt, i, j;
	struct scratch s = { 0 };
	uint32_t a_off, b_off, o_off, q_off, t_off = 0;

	s.cap = (size_t)m * k + (size_t)k * n + (size_t)m * n + 256 + 64 * 8;
	s.mem = malloc(s.cap);
	if (!s.mem)
		return false;
	a_off = put(&s, NULL, (size_t)m * k);
	b_off = put(&s, NULL, (size_t)k * n);
	o_off = put(&s, NULL, (size_t)m * n);
	q_off = put_quant(&s, q, 1);
	if (q->lut)
		t_off = put(&s, q->lut, 256);
	for (bt = 0; bt < l->matmul.batch; bt++) {
		struct npu_insn_matmul mm = {
			.a = a_off, .b = b_off, .quant = q_off, .output = o_off,
			.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS,
			.m = m, .k = k, .n = n, .a_stride = k, .out_stride = n,
			.zp_a = (int16_t)in->q.zero_point, .zp_b = (int16_t)in2->q.zero_point,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
		};

		memcpy(s.mem + a_off, a + (size_t)bt * m * k, (size_t)m * k);
		for (i = 0; i < k; i++)
			for (j = 0; j < n; j++)
				s.mem[b_off + (size_t)j * k + i] =
					(uint8_t)b[(size_t)bt * k * n + (l->matmul.b_nk ?
						   (size_t)j * k + i : (size_t)i * n + j)];
		npu_ref_matmul(&mm, s.mem);
		if (q->lut) {
			struct npu_insn_lut lt = { .input = o_off, .output = o_off, .table = t_off,
						   .count = m * n };
			npu_ref_lut(&lt, s.mem);
		}
		memcpy(out_data + (size_t)bt * m * n, s.mem + o_off, (size_t)m * n);
	}
	free(s.mem);
	return true;
}

/* 'out' = lop applied to 'a' (and 'b': in2) exactly as the device computes. */
static bool run_lop(const struct npu_segment_program *p, const struct npu_lop *l,
		    const int8_t *a, const int8_t *b, int8_t *out_data)
{
	const struct npu_act *in = &p->acts[l->in], *out = &p->acts[l->out];
	size_t in_bytes = npu_act_bytes(in), out_bytes = npu_act_bytes(out);
	struct scratch s = { 0 };
	uint32_t in_off, out_off, n;

	if (l->kind == NPU_LOP_COPY) {
		/* Its part of 'out' (the rest is other COPY lops' work). */
		uint32_t r, k, i, reps = l->copy.count > 1 ? l->copy.count : 1;

		for (i = 0; i < reps; i++)
			for (r = 0; r < l->copy.rows; r++) {
				const int8_t *src = a + l->copy.src_off + i * l->copy.src_step +
						    (uint64_t)r * l->copy.src_stride;
				int8_t *dst = out_data + l->copy.dst_off + i * l->copy.dst_step +
					      (uint64_t)r * l->copy.dst_stride;

				for (k = 0; k < l->copy.row_bytes; k++)
					dst[k] = l->copy.lut ? l->copy.lut[(uint8_t)(src[k] + 128)] :
							       src[k];
			}
		return true;
	}
	if (l->kind == NPU_LOP_MATMUL && l->matmul.batch)
		return b && run_matmul_act(p, l, a, b, out_data);
	s.cap = 2 * in_bytes + out_bytes + lop_const_bytes(l, in, out) + 64 * 16;
	s.mem = malloc(s.cap);
	if (!s.mem)
		return false;
	in_off = put(&s, a, in_bytes);
	out_off = put(&s, NULL, out_bytes);
	if (l->kind == NPU_LOP_MATMUL) {
		const struct npu_lop_quant *q = &l->matmul.q;
		struct npu_insn_matmul mm = {
			.a = in_off, .b = put(&s, l->matmul.weight, (size_t)out->c * in->c),
			.bias = q->bias ? put(&s, q->bias, (size_t)out->c * 4) : 0,
			.output = out_off, .flags = q->bias ? 0 : NPU_CONV_NO_BIAS,
			.m = in->n * in->h * in->w, .k = in->c, .n = out->c,
			.a_stride = in->c, .out_stride = out->c,
			.zp_a = (int16_t)in->q.zero_point,
			.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
			.act_min = q->act_min, .act_max = q->act_max,
		};

		mm.quant = put_quant(&s, q, out->c);
		npu_ref_matmul(&mm, s.mem);
		if (q->lut) {
			struct npu_insn_lut lt = { .input = out_off, .output = out_off,
						   .table = put(&s, q->lut, 256),
						   .count = (uint32_t)out_bytes };
			npu_ref_lut(&lt, s.mem);
		}
		memcpy(out_data, s.mem + out_off, out_bytes);
		free(s.mem);
		return true;
	}
	if (l->kind == NPU_LOP_ROWS) {
		/* every row of the tensor in one instruction, as codegen's tiles */
		uint32_t rows = (uint32_t)(in_bytes / in->c);
		uint32_t consts = put(&s, l->rows.consts, l->rows.consts_size);

		if (l->rows.opcode == NPU_OP_REDUCE) {
			struct npu_insn_reduce rd = {
				.input = in_off, .output = out_off, .rows = rows, .c = in->c,
				.in_stride = in->c, .out_stride = 1, .mult = l->rows.mult,
				.shift = l->rows.shift, .mode = l->rows.mode,
				.zp_in = (int16_t)in->q.zero_point,
				.zp_out = (int16_t)out->q.zero_point,
				.act_min = -128, .act_max = 127,
			};

			rd.hdr.opcode = NPU_OP_REDUCE;
			rd.hdr.size = sizeof(rd);
			npu_ref_reduce(&rd, s.mem);
		} else if (l->rows.opcode == NPU_OP_SOFTMAX) {
			struct npu_insn_softmax sm = {
				.input = in_off, .output = out_off, .table = consts,
				.rows = rows, .c = out->c, .in_stride = out->c,
				.out_stride = out->c, .mult = l->rows.mult,
				.shift = l->rows.shift, .zp_out = (int16_t)out->q.zero_point,
				.act_min = -128, .act_max = 127,
			};

			sm.hdr.opcode = NPU_OP_SOFTMAX;
			sm.hdr.size = sizeof(sm);
			npu_ref_softmax(&sm, s.mem);
		} else {
			struct npu_insn_layernorm ln = {
				.input = in_off, .output = out_off, .params = consts,
				.rows = rows, .c = out->c, .in_stride = out->c,
				.out_stride = out->c, .eps = l->rows.eps,
				.shift = l->rows.shift, .zp_out = (int16_t)out->q.zero_point,
				.act_min = -128, .act_max = 127,
			};

			ln.hdr.opcode = NPU_OP_LAYERNORM;
			ln.hdr.size = sizeof(ln);
			npu_ref_layernorm(&ln, s.mem);
		}
		memcpy(out_data, s.mem + out_off, out_bytes);
		free(s.mem);
		return true;
	}
	for (n = 0; n < in->n; n++) {
		uint32_t i_off = in_off + n * in->h * in->w * in->c;
		uint32_t o_off = out_off + n * out->h * out->w * out->c;
		uint32_t count = out->h * out->w * out->c;
		size_t mark = s.top;

		if (l->kind == NPU_LOP_CONV && l->conv.phase_h) {
			/* One 1x1 conv per row phase, interleaved as codegen does. */
			const struct npu_lop_quant *q = &l->conv.q;
			uint32_t f = l->conv.fold_w ? l->conv.fold_w : 1;
			uint32_t pc = f * l->conv.phase_w * out->c, dy;

			for (dy = 0; dy < l->conv.phase_h; dy++) {
				struct npu_lop_quant qd = {
					.bias = q->bias ? q->bias + dy * pc : NULL,
					.mult = q->mult + dy * pc, .shift = q->shift + dy * pc,
				};
				struct npu_insn_conv2d cv = {
					.input = i_off,
					.output = o_off + dy * out->w * out->c,
					.weight = put(&s, l->conv.weight + (size_t)dy * pc * f * in->c,
						      (size_t)pc * f * in->c),
					.bias = q->bias ? put(&s, qd.bias, (size_t)pc * 4) : 0,
					.flags = q->bias ? 0 : NPU_CONV_NO_BIAS,
					.in_h = (uint16_t)in->h, .in_w = (uint16_t)(in->w / f),
					.in_c = (uint16_t)(f * in->c), .out_c = (uint16_t)pc,
					.out_h = (uint16_t)in->h, .out_w = (uint16_t)(in->w / f),
					.k_h = 1, .k_w = 1, .stride_h = 1, .stride_w = 1,
					.dil_h = 1, .dil_w = 1, .groups = 1,
					.in_row_stride = in->w * in->c, .in_pixel_stride = f * in->c,
					.out_row_stride = l->conv.phase_h * out->w * out->c,
					.out_pixel_stride = pc,
					.zp_in = (int16_t)in->q.zero_point,
					.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
					.act_min = q->act_min, .act_max = q->act_max,
				};

				cv.quant = put_quant(&s, &qd, pc);
				npu_ref_conv2d(&cv, s.mem);
			}
			if (q->lut) {
				struct npu_insn_lut lt = { .input = o_off, .output = o_off,
							   .table = put(&s, q->lut, 256),
							   .count = count };
				npu_ref_lut(&lt, s.mem);
			}
		} else if (l->kind == NPU_LOP_CONV) {
			const struct npu_lop_quant *q = &l->conv.q;
			uint32_t wsz = (uint32_t)conv_weight_bytes(l, in, out);
			struct npu_insn_conv2d cv = {
				.input = i_off, .output = o_off,
				.weight = put(&s, l->conv.weight, wsz),
				.bias = q->bias ? put(&s, q->bias, (size_t)out->c * 4) : 0,
				.flags = q->bias ? 0 : NPU_CONV_NO_BIAS,
				.in_h = (uint16_t)in->h, .in_w = (uint16_t)in->w,
				.in_c = (uint16_t)in->c, .out_c = (uint16_t)out->c,
				.out_h = (uint16_t)out->h, .out_w = (uint16_t)out->w,
				.k_h = l->conv.k_h, .k_w = l->conv.k_w,
				.stride_h = l->conv.stride_h, .stride_w = l->conv.stride_w,
				.dil_h = l->conv.dil_h, .dil_w = l->conv.dil_w,
				.pad_top = l->conv.pad_top, .pad_left = l->conv.pad_left,
				.pad_bottom = l->conv.pad_bottom, .pad_right = l->conv.pad_right,
				.groups = l->conv.groups,
				.ins_h = l->conv.ins_h, .ins_w = l->conv.ins_w,
				.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
				.out_row_stride = out->w * out->c, .out_pixel_stride = out->c,
				.zp_in = (int16_t)in->q.zero_point,
				.zp_out = (int16_t)(q->lut ? q->pre_act_zp : out->q.zero_point),
				.act_min = q->act_min, .act_max = q->act_max,
			};

			cv.quant = put_quant(&s, q, out->c);
			if (l->conv.fold_w) {
				/* The column phases over wide pixels, as codegen emits them. */
				uint32_t R = l->conv.fold_w / l->conv.stride_w, r;

				for (r = 0; r < R; r++) {
					struct npu_fold_phase ph;
					struct npu_insn_conv2d f = cv;

					npu_conv_fold_phase(in->w, out->w, in->c, out->c, l->conv.k_h,
							    l->conv.k_w, l->conv.stride_w,
							    l->conv.pad_left, l->conv.fold_w, r, &ph);
					f.weight = cv.weight + (uint32_t)ph.weight_off;
					f.output = cv.output + r * out->c;
					f.in_w = (uint16_t)ph.in_w;
					f.in_c = (uint16_t)(l->conv.fold_w * in->c);
					f.in_pixel_stride = l->conv.fold_w * in->c;
					f.out_w = (uint16_t)(out->w / R);
					f.out_pixel_stride = R * out->c;
					f.k_w = (uint8_t)ph.k_w;
					f.stride_w = 1;
					f.pad_left = (uint8_t)ph.pad_left;
					f.pad_right = (uint8_t)ph.pad_right;
					npu_ref_conv2d(&f, s.mem);
				}
			} else {
				npu_ref_conv2d(&cv, s.mem);
			}
			if (q->lut) {
				struct npu_insn_lut lt = { .input = o_off, .output = o_off,
							   .table = put(&s, q->lut, 256),
							   .count = count };
				npu_ref_lut(&lt, s.mem);
			}
		} else if (l->kind == NPU_LOP_POOL) {
			struct npu_insn_pool pl = {
				.input = i_off, .output = o_off,
				.mode = l->pool.mode, .flags = l->pool.flags, .c = (uint16_t)in->c,
				.in_h = (uint16_t)in->h, .in_w = (uint16_t)in->w,
				.out_h = (uint16_t)out->h, .out_w = (uint16_t)out->w,
				.k_h = l->pool.k_h, .k_w = l->pool.k_w,
				.stride_h = l->pool.stride_h, .stride_w = l->pool.stride_w,
				.pad_top = l->pool.pad_top, .pad_left = l->pool.pad_left,
				.pad_bottom = l->pool.pad_bottom, .pad_right = l->pool.pad_right,
				.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
				.out_row_stride = out->w * out->c, .out_pixel_stride = out->c,
				.zp_in = (int16_t)in->q.zero_point,
				.zp_out = (int16_t)out->q.zero_point,
				.act_min = l->pool.act_min, .act_max = l->pool.act_max,
			};

			npu_ref_pool(&pl, s.mem);
		} else if (l->kind == NPU_LOP_ELTWISE) {
			const struct npu_act *bq = l->elt.b_const ? NULL : &p->acts[l->in2];
			bool streamed = bq && l->elt.bcast == NPU_BCAST_NONE;
			uint32_t b_off;
			struct npu_insn_eltwise el = {
				.a = i_off, .output = o_off, .count = count,
				.mode = l->elt.mode, .bcast = l->elt.bcast, .shift = l->elt.shift,
				.channels = l->elt.bcast == NPU_BCAST_CHANNEL ? out->c : 0,
				.mult_a = l->elt.mult_a, .mult_b = l->elt.mult_b,
				.zp_a = (int16_t)in->q.zero_point,
				.zp_b = bq ? (int16_t)bq->q.zero_point : l->elt.zp_b,
				.zp_out = (int16_t)(l->elt.lut ? l->elt.pre_act_zp : out->q.zero_point),
				.act_min = l->elt.act_min, .act_max = l->elt.act_max,
			};

			if (l->elt.b_const)
				b_off = put(&s, l->elt.b_const, l->elt.b_count);
			else if (streamed)
				b_off = put(&s, b + (size_t)n * count, count);
			else
				b_off = put(&s, b, l->elt.b_count);
			el.b = b_off;
			npu_ref_eltwise(&el, s.mem);
			if (l->elt.lut) {
				struct npu_insn_lut lt = { .input = o_off, .output = o_off,
							   .table = put(&s, l->elt.lut, 256),
							   .count = count };
				npu_ref_lut(&lt, s.mem);
			}
		} else if (l->kind == NPU_LOP_RESIZE) {
			struct npu_insn_resize rs = {
				.input = i_off, .output = o_off,
				.mode = l->resize.mode, .c = (uint16_t)in->c,
				.in_h = (uint16_t)in->h, .in_w = (uint16_t)in->w,
				.out_h = (uint16_t)out->h, .out_w = (uint16_t)out->w,
				.in_row_stride = in->w * in->c, .in_pixel_stride = in->c,
				.out_row_stride = out->w * out->c, .out_pixel_stride = out->c,
				.step_h = l->resize.step_h, .step_w = l->resize.step_w,
				.offset_h = l->resize.offset_h, .offset_w = l->resize.offset_w,
				.den_h = l->resize.den_h, .den_w = l->resize.den_w,
			};

			npu_ref_resize(&rs, s.mem);
		} else if (l->kind == NPU_LOP_LUT) {
			struct npu_insn_lut lt = { .input = i_off, .output = o_off,
						   .table = put(&s, l->lut.table, 256),
						   .count = count };
			npu_ref_lut(&lt, s.mem);
		} else {
			free(s.mem);
			return false;	/* a kind this report does not know */
		}
		s.top = mark;
	}
	memcpy(out_data, s.mem + out_off, out_bytes);
	free(s.mem);
	return true;
}

/* ---- Values kept across a sample's runs ---- */

/*
 * Values inside subgraphs (NPU segments in If / Loop / Scan bodies), by
 * name: names are unique across a model's graphs. Only a body's first run
 * in a sample is kept, so a Loop's first iteration is what is reported.
 */
struct sub_store {
	const char **want;
	struct npu_tensor **t;	/* t[i] holds want[i] */
	size_t count, cap;
};

struct store {
	struct npu_tensor **t;	/* by value index */
	const bool *want;
	size_t count;
	const struct npu_graph *g;	/* the graph the indices are of */
	struct sub_store sub;
};

static bool sub_want(struct sub_store *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->count; i++)
		if (!strcmp(s->want[i], name))
			return true;
	if (s->count == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		const char **w = realloc(s->want, cap * sizeof(*w));
		struct npu_tensor **t;

		if (!w)
			return false;
		s->want = w;
		t = realloc(s->t, cap * sizeof(*t));
		if (!t)
			return false;
		s->t = t;
		s->cap = cap;
	}
	s->want[s->count] = name;
	s->t[s->count++] = NULL;
	return true;
}

static struct npu_tensor **sub_slot(struct sub_store *s, const char *name)
{
	size_t i;

	for (i = 0; name && i < s->count; i++)
		if (!strcmp(s->want[i], name))
			return &s->t[i];
	return NULL;
}

static void store_put(struct store *st, const struct npu_value *v, const struct npu_tensor *x)
{
	struct npu_tensor *c, **slot;

	if (!v || !x || x->dtype != NPU_DTYPE_FLOAT)
		return;
	if (st->g && (v->index >= st->g->num_values || st->g->values[v->index] != v))
		slot = sub_slot(&st->sub, v->name);	/* a subgraph's value */
	else
		slot = v->index < st->count && st->want[v->index] ? &st->t[v->index] : NULL;
	if (!slot || *slot)
		return;
	c = npu_tensor_create(NPU_DTYPE_FLOAT, &x->shape);
	if (!c)
		return;
	memcpy(c->data, x->data, x->nbytes);
	*slot = c;
}

/* The value named 'name' as the run saw it: top graph 'g' first. */
static const struct npu_tensor *store_get(struct store *st, const struct npu_graph *g,
					  const char *name)
{
	const struct npu_value *v = name ? npu_graph_find_value(g, name) : NULL;
	struct npu_tensor **slot;

	if (v && v->index < st->count && st->t[v->index])
		return st->t[v->index];
	slot = sub_slot(&st->sub, name);
	return slot ? *slot : NULL;
}

static void store_clear(struct store *st)
{
	size_t i;

	for (i = 0; i < st->count; i++) {
		npu_tensor_destroy(st->t[i]);
		st->t[i] = NULL;
	}
	for (i = 0; i < st->sub.count; i++) {
		npu_tensor_destroy(st->sub.t[i]);
		st->sub.t[i] = NULL;
	}
}

static void observe(void *arg, const struct npu_node *n, const struct npu_tensor *const *outs)
{
	size_t i;

	for (i = 0; i < n->num_outputs; i++)
		store_put(arg, n->outputs[i], outs[i]);
}

/* ---- The report ---- */

struct ctx {
	struct npu_graph *ref, *compiled;
	const struct npu_compiled *c;
	struct npu_qr *r;
	size_t *first_layer;	/* per segment: index of its first layer */
	struct store fp32, seen;	/* ref values; compiled-graph values */
};

static const struct npu_tensor *ref_of(struct ctx *x, const char *name)
{
	return store_get(&x->fp32, x->ref, name);
}

/* The value named 'name' in g or any of its subgraphs, or NULL. */
static const struct npu_value *find_any(const struct npu_graph *g, const char *name)
{
	const struct npu_value *v = npu_graph_find_value(g, name);
	size_t i, a;

	for (i = 0; !v && i < g->num_nodes; i++)
		for (a = 0; !v && a < g->nodes[i]->num_attrs; a++)
			if (g->nodes[i]->attrs[a].g)
				v = find_any(g->nodes[i]->attrs[a].g, name);
	return v;
}

static enum npu_layout act_layout(struct ctx *x, const struct npu_act *a)
{
	const struct npu_value *v = a->name ? find_any(x->ref, a->name) : NULL;

	/* The fp32 graph is not marked (npu_mark_rows_layout()): the act knows. */
	if (a->rows_layout)
		return NPU_LAYOUT_ROWS;
	if (a->im2col.k_h)
		return NPU_LAYOUT_IM2COL;
	return v ? npu_value_layout(v) : NPU_LAYOUT_NHWC;
}

/* Dequantize act 'a' from q8 and compare it with its fp32 value. */
static npu_status compare(struct ctx *x, const struct npu_act *a, const int8_t *q8,
			  struct npu_err_acc *acc)
{
	const struct npu_tensor *ref = ref_of(x, a->name);
	struct npu_tensor *deq;

	if (!ref || ref->nbytes != npu_act_bytes(a) * sizeof(float))
		return NPU_OK;
	deq = npu_tensor_create(NPU_DTYPE_FLOAT, &ref->shape);
	if (!deq)
		return NPU_ERR_NO_MEMORY;
	npu_segment_dequantize_out(q8, a, act_layout(x, a), deq);
	if (a->flat_clamped) {
		/* Beyond the range its LUT is flat: clamping there loses nothing,
		 * so the reference is clamped the same way. */
		float lo = npu_dequantize_value(-128, a->q), hi = npu_dequantize_value(127, a->q);
		float *r = malloc(ref->nbytes);
		uint64_t k;

		if (!r) {
			npu_tensor_destroy(deq);
			return NPU_ERR_NO_MEMORY;
		}
		for (k = 0; k < npu_act_bytes(a); k++)
			r[k] = fminf(fmaxf(((const float *)ref->data)[k], lo), hi);
		acc_add(acc, r, deq->data, npu_act_bytes(a));
		free(r);
	} else {
		acc_add(acc, ref->data, deq->data, npu_act_bytes(a));
	}
	npu_tensor_destroy(deq);
	return NPU_OK;
}

/* q8 of act 'a' from the fp32 value of its name (NULL if none). */
static int8_t *quantize_ref(struct ctx *x, const struct npu_act *a)
{
	const struct npu_tensor *ref = ref_of(x, a->name);
	int8_t *q;

	/* An im2col act gathers from its value (which it checks the shape of). */
	if (!ref || (ref->nbytes != npu_act_bytes(a) * sizeof(float) && !a->im2col.k_h))
		return NULL;
	q = malloc(npu_act_bytes(a));
	if (q)
		npu_segment_quantize_in(ref, a, act_layout(x, a), q);
	return q;
}

static const char *lop_kind_name(const struct npu_lop *l);

/* Whether lop i is the last one writing its output. */
static bool last_writer(const struct npu_segment_program *p, size_t i)
{
	size_t j;

	for (j = i + 1; j < p->num_lops; j++)
		if (p->lops[j].out == p->lops[i].out)
			return false;
	return true;
}

static npu_status segment_sample(struct ctx *x, size_t si, struct npu_error *err)
{
	const struct npu_segment *seg = x->c->segments[si];
	const struct npu_segment_program *p = &seg->prog;
	int8_t **q8 = calloc(p->num_acts + 1, sizeof(*q8));
	npu_status st = NPU_OK;
	size_t i;

	if (!q8)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
	/* The host emulation below is int8 only. */
	for (i = 0; i < p->num_acts; i++) {
		if (p->acts[i].i16) {
			free(q8);
			return npu_error_set(err, NPU_ERR_UNSUPPORTED,
					     "quant report: segment %zu has int16 tensors ('%s'): the report emulates int8 only; run it without --int16 / --precision int16",
					     si, p->acts[i].name ? p->acts[i].name : "?");
		}
	}
	/* End to end: the segment's actual inputs, as the run quantized them. */
	for (i = 0; i < seg->num_inputs && !st; i++) {
		const struct npu_act *a = &p->acts[seg->input_acts[i]];
		const struct npu_tensor *t = store_get(&x->seen, x->compiled, seg->inputs[i]->name);

		if (!t && seg->graph_path)
			goto out;	/* its subgraph did not run in this sample */
		q8[seg->input_acts[i]] = malloc(npu_act_bytes(a));
		/* An im2col act holds more than its value (and checks its shape). */
		if (!t || !q8[seg->input_acts[i]] ||
		    (t->nbytes != npu_act_bytes(a) * sizeof(float) &&
		     seg->input_layout[i] != NPU_LAYOUT_IM2COL)) {
			st = npu_error_set(err, NPU_ERR_INTERNAL,
					   "quant report: segment %zu input '%s' was not observed",
					   si, seg->inputs[i]->name);
			break;
		}
		npu_segment_quantize_in(t, a, seg->input_layout[i], q8[seg->input_acts[i]]);
	}
	for (i = 0; i < p->num_lops && !st; i++) {
		const struct npu_lop *l = &p->lops[i];
		struct npu_qr_layer *ly = &x->r->layers[x->first_layer[si] + i];
		const struct npu_act *out = &p->acts[l->out];
		bool two = npu_lop_reads_in2(l);
		int8_t *la, *lb = NULL, *lo;

		if (!q8[l->out])
			q8[l->out] = malloc(npu_act_bytes(out));
		if (!q8[l->out] || !q8[l->in] || (two && !q8[l->in2]) ||
		    !run_lop(p, l, q8[l->in], two ? q8[l->in2] : NULL, q8[l->out])) {
			st = npu_error_set(err, NPU_ERR_INTERNAL,
					   "quant report: cannot evaluate '%s' (%s) on the host",
					   l->name, lop_kind_name(l));
			break;
		}
		/* A COPY fills part of its output: compare after the last one. */
		if (l->kind == NPU_LOP_COPY && !last_writer(p, i))
			continue;
		st = compare(x, out, q8[l->out], &ly->e2e);
		if (l->kind == NPU_LOP_COPY)
			continue;	/* no local form: other lops wrote the rest */
		/* Local: this lop alone on quantized fp32 inputs. */
		la = quantize_ref(x, &p->acts[l->in]);
		if (two)
			lb = quantize_ref(x, &p->acts[l->in2]);
		lo = malloc(npu_act_bytes(out));
		if (!st && la && lo && (!two || lb) && run_lop(p, l, la, lb, lo))
			st = compare(x, out, lo, &ly->local);
		free(la);
		free(lb);
		free(lo);
	}
	/* The emulation must be what the device computed: compare outputs. */
	for (i = 0; i < seg->num_outputs && !st; i++) {
		const struct npu_act *a = &p->acts[seg->output_acts[i]];
		const struct npu_tensor *t = store_get(&x->seen, x->compiled, seg->outputs[i]->name);
		struct npu_tensor *deq;
		uint64_t k;

		if (!t || !q8[seg->output_acts[i]])
			continue;
		deq = npu_tensor_create(NPU_DTYPE_FLOAT, &t->shape);
		if (!deq) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
			break;
		}
		npu_segment_dequantize_out(q8[seg->output_acts[i]], a, seg->output_layout[i], deq);
		for (k = 0; k < npu_act_bytes(a); k++) {
			x->r->compared++;
			x->r->mismatches += ((float *)deq->data)[k] != ((float *)t->data)[k];
		}
		npu_tensor_destroy(deq);
	}
out:
	for (i = 0; i < p->num_acts; i++)
		free(q8[i]);
	free(q8);
	return st;
}

static int cmp_layer(const void *pa, const void *pb)
{
	const struct npu_qr_layer *a = pa, *b = pb;
	double x = npu_err_sqnr_db(&a->local), y = npu_err_sqnr_db(&b->local);

	if (isnan(x) != isnan(y))
		return isnan(x) ? 1 : -1;	/* layers without a reference last */
	if (x != y && !(isnan(x) && isnan(y)))
		return x < y ? -1 : 1;
	return strcmp(a->node, b->node);
}

/* Worst output SQNR first (the 'e2e' field of a sensitivity report). */
static int cmp_sensitivity(const void *pa, const void *pb)
{
	const struct npu_qr_layer *a = pa, *b = pb;
	double x = npu_err_sqnr_db(&a->e2e), y = npu_err_sqnr_db(&b->e2e);

	if (isnan(x) != isnan(y))
		return isnan(x) ? 1 : -1;
	if (x != y && !(isnan(x) && isnan(y)))
		return x < y ? -1 : 1;
	return strcmp(a->node, b->node);
}

static const char *lop_kind_name(const struct npu_lop *l)
{
	switch (l->kind) {
	case NPU_LOP_CONV: return "CONV2D";
	case NPU_LOP_MATMUL: return "MATMUL";
	case NPU_LOP_POOL: return "POOL";
	case NPU_LOP_ELTWISE: return l->elt.mode == NPU_ELT_ADD ? "ELTWISE ADD" : "ELTWISE MUL";
	case NPU_LOP_RESIZE: return "RESIZE";
	case NPU_LOP_ROWS: return l->rows.opcode == NPU_OP_SOFTMAX ? "SOFTMAX" :
				  l->rows.opcode == NPU_OP_REDUCE ? "REDUCE" : "LAYERNORM";
	case NPU_LOP_COPY: return l->copy.lut ? "DMA + LUT" : "DMA";
	default: return "LUT";
	}
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

npu_status npu_quant_report_build(struct npu_graph *ref, struct npu_graph *compiled,
				  const struct npu_compiled *c,
				  const struct npu_compile_options *opts, size_t max_samples,
				  struct npu_qr *out, struct npu_error *err)
{
	struct ctx x = { .ref = ref, .compiled = compiled, .c = c, .r = out };
	bool *want_ref = calloc(ref->num_values + 1, sizeof(bool));
	bool *want_seen = calloc(compiled->num_values + 1, sizeof(bool));
	const struct npu_graph_runner *run = opts->runner;
	npu_status (*open_fn)(struct npu_graph *, int, struct npu_threadpool *, npu_graph_observe_fn,
			      void *, void *, void **, struct npu_error *) = run ? run->open : NULL;
	void *re = NULL, *ce = NULL;
	struct npu_tensor **set = calloc(ref->num_inputs + 1, sizeof(*set));
	size_t samples = 0, total = 0, i, j, k;
	bool ok = true;
	npu_status st;

	memset(out, 0, sizeof(*out));
	x.first_layer = calloc(c->num_segments + 1, sizeof(*x.first_layer));
	x.fp32 = (struct store){ calloc(ref->num_values + 1, sizeof(void *)), want_ref, ref->num_values,
				 ref, { 0 } };
	x.seen = (struct store){ calloc(compiled->num_values + 1, sizeof(void *)), want_seen,
				 compiled->num_values, compiled, { 0 } };
	for (i = 0; i < c->num_segments; i++)
		total += c->segments[i]->prog.num_lops;
	out->layers = calloc(total + 1, sizeof(*out->layers));
	if (!want_ref || !want_seen || !set || !x.first_layer || !x.fp32.t || !x.seen.t ||
	    !out->layers) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
		goto done;
	}
	/* Layers, and the values to keep: every act's fp32 value by name,
	 * every segment boundary value of the compiled run. */
	for (i = 0; i < c->num_segments; i++) {
		const struct npu_segment *seg = c->segments[i];

		x.first_layer[i] = out->count;
		for (j = 0; j < seg->prog.num_acts; j++) {
			const struct npu_value *v = seg->prog.acts[j].name
				? npu_graph_find_value(ref, seg->prog.acts[j].name) : NULL;

			if (v)
				want_ref[v->index] = true;
			else if (seg->graph_path && seg->prog.acts[j].name)
				ok &= sub_want(&x.fp32.sub, seg->prog.acts[j].name);
		}
		for (j = 0; j < seg->num_inputs + seg->num_outputs; j++) {
			const struct npu_value *bv = j < seg->num_inputs ? seg->inputs[j]
							 : seg->outputs[j - seg->num_inputs];
			const struct npu_value *v = npu_graph_find_value(compiled, bv->name);

			if (v)
				want_seen[v->index] = true;
			else if (seg->graph_path)
				ok &= sub_want(&x.seen.sub, bv->name);
		}
		/* A body's segment: every run of the subgraphs is observed. */
		if (seg->graph_path && run)
			open_fn = run->open_nested;
		if (!ok) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
			goto done;
		}
		for (j = 0; j < seg->prog.num_lops; j++) {
			const struct npu_lop *l = &seg->prog.lops[j];
			struct npu_qr_layer *ly = &out->layers[out->count++];
			const char *op = lop_kind_name(l);

			for (k = 0; k < c->num_records; k++)
				if (!strcmp(c->records[k].node, l->name))
					op = c->records[k].op_type;
			ly->node = dup_or_empty(l->name);
			ly->op_type = dup_or_empty(op);
			ly->value = dup_or_empty(seg->prog.acts[l->out].name);
			ly->segment = seg->index;
			if (!ly->node || !ly->op_type || !ly->value) {
				st = npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
				goto done;
			}
		}
	}
	out->outputs = calloc(ref->num_outputs + 1, sizeof(*out->outputs));
	if (!out->outputs) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
		goto done;
	}
	for (i = 0; i < ref->num_outputs; i++) {
		const struct npu_value *cv = npu_graph_find_value(compiled, ref->outputs[i]->name);

		out->outputs[out->num_outputs].node = strdup(ref->outputs[i]->name);
		out->outputs[out->num_outputs].op_type = strdup("output");
		out->outputs[out->num_outputs].value = strdup(ref->outputs[i]->name);
		out->outputs[out->num_outputs].segment = -1;
		if (!out->outputs[out->num_outputs].node || !out->outputs[out->num_outputs].op_type ||
		    !out->outputs[out->num_outputs++].value) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "quant report: out of memory");
			goto done;
		}
		want_ref[ref->outputs[i]->index] = true;
		if (cv)
			want_seen[cv->index] = true;
	}
	for (i = 0; i < ref->num_inputs; i++)
		want_ref[ref->inputs[i]->index] = true;
	for (i = 0; i < compiled->num_inputs; i++)
		want_seen[compiled->inputs[i]->index] = true;
	st = npu_calib_count_samples(ref, opts, &samples, err);
	if (!st && !samples)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				   "quant report: no samples: give calibration data (--calib-dir DIR)");
	if (max_samples && samples > max_samples)
		samples = max_samples;
	if (!st && !run)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				   "quant report: no graph runner (npu_compile_options.runner)");
	if (!st && !open_fn)
		st = npu_error_set(err, NPU_ERR_UNSUPPORTED,
				   "quant report: NPU segments inside subgraphs need a runner that observes subgraphs (open_nested)");
	if (!st)
		st = open_fn(ref, opts->threads, opts->pool, observe, &x.fp32, NULL, &re, err);
	if (!st)
		st = open_fn(compiled, opts->threads, opts->pool, observe, &x.seen, NULL, &ce, err);
	for (k = 0; !st && k < samples; k++) {
		bool owned = false;

		st = npu_calib_get_sample(ref, opts, k, set, &owned, err);
		for (i = 0; !st && i < ref->num_inputs; i++) {
			store_put(&x.fp32, ref->inputs[i], set[i]);
			store_put(&x.seen, compiled->inputs[i], set[i]);
		}
		if (!st)
			st = run->run(re, (const struct npu_tensor *const *)set, err);
		if (!st)
			st = run->run(ce, (const struct npu_tensor *const *)set, err);
		for (i = 0; !st && i < c->num_segments; i++)
			st = segment_sample(&x, i, err);
		for (i = 0; !st && i < ref->num_outputs; i++) {
			const struct npu_value *cv = npu_graph_find_value(compiled, ref->outputs[i]->name);
			const struct npu_tensor *a = x.fp32.t[ref->outputs[i]->index];
			const struct npu_tensor *b = cv ? x.seen.t[cv->index] : NULL;

			if (a && b && a->nbytes == b->nbytes)
				acc_add(&out->outputs[i].e2e, a->data, b->data, a->nbytes / sizeof(float));
		}
		if (st)
			npu_error_prefix(err, "quant report, sample %zu", k);
		npu_calib_sample_release(set, ref->num_inputs, owned);
		store_clear(&x.fp32);
		store_clear(&x.seen);
		out->samples += !st;
	}
	if (!st)
		qsort(out->layers, out->count, sizeof(*out->layers), cmp_layer);
done:
	if (re)
		run->close(re);
	if (ce)
		run->close(ce);
	if (x.fp32.t)
		store_clear(&x.fp32);
	if (x.seen.t)
		store_clear(&x.seen);
	free(x.fp32.t);
	free(x.seen.t);
	free(x.fp32.sub.want);
	free(x.fp32.sub.t);
	free(x.seen.sub.want);
	free(x.seen.sub.t);
	free(x.first_layer);
	free(want_ref);
	free(want_seen);
	free(set);
	if (st)
		npu_quant_report_clear(out);
	return st;
}

/* ---- Sensitivity: the model's outputs with one layer in int8 ---- */

struct inject {
	const struct npu_value *value;	/* in the reference graph */
	const struct npu_tensor *with;	/* replaces its fp32 content */
};

/*
 * The runner calls the observer right after a node, before any consumer
 * runs, with the tensors consumers will read: rewriting the one output
 * puts this layer's int8 error, and only it, into the fp32 run.
 */
static void inject_observe(void *arg, const struct npu_node *n,
			   const struct npu_tensor *const *outs)
{
	const struct inject *in = arg;
	size_t i;

	for (i = 0; i < n->num_outputs; i++)
		if (n->outputs[i] == in->value && outs[i] && outs[i]->nbytes == in->with->nbytes)
			memcpy(((struct npu_tensor *)outs[i])->data, in->with->data, in->with->nbytes);
}

/*
 * Where the consumer is flat beyond an act's range, clamping there loses
 * nothing in int8 (compare()), but the fp32 graph after it may not be
 * clamped the same way: there the layer keeps the fp32 value.
 */
static void unclamp(struct npu_tensor *deq, const struct npu_tensor *ref, const struct npu_act *a)
{
	float lo = npu_dequantize_value(-128, a->q), hi = npu_dequantize_value(127, a->q);
	const float *r = ref->data;
	float *d = deq->data;
	uint64_t k;

	for (k = 0; k < npu_act_bytes(a); k++)
		if (r[k] < lo || r[k] > hi)
			d[k] = r[k];
}

npu_status npu_quant_sensitivity(struct npu_graph *ref, const struct npu_compiled *c,
				 const struct npu_compile_options *opts, size_t max_samples,
				 struct npu_qr *out, struct npu_error *err)
{
	struct ctx x = { .ref = ref, .c = c, .r = out };
	bool *want = calloc(ref->num_values + 1, sizeof(bool));
	struct inject inj = { 0 };
	const struct npu_graph_runner *run = opts->runner;
	void *re = NULL, *ie = NULL;
	struct npu_tensor **set = calloc(ref->num_inputs + 1, sizeof(*set));
	size_t samples = 0, total = 0, i, j, k, o;
	npu_status st = NPU_OK;

	memset(out, 0, sizeof(*out));
	x.fp32 = (struct store){ calloc(ref->num_values + 1, sizeof(void *)), want, ref->num_values,
				 NULL, { 0 } };
	for (i = 0; i < c->num_segments; i++)
		total += c->segments[i]->prog.num_lops;
	out->layers = calloc(total + 1, sizeof(*out->layers));
	if (!want || !set || !x.fp32.t || !out->layers) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "sensitivity: out of memory");
		goto done;
	}
	for (i = 0; i < c->num_segments; i++) {
		const struct npu_segment_program *p = &c->segments[i]->prog;

		for (j = 0; j < p->num_acts; j++) {
			const struct npu_value *v = p->acts[j].name
				? npu_graph_find_value(ref, p->acts[j].name) : NULL;

			if (v)
				want[v->index] = true;
		}
		for (j = 0; j < p->num_lops; j++) {
			struct npu_qr_layer *ly = &out->layers[out->count++];

			ly->node = dup_or_empty(p->lops[j].name);
			ly->op_type = dup_or_empty(lop_kind_name(&p->lops[j]));
			ly->value = dup_or_empty(p->acts[p->lops[j].out].name);
			ly->segment = c->segments[i]->index;
			if (!ly->node || !ly->op_type || !ly->value) {
				st = npu_error_set(err, NPU_ERR_NO_MEMORY, "sensitivity: out of memory");
				goto done;
			}
		}
	}
	for (i = 0; i < ref->num_outputs; i++)
		want[ref->outputs[i]->index] = true;
	st = npu_calib_count_samples(ref, opts, &samples, err);
	if (max_samples && samples > max_samples)
		samples = max_samples;
	if (!st && !run)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				   "sensitivity: no graph runner (npu_compile_options.runner)");
	if (!st)
		st = run->open(ref, opts->threads, opts->pool, observe, &x.fp32, NULL, &re, err);
	if (!st)	/* the same graph: the second run shares the first's plan */
		st = run->open(ref, opts->threads, opts->pool, inject_observe, &inj, re, &ie,
			       err);
	for (k = 0; !st && k < samples; k++) {
		size_t li = 0;
		bool owned = false;

		st = npu_calib_get_sample(ref, opts, k, set, &owned, err);
		for (i = 0; !st && i < ref->num_inputs; i++)
			store_put(&x.fp32, ref->inputs[i], set[i]);
		if (!st)
			st = run->run(re, (const struct npu_tensor *const *)set, err);
		for (i = 0; !st && i < c->num_segments; i++) {
			const struct npu_segment_program *p = &c->segments[i]->prog;

			for (j = 0; !st && j < p->num_lops; j++, li++) {
				const struct npu_lop *l = &p->lops[j];
				const struct npu_act *a = &p->acts[l->out];
				bool two = npu_lop_reads_in2(l);
				const struct npu_tensor *r = ref_of(&x, a->name);
				int8_t *la = quantize_ref(&x, &p->acts[l->in]);
				int8_t *lb = two ? quantize_ref(&x, &p->acts[l->in2]) : NULL;
				int8_t *lo = malloc(npu_act_bytes(a) + 1);
				struct npu_tensor *deq = r ? npu_tensor_create(NPU_DTYPE_FLOAT, &r->shape) : NULL;

				inj.value = a->name ? npu_graph_find_value(ref, a->name) : NULL;
				if (l->kind != NPU_LOP_COPY && r && deq && inj.value && la && lo && (!two || lb) &&
				    r->nbytes == npu_act_bytes(a) * sizeof(float) &&
				    run_lop(p, l, la, lb, lo)) {
					npu_segment_dequantize_out(lo, a, act_layout(&x, a), deq);
					if (a->flat_clamped)
						unclamp(deq, r, a);
					inj.with = deq;
					st = run->run(ie, (const struct npu_tensor *const *)set, err);
					for (o = 0; !st && o < ref->num_outputs; o++) {
						const struct npu_tensor *y = run->output(ie, o);
						const struct npu_tensor *yr = x.fp32.t[ref->outputs[o]->index];

						if (y && yr && y->dtype == NPU_DTYPE_FLOAT &&
						    y->nbytes == yr->nbytes)
							acc_add(&out->layers[li].e2e, yr->data, y->data,
								y->nbytes / sizeof(float));
					}
				}
				npu_tensor_destroy(deq);
				free(la);
				free(lb);
				free(lo);
			}
		}
		if (st)
			npu_error_prefix(err, "sensitivity, sample %zu", k);
		npu_calib_sample_release(set, ref->num_inputs, owned);
		store_clear(&x.fp32);
		out->samples += !st;
	}
	if (!st)
		qsort(out->layers, out->count, sizeof(*out->layers), cmp_sensitivity);
done:
	if (re)
		run->close(re);
	if (ie)
		run->close(ie);
	if (x.fp32.t)
		store_clear(&x.fp32);
	free(x.fp32.t);
	free(want);
	free(set);
	if (st)
		npu_quant_report_clear(out);
	return st;
}

void npu_quant_report_clear(struct npu_qr *r)
{
	size_t i;

	for (i = 0; r->layers && i < r->count; i++) {
		free(r->layers[i].node);
		free(r->layers[i].op_type);
		free(r->layers[i].value);
	}
	free(r->layers);
	for (i = 0; r->outputs && i < r->num_outputs; i++) {
		free(r->outputs[i].node);
		free(r->outputs[i].op_type);
		free(r->outputs[i].value);
	}
	free(r->outputs);
	memset(r, 0, sizeof(*r));
}
