/* SPDX-License-Identifier: MIT */
/*
 * lower.h - from graph nodes to NPU lops over int8 NHWC activations
 * (internal). Shared by placement (which asks whether a node's geometry
 * fits the ISA) and the segment builder (which lowers it).
 */
#ifndef NPU_COMPILER_LOWER_H
#define NPU_COMPILER_LOWER_H

#include "compiler/compiler.h"

/* Conv / pool geometry resolved from attributes and shapes (auto_pad too). */
struct npu_conv_geom {
	uint32_t n, c, h, w;		/* input */
	uint32_t oc, oh, ow;		/* output */
	uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
	uint32_t pad_top, pad_left, pad_bottom, pad_right;
	uint32_t groups;
	bool count_include_pad;		/* AveragePool */
	uint32_t ins_h, ins_w;		/* ConvTranspose: zeros between inputs */
};

/*
 * Resolve and check a Conv / MaxPool / AveragePool / GlobalAveragePool
 * against the ISA's field ranges. On false 'why' names the attribute.
 */
bool npu_conv_geometry(const struct npu_graph *g, const struct npu_node *n,
		       struct npu_conv_geom *geo, char *why, size_t why_size);

/*
 * A ConvTranspose as the CONV2D over its zero-inserted input that computes
 * it (stride s: ins = s - 1, stride 1, pads dil * (k - 1) - pad, the
 * kernel flipped). On false 'why' says what has no NPU form.
 */
bool npu_conv_transpose_geometry(const struct npu_graph *g, const struct npu_node *n,
				 struct npu_conv_geom *geo, char *why, size_t why_size);

/*
 * A Resize on H and W of a rank-4 NCHW tensor as RESIZE's exact rational
 * coordinates (npu_hw.h). 'mode' gets NPU_RESIZE_*.
 */
struct npu_resize_geom {
	uint8_t mode;
	uint32_t step_h, step_w, den_h, den_w;
	int32_t offset_h, offset_w;
};

bool npu_resize_geometry(const struct npu_node *n, struct npu_resize_geom *rg,
			 char *why, size_t why_size);

/*
 * Concat, Split, Transpose and the reshapes (Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity) run as COPY lops: DMA with strides, requantized by
 * a LUT when the two sides' parameters differ. A reshape qualifies when
 * its bytes stay in place (npu_value_layout) or it only adds or drops unit
 * dims; a transpose when, in storage order, it swaps two axis groups
 * ([b][p][q][k] -> [b][q][p][k]). On false 'why' says why not.
 */
bool npu_is_data_movement(const struct npu_node *n);
bool npu_data_movement_geometry(const struct npu_node *n, char *why, size_t why_size);

/*
 * Softmax, LayerNormalization and ReduceMean / ReduceMax / ReduceSum as the
 * vector engine's row ops (SOFTMAX, LAYERNORM, REDUCE, ISA 1.3): over the
 * last axis, which must be the innermost in the NPU's layout (so not rank
 * 4, whose layout is NHWC); LayerNormalization with constant scale / bias,
 * a reduction over that one axis. On false 'why' says why not.
 */
bool npu_rows_op(const struct npu_node *n);
bool npu_rows_op_geometry(const struct npu_node *n, char *why, size_t why_size);

/*
 * A MatMul of two activations (attention) as one MATMUL per batch:
 * operands of one rank >= 2 with equal batch dims, none stored NHWC.
 * 'batch' gets the product of the batch dims.
 */
bool npu_matmul_act_geometry(const struct npu_node *n, uint32_t *batch, char *why,
			     size_t why_size);

/*
 * Store rank-4 values row-major (npu_value->rows_layout) when no node
 * that reads or writes them cares about NHWC: copies, row ops, MatMul of
 * two activations, Add / Mul by a scalar. Before placement.
 */
void npu_mark_rows_layout(struct npu_graph *g);

/* Whether an activation op type has a LUT / clamp form on the NPU. */
bool npu_lut_function_known(const char *op_type);

/*
 * How constant 'b' broadcasts against activation 'a' on the NPU:
 * NPU_BCAST_SCALAR, NPU_BCAST_CHANNEL (per channel of a's layout) or -1.
 */
int npu_bcast_kind(const struct npu_value *a, const struct npu_value *b);

/* The layout a value gets in the arena, and its NHWC view there. */
enum npu_layout npu_value_layout(const struct npu_value *v);
void npu_value_act_dims(const struct npu_value *v, struct npu_act *act);

/* Per-value int8 parameters, indexed by value->index. */
struct npu_qmap {
	struct npu_qparams *q;
	bool *set;
	bool *flat_clamped;	/* range narrowed to its LUT's non-flat part */
	/* The 16x8 mode: i16 marks values whose producer runs int16 (their
	 * acts are int16); q16 the symmetric int16 parameters of every set
	 * value, for the int16 form any value gets before an int16 reader. */
	bool *i16;
	struct npu_qparams *q16;
	size_t count;
};

struct npu_pw_groups;

/*
 * Whether node n runs in the 16x8 mode under 'opts' (named or int16_all,
 * and of a kind that has an int16 form, not part of one of the pointwise
 * groups 'pw', which become int8 LUTs). With 'why', a named node that
 * cannot gets the reason there and false.
 */
bool npu_node_int16(const struct npu_compile_options *opts, const struct npu_pw_groups *pw,
		    const struct npu_node *n, char *why, size_t why_size);

struct npu_pw_group;

/* Whether a pointwise group (one LUT) runs in the 16x8 mode: int16_all,
 * or any of its nodes named. */
bool npu_group_int16(const struct npu_compile_options *opts, const struct npu_pw_group *grp);

/*
 * quantize.c: parameters for every calibrated (or QDQ) float value; the
 * input of each LUT ('pw' groups and single activation nodes) narrowed to
 * where its function is not flat.
 */
npu_status npu_build_qmap(struct npu_graph *g, const struct npu_calib_table *calib,
			  const struct npu_qdq_table *qdq,
			  const struct npu_compile_options *opts,
			  const struct npu_pw_groups *pw,
			  struct npu_qmap *qmap, struct npu_error *err);
void npu_qmap_free(struct npu_qmap *qmap);

struct npu_lower_ctx {
	struct npu_graph *graph;
	const struct npu_qmap *qmap;
	const struct npu_calib_table *calib;
	const struct npu_compile_options *opts;
	struct npu_segment *seg;
	uint32_t *act_of;	/* value index -> act index + 1 (0: none yet) */
	struct npu_compiled *compiled;	/* warnings go here (may be NULL) */
	uint32_t sram_size;	/* the device's; 0: NPU_SRAM_SIZE */
	/* value index -> act + 1 of its other-precision form (an ELTWISE
	 * requantizes to it); may be NULL when nothing is int16. */
	uint32_t *alt_of;
	bool want16;	/* the node being lowered reads and writes int16 */
};

/*
 * Lower one node into seg->prog (appending acts and lops). On failure
 * (e.g. a requantization multiplier out of range) nothing is appended
 * that is used, and 'why' says what.
 */
bool npu_lower_node(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		    size_t why_size);

struct npu_pw_group;

/* One LUT for a whole pointwise group x -> y. */
bool npu_lower_pointwise(struct npu_lower_ctx *lc, const struct npu_pw_group *grp,
			 char *why, size_t why_size);

/* The act index for a value in the current segment (created on demand). */
int npu_lower_act(struct npu_lower_ctx *lc, struct npu_value *v);

/* The pre-activation quantization of a node with a LUT-fused activation. */
bool npu_pre_activation_qparams(const struct npu_lower_ctx *lc,
				const struct npu_node *n, struct npu_qparams *q);

#endif /* NPU_COMPILER_LOWER_H */
