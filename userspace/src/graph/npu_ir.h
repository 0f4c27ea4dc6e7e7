/* SPDX-License-Identifier: MIT */
/*
 * npu_ir.h - the graph IR of libnpu-user (internal).
 *
 * A graph is a list of nodes in topological order over named values.
 * Values carry a type and a shape (dims < 0 are unknown / symbolic); a
 * value with data is a constant (initializer or folded). Passes rewrite the
 * graph in place; every node carries its placement (CPU or NPU) for the
 * partitioner. The ONNX importer (onnx/) builds it, shape inference
 * (graph/) completes it, the runtime (runtime/) executes it with the op
 * kernels registered in cpu/ops/.
 */
#ifndef NPU_IR_H
#define NPU_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/npu_error.h"

#define NPU_MAX_RANK 8

/* Element types; values equal ONNX TensorProto.DataType. */
enum npu_dtype {
	NPU_DTYPE_UNDEFINED = 0,
	NPU_DTYPE_FLOAT = 1,
	NPU_DTYPE_UINT8 = 2,
	NPU_DTYPE_INT8 = 3,
	NPU_DTYPE_UINT16 = 4,
	NPU_DTYPE_INT16 = 5,
	NPU_DTYPE_INT32 = 6,
	NPU_DTYPE_INT64 = 7,
	NPU_DTYPE_STRING = 8,
	NPU_DTYPE_BOOL = 9,
	NPU_DTYPE_FLOAT16 = 10,
	NPU_DTYPE_DOUBLE = 11,
	NPU_DTYPE_UINT32 = 12,
	NPU_DTYPE_UINT64 = 13,
};

/* Bytes per element, 0 for types without a fixed size (string, undefined). */
size_t npu_dtype_size(enum npu_dtype dtype);
const char *npu_dtype_name(enum npu_dtype dtype);	/* "float", "int64" */

struct npu_shape {
	int rank;
	int64_t dims[NPU_MAX_RANK];	/* < 0: unknown */
};

/* Element count, or -1 when a dim is unknown or the count overflows. */
int64_t npu_shape_numel(const struct npu_shape *shape);

/* A concrete tensor: what kernels read and write. */
struct npu_tensor {
	enum npu_dtype dtype;
	struct npu_shape shape;	/* all dims known */
	void *data;		/* numel * dtype size bytes, or NULL when empty */
	size_t nbytes;
};

enum npu_attr_type {
	NPU_ATTR_FLOAT = 1,
	NPU_ATTR_INT = 2,
	NPU_ATTR_STRING = 3,
	NPU_ATTR_TENSOR = 4,
	NPU_ATTR_FLOATS = 6,
	NPU_ATTR_INTS = 7,
	NPU_ATTR_STRINGS = 8,
};

struct npu_attr {
	char *name;
	enum npu_attr_type type;
	float f;
	int64_t i;
	char *s;
	float *floats;
	int64_t *ints;
	char **strings;
	size_t count;		/* elements of floats / ints / strings */
	struct npu_tensor *t;
};

enum npu_placement {
	NPU_PLACE_CPU = 0,
	NPU_PLACE_NPU = 1,
};

struct npu_value;

struct npu_node {
	char *name;
	char *op_type;
	char *domain;		/* "" for the default ONNX domain */
	int opset;		/* opset version of the node's domain */
	struct npu_value **inputs;	/* NULL entries: omitted optional input */
	size_t num_inputs;
	struct npu_value **outputs;	/* NULL entries: omitted optional output */
	size_t num_outputs;
	struct npu_attr *attrs;
	size_t num_attrs;
	enum npu_placement placement;
	const char *placement_reason;	/* static string, for --explain */
	void *op_state;		/* kernel-private, prepared once per graph */
};

struct npu_value {
	char *name;
	enum npu_dtype dtype;
	struct npu_shape shape;
	struct npu_tensor *constant;	/* non-NULL: known at compile time */
	struct npu_node *producer;	/* NULL for graph inputs / constants */
	bool is_graph_input;
	bool is_graph_output;
};

/* Attribute lookup; the *_or helpers return 'fallback' when absent. */
const struct npu_attr *npu_node_attr(const struct npu_node *node,
				     const char *name);
int64_t npu_node_attr_int_or(const struct npu_node *node, const char *name,
			     int64_t fallback);
float npu_node_attr_float_or(const struct npu_node *node, const char *name,
			     float fallback);
const char *npu_node_attr_string_or(const struct npu_node *node,
				    const char *name, const char *fallback);

#endif /* NPU_IR_H */
