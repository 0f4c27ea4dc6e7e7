/* SPDX-License-Identifier: MIT */
/*
 * npub.h - compiled-model files (.npub), so a deployment skips calibration,
 * placement, quantization and lowering (internal; format in
 * Documentation/compiler.md).
 *
 * A .npub holds the source ONNX model, the input shapes it was compiled
 * for, the placement records and every NPU segment's lowered program
 * (int8 tensors, ops, weights, requantization, LUTs). Device addresses
 * differ from one device / context to the next, so loading re-runs only
 * code generation (a link step of milliseconds) on the device at hand.
 * Everything is validated on load: a malformed file is an error naming the
 * section and field, never a crash.
 */
#ifndef NPU_COMPILER_NPUB_H
#define NPU_COMPILER_NPUB_H

#include "compiler/compiler.h"

#define NPU_NPUB_MAGIC		0x4255504e	/* "NPUB" */
/* Version 2 adds where each segment is (a subgraph's path); files without
 * segments in subgraphs are still written as version 1. */
#define NPU_NPUB_VERSION_MAJOR	2
#define NPU_NPUB_VERSION_MINOR	2	/* 2.1: codegen options per segment;
					 * 2.2: the CPU options */

struct npu_npub;

bool npu_npub_detect(const void *data, size_t size);

/* Parse and validate a whole file held in memory (copied). */
npu_status npu_npub_open(const void *data, size_t size, const char *source,
			 struct npu_npub **out, struct npu_error *err);
void npu_npub_close(struct npu_npub *p);

/* The embedded ONNX model and the input shapes compiled for. */
const void *npu_npub_model(const struct npu_npub *p, size_t *size);
size_t npu_npub_num_inputs(const struct npu_npub *p);
const char *npu_npub_input(const struct npu_npub *p, size_t index,
			   struct npu_shape *shape);
/* The CPU options the file was compiled with (the defaults before 2.2). */
const struct npu_cpu_options *npu_npub_cpu_options(const struct npu_npub *p);

/*
 * Attach the file's segments to 'graph' (the embedded model imported with
 * the stored shapes, inferred, and through npu_compile_passes_pre/fuse)
 * and bind them to 'dev'. The segments move into *out.
 */
npu_status npu_npub_instantiate(struct npu_npub *p, struct npu_graph *graph,
				struct npu_device *dev, bool profile_ops,
				struct npu_compiled **out,
				struct npu_error *err);

/* Write a compiled model; 'graph' gives the input shapes. */
npu_status npu_npub_save(const char *path, const void *onnx, size_t onnx_size,
			 const struct npu_graph *graph,
			 const struct npu_compiled *c, struct npu_error *err);

#endif /* NPU_COMPILER_NPUB_H */
