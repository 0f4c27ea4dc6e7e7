// SPDX-License-Identifier: MIT
/*
 * codegen.c - NPU code generation for one segment: npu_codegen_segment()
 * walks the lops (alone or in fused groups) and emits each through its
 * emitter; the options, the constant blob and the double-buffered tile
 * loop every emitter shares are here. codegen_internal.h lists the other
 * files.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_internal.h"

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
uint64_t matmul_cycles(const struct npu_codegen_options *o, uint64_t m, uint64_t k,
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
			else if (!strcmp(item, "sparse"))
				n.no_sparse = !on;
			else if (!strcmp(item, "wcodec"))
				n.no_wcodec = !on;
			else
				return npu_error_set(err, NPU_ERR_INVALID_ARG,
						     "unknown option '%s' (array_modes, out_lut, tile_search, prefetch, gap_split, sparse, wcodec, lut_producer, pixel_mm, fuse, fuse_rows)", item);
		} else if (strcmp(item, "array_modes") && strcmp(item, "out_lut") &&
			   strcmp(item, "tile_search") && strcmp(item, "prefetch") &&
			   strcmp(item, "gap_split") && strcmp(item, "sparse") &&
			   strcmp(item, "wcodec")) {
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "unknown option '%s' (array_modes, out_lut, tile_search, prefetch, gap_split, sparse, wcodec, lut_producer, pixel_mm, fuse, fuse_rows)", item);
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
npu_status cmd_conv2d(const struct npu_codegen_options *o, struct npu_cmdbuf *cb,
		      const struct npu_insn_conv2d *insn)
{
	struct npu_insn_conv2d cv = *insn;
	uint32_t m = NPU_SPARSE_M(cv.flags);
	/* N:M sparse (ISA 1.6): the array's rows carry the kept weights */
	uint32_t in_c = m ? cv.in_c / m * NPU_SPARSE_N(cv.flags) : cv.in_c;

	cv.flags |= NPU_CONV_ARRAY(conv_mode(o, (uint64_t)cv.out_h * cv.out_w, cv.groups, in_c,
					     cv.out_c, cv.hdr.flags & NPU_INSN_I16));
	return npu_cmdbuf_conv2d(cb, &cv);
}

npu_status cmd_matmul(const struct npu_codegen_options *o, struct npu_cmdbuf *cb,
		      const struct npu_insn_matmul *insn)
{
	struct npu_insn_matmul mm = *insn;
	uint32_t m = NPU_SPARSE_M(mm.flags);
	/* N:M sparse (ISA 1.6): the array's rows carry the kept weights */
	uint32_t k = m ? mm.k / m * NPU_SPARSE_N(mm.flags) : mm.k;

	mm.flags |= NPU_CONV_ARRAY(matmul_mode(o, mm.m, k, mm.n, mm.hdr.flags & NPU_INSN_I16));
	return npu_cmdbuf_matmul(cb, &mm);
}

/* ---- Constant blob ---------------------------------------------------- */

/* Append 'size' bytes (NULL: zeros) at a 64-byte boundary; returns offset. */
int blob_put(struct blob *b, const void *src, size_t size, size_t *off)
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

/* ---- Emission ---------------------------------------------------------- */

/* Copy a constant block from the blob into SRAM at 'sram' (after a SYNC). */
npu_status emit_consts(struct emitter *e, size_t blob_off, size_t size,
		       uint32_t sram)
{
	return emit_consts_codec(e, blob_off, 0, size, sram);
}

/*
 * The same for a block stored in the blob as a weight-codec stream of
 * 'stream' bytes (ISA 1.6; 0: stored as is), decoded into 'size' bytes.
 */
npu_status emit_consts_codec(struct emitter *e, size_t blob_off, size_t stream,
			     size_t size, uint32_t sram)
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
	if (stream) {
		struct npu_insn_dma_copy d = {
			.src_space = NPU_SPACE_VA, .dst_space = NPU_SPACE_SRAM,
			.codec = NPU_DMA_CODEC_BLOCK, .rows = 1,
			.src = e->t->consts_va + blob_off, .dst = sram,
			.row_bytes = (uint32_t)size, .src_bytes = (uint32_t)stream,
		};

		EMIT(e, npu_cmdbuf_dma_copy(e->cb, &d));
		return NPU_OK;
	}
	EMIT(e, npu_cmdbuf_dma_copy_1d(e->cb, 0, NPU_SPACE_SRAM, sram, NPU_SPACE_VA,
				       e->t->consts_va + blob_off, (uint32_t)size));
	return NPU_OK;
}

/* Build the slice's constant block: weights, bias, mult[] + shift[], LUT. */
int put_slice_consts(struct blob *b, struct slice *s, const int8_t *weight,
		     uint64_t wpo, const struct npu_lop_quant *q)
{
	uint32_t c = s->oc1 - s->oc0;
	size_t start = (size_t)align_up(b->size, SRAM_ALIGN), off;
	uint8_t *quant;
	int rc;

	if (s->sparse_k ? sparse_put_weights(b, s, weight, wpo, &off) :
			  blob_put(b, weight + (size_t)s->oc0 * wpo, (size_t)c * wpo, &off))
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
	return wcodec_block(b, s, start);
}

/*
 * The double-buffered tile loop shared by every op. Tile i computes from
 * buffer i % 2; the DMA engine writes back tile i-1 and prefetches i+1
 * meanwhile. A slice change reloads constants behind a barrier.
 */
npu_status run_tiles(struct emitter *e, const struct tile_ops *ops, void *ctx)
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
			if (d.codec)	/* ISA 1.6: DRAM moves the compressed stream */
				bytes += d.src_bytes;
			else
				bytes += (uint64_t)d.rows * d.row_bytes *
					 ((d.src_space == NPU_SPACE_VA) +
					  (d.dst_space == NPU_SPACE_VA));
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
	uint8_t *fuse = NULL;	/* fuse[i]: how lop i runs fused (choose_fusion()) */
	size_t *starts = NULL, *first_lop = NULL, nops = 0;	/* each op or group */
	size_t i;

	memset(result, 0, sizeof(*result));
	result->lop_macs = calloc(prog->num_lops + 1, sizeof(*result->lop_macs));
	result->lop_dram_bytes = calloc(prog->num_lops + 1, sizeof(*result->lop_dram_bytes));
	result->lop_pred_cycles = calloc(prog->num_lops + 1, sizeof(*result->lop_pred_cycles));
	result->lop_fused = calloc(prog->num_lops + 1, 1);
	result->lop_sparse = calloc(prog->num_lops + 1, 1);
	result->lop_sparse_cycles_saved = calloc(prog->num_lops + 1, sizeof(uint64_t));
	result->lop_weight_bytes_saved = calloc(prog->num_lops + 1, sizeof(uint64_t));
	if (!result->lop_macs || !result->lop_dram_bytes || !result->lop_pred_cycles ||
	    !result->lop_fused || !result->lop_sparse || !result->lop_sparse_cycles_saved ||
	    !result->lop_weight_bytes_saved) {
		npu_codegen_result_free(result);
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
		choose_fusion(prog, target->sram_size, fuse);
	for (i = 0; i < prog->num_lops && st == NPU_OK; i++) {
		const struct npu_lop *l = &prog->lops[i];
		uint64_t macs_before = result->macs;
		size_t stream_before;
		char why[160];
		struct tiling p;

		npu_cmdbuf_data(cb, &stream_before);
		first_lop[nops] = i;
		starts[nops++] = stream_before;

		if (fuse && fuse[i] == 3) {	/* a Concat's copies as one tile loop */
			size_t m = 0;

			st = gen_concat(&e, i, target->sram_size, &m);
			if (st != NPU_OK)
				break;
			result->lop_pred_cycles[i] = concat_group_cycles(prog, i, target->sram_size);
			st = close_group(&e, i, m, stream_before);
			i += m - 1;
			continue;
		}
		if (fuse && fuse[i] == 2) {	/* [gate,] RESIZE, ELTWISE as one tile loop */
			size_t m = 0;

			st = gen_resize_elt(&e, i, target->sram_size, &m);
			if (st != NPU_OK)
				break;
			result->lop_pred_cycles[i] = resize_elt_cycles(prog, i, target->sram_size);
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
			result->lop_pred_cycles[i] = fused_chain_cycles(prog, i, n, target->sram_size);
			st = close_group(&e, i, n, stream_before);
			i += n - 1;
			continue;
		}
		e.lop = l;
		if (!tile_lop(prog, l, target->sram_size, &p, why, sizeof(why))) {
			st = npu_error_set(err, NPU_ERR_UNSUPPORTED, "codegen: %s: %s",
					   l->name, why);
			break;
		}
		tile_search(prog, l, &p);
		result->lop_pred_cycles[i] = tiling_cost(prog, l, &p);
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
		npu_codegen_result_free(result);
		return st;
	}
	result->consts = e.blob.data;
	result->consts_size = e.blob.size;
	result->ideal_mac_cycles = (result->macs + NPU_MAC_ROWS * NPU_MAC_COLS - 1) /
				   (NPU_MAC_ROWS * NPU_MAC_COLS);
	result->instructions = npu_cmdbuf_count(cb);
	return NPU_OK;
}
