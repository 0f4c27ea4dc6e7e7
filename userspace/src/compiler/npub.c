// SPDX-License-Identifier: MIT
/*
 * .npub files: a 32-byte header, then tagged sections. All integers are
 * little-endian; strings are a u32 length and bytes; blobs a u64 length
 * and bytes. The CRC-32 covers everything after the header.
 */
#include "compiler/npub.h"
#include "compiler/lower.h"
#include "common/npu_bytes.h"
#include "graph/npu_graph_io.h"
#include "onnx/npu_onnx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

enum npub_tag {
	NPUB_MODEL = 1,
	NPUB_INPUTS = 2,
	NPUB_STATS = 3,
	NPUB_RECORDS = 4,
	NPUB_SEGMENT = 5,
	NPUB_GRAPH = 6,		/* 3.0: the graph as compiled (npu_graph_io.h) */
	NPUB_CODE = 7,		/* 3.0: a segment's generated code */
	NPUB_METADATA = 8,	/* 3.0: what the source model says about itself */
};

#define NPUB_HEADER_SIZE 32
#define NPUB_MAX_STRING 4096
#define NPUB_MAX_COUNT (1u << 20)

/* ---- Writing ---- */

/*
 * On-disk op kinds are enum npu_lop_kind, plus this one: a CONV with zero
 * insertion, whose geometry carries ins_h and ins_w after the 10 bytes of
 * a plain conv. Readers that predate it reject it as an unknown kind.
 */
#define NPUB_KIND_CONV_INS	64
/* A phase-split ConvTranspose (codegen.h): phase_h, phase_w follow the
 * conv geometry; quantization and weights have phase_h * phase_w * out.c
 * channels. */
#define NPUB_KIND_CONV_PHASES	65
/* A folded conv (codegen.h): fold_w follows the conv geometry; the weight
 * blob is every column phase's kernel (npu_conv_fold_phase()). */
#define NPUB_KIND_CONV_FOLD	66
/* A MATMUL of two activations (codegen.h matmul.batch): the batch count
 * and a u8 b_nk follow, then per-tensor quantization (arrays of one), no
 * weight. */
#define NPUB_KIND_MATMUL_ACT	67

/* Sections: tag, reserved, size (patched when the section ends). */
static size_t begin_section(struct npu_wbuf *w, uint32_t tag)
{
	size_t at;

	npu_put_u32(w, tag);
	npu_put_u32(w, 0);
	at = w->size;
	npu_put_u64(w, 0);
	return at;
}

static void end_section(struct npu_wbuf *w, size_t at)
{
	uint64_t size = w->size - at - 8;

	if (!w->oom)
		memcpy(w->data + at, &size, 8);
}

static void put_quant(struct npu_wbuf *w, const struct npu_lop_quant *q, uint32_t oc)
{
	npu_put_u8(w, (uint8_t)q->act_min);
	npu_put_u8(w, (uint8_t)q->act_max);
	npu_put_u16(w, (uint16_t)q->pre_act_zp);
	/* An int16 op's bias is int64 (NPU_INSN_I16). */
	if (q->bias64)
		npu_put_blob(w, q->bias64, (uint64_t)oc * 8);
	else
		npu_put_blob(w, q->bias, (uint64_t)oc * 4);
	npu_put_blob(w, q->mult, (uint64_t)oc * 4);
	npu_put_blob(w, q->shift, oc);
	if (q->lut16)
		npu_put_blob(w, q->lut16, 1026);	/* 513 int16 knots */
	else
		npu_put_blob(w, q->lut, 256);
}

/*
 * A boundary value's layout word: the npu_layout, and for an im2col input
 * its window in the bits above (4 each: k_h, k_w, stride_h, stride_w,
 * pad_top, pad_left). Readers before im2col refuse the value as a layout.
 */
static uint32_t layout_word(enum npu_layout lay, const struct npu_act *a)
{
	if (lay != NPU_LAYOUT_IM2COL)
		return lay;
	return lay | (uint32_t)a->im2col.k_h << 8 | (uint32_t)a->im2col.k_w << 12 |
	       (uint32_t)a->im2col.stride_h << 16 | (uint32_t)a->im2col.stride_w << 20 |
	       (uint32_t)a->im2col.pad_top << 24 | (uint32_t)a->im2col.pad_left << 28;
}

/* Decode layout_word()'s window into act a; false if it cannot be one. */
static bool layout_im2col(uint32_t word, struct npu_act *a)
{
	a->im2col.k_h = word >> 8 & 15;
	a->im2col.k_w = word >> 12 & 15;
	a->im2col.stride_h = word >> 16 & 15;
	a->im2col.stride_w = word >> 20 & 15;
	a->im2col.pad_top = word >> 24 & 15;
	a->im2col.pad_left = word >> 28 & 15;
	return a->im2col.k_h && a->im2col.k_w && a->im2col.stride_h && a->im2col.stride_w &&
	       !a->i16 && a->c % (a->im2col.k_h * a->im2col.k_w) == 0;
}

static bool codegen_defaults(const struct npu_codegen_options *o)
{
	static const struct npu_codegen_options d;

	return !memcmp(o, &d, sizeof(d));
}

static void put_segment(struct npu_wbuf *w, const struct npu_segment *seg, uint16_t major)
{
	const struct npu_segment_program *p = &seg->prog;
	size_t i;

	npu_put_u32(w, (uint32_t)seg->index);
	npu_put_u32(w, (uint32_t)seg->num_nodes);
	for (i = 0; i < seg->num_nodes; i++)
		npu_put_str(w, seg->node_keys[i]);
	npu_put_str(w, seg->first_node);
	npu_put_str(w, seg->last_node);
	npu_put_u64(w, seg->arena_size);
	npu_put_u64(w, seg->mem.sum_bytes);
	npu_put_u64(w, seg->mem.lower_bound);
	npu_put_u32(w, (uint32_t)p->num_acts);
	for (i = 0; i < p->num_acts; i++) {
		const struct npu_act *a = &p->acts[i];

		npu_put_u32(w, a->n);
		npu_put_u32(w, a->h);
		npu_put_u32(w, a->w);
		npu_put_u32(w, a->c);
		npu_put_u64(w, a->offset);
		npu_put_f32(w, a->q.scale);
		/* An int16 tensor (zero point 0) writes 0x10000, which readers
		 * before the 16x8 mode refuse as a zero point. */
		npu_put_u32(w, a->i16 ? 0x10000u : (uint32_t)a->q.zero_point);
	}
	npu_put_u32(w, (uint32_t)seg->num_inputs);
	for (i = 0; i < seg->num_inputs; i++) {
		npu_put_str(w, seg->inputs[i]->name);
		npu_put_u32(w, seg->input_acts[i]);
		npu_put_u32(w, layout_word(seg->input_layout[i], &p->acts[seg->input_acts[i]]));
	}
	npu_put_u32(w, (uint32_t)seg->num_outputs);
	for (i = 0; i < seg->num_outputs; i++) {
		npu_put_str(w, seg->outputs[i]->name);
		npu_put_u32(w, seg->output_acts[i]);
		npu_put_u32(w, seg->output_layout[i]);
	}
	npu_put_u32(w, (uint32_t)p->num_lops);
	for (i = 0; i < p->num_lops; i++) {
		const struct npu_lop *l = &p->lops[i];
		const struct npu_act *in = &p->acts[l->in], *out = &p->acts[l->out];

		/* A conv with zero insertion has its own on-disk kind (see below). */
		npu_put_u32(w, l->kind == NPU_LOP_CONV && l->conv.phase_h ? NPUB_KIND_CONV_PHASES :
			   l->kind == NPU_LOP_CONV && l->conv.fold_w ? NPUB_KIND_CONV_FOLD :
			   l->kind == NPU_LOP_CONV && (l->conv.ins_h || l->conv.ins_w) ?
			   NPUB_KIND_CONV_INS :
			   l->kind == NPU_LOP_MATMUL && l->matmul.batch ? NPUB_KIND_MATMUL_ACT :
			   l->kind);
		npu_put_str(w, l->name);
		npu_put_u32(w, l->in);
		npu_put_u32(w, l->in2);
		npu_put_u32(w, l->out);
		switch (l->kind) {
		case NPU_LOP_CONV: {
			const uint8_t g[10] = {
				l->conv.k_h, l->conv.k_w, l->conv.stride_h, l->conv.stride_w,
				l->conv.dil_h, l->conv.dil_w, l->conv.pad_top, l->conv.pad_left,
				l->conv.pad_bottom, l->conv.pad_right,
			};

			uint32_t f = l->conv.fold_w ? l->conv.fold_w : 1;
			uint32_t chans = l->conv.phase_h ?
					 (uint32_t)l->conv.phase_h * f * l->conv.phase_w * out->c : out->c;

			npu_put(w, g, sizeof(g));
			if (l->conv.fold_w && !l->conv.phase_h) {
				struct npu_fold_phase ph;
				uint32_t R = l->conv.stride_w ? l->conv.fold_w / l->conv.stride_w : 0;

				npu_put_u8(w, l->conv.fold_w);
				npu_put_u16(w, l->conv.groups);
				put_quant(w, &l->conv.q, out->c);
				/* A fold without a CONV2D form has no weight to write
				 * (the loader refuses such a file). */
				if (!R || !npu_conv_fold_phase(in->w, out->w, in->c, out->c, l->conv.k_h,
							       l->conv.k_w, l->conv.stride_w,
							       l->conv.pad_left, l->conv.fold_w,
							       R - 1, &ph))
					npu_put_blob(w, NULL, 0);
				else
					npu_put_blob(w, l->conv.weight, ph.weight_off + (uint64_t)out->c *
						 l->conv.k_h * ph.k_w * l->conv.fold_w * in->c);
				break;
			}
			if (l->conv.phase_h) {
				npu_put_u8(w, l->conv.phase_h);
				npu_put_u8(w, l->conv.phase_w);
				npu_put_u8(w, (uint8_t)f);
				npu_put_u16(w, l->conv.groups);
				put_quant(w, &l->conv.q, chans);
				npu_put_blob(w, l->conv.weight, (uint64_t)chans * f * in->c);
				break;
			} else if (l->conv.ins_h || l->conv.ins_w) {
				npu_put_u8(w, l->conv.ins_h);
				npu_put_u8(w, l->conv.ins_w);
			}
			npu_put_u16(w, l->conv.groups);
			put_quant(w, &l->conv.q, chans);
			npu_put_blob(w, l->conv.weight, (uint64_t)chans * l->conv.k_h * l->conv.k_w *
				 (in->c / l->conv.groups));
			break;
		}
		case NPU_LOP_MATMUL:
			if (l->matmul.batch) {
				npu_put_u32(w, l->matmul.batch);
				npu_put_u8(w, l->matmul.b_nk);
				put_quant(w, &l->matmul.q, 1);
				break;
			}
			put_quant(w, &l->matmul.q, out->c);
			npu_put_blob(w, l->matmul.weight, (uint64_t)out->c * in->c);
			break;
		case NPU_LOP_POOL: {
			const uint8_t g[12] = {
				l->pool.mode, l->pool.flags, l->pool.k_h, l->pool.k_w,
				l->pool.stride_h, l->pool.stride_w, l->pool.pad_top,
				l->pool.pad_left, l->pool.pad_bottom, l->pool.pad_right,
				(uint8_t)l->pool.act_min, (uint8_t)l->pool.act_max,
			};

			npu_put(w, g, sizeof(g));
			break;
		}
		case NPU_LOP_ELTWISE:
			npu_put_u8(w, l->elt.mode);
			npu_put_u8(w, l->elt.bcast);
			npu_put_u8(w, l->elt.shift);
			npu_put_u8(w, (uint8_t)l->elt.act_min);
			npu_put_u8(w, (uint8_t)l->elt.act_max);
			npu_put_u32(w, (uint32_t)l->elt.mult_a);
			npu_put_u32(w, (uint32_t)l->elt.mult_b);
			npu_put_u16(w, (uint16_t)l->elt.zp_b);
			npu_put_u16(w, (uint16_t)l->elt.pre_act_zp);
			npu_put_blob(w, l->elt.b_const, l->elt.b_count);
			if (l->elt.lut16)
				npu_put_blob(w, l->elt.lut16, 1026);
			else
				npu_put_blob(w, l->elt.lut, 256);
			break;
		case NPU_LOP_LUT:
			if (l->lut.table16)
				npu_put_blob(w, l->lut.table16, 1026);
			else
				npu_put_blob(w, l->lut.table, 256);
			break;
		case NPU_LOP_ROWS:
			npu_put_u8(w, l->rows.opcode);
			npu_put_u8(w, l->rows.shift);
			npu_put_u8(w, l->rows.mode);
			npu_put_u32(w, (uint32_t)l->rows.mult);
			npu_put_u32(w, l->rows.eps);
			npu_put_blob(w, l->rows.consts, l->rows.consts_size);
			break;
		case NPU_LOP_RESIZE:
			npu_put_u8(w, l->resize.mode);
			npu_put_u32(w, l->resize.step_h);
			npu_put_u32(w, (uint32_t)l->resize.offset_h);
			npu_put_u32(w, l->resize.den_h);
			npu_put_u32(w, l->resize.step_w);
			npu_put_u32(w, (uint32_t)l->resize.offset_w);
			npu_put_u32(w, l->resize.den_w);
			break;
		case NPU_LOP_COPY:
			npu_put_u32(w, l->copy.rows);
			npu_put_u32(w, l->copy.row_bytes);
			npu_put_u64(w, l->copy.src_off);
			npu_put_u64(w, l->copy.src_stride);
			npu_put_u64(w, l->copy.dst_off);
			npu_put_u64(w, l->copy.dst_stride);
			npu_put_u32(w, l->copy.count);
			npu_put_u64(w, l->copy.src_step);
			npu_put_u64(w, l->copy.dst_step);
			npu_put_blob(w, l->copy.lut, l->copy.lut ? 256 : 0);
			break;
		}
	}
	/* Version 2: where the segment is, "" for the top-level graph. */
	if (major >= 2)
		npu_put_str(w, seg->graph_path ? seg->graph_path : "");
	/* Version 2.1: codegen options other than the defaults. */
	if (!codegen_defaults(&p->opts)) {
		const struct npu_codegen_options *o = &p->opts;

		npu_put_u32(w, (uint32_t)o->no_array_modes | (uint32_t)o->no_out_lut << 1 |
			   (uint32_t)o->no_tile_search << 2 | (uint32_t)o->no_prefetch << 3 |
			   (uint32_t)o->no_gap_split << 4 | (uint32_t)o->lut_last_producer_only << 5 |
			   (uint32_t)o->no_sparse << 6 | (uint32_t)o->no_wcodec << 7);
		npu_put_u8(w, (uint8_t)o->pixel_mm);
		npu_put_u8(w, (uint8_t)o->fuse);
		npu_put_u32(w, o->fuse_max_rows);
	}
}

/* A segment's code: the constants, the canonical stream and the counts. */
static void put_code(struct npu_wbuf *w, size_t k, const struct npu_segment *seg)
{
	const struct npu_codegen_result *r = &seg->code;
	size_t i, n = seg->prog.num_lops;

	npu_put_u32(w, (uint32_t)k);
	npu_put_u32(w, seg->code_sram_size);
	npu_put_blob(w, r->consts, r->consts_size);
	npu_put_blob(w, seg->stream.data, seg->stream.size);
	npu_put_u64(w, r->macs);
	npu_put_u64(w, r->ideal_mac_cycles);
	npu_put_u64(w, r->instructions);
	npu_put_u64(w, r->fused_groups);
	npu_put_u64(w, r->dram_bytes);
	for (i = 0; i < n; i++) {
		npu_put_u64(w, r->lop_macs[i]);
		npu_put_u64(w, r->lop_dram_bytes[i]);
		npu_put_u64(w, r->lop_pred_cycles[i]);
		npu_put_u8(w, r->lop_fused[i]);
	}
}

static void put_metadata(struct npu_wbuf *w, const struct npu_onnx_meta *m)
{
	size_t i;

	npu_put_str(w, m->producer_name);
	npu_put_str(w, m->producer_version);
	npu_put_str(w, m->domain);
	npu_put_str(w, m->doc_string);
	npu_put_str(w, m->graph_name);
	npu_put_str(w, m->graph_doc_string);
	npu_put_u64(w, (uint64_t)m->model_version);
	npu_put_u32(w, (uint32_t)m->num_props);
	for (i = 0; i < m->num_props; i++) {
		npu_put_str(w, m->keys[i]);
		npu_put_str(w, m->values[i]);
	}
}

npu_status npu_npub_save(const char *path, const struct npu_npub_source *src,
			 const struct npu_graph *graph,
			 const struct npu_compiled *c, struct npu_error *err)
{
	struct npu_wbuf w = { 0 };
	uint32_t sections = 0, crc;
	uint64_t file_size;
	size_t at, i;
	int j;
	FILE *f;
	/* Finished files (the graph and the code) are version 3. */
	uint16_t major = NPU_NPUB_VERSION_MAJOR;

	for (i = 0; i < c->num_segments; i++)
		if (!c->segments[i]->stream.data)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "%s: NPU segment %zu has no code (not bound to a device)",
					     path, i);
	npu_put(&w, (uint8_t[NPUB_HEADER_SIZE]){ 0 }, NPUB_HEADER_SIZE);
	if (src->onnx_size) {	/* optional: to compile again at other shapes */
		at = begin_section(&w, NPUB_MODEL);
		npu_put(&w, src->onnx, src->onnx_size);
		end_section(&w, at);
		sections++;
	}
	if (src->meta) {
		at = begin_section(&w, NPUB_METADATA);
		put_metadata(&w, src->meta);
		end_section(&w, at);
		sections++;
	}
	at = begin_section(&w, NPUB_GRAPH);
	npu_graph_write_pruned(&w, graph);
	end_section(&w, at);
	sections++;

	at = begin_section(&w, NPUB_INPUTS);
	npu_put_u32(&w, (uint32_t)graph->num_inputs);
	for (i = 0; i < graph->num_inputs; i++) {
		npu_put_str(&w, graph->inputs[i]->name);
		npu_put_u32(&w, (uint32_t)graph->inputs[i]->shape.rank);
		for (j = 0; j < graph->inputs[i]->shape.rank; j++)
			npu_put_u64(&w, (uint64_t)graph->inputs[i]->shape.dims[j]);
	}
	end_section(&w, at);
	sections++;

	at = begin_section(&w, NPUB_STATS);
	npu_put_u64(&w, c->total_macs);
	npu_put_u64(&w, c->npu_macs);
	/* Version 2.2: the CPU options other than the defaults. */
	if (!npu_cpu_options_default(&c->cpu)) {
		npu_put_u8(&w, c->cpu.no_fuse);
		npu_put_u8(&w, (uint8_t)c->cpu.nchwc);
		npu_put_u8(&w, (uint8_t)c->cpu.winograd);
	}
	end_section(&w, at);
	sections++;

	at = begin_section(&w, NPUB_RECORDS);
	npu_put_u32(&w, (uint32_t)c->num_records);
	for (i = 0; i < c->num_records; i++) {
		npu_put_str(&w, c->records[i].node);
		npu_put_str(&w, c->records[i].op_type);
		npu_put_u32(&w, c->records[i].placement);
		npu_put_u32(&w, (uint32_t)c->records[i].segment);
		npu_put_u64(&w, c->records[i].macs);
		npu_put_str(&w, c->records[i].reason);
	}
	end_section(&w, at);
	sections++;

	for (i = 0; i < c->num_segments; i++) {
		at = begin_section(&w, NPUB_SEGMENT);
		put_segment(&w, c->segments[i], major);
		end_section(&w, at);
		at = begin_section(&w, NPUB_CODE);
		put_code(&w, i, c->segments[i]);
		end_section(&w, at);
		sections += 2;
	}
	if (w.oom) {
		free(w.data);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", path);
	}
	file_size = w.size;
	crc = (uint32_t)crc32_z(0, w.data + NPUB_HEADER_SIZE, w.size - NPUB_HEADER_SIZE);
	{
		uint32_t magic = NPU_NPUB_MAGIC, hs = NPUB_HEADER_SIZE, zero = 0;
		uint16_t minor = NPU_NPUB_VERSION_MINOR;

		memcpy(w.data + 0, &magic, 4);
		memcpy(w.data + 4, &major, 2);
		memcpy(w.data + 6, &minor, 2);
		memcpy(w.data + 8, &hs, 4);
		memcpy(w.data + 12, &crc, 4);
		memcpy(w.data + 16, &file_size, 8);
		memcpy(w.data + 24, &sections, 4);
		memcpy(w.data + 28, &zero, 4);
	}
	f = fopen(path, "wb");
	if (!f || fwrite(w.data, 1, w.size, f) != w.size || fclose(f)) {
		int e = errno;

		if (f)
			fclose(f);
		free(w.data);
		return npu_error_set(err, NPU_ERR_IO, "%s: %s", path, strerror(e));
	}
	free(w.data);
	return NPU_OK;
}

/* ---- Reading ---- */

/* npub's messages put the field first: "field '%s' = %llu is too large". */
static bool fail(struct npu_rbuf *r, const char *fmt, const char *field, unsigned long long v)
{
	char msg[200];

	snprintf(msg, sizeof(msg), fmt, field, v);
	return npu_rbuf_fail(r, "%s", msg);
}

static void *seg_keep(struct npu_segment *seg, void *p)
{
	void **o;

	if (!p)
		return NULL;
	o = realloc(seg->owned, (seg->num_owned + 1) * sizeof(*o));
	if (!o) {
		free(p);
		return NULL;
	}
	seg->owned = o;
	seg->owned[seg->num_owned++] = p;
	return p;
}

/* The next n bytes (n <= r->left) into a malloc'ed copy; NULL and r bad on failure. */
static uint8_t *copy_bytes(struct npu_rbuf *r, uint64_t n, const char *field)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p) {
		npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
		r->bad = true;
		return NULL;
	}
	npu_take(r, p, n, field);
	return p;
}

/* A blob that must be exactly 'want' bytes (or empty when 'optional'). */
static void *get_blob(struct npu_rbuf *r, struct npu_segment *seg, uint64_t want,
		      bool optional, const char *field)
{
	uint64_t n = npu_get_u64(r, field);
	void *p;

	if (r->bad)
		return NULL;
	if (!n && optional)
		return NULL;
	if (n != want) {
		fail(r, "blob '%s' has %llu bytes", field, n);
		return NULL;
	}
	if (n > r->left) {
		npu_take(r, NULL, n, field);
		return NULL;
	}
	p = copy_bytes(r, n, field);
	if (p && !seg_keep(seg, p)) {
		npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
		r->bad = true;
		return NULL;
	}
	return p;
}

static bool get_quant(struct npu_rbuf *r, struct npu_segment *seg, bool i16,
		      struct npu_lop_quant *q, uint32_t oc)
{
	uint32_t i;

	q->act_min = (int8_t)npu_get_u8(r, "act_min");
	q->act_max = (int8_t)npu_get_u8(r, "act_max");
	q->pre_act_zp = (int16_t)npu_get_u16(r, "pre_act_zp");
	if (i16)
		q->bias64 = get_blob(r, seg, (uint64_t)oc * 8, true, "bias");
	else
		q->bias = get_blob(r, seg, (uint64_t)oc * 4, true, "bias");
	q->mult = get_blob(r, seg, (uint64_t)oc * 4, false, "mult");
	q->shift = get_blob(r, seg, oc, false, "shift");
	if (i16)
		q->lut16 = get_blob(r, seg, 1026, true, "lut");
	else
		q->lut = get_blob(r, seg, 256, true, "lut");
	if (r->bad)
		return false;
	if (q->act_min > q->act_max)
		return fail(r, "%s %llu: act_min > act_max", "clamp", 0);
	for (i = 0; i < oc; i++)
		if (q->shift[i] < 1 || q->shift[i] > 62)
			return fail(r, "%s of channel %llu outside 1..62", "shift", i);
	return true;
}

static bool check_window(struct npu_rbuf *r, uint32_t in, uint32_t out, uint32_t k,
			 uint32_t s, uint32_t d, uint32_t p0, uint32_t p1,
			 const char *what)
{
	uint64_t ext = (uint64_t)d * (k - 1) + 1;

	if (!k || !s || !d || in + p0 + p1 < ext ||
	    (in + p0 + p1 - ext) / s + 1 != out)
		return fail(r, "%s geometry does not give output size %llu", what, out);
	return true;
}

static bool get_lop(struct npu_rbuf *r, struct npu_segment *seg, struct npu_lop *l)
{
	struct npu_segment_program *p = &seg->prog;
	const struct npu_act *in, *out;
	char *name;
	bool ins, phases, fold, mm_act;

	l->kind = npu_get_u32(r, "kind");
	ins = l->kind == NPUB_KIND_CONV_INS;
	phases = l->kind == NPUB_KIND_CONV_PHASES;
	fold = l->kind == NPUB_KIND_CONV_FOLD;
	mm_act = l->kind == NPUB_KIND_MATMUL_ACT;
	if (ins || phases || fold)
		l->kind = NPU_LOP_CONV;
	if (mm_act)
		l->kind = NPU_LOP_MATMUL;
	name = seg_keep(seg, npu_get_str(r, "name", NPUB_MAX_STRING));
	l->name = name ? name : "?";
	l->in = npu_get_u32(r, "in");
	l->in2 = npu_get_u32(r, "in2");
	l->out = npu_get_u32(r, "out");
	if (r->bad)
		return false;
	if (l->kind > NPU_LOP_ROWS)
		return fail(r, "%s %llu is unknown", "op kind", l->kind);
	if (l->in >= p->num_acts || l->out >= p->num_acts)
		return fail(r, "%s %llu out of range", "tensor index", l->in > l->out ? l->in : l->out);
	in = &p->acts[l->in];
	out = &p->acts[l->out];
	switch (l->kind) {
	case NPU_LOP_CONV: {
		uint8_t g[10];

		npu_take(r, g, sizeof(g), "conv geometry");
		l->conv.k_h = g[0], l->conv.k_w = g[1], l->conv.stride_h = g[2];
		l->conv.stride_w = g[3], l->conv.dil_h = g[4], l->conv.dil_w = g[5];
		l->conv.pad_top = g[6], l->conv.pad_left = g[7];
		l->conv.pad_bottom = g[8], l->conv.pad_right = g[9];
		if (ins) {
			l->conv.ins_h = npu_get_u8(r, "ins_h");
			l->conv.ins_w = npu_get_u8(r, "ins_w");
		}
		if (phases) {
			l->conv.phase_h = npu_get_u8(r, "phase_h");
			l->conv.phase_w = npu_get_u8(r, "phase_w");
			l->conv.fold_w = npu_get_u8(r, "fold_w");
			if (l->conv.fold_w == 1)
				l->conv.fold_w = 0;
		}
		if (fold)
			l->conv.fold_w = npu_get_u8(r, "fold_w");
		l->conv.groups = npu_get_u16(r, "groups");
		if (r->bad)
			return false;
		if (fold) {
			struct npu_fold_phase ph;
			uint32_t R = l->conv.stride_w ? l->conv.fold_w / l->conv.stride_w : 0;

			/* Every column phase must have a CONV2D form (codegen.h). */
			if (l->conv.groups != 1 || l->conv.dil_w != 1 || !R ||
			    !check_window(r, in->h, out->h, l->conv.k_h, l->conv.stride_h,
					  l->conv.dil_h, l->conv.pad_top, l->conv.pad_bottom,
					  "conv height") ||
			    !check_window(r, in->w, out->w, l->conv.k_w, l->conv.stride_w, 1,
					  l->conv.pad_left, l->conv.pad_right, "conv width"))
				return r->bad ? false :
				       fail(r, "%s %llu: not a foldable conv", "fold_w", l->conv.fold_w);
			for (uint32_t k = 0; k < R; k++)
				if (!npu_conv_fold_phase(in->w, out->w, in->c, out->c, l->conv.k_h,
							 l->conv.k_w, l->conv.stride_w,
							 l->conv.pad_left, l->conv.fold_w, k, &ph))
					return fail(r, "%s %llu: a column phase has no CONV2D form",
						    "fold_w", l->conv.fold_w);
			if (!get_quant(r, seg, out->i16, &l->conv.q, out->c))
				return false;
			l->conv.weight = get_blob(r, seg, ph.weight_off + (uint64_t)out->c *
						  l->conv.k_h * ph.k_w * l->conv.fold_w * in->c,
						  false, "weight");
			break;
		}
		if (phases) {
			uint32_t f = l->conv.fold_w ? l->conv.fold_w : 1;
			uint32_t chans = (uint32_t)l->conv.phase_h * f * l->conv.phase_w * out->c;

			/* 1x1 phases of a kernel = stride transposed conv (codegen.h). */
			if (!l->conv.phase_h || !l->conv.phase_w || l->conv.groups != 1 || in->w % f ||
			    memcmp(g, (uint8_t[10]){ 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 }, 10) ||
			    in->n != out->n || out->h != in->h * l->conv.phase_h ||
			    out->w != in->w * l->conv.phase_w)
				return fail(r, "%s %llu: not a kernel = stride transposed conv",
					    "phases", l->conv.phase_h);
			if (!get_quant(r, seg, out->i16, &l->conv.q, chans))
				return false;
			l->conv.weight = get_blob(r, seg, (uint64_t)chans * f * in->c, false, "weight");
			break;
		}
		if (!l->conv.groups || in->c % l->conv.groups || out->c % l->conv.groups ||
		    in->n != out->n || !in->h || !in->w)
			return fail(r, "%s %llu does not divide the channels", "groups", l->conv.groups);
		/* The kernel slides over the zero-inserted input. */
		if (!check_window(r, (in->h - 1) * (l->conv.ins_h + 1u) + 1, out->h, l->conv.k_h,
				  l->conv.stride_h, l->conv.dil_h,
				  l->conv.pad_top, l->conv.pad_bottom, "conv height") ||
		    !check_window(r, (in->w - 1) * (l->conv.ins_w + 1u) + 1, out->w, l->conv.k_w,
				  l->conv.stride_w, l->conv.dil_w,
				  l->conv.pad_left, l->conv.pad_right, "conv width") ||
		    !get_quant(r, seg, out->i16, &l->conv.q, out->c))
			return false;
		l->conv.weight = get_blob(r, seg, (uint64_t)out->c * l->conv.k_h * l->conv.k_w *
					  (in->c / l->conv.groups), false, "weight");
		break;
	}
	case NPU_LOP_MATMUL:
		if (mm_act) {
			const struct npu_act *in2;

			uint8_t nk;

			l->matmul.batch = npu_get_u32(r, "batch");
			nk = npu_get_u8(r, "b_nk");
			if (r->bad)
				return false;
			if (nk > 1)
				return fail(r, "%s %llu: b_nk is not 0 or 1", "matmul", nk);
			l->matmul.b_nk = nk;
			if (l->in2 >= p->num_acts)
				return fail(r, "%s %llu out of range", "tensor index", l->in2);
			in2 = &p->acts[l->in2];
			if (!l->matmul.batch ||
			    ((uint64_t)in->n * in->h * in->w) % l->matmul.batch ||
			    npu_act_bytes(in2) % ((uint64_t)l->matmul.batch * in->c) ||
			    in2->c != (nk ? in->c : out->c) ||
			    npu_act_bytes(in2) != (uint64_t)l->matmul.batch * in->c * out->c ||
			    (uint64_t)in->n * in->h * in->w * out->c != npu_act_bytes(out))
				return fail(r, "%s %llu: operand shapes do not form the batches",
					    "matmul", l->matmul.batch);
			return get_quant(r, seg, out->i16, &l->matmul.q, 1);
		}
		if ((uint64_t)in->n * in->h * in->w != (uint64_t)out->n * out->h * out->w)
			return fail(r, "%s %llu: row counts differ", "matmul", 0);
		if (!get_quant(r, seg, out->i16, &l->matmul.q, out->c))
			return false;
		l->matmul.weight = get_blob(r, seg, (uint64_t)out->c * in->c, false, "weight");
		break;
	case NPU_LOP_POOL: {
		uint8_t g[12] = { 0 };

		npu_take(r, g, sizeof(g), "pool geometry");
		l->pool.mode = g[0], l->pool.flags = g[1], l->pool.k_h = g[2];
		l->pool.k_w = g[3], l->pool.stride_h = g[4], l->pool.stride_w = g[5];
		l->pool.pad_top = g[6], l->pool.pad_left = g[7], l->pool.pad_bottom = g[8];
		l->pool.pad_right = g[9];
		l->pool.act_min = (int8_t)g[10], l->pool.act_max = (int8_t)g[11];
		if (r->bad)
			return false;
		if (l->pool.mode > NPU_POOL_AVG || in->c != out->c || in->n != out->n)
			return fail(r, "%s %llu invalid", "pool mode", l->pool.mode);
		if (!check_window(r, in->h, out->h, l->pool.k_h, l->pool.stride_h, 1,
				  l->pool.pad_top, l->pool.pad_bottom, "pool height") ||
		    !check_window(r, in->w, out->w, l->pool.k_w, l->pool.stride_w, 1,
				  l->pool.pad_left, l->pool.pad_right, "pool width"))
			return false;
		break;
	}
	case NPU_LOP_ELTWISE:
		l->elt.mode = npu_get_u8(r, "mode");
		l->elt.bcast = npu_get_u8(r, "bcast");
		l->elt.shift = npu_get_u8(r, "shift");
		l->elt.act_min = (int8_t)npu_get_u8(r, "act_min");
		l->elt.act_max = (int8_t)npu_get_u8(r, "act_max");
		l->elt.mult_a = (int32_t)npu_get_u32(r, "mult_a");
		l->elt.mult_b = (int32_t)npu_get_u32(r, "mult_b");
		l->elt.zp_b = (int16_t)npu_get_u16(r, "zp_b");
		l->elt.pre_act_zp = (int16_t)npu_get_u16(r, "pre_act_zp");
		if (r->bad)
			return false;
		if (l->elt.mode > NPU_ELT_MUL || l->elt.bcast > NPU_BCAST_SCALAR ||
		    l->elt.shift < 1 || l->elt.shift > 62 || npu_act_elems(in) != npu_act_elems(out))
			return fail(r, "%s of op %llu invalid", "mode / broadcast / shift", 0);
		l->elt.b_count = l->elt.bcast == NPU_BCAST_SCALAR ? 1 :
				 l->elt.bcast == NPU_BCAST_CHANNEL ? out->c : 0;
		if (l->elt.bcast == NPU_BCAST_NONE) {
			if (npu_get_u64(r, "b") != 0)
				return fail(r, "%s %llu: unexpected constant", "eltwise", 0);
			if (l->in2 >= p->num_acts || npu_act_elems(&p->acts[l->in2]) != npu_act_elems(out))
				return fail(r, "%s %llu: second input invalid", "eltwise", l->in2);
		} else {
			/* A broadcast b is a constant blob or, when empty, tensor in2. */
			l->elt.b_const = get_blob(r, seg, l->elt.b_count, true, "b");
			if (!r->bad && !l->elt.b_const &&
			    (l->in2 >= p->num_acts || npu_act_elems(&p->acts[l->in2]) != l->elt.b_count))
				return fail(r, "%s %llu: broadcast input invalid", "eltwise", l->in2);
		}
		if (out->i16)
			l->elt.lut16 = get_blob(r, seg, 1026, true, "lut");
		else
			l->elt.lut = get_blob(r, seg, 256, true, "lut");
		break;
	case NPU_LOP_LUT:
		if (npu_act_bytes(in) != npu_act_bytes(out))
			return fail(r, "%s %llu: sizes differ", "lut", 0);
		if (out->i16)
			l->lut.table16 = get_blob(r, seg, 1026, false, "table");
		else
			l->lut.table = get_blob(r, seg, 256, false, "table");
		break;
	case NPU_LOP_ROWS:
		l->rows.opcode = npu_get_u8(r, "opcode");
		l->rows.shift = npu_get_u8(r, "shift");
		l->rows.mode = npu_get_u8(r, "mode");
		l->rows.mult = (int32_t)npu_get_u32(r, "mult");
		l->rows.eps = npu_get_u32(r, "eps");
		if (r->bad)
			return false;
		if (l->rows.opcode == NPU_OP_REDUCE) {
			if (!in->c || npu_act_bytes(in) / in->c != npu_act_bytes(out) ||
			    l->rows.mode > NPU_REDUCE_MAX || l->rows.shift < 1 || l->rows.shift > 62)
				return fail(r, "%s %llu invalid", "reduce", l->rows.mode);
			l->rows.consts_size = 0;
			l->rows.consts = get_blob(r, seg, 0, true, "row consts");
			break;
		}
		if ((l->rows.opcode != NPU_OP_SOFTMAX && l->rows.opcode != NPU_OP_LAYERNORM) ||
		    npu_act_bytes(in) != npu_act_bytes(out) || in->c != out->c || !out->c)
			return fail(r, "%s %llu invalid", "row op", l->rows.opcode);
		l->rows.consts_size = l->rows.opcode == NPU_OP_SOFTMAX ? 1024 : 8 * out->c;
		l->rows.consts = get_blob(r, seg, l->rows.consts_size, false, "row consts");
		break;
	case NPU_LOP_RESIZE:
		l->resize.mode = npu_get_u8(r, "mode");
		l->resize.step_h = npu_get_u32(r, "step_h");
		l->resize.offset_h = (int32_t)npu_get_u32(r, "offset_h");
		l->resize.den_h = npu_get_u32(r, "den_h");
		l->resize.step_w = npu_get_u32(r, "step_w");
		l->resize.offset_w = (int32_t)npu_get_u32(r, "offset_w");
		l->resize.den_w = npu_get_u32(r, "den_w");
		if (r->bad)
			return false;
		if (l->resize.mode > NPU_RESIZE_BILINEAR || !l->resize.den_h ||
		    !l->resize.den_w || in->c != out->c || in->n != out->n)
			return fail(r, "%s %llu invalid", "resize mode", l->resize.mode);
		break;
	case NPU_LOP_COPY: {
		uint64_t in_end, out_end;

		l->copy.rows = npu_get_u32(r, "rows");
		l->copy.row_bytes = npu_get_u32(r, "row_bytes");
		l->copy.src_off = npu_get_u64(r, "src_off");
		l->copy.src_stride = npu_get_u64(r, "src_stride");
		l->copy.dst_off = npu_get_u64(r, "dst_off");
		l->copy.dst_stride = npu_get_u64(r, "dst_stride");
		l->copy.count = npu_get_u32(r, "count");
		l->copy.src_step = npu_get_u64(r, "src_step");
		l->copy.dst_step = npu_get_u64(r, "dst_step");
		if (r->bad)
			return false;
		/* Every byte it touches lies inside its two tensors. */
		if (!l->copy.rows || !l->copy.row_bytes || l->copy.src_stride > UINT32_MAX ||
		    l->copy.dst_stride > UINT32_MAX || l->copy.src_off > UINT32_MAX ||
		    l->copy.dst_off > UINT32_MAX)
			return fail(r, "%s %llu invalid", "copy rows", l->copy.rows);
		if (l->copy.src_step > UINT32_MAX || l->copy.dst_step > UINT32_MAX)
			return fail(r, "%s %llu invalid", "copy step", l->copy.src_step);
		in_end = l->copy.src_off + (uint64_t)(l->copy.rows - 1) * l->copy.src_stride +
			 l->copy.row_bytes +
			 (l->copy.count > 1 ? (uint64_t)(l->copy.count - 1) * l->copy.src_step : 0);
		out_end = l->copy.dst_off + (uint64_t)(l->copy.rows - 1) * l->copy.dst_stride +
			  l->copy.row_bytes +
			  (l->copy.count > 1 ? (uint64_t)(l->copy.count - 1) * l->copy.dst_step : 0);
		if (in_end > npu_act_bytes(in) || out_end > npu_act_bytes(out) ||
		    (l->copy.rows > 1 && (l->copy.src_stride < l->copy.row_bytes ||
					  l->copy.dst_stride < l->copy.row_bytes)))
			return fail(r, "%s %llu: outside its tensors", "copy", l->copy.row_bytes);
		l->copy.lut = get_blob(r, seg, 256, true, "lut");
		break;
	}
	}
	return !r->bad;
}

struct npu_npub {
	const uint8_t *data;	/* the file: f->own, or the caller's (a view) */
	uint8_t *own;
	size_t size;
	const uint8_t *model;
	size_t model_size;
	char **input_names;
	struct npu_shape *input_shapes;
	size_t num_inputs;
	struct npu_compiled *c;
	char **seg_inputs, **seg_outputs;	/* value names, per segment, flat */
	size_t *seg_in_base, *seg_out_base;
	size_t num_seg_in, num_seg_out;
	uint16_t major;		/* the file's format version */
	/* 3.0: the graph as compiled, the source's metadata, which segments
	 * came with their code. */
	struct npu_graph *graph;
	struct npu_onnx_meta *meta;
	size_t num_code;
};

static bool get_segment(struct npu_rbuf *r, struct npu_npub *f, struct npu_segment *seg)
{
	struct npu_segment_program *p = &seg->prog;
	size_t i;
	char **names;

	seg->index = (int)npu_get_u32(r, "index");
	seg->num_nodes = npu_get_count(r, "nodes", NPUB_MAX_COUNT);
	if (r->bad)
		return false;
	seg->node_keys = calloc(seg->num_nodes + 1, sizeof(*seg->node_keys));
	if (!seg->node_keys)
		return fail(r, "%s %llu: out of memory", "nodes", seg->num_nodes);
	for (i = 0; i < seg->num_nodes && !r->bad; i++)
		seg->node_keys[i] = npu_get_str(r, "node", NPUB_MAX_STRING);
	seg->first_node = npu_get_str(r, "first node", NPUB_MAX_STRING);
	seg->last_node = npu_get_str(r, "last node", NPUB_MAX_STRING);
	seg->arena_size = npu_get_u64(r, "arena size");
	seg->mem.arena_bytes = seg->arena_size;
	seg->mem.sum_bytes = npu_get_u64(r, "sum bytes");
	seg->mem.lower_bound = npu_get_u64(r, "lower bound");
	p->num_acts = npu_get_count(r, "tensors", NPUB_MAX_COUNT);
	if (r->bad)
		return false;
	p->acts = calloc(p->num_acts + 1, sizeof(*p->acts));
	if (!p->acts)
		return fail(r, "%s %llu: out of memory", "tensors", p->num_acts);
	for (i = 0; i < p->num_acts && !r->bad; i++) {
		struct npu_act *a = &p->acts[i];

		a->n = npu_get_u32(r, "n");
		a->h = npu_get_u32(r, "h");
		a->w = npu_get_u32(r, "w");
		a->c = npu_get_u32(r, "c");
		a->offset = npu_get_u64(r, "offset");
		a->q.scale = npu_get_f32(r, "scale");
		a->q.zero_point = (int32_t)npu_get_u32(r, "zero point");
		if (a->q.zero_point == 0x10000) {
			a->i16 = true;
			a->q.zero_point = 0;
		}
		if (r->bad)
			break;
		if (!a->n || !a->h || !a->w || !a->c || a->c > 65535 ||
		    (uint64_t)a->n * a->h * a->w * a->c > seg->arena_size ||
		    a->offset > seg->arena_size - npu_act_bytes(a))
			return fail(r, "%s %llu does not fit the arena", "tensor", i);
		if (!(a->q.scale > 0.0f) || a->q.zero_point < -128 || a->q.zero_point > 127)
			return fail(r, "%s %llu: bad quantization parameters", "tensor", i);
	}
	for (int io = 0; io < 2 && !r->bad; io++) {
		size_t n = npu_get_count(r, io ? "outputs" : "inputs", NPUB_MAX_COUNT);
		uint32_t *acts = calloc(n + 1, sizeof(*acts));
		enum npu_layout *lay = calloc(n + 1, sizeof(*lay));

		names = realloc(io ? f->seg_outputs : f->seg_inputs,
				((io ? f->num_seg_out : f->num_seg_in) + n + 1) * sizeof(*names));
		if (!acts || !lay || !names) {
			free(acts);
			free(lay);
			free(names);
			return fail(r, "%s %llu: out of memory", "boundary", n);
		}
		if (io) {
			f->seg_outputs = names;
			seg->output_acts = acts;
			seg->output_layout = lay;
			seg->num_outputs = n;
		} else {
			f->seg_inputs = names;
			seg->input_acts = acts;
			seg->input_layout = lay;
			seg->num_inputs = n;
		}
		for (i = 0; i < n && !r->bad; i++) {
			char *s = npu_get_str(r, "value name", NPUB_MAX_STRING);
			size_t at = io ? f->num_seg_out++ : f->num_seg_in++;
			uint32_t word;

			names[at] = s;
			acts[i] = npu_get_u32(r, "tensor");
			word = npu_get_u32(r, "layout");
			lay[i] = (enum npu_layout)(word & 0xff);
			if (!r->bad && (acts[i] >= p->num_acts || lay[i] > NPU_LAYOUT_IM2COL ||
					(lay[i] == NPU_LAYOUT_IM2COL && io) ||
					(lay[i] != NPU_LAYOUT_IM2COL && word > 0xff) ||
					(lay[i] == NPU_LAYOUT_IM2COL &&
					 !layout_im2col(word, &p->acts[acts[i]]))))
				return fail(r, "%s %llu: tensor or layout out of range", "boundary value", i);
		}
	}
	p->num_lops = npu_get_count(r, "ops", NPUB_MAX_COUNT);
	if (r->bad)
		return false;
	p->lops = calloc(p->num_lops + 1, sizeof(*p->lops));
	if (!p->lops)
		return fail(r, "%s %llu: out of memory", "ops", p->num_lops);
	for (i = 0; i < p->num_lops && !r->bad; i++)
		get_lop(r, seg, &p->lops[i]);
	/* Values only the segment reads (npu_act.internal, cross-layer fusion):
	 * what a lop writes, minus the boundary. */
	for (i = 0; i < p->num_lops && !r->bad; i++)
		if (p->lops[i].out < p->num_acts)
			p->acts[p->lops[i].out].internal = true;
	for (i = 0; i < seg->num_inputs && !r->bad; i++)
		p->acts[seg->input_acts[i]].internal = false;
	for (i = 0; i < seg->num_outputs && !r->bad; i++)
		p->acts[seg->output_acts[i]].internal = false;
	if (f->major >= 2 && !r->bad) {
		seg->graph_path = npu_get_str(r, "subgraph path", NPUB_MAX_STRING);
		if (seg->graph_path && !seg->graph_path[0]) {
			free(seg->graph_path);
			seg->graph_path = NULL;
		}
	}
	/* 2.1: the codegen options the segment was compiled with, if not the
	 * defaults: the same code in every environment. */
	if (f->major >= 2 && !r->bad && r->left) {
		struct npu_codegen_options *o = &p->opts;
		uint32_t flags = npu_get_u32(r, "codegen flags");
		uint8_t pmm = npu_get_u8(r, "codegen pixel_mm"), fuse = npu_get_u8(r, "codegen fuse");

		o->fuse_max_rows = npu_get_u32(r, "codegen fuse_rows");
		if (!r->bad && flags >> 8)
			return fail(r, "%s: unknown flags %#llx", "codegen options", flags);
		if (!r->bad && (pmm > NPU_CODEGEN_FORCE || fuse > NPU_CODEGEN_FORCE))
			return fail(r, "%s: choice %llu is not auto, off or force", "codegen options",
				    pmm > NPU_CODEGEN_FORCE ? pmm : fuse);
		o->no_array_modes = flags & 1;
		o->no_out_lut = flags >> 1 & 1;
		o->no_tile_search = flags >> 2 & 1;
		o->no_prefetch = flags >> 3 & 1;
		o->no_gap_split = flags >> 4 & 1;
		o->lut_last_producer_only = flags >> 5 & 1;
		o->no_sparse = flags >> 6 & 1;
		o->no_wcodec = flags >> 7 & 1;
		o->pixel_mm = (enum npu_codegen_choice)pmm;
		o->fuse = (enum npu_codegen_choice)fuse;
	}
	if (!r->bad && r->left)
		fail(r, "%s: %llu trailing bytes", "segment", r->left);
	return !r->bad;
}

bool npu_npub_detect(const void *data, size_t size)
{
	uint32_t magic;

	if (size < 4)
		return false;
	memcpy(&magic, data, 4);
	return magic == NPU_NPUB_MAGIC;
}

void npu_npub_close(struct npu_npub *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->num_inputs; i++)
		free(f->input_names[i]);
	for (i = 0; i < f->num_seg_in; i++)
		free(f->seg_inputs[i]);
	for (i = 0; i < f->num_seg_out; i++)
		free(f->seg_outputs[i]);
	free(f->input_names);
	free(f->input_shapes);
	free(f->seg_inputs);
	free(f->seg_outputs);
	free(f->seg_in_base);
	free(f->seg_out_base);
	npu_graph_destroy(f->graph);
	npu_onnx_meta_free(f->meta);
	npu_compiled_free(f->c);
	free(f->own);
	free(f);
}

static npu_status parse_inputs(struct npu_rbuf *r, struct npu_npub *f)
{
	size_t i;
	uint32_t k;

	f->num_inputs = npu_get_count(r, "inputs", 4096);
	f->input_names = calloc(f->num_inputs + 1, sizeof(*f->input_names));
	f->input_shapes = calloc(f->num_inputs + 1, sizeof(*f->input_shapes));
	if (!f->input_names || !f->input_shapes)
		return npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
	for (i = 0; i < f->num_inputs && !r->bad; i++) {
		f->input_names[i] = npu_get_str(r, "input name", NPUB_MAX_STRING);
		f->input_shapes[i].rank = (int)npu_get_count(r, "rank", NPU_MAX_RANK);
		for (k = 0; k < (uint32_t)f->input_shapes[i].rank && !r->bad; k++) {
			f->input_shapes[i].dims[k] = (int64_t)npu_get_u64(r, "dim");
			if (f->input_shapes[i].dims[k] <= 0 || f->input_shapes[i].dims[k] > (1ll << 32))
				fail(r, "%s %llu: dimension out of range", "input", i);
		}
	}
	return r->bad ? r->err->status : NPU_OK;
}

static npu_status parse_records(struct npu_rbuf *r, struct npu_compiled *c)
{
	size_t i;

	c->num_records = npu_get_count(r, "records", NPUB_MAX_COUNT);
	c->records = calloc(c->num_records + 1, sizeof(*c->records));
	if (!c->records)
		return npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
	for (i = 0; i < c->num_records && !r->bad; i++) {
		struct npu_placement_record *rec = &c->records[i];
		char *reason;

		rec->node = npu_get_str(r, "node", NPUB_MAX_STRING);
		rec->op_type = npu_get_str(r, "op type", NPUB_MAX_STRING);
		rec->placement = npu_get_u32(r, "placement") ? NPU_PLACE_NPU : NPU_PLACE_CPU;
		rec->segment = (int)npu_get_u32(r, "segment");
		rec->macs = npu_get_u64(r, "macs");
		reason = npu_get_str(r, "reason", NPUB_MAX_STRING);
		if (reason)
			snprintf(rec->reason, sizeof(rec->reason), "%s", reason);
		free(reason);
	}
	return r->bad ? r->err->status : NPU_OK;
}

/* A u64 array of n entries into a malloc'ed copy (seg_keep'd by the caller). */
static bool get_code_counts(struct npu_rbuf *r, struct npu_codegen_result *res, size_t n)
{
	size_t i;

	res->lop_macs = calloc(n + 1, sizeof(*res->lop_macs));
	res->lop_dram_bytes = calloc(n + 1, sizeof(*res->lop_dram_bytes));
	res->lop_pred_cycles = calloc(n + 1, sizeof(*res->lop_pred_cycles));
	res->lop_fused = calloc(n + 1, 1);
	if (!res->lop_macs || !res->lop_dram_bytes || !res->lop_pred_cycles || !res->lop_fused) {
		npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
		r->bad = true;
		return false;
	}
	for (i = 0; i < n && !r->bad; i++) {
		res->lop_macs[i] = npu_get_u64(r, "op macs");
		res->lop_dram_bytes[i] = npu_get_u64(r, "op dram bytes");
		res->lop_pred_cycles[i] = npu_get_u64(r, "op predicted cycles");
		res->lop_fused[i] = npu_get_u8(r, "op fused");
		if (!r->bad && res->lop_fused[i] > 1)
			fail(r, "%s %llu: fused is not 0 or 1", "op", i);
	}
	return !r->bad;
}

/* A blob of at most 'max' bytes into a malloc'ed copy. */
static uint8_t *get_any_blob(struct npu_rbuf *r, uint64_t max, size_t *size, const char *field)
{
	uint64_t n = npu_get_u64(r, field);
	uint8_t *p;

	*size = 0;
	if (r->bad)
		return NULL;
	if (n > max || n > r->left) {
		fail(r, "blob '%s' of %llu bytes is too large", field, n);
		return NULL;
	}
	p = copy_bytes(r, n, field);
	if (p)
		*size = (size_t)n;
	return p;
}

/*
 * 3.0: segment k's code, after its segment section. The stream's address
 * fields are found again and must each fall in one of its buffers.
 */
static bool get_code(struct npu_rbuf *r, struct npu_npub *f)
{
	uint32_t k = npu_get_u32(r, "segment");
	struct npu_codegen_result *res;
	struct npu_segment *seg;
	uint64_t size_of[NPU_RELOC_REGIONS];
	struct npu_error scan = { 0 };
	char what[64];

	if (r->bad)
		return false;
	if (k != f->num_code || k >= f->c->num_segments)
		return fail(r, "%s %llu does not follow its segment section", "code of segment", k);
	seg = f->c->segments[k];
	res = &seg->code;
	seg->code_sram_size = npu_get_u32(r, "sram size");
	res->consts = get_any_blob(r, 1ull << 32, &res->consts_size, "constants");
	seg->stream.data = get_any_blob(r, NPU_CS_MAX_SIZE, &seg->stream.size, "stream");
	res->macs = npu_get_u64(r, "macs");
	res->ideal_mac_cycles = npu_get_u64(r, "ideal mac cycles");
	res->instructions = npu_get_u64(r, "instructions");
	res->fused_groups = npu_get_u64(r, "fused groups");
	res->dram_bytes = npu_get_u64(r, "dram bytes");
	if (r->bad || !get_code_counts(r, res, seg->prog.num_lops))
		return false;
	if (r->left)
		return fail(r, "%s: %llu trailing bytes", "code", r->left);
	size_of[NPU_RELOC_ARENA] = seg->arena_size;
	size_of[NPU_RELOC_CONSTS] = res->consts_size;
	size_of[NPU_RELOC_PROFILE] = 0;	/* a stored stream never profiles */
	snprintf(what, sizeof(what), "code of segment %u", k);
	if (npu_reloc_scan(seg->stream.data, seg->stream.size, size_of, what, &seg->stream.relocs,
			   &seg->stream.num_relocs, &scan))
		return npu_rbuf_fail(r, "%s", scan.msg);
	f->num_code++;
	return true;
}

/* 3.0: the source model's metadata; keys non-empty and unique, as on import. */
static bool get_metadata(struct npu_rbuf *r, struct npu_npub *f)
{
	struct npu_onnx_meta *m = calloc(1, sizeof(*m));
	size_t i, j;

	if (!m || f->meta) {
		free(m);
		return m ? fail(r, "%s%.0llu section appears twice", "metadata", 0)
			 : npu_rbuf_fail(r, "out of memory");
	}
	f->meta = m;
	m->producer_name = npu_get_str(r, "producer name", NPUB_MAX_STRING);
	m->producer_version = npu_get_str(r, "producer version", NPUB_MAX_STRING);
	m->domain = npu_get_str(r, "domain", NPUB_MAX_STRING);
	m->doc_string = npu_get_str(r, "doc string", 1u << 24);
	m->graph_name = npu_get_str(r, "graph name", NPUB_MAX_STRING);
	m->graph_doc_string = npu_get_str(r, "graph doc string", 1u << 24);
	m->model_version = (int64_t)npu_get_u64(r, "model version");
	m->num_props = npu_get_count(r, "metadata props", 1u << 16);
	if (r->bad)
		return false;
	m->keys = calloc(m->num_props + 1, sizeof(*m->keys));
	m->values = calloc(m->num_props + 1, sizeof(*m->values));
	if (!m->keys || !m->values) {
		m->num_props = 0;
		return npu_rbuf_fail(r, "out of memory");
	}
	for (i = 0; i < m->num_props && !r->bad; i++) {
		m->keys[i] = npu_get_str(r, "metadata key", NPUB_MAX_STRING);
		m->values[i] = npu_get_str(r, "metadata value", 1u << 24);
		if (!r->bad && (!m->keys[i] || !m->keys[i][0]))
			return fail(r, "%s %llu has no key", "metadata prop", i);
		for (j = 0; j < i && !r->bad; j++)
			if (!strcmp(m->keys[i], m->keys[j]))
				return fail(r, "%s %llu repeats a key", "metadata prop", i);
	}
	if (!r->bad && r->left)
		fail(r, "%s: %llu trailing bytes", "metadata", r->left);
	return !r->bad;
}

npu_status npu_npub_open(const void *data, size_t size, const char *source,
			 struct npu_npub **out, struct npu_error *err)
{
	return npu_npub_open_view(data, size, false, source, out, err);
}

npu_status npu_npub_open_view(const void *data, size_t size, bool borrow, const char *source,
			      struct npu_npub **out, struct npu_error *err)
{
	struct npu_npub *f = calloc(1, sizeof(*f));
	struct npu_rbuf hdr = { .where = "header", .err = err, .source = source };
	uint32_t magic, hs, crc, sections, reserved, s, seen = 0;
	uint16_t major, minor;
	uint64_t file_size;
	const uint8_t *p;
	size_t left;

	*out = NULL;
	if (!f || !(f->c = calloc(1, sizeof(*f->c))) ||
	    !(f->c->segments = calloc(1, sizeof(*f->c->segments))) ||
	    (!borrow && !(f->own = malloc(size ? size : 1)))) {
		npu_npub_close(f);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", source);
	}
	if (!borrow)
		memcpy(f->own, data, size);
	f->data = borrow ? data : f->own;
	f->size = size;
	hdr.p = f->data;
	hdr.left = size;
	magic = npu_get_u32(&hdr, "magic");
	major = npu_get_u16(&hdr, "version major");
	minor = npu_get_u16(&hdr, "version minor");
	hs = npu_get_u32(&hdr, "header size");
	crc = npu_get_u32(&hdr, "checksum");
	file_size = npu_get_u64(&hdr, "file size");
	sections = npu_get_u32(&hdr, "sections");
	reserved = npu_get_u32(&hdr, "reserved");
	if (hdr.bad)
		goto bad;
	if (magic != NPU_NPUB_MAGIC) {
		fail(&hdr, "%s is 0x%llx, not \"NPUB\": not a compiled model", "magic", magic);
		goto bad;
	}
	if (major < 1 || major > NPU_NPUB_VERSION_MAJOR) {
		fail(&hdr, "%s %llu is not supported (this library reads versions 1 to 3)", "version", major);
		goto bad;
	}
	f->major = major;
	(void)minor;	/* minor versions only append fields at section ends */
	if (hs != NPUB_HEADER_SIZE || reserved || file_size != size) {
		fail(&hdr, "%s / file size mismatch (file has %llu bytes)", "header size", size);
		goto bad;
	}
	if ((uint32_t)crc32_z(0, f->data + NPUB_HEADER_SIZE, size - NPUB_HEADER_SIZE) != crc) {
		fail(&hdr, "%s mismatch: the file is corrupt%.0llu", "checksum", 0);
		goto bad;
	}
	p = f->data + NPUB_HEADER_SIZE;
	left = size - NPUB_HEADER_SIZE;
	for (s = 0; s < sections; s++) {
		struct npu_rbuf sec = { .p = p, .left = left, .where = "section table", .err = err,
				    .source = source };
		uint32_t tag = npu_get_u32(&sec, "tag");
		uint64_t len;

		npu_get_u32(&sec, "reserved");
		len = npu_get_u64(&sec, "size");
		if (sec.bad)
			goto bad;
		if (len > sec.left) {
			fail(&sec, "%s of %llu bytes runs past the end of the file", "section", len);
			goto bad;
		}
		sec.left = (size_t)len;
		p = sec.p + len;
		left -= 16 + (size_t)len;
		/* Segments and their code repeat; a second of another would
		 * overwrite (and leak) the first's. */
		if (tag < 32 && tag != NPUB_SEGMENT && tag != NPUB_CODE) {
			if (seen >> tag & 1) {
				fail(&sec, "%s %llu appears twice", "section tag", tag);
				goto bad;
			}
			seen |= 1u << tag;
		}
		switch (tag) {
		case NPUB_MODEL:
			f->model = sec.p;
			f->model_size = sec.left;
			break;
		case NPUB_INPUTS:
			sec.where = "inputs section";
			if (parse_inputs(&sec, f))
				goto bad;
			break;
		case NPUB_STATS:
			sec.where = "stats section";
			f->c->total_macs = npu_get_u64(&sec, "total macs");
			f->c->npu_macs = npu_get_u64(&sec, "npu macs");
			/* 2.2: the CPU options compiled with, if not the defaults. */
			if (!sec.bad && sec.left) {
				uint8_t fuse = npu_get_u8(&sec, "cpu fuse");
				uint8_t nchwc = npu_get_u8(&sec, "cpu nchwc");
				uint8_t wino = npu_get_u8(&sec, "cpu winograd");

				if (!sec.bad && (fuse > 1 || nchwc > NPU_CPU_ON || wino > NPU_CPU_ON))
					fail(&sec, "%s: value %llu out of range", "cpu options",
					     fuse > 1 ? fuse : nchwc > NPU_CPU_ON ? nchwc : wino);
				f->c->cpu.no_fuse = fuse;
				f->c->cpu.nchwc = (enum npu_cpu_choice)nchwc;
				f->c->cpu.winograd = (enum npu_cpu_choice)wino;
			}
			if (!sec.bad && sec.left)
				fail(&sec, "%s: %llu trailing bytes", "stats", sec.left);
			if (sec.bad)
				goto bad;
			break;
		case NPUB_RECORDS:
			sec.where = "placement section";
			if (parse_records(&sec, f->c))
				goto bad;
			break;
		case NPUB_SEGMENT: {
			struct npu_segment **segs, *seg;
			size_t *ib, *ob;

			sec.where = "segment section";
			segs = realloc(f->c->segments, (f->c->num_segments + 1) * sizeof(*segs));
			ib = realloc(f->seg_in_base, (f->c->num_segments + 1) * sizeof(*ib));
			ob = realloc(f->seg_out_base, (f->c->num_segments + 1) * sizeof(*ob));
			if (segs)
				f->c->segments = segs;
			if (ib)
				f->seg_in_base = ib;
			if (ob)
				f->seg_out_base = ob;
			seg = calloc(1, sizeof(*seg));
			if (!segs || !ib || !ob || !seg) {
				free(seg);
				npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", source);
				goto bad_keep;
			}
			f->seg_in_base[f->c->num_segments] = f->num_seg_in;
			f->seg_out_base[f->c->num_segments] = f->num_seg_out;
			f->c->segments[f->c->num_segments++] = seg;
			if (!get_segment(&sec, f, seg))
				goto bad;
			break;
		}
		case NPUB_GRAPH:
			sec.where = "graph section";
			f->graph = npu_graph_read(&sec, source);
			if (!f->graph)
				goto bad;
			if (sec.left) {
				fail(&sec, "%s: %llu trailing bytes", "graph", sec.left);
				goto bad;
			}
			break;
		case NPUB_CODE:
			sec.where = "code section";
			if (!get_code(&sec, f))
				goto bad;
			break;
		case NPUB_METADATA:
			sec.where = "metadata section";
			if (!get_metadata(&sec, f))
				goto bad;
			break;
		default:
			fail(&sec, "%s %llu is unknown", "section tag", tag);
			goto bad;
		}
	}
	if (left) {
		fail(&hdr, "%s: %llu bytes after the last section", "file", left);
		goto bad;
	}
	/* Before 3.0 the model is what loading compiles; from 3.0 the graph
	 * and every segment's code are what it runs. */
	if (f->major < 3 && !f->model) {
		fail(&hdr, "%s%.0llu: no model section", "file", 0);
		goto bad;
	}
	if (f->major >= 3 && (!f->graph || f->num_code != f->c->num_segments)) {
		fail(&hdr, "%s%.0llu: no graph section, or a segment without its code", "file", 0);
		goto bad;
	}
	if (f->major < 3 && (f->graph || f->num_code || f->meta)) {
		fail(&hdr, "%s%.0llu: a version 3 section in an older file", "file", 0);
		goto bad;
	}
	*out = f;
	return NPU_OK;
bad:
	if (!err->status)
		npu_error_set(err, NPU_ERR_MODEL, "%s: malformed compiled model", source);
bad_keep:
	npu_npub_close(f);
	return err->status;
}

const void *npu_npub_model(const struct npu_npub *f, size_t *size)
{
	*size = f->model_size;
	return f->model;
}

bool npu_npub_finished(const struct npu_npub *f)
{
	return f->major >= 3;
}

struct npu_graph *npu_npub_take_graph(struct npu_npub *f)
{
	struct npu_graph *g = f->graph;

	f->graph = NULL;
	return g;
}

struct npu_onnx_meta *npu_npub_take_metadata(struct npu_npub *f)
{
	struct npu_onnx_meta *m = f->meta;

	f->meta = NULL;
	return m;
}

const struct npu_cpu_options *npu_npub_cpu_options(const struct npu_npub *f)
{
	return &f->c->cpu;
}

size_t npu_npub_num_inputs(const struct npu_npub *f)
{
	return f->num_inputs;
}

const char *npu_npub_input(const struct npu_npub *f, size_t index,
			   struct npu_shape *shape)
{
	if (index >= f->num_inputs)
		return NULL;
	*shape = f->input_shapes[index];
	return f->input_names[index];
}

/* Output size of a window over n pixels with padding 'pad' before, 0..15 after. */
static bool window_fits(uint32_t n, uint32_t k, uint32_t s, uint32_t pad, uint32_t out)
{
	uint32_t after;

	for (after = 0; after < 16; after++)
		if (n + pad + after >= k && (n + pad + after - k) / s + 1 == out)
			return true;
	return false;
}

/* Whether im2col act a gathers from a value of NHWC dims 'v'. */
static bool im2col_of(const struct npu_act *v, const struct npu_act *a)
{
	return v->n == a->n && (uint64_t)v->c * a->im2col.k_h * a->im2col.k_w == a->c &&
	       window_fits(v->h, a->im2col.k_h, a->im2col.stride_h, a->im2col.pad_top, a->h) &&
	       window_fits(v->w, a->im2col.k_w, a->im2col.stride_w, a->im2col.pad_left, a->w);
}

/* Whether v is a float value of act a's dimensions (or a's im2col source). */
static bool float_value_of(const struct npu_value *v, const struct npu_act *a)
{
	struct npu_act dims;

	if (!v || v->dtype != NPU_DTYPE_FLOAT || v->shape.rank < 0)
		return false;
	npu_value_act_dims(v, &dims);
	if (a->im2col.k_h)
		return im2col_of(&dims, a);
	return dims.n == a->n && dims.h == a->h && dims.w == a->w && dims.c == a->c;
}

static struct npu_value *find_float_value(struct npu_graph *g, const char *name,
					  const struct npu_act *a)
{
	struct npu_value *v = name ? npu_graph_find_value(g, name) : NULL;
	struct npu_act dims;

	if (!v || v->dtype != NPU_DTYPE_FLOAT)
		return NULL;
	npu_value_act_dims(v, &dims);
	if (a->im2col.k_h)
		return im2col_of(&dims, a) ? v : NULL;
	if (dims.n != a->n || dims.h != a->h || dims.w != a->w || dims.c != a->c)
		return NULL;
	return v;
}

/*
 * 3.0: bind each NpuSegment node of g (and of its subgraphs) to the
 * segment its "segment" attribute names, checking that its values are the
 * segment's boundary; every segment must be bound exactly once.
 */
static npu_status bind_nodes(struct npu_compiled *c, struct npu_graph *g, int depth,
			     struct npu_error *err)
{
	size_t i, j, a;
	npu_status st = NPU_OK;

	if (depth > 32)
		return npu_error_set(err, NPU_ERR_MODEL, "%s: subgraphs nest too deep", g->source);
	for (i = 0; i < g->num_nodes && !st; i++) {
		struct npu_node *n = g->nodes[i];
		struct npu_segment *seg;
		int64_t k;

		for (a = 0; a < n->num_attrs && !st; a++)
			if (n->attrs[a].type == NPU_ATTR_GRAPH && n->attrs[a].g)
				st = bind_nodes(c, n->attrs[a].g, depth + 1, err);
		if (st || strcmp(n->op_type, NPU_SEGMENT_OP) || strcmp(n->domain, NPU_SEGMENT_DOMAIN))
			continue;
		k = npu_node_attr_int_or(n, "segment", -1);
		if (k < 0 || (uint64_t)k >= c->num_segments || c->segments[k]->graph)
			return npu_error_set(err, NPU_ERR_MODEL,
					     "%s: node '%s': segment %lld is not in the file, or bound twice",
					     g->source, n->name, (long long)k);
		seg = c->segments[k];
		if (n->num_inputs != seg->num_inputs || n->num_outputs != seg->num_outputs)
			return npu_error_set(err, NPU_ERR_MODEL,
					     "%s: node '%s': %zu inputs and %zu outputs, segment %lld has %zu and %zu",
					     g->source, n->name, n->num_inputs, n->num_outputs,
					     (long long)k, seg->num_inputs, seg->num_outputs);
		seg->inputs = calloc(seg->num_inputs + 1, sizeof(*seg->inputs));
		seg->outputs = calloc(seg->num_outputs + 1, sizeof(*seg->outputs));
		if (!seg->inputs || !seg->outputs)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		for (j = 0; j < n->num_inputs; j++) {
			if (!float_value_of(n->inputs[j], &seg->prog.acts[seg->input_acts[j]]))
				return npu_error_set(err, NPU_ERR_MODEL,
						     "%s: node '%s': input %zu does not match segment %lld's tensor",
						     g->source, n->name, j, (long long)k);
			seg->inputs[j] = n->inputs[j];
		}
		for (j = 0; j < n->num_outputs; j++) {
			if (!float_value_of(n->outputs[j], &seg->prog.acts[seg->output_acts[j]]))
				return npu_error_set(err, NPU_ERR_MODEL,
						     "%s: node '%s': output %zu does not match segment %lld's tensor",
						     g->source, n->name, j, (long long)k);
			seg->outputs[j] = n->outputs[j];
		}
		seg->graph = g;
		n->op_state = seg;
	}
	return st;
}

npu_status npu_npub_instantiate(struct npu_npub *f, struct npu_graph *graph,
				struct npu_device *dev, unsigned int flags,
				struct npu_compiled **out,
				struct npu_error *err)
{
	struct npu_compiled *c = f->c;
	bool profile_ops = flags & NPU_NPUB_PROFILE_OPS;
	size_t k, i;
	npu_status st;

	*out = NULL;
	c->defer_consts = flags & NPU_NPUB_DEFER_CONSTS;
	if (f->major >= 3) {
		c->profile_ops = profile_ops;
		st = bind_nodes(c, graph, 0, err);
		for (k = 0; !st && k < c->num_segments; k++)
			if (!c->segments[k]->graph)
				st = npu_error_set(err, NPU_ERR_MODEL,
						   "%s: NPU segment %zu has no node in the graph",
						   graph->source, k);
		if (!st)
			st = npu_compiled_attach(c, dev, err);
		if (st)
			return st;
		f->c = NULL;
		*out = c;
		return NPU_OK;
	}
	for (k = 0; k < c->num_segments; k++) {
		struct npu_segment *seg = c->segments[k];
		struct npu_graph *top = graph;

		/* A segment of a subgraph binds to that subgraph's values. */
		graph = npu_subgraph_at(top, seg->graph_path);
		if (!graph)
			return npu_error_set(err, NPU_ERR_MODEL,
					     "NPU segment %d: the embedded model has no subgraph where it was compiled (%s)",
					     seg->index, seg->first_node ? seg->first_node : "?");
		seg->inputs = calloc(seg->num_inputs + 1, sizeof(*seg->inputs));
		seg->outputs = calloc(seg->num_outputs + 1, sizeof(*seg->outputs));
		if (!seg->inputs || !seg->outputs)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		for (i = 0; i < seg->num_inputs; i++) {
			const char *name = f->seg_inputs[f->seg_in_base[k] + i];

			seg->inputs[i] = find_float_value(graph, name,
							  &seg->prog.acts[seg->input_acts[i]]);
			if (!seg->inputs[i])
				return npu_error_set(err, NPU_ERR_MODEL,
						     "NPU segment %d: input '%s' does not match the embedded model",
						     seg->index, name ? name : "?");
		}
		for (i = 0; i < seg->num_outputs; i++) {
			const char *name = f->seg_outputs[f->seg_out_base[k] + i];

			seg->outputs[i] = find_float_value(graph, name,
							   &seg->prog.acts[seg->output_acts[i]]);
			if (!seg->outputs[i])
				return npu_error_set(err, NPU_ERR_MODEL,
						     "NPU segment %d: output '%s' does not match the embedded model",
						     seg->index, name ? name : "?");
		}
		graph = top;
	}
	c->profile_ops = profile_ops;
	st = npu_compiled_bind(c, graph, dev, err);
	if (st)
		return st;
	f->c = NULL;	/* ownership moves to the caller */
	*out = c;
	return NPU_OK;
}
