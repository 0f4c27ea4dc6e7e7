/* SPDX-License-Identifier: MIT */
/*
 * npub.h - compiled-model files (.npub): a finished model a deployment
 * loads and runs without importing, calibrating, running a pass or
 * generating code (internal; format in Documentation/compiler.md).
 *
 * A version 3 file holds the graph as compilation left it (NpuSegment
 * nodes in place of the NPU's nodes; graph/npu_graph_io.h), every NPU
 * segment's lowered program and its generated code (constants and a
 * command stream at canonical addresses that each session relocates,
 * compiler/reloc.h), the placement records, the input shapes, the source
 * model's metadata and, optionally, the source ONNX model itself, which
 * only planning at other input shapes needs. Versions 1 and 2 held the
 * source model and the lowered programs; loading them imports the model,
 * replays the passes and generates the code again.
 *
 * Everything is validated on load: a malformed file is an error naming the
 * section and field, never a crash.
 */
#ifndef NPU_COMPILER_NPUB_H
#define NPU_COMPILER_NPUB_H

#include "compiler/compiler.h"

#define NPU_NPUB_MAGIC		0x4255504e	/* "NPUB" */
/* 2: where each segment is (a subgraph's path); 2.1: codegen options per
 * segment; 2.2: the CPU options; 3: the graph, code and metadata. */
#define NPU_NPUB_VERSION_MAJOR	3
#define NPU_NPUB_VERSION_MINOR	0

struct npu_onnx_meta;

struct npu_npub;

bool npu_npub_detect(const void *data, size_t size);

/* Parse and validate a whole file held in memory (copied). */
npu_status npu_npub_open(const void *data, size_t size, const char *source,
			 struct npu_npub **out, struct npu_error *err);
/* The same; with 'borrow' the bytes are not copied and must outlive *out. */
npu_status npu_npub_open_view(const void *data, size_t size, bool borrow, const char *source,
			      struct npu_npub **out, struct npu_error *err);
void npu_npub_close(struct npu_npub *p);

/* Version 3: the graph and code are there (load with npu_npub_take_graph). */
bool npu_npub_finished(const struct npu_npub *p);
/* The graph as compiled (version 3, else NULL); the caller owns it. */
struct npu_graph *npu_npub_take_graph(struct npu_npub *p);
/* The source model's metadata (version 3, else NULL); the caller owns it. */
struct npu_onnx_meta *npu_npub_take_metadata(struct npu_npub *p);

/* The embedded ONNX model (size 0: none) and the input shapes compiled for. */
const void *npu_npub_model(const struct npu_npub *p, size_t *size);
size_t npu_npub_num_inputs(const struct npu_npub *p);
const char *npu_npub_input(const struct npu_npub *p, size_t index,
			   struct npu_shape *shape);
/* The CPU options the file was compiled with (the defaults before 2.2). */
const struct npu_cpu_options *npu_npub_cpu_options(const struct npu_npub *p);

/* npu_npub_instantiate() flags. */
#define NPU_NPUB_PROFILE_OPS	(1u << 0)	/* per-op timestamps (code generated) */
#define NPU_NPUB_DEFER_CONSTS	(1u << 1)	/* npu_compiled.defer_consts */

/*
 * Attach the file's segments to 'graph' and bind them to 'dev'; the
 * segments move into *out. Version 3: 'graph' is a copy of the file's
 * graph, whose NpuSegment nodes name their segment; no code is generated
 * unless NPU_NPUB_PROFILE_OPS asks for per-op timestamps. Before: 'graph'
 * is the embedded model imported with the stored shapes, inferred, and
 * through npu_compile_passes_pre/fuse, and the code is generated.
 */
npu_status npu_npub_instantiate(struct npu_npub *p, struct npu_graph *graph,
				struct npu_device *dev, unsigned int flags,
				struct npu_compiled **out,
				struct npu_error *err);

/* What a compiled file keeps of the model it came from. */
struct npu_npub_source {
	const void *onnx;		/* the ONNX file, or NULL: not kept */
	size_t onnx_size;
	const struct npu_onnx_meta *meta;	/* NULL: none */
};

/* Write a compiled model: 'graph' as compiled, bound (its code generated). */
npu_status npu_npub_save(const char *path, const struct npu_npub_source *src,
			 const struct npu_graph *graph,
			 const struct npu_compiled *c, struct npu_error *err);

#endif /* NPU_COMPILER_NPUB_H */
