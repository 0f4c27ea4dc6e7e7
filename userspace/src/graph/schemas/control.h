/* SPDX-License-Identifier: MIT */
/* What op_control.c's schemas and kernels share (graph/schemas/control.c). */
#ifndef NPU_SCHEMA_CONTROL_H
#define NPU_SCHEMA_CONTROL_H

#include "graph/schemas/schema_common.h"

struct npu_scan_attrs {
	size_t states, inputs, outputs;	/* counts */
	int64_t in_axes[32], in_dirs[32], out_axes[32], out_dirs[32];
	bool batched;			/* opset 8: a batch dim and sequence_lens */
};

struct npu_graph *npu_control_body(const struct npu_node *n, const char *name);

size_t npu_control_num_declared(const struct npu_node *n);

bool npu_control_truth(const struct npu_tensor *t);

npu_status npu_scan_attrs_read(const struct npu_node *n, const struct npu_graph *g,
			       struct npu_scan_attrs *a, struct npu_error *err);

/* The shape of one slice of a scanned input (its scan axis removed). */
npu_status npu_scan_slice_shape(const struct npu_node *n, const struct npu_shape *in, int64_t axis,
				size_t k, struct npu_shape *out, int *norm_axis, struct npu_error *err);

#endif /* NPU_SCHEMA_CONTROL_H */
