/* SPDX-License-Identifier: MIT */
/*
 * passes.h - the compiler's graph passes (internal), one file each.
 *
 * Every pass has the npu_pass signature (graph/npu_ir.h) and runs through
 * npu_graph_run_passes(), which re-sorts and re-checks the graph after
 * each one. Passes only rewrite what they can prove equivalent; anything
 * else is left for the CPU. Constant folding and shape-only subgraph
 * elimination are npu_graph_infer(graph, fold = true).
 */
#ifndef NPU_COMPILER_PASSES_H
#define NPU_COMPILER_PASSES_H

#include "compiler/quant.h"
#include "cpu/cpu_options.h"
#include "graph/npu_ir.h"

/* Remove nodes none of whose outputs reach a graph output. */
npu_status npu_pass_dead_nodes(struct npu_graph *g, void *arg,
			       struct npu_error *err);

/* Conv (constant W, B) -> BatchNormalization (constant) becomes one Conv. */
npu_status npu_pass_fold_batchnorm(struct npu_graph *g, void *arg,
				   struct npu_error *err);

/*
 * Conv (constant W, B) -> Mul / Add by a constant that is a scalar or one
 * value per output channel ([C,1,1], [1,C,1,1]) becomes one Conv.
 */
npu_status npu_pass_fold_channel_affine(struct npu_graph *g, void *arg,
					struct npu_error *err);

/*
 * Fuse Relu / Clip (constant bounds) / LeakyRelu / HardSigmoid / HardSwish /
 * Sigmoid / Tanh into the Conv, Gemm, MatMul or Add that alone feeds it.
 * The producer gets the attributes
 *   npu_activation       (string: the activation's op type)
 *   npu_activation_alpha, npu_activation_beta (floats, as the activation's)
 *   npu_activation_min, npu_activation_max    (floats, Clip / Relu bounds)
 *   npu_pre_activation   (string: name the producer's output had, so that
 *                         calibration statistics of it can still be found)
 * and writes the activation's output. The CPU kernels apply it in their
 * epilogue; the NPU lowering turns it into a clamp or a LUT.
 */
npu_status npu_pass_fuse_activation(struct npu_graph *g, void *arg,
				    struct npu_error *err);

/*
 * CPU fusion (graphs that run on the CPU): x * Clip(x + 3, 0, 6) / 6
 * becomes HardSwish; a Conv followed by a residual Add, an activation and
 * scalar Mul / Div / Add becomes one FusedConv (domain ai.npu.cpu) whose
 * kernel does them in its output epilogue. See pass_cpu_fuse.c.
 */
npu_status npu_pass_cpu_fuse(struct npu_graph *g, void *arg,
			     struct npu_error *err);

/*
 * CPU layout (graphs that run on the CPU): runs of convolutions and the
 * elementwise, pooling, nearest-upsampling and concatenating ops between
 * them keep their activations blocked (NCHW16c), with reorders only at the
 * edges. See pass_cpu_nchwc.c. arg: const struct npu_cpu_options * (its
 * nchwc and winograd choices), NULL for the defaults.
 */
npu_status npu_pass_cpu_nchwc(struct npu_graph *g, void *arg,
			      struct npu_error *err);

/*
 * The passes a graph planned for the CPU device runs: dead nodes,
 * BatchNormalization and per-channel affine folding into Conv, CPU
 * fusion, the blocked layout. o->no_fuse (option fuse=0) skips them all;
 * o NULL: the defaults.
 */
npu_status npu_cpu_passes(struct npu_graph *g, const struct npu_cpu_options *o,
			  struct npu_error *err);

/* x / c -> x * (1/c), x - c -> x + (-c) for constant c (NPU path only). */
npu_status npu_pass_arith_canon(struct npu_graph *g, void *arg,
				struct npu_error *err);

/*
 * ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div over the last axis
 * (and a constant per-element Mul, Add after it) becomes one
 * LayerNormalization (opset 17 node), which the NPU runs as LAYERNORM.
 */
npu_status npu_pass_fuse_layernorm(struct npu_graph *g, void *arg,
				   struct npu_error *err);

/*
 * Add(y, Mul(y, s)) with s broadcast into y (a squeeze-excitation gate)
 * becomes Mul(y, Add(s, 1)): one full-size ELTWISE less (NPU path only).
 */
npu_status npu_pass_fold_self_gate(struct npu_graph *g, void *arg,
				   struct npu_error *err);

/* Transpose -> Transpose whose permutations compose to identity: removed. */
npu_status npu_pass_cancel_transposes(struct npu_graph *g, void *arg,
				      struct npu_error *err);

/*
 * Quantization parameters fixed by the model (QDQ format) instead of by
 * calibration, by value name.
 */
struct npu_qdq_table {
	struct npu_qdq_entry {
		char *value;
		struct npu_qparams q;
	} *entries;
	size_t count, cap;
};

void npu_qdq_table_free(struct npu_qdq_table *t);
const struct npu_qparams *npu_qdq_lookup(const struct npu_qdq_table *t,
					 const char *value);

/*
 * QDQ recognition for pre-quantized models: an activation passing through
 * QuantizeLinear -> DequantizeLinear with constant per-tensor scale and
 * zero point records those parameters for the DequantizeLinear output
 * (arg: struct npu_qdq_table *) and the pair is removed, so the NPU uses
 * the model's own quantization. Weight DequantizeLinear of constants is
 * folded by constant folding.
 */
npu_status npu_pass_qdq(struct npu_graph *g, void *arg, struct npu_error *err);

/* ---- Editing helpers shared by the passes ---- */

/* Number of node inputs (plus graph outputs) that read 'v'. */
size_t npu_value_use_count(const struct npu_graph *g, const struct npu_value *v);
/* The single node reading 'v' (NULL if none, several, or a graph output). */
struct npu_node *npu_value_single_user(const struct npu_graph *g,
				       const struct npu_value *v);
/* A new constant value holding 'tensor' (ownership moves to the graph). */
struct npu_value *npu_graph_add_constant(struct npu_graph *g, const char *hint,
					 struct npu_tensor *tensor,
					 struct npu_error *err);
npu_status npu_node_set_attr_float(struct npu_node *n, const char *name,
				   float value);
npu_status npu_node_set_attr_string(struct npu_node *n, const char *name,
				    const char *value);
npu_status npu_node_set_attr_floats(struct npu_node *n, const char *name,
				     const float *v, size_t count);
npu_status npu_node_set_attr_int(struct npu_node *n, const char *name,
				 int64_t value);
/* Make n an op_type node of 'domain' at 'opset' (its inputs and attributes stay). */
npu_status npu_node_set_op(struct npu_node *n, const char *domain, const char *op_type,
			   int opset);
npu_status npu_node_set_attr_ints(struct npu_node *n, const char *name,
				  const int64_t *v, size_t count);
/* A float constant input's data, or NULL if it is absent / not constant. */
const float *npu_const_floats(const struct npu_value *v, int64_t *count);

#endif /* NPU_COMPILER_PASSES_H */
