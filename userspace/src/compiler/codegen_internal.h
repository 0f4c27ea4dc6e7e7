/* SPDX-License-Identifier: MIT */
/*
 * codegen_internal.h - what the files of NPU code generation share
 * (internal to compiler/codegen*.c; the rest of the compiler uses codegen.h).
 *
 *   codegen.c           the segment entry (npu_codegen_segment()), options,
 *                       the constant blob and the emission core (run_tiles())
 *   codegen_tiling.c    channel slices, folded convs, SRAM tiling plans
 *   codegen_conv.c      CONV2D / POOL, ConvTranspose phases, pixel-major MATMULs
 *   codegen_ops.c       RESIZE, MATMUL, ELTWISE / LUT / SOFTMAX / LAYERNORM,
 *                       REDUCE, COPY
 *   codegen_cost.c      the cost model (tiling_cost(), tile_search())
 *   codegen_fusion.c    cross-layer fusion: choose_fusion(), conv chains
 *   codegen_fusion_groups.c  the Concat and RESIZE -> ELTWISE tile loops
 *   codegen_prefetch.c  constants prefetched across ops
 *   codegen_sparse.c    ISA 1.6: 2:4 sparse weights, the weight codec
 *
 * Every function declared here is defined in the file named above its group.
 */
#ifndef NPU_COMPILER_CODEGEN_INTERNAL_H
#define NPU_COMPILER_CODEGEN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/codegen.h"
#include "npu/npu_device.h"
#include "npu_isa.h"

/* SRAM buffers and constant blocks start at multiples of this. */
#define SRAM_ALIGN 64u

static inline uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- Instruction fields ------------------------------------------------ */

/* The header flags of a compute op over 'a' (int16: NPU_INSN_I16). */
static inline uint8_t i16_flag(const struct npu_act *a)
{
	return a->i16 ? NPU_INSN_I16 : 0;
}

/* Bias bytes per channel: int64 for an int16 lop, int32 else, 0: none. */
static inline unsigned bias_es(const struct npu_lop_quant *q)
{
	return q->bias64 ? 8 : q->bias ? 4 : 0;
}

/*
 * An int8 output LUT of a conv / matmul lop runs in the MAC array's output
 * unit (NPU_CONV_OUT_LUT, ISA 1.4): no LUT instruction, no vector-engine
 * cycles. opts.no_out_lut emits the separate LUT of ISA 1.3 instead (tests
 * compare the two). int16 tables (lut16) always take a LUT instruction.
 */
static inline bool out_lut_fused(const struct npu_codegen_options *o, const struct npu_lop_quant *q)
{
	return q->lut && !o->no_out_lut;
}

/* Whether the lop's output stage needs its own LUT instruction. */
static inline bool lut_insn(const struct npu_codegen_options *o, const struct npu_lop_quant *q)
{
	return q->lut16 || (q->lut && !out_lut_fused(o, q));
}

/* The OUT_LUT flag and table of a CONV2D / MATMUL when the stage fuses. */
static inline uint32_t out_lut_flag(const struct npu_codegen_options *o,
				    const struct npu_lop_quant *q)
{
	return out_lut_fused(o, q) ? NPU_CONV_OUT_LUT : 0;
}

/* The LUT address of a CONV2D / MATMUL when its output stage fuses, else 0. */
static inline uint32_t out_lut_at(const struct npu_codegen_options *o,
				  const struct npu_lop_quant *q, uint32_t table)
{
	return out_lut_fused(o, q) ? table : 0;
}

/* MATMUL cycles of one instruction, in the MAC array mode it is emitted in. */
uint64_t matmul_cycles(const struct npu_codegen_options *o, uint64_t m, uint64_t k,
		       uint64_t n, bool i16);

/* npu_cmdbuf_conv2d() / _matmul() with the instruction's array mode set. */
npu_status cmd_conv2d(const struct npu_codegen_options *o, struct npu_cmdbuf *cb,
		      const struct npu_insn_conv2d *insn);
npu_status cmd_matmul(const struct npu_codegen_options *o, struct npu_cmdbuf *cb,
		      const struct npu_insn_matmul *insn);

/* ---- Constant blob (codegen.c) ------------------------------------------ */

/* The segment's read-only constants, built up as ops are emitted. */
struct blob {
	uint8_t *data;
	size_t size, cap;
};

/* Append 'size' bytes (NULL: zeros) at a 64-byte boundary; returns offset. */
int blob_put(struct blob *b, const void *src, size_t size, size_t *off);

/* ---- Channel slices and tiling plans (codegen_tiling.c) ----------------- */

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
	/*
	 * ISA 1.6 (codegen_sparse.c): sparse_k != 0, the weights are packed
	 * 2:4 over that many input channels (sparse_saved bytes fewer);
	 * codec_ok, the block may go through the weight codec, and then
	 * codec_size != 0 is its stream's size in the blob (blob_size stays
	 * the block's size in SRAM); live_tiles[mode], the MAC tiles the
	 * device runs per pixel in each array mode.
	 */
	uint32_t sparse_k;
	bool codec_ok;
	size_t codec_size;
	uint64_t sparse_saved;
	uint64_t live_tiles[NPU_ARRAY_NUM_MODES];
};

/* Bytes of one slice's constants in SRAM: weights, bias, mult, shift, LUT. */
uint64_t slice_const_bytes(uint64_t channels, uint64_t weights_per_oc,
			   unsigned bias_bytes, bool lut);
/* The same for a lop's quantization: its LUT may be int16 (1026 bytes). */
uint64_t slice_consts(uint64_t channels, uint64_t weights_per_oc,
		      const struct npu_lop_quant *q);
/* Output-channel slicing for 'out_c' channels in 'groups' groups of 'chunk'. */
size_t make_slices(uint32_t out_c, uint32_t in_c, uint32_t groups,
		   uint32_t chunk, struct slice *s, size_t max);
/* Weight bytes per output channel of a conv lop (all phases when folded). */
uint64_t conv_wpo(const struct npu_lop *l, const struct npu_act *in,
		  const struct npu_act *out);

/* How one lop is tiled: its slices, tile size and SRAM layout. */
struct tiling {
	uint32_t chunk;		/* output channels per slice */
	uint32_t rows;		/* output rows (or matrix rows / elements) per tile */
	uint32_t sram_consts, sram_in[2], sram_in2[2], sram_out[2];
	uint64_t consts_bytes;
	bool pmm;		/* pixel-major MATMULs (struct pmm) */
};

/* Input rows a conv / pool tile of 'rows' output rows needs at most. */
static inline uint64_t window_rows(uint64_t rows, uint32_t stride, uint32_t dil,
				   uint32_t k)
{
	return (rows - 1) * stride + (uint64_t)dil * (k - 1) + 1;
}

/* Plan 'l' for 'sram' bytes (no tile search yet); false: 'why' says why not. */
bool tile_lop(const struct npu_segment_program *prog,
	      const struct npu_lop *l, uint32_t sram, struct tiling *p,
	      char *why, size_t why_size);

/* Pixel-major MATMULs of a conv (codegen_tiling.c explains them). */
#define PMM_MAX_PHASES 64

struct pmm {
	bool conv1x1;			/* 1x1 conv: phase p = output channel p */
	uint32_t phases, rows, n;	/* n: pixels (rows * in.w) per tile at most */
	uint32_t w_off[PMM_MAX_PHASES], bias_off[PMM_MAX_PHASES], quant_off[PMM_MAX_PHASES];
	uint32_t lut_off, sram_in[2], sram_mid, sram_out[2];
	uint64_t consts;
};

/* Whether lop l can run as pixel-major MATMULs. */
bool pmm_ok(const struct npu_segment_program *prog, const struct npu_lop *l);
/* The constants of tiles of n pixels from SRAM offset 0, into m. */
void pmm_consts_layout(const struct npu_segment_program *prog, const struct npu_lop *l,
		       uint64_t n, struct pmm *m);
/* Lay out SRAM for tiles of 'rows' input rows; false: it does not fit. */
bool pmm_layout(const struct npu_segment_program *prog, const struct npu_lop *l,
		uint32_t rows, uint32_t sram, struct pmm *m);

/* The constants block of a MATMUL of two activations (npu_lop.matmul.batch). */
struct mm_act_consts {
	uint32_t lut, idq, id, size;	/* SRAM / blob offsets from the block */
	bool mm_transpose;
};

/* Its layout for n output columns (B transposed by a MATMUL when n <= 64). */
void mm_act_consts(const struct npu_lop *l, uint32_t n, struct mm_act_consts *o);

/* A RESIZE lop and its tensors, for resize_in_bytes(). */
struct resize_ctx {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
};

/* Input rows [*ih0, *ih1] (inclusive) that output rows [r0, r1) of a RESIZE read. */
void resize_rows(const struct npu_lop *l, const struct npu_act *in,
		 uint32_t r0, uint32_t r1, uint32_t *ih0, uint32_t *ih1);
/* Input bytes of the widest tile of 'rows' output rows ('c': a struct resize_ctx). */
uint64_t resize_in_bytes(const void *c, uint32_t rows);

/* ---- Emission (codegen.c) ---------------------------------------------- */

/* The state of one segment's code generation, passed to every emitter. */
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

/* Fail with the command buffer's last error, naming the lop being emitted. */
static inline npu_status emit_fail(struct emitter *e, npu_status st)
{
	return npu_error_set(e->err, st, "codegen: %s: %s",
			     e->lop ? e->lop->name : "segment",
			     npu_cmdbuf_last_error(e->cb));
}

/* Run an npu_cmdbuf_*() call; on failure return emit_fail() from the caller. */
#define EMIT(e, call) do {				\
	npu_status _st = (call);			\
	if (_st != NPU_OK)				\
		return emit_fail((e), _st);		\
} while (0)

/* Device VA of offset 'off' in the activation arena. */
static inline uint64_t arena(const struct emitter *e, uint64_t off)
{
	return e->t->arena_va + off;
}

/* Copy a constant block from the blob into SRAM at 'sram' (after a SYNC). */
npu_status emit_consts(struct emitter *e, size_t blob_off, size_t size,
		       uint32_t sram);
npu_status emit_consts_codec(struct emitter *e, size_t blob_off, size_t stream,
			     size_t size, uint32_t sram);
/* Build the slice's constant block: weights, bias, mult[] + shift[], LUT. */
int put_slice_consts(struct blob *b, struct slice *s, const int8_t *weight,
		     uint64_t wpo, const struct npu_lop_quant *q);

/* An op's tile loop: 'count' tiles and the four steps run_tiles() interleaves. */
struct tile_ops {
	size_t count;
	npu_status (*consts)(struct emitter *e, void *ctx, size_t tile, bool *changed);
	npu_status (*load)(struct emitter *e, void *ctx, size_t tile, int buf);
	npu_status (*compute)(struct emitter *e, void *ctx, size_t tile, int buf);
	npu_status (*store)(struct emitter *e, void *ctx, size_t tile, int buf,
			    uint8_t flags);
};

/* The double-buffered tile loop shared by every op. */
npu_status run_tiles(struct emitter *e, const struct tile_ops *ops, void *ctx);

/* ---- ISA 1.6 sparse weights and the weight codec (codegen_sparse.c) ----- */

/* Marks the slices of conv / matmul lop l whose weights go 2:4 sparse / through the codec. */
void sparse_slices(const struct emitter *e, const struct npu_lop *l, struct slice *sl,
		   size_t n);
/* put_slice_consts()'s weights of a sparse slice, packed. */
int sparse_put_weights(struct blob *b, struct slice *s, const int8_t *weight, uint64_t wpo,
		       size_t *off);
/* The slice's block [start, b->size) as a codec stream when that saves enough. */
int wcodec_block(struct blob *b, struct slice *s, size_t start);
/* NPU_CONV_SPARSE(2, 4) for a sparse slice's CONV2D, else 0. */
uint32_t sparse_flags(const struct slice *sl);

/* emit_consts() of a slice's block, through the codec when it was compressed. */
npu_status emit_slice_consts(struct emitter *e, const struct npu_lop *l, struct slice *sl,
			     uint32_t sram);
/* Tallies a sparse slice's CONV2D / MATMUL (before its mode is set) on lop l (--explain). */
void sparse_note_conv(struct emitter *e, const struct npu_lop *l, const struct slice *sl,
		      const struct npu_insn_conv2d *cv);
void sparse_note_matmul(struct emitter *e, const struct npu_lop *l, const struct slice *sl,
			const struct npu_insn_matmul *mm);

/* ---- CONV2D, POOL, ConvTranspose phases, pixel-major MATMULs (codegen_conv.c) */

/* A conv / pool lop's tile loop: its plan, slices and tile grid. */
struct conv_tiles {
	const struct npu_lop *l;
	const struct npu_act *in, *out;
	struct tiling p;
	struct slice *slices;
	size_t num_slices, cur_slice;
	uint32_t row_tiles;	/* per image */
	bool pool;
};

/* The input rows a tile reads and the padding rows it adds above and below. */
struct window {
	uint32_t ih0, in_h, pad_top, pad_bottom;
};

/* Tile index -> (slice, image, first output row). Slices outermost. */
void conv_tile(const struct conv_tiles *c, size_t tile, size_t *slice,
	       uint32_t *img, uint32_t *r0, uint32_t *r1);
/* The input window of output rows [r0, r1). */
void conv_window(const struct conv_tiles *c, uint32_t r0, uint32_t r1,
		 struct window *w);
/* Kernel taps per axis the device runs with zero insertion (npu_hw.h). */
uint64_t conv_taps(uint32_t k, uint32_t dil, uint32_t ins);
/* Taps a conv lop's CONV2D runs per output pixel (zero insertion skips some). */
uint64_t lop_taps(const struct npu_lop *l);
/* The MACs a whole conv lop executes, as the device counts them. */
uint64_t conv_lop_macs(const struct npu_segment_program *prog, const struct npu_lop *l);
/* Emit a CONV or POOL lop under plan p (phases and pixel-major MATMULs too). */
npu_status gen_conv_or_pool(struct emitter *e, const struct npu_lop *l,
			    const struct tiling *p);
/* The pixel-major MATMULs of 'rows' input rows at SRAM 'input' (fusion too). */
npu_status pmm_emit(struct emitter *e, const struct npu_lop *l, const struct pmm *m,
		    uint32_t consts, uint32_t input, uint32_t output, uint32_t rows,
		    uint8_t flags);
/* The constants of pmm_consts_layout() into the blob at *off. */
npu_status pmm_blob(struct emitter *e, const struct npu_lop *l, const struct pmm *m,
		    size_t *off);

/* ---- RESIZE, MATMUL, ELTWISE / LUT, REDUCE, COPY (codegen_ops.c) -------- */

/* Emit one lop of that kind under plan p. */
npu_status gen_resize(struct emitter *e, const struct npu_lop *l, const struct tiling *p);
npu_status gen_matmul(struct emitter *e, const struct npu_lop *l, const struct tiling *p);
npu_status gen_matmul_act(struct emitter *e, const struct npu_lop *l, const struct tiling *p);
npu_status gen_flat(struct emitter *e, const struct npu_lop *l, const struct tiling *p);
npu_status gen_reduce(struct emitter *e, const struct npu_lop *l, const struct tiling *p);
npu_status gen_copy(struct emitter *e, const struct npu_lop *l, const struct tiling *p);

/* ---- Cost model (codegen_cost.c) ---------------------------------------- */

/* The DMA and compute engines' clocks and the last SYNC point. */
struct cost_engines {
	uint64_t dma, cmp, floor;
};

/* One instruction of 'cycles' on the DMA or compute engine, SYNC or not. */
static inline void cost_insn(struct cost_engines *t, bool dma, bool sync, uint64_t cycles)
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

/* Cycles of a DMA of 'rows' rows of 'row_bytes'. */
static inline uint64_t cost_dma(uint64_t rows, uint64_t row_bytes)
{
	return NPU_CYCLES_DMA_SETUP +
	       rows * ((row_bytes + NPU_DMA_BYTES_PER_CYCLE - 1) / NPU_DMA_BYTES_PER_CYCLE);
}

/* a / b, rounded up. */
static inline uint64_t div_up64(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* When both engines are done. */
static inline uint64_t cost_end(const struct cost_engines *t)
{
	return t->dma > t->cmp ? t->dma : t->cmp;
}

/* Predicted cycles of lop l under plan p. */
uint64_t tiling_cost(const struct npu_segment_program *prog,
		     const struct npu_lop *l, const struct tiling *p);
/* Predicted cycles of lop l as the pixel-major MATMULs of m. */
uint64_t pmm_cost(const struct npu_segment_program *prog, const struct npu_lop *l,
		  const struct pmm *m);
/* Set p->rows to the tile height the cost model predicts fastest. */
void tile_search(const struct npu_segment_program *prog,
		 const struct npu_lop *l, struct tiling *p);

/* ---- Cross-layer fusion (codegen_fusion.c) ------------------------------ */

/* Whether two acts share bytes of the arena. */
static inline bool overlap(const struct npu_act *a, const struct npu_act *b)
{
	return a->offset < b->offset + npu_act_bytes(b) && b->offset < a->offset + npu_act_bytes(a);
}

/* Whether act a is read by a lop other than lop 'self'. */
bool read_elsewhere(const struct npu_segment_program *prog, uint32_t a, size_t self);
/* Which lops run fused: fuse[i] for each lop i (the codes: codegen_fusion.c). */
void choose_fusion(const struct npu_segment_program *prog, uint32_t sram,
		   uint8_t *fuse);
/* Emit the fused chain of n convs from lop i. */
npu_status gen_fused(struct emitter *e, size_t i, uint32_t n, uint32_t sram);
/* Its predicted cycles (0: it does not plan). */
uint64_t fused_chain_cycles(const struct npu_segment_program *prog, size_t i, uint32_t n,
			    uint32_t sram);

/* ---- Concat and RESIZE -> ELTWISE groups (codegen_fusion_groups.c) ------ */

/* The lops of the group at lop i (0: none plans there). */
uint32_t concat_group_lops(const struct npu_segment_program *prog, size_t i, uint32_t sram);
uint32_t resize_elt_lops(const struct npu_segment_program *prog, size_t i, uint32_t sram);
/* Emit the group at lop i; *m: its lops. */
npu_status gen_concat(struct emitter *e, size_t i, uint32_t sram, size_t *m);
npu_status gen_resize_elt(struct emitter *e, size_t i, uint32_t sram, size_t *m);
/* Its predicted cycles (0: it does not plan). */
uint64_t concat_group_cycles(const struct npu_segment_program *prog, size_t i, uint32_t sram);
uint64_t resize_elt_cycles(const struct npu_segment_program *prog, size_t i, uint32_t sram);

/* ---- Constants prefetched across ops (codegen_prefetch.c) --------------- */

/* Move each op's leading constant loads ahead of the op before, where they fit. */
npu_status prefetch_consts(struct emitter *e, const size_t *starts,
			   const size_t *first_lop, size_t nops);

#endif /* NPU_COMPILER_CODEGEN_INTERNAL_H */
