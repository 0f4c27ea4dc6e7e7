/* SPDX-License-Identifier: MIT */
/*
 * npu_onnx.h - the ONNX importer (internal): ModelProto -> npu_graph.
 *
 * Everything in the file is validated on the way in: versions, opset
 * imports, types, shapes, initializer sizes, attributes and the topology.
 * A malformed model is an error naming the file, the node (name or index
 * and op type), the attribute or input and the reason, never a crash.
 * Subgraph attributes (If, Loop, Scan) become graphs of their own: a value
 * they read but do not define is a capture, an input of the subgraph fed
 * by an implicit input of its node (npu_ir.h). External tensor data,
 * sparse initializers, graph-list attributes and non-tensor types are
 * rejected as NPU_ERR_UNSUPPORTED.
 */
#ifndef NPU_ONNX_H
#define NPU_ONNX_H

#include <stddef.h>

#include "common/npu_file.h"
#include "graph/npu_ir.h"

/* IR versions the importer accepts. */
#define NPU_ONNX_IR_MIN 3
#define NPU_ONNX_IR_MAX 10

/*
 * Parse a serialized ModelProto into a sorted, checked graph; shapes are
 * not inferred yet (npu_graph_infer). 'source' prefixes every message.
 */
npu_status npu_onnx_import(const void *data, size_t size, const char *source,
			   struct npu_graph **out, struct npu_error *err);
/*
 * What the ModelProto says about itself (npu_model_get_metadata): strings
 * are "" when absent, model_version 0; metadata_props keys are non-empty
 * and unique (else the import fails naming the key).
 */
struct npu_onnx_meta {
	char *producer_name, *producer_version, *domain, *doc_string;
	char *graph_name, *graph_doc_string;
	int64_t model_version;
	size_t num_props;
	char **keys, **values;
};

/* npu_onnx_import() that also returns the model's metadata (meta may be NULL). */
npu_status npu_onnx_import_meta(const void *data, size_t size, const char *source,
				struct npu_graph **out, struct npu_onnx_meta **meta,
				struct npu_error *err);
void npu_onnx_meta_free(struct npu_onnx_meta *meta);

npu_status npu_onnx_import_file(const char *path, struct npu_graph **out,
				struct npu_error *err);

/* A serialized TensorProto (input_0.pb...); *name (may be NULL) is malloc'd. */
npu_status npu_onnx_read_tensor(const void *data, size_t size,
				const char *source, struct npu_tensor **out,
				char **name, struct npu_error *err);
npu_status npu_onnx_read_tensor_file(const char *path,
				     struct npu_tensor **out, char **name,
				     struct npu_error *err);

/*
 * A data-set value as 'kind' says: for NPU_DTYPE_SEQUENCE / OPTIONAL a
 * serialized SequenceProto / OptionalProto, packed (graph/npu_seq.h);
 * otherwise a TensorProto, as npu_onnx_read_tensor().
 */
npu_status npu_onnx_read_value(const void *data, size_t size, const char *source,
			       enum npu_dtype kind, struct npu_tensor **out, char **name,
			       struct npu_error *err);
npu_status npu_onnx_read_value_file(const char *path, enum npu_dtype kind,
				    struct npu_tensor **out, char **name, struct npu_error *err);

/*
 * A copy of the serialized model (*out malloc'd) whose initializers (or
 * Constant nodes of the main graph) names[i] hold tensors[i] instead,
 * as raw data; drop_value_info removes the graph's value_info (shapes of
 * inner values, stale once channels are pruned). A name that is neither
 * is an error naming it. attrs[] set INT attributes of nodes.
 */
struct npu_onnx_int_attr {
	const char *node_output;	/* the node: the one whose first output this is */
	const char *attr;		/* an INT attribute it has ("group") */
	int64_t value;
};

npu_status npu_onnx_replace_constants(const void *data, size_t size, const char *source,
				      const char *const *names,
				      const struct npu_tensor *const *tensors, size_t count,
				      const struct npu_onnx_int_attr *attrs, size_t num_attrs,
				      bool drop_value_info, void **out, size_t *out_size,
				      struct npu_error *err);

#endif /* NPU_ONNX_H */
