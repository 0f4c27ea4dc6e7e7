/* SPDX-License-Identifier: MIT */
/*
 * npu-tools/onnx_split.h - cutting an ONNX model in two at named tensors,
 * for the tools (libnpu-tools.a: `npu split`, tests; not part of
 * libnpu-user): a head that computes the cut tensors from the model's inputs
 * and a tail that computes the model's outputs from them.
 *
 * Both parts are cut out of the ModelProto itself, so they keep the
 * original nodes, attributes, initializers (each part only those it uses),
 * opset imports, functions and metadata. A cut is valid when every tensor
 * the tail reads from the head's side is in the cut; otherwise the error
 * names the tensor that crosses it. Subgraph attributes (If, Loop, Scan)
 * count as uses of the outer tensors they capture.
 *
 * Errors: a status, and the message in the caller's 'msg' (msg_size bytes,
 * NUL-terminated, may be NULL).
 */
#ifndef NPU_TOOLS_ONNX_SPLIT_H
#define NPU_TOOLS_ONNX_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu_model.h"	/* npu_host_tensor */

/* The dataflow of a model's top graph by tensor name, for checking cuts. */
struct npu_onnx_cutgraph;

npu_status npu_onnx_cutgraph_create(const void *data, size_t size,
				    const char *source,
				    struct npu_onnx_cutgraph **out,
				    char *msg, size_t msg_size);
void npu_onnx_cutgraph_destroy(struct npu_onnx_cutgraph *cg);

/* Nodes in topological order: name ("#index" when unnamed) and op type. */
size_t npu_onnx_cutgraph_num_nodes(const struct npu_onnx_cutgraph *cg);
const char *npu_onnx_cutgraph_node_name(const struct npu_onnx_cutgraph *cg, size_t i);
const char *npu_onnx_cutgraph_node_op(const struct npu_onnx_cutgraph *cg, size_t i);
/* Output names of node i (topological index); NULL past the last. */
const char *npu_onnx_cutgraph_node_output(const struct npu_onnx_cutgraph *cg,
					  size_t i, size_t k);

/*
 * Every cut to consider, in topological order: each single tensor that is
 * a valid cut, then the two-tensor frontiers of the topological order
 * (what crosses between node i and i + 1 when that is two tensors) of a
 * branchy graph. Calls fn(arg, names, count) for each, distinct cuts
 * once; at most 'max_cuts' calls (0: no bound). Returns the number made.
 */
size_t npu_onnx_cutgraph_enumerate(const struct npu_onnx_cutgraph *cg, size_t max_cuts,
				   void (*fn)(void *arg, const char *const *names,
					      size_t count),
				   void *arg);

/*
 * Check a cut. On success head[i] / tail[i] (topological index, may be
 * NULL) say whether node i belongs to the head / the tail (a node computed
 * from initializers alone may belong to both).
 */
npu_status npu_onnx_cutgraph_check(const struct npu_onnx_cutgraph *cg,
				   const char *const *cut, size_t count,
				   bool *head, bool *tail, char *msg, size_t msg_size);

/*
 * The size of every tensor of a model at given input shapes, for costing
 * cuts: the model imported and its shapes inferred with inputs[i] (rank and
 * dims; i below num_inputs) as the shape of its i-th input.
 */
struct npu_onnx_sizes;

npu_status npu_onnx_sizes_create(const void *data, size_t size, const char *source,
				 const struct npu_host_tensor *inputs, size_t num_inputs,
				 struct npu_onnx_sizes **out, char *msg, size_t msg_size);
void npu_onnx_sizes_destroy(struct npu_onnx_sizes *s);
/* How many model inputs took a shape from 'inputs'. */
size_t npu_onnx_sizes_num_inputs(const struct npu_onnx_sizes *s);
/* Bytes of tensor 'name' (int8: a float tensor at 1 byte an element); 0 if unknown. */
uint64_t npu_onnx_sizes_bytes(const struct npu_onnx_sizes *s, const char *name, bool int8);
/* Bytes of the model's outputs, summed. */
uint64_t npu_onnx_sizes_output_bytes(const struct npu_onnx_sizes *s);

/* Read a whole file (a model) into a malloc'd buffer; errors name the file. */
npu_status npu_onnx_read_file(const char *path, void **data, size_t *size, char *msg,
			      size_t msg_size);

/* The two serialized models of a cut. */
struct npu_onnx_split {
	void *head, *tail;
	size_t head_size, tail_size;
	size_t head_nodes, tail_nodes;
	/*
	 * The tail's inputs: the cut tensors (as they cross: "<cut>_uint8"
	 * when quantized; the head's outputs, in cut order), then the model
	 * inputs it reads.
	 */
	char **tail_inputs;
	size_t num_tail_inputs;
};

npu_status npu_onnx_split(const void *data, size_t size, const char *source,
			  const char *const *cut, size_t count,
			  struct npu_onnx_split *out, char *msg, size_t msg_size);

/*
 * int8 transfer of one cut tensor: the head ends in QuantizeLinear(cut,
 * scale, zero_point) -> "<cut>_uint8" (a UINT8 output), the tail starts
 * with DequantizeLinear("<cut>_uint8", scale, zero_point) -> cut. Both
 * parts stay valid ONNX (opset >= 10) and the link carries 1 byte per
 * element instead of 4.
 */
struct npu_onnx_split_quant {
	bool on;		/* false: the tensor crosses as it is */
	float scale;		/* > 0 */
	uint8_t zero_point;
};

#define NPU_ONNX_SPLIT_QSUFFIX "_uint8"

/* As npu_onnx_split; q[i] (NULL: none) says how cut[i] crosses. */
npu_status npu_onnx_split_quantized(const void *data, size_t size, const char *source,
				    const char *const *cut, size_t count,
				    const struct npu_onnx_split_quant *q,
				    struct npu_onnx_split *out, char *msg, size_t msg_size);
void npu_onnx_split_free(struct npu_onnx_split *s);

#endif /* NPU_TOOLS_ONNX_SPLIT_H */
