/* SPDX-License-Identifier: MIT */
/*
 * npu_custom_op.h - custom ops: an application's own ONNX op, with its
 * shape inference and a C kernel, registered on an engine.
 *
 *	static npu_status clip_compute(void *user, void *state,
 *				       struct npu_kernel_context *ctx)
 *	{
 *		struct npu_host_tensor x;
 *		float *y;
 *
 *		npu_kernel_input(ctx, 0, &x);
 *		npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, (void **)&y);
 *		...
 *	}
 *
 *	struct npu_custom_op op;
 *
 *	npu_custom_op_init(&op);
 *	op.domain = "com.example";
 *	op.op_type = "ScaledClip";
 *	op.since_version = 1;
 *	op.min_inputs = op.max_inputs = 1;
 *	op.min_outputs = op.max_outputs = 1;
 *	op.infer = clip_infer;
 *	op.compute = clip_compute;
 *	npu_engine_register_custom_op(engine, &op);   before loading models
 *
 * The reference is ONNX Runtime's OrtCustomOp (KernelContext, KernelInfo,
 * InferOutputShape). A custom op is the engine's: models that engine loads
 * (ONNX files and .npub files compiled from them) see it, other engines do
 * not; a node of a domain nobody registered fails the load. It always
 * runs on the CPU, between NPU segments: the NPU compiler
 * never claims it (its placement reason is "custom op"), no graph pass
 * rewrites it and nothing folds it at load.
 *
 * Threads: sessions on several threads run the same model at once, so
 * compute() may be called concurrently for one node: it must only read the
 * state that create() made. infer() and create() run while a model loads
 * or a plan is made, on the calling thread.
 */
#ifndef NPU_CUSTOM_OP_H
#define NPU_CUSTOM_OP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in npu_custom_op_init() */

#include "npu/npu_status.h"
#include "npu/npu_model.h"	/* engine, npu_data_type, npu_host_tensor, npu_tensor_info */

#ifdef __cplusplus
extern "C" {
#endif

/* A node's attributes (valid during the callback that was given it). */
struct npu_op_attrs;
/* What infer() reads and writes (valid during the call). */
struct npu_infer_context;
/* What compute() reads and writes (valid during the call). */
struct npu_kernel_context;

struct npu_custom_op {
	size_t struct_size;	/* sizeof(struct npu_custom_op) */
	/*
	 * The op's domain: the application's own. "", "ai.onnx*",
	 * "ai.npu*" (the library's) and "com.microsoft*" are refused.
	 */
	const char *domain;
	const char *op_type;
	/*
	 * The op's first version (>= 1): a model importing the domain at
	 * opset N runs the registration with the highest since_version <= N.
	 */
	int since_version;
	/*
	 * How many inputs and outputs a node may have, omitted optional ones
	 * included: min_* >= 0 (outputs >= 1); max_* >= min_*, or -1 for no
	 * bound (variadic).
	 */
	int min_inputs, max_inputs;
	int min_outputs, max_outputs;
	/*
	 * Optional: output types and shapes from the inputs' and the
	 * attributes, called when a plan is made (and at load when the model
	 * leaves output types to inference: input dims -1 where not known
	 * yet, rank -1 when the rank is not known either), and before every
	 * compute() on the actual shapes. An output's dims may be -1 where
	 * they depend on the data. Without it, the outputs' types and shapes
	 * are known only once compute() allocated them. Return NPU_OK, or an
	 * error with npu_infer_set_error(): the plan fails with it.
	 */
	npu_status (*infer)(void *user, struct npu_infer_context *ctx);
	/*
	 * Optional: per-node state, made once per plan from the attributes
	 * (*state is passed to compute() and destroy()). An error fails the
	 * plan (the first run of those shapes), naming the node, with the
	 * message of the library call that failed in it, if any.
	 */
	npu_status (*create)(void *user, const struct npu_op_attrs *attrs, void **state);
	void (*destroy)(void *user, void *state);
	/*
	 * Required: run the op. Read inputs with npu_kernel_input(), allocate
	 * every output that the node has with npu_kernel_output() (its dtype
	 * and rank as infer() said, its dims as the data needs) and fill it.
	 * Return NPU_OK, or an error with npu_kernel_set_error(): the run
	 * fails with that message and the node's name; the session stays
	 * usable.
	 */
	npu_status (*compute)(void *user, void *state, struct npu_kernel_context *ctx);
	void *user;	/* passed to every callback */
};

NPU_API void npu_custom_op_init_sized(struct npu_custom_op *op, size_t struct_size);
#define npu_custom_op_init(op) npu_custom_op_init_sized((op), sizeof(*(op)))

/*
 * Register 'op' for the models 'engine' loads from now on (a model whose
 * load failed for want of it must be loaded again). The strings are
 * copied; 'user' is kept as
 * given and must outlive the engine. NPU_ERR_INVALID_ARG for a missing
 * callback, name or a reserved domain, or bad counts; NPU_ERR_BUSY if the
 * engine has (domain, op_type, since_version) already.
 */
NPU_API npu_status npu_engine_register_custom_op(struct npu_engine *engine,
						 const struct npu_custom_op *op);

/*
 * A custom-op library: a shared object that registers its ops on an
 * engine it is given, as ONNX Runtime's RegisterCustomOps does. It
 * exports NPU_CUSTOM_OPS_ENTRY; npu-serve loads the libraries a model's
 * config lists in model_operations { op_library_filename } (each once per
 * server) and calls it with the server's engine before the model loads.
 * Return NPU_OK, or the first npu_engine_register_custom_op() error.
 */
#define NPU_CUSTOM_OPS_ENTRY "npu_custom_ops_register"
typedef npu_status (*npu_custom_ops_register_fn)(struct npu_engine *engine);

/* ---- Attributes (infer, create and compute) ---------------------------- */

/*
 * The node's attribute 'name': NPU_ERR_NOT_FOUND when it has none,
 * NPU_ERR_INVALID_ARG when it has another type (npu_last_error() names
 * the node and the attribute). Pointers live as long as the attrs.
 */
NPU_API npu_status npu_op_attr_int(const struct npu_op_attrs *attrs, const char *name,
				   int64_t *value);
NPU_API npu_status npu_op_attr_float(const struct npu_op_attrs *attrs, const char *name,
				     float *value);
NPU_API npu_status npu_op_attr_string(const struct npu_op_attrs *attrs, const char *name,
				      const char **value);
NPU_API npu_status npu_op_attr_ints(const struct npu_op_attrs *attrs, const char *name,
				    const int64_t **values, size_t *count);
NPU_API npu_status npu_op_attr_floats(const struct npu_op_attrs *attrs, const char *name,
				      const float **values, size_t *count);
/* The node's name (for messages). */
NPU_API const char *npu_op_attrs_node(const struct npu_op_attrs *attrs);

/* ---- Shape inference ---------------------------------------------------- */

NPU_API size_t npu_infer_num_inputs(const struct npu_infer_context *ctx);
NPU_API size_t npu_infer_num_outputs(const struct npu_infer_context *ctx);
/*
 * Input i's name, dtype, rank (-1: unknown) and dims (-1: unknown).
 * NPU_ERR_NOT_FOUND for an omitted optional input.
 */
NPU_API npu_status npu_infer_input(const struct npu_infer_context *ctx, size_t index,
				   struct npu_tensor_info *info);
/* Output i's dtype, rank (0..NPU_MODEL_MAX_RANK) and dims (-1: data-dependent). */
NPU_API npu_status npu_infer_set_output(struct npu_infer_context *ctx, size_t index,
					enum npu_data_type dtype, int rank,
					const int64_t *dims);
NPU_API const struct npu_op_attrs *npu_infer_attrs(const struct npu_infer_context *ctx);
/* The message an infer() that returns an error fails the load with. */
NPU_API void npu_infer_set_error(struct npu_infer_context *ctx, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/* ---- Kernel ------------------------------------------------------------ */

NPU_API size_t npu_kernel_num_inputs(const struct npu_kernel_context *ctx);
NPU_API size_t npu_kernel_num_outputs(const struct npu_kernel_context *ctx);
/*
 * Input i as a host tensor (name, dtype, rank, dims, data, nbytes); its
 * data is read-only. NPU_ERR_NOT_FOUND for an omitted optional input.
 */
NPU_API npu_status npu_kernel_input(const struct npu_kernel_context *ctx, size_t index,
				    struct npu_host_tensor *tensor);
/*
 * Allocate output i with this dtype and these dims, once per run; *data
 * (may be NULL) gets its zeroed memory. The dtype and rank must be what
 * infer() said for these inputs, and every dim it gave (not -1) must
 * match. NPU_ERR_NOT_FOUND for an output the node omits.
 */
NPU_API npu_status npu_kernel_output(struct npu_kernel_context *ctx, size_t index,
				     enum npu_data_type dtype, int rank, const int64_t *dims,
				     void **data);
NPU_API const struct npu_op_attrs *npu_kernel_attrs(const struct npu_kernel_context *ctx);
/* The message a compute() that returns an error fails the run with. */
NPU_API void npu_kernel_set_error(struct npu_kernel_context *ctx, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

#ifdef __cplusplus
}
#endif

#endif /* NPU_CUSTOM_OP_H */
