/* SPDX-License-Identifier: MIT */
/*
 * codegen.h - NPU code generation for one segment (internal).
 *
 * A segment is a list of lowered ops ("lops") over int8 NHWC activations
 * that live in one device arena. Code generation tiles every op to the
 * on-chip SRAM, lays out its constants (weights, bias, requantization,
 * LUTs) in a read-only constant blob, and emits one command stream through
 * the npu_cmdbuf builder:
 *
 *   - weights / bias / quant of an op stay resident in SRAM while it runs;
 *     a conv or matmul whose constants do not fit is split into output
 *     channel chunks, loaded one chunk at a time;
 *   - activations stream through two input and two output SRAM buffers:
 *     while the compute engine works on tile i, the DMA engine writes tile
 *     i-1 back and fetches tile i+1 (double buffering). Each compute
 *     instruction carries NPU_INSN_SYNC, which is exactly the dependency
 *     the buffers need, so the device's hazard checker never fires.
 *
 * The tiling decision depends only on shapes and the SRAM size, so
 * npu_lop_fits() lets the partitioner ask up front whether an op can run.
 */
#ifndef NPU_COMPILER_CODEGEN_H
#define NPU_COMPILER_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/npu_error.h"
#include "compiler/quant.h"
#include "npu_hw.h"

struct npu_cmdbuf;

/* An int8 NHWC tensor at 'offset' in the segment's activation arena. */
struct npu_act {
	uint32_t n, h, w, c;
	uint64_t offset;
	struct npu_qparams q;
	const char *name;	/* the graph value it holds (NULL: unknown) */
	/* A rank-4 value stored row-major (npu_value.rows_layout), for the
	 * quantization report's fp32 comparison (not in .npub). */
	bool rows_layout;
	/* The range keeps only where the LUT reading it is not flat: values
	 * beyond it give that LUT's output all the same (quant report). */
	bool flat_clamped;
	/* int16 elements (the 16x8 mode, NPU_INSN_I16): 2 bytes each, q
	 * symmetric (zero point 0). Lops over it run with NPU_INSN_I16. */
	bool i16;
	/*
	 * k_h != 0: a segment input stored as im2col for a first-layer conv
	 * (NPU_LAYOUT_IM2COL): [n][h][w][k_h][k_w][c / (k_h k_w)], pixel
	 * (y, x) holding the window at (y * stride_h - pad_top, x *
	 * stride_w - pad_left) of the value, zero point where it falls
	 * outside. The host gathers it while quantizing the input, so a conv
	 * over few channels runs as a 1x1 conv whose K fills the MAC rows.
	 */
	struct {
		uint8_t k_h, k_w, stride_h, stride_w, pad_top, pad_left;
	} im2col;
	/* Produced and read only inside its segment, so its bytes need not
	 * reach DRAM (cross-layer fusion). Not in .npub: derived on load. */
	bool internal;
};

/* Bytes of an act (elements times 1 or 2); npu_act_elems() its elements. */
uint64_t npu_act_bytes(const struct npu_act *a);

static inline uint64_t npu_act_elems(const struct npu_act *a)
{
	return (uint64_t)a->n * a->h * a->w * a->c;
}

/* Bytes per element of an act. */
static inline uint32_t npu_act_es(const struct npu_act *a)
{
	return a->i16 ? 2u : 1u;
}

enum npu_lop_kind {
	NPU_LOP_CONV,
	NPU_LOP_MATMUL,		/* in [n*h*w][c] x weight [out.c][c] */
	NPU_LOP_POOL,
	NPU_LOP_ELTWISE,
	NPU_LOP_LUT,
	NPU_LOP_RESIZE,		/* NHWC in -> NHWC out, same quantization */
	/*
	 * A strided 2-D block of 'in' into a block of 'out' (Concat, Split,
	 * Slice as addressing): rows x row_bytes, DMA alone when both share
	 * their quantization, else through SRAM with a requantizing LUT.
	 * Several COPY lops may write disjoint parts of one 'out'.
	 */
	NPU_LOP_COPY,
	/*
	 * A row op of the vector engine (ISA 1.3) over the innermost axis,
	 * rows of in.c elements: SOFTMAX (consts: the 256 uint32 exp
	 * table), LAYERNORM (consts: int32 mult[c] then bias[c]) or REDUCE
	 * (no consts; one output byte per row, 'out' dense).
	 */
	NPU_LOP_ROWS,
};

/* Per-output-channel requantization and bias, host arrays of out.c. */
struct npu_lop_quant {
	const int32_t *bias;	/* NULL: no bias */
	/* An int16 lop (acts i16): its bias as the int64 NPU_INSN_I16 wants
	 * (bias stays NULL), and its LUT as 513 int16 knots (lut NULL). */
	const int64_t *bias64;
	const int16_t *lut16;
	const int32_t *mult;
	const uint8_t *shift;
	int8_t act_min, act_max;	/* fused Relu / Clip */
	const int8_t *lut;	/* 256 entries: fused activation, or NULL */
	int16_t pre_act_zp;	/* with a LUT: zero point of its input */
};

struct npu_lop {
	enum npu_lop_kind kind;
	const char *name;	/* source node, for messages */
	uint32_t in, in2, out;	/* indices into the segment's acts[] */
	union {
		struct {
			const int8_t *weight;	/* [out_c][k_h][k_w][in_c/groups] */
			uint8_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
			uint8_t pad_top, pad_left, pad_bottom, pad_right;
			uint16_t groups;
			struct npu_lop_quant q;
			uint8_t ins_h, ins_w;	/* zero insertion (ConvTranspose) */
			/*
			 * Non-zero: a ConvTranspose with kernel = stride = (phase_h,
			 * phase_w) and no padding, as phase_h 1x1 convolutions (one
			 * per output row phase dy) of in.c -> phase_w * out.c
			 * channels (dx, oc) whose outputs interleave in place:
			 * weight [phase_h][phase_w][out.c][in.c], quantization
			 * arrays of phase_h * phase_w * out.c. With fold_w = F
			 * too, F input pixels are read as one wide pixel of
			 * F * in.c channels and each phase computes (f, dx, oc)
			 * for all F of them (block-diagonal weights): weight
			 * [phase_h][F][phase_w][out.c][F * in.c], quantization
			 * arrays of phase_h * F * phase_w * out.c.
			 */
			uint8_t phase_h, phase_w;
			/*
			 * Non-zero: few input channels, so fold_w pixels of a row
			 * are read as one pixel of fold_w * in.c channels (the same
			 * bytes) and the conv runs as R = fold_w / stride_w column
			 * phases: phase r computes output columns r, r + R, ...
			 * over those wide pixels with its own kernel
			 * (npu_conv_fold_phase()). weight: for r = 0..R-1 in turn,
			 * [out.c][k_h][phase k_w][fold_w * in.c], zero where a
			 * tap falls outside the original kernel. Whole layers only.
			 * (With phase_h: the input fold described above.)
			 */
			uint8_t fold_w;
		} conv;
		struct {
			const int8_t *weight;	/* [out.c][in.c] */
			struct npu_lop_quant q;
			/*
			 * Non-zero: no weight; B is the activation 'in2' and the
			 * lop is 'batch' products of two activations (attention):
			 * in [batch][m][in.c] x in2 [batch][in.c][out.c] (as ONNX
			 * stores B) -> out [batch][m][out.c], requantized per
			 * tensor (q arrays of one). Code generation transposes
			 * each B to the [n][k] that MATMUL reads (a MATMUL with
			 * the identity, or DMA), unless b_nk: in2 is
			 * [batch][out.c][in.c] already (B was a Transpose of it,
			 * which the lop absorbed).
			 */
			uint32_t batch;
			bool b_nk;
		} matmul;
		struct {
			uint8_t mode;		/* NPU_POOL_MAX / NPU_POOL_AVG */
			uint8_t flags;		/* NPU_POOL_COUNT_PAD */
			uint8_t k_h, k_w, stride_h, stride_w;
			uint8_t pad_top, pad_left, pad_bottom, pad_right;
			int8_t act_min, act_max;
		} pool;
		struct {
			uint8_t mode;		/* NPU_ELT_ADD / NPU_ELT_MUL */
			uint8_t bcast;		/* NPU_BCAST_* */
			/* b: 'in2' streamed (NONE), or broadcast: b_const, else 'in2'
			 * (b_count elements, loaded once). */
			const int8_t *b_const;
			uint32_t b_count;	/* elements of a broadcast b */
			int32_t mult_a, mult_b;
			uint8_t shift;
			int16_t zp_b;
			int8_t act_min, act_max;
			const int8_t *lut;	/* fused activation, or NULL */
			int16_t pre_act_zp;	/* with a LUT: zero point of its input */
			const int16_t *lut16;	/* the same for an int16 output */
		} elt;
		struct {
			const int8_t *table;	/* 256 entries */
			const int16_t *table16;	/* int16 acts: 513 knots (table NULL) */
		} lut;
		struct {
			uint8_t mode;		/* NPU_RESIZE_* */
			/* Input coordinate of output o: (o * step + offset) / den. */
			uint32_t step_h, step_w, den_h, den_w;
			int32_t offset_h, offset_w;
		} resize;
		struct {
			uint8_t opcode;		/* NPU_OP_SOFTMAX / _LAYERNORM / _REDUCE */
			uint8_t shift;
			uint8_t mode;		/* REDUCE: NPU_REDUCE_* */
			int32_t mult;		/* SOFTMAX, REDUCE */
			uint32_t eps;		/* LAYERNORM */
			const uint8_t *consts;
			uint32_t consts_size;
		} rows;
		struct {
			uint32_t rows, row_bytes;
			uint64_t src_off, src_stride;	/* bytes within 'in' */
			uint64_t dst_off, dst_stride;	/* bytes within 'out' */
			const int8_t *lut;	/* 256 entries, or NULL: a plain copy */
			/* > 1: the block is copied 'count' times, the offsets
			 * advancing by src_step / dst_step (a transpose). */
			uint32_t count;
			uint64_t src_step, dst_step;
		} copy;
	};
};

/* Whether a lop reads a second activation, 'in2' (memory plan, renumbering). */
static inline bool npu_lop_reads_in2(const struct npu_lop *l)
{
	return (l->kind == NPU_LOP_ELTWISE && !l->elt.b_const) ||
	       (l->kind == NPU_LOP_MATMUL && l->matmul.batch);
}

/* A technique code generation chooses by its cost model, or forced. */
enum npu_codegen_choice {
	NPU_CODEGEN_AUTO = 0,	/* where the cost model says it pays */
	NPU_CODEGEN_OFF,	/* never */
	NPU_CODEGEN_FORCE,	/* wherever it can (tests: halos, many tiles) */
};

/*
 * How a segment's program is built and scheduled. The zero value is the
 * default, every technique on; tests and experiments turn one off to
 * measure or to reach a code path. A compiled model keeps them with each
 * segment (a .npub stores them), so one file generates the same code in
 * every environment.
 */
struct npu_codegen_options {
	bool no_array_modes;		/* every CONV2D / MATMUL in the plain mode (ISA 1.4 code) */
	bool no_out_lut;		/* output LUTs as their own instruction, not fused */
	bool no_tile_search;		/* tile heights as planned, not searched by cost */
	bool no_prefetch;		/* no constant loads moved ahead of the op before */
	bool no_gap_split;		/* GlobalAveragePool not split into row bands */
	bool lut_last_producer_only;	/* a LUT folds only into the lop lowered last */
	enum npu_codegen_choice pixel_mm;	/* pixel-major 1x1 convolutions */
	enum npu_codegen_choice fuse;		/* depth-first conv chains and pairs */
	uint32_t fuse_max_rows;		/* a fused group's tile rows at most; 0: no cap */
	/* ISA 1.6 (codegen_sparse.c): int8 conv weights that are 2:4 sparse
	 * along the input channels as NPU_CONV_SPARSE(2, 4), weight blocks
	 * through the DMA weight codec where it shrinks them; on devices
	 * with NPU_CAP_SPARSE. */
	bool no_sparse;			/* dense weights only */
	bool no_wcodec;			/* constants DMA'd as they are */
};

/*
 * Set options from "key=value[,key=value...]": array_modes, out_lut,
 * tile_search, prefetch, gap_split, sparse, wcodec = 0|1; lut_producer = any|last;
 * pixel_mm, fuse = auto|off|force (1 = auto, 0 = off); fuse_rows = N. Keys not
 * given keep their value. An unknown key or value fails naming it.
 */
npu_status npu_codegen_options_parse(struct npu_codegen_options *o, const char *spec,
				     struct npu_error *err);

struct npu_segment_program {
	struct npu_act *acts;
	size_t num_acts;
	struct npu_lop *lops;
	size_t num_lops;
	struct npu_codegen_options opts;	/* npu_compile_options.codegen */
};

/* What code generation produced and what the cycle model predicts. */
struct npu_codegen_result {
	uint8_t *consts;		/* constant blob, malloc'ed */
	size_t consts_size;
	uint64_t *lop_macs;		/* per lop, malloc'ed */
	/* Per lop (malloc'ed) and in all: bytes its DMA moves to or from
	 * DRAM (device VA), both directions counted. */
	uint64_t *lop_dram_bytes;
	uint64_t dram_bytes;
	/* Per lop (malloc'ed): the cost model's cycles before codegen. */
	uint64_t *lop_pred_cycles;
	/* Pairs of lops run as one tile loop through SRAM (cross-layer
	 * fusion): the pair's cycles and DRAM bytes count on its first lop. */
	uint64_t fused_groups;
	uint8_t *lop_fused;		/* per lop: 1 = inside the previous lop's loop */
	uint64_t macs;			/* MACs the stream will execute */
	uint64_t ideal_mac_cycles;	/* macs / MAC array size */
	uint64_t instructions;
	/*
	 * Per lop (malloc'ed; not in .npub, which keeps what --explain
	 * printed): 2:4 sparse weights (ISA 1.6) ran its convolutions, the
	 * modeled MAC cycles they saved, and the DRAM weight bytes the sparse
	 * form and the weight codec saved.
	 */
	uint8_t *lop_sparse;
	uint64_t *lop_sparse_cycles_saved;
	uint64_t *lop_weight_bytes_saved;
};

struct npu_codegen_target {
	uint32_t sram_size;
	uint32_t caps;		/* the device's NPU_CAP_* (NPU_CAP_SPARSE: ISA 1.6 forms) */
	uint64_t arena_va;	/* device VA of the activation arena */
	uint64_t consts_va;	/* device VA where the constant blob will be */
	/*
	 * Non-zero: per-op profiling. A TIMESTAMP (device clock, which counts
	 * modeled cycles) goes to profile_va before the first op and after
	 * each one: 8 * (num_lops + 1) bytes. Every op already ends with a
	 * synchronizing store, so this costs a few cycles per op.
	 */
	uint64_t profile_va;
};

/* One column phase of a folded conv (npu_lop.conv.fold_w), in wide pixels. */
struct npu_fold_phase {
	int32_t first;		/* first wide pixel read, relative to output m */
	uint32_t k_w, pad_left, pad_right;
	uint32_t in_w;		/* wide pixels the instruction reads */
	uint64_t weight_off;	/* bytes into the lop's weight array */
};

/*
 * Phase r of a conv of in_w -> out_w columns (kernel k_w, stride_w,
 * pad_left, dilation 1) folded by fold_w. False when the fold does not
 * divide the row, the phases, or has no CONV2D form.
 */
bool npu_conv_fold_phase(uint32_t in_w, uint32_t out_w, uint32_t in_c, uint32_t out_c,
			 uint32_t k_h, uint32_t k_w, uint32_t stride_w, uint32_t pad_left,
			 uint32_t fold_w, uint32_t r, struct npu_fold_phase *ph);

/*
 * Modeled cycles per input row of a phase-split ConvTranspose (npu_lop
 * .conv.phase_h) over in_w x in_c pixels to out_c channels with input fold
 * f (1: none), and in *joined whether code generation runs all phase_h row
 * phases as one CONV2D (channels (dy, f, dx, oc), phase_h times fewer
 * instructions, fewer column passes when one phase leaves MAC columns
 * idle) whose store interleaves the dy blocks into their rows with strided
 * DMA. Lowering picks the fold by it; code generation follows *joined.
 */
uint64_t npu_phase_row_cycles(const struct npu_codegen_options *o, uint32_t in_w, uint32_t in_c,
			      uint32_t out_c, uint32_t phase_h, uint32_t phase_w, uint32_t f,
			      bool *joined);

/*
 * Modeled cycles of one CONV2D of 'pixels' output pixels in the MAC array
 * mode code generation picks for it (ISA 1.5; npu_hw.h's cycle model).
 */
/* Convolutions in one fused chain at most (codegen_fusion.c, choose_fusion()). */
#define NPU_FUSE_MAX 6

uint64_t npu_conv_insn_cycles(const struct npu_codegen_options *o, uint64_t pixels,
			      uint64_t taps, uint32_t groups, uint32_t in_c, uint32_t out_c,
			      bool i16);

/*
 * Whether 'lop' can be tiled into 'sram_size' bytes. On false, 'why' gets
 * a short reason ("one output row needs 3.1 MiB of SRAM").
 */
bool npu_lop_fits(const struct npu_segment_program *prog,
		  const struct npu_lop *lop, uint32_t sram_size, char *why,
		  size_t why_size);

/*
 * Emit the whole segment into 'cb' (which must be empty) and build the
 * constant blob. The constant blob's content does not depend on consts_va,
 * so a caller may generate once to learn its size, then place it.
 */
npu_status npu_codegen_segment(const struct npu_segment_program *prog,
			       const struct npu_codegen_target *target,
			       struct npu_cmdbuf *cb,
			       struct npu_codegen_result *result,
			       struct npu_error *err);

void npu_codegen_result_free(struct npu_codegen_result *result);

#endif /* NPU_COMPILER_CODEGEN_H */
