/* SPDX-License-Identifier: MIT */
/* What op_loss.c's schemas and kernels share (graph/schemas/loss.c). */
#ifndef NPU_SCHEMA_LOSS_H
#define NPU_SCHEMA_LOSS_H

#include "graph/schemas/schema_common.h"

enum npu_loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN };

npu_status npu_loss_reduction(const struct npu_node *node,
			      enum npu_loss_reduction *r,
			      struct npu_error *err);

#endif /* NPU_SCHEMA_LOSS_H */
