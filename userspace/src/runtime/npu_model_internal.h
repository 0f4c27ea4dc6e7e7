/* SPDX-License-Identifier: MIT */
/*
 * npu_model_internal.h - the model object shared by npu_model.c (import,
 * shapes, CPU session) and npu_model_npu.c (compilation for NPU devices).
 */
#ifndef NPU_MODEL_INTERNAL_H
#define NPU_MODEL_INTERNAL_H

#include <stdbool.h>

#include "graph/npu_ir.h"
#include "npu/npu_device.h"
#include "npu/npu_model.h"
#include "runtime/npu_runtime.h"

struct npu_compiled;

struct io_info {
	struct npu_tensor_info info;
	char *name;
	char *dim_names[NPU_MAX_RANK];
};

struct npu_model {
	struct npu_error err;
	struct npu_model_options opts;
	char device[16];
	void *bytes;
	size_t size;
	char *source;
	struct io_info *inputs;		/* as declared by the file */
	size_t num_inputs;
	struct io_info *outputs;
	size_t num_outputs;
	struct npu_shape *bound;	/* planned input shapes */
	struct npu_graph *g;
	struct npu_session *s;
	double last_run_s;
	/* NPU devices (npu_model_npu.c): */
	struct npu_device *dev;
	struct npu_compiled *compiled;	/* bound to g's NpuSegment nodes */
	void *npub;			/* a loaded .npub file's bytes */
	size_t npub_size;
	bool compile_requested;		/* defer_compile: asked to compile */
};

/* Import, bind the input shapes, infer + fold, compile, prepare a session. */
npu_status npu_model_plan(struct npu_model *m);

bool npu_model_on_npu(const struct npu_model *m);
/*
 * Compile (or, for a .npub, instantiate) the imported, inferred graph for
 * the model's device; called by plan() before the session is created.
 */
npu_status npu_model_npu_prepare(struct npu_model *m, struct npu_graph *g);
/* A .npub: keep it, and make m->bytes its embedded ONNX model. */
npu_status npu_model_npu_take_npub(struct npu_model *m, const void *data,
				   size_t size);
/* Apply the input shapes a .npub was compiled for to m->bound. */
npu_status npu_model_npu_bind_npub_shapes(struct npu_model *m);
void npu_model_npu_release(struct npu_model *m);	/* compiled state */
void npu_model_npu_close(struct npu_model *m);	/* + device, .npub */

#endif /* NPU_MODEL_INTERNAL_H */
