/* SPDX-License-Identifier: MIT */
/*
 * npu_serve_backend.h - the contract between npu-serve and a backend
 * library: steps written in C that are not ONNX models (image decoding,
 * detection post-processing, CTC decoding, audio framing), served as
 * models of the repository and used as steps of ensembles, as Triton's
 * custom backends are.
 *
 * A model whose config.pbtxt says `backend: "NAME"` (any name but
 * "onnxruntime" and "npu") is run by the library libnpu_serve_NAME.so,
 * found in the model's version directory, then in the model's directory,
 * then in the server's --backend-directory. The library exports
 * NPU_SERVE_BACKEND_ENTRY, which lists its steps; the model's parameter
 * "step" picks one by name (optional when the library has only one).
 *
 * Each instance of the model (instance_group count) gets its own state
 * from create(), so execute() is never called on one state from two
 * threads at once. The server calls back through the host table it
 * passes, so a library links nothing of the server.
 */
#ifndef NPU_SERVE_BACKEND_H
#define NPU_SERVE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <npu/npu_tensor.h>	/* enum npu_data_type, NPU_MODEL_MAX_RANK */

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_SERVE_BACKEND_ABI 1
#define NPU_SERVE_BACKEND_ENTRY "npu_serve_backend_steps"

/*
 * A tensor as a step sees it. BYTES tensors (NPU_TYPE_STRING) hold their
 * elements as Triton serializes them: each a 4-byte little-endian length,
 * then that many bytes; nbytes is the total.
 */
struct npu_serve_tensor {
	const char *name;
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	const void *data;
	size_t nbytes;
};

/* An input or output a step declares: rank -1 takes any rank. */
struct npu_serve_io {
	const char *name;
	enum npu_data_type dtype;
	int rank;
};

/* Opaque: one model instance's current call (create or execute). */
struct npu_serve_context;

/* What execute() returns besides 0: whose fault a failure is. */
#define NPU_SERVE_STEP_BAD_INPUT 1	/* the request's (HTTP 400) */
#define NPU_SERVE_STEP_FAILED (-1)	/* the step's or the server's (500) */

struct npu_serve_host {
	uint32_t abi;
	/* The model's parameter 'key' (config.pbtxt parameters), or NULL. */
	const char *(*param)(struct npu_serve_context *ctx, const char *key);
	/*
	 * The file parameter 'key' names, as a path the step can open: a
	 * path relative to the model's directory, or "cache:PATH" in the
	 * model cache (tools/fetch-models: $NPU_CACHE, else
	 * ~/.cache/npu-stack). Absolute paths and ".." are refused. Returns
	 * 0, or -1 with the error set (missing parameter or file).
	 */
	int (*file)(struct npu_serve_context *ctx, const char *key, char *path, size_t size);
	/* During execute(): input 'index' in the step's declared order. */
	const struct npu_serve_tensor *(*input)(struct npu_serve_context *ctx, size_t index);
	/*
	 * During execute(): allocate output 'index' (declared order) with
	 * this shape and nbytes bytes (for BYTES, the serialized size), once
	 * per call. Returns its zeroed memory, or NULL with the error set.
	 */
	void *(*output)(struct npu_serve_context *ctx, size_t index, int rank,
			const int64_t *dims, size_t nbytes);
	/* The message a failing create() or execute() reports. */
	void (*error)(struct npu_serve_context *ctx, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
		__attribute__((format(printf, 2, 3)))
#endif
		;
};

struct npu_serve_step {
	const char *name;
	const struct npu_serve_io *inputs;	/* num_inputs of them */
	size_t num_inputs;
	const struct npu_serve_io *outputs;
	size_t num_outputs;
	/* Per instance: read parameters and files. 0, or -1 after error(). */
	int (*create)(const struct npu_serve_host *host, struct npu_serve_context *ctx,
		      void **state);
	/* One request (or one batch, when the model batches). 0 or NPU_SERVE_STEP_*. */
	int (*execute)(void *state, const struct npu_serve_host *host,
		       struct npu_serve_context *ctx);
	void (*destroy)(void *state);
};

/*
 * The entry point a backend library exports: its steps, for a server of
 * ABI 'abi' (NULL when the library cannot serve that ABI).
 */
typedef const struct npu_serve_step *(*npu_serve_backend_steps_fn)(uint32_t abi,
								  size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* NPU_SERVE_BACKEND_H */
