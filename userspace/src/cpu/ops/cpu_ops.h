/* SPDX-License-Identifier: MIT */
/*
 * cpu_ops.h - the CPU backend's kernels for ONNX operators (internal).
 *
 * One file per op family (cpu/ops/op_<family>.c), each registering its
 * kernels in the table generated from cpu/ops/op_list.h. A kernel runs the
 * op a schema (graph/npu_op_schema.h) describes, found by (domain,
 * op_type); a kernel without a schema is an error at the table's first use.
 * A kernel has:
 *   prepare() - optional: once per planned graph (pack weights,
 *               precompute) with the model's CPU options, result in
 *               node->op_state, freed by release();
 *               compute() only reads it, as sessions on several threads
 *               run the same prepared graph at once;
 *   compute() - runs the op on concrete tensors; outputs are allocated by
 *               the caller from the shapes the schema's infer() gave for
 *               these inputs (except ops with dynamic_outputs).
 */
#ifndef NPU_CPU_OPS_H
#define NPU_CPU_OPS_H

#include "cpu/cpu_options.h"
#include "graph/npu_op_schema.h"

struct npu_threadpool;
struct npu_op_ctx;

/*
 * What the runtime lends an op that runs subgraphs (If, Loop, Scan): the
 * op cannot know its output shapes before it runs, so it gives each output
 * its dtype and shape itself; and it runs a subgraph attribute of its node.
 */
struct npu_op_runtime {
	/* Give output 'index' this dtype and shape; its data is then writable. */
	npu_status (*alloc_output)(struct npu_op_ctx *ctx, size_t index,
				   enum npu_dtype dtype, const struct npu_shape *shape);
	/*
	 * Give output 'index' this dtype and shape and 'nbytes' bytes of
	 * data: for values whose size is not numel * element size (string
	 * tensors, graph/npu_str.h). Any op with a string output uses it.
	 */
	npu_status (*alloc_bytes)(struct npu_op_ctx *ctx, size_t index,
				  enum npu_dtype dtype, const struct npu_shape *shape,
				  size_t nbytes);
	/*
	 * Run 'body' (a graph attribute of ctx->node) on its formal inputs;
	 * its captures are fed from the node's implicit inputs. outputs[i]
	 * stays valid until the next run of the same body.
	 */
	npu_status (*run)(struct npu_op_ctx *ctx, const struct npu_graph *body,
			  const struct npu_tensor *const *inputs,
			  const struct npu_tensor **outputs);
	void *arg;
};

struct npu_op_ctx {
	struct npu_node *node;
	const struct npu_tensor *const *inputs;	/* NULL: omitted optional */
	size_t num_inputs;
	struct npu_tensor *const *outputs;	/* NULL: omitted optional */
	size_t num_outputs;
	struct npu_threadpool *pool;
	void *state;	/* per-session run state of this node (NPU segments) */
	const struct npu_op_runtime *rt;	/* ops whose schema has dynamic_outputs */
	/* The model's CPU options, as prepare() had them; NULL: the defaults. */
	const struct npu_cpu_options *cpu;
	struct npu_error *err;
};

/*
 * A kernel: it runs the op its schema describes (found by domain and
 * op_type), at every opset the schema covers. What the op is (versions,
 * inference, outputs sized at run time, strings) is the schema's.
 */
struct npu_op_def {
	const char *op_type;	/* "Conv" */
	const char *domain;	/* "" (ai.onnx), NPU_CPU_FUSED_DOMAIN... */
	npu_status (*prepare)(const struct npu_op_def *def, struct npu_node *node,
			      const struct npu_cpu_options *cpu, struct npu_error *err);
	void (*release)(struct npu_node *node);
	npu_status (*compute)(struct npu_op_ctx *ctx);
	/*
	 * Optional asynchronous form (NPU segments): submit() starts the work
	 * and returns; the outputs hold their values only after wait(), which
	 * the runtime calls before any node reads them and at the end of the
	 * run, with a context whose outputs are the same tensors. The inputs
	 * may be reused as soon as submit() returns. wait() after the op
	 * already completed (the op may complete itself early) returns NPU_OK.
	 */
	npu_status (*submit)(struct npu_op_ctx *ctx);
	npu_status (*wait)(struct npu_op_ctx *ctx);
};

/*
 * Apply an activation the compiler fused into 'n' (npu_activation*
 * attributes, see compiler/passes) to its output in place; no-op without.
 */
npu_status npu_cpu_apply_fused_activation(const struct npu_node *n,
					  struct npu_tensor *t,
					  struct npu_error *err);

/*
 * The domain of the ops only graph passes make for the CPU (FusedConv,
 * opset 1); models do not use it.
 */
#define NPU_CPU_FUSED_DOMAIN NPU_DOMAIN_CPU_INTERNAL

/*
 * Whether the layout pass should run Conv / FusedConv 'conv' (2-D, group 1
 * or depthwise, shapes known) as NchwcConv (op_nchwc.c): not where the NCHW
 * kernel takes Winograd, which does fewer multiplies than the blocked
 * direct kernels.
 */
bool npu_nchwc_conv_preferred(const struct npu_node *conv, const struct npu_cpu_options *cpu);
/*
 * Whether a preferred group-1 'conv' pays for its reorders in and out
 * even with no blocked op around it: the NCHW kernel would take im2col
 * (npu_conv2d_f32_takes_im2col: melspec's 8 x 10 CNN at batch 8, 32 ->
 * 64 3x3, 0.316 ms NCHW, 0.146 ms blocked) and blocking pads neither
 * side's channels by more than half.
 */
bool npu_nchwc_conv_alone_pays(const struct npu_node *conv, const struct npu_cpu_options *cpu);

/* The Conv kernels' Winograd choice (enum npu_conv_winograd) under cpu (NULL: defaults). */
int npu_conv_winograd_of(const struct npu_cpu_options *cpu);

/* NchwcUpsample's largest factor (its output dims stay far from overflow). */
#define NPU_NCHWC_MAX_FACTOR 4096

/*
 * What the blocked-layout ops' schemas (compiler/op_schemas.c) share with
 * their kernels (op_nchwc.c): the blocked shape of an NCHW shape with known
 * channels; NchwcConv's kernel parameters from the node and its input
 * shapes (an error, err set, when they do not fit); NchwcUpsample's factors.
 */
struct npu_conv2d_params;
void npu_nchwc_shape(const struct npu_shape *nchw, struct npu_shape *out);
npu_status npu_nchwc_conv_params(const struct npu_node *node, const struct npu_shape *x,
				 const struct npu_shape *w, struct npu_conv2d_params *p,
				 struct npu_error *err);
npu_status npu_nchwc_upsample_factors(const struct npu_node *node, int64_t *f,
				      struct npu_error *err);

/* The attributes of FusedConv, and of NchwcConv, which takes its inputs. */
#define NPU_FUSED_CONV_ATTRS "auto_pad", "dilations", "group", "kernel_shape", "pads", \
	"strides", "activation", "activation_params", "post_scale", "post_shift"

struct npu_cpu_act_params;
/* A FusedConv node's epilogue (activation, post affine) from its attributes. */
npu_status npu_fused_conv_epilogue(const struct npu_node *node,
				   struct npu_cpu_act_params *act,
				   struct npu_error *err);

/*
 * The kernel a node of g runs with: the one registered in g's kernel
 * registry (graph/npu_op_schema.h: custom ops) with the node's schema, else
 * one another backend registered (npu_kernel_register), else the CPU's.
 * NULL if there is none.
 */
const struct npu_op_def *npu_kernel_find(const struct npu_graph *g, const struct npu_node *node);

/*
 * A backend's kernel for the ops it owns (the NPU's NpuSegment, whose op
 * runs a compiled segment), registered from its constructor at load, so
 * that the runtime finds it like any other kernel rather than by name.
 * At most NPU_KERNELS_MAX; an op registered twice keeps its first kernel.
 */
#define NPU_KERNELS_MAX 8
void npu_kernel_register(const struct npu_op_def *def);

/* The kernel for (domain, op_type) at 'opset', or NULL if there is none. */
const struct npu_op_def *npu_cpu_op_find(const char *domain,
					 const char *op_type, int opset);
/* Iterate all kernels (for `npu ops`, docs and tests). */
const struct npu_op_def *npu_cpu_op_at(size_t index);
/*
 * Whether every kernel has a schema; if not, err names the first that has
 * none and npu_cpu_op_find() finds nothing (checked at its first use).
 */
npu_status npu_cpu_ops_check(struct npu_error *err);

#endif /* NPU_CPU_OPS_H */
