/* SPDX-License-Identifier: MIT */
/*
 * npu_graph_io.h - the IR graph as bytes, without ONNX (internal).
 *
 * A compiled model stores the graph as the passes left it, so loading one
 * needs neither the ONNX importer nor a pass: every value (name, type,
 * shape, symbolic dim names, constant data), every node (op, domain,
 * opset, inputs, outputs, attributes, placement) and every subgraph, at
 * the same indices. Kernel state (op_state) is not stored: backends
 * prepare again from the attributes and constants. The format is in
 * Documentation/compiler.md ("The graph section").
 *
 * Reading checks everything it builds on (counts, indices, names, one
 * producer per value, tensor sizes, string and container layouts, the
 * topological order), so a corrupted or hostile stream is an error naming
 * the field, never a crash.
 */
#ifndef NPU_GRAPH_IO_H
#define NPU_GRAPH_IO_H

#include "common/npu_bytes.h"
#include "graph/npu_ir.h"

#define NPU_GRAPH_IO_VERSION 1

/* Append 'graph' (with its subgraphs) to w; w->oom on allocation failure. */
void npu_graph_write(struct npu_wbuf *w, const struct npu_graph *graph);
/*
 * The same without the constants no node reads and no output names (what
 * passes and the NPU segment rewrite leave behind); values are renumbered.
 */
void npu_graph_write_pruned(struct npu_wbuf *w, const struct npu_graph *graph);

/*
 * Read a graph npu_graph_write() wrote from r; 'source' names the graph in
 * its messages. NULL with r marked bad (and the error in r->err) on any
 * malformed field.
 */
struct npu_graph *npu_graph_read(struct npu_rbuf *r, const char *source);

#endif /* NPU_GRAPH_IO_H */
