/* SPDX-License-Identifier: MIT */
/* What op_grid_sample.c's schemas and kernels share (graph/schemas/grid_sample.c). */
#ifndef NPU_SCHEMA_GRID_SAMPLE_H
#define NPU_SCHEMA_GRID_SAMPLE_H

#include "graph/schemas/schema_common.h"

enum npu_gs_mode { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum npu_gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION };

struct npu_gs_args {
	enum npu_gs_mode mode;
	enum npu_gs_pad pad;
	bool align;
};

npu_status npu_gs_args(const struct npu_node *node,
		       struct npu_gs_args *a, struct npu_error *err);

#endif /* NPU_SCHEMA_GRID_SAMPLE_H */
