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
	NPU_DTYPE_BFLOAT16 = 16,
	/*
	 * Not tensor element types: a value holding an ONNX sequence or
	 * optional, packed in one byte buffer (npu_seq.h) whose shape is
	 * [bytes], so the runtime moves and pools it like any tensor.
	 */
	NPU_DTYPE_SEQUENCE = 1000,
	NPU_DTYPE_OPTIONAL = 1001,
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
	NPU_ATTR_GRAPH = 5,	/* a subgraph: If branches, Loop / Scan bodies */
	NPU_ATTR_FLOATS = 6,
	NPU_ATTR_INTS = 7,
	NPU_ATTR_STRINGS = 8,
	NPU_ATTR_TYPE_PROTO = 13,	/* a type (Optional's 'type'); content not kept */
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
	struct npu_graph *g;	/* NPU_ATTR_GRAPH, owned */
};

enum npu_placement {
	NPU_PLACE_CPU = 0,
	NPU_PLACE_NPU = 1,
};

struct npu_value;
struct npu_op_registry;

struct npu_node {
	char *name;
	char *op_type;
	char *domain;		/* "" for the default ONNX domain */
	int opset;		/* opset version of the node's domain */
	struct npu_value **inputs;	/* NULL entries: omitted optional input */
	size_t num_inputs;
	/*
	 * The last num_implicit_inputs inputs are not the op's own: they are
	 * the outer values its subgraphs read (captures), listed so that
	 * liveness and passes see those uses.
	 */
	size_t num_implicit_inputs;
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
	/*
	 * Set by the NPU compiler (npu_mark_rows_layout()): a rank-4 value
	 * that no convolution touches is stored row-major, like every other
	 * rank, instead of NHWC (attention scores: softmax rows contiguous).
	 */
	bool rows_layout;
	/* Added for the graph (npu_graph below): */
	char *dim_params[NPU_MAX_RANK];	/* symbolic dim names (inputs / outputs) */
	size_t index;		/* position in graph->values */
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

/* A deep copy of src into dst (false: out of memory; free dst either way). */
bool npu_attr_clone(struct npu_attr *dst, const struct npu_attr *src);
void npu_attr_free(struct npu_attr *a);

/* ---- Tensors ---- */

/* A tensor of 'shape' (all dims known), zero-filled, 64-byte aligned data. */
struct npu_tensor *npu_tensor_create(enum npu_dtype dtype,
				     const struct npu_shape *shape);
void npu_tensor_destroy(struct npu_tensor *tensor);
/* A copy of any tensor, string tensors (graph/npu_str.h) included; NULL on ENOMEM. */
struct npu_tensor *npu_tensor_dup(const struct npu_tensor *tensor);
/* "1x3x224x224" ("scalar" for rank 0, '?' for unknown dims) into buf. */
const char *npu_shape_str(const struct npu_shape *shape, char *buf,
			  size_t size);

/* ---- Graph ---- */

struct npu_opset {
	char *domain;		/* "" for ai.onnx */
	int64_t version;
};

/*
 * A whole model graph. It owns every node and value; nodes[] is kept in
 * topological order by npu_graph_sort(). Values are looked up by name.
 */
struct npu_graph {
	char *name;
	char *source;		/* file or buffer name, prefixes messages */
	int64_t ir_version;
	struct npu_opset *opsets;
	size_t num_opsets;
	struct npu_node **nodes;
	size_t num_nodes, cap_nodes;
	struct npu_value **values;
	size_t num_values, cap_values;
	struct npu_value **inputs;	/* non-constant graph inputs, in order */
	size_t num_inputs;
	/*
	 * A subgraph: its last num_captures inputs are values of an enclosing
	 * graph it reads by name; capture_slot[k] is the index, among the
	 * owning node's implicit inputs, that feeds capture k.
	 */
	size_t num_captures;
	size_t *capture_slot;
	struct npu_value **outputs;
	size_t num_outputs;
	struct npu_value **name_index;	/* open-addressing hash of values */
	size_t name_index_cap;
	/*
	 * Ops the graph's loader added beside the built-in ones (an engine's
	 * custom ops, graph/npu_op_schema.h); NULL: the built-in ones only.
	 * Borrowed: its owner outlives the graph. Clones and subgraphs share it.
	 */
	const struct npu_op_registry *ops;
};

struct npu_graph *npu_graph_create(const char *source);
/* Set g->ops on g and on every subgraph of its nodes. */
void npu_graph_set_ops(struct npu_graph *g, const struct npu_op_registry *ops);
void npu_graph_destroy(struct npu_graph *graph);
/*
 * A deep copy (values at the same indices, constants and attributes
 * copied, op_state not): a model keeps its imported graph and plans each
 * set of input shapes on a copy, without importing again.
 */
struct npu_graph *npu_graph_clone(const struct npu_graph *graph,
				  struct npu_error *err);

/* The value called 'name', or NULL. */
struct npu_value *npu_graph_find_value(const struct npu_graph *graph,
				       const char *name);
/* A new value; NULL (NPU_ERR_MODEL in err) if 'name' already exists. */
struct npu_value *npu_graph_add_value(struct npu_graph *graph,
				      const char *name, struct npu_error *err);
/* A fresh value named after 'hint' with a unique suffix (for passes). */
struct npu_value *npu_graph_new_value(struct npu_graph *graph,
				      const char *hint, struct npu_error *err);
/* A new node appended to nodes[]; inputs/outputs are set by the caller. */
struct npu_node *npu_graph_add_node(struct npu_graph *graph,
				    const char *op_type, const char *domain,
				    const char *name, size_t num_inputs,
				    size_t num_outputs, struct npu_error *err);
/* Unlink and free one node (its output values stay, producer cleared). */
void npu_graph_remove_node(struct npu_graph *graph, struct npu_node *node);
/* Make every use of 'from' (node inputs, graph outputs) use 'to'. */
void npu_graph_replace_uses(struct npu_graph *graph, struct npu_value *from,
			    struct npu_value *to);
/* The opset version imported for 'domain', or -1. */
int64_t npu_graph_opset(const struct npu_graph *graph, const char *domain);

/* "node 'conv1' (Conv)" or "node #3 (Conv)" into buf, for messages. */
const char *npu_node_label(const struct npu_graph *graph,
			   const struct npu_node *node, char *buf, size_t size);

/*
 * Put "<source>: <node label>: " in front of an op's message (replacing
 * the op's own "<Op> node '<name>': " prefix), so every error reads the
 * same way up to the user.
 */
void npu_graph_error_context(const struct npu_graph *graph,
			     const struct npu_node *node,
			     struct npu_error *err);

/*
 * Topologically sort nodes[] and check the graph: every input produced
 * (by a node, an initializer or a graph input) exactly once, no cycles,
 * every graph output produced.
 */
npu_status npu_graph_sort(struct npu_graph *graph, struct npu_error *err);

/*
 * Shape and type inference over the whole graph with each op's infer().
 * Ops missing from the CPU registry are NPU_ERR_UNSUPPORTED. With
 * 'fold' set, nodes whose inputs are all constant (and Shape / Size of
 * known shapes) are evaluated and their outputs become constants; such
 * nodes are removed.
 */
npu_status npu_graph_infer(struct npu_graph *graph, bool fold,
			   struct npu_error *err);

/*
 * Replace 'nodes' (count of g's nodes, in g's order, forming a convex set:
 * no path leaves the set and comes back into it) by one node
 * (op_type, domain, name; opset 1) whose GRAPH attribute "body" holds
 * them as a graph of their own. The body's inputs are the non-constant
 * values the set reads and does not make (in order of first use), its
 * outputs the values the set makes that a node outside it or the graph's
 * outputs read; the new node has the same inputs and outputs. Constants
 * the set reads are copied into the body. Nodes with subgraphs cannot be
 * fused. g is sorted again; *out is the new node.
 */
npu_status npu_graph_fuse(struct npu_graph *g, struct npu_node *const *nodes, size_t count,
			  const char *op_type, const char *domain, const char *name,
			  struct npu_node **out, struct npu_error *err);

/*
 * Reorder g's nodes topologically, taking among the ready nodes the first
 * on the side of the node placed just before ('first' before any), so that
 * each side's nodes form as few runs as the dependencies allow (the NPU's
 * segments, a provider's subgraphs). side[] holds one flag per node of g's
 * order and is reordered with the nodes. NPU_ERR_MODEL on a cycle.
 */
npu_status npu_graph_cluster_order(struct npu_graph *g, bool *side, bool first,
				   struct npu_error *err);

/* Whether n has a subgraph attribute (control flow: If, Loop, Scan). */
bool npu_node_has_subgraph(const struct npu_node *n);

/* ---- Passes: a named function list over the graph (compiler hooks) ---- */

struct npu_pass {
	const char *name;
	npu_status (*run)(struct npu_graph *graph, void *arg,
			  struct npu_error *err);
	void *arg;
};

/*
 * Run the passes in order; after each, re-sort and re-check the graph so a
 * broken pass is caught by name.
 */
npu_status npu_graph_run_passes(struct npu_graph *graph,
				const struct npu_pass *passes, size_t count,
				struct npu_error *err);

#endif /* NPU_IR_H */
