/* SPDX-License-Identifier: MIT */
/*
 * backend: models run by a C backend library (npu_serve_backend.h)
 * instead of the engine: the library found and opened, the step picked,
 * the config checked against what the step declares, and one state per
 * instance. The batcher runs them like sessions.
 */
#ifndef NPU_SERVE_BACKEND_INTERNAL_H
#define NPU_SERVE_BACKEND_INTERNAL_H

#include "model_config.h"
#include <npu/npu_serve_backend.h>

struct backend_model;
struct backend_instance;

/* Whether the config names a backend library (not onnxruntime / npu). */
int backend_is_library(const struct model_config *cfg);

/*
 * Open the library of cfg->backend for the model in 'model_dir' (version
 * 'version_dir'), pick its step and complete or check cfg's inputs and
 * outputs against the step's. 'backend_dir' is the server's
 * --backend-directory (NULL: none).
 */
int backend_model_open(struct model_config *cfg, const char *model_dir, const char *version_dir,
		       const char *backend_dir, struct backend_model **out, char *err);
void backend_model_close(struct backend_model *m);

int backend_instance_create(struct backend_model *m, struct backend_instance **out, char *err);
void backend_instance_destroy(struct backend_instance *in);

/* The step's output 'name' (its index in backend_execute()'s outs), or -1. */
int backend_output_index(const struct backend_model *m, const char *name);

/*
 * Run one call on inputs found by name (the config's, and a sequence
 * model's controls and states). On success the step's output k is in
 * outs[k], its declared order (data malloc'd, the caller frees it).
 * Returns SERVE_OK, SERVE_INVALID (the step blamed the input) or
 * SERVE_INTERNAL, with the step's message in err.
 */
int backend_execute(struct backend_instance *in, const struct npu_host_tensor *inputs,
		    size_t num_inputs, struct npu_host_tensor *outs, char *err);

/*
 * Load custom-op library 'file' (model_operations op_library_filename:
 * a plain name found in version_dir, model_dir, then backend_dir) and
 * register its ops on 'engine' (<npu/npu_custom_op.h>,
 * NPU_CUSTOM_OPS_ENTRY), once per library for the server. The libraries
 * stay loaded until backend_op_libraries_close(), after the engine is
 * destroyed.
 */
struct npu_engine;
int backend_load_op_library(struct npu_engine *engine, const char *file, const char *model_dir,
			    const char *version_dir, const char *backend_dir, char *err);
void backend_op_libraries_close(void);

/*
 * A path a parameter or model file names: relative to model_dir, or
 * "cache:REL" under the model cache ($NPU_CACHE, else ~/.cache/npu-stack).
 * Absolute paths and ".." components are refused (a config override
 * comes from the network).
 */
int backend_resolve_file(const char *model_dir, const char *ref, char *path, size_t size,
			 char *err);

#endif /* NPU_SERVE_BACKEND_INTERNAL_H */
